// runtime/numerics.h in one process on the cpu backend: the loss at a small initialisation, the
// analytic gradient against central finite differences of the loss, microbatch accumulation,
// determinism, the comparison's arithmetic and the refusal of what the check does not implement.
// The distributed layouts against the reference run under mpirun (run_test.cmake, mpi_verify_*).
#include "runtime/numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/presets.h"
#include "runtime/cpu/cpu_backend.h"

namespace meshplan::runtime {
namespace {

// A GPT small enough for finite differences: every feature tiny.json uses (learned positions,
// layernorm, biases everywhere, tied embeddings, gelu), two layers, two heads.
core::ModelSpec Mini() {
  core::ModelSpec m;
  m.name = "mini";
  m.layers = 2;
  m.hidden = 16;
  m.heads = 2;
  m.kv_heads = 2;
  m.head_dim = 8;
  m.ffn_hidden = 32;
  m.mlp = core::MlpKind::kGelu;
  m.vocab = 32;
  m.max_seq = 16;
  m.tied_embeddings = true;
  m.position = core::PositionKind::kLearned;
  m.norm = core::NormKind::kLayerNorm;
  m.bias = core::BiasKind::kAll;
  return m;
}

core::Scenario Scenario(const core::ModelSpec& m, int64_t micro_batch, int64_t global_batch, int64_t seq) {
  core::Scenario s;
  s.model = m;
  s.plan.gpus = 1;
  s.plan.micro_batch = micro_batch;
  s.plan.global_batch = global_batch;
  s.plan.seq_len = seq;
  s.plan.precision = core::Dtype::kFp32;
  return s;
}

NumericsResult Step(const core::Scenario& s, const NumericsOptions& o) {
  auto be = MakeCpuBackend();
  auto r = RunNumericsStep(*be, s, o, RankGroups{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : NumericsResult{};
}

TEST(NumericsTest, LossAtSmallInitIsLnVocab) {
  // Logits z_v = hf . E_v. The final layernorm's output has ||xhat|| = sqrt(h) (unit variance,
  // up to eps), times gains <= 1 + s plus biases <= s: ||hf|| <= (1 + 2s) sqrt(h). A row of the
  // (tied) embedding has ||E_v|| <= s sqrt(h). So |z_v| <= (1 + 2s) s h, and
  // CE = logsumexp(z) - z_label lies within 2 max|z| of ln V (all logits equal gives exactly
  // ln V). tiny: h = 256, V = 4096, s = 1e-4: |loss - ln 4096| <= 0.0513 (ln 4096 = 8.3178).
  auto m = core::LoadModel("tiny");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  NumericsOptions o;
  o.init_scale = 1e-4f;
  const NumericsResult r = Step(Scenario(*m, 1, 2, 32), o);
  const double s = o.init_scale, h = static_cast<double>(m->hidden);
  EXPECT_NEAR(r.loss, std::log(static_cast<double>(m->vocab)), 2 * (1 + 2 * s) * s * h);
  EXPECT_EQ(r.tokens, 2 * 32);
  // Every parameter of the model has a checksum, and each one got a gradient.
  EXPECT_EQ(r.grads.size(), NumericsParamNames(*m).size());
  for (const GradientChecksum& g : r.grads) EXPECT_GT(g.sum_sq, 0) << g.param;
}

void ExpectGradientsMatchFiniteDifferences(const core::Scenario& s) {
  // For every parameter, take the sampled element with the largest analytic gradient and compare
  // it with (L(w + e) - L(w - e)) / 2e, e = 1e-2. Truncation error is e^2 L'''/6, a relative ~1e-5
  // here; the loss is fp32 math summed in double, so rounding adds ~1e-7 / e = 1e-5 absolute.
  // Measured: at most 1.4e-4 relative over all 36 parameters of Mini(), so 1e-3 relative + 1e-5
  // absolute leaves a margin of ~7, while a wrong factor (a missing 1/N, a transposed GEMM, a
  // dropped term) is off by far more than 0.1%.
  NumericsOptions base;
  base.seed = 7;
  base.init_scale = 0.3f;  // large enough that gradients stand well above the rounding noise
  const std::vector<std::string> names = NumericsParamNames(s.model);
  const NumericsResult first = Step(s, base);
  NumericsOptions probe = base;
  for (const GradientChecksum& c : first.grads) {
    const int64_t numel = c.rows * c.cols, stride = std::max<int64_t>(1, numel / 24);
    for (int64_t i = 0; i < numel; i += stride) probe.probes.push_back({c.param, i});
  }
  const NumericsResult sampled = Step(s, probe);
  ASSERT_EQ(sampled.probe_grads.size(), probe.probes.size());
  // The loss and checksums do not depend on what is probed.
  EXPECT_EQ(sampled.loss, first.loss);

  const float eps = 1e-2f;
  int checked = 0;
  for (const std::string& n : names) {
    size_t best = probe.probes.size();
    for (size_t k = 0; k < probe.probes.size(); ++k)
      if (probe.probes[k].param == n &&
          (best == probe.probes.size() || std::fabs(sampled.probe_grads[k]) > std::fabs(sampled.probe_grads[best])))
        best = k;
    ASSERT_LT(best, probe.probes.size()) << n;  // every parameter sampled
    const double analytic = sampled.probe_grads[best];
    NumericsOptions plus = base, minus = base;
    plus.weight_deltas = {{probe.probes[best], eps}};
    minus.weight_deltas = {{probe.probes[best], -eps}};
    const double fd = (Step(s, plus).loss - Step(s, minus).loss) / (2.0 * eps);
    if (n.ends_with("attn.k.bias")) {
      // Zero in exact arithmetic: a key bias adds q.b_k to every score of a query's row, and
      // softmax is shift-invariant. Both gradients are rounding noise.
      EXPECT_LT(std::fabs(analytic), 1e-6) << n;
      EXPECT_LT(std::fabs(fd), 2e-4) << n;
    } else {
      EXPECT_GT(std::fabs(analytic), 1e-3) << n << ": sampled gradients too small for a finite difference";
      EXPECT_NEAR(fd, analytic, 1e-3 * std::fabs(analytic) + 1e-5)
          << n << "[" << probe.probes[best].index << "]: finite difference " << fd << ", analytic " << analytic;
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(names.size()));
}

TEST(NumericsTest, GradientMatchesCentralFiniteDifferences) {
  // Tied embeddings, learned positions, layernorm, every bias (tiny.json's features), one
  // sequence per microbatch.
  ExpectGradientsMatchFiniteDifferences(Scenario(Mini(), 1, 2, 8));
}

TEST(NumericsTest, GradientMatchesCentralFiniteDifferencesUntiedRmsNorm) {
  // The other branches: an untied head, RMSNorm, no position embedding, q/k/v biases only, and
  // two sequences per microbatch (the head-layout permutations with b > 1).
  core::ModelSpec m = Mini();
  m.tied_embeddings = false;
  m.norm = core::NormKind::kRmsNorm;
  m.position = core::PositionKind::kNone;
  m.bias = core::BiasKind::kQkv;
  const core::Scenario s = Scenario(m, 2, 4, 8);
  const std::vector<std::string> names = NumericsParamNames(m);
  EXPECT_NE(std::find(names.begin(), names.end(), "head.weight"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "embedding.position"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "layers.0.mlp.up.bias"), names.end());
  ExpectGradientsMatchFiniteDifferences(s);
}

TEST(NumericsTest, PositionsPastTheSequenceGetNoGradient) {
  // seq_len 8 of max_seq 16: rows 8..15 of the position table are never looked up, so their
  // gradient is exactly zero; row 0 is used by every sequence.
  const core::Scenario s = Scenario(Mini(), 1, 2, 8);
  NumericsOptions o;
  o.init_scale = 0.3f;
  const int64_t h = s.model.hidden;
  o.probes = {{"embedding.position", 0}, {"embedding.position", 8 * h}, {"embedding.position", 16 * h - 1}};
  const NumericsResult r = Step(s, o);
  EXPECT_NE(r.probe_grads[0], 0.0);
  EXPECT_EQ(r.probe_grads[1], 0.0);
  EXPECT_EQ(r.probe_grads[2], 0.0);
}

TEST(NumericsTest, MicrobatchSplitDoesNotChangeTheStep) {
  // Four sequences as one microbatch of 4 or four microbatches of 1: the same tokens, the same
  // mean loss, the same gradients up to fp32 summation order (the tolerance's argument).
  NumericsOptions o;
  o.init_scale = 0.3f;
  const NumericsResult one = Step(Scenario(Mini(), 4, 4, 8), o);
  const NumericsResult four = Step(Scenario(Mini(), 1, 4, 8), o);
  EXPECT_EQ(one.microbatches, 1);
  EXPECT_EQ(four.microbatches, 4);
  const NumericsComparison c = CompareNumerics(four, one, kNumericsTolerance);
  EXPECT_TRUE(c.ok) << c.max_rel_diff << " at " << c.worst;
  EXPECT_LT(c.max_rel_diff, 1e-5);
}

TEST(NumericsTest, SameSeedSameStepOtherSeedOtherStep) {
  NumericsOptions o;
  o.init_scale = 0.3f;
  const core::Scenario s = Scenario(Mini(), 1, 2, 8);
  const NumericsResult a = Step(s, o), b = Step(s, o);
  EXPECT_EQ(a.loss, b.loss);
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) EXPECT_EQ(a.grads[i].weighted, b.grads[i].weighted);
  o.seed = 2;
  const NumericsResult c = Step(s, o);
  EXPECT_NE(a.loss, c.loss);
  EXPECT_FALSE(CompareNumerics(c, a, kNumericsTolerance).ok);
}

TEST(NumericsTest, ComparisonScalesEachChecksumByItsErrorBound) {
  // Two parameters of 4 elements: "w" with a real gradient and "kb" holding rounding noise (as an
  // attention key bias does). The model's RMS gradient is sqrt((1 + 1e-18) / 8) = 0.35355, so
  // the scale floors are 4 x 0.35355 = 1.41421 (sums) and 4 x 0.125 = 0.5 (sum of squares):
  // "w" keeps its own abs_sum 2 and sum_sq 1, "kb" gets the floors.
  NumericsResult ref;
  ref.loss = 2.0;
  ref.grads = {{"w", 1, 4, "replicated", /*sum=*/1.0, /*abs_sum=*/2.0, /*sum_sq=*/1.0, /*weighted=*/0.5},
               {"kb", 1, 4, "tp_cols", 1e-9, 2e-9, 1e-18, 1e-9}};
  NumericsResult run = ref;
  EXPECT_TRUE(CompareNumerics(run, ref, 1e-4).ok);
  EXPECT_EQ(CompareNumerics(run, ref, 1e-4).max_rel_diff, 0.0);
  // w's sum off by 1e-4, scaled by abs_sum = 2: 5e-5 <= 1e-4.
  run.grads[0].sum = 1.0001;
  NumericsComparison c = CompareNumerics(run, ref, 1e-4);
  EXPECT_TRUE(c.ok);
  EXPECT_NEAR(c.max_rel_diff, 5e-5, 1e-12);
  // The noise tripled: |3e-9 - 1e-9| / 1.41421 = 1.4e-9, not 2 (relative to itself).
  run.grads[1].sum = 3e-9;
  c = CompareNumerics(run, ref, 1e-4);
  EXPECT_TRUE(c.ok);
  EXPECT_NEAR(c.params[1].rel_diff, 2e-9 / std::sqrt(2.0), 1e-15);
  // w's sum_sq off by 2e-4, scaled by itself (1): 2e-4 > 1e-4.
  run.grads[0].sum_sq = 1.0002;
  c = CompareNumerics(run, ref, 1e-4);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.worst, "w");
  EXPECT_NEAR(c.max_rel_diff, 2e-4, 1e-12);
  // The loss: 2 vs 2.001 is 5e-4.
  run = ref;
  run.loss = 2.001;
  c = CompareNumerics(run, ref, 1e-4);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.worst, "loss");
  // A NaN never passes; different parameter lists never pass.
  run = ref;
  run.grads[0].weighted = std::nan("");
  EXPECT_FALSE(CompareNumerics(run, ref, 1e-4).ok);
  run = ref;
  run.grads[0].param = "other";
  EXPECT_FALSE(CompareNumerics(run, ref, 1e-4).ok);
}

TEST(NumericsTest, RejectsWhatItDoesNotImplementNamingTheField) {
  const core::Scenario s = Scenario(Mini(), 1, 2, 8);
  auto expect = [](core::ModelSpec m, core::PlanSpec p, const std::string& field) {
    const core::Status st = CheckNumericsSupport(m, p);
    EXPECT_EQ(st.code(), core::Status::Code::kInvalidArgument) << field;
    EXPECT_NE(st.message().find(field), std::string::npos) << st.message();
  };
  EXPECT_TRUE(CheckNumericsSupport(s.model, s.plan).ok());
  core::ModelSpec m = s.model;
  m.position = core::PositionKind::kRope;
  expect(m, s.plan, "model.position");
  m = s.model;
  m.mlp = core::MlpKind::kSwiglu;
  expect(m, s.plan, "model.mlp");
  m = s.model;
  m.kv_heads = 1;
  expect(m, s.plan, "model.kv_heads");
  m = s.model;
  m.moe = core::MoeSpec{.experts = 4, .top_k = 2, .expert_ffn_hidden = 32};
  expect(m, s.plan, "model.moe");
  m = s.model;
  m.dropout = true;
  expect(m, s.plan, "model.dropout");
  m = s.model;
  m.mtp_layers = 1;
  expect(m, s.plan, "model.mtp_layers");
  core::PlanSpec p = s.plan;
  p.cp = 2;
  p.gpus = 2;
  expect(s.model, p, "plan.cp");
  p = s.plan;
  p.tp = 3;
  p.gpus = 3;
  expect(s.model, p, "model.heads");
  p = s.plan;
  p.pp = 2;
  p.vpp = 2;
  p.gpus = 2;
  expect(s.model, p, "plan.vpp");
  p = s.plan;
  p.seq_len = 17;
  expect(s.model, p, "plan.seq_len");
  // A probe naming no parameter is an error, not a silent zero.
  NumericsOptions o;
  o.probes = {{"layers.9.attn.q.weight", 0}};
  auto be = MakeCpuBackend();
  auto r = RunNumericsStep(*be, s, o, RankGroups{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("layers.9.attn.q.weight"), std::string::npos);
}

TEST(NumericsTest, ALayoutNeedsRealGroupsAndTheReferenceIsOneRank) {
  core::Scenario s = Scenario(Mini(), 1, 4, 8);
  s.plan.tp = 2;
  s.plan.pp = 2;
  s.plan.gpus = 4;
  auto be = MakeCpuBackend();
  auto r = RunNumericsStep(*be, s, NumericsOptions{}, RankGroups{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mpirun"), std::string::npos) << r.status().message();
  const core::PlanSpec ref = ReferencePlan(s.plan);
  EXPECT_EQ(ref.gpus, 1);
  EXPECT_EQ(ref.tp * ref.pp * ref.dp, 1);
  EXPECT_EQ(ref.global_batch, 4);
  EXPECT_EQ(ref.Microbatches(), 4);  // global batch 4 / micro batch 1, one pipeline
  s.plan = ref;
  EXPECT_TRUE(RunNumericsStep(*be, s, NumericsOptions{}, RankGroups{}).ok());
}

TEST(NumericsTest, OutputsCarryTheLossAndTheVerdict) {
  NumericsOptions o;
  o.init_scale = 0.3f;
  const NumericsResult r = Step(Scenario(Mini(), 1, 2, 8), o);
  const NumericsComparison c = CompareNumerics(r, r, kNumericsTolerance);
  const std::string table = NumericsTable(r, &r, &c), json = NumericsJson(r, &r, &c);
  EXPECT_NE(table.find("# loss "), std::string::npos);
  EXPECT_NE(table.find("layers.1.mlp.down.bias"), std::string::npos);
  EXPECT_NE(table.find(": OK"), std::string::npos);
  EXPECT_NE(json.find("\"schema\": \"meshplan.verify/1\""), std::string::npos);
  EXPECT_NE(json.find("\"ok\": true"), std::string::npos);
}

}  // namespace
}  // namespace meshplan::runtime
