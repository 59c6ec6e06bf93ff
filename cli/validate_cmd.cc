// meshplan validate --dataset FILE|DIR ...: predicted vs published tokens/s per GPU for every
// usable record, with the error summarised over all records and per group.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/profile_ref.h"
#include "cli/store_flags.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/published.h"
#include "core/spec_json.h"
#include "sim/accuracy.h"
#include "sim/comparison.h"
#include "sim/validation.h"

namespace meshplan::cli {
namespace {

nlohmann::ordered_json SummaryJson(const sim::ErrorSummary& s) {
  return {{"n", s.n},
          {"median_abs_error", s.median_abs_error},
          {"p90_abs_error", s.p90_abs_error},
          {"mean_abs_error", s.mean_abs_error},
          {"max_abs_error", s.max_abs_error},
          {"median_error", s.median_error},
          {"out_of_memory", s.out_of_memory}};
}

// A summary's row; `oom` adds the out-of-memory count (the runs' tables, not the pairs').
void PrintSummaryLine(const char* label, const sim::ErrorSummary& s, bool oom = true) {
  std::printf("  %-40s %4zu %7.1f%% %7.1f%% %7.1f%% %+7.1f%%", label, s.n, 100 * s.median_abs_error,
              100 * s.p90_abs_error, 100 * s.max_abs_error, 100 * s.median_error);
  if (oom) std::printf(" %4zu", s.out_of_memory);
  std::printf("\n");
}

// The files a --dataset names: the file itself, or every *.json in a directory (sorted).
core::Result<std::vector<std::string>> DatasetFiles(const std::string& ref) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(ref, ec)) return std::vector<std::string>{ref};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(ref, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path().string());
  if (ec) return core::Status::IoError(ref + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) return core::Status::InvalidArgument(ref + ": directory holds no .json files");
  return files;
}

// Loads every file with `load` (core::LoadPublishedRuns or LoadPublishedMemory), naming each
// record's dataset by its file and each skipped record by file and id; `also`, if given, loads
// more records of another kind from the same text (each file read once). Returns the exit code of
// a failure (2: unreadable, 1: not a dataset; said on stderr), 0 on success.
template <typename Record, typename Load, typename AlsoRecord = Record>
int LoadDatasets(const std::vector<std::string>& files, Load load, std::vector<Record>* records,
                 std::vector<std::string>* skipped,
                 core::Result<std::vector<AlsoRecord>> (*also)(const std::string&) = nullptr,
                 std::vector<AlsoRecord>* also_records = nullptr) {
  for (const auto& file : files) {
    auto text = core::ReadTextFile(file);
    if (!text.ok()) {
      std::cerr << "error: --dataset: " << text.status().message() << "\n";
      return 2;
    }
    std::vector<std::string> skipped_here;
    auto loaded = load(*text, &skipped_here);
    if (!loaded.ok()) {
      std::cerr << "error: --dataset: " << file << ": " << loaded.status().message() << "\n";
      return 1;
    }
    const std::string name = std::filesystem::path(file).filename().string();
    for (auto& r : *loaded) {
      records->push_back(std::move(r));
      records->back().dataset = name;
    }
    for (auto& s : skipped_here) skipped->push_back(name + ": " + s);
    if (also == nullptr) continue;
    auto more = also(*text);
    if (!more.ok()) {
      std::cerr << "error: --dataset: " << file << ": " << more.status().message() << "\n";
      return 1;
    }
    for (auto& r : *more) {
      also_records->push_back(std::move(r));
      also_records->back().dataset = name;
    }
  }
  return 0;
}

// The scenario of a record as a plan file (`meshplan report --plan FILE` reads it back).
nlohmann::ordered_json PlanJson(const core::Scenario& sc) {
  core::PlanFile pf;
  pf.plan = sc.plan;
  pf.model = sc.model;
  pf.gpu = sc.gpu;
  pf.cluster = sc.cluster;
  return nlohmann::ordered_json::parse(core::PlanFileToJson(pf));
}

// --record ID keeps the one record of that id (published runs or memory peaks alike) and
// --plan-out FILE writes its scenario as a plan file (`meshplan report --plan FILE --ops`: where
// its predicted time goes). Returns the exit code of a failure (said on stderr), 0 on success.
template <typename Record>
int SelectRecord(const std::string& id, const std::string& plan_out, const std::vector<std::string>& skipped,
                 std::vector<Record>* records) {
  if (id.empty()) {
    if (!plan_out.empty()) {
      std::cerr << "error: --plan-out: needs --record ID (the one record whose plan to write)\n";
      return 2;
    }
    return 0;
  }
  std::vector<Record> kept;
  for (auto& r : *records)
    if (r.id == id) kept.push_back(std::move(r));
  if (kept.empty()) {
    for (const auto& s : skipped)
      if (s.find(": " + id + ":") != std::string::npos) {
        std::cerr << "error: --record: " << id << " is skipped: " << s << "\n";
        return 1;
      }
    std::cerr << "error: --record: no record '" << id << "' in the datasets (" << records->size() << " records)\n";
    return 2;
  }
  *records = std::move(kept);
  if (!plan_out.empty()) {
    if (core::Status st = core::WriteTextFileAtomically(plan_out, PlanJson(records->front().scenario).dump(2) + "\n");
        !st.ok()) {
      std::cerr << "error: --plan-out: " << st.message() << "\n";
      return 2;
    }
  }
  return 0;
}

