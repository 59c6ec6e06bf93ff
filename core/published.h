// Published training runs (the format of shared/validation/published.json, copied to
// tests/data/validation/) turned into scenarios meshplan can predict, with the measured number
// to compare against. The mapping from a record to a plan is fixed and documented here, the same
// for every record (docs/calibration.md); nothing is fitted per row.
#ifndef MESHPLAN_CORE_PUBLISHED_H_
#define MESHPLAN_CORE_PUBLISHED_H_

#include <string>
#include <vector>

#include "core/presets.h"
#include "core/status.h"

namespace meshplan::core {

enum class PublishedMetric {
  kIterationTimeS,      // seconds per iteration (Korthikanti 2022 Table 5)
  kHardwareTflopsPerGpu // TFLOP/s per GPU counted with Narayanan 2021 Eq. 3 (recompute included)
};

struct PublishedRun {
  std::string id;
  std::string source;  // paper, table, row
  Scenario scenario;
  PublishedMetric metric = PublishedMetric::kIterationTimeS;
  double published = 0;
  std::vector<std::string> assumptions;  // what the record does not print and we assumed
};

// Every record that names a model (layers, hidden, heads), a GPU we have a preset for, a full
// plan (tp, pp, dp) and a measured iteration time or per-GPU throughput. Records without them are
// skipped (`skipped` lists their ids with the reason).
Result<std::vector<PublishedRun>> LoadPublishedRuns(const std::string& json_text, std::vector<std::string>* skipped);

// A published per-layer timing (Korthikanti 2022 Table 4: one transformer layer's forward and
// backward in ms), mapped to a scenario by the same rule as the runs; the model's `layers` is what
// the record prints (1) and only its dense layer is meant.
struct PublishedLayerTiming {
  std::string id;
  std::string source;
  Scenario scenario;
  double forward_s = 0, backward_s = 0;
  std::vector<std::string> assumptions;
};
// Every record with measured.other.forward_ms and backward_ms that maps to a scenario.
Result<std::vector<PublishedLayerTiming>> LoadPublishedLayerTimings(const std::string& json_text);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_PUBLISHED_H_
