// The SQLite result store: the only file that includes sqlite3.h (docs/store.md has the schema).
//
// Every SQLite call that can fail goes through MESHPLAN_RETURN_IF_SQLITE_ERROR, which returns a
// Status naming the file, the call, this source line and sqlite3_errmsg. Values are only ever bound
// to prepared statements; the one piece of SQL built from a number is PRAGMA user_version, which
// takes no parameters and is set from this file's own migration list.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/result_store.h"
#include "core/result_store_internal.h"

namespace meshplan::core {
namespace {

// Forward-only schema migrations. Migration N takes user_version N-1 to N; all pending ones run in
// one BEGIN IMMEDIATE transaction at Open, so a process killed mid-migration leaves the old schema.
// Append new migrations here (never edit a released one) and raise kStoreSchemaVersion.
struct Migration {
  int version;
  const char* sql;
};
constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE plans (
  id          INTEGER PRIMARY KEY,
  label       TEXT NOT NULL,
  plan_json   TEXT NOT NULL UNIQUE,      -- the dedup key: identical JSON is one plan
  created_at  TEXT NOT NULL
);
CREATE TABLE predictions (
  id             INTEGER PRIMARY KEY,
  plan_id        INTEGER NOT NULL REFERENCES plans(id),
  profile_name   TEXT NOT NULL,
  model_version  TEXT NOT NULL,
  step_time_s    REAL NOT NULL,
  mfu            REAL NOT NULL,
  json           TEXT NOT NULL,
  created_at     TEXT NOT NULL
);
CREATE INDEX predictions_by_plan ON predictions(plan_id);
CREATE TABLE measurements (
  id                INTEGER PRIMARY KEY,
  plan_id           INTEGER REFERENCES plans(id),   -- NULL for microbenchmarks
  source            TEXT NOT NULL,
  backend           TEXT NOT NULL,
  mode              TEXT NOT NULL,
  hostname          TEXT NOT NULL,
  step_time_s       REAL NOT NULL,
  mfu               REAL NOT NULL,
  predicted_step_s  REAL NOT NULL,
  profile_name      TEXT NOT NULL,
  json              TEXT NOT NULL,
  created_at        TEXT NOT NULL
);
CREATE INDEX measurements_by_plan ON measurements(plan_id);
CREATE TABLE measurement_ops (
  measurement_id  INTEGER NOT NULL REFERENCES measurements(id),
  ordinal         INTEGER NOT NULL,        -- position in StoredMeasurement::ops
  section         TEXT NOT NULL,
  name            TEXT NOT NULL,
  kind            TEXT NOT NULL,
  pass            TEXT NOT NULL,
  calls_per_step  INTEGER NOT NULL,
  measured_s      REAL NOT NULL,
  predicted_s     REAL NOT NULL,
  modeled         INTEGER NOT NULL,        -- 0 or 1
  PRIMARY KEY (measurement_id, ordinal)
) WITHOUT ROWID;
CREATE TABLE profiles (
  id               INTEGER PRIMARY KEY,
  name             TEXT NOT NULL,
  version          INTEGER NOT NULL,
  profile_json     TEXT NOT NULL,
  fit_report_json  TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  UNIQUE (name, version)
);
CREATE TABLE profile_sources (
  profile_id      INTEGER NOT NULL REFERENCES profiles(id),
  measurement_id  INTEGER NOT NULL REFERENCES measurements(id),
  PRIMARY KEY (profile_id, measurement_id)
) WITHOUT ROWID;
CREATE INDEX profile_sources_by_measurement ON profile_sources(measurement_id);
CREATE TABLE sweeps (
  id           INTEGER PRIMARY KEY,
  label        TEXT NOT NULL,
  args_json    TEXT NOT NULL,
  result_json  TEXT NOT NULL,
  candidates   INTEGER NOT NULL,
  created_at   TEXT NOT NULL
);
)sql"},
};
static_assert(std::size(kMigrations) == static_cast<size_t>(kStoreSchemaVersion),
              "one migration per schema version, the last one is kStoreSchemaVersion");

// One connection and the path it was opened from (for messages).
struct Conn {
  sqlite3* db = nullptr;
  std::string path;
};

