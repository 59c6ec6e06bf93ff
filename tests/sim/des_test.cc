// The discrete-event pipeline simulator against the closed forms of the analytic model, and its
// communication streams against hand-derived timelines and the analytic model's breakdown.
#include "sim/des.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "core/presets.h"
#include "core/validate.h"

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
        const double des = Des(core::Schedule::kInterleaved, p, m, v),
                     ana = Analytic(core::Schedule::kInterleaved, p, m, v);
        EXPECT_NEAR(des, ana, 0.01 * ana) << "p " << p << " v " << v << " m " << m;
      }
    }
  }
}

TEST(DesTest, ZeroBubbleEqualsTheClosedFormAndBeatsOneFOneB) {
  // ZB-H1 with F = B = W (Qi et al. 2023): m(F+B+W) + (p-1)(F+B-W), exactly with ZB-H1's own
  // order (e.g. p = 4, m = 8: 24 + 3 = 27).
  for (int64_t p : {4, 8}) {
    for (int64_t m : {2 * p, 8 * p}) {
      const double des = Des(core::Schedule::kZeroBubble, p, m), ana = Analytic(core::Schedule::kZeroBubble, p, m);
      EXPECT_NEAR(des, ana, 1e-9 * ana) << p << " " << m;
      EXPECT_LT(des, Des(core::Schedule::k1F1B, p, m));
    }
  }
  EXPECT_NEAR(Des(core::Schedule::kZeroBubble, 4, 8), 27, 1e-9);
}

TEST(DesTest, DualPipeEqualsTheClosedForm) {
  // The DeepSeek-V3 table's bubble, (p/2 - 1)(F&B + B - 3W), exactly with DeepSeek's own order
  // (core::PipelineOrders, from dualpipe.py) and F&B run one after the other. p = 4, m = 8 with a
  // rank's F = B = W = 1, each of its two stages half: work m(F+B+W)/2 = 12, bubble
  // (4/2 - 1)((0.5 + 0.5 + 0.5) + 0.5 - 3 x 0.5) = 0.5; 12.5.
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {4, 32}, {8, 16}, {8, 64}}) {
    const double des = Des(core::Schedule::kDualPipe, p, m), ana = Analytic(core::Schedule::kDualPipe, p, m);
    EXPECT_NEAR(des, ana, 1e-9 * ana) << p << " " << m;
  }
  EXPECT_NEAR(Des(core::Schedule::kDualPipe, 4, 8), 12.5, 1e-9);
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
  // Infinite factors and jitter are refused too (an infinite jitter gave NaN times and a 0 s step).
  o.stage_slowdown = {1, 1, std::numeric_limits<double>::infinity(), 1};
  r = SimulatePipeline(Plan(core::Schedule::k1F1B, 4), Uniform(4, 1, 1, 1), 8, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stage_slowdown: factors must be finite"), std::string::npos);
  o.stage_slowdown.clear();
  for (double bad : {-0.1, 1.5, std::numeric_limits<double>::infinity(), std::nan("")}) {
    o.jitter = bad;
    r = SimulatePipeline(Plan(core::Schedule::k1F1B, 4), Uniform(4, 1, 1, 1), 8, o);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("jitter: must be a relative standard deviation in [0, 1]"), std::string::npos);
  }
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

// ---- communication streams ----------------------------------------------------------------------

// Uniform ranks by stream: F and B (input and weight gradients fused, W = 0) all compute.
std::vector<StageStreams> UniformStreams(int64_t p, double f, double b, double p2p) {
  StageStreams s;
  s.forward.compute_s = f;
  s.backward_input.compute_s = b;
  s.p2p_s = p2p;
  return std::vector<StageStreams>(static_cast<size_t>(p), s);
}

// Every interval a rank's stream is busy: passes and the optimizer on compute, tasks elsewhere.
std::map<std::pair<int64_t, Stream>, std::vector<std::pair<double, double>>> StreamIntervals(const DesResult& r) {
  std::map<std::pair<int64_t, Stream>, std::vector<std::pair<double, double>>> out;
  for (const auto& op : r.ops) out[{op.stage, Stream::kCompute}].push_back({op.start_s, op.end_s});
  for (const auto& t : r.tasks) out[{t.stage, t.stream}].push_back({t.start_s, t.end_s});
  for (auto& [key, v] : out) std::sort(v.begin(), v.end());
  return out;
}

