// Whiteboard explanations: the checklist for a scenario (the concept topics are
// sim/explain_topics.cc). Every number is a core/ or sim/ result; this file picks the cases,
// words the rules and formats the numbers. The rules and steps are listed in docs/explain.md.
#include "sim/explain.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

#include "core/defaults.h"
#include "core/collectives.h"
#include "core/diagnostics.h"
#include "core/flops.h"
#include "core/memory.h"
#include "core/params.h"
#include "core/step_graph.h"
#include "core/units.h"
#include "core/validate.h"
#include "sim/accuracy.h"
#include "sim/evaluate.h"
#include "sim/explain_internal.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace meshplan::sim {

double ExplainStep::Value(std::string_view name) const {
  for (const auto& v : values)
    if (v.name == name) return v.value;
  return std::numeric_limits<double>::quiet_NaN();
}

bool ExplainStep::Has(std::string_view name) const {
  for (const auto& v : values)
    if (v.name == name) return true;
  return false;
}

const ExplainStep* Explanation::Step(std::string_view id) const {
  for (const auto& s : steps)
    if (s.id == id) return &s;
  return nullptr;
}

namespace explain_internal {

// ---------------------------------------------------------------------------------------------
// Formatting: decimal units (GB = 1e9 B), as everywhere in meshplan.
// ---------------------------------------------------------------------------------------------
std::string Fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// 70553706496 -> "70.55e9"; 0.5 -> "0.5".
std::string Eng(double v) {
  if (!std::isfinite(v)) return "inf";
  const double a = std::fabs(v);
  if (a < 1e4) return Fmt("%.4g", v);
  int e3 = static_cast<int>(std::floor(std::log10(a) / 3)) * 3;
  double mant = v / std::pow(10.0, e3);
  if (std::fabs(mant) >= 999.95) {
    e3 += 3;
    mant /= 1000;
  }
  return Fmt("%.4ge%d", mant, e3);
}

// People's counts: "70.55B", "16.78M", "2,048".
std::string Count(double v) {
  const double a = std::fabs(v);
  if (a >= 1e12) return Fmt("%.4gT", v / 1e12);
  if (a >= 1e9) return Fmt("%.4gB", v / 1e9);
  if (a >= 1e6) return Fmt("%.4gM", v / 1e6);
  if (a >= 1e4) return Fmt("%.4gk", v / 1e3);
  return Fmt("%.4g", v);
}

std::string Count(int64_t v) { return Count(static_cast<double>(v)); }

std::string Int(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string Bytes(double b) { return core::FormatBytes(static_cast<int64_t>(std::llround(b))); }
std::string Bytes(int64_t b) { return core::FormatBytes(b); }
// A GPU's memory as its datasheet says it when that is a whole number of GiB: "85.9 GB (80 GiB)".
std::string Hbm(int64_t b) {
  if (b % core::kGiB == 0) return core::FormatBytes(b) + Fmt(" (%lld GiB)", static_cast<long long>(b / core::kGiB));
  return core::FormatBytes(b);
}
std::string Capacity(const core::GpuSpec& g) {
  if (g.cuda_total_bytes <= 0) return Hbm(g.hbm_bytes);
  return core::FormatBytes(g.cuda_total_bytes) + Fmt(" (%.1f GiB, what CUDA reports of its %s)",
                                                     static_cast<double>(g.cuda_total_bytes) / core::kGiB,
                                                     Hbm(g.hbm_bytes).c_str());
}
std::string Rate(double bytes_per_s) { return Fmt("%.4g GB/s", bytes_per_s / 1e9); }
std::string Pct(double f) { return Fmt("%.1f%%", 100 * f); }
std::string Pct2(double f) { return Fmt("%.2f%%", 100 * f); }
std::string Tflops(double flops_per_s) { return Fmt("%.0f TFLOP/s", flops_per_s / 1e12); }

std::string Secs(double s) {
  if (!std::isfinite(s)) return "never";
  if (s < 1e-3) return Fmt("%.1f µs", s * 1e6);
  if (s < 1) return Fmt("%.1f ms", s * 1e3);
  if (s < 120) return Fmt("%.2f s", s);
  if (s < 7200) return Fmt("%.1f min", s / 60);
  if (s < 3 * 86400) return Fmt("%.2f h", s / 3600);
  return Fmt("%.1f days", s / 86400);
}

std::string Usd(double d) {
  if (d >= 1e9) return Fmt("$%.2fB", d / 1e9);
  if (d >= 1e6) return Fmt("$%.1fM", d / 1e6);
  if (d >= 1e3) return Fmt("$%.1fk", d / 1e3);
  return Fmt("$%.2f", d);
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string RecomputeText(Recompute rc) {
  return rc == Recompute::kNone ? std::string("no recompute") : std::string(core::Name(rc)) + " recompute";
}

// "TP 8 × PP 16 × DP 128, ZeRO-1, SP, selective recompute, 1f1b, mbs 1"
std::string PlanText(const PlanSpec& p) {
  std::string s = Fmt("TP %lld × PP %lld × DP %lld", static_cast<long long>(p.tp), static_cast<long long>(p.pp),
                      static_cast<long long>(p.dp));
  if (p.cp > 1) s += Fmt(" × CP %lld", static_cast<long long>(p.cp));
  if (p.ep > 1) s += Fmt(" (EP %lld)", static_cast<long long>(p.ep));
  if (p.vpp > 1) s += Fmt(", %lld virtual stages", static_cast<long long>(p.vpp));
  s += Fmt(", ZeRO-%d", p.zero);
  if (p.sequence_parallel) s += ", SP";
  s += ", " + RecomputeText(p.recompute) + ", " + core::Name(p.schedule);
  s += Fmt(", mbs %lld", static_cast<long long>(p.micro_batch));
  return s;
}

void Set(ExplainStep* st, std::string name, double value, std::string unit) {
  st->values.push_back({std::move(name), value, std::move(unit)});
}

ExplainStep NewStep(std::string id, std::string title) {
  ExplainStep st;
  st.id = std::move(id);
  st.title = std::move(title);
  return st;
}

// ---------------------------------------------------------------------------------------------
// Shared computations
// ---------------------------------------------------------------------------------------------
bool PlanValid(const PlanSpec& p, const ModelSpec& m, const core::GpuSpec& g, const core::ClusterSpec& c,
               std::string* why) {
  core::Diagnostics d;
  core::ValidatePlan(p, m, g, c, &d);
  if (d.has_errors() && why) *why = d.ToStatus().message();
  return !d.has_errors();
}

// The layer kind most layers have (the one a per-layer number describes).
bool TypicalLayerIsMoe(const ModelSpec& m) { return m.moe.has_value() && 2 * m.MoeLayerCount() >= m.layers; }

double Peak(const core::GpuSpec& g, Dtype d) {
  auto it = g.peak_flops_per_s.find(d);
  return it == g.peak_flops_per_s.end() ? 0.0 : it->second;
}

// Bytes one rank sends (and receives) for a collective of nccl-tests size S over n ranks: the bus
// factor times S (nccl-tests' busbw definition), per step: step-level ops once, per-microbatch ops
// m times.
double RankTraffic(const std::vector<core::Op>& ops, core::CommGroup group, int64_t n, int64_t microbatches) {
  double total = 0;
  for (const core::Op& op : ops) {
    if (op.kind != core::OpKind::kCollective || op.group != group) continue;
    const double times = op.pass == core::Pass::kStep ? 1.0 : static_cast<double>(microbatches);
    total += times * core::BusBandwidthFactor(op.collective, n) * static_cast<double>(op.bytes);
  }
  return total;
}

CollectiveCount CountCollectives(const std::vector<core::Op>& ops, core::CommGroup group) {
  CollectiveCount c;
  for (const core::Op& op : ops) {
    if (op.kind != core::OpKind::kCollective || op.group != group) continue;
    if (op.pass == core::Pass::kForward) ++c.forward;
    else if (op.pass == core::Pass::kBackwardInput || op.pass == core::Pass::kBackwardWeight) ++c.backward;
    c.bytes = op.bytes;
  }
  return c;
}

// Uniform pipeline of p stages, each microbatch 1 time unit (F, B, W a third each).
double UniformBubble(Schedule schedule, int64_t p, int64_t m, int64_t v) {
  std::vector<StageTimes> stages(static_cast<size_t>(p));
  for (auto& s : stages) s.forward_s = s.backward_input_s = s.backward_weight_s = 1.0 / 3.0;
  const PipelineTime t = SchedulePipeline(schedule, stages, m, v);
  return t.bubble_s / (t.work_s + t.bubble_s);
}

core::Result<Case> LoadCase(const std::string& model, const std::string& cluster) {
  auto m = core::LoadModel(model);
  if (!m.ok()) return m.status();
  auto c = core::LoadCluster(cluster);
  if (!c.ok()) return c.status();
  auto g = core::LoadGpu(c->gpu);
  if (!g.ok()) return g.status();
  return Case{*m, *g, *c};
}

PlanSpec MakePlan(int64_t gpus, int64_t tp, int64_t pp, int64_t cp, int zero, bool sp, Recompute rc, int64_t seq,
                  int64_t gbs, int64_t layers) {
  PlanSpec p;
  p.gpus = gpus;
  p.tp = tp;
  p.pp = pp;
  p.cp = cp;
  p.dp = gpus / (tp * pp * cp);
  p.zero = zero;
  p.sequence_parallel = sp;
  p.recompute = rc;
  p.micro_batch = 1;
  p.seq_len = seq;
  p.global_batch = gbs;
  if (pp > 1) {
    auto split = core::DefaultStageSplit(layers, pp);
    if (split) p.stage_layers = *split;
  }
  return p;
}

// A topic's plan must be valid: a failure here is a bug in this file, reported, not hidden.
Status RequireValid(const PlanSpec& p, const Case& k, const char* what) {
  std::string why;
  if (PlanValid(p, k.m, k.g, k.c, &why)) return Status::Ok();
  return Status::Internal(std::string("explain: the worked example's plan (") + what + ") is invalid: " + why);
}

}  // namespace explain_internal

namespace {

using namespace explain_internal;  // NOLINT: this file's own helpers

// ---------------------------------------------------------------------------------------------
// The whiteboard rules: which plan a person at a whiteboard would write down
// ---------------------------------------------------------------------------------------------
struct RulesOutcome {
  PlanSpec plan;
  bool found = false;  // some candidate was valid
  bool fits = false;
  std::vector<std::string> why;    // the decisions, in words
  int64_t min_gpus = 0;            // ⌈state / M⌉, M = GpuSpec::CapacityBytes
  std::vector<std::string> tried;  // candidates that were valid but did not fit
};

RulesOutcome ApplyRules(const core::Scenario& s, const core::Profile& profile) {
  const ModelSpec& m = s.model;
  const PlanSpec& base = s.plan;
  RulesOutcome out;
  const double n_params = static_cast<double>(core::CountParams(m).total);
  PlanSpec unsharded = base;
  unsharded.zero = 0;
  const double state = core::ShardedModelStates(n_params, unsharded, 1).Total();
  const double hbm = static_cast<double>(s.gpu.CapacityBytes());
  out.min_gpus = static_cast<int64_t>(std::ceil(state / hbm));
  const int64_t gpus = base.gpus;
  const int64_t domain = std::max<int64_t>(1, std::min(s.cluster.scale_up_domain_gpus, gpus));

  auto make = [&](int64_t tp, int64_t pp, int zero, Recompute rc) {
    PlanSpec p = base;
    p.tp = tp;
    p.pp = pp;
    p.cp = 1;
    p.ep = 1;
    p.etp = 1;
    p.vpp = 1;
    p.dp = gpus / (tp * pp);
    p.zero = p.dp > 1 ? zero : 0;
    p.sharding = core::Sharding::kFsdp;
    p.hsdp_shard_size = 0;
    p.sequence_parallel = tp > 1;
    p.recompute = rc;
    p.recompute_layers = 0;
    p.micro_batch = 1;
    p.schedule = Schedule::k1F1B;
    p.stage_layers.clear();
    core::ApplyDefaultStageSplit(m, &p, nullptr);
    return p;
  };
  // The first valid candidate that fits wins; the lightest valid one is kept in case none fits.
  std::optional<PlanSpec> lightest;
  int64_t lightest_bytes = 0;
  auto try_plan = [&](const PlanSpec& p) {
    if (gpus % (p.tp * p.pp) != 0) return false;
    if (!PlanValid(p, m, s.gpu, s.cluster)) return false;
    const core::MemoryReport r = core::EstimateMemory(m, p, s.gpu, profile.memory);
    if (!lightest || r.per_gpu_bytes < lightest_bytes) {
      lightest = p;
      lightest_bytes = r.per_gpu_bytes;
    }
    if (r.fits) {
      out.plan = p;
      out.found = out.fits = true;
      return true;
    }
    out.tried.push_back(PlanText(p) + ": " + Bytes(static_cast<double>(r.per_gpu_bytes)) + " per GPU");
    return false;
  };
  const Recompute kModes[3] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};

  // 1. DDP when the whole state fits one GPU (the seeds: "DDP if model + optimizer state fit").
  if (out.min_gpus <= 1) {
    for (Recompute rc : kModes)
      if (try_plan(make(1, 1, 0, rc))) {
        out.why.push_back("the whole state fits one GPU ⇒ plain data parallel (DDP, ZeRO-0), " + RecomputeText(rc));
        return out;
      }
  }
  // 2. Data parallel with ZeRO when the state fits within one scale-up domain's worth of GPUs
  //    (ZeRO-1/2 communicate like DDP, ZeRO-3 1.5x: the lowest stage that fits).
  if (out.min_gpus <= domain) {
    for (int zero = 1; zero <= 3; ++zero)
      for (Recompute rc : kModes)
        if (try_plan(make(1, 1, zero, rc))) {
          out.why.push_back(
              Fmt("the state needs ≥ %lld GPUs, within one %lld-GPU NVLink domain ⇒ data parallel "
                  "with the lowest ZeRO stage that fits: ZeRO-%d%s, %s",
                  static_cast<long long>(out.min_gpus), static_cast<long long>(domain), zero,
                  zero == 3 ? " (FSDP)" : "", RecomputeText(rc).c_str()));
          return out;
        }
  }
  // 3. 3D: TP = the scale-up domain (the largest degree the model's heads allow), PP = the smallest
  //    that makes one model replica (TP x PP GPUs) hold the whole state, DP = the rest with ZeRO-1.
  for (int64_t tp = domain; tp >= 1; --tp) {
    if (gpus % tp != 0) continue;
    // TP must be valid on its own (heads, kv heads, ffn): check with pp = 1 and the lightest mode.
    const PlanSpec probe = make(tp, 1, 1, Recompute::kFull);
    core::Diagnostics d;
    d.set_errors_only(true);
    core::ValidatePlan(probe, m, s.gpu, s.cluster, &d);
    if (d.has_error_at("plan.tp")) continue;
    const int64_t pp_min = (out.min_gpus + tp - 1) / tp;
    for (int64_t pp = 1; pp <= std::min(m.layers, gpus / tp); ++pp) {
      if ((gpus / tp) % pp != 0 || pp < pp_min) continue;
      for (Recompute rc : {Recompute::kSelective, Recompute::kFull}) {
        if (try_plan(make(tp, pp, 1, rc))) {
          out.why.push_back(
              Fmt("TP %lld: the largest degree within the %lld-GPU NVLink domain that divides the "
                  "model's heads (TP traffic stays on NVLink)",
                  static_cast<long long>(tp), static_cast<long long>(domain)));
          if (pp >= pp_min && pp_min > 1)
            out.why.push_back(
                Fmt("PP %lld: the smallest divisor of %lld/%lld with TP × PP ≥ %lld, so one model "
                    "replica holds the whole state",
                    static_cast<long long>(pp), static_cast<long long>(gpus), static_cast<long long>(tp),
                    static_cast<long long>(out.min_gpus)));
          else
            out.why.push_back(Fmt("PP %lld: TP alone already gives ≥ %lld GPUs per replica", static_cast<long long>(pp),
                                  static_cast<long long>(out.min_gpus)));
          out.why.push_back(
              Fmt("DP %lld = %lld / (%lld × %lld), %s; sequence parallel %s; %s (the first of "
                  "selective, full recompute that fits)",
                  static_cast<long long>(out.plan.dp), static_cast<long long>(gpus), static_cast<long long>(tp),
                  static_cast<long long>(pp),
                  out.plan.dp > 1 ? Fmt("ZeRO-%d over DP", out.plan.zero).c_str()
                                  : "no data parallelism (nothing for ZeRO to shard)",
                  out.plan.sequence_parallel ? "on" : "off (TP 1)", RecomputeText(rc).c_str()));
          return out;
        }
      }
    }
    break;  // the largest valid TP decides; smaller TP is not what the rules say
  }
  // Nothing fits: the lightest thing a whiteboard would try last, fully sharded over every GPU
  // (ZeRO-3 with and without TP over the NVLink domain) with full recompute.
  try_plan(make(1, 1, 3, Recompute::kFull));
  if (domain > 1) try_plan(make(domain, 1, 3, Recompute::kFull));
  if (out.fits) {
    out.why.push_back("only the fully sharded fallback fits: " + PlanText(out.plan));
    return out;
  }
  if (lightest) {
    out.plan = *lightest;
    out.found = true;
    out.why.push_back(Fmt("no candidate of the rules fits; the lightest (%s per GPU) is shown: %s",
                          Bytes(lightest_bytes).c_str(), PlanText(*lightest).c_str()));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The scenario walk
// ---------------------------------------------------------------------------------------------
ExplainStep ModelSizeStep(const ModelSpec& m) {
  const core::ParamCount pc = core::CountParams(m);
  ExplainStep st = NewStep("model_size", "Model size");
  st.rule =
      "Count the parameters from the architecture, tensor by tensor: attention (q, k, v, o), MLP (2 "
      "matrices for GELU, 3 for SwiGLU), norms, per layer; then the token embedding and the output head "
      "(none when tied). docs/memory.md §1.";
  std::vector<std::string> sum;
  std::string formula = "N = ";
  if (pc.dense_layers > 0) {
    formula += "L_dense × N_layer";
    sum.push_back(Fmt("%lld × %s", static_cast<long long>(pc.dense_layers), Count(pc.dense_layer.Total()).c_str()));
  }
  if (pc.moe_layers > 0) {
    formula += std::string(pc.dense_layers > 0 ? " + " : "") + "L_moe × N_moe_layer";
    sum.push_back(Fmt("%lld × %s", static_cast<long long>(pc.moe_layers), Count(pc.moe_layer.Total()).c_str()));
  }
  formula += " + N_embedding + N_head + N_final_norm";
  sum.push_back(Count(pc.embedding + pc.position));
  sum.push_back(Count(pc.output_head));
  sum.push_back(Count(pc.final_norm));
  if (pc.mtp_layers > 0) {
    // Each MTP module: one layer of the last layer's kind (a hybrid model's: its mtp_pattern's
    // blocks), eh_proj (2h x h) and three norms; one module for every depth when shared.
    const std::string layer =
        m.Hybrid() ? "N_mtp_blocks(" + m.mtp_pattern + ")" : "N_" + std::string(pc.mtp_moe ? "moe_layer" : "layer");
    formula +=
        std::string(m.mtp_shared ? " + 1 shared MTP module" : " + D_mtp") + " × (" + layer + " + 2h² + 3 N_norm)";
    sum.push_back(Fmt("%lld × (%s + %s)", static_cast<long long>(pc.mtp_copies), Count(pc.mtp_layer_total).c_str(),
                      Count(pc.mtp_extra).c_str()));
  }
  if (m.Hybrid()) {
    // The exact count is kind by kind; the layer above is their mix.
    const core::HybridCounts c = m.HybridLayerCounts();
    std::vector<std::string> kinds;
    const std::pair<char, int64_t> all[] = {{'M', c.mamba}, {'*', c.attention}, {'-', c.mlp}, {'E', c.moe}};
    for (const auto& [kind, count] : all)
      if (count > 0)
        kinds.push_back(Fmt("%lld × %s ('%c')", static_cast<long long>(count),
                            Count(core::HybridLayerParams(m, kind).Total()).c_str(), kind));
    formula += "; hybrid: the pattern's layers kind by kind, each layer costed as their mix";
    sum.clear();
    sum.push_back(Join(kinds, " + "));
    sum.push_back(Count(pc.embedding + pc.position));
    sum.push_back(Count(pc.output_head));
    sum.push_back(Count(pc.final_norm));
  }
  st.formula = formula;
  const core::LayerParams& lp = pc.dense_layers > 0 ? pc.dense_layer : pc.moe_layer;
  st.substituted = Fmt("N_layer = attention %s%s + MLP %s + norms %s%s; ", Count(lp.Attention()).c_str(),
                       lp.mamba_tp_sharded ? (" + Mamba " + Count(lp.mamba_tp_sharded)).c_str() : "",
                       Count(lp.mlp_tp_sharded + lp.mlp_replicated + lp.experts * lp.RoutedExpert()).c_str(),
                       Count(lp.norms).c_str(), lp.router ? (" + router " + Count(lp.router)).c_str() : "") +
                   "N = " + Join(sum, " + ") + " = " + Eng(static_cast<double>(pc.total));
  st.result = Count(pc.total) + " parameters (" + Int(pc.total) + ")";
  if (pc.active != pc.total) st.result += "; " + Count(pc.active) + " active per token";
  Set(&st, "params", static_cast<double>(pc.total));
  Set(&st, "params_active", static_cast<double>(pc.active));
  Set(&st, "layers", static_cast<double>(m.layers));
  Set(&st, "layer_params", static_cast<double>(lp.Total()));
  Set(&st, "embedding_params", static_cast<double>(pc.embedding + pc.position));
  Set(&st, "output_head_params", static_cast<double>(pc.output_head));
  return st;
}

ExplainStep MemoryBudgetStep(const core::Scenario& s) {
  const double n = static_cast<double>(core::CountParams(s.model).total);
  PlanSpec p0 = s.plan;
  p0.zero = 0;
  const core::ModelStateBytes st_bytes = core::ShardedModelStates(n, p0, 1);
  const core::ModelStateBytes per = core::ShardedModelStates(1.0, p0, 1);
  const double hbm = static_cast<double>(s.gpu.CapacityBytes());
  const double state = st_bytes.Total();
  const int64_t min_gpus = static_cast<int64_t>(std::ceil(state / hbm));
  ExplainStep st = NewStep("memory_budget", "Memory budget: weights + gradients + optimizer");
  st.rule = s.plan.optimizer == core::Optimizer::kMuon
                ? "Muon keeps, per parameter, the working weights and gradients plus the optimizer's master weights "
                  "and one momentum buffer: 2 + 2 + 4 + 4 = 12 B in bf16/fp32 (Megatron-Core's Muon; the embedding, "
                  "output head and norms also keep Adam's second moment, counted per stage in the memory table). "
                  "Activations come on top (step 4)."
                : "Mixed-precision Adam keeps, per parameter, the working weights and gradients plus the optimizer's "
                  "master weights and two moments: 2 + 2 + 4 + 4 + 4 = 16 B in bf16/fp32 (Rajbhandari et al. 2020, "
                  "§3.1, K = 12). Activations come on top (step 4).";
  st.formula =
      "state = N × (weights + grads + master + moments);  GPUs for the state ≥ ⌈state / M⌉, M the memory CUDA reports "
      "of one GPU";
  st.substituted =
      Fmt("%s × (%.4g + %.4g + %.4g + %.4g) B = %s;  %s / %s = %.2f", Eng(n).c_str(), per.weights, per.grads,
          per.master_weights, per.moments, Bytes(state).c_str(), Bytes(state).c_str(), Bytes(hbm).c_str(), state / hbm);
  st.result =
      Fmt("%s of model state (%.4g B/param); one %s holds %s ⇒ the state alone needs ≥ %lld GPUs", Bytes(state).c_str(),
          per.Total(), s.gpu.name.c_str(), Capacity(s.gpu).c_str(), static_cast<long long>(min_gpus));
  if (s.plan.dtypes.master_weights != Dtype::kNone && core::MomentBuffers(s.plan.optimizer) == 2) {
    PlanSpec no_master = p0;
    no_master.dtypes.master_weights = Dtype::kNone;
    const double wrong = core::ShardedModelStates(n, no_master, 1).Total();
    st.seeds_note =
        Fmt("The seed notes open with Llama-70B at 140 GB weights + 140 GB grads + 560 GB Adam m, v = "
            "~840 GB of state: that is %.4g B/param and leaves out the fp32 master weights the "
            "optimizer updates. For this model that count gives %s; with the master copy it is %s "
            "(+%.0f%%). The seeds' own later figure, 16 B/param (70e9 × 16 = 1.12 TB), is the right one.",
            core::ShardedModelStates(1.0, no_master, 1).Total(), Bytes(wrong).c_str(), Bytes(state).c_str(),
            100 * (state / wrong - 1));
  }
  Set(&st, "params", n);
  Set(&st, "bytes_per_param", per.Total(), "B");
  Set(&st, "weights_bytes", st_bytes.weights, "B");
  Set(&st, "grads_bytes", st_bytes.grads, "B");
  Set(&st, "master_weights_bytes", st_bytes.master_weights, "B");
  Set(&st, "moments_bytes", st_bytes.moments, "B");
  Set(&st, "state_bytes", state, "B");
  Set(&st, "capacity_bytes", hbm, "B");
  Set(&st, "min_gpus_for_state", static_cast<double>(min_gpus), "GPUs");
  return st;
}

ExplainStep ParallelismStep(const core::Scenario& s, const RulesOutcome& rules, const PlanSpec& plan, bool kept) {
  ExplainStep st = NewStep("parallelism", "Pick the parallelism");
  st.rule =
      "Simplest first. DDP when the whole state fits one GPU; data parallel with ZeRO (1, 2, then 3 = FSDP) "
      "when it fits within one NVLink domain's worth of GPUs; otherwise 3D: TP = the NVLink domain (8 on "
      "H100 nodes: TP traffic never crosses InfiniBand), PP = the fewest stages that let one TP × PP replica "
      "hold the whole state, DP = the rest with ZeRO-1 on top. Each candidate is checked with the memory "
      "model (step 4) and the first that fits is taken.";
  st.formula = "TP × PP ≥ ⌈state / M⌉;  DP = GPUs / (TP × PP × CP);  m = global batch / (mbs × DP)";
  std::vector<std::string> parts;
  parts.push_back(Fmt("state needs ≥ %lld GPUs; NVLink domain %lld GPUs", static_cast<long long>(rules.min_gpus),
                      static_cast<long long>(s.cluster.scale_up_domain_gpus)));
  if (!rules.tried.empty()) {
    // The candidates the rules tried before the one they took, with what each needed.
    std::vector<std::string> tried(
        rules.tried.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(rules.tried.size(), 3)), rules.tried.end());
    parts.push_back("tried and too big: " + Join(tried, "; "));
  }
  for (const auto& w : rules.why) parts.push_back(w);
  if (rules.min_gpus > s.plan.gpus)
    parts.push_back(Fmt("only %lld GPUs: fewer than the state alone needs", static_cast<long long>(s.plan.gpus)));
  const double tokens = static_cast<double>(plan.global_batch) * static_cast<double>(plan.seq_len);
  parts.push_back(
      Fmt("batch: %lld sequences × %lld tokens = %s tokens = mbs %lld × DP %lld × %lld microbatches "
          "(gradient accumulation) per step",
          static_cast<long long>(plan.global_batch), static_cast<long long>(plan.seq_len), Count(tokens).c_str(),
          static_cast<long long>(plan.micro_batch), static_cast<long long>(plan.dp),
          static_cast<long long>(plan.Microbatches())));
  if (plan.pp > 1) {
    // The 1F1B bubble with equal stages, and the microbatches a bubble under 5% would take; m is
    // one pipeline flush's (plan.pp_flushes).
    const int64_t m = plan.MicrobatchesPerFlush();
    const double bubble = UniformBubble(Schedule::k1F1B, plan.pp, m, 1);
    int64_t m5 = 1;
    while (UniformBubble(Schedule::k1F1B, plan.pp, m5, 1) >= 0.05) ++m5;
    parts.push_back(Fmt("1F1B bubble (p − 1)/(p − 1 + m) = %lld/%lld = %s; under 5%% takes m ≥ %lld (the seeds' "
                        "20(p − 1) = %lld), a %s-token batch at this DP",
                        static_cast<long long>(plan.pp - 1), static_cast<long long>(plan.pp - 1 + m),
                        Pct(bubble).c_str(), static_cast<long long>(m5), static_cast<long long>(20 * (plan.pp - 1)),
                        Count(static_cast<double>(m5 * plan.micro_batch * plan.dp * plan.seq_len)).c_str()) +
                    (plan.Flushes() > 1 ? Fmt(" (m per flush: %lld flushes a step, each with its bubble)",
                                              static_cast<long long>(plan.Flushes()))
                                        : std::string()));
    Set(&st, "bubble_1f1b", bubble);
    Set(&st, "microbatches_for_5pct", static_cast<double>(m5));
  }
  st.substituted = Join(parts, "; ");
  if (kept) {
    st.result = "your plan: " + PlanText(plan);
    if (rules.found && rules.plan == plan) st.result += " (the rules pick the same)";
    else if (rules.found) st.result += " (the rules' plan: " + PlanText(rules.plan) + ")";
  } else if (rules.found) {
    st.result = "the rules' plan: " + PlanText(plan) + (rules.fits ? "" : " — it does not fit (step 4)");
  } else {
    st.result = "the rules find no valid plan for this GPU count and batch";
  }
  Set(&st, "min_gpus_for_state", static_cast<double>(rules.min_gpus), "GPUs");
  Set(&st, "tp", static_cast<double>(plan.tp));
  Set(&st, "pp", static_cast<double>(plan.pp));
  Set(&st, "dp", static_cast<double>(plan.dp));
  Set(&st, "cp", static_cast<double>(plan.cp));
  Set(&st, "ep", static_cast<double>(plan.ep));
  Set(&st, "zero", plan.zero);
  Set(&st, "microbatches", static_cast<double>(plan.Microbatches()));
  Set(&st, "global_batch_tokens", tokens, "tokens");
  if (rules.found) {
    Set(&st, "rules_tp", static_cast<double>(rules.plan.tp));
    Set(&st, "rules_pp", static_cast<double>(rules.plan.pp));
    Set(&st, "rules_dp", static_cast<double>(rules.plan.dp));
    Set(&st, "rules_zero", rules.plan.zero);
    Set(&st, "rules_fit", rules.fits ? 1 : 0);
  }
  return st;
}

ExplainStep MemoryFitStep(const core::Scenario& s, const PlanSpec& p, const core::MemoryReport& mem) {
  const ModelSpec& m = s.model;
  const bool moe = TypicalLayerIsMoe(m);
  auto act = [&](bool sp, Recompute rc) {
    PlanSpec q = p;
    q.sequence_parallel = sp && p.tp > 1;
    return static_cast<double>(core::LayerActivationBytes(m, q, moe, rc));
  };
  const double a_plain = act(false, Recompute::kNone);
  const double a_sp = act(true, Recompute::kNone);
  const double a_sel = act(p.sequence_parallel, Recompute::kSelective);
  const double a_full = act(p.sequence_parallel, Recompute::kFull);
  const core::StageMemory& w = mem.stages[static_cast<size_t>(mem.worst_stage)];
  const double states = static_cast<double>(w.weights_bytes + w.grads_bytes + w.optimizer_bytes);
  const double cap = static_cast<double>(mem.capacity_bytes);
  ExplainStep st = NewStep("memory_fit", "Activation checkpointing + sequence parallel: does it fit?");
  st.rule =
      "Activations per layer and microbatch (Korthikanti et al. 2022, Table 2): sbh(34 + 5as/h) for a GPT "
      "layer. TP shards most of it by t; sequence parallel also shards the norms, dropout and residual by t; "
      "selective recompute drops the attention-score tensors (the 5as/h term; flash attention never stores "
      "them); full recompute keeps only the layer input, 2sbh. A pipeline rank holds its layers for the "
      "microbatches in flight (1F1B: p − i on rank i). docs/memory.md §3.";
  if (m.Hybrid())
    st.rule +=
        " A hybrid model's layer holds its kinds' tensors weighted by their share of the layers (the "
        "attention block's in its attention layers, the MLP's or MoE block's, a Mamba-2 mixer's: in_proj's "
        "output and input, the scan's outputs, the gated norm's and out_proj's inputs).";
  st.formula = "per GPU = states + layers on the rank × in-flight microbatches × a_layer + other";
  std::string ladder = Fmt("a_layer at s = %lld, b = %lld, h = %lld, t = %lld: %s with no SP and no recompute",
                           static_cast<long long>(p.seq_len / p.cp), static_cast<long long>(p.micro_batch),
                           static_cast<long long>(m.hidden), static_cast<long long>(p.tp), Bytes(a_plain).c_str());
  if (p.tp > 1) ladder += Fmt(" → %s with SP", Bytes(a_sp).c_str());
  ladder += Fmt(" → %s selective → %s full recompute", Bytes(a_sel).c_str(), Bytes(a_full).c_str());
  st.substituted =
      ladder + Fmt("; stage %lld: %zu layers × %.3g in flight (%s, %s recompute) = %s activations; "
                   "states %s + activations %s + other %s = %s",
                   static_cast<long long>(w.stage), w.layers.size(), w.inflight_microbatches, core::Name(p.schedule),
                   core::Name(p.recompute), Bytes(static_cast<double>(w.activations_bytes)).c_str(),
                   Bytes(states).c_str(), Bytes(static_cast<double>(w.activations_bytes)).c_str(),
                   Bytes(static_cast<double>(w.other_bytes)).c_str(),
                   Bytes(static_cast<double>(w.total_bytes)).c_str());
  if (w.offloaded_activations_bytes > 0 && p.offload_modules != 0) {
    // Fine-grained activation offloading: the named modules' saved tensors in host memory, but
    // for the last group of each module name (Megatron-Core's offload margin).
    st.rule +=
        " With fine-grained offloading the named modules' saved tensors go to host memory for every layer but one "
        "(the last group of each module stays, so that its reload does not stall the backward).";
    st.substituted += Fmt(" (after %s a microbatch of %s went to host memory)",
                          Bytes(static_cast<double>(w.offloaded_activations_bytes)).c_str(),
                          core::OffloadModulesString(p.offload_modules).c_str());
    Set(&st, "offloaded_activations_bytes", static_cast<double>(w.offloaded_activations_bytes), "B");
  } else if (w.offloaded_activations_bytes > 0) {
    // Activation offloading: the first N layers' saved tensors in host memory (Transformer Engine
    // keeps at most layers − N layers' sets on the GPU).
    st.rule +=
        Fmt(" With activation offloading the first N = %lld layers' saved tensors go to host memory, so at most "
            "the other layers' are on the GPU.",
            static_cast<long long>(p.offload_activation_layers));
    st.substituted += Fmt(" (after %s of the first %lld layers went to host memory)",
                          Bytes(static_cast<double>(w.offloaded_activations_bytes)).c_str(),
                          static_cast<long long>(p.offload_activation_layers));
    Set(&st, "offloaded_activations_bytes", static_cast<double>(w.offloaded_activations_bytes), "B");
  }
  if (w.offloaded_checkpoints_bytes > 0) {
    // DeepSpeed's cpu_checkpointing: full recomputation's checkpoints in host memory.
    st.rule +=
        " With the checkpoints in host memory (DeepSpeed's cpu_checkpointing) the layer inputs full recomputation "
        "keeps leave the GPU; the layer being recomputed has its own back beside the working set.";
    st.substituted += Fmt(" (after %s of checkpoints a microbatch went to host memory)",
                          Bytes(static_cast<double>(w.offloaded_checkpoints_bytes)).c_str());
    Set(&st, "offloaded_checkpoints_bytes", static_cast<double>(w.offloaded_checkpoints_bytes), "B");
  }
  if (mem.fits)
    st.result = Fmt("%s of %s per GPU on the fullest stage: fits (%s headroom)",
                    Bytes(static_cast<double>(mem.per_gpu_bytes)).c_str(), Bytes(cap).c_str(),
                    Bytes(cap - static_cast<double>(mem.per_gpu_bytes)).c_str());
  else if (mem.verdict == core::FitVerdict::kTight)
    st.result =
        Fmt("%s of %s per GPU: TIGHT, %s without the allocator's reserve (peak allocated, CUDA context, NCCL): it runs "
            "only if the caching allocator frees its cached blocks and retries (docs/memory.md §4)",
            Bytes(static_cast<double>(mem.per_gpu_bytes)).c_str(), Bytes(cap).c_str(),
            Bytes(static_cast<double>(mem.least_per_gpu_bytes)).c_str());
  else
    st.result = Fmt("%s of %s per GPU: DOES NOT FIT (%.2f×)", Bytes(static_cast<double>(mem.per_gpu_bytes)).c_str(),
                    Bytes(cap).c_str(), static_cast<double>(mem.per_gpu_bytes) / cap);
  if (p.recompute == Recompute::kSelective) {
    // Which tensors selective recompute drops, named by the memory model itself.
    PlanSpec q = p;
    std::set<std::string> kept;
    for (const auto& t : core::LayerActivationTerms(m, q, moe, Recompute::kSelective)) kept.insert(t.name);
    std::vector<std::string> dropped;
    for (const auto& t : core::LayerActivationTerms(m, q, moe, Recompute::kNone))
      if (!kept.count(t.name)) dropped.push_back(t.name + " " + Bytes(static_cast<double>(t.bytes)));
    st.seeds_note =
        "The seed notes describe selective recomputation as recomputing LayerNorm, GeLU and dropout "
        "and keeping attention; Korthikanti et al. 2022 (§5) do the reverse: they recompute the "
        "attention core (QKᵀ, softmax, its dropout, × V), whose s² tensors are large but cheap to "
        "recompute. Here it drops: " +
        (dropped.empty() ? std::string("nothing") : Join(dropped, ", ")) + " per layer" +
        (m.attention != core::AttentionImpl::kNaive
             ? " (flash attention already keeps no s² tensors, so full recompute is the lever)."
             : ".");
  }
  Set(&st, "activation_layer_bytes_plain", a_plain, "B");
  Set(&st, "activation_layer_bytes_sp", a_sp, "B");
  Set(&st, "activation_layer_bytes_selective", a_sel, "B");
  Set(&st, "activation_layer_bytes_full", a_full, "B");
  Set(&st, "worst_stage", static_cast<double>(w.stage));
  Set(&st, "layers_on_stage", static_cast<double>(w.layers.size()));
  Set(&st, "inflight_microbatches", w.inflight_microbatches);
  Set(&st, "states_bytes", states, "B");
  Set(&st, "activations_bytes", static_cast<double>(w.activations_bytes), "B");
  Set(&st, "other_bytes", static_cast<double>(w.other_bytes), "B");
  Set(&st, "per_gpu_bytes", static_cast<double>(mem.per_gpu_bytes), "B");
  Set(&st, "capacity_bytes", cap, "B");
  Set(&st, "fits", mem.fits ? 1 : 0);
  Set(&st, "least_per_gpu_bytes", static_cast<double>(mem.least_per_gpu_bytes), "B");
  Set(&st, "tight", mem.verdict == core::FitVerdict::kTight ? 1 : 0);
  return st;
}

}  // namespace

// The steps the topics reuse (explain_internal.h).
namespace explain_internal {

ExplainStep PrecisionStep(const core::Scenario& s, const PlanSpec& p, const core::Profile& profile) {
  const double bf16 = Peak(s.gpu, Dtype::kBf16), fp8 = Peak(s.gpu, Dtype::kFp8);
  ExplainStep st = NewStep("precision", "Mixed precision: bf16 / fp8");
  st.rule =
      "GEMMs in bf16 (fp32's exponent range, no loss scaling); fp8 (E4M3 forward, E5M2 backward, per-tensor "
      "or per-tile scales) on Hopper and later; master weights and Adam moments stay fp32 (the 16 B/param "
      "of step 2), and fp8 plans keep the linear layers' saved inputs in one byte (docs/memory.md).";
  st.formula = "speedup = t_step(bf16) / t_step(fp8) ≤ peak(fp8) / peak(bf16)";
  Set(&st, "peak_bf16_flops_per_s", bf16, "FLOP/s");
  Set(&st, "peak_fp8_flops_per_s", fp8, "FLOP/s");
  PlanSpec pb = p, p8 = p;
  pb.precision = Dtype::kBf16;
  p8.precision = Dtype::kFp8;
  if (!(fp8 > 0) || !(bf16 > 0) || !PlanValid(p8, s.model, s.gpu, s.cluster)) {
    st.substituted = Fmt("%s: bf16 peak %s; no fp8 tensor cores", s.gpu.name.c_str(), Tflops(bf16).c_str());
    st.result = "bf16 GEMMs, fp32 master weights and moments";
    return st;
  }
  const double tb = EstimateStep(s.model, pb, s.gpu, s.cluster, profile).time_s;
  const double t8 = EstimateStep(s.model, p8, s.gpu, s.cluster, profile).time_s;
  st.substituted = Fmt("peaks %s (bf16) and %s (fp8): %.2f×; step %s (bf16) → %s (fp8)", Tflops(bf16).c_str(),
                       Tflops(fp8).c_str(), fp8 / bf16, Secs(tb).c_str(), Secs(t8).c_str());
  st.result = Fmt("fp8 GEMMs make this step %.2f× faster; the plan uses %s", tb / t8, core::Name(p.precision));
  if (tb / t8 < 0.9 * fp8 / bf16)
    st.seeds_note =
        Fmt("The seed notes say fp8 'doubles throughput'. It doubles the tensor-core peak (%s → %s), "
            "but attention kernels, memory-bound ops, communication and the pipeline bubble do not "
            "get faster, so this step is %.2f× faster, not %.2f×.",
            Tflops(bf16).c_str(), Tflops(fp8).c_str(), tb / t8, fp8 / bf16);
  Set(&st, "step_bf16_s", tb, "s");
  Set(&st, "step_fp8_s", t8, "s");
  Set(&st, "speedup", tb / t8);
  return st;
}

ExplainStep CheckpointStep(const core::Scenario& s, const PlanSpec& p, const core::MemoryReport& mem,
                           const core::FailureModel& f) {
  const core::CheckpointCost ck = core::EstimateCheckpoint(mem, p, s.cluster, f);
  const double n = static_cast<double>(mem.params.total);
  ExplainStep st = NewStep("checkpoint", "Sharded asynchronous checkpoints");
  st.rule =
      "Each rank saves its own shard of the weights, master weights and optimizer moments (gradients are "
      "not saved: the next step rebuilds them). Asynchronously: copy the shard to pinned host memory (the "
      "only pause), then upload to storage in the background. docs/failures.md §3.";
  st.formula =
      "total = N × (weights + master + moments);  pause(async) = largest shard / snapshot bandwidth;  "
      "pause(sync) = total / storage bandwidth";
  st.substituted =
      Fmt("%s × %.4g B = %s; %s / %s = %s; %s / %s = %s; upload %s in the background", Eng(n).c_str(),
          static_cast<double>(ck.total_bytes) / n, Bytes(ck.total_bytes).c_str(), Bytes(ck.per_gpu_bytes).c_str(),
          Rate(f.snapshot_bytes_per_s).c_str(), Secs(ck.snapshot_s).c_str(), Bytes(ck.total_bytes).c_str(),
          Rate(s.cluster.storage_bytes_per_s).c_str(), Secs(ck.sync_write_s).c_str(), Secs(ck.upload_s).c_str());
  st.result =
      Fmt("a %s checkpoint pauses training %s asynchronously vs %s synchronously; restore %s%s",
          Bytes(ck.total_bytes).c_str(), Secs(ck.snapshot_s).c_str(), Secs(ck.sync_write_s).c_str(),
          Secs(ck.restore_s).c_str(), ck.host_memory_ok ? "" : "; the snapshot does not fit the nodes' host memory");
  Set(&st, "total_bytes", static_cast<double>(ck.total_bytes), "B");
  Set(&st, "per_gpu_bytes", static_cast<double>(ck.per_gpu_bytes), "B");
  Set(&st, "snapshot_s", ck.snapshot_s, "s");
  Set(&st, "sync_write_s", ck.sync_write_s, "s");
  Set(&st, "upload_s", ck.upload_s, "s");
  Set(&st, "restore_s", ck.restore_s, "s");
  Set(&st, "host_memory_ok", ck.host_memory_ok ? 1 : 0);
  return st;
}

// "1+ per day" and "2 interruptions a day": the seeds' failure anchors at their 16,384 GPUs.
std::string FailureSeedsNote(const core::FailureModel& f, int64_t gpus_per_node) {
  const core::JobFailureRates r = core::JobRates(f, 16384, gpus_per_node);
  return Fmt(
      "The seed notes say a 16k-GPU cluster should 'expect 1+ hardware failure per day' and that Llama 3 "
      "averaged '2 interruptions per day'. The failure model (%s) gives %.1f unexpected interruptions a "
      "day at 16,384 GPUs (one every %.2f h), %.1f of them hardware (a node replaced), plus %.1f planned "
      "ones: %.1f× the seeds' '2 per day'.",
      f.name.c_str(), 24 * r.unexpected_per_hour, r.mtbf_h, 24 * r.replace_per_hour, 24 * r.planned_per_hour,
      24 * r.unexpected_per_hour / 2);
}

ExplainStep FailuresStep(const core::Scenario& s, const core::FailureModel& f,
                         const core::Result<ReliabilityReport>& rel) {
  const core::JobFailureRates r = core::JobRates(f, s.plan.gpus, std::max<int64_t>(s.cluster.gpus_per_node, 1));
  ExplainStep st = NewStep("failures", "Health check + requeue");
  st.rule =
      "Interruptions arrive at Σ rate × (GPUs or nodes), rates from the Llama 3 paper's 54-day table. A "
      "watchdog or heartbeat notices the hang or dead rank, the job is requeued on healthy nodes (a hot spare "
      "replaces a failed one) and restarts from the last checkpoint. Checkpoint interval: Young's √(2δM), "
      "refined by Daly; the optimum here also counts restarts and waits. docs/failures.md.";
  st.formula = "M = 1 / Σλ;  τ ≈ √(2δM);  goodput = useful training time / wall-clock time";
  Set(&st, "interruptions_per_hour", r.unexpected_per_hour, "1/h");
  Set(&st, "interruptions_per_day", 24 * r.unexpected_per_hour, "1/day");
  Set(&st, "mtbf_h", r.mtbf_h, "h");
  if (!rel.ok()) {
    st.substituted = Fmt("λ = %.3g/h at %s GPUs ⇒ MTBF %.2f h", r.unexpected_per_hour, Int(r.gpus).c_str(), r.mtbf_h);
    st.result = "goodput not available: " + rel.status().message();
    return st;
  }
  const ReliabilityReport& rr = *rel;
  const double delta = rr.params.ckpt_blocking_s;
  st.substituted = Fmt(
      "λ = %.3g/h at %s GPUs (%s nodes) ⇒ M = %.2f h, %.2f interruptions a day; δ = %s async "
      "pause ⇒ τ_Young = √(2 × %.3g s × %s s) = %s, Daly %s, optimum %s; goodput %s "
      "(checkpoints %s, failures %s, planned %s of the wall-clock time)",
      r.unexpected_per_hour, Int(r.gpus).c_str(), Int(r.nodes).c_str(), r.mtbf_h, 24 * r.unexpected_per_hour,
      Secs(delta).c_str(), delta, Eng(rr.expected.mtbf_s).c_str(), Secs(rr.young_s).c_str(), Secs(rr.daly_s).c_str(),
      Secs(rr.optimal_s).c_str(), Pct(rr.expected.goodput).c_str(), Pct(rr.expected.checkpoint_frac).c_str(),
      Pct(rr.expected.failure_frac).c_str(), Pct(rr.expected.planned_frac).c_str());
  st.result = Fmt("expect %.2f interruptions a day; checkpoint every %s; goodput %s", 24 * r.unexpected_per_hour,
                  Secs(rr.interval_s).c_str(), Pct(rr.expected.goodput).c_str());
  if (s.plan.gpus >= 4096) st.seeds_note = FailureSeedsNote(f, std::max<int64_t>(s.cluster.gpus_per_node, 1));
  Set(&st, "ckpt_pause_s", delta, "s");
  Set(&st, "young_s", rr.young_s, "s");
  Set(&st, "daly_s", rr.daly_s, "s");
  Set(&st, "optimal_interval_s", rr.optimal_s, "s");
  Set(&st, "goodput", rr.expected.goodput);
  return st;
}

}  // namespace explain_internal

namespace {

ExplainStep OverlapStep(const core::Scenario& s, const PlanSpec& p, const core::Profile& profile,
                        const StepEstimate& e) {
  PlanSpec none = p;
  none.overlap_grad_reduce = false;
  none.overlap_param_gather = false;
  none.tp_overlap = core::TpOverlap::kNone;
  const StepEstimate en = EstimateStep(s.model, none, s.gpu, s.cluster, profile);
  auto comm = [](const StepBreakdown& b) { return b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.dp_comm_s; };
  ExplainStep st = NewStep("overlap", "NCCL communication/compute overlap");
  st.rule =
      "Run communication on its own NCCL stream under compute: the DP gradient reduction under the last "
      "microbatch's backward, ZeRO-1/2's parameter all-gather under the next step's first forward (but for the word "
      "embedding's bucket: its gradient is the backward's last and its parameters the forward's first, so its "
      "reduction and gather hide under nothing), TP reductions under "
      "the weight-gradient GEMMs (Megatron's asynchronous TP), Transformer Engine's userbuffers each inside its own "
      "GEMM (ring exchange: min(C, G(t-1)/t); 4-split pipeline: min(C, G) x 3/4; bulk: min(C, G)), "
      "ZeRO-3 gathers one layer ahead. Only what does not fit under compute is exposed, and what hides still slows "
      "the compute beside it (NCCL's kernels: 18.9% on average, Lee et al. 2025; Transformer Engine userbuffers: "
      "the SMs they hold). docs/compute.md.";
  st.formula =
      "t_step = compute + exposed communication + bubble + optimizer;  exposed = max(t_comm, window + s × t_comm) − "
      "window";
  auto parts = [](const StepBreakdown& b) {
    std::string t = "TP " + Secs(b.tp_comm_s) + " + DP " + Secs(b.dp_comm_s);
    if (b.cp_comm_s > 0) t += " + CP " + Secs(b.cp_comm_s);
    if (b.ep_comm_s > 0) t += " + EP " + Secs(b.ep_comm_s);
    return t;
  };
  st.substituted =
      Fmt("no overlap: %s exposed, step %s; with the plan's overlap (%s TP overlap, gradient "
          "reduction %s%s): %s, step %s",
          parts(en.breakdown).c_str(), Secs(en.time_s).c_str(), core::Name(p.tp_overlap),
          p.overlap_grad_reduce ? "under backward" : "after backward",
          p.zero == 1 || p.zero == 2
              ? (p.overlap_param_gather ? ", parameter gather under forward" : ", parameter gather after the step")
              : "",
          parts(e.breakdown).c_str(), Secs(e.time_s).c_str());
  st.result = Fmt("overlap hides %s of communication per step (%s of the step without it); %s stays exposed",
                  Secs(comm(en.breakdown) - comm(e.breakdown)).c_str(), Pct((en.time_s - e.time_s) / en.time_s).c_str(),
                  Secs(comm(e.breakdown)).c_str());
  if (e.overlap_slowdown_s > 0)
    st.result += Fmt(", of which %s is the compute the hidden part slows", Secs(e.overlap_slowdown_s).c_str());
  // The first stage's word embedding's step synchronisation, exposed even where its overlap is on
  // (EmbeddingTail in sim/step_model.cc): the op table's rows for it whose overlap is on.
  double embedding_sync = 0;
  for (const CostedOpList& list : CostStepGraph(s.model, p, s.gpu, s.cluster, profile))
    if (std::string_view(list.name) == "embedding")
      for (const CostedOp& row : list.ops)
        if (row.op.pass == core::Pass::kStep && row.op.kind == core::OpKind::kCollective &&
            StepSyncOverlapped(row.op, p))
          embedding_sync += row.time_s;
  if (embedding_sync > 0) {
    st.result += Fmt("; the first stage's word embedding's synchronisation, %s, runs under no compute",
                     Secs(embedding_sync).c_str());
    Set(&st, "embedding_sync_exposed_s", embedding_sync, "s");
  }
  Set(&st, "step_no_overlap_s", en.time_s, "s");
  Set(&st, "step_s", e.time_s, "s");
  Set(&st, "exposed_comm_no_overlap_s", comm(en.breakdown), "s");
  Set(&st, "exposed_comm_s", comm(e.breakdown), "s");
  Set(&st, "overlap_slowdown_s", e.overlap_slowdown_s, "s");
  return st;
}

ExplainStep MfuStep(const core::Scenario& s, const PlanSpec& p, const StepEstimate& e) {
  const double peak = Peak(s.gpu, p.precision);
  ExplainStep st = NewStep("mfu", "MFU: target 40%+");
  st.rule =
      "MFU = model FLOPs per step / (step time × GPUs × dense peak). Model FLOPs = forward + backward = 3 × "
      "forward, GEMMs 2mnk, attention with the full s² scores (Narayanan et al. 2021, eq. 3); recompute is "
      "not counted (that is HFU). 40–45% is what tuned dense runs reach on H100.";
  st.formula = "MFU = F_model / (t_step × n × peak)";
  st.substituted = Fmt("%s FLOP / (%s × %s × %s) = %s (%.0f TFLOP/s per GPU; causal-attention count %s, HFU %s)",
                       Eng(e.model_flops).c_str(), Secs(e.time_s).c_str(), Int(p.gpus).c_str(), Tflops(peak).c_str(),
                       Pct(e.mfu).c_str(), e.tflops_per_gpu, Pct(e.mfu_causal).c_str(), Pct(e.hfu).c_str());
  std::pair<std::string, double> worst{"", 0};
  for (const BreakdownTerm& t : BreakdownTerms(e.breakdown))
    if (std::string_view(t.key) != "compute" && t.seconds > worst.second) worst = {t.name, t.seconds};
  st.result = Fmt("MFU %s, %s tokens/s: %s", Pct(e.mfu).c_str(), Count(e.tokens_per_s).c_str(),
                  e.mfu >= 0.40 ? "meets the 40% target" : "below the 40% target");
  if (worst.second > 0)
    st.result += Fmt("; the largest loss besides compute is the %s (%s, %s of the step)", worst.first.c_str(),
                     Secs(worst.second).c_str(), Pct(worst.second / e.time_s).c_str());
  // Host-bound MoE layers: Megatron-Core's own cures (megatron/core/transformer/moe/README.md at
  // d98e8a64, "CPU Overhead Bottleneck"; docs/compute.md).
  if (worst.second > 0 && worst.second == e.breakdown.host_s)
    st.result +=
        "; its cures: a larger micro batch, or CUDA graphs for the router and the dispatcher's "
        "preprocessing (explain --topic ep)";
  // The compute itself runs at the pace of the plan's slowest GPU (docs/compute.md).
  const double pace = SlowestGpuPace(p, s.gpu);
  if (pace > 1)
    st.substituted += Fmt("; the compute at the slowest of %s GPUs' pace, x %.3f (speed spread %s)",
                          Int(p.gpus).c_str(), pace, Pct(s.gpu.speed_spread).c_str());
  Set(&st, "slowest_gpu_pace", pace);
  Set(&st, "model_flops", e.model_flops, "FLOP");
  Set(&st, "step_s", e.time_s, "s");
  Set(&st, "peak_flops_per_s", peak, "FLOP/s");
  Set(&st, "mfu", e.mfu);
  Set(&st, "mfu_causal", e.mfu_causal);
  Set(&st, "hfu", e.hfu);
  Set(&st, "tokens_per_s", e.tokens_per_s, "tokens/s");
  Set(&st, "bubble_fraction", e.bubble_fraction);
  return st;
}

// How far to trust the step time of the scenario's plan: the error on published runs in its groups (the shipped
// accuracy table, sim/accuracy.h; docs/validation.md, How close). The table is the default
// profile's: with another the step says so and stops there.
ExplainStep AccuracyStep(const core::Scenario& s, const core::Profile& profile) {
  ExplainStep st = NewStep("accuracy", "How close: the error on published runs like this plan");
  st.rule =
      "A step time is worth what the model's error is on published runs like the plan. meshplan validate predicts "
      "every run of its corpus (tests/data/validation) with the default profile and keeps, per group (GPU, dense "
      "or MoE, precision, sharding, scale, sequence length), the median and p90 of |error| and the signed median "
      "(> 0: predicted too fast); the groups overlap, and the least accurate one bounds how far to trust the plan. "
      "What runs like it measured (the plan's GPU, dense or MoE and precision at once, else the first wider set of "
      "at least 10 runs) is a range to budget with: their 10th to 90th percentile of error.";
  st.formula =
      "error = (predicted − published) / published, in tokens/s per GPU, over the group's runs; range = predicted / "
      "(1 + p90 error) to predicted / (1 + p10 error)";
  if (profile.name != "default") {
    st.substituted = "—";
    st.result = "the table is the default profile's; meshplan validate --profile " + profile.name +
                " measures this profile's own";
    return st;
  }
  const core::Result<AccuracyTable> t = LoadAccuracyTable("step");
  if (!t.ok()) {
    st.substituted = "—";
    st.result = "no accuracy table: " + t.status().message();
    return st;
  }
  const PlanAccuracy acc = AccuracyOfPlan(*t, s, "");
  const std::vector<AccuracyGroup>& rows = acc.groups;
  auto row = [](const std::string& label, const AccuracyGroup& g) {
    return g.n == 0
               ? Fmt("%s: no published run", label.c_str())
               : Fmt("%s: %lld runs, median %s, p90 %s, signed %+.1f%%", label.c_str(), static_cast<long long>(g.n),
                     Pct(g.median_abs_error).c_str(), Pct(g.p90_abs_error).c_str(), 100 * g.median_error);
  };
  std::vector<std::string> parts;
  for (const auto& g : rows) parts.push_back(row(g.dimension + " " + g.value, g));
  parts.push_back(row(acc.joint.value + " at once", acc.joint));
  st.substituted = Join(parts, "; ") + Fmt(" (of %lld runs: %s)", static_cast<long long>(t->all.n), t->made_by.c_str());
  const AccuracyGroup* w = LeastAccurate(rows);
  if (!w) {
    st.result = "no published run is in any of this plan's groups: there is no evidence of how close it comes";
    return st;
  }
  st.result =
      Fmt("as uncertain as its least accurate group, %s %s: half of its %lld published runs were off by more "
          "than %s, one in ten by more than %s, the typical one %s",
          w->dimension.c_str(), w->value.c_str(), static_cast<long long>(w->n), Pct(w->median_abs_error).c_str(),
          Pct(w->p90_abs_error).c_str(),
          w->median_error > 0   ? Fmt("too fast by %s", Pct(w->median_error).c_str()).c_str()
          : w->median_error < 0 ? Fmt("too slow by %s", Pct(-w->median_error).c_str()).c_str()
                                : "neither too fast nor too slow");
  Set(&st, "runs", static_cast<double>(w->n));
  Set(&st, "median_abs_error", w->median_abs_error);
  Set(&st, "p90_abs_error", w->p90_abs_error);
  Set(&st, "median_error", w->median_error);
  const AccuracyRange& r = acc.range;
  st.result +=
      Fmt("; runs like it (the %lld of %s) measured %.2fx to %.2fx the predicted tokens/s (their 10th to "
          "90th percentile)",
          static_cast<long long>(r.n), r.basis.c_str(), r.LowFactor(), r.HighFactor());
  Set(&st, "range_runs", static_cast<double>(r.n));
  Set(&st, "range_low_factor", r.LowFactor());
  Set(&st, "range_high_factor", r.HighFactor());
  return st;
}

// Why `best` beats `mine`: the largest savings in the step breakdown.
std::string WhyFaster(const StepEstimate& mine, const StepEstimate& best) {
  auto a = BreakdownTerms(mine.breakdown), b = BreakdownTerms(best.breakdown);
  std::vector<std::pair<double, std::string>> diffs;
  for (size_t i = 0; i < a.size(); ++i) diffs.push_back({a[i].seconds - b[i].seconds, a[i].name});
  std::sort(diffs.begin(), diffs.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<std::string> parts;
  for (const auto& d : diffs) {
    if (parts.size() == 3 || d.first <= 0.01 * mine.time_s) break;
    parts.push_back(Fmt("%s less %s", Secs(d.first).c_str(), d.second.c_str()));
  }
  for (const auto& d : diffs)
    if (d.first < -0.01 * mine.time_s) {
      parts.push_back(Fmt("at the price of %s more %s", Secs(-d.first).c_str(), d.second.c_str()));
      break;
    }
  return parts.empty() ? std::string("the same step breakdown") : Join(parts, ", ");
}

ExplainStep SearchStep(const PlanSpec& plan, const core::MemoryReport& mem, const StepEstimate& e,
                       const SearchResult* res, const std::optional<RankedPlan>& rec) {
  ExplainStep st = NewStep("recommendation", "Recommended plan (search)");
  st.rule =
      "The search enumerates every valid plan (TP within the NVLink domain, PP with even or the default uneven splits, "
      "virtual stages, CP, EP, ZeRO 0–3, recompute, SP, micro batch, schedule), prunes those whose states "
      "cannot fit, and ranks the rest by tokens/s with the same memory and step models. docs/search.md.";
  st.formula = "best = argmax tokens/s over plans with per-GPU bytes ≤ HBM";
  Set(&st, "plan_tokens_per_s", mem.fits ? e.tokens_per_s : 0, "tokens/s");
  if (!res) {
    st.substituted = "search not run (--no-search)";
    st.result = mem.fits ? "recommended: " + PlanText(plan) : "no plan fits (the search was not run)";
    return st;
  }
  const SearchStats& ss = res->stats;
  Set(&st, "enumerated", static_cast<double>(ss.enumerated));
  Set(&st, "evaluated", static_cast<double>(ss.evaluated));
  if (res->top.empty()) {
    st.substituted = Fmt("%s plans: %s pruned, %s out of memory, %s invalid, none fits", Int(ss.enumerated).c_str(),
                         Int(ss.Pruned()).c_str(), Int(ss.out_of_memory).c_str(), Int(ss.invalid).c_str());
    st.result = mem.fits ? "recommended: " + PlanText(plan) + " (the search found nothing that fits within its space)"
                         : "no plan fits on these GPUs: more GPUs, or offload (ZeRO-Offload/Infinity)";
    return st;
  }
  const RankedPlan& best = res->top.front();
  st.substituted =
      Fmt("%s plans: %s evaluated, %s out of memory, %s pruned; best: %s, %s tokens/s, MFU %s, %s per "
          "GPU",
          Int(ss.enumerated).c_str(), Int(ss.evaluated).c_str(), Int(ss.out_of_memory).c_str(),
          Int(ss.Pruned()).c_str(), PlanText(best.plan).c_str(), Count(best.step.tokens_per_s).c_str(),
          Pct(best.step.mfu).c_str(), Bytes(static_cast<double>(best.per_gpu_bytes)).c_str());
  if (mem.fits)
    st.substituted += Fmt("; the whiteboard plan: %s tokens/s = %s of the best", Count(e.tokens_per_s).c_str(),
                          Pct(e.tokens_per_s / best.step.tokens_per_s).c_str());
  else st.substituted += "; the whiteboard plan does not fit";
  if (rec && rec->plan == best.plan) {
    st.result =
        "recommended: " + PlanText(best.plan) + ". Why: " +
        (mem.fits ? WhyFaster(e, best.step) + " than the whiteboard plan" : std::string("the fastest plan that fits"));
  } else if (rec) {
    st.result = "recommended: " + PlanText(rec->plan);
  }
  Set(&st, "best_tokens_per_s", best.step.tokens_per_s, "tokens/s");
  Set(&st, "best_mfu", best.step.mfu);
  Set(&st, "best_tp", static_cast<double>(best.plan.tp));
  Set(&st, "best_pp", static_cast<double>(best.plan.pp));
  Set(&st, "best_dp", static_cast<double>(best.plan.dp));
  Set(&st, "best_cp", static_cast<double>(best.plan.cp));
  Set(&st, "best_vpp", static_cast<double>(best.plan.vpp));
  Set(&st, "best_zero", best.plan.zero);
  if (mem.fits) Set(&st, "plan_relative_throughput", e.tokens_per_s / best.step.tokens_per_s);
  return st;
}

ExplainStep CostStep(const core::Scenario& s, const RankedPlan& r, double tokens,
                     const core::Result<ReliabilityReport>& rel) {
  const double price = s.cluster.price_per_gpu_hour_usd;
  const double gpus = static_cast<double>(r.plan.gpus);
  ExplainStep st = NewStep("cost", "Time, cost and goodput");
  st.rule =
      "Days = tokens / (tokens/s); GPU-hours = GPUs × hours; dollars = GPU-hours × the cluster's price per "
      "GPU-hour; failures and checkpoints stretch the wall-clock time by 1/goodput.";
  st.formula = "days = D / (tok/s × 86400);  $ = n × 24 h × days × price;  with failures: ÷ goodput";
  const TrainEstimate& t = r.train;
  st.substituted = Fmt("%s tokens / %s tokens/s = %.1f days; %s GPUs × 24 h × %.1f days = %s GPU-hours × $%.2f = %s",
                       Eng(tokens).c_str(), Count(r.step.tokens_per_s).c_str(), t.days, Int(r.plan.gpus).c_str(),
                       t.days, Count(t.gpu_hours).c_str(), price, Usd(t.cost_usd).c_str());
  st.result = Fmt("%s: %.1f days, %s GPU-hours, %s without failures", PlanText(r.plan).c_str(), t.days,
                  Count(t.gpu_hours).c_str(), Usd(t.cost_usd).c_str());
  Set(&st, "tokens", tokens, "tokens");
  Set(&st, "tokens_per_s", r.step.tokens_per_s, "tokens/s");
  Set(&st, "days", t.days, "days");
  Set(&st, "gpu_hours", t.gpu_hours, "GPU-h");
  Set(&st, "price_per_gpu_hour_usd", price, "USD");
  Set(&st, "cost_usd", t.cost_usd, "USD");
  if (rel.ok()) {
    const ReliabilityReport& rr = *rel;
    const double cost = rr.expected_days * 24 * gpus * price;
    st.substituted +=
        Fmt("; goodput %s ⇒ %.1f days, %s", Pct(rr.expected.goodput).c_str(), rr.expected_days, Usd(cost).c_str());
    st.substituted += rr.mc.skipped.empty() ? Fmt(" (Monte Carlo, %lld trials: p50 %.1f, p90 %.1f days)",
                                                  static_cast<long long>(rr.mc.trials), rr.mc.days.p50, rr.mc.days.p90)
                                            : " (" + rr.mc.skipped + ")";
    st.result += Fmt("; with failures %.1f days and %s at %s goodput", rr.expected_days, Usd(cost).c_str(),
                     Pct(rr.expected.goodput).c_str());
    Set(&st, "goodput", rr.expected.goodput);
    Set(&st, "days_with_failures", rr.expected_days, "days");
    Set(&st, "cost_with_failures_usd", cost, "USD");
  }
  // The seeds' yardstick: this cluster for two weeks at its price ("16k H100s × 2 weeks × $3 ≈ $16M").
  const double two_weeks_h = 14 * 24.0;
  const double yard_gpu_hours = gpus * two_weeks_h;
  st.substituted += Fmt(
      "; for scale, the seeds' yardstick (these GPUs for 2 weeks): %s × %.0f h = %s GPU-hours × "
      "$%.2f = %s",
      Int(r.plan.gpus).c_str(), two_weeks_h, Count(yard_gpu_hours).c_str(), price, Usd(yard_gpu_hours * price).c_str());
  Set(&st, "two_weeks_gpu_hours", yard_gpu_hours, "GPU-h");
  Set(&st, "two_weeks_cost_usd", yard_gpu_hours * price, "USD");
  if (r.plan.gpus == 16384)
    st.seeds_note =
        Fmt("The seeds pair '~7M H100-hours' with '16k H100s for roughly two weeks'; 16,384 × %.0f h is "
            "%s GPU-hours. 7M GPU-hours at 16,384 GPUs is %.1f days, and %s at $%.2f, not $16M.",
            two_weeks_h, Count(yard_gpu_hours).c_str(), 7e6 / gpus / 24, Usd(7e6 * price).c_str(), price);
  return st;
}

}  // namespace

core::Result<Explanation> ExplainScenario(const core::Scenario& s, const core::Profile& profile,
                                          const core::FailureModel& failures, const ExplainOptions& opt) {
  if (opt.tokens < 0 || !std::isfinite(opt.tokens))
    return Status::InvalidArgument(Fmt("tokens: must be > 0, or 0 for 20 per parameter (got %g)", opt.tokens));
  if (opt.trials < 1)
    return Status::InvalidArgument(Fmt("trials: must be >= 1 (got %lld)", static_cast<long long>(opt.trials)));
  Explanation ex;
  ex.title = Fmt("%s on %s × %s (%s), seq %lld, global batch %lld", s.model.name.c_str(), Int(s.plan.gpus).c_str(),
                 s.gpu.name.c_str(), s.cluster.name.c_str(), static_cast<long long>(s.plan.seq_len),
                 static_cast<long long>(s.plan.global_batch));
  const RulesOutcome rules = ApplyRules(s, profile);
  ex.rules_plan = rules.found ? std::optional<PlanSpec>(rules.plan) : std::nullopt;
  if (!opt.keep_plan && !rules.found) {
    // Nothing to evaluate: the GPU count and batch admit no plan the rules can write down.
    ex.steps.push_back(ModelSizeStep(s.model));
    ex.steps.push_back(MemoryBudgetStep(s));
    ex.steps.push_back(ParallelismStep(s, rules, s.plan, false));
    return ex;
  }
  const PlanSpec plan = opt.keep_plan ? s.plan : rules.plan;

  core::Scenario here = s;
  here.plan = plan;
  EvaluateOptions eo;
  eo.tokens = opt.tokens;
  const ScenarioEvaluation ev = EvaluateScenario(here, profile, eo);
  const core::MemoryReport& mem = ev.memory;
  const StepEstimate& step = ev.step;
  const double tokens = ev.tokens;

  ex.steps.push_back(ModelSizeStep(s.model));
  ex.steps.push_back(MemoryBudgetStep(here));
  ex.steps.push_back(ParallelismStep(s, rules, plan, opt.keep_plan));
  ex.steps.push_back(MemoryFitStep(here, plan, mem));
  ex.steps.push_back(PrecisionStep(here, plan, profile));

  ReliabilityOptions ro = ReportReliabilityOptions(tokens);
  ro.trials = opt.trials;
  const core::Result<ReliabilityReport> rel =
      step.tokens_per_s > 0 ? EstimateReliability(here, mem, step, failures, ro)
                            : core::Result<ReliabilityReport>(Status::InvalidArgument("the step has no throughput"));
  ex.steps.push_back(CheckpointStep(here, plan, mem, failures));
  ex.steps.push_back(FailuresStep(here, failures, rel));
  ex.steps.push_back(OverlapStep(here, plan, profile, step));
  ex.steps.push_back(MfuStep(here, plan, step));
  ex.steps.push_back(AccuracyStep(here, profile));

  // The recommendation: the search's best, else the plan itself when it fits.
  std::optional<SearchResult> res;
  if (opt.search) {
    SearchOptions so = opt.search_options;
    so.tokens = tokens;
    if (so.top_k < 1) so.top_k = 1;
    res = SearchPlans(s.model, s.gpu, s.cluster, plan, profile, so);
  }
  if (res && !res->top.empty()) {
    ex.recommended = res->top.front();
  } else if (mem.fits) {
    RankedPlan r;
    r.plan = plan;
    r.worst_stage = mem.stages[static_cast<size_t>(mem.worst_stage)];
    r.per_gpu_bytes = mem.per_gpu_bytes;
    r.capacity_bytes = mem.capacity_bytes;
    r.step = step;
    r.train = ev.train;
    ex.recommended = r;
  }
  ex.steps.push_back(SearchStep(plan, mem, step, res ? &*res : nullptr, ex.recommended));
  ex.fits = ex.recommended.has_value();
  if (ex.recommended) {
    core::Scenario rs = s;
    rs.plan = ex.recommended->plan;
    const core::MemoryReport rmem = core::EstimateMemory(s.model, rs.plan, s.gpu, profile.memory);
    const core::Result<ReliabilityReport> rrel = EstimateReliability(rs, rmem, ex.recommended->step, failures, ro);
    ex.steps.push_back(CostStep(rs, *ex.recommended, tokens, rrel));
  } else {
    ExplainStep st = NewStep("cost", "Time, cost and goodput");
    st.rule = "Days, GPU-hours and dollars need a plan that fits.";
    st.formula = "—";
    st.substituted = "—";
    st.result = "no plan fits: nothing to cost";
    ex.steps.push_back(st);
  }
  return ex;
}

}  // namespace meshplan::sim
