// A plan's communicators on real ranks: which global ranks form each StepGraph group
// (core::LayoutOfGroup, the layout the simulator costs) and splitting them from the world.
// GroupMembers and StageOfRank are pure; SplitPlanGroups is collective over the world.
#ifndef MESHPLAN_RUNTIME_GROUPS_H_
#define MESHPLAN_RUNTIME_GROUPS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/specs.h"
#include "core/status.h"
#include "core/step_graph.h"
#include "runtime/host_comm.h"

namespace meshplan::runtime {

// Where the members of a plan group sit among the global ranks: core::LayoutOfGroup, the layout
// the simulator costs (Megatron-Core's regrouping for the expert axes).
// The global ranks of `rank`'s group `g`, in group order; for kPpEnds on a middle stage, the
// rank alone. REQUIRES: 0 <= rank < p.gpus.
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

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_GROUPS_H_
