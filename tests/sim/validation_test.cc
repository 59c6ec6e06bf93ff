// The step model against the published runs of Narayanan 2021 Table 1 and Korthikanti 2022
// Table 5 (tests/data/validation/published.json).
//
// The target is median |error| <= 3% and max <= 8%, enforced here for the shipped profile
// a100-megatron-2022 (fitted to Korthikanti Table 4 only): median 2.9%, max 6.5% today. With the
// defaults it is median 9.4%, max 12.6%, too fast on all but one record (docs/calibration.md has
// the analysis). These tests pin the current level so that changes can only improve it; tighten
// them as the model does.
#include "sim/validation.h"

#include <gtest/gtest.h>

#include "core/presets.h"
#include "sim/fit.h"
#include "sim/step_model.h"

namespace meshplan::sim {
namespace {

TEST(ValidationTest, PublishedRunsRegressionBound) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(*text, &skipped);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  // Narayanan Table 1 (10 rows), Korthikanti Table 5 (8 rows) and its §6.3 DP=8 run.
  ASSERT_EQ(runs->size(), 19u);
  const ValidationSummary v = ValidateRuns(*runs, core::Profile{});
  for (const auto& r : v.records) EXPECT_LT(std::abs(r.error), 0.13) << r.id;
  EXPECT_LE(v.median_abs_error, 0.10);
  EXPECT_LE(v.max_abs_error, 0.13);
}

TEST(ValidationTest, RecordsMapToTheirPublishedPlans) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok());
  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  for (const auto& r : *runs) {
    if (r.id != "korthikanti2022-t5-175B-seq-selective") continue;
    // Table 3: 175B, TP 8, PP 8, 64 GPUs, GBS 64, MBS 1; §6: interleaving 3, SP + selective.
    const auto& p = r.scenario.plan;
    EXPECT_EQ(p.tp, 8);
    EXPECT_EQ(p.pp, 8);
    EXPECT_EQ(p.dp, 1);
    EXPECT_EQ(p.vpp, 3);
    EXPECT_EQ(p.schedule, core::Schedule::kInterleaved);
    EXPECT_TRUE(p.sequence_parallel);
    EXPECT_EQ(p.recompute, core::Recompute::kSelective);
    EXPECT_EQ(r.published, 13.75);
    EXPECT_TRUE(p.grad_accum_fusion);
    EXPECT_FALSE(r.scenario.cluster.sharp);  // NCCL's CollNet is off unless enabled
    return;
  }
  FAIL() << "korthikanti2022-t5-175B-seq-selective not loaded";
}

TEST(ValidationTest, UnprintedSettingsComeFromTheAuthorsLaunchScript) {
  // Megatron-LM examples/sc21/run_table_1.sh (presets/launches/megatron-sc21-table1.json): 76B
  // ran MBS 2 with --num-layers-per-virtual-pipeline-stage 5 (60 layers / 4 stages / 5 = 3 chunks)
  // and Megatron's local DDP; 1.7B ran MBS 16 under PyTorch DDP (all-reduce under the backward).
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok());
  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  int seen = 0;
  for (const auto& r : *runs) {
    const auto& p = r.scenario.plan;
    if (r.id == "narayanan2021-t1-76.1B") {
      ++seen;
      EXPECT_EQ(p.micro_batch, 2);
      EXPECT_EQ(p.vpp, 3);
      EXPECT_EQ(p.schedule, core::Schedule::kInterleaved);
      EXPECT_FALSE(p.overlap_grad_reduce);
      EXPECT_FALSE(p.grad_accum_fusion);  // the SC21 container predates the fusion
      EXPECT_EQ(p.Microbatches(), 1792 / (2 * 32));
    } else if (r.id == "narayanan2021-t1-1.7B") {
      ++seen;
      EXPECT_EQ(p.micro_batch, 16);
      EXPECT_EQ(p.vpp, 1);
      EXPECT_TRUE(p.overlap_grad_reduce);
      bool cited = false;
      for (const auto& a : r.assumptions) cited |= a.find("run_table_1.sh") != std::string::npos;
      EXPECT_TRUE(cited) << "the assumptions name the launch script";
    }
  }
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

