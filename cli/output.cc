#include "cli/output.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "core/memory.h"
#include "core/spec_json.h"
#include "core/step_graph.h"
#include "core/units.h"

namespace meshplan::cli {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string TokensFlagError(const std::optional<double>& tokens) {
  if (!tokens) return "";
  if (!(*tokens > 0) || !std::isfinite(*tokens)) return "must be a finite number > 0 (got " + Fmt("%g", *tokens) + ")";
  if (*tokens > kMaxTrainTokens)
    return "must be <= " + Fmt("%g", kMaxTrainTokens) + " (got " + Fmt("%g", *tokens) + ")";
  return "";
}

namespace {

using OJson = nlohmann::ordered_json;

}  // namespace

std::string PlanLabel(const core::Scenario& s) {
  const auto& p = s.plan;
  return s.model.name + " tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) + " dp" + std::to_string(p.dp) +
         " mbs" + std::to_string(p.micro_batch) + " seq" + std::to_string(p.seq_len) + " on " + std::to_string(p.gpus) +
         "x " + s.gpu.name;
}

std::string HumanCount(int64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e12) return Fmt("%.4gT", v / 1e12);
  if (v >= 1e9) return Fmt("%.4gB", v / 1e9);
  if (v >= 1e6) return Fmt("%.4gM", v / 1e6);
  return Fmt("%.0f", v);
}

namespace {

std::string Count(int64_t n) { return HumanCount(n); }
std::string Gb(int64_t bytes) { return Fmt("%.2f", static_cast<double>(bytes) / 1e9); }

std::string LayerRange(const std::vector<int64_t>& layers) {
  // "0-39" or "0-9,40-49" for interleaved chunks.
  std::string out;
  size_t i = 0;
  while (i < layers.size()) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(layers[i]);
    if (j > i) {  // two appends: GCC 12 warns falsely (-Wrestrict) on "-" + std::to_string(...)
      out += '-';
      out += std::to_string(layers[j]);
    }
    i = j + 1;
  }
  return out;
}

std::string PlanLine(const core::PlanSpec& p, const core::MemoryReport& r) {
  std::ostringstream o;
  o << "tp " << p.tp << " . pp " << p.pp << " . dp " << p.dp << " . cp " << p.cp << " . ep " << p.ep;
  if (p.etp > 1) o << " . etp " << p.etp;
  if (p.vpp > 1) o << " . vpp " << p.vpp;
  if (p.torch_cp && p.cp > 1) o << " (PyTorch CP, " << core::Name(p.cp_kind) << ")";
  if (p.placement != core::PlanSpec{}.placement) o << " (ranks " << core::PlacementString(p.placement) << ")";
  if (p.segment_nodes > 0) o << " (Slurm segments of " << p.segment_nodes << " nodes)";
  o << " | zero " << p.zero;
  if (p.zero > 0) o << " over " << r.dense_shard_group << (p.sharding == core::Sharding::kHsdp ? " (hsdp)" : "");
  o << " | sp " << (p.sequence_parallel ? "on" : "off");
  if (p.dtensor_tp && p.tp > 1) o << ", DTensor TP";
  o << " | recompute " << core::Name(p.recompute);
  if (p.recompute_layers > 0) o << " (" << p.recompute_layers << " layers/stage)";
  if (p.recompute_early_stop) o << " (early stop)";
  if (p.recompute == core::Recompute::kSelective && p.recompute_modules != core::kDefaultRecomputeModules)
    o << " [" << core::RecomputeModulesString(p.recompute_modules) << "]";
  o << " | mbs " << p.micro_batch << " . gbs " << p.global_batch << " . seq " << p.seq_len << " | "
    << core::Name(p.schedule) << ", " << p.Microbatches() << " microbatches";
  if (p.Flushes() > 1) o << " in " << p.Flushes() << " flushes";
  if (p.schedule == core::Schedule::kInterleaved && p.vpp_group > 0) o << " in groups of " << p.vpp_group;
  o << " | " << core::Name(p.precision);
  if (p.HasBf16Layers()) {
    o << " (bf16:";
    if (p.bf16_layers_at_start > 0) o << " first " << p.bf16_layers_at_start;
    if (p.bf16_layers_at_start > 0 && p.bf16_layers_at_end > 0) o << ",";
    if (p.bf16_layers_at_end > 0) o << " last " << p.bf16_layers_at_end;
    o << " layers)";
  }
  if (p.fp8_param_gather) o << ", parameters gathered in fp8";
  return o.str();
}

// How the plan runs its MoE layers, the settings a software stack or the flags chose (plan.moe_*,
// expert_bias, ep_overlap): what the plan line leaves out. REQUIRES: m.moe.
std::string MoeLine(const core::ModelSpec& m, const core::PlanSpec& p) {
  const core::MoeSpec& e = *m.moe;
  std::ostringstream o;
  o << e.experts << " experts, top " << e.top_k;
  if (e.shared_experts > 0) o << " + " << e.shared_experts << " shared";
  if (p.ep > 0 && e.experts % p.ep == 0) o << ", " << e.experts / p.ep << " per EP rank";
  o << " | " << (e.capacity_factor > 0 ? "capacity factor " + Fmt("%.3g", e.capacity_factor) : std::string("dropless"))
    << " | dispatcher " << core::Name(p.moe_dispatcher) << ", routing " << core::Name(p.moe_routing);
  if (core::MoeBusiestRank(m, p) != 1) o << ", the busiest EP rank " << Fmt("%.3g", p.moe_imbalance) << "x the mean";
  o << (p.ep_overlap ? ", EP all-to-all overlapped" : "") << (p.delay_wgrad ? " (weight gradients delayed)" : "")
    << " | probabilities " << core::Name(p.moe_probs) << " | "
    << (p.moe_grouped_gemm ? "grouped GEMM" : "one GEMM per expert") << " | host floor " << core::Name(p.moe_host);
  if (core::Quantized(p.precision) && p.transformer_engine && p.moe_grouped_gemm)
    o << " | " << (p.moe_router_padding ? "tokens padded by the router" : "tokens padded by the experts");
  if (p.moe_op_fuser) o << " | Transformer Engine's op fuser";
  if (m.bias == core::BiasKind::kAll) o << " | expert fc2 bias " << core::Name(p.expert_bias);
  return o.str();
}

std::string StateLine(const core::PlanSpec& p, const core::MemoryReport& r) {
  std::ostringstream o;
  const auto& d = p.dtypes;
  const int moments = core::MomentBuffers(p.optimizer);
  o << Fmt("%.4g", r.bytes_per_param) << " B/param of model state = weights " << core::Name(d.weights) << " "
    << core::DtypeBytes(d.weights) << " + grads " << core::Name(d.grads) << " " << core::DtypeBytes(d.grads)
    << (p.keep_lp_grads
            ? " + " + std::string(core::Name(d.weights)) + " grads kept " + std::to_string(core::DtypeBytes(d.weights))
            : std::string())
    << " + master " << core::Name(d.master_weights) << " " << core::DtypeBytes(d.master_weights) << " + "
    << core::Name(p.optimizer) << " moments " << moments << " x " << core::Name(d.optimizer_states) << " "
    << core::DtypeBytes(d.optimizer_states)
    << (p.optimizer == core::Optimizer::kMuon ? " (the embedding, head and norms: Adam's 2)" : "");
  return o.str();
}

