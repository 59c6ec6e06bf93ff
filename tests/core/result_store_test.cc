// The result store's conformance suite, run against both implementations (the memory fake and
// SQLite), then the SQLite file's own cases: reopen, migration, newer schema, bad paths.
// Crash safety and concurrency are in store_crash_test.cc (they fork).
#include "core/result_store.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace meshplan::core {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test under gtest's temp dir, removed afterwards.
fs::path MakeTestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& ch : name)
    if (ch == '/') ch = '_';
  fs::path dir = fs::path(::testing::TempDir()) / ("meshplan_store_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool IsIsoUtc(const std::string& t) {
  static const std::regex re("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z");
  return std::regex_match(t, re);
}

StoredPlan Plan(const std::string& label, const std::string& json) {
  return StoredPlan{.id = 0, .label = label, .plan_json = json, .created_at = ""};
}

StoredMeasurement Measurement(int64_t plan_id, const std::string& source, int ops) {
  StoredMeasurement m;
  m.plan_id = plan_id;
  m.source = source;
  m.backend = "cpu";
  m.mode = "single_process";
  m.hostname = "node-01";
  m.step_time_s = 1.25;
  m.mfu = 0.41;
  m.predicted_step_s = 1.0;
  m.profile_name = "default";
  m.json = R"({"schema": "meshplan.measurement/1", "source": ")" + source + "\"}";
  for (int i = 0; i < ops; ++i)
    m.ops.push_back({.section = "layer" + std::to_string(i / 3),
                     .name = "op" + std::to_string(i),
                     .kind = i % 2 ? "gemm" : "all_reduce",
                     .pass = i % 3 ? "forward" : "backward",
                     .calls_per_step = i + 1,
                     .measured_s = 0.001 * (i + 1),
                     .predicted_s = 0.0011 * (i + 1),
                     .modeled = i % 2 == 0});
  return m;
}

StoredProfile Profile(const std::string& name, const std::string& json, std::vector<int64_t> sources = {}) {
  StoredProfile p;
  p.name = name;
  p.profile_json = json;
  p.fit_report_json = R"({"r2": 0.98})";
  p.measurement_ids = std::move(sources);
  return p;
}

enum class StoreKind { kMemory, kSqlite };

class ResultStoreTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    if (GetParam() == StoreKind::kMemory) {
      store_ = NewMemoryResultStore();
      return;
    }
    dir_ = MakeTestDir();
    auto s = OpenSqliteResultStore((dir_ / "store.db").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  fs::path dir_;
  std::unique_ptr<ResultStore> store_;
};

TEST_P(ResultStoreTest, SchemaVersionIsCurrent) {
  EXPECT_EQ(store_->SchemaVersion(), kStoreSchemaVersion);
  EXPECT_TRUE(store_->CheckIntegrity().ok());
}

TEST_P(ResultStoreTest, PlanRoundTripAndIdsFromOne) {
  auto a = store_->PutPlan(Plan("llama3-70b tp8 pp2 dp4 on 64x h100-sxm", R"({"tp": 8})"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, 1);
  auto b = store_->PutPlan(Plan("tiny", R"({"tp": 1})"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 2);
  auto got = store_->GetPlan(1);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, 1);
  EXPECT_EQ(got->label, "llama3-70b tp8 pp2 dp4 on 64x h100-sxm");
  EXPECT_EQ(got->plan_json, R"({"tp": 8})");
  EXPECT_TRUE(IsIsoUtc(got->created_at)) << got->created_at;
  auto missing = store_->GetPlan(3);
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
}

TEST_P(ResultStoreTest, IdenticalPlanJsonIsStoredOnce) {
  auto a = store_->PutPlan(Plan("first label", R"({"tp": 8, "pp": 2})"));
  auto b = store_->PutPlan(Plan("second label", R"({"tp": 8, "pp": 2})"));
  auto c = store_->PutPlan(Plan("first label", R"({"tp": 8, "pp": 4})"));  // same label, other plan
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  auto got = store_->GetPlan(*a);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->label, "first label");  // kept from the first Put
}

