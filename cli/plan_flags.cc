#include "cli/plan_flags.h"

#include <iostream>

#include "core/defaults.h"
#include "core/stack.h"
#include "core/validate.h"

namespace meshplan::cli {

using core::Diagnostics;

void PlanFlags::Register(CLI::App* app) {
  app->add_option("--plan", plan_file, "A plan JSON file (from `meshplan plan --output`); flags override it");
  app->add_option("--model", model, "Model preset name, JSON file, or a Hugging Face config.json");
  app->add_option("--gpu", gpu, "GPU preset or JSON file (default: the cluster's GPU)");
  app->add_option("--cluster", cluster, "Cluster preset or JSON file (default: the preset built from --gpu)");
  auto* m = app->add_option_group("Model overrides");
  m->add_option("--layers", layers, "Transformer layers");
  m->add_option("--hidden", hidden, "Hidden size (the MLP width and head_dim follow it unless given)");
  m->add_option("--heads", heads, "Attention heads (kv heads and head_dim follow unless given)");
  m->add_option("--kv-heads", kv_heads, "Key/value heads (GQA; default follows --heads as the preset groups them)");
  m->add_option("--head-dim", head_dim, "Attention head size (default hidden/heads where the preset derives it so)");
  m->add_option("--ffn", ffn, "MLP intermediate size (default: the preset's ratio to hidden)");
  m->add_option("--vocab", vocab, "Vocabulary size");
  m->add_option("--mlp", mlp, "gelu|swiglu");
  m->add_option("--mtp-layers", mtp_layers,
                "Multi-token prediction modules on the last stage (DeepSeek-V3: 1; 0 trains without; docs/memory.md)");
  m->add_option("--mtp-pattern", mtp_pattern,
                "A hybrid model's MTP module layer as pattern blocks (Megatron-Core's pattern after '/': Nemotron 3 "
                "Super's \"*E\", attention then MoE); needed with --mtp-layers on a hybrid model without one");
  m->add_option("--mtp-shared", mtp_shared,
                "true: one MTP module serves every depth (Megatron-Core mtp_use_repeated_layer: its parameters once); "
                "false: a module per depth");
  m->add_option("--sliding-window", sliding_window,
                "Keys a windowed layer's queries attend, themselves included (0: every layer global; gpt-oss 128, "
                "Mistral 7B 4096)");
  m->add_flag_callback(
      "--chunked-attention", [this] { chunked_attention = true; },
      "With --sliding-window: the windowed layers attend within aligned chunks of that many tokens, each run as its "
      "own sequence (Llama 4's attention_chunk_size), instead of a sliding window");
  m->add_option("--global-attention-every", global_attention_every,
                "With --sliding-window: the last of every N layers attends the whole sequence (0: every layer "
                "windowed; gpt-oss 2, Gemma 3 6)");
  m->add_option("--rope-mscale", rope_mscale,
                "The factor RoPE's cos and sin carry (YaRN's 0.1 ln(s) + 1 for a context stretched s times; gpt-oss "
                "1.3466; 1: plain RoPE). Megatron-Core runs a scaled RoPE unfused (docs/compute.md)");
  m->add_option("--glu-clamp", glu_clamp,
                "A gated MLP's clamp (gpt-oss's swiglu_limit 7; 0: none): Megatron-Core's fused activation clamps "
                "and concatenates eagerly before it (docs/compute.md)");
  m->add_option(
      "--attention", attention,
      "flash|flash2|flash1|triton|cudnn-9.13|naive (flash: the GPU's fastest fused kernel; flash2: FlashAttention-2; "
      "flash1: FlashAttention v1; triton: the Triton FlashAttention kernel; cudnn-9.13: cuDNN's before 9.17, "
      "as NGC containers up to 25.09 ran it, measured on Blackwell; naive keeps the s^2 scores)");
  auto* p = app->add_option_group("Plan");
  p->add_option("--gpus", gpus, "Total GPUs (= tp*pp*dp*cp)");
  p->add_option("--tp", tp, "Tensor parallel size (default 1)");
  p->add_option("--pp", pp, "Pipeline parallel size (default 1)");
  p->add_option("--dp", dp, "Data parallel size (default gpus/(tp*pp*cp))");
  p->add_option("--cp", cp, "Context parallel size (default 1)");
  p->add_option("--ep", ep, "Expert parallel size (default 1)");
  p->add_option("--etp", etp, "Expert tensor parallel size (default 1)");
  p->add_option("--vpp", vpp, "Virtual pipeline stages per rank (interleaved schedule)");
  p->add_option("--vpp-group", vpp_group,
                "Interleaved schedule: microbatches each model chunk runs in a row (Megatron-Core "
                "--microbatch-group-size-per-virtual-pipeline-stage; default pp). From pp to the microbatches per "
                "pipeline, leaving a last group of 0 or at least pp");
  p->add_option("--pp-flushes", pp_flushes,
                "Pipeline flushes per step: the step's microbatches run in this many schedule runs, each with its "
                "own warm-up and drain, before one optimizer step (torch.distributed.pipelining under NeMo "
                "AutoModel's gradient accumulation: one schedule.step per local batch). Default 1, as Megatron's "
                "schedules run the whole step in one");
  p->add_option("--zero", zero, "ZeRO stage 0-3 (default 0)");
  p->add_option("--sharding", sharding, "fsdp|hsdp (default fsdp)");
  p->add_option("--hsdp-shard", hsdp_shard, "HSDP shard group size");
  p->add_flag_callback(
      "--sp", [this] { sp = true; }, "Sequence parallel on (the default with --tp > 1)");
  p->add_flag_callback(
      "--no-sp", [this] { sp = false; }, "Sequence parallel off");
  p->add_flag_callback(
      "--no-overlap-grad-reduce", [this] { overlap_grad_reduce = false; },
      "DP gradient reduction after the last backward, not under it");
  p->add_flag_callback(
      "--no-overlap-param-gather", [this] { overlap_param_gather = false; },
      "ZeRO-1/2: the parameter all-gather after the optimizer step, not under the next step's first forward");
  p->add_flag_callback(
      "--no-grad-accum-fusion", [this] { grad_accum_fusion = false; },
      "Weight gradients added into the gradient buffer by a separate kernel every microbatch");
  p->add_flag_callback(
      "--no-grad-prescale", [this] { grad_prescale = false; },
      "ZeRO 0-2: DP gradients averaged inside the collective (Megatron-Core --ddp-average-in-collective), "
      "not divided by the DP size in a pass of their own before it");
  p->add_flag_callback(
      "--ep-overlap", [this] { ep_overlap = true; },
      "MoE: each microbatch's EP all-to-alls run under another microbatch's compute "
      "(Megatron-Core --overlap-moe-expert-parallel-comm; needs --ep > 1)");
  p->add_flag_callback(
      "--delay-wgrad", [this] { delay_wgrad = true; },
      "MoE with --ep-overlap: the merged layers' weight gradients run apart from their input gradients, so the "
      "backward all-to-alls start earlier (Megatron-Core --delay-wgrad-compute)");
  p->add_option("--tp-overlap", tp_overlap,
                "TP collectives under GEMMs: none|backward|full|async (default backward, Megatron-LM's async "
                "input-gradient reduction; full: Transformer Engine userbuffers; async: PyTorch's AsyncTP, "
                "torchtitan's, with --sp)");
  p->add_option("--recompute", recompute, "none|selective|full (default none)");
  p->add_option("--vocab-divisible-by", vocab_divisible_by,
                "Pad the vocabulary to a multiple of N x tp, as Megatron-LM's --make-vocab-size-divisible-by does "
                "(its default 128; the Megatron stacks set it); default 1, the model's vocabulary as it is");
  p->add_option("--recompute-layers", recompute_layers, "Full recompute for this many layers per stage");
  p->add_flag_callback(
      "--recompute-early-stop", [this] { recompute_early_stop = true; },
      "Full recompute as PyTorch >= 2.1's non-reentrant checkpoint runs it (checkpoint_wrapper NO_REENTRANT, "
      "use_reentrant=False): the recomputation stops at the last tensor the backward needs, so an eager dense "
      "block's MLP output projection, its TP reduction and the residual are not rerun (docs/compute.md; the "
      "torchtitan and LLM Foundry stacks' default on full recomputation)");
  p->add_flag_callback(
      "--no-recompute-early-stop", [this] { recompute_early_stop = false; },
      "Full recompute replays the whole block (a reentrant checkpoint, PyTorch before 2.1), where the stack's "
      "default is the early stop");
  p->add_option("--recompute-modules", recompute_modules,
                "Selective recompute's modules, comma-separated: core_attn (the default), moe_act, layernorm, "
                "mla_up_proj, mlp, shared_experts, moe (Megatron-Core --recompute-modules); or one whole policy: "
                "torchtitan_op (torchtitan's per-op selective AC), save_qkv_proj (MaxText's remat policy)");
  p->add_option("--mbs", mbs, "Micro batch size in sequences (default 1)");
  p->add_option("--gbs", gbs, "Global batch size in sequences (default mbs*dp*pp)");
  p->add_option("--gbs-tokens", gbs_tokens, "Global batch in tokens (= gbs * seq; instead of --gbs)");
  p->add_option("--seq", seq, "Sequence length (default the model's max_seq)");
  p->add_option("--schedule", schedule,
                "gpipe|1f1b|interleaved|zero-bubble|dualpipe (default 1f1b, "
                "interleaved when --vpp > 1)");
  p->add_option("--zero3-gather", zero3_gather,
                "How ZeRO-3 gathers: flat (one prefetched collective per layer: FSDP's flat parameters, DeepSpeed "
                ">= 0.4), fsdp2 (the same with FSDP2's copy-out and copy-in kernels: torchtitan), fsdp1 (the same with "
                "FSDP1's gradient concatenation, cast and predivide, reduce-scattering every microbatch: LLM Foundry) "
                "or per-tensor (one blocking list collective per parameter tensor: DeepSpeed 0.3)");
  p->add_option("--bf16-layers-at-start", bf16_layers_at_start,
                "Under --precision fp8|nvfp4: the model's first this many layers keep their GEMMs in BF16 "
                "(Megatron-Core --first-last-layers-bf16 --num-layers-at-start-in-bf16)");
  p->add_option("--bf16-layers-at-end", bf16_layers_at_end,
                "Under --precision fp8|nvfp4: the model's last this many layers keep their GEMMs in BF16 "
                "(Megatron-Core --num-layers-at-end-in-bf16)");
  p->add_option("--fp8-scaling", fp8_scaling,
                "FP8 recipe's scaling: delayed (default), current (an amax pass per quantization) or block "
                "(per-tile scales, re-quantized transposed for the backward)");
  p->add_option(
      "--cross-entropy", cross_entropy,
      "How the loss computes the cross entropy: fused (default: Megatron-Core's vocab_parallel_cross_entropy, "
      "eager, bf16 logits and one fp32 buffer, 6 B per logit), te (Transformer Engine's Triton kernels, "
      "--cross-entropy-fusion-impl te, TE 2.18 on: 6 B), te-inplace (the same before TE 2.18, its gradient "
      "written over the logits: 2 B), upcast (bf16 logits .float() into PyTorch's cross_entropy, "
      "torchtitan 2024: 12 B), compiled (the same under torch.compile, torchtitan from 2025-04: 4 B), flash "
      "(FlashAttention's kernel on the bf16 logits, LLM Foundry: 4 B), native "
      "(Megatron-Core --cross-entropy-loss-fusion, its compiled native impl: 10 B) or plain (PyTorch's "
      "cross_entropy on the bf16 logits without the upcast, NeMo AutoModel's MoE benchmarks: 6 B)");
  p->add_option("--defer-head-wgrad", deferred_head_wgrad,
                "Microbatches whose output-layer weight gradient waits for the step's end, keeping their logits "
                "gradients (Megatron-Core --defer-embedding-wgrad-compute with --wgrad-deferral-limit n; default 0)");
  p->add_option("--elementwise", elementwise,
                "How norms, RoPE and activations run: fused (default: one kernel each) or eager (PyTorch eager's "
                "op-by-op RMSNorm, RoPE and SwiGLU, torchtitan 2024 without torch.compile) or eager-fused-norm (the "
                "same with torchtitan's Triton RMSNorm, norm_type = \"fused_rmsnorm\")");
  p->add_flag_callback(
      "--repeat-kv", [this] { repeat_kv = true; },
      "GQA's K and V copied to every query head before the attention kernel (torchtitan 2024's repeat_kv; "
      "--stack torchtitan-2024 sets it): the copies, their saved tensors and CP's K/V exchanges at every head");
  p->add_flag_callback(
      "--dtensor-tp", [this] { dtensor_tp = true; },
      "Tensor parallelism through PyTorch's DTensor styles (torchtitan, NeMo AutoModel; their stacks set it): "
      "the SP collectives run along the sequence dimension, each with a copy of its whole tensor, and under FP8 "
      "torchao's float8 styles gather in float8 (docs/compute.md)");
  p->add_flag_callback(
      "--no-dtensor-tp", [this] { dtensor_tp = false; },
      "Megatron-Core's TP instead of the stack's DTensor styles (first-dimension collectives, no copies)");
  p->add_flag_callback(
      "--torch-cp", [this] { torch_cp = true; },
      "Context parallelism through PyTorch's context_parallel (torchtitan; --stack torchtitan-2024 and -2025 set "
      "it): the ring's copies and fp32 output merges per K/V block, fp32 dQ/dK/dV accumulation and the dK/dV ring "
      "in fp32 (docs/compute.md)");
  p->add_flag_callback(
      "--no-torch-cp", [this] { torch_cp = false; },
      "Transformer Engine's CP instead of the stack's PyTorch context_parallel");
  p->add_flag_callback(
      "--keep-pp-outputs", [this] { keep_pp_outputs = true; },
      "The pipeline runtime keeps per-microbatch tensors for the step (PyTorch's torch.distributed.pipelining: "
      "the last stage every microbatch's logits, the others a gradient receive buffer per microbatch; "
      "--stack torchtitan-2024 sets it; docs/memory.md)");
  p->add_flag_callback(
      "--keep-lp-grads", [this] { keep_lp_grads = true; },
      "The 16-bit gradients stay allocated beside the gradient buffer for the whole step (DeepSpeed's "
      "BF16_Optimizer with fp32 gradient accumulation): weights-dtype bytes more per parameter");
  p->add_flag_callback(
      "--fp8-attention", [this] { fp8_attention = true; },
      "Transformer Engine's FP8 attention (Megatron-Core's --fp8-dot-product-attention, NeMo's FP8_DPA): Q, K, V "
      "and the output gradient quantized, cuDNN's FP8 fused attention; needs --precision fp8 or nvfp4 and the "
      "GPU's measured attention_curve.cudnn-fp8");
  p->add_flag_callback(
      "--fp8-param-gather", [this] { fp8_param_gather = true; },
      "The distributed optimizer all-gathers the updated parameters in FP8, 1 byte each, and the layers compute "
      "from them (Megatron-Core's --fp8-param-gather, NeMo's fp8_params); needs --precision fp8 and --zero 1 or 2 "
      "(--stack megatron-bridge-2025 sets it where they allow it)");
  p->add_flag_callback(
      "--no-fp8-param-gather", [this] { fp8_param_gather = false; },
      "The distributed optimizer all-gathers the parameters in the weights' dtype even under FP8 (a stack that "
      "gathers them in FP8, megatron-bridge-2025, otherwise does)");
  p->add_flag_callback(
      "--transformer-engine", [this] { transformer_engine = true; },
      "The layers run as Transformer Engine's modules (Megatron-Core's default; --stack megatron-core-2024 "
      "sets it): TE's own cuBLAS workspaces, 32 MiB on Hopper and later, 4 MiB before, and 4 more with MoE "
      "grouped GEMM");
  p->add_flag_callback(
      "--no-moe-grouped-gemm", [this] { moe_grouped_gemm = false; },
      "MoE experts run one GEMM after another (Megatron-Core without --moe-grouped-gemm) instead of one "
      "grouped GEMM");
  p->add_option("--moe-imbalance", moe_imbalance,
                "MoE, dropless: the routed tokens the busiest expert-parallel rank receives over the mean, which "
                "sets the layer's pace and its activations (a measured ratio, e.g. from Megatron-Core's "
                "--moe-per-layer-logging; from 1 to ep). Default 1: balanced routing");
  p->add_flag_callback(
      "--moe-router-padding", [this] { moe_router_padding = true; },
      "MoE under fp8/nvfp4: each expert's tokens arrive padded to the quantization's alignment "
      "(Megatron-Core's --moe-router-padding-for-quantization, or its HybridEP dispatcher), so Transformer "
      "Engine's grouped experts skip their padding copies");
  p->add_flag_callback(
      "--moe-op-fuser", [this] { moe_op_fuser = true; },
      "MoE: the experts' fc1, activation and fc2 through Transformer Engine's op fuser (Megatron-Core's "
      "--use-transformer-engine-op-fuser): the activation's clamp and fc2's bias inside its ops, no copies "
      "around them (needs --transformer-engine, grouped GEMM, etp 1)");
  p->add_option("--cuda-context-mib", cuda_context_mib,
                "The CUDA context your software holds per GPU, MiB (nvidia-smi's used memory beyond PyTorch's "
                "reserved bytes after the first GEMM; default: the profile's 685 MiB, measured with lazy module "
                "loading; --stack megatron-deepspeed-2022 sets BigScience's 1573)");
  p->add_option("--moe-dispatcher", moe_dispatcher,
                "MoE: alltoall (default: Megatron-Core's all-to-all dispatcher, k copies per token, permuted around "
                "the NCCL all-to-alls) or flex (its DeepEP/HybridEP dispatcher: each token sent once per rank that "
                "holds one of its experts)");
  p->add_option("--moe-routing", moe_routing,
                "MoE: which experts a token takes, balanced either way: uniform (default: k at random, as "
                "Megatron-Core's forced load balancing draws them) or round-robin (k consecutive experts, token t "
                "from expert t*k: NeMo AutoModel's fake balanced gate); with --moe-dispatcher flex it sets how many "
                "ranks a token is sent to");
  p->add_option(
      "--moe-host", moe_host,
      "MoE: megatron-core (default: each MoE layer waits for the host time Megatron-Core's own MoE "
      "layer was measured to need, its dropless dispatcher waiting on the host once per layer forward) or none "
      "(no host floor: another framework, or the MoE layer captured in CUDA graphs)");
  p->add_option("--moe-probs", moe_probs,
                "MoE: where the router's probabilities weight the tokens, which sets what is kept for their "
                "gradient: fused (default: a fused weighted SwiGLU/quick-GeGLU/squared-ReLU, Megatron-Core 0.13 on; "
                "nothing more), activation (the activation's output times them, kept: Megatron-Core 0.13 on "
                "without the fusion, as GELU experts run) or unpermute (the experts' output times them at the "
                "unpermutation, kept: Megatron-Core before 0.13 and DeepSpeed; --stack megatron-core-2024 sets it)");
  p->add_option("--expert-bias", expert_bias,
                "MoE experts with biases (gpt-oss): how fc2's bias is added: fused (default: in the GEMM or a "
                "fused kernel, no pass of its own), per-expert (Megatron-Core's TEGroupedMLP from 2025-09: eager "
                "t + b * p and a concatenation, one local expert at a time: --stack megatron-bridge-2025 sets it; "
                "the 2024 TEGroupedMLP refused biases) or "
                "per-expert-fp32 (the same with fp32 probabilities, as the flex dispatcher hands them)");
  p->add_option("--stack", stack,
                "Software stack whose defaults the plan takes (meshplan presets stacks): precision, attention, "
                "recompute, SP, overlaps, ZeRO; the other flags override them");
  p->add_option("--precision", precision,
                "fp32|tf32|bf16|fp16|fp8|nvfp4 GEMM precision (default bf16; nvfp4 needs --transformer-engine and a "
                "Blackwell GPU)");
  p->add_option("--optimizer", optimizer,
                "adam|adamw|sgd-momentum|adam-8bit|muon (default adamw; muon: one momentum buffer for the 2D "
                "weights, Adam for the embedding, head and norms, and its Newton-Schulz steps)");
  p->add_option("--recipe", recipe,
                "Model-state recipe: zero (16 B/param: bf16 grads) or megatron "
                "(18 B/param: fp32 main grads)");
  p->add_option("--weights-dtype", weights_dtype, "Working weights dtype (default bf16)");
  p->add_option("--grads-dtype", grads_dtype, "Gradient dtype (default bf16)");
  p->add_option("--master-dtype", master_dtype, "Master weights dtype, or none (default fp32)");
  p->add_option("--moments-dtype", moments_dtype, "Optimizer moments dtype (default fp32)");
  p->add_option("--offload-optimizer", offload_optimizer, "none|cpu|nvme");
  p->add_option("--offload-params", offload_params, "none|cpu|nvme");
  p->add_option("--offload-activations", offload_activation_layers,
                "Layers whose activations go to host memory during the forward and come back for their backward "
                "(Megatron-Core --cpu-offloading --cpu-offloading-num-layers N; needs pp 1, no recompute and the "
                "GPU's host_link_bytes_per_s; default 0)");
  p->add_flag_callback(
      "--offload-checkpoints", [this] { offload_checkpoints = true; },
      "Keep full recomputation's layer checkpoints in host memory, copied out in the forward and back for the "
      "backward on the compute stream (DeepSpeed's activation_checkpointing cpu_checkpointing; needs --recompute "
      "full and the GPU's host_link_bytes_per_s)");
  p->add_option("--offload-modules", offload_modules,
                "Fine-grained activation offloading: the modules whose saved tensors go to host memory during the "
                "forward and come back for their backward, comma-separated, each one of "
                "attn_norm|qkv_linear|core_attn|attn_proj|mlp_norm|expert_fc1|moe_act|fused_group_mlp "
                "(Megatron-Core --fine-grained-activation-offloading --offload-modules; the last layer's stay on the "
                "GPU; needs the GPU's host_link_bytes_per_s)");
  p->add_option("--cp-kind", cp_kind, "ring|ulysses|allgather (default ring)");
  p->add_option("--placement", placement, "Rank order, innermost first (default tp-cp-ep-dp-pp)");
  p->add_option("--segment", segment_nodes,
                "Slurm segments of N nodes, each inside one scale-up domain (sbatch --segment N with the "
                "topology/block plugin; default 0: none)");
  p->add_option("--stage-layers", stage_layers, "Uneven split: layers per pipeline chunk")->delimiter(',');
}

namespace {

template <typename E>
void SetEnum(const std::optional<std::string>& text, const char* flag, const char* path, E* out, Diagnostics* d) {
  if (!text) return;
  if (!core::FromName(*text, out))
    d->Error(std::string("--") + flag,
             std::string("must be one of ") + core::Choices<E>() + " (set " + path + "; got \"" + *text + "\")");
}

}  // namespace

// The scenario's specs: a plan file's (or the fallback plan's), each replaced by its flag when
// one is given; the plan file's plan into s->plan. False on an error (in `d`).
bool PlanFlags::ResolveSources(core::Scenario* out, bool* has_file, Diagnostics* d,
                               std::vector<std::string>* notes) const {
  core::Scenario& s = *out;
  core::ScenarioSources src;
  src.model = {std::nullopt, "", "--model", "is required (a preset name such as llama3-70b, or a JSON file)"};
  src.gpu = {std::nullopt, "", "--gpu", "is required (a preset name such as h100-sxm, or a JSON file)"};
  src.cluster = {std::nullopt, "", "--cluster", ""};
  std::optional<core::PlanFile> file;
  if (!plan_file.empty()) {
    auto text = core::ReadTextFile(plan_file);
    if (!text.ok()) {
      d->Error("--plan", text.status().message());
      return false;
    }
    auto parsed = core::ParsePlanFileJson(*text);
    if (!parsed.ok()) {
      d->Error("--plan", plan_file + ":\n" + parsed.status().message());
      return false;
    }
    file = *parsed;
  } else if (fallback_plan) {
    file = *fallback_plan;
  }
  if (file) {
    s.plan = file->plan;
    auto from_file = [](auto& source, const auto& embedded, const std::optional<std::string>& name,
                        const char* origin) {
      if (!embedded && !name) return;
      source.embedded = embedded;
      source.ref = name.value_or("");
      source.origin = origin;
    };
    from_file(src.model, file->model, file->model_name, "plan.model");
    from_file(src.gpu, file->gpu, file->gpu_name, "plan.gpu");
    from_file(src.cluster, file->cluster, file->cluster_name, "plan.cluster");
  }
  auto from_flag = [](auto& source, const std::string& ref, const char* origin) {
    if (ref.empty()) return;
    source.embedded.reset();
    source.ref = ref;
    source.origin = origin;
  };
  from_flag(src.model, model, "--model");
  from_flag(src.gpu, gpu, "--gpu");
  from_flag(src.cluster, cluster, "--cluster");
  if (!core::ResolveSpecs(src, &s, d, notes)) return false;
  *has_file = file.has_value();
  return true;
}

// Model overrides, with the dimensions the preset derives from them following (core/defaults.h);
// then re-validate the model: an override can break it (heads vs kv_heads).
void PlanFlags::ApplyModelFlags(core::ModelSpec* spec, Diagnostics* d, std::vector<std::string>* notes) const {
  core::ModelSpec& m = *spec;
  core::ModelOverrides mo{
      layers, hidden, heads, kv_heads, head_dim, ffn, vocab, sliding_window, global_attention_every};
  bool model_changed = !mo.empty();
  if (model_changed) m = core::ApplyModelOverrides(m, mo, d, notes);
  if (mlp) {
    SetEnum(mlp, "mlp", "model.mlp", &m.mlp, d);
    model_changed = true;
  }
  if (mtp_layers) {
    m.SetMtpLayers(*mtp_layers);
    model_changed = true;
  }
  // A flag given sets its field as it is.
  auto take = [&](const auto& flag, auto* field) {
    if (!flag) return;
    *field = *flag;
    model_changed = true;
  };
  // After --mtp-layers, whose 0 drops a preset's pattern and sharing: given with 0 they are refused
  // by the model's validation, naming the field.
  take(mtp_pattern, &m.mtp_pattern);
  take(mtp_shared, &m.mtp_shared);
  take(chunked_attention, &m.chunked_attention);
  if (attention) {
    SetEnum(attention, "attention", "model.attention", &m.attention, d);
    model_changed = true;
  }
  take(rope_mscale, &m.rope_mscale);
  take(glu_clamp, &m.glu_clamp);
  if (model_changed) {
    m.name += " (modified)";
    core::ValidateModel(m, "model", d);
  }
}

// Plan: a plan file's values (from_file), overridden by flags; a stack's defaults (which may set
// the model's attention) before them; what was filled in by default goes to `notes`.
void PlanFlags::ApplyPlanFlags(bool from_file, core::ModelSpec* spec, core::PlanSpec* plan, Diagnostics* d,
                               std::vector<std::string>* notes) const {
  core::ModelSpec& m = *spec;
  core::PlanSpec& p = *plan;
  if (tp) p.tp = *tp;
  // The stack's defaults first (they read tp for sequence parallelism); the flags below override.
  std::optional<core::SoftwareStack> sw;
  if (stack) {
    auto st = core::LoadStack(*stack);
    if (!st.ok()) {
      d->Error("--stack", st.status().message());
    } else {
      sw = *st;
      const core::AttentionImpl given = m.attention;  // --attention, applied above, wins
      core::ApplyStack(*sw, &m, &p);
      if (attention) m.attention = given;
      notes->push_back(core::StackSummary(*sw));
    }
  }
  if (pp) p.pp = *pp;
  if (cp) p.cp = *cp;
  if (ep) p.ep = *ep;
  if (etp) p.etp = *etp;
  if (vpp) p.vpp = *vpp;
  if (vpp_group) p.vpp_group = *vpp_group;
  if (pp_flushes) p.pp_flushes = *pp_flushes;
  if (zero) p.zero = *zero;
  if (hsdp_shard) p.hsdp_shard_size = *hsdp_shard;
  if (sp) p.sequence_parallel = *sp;
  if (overlap_grad_reduce) p.overlap_grad_reduce = *overlap_grad_reduce;
  if (overlap_param_gather) p.overlap_param_gather = *overlap_param_gather;
  if (grad_accum_fusion) p.grad_accum_fusion = *grad_accum_fusion;
  if (grad_prescale) p.grad_prescale = *grad_prescale;
  if (ep_overlap) p.ep_overlap = *ep_overlap;
  if (delay_wgrad) p.delay_wgrad = *delay_wgrad;
  if (offload_checkpoints) p.offload_checkpoints = *offload_checkpoints;
  if (repeat_kv) p.repeat_kv = *repeat_kv;
  if (dtensor_tp) p.dtensor_tp = *dtensor_tp;
  if (torch_cp) p.torch_cp = *torch_cp;
  if (keep_pp_outputs) p.keep_pp_outputs = *keep_pp_outputs;
  if (keep_lp_grads) p.keep_lp_grads = *keep_lp_grads;
  if (fp8_param_gather) p.fp8_param_gather = *fp8_param_gather;
  if (fp8_attention) p.fp8_attention = *fp8_attention;
  if (transformer_engine) p.transformer_engine = *transformer_engine;
  if (moe_grouped_gemm) p.moe_grouped_gemm = *moe_grouped_gemm;
  if (moe_router_padding) p.moe_router_padding = *moe_router_padding;
  if (moe_op_fuser) p.moe_op_fuser = *moe_op_fuser;
  if (moe_imbalance) p.moe_imbalance = *moe_imbalance;
  if (recompute_layers) p.recompute_layers = *recompute_layers;
  if (recompute_early_stop) p.recompute_early_stop = *recompute_early_stop;
  if (vocab_divisible_by) p.vocab_divisible_by = *vocab_divisible_by;
  if (bf16_layers_at_start) p.bf16_layers_at_start = *bf16_layers_at_start;
  if (bf16_layers_at_end) p.bf16_layers_at_end = *bf16_layers_at_end;
  if (mbs) p.micro_batch = *mbs;
  if (!stage_layers.empty()) p.stage_layers = stage_layers;
  SetEnum(sharding, "sharding", "plan.sharding", &p.sharding, d);
  SetEnum(recompute, "recompute", "plan.recompute", &p.recompute, d);
  if (precision) {  // the compute dtypes only: int8 and none are Dtype names no GEMM runs in
    core::Dtype dt{};
    if (core::FromName(*precision, &dt) && core::IsComputePrecision(dt)) p.precision = dt;
    else
      d->Error("--precision", std::string("must be one of ") + core::kComputePrecisionChoices +
                                  " (set plan.precision; got \"" + *precision + "\")");
  }
  SetEnum(cp_kind, "cp-kind", "plan.cp_kind", &p.cp_kind, d);
  SetEnum(tp_overlap, "tp-overlap", "plan.tp_overlap", &p.tp_overlap, d);
  SetEnum(zero3_gather, "zero3-gather", "plan.zero3_gather", &p.zero3_gather, d);
  SetEnum(fp8_scaling, "fp8-scaling", "plan.fp8_scaling", &p.fp8_scaling, d);
  SetEnum(cross_entropy, "cross-entropy", "plan.cross_entropy", &p.cross_entropy, d);
  if (deferred_head_wgrad) p.deferred_head_wgrad = *deferred_head_wgrad;
  if (offload_activation_layers) p.offload_activation_layers = *offload_activation_layers;
  if (segment_nodes) p.segment_nodes = *segment_nodes;
  if (cuda_context_mib) {
    if (*cuda_context_mib <= 0 || *cuda_context_mib > 65536)
      d->Error("--cuda-context-mib",
               "must be a MiB count from 1 to 65536 (got " + std::to_string(*cuda_context_mib) + ")");
    else p.cuda_context_bytes = *cuda_context_mib << 20;
  }
  SetEnum(elementwise, "elementwise", "plan.elementwise", &p.elementwise, d);
  SetEnum(moe_dispatcher, "moe-dispatcher", "plan.moe_dispatcher", &p.moe_dispatcher, d);
  SetEnum(moe_routing, "moe-routing", "plan.moe_routing", &p.moe_routing, d);
  SetEnum(moe_host, "moe-host", "plan.moe_host", &p.moe_host, d);
  SetEnum(moe_probs, "moe-probs", "plan.moe_probs", &p.moe_probs, d);
  SetEnum(expert_bias, "expert-bias", "plan.expert_bias", &p.expert_bias, d);
  SetEnum(offload_optimizer, "offload-optimizer", "plan.offload.optimizer", &p.offload_optimizer, d);
  SetEnum(offload_params, "offload-params", "plan.offload.params", &p.offload_params, d);
  if (optimizer) {
    SetEnum(optimizer, "optimizer", "plan.optimizer", &p.optimizer, d);
    if (p.optimizer == core::Optimizer::kAdam8bit && !moments_dtype) p.dtypes.optimizer_states = core::Dtype::kInt8;
  }
  if (recipe) {
    if (*recipe == "megatron") p.dtypes.grads = core::Dtype::kFp32;
    else if (*recipe == "zero") p.dtypes.grads = core::Dtype::kBf16;
    else d->Error("--recipe", "must be zero or megatron (got \"" + *recipe + "\")");
  }
  SetEnum(weights_dtype, "weights-dtype", "plan.dtypes.weights", &p.dtypes.weights, d);
  SetEnum(grads_dtype, "grads-dtype", "plan.dtypes.grads", &p.dtypes.grads, d);
  SetEnum(master_dtype, "master-dtype", "plan.dtypes.master_weights", &p.dtypes.master_weights, d);
  SetEnum(moments_dtype, "moments-dtype", "plan.dtypes.optimizer_states", &p.dtypes.optimizer_states, d);
  if (schedule) {
    SetEnum(schedule, "schedule", "plan.schedule", &p.schedule, d);
  } else if (!from_file && p.vpp > 1) {
    p.schedule = core::Schedule::kInterleaved;
    notes->push_back("schedule interleaved (because --vpp > 1)");
  }
  if (recompute_modules && !core::ParseRecomputeModules(*recompute_modules, &p.recompute_modules))
    d->Error("--recompute-modules", "must list distinct modules, comma-separated, each one of " +
                                        core::Choices<core::RecomputeModule>() + " (got \"" + *recompute_modules +
                                        "\")");
  if (offload_modules && !core::ParseOffloadModules(*offload_modules, &p.offload_modules))
    d->Error("--offload-modules", "must list distinct modules, comma-separated, each one of " +
                                      core::Choices<core::OffloadModule>() + " (got \"" + *offload_modules + "\")");
  if (placement && !core::ParsePlacement(*placement, &p.placement))
    d->Error("--placement",
             "must order tp, cp, ep, dp, pp once each, e.g. tp-cp-ep-dp-pp (got \"" + *placement + "\")");
  if (gpus) p.gpus = *gpus;
  if (dp) {
    p.dp = *dp;
  } else if (!from_file && gpus && *gpus > 0 && p.tp > 0 && p.pp > 0 && p.cp > 0) {
    // (gpus <= 0 derives no dp: plan.gpus's own error says it, without a plan.dp echo of it)
    const int64_t mp = p.tp * p.pp * p.cp;
    if (*gpus % mp == 0) {
      p.dp = *gpus / mp;
      notes->push_back("dp " + std::to_string(p.dp) + " (gpus/(tp*pp*cp))");
    } else {
      // Said here, where dp would have come from: the plan's own check would report dp = 1.
      d->Error("--gpus", std::to_string(*gpus) + " must be a multiple of tp*pp*cp = " + std::to_string(p.tp) + "*" +
                             std::to_string(p.pp) + "*" + std::to_string(p.cp) + " = " + std::to_string(mp) +
                             " (dp = gpus/(tp*pp*cp) is a whole number; or give --dp)");
    }
  }
  if (!gpus && !from_file) {
    if (dp || tp || pp || cp) {
      p.gpus = p.tp * p.pp * p.dp * p.cp;
      notes->push_back("gpus " + std::to_string(p.gpus) + " (tp*pp*dp*cp)");
    } else {
      d->Error("--gpus", "is required (or give --dp/--tp/--pp/--cp, or --plan)");
    }
  }
  if (seq) p.seq_len = *seq;
  else if (!from_file) {
    p.seq_len = m.max_seq;
    notes->push_back("seq " + std::to_string(p.seq_len) + " (the model's max_seq; --seq to change)");
  }
  if (gbs && gbs_tokens) d->Error("--gbs-tokens", "give either --gbs (sequences) or --gbs-tokens, not both");
  if (gbs) {
    p.global_batch = *gbs;
  } else if (gbs_tokens) {
    if (p.seq_len <= 0 || *gbs_tokens <= 0 || *gbs_tokens % p.seq_len != 0)
      d->Error("--gbs-tokens",
               std::to_string(*gbs_tokens) + " must be a positive multiple of seq=" + std::to_string(p.seq_len));
    else p.global_batch = *gbs_tokens / p.seq_len;
  } else if (!from_file) {
    p.global_batch = p.micro_batch * p.dp * p.pp;
    notes->push_back("global batch " + std::to_string(p.global_batch) +
                     " sequences (mbs*dp*pp: one pipeline fill; --gbs to change)");
  }
  if (!sp && sw) p.sequence_parallel = sw->sequence_parallel && p.tp > 1;
  else if (!sp && !from_file) core::ApplyDefaultSequenceParallel(&p, notes);
  if (sw)
    if (std::string said = core::ApplyStackPipelineSharding(*sw, &p); !said.empty()) notes->push_back(said);
  if (sw && !recompute_early_stop)
    if (std::string said = core::ApplyStackRecomputeEarlyStop(*sw, m, &p); !said.empty()) notes->push_back(said);
  if (sw && !fp8_param_gather)
    if (std::string said = core::ApplyStackFp8ParamGather(*sw, &p); !said.empty()) notes->push_back(said);
}

bool PlanFlags::Resolve(core::Scenario* out, Diagnostics* d, std::vector<std::string>* notes) const {
  core::Scenario s;
  bool from_file = false;
  if (!ResolveSources(&s, &from_file, d, notes)) return false;
  ApplyModelFlags(&s.model, d, notes);
  ApplyPlanFlags(from_file, &s.model, &s.plan, d, notes);
  const core::ModelSpec& m = s.model;
  core::PlanSpec& p = s.plan;
  core::ApplyDefaultStageSplit(m, &p, notes);
  // The default precision (bf16) on a GPU without bf16 (V100): fp16, said; a precision the user,
  // a stack or a plan file chose is kept and validated as given.
  if (!from_file && !precision && !stack) core::ApplyDefaultPrecision(s.gpu, &p, notes);
  if (d->has_errors()) return false;
  core::ValidatePlan(p, m, s.gpu, s.cluster, d);
  if (d->has_errors()) return false;
  *out = std::move(s);
  return true;
}

bool ResolveOrReport(const PlanFlags& flags, core::Scenario* s, std::vector<std::string>* notes,
                     std::vector<std::string>* warnings, int* exit_code) {
  Diagnostics d;
  const bool ok = flags.Resolve(s, &d, notes);
  bool usage = false;
  for (const auto& item : d.all()) {
    if (item.severity == core::Diagnostic::Severity::kWarning) {
      warnings->push_back(item.ToString());
      continue;
    }
    std::cerr << "error: " << item.ToString() << "\n";
    if (item.path.rfind("--", 0) == 0) usage = true;
  }
  if (!ok) *exit_code = usage ? 2 : 1;
  return ok;
}

}  // namespace meshplan::cli