std::string SpeedTable(const core::Scenario& s, const SpeedReport& sp) {
  std::ostringstream o;
  const auto& e = sp.step;
  const auto& b = e.breakdown;
  char line[256];
  o << "# Step time (analytic model, profile " << sp.profile << ")\n";
  auto row = [&](const char* name, double sec) {
    std::snprintf(line, sizeof line, "#   %-26s %10.3f s  %5.1f%%\n", name, sec,
                  e.time_s > 0 ? 100 * sec / e.time_s : 0);
    o << line;
  };
  row("compute", b.compute_s);
  if (b.recompute_s > 0) row("recompute", b.recompute_s);
  if (b.tp_comm_s > 0) row("TP communication (exposed)", b.tp_comm_s);
  if (b.cp_comm_s > 0) row("CP communication (exposed)", b.cp_comm_s);
  if (b.ep_comm_s > 0) row("EP all-to-all (exposed)", b.ep_comm_s);
  if (b.dp_comm_s > 0) row("DP communication (exposed)", b.dp_comm_s);
  if (b.pp_comm_s > 0) row("pipeline communication", b.pp_comm_s);
  if (b.bubble_s > 0) row("pipeline bubble", b.bubble_s);
  if (b.offload_s > 0) row("offload copies (exposed)", b.offload_s);
  if (b.host_s > 0) row("waiting for the host (MoE)", b.host_s);
  row("optimizer step", b.optimizer_s);
  row("step", e.time_s);
  // The compute above runs at the pace of the plan's slowest GPU (docs/compute.md).
  if (const double pace = sim::SlowestGpuPace(s.plan, s.gpu); pace > 1) {
    std::snprintf(line, sizeof line,
                  "#   (compute at the slowest of %lld GPUs' pace: x %.3f, the GPU's speed spread %.2f%%; "
                  "docs/compute.md)\n",
                  static_cast<long long>(s.plan.gpus), pace, 100 * s.gpu.speed_spread);
    o << line;
  }
  // Of the exposed communication above: the compute the hidden collectives slowed (docs/compute.md).
  if (e.overlap_slowdown_s > 0) {
    std::snprintf(line, sizeof line,
                  "#   (overlapped communication slows the compute beside it: +%.3f s, counted in the exposed "
                  "communication above; docs/compute.md)\n",
                  e.overlap_slowdown_s);
    o << line;
  }
  // The optimizer offloaded to the host: where its step runs, at which rates (docs/compute.md).
  if (s.plan.offload_optimizer != core::OffloadTarget::kNone && s.cluster.host_memory_bytes_per_s > 0) {
    std::snprintf(
        line, sizeof line,
        "#   (the optimizer steps on the host: its Adam at %.1f GB/s, DeepSpeed's measured %.3f of the node's "
        "%.1f GB/s of host memory, shared by %lld ranks; the gradients and weights over the GPU's %.0f GB/s "
        "host link; docs/compute.md)\n",
        sim::HostAdamBytesPerS(s.cluster) / 1e9, sim::kHostAdamDramShare, s.cluster.host_memory_bytes_per_s / 1e9,
        static_cast<long long>(sim::HostRanksPerNode(s.plan, s.cluster)), s.gpu.host_link_bytes_per_s / 1e9);
    o << line;
  }
  // The MoE layers' host floor (docs/compute.md): what each layer takes at least, and how to drop it.
  if (b.host_s > 0) {
    const sim::MoeHostTime host = sim::MoeLayerHostTime(s.model, s.plan);
    std::snprintf(line, sizeof line, "%.3f ms forward and %.3f ms backward per microbatch", 1e3 * host.forward_s,
                  1e3 * host.backward_s);
    o << "#   (each MoE layer waits for its host time, Megatron-Core's measured"
      << (sim::TeGroupedGemmHost(s.plan) ? " with Transformer Engine's cuBLASLt call per expert GEMM" : "") << ", "
      << line
      << ", beyond its kernels after the dispatcher's sync and its backward's; --moe-host none drops it; "
         "docs/compute.md)\n";
  }
  std::snprintf(line, sizeof line,
                "#   %.0f tokens/s (%.0f per GPU); %.1f TFLOP/s per GPU; MFU %.1f%% (causal-attention count %.1f%%), "
                "HFU %.1f%%\n",
                e.tokens_per_s, e.tokens_per_s_per_gpu, e.tflops_per_gpu, 100 * e.mfu, 100 * e.mfu_causal, 100 * e.hfu);
  o << line;
  const auto& t = sp.train;
  std::snprintf(line, sizeof line,
                "#   %.3g tokens: %.0f steps, %.1f days, %.3g GPU-hours, $%.3g at $%.2f/GPU-h, %.3g kWh at TDP\n",
                t.tokens, t.steps, t.days, t.gpu_hours, t.cost_usd, s.cluster.price_per_gpu_hour_usd, t.energy_kwh);
  o << line;
  if (sp.reliability) {
    const auto& r = *sp.reliability;
    std::snprintf(line, sizeof line,
                  "#   with failures (%s rates): MTBF %.2f h, %.0f interruptions expected, async checkpoint every "
                  "%.0f s, goodput %.1f%%; ",
                  sp.failure_model.c_str(), r.rates.mtbf_h, r.expected_interruptions, r.interval_s,
                  100 * r.expected.goodput);
    o << line;
    if (r.mc.skipped.empty()) {
      std::snprintf(line, sizeof line, "days p50 %.1f, p90 %.1f; cost p50 $%.3g\n", r.mc.days.p50, r.mc.days.p90,
                    r.mc.cost_usd.p50);
      o << line;
    } else {
      std::snprintf(line, sizeof line, "days %.1f, cost $%.3g (closed form)\n", r.mc.days.p50, r.mc.cost_usd.p50);
      o << line << "#   (" << r.mc.skipped << ")\n";
    }
  }
  o << "#\n";
  return o.str();
}

// The plan's numbers at the two ends of the range runs like it measured (sim::AccuracyRange).
struct RangeEnds {
  std::array<double, 2> tokens_per_s_per_gpu{}, step_s{}, days{}, cost_usd{}, on_gpu_bytes{};
};
RangeEnds RangeEndsOf(const SpeedReport& sp, const core::MemoryReport& r) {
  RangeEnds e;
  if (sp.step_accuracy) {
    const sim::AccuracyRange& a = sp.step_accuracy->range;
    e.tokens_per_s_per_gpu = a.Measured(sp.step.tokens_per_s_per_gpu);
    e.step_s = a.MeasuredTime(sp.step.time_s);
    e.days = a.MeasuredTime(sp.train.days);
    e.cost_usd = a.MeasuredTime(sp.train.cost_usd);
  }
  if (sp.memory_accuracy) e.on_gpu_bytes = sp.memory_accuracy->range.Measured(static_cast<double>(r.per_gpu_bytes));
  return e;
}

