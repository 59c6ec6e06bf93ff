// The target: 1,000 Monte Carlo trials of a 54-day, 16,384-GPU run in <= 1 s.
// Run: build/release/bench/meshplan_bench --benchmark_filter=RunSim
#include <benchmark/benchmark.h>

#include "core/failures.h"
#include "core/memory.h"
#include "core/presets.h"
#include "sim/run_sim.h"

namespace {

using namespace meshplan::core;

// Llama 3 405B on 16,384 H100s (TP 8 x PP 16 x DP 128), the llama3-405b failure preset
// (419 unexpected + 47 planned interruptions in 54 days), async checkpoints to 2 TB/s storage.
RunParams Llama3RunParams() {
  const ModelSpec m = *LoadModel("llama3-405b");
  const GpuSpec g = *LoadGpu("h100-sxm");
  ClusterSpec c = *LoadCluster("dgx-h100");
  c.storage_bytes_per_s = 2e12;
  PlanSpec p;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.gpus = 16384;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = Recompute::kSelective;
  p.seq_len = 8192;
  p.global_batch = 2048;
  p.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  const FailureModel f = *LoadFailureModel("llama3-405b");
  const JobFailureRates rates = JobRates(f, p.gpus, c.gpus_per_node);
  const CheckpointCost k = EstimateCheckpoint(EstimateMemory(m, p, g), p, c, f);
  return *MakeRunParams(f, rates, k, CheckpointMode::kAsync, DefaultSpareNodes(f, rates.nodes));
}

// state.range(0): checkpoint interval in seconds (1800: every 30 min; 77: the optimum).
void BM_RunSim1000TrialsLlama3FiftyFourDays(benchmark::State& state) {
  const RunParams rp = Llama3RunParams();
  meshplan::sim::RunSimOptions o;
  o.trials = 1000;
  o.interval_s = static_cast<double>(state.range(0));
  o.horizon_s = 54 * 86400.0;
  o.billed_gpus = 16384;
  o.price_per_gpu_hour_usd = 3;
  for (auto _ : state) benchmark::DoNotOptimize(meshplan::sim::SimulateRun(rp, o));
}
BENCHMARK(BM_RunSim1000TrialsLlama3FiftyFourDays)->Arg(1800)->Arg(77)->Unit(benchmark::kMillisecond);

// The closed form the sweep table evaluates per row, and the optimum search.
void BM_ExpectedGoodputLlama3(benchmark::State& state) {
  const RunParams rp = Llama3RunParams();
  for (auto _ : state) benchmark::DoNotOptimize(ExpectedGoodput(rp, 1800));
}
BENCHMARK(BM_ExpectedGoodputLlama3);

void BM_OptimalIntervalLlama3(benchmark::State& state) {
  const RunParams rp = Llama3RunParams();
  for (auto _ : state) benchmark::DoNotOptimize(OptimalInterval(rp));
}
BENCHMARK(BM_OptimalIntervalLlama3)->Unit(benchmark::kMicrosecond);

}  // namespace
