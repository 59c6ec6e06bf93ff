// The simulator and the runtime run the same pipeline order: for every schedule, the per-rank
// sequence of F, B and W passes the discrete-event simulator places in time (sim/des.cc, with
// uneven per-rank costs, sends, a straggler or jitter) equals the order the executor runs
// (runtime::PipelineOrder), pass for pass, at pp 2, 4 and 8.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/executor.h"
#include "sim/des.h"

namespace meshplan {
namespace {

core::PlanSpec PipePlan(core::Schedule schedule, int64_t pp, int64_t microbatches, int64_t vpp) {
  core::PlanSpec p;
  p.pp = pp;
  p.gpus = pp;
  p.vpp = vpp;
  p.schedule = schedule;
  p.micro_batch = 1;
  p.global_batch = microbatches;
  return p;
}

// Rank r: F = 1 + 0.1 r, B = 2, W = 0.7 (inside B where the schedule does not split it), one send
// 0.05, a TP collective half exposed.
std::vector<sim::StageStreams> Costs(int64_t pp) {
  std::vector<sim::StageStreams> out;
  for (int64_t r = 0; r < pp; ++r) {
    sim::StageStreams s;
    s.forward = {.compute_s = 1 + 0.1 * static_cast<double>(r), .tp_exposed_s = 0.1, .tp_overlapped_s = 0.1};
    s.backward_input = {.compute_s = 2, .tp_exposed_s = 0.2};
    s.backward_weight = {.compute_s = 0.7};
    s.p2p_s = 0.05;
    out.push_back(s);
  }
  return out;
}

std::string Describe(const std::vector<core::ScheduleSlot>& order) {
  std::string out;
  for (const core::ScheduleSlot& s : order)
    out += std::string(core::Name(s.pass)) + std::to_string(s.chunk) + "." + std::to_string(s.microbatch) + " ";
  return out;
}

TEST(ScheduleAgreementTest, TheSimulatorPlacesExactlyTheOrderTheRuntimeRuns) {
  struct Case {
    core::Schedule schedule;
    int64_t vpp;
    int64_t group_per_pp = 0;  // interleaved: microbatch groups of this many times pp (plan.vpp_group)
  };
  int compared = 0;
  for (const Case c : {Case{core::Schedule::kGpipe, 1}, Case{core::Schedule::k1F1B, 1},
                       Case{core::Schedule::kInterleaved, 2}, Case{core::Schedule::kInterleaved, 2, 2},
                       Case{core::Schedule::kZeroBubble, 1}, Case{core::Schedule::kDualPipe, 1}}) {
    for (int64_t pp : {2, 4, 8}) {
      for (int64_t m : {2 * pp, 4 * pp}) {
        core::PlanSpec plan = PipePlan(c.schedule, pp, m, c.vpp);
        plan.vpp_group = c.group_per_pp * pp;  // 2pp: one group at m = 2pp, two at 4pp
        sim::DesOptions straggler, jitter;
        straggler.stage_slowdown.assign(static_cast<size_t>(pp), 1.0);
        straggler.stage_slowdown[static_cast<size_t>(pp / 2)] = 1.5;
        jitter.jitter = 0.2;
        jitter.seed = 3;
        for (const sim::DesOptions& options : {sim::DesOptions{}, straggler, jitter}) {
          auto des = sim::SimulateStreams(plan, Costs(pp), m, options);
          ASSERT_TRUE(des.ok()) << des.status().ToString();
          std::vector<std::vector<core::ScheduleSlot>> simulated(static_cast<size_t>(pp));
          for (const sim::TimelineOp& op : des->ops)  // per rank in start order
            simulated[static_cast<size_t>(op.stage)].push_back({op.kind, op.chunk, op.microbatch});
          for (int64_t r = 0; r < pp; ++r) {
            auto runs = runtime::PipelineOrder(plan, r);
            ASSERT_TRUE(runs.ok()) << runs.status().ToString();
            EXPECT_EQ(simulated[static_cast<size_t>(r)], *runs)
                << core::Name(c.schedule) << " pp " << pp << " m " << m << " rank " << r << "\n  simulated "
                << Describe(simulated[static_cast<size_t>(r)]) << "\n  runtime   " << Describe(*runs);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 6 * (2 + 4 + 8) * 2 * 3);
}

}  // namespace
}  // namespace meshplan