// The groups of a record, and of a summary, as JSON.
nlohmann::ordered_json RecordGroupsJson(const sim::ValidationRecord& r) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::object();
  for (const auto& [dim, value] : r.groups) groups[dim] = value;
  return groups;
}
nlohmann::ordered_json GroupsJson(const sim::ValidationSummary& v) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& g : v.groups) {
    nlohmann::ordered_json gj = SummaryJson(g.summary);
    gj["dimension"] = g.dimension;
    gj["value"] = g.value;
    groups.push_back(gj);
  }
  return groups;
}

// The fit verdict (core::FitVerdict) from a record's two flags (sim::ValidationRecord).
core::FitVerdict VerdictOf(bool fits, bool tight) {
  return tight ? core::FitVerdict::kTight : fits ? core::FitVerdict::kFits : core::FitVerdict::kDoesNotFit;
}
const char* FitName(bool fits, bool tight) { return core::FitVerdictName(VerdictOf(fits, tight)); }

// What a record's line ends with: nothing when the plan fits, else the verdict.
const char* FitMark(bool fits, bool tight) {
  switch (VerdictOf(fits, tight)) {
    case core::FitVerdict::kFits: return "";
    case core::FitVerdict::kTight: return "  tight";
    case core::FitVerdict::kDoesNotFit: return "  does not fit";
  }
  return "";
}

// With --record, the one record's assumptions under its line: how its plan was read from the
// source, its launch file and its stack, and what of its recipe is not modelled.
void PrintAssumptions(const std::string& record, const std::vector<std::string>& assumptions) {
  if (record.empty()) return;
  std::printf("# assumptions of %s:\n", record.c_str());
  for (const auto& a : assumptions) std::printf("#   - %s\n", a.c_str());
}

// A record's common fields: `measured_key` names the source's value ("published" tokens/s, or the
// "measured" memory) and `total_key` the predicted worst-stage memory.
nlohmann::ordered_json RecordJson(const sim::ValidationRecord& r, const char* metric, const char* measured_key,
                                  const char* total_key) {
  return {{"id", r.id},
          {"metric", metric},
          {measured_key, r.published},
          {"predicted", r.predicted},
          {"error", r.error},
          {"printed", r.printed},
          {"conversion", r.conversion},
          {"stack", r.stack},
          {"fits", r.fits},
          {"fit", FitName(r.fits, r.tight)},
          {total_key, r.memory_gib},
          {"groups", RecordGroupsJson(r)},
          {"assumptions", r.assumptions}};
}

// The group table and the closing line, shared by both modes.
void PrintGroups(const sim::ValidationSummary& v, const char* sign_meaning) {
  // No record to judge (a --record whose run printed only whether it fitted): no error figures,
  // where a table of zeros would read as "0.0% off".
  if (v.all.n == 0) {
    std::printf("# no measured value among these records: no error to summarise\n");
    return;
  }
  std::printf("# %-40s %4s %8s %8s %8s %8s %4s\n", "group", "n", "median", "p90", "max", "signed", "oom");
  PrintSummaryLine("all", v.all);
  for (const auto& g : v.groups) PrintSummaryLine((g.dimension + " " + g.value).c_str(), g.summary);
  std::printf("# |error| median %.1f%%, p90 %.1f%%, mean %.1f%%, max %.1f%%; signed median %+.1f%% (> 0: %s)\n",
              100 * v.all.median_abs_error, 100 * v.all.p90_abs_error, 100 * v.all.mean_abs_error,
              100 * v.all.max_abs_error, 100 * v.all.median_error, sign_meaning);
}

nlohmann::ordered_json ComparisonsJson(const sim::ComparisonSummary& c) {
  nlohmann::ordered_json pairs = nlohmann::ordered_json::array();
  for (const sim::ComparisonRecord& p : c.pairs)
    pairs.push_back({{"axis", p.axis},
                     {"first", p.first},
                     {"second", p.second},
                     {"change", p.change},
                     {"published_ratio", p.published_ratio},
                     {"predicted_ratio", p.predicted_ratio},
                     {"error", p.error}});
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const sim::GroupSummary& g : c.axes) {
    nlohmann::ordered_json a = SummaryJson(g.summary);
    a.erase("out_of_memory");
    a["axis"] = g.value;
    axes.push_back(a);
  }
  nlohmann::ordered_json summary = SummaryJson(c.all);
  summary.erase("out_of_memory");
  return {{"summary", summary}, {"axes", axes}, {"pairs", pairs}};
}