// How close such predictions came: the shipped accuracy tables' rows for the plan's groups, step
// time beside memory (docs/validation.md, How close).
std::string AccuracyText(const SpeedReport& sp, const core::MemoryReport& r) {
  if (!sp.step_accuracy && !sp.memory_accuracy) return "";
  using Key = std::pair<std::string, std::string>;
  // A group's cells: runs, |error| median and p90, signed median; blank where the table has no
  // such dimension (scale is the step table's, parallelism the memory table's), "-" where it has
  // no run of that group.
  auto cells = [](const sim::AccuracyGroup* g) {
    char c[64];
    if (!g) std::snprintf(c, sizeof c, "%29s", "");
    else if (g->n == 0) std::snprintf(c, sizeof c, "%5d %7s %7s %7s", 0, "-", "-", "-");
    else
      std::snprintf(c, sizeof c, "%5zu %6.1f%% %6.1f%% %+6.1f%%", g->n, 100 * g->median_abs_error,
                    100 * g->p90_abs_error, 100 * g->median_error);
    return std::string(c);
  };
  auto find = [](const std::optional<SpeedReport::Accuracy>& acc, const Key& k) -> const sim::AccuracyGroup* {
    if (!acc) return nullptr;
    if (k.first == "all") return &acc->table.all;
    if (k.first == "joint") return acc->joint.value == k.second ? &acc->joint : nullptr;
    for (const auto& g : acc->groups)
      if (g.dimension == k.first && g.value == k.second) return &g;
    return nullptr;
  };
  // The rows: every group of either table, the step table's order first.
  std::vector<Key> keys{{"all", "all"}};
  for (const auto* acc : {&sp.step_accuracy, &sp.memory_accuracy})
    if (*acc && std::find(keys.begin(), keys.end(), Key{"joint", (*acc)->joint.value}) == keys.end())
      keys.emplace_back("joint", (*acc)->joint.value);
  for (const auto* acc : {&sp.step_accuracy, &sp.memory_accuracy})
    if (*acc)
      for (const auto& g : (*acc)->groups)
        if (std::find(keys.begin(), keys.end(), Key{g.dimension, g.value}) == keys.end())
          keys.emplace_back(g.dimension, g.value);
  std::ostringstream o;
  char line[512];
  std::snprintf(line, sizeof line,
                "# How close: the error on published runs in this plan's groups (meshplan validate, default profile: "
                "%zu step times, %zu memory peaks; docs/validation.md)\n",
                sp.step_accuracy ? sp.step_accuracy->table.all.n : 0,
                sp.memory_accuracy ? sp.memory_accuracy->table.all.n : 0);
  o << line;
  std::snprintf(line, sizeof line, "#   %-28s %-29s | %s\n", "", "step time (tokens/s per GPU)",
                "memory peak (per GPU)");
  o << line;
  std::snprintf(line, sizeof line, "#   %-28s %5s %7s %7s %7s | %5s %7s %7s %7s\n", "group", "runs", "median", "p90",
                "signed", "runs", "median", "p90", "signed");
  o << line;
  for (const auto& k : keys) {
    const std::string label = k.first == "all" ? "all" : k.first + " " + k.second;
    std::string row = "#   " + label + std::string(label.size() < 28 ? 28 - label.size() : 0, ' ') + " " +
                      cells(find(sp.step_accuracy, k)) + " | " + cells(find(sp.memory_accuracy, k));
    row.erase(row.find_last_not_of(' ') + 1);  // a blank memory cell leaves no trailing spaces
    o << row << "\n";
  }
  o << "#   (|error| median and p90 over the group's published runs; signed median: step time > 0 predicted too "
       "fast, memory > 0 predicted too large)\n";
  // Comparing this plan with another: how far off the model's ratio of two published runs that
  // differ in one thing came (sim/comparison.h), per axis.
  for (const auto* acc : {&sp.step_accuracy, &sp.memory_accuracy}) {
    if (!*acc || (*acc)->table.comparisons.empty()) continue;
    const auto& c = (*acc)->table.comparisons;
    std::string text;
    for (size_t i = 1; i < c.size(); ++i) {
      char cell[96];
      std::snprintf(cell, sizeof cell, "%s%s %zu, %.1f%%", i > 1 ? "; " : "", c[i].value.c_str(), c[i].n,
                    100 * c[i].median_abs_error);
      text += cell;
    }
    std::snprintf(line, sizeof line,
                  "#   %s of one plan against another: the ratio of two published runs that differ in one thing "
                  "came within %.1f%% (median; p90 %.1f%%, %zu pairs; validate --pairs); by what differs, pairs and "
                  "median: %s\n",
                  acc == &sp.step_accuracy ? "step time" : "memory", 100 * c[0].median_abs_error,
                  100 * c[0].p90_abs_error, c[0].n, text.c_str());
    o << line;
  }
  // The published runs' own spread where one plan was printed more than once (sim::FindRepeats): no
  // prediction comes closer to both than the floor.
  for (const auto* acc : {&sp.step_accuracy, &sp.memory_accuracy}) {
    if (!*acc || (*acc)->table.repeats.scenarios == 0) continue;
    const sim::AccuracyRepeats& rep = (*acc)->table.repeats;
    std::snprintf(line, sizeof line,
                  "#   %s of one plan measured twice: %zu plans printed more than once (%zu runs; validate --repeats) "
                  "differ by %.1f%% (median; p90 %.1f%%), so one prediction is at least %.1f%% off one of them "
                  "(median; p90 %.1f%%)\n",
                  acc == &sp.step_accuracy ? "step time" : "memory", rep.scenarios, rep.runs, 100 * rep.spread_median,
                  100 * rep.spread_p90, 100 * rep.floor_median, 100 * rep.floor_p90);
    o << line;
  }
  // Where the step-time error sits on the plans measured at several GPU counts (sim::SplitSteps):
  // per microbatch or per step.
  if (sp.step_accuracy && sp.step_accuracy->table.step_split.series > 0) {
    const sim::AccuracyStepSplit& s = sp.step_accuracy->table.step_split;
    std::snprintf(line, sizeof line,
                  "#   step time of one plan at several GPU counts: over %zu strong-scaling series (%zu runs; validate "
                  "--step-split) the time a microbatch adds came within %.1f%% (median; p90 %.1f%%, signed %+.1f%%) "
                  "and a step's fixed cost %+.2f s off (median; < 0 predicted short)\n",
                  s.series, s.runs, 100 * s.t_median, 100 * s.t_p90, 100 * s.t_signed, s.f_gap_median_s);
    o << line;
  }
  // The runs like the plan in GPU, dense/MoE and precision at once; and a prediction is as
  // uncertain as the least accurate group it falls in.
  for (const auto* acc : {&sp.step_accuracy, &sp.memory_accuracy}) {
    if (!*acc) continue;
    const sim::AccuracyGroup& j = (*acc)->joint;
    if (j.n > 0)
      std::snprintf(line, sizeof line,
                    "#   %s: runs of this GPU, model kind and precision at once (%s): median %.1f%%, p90 %.1f%% "
                    "(%zu runs, signed %+.1f%%)\n",
                    acc == &sp.step_accuracy ? "step time" : "memory", j.value.c_str(), 100 * j.median_abs_error,
                    100 * j.p90_abs_error, j.n, 100 * j.median_error);
    else
      std::snprintf(line, sizeof line, "#   %s: no published run of this GPU, model kind and precision at once (%s)\n",
                    acc == &sp.step_accuracy ? "step time" : "memory", j.value.c_str());
    o << line;
    const sim::AccuracyGroup* w = sim::LeastAccurate((*acc)->groups);
    if (!w) continue;
    std::snprintf(line, sizeof line,
                  "#   %s: as uncertain as its least accurate group, %s %s: median %.1f%%, p90 %.1f%% (%zu runs, "
                  "signed %+.1f%%)\n",
                  acc == &sp.step_accuracy ? "step time" : "memory", w->dimension.c_str(), w->value.c_str(),
                  100 * w->median_abs_error, 100 * w->p90_abs_error, w->n, 100 * w->median_error);
    o << line;
  }
  // What runs like the plan measured, as a range of its own numbers (sim::RangeOf).
  const RangeEnds e = RangeEndsOf(sp, r);
  if (sp.step_accuracy && sp.step_accuracy->range.n > 0) {
    const sim::AccuracyRange& a = sp.step_accuracy->range;
    std::snprintf(line, sizeof line,
                  "#   step time: runs like this plan (the %zu of %s) measured %.2fx to %.2fx the predicted tokens/s "
                  "(their 10th to 90th percentile): %.0f to %.0f tokens/s per GPU, a step of %.3g to %.3g s, "
                  "%.1f to %.1f days, $%.3g to $%.3g before failures\n",
                  a.n, a.basis.c_str(), a.LowFactor(), a.HighFactor(), e.tokens_per_s_per_gpu[0],
                  e.tokens_per_s_per_gpu[1], e.step_s[0], e.step_s[1], e.days[0], e.days[1], e.cost_usd[0],
                  e.cost_usd[1]);
    o << line;
  }
  if (sp.memory_accuracy && sp.memory_accuracy->range.n > 0) {
    const sim::AccuracyRange& a = sp.memory_accuracy->range;
    std::snprintf(
        line, sizeof line,
        "#   memory: peaks like this plan's (the %zu of %s) measured %.2fx to %.2fx the predicted (their "
        "10th to 90th percentile): %s to %s GB on the GPU of %s GB%s\n",
        a.n, a.basis.c_str(), a.LowFactor(), a.HighFactor(), Fmt("%.1f", e.on_gpu_bytes[0] / 1e9).c_str(),
        Fmt("%.1f", e.on_gpu_bytes[1] / 1e9).c_str(), Fmt("%.1f", static_cast<double>(r.capacity_bytes) / 1e9).c_str(),
        r.fits && e.on_gpu_bytes[1] > static_cast<double>(r.capacity_bytes) ? ": at the high end the plan does not fit"
                                                                            : "");
    o << line;
  }
  // The published runs of this very model (on this GPU when there are any): the plan's precision
  // first, then nearest in GPU count (sim::RunsLike).
  constexpr size_t kLikeShown = 5;
  for (const auto* acc : {&sp.step_accuracy, &sp.memory_accuracy}) {
    if (!*acc || (*acc)->like.empty()) continue;
    const auto& a = **acc;
    const bool step = acc == &sp.step_accuracy;
    const sim::AccuracyRun& first = a.like.front();
    std::snprintf(line, sizeof line,
                  "#   %s of %s%s%s, the plan's precision first, then nearest in GPU count (%zu of %zu; "
                  "validate --record ID):\n",
                  step ? "published runs" : "measured peaks", first.model.c_str(),
                  a.like_same_gpu ? " on " : " (none on this GPU; on others)", a.like_same_gpu ? first.gpu.c_str() : "",
                  std::min(kLikeShown, a.like.size()), a.like.size());
    o << line;
    for (size_t i = 0; i < a.like.size() && i < kLikeShown; ++i) {
      const sim::AccuracyRun& run = a.like[i];
      std::snprintf(line, sizeof line, "#     %-62s %6lld GPUs %-6s %-14s %+7.1f%%\n", run.id.c_str(),
                    static_cast<long long>(run.gpus), run.precision.c_str(), run.gpu.c_str(), 100 * run.error);
      o << line;
    }
  }
  o << "#\n";
  return o.str();
}

