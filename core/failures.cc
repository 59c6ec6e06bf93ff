#include "core/failures.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/diagnostics.h"
#include "core/presets.h"
#include "core/spec_json.h"
#include "core/units.h"

namespace meshplan::core {

const char* Name(CheckpointMode v) { return v == CheckpointMode::kAsync ? "async" : "sync"; }
const char* Name(Arrivals v) { return v == Arrivals::kExponential ? "exponential" : "weibull"; }
bool FromName(const std::string& text, CheckpointMode* out) {
  if (text == "async") *out = CheckpointMode::kAsync;
  else if (text == "sync") *out = CheckpointMode::kSync;
  else return false;
  return true;
}
bool FromName(const std::string& text, Arrivals* out) {
  if (text == "exponential") *out = Arrivals::kExponential;
  else if (text == "weibull") *out = Arrivals::kWeibull;
  else return false;
  return true;
}

namespace {

using Json = nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
// The longest delay any failure-file time may state: detection, requeue, restart, repair and
// the like take seconds to days; 1e7 s (116 days) is a unit slip (ms typed as s), and would make
// the run, and its Monte Carlo, unbounded.
constexpr double kMaxDelayS = 1e7;

bool FromName(const std::string& text, FailureScale* out) {
  if (text == "gpu") *out = FailureScale::kGpu;
  else if (text == "node") *out = FailureScale::kNode;
  else return false;
  return true;
}

std::string Show(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Reads one JSON object's fields, recording every problem under its path; Finish() reports keys
// nobody asked for. (The same contract as spec_json.cc's reader, for the failure-model schema.)
class Reader {
 public:
  Reader(const Json* j, std::string path, Diagnostics* d) : j_(j), path_(std::move(path)), d_(d) {
    if (j_ && !j_->is_object()) {
      d_->Error(path_, "must be a JSON object (got " + Show(*j_) + ")");
      j_ = nullptr;
    }
  }
  std::string Path(const std::string& key) const { return path_ + "." + key; }

  const Json* Find(const char* key, bool required = false) {
    known_.insert(key);
    if (!j_) return nullptr;
    auto it = j_->find(key);
    if (it == j_->end() || it->is_null()) {
      if (required) d_->Error(Path(key), "is required");
      return nullptr;
    }
    return &*it;
  }
  bool String(const char* key, std::string* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_string()) {
      *out = v->get<std::string>();
      return true;
    }
    d_->Error(Path(key), "must be a string (got " + Show(*v) + ")");
    return false;
  }
  bool Bool(const char* key, bool* out) {
    const Json* v = Find(key);
    if (!v) return false;
    if (v->is_boolean()) {
      *out = v->get<bool>();
      return true;
    }
    d_->Error(Path(key), "must be true or false (got " + Show(*v) + ")");
    return false;
  }
  // A finite number in [lo, hi] (hi may be infinity).
  bool Number(const char* key, double* out, double lo, double hi, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (!v->is_number() || !std::isfinite(v->get<double>())) {
      d_->Error(Path(key), "must be a number (got " + Show(*v) + ")");
      return false;
    }
    return InRange(key, v->get<double>(), lo, hi, out);
  }
  bool Count(const char* key, int64_t* out, int64_t lo, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (!(v->is_number_integer() || v->is_number_unsigned()) ||
        (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
      d_->Error(Path(key), "must be an integer (got " + Show(*v) + ")");
      return false;
    }
    const int64_t x = v->get<int64_t>();
    if (x < lo) {
      d_->Error(Path(key), "must be >= " + std::to_string(lo) + " (got " + std::to_string(x) + ")");
      return false;
    }
    *out = x;
    return true;
  }
  // Bytes per second: a number or a string with a unit ("25GB/s", "400Gb/s").
  bool Bandwidth(const char* key, double* out, double lo) {
    const Json* v = Find(key);
    if (!v) return false;
    double x = 0;
    if (v->is_number() && std::isfinite(v->get<double>())) {
      x = v->get<double>();
    } else if (!(v->is_string() && ParseBandwidth(v->get<std::string>(), &x))) {
      d_->Error(Path(key), "must be bytes per second or a rate with a unit such as \"25GB/s\" (got " + Show(*v) + ")");
      return false;
    }
    return InRange(key, x, lo, kInf, out);
  }
  template <typename E>
  bool Enum(const char* key, E* out, const char* choices, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_string() && FromName(v->get<std::string>(), out)) return true;
    d_->Error(Path(key), std::string("must be one of ") + choices + " (got " + Show(*v) + ")");
    return false;
  }
  void Finish() {
    if (!j_) return;
    for (auto it = j_->begin(); it != j_->end(); ++it) {
      if (known_.count(it.key())) continue;
      const std::string best = NearestKnownKey(it.key(), {known_.begin(), known_.end()});
      d_->Error(Path(it.key()), "is not a known field" + (best.empty() ? "" : " (did you mean \"" + best + "\"?)"));
    }
  }

 private:
  bool InRange(const char* key, double x, double lo, double hi, double* out) {
    if (x < lo || x > hi) {
      d_->Error(Path(key), "must be in [" + Num(lo) + ", " + (std::isinf(hi) ? std::string("inf") : Num(hi)) +
                               "] (got " + Num(x) + ")");
      return false;
    }
    *out = x;
    return true;
  }

  const Json* j_;
  std::string path_;
  Diagnostics* d_;
  std::set<std::string> known_;
};

struct Exposure {
  bool given = false;
  double gpu_hours = 0, node_hours = 0;
};

// One component: a rate per GPU- or node-hour, given directly or as an observed count over the
// file's exposure.
FailureComponent ReadComponent(const Json& j, const std::string& path, const Exposure& exposure, bool planned,
                               Diagnostics* d) {
  FailureComponent c;
  Reader r(&j, path, d);
  r.String("name", &c.name, !planned);
  if (planned && c.name.empty()) c.name = "Planned maintenance";
  r.String("category", &c.category);
  r.Enum("scale", &c.scale, "gpu|node", true);
  std::string note;
  r.String("note", &note);
  // Per GPU- or node-hour: fleets see ~2e-5 interruptions per GPU-hour (Llama 3, arXiv 2407.21783
  // Table 5: 419 in 54 days on 16,384 GPUs); one an hour for every component is a unit slip.
  const bool has_rate = r.Number("rate_per_hour", &c.rate_per_hour, 0, 1);
  const bool has_count = r.Count("observed", &c.observed, 0);
  if (!planned) {
    r.Bool("replace_node", &c.replace_node);
    r.Bool("silent", &c.silent);
  }
  // Presence decides the "both"/"neither" errors; a present but invalid value has its own error.
  auto present = [&](const char* key) { return j.is_object() && j.contains(key) && !j[key].is_null(); };
  if (present("rate_per_hour") && present("observed")) {
    d->Error(path, "give observed (a count over the file's exposure) or rate_per_hour, not both");
  } else if (has_count) {
    if (!exposure.given) {
      d->Error(r.Path("observed"), "needs the file's \"exposure\" (gpus, gpus_per_node, days) to become a rate");
    } else {
      const double hours = c.scale == FailureScale::kGpu ? exposure.gpu_hours : exposure.node_hours;
      c.rate_per_hour = static_cast<double>(c.observed) / hours;
    }
  } else if (!has_rate && j.is_object() && !present("rate_per_hour") && !present("observed")) {
    d->Error(path, "needs observed (a count over the file's exposure) or rate_per_hour");
  }
  r.Finish();
  return c;
}

}  // namespace

Result<FailureModel> ParseFailureModelJson(const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("failures: not valid JSON: ") + e.what());
  }
  Diagnostics d;
  FailureModel f;
  Reader r(&j, "failures", &d);
  r.String("name", &f.name, true);
  r.String("source", &f.source);
  std::string ignored;
  r.String("derivation", &ignored);
  r.Find("notes");  // free-form explanations, keyed by field

  Exposure exposure;
  if (const Json* e = r.Find("exposure")) {
    Reader er(e, r.Path("exposure"), &d);
    int64_t gpus = 0, per_node = 0;
    double days = 0;
    // Each read on its own line so that every bad field is reported, not only the first.
    const bool gpus_ok = er.Count("gpus", &gpus, 1, true);
    const bool per_node_ok = er.Count("gpus_per_node", &per_node, 1, true);
    const bool days_ok = er.Number("days", &days, 1e-9, 36500, true);  // a century of observation
    const bool ok = gpus_ok && per_node_ok && days_ok;
    er.Finish();
    if (ok) {
      exposure.given = true;
      exposure.gpu_hours = static_cast<double>(gpus) * days * 24;
      exposure.node_hours = std::ceil(static_cast<double>(gpus) / static_cast<double>(per_node)) * days * 24;
    }
  }
  if (const Json* u = r.Find("unexpected", true)) {
    if (!u->is_array() || u->empty()) {
      d.Error(r.Path("unexpected"), "must be a non-empty array of components (got " + Show(*u) + ")");
    } else {
      for (size_t i = 0; i < u->size(); ++i)
        f.components.push_back(
            ReadComponent((*u)[i], r.Path("unexpected") + "[" + std::to_string(i) + "]", exposure, false, &d));
    }
  }
  f.planned.name = "Planned maintenance";
  f.planned.scale = FailureScale::kNode;
  if (const Json* p = r.Find("planned")) f.planned = ReadComponent(*p, r.Path("planned"), exposure, true, &d);

  r.Number("silent_detection_s", &f.silent_detection_s, 0, kMaxDelayS);
  r.Number("loss_spikes_per_day", &f.loss_spikes_per_day, 0, kMaxLossSpikesPerDay);
  r.Number("loss_spike_detection_s", &f.loss_spike_detection_s, 0, kMaxDelayS);
  if (const Json* rs = r.Find("restart")) {
    Reader rr(rs, r.Path("restart"), &d);
    RestartOverheads& o = f.restart;
    rr.Number("detection_s", &o.detection_s, 0, kMaxDelayS);
    rr.Number("requeue_s", &o.requeue_s, 0, kMaxDelayS);
    rr.Number("spare_swap_s", &o.spare_swap_s, 0, kMaxDelayS);
    rr.Number("replacement_wait_s", &o.replacement_wait_s, 0, kMaxDelayS);
    rr.Number("reinit_s", &o.reinit_s, 0, kMaxDelayS);
    rr.Number("warmup_s", &o.warmup_s, 0, kMaxDelayS);
    rr.Finish();
  }
  if (const Json* sp = r.Find("spares")) {
    Reader sr(sp, r.Path("spares"), &d);
    sr.Number("hot_spare_fraction", &f.hot_spare_fraction, 0, 1);
    sr.Number("repair_s", &f.repair_s, 0, kMaxDelayS);
    sr.Finish();
  }
  if (const Json* ck = r.Find("checkpoint")) {
    Reader cr(ck, r.Path("checkpoint"), &d);
    cr.Bandwidth("snapshot_bytes_per_s", &f.snapshot_bytes_per_s, 1);
    cr.Bandwidth("restore_bytes_per_s", &f.restore_bytes_per_s, 0);
    cr.Finish();
  }
  if (const Json* ar = r.Find("arrivals")) {
    Reader ar_r(ar, r.Path("arrivals"), &d);
    ar_r.Enum("distribution", &f.arrivals, "exponential|weibull");
    ar_r.Number("weibull_shape", &f.weibull_shape, 0.05, 20);
    ar_r.Finish();
  }
  r.Finish();
  if (d.has_errors()) return d.ToStatus();
  return f;
}