TEST_P(ResultStoreTest, PredictionRoundTrip) {
  auto plan = store_->PutPlan(Plan("p", "{}"));
  ASSERT_TRUE(plan.ok());
  StoredPrediction p{.id = 0,
                     .plan_id = *plan,
                     .profile_name = "h100-lab",
                     .model_version = "meshplan 0.1.0 step-model/1",
                     .step_time_s = 3.5,
                     .mfu = 0.45,
                     .json = R"({"step": {"time_s": 3.5}})",
                     .created_at = "ignored"};
  auto id1 = store_->PutPrediction(p);
  p.step_time_s = 3.25;
  auto id2 = store_->PutPrediction(p);
  ASSERT_TRUE(id1.ok() && id2.ok()) << id1.status().ToString();
  EXPECT_EQ(*id1, 1);
  EXPECT_EQ(*id2, 2);
  auto list = store_->PredictionsForPlan(*plan);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, 1);  // oldest first
  EXPECT_EQ((*list)[0].profile_name, "h100-lab");
  EXPECT_EQ((*list)[0].model_version, "meshplan 0.1.0 step-model/1");
  EXPECT_DOUBLE_EQ((*list)[0].step_time_s, 3.5);
  EXPECT_DOUBLE_EQ((*list)[0].mfu, 0.45);
  EXPECT_EQ((*list)[0].json, R"({"step": {"time_s": 3.5}})");
  EXPECT_TRUE(IsIsoUtc((*list)[0].created_at)) << (*list)[0].created_at;
  EXPECT_DOUBLE_EQ((*list)[1].step_time_s, 3.25);
  auto none = store_->PredictionsForPlan(99);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // Across plans, newest first, with the plan's label; a limit keeps the newest.
  auto all = store_->ListPredictions(0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].prediction.id, 2);
  EXPECT_DOUBLE_EQ((*all)[0].prediction.step_time_s, 3.25);
  EXPECT_EQ((*all)[0].plan_label, "p");
  auto one = store_->ListPredictions(1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].prediction.id, 2);
}

TEST_P(ResultStoreTest, ReferencesToMissingRecordsAreRefused) {
  StoredPrediction p;
  p.plan_id = 7;
  auto pred = store_->PutPrediction(p);
  EXPECT_EQ(pred.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(pred.status().message().find("prediction.plan_id: no plan with id 7"), std::string::npos)
      << pred.status().message();
  auto meas = store_->PutMeasurement(Measurement(7, "a.json", 2));
  EXPECT_EQ(meas.status().code(), Status::Code::kInvalidArgument);
  auto prof = store_->PutProfile(Profile("lab", "{}", {1}));
  EXPECT_EQ(prof.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(prof.status().message().find("no measurement with id 1"), std::string::npos);
  auto unnamed = store_->PutProfile(Profile("", "{}"));
  EXPECT_EQ(unnamed.status().code(), Status::Code::kInvalidArgument);
  // Nothing was half-stored: the next ids are still 1.
  auto m = store_->PutMeasurement(Measurement(0, "b.json", 1));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, 1);
  auto h = store_->History(0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->size(), 1u);
  EXPECT_TRUE(store_->CheckIntegrity().ok());
}

TEST_P(ResultStoreTest, MeasurementRoundTripWithOps) {
  auto plan = store_->PutPlan(Plan("tiny dp2", R"({"dp": 2})"));
  ASSERT_TRUE(plan.ok());
  const StoredMeasurement in = Measurement(*plan, "runs/tiny-cpu.json", 50);
  auto id = store_->PutMeasurement(in);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, 1);
  auto got = store_->GetMeasurement(*id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, 1);
  EXPECT_EQ(got->plan_id, *plan);
  EXPECT_EQ(got->source, in.source);
  EXPECT_EQ(got->backend, "cpu");
  EXPECT_EQ(got->mode, "single_process");
  EXPECT_EQ(got->hostname, "node-01");
  EXPECT_DOUBLE_EQ(got->step_time_s, 1.25);
  EXPECT_DOUBLE_EQ(got->mfu, 0.41);
  EXPECT_DOUBLE_EQ(got->predicted_step_s, 1.0);
  EXPECT_EQ(got->profile_name, "default");
  EXPECT_EQ(got->json, in.json);
  EXPECT_TRUE(IsIsoUtc(got->created_at));
  ASSERT_EQ(got->ops.size(), 50u);
  for (size_t i = 0; i < in.ops.size(); ++i) {  // in Put order
    const StoredOpRow& a = in.ops[i];
    const StoredOpRow& b = got->ops[i];
    EXPECT_EQ(b.section, a.section);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.pass, a.pass);
    EXPECT_EQ(b.calls_per_step, a.calls_per_step);
    EXPECT_DOUBLE_EQ(b.measured_s, a.measured_s);
    EXPECT_DOUBLE_EQ(b.predicted_s, a.predicted_s);
    EXPECT_EQ(b.modeled, a.modeled);
  }
  // A microbenchmark: no plan, no ops.
  auto bench = store_->PutMeasurement(Measurement(0, "bench-gemm.json", 0));
  ASSERT_TRUE(bench.ok());
  auto b = store_->GetMeasurement(*bench);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->plan_id, 0);
  EXPECT_TRUE(b->ops.empty());
  EXPECT_EQ(store_->GetMeasurement(3).status().code(), Status::Code::kNotFound);
}