std::string OpsTable(const core::Scenario& s, const SpeedReport& sp) {
  std::ostringstream o;
  char line[320];
  const double pace = sim::SlowestGpuPace(s.plan, s.gpu);
  std::snprintf(line, sizeof line,
                "# Per-op costs (--ops): one microbatch on one rank (step ops: once per step); compute at the "
                "slowest GPU's pace x %.3f; docs/compute.md\n",
                pace);
  o << line;
  o << "# Whether a collective that may hide does is decided per pass over its list (the step time above).\n";
  for (const auto& list : sp.ops) {
    if (list.count > 1)
      std::snprintf(line, sizeof line, "# %s: %s (%lld in the model)\n", list.name, list.where.c_str(),
                    static_cast<long long>(list.count));
    else std::snprintf(line, sizeof line, "# %s: %s\n", list.name, list.where.c_str());
    o << line;
    std::snprintf(line, sizeof line, "# %-7s %-30s %-24s %-5s %10s %10s %10s  %s\n", "pass", "op", "shape", "dtype",
                  "GFLOP", "MB", "time(us)", "how");
    o << line;
    double compute[5] = {}, comm[5] = {};
    for (const auto& c : list.ops) {
      const core::Op& op = c.op;
      const bool is_comm = op.kind == core::OpKind::kCollective || op.kind == core::OpKind::kP2p;
      (is_comm || op.group != core::CommGroup::kNone ? comm : compute)[static_cast<int>(op.pass)] += c.time_s;
      const double flops = op.Flops();
      const std::string gflop = flops > 0 ? Fmt("%.2f", flops / 1e9) : "-";
      const std::string mb = op.bytes > 0 ? Fmt("%.2f", static_cast<double>(op.bytes) / 1e6) : "-";
      const char* dtype =
          op.kind == core::OpKind::kGemm || op.kind == core::OpKind::kAttention ? core::Name(op.dtype) : "";
      std::snprintf(line, sizeof line, "  %-7s %-30s %-24s %-5s %10s %10s %10.1f  %s\n", sim::PassShortName(op.pass),
                    op.name, sim::CostedOpShape(op).c_str(), dtype, gflop.c_str(), mb.c_str(), 1e6 * c.time_s,
                    sim::CostedOpHow(c).c_str());
      o << line;
    }
    std::string totals = "#   sums:";
    for (core::Pass ps : {core::Pass::kForward, core::Pass::kBackwardInput, core::Pass::kBackwardWeight,
                          core::Pass::kRecompute, core::Pass::kStep}) {
      const int i = static_cast<int>(ps);
      if (compute[i] == 0 && comm[i] == 0) continue;
      totals += std::string(" ") + sim::PassShortName(ps) + Fmt(" %.1f us compute", 1e6 * compute[i]);
      if (comm[i] > 0) totals += Fmt(" + %.1f us communication", 1e6 * comm[i]);
      totals += ";";
    }
    totals.back() = '\n';
    o << totals;
  }
  o << "#\n";
  return o.str();
}

