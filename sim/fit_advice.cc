#include "sim/fit_advice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "core/diagnostics.h"
#include "core/memory.h"
#include "core/units.h"
#include "core/validate.h"
#include "sim/step_model.h"

namespace meshplan::sim {

namespace {

using core::PlanSpec;
using core::Recompute;

// A plan change: its flags and words, and the edit.
struct Setting {
  std::string what;
  std::string flags;
  PlanSpec plan;
};

bool Valid(const PlanSpec& p, const core::Scenario& s) {
  core::Diagnostics d;
  core::ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  return !d.has_errors();
}

FitOption Evaluate(const Setting& k, const core::Scenario& s, const core::Profile& profile, double base_step) {
  FitOption o;
  o.flags = k.flags;
  o.what = k.what;
  o.plan = k.plan;
  const core::MemoryReport r =
      core::EstimateMemory(s.model, k.plan, s.gpu, profile.memory, core::MemoryDetail::kTotalsOnly);
  o.per_gpu_bytes = r.per_gpu_bytes;
  o.headroom_bytes = r.capacity_bytes - r.per_gpu_bytes;
  o.step_time_s = EstimateStep(s.model, k.plan, s.gpu, s.cluster, profile, nullptr, StepDetail::kTotalsOnly).time_s;
  o.step_ratio = base_step > 0 ? o.step_time_s / base_step : 1;
  return o;
}

// The standard settings, each applied to `p` alone, in the order they are turned on together
// when none fits alone (roughly the cheapest in step time first: SP and ZeRO-1 cost almost
// nothing, selective recompute a few percent, ZeRO-2's gradient reduce-scatter little, full
// recompute a third forward, ZeRO-3 a weight all-gather per microbatch). A setting that changes
// nothing or gives an invalid plan is left out.
std::vector<Setting> Settings(const PlanSpec& p, const core::Scenario& s) {
  std::vector<Setting> out;
  auto add = [&](const char* what, std::string flags, PlanSpec q) {
    if (q == p || !Valid(q, s)) return;
    out.push_back({what, std::move(flags), std::move(q)});
  };
  auto zero = [&](int stage, const char* what) {
    if (p.zero >= stage || p.dp * p.cp < 2) return;
    PlanSpec q = p;
    q.zero = stage;
    add(what, "--zero " + std::to_string(stage), q);
  };
  auto recompute = [&](Recompute r, const char* what, const char* flags) {
    if (p.recompute == Recompute::kFull && p.recompute_layers == 0) return;
    if (r == Recompute::kSelective && p.recompute != Recompute::kNone) return;
    PlanSpec q = p;
    q.recompute = r;
    q.recompute_layers = 0;
    add(what, flags, q);
  };
  if (p.tp > 1 && !p.sequence_parallel) {
    PlanSpec q = p;
    q.sequence_parallel = true;
    add("sequence parallelism", "--sp", q);
  }
  zero(1, "distributed optimizer (ZeRO-1)");
  recompute(Recompute::kSelective, "selective recompute", "--recompute selective");
  zero(2, "sharded gradients (ZeRO-2)");
  recompute(Recompute::kFull, "full recompute", "--recompute full");
  zero(3, "sharded weights (ZeRO-3, FSDP)");
  // Host memory last: each costs host-link copies and, for the optimizer, the host's Adam every
  // step (docs/compute.md), and needs the cluster's and GPU's host figures (Valid refuses it
  // otherwise): the checkpoints of full recompute, the optimizer, ZeRO-3's weight shards.
  if (p.recompute == Recompute::kFull && !p.offload_checkpoints) {
    PlanSpec q = p;
    q.offload_checkpoints = true;
    add("checkpoints in host memory", "--offload-checkpoints", q);
  }
  if (p.offload_optimizer == core::OffloadTarget::kNone) {
    PlanSpec q = p;
    q.offload_optimizer = core::OffloadTarget::kCpu;
    add("optimizer in host memory (ZeRO-Offload)", "--offload-optimizer cpu", q);
  }
  if (p.zero == 3 && p.offload_params == core::OffloadTarget::kNone) {
    PlanSpec q = p;
    q.offload_params = core::OffloadTarget::kCpu;
    add("weight shards in host memory", "--offload-params cpu", q);
  }
  return out;
}

// Micro batch sizes below p.micro_batch that divide it, largest first.
std::vector<int64_t> SmallerMicroBatches(const PlanSpec& p) {
  std::vector<int64_t> out;
  for (int64_t b = p.micro_batch - 1; b >= 1; --b)
    if (p.micro_batch % b == 0) out.push_back(b);
  return out;
}

}  // namespace

FitAdvice AdviseFit(const core::Scenario& s, const core::Profile& profile) {
  FitAdvice a;
  const PlanSpec& p = s.plan;
  const core::MemoryReport r0 =
      core::EstimateMemory(s.model, p, s.gpu, profile.memory, core::MemoryDetail::kTotalsOnly);
  if (r0.fits) {
    a.fits = true;
    return a;
  }
  const double base_step = EstimateStep(s.model, p, s.gpu, s.cluster, profile, nullptr, StepDetail::kTotalsOnly).time_s;
  // ZeRO-3 is only a way out where it is not on yet and a data-parallel group can shard.
  a.further = p.zero < 3 && p.dp * p.cp > 1 ? "shard further (more tp or pp, --zero 3)"
                                            : "shard over more GPUs (more tp, pp or dp)";

  // Each setting alone.
  for (const Setting& k : Settings(p, s)) {
    FitOption o = Evaluate(k, s, profile, base_step);
    if (o.headroom_bytes >= 0) a.alone.push_back(std::move(o));
  }
  for (int64_t b : SmallerMicroBatches(p)) {
    PlanSpec q = p;
    q.micro_batch = b;
    if (!Valid(q, s)) continue;
    FitOption o = Evaluate({"smaller micro batch", "--mbs " + std::to_string(b), q}, s, profile, base_step);
    if (o.headroom_bytes >= 0) {
      a.alone.push_back(std::move(o));
      break;  // the largest that fits: smaller ones only cost more
    }
  }
  // Cheapest first, to the step change the advice prints (0.1% of the plan's step): settings that
  // print the same step keep Settings' order, the simpler first (ZeRO-1's whole-buffer gradient
  // zeroing is a few milliseconds more than ZeRO-2's shard, which no printed figure shows).
  const auto printed = [](const FitOption& o) { return std::llround(o.step_ratio * 1000.0); };
  std::stable_sort(a.alone.begin(), a.alone.end(),
                   [&](const FitOption& x, const FitOption& y) { return printed(x) < printed(y); });
  if (!a.alone.empty()) return a;

  // None alone: turn them on one after the other in Settings' order (a later ZeRO stage or
  // recompute mode replaces the earlier), then the largest smaller micro batch that fits.
  std::vector<std::pair<std::string, std::string>> on;  // (flags, what), in order
  auto option = [&](const PlanSpec& q) {
    std::string flags, what;
    for (const auto& [f, w] : on) {
      flags += (flags.empty() ? "" : " ") + f;
      what += (what.empty() ? "" : ", ") + w;
    }
    return Evaluate({what, flags, q}, s, profile, base_step);
  };
  auto turn_on = [&](const Setting& k) {
    // A later ZeRO stage or recompute mode replaces the earlier one (an offload flag is its own).
    for (const char* kind : {"--recompute", "--zero"})
      if (k.flags.rfind(kind, 0) == 0) std::erase_if(on, [kind](const auto& e) { return e.first.rfind(kind, 0) == 0; });
    on.emplace_back(k.flags, k.what);
  };
  PlanSpec q = p;
  std::optional<FitOption> last;
  for (auto ks = Settings(q, s); !ks.empty(); ks = Settings(q, s)) {
    q = ks.front().plan;
    turn_on(ks.front());
    last = option(q);
    if (last->headroom_bytes >= 0) break;
  }
  if (!last || last->headroom_bytes < 0) {
    for (int64_t b : SmallerMicroBatches(q)) {
      PlanSpec m = q;
      m.micro_batch = b;
      if (!Valid(m, s)) continue;
      std::erase_if(on, [](const auto& e) { return e.first.rfind("--mbs", 0) == 0; });
      on.emplace_back("--mbs " + std::to_string(b), "smaller micro batch");
      last = option(m);
      if (last->headroom_bytes >= 0) break;
    }
  }
  if (last) {
    a.together_fits = last->headroom_bytes >= 0;
    a.together = *last;
  }
  return a;
}

std::string FitAdviceLine(const FitAdvice& a) {
  if (a.fits) return "";
  auto gb = [](int64_t b) { return core::FormatBytes(b); };
  auto pct = [](double ratio) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (ratio - 1));
    return std::string(buf);
  };
  if (!a.alone.empty()) {
    const FitOption& o = a.alone.front();
    std::string line = o.flags + " (" + o.what + ") makes it fit with " + gb(o.headroom_bytes) + " headroom, step " +
                       pct(o.step_ratio);
    if (a.alone.size() > 1) line += "; or " + a.alone[1].flags + " (step " + pct(a.alone[1].step_ratio) + ")";
    return line;
  }
  if (a.together_fits) {
    const FitOption& o = *a.together;
    return "no single standard setting fits; together " + o.flags + " (" + o.what + ") fit with " +
           gb(o.headroom_bytes) + " headroom, step " + pct(o.step_ratio);
  }
  if (a.together) {
    const bool several = a.together->flags.find(" --") != std::string::npos;  // more than one flag
    return "no standard setting fits, not even " + a.together->flags + (several ? " together (" : " (") +
           gb(a.together->per_gpu_bytes) + " per GPU): " + a.further + " or try meshplan search";
  }
  return "no standard setting applies: " + a.further + " or try meshplan search";
}

}  // namespace meshplan::sim
