// libFuzzer harness: a plan file (`--plan`) through everything a user's plan goes through:
// ParsePlanFileJson, ResolvePlanFile (presets or embedded specs), ValidatePlan, and for a valid
// plan the memory model, the step model, its op table (report --ops: every time finite and >= 0),
// report's assumed-rate notes (each a sentence), the stream simulation (meshplan simulate, for
// plans of at most 20,000 pass ops: a finite step or an error) and the reliability estimate (a few
// Monte Carlo trials), so the work after the parser is fuzzed too: it must finish within the
// per-input time limit on anything that parses, or stop with an error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/defaults.h"
#include "core/diagnostics.h"
#include "core/failures.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/spec_json.h"
#include "core/validate.h"
#include "sim/des.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace mc = meshplan::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto file = mc::ParsePlanFileJson(text);
  if (!file.ok()) return 0;
  auto s = mc::ResolvePlanFile(*file);
  if (!s.ok()) return 0;
  mc::Diagnostics d;
  mc::ValidatePlan(s->plan, s->model, s->gpu, s->cluster, &d);
  if (d.has_errors()) return 0;
  static const mc::Profile profile;
  const mc::MemoryReport mem = mc::EstimateMemory(s->model, s->plan, s->gpu, profile.memory);
  // The fit verdict's invariants (core::FitVerdict): the least a stage can hold is within its
  // total, the verdict follows the two totals, and the search's path (the worst stage alone) gives
  // the same verdict and totals.
  if (mem.least_per_gpu_bytes > mem.per_gpu_bytes) __builtin_trap();
  if (mem.fits != (mem.verdict == mc::FitVerdict::kFits)) __builtin_trap();
  if ((mem.verdict == mc::FitVerdict::kDoesNotFit) != (mem.least_per_gpu_bytes > mem.capacity_bytes)) __builtin_trap();
  const mc::MemoryReport lean =
      mc::EstimateMemory(s->model, s->plan, s->gpu, profile.memory, mc::MemoryDetail::kTotalsOnly);
  if (lean.verdict != mem.verdict || lean.least_per_gpu_bytes != mem.least_per_gpu_bytes ||
      lean.per_gpu_bytes != mem.per_gpu_bytes)
    __builtin_trap();
  const meshplan::sim::StepEstimate step = meshplan::sim::EstimateStep(s->model, s->plan, s->gpu, s->cluster, profile);
  for (const meshplan::sim::CostedOpList& list :
       meshplan::sim::CostStepGraph(s->model, s->plan, s->gpu, s->cluster, profile))
    for (const meshplan::sim::CostedOp& row : list.ops)
      if (!(row.time_s >= 0) || !std::isfinite(row.time_s)) __builtin_trap();
  // report's "default:" lines: what the cost takes from assumed figures or reads beyond a measured
  // curve, each a sentence.
  for (const std::string& note : meshplan::sim::AssumedRates(profile, s->gpu, s->model, s->plan))
    if (note.empty()) __builtin_trap();
  const double pass_ops =
      static_cast<double>(s->plan.pp) * static_cast<double>(s->plan.vpp) * static_cast<double>(s->plan.Microbatches());
  if (pass_ops <= 20000) {
    const std::vector<meshplan::sim::StageStreams> streams =
        meshplan::sim::StageStreamCosts(s->model, s->plan, s->gpu, s->cluster, profile, step.stages);
    auto r = meshplan::sim::SimulateStreams(s->plan, streams, s->plan.Microbatches(), meshplan::sim::DesOptions{});
    if (r.ok() && (!(r->step_time_s >= 0) || !std::isfinite(r->step_time_s))) __builtin_trap();
  }
  static const mc::FailureModel failures = *mc::LoadFailureModel("llama3-405b");
  meshplan::sim::ReliabilityOptions opt;
  opt.tokens = mc::DefaultTrainingTokens(mem.params.total > 0 ? mem.params.total : 1);
  opt.trials = 20;
  if (step.tokens_per_s > 0) (void)meshplan::sim::EstimateReliability(*s, mem, step, failures, opt);
  return 0;
}
