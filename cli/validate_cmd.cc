// meshplan validate --dataset FILE: predicted vs published for every usable record.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/profile.h"
#include "core/published.h"
#include "sim/step_model.h"

namespace meshplan::cli {

void AddValidateCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("validate", "Predict published training runs and report the error");
  auto dataset = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  auto profile_ref = std::make_shared<std::string>("default");
  cmd->add_option("--dataset", *dataset, "Records in the format of shared/validation/published.json")->required();
  cmd->add_option("--format", *format, "table|json");
  cmd->add_option("--profile", *profile_ref, "Calibration profile: default, a name, or a JSON file");
  cmd->callback([=] {
    if (*format != "table" && *format != "json") {
      std::cerr << "error: --format must be table or json (got \"" << *format << "\")\n";
      *exit_code = 2;
      return;
    }
    auto profile = core::LoadProfile(*profile_ref);
    if (!profile.ok()) {
      std::cerr << "error: --profile: " << profile.status().message() << "\n";
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
    nlohmann::ordered_json records = nlohmann::ordered_json::array();
    std::vector<double> errors;
    char line[512];
    if (*format == "table") {
      std::printf("# meshplan validate: %s (profile %s)\n", dataset->c_str(), profile->name.c_str());
      std::printf("# %-44s %-22s %11s %11s %8s\n", "record", "metric", "published", "predicted", "error");
    }
    for (const auto& run : *runs) {
      const auto& s = run.scenario;
      const sim::StepEstimate e = sim::EstimateStep(s.model, s.plan, s.gpu, s.cluster, *profile);
      double predicted = 0;
      const char* metric = "";
      if (run.metric == core::PublishedMetric::kIterationTimeS) {
        predicted = e.time_s;
        metric = "iteration_time_s";
      } else {
        predicted = e.hardware_flops / e.time_s / static_cast<double>(s.plan.gpus) / 1e12;
        metric = "hw_tflops_per_gpu";
      }
      const double err = (predicted - run.published) / run.published;
      errors.push_back(std::fabs(err));
      nlohmann::ordered_json rec;
      rec["id"] = run.id;
      rec["metric"] = metric;
      rec["published"] = run.published;
      rec["predicted"] = predicted;
      rec["error"] = err;
      rec["assumptions"] = run.assumptions;
      records.push_back(rec);
      if (*format == "table") {
        std::snprintf(line, sizeof line, "  %-44s %-22s %11.4g %11.4g %+7.1f%%\n", run.id.c_str(), metric,
                      run.published, predicted, 100 * err);
        std::cout << line;
      }
    }
    std::vector<double> sorted = errors;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    const double median = n == 0 ? 0 : (n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]));
    double mean = 0;
    for (double v : sorted) mean += v;
    mean = n ? mean / static_cast<double>(n) : 0;
    const double max = n ? sorted.back() : 0;
    if (*format == "json") {
      nlohmann::ordered_json j;
      j["dataset"] = *dataset;
      j["profile"] = profile->name;
      j["records"] = records;
      j["summary"] = {{"n", n}, {"median_abs_error", median}, {"mean_abs_error", mean}, {"max_abs_error", max}};
      j["skipped"] = skipped;
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf("# %zu records (%zu skipped: no model, plan or measurement); |error| median %.1f%%, mean %.1f%%, "
                  "max %.1f%%\n",
                  n, skipped.size(), 100 * median, 100 * mean, 100 * max);
    }
    *exit_code = 0;
  });
}

}  // namespace meshplan::cli
