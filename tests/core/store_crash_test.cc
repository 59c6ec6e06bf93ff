// Crash safety and concurrency of the SQLite result store (docs/store.md, "Crash safety"): writer
// processes are SIGKILLed at random moments, mostly inside long transactions, and readers run
// beside a writer. What must hold: the file passes PRAGMA integrity_check, every measurement a
// writer saw committed is there with all its op rows, no measurement is ever partial, no reader
// ever sees an error, and a lock held past the busy timeout is an IoError rather than a hang.
//
// POSIX only (fork, kill, pipes). Children never return into GoogleTest: they report through a
// pipe or their exit status and leave with _exit (no atexit handlers, no LeakSanitizer pass).
// The parent holds no open store while it forks (SQLite connections must not cross a fork).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/result_store.h"

namespace meshplan::core {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path MakeTestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / ("meshplan_crash_" + std::to_string(getpid()) + "_" + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A measurement whose source says how many op rows it has ("w<writer> #<seq> ops=<n>"), so any
// reader can tell a whole record from a partial one without knowing who wrote it.
StoredMeasurement Record(int writer, int64_t seq, int ops) {
  StoredMeasurement m;
  m.source = "w" + std::to_string(writer) + " #" + std::to_string(seq) + " ops=" + std::to_string(ops);
  m.backend = "cpu";
  m.mode = "single_process";
  m.hostname = "crash-test";
  m.step_time_s = 1.0 + static_cast<double>(seq);
  m.json = "{\"seq\": " + std::to_string(seq) + "}";
  m.ops.reserve(static_cast<size_t>(ops));
  for (int i = 0; i < ops; ++i)
    m.ops.push_back({.section = "layers",
                     .name = "op" + std::to_string(i),
                     .kind = "gemm",
                     .pass = "forward",
                     .calls_per_step = i,
                     .measured_s = 1e-3 * i,
                     .predicted_s = 0,
                     .modeled = true});
  return m;
}

// "" when `m` is whole: as many op rows as its source announces, in order, none foreign.
std::string WholeRecordProblem(const StoredMeasurement& m) {
  const size_t at = m.source.rfind(" ops=");
  if (at == std::string::npos) return "measurement " + std::to_string(m.id) + ": unexpected source '" + m.source + "'";
  const size_t want = std::stoul(m.source.substr(at + 5));
  if (m.ops.size() != want)
    return "measurement " + std::to_string(m.id) + " (" + m.source + ") has " + std::to_string(m.ops.size()) +
           " op rows, not " + std::to_string(want);
  for (size_t i = 0; i < m.ops.size(); ++i)
    if (m.ops[i].name != "op" + std::to_string(i) || m.ops[i].calls_per_step != static_cast<int64_t>(i))
      return "measurement " + std::to_string(m.id) + ": op row " + std::to_string(i) + " is " + m.ops[i].name;
  return "";
}

// Child side: writes measurements of [min_ops, max_ops] op rows. Sends {0, ops} on `fd` just
// before each PutMeasurement and {id, ops} after its COMMIT (16 bytes: one atomic pipe write), so
// the parent knows whether its kill landed inside a Put. Never returns.
[[noreturn]] void WriterMain(const std::string& path, int fd, int writer, uint32_t seed, int64_t records, int min_ops,
                             int max_ops) {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test leaves no writer behind
#endif
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ops_dist(min_ops, max_ops);
  auto store = OpenSqliteResultStore(path);
  if (!store.ok()) {
    std::fprintf(stderr, "writer %d: %s\n", writer, store.status().ToString().c_str());
    _exit(2);
  }
  for (int64_t seq = 0; records <= 0 || seq < records; ++seq) {
    const int ops = ops_dist(rng);
    const StoredMeasurement record = Record(writer, seq, ops);
    const int64_t starting[2] = {0, ops};
    if (write(fd, starting, sizeof starting) != static_cast<ssize_t>(sizeof starting)) _exit(4);
    auto id = (*store)->PutMeasurement(record);
    if (!id.ok()) {
      std::fprintf(stderr, "writer %d: %s\n", writer, id.status().ToString().c_str());
      _exit(3);
    }
    const int64_t msg[2] = {*id, ops};
    if (write(fd, msg, sizeof msg) != static_cast<ssize_t>(sizeof msg)) _exit(4);
  }
  store.value().reset();  // a clean close checkpoints the WAL
  _exit(0);
}

// Parent side of a writer's pipe: its messages, in order.
class WriterLog {
 public:
  explicit WriterLog(int fd) : fd_(fd) {}

  // Reads one message; false at EOF, on an error or after `timeout`.
  bool ReadOne(std::chrono::milliseconds timeout) {
    int64_t msg[2];
    auto* bytes = reinterpret_cast<char*>(msg);
    size_t got = 0;
    const auto until = Clock::now() + timeout;
    while (got < sizeof msg) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      const int ready = poll(&p, 1, static_cast<int>(left));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return false;
      const ssize_t n = read(fd_, bytes + got, sizeof msg - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    messages_.push_back({msg[0], msg[1]});
    return true;
  }
  // Reads until EOF: call after the writer has exited.
  void ReadToEnd() {
    while (ReadOne(std::chrono::seconds(10))) {}
  }
  bool SawCommit() const {
    return std::any_of(messages_.begin(), messages_.end(), [](const auto& m) { return m[0] != 0; });
  }
  // id -> op rows, for every commit the writer reported.
  std::map<int64_t, int64_t> Committed() const {
    std::map<int64_t, int64_t> out;
    for (const auto& m : messages_)
      if (m[0] != 0) out[m[0]] = m[1];
    return out;
  }
  // The last message announced a Put whose commit was never reported: the writer died inside it.
  bool DiedInsideAPut() const { return !messages_.empty() && messages_.back()[0] == 0; }

 private:
  int fd_;
  std::vector<std::array<int64_t, 2>> messages_;
};

// Kills and reaps a child when a failed ASSERT leaves the test early.
struct KillOnExit {
  pid_t pid;
  ~KillOnExit() {
    if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
  }
};

std::string ExitDescription(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Creates the file and its schema, then closes it (so no connection is open across a fork).
void CreateStore(const std::string& path) {
  auto s = OpenSqliteResultStore(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

TEST(StoreCrashTest, KilledWritersLeaveOnlyWholeCommittedRecords) {
  const fs::path dir = MakeTestDir();
  const std::string path = (dir / "crash.db").string();
  // The first writers also race the schema migration against the kill: no CreateStore here.
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> kill_after_us(0, 40000);  // 0 to 40 ms into the first Put
  constexpr int kRounds = 30;

  std::map<int64_t, int64_t> committed;  // id -> op rows, as the writers reported
  int rounds_with_commits = 0;
  int kills_inside_a_put = 0;
  for (int round = 0; round < kRounds; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      // 500 to 4000 op rows: a transaction of a few ms, so most kills land inside one.
      WriterMain(path, fds[1], round, seed + static_cast<uint32_t>(round), 0, 500, 4000);
    }
    close(fds[1]);
    WriterLog log(fds[0]);
    // Time the kill from the writer's first Put: start-up and Open are not what is tested, and
    // take much longer under a sanitizer or on a loaded machine.
    const bool started = log.ReadOne(std::chrono::seconds(10));
    // Every fifth round lets a commit through first, so that committed ids always get checked.
    if (started && round % 5 == 4)
      while (!log.SawCommit() && log.ReadOne(std::chrono::seconds(10))) {}
    std::this_thread::sleep_for(std::chrono::microseconds(kill_after_us(rng)));
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    log.ReadToEnd();
    close(fds[0]);
    const auto got = log.Committed();
    // A writer that stopped on its own failed (its message is on stderr).
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "round " << round << ": writer ended with " << ExitDescription(status);
    for (const auto& [id, ops] : got) {
      ASSERT_EQ(committed.count(id), 0u) << "id " << id << " committed twice";
      committed[id] = ops;
    }
    if (!got.empty()) ++rounds_with_commits;
    if (log.DiedInsideAPut()) ++kills_inside_a_put;
  }
  RecordProperty("committed", static_cast<int>(committed.size()));
  RecordProperty("rounds_with_commits", rounds_with_commits);
  RecordProperty("kills_inside_a_put", kills_inside_a_put);
  // Without commits or without kills inside a transaction the test would prove nothing.
  ASSERT_GE(rounds_with_commits, kRounds / 5) << "too few writers committed anything before their kill";
  ASSERT_GE(kills_inside_a_put, kRounds / 3) << "too few kills landed inside a PutMeasurement";

  auto store = OpenSqliteResultStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const Status integrity = (*store)->CheckIntegrity();
  ASSERT_TRUE(integrity.ok()) << integrity.ToString();

  for (const auto& [id, ops] : committed) {
    auto m = (*store)->GetMeasurement(id);
    ASSERT_TRUE(m.ok()) << "committed id " << id << ": " << m.status().ToString();
    EXPECT_EQ(static_cast<int64_t>(m->ops.size()), ops) << "id " << id;
    EXPECT_EQ(WholeRecordProblem(*m), "");
  }
  // Every stored record is whole, including any that committed just before the kill, unreported.
  auto all = (*store)->History(0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_GE(all->size(), committed.size());
  for (const HistoryRow& row : *all) {
    auto m = (*store)->GetMeasurement(row.measurement_id);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(WholeRecordProblem(*m), "");
  }

  // And the store still takes writes.
  auto id = (*store)->PutMeasurement(Record(99, 0, 10));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto back = (*store)->GetMeasurement(*id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->ops.size(), 10u);
  EXPECT_TRUE((*store)->CheckIntegrity().ok());
  store.value().reset();
  fs::remove_all(dir);
}

// What one reader saw: how many records it checked, and its first problem ("" if none).
struct ReaderReport {
  int64_t records_checked = 0;
  int64_t passes = 0;
  std::string problem;
};

// Reads History and each listed measurement until it has seen measurement `last_id` (then one more
// pass) or `deadline`. Any error or partial record ends the loop with `problem` set.
ReaderReport ReadUntil(const std::string& path, int64_t last_id, Clock::time_point deadline) {
  ReaderReport r;
  auto store = OpenSqliteResultStore(path);
  if (!store.ok()) {
    r.problem = "open: " + store.status().ToString();
    return r;
  }
  bool saw_last = false;
  while (Clock::now() < deadline) {
    const bool final_pass = saw_last;
    auto rows = (*store)->History(8);
    if (!rows.ok()) {
      r.problem = "History: " + rows.status().ToString();
      return r;
    }
    for (const HistoryRow& row : *rows) {
      auto m = (*store)->GetMeasurement(row.measurement_id);
      if (!m.ok()) {
        r.problem = "GetMeasurement(" + std::to_string(row.measurement_id) + "): " + m.status().ToString();
        return r;
      }
      if (std::string p = WholeRecordProblem(*m); !p.empty()) {
        r.problem = p;
        return r;
      }
      ++r.records_checked;
      if (row.measurement_id >= last_id) saw_last = true;
    }
    ++r.passes;
    if (final_pass) return r;
    // Leave the writer some CPU: three readers and a writer share two cores in CI.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  r.problem = "deadline passed before measurement " + std::to_string(last_id) + " appeared";
  return r;
}

TEST(StoreCrashTest, ReadersBesideAWriterNeverSeeErrorsOrPartialRecords) {
  const fs::path dir = MakeTestDir();
  const std::string path = (dir / "readers.db").string();
  CreateStore(path);
  constexpr int64_t kRecords = 120;
  const auto deadline = Clock::now() + std::chrono::seconds(15);

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    close(fds[0]);
    WriterMain(path, fds[1], 1, 1234, kRecords, 50, 1500);
  }
  close(fds[1]);
  // A reader process: its own connection in its own process (the shared-memory index across
  // processes), reporting through its exit status.
  const pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    close(fds[0]);
    const ReaderReport r = ReadUntil(path, kRecords, deadline);
    if (!r.problem.empty()) std::fprintf(stderr, "reader process: %s\n", r.problem.c_str());
    _exit(r.problem.empty() ? 0 : 1);
  }
  // Reader threads in this process, one store object each.
  std::vector<ReaderReport> reports(2);
  std::vector<std::thread> threads;
  for (auto& report : reports)
    threads.emplace_back([&report, &path, deadline] { report = ReadUntil(path, kRecords, deadline); });
  for (auto& t : threads) t.join();

  int status = 0;
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer: " << ExitDescription(status);
  WriterLog log(fds[0]);
  log.ReadToEnd();
  close(fds[0]);
  const auto committed = log.Committed();
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "reader process: " << ExitDescription(status);
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].problem, "") << "reader thread " << i;
    EXPECT_GT(reports[i].records_checked, 0) << "reader thread " << i;
  }
  EXPECT_EQ(static_cast<int64_t>(committed.size()), kRecords);

  auto store = OpenSqliteResultStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->CheckIntegrity().ok());
  auto all = (*store)->History(0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(static_cast<int64_t>(all->size()), kRecords);
  store.value().reset();
  fs::remove_all(dir);
}

TEST(StoreCrashTest, LockHeldPastTheBusyTimeoutIsAnIoErrorNotAHang) {
  const fs::path dir = MakeTestDir();
  const std::string path = (dir / "busy.db").string();
  CreateStore(path);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    close(fds[0]);
    // Transactions of 20k op rows: the write lock is held nearly all the time.
    WriterMain(path, fds[1], 1, 7, 0, 20000, 20000);
  }
  KillOnExit guard{writer};
  close(fds[1]);
  // Wait for the writer's first commit: it then starts the next long transaction at once. (Writing
  // back to back from here instead would starve it: SQLite's lock is not fair, and a busy writer
  // polls for it in sleeps of up to 100 ms.)
  WriterLog log(fds[0]);
  while (!log.SawCommit())
    ASSERT_TRUE(log.ReadOne(std::chrono::seconds(10))) << "the writer died or hung before its first commit";
  {
    // Opening only reads (the schema is current), but even a read can meet a lock for an instant
    // (the writer's checkpoints): with a 1 ms timeout, allow a few tries.
    auto store = OpenSqliteResultStore(path, SqliteStoreOptions{.busy_timeout_ms = 1});
    for (int attempt = 0; !store.ok() && attempt < 50; ++attempt)
      store = OpenSqliteResultStore(path, SqliteStoreOptions{.busy_timeout_ms = 1});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Status error;
    Clock::duration slowest{};
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (error.ok() && Clock::now() < until) {
      StoredSweep s;
      s.label = "busy";
      const auto start = Clock::now();
      auto id = (*store)->PutSweep(s);
      slowest = std::max(slowest, Clock::now() - start);
      if (!id.ok()) error = id.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_FALSE(error.ok()) << "every write found the lock free: the writer never held it";
    RecordProperty("busy_error", error.ToString());
    EXPECT_EQ(error.code(), Status::Code::kIoError) << error.ToString();
    EXPECT_NE(error.message().find(path), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("locked"), std::string::npos) << error.message();
    // 1 ms of busy timeout, not a wait for the writer's transactions.
    EXPECT_LT(slowest, std::chrono::seconds(1));
  }
  guard.pid = 0;
  kill(writer, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  EXPECT_TRUE(WIFSIGNALED(status)) << "writer: " << ExitDescription(status);
  close(fds[0]);
  fs::remove_all(dir);
}

TEST(StoreCrashTest, ProcessesOpeningANewFileTogetherMigrateItOnce) {
  const fs::path dir = MakeTestDir();
  const std::string path = (dir / "sub" / "new.db").string();
  constexpr int kProcesses = 4;
  int gate[2];  // children wait for EOF on it, so they all open at once
  ASSERT_EQ(pipe(gate), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
#ifdef __linux__
      prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
      close(gate[1]);
      char c;
      while (read(gate[0], &c, 1) > 0) {}
      auto store = OpenSqliteResultStore(path);
      if (!store.ok()) {
        std::fprintf(stderr, "opener %d: %s\n", i, store.status().ToString().c_str());
        _exit(1);
      }
      StoredSweep s;
      s.label = "opener " + std::to_string(i);
      auto id = (*store)->PutSweep(s);
      if (!id.ok()) {
        std::fprintf(stderr, "opener %d: %s\n", i, id.status().ToString().c_str());
        _exit(2);
      }
      store.value().reset();
      _exit(0);
    }
    pids.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);  // go
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "opener: " << ExitDescription(status);
  }
  auto store = OpenSqliteResultStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->SchemaVersion(), kStoreSchemaVersion);
  auto sweeps = (*store)->ListSweeps(0);
  ASSERT_TRUE(sweeps.ok());
  EXPECT_EQ(sweeps->size(), static_cast<size_t>(kProcesses));
  EXPECT_TRUE((*store)->CheckIntegrity().ok());
  store.value().reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace meshplan::core