Result<FailureModel> LoadFailureModel(const std::string& ref) {
  if (LooksLikePath(ref)) {
    Result<std::string> text = ReadTextFile(ref);
    if (!text.ok()) return text.status();
    Result<FailureModel> f = ParseFailureModelJson(*text);
    if (!f.ok()) return Status::InvalidArgument(ref + ":\n" + f.status().message());
    return f;
  }
  Result<std::string> text = PresetText("failures", ref);
  if (!text.ok()) return text.status();
  Result<FailureModel> f = ParseFailureModelJson(*text);
  if (!f.ok()) return Status::Internal("built-in preset failures/" + ref + " is invalid:\n" + f.status().message());
  return f;
}

// ---------------------------------------------------------------------------------------------

JobFailureRates JobRates(const FailureModel& f, int64_t gpus, int64_t gpus_per_node) {
  JobFailureRates r;
  r.gpus = gpus;
  r.nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
  auto job_rate = [&](const FailureComponent& c) {
    return c.rate_per_hour * static_cast<double>(c.scale == FailureScale::kGpu ? r.gpus : r.nodes);
  };
  for (const auto& c : f.components) {
    const double x = job_rate(c);
    r.component_per_hour.push_back(x);
    r.unexpected_per_hour += x;
    if (c.replace_node) r.replace_per_hour += x;
    if (c.silent) r.silent_per_hour += x;
  }
  r.planned_per_hour = job_rate(f.planned);
  r.loss_spikes_per_hour = f.loss_spikes_per_day / 24.0;
  r.mtbf_h = r.unexpected_per_hour > 0 ? 1.0 / r.unexpected_per_hour : kInf;
  return r;
}

