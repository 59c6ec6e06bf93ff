// What makes a plan that does not fit fit: the standard memory settings a Megatron-LM or
// torchtitan user turns on first, each tried alone on the same scenario, ranked by the step time
// they cost. Used by `meshplan report`, `reliability` and `explain` when the verdict is DOES NOT FIT.
// Thread-safety: pure function of its inputs.
#ifndef MESHPLAN_SIM_FIT_ADVICE_H_
#define MESHPLAN_SIM_FIT_ADVICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/presets.h"
#include "core/profile.h"
#include "core/specs.h"

namespace meshplan::sim {

// One change of the plan and what it gives.
struct FitOption {
  std::string flags;           // the command-line change, "--sp" or "--sp --zero 1"
  std::string what;            // in words, "sequence parallelism"
  core::PlanSpec plan;         // the changed plan (valid)
  int64_t per_gpu_bytes = 0;   // worst stage, as core::EstimateMemory
  int64_t headroom_bytes = 0;  // capacity - per_gpu_bytes (negative: still does not fit)
  double step_time_s = 0;      // sim::EstimateStep
  double step_ratio = 1;       // step_time_s / the original plan's step time
};

struct FitAdvice {
  bool fits = false;  // the original plan fits (nothing else is filled in)
  // Each standard setting alone that makes the plan fit, the cheapest in step time first.
  std::vector<FitOption> alone;
  // When none fits alone: the settings turned on together in the order below (a later ZeRO
  // stage or recompute mode replacing the earlier), stopping at the first that fits. `together_fits` false: even all of
  // them do not fit (the option then holds all of them, with its negative headroom); empty when no setting applies.
  std::optional<FitOption> together;
  bool together_fits = false;
  // What is left when nothing fits: "shard further (more tp or pp, --zero 3)", or "shard over
  // more GPUs (more tp, pp or dp)" when ZeRO-3 is on already or has no data-parallel group.
  std::string further;
};

// The candidates, each only where it changes something and gives a valid plan, in the order they
// are turned on together:
//  - sequence parallelism (--sp) with tp > 1: divides the replicated activations (norms, dropout,
//    residuals) by tp (Korthikanti et al. 2022 §4.2.2, Table 2);
//  - the distributed optimizer, ZeRO-1 (--zero 1) with a data-parallel group > 1: shards master
//    weights and moments, 12 of the 16 bytes per parameter (Rajbhandari et al. 2020 §5.1);
//  - selective recompute (--recompute selective): drops the attention scores and softmax
//    (Korthikanti et al. 2022 §5);
//  - ZeRO-2 (--zero 2): also shards the gradients (Rajbhandari et al. 2020 §5.2);
//  - full recompute (--recompute full): one checkpoint per layer;
//  - ZeRO-3 / FSDP (--zero 3): also shards the weights (Rajbhandari et al. 2020 §5.3);
//  - a smaller micro batch (--mbs): the largest divisor of the current one that fits.
// REQUIRES: s.plan is valid for s.model, s.gpu and s.cluster.
FitAdvice AdviseFit(const core::Scenario& s, const core::Profile& profile);

// One line for stderr and the report's verdict: "--sp fits with 12.3 GB headroom (step +0.4%)",
// or "no standard setting fits: ..." when nothing does. Empty when the plan fits.
std::string FitAdviceLine(const FitAdvice& a);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_FIT_ADVICE_H_