void ExpectSerialStreams(const DesResult& r, const std::string& what) {
  for (const auto& [key, v] : StreamIntervals(r)) {
    for (size_t i = 0; i + 1 < v.size(); ++i)
      EXPECT_LE(v[i].second, v[i + 1].first + 1e-12)
          << what << ": rank " << key.first << " " << Name(key.second) << " runs [" << v[i].first << ", " << v[i].second
          << "] and [" << v[i + 1].first << ", " << v[i + 1].second << "] at once";
  }
}

TEST(DesStreamsTest, AReceiverStartsOnlyAfterTheSendArrives) {
  // pp = 2, 1F1B, m = 2, F = 1, B = 2 (W fused), one send = 0.5; sends block the sender
  // (Megatron's default), and the last stage sends no activation, the first no gradient.
  //   rank 0: F0 [0,1] send [1,1.5]; F1 [1.5,2.5] send [2.5,3];
  //   rank 1: F0 needs the send: [1.5,2.5]; B0 [2.5,4.5] send [4.5,5]; F1 [5,6]; B1 [6,8] send [8,8.5];
  //   rank 0: B0 needs rank 1's send: [5,7]; B1 [8.5,10.5]. Pipeline 10.5 (9 without the sends).
  auto r = SimulateStreams(Plan(core::Schedule::k1F1B, 2), UniformStreams(2, 1, 2, 0.5), 2, DesOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto find = [&](int64_t stage, PipeOpKind k, int64_t mb) {
    for (const auto& op : r->ops)
      if (op.stage == stage && op.kind == k && op.microbatch == mb) return op;
    ADD_FAILURE() << "no op";
    return TimelineOp{};
  };
  EXPECT_DOUBLE_EQ(find(0, PipeOpKind::kForward, 0).end_s, 1);
  EXPECT_DOUBLE_EQ(find(1, PipeOpKind::kForward, 0).start_s, 1 + 0.5);
  EXPECT_DOUBLE_EQ(find(1, PipeOpKind::kForward, 1).start_s, 5);
  EXPECT_DOUBLE_EQ(find(0, PipeOpKind::kBackward, 0).start_s, 4.5 + 0.5);
  EXPECT_DOUBLE_EQ(find(0, PipeOpKind::kBackward, 1).start_s, 8.5);
  EXPECT_DOUBLE_EQ(r->pipeline_s, 10.5);
  EXPECT_DOUBLE_EQ(r->stages[0].stream_busy_s[static_cast<size_t>(Stream::kP2p)], 1.0);  // two sends each
  EXPECT_DOUBLE_EQ(r->stages[1].stream_busy_s[static_cast<size_t>(Stream::kP2p)], 1.0);
  EXPECT_DOUBLE_EQ(r->stages[0].busy_s, 2 * 1.5 + 2 * 2);  // blocking sends hold the rank
  ExpectSerialStreams(*r, "1f1b");
}

TEST(DesStreamsTest, EveryScheduleWaitsForTheSend) {
  // Whatever the schedule, a pass that consumes another rank's output starts no earlier than
  // that pass's end + one send (0.25 here).
  const double send = 0.25;
  for (auto [s, v] : {std::pair{core::Schedule::kGpipe, 1},
                      {core::Schedule::k1F1B, 1},
                      {core::Schedule::kInterleaved, 2},
                      {core::Schedule::kZeroBubble, 1},
                      {core::Schedule::kDualPipe, 1}}) {
    const int64_t pp = 4;
    auto streams = UniformStreams(pp, 1, 1, send);
    for (auto& st : streams) st.backward_weight.compute_s = 1;
    auto r = SimulateStreams(Plan(s, pp, v), streams, 8, DesOptions{});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const bool dual = s == core::Schedule::kDualPipe;
    // Key: (virtual stage, kind, microbatch). DualPipe: direction d's stage j on rank j or p-1-j.
    std::map<std::tuple<int64_t, PipeOpKind, int64_t>, TimelineOp> by;
    for (const auto& op : r->ops) {
      const int64_t vs =
          dual ? op.chunk * pp + (op.chunk == 0 ? op.stage : pp - 1 - op.stage) : op.chunk * pp + op.stage;
      by[{vs, op.kind, op.microbatch}] = op;
    }
    int64_t checked = 0;
    for (const auto& [key, op] : by) {
      const auto [vs, kind, mb] = key;
      const bool first = dual ? vs % pp == 0 : vs == 0;
      const bool last = dual ? vs % pp == pp - 1 : vs == pp * v - 1;
      if (kind == PipeOpKind::kForward && !first) {
        EXPECT_GE(op.start_s, by.at({vs - 1, kind, mb}).end_s + send - 1e-12) << core::Name(s);
        ++checked;
      }
      if (kind == PipeOpKind::kBackward && !last) {
        const TimelineOp& from = by.at({vs + 1, kind, mb});
        // Without split W the sender's B includes its W; the send follows the whole pass.
        EXPECT_GE(op.start_s, from.end_s + send - 1e-12) << core::Name(s);
        ++checked;
      }
    }
    EXPECT_GT(checked, 0);
    ExpectSerialStreams(*r, core::Name(s));
  }
}

TEST(DesStreamsTest, ExposedCommunicationHoldsComputeOverlappedDoesNot) {
  // One rank, one microbatch: F = 2 s of kernels, 0.5 s exposed TP, 1 s overlapped TP. The pass
  // holds compute 2.5 s: kernels [0,1], exposed [1,1.5], kernels [1.5,2.5]; the overlapped
  // collectives run [0,0.5] and [1.5,2], never beside the exposed one.
  StageStreams s;
  s.forward = {.compute_s = 2, .tp_exposed_s = 0.5, .tp_overlapped_s = 1};
  auto r = SimulateStreams(Plan(core::Schedule::k1F1B, 1), {s}, 1, DesOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->ops.size(), 2u);  // F and an empty B
  EXPECT_DOUBLE_EQ(r->ops[0].end_s, 2.5);
  std::vector<std::pair<double, double>> tp;
  for (const auto& t : r->tasks)
    if (t.stream == Stream::kTpComm) tp.push_back({t.start_s, t.end_s});
  std::sort(tp.begin(), tp.end());
  ASSERT_EQ(tp.size(), 3u);
  EXPECT_EQ(tp[0], (std::pair<double, double>{0, 0.5}));
  EXPECT_EQ(tp[1], (std::pair<double, double>{1, 1.5}));
  EXPECT_EQ(tp[2], (std::pair<double, double>{1.5, 2}));
  EXPECT_DOUBLE_EQ(r->stages[0].stream_busy_s[static_cast<size_t>(Stream::kTpComm)], 1.5);
  EXPECT_DOUBLE_EQ(r->stages[0].stream_busy_s[static_cast<size_t>(Stream::kCompute)], 2);
  // An overlapped collective longer than the kernels it hides under is an input error.
  s.forward.tp_overlapped_s = 3;
  auto bad = SimulateStreams(Plan(core::Schedule::k1F1B, 1), {s}, 1, DesOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("overlapped"), std::string::npos);
}

TEST(DesStreamsTest, GradientSyncFollowsTheOverlapRule) {
  // pp = 2, 1F1B, m = 2, F = 1, B = 2, no sends: rank 0 runs F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9],
  // rank 1 F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]. Gradient sync 3 s, optimizer 0.5 s per rank.
  auto streams = UniformStreams(2, 1, 2, 0);
  for (auto& st : streams) {
    st.grad_sync_s = 3;
    st.optimizer_s = 0.5;
  }
  core::PlanSpec plan = Plan(core::Schedule::k1F1B, 2);
  // Not overlapped: after the last backward. Rank 0: sync [9,12], optimizer [12,12.5]; rank 1:
  // [7,10], [10,10.5]. Step 12.5 = the analytic 9 + 3 + 0.5.
  plan.overlap_grad_reduce = false;
  auto off = SimulateStreams(plan, streams, 2, DesOptions{});
  ASSERT_TRUE(off.ok());
  EXPECT_DOUBLE_EQ(off->step_time_s, 12.5);
  // Overlapped: from the start of the last microbatch's backward. Rank 0: sync [7,10], optimizer
  // [10,10.5]; rank 1: [5,8], optimizer after max(7, 8): [8,8.5]. Step 10.5 = the analytic
  // 9 + max(0, 3 - (B + W)) + 0.5 = 9 + 1 + 0.5.
  plan.overlap_grad_reduce = true;
  auto on = SimulateStreams(plan, streams, 2, DesOptions{});
  ASSERT_TRUE(on.ok());
  EXPECT_DOUBLE_EQ(on->step_time_s, 10.5);
  for (const auto& r : {*off, *on}) {
    for (const auto& st : r.stages) EXPECT_DOUBLE_EQ(st.stream_busy_s[static_cast<size_t>(Stream::kDpComm)], 3);
    ExpectSerialStreams(r, "grad sync");
  }
  // With per-microbatch DP collectives under B (ZeRO-3 gathers, 1 s per B, half at the start of
  // each half of the kernels), the sync fills their gaps. Rank 0's B1 [7,9] has them at [7,7.5]
  // and [8,8.5]: the sync runs [7.5,8] and [8.5,11], the optimizer [11,11.5].
  for (auto& st : streams) st.backward_input.dp_overlapped_s = 1;
  auto gaps = SimulateStreams(plan, streams, 2, DesOptions{});
  ASSERT_TRUE(gaps.ok());
  EXPECT_DOUBLE_EQ(gaps->step_time_s, 11.5);
  std::vector<std::pair<double, double>> sync;
  for (const auto& t : gaps->tasks)
    if (t.stage == 0 && t.kind == TaskKind::kGradSync) sync.push_back({t.start_s, t.end_s});
  ASSERT_EQ(sync.size(), 2u);
  EXPECT_EQ(sync[0], (std::pair<double, double>{7.5, 8}));
  EXPECT_EQ(sync[1], (std::pair<double, double>{8.5, 11}));
  ExpectSerialStreams(*gaps, "grad sync in gaps");
}

struct RealPlan {
  core::ModelSpec model;
  core::GpuSpec gpu;
  core::ClusterSpec cluster;
  core::PlanSpec plan;
};

// Llama-3-8B on 32 H100s: TP 2 with SP, PP 4, DP 4, 8 microbatches of 4096 tokens.
RealPlan Llama8B(core::Schedule s, int64_t zero, bool overlap_grad_reduce) {
  RealPlan r;
  r.model = *core::LoadModel("llama3-8b");
  r.gpu = *core::LoadGpu("h100-sxm");
  r.cluster = *core::LoadCluster("dgx-h100");
  core::PlanSpec& p = r.plan;
  p.tp = 2;
  p.pp = 4;
  p.dp = 4;
  p.gpus = 32;
  p.sequence_parallel = true;
  p.zero = zero;
  p.seq_len = 4096;
  p.global_batch = 32;
  p.schedule = s;
  p.vpp = s == core::Schedule::kInterleaved ? 2 : 1;
  p.overlap_grad_reduce = overlap_grad_reduce;
  return r;
}

// The analytic estimate of a valid plan and its stream simulation, as `meshplan simulate` runs them.
struct Simulated {
  StepEstimate e;
  std::vector<StageStreams> streams;
  core::Result<DesResult> r = core::Status::Internal("not simulated");
};
Simulated SimulateReal(const RealPlan& s) {
  core::Diagnostics d;
  core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  EXPECT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  Simulated out;
  out.e = EstimateStep(s.model, s.plan, s.gpu, s.cluster, core::Profile{});
  out.streams = StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, core::Profile{}, out.e.stages);
  out.r = SimulateStreams(s.plan, out.streams, s.plan.Microbatches(), DesOptions{});
  return out;
}

