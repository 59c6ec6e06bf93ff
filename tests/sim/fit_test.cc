#include "sim/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/presets.h"
#include "core/profile.h"

namespace meshplan::sim {
namespace {

using core::Dtype;
using core::OpKind;
using core::Pass;

core::GpuSpec H100() {
  auto g = core::LoadGpu("h100-sxm");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

// A profile unlike the defaults, to be recovered.
core::Profile Truth() {
  core::Profile t;
  t.gemm_efficiency[Dtype::kBf16] = 0.72;
  t.gemm_efficiency[Dtype::kFp8] = 0.55;
  // A measured profile: it, not the GPU preset's figures, times GEMMs and attention.
  t.gemm_efficiency_measured = true;
  t.attention_efficiency_measured = true;
  t.gemm_half_flops = 2.5e9;
  t.kernel_overhead_s = 6e-6;
  t.attention_fwd_efficiency = 0.52;
  t.attention_bwd_efficiency = 0.41;
  t.memory_op_efficiency = {{"attn_norm.forward", 0.62},
                            {"mlp_activation.forward", 0.45},
                            {"mlp_activation.backward_input", 0.38},
                            {"optimizer_step.step", 0.71}};
  return t;
}

ComputeSample Gemm(int64_t m, int64_t n, int64_t k, Dtype d) {
  ComputeSample s;
  s.name = "gemm";
  s.op.kind = OpKind::kGemm;
  s.op.m = m, s.op.n = n, s.op.k = k, s.op.dtype = d;
  s.calls = 3;
  s.source = "synthetic";
  return s;
}

ComputeSample Attention(int64_t seq, Pass pass) {
  ComputeSample s;
  s.name = "flash_attention";
  s.op.kind = OpKind::kAttention;
  s.op.pass = pass;
  s.op.attn_batch = 2, s.op.heads = 16, s.op.seq_q = seq, s.op.seq_kv = seq, s.op.head_dim_qk = 128,
  s.op.head_dim_v = 128;
  s.calls = 4;
  return s;
}

ComputeSample Memory(const char* name, Pass pass, int64_t bytes) {
  ComputeSample s;
  s.name = name;
  s.op.pass = pass;
  s.op.kind = std::string(name) == "optimizer_step" ? OpKind::kOptimizer : OpKind::kMemoryBound;
  s.op.bytes = bytes;
  s.calls = 2;
  return s;
}

// Samples spanning small (overhead- and F_half-dominated) to large (efficiency-dominated) work,
// timed with the true profile and 1% multiplicative Gaussian noise (fixed seed).
std::vector<ComputeSample> Synthetic(const core::GpuSpec& g, double noise) {
  std::vector<ComputeSample> xs;
  for (Dtype d : {Dtype::kBf16, Dtype::kFp8})
    for (int64_t e : {64, 128, 256, 512, 1024, 2048, 4096, 8192}) {
      xs.push_back(Gemm(e, e, e, d));
      xs.push_back(Gemm(e, 4 * e, e, d));
    }
  for (int64_t seq : {256, 512, 1024, 2048, 4096, 8192})
    for (Pass p : {Pass::kForward, Pass::kBackwardInput}) xs.push_back(Attention(seq, p));
  for (auto [name, pass] :
       {std::pair{"attn_norm", Pass::kForward}, std::pair{"mlp_activation", Pass::kForward},
        std::pair{"mlp_activation", Pass::kBackwardInput}, std::pair{"optimizer_step", Pass::kStep}})
    for (int64_t b = 1 << 14; b <= (int64_t{1} << 30); b *= 4) xs.push_back(Memory(name, pass, b));
  const core::Profile truth = Truth();
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n01(0, 1);
  for (auto& s : xs) s.time_s = PredictSample(s, g, truth) * (1 + noise * n01(rng));
  return xs;
}

double RelErr(double got, double want) { return std::abs(got - want) / want; }

TEST(FitProfile, RecoversAKnownProfileFromNoisySamplesWithin2Percent) {
  const core::GpuSpec g = H100();
  auto fit = FitProfile(Synthetic(g, 0.01), {}, g, core::Profile{});
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  const core::Profile& p = fit->profile;
  const core::Profile t = Truth();
  EXPECT_TRUE(fit->report.converged);
  EXPECT_LT(RelErr(p.gemm_efficiency.at(Dtype::kBf16), 0.72), 0.02);
  EXPECT_LT(RelErr(p.gemm_efficiency.at(Dtype::kFp8), 0.55), 0.02);
  EXPECT_LT(RelErr(p.gemm_half_flops, 2.5e9), 0.02);
  EXPECT_LT(RelErr(p.kernel_overhead_s, 6e-6), 0.02);
  EXPECT_LT(RelErr(p.attention_fwd_efficiency, 0.52), 0.02);
  EXPECT_LT(RelErr(p.attention_bwd_efficiency, 0.41), 0.02);
  for (const auto& [name, e] : t.memory_op_efficiency)
    EXPECT_LT(RelErr(p.memory_op_efficiency.at(name), e), 0.02) << name;
  // Untouched: no fp16 GEMM samples, so its default stays.
  EXPECT_DOUBLE_EQ(p.gemm_efficiency.at(Dtype::kFp16), 0.80);
  // Noise of 1% leaves a median residual near 0.67% (the median of |N(0, 1%)|).
  EXPECT_LT(fit->report.median_abs_rel_error_after, 0.012);
  EXPECT_GT(fit->report.median_abs_rel_error_before, 0.05);
  EXPECT_GT(fit->report.r2_log, 0.999);
}

TEST(FitProfile, NoiseFreeSamplesAreFittedExactly) {
  const core::GpuSpec g = H100();
  auto fit = FitProfile(Synthetic(g, 0.0), {}, g, core::Profile{});
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_LT(fit->report.max_abs_rel_error_after, 1e-4);
  EXPECT_LT(RelErr(fit->profile.gemm_half_flops, 2.5e9), 1e-3);
}

TEST(FitProfile, CollectivesAlphaBetaFromRawTimes) {
  // t = 12 us + S / 150 GB/s, exactly, on 8 ranks inside a domain.
  std::vector<CollectiveSample> xs;
  for (int64_t s = 1024; s <= (int64_t{1} << 30); s *= 4)
    xs.push_back({core::CollectiveKind::kAllReduce, false, 8, s, 12e-6 + static_cast<double>(s) / 150e9});
  auto fit = FitProfile({}, xs, H100(), core::Profile{});
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  ASSERT_EQ(fit->profile.collectives.size(), 1u);
  const core::CollectiveFit& f = fit->profile.collectives[0];
  EXPECT_NEAR(f.alpha_s, 12e-6, 1e-9);
  EXPECT_NEAR(1 / f.beta_s_per_byte, 150e9, 1e6);
  EXPECT_NEAR(f.r2, 1.0, 1e-9);
  EXPECT_EQ(f.min_bytes, 1024);
  EXPECT_EQ(f.max_bytes, int64_t{1} << 30);
  // The step model now prices an 8-rank all-reduce of 1 GiB with it: 12 us + 2^30 / 150e9 s.
  core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  core::GroupSpan span{8, 8, 1};
  const core::CollectiveCost cost =
      core::ProfiledCollectiveTime(fit->profile, core::CollectiveKind::kAllReduce, int64_t{1} << 30, span, c);
  EXPECT_STREQ(cost.algorithm, "fitted");
  EXPECT_NEAR(cost.time_s, 12e-6 + 1073741824 / 150e9, 1e-9);
  // A 4-rank group has no fit: the analytic model answers.
  EXPECT_STRNE(
      core::ProfiledCollectiveTime(fit->profile, core::CollectiveKind::kAllReduce, 1 << 20, {4, 4, 1}, c).algorithm,
      "fitted");
}

TEST(FitProfile, OneSizeCannotSeparateAlphaFromBeta) {
  std::vector<CollectiveSample> xs = {{core::CollectiveKind::kAllGather, false, 2, 4096, 1e-5},
                                      {core::CollectiveKind::kAllGather, false, 2, 4096, 1.1e-5}};
  auto fit = FitProfile({}, xs, H100(), core::Profile{});
  ASSERT_TRUE(fit.ok());
  EXPECT_TRUE(fit->profile.collectives.empty());
  ASSERT_EQ(fit->report.kept.size(), 1u);
  EXPECT_NE(fit->report.kept[0].find("one size only"), std::string::npos);
}

TEST(FitProfile, RejectsBadSamplesNamingThem) {
  const core::GpuSpec g = H100();
  auto none = FitProfile({}, {}, g, core::Profile{});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no samples"), std::string::npos);
  ComputeSample s = Gemm(128, 128, 128, Dtype::kBf16);
  s.time_s = 0;
  auto zero = FitProfile({s}, {}, g, core::Profile{});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("time_s must be > 0"), std::string::npos);
  s.time_s = 1e-5;
  s.op.dtype = Dtype::kInt8;
  core::GpuSpec no_int8 = g;
  no_int8.peak_flops_per_s.erase(Dtype::kInt8);
  auto peak = FitProfile({s}, {}, no_int8, core::Profile{});
  ASSERT_FALSE(peak.ok());
  EXPECT_NE(peak.status().message().find("has no peak for int8"), std::string::npos);
}

TEST(FitProfile, AnEfficiencyAboveOneIsAnErrorUnlessTheDeviceIsRescaled) {
  // Samples twice as fast as the peak allows: the GPU spec is wrong. (Large GEMMs, so the
  // overhead and F_half, which three samples cannot pin down, matter little.)
  const core::GpuSpec g = H100();
  std::vector<ComputeSample> xs;
  for (int64_t e : {8192, 16384, 32768}) {
    ComputeSample s = Gemm(e, e, e, Dtype::kBf16);
    s.time_s = 2.0 * e * e * e * s.calls / (2 * g.peak_flops_per_s.at(Dtype::kBf16));
    xs.push_back(s);
  }
  auto strict = FitProfile(xs, {}, g, core::Profile{});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("above 1"), std::string::npos);
  FitOptions o;
  o.rescale_device = true;
  auto rescaled = FitProfile(xs, {}, g, core::Profile{}, o);
  ASSERT_TRUE(rescaled.ok()) << rescaled.status().ToString();
  ASSERT_TRUE(rescaled->profile.device.has_value());
  EXPECT_LE(rescaled->profile.gemm_efficiency.at(Dtype::kBf16), 1.0);
  // Predictions are what the fit found, on the rescaled device.
  for (const auto& s : xs)
    EXPECT_LT(RelErr(PredictSample(s, *rescaled->profile.device, rescaled->profile), s.time_s), 0.02);
  // The profile with its device round-trips through JSON.
  auto back = core::ParseProfileJson(core::ProfileToJson(rescaled->profile));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back->device, *rescaled->profile.device);
}

}  // namespace
}  // namespace meshplan::sim
