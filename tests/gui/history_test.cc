// The History view and its models: HistoryModel and ProfilesModel over a memory store under
// QAbstractItemModelTester (Fatal), the exact cells `meshplan history` would print, a store error
// returned rather than thrown; the view on a missing path (message, nothing created), on a file
// that is not a database (error, file untouched), and on a SQLite store that another connection
// writes while the view is open (the poll picks the new rows up, and stays quiet otherwise).
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QFileInfo>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/result_store.h"
#include "gui/models/history_model.h"
#include "gui/models/scenario_model.h"
#include "gui/views/history_view.h"

namespace meshplan::gui {
namespace {

using Tester = QAbstractItemModelTester;
constexpr auto kFatal = QAbstractItemModelTester::FailureReportingMode::Fatal;

core::StoredMeasurement Measurement(int64_t plan_id, const std::string& source, double step_s, double predicted_s,
                                    const std::string& profile) {
  core::StoredMeasurement m;
  m.plan_id = plan_id;
  m.source = source;
  m.backend = "cpu";
  m.mode = plan_id == 0 ? "bench_gemm" : "single_process";
  m.hostname = "node7";
  m.step_time_s = step_s;
  m.predicted_step_s = predicted_s;
  m.profile_name = profile;
  m.json = "{}";
  return m;
}

core::StoredPlan Plan(const std::string& label, const std::string& json) {
  core::StoredPlan p;
  p.label = label;
  p.plan_json = json;
  return p;
}

core::StoredProfile Profile(const std::string& name, std::vector<int64_t> measurement_ids) {
  core::StoredProfile p;
  p.name = name;
  p.profile_json = "{}";
  p.measurement_ids = std::move(measurement_ids);
  return p;
}

// Three measurements, oldest first: a run predicted 10% slow, a run predicted 5% fast (with a
// fitted profile), and a microbenchmark (no plan, no step). Returns the plan id.
int64_t Fill(core::ResultStore* s) {
  auto plan = s->PutPlan(Plan("tiny tp1 pp1 dp1 on 1x cpu", "{\"plan\":1}"));
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(s->PutMeasurement(Measurement(*plan, "runs/a.json", 0.5, 0.55, "default")).ok());
  EXPECT_TRUE(s->PutMeasurement(Measurement(*plan, "runs/b.json", 2.0, 1.9, "cpu-fit")).ok());
  EXPECT_TRUE(s->PutMeasurement(Measurement(0, "bench/gemm.json", 0, 0, "")).ok());
  return *plan;
}

// Every read fails, as a store whose file went away would.
class FailingStore final : public core::ResultStore {
 public:
  int SchemaVersion() const override { return core::kStoreSchemaVersion; }
  core::Result<int64_t> PutPlan(const core::StoredPlan&) override { return Err(); }
  core::Result<core::StoredPlan> GetPlan(int64_t) const override { return Err(); }
  core::Result<int64_t> PutPrediction(const core::StoredPrediction&) override { return Err(); }
  core::Result<std::vector<core::StoredPrediction>> PredictionsForPlan(int64_t) const override { return Err(); }
  core::Result<std::vector<core::PredictionRow>> ListPredictions(int64_t) const override { return Err(); }
  core::Result<int64_t> PutMeasurement(const core::StoredMeasurement&) override { return Err(); }
  core::Result<core::StoredMeasurement> GetMeasurement(int64_t) const override { return Err(); }
  core::Result<core::StoredProfile> PutProfile(const core::StoredProfile&) override { return Err(); }
  core::Result<core::StoredProfile> GetProfile(const std::string&) const override { return Err(); }
  core::Result<std::vector<core::StoredProfile>> ListProfiles() const override { return Err(); }
  core::Result<int64_t> PutSweep(const core::StoredSweep&) override { return Err(); }
  core::Result<std::vector<core::StoredSweep>> ListSweeps(int64_t) const override { return Err(); }
  core::Result<std::vector<core::HistoryRow>> History(int64_t) const override { return Err(); }
  core::Status CheckIntegrity() const override { return Err(); }

