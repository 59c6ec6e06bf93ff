// Failure math: Young/Daly against Daly 2006's published examples, the closed-form goodput
// against Daly's complete model, the Llama 3 failure preset against its source table, and the
// checkpoint size and times the memory model implies.
#include "core/failures.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/presets.h"
#include "core/units.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

constexpr double kMin = 60, kHour = 3600;

// One kind of failure with Daly's costs only: restart R inside the failure clock, no waits.
RunParams DalyParams(double mtbf_s, double delta_s, double restart_s) {
  RunParams rp;
  EventClass e;
  e.name = "any";
  e.per_s = 1 / mtbf_s;
  rp.classes.push_back(e);
  rp.ckpt_blocking_s = delta_s;
  rp.restart_s = restart_s;
  return rp;
}

// Llama 3 405B pre-training as the paper ran it: 16,384 H100s, TP 8 x PP 16 x DP 128 (Llama 3
// paper Table 4), ZeRO-1, sequence 8192, 2048 sequences (16M tokens) per step.
Scenario Llama3Scenario() {
  Scenario s;
  s.model = *LoadModel("llama3-405b");
  s.gpu = *LoadGpu("h100-sxm");
  s.cluster = *LoadCluster("dgx-h100");
  PlanSpec& p = s.plan;
  p.gpus = 16384;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = Recompute::kSelective;
  p.seq_len = 8192;
  p.global_batch = 2048;
  p.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  return s;
}

// ---------------------------------------------------------------------------------------------
// Optimal intervals
// ---------------------------------------------------------------------------------------------

TEST(FailureIntervalTest, YoungIsSqrtTwoDeltaM) {
  // Young 1974: sqrt(2 x 5 min x 24 h) = sqrt(2 x 300 x 86400) s = 7200 s.
  EXPECT_DOUBLE_EQ(YoungInterval(5 * kMin, 24 * kHour), 7200);
}

TEST(FailureIntervalTest, DalyMatchesPublishedExamples) {
  // Daly 2006 (FGCS 22:303), Figs. 3-5 (R = 10 min, delta = 5 min, Ts = 500 h): "the new model
  // predicts tau_opt = 117 min" for M = 24 h, "57 min" for M = 6 h, "9.1 min" for M = 15 min.
  // By hand for M = 24 h: 120 min x (1 + sqrt(5/2880)/3 + 5/25920) - 5 min = 116.69 min.
  EXPECT_NEAR(DalyInterval(5 * kMin, 24 * kHour) / kMin, 117, 0.5);
  EXPECT_NEAR(DalyInterval(5 * kMin, 6 * kHour) / kMin, 57, 0.5);
  EXPECT_NEAR(DalyInterval(5 * kMin, 15 * kMin) / kMin, 9.1, 0.05);
}

TEST(FailureIntervalTest, DalyIsMtbfWhenTheCheckpointTakesTwoMtbf) {
  // Daly 2006: tau_opt = M for delta >= 2M.
  EXPECT_DOUBLE_EQ(DalyInterval(2 * kHour, 1 * kHour), 1 * kHour);
  EXPECT_DOUBLE_EQ(DalyInterval(5 * kHour, 1 * kHour), 1 * kHour);
}

TEST(FailureIntervalTest, DalyApproachesYoungForCheapCheckpoints) {
  // delta/M -> 0: the correction terms vanish (0.27 s snapshot, 3.09 h MTBF: within 0.5%).
  const double m = 3.09 * kHour;
  EXPECT_NEAR(DalyInterval(0.267, m) / YoungInterval(0.267, m), 1.0, 0.005);
}

