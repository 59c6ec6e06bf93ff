// The analytic step model: schedules' bubbles, overlap rules, and the metrics' definitions.
#include "sim/step_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/flops.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/step_graph.h"
#include "core/validate.h"
#include "sim/des.h"

namespace meshplan::sim {
namespace {

std::vector<StageTimes> Uniform(int64_t p, double f, double b, double w) {
  StageTimes t;
  t.forward_s = f;
  t.backward_input_s = b;
  t.backward_weight_s = w;
  return std::vector<StageTimes>(static_cast<size_t>(p), t);
}

TEST(SchedulePipelineTest, OneFOneBBubbleIsPMinusOneOverMPlusPMinusOne) {
  // Narayanan 2021 §2.2.1: (p-1)/(m+p-1) of the pipeline time for uniform stages.
  for (int64_t p : {2, 4, 8, 16}) {
    for (int64_t m : {1, 8, 64}) {
      const PipelineTime t = SchedulePipeline(core::Schedule::k1F1B, Uniform(p, 1, 1, 1), m, 1);
      const double frac = t.bubble_s / (t.work_s + t.bubble_s);
      EXPECT_NEAR(frac, static_cast<double>(p - 1) / static_cast<double>(m + p - 1), 1e-12) << p << " " << m;
    }
  }
}

TEST(SchedulePipelineTest, InterleavingDividesTheBubbleByV) {
  const auto one = SchedulePipeline(core::Schedule::k1F1B, Uniform(8, 1, 1, 1), 64, 1);
  const auto four = SchedulePipeline(core::Schedule::kInterleaved, Uniform(8, 1, 1, 1), 64, 4);
  EXPECT_DOUBLE_EQ(four.bubble_s * 4, one.bubble_s);
  EXPECT_DOUBLE_EQ(four.work_s, one.work_s);
}

TEST(SchedulePipelineTest, ZeroBubbleIsSmallerThanOneFOneB) {
  // ZB-H1: (p-1)(F + B - W) = 7 x 1 vs 1F1B's (p-1)(F + B + W) = 7 x 3 with F = B = W = 1.
  const auto ofob = SchedulePipeline(core::Schedule::k1F1B, Uniform(8, 1, 1, 1), 64, 1);
  const auto zb = SchedulePipeline(core::Schedule::kZeroBubble, Uniform(8, 1, 1, 1), 64, 1);
  EXPECT_DOUBLE_EQ(zb.bubble_s, 7.0);
  EXPECT_DOUBLE_EQ(ofob.bubble_s, 21.0);
}

TEST(SchedulePipelineTest, SlowestStageSetsThePace) {
  auto stages = Uniform(4, 1, 1, 1);
  stages[2].forward_s = 2;  // 4 s per microbatch instead of 3
  const auto t = SchedulePipeline(core::Schedule::k1F1B, stages, 10, 1);
  EXPECT_EQ(t.critical_stage, 2);
  EXPECT_DOUBLE_EQ(t.work_s, 40);
  EXPECT_DOUBLE_EQ(t.bubble_s, 3 + 3 + 3);
}

struct Scenario {
  core::ModelSpec model;
  core::GpuSpec gpu;
  core::ClusterSpec cluster;
};
Scenario Load(const char* model) {
  Scenario s;
  s.model = *core::LoadModel(model);
  s.gpu = *core::LoadGpu("h100-sxm");
  s.cluster = *core::LoadCluster("dgx-h100");
  return s;
}

TEST(StepModelTest, MtpModuleRunsOnTheLastStage) {
  // Llama-3-8B on pp 4 (8 layers a stage) with one MTP module: stages 0-2 are unchanged; the last
  // stage's forward grows by one more layer and one more head (its norm, output GEMM and loss),
  // plus the module's embedding, enorm/hnorm and eh_proj (a 2h x h GEMM: 2 x 4096 x 2h x h, about
  // a sixth of a layer's matmuls). Base: stage 1 = 8 layers + send, stage 3 = 8 layers + send +
  // head, so one layer <= stage1/8 and the head = stage3 - stage1.
  core::ModelSpec m = *core::LoadModel("llama3-8b");
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  core::PlanSpec p;
  p.pp = 4;
  p.dp = 2;
  p.gpus = 8;
  p.seq_len = 4096;
  p.global_batch = 16;
  const StepEstimate base = EstimateStep(m, p, g, c, core::Profile{});
  core::ModelSpec mtp = m;
  mtp.mtp_layers = 1;
  const StepEstimate e = EstimateStep(mtp, p, g, c, core::Profile{});
  ASSERT_EQ(e.stages.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(e.stages[i].forward_s, base.stages[i].forward_s);
  const double layer = base.stages[1].forward_s / 8, head = base.stages[3].forward_s - base.stages[1].forward_s;
  const double grown = e.stages[3].forward_s - base.stages[3].forward_s;
  EXPECT_GT(grown, 0.9 * layer + head);
  EXPECT_LT(grown, 1.3 * layer + head);
  EXPECT_EQ(e.critical_stage, 3);
  EXPECT_GT(e.time_s, base.time_s);
}

TEST(StepModelTest, CostedOpsAddUpToTheLayerTimes) {
  // `report --ops` lists the ops as the step model costs them: on one GPU (pace 1, no
  // collectives in the layer) a layer's forward is the sum of its forward ops, its backward-input
  // time the sum of its input-gradient and recomputed ops, its weight-gradient time the sum of its
  // weight-gradient ops.
  Scenario s = Load("llama3-8b");
  core::PlanSpec p;
  p.gpus = 1;
  p.seq_len = 4096;
  p.global_batch = 4;
  p.recompute = core::Recompute::kSelective;
  const StageTimes t = DenseLayerTimes(s.model, p, s.gpu, s.cluster, core::Profile{});
  const std::vector<CostedOpList> lists = CostStepGraph(s.model, p, s.gpu, s.cluster, core::Profile{});
  ASSERT_GE(lists.size(), 3u);
  EXPECT_STREQ(lists[0].name, "dense layer");
  EXPECT_EQ(lists[0].count, 32);
  double sum[5] = {};
  for (const CostedOp& c : lists[0].ops) {
    EXPECT_NE(c.op.kind, core::OpKind::kCollective) << c.op.name;
    sum[static_cast<int>(c.op.pass)] += c.time_s;
  }
  EXPECT_GT(sum[static_cast<int>(core::Pass::kRecompute)], 0);
  EXPECT_NEAR(sum[static_cast<int>(core::Pass::kForward)], t.forward_s, 1e-15);
  EXPECT_NEAR(sum[static_cast<int>(core::Pass::kBackwardInput)] + sum[static_cast<int>(core::Pass::kRecompute)],
              t.backward_input_s, 1e-15);
  EXPECT_NEAR(sum[static_cast<int>(core::Pass::kBackwardWeight)], t.backward_weight_s, 1e-15);

  // On 16 GPUs (TP 8 inside a dgx-h100 node, PP 2 across two): the TP collectives span 8 ranks in
  // one domain; the pipeline send crosses the network (2 ranks, 1 per domain); compute ops carry
  // the slowest-of-16 pace.
  p.gpus = 16;
  p.tp = 8;
  p.pp = 2;
  p.sequence_parallel = true;
  p.global_batch = 8;
  const std::vector<CostedOpList> big = CostStepGraph(s.model, p, s.gpu, s.cluster, core::Profile{});
  bool saw_tp = false, saw_send = false;
  for (const CostedOpList& l : big)
    for (const CostedOp& c : l.ops) {
      if (c.op.kind == core::OpKind::kGemm)
        EXPECT_DOUBLE_EQ(c.time_s, SlowestGpuPace(p, s.gpu) * ComputeOpTime(c.op, s.gpu, core::Profile{}));
      if (c.op.group == core::CommGroup::kTp && c.op.kind == core::OpKind::kCollective) {
        saw_tp = true;
        EXPECT_EQ(c.span.size, 8);
        EXPECT_EQ(c.span.domains, 1);
      }
      if (std::string_view(l.name) == "pipeline send") {
        saw_send = true;
        EXPECT_EQ(c.span.size, 2);
        EXPECT_EQ(c.span.domains, 2);
        EXPECT_FALSE(c.hidden);
      }
    }
  EXPECT_TRUE(saw_tp);
  EXPECT_TRUE(saw_send);
}

TEST(StepModelTest, GemmsPayForTheirPartialLastWave) {
  // Korthikanti 2022's 22B layer at t = 8, b = 4, s = 2048 on A100 (108 SMs): the QKV GEMM's
  // output is 8192 x 2304 = 64 x 9 = 576 tiles of 128 x 256, 5.33 waves run as 6: 576 / 648.
  const core::GpuSpec a100 = *core::LoadGpu("a100-80g"), h100 = *core::LoadGpu("h100-sxm");
  EXPECT_EQ(a100.sms, 108);
  EXPECT_EQ(h100.sms, 132);
  core::Op qkv;
  qkv.kind = core::OpKind::kGemm;
  qkv.m = 8192;
  qkv.n = 2304;
  qkv.k = 6144;
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(qkv, a100), 576.0 / 648.0);
  // Its input gradient dX is 8192 x 6144: 64 x 24 = 1536 tiles, 14.2 waves run as 15.
  qkv.pass = core::Pass::kBackwardInput;
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(qkv, a100), 1536.0 / 1620.0);
  // Its weight gradient dW is 6144 x 2304: 48 x 9 = 432 tiles, exactly 4 waves.
  qkv.pass = core::Pass::kBackwardWeight;
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(qkv, a100), 1.0);
  // Batched GEMMs share the waves: 16 local experts of 1024 x 5760 (8 x 23 tiles each) on A100,
  // 2944 tiles in 27.3 waves run as 28.
  core::Op experts;
  experts.kind = core::OpKind::kGemm;
  experts.m = 1024;
  experts.n = 5760;
  experts.k = 2880;
  experts.batch = 16;
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(experts, a100), 2944.0 / (28.0 * 108));
  // Hopper pays none (gemm_wave_quantization false): on an H200 with cuBLAS 13.1, 8192 x 1280 x 8192
  // (64 x 5 = 320 tiles, 2.4 waves run as 3: 0.81 by the rule) ran 810 TFLOP/s against 813 at
  // N = 1024 (tests/data/gpu/h200-2026-11-28/gemm_shapes.json).
  EXPECT_FALSE(h100.gemm_wave_quantization);
  EXPECT_TRUE(a100.gemm_wave_quantization);
  core::Op tp8;
  tp8.kind = core::OpKind::kGemm;
  tp8.m = 8192;
  tp8.n = 1280;
  tp8.k = 8192;
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(tp8, h100), 1.0);
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(tp8, *core::LoadGpu("h200")), 1.0);
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(tp8, *core::LoadGpu("b200")), 320.0 / (3.0 * 148));
  // Under one wave (32 tiles) cuBLAS picks smaller tiles or splits k: no wave term, the F_half
  // ramp costs it. A GPU without an SM count has none either.
  core::Op small = qkv;
  small.pass = core::Pass::kForward;
  small.m = small.n = 1024;
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(small, a100), 1.0);
  core::GpuSpec unknown = a100;
  unknown.sms = 0;
  qkv.pass = core::Pass::kForward;
  EXPECT_DOUBLE_EQ(GemmWaveEfficiency(qkv, unknown), 1.0);
  // The time: the FLOPs over the wave fraction, (2mnk / 0.889 + F_half) / (312e12 x 0.80) + 4 us.
  const double f = 2.0 * 8192 * 2304 * 6144;
  EXPECT_NEAR(ComputeOpTime(qkv, a100, core::Profile{}), (f / (576.0 / 648.0) + 1e9) / (312e12 * 0.80) + 4e-6, 1e-12);
}

TEST(StepModelTest, GemmsRunAtTheGpuPresetsSustainedEfficiencyUnlessTheProfileMeasuredOne) {
  // H200's MSMF (ml-engineering @082816f9be): 708.5 of 989 bf16 TFLOP/s = 0.716, 1288.7 of 1979
  // fp8 = 0.651; with all 8 GPUs of the node busy a typical one runs at their mean, 698.6 of 702.9
  // alone = 0.9939: 0.712 and 0.647 (the slowest one's pace is SlowestGpuPace's, below). H100 SXM
  // scales those by its own burst best over the H200's (MAMF 794.5/841.9 bf16, 1402.6/1491.9
  // fp8): 0.672 and 0.608. MSMF is the best shape's; the layer shapes a step runs settled lower on
  // an H200 at 700 W (median of four 676.0 against the MSMF shape's 706.9 bf16; fp8 8192^3 1216.1
  // against 1250.4: tests/data/gpu/h200-2026-11-28/sustained*.json): x 0.9563 and x 0.9726, so
  // H100 0.643 and 0.591, H200 0.681 and 0.629. A100 has none, so the profile's 0.80. B200: 0.647
  // and 0.621 alone, x 0.9799 (mean 1426.4 over 1455.7 alone): 0.634 and 0.608.
  const core::GpuSpec h100 = *core::LoadGpu("h100-sxm"), a100 = *core::LoadGpu("a100-80g"),
                      b200 = *core::LoadGpu("b200"), h200 = *core::LoadGpu("h200");
  const core::Profile defaults;
  EXPECT_NEAR(698.6 / 702.9, 0.9939, 5e-5);
  EXPECT_NEAR(1426.4 / 1455.7, 0.9799, 5e-5);
  EXPECT_NEAR(0.716 * 0.9939, 0.712, 5e-4);
  EXPECT_NEAR(0.712 * 794.5 / 841.9, 0.672, 5e-4);
  EXPECT_NEAR(0.647 * 1402.6 / 1491.9, 0.608, 5e-4);
  EXPECT_NEAR((673.6 + 678.4) / 2 / 706.9, 0.9563, 5e-5);
  EXPECT_NEAR(1216.1 / 1250.4, 0.9726, 5e-5);
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, h100, core::Dtype::kBf16), 0.643);  // 0.672 x 0.9563
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, h100, core::Dtype::kFp8), 0.591);   // 0.608 x 0.9726
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, h200, core::Dtype::kBf16), 0.681);  // 0.712 x 0.9563
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, h200, core::Dtype::kFp8), 0.629);   // 0.647 x 0.9726
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, b200, core::Dtype::kBf16), 0.634);
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, b200, core::Dtype::kFp8), 0.608);
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, a100, core::Dtype::kBf16), 0.80);
  // One 8192^3 bf16 GEMM on H100 (no wave term on Hopper): (2 x 8192^3 + F_half 1e9) /
  // (989.4e12 x 0.643) + 4 us = 1.7344 ms, on one GPU (the pace of the slowest of n is the plan's,
  // not the op's). The settled rate it stands for, 0.643 / 0.9939 x 989.4 = 640 TFLOP/s alone, is
  // the H200's measured 666.9 x H100/H200 MAMF 794.5/841.9 = 629 within 2%.
  core::Op op;
  op.kind = core::OpKind::kGemm;
  op.m = op.n = op.k = 8192;
  op.dtype = core::Dtype::kBf16;
  const double f = 2.0 * 8192.0 * 8192.0 * 8192.0;
  EXPECT_NEAR(ComputeOpTime(op, h100, defaults), (f + 1e9) / (989.4e12 * 0.643) + 4e-6, 1e-12);
  // A measured profile (meshplan calibrate, or a file listing gemm_efficiency) wins.
  auto measured = core::ParseProfileJson(R"({"version": 2, "name": "m", "gemm_efficiency": {"bf16": 0.75}})");
  ASSERT_TRUE(measured.ok()) << measured.status().ToString();
  EXPECT_TRUE(measured->gemm_efficiency_measured);
  EXPECT_DOUBLE_EQ(GemmEfficiency(*measured, h100, core::Dtype::kBf16), 0.75);
  EXPECT_NEAR(ComputeOpTime(op, h100, *measured), (f + 1e9) / (989.4e12 * 0.75) + 4e-6, 1e-12);
  // The default profile written out does not list it, so read back it still defers to the GPU.
  auto back = core::ParseProfileJson(core::ProfileToJson(defaults));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->gemm_efficiency_measured);
  EXPECT_DOUBLE_EQ(GemmEfficiency(*back, h100, core::Dtype::kBf16), 0.643);
  // A misspelt key is refused with the nearest known one, not read as the default.
  auto typo = core::ParseProfileJson(R"({"version": 2, "name": "m", "gemm_efficency": {"bf16": 0.75}})");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("profile.gemm_efficency: is not a known field (did you mean "
                                         "\"gemm_efficiency\"?)"),
            std::string::npos)
      << typo.status().message();
}

// A bf16 GEMM op of m x n x k, one instance.
core::Op Bf16Gemm(int64_t m, int64_t n, int64_t k) {
  core::Op op;
  op.kind = core::OpKind::kGemm;
  op.dtype = core::Dtype::kBf16;
  op.m = m;
  op.n = n;
  op.k = k;
  return op;
}

TEST(StepModelTest, Fp8DelayedScalingReducesTheAmaxesAcrossTheStageTwiceAMicrobatch) {
  // Transformer Engine's DelayedScaling under Megatron-Core (AmaxReductionTime): leaving the
  // block's fp8_autocast all-reduces the forward amaxes over TP x DP x CP, the backward's first
  // module the backward ones, each synchronously. Llama 3 8B at TP 2 on two H100s of one node, no
  // data parallelism (so no gradient synchronisation): 2 ranks, NCCL's LL ring 6.6 + 2 x 0.6 =
  // 7.8 us (under NVLS's 25), twice a microbatch, 4 microbatches: 62.4 us of DP communication.
  const core::ModelSpec m = *core::LoadModel("llama3-8b");
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  core::PlanSpec p;
  p.gpus = 2;
  p.tp = 2;
  p.sequence_parallel = true;
  p.seq_len = 4096;
  p.global_batch = 4;
  p.precision = core::Dtype::kFp8;
  p.fp8_scaling = core::Fp8Scaling::kDelayed;
  p.transformer_engine = true;
  EXPECT_NEAR(AmaxReductionTime(p, c).forward_s, 7.8e-6, 1e-12);
  EXPECT_NEAR(AmaxReductionTime(p, c).backward_s, 7.8e-6, 1e-12);
  EXPECT_NEAR(EstimateStep(m, p, g, c, core::Profile{}).breakdown.dp_comm_s, 4 * 2 * 7.8e-6, 1e-12);
  // Current scaling keeps no amax history, BF16 quantizes nothing, torchao's float8 (no Transformer
  // Engine) scales dynamically: nothing reduced.
  core::PlanSpec current = p;
  current.fp8_scaling = core::Fp8Scaling::kCurrent;
  EXPECT_EQ(AmaxReductionTime(current, c).forward_s, 0.0);
  EXPECT_EQ(EstimateStep(m, current, g, c, core::Profile{}).breakdown.dp_comm_s, 0.0);
  core::PlanSpec bf16 = p;
  bf16.precision = core::Dtype::kBf16;
  EXPECT_EQ(AmaxReductionTime(bf16, c).forward_s, 0.0);
  core::PlanSpec torchao = p;
  torchao.transformer_engine = false;
  EXPECT_EQ(AmaxReductionTime(torchao, c).forward_s, 0.0);
  // Interleaved, 4 chunks a rank on PP 2: 2 x 4 reductions a microbatch on each rank's path.
  core::PlanSpec vp = p;
  vp.gpus = 4;
  vp.pp = 2;
  vp.vpp = 4;
  vp.schedule = core::Schedule::kInterleaved;
  const StepEstimate a = EstimateStep(m, vp, g, c, core::Profile{});
  core::PlanSpec vp_current = vp;
  vp_current.fp8_scaling = core::Fp8Scaling::kCurrent;
  EXPECT_NEAR(a.breakdown.dp_comm_s, 4 * 2 * 4 * 7.8e-6, 1e-12);
  EXPECT_EQ(EstimateStep(m, vp_current, g, c, core::Profile{}).breakdown.dp_comm_s, 0.0);
}