Status SqliteError(const Conn& c, int rc, const char* expr, const char* file, int line) {
  // sqlite3_errmsg describes the most recent failed call on this connection: the one just made.
  const std::string what = c.db ? sqlite3_errmsg(c.db) : sqlite3_errstr(rc);
  const std::string generic = sqlite3_errstr(rc);
  std::string msg = c.path + ": " + expr + " at " + SourcePlace(file, line) + ": " + what + " (" +
                    (what == generic ? "" : generic + ", ") + "SQLite code " + std::to_string(rc) + ")";
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return Status::IoError(msg + "; another process held the store's lock past the busy timeout");
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_CONSTRAINT:  // references are checked before every insert: reaching one is a bug
      return Status::Internal(msg);
    default: return Status::IoError(msg);
  }
}

// SQL for a message: whitespace runs collapsed, cut after 80 characters.
std::string Abbreviate(const char* sql) {
  std::string out;
  for (const char* p = sql ? sql : ""; *p && out.size() < 80; ++p) {
    const bool space = *p == ' ' || *p == '\n' || *p == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : *p;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.size() >= 80 ? out + "..." : out;
}

// Returns from the enclosing function (Status or Result<T>) unless `expr` gave SQLITE_OK, _ROW or
// _DONE. `conn` is a Conn (the connection the call used).
#define MESHPLAN_RETURN_IF_SQLITE_ERROR(conn, expr)                                                                  \
  do {                                                                                                               \
    const int meshplan_sqlite_rc_ = (expr);                                                                          \
    if (meshplan_sqlite_rc_ != SQLITE_OK && meshplan_sqlite_rc_ != SQLITE_ROW && meshplan_sqlite_rc_ != SQLITE_DONE) \
      return SqliteError((conn), meshplan_sqlite_rc_, #expr, __FILE__, __LINE__);                                    \
  } while (0)

// A prepared statement, finalized on destruction. Columns and parameters are 0- and 1-based, as in
// SQLite's API.
class Stmt {
 public:
  explicit Stmt(const Conn& c) : c_(c) {}
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Status Prepare(const char* sql) {
    MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_prepare_v2(c_.db, sql, -1, &stmt_, nullptr));
    return Status::Ok();
  }
  Status BindInt(int i, int64_t v) {
    MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_bind_int64(stmt_, i, v));
    return Status::Ok();
  }
  Status BindReal(int i, double v) {
    MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_bind_double(stmt_, i, v));
    return Status::Ok();
  }
  Status BindText(int i, const std::string& v) {
    MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_bind_text64(stmt_, i, v.data(), static_cast<sqlite3_uint64>(v.size()),
                                                            SQLITE_TRANSIENT, SQLITE_UTF8));
    return Status::Ok();
  }
  Status BindNull(int i) {
    MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_bind_null(stmt_, i));
    return Status::Ok();
  }
  // True when a row is ready, false when the statement is done.
  Result<bool> Step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    // The macro's text would be "rc"; name the statement instead.
    const std::string expr = "sqlite3_step(\"" + Abbreviate(sqlite3_sql(stmt_)) + "\")";
    return SqliteError(c_, rc, expr.c_str(), __FILE__, __LINE__);
  }
  // Steps through every row, calling row() while each is ready.
  template <typename Fn>
  Status ForEachRow(Fn row) {
    for (;;) {
      auto ready = Step();
      if (!ready.ok()) return ready.status();
      if (!*ready) return Status::Ok();
      row();
    }
  }
  // Ready to run again with new bindings.
  Status Reset() {
    MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_reset(stmt_));
    MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_clear_bindings(stmt_));
    return Status::Ok();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    const int n = sqlite3_column_bytes(stmt_, col);  // after column_text, as SQLite asks
    return p ? std::string(p, static_cast<size_t>(n)) : std::string();
  }

 private:
  const Conn& c_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Evaluates a Status expression; returns it from the enclosing function unless ok.
#define MESHPLAN_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    Status meshplan_status_ = (expr);                    \
    if (!meshplan_status_.ok()) return meshplan_status_; \
  } while (0)