TEST(FailureIntervalTest, ClosedFormOptimumIsDalysEstimate) {
  // Daly's estimate approximates the minimum of his complete model; for Fig. 3's numbers the
  // goodput at his estimate is within 1e-5 of the numerical optimum, which lies within 1% of it.
  const RunParams rp = DalyParams(24 * kHour, 5 * kMin, 10 * kMin);
  const double opt = OptimalInterval(rp);
  const double daly = DalyInterval(5 * kMin, 24 * kHour);
  EXPECT_NEAR(opt / daly, 1.0, 0.01);
  EXPECT_NEAR(ExpectedGoodput(rp, daly).goodput, ExpectedGoodput(rp, opt).goodput, 1e-5);
  EXPECT_GE(ExpectedGoodput(rp, opt).goodput, ExpectedGoodput(rp, 0.5 * opt).goodput);
  EXPECT_GE(ExpectedGoodput(rp, opt).goodput, ExpectedGoodput(rp, 2 * opt).goodput);
}

// ---------------------------------------------------------------------------------------------
// Closed-form goodput
// ---------------------------------------------------------------------------------------------

TEST(FailureGoodputTest, ReducesToDalysCompleteModel) {
  // Daly 2006: T_w = M e^{R/M} (e^{(tau+delta)/M} - 1) Ts/tau. Fig. 3: M = 24 h, R = 10 min,
  // delta = 5 min, tau = 117 min, Ts = 500 h: 1440 x e^{10/1440} x (e^{122/1440} - 1) x 500/117
  // min = 1440 x 1.0069930 x 0.0884150 x 4.2735 h = 547.9 h, i.e. goodput 500/547.9 = 91.3%.
  const RunParams rp = DalyParams(24 * kHour, 5 * kMin, 10 * kMin);
  const GoodputEstimate g = ExpectedGoodput(rp, 117 * kMin);
  const double m = 1440, expect = m * std::exp(10 / m) * std::expm1(122 / m) / 117;
  EXPECT_NEAR(g.wall_per_work, expect, 1e-12);
  EXPECT_NEAR(500 * g.wall_per_work, 547.9, 0.05);
  EXPECT_NEAR(g.useful_frac + g.checkpoint_frac + g.failure_frac + g.planned_frac, 1.0, 1e-12);
}

TEST(FailureGoodputTest, WithoutFailuresOnlyCheckpointsCost) {
  RunParams rp;
  rp.ckpt_blocking_s = 10;
  const GoodputEstimate g = ExpectedGoodput(rp, 990);
  EXPECT_DOUBLE_EQ(g.goodput, 0.99);  // 990 / (990 + 10)
  EXPECT_TRUE(std::isinf(g.mtbf_s));
}

TEST(FailureGoodputTest, WaitsRunOutsideTheFailureClock) {
  // A wait W per failure multiplies by (M + W)/M: failures during W are absorbed by it.
  RunParams rp = DalyParams(10 * kHour, 60, 0);
  const double base = ExpectedGoodput(rp, 1800).wall_per_work;
  rp.requeue_s = 0.5 * kHour;
  EXPECT_NEAR(ExpectedGoodput(rp, 1800).wall_per_work / base, 10.5 / 10, 1e-12);
}

TEST(FailureGoodputTest, AsyncUploadLongerThanTheIntervalBlocks) {
  // The next snapshot waits for the previous upload: pause = delta + (L - tau) when L > tau.
  RunParams rp = DalyParams(10 * kHour, 1, 0);
  rp.ckpt_lag_s = 500;
  EXPECT_DOUBLE_EQ(ExpectedGoodput(rp, 1800).blocking_s, 1);
  EXPECT_DOUBLE_EQ(ExpectedGoodput(rp, 300).blocking_s, 201);  // 1 + 500 - 300
}

TEST(FailureSpareTest, ShortfallIsAPoissonTail) {
  EXPECT_DOUBLE_EQ(SpareShortfallProbability(5, 0), 1.0);  // no spares: every failure waits
  EXPECT_DOUBLE_EQ(SpareShortfallProbability(0, 3), 0.0);
  // P(X >= 1) = 1 - e^{-m}.
  EXPECT_NEAR(SpareShortfallProbability(0.5, 1), 1 - std::exp(-0.5), 1e-15);
  // 0.2747 hardware failures/h x 72 h repair = 19.78 nodes in repair; P(X >= 31) = 0.011721
  // (summed by hand in Python: 1 - sum_{k<31} e^-m m^k / k!).
  EXPECT_NEAR(SpareShortfallProbability(356.0 / 1296 * 72, 31), 0.0117209, 1e-6);
  // Large means do not underflow.
  EXPECT_NEAR(SpareShortfallProbability(2000, 2000), 0.5, 0.01);
}