 private:
  static core::Status Err() { return core::Status::IoError("store.db: disk I/O error"); }
};

QString Cell(const QAbstractItemModel& m, int row, int col, int role = Qt::DisplayRole) {
  return m.data(m.index(row, col), role).toString();
}

TEST(GuiHistoryTest, HistoryModelShowsTheStoreNewestFirst) {
  auto store = core::NewMemoryResultStore();
  Fill(store.get());
  HistoryModel m;
  Tester t(&m, kFatal);
  EXPECT_EQ(m.rowCount(), 0);
  ASSERT_TRUE(m.Reload(*store).ok());
  ASSERT_EQ(m.rowCount(), 3);
  EXPECT_EQ(m.columnCount(), HistoryModel::kColumnCount);
  EXPECT_EQ(m.columnCount(), 9);

  // Newest first: the microbenchmark (id 3), then b (id 2), then a (id 1).
  EXPECT_EQ(m.headerData(0, Qt::Vertical).toString(), "#3");
  EXPECT_EQ(m.headerData(2, Qt::Vertical).toString(), "#1");
  EXPECT_EQ(Cell(m, 0, HistoryModel::kPlan), "(microbenchmark)");
  EXPECT_EQ(Cell(m, 1, HistoryModel::kPlan), "tiny tp1 pp1 dp1 on 1x cpu");
  EXPECT_EQ(Cell(m, 2, HistoryModel::kPlan), "tiny tp1 pp1 dp1 on 1x cpu");
  EXPECT_EQ(Cell(m, 2, HistoryModel::kBackend), "cpu");
  EXPECT_EQ(Cell(m, 2, HistoryModel::kMode), "single_process");
  EXPECT_EQ(Cell(m, 2, HistoryModel::kHost), "node7");
  EXPECT_EQ(Cell(m, 2, HistoryModel::kProfile), "default");
  EXPECT_EQ(Cell(m, 1, HistoryModel::kProfile), "cpu-fit");

  // a: measured 0.5 s, predicted 0.55 s: (0.55 - 0.5) / 0.5 = +10.0%.
  EXPECT_EQ(Cell(m, 2, HistoryModel::kMeasured), "0.5");
  EXPECT_EQ(Cell(m, 2, HistoryModel::kPredicted), "0.55");
  EXPECT_EQ(Cell(m, 2, HistoryModel::kError), "+10.0%");
  EXPECT_NEAR(m.data(m.index(2, HistoryModel::kError), HistoryModel::kValueRole).toDouble(), 10.0, 1e-9);
  // b: measured 2 s, predicted 1.9 s: (1.9 - 2) / 2 = -5.0%.
  EXPECT_EQ(Cell(m, 1, HistoryModel::kMeasured), "2");
  EXPECT_EQ(Cell(m, 1, HistoryModel::kError), "-5.0%");
  // The microbenchmark has no step: dashes, and no raw value.
  EXPECT_EQ(Cell(m, 0, HistoryModel::kMeasured), "-");
  EXPECT_EQ(Cell(m, 0, HistoryModel::kPredicted), "-");
  EXPECT_EQ(Cell(m, 0, HistoryModel::kError), "-");
  EXPECT_EQ(Cell(m, 0, HistoryModel::kProfile), "-");
  EXPECT_FALSE(m.data(m.index(0, HistoryModel::kError), HistoryModel::kValueRole).isValid());

  // The store's timestamp, without the 'T' and 'Z' (the header says UTC).
  const QString when = Cell(m, 0, HistoryModel::kWhen);
  EXPECT_EQ(when.size(), 19) << when.toStdString();
  EXPECT_EQ(when[10], ' ');
  EXPECT_TRUE(m.headerData(HistoryModel::kWhen, Qt::Horizontal).toString().contains("UTC"));

  // Numbers right-aligned, text left; the tooltip names the source file.
  for (int c : {HistoryModel::kMeasured, HistoryModel::kPredicted, HistoryModel::kError})
    EXPECT_EQ(m.data(m.index(1, c), Qt::TextAlignmentRole).value<Qt::Alignment>(), Qt::AlignRight | Qt::AlignVCenter);
  EXPECT_EQ(m.data(m.index(1, HistoryModel::kPlan), Qt::TextAlignmentRole).value<Qt::Alignment>(),
            Qt::AlignLeft | Qt::AlignVCenter);
  for (int c = 0; c < m.columnCount(); ++c) EXPECT_TRUE(Cell(m, 1, c, Qt::ToolTipRole).contains("runs/b.json")) << c;
  EXPECT_TRUE(Cell(m, 0, HistoryModel::kWhen, Qt::ToolTipRole).contains("bench/gemm.json"));

  // A reload after another measurement: the new one comes first.
  auto plan = store->PutPlan(Plan("tiny tp1 pp1 dp1 on 1x cpu", "{\"plan\":1}"));
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(store->PutMeasurement(Measurement(*plan, "runs/c.json", 1.0, 1.0, "cpu-fit")).ok());
  ASSERT_TRUE(m.Reload(*store).ok());
  ASSERT_EQ(m.rowCount(), 4);
  EXPECT_EQ(m.headerData(0, Qt::Vertical).toString(), "#4");
  EXPECT_EQ(Cell(m, 0, HistoryModel::kError), "+0.0%");
  // The limit keeps the newest.
  ASSERT_TRUE(m.Reload(*store, 2).ok());
  ASSERT_EQ(m.rowCount(), 2);
  EXPECT_EQ(m.headerData(1, Qt::Vertical).toString(), "#3");
  m.clear();
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(GuiHistoryTest, StoreErrorsAreReturnedAndKeepTheRows) {
  auto store = core::NewMemoryResultStore();
  Fill(store.get());
  HistoryModel h;
  ProfilesModel p;
  Tester th(&h, kFatal);
  Tester tp(&p, kFatal);
  ASSERT_TRUE(h.Reload(*store).ok());
  FailingStore broken;
  const core::Status hs = h.Reload(broken);
  EXPECT_EQ(hs.code(), core::Status::Code::kIoError);
  EXPECT_EQ(hs.message(), "store.db: disk I/O error");
  EXPECT_EQ(h.rowCount(), 3);
  EXPECT_EQ(p.Reload(broken).code(), core::Status::Code::kIoError);
  EXPECT_EQ(p.rowCount(), 0);
}

TEST(GuiHistoryTest, ProfilesModelListsTheNewestVersionOfEachName) {
  auto store = core::NewMemoryResultStore();
  Fill(store.get());
  ASSERT_TRUE(store->PutProfile(Profile("cpu-fit", {1})).ok());
  ASSERT_TRUE(store->PutProfile(Profile("cpu-fit", {2, 1, 2})).ok());
  ASSERT_TRUE(store->PutProfile(Profile("a100-lab", {})).ok());
  ProfilesModel m;
  Tester t(&m, kFatal);
  ASSERT_TRUE(m.Reload(*store).ok());
  ASSERT_EQ(m.rowCount(), 2);
  EXPECT_EQ(m.columnCount(), ProfilesModel::kColumnCount);
  // Sorted by name; cpu-fit's second version, fitted from measurements 1 and 2 (deduplicated).
  EXPECT_EQ(Cell(m, 0, ProfilesModel::kName), "a100-lab");
  EXPECT_EQ(Cell(m, 0, ProfilesModel::kSources), "0");
  EXPECT_EQ(Cell(m, 1, ProfilesModel::kName), "cpu-fit");
  EXPECT_EQ(Cell(m, 1, ProfilesModel::kVersion), "2");
  EXPECT_EQ(Cell(m, 1, ProfilesModel::kSources), "2");
  EXPECT_EQ(m.data(m.index(1, ProfilesModel::kSources), ProfilesModel::kValueRole).toLongLong(), 2);
  EXPECT_TRUE(Cell(m, 1, ProfilesModel::kName, Qt::ToolTipRole).contains("#1, #2"));
  EXPECT_EQ(m.data(m.index(1, ProfilesModel::kVersion), Qt::TextAlignmentRole).value<Qt::Alignment>(),
            Qt::AlignRight | Qt::AlignVCenter);
  m.clear();
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(GuiHistoryTest, MissingDatabaseIsReportedAndNotCreated) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString path = dir.filePath("data/meshplan/meshplan.db");
  ScenarioModel s;
  HistoryModel h;
  ProfilesModel p;
  Tester th(&h, kFatal);
  HistoryView v(&s, &h, &p);
  // gui_tests points MESHPLAN_DB at a path that does not exist: the default view is empty too.
  EXPECT_EQ(v.storePath().toStdString(), core::DefaultStorePath());
  EXPECT_FALSE(v.loaded());
  EXPECT_TRUE(v.message().startsWith("no database at ")) << v.message().toStdString();

  v.setStorePath(path);
  EXPECT_EQ(v.message(), "no database at " + path + " yet (meshplan calibrate fit creates it)");
  EXPECT_FALSE(v.loaded());
  EXPECT_EQ(h.rowCount(), 0);
  EXPECT_EQ(p.rowCount(), 0);
  v.reload();
  EXPECT_EQ(v.message(), "no database at " + path + " yet (meshplan calibrate fit creates it)");
  // Nothing was created: not the file, not its directories.
  EXPECT_FALSE(QFileInfo::exists(path));
  EXPECT_FALSE(QFileInfo::exists(dir.filePath("data")));
  // An empty file is a database being created: not opened (opening would write the schema).
  QFile empty(dir.filePath("empty.db"));
  ASSERT_TRUE(empty.open(QIODevice::WriteOnly));
  empty.close();
  v.setStorePath(empty.fileName());
  EXPECT_TRUE(v.message().startsWith("no database at ")) << v.message().toStdString();
  EXPECT_EQ(QFileInfo(empty.fileName()).size(), 0);
  EXPECT_FALSE(QFileInfo::exists(empty.fileName() + "-wal"));
}

TEST(GuiHistoryTest, FileThatIsNotADatabaseIsAnErrorAndLeftAlone) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString path = dir.filePath("notes.db");
  const QByteArray text = QByteArray("these are notes, not a database\n").repeated(200);
  {
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(text);
  }
  ScenarioModel s;
  HistoryModel h;
  ProfilesModel p;
  HistoryView v(&s, &h, &p);
  v.setStorePath(path);
  EXPECT_FALSE(v.loaded());
  EXPECT_TRUE(v.message().startsWith("cannot read the store: ")) << v.message().toStdString();
  EXPECT_TRUE(v.message().contains(path)) << v.message().toStdString();
  EXPECT_EQ(h.rowCount(), 0);
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  EXPECT_EQ(f.readAll(), text);
  // A directory is not a store either.
  v.setStorePath(dir.path());
  EXPECT_FALSE(v.loaded());
  EXPECT_TRUE(v.message().contains("is a directory")) << v.message().toStdString();
}

TEST(GuiHistoryTest, ViewReadsWhileAnotherConnectionWrites) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString path = dir.filePath("meshplan.db");
  auto opened = core::OpenSqliteResultStore(path.toStdString());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<core::ResultStore> writer = std::move(opened).value();
  const int64_t plan = Fill(writer.get());
  ASSERT_TRUE(writer->PutProfile(Profile("cpu-fit", {1, 2})).ok());

