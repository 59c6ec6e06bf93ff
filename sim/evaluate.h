// One scenario's prediction, the one path `meshplan report`, `reliability` and `explain` and the
// GUI take from a valid plan to numbers: memory (core::EstimateMemory), the step (EstimateStep),
// the training run (EstimateTraining over the run's tokens, by default 20 per parameter) and, given
// a failure model, its reliability (EstimateReliability with the report's defaults). Pure;
// thread-safe.
#ifndef MESHPLAN_SIM_EVALUATE_H_
#define MESHPLAN_SIM_EVALUATE_H_

#include <optional>

#include "core/failures.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/status.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace meshplan::sim {

// `meshplan report`'s reliability settings (the GUI's too): asynchronous checkpoints at the
// closed-form optimum interval, 200 Monte Carlo trials, seed 1, over `tokens`.
ReliabilityOptions ReportReliabilityOptions(double tokens);

struct EvaluateOptions {
  double tokens = 0;  // tokens the run trains; 0: core::DefaultTrainingTokens (20 per parameter)
  // With a failure model, the run's reliability under `reliability` (its tokens and days left 0:
  // the run's tokens).
  const core::FailureModel* failures = nullptr;
  ReliabilityOptions reliability = ReportReliabilityOptions(0);
};

struct ScenarioEvaluation {
  core::MemoryReport memory;
  StepEstimate step;
  double tokens = 0;            // the run's tokens
  bool default_tokens = false;  // tokens is the 20-per-parameter default
  TrainEstimate train;
  std::optional<core::Result<ReliabilityReport>> reliability;  // set when given a failure model
};

// REQUIRES: core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster) reported no errors.
ScenarioEvaluation EvaluateScenario(const core::Scenario& s, const core::Profile& profile, const EvaluateOptions& o);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_EVALUATE_H_