TEST(DesStreamsTest, DataParallelSyncMatchesTheAnalyticModel) {
  // Not overlapped, the gradient sync is exposed whole in both models: the dp_comm stream of the
  // rank whose step-level work is longest is busy for the analytic DP time (ZeRO-1 has no
  // per-microbatch DP collectives) less the compute the hidden parameter gather slows (counted
  // with the DP time, run on the compute stream), and the step times agree within 1%.
  RealPlan s = Llama8B(core::Schedule::k1F1B, 1, false);
  const Simulated sim = SimulateReal(s);
  const StepEstimate& e = sim.e;
  const auto& streams = sim.streams;
  const auto& r = sim.r;
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  size_t k = 0;  // the step model's breakdown takes the last rank with the longest step-level work
  for (size_t i = 0; i < e.stages.size(); ++i)
    if (e.stages[i].step_s >= e.stages[k].step_s) k = i;
  ASSERT_GT(e.breakdown.dp_comm_s, 0);
  ASSERT_GT(streams[k].overlap_slowdown_s, 0);
  EXPECT_NEAR(r->stages[k].stream_busy_s[static_cast<size_t>(Stream::kDpComm)],
              e.breakdown.dp_comm_s - streams[k].overlap_slowdown_s, 1e-9 * e.breakdown.dp_comm_s);
  EXPECT_NEAR(streams[k].optimizer_s, e.breakdown.optimizer_s, 1e-9 * e.breakdown.optimizer_s);
  EXPECT_NEAR(r->step_time_s, e.time_s, 0.01 * e.time_s);
  // Overlapped, less of it is exposed in both, and they still agree.
  s.plan.overlap_grad_reduce = true;
  const StepEstimate eo = EstimateStep(s.model, s.plan, s.gpu, s.cluster, core::Profile{});
  auto ro = SimulateStreams(s.plan, StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, core::Profile{}, eo.stages),
                            s.plan.Microbatches(), DesOptions{});
  ASSERT_TRUE(ro.ok());
  EXPECT_LT(ro->step_time_s, r->step_time_s);
  EXPECT_NEAR(ro->step_time_s, eo.time_s, 0.01 * eo.time_s);
}

