#include "sim/accuracy.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/presets.h"

namespace meshplan::sim {
namespace {

// The file keeps fractions to 1e-4: finer digits would change with every rounding-level change of
// the model and say nothing to a reader.
double Round4(double v) { return std::round(v * 1e4) / 1e4; }

AccuracyGroup GroupOf(const std::string& dimension, const std::string& value, const ErrorSummary& s) {
  return {dimension, value, s.n, Round4(s.median_abs_error), Round4(s.p90_abs_error), Round4(s.median_error)};
}

nlohmann::ordered_json GroupJson(const AccuracyGroup& g) {
  nlohmann::ordered_json j;
  if (g.dimension != "all") {
    j["dimension"] = g.dimension;
    j["value"] = g.value;
  }
  j["n"] = g.n;
  j["median_abs_error"] = g.median_abs_error;
  j["p90_abs_error"] = g.p90_abs_error;
  j["median_error"] = g.median_error;
  return j;
}

// A group's figures from `j` (`where` names it in an error).
core::Result<AccuracyGroup> ParseGroup(const nlohmann::json& j, const std::string& where, bool all) {
  if (!j.is_object()) return core::Status::InvalidArgument(where + ": must be an object");
  AccuracyGroup g;
  if (all) {
    g.dimension = g.value = "all";
  } else {
    for (const char* key : {"dimension", "value"})
      if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
        return core::Status::InvalidArgument(where + "." + key + ": must be a non-empty string");
    g.dimension = j["dimension"].get<std::string>();
    g.value = j["value"].get<std::string>();
  }
  if (!j.contains("n") || !j["n"].is_number_unsigned() || j["n"].get<size_t>() == 0)
    return core::Status::InvalidArgument(where + ".n: must be a whole number of runs, at least 1");
  g.n = j["n"].get<size_t>();
  for (auto [key, out] : {std::pair{"median_abs_error", &g.median_abs_error},
                          std::pair{"p90_abs_error", &g.p90_abs_error}, std::pair{"median_error", &g.median_error}}) {
    if (!j.contains(key) || !j[key].is_number() || !std::isfinite(j[key].get<double>()))
      return core::Status::InvalidArgument(where + "." + key + ": must be a finite number (a fraction)");
    *out = j[key].get<double>();
  }
  if (g.median_abs_error < 0 || g.p90_abs_error < g.median_abs_error)
    return core::Status::InvalidArgument(where +
                                         ": the errors must satisfy 0 <= median_abs_error <= p90_abs_error "
                                         "(fractions of |error|)");
  if (std::fabs(g.median_error) > g.p90_abs_error + 1e-9 && g.n > 1)
    return core::Status::InvalidArgument(where + ".median_error: its size cannot exceed p90_abs_error");
  return g;
}

}  // namespace

std::string ParallelismOf(const core::PlanSpec& p) {
  std::string par;
  for (auto [n, name] : {std::pair{p.tp, "tp"}, std::pair{p.pp, "pp"}, std::pair{p.cp, "cp"}, std::pair{p.ep, "ep"}})
    if (n > 1) {
      if (!par.empty()) par += '+';
      par += name;
    }
  return par.empty() ? "dp only" : par;
}

namespace {
// SequenceBucketOf's buckets, shortest first (string literals: data() ends in a NUL).
constexpr std::string_view kSequenceBuckets[] = {kPretrainSequenceBucket, "<=32k", ">32k"};
}  // namespace

const char* SequenceBucketOf(const core::PlanSpec& p) {
  return kSequenceBuckets[p.seq_len <= 8192 ? 0 : p.seq_len <= 32768 ? 1 : 2].data();
}

namespace {

// The dimensions both tables share, with each table's own (`own`: step time's scale, memory's
// parallelism) after the sharding.
Groups GroupsOf(const std::string& gpu, const core::ModelSpec& m, const core::PlanSpec& p,
                std::pair<std::string, std::string> own, const std::string& stack) {
  Groups g{{"gpu", gpu}, {"model", m.moe ? "moe" : "dense"}};
  if (m.moe) g.emplace_back(kExpertsPerRankDimension, ExpertsPerRankBucketOf(m, p));
  g.emplace_back("precision", core::Name(p.precision));
  g.emplace_back("sharding", p.zero == 0 ? "ddp" : "zero-" + std::to_string(p.zero));
  g.push_back(std::move(own));
  g.emplace_back("sequence", SequenceBucketOf(p));
  if (!stack.empty()) g.emplace_back("stack", stack);
  return g;
}

}  // namespace

std::string ExpertsPerRankBucketOf(const core::ModelSpec& m, const core::PlanSpec& p) {
  if (!m.moe) return "";
  const int64_t local = m.moe->experts / std::max<int64_t>(1, p.ep);
  return local <= 4 ? "<=4" : local <= 8 ? "<=8" : local <= 16 ? "<=16" : ">16";
}

Groups StepGroupsOf(const std::string& gpu, const core::ModelSpec& m, const core::PlanSpec& p,
                    const std::string& stack) {
  return GroupsOf(gpu, m, p, {"scale", p.gpus <= 64 ? "<=64" : p.gpus <= 1024 ? "<=1024" : ">1024"}, stack);
}

Groups MemoryGroupsOf(const std::string& gpu, const core::ModelSpec& m, const core::PlanSpec& p,
                      const std::string& stack) {
  return GroupsOf(gpu, m, p, {"parallelism", ParallelismOf(p)}, stack);
}

AccuracyTable AccuracyTableOf(const ValidationSummary& v, const std::string& metric, const std::string& made_by,
                              const std::string& profile, const std::vector<std::string>& datasets) {
  AccuracyTable t;
  t.metric = metric;
  t.made_by = made_by;
  t.profile = profile;
  t.datasets = datasets;
  t.all = GroupOf("all", "all", v.all);
  for (const auto& g : v.groups)
    if (g.dimension != "dataset" && g.dimension != "measured")
      t.groups.push_back(GroupOf(g.dimension, g.value, g.summary));
  for (const auto& r : v.records) {
    std::string precision, sequence;
    bool moe = false;
    for (const auto& [dim, value] : r.groups) {
      if (dim == "precision") precision = value;
      if (dim == "model") moe = value == "moe";
      if (dim == "sequence") sequence = value;
    }
    t.runs.push_back({r.id, r.model, r.gpu, precision, moe, r.gpus, Round4(r.error), sequence});
  }
  return t;
}

AccuracyRepeats AccuracyRepeatsOf(const RepeatSummary& r) {
  return {r.groups.size(),
          r.runs,
          Round4(r.spread.median_abs_error),
          Round4(r.spread.p90_abs_error),
          Round4(r.floor.median_abs_error),
          Round4(r.floor.p90_abs_error)};
}

AccuracyStepSplit AccuracyStepSplitOf(const StepSplitSummary& s) {
  return {s.series.size(),
          s.runs,
          Round4(s.t.median_abs_error),
          Round4(s.t.p90_abs_error),
          Round4(s.t.median_error),
          std::round(s.median_f_gap_s * 1e3) / 1e3};
}
nlohmann::ordered_json AccuracyStepSplitJson(const AccuracyStepSplit& s) {
  return {{"series", s.series}, {"runs", s.runs},         {"t_median", s.t_median},
          {"t_p90", s.t_p90},   {"t_signed", s.t_signed}, {"f_gap_median_s", s.f_gap_median_s}};
}
nlohmann::ordered_json AccuracyRepeatsJson(const AccuracyRepeats& r) {
  return {{"scenarios", r.scenarios},         {"runs", r.runs},
          {"spread_median", r.spread_median}, {"spread_p90", r.spread_p90},
          {"floor_median", r.floor_median},   {"floor_p90", r.floor_p90}};
}

std::vector<AccuracyGroup> ComparisonGroupsOf(const ComparisonSummary& c) {
  std::vector<AccuracyGroup> out;
  if (c.all.n == 0) return out;
  out.push_back(GroupOf("all", "all", c.all));
  for (const auto& g : c.axes) out.push_back(GroupOf(g.dimension, g.value, g.summary));
  return out;
}

nlohmann::ordered_json AccuracyRunJson(const AccuracyRun& r) {
  nlohmann::ordered_json j;
  j["id"] = r.id;
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["gpus"] = r.gpus;
  j["precision"] = r.precision;
  j["sequence"] = r.sequence;
  j["moe"] = r.moe;
  j["error"] = r.error;
  return j;
}

std::string AccuracyTableToJson(const AccuracyTable& t) {
  nlohmann::ordered_json j;
  j["metric"] = t.metric;
  j["made_by"] = t.made_by;
  j["profile"] = t.profile;
  j["datasets"] = t.datasets;
  j["note"] =
      "How close meshplan's predictions came on these published runs, per group (fractions): median and p90 of "
      "|predicted - published| / published and the signed median (step time: > 0 predicted too fast; memory: > 0 "
      "predicted too large). Made by the command in made_by; tests/sim/accuracy_test.cc fails when it no longer "
      "gives this table (docs/validation.md, How close).";
  j["all"] = GroupJson(t.all);
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& g : t.groups) groups.push_back(GroupJson(g));
  j["groups"] = groups;
  if (!t.comparisons.empty()) {
    nlohmann::ordered_json axes = nlohmann::ordered_json::array();
    for (size_t i = 1; i < t.comparisons.size(); ++i) axes.push_back(GroupJson(t.comparisons[i]));
    j["comparisons"] = {{"all", GroupJson(t.comparisons.front())}, {"axes", axes}};
  }
  if (t.repeats.scenarios > 0) j["repeats"] = AccuracyRepeatsJson(t.repeats);
  if (t.step_split.series > 0) j["step_split"] = AccuracyStepSplitJson(t.step_split);
  // The runs one to a line, so that a change to the model shows in a diff as the runs it moved.
  std::string text = j.dump(2);
  text.pop_back();  // the closing brace
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  text += ",\n  \"runs\": [";
  for (size_t i = 0; i < t.runs.size(); ++i) text += (i ? ",\n    " : "\n    ") + AccuracyRunJson(t.runs[i]).dump();
  text += t.runs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return text;
}