  ScenarioModel s;
  HistoryModel h;
  ProfilesModel p;
  Tester th(&h, kFatal);
  Tester tp(&p, kFatal);
  HistoryView v(&s, &h, &p);
  v.setPollIntervalMs(50);
  v.setStorePath(path);
  ASSERT_TRUE(v.loaded()) << v.message().toStdString();
  EXPECT_TRUE(v.message().startsWith("3 measurements, 1 profile in " + path)) << v.message().toStdString();
  ASSERT_EQ(h.rowCount(), 3);
  EXPECT_EQ(Cell(h, 2, HistoryModel::kError), "+10.0%");
  ASSERT_EQ(p.rowCount(), 1);
  EXPECT_EQ(Cell(p, 0, ProfilesModel::kSources), "2");
  // The chart: y = x and the two 10% lines, then one scatter per profile (default, cpu-fit) with
  // the two measurements that have both steps.
  const auto series = v.chart()->series();
  ASSERT_EQ(series.size(), 5);
  int points = 0;
  for (QAbstractSeries* a : series)
    if (auto* sc = qobject_cast<QScatterSeries*>(a)) points += static_cast<int>(sc->count());
  EXPECT_EQ(points, 2);
  // |errors| 10% and 5%: the median of two is their mean.
  EXPECT_TRUE(v.chart()->title().contains("2 points, median |error| 7.5%")) << v.chart()->title().toStdString();

