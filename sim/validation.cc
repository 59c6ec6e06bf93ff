#include "sim/validation.h"

#include <algorithm>
#include <cmath>

#include "sim/step_model.h"

namespace meshplan::sim {

ValidationSummary ValidateRuns(const std::vector<core::PublishedRun>& runs, const core::Profile& profile) {
  ValidationSummary out;
  std::vector<double> abs_errors;
  for (const auto& run : runs) {
    const auto& s = run.scenario;
    const StepEstimate e = EstimateStep(s.model, s.plan, s.gpu, s.cluster, profile);
    ValidationRecord r;
    r.id = run.id;
    r.published = run.published;
    r.assumptions = run.assumptions;
    if (run.metric == core::PublishedMetric::kIterationTimeS) {
      r.metric = "iteration_time_s";
      r.predicted = e.time_s;
    } else {
      // Narayanan 2021 count hardware FLOPs with their Eq. 3 (recompute included).
      r.metric = "hw_tflops_per_gpu";
      r.predicted = e.hardware_flops / e.time_s / static_cast<double>(s.plan.gpus) / 1e12;
    }
    r.error = (r.predicted - r.published) / r.published;
    abs_errors.push_back(std::fabs(r.error));
    out.records.push_back(std::move(r));
  }
  std::sort(abs_errors.begin(), abs_errors.end());
  out.n = abs_errors.size();
  if (out.n == 0) return out;
  const size_t n = out.n;
  out.median_abs_error = n % 2 ? abs_errors[n / 2] : 0.5 * (abs_errors[n / 2 - 1] + abs_errors[n / 2]);
  for (double v : abs_errors) out.mean_abs_error += v;
  out.mean_abs_error /= static_cast<double>(n);
  out.max_abs_error = abs_errors.back();
  return out;
}

}  // namespace meshplan::sim