OJson OpsJson(const core::Scenario& s, const SpeedReport& sp) {
  OJson lists = OJson::array();
  for (const auto& list : sp.ops) {
    OJson ops = OJson::array();
    for (const auto& c : list.ops) {
      const core::Op& op = c.op;
      OJson row = {
          {"name", op.name}, {"pass", core::Name(op.pass)}, {"kind", core::Name(op.kind)}, {"time_s", c.time_s}};
      switch (op.kind) {
        case core::OpKind::kGemm:
          row["m"] = op.m;
          row["n"] = op.n;
          row["k"] = op.k;
          row["batch"] = op.batch;
          row["dtype"] = core::Name(op.dtype);
          row["flops"] = op.Flops();
          break;
        case core::OpKind::kAttention:  // the field names of meshplan-run's op measurements
          row["attn_batch"] = op.attn_batch;
          row["heads"] = op.heads;
          row["seq_q"] = op.seq_q;
          row["seq_kv"] = op.seq_kv;
          row["head_dim_qk"] = op.head_dim_qk;
          row["head_dim_v"] = op.head_dim_v;
          row["causal"] = op.causal;
          row["window"] = op.window;  // 0: the whole causal sequence
          row["share"] = op.share;    // of the list's layers; flops and time are per layer, x share
          row["kernel"] = core::Name(op.attention);
          row["dtype"] = core::Name(op.dtype);
          row["flops"] = op.Flops();
          break;
        case core::OpKind::kCollective:
        case core::OpKind::kP2p:
          row["collective"] = core::Name(op.collective);
          row["group"] = core::Name(op.group);
          row["bytes"] = op.bytes;
          row["group_size"] = c.span.size;
          row["per_domain"] = c.span.per_domain;
          row["domains"] = c.span.domains;
          row["algorithm"] = c.algorithm;
          row["may_hide"] = c.hidden;
          row["overlap_slowdown"] = c.slowdown;
          if (c.fused()) {  // AsyncTP or userbuffers: beyond its own GEMM
            row["fused_exposed_s"] = c.exposed_s;
            row["tp_pairing"] = c.pairing;
          }
          break;
        default:
          row["bytes"] = op.bytes;
          row["kernels"] = op.batch;
          if (op.group != core::CommGroup::kNone) row["group"] = core::Name(op.group);
      }
      ops.push_back(std::move(row));
    }
    lists.push_back({{"list", list.name}, {"where", list.where}, {"count", list.count}, {"ops", std::move(ops)}});
  }
  return {{"slowest_gpu_pace", sim::SlowestGpuPace(s.plan, s.gpu)}, {"lists", std::move(lists)}};
}

}  // namespace

bool ParseFormat(const std::string& text, Format* out) {
  if (text == "table") *out = Format::kTable;
  else if (text == "json") *out = Format::kJson;
  else if (text == "csv") *out = Format::kCsv;
  else return false;
  return true;
}

