// `meshplan report --compare measurements.json`: what meshplan-run measured, side by side with
// what the simulator predicts for the same ops and the same step. Formatting only: predictions
// come from sim::ComputeOpTime, core::CollectiveTime and sim::EstimateStep.
#ifndef MESHPLAN_CLI_COMPARE_H_
#define MESHPLAN_CLI_COMPARE_H_

#include <string>

#include "core/measurement.h"
#include "core/presets.h"
#include "core/profile.h"
#include "sim/step_model.h"

namespace meshplan::cli {

std::string CompareTable(const core::Scenario& s, const core::Measurement& m, const sim::StepEstimate& e,
                         const core::Profile& profile);
std::string CompareJson(const core::Scenario& s, const core::Measurement& m, const sim::StepEstimate& e,
                        const core::Profile& profile);

}  // namespace meshplan::cli

#endif  // MESHPLAN_CLI_COMPARE_H_