// ---------------------------------------------------------------------------------------------
// The Llama 3 preset
// ---------------------------------------------------------------------------------------------

TEST(FailurePresetTest, Llama3RatesReproduceTableFive) {
  // Each component's rate times the 54-day exposure (16,384 GPUs, 2,048 nodes) gives back the
  // count of the Llama 3 paper's Table 5 (shared/validation/failures.json).
  std::ifstream in(MESHPLAN_VALIDATION_DIR "/failures.json");
  ASSERT_TRUE(in) << "missing " MESHPLAN_VALIDATION_DIR "/failures.json";
  const auto table = nlohmann::json::parse(in)[0];
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->components.size(), table["categories"].size());
  const double gpu_hours = 16384.0 * 54 * 24, node_hours = 2048.0 * 54 * 24;
  for (const auto& row : table["categories"]) {
    const std::string name = row["component"];
    const auto it = std::find_if(f->components.begin(), f->components.end(),
                                 [&](const FailureComponent& c) { return c.name == name; });
    ASSERT_NE(it, f->components.end()) << name;
    EXPECT_EQ(it->category, row["category"].get<std::string>()) << name;
    const double hours = it->scale == FailureScale::kGpu ? gpu_hours : node_hours;
    EXPECT_NEAR(it->rate_per_hour * hours, row["interruption_count"].get<double>(), 1e-9) << name;
  }
  EXPECT_NEAR(f->planned.rate_per_hour * node_hours, table["totals"]["planned_interruptions"].get<double>(), 1e-9);
}

TEST(FailurePresetTest, Llama3ScaleGives419UnexpectedInterruptionsIn54Days) {
  // Llama 3's published count: 419 unexpected interruptions (Llama 3 §3.3.4) within +-5%; by
  // construction the rates add back to exactly 419, an MTBF of 54 x 24 / 419 = 3.093 h.
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const JobFailureRates r = JobRates(*f, 16384, 8);
  EXPECT_EQ(r.nodes, 2048);
  EXPECT_NEAR(r.unexpected_per_hour * 54 * 24, 419, 419 * 0.05);
  EXPECT_NEAR(r.unexpected_per_hour * 54 * 24, 419, 1e-9);
  EXPECT_NEAR(r.planned_per_hour * 54 * 24, 47, 1e-9);
  EXPECT_NEAR(r.mtbf_h, 1296.0 / 419, 1e-12);
  // Components marked replace_node (GPU, host, NIC, switch/cable, unplanned host maintenance):
  // 356 of 419 = 85% (the paper attributes 78% to confirmed or suspected hardware; the rest of
  // the 85% is unplanned host maintenance, which also takes the node out).
  EXPECT_NEAR(r.replace_per_hour * 54 * 24, 356, 1e-9);
  EXPECT_NEAR(r.silent_per_hour * 54 * 24, 6, 1e-9);
}

TEST(FailurePresetTest, RatesScaleWithGpusAndNodes) {
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const JobFailureRates full = JobRates(*f, 16384, 8);
  const JobFailureRates half = JobRates(*f, 8192, 8);
  EXPECT_NEAR(half.unexpected_per_hour, full.unexpected_per_hour / 2, 1e-12);
  EXPECT_NEAR(half.mtbf_h, 2 * full.mtbf_h, 1e-9);
  // Four GPUs per node: twice the nodes, so the 88 per-node interruptions double to 176.
  const JobFailureRates four = JobRates(*f, 16384, 4);
  EXPECT_EQ(four.nodes, 4096);
  EXPECT_NEAR(four.unexpected_per_hour * 54 * 24, 419 + 88, 1e-9);
  // A partial node counts as a node.
  EXPECT_EQ(JobRates(*f, 12, 8).nodes, 2);
  EXPECT_EQ(DefaultSpareNodes(*f, 2048), 41);  // ceil(2% x 2048)
  EXPECT_EQ(DefaultSpareNodes(*f, 1), 1);
}

