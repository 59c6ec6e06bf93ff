// Built-in presets (presets/<kind>/<name>.json, compiled into the binary) and loading of
// user files. A name with a '/' or ending in ".json" is read from disk; anything else is a
// preset name. Loading parses and validates; errors name the file and the field.
#ifndef MESHPLAN_CORE_PRESETS_H_
#define MESHPLAN_CORE_PRESETS_H_

#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/spec_json.h"
#include "core/specs.h"

namespace meshplan::core {

namespace internal {
struct EmbeddedPreset {
  const char* kind;  // "models", "gpus", "clusters", "failures", ...
  const char* name;  // file name without .json
  const char* json;
};
extern const EmbeddedPreset kEmbeddedPresets[];
extern const int kEmbeddedPresetCount;
}  // namespace internal

// Names of the built-in presets of one kind ("models", "gpus", "clusters"), sorted.
std::vector<std::string> PresetNames(const std::string& kind);
// The raw JSON text of a built-in preset; NotFound lists the valid names.
Result<std::string> PresetText(const std::string& kind, const std::string& name);

// A model file may be meshplan's format or a Hugging Face config.json (recognised by its
// "model_type" key; see hf_config.h), named after the file.
Result<ModelSpec> LoadModel(const std::string& name_or_path);
Result<GpuSpec> LoadGpu(const std::string& name_or_path);
Result<ClusterSpec> LoadCluster(const std::string& name_or_path);

// Reads a whole file. IoError names the path.
Result<std::string> ReadTextFile(const std::string& path);
// Writes `text` to `path` through `path`.tmp and a rename, so a failed write never leaves a
// truncated file where the old one was (and no .tmp behind). IoError names the file and the step.
Status WriteTextFileAtomically(const std::string& path, const std::string& text);
// True if `ref` should be read from disk rather than looked up as a preset.
bool LooksLikePath(const std::string& ref);

// The full input of a report: what a plan file and command line resolve to.
struct Scenario {
  ModelSpec model;
  GpuSpec gpu;
  ClusterSpec cluster;
  PlanSpec plan;
};

// Where one spec of a scenario comes from: an embedded object, or a reference (preset name or
// file path). `origin` names the field or flag in messages ("plan.model", "--model");
// `required` is the message when nothing was given (empty: may be inferred, see ResolveSpecs).
template <typename Spec>
struct SpecSource {
  std::optional<Spec> embedded;
  std::string ref;
  std::string origin;
  std::string required;
};
struct ScenarioSources {
  SpecSource<ModelSpec> model;
  SpecSource<GpuSpec> gpu;
  SpecSource<ClusterSpec> cluster;
};
// Loads the model, GPU and cluster. A missing cluster is the built-in cluster whose nodes carry
// the GPU; a missing GPU is the cluster's. Every problem goes to `out`, naming its origin;
// `notes` records what was inferred. False when there is an error. Leaves s->plan alone.
bool ResolveSpecs(const ScenarioSources& src, Scenario* s, Diagnostics* out, std::vector<std::string>* notes);

// Resolves a plan file's references (preset names or embedded specs). NotFound/InvalidArgument
// name the missing piece. Does not run ValidatePlan.
Result<Scenario> ResolvePlanFile(const PlanFile& file);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_PRESETS_H_