// After the groups: the what-if pairs per axis (every pair with --pairs). `what` is the
// ratio's quantity and `sign_meaning` what an error above zero says.
void PrintComparisons(const sim::ComparisonSummary& c, bool each, const char* what, const char* sign_meaning) {
  std::printf(
      "#\n# comparisons: pairs of runs measured together (one table, stack, model, GPU and cluster) whose plans "
      "differ in one thing; the ratio of the second to the first (%s), published vs predicted (--pairs lists them)\n",
      what);
  if (c.pairs.empty()) {
    std::printf("# no pairs: no two of these runs are of one table and differ in one thing\n");
    return;
  }
  if (each) {
    std::printf("# %-11s %-46s %-46s %9s %9s %8s  %s\n", "axis", "first", "second", "published", "predicted", "error",
                "change");
    for (const sim::ComparisonRecord& p : c.pairs)
      std::printf("  %-11s %-46s %-46s %9.3f %9.3f %+7.1f%%  %s\n", p.axis.c_str(), p.first.c_str(), p.second.c_str(),
                  p.published_ratio, p.predicted_ratio, 100 * p.error, p.change.c_str());
  }
  std::printf("# %-40s %4s %8s %8s %8s %8s\n", "axis", "n", "median", "p90", "max", "signed");
  PrintSummaryLine("all", c.all, false);
  for (const sim::GroupSummary& g : c.axes) PrintSummaryLine(g.value.c_str(), g.summary, false);
  std::printf(
      "# %zu pairs: |error| of the ratio median %.1f%%, p90 %.1f%%, max %.1f%%; signed median %+.1f%% (> 0: %s)\n",
      c.all.n, 100 * c.all.median_abs_error, 100 * c.all.p90_abs_error, 100 * c.all.max_abs_error,
      100 * c.all.median_error, sign_meaning);
}

nlohmann::ordered_json RepeatsJson(const sim::RepeatSummary& r) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const sim::RepeatGroup& g : r.groups)
    groups.push_back({{"ids", g.ids},
                      {"published_min", g.published_min},
                      {"published_max", g.published_max},
                      {"predicted", g.predicted},
                      {"spread", g.spread},
                      {"floor", g.floor}});
  auto summary = [](const sim::ErrorSummary& e) {
    return nlohmann::ordered_json{
        {"median", e.median_abs_error}, {"p90", e.p90_abs_error}, {"mean", e.mean_abs_error}, {"max", e.max_abs_error}};
  };
  return {{"scenarios", r.groups.size()},
          {"runs", r.runs},
          {"spread", summary(r.spread)},
          {"floor", summary(r.floor)},
          {"groups", groups}};
}

// After the pairs: the scenarios printed more than once (sim::FindRepeats), each with --repeats.
// `unit` is the published values' unit.
void PrintRepeats(const sim::RepeatSummary& r, bool each, const char* unit) {
  std::printf(
      "#\n# repeats: runs of one scenario printed more than once (every model, GPU, cluster and plan field equal, "
      "one prediction; other tables, releases, dates or submitters): what their published values spread no model of "
      "the scenario removes (--repeats lists them)\n");
  if (r.groups.empty()) {
    std::printf("# no repeats: no scenario of these runs is printed twice\n");
    return;
  }
  if (each) {
    std::printf("# %7s %7s %11s %11s %11s  %s\n", "spread", "floor", "predicted", "min", "max", "runs");
    for (const sim::RepeatGroup& g : r.groups) {
      std::string ids;
      for (const std::string& id : g.ids) ids += (ids.empty() ? "" : " ") + id;
      std::printf("  %6.1f%% %6.1f%% %11.4g %11.4g %11.4g  %s\n", 100 * g.spread, 100 * g.floor, g.predicted,
                  g.published_min, g.published_max, ids.c_str());
    }
  }
  std::printf(
      "# %zu scenario%s, %zu runs (%s): published max/min - 1 median %.1f%%, p90 %.1f%%, max %.1f%%; the least largest "
      "|error| one prediction can have on a scenario's runs, (max - min)/(max + min): median %.1f%%, p90 %.1f%%, max "
      "%.1f%%\n",
      r.groups.size(), r.groups.size() == 1 ? "" : "s", r.runs, unit, 100 * r.spread.median_abs_error,
      100 * r.spread.p90_abs_error, 100 * r.spread.max_abs_error, 100 * r.floor.median_abs_error,
      100 * r.floor.p90_abs_error, 100 * r.floor.max_abs_error);
}

