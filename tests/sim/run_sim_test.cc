// The Monte Carlo of a whole run: determinism, convergence to the closed form, the Llama 3
// 54-day snapshot, synchronous vs asynchronous checkpoints, spares, silent corruption, Weibull.
#include "sim/run_sim.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/presets.h"
#include "core/profile.h"
#include "core/validate.h"

namespace meshplan::sim {
namespace {

using core::RunParams;

constexpr double kMin = 60, kHour = 3600, kDay = 86400;

RunParams DalyParams(double mtbf_s, double delta_s, double restart_s) {
  RunParams rp;
  core::EventClass e;
  e.name = "any";
  e.per_s = 1 / mtbf_s;
  rp.classes.push_back(e);
  rp.ckpt_blocking_s = delta_s;
  rp.restart_s = restart_s;
  return rp;
}

// Llama 3 405B pre-training (Llama 3 paper Table 4: TP 8, PP 16, DP 128 on 16,384 H100s).
core::Scenario Llama3Scenario(double storage_bytes_per_s) {
  core::Scenario s;
  s.model = *core::LoadModel("llama3-405b");
  s.gpu = *core::LoadGpu("h100-sxm");
  s.cluster = *core::LoadCluster("dgx-h100");
  s.cluster.storage_bytes_per_s = storage_bytes_per_s;
  core::PlanSpec& p = s.plan;
  p.gpus = 16384;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = core::Recompute::kSelective;
  p.seq_len = 8192;
  p.global_batch = 2048;
  p.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  return s;
}

RunParams Llama3Params(double storage_bytes_per_s, core::CheckpointMode mode, int64_t spares = -1,
                       core::FailureModel* model = nullptr) {
  const core::Scenario s = Llama3Scenario(storage_bytes_per_s);
  const core::MemoryReport mem = core::EstimateMemory(s.model, s.plan, s.gpu);
  const core::FailureModel f = model ? *model : *core::LoadFailureModel("llama3-405b");
  const auto rates = core::JobRates(f, s.plan.gpus, s.cluster.gpus_per_node);
  auto rp = core::MakeRunParams(f, rates, core::EstimateCheckpoint(mem, s.plan, s.cluster, f), mode,
                                spares >= 0 ? spares : core::DefaultSpareNodes(f, rates.nodes));
  EXPECT_TRUE(rp.ok()) << rp.status().ToString();
  return *rp;
}

RunSimOptions Horizon(double days, double interval_s, int64_t trials = 1000) {
  RunSimOptions o;
  o.trials = trials;
  o.interval_s = interval_s;
  o.horizon_s = days * kDay;
  return o;
}

TEST(RunSimTest, SameSeedSameResultOtherSeedOtherResult) {
  const RunParams rp = Llama3Params(2e12, core::CheckpointMode::kAsync);
  RunSimOptions o = Horizon(54, 30 * kMin, 50);
  const auto a = SimulateRun(rp, o);
  const auto b = SimulateRun(rp, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->goodput.mean, b->goodput.mean);
  EXPECT_EQ(a->interruptions.p90, b->interruptions.p90);
  EXPECT_EQ(a->lost_work_h.p50, b->lost_work_h.p50);
  o.seed = 2;
  const auto c = SimulateRun(rp, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->goodput.mean, c->goodput.mean);
  // Trial i does not depend on how many trials run: the first 50 of 100 are the same 50.
  o.seed = 1;
  o.trials = 1;
  const auto one = SimulateRun(rp, o);
  ASSERT_TRUE(one.ok());
  o.trials = 2;
  const auto two = SimulateRun(rp, o);
  ASSERT_TRUE(two.ok());
  // With two trials p10 = lo + 0.1 (hi - lo) and p90 = lo + 0.9 (hi - lo): recover lo and hi.
  const double lo = (9 * two->goodput.p10 - two->goodput.p90) / 8, hi = (9 * two->goodput.p90 - two->goodput.p10) / 8;
  EXPECT_TRUE(std::fabs(lo - one->goodput.mean) < 1e-12 || std::fabs(hi - one->goodput.mean) < 1e-12);
}

TEST(RunSimTest, MeanConvergesToDalysCompleteModel) {
  // Daly 2006 Fig. 4: M = 6 h, R = 10 min, delta = 5 min, Ts = 500 h, tau = 57 min. The closed
  // form is exact for this model; 1,000 trials must agree within 2% (they agree within 0.02%).
  const RunParams rp = DalyParams(6 * kHour, 5 * kMin, 10 * kMin);
  RunSimOptions o;
  o.trials = 1000;
  o.interval_s = 57 * kMin;
  o.work_s = 500 * kHour;
  const auto r = SimulateRun(rp, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double expect_days = o.work_s * core::ExpectedGoodput(rp, o.interval_s).wall_per_work / kDay;
  EXPECT_NEAR(r->days.mean / expect_days, 1.0, 0.02) << r->days.mean << " vs " << expect_days;
  EXPECT_NEAR(r->days.mean / expect_days, 1.0, 0.005);
}

TEST(RunSimTest, MeanConvergesToTheClosedFormForLlama3) {
  // The full model (three kinds of failure, waits, spares, async upload window, SDC rollback,
  // planned maintenance): Monte Carlo mean vs closed form within 2% at 1,000 trials, both for a
  // fixed token budget (days) and a fixed 54 days (goodput).
  const RunParams rp = Llama3Params(100e9, core::CheckpointMode::kAsync);
  RunSimOptions o;
  o.interval_s = 30 * kMin;
  o.work_s = 60 * kDay;
  const auto r = SimulateRun(rp, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const core::GoodputEstimate g = core::ExpectedGoodput(rp, o.interval_s);
  EXPECT_NEAR(r->days.mean / (60 * g.wall_per_work), 1.0, 0.02);
  const auto h = SimulateRun(rp, Horizon(54, 30 * kMin));
  ASSERT_TRUE(h.ok());
  EXPECT_NEAR(h->goodput.mean / g.goodput, 1.0, 0.02) << h->goodput.mean << " vs " << g.goodput;
  // With no spares every hardware failure waits 4 h: still within 2%.
  const RunParams none = Llama3Params(100e9, core::CheckpointMode::kAsync, 0);
  const auto n = SimulateRun(none, Horizon(54, 30 * kMin));
  ASSERT_TRUE(n.ok());
  EXPECT_NEAR(n->goodput.mean / core::ExpectedGoodput(none, 30 * kMin).goodput, 1.0, 0.02);
}

TEST(RunSimTest, Llama3FiftyFourDaysMatchesThePaper) {
  // Llama 3 §3.3.4: 419 unexpected interruptions in 54 days at 16,384 GPUs, > 90% effective
  // training time. Async checkpoints every 30 min to 2 TB/s storage (Tectonic, §3.3.1).
  const RunParams rp = Llama3Params(2e12, core::CheckpointMode::kAsync);
  const auto r = SimulateRun(rp, Horizon(54, 30 * kMin));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->interruptions.mean, 419, 419 * 0.05);
  EXPECT_NEAR(r->interruptions.p50, 419, 419 * 0.05);
  // Poisson: the p10-p90 spread is about +-1.28 sqrt(419) = +-26.
  EXPECT_NEAR(r->interruptions.p90 - r->interruptions.p10, 2 * 1.2816 * std::sqrt(419.0), 10);
  EXPECT_GT(r->goodput.mean, 0.90);
  EXPECT_GT(r->goodput.p50, 0.90);
  EXPECT_NEAR(r->planned.mean, 47, 47 * 0.1);  // planned stops merge into downtime now and then
  EXPECT_DOUBLE_EQ(r->days.p50, 54);
  // Work redone ~ tau/2 per interruption: 419 x 15 min = 105 h.
  EXPECT_NEAR(r->lost_work_h.mean, 105, 10);
}

TEST(RunSimTest, SyncToSlowStorageCostsClearlyMoreGoodputThanAsync) {
  // 5.68 TB per checkpoint to a 50 GB/s shared file system: a 114 s pause every 30 min when
  // synchronous, a 0.27 s snapshot when asynchronous.
  const RunParams sync = Llama3Params(50e9, core::CheckpointMode::kSync);
  const RunParams async = Llama3Params(50e9, core::CheckpointMode::kAsync);
  const auto rs = SimulateRun(sync, Horizon(54, 30 * kMin));
  const auto ra = SimulateRun(async, Horizon(54, 30 * kMin));
  ASSERT_TRUE(rs.ok() && ra.ok());
  EXPECT_GT(ra->goodput.mean - rs->goodput.mean, 0.03) << ra->goodput.mean << " vs " << rs->goodput.mean;
  EXPECT_GT(ra->goodput.p10, rs->goodput.p90);
  EXPECT_GT(rs->checkpoint_h.mean, 50 * ra->checkpoint_h.mean);
}

TEST(RunSimTest, WithoutFailuresTheRunIsWorkPlusPauses) {
  RunParams rp;
  rp.ckpt_blocking_s = 10;
  RunSimOptions o;
  o.trials = 3;
  o.interval_s = 1000;
  o.work_s = 10500;  // 10 full segments + 500 s: 10 pauses, none after the last segment
  o.billed_gpus = 8;
  o.price_per_gpu_hour_usd = 2;
  o.tokens_per_s = 1e5;
  const auto r = SimulateRun(rp, o);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->days.p50, 10600 / kDay);
  EXPECT_DOUBLE_EQ(r->goodput.mean, 10500.0 / 10600);
  EXPECT_DOUBLE_EQ(r->interruptions.p90, 0);
  EXPECT_DOUBLE_EQ(r->checkpoint_h.mean, 100 / kHour);
  EXPECT_DOUBLE_EQ(r->gpu_hours.mean, 10600 / kHour * 8);
  EXPECT_DOUBLE_EQ(r->cost_usd.mean, 10600 / kHour * 8 * 2);
  EXPECT_DOUBLE_EQ(r->tokens.mean, 10500 * 1e5);
}

TEST(RunSimTest, HotSparesAvoidWaitingForNodes) {
  const RunParams spares = Llama3Params(2e12, core::CheckpointMode::kAsync);  // 41 spare nodes
  const RunParams none = Llama3Params(2e12, core::CheckpointMode::kAsync, 0);
  const auto a = SimulateRun(spares, Horizon(54, 30 * kMin, 200));
  const auto b = SimulateRun(none, Horizon(54, 30 * kMin, 200));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(a->replacement_waits.mean, 0.1);
  // Without spares all 356 hardware failures wait (4 h each, absorbing those in between).
  EXPECT_NEAR(b->replacement_waits.mean, 356, 356 * 0.05);
  EXPECT_LT(b->goodput.mean, a->goodput.mean - 0.3);
}

TEST(RunSimTest, SilentCorruptionRollsBackToTheLastGoodCheckpoint) {
  // A silent event rolls back rollback_s further than a crash would: with every failure silent
  // and detected after 1 h, lost work per failure grows by ~1 h. A little less: when the job
  // restarted less than 1 h before, it restarted from a checkpoint older than the corruption and
  // loses only the time since (4% of the failures for M = 24 h). Averaged over the phase length
  // e ~ Exp(24 h) with tau = 30 min and a 60 s pause, the extra is 0.938 h (a direct numerical
  // expectation of the rollback rule, computed by hand in Python).
  RunParams crash = DalyParams(24 * kHour, 60, 0);
  RunParams silent = crash;
  silent.classes[0].rollback_s = kHour;
  const auto a = SimulateRun(crash, Horizon(400, 30 * kMin, 200));
  const auto b = SimulateRun(silent, Horizon(400, 30 * kMin, 200));
  ASSERT_TRUE(a.ok() && b.ok());
  const double per_a = a->lost_work_h.mean / a->interruptions.mean;
  const double per_b = b->lost_work_h.mean / b->interruptions.mean;
  EXPECT_NEAR(per_a, 0.25, 0.03);  // tau/2 = 15 min
  EXPECT_NEAR(per_b - per_a, 0.938, 0.02);
  // The closed form puts the same hour into the restart term.
  EXPECT_NEAR(b->goodput.mean / core::ExpectedGoodput(silent, 30 * kMin).goodput, 1.0, 0.02);
}

TEST(RunSimTest, LossSpikesForceRestartsButAreNotUnexpectedInterruptions) {
  core::FailureModel f = *core::LoadFailureModel("llama3-405b");
  f.loss_spikes_per_day = 2;
  const RunParams rp = Llama3Params(2e12, core::CheckpointMode::kAsync, -1, &f);
  const auto r = SimulateRun(rp, Horizon(54, 30 * kMin, 300));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->loss_spikes.mean, 2 * 54, 15);
  EXPECT_NEAR(r->interruptions.mean, 419, 419 * 0.05);
  const auto base = SimulateRun(Llama3Params(2e12, core::CheckpointMode::kAsync), Horizon(54, 30 * kMin, 300));
  ASSERT_TRUE(base.ok());
  EXPECT_LT(r->goodput.mean, base->goodput.mean - 0.01);  // 108 x (30 min rollback + 15 min) ~ 6%
}

TEST(RunSimTest, WeibullArrivalsKeepTheMeanRate) {
  // A renewal process with mean M has long-run rate 1/M whatever its shape; k = 0.7 (Schroeder
  // & Gibson 2006) clusters failures, which widens the spread of the count.
  RunParams exp = DalyParams(3 * kHour, 1, 120);
  RunParams wb = exp;
  wb.arrivals = core::Arrivals::kWeibull;
  wb.weibull_shape = 0.7;
  const auto a = SimulateRun(exp, Horizon(54, 10 * kMin, 500));
  const auto b = SimulateRun(wb, Horizon(54, 10 * kMin, 500));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(a->interruptions.mean, 54 * 8, 54 * 8 * 0.03);
  EXPECT_NEAR(b->interruptions.mean, 54 * 8, 54 * 8 * 0.05);
  EXPECT_GT(b->interruptions.p90 - b->interruptions.p10, a->interruptions.p90 - a->interruptions.p10);
}

TEST(RunSimTest, QuantilesAreOrdered) {
  const auto r = SimulateRun(Llama3Params(100e9, core::CheckpointMode::kAsync), Horizon(54, 30 * kMin, 200));
  ASSERT_TRUE(r.ok());
  for (const Quantiles* q : {&r->goodput, &r->interruptions, &r->lost_work_h, &r->downtime_h, &r->tokens}) {
    EXPECT_LE(q->p10, q->p50);
    EXPECT_LE(q->p50, q->p90);
  }
}

TEST(RunSimTest, BadOptionsNameTheirField) {
  const RunParams rp = DalyParams(6 * kHour, 60, 60);
  RunSimOptions o = Horizon(10, 1800);
  o.trials = 0;
  auto r = SimulateRun(rp, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("trials"), std::string::npos);
  o = Horizon(10, 0);
  r = SimulateRun(rp, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("interval_s"), std::string::npos);
  o = Horizon(10, 1800);
  o.work_s = 100;
  r = SimulateRun(rp, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exactly one"), std::string::npos);
  // Failures every minute, checkpoints every day: it would never finish, so it is refused.
  r = SimulateRun(DalyParams(60, 60, 60), Horizon(10, kDay));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1000x"), std::string::npos);
}

// The Llama 3 scenario's memory and step estimates and failure rates, for EstimateReliability.
struct Llama3Inputs {
  core::Scenario s = Llama3Scenario(2e12);
  core::Profile profile;
  core::MemoryReport mem = core::EstimateMemory(s.model, s.plan, s.gpu, profile.memory);
  StepEstimate step = EstimateStep(s.model, s.plan, s.gpu, s.cluster, profile);
  core::FailureModel f = *core::LoadFailureModel("llama3-405b");
  core::Result<ReliabilityReport> Run(const ReliabilityOptions& opt) const {
    return EstimateReliability(s, mem, step, f, opt);
  }
};

TEST(RunSimTest, EstimateReliabilityForLlama3) {
  const Llama3Inputs in;
  const core::Scenario& s = in.s;
  const StepEstimate& step = in.step;
  core::Diagnostics d;
  core::ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  ReliabilityOptions opt;
  opt.days = 54;
  opt.interval_s = 30 * kMin;
  opt.trials = 200;
  const auto r = in.Run(opt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->spare_nodes, 41);
  EXPECT_NEAR(r->expected_interruptions, 419, 1e-6);
  EXPECT_NEAR(r->rates.mtbf_h, 3.093, 0.001);
  EXPECT_GT(r->expected.goodput, 0.90);
  EXPECT_DOUBLE_EQ(r->interval_s, 1800);
  EXPECT_NEAR(r->expected_tokens, 54 * kDay * r->expected.goodput * step.tokens_per_s, 1);
  bool has_optimum = false, has_chosen = false;
  for (size_t i = 0; i < r->sweep.size(); ++i) {
    if (i > 0) EXPECT_LT(r->sweep[i - 1].interval_s, r->sweep[i].interval_s);
    has_optimum |= r->sweep[i].interval_s == r->optimal_s;
    has_chosen |= r->sweep[i].interval_s == 1800;
    EXPECT_LE(r->sweep[i].goodput, r->at_optimum.goodput + 1e-12);
  }
  EXPECT_TRUE(has_optimum && has_chosen);
  // Tokens instead of days; the default interval is the optimum.
  opt.days = 0;
  opt.tokens = 15.6e12;
  opt.interval_s = 0;
  const auto t = in.Run(opt);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->interval_s, t->optimal_s);
  EXPECT_NEAR(t->ideal_days, 15.6e12 / step.tokens_per_s / kDay, 1e-9);
  EXPECT_NEAR(t->mc.days.mean / t->expected_days, 1.0, 0.02);
  EXPECT_GT(t->mc.cost_usd.p50, 0);
  EXPECT_TRUE(t->mc.skipped.empty());
  EXPECT_EQ(t->mc.trials, 200);
  // Both or neither of tokens and days: refused.
  opt.days = 54;
  EXPECT_FALSE(in.Run(opt).ok());
}

TEST(RunSimTest, ARunTooLongForTheMonteCarloGetsTheClosedFormAndSaysSo) {
  // 54 days hold 419 interruptions (above): 100,000 days hold about 776,000, plus planned stops,
  // so 200 trials would handle over 1.5e8 events, above kMaxMonteCarloEvents (2e7). The report
  // comes back at once with the closed form's expectations and the reason.
  const Llama3Inputs in;
  ReliabilityOptions opt;
  opt.days = 100000;
  opt.interval_s = 30 * kMin;
  opt.trials = 200;
  const auto r = in.Run(opt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->mc.trials, 0);
  EXPECT_NE(r->mc.skipped.find("Monte Carlo skipped"), std::string::npos) << r->mc.skipped;
  EXPECT_NE(r->mc.skipped.find("2e+07"), std::string::npos) << r->mc.skipped;
  EXPECT_NEAR(r->expected_interruptions, 419.0 * 100000 / 54, 1);
  EXPECT_DOUBLE_EQ(r->mc.days.p50, 100000);
  EXPECT_DOUBLE_EQ(r->mc.days.p10, r->mc.days.p90);
  EXPECT_DOUBLE_EQ(r->mc.goodput.mean, r->expected.goodput);
  EXPECT_DOUBLE_EQ(r->mc.interruptions.mean, r->expected_interruptions);
  EXPECT_DOUBLE_EQ(r->mc.tokens.mean, r->expected_tokens);
  // Fewer trials bring the same run back under the bound: 2 trials, about 1.6e6 events.
  opt.trials = 2;
  const auto few = in.Run(opt);
  ASSERT_TRUE(few.ok());
  EXPECT_TRUE(few->mc.skipped.empty());
  EXPECT_EQ(few->mc.trials, 2);
}

}  // namespace
}  // namespace meshplan::sim