  // Another connection commits: the poll notices the file change and reads again.
  ASSERT_TRUE(writer->PutMeasurement(Measurement(plan, "runs/c.json", 1.0, 1.2, "cpu-fit")).ok());
  EXPECT_TRUE(QTest::qWaitFor([&] { return h.rowCount() == 4; }, 5000)) << v.message().toStdString();
  EXPECT_EQ(Cell(h, 0, HistoryModel::kError), "+20.0%");
  EXPECT_EQ(Cell(h, 0, HistoryModel::kPredicted), "1.2");

  // The writer goes away (its close checkpoints the log); afterwards nothing changes, and the
  // view's own reads must not look like changes: no further reloads.
  writer.reset();
  QTest::qWait(300);
  QSignalSpy resets(&h, &QAbstractItemModel::modelReset);
  QTest::qWait(500);
  EXPECT_EQ(resets.count(), 0);
  EXPECT_EQ(h.rowCount(), 4);

  // The view never wrote: the store is intact and holds what the writer put.
  auto check = core::OpenSqliteResultStore(path.toStdString());
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_TRUE((*check)->CheckIntegrity().ok());
  auto rows = (*check)->History(0);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 4u);

  // Refresh reads again even without a change.
  QSignalSpy again(&h, &QAbstractItemModel::modelReset);
  v.reload();
  EXPECT_EQ(again.count(), 1);
  EXPECT_EQ(h.rowCount(), 4);
}

