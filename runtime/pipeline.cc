#include "runtime/pipeline.h"

#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "runtime/status_macros.h"

namespace meshplan::runtime {

using core::Result;
using core::Status;

core::PipeTopology TopologyOf(const core::PlanSpec& p) {
  return {p.schedule, p.pp, p.vpp, p.micro_batch > 0 && p.dp > 0 ? p.Microbatches() : 0};
}

namespace {

Status CheckPipeline(const core::PlanSpec& p, int64_t stage) {
  if (p.micro_batch < 1 || p.dp < 1)
    return Status::InvalidArgument("pipeline schedule: plan.micro_batch: micro_batch and dp must be >= 1");
  MESHPLAN_RETURN_IF_ERROR(core::CheckPipelineSchedule(p.schedule, p.pp, p.vpp, p.Microbatches(), p.vpp_group));
  if (stage < 0 || stage >= p.pp)
    return Status::InvalidArgument("pipeline schedule: plan.pp: stage " + std::to_string(stage) + " is outside [0, " +
                                   std::to_string(p.pp) + ")");
  return Status::Ok();
}

Result<std::vector<std::vector<PipeSlot>>> AllOrders(const core::PlanSpec& p) {
  return core::PipelineOrders(p.schedule, p.pp, p.vpp, p.Microbatches(), p.vpp_group);
}

}  // namespace

Result<std::vector<PipeSlot>> PipelineOrder(const core::PlanSpec& p, int64_t stage) {
  MESHPLAN_RETURN_IF_ERROR(CheckPipeline(p, stage));
  MESHPLAN_ASSIGN_OR_RETURN(auto all, AllOrders(p));
  return std::move(all[static_cast<size_t>(stage)]);
}

Result<std::vector<PipeAction>> PipelineProgram(const core::PlanSpec& p, int64_t stage) {
  MESHPLAN_RETURN_IF_ERROR(CheckPipeline(p, stage));
  const core::PipeTopology vp = TopologyOf(p);
  MESHPLAN_ASSIGN_OR_RETURN(const auto orders, AllOrders(p));
  // The message a pass of rank r sends, and to whom (-1: none, or the same rank).
  auto outgoing = [&](int64_t r, const PipeSlot& s, PipeMessage* msg) -> int64_t {
    const int64_t vs = vp.VStage(r, s.chunk);
    const int64_t to = s.pass == PipePass::kForward ? vp.Next(vs) : s.pass == PipePass::kBackward ? vp.Prev(vs) : -1;
    if (to < 0 || vp.Rank(to) == r) return -1;
    *msg = {s.pass == PipePass::kBackward, vs, s.microbatch};
    return vp.Rank(to);
  };
  auto incoming = [&](int64_t r, const PipeSlot& s, PipeMessage* msg) -> int64_t {
    const int64_t vs = vp.VStage(r, s.chunk);
    const int64_t from = s.pass == PipePass::kForward ? vp.Prev(vs) : s.pass == PipePass::kBackward ? vp.Next(vs) : -1;
    if (from < 0 || vp.Rank(from) == r) return -1;
    *msg = {s.pass == PipePass::kBackward, from, s.microbatch};
    return vp.Rank(from);
  };
  // What each peer sends this rank, in the peer's order.
  std::vector<std::vector<PipeMessage>> queue(static_cast<size_t>(p.pp));
  for (int64_t q = 0; q < p.pp; ++q) {
    if (q == stage) continue;
    for (const PipeSlot& s : orders[static_cast<size_t>(q)]) {
      PipeMessage msg;
      if (outgoing(q, s, &msg) == stage) queue[static_cast<size_t>(q)].push_back(msg);
    }
  }
  std::vector<size_t> pos(static_cast<size_t>(p.pp), 0);
  auto key = [](const PipeMessage& m) { return std::tuple{m.gradient, m.from_vstage, m.microbatch}; };
  std::set<std::tuple<bool, int64_t, int64_t>> received;
  std::vector<PipeAction> out;
  for (const PipeSlot& s : orders[static_cast<size_t>(stage)]) {
    PipeMessage need;
    if (const int64_t from = incoming(stage, s, &need); from >= 0 && !received.contains(key(need))) {
      const auto& q = queue[static_cast<size_t>(from)];
      auto& i = pos[static_cast<size_t>(from)];
      while (true) {
        if (i == q.size())
          return Status::Internal(std::string("pipeline program: stage ") + std::to_string(stage) + "'s " +
                                  Name(s.pass) + " of microbatch " + std::to_string(s.microbatch) +
                                  " waits for a message stage " + std::to_string(from) + " never sends (" +
                                  core::Name(p.schedule) + ")");
        const PipeMessage msg = q[i++];
        out.push_back({PipeAction::kRecv, s, from, msg});
        received.insert(key(msg));
        if (msg == need) break;
      }
    }
    out.push_back({PipeAction::kRun, s, -1, {}});
    PipeMessage msg;
    if (const int64_t to = outgoing(stage, s, &msg); to >= 0) out.push_back({PipeAction::kSend, s, to, msg});
  }
  return out;
}

}  // namespace meshplan::runtime
