// meshplan history: what the result store holds, newest first. By default the measurements with
// their plan, the step measured next to the step predicted and the error; --profiles lists the
// calibration profiles, --sweeps the saved searches. Flags -> core::ResultStore -> table or JSON.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/store_flags.h"
#include "core/result_store.h"

namespace meshplan::cli {
namespace {

using OJson = nlohmann::ordered_json;

struct HistoryFlags {
  std::string db;
  int64_t limit = 20;
  std::string format = "table";
  bool profiles = false;
  bool sweeps = false;
  bool predictions = false;
};

// nccl-tests layout: a '#' header row, a '#' units row, then the rows; columns as wide as their
// widest cell, text left-aligned and numbers right-aligned.
struct Column {
  std::string header, unit;
  bool left = false;
};

std::string Table(const std::vector<Column>& cols, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    width[c] = std::max(cols[c].header.size(), cols[c].unit.size());
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](char lead, auto cell) {
    std::string out(1, lead);
    for (size_t c = 0; c < cols.size(); ++c) {
      const std::string text = cell(c);
      const std::string pad(width[c] - text.size(), ' ');
      if (c > 0) out += "  ";
      out += cols[c].left ? text + pad : pad + text;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line('#', [&](size_t c) { return cols[c].header; });
  out += line('#', [&](size_t c) { return cols[c].unit; });
  for (const auto& r : rows) out += line(' ', [&](size_t c) { return r[c]; });
  return out;
}

// (predicted - measured) / measured, in percent; none when either is missing.
std::optional<double> ErrorPct(const core::HistoryRow& r) {
  if (!(r.measured_step_s > 0) || !(r.predicted_step_s > 0)) return std::nullopt;
  return 100.0 * (r.predicted_step_s - r.measured_step_s) / r.measured_step_s;
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }
std::string Seconds(double s) { return s > 0 ? Fmt("%.4g", s) : "-"; }
std::string LimitText(int64_t limit) { return limit > 0 ? "at most " + std::to_string(limit) : "all"; }

void PrintMeasurements(const std::string& path, const HistoryFlags& f, const std::vector<core::HistoryRow>& rows) {
  if (f.format == "json") {
    OJson list = OJson::array();
    for (const auto& r : rows) {
      const auto err = ErrorPct(r);
      list.push_back({{"id", r.measurement_id},
                      {"created_at", r.created_at},
                      {"plan", r.plan_label},
                      {"backend", r.backend},
                      {"mode", r.mode},
                      {"hostname", r.hostname},
                      {"source", r.source},
                      {"measured_step_s", r.measured_step_s},
                      {"predicted_step_s", r.predicted_step_s},
                      {"error_pct", err ? OJson(*err) : OJson(nullptr)},
                      {"profile", r.profile_name}});
    }
    std::cout << OJson{{"db", path}, {"measurements", list}}.dump(2) << "\n";
    return;
  }
  std::printf("# meshplan history: measurements in %s, newest first (%s)\n", path.c_str(), LimitText(f.limit).c_str());
  if (rows.empty()) {
    std::printf("# no measurements yet\n");
    return;
  }
  std::printf("# error = (predicted - measured) / measured step; '-' where a value is missing\n");
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    const auto err = ErrorPct(r);
    cells.push_back({std::to_string(r.measurement_id), r.created_at, OrDash(r.plan_label), OrDash(r.backend),
                     OrDash(r.mode), Seconds(r.measured_step_s), Seconds(r.predicted_step_s),
                     err ? Fmt("%+.1f", *err) : "-", OrDash(r.profile_name)});
  }
  std::cout << Table({{"id", "", false},
                      {"created", "(UTC)", true},
                      {"plan", "", true},
                      {"backend", "", true},
                      {"mode", "", true},
                      {"measured_step", "(s)", false},
                      {"predicted_step", "(s)", false},
                      {"error", "(%)", false},
                      {"profile", "", true}},
                     cells);
}

void PrintProfiles(const std::string& path, const HistoryFlags& f, std::vector<core::StoredProfile> profiles) {
  if (f.limit > 0 && static_cast<int64_t>(profiles.size()) > f.limit) profiles.resize(static_cast<size_t>(f.limit));
  if (f.format == "json") {
    OJson list = OJson::array();
    for (const auto& p : profiles)
      list.push_back({{"name", p.name},
                      {"version", p.version},
                      {"id", p.id},
                      {"created_at", p.created_at},
                      {"measurements", p.measurement_ids.size()},
                      {"measurement_ids", p.measurement_ids}});
    std::cout << OJson{{"db", path}, {"profiles", list}}.dump(2) << "\n";
    return;
  }
  std::printf("# meshplan history: calibration profiles in %s, newest version of each, by name (%s)\n", path.c_str(),
              LimitText(f.limit).c_str());
  if (profiles.empty()) {
    std::printf("# no profiles yet\n");
    return;
  }
  std::vector<std::vector<std::string>> cells;
  for (const auto& p : profiles)
    cells.push_back({p.name, std::to_string(p.version), p.created_at, std::to_string(p.measurement_ids.size())});
  std::cout << Table(
      {{"name", "", true}, {"version", "", false}, {"created", "(UTC)", true}, {"sources", "(#)", false}}, cells);
}

void PrintSweeps(const std::string& path, const HistoryFlags& f, const std::vector<core::StoredSweep>& sweeps) {
  if (f.format == "json") {
    OJson list = OJson::array();
    for (const auto& s : sweeps)
      list.push_back({{"id", s.id}, {"created_at", s.created_at}, {"label", s.label}, {"candidates", s.candidates}});
    std::cout << OJson{{"db", path}, {"sweeps", list}}.dump(2) << "\n";
    return;
  }
  std::printf("# meshplan history: search sweeps in %s, newest first (%s)\n", path.c_str(), LimitText(f.limit).c_str());
  if (sweeps.empty()) {
    std::printf("# no sweeps yet (meshplan search ... --save)\n");
    return;
  }
  std::vector<std::vector<std::string>> cells;
  for (const auto& s : sweeps)
    cells.push_back({std::to_string(s.id), s.created_at, std::to_string(s.candidates), s.label});
  std::cout << Table(
      {{"id", "", false}, {"created", "(UTC)", true}, {"candidates", "(plans)", false}, {"label", "", true}}, cells);
}

void PrintPredictions(const std::string& path, const HistoryFlags& f, const std::vector<core::PredictionRow>& rows) {
  if (f.format == "json") {
    OJson list = OJson::array();
    for (const auto& r : rows)
      list.push_back({{"id", r.prediction.id},
                      {"created_at", r.prediction.created_at},
                      {"plan_id", r.prediction.plan_id},
                      {"plan", r.plan_label},
                      {"profile", r.prediction.profile_name},
                      {"model_version", r.prediction.model_version},
                      {"step_time_s", r.prediction.step_time_s},
                      {"mfu", r.prediction.mfu}});
    std::cout << OJson{{"db", path}, {"predictions", list}}.dump(2) << "\n";
    return;
  }
  std::printf("# meshplan history: predictions in %s, newest first (%s)\n", path.c_str(), LimitText(f.limit).c_str());
  if (rows.empty()) {
    std::printf("# no predictions yet (meshplan report ... --save, meshplan calibrate fit)\n");
    return;
  }
  std::vector<std::vector<std::string>> cells;
  char step[32], mfu[32];
  for (const auto& r : rows) {
    std::snprintf(step, sizeof step, "%.4g", r.prediction.step_time_s);
    std::snprintf(mfu, sizeof mfu, "%.1f", 100 * r.prediction.mfu);
    cells.push_back({std::to_string(r.prediction.id), r.prediction.created_at, r.plan_label, step, mfu,
                     r.prediction.profile_name, r.prediction.model_version});
  }
  std::cout << Table({{"id", "", false},
                      {"created", "(UTC)", true},
                      {"plan", "", true},
                      {"step", "(s)", false},
                      {"mfu", "(%)", false},
                      {"profile", "", true},
                      {"model", "", true}},
                     cells);
}

void RunHistory(const HistoryFlags& f, int* exit_code) {
  if (f.format != "table" && f.format != "json") {
    std::cerr << "error: --format: must be table or json (got \"" << f.format << "\")\n";
    *exit_code = 2;
    return;
  }
  if (f.limit < 0) {
    std::cerr << "error: --limit: must be >= 0 (got " << f.limit << "; 0 lists everything)\n";
    *exit_code = 2;
    return;
  }
  if (int(f.profiles) + int(f.sweeps) + int(f.predictions) > 1) {
    std::cerr << "error: --profiles, --sweeps and --predictions: give one at most\n";
    *exit_code = 2;
    return;
  }
  const std::string path = StorePathFromFlag(f.db);
  auto store = OpenStoreToRead(f.db);  // reading creates nothing
  if (!store.ok()) {
    std::cerr << "error: " << StoreSourceFromFlag(f.db) << ": " << store.status().message() << "\n";
    *exit_code = 1;
    return;
  }
  const core::ResultStore& s = **store;
  core::Status status;
  if (f.profiles) {
    auto profiles = s.ListProfiles();
    if (profiles.ok()) PrintProfiles(path, f, *profiles);
    else status = profiles.status();
  } else if (f.predictions) {
    auto rows = s.ListPredictions(f.limit);
    if (rows.ok()) PrintPredictions(path, f, *rows);
    else status = rows.status();
  } else if (f.sweeps) {
    auto sweeps = s.ListSweeps(f.limit);
    if (sweeps.ok()) PrintSweeps(path, f, *sweeps);
    else status = sweeps.status();
  } else {
    auto rows = s.History(f.limit);
    if (rows.ok()) PrintMeasurements(path, f, *rows);
    else status = rows.status();
  }
  if (!status.ok()) {
    std::cerr << "error: " << StoreSourceFromFlag(f.db) << ": " << status.message() << "\n";
    *exit_code = 1;
    return;
  }
  *exit_code = 0;
}

}  // namespace

void AddHistoryCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("history",
                                  "What the result store holds: measurements vs predictions, profiles, "
                                  "saved searches (newest first)");
  auto f = std::make_shared<HistoryFlags>();
  AddDbFlag(cmd, &f->db);
  cmd->add_option("--limit", f->limit, "Rows to list, newest first (default 20; 0: all)");
  cmd->add_option("--format", f->format, "table|json");
  cmd->add_flag("--profiles", f->profiles, "List the calibration profiles (newest version of each name)");
  cmd->add_flag("--sweeps", f->sweeps, "List the saved search sweeps (meshplan search --save)");
  cmd->add_flag("--predictions", f->predictions,
                "List the stored predictions (meshplan report --save, calibrate fit) with the model version");
  cmd->callback([f, exit_code] { RunHistory(*f, exit_code); });
}

}  // namespace meshplan::cli
