// Pipeline schedules (core/schedule.h): each order by hand from its source, and the properties
// every order must have (each pass once, after its predecessor; the schedule's memory bound).
#include "core/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace meshplan::core {
namespace {

constexpr PipePass F = PipePass::kForward, B = PipePass::kBackward, W = PipePass::kWeight;
using Order = std::vector<ScheduleSlot>;

TEST(ScheduleTest, OneFOneBWarmsUpThenAlternates) {
  // Megatron's 1F1B on rank 0 of 3 with 4 microbatches: p - 0 - 1 = 2 warm-up forwards, then
  // one F / one B.
  EXPECT_EQ(StageOrder(Schedule::k1F1B, 3, 1, 0, 4),
            (Order{{F, 0, 0}, {F, 0, 1}, {F, 0, 2}, {B, 0, 0}, {F, 0, 3}, {B, 0, 1}, {B, 0, 2}, {B, 0, 3}}));
  // Narayanan 2021 §2.2: the last stage (2 of 3) has no warm-up; GPipe runs all F, then all B;
  // pp = 1 alternates.
  EXPECT_EQ(StageOrder(Schedule::k1F1B, 3, 1, 2, 2), (Order{{F, 0, 0}, {B, 0, 0}, {F, 0, 1}, {B, 0, 1}}));
  EXPECT_EQ(StageOrder(Schedule::kGpipe, 2, 1, 0, 2), (Order{{F, 0, 0}, {F, 0, 1}, {B, 0, 0}, {B, 0, 1}}));
  EXPECT_EQ(StageOrder(Schedule::k1F1B, 1, 1, 0, 2), (Order{{F, 0, 0}, {B, 0, 0}, {F, 0, 1}, {B, 0, 1}}));
}

TEST(ScheduleTest, InterleavedVisitsEveryChunkAndMicrobatchOnce) {
  // p = 2, v = 2, m = 4: each of the 2 x 4 (chunk, microbatch) pairs runs forward and backward once;
  // virtual microbatch 2 is chunk 1 of microbatch 0.
  const auto order = StageOrder(Schedule::kInterleaved, 2, 2, 0, 4);
  ASSERT_EQ(order.size(), 16u);
  EXPECT_EQ(order[2], (ScheduleSlot{F, 1, 0}));
  int seen[2][2][4] = {};
  for (const auto& s : order) ++seen[s.pass == F ? 0 : 1][s.chunk][s.microbatch];
  for (auto& f : seen)
    for (auto& c : f)
      for (int n : c) EXPECT_EQ(n, 1);
}

TEST(ScheduleTest, InterleavedRunsMegatronsMicrobatchGroups) {
  // Megatron-Core's tunable schedule (schedules.py get_schedule_table, get_pp_rank_microbatches
  // at d98e8a64), as its CI test gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap runs it: pp 4, 3
  // chunks, 5 microbatches in one group of 5 (--microbatch-group-size-per-virtual-pipeline-stage
  // 5). The table is chunk 0 on microbatches 0-4, chunk 1 on 0-4, chunk 2 on 0-4. Rank 3 warms up
  // with 2(4 - 3 - 1) + (3 - 1) x 5 = 10 forwards, then five F/B pairs, then ten Bs; a backward
  // runs the table's microbatch on the mirrored chunk, 2 - c.
  const Order r3 = StageOrder(Schedule::kInterleaved, 4, 3, 3, 5, 5);
  ASSERT_EQ(r3.size(), 30u);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(r3[k], (ScheduleSlot{F, k / 5, k % 5})) << k;
  EXPECT_EQ(r3[10], (ScheduleSlot{F, 2, 0}));  // virtual microbatch 10
  EXPECT_EQ(r3[11], (ScheduleSlot{B, 2, 0}));  // backward 0: microbatch 0, chunk 2 - 0
  EXPECT_EQ(r3[19], (ScheduleSlot{B, 2, 4}));
  EXPECT_EQ(r3[20], (ScheduleSlot{B, 1, 0}));  // the drain: backward 5, microbatch 0 of chunk 1
  EXPECT_EQ(r3[29], (ScheduleSlot{B, 0, 4}));
  // Rank 0 warms up with 6 + 10 = 16 >= 15: every forward, then every backward.
  const Order r0 = StageOrder(Schedule::kInterleaved, 4, 3, 0, 5, 5);
  for (int k = 0; k < 15; ++k) EXPECT_EQ(r0[k].pass, F) << k;
  // A group of pp over a multiple of pp is the classic interleaving: pp 2, 2 chunks, 4 microbatches.
  for (int64_t r = 0; r < 2; ++r)
    EXPECT_EQ(StageOrder(Schedule::kInterleaved, 2, 2, r, 4, 2), StageOrder(Schedule::kInterleaved, 2, 2, r, 4));
  // Groups of 3 over 8 microbatches at pp 2: [0, 3), [3, 6), then the last group [6, 8) of 2 >= pp.
  // Rank 1 warms up with 0 + (2 - 1) x 3 = 3: chunk 0 of microbatches 0-2.
  const Order g = StageOrder(Schedule::kInterleaved, 2, 2, 1, 8, 3);
  EXPECT_EQ(g[0], (ScheduleSlot{F, 0, 0}));
  EXPECT_EQ(g[2], (ScheduleSlot{F, 0, 2}));
  EXPECT_EQ(g[3], (ScheduleSlot{F, 1, 0}));  // virtual microbatch 3: chunk 1 of the first group
  EXPECT_EQ(g[4], (ScheduleSlot{B, 1, 0}));
  ASSERT_TRUE(PipelineOrders(Schedule::kInterleaved, 2, 2, 8, 3).ok());
}

TEST(ScheduleTest, DualPipeFollowsDeepSeeksPhases) {
  // pp = 2, m = 4 by hand from dualpipe.py's DualPipe.step: half_rank 0 on both ranks, 2
  // microbatches per direction (direction 0: 0, 1; direction 1: 2, 3). Rank 0 (first half: phase
  // 0 is direction 0): step 2 F(0) F(1); step 4, once: F(0), B(1) with its W, F(1), B(0) with its
  // W; step 6, once: B(1) without zero bubble (half_rank even turns it on after), then B(0) with
  // zero bubble, its W deferred; step 8: that W. Rank 1 (second half: phase 0 is direction 1):
  // the same phases with the directions swapped.
  auto orders = PipelineOrders(Schedule::kDualPipe, 2, 1, 4);
  ASSERT_TRUE(orders.ok()) << orders.status().ToString();
  EXPECT_EQ((*orders)[0], (Order{{F, 0, 0},
                                 {F, 1, 2},
                                 {F, 0, 1},
                                 {B, 1, 2},
                                 {W, 1, 2},
                                 {F, 1, 3},
                                 {B, 0, 0},
                                 {W, 0, 0},
                                 {B, 1, 3},
                                 {W, 1, 3},
                                 {B, 0, 1},
                                 {W, 0, 1}}));
  EXPECT_EQ((*orders)[1], (Order{{F, 1, 2},
                                 {F, 0, 0},
                                 {F, 1, 3},
                                 {B, 0, 0},
                                 {W, 0, 0},
                                 {F, 0, 1},
                                 {B, 1, 2},
                                 {W, 1, 2},
                                 {B, 0, 1},
                                 {W, 0, 1},
                                 {B, 1, 3},
                                 {W, 1, 3}}));
}

TEST(ScheduleTest, ZeroBubbleDelaysEachRanksWeightGradientsByItsIndex) {
  // ZB-H1 (Qi et al. 2024, Fig. 3), pp = 2, m = 4: rank 1 runs W of microbatch k - 1 after B k.
  auto orders = PipelineOrders(Schedule::kZeroBubble, 2, 1, 4);
  ASSERT_TRUE(orders.ok());
  EXPECT_EQ((*orders)[1], (Order{{F, 0, 0},
                                 {B, 0, 0},
                                 {F, 0, 1},
                                 {B, 0, 1},
                                 {W, 0, 0},
                                 {F, 0, 2},
                                 {B, 0, 2},
                                 {W, 0, 1},
                                 {F, 0, 3},
                                 {B, 0, 3},
                                 {W, 0, 2},
                                 {W, 0, 3}}));
}

// Most microbatches of a rank through F but not yet through the pass that frees their
// activations (W where the schedule splits it off, else B).
int64_t MostInFlight(const Order& order, bool split) {
  int64_t live = 0, most = 0;
  for (const ScheduleSlot& s : order) {
    if (s.pass == F) most = std::max(most, ++live);
    if (s.pass == (split ? W : B)) --live;
  }
  return most;
}

TEST(ScheduleTest, EveryOrderRunsEachPassOnceAfterItsPredecessorWithinItsMemoryBound) {
  // Each (pass, chunk, microbatch) once; B after its F; W after its B. Activations in flight per
  // rank: 1F1B at most pp; ZB-H1 pp (its first stage's 1F1B peak); DualPipe pp + 1 (DeepSeek-V3
  // Table 2); GPipe all m.
  for (Schedule s :
       {Schedule::kGpipe, Schedule::k1F1B, Schedule::kInterleaved, Schedule::kZeroBubble, Schedule::kDualPipe}) {
    for (int64_t pp : {2, 4, 8}) {
      for (int64_t m : {2 * pp, 4 * pp, 6 * pp}) {
        const int64_t vpp = s == Schedule::kInterleaved ? 2 : 1;
        auto orders = PipelineOrders(s, pp, vpp, m);
        ASSERT_TRUE(orders.ok()) << orders.status().ToString();
        const PipeTopology topo(s, pp, vpp, m);
        const bool split = SplitsWeightGradients(s);
        for (int64_t r = 0; r < pp; ++r) {
          const Order& order = (*orders)[static_cast<size_t>(r)];
          std::set<std::tuple<PipePass, int64_t, int64_t>> seen;
          for (const ScheduleSlot& x : order) {
            EXPECT_TRUE(seen.insert({x.pass, x.chunk, x.microbatch}).second) << Name(s) << " rank " << r;
            if (x.pass != F) {
              const PipePass before = x.pass == B ? F : B;
              EXPECT_TRUE(seen.contains({before, x.chunk, x.microbatch})) << Name(s) << " rank " << r;
            }
            const int64_t vs = topo.VStage(r, x.chunk);
            EXPECT_GE(x.microbatch, topo.FirstMb(vs));
            EXPECT_LT(x.microbatch, topo.FirstMb(vs) + topo.Mbs(vs));
            if (!split) EXPECT_NE(x.pass, W) << Name(s);
          }
          int64_t passes = 0;  // every microbatch of every chunk the rank holds
          for (int64_t c = 0; c < topo.chunks; ++c) passes += topo.Mbs(topo.VStage(r, c)) * (split ? 3 : 2);
          EXPECT_EQ(static_cast<int64_t>(order.size()), passes) << Name(s) << " pp " << pp << " rank " << r;
          const int64_t bound = s == Schedule::kGpipe ? m : s == Schedule::kDualPipe ? pp + 1 : pp;
          if (s != Schedule::kInterleaved) {
            EXPECT_LE(MostInFlight(order, split), bound) << Name(s) << " pp " << pp << " m " << m << " rank " << r;
          }
        }
      }
    }
  }
}

TEST(ScheduleTest, PipelinesAScheduleCannotOrderAreRefusedNamingTheField) {
  auto msg = [](Schedule s, int64_t pp, int64_t vpp, int64_t m) {
    return CheckPipelineSchedule(s, pp, vpp, m).message();
  };
  EXPECT_NE(msg(Schedule::kDualPipe, 3, 1, 12).find("plan.pp: dualpipe needs an even pp"), std::string::npos);
  EXPECT_NE(msg(Schedule::kDualPipe, 4, 1, 6).find("plan.global_batch: dualpipe needs an even number"),
            std::string::npos);
  EXPECT_NE(msg(Schedule::kDualPipe, 4, 1, 9).find("at least 2*pp=8"), std::string::npos);
  EXPECT_NE(msg(Schedule::kInterleaved, 4, 2, 6).find("plan.global_batch: interleaved needs"), std::string::npos);
  EXPECT_NE(msg(Schedule::k1F1B, 2, 2, 4).find("plan.vpp"), std::string::npos);
  // Megatron-Core's microbatch groups: N in [pp, m], a last group of 0 or at least pp.
  auto grouped = [](int64_t pp, int64_t m, int64_t n) {
    return CheckPipelineSchedule(Schedule::kInterleaved, pp, 3, m, n).message();
  };
  EXPECT_TRUE(CheckPipelineSchedule(Schedule::kInterleaved, 4, 3, 5, 5).ok());
  EXPECT_NE(grouped(4, 5, 4).find("plan.vpp_group: leaves a last group of 1"), std::string::npos);
  EXPECT_NE(grouped(4, 5, 3).find("plan.vpp_group: must range from pp=4"), std::string::npos);
  EXPECT_NE(grouped(4, 5, 6).find("plan.vpp_group: must range from pp=4"), std::string::npos);
  EXPECT_NE(CheckPipelineSchedule(Schedule::k1F1B, 4, 1, 5, 5).message().find("plan.vpp_group: needs"),
            std::string::npos);
  EXPECT_TRUE(CheckPipelineSchedule(Schedule::kDualPipe, 4, 1, 8).ok());
  EXPECT_FALSE(PipelineOrders(Schedule::k1F1B, 2, 1, 0).ok());
}

}  // namespace
}  // namespace meshplan::core