std::string MemoryTable(const core::Scenario& s, const core::MemoryReport& r, const std::vector<std::string>& notes,
                        const std::vector<std::string>& warnings, const SpeedReport* speed) {
  std::ostringstream o;
  const auto& p = s.plan;
  o << "# meshplan report: " << s.model.name << " on " << p.gpus << " x " << s.gpu.name << " (" << s.cluster.name
    << ")\n";
  o << "# plan: " << PlanLine(p, r) << "\n";
  o << "# parameters: " << Count(r.params.total) << " total (" << r.params.total << "), " << Count(r.params.active)
    << " active per token\n";
  if (s.model.sliding_window > 0) {
    const int64_t windowed = s.model.WindowedLayerCount();
    o << "# attention: " << windowed << " of " << s.model.layers << " layers attend a " << s.model.sliding_window
      << (s.model.chunked_attention ? "-token chunk (their own, run as separate sequences)" : "-token window")
      << (s.model.global_attention_every > 0
              ? "; the last of every " + std::to_string(s.model.global_attention_every) + " the whole sequence"
              : std::string())
      << (s.model.sliding_window >= p.seq_len ? " (not shorter than the sequence: no effect)" : "") << "\n";
  }
  if (s.model.rope_mscale != 1.0 || s.model.glu_clamp > 0) {
    const bool fused = p.elementwise == core::Elementwise::kFused;
    o << "# elementwise:";
    if (s.model.rope_mscale != 1.0)
      o << " RoPE's cos and sin scaled by " << Fmt("%.4g", s.model.rope_mscale)
        << (fused ? " (no fused RoPE takes a scale: Megatron-Core's unfused one)" : " (eager)");
    if (s.model.rope_mscale != 1.0 && s.model.glu_clamp > 0) o << ";";
    if (s.model.glu_clamp > 0)
      o << " SwiGLU clamped at " << Fmt("%.4g", s.model.glu_clamp)
        << (!fused           ? " (eager; the clamp not costed)"
            : p.moe_op_fuser ? " (in the op fuser's activation)"
                             : " (Megatron-Core's eager clamps and cat before its fused activation)");
    o << "\n";
  }
  if (s.model.moe) o << "# moe: " << MoeLine(s.model, p) << "\n";
  o << "# " << StateLine(p, r) << "\n";
  for (const auto& n : notes) o << "# default: " << n << "\n";
  for (const auto& w : warnings) o << "# " << w << "\n";
  o << "#\n# Memory per GPU, per pipeline stage\n";
  char line[256];
  std::snprintf(line, sizeof line, "# %5s %12s %9s %9s %9s %9s %11s %9s %9s\n", "stage", "layers", "weights", "grads",
                "optimizer", "states", "activations", "other", "total");
  o << line;
  std::snprintf(line, sizeof line, "# %5s %12s %9s %9s %9s %9s %11s %9s %9s\n", "", "", "(GB)", "(GB)", "(GB)", "(GB)",
                "(GB)", "(GB)", "(GB)");
  o << line;
  for (const auto& st : r.stages) {
    std::snprintf(line, sizeof line, "  %5lld %12s %9s %9s %9s %9s %11s %9s %9s%s\n", static_cast<long long>(st.stage),
                  (LayerRange(st.layers) + (st.mtp_layers > 0 ? "+mtp" : "")).c_str(), Gb(st.weights_bytes).c_str(),
                  Gb(st.grads_bytes).c_str(), Gb(st.optimizer_bytes).c_str(),
                  Gb(st.weights_bytes + st.grads_bytes + st.optimizer_bytes).c_str(), Gb(st.activations_bytes).c_str(),
                  Gb(st.other_bytes).c_str(), Gb(st.total_bytes).c_str(),
                  st.total_bytes > r.capacity_bytes ? "  over" : "");
    o << line;
  }
  const auto& w = r.stages[r.worst_stage];
  o << "#\n# worst stage " << w.stage << ":\n";
  auto row = [&](const char* name, int64_t bytes, const std::string& how) {
    std::snprintf(line, sizeof line, "#   %-26s %10s GB  %s\n", name, Gb(bytes).c_str(), how.c_str());
    o << line;
  };
  o << "#   parameters on this GPU: " << Count(w.params);
  if (p.zero > 0) o << ", states sharded over " << r.dense_shard_group;
  if (w.expert_params > 0)
    o << " (" << Count(w.expert_params) << " of them expert, sharded over " << r.expert_shard_group << ")";
  o << "\n";
  row("weights", w.weights_bytes,
      core::Fsdp2KeepsNoLowPrecisionShard(p) ? "none kept: FSDP2's shards are the master weights, cast while gathered"
                                             : (p.zero >= 3 ? "sharded (zero 3)" : "replicated"));
  row("gradients", w.grads_bytes, p.zero >= 2 ? "sharded (zero >= 2)" : "replicated");
  row("master weights", w.master_weights_bytes, p.zero >= 1 ? "sharded (zero >= 1)" : "replicated");
  row("optimizer moments", w.optimizer_moments_bytes, p.zero >= 1 ? "sharded (zero >= 1)" : "replicated");
  row("activations / microbatch", w.layer_activations_bytes,
      std::to_string(w.layers.size()) + " layers" +
          (w.mtp_layers > 0 ? " + " + std::to_string(w.mtp_layers) + " MTP" : "") + ", recompute " +
          core::Name(p.recompute));
  if (w.offloaded_activations_bytes && p.offload_modules != 0)
    row("activations offloaded", w.offloaded_activations_bytes,
        "per microbatch: what " + core::OffloadModulesString(p.offload_modules) +
            " save, in host memory but for one layer's (--offload-modules)");
  else if (w.offloaded_activations_bytes)
    row("activations offloaded", w.offloaded_activations_bytes,
        "per microbatch: the first " + std::to_string(p.offload_activation_layers) +
            " layers' saved tensors, in host memory (--offload-activations)");
  if (w.offloaded_checkpoints_bytes)
    row("checkpoints offloaded", w.offloaded_checkpoints_bytes,
        "per microbatch: full recomputation's layer inputs, in host memory (--offload-checkpoints)");
  row("activations held", w.activations_bytes,
      Fmt("%.3g", w.inflight_microbatches) + " microbatches in flight (" + core::Name(p.schedule) + ")" +
          (w.loss_activations_bytes ? " + logits/loss" : "") +
          (w.recompute_working_bytes ? " + recompute working set" : "") +
          (w.deferred_wgrad_bytes ? " + deferred head wgrad buffers" : "") +
          (w.pipeline_buffers_bytes ? " + pipeline runtime's per-microbatch outputs and gradient buffers" : ""));
  row("CUDA context", w.cuda_context_bytes,
      p.cuda_context_bytes > 0 ? "the plan's (--cuda-context-mib, or its stack's measurement; docs/memory.md)"
                               : "measured on one H200, CUDA 13 (docs/memory.md)");
  row("cuBLAS workspace", w.cublas_workspace_bytes,
      Fmt("%.0f MiB", static_cast<double>(w.cublas_workspace_bytes) / (1 << 20)));
  if (w.te_workspace_bytes)
    row("TE cuBLAS workspaces", w.te_workspace_bytes,
        "Transformer Engine's own, 4 more for MoE grouped GEMM (docs/memory.md)");
  row("NCCL buffers", w.nccl_bytes, "communicators x channels x 2 x NCCL_BUFFSIZE");
  if (w.zero3_prefetch_bytes)
    row("ZeRO-3 gather buffers", w.zero3_prefetch_bytes,
        p.zero3_gather == core::Zero3Gather::kPerTensor ? "<= 1e9 elements live + one MLP matrix (per-tensor)"
                                                        : "2 layers gathered");
  if (w.zero3_grad_bytes)
    row("ZeRO-3 gradient buffers", w.zero3_grad_bytes,
        "2 reduce buckets + held whole gradients, a flat copy and activation gradients at the MLP's backward "
        "(DeepSpeed 0.3)");
  if (w.rs_pool_bytes)
    row("FSDP2 reduce-scatter pool", w.rs_pool_bytes,
        std::string(p.zero >= 2 ? "the gradients above" : "the sharded gradients, beside the accumulators") +
            ", on the reduce-scatter stream's pool; " + Gb(w.rs_pool_idle_bytes) +
            " GB of it reserved, not allocated, at the activations' peak");
  if (w.ag_pool_idle_bytes)
    row("FSDP2 all-gather pool", w.ag_pool_idle_bytes,
        "the root module's flat all-gather buffer beyond a block's, idle on the copy-in stream's pool");
  if (w.step_copy_bytes)
    row("step's all-reduce copy", w.step_copy_on_top_bytes,
        Gb(w.step_copy_bytes) + " GB: BF16_Optimizer's fp32 gradients cast to " + core::Name(p.dtypes.weights) +
            " for the all-reduce, beside the activations' cached blocks" +
            (w.step_copy_on_top_bytes < w.step_copy_bytes ? " (over the GPU: after the cache is freed)" : "") + "; " +
            Gb(w.step_copy_idle_bytes) + " GB of it not allocated at the peak");
  row("allocator fragmentation", w.fragmentation_bytes,
      (w.activations_bytes > 0 ? Fmt("%.0f%%", 100.0 * static_cast<double>(w.fragmentation_bytes) /
                                                   static_cast<double>(w.activations_bytes))
                               : std::string("0%")) +
          " of activations (assumed)");
  if (w.host_bytes) row("offloaded to CPU", w.host_bytes, "not on the GPU");
  if (w.nvme_bytes) row("offloaded to NVMe", w.nvme_bytes, "not on the GPU");
  row("= peak allocated", core::PeakAllocatedBytes(w),
      core::IdleReservedBytes(w) > 0
          ? "torch.cuda.max_memory_allocated: all but context, NCCL, fragmentation, idle pools"
          : "torch.cuda.max_memory_allocated: all but context, NCCL, fragmentation");
  row("= peak reserved", core::PeakReservedBytes(w),
      core::IdleReservedBytes(w) > 0 ? "torch.cuda.max_memory_reserved: allocated + fragmentation + idle pools"
                                     : "torch.cuda.max_memory_reserved: allocated + fragmentation");
  row("= on the GPU", w.total_bytes, "nvidia-smi: reserved + CUDA context + NCCL; the fit verdict's number");
  row("the GPU's memory", r.capacity_bytes,
      s.gpu.cuda_total_bytes > 0
          ? "what CUDA reports of its " +
                (s.gpu.hbm_bytes % core::kGiB == 0 ? std::to_string(s.gpu.hbm_bytes / core::kGiB) + " GiB (" +
                                                         core::FormatBytes(s.gpu.hbm_bytes) + ")"
                                                   : core::FormatBytes(s.gpu.hbm_bytes)) +
                " physical; the driver keeps the rest (the preset's measurement, docs/memory.md §4)"
          : "the physical memory: no measured CUDA total for this GPU (drivers keep about 1%; docs/memory.md §4)");
  o << "#\n";
  if (speed) o << SpeedTable(s, *speed);
  if (speed) o << AccuracyText(*speed, r);
  if (speed && !speed->ops.empty()) o << OpsTable(s, *speed);
  const double cap = static_cast<double>(r.capacity_bytes);
  const double used = static_cast<double>(r.per_gpu_bytes);
  if (r.fits) {
    o << "fits: " << core::FormatBytes(r.per_gpu_bytes) << " of " << core::FormatBytes(r.capacity_bytes) << " ("
      << Fmt("%.0f", 100 * used / cap) << "%), " << core::FormatBytes(r.capacity_bytes - r.per_gpu_bytes)
      << " headroom on stage " << w.stage << "\n";
  } else if (r.verdict == core::FitVerdict::kTight) {
    o << "TIGHT: stage " << w.stage << " needs " << core::FormatBytes(r.per_gpu_bytes) << " with the allocator's "
      << "reserve, the GPU has " << core::FormatBytes(r.capacity_bytes) << "; without the reserve (peak allocated, "
      << "CUDA context, NCCL) the most any stage needs is " << core::FormatBytes(r.least_per_gpu_bytes)
      << ": it runs only if PyTorch's caching allocator frees its cached blocks and retries (a cudaFree that waits "
      << "for the GPU each time), and only if the blocks it cannot free stay under "
      << core::FormatBytes(r.capacity_bytes - r.least_per_gpu_bytes) << " (docs/memory.md §4)\n";
    if (speed && speed->fit_advice) o << FitAdviceTable(*speed->fit_advice);
  } else {
    o << "DOES NOT FIT: stage " << w.stage << " needs " << core::FormatBytes(r.per_gpu_bytes) << ", the GPU has "
      << core::FormatBytes(r.capacity_bytes) << ": over by " << core::FormatBytes(r.per_gpu_bytes - r.capacity_bytes)
      << " (" << Fmt("%.2f", used / cap) << "x)\n";
    if (speed && speed->fit_advice) o << FitAdviceTable(*speed->fit_advice);
  }
  return o.str();
}

