#include "sim/run_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace meshplan::sim {
namespace {

using core::EventClass;
using core::RunParams;
using core::Status;

constexpr double kInf = std::numeric_limits<double>::infinity();
// A trial that handles this many events is not going to finish (the closed-form guard in
// SimulateRun should have refused it first).
constexpr int64_t kMaxEventsPerTrial = 20'000'000;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// What one trial measured.
struct TrialStats {
  double wall_s = 0, work_s = 0;
  double interruptions = 0, planned = 0, spikes = 0, waits = 0;
  double lost_s = 0, downtime_s = 0, checkpoint_s = 0;
  bool finished = true;
};

// One run, event to event: between two events the checkpoint schedule is arithmetic, so a trial
// costs O(events), not O(checkpoints). Not thread-safe; one per trial.
class Trial {
 public:
  Trial(const RunParams& rp, const RunSimOptions& opt, uint64_t seed)
      : rp_(rp), opt_(opt), rng_(seed), lambda_(rp.UnplannedPerS()) {
    tau_ = opt.interval_s;
    delta_ = rp.ckpt_blocking_s;
    lag_ = rp.ckpt_lag_s;
    delta_eff_ = delta_ + std::max(0.0, lag_ - tau_);
    a_ = tau_ + delta_eff_;
    horizon_ = opt.work_s > 0 ? kInf : opt.horizon_s;
    if (lambda_ > 0) {
      const double mean = 1.0 / lambda_;
      // Weibull renewal with the same mean: scale = M / Gamma(1 + 1/k).
      weibull_scale_ = mean / std::tgamma(1.0 + 1.0 / rp.weibull_shape);
      inv_shape_ = 1.0 / rp.weibull_shape;
    }
  }

  TrialStats Run() {
    next_unplanned_ = NextUnplanned(0);
    next_planned_ = rp_.planned_per_s > 0 ? Exp(1.0 / rp_.planned_per_s) : kInf;
    double t = 0, w0 = 0;
    const bool work_mode = opt_.work_s > 0;
    while (true) {
      if (++events_ > kMaxEventsPerTrial) {
        s_.finished = false;
        s_.wall_s = t;
        s_.work_s = w0;
        return s_;
      }
      // Training runs from (t, w0): pause after every tau of training; none after the last segment.
      const double t0 = t;
      double t_stop = horizon_;
      double k_max = kInf;
      if (work_mode) {
        const double rem = opt_.work_s - w0;
        k_max = rem > tau_ ? std::ceil(rem / tau_) - 1 : 0;
        t_stop = t0 + rem + k_max * delta_eff_;
      }
      const double te = std::min(next_unplanned_, next_planned_);
      if (t_stop <= te) {
        const Position end = At(t_stop - t0, k_max);
        s_.wall_s = t_stop;
        s_.work_s = work_mode ? opt_.work_s : w0 + end.work;
        s_.checkpoint_s += end.paused;
        return s_;
      }
      const Position now = At(te - t0, k_max);
      const double work_at = w0 + now.work;
      s_.checkpoint_s += now.paused;
      if (te == next_planned_) {
        // Planned maintenance: checkpoint (pause + upload), stop, restart; nothing is lost.
        s_.planned += 1;
        t = std::min(te + delta_ + lag_ + rp_.requeue_s + rp_.restart_s, horizon_);
        AbsorbUntil(t);
        next_planned_ = t + Exp(1.0 / rp_.planned_per_s);
        w0 = work_at;
        if (t >= horizon_) return End(t, w0);
        continue;
      }
      const EventClass& c = Pick();
      Count(c);
      // Checkpoint i of this phase (i = 1..j) is restorable once its upload is done, at
      // i*a + L; checkpoint 0 is the phase's starting point.
      const double e = te - t0;
      double restorable = e >= lag_ ? std::min(now.index, std::floor((e - lag_) / a_)) : 0;
      if (c.rollback_s > 0) {
        // Last-known-good: the newest checkpoint taken before the state went bad. Corruption
        // older than this phase is rolled back to the phase start (a simplification).
        const double onset = e - c.rollback_s;
        restorable = onset <= 0 ? 0 : std::min(restorable, std::floor(onset / a_));
      }
      const double restore_work = w0 + restorable * tau_;
      s_.lost_s += work_at - restore_work;
      if (c.replace_node) TakeNode(te);
      const double wait = c.detect_s + rp_.requeue_s + (c.replace_node ? last_node_wait_ : 0);
      next_unplanned_ = NextUnplanned(te);
      w0 = restore_work;
      t = Recover(te, wait);
      if (t >= horizon_) return End(t, w0);
    }
  }