TEST(StepModelTest, MisalignedSixteenBitGemmsRunAtTheMeasuredFraction) {
  // One H200, 2026-12-04 (tests/data/gpu/h200-2026-12-04/gemm_alignment.json, scripts/gpu_probes.py
  // gemm_alignment): torch.mm at 8192 cubed with N or K at 8192 - r. Aligned (N, K multiples of 8)
  // median 747.6 TFLOP/s; N or K even, not a multiple of 8: 267.6 (0.358); odd: 139.0 (0.186). M
  // off a multiple of 8 ran the aligned kernels (M is no leading dimension).
  const core::GpuSpec h200 = *core::LoadGpu("h200");
  const core::Profile defaults;
  core::Op gemm = Bf16Gemm(8192, 8192, 8192);
  // The aligned GEMM's compute side: (2 x 8192^3 + F_half 1e9) / (989.4e12 x 0.681) = 1.6333 ms
  // (k = 8192, the reduction the efficiency was taken at: no reduction factor).
  const double aligned = (2.0 * 8192 * 8192 * 8192 + 1e9) / (989.4e12 * 0.681);
  EXPECT_NEAR(GemmSides(gemm, h200, defaults).compute_s, aligned, 1e-12);
  EXPECT_DOUBLE_EQ(GemmAlignmentEfficiency(gemm, h200), 1.0);
  gemm.m = 8191;  // the token count: no leading dimension
  EXPECT_DOUBLE_EQ(GemmAlignmentEfficiency(gemm, h200), 1.0);
  gemm.m = 8192;
  gemm.k = 8188;  // even, 4 mod 8: (2 x 8192^2 x 8188 x c_k / 0.358 + 1e9) / (989.4e12 x 0.681) = 4.5575 ms,
                  // c_k = 8338 / 8188 x 8192 / 8342 = 1.0000440 (GemmReductionCost)
  EXPECT_DOUBLE_EQ(GemmAlignmentEfficiency(gemm, h200), 0.358);
  const double ck = 8338.0 / 8188.0 * 8192.0 / 8342.0;
  EXPECT_NEAR(GemmSides(gemm, h200, defaults).compute_s,
              (2.0 * 8192 * 8192 * 8188 * ck / 0.358 + 1e9) / (989.4e12 * 0.681), 1e-12);
  EXPECT_NEAR(GemmSides(gemm, h200, defaults).compute_s, 4.5575e-3, 1e-7);
  gemm.k = 8192;
  gemm.n = 8191;  // odd
  EXPECT_DOUBLE_EQ(GemmAlignmentEfficiency(gemm, h200), 0.186);
  // The unfused attention's score GEMM at head dim 108 (K = 108): the even fraction.
  core::Op scores = gemm;
  scores.m = 2048;
  scores.n = 2048;
  scores.k = 108;
  scores.batch = 64;
  EXPECT_DOUBLE_EQ(GemmAlignmentEfficiency(scores, h200), 0.358);
  // FP8 GEMMs (16-byte rows are 16 elements) were not measured: unchanged; nor is an A100 (no
  // measurement in its preset).
  gemm.dtype = core::Dtype::kFp8;
  EXPECT_DOUBLE_EQ(GemmAlignmentEfficiency(gemm, h200), 1.0);
  gemm.dtype = core::Dtype::kBf16;
  EXPECT_DOUBLE_EQ(GemmAlignmentEfficiency(gemm, *core::LoadGpu("a100-80g")), 1.0);
}

TEST(StepModelTest, AShortReductionPaysItsTilesFixedWork) {
  // Hopper presets: K0 = 150 (bf16, fp16) and 230 (fp8), fitted to one H200's shape sweep
  // (tests/data/gpu/h200-2026-11-28/gemm_shapes.json: 8192x8192x1024 725.0 TFLOP/s against
  // 8192x7168x8192 820.2); the sustained efficiency is k = 8192's. c_k = (k + K0) / k x 8192 /
  // (8192 + K0).
  const core::GpuSpec h100 = *core::LoadGpu("h100-sxm");
  core::Op gemm = Bf16Gemm(8192, 8192, 1024);  // Llama 3 70B's output projection at TP 8
  EXPECT_NEAR(GemmReductionCost(gemm, h100), 1174.0 / 1024 * 8192 / 8342, 1e-12);  // 1.12587
  gemm.k = 8192;
  EXPECT_DOUBLE_EQ(GemmReductionCost(gemm, h100), 1.0);
  // The passes reduce over different dimensions: the input gradient over n, the weight gradient
  // over m (the tokens).
  gemm = Bf16Gemm(16384, 2048, 8192);
  gemm.pass = core::Pass::kBackwardInput;
  EXPECT_NEAR(GemmReductionCost(gemm, h100), 2198.0 / 2048 * 8192 / 8342, 1e-12);  // 1.05395
  gemm.pass = core::Pass::kBackwardWeight;
  EXPECT_NEAR(GemmReductionCost(gemm, h100), 16534.0 / 16384 * 8192 / 8342, 1e-12);  // 0.99103
  // FP8: K0 = 230. k = 1024: 1254 / 1024 x 8192 / 8422 = 1.19117.
  gemm = Bf16Gemm(8192, 8192, 1024);
  gemm.dtype = core::Dtype::kFp8;
  EXPECT_NEAR(GemmReductionCost(gemm, h100), 1.19117, 1e-5);
  // The compute side takes it: (2 x 8192^2 x 1024 x c_k + 1e9) / (1978.9e12 x eff_fp8).
  const core::Profile defaults;
  const double fp8_rate = 1978.9e12 * h100.gemm_efficiency.at(core::Dtype::kFp8);
  EXPECT_NEAR(GemmSides(gemm, h100, defaults).compute_s,
              (2.0 * 8192 * 8192 * 1024 * 1254.0 / 1024 * 8192 / 8422 + 1e9) / fp8_rate, 1e-12);
  // The B200 and GB200 (sm_100): K0 = 179 (bf16) and 274 (fp8) from XLA's published matmul table
  // (scripts/xla_gemm_k0.py), relative to the B200's MSMF shape's k = 20480 (gemm_reference_k):
  // k = 1024 in bf16: 1203 / 1024 x 20480 / 20659 = 1.16463; at 20480 nothing; in fp8 k = 4096:
  // 4370 / 4096 x 20480 / 20754 = 1.05281.
  gemm = Bf16Gemm(8192, 8192, 1024);
  for (const char* name : {"b200", "gb200"}) {
    const core::GpuSpec bw = *core::LoadGpu(name);
    EXPECT_DOUBLE_EQ(bw.gemm_reference_k, 20480) << name;
    EXPECT_NEAR(GemmReductionCost(gemm, bw), 1203.0 / 1024 * 20480 / 20659, 1e-12) << name;  // 1.16463
  }
  const core::GpuSpec b200 = *core::LoadGpu("b200");
  gemm.k = 20480;
  EXPECT_DOUBLE_EQ(GemmReductionCost(gemm, b200), 1.0);
  gemm.k = 4096;
  gemm.dtype = core::Dtype::kFp8;
  EXPECT_NEAR(GemmReductionCost(gemm, b200), 1.05281, 1e-5);
  // B300 and GB300 (sm_103) are not measured: no scaling; the Hopper presets keep k = 8192.
  EXPECT_DOUBLE_EQ(GemmReductionCost(gemm, *core::LoadGpu("b300")), 1.0);
  EXPECT_DOUBLE_EQ(GemmReductionCost(gemm, *core::LoadGpu("gb300")), 1.0);
  EXPECT_DOUBLE_EQ(h100.gemm_reference_k, 8192);
  // Not measured elsewhere: an A100's GEMMs keep their k-independent rate; nor a dtype the preset
  // does not list.
  gemm.dtype = core::Dtype::kBf16;
  EXPECT_DOUBLE_EQ(GemmReductionCost(gemm, *core::LoadGpu("a100-80g")), 1.0);
  gemm.dtype = core::Dtype::kTf32;
  EXPECT_DOUBLE_EQ(GemmReductionCost(gemm, h100), 1.0);
}

TEST(StepModelTest, XlaMatmulTableScattersLessWithoutTheWaveRuleOnBlackwell) {
  // XLA's published matmul table (tests/data/gpu/xla-matmul-table/matmul_m4096.json, its m = 4096
  // rows): each shape's time as meshplan costs it (ComputeOpTime, bf16, default profile) over the
  // table's, the rms of the log ratio about its mean, for the shapes with k >= 1024 (27 a compute
  // capability). sm_100 against the b200 preset: 6.9% with the 128 x 256-tile wave rule, 4.9%
  // without (mean ratio 0.867 and 0.934); sm_90 against h100-sxm, whose rule is off: 2.7% (3.1%
  // with it). Not applied to the presets (docs/compute.md, "A short reduction"): the rule stands in
  // for a shape cost the B200's best-shape efficiency lacks; this test pins what the table says.
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/gpu/xla-matmul-table/matmul_m4096.json");
  ASSERT_TRUE(text.ok());
  const nlohmann::json doc = nlohmann::json::parse(*text);
  const core::Profile prof;
  auto scatter = [&](const char* gpu, const char* cc, bool wave, double* mean_ratio) {
    core::GpuSpec g = *core::LoadGpu(gpu);
    g.gemm_wave_quantization = wave;
    std::vector<double> logs;
    for (const auto& r : doc["rows"]) {
      if (r["gpu"] != cc || r["k"].get<int64_t>() < 1024) continue;
      core::Op op;
      op.kind = core::OpKind::kGemm;
      op.dtype = core::Dtype::kBf16;
      op.batch = r["b"].get<int64_t>();
      op.m = r["m"].get<int64_t>();
      op.n = r["n"].get<int64_t>();
      op.k = r["k"].get<int64_t>();
      const double flops = 2.0 * static_cast<double>(op.batch * op.m * op.n * op.k);
      logs.push_back(std::log(flops / ComputeOpTime(op, g, prof) / (r["bf16_tflops"].get<double>() * 1e12)));
    }
    EXPECT_EQ(logs.size(), 27u) << gpu;
    double mean = 0, ss = 0;
    for (double x : logs) mean += x / static_cast<double>(logs.size());
    for (double x : logs) ss += (x - mean) * (x - mean);
    *mean_ratio = std::exp(mean);
    return std::sqrt(ss / static_cast<double>(logs.size()));
  };
  double mean = 0;
  EXPECT_NEAR(scatter("b200", "sm_100", true, &mean), 0.069, 0.001);
  EXPECT_NEAR(mean, 0.867, 0.001);
  EXPECT_NEAR(scatter("b200", "sm_100", false, &mean), 0.049, 0.001);
  EXPECT_NEAR(mean, 0.934, 0.001);
  EXPECT_NEAR(scatter("h100-sxm", "sm_90", false, &mean), 0.027, 0.001);
  EXPECT_NEAR(scatter("h100-sxm", "sm_90", true, &mean), 0.031, 0.001);
}

TEST(StepModelTest, NoGemmKernelIsShorterThanThePerKernelTime) {
  // Eight experts' GEMMs, each a kernel of its own, as Qwen3-30B-A3B's fc1 forward at 64 rows per
  // expert (64 x 1536 x 2048, bf16) on an H200. One instance's roofline: compute (2 x 64 x 1536 x
  // 2048 x c_k + F_half 1e9) / (989.4e12 x 0.681) = 2.11 us (the reduction k = 2048: c_k = 2198 /
  // 2048 x 8192 / 8342 = 1.05394, GemmReductionCost), memory (64x2048 + 2048x1536 + 64x1536) x 2 B
  // / (4.8e12 x 0.80) = 1.76 us, both under t_k = 4 us: each kernel takes t_k, the op 8 x 4 + 4 =
  // 36 us (8 x 2.11 + 4 = 20.9 us before). Measured on a lent H200, the eight as a CUDA graph
  // (tests/data/gpu/h200-2026-11-30/expert_gemm.json, scripts/gpu_probes.py expert_gemm): 47.9 us
  // one after another on one stream, 51.0 / 38.7 us one stream / Transformer Engine's four
  // (expert_gemm_streams.json), torch._grouped_mm's single kernel 28.8 / 31.4 us.
  const core::GpuSpec h200 = *core::LoadGpu("h200");
  const core::Profile defaults;
  core::Op experts = Bf16Gemm(64, 1536, 2048);
  experts.batch = 8;
  experts.instance_kernels = true;
  const double ck = 2198.0 / 2048 * 8192 / 8342;
  const double compute = (2.0 * 64 * 1536 * 2048 * ck + 1e9) / (989.4e12 * 0.681);
  const double memory = (64.0 * 2048 + 2048.0 * 1536 + 64.0 * 1536) * 2 / (4.8e12 * 0.80);
  EXPECT_NEAR(compute, 2.1140e-6, 1e-10);
  EXPECT_NEAR(memory, 1.7579e-6, 1e-10);
  EXPECT_NEAR(ComputeOpTime(experts, h200, defaults), 8 * 4e-6 + 4e-6, 1e-12);
  // At 2,048 rows each kernel outlasts t_k and the roofline stands, as it did (measured 154.2 us,
  // predicted 177.1): 8 x (2 x 2048 x 1536 x 2048 x c_k + 1e9) / (989.4e12 x 0.681) + 4 us.
  experts.m = 2048;
  EXPECT_NEAR(ComputeOpTime(experts, h200, defaults),
              8 * (2.0 * 2048 * 1536 * 2048 * ck + 1e9) / (989.4e12 * 0.681) + 4e-6, 1e-12);
  // One batched kernel (the unfused attention's score GEMMs over heads, cuBLAS's strided batch)
  // pays t_k once, as before: 8 x 2.11 + 4 us.
  core::Op batched = experts;
  batched.m = 64;
  batched.instance_kernels = false;
  EXPECT_NEAR(ComputeOpTime(batched, h200, defaults), 8 * compute + 4e-6, 1e-12);
  // report --ops says so.
  CostedOp row;
  row.op = experts;
  row.op.m = 64;
  row.time_s = ComputeOpTime(row.op, h200, defaults);
  row.kernel_bound = true;
  EXPECT_EQ(CostedOpHow(row), "89 TFLOP/s, kernel-bound (each of its kernels)");
}

TEST(StepModelTest, V100GemmsTimeDeepBenchsShapes) {
  // DeepBench's training GEMMs on a DGX-1 V100 (results/train/DeepBench_NV_V100.xlsx at 30c5115,
  // CUDA 10.1, fp16 inputs with fp32 accumulation): 1024 x 48000 x 2816 (NN) in 2.571 ms, 107.7
  // TFLOP/s. Its output is 8 x 188 = 1504 tiles of 128 x 256, 19 waves of 80 SMs (w = 1504/1520),
  // so the preset's eta solves (2mnk / w + F_half) / (125e12 x eta) + 4 us = 2.571 ms:
  // (2.76823e11 x 1520/1504 + 1e9) / 2.567e-3 / 125e12 = 0.8748 -> 0.875.
  const core::GpuSpec v100 = *core::LoadGpu("v100"), dgx2h = *core::LoadGpu("v100-dgx2h");
  const core::Profile defaults;
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, v100, core::Dtype::kFp16), 0.875);
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, v100, core::Dtype::kFp32), 0.825);
  EXPECT_DOUBLE_EQ(GemmEfficiency(defaults, dgx2h, core::Dtype::kFp16), 0.875);
  EXPECT_DOUBLE_EQ(dgx2h.peak_flops_per_s.at(core::Dtype::kFp16), 130e12);  // 39 TFLOP/s = 30% (Shoeybi 2019)
  core::Op op;
  op.kind = core::OpKind::kGemm;
  op.m = 1024, op.n = 48000, op.k = 2816;
  op.dtype = core::Dtype::kFp16;
  EXPECT_NEAR(GemmWaveEfficiency(op, v100), 1504.0 / 1520.0, 1e-12);
  EXPECT_NEAR(ComputeOpTime(op, v100, defaults), 2.571e-3, 0.002 * 2.571e-3);
  // fp32 (12.77 TFLOP/s, 21.677 ms) the same way: eta 0.825.
  op.dtype = core::Dtype::kFp32;
  EXPECT_NEAR(ComputeOpTime(op, v100, defaults), 21.677e-3, 0.002 * 21.677e-3);
  // The sheet's fastest fp16 shape, 4096 x 7000 x 4096 in 2.092 ms (112.3 TFLOP/s), is 32 x 28 =
  // 896 tiles of the rule's 128 x 256, 11.2 waves run as 12 (w = 896/960): costed at 2.314 ms,
  // 10.6% slow. Its output fills 11 whole waves of 256 x 128 tiles, another of Volta's cuBLAS
  // tiles; the rule's one tile is an upper bound on the loss (docs/compute.md).
  op.m = 4096, op.n = 7000, op.k = 4096;
  op.dtype = core::Dtype::kFp16;
  const double t = ComputeOpTime(op, v100, defaults);
  EXPECT_NEAR(t, (2.0 * 4096 * 7000 * 4096 * 960.0 / 896.0 + 1e9) / (125e12 * 0.875) + 4e-6, 1e-12);
  EXPECT_NEAR(t / 2.092e-3, 1.106, 0.002);
}

