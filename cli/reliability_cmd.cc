// meshplan reliability: how often will it break, and what does that cost? Job MTBF from the
// failure preset, checkpoint size and write/restore time, Young/Daly and the closed-form optimum
// interval, goodput vs interval, and a Monte Carlo of the whole run (days, interruptions,
// goodput, GPU-hours, dollars; p10/p50/p90). Flags -> core/sim calls -> table or JSON.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/plan_flags.h"
#include "core/failures.h"
#include "core/memory.h"
#include "core/profile.h"
#include "core/spec_json.h"
#include "core/units.h"
#include "sim/evaluate.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace meshplan::cli {
namespace {

using OJson = nlohmann::ordered_json;

struct ReliabilityFlags {
  std::string format = "table";
  std::string profile = "default";
  std::string failures = "llama3-405b";
  std::string interval = "auto";
  std::string mode = "async";
  std::optional<std::string> arrivals, storage_bw;
  std::optional<double> days, tokens, weibull_shape, loss_spikes_per_day;
  std::optional<int64_t> trials, spares;
  std::optional<uint64_t> seed;
};

// "auto" -> 0; "90s", "30m", "30min", "1.5h", "2d", or bare seconds.
bool ParseInterval(const std::string& text, double* seconds) {
  if (text == "auto") {
    *seconds = 0;
    return true;
  }
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return false;
  }
  std::string unit = text.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  if (scale == 0 || !(v > 0) || !std::isfinite(v)) return false;
  *seconds = v * scale;
  return true;
}

// "80 s", "29.6 min", "3.09 h", "2.1 d".
std::string Duration(double s) {
  if (!std::isfinite(s)) return "never";
  if (s < 120) return Fmt("%.3g s", s);
  if (s < 7200) return Fmt("%.3g min", s / 60);
  if (s < 2 * 86400) return Fmt("%.3g h", s / 3600);
  return Fmt("%.3g d", s / 86400);
}

OJson QuantilesJson(const sim::Quantiles& q) {
  return OJson{{"mean", q.mean}, {"p10", q.p10}, {"p50", q.p50}, {"p90", q.p90}};
}

// Number or null (JSON has no infinity).
OJson Finite(double v) { return std::isfinite(v) ? OJson(v) : OJson(nullptr); }

}  // namespace

