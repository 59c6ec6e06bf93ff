// --profile: where a calibration profile comes from, and what a profile fitted on a non-GPU
// device does to the scenario. Shared by report, validate and calibrate.
#ifndef MESHPLAN_CLI_PROFILE_REF_H_
#define MESHPLAN_CLI_PROFILE_REF_H_

#include <string>
#include <vector>

#include "core/presets.h"
#include "core/profile.h"
#include "core/status.h"

namespace meshplan::cli {

// "default", a JSON file, a preset (presets/profiles/NAME.json), or the newest version of NAME in
// the result store named by `db_flag` (empty: the default store). A store that does not exist is
// not created by a lookup. NotFound says every place that was searched.
core::Result<core::Profile> LoadProfileRef(const std::string& ref, const std::string& db_flag);

// A profile that carries its own device (fitted on the cpu backend) predicts for that device:
// s->gpu becomes the profile's device, and a note says so.
void ApplyProfileDevice(const core::Profile& p, core::Scenario* s, std::vector<std::string>* notes);

}  // namespace meshplan::cli

#endif  // MESHPLAN_CLI_PROFILE_REF_H_
