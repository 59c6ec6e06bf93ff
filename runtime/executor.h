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
//   memory     the kernel the op names: *_norm -> layernorm/rmsnorm (model.norm), *_activation ->
//              gelu/swiglu (model.mlp), softmax/cross_entropy/router_topk -> softmax, each with
//              its own backward, on tensors sized from the op's bytes; any other memory op
//              (residuals, rope, embedding lookup) -> an elementwise add moving the op's bytes;
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
#include "runtime/host_comm.h"
#include "runtime/measurement.h"

namespace meshplan::runtime {

// Where the members of a plan group sit among the global ranks: core::LayoutOfGroup, the layout
// the simulator costs (Megatron-Core's regrouping for the expert axes).
// The global ranks of `rank`'s group `g`, in group order. REQUIRES: 0 <= rank < p.gpus.
std::vector<int64_t> GroupMembers(core::CommGroup g, const core::PlanSpec& p, int64_t rank);
// The pipeline stage of a global rank.
int64_t StageOfRank(const core::PlanSpec& p, int64_t rank);

// This rank's real communicators, by core::CommGroup (null: modeled), and the world (null: this
// process alone). Not owned; must outlive the call.
struct RankGroups {
  std::array<HostComm*, core::kCommGroups> groups{};
  HostComm* world = nullptr;
};

// This rank's communicator for every plan group, split from `world` (size == plan.gpus; world
// rank = global rank in placement order): members of a group share a color (their smallest
// global rank) and are keyed by their index in the group. Collective over `world`.
struct PlanGroups {
  std::array<std::unique_ptr<HostComm>, core::kCommGroups> owned;
  RankGroups view;  // points into `owned`; world = the argument
};
core::Result<std::unique_ptr<PlanGroups>> SplitPlanGroups(HostComm& world, const core::PlanSpec& p);

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

// ---- pipeline schedules across ranks
//
// The pipeline's virtual stages and every schedule's per-rank order are core/schedule.h's
// (core::PipeTopology, core::PipelineOrders), the orders sim/des.cc simulates.
using PipePass = core::PipePass;  // F, B, W (W: weight gradients split from B)
using PipeSlot = core::ScheduleSlot;

// The passes pipeline rank `stage` runs in one step, in order: core::PipelineOrders' for the
// plan's schedule. InvalidArgument naming the plan field for a pipeline the schedule cannot order
// (core::CheckPipelineSchedule) or a stage outside [0, pp).
core::Result<std::vector<PipeSlot>> PipelineOrder(const core::PlanSpec& p, int64_t stage);

// The message a pass sends: the activation of virtual stage `from_vstage` (F) or the input
// gradient it passes back (B), for one microbatch.
struct PipeMessage {
  bool gradient = false;
  int64_t from_vstage = 0;
  int64_t microbatch = 0;
  friend bool operator==(const PipeMessage&, const PipeMessage&) = default;
};

// One step of a rank's pipeline program: run a pass, or receive / send a message from / to the
// pipeline rank `peer` (its rank in the pipeline group = its stage).
struct PipeAction {
  enum Kind { kRecv, kRun, kSend } kind = kRun;
  PipeSlot slot;        // kRun: the pass; kRecv, kSend: the pass the message is received for / sent by
  int64_t peer = -1;    // kRecv, kSend
  PipeMessage message;  // kRecv, kSend
};

// PipelineOrder(p, stage) with its messages: each pass's sends follow it (sends are buffered:
// they never block); its receives precede it, and receive in the order the peer sends, so a
// message the peer sent earlier than the one a pass needs is received (and held) first. Then, on
// every pair of ranks, the sends of one and the receives of the other are the same sequence,
// which is what untagged point-to-point channels (MPI's non-overtaking order, NCCL) need; and a
// program whose passes follow a valid timeline cannot deadlock (a receive waits only for sends
// its pass depends on or that precede them). Errors as PipelineOrder.
core::Result<std::vector<PipeAction>> PipelineProgram(const core::PlanSpec& p, int64_t stage);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_EXECUTOR_H_