// The reliability report as text (nccl-tests style: '#' comments, a units row). Also usable
// by `report` for its reliability section.
std::string ReliabilityTable(const core::Scenario& s, const core::FailureModel& f, const sim::ReliabilityReport& r,
                             const std::vector<std::string>& notes, const std::vector<std::string>& warnings) {
  std::ostringstream o;
  const auto& p = s.plan;
  const auto& rp = r.params;
  const bool by_days = r.horizon_s > 0;
  o << "# meshplan reliability: " << s.model.name << " on " << p.gpus << " x " << s.gpu.name << " (" << s.cluster.name
    << "), " << r.rates.nodes << (r.rates.nodes == 1 ? " node + " : " nodes + ") << r.spare_nodes
    << (r.spare_nodes == 1 ? " hot spare node\n" : " hot spare nodes\n");
  if (by_days) o << "# run: " << Fmt("%.4g", r.horizon_s / 86400) << " days of wall-clock time\n";
  else
    o << "# run: " << Fmt("%.4g", r.expected_tokens) << " tokens at " << Fmt("%.4g", r.tokens_per_s)
      << " tokens/s = " << Fmt("%.4g", r.ideal_days) << " days without failures\n";
  for (const auto& n : notes) o << "# default: " << n << "\n";
  for (const auto& w : warnings) o << "# " << w << "\n";
  o << "# failures (" << f.name << "): " << Fmt("%.4g", r.rates.unexpected_per_hour)
    << " unexpected interruptions/h -> MTBF " << Fmt("%.3g", r.rates.mtbf_h) << " h; planned "
    << Fmt("%.3g", r.rates.planned_per_hour) << "/h";
  if (r.rates.loss_spikes_per_hour > 0) o << "; loss spikes " << Fmt("%.3g", r.rates.loss_spikes_per_hour) << "/h";
  o << "\n";
  std::map<std::string, double> by_category;
  for (size_t i = 0; i < f.components.size(); ++i)
    by_category[f.components[i].category] += r.rates.component_per_hour[i];
  o << "#   by category (per hour):";
  for (const auto& [cat, rate] : by_category)
    o << " " << cat << " " << Fmt("%.3g", rate) << " ("
      << Fmt("%.0f", r.rates.unexpected_per_hour > 0 ? 100 * rate / r.rates.unexpected_per_hour : 0) << "%)";
  o << "\n";
  const auto& k = r.checkpoint;
  o << "# checkpoint (" << core::Name(rp.mode) << ", sharded): " << core::FormatBytes(k.total_bytes)
    << " of weights + master weights + optimizer moments, " << core::FormatBytes(k.per_gpu_bytes)
    << " on the largest rank\n";
  if (rp.mode == core::CheckpointMode::kAsync)
    o << "#   pause " << Duration(k.snapshot_s) << " (snapshot to host memory at "
      << Fmt("%.3g", f.snapshot_bytes_per_s / 1e9) << " GB/s per GPU), upload " << Duration(k.upload_s) << " at "
      << Fmt("%.4g", s.cluster.storage_bytes_per_s / 1e9) << " GB/s in the background; restore "
      << Duration(k.restore_s) << "\n";
  else
    o << "#   pause " << Duration(k.sync_write_s) << " (all ranks write to shared storage at "
      << Fmt("%.4g", s.cluster.storage_bytes_per_s / 1e9) << " GB/s); restore " << Duration(k.restore_s) << "\n";
  o << "# restart: detection " << Duration(f.restart.detection_s) << " + requeue " << Duration(rp.requeue_s)
    << " + node swap " << Duration(rp.spare_swap_s) << " (hardware; " << Fmt("%.2g", 100 * r.expected.wait_share)
    << "% find no spare and wait " << Duration(rp.replacement_wait_s) << ") + re-init " << Duration(f.restart.reinit_s)
    << " + restore " << Duration(k.restore_s) << " + warm-up " << Duration(f.restart.warmup_s) << "\n";
  o << "# interval: Young " << Duration(r.young_s) << ", Daly " << Duration(r.daly_s) << ", closed-form optimum "
    << Duration(r.optimal_s) << " (goodput " << Fmt("%.2f", 100 * r.at_optimum.goodput) << "%); simulated "
    << Duration(r.interval_s) << "\n";
  o << "#\n# Goodput vs checkpoint interval (closed form, "
    << (rp.arrivals == core::Arrivals::kExponential ? "exponential arrivals)\n"
                                                    : "exponential arrivals; the Monte Carlo uses Weibull)\n");
  char line[256];
  const char* last = by_days ? "tokens" : "days";
  const char* last_unit = by_days ? "" : "(d)";
  std::snprintf(line, sizeof line, "# %10s %9s %7s %9s %8s %8s %10s\n", "interval", "pause", "ckpt", "failures",
                "planned", "goodput", last);
  o << line;
  std::snprintf(line, sizeof line, "# %10s %9s %7s %9s %8s %8s %10s\n", "(s)", "(s)", "(%)", "(%)", "(%)", "(%)",
                last_unit);
  o << line;
  for (const auto& g : r.sweep) {
    const double tail = by_days ? r.horizon_s / g.wall_per_work * r.tokens_per_s : r.work_s * g.wall_per_work / 86400;
    std::string mark;
    if (std::fabs(g.interval_s - r.optimal_s) <= 1e-9 * r.optimal_s) mark += "  <- optimum";
    if (std::fabs(g.interval_s - r.interval_s) <= 1e-9 * r.interval_s) mark += "  <- simulated";
    std::snprintf(line, sizeof line, "  %10.1f %9.3g %7.2f %9.2f %8.2f %8.2f %10.4g%s\n", g.interval_s, g.blocking_s,
                  100 * g.checkpoint_frac, 100 * g.failure_frac, 100 * g.planned_frac, 100 * g.goodput, tail,
                  mark.c_str());
    o << line;
  }
  const auto& mc = r.mc;
  if (!mc.skipped.empty()) {
    // The closed form's expectations in place of the trials (sim::kMaxMonteCarloEvents).
    o << "#\n# " << mc.skipped << "\n";
    std::snprintf(line, sizeof line, "# %-28s %12s\n", "quantity", "expected");
    o << line;
    for (auto [name, v, fmt] : {std::tuple{"wall-clock days", mc.days.mean, "%.4g"},
                                {"goodput (%)", 100 * mc.goodput.mean, "%.2f"},
                                {"unexpected interruptions", mc.interruptions.mean, "%.4g"},
                                {"planned stops", mc.planned.mean, "%.4g"},
                                {"checkpoint pauses (h)", mc.checkpoint_h.mean, "%.4g"},
                                {"tokens", mc.tokens.mean, "%.4g"},
                                {"GPU-hours (incl. spares)", mc.gpu_hours.mean, "%.4g"},
                                {"cost (USD)", mc.cost_usd.mean, "%.4g"}}) {
      char a[32];
      std::snprintf(a, sizeof a, fmt, v);
      std::snprintf(line, sizeof line, "  %-28s %12s\n", name, a);
      o << line;
    }
    return o.str();
  }
  o << "#\n# Monte Carlo: " << mc.trials << " trials, " << core::Name(rp.arrivals) << " arrivals";
  if (rp.arrivals == core::Arrivals::kWeibull) o << " (shape " << Fmt("%.3g", rp.weibull_shape) << ")";
  o << ", checkpoint every " << Duration(r.interval_s) << "\n";
  std::snprintf(line, sizeof line, "# %-28s %12s %12s %12s %12s\n", "quantity", "mean", "p10", "p50", "p90");
  o << line;
  auto row = [&](const char* name, const sim::Quantiles& q, double scale, const char* fmt) {
    char a[4][32];
    const double v[4] = {q.mean, q.p10, q.p50, q.p90};
    for (int i = 0; i < 4; ++i) std::snprintf(a[i], sizeof a[i], fmt, v[i] * scale);
    std::snprintf(line, sizeof line, "  %-28s %12s %12s %12s %12s\n", name, a[0], a[1], a[2], a[3]);
    o << line;
  };
  row("wall-clock days", mc.days, 1, "%.2f");
  row("goodput (%)", mc.goodput, 100, "%.2f");
  row("unexpected interruptions", mc.interruptions, 1, "%.1f");
  row("planned stops", mc.planned, 1, "%.1f");
  if (r.rates.loss_spikes_per_hour > 0) row("loss-spike restarts", mc.loss_spikes, 1, "%.1f");
  row("waits for a node (no spare)", mc.replacement_waits, 1, "%.1f");
  row("lost work (h)", mc.lost_work_h, 1, "%.1f");
  row("downtime (h)", mc.downtime_h, 1, "%.1f");
  row("checkpoint pauses (h)", mc.checkpoint_h, 1, "%.2f");
  row("tokens", mc.tokens, 1, "%.4g");
  row("GPU-hours (incl. spares)", mc.gpu_hours, 1, "%.4g");
  row("cost (USD)", mc.cost_usd, 1, "%.4g");
  o << "expected: " << Fmt("%.1f", r.expected_interruptions) << " unexpected interruptions, goodput "
    << Fmt("%.2f", 100 * r.expected.goodput) << "%, " << Fmt("%.2f", r.mc.days.p50) << " days (p50), $"
    << Fmt("%.4g", r.mc.cost_usd.p50) << " (p50)\n";
  return o.str();
}