Status Exec(const Conn& c, const char* sql) {
  const int rc = sqlite3_exec(c.db, sql, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return Status::Ok();
  const std::string expr = "sqlite3_exec(\"" + Abbreviate(sql) + "\")";  // the macro's text would be "sql"
  return SqliteError(c, rc, expr.c_str(), __FILE__, __LINE__);
}

// BEGIN ... COMMIT; rolled back by the destructor unless committed (an early error return).
class Transaction {
 public:
  explicit Transaction(const Conn& c) : c_(c) {}
  ~Transaction() {
    // A failed COMMIT may already have rolled back (SQLITE_FULL, SQLITE_IOERR); ROLLBACK outside a
    // transaction would only fail, so ask first.
    if (begun_ && !sqlite3_get_autocommit(c_.db)) sqlite3_exec(c_.db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Writers take the write lock up front (BEGIN IMMEDIATE): waiting happens here, under the busy
  // timeout, and a deferred read never has to upgrade (which SQLite answers with SQLITE_BUSY at
  // once, without the busy handler, when another writer committed in between).
  Status BeginWrite() {
    MESHPLAN_RETURN_IF_ERROR(Exec(c_, "BEGIN IMMEDIATE"));
    begun_ = true;
    return Status::Ok();
  }
  // A read snapshot for reads that take more than one statement.
  Status BeginRead() {
    MESHPLAN_RETURN_IF_ERROR(Exec(c_, "BEGIN"));
    begun_ = true;
    return Status::Ok();
  }
  Status Commit() {
    MESHPLAN_RETURN_IF_ERROR(Exec(c_, "COMMIT"));
    begun_ = false;
    return Status::Ok();
  }

 private:
  const Conn& c_;
  bool begun_ = false;
};

Result<int> ReadUserVersion(const Conn& c) {
  Stmt st(c);
  MESHPLAN_RETURN_IF_ERROR(st.Prepare("PRAGMA user_version"));
  auto row = st.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(c.path + ": PRAGMA user_version returned no row");
  return static_cast<int>(st.Int(0));
}

Status NewerSchema(const std::string& path, int version) {
  return Status::InvalidArgument(path + ": schema version " + std::to_string(version) +
                                 " is newer than this meshplan's (" + std::to_string(kStoreSchemaVersion) +
                                 "); open it with a newer meshplan, or give another --db");
}

class SqliteResultStore final : public ResultStore {
 public:
  explicit SqliteResultStore(std::string path) { c_.path = std::move(path); }
  ~SqliteResultStore() override { sqlite3_close_v2(c_.db); }  // every Stmt is already finalized

  Status Open(const SqliteStoreOptions& options);

  int SchemaVersion() const override { return schema_version_; }
  Result<int64_t> PutPlan(const StoredPlan& plan) override;
  Result<StoredPlan> GetPlan(int64_t id) const override;
  Result<int64_t> PutPrediction(const StoredPrediction& p) override;
  Result<std::vector<StoredPrediction>> PredictionsForPlan(int64_t plan_id) const override;
  Result<std::vector<PredictionRow>> ListPredictions(int64_t limit) const override;
  Result<int64_t> PutMeasurement(const StoredMeasurement& m) override;
  Result<StoredMeasurement> GetMeasurement(int64_t id) const override;
  Result<StoredProfile> PutProfile(const StoredProfile& p) override;
  Result<StoredProfile> GetProfile(const std::string& name) const override;
  Result<std::vector<StoredProfile>> ListProfiles() const override;
  Result<int64_t> PutSweep(const StoredSweep& s) override;
  Result<std::vector<StoredSweep>> ListSweeps(int64_t limit) const override;
  Result<std::vector<HistoryRow>> History(int64_t limit) const override;
  Status CheckIntegrity() const override;

 private:
  Status Migrate();
  // Ok when `table` has a row with `id` (within the caller's transaction), else InvalidArgument.
  Status CheckExists(const char* sql, int64_t id, const std::string& what) const;
  Status ReadSources(StoredProfile* p) const;
  Result<std::vector<std::string>> ProfileNames() const;

  Conn c_;
  int schema_version_ = 0;
};

Status SqliteResultStore::Open(const SqliteStoreOptions& options) {
  const std::string& path = c_.path;
  if (path.empty()) return Status::InvalidArgument("result store: the path is empty");
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return Status::IoError(path + ": cannot create the directory " + parent.string() + ": " + ec.message());
  }
  // SQLITE_OPEN_EXRESCODE is 3.37+; sqlite3_extended_result_codes below does the same.
  const int rc = sqlite3_open_v2(path.c_str(), &c_.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    if (!c_.db) return Status::IoError(path + ": sqlite3_open_v2: " + sqlite3_errstr(rc));
    return SqliteError(c_, rc, "sqlite3_open_v2(path, ...)", __FILE__, __LINE__);
  }
  MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_extended_result_codes(c_.db, 1));
  MESHPLAN_RETURN_IF_SQLITE_ERROR(c_, sqlite3_busy_timeout(c_.db, options.busy_timeout_ms));

  // Refuse a newer schema before touching the file (journal_mode=WAL would rewrite its header).
  auto version = ReadUserVersion(c_);
  if (!version.ok()) return version.status();
  if (*version > kStoreSchemaVersion) return NewerSchema(path, *version);

  // Switching a new file to WAL takes an exclusive lock. When several processes open a new file
  // at once, SQLite answers SQLITE_BUSY at once rather than call the busy handler (each holds a
  // shared lock, so waiting could deadlock): retry here, within the same busy timeout.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.busy_timeout_ms);
  for (;;) {
    Stmt st(c_);
    MESHPLAN_RETURN_IF_ERROR(st.Prepare("PRAGMA journal_mode=WAL"));
    auto row = st.Step();
    if (!row.ok()) {
      if ((sqlite3_errcode(c_.db) & 0xff) == SQLITE_BUSY && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      return row.status();
    }
    const std::string mode = *row ? st.Text(0) : "";
    if (mode != "wal")
      return Status::IoError(path + ": cannot use write-ahead logging (journal_mode is '" + mode +
                             "'); network filesystems do not support it");
    break;
  }
  // FULL: a COMMIT is on disk (fsync'd) before Put* returns, not only ordered before later ones.
  MESHPLAN_RETURN_IF_ERROR(Exec(c_, "PRAGMA synchronous=FULL"));
  MESHPLAN_RETURN_IF_ERROR(Exec(c_, "PRAGMA foreign_keys=ON"));
  return Migrate();
}

Status SqliteResultStore::Migrate() {
  auto version = ReadUserVersion(c_);
  if (!version.ok()) return version.status();
  if (*version < kStoreSchemaVersion) {
    Transaction txn(c_);
    MESHPLAN_RETURN_IF_ERROR(txn.BeginWrite());
    // Read again under the write lock: another process may have migrated since.
    version = ReadUserVersion(c_);
    if (!version.ok()) return version.status();
    if (*version > kStoreSchemaVersion) return NewerSchema(c_.path, *version);
    if (*version < kStoreSchemaVersion) {
      for (const Migration& m : kMigrations)
        if (m.version > *version) MESHPLAN_RETURN_IF_ERROR(Exec(c_, m.sql));
      // PRAGMA takes no bound parameters; the number is our own constant, not input.
      const std::string set = "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion);
      MESHPLAN_RETURN_IF_ERROR(Exec(c_, set.c_str()));
      MESHPLAN_RETURN_IF_ERROR(txn.Commit());
    }
  }
  schema_version_ = kStoreSchemaVersion;
  return Status::Ok();
}

Status SqliteResultStore::CheckExists(const char* sql, int64_t id, const std::string& what) const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(st.Prepare(sql));
  MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, id));
  auto row = st.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::InvalidArgument(what + std::to_string(id));
  return Status::Ok();
}