std::string FitAdviceTable(const sim::FitAdvice& a) {
  if (a.fits) return "";
  std::ostringstream o;
  auto pad = [](std::string t, size_t n) { return t.size() < n ? t + std::string(n - t.size(), ' ') : t; };
  auto row = [&](const sim::FitOption& f) {
    o << "  " << pad(f.flags, 26) << " " << pad(f.what, 32) << " " << pad(core::FormatBytes(f.per_gpu_bytes), 10) << " "
      << (f.headroom_bytes >= 0 ? core::FormatBytes(f.headroom_bytes) + " headroom"
                                : "over by " + core::FormatBytes(-f.headroom_bytes))
      << ", step " << Fmt("%+.1f%%", 100 * (f.step_ratio - 1)) << "\n";
  };
  if (!a.alone.empty()) {
    o << "to fit, change one of (cheapest in step time first):\n";
    for (const auto& f : a.alone) row(f);
  } else if (a.together) {
    o << (a.together_fits ? "to fit, no single setting is enough; together:\n"
                          : "no standard setting makes it fit, not even all of them together:\n");
    row(*a.together);
    if (!a.together_fits) o << "  " << a.further << " or let `meshplan search` find a plan\n";
  } else {
    o << "no standard setting applies: " << a.further << " or let `meshplan search` find a plan\n";
  }
  return o.str();
}

std::string DoesNotFitLine(const core::MemoryReport& r, const sim::FitAdvice& a) {
  if (r.verdict == core::FitVerdict::kTight)
    return "warning: tight: stage " + std::to_string(r.worst_stage) + " needs " + core::FormatBytes(r.per_gpu_bytes) +
           " with the allocator's reserve, " + core::FormatBytes(r.least_per_gpu_bytes) + " without it, the GPU has " +
           core::FormatBytes(r.capacity_bytes) + ": it runs only if the allocator frees its cached blocks; " +
           sim::FitAdviceLine(a);
  return "error: does not fit: stage " + std::to_string(r.worst_stage) + " needs " +
         core::FormatBytes(r.per_gpu_bytes) + ", the GPU has " + core::FormatBytes(r.capacity_bytes) + "; " +
         sim::FitAdviceLine(a);
}

