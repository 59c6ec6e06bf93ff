// The discrete-event pipeline simulator against the closed forms of the analytic model.
#include "sim/des.h"

#include <gtest/gtest.h>

namespace meshplan::sim {
namespace {

std::vector<StageTimes> Uniform(int64_t p, double f, double b, double w) {
  StageTimes t;
  t.forward_s = f;
  t.backward_input_s = b;
  t.backward_weight_s = w;
  return std::vector<StageTimes>(static_cast<size_t>(p), t);
}

core::PlanSpec Plan(core::Schedule s, int64_t pp, int64_t vpp = 1) {
  core::PlanSpec p;
  p.pp = pp;
  p.vpp = vpp;
  p.schedule = s;
  return p;
}

double Des(core::Schedule s, int64_t pp, int64_t m, int64_t vpp = 1, double f = 1, double b = 1, double w = 1) {
  auto r = SimulatePipeline(Plan(s, pp, vpp), Uniform(pp, f, b, w), m, DesOptions{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->pipeline_s : 0;
}

double Analytic(core::Schedule s, int64_t pp, int64_t m, int64_t vpp = 1, double f = 1, double b = 1, double w = 1) {
  const PipelineTime t = SchedulePipeline(s, Uniform(pp, f, b, w), m, vpp);
  return t.work_s + t.bubble_s;
}

TEST(DesTest, OneFOneBAndGpipeEqualTheClosedFormExactly) {
  // (m + p - 1) x (F + B + W) for uniform stages.
  for (auto s : {core::Schedule::k1F1B, core::Schedule::kGpipe}) {
    for (int64_t p : {2, 4, 8}) {
      for (int64_t m : {1, 4, 16, 33}) {
        EXPECT_NEAR(Des(s, p, m), static_cast<double>(m + p - 1) * 3, 1e-9) << p << " " << m;
        EXPECT_NEAR(Des(s, p, m), Analytic(s, p, m), 1e-9);
      }
    }
  }
}

TEST(DesTest, InterleavedMatchesTheClosedFormWithinOnePercent) {
  // m x t + (p - 1) t / v (Narayanan 2021 §2.2.2); Megatron's order needs m % p == 0.
  for (int64_t p : {2, 4, 8}) {
    for (int64_t v : {2, 3, 4}) {
      for (int64_t m : {p, 4 * p, 16 * p}) {
        const double des = Des(core::Schedule::kInterleaved, p, m, v), ana = Analytic(core::Schedule::kInterleaved, p, m, v);
        EXPECT_NEAR(des, ana, 0.01 * ana) << "p " << p << " v " << v << " m " << m;
      }
    }
  }
}

TEST(DesTest, ZeroBubbleMatchesTheClosedFormWithinOnePercentAndBeatsOneFOneB) {
  // ZB-H1 with F = B = W (Qi et al. 2023): m(F+B+W) + (p-1)(F+B-W).
  for (int64_t p : {4, 8}) {
    for (int64_t m : {2 * p, 8 * p}) {
      const double des = Des(core::Schedule::kZeroBubble, p, m), ana = Analytic(core::Schedule::kZeroBubble, p, m);
      EXPECT_NEAR(des, ana, 0.01 * ana) << p << " " << m;
      EXPECT_LT(des, Des(core::Schedule::k1F1B, p, m));
    }
  }
}

TEST(DesTest, DualPipeMatchesTheClosedFormWithinOnePercent) {
  // The DeepSeek-V3 table's bubble assumes their hand-made order; the list-scheduled
  // bidirectional pipeline reaches it exactly for p = 4 and comes within 1% from m = 8p at p = 8
  // (at m = 2p it is 2% longer: 26 vs 25.5 time units with F = B = W = 1).
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {4, 32}, {8, 64}}) {
    {
      const double des = Des(core::Schedule::kDualPipe, p, m), ana = Analytic(core::Schedule::kDualPipe, p, m);
      EXPECT_NEAR(des, ana, 0.01 * ana) << p << " " << m;
    }
  }
}

TEST(DesTest, BubbleFractionOfOneFOneB) {
  // (p-1)/(m+p-1) of every rank's time is idle.
  auto r = SimulatePipeline(Plan(core::Schedule::k1F1B, 8), Uniform(8, 1, 2, 0), 24, DesOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->bubble_fraction, 7.0 / 31.0, 1e-12);
  for (const auto& st : r->stages) EXPECT_NEAR(st.idle_s, 7 * 3.0, 1e-9);
}

// Largest number of microbatches whose forward has finished and backward has not, on rank 0.
int64_t PeakInFlight(const DesResult& r) {
  std::vector<std::pair<double, int>> events;
  for (const auto& op : r.ops) {
    if (op.stage != 0) continue;
    if (op.kind == PipeOpKind::kForward) events.push_back({op.end_s, +1});
    if (op.kind == PipeOpKind::kBackward) events.push_back({op.end_s, -1});
  }
  std::sort(events.begin(), events.end());
  int64_t cur = 0, peak = 0;
  for (auto [t, d] : events) peak = std::max(peak, cur += d);
  return peak;
}

TEST(DesTest, GpipeHoldsAllMicrobatchesOneFOneBAtMostP) {
  auto g = SimulatePipeline(Plan(core::Schedule::kGpipe, 4), Uniform(4, 1, 1, 1), 16, DesOptions{});
  auto o = SimulatePipeline(Plan(core::Schedule::k1F1B, 4), Uniform(4, 1, 1, 1), 16, DesOptions{});
  ASSERT_TRUE(g.ok() && o.ok());
  EXPECT_EQ(PeakInFlight(*g), 16);
  EXPECT_EQ(PeakInFlight(*o), 4);
}

TEST(DesTest, AStragglerSlowsTheWholeStep) {
  // One rank 10% slower: every microbatch waits for it, so the step grows by ~10% x m t.
  DesOptions slow;
  slow.stage_slowdown = {1, 1, 1.1, 1, 1, 1, 1, 1};
  auto base = SimulatePipeline(Plan(core::Schedule::k1F1B, 8), Uniform(8, 1, 2, 0), 64, DesOptions{});
  auto s = SimulatePipeline(Plan(core::Schedule::k1F1B, 8), Uniform(8, 1, 2, 0), 64, slow);
  ASSERT_TRUE(base.ok() && s.ok());
  EXPECT_GT(s->pipeline_s, base->pipeline_s + 0.09 * 64 * 3);
}

TEST(DesTest, JitterIsSeeded) {
  DesOptions j;
  j.jitter = 0.05;
  j.seed = 7;
  auto a = SimulatePipeline(Plan(core::Schedule::k1F1B, 4), Uniform(4, 1, 2, 0), 16, j);
  auto b = SimulatePipeline(Plan(core::Schedule::k1F1B, 4), Uniform(4, 1, 2, 0), 16, j);
  j.seed = 8;
  auto c = SimulatePipeline(Plan(core::Schedule::k1F1B, 4), Uniform(4, 1, 2, 0), 16, j);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_DOUBLE_EQ(a->pipeline_s, b->pipeline_s);
  EXPECT_NE(a->pipeline_s, c->pipeline_s);
}

TEST(DesTest, BadOptionsAreErrorsNotCrashes) {
  DesOptions o;
  o.stage_slowdown = {1, 2};
  auto r = SimulatePipeline(Plan(core::Schedule::k1F1B, 4), Uniform(4, 1, 1, 1), 8, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stage_slowdown"), std::string::npos);
}

TEST(DesTest, TimelinesRender) {
  auto r = SimulatePipeline(Plan(core::Schedule::k1F1B, 2), Uniform(2, 1, 2, 0), 2, DesOptions{});
  ASSERT_TRUE(r.ok());
  const std::string trace = ChromeTraceJson(*r);
  EXPECT_NE(trace.find("\"ph\": \"X\""), std::string::npos);
  EXPECT_NE(trace.find("\"name\": \"F0\""), std::string::npos);
  EXPECT_NE(SvgGantt(*r, 2).find("<svg"), std::string::npos);
  // 2 ranks, m = 2, F = 1, B = 2 (9 s on 18 columns). Rank 1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7].
  // Rank 0: F0 [0,1] F1 [1,2], B0 after rank 1's B0: [4,6], B1 after rank 1's B1: [7,9].
  const std::string gantt = AsciiGantt(*r, 2, 18);
  EXPECT_NE(gantt.find("rank 0  |FFFF....BBBB..BBBB|"), std::string::npos) << gantt;
  EXPECT_NE(gantt.find("rank 1  |..FFBBBBFFBBBB....|"), std::string::npos) << gantt;
}

}  // namespace
}  // namespace meshplan::sim