namespace {

// A summary section's fields (repeats, step_split): a whole number of at least 1, a finite number
// (at least 0 for a fraction), or InvalidArgument naming "accuracy table: <section>.<key>".
core::Status ReadCount(const nlohmann::json& r, const char* section, const char* key, size_t* out) {
  if (!r.contains(key) || !r[key].is_number_unsigned() || r[key].get<size_t>() < 1)
    return core::Status::InvalidArgument(std::string("accuracy table: ") + section + "." + key +
                                         ": must be a whole number, at least 1");
  *out = r[key].get<size_t>();
  return core::Status::Ok();
}
core::Status ReadNumber(const nlohmann::json& r, const char* section, const char* key, bool fraction, double* out) {
  if (!r.contains(key) || !r[key].is_number() || !std::isfinite(r[key].get<double>()) ||
      (fraction && r[key].get<double>() < 0))
    return core::Status::InvalidArgument(
        std::string("accuracy table: ") + section + "." + key +
        (fraction ? ": must be a finite fraction, at least 0" : ": must be a finite number"));
  *out = r[key].get<double>();
  return core::Status::Ok();
}

}  // namespace

core::Result<AccuracyTable> ParseAccuracyTableJson(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    return core::Status::InvalidArgument(std::string("accuracy table: not JSON: ") + e.what());
  }
  if (!j.is_object()) return core::Status::InvalidArgument("accuracy table: must be a JSON object");
  AccuracyTable t;
  if (!j.contains("metric") || !j["metric"].is_string() ||
      (j["metric"] != "tokens_per_s_per_gpu" && j["metric"] != "memory_gib"))
    return core::Status::InvalidArgument("accuracy table: metric: must be tokens_per_s_per_gpu or memory_gib");
  t.metric = j["metric"].get<std::string>();
  for (auto [key, out] : {std::pair{"made_by", &t.made_by}, std::pair{"profile", &t.profile}}) {
    if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
      return core::Status::InvalidArgument(std::string("accuracy table: ") + key + ": must be a non-empty string");
    *out = j[key].get<std::string>();
  }
  if (j.contains("datasets")) {
    if (!j["datasets"].is_array()) return core::Status::InvalidArgument("accuracy table: datasets: must be an array");
    for (const auto& d : j["datasets"]) {
      if (!d.is_string()) return core::Status::InvalidArgument("accuracy table: datasets: must hold file names");
      t.datasets.push_back(d.get<std::string>());
    }
  }
  if (!j.contains("all")) return core::Status::InvalidArgument("accuracy table: all: missing (every run's summary)");
  auto all = ParseGroup(j["all"], "accuracy table: all", true);
  if (!all.ok()) return all.status();
  t.all = *all;
  if (!j.contains("groups") || !j["groups"].is_array())
    return core::Status::InvalidArgument("accuracy table: groups: must be an array");
  for (size_t i = 0; i < j["groups"].size(); ++i) {
    auto g = ParseGroup(j["groups"][i], "accuracy table: groups[" + std::to_string(i) + "]", false);
    if (!g.ok()) return g.status();
    if (g->n > t.all.n)
      return core::Status::InvalidArgument("accuracy table: groups[" + std::to_string(i) +
                                           "].n: a group cannot hold more runs than all (" + std::to_string(t.all.n) +
                                           ")");
    for (const auto& seen : t.groups)
      if (seen.dimension == g->dimension && seen.value == g->value)
        return core::Status::InvalidArgument("accuracy table: groups[" + std::to_string(i) + "]: " + g->dimension +
                                             " " + g->value + " appears twice");
    t.groups.push_back(*g);
  }
  if (j.contains("comparisons")) {
    const nlohmann::json& c = j["comparisons"];
    if (!c.is_object() || !c.contains("all") || !c.contains("axes") || !c["axes"].is_array())
      return core::Status::InvalidArgument(
          "accuracy table: comparisons: must be an object with all (every pair) and axes (an array)");
    auto call = ParseGroup(c["all"], "accuracy table: comparisons.all", true);
    if (!call.ok()) return call.status();
    t.comparisons.push_back(*call);
    for (size_t i = 0; i < c["axes"].size(); ++i) {
      const std::string where = "accuracy table: comparisons.axes[" + std::to_string(i) + "]";
      auto g = ParseGroup(c["axes"][i], where, false);
      if (!g.ok()) return g.status();
      if (g->dimension != "axis") return core::Status::InvalidArgument(where + ".dimension: must be axis");
      if (g->n > call->n)
        return core::Status::InvalidArgument(where + ".n: an axis cannot hold more pairs than all (" +
                                             std::to_string(call->n) + ")");
      t.comparisons.push_back(*g);
    }
  }
  if (j.contains("repeats")) {
    const nlohmann::json& r = j["repeats"];
    if (!r.is_object()) return core::Status::InvalidArgument("accuracy table: repeats: must be an object");
    for (auto [key, out] : {std::pair{"scenarios", &t.repeats.scenarios}, std::pair{"runs", &t.repeats.runs}})
      if (core::Status st = ReadCount(r, "repeats", key, out); !st.ok()) return st;
    if (t.repeats.runs < 2 * t.repeats.scenarios)
      return core::Status::InvalidArgument(
          "accuracy table: repeats.runs: each scenario is printed at least twice (at least " +
          std::to_string(2 * t.repeats.scenarios) + ")");
    for (auto [key, out] :
         {std::pair{"spread_median", &t.repeats.spread_median}, std::pair{"spread_p90", &t.repeats.spread_p90},
          std::pair{"floor_median", &t.repeats.floor_median}, std::pair{"floor_p90", &t.repeats.floor_p90}})
      if (core::Status st = ReadNumber(r, "repeats", key, /*fraction=*/true, out); !st.ok()) return st;
    // (max - min) / (max + min) is below max / min - 1 for every scenario, so for their medians.
    if (t.repeats.floor_median > t.repeats.spread_median)
      return core::Status::InvalidArgument(
          "accuracy table: repeats.floor_median: cannot exceed spread_median (a scenario's floor is below its "
          "spread)");
  }
  if (j.contains("step_split")) {
    const nlohmann::json& r = j["step_split"];
    if (!r.is_object()) return core::Status::InvalidArgument("accuracy table: step_split: must be an object");
    for (auto [key, out] : {std::pair{"series", &t.step_split.series}, std::pair{"runs", &t.step_split.runs}})
      if (core::Status st = ReadCount(r, "step_split", key, out); !st.ok()) return st;
    if (t.step_split.runs < 3 * t.step_split.series)
      return core::Status::InvalidArgument(
          "accuracy table: step_split.runs: each series holds at least 3 runs (at least " +
          std::to_string(3 * t.step_split.series) + ")");
    for (auto [key, out] : {std::pair{"t_median", &t.step_split.t_median}, std::pair{"t_p90", &t.step_split.t_p90}})
      if (core::Status st = ReadNumber(r, "step_split", key, /*fraction=*/true, out); !st.ok()) return st;
    if (t.step_split.t_p90 < t.step_split.t_median)
      return core::Status::InvalidArgument("accuracy table: step_split.t_p90: cannot be below t_median");
    for (auto [key, out] :
         {std::pair{"t_signed", &t.step_split.t_signed}, std::pair{"f_gap_median_s", &t.step_split.f_gap_median_s}})
      if (core::Status st = ReadNumber(r, "step_split", key, /*fraction=*/false, out); !st.ok()) return st;
    if (std::abs(t.step_split.t_signed) > t.step_split.t_p90 + 1e-12)
      return core::Status::InvalidArgument(
          "accuracy table: step_split.t_signed: a signed median cannot exceed the p90 of the absolute errors");
  }
  if (j.contains("runs")) {
    if (!j["runs"].is_array()) return core::Status::InvalidArgument("accuracy table: runs: must be an array");
    for (size_t i = 0; i < j["runs"].size(); ++i) {
      const nlohmann::json& r = j["runs"][i];
      const std::string where = "accuracy table: runs[" + std::to_string(i) + "]";
      if (!r.is_object()) return core::Status::InvalidArgument(where + ": must be an object");
      AccuracyRun run;
      for (auto [key, out] : {std::pair{"id", &run.id}, std::pair{"model", &run.model}, std::pair{"gpu", &run.gpu},
                              std::pair{"precision", &run.precision}, std::pair{"sequence", &run.sequence}}) {
        if (!r.contains(key) || !r[key].is_string() || r[key].get<std::string>().empty())
          return core::Status::InvalidArgument(where + "." + key + ": must be a non-empty string");
        *out = r[key].get<std::string>();
      }
      // A bucket SequenceBucketOf never gives would match no plan, silently.
      if (std::find(std::begin(kSequenceBuckets), std::end(kSequenceBuckets), run.sequence) ==
          std::end(kSequenceBuckets))
        return core::Status::InvalidArgument(where +
                                             ".sequence: must be <=8k, <=32k or >32k (SequenceBucketOf's "
                                             "buckets; got " +
                                             run.sequence + ")");
      if (!r.contains("moe") || !r["moe"].is_boolean())
        return core::Status::InvalidArgument(where + ".moe: must be true or false");
      run.moe = r["moe"].get<bool>();
      if (!r.contains("gpus") || !r["gpus"].is_number_unsigned() || r["gpus"].get<int64_t>() < 1)
        return core::Status::InvalidArgument(where + ".gpus: must be a whole number of GPUs, at least 1");
      run.gpus = r["gpus"].get<int64_t>();
      if (!r.contains("error") || !r["error"].is_number() || !std::isfinite(r["error"].get<double>()) ||
          r["error"].get<double>() <= -1)
        return core::Status::InvalidArgument(where + ".error: must be a finite fraction above -1");
      run.error = r["error"].get<double>();
      t.runs.push_back(std::move(run));
    }
    if (t.runs.size() != t.all.n)
      return core::Status::InvalidArgument("accuracy table: runs: " + std::to_string(t.runs.size()) +
                                           " runs where all.n says " + std::to_string(t.all.n));
  }
  return t;
}

