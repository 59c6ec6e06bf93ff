// meshplan export: a plan file as Megatron-LM arguments, a torchtitan TOML or a DeepSpeed JSON
// (the writers are core/export.h's).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/export_check.h"
#include "core/diagnostics.h"
#include "core/export.h"
#include "core/presets.h"
#include "core/spec_json.h"
#include "core/validate.h"

namespace meshplan::cli {

void AddExportCommand(CLI::App* app, int* exit_code) {
  auto* exp =
      app->add_subcommand("export",
                          "A plan file as Megatron-LM arguments, a torchtitan TOML or Python configuration or a "
                          "DeepSpeed JSON");
  auto plan = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  auto check = std::make_shared<bool>(false);
  auto python = std::make_shared<std::string>("python3");
  exp->add_option("--plan", *plan, "A plan JSON file (meshplan plan/search --output)")->required();
  exp->add_option("--to", *to,
                  "megatron|torchtitan|torchtitan-py|deepspeed (torchtitan: TOML for torchtitan 238fa99, the last that "
                  "reads TOML; torchtitan-py: a Python configuration module for torchtitan b5bcd76c6)")
      ->required();
  exp->add_flag("--check", *check,
                "Also run the framework's own validation on the export in Python (Megatron-LM parse_args and "
                "validate_args, DeepSpeedConfig, torchtitan's ConfigManager and ParallelDims; no GPU): exit 0 "
                "accepted, 1 rejected, 4 when it could not run (the framework not importable)");
  exp->add_option("--python", *python,
                  "The Python interpreter for --check (default python3; its path and "
                  "PYTHONPATH must import the framework)");
  exp->callback([plan, to, check, python, exit_code] {
    if (*to != "megatron" && *to != "torchtitan" && *to != "torchtitan-py" && *to != "deepspeed") {
      std::cerr << "error: --to: must be megatron, torchtitan, torchtitan-py or deepspeed (got \"" << *to << "\")\n";
      *exit_code = 2;
      return;
    }
    auto text = core::ReadTextFile(*plan);
    if (!text.ok()) {
      std::cerr << "error: --plan: " << text.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    auto file = core::ParsePlanFileJson(*text);
    if (!file.ok()) {
      std::cerr << "error: --plan: " << *plan << ":\n" << file.status().message() << "\n";
      *exit_code = 1;
      return;
    }
    auto s = core::ResolvePlanFile(*file);
    if (!s.ok()) {
      std::cerr << "error: --plan: " << *plan << ":\n" << s.status().message() << "\n";
      *exit_code = 1;
      return;
    }
    core::Diagnostics d;
    core::ValidatePlan(s->plan, s->model, s->gpu, s->cluster, &d);
    if (d.has_errors()) {
      for (const auto& e : d.errors()) std::cerr << "error: " << e.ToString() << "\n";
      *exit_code = 1;
      return;
    }
    std::vector<std::string> notes;  // DeepSpeed's, on stderr: its output must stay valid JSON
    const core::Result<std::string> out = *to == "megatron"        ? core::ExportMegatron(*s)
                                          : *to == "torchtitan"    ? core::ExportTorchtitan(*s)
                                          : *to == "torchtitan-py" ? core::ExportTorchtitanPython(*s)
                                                                   : core::ExportDeepSpeed(*s, &notes);
    if (!out.ok()) {
      std::cerr << "error: --to " << *to << ": " << out.status().message() << "\n";
      *exit_code = 1;
      return;
    }
    std::cout << *out;
    for (const auto& n : notes) std::cerr << "# note: " << n << "\n";
    *exit_code = 0;
    if (!*check) return;
    std::cout.flush();
    const CheckResult r =
        CheckExport(*to, *out, s->plan.gpus, s->plan.dp, core::ComputeCapabilityMajor(s->gpu), *python);
    switch (r.verdict) {
      case CheckVerdict::kAccepted: std::cerr << "check: " << r.message << "\n"; break;
      case CheckVerdict::kRejected:
        std::cerr << "error: --check: the framework rejects the export: " << r.message << "\n";
        *exit_code = 1;
        break;
      case CheckVerdict::kNotRun:
        std::cerr << "error: --check: the framework's validation did not run: " << r.message << "\n";
        *exit_code = 4;
        break;
    }
  });
}

}  // namespace meshplan::cli
