// EvaluateScenario, the one evaluation behind report, reliability, explain and the GUI: its parts
// are exactly the estimators' on the same scenario, with the 20-tokens-per-parameter default and
// the report's reliability settings.
#include "sim/evaluate.h"

#include <gtest/gtest.h>

#include "core/diagnostics.h"
#include "core/validate.h"

namespace meshplan::sim {
namespace {

// Llama 3 8B on 64 H100s: TP 2, PP 2, DP 16, 8k sequences, 256 of them per step.
core::Scenario Llama8B() {
  core::Scenario s;
  s.model = *core::LoadModel("llama3-8b");
  s.gpu = *core::LoadGpu("h100-sxm");
  s.cluster = *core::LoadCluster("dgx-h100");
  s.plan.gpus = 64;
  s.plan.tp = 2;
  s.plan.pp = 2;
  s.plan.dp = 16;
  s.plan.sequence_parallel = true;
  s.plan.seq_len = 8192;
  s.plan.global_batch = 256;
  return s;
}

TEST(EvaluateTest, ThePartsAreTheEstimatorsOnTheSameScenario) {
  const core::Scenario s = Llama8B();
  core::Diagnostics d;
  core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << (d.all().empty() ? "" : d.all().front().ToString());
  const core::Profile profile;
  const ScenarioEvaluation e = EvaluateScenario(s, profile, {});
  const core::MemoryReport mem = core::EstimateMemory(s.model, s.plan, s.gpu, profile.memory);
  const StepEstimate step = EstimateStep(s.model, s.plan, s.gpu, s.cluster, profile);
  EXPECT_EQ(e.memory.per_gpu_bytes, mem.per_gpu_bytes);
  EXPECT_DOUBLE_EQ(e.step.time_s, step.time_s);
  // No tokens given: 20 per parameter (8.03e9 parameters: 160.6e9 tokens).
  EXPECT_TRUE(e.default_tokens);
  EXPECT_DOUBLE_EQ(e.tokens, 20.0 * static_cast<double>(mem.params.total));
  EXPECT_NEAR(e.tokens, 160.6e9, 0.1e9);
  EXPECT_DOUBLE_EQ(e.train.days, EstimateTraining(step, s.plan, s.gpu, s.cluster, e.tokens).days);
  EXPECT_FALSE(e.reliability.has_value());  // no failure model, no reliability

  // Given tokens and a failure model: the run's tokens, and the report's reliability settings.
  const core::FailureModel f = *core::LoadFailureModel("llama3-405b");
  EvaluateOptions o;
  o.tokens = 1e12;
  o.failures = &f;
  const ScenarioEvaluation g = EvaluateScenario(s, profile, o);
  EXPECT_FALSE(g.default_tokens);
  EXPECT_DOUBLE_EQ(g.tokens, 1e12);
  ASSERT_TRUE(g.reliability.has_value());
  ASSERT_TRUE(g.reliability->ok()) << g.reliability->status().ToString();
  const auto direct = EstimateReliability(s, mem, step, f, ReportReliabilityOptions(1e12));
  ASSERT_TRUE(direct.ok());
  EXPECT_DOUBLE_EQ(g.reliability->value().expected_days, direct->expected_days);
  EXPECT_DOUBLE_EQ(g.reliability->value().interval_s, direct->optimal_s);  // the optimum interval
  EXPECT_EQ(ReportReliabilityOptions(1e12).trials, 200);
}

}  // namespace
}  // namespace meshplan::sim