TEST(FailureJsonTest, EveryErrorNamesItsField) {
  const auto f = ParseFailureModelJson(R"({
    "name": "bad",
    "exposure": {"gpus": 8, "gpus_per_node": 8, "days": 1},
    "unexpected": [
      {"name": "a", "scale": "gpu", "observed": -1},
      {"name": "b", "observed": 3},
      {"name": "c", "scale": "rack", "rate_per_hour": 1e-6},
      {"name": "d", "scale": "gpu", "observed": 1, "rate_per_hour": 1e-6},
      {"name": "e", "scale": "node"}
    ],
    "restart": {"detection_s": -5, "reqeue_s": 3},
    "spares": {"hot_spare_fraction": 2},
    "checkpoint": {"snapshot_bytes_per_s": "fast"},
    "arrivals": {"distribution": "gamma"},
    "bogus": 1
  })");
  ASSERT_FALSE(f.ok());
  const std::string msg = f.status().message();
  for (const char* want :
       {"failures.unexpected[0].observed: must be >= 0 (got -1)", "failures.unexpected[1].scale: is required",
        "failures.unexpected[2].scale: must be one of gpu|node", "failures.unexpected[3]: give observed",
        "failures.unexpected[4]: needs observed", "failures.restart.detection_s: must be in [0, 1e+07] (got -5)",
        "failures.restart.reqeue_s: is not a known field (did you mean \"requeue_s\"?)",
        "failures.spares.hot_spare_fraction: must be in [0, 1] (got 2)",
        "failures.checkpoint.snapshot_bytes_per_s: must be bytes per second",
        "failures.arrivals.distribution: must be one of exponential|weibull", "failures.bogus: is not a known field"})
    EXPECT_NE(msg.find(want), std::string::npos) << "missing \"" << want << "\" in:\n" << msg;
}

TEST(FailureJsonTest, PhysicalBoundsCatchUnitSlips) {
  // A rate of 2 per GPU-hour (every GPU failing twice an hour: per-day or per-1000-hours typed as
  // per hour), a repair of 1e9 s (ms typed as s) and more loss spikes than minutes in a day.
  const auto f = ParseFailureModelJson(R"({"name": "slip", "unexpected": [
      {"name": "gpu", "scale": "gpu", "rate_per_hour": 2}],
      "spares": {"repair_s": 1e9}, "loss_spikes_per_day": 5000})");
  ASSERT_FALSE(f.ok());
  const std::string msg = f.status().message();
  for (const char* want : {"failures.unexpected[0].rate_per_hour: must be in [0, 1] (got 2)",
                           "failures.spares.repair_s: must be in [0, 1e+07] (got 1e+09)",
                           "failures.loss_spikes_per_day: must be in [0, 1440] (got 5000)"})
    EXPECT_NE(msg.find(want), std::string::npos) << "missing \"" << want << "\" in:\n" << msg;
}

TEST(FailureJsonTest, RatesMayBeGivenDirectly) {
  const auto f = ParseFailureModelJson(R"({"name": "mine", "unexpected": [
      {"name": "gpu", "scale": "gpu", "rate_per_hour": 1e-5, "replace_node": true}],
      "planned": {"scale": "node", "rate_per_hour": 2e-5},
      "arrivals": {"distribution": "weibull", "weibull_shape": 0.8}})");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_DOUBLE_EQ(f->components[0].rate_per_hour, 1e-5);
  EXPECT_TRUE(f->components[0].replace_node);
  EXPECT_EQ(f->planned.name, "Planned maintenance");
  EXPECT_EQ(f->arrivals, Arrivals::kWeibull);
  EXPECT_DOUBLE_EQ(f->weibull_shape, 0.8);
  // A count needs an exposure to become a rate.
  const auto g =
      ParseFailureModelJson(R"({"name": "x", "unexpected": [{"name": "a", "scale": "gpu", "observed": 3}]})");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("failures.unexpected[0].observed: needs the file's \"exposure\""),
            std::string::npos);
  EXPECT_FALSE(ParseFailureModelJson("{not json").ok());
}

