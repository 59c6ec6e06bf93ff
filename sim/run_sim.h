// Monte Carlo of a whole training run with failures: unplanned interruptions (Poisson, or a
// Weibull renewal process) of the kinds in core::RunParams, periodic checkpoints (a blocking
// pause, then for async an upload that must finish before the checkpoint can be restored and
// before the next pause), work lost since the last restorable checkpoint, restarts that a second
// failure can interrupt, hot spares with repair times, silent corruption and loss spikes that
// force a last-known-good restart, and planned maintenance. Each trial is seeded from (seed,
// trial index), so a result depends on the seed only, not on the order trials run in.
// The model and its closed form (core/failures.h) are described in docs/failures.md.
// Pure functions; thread-safe.
#ifndef MESHPLAN_SIM_RUN_SIM_H_
#define MESHPLAN_SIM_RUN_SIM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/failures.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/status.h"
#include "sim/step_model.h"

namespace meshplan::sim {

struct RunSimOptions {
  int64_t trials = 1000;
  uint64_t seed = 1;
  double interval_s = 1800;  // tau: training seconds between checkpoints
  // The run ends when `work_s` seconds of training are done (tokens / tokens_per_s), or, when
  // work_s is 0, after `horizon_s` seconds of wall-clock time. Exactly one is > 0.
  double work_s = 0;
  double horizon_s = 0;
  double billed_gpus = 0;  // GPUs paid for while the run holds the cluster (job + spares)
  double price_per_gpu_hour_usd = 0;
  double tokens_per_s = 0;  // at full speed; converts training time to tokens
};

// Distribution of one quantity over the trials (linear interpolation between order statistics).
struct Quantiles {
  double mean = 0, p10 = 0, p50 = 0, p90 = 0;
};

struct RunSimResult {
  int64_t trials = 0;
  Quantiles days;           // wall-clock
  Quantiles goodput;        // training time kept / wall-clock time
  Quantiles interruptions;  // unexpected (loss spikes not included)
  Quantiles planned;        // planned maintenance stops
  Quantiles loss_spikes;
  Quantiles replacement_waits;  // hardware failures that found no free spare
  Quantiles lost_work_h;        // training redone
  Quantiles downtime_h;         // detection, requeue, replacement, restart (no planned stops)
  Quantiles checkpoint_h;       // checkpoint pauses
  Quantiles tokens;             // trained (horizon runs; the target for work runs)
  Quantiles gpu_hours;          // billed_gpus x wall-clock hours
  Quantiles cost_usd;
  // Empty when the trials ran. Otherwise why they did not (EstimateReliability's work bound,
  // kMaxMonteCarloEvents), and every quantile above is the closed form's expectation (trials 0;
  // the closed form does not split lost work from downtime or count waits: those stay 0).
  std::string skipped;
};

// The Monte Carlo's work bound: trials x the events each trial is expected to handle (unplanned
// interruptions, loss spikes and planned stops; a trial costs O(events)) must stay at or under
// this, about a second of simulation on one core. A larger run (a typo such as a latency in
// seconds that should be microseconds makes a step, and so the run, centuries long) gets the
// closed form instead, which costs the same at any length, and says so.
inline constexpr double kMaxMonteCarloEvents = 2e7;

// InvalidArgument naming the option when trials, interval_s or the stop condition are out of
// range, or when failures arrive so often that the run would not finish (expected wall-clock
// time more than 1000 x the training time).
core::Result<RunSimResult> SimulateRun(const core::RunParams& rp, const RunSimOptions& opt);

// ---------------------------------------------------------------------------------------------
// Everything `meshplan reliability` reports, from a resolved scenario.
// ---------------------------------------------------------------------------------------------
struct ReliabilityOptions {
  core::CheckpointMode mode = core::CheckpointMode::kAsync;
  double interval_s = 0;     // 0: OptimalInterval
  double tokens = 0;         // train this many tokens ...
  double days = 0;           // ... or run this many wall-clock days (exactly one > 0)
  int64_t spare_nodes = -1;  // -1: core::DefaultSpareNodes
  int64_t trials = 1000;
  uint64_t seed = 1;
  std::vector<double> sweep_intervals_s;  // empty: a default ladder around the optimum
};

struct ReliabilityReport {
  core::JobFailureRates rates;
  core::CheckpointCost checkpoint;
  core::RunParams params;
  int64_t spare_nodes = 0;
  double young_s = 0, daly_s = 0, optimal_s = 0;  // delta = the mode's pause, M = unplanned MTBF
  double interval_s = 0;                          // the one simulated
  core::GoodputEstimate expected;                 // closed form at interval_s
  core::GoodputEstimate at_optimum;
  std::vector<core::GoodputEstimate> sweep;  // ascending interval; includes interval_s and optimal_s
  double work_s = 0;                         // training seconds at full speed (tokens runs)
  double horizon_s = 0;                      // wall-clock seconds (days runs)
  double tokens_per_s = 0;
  double ideal_days = 0;              // tokens runs: work without failures or checkpoints
  double expected_days = 0;           // closed form
  double expected_interruptions = 0;  // unexpected, over the run (closed form)
  double expected_planned = 0;
  double expected_tokens = 0;
  RunSimResult mc;
};

// REQUIRES: `mem` and `step` are EstimateMemory / EstimateStep of s (a valid plan).
core::Result<ReliabilityReport> EstimateReliability(const core::Scenario& s, const core::MemoryReport& mem,
                                                    const StepEstimate& step, const core::FailureModel& f,
                                                    const ReliabilityOptions& opt);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_RUN_SIM_H_
