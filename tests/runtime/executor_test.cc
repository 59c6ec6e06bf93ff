// runtime/executor.h, runtime/bench.h and runtime/measurement.h in one process, on the cpu
// backend: the executor runs exactly the StepGraph's ops of its stage (one measurement per op,
// with the calls a step makes), group layouts follow the placement order, rank slices model the
// collectives they cannot run, the training state the memory model predicts is held, every
// pipeline schedule's programs match send for receive and run to the end, and the measurement
// JSON reads back. Multi-process runs (real groups, the watchdog) are in run_test.cmake.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "core/diagnostics.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/step_graph.h"
#include "core/validate.h"
#include "runtime/bench.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/host_comm.h"
#include "runtime/measurement.h"

namespace meshplan::runtime {
namespace {

using core::CommGroup;

core::Scenario Tiny(int64_t tp, int64_t pp, int64_t dp, int64_t global_batch = 4) {
  core::Scenario s;
  auto model = core::LoadModel("tiny");
  auto gpu = core::LoadGpu("h100-sxm");
  auto cluster = core::LoadCluster("dgx-h100");
  EXPECT_TRUE(model.ok() && gpu.ok() && cluster.ok());
  s.model = *model;
  s.gpu = *gpu;
  s.cluster = *cluster;
  s.plan.gpus = tp * pp * dp;
  s.plan.tp = tp;
  s.plan.pp = pp;
  s.plan.dp = dp;
  s.plan.micro_batch = 1;
  s.plan.global_batch = global_batch;
  s.plan.seq_len = 64;
  core::Diagnostics d;
  core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  EXPECT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  return s;
}

// Each reading 1 ms after the last: an op's time is exactly 1 ms (two consecutive readings).
class FakeClock final : public Clock {
 public:
  double NowSeconds() override { return now_ += 1e-3; }