TEST(FailureJsonTest, UnknownPresetIsNotFound) {
  const auto f = LoadFailureModel("llama9");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Status::Code::kNotFound);
  EXPECT_NE(f.status().message().find("llama3-405b"), std::string::npos);  // lists what exists
}

// ---------------------------------------------------------------------------------------------
// Checkpoints
// ---------------------------------------------------------------------------------------------

TEST(FailureCheckpointTest, Llama405BSavesWeightsMasterAndMomentsNotGradients) {
  const Scenario s = Llama3Scenario();
  Diagnostics d;
  ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const MemoryReport mem = EstimateMemory(s.model, s.plan, s.gpu);
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const CheckpointCost k = EstimateCheckpoint(mem, s.plan, s.cluster, *f);
  // 405,853,388,800 parameters x (2 bf16 weights + 4 fp32 master + 8 fp32 moments) = 14 B each.
  EXPECT_EQ(k.total_bytes, 405853388800LL * 14);
  int64_t worst = 0;
  for (const auto& st : mem.stages)
    worst = std::max(worst, st.weights_bytes + st.master_weights_bytes + st.optimizer_moments_bytes);
  EXPECT_EQ(k.per_gpu_bytes, worst);
  EXPECT_LT(k.per_gpu_bytes, mem.stages[0].weights_bytes + mem.stages[0].grads_bytes + mem.stages[0].optimizer_bytes);
  EXPECT_EQ(k.per_node_bytes, 8 * k.per_gpu_bytes);
  // dgx-h100: 100 GB/s of storage; the snapshot runs at the preset's 25 GB/s per GPU.
  EXPECT_DOUBLE_EQ(k.upload_s, static_cast<double>(k.total_bytes) / 100e9);  // 56.8 s
  EXPECT_DOUBLE_EQ(k.sync_write_s, k.upload_s);
  EXPECT_DOUBLE_EQ(k.restore_s, k.upload_s);
  EXPECT_DOUBLE_EQ(k.snapshot_s, static_cast<double>(k.per_gpu_bytes) / 25e9);
  EXPECT_TRUE(k.host_memory_ok);  // 53 GB of a node's 2 TiB
  ClusterSpec small = s.cluster;
  small.host_memory_bytes_per_node = 32 * kGiB;
  EXPECT_FALSE(EstimateCheckpoint(mem, s.plan, small, *f).host_memory_ok);
}

TEST(FailureCheckpointTest, OffloadedStatesAreSavedAndHeldBesideTheSnapshot) {
  // The same Llama 3 405B plan with its optimizer in host memory (ZeRO-Offload): the checkpoint saves
  // the same states, now partly from host memory, so each rank snapshots as many bytes as before;
  // and the node's host memory must hold its ranks' offloaded master weights and moments beside the
  // snapshot's staging.
  Scenario s = Llama3Scenario();
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const CheckpointCost on_gpu = EstimateCheckpoint(EstimateMemory(s.model, s.plan, s.gpu), s.plan, s.cluster, *f);
  s.plan.offload_optimizer = OffloadTarget::kCpu;
  Diagnostics d;
  ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const MemoryReport mem = EstimateMemory(s.model, s.plan, s.gpu);
  const CheckpointCost k = EstimateCheckpoint(mem, s.plan, s.cluster, *f);
  EXPECT_EQ(k.total_bytes, on_gpu.total_bytes);
  EXPECT_EQ(k.per_gpu_bytes, on_gpu.per_gpu_bytes);
  EXPECT_EQ(on_gpu.resident_host_bytes_per_node, 0);
  int64_t host = 0;
  for (const auto& st : mem.stages) host = std::max(host, st.host_bytes);
  EXPECT_GT(host, 0);
  EXPECT_EQ(k.resident_host_bytes_per_node, 8 * host);
  EXPECT_TRUE(k.host_memory_ok);
  // A node with room for the staging alone, not for the offloaded states beside it.
  ClusterSpec tight = s.cluster;
  tight.host_memory_bytes_per_node = k.per_node_bytes + k.resident_host_bytes_per_node / 2;
  EXPECT_TRUE(EstimateCheckpoint(EstimateMemory(s.model, s.plan, s.gpu), s.plan, tight, *f).host_memory_ok == false);
}

