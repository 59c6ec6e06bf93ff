// Plan search: enumerates every parallel plan of a model on a fixed number of GPUs (TP within the
// scale-up domain and dividing the heads; PP with even or default uneven layer splits; VPP; CP;
// EP; ZeRO 0-3; recompute; SP; micro batch; pipeline schedule), prunes by memory, costs the
// survivors with EstimateMemory + EstimateStep, and ranks them by an objective. Every number comes
// from core/ and sim/ (ValidatePlan, EstimateMemory, EstimateStep, EstimateTraining); the search
// only decides which plans to ask about. Algorithm and pruning rules: docs/search.md.
// Thread-safety: SearchPlans is a pure function of its arguments; internally it runs
// `SearchOptions::threads` workers and calls `progress` from the calling thread only.
#ifndef MESHPLAN_SIM_SEARCH_H_
#define MESHPLAN_SIM_SEARCH_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/profile.h"
#include "core/specs.h"
#include "sim/step_model.h"

namespace meshplan::sim {

// What "best" means. At a fixed GPU count the three rank alike (cost and days are both
// proportional to step time); they differ in the number reported and in ties.
enum class Objective { kThroughput, kTime, kCost };
const char* Name(Objective o);                           // "throughput", "time", "cost"
bool FromName(const std::string& text, Objective* out);  // false when `text` names none

struct SearchOptions {
  Objective objective = Objective::kThroughput;
  int64_t top_k = 10;
  // A plan fits when its worst stage's per-GPU bytes <= max_memory_frac x gpu.CapacityBytes().
  double max_memory_frac = 1.0;
  // Also rank the tight plans: over the budget with the allocator's reserve (the assumed
  // fragmentation, FSDP2's idle pools) but within it without (core::FitVerdict::kTight, their
  // least_per_gpu_bytes), for runs that accept the caching allocator's frees and retries.
  bool allow_tight = false;
  // Tokens of the training run behind `time` and `cost`; 0: 20 per parameter (Hoffmann 2022).
  double tokens = 0;
  // Worker threads; 0: std::thread::hardware_concurrency().
  int threads = 0;

  // The search space. An empty list means every value the rules allow; a non-empty list is the
  // only values tried (values that break a rule are still skipped).
  std::vector<int64_t> tp, pp, cp, ep, vpp, mbs;
  std::vector<int> zero = {0, 1, 2, 3};
  std::vector<core::Recompute> recompute = {core::Recompute::kNone, core::Recompute::kSelective,
                                            core::Recompute::kFull};
  std::vector<core::Schedule> schedules = {core::Schedule::kGpipe, core::Schedule::k1F1B, core::Schedule::kInterleaved,
                                           core::Schedule::kZeroBubble, core::Schedule::kDualPipe};
  std::vector<core::CpKind> cp_kinds = {core::CpKind::kRing};
  std::vector<bool> sequence_parallel = {true, false};  // tried only where tp > 1
  // Without an explicit `tp` list, tp stays within cluster.scale_up_domain_gpus.
  int64_t max_mbs = 8;  // largest micro batch tried without an `mbs` list
  // cp > 1 only while seq/cp >= this (no `cp` list). 4096: the finest split published recipes use
  // at seq 8192 (NeMo's Llama 3.1 405B pretraining recipe: CP 2). The step model hides the ring's
  // KV exchange under the whole layer and does not charge the small attention blocks of finer
  // splits, so below this it favours CP more than practice does (docs/search.md).
  int64_t min_tokens_per_cp_rank = 4096;
  bool uneven_splits = true;  // try core::DefaultStageSplit when layers don't divide

  // Skip plans that provably cannot fit before calling EstimateMemory (closed-form model-state
  // lower bound; recompute monotonicity). False: estimate every valid plan (tests use this to
  // check that pruning never changes the answer).
  bool prune = true;

