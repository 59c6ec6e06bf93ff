// Discrete-event simulation of one training step: every forward (F), input-gradient backward (B)
// and weight-gradient (W) op of every microbatch on every pipeline rank, placed in time by the
// schedule's order and the ops' dependencies, on four streams per rank:
//   compute  the kernels of F, B, W and the optimizer step;
//   tp_comm  tensor/context/expert-parallel collectives of a pass (exposed ones block compute,
//            overlapped ones run under the same pass's compute);
//   dp_comm  data-parallel communication: per-microbatch ZeRO-3 gathers and the per-step
//            gradient synchronisation (under the last microbatch's backward when
//            plan.overlap_grad_reduce, else after it);
//   p2p      pipeline sends: a pass's activations (F) or input gradients (B) to the neighbouring
//            stage; the receiver's pass waits for the send's end.
// Each stream runs one task at a time. By symmetry it simulates one data-parallel replica's
// pipeline, so 16k GPUs cost the same as 16. Dependencies and splits: docs/schedules.md.
//
// Durations come from the analytic model (sim/step_model.h): StageStreamCosts splits each
// rank's StageTimes by stream with the step graph's per-op costs, so that the pass times add up
// to the analytic ones. Every schedule's per-rank order is core::PipelineOrders' (Megatron-LM's
// GPipe, 1F1B and interleaved; ZB-H1; DeepSeek's DualPipe), the order the runtime executor runs.
// Pure; thread-safe.
#ifndef MESHPLAN_SIM_DES_H_
#define MESHPLAN_SIM_DES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"
#include "core/schedule.h"
#include "core/specs.h"
#include "core/status.h"
#include "sim/step_model.h"