core::Result<AccuracyTable> LoadAccuracyTable(const std::string& name) {
  auto text = core::PresetText("accuracy", name);
  if (!text.ok()) return text.status();
  auto t = ParseAccuracyTableJson(*text);
  if (!t.ok()) return core::Status::InvalidArgument("presets/accuracy/" + name + ".json: " + t.status().message());
  return t;
}

std::vector<AccuracyGroup> MatchAccuracy(const AccuracyTable& t, const Groups& groups) {
  std::vector<AccuracyGroup> out;
  for (const auto& [dim, value] : groups) {
    AccuracyGroup row{dim, value, 0, 0, 0, 0};
    for (const auto& g : t.groups)
      if (g.dimension == dim && g.value == value) row = g;
    out.push_back(row);
  }
  return out;
}

std::vector<const AccuracyRun*> RunsLike(const AccuracyTable& t, const std::string& model, const std::string& gpu,
                                         const std::string& precision, int64_t gpus, size_t max, bool* same_gpu) {
  std::vector<const AccuracyRun*> out;
  for (bool on_gpu : {true, false}) {
    for (const auto& r : t.runs)
      if (r.model == model && (!on_gpu || r.gpu == gpu)) out.push_back(&r);
    if (!out.empty()) {
      if (same_gpu) *same_gpu = on_gpu;
      break;
    }
  }
  auto distance = [gpus](const AccuracyRun* r) {
    return std::fabs(std::log2(static_cast<double>(r->gpus) / static_cast<double>(std::max<int64_t>(gpus, 1))));
  };
  std::stable_sort(out.begin(), out.end(), [&](const AccuracyRun* a, const AccuracyRun* b) {
    const bool pa = a->precision == precision, pb = b->precision == precision;
    if (pa != pb) return pa;
    const double da = distance(a), db = distance(b);
    return da != db ? da < db : a->id < b->id;
  });
  if (out.size() > max) out.resize(max);
  return out;
}