TEST(DesStreamsTest, ParameterGatherHidesUnderTheNextForwardOnly) {
  // ZeRO-1's all-gather of the updated parameters (Megatron-Core --overlap-param-gather: bucket by
  // bucket under the next step's first forward; off: after the optimizer step). One pipeline
  // rank, so the step is m (F + B) + exposed sync + optimizer + exposed gather, the hidden part
  // slowing the forward beside it by s = OverlapSlowdown (NCCL's), and by hand
  //   step(off) - step(on) = G - max(0, G - F) - s min(G, F) = (1 - s) min(G, F),
  // with G = AG - E the gather's time less its word embedding's bucket E (the forward's first
  // parameters, waited for whole: EmbeddingTail, its op-table rows read exposed) and F one
  // microbatch's forward. Llama 3 8B at TP 1 x DP 8 in one
  // node gathers 16 GB over NVLink in less than a forward (hidden whole); Llama 3 70B at TP 8 x
  // DP 16 gathers 8.8B bf16 parameters over one InfiniBand NIC per GPU, longer than a forward
  // (exposed by AG - F). The DES places the same rule.
  struct Case {
    const char* model;
    int64_t tp, dp;
    bool gather_longer_than_forward;
  };
  for (const Case& c : {Case{"llama3-8b", 1, 8, false}, Case{"llama3-70b", 8, 16, true}}) {
    SCOPED_TRACE(c.model);
    RealPlan s = Llama8B(core::Schedule::k1F1B, 1, true);
    s.model = *core::LoadModel(c.model);
    s.plan.tp = c.tp;
    s.plan.sequence_parallel = c.tp > 1;
    s.plan.pp = 1;
    s.plan.dp = c.dp;
    s.plan.gpus = c.tp * c.dp;
    s.plan.global_batch = 2 * c.dp;  // two microbatches per rank
    auto run = [&](bool overlap) {
      s.plan.overlap_param_gather = overlap;
      Simulated out;
      out.e = EstimateStep(s.model, s.plan, s.gpu, s.cluster, core::Profile{});
      out.streams = StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, core::Profile{}, out.e.stages);
      out.r = SimulateStreams(s.plan, out.streams, s.plan.Microbatches(), DesOptions{});
      return out;
    };
    const Simulated on = run(true), off = run(false);
    ASSERT_TRUE(on.r.ok() && off.r.ok());
    double emb = 0;
    for (const CostedOpList& list : CostStepGraph(s.model, s.plan, s.gpu, s.cluster, core::Profile{}))
      for (const CostedOp& row : list.ops)
        if (std::string(list.name) == "embedding" && row.op.pass == core::Pass::kStep &&
            row.op.collective == core::CollectiveKind::kAllGather) {
          EXPECT_FALSE(row.hidden) << row.op.name;
          emb += row.time_s;
        }
    ASSERT_GT(emb, 0);
    const double f = on.e.stages[0].forward_s, ag = off.streams[0].param_gather_s - emb;
    ASSERT_GT(ag, 0);
    EXPECT_EQ(ag > f, c.gather_longer_than_forward) << "AG " << ag << " s, F " << f << " s";
    EXPECT_NEAR(on.streams[0].param_gather_s, std::max(0.0, ag - f) + emb, 1e-12);
    // Hidden whole (AG < F) the gather slows that forward by s AG: saved (1 - s) AG; longer than
    // the forward, s AG less what spills past it (OverlapExtra).
    const double saved = std::min(ag, f) - OverlapExtra(ag, f);
    if (!c.gather_longer_than_forward) EXPECT_NEAR(saved, (1 - kNcclOverlapSlowdown) * ag, 1e-12);
    EXPECT_NEAR(off.e.time_s - on.e.time_s, saved, 1e-9 * off.e.time_s);
    EXPECT_NEAR(off.e.breakdown.dp_comm_s - on.e.breakdown.dp_comm_s, saved, 1e-9 * off.e.time_s);
    // The DES: the same difference, the gather after the optimizer on dp_comm.
    EXPECT_NEAR(off.r->step_time_s - on.r->step_time_s, saved, 1e-9 * off.e.time_s);
    EXPECT_NEAR(on.r->step_time_s, on.e.time_s, 0.01 * on.e.time_s);
    int gathers = 0;
    for (const auto& t : off.r->tasks) gathers += t.kind == TaskKind::kParamGather ? 1 : 0;
    EXPECT_EQ(gathers, 1);
  }
}