TEST(ValidationTest, DeepSeekV3PretrainingThroughputOnH800) {
  // DeepSeek-V3 technical report (arXiv 2412.19437), Table 1: pre-training took 2,664K H800
  // GPU-hours for 14.8T tokens = 14.8e12 / (2.664e6 x 3600) = 1,543 tokens/s per GPU. Their
  // recipe (§3.2, §3.4): 2048 H800s, PP 16 with DualPipe, EP 64 across 8 nodes, no TP, ZeRO-1,
  // FP8 GEMMs, sequence 4096, batch 15,360 sequences (the final value of their ramp); the 61
  // layers split 3 + 14 x 4 + 2 here (the report does not print the split). Not in the tuning
  // set: a first-principles check on an MoE/FP8/H800 run.
  const core::ModelSpec m = *core::LoadModel("deepseek-v3");
  const core::GpuSpec g = *core::LoadGpu("h800");
  const core::ClusterSpec c = *core::LoadCluster("hgx-h800");
  core::PlanSpec p;
  p.pp = 16;
  p.ep = 64;
  p.dp = 128;
  p.gpus = 2048;
  p.zero = 1;
  p.seq_len = 4096;
  p.global_batch = 15360;
  p.schedule = core::Schedule::kDualPipe;
  p.precision = core::Dtype::kFp8;
  p.stage_layers = {3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2};
  const StepEstimate e = EstimateStep(m, p, g, c, core::Profile{});
  EXPECT_NEAR(e.tokens_per_s_per_gpu, 1543, 0.10 * 1543);  // today: 1,436 (-7%)
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

// Calibration from published kernels (docs/calibration.md): Korthikanti 2022 Table 4 times one
// 22B layer (t = 8, b = 4, s = 2048) forward and backward in five configurations, 10 numbers.
// Fitting gemm_efficiency.fp16, F_half, the kernel overhead, hbm_efficiency (held at 1) and
// comm.scale_up to them reproduces each within 1.5%; the shipped preset a100-megatron-2022 is
// that fit, and it predicts the 19 end-to-end records (not fitted) far better than the defaults.
TEST(ValidationTest, ProfileFittedToTable4ReproducesItAndIsTheShippedPreset) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok());
  auto timings = core::LoadPublishedLayerTimings(*text);
  ASSERT_TRUE(timings.ok()) << timings.status().ToString();
  ASSERT_EQ(timings->size(), 5u);
  std::vector<LayerSample> layers;
  for (const auto& t : *timings) layers.push_back({t.id, t.scenario, t.forward_s, t.backward_s});
  auto fit = FitProfile({}, {}, layers.front().scenario.gpu, core::Profile{}, {}, layers);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  for (const auto& l : fit->report.layers) {
    EXPECT_NEAR(l.forward_after_s / l.forward_s, 1.0, 0.015) << l.id;
    EXPECT_NEAR(l.backward_after_s / l.backward_s, 1.0, 0.015) << l.id;
  }
  auto shipped = core::LoadProfile("a100-megatron-2022");
  ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
  const core::Profile& f = fit->profile;
  EXPECT_NEAR(shipped->gemm_efficiency.at(core::Dtype::kFp16), f.gemm_efficiency.at(core::Dtype::kFp16), 1e-9);
  EXPECT_NEAR(shipped->gemm_half_flops / f.gemm_half_flops, 1.0, 1e-9);
  EXPECT_NEAR(shipped->kernel_overhead_s / f.kernel_overhead_s, 1.0, 1e-9);
  EXPECT_NEAR(shipped->hbm_efficiency, f.hbm_efficiency, 1e-12);
  EXPECT_NEAR(shipped->comm.scale_up, f.comm.scale_up, 1e-9);
  // Today's values (meshplan calibrate published ... -o presets/profiles/a100-megatron-2022.json).
  EXPECT_NEAR(f.gemm_efficiency.at(core::Dtype::kFp16), 0.7535, 0.001);
  EXPECT_NEAR(f.comm.scale_up, 0.7152, 0.001);
  EXPECT_DOUBLE_EQ(f.hbm_efficiency, 1.0);

  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  const ValidationSummary with = ValidateRuns(*runs, *shipped);
  const ValidationSummary without = ValidateRuns(*runs, core::Profile{});
  // The target: median <= 3%, max <= 8% (today 2.9% and 6.5%; defaults 9.4% and 12.6%).
  EXPECT_LE(with.median_abs_error, 0.03);
  EXPECT_LE(with.max_abs_error, 0.08);
  EXPECT_LT(with.median_abs_error, 0.5 * without.median_abs_error);
}

}  // namespace
}  // namespace meshplan::sim
