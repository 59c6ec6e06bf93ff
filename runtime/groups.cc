#include "runtime/groups.h"

#include <algorithm>
#include <string>

#include "runtime/status_macros.h"

namespace meshplan::runtime {

using core::CommGroup;
using core::Result;
using core::Status;

std::vector<int64_t> GroupMembers(CommGroup g, const core::PlanSpec& p, int64_t rank) {
  const core::GroupLayout l = core::LayoutOfGroup(g, p);
  // The pipeline's ends: stage 0 and stage pp - 1 at the rank's other coordinates; a middle
  // stage's rank is alone (its pipeline digit takes the values 0 and pp - 1 only).
  if (g == CommGroup::kPpEnds) {
    const int64_t stage = StageOfRank(p, rank), stride = core::StrideOf(core::Axis::kPp, p);
    if (l.size <= 1 || (stage != 0 && stage != p.pp - 1)) return {rank};
    const int64_t base = rank - stage * stride;
    return {base, base + l.stride};
  }
  std::vector<int64_t> out;
  if (l.inner > 0 && l.inner < l.size) {
    // Two mixed-radix digits: radix l.inner at l.stride and l.size / l.inner at l.outer_stride.
    const int64_t outer = l.size / l.inner;
    const int64_t base =
        rank - ((rank / l.stride) % l.inner) * l.stride - ((rank / l.outer_stride) % outer) * l.outer_stride;
    for (int64_t i = 0; i < l.size; ++i)
      out.push_back(base + (i % l.inner) * l.stride + (i / l.inner) * l.outer_stride);
    return out;
  }
  // The group's members differ only in one mixed-radix digit of the rank: radix l.size at l.stride.
  const int64_t base = rank - ((rank / l.stride) % l.size) * l.stride;
  for (int64_t i = 0; i < l.size; ++i) out.push_back(base + i * l.stride);
  return out;
}

int64_t StageOfRank(const core::PlanSpec& p, int64_t rank) {
  return (rank / core::StrideOf(core::Axis::kPp, p)) % p.pp;
}

Result<std::unique_ptr<PlanGroups>> SplitPlanGroups(HostComm& world, const core::PlanSpec& p) {
  if (world.size() != p.gpus)
    return Status::InvalidArgument("the plan needs " + std::to_string(p.gpus) + " ranks (plan.gpus) but " +
                                   std::to_string(world.size()) + " processes were started");
  auto out = std::make_unique<PlanGroups>();
  out->view.world = &world;
  for (int g = 1; g < core::kCommGroups; ++g) {  // every group but kNone, in the same order on every rank
    const auto group = static_cast<CommGroup>(g);
    const std::vector<int64_t> members = GroupMembers(group, p, world.rank());
    const auto me = std::find(members.begin(), members.end(), world.rank()) - members.begin();
    MESHPLAN_ASSIGN_OR_RETURN(out->owned[static_cast<size_t>(g)],
                              world.Split(static_cast<int>(members.front()), static_cast<int>(me), core::Name(group)));
    out->view.groups[static_cast<size_t>(g)] = out->owned[static_cast<size_t>(g)].get();
  }
  return out;
}

}  // namespace meshplan::runtime