AccuracyGroup JointGroup(const AccuracyTable& t, const std::string& gpu, bool moe, const std::string& precision) {
  std::vector<double> errors;
  for (const auto& r : t.runs)
    if (r.gpu == gpu && r.moe == moe && r.precision == precision) errors.push_back(r.error);
  return GroupOf("joint", gpu + (moe ? " moe " : " dense ") + precision, SummarizeErrors(errors));
}

AccuracyRange RangeOf(const AccuracyTable& t, const std::string& gpu, bool moe, const std::string& precision,
                      const std::string& sequence) {
  const std::string kind = moe ? "moe" : "dense";
  struct Set {
    std::string basis;
    bool by_gpu, by_precision, by_kind, by_sequence;
  };
  std::vector<Set> sets;
  if (sequence != kPretrainSequenceBucket) {
    const std::string in = ", sequence " + sequence;
    sets = {{gpu + " " + kind + " " + precision + in, true, true, true, true},
            {"any GPU, " + kind + " " + precision + in, false, true, true, true},
            {"any GPU, " + kind + in, false, false, true, true},
            {"sequence " + sequence, false, false, false, true}};
  }
  sets.insert(sets.end(), {{gpu + " " + kind + " " + precision, true, true, true, false},
                           {"any GPU, " + kind + " " + precision, false, true, true, false},
                           {"any GPU, " + kind, false, false, true, false},
                           {"all", false, false, false, false}});
  AccuracyRange out;
  for (const Set& set : sets) {
    std::vector<double> errors;
    for (const auto& r : t.runs)
      if ((!set.by_gpu || r.gpu == gpu) && (!set.by_precision || r.precision == precision) &&
          (!set.by_kind || r.moe == moe) && (!set.by_sequence || r.sequence == sequence))
        errors.push_back(r.error);
    if (errors.empty()) continue;
    std::sort(errors.begin(), errors.end());
    out = {set.basis, errors.size(), Quantile(errors, 0.1), Quantile(errors, 0.9)};
    if (errors.size() >= kRangeMinRuns) break;
  }
  return out;
}

PlanAccuracy AccuracyOfPlan(const AccuracyTable& t, const core::Scenario& s, const std::string& stack) {
  const bool moe = s.model.moe.has_value();
  const std::string precision = core::Name(s.plan.precision);
  PlanAccuracy a;
  a.groups = MatchAccuracy(t, t.metric == "memory_gib" ? MemoryGroupsOf(s.gpu.name, s.model, s.plan, stack)
                                                       : StepGroupsOf(s.gpu.name, s.model, s.plan, stack));
  a.joint = JointGroup(t, s.gpu.name, moe, precision);
  for (const AccuracyRun* r :
       RunsLike(t, s.model.name, s.gpu.name, precision, s.plan.gpus, t.runs.size(), &a.like_same_gpu))
    a.like.push_back(*r);
  a.range = RangeOf(t, s.gpu.name, moe, precision, SequenceBucketOf(s.plan));
  return a;
}

const AccuracyGroup* LeastAccurate(const std::vector<AccuracyGroup>& rows) {
  const AccuracyGroup* worst = nullptr;
  for (const auto& g : rows)
    if (g.n > 0 && (!worst || g.median_abs_error > worst->median_abs_error)) worst = &g;
  return worst;
}

}  // namespace meshplan::sim