Result<int64_t> SqliteResultStore::PutPlan(const StoredPlan& plan) {
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginWrite());
  {
    Stmt find(c_);
    MESHPLAN_RETURN_IF_ERROR(find.Prepare("SELECT id FROM plans WHERE plan_json = ?1"));
    MESHPLAN_RETURN_IF_ERROR(find.BindText(1, plan.plan_json));
    auto row = find.Step();
    if (!row.ok()) return row.status();
    if (*row) return find.Int(0);  // the read-only transaction is rolled back: nothing to keep
  }
  Stmt ins(c_);
  MESHPLAN_RETURN_IF_ERROR(ins.Prepare("INSERT INTO plans (label, plan_json, created_at) VALUES (?1, ?2, ?3)"));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(1, plan.label));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(2, plan.plan_json));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(3, StoreTimestampNow()));
  if (auto r = ins.Step(); !r.ok()) return r.status();
  const int64_t id = sqlite3_last_insert_rowid(c_.db);
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return id;
}

Result<StoredPlan> SqliteResultStore::GetPlan(int64_t id) const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(st.Prepare("SELECT id, label, plan_json, created_at FROM plans WHERE id = ?1"));
  MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, id));
  auto row = st.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound("no plan with id " + std::to_string(id) + " in " + c_.path);
  return StoredPlan{.id = st.Int(0), .label = st.Text(1), .plan_json = st.Text(2), .created_at = st.Text(3)};
}