TEST(StepModelTest, OverlappedCommunicationSlowsTheComputeBesideIt) {
  // What a hidden collective costs the compute beside it, per second of the collective: NCCL's
  // kernels 1 - 1/1.189 (Lee et al. 2025: compute 18.9% slower while overlapped); Transformer
  // Engine userbuffers (full TP overlap with SP, a layer's linear layers) the SMs they hold, 16 of
  // H100's 132 (pipeline, bulk) or 1 (ring exchange); nothing for userbuffers on a GPU whose SM
  // count is unknown.
  const core::GpuSpec h100 = *core::LoadGpu("h100-sxm");
  ASSERT_EQ(h100.sms, 132);
  core::ModelSpec m = *core::LoadModel("llama3-8b");
  core::PlanSpec p;
  p.tp = 8;
  p.dp = 1;
  p.gpus = 8;
  p.sequence_parallel = true;
  p.micro_batch = 1;
  p.global_batch = 2;
  p.seq_len = 4096;
  p.tp_overlap = core::TpOverlap::kFull;
  // Each TP collective of a layer under full overlap, by pass and kind (TE base.py's default
  // methods): forward all-gathers ring_exchange, forward reduce-scatters pipeline; backward, qkv's
  // and fc1's input-gradient reduce-scatter (weight-gradient pass) and input all-gather (the
  // overlappable regather) bulk, proj's and fc2's output-gradient all-gather (the blocking
  // conjugate) ring_exchange. The output head's gather stays NCCL's.
  auto slowdowns = [&](const std::vector<core::Op>& ops, core::Pass pass, core::CollectiveKind kind, bool layer) {
    std::vector<double> out;
    for (const core::Op& o : ops)
      if (o.kind == core::OpKind::kCollective && o.group == core::CommGroup::kTp && o.pass == pass &&
          o.collective == kind)
        out.push_back(OverlapSlowdown(o, p, h100, layer));
    std::sort(out.begin(), out.end());
    return out;
  };
  using K = core::CollectiveKind;
  const double ring = 1.0 / 132, held = 16.0 / 132, nccl = kNcclOverlapSlowdown;
  EXPECT_NEAR(nccl, 0.189 / 1.189, 1e-12);
  const core::StepGraph full = core::BuildStepGraph(m, p);
  EXPECT_EQ(slowdowns(full.dense_layer, core::Pass::kForward, K::kAllGather, true), (std::vector<double>{ring, ring}));
  EXPECT_EQ(slowdowns(full.dense_layer, core::Pass::kForward, K::kReduceScatter, true),
            (std::vector<double>{held, held}));
  EXPECT_EQ(slowdowns(full.dense_layer, core::Pass::kBackwardWeight, K::kReduceScatter, true),
            (std::vector<double>{held, held}));
  EXPECT_EQ(slowdowns(full.dense_layer, core::Pass::kBackwardInput, K::kAllGather, true),
            (std::vector<double>{ring, ring, held, held}));
  EXPECT_EQ(slowdowns(full.head, core::Pass::kForward, K::kAllGather, false), (std::vector<double>{nccl}));
  core::GpuSpec unknown = h100;
  unknown.sms = 0;
  for (const core::Op& o : full.dense_layer)
    if (o.kind == core::OpKind::kCollective && o.group == core::CommGroup::kTp)
      EXPECT_EQ(OverlapSlowdown(o, p, unknown, true), 0) << o.name;
  // Megatron's asynchronous TP (tp_overlap backward) is NCCL's throughout.
  p.tp_overlap = core::TpOverlap::kBackward;
  for (const core::Op& o : core::BuildStepGraph(m, p).dense_layer)
    if (o.kind == core::OpKind::kCollective) EXPECT_NEAR(OverlapSlowdown(o, p, h100, true), nccl, 1e-15) << o.name;

  // The step. Llama 3 8B on 16 H100s in two nodes, DDP (TP 1, DP 16), two microbatches of 4096
  // tokens: the gradient all-reduce fits under one microbatch's backward, so overlapped its
  // exposed time is 0 and it slows that backward by s x its time; not overlapped it is exposed
  // whole. But for the word embedding's bucket (EmbeddingTail): its gradient is final when the
  // backward ends, so its all-reduce E is exposed either way. By hand, with AR the whole
  // all-reduce: dp_comm(on) = E + s (AR - E), and the step grows by exactly that.
  core::PlanSpec d;
  d.dp = 16;
  d.gpus = 16;
  d.micro_batch = 1;
  d.global_batch = 32;
  d.seq_len = 4096;
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  d.overlap_grad_reduce = false;
  const StepEstimate off = EstimateStep(m, d, h100, c, core::Profile{});
  d.overlap_grad_reduce = true;
  const StepEstimate on = EstimateStep(m, d, h100, c, core::Profile{});
  const double all_reduce = off.breakdown.dp_comm_s;
  ASSERT_GT(all_reduce, 0);
  ASSERT_LT(all_reduce, on.stages[0].backward_input_s + on.stages[0].backward_weight_s);
  // E from the op table (report --ops), where it reads exposed: the embedding list's step
  // all-reduce of its 128,256 x 4,096 = 525M of the model's 8.03B parameters, by bytes 6.5% of AR.
  double embedding = 0;
  for (const CostedOpList& list : CostStepGraph(m, d, h100, c, core::Profile{}))
    for (const CostedOp& row : list.ops)
      if (row.op.pass == core::Pass::kStep && row.op.kind == core::OpKind::kCollective) {
        EXPECT_EQ(row.hidden, std::string(list.name) != "embedding") << list.name << " " << row.op.name;
        if (std::string(list.name) == "embedding") embedding += row.time_s;
      }
  EXPECT_NEAR(embedding / all_reduce, 525.3 / 8030.3, 0.01);
  EXPECT_EQ(off.overlap_slowdown_s, 0);
  EXPECT_NEAR(on.breakdown.dp_comm_s, embedding + kNcclOverlapSlowdown * (all_reduce - embedding), 1e-12);
  EXPECT_NEAR(on.overlap_slowdown_s, kNcclOverlapSlowdown * (all_reduce - embedding), 1e-12);
  EXPECT_NEAR(off.time_s - on.time_s, (1 - kNcclOverlapSlowdown) * (all_reduce - embedding), 1e-9 * off.time_s);
  // The event simulation adds the same slowdown before the optimizer.
  for (const StepEstimate* e : {&off, &on}) {
    d.overlap_grad_reduce = e == &on;
    const std::vector<StageStreams> streams = StageStreamCosts(m, d, h100, c, core::Profile{}, e->stages);
    const auto r = SimulateStreams(d, streams, d.Microbatches(), DesOptions{});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_NEAR(streams[0].overlap_slowdown_s, e->overlap_slowdown_s, 1e-12);
    EXPECT_NEAR(r->step_time_s, e->time_s, 1e-6 * e->time_s);
  }
}

TEST(StepModelTest, UserbuffersHideEachTpCollectiveOnlyBesideItsOwnGemm) {
  // Transformer Engine's userbuffers (full TP overlap with SP) run each of a layer's TP
  // collectives inside one GEMM (initialize_ub's default methods at v2.9; comm_gemm_overlap.cpp):
  // a ring exchange hides min(C, G (t - 1)/t) of a collective C beside GEMM G (the first of t
  // chunks is local), a 4-split pipeline min(C, G) x 3/4 (the last chunk's reduce-scatter waits
  // for nothing), a bulk overlap min(C, G). Llama 3 70B at TP 8 on one DGX H100, 8,192 tokens:
  // the attention's output projection (8192 x 8192 x 1024, about 250 us) is shorter than its
  // reduce-scatter of 8192 x 8192 x 2 B over 8 ranks (about 350 us), so 3/4 of the GEMM hides
  // and the rest, about 160 us, is exposed; fc2 (about 800 us) hides 3/4 of its reduce-scatter.
  const core::GpuSpec h100 = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::ModelSpec m = *core::LoadModel("llama3-70b");
  core::PlanSpec p;
  p.tp = 8;
  p.dp = 1;
  p.gpus = 8;
  p.sequence_parallel = true;
  p.micro_batch = 1;
  p.global_batch = 4;
  p.seq_len = 8192;
  p.tp_overlap = core::TpOverlap::kFull;
  core::Diagnostics d;
  core::ValidatePlan(p, m, h100, c, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  using K = core::CollectiveKind;
  using P = core::Pass;
  auto rows = [&](const core::PlanSpec& plan) {
    for (const CostedOpList& list : CostStepGraph(m, plan, h100, c, core::Profile{}))
      if (std::string(list.name) == "dense layer") return list.ops;
    return std::vector<CostedOp>{};
  };
  auto find = [](const std::vector<CostedOp>& ops, const char* name, P pass, K kind) -> const CostedOp& {
    for (const CostedOp& r : ops)
      if (std::string(r.op.name) == name && r.op.pass == pass &&
          (r.op.kind != core::OpKind::kCollective || r.op.collective == kind))
        return r;
    ADD_FAILURE() << name;
    return ops.front();
  };
  auto gemm = [&](const std::vector<CostedOp>& ops, const char* name, P pass) {
    return find(ops, name, pass, K::kAllReduce).time_s;
  };
  const std::vector<CostedOp> bf16 = rows(p);
  auto ring = [](double coll, double g) { return coll - std::min(coll, g * 7 / 8); };
  auto pipeline = [](double coll, double g) { return coll - std::min(coll, g) * 3 / 4; };
  auto bulk = [](double coll, double g) { return coll - std::min(coll, g); };
  struct Case {
    const char* coll;
    P pass;
    K kind;
    const char* partner;
    P partner_pass;
    double (*exposed)(double, double);
    const char* pairing;
  };
  const Case cases[] = {
      {"attn_gather", P::kForward, K::kAllGather, "qkv_proj", P::kForward, ring, "userbuffers ring exchange"},
      {"attn_reduce", P::kForward, K::kReduceScatter, "attn_out_proj", P::kForward, pipeline, "userbuffers pipeline"},
      {"mlp_gather", P::kForward, K::kAllGather, "mlp_fc1", P::kForward, ring, "userbuffers ring exchange"},
      {"mlp_reduce", P::kForward, K::kReduceScatter, "mlp_fc2", P::kForward, pipeline, "userbuffers pipeline"},
      // Backward: the conjugate all-gathers of proj's and fc2's output gradient beside their
      // input-gradient GEMM; qkv's and fc1's input regathered beside theirs, and their input
      // gradient's reduce-scatter beside the weight-gradient GEMM.
      {"attn_reduce", P::kBackwardInput, K::kAllGather, "attn_out_proj", P::kBackwardInput, ring,
       "userbuffers ring exchange"},
      {"mlp_reduce", P::kBackwardInput, K::kAllGather, "mlp_fc2", P::kBackwardInput, ring, "userbuffers ring exchange"},
      {"attn_gather", P::kBackwardInput, K::kAllGather, "qkv_proj", P::kBackwardInput, bulk, "userbuffers bulk"},
      {"mlp_gather", P::kBackwardInput, K::kAllGather, "mlp_fc1", P::kBackwardInput, bulk, "userbuffers bulk"},
      {"attn_gather", P::kBackwardWeight, K::kReduceScatter, "qkv_proj", P::kBackwardWeight, bulk, "userbuffers bulk"},
      {"mlp_gather", P::kBackwardWeight, K::kReduceScatter, "mlp_fc1", P::kBackwardWeight, bulk, "userbuffers bulk"},
  };
  double exposed_sum = 0;
  for (const Case& k : cases) {
    const CostedOp& r = find(bf16, k.coll, k.pass, k.kind);
    EXPECT_TRUE(r.fused()) << k.coll;
    EXPECT_STREQ(r.pairing, k.pairing) << k.coll;
    EXPECT_NEAR(r.exposed_s, k.exposed(r.time_s, gemm(bf16, k.partner, k.partner_pass)), 1e-12) << k.coll;
    exposed_sum += r.exposed_s;
  }
  // The hand numbers: the forward reduce-scatter after the output projection.
  const CostedOp& proj_rs = find(bf16, "attn_reduce", P::kForward, K::kReduceScatter);
  EXPECT_GT(proj_rs.time_s, gemm(bf16, "attn_out_proj", P::kForward));
  EXPECT_NEAR(proj_rs.exposed_s, 160e-6, 25e-6);
  EXPECT_NE(CostedOpHow(proj_rs).find("beside its GEMM (userbuffers pipeline)"), std::string::npos);
  // The step: every dense layer's TP collectives are paired, so each adds its exposed part and
  // slows the compute beside its hidden part by its userbuffers' SMs (OverlapSlowdown), per layer
  // and microbatch; the embedding's and the head's TP collectives keep the pass rule (hidden under
  // their passes, NCCL's slowdown).
  // (An end's collective hides only as far as its pass's compute allows: between its slowdown and
  // its whole time.)
  double layer = 0, ends_low = 0, ends_high = 0;
  for (const CostedOpList& list : CostStepGraph(m, p, h100, c, core::Profile{}))
    for (const CostedOp& r : list.ops) {
      if (r.op.kind != core::OpKind::kCollective || r.op.group != core::CommGroup::kTp) continue;
      if (std::string(list.name) == "dense layer") {
        layer += r.exposed_s + (r.time_s - r.exposed_s) * r.slowdown;
      } else {
        ends_low += r.hidden ? r.time_s * r.slowdown : r.time_s;
        ends_high += r.time_s;
      }
    }
  const StepEstimate e = EstimateStep(m, p, h100, c, core::Profile{});
  EXPECT_GE(e.breakdown.tp_comm_s, 4 * (80 * layer + ends_low) - 1e-9);
  EXPECT_LE(e.breakdown.tp_comm_s, 4 * (80 * layer + ends_high) + 1e-9);
  // The event simulation pairs them the same way: the step times agree within 1%.
  const auto r =
      SimulateStreams(p, StageStreamCosts(m, p, h100, c, core::Profile{}, e.stages), p.Microbatches(), DesOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->step_time_s, e.time_s, 0.01 * e.time_s);
  EXPECT_GT(80 * 4 * exposed_sum, 0.7 * e.breakdown.tp_comm_s);
  // FP8 (the tuned configurations' ring exchange for proj's and fc2's forward reduce-scatter):
  // min(C, G 7/8) of the C now in FP8's GEMM time.
  p.precision = core::Dtype::kFp8;
  const std::vector<CostedOp> fp8 = rows(p);
  const CostedOp& rs8 = find(fp8, "mlp_reduce", P::kForward, K::kReduceScatter);
  EXPECT_STREQ(rs8.pairing, "userbuffers ring exchange");
  EXPECT_NEAR(rs8.exposed_s, ring(rs8.time_s, gemm(fp8, "mlp_fc2", P::kForward)), 1e-12);
  // The recomputed forward (full recomputation) runs the same modules: its reduce-scatters pair
  // with the recomputed GEMMs as the forward's do.
  {
    core::PlanSpec q = p;
    q.recompute = core::Recompute::kFull;
    const std::vector<CostedOp> rc = rows(q);
    const CostedOp& rs = find(rc, "mlp_reduce", P::kRecompute, K::kReduceScatter);
    EXPECT_STREQ(rs.pairing, "userbuffers ring exchange");  // FP8
    EXPECT_NEAR(rs.exposed_s, ring(rs.time_s, gemm(rc, "mlp_fc2", P::kRecompute)), 1e-12);
    const CostedOp& ag = find(rc, "attn_gather", P::kRecompute, K::kAllGather);
    EXPECT_NEAR(ag.exposed_s, ring(ag.time_s, gemm(rc, "qkv_proj", P::kRecompute)), 1e-12);
  }
  // MLA's input gather feeds down-projections replicated on every rank, not a userbuffers GEMM:
  // it keeps the pass rule; its output projection's reduce-scatter is the attention's as above.
  {
    core::PlanSpec q = p;
    q.precision = core::Dtype::kBf16;
    const core::StepGraph mla = core::BuildStepGraph(*core::LoadModel("deepseek-v3"), q);
    int gathers = 0, reduces = 0;
    for (const core::Op& o : mla.moe_layer) {
      if (o.kind != core::OpKind::kCollective || o.pass != P::kForward) continue;
      if (std::string(o.name) == "attn_gather") {
        gathers += 1;
        EXPECT_FALSE(o.userbuffers);
      }
      if (std::string(o.name) == "attn_reduce") {
        reduces += 1;
        EXPECT_TRUE(o.userbuffers);
      }
    }
    EXPECT_EQ(gathers, 1);
    EXPECT_EQ(reduces, 1);
  }
  // Without SP, or with another overlap mode, the pass rule stands.
  p.precision = core::Dtype::kBf16;
  p.tp_overlap = core::TpOverlap::kBackward;
  for (const CostedOp& r : rows(p)) EXPECT_FALSE(r.fused()) << r.op.name;
}

TEST(StepModelTest, ASynchronousJobRunsAtItsSlowestGpusPace) {
  // E[max of n standard normals] by Blom's Phi^-1((n - 0.375) / (n + 0.25)) against the exact
  // expectations (Harter 1961 tables): n = 2 1/sqrt(pi) = 0.5642, n = 8 1.4236, n = 100 2.5076,
  // n = 1000 3.2414; Blom is 4.5% high at 2 and within 1% from 8.
  EXPECT_DOUBLE_EQ(SlowestGpuPace(1, 0.05), 1.0);
  EXPECT_DOUBLE_EQ(SlowestGpuPace(4096, 0.0), 1.0);
  EXPECT_NEAR(SlowestGpuPace(2, 1.0) - 1, 0.5642, 0.045 * 0.5642);
  EXPECT_NEAR(SlowestGpuPace(8, 1.0) - 1, 1.4236, 0.01 * 1.4236);
  EXPECT_NEAR(SlowestGpuPace(100, 1.0) - 1, 2.5076, 0.01 * 2.5076);
  EXPECT_NEAR(SlowestGpuPace(1000, 1.0) - 1, 3.2414, 0.01 * 3.2414);
  // The quantile itself, checked against the normal CDF Phi(x) = erfc(-x / sqrt 2) / 2: Blom's
  // argument for n = 40 is 0.98447, whose quantile 2.1564 the GPU presets' spreads use (a range
  // of 2 x 2.1564 = 4.31 standard deviations over ml-engineering's 40 samples).
  const double z40 = SlowestGpuPace(40, 1.0) - 1;
  EXPECT_NEAR(0.5 * std::erfc(-z40 / std::sqrt(2.0)), (40 - 0.375) / 40.25, 1e-8);
  EXPECT_NEAR(z40, 2.1564, 5e-4);
  const double z16k = SlowestGpuPace(16384, 1.0) - 1;  // the tail branch of the quantile
  EXPECT_NEAR(0.5 * std::erfc(-z16k / std::sqrt(2.0)), (16384 - 0.375) / 16384.25, 1e-9);
  // The presets: H200's 4.5% range of 40 -> 0.045 / 4.311 = 0.0104; B200's 10.4% -> 0.0241;
  // A100 (none measured) Sinha et al. SC22's 8% over about 6 standard deviations, 0.013.
  const core::GpuSpec h200 = *core::LoadGpu("h200"), b200 = *core::LoadGpu("b200"), a100 = *core::LoadGpu("a100-80g");
  EXPECT_NEAR(0.045 / (2 * z40), h200.speed_spread, 5e-5);
  EXPECT_NEAR(0.104 / (2 * z40), b200.speed_spread, 5e-5);
  EXPECT_DOUBLE_EQ(a100.speed_spread, 0.013);
  // A whole H200 node paces at 1 + 0.0104 x 1.43 = 1.015 (the busy node's mean over its slowest:
  // 0.985); 1,024 of them at 1 + 0.0104 x 3.23 = 1.034.
  EXPECT_NEAR(SlowestGpuPace(8, h200.speed_spread), 1.0149, 2e-4);
  EXPECT_NEAR(SlowestGpuPace(1024, h200.speed_spread), 1.0336, 2e-4);
  // The step: every compute op of an n-GPU plan at that pace, its collectives not. Llama 3 70B on
  // 64 H100s (TP 8 x PP 4 x DP 2): compute and recompute scale by the pace exactly, the step by
  // less (its exposed communication is the network's).
  core::ModelSpec m = *core::LoadModel("llama3-70b");
  core::PlanSpec p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 2;
  p.gpus = 64;
  p.micro_batch = 1;
  p.global_batch = 64;
  p.seq_len = 8192;
  p.recompute = core::Recompute::kSelective;
  core::GpuSpec h100 = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const StepEstimate paced = EstimateStep(m, p, h100, c, core::Profile{});
  core::GpuSpec steady = h100;
  steady.speed_spread = 0;
  const StepEstimate even = EstimateStep(m, p, steady, c, core::Profile{});
  const double pace = SlowestGpuPace(64, h100.speed_spread);
  EXPECT_NEAR(pace, 1 + 0.0104 * 2.337, 1e-4);  // Blom's E[max of 64] 2.337
  EXPECT_NEAR(paced.breakdown.compute_s / even.breakdown.compute_s, pace, 1e-9);
  EXPECT_NEAR(paced.breakdown.recompute_s / even.breakdown.recompute_s, pace, 1e-9);
  EXPECT_GT(paced.time_s, even.time_s);
  EXPECT_LT(paced.time_s / even.time_s, pace);
  // The event simulation's passes are paced alike: each stage's forward kernels by the same factor.
  const std::vector<StageStreams> s_paced = StageStreamCosts(m, p, h100, c, core::Profile{}, paced.stages);
  const std::vector<StageStreams> s_even = StageStreamCosts(m, p, steady, c, core::Profile{}, even.stages);
  ASSERT_EQ(s_paced.size(), 4u);
  for (size_t i = 0; i < s_paced.size(); ++i)
    EXPECT_NEAR(s_paced[i].forward.compute_s / s_even[i].forward.compute_s, pace, 1e-9) << i;
}

TEST(StepModelTest, PaddedHeadDimsRunTheirKernelsTilesWhole) {
  // FlashAttention-2 compiles head dims 32, 64, 96, 128, 160, 192, 224 and 256 and runs the
  // smallest that holds the model's (static_switch.h HEADDIM_SWITCH, v2.0.0-v2.6.x); the Triton
  // kernel pads to the next power of two (flash_attn_triton.py BLOCK_HEADDIM, up to 128). Other
  // kernels' padding is not read: the head dim as given.
  using core::AttentionImpl;
  const struct {
    AttentionImpl impl;
    int64_t head_dim, computed;
  } cases[] = {
      {AttentionImpl::kFlash2, 80, 96},   {AttentionImpl::kFlash2, 112, 128}, {AttentionImpl::kFlash2, 128, 128},
      {AttentionImpl::kFlash2, 160, 160}, {AttentionImpl::kFlash2, 200, 224}, {AttentionImpl::kFlash2, 320, 320},
      {AttentionImpl::kTriton, 8, 16},    {AttentionImpl::kTriton, 80, 128},  {AttentionImpl::kTriton, 96, 128},
      {AttentionImpl::kTriton, 64, 64},   {AttentionImpl::kFlash, 112, 112},  {AttentionImpl::kCudnn913, 80, 80}};
  for (const auto& c : cases)
    EXPECT_EQ(AttentionKernelHeadDim(c.impl, c.head_dim), c.computed) << core::Name(c.impl) << " " << c.head_dim;
  // On the A100 80GB's curves (FlashAttention-2 README, causal, 4k): the Triton kernel at head dim
  // 112 runs its 128 tiles at their 74 TFLOP/s, 112/128 of them used: 64.75 TFLOP/s of the 312
  // peak (interpolating the 64 and 128 points, 74 and 76 at 4k's measured values, had given 74.5).
  // FlashAttention-2 at head dim 80 runs the 96 kernel, taken between the 64 and 128 points
  // (156 + 32/64 x (173 - 156) = 164.5), 80/96 of it used: 137.08 (160.25 interpolated at 80).
  const core::Profile defaults;
  const core::GpuSpec a100 = *core::LoadGpu("a100-80g");
  EXPECT_NEAR(AttentionEfficiency(defaults, a100, AttentionImpl::kTriton, false, 112, 4096) * 312e12, 64.75e12, 1e9);
  EXPECT_NEAR(AttentionEfficiency(defaults, a100, AttentionImpl::kFlash2, true, 80, 4096) * 312e12, 137.083e12, 1e9);
  // Head dims the kernels compile keep the measured points.
  EXPECT_NEAR(AttentionEfficiency(defaults, a100, AttentionImpl::kFlash2, false, 128, 4096) * 312e12, 173e12, 1e9);
  EXPECT_NEAR(AttentionEfficiency(defaults, a100, AttentionImpl::kTriton, false, 64, 4096) * 312e12, 76e12, 1e9);
}

TEST(StepModelTest, BlackwellAttentionRunsAtCudnnsOwnTrainingBenchmark) {
  // cudnn-frontend benchmark/sdpa_benchmark_training (results of 2026-04-29, fb682ce761): bf16,
  // causal, non-deterministic backward; forward f and backward b TFLOP/s joined as
  // 3.5 / (1/f + 2.5/b). GB200 llama3.1 (head dim 128) at 4k: f 1408, b 1148 -> 1211.9 of the
  // 2500 peak; its dsv3 config (MLA, 192/128) at 8k: f 1585, b 1193 -> 1283.7.
  const core::Profile defaults;
  using core::AttentionImpl;
  const core::GpuSpec gb200 = *core::LoadGpu("gb200"), gb300 = *core::LoadGpu("gb300"), b200 = *core::LoadGpu("b200");
  EXPECT_NEAR(3.5 / (1 / 1408.0 + 2.5 / 1148), 1211.9, 0.05);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, gb200, AttentionImpl::kFlash, false, 128, 4096), 1211.9 / 2500);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, gb200, AttentionImpl::kFlash, true, 192, 8192), 1283.7 / 2500);
  // GB300 at 8k: f 1856, b 1435 -> 1534.4, 10% above the GB200's 1393.2 at the same peak.
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, gb300, AttentionImpl::kFlash, false, 128, 8192), 1534.4 / 2500);
  // The B200 takes the GB200's times the burst GEMM bests, 1770.9 / 1822.0: 1393.2 x 0.9720 = 1354.1
  // at 8k, of its own 2250 peak.
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, b200, AttentionImpl::kFlash, false, 128, 8192), 1354.1 / 2250);
  // gpt-oss's 128-token window (gpt_oss config, GB200, 4k: f 161, b 182 -> 175.5) is the head-dim-64
  // point at 2w = 256; a windowed layer's op looks there. Head dim 64 at full length is head dim
  // 128's forward and backward times cuDNN's head-dim-64 / 128 ratios measured on the H200
  // (probes.json, cuDNN 9.19; scripts/blackwell_d64_attention.py), joined: at 4k f 1408 x 0.6961,
  // b 1148 x 0.8362 -> 3.5 / (1/980.1 + 2.5/959.9) = 965.6, 0.797 of head dim 128's 1211.9; at 2k
  // f 1097 x 0.8206, b 885 x 0.8019 -> 755.4. Between 256 and 2k linear in log2: 1k is two thirds
  // of the way to 755.4.
  EXPECT_NEAR(3.5 / (1 / 161.0 + 2.5 / 182), 175.5, 0.05);
  EXPECT_NEAR(3.5 / (1 / (1408 * 0.6961) + 2.5 / (1148 * 0.8362)), 965.6, 0.05);
  EXPECT_NEAR(3.5 / (1 / (1097 * 0.8206) + 2.5 / (885 * 0.8019)), 755.4, 0.05);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, gb200, AttentionImpl::kFlash, false, 64, 256), 175.5 / 2500);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, gb200, AttentionImpl::kFlash, false, 64, 4096), 965.6 / 2500);
  EXPECT_NEAR(AttentionEfficiency(defaults, gb200, AttentionImpl::kFlash, false, 64, 1024),
              (175.5 + 2.0 / 3.0 * (755.4 - 175.5)) / 2500, 1e-9);
  // Head dim 96 lies halfway between 64's and 128's points: at 4k (965.6 + 1211.9) / 2.
  EXPECT_NEAR(AttentionEfficiency(defaults, gb200, AttentionImpl::kFlash, false, 96, 4096), (965.6 + 1211.9) / 2 / 2500,
              1e-9);
  // One windowed op as the benchmark ran it (batch 2, 128 heads of 64, 4k, window 128: on average
  // w - w^2 / 2s = 128 - 128^2 / 8192 = 126.0 keys per query (core::KeysPerQuery), 2·b·h·s·keys·(64 + 64) FLOPs; the
  // CSV's 0.210 ms x 161 TFLOP/s gives 125.9): forward + backward take the measured 0.210 + 0.465 ms, within the
  // rounding of its printed TFLOP/s and the two 4 us overheads.
  core::Op op;
  op.kind = core::OpKind::kAttention;
  op.attn_batch = 2, op.heads = 128, op.seq_q = op.seq_kv = 4096, op.head_dim_qk = op.head_dim_v = 64;
  op.window = 128;
  op.attention = AttentionImpl::kFlash;
  EXPECT_NEAR(op.Flops() / (2.0 * 2 * 128 * 4096 * 128), 126.0, 1e-9);
  core::Op bwd = op;
  bwd.pass = core::Pass::kBackwardInput;
  const double both_s = ComputeOpTime(op, gb200, defaults) + ComputeOpTime(bwd, gb200, defaults);
  EXPECT_NEAR(both_s, 0.210e-3 + 0.465e-3, 0.012e-3);
}

