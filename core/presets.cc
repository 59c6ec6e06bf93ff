#include "core/presets.h"

#include "core/hf_config.h"
#include "core/validate.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace meshplan::core {

std::vector<std::string> PresetNames(const std::string& kind) {
  std::vector<std::string> names;
  for (int i = 0; i < internal::kEmbeddedPresetCount; ++i)
    if (kind == internal::kEmbeddedPresets[i].kind) names.emplace_back(internal::kEmbeddedPresets[i].name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> PresetText(const std::string& kind, const std::string& name) {
  for (int i = 0; i < internal::kEmbeddedPresetCount; ++i) {
    const auto& p = internal::kEmbeddedPresets[i];
    if (kind == p.kind && name == p.name) return std::string(p.json);
  }
  std::string list;
  for (const auto& n : PresetNames(kind)) list += (list.empty() ? "" : ", ") + n;
  std::string singular = kind.empty() ? kind : kind.substr(0, kind.size() - 1);
  return Status::NotFound("no " + singular + " preset named '" + name + "' (built in: " + list +
                          "; or give a path to a .json file)");
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  return ss.str();
}

bool LooksLikePath(const std::string& ref) {
  return ref.find('/') != std::string::npos ||
         (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0);
}

namespace {

// Loads a preset by name or a file by path, and parses it with `parse`. Errors from a file are
// prefixed with its path so a user with several files knows which one is wrong.
template <typename Spec, typename ParseFn>
Result<Spec> Load(const std::string& kind, const std::string& ref, const std::string& prefix,
                  ParseFn parse) {
  if (LooksLikePath(ref)) {
    Result<std::string> text = ReadTextFile(ref);
    if (!text.ok()) return text.status();
    Result<Spec> spec = parse(*text, prefix);
    if (!spec.ok()) return Status::InvalidArgument(ref + ":\n" + spec.status().message());
    return spec;
  }
  Result<std::string> text = PresetText(kind, ref);
  if (!text.ok()) return text.status();
  Result<Spec> spec = parse(*text, prefix);
  if (!spec.ok())
    return Status::Internal("built-in preset " + kind + "/" + ref + " is invalid:\n" + spec.status().message());
  return spec;
}

}  // namespace

// A Hugging Face config.json is recognised by its "model_type" key and imported; anything else is
// meshplan's own model format.
Result<ModelSpec> ParseModelOrHfConfig(const std::string& text, const std::string& prefix,
                                       const std::string& path) {
  if (text.find("\"model_type\"") == std::string::npos) return ParseModelJson(text, prefix);
  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
  auto m = ModelFromHfConfig(text, stem, "Hugging Face config " + path);
  if (!m.ok()) return m;
  Diagnostics d;
  ValidateModel(*m, prefix, &d);
  if (d.has_errors()) return d.ToStatus();
  return m;
}

Result<ModelSpec> LoadModel(const std::string& ref) {
  return Load<ModelSpec>("models", ref, "model", [&ref](const std::string& text, const std::string& prefix) {
    return LooksLikePath(ref) ? ParseModelOrHfConfig(text, prefix, ref) : ParseModelJson(text, prefix);
  });
}
Result<GpuSpec> LoadGpu(const std::string& ref) {
  return Load<GpuSpec>("gpus", ref, "gpu", ParseGpuJson);
}
Result<ClusterSpec> LoadCluster(const std::string& ref) {
  return Load<ClusterSpec>("clusters", ref, "cluster", ParseClusterJson);
}

Result<Scenario> ResolvePlanFile(const PlanFile& file) {
  Scenario s;
  s.plan = file.plan;
  if (file.model) {
    s.model = *file.model;
  } else if (file.model_name) {
    auto m = LoadModel(*file.model_name);
    if (!m.ok()) return Status::InvalidArgument("plan.model: " + m.status().message());
    s.model = *m;
  } else {
    return Status::InvalidArgument("plan.model: is required (a preset name or an object)");
  }
  if (file.cluster) {
    s.cluster = *file.cluster;
  } else if (file.cluster_name) {
    auto c = LoadCluster(*file.cluster_name);
    if (!c.ok()) return Status::InvalidArgument("plan.cluster: " + c.status().message());
    s.cluster = *c;
  } else {
    return Status::InvalidArgument("plan.cluster: is required (a preset name or an object)");
  }
  if (file.gpu) {
    s.gpu = *file.gpu;
  } else {
    std::string name = file.gpu_name ? *file.gpu_name : s.cluster.gpu;
    if (name.empty()) return Status::InvalidArgument("plan.gpu: is required (the cluster names no GPU)");
    auto g = LoadGpu(name);
    if (!g.ok()) return Status::InvalidArgument("plan.gpu: " + g.status().message());
    s.gpu = *g;
  }
  return s;
}

}  // namespace meshplan::core