Result<int64_t> SqliteResultStore::PutPrediction(const StoredPrediction& p) {
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginWrite());
  MESHPLAN_RETURN_IF_ERROR(
      CheckExists("SELECT 1 FROM plans WHERE id = ?1", p.plan_id, "prediction.plan_id: no plan with id "));
  Stmt ins(c_);
  MESHPLAN_RETURN_IF_ERROR(
      ins.Prepare("INSERT INTO predictions (plan_id, profile_name, model_version, step_time_s, mfu, json, created_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  MESHPLAN_RETURN_IF_ERROR(ins.BindInt(1, p.plan_id));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(2, p.profile_name));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(3, p.model_version));
  MESHPLAN_RETURN_IF_ERROR(ins.BindReal(4, p.step_time_s));
  MESHPLAN_RETURN_IF_ERROR(ins.BindReal(5, p.mfu));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(6, p.json));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(7, StoreTimestampNow()));
  if (auto r = ins.Step(); !r.ok()) return r.status();
  const int64_t id = sqlite3_last_insert_rowid(c_.db);
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return id;
}

// A predictions row selected as (id, plan_id, profile_name, model_version, step_time_s, mfu, json,
// created_at), columns 0-7.
StoredPrediction ReadPrediction(const Stmt& st) {
  return {.id = st.Int(0),
          .plan_id = st.Int(1),
          .profile_name = st.Text(2),
          .model_version = st.Text(3),
          .step_time_s = st.Real(4),
          .mfu = st.Real(5),
          .json = st.Text(6),
          .created_at = st.Text(7)};
}

Result<std::vector<StoredPrediction>> SqliteResultStore::PredictionsForPlan(int64_t plan_id) const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(
      st.Prepare("SELECT id, plan_id, profile_name, model_version, step_time_s, mfu, json, created_at "
                 "FROM predictions WHERE plan_id = ?1 ORDER BY id"));
  MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, plan_id));
  std::vector<StoredPrediction> out;
  MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] { out.push_back(ReadPrediction(st)); }));
  return out;
}

Result<std::vector<PredictionRow>> SqliteResultStore::ListPredictions(int64_t limit) const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(
      st.Prepare("SELECT p.id, p.plan_id, p.profile_name, p.model_version, p.step_time_s, p.mfu, p.json, "
                 "p.created_at, pl.label FROM predictions p JOIN plans pl ON pl.id = p.plan_id "
                 "ORDER BY p.id DESC LIMIT ?1"));
  MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, limit > 0 ? limit : -1));  // LIMIT -1: no limit
  std::vector<PredictionRow> out;
  MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] { out.push_back({ReadPrediction(st), st.Text(8)}); }));
  return out;
}