TEST_P(ResultStoreTest, TextIsKeptByteForByte) {
  // Quotes and SQL in values (bound, never spliced), UTF-8, and a 1 MiB JSON blob.
  const std::string tricky = "it's \"quoted\"'); DROP TABLE plans; -- \xce\xbcs \xe2\x86\x92 \xf0\x9f\x9a\x80";
  const std::string big = "{\"pad\": \"" + std::string(1 << 20, 'x') + "\"}";
  auto id = store_->PutPlan(Plan(tricky, big));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto got = store_->GetPlan(*id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->label, tricky);
  EXPECT_EQ(got->plan_json, big);
  auto again = store_->PutPlan(Plan("x", big));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *id);
}

TEST_P(ResultStoreTest, ProfileVersionsCountPerNameAndNewestWins) {
  auto m1 = store_->PutMeasurement(Measurement(0, "gemm.json", 1));
  auto m2 = store_->PutMeasurement(Measurement(0, "nccl.json", 1));
  ASSERT_TRUE(m1.ok() && m2.ok());
  auto v1 = store_->PutProfile(Profile("h100-lab", R"({"v": 1})", {*m2, *m1, *m2}));
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v1->name, "h100-lab");
  EXPECT_EQ(v1->measurement_ids, (std::vector<int64_t>{*m1, *m2}));  // sorted, no duplicates
  EXPECT_TRUE(IsIsoUtc(v1->created_at));
  auto other = store_->PutProfile(Profile("a100-lab", R"({"v": "a"})"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->version, 1);  // versions count per name
  auto v2 = store_->PutProfile(Profile("h100-lab", R"({"v": 2})", {*m1}));
  auto v3 = store_->PutProfile(Profile("h100-lab", R"({"v": 3})"));
  ASSERT_TRUE(v2.ok() && v3.ok());
  EXPECT_EQ(v2->version, 2);
  EXPECT_EQ(v3->version, 3);
  EXPECT_NE(v3->id, v2->id);

  auto got = store_->GetProfile("h100-lab");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->version, 3);
  EXPECT_EQ(got->id, v3->id);
  EXPECT_EQ(got->profile_json, R"({"v": 3})");
  EXPECT_EQ(got->fit_report_json, R"({"r2": 0.98})");
  EXPECT_TRUE(got->measurement_ids.empty());

  auto list = store_->ListProfiles();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);  // newest version of each name, sorted by name
  EXPECT_EQ((*list)[0].name, "a100-lab");
  EXPECT_EQ((*list)[0].version, 1);
  EXPECT_EQ((*list)[1].name, "h100-lab");
  EXPECT_EQ((*list)[1].version, 3);
}

