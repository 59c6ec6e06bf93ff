// JSON for the specs: parse with every problem reported (field path + rule), and write back so
// that Parse(Write(x)) == x. The JSON keys equal the spec field names in core/specs.h; enums use
// their Name() spellings; byte sizes take an integer or a unit string ("80GiB", "141GB");
// bandwidths an number of bytes/s or a unit string ("400Gb/s", "450GB/s").
// Unknown keys are errors (a typo must not silently fall back to a default).
// nlohmann/json stays inside the .cc files.
#ifndef MESHPLAN_CORE_SPEC_JSON_H_
#define MESHPLAN_CORE_SPEC_JSON_H_

#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/specs.h"

namespace meshplan::core {

// Each parser checks JSON syntax and types, then runs the spec's own validation (validate.h).
// `prefix` starts every field path ("model", or "plan.model" when embedded in a plan file).
Result<ModelSpec> ParseModelJson(const std::string& text, const std::string& prefix = "model");
Result<GpuSpec> ParseGpuJson(const std::string& text, const std::string& prefix = "gpu");
Result<ClusterSpec> ParseClusterJson(const std::string& text, const std::string& prefix = "cluster");

// Of `known`, the key nearest to an unknown `key` (edit distance at most 2), for a "did you mean"
// after it; empty when none is that near. Every parser of a user's file that refuses unknown keys
// uses it (these specs, core/stack.cc).
std::string NearestKnownKey(const std::string& key, const std::vector<std::string>& known);

// Pretty JSON (2-space indent, keys in spec order), ending in a newline.
std::string ModelToJson(const ModelSpec& m);
std::string GpuToJson(const GpuSpec& g);
std::string ClusterToJson(const ClusterSpec& c);

// A plan file: the plan plus, optionally, the model, GPU and cluster it is for. Each of those may
// be a preset name (a string) or a whole embedded object.
struct PlanFile {
  PlanSpec plan;
  std::optional<std::string> model_name, gpu_name, cluster_name;  // references to presets
  std::optional<ModelSpec> model;                                 // embedded specs
  std::optional<GpuSpec> gpu;
  std::optional<ClusterSpec> cluster;
};
// Parses the plan's fields (types, ranges, enum names); the cross-checks against a model and
// cluster run later in ValidatePlan (validate.h), once those are resolved.
Result<PlanFile> ParsePlanFileJson(const std::string& text);
std::string PlanFileToJson(const PlanFile& file);
// The plan alone as a JSON object (every field, the names a plan file uses): the one writer of a
// plan that every report, search, explain and reliability output embeds.
std::string PlanToJson(const PlanSpec& p);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_SPEC_JSON_H_
