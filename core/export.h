// A plan as a framework's own configuration: Megatron-LM arguments, a torchtitan job config
// (TOML) and a DeepSpeed config JSON, for `meshplan export` (and the GUI). Pure functions of the
// scenario; what a framework sets in code or cannot express goes to `# note:` lines or `notes`.
// What each maps: docs/search.md ("export"). Thread-safe.
#ifndef MESHPLAN_CORE_EXPORT_H_
#define MESHPLAN_CORE_EXPORT_H_

#include <string>
#include <vector>

#include "core/presets.h"

namespace meshplan::core {

// REQUIRES (all three): ValidatePlan(s.plan, s.model, s.gpu, s.cluster) reported no errors.
// Megatron-LM (pretrain_gpt.py / Megatron-Core) arguments, one per line.
std::string ExportMegatron(const Scenario& s);
// torchtitan job config (TOML).
std::string ExportTorchtitan(const Scenario& s);
// DeepSpeed config JSON; what DeepSpeed sets in code (pipeline stages) goes to `notes`.
std::string ExportDeepSpeed(const Scenario& s, std::vector<std::string>* notes);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_EXPORT_H_