TEST_P(ResultStoreTest, ProfileSourcesRoundTrip) {
  auto m1 = store_->PutMeasurement(Measurement(0, "gemm.json", 1));
  auto m2 = store_->PutMeasurement(Measurement(0, "nccl.json", 1));
  ASSERT_TRUE(m1.ok() && m2.ok());
  ASSERT_TRUE(store_->PutProfile(Profile("lab", "{}", {*m1, *m2})).ok());
  auto got = store_->GetProfile("lab");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->measurement_ids, (std::vector<int64_t>{*m1, *m2}));
  auto list = store_->ListProfiles();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].measurement_ids.size(), 2u);
}

TEST_P(ResultStoreTest, MissingProfileNamesTheOnesThatExist) {
  auto empty = store_->GetProfile("h100-lab");
  EXPECT_EQ(empty.status().code(), Status::Code::kNotFound);
  EXPECT_NE(empty.status().message().find("no profile named 'h100-lab'"), std::string::npos)
      << empty.status().message();
  EXPECT_NE(empty.status().message().find("no profiles yet"), std::string::npos) << empty.status().message();

  ASSERT_TRUE(store_->PutProfile(Profile("zeta", "{}")).ok());
  ASSERT_TRUE(store_->PutProfile(Profile("alpha", "{}")).ok());
  ASSERT_TRUE(store_->PutProfile(Profile("alpha", "{}")).ok());
  auto missing = store_->GetProfile("h100-lab");
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("(profiles: alpha, zeta)"), std::string::npos)
      << missing.status().message();
}

TEST_P(ResultStoreTest, HistoryIsNewestFirstWithPlanLabels) {
  auto p1 = store_->PutPlan(Plan("llama3-8b dp8 on 8x h100-sxm", "{1}"));
  auto p2 = store_->PutPlan(Plan("tiny pp2 on 2x cpu", "{2}"));
  ASSERT_TRUE(p1.ok() && p2.ok());
  StoredMeasurement a = Measurement(*p1, "a.json", 3);
  a.step_time_s = 2.0;
  a.predicted_step_s = 1.8;
  StoredMeasurement b = Measurement(0, "bench.json", 0);  // microbenchmark: no plan
  b.backend = "cuda";
  b.mode = "bench_gemm";
  StoredMeasurement c = Measurement(*p2, "c.json", 1);
  c.profile_name = "h100-lab";
  ASSERT_TRUE(store_->PutMeasurement(a).ok());
  ASSERT_TRUE(store_->PutMeasurement(b).ok());
  ASSERT_TRUE(store_->PutMeasurement(c).ok());

  auto all = store_->History(0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].measurement_id, 3);
  EXPECT_EQ((*all)[0].plan_label, "tiny pp2 on 2x cpu");
  EXPECT_EQ((*all)[0].profile_name, "h100-lab");
  EXPECT_EQ((*all)[1].measurement_id, 2);
  EXPECT_EQ((*all)[1].plan_label, "");
  EXPECT_EQ((*all)[1].backend, "cuda");
  EXPECT_EQ((*all)[1].mode, "bench_gemm");
  EXPECT_EQ((*all)[2].measurement_id, 1);
  EXPECT_EQ((*all)[2].plan_label, "llama3-8b dp8 on 8x h100-sxm");
  EXPECT_EQ((*all)[2].source, "a.json");
  EXPECT_EQ((*all)[2].hostname, "node-01");
  EXPECT_DOUBLE_EQ((*all)[2].measured_step_s, 2.0);
  EXPECT_DOUBLE_EQ((*all)[2].predicted_step_s, 1.8);
  EXPECT_TRUE(IsIsoUtc((*all)[2].created_at));

  auto two = store_->History(2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].measurement_id, 3);
  EXPECT_EQ((*two)[1].measurement_id, 2);
  auto negative = store_->History(-1);
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(negative->size(), 3u);
}

