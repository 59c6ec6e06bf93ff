#include "core/presets.h"

#include "core/hf_config.h"
#include "core/validate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
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

Status WriteTextFileAtomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::IoError(path + ": is a directory (give the path of a file to write)");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::IoError(path + ": cannot write (through " + tmp + ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::IoError(path + ": cannot replace it with " + tmp);
  }
  return Status::Ok();
}

bool LooksLikePath(const std::string& ref) {
  return ref.find('/') != std::string::npos || (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0);
}

namespace {

// Loads a preset by name or a file by path, and parses it with `parse`. Errors from a file are
// prefixed with its path so a user with several files knows which one is wrong.
template <typename Spec, typename ParseFn>
Result<Spec> Load(const std::string& kind, const std::string& ref, const std::string& prefix, ParseFn parse) {
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
Result<ModelSpec> ParseModelOrHfConfig(const std::string& text, const std::string& prefix, const std::string& path) {
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
Result<GpuSpec> LoadGpu(const std::string& ref) { return Load<GpuSpec>("gpus", ref, "gpu", ParseGpuJson); }
Result<ClusterSpec> LoadCluster(const std::string& ref) {
  return Load<ClusterSpec>("clusters", ref, "cluster", ParseClusterJson);
}

namespace {

// The embedded spec, else the loaded reference; records an error naming the origin on failure.
template <typename Spec, typename LoadFn>
bool ResolveOne(const SpecSource<Spec>& src, LoadFn load, Spec* out, Diagnostics* d) {
  if (src.embedded) {
    *out = *src.embedded;
    return true;
  }
  if (src.ref.empty()) return false;
  auto spec = load(src.ref);
  if (!spec.ok()) {
    d->Error(src.origin, spec.status().message());
    return false;
  }
  *out = *spec;
  return true;
}

bool Given(const auto& src) { return src.embedded.has_value() || !src.ref.empty(); }

}  // namespace

bool ResolveSpecs(const ScenarioSources& src, Scenario* s, Diagnostics* d, std::vector<std::string>* notes) {
  const size_t errors_before = d->errors().size();
  if (!ResolveOne(src.model, LoadModel, &s->model, d) && !Given(src.model))
    d->Error(src.model.origin, src.model.required);
  const bool have_gpu = ResolveOne(src.gpu, LoadGpu, &s->gpu, d);
  const bool have_cluster = ResolveOne(src.cluster, LoadCluster, &s->cluster, d);
  if (!Given(src.gpu) && !Given(src.cluster)) {
    if (!src.gpu.required.empty()) d->Error(src.gpu.origin, src.gpu.required);
    if (!src.cluster.required.empty()) d->Error(src.cluster.origin, src.cluster.required);
    return d->errors().size() == errors_before;
  }
  if (have_gpu && !Given(src.cluster)) {
    bool found = false;
    for (const auto& name : PresetNames("clusters")) {
      auto c = LoadCluster(name);
      if (c.ok() && c->gpu == s->gpu.name) {
        s->cluster = *c;
        found = true;
        notes->push_back("cluster " + name + " (the built-in cluster of " + s->gpu.name + "; --cluster to change)");
        break;
      }
    }
    if (!found) {
      // The built-in clusters of the GPU's generation (the same compute capability), which cost it
      // in their nodes and network with --cluster NAME (a DGX A100 holds either A100).
      std::string kin;
      if (s->gpu.compute_capability_major > 0)
        for (const auto& name : PresetNames("clusters")) {
          auto c = LoadCluster(name);
          if (!c.ok()) continue;
          auto g = LoadGpu(c->gpu);
          if (g.ok() && g->compute_capability_major == s->gpu.compute_capability_major)
            kin += (kin.empty() ? "" : ", ") + name + " (" + c->gpu + ")";
        }
      d->Error(src.cluster.origin,
               "is required: no built-in cluster uses gpu " + s->gpu.name +
                   (kin.empty() ? std::string()
                                : "; clusters of its generation: " + kin +
                                      " (--cluster NAME costs it in that cluster's nodes and network)") +
                   " (`meshplan presets clusters`, or a cluster JSON file)");
    }
  }
  if (have_cluster && !Given(src.gpu)) {
    if (s->cluster.gpu.empty()) {
      d->Error(src.gpu.origin, "is required (the cluster names no GPU)");
    } else if (auto g = LoadGpu(s->cluster.gpu); g.ok()) {
      s->gpu = *g;
    } else {
      d->Error(src.gpu.origin, "is required: cluster " + s->cluster.name + " names gpu " + s->cluster.gpu +
                                   ", which is not usable (" + g.status().message() + ")");
    }
  }
  return d->errors().size() == errors_before;
}

Result<Scenario> ResolvePlanFile(const PlanFile& file) {
  ScenarioSources src;
  src.model = {file.model, file.model_name.value_or(""), "plan.model", "is required (a preset name or an object)"};
  src.gpu = {file.gpu, file.gpu_name.value_or(""), "plan.gpu", ""};
  src.cluster = {file.cluster, file.cluster_name.value_or(""), "plan.cluster",
                 "is required (a preset name or an object)"};
  Scenario s;
  s.plan = file.plan;
  Diagnostics d;
  std::vector<std::string> notes;
  if (!ResolveSpecs(src, &s, &d, &notes)) return d.ToStatus();
  return s;
}

}  // namespace meshplan::core