 private:
  struct Position {
    double index = 0;   // checkpoints completed in this phase
    double work = 0;    // training done in this phase
    double paused = 0;  // checkpoint pauses in this phase
  };
  // Where a phase stands `e` seconds after it began.
  Position At(double e, double k_max) const {
    Position p;
    p.index = std::min(std::floor(e / a_), k_max);
    const double c = e - p.index * a_;
    p.work = p.index * tau_ + std::min(c, tau_);
    p.paused = p.index * delta_eff_ + std::max(0.0, std::min(c, a_) - tau_);
    return p;
  }

  TrialStats End(double t, double w0) {
    s_.wall_s = std::min(t, horizon_);
    s_.work_s = w0;
    return s_;
  }

  double Uniform() { return (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
  double Exp(double mean) { return -mean * std::log(Uniform()); }
  double NextUnplanned(double from) {
    if (lambda_ <= 0) return kInf;
    if (rp_.arrivals == core::Arrivals::kExponential) return from + Exp(1.0 / lambda_);
    return from + weibull_scale_ * std::pow(-std::log(Uniform()), inv_shape_);
  }
  const EventClass& Pick() {
    double u = Uniform() * lambda_;
    for (const auto& c : rp_.classes) {
      if (u < c.per_s) return c;
      u -= c.per_s;
    }
    return rp_.classes.back();
  }
  void Count(const EventClass& c) {
    if (c.unexpected) s_.interruptions += 1;
    else s_.spikes += 1;
  }
  // A hardware failure at `now` sends its node to repair (back after repair_s) and takes a spare
  // if one is free; last_node_wait_ is what getting a node costs.
  void TakeNode(double now) {
    while (repair_head_ < repairs_.size() && repairs_[repair_head_] <= now) ++repair_head_;
    const auto in_repair = static_cast<int64_t>(repairs_.size() - repair_head_);
    const bool spare = in_repair < rp_.spare_nodes;
    repairs_.push_back(now + rp_.repair_s);
    if (!spare) s_.waits += 1;
    last_node_wait_ = spare ? rp_.spare_swap_s : rp_.replacement_wait_s;
  }
  // Arrivals while the job is down change nothing but are counted (and a failed node still
  // goes to repair); planned maintenance due now is folded into this stop.
  void AbsorbUntil(double t) {
    while (next_unplanned_ <= t && next_unplanned_ < horizon_) {
      const EventClass& c = Pick();
      if (c.unexpected) {
        s_.interruptions += 1;
        if (c.replace_node) TakeNode(next_unplanned_);
      }
      next_unplanned_ = NextUnplanned(next_unplanned_);
    }
    if (next_planned_ <= t) next_planned_ = t + Exp(1.0 / rp_.planned_per_s);
  }
  // From an interruption at `te` back to training: wait (detection, requeue, node), then the
  // restart R, which starts over if a failure hits it. Returns the time training resumes.
  double Recover(double te, double wait) {
    double t = te;
    while (true) {
      if (++events_ > kMaxEventsPerTrial) {
        s_.finished = false;
        return horizon_ < kInf ? horizon_ : t;
      }
      const double w_end = std::min(t + wait, horizon_);
      s_.downtime_s += w_end - t;
      t = w_end;
      AbsorbUntil(t);
      if (t >= horizon_) return t;
      const double r_end = t + rp_.restart_s;
      if (next_unplanned_ < r_end && next_unplanned_ < horizon_) {
        s_.downtime_s += next_unplanned_ - t;
        t = next_unplanned_;
        const EventClass& c = Pick();
        Count(c);
        if (c.replace_node) TakeNode(t);
        wait = c.detect_s + rp_.requeue_s + (c.replace_node ? last_node_wait_ : 0);
        next_unplanned_ = NextUnplanned(t);
        continue;
      }
      const double end = std::min(r_end, horizon_);
      s_.downtime_s += end - t;
      t = end;
      if (next_planned_ <= t) next_planned_ = t + Exp(1.0 / rp_.planned_per_s);
      return t;
    }
  }

  const RunParams& rp_;
  const RunSimOptions& opt_;
  std::mt19937_64 rng_;
  double lambda_ = 0;
  double weibull_scale_ = 0, inv_shape_ = 1;
  double tau_ = 0, delta_ = 0, lag_ = 0, delta_eff_ = 0, a_ = 0, horizon_ = kInf;
  double next_unplanned_ = kInf, next_planned_ = kInf;
  std::vector<double> repairs_;  // return times, ascending (repair_s is constant)
  size_t repair_head_ = 0;
  double last_node_wait_ = 0;
  int64_t events_ = 0;
  TrialStats s_;
};

Quantiles Summarize(std::vector<double>& v) {
  Quantiles q;
  if (v.empty()) return q;
  double sum = 0;
  for (double x : v) sum += x;
  q.mean = sum / static_cast<double>(v.size());
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    const double pos = p * static_cast<double>(v.size() - 1);
    const auto i = static_cast<size_t>(std::floor(pos));
    const size_t j = std::min(i + 1, v.size() - 1);
    return v[i] + (pos - static_cast<double>(i)) * (v[j] - v[i]);
  };
  q.p10 = at(0.10);
  q.p50 = at(0.50);
  q.p90 = at(0.90);
  return q;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

core::Result<RunSimResult> SimulateRun(const RunParams& rp, const RunSimOptions& opt) {
  if (opt.trials < 1 || opt.trials > 10'000'000)
    return Status::InvalidArgument("trials: must be in [1, 10000000] (got " + std::to_string(opt.trials) + ")");
  if (!(opt.interval_s > 0) || !std::isfinite(opt.interval_s))
    return Status::InvalidArgument("interval_s: must be > 0 (got " + Num(opt.interval_s) + ")");
  const bool work = opt.work_s > 0 && std::isfinite(opt.work_s);
  const bool horizon = opt.horizon_s > 0 && std::isfinite(opt.horizon_s);
  if (work == horizon)
    return Status::InvalidArgument("work_s, horizon_s: exactly one must be > 0 (got " + Num(opt.work_s) + ", " +
                                   Num(opt.horizon_s) + ")");
  if (rp.arrivals == core::Arrivals::kWeibull && !(rp.weibull_shape > 0))
    return Status::InvalidArgument("weibull_shape: must be > 0 (got " + Num(rp.weibull_shape) + ")");
  const core::GoodputEstimate g = core::ExpectedGoodput(rp, opt.interval_s);
  if (!(g.wall_per_work <= 1000))
    return Status::InvalidArgument("interval_s: with interruptions every " + Num(g.mtbf_s) +
                                   " s and checkpoints every " + Num(opt.interval_s) +
                                   " s the run would take more than 1000x its training time");

  const auto n = static_cast<size_t>(opt.trials);
  std::vector<double> days(n), goodput(n), interruptions(n), planned(n), spikes(n), waits(n), lost(n), down(n), ckpt(n),
      tokens(n), gpu_hours(n), cost(n);
  for (size_t i = 0; i < n; ++i) {
    Trial trial(rp, opt, SplitMix64(opt.seed ^ SplitMix64(i)));
    const TrialStats s = trial.Run();
    if (!s.finished)
      return Status::InvalidArgument("interval_s: trial " + std::to_string(i) + " handled " +
                                     std::to_string(kMaxEventsPerTrial) + " events without finishing");
    days[i] = s.wall_s / 86400.0;
    goodput[i] = s.wall_s > 0 ? s.work_s / s.wall_s : 1.0;
    interruptions[i] = s.interruptions;
    planned[i] = s.planned;
    spikes[i] = s.spikes;
    waits[i] = s.waits;
    lost[i] = s.lost_s / 3600.0;
    down[i] = s.downtime_s / 3600.0;
    ckpt[i] = s.checkpoint_s / 3600.0;
    tokens[i] = s.work_s * opt.tokens_per_s;
    gpu_hours[i] = s.wall_s / 3600.0 * opt.billed_gpus;
    cost[i] = gpu_hours[i] * opt.price_per_gpu_hour_usd;
  }
  RunSimResult r;
  r.trials = opt.trials;
  r.days = Summarize(days);
  r.goodput = Summarize(goodput);
  r.interruptions = Summarize(interruptions);
  r.planned = Summarize(planned);
  r.loss_spikes = Summarize(spikes);
  r.replacement_waits = Summarize(waits);
  r.lost_work_h = Summarize(lost);
  r.downtime_h = Summarize(down);
  r.checkpoint_h = Summarize(ckpt);
  r.tokens = Summarize(tokens);
  r.gpu_hours = Summarize(gpu_hours);
  r.cost_usd = Summarize(cost);
  return r;
}

core::Result<ReliabilityReport> EstimateReliability(const core::Scenario& s, const core::MemoryReport& mem,
                                                    const StepEstimate& step, const core::FailureModel& f,
                                                    const ReliabilityOptions& opt) {
  const bool by_tokens = opt.tokens > 0 && std::isfinite(opt.tokens);
  const bool by_days = opt.days > 0 && std::isfinite(opt.days);
  if (by_tokens == by_days)
    return Status::InvalidArgument("tokens, days: give exactly one, > 0 (got " + Num(opt.tokens) + ", " +
                                   Num(opt.days) + ")");
  if (opt.interval_s < 0 || !std::isfinite(opt.interval_s))
    return Status::InvalidArgument("interval_s: must be > 0, or 0 for the optimum (got " + Num(opt.interval_s) + ")");
  if (by_tokens && !(step.tokens_per_s > 0))
    return Status::InvalidArgument("step.tokens_per_s: must be > 0 to turn tokens into time (got " +
                                   Num(step.tokens_per_s) + ")");
  ReliabilityReport r;
  r.rates = core::JobRates(f, s.plan.gpus, std::max<int64_t>(s.cluster.gpus_per_node, 1));
  r.checkpoint = core::EstimateCheckpoint(mem, s.plan, s.cluster, f);
  r.spare_nodes = opt.spare_nodes >= 0 ? opt.spare_nodes : core::DefaultSpareNodes(f, r.rates.nodes);
  auto rp = core::MakeRunParams(f, r.rates, r.checkpoint, opt.mode, r.spare_nodes);
  if (!rp.ok()) return rp.status();
  r.params = *rp;
  const double lambda = r.params.UnplannedPerS();
  const double m = lambda > 0 ? 1.0 / lambda : kInf;
  r.young_s = core::YoungInterval(r.params.ckpt_blocking_s, m);
  r.daly_s = core::DalyInterval(r.params.ckpt_blocking_s, m);
  r.optimal_s = core::OptimalInterval(r.params);
  r.interval_s = opt.interval_s > 0 ? opt.interval_s : r.optimal_s;
  r.expected = core::ExpectedGoodput(r.params, r.interval_s);
  r.at_optimum = core::ExpectedGoodput(r.params, r.optimal_s);
  r.tokens_per_s = step.tokens_per_s;

  std::vector<double> ladder = opt.sweep_intervals_s;
  if (ladder.empty()) ladder = {60, 120, 300, 600, 900, 1800, 3600, 7200, 14400};
  ladder.push_back(r.interval_s);
  ladder.push_back(r.optimal_s);
  std::sort(ladder.begin(), ladder.end());
  for (double x : ladder) {
    if (!(x > 0)) continue;
    if (!r.sweep.empty() && std::fabs(x - r.sweep.back().interval_s) <= 1e-9 * x) continue;
    r.sweep.push_back(core::ExpectedGoodput(r.params, x));
  }

  double unexpected_per_s = 0;
  for (const auto& c : r.params.classes)
    if (c.unexpected) unexpected_per_s += c.per_s;
  double wall_s = 0, work_s = 0;
  if (by_tokens) {
    r.work_s = opt.tokens / step.tokens_per_s;
    r.ideal_days = r.work_s / 86400.0;
    work_s = r.work_s;
    wall_s = r.work_s * r.expected.wall_per_work;
    r.expected_tokens = opt.tokens;
  } else {
    r.horizon_s = opt.days * 86400.0;
    wall_s = r.horizon_s;
    work_s = r.horizon_s / r.expected.wall_per_work;
    r.expected_tokens = work_s * step.tokens_per_s;
  }
  r.expected_days = wall_s / 86400.0;
  r.expected_interruptions = unexpected_per_s * wall_s;
  r.expected_planned = r.expected.planned_per_work * work_s;

  // The Monte Carlo's work: every class of unplanned event (interruptions and loss spikes) and the
  // planned stops, per trial, times the trials.
  const double events = (r.params.UnplannedPerS() * wall_s + r.expected_planned) * static_cast<double>(opt.trials);
  // GPUs paid for while the run holds the cluster: the job and its hot spares.
  const double billed = static_cast<double>(s.plan.gpus + r.spare_nodes * s.cluster.gpus_per_node);
  if (!(events <= kMaxMonteCarloEvents)) {
    auto point = [](double v) { return Quantiles{v, v, v, v}; };
    r.mc = RunSimResult{};
    r.mc.days = point(r.expected_days);
    r.mc.goodput = point(r.expected.goodput);
    r.mc.interruptions = point(r.expected_interruptions);
    r.mc.planned = point(r.expected_planned);
    r.mc.checkpoint_h = point(r.expected.checkpoint_frac * wall_s / 3600.0);
    r.mc.tokens = point(r.expected_tokens);
    r.mc.gpu_hours = point(wall_s / 3600.0 * billed);
    r.mc.cost_usd = point(wall_s / 3600.0 * billed * s.cluster.price_per_gpu_hour_usd);
    r.mc.skipped = "Monte Carlo skipped: " + Num(events / static_cast<double>(opt.trials)) +
                   " events expected per trial x " + std::to_string(opt.trials) + " trials exceeds its bound of " +
                   Num(kMaxMonteCarloEvents) + " events; the closed form (expected values) is shown";
    return r;
  }
  RunSimOptions so;
  so.trials = opt.trials;
  so.seed = opt.seed;
  so.interval_s = r.interval_s;
  so.work_s = r.work_s;
  so.horizon_s = r.horizon_s;
  so.billed_gpus = billed;
  so.price_per_gpu_hour_usd = s.cluster.price_per_gpu_hour_usd;
  so.tokens_per_s = step.tokens_per_s;
  auto mc = SimulateRun(r.params, so);
  if (!mc.ok()) return mc.status();
  r.mc = *mc;
  return r;
}

}  // namespace meshplan::sim
