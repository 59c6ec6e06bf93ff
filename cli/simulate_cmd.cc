// meshplan simulate: one step of the plan, op by op, on each rank's compute and communication
// streams (sim/des.h), with timelines.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/plan_flags.h"
#include "core/presets.h"
#include "core/profile.h"
#include "sim/des.h"
#include "sim/step_model.h"

namespace meshplan::cli {
namespace {

// Writes `text` to `path` atomically; an error names the flag.
bool WriteFile(const std::string& path, const std::string& text, const char* flag) {
  const core::Status st = core::WriteTextFileAtomically(path, text);
  if (!st.ok()) std::cerr << "error: " << flag << ": " << st.message() << "\n";
  return st.ok();
}

}  // namespace

void AddSimulateCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("simulate", "Simulate one step's pipeline event by event, with timelines");
  auto flags = std::make_shared<PlanFlags>();
  struct Opts {
    std::string format = "table", trace, svg, profile = "default";
    bool gantt = false;
    std::vector<std::string> stragglers;
    double jitter = 0;
    uint64_t seed = 1;
  };
  auto o = std::make_shared<Opts>();
  flags->Register(cmd);
  cmd->add_option("--format", o->format, "table|json");
  cmd->add_option("--trace", o->trace, "Write a Chrome trace (chrome://tracing, Perfetto)");
  cmd->add_option("--svg", o->svg, "Write an SVG Gantt chart");
  cmd->add_flag("--gantt", o->gantt, "Print an ASCII Gantt chart");
  cmd->add_option("--straggler", o->stragglers, "RANK:FACTOR, e.g. 3:1.1 (pipeline rank 3 10% slower); repeatable");
  cmd->add_option("--jitter", o->jitter, "Relative std-dev of each op's duration, in [0, 1] (e.g. 0.02)");
  cmd->add_option("--seed", o->seed, "Seed of the jitter");
  cmd->add_option("--profile", o->profile, "Calibration profile: default, a name, or a JSON file");
  cmd->callback([flags, o, exit_code] {
    if (o->format != "table" && o->format != "json") {
      std::cerr << "error: --format must be table or json (got \"" << o->format << "\")\n";
      *exit_code = 2;
      return;
    }
    auto profile = core::LoadProfile(o->profile);
    if (!profile.ok()) {
      std::cerr << "error: --profile: " << profile.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    core::Scenario s;
    core::Diagnostics d;
    std::vector<std::string> notes;
    if (!flags->Resolve(&s, &d, &notes)) {
      bool usage = false;
      for (const auto& e : d.errors()) {
        std::cerr << "error: " << e.ToString() << "\n";
        usage |= e.path.rfind("--", 0) == 0;
      }
      *exit_code = usage ? 2 : 1;
      return;
    }
    sim::DesOptions opt;
    opt.jitter = o->jitter;
    opt.seed = o->seed;
    if (!o->stragglers.empty()) opt.stage_slowdown.assign(static_cast<size_t>(s.plan.pp), 1.0);
    for (const auto& text : o->stragglers) {
      long long rank = -1;
      double factor = 0;
      char tail = 0;
      if (std::sscanf(text.c_str(), "%lld:%lf%c", &rank, &factor, &tail) != 2 || rank < 0 || rank >= s.plan.pp ||
          !(factor > 0) || !std::isfinite(factor)) {
        std::cerr << "error: --straggler: \"" << text << "\" must be RANK:FACTOR with 0 <= RANK < pp=" << s.plan.pp
                  << " and FACTOR a finite number > 0\n";
        *exit_code = 2;
        return;
      }
      opt.stage_slowdown[static_cast<size_t>(rank)] = factor;
    }
    const sim::StepEstimate e = sim::EstimateStep(s.model, s.plan, s.gpu, s.cluster, *profile);
    const std::vector<sim::StageStreams> streams =
        sim::StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, *profile, e.stages);
    auto r = sim::SimulateStreams(s.plan, streams, s.plan.Microbatches(), opt);
    if (!r.ok()) {
      std::cerr << "error: " << r.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    if (!o->trace.empty() && !WriteFile(o->trace, sim::ChromeTraceJson(*r), "--trace")) {
      *exit_code = 1;
      return;
    }
    if (!o->svg.empty() && !WriteFile(o->svg, sim::SvgGantt(*r, s.plan.pp), "--svg")) {
      *exit_code = 1;
      return;
    }
    if (o->format == "json") {
      nlohmann::ordered_json j;
      j["model"] = s.model.name;
      j["schedule"] = core::Name(s.plan.schedule);
      j["pp"] = s.plan.pp;
      j["vpp"] = s.plan.vpp;
      j["microbatches"] = s.plan.Microbatches();
      j["step_time_s"] = r->step_time_s;
      j["pipeline_s"] = r->pipeline_s;
      j["bubble_fraction"] = r->bubble_fraction;
      j["analytic_step_time_s"] = e.time_s;
      nlohmann::ordered_json stages = nlohmann::ordered_json::array();
      for (size_t i = 0; i < r->stages.size(); ++i) {
        const sim::DesStage& st = r->stages[i];
        nlohmann::ordered_json row = {{"stage", i}, {"busy_s", st.busy_s}, {"idle_s", st.idle_s}};
        // Whole step, per stream: "compute_busy_s", "tp_comm_busy_s", "dp_comm_busy_s", "p2p_busy_s".
        for (int k = 0; k < sim::kStreams; ++k)
          row[std::string(sim::Name(static_cast<sim::Stream>(k))) + "_busy_s"] =
              st.stream_busy_s[static_cast<size_t>(k)];
        stages.push_back(row);
      }
      j["stages"] = stages;
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf("# meshplan simulate: %s, %s, pp %lld, vpp %lld, %lld microbatches\n", s.model.name.c_str(),
                  core::Name(s.plan.schedule), static_cast<long long>(s.plan.pp), static_cast<long long>(s.plan.vpp),
                  static_cast<long long>(s.plan.Microbatches()));
      // busy/idle: the pipeline phase; the streams' busy times: the whole step.
      auto busy = [](const sim::DesStage& st, sim::Stream k) { return st.stream_busy_s[static_cast<size_t>(k)]; };
      std::printf("# %5s %10s %10s %8s %10s %10s %10s %10s\n# %5s %10s %10s %8s %10s %10s %10s %10s\n", "rank", "busy",
                  "idle", "idle", "compute", "tp_comm", "dp_comm", "p2p", "", "(s)", "(s)", "(%)", "(s)", "(s)", "(s)",
                  "(s)");
      for (size_t i = 0; i < r->stages.size(); ++i) {
        const sim::DesStage& st = r->stages[i];
        std::printf("  %5zu %10.3f %10.3f %8.1f %10.3f %10.3f %10.3f %10.3f\n", i, st.busy_s, st.idle_s,
                    100 * st.idle_s / r->pipeline_s, busy(st, sim::Stream::kCompute), busy(st, sim::Stream::kTpComm),
                    busy(st, sim::Stream::kDpComm), busy(st, sim::Stream::kP2p));
      }
      std::printf("step %.3f s (pipeline %.3f s + step-level %.3f s); bubble %.1f%%; analytic model %.3f s\n",
                  r->step_time_s, r->pipeline_s, r->step_time_s - r->pipeline_s, 100 * r->bubble_fraction, e.time_s);
      if (o->gantt) {
        if (s.plan.pp > 64) std::cout << "(--gantt: more than 64 ranks; use --svg or --trace)\n";
        else std::cout << sim::AsciiGantt(*r, s.plan.pp, 100);
      }
    }
    *exit_code = 0;
  });
}

}  // namespace meshplan::cli
