// Failures, checkpoints and goodput over a whole training run (closed form). The inputs are a
// FailureModel (presets/failures/*.json: per-component failure rates per GPU-hour or node-hour,
// derived from the Llama 3 paper's 54-day interruption table, plus restart overheads and spares),
// the job size, and the checkpoint the memory model implies. The outputs are the job's failure
// rate and MTBF, checkpoint write/restore times (synchronous vs asynchronous), Young's and Daly's
// optimal intervals, and the expected goodput (useful training time / wall-clock time) in closed
// form. sim/run_sim.h runs the same model as a Monte Carlo. Formulas and sources: docs/failures.md.
// Units: seconds and bytes unless a name says otherwise; rates are per second of wall-clock time
// unless named `_per_hour`. Pure functions; thread-safe.
#ifndef MESHPLAN_CORE_FAILURES_H_
#define MESHPLAN_CORE_FAILURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/specs.h"
#include "core/status.h"

namespace meshplan::core {

// ---------------------------------------------------------------------------------------------
// The failure model (a preset or a user file)
// ---------------------------------------------------------------------------------------------
enum class FailureScale { kGpu, kNode };  // a component's rate is per GPU-hour or per node-hour
enum class CheckpointMode { kAsync, kSync };
enum class Arrivals { kExponential, kWeibull };

const char* Name(CheckpointMode v);  // "async", "sync"
const char* Name(Arrivals v);        // "exponential", "weibull"
bool FromName(const std::string& text, CheckpointMode* out);
bool FromName(const std::string& text, Arrivals* out);

// One row of an interruption table: a cause of unexpected job interruptions.
struct FailureComponent {
  std::string name;      // "Faulty GPU"
  std::string category;  // "GPU", "Network", "Host", "Dependency", ...
  FailureScale scale = FailureScale::kGpu;
  double rate_per_hour = 0;   // per GPU-hour (kGpu) or per node-hour (kNode)
  bool replace_node = false;  // hardware: the node leaves the job (a hot spare, or a wait)
  bool silent = false;        // silent data corruption: noticed only after a detection delay
  int64_t observed = 0;       // the count the rate was derived from (0: given as a rate)
};

// Seconds from an interruption back to training. `detection`, `requeue` and the node
// replacement are waits during which nothing runs (a second failure then changes nothing);
// re-initialisation, restore and warm-up run on all GPUs and start over if a failure hits them.
struct RestartOverheads {
  double detection_s = 30;                 // the job notices a hang or a dead rank (watchdog, heartbeat)
  double requeue_s = 30;                   // tear down, reschedule and relaunch the job's processes
  double spare_swap_s = 30;                // hardware failure, a hot spare is free: swap it in
  double replacement_wait_s = 4 * 3600.0;  // hardware failure, no spare free: wait for a node
  double reinit_s = 60;                    // process start, NCCL communicators, model build
  double warmup_s = 30;                    // first steps below full speed, as equivalent lost seconds
};

// Loss spikes a failure model may name, per day: one a minute (a failure file and reliability's
// --loss-spikes-per-day keep to it).
inline constexpr double kMaxLossSpikesPerDay = 1440;

struct FailureModel {
  std::string name;
  std::string source;
  std::vector<FailureComponent> components;  // unexpected interruptions
  FailureComponent planned;                  // planned (maintenance) interruptions
  RestartOverheads restart;
  double silent_detection_s = 600;       // SDC: bad state runs this long before it is caught
  double loss_spikes_per_day = 0;        // whole job; each forces a last-known-good restart
  double loss_spike_detection_s = 1800;  // training past the bad step before the spike is seen
  double hot_spare_fraction = 0;         // spare nodes = ceil(fraction x job nodes)
  double repair_s = 3 * 86400.0;         // a failed node's way back to the spare pool
  double snapshot_bytes_per_s = 25e9;    // per GPU: device -> pinned host memory (async)
  double restore_bytes_per_s = 0;        // aggregate read; 0: the cluster's storage bandwidth
  Arrivals arrivals = Arrivals::kExponential;
  double weibull_shape = 0.7;  // used when arrivals == kWeibull
};

// Parses a failure model. Every problem is reported at once, each naming its field
// ("failures.unexpected[3].observed: must be >= 0 (got -1)"); unknown keys are errors.
Result<FailureModel> ParseFailureModelJson(const std::string& text);
// A preset name (presets/failures/<name>.json) or a path to a JSON file.
Result<FailureModel> LoadFailureModel(const std::string& name_or_path);

// ---------------------------------------------------------------------------------------------
// Failure rate of a job
// ---------------------------------------------------------------------------------------------
struct JobFailureRates {
  int64_t gpus = 0;
  int64_t nodes = 0;                       // ceil(gpus / gpus_per_node)
  std::vector<double> component_per_hour;  // whole job, in FailureModel::components order
  double unexpected_per_hour = 0;          // sum of the components
  double replace_per_hour = 0;             // ... of which need a node replaced
  double silent_per_hour = 0;              // ... of which are silent (SDC)
  double planned_per_hour = 0;
  double loss_spikes_per_hour = 0;
  double mtbf_h = 0;  // 1 / unexpected_per_hour (infinity when 0)
};
// lambda_job = sum_c rate_c x (gpus or nodes). REQUIRES: gpus >= 1, gpus_per_node >= 1.
JobFailureRates JobRates(const FailureModel& f, int64_t gpus, int64_t gpus_per_node);
// ceil(hot_spare_fraction x nodes).
int64_t DefaultSpareNodes(const FailureModel& f, int64_t nodes);

// ---------------------------------------------------------------------------------------------
// Checkpoint size and time
// ---------------------------------------------------------------------------------------------
struct CheckpointCost {
  int64_t total_bytes = 0;     // the job's unique state: weights + master weights + optimizer
                               // moments, each written once (a sharded checkpoint; no gradients)
  int64_t per_gpu_bytes = 0;   // the largest rank's states (what it snapshots)
  int64_t per_node_bytes = 0;  // gpus_per_node x per_gpu_bytes: host memory an async snapshot needs
  // gpus_per_node x the largest rank's host_bytes: what the plan's offloads already keep in the
  // node's host memory beside the snapshot (states, activations, checkpoints)
  int64_t resident_host_bytes_per_node = 0;
  double snapshot_s = 0;       // async blocking time: per_gpu_bytes / snapshot bandwidth
  double upload_s = 0;         // async background upload: total_bytes / storage bandwidth
  double sync_write_s = 0;     // sync blocking time: max(total / storage bw, snapshot_s)
  double restore_s = 0;        // total_bytes / restore bandwidth (default: storage bandwidth)
  bool host_memory_ok = true;  // per_node_bytes + resident <= cluster.host_memory_bytes_per_node (or unknown)
};
// REQUIRES: `mem` is EstimateMemory(model, p, gpu) of a valid plan.
CheckpointCost EstimateCheckpoint(const MemoryReport& mem, const PlanSpec& p, const ClusterSpec& c,
                                  const FailureModel& f);

// ---------------------------------------------------------------------------------------------
// The run-level model: what the closed form and the Monte Carlo (sim/run_sim.h) both consume
// ---------------------------------------------------------------------------------------------
// A kind of unplanned interruption with its own costs. Interruptions of all kinds form one
// arrival process of rate sum(per_s) (Poisson, or a Weibull renewal process); each arrival is of
// kind k with probability per_s[k] / sum.
struct EventClass {
  std::string name;
  double per_s = 0;
  bool unexpected = true;  // counted among unexpected interruptions (false: loss spikes)
  bool replace_node = false;
  double detect_s = 0;    // wait before the restart begins (0 when the cost is rollback_s)
  double rollback_s = 0;  // the state was bad this long before the event: restart from the
                          // last checkpoint taken before that (last-known-good restart)
};

struct RunParams {
  std::vector<EventClass> classes;
  double planned_per_s = 0;  // Poisson; arrivals while the job is down are merged into that stop
  CheckpointMode mode = CheckpointMode::kAsync;
  double ckpt_blocking_s = 0;  // delta: training pauses this long per checkpoint
  double ckpt_lag_s = 0;       // L: a checkpoint becomes restorable this long after the pause
                               // (async upload); the next pause waits for it to finish
  double requeue_s = 0;
  double spare_swap_s = 0;
  double replacement_wait_s = 0;
  double restart_s = 0;     // R: re-initialisation + restore + warm-up (a failure restarts it)
  int64_t spare_nodes = 0;  // hot spares; a failed node returns after repair_s
  double repair_s = 0;
  Arrivals arrivals = Arrivals::kExponential;
  double weibull_shape = 1;

