// Discrete-event simulation of one training step's pipeline: every forward (F), input-gradient
// backward (B) and weight-gradient (W) op of every microbatch on every pipeline rank, placed in
// time by the schedule's order and the ops' dependencies. By symmetry it simulates one
// data-parallel replica's pipeline, then adds the step-level work (exposed DP synchronisation and
// the optimizer) from the step model, so 16k GPUs cost the same as 16.
//
// Op durations come from the analytic model's per-rank StageTimes (sends between stages are part
// of F and B, as there). Schedules: GPipe, 1F1B and interleaved follow Megatron-LM's fixed orders;
// zero-bubble (ZB-H1) and DualPipe are list-scheduled: each rank runs the ready op its policy
// prefers (docs/schedules.md). Pure; thread-safe.
#ifndef MESHPLAN_SIM_DES_H_
#define MESHPLAN_SIM_DES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/specs.h"
#include "core/status.h"
#include "sim/step_model.h"

namespace meshplan::sim {

enum class PipeOpKind { kForward, kBackward, kWeight };

struct TimelineOp {
  int64_t stage = 0;       // pipeline rank
  int64_t chunk = 0;       // model chunk on that rank (interleaved; DualPipe: 0 or 1)
  int64_t microbatch = 0;
  PipeOpKind kind = PipeOpKind::kForward;
  double start_s = 0, end_s = 0;
};

struct DesOptions {
  std::vector<double> stage_slowdown;  // per rank, multiplies its op durations (1.1 = 10% slower)
  double jitter = 0;                    // relative std-dev of each op's duration (normal, clamped > 0)
  uint64_t seed = 1;
  bool keep_timeline = true;            // fill DesResult::ops (off for benchmarks and search)
};

struct DesStage {
  double busy_s = 0;  // compute time on the rank within the pipeline phase
  double idle_s = 0;  // pipeline makespan - busy
};

struct DesResult {
  double pipeline_s = 0;      // makespan of the F/B/W ops
  double step_time_s = 0;     // pipeline + step-level work (exposed DP sync, optimizer)
  double bubble_fraction = 0; // idle share of the pipeline phase, over all ranks
  std::vector<DesStage> stages;
  std::vector<TimelineOp> ops;  // in start order per rank
};

// REQUIRES: stages.size() == plan.pp; microbatches >= 1. Fails (InvalidArgument) on an option
// that does not fit the plan (a slowdown list of the wrong length, a negative jitter).
core::Result<DesResult> SimulatePipeline(const core::PlanSpec& plan, const std::vector<StageTimes>& stages,
                                         int64_t microbatches, const DesOptions& options);

// Timelines: Chrome trace JSON (chrome://tracing, Perfetto), an SVG Gantt chart (one row per
// rank, F/B/W coloured, idle time white), and an ASCII Gantt of `width` columns.
std::string ChromeTraceJson(const DesResult& r);
std::string SvgGantt(const DesResult& r, int64_t stages);
std::string AsciiGantt(const DesResult& r, int64_t stages, int width);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_DES_H_