TEST(DesStreamsTest, ExposedModelParallelTimeMatchesTheBreakdown) {
  // The split by stream keeps the step model's exposure: over m microbatches (1F1B scales the
  // critical rank's per-microbatch parts by m), the critical rank's exposed TP/CP/EP time is the
  // breakdown's less the compute the hidden collectives slow (counted there, run on the compute
  // stream here), its pipeline sends are pp_comm_s, and the passes add up to the analytic ones.
  // TP 16 spans two nodes: there the overlappable collectives outlast the kernels and spill.
  // The same under FP8 with the last stage's 8 layers kept in BF16 (plan.bf16_layers_at_end): its
  // kernels are the BF16 layers', whose longer GEMMs hide more of the spill.
  for (int64_t bf16_end : {0, 8})
    for (int64_t tp : {2, 16}) {
      for (core::TpOverlap o :
           {core::TpOverlap::kNone, core::TpOverlap::kBackward, core::TpOverlap::kFull, core::TpOverlap::kAsync}) {
        RealPlan s = Llama8B(core::Schedule::k1F1B, 1, true);
        if (bf16_end > 0) {
          s.plan.precision = core::Dtype::kFp8;
          s.plan.fp8_scaling = core::Fp8Scaling::kCurrent;
          s.plan.bf16_layers_at_end = bf16_end;
        }
        s.plan.tp = tp;
        s.plan.gpus = tp * s.plan.pp * s.plan.dp;
        s.plan.tp_overlap = o;
        const StepEstimate e = EstimateStep(s.model, s.plan, s.gpu, s.cluster, core::Profile{});
        const auto streams = StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, core::Profile{}, e.stages);
        const StageStreams& c = streams[static_cast<size_t>(e.critical_stage)];
        const double m = static_cast<double>(s.plan.Microbatches());
        const double exposed = c.forward.tp_exposed_s + c.backward_input.tp_exposed_s + c.backward_weight.tp_exposed_s;
        const double want = e.breakdown.tp_comm_s + e.breakdown.cp_comm_s + e.breakdown.ep_comm_s;
        size_t k = 0;  // the rank whose step-level work the breakdown takes (the last of the longest)
        for (size_t i = 0; i < e.stages.size(); ++i)
          if (e.stages[i].step_s >= e.stages[k].step_s) k = i;
        const double slowed = e.overlap_slowdown_s - streams[k].overlap_slowdown_s;  // in the passes
        // AsyncTP's copies take no SMs (sim::OverlapSlowdown): nothing slowed in the passes.
        if (o == core::TpOverlap::kAsync) EXPECT_NEAR(slowed, 0, 1e-12) << core::Name(o);
        else if (o != core::TpOverlap::kNone) EXPECT_GT(slowed, 0) << core::Name(o);
        if (o != core::TpOverlap::kFull || tp == 16)
          EXPECT_GT(want - slowed, 0) << core::Name(o);  // TP 2, full: all hidden
        EXPECT_NEAR(exposed * m + slowed, want, 1e-12 + 1e-9 * want) << core::Name(o);
        EXPECT_NEAR(2 * c.p2p_s * m, e.breakdown.pp_comm_s, 1e-9 * e.breakdown.pp_comm_s);
        const StageTimes& t = e.stages[static_cast<size_t>(e.critical_stage)];
        EXPECT_NEAR(c.forward.Held() + c.p2p_s, t.forward_s, 1e-12);
        EXPECT_NEAR(c.backward_input.Held() + c.p2p_s, t.backward_input_s, 1e-12);
        EXPECT_NEAR(c.backward_weight.Held(), t.backward_weight_s, 1e-12);
        if (o == core::TpOverlap::kFull || o == core::TpOverlap::kAsync) EXPECT_GT(c.forward.tp_overlapped_s, 0);
        if (o == core::TpOverlap::kNone) EXPECT_EQ(c.forward.tp_overlapped_s + c.backward_input.tp_overlapped_s, 0);
      }
    }
}

