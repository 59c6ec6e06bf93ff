// Predicting published runs: the error of the step model on each record and a summary.
// Pure; thread-safe.
#ifndef MESHPLAN_SIM_VALIDATION_H_
#define MESHPLAN_SIM_VALIDATION_H_

#include <string>
#include <vector>

#include "core/profile.h"
#include "core/published.h"

namespace meshplan::sim {

struct ValidationRecord {
  std::string id;
  const char* metric = "";  // "iteration_time_s" or "hw_tflops_per_gpu"
  double published = 0, predicted = 0;
  double error = 0;         // (predicted - published) / published
  std::vector<std::string> assumptions;
};
struct ValidationSummary {
  std::vector<ValidationRecord> records;
  size_t n = 0;
  double median_abs_error = 0, mean_abs_error = 0, max_abs_error = 0;
};

ValidationSummary ValidateRuns(const std::vector<core::PublishedRun>& runs, const core::Profile& profile);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_VALIDATION_H_