  double UnplannedPerS() const;  // sum of classes' per_s
  double ReplacePerS() const;    // ... of classes that replace a node
};

// Combines the model, the job's rates and its checkpoint. InvalidArgument (naming the field)
// when the storage bandwidth is unknown or a parameter is out of range.
Result<RunParams> MakeRunParams(const FailureModel& f, const JobFailureRates& rates, const CheckpointCost& ckpt,
                                CheckpointMode mode, int64_t spare_nodes);

// ---------------------------------------------------------------------------------------------
// Optimal checkpoint interval and expected goodput
// ---------------------------------------------------------------------------------------------
// Young 1974: tau = sqrt(2 delta M). `delta`: checkpoint time, `M`: mean time between failures.
double YoungInterval(double delta_s, double mtbf_s);
// Daly 2006, the higher-order estimate: tau = sqrt(2 delta M) [1 + sqrt(delta/(2M))/3 + delta/(18M)] - delta for
// delta < 2M, else M.
double DalyInterval(double delta_s, double mtbf_s);
// P(X >= spares) for X ~ Poisson(mean): the chance that a hardware failure finds no free spare
// when nodes spend repair_s in repair (M/G/infinity: nodes in repair are Poisson(rate x repair)).
double SpareShortfallProbability(double mean_in_repair, int64_t spares);

struct GoodputEstimate {
  double interval_s = 0;       // tau: training seconds between checkpoints
  double blocking_s = 0;       // pause per checkpoint, including waiting for the last upload
  double mtbf_s = 0;           // of unplanned interruptions (incl. loss spikes)
  double mean_wait_s = 0;      // E[W]: detection + requeue + node replacement per interruption
  double spare_shortfall = 0;  // share of wall-clock time without a free spare
  double wait_share = 0;       // share of the hardware failures that stop training and
                               // find no spare (they wait replacement_wait_s)
  double wall_per_work = 1;    // expected wall-clock seconds per second of useful training
  double goodput = 1;          // 1 / wall_per_work
  // Shares of wall-clock time (sum to 1): useful training, checkpoint pauses, lost work plus
  // restarts, planned maintenance.
  double useful_frac = 1, checkpoint_frac = 0, failure_frac = 0, planned_frac = 0;
  double planned_per_work = 0;  // planned stops per second of useful training
};
// The expected wall-clock time per unit of work for periodic checkpoints every `interval_s`:
//   T = (M + E[W]) (e^{(tau + delta')/M} - 1) / (tau E[e^{-R_k/M}])   (Daly 2006's complete model,
//   extended with waits W outside the failure clock and per-kind restart costs R_k)
// with R_k = restart_s + L + rollback_k, then planned stops added (docs/failures.md §5).
// Exact for Poisson arrivals; Weibull arrivals need the Monte Carlo. REQUIRES: interval_s > 0.
GoodputEstimate ExpectedGoodput(const RunParams& rp, double interval_s);
// The interval that maximises ExpectedGoodput (log-spaced scan, then golden-section search), in
// [1 s, 1e8 s].
double OptimalInterval(const RunParams& rp);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_FAILURES_H_