TEST(FailureCheckpointTest, RunParamsFollowTheMode) {
  const Scenario s = Llama3Scenario();
  const MemoryReport mem = EstimateMemory(s.model, s.plan, s.gpu);
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const CheckpointCost k = EstimateCheckpoint(mem, s.plan, s.cluster, *f);
  const JobFailureRates rates = JobRates(*f, 16384, 8);
  const auto async = MakeRunParams(*f, rates, k, CheckpointMode::kAsync, 41);
  ASSERT_TRUE(async.ok());
  EXPECT_DOUBLE_EQ(async->ckpt_blocking_s, k.snapshot_s);
  EXPECT_DOUBLE_EQ(async->ckpt_lag_s, k.upload_s);
  EXPECT_DOUBLE_EQ(async->restart_s, f->restart.reinit_s + k.restore_s + f->restart.warmup_s);
  EXPECT_NEAR(async->UnplannedPerS() * 1296 * 3600, 419, 1e-9);
  EXPECT_NEAR(async->ReplacePerS() * 1296 * 3600, 356, 1e-9);
  ASSERT_EQ(async->classes.size(), 3u);  // hardware, hardware silent (SDC), software/other
  for (const auto& c : async->classes) {
    EXPECT_EQ(c.rollback_s > 0, c.name.find("silent") != std::string::npos) << c.name;
    EXPECT_EQ(c.detect_s, c.rollback_s > 0 ? 0 : f->restart.detection_s) << c.name;
  }
  const auto sync = MakeRunParams(*f, rates, k, CheckpointMode::kSync, 41);
  ASSERT_TRUE(sync.ok());
  EXPECT_DOUBLE_EQ(sync->ckpt_blocking_s, k.sync_write_s);
  EXPECT_DOUBLE_EQ(sync->ckpt_lag_s, 0);
  // Unknown storage bandwidth: the error names the field.
  ClusterSpec no_storage = s.cluster;
  no_storage.storage_bytes_per_s = 0;
  const auto bad = MakeRunParams(*f, rates, EstimateCheckpoint(mem, s.plan, no_storage, *f), CheckpointMode::kAsync, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cluster.storage_bytes_per_s"), std::string::npos);
}

TEST(FailureGoodputTest, Llama3AsyncEveryThirtyMinutesKeepsNinetyPercent) {
  // Llama 3 §3.3.4: "higher than 90% effective training time" through 419 unexpected
  // interruptions in 54 days. Async checkpoints every 30 min to Tectonic (2 TB/s sustained,
  // Llama 3 §3.3.1) give 90.5% in closed form: 8% is work redone (15 min per interruption).
  Scenario s = Llama3Scenario();
  s.cluster.storage_bytes_per_s = 2e12;
  const MemoryReport mem = EstimateMemory(s.model, s.plan, s.gpu);
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const auto rates = JobRates(*f, 16384, 8);
  const auto rp = MakeRunParams(*f, rates, EstimateCheckpoint(mem, s.plan, s.cluster, *f), CheckpointMode::kAsync,
                                DefaultSpareNodes(*f, rates.nodes));
  ASSERT_TRUE(rp.ok());
  const GoodputEstimate g = ExpectedGoodput(*rp, 30 * kMin);
  EXPECT_GT(g.goodput, 0.90);
  EXPECT_LT(g.goodput, 0.92);
  // The optimum for a 0.27 s snapshot is ~77 s (Young: sqrt(2 x 0.267 x 11135)), worth ~7 points.
  EXPECT_NEAR(OptimalInterval(*rp), 77, 2);
  EXPECT_GT(ExpectedGoodput(*rp, OptimalInterval(*rp)).goodput, 0.97);
}

TEST(FailureGoodputTest, NinetyPercentNeedsAutomatedRestartsOfAFewMinutes) {
  // The restart defaults (detection 30 s, requeue 30 s, spare swap 30 s, re-init 60 s, warm-up
  // 30 s: 180 s plus the restore) are assumptions. Published automated recoveries bracket them:
  // FlashRecovery (arXiv 2509.03047) restores a 4,800-device job in 150 s from failure to
  // training, TrainMover (arXiv 2412.12636) ~20 s at 1,024 GPUs with standby machines. With
  // Llama 3's failure rate (one unexpected interruption per 3.09 h) the > 90% it reports needs
  // restarts of that order: at PyTorch's default 10-minute NCCL timeout as the detection alone,
  // goodput drops below 90%.
  Scenario s = Llama3Scenario();
  s.cluster.storage_bytes_per_s = 2e12;
  const MemoryReport mem = EstimateMemory(s.model, s.plan, s.gpu);
  auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const double phases = f->restart.detection_s + f->restart.requeue_s + f->restart.spare_swap_s + f->restart.reinit_s +
                        f->restart.warmup_s;
  EXPECT_DOUBLE_EQ(phases, 180);
  const auto goodput = [&](const FailureModel& fm) {
    const auto rates = JobRates(fm, 16384, 8);
    const auto rp = MakeRunParams(fm, rates, EstimateCheckpoint(mem, s.plan, s.cluster, fm), CheckpointMode::kAsync,
                                  DefaultSpareNodes(fm, rates.nodes));
    EXPECT_TRUE(rp.ok());
    return rp.ok() ? ExpectedGoodput(*rp, 30 * kMin).goodput : 0.0;
  };
  const double fast = goodput(*f);
  FailureModel slow = *f;
  slow.restart.detection_s = 600;
  const double with_timeout = goodput(slow);
  EXPECT_GT(fast, 0.90);
  EXPECT_LT(with_timeout, 0.90) << "fast " << fast;
  // 570 s more downtime per interruption, one per 3.09 h (11,135 s): ~5 points of goodput.
  EXPECT_NEAR(fast - with_timeout, 570.0 / (11135 + 570 + 900 + 180), 0.01);
}

TEST(FailureGoodputTest, SyncToSlowStorageCostsClearlyMoreThanAsync) {
  // The seeds: "Sync to shared FS is fine for <1k-GPU runs, malpractice at 10k+". At 16k GPUs,
  // 5.68 TB to a 50 GB/s file system pauses training 114 s per checkpoint: every 30 min that is
  // 6% of the run, against a 0.27 s snapshot when the same write happens in the background.
  Scenario s = Llama3Scenario();
  s.cluster.storage_bytes_per_s = 50e9;
  const MemoryReport mem = EstimateMemory(s.model, s.plan, s.gpu);
  const auto f = LoadFailureModel("llama3-405b");
  ASSERT_TRUE(f.ok());
  const auto rates = JobRates(*f, 16384, 8);
  const CheckpointCost k = EstimateCheckpoint(mem, s.plan, s.cluster, *f);
  const auto async = MakeRunParams(*f, rates, k, CheckpointMode::kAsync, 41);
  const auto sync = MakeRunParams(*f, rates, k, CheckpointMode::kSync, 41);
  ASSERT_TRUE(async.ok() && sync.ok());
  const double ga = ExpectedGoodput(*async, 30 * kMin).goodput;
  const double gs = ExpectedGoodput(*sync, 30 * kMin).goodput;
  EXPECT_GT(ga - gs, 0.03) << "async " << ga << " sync " << gs;
  // Each at its own optimum, sync still loses clearly.
  EXPECT_GT(
      ExpectedGoodput(*async, OptimalInterval(*async)).goodput - ExpectedGoodput(*sync, OptimalInterval(*sync)).goodput,
      0.03);
}

}  // namespace
}  // namespace meshplan::core