// The same report as JSON: keys carry their units.
std::string ReliabilityJson(const core::Scenario& s, const core::FailureModel& f, const sim::ReliabilityReport& r,
                            const std::vector<std::string>& notes, const std::vector<std::string>& warnings) {
  OJson j;
  const auto& p = s.plan;
  const auto& rp = r.params;
  j["model"] = s.model.name;
  j["gpu"] = s.gpu.name;
  j["cluster"] = s.cluster.name;
  j["plan"] = OJson::parse(core::PlanToJson(p));
  OJson comps = OJson::array();
  for (size_t i = 0; i < f.components.size(); ++i) {
    const auto& c = f.components[i];
    comps.push_back({{"name", c.name},
                     {"category", c.category},
                     {"scale", c.scale == core::FailureScale::kGpu ? "gpu" : "node"},
                     {"rate_per_hour", c.rate_per_hour},
                     {"job_per_hour", r.rates.component_per_hour[i]},
                     {"replace_node", c.replace_node},
                     {"silent", c.silent}});
  }
  j["failures"] = {{"preset", f.name},
                   {"nodes", r.rates.nodes},
                   {"unexpected_per_hour", r.rates.unexpected_per_hour},
                   {"replace_per_hour", r.rates.replace_per_hour},
                   {"silent_per_hour", r.rates.silent_per_hour},
                   {"planned_per_hour", r.rates.planned_per_hour},
                   {"loss_spikes_per_hour", r.rates.loss_spikes_per_hour},
                   {"components", comps}};
  const auto& k = r.checkpoint;
  j["checkpoint"] = {{"mode", core::Name(rp.mode)},
                     {"total_bytes", k.total_bytes},
                     {"per_gpu_bytes", k.per_gpu_bytes},
                     {"per_node_bytes", k.per_node_bytes},
                     {"resident_host_bytes_per_node", k.resident_host_bytes_per_node},
                     {"snapshot_s", k.snapshot_s},
                     {"upload_s", Finite(k.upload_s)},
                     {"sync_write_s", Finite(k.sync_write_s)},
                     {"restore_s", Finite(k.restore_s)},
                     {"pause_s", rp.ckpt_blocking_s},
                     {"lag_s", rp.ckpt_lag_s},
                     {"host_memory_ok", k.host_memory_ok},
                     {"storage_bytes_per_s", s.cluster.storage_bytes_per_s}};
  OJson sweep = OJson::array();
  for (const auto& g : r.sweep)
    sweep.push_back({{"interval_s", g.interval_s},
                     {"pause_s", g.blocking_s},
                     {"goodput", g.goodput},
                     {"checkpoint_frac", g.checkpoint_frac},
                     {"failure_frac", g.failure_frac},
                     {"planned_frac", g.planned_frac},
                     {"optimal", std::fabs(g.interval_s - r.optimal_s) <= 1e-9 * r.optimal_s}});
  j["reliability"] = {{"mtbf_h", Finite(r.rates.mtbf_h)},
                      {"interruptions", r.expected_interruptions},
                      {"planned_interruptions", r.expected_planned},
                      {"ckpt_interval_s", r.interval_s},
                      {"ckpt_interval_young_s", Finite(r.young_s)},
                      {"ckpt_interval_daly_s", Finite(r.daly_s)},
                      {"ckpt_interval_optimal_s", r.optimal_s},
                      {"goodput", r.expected.goodput},
                      {"goodput_optimal", r.at_optimum.goodput},
                      {"spare_nodes", r.spare_nodes},
                      {"spare_shortfall_prob", r.expected.spare_shortfall},
                      {"spare_wait_share", r.expected.wait_share},
                      {"mean_wait_s", r.expected.mean_wait_s},
                      {"restart_s", rp.restart_s},
                      {"arrivals", core::Name(rp.arrivals)},
                      {"sweep", sweep}};
  const auto& mc = r.mc;
  OJson train;
  train["tokens"] = r.expected_tokens;
  train["tokens_per_s"] = r.tokens_per_s;
  if (r.horizon_s > 0) train["horizon_days"] = r.horizon_s / 86400;
  else train["days_ideal"] = r.ideal_days;
  train["days_expected"] = r.expected_days;
  train["days_p10"] = mc.days.p10;
  train["days_p50"] = mc.days.p50;
  train["days_p90"] = mc.days.p90;
  train["goodput_p10"] = mc.goodput.p10;
  train["goodput_p50"] = mc.goodput.p50;
  train["goodput_p90"] = mc.goodput.p90;
  train["tokens_p10"] = mc.tokens.p10;
  train["tokens_p50"] = mc.tokens.p50;
  train["tokens_p90"] = mc.tokens.p90;
  train["interruptions_p10"] = mc.interruptions.p10;
  train["interruptions_p50"] = mc.interruptions.p50;
  train["interruptions_p90"] = mc.interruptions.p90;
  train["gpu_hours_p10"] = mc.gpu_hours.p10;
  train["gpu_hours_p50"] = mc.gpu_hours.p50;
  train["gpu_hours_p90"] = mc.gpu_hours.p90;
  train["cost_usd_p10"] = mc.cost_usd.p10;
  train["cost_usd_p50"] = mc.cost_usd.p50;
  train["cost_usd_p90"] = mc.cost_usd.p90;
  j["train"] = train;
  if (!mc.skipped.empty()) j["monte_carlo_skipped"] = mc.skipped;
  j["monte_carlo"] = {{"trials", mc.trials},
                      {"days", QuantilesJson(mc.days)},
                      {"goodput", QuantilesJson(mc.goodput)},
                      {"interruptions", QuantilesJson(mc.interruptions)},
                      {"planned", QuantilesJson(mc.planned)},
                      {"loss_spikes", QuantilesJson(mc.loss_spikes)},
                      {"replacement_waits", QuantilesJson(mc.replacement_waits)},
                      {"lost_work_h", QuantilesJson(mc.lost_work_h)},
                      {"downtime_h", QuantilesJson(mc.downtime_h)},
                      {"checkpoint_h", QuantilesJson(mc.checkpoint_h)},
                      {"tokens", QuantilesJson(mc.tokens)},
                      {"gpu_hours", QuantilesJson(mc.gpu_hours)},
                      {"cost_usd", QuantilesJson(mc.cost_usd)}};
  j["defaults"] = notes;
  j["warnings"] = warnings;
  return j.dump(2) + "\n";
}

void AddReliabilityCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand(
      "reliability", "Failures, checkpoints and goodput over a whole run: MTBF, checkpoint interval, days and cost");
  auto flags = std::make_shared<PlanFlags>();
  auto rf = std::make_shared<ReliabilityFlags>();
  flags->Register(cmd);
  auto* g = cmd->add_option_group("Reliability");
  g->add_option("--days", rf->days, "Run this many wall-clock days (instead of --tokens)");
  g->add_option("--tokens", rf->tokens, "Tokens to train (default 20 per parameter, Hoffmann et al. 2022)");
  g->add_option(
      "--ckpt-interval", rf->interval,
      "Training time between checkpoints: auto (the closed-form optimum), 90s, 30m, 1.5h, ... (default auto)");
  g->add_option("--ckpt-mode", rf->mode,
                "async (snapshot to host memory, upload in the background) | sync "
                "(all ranks write to shared storage) (default async)");
  g->add_option("--trials", rf->trials, "Monte Carlo trials (default 1000)");
  g->add_option("--seed", rf->seed, "Monte Carlo seed (default 1): same seed, same result");
  g->add_option("--failures", rf->failures, "Failure model: preset name or JSON file (default llama3-405b)");
  g->add_option("--spares", rf->spares, "Hot spare nodes (default: the failure model's hot_spare_fraction)");
  g->add_option("--storage-bw", rf->storage_bw,
                "Checkpoint storage bandwidth, aggregate, e.g. 2TB/s (default: the cluster's storage_bytes_per_s)");
  g->add_option("--arrivals", rf->arrivals, "exponential|weibull failure arrivals (default: the failure model's)");
  g->add_option("--weibull-shape", rf->weibull_shape,
                "Weibull shape k (implies --arrivals weibull; k < 1: "
                "decreasing hazard)");
  g->add_option("--loss-spikes-per-day", rf->loss_spikes_per_day,
                "Loss spikes per day that force a last-known-good restart (default: the failure model's)");
  cmd->add_option("--format", rf->format, "table|json");
  cmd->add_option("--profile", rf->profile, "Calibration profile: default, a name, or a JSON file");
  cmd->callback([flags, rf, exit_code] {
    auto usage = [&](const std::string& msg) {
      std::cerr << "error: " << msg << "\n";
      *exit_code = 2;
    };
    Format format;
    if (!ParseFormat(rf->format, &format) || format == Format::kCsv)
      return usage("--format must be table or json (got \"" + rf->format + "\")");
    if (rf->days && rf->tokens) return usage("--days and --tokens: give one, not both");
    // The bounds a flag shares with the file it overrides (the failure model's and the cluster's
    // JSON rules), and with --tokens: a run is days to months, not centuries.
    if (rf->days && !(*rf->days > 0 && *rf->days <= 1e5))
      return usage("--days: must be in (0, 100000] (got " + Fmt("%g", *rf->days) + ")");
    if (const std::string bad = TokensFlagError(rf->tokens); !bad.empty()) return usage("--tokens: " + bad);
    double interval_s = 0;
    if (!ParseInterval(rf->interval, &interval_s) || interval_s > 365 * 86400.0)
      return usage(
          "--ckpt-interval: must be auto or a positive duration of at most a year such as 90s, 30m, 1.5h "
          "(got \"" +
          rf->interval + "\")");
    core::CheckpointMode mode;
    if (!core::FromName(rf->mode, &mode)) return usage("--ckpt-mode: must be async or sync (got \"" + rf->mode + "\")");
    if (rf->trials && (*rf->trials < 1 || *rf->trials > 10'000'000))
      return usage("--trials: must be in [1, 10000000] (got " + std::to_string(*rf->trials) + ")");
    if (rf->spares && *rf->spares < 0) return usage("--spares: must be >= 0 (got " + std::to_string(*rf->spares) + ")");
    double storage_bw = 0;
    if (rf->storage_bw && !(core::ParseBandwidth(*rf->storage_bw, &storage_bw) && storage_bw > 0 &&
                            storage_bw <= core::kMaxStorageBytesPerS))
      return usage(
          "--storage-bw: must be a rate above 0 and at most 100TB/s with a unit such as 2TB/s or 400Gb/s "
          "(got \"" +
          *rf->storage_bw + "\")");
    core::Arrivals arrivals = core::Arrivals::kExponential;
    if (rf->arrivals && !core::FromName(*rf->arrivals, &arrivals))
      return usage("--arrivals: must be exponential or weibull (got \"" + *rf->arrivals + "\")");
    if (rf->weibull_shape && !(*rf->weibull_shape >= 0.05 && *rf->weibull_shape <= 20))
      return usage("--weibull-shape: must be in [0.05, 20] (got " + Fmt("%g", *rf->weibull_shape) + ")");
    if (rf->loss_spikes_per_day &&
        !(*rf->loss_spikes_per_day >= 0 && *rf->loss_spikes_per_day <= core::kMaxLossSpikesPerDay))
      return usage("--loss-spikes-per-day: must be in [0, 1440], one a minute at most (got " +
                   Fmt("%g", *rf->loss_spikes_per_day) + ")");

    core::Scenario s;
    std::vector<std::string> notes, warnings;
    if (!ResolveOrReport(*flags, &s, &notes, &warnings, exit_code)) return;
    auto profile = core::LoadProfile(rf->profile);
    if (!profile.ok()) return usage("--profile: " + profile.status().message());
    auto failures = core::LoadFailureModel(rf->failures);
    if (!failures.ok()) return usage("--failures: " + failures.status().message());
    core::FailureModel f = *failures;
    if (rf->arrivals) f.arrivals = arrivals;
    if (rf->weibull_shape) {
      f.weibull_shape = *rf->weibull_shape;
      if (!rf->arrivals) f.arrivals = core::Arrivals::kWeibull;
    }
    if (rf->loss_spikes_per_day) f.loss_spikes_per_day = *rf->loss_spikes_per_day;
    if (storage_bw > 0) s.cluster.storage_bytes_per_s = storage_bw;

    sim::EvaluateOptions eo;  // memory, step and the run's tokens as meshplan report has them
    eo.tokens = rf->tokens ? *rf->tokens : 0;
    const sim::ScenarioEvaluation ev = sim::EvaluateScenario(s, *profile, eo);
    const core::MemoryReport& mem = ev.memory;
    const sim::StepEstimate& step = ev.step;
    sim::ReliabilityOptions opt;
    opt.mode = mode;
    opt.interval_s = interval_s;
    if (rf->days) {
      opt.days = *rf->days;
    } else {
      opt.tokens = ev.tokens;
      if (ev.default_tokens)
        notes.push_back("tokens " + HumanCount(static_cast<int64_t>(opt.tokens)) +
                        " (20 per parameter, Chinchilla; --tokens or --days to change)");
    }
    if (rf->spares) opt.spare_nodes = *rf->spares;
    if (rf->trials) opt.trials = *rf->trials;
    if (rf->seed) opt.seed = *rf->seed;
    if (interval_s == 0) notes.push_back("checkpoint interval: the closed-form optimum (--ckpt-interval to change)");
    if (!mem.fits)
      warnings.push_back(std::string("warning: the plan ") +
                         (mem.verdict == core::FitVerdict::kTight ? "fits only without the allocator's reserve ("
                                                                  : "does not fit in GPU memory (") +
                         core::FormatBytes(mem.per_gpu_bytes) + " > " + core::FormatBytes(mem.capacity_bytes) +
                         "); see meshplan report");
    if (f.arrivals == core::Arrivals::kWeibull)
      warnings.push_back("warning: the closed form assumes exponential arrivals; the Monte Carlo uses Weibull");

    auto r = sim::EstimateReliability(s, mem, step, f, opt);
    if (!r.ok()) {
      std::cerr << "error: " << r.status().message() << "\n";
      *exit_code = 1;
      return;
    }
    if (mode == core::CheckpointMode::kAsync && !r->checkpoint.host_memory_ok)
      warnings.push_back("warning: an async snapshot needs " + core::FormatBytes(r->checkpoint.per_node_bytes) +
                         " of host memory per node" +
                         (r->checkpoint.resident_host_bytes_per_node > 0
                              ? " beside the " + core::FormatBytes(r->checkpoint.resident_host_bytes_per_node) +
                                    " the plan's offloads hold"
                              : std::string()) +
                         ", the node has " + core::FormatBytes(s.cluster.host_memory_bytes_per_node));
    if (format == Format::kJson) std::cout << ReliabilityJson(s, f, *r, notes, warnings);
    else std::cout << ReliabilityTable(s, f, *r, notes, warnings);
    if (!mem.fits) std::cerr << DoesNotFitLine(mem, sim::AdviseFit(s, *profile)) << "\n";
    *exit_code = mem.verdict == core::FitVerdict::kDoesNotFit ? 1 : 0;
  });
}

}  // namespace meshplan::cli