std::string MemoryJson(const core::Scenario& s, const core::MemoryReport& r, const std::vector<std::string>& notes,
                       const std::vector<std::string>& warnings, const SpeedReport* speed) {
  OJson j;
  j["model"] = s.model.name;
  j["gpu"] = s.gpu.name;
  j["cluster"] = s.cluster.name;
  const auto& p = s.plan;
  OJson plan = OJson::parse(core::PlanToJson(p));
  plan["microbatches"] = p.Microbatches();
  j["plan"] = plan;
  j["params_total"] = r.params.total;
  j["params_active"] = r.params.active;
  OJson mem;
  mem["bytes_per_param"] = r.bytes_per_param;
  mem["dense_shard_group"] = r.dense_shard_group;
  mem["expert_shard_group"] = r.expert_shard_group;
  mem["per_gpu_bytes"] = r.per_gpu_bytes;
  mem["capacity_bytes"] = r.capacity_bytes;
  mem["fits"] = r.fits;
  mem["verdict"] = core::FitVerdictName(r.verdict);
  mem["least_per_gpu_bytes"] = r.least_per_gpu_bytes;
  mem["headroom_bytes"] = r.capacity_bytes - r.per_gpu_bytes;
  mem["worst_stage"] = r.worst_stage;
  if (speed && speed->fit_advice && !speed->fit_advice->fits) {
    const sim::FitAdvice& a = *speed->fit_advice;
    auto option = [](const sim::FitOption& f) {
      return OJson{{"flags", f.flags},
                   {"what", f.what},
                   {"per_gpu_bytes", f.per_gpu_bytes},
                   {"headroom_bytes", f.headroom_bytes},
                   {"step_time_s", f.step_time_s},
                   {"step_ratio", f.step_ratio}};
    };
    OJson alone = OJson::array();
    for (const auto& f : a.alone) alone.push_back(option(f));
    mem["fit_advice"] = {{"alone", alone},
                         {"together", a.together ? option(*a.together) : OJson()},
                         {"together_fits", a.together_fits},
                         {"line", sim::FitAdviceLine(a)}};
  }
  const auto& w = r.stages[r.worst_stage];
  mem["model_state_bytes"] = w.weights_bytes + w.grads_bytes + w.optimizer_bytes;
  OJson stages = OJson::array();
  for (const auto& st : r.stages) {
    OJson e;
    e["stage"] = st.stage;
    e["layers"] = st.layers.size();
    e["mtp_layers"] = st.mtp_layers;
    e["first_layer"] = st.layers.empty() ? -1 : st.layers.front();
    e["params"] = st.params;
    e["weights_bytes"] = st.weights_bytes;
    e["grads_bytes"] = st.grads_bytes;
    e["optimizer_bytes"] = st.optimizer_bytes;
    e["master_weights_bytes"] = st.master_weights_bytes;
    e["optimizer_moments_bytes"] = st.optimizer_moments_bytes;
    e["activations_bytes"] = st.activations_bytes;
    e["activations_per_microbatch_bytes"] = st.layer_activations_bytes;
    e["inflight_microbatches"] = st.inflight_microbatches;
    e["loss_activations_bytes"] = st.loss_activations_bytes;
    e["recompute_working_bytes"] = st.recompute_working_bytes;
    e["deferred_wgrad_bytes"] = st.deferred_wgrad_bytes;
    if (st.pipeline_buffers_bytes) e["pipeline_buffers_bytes"] = st.pipeline_buffers_bytes;
    e["other_bytes"] = st.other_bytes;
    OJson other;
    other["cuda_context_bytes"] = st.cuda_context_bytes;
    other["cublas_workspace_bytes"] = st.cublas_workspace_bytes;
    other["te_workspace_bytes"] = st.te_workspace_bytes;
    other["nccl_bytes"] = st.nccl_bytes;
    other["zero3_prefetch_bytes"] = st.zero3_prefetch_bytes;
    if (st.zero3_grad_bytes) other["zero3_grad_bytes"] = st.zero3_grad_bytes;
    other["fragmentation_bytes"] = st.fragmentation_bytes;
    if (st.ag_pool_idle_bytes) other["ag_pool_idle_bytes"] = st.ag_pool_idle_bytes;
    if (st.step_copy_bytes) {
      e["step_copy_bytes"] = st.step_copy_bytes;
      e["step_copy_idle_bytes"] = st.step_copy_idle_bytes;
      other["step_copy_bytes"] = st.step_copy_on_top_bytes;
    }
    if (st.rs_pool_bytes) {
      e["rs_pool_bytes"] = st.rs_pool_bytes;
      e["rs_pool_idle_bytes"] = st.rs_pool_idle_bytes;
      if (core::RsPoolOnTopBytes(st, s.plan) > 0) other["rs_pool_bytes"] = st.rs_pool_bytes;
    }
    e["other"] = other;
    e["total_bytes"] = st.total_bytes;
    e["peak_allocated_bytes"] = core::PeakAllocatedBytes(st);
    e["peak_reserved_bytes"] = core::PeakReservedBytes(st);
    e["host_bytes"] = st.host_bytes;
    e["nvme_bytes"] = st.nvme_bytes;
    stages.push_back(e);
  }
  mem["stages"] = stages;
  j["memory"] = mem;
  if (speed) {
    const auto& e = speed->step;
    OJson st;
    st["time_s"] = e.time_s;
    st["tokens_per_s"] = e.tokens_per_s;
    st["tokens_per_s_per_gpu"] = e.tokens_per_s_per_gpu;
    st["tflops_per_gpu"] = e.tflops_per_gpu;
    st["mfu"] = e.mfu;
    st["hfu"] = e.hfu;
    st["mfu_causal"] = e.mfu_causal;
    st["model_flops"] = e.model_flops;
    st["model_flops_causal"] = e.model_flops_causal;
    st["hardware_flops"] = e.hardware_flops;
    st["bubble_fraction"] = e.bubble_fraction;
    st["critical_stage"] = e.critical_stage;
    st["slowest_gpu_pace"] = sim::SlowestGpuPace(s.plan, s.gpu);
    st["overlap_slowdown_s"] = e.overlap_slowdown_s;
    st["profile"] = speed->profile;
    const auto& bd = e.breakdown;
    OJson breakdown = OJson::object();
    for (const sim::BreakdownTerm& t : sim::BreakdownTerms(bd)) breakdown[std::string(t.key) + "_s"] = t.seconds;
    st["breakdown"] = breakdown;
    OJson stage_times = OJson::array();
    for (const auto& t : e.stages)
      stage_times.push_back({{"forward_s", t.forward_s},
                             {"backward_input_s", t.backward_input_s},
                             {"backward_weight_s", t.backward_weight_s},
                             {"step_s", t.step_s}});
    st["stages"] = stage_times;
    j["step"] = st;
    if (!speed->ops.empty()) j["ops"] = OpsJson(s, *speed);
    const auto& t = speed->train;
    j["train"] = {{"tokens", t.tokens},       {"steps", t.steps},       {"days", t.days},
                  {"gpu_hours", t.gpu_hours}, {"cost_usd", t.cost_usd}, {"energy_kwh", t.energy_kwh}};
    if (speed->reliability) {
      const auto& rel = *speed->reliability;
      j["reliability"] = {{"failures", speed->failure_model},
                          {"mtbf_h", rel.rates.mtbf_h},
                          {"interruptions", rel.expected_interruptions},
                          {"ckpt_interval_s", rel.interval_s},
                          {"goodput", rel.expected.goodput},
                          {"trials", rel.mc.trials}};
      if (!rel.mc.skipped.empty()) j["reliability"]["monte_carlo_skipped"] = rel.mc.skipped;
      j["train"]["days_p50"] = rel.mc.days.p50;
      j["train"]["days_p90"] = rel.mc.days.p90;
      j["train"]["cost_usd_p50"] = rel.mc.cost_usd.p50;
    }
  }
  if (speed && (speed->step_accuracy || speed->memory_accuracy)) {
    auto group = [](const sim::AccuracyGroup& g) {
      return OJson{{"dimension", g.dimension},
                   {"value", g.value},
                   {"n", g.n},
                   {"median_abs_error", g.median_abs_error},
                   {"p90_abs_error", g.p90_abs_error},
                   {"median_error", g.median_error}};
    };
    const RangeEnds ends = RangeEndsOf(*speed, r);
    auto range = [](const sim::AccuracyRange& a) {
      return OJson{{"basis", a.basis},
                   {"n", a.n},
                   {"p10_error", a.p10_error},
                   {"p90_error", a.p90_error},
                   {"low_factor", a.LowFactor()},
                   {"high_factor", a.HighFactor()}};
    };
    auto pair = [](const std::array<double, 2>& v) { return OJson::array({v[0], v[1]}); };
    auto table = [&](const SpeedReport::Accuracy& a) {
      OJson groups = OJson::array();
      for (const auto& g : a.groups) groups.push_back(group(g));
      OJson like = OJson::array();
      for (const auto& run : a.like) like.push_back(sim::AccuracyRunJson(run));
      OJson comparisons = OJson::array();
      for (const auto& g : a.table.comparisons) comparisons.push_back(group(g));
      OJson t{{"metric", a.table.metric},  {"made_by", a.table.made_by},
              {"all", group(a.table.all)}, {"joint", group(a.joint)},
              {"groups", groups},          {"comparisons", comparisons},
              {"runs_like", like},         {"runs_like_same_gpu", a.like_same_gpu}};
      if (a.table.repeats.scenarios > 0) t["repeats"] = sim::AccuracyRepeatsJson(a.table.repeats);
      if (a.table.step_split.series > 0) t["step_split"] = sim::AccuracyStepSplitJson(a.table.step_split);
      return t;
    };
    OJson acc;
    acc["profile"] = "default";
    if (speed->step_accuracy) {
      acc["step"] = table(*speed->step_accuracy);
      if (speed->step_accuracy->range.n > 0) {  // (none only from an empty table)
        OJson rg = range(speed->step_accuracy->range);
        rg["tokens_per_s_per_gpu"] = pair(ends.tokens_per_s_per_gpu);
        rg["step_s"] = pair(ends.step_s);
        rg["days"] = pair(ends.days);
        rg["cost_usd"] = pair(ends.cost_usd);
        acc["step"]["range"] = rg;
      }
    }
    if (speed->memory_accuracy) {
      acc["memory"] = table(*speed->memory_accuracy);
      if (speed->memory_accuracy->range.n > 0) {
        OJson rg = range(speed->memory_accuracy->range);
        rg["on_gpu_bytes"] = pair(ends.on_gpu_bytes);
        acc["memory"]["range"] = rg;
      }
    }
    j["accuracy"] = acc;
  }
  j["defaults"] = notes;
  j["warnings"] = warnings;
  return j.dump(2) + "\n";
}

std::string MemoryCsv(const core::MemoryReport& r) {
  std::ostringstream o;
  o << "stage,layers,params,weights_bytes,grads_bytes,optimizer_bytes,activations_bytes,other_bytes,total_bytes,"
       "capacity_bytes,fits\n";
  for (const auto& st : r.stages) {
    o << st.stage << "," << st.layers.size() << "," << st.params << "," << st.weights_bytes << "," << st.grads_bytes
      << "," << st.optimizer_bytes << "," << st.activations_bytes << "," << st.other_bytes << "," << st.total_bytes
      << "," << r.capacity_bytes << "," << (st.total_bytes <= r.capacity_bytes ? 1 : 0) << "\n";
  }
  return o.str();
}

}  // namespace meshplan::cli
