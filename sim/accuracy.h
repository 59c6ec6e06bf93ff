// How close the model comes on published runs like a plan: `meshplan validate`'s error on the
// project's corpus of published runs (step time, in tokens/s per GPU) and measured peaks (memory),
// per group, kept as a table beside the presets (presets/accuracy/step.json and memory.json) and
// matched to a plan by the same groups validate gives a published run (GPU, dense/MoE, precision,
// data-parallel sharding, scale or parallelism, sequence length, software stack). The table is a
// measurement: the file names the command that made it, and tests/sim/accuracy_test.cc fails
// when the shipped table is no longer what that command gives. Pure; thread-safe.
#ifndef MESHPLAN_SIM_ACCURACY_H_
#define MESHPLAN_SIM_ACCURACY_H_

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/presets.h"
#include "core/specs.h"
#include "core/status.h"
#include "sim/comparison.h"
#include "sim/validation.h"

namespace meshplan::sim {

using Groups = std::vector<std::pair<std::string, std::string>>;

// One group's error: n runs, the median and p90 of |error| and the signed median (fractions;
// step time: > 0 the model is too fast; memory: > 0 it predicts too much).
struct AccuracyGroup {
  std::string dimension, value;  // "all" for every run
  size_t n = 0;
  double median_abs_error = 0, p90_abs_error = 0, median_error = 0;
};

// SequenceBucketOf's bucket of the pretraining length, which most published runs train at.
inline constexpr std::string_view kPretrainSequenceBucket = "<=8k";

// One published run as the table keeps it: enough to find the runs of a plan's model and GPU.
struct AccuracyRun {
  std::string id, model, gpu, precision;
  bool moe = false;
  int64_t gpus = 0;
  double error = 0;                               // signed, as the table's groups (rounded to 1e-4)
  std::string sequence{kPretrainSequenceBucket};  // its sequence-length bucket (SequenceBucketOf)
};
// A run as the table file and `report --format json` write it: id, model, gpu, gpus, precision,
// sequence, moe, error.
nlohmann::ordered_json AccuracyRunJson(const AccuracyRun& r);

// The scenarios printed more than once (sim/comparison.h FindRepeats): how far published runs of
// one plan differ between tables, releases or dates, and the floor under any prediction's error on
// them. scenarios 0: none, or a table made without them. Fractions rounded to 1e-4.
struct AccuracyRepeats {
  size_t scenarios = 0, runs = 0;
  double spread_median = 0, spread_p90 = 0;  // published max / min - 1 over the scenarios
  double floor_median = 0, floor_p90 = 0;    // (max - min) / (max + min)
};
AccuracyRepeats AccuracyRepeatsOf(const RepeatSummary& r);
// As the table file and `report --format json` write it: scenarios, runs, spread_median, spread_p90,
// floor_median, floor_p90.
nlohmann::ordered_json AccuracyRepeatsJson(const AccuracyRepeats& r);

// The strong-scaling series (sim/comparison.h SplitSteps): how close the predicted time a
// microbatch adds (t) and a step's fixed cost (F) came on the series the table's runs hold.
// series 0: none, or a table made without them. t fractions rounded to 1e-4, F to 1 ms.
struct AccuracyStepSplit {
  size_t series = 0, runs = 0;
  double t_median = 0, t_p90 = 0;  // |predicted t / published t - 1| over the series
  double t_signed = 0;             // its signed median (> 0: a microbatch predicted longer)
  double f_gap_median_s = 0;       // median of predicted F - published F (< 0: a step cost missing)
};
AccuracyStepSplit AccuracyStepSplitOf(const StepSplitSummary& s);
// As the table file and `report --format json` write it: series, runs, t_median, t_p90, t_signed,
// f_gap_median_s.
nlohmann::ordered_json AccuracyStepSplitJson(const AccuracyStepSplit& s);

struct AccuracyTable {
  std::string metric;                 // "tokens_per_s_per_gpu" or "memory_gib" (validate --memory)
  std::string made_by;                // the command that made the table
  std::string profile;                // the profile it was made with ("default")
  std::vector<std::string> datasets;  // the files, by name
  AccuracyGroup all;
  std::vector<AccuracyGroup> groups;  // validate's order: by dimension, then value
  std::vector<AccuracyRun> runs;      // every run, in validate's order
  // Comparing two plans (sim/comparison.h): the error of the ratio over every pair of runs
  // measured together that differ in one thing ("all"), then per axis (dimension "axis", in
  // ComparisonAxes' order). Empty in a table made without them.
  std::vector<AccuracyGroup> comparisons;
  AccuracyRepeats repeats;
  AccuracyStepSplit step_split;
};

// The table of a validation run: every group but the per-file ("dataset") and, for memory, the
// measurement kind ("measured": what a plan's report does not choose). Figures rounded to 1e-4
// (0.01 points), as the file keeps them.
AccuracyTable AccuracyTableOf(const ValidationSummary& v, const std::string& metric, const std::string& made_by,
                              const std::string& profile, const std::vector<std::string>& datasets);

// The comparison rows of a table (AccuracyTable::comparisons): "all", then each axis with pairs.
std::vector<AccuracyGroup> ComparisonGroupsOf(const ComparisonSummary& c);

std::string AccuracyTableToJson(const AccuracyTable& t);
// InvalidArgument names the field and the rule.
core::Result<AccuracyTable> ParseAccuracyTableJson(const std::string& json_text);
// The built-in table: "step" or "memory" (presets/accuracy/).
core::Result<AccuracyTable> LoadAccuracyTable(const std::string& name);

// The groups of a plan as validate gives them to a published run of that plan (sim/validation.cc:
// step time by GPU, model, an MoE model's experts per rank, precision, sharding, scale, sequence and
// stack; memory by GPU, model, experts per rank, precision, sharding, parallelism, sequence and
// stack). An empty `stack` (a plan that names none) leaves that dimension out.
// "tp+pp+cp+ep": the parallelisms a plan uses beyond data parallelism; "dp only" for none.
std::string ParallelismOf(const core::PlanSpec& p);
// The tokens per sequence: "<=8k" (up to 8,192, the length the corpus's pretraining recipes run;
// Llama 3 pretrains at 8,192), "<=32k", ">32k" (long context: the runs that need context
// parallelism or a continued-pretraining stage).
const char* SequenceBucketOf(const core::PlanSpec& p);
// An MoE model's routed experts per expert-parallel rank, bucketed: "<=4", "<=8", "<=16", ">16"
// (how many expert GEMMs each grouped call runs on a rank; the corpus's fine-grained layouts are
// the furthest off, docs/validation.md); "" for a dense model.
std::string ExpertsPerRankBucketOf(const core::ModelSpec& m, const core::PlanSpec& p);
// The dimension name that bucket's groups carry in validate's summary and the accuracy tables.
inline constexpr const char* kExpertsPerRankDimension = "experts/rank";
Groups StepGroupsOf(const std::string& gpu, const core::ModelSpec& m, const core::PlanSpec& p,
                    const std::string& stack);
Groups MemoryGroupsOf(const std::string& gpu, const core::ModelSpec& m, const core::PlanSpec& p,
                      const std::string& stack);

// The table's rows of `groups`, in their order; a group without published runs gets a row with
// n = 0 (no evidence either way).
std::vector<AccuracyGroup> MatchAccuracy(const AccuracyTable& t, const Groups& groups);

// The table's runs of `model` on `gpu`, those in `precision` first, then nearest in GPU count
// (|log2 of the ratio|), then by id, at most `max`; when none ran that model on that GPU, its runs
// on any GPU, the same way. `same_gpu` says which. Empty when the model has no published run (a
// model of one's own).
std::vector<const AccuracyRun*> RunsLike(const AccuracyTable& t, const std::string& model, const std::string& gpu,
                                         const std::string& precision, int64_t gpus, size_t max, bool* same_gpu);

// The runs like a plan in all three of GPU, dense/MoE and precision at once (the groups above are
// each one alone), summarised as validate summarises a group: dimension "joint", value
// "h100-sxm moe bf16"; n = 0 when no run is all three.
AccuracyGroup JointGroup(const AccuracyTable& t, const std::string& gpu, bool moe, const std::string& precision);

// The range published runs like a plan measured, as multiples of the model's prediction: the 10th
// and 90th percentiles of the signed errors (sim::Quantile, as validate's median and p90) of the
// first of these sets with at least kRangeMinRuns runs: the plan's GPU, dense/MoE and precision at
// once (JointGroup's runs); its dense/MoE and precision on any GPU; its dense/MoE alone; every run.
// A plan longer than the pretraining length (its SequenceBucketOf not "<=8k") first tries the same
// sets among the runs of its own sequence bucket (then that bucket alone), whose errors differ
// from the short runs' (docs/validation.md).
// A run's error is predicted / measured - 1, so what it measured is the prediction / (1 + error):
// the step table's tokens/s per GPU (a step time is the prediction x (1 + error)), the memory
// table's peak. n = 0 only for an empty table.
inline constexpr size_t kRangeMinRuns = 10;
struct AccuracyRange {
  std::string basis;  // the set, as "h100-sxm moe bf16", "any GPU, moe bf16", "any GPU, moe" or "all"
  size_t n = 0;
  double p10_error = 0, p90_error = 0;
  // The measured value over the predicted one at the two ends: 1 / (1 + p90), 1 / (1 + p10).
  double LowFactor() const { return 1.0 / (1.0 + p90_error); }
  double HighFactor() const { return 1.0 / (1.0 + p10_error); }
  // A predicted rate or size (tokens/s, bytes) at the low and the high end: what such runs
  // measured, prediction / (1 + error).
  std::array<double, 2> Measured(double predicted) const {
    return {predicted / (1 + p90_error), predicted / (1 + p10_error)};
  }
  // A predicted time or cost (the inverse of a rate), low end first: prediction x (1 + error).
  std::array<double, 2> MeasuredTime(double predicted) const {
    return {predicted * (1 + p10_error), predicted * (1 + p90_error)};
  }
};
AccuracyRange RangeOf(const AccuracyTable& t, const std::string& gpu, bool moe, const std::string& precision,
                      const std::string& sequence);

// What a table says of one scenario: the rows of its groups (StepGroupsOf for the step table,
// MemoryGroupsOf for the memory one, by the table's metric), its joint group, every published
// run of its model (RunsLike, nearest first) and the range runs like it measured (RangeOf). What
// `report`, `explain` and the GUI show.
struct PlanAccuracy {
  std::vector<AccuracyGroup> groups;
  AccuracyGroup joint;
  std::vector<AccuracyRun> like;
  bool like_same_gpu = false;
  AccuracyRange range;
};
PlanAccuracy AccuracyOfPlan(const AccuracyTable& t, const core::Scenario& s, const std::string& stack);

// Of `rows`, the group with published runs whose median |error| is largest (the first on a tie):
// how uncertain a plan in all of them is. nullptr when none has runs.
const AccuracyGroup* LeastAccurate(const std::vector<AccuracyGroup>& rows);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_ACCURACY_H_