 private:
  double now_ = 0;
};

ExecutorOptions FastOptions() {
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 1;
  o.peak = DevicePeak{1e10, core::Dtype::kBf16, "test"};
  return o;
}

TEST(GroupLayoutTest, GroupsFollowThePlacementOrder) {
  // tp-cp-ep-dp-pp with tp = pp = dp = 2: tp is innermost (stride 1), dp next (stride 2), pp
  // outermost (stride 4). Rank 5 = tp 1, dp 0, pp 1.
  const core::PlanSpec p = Tiny(2, 2, 2).plan;
  EXPECT_EQ(GroupMembers(CommGroup::kTp, p, 5), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(GroupMembers(CommGroup::kDp, p, 5), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(GroupMembers(CommGroup::kDpCp, p, 5), (std::vector<int64_t>{5, 7}));  // cp = 1
  EXPECT_EQ(GroupMembers(CommGroup::kPp, p, 5), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(StageOfRank(p, 5), 1);
  EXPECT_EQ(StageOfRank(p, 3), 0);
  // Every rank is in exactly one group of each kind.
  for (CommGroup g : {CommGroup::kTp, CommGroup::kDp, CommGroup::kPp}) {
    std::map<int64_t, int> seen;
    for (int64_t r = 0; r < p.gpus; ++r)
      for (int64_t m : GroupMembers(g, p, r)) seen[m] += m == r ? 1 : 0;
    for (int64_t r = 0; r < p.gpus; ++r) EXPECT_EQ(seen[r], 1) << core::Name(g) << " rank " << r;
  }
}

TEST(GroupLayoutTest, DataParallelOutermostGroupsDpWithCpOverTwoDigits) {
  // cp 2, pp 2, dp 2 in tp-cp-ep-pp-dp (NeMo's use_tp_pp_dp_mapping): cp stride 1, pp 2, dp 4.
  // Rank 3 = cp 1, pp 1, dp 0: its DP x CP group varies cp and dp at its pp 1: {2, 3, 6, 7}.
  core::PlanSpec p;
  p.cp = 2;
  p.pp = 2;
  p.dp = 2;
  p.gpus = 8;
  ASSERT_TRUE(core::ParsePlacement("tp-cp-ep-pp-dp", &p.placement));
  EXPECT_EQ(GroupMembers(CommGroup::kDpCp, p, 3), (std::vector<int64_t>{2, 3, 6, 7}));
  EXPECT_EQ(GroupMembers(CommGroup::kPp, p, 3), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(GroupMembers(CommGroup::kDp, p, 3), (std::vector<int64_t>{3, 7}));
  std::map<int64_t, int> seen;
  for (int64_t r = 0; r < p.gpus; ++r)
    for (int64_t m : GroupMembers(CommGroup::kDpCp, p, r)) seen[m] += m == r ? 1 : 0;
  for (int64_t r = 0; r < p.gpus; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r;
}

TEST(GroupLayoutTest, ThePipelinesEndsPairTheFirstAndLastStage) {
  // tp 2 x pp 4 (8 ranks, pp stride 2): rank 1 (stage 0) and rank 7 (stage 3) share tp rank 1 and
  // hold the tied embedding's two copies; ranks 2-5 sit in the middle stages, each alone. Every
  // rank is in exactly one such group.
  core::PlanSpec p;
  p.tp = 2;
  p.pp = 4;
  p.gpus = 8;
  EXPECT_EQ(GroupMembers(CommGroup::kPpEnds, p, 1), (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(GroupMembers(CommGroup::kPpEnds, p, 7), (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(GroupMembers(CommGroup::kPpEnds, p, 0), (std::vector<int64_t>{0, 6}));
  EXPECT_EQ(GroupMembers(CommGroup::kPpEnds, p, 4), (std::vector<int64_t>{4}));
  std::map<int64_t, int> seen;
  for (int64_t r = 0; r < p.gpus; ++r)
    for (int64_t m : GroupMembers(CommGroup::kPpEnds, p, r)) seen[m] += m == r ? 1 : 0;
  for (int64_t r = 0; r < p.gpus; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r;
  // Without a pipeline every rank is alone.
  p.pp = 1;
  p.gpus = 2;
  EXPECT_EQ(GroupMembers(CommGroup::kPpEnds, p, 1), (std::vector<int64_t>{1}));
}

// ---- pipeline programs (PipelineOrder, PipelineProgram): what every MPI run relies on.

core::PlanSpec PipePlan(core::Schedule schedule, int64_t pp, int64_t microbatches, int64_t vpp = 1) {
  core::PlanSpec p;
  p.pp = pp;
  p.gpus = pp;
  p.vpp = vpp;
  p.schedule = schedule;
  p.micro_batch = 1;
  p.global_batch = microbatches;
  return p;
}

std::vector<std::vector<PipeAction>> Programs(const core::PlanSpec& p) {
  std::vector<std::vector<PipeAction>> out;
  for (int64_t r = 0; r < p.pp; ++r) {
    auto prog = PipelineProgram(p, r);
    EXPECT_TRUE(prog.ok()) << prog.status().ToString();
    out.push_back(prog.ok() ? *prog : std::vector<PipeAction>{});
  }
  return out;
}

std::string Describe(const PipeMessage& m) {
  return std::string(m.gradient ? "gradient" : "activation") + " of vstage " + std::to_string(m.from_vstage) + " mb " +
         std::to_string(m.microbatch);
}

// "" when, for every ordered pair of ranks (a, b), the messages a sends to b (in a's program
// order) are exactly the messages b receives from a (in b's program order); else the first pair
// that differs. Untagged point-to-point channels (MPI, NCCL) need exactly this.
std::string SendsMatchReceives(const std::vector<std::vector<PipeAction>>& programs) {
  const int64_t n = static_cast<int64_t>(programs.size());
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t b = 0; b < n; ++b) {
      std::vector<PipeMessage> sent, received;
      for (const PipeAction& x : programs[static_cast<size_t>(a)])
        if (x.kind == PipeAction::kSend && x.peer == b) sent.push_back(x.message);
      for (const PipeAction& x : programs[static_cast<size_t>(b)])
        if (x.kind == PipeAction::kRecv && x.peer == a) received.push_back(x.message);
      if (sent == received) continue;
      std::string why = "rank " + std::to_string(a) + " sends " + std::to_string(sent.size()) + " messages to rank " +
                        std::to_string(b) + ", which receives " + std::to_string(received.size());
      for (size_t i = 0; i < std::min(sent.size(), received.size()); ++i)
        if (!(sent[i] == received[i])) {
          why += "; #" + std::to_string(i) + " sent " + Describe(sent[i]) + ", received as " + Describe(received[i]);
          break;
        }
      return why;
    }
  }
  return "";
}

// Runs every program against FIFO channels (MPI's non-overtaking order between two ranks; sends
// buffered, receives blocking): "" when every rank reaches its end and every receive finds its
// own message at the head of its channel; else the mismatch or the deadlock.
std::string RunPrograms(const std::vector<std::vector<PipeAction>>& programs) {
  std::map<std::pair<int64_t, int64_t>, std::deque<PipeMessage>> channel;
  std::vector<size_t> pc(programs.size(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < programs.size(); ++r) {
      const auto& prog = programs[r];
      for (; pc[r] < prog.size(); ++pc[r], progress = true) {
        const PipeAction& a = prog[pc[r]];
        if (a.kind == PipeAction::kSend) channel[{static_cast<int64_t>(r), a.peer}].push_back(a.message);
        if (a.kind != PipeAction::kRecv) continue;
        auto& q = channel[{a.peer, static_cast<int64_t>(r)}];
        if (q.empty()) break;  // blocks until the peer sends
        if (!(q.front() == a.message))
          return "rank " + std::to_string(r) + " expects " + Describe(a.message) + " from rank " +
                 std::to_string(a.peer) + " but the next message is " + Describe(q.front());
        q.pop_front();
      }
    }
  }
  for (size_t r = 0; r < programs.size(); ++r)
    if (pc[r] < programs[r].size())
      return "deadlock: rank " + std::to_string(r) + " waits at action " + std::to_string(pc[r]) + " of " +
             std::to_string(programs[r].size());
  return "";
}

struct ScheduleCase {
  core::Schedule schedule;
  int64_t vpp;
};

TEST(PipelineProgramTest, EverySendMatchesTheNeighboursReceiveAndEveryProgramEnds) {
  // Interleaved: chunk c's activation goes to the rank of chunk c + 1 (the last rank sends to rank
  // 0), so one pair of ranks carries activations and gradients both ways; DualPipe's two
  // directions cross on every pair. Microbatch counts are those each schedule accepts
  // (interleaved: multiples of pp; DualPipe: even, from 2 pp).
  const std::vector<ScheduleCase> cases = {{core::Schedule::kGpipe, 1},       {core::Schedule::k1F1B, 1},
                                           {core::Schedule::kInterleaved, 2}, {core::Schedule::kInterleaved, 3},
                                           {core::Schedule::kZeroBubble, 1},  {core::Schedule::kDualPipe, 1}};
  int checked = 0;
  for (const ScheduleCase& c : cases) {
    for (int64_t pp : {2, 4, 8}) {
      for (int64_t m : {2, 3, 4, 5, 8, 9, 16, 17, 32}) {
        if (c.schedule == core::Schedule::kInterleaved && m % pp != 0) continue;
        if (c.schedule == core::Schedule::kDualPipe && (m % 2 != 0 || m < 2 * pp)) continue;
        const core::PlanSpec p = PipePlan(c.schedule, pp, m, c.vpp);
        const auto programs = Programs(p);
        const std::string what = std::string(core::Name(c.schedule)) + " vpp " + std::to_string(c.vpp) + " pp " +
                                 std::to_string(pp) + " m " + std::to_string(m);
        EXPECT_EQ(SendsMatchReceives(programs), "") << what;
        EXPECT_EQ(RunPrograms(programs), "") << what;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 80);
}

TEST(PipelineProgramTest, TheCheckCatchesAReceiveOutOfTheSendersOrder) {
  // The checks above can fail: swap rank 1's first two receives of different messages from one
  // peer (what receiving "when the pass needs it" would do on DualPipe's crossing directions).
  auto programs = Programs(PipePlan(core::Schedule::kDualPipe, 4, 8));
  ASSERT_EQ(SendsMatchReceives(programs), "");
  auto& prog = programs[1];
  size_t first = prog.size();
  for (size_t i = 0; i < prog.size() && first == prog.size(); ++i)
    if (prog[i].kind == PipeAction::kRecv) first = i;
  ASSERT_LT(first, prog.size());
  bool swapped = false;
  for (size_t j = first + 1; j < prog.size() && !swapped; ++j) {
    if (prog[j].kind == PipeAction::kRecv && prog[j].peer == prog[first].peer &&
        !(prog[j].message == prog[first].message)) {
      std::swap(prog[first].message, prog[j].message);
      swapped = true;
    }
  }
  ASSERT_TRUE(swapped);
  EXPECT_NE(SendsMatchReceives(programs), "");
  EXPECT_NE(RunPrograms(programs), "");
}

TEST(PipelineProgramTest, EveryPassOfEveryChunkRunsOnceAfterItsPredecessor) {
  const std::vector<ScheduleCase> cases = {{core::Schedule::kGpipe, 1},
                                           {core::Schedule::k1F1B, 1},
                                           {core::Schedule::kInterleaved, 2},
                                           {core::Schedule::kZeroBubble, 1},
                                           {core::Schedule::kDualPipe, 1}};
  for (const ScheduleCase& c : cases) {
    const int64_t pp = 4, m = 8;
    const core::PlanSpec p = PipePlan(c.schedule, pp, m, c.vpp);
    const bool split = c.schedule == core::Schedule::kZeroBubble || c.schedule == core::Schedule::kDualPipe;
    const int64_t chunks = c.schedule == core::Schedule::kDualPipe ? 2 : c.vpp;
    for (int64_t stage = 0; stage < pp; ++stage) {
      auto order = PipelineOrder(p, stage);
      ASSERT_TRUE(order.ok()) << order.status().ToString();
      std::set<std::tuple<int, int64_t, int64_t>> seen;  // (pass, chunk, microbatch)
      for (const PipeSlot& s : *order) {
        EXPECT_TRUE(seen.insert({static_cast<int>(s.pass), s.chunk, s.microbatch}).second)
            << core::Name(c.schedule) << " stage " << stage << ": " << Name(s.pass) << " twice";
        // B after its F, W after its B; W only where the schedule splits it off.
        if (s.pass != PipePass::kForward) {
          EXPECT_TRUE(seen.contains({static_cast<int>(s.pass) - 1, s.chunk, s.microbatch}))
              << core::Name(c.schedule) << " stage " << stage << ": " << Name(s.pass) << " before its predecessor";
        }
        if (!split) {
          EXPECT_NE(s.pass, PipePass::kWeight) << core::Name(c.schedule);
        }
      }
      // Every microbatch through every chunk: DualPipe's chunk d takes direction d's microbatches
      // (4 each); the others all 8.
      const int64_t per_chunk = c.schedule == core::Schedule::kDualPipe ? m / 2 : m;
      EXPECT_EQ(static_cast<int64_t>(seen.size()), chunks * per_chunk * (split ? 3 : 2)) << core::Name(c.schedule);
    }
  }
}

// Most microbatches through F but not yet through the pass that frees them (B, or W when split).
int64_t MostInFlight(const std::vector<PipeSlot>& order, bool split) {
  int64_t live = 0, most = 0;
  for (const PipeSlot& s : order) {
    if (s.pass == PipePass::kForward) most = std::max(most, ++live);
    if (s.pass == (split ? PipePass::kWeight : PipePass::kBackward)) --live;
  }
  return most;
}

TEST(PipelineProgramTest, ZeroBubbleDelaysWeightGradientsByTheStageIndex) {
  // ZB-H1 (Qi et al. 2024, Fig. 3): 1F1B's F and B; stage i runs W of microbatch k - i after B k.
  // pp = 2, m = 4. Stage 0: 1 warm-up F, then F B W triples, the last B with its W.
  // Stage 1: no warm-up, W delayed by one, the last W at the end.
  using P = PipePass;
  const core::PlanSpec p = PipePlan(core::Schedule::kZeroBubble, 2, 4);
  auto s0 = PipelineOrder(p, 0), s1 = PipelineOrder(p, 1);
  ASSERT_TRUE(s0.ok() && s1.ok());
  EXPECT_EQ(*s0, (std::vector<PipeSlot>{{P::kForward, 0, 0},
                                        {P::kForward, 0, 1},
                                        {P::kBackward, 0, 0},
                                        {P::kWeight, 0, 0},
                                        {P::kForward, 0, 2},
                                        {P::kBackward, 0, 1},
                                        {P::kWeight, 0, 1},
                                        {P::kForward, 0, 3},
                                        {P::kBackward, 0, 2},
                                        {P::kWeight, 0, 2},
                                        {P::kBackward, 0, 3},
                                        {P::kWeight, 0, 3}}));
  EXPECT_EQ(*s1, (std::vector<PipeSlot>{{P::kForward, 0, 0},
                                        {P::kBackward, 0, 0},
                                        {P::kForward, 0, 1},
                                        {P::kBackward, 0, 1},
                                        {P::kWeight, 0, 0},
                                        {P::kForward, 0, 2},
                                        {P::kBackward, 0, 2},
                                        {P::kWeight, 0, 1},
                                        {P::kForward, 0, 3},
                                        {P::kBackward, 0, 3},
                                        {P::kWeight, 0, 2},
                                        {P::kWeight, 0, 3}}));
  // Every stage holds pp microbatches until their W: (pp - i) 1F1B warm-up + i delayed Ws.
  for (int64_t pp : {4, 8}) {
    const core::PlanSpec q = PipePlan(core::Schedule::kZeroBubble, pp, 3 * pp);
    for (int64_t stage = 0; stage < pp; ++stage) {
      auto order = PipelineOrder(q, stage);
      ASSERT_TRUE(order.ok());
      EXPECT_EQ(MostInFlight(*order, true), pp) << "pp " << pp << " stage " << stage;
    }
  }
}

TEST(PipelineProgramTest, DualPipeHoldsPpPlusOneStageMicrobatchesPerRank) {
  // DeepSeek-V3's Table 2: a DualPipe rank's activations peak at PP + 1 microbatches of one stage
  // (pp - j on direction 0's position j = rank, j + 1 on direction 1's position pp - 1 - rank).
  for (int64_t pp : {2, 4, 8}) {
    const core::PlanSpec p = PipePlan(core::Schedule::kDualPipe, pp, 4 * pp);
    for (int64_t stage = 0; stage < pp; ++stage) {
      auto order = PipelineOrder(p, stage);
      ASSERT_TRUE(order.ok());
      EXPECT_EQ(MostInFlight(*order, true), pp + 1) << "pp " << pp << " stage " << stage;
      int64_t first_direction = 0;
      for (const PipeSlot& s : *order) first_direction += s.pass == PipePass::kForward && s.chunk == 0;
      EXPECT_EQ(first_direction, 2 * pp);  // direction 0 takes microbatches [0, m/2)
    }
  }
}

TEST(PipelineProgramTest, PipelinesTheScheduleCannotOrderAreRefusedNamingTheField) {
  auto order = PipelineOrder(PipePlan(core::Schedule::kDualPipe, 3, 8), 0);
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("plan.pp: dualpipe needs an even pp"), std::string::npos)
      << order.status().message();
  auto prog = PipelineProgram(PipePlan(core::Schedule::kInterleaved, 4, 6, 2), 0);
  ASSERT_FALSE(prog.ok());
  EXPECT_NE(prog.status().message().find("plan.global_batch: interleaved needs"), std::string::npos)
      << prog.status().message();
  auto stage = PipelineOrder(PipePlan(core::Schedule::k1F1B, 2, 4), 2);
  ASSERT_FALSE(stage.ok());
  EXPECT_EQ(stage.status().code(), core::Status::Code::kInvalidArgument);
  core::PlanSpec zero = PipePlan(core::Schedule::k1F1B, 2, 4);
  zero.micro_batch = 0;  // would divide by zero in Microbatches()
  EXPECT_FALSE(PipelineOrder(zero, 0).ok());
}

TEST(ExecutorTest, ActivationOffloadIsRefusedNamingTheField) {
  // The runtime has no host copies of activations: a plan that offloads them is refused, not run
  // without them.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.plan.offload_activation_layers = 1;
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("plan.offload.activation_layers"), std::string::npos) << m.status().message();
}

TEST(ExecutorTest, CheckpointsInHostMemoryAreRefusedNamingTheField) {
  // The runtime keeps its checkpoints on the device: a plan that keeps them in host memory is
  // refused, not measured as if it did.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.plan.recompute = core::Recompute::kFull;
  s.plan.offload_checkpoints = true;
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("plan.offload.checkpoints"), std::string::npos) << m.status().message();
}

TEST(ExecutorTest, FineGrainedOffloadingIsRefusedNamingTheField) {
  // The runtime keeps every saved tensor on the device: a plan that offloads modules' saved
  // tensors is refused, not measured as if it did.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.plan.offload_modules = core::OffloadBit(core::OffloadModule::kCoreAttn);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("plan.offload.modules core_attn"), std::string::npos) << m.status().message();
}

TEST(ExecutorTest, OffloadedStatesAreRefusedNamingTheField) {
  // The runtime steps its optimizer on the device: a plan whose optimizer (or parameters) live in
  // host memory is refused, not measured as a device step.
  for (bool params : {false, true}) {
    core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
    s.plan.zero = 3;
    (params ? s.plan.offload_params : s.plan.offload_optimizer) = core::OffloadTarget::kCpu;
    auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
    auto m = ExecuteStep(*backend, s, FastOptions(), {});
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("plan.offload.optimizer/params"), std::string::npos) << m.status().message();
  }
}

TEST(ExecutorTest, Bf16LayersAreRefusedNamingTheField) {
  // The runtime runs every layer in the plan's one precision: an FP8 plan that keeps some layers
  // in BF16 is refused, not measured with those layers in FP8.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.plan.precision = core::Dtype::kFp8;
  s.plan.fp8_scaling = core::Fp8Scaling::kCurrent;
  s.plan.bf16_layers_at_end = 1;
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("plan.bf16_layers_at_start/_at_end"), std::string::npos) << m.status().message();
}

TEST(ExecutorTest, Fp8AttentionIsRefusedNamingTheField) {
  // The runtime's attention is its own 16-bit kernel: a plan with FP8 attention is refused, not
  // measured with 16-bit attention.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.plan.precision = core::Dtype::kFp8;
  s.plan.fp8_scaling = core::Fp8Scaling::kCurrent;
  s.plan.fp8_attention = true;
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("plan.fp8_attention"), std::string::npos) << m.status().message();
}

TEST(ExecutorTest, Nvfp4IsRefusedNamingTheFieldAndTheBackendsSayTheyHaveNoNvfp4) {
  // No backend of the runtime has NVFP4 GEMMs: a plan in nvfp4 is refused, not run in another
  // precision, and an nvfp4 tensor is not allocated.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.plan.precision = core::Dtype::kNvfp4;
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("plan.precision nvfp4"), std::string::npos) << m.status().message();
  auto t = backend->Allocate({4, 4}, core::Dtype::kNvfp4);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), core::Status::Code::kUnavailable);
  EXPECT_NE(t.status().message().find("nvfp4"), std::string::npos) << t.status().message();
}

TEST(ExecutorTest, PeakMemoryHoldsTheModelStatesTheMemoryModelPredicts) {
  // tiny (presets/models/tiny.json) on one GPU: every parameter on the one rank.
  //   word embedding 4096 x 256                                   = 1,048,576
  //   learned positions max_seq 512 x 256                         =   131,072
  //   per layer: qkv 256 x 768 + 768 = 197,376; out 256 x 256 + 256 = 65,792;
  //              fc1 256 x 1024 + 1024 = 263,168; fc2 1024 x 256 + 256 = 262,400;
  //              two layernorms 2 x (256 + 256) = 1,024          ->  789,760, x 2 layers = 1,579,520
  //   final layernorm 256 + 256 (the head is tied: no parameters)  =       512
  //   total                                                         = 2,759,680
  // Mixed-precision AdamW (the plan's default dtypes): bf16 weights 2 + bf16 grads 2 + fp32 master
  // 4 + fp32 m and v 8 = 16 bytes per parameter: 44,154,880 bytes of model states (no ZeRO, dp 1).
  // The cpu backend stores fp32: 4 + 4 + 4 + 8 = 20 bytes per parameter = 55,193,600 bytes.
  const core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  const core::StageMemory predicted = core::EstimateMemory(s.model, s.plan, s.gpu).stages.at(0);
  ASSERT_EQ(predicted.params, 2759680);
  const int64_t states = predicted.weights_bytes + predicted.grads_bytes + predicted.master_weights_bytes +
                         predicted.optimizer_moments_bytes;
  ASSERT_EQ(states, 44154880);

  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->step->memory.has_value());
  const StepMemory& mem = *m->step->memory;
  EXPECT_GE(m->step->peak_memory_bytes, states);
  EXPECT_GE(m->step->peak_memory_bytes, 55193600);  // the states as the cpu stores them
  EXPECT_EQ(mem.storage, "fp32");
  // Held exactly as predicted, kind by kind (logical bytes).
  EXPECT_EQ(mem.held.weights_bytes, predicted.weights_bytes);
  EXPECT_EQ(mem.held.grads_bytes, predicted.grads_bytes);
  EXPECT_EQ(mem.held.master_weights_bytes, predicted.master_weights_bytes);
  EXPECT_EQ(mem.held.optimizer_moments_bytes, predicted.optimizer_moments_bytes);
  EXPECT_EQ(mem.predicted.total_bytes, predicted.total_bytes);
  // pp = 1: one microbatch in flight, as the memory model says (activations: no recompute, one
  // layer set and the loss's buffers, so at least the predicted activations less the recompute
  // working set, which is 0 here).
  EXPECT_DOUBLE_EQ(mem.held.inflight_microbatches, 1.0);
  EXPECT_EQ(mem.held.activations_bytes, predicted.activations_bytes);
  int64_t by_dtype = 0;
  for (const auto& [dtype, bytes] : mem.logical_bytes_by_dtype) by_dtype += bytes;
  EXPECT_EQ(by_dtype, mem.logical_peak_bytes);
  EXPECT_EQ(mem.logical_peak_bytes, mem.held.total_bytes);
  // The states are real allocations: without them the peak drops by at least their cpu storage,
  // less the optimizer op's own fp32 buffers, which come back (fp32: logical = stored bytes).
  ExecutorOptions bare = FastOptions();
  bare.hold_training_state = false;
  auto w = ExecuteStep(*backend, s, bare, {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const int64_t optimizer_buffers = w->step->memory->held.working_set_bytes - mem.held.working_set_bytes;
  EXPECT_GT(optimizer_buffers, 0);
  EXPECT_GE(m->step->peak_memory_bytes - w->step->peak_memory_bytes, 55193600 - optimizer_buffers);
  EXPECT_EQ(w->step->memory->held.weights_bytes, 0);
  EXPECT_EQ(w->step->memory->predicted.total_bytes, predicted.total_bytes);
}

TEST(ExecutorTest, TheBf16OptimizersKeptGradientsAndStepCopyAreHeldAsTheMemoryModelPlacesThem) {
  // tiny on one GPU with DeepSpeed's BF16_Optimizer (plan.keep_lp_grads, fp32 gradients): 2,759,680
  // parameters (above), gradients 4 + 2 B each = 16,558,080 B (the fp32 buffer 11,038,720 and the
  // kept bf16 gradients 5,519,360), and the step's all-reduce copy, the fp32 buffer cast to bf16:
  // 2 B each = 5,519,360 B.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.plan.dtypes.grads = core::Dtype::kFp32;
  s.plan.keep_lp_grads = true;
  core::StageMemory predicted = core::EstimateMemory(s.model, s.plan, s.gpu).stages.at(0);
  ASSERT_EQ(predicted.grads_bytes, 16558080);
  ASSERT_EQ(predicted.step_copy_bytes, 5519360);
  ASSERT_EQ(predicted.step_copy_on_top_bytes, 5519360);  // an H100 has room beside the activations
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto cached = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  const StepMemory& mem = *cached->step->memory;
  EXPECT_EQ(mem.held.grads_bytes, 16558080);
  EXPECT_EQ(mem.held.step_copy_bytes, 5519360);
  EXPECT_EQ(mem.predicted.step_copy_bytes, 5519360);
  EXPECT_EQ(mem.held.activations_bytes, predicted.activations_bytes);
  EXPECT_EQ(mem.logical_peak_bytes, mem.held.total_bytes);  // the copy's block stays cached
  int64_t bf16 = 0;
  for (const auto& [dtype, bytes] : mem.logical_bytes_by_dtype)
    if (dtype == "bf16") bf16 = bytes;
  // bf16: the weights, the kept gradients and the copy (2 B a parameter each), the activations
  // and the op buffers' bf16 tensors.
  EXPECT_GE(bf16, 3 * 5519360 + mem.held.activations_bytes);

  // A GPU one byte short of the activations' peak with the copy (what CUDA reports of it,
  // GpuSpec::CapacityBytes): the allocator frees the cached activation blocks for it
  // (core::PlaceStepCopy), and the executor gives its activation pool back at the step and takes it
  // again after, so its peak is the larger of the two phases'.
  s.gpu.cuda_total_bytes = predicted.total_bytes - 1;
  predicted = core::EstimateMemory(s.model, s.plan, s.gpu).stages.at(0);
  ASSERT_LT(predicted.step_copy_on_top_bytes, predicted.step_copy_bytes);
  ExecutorOptions two = FastOptions();
  two.steps = 2;  // the second step's forwards run on the pool taken again
  auto released = ExecuteStep(*backend, s, two, {});
  ASSERT_TRUE(released.ok()) << released.status().ToString();
  const StepMemory& rel = *released->step->memory;
  EXPECT_EQ(rel.held.step_copy_bytes, 5519360);
  EXPECT_EQ(rel.held.total_bytes, mem.held.total_bytes);
  const int64_t overlap = std::min<int64_t>(rel.held.activations_bytes, 5519360);
  EXPECT_EQ(rel.logical_peak_bytes, rel.held.total_bytes - overlap);
  // The backend's storage (fp32 on the cpu: twice a bf16 tensor's bytes) peaks lower by the same.
  EXPECT_EQ(cached->step->peak_memory_bytes - released->step->peak_memory_bytes, 2 * overlap);
}

TEST(ExecutorTest, TheFrameworksBuffersAndPipelineBuffersAreHeldAsTheMemoryModelCountsThem) {
  // tiny under ZeRO-3 over 2 ranks (rank 0, its collectives modeled): the two layers gathered at
  // once (core::EstimateMemory: 2 x the largest layer, 789,760 parameters, x 2 B of bf16) =
  // 3,159,040 B, held as meshplan-run's buffers and predicted the same.
  core::Scenario s = Tiny(1, 1, 2, /*global_batch=*/2);
  s.plan.zero = 3;
  const core::StageMemory predicted = core::EstimateMemory(s.model, s.plan, s.gpu).stages.at(0);
  ASSERT_EQ(predicted.zero3_prefetch_bytes, 3159040);
  ASSERT_EQ(core::FrameworkBufferBytes(predicted, s.plan), 3159040);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->step->memory->held.buffers_bytes, 3159040);
  EXPECT_EQ(m->step->memory->predicted.buffers_bytes, 3159040);
  EXPECT_EQ(m->step->memory->logical_peak_bytes, m->step->memory->held.total_bytes);

  // PyTorch's pipeline stage (plan.keep_pp_outputs) on the first of 2 stages, 4 microbatches of
  // one 64-token sequence: a kept output and a gradient receive buffer per microbatch, 2 x 4 x
  // 64 x 256 x 2 B = 262,144 B, counted with the activations by the memory model and held with
  // them: the held activations equal the predicted ones (no recomputation: no working set).
  core::Scenario pp = Tiny(1, 2, 1, /*global_batch=*/4);
  pp.plan.keep_pp_outputs = true;
  const core::StageMemory first = core::EstimateMemory(pp.model, pp.plan, pp.gpu).stages.at(0);
  ASSERT_EQ(first.pipeline_buffers_bytes, 262144);
  ExecutorOptions rank0 = FastOptions();
  rank0.rank = 0;
  auto mp = ExecuteStep(*backend, pp, rank0, {});
  ASSERT_TRUE(mp.ok()) << mp.status().ToString();
  EXPECT_EQ(mp->step->memory->held.activations_bytes, first.activations_bytes);
  EXPECT_EQ(mp->step->memory->held.buffers_bytes, 0);
}

TEST(ExecutorTest, RankSlicesRunEverySchedulesOrderWithWeightPassesWhereSplit) {
  // One process, rank 1 of pp = 2 under each schedule: the backward-weight ops run once per
  // microbatch and chunk (W passes for zero-bubble and DualPipe, inside B otherwise).
  for (core::Schedule schedule :
       {core::Schedule::kInterleaved, core::Schedule::kZeroBubble, core::Schedule::kDualPipe}) {
    core::Scenario s = Tiny(1, 2, 1);
    s.plan.schedule = schedule;
    if (schedule == core::Schedule::kInterleaved) {
      s.model.layers = 4;  // pp x vpp = 4 chunks of one layer
      s.plan.vpp = 2;
    }
    core::Diagnostics d;
    core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
    ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
    auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
    ExecutorOptions o = FastOptions();
    o.rank = 1;
    o.mode = "rank_slice";
    auto m = ExecuteStep(*backend, s, o, {});
    ASSERT_TRUE(m.ok()) << core::Name(schedule) << ": " << m.status().ToString();
    // Dense layers on rank 1: interleaved 2 of 4 (chunks 1 and 3), zero-bubble 1 of 2,
    // DualPipe both (chunk 1 for direction 0, chunk 0 for direction 1).
    const int64_t layers = schedule == core::Schedule::kZeroBubble ? 1 : 2;
    const int64_t microbatches = s.plan.Microbatches();
    bool weight_op = false;
    for (const OpMeasurement& op : m->ops) {
      if (op.section != "dense_layer" || op.pass != core::Pass::kBackwardWeight) continue;
      weight_op = true;
      // DualPipe: each chunk takes one direction's half of the microbatches.
      const int64_t per_layer = schedule == core::Schedule::kDualPipe ? microbatches / 2 : microbatches;
      EXPECT_EQ(op.calls_per_step, layers * per_layer) << core::Name(schedule) << " " << op.name;
    }
    EXPECT_TRUE(weight_op) << core::Name(schedule);
    ASSERT_TRUE(m->step->memory.has_value());
    EXPECT_GT(m->step->memory->held.activations_bytes, 0);
  }
}

TEST(ExecutorTest, RunsEveryStepGraphOpOfTheStageWithItsCallCount) {
  const core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const core::StepGraph g = core::BuildStepGraph(s.model, s.plan);
  // Every op of every list the single stage holds, once: embedding, dense layer (x2), head.
  size_t expected_ops = g.embedding.size() + g.dense_layer.size() + g.head.size();
  EXPECT_EQ(m->ops.size(), expected_ops);
  double flops = 0;
  int64_t calls = 0;
  for (const OpMeasurement& o : m->ops) {
    const std::vector<core::Op>& list = o.section == "embedding"     ? g.embedding
                                        : o.section == "dense_layer" ? g.dense_layer
                                                                     : g.head;
    ASSERT_LT(o.index, static_cast<int64_t>(list.size()));
    const core::Op& op = list[static_cast<size_t>(o.index)];
    EXPECT_EQ(o.name, op.name);
    EXPECT_EQ(o.pass, op.pass);
    // Two layers in the dense list; per microbatch unless once per step.
    const int64_t instances = o.section == "dense_layer" ? s.model.layers : 1;
    const int64_t per = op.pass == core::Pass::kStep ? 1 : g.microbatches;
    EXPECT_EQ(o.calls_per_step, instances * per) << o.section << "/" << o.name;
    EXPECT_FALSE(o.modeled);
    // The fake clock: exactly 1 ms per call.
    EXPECT_NEAR(o.time_s, 1e-3 * static_cast<double>(o.calls_per_step), 1e-9) << o.name;
    EXPECT_DOUBLE_EQ(o.flops, op.Flops() * static_cast<double>(o.calls_per_step));
    if (op.kind == core::OpKind::kGemm || op.kind == core::OpKind::kAttention) flops += o.flops;
    calls += o.calls_per_step;
  }
  // One step event before and after, two per call.
  EXPECT_NEAR(m->step->measured_s, 1e-3 * static_cast<double>(2 * calls + 1), 1e-9);
  EXPECT_DOUBLE_EQ(m->step->flops, flops);
  EXPECT_DOUBLE_EQ(m->step->time_s, m->step->measured_s);
  EXPECT_NEAR(m->step->mfu, flops / (m->step->time_s * 1e10), 1e-12);
  EXPECT_GT(m->step->peak_memory_bytes, 0);
  EXPECT_EQ(m->mode, "single_process");
}

TEST(ExecutorTest, RunsTheMtpModuleAsTheSimulatorCostsIt) {
  // tiny with one MTP module: its layer runs with the stage's layers (2 + 1 dense-layer instances
  // per microbatch, as core::StageCompositionOf counts them) and its embedding, norms, eh_proj and
  // second head run in the head list; the states held are the memory model's (eh_proj 2 x 256 x
  // 256 + three layernorms 3 x 512 + one more layer 789,760 = 922,368 more parameters).
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  const int64_t base_params = core::EstimateMemory(s.model, s.plan, s.gpu).stages.at(0).params;
  s.model.mtp_layers = 1;
  const core::StageMemory predicted = core::EstimateMemory(s.model, s.plan, s.gpu).stages.at(0);
  EXPECT_EQ(predicted.params - base_params, 2 * 256 * 256 + 3 * 512 + 789760);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const core::StepGraph g = core::BuildStepGraph(s.model, s.plan);
  EXPECT_EQ(m->ops.size(), g.embedding.size() + g.dense_layer.size() + g.head.size());
  int mtp_ops = 0;
  for (const OpMeasurement& o : m->ops) {
    if (o.section == "dense_layer" && o.pass != core::Pass::kStep) {
      EXPECT_EQ(o.calls_per_step, 3 * g.microbatches) << o.name;
    }
    mtp_ops += o.name.rfind("mtp_", 0) == 0;
  }
  EXPECT_GT(mtp_ops, 0);
  EXPECT_EQ(m->step->memory->held.weights_bytes, predicted.weights_bytes);
}

TEST(ExecutorTest, RankSliceModelsCollectivesWithoutARealGroup) {
  const core::Scenario s = Tiny(2, 2, 2);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  ExecutorOptions o = FastOptions();
  o.rank = 5;  // tp 1, dp 0, pp stage 1 (the last: head, no embedding)
  o.mode = "rank_slice";
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stage, 1);
  bool head = false, embedding = false, tp_modeled = false, p2p_modeled = false;
  double exposed = 0;
  for (const OpMeasurement& op : m->ops) {
    head |= op.section == "head";
    embedding |= op.section == "embedding";
    if (op.kind == core::OpKind::kCollective || op.kind == core::OpKind::kP2p) {
      EXPECT_TRUE(op.modeled) << op.name;
      EXPECT_GT(op.time_s, 0) << op.name;  // the alpha-beta prediction, never free
      tp_modeled |= op.group == CommGroup::kTp;
      p2p_modeled |= op.kind == core::OpKind::kP2p;
      if (!op.overlappable) exposed += op.time_s;
    }
  }
  EXPECT_TRUE(head);
  EXPECT_FALSE(embedding);
  EXPECT_TRUE(tp_modeled);
  EXPECT_TRUE(p2p_modeled);
  EXPECT_NEAR(m->step->modeled_comm_s, exposed, 1e-15);
  EXPECT_DOUBLE_EQ(m->step->time_s, m->step->measured_s + m->step->modeled_comm_s);
  EXPECT_FALSE(m->notes.empty());
}

TEST(ExecutorTest, RejectsARankOutsideThePlan) {
  const core::Scenario s = Tiny(2, 1, 1);
  auto backend = MakeCpuBackend();
  ExecutorOptions o = FastOptions();
  o.rank = 2;
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), core::Status::Code::kInvalidArgument);
}

