// How long one memory estimate takes: the plan search (a later issue) evaluates millions.
// Run: build/release/bench/meshplan_bench --benchmark_filter=Memory
#include <benchmark/benchmark.h>

#include "core/memory.h"
#include "core/presets.h"

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