Result<int64_t> SqliteResultStore::PutMeasurement(const StoredMeasurement& m) {
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginWrite());
  if (m.plan_id != 0)
    MESHPLAN_RETURN_IF_ERROR(
        CheckExists("SELECT 1 FROM plans WHERE id = ?1", m.plan_id, "measurement.plan_id: no plan with id "));
  Stmt ins(c_);
  MESHPLAN_RETURN_IF_ERROR(
      ins.Prepare("INSERT INTO measurements (plan_id, source, backend, mode, hostname, step_time_s, mfu, "
                  "predicted_step_s, profile_name, json, created_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
  MESHPLAN_RETURN_IF_ERROR(m.plan_id != 0 ? ins.BindInt(1, m.plan_id) : ins.BindNull(1));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(2, m.source));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(3, m.backend));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(4, m.mode));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(5, m.hostname));
  MESHPLAN_RETURN_IF_ERROR(ins.BindReal(6, m.step_time_s));
  MESHPLAN_RETURN_IF_ERROR(ins.BindReal(7, m.mfu));
  MESHPLAN_RETURN_IF_ERROR(ins.BindReal(8, m.predicted_step_s));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(9, m.profile_name));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(10, m.json));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(11, StoreTimestampNow()));
  if (auto r = ins.Step(); !r.ok()) return r.status();
  const int64_t id = sqlite3_last_insert_rowid(c_.db);

  Stmt op(c_);
  MESHPLAN_RETURN_IF_ERROR(
      op.Prepare("INSERT INTO measurement_ops (measurement_id, ordinal, section, name, kind, pass, calls_per_step, "
                 "measured_s, predicted_s, modeled) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const StoredOpRow& o = m.ops[i];
    MESHPLAN_RETURN_IF_ERROR(op.Reset());
    MESHPLAN_RETURN_IF_ERROR(op.BindInt(1, id));
    MESHPLAN_RETURN_IF_ERROR(op.BindInt(2, static_cast<int64_t>(i)));
    MESHPLAN_RETURN_IF_ERROR(op.BindText(3, o.section));
    MESHPLAN_RETURN_IF_ERROR(op.BindText(4, o.name));
    MESHPLAN_RETURN_IF_ERROR(op.BindText(5, o.kind));
    MESHPLAN_RETURN_IF_ERROR(op.BindText(6, o.pass));
    MESHPLAN_RETURN_IF_ERROR(op.BindInt(7, o.calls_per_step));
    MESHPLAN_RETURN_IF_ERROR(op.BindReal(8, o.measured_s));
    MESHPLAN_RETURN_IF_ERROR(op.BindReal(9, o.predicted_s));
    MESHPLAN_RETURN_IF_ERROR(op.BindInt(10, o.modeled ? 1 : 0));
    if (auto r = op.Step(); !r.ok()) return r.status();
  }
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return id;
}

Result<StoredMeasurement> SqliteResultStore::GetMeasurement(int64_t id) const {
  Transaction txn(c_);  // one snapshot for the row and its ops
  MESHPLAN_RETURN_IF_ERROR(txn.BeginRead());
  StoredMeasurement m;
  {
    Stmt st(c_);
    MESHPLAN_RETURN_IF_ERROR(
        st.Prepare("SELECT id, COALESCE(plan_id, 0), source, backend, mode, hostname, step_time_s, mfu, "
                   "predicted_step_s, profile_name, json, created_at FROM measurements WHERE id = ?1"));
    MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, id));
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::NotFound("no measurement with id " + std::to_string(id) + " in " + c_.path);
    m.id = st.Int(0);
    m.plan_id = st.Int(1);
    m.source = st.Text(2);
    m.backend = st.Text(3);
    m.mode = st.Text(4);
    m.hostname = st.Text(5);
    m.step_time_s = st.Real(6);
    m.mfu = st.Real(7);
    m.predicted_step_s = st.Real(8);
    m.profile_name = st.Text(9);
    m.json = st.Text(10);
    m.created_at = st.Text(11);
  }
  Stmt ops(c_);
  MESHPLAN_RETURN_IF_ERROR(
      ops.Prepare("SELECT section, name, kind, pass, calls_per_step, measured_s, predicted_s, modeled "
                  "FROM measurement_ops WHERE measurement_id = ?1 ORDER BY ordinal"));
  MESHPLAN_RETURN_IF_ERROR(ops.BindInt(1, id));
  MESHPLAN_RETURN_IF_ERROR(ops.ForEachRow([&] {
    m.ops.push_back({.section = ops.Text(0),
                     .name = ops.Text(1),
                     .kind = ops.Text(2),
                     .pass = ops.Text(3),
                     .calls_per_step = ops.Int(4),
                     .measured_s = ops.Real(5),
                     .predicted_s = ops.Real(6),
                     .modeled = ops.Int(7) != 0});
  }));
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return m;
}