nlohmann::ordered_json StepSplitJson(const sim::StepSplitSummary& s) {
  nlohmann::ordered_json series = nlohmann::ordered_json::array();
  for (const sim::StepSplitSeries& g : s.series)
    series.push_back({{"ids", g.ids},
                      {"microbatches", g.microbatches},
                      {"published_step_s", g.published_step_s},
                      {"predicted_step_s", g.predicted_step_s},
                      {"published_t_s", g.published_t},
                      {"published_f_s", g.published_f},
                      {"predicted_t_s", g.predicted_t},
                      {"predicted_f_s", g.predicted_f},
                      {"published_residual", g.published_residual}});
  return {{"series_count", s.series.size()},
          {"runs", s.runs},
          {"t_error", {{"median", s.t.median_abs_error}, {"p90", s.t.p90_abs_error}, {"signed", s.t.median_error}}},
          {"median_f_gap_s", s.median_f_gap_s},
          {"series", series}};
}

// After the repeats: the strong-scaling series split as step = m t + F (sim::SplitSteps), each
// with --step-split.
void PrintStepSplit(const sim::StepSplitSummary& s, bool each) {
  std::printf(
      "#\n# step split: strong-scaling series (runs alike but for the GPUs, the data-parallel size and the global "
      "batch; 3 or more whose microbatches m a pipeline span a factor of 2 or more) fitted as step = m t + F, "
      "published and predicted: t what a microbatch adds, F what a step costs whatever its microbatches "
      "(--step-split lists them)\n");
  if (s.series.empty()) {
    std::printf(
        "# no series: no plan of these runs is measured three times over microbatch counts a factor of 2 apart\n");
    return;
  }
  if (each) {
    std::printf("# %8s %8s %8s %8s %6s  %s\n", "t pub", "t pred", "F pub", "F pred", "resid",
                "runs (m: published / predicted step, s)");
    for (const sim::StepSplitSeries& g : s.series) {
      std::string runs;
      for (size_t k = 0; k < g.ids.size(); ++k) {
        char one[64];
        std::snprintf(one, sizeof one, " (%lld: %.4g / %.4g)", static_cast<long long>(g.microbatches[k]),
                      g.published_step_s[k], g.predicted_step_s[k]);
        runs += (k ? ", " : "") + g.ids[k] + one;
      }
      std::printf("  %8.4f %8.4f %8.3f %8.3f %5.1f%%  %s\n", g.published_t, g.predicted_t, g.published_f, g.predicted_f,
                  100 * g.published_residual, runs.c_str());
    }
  }
  std::printf(
      "# %zu series, %zu runs: predicted t against published |error| median %.1f%%, p90 %.1f%%, signed median "
      "%+.1f%% (> 0: a microbatch predicted longer); predicted F - published F median %+.3f s (< 0: a step cost "
      "the model lacks)\n",
      s.series.size(), s.runs, 100 * s.t.median_abs_error, 100 * s.t.p90_abs_error, 100 * s.t.median_error,
      s.median_f_gap_s);
}

// --accuracy-out FILE: the summary's groups as an accuracy table (sim::AccuracyTable: what
// `report` shows of a plan's groups), written through a temporary file. Returns the exit code of
// a failure (said on stderr), 0 on success.
struct AccuracyOut {
  std::string path;     // empty: not asked
  std::string made_by;  // the command, as typed
};
int WriteAccuracy(const AccuracyOut& out, const sim::ValidationSummary& v, const sim::ComparisonSummary& comparisons,
                  const sim::RepeatSummary& repeated, const sim::StepSplitSummary& split, const char* metric,
                  const std::string& profile, const std::vector<std::string>& files) {
  if (out.path.empty()) return 0;
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(std::filesystem::path(f).filename().string());
  sim::AccuracyTable t = sim::AccuracyTableOf(v, metric, out.made_by, profile, names);
  t.comparisons = sim::ComparisonGroupsOf(comparisons);
  t.repeats = sim::AccuracyRepeatsOf(repeated);
  t.step_split = sim::AccuracyStepSplitOf(split);
  if (core::Status st = core::WriteTextFileAtomically(out.path, sim::AccuracyTableToJson(t)); !st.ok()) {
    std::cerr << "error: --accuracy-out: " << st.message() << "\n";
    return 2;
  }
  std::cerr << "wrote " << out.path << " (" << t.all.n << " runs, " << t.groups.size() << " groups)\n";
  return 0;
}