TEST(ExecutorTest, CpuPeakIsAMeasuredGemmCeilingWhenNoneIsGiven) {
  const core::Scenario s = Tiny(1, 1, 1, 1);
  auto backend = MakeCpuBackend();
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 1;
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->peak.has_value());
  EXPECT_GT(m->peak->flops_per_s, 0);
  EXPECT_NE(m->peak->source.find("measured"), std::string::npos);
  EXPECT_GT(m->step->mfu, 0);
}

TEST(BenchTest, GemmReportsFlopsAndChecksTheResult) {
  auto backend = MakeCpuBackend();
  auto r = BenchGemm(*backend, {64, 48, 32, core::Dtype::kBf16}, {.warmup = 1, .iterations = 2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->flops, 2.0 * 64 * 48 * 32);  // 2mnk
  EXPECT_GT(r->time_s, 0);
  EXPECT_LE(r->max_rel_error, RelativeTolerance(core::Dtype::kBf16, 32));
  EXPECT_FALSE(BenchGemm(*backend, {0, 8, 8, core::Dtype::kFp32}, {}).ok());
}

TEST(BenchTest, CollectivesOnOneRankAreCorrectWithNcclTestsFactors) {
  auto backend = MakeCpuBackend();
  auto self = MakeSelfComm("world");
  auto rows = BenchCollectives(*backend, *self,
                               {core::CollectiveKind::kAllReduce, core::CollectiveKind::kAllGather,
                                core::CollectiveKind::kBroadcast, core::CollectiveKind::kSendRecv},
                               SizeSweep(64, 256), {.warmup = 1, .iterations = 2});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 9u);  // send/recv needs two ranks; 3 sizes x 3 kinds
  for (const auto& r : *rows) {
    EXPECT_EQ(r.wrong, 0);
    EXPECT_EQ(r.ranks, 1);
    // One rank: all-reduce and all-gather move nothing over a bus ((n-1)/n = 0); broadcast's factor is 1.
    if (r.kind == core::CollectiveKind::kBroadcast) EXPECT_DOUBLE_EQ(r.busbw_bytes_per_s, r.algbw_bytes_per_s);
    else EXPECT_EQ(r.busbw_bytes_per_s, 0);
  }
  EXPECT_EQ(SizeSweep(8, 64), (std::vector<int64_t>{8, 16, 32, 64}));
}