Result<StoredProfile> SqliteResultStore::PutProfile(const StoredProfile& in) {
  if (in.name.empty()) return Status::InvalidArgument("profile.name: must not be empty");
  StoredProfile p = in;
  std::sort(p.measurement_ids.begin(), p.measurement_ids.end());
  p.measurement_ids.erase(std::unique(p.measurement_ids.begin(), p.measurement_ids.end()), p.measurement_ids.end());
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginWrite());
  for (int64_t m : p.measurement_ids)
    MESHPLAN_RETURN_IF_ERROR(
        CheckExists("SELECT 1 FROM measurements WHERE id = ?1", m, "profile.measurement_ids: no measurement with id "));
  {
    Stmt st(c_);
    MESHPLAN_RETURN_IF_ERROR(st.Prepare("SELECT COALESCE(MAX(version), 0) + 1 FROM profiles WHERE name = ?1"));
    MESHPLAN_RETURN_IF_ERROR(st.BindText(1, p.name));
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Internal(c_.path + ": MAX(version) returned no row");
    p.version = st.Int(0);
  }
  p.created_at = StoreTimestampNow();
  Stmt ins(c_);
  MESHPLAN_RETURN_IF_ERROR(
      ins.Prepare("INSERT INTO profiles (name, version, profile_json, fit_report_json, created_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5)"));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(1, p.name));
  MESHPLAN_RETURN_IF_ERROR(ins.BindInt(2, p.version));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(3, p.profile_json));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(4, p.fit_report_json));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(5, p.created_at));
  if (auto r = ins.Step(); !r.ok()) return r.status();
  p.id = sqlite3_last_insert_rowid(c_.db);
  Stmt src(c_);
  MESHPLAN_RETURN_IF_ERROR(src.Prepare("INSERT INTO profile_sources (profile_id, measurement_id) VALUES (?1, ?2)"));
  for (int64_t m : p.measurement_ids) {
    MESHPLAN_RETURN_IF_ERROR(src.Reset());
    MESHPLAN_RETURN_IF_ERROR(src.BindInt(1, p.id));
    MESHPLAN_RETURN_IF_ERROR(src.BindInt(2, m));
    if (auto r = src.Step(); !r.ok()) return r.status();
  }
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return p;
}

Status SqliteResultStore::ReadSources(StoredProfile* p) const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(
      st.Prepare("SELECT measurement_id FROM profile_sources WHERE profile_id = ?1 ORDER BY measurement_id"));
  MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, p->id));
  p->measurement_ids.clear();
  MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] { p->measurement_ids.push_back(st.Int(0)); }));
  return Status::Ok();
}

Result<std::vector<std::string>> SqliteResultStore::ProfileNames() const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(st.Prepare("SELECT DISTINCT name FROM profiles ORDER BY name"));
  std::vector<std::string> names;
  MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] { names.push_back(st.Text(0)); }));
  return names;
}

// Columns of a StoredProfile row, in the order ProfileFromRow reads them.
constexpr const char* kProfileColumns = "id, name, version, profile_json, fit_report_json, created_at";

StoredProfile ProfileFromRow(const Stmt& st) {
  return StoredProfile{.id = st.Int(0),
                       .name = st.Text(1),
                       .version = st.Int(2),
                       .profile_json = st.Text(3),
                       .fit_report_json = st.Text(4),
                       .measurement_ids = {},
                       .created_at = st.Text(5)};
}

Result<StoredProfile> SqliteResultStore::GetProfile(const std::string& name) const {
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginRead());
  StoredProfile p;
  {
    Stmt st(c_);
    const std::string sql =
        std::string("SELECT ") + kProfileColumns + " FROM profiles WHERE name = ?1 ORDER BY version DESC LIMIT 1";
    MESHPLAN_RETURN_IF_ERROR(st.Prepare(sql.c_str()));
    MESHPLAN_RETURN_IF_ERROR(st.BindText(1, name));
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (!*row) {
      auto names = ProfileNames();
      if (!names.ok()) return names.status();
      return Status::NotFound(internal::ProfileNotFoundMessage(name, *names, c_.path));
    }
    p = ProfileFromRow(st);
  }
  MESHPLAN_RETURN_IF_ERROR(ReadSources(&p));
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return p;
}

Result<std::vector<StoredProfile>> SqliteResultStore::ListProfiles() const {
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginRead());
  std::vector<StoredProfile> out;
  {
    Stmt st(c_);
    const std::string sql = std::string("SELECT ") + kProfileColumns +
                            " FROM profiles AS p WHERE version = (SELECT MAX(version) FROM profiles WHERE name = "
                            "p.name) ORDER BY name";
    MESHPLAN_RETURN_IF_ERROR(st.Prepare(sql.c_str()));
    MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] { out.push_back(ProfileFromRow(st)); }));
  }
  for (auto& p : out) MESHPLAN_RETURN_IF_ERROR(ReadSources(&p));
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Result<int64_t> SqliteResultStore::PutSweep(const StoredSweep& s) {
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginWrite());
  Stmt ins(c_);
  MESHPLAN_RETURN_IF_ERROR(
      ins.Prepare("INSERT INTO sweeps (label, args_json, result_json, candidates, created_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5)"));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(1, s.label));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(2, s.args_json));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(3, s.result_json));
  MESHPLAN_RETURN_IF_ERROR(ins.BindInt(4, s.candidates));
  MESHPLAN_RETURN_IF_ERROR(ins.BindText(5, StoreTimestampNow()));
  if (auto r = ins.Step(); !r.ok()) return r.status();
  const int64_t id = sqlite3_last_insert_rowid(c_.db);
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  return id;
}

