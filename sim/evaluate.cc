#include "sim/evaluate.h"

#include "core/defaults.h"

namespace meshplan::sim {

ReliabilityOptions ReportReliabilityOptions(double tokens) {
  ReliabilityOptions ro;
  ro.mode = core::CheckpointMode::kAsync;
  ro.interval_s = 0;  // the optimum
  ro.tokens = tokens;
  ro.trials = 200;
  ro.seed = 1;
  return ro;
}

ScenarioEvaluation EvaluateScenario(const core::Scenario& s, const core::Profile& profile, const EvaluateOptions& o) {
  ScenarioEvaluation e;
  e.memory = core::EstimateMemory(s.model, s.plan, s.gpu, profile.memory);
  e.step = EstimateStep(s.model, s.plan, s.gpu, s.cluster, profile);
  e.default_tokens = !(o.tokens > 0);
  e.tokens = e.default_tokens ? core::DefaultTrainingTokens(e.memory.params.total) : o.tokens;
  e.train = EstimateTraining(e.step, s.plan, s.gpu, s.cluster, e.tokens);
  if (o.failures != nullptr) {
    ReliabilityOptions ro = o.reliability;
    if (!(ro.tokens > 0) && !(ro.days > 0)) ro.tokens = e.tokens;
    e.reliability = EstimateReliability(s, e.memory, e.step, *o.failures, ro);
  }
  return e;
}

}  // namespace meshplan::sim