TEST(DesStreamsTest, RealPlansAgreeWithTheAnalyticModelAndKeepStreamsSerial) {
  // Every schedule with TP, ZeRO-3 (per-microbatch DP gathers) and overlapped gradient sync:
  // each stream runs one task at a time, and 1F1B, GPipe and interleaved stay within 1% of the
  // analytic step time. ZB-H1 and DualPipe may come in lower: their closed forms charge every
  // rank the critical rank's F, B and W, which these uneven stages (embedding, head) are not.
  for (auto sched : {core::Schedule::kGpipe, core::Schedule::k1F1B, core::Schedule::kInterleaved,
                     core::Schedule::kZeroBubble, core::Schedule::kDualPipe}) {
    for (int64_t zero : {1, 3}) {
      RealPlan s = Llama8B(sched, zero, true);
      s.plan.tp_overlap = core::TpOverlap::kFull;
      const Simulated sim = SimulateReal(s);
      const StepEstimate& e = sim.e;
      const auto& r = sim.r;
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const std::string what = std::string(core::Name(sched)) + " zero " + std::to_string(zero);
      ExpectSerialStreams(*r, what);
      for (const auto& st : r->stages) {
        EXPECT_GT(st.stream_busy_s[static_cast<size_t>(Stream::kTpComm)], 0) << what;
        EXPECT_GT(st.stream_busy_s[static_cast<size_t>(Stream::kDpComm)], 0) << what;
        EXPECT_GT(st.stream_busy_s[static_cast<size_t>(Stream::kP2p)], 0) << what;
      }
      if (sched == core::Schedule::kZeroBubble || sched == core::Schedule::kDualPipe) {
        EXPECT_LT(r->step_time_s, 1.01 * e.time_s) << what;
      } else {
        EXPECT_NEAR(r->step_time_s, e.time_s, 0.01 * e.time_s) << what;
      }
    }
  }
}

