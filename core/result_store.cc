// The parts of the result store that need no SQLite: the default path, the clock and the memory
// fake. The fake mirrors core/sqlite_result_store.cc rule for rule (ids, dedup, versions, reference
// checks, orders); tests/core/result_store_test.cc runs one suite against both.
#include "core/result_store.h"

#include "core/result_store_internal.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <utility>

namespace meshplan::core {

std::string StoreTimestampNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string DefaultStorePath() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (std::string db = env("MESHPLAN_DB"); !db.empty()) return db;
  if (std::string xdg = env("XDG_DATA_HOME"); !xdg.empty() && xdg.front() == '/') return xdg + "/meshplan/meshplan.db";
  std::string home = env("HOME");
  if (home.empty()) {
    // getpwuid_r, not getpwuid: DefaultStorePath may run on any thread.
    struct passwd pw {};
    struct passwd* found = nullptr;
    char buf[4096];
    if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir) home = found->pw_dir;
  }
  if (home.empty()) return "meshplan.db";
  return home + "/.local/share/meshplan/meshplan.db";
}

namespace {

// The fake. Records live in vectors indexed by id - 1 (ids are dense because nothing is deleted).
class MemoryResultStore final : public ResultStore {
 public:
  int SchemaVersion() const override { return kStoreSchemaVersion; }

  Result<int64_t> PutPlan(const StoredPlan& plan) override {
    for (const auto& p : plans_)
      if (p.plan_json == plan.plan_json) return p.id;
    StoredPlan p = plan;
    p.id = static_cast<int64_t>(plans_.size()) + 1;
    p.created_at = StoreTimestampNow();
    plans_.push_back(std::move(p));
    return plans_.back().id;
  }

  Result<StoredPlan> GetPlan(int64_t id) const override {
    if (!HasPlan(id)) return Status::NotFound("no plan with id " + std::to_string(id));
    return plans_[static_cast<size_t>(id - 1)];
  }

  Result<int64_t> PutPrediction(const StoredPrediction& pred) override {
    if (!HasPlan(pred.plan_id))
      return Status::InvalidArgument("prediction.plan_id: no plan with id " + std::to_string(pred.plan_id));
    StoredPrediction p = pred;
    p.id = static_cast<int64_t>(predictions_.size()) + 1;
    p.created_at = StoreTimestampNow();
    predictions_.push_back(std::move(p));
    return predictions_.back().id;
  }

  Result<std::vector<StoredPrediction>> PredictionsForPlan(int64_t plan_id) const override {
    std::vector<StoredPrediction> out;
    for (const auto& p : predictions_)
      if (p.plan_id == plan_id) out.push_back(p);
    return out;
  }

  Result<std::vector<PredictionRow>> ListPredictions(int64_t limit) const override {
    std::vector<PredictionRow> out;
    for (auto it = predictions_.rbegin(); it != predictions_.rend(); ++it) {
      if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
      out.push_back({*it, plans_[static_cast<size_t>(it->plan_id - 1)].label});
    }
    return out;
  }

  Result<int64_t> PutMeasurement(const StoredMeasurement& meas) override {
    if (meas.plan_id != 0 && !HasPlan(meas.plan_id))
      return Status::InvalidArgument("measurement.plan_id: no plan with id " + std::to_string(meas.plan_id));
    StoredMeasurement m = meas;
    m.id = static_cast<int64_t>(measurements_.size()) + 1;
    m.created_at = StoreTimestampNow();
    measurements_.push_back(std::move(m));
    return measurements_.back().id;
  }

  Result<StoredMeasurement> GetMeasurement(int64_t id) const override {
    if (!HasMeasurement(id)) return Status::NotFound("no measurement with id " + std::to_string(id));
    return measurements_[static_cast<size_t>(id - 1)];
  }