TEST(MeasurementTest, JsonRoundTrips) {
  const core::Scenario s = Tiny(2, 2, 2);
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  ExecutorOptions o = FastOptions();
  o.rank = 1;
  auto m = ExecuteStep(*backend, s, o, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Measurement in = *m;
  in.tool = "meshplan-run test";
  in.hardware.backend = "cpu";
  in.plan = core::PlanFile{};
  in.plan->plan = s.plan;
  in.plan->model = s.model;
  in.gemm.push_back({{64, 64, 64, core::Dtype::kBf16}, 1e-3, 2.0 * 64 * 64 * 64, 524288e3, 1e-3, 5});
  in.hardware.gpus.push_back({"NVIDIA H100 80GB HBM3", int64_t{85} << 30, 9, 0, 132});
  in.ranks.push_back({1, 0, 0.25, 123456789, 98765432, 876543210});
  const std::string json = MeasurementToJson(in);
  auto out = ParseMeasurementJson(json);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->schema, "meshplan.measurement/1");
  EXPECT_EQ(out->ops.size(), in.ops.size());
  for (size_t i = 0; i < in.ops.size(); ++i) {
    EXPECT_EQ(out->ops[i].name, in.ops[i].name);
    EXPECT_EQ(out->ops[i].kind, in.ops[i].kind);
    EXPECT_EQ(out->ops[i].pass, in.ops[i].pass);
    EXPECT_EQ(out->ops[i].group, in.ops[i].group);
    EXPECT_EQ(out->ops[i].modeled, in.ops[i].modeled);
    EXPECT_DOUBLE_EQ(out->ops[i].time_s, in.ops[i].time_s);
  }
  EXPECT_DOUBLE_EQ(out->step->time_s, in.step->time_s);
  EXPECT_DOUBLE_EQ(out->step->mfu, in.step->mfu);
  EXPECT_EQ(out->step->peak_memory_bytes, in.step->peak_memory_bytes);
  ASSERT_TRUE(out->step->memory.has_value());
  EXPECT_EQ(out->step->memory->logical_peak_bytes, in.step->memory->logical_peak_bytes);
  EXPECT_EQ(out->step->memory->held.optimizer_moments_bytes, in.step->memory->held.optimizer_moments_bytes);
  EXPECT_EQ(out->step->memory->predicted.other_bytes, in.step->memory->predicted.other_bytes);
  EXPECT_EQ(out->step->memory->logical_bytes_by_dtype, in.step->memory->logical_bytes_by_dtype);
  ASSERT_EQ(out->ranks.size(), 1u);
  EXPECT_EQ(out->ranks[0].logical_peak_memory_bytes, 98765432);
  EXPECT_EQ(out->ranks[0].predicted_memory_bytes, 876543210);
  ASSERT_TRUE(out->plan.has_value());
  EXPECT_EQ(out->plan->plan, s.plan);
  ASSERT_EQ(out->gemm.size(), 1u);
  EXPECT_EQ(out->gemm[0].shape.m, 64);
  ASSERT_EQ(out->hardware.gpus.size(), 1u);  // what calibrate maps to a GPU preset
  EXPECT_EQ(out->hardware.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(out->hardware.gpus[0].compute_capability_major, 9);
  EXPECT_EQ(out->hardware.gpus[0].sm_count, 132);
  EXPECT_EQ(MeasurementToJson(*out), json);  // a fixed point

  std::string bad_cc = json;
  bad_cc.replace(bad_cc.find("\"9.0\""), 5, "\"9x0\"");
  auto cc = ParseMeasurementJson(bad_cc);
  ASSERT_FALSE(cc.ok());
  EXPECT_NE(cc.status().message().find("hardware.gpus[0].compute_capability: must be \"MAJOR.MINOR\""),
            std::string::npos)
      << cc.status().message();

  auto bad =
      ParseMeasurementJson(R"({"schema": "meshplan.measurement/2", "mode": "mpi", "hardware": {"backend": "cpu"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("schema"), std::string::npos);
  // A missing field is said as required, a wrong type in words: the JSON library's own tags
  // ("[json.exception.out_of_range.403]") are not shown.
  auto no_schema = ParseMeasurementJson("{}");
  ASSERT_FALSE(no_schema.ok());
  EXPECT_EQ(no_schema.status().message(), "measurement.schema: is required (key 'schema' not found)");
  auto mode_number = ParseMeasurementJson(R"({"schema": "meshplan.measurement/1", "mode": 5})");
  ASSERT_FALSE(mode_number.ok());
  EXPECT_EQ(mode_number.status().message(), "measurement.mode: type must be string, but is number");

  // An integer field holding a float out of int64's range (fuzz_measurement's finding: the cast
  // was undefined behaviour) or a fraction is an error naming the field; a whole-number float
  // (1e6 typed by hand) reads as the integer.
  std::string huge = json;
  const size_t at = huge.find("\"calls_per_step\": ");
  ASSERT_NE(at, std::string::npos);
  const size_t end = huge.find_first_of(",\n", at);
  huge.replace(at, end - at, "\"calls_per_step\": 6.666666666666667e+45");
  auto h = ParseMeasurementJson(huge);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("measurement.ops[0]: must be an integer (got 6.666666666666667e+45)"),
            std::string::npos)
      << h.status().message();
  std::string whole = json;
  whole.replace(at, end - at, "\"calls_per_step\": 1e6");
  auto w = ParseMeasurementJson(whole);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->ops[0].calls_per_step, 1000000);
}

TEST(ExecutorTest, SlidingWindowModelsAreRefusedNotRunAsGlobalAttention) {
  // The backends' attention kernels have no window: a windowed model would be measured as a
  // global one, so the run stops naming the field.
  core::Scenario s = Tiny(1, 1, 1, /*global_batch=*/2);
  s.model.sliding_window = 8;
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto m = ExecuteStep(*backend, s, FastOptions(), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("model.sliding_window"), std::string::npos) << m.status().ToString();
}

}  // namespace
}  // namespace meshplan::runtime
