// Pipeline programs across ranks: each rank's passes in the schedule's order (core/schedule.h,
// the order the simulator places in time) with the point-to-point messages between them. Pure.
#ifndef MESHPLAN_RUNTIME_PIPELINE_H_
#define MESHPLAN_RUNTIME_PIPELINE_H_

#include <cstdint>
#include <vector>

#include "core/schedule.h"
#include "core/specs.h"
#include "core/status.h"

namespace meshplan::runtime {

// The pipeline's virtual stages and every schedule's per-rank order are core/schedule.h's
// (core::PipeTopology, core::PipelineOrders), the orders sim/des.cc simulates.
using PipePass = core::PipePass;  // F, B, W (W: weight gradients split from B)
using PipeSlot = core::ScheduleSlot;

// The plan's pipeline topology (core::PipeTopology); m = 0 for a plan without a valid
// microbatch count (PipelineOrder refuses it).
core::PipeTopology TopologyOf(const core::PlanSpec& p);

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

#endif  // MESHPLAN_RUNTIME_PIPELINE_H_
