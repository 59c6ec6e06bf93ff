// The result store: plans, predictions, measurements, calibration profiles and search sweeps, kept
// across sessions so `meshplan history` can list what was predicted next to what was measured and
// `--profile NAME` can find a fitted profile again. docs/store.md has the schema and the guarantees.
//
// Two implementations behind one interface (leveldb's Env / NewMemEnv): SqliteResultStore, a file
// (the default lives in the user's data directory, see DefaultStorePath), and MemoryResultStore, a
// fake for tests. The store keeps JSON text as the record of truth plus the few columns that
// `history` sorts and prints; it knows nothing of the runtime's structs (the CLI converts).
//
// SQLite: schema versioned in PRAGMA user_version with forward migrations applied in one
// transaction at Open; journal_mode=WAL (readers never block the writer), synchronous=FULL,
// busy_timeout 5 s; every Put* is one transaction, so a process killed mid-write leaves either the
// whole record or none of it. Only core/sqlite_result_store.cc includes sqlite3.h.
//
// Thread-safety: one ResultStore object per thread. Any number of processes (and threads, each
// with its own object) may open the same file; writers are serialised by SQLite.
#ifndef MESHPLAN_CORE_RESULT_STORE_H_
#define MESHPLAN_CORE_RESULT_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace meshplan::core {

// The current schema version (PRAGMA user_version after Open).
inline constexpr int kStoreSchemaVersion = 1;

// A plan, stored once per distinct canonical JSON (the PlanFile JSON with model, GPU and cluster
// embedded). `label` is a short human name ("llama3-70b tp8 pp2 dp4 on 64x h100-sxm").
struct StoredPlan {
  int64_t id = 0;
  std::string label;
  std::string plan_json;
  std::string created_at;  // UTC, ISO 8601 ("2026-11-22T18:40:00Z"); set by the store
};

// What the simulator predicted for a plan with a profile. model_version names the code that made
// it ("meshplan 0.1.0 step-model/1") so predictions from older models can be told apart.
struct StoredPrediction {
  int64_t id = 0;
  int64_t plan_id = 0;
  std::string profile_name;
  std::string model_version;
  double step_time_s = 0;
  double mfu = 0;
  std::string json;  // the full estimate (report --format json)
  std::string created_at;
};

// One op row of a measurement (mirrors the measurement JSON's "ops"; times are per step).
struct StoredOpRow {
  std::string section;
  std::string name;
  std::string kind;  // core::Name(OpKind)
  std::string pass;  // core::Name(Pass)
  int64_t calls_per_step = 0;
  double measured_s = 0;
  double predicted_s = 0;  // with the profile named in StoredMeasurement::profile_name (0: none)
  bool modeled = false;
};

// A measurement file as ingested (meshplan.measurement/1 JSON text kept whole). plan_id is 0 for
// microbenchmark files (bench gemm / bench collectives), which have no plan.
struct StoredMeasurement {
  int64_t id = 0;
  int64_t plan_id = 0;
  std::string source;   // the file it came from, as given
  std::string backend;  // "cpu", "cuda"
  std::string mode;     // "single_process", "mpi", "bench_gemm", ...
  std::string hostname;
  double step_time_s = 0;  // 0 when the file has no step
  double mfu = 0;
  double predicted_step_s = 0;  // the step predicted at ingest with profile_name (0: none)
  std::string profile_name;     // profile used for predicted_*
  std::string json;
  std::vector<StoredOpRow> ops;
  std::string created_at;
};

// A calibration profile version. Names are reused: each Put adds a new version; Get returns the
// newest. fit_report_json holds the fit quality (R², residuals, per-op error before/after).
struct StoredProfile {
  int64_t id = 0;
  std::string name;
  int64_t version = 0;  // 1, 2, ... per name; set by the store
  std::string profile_json;
  std::string fit_report_json;
  std::vector<int64_t> measurement_ids;  // what it was fitted from
  std::string created_at;
};

// A `meshplan search` run: its arguments and the ranked result (JSON).
struct StoredSweep {
  int64_t id = 0;
  std::string label;
  std::string args_json;
  std::string result_json;
  int64_t candidates = 0;
  std::string created_at;
};

// One `history --predictions` line: a stored prediction with its plan's label.
struct PredictionRow {
  StoredPrediction prediction;
  std::string plan_label;
};

// One `history` line: a measurement with its plan label and both step times.
struct HistoryRow {
  int64_t measurement_id = 0;
  std::string created_at;
  std::string plan_label;  // "" for microbenchmarks
  std::string backend, mode, hostname, source;
  double measured_step_s = 0;
  double predicted_step_s = 0;
  std::string profile_name;
};

