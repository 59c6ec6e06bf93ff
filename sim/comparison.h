// Comparing two plans as a planner does: what FP8 buys over BF16, how throughput per GPU holds
// from 512 to 1,024 GPUs, what a longer sequence or a larger micro batch costs. Pairs of
// published runs measured together (the same source table, software stack, model, GPU and
// cluster) whose plans differ in one thing: the ratio of their measurements against the ratio the
// model predicts. A model can be off in level on a stack and still right about what a change
// buys, or the reverse; `validate` judges levels, this judges the what-if. Pure; thread-safe.
#ifndef MESHPLAN_SIM_COMPARISON_H_
#define MESHPLAN_SIM_COMPARISON_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/presets.h"
#include "core/published.h"
#include "sim/validation.h"

namespace meshplan::sim {

// What a pair varies: `varied` are the plan fields (as the plan file names them) of which at
// least one differs, `companions` those that may change with them (the data-parallel size with
// the GPU count, the global batch in weak scaling, the FP8 recipe's settings with the
// precision). Every other field of the two scenarios (the model's architecture but its
// max_seq, the GPU, the cluster, the rest of the plan) must be equal.
struct ComparisonAxis {
  std::string_view name;
  std::vector<std::string_view> varied;
  std::vector<std::string_view> companions;
};
// precision, gpus, micro_batch, seq_len, recompute (what is recomputed: the granularity, the
// selective modules or the layer count), ep_overlap (Megatron-Core's EP all-to-all overlap),
// layout (tp, pp, cp, ep).
const std::vector<ComparisonAxis>& ComparisonAxes();

// One judged record as the pairing sees it: its result (published and predicted in the same unit,
// tokens/s per GPU or GiB), its scenario and the table that printed it.
struct ComparisonInput {
  const ValidationRecord* record = nullptr;
  const core::Scenario* scenario = nullptr;
  std::string table;  // core::PublishedRun::table: "paper, table"
};

// Two runs: `second` over `first` (tokens/s per GPU, or peak GiB), published and predicted;
// error = predicted_ratio / published_ratio - 1, which is (1 + e2) / (1 + e1) - 1 of the runs'
// own errors (> 0: the model makes the second plan look better than it measured, for tokens/s;
// larger, for memory).
struct ComparisonRecord {
  std::string axis, first, second;
  std::string change;  // "precision bf16 -> fp8", "gpus 512 -> 1024"
  double published_ratio = 0, predicted_ratio = 0, error = 0;
};

struct ComparisonSummary {
  std::vector<ComparisonRecord> pairs;  // by axis in ComparisonAxes' order, then as found
  ErrorSummary all;
  std::vector<GroupSummary> axes;  // dimension "axis", the axes with pairs in ComparisonAxes' order
};

// The runs alike but for one axis are sorted by that axis's varied fields and each is paired
// with the next (a scaling series gives its consecutive steps); two runs with the same varied
// values are not a pair. A run may be in pairs of several axes.
ComparisonSummary ComparePairs(const std::vector<ComparisonInput>& in);

// The same over what validate judged: ValidateRuns' records (in `runs`' order), or
// ValidateMemory's (the records with a measured peak, in `records`' order).
ComparisonSummary CompareRuns(const std::vector<core::PublishedRun>& runs, const ValidationSummary& v);
ComparisonSummary ComparePeaks(const std::vector<core::PublishedMemory>& records, const ValidationSummary& v);

// Runs of one scenario printed more than once: every field of the model, GPU, cluster and plan
// equal (as the pairs compare them), the same measured quantity (a memory record's allocated,
// reserved or on-the-GPU peak) and so one prediction, but other tables, software releases, dates
// or submitters. What their published values spread is error no model of the scenario can
// remove: a floor under the summaries' errors, read from the measurements themselves.
struct RepeatGroup {
  std::vector<std::string> ids;  // the runs, in input order
  double published_min = 0, published_max = 0;
  double predicted = 0;  // the scenario's, one for every run
  // published_max / published_min - 1.
  double spread = 0;
  // (published_max - published_min) / (published_max + published_min): the largest |error|
  // (predicted / published - 1) on the group's runs is at least this, whatever one prediction P
  // serves them; P / min - 1 and 1 - P / max are equal, and their larger the least, at the two
  // values' harmonic mean P = 2 min max / (min + max).
  double floor = 0;
};

struct RepeatSummary {
  std::vector<RepeatGroup> groups;  // by spread, largest first; ties in input order
  size_t runs = 0;                  // in the groups
  ErrorSummary spread, floor;       // over the groups (n = groups.size())
};

// Two runs repeat each other when their record groups but dataset and stack (the printed
// source's labels) and their scenarios' fields (FieldsOf, as ComparePairs reads them) are equal
// and so is their prediction; runs with a non-positive or non-finite published value are left out.
RepeatSummary FindRepeats(const std::vector<ComparisonInput>& in);
RepeatSummary RepeatedRuns(const std::vector<core::PublishedRun>& runs, const ValidationSummary& v);
RepeatSummary RepeatedPeaks(const std::vector<core::PublishedMemory>& records, const ValidationSummary& v);

// Strong scaling of one plan: runs alike but for the GPU count and what changes with it (the
// data-parallel size, the global batch), of one dataset and stack, whatever table or submitter
// printed them, whose microbatches per pipeline m = global batch / (dp x micro batch) differ.
// Their steps (global batch x sequence / (tokens/s per GPU x GPUs)) split as step = m·t + F, least
// squares over the series: t what one more microbatch adds, F what a step costs whatever its
// microbatches (the pipeline's fill and drain, the exposed data-parallel synchronisation, the
// optimizer, anything else once a step). The same split of the predicted steps says where a
// model's error sits, per microbatch or per step (docs/validation.md, the step split). A series
// has 3 runs or more whose microbatch counts span a factor of 2 or more.
struct StepSplitSeries {
  std::vector<std::string> ids;       // by microbatches, most first (ties by id)
  std::vector<int64_t> microbatches;  // per pipeline
  std::vector<double> published_step_s, predicted_step_s;
  double published_t = 0, published_f = 0, predicted_t = 0, predicted_f = 0;
  // The published fit's largest |residual| over the step it misses: how well one t and one F
  // describe the series' own measurements.
  double published_residual = 0;
};

struct StepSplitSummary {
  std::vector<StepSplitSeries> series;  // in the order of their first run
  size_t runs = 0;                      // in the series
  ErrorSummary t;                       // predicted_t / published_t - 1 over the series
  double median_f_gap_s = 0;            // over the series, predicted_f - published_f (< 0: a step cost missing)
};

StepSplitSummary SplitSteps(const std::vector<ComparisonInput>& in);
StepSplitSummary SplitRunSteps(const std::vector<core::PublishedRun>& runs, const ValidationSummary& v);

// The part of a record's table that says which runs were measured together: its "line N: "
// prefix and its precision words removed (dgxc-benchmarking's README prints each precision of a
// model on its own line, and a performance page may name the precision in the table's title).
std::string ComparisonTableOf(const std::string& table);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_COMPARISON_H_
