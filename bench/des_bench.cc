// The discrete-event simulator on Llama-3-405B, PP 16, 128 microbatches, interleaved v = 4, with
// its communication streams (TP collectives, DP gradient synchronisation, pipeline sends):
// the target is <= 50 ms per step simulated.
#include <benchmark/benchmark.h>

#include "core/presets.h"
#include "sim/des.h"
#include "sim/step_model.h"

namespace {

using namespace meshplan;

core::PlanSpec Llama405BPp16Vpp4() {
  core::PlanSpec p;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.vpp = 4;
  p.gpus = 16384;
  p.schedule = core::Schedule::kInterleaved;
  p.zero = 1;
  p.sequence_parallel = true;
  p.seq_len = 8192;
  p.global_batch = 128 * 128;    // 128 microbatches per pipeline
  p.stage_layers.assign(64, 2);  // 126 layers over 64 chunks: 62 x 2 + 2 x 1
  p.stage_layers.front() = 1;
  p.stage_layers.back() = 1;
  return p;
}

// The simulation alone. Arg: keep the timeline (1) or not (0).
void BM_DesLlama405BPp16Vpp4(benchmark::State& state) {
  const core::ModelSpec m = *core::LoadModel("llama3-405b");
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::PlanSpec p = Llama405BPp16Vpp4();
  const sim::StepEstimate e = sim::EstimateStep(m, p, g, c, core::Profile{});
  const std::vector<sim::StageStreams> streams = sim::StageStreamCosts(m, p, g, c, core::Profile{}, e.stages);
  sim::DesOptions o;
  o.keep_timeline = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(sim::SimulateStreams(p, streams, 128, o));
}
BENCHMARK(BM_DesLlama405BPp16Vpp4)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// What `meshplan simulate` does per plan: the analytic model, its split by stream, the simulation.
void BM_DesWithStepModelLlama405BPp16Vpp4(benchmark::State& state) {
  const core::ModelSpec m = *core::LoadModel("llama3-405b");
  const core::GpuSpec g = *core::LoadGpu("h100-sxm");
  const core::ClusterSpec c = *core::LoadCluster("dgx-h100");
  const core::PlanSpec p = Llama405BPp16Vpp4();
  sim::DesOptions o;
  o.keep_timeline = false;
  for (auto _ : state) {
    const sim::StepEstimate e = sim::EstimateStep(m, p, g, c, core::Profile{});
    const std::vector<sim::StageStreams> streams = sim::StageStreamCosts(m, p, g, c, core::Profile{}, e.stages);
    benchmark::DoNotOptimize(sim::SimulateStreams(p, streams, 128, o));
  }
}
BENCHMARK(BM_DesWithStepModelLlama405BPp16Vpp4)->Unit(benchmark::kMillisecond);

}  // namespace
