// How long one memory estimate takes: the plan search (a later issue) evaluates millions.
// Run: build/release/bench/meshplan_bench --benchmark_filter=Memory
#include <benchmark/benchmark.h>

#include "core/memory.h"
#include "core/presets.h"
#include "core/profile.h"
#include "sim/step_model.h"

namespace {

using namespace meshplan::core;

void BM_MemoryLlama405BTp8Pp16(benchmark::State& state) {
  const ModelSpec m = *LoadModel("llama3-405b");
  const GpuSpec g = *LoadGpu("h100-sxm");
  PlanSpec p;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.gpus = 16384;
  p.zero = 1;
  p.sequence_parallel = true;
  p.seq_len = 8192;
  p.global_batch = 2048;
  for (auto _ : state) benchmark::DoNotOptimize(EstimateMemory(m, p, g));
}
BENCHMARK(BM_MemoryLlama405BTp8Pp16);

void BM_CountParamsDeepSeekV3(benchmark::State& state) {
  const ModelSpec m = *LoadModel("deepseek-v3");
  for (auto _ : state) benchmark::DoNotOptimize(CountParams(m));
}
BENCHMARK(BM_CountParamsDeepSeekV3);

}  // namespace

namespace {

// Llama 3 405B at TP 8 x PP 16 x DP 128 on 16,384 H100s, as the memory benchmark above lays it out.
PlanSpec Llama405BTp8Pp16(TpOverlap tp_overlap) {
  PlanSpec p;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.gpus = 16384;
  p.zero = 1;
  p.sequence_parallel = true;
  p.tp_overlap = tp_overlap;
  p.recompute = Recompute::kSelective;
  p.seq_len = 8192;
  p.global_batch = 2048;
  p.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  return p;
}

void EstimateLlama405B(benchmark::State& state, TpOverlap tp_overlap) {
  const ModelSpec m = *LoadModel("llama3-405b");
  const GpuSpec g = *LoadGpu("h100-sxm");
  const ClusterSpec c = *LoadCluster("dgx-h100");
  const PlanSpec p = Llama405BTp8Pp16(tp_overlap);
  const Profile profile;
  for (auto _ : state) benchmark::DoNotOptimize(meshplan::sim::EstimateStep(m, p, g, c, profile));
}

// The analytic step model for the same plan: the target is <= 2 us per evaluation.
void BM_StepLlama405BTp8Pp16(benchmark::State& state) { EstimateLlama405B(state, TpOverlap::kBackward); }
BENCHMARK(BM_StepLlama405BTp8Pp16);

// The same plan under Transformer Engine's userbuffers (tp_overlap full): each of a layer's TP
// collectives is costed beside its own GEMM (sim::TpPairedHidden), which looks that GEMM up.
void BM_StepLlama405BTp8Pp16Userbuffers(benchmark::State& state) { EstimateLlama405B(state, TpOverlap::kFull); }
BENCHMARK(BM_StepLlama405BTp8Pp16Userbuffers);

}  // namespace