Result<std::vector<StoredSweep>> SqliteResultStore::ListSweeps(int64_t limit) const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(
      st.Prepare("SELECT id, label, args_json, result_json, candidates, created_at FROM sweeps "
                 "ORDER BY id DESC LIMIT ?1"));
  MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, limit > 0 ? limit : -1));  // LIMIT -1: no limit
  std::vector<StoredSweep> out;
  MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] {
    out.push_back({.id = st.Int(0),
                   .label = st.Text(1),
                   .args_json = st.Text(2),
                   .result_json = st.Text(3),
                   .candidates = st.Int(4),
                   .created_at = st.Text(5)});
  }));
  return out;
}

Result<std::vector<HistoryRow>> SqliteResultStore::History(int64_t limit) const {
  Stmt st(c_);
  MESHPLAN_RETURN_IF_ERROR(
      st.Prepare("SELECT m.id, m.created_at, COALESCE(p.label, ''), m.backend, m.mode, m.hostname, m.source, "
                 "m.step_time_s, m.predicted_step_s, m.profile_name "
                 "FROM measurements AS m LEFT JOIN plans AS p ON p.id = m.plan_id ORDER BY m.id DESC LIMIT ?1"));
  MESHPLAN_RETURN_IF_ERROR(st.BindInt(1, limit > 0 ? limit : -1));
  std::vector<HistoryRow> out;
  MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] {
    out.push_back({.measurement_id = st.Int(0),
                   .created_at = st.Text(1),
                   .plan_label = st.Text(2),
                   .backend = st.Text(3),
                   .mode = st.Text(4),
                   .hostname = st.Text(5),
                   .source = st.Text(6),
                   .measured_step_s = st.Real(7),
                   .predicted_step_s = st.Real(8),
                   .profile_name = st.Text(9)});
  }));
  return out;
}

Status SqliteResultStore::CheckIntegrity() const {
  Transaction txn(c_);
  MESHPLAN_RETURN_IF_ERROR(txn.BeginRead());
  std::vector<std::string> problems;
  {
    Stmt st(c_);
    MESHPLAN_RETURN_IF_ERROR(st.Prepare("PRAGMA integrity_check"));
    MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] {
      if (std::string line = st.Text(0); line != "ok") problems.push_back(std::move(line));
    }));
  }
  {
    Stmt st(c_);
    MESHPLAN_RETURN_IF_ERROR(st.Prepare("PRAGMA foreign_key_check"));
    MESHPLAN_RETURN_IF_ERROR(st.ForEachRow([&] {
      // Columns: table, rowid, referenced table, foreign key index.
      problems.push_back("foreign key: " + st.Text(0) + " row " + std::to_string(st.Int(1)) + " refers to a missing " +
                         st.Text(2) + " row");
    }));
  }
  MESHPLAN_RETURN_IF_ERROR(txn.Commit());
  if (problems.empty()) return Status::Ok();
  std::string msg = c_.path + ": integrity check failed:";
  for (const auto& p : problems) msg += "\n  " + p;
  return Status::Internal(msg);
}

}  // namespace

Result<std::unique_ptr<ResultStore>> OpenSqliteResultStore(const std::string& path, const SqliteStoreOptions& options) {
  auto store = std::make_unique<SqliteResultStore>(path);
  if (Status s = store->Open(options); !s.ok()) return s;
  return std::unique_ptr<ResultStore>(std::move(store));
}

Result<std::unique_ptr<ResultStore>> OpenSqliteResultStore(const std::string& path) {
  return OpenSqliteResultStore(path, SqliteStoreOptions{});
}

}  // namespace meshplan::core