// Hardening (docs/reliability.md): the History view polling every 20 ms while real `meshplan report --save` and
// `meshplan calibrate fit` processes write the same file, half of them SIGKILLed at a random
// point 0-30 ms in (each takes 10-30 ms, so most kills land inside a write). The view never shows
// a read error; afterwards the file passes integrity_check, and every record a writer that exited
// 0 had committed is there: its profile, its two measurements, its prediction.
TEST(GuiHistoryTest, ViewPollsWhileCliWritersAreKilled) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const std::string path = dir.filePath("meshplan.db").toStdString();
  ASSERT_TRUE(core::OpenSqliteResultStore(path).ok());  // created before the view looks
  ScenarioModel s;
  HistoryModel h;
  ProfilesModel p;
  HistoryView v(&s, &h, &p);
  v.setPollIntervalMs(20);
  v.setStorePath(QString::fromStdString(path));

  const std::string cli = MESHPLAN_CLI_PATH, data = MESHPLAN_TEST_DATA_DIR;
  std::mt19937 rng(18);
  std::set<std::string> committed_profiles;
  int committed_fits = 0, committed_reports = 0, killed = 0, errors_seen = 0;
  auto watch = [&] {
    if (v.message().startsWith("cannot read the store")) {
      ++errors_seen;
      ADD_FAILURE() << v.message().toStdString();
    }
  };
  for (int i = 0; i < 40; ++i) {
    const bool fit = i % 2 == 0;
    std::string name = "p";
    name += std::to_string(i);
    std::vector<std::string> args =
        fit ? std::vector<std::string>{cli,
                                       "calibrate",
                                       "fit",
                                       "--name",
                                       name,
                                       "--db",
                                       path,
                                       data + "/measurements/tiny-cpu.json",
                                       data + "/measurements/cpu-bench-gemm.json"}
            : std::vector<std::string>{cli,      "report", "--model", "tiny", "--gpu", "h100-sxm",
                                       "--gpus", "2",      "--save",  "--db", path};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ), 0) << cli;
    posix_spawn_file_actions_destroy(&quiet);
    int status = 0;
    if (rng() % 2 == 0) {
      QTest::qWait(static_cast<int>(rng() % 31));
      kill(pid, SIGKILL);
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      if (WIFSIGNALED(status)) ++killed;
    } else {
      while (waitpid(pid, &status, WNOHANG) == 0) {
        QTest::qWait(5);
        watch();
      }
    }
    watch();
    if (WIFEXITED(status)) {
      ASSERT_EQ(WEXITSTATUS(status), 0) << args[1] << " " << i;
      if (fit) {
        ++committed_fits;
        committed_profiles.insert(name);
      } else {
        ++committed_reports;
      }
    }
  }
  QTest::qWait(100);
  watch();
  EXPECT_EQ(errors_seen, 0);
  std::printf("writers: %d killed, %d calibrate fit and %d report --save committed\n", killed, committed_fits,
              committed_reports);
  EXPECT_GE(killed, 5);
  EXPECT_GE(committed_fits, 5);
  EXPECT_GE(committed_reports, 5);

  auto check = core::OpenSqliteResultStore(path);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_TRUE((*check)->CheckIntegrity().ok());
  auto profiles = (*check)->ListProfiles();
  ASSERT_TRUE(profiles.ok());
  std::set<std::string> names;
  for (const auto& pr : *profiles) names.insert(pr.name);
  for (const auto& n : committed_profiles) EXPECT_TRUE(names.count(n)) << "lost profile " << n;
  auto rows = (*check)->History(0);
  ASSERT_TRUE(rows.ok());
  EXPECT_GE(static_cast<int>(rows->size()), 2 * committed_fits);
  auto predictions = (*check)->ListPredictions(0);
  ASSERT_TRUE(predictions.ok());
  EXPECT_GE(static_cast<int>(predictions->size()), committed_reports);
  // The view, polling all along, ends on what the file holds.
  EXPECT_TRUE(QTest::qWaitFor([&] { return h.rowCount() == static_cast<int>(rows->size()); }, 5000))
      << v.message().toStdString();
}

}  // namespace
}  // namespace meshplan::gui