int64_t DefaultSpareNodes(const FailureModel& f, int64_t nodes) {
  // The small epsilon keeps 0.015 x 2000 = 30 from rounding up to 31 through binary error.
  return static_cast<int64_t>(std::ceil(f.hot_spare_fraction * static_cast<double>(nodes) - 1e-9));
}

CheckpointCost EstimateCheckpoint(const MemoryReport& mem, const PlanSpec& p, const ClusterSpec& c,
                                  const FailureModel& f) {
  CheckpointCost k;
  // Unique state, each parameter's weights, master copy and moments once: a sharded checkpoint
  // (Megatron dist-ckpt, PyTorch DCP) writes replicated shards from one rank only. Gradients are
  // recomputed by the next step, so they are not saved.
  const ModelStateBytes s = ShardedModelStates(static_cast<double>(mem.params.total), p, 1);
  k.total_bytes = static_cast<int64_t>(std::llround(s.weights + s.master_weights + s.moments));
  // A rank's states wherever they live: on the GPU, or in host memory or on NVMe where the plan
  // offloads them (StageMemory::offloaded_state_bytes), which the snapshot copies as well.
  int64_t resident = 0;  // host memory a rank's offloads already hold (states, activations)
  for (const auto& st : mem.stages) {
    k.per_gpu_bytes = std::max(k.per_gpu_bytes, st.weights_bytes + st.master_weights_bytes +
                                                    st.optimizer_moments_bytes + st.offloaded_state_bytes);
    resident = std::max(resident, st.host_bytes);
  }
  k.per_node_bytes = k.per_gpu_bytes * std::max<int64_t>(c.gpus_per_node, 1);
  k.resident_host_bytes_per_node = resident * std::max<int64_t>(c.gpus_per_node, 1);
  const double total = static_cast<double>(k.total_bytes);
  k.snapshot_s = static_cast<double>(k.per_gpu_bytes) / f.snapshot_bytes_per_s;
  k.upload_s = c.storage_bytes_per_s > 0 ? total / c.storage_bytes_per_s : kInf;
  k.sync_write_s = std::max(k.upload_s, k.snapshot_s);
  const double restore_bw = f.restore_bytes_per_s > 0 ? f.restore_bytes_per_s : c.storage_bytes_per_s;
  k.restore_s = restore_bw > 0 ? total / restore_bw : kInf;
  // The snapshot's staging beside what the node's offloads already keep in host memory.
  k.host_memory_ok = c.host_memory_bytes_per_node <= 0 ||
                     k.per_node_bytes + k.resident_host_bytes_per_node <= c.host_memory_bytes_per_node;
  return k;
}

