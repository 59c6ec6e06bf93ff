// libFuzzer harness: a software-stack file (`--stack FILE`, report's and search's) through what a
// user's stack goes through: ParseStackJson, then ApplyStackWhole on a model and plan (ApplyStack,
// its pipeline sharding, its recomputation early stop and its FP8 parameter gather, as
// cli/plan_flags.cc applies them),
// ValidatePlan, and for a valid plan the memory model and the step model, whose step time must be
// finite and positive. A stack that parses must leave a plan that either validates or is refused
// with named errors; nothing may crash or hang.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/diagnostics.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/stack.h"
#include "core/validate.h"
#include "sim/step_model.h"

namespace mc = meshplan::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto stack = mc::ParseStackJson(text);
  if (!stack.ok()) {
    if (stack.status().message().empty()) __builtin_trap();  // a refusal names the field and the rule
    return 0;
  }
  // A dense and an MoE scenario, each on a plan that uses TP, PP, DP and (for MoE) EP, so the
  // stack's settings for each of them reach the step model.
  static const mc::GpuSpec gpu = *mc::LoadGpu("h100-sxm");
  static const mc::ClusterSpec cluster = *mc::LoadCluster("dgx-h100");
  static const mc::Profile profile;
  for (const char* name : {"llama3-8b", "mixtral-8x7b"}) {
    mc::ModelSpec model = *mc::LoadModel(name);
    mc::PlanSpec plan;
    plan.gpus = 64;
    plan.tp = 2;
    plan.pp = 2;
    plan.ep = model.moe ? 8 : 1;
    plan.dp = plan.gpus / (plan.tp * plan.pp);
    plan.micro_batch = 1;
    plan.global_batch = 64;
    plan.seq_len = 4096;
    mc::ApplyStackWhole(*stack, &model, &plan);
    mc::Diagnostics d;
    mc::ValidateModel(model, "model", &d);
    mc::ValidatePlan(plan, model, gpu, cluster, &d);
    if (d.has_errors()) continue;
    const mc::MemoryReport mem = mc::EstimateMemory(model, plan, gpu, profile.memory);
    if (!(mem.per_gpu_bytes > 0)) __builtin_trap();
    const meshplan::sim::StepEstimate step = meshplan::sim::EstimateStep(model, plan, gpu, cluster, profile);
    if (!(step.time_s > 0) || !std::isfinite(step.time_s)) __builtin_trap();
  }
  return 0;
}
