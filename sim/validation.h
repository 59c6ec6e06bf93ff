// Predicting published runs: the error of the step model on each record, in tokens/s per GPU,
// and summaries over all records and per group (GPU, dense/MoE, precision, data-parallel
// sharding, scale, sequence length, software stack). Pure; thread-safe.
#ifndef MESHPLAN_SIM_VALIDATION_H_
#define MESHPLAN_SIM_VALIDATION_H_

#include <string>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "core/profile.h"
#include "core/published.h"
#include "sim/step_model.h"

namespace meshplan::sim {

struct ValidationRecord {
  std::string id;
  std::string printed, conversion, stack;
  std::string model, gpu;               // the scenario's model and GPU preset names
  int64_t gpus = 0;                     // and its GPU count
  double published = 0, predicted = 0;  // tokens/s per GPU
  double error = 0;                     // (predicted - published) / published: > 0 is too fast
  // The memory model's verdict (core::FitVerdict): `fits` as core::MemoryReport::fits (with the
  // allocator's whole reserve), `tight` for a plan that fits only once the allocator frees its
  // cache; neither is a run called out of memory.
  bool fits = true;
  bool tight = false;
  bool OutOfMemory() const { return !fits && !tight; }
  double memory_gib = 0;  // predicted on-GPU total of the worst stage
  double step_s = 0;      // predicted step time and where it goes (EstimateStep)
  StepBreakdown breakdown;
  // (dimension, value): "dataset" its file (when known), "gpu" a100-80g, "model" dense|moe, "precision" fp16|bf16|fp8,
  // "sharding" ddp|zero-1|zero-2|zero-3, "scale" <=64|<=1024|>1024 GPUs, "sequence" <=8k|<=32k|>32k
  // tokens, "stack" its name.
  std::vector<std::pair<std::string, std::string>> groups;
  std::vector<std::string> assumptions;
};

struct ErrorSummary {
  size_t n = 0;
  double median_abs_error = 0, p90_abs_error = 0, mean_abs_error = 0, max_abs_error = 0;
  double median_error = 0;   // signed: > 0 means the model is too fast on the typical run
  size_t out_of_memory = 0;  // runs that really ran but are predicted not to fit
};
ErrorSummary Summarize(const std::vector<const ValidationRecord*>& records);
// The same figures of bare signed errors (no out-of-memory count).
ErrorSummary SummarizeErrors(std::vector<double> errors);
// The value at fraction q (0..1) of an ascending list, linear between the neighbouring ranks
// (position q x (n - 1)); 0 for an empty list. What the summaries' median and p90 are.
double Quantile(const std::vector<double>& sorted, double q);

struct GroupSummary {
  std::string dimension, value;
  ErrorSummary summary;
};

// A published outcome without a peak (core::PublishedMemory::Outcome: the source says the run
// ran out of memory, or that it ran) against the memory model's fit verdict (core::FitVerdict): a
// plan is called out of memory when some stage's least on-GPU bytes (peak allocated, CUDA context
// and NCCL buffers) exceed the GPU's memory; a tight plan counts as predicted to run.
struct VerdictRecord {
  std::string id, stack;
  bool published_fits = false;                                         // the source's outcome
  core::FitVerdict predicted_verdict = core::FitVerdict::kDoesNotFit;  // the memory model's
  bool predicted_fits = false;  // predicted_verdict is not kDoesNotFit: predicted to run
  double predicted_gib = 0;     // the worst stage's total on the GPU
  double capacity_gib = 0;      // the GPU's memory
  std::vector<std::pair<std::string, std::string>> groups;
  std::vector<std::string> assumptions;
  bool Right() const { return published_fits == predicted_fits; }
};

struct ValidationSummary {
  std::vector<ValidationRecord> records;
  // validate --memory only: the records that print an outcome instead of a peak, in input order,
  // and how many of them the fit verdict gets wrong.
  std::vector<VerdictRecord> verdicts;
  size_t verdicts_wrong = 0;
  ErrorSummary all;
  std::vector<GroupSummary> groups;  // by dimension in the order above, then value
  // The overall figures, kept under their earlier names.
  size_t n = 0;
  double median_abs_error = 0, mean_abs_error = 0, max_abs_error = 0;
};

ValidationSummary ValidateRuns(const std::vector<core::PublishedRun>& runs, const core::Profile& profile);

// A published per-layer timing (core::PublishedLayerTiming: one dense layer and one microbatch on
// one rank, forward and backward, as Korthikanti 2022 Table 4 prints them) against the step
// model's own cost of that layer (DenseLayerTimes: the backward with its weight gradients and
// recompute, the layer's exposed communication). Errors in the runs' sense, published time over
// predicted time less 1 (> 0: the model is too fast): `error` of the two passes together,
// `forward_error` and `backward_error` of each.
struct LayerTimingRecord {
  std::string id, dataset, stack;
  double published_forward_s = 0, published_backward_s = 0;
  double predicted_forward_s = 0, predicted_backward_s = 0;
  double forward_error = 0, backward_error = 0, error = 0;
  std::vector<std::string> assumptions;
};
struct LayerTimingSummary {
  std::vector<LayerTimingRecord> records;
  ErrorSummary all;  // of `error`
};
LayerTimingSummary ValidateLayerTimings(const std::vector<core::PublishedLayerTiming>& timings,
                                        const core::Profile& profile);

// Measured per-GPU memory peaks against the memory model's worst stage, in GiB (records with a
// published outcome and no peak go to `verdicts` instead): each record's
// `published` is the measured peak, `predicted` the model's peak of the same kind (allocated: the
// GPU total less the CUDA context, NCCL's buffers and fragmentation; reserved: with the
// fragmentation), `error` > 0 an overestimate. Groups: dataset, gpu, model, precision, sharding,
// parallelism (tp+pp+cp+ep present, or "dp only"), measured (allocated|reserved), stack.
ValidationSummary ValidateMemory(const std::vector<core::PublishedMemory>& records,
                                 const core::MemoryOverheads& overheads = {});

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_VALIDATION_H_