namespace meshplan::sim {

using PipeOpKind = core::PipePass;  // F, B, W: the one vocabulary (core/schedule.h)

// The resources of one pipeline rank; each runs one task at a time.
enum class Stream { kCompute, kTpComm, kDpComm, kP2p };
inline constexpr int kStreams = 4;
const char* Name(Stream s);  // "compute", "tp_comm", "dp_comm", "p2p"

// One pass on the compute stream, from its first kernel to its last: it includes the exposed
// collectives it waits for (their tasks lie on tp_comm / dp_comm inside [start_s, end_s]) and
// excludes its pipeline send (a task on p2p that starts at end_s).
struct TimelineOp {
  int64_t stage = 0;       // pipeline rank
  int64_t chunk = 0;       // model chunk on that rank (interleaved; DualPipe: its direction, 0 or 1)
  int64_t microbatch = 0;  // 0..m-1, as core::ScheduleSlot numbers them
  PipeOpKind kind = PipeOpKind::kForward;
  double start_s = 0, end_s = 0;
};

enum class TaskKind {
  kExposedComm,     // a collective the pass's compute waits for (tp_comm, dp_comm)
  kOverlappedComm,  // a collective under the pass's compute (tp_comm, dp_comm)
  kSend,            // a pipeline send (p2p): F activations forward, B input gradients back
  kGradSync,        // the step's DP gradient synchronisation, or one bucket of it (dp_comm)
  kOptimizer,       // the optimizer step (compute)
  kParamGather,     // ZeRO-1/2's parameter all-gather, its exposed part (dp_comm)
  kTiedSync,        // a tied word embedding's gradient all-reduce over the pipeline's ends (p2p)
};
// "exposed", "overlapped", "send", "grad_sync", "optimizer", "param_gather", "tied_sync"
const char* Name(TaskKind k);

// A task on a stream other than a pass's compute: communication and the step-level work.
struct TimelineTask {
  int64_t stage = 0;
  int64_t chunk = 0;                       // of the pass it belongs to; -1 for step-level tasks
  int64_t microbatch = 0;                  // -1 for step-level tasks
  PipeOpKind pass = PipeOpKind::kForward;  // the pass it belongs to (a send: the pass that sends)
  TaskKind kind = TaskKind::kExposedComm;
  Stream stream = Stream::kTpComm;
  double start_s = 0, end_s = 0;
};

// One pass of one microbatch on one pipeline rank (all its model chunks together), by stream, in
// seconds. The pass holds the compute stream for compute_s + tp_exposed_s + dp_exposed_s.
struct PassStreams {
  double compute_s = 0;        // kernels
  double tp_exposed_s = 0;     // TP/CP/EP collectives the kernels wait for (tp_comm)
  double tp_overlapped_s = 0;  // TP/CP/EP collectives under the kernels (tp_comm). <= compute_s
  double dp_exposed_s = 0;     // per-microbatch DP collectives (ZeRO-3 gathers) waited for (dp_comm)
  double dp_overlapped_s = 0;  // per-microbatch DP collectives under the kernels (dp_comm). <= compute_s
  double Held() const { return compute_s + tp_exposed_s + dp_exposed_s; }
};

// Per pipeline rank: the per-microbatch passes, the pipeline send and the per-step work.
struct StageStreams {
  PassStreams forward;
  PassStreams backward_input;   // input gradients and recompute
  PassStreams backward_weight;  // weight gradients
  double p2p_s = 0;             // one pipeline send (the step graph's pipeline_send), per pass op
  double grad_sync_s = 0;       // per step: DP gradient synchronisation before any overlap (dp_comm)
  // Per step, of the first stage: its word embedding's gradient reduction (dp_comm), which starts
  // when the last backward ends, after grad_sync_s's buckets (the step model's EmbeddingTail).
  double grad_sync_tail_s = 0;
  // Per step, on the first and last stage of a pipeline with a tied word embedding: the all-reduce
  // of its two copies' gradients (p2p), after the gradient synchronisation, before the optimizer.
  double tied_sync_s = 0;
  double optimizer_s = 0;  // per step: the optimizer (compute)
  // Per step: the exposed part of ZeRO-1/2's parameter all-gather (dp_comm), after the optimizer:
  // all of it, or with overlap_param_gather what one microbatch's forward does not cover (that
  // forward is the next step's first, which waits for it; one simulated step carries the wait),
  // and on the first stage its word embedding's gather whole (the forward's first parameters).
  double param_gather_s = 0;
  // Per step: the compute slowed by the hidden part of the gradient synchronisation and the
  // parameter gather (the step model's rule, OverlapSlowdown), before the optimizer.
  double overlap_slowdown_s = 0;
};

// Splits the analytic model's per-rank times by stream with the per-op costs the step model
// uses (ComputeOpTime; ProfiledCollectiveTime over SpanOfGroup). Each pass keeps its analytic
// duration: compute_s + exposed + the step model's sends in that pass == StageTimes' pass time
// (F and B carry p2p_s x sends per microbatch there, sends = vpp for interleaved, else 1); the
// exposed part of the overlappable collectives is shared between tp_comm and dp_comm in
// proportion to their overlappable time. grad_sync_s, tied_sync_s and optimizer_s are the step
// graph's per-step ops on the rank; param_gather_s the exposed all-gather by the step model's rule. REQUIRES:
// ValidatePlan reported no errors; stages == EstimateStep(m, p, g, c, profile).stages.
std::vector<StageStreams> StageStreamCosts(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                                           const core::ClusterSpec& c, const core::Profile& profile,
                                           const std::vector<StageTimes>& stages);

// Every pass all compute (sends and communication inside, as the analytic times hold them), and
// the step-level work (StageTimes::step_s: exposed DP sync and optimizer) as one compute task.
std::vector<StageStreams> ComputeOnlyStreams(const std::vector<StageTimes>& stages);

// The event simulation's work bound: pp x vpp x microbatches x 3 passes (forward, input and
// weight gradients). Beyond it SimulateStreams returns InvalidArgument naming plan.global_batch
// rather than run for minutes and hold gigabytes of timeline.
inline constexpr double kMaxDesPasses = 4e6;

struct DesOptions {
  std::vector<double> stage_slowdown;  // per rank, multiplies its pass and send durations (1.1 = 10% slower)
  double jitter = 0;                   // relative std-dev of each pass's duration (normal, clamped > 0)
  uint64_t seed = 1;
  bool keep_timeline = true;  // fill DesResult::ops and ::tasks (off for benchmarks and search)
};

struct DesStage {
  // Pipeline phase: time the compute stream is held by F/B/W (kernels, the exposed collectives
  // they wait for, and blocking sends: Megatron's default send/recv blocks the sender).
  double busy_s = 0;
  double idle_s = 0;  // pipeline makespan - busy
  // Whole step, by Stream: time each stream runs a task (compute: kernels and the optimizer).
  std::array<double, kStreams> stream_busy_s{};
};

struct DesResult {
  double pipeline_s = 0;       // makespan of the F/B/W ops and their sends
  double step_time_s = 0;      // until the last rank's optimizer step ends
  double bubble_fraction = 0;  // idle share of the pipeline phase, over all ranks
  std::vector<DesStage> stages;
  std::vector<TimelineOp> ops;      // passes on the compute stream, in start order per rank
  std::vector<TimelineTask> tasks;  // everything else, in start order per rank and stream
};

// REQUIRES: stages.size() == plan.pp; microbatches >= 1. Fails (InvalidArgument) on an input
// that does not fit the plan: a slowdown list of the wrong length, a negative jitter or duration,
// an overlapped collective longer than the compute it hides under.
core::Result<DesResult> SimulateStreams(const core::PlanSpec& plan, const std::vector<StageStreams>& stages,
                                        int64_t microbatches, const DesOptions& options);
// SimulateStreams(plan, ComputeOnlyStreams(stages), ...): the pipeline alone, from StageTimes.
core::Result<DesResult> SimulatePipeline(const core::PlanSpec& plan, const std::vector<StageTimes>& stages,
                                         int64_t microbatches, const DesOptions& options);

// Timelines of the whole step: Chrome trace JSON (chrome://tracing, Perfetto; one process per
// rank, one thread per stream), an SVG Gantt chart (one row per rank, F/B/W coloured, idle time
// white, a thin sub-row per communication stream in use), and an ASCII Gantt of `width` columns
// (a line per communication stream in use under each rank).
std::string ChromeTraceJson(const DesResult& r);
std::string SvgGantt(const DesResult& r, int64_t stages);
std::string AsciiGantt(const DesResult& r, int64_t stages, int width);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_DES_H_
