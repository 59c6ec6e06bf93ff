// The plan flags shared by report, plan (and later simulate, search, explain): they register on a
// CLI11 subcommand, then Resolve() turns presets + plan file + overrides into a validated
// Scenario. No model math here: defaults that need arithmetic (dp from the GPU count) are
// stated in the help text and echoed in the output.
#ifndef MESHPLAN_CLI_PLAN_FLAGS_H_
#define MESHPLAN_CLI_PLAN_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/diagnostics.h"
#include "core/presets.h"

namespace meshplan::cli {

struct PlanFlags {
  std::string plan_file, model, gpu, cluster;
  // Model overrides.
  std::optional<int64_t> layers, hidden, heads, kv_heads, head_dim, ffn, vocab, mtp_layers, sliding_window,
      global_attention_every;
  std::optional<std::string> mlp, attention, mtp_pattern;
  std::optional<bool> mtp_shared;
  std::optional<double> rope_mscale, glu_clamp;
  // Plan.
  std::optional<int64_t> gpus, tp, pp, dp, cp, ep, etp, vpp, vpp_group, pp_flushes, mbs, gbs, gbs_tokens, seq,
      recompute_layers, bf16_layers_at_start, bf16_layers_at_end, hsdp_shard, deferred_head_wgrad, cuda_context_mib,
      offload_activation_layers, segment_nodes, vocab_divisible_by;
  std::optional<int> zero;
  std::optional<double> moe_imbalance;
  std::optional<bool> sp, overlap_grad_reduce, overlap_param_gather, grad_accum_fusion, grad_prescale, ep_overlap,
      delay_wgrad, repeat_kv, dtensor_tp, torch_cp, keep_lp_grads, keep_pp_outputs, recompute_early_stop,
      transformer_engine, moe_grouped_gemm, moe_router_padding, moe_op_fuser, chunked_attention, fp8_param_gather,
      fp8_attention, offload_checkpoints;
  std::optional<std::string> tp_overlap, zero3_gather, fp8_scaling;
  std::optional<std::string> recompute, recompute_modules, cross_entropy, elementwise, moe_dispatcher, moe_routing,
      moe_host, moe_probs, expert_bias, schedule, precision, optimizer, sharding, cp_kind, placement;
  std::optional<std::string> weights_dtype, grads_dtype, master_dtype, moments_dtype;
  std::optional<std::string> offload_optimizer, offload_params, offload_modules, recipe, stack;
  std::vector<int64_t> stage_layers;
  // A plan that stands in for --plan when no file is given (e.g. the one a measurement embeds).
  std::optional<core::PlanFile> fallback_plan;

  void Register(CLI::App* app);
  // Builds and validates the scenario. Every problem goes to `diag` (errors and warnings);
  // returns false when there is an error. `notes` lists the defaults that were filled in.
  bool Resolve(core::Scenario* out, core::Diagnostics* diag, std::vector<std::string>* notes) const;

 private:
  // Resolve's steps: the specs from presets, files and flags; the model flags; the plan flags.
  bool ResolveSources(core::Scenario* out, bool* has_file, core::Diagnostics* d, std::vector<std::string>* notes) const;
  void ApplyModelFlags(core::ModelSpec* spec, core::Diagnostics* d, std::vector<std::string>* notes) const;
  void ApplyPlanFlags(bool from_file, core::ModelSpec* spec, core::PlanSpec* plan, core::Diagnostics* d,
                      std::vector<std::string>* notes) const;
};

// Resolve() for a command: errors go to stderr one line each; warnings are returned. On failure
// *exit_code is 2 when a flag names nothing (a usage error), else 1 (a plan inconsistent with its
// model or cluster).
bool ResolveOrReport(const PlanFlags& flags, core::Scenario* s, std::vector<std::string>* notes,
                     std::vector<std::string>* warnings, int* exit_code);

}  // namespace meshplan::cli

#endif  // MESHPLAN_CLI_PLAN_FLAGS_H_