TEST(DesStreamsTest, TiedEmbeddingAllReduceEndsTheStepOfThePipelinesEnds) {
  // Llama-3-8B's plan with its word embedding tied to the output layer (the last stage holds a
  // copy): ranks 0 and 3 all-reduce the copies' gradients once per step after the gradient
  // synchronisation, on p2p, the middle ranks not at all; one task per end, and the step agrees
  // with the analytic one (which adds the all-reduce to both ends' step) within 1%.
  RealPlan s = Llama8B(core::Schedule::k1F1B, 1, true);
  s.model.tied_embeddings = true;
  const Simulated sim = SimulateReal(s);
  ASSERT_TRUE(sim.r.ok()) << sim.r.status().ToString();
  const auto streams = StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, core::Profile{}, sim.e.stages);
  ASSERT_EQ(streams.size(), 4u);
  EXPECT_GT(streams[0].tied_sync_s, 0);
  EXPECT_EQ(streams[3].tied_sync_s, streams[0].tied_sync_s);
  EXPECT_EQ(streams[1].tied_sync_s + streams[2].tied_sync_s, 0);
  int tasks = 0;
  for (const auto& t : sim.r->tasks)
    if (t.kind == TaskKind::kTiedSync) {
      ++tasks;
      EXPECT_TRUE(t.stage == 0 || t.stage == 3);
      EXPECT_EQ(t.stream, Stream::kP2p);
      EXPECT_NEAR(t.end_s - t.start_s, streams[0].tied_sync_s, 1e-15);
    }
  EXPECT_EQ(tasks, 2);
  ExpectSerialStreams(*sim.r, "tied");
  EXPECT_NEAR(sim.r->step_time_s, sim.e.time_s, 0.01 * sim.e.time_s);
}

