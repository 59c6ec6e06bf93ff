// Software stacks: what a training framework of one era does by default (precision, attention
// kernel, recomputation, which collectives overlap, gradient-accumulation fusion, the
// distributed optimizer) and how its logs count FLOPs. Built-in presets
// (presets/stacks/<name>.json); one stack explains the runs of its era, so a published run is
// predicted with the defaults of the software that produced it, never with per-row constants.
// docs/validation.md lists them with their sources.
#ifndef MESHPLAN_CORE_STACK_H_
#define MESHPLAN_CORE_STACK_H_

#include <optional>
#include <string>
#include <vector>

#include "core/specs.h"
#include "core/status.h"

namespace meshplan::core {

// How a source turns a step into the TFLOP/s (or MFU) it prints, per token of the step:
//  kNarayananEq3: Narayanan 2021 Eq. 3, hardware FLOPs with the recompute forward,
//    96 l h^2 (1 + s/6h + V/16lh);
//  kMegatron: Megatron-LM training.py num_floating_point_operations (model FLOPs, full s^2
//    attention): 12 l h^2 [(1 + g/a + s/h) q/h + (f/h) k x (3/2 if gated) + V/(2 l h)], which for
//    a GPT (f = 4h, g = a) is Korthikanti 2022 Appendix A's 72 l h^2 (1 + s/6h + V/12lh);
//  kPalm: Chowdhery et al. 2022 (PaLM) Appendix B's model FLOPs, 6 N + 12 L H Q T with N the
//    parameters, H heads of size Q, T the sequence (full attention), which the Llama 3 paper's
//    "BF16 MFU (Chowdhery et al.)" uses;
//  kMegatron2025: the same function since Megatron-LM 8873b55d6a (2025-03-06, "Fixes in number
//    of floating-point operation estimates for MoE and attention layer"), as its dev branch has it
//    at 9c5258f109: the causal attention's s^2 term halved, MLA's low-rank projections counted as
//    they are, and each MTP module as one more layer with its own logits, norms and projection.
enum class FlopCount { kNarayananEq3, kMegatron, kPalm, kMegatron2025 };
const char* Name(FlopCount v);

// One way a published record's source names the software that produced it: every string of
// `source` appears (case-insensitively) in the record's source text (its source's paper, repo,
// path, url, table, row and software, and the record's framework), every string of `row` in its
// row, and none of `unless` in the source text.
struct SourceMatch {
  std::vector<std::string> source, row, unless;
  size_t Terms() const { return source.size() + row.size(); }
};

struct SoftwareStack {
  std::string name, source, notes;
  std::vector<std::string> applies_to;     // published-record id prefixes this stack produced
  std::vector<SourceMatch> recognized_by;  // the sources it produced, for records of other ids
  FlopCount flop_count = FlopCount::kMegatron;
  Dtype precision = Dtype::kBf16;
  AttentionImpl attention = AttentionImpl::kFlash;
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;  // with tp > 1
  TpOverlap tp_overlap = TpOverlap::kBackward;
  bool grad_accum_fusion = true;
  bool grad_prescale = true;  // its DDP divides the gradients before their reduction (PlanSpec)
  bool overlap_grad_reduce = true;
  // ZeRO-1/2: the parameter all-gather under the next step's first forward (PlanSpec); off, as
  // Megatron-LM's default, when a stack file does not say.
  bool overlap_param_gather = false;
  int zero = 0;                                   // the stack's data-parallel sharding when a run does not name one
  Zero3Gather zero3_gather = Zero3Gather::kFlat;  // how its ZeRO-3 gathers (core/specs.h)
  Dtype grads = Dtype::kBf16;                     // the gradient buffer it accumulates and reduces in
  // ZeRO-3 (FSDP) under pipeline parallelism keeps each stage's parameters gathered and its
  // gradients unsharded, accumulated over the step's microbatches and reduce-scattered once after
  // the last (torchtitan 2024: reshard_after_forward=False with PP; PyTorch's pipeline stage turns
  // FSDP's gradient sync and resharding off until the last backward): ZeRO-1's memory and traffic.
  bool zero3_unsharded_under_pp = false;
  CrossEntropy cross_entropy = CrossEntropy::kFused;  // how its loss computes the cross entropy
  // How it does when the run compiles (a record's measured.other.torch_compile), where that differs
  // (torchtitan from 2025-04 compiles its loss with the model): nullopt, as without compile.
  std::optional<CrossEntropy> compiled_cross_entropy;
  // Whose measured host time its MoE layers take at least (PlanSpec::moe_host): Megatron-Core's,
  // measured on its own MoE layer; none for a stack whose MoE host time is not measured.
  MoeHost moe_host = MoeHost::kMegatronCore;
  MoeProbs moe_probs = MoeProbs::kFused;        // where its MoE applies the router's probabilities (PlanSpec)
  ExpertBias expert_bias = ExpertBias::kFused;  // how its experts add fc2's bias (PlanSpec)
  // Its MoE token dispatcher and the router pattern its benchmarks run (PlanSpec::moe_dispatcher,
  // moe_routing): all-to-all and uniform unless a stack file says otherwise.
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  MoeRouting moe_routing = MoeRouting::kUniform;
  CpKind cp_kind = CpKind::kRing;                 // its context parallelism
  Elementwise elementwise = Elementwise::kFused;  // its norms, RoPE and activations
  bool repeat_kv = false;                         // its model code expands GQA's K, V (PlanSpec)
  bool dtensor_tp = false;                        // its TP is PyTorch DTensor's styles (PlanSpec)
  bool torch_cp = false;                          // its CP is PyTorch's context_parallel (PlanSpec)
  bool keep_pp_outputs = false;  // its pipeline runtime keeps per-microbatch outputs for the step (PlanSpec)
  // Without a microbatch count, the pipeline splits a data-parallel rank's batch into as many
  // microbatches as it has stages (torchtitan 2024: pipeline_parallel_microbatches defaults to
  // the number of stages, config_manager.py at 3f20451b).
  bool microbatches_equal_pp = false;
  // A run named an interleaved (looped) schedule without its virtual stages: the stack's default
  // model chunks per pipeline rank (torchtitan 9dec370: generate_split_points takes 2 stages per
  // rank for multi-stage schedules, torchtitan/parallelisms/pipelining_utils.py:22-27); 0: none.
  int64_t interleaved_stages_per_rank = 0;
  // The CUDA context its process holds per GPU where the stack's own source measured it (bytes; 0:
  // the profile's, measured with lazy module loading). Software of before lazy loading (CUDA 11.7,
  // CUDA_MODULE_LOADING=LAZY) loads every kernel of its libraries when the context is created:
  // BigScience measured 1,573 MiB for its 2022 stack against meshplan's 619-685 MiB (docs/memory.md).
  int64_t cuda_context_bytes = 0;
  // Its layers run as Transformer Engine's modules (PlanSpec::transformer_engine).
  bool transformer_engine = false;
  // Its FP8 recipes all-gather the distributed optimizer's parameters in FP8
  // (PlanSpec::fp8_param_gather): applied once the plan's precision and ZeRO stage are final and
  // only where they allow it (ApplyStackFp8ParamGather).
  bool fp8_param_gather = false;
  // Whether its models train with dropout (ModelSpec::dropout), where the stack's own model code
  // says (LLM Foundry's MPT: resid_pdrop, emb_pdrop and attn_pdrop default to 0); nullopt: the
  // model's.
  std::optional<bool> dropout;
  // Its full recomputation replays a block as PyTorch's non-reentrant checkpoint does from 2.1, or
  // as a checkpointed block compiled whole does (PlanSpec::recompute_early_stop): stopped before
  // the MLP's output projection. Applied where the plan recomputes fully and the stop skips
  // something (ApplyStackRecomputeEarlyStop).
  bool recompute_early_stop = false;
  // The vocabulary padding its model code applies (PlanSpec::vocab_divisible_by): Megatron-LM's
  // --make-vocab-size-divisible-by, 128 by default, times the TP size. 0: none set (the plan's).
  int64_t vocab_divisible_by = 0;
};

// Every problem at once, one "PREFIX.key: rule" line each; a key no field reads is refused naming
// the nearest known one (a misspelt setting must not leave the stack's default in its place).
Result<SoftwareStack> ParseStackJson(const std::string& text, const std::string& prefix = "stack");
// A built-in stack by name (NotFound lists them), or a stack file by path (its errors: the path,
// then ParseStackJson's lines).
Result<SoftwareStack> LoadStack(const std::string& name);
// The built-in stack whose applies_to names a prefix of `record_id`, the longest such prefix where
// several stacks name one (megatron-bridge-2511- before megatron-bridge-); nullopt when none does.
std::optional<SoftwareStack> StackForRecord(const std::string& record_id);
// The built-in stack a record's source names (SoftwareStack::recognized_by, matched against
// `source_text` and `row_text`): of the stacks with a matching entry, the one whose entry lists
// the most strings (the most specific; ties to the first name in order); nullopt when none does.
std::optional<SoftwareStack> StackForSource(const std::string& source_text, const std::string& row_text);
// The stack a published record without a recognisable source is predicted with.
inline constexpr const char* kDefaultStack = "megatron-core-2024";

// The stack's defaults applied to a plan and model: precision, attention kernel, recomputation,
// TP overlap, gradient-accumulation fusion, DP overlap, ZeRO stage, and sequence parallelism
// when plan->tp > 1 (so set tp first). A caller's explicit choices are applied after it.
void ApplyStack(const SoftwareStack& s, ModelSpec* m, PlanSpec* p);
// The stack's rule for ZeRO-3 under pipeline parallelism (SoftwareStack::zero3_unsharded_under_pp),
// applied once the plan's pp and ZeRO stage are final: ZeRO-1 with the gradient reduction after
// the last backward. Returns the sentence that says so, or "" when the rule does not apply.
std::string ApplyStackPipelineSharding(const SoftwareStack& s, PlanSpec* p);
// The stack's checkpoint early stop (SoftwareStack::recompute_early_stop), applied once the plan's
// recomputation is final and only where the caller left plan->recompute_early_stop unset: on full
// recomputation where RecomputeEarlyStopBlocker finds nothing against it. Returns the sentence
// that says it was applied or why not, or "" when the plan does not recompute fully.
std::string ApplyStackRecomputeEarlyStop(const SoftwareStack& s, const ModelSpec& m, PlanSpec* p);
// The stack's FP8 parameter gather (SoftwareStack::fp8_param_gather), applied once the plan's
// precision and ZeRO stage are final, where PlanSpec::Fp8ParamGatherApplies (FP8 compute, ZeRO 1 or
// 2). Returns the sentence that says it was applied, or "" when it was not.
std::string ApplyStackFp8ParamGather(const SoftwareStack& s, PlanSpec* p);
// One line naming what ApplyStack set: "stack megatron-lm-2021: fp16, naive attention, ...".
// The whole stack on a model and plan that take every default from it (a GUI choice, a fuzzed
// stack file): ApplyStack, then ApplyStackPipelineSharding, ApplyStackRecomputeEarlyStop and
// ApplyStackFp8ParamGather, as `report --stack NAME` with no other flag; their notes dropped. The
// CLI runs them itself, its flags between the first and the others (cli/plan_flags.cc).
void ApplyStackWhole(const SoftwareStack& s, ModelSpec* m, PlanSpec* p);
std::string StackSummary(const SoftwareStack& s);

// FLOPs per token of one training step (forward and backward) as `count` counts them for a model
// of `m`'s shape at sequence length `seq`.
double SourceFlopsPerToken(FlopCount count, const ModelSpec& m, int64_t seq);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_STACK_H_