// ---------------------------------------------------------------------------------------------

double RunParams::UnplannedPerS() const {
  double x = 0;
  for (const auto& c : classes) x += c.per_s;
  return x;
}
double RunParams::ReplacePerS() const {
  double x = 0;
  for (const auto& c : classes)
    if (c.replace_node) x += c.per_s;
  return x;
}

Result<RunParams> MakeRunParams(const FailureModel& f, const JobFailureRates& rates, const CheckpointCost& ckpt,
                                CheckpointMode mode, int64_t spare_nodes) {
  Diagnostics d;
  if (!std::isfinite(ckpt.upload_s))
    d.Error("cluster.storage_bytes_per_s", "must be > 0 to time checkpoint writes (got 0)");
  if (!std::isfinite(ckpt.restore_s))
    d.Error("failures.checkpoint.restore_bytes_per_s", "unknown: set it, or cluster.storage_bytes_per_s");
  if (spare_nodes < 0) d.Error("spare_nodes", "must be >= 0 (got " + std::to_string(spare_nodes) + ")");
  if (f.arrivals == Arrivals::kWeibull && !(f.weibull_shape > 0))
    d.Error("failures.arrivals.weibull_shape", "must be > 0 (got " + Num(f.weibull_shape) + ")");
  if (d.has_errors()) return d.ToStatus();

  RunParams rp;
  // Group the components by what an interruption costs: replace a node or not, announced (a
  // crash or hang, found after detection_s) or silent (found silent_detection_s after the fact).
  struct Group {
    const char* name;
    bool replace, silent;
  };
  const Group groups[] = {{"hardware", true, false},
                          {"hardware, silent (SDC)", true, true},
                          {"software/other", false, false},
                          {"software, silent", false, true}};
  for (const auto& g : groups) {
    double per_hour = 0;
    for (size_t i = 0; i < f.components.size(); ++i) {
      const auto& c = f.components[i];
      if (c.replace_node == g.replace && c.silent == g.silent) per_hour += rates.component_per_hour[i];
    }
    if (per_hour <= 0) continue;
    EventClass e;
    e.name = g.name;
    e.per_s = per_hour / 3600.0;
    e.replace_node = g.replace;
    e.detect_s = g.silent ? 0 : f.restart.detection_s;
    e.rollback_s = g.silent ? f.silent_detection_s : 0;
    rp.classes.push_back(e);
  }
  if (rates.loss_spikes_per_hour > 0) {
    EventClass e;
    e.name = "loss spike";
    e.per_s = rates.loss_spikes_per_hour / 3600.0;
    e.unexpected = false;
    e.rollback_s = f.loss_spike_detection_s;
    rp.classes.push_back(e);
  }
  rp.planned_per_s = rates.planned_per_hour / 3600.0;
  rp.mode = mode;
  if (mode == CheckpointMode::kAsync) {
    rp.ckpt_blocking_s = ckpt.snapshot_s;
    rp.ckpt_lag_s = ckpt.upload_s;
  } else {
    rp.ckpt_blocking_s = ckpt.sync_write_s;
    rp.ckpt_lag_s = 0;
  }
  rp.requeue_s = f.restart.requeue_s;
  rp.spare_swap_s = f.restart.spare_swap_s;
  rp.replacement_wait_s = f.restart.replacement_wait_s;
  rp.restart_s = f.restart.reinit_s + ckpt.restore_s + f.restart.warmup_s;
  rp.spare_nodes = spare_nodes;
  rp.repair_s = f.repair_s;
  rp.arrivals = f.arrivals;
  rp.weibull_shape = f.arrivals == Arrivals::kWeibull ? f.weibull_shape : 1.0;
  return rp;
}