  // Called from the calling thread about ten times a second with the fraction done and the
  // seconds elapsed; may be empty.
  std::function<void(double fraction, double elapsed_s)> progress;
};

// The per-GPU memory budget a plan must fit in: max_memory_frac of the GPU's capacity (what CUDA
// reports of it, GpuSpec::CapacityBytes), rounded down to whole bytes.
inline int64_t MemoryBudgetBytes(const SearchOptions& o, const core::GpuSpec& g) {
  return static_cast<int64_t>(std::floor(o.max_memory_frac * static_cast<double>(g.CapacityBytes())));
}

// One costed plan.
struct RankedPlan {
  core::PlanSpec plan;
  core::StageMemory worst_stage;  // memory breakdown of the stage that sets per_gpu_bytes
  int64_t per_gpu_bytes = 0;
  int64_t capacity_bytes = 0;  // gpu.CapacityBytes()
  bool tight = false;          // over the budget but for the allocator's reserve (allow_tight)
  StepEstimate step;
  TrainEstimate train;
  double score = 0;  // the objective, lower is better: -tokens/s, days or dollars
};

struct SearchStats {
  int64_t enumerated = 0;        // candidate plans generated
  int64_t pruned_bound = 0;      // skipped: model states alone exceed the budget (closed form)
  int64_t pruned_monotone = 0;   // skipped: the same plan with more recompute already did not fit
  int64_t invalid = 0;           // ValidatePlan reported an error
  int64_t memory_estimates = 0;  // EstimateMemory calls
  int64_t out_of_memory = 0;     // estimated and over the budget
  int64_t tight = 0;             // estimated and over the budget only with the allocator's reserve
                                 // (among out_of_memory, or with allow_tight among evaluated)
  int64_t evaluated = 0;         // fit, and costed with EstimateStep + EstimateTraining
  int64_t lists_costed = 0;      // of those, how many costed their op lists (the rest reused a
                                 // plan's with the same sharding: sim::StepCostCache)
  int threads = 0;
  double wall_s = 0;
  int64_t Pruned() const { return pruned_bound + pruned_monotone; }
};

struct SearchResult {
  SearchStats stats;
  double tokens = 0;            // the training run behind time and cost
  std::vector<RankedPlan> top;  // best first, at most top_k
  // Non-dominated in (tokens/s up, per-GPU bytes down, cost down), by tokens/s descending.
  std::vector<RankedPlan> pareto;
  // The estimated plan that missed the budget by the least (no step estimate); for explanations.
  std::optional<RankedPlan> lightest_rejected;
  std::vector<std::string> invalid_examples;  // the first few ValidatePlan errors, if any
};

// REQUIRES: base.gpus > 0, base.global_batch > 0, base.seq_len > 0; the model, GPU and cluster
// valid. The search keeps base's precision, dtypes, optimizer, offload, placement, overlap and
// sharding settings and sets tp, pp, dp, cp, ep (etp 1), vpp, zero, sequence_parallel,
// recompute, micro_batch, schedule, cp_kind and stage_layers.
SearchResult SearchPlans(const core::ModelSpec& m, const core::GpuSpec& g, const core::ClusterSpec& c,
                         const core::PlanSpec& base, const core::Profile& profile, const SearchOptions& options);

// A plan everyone tries first, and what became of it in this scenario.
struct WellKnownVerdict {
  std::string name;  // "FSDP (ZeRO-3), no TP/PP"
  int64_t tp = 1, pp = 1;
  enum class Kind { kFits, kOutOfMemory, kInvalid, kOutsideSearch } kind = Kind::kInvalid;
  std::vector<std::string> reasons;    // ValidatePlan errors, or the memory shortfall, in words
  std::optional<RankedPlan> best;      // kFits: its best variant
  std::optional<RankedPlan> lightest;  // kOutOfMemory: its lightest variant
  double relative_score = 0;           // kFits: best.step.tokens_per_s / winner's tokens/s
};

// Runs the well-known families (pure data parallel with ZeRO 0, 1-2 and 3; TP over the scale-up
// domain; that TP with PP 2..16) through the same search, each restricted to its own tp/pp/zero,
// and says why each was rejected or how it compares to `winner`. `winner` may be null.
std::vector<WellKnownVerdict> ExplainWellKnownPlans(const core::ModelSpec& m, const core::GpuSpec& g,
                                                    const core::ClusterSpec& c, const core::PlanSpec& base,
                                                    const core::Profile& profile, const SearchOptions& options,
                                                    const RankedPlan* winner);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_SEARCH_H_