  Result<StoredProfile> PutProfile(const StoredProfile& prof) override {
    if (prof.name.empty()) return Status::InvalidArgument("profile.name: must not be empty");
    StoredProfile p = prof;
    std::sort(p.measurement_ids.begin(), p.measurement_ids.end());
    p.measurement_ids.erase(std::unique(p.measurement_ids.begin(), p.measurement_ids.end()), p.measurement_ids.end());
    for (int64_t m : p.measurement_ids)
      if (!HasMeasurement(m))
        return Status::InvalidArgument("profile.measurement_ids: no measurement with id " + std::to_string(m));
    p.version = 1;
    for (const auto& q : profiles_)
      if (q.name == p.name) p.version = std::max(p.version, q.version + 1);
    p.id = static_cast<int64_t>(profiles_.size()) + 1;
    p.created_at = StoreTimestampNow();
    profiles_.push_back(p);
    return p;
  }

  Result<StoredProfile> GetProfile(const std::string& name) const override {
    const StoredProfile* newest = nullptr;
    for (const auto& p : profiles_)
      if (p.name == name && (!newest || p.version > newest->version)) newest = &p;
    if (newest) return *newest;
    std::set<std::string> names;
    for (const auto& p : profiles_) names.insert(p.name);
    return Status::NotFound(internal::ProfileNotFoundMessage(name, {names.begin(), names.end()}, "the memory store"));
  }

  Result<std::vector<StoredProfile>> ListProfiles() const override {
    std::map<std::string, const StoredProfile*> newest;  // sorted by name
    for (const auto& p : profiles_) {
      auto& slot = newest[p.name];
      if (!slot || p.version > slot->version) slot = &p;
    }
    std::vector<StoredProfile> out;
    for (const auto& [name, p] : newest) out.push_back(*p);
    return out;
  }

  Result<int64_t> PutSweep(const StoredSweep& sweep) override {
    StoredSweep s = sweep;
    s.id = static_cast<int64_t>(sweeps_.size()) + 1;
    s.created_at = StoreTimestampNow();
    sweeps_.push_back(std::move(s));
    return sweeps_.back().id;
  }

  Result<std::vector<StoredSweep>> ListSweeps(int64_t limit) const override {
    std::vector<StoredSweep> out;
    for (auto it = sweeps_.rbegin(); it != sweeps_.rend(); ++it) {
      if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
      out.push_back(*it);
    }
    return out;
  }

  Result<std::vector<HistoryRow>> History(int64_t limit) const override {
    std::vector<HistoryRow> out;
    for (auto it = measurements_.rbegin(); it != measurements_.rend(); ++it) {
      if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
      const StoredMeasurement& m = *it;
      HistoryRow r;
      r.measurement_id = m.id;
      r.created_at = m.created_at;
      if (m.plan_id != 0) r.plan_label = plans_[static_cast<size_t>(m.plan_id - 1)].label;
      r.backend = m.backend;
      r.mode = m.mode;
      r.hostname = m.hostname;
      r.source = m.source;
      r.measured_step_s = m.step_time_s;
      r.predicted_step_s = m.predicted_step_s;
      r.profile_name = m.profile_name;
      out.push_back(std::move(r));
    }
    return out;
  }

  Status CheckIntegrity() const override { return Status::Ok(); }

 private:
  bool HasPlan(int64_t id) const { return id >= 1 && id <= static_cast<int64_t>(plans_.size()); }
  bool HasMeasurement(int64_t id) const { return id >= 1 && id <= static_cast<int64_t>(measurements_.size()); }

  std::vector<StoredPlan> plans_;
  std::vector<StoredPrediction> predictions_;
  std::vector<StoredMeasurement> measurements_;
  std::vector<StoredProfile> profiles_;
  std::vector<StoredSweep> sweeps_;
};

}  // namespace

namespace internal {

std::string ProfileNotFoundMessage(const std::string& name, const std::vector<std::string>& names,
                                   const std::string& where) {
  std::string msg = "no profile named '" + name + "' in " + where;
  if (names.empty()) return msg + " (it holds no profiles yet)";
  msg += " (profiles: ";
  for (size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
  return msg + ")";
}

}  // namespace internal

std::unique_ptr<ResultStore> NewMemoryResultStore() { return std::make_unique<MemoryResultStore>(); }

}  // namespace meshplan::core
