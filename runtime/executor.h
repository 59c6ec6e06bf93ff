// The executor: runs the ops of a plan's StepGraph (core::BuildStepGraph, the same ops the
// simulator costs) for one rank on a Backend, with real tensors of each op's shapes (random
// data, never zeros), forward and backward math, in the schedule's order, and measures every op.
//
// What one rank runs per step (its pipeline stage's layers, core::StageLayers):
//   for each microbatch, in the schedule's order of forward (F) and backward (B) passes:
//     F: embedding (first stage), each layer's forward ops, head (last stage);
//     B: in reverse, each list's recomputed forward ops, then its backward ops;
//     pipeline p2p: receive before and send after each F and B (real only in MPI runs);
//   then once per step: each list's kStep ops (gradient synchronisation, the optimizer).
// Per op kind:
//   gemm       C = A B (forward, recompute), dA = dC B^T (backward_input), dB = A^T dC
//              (backward_weight), rank-3 batched for local experts;
//   attention  causal attention forward; backward (dQ, dK, dV) from the saved forward;
//   memory     the kernel the op names: *_norm -> layernorm/rmsnorm (model.norm), *_activation ->
//              gelu/swiglu (model.mlp), softmax/cross_entropy/router_topk -> softmax, each with
//              its own backward, on tensors sized from the op's bytes; any other memory op
//              (residuals, rope, embedding lookup) -> an elementwise add moving the op's bytes;
//   optimizer  AdamW on op.bytes / 28 fp32 parameters (the cpu kernel moves 28 bytes each);
//   collective on the rank's real group for the op's CommGroup when the caller supplies one
//              (size > 1); otherwise "modeled": not executed, its time the alpha-beta prediction
//              (core::CollectiveTime, default Profile) on the group's span of the plan's cluster.
// Tensors are allocated once per distinct op shape and reused across layers and microbatches,
// so peak memory is the kernels' working set, not a training run's footprint (weights,
// gradients and activations of every layer: `meshplan report` estimates that).
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
#include "core/status.h"
#include "core/step_graph.h"
#include "runtime/backend.h"
#include "runtime/host_comm.h"
#include "runtime/measurement.h"

namespace meshplan::runtime {

// Where the members of a plan group sit among the global ranks (placement order, innermost
// first): `size` members, `stride` ranks apart (Megatron-Core's regrouping for the expert axes).
struct GroupLayout {
  int64_t size = 1;
  int64_t stride = 1;
};
GroupLayout LayoutOf(core::CommGroup g, const core::PlanSpec& p);
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
};

// Runs options.warmup_steps + options.steps steps of `options.rank`'s ops and returns the
// measurement (per-op means over the timed steps). InvalidArgument for a rank outside the plan
// or a schedule that a real pipeline cannot run yet (MPI runs with pp > 1 take gpipe or 1f1b);
// the backend's Status if a kernel fails. Collective calls on real groups are collective over
// those groups: every member must call ExecuteStep with the same scenario and options.
core::Result<Measurement> ExecuteStep(Backend& backend, const core::Scenario& scenario, const ExecutorOptions& options,
                                      const RankGroups& groups);

// The order of pipeline passes a stage runs in one step: true = forward of that microbatch,
// false = backward. GPipe: all F then all B; 1F1B (Narayanan 2021 §2.2, Megatron-LM's
// schedules.py): min(pp - stage - 1, m) warm-up forwards, then F/B pairs, then the remaining Bs.
// Other schedules run in 1F1B order (valid for one process; real pipelines reject them).
std::vector<std::pair<bool, int64_t>> StagePassOrder(core::Schedule schedule, int64_t pp, int64_t stage,
                                                     int64_t microbatches);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_EXECUTOR_H_