TEST(StepModelTest, BlackwellAttentionBeforeCudnn917RanAQuarterSlowerAtEightK) {
  // cudnn-frontend's training SDPA benchmark as it stood on 2025-10-10 (0b1577c: pytorch:25.09-py3,
  // cuDNN 9.13.1, batch 1, 128 heads of 128, 8 kv heads, causal), B200 at 8k: f 1171.3, b 942.5
  // -> 3.5 / (1/1171.3 + 2.5/942.5) = 998.2 TFLOP/s of the 2250 peak, against cuDNN 9.22's 1354.1
  // (above): 0.737 of it. At 32k: f 1419.0, b 1108.7 -> 1182.6. The GB200 takes the B200's times
  // 1822.0 / 1770.9 (the burst GEMM bests): 998.2 x 1.0289 = 1027.0; the GB300 its own: f 1495.7,
  // b 1130.1 -> 1215.0.
  const core::Profile defaults;
  using core::AttentionImpl;
  const core::GpuSpec b200 = *core::LoadGpu("b200"), gb200 = *core::LoadGpu("gb200"), gb300 = *core::LoadGpu("gb300");
  EXPECT_NEAR(3.5 / (1 / 1171.3 + 2.5 / 942.5), 998.2, 0.05);
  EXPECT_NEAR(3.5 / (1 / 1419.0 + 2.5 / 1108.7), 1182.6, 0.05);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, b200, AttentionImpl::kCudnn913, false, 128, 8192), 998.2 / 2250);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, b200, AttentionImpl::kCudnn913, true, 128, 32768), 1182.6 / 2250);
  EXPECT_NEAR(AttentionEfficiency(defaults, b200, AttentionImpl::kCudnn913, false, 128, 8192) /
                  AttentionEfficiency(defaults, b200, AttentionImpl::kFlash, false, 128, 8192),
              0.737, 0.001);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, gb200, AttentionImpl::kCudnn913, false, 128, 8192), 1027.0 / 2500);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, gb300, AttentionImpl::kCudnn913, false, 128, 8192), 1215.0 / 2500);
  // Only head dim 128 was measured: MLA's 192 reads it; below 2k the 2k speed (396.9) holds.
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, b200, AttentionImpl::kCudnn913, false, 192, 8192), 998.2 / 2250);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, b200, AttentionImpl::kCudnn913, false, 128, 1024), 396.9 / 2250);
  // Hopper has no such curve: a plan that names the kernel there is refused, naming the field.
  auto m = core::LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  core::ModelSpec dated = *m;
  dated.attention = AttentionImpl::kCudnn913;
  core::PlanSpec p;
  p.gpus = 8, p.tp = 1, p.pp = 1, p.dp = 8, p.global_batch = 64, p.seq_len = 8192;
  core::Diagnostics d;
  core::ValidatePlan(p, dated, *core::LoadGpu("h100-sxm"), *core::LoadCluster("dgx-h100"), &d);
  EXPECT_NE(d.ToStatus().message().find("model.attention"), std::string::npos) << d.ToStatus().message();
  core::Diagnostics ok;
  core::ValidatePlan(p, dated, b200, *core::LoadCluster("dgx-b200"), &ok);
  EXPECT_EQ(ok.ToStatus().message().find("model.attention"), std::string::npos) << ok.ToStatus().message();
}

TEST(StepModelTest, AssumedRatesSayWhatNoMeasurementCovers) {
  // Llama 3 8B, one microbatch of 4k: bf16 GEMMs and fused attention (flash). The H100 SXM5 has a
  // measured GEMM figure and attention curves: nothing assumed. The A100 has curves but no GEMM
  // figure: its GEMMs take the profile's 0.80. The V100 (fp16) has a GEMM figure (0.875) and no
  // attention measurement: 0.60 / 0.50. A profile that measured its own rates assumes nothing.
  const core::ModelSpec m = *core::LoadModel("llama3-8b");
  core::PlanSpec p;
  p.gpus = 1;
  p.seq_len = 4096;
  p.global_batch = 1;
  const core::Profile defaults;
  EXPECT_TRUE(AssumedRates(defaults, *core::LoadGpu("h100-sxm"), m, p).empty());
  const std::vector<std::string> a100 = AssumedRates(defaults, *core::LoadGpu("a100-80g"), m, p);
  ASSERT_EQ(a100.size(), 1u);
  EXPECT_EQ(a100[0].rfind("bf16 GEMMs at 0.80 of a100-80g's peak: the profile's assumed figure", 0), 0u) << a100[0];
  core::PlanSpec fp16 = p;
  fp16.precision = core::Dtype::kFp16;
  const std::vector<std::string> v100 = AssumedRates(defaults, *core::LoadGpu("v100"), m, fp16);
  ASSERT_EQ(v100.size(), 1u);
  EXPECT_EQ(v100[0].rfind("attention (flash) at 0.60 forward and 0.50 backward of v100's 16-bit peak", 0), 0u)
      << v100[0];
  core::Profile measured;
  measured.gemm_efficiency_measured = true;
  measured.attention_efficiency_measured = true;
  EXPECT_TRUE(AssumedRates(measured, *core::LoadGpu("a100-80g"), m, p).empty());
  EXPECT_TRUE(AssumedRates(measured, *core::LoadGpu("v100"), m, fp16).empty());
}

TEST(StepModelTest, AssumedRatesSayWhereAnAttentionCurveIsReadBeyondItsPoints) {
  // A measured curve read beyond its points takes its nearest one (AttentionCurveEfficiency): the
  // A100's Triton curve measured 512 to 16,384 tokens (the FlashAttention-2 README's bars), so
  // Llama 3 8B (head dim 128) at 32k runs at 16k's speed, and says so; at 4k and at 16k it is
  // read inside the curve and says nothing. MI350X's curve measured head dim 128 only, so a head
  // dim of 64 (the tiny preset's) runs at 128's speed.
  core::ModelSpec m = *core::LoadModel("llama3-8b");
  m.attention = core::AttentionImpl::kTriton;
  m.max_seq = 32768;
  core::PlanSpec p;
  p.gpus = 1;
  p.global_batch = 1;
  const core::Profile defaults;
  const core::GpuSpec a100 = *core::LoadGpu("a100-80g");
  auto notes = [&](const core::GpuSpec& g, const core::ModelSpec& model, int64_t seq) {
    p.seq_len = seq;
    std::string all;
    for (const std::string& n : AssumedRates(defaults, g, model, p)) all += n + "\n";
    return all;
  };
  EXPECT_NE(notes(a100, m, 32768)
                .find("attention (triton) at 32768 queries per sequence: a100-80g's curve measured 512 "
                      "to 16384, so it runs at 16384's speed, the curve's end, not a measurement"),
            std::string::npos)
      << notes(a100, m, 32768);
  EXPECT_EQ(notes(a100, m, 16384).find("queries per sequence"), std::string::npos) << notes(a100, m, 16384);
  EXPECT_EQ(notes(a100, m, 4096).find("queries per sequence"), std::string::npos) << notes(a100, m, 4096);
  // Its speed there is the end point's: 80 TFLOP/s of 312 forward and backward alike.
  EXPECT_NEAR(AttentionEfficiency(defaults, a100, core::AttentionImpl::kTriton, false, 128, 32768), 80.0 / 312.0, 1e-9);
  core::ModelSpec small = *core::LoadModel("tiny");
  small.max_seq = 2048;
  ASSERT_EQ(small.head_dim, 64);
  EXPECT_NE(notes(*core::LoadGpu("mi350x"), small, 2048)
                .find("attention (flash) at head dim 64: mi350x's curve measured head dim 128 only, so it runs at "
                      "128's speed"),
            std::string::npos)
      << notes(*core::LoadGpu("mi350x"), small, 2048);
}

TEST(StepModelTest, AttentionRunsAtItsKernelsMeasuredSpeedOnTheGpu) {
  // flash on H100 is cuDNN's curve: FlashAttention-3 paper Fig. 5 forward (causal) times
  // 3.5 / (1 + 2.5 x 518/499) = 0.9735 for the backward (Fig. 6 at head dim 128, 4k): head dim
  // 128 at 4k 518 x 0.9735 = 504.3 TFLOP/s, i.e. the forward 0.524 and backward 0.504 of 989.4
  // combined; head dim 64 at 512: 225 x 0.9735 = 219.0.
  const core::GpuSpec h100 = *core::LoadGpu("h100-sxm"), a100 = *core::LoadGpu("a100-80g");
  const core::Profile defaults;
  using core::AttentionImpl;
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash, false, 128, 4096), 504.3 / 989.4);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash, true, 64, 512), 219.0 / 989.4);
  EXPECT_NEAR(3.5 / (1 / 0.524 + 2.5 / 0.504), 504.3 / 989.4, 1e-3);
  // flash2, flash1 and triton follow the FlashAttention-2 README's measured curves (forward +
  // backward, causal). H100 FlashAttention-2, head dim 128: 265 at 2k, 294 at 4k, 328 at 16k;
  // head dim 64 at 4k: 257.
  const double h_peak = 989.4;
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash2, false, 128, 4096), 294 / h_peak);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash2, true, 128, 4096), 294 / h_peak);
  // Between 2k and 4k, linear in log2(seq): 2896 is ~halfway (log2 11.5): (265 + 294) / 2.
  EXPECT_NEAR(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash2, false, 128, 2896), 279.5 / h_peak, 2e-4);
  // Head dim 96, halfway between 64 and 128 at 4k: (257 + 294) / 2 = 275.5.
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash2, false, 96, 4096), 275.5 / h_peak);
  // Beyond the measured range the end points hold: 32k takes 16k's 328, 256 takes 512's 163, head
  // dim 192 (MLA) takes 128's.
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash2, false, 128, 32768), 328 / h_peak);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash2, false, 128, 256), 163 / h_peak);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, h100, AttentionImpl::kFlash2, false, 192, 4096), 294 / h_peak);
  // A100 (312 TFLOP/s): FlashAttention-2 head dim 128 at 2k 155; Triton head dim 64 at 16k 80;
  // FlashAttention v1 head dim 128 at 8k 80. A100's flash is FlashAttention-2 (what Transformer
  // Engine runs on Ampere). A GPU with neither a curve nor a figure takes the profile's 0.60 / 0.50.
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, a100, AttentionImpl::kFlash2, false, 128, 2048), 155 / 312.0);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, a100, AttentionImpl::kFlash, true, 128, 2048), 155 / 312.0);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, a100, AttentionImpl::kTriton, true, 64, 16384), 80 / 312.0);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, a100, AttentionImpl::kFlash1, false, 128, 8192), 80 / 312.0);
  const core::GpuSpec v100 = *core::LoadGpu("v100");
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, v100, AttentionImpl::kFlash, false, 128, 2048), 0.60);
  EXPECT_DOUBLE_EQ(AttentionEfficiency(defaults, v100, AttentionImpl::kFlash, true, 128, 2048), 0.50);
  // One causal 8k x 8k forward of 32 heads x 128 with FlashAttention-2 on H100: 2 x 8192^2 x 256 x
  // 32 / 2 FLOPs at 308 TFLOP/s (the 8k point), plus the 4 us kernel overhead.
  core::Op op;
  op.kind = core::OpKind::kAttention;
  op.attn_batch = 1, op.heads = 32, op.seq_q = op.seq_kv = 8192, op.head_dim_qk = op.head_dim_v = 128;
  op.attention = AttentionImpl::kFlash2;
  const double flops = 2.0 * 8192 * 8192 * 256 * 32 / 2;
  EXPECT_DOUBLE_EQ(op.Flops(), flops);
  EXPECT_NEAR(ComputeOpTime(op, h100, defaults), flops / 308e12 + 4e-6, 1e-12);
  // A profile that measured attention times every kernel with its own figures.
  auto measured = core::ParseProfileJson(R"({"version": 2, "name": "m", "attention_fwd_efficiency": 0.45})");
  ASSERT_TRUE(measured.ok());
  EXPECT_DOUBLE_EQ(AttentionEfficiency(*measured, h100, core::AttentionImpl::kFlash2, false, 128, 4096), 0.45);
  // A flash2 model is a flash model everywhere else: same ops, same memory.
  core::ModelSpec m = *core::LoadModel("llama3-8b");
  core::PlanSpec p;
  p.gpus = p.dp = 8;
  p.seq_len = 8192;
  p.global_batch = 8;
  core::ModelSpec m2 = m;
  m2.attention = core::AttentionImpl::kFlash2;
  const core::StepGraph g1 = core::BuildStepGraph(m, p), g2 = core::BuildStepGraph(m2, p);
  ASSERT_EQ(g1.dense_layer.size(), g2.dense_layer.size());
  EXPECT_EQ(core::EstimateMemory(m, p, h100).per_gpu_bytes, core::EstimateMemory(m2, p, h100).per_gpu_bytes);
  EXPECT_GT(EstimateStep(m2, p, h100, *core::LoadCluster("dgx-h100"), defaults).time_s,
            EstimateStep(m, p, h100, *core::LoadCluster("dgx-h100"), defaults).time_s);
}

// Llama 3 70B's 80 layers on 64 GPUs: TP 8 with SP, PP 4 (20 layers per stage), DP 2 with
// ZeRO-1, 64 sequences of 8,192 tokens, checkpointing as given.
core::PlanSpec Llama70BTp8Pp4(core::Recompute recompute) {
  core::PlanSpec p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 2;
  p.gpus = 64;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = recompute;
  p.seq_len = 8192;
  p.global_batch = 64;
  return p;
}

