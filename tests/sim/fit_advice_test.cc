// What makes a plan that does not fit fit: the standard settings, ranked by step time.
#include "sim/fit_advice.h"

#include <gtest/gtest.h>

#include "core/defaults.h"
#include "core/memory.h"
#include "core/validate.h"
#include "sim/step_model.h"

namespace meshplan::sim {
namespace {

core::Scenario Make(const std::string& model, const std::string& cluster, int64_t gpus, int64_t tp, int64_t pp,
                    int64_t seq, int64_t gbs) {
  core::Scenario s;
  s.model = *core::LoadModel(model);
  s.cluster = *core::LoadCluster(cluster);
  s.gpu = *core::LoadGpu(s.cluster.gpu);
  s.plan.gpus = gpus;
  s.plan.tp = tp;
  s.plan.pp = pp;
  s.plan.dp = gpus / (tp * pp);
  s.plan.seq_len = seq;
  s.plan.global_batch = gbs;
  std::vector<std::string> notes;
  core::ApplyDefaultStageSplit(s.model, &s.plan, &notes);
  core::Diagnostics d;
  core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  EXPECT_FALSE(d.has_errors()) << d.ToStatus().message();
  return s;
}

TEST(FitAdviceTest, AFittingPlanNeedsNothing) {
  core::Scenario s = Make("llama3-8b", "dgx-h100", 8, 1, 1, 4096, 64);
  s.plan.zero = 1;
  const FitAdvice a = AdviseFit(s, core::Profile{});
  EXPECT_TRUE(a.fits);
  EXPECT_TRUE(a.alone.empty());
  EXPECT_EQ(FitAdviceLine(a), "");
}

TEST(FitAdviceTest, LlamaEightBOnEightGpusNeedsShardedGradients) {
  // Llama 3 8B (8.03e9 parameters), DP 8 at 8k tokens without ZeRO: 16 B x 8.03e9 = 128.5 GB of
  // model state per GPU, over an H100's 85.9 GB whatever the activations (43.1 GB held here, with
  // the fused cross entropy's 6 B per logit: 8192 x 128256 x 6 = 6.3 GB of them).
  //   ZeRO-1: 2 + 2 B/param replicated + 12/8 sharded = 44.2 GB of states -> 90.2 GB: still over.
  //   ZeRO-2: 2 + 14/8 = 30.1 GB -> 76.1 GB: fits. ZeRO-3: 16/8 = 16.1 GB -> fits.
  //   (Each with the 685 MiB CUDA context measured on an H200, core/memory.h.)
  // Recompute cannot remove 128 GB of states, so the two sharding stages are the options alone.
  const core::Scenario s = Make("llama3-8b", "dgx-h100", 8, 1, 1, 8192, 64);
  ASSERT_FALSE(core::EstimateMemory(s.model, s.plan, s.gpu).fits);
  const FitAdvice a = AdviseFit(s, core::Profile{});
  EXPECT_FALSE(a.fits);
  ASSERT_EQ(a.alone.size(), 2u);
  for (const FitOption& o : a.alone) {
    EXPECT_TRUE(o.flags == "--zero 2" || o.flags == "--zero 3") << o.flags;
    EXPECT_GE(o.headroom_bytes, 0);
    // Its numbers are the memory model's and the step model's for the changed plan.
    const core::MemoryReport r = core::EstimateMemory(s.model, o.plan, s.gpu);
    EXPECT_EQ(o.per_gpu_bytes, r.per_gpu_bytes);
    EXPECT_EQ(o.headroom_bytes, r.capacity_bytes - r.per_gpu_bytes);
    const double base = EstimateStep(s.model, s.plan, s.gpu, s.cluster, core::Profile{}).time_s;
    EXPECT_NEAR(o.step_ratio, EstimateStep(s.model, o.plan, s.gpu, s.cluster, core::Profile{}).time_s / base, 1e-12);
  }
  EXPECT_NEAR(static_cast<double>(a.alone.front().per_gpu_bytes), 76.1e9, 0.1e9);
  // ZeRO-1 alone is tried and falls short by about 4 GB.
  core::PlanSpec z1 = s.plan;
  z1.zero = 1;
  const core::MemoryReport r1 = core::EstimateMemory(s.model, z1, s.gpu);
  EXPECT_FALSE(r1.fits);
  EXPECT_NEAR(static_cast<double>(r1.per_gpu_bytes), 90.2e9, 0.1e9);
  EXPECT_EQ(FitAdviceLine(a).rfind(a.alone.front().flags + " (sharded ", 0), 0u) << FitAdviceLine(a);
}

TEST(FitAdviceTest, OptionsAreRankedByStepTime) {
  // Llama 3 70B, TP 8 x PP 2 x DP 4 at 8k tokens without SP, ZeRO-1 or recompute: several settings
  // fit alone; they come cheapest first.
  const core::Scenario s = Make("llama3-70b", "dgx-h100", 64, 8, 2, 8192, 512);
  ASSERT_FALSE(core::EstimateMemory(s.model, s.plan, s.gpu).fits);
  const FitAdvice a = AdviseFit(s, core::Profile{});
  ASSERT_GE(a.alone.size(), 2u);
  for (size_t i = 1; i < a.alone.size(); ++i) EXPECT_LE(a.alone[i - 1].step_time_s, a.alone[i].step_time_s);
  for (const auto& o : a.alone) EXPECT_GE(o.headroom_bytes, 0) << o.flags;
  // Full recompute repeats the forward: it is never the cheapest when anything else fits.
  EXPECT_NE(a.alone.front().flags, "--recompute full");
}

TEST(FitAdviceTest, Llama405BRecipeWithoutSpAndDistributedOptimizerNeedsBoth) {
  // Llama 3 405B, TP 8 x PP 16 on 16,384 H100s typed without SP and the distributed optimizer
  // (237.5 GB on stage 1): neither alone is enough; together, in Settings' order, they fit.
  const core::Scenario s = Make("llama3-405b", "dgx-h100", 16384, 8, 16, 8192, 2048);
  ASSERT_FALSE(core::EstimateMemory(s.model, s.plan, s.gpu).fits);
  const FitAdvice a = AdviseFit(s, core::Profile{});
  EXPECT_TRUE(a.alone.empty());
  ASSERT_TRUE(a.together.has_value());
  EXPECT_TRUE(a.together_fits);
  EXPECT_EQ(a.together->flags, "--sp --zero 1");
  EXPECT_TRUE(a.together->plan.sequence_parallel);
  EXPECT_EQ(a.together->plan.zero, 1);
  EXPECT_GE(a.together->headroom_bytes, 0);
  EXPECT_EQ(FitAdviceLine(a).rfind("no single standard setting fits; together --sp --zero 1 ", 0), 0u)
      << FitAdviceLine(a);
}

TEST(FitAdviceTest, NothingStandardFitsOnOneGpu) {
  // 405B on 8 GPUs: 16 B/param of state alone is 6.5 TB; no setting of the table helps enough, the
  // checkpoints in host memory neither (the optimizer's offload needs ZeRO >= 1, which DP 1 has not).
  core::Scenario s = Make("llama3-405b", "dgx-h100", 8, 8, 1, 8192, 8);
  const FitAdvice a = AdviseFit(s, core::Profile{});
  EXPECT_FALSE(a.fits);
  EXPECT_TRUE(a.alone.empty());
  ASSERT_TRUE(a.together.has_value());
  EXPECT_FALSE(a.together_fits);
  EXPECT_LT(a.together->headroom_bytes, 0);
  EXPECT_EQ(FitAdviceLine(a).rfind(
                "no standard setting fits, not even --sp --recompute full --offload-checkpoints together", 0),
            0u)
      << FitAdviceLine(a);
  // DP 1: ZeRO-3 would shard over nothing, so the way out is more GPUs.
  EXPECT_EQ(a.further, "shard over more GPUs (more tp, pp or dp)");
}

TEST(FitAdviceTest, ZeroThreeIsSuggestedOnlyWhereItShards) {
  // Llama 3 70B over DP 8 at 8k tokens: ZeRO-0 needs 1.13 TB of states per GPU; nothing of the
  // table fits alone (ZeRO-3 alone leaves 141 GB of states), so the way out names ZeRO-3 only while
  // it is off, and more GPUs once it is on. Together, the settings in their order fit once the
  // optimizer's 12 B a parameter go to host memory (ZeRO-Offload, after the checkpoints): 70.55e9 x
  // 4 B / 8 = 35.3 GB of weights and gradients stay, 48.8 GB with the rest, at the host's Adam's
  // price (docs/compute.md).
  core::Scenario s = Make("llama3-70b", "dgx-h100", 8, 1, 1, 8192, 64);
  FitAdvice a = AdviseFit(s, core::Profile{});
  EXPECT_TRUE(a.alone.empty());
  EXPECT_EQ(a.further, "shard further (more tp or pp, --zero 3)");
  ASSERT_TRUE(a.together.has_value());
  EXPECT_TRUE(a.together_fits);
  EXPECT_EQ(a.together->flags, "--recompute full --zero 3 --offload-checkpoints --offload-optimizer cpu");
  s.plan.zero = 3;
  a = AdviseFit(s, core::Profile{});
  EXPECT_EQ(a.further, "shard over more GPUs (more tp, pp or dp)");
  ASSERT_TRUE(a.together.has_value());
  // Selective, then full in its place, then the host memory.
  EXPECT_EQ(a.together->flags, "--recompute full --offload-checkpoints --offload-optimizer cpu");
  EXPECT_TRUE(a.together_fits);
  EXPECT_GT(a.together->headroom_bytes, 0);
  EXPECT_EQ(FitAdviceLine(a).rfind("no single standard setting fits; together --recompute full --offload-checkpoints "
                                   "--offload-optimizer cpu (",
                                   0),
            0u)
      << FitAdviceLine(a);
  // On a cluster without the host's memory bandwidth (DGX B200's preset; its GPU has no host link
  // either) no option offloads anything.
  core::Scenario b = Make("llama3-70b", "dgx-b200", 8, 1, 1, 8192, 64);
  a = AdviseFit(b, core::Profile{});
  EXPECT_FALSE(a.fits);
  for (const FitOption& o : a.alone) EXPECT_EQ(o.flags.find("--offload"), std::string::npos) << o.flags;
  if (a.together) EXPECT_EQ(a.together->flags.find("--offload"), std::string::npos) << a.together->flags;
}

}  // namespace
}  // namespace meshplan::sim