// validate --memory: measured per-GPU peaks against the memory model (sim::ValidateMemory); the
// profile's memory overheads (CUDA context, workspaces, NCCL buffers, fragmentation) are used.
int RunMemoryValidation(const std::vector<std::string>& files, const std::string& format, const core::Profile& profile,
                        const std::string& record, const std::string& plan_out, const AccuracyOut& accuracy_out,
                        bool pairs, bool repeats) {
  std::vector<core::PublishedMemory> records;
  std::vector<std::string> skipped;
  if (int rc = LoadDatasets(files, core::LoadPublishedMemory, &records, &skipped); rc != 0) return rc;
  if (int rc = SelectRecord(record, plan_out, skipped, &records); rc != 0) return rc;
  const sim::ValidationSummary v = sim::ValidateMemory(records, profile.memory);
  // The records with a peak, in v.records' order; those with only a published outcome are in
  // v.verdicts (sim::ValidateMemory keeps both in input order).
  std::vector<const core::PublishedMemory*> peaks, outcomes;
  for (const auto& r : records) (r.outcome == core::PublishedMemory::Outcome::kPeak ? peaks : outcomes).push_back(&r);
  const sim::ComparisonSummary comparisons = sim::ComparePeaks(records, v);
  const sim::RepeatSummary repeated = sim::RepeatedPeaks(records, v);
  if (int rc = WriteAccuracy(accuracy_out, v, comparisons, repeated, sim::StepSplitSummary{}, "memory_gib",
                             profile.name, files);
      rc != 0)
    return rc;
  auto outcome_name = [](bool fits) {
    return core::FitVerdictName(fits ? core::FitVerdict::kFits : core::FitVerdict::kDoesNotFit);
  };
  auto predicted_name = [](const sim::VerdictRecord& vr) { return core::FitVerdictName(vr.predicted_verdict); };
  if (format == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < v.records.size(); ++i) {
      nlohmann::ordered_json rec = RecordJson(v.records[i], "memory_gib", "measured", "total_gib");
      rec["plan"] = PlanJson(peaks[i]->scenario);
      out.push_back(rec);
    }
    nlohmann::ordered_json verdicts = nlohmann::ordered_json::array();
    for (size_t i = 0; i < v.verdicts.size(); ++i) {
      const sim::VerdictRecord& vr = v.verdicts[i];
      nlohmann::ordered_json groups = nlohmann::ordered_json::object();
      for (const auto& [dim, value] : vr.groups) groups[dim] = value;
      verdicts.push_back({{"id", vr.id},
                          {"published", outcome_name(vr.published_fits)},
                          {"predicted", predicted_name(vr)},
                          {"right", vr.Right()},
                          {"total_gib", vr.predicted_gib},
                          {"capacity_gib", vr.capacity_gib},
                          {"stack", vr.stack},
                          {"groups", groups},
                          {"assumptions", vr.assumptions},
                          {"plan", PlanJson(outcomes[i]->scenario)}});
    }
    nlohmann::ordered_json j;
    j["datasets"] = files;
    j["profile"] = profile.name;
    j["metric"] = "memory_gib";
    j["records"] = out;
    j["summary"] = SummaryJson(v.all);
    j["groups"] = GroupsJson(v);
    j["verdicts"] = verdicts;
    j["verdict_summary"] = {
        {"n", v.verdicts.size()}, {"right", v.verdicts.size() - v.verdicts_wrong}, {"wrong", v.verdicts_wrong}};
    j["comparisons"] = ComparisonsJson(comparisons);
    j["repeats"] = RepeatsJson(repeated);
    j["skipped"] = skipped;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("# meshplan validate --memory (profile %s): per-GPU peak memory, measured vs predicted (GiB)\n",
              profile.name.c_str());
  for (const auto& f : files) std::printf("# dataset %s\n", f.c_str());
  std::printf("# %-58s %-10s %9s %9s %8s\n", "record", "measured", "GiB", "predicted", "error");
  for (size_t i = 0; i < v.records.size(); ++i) {
    const auto& r = v.records[i];
    std::printf("  %-58s %-10s %9.1f %9.1f %+7.1f%%%s\n", r.id.c_str(),
                peaks[i]->device     ? "device"
                : peaks[i]->reserved ? "reserved"
                                     : "allocated",
                r.published, r.predicted, 100 * r.error, FitMark(r.fits, r.tight));
  }
  if (v.records.size() == 1) PrintAssumptions(record, v.records.front().assumptions);
  if (!v.verdicts.empty()) {
    std::printf(
        "# published outcomes (no peak printed) against the fit verdict: the worst stage on the GPU, CUDA context "
        "and NCCL buffers included, within its memory (GiB); out of memory when its peak allocated, context and NCCL "
        "buffers are over it, tight when only the allocator's reserve is (a tight plan is predicted to run)\n");
    std::printf("# %-58s %-13s %-13s %9s %9s %s\n", "record", "published", "predicted", "GiB", "capacity", "verdict");
    for (const auto& vr : v.verdicts)
      std::printf(
          "  %-58s %-13s %-13s %9.1f %9.1f %s\n", vr.id.c_str(), outcome_name(vr.published_fits), predicted_name(vr),
          vr.predicted_gib, vr.capacity_gib,
          vr.Right() ? "right" : (vr.predicted_fits ? "wrong (predicted to fit)" : "wrong (predicted out of memory)"));
    std::printf("# %zu published outcomes: %zu right, %zu wrong\n", v.verdicts.size(),
                v.verdicts.size() - v.verdicts_wrong, v.verdicts_wrong);
  }
  std::printf(
      "# predicted: the worst pipeline stage, less the CUDA context and NCCL's buffers (outside the "
      "framework's allocator), less fragmentation and FSDP2's idle stream pools for peak allocated "
      "(docs/memory.md)\n");
  std::printf(
      "# %zu records from %zu file(s), %zu skipped (no model, GPU preset, plan, measured peak or outcome; "
      "--format json lists them)\n",
      v.all.n, files.size(), skipped.size());
  PrintGroups(v, "predicted too large");
  PrintComparisons(comparisons, pairs, "peak GiB", "the second plan predicted the larger");
  PrintRepeats(repeated, repeats, "peak GiB");
  return 0;
}

}  // namespace

void AddValidateCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand(
      "validate",
      "Predict published training runs and report the error in tokens/s per GPU (--memory: in measured peak memory)");
  auto datasets = std::make_shared<std::vector<std::string>>();
  auto format = std::make_shared<std::string>("table");
  auto profile_ref = std::make_shared<std::string>("default");
  auto db = std::make_shared<std::string>();
  cmd->add_option("--dataset", *datasets,
                  "Records in the format of shared/validation/published.json: a file, or a directory of them; "
                  "repeat for several")
      ->required();
  cmd->add_option("--format", *format, "table|json");
  cmd->add_option("--profile", *profile_ref,
                  "Calibration profile: default, a JSON file, or a name fitted by meshplan calibrate (in --db); "
                  "errors are shown with and without it");
  auto memory = std::make_shared<bool>(false);
  cmd->add_flag(
      "--memory", *memory,
      "Judge measured per-GPU memory peaks instead (records with measured.peak_allocated_gib or "
      "reserved_gib, e.g. shared/validation/memory_measured.json, or device_gib as nvidia-smi shows it), in GiB "
      "against the memory model; "
      "records with measured.outcome out_of_memory|fits and no peak are judged by the fit verdict");
  auto record = std::make_shared<std::string>();
  auto plan_out = std::make_shared<std::string>();
  cmd->add_option("--record", *record, "Only the record with this id");
  cmd->add_option("--plan-out", *plan_out,
                  "With --record: write the record's scenario as a plan file (meshplan report --plan FILE --ops "
                  "shows where its predicted time goes)");
  auto pairs = std::make_shared<bool>(false);
  cmd->add_flag("--pairs", *pairs,
                "List every pair of runs measured together whose plans differ in one thing (precision, GPUs, micro "
                "batch, sequence, recomputation, layout) with its published and predicted ratio (the per-axis summary "
                "is always shown; docs/validation.md)");
  auto repeats = std::make_shared<bool>(false);
  cmd->add_flag("--repeats", *repeats,
                "List every scenario printed more than once (the same model, GPU, cluster and plan in other tables, "
                "releases or dates) with the spread of its published values (the summary is always shown; "
                "docs/validation.md)");
  auto step_split = std::make_shared<bool>(false);
  cmd->add_flag("--step-split", *step_split,
                "List every strong-scaling series (runs alike but for the GPUs, the data-parallel size and the "
                "global batch) with its steps split as step = microbatches x t + F, published and predicted: whether "
                "the error is per microbatch or per step (the summary is always shown; docs/validation.md)");
  auto accuracy_out = std::make_shared<std::string>();
  cmd->add_option("--accuracy-out", *accuracy_out,
                  "Write the groups' errors as an accuracy table (what `report` shows of a plan's groups: "
                  "presets/accuracy/step.json from the throughput corpus, memory.json with --memory; "
                  "docs/validation.md)");
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
    AccuracyOut acc;
    if (!accuracy_out->empty()) {
      if (*profile_ref != "default") {
        std::cerr << "error: --accuracy-out: the accuracy table is the default profile's (report shows it for that "
                     "profile); drop --profile\n";
        *exit_code = 2;
        return;
      }
      if (!record->empty()) {
        std::cerr << "error: --accuracy-out: a table of every record; drop --record\n";
        *exit_code = 2;
        return;
      }
      acc.path = *accuracy_out;
      acc.made_by = std::string("meshplan validate") + (*memory ? " --memory" : "");
      for (const auto& ref : *datasets) acc.made_by += " --dataset " + ref;
      acc.made_by += " --accuracy-out " + *accuracy_out;
    }
    std::vector<std::string> files;
    for (const auto& ref : *datasets) {
      auto found = DatasetFiles(ref);
      if (!found.ok()) {
        std::cerr << "error: --dataset: " << found.status().message() << "\n";
        *exit_code = 2;
        return;
      }
      files.insert(files.end(), found->begin(), found->end());
    }
    if (*memory) {
      *exit_code = RunMemoryValidation(files, *format, *profile, *record, *plan_out, acc, *pairs, *repeats);
      return;
    }
    std::vector<core::PublishedRun> runs;
    std::vector<std::string> skipped;
    // Per-layer timings (measured.other.forward_ms and backward_ms), from the same files, are
    // judged in their own table: not skipped, and not in the runs' groups (they time one layer,
    // not a step).
    std::vector<core::PublishedLayerTiming> layers;
    if (int rc =
            LoadDatasets(files, core::LoadPublishedRuns, &runs, &skipped, &core::LoadPublishedLayerTimings, &layers);
        rc != 0) {
      *exit_code = rc;
      return;
    }
    for (const auto& l : layers)
      std::erase_if(skipped, [&](const std::string& s) { return s.rfind(l.dataset + ": " + l.id + ": ", 0) == 0; });
    const bool layer_record =
        std::any_of(layers.begin(), layers.end(), [&](const core::PublishedLayerTiming& l) { return l.id == *record; });
    if (layer_record) {
      if (int rc = SelectRecord(*record, *plan_out, skipped, &layers); rc != 0) {
        *exit_code = rc;
        return;
      }
      runs.clear();
    } else {
      if (int rc = SelectRecord(*record, *plan_out, skipped, &runs); rc != 0) {
        *exit_code = rc;
        return;
      }
      if (!record->empty()) layers.clear();
    }
    const sim::ValidationSummary v = sim::ValidateRuns(runs, *profile);
    const sim::LayerTimingSummary lt = sim::ValidateLayerTimings(layers, *profile);
    const sim::ComparisonSummary comparisons = sim::CompareRuns(runs, v);
    const sim::RepeatSummary repeated = sim::RepeatedRuns(runs, v);
    const sim::StepSplitSummary split = sim::SplitRunSteps(runs, v);
    if (int rc = WriteAccuracy(acc, v, comparisons, repeated, split, "tokens_per_s_per_gpu", profile->name, files);
        rc != 0) {
      *exit_code = rc;
      return;
    }
    // With a calibrated profile, the built-in defaults too: the error with and without it.
    const bool both = *profile_ref != "default";
    const sim::ValidationSummary v0 = both ? sim::ValidateRuns(runs, core::Profile{}) : v;
    const sim::LayerTimingSummary lt0 = both ? sim::ValidateLayerTimings(layers, core::Profile{}) : lt;
    if (*format == "json") {
      nlohmann::ordered_json records = nlohmann::ordered_json::array();
      for (size_t i = 0; i < v.records.size(); ++i) {
        const auto& r = v.records[i];
        nlohmann::ordered_json rec = RecordJson(r, "tokens_per_s_per_gpu", "published", "memory_gib");
        // Where the predicted step goes, and the scenario predicted as a plan file that
        // `meshplan report --plan FILE` (and simulate, explain) read back.
        const sim::StepBreakdown& b = r.breakdown;
        rec["step_s"] = r.step_s;
        nlohmann::ordered_json breakdown = nlohmann::ordered_json::object();
        for (const sim::BreakdownTerm& t : sim::BreakdownTerms(b)) breakdown[t.key] = t.seconds;
        rec["breakdown_s"] = breakdown;
        rec["plan"] = PlanJson(runs[i].scenario);
        if (both) rec["predicted_default"] = v0.records[i].predicted, rec["error_default"] = v0.records[i].error;
        records.push_back(rec);
      }
      nlohmann::ordered_json j;
      j["datasets"] = files;
      j["profile"] = profile->name;
      j["metric"] = "tokens_per_s_per_gpu";
      j["records"] = records;
      j["summary"] = SummaryJson(v.all);
      j["groups"] = GroupsJson(v);
      if (both) j["summary_default"] = SummaryJson(v0.all);
      j["comparisons"] = ComparisonsJson(comparisons);
      j["repeats"] = RepeatsJson(repeated);
      j["step_split"] = StepSplitJson(split);
      nlohmann::ordered_json layer_records = nlohmann::ordered_json::array();
      for (size_t i = 0; i < lt.records.size(); ++i) {
        const sim::LayerTimingRecord& r = lt.records[i];
        nlohmann::ordered_json rec;
        rec["id"] = r.id;
        rec["dataset"] = r.dataset;
        rec["stack"] = r.stack;
        rec["published_forward_ms"] = 1e3 * r.published_forward_s;
        rec["published_backward_ms"] = 1e3 * r.published_backward_s;
        rec["predicted_forward_ms"] = 1e3 * r.predicted_forward_s;
        rec["predicted_backward_ms"] = 1e3 * r.predicted_backward_s;
        rec["forward_error"] = r.forward_error;
        rec["backward_error"] = r.backward_error;
        rec["error"] = r.error;
        if (both) rec["error_default"] = lt0.records[i].error;
        rec["assumptions"] = r.assumptions;
        rec["plan"] = PlanJson(layers[i].scenario);
        layer_records.push_back(rec);
      }
      j["layer_timings"] = layer_records;
      j["layer_timings_summary"] = SummaryJson(lt.all);
      if (both) j["layer_timings_summary_default"] = SummaryJson(lt0.all);
      j["skipped"] = skipped;
      std::cout << j.dump(2) << "\n";
      *exit_code = 0;
      return;
    }
    std::printf("# meshplan validate (profile %s): tokens/s per GPU, published vs predicted\n", profile->name.c_str());
    for (const auto& f : files) std::printf("# dataset %s\n", f.c_str());
    // --record naming a per-layer timing: that table alone.
    const bool runs_table = !layer_record;
    if (runs_table && both) {
      std::printf("# %-46s %-20s %10s %10s %8s %10s %8s\n", "record", "stack", "published", "predicted", "error",
                  "default", "error");
      for (size_t i = 0; i < v.records.size(); ++i) {
        const auto& r = v.records[i];
        std::printf("  %-46s %-20s %10.4g %10.4g %+7.1f%% %10.4g %+7.1f%%%s\n", r.id.c_str(), r.stack.c_str(),
                    r.published, r.predicted, 100 * r.error, v0.records[i].predicted, 100 * v0.records[i].error,
                    r.tight  ? "  (tight)"
                    : r.fits ? ""
                             : "  (does not fit)");
      }
    } else if (runs_table) {
      std::printf("# %-46s %-20s %10s %10s %8s %8s\n", "record", "stack", "published", "predicted", "error", "GiB");
      for (const auto& r : v.records)
        std::printf("  %-46s %-20s %10.4g %10.4g %+7.1f%% %8.1f%s\n", r.id.c_str(), r.stack.c_str(), r.published,
                    r.predicted, 100 * r.error, r.memory_gib, FitMark(r.fits, r.tight));
    }
    if (runs_table && v.records.size() == 1) PrintAssumptions(*record, v.records.front().assumptions);
    if (runs_table) {
      std::printf(
          "# published: what the source prints, turned into tokens/s per GPU with its batch and its own FLOP "
          "count (--format json: printed, conversion)\n");
      std::printf(
          "# %zu records from %zu file(s), %zu skipped (no model, GPU preset, plan or measurement; "
          "--format json lists them)\n",
          v.all.n, files.size(), skipped.size());
      PrintGroups(v, "too fast");
      PrintComparisons(comparisons, *pairs, "tokens/s per GPU", "the second plan predicted the faster");
      PrintRepeats(repeated, *repeats, "tokens/s per GPU");
      PrintStepSplit(split, *step_split);
      if (both)
        std::printf("# with the built-in defaults: |error| median %.1f%%, p90 %.1f%%, max %.1f%%\n",
                    100 * v0.all.median_abs_error, 100 * v0.all.p90_abs_error, 100 * v0.all.max_abs_error);
    }
    if (!lt.records.empty()) {
      std::printf(
          "#\n# per-layer timings: one dense layer, one microbatch, one rank; forward and backward (with its "
          "recompute) in ms, published vs predicted; not in the groups above\n");
      std::printf("# %-46s %-20s %8s %8s %8s %8s %8s\n", "record", "stack", "fwd", "pred", "bwd", "pred", "error");
      for (const sim::LayerTimingRecord& r : lt.records)
        std::printf("  %-46s %-20s %8.2f %8.2f %8.2f %8.2f %+7.1f%%\n", r.id.c_str(), r.stack.c_str(),
                    1e3 * r.published_forward_s, 1e3 * r.predicted_forward_s, 1e3 * r.published_backward_s,
                    1e3 * r.predicted_backward_s, 100 * r.error);
      std::printf(
          "# %zu layer timings: |error| of forward + backward median %.1f%%, p90 %.1f%%, max %.1f%%; signed median "
          "%+.1f%% (> 0: too fast)\n",
          lt.all.n, 100 * lt.all.median_abs_error, 100 * lt.all.p90_abs_error, 100 * lt.all.max_abs_error,
          100 * lt.all.median_error);
      if (both)
        std::printf("# layer timings with the built-in defaults: |error| median %.1f%%, max %.1f%%\n",
                    100 * lt0.all.median_abs_error, 100 * lt0.all.max_abs_error);
    }
    *exit_code = 0;
  });
}

}  // namespace meshplan::cli
