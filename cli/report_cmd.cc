// meshplan report: will it fit? Memory per GPU per pipeline stage. meshplan plan: write the plan
// a command line describes.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/compare.h"
#include "cli/output.h"
#include "cli/plan_flags.h"
#include "cli/profile_ref.h"
#include "cli/store_flags.h"
#include "core/failures.h"
#include "core/memory.h"
#include "core/params.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/spec_json.h"
#include "sim/accuracy.h"
#include "sim/evaluate.h"
#include "sim/step_model.h"

namespace meshplan::cli {

void AddReportCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("report", "Memory per GPU for every pipeline stage: will the plan fit?");
  auto flags = std::make_shared<PlanFlags>();
  auto format = std::make_shared<std::string>("table");
  auto profile_ref = std::make_shared<std::string>("default");
  auto tokens = std::make_shared<std::optional<double>>();
  auto failure_ref = std::make_shared<std::string>("llama3-405b");
  auto compare = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto save = std::make_shared<bool>(false);
  auto ops = std::make_shared<bool>(false);
  flags->Register(cmd);
  cmd->add_option("--format", *format, "table|json|csv");
  cmd->add_option("--profile", *profile_ref,
                  "Calibration profile: default, a JSON file, or a name fitted by meshplan calibrate (in --db)");
  AddDbFlag(cmd, db.get());
  cmd->add_flag("--save", *save, "Store the plan and this prediction in the result store (--db; meshplan history)");
  cmd->add_flag("--ops", *ops,
                "Also list every op of one microbatch (GEMMs, attention, memory-bound kernels, collectives) with the "
                "time the step model gives it (table and JSON; docs/compute.md)");
  cmd->add_option("--tokens", *tokens, "Tokens to train (default 20 per parameter, Hoffmann et al. 2022)");
  cmd->add_option("--failures", *failure_ref, "Failure-rate preset or JSON file (default llama3-405b)");
  cmd->add_option("--compare", *compare,
                  "A meshplan-run measurement JSON: show it against the prediction (its plan is used unless "
                  "--plan/--model are given)");
  cmd->callback([flags, format, profile_ref, tokens, failure_ref, compare, db, save, ops, exit_code] {
    Format f;
    if (!ParseFormat(*format, &f)) {
      std::cerr << "error: --format must be table, json or csv (got \"" << *format << "\")\n";
      *exit_code = 2;
      return;
    }
    std::optional<core::Measurement> measured;
    if (!compare->empty()) {
      auto text = core::ReadTextFile(*compare);
      auto m = text.ok() ? core::ParseMeasurementJson(*text) : core::Result<core::Measurement>(text.status());
      if (!m.ok()) {
        std::cerr << "error: --compare: " << m.status().message() << "\n";
        *exit_code = 2;
        return;
      }
      measured = *m;
      if (flags->plan_file.empty() && flags->model.empty()) {
        if (!measured->plan) {
          std::cerr << "error: --compare: " << *compare << " holds no plan (a microbenchmark?); give --plan\n";
          *exit_code = 2;
          return;
        }
        flags->fallback_plan = measured->plan;
      }
    }
    core::Scenario s;
    std::vector<std::string> notes, warnings;
    if (!ResolveOrReport(*flags, &s, &notes, &warnings, exit_code)) return;
    auto profile = LoadProfileRef(*profile_ref, *db);
    if (!profile.ok()) {
      std::cerr << "error: --profile: " << profile.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    ApplyProfileDevice(*profile, &s, &notes);
    for (std::string& n : sim::AssumedRates(*profile, s.gpu, s.model, s.plan)) notes.push_back(std::move(n));
    if (const std::string bad = TokensFlagError(*tokens); !bad.empty()) {
      std::cerr << "error: --tokens: " << bad << "\n";
      *exit_code = 2;
      return;
    }
    // Reliability over the run: the failure model (Llama 3's rates by default), async
    // checkpoints at the optimum interval.
    auto failures = core::LoadFailureModel(*failure_ref);
    if (!failures.ok()) {
      std::cerr << "error: --failures: " << failures.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    sim::EvaluateOptions eo;
    eo.tokens = tokens->value_or(0);
    eo.failures = &*failures;
    sim::ScenarioEvaluation ev = sim::EvaluateScenario(s, *profile, eo);
    const core::MemoryReport& r = ev.memory;
    SpeedReport speed;
    speed.profile = profile->name;
    speed.step = ev.step;
    if (ev.default_tokens)
      notes.push_back("tokens " + HumanCount(static_cast<int64_t>(ev.tokens)) +
                      " (20 per parameter, Chinchilla; --tokens to change)");
    speed.train = ev.train;
    if (*ops) speed.ops = sim::CostStepGraph(s.model, s.plan, s.gpu, s.cluster, *profile);
    // How close such predictions came on published runs: the shipped tables are the default
    // profile's (a calibrated profile has its own errors: meshplan validate --profile).
    if (profile->name == "default") {
      auto attach = [&](const char* name, std::optional<SpeedReport::Accuracy>* out) {
        auto t = sim::LoadAccuracyTable(name);
        if (!t.ok()) {
          warnings.push_back(std::string("warning: accuracy: ") + t.status().message());
          return;
        }
        *out = SpeedReport::Accuracy{sim::AccuracyOfPlan(*t, s, flags->stack.value_or("")), std::move(*t)};
      };
      attach("step", &speed.step_accuracy);
      attach("memory", &speed.memory_accuracy);
    }
    if (ev.reliability->ok()) {
      speed.reliability = std::move(ev.reliability->value());
      speed.failure_model = *failure_ref;
    } else {
      warnings.push_back("warning: reliability: " + ev.reliability->status().message());
    }
    if (measured) {
      std::cout << (f == Format::kJson ? CompareJson(s, *measured, speed.step, *profile)
                                       : CompareTable(s, *measured, speed.step, *profile));
      *exit_code = 0;
      return;
    }
    if (*save) {
      // The plan with its specs embedded, so the stored record stands alone.
      core::PlanFile pf;
      pf.plan = s.plan;
      pf.model = s.model;
      pf.gpu = s.gpu;
      pf.cluster = s.cluster;
      auto store = OpenStoreFromFlag(*db);
      core::Result<int64_t> plan_id = store.ok() ? (*store)->PutPlan({0, PlanLabel(s), core::PlanFileToJson(pf), ""})
                                                 : core::Result<int64_t>(store.status());
      core::Result<int64_t> pred_id =
          plan_id.ok() ? (*store)->PutPrediction({0, *plan_id, profile->name, sim::kStepModelVersion, speed.step.time_s,
                                                  speed.step.mfu, MemoryJson(s, r, notes, warnings, &speed), ""})
                       : core::Result<int64_t>(plan_id.status());
      if (!pred_id.ok()) {
        std::cerr << "error: " << StoreSourceFromFlag(*db) << ": " << pred_id.status().message() << "\n";
        *exit_code = 1;
        return;
      }
      notes.push_back("saved plan " + std::to_string(*plan_id) + " and prediction " + std::to_string(*pred_id) +
                      " to " + StorePathFromFlag(*db));
    }
    if (!r.fits) speed.fit_advice = sim::AdviseFit(s, *profile);
    if (f == Format::kJson) std::cout << MemoryJson(s, r, notes, warnings, &speed);
    else if (f == Format::kCsv) std::cout << MemoryCsv(r);
    else std::cout << MemoryTable(s, r, notes, warnings, &speed);
    if (!r.fits) std::cerr << DoesNotFitLine(r, *speed.fit_advice) << "\n";
    *exit_code = r.verdict == core::FitVerdict::kDoesNotFit ? 1 : 0;
  });
}

void AddPlanCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("plan", "Write the plan a command line describes as JSON (for --plan)");
  auto flags = std::make_shared<PlanFlags>();
  auto output = std::make_shared<std::string>();
  flags->Register(cmd);
  cmd->add_option("--output,-o", *output, "Write here instead of standard output");
  cmd->callback([flags, output, exit_code] {
    core::Scenario s;
    std::vector<std::string> notes, warnings;
    if (!ResolveOrReport(*flags, &s, &notes, &warnings, exit_code)) return;
    for (const auto& w : warnings) std::cerr << w << "\n";
    core::PlanFile file;
    file.plan = s.plan;
    file.model = s.model;
    file.gpu = s.gpu;
    file.cluster = s.cluster;
    const std::string text = core::PlanFileToJson(file);
    if (output->empty()) {
      std::cout << text;
    } else {
      if (core::Status st = core::WriteTextFileAtomically(*output, text); !st.ok()) {
        std::cerr << "error: --output: " << st.message() << "\n";
        *exit_code = 1;
        return;
      }
      std::cerr << "wrote " << *output << "\n";
    }
    *exit_code = 0;
  });
}

}  // namespace meshplan::cli
