// meshplan validate --dataset FILE: predicted vs published for every usable record.
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/profile_ref.h"
#include "cli/store_flags.h"
#include "core/profile.h"
#include "core/published.h"
#include "sim/validation.h"

namespace meshplan::cli {

void AddValidateCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("validate", "Predict published training runs and report the error");
  auto dataset = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  auto profile_ref = std::make_shared<std::string>("default");
  auto db = std::make_shared<std::string>();
  cmd->add_option("--dataset", *dataset, "Records in the format of shared/validation/published.json")->required();
  cmd->add_option("--format", *format, "table|json");
  cmd->add_option("--profile", *profile_ref,
                  "Calibration profile: default, a JSON file, or a name fitted by meshplan calibrate (in --db); "
                  "errors are shown with and without it");
  AddDbFlag(cmd, db.get());
  cmd->callback([=] {
    if (*format != "table" && *format != "json") {
      std::cerr << "error: --format must be table or json (got \"" << *format << "\")\n";
      *exit_code = 2;
      return;
    }
    auto profile = LoadProfileRef(*profile_ref, *db);
    if (!profile.ok()) {
      std::cerr << "error: --profile: " << profile.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    if (profile->device) {
      std::cerr << "error: --profile: " << profile->name << " was fitted on " << profile->device->name
                << ", not on a GPU preset: it cannot predict published GPU runs\n";
      *exit_code = 2;
      return;
    }
    auto text = core::ReadTextFile(*dataset);
    if (!text.ok()) {
      std::cerr << "error: --dataset: " << text.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(*text, &skipped);
    if (!runs.ok()) {
      std::cerr << "error: --dataset: " << runs.status().message() << "\n";
      *exit_code = 1;
      return;
    }
    const sim::ValidationSummary v = sim::ValidateRuns(*runs, *profile);
    // With a calibrated profile, the built-in defaults too: the error with and without it.
    const bool both = *profile_ref != "default";
    const sim::ValidationSummary v0 = both ? sim::ValidateRuns(*runs, core::Profile{}) : v;
    if (*format == "json") {
      nlohmann::ordered_json records = nlohmann::ordered_json::array();
      for (size_t i = 0; i < v.records.size(); ++i) {
        const auto& r = v.records[i];
        nlohmann::ordered_json rec = {{"id", r.id},          {"metric", r.metric}, {"published", r.published},
                                      {"predicted", r.predicted}, {"error", r.error}, {"assumptions", r.assumptions}};
        if (both) rec["predicted_default"] = v0.records[i].predicted, rec["error_default"] = v0.records[i].error;
        records.push_back(rec);
      }
      nlohmann::ordered_json j;
      j["dataset"] = *dataset;
      j["profile"] = profile->name;
      j["records"] = records;
      j["summary"] = {{"n", v.n}, {"median_abs_error", v.median_abs_error}, {"mean_abs_error", v.mean_abs_error},
                      {"max_abs_error", v.max_abs_error}};
      if (both)
        j["summary_default"] = {{"n", v0.n}, {"median_abs_error", v0.median_abs_error},
                                {"mean_abs_error", v0.mean_abs_error}, {"max_abs_error", v0.max_abs_error}};
      j["skipped"] = skipped;
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf("# meshplan validate: %s (profile %s)\n", dataset->c_str(), profile->name.c_str());
      if (both) {
        std::printf("# %-44s %-22s %11s %11s %8s %11s %8s\n", "record", "metric", "published", "predicted", "error",
                    "default", "error");
        for (size_t i = 0; i < v.records.size(); ++i) {
          const auto& r = v.records[i];
          std::printf("  %-44s %-22s %11.4g %11.4g %+7.1f%% %11.4g %+7.1f%%\n", r.id.c_str(), r.metric, r.published,
                      r.predicted, 100 * r.error, v0.records[i].predicted, 100 * v0.records[i].error);
        }
      } else {
        std::printf("# %-44s %-22s %11s %11s %8s\n", "record", "metric", "published", "predicted", "error");
        for (const auto& r : v.records)
          std::printf("  %-44s %-22s %11.4g %11.4g %+7.1f%%\n", r.id.c_str(), r.metric, r.published, r.predicted,
                      100 * r.error);
      }
      std::printf("# %zu records (%zu skipped: no model, plan or measurement); |error| median %.1f%%, mean %.1f%%, "
                  "max %.1f%%\n",
                  v.n, skipped.size(), 100 * v.median_abs_error, 100 * v.mean_abs_error, 100 * v.max_abs_error);
      if (both)
        std::printf("# with the built-in defaults: |error| median %.1f%%, mean %.1f%%, max %.1f%%\n",
                    100 * v0.median_abs_error, 100 * v0.mean_abs_error, 100 * v0.max_abs_error);
    }
    *exit_code = 0;
  });
}

}  // namespace meshplan::cli