// Common rules of every implementation:
// - Ids are assigned by the store, per record type, from 1 upwards; "newest" means the largest id.
//   The id and created_at fields of a record passed to Put* are ignored.
// - A Put either stores the whole record (with its op rows or source list) or nothing.
// - References are checked: a prediction's plan_id, a measurement's plan_id (unless 0) and a
//   profile's measurement_ids must name stored records, else InvalidArgument naming the field.
// - Get* of a missing id or name is NotFound; a storage failure is IoError (the SQLite store names
//   its file, the failing call and SQLite's message). No method throws.
class ResultStore {
 public:
  virtual ~ResultStore() = default;

  virtual int SchemaVersion() const = 0;

  // Returns the id of the identical plan_json if already stored (label kept from the first Put).
  virtual Result<int64_t> PutPlan(const StoredPlan& plan) = 0;
  virtual Result<StoredPlan> GetPlan(int64_t id) const = 0;
  virtual Result<int64_t> PutPrediction(const StoredPrediction& p) = 0;
  // Oldest first. An unknown plan_id gives an empty list.
  virtual Result<std::vector<StoredPrediction>> PredictionsForPlan(int64_t plan_id) const = 0;
  // Every plan's predictions, newest first, with the plan label; limit <= 0 means all.
  virtual Result<std::vector<PredictionRow>> ListPredictions(int64_t limit) const = 0;
  // The measurement and its op rows in one transaction.
  virtual Result<int64_t> PutMeasurement(const StoredMeasurement& m) = 0;
  virtual Result<StoredMeasurement> GetMeasurement(int64_t id) const = 0;  // with ops, in Put order
  // Returns the stored record with its id, version and created_at filled in and measurement_ids
  // sorted without duplicates (as Get returns them). REQUIRES: !p.name.empty() (else
  // InvalidArgument).
  virtual Result<StoredProfile> PutProfile(const StoredProfile& p) = 0;
  // The newest version of `name`; NotFound names the profiles that exist.
  virtual Result<StoredProfile> GetProfile(const std::string& name) const = 0;
  // The newest version of each name, sorted by name.
  virtual Result<std::vector<StoredProfile>> ListProfiles() const = 0;
  virtual Result<int64_t> PutSweep(const StoredSweep& s) = 0;
  // Newest first; limit <= 0 means all.
  virtual Result<std::vector<StoredSweep>> ListSweeps(int64_t limit) const = 0;
  // Measurements newest first, each with its plan's label; limit <= 0 means all.
  virtual Result<std::vector<HistoryRow>> History(int64_t limit) const = 0;

  // Checks the storage itself: SQLite's PRAGMA integrity_check and foreign_key_check must both
  // come back clean (Internal with their report otherwise). Always ok for the memory store. Reads
  // the whole file: for tests and maintenance, not for every Open.
  virtual Status CheckIntegrity() const = 0;
};

// Now in UTC, ISO 8601 to the second ("2026-11-22T18:40:00Z"): the created_at of every record.
std::string StoreTimestampNow();

// $MESHPLAN_DB if set (and not empty); else $XDG_DATA_HOME/meshplan/meshplan.db when XDG_DATA_HOME
// is an absolute path (the XDG spec ignores relative ones); else
// $HOME/.local/share/meshplan/meshplan.db (HOME from the password database if unset); else
// "meshplan.db" in the working directory. Creates nothing (OpenSqliteResultStore creates the
// directory).
std::string DefaultStorePath();

// Opens (creating the file and its parent directories if missing) and migrates the file. IoError
// names the path and SQLite's message (an unwritable path, a file that is not a database, a lock
// held past the 5 s busy timeout); a file whose user_version is newer than kStoreSchemaVersion is
// refused (InvalidArgument naming the path and both versions), never downgraded. The store holds
// one SQLite connection, closed by its destructor.
Result<std::unique_ptr<ResultStore>> OpenSqliteResultStore(const std::string& path);

// Knobs of the SQLite store; the defaults are what the one-argument Open (and the CLI) uses.
struct SqliteStoreOptions {
  // How long a call waits for a lock held by another connection (SQLite's busy_timeout) before it
  // gives up with IoError. Tests shorten it to provoke that error.
  int busy_timeout_ms = 5000;
};
Result<std::unique_ptr<ResultStore>> OpenSqliteResultStore(const std::string& path, const SqliteStoreOptions& options);

// An in-memory store with the same behaviour (ids, versions, dedup), for tests.
std::unique_ptr<ResultStore> NewMemoryResultStore();

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_RESULT_STORE_H_
