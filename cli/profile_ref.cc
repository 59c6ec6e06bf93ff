#include "cli/profile_ref.h"

#include <filesystem>

#include "cli/store_flags.h"

namespace meshplan::cli {

core::Result<core::Profile> LoadProfileRef(const std::string& ref, const std::string& db_flag) {
  if (ref == "default" || core::LooksLikePath(ref)) return core::LoadProfile(ref);
  auto preset = core::LoadProfile(ref);
  if (preset.ok() || preset.status().code() != core::Status::Code::kNotFound) return preset;
  const std::string path = StorePathFromFlag(db_flag);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return core::Status::NotFound("no profile named \"" + ref + "\": not a preset, and the store " + path +
                                  " does not exist (meshplan calibrate fit ... --name " + ref + " creates it)");
  auto store = OpenStoreFromFlag(db_flag);
  if (!store.ok()) return store.status();
  auto stored = (*store)->GetProfile(ref);
  if (!stored.ok())
    return core::Status::NotFound("no profile named \"" + ref + "\": not a preset; in " + path + ": " +
                                  stored.status().message());
  auto p = core::ParseProfileJson(stored->profile_json);
  if (!p.ok())
    return core::Status::InvalidArgument(path + ": profile " + ref + " version " + std::to_string(stored->version) +
                                         ":\n" + p.status().message());
  return p;
}

void ApplyProfileDevice(const core::Profile& p, core::Scenario* s, std::vector<std::string>* notes) {
  if (!p.device || p.device->name == s->gpu.name) return;
  notes->push_back("profile " + p.name + " was fitted on " + p.device->name +
                   ": predictions are for that device, not " + s->gpu.name);
  const double plan_tdp_w = s->gpu.tdp_w;
  const std::string plan_gpu = s->gpu.name;
  s->gpu = *p.device;
  if (s->gpu.tdp_w == 0) {
    s->gpu.tdp_w = plan_tdp_w;
    notes->push_back("energy uses " + plan_gpu + "'s TDP: " + p.device->name + "'s power was not measured");
  }
}

}  // namespace meshplan::cli