TEST(StepModelTest, PipelineFlushesRepeatTheScheduleAndItsSynchronisation) {
  // plan.pp_flushes F: the step's m microbatches run in F schedule runs of m / F, each with its own
  // warm-up and drain and the exposed gradient synchronisation after its last backward; the
  // optimizer steps once. So a step of F flushes of m / F microbatches is F times the step of one
  // flush of m / F (its global batch / F) less F - 1 optimizer steps: Llama 3 70B on TP 8 x PP 4
  // x DP 2, 64 sequences as 4 flushes of 8 microbatches against one of 8 (16 sequences).
  Scenario s = Load("llama3-70b");
  core::PlanSpec one = Llama70BTp8Pp4(core::Recompute::kSelective);
  one.global_batch = 16;
  core::PlanSpec four = Llama70BTp8Pp4(core::Recompute::kSelective);
  four.pp_flushes = 4;
  core::Diagnostics d;
  core::ValidatePlan(four, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  EXPECT_EQ(four.MicrobatchesPerFlush(), 8);
  const StepEstimate e1 = EstimateStep(s.model, one, s.gpu, s.cluster, core::Profile{});
  const StepEstimate e4 = EstimateStep(s.model, four, s.gpu, s.cluster, core::Profile{});
  const double opt = e1.breakdown.optimizer_s;
  ASSERT_GT(opt, 0);
  EXPECT_NEAR(e4.time_s, 4 * (e1.time_s - opt) + opt, 1e-9 * e4.time_s);
  EXPECT_NEAR(e4.breakdown.bubble_s, 4 * e1.breakdown.bubble_s, 1e-12);
  EXPECT_NEAR(e4.breakdown.optimizer_s, opt, 1e-12);
  // A flush's microbatches are what a rank holds at once: with the PyTorch pipeline's kept
  // outputs (8 a flush, not 32) the peak is the one-flush plan's.
  one.keep_pp_outputs = four.keep_pp_outputs = true;
  const core::MemoryReport m1 = core::EstimateMemory(s.model, one, s.gpu);
  const core::MemoryReport m4 = core::EstimateMemory(s.model, four, s.gpu);
  ASSERT_EQ(m1.stages.size(), m4.stages.size());
  for (size_t i = 0; i < m1.stages.size(); ++i) {
    EXPECT_EQ(m4.stages[i].activations_bytes, m1.stages[i].activations_bytes) << i;
    EXPECT_GT(m4.stages[i].pipeline_buffers_bytes, 0) << i;
  }
  // One flush of all 32 microbatches pays one warm-up and drain: faster.
  core::PlanSpec whole = four;
  whole.pp_flushes = 1;
  EXPECT_LT(EstimateStep(s.model, whole, s.gpu, s.cluster, core::Profile{}).time_s, e4.time_s);
  // The rules: at least 1, more than 1 only with pp >= 2, dividing the microbatches per pipeline.
  for (auto [flushes, pp, field] :
       {std::tuple{int64_t{0}, int64_t{4}, "plan.pp_flushes"}, std::tuple{int64_t{3}, int64_t{4}, "plan.pp_flushes"},
        std::tuple{int64_t{2}, int64_t{1}, "plan.pp_flushes"}}) {
    core::PlanSpec bad = four;
    bad.pp_flushes = flushes;
    bad.pp = pp;
    core::Diagnostics bd;
    core::ValidatePlan(bad, s.model, s.gpu, s.cluster, &bd);
    EXPECT_NE(bd.ToStatus().ToString().find(field), std::string::npos) << flushes;
  }
}

TEST(StepModelTest, BreakdownAddsUpToTheStepTime) {
  Scenario s = Load("llama3-70b");
  core::PlanSpec p = Llama70BTp8Pp4(core::Recompute::kSelective);
  core::Diagnostics d;
  core::ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const StepEstimate e = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  const StepBreakdown& b = e.breakdown;
  const double sum = b.compute_s + b.recompute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.dp_comm_s + b.pp_comm_s +
                     b.bubble_s + b.optimizer_s + b.offload_s + b.host_s;
  EXPECT_NEAR(sum, e.time_s, e.time_s * 1e-9);
  // MFU is model FLOPs over the job's peak: tflops_per_gpu / 989.4 for a bf16 plan.
  EXPECT_NEAR(e.mfu, e.tflops_per_gpu * 1e12 / 989.4e12, 1e-12);
  EXPECT_GT(e.hfu, e.mfu);  // selective recompute runs the attention scores twice
  EXPECT_GT(e.mfu, 0.2);
  EXPECT_LT(e.mfu, 0.8);
}

TEST(StepModelTest, MoeLayersWaitForMegatronCoresMeasuredHostTime) {
  // Megatron-Core d98e8a64's MoE layer on three lent H200 machines (tests/data/gpu/h200-2026-11-30/
  // megatron_moe*.json, scripts/gpu_probes.py megatron_moe), host-bound: with 16 local experts of
  // 2,048 rows 12 runs, forward median 8.532 ms, forward + backward 19.389 (its kernels 1.8 to
  // 13.5 ms from 1,024 to 16,384 tokens); with 4, 8 runs, 4.125 and 8.628. Per SequentialMLP
  // expert (8.532 - 4.125) / 12 = 0.367 ms forward and (19.389 - 8.628) / 12 - 0.367 = 0.530
  // backward; the rest 4.125 - 4 x 0.367 = 2.656 forward and 8.628 - 4 x 0.897 - 2.656 = 2.385
  // backward. Qwen3-30B-A3B at EP 8 holds 128 / 8 = 16 experts a rank: one after another 2.656 +
  // 16 x 0.367 = 8.528 ms forward and 2.385 + 16 x 0.530 = 10.865 backward (19.393, the 16-expert
  // median to rounding); as a grouped GEMM (its host time per expert not measured) 2.656 and 2.385.
  Scenario s = Load("qwen3-30b-a3b");
  s.gpu = *core::LoadGpu("b200");
  s.cluster = *core::LoadCluster("dgx-b200");
  core::PlanSpec p;
  p.ep = 8;
  p.dp = 8;
  p.gpus = 8;
  p.seq_len = 4096;
  p.global_batch = 64;  // 8 microbatches of one sequence per rank
  core::Diagnostics d;
  core::ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  EXPECT_NEAR(MoeLayerHostTime(s.model, p).forward_s, 2.656e-3, 1e-15);
  EXPECT_NEAR(MoeLayerHostTime(s.model, p).backward_s, 2.385e-3, 1e-15);
  core::PlanSpec sequential = p;
  sequential.moe_grouped_gemm = false;
  EXPECT_NEAR(MoeLayerHostTime(s.model, sequential).forward_s, 8.528e-3, 1e-12);
  EXPECT_NEAR(MoeLayerHostTime(s.model, sequential).backward_s, 10.865e-3, 1e-12);
  EXPECT_NEAR(MoeLayerHostFloor(s.model, sequential), 19.393e-3, 1e-12);
  // Under Transformer Engine the grouped GEMM is its GroupedLinear, a cuBLASLt call per local
  // expert and GEMM built from scratch each time (cublaslt_gemm.cu, no plan cache), about 10 us of
  // host time each (RAFT PR #1736): 16 experts x 2 GEMMs x 10 us = 0.32 ms more forward (2.976 ms)
  // and 16 x 4 x 10 us = 0.64 ms more backward (3.025 ms). Without a grouped GEMM its per-expert
  // SequentialMLP time already holds its GEMMs.
  core::PlanSpec te = p;
  te.transformer_engine = true;
  EXPECT_NEAR(MoeLayerHostTime(s.model, te).forward_s, 2.976e-3, 1e-12);
  EXPECT_NEAR(MoeLayerHostTime(s.model, te).backward_s, 3.025e-3, 1e-12);
  core::PlanSpec te_sequential = sequential;
  te_sequential.transformer_engine = true;
  EXPECT_NEAR(MoeLayerHostFloor(s.model, te_sequential), 19.393e-3, 1e-12);
  core::PlanSpec none = p;
  none.moe_host = core::MoeHost::kNone;
  EXPECT_EQ(MoeLayerHostFloor(s.model, none), 0.0);
  core::ModelSpec dropping = s.model;
  dropping.moe->capacity_factor = 1.0;  // padded to capacity: no host synchronisation
  EXPECT_EQ(MoeLayerHostFloor(dropping, p), 0.0);
  EXPECT_EQ(MoeLayerHostFloor(*core::LoadModel("llama3-8b"), p), 0.0);
  // A hybrid model's layer list is one mixed layer per layer, its MoE block weighted by the MoE
  // layers' share: Nemotron 3 Nano has 23 MoE layers of 52, so 5.041 x 23 / 52 ms a mixed layer.
  EXPECT_NEAR(MoeLayerHostFloor(*core::LoadModel("nemotron-3-nano"), p), 5.041e-3 * 23 / 52, 1e-15);

  // The wait by hand from the costed ops (CostStepGraph, report --ops). Forward: the dispatcher's
  // synchronisation (after the first permutation, before the EP all-to-all) drains the queue, so
  // only the ops after it (the all-to-alls, the local permutations, the experts, the residual) run
  // beside the 2.656 ms forward host time; the attention block before it does not hide any of it.
  // Backward: no synchronisation, the whole backward runs beside the 2.385 ms.
  struct Work {
    double after_sync = 0, before_sync = 0, backward = 0, recompute_after_sync = 0;
  };
  auto work_of = [&](const core::PlanSpec& plan) {
    Work w;
    for (const CostedOpList& list : CostStepGraph(s.model, plan, s.gpu, s.cluster, core::Profile{})) {
      if (std::string(list.name) != "MoE layer") continue;
      for (const CostedOp& c : list.ops) {
        // Once-per-step ops (the gradients' reduction) and collectives that hide run beside none.
        if (c.op.pass == core::Pass::kStep || c.hidden) continue;
        if (c.op.pass == core::Pass::kForward) (c.op.after_moe_sync ? w.after_sync : w.before_sync) += c.time_s;
        if (c.op.pass == core::Pass::kBackwardInput || c.op.pass == core::Pass::kBackwardWeight) w.backward += c.time_s;
        if (c.op.pass == core::Pass::kRecompute && c.op.after_moe_sync) w.recompute_after_sync += c.time_s;
        if (std::string(c.op.name) == "ep_dispatch") EXPECT_TRUE(c.op.after_moe_sync);
        if (std::string(c.op.name) == "moe_permute") EXPECT_FALSE(c.op.after_moe_sync);
      }
    }
    return w;
  };
  const auto [after_sync, before_sync, backward, unused] = work_of(p);
  // On a B200 one sequence's MoE layer runs its kernels in less than the host's time: its block
  // after the synchronisation in less than 2.656 ms and its backward in less than 2.385 ms, so both
  // wait, 48 layers a microbatch.
  EXPECT_GT(after_sync, 0.3e-3);
  EXPECT_LT(after_sync, 2.656e-3);
  EXPECT_GT(before_sync, 0.3e-3);
  EXPECT_LT(backward, 2.385e-3);
  const StepEstimate gpu = EstimateStep(s.model, none, s.gpu, s.cluster, core::Profile{});
  const StepEstimate e = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  EXPECT_EQ(gpu.breakdown.host_s, 0.0);
  const StageTimes &t = e.stages[0], &t0 = gpu.stages[0];
  EXPECT_NEAR(t.forward_host_s, 48 * (2.656e-3 - after_sync), 1e-9);
  EXPECT_NEAR(t.backward_input_host_s + t.backward_weight_host_s, 48 * (2.385e-3 - backward), 1e-9);
  const double wait = t.forward_host_s + t.backward_input_host_s + t.backward_weight_host_s;
  EXPECT_NEAR(t.Total() - t0.Total(), wait, 1e-12);
  // Against the rule this replaces, max(host, the layer's GPU time), a wait of 48 x (5.041 ms - the
  // layer's GPU time): the attention block's kernels before the synchronisation, which hid part
  // of the host time there, hide none here.
  EXPECT_NEAR(wait - 48 * std::max(0.0, 5.041e-3 - after_sync - before_sync - backward), 48 * before_sync, 1e-9);
  EXPECT_NEAR(e.breakdown.host_s, 8 * wait, 1e-9);
  const StepBreakdown& b = e.breakdown;
  EXPECT_NEAR(b.compute_s + b.recompute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.dp_comm_s + b.pp_comm_s +
                  b.bubble_s + b.optimizer_s + b.offload_s + b.host_s,
              e.time_s, 1e-9 * e.time_s);
  EXPECT_GT(e.time_s, gpu.time_s + 0.9 * b.host_s);

  // Megatron-Core's EP overlap runs one microbatch's forward beside another's backward, layer by
  // layer, the backward's MLP queued before the forward's dispatch (model_chunk_schedule_plan.py
  // run() at d98e8a64): the host's 5.041 ms run beside the forward's work after the sync and the
  // whole backward, one wait of 48 x (5.041 ms - both) a microbatch.
  core::PlanSpec merged = p;
  merged.ep_overlap = true;
  const StepEstimate em = EstimateStep(s.model, merged, s.gpu, s.cluster, core::Profile{});
  const StageTimes& tm = em.stages[0];
  const double merged_wait = tm.forward_host_s + tm.backward_input_host_s + tm.backward_weight_host_s;
  const Work m = work_of(merged);
  EXPECT_LT(m.after_sync, after_sync);  // the all-to-alls hide now, so they are left out
  // A little less than by the op times alone: the hidden all-to-alls slow the compute beside them
  // (OverlapSlowdown), which lengthens the passes the host runs beside.
  EXPECT_LT(merged_wait, 48 * (5.041e-3 - m.after_sync - m.backward));
  EXPECT_GT(merged_wait, 0.95 * 48 * (5.041e-3 - m.after_sync - m.backward));
  EXPECT_NEAR(tm.forward_host_s / merged_wait, 2.656 / 5.041, 1e-9);

  // Full recomputation reruns the dispatcher, its synchronisation too, inside the backward: after
  // it the host issues the rerun's remaining ops and the backward, 2.656 + 2.385 ms, beside the
  // rerun's GPU work after the synchronisation and the backward's own, 48 x (5.041 ms - both)
  // (megatron_layer_recompute.json); the forward's wait is as without recomputation.
  core::PlanSpec full = p;
  full.recompute = core::Recompute::kFull;
  core::Diagnostics dr;
  core::ValidatePlan(full, s.model, s.gpu, s.cluster, &dr);
  ASSERT_FALSE(dr.has_errors()) << dr.ToStatus().ToString();
  const Work r = work_of(full);
  EXPECT_GT(r.recompute_after_sync, 0.0);
  EXPECT_NEAR(r.backward, backward, 1e-12);
  const StepEstimate er = EstimateStep(s.model, full, s.gpu, s.cluster, core::Profile{});
  const StageTimes& tr = er.stages[0];
  EXPECT_NEAR(tr.forward_host_s, 48 * (2.656e-3 - after_sync), 1e-9);
  EXPECT_NEAR(tr.backward_input_host_s + tr.backward_weight_host_s, 48 * (5.041e-3 - r.recompute_after_sync - backward),
              1e-9);
  // Recomputing only the experts' activation (moe_act) reruns no dispatcher: the backward's host
  // time against the whole backward, as without recomputation.
  core::PlanSpec act = p;
  act.recompute = core::Recompute::kSelective;
  act.recompute_modules = core::ModuleBit(core::RecomputeModule::kMoeAct);
  const StepEstimate ea = EstimateStep(s.model, act, s.gpu, s.cluster, core::Profile{});
  const StageTimes& ta = ea.stages[0];
  EXPECT_GT(work_of(act).recompute_after_sync, 0.0);  // the rerun activation is after the sync
  // The rerun activation lengthens the backward the host time runs beside: a little less wait.
  EXPECT_LT(ta.backward_input_host_s + ta.backward_weight_host_s, 48 * (2.385e-3 - backward));
  EXPECT_GT(ta.backward_input_host_s + ta.backward_weight_host_s, 0.0);

  // Eight sequences a microbatch: the block's kernels after the sync outlast its forward host
  // time, which then costs nothing.
  p.micro_batch = none.micro_batch = 8;
  const StepEstimate big = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  EXPECT_EQ(big.breakdown.host_s, 0.0);
  EXPECT_DOUBLE_EQ(big.time_s, EstimateStep(s.model, none, s.gpu, s.cluster, core::Profile{}).time_s);
}

TEST(StepModelTest, MergedEpOverlapHidesEachAllToAllUnderItsPartnerBlock) {
  // Megatron-Core's EP overlap (TransformerLayerSchedulePlan.run at 6cd6ea530e), by hand. Compute
  // blocks of one layer (ms): pre_f 0.5, mlp_b 1, mlp_w 0.5, mlp_f 1, pre_b 1, pre_w 0.5 (4.5 in
  // all); every all-to-all 1. Without delay_wgrad, from a layer whose streams are free at 0 and
  // whose inputs are ready then: combine_b 0-1 beside pre_f 0-0.5; mlp_b waits for combine_b, 1-2,
  // mlp_w 2-2.5; dispatch_f (after pre_f and combine_b) 1-2; dispatch_b (after mlp_w) 2.5-3.5;
  // mlp_f (after dispatch_f, the stream free at 2.5) 2.5-3.5; combine_f and pre_b (each after the
  // other stream's block) 3.5-4.5, pre_w 4.5-5. The next layer's combine_b waits for pre_w (5), its
  // pre_f for combine_f (4.5) and the stream (5): the same state 5 ms later. A layer takes 5 ms,
  // 0.5 exposed: combine_b's excess over pre_f, its one partner block (the pass-level rule would
  // hide all four all-to-alls, 4 ms, under the 4.5 ms of compute).
  MergedEp e;
  e.pre_f = 0.5, e.mlp_b = 1, e.mlp_w = 0.5, e.mlp_f = 1, e.pre_b = 1, e.pre_w = 0.5;
  e.dispatch_f = e.combine_f = e.dispatch_b = e.combine_b = 1;
  EXPECT_NEAR(e.Compute(), 4.5, 1e-12);
  EXPECT_NEAR(MergedEpPeriod(e), 5.0, 1e-12);
  // With delay_wgrad the input gradients are ready before the weight gradients: the next
  // combine_b starts after pre_b (4.5), beside pre_w and then pre_f (5-5.5, its stream free at 5),
  // and ends at 5.5 with pre_f; mlp_b 5.5-6.5, dispatch_b after mlp_b (not mlp_w) 6.5-7.5, mlp_f
  // after mlp_w 7-8, combine_f and pre_b 8-9, pre_w 9-9.5: every layer 4.5 ms after the one
  // before, nothing exposed.
  e.delay_wgrad = true;
  EXPECT_NEAR(MergedEpPeriod(e), 4.5, 1e-12);
  // Communication-bound: all-to-alls of 3 ms each keep the communication stream busy, 12 ms a
  // layer, whatever the 4.5 ms of compute beside them.
  e.dispatch_f = e.combine_f = e.dispatch_b = e.combine_b = 3;
  EXPECT_NEAR(MergedEpPeriod(e), 12.0, 1e-12);
  // Nothing to hide: the compute alone.
  e.dispatch_f = e.combine_f = e.dispatch_b = e.combine_b = 0;
  EXPECT_NEAR(MergedEpPeriod(e), 4.5, 1e-12);
  // The combine nodes' kernels run on the communication stream and share the GPU: with 0.25 ms
  // each way, both streams carry them (post_f beside pre_b, post_b beside pre_f): 5 ms.
  e.post_f = e.post_b = 0.25;
  EXPECT_NEAR(MergedEpPeriod(e), 5.0, 1e-12);
}

TEST(StepModelTest, EpOverlapCostsTheMergedLayersOfAMoeModel) {
  // Qwen3-30B-A3B on 16 H100s, EP 16 over two nodes, one sequence of 4,096 a microbatch (the
  // Megatron-Bridge skill's layout): the all-to-alls (k = 8 copies of each token, half of them over
  // the network) outlast a layer's compute, so the overlap hides part of them.
  Scenario s = Load("qwen3-30b-a3b");
  core::PlanSpec p;
  p.ep = 16;
  p.dp = 16;
  p.gpus = 16;
  p.seq_len = 4096;
  p.global_batch = 128;  // 8 microbatches a rank
  p.moe_host = core::MoeHost::kNone;
  core::PlanSpec on = p;
  on.ep_overlap = true;
  core::PlanSpec dw = on;
  dw.delay_wgrad = true;
  for (const core::PlanSpec* q : {&p, &on, &dw}) {
    core::Diagnostics d;
    core::ValidatePlan(*q, s.model, s.gpu, s.cluster, &d);
    ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  }
  const StepEstimate off = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  const StepEstimate e = EstimateStep(s.model, on, s.gpu, s.cluster, core::Profile{});
  const StepEstimate ed = EstimateStep(s.model, dw, s.gpu, s.cluster, core::Profile{});
  // The overlap hides some of the exposed all-to-alls, not all; the compute is the same.
  EXPECT_LT(e.time_s, off.time_s);
  EXPECT_NEAR(e.breakdown.compute_s, off.breakdown.compute_s, 1e-9 * off.breakdown.compute_s);
  EXPECT_GT(e.breakdown.ep_comm_s, 0.0);
  EXPECT_LT(e.breakdown.ep_comm_s, off.breakdown.ep_comm_s);
  // Delaying the weight gradients never lengthens the merged layer.
  EXPECT_LE(ed.time_s, e.time_s * (1 + 1e-12));
  for (const StepEstimate* x : {&e, &ed}) {
    const StepBreakdown& b = x->breakdown;
    EXPECT_NEAR(b.compute_s + b.recompute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.dp_comm_s + b.pp_comm_s +
                    b.bubble_s + b.optimizer_s + b.offload_s + b.host_s,
                x->time_s, 1e-9 * x->time_s);
  }
  // The first microbatch's forward and the last one's backward run unmerged (Megatron-Core's
  // combined_1f1b_schedule_for_no_pipelining), their all-to-alls blocking: 1 of 8 microbatches
  // here, 1 of 64 with eight times the batch, so the exposed EP time a microbatch falls with m
  // towards the merged layers' own.
  EXPECT_NEAR(EpOverlapUnmergedShare(on), 1.0 / 8, 1e-15);
  EXPECT_EQ(EpOverlapUnmergedShare(p), 0.0);
  core::PlanSpec big = on;
  big.global_batch = 1024;
  EXPECT_NEAR(EpOverlapUnmergedShare(big), 1.0 / 64, 1e-15);
  const StepEstimate eb = EstimateStep(s.model, big, s.gpu, s.cluster, core::Profile{});
  EXPECT_LT(eb.breakdown.ep_comm_s / 64, e.breakdown.ep_comm_s / 8);
  // Interleaved (PP 4, VP 2, 16 microbatches a flush): rank r warms up with (4 - r - 1) x 2 +
  // (2 - 1) x 4 + 1 = 11, 9, 7, 5 forwards of the 16 x 2 chunk passes a flush, 32 / 4 = 8 on
  // average; with 4 microbatches (8 passes) the first two ranks' warm-ups are the whole flush:
  // (8 + 8 + 7 + 5) / 4 of 8.
  core::PlanSpec il = on;
  il.pp = 4;
  il.dp = 4;
  il.schedule = core::Schedule::kInterleaved;
  il.vpp = 2;
  il.global_batch = 64;
  EXPECT_NEAR(EpOverlapUnmergedShare(il), 8.0 / 32, 1e-15);
  il.global_batch = 16;
  EXPECT_NEAR(EpOverlapUnmergedShare(il), 28.0 / 32, 1e-15);

  auto error_of = [&](const core::PlanSpec& q) {
    core::Diagnostics dq;
    core::ValidatePlan(q, s.model, s.gpu, s.cluster, &dq);
    return dq.ToStatus().message();
  };
  // The weight gradients delayed without the overlap: an error naming the field and the rule.
  core::PlanSpec bad = p;
  bad.delay_wgrad = true;
  EXPECT_NE(error_of(bad).find("plan.delay_wgrad"), std::string::npos) << error_of(bad);
  // What Megatron-Core refuses under the overlap (transformer_config.py at 6cd6ea530e), each an
  // error naming its field: full recomputation, the moe module recomputed, and PP > 1 without the
  // interleaved schedule.
  core::PlanSpec full = on;
  full.recompute = core::Recompute::kFull;
  EXPECT_NE(error_of(full).find("plan.recompute"), std::string::npos) << error_of(full);
  core::PlanSpec moe = on;
  moe.recompute = core::Recompute::kSelective;
  moe.recompute_modules = core::ModuleBit(core::RecomputeModule::kMoe);
  EXPECT_NE(error_of(moe).find("plan.recompute_modules"), std::string::npos) << error_of(moe);
  core::PlanSpec piped = on;
  piped.pp = 2;
  piped.gpus = 32;
  EXPECT_NE(error_of(piped).find("plan.schedule"), std::string::npos) << error_of(piped);
  piped.schedule = core::Schedule::kInterleaved;
  piped.vpp = 2;
  EXPECT_EQ(error_of(piped), "") << error_of(piped);
}

TEST(StepModelTest, ActivationOffloadWaitsOnlyWhenTheCopiesOutlastThePass) {
  // OffloadExposed by hand: 32 GB over 64 GB/s is 0.5 s; a 0.4 s pass over 8 layers hides it
  // under all but one layer, 0.35 s, so the compute waits 0.15 s. Over 450 GB/s (NVLink-C2C) the
  // copies take 0.071 s and hide; one layer has no window.
  EXPECT_NEAR(OffloadExposed(32e9, 64e9, 0.4, 8), 0.5 - 0.35, 1e-12);
  EXPECT_DOUBLE_EQ(OffloadExposed(32e9, 450e9, 0.4, 8), 0.0);
  EXPECT_NEAR(OffloadExposed(32e9, 64e9, 0.4, 1), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(OffloadExposed(0, 64e9, 0.4, 8), 0.0);

  // Llama 3 8B on 8 H100s (ZeRO-3, 4 x 8192 tokens per microbatch), 16 of its 32 layers'
  // activations offloaded over PCIe Gen5 (64 GB/s each way): the 16 layers' saved tensors
  // (OffloadedActivationBytes = 16 x LayerActivationBytes) cross the link each way per
  // microbatch, and what outlasts 31/32 of each pass is exposed, in the breakdown as offload_s.
  Scenario s = Load("llama3-8b");
  core::PlanSpec p;
  p.gpus = 8;
  p.dp = 8;
  p.zero = 3;
  p.micro_batch = 4;
  p.seq_len = 8192;
  p.global_batch = 64;
  core::PlanSpec off = p;
  off.offload_activation_layers = 16;
  core::Diagnostics d;
  core::ValidatePlan(off, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const int64_t bytes = core::OffloadedActivationBytes(s.model, off);
  EXPECT_EQ(bytes, 16 * core::LayerActivationBytes(s.model, off, false, core::Recompute::kNone));
  const StepEstimate base = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{}, nullptr, StepDetail::kFull);
  const StepEstimate e = EstimateStep(s.model, off, s.gpu, s.cluster, core::Profile{}, nullptr, StepDetail::kFull);
  const StageTimes& t = base.stages[0];
  const double f = OffloadExposed(static_cast<double>(bytes), 64e9, t.forward_s, 32);
  const double b = OffloadExposed(static_cast<double>(bytes), 64e9, t.backward_input_s + t.backward_weight_s, 32);
  // 16 layers of about 4 x 8192 x 4096 x 34 B = 4.6 GB: 73 GB, 1.14 s each way, against a forward
  // of about 1.08 s: the forward waits, the backward (twice as long) hides the reloads.
  EXPECT_NEAR(static_cast<double>(bytes), 73.08e9, 0.01e9);
  EXPECT_GT(f, 0.09);
  EXPECT_DOUBLE_EQ(b, 0.0);
  EXPECT_NEAR(e.stages[0].forward_offload_s, f, 1e-12);
  EXPECT_NEAR(e.stages[0].backward_input_offload_s, b, 1e-12);
  EXPECT_NEAR(e.breakdown.offload_s, static_cast<double>(p.Microbatches()) * (f + b), 1e-9);
  EXPECT_NEAR(e.breakdown.compute_s, base.breakdown.compute_s, 1e-9);
  EXPECT_GT(e.time_s, base.time_s);
  // The same plan on a GB200 (NVLink-C2C, 450 GB/s each way) hides the copies.
  core::GpuSpec gb = *core::LoadGpu("gb200");
  const StepEstimate c2c = EstimateStep(s.model, off, gb, *core::LoadCluster("gb200-nvl72"), core::Profile{});
  EXPECT_DOUBLE_EQ(c2c.breakdown.offload_s, 0.0);
}

TEST(StepModelTest, FineGrainedOffloadWaitsOnlyWhenTheModulesCopiesOutlastThePass) {
  // Fine-grained offloading costed as layer offloading is (OffloadExposed): the named modules'
  // saved tensors of every layer on the stage (FineGrainedOffloadBytes each) cross the host link
  // each way per microbatch beside the pass. Llama 3 8B on 8 H100s as above, core attention's q,
  // k, v and log-sum-exp of its 32 layers: hidden over PCIe's 64 GB/s; on a host link slowed to
  // 1 GB/s the forward and backward wait what outlasts 31/32 of them.
  Scenario s = Load("llama3-8b");
  core::PlanSpec p;
  p.gpus = 8;
  p.dp = 8;
  p.zero = 3;
  p.micro_batch = 4;
  p.seq_len = 8192;
  p.global_batch = 64;
  core::PlanSpec off = p;
  off.offload_modules = core::OffloadBit(core::OffloadModule::kCoreAttn);
  core::Diagnostics d;
  core::ValidatePlan(off, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  // q (32 heads x 128) and k, v (8 KV heads x 128) in bf16 over 4 x 8192 tokens, and the fp32
  // log-sum-exp of 32 heads: 32768 x (2 x (4096 + 1024 + 1024) + 4 x 32) = 406,847,488 B a layer.
  const int64_t layer = core::FineGrainedOffloadBytes(s.model, off, false);
  EXPECT_EQ(layer, 406847488);
  const StepEstimate base = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{}, nullptr, StepDetail::kFull);
  const StepEstimate pcie = EstimateStep(s.model, off, s.gpu, s.cluster, core::Profile{});
  EXPECT_DOUBLE_EQ(pcie.breakdown.offload_s, 0.0);  // 13 GB at 64 GB/s, 0.2 s, under a 1 s forward
  core::GpuSpec slow = s.gpu;
  slow.host_link_bytes_per_s = 1e9;
  const StepEstimate e = EstimateStep(s.model, off, slow, s.cluster, core::Profile{}, nullptr, StepDetail::kFull);
  const StageTimes& t = base.stages[0];
  const double f = OffloadExposed(32.0 * layer, 1e9, t.forward_s, 32);
  const double b = OffloadExposed(32.0 * layer, 1e9, t.backward_input_s + t.backward_weight_s, 32);
  EXPECT_GT(f, 10.0);
  EXPECT_NEAR(e.stages[0].forward_offload_s, f, 1e-9);
  EXPECT_NEAR(e.stages[0].backward_input_offload_s, b, 1e-9);
  EXPECT_NEAR(e.breakdown.offload_s, static_cast<double>(p.Microbatches()) * (f + b), 1e-6);
}

// Data parallelism over one DGX H100's 8 GPUs at 8,192 tokens: the offload tests' plan.
core::PlanSpec DataParallel8(int zero, int64_t micro_batch, int64_t global_batch) {
  core::PlanSpec p;
  p.gpus = 8;
  p.dp = 8;
  p.zero = zero;
  p.micro_batch = micro_batch;
  p.seq_len = 8192;
  p.global_batch = global_batch;
  return p;
}

// ValidatePlan's errors, "" when there are none.
std::string PlanErrors(const Scenario& s, const core::PlanSpec& p) {
  core::Diagnostics d;
  core::ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  return d.has_errors() ? d.ToStatus().ToString() : "";
}

TEST(StepModelTest, CheckpointsInHostMemoryAreCopiedOutAndBackOnTheComputeStream) {
  // DeepSpeed's cpu_checkpointing (checkpointing.py at v0.6.2: the forward's .cpu() and the
  // backward's copy back, both on the compute stream): Llama 3 8B on 8 H100s, ZeRO-3, micro batch
  // 4 at 8,192 tokens, full recomputation. Each of the 32 layers' checkpoints, 2 B x 8,192 x 4 x
  // 4,096 = 268,435,456 B, crosses PCIe Gen5's 64 GB/s each way: 32 x 268,435,456 / 64e9 =
  // 0.134 s a pass, 0.268 s a microbatch, none of it hidden, and 4 microbatches a step (global
  // batch 128 = 8 ranks x 4 sequences x 4): 1.074 s in the breakdown's offload, and the step
  // longer by as much. Nothing else changes.
  Scenario s = Load("llama3-8b");
  core::PlanSpec p = DataParallel8(3, 4, 128);
  p.recompute = core::Recompute::kFull;
  core::PlanSpec off = p;
  off.offload_checkpoints = true;
  ASSERT_EQ(PlanErrors(s, off), "");
  ASSERT_DOUBLE_EQ(s.gpu.host_link_bytes_per_s, 64e9);
  const double pass = 32 * 268435456.0 / 64e9;
  EXPECT_NEAR(pass, 0.134218, 1e-6);
  const StepEstimate base = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{}, nullptr, StepDetail::kFull);
  const StepEstimate e = EstimateStep(s.model, off, s.gpu, s.cluster, core::Profile{}, nullptr, StepDetail::kFull);
  EXPECT_NEAR(e.stages[0].forward_offload_s, pass, 1e-12);
  EXPECT_NEAR(e.stages[0].backward_input_offload_s, pass, 1e-12);
  EXPECT_NEAR(e.stages[0].forward_s - base.stages[0].forward_s, pass, 1e-12);
  EXPECT_NEAR(e.stages[0].backward_input_s - base.stages[0].backward_input_s, pass, 1e-12);
  EXPECT_EQ(p.Microbatches(), 4);
  EXPECT_NEAR(e.breakdown.offload_s, 4 * 2 * pass, 1e-9);
  EXPECT_NEAR(e.breakdown.offload_s, 1.073742, 1e-6);
  EXPECT_NEAR(e.breakdown.compute_s, base.breakdown.compute_s, 1e-9);
  EXPECT_NEAR(e.breakdown.dp_comm_s, base.breakdown.dp_comm_s, 1e-9);
  EXPECT_NEAR(e.time_s - base.time_s, 4 * 2 * pass, 1e-6);
}

TEST(StepModelTest, AnOptimizerOffloadedToTheHostStepsThereAtTheHostsMemoryBandwidth) {
  // ZeRO-Offload (DeepSpeed's offload_optimizer cpu): Llama 3 8B (8,030,261,248 parameters) on a
  // DGX H100, ZeRO-2 over 8: each rank's shard is 1,003,782,656 parameters (every list's count
  // divides by 8). Per step each rank copies its bf16 gradients to the host (2 B a parameter at the
  // H100's 64 GB/s: 0.031368 s), the host's Adam reads the fp32 gradient, master weight and two
  // moments and writes the master weight and moments (4 + 2 x 4 + 2 x 2 x 4 = 28 B a parameter),
  // the 8 ranks' at once at DeepSpeed's measured 0.177 of the node's 563.2 GB/s (2 Xeon 8480C, 16
  // DDR5 channels at 4,400 MT/s), 99.69 GB/s: 8 x 1,003,782,656 x 28 / 99.6864e9 = 2.255547 s, and
  // the bf16 weights come back (0.031368 s): 2.318283 s a step on the host and its link, where the
  // GPU's own Adam took a few ms.
  Scenario s = Load("llama3-8b");
  ASSERT_DOUBLE_EQ(s.cluster.host_memory_bytes_per_s, 563.2e9);
  const core::PlanSpec p = DataParallel8(2, 1, 64);
  core::PlanSpec off = p;
  off.offload_optimizer = core::OffloadTarget::kCpu;
  ASSERT_EQ(PlanErrors(s, off), "");
  const core::StepGraph graph = core::BuildStepGraph(s.model, off);
  double host_s = 0;
  int64_t grads_to_host = 0;
  auto add = [&](const std::vector<core::Op>& ops, int64_t count) {
    for (const core::Op& op : ops) {
      if (op.site == core::OpSite::kGpu) continue;
      EXPECT_EQ(op.pass, core::Pass::kStep) << op.name;
      host_s += static_cast<double>(count) * HostOpTime(op, s.gpu, s.cluster, off);
      if (std::string_view(op.name) == "offload_grads_to_host") grads_to_host += count * op.bytes;
    }
  };
  add(graph.dense_layer, s.model.layers);
  add(graph.embedding, 1);
  add(graph.head, 1);
  add(graph.step, 1);
  EXPECT_EQ(grads_to_host, 2 * int64_t{1003782656});
  ASSERT_DOUBLE_EQ(kHostAdamDramShare, 0.177);
  EXPECT_NEAR(host_s, 2.318283, 1e-6);
  const StepEstimate base = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  const StepEstimate e = EstimateStep(s.model, off, s.gpu, s.cluster, core::Profile{});
  EXPECT_LT(base.breakdown.optimizer_s, 0.05);
  // The rest of the step's optimizer time is the GPU's: its gradient buffer zeroed and the
  // gradients pre-divided, 12-15 ms.
  EXPECT_GT(e.breakdown.optimizer_s, host_s);
  EXPECT_LT(e.breakdown.optimizer_s - host_s, 0.02);
  EXPECT_NEAR(e.breakdown.compute_s, base.breakdown.compute_s, 1e-9);
  // Without the host's memory bandwidth (DGX B200's preset has none) or the GPU's host link
  // (B200's) the plan is refused, naming each field.
  core::Diagnostics b;
  core::ValidatePlan(off, s.model, *core::LoadGpu("b200"), *core::LoadCluster("dgx-b200"), &b);
  const std::string why = b.ToStatus().ToString();
  EXPECT_NE(why.find("plan.offload.optimizer: cluster dgx-b200 has no host_memory_bytes_per_s"), std::string::npos)
      << why;
  EXPECT_NE(why.find("plan.offload.optimizer: gpu b200 has no host_link_bytes_per_s"), std::string::npos) << why;
}

TEST(StepModelTest, OffloadedParametersCrossTheHostLinkBeforeEachGatherOnItsStream) {
  // ZeRO-3 with the parameters in host memory (DeepSpeed's offload_param): Llama 3 8B on 8 H100s.
  // A layer's 218,112,000 parameters are 27,264,000 a rank; before each of the layer's two
  // gathers a microbatch (forward, backward) the rank's bf16 shard, 54,528,000 B, crosses the
  // H100's 64 GB/s host link: 852 us, on the gather's stream, so it hides as the gather does.
  Scenario s = Load("llama3-8b");
  const core::PlanSpec p = DataParallel8(3, 1, 64);
  core::PlanSpec off = p;
  off.offload_params = core::OffloadTarget::kCpu;
  ASSERT_EQ(PlanErrors(s, off), "");
  const core::StepGraph graph = core::BuildStepGraph(s.model, off);
  int copies = 0;
  for (const core::Op& op : graph.dense_layer) {
    if (std::string_view(op.name) != "offload_params_to_gpu") continue;
    ++copies;
    EXPECT_EQ(op.site, core::OpSite::kHostLink);
    EXPECT_EQ(op.bytes, 54528000);
    EXPECT_TRUE(op.overlappable);
    EXPECT_EQ(op.group, core::CommGroup::kDpCp);
    EXPECT_NEAR(HostOpTime(op, s.gpu, s.cluster, off), 852e-6, 1e-9);
  }
  EXPECT_EQ(copies, 2);  // forward and backward
  EXPECT_TRUE(std::none_of(core::BuildStepGraph(s.model, p).dense_layer.begin(),
                           core::BuildStepGraph(s.model, p).dense_layer.end(),
                           [](const core::Op& op) { return std::string_view(op.name) == "offload_params_to_gpu"; }));
  // Hidden under the layers' compute beside the gathers: the step grows by at most the copies
  // (32 layers x 2 x 8 microbatches x 852 us = 0.436 s), and here by far less.
  const StepEstimate base = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  const StepEstimate e = EstimateStep(s.model, off, s.gpu, s.cluster, core::Profile{});
  EXPECT_GE(e.time_s, base.time_s);
  EXPECT_LT(e.time_s - base.time_s, 0.1 * 0.436);
  // Without the GPU's host link (B200's preset has none) the plan is refused, naming the field.
  core::Diagnostics b;
  core::ValidatePlan(off, s.model, *core::LoadGpu("b200"), *core::LoadCluster("dgx-b200"), &b);
  EXPECT_NE(b.ToStatus().ToString().find("plan.offload.params: gpu b200 has no host_link_bytes_per_s"),
            std::string::npos)
      << b.ToStatus().ToString();
}

// TP with sequence parallelism, ZeRO-1 and full recomputation at 8,192 tokens, 8 sequences per
// data-parallel rank.
core::PlanSpec TpWithSpPlan(int64_t tp, int64_t dp) {
  core::PlanSpec p;
  p.tp = tp;
  p.dp = dp;
  p.gpus = tp * dp;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = core::Recompute::kFull;
  p.seq_len = 8192;
  p.global_batch = 8 * dp;
  return p;
}

TEST(StepModelTest, AnA800IsAnA100WhoseTensorParallelCollectivesMoveAtTwoThirdsTheRate) {
  // presets/gpus/a800.json is the A100 80GB SXM4's figures; hgx-a800 its NVLink at 400 GB/s both
  // ways (200 GB/s per direction) against the DGX A100's 600 (300). Llama 3 70B at TP 8 with SP
  // inside one node: the same compute, and each TP all-gather and reduce-scatter of 8,192 x 8,192
  // bf16 elements (134 MB) moves its bytes at 2/3 the rate: the exposed TP time is at most 1.5x
  // the A100's (the bandwidth term alone) and a little less, since the per-hop latencies and the
  // collectives' per-rank copies in HBM cost the same on both (1.47x).
  Scenario s = Load("llama3-70b");
  const core::PlanSpec p = TpWithSpPlan(8, 1);
  const core::GpuSpec a100 = *core::LoadGpu("a100-80g"), a800 = *core::LoadGpu("a800");
  const StepEstimate on_a100 = EstimateStep(s.model, p, a100, *core::LoadCluster("dgx-a100"), core::Profile{});
  const StepEstimate on_a800 = EstimateStep(s.model, p, a800, *core::LoadCluster("hgx-a800"), core::Profile{});
  EXPECT_DOUBLE_EQ(on_a800.breakdown.compute_s, on_a100.breakdown.compute_s);
  ASSERT_GT(on_a100.breakdown.tp_comm_s, 0);
  const double ratio = on_a800.breakdown.tp_comm_s / on_a100.breakdown.tp_comm_s;
  EXPECT_GT(ratio, 1.4);
  EXPECT_LE(ratio, 1.5);
  EXPECT_LT(on_a800.tokens_per_s_per_gpu, on_a100.tokens_per_s_per_gpu);
}

TEST(StepModelTest, TensorParallelAcrossNodesIsMuchSlower) {
  // The seeds' anti-pattern: on 32 H100s (4 DGX nodes), TP=16 spans two nodes. Each TP
  // collective then crosses the 50 GB/s-per-GPU NICs (8 x 400 Gb/s per node) as well as NVLink
  // (450 GB/s): with the same DP x TP budget, the exposed TP time more than doubles and the
  // per-GPU throughput drops by over 20% although each GPU computes half as much per microbatch.
  Scenario s = Load("llama3-70b");
  core::PlanSpec p = TpWithSpPlan(8, 4);
  const StepEstimate inside = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  p.tp = 16;
  p.dp = 2;
  const StepEstimate across = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  EXPECT_GT(across.breakdown.tp_comm_s, 2 * inside.breakdown.tp_comm_s);
  EXPECT_LT(across.tokens_per_s_per_gpu, 0.8 * inside.tokens_per_s_per_gpu);
}

TEST(StepModelTest, PipelineSendIncludesTheReceiversGather) {
  // GPT 76.1B (h = 10240) on dgx-a100, t = 8, p = 4, b = 2, s = 2048, no SP, 1F1B, 8 microbatches,
  // default profile. Each pass waits for one send and, by Megatron's scatter/gather, the gather
  // of what it receives (Narayanan 2021 §4.1), so pp_comm = 2 m (send + gather), by hand:
  //   S = sbh x 2 = 2 x 2048 x 10240 x 2 = 83,886,080 B
  //   send   = 5 us + (S/8) / (25e9 x 0.9) + 5 us                       (one IB hop, launch)
  //   gather = 7 x 3 us + 7/8 S / (300e9 x 0.8) + 5 us                  (ring in the node, launch)
  core::PlanSpec p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 1;
  p.gpus = 32;
  p.micro_batch = 2;
  p.global_batch = 16;
  p.seq_len = 2048;
  p.precision = core::Dtype::kFp16;
  p.sequence_parallel = false;
  p.tp_overlap = core::TpOverlap::kNone;
  const core::ModelSpec m = *core::LoadModel("gpt-76.1b");
  const core::GpuSpec g = *core::LoadGpu("a100-80g");
  const core::ClusterSpec c = *core::LoadCluster("dgx-a100");
  core::Diagnostics d;
  core::ValidatePlan(p, m, g, c, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const double S = 2.0 * 2048 * 10240 * 2;
  const double send = 5e-6 + S / 8 / (25e9 * 0.9) + 5e-6;
  const double gather = 7 * 3e-6 + 7.0 / 8 * S / (300e9 * 0.8) + 5e-6;
  // The model ties its word embedding: once per step the pipeline's ends (stages 0 and 3, 24 ranks
  // apart, on two nodes) sum its two copies' fp16 gradients, 51,200 x 10,240 / 8 x 2 bytes, in a
  // two-member ring (2 (n - 1) = 2 steps: launch + 2 latencies + S / bus bandwidth).
  const double tied = 5e-6 + 2 * 5e-6 + 51200.0 * 10240 / 8 * 2 / (25e9 * 0.9);
  const StepEstimate e = EstimateStep(m, p, g, c, core::Profile{});
  EXPECT_NEAR(e.breakdown.pp_comm_s, 2 * 8 * (send + gather) + tied, 1e-9);
  // Under SP the send is already the slice the next stage computes on: no gather.
  p.sequence_parallel = true;
  const StepEstimate sp = EstimateStep(m, p, g, c, core::Profile{});
  EXPECT_NEAR(sp.breakdown.pp_comm_s, 2 * 8 * send + tied, 1e-9);
}

TEST(StepModelTest, PipelineSendsPayTheNetworkOnlyOnLinksThatLeaveTheNvlinkDomain) {
  // Llama 3.1 405B as Megatron-Bridge runs it on GB200 NVL72: TP 4 x DP 4, PP 16 interleaved (VP 8),
  // sequence 8192, one sequence per microbatch, SP. Consecutive stages are 16 ranks apart, so in a
  // 72-GPU NVLink domain the pacing rank (e.g. rank 56: its next stage is rank 72, across; its
  // previous one rank 40, inside) has one link on each tier (core::PipelineLinkCounts). One send
  // is S = T h e / t = 8192 x 16384 x 2 / 4 = 67,108,864 B, by hand:
  //   across = 5 us + S / (50e9 x 0.9) + 5 us  = 1501.3 us    (the GPU's 400 Gb/s NIC, launch)
  //   inside = 3 us + S / (900e9 x 0.8) + 5 us =  101.2 us    (NVLink 5, launch)
  // and each pass charges half the pacing rank's two links: (across + inside) / 2 = 801.3 us per send,
  // where costing every link across (a domain of one tray, 4 GPUs) charges 1501.3 us.
  core::PlanSpec p;
  p.tp = 4;
  p.dp = 4;
  p.pp = 16;
  p.vpp = 8;
  p.schedule = core::Schedule::kInterleaved;
  p.gpus = 256;
  p.micro_batch = 1;
  p.global_batch = 1536;
  p.seq_len = 8192;
  p.sequence_parallel = true;
  // One layer per chunk, the first chunk the embedding alone and the last the loss alone (the
  // recipe's account_for_embedding/loss_in_pipeline_split: 126 + 2 = 128 = 16 x 8).
  p.stage_layers.assign(128, 1);
  p.stage_layers.front() = p.stage_layers.back() = 0;
  const core::ModelSpec m = *core::LoadModel("llama3-405b");
  const core::GpuSpec g = *core::LoadGpu("gb200");
  core::ClusterSpec c = *core::LoadCluster("gb200-nvl72");
  core::Diagnostics d;
  core::ValidatePlan(p, m, g, c, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const double S = 8192.0 * 16384 * 2 / 4;
  const double across = 5e-6 + S / (50e9 * 0.9) + 5e-6, inside = 3e-6 + S / (900e9 * 0.8) + 5e-6;
  const core::Op send = core::BuildP2pOp(m, p);
  ASSERT_EQ(send.bytes, static_cast<int64_t>(S));
  core::PipelinePace pace;
  EXPECT_NEAR(PipelineSendSeconds(send, p, c, core::Profile{}, &pace), (across + inside) / 2, 1e-12);
  EXPECT_EQ(pace.crossing, 1);
  EXPECT_EQ(pace.inside, 1);
  const StepEstimate nvl72 = EstimateStep(m, p, g, c, core::Profile{});
  c.scale_up_domain_gpus = 4;  // every link across
  EXPECT_NEAR(PipelineSendSeconds(send, p, c, core::Profile{}), across, 1e-12);
  const StepEstimate trays = EstimateStep(m, p, g, c, core::Profile{});
  // Every pass charges its sends: the breakdown's sends scale with the send's cost (the TP
  // collectives, inside a tray in both, do not move).
  EXPECT_NEAR(nvl72.breakdown.pp_comm_s / trays.breakdown.pp_comm_s, (across + inside) / (2 * across), 1e-9);
  EXPECT_LT(nvl72.time_s, trays.time_s);
}

TEST(StepModelTest, TrainingCostIsGpuHoursTimesPrice) {
  // The seeds: 16k H100s x 2 weeks x $3/h ~= $16M. Here: whatever the days, cost = hours x gpus x $3.
  Scenario s = Load("llama3-8b");
  core::PlanSpec p;
  p.dp = 8;
  p.gpus = 8;
  p.zero = 1;
  p.seq_len = 4096;
  p.global_batch = 64;
  const StepEstimate e = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  const TrainEstimate t = EstimateTraining(e, p, s.gpu, s.cluster, 1e12);
  EXPECT_NEAR(t.steps, 1e12 / (64.0 * 4096), 1e-6);
  EXPECT_NEAR(t.gpu_hours, t.steps * e.time_s / 3600 * 8, 1e-6);
  EXPECT_NEAR(t.cost_usd, t.gpu_hours * 3.0, 1e-6);
  EXPECT_NEAR(t.energy_kwh, t.gpu_hours * 0.7, 1e-6);
  EXPECT_NEAR(t.days, t.steps * e.time_s / 86400, 1e-9);
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

TEST(StepModelTest, HsdpKeepsGathersInsideTheNode) {
  // ZeRO-3 over all 64 DP ranks all-gathers weights across 8 nodes every microbatch; HSDP with
  // shard groups of 8 (one node) gathers over NVLink and only all-reduces a 1/8 shard of the
  // gradients across nodes once per step (the seeds: "reducing inter-node traffic").
  const core::ModelSpec m = *core::LoadModel("llama3-8b");
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  core::PlanSpec p;
  p.dp = 64;
  p.gpus = 64;
  p.zero = 3;
  p.seq_len = 4096;
  p.global_batch = 256;  // 4 microbatches per rank
  const StepEstimate fsdp = EstimateStep(m, p, g, c, core::Profile{});
  p.sharding = core::Sharding::kHsdp;
  p.hsdp_shard_size = 8;
  const core::StepGraph hsdp_graph = core::BuildStepGraph(m, p);
  const StepEstimate hsdp = EstimateStep(m, p, g, c, core::Profile{});
  int replica_reduces = 0;
  for (const auto& op : hsdp_graph.dense_layer) {
    if (op.group == core::CommGroup::kHsdpReplica) {
      ++replica_reduces;
      EXPECT_EQ(op.collective, core::CollectiveKind::kAllReduce);
    }
    EXPECT_NE(op.group, core::CommGroup::kDpCp);  // everything else stays in the shard group
  }
  EXPECT_EQ(replica_reduces, 1);
  EXPECT_LT(hsdp.breakdown.dp_comm_s, fsdp.breakdown.dp_comm_s);
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

// Plans of one model that share sharding but differ in pipeline shape (what the search's
// StepCostCache reuses across) and in sharding (what it must not reuse across).
std::vector<core::PlanSpec> PipelineVariants(const core::ModelSpec& m, int64_t gpus) {
  std::vector<core::PlanSpec> out;
  for (int64_t tp : {4, 8})
    for (int64_t pp : {2, 4, 8})
      for (int zero : {0, 1, 3, 4})  // 4: ZeRO-3 with per-tensor gathers (DeepSpeed 0.3)
        for (core::Recompute rc : {core::Recompute::kNone, core::Recompute::kFull})
          for (core::Schedule s : {core::Schedule::k1F1B, core::Schedule::kInterleaved, core::Schedule::kGpipe,
                                   core::Schedule::kZeroBubble, core::Schedule::kDualPipe})
            for (bool overlap : {true, false}) {
              core::PlanSpec p;
              p.tp = tp;
              p.pp = pp;
              p.dp = gpus / (tp * pp);
              p.gpus = gpus;
              p.zero = std::min(zero, 3);
              if (zero == 4) p.zero3_gather = core::Zero3Gather::kPerTensor;
              p.recompute = rc;
              p.sequence_parallel = true;
              p.schedule = s;
              p.vpp = s == core::Schedule::kInterleaved ? 2 : 1;
              p.overlap_grad_reduce = overlap;
              p.seq_len = 4096;
              p.micro_batch = 1;
              p.global_batch = p.dp * 16;
              if (m.layers % (pp * p.vpp) != 0) continue;
              core::Diagnostics d;
              core::ValidatePlan(p, m, *core::LoadGpu("h100-sxm"), *core::LoadCluster("dgx-h100"), &d);
              if (!d.has_errors()) out.push_back(p);
            }
  return out;
}

TEST(StepModelTest, FullRecomputeOfSomeLayersRecomputesOnlyThose) {
  // recompute_layers = n: a stage fully recomputes its first n layers and runs the others without
  // recomputation (PlanSpec; torchtitan's selective layer AC checkpoints every second block,
  // Megatron's --recompute-num-layers). Llama 3 70B, 80 layers, PP 4 (20 per stage), TP 8:
  // recomputing 5 of each stage's 20 layers costs a quarter of full recomputation, the compute
  // stays, and the cached path and a plan that differs only in n share the cached lists.
  Scenario s = Load("llama3-70b");
  core::PlanSpec p = Llama70BTp8Pp4(core::Recompute::kFull);
  const StepEstimate all = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  p.recompute_layers = 5;
  core::Diagnostics d;
  core::ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const StepEstimate quarter = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
  EXPECT_NEAR(quarter.breakdown.recompute_s, 0.25 * all.breakdown.recompute_s, 1e-9 * all.time_s);
  EXPECT_NEAR(quarter.breakdown.compute_s, all.breakdown.compute_s, 1e-9 * all.time_s);
  EXPECT_LT(quarter.time_s, all.time_s - 0.7 * all.breakdown.recompute_s);
  p.recompute_layers = 20;  // every layer of the stage: the same as all
  EXPECT_NEAR(EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{}).time_s, all.time_s, 1e-12 * all.time_s);
  StepCostCache cache;
  for (int64_t n : {0, 5, 20, 5}) {
    p.recompute_layers = n;
    const StepEstimate a = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{});
    const StepEstimate b = EstimateStep(s.model, p, s.gpu, s.cluster, core::Profile{}, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << n;
    EXPECT_NEAR(a.breakdown.recompute_s, b.breakdown.recompute_s, 1e-12 * a.time_s) << n;
  }
  // report --ops says whose rows the recompute ones are.
  p.recompute_layers = 5;
  const auto lists = CostStepGraph(s.model, p, s.gpu, s.cluster, core::Profile{});
  ASSERT_FALSE(lists.empty());
  EXPECT_NE(lists.front().where.find("recompute: only its first 5 layers"), std::string::npos) << lists.front().where;
  // The hardware FLOPs count the same share, per stage whatever the model chunks: with VPP 2 the
  // stage's 5 of 20 layers are still a quarter of the forward's matmuls and attention again.
  p.recompute_layers = 5;
  p.vpp = 2;
  const core::ForwardFlops f = core::ForwardFlopsPerToken(s.model, p.seq_len, core::AttentionFlops::kCausal);
  const double tokens = 64.0 * 8192.0;
  EXPECT_NEAR(core::HardwareFlopsPerIteration(f, s.model, p),
              (3 * f.Total() + 0.25 * (f.matmul + f.attention)) * tokens, 1e-12 * 3 * f.Total() * tokens);
}

TEST(StepCostCacheTest, CachedEstimatesEqualUncachedOnes) {
  // The cache keys the costed op lists by every plan field the step graph reads; a plan that
  // differs only in pipeline shape reuses them. The cached path adds a layer's parts (compute,
  // recompute, sync) separately, so its sums may differ from the one-plan path in the last bits
  // of their rounding only: 1e-12 relative.
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::Profile prof;
  for (const char* name : {"llama3-70b", "mixtral-8x7b"}) {
    const core::ModelSpec m = *core::LoadModel(name);
    const auto plans = PipelineVariants(m, 256);
    ASSERT_GT(plans.size(), 50u) << name;
    StepCostCache cache;
    for (const auto& p : plans) {
      const StepEstimate a = EstimateStep(m, p, g, c, prof);
      const StepEstimate b = EstimateStep(m, p, g, c, prof, &cache);
      ASSERT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << name << " tp" << p.tp << " pp" << p.pp << " zero" << p.zero;
      EXPECT_NEAR(a.breakdown.dp_comm_s, b.breakdown.dp_comm_s, 1e-12 * a.time_s);
      EXPECT_NEAR(a.breakdown.ep_comm_s, b.breakdown.ep_comm_s, 1e-12 * a.time_s);
      EXPECT_NEAR(a.breakdown.pp_comm_s, b.breakdown.pp_comm_s, 1e-12 * a.time_s);
      EXPECT_NEAR(a.breakdown.optimizer_s, b.breakdown.optimizer_s, 1e-12 * a.time_s);
      EXPECT_EQ(a.critical_stage, b.critical_stage);
      ASSERT_EQ(a.stages.size(), b.stages.size());
    }
    // Schedules and overlap do not change the lists (10 variants share them; DualPipe has its own),
    // except that per-tensor ZeRO-3 overlaps its per-microbatch reduce-scatters only with
    // overlap_grad_reduce (5 variants share those).
    EXPECT_GE(cache.hits(), 3 * cache.misses()) << name;
  }
}

TEST(StepModelTest, TheOpTableShowsTheTiedEmbeddingAllReduceExposed) {
  // report --ops describes each step collective as the step time costs it: with overlap_grad_reduce
  // the gradient reduction may hide under the last backward, but the tied embedding's all-reduce
  // over the pipeline's ends is added whole (GPT 1.7B, tp 2 x pp 4 on A100s), on the embedding's
  // list and the head's.
  const core::GpuSpec g = *core::LoadGpu("a100-80g");
  const core::ClusterSpec c = *core::LoadCluster("dgx-a100");
  const core::ModelSpec m = *core::LoadModel("gpt-1.7b");
  core::PlanSpec p;
  p.gpus = 16;
  p.tp = 2;
  p.pp = 4;
  p.dp = 2;
  p.zero = 1;
  p.seq_len = 2048;
  p.global_batch = 64;
  p.overlap_grad_reduce = true;
  core::Diagnostics d;
  core::ValidatePlan(p, m, g, c, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  int tied = 0, reductions_hidden = 0;
  for (const CostedOpList& l : CostStepGraph(m, p, g, c, core::Profile{}))
    for (const CostedOp& o : l.ops) {
      if (o.op.group == core::CommGroup::kPpEnds) {
        ++tied;
        EXPECT_FALSE(o.hidden) << l.name;
        EXPECT_EQ(o.slowdown, 0) << l.name;
      } else if (o.op.pass == core::Pass::kStep && o.op.collective == core::CollectiveKind::kReduceScatter) {
        reductions_hidden += o.hidden ? 1 : 0;
      }
    }
  EXPECT_EQ(tied, 2);
  EXPECT_GT(reductions_hidden, 0);
}

TEST(StepCostCacheTest, TiedEmbeddingPipelinesReachTheCachedStageSync) {
  // A tied model's head holds its own copy of the word embedding only with pp > 1, and the
  // pipeline's ends then all-reduce the two copies (core/step_graph.cc HeadHoldsOutputWeight,
  // TiedEmbeddingSync): plans differing only in pp must not share the head's cached sync part.
  // GPT 1.7B (tied) on A100s, tp 2 x dp 2, in one cache: pp 1, then 2 and 4 (the ends within one
  // node, 4 ranks apart, then on two nodes, 12 apart). Each cached estimate equals its uncached one
  // (the GPU count changes with pp: the compute runs at the slowest of 4, 8 or 16 GPUs' pace,
  // SlowestGpuPace, which the cache must not carry from one count to another).
  const core::GpuSpec g = *core::LoadGpu("a100-80g");
  const core::ClusterSpec c = *core::LoadCluster("dgx-a100");
  const core::ModelSpec m = *core::LoadModel("gpt-1.7b");
  ASSERT_TRUE(m.tied_embeddings);
  StepCostCache cache;
  for (int64_t pp : {1, 2, 4, -4, 1}) {  // -4: pp 4 under DualPipe (the head leaves the all-reduce to the embedding)
    core::PlanSpec p;
    p.pp = std::abs(pp);
    p.gpus = 4 * p.pp;
    p.tp = 2;
    p.dp = 2;
    p.seq_len = 2048;
    p.global_batch = 16;
    if (pp < 0) p.schedule = core::Schedule::kDualPipe;
    core::Diagnostics d;
    core::ValidatePlan(p, m, g, c, &d);
    ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
    const StepEstimate a = EstimateStep(m, p, g, c, core::Profile{});
    const StepEstimate b = EstimateStep(m, p, g, c, core::Profile{}, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << "pp " << pp;
    EXPECT_NEAR(a.breakdown.pp_comm_s, b.breakdown.pp_comm_s, 1e-12 * a.time_s) << "pp " << pp;
  }
}

TEST(StepCostCacheTest, TransformerEngineReachesTheCachedLists) {
  // Transformer Engine gathers an FP8 plan's quantized TP inputs (1 B an element where the plan
  // without it gathers 2: core/step_graph.cc TpGather), so two plans differing only in it must not
  // share cached lists: each cached estimate equals its uncached one, and the 16-bit gathers make
  // the plan without Transformer Engine the slower (Llama 3 70B FP8, TP 8 with SP, one node).
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::ModelSpec m = *core::LoadModel("llama3-70b");
  StepCostCache cache;
  double t[2] = {};
  for (bool te : {true, false}) {
    core::PlanSpec p;
    p.gpus = 8;
    p.tp = 8;
    p.dp = 1;
    p.sequence_parallel = true;
    p.tp_overlap = core::TpOverlap::kNone;
    p.precision = core::Dtype::kFp8;
    p.recompute = core::Recompute::kFull;
    p.seq_len = 4096;
    p.global_batch = 1;
    p.transformer_engine = te;
    core::Diagnostics d;
    core::ValidatePlan(p, m, g, c, &d);
    ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
    const StepEstimate a = EstimateStep(m, p, g, c, core::Profile{});
    const StepEstimate b = EstimateStep(m, p, g, c, core::Profile{}, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << te;
    t[te] = b.time_s;
  }
  EXPECT_GT(t[0], t[1]);
}

TEST(StepCostCacheTest, RepeatKvAndRecomputePolicyReachTheCachedParts) {
  // repeat_kv adds its K/V copies to the compute parts and the recompute policy decides the
  // recompute part's ops, so plans differing only in them must not share cached parts: each
  // cached estimate (in the order below, one cache) equals its uncached one. Llama 3 8B, one GPU.
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::ModelSpec m = *core::LoadModel("llama3-8b");
  StepCostCache cache;
  std::vector<double> t;
  for (int variant = 0; variant < 4; ++variant) {
    core::PlanSpec p;
    p.gpus = 1;
    p.seq_len = 8192;
    p.global_batch = 1;
    p.repeat_kv = variant == 1;
    p.recompute = variant >= 2 ? core::Recompute::kSelective : core::Recompute::kNone;
    if (variant >= 2)
      p.recompute_modules =
          core::ModuleBit(variant == 3 ? core::RecomputeModule::kSaveQkvProj : core::RecomputeModule::kTorchtitanOp);
    core::Diagnostics d;
    core::ValidatePlan(p, m, g, c, &d);
    ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
    const StepEstimate a = EstimateStep(m, p, g, c, core::Profile{});
    const StepEstimate b = EstimateStep(m, p, g, c, core::Profile{}, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << variant;
    t.push_back(b.time_s);
  }
  EXPECT_GT(t[1], t[0]);  // the copies cost
  EXPECT_NE(t[3], t[2]);  // the two policies rerun different ops
}

TEST(StepCostCacheTest, Zero3GatherKindReachesTheCachedSyncPart) {
  // The ZeRO-3 gather kind changes the layer's sync ops (fsdp2 and fsdp1 add their copies, per-tensor its
  // list collectives), so plans differing only in it must not share a cached sync list: each
  // cached estimate equals its uncached one, and FSDP2's copies make it the slower of flat and
  // fsdp2 (Llama 3 8B, FSDP over 64 GPUs, one sequence of 8,192 tokens each).
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::ModelSpec m = *core::LoadModel("llama3-8b");
  StepCostCache cache;
  double t[4] = {};
  for (core::Zero3Gather kind : {core::Zero3Gather::kFlat, core::Zero3Gather::kPerTensor, core::Zero3Gather::kFsdp2,
                                 core::Zero3Gather::kFsdp1}) {
    core::PlanSpec p;
    p.gpus = 64;
    p.dp = 64;
    p.zero = 3;
    p.seq_len = 8192;
    p.global_batch = 64;
    p.zero3_gather = kind;
    const StepEstimate a = EstimateStep(m, p, g, c, core::Profile{});
    const StepEstimate b = EstimateStep(m, p, g, c, core::Profile{}, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << core::Name(kind);
    t[static_cast<int>(kind)] = b.time_s;
  }
  EXPECT_GT(t[static_cast<int>(core::Zero3Gather::kFsdp2)], t[static_cast<int>(core::Zero3Gather::kFlat)]);
  EXPECT_GT(t[static_cast<int>(core::Zero3Gather::kFsdp1)], t[static_cast<int>(core::Zero3Gather::kFlat)]);
}

TEST(StepCostCacheTest, MoeDispatcherReachesTheCachedMoeLayer) {
  // The token dispatcher changes the MoE layer's ops (flex: no outer permutations, fewer rows on
  // the wire), so two plans differing only in it must not share a cached MoE list: each cached
  // estimate equals its uncached one, and flex is faster here (Mixtral 8x7B, EP 8 over 8 experts:
  // 2 ranks per token either way, but two permutations fewer).
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::Profile prof;
  const core::ModelSpec m = *core::LoadModel("mixtral-8x7b");
  StepCostCache cache;
  double t[2] = {};
  for (core::MoeDispatcher d : {core::MoeDispatcher::kAllToAll, core::MoeDispatcher::kFlex}) {
    core::PlanSpec p;
    p.gpus = 64;
    p.tp = 2;
    p.pp = 4;
    p.dp = 8;
    p.ep = 8;
    p.zero = 1;
    p.sequence_parallel = true;
    p.seq_len = 4096;
    p.global_batch = 64;
    p.moe_dispatcher = d;
    core::Diagnostics diag;
    core::ValidatePlan(p, m, g, c, &diag);
    ASSERT_FALSE(diag.has_errors());
    const StepEstimate a = EstimateStep(m, p, g, c, prof);
    const StepEstimate b = EstimateStep(m, p, g, c, prof, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << core::Name(d);
    t[static_cast<int>(d)] = b.time_s;
  }
  EXPECT_LT(t[1], t[0]);
  // The same for the cross entropy (a word of the key of its own), whose ops sit in the head's
  // compute part.
  const core::ModelSpec llama = *core::LoadModel("llama3-8b");
  StepCostCache ce_cache;
  for (core::CrossEntropy ce : {core::CrossEntropy::kFused, core::CrossEntropy::kUpcast, core::CrossEntropy::kFlash,
                                core::CrossEntropy::kNative, core::CrossEntropy::kTe, core::CrossEntropy::kCompiled}) {
    core::PlanSpec p;
    p.gpus = 8;
    p.pp = 2;
    p.dp = 4;
    p.seq_len = 4096;
    p.global_batch = 32;
    p.cross_entropy = ce;
    const StepEstimate a = EstimateStep(llama, p, g, c, prof);
    const StepEstimate b = EstimateStep(llama, p, g, c, prof, &ce_cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << core::Name(ce);
  }
}

TEST(StepCostCacheTest, RouterPaddingAndImbalanceReachTheCachedMoeLayer) {
  // The MoE layer's padding copies (moe_router_padding) and the busiest EP rank's share
  // (moe_imbalance) change its ops under every dispatcher, so plans differing only in them must not
  // share a cached MoE list: Qwen3-30B-A3B at EP 8 in FP8 with Transformer Engine, each cached
  // estimate equal to its uncached one, padding in the router faster, a busier rank slower.
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::Profile prof;
  const core::ModelSpec m = *core::LoadModel("qwen3-30b-a3b");
  core::PlanSpec base;
  base.gpus = 8;
  base.dp = 8;
  base.ep = 8;
  base.zero = 1;
  base.seq_len = 4096;
  base.micro_batch = 4;
  base.global_batch = 64;
  base.precision = core::Dtype::kFp8;
  base.transformer_engine = true;
  core::PlanSpec padded = base, busier = base;
  padded.moe_router_padding = true;
  busier.moe_imbalance = 1.3;
  StepCostCache cache;
  auto cached = [&](const core::PlanSpec& p) {
    core::Diagnostics diag;
    core::ValidatePlan(p, m, g, c, &diag);
    EXPECT_FALSE(diag.has_errors()) << diag.ToStatus().message();
    const StepEstimate a = EstimateStep(m, p, g, c, prof);
    const StepEstimate b = EstimateStep(m, p, g, c, prof, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s);
    return b.time_s;
  };
  const double t = cached(base);
  EXPECT_LT(cached(padded), t);
  EXPECT_GT(cached(busier), t);
}

TEST(StepCostCacheTest, EpOverlapReachesTheCachedMoeLayer) {
  // The EP overlap's merged schedule (and its delayed weight gradients) and DualPipe's pass rule
  // cost the same ops differently, so plans differing only there must not share a cached MoE list;
  // each cached estimate equals its uncached one, also with a recomputation whose ops come in a
  // cached part of their own (Qwen3-30B-A3B, EP 16 over two nodes, recomputing the norms and the
  // experts' activation).
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::Profile prof;
  const core::ModelSpec m = *core::LoadModel("qwen3-30b-a3b");
  StepCostCache cache;
  std::vector<double> times;
  for (int variant = 0; variant < 4; ++variant) {
    core::PlanSpec p;
    p.gpus = 32;
    p.pp = 2;
    p.dp = 16;
    p.ep = 16;
    p.seq_len = 4096;
    p.global_batch = 256;
    p.recompute = core::Recompute::kSelective;
    p.recompute_modules =
        core::ModuleBit(core::RecomputeModule::kLayernorm) | core::ModuleBit(core::RecomputeModule::kMoeAct);
    p.schedule = variant == 3 ? core::Schedule::kDualPipe : core::Schedule::kInterleaved;
    p.vpp = variant == 3 ? 1 : 2;
    p.ep_overlap = variant == 1 || variant == 2;  // DualPipe hides the all-to-alls by itself
    p.delay_wgrad = variant == 2;
    core::Diagnostics diag;
    core::ValidatePlan(p, m, g, c, &diag);
    ASSERT_FALSE(diag.has_errors()) << variant << ": " << diag.ToStatus().ToString();
    const StepEstimate a = EstimateStep(m, p, g, c, prof);
    const StepEstimate b = EstimateStep(m, p, g, c, prof, &cache);
    EXPECT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << variant;
    times.push_back(b.time_s);
  }
  EXPECT_LT(times[1], times[0]);  // the overlap hides some of the exposed all-to-alls
  EXPECT_LE(times[2], times[1]);  // delaying the weight gradients never lengthens a merged layer
  EXPECT_NE(times[3], times[1]);  // DualPipe keeps the pass rule
}

TEST(StepCostCacheTest, PlacementReachesTheSharedComputeParts) {
  // A layer's compute part is shared between plans whose TP, CP and EP groups span the cluster
  // alike, whatever their pp, dp or ZeRO stage. Putting PP innermost moves TP across nodes: the
  // cached estimate must see that (TP spanning nodes is much slower), exactly as uncached.
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::Profile prof;
  const core::ModelSpec m = *core::LoadModel("llama3-70b");
  StepCostCache cache;
  double inside = 0, across = 0;
  for (bool pp_inner : {false, true})
    for (int64_t pp : {2, 4}) {
      core::PlanSpec p;
      p.tp = 8;
      p.pp = pp;
      p.dp = 64 / (8 * pp);
      p.gpus = 64;
      p.seq_len = 4096;
      p.global_batch = 64;
      p.sequence_parallel = true;
      if (pp_inner) p.placement = {core::Axis::kPp, core::Axis::kTp, core::Axis::kCp, core::Axis::kEp, core::Axis::kDp};
      const StepEstimate a = EstimateStep(m, p, g, c, prof);
      const StepEstimate b = EstimateStep(m, p, g, c, prof, &cache);
      ASSERT_NEAR(a.time_s, b.time_s, 1e-12 * a.time_s) << "pp" << pp << " pp_inner " << pp_inner;
      EXPECT_NEAR(a.breakdown.tp_comm_s, b.breakdown.tp_comm_s, 1e-12 * a.time_s);
      if (pp == 4) (pp_inner ? across : inside) = b.breakdown.tp_comm_s;
    }
  EXPECT_GT(across, 2 * inside);
}

TEST(StepCostCacheTest, TotalsOnlyDiffersOnlyInTheStages) {
  // StepDetail::kTotalsOnly (the search's path) leaves the per-stage times out; every other
  // number is the kFull estimate's, bit for bit.
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::Profile prof;
  const core::ModelSpec m = *core::LoadModel("llama3-70b");
  StepCostCache cache;
  for (const auto& p : PipelineVariants(m, 256)) {
    const StepEstimate a = EstimateStep(m, p, g, c, prof, &cache, StepDetail::kFull);
    const StepEstimate b = EstimateStep(m, p, g, c, prof, &cache, StepDetail::kTotalsOnly);
    EXPECT_EQ(a.stages.size(), static_cast<size_t>(p.pp));
    EXPECT_TRUE(b.stages.empty());
    EXPECT_EQ(a.time_s, b.time_s);
    EXPECT_EQ(a.critical_stage, b.critical_stage);
    EXPECT_EQ(a.breakdown.bubble_s, b.breakdown.bubble_s);
    EXPECT_EQ(a.breakdown.dp_comm_s, b.breakdown.dp_comm_s);
    EXPECT_EQ(a.mfu, b.mfu);
  }
}

TEST(StepCostCacheTest, ACacheForgetsAnotherModel) {
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::Profile prof;
  const core::ModelSpec a = *core::LoadModel("llama3-70b"), b = *core::LoadModel("llama3-8b");
  core::PlanSpec p;
  p.tp = 8;
  p.dp = 1;
  p.gpus = 8;
  p.seq_len = 4096;
  p.global_batch = 8;
  StepCostCache cache;
  const double ta = EstimateStep(a, p, g, c, prof, &cache).time_s;
  const double tb = EstimateStep(b, p, g, c, prof, &cache).time_s;  // same plan, other model
  EXPECT_NEAR(tb, EstimateStep(b, p, g, c, prof).time_s, 1e-12 * tb);
  EXPECT_LT(tb, ta);
  EXPECT_EQ(cache.misses(), 2);
}

TEST(StepModelTest, Bf16LayersCostAsTheBf16PlansLayersOnTheStagesThatHoldThem) {
  // Llama 3 8B on 8 B200s, TP 1 x PP 4 x DP 2 (8 layers per stage), NVFP4 with the last 4 layers
  // kept in BF16 (Megatron-Core --first-last-layers-bf16 --num-layers-at-end-in-bf16 4, by the
  // global layer index: fp8_utils.py is_first_last_bf16_layer at d98e8a64). Stages 0-2 hold none
  // and take the NVFP4 plan's times; the last holds 4 of its 8 layers in BF16, so each pass there
  // takes the NVFP4 plan's time plus 4 x (one BF16 layer - one NVFP4 layer), a layer's time being
  // stage 1's (layers only, no embedding or head) / 8 under each plan.
  const core::GpuSpec g = *core::LoadGpu("b200");
  const core::ClusterSpec c = *core::LoadCluster("dgx-b200");
  const core::ModelSpec m = *core::LoadModel("llama3-8b");
  const core::Profile prof;
  core::PlanSpec p;
  p.gpus = 8, p.tp = 1, p.pp = 4, p.dp = 2, p.zero = 1;
  p.micro_batch = 1, p.global_batch = 64, p.seq_len = 8192;
  p.transformer_engine = true;
  p.precision = core::Dtype::kNvfp4;
  core::PlanSpec pb = p, pe = p;
  pb.precision = core::Dtype::kBf16;
  pe.bf16_layers_at_end = 4;
  core::Diagnostics d;
  core::ValidatePlan(pe, m, g, c, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const StepEstimate a = EstimateStep(m, p, g, c, prof), b = EstimateStep(m, pb, g, c, prof),
                     e = EstimateStep(m, pe, g, c, prof);
  ASSERT_EQ(e.stages.size(), 4u);
  for (int s = 0; s < 3; ++s) EXPECT_DOUBLE_EQ(e.stages[s].forward_s, a.stages[s].forward_s) << s;
  auto layer = [](const StepEstimate& x, double StageTimes::*pass) { return x.stages[1].*pass / 8; };
  for (double StageTimes::*pass :
       {&StageTimes::forward_s, &StageTimes::backward_input_s, &StageTimes::backward_weight_s})
    EXPECT_NEAR(e.stages[3].*pass, a.stages[3].*pass + 4 * (layer(b, pass) - layer(a, pass)), 1e-9 * a.stages[3].*pass);
  EXPECT_GT(e.time_s, a.time_s);
  EXPECT_LT(e.time_s, b.time_s);
  // The search's cache costs the BF16 layers under the BF16 plan's key: the same numbers.
  StepCostCache cache;
  const StepEstimate ec = EstimateStep(m, pe, g, c, prof, &cache);
  EXPECT_NEAR(ec.time_s, e.time_s, 1e-12 * e.time_s);
  EXPECT_NEAR(EstimateStep(m, p, g, c, prof, &cache).time_s, a.time_s, 1e-12 * a.time_s);
}

}  // namespace
}  // namespace meshplan::sim
