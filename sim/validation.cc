#include "sim/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/memory.h"
#include "sim/accuracy.h"
#include "sim/step_model.h"

namespace meshplan::sim {

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

namespace {

// The step-time groups of a published run (StepGroupsOf: what a plan's report matches), after its
// file's; the stack always, even unnamed.
Groups GroupsOf(const core::PublishedRun& run) {
  Groups groups;
  if (!run.dataset.empty()) groups.emplace_back("dataset", run.dataset);
  for (auto& g : StepGroupsOf(run.scenario.gpu.name, run.scenario.model, run.scenario.plan, ""))
    groups.push_back(std::move(g));
  groups.emplace_back("stack", run.stack);
  return groups;
}

}  // namespace

ErrorSummary Summarize(const std::vector<const ValidationRecord*>& records) {
  std::vector<double> errors;
  for (const ValidationRecord* r : records) errors.push_back(r->error);
  ErrorSummary s = SummarizeErrors(errors);
  for (const ValidationRecord* r : records)
    if (r->OutOfMemory()) ++s.out_of_memory;
  return s;
}

ErrorSummary SummarizeErrors(std::vector<double> errors) {
  ErrorSummary s;
  std::vector<double> abs_errors;
  for (double e : errors) abs_errors.push_back(std::fabs(e));
  s.n = errors.size();
  if (s.n == 0) return s;
  std::sort(abs_errors.begin(), abs_errors.end());
  std::sort(errors.begin(), errors.end());
  s.median_abs_error = Quantile(abs_errors, 0.5);
  s.p90_abs_error = Quantile(abs_errors, 0.9);
  s.median_error = Quantile(errors, 0.5);
  for (double v : abs_errors) s.mean_abs_error += v;
  s.mean_abs_error /= static_cast<double>(s.n);
  s.max_abs_error = abs_errors.back();
  return s;
}

namespace {

// The overall and per-group summaries of out->records (groups by dimension in first-seen order,
// then value).
void SummarizeInto(ValidationSummary* out) {
  std::vector<const ValidationRecord*> all;
  std::map<std::pair<std::string, std::string>, std::vector<const ValidationRecord*>> by_group;
  std::vector<std::string> dimensions;
  for (const auto& r : out->records) {
    all.push_back(&r);
    for (const auto& g : r.groups) {
      if (std::find(dimensions.begin(), dimensions.end(), g.first) == dimensions.end()) dimensions.push_back(g.first);
      by_group[g].push_back(&r);
    }
  }
  out->all = Summarize(all);
  for (const auto& dim : dimensions)
    for (const auto& [key, members] : by_group)
      if (key.first == dim) out->groups.push_back({key.first, key.second, Summarize(members)});
  out->n = out->all.n;
  out->median_abs_error = out->all.median_abs_error;
  out->mean_abs_error = out->all.mean_abs_error;
  out->max_abs_error = out->all.max_abs_error;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

ValidationSummary ValidateMemory(const std::vector<core::PublishedMemory>& records, const core::MemoryOverheads& o) {
  ValidationSummary out;
  for (const auto& rec : records) {
    const auto& s = rec.scenario;
    const core::PlanSpec& p = s.plan;
    const core::MemoryReport mem = core::EstimateMemory(s.model, p, s.gpu, o, core::MemoryDetail::kFull);
    const std::string par = ParallelismOf(p);
    if (rec.outcome != core::PublishedMemory::Outcome::kPeak) {
      VerdictRecord v;
      v.id = rec.id;
      v.stack = rec.stack;
      v.published_fits = rec.outcome == core::PublishedMemory::Outcome::kFits;
      v.predicted_verdict = mem.verdict;
      v.predicted_fits = mem.verdict != core::FitVerdict::kDoesNotFit;
      v.predicted_gib = static_cast<double>(mem.per_gpu_bytes) / kGiB;
      v.capacity_gib = static_cast<double>(mem.capacity_bytes) / kGiB;
      if (!rec.dataset.empty()) v.groups.emplace_back("dataset", rec.dataset);
      v.groups.emplace_back("gpu", s.gpu.name);
      v.groups.emplace_back("parallelism", par);
      v.groups.emplace_back("stack", rec.stack);
      v.assumptions = rec.assumptions;
      if (!v.Right()) ++out.verdicts_wrong;
      out.verdicts.push_back(std::move(v));
      continue;
    }
    const core::StageMemory& st = rec.last_stage ? mem.stages.back() : mem.stages[static_cast<size_t>(mem.worst_stage)];
    // What the framework's allocator counts (core::PeakReservedBytes, PeakAllocatedBytes).
    const double reserved = static_cast<double>(core::PeakReservedBytes(st));
    const double allocated = static_cast<double>(core::PeakAllocatedBytes(st));
    ValidationRecord r;
    r.id = rec.id;
    char buf[160];
    const char* kind = rec.device ? "device (nvidia-smi)" : rec.reserved ? "reserved" : "allocated";
    std::snprintf(buf, sizeof buf, "peak %s %.4g GiB", kind, rec.measured_gib);
    r.printed = buf;
    const std::string stage = rec.last_stage ? "last stage" : "worst stage";
    r.conversion =
        "predicted: " + stage + " total" +
        (rec.device ? "" : " - CUDA context - NCCL buffers" + std::string(rec.reserved ? "" : " - fragmentation"));
    r.stack = rec.stack;
    r.published = rec.measured_gib;
    r.predicted = (rec.device ? static_cast<double>(st.total_bytes) : rec.reserved ? reserved : allocated) / kGiB;
    r.error = (r.predicted - r.published) / r.published;
    r.fits = mem.fits;
    r.tight = mem.verdict == core::FitVerdict::kTight;
    r.memory_gib = static_cast<double>(mem.per_gpu_bytes) / kGiB;
    r.model = s.model.name;
    r.gpu = s.gpu.name;
    r.gpus = p.gpus;
    if (!rec.dataset.empty()) r.groups.emplace_back("dataset", rec.dataset);
    for (auto& g : MemoryGroupsOf(s.gpu.name, s.model, p, "")) r.groups.push_back(std::move(g));
    r.groups.emplace_back("measured", rec.device ? "device" : rec.reserved ? "reserved" : "allocated");
    r.groups.emplace_back("stack", rec.stack);
    r.assumptions = rec.assumptions;
    out.records.push_back(std::move(r));
  }
  SummarizeInto(&out);
  return out;
}

ValidationSummary ValidateRuns(const std::vector<core::PublishedRun>& runs, const core::Profile& profile) {
  ValidationSummary out;
  for (const auto& run : runs) {
    const auto& s = run.scenario;
    const StepEstimate e = EstimateStep(s.model, s.plan, s.gpu, s.cluster, profile);
    const core::MemoryReport mem =
        core::EstimateMemory(s.model, s.plan, s.gpu, profile.memory, core::MemoryDetail::kTotalsOnly);
    ValidationRecord r;
    r.id = run.id;
    r.printed = run.printed;
    r.conversion = run.conversion;
    r.stack = run.stack;
    r.published = run.published;
    r.predicted = e.tokens_per_s_per_gpu;
    r.error = (r.predicted - r.published) / r.published;
    r.fits = mem.fits;
    r.tight = mem.verdict == core::FitVerdict::kTight;
    r.memory_gib = static_cast<double>(mem.per_gpu_bytes) / (1024.0 * 1024.0 * 1024.0);
    r.step_s = e.time_s;
    r.model = s.model.name;
    r.gpu = s.gpu.name;
    r.gpus = s.plan.gpus;
    r.breakdown = e.breakdown;
    r.groups = GroupsOf(run);
    r.assumptions = run.assumptions;
    out.records.push_back(std::move(r));
  }
  SummarizeInto(&out);
  return out;
}

LayerTimingSummary ValidateLayerTimings(const std::vector<core::PublishedLayerTiming>& timings,
                                        const core::Profile& profile) {
  LayerTimingSummary out;
  std::vector<double> errors;
  for (const auto& t : timings) {
    const auto& s = t.scenario;
    const StageTimes p = DenseLayerTimes(s.model, s.plan, s.gpu, s.cluster, profile);
    LayerTimingRecord r;
    r.id = t.id;
    r.dataset = t.dataset;
    r.stack = t.stack;
    r.published_forward_s = t.forward_s;
    r.published_backward_s = t.backward_s;
    r.predicted_forward_s = p.forward_s;
    r.predicted_backward_s = p.backward_input_s + p.backward_weight_s;
    r.forward_error = t.forward_s / r.predicted_forward_s - 1;
    r.backward_error = t.backward_s / r.predicted_backward_s - 1;
    r.error = (t.forward_s + t.backward_s) / (r.predicted_forward_s + r.predicted_backward_s) - 1;
    r.assumptions = t.assumptions;
    errors.push_back(r.error);
    out.records.push_back(std::move(r));
  }
  out.all = SummarizeErrors(std::move(errors));
  return out;
}

}  // namespace meshplan::sim