TEST_P(ResultStoreTest, SweepsRoundTripNewestFirst) {
  for (int i = 1; i <= 3; ++i) {
    StoredSweep s{.id = 0,
                  .label = "llama3-8b on " + std::to_string(8 * i) + "x h100-sxm",
                  .args_json = R"({"gpus": )" + std::to_string(8 * i) + "}",
                  .result_json = R"({"plans": []})",
                  .candidates = 100 * i,
                  .created_at = ""};
    auto id = store_->PutSweep(s);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_EQ(*id, i);
  }
  auto all = store_->ListSweeps(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, 3);
  EXPECT_EQ((*all)[0].label, "llama3-8b on 24x h100-sxm");
  EXPECT_EQ((*all)[0].args_json, R"({"gpus": 24})");
  EXPECT_EQ((*all)[0].result_json, R"({"plans": []})");
  EXPECT_EQ((*all)[0].candidates, 300);
  EXPECT_TRUE(IsIsoUtc((*all)[0].created_at));
  EXPECT_EQ((*all)[2].id, 1);
  auto one = store_->ListSweeps(1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].id, 3);
}

INSTANTIATE_TEST_SUITE_P(Memory, ResultStoreTest, ::testing::Values(StoreKind::kMemory));
INSTANTIATE_TEST_SUITE_P(Sqlite, ResultStoreTest, ::testing::Values(StoreKind::kSqlite));

// ---- the SQLite file itself ---------------------------------------------------------------------

class SqliteResultStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTestDir(); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// SQLite's file header keeps PRAGMA user_version as a 4-byte big-endian integer at offset 60
// (https://www.sqlite.org/fileformat2.html#database_header); patched here so the test needs no
// sqlite3.h. REQUIRES: no connection open on the file, no -wal file (closed cleanly).
void PatchUserVersion(const fs::path& db, uint32_t version) {
  ASSERT_FALSE(fs::exists(db.string() + "-wal")) << "a clean close checkpoints and removes the WAL";
  std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.is_open());
  f.seekp(60);
  const char bytes[4] = {static_cast<char>(version >> 24), static_cast<char>(version >> 16),
                         static_cast<char>(version >> 8), static_cast<char>(version)};
  f.write(bytes, 4);
  ASSERT_TRUE(f.good());
}

TEST_F(SqliteResultStoreTest, ReopenKeepsData) {
  const std::string path = (dir_ / "store.db").string();
  {
    auto s = OpenSqliteResultStore(path);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto plan = (*s)->PutPlan(Plan("tiny", "{}"));
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE((*s)->PutMeasurement(Measurement(*plan, "a.json", 4)).ok());
    ASSERT_TRUE((*s)->PutProfile(Profile("lab", "{}", {1})).ok());
    StoredSweep sweep;
    sweep.label = "sweep";
    ASSERT_TRUE((*s)->PutSweep(sweep).ok());
  }
  auto s = OpenSqliteResultStore(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->SchemaVersion(), kStoreSchemaVersion);
  auto m = (*s)->GetMeasurement(1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->ops.size(), 4u);
  auto h = (*s)->History(0);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].plan_label, "tiny");
  auto p = (*s)->GetProfile("lab");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->measurement_ids, std::vector<int64_t>{1});
  auto sw = (*s)->ListSweeps(0);
  ASSERT_TRUE(sw.ok());
  EXPECT_EQ(sw->size(), 1u);
  // Ids continue where they were.
  auto plan2 = (*s)->PutPlan(Plan("other", "{2}"));
  ASSERT_TRUE(plan2.ok());
  EXPECT_EQ(*plan2, 2);
  EXPECT_TRUE((*s)->CheckIntegrity().ok());
}

TEST_F(SqliteResultStoreTest, CreatesMissingParentDirectories) {
  const fs::path path = dir_ / "a" / "b" / "meshplan.db";
  auto s = OpenSqliteResultStore(path.string());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(fs::is_regular_file(path));
}

