// Whiteboard sizing that shows its derivations (`meshplan explain`). An Explanation is a list of
// steps, each one rule of the whiteboard checklist (model size -> memory budget -> parallelism ->
// activation checkpointing + sequence parallel -> bf16/fp8 -> sharded async checkpoints -> health
// check + requeue -> communication/compute overlap -> MFU -> how close (the error on published runs
// like the plan) -> recommendation -> cost) or one point of a concept
// (ZeRO, TP, SP, PP, CP, EP, collectives, precision, recompute, checkpoints, failures), with the
// rule, the formula, the numbers substituted, the result, and -- where a common rule of thumb
// (the project's seed notes) gets it wrong -- the right derivation.
//
// Every number is the result of a core/ or sim/ function (CountParams, ShardedModelStates,
// LayerActivationBytes, EstimateMemory, BuildStepGraph, BusBandwidthFactor, CollectiveTime,
// SchedulePipeline, EstimateStep, EstimateTraining, EstimateCheckpoint, JobRates,
// EstimateReliability, SearchPlans); this file only chooses the cases and words them. The only
// typed-in numbers are the seed notes' own inputs (a "70B" model, "2 weeks", "4M tokens"), named
// as such. docs/explain.md lists the steps and the rules.
// Pure functions (presets are the compiled-in ones); thread-safe.
#ifndef MESHPLAN_SIM_EXPLAIN_H_
#define MESHPLAN_SIM_EXPLAIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/failures.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/specs.h"
#include "core/status.h"
#include "sim/search.h"

namespace meshplan::sim {

// One number of a derivation. `unit` says what it counts ("B", "s", "GPUs", "USD", "" for a
// ratio or a count); booleans are 0/1.
struct ExplainValue {
  std::string name;
  double value = 0;
  std::string unit;
};

struct ExplainStep {
  std::string id;                    // stable key, e.g. "memory_budget", "zero3_over_8"
  std::string title;                 // "Memory budget: model states"
  std::string rule;                  // the rule, in words, with its source
  std::string formula;               // the formula, symbolic
  std::string substituted;           // the formula with this case's numbers
  std::string result;                // the conclusion
  std::string seeds_note;            // empty, or: the seed notes' rule of thumb is wrong here, and why
  std::vector<ExplainValue> values;  // the numbers of this step, for tests and --format json

  // The value called `name`, or NaN when there is none.
  double Value(std::string_view name) const;
  bool Has(std::string_view name) const;
};

struct Explanation {
  std::string title;  // "llama3-70b on 64 x h100-sxm (dgx-h100)" or "ZeRO: sharding ..."
  std::vector<ExplainStep> steps;
  // Scenario walks only. `rules_plan`: what the whiteboard rules pick (it may not fit);
  // `recommended`: the search's best, or the rules' plan when the search was off or found
  // nothing better; empty when no plan fits.
  std::optional<core::PlanSpec> rules_plan;
  std::optional<RankedPlan> recommended;
  bool fits = false;  // some plan fits (scenario walks; topics: true)

  const ExplainStep* Step(std::string_view id) const;  // nullptr when absent
};

struct ExplainOptions {
  // True: evaluate the scenario's plan as given (the user chose the degrees); the rules' plan is
  // still derived and compared. False: the whiteboard rules choose tp, pp, dp, zero, sp,
  // recompute (the scenario supplies seq, batch, precision, dtypes, optimizer).
  bool keep_plan = false;
  bool search = true;            // run SearchPlans for the recommendation
  SearchOptions search_options;  // objective, threads, ... (tokens below overrides its tokens)
  double tokens = 0;             // tokens of the run; 0: 20 per parameter (Hoffmann et al. 2022)
  int64_t trials = 100;          // Monte Carlo trials behind the goodput's p50/p90
};

// The whiteboard checklist for one scenario. With keep_plan, REQUIRES: s.plan passed ValidatePlan
// (with the model, GPU and cluster); without it only s.plan's gpus, seq_len, global_batch,
// precision, dtypes, optimizer, placement and overlap settings are read (the rules set the rest).
// InvalidArgument only for options out of range; a scenario where nothing fits (or no plan is
// valid) is an Explanation with fits == false.
core::Result<Explanation> ExplainScenario(const core::Scenario& s, const core::Profile& profile,
                                          const core::FailureModel& failures, const ExplainOptions& opt);

enum class Topic {
  kZero,
  kTp,
  kSp,
  kPp,
  kCp,
  kEp,
  kCollectives,
  kPrecision,
  kRecompute,
  kCheckpoint,
  kFailures,
  kGemm
};
const char* Name(Topic t);                           // "zero", "tp", ...
bool FromName(const std::string& text, Topic* out);  // false when `text` names none
std::string TopicChoices();                          // "zero|tp|sp|pp|cp|ep|collectives|..."
std::vector<Topic> AllTopics();

// One concept with a worked example on the built-in presets (llama3-70b, llama3-405b,
// gpt3-175b, mixtral-8x7b on dgx-h100; the llama3-405b failure rates). NotFound if a preset is
// missing from the build.
core::Result<Explanation> ExplainTopic(Topic topic, const core::Profile& profile);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_EXPLAIN_H_