TEST(DesStreamsTest, TheWaitForTheHostStaysOnTheComputeStream) {
  // Qwen3-30B-A3B at EP 8 on eight B200s, one sequence a microbatch: its MoE layers wait for the
  // host (MoeLayerHostFloor). The stream simulation holds the wait on the compute stream, as it
  // holds the activation-offload wait, not as exposed communication: the TP/EP stream is as busy as
  // without the floor, and the step agrees with the analytic one within 1%.
  RealPlan s;
  s.model = *core::LoadModel("qwen3-30b-a3b");
  s.gpu = *core::LoadGpu("b200");
  s.cluster = *core::LoadCluster("dgx-b200");
  s.plan.ep = 8;
  s.plan.dp = 8;
  s.plan.gpus = 8;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 64;
  const Simulated with = SimulateReal(s);
  s.plan.moe_host = core::MoeHost::kNone;
  const Simulated without = SimulateReal(s);
  ASSERT_TRUE(with.r.ok()) << with.r.status().ToString();
  ASSERT_TRUE(without.r.ok()) << without.r.status().ToString();
  ASSERT_GT(with.e.breakdown.host_s, 0);
  EXPECT_NEAR(with.r->step_time_s, with.e.time_s, 0.01 * with.e.time_s);
  const auto busy = [](const Simulated& x, Stream st) { return x.r->stages[0].stream_busy_s[static_cast<size_t>(st)]; };
  EXPECT_NEAR(busy(with, Stream::kCompute) - busy(without, Stream::kCompute), with.e.breakdown.host_s,
              1e-6 * with.e.time_s);
  EXPECT_NEAR(busy(with, Stream::kTpComm), busy(without, Stream::kTpComm), 1e-9 * with.e.time_s);
}

TEST(DesStreamsTest, TimelinesShowTheStreams) {
  RealPlan s = Llama8B(core::Schedule::k1F1B, 3, true);
  const StepEstimate e = EstimateStep(s.model, s.plan, s.gpu, s.cluster, core::Profile{});
  auto r = SimulateStreams(s.plan, StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, core::Profile{}, e.stages),
                           s.plan.Microbatches(), DesOptions{});
  ASSERT_TRUE(r.ok());
  // Chrome trace: a process per rank, a named thread per stream, communication on its own tid.
  const std::string trace = ChromeTraceJson(*r);
  for (const char* name : {"compute", "tp_comm", "dp_comm", "p2p"})
    EXPECT_NE(trace.find(std::string("\"args\": {\"name\": \"") + name + "\"}"), std::string::npos) << name;
  EXPECT_NE(trace.find("\"name\": \"rank 3\""), std::string::npos);
  EXPECT_NE(trace.find("\"cat\": \"send\", \"ph\": \"X\", \"pid\": 0, \"tid\": 3"), std::string::npos);
  EXPECT_NE(trace.find("\"cat\": \"grad_sync\""), std::string::npos);
  // SVG: a labelled sub-row per communication stream.
  const std::string svg = SvgGantt(*r, s.plan.pp);
  for (const char* name : {">tp_comm<", ">dp_comm<", ">p2p<"}) EXPECT_NE(svg.find(name), std::string::npos) << name;
  // ASCII: a line per communication stream under each rank, and their legend.
  const std::string gantt = AsciiGantt(*r, s.plan.pp, 60);
  EXPECT_NE(gantt.find("rank 3  |"), std::string::npos) << gantt;
  EXPECT_NE(gantt.find(" tp_comm|"), std::string::npos) << gantt;
  EXPECT_NE(gantt.find(" dp_comm|"), std::string::npos) << gantt;
  EXPECT_NE(gantt.find("     p2p|"), std::string::npos) << gantt;
  EXPECT_NE(gantt.find("> activation send"), std::string::npos) << gantt;
}

}  // namespace
TEST(DesTest, WorkIsBoundedByPassCount) {
  // pp 8 x vpp 1 x 3 passes per microbatch: 166,666 microbatches are 3,999,984 passes (inside
  // kMaxDesPasses = 4e6); 166,667 are 4,000,008 and are refused at once, naming the field, rather
  // than simulated for seconds with gigabytes of timeline.
  DesOptions quiet;
  quiet.keep_timeline = false;
  EXPECT_TRUE(SimulatePipeline(Plan(core::Schedule::k1F1B, 8), Uniform(8, 1, 2, 0), 166666, quiet).ok());
  auto r = SimulatePipeline(Plan(core::Schedule::k1F1B, 8), Uniform(8, 1, 2, 0), 166667, quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("plan.global_batch"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("4e+06"), std::string::npos) << r.status().message();
}

}  // namespace meshplan::sim
