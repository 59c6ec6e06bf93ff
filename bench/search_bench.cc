// Plan search throughput. Targets: >= 1,000,000 plan evaluations per second on the
// 2-core machine, and the full Llama-3-405B search on 16,384 H100s (seq 8192, gbs 2048) <= 2 s.
// Run: build/release/bench/meshplan_bench --benchmark_filter=Search
//   BM_SearchInnerEvaluation: one full evaluation (ValidatePlan + EstimateMemory + EstimateStep +
//     EstimateTraining) of the published 405B plan, one thread: items_per_second = evaluations/s/core.
//   BM_SearchLlama405B16k: the whole search (arg 0: every hardware thread; 1: one). Counters:
//     enumerated_per_s (every candidate, pruned or not), evaluated_per_s (fully costed), and the
//     counts of one search.
//   BM_SearchMixtral8x7B256: a MoE search with 7x the full evaluations.
#include <benchmark/benchmark.h>

#include "core/diagnostics.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/validate.h"
#include "sim/search.h"
#include "sim/step_model.h"

namespace {

using namespace meshplan;

struct Scenario405B {
  core::ModelSpec m = *core::LoadModel("llama3-405b");
  core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  core::GpuSpec g = *core::LoadGpu("h100-sxm");
  core::PlanSpec base;
  Scenario405B() {
    base.gpus = 16384;
    base.seq_len = 8192;
    base.global_batch = 2048;
  }
};

void BM_SearchInnerEvaluation(benchmark::State& state) {
  const Scenario405B s;
  core::PlanSpec p = s.base;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = core::Recompute::kSelective;
  p.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  const core::Profile prof;
  for (auto _ : state) {
    core::Diagnostics d;
    core::ValidatePlan(p, s.m, s.g, s.c, &d);
    const core::MemoryReport mem = core::EstimateMemory(s.m, p, s.g, prof.memory, core::MemoryDetail::kTotalsOnly);
    const sim::StepEstimate step = sim::EstimateStep(s.m, p, s.g, s.c, prof);
    const sim::TrainEstimate train = sim::EstimateTraining(step, p, s.g, s.c, 15e12);
    benchmark::DoNotOptimize(mem.per_gpu_bytes);
    benchmark::DoNotOptimize(train.days);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SearchInnerEvaluation);

// Runs the search once per iteration and reports one search's counts and the rates over all.
void RunSearch(benchmark::State& state, const core::ModelSpec& m, const core::GpuSpec& g, const core::ClusterSpec& c,
               const core::PlanSpec& base, int threads) {
  const core::Profile prof;
  sim::SearchOptions o;
  o.threads = threads;  // 0: every hardware thread
  sim::SearchStats last;
  double wall = 0;
  for (auto _ : state) {
    const sim::SearchResult r = sim::SearchPlans(m, g, c, base, prof, o);
    benchmark::DoNotOptimize(r.top.data());
    last = r.stats;
    wall += r.stats.wall_s;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["enumerated"] = static_cast<double>(last.enumerated);
  state.counters["pruned"] = static_cast<double>(last.Pruned());
  state.counters["memory_estimates"] = static_cast<double>(last.memory_estimates);
  state.counters["evaluated"] = static_cast<double>(last.evaluated);
  state.counters["lists_costed"] = static_cast<double>(last.lists_costed);
  state.counters["threads"] = last.threads;
  state.counters["wall_s"] = wall / n;
  state.counters["enumerated_per_s"] = static_cast<double>(last.enumerated) * n / wall;
  state.counters["estimated_per_s"] = static_cast<double>(last.memory_estimates) * n / wall;
  state.counters["evaluated_per_s"] = static_cast<double>(last.evaluated) * n / wall;
}

void BM_SearchLlama405B16k(benchmark::State& state) {
  const Scenario405B s;
  RunSearch(state, s.m, s.g, s.c, s.base, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_SearchLlama405B16k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// A MoE search with many more candidates: Mixtral 8x7B on 256 H100s (seq 4096, gbs 512), every
// hardware thread.
void BM_SearchMixtral8x7B256(benchmark::State& state) {
  core::PlanSpec base;
  base.gpus = 256;
  base.seq_len = 4096;
  base.global_batch = 512;
  RunSearch(state, *core::LoadModel("mixtral-8x7b"), *core::LoadGpu("h100-sxm"), *core::LoadCluster("dgx-h100"), base,
            0);
}
BENCHMARK(BM_SearchMixtral8x7B256)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
