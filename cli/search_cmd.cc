// meshplan search: every valid plan of a model on N GPUs, ranked (sim/search.h does the work).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/store_flags.h"
#include "core/defaults.h"
#include "core/params.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/result_store.h"
#include "core/spec_json.h"
#include "core/stack.h"
#include "core/validate.h"
#include "sim/accuracy.h"
#include "sim/search.h"
#include "sim/step_model.h"

namespace meshplan::cli {
namespace {

using OJson = nlohmann::ordered_json;

std::string Gb(int64_t bytes) { return Fmt("%.1f", static_cast<double>(bytes) / 1e9); }

// ---------------------------------------------------------------------------------------------
// search
// ---------------------------------------------------------------------------------------------
struct SearchFlags {
  std::string model, gpu, cluster, objective = "throughput", format = "table", output, profile = "default";
  std::optional<int64_t> gpus, gbs, gbs_tokens, seq;
  int64_t top = 10;
  double max_memory_frac = 1.0;
  bool allow_tight = false;  // --allow-tight: rank the plans over the budget only with the allocator's reserve
  std::optional<double> tokens;
  int threads = 0;
  bool explain = false;
  bool exhaustive = false;
  std::vector<int64_t> tp, pp, cp, ep, vpp, mbs;
  std::vector<int> zero;
  std::vector<std::string> schedules, recompute, cp_kinds;
  std::optional<int64_t> max_mbs, min_cp_tokens;
  std::optional<std::string> sp, precision, recipe, stack;
  std::optional<std::string> offload_optimizer, offload_params;
  std::optional<int64_t> offload_activations;
  bool offload_checkpoints = false;        // --offload-checkpoints: every plan's checkpoints in host memory
  bool transformer_engine = false;         // --transformer-engine: every plan runs Transformer Engine's modules
  std::optional<std::string> fp8_scaling;  // --fp8-scaling: every FP8 plan's recipe scaling
  bool fp8_attention = false;              // --fp8-attention: every plan runs Transformer Engine's FP8 attention
  bool fp8_param_gather = false;           // --fp8-param-gather: the ZeRO-1/2 plans gather their parameters in FP8
  bool save = false;                       // --save: keep the sweep in the result store
  std::string db;                          // --db (empty: the default store)
};

template <typename E>
bool ParseList(const std::vector<std::string>& texts, const char* flag, std::vector<E>* out, core::Diagnostics* d) {
  if (texts.empty()) return true;
  out->clear();
  for (const auto& t : texts) {
    E v;
    if (!core::FromName(t, &v)) {
      d->Error(std::string("--") + flag, "must be one of " + core::Choices<E>() + " (got \"" + t + "\")");
      return false;
    }
    out->push_back(v);
  }
  return true;
}

// The progress bar: on a terminal only, and only once a search has run for a second.
class ProgressBar {
 public:
  ProgressBar() : enabled_(isatty(STDERR_FILENO) != 0) {}
  void Update(double fraction, double elapsed_s) {
    if (!enabled_ || (elapsed_s < 1.0 && !drawn_)) return;
    const int width = 40;
    const int filled = static_cast<int>(fraction * width);
    std::fprintf(stderr, "\r[%s%s] %3.0f%% %5.1f s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), 100 * fraction, elapsed_s);
    std::fflush(stderr);
    drawn_ = true;
  }
  ~ProgressBar() {
    if (drawn_) std::fprintf(stderr, "\r%60s\r", "");
  }

 private:
  bool enabled_ = false;
  bool drawn_ = false;
};

OJson PlanJson(const sim::RankedPlan& r, int64_t rank) {
  const core::PlanSpec& p = r.plan;
  const core::StageMemory& s = r.worst_stage;
  const sim::StepBreakdown& b = r.step.breakdown;
  OJson j;
  if (rank > 0) j["rank"] = rank;
  j.update(OJson::parse(core::PlanToJson(p)));  // the plan's fields, as a plan file names them
  j["mbs"] = p.micro_batch;                     // micro_batch's short name, kept for existing readers
  j["stage_layers"] = p.stage_layers;           // always, as before (the plan writer omits an even split)
  j["microbatches"] = p.Microbatches();
  j["step_time_s"] = r.step.time_s;
  j["tokens_per_s"] = r.step.tokens_per_s;
  j["mfu"] = r.step.mfu;
  j["per_gpu_bytes"] = r.per_gpu_bytes;
  j["tight"] = r.tight;
  j["days"] = r.train.days;
  j["cost_usd"] = r.train.cost_usd;
  j["memory"] = {{"stage", s.stage},
                 {"weights_bytes", s.weights_bytes},
                 {"grads_bytes", s.grads_bytes},
                 {"optimizer_bytes", s.optimizer_bytes},
                 {"activations_bytes", s.activations_bytes},
                 {"other_bytes", s.other_bytes}};
  OJson breakdown = OJson::object();
  for (const sim::BreakdownTerm& t : sim::BreakdownTerms(b)) breakdown[std::string(t.key) + "_s"] = t.seconds;
  j["breakdown"] = breakdown;
  return j;
}

const char* VerdictName(sim::WellKnownVerdict::Kind k) {
  switch (k) {
    case sim::WellKnownVerdict::Kind::kFits: return "fits";
    case sim::WellKnownVerdict::Kind::kOutOfMemory: return "out_of_memory";
    case sim::WellKnownVerdict::Kind::kInvalid: return "invalid";
    case sim::WellKnownVerdict::Kind::kOutsideSearch: return "outside_search";
  }
  return "invalid";
}

std::string PlanRow(const sim::RankedPlan& r) {
  const core::PlanSpec& p = r.plan;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%3lld %3lld %5lld %3lld %3lld %3lld %4d %-10s %-3s %3lld %-12s",
                static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
                static_cast<long long>(p.cp), static_cast<long long>(p.ep), static_cast<long long>(p.vpp), p.zero,
                core::Name(p.recompute), p.sequence_parallel ? "on" : "off", static_cast<long long>(p.micro_batch),
                core::Name(p.schedule));
  return buf;
}

std::string Metrics(const sim::RankedPlan& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%8.3f %11.4g %5.3f %7s %7.2f %11.4g%s", r.step.time_s, r.step.tokens_per_s,
                r.step.mfu, Gb(r.per_gpu_bytes).c_str(), r.train.days, r.train.cost_usd, r.tight ? "  tight" : "");
  return buf;
}

// How close the published MoE runs of each experts-per-rank kind came (sim::ExpertsPerRankBucketOf,
// the shipped step table's group), for the kinds among the top plans: the step model is furthest
// off on fine-grained layouts (docs/validation.md), and the ranking does not say so by itself.
struct KindAccuracy {
  std::string bucket;
  std::vector<size_t> ranks;  // 1-based ranks of the top plans of this kind
  sim::AccuracyGroup group;
};
std::vector<KindAccuracy> ExpertsPerRankAccuracy(const core::Scenario& s, const sim::SearchResult& r,
                                                 const sim::AccuracyTable& t) {
  std::vector<KindAccuracy> out;
  if (!s.model.moe) return out;
  for (size_t i = 0; i < r.top.size(); ++i) {
    const std::string b = sim::ExpertsPerRankBucketOf(s.model, r.top[i].plan);
    auto it = std::find_if(out.begin(), out.end(), [&](const KindAccuracy& k) { return k.bucket == b; });
    if (it == out.end()) {
      out.push_back({b, {}, sim::MatchAccuracy(t, {{sim::kExpertsPerRankDimension, b}}).front()});
      it = out.end() - 1;
    }
    it->ranks.push_back(i + 1);
  }
  return out;
}

void PrintTable(const core::Scenario& s, const sim::SearchOptions& o, const sim::SearchResult& r,
                const std::vector<sim::WellKnownVerdict>& verdicts, const std::vector<std::string>& notes,
                const std::vector<KindAccuracy>& kinds) {
  const sim::SearchStats& st = r.stats;
  std::printf("# meshplan search: %s on %lld x %s (%s), seq %lld, gbs %lld, objective %s\n", s.model.name.c_str(),
              static_cast<long long>(s.plan.gpus), s.gpu.name.c_str(), s.cluster.name.c_str(),
              static_cast<long long>(s.plan.seq_len), static_cast<long long>(s.plan.global_batch),
              sim::Name(o.objective));
  for (const auto& n : notes) std::printf("# note: %s\n", n.c_str());
  // Milliseconds below a second: a search of a few thousand plans takes a few.
  char wall[32];
  if (st.wall_s < 1) std::snprintf(wall, sizeof wall, "%.1f ms", st.wall_s * 1e3);
  else std::snprintf(wall, sizeof wall, "%.2f s", st.wall_s);
  std::printf(
      "# %lld plans in %s on %d threads: %lld pruned (%lld by the model-state bound, %lld by recompute "
      "order), %lld invalid, %lld out of memory, %lld evaluated\n",
      static_cast<long long>(st.enumerated), wall, st.threads, static_cast<long long>(st.Pruned()),
      static_cast<long long>(st.pruned_bound), static_cast<long long>(st.pruned_monotone),
      static_cast<long long>(st.invalid), static_cast<long long>(st.out_of_memory),
      static_cast<long long>(st.evaluated));
  if (st.tight > 0)
    std::printf(
        "# %lld of the plans estimated are over the budget only with the allocator's reserve (tight, docs/memory.md "
        "§4): %s\n",
        static_cast<long long>(st.tight),
        o.allow_tight ? "ranked (--allow-tight), marked 'tight'" : "--allow-tight ranks them");
  const double budget = static_cast<double>(sim::MemoryBudgetBytes(o, s.gpu));
  std::printf("# budget %.1f GB per GPU (%.2f x %.1f GB); run of %s tokens at $%.2f per GPU-hour\n", budget / 1e9,
              o.max_memory_frac, static_cast<double>(s.gpu.CapacityBytes()) / 1e9,
              HumanCount(static_cast<int64_t>(r.tokens)).c_str(), s.cluster.price_per_gpu_hour_usd);
  if (r.top.empty()) {
    std::printf("# no plan fits\n");
  } else {
    std::printf("#\n# top %zu\n", r.top.size());
    std::printf(
        "#rank  tp  pp    dp  cp  ep vpp zero recompute  sp  mbs schedule       step_s    tokens/s   mfu  "
        "mem_GB    days    cost_usd\n");
    std::printf(
        "#                                                                       (s)     (tok/s)          "
        "(GB)     (d)         ($)\n");
    for (size_t i = 0; i < r.top.size(); ++i)
      std::printf("%5zu %s %s\n", i + 1, PlanRow(r.top[i]).c_str(), Metrics(r.top[i]).c_str());
    std::printf("#\n# breakdown: memory of the fullest stage (GB), step time by cause (s)\n");
    std::printf(
        "#rank stage weights  grads  optim  activ  other | compute recomp    tp    cp    ep    dp    pp "
        "bubble   opt\n");
    for (size_t i = 0; i < r.top.size(); ++i) {
      const auto& m = r.top[i].worst_stage;
      const auto& b = r.top[i].step.breakdown;
      std::printf("%5zu %5lld %7s %6s %6s %6s %6s | %7.3f %6.3f %5.2f %5.2f %5.2f %5.2f %5.2f %6.3f %5.2f\n", i + 1,
                  static_cast<long long>(m.stage), Gb(m.weights_bytes).c_str(), Gb(m.grads_bytes).c_str(),
                  Gb(m.optimizer_bytes).c_str(), Gb(m.activations_bytes).c_str(), Gb(m.other_bytes).c_str(),
                  b.compute_s, b.recompute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.dp_comm_s, b.pp_comm_s,
                  b.bubble_s, b.optimizer_s);
    }
    if (!kinds.empty()) {
      std::printf(
          "#\n# how close, by experts a rank: published MoE runs of each kind among the top plans (meshplan "
          "validate, default profile; docs/validation.md)\n");
      for (const auto& k : kinds) {
        std::string ranks;
        for (size_t rank : k.ranks) {  // two appends: GCC 12 warns falsely (-Wrestrict) on "," + to_string
          if (!ranks.empty()) ranks += ',';
          ranks += std::to_string(rank);
        }
        if (k.group.n == 0)
          std::printf("#   %s experts a rank (plans %s): no published run of that kind\n", k.bucket.c_str(),
                      ranks.c_str());
        else
          std::printf("#   %s experts a rank (plans %s): %zu runs, median %.1f%%, p90 %.1f%%, signed %+.1f%% (%s)\n",
                      k.bucket.c_str(), ranks.c_str(), k.group.n, 100 * k.group.median_abs_error,
                      100 * k.group.p90_abs_error, 100 * k.group.median_error,
                      k.group.median_error > 0 ? "predicted too fast" : "predicted too slow");
      }
    }
    std::printf("#\n# Pareto front: no other plan is faster, lighter and cheaper at once (%zu plans)\n",
                r.pareto.size());
    std::printf(
        "#      tp  pp    dp  cp  ep vpp zero recompute  sp  mbs schedule       step_s    tokens/s   mfu  "
        "mem_GB    days    cost_usd\n");
    for (const auto& p : r.pareto) std::printf("      %s %s\n", PlanRow(p).c_str(), Metrics(p).c_str());
  }
  if (!verdicts.empty()) {
    std::printf("#\n# well-known plans\n");
    for (const auto& v : verdicts) {
      std::string head = v.name + ": " + VerdictName(v.kind);
      if (v.kind == sim::WellKnownVerdict::Kind::kFits && v.relative_score > 0)
        head += Fmt(" (%.1f%% of the winner's tokens/s)", 100 * v.relative_score);
      std::printf("  %s\n", head.c_str());
      for (const auto& reason : v.reasons) std::printf("      %s\n", reason.c_str());
    }
  }
}

std::string SearchJson(const core::Scenario& s, const sim::SearchOptions& o, const sim::SearchResult& r,
                       const std::vector<sim::WellKnownVerdict>& verdicts, const std::vector<std::string>& notes,
                       const std::vector<KindAccuracy>& kinds) {
  const sim::SearchStats& st = r.stats;
  OJson j;
  j["model"] = s.model.name;
  j["gpu"] = s.gpu.name;
  j["cluster"] = s.cluster.name;
  j["gpus"] = s.plan.gpus;
  j["seq_len"] = s.plan.seq_len;
  j["global_batch"] = s.plan.global_batch;
  j["objective"] = sim::Name(o.objective);
  j["tokens"] = r.tokens;
  j["budget_bytes"] = sim::MemoryBudgetBytes(o, s.gpu);
  j["threads"] = st.threads;
  j["wall_s"] = st.wall_s;
  j["enumerated"] = st.enumerated;
  j["pruned"] = st.Pruned();
  j["pruned_bound"] = st.pruned_bound;
  j["pruned_monotone"] = st.pruned_monotone;
  j["invalid"] = st.invalid;
  j["memory_estimates"] = st.memory_estimates;
  j["out_of_memory"] = st.out_of_memory;
  j["tight"] = st.tight;
  j["allow_tight"] = o.allow_tight;
  j["evaluated"] = st.evaluated;
  OJson plans = OJson::array();
  for (size_t i = 0; i < r.top.size(); ++i) plans.push_back(PlanJson(r.top[i], static_cast<int64_t>(i + 1)));
  j["plans"] = plans;
  OJson pareto = OJson::array();
  for (const auto& p : r.pareto) pareto.push_back(PlanJson(p, 0));
  j["pareto"] = pareto;
  if (!kinds.empty()) {
    OJson acc = OJson::array();
    for (const auto& k : kinds)
      acc.push_back({{"experts_per_rank", k.bucket},
                     {"ranks", k.ranks},
                     {"runs", k.group.n},
                     {"median_abs_error", k.group.median_abs_error},
                     {"p90_abs_error", k.group.p90_abs_error},
                     {"median_error", k.group.median_error}});
    j["accuracy_by_experts_per_rank"] = acc;
  }
  if (!verdicts.empty()) {
    OJson ex = OJson::array();
    for (const auto& v : verdicts) {
      OJson e = {
          {"name", v.name}, {"tp", v.tp}, {"pp", v.pp}, {"verdict", VerdictName(v.kind)}, {"reasons", v.reasons}};
      if (v.kind == sim::WellKnownVerdict::Kind::kFits) e["relative_tokens_per_s"] = v.relative_score;
      if (v.lightest) e["lightest_per_gpu_bytes"] = v.lightest->per_gpu_bytes;
      ex.push_back(e);
    }
    j["well_known"] = ex;
  }
  j["notes"] = notes;
  return j.dump(2) + "\n";
}

// The flags as given, for the stored sweep (what to run again to reproduce it).
std::string SearchArgsJson(const SearchFlags& f) {
  OJson j;
  auto opt = [&j](const char* key, const auto& v) {
    if (v) j[key] = *v;
  };
  auto list = [&j](const char* key, const auto& v) {
    if (!v.empty()) j[key] = v;
  };
  if (!f.model.empty()) j["model"] = f.model;
  if (!f.gpu.empty()) j["gpu"] = f.gpu;
  if (!f.cluster.empty()) j["cluster"] = f.cluster;
  opt("gpus", f.gpus);
  opt("gbs", f.gbs);
  opt("gbs_tokens", f.gbs_tokens);
  opt("seq", f.seq);
  j["objective"] = f.objective;
  j["top"] = f.top;
  j["max_memory_frac"] = f.max_memory_frac;
  if (f.allow_tight) j["allow_tight"] = true;
  if (f.tokens) j["tokens"] = *f.tokens;
  j["profile"] = f.profile;
  list("tp", f.tp);
  list("pp", f.pp);
  list("cp", f.cp);
  list("ep", f.ep);
  list("vpp", f.vpp);
  list("mbs", f.mbs);
  list("zero", f.zero);
  list("schedule", f.schedules);
  list("recompute", f.recompute);
  list("cp_kind", f.cp_kinds);
  opt("max_mbs", f.max_mbs);
  opt("min_cp_tokens", f.min_cp_tokens);
  opt("sp", f.sp);
  opt("precision", f.precision);
  opt("offload_optimizer", f.offload_optimizer);
  opt("offload_params", f.offload_params);
  opt("offload_activations", f.offload_activations);
  if (f.offload_checkpoints) j["offload_checkpoints"] = true;
  opt("recipe", f.recipe);
  opt("stack", f.stack);
  if (f.transformer_engine) j["transformer_engine"] = true;
  opt("fp8_scaling", f.fp8_scaling);
  if (f.fp8_attention) j["fp8_attention"] = true;
  if (f.fp8_param_gather) j["fp8_param_gather"] = true;
  if (f.exhaustive) j["exhaustive"] = true;
  if (f.explain) j["explain_rejections"] = true;
  return j.dump();
}

// --save: the sweep into the result store. Prints "# saved sweep ID to PATH" (on stderr under
// --format json, so stdout stays one JSON document). False (message printed) on a store error.
bool SaveSweep(const SearchFlags& f, const core::Scenario& s, const sim::SearchResult& r, const std::string& json) {
  core::StoredSweep sweep;
  sweep.label = s.model.name + " on " + std::to_string(s.plan.gpus) + "x " + s.gpu.name;
  sweep.args_json = SearchArgsJson(f);
  sweep.result_json = json;
  sweep.candidates = r.stats.enumerated;
  auto store = OpenStoreFromFlag(f.db);
  if (!store.ok()) {
    std::cerr << "error: " << StoreSourceFromFlag(f.db) << ": " << store.status().message() << "\n";
    return false;
  }
  auto id = (*store)->PutSweep(sweep);
  if (!id.ok()) {
    std::cerr << "error: " << StoreSourceFromFlag(f.db) << ": " << id.status().message() << "\n";
    return false;
  }
  (f.format == "json" ? std::cerr : std::cout) << "# saved sweep " << *id << " to " << StorePathFromFlag(f.db) << "\n";
  return true;
}

void RunSearch(const SearchFlags& f, int* exit_code) {
  core::Diagnostics d;
  std::vector<std::string> notes;
  auto usage = [&](const std::string& flag, const std::string& msg) { d.Error(flag, msg); };

  sim::SearchOptions o;
  if (!sim::FromName(f.objective, &o.objective))
    usage("--objective", "must be throughput, time or cost (got \"" + f.objective + "\")");
  if (f.format != "table" && f.format != "json") usage("--format", "must be table or json (got \"" + f.format + "\")");
  if (f.top < 1) usage("--top", "must be >= 1 (got " + std::to_string(f.top) + ")");
  if (!(f.max_memory_frac > 0 && f.max_memory_frac <= 1.0))
    usage("--max-memory-frac", "must be in (0, 1] (got " + Fmt("%g", f.max_memory_frac) + ")");
  if (const std::string bad = TokensFlagError(f.tokens); !bad.empty()) usage("--tokens", bad);
  if (f.threads < 0) usage("--threads", "must be >= 0 (got " + std::to_string(f.threads) + ")");
  if (!f.gpus) usage("--gpus", "is required (the GPUs the plan uses)");
  else if (*f.gpus < 1) usage("--gpus", "must be >= 1 (got " + std::to_string(*f.gpus) + ")");
  if (!f.gbs && !f.gbs_tokens) usage("--gbs", "is required (global batch in sequences, or --gbs-tokens)");
  if (f.gbs && f.gbs_tokens) usage("--gbs-tokens", "give either --gbs (sequences) or --gbs-tokens, not both");
  if (f.gbs && *f.gbs < 1) usage("--gbs", "must be >= 1 (got " + std::to_string(*f.gbs) + ")");
  if (f.seq && *f.seq < 1) usage("--seq", "must be >= 1 (got " + std::to_string(*f.seq) + ")");
  auto positive = [&](const std::vector<int64_t>& list, const char* flag) {
    for (int64_t v : list)
      if (v < 1) usage(flag, "values must be >= 1 (got " + std::to_string(v) + ")");
  };
  positive(f.tp, "--tp");
  positive(f.pp, "--pp");
  positive(f.cp, "--cp");
  positive(f.ep, "--ep");
  positive(f.vpp, "--vpp");
  positive(f.mbs, "--mbs");
  for (int z : f.zero)
    if (z < 0 || z > 3) usage("--zero", "values must be 0, 1, 2 or 3 (got " + std::to_string(z) + ")");
  ParseList(f.schedules, "schedule", &o.schedules, &d);
  ParseList(f.recompute, "recompute", &o.recompute, &d);
  ParseList(f.cp_kinds, "cp-kind", &o.cp_kinds, &d);
  if (f.sp) {
    if (*f.sp == "on") o.sequence_parallel = {true};
    else if (*f.sp == "off") o.sequence_parallel = {false};
    else if (*f.sp == "both") o.sequence_parallel = {true, false};
    else usage("--sp", "must be on, off or both (got \"" + *f.sp + "\")");
  }
  if (f.max_mbs) {
    if (*f.max_mbs < 1) usage("--max-mbs", "must be >= 1");
    else o.max_mbs = *f.max_mbs;
  }
  if (f.min_cp_tokens) {
    if (*f.min_cp_tokens < 1) usage("--min-cp-tokens", "must be >= 1");
    else o.min_tokens_per_cp_rank = *f.min_cp_tokens;
  }
  auto profile = core::LoadProfile(f.profile);
  if (!profile.ok()) usage("--profile", profile.status().message());

  core::Scenario s;
  core::ScenarioSources src;
  src.model = {std::nullopt, f.model, "--model", "is required (a preset name such as llama3-70b, or a JSON file)"};
  src.gpu = {std::nullopt, f.gpu, "--gpu", "is required (a preset name such as h100-sxm, or a JSON file)"};
  src.cluster = {std::nullopt, f.cluster, "--cluster", ""};
  const bool specs_ok = core::ResolveSpecs(src, &s, &d, &notes);
  if (d.has_errors() || !specs_ok) {
    bool is_usage = false;
    for (const auto& e : d.errors()) {
      std::cerr << "error: " << e.ToString() << "\n";
      if (e.path.rfind("--", 0) == 0) is_usage = true;
    }
    *exit_code = is_usage ? 2 : 1;
    return;
  }

  core::PlanSpec& p = s.plan;
  p.gpus = *f.gpus;
  if (f.seq) {
    p.seq_len = *f.seq;
  } else {
    p.seq_len = s.model.max_seq;
    notes.push_back("seq " + std::to_string(p.seq_len) + " (the model's max_seq; --seq to change)");
  }
  if (f.gbs) {
    p.global_batch = *f.gbs;
  } else if (*f.gbs_tokens <= 0 || *f.gbs_tokens % p.seq_len != 0) {
    std::cerr << "error: --gbs-tokens: " << *f.gbs_tokens << " must be a positive multiple of seq=" << p.seq_len
              << "\n";
    *exit_code = 2;
    return;
  } else {
    p.global_batch = *f.gbs_tokens / p.seq_len;
  }
  // A software stack's defaults for what the search does not vary (precision, attention kernel,
  // overlaps, gradient dtype, ZeRO-3 gathers); --precision and --recipe override them. ZeRO,
  // recomputation and SP stay searched (--zero, --recompute, --sp to hold the stack's).
  bool stack_fp8_param_gather = false;  // the stack's FP8 recipes gather in FP8 (applied under --precision fp8)
  if (f.stack) {
    auto st = core::LoadStack(*f.stack);
    if (!st.ok()) {
      std::cerr << "error: --stack: " << st.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    core::ApplyStack(*st, &s.model, &p);
    // Its checkpoint early stop, for the full-recomputation candidates the search tries (where it
    // skips something: sim::Search applies it to those only).
    p.recompute_early_stop = st->recompute_early_stop;
    stack_fp8_param_gather = st->fp8_param_gather;
    notes.push_back(core::StackSummary(*st));
    notes.push_back(
        "the search still tries every ZeRO stage, recompute mode and SP setting (--zero, --recompute, "
        "--sp to hold the stack's)");
  }
  if (f.transformer_engine) p.transformer_engine = true;
  if (!f.precision && !f.stack) core::ApplyDefaultPrecision(s.gpu, &p, &notes);
  if (f.precision && (!core::FromName(*f.precision, &p.precision) || !core::IsComputePrecision(p.precision))) {
    std::cerr << "error: --precision: must be one of " << core::kComputePrecisionChoices << " (got \"" << *f.precision
              << "\")\n";
    *exit_code = 2;
    return;
  }
  // The FP8 recipe every plan runs (a stack's, overridden): its scaling and Transformer Engine's
  // FP8 attention. What they need is checked here, once, naming the flag, rather than every
  // candidate being refused for it.
  if (f.fp8_scaling) {
    if (!core::FromName(*f.fp8_scaling, &p.fp8_scaling)) {
      std::cerr << "error: --fp8-scaling: must be one of " << core::Choices<core::Fp8Scaling>() << " (got \""
                << *f.fp8_scaling << "\")\n";
      *exit_code = 2;
      return;
    }
    if (p.precision != core::Dtype::kFp8) {
      std::cerr << "error: --fp8-scaling: scales FP8 GEMMs: needs --precision fp8 (got " << core::Name(p.precision)
                << ")\n";
      *exit_code = 2;
      return;
    }
  }
  if (f.fp8_attention) {
    if (!p.Fp8AttentionApplies()) {
      std::cerr << "error: --fp8-attention: is Transformer Engine's FP8 attention: needs --precision fp8 or nvfp4 and "
                   "--transformer-engine (got precision "
                << core::Name(p.precision) << (p.transformer_engine ? "" : ", no --transformer-engine") << ")\n";
      *exit_code = 2;
      return;
    }
    p.fp8_attention = true;
  }
  if (f.fp8_param_gather) {
    if (p.precision != core::Dtype::kFp8) {
      std::cerr << "error: --fp8-param-gather: gathers the parameters in FP8: needs --precision fp8 (got "
                << core::Name(p.precision) << ")\n";
      *exit_code = 2;
      return;
    }
    p.fp8_param_gather = true;  // the search keeps it on its ZeRO-1 and ZeRO-2 plans only
  } else if (stack_fp8_param_gather && p.precision == core::Dtype::kFp8) {
    p.fp8_param_gather = true;  // the same, from the stack's FP8 recipes
    notes.push_back("stack " + *f.stack + ": the ZeRO-1 and ZeRO-2 plans gather their parameters in FP8");
  }
  // What every plan keeps in host memory: the optimizer states or parameters (ZeRO-Offload), the
  // first N layers' activations (Megatron-Core --cpu-offloading-num-layers); plans the rules refuse
  // with them (ZeRO stages, pp > 1, recomputation) are counted invalid.
  for (auto [flag, text, field] : {std::tuple{"--offload-optimizer", &f.offload_optimizer, &p.offload_optimizer},
                                   std::tuple{"--offload-params", &f.offload_params, &p.offload_params}}) {
    if (*text && !core::FromName(**text, field)) {
      std::cerr << "error: " << flag << ": must be one of " << core::Choices<core::OffloadTarget>() << " (got \""
                << **text << "\")\n";
      *exit_code = 2;
      return;
    }
  }
  if (f.offload_activations) {
    if (*f.offload_activations < 0) {
      std::cerr << "error: --offload-activations: must be >= 0 layers (got " << *f.offload_activations << ")\n";
      *exit_code = 2;
      return;
    }
    p.offload_activation_layers = *f.offload_activations;
  }
  // Checkpoints in host memory need full recomputation: the plans' validation keeps those only.
  p.offload_checkpoints = f.offload_checkpoints;
  if (f.recipe) {
    if (*f.recipe == "megatron") p.dtypes.grads = core::Dtype::kFp32;
    else if (*f.recipe == "zero") p.dtypes.grads = core::Dtype::kBf16;
    else {
      std::cerr << "error: --recipe: must be zero or megatron (got \"" << *f.recipe << "\")\n";
      *exit_code = 2;
      return;
    }
  }
  o.tp = f.tp;
  o.pp = f.pp;
  o.cp = f.cp;
  o.ep = f.ep;
  o.vpp = f.vpp;
  o.mbs = f.mbs;
  if (!f.zero.empty()) o.zero = f.zero;
  o.top_k = f.top;
  o.max_memory_frac = f.max_memory_frac;
  o.allow_tight = f.allow_tight;
  o.tokens = f.tokens.value_or(0);
  o.threads = f.threads;
  o.prune = !f.exhaustive;
  if (o.tokens == 0) notes.push_back("tokens: 20 per parameter (Chinchilla; --tokens to change)");

  sim::SearchResult r;
  {
    ProgressBar bar;
    o.progress = [&bar](double fraction, double elapsed_s) { bar.Update(fraction, elapsed_s); };
    r = sim::SearchPlans(s.model, s.gpu, s.cluster, p, *profile, o);
  }
  // What the ranked plans' costs take from the profile's assumed figures (the GPU, precision and
  // attention kernel are the search's own, so the best plan's graph says it for all of them).
  if (!r.top.empty())
    for (std::string& n : sim::AssumedRates(*profile, s.gpu, s.model, r.top.front().plan))
      notes.push_back(std::move(n));
  std::vector<sim::WellKnownVerdict> verdicts;
  if (f.explain || r.top.empty()) {
    sim::SearchOptions eo = o;
    eo.progress = nullptr;
    verdicts = sim::ExplainWellKnownPlans(s.model, s.gpu, s.cluster, p, *profile, eo,
                                          r.top.empty() ? nullptr : &r.top.front());
  }
  // How close such plans came, from the shipped step table: the default profile's, as report shows it.
  std::vector<KindAccuracy> kinds;
  if (f.profile == "default" && s.model.moe && !r.top.empty()) {
    if (auto t = sim::LoadAccuracyTable("step"); t.ok()) kinds = ExpertsPerRankAccuracy(s, r, *t);
    else notes.push_back("warning: accuracy: " + t.status().message());
  }
  const std::string json = f.format == "json" || f.save ? SearchJson(s, o, r, verdicts, notes, kinds) : std::string();
  if (f.format == "json") std::cout << json;
  else PrintTable(s, o, r, verdicts, notes, kinds);
  if (f.save && !SaveSweep(f, s, r, json)) {
    *exit_code = 1;
    return;
  }

  if (r.top.empty()) {
    if (r.stats.enumerated == 0)
      std::cerr << "error: no plan to try: gpus=" << p.gpus << ", gbs=" << p.global_batch << " and seq=" << p.seq_len
                << " leave no valid degrees (dp must divide gbs; see the well-known plans above)\n";
    else std::cerr << "error: no plan fits in " << Gb(sim::MemoryBudgetBytes(o, s.gpu)) << " GB per GPU\n";
    *exit_code = 1;
    return;
  }
  if (!f.output.empty()) {
    core::PlanFile file;
    file.plan = r.top.front().plan;
    file.model = s.model;
    file.gpu = s.gpu;
    file.cluster = s.cluster;
    if (core::Status st = core::WriteTextFileAtomically(f.output, core::PlanFileToJson(file)); !st.ok()) {
      std::cerr << "error: --output: " << st.message() << "\n";
      *exit_code = 1;
      return;
    }
    std::cerr << "wrote " << f.output << " (the winner)\n";
  }
  *exit_code = 0;
}

}  // namespace

void AddSearchCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("search", "Every valid plan for a model on N GPUs, ranked; the Pareto front");
  auto f = std::make_shared<SearchFlags>();
  cmd->add_option("--model", f->model, "Model preset name, JSON file, or a Hugging Face config.json");
  cmd->add_option("--gpu", f->gpu, "GPU preset or JSON file (default: the cluster's GPU)");
  cmd->add_option("--cluster", f->cluster, "Cluster preset or JSON file (default: the preset built from --gpu)");
  cmd->add_option("--gpus", f->gpus, "GPUs the plan uses (= tp*pp*dp*cp)");
  cmd->add_option("--gbs", f->gbs, "Global batch in sequences");
  cmd->add_option("--gbs-tokens", f->gbs_tokens, "Global batch in tokens (instead of --gbs)");
  cmd->add_option("--seq", f->seq, "Sequence length (default the model's max_seq)");
  cmd->add_option("--objective", f->objective, "throughput (tokens/s), time (days) or cost (dollars)");
  cmd->add_option("--top", f->top, "Plans to list (default 10)");
  cmd->add_option("--max-memory-frac", f->max_memory_frac, "Budget as a fraction of GPU memory (default 1.0)");
  cmd->add_flag("--allow-tight", f->allow_tight,
                "Also rank plans over the budget only with the allocator's reserve (tight: within it as peak allocated "
                "+ CUDA context + NCCL; docs/memory.md §4), marked 'tight'");
  cmd->add_option("--format", f->format, "table|json");
  cmd->add_option("--output,-o", f->output, "Write the winner as a plan JSON file (for --plan)");
  cmd->add_flag("--explain-rejections", f->explain,
                "Say what became of the well-known plans (DDP, ZeRO, FSDP, TP in the node, TP x PP)");
  cmd->add_option("--tokens", f->tokens, "Tokens to train, for time and cost (default 20 per parameter)");
  cmd->add_option("--profile", f->profile, "Calibration profile: default, a name, or a JSON file");
  cmd->add_option("--threads", f->threads, "Worker threads (default: every hardware thread)");
  auto* save = cmd->add_flag("--save", f->save, "Keep the sweep (arguments and ranked result) in the result store");
  AddDbFlag(cmd, &f->db)->needs(save);
  auto* space = cmd->add_option_group("Search space (lists are comma-separated; default: every valid value)");
  space->add_option("--tp", f->tp, "Tensor parallel sizes (default: within the scale-up domain)")->delimiter(',');
  space->add_option("--pp", f->pp, "Pipeline parallel sizes")->delimiter(',');
  space->add_option("--cp", f->cp, "Context parallel sizes (default: seq/cp >= --min-cp-tokens)")->delimiter(',');
  space->add_option("--ep", f->ep, "Expert parallel sizes")->delimiter(',');
  space->add_option("--vpp", f->vpp, "Virtual pipeline stages per rank")->delimiter(',');
  space->add_option("--zero", f->zero, "ZeRO stages (default 0,1,2,3)")->delimiter(',');
  space->add_option("--mbs", f->mbs, "Micro batch sizes (default: divisors of gbs/dp up to --max-mbs)")->delimiter(',');
  space->add_option("--max-mbs", f->max_mbs, "Largest micro batch tried without --mbs (default 8)");
  space->add_option("--min-cp-tokens", f->min_cp_tokens, "Smallest sequence slice per CP rank (default 4096)");
  space->add_option("--schedule", f->schedules, "Pipeline schedules (default all)")->delimiter(',');
  space->add_option("--recompute", f->recompute, "Recompute modes (default none,selective,full)")->delimiter(',');
  space->add_option("--cp-kind", f->cp_kinds, "ring|ulysses|allgather (default ring)")->delimiter(',');
  space->add_option("--sp", f->sp, "Sequence parallel: on|off|both (default both)");
  space->add_option("--precision", f->precision, "fp32|tf32|bf16|fp16|fp8|nvfp4 GEMM precision (default bf16)");
  space->add_flag("--transformer-engine", f->transformer_engine,
                  "Every plan runs Transformer Engine's modules (--stack megatron-core-2024 sets it; nvfp4 needs it)");
  space->add_option("--fp8-scaling", f->fp8_scaling,
                    "Under --precision fp8, every plan's scaling: delayed (default), current (an amax pass per "
                    "quantization) or block (per-tile scales)");
  space->add_flag("--fp8-attention", f->fp8_attention,
                  "Every plan runs Transformer Engine's FP8 attention (cuDNN's FP8 fused kernel; needs --precision fp8 "
                  "or nvfp4 and --transformer-engine)");
  space->add_flag("--fp8-param-gather", f->fp8_param_gather,
                  "Under --precision fp8, the ZeRO-1 and ZeRO-2 plans all-gather their updated parameters in FP8 "
                  "(Megatron-Core --fp8-param-gather); the other stages run without it");
  space->add_option("--recipe", f->recipe, "Model-state recipe: zero (16 B/param) or megatron (18 B/param)");
  space->add_option("--offload-optimizer", f->offload_optimizer, "none|cpu|nvme: every plan's optimizer states");
  space->add_option("--offload-params", f->offload_params, "none|cpu|nvme: every plan's parameters (ZeRO-3)");
  space->add_option("--offload-activations", f->offload_activations,
                    "Every plan offloads its first N layers' activations to host memory (pp 1, no recompute)");
  space->add_flag("--offload-checkpoints", f->offload_checkpoints,
                  "Every plan keeps full recomputation's checkpoints in host memory (DeepSpeed's cpu_checkpointing; "
                  "recompute full only)");
  space->add_option("--stack", f->stack,
                    "Software stack whose defaults the plans take (meshplan presets stacks): precision, attention, "
                    "overlaps, gradient dtype; ZeRO, recompute and SP stay searched");
  space->add_flag("--exhaustive", f->exhaustive, "Estimate every valid plan (no memory-bound pruning)");
  cmd->callback([f, exit_code] { RunSearch(*f, exit_code); });
}

}  // namespace meshplan::cli