TEST_F(SqliteResultStoreTest, MigratesAnEmptyFile) {
  const fs::path path = dir_ / "empty.db";
  std::ofstream(path).close();  // zero bytes: a valid, empty SQLite database at user_version 0
  ASSERT_EQ(fs::file_size(path), 0u);
  auto s = OpenSqliteResultStore(path.string());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->SchemaVersion(), kStoreSchemaVersion);
  EXPECT_TRUE((*s)->PutPlan(Plan("p", "{}")).ok());
  EXPECT_TRUE((*s)->CheckIntegrity().ok());
}

TEST_F(SqliteResultStoreTest, NewerSchemaIsRefusedNotDowngraded) {
  const fs::path path = dir_ / "future.db";
  {
    auto s = OpenSqliteResultStore(path.string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->PutPlan(Plan("p", "{}")).ok());
  }
  PatchUserVersion(path, 99);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the refusal leaves the file as it was
    auto s = OpenSqliteResultStore(path.string());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument);
    const std::string& msg = s.status().message();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("schema version 99"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(" + std::to_string(kStoreSchemaVersion) + ")"), std::string::npos) << msg;
  }
}

TEST_F(SqliteResultStoreTest, UnwritablePathIsAnIoErrorNamingThePath) {
  // A regular file where a directory should be: fails for root too (unlike a chmod'ed directory).
  std::ofstream(dir_ / "file").put('x');
  const std::string path = (dir_ / "file" / "sub" / "meshplan.db").string();
  auto s = OpenSqliteResultStore(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kIoError);
  EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().message();

  auto dir = OpenSqliteResultStore(dir_.string());  // a directory is no database either
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), Status::Code::kIoError);
  EXPECT_NE(dir.status().message().find(dir_.string()), std::string::npos) << dir.status().message();

  auto empty = OpenSqliteResultStore("");
  EXPECT_EQ(empty.status().code(), Status::Code::kInvalidArgument);
}

TEST_F(SqliteResultStoreTest, FileThatIsNotADatabaseIsAnIoError) {
  const fs::path path = dir_ / "notes.db";
  std::ofstream(path) << std::string(4096, 'n');
  auto s = OpenSqliteResultStore(path.string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kIoError);
  EXPECT_NE(s.status().message().find(path.string()), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("not a database"), std::string::npos) << s.status().message();
  // The failing call is placed by its source file's name, not the build machine's path to it.
  EXPECT_NE(s.status().message().find(" at sqlite_result_store.cc:"), std::string::npos) << s.status().message();
  EXPECT_EQ(s.status().message().find("/core/sqlite_result_store.cc"), std::string::npos) << s.status().message();
}

TEST(ResultStorePathTest, DefaultPathFollowsEnvironment) {
  // Save and restore what this test changes: other tests may read the same variables.
  auto save = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto db = save("MESHPLAN_DB"), xdg = save("XDG_DATA_HOME"), home = save("HOME");
  setenv("MESHPLAN_DB", "/tmp/x/custom.db", 1);
  setenv("XDG_DATA_HOME", "/data", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DefaultStorePath(), "/tmp/x/custom.db");
  unsetenv("MESHPLAN_DB");
  EXPECT_EQ(DefaultStorePath(), "/data/meshplan/meshplan.db");
  setenv("XDG_DATA_HOME", "relative/dir", 1);  // ignored, as the XDG spec says
  EXPECT_EQ(DefaultStorePath(), "/home/u/.local/share/meshplan/meshplan.db");
  unsetenv("XDG_DATA_HOME");
  EXPECT_EQ(DefaultStorePath(), "/home/u/.local/share/meshplan/meshplan.db");
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v) setenv(name, v->c_str(), 1);
    else unsetenv(name);
  };
  restore("MESHPLAN_DB", db);
  restore("XDG_DATA_HOME", xdg);
  restore("HOME", home);
}

}  // namespace
}  // namespace meshplan::core