// ---------------------------------------------------------------------------------------------

double YoungInterval(double delta_s, double mtbf_s) { return std::sqrt(2.0 * delta_s * mtbf_s); }

double DalyInterval(double delta_s, double mtbf_s) {
  if (delta_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = delta_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * delta_s * mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta_s;
}

double SpareShortfallProbability(double mean_in_repair, int64_t spares) {
  if (spares <= 0) return 1.0;
  if (mean_in_repair <= 0) return 0.0;
  // 1 - P(X <= spares - 1), terms in log space: e^{-m} underflows for m > 745.
  double cdf = 0;
  const double log_m = std::log(mean_in_repair);
  double log_k_factorial = 0;  // log(k!), built up term by term (std::lgamma races on signgam)
  for (int64_t k = 0; k < spares; ++k) {
    if (k > 1) log_k_factorial += std::log(static_cast<double>(k));
    const double log_term = -mean_in_repair + static_cast<double>(k) * log_m - log_k_factorial;
    cdf += std::exp(log_term);
    if (static_cast<double>(k) > mean_in_repair && log_term < -50) break;  // the tail adds nothing
  }
  return std::clamp(1.0 - cdf, 0.0, 1.0);
}

GoodputEstimate ExpectedGoodput(const RunParams& rp, double interval_s) {
  GoodputEstimate g;
  const double tau = interval_s;
  const double delta = rp.ckpt_blocking_s;
  const double lag = rp.ckpt_lag_s;
  // An async pause cannot start before the previous upload finished (one staging buffer).
  const double delta_eff = delta + std::max(0.0, lag - tau);
  const double a = tau + delta_eff;
  g.interval_s = tau;
  g.blocking_s = delta_eff;
  const double lambda = rp.UnplannedPerS();
  g.spare_shortfall = SpareShortfallProbability(rp.ReplacePerS() * rp.repair_s, rp.spare_nodes);
  // Shortfalls come in spells (a node is in repair for days): while the job waits for a node,
  // the hardware failures that arrive are absorbed by that wait. Of the wall-clock time without
  // a spare, a share x/(1+x) is spent waiting (x = replace rate x wait), so of the hardware
  // failures that do stop training, P/(1 + (1-P) x) find no spare.
  const double x = rp.ReplacePerS() * rp.replacement_wait_s;
  g.wait_share = g.spare_shortfall / (1 + (1 - g.spare_shortfall) * x);
  double f_wall = a / tau;  // wall per work without unplanned interruptions
  double n_int = 0;         // interruptions that stop training, per unit of work
  if (lambda > 0) {
    const double m = 1.0 / lambda;
    double ew = 0, q = 0;
    for (const auto& c : rp.classes) {
      const double p = c.per_s / lambda;
      double w = c.detect_s + rp.requeue_s;
      if (c.replace_node) w += g.wait_share * rp.replacement_wait_s + (1 - g.wait_share) * rp.spare_swap_s;
      // Work redone beyond the segment itself: the upload window (the newest checkpoint is not
      // restorable yet) and, for silent events, the time the state was already bad.
      const double r = rp.restart_s + lag + c.rollback_s;
      ew += p * w;
      q += p * std::exp(-r / m);
    }
    g.mtbf_s = m;
    g.mean_wait_s = ew;
    // Daly 2006's complete model: a segment of a = tau + delta must run failure-free; each failure
    // costs the time to it, a wait W (outside the failure clock) and a restart R (inside it).
    f_wall = (m + ew) * std::expm1(a / m) / (tau * q);
    // Failures arriving during a wait are absorbed: interrupting ones arrive over the rest.
    n_int = lambda * f_wall / (1 + lambda * ew);
  } else {
    g.mtbf_s = kInf;
  }
  // Planned stops arrive while training runs (not while the job is already down) and cost a
  // checkpoint (pause + upload) and a restart, without losing work.
  const double running = std::max(0.0, f_wall - n_int * (g.mean_wait_s + rp.restart_s));
  const double planned_cost = delta + lag + rp.requeue_s + rp.restart_s;
  g.planned_per_work = rp.planned_per_s * running;
  const double t = f_wall + g.planned_per_work * planned_cost;
  if (!std::isfinite(t)) {
    g.wall_per_work = kInf;
    g.goodput = 0;
    g.useful_frac = 0;
    g.failure_frac = 1;
    return g;
  }
  g.wall_per_work = t;
  g.goodput = 1.0 / t;
  g.useful_frac = 1.0 / t;
  g.checkpoint_frac = (delta_eff / tau) / t;
  g.planned_frac = g.planned_per_work * planned_cost / t;
  g.failure_frac = std::max(0.0, 1.0 - g.useful_frac - g.checkpoint_frac - g.planned_frac);
  return g;
}

double OptimalInterval(const RunParams& rp) {
  // The goodput is unimodal in tau except for a kink where tau crosses the upload time; a
  // log-spaced scan finds the right basin, golden-section search polishes it.
  constexpr double kLo = 1.0, kHi = 1e8;
  constexpr int kSteps = 320;  // 40 per decade
  auto eval = [&](double log_tau) { return ExpectedGoodput(rp, std::exp(log_tau)).goodput; };
  const double l0 = std::log(kLo), l1 = std::log(kHi);
  int best = 0;
  double best_g = -1;
  for (int i = 0; i <= kSteps; ++i) {
    const double g = eval(l0 + (l1 - l0) * i / kSteps);
    if (g > best_g) {
      best_g = g;
      best = i;
    }
  }
  double lo = l0 + (l1 - l0) * std::max(0, best - 1) / kSteps;
  double hi = l0 + (l1 - l0) * std::min(kSteps, best + 1) / kSteps;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo);
  double g1 = eval(x1), g2 = eval(x2);
  for (int it = 0; it < 80 && hi - lo > 1e-9; ++it) {
    if (g1 < g2) {
      lo = x1;
      x1 = x2;
      g1 = g2;
      x2 = lo + phi * (hi - lo);
      g2 = eval(x2);
    } else {
      hi = x2;
      x2 = x1;
      g2 = g1;
      x1 = hi - phi * (hi - lo);
      g1 = eval(x1);
    }
  }
  const double mid = std::exp((lo + hi) / 2);
  return eval(std::log(mid)) >= best_g ? mid : std::exp(l0 + (l1 - l0) * best / kSteps);
}

}  // namespace meshplan::core
