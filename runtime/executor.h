// The executor: runs the ops of a plan's StepGraph (core::BuildStepGraph, the same ops the
// simulator costs) for one rank on a Backend, with real tensors of each op's shapes (random
// data, never zeros), forward and backward math, in the schedule's order, and measures every op.
//
// What one rank runs per step (its pipeline stage's model chunks, core::ForEachStageChunk):
//   the passes of PipelineProgram(plan, stage), in order:
//     F (chunk, microbatch): embedding (first chunk), each layer's forward ops, head (last chunk);
//     B: in reverse, each list's recomputed forward ops, then its backward ops (zero-bubble and
//        DualPipe: the input-gradient ops only);
//     W (zero-bubble, DualPipe): in reverse, each list's weight-gradient ops;
//     pipeline p2p: the program's receives and sends between the passes (real only in MPI runs);
//   then once per step: each list instance's kStep ops (gradient synchronisation, the optimizer).
// Per op kind:
//   gemm       C = A B (forward, recompute), dA = dC B^T (backward_input), dB = A^T dC
//              (backward_weight), rank-3 batched for local experts;
//   attention  causal attention forward; backward (dQ, dK, dV) from the saved forward;
//   memory     the kernel of what the op computes (core::Op::mem_op): norm -> layernorm/rmsnorm
//              (model.norm), activation -> gelu/swiglu (model.mlp), the attention scores' softmax,
//              the router and the cross entropy -> softmax, each with its own backward, on tensors
//              sized from the op's bytes; any other memory op (residuals, rope, embedding lookup,
//              permutes, FP8 casts) -> an elementwise add moving the op's bytes;
//   optimizer  AdamW on this rank's optimizer states (below); on op.bytes / 28 fp32 parameters
//              of its own when the states cannot feed the kernel (SGD, 8-bit Adam, offload);
//   collective on the rank's real group for the op's CommGroup when the caller supplies one
//              (size > 1); otherwise "modeled": not executed, its time the alpha-beta prediction
//              (core::CollectiveTime, default Profile) on the group's span of the plan's cluster.
// Memory: op tensors are allocated once per distinct op shape and reused across layers and
// microbatches (the kernels' working set). Unless options.hold_training_state is false, the rank
// also holds, for the whole run, the training state core::EstimateMemory says its stage holds:
// weights, gradients, master weights and optimizer moments (the optimizer op updates them), and
// one activation buffer per in-flight (chunk, microbatch), taken at its F and given back at its
// B (W when split), sized from core::LayerActivationBytes; the buffers are pooled per size as a
// caching allocator does, so the pool is as large as the schedule's most in-flight microbatches.
// Their contents are not the layers' tensors (the ops run on their own buffers): they occupy the
// bytes a training run would. Measurement::step->memory reports both sides.
//
// Step time: the wall time of the step's executed ops (device events around each op and around
// the step) plus the predicted time of modeled collectives that would be exposed (not
// overlappable). MFU = this rank's model FLOPs (GEMM and attention ops, recompute excluded, causal
// attention counted as core::Op::Flops does) / (step time x DevicePeak).
// Not thread-safe (the Backend is not). REQUIRES: the scenario passed ValidatePlan.
#ifndef MESHPLAN_RUNTIME_EXECUTOR_H_
#define MESHPLAN_RUNTIME_EXECUTOR_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/presets.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "core/status.h"
#include "core/step_graph.h"
#include "runtime/backend.h"
#include "runtime/groups.h"
#include "runtime/host_comm.h"
#include "runtime/measurement.h"
#include "runtime/pipeline.h"

namespace meshplan::runtime {

struct ExecutorOptions {
  int warmup_steps = 1;
  int steps = 3;
  int64_t rank = 0;  // global rank whose ops run (rank-slice mode: any rank)
  uint64_t seed = 1;
  std::optional<DevicePeak> peak;       // null: cpu measures a GEMM ceiling; cuda uses the GPU preset
  core::Profile profile;                // communication efficiencies for modeled collectives
  std::string mode = "single_process";  // recorded in the measurement
  // Hold the rank's model states and in-flight activations (the training footprint); false: the
  // op buffers alone (the kernels' working set), for rank slices too large for this machine.
  bool hold_training_state = true;
};

// Runs options.warmup_steps + options.steps steps of `options.rank`'s ops and returns the
// measurement (per-op means over the timed steps). InvalidArgument for a rank outside the plan
// or a pipeline the schedule cannot order (PipelineProgram); Unavailable (naming
// hold_training_state) when the training state does not fit; the backend's Status if a kernel
// fails. Collective calls on real groups are collective over those groups: every member must
// call ExecuteStep with the same scenario and options.
core::Result<Measurement> ExecuteStep(Backend& backend, const core::Scenario& scenario, const ExecutorOptions& options,
                                      const RankGroups& groups);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_EXECUTOR_H_
