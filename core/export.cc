#include "core/export.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace meshplan::core {

namespace {

using OJson = nlohmann::ordered_json;

// A plan the framework cannot run as planned: "<framework> (<commit>): <rule>; nearest plan it
// runs: <flags>".
Status Refusal(const char* framework, const char* commit, const std::string& rule, const std::string& nearest) {
  return Status::InvalidArgument(std::string(framework) + " (" + commit + "): " + rule +
                                 "; nearest plan it runs: " + nearest);
}

// torchtitan's TP is PyTorch's DTensor styles (PlanSpec::dtensor_tp): a plan costed as Megatron's
// is exported with this said.
constexpr const char* kTorchtitanTpNote =
    "tensor parallelism: torchtitan runs PyTorch's DTensor styles, whose sequence-dimension copies and float8 "
    "gathers this plan was costed without (--dtensor-tp, or --stack torchtitan-2024/-2025, costs them)";
// The TOML exporter's torchtitan runs CP through PyTorch's context_parallel (PlanSpec::torch_cp),
// the rotate method handed to set_rotate_method; a plan costed as Transformer Engine's is exported
// with this said.
constexpr const char* kTorchtitanCpNote =
    "context parallelism: this torchtitan runs PyTorch's context_parallel, whose ring copies, fp32 merges and fp32 "
    "dK/dV ring this plan was costed without (--torch-cp, or --stack torchtitan-2024/-2025, costs them)";

// What neither torchtitan exporter writes (the TOML one and the Python one alike): Transformer
// Engine's TP overlap, NVFP4, layers kept out of the float8 conversion. `refuse` is the exporter's
// (its commit). OK when the plan has none of them.
template <class Refuse>
Status TorchtitanRefusal(const PlanSpec& p, const Refuse& refuse) {
  if (p.tp > 1 && p.tp_overlap == TpOverlap::kFull)
    return refuse(
        "Transformer Engine's userbuffers (tp_overlap full) are Megatron's; torchtitan overlaps TP with "
        "PyTorch's AsyncTP",
        "--tp-overlap async");
  if (p.precision == Dtype::kNvfp4)
    return refuse("this exporter maps no NVFP4 recipe for torchtitan (it writes torchao's float8 converter for fp8)",
                  "--precision fp8");
  if (p.HasBf16Layers())
    return refuse("this exporter keeps no layer out of torchao's float8 conversion (plan.bf16_layers_at_start/_at_end)",
                  "no --bf16-layers-at-start/--bf16-layers-at-end");
  if (p.fp8_attention)
    return refuse(
        "torchao's float8 converter quantizes the linear layers only; the attention stays 16-bit "
        "(plan.fp8_attention is Transformer Engine's)",
        "the plan without --fp8-attention");
  if (p.placement != PlanSpec{}.placement)
    return refuse(
        "this exporter writes the parallel degrees only; torchtitan orders its device mesh itself "
        "(plan.placement " +
            PlacementString(p.placement) + ")",
        "--placement tp-cp-ep-dp-pp");
  return Status::Ok();
}

// The model's MoE layers as a run-length Python list expression, "([0]*3+[1]*58)"; "" when every
// layer is MoE (Megatron's default --moe-layer-freq 1).
std::string MoeLayerPattern(const ModelSpec& m) {
  std::vector<std::pair<int, int64_t>> runs;
  for (int64_t l = 0; l < m.layers; ++l) {
    const int moe = m.IsMoeLayer(l) ? 1 : 0;
    if (runs.empty() || runs.back().first != moe) runs.push_back({moe, 0});
    ++runs.back().second;
  }
  if (runs.size() == 1 && runs.front().first == 1) return "";
  std::string out = "(";
  for (size_t i = 0; i < runs.size(); ++i)
    out += (i ? "+[" : "[") + std::to_string(runs[i].first) + "]*" + std::to_string(runs[i].second);
  return out + ")";
}

// Blackwell and later (compute capability 10+): B200, B300, GB200, GB300.
bool IsBlackwellOrLater(const GpuSpec& g) { return ComputeCapabilityMajor(g) >= 10; }

// The model torchtitan builds: a flavor of one of its model definitions, matched by preset and
// checked against its layers and hidden size (torchtitan/models/<name>/__init__.py, at both
// commits), with the function that configures it in torchtitan's config_registry at
// kTorchtitanPythonCommit ("" where there is none: Qwen3 235B-A22B has a flavor, not a
// function, and is derived from the 30B-A3B function), and the longest sequence its RoPE takes
// there (models/common/decoder.py:216-225 raises beyond it).
struct TitanFlavor {
  const char* preset;
  const char* name;
  const char* flavor;
  int64_t layers, hidden;
  const char* registry_function;
  int64_t max_context;
};
const TitanFlavor* TitanFlavorOf(const ModelSpec& m) {
  static constexpr TitanFlavor kFlavors[] = {
      {"llama3-8b", "llama3", "8B", 32, 4096, "llama3_8b", 131072},
      {"llama3-70b", "llama3", "70B", 80, 8192, "llama3_70b", 131072},
      {"llama3-405b", "llama3", "405B", 126, 16384, "llama3_405b", 131072},
      {"deepseek-v3", "deepseek_v3", "671B", 61, 7168, "deepseek_v3_671b", 16384},
      {"gpt-oss-120b", "gpt_oss", "120b", 36, 2880, "gpt_oss_120b", 131072},
      {"qwen3-30b-a3b", "qwen3", "30B-A3B", 48, 2048, "qwen3_30b_a3b", 40960},
      {"qwen3-235b-a22b", "qwen3", "235B-A22B", 94, 4096, "", 40960},
  };
  for (const TitanFlavor& f : kFlavors)
    if (m.name == f.preset && m.layers == f.layers && m.hidden == f.hidden) return &f;
  return nullptr;
}

std::string Join(const std::vector<int64_t>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

// Layers per chunk, even splits written out.
std::vector<int64_t> ChunkLayers(const ModelSpec& m, const PlanSpec& p) {
  if (!p.stage_layers.empty()) return p.stage_layers;
  const int64_t chunks = p.pp * p.vpp;
  return std::vector<int64_t>(static_cast<size_t>(chunks), m.layers / chunks);
}

}  // namespace

// Megatron-LM (pretrain_gpt.py / Megatron-Core) arguments, one per line, for the commit named in
// kMegatronCommit; every rule cited below is megatron/training/arguments.py's (or the file named)
// at that commit.
Result<std::string> ExportMegatron(const Scenario& s) {
  const ModelSpec& m = s.model;
  const PlanSpec& p = s.plan;
  std::vector<std::string> args, notes, env;
  auto arg = [&](const std::string& a) { args.push_back(a); };
  auto refuse = [](const std::string& rule, const std::string& nearest) {
    return Refusal("megatron", kMegatronCommit, rule, nearest);
  };
  // What Megatron-LM cannot express, before anything is written.
  // Its CPU offloading keeps the saved activations of layers that do not recompute
  // (--cpu-offloading-num-layers; refused beside recomputation, transformer_config.py); it has no
  // way to keep full recomputation's checkpoints in host memory.
  if (p.offload_checkpoints)
    return refuse(
        "no checkpoints in host memory (Megatron-LM's --cpu-offloading offloads the activations of layers that "
        "do not recompute, transformer_config.py)",
        "--offload-activations N with --recompute none, or the checkpoints on the GPU");
  // Its rank orders (initialize.py: order "tp-cp-ep-dp-pp", or "tp-cp-ep-pp-dp" with
  // --use-tp-pp-dp-mapping).
  std::vector<Axis> dp_last;
  ParsePlacement("tp-cp-ep-pp-dp", &dp_last);
  if (p.placement != PlanSpec{}.placement && p.placement != dp_last)
    return refuse(
        "Megatron-LM orders its ranks tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with --use-tp-pp-dp-mapping "
        "(plan.placement " +
            PlacementString(p.placement) + ")",
        "--placement tp-cp-ep-dp-pp or tp-cp-ep-pp-dp");
  if (p.Flushes() > 1)
    return refuse("Megatron-LM's pipeline schedules run every microbatch of the step in one flush (plan.pp_flushes)",
                  "--pp-flushes 1");
  if (p.tp > 1 && p.dtensor_tp)
    return refuse("Megatron-LM runs Megatron-Core's tensor parallelism, not PyTorch's DTensor styles (plan.dtensor_tp)",
                  "--no-dtensor-tp");
  if (p.cp > 1 && p.torch_cp)
    return refuse(
        "Megatron-LM runs Transformer Engine's context parallelism, not PyTorch's context_parallel (plan.torch_cp)",
        "--no-torch-cp");
  if (p.tp > 1 && p.tp_overlap == TpOverlap::kAsync)
    return refuse(
        "no PyTorch AsyncTP (torch.compile's micro-pipeline TP): Megatron-LM overlaps TP through Transformer "
        "Engine's userbuffers (--tp-comm-overlap)",
        "--tp-overlap full");
  // Megatron-LM's losses: the eager vocab_parallel_cross_entropy (fused, no flag) or
  // --cross-entropy-loss-fusion with --cross-entropy-fusion-impl native|te (arguments.py); not
  // torchtitan's upcast or compiled loss, FlashAttention's Triton one or a plain bf16 one.
  if (p.cross_entropy == CrossEntropy::kUpcast || p.cross_entropy == CrossEntropy::kFlash ||
      p.cross_entropy == CrossEntropy::kCompiled || p.cross_entropy == CrossEntropy::kPlain)
    return refuse(std::string("no ") + Name(p.cross_entropy) +
                      " loss: Megatron-LM runs its vocab_parallel_cross_entropy (eager, or fused with "
                      "--cross-entropy-loss-fusion --cross-entropy-fusion-impl native|te)",
                  "--cross-entropy fused");
  if (m.Hybrid())
    return refuse(
        "a hybrid model (model.hybrid_pattern) trains through Megatron-LM's hybrid entry point with "
        "--hybrid-layer-pattern and the Mamba arguments, which this export does not write (it writes "
        "pretrain_gpt.py's)",
        "a transformer model, e.g. --model llama3-8b");
  if (p.optimizer == Optimizer::kAdam8bit)
    return refuse(
        "--optimizer has no 8-bit Adam (choices adam, sgd, muon, dist_muon, lion, soap, adaptive_muon: "
        "arguments.py:2913)",
        "--optimizer adamw");
  // Muon: bf16 only, its states sharded layer by layer (dist_muon) or not at all
  // (megatron/core/optimizer/muon.py: "muon with fp16 is not supported", "muon with dist optimizer
  // is not supported").
  if (p.optimizer == Optimizer::kMuon && p.precision == Dtype::kFp16)
    return refuse("Muon runs without fp16 (megatron/core/optimizer/muon.py)", "--precision bf16");
  if (p.optimizer == Optimizer::kMuon && (p.zero >= 2 || p.offload_optimizer != OffloadTarget::kNone))
    return refuse(
        "Muon shards its states layer by layer (--optimizer dist_muon, ZeRO-1's memory) or not at all: no "
        "Megatron-FSDP, distributed optimizer or optimizer offload (megatron/core/optimizer/muon.py)",
        "--zero 1 --offload-optimizer none");
  if (p.offload_optimizer == OffloadTarget::kNvme || p.offload_params != OffloadTarget::kNone)
    return refuse("no NVMe or parameter offload (only --optimizer-cpu-offload, arguments.py:2918)",
                  "--offload-optimizer cpu --offload-params none");
  if (p.offload_optimizer == OffloadTarget::kCpu && p.zero == 0)
    return refuse(
        "--optimizer-cpu-offload needs --use-precision-aware-optimizer (arguments.py:1884), which needs the "
        "distributed optimizer (megatron/core/optimizer/__init__.py:1057)",
        "--zero 1 with the optimizer offloaded");
  // Where the router's probabilities weight an MoE layer's tokens (PlanSpec::moe_probs): this
  // commit descends from 2659630721 (2025-04-09, first in core_v0.13.0), which moved the weighting
  // from the unpermutation into the experts' activation (experts.py bias_act_func): fused into
  // SwiGLU under --bias-swiglu-fusion (the default), else the activation's output multiplied and
  // kept; GELU experts always the latter (the fused weighted path takes SwiGLU and quick-GeGLU only).
  if (m.moe) {
    const bool gated = m.mlp != MlpKind::kGelu;
    if (p.moe_probs == MoeProbs::kUnpermute)
      return refuse(
          "the router's probabilities weight the experts' activation since 2659630721 (experts.py "
          "bias_act_func), not the unpermutation (plan.moe_probs unpermute: Megatron-Core before 0.13)",
          gated ? "--moe-probs fused" : "--moe-probs activation");
    if (!gated && p.moe_probs == MoeProbs::kFused)
      return refuse(
          "GELU experts multiply the activation's output by the probabilities (experts.py bias_act_func "
          "fuses the weighting into SwiGLU and quick-GeGLU only)",
          "--moe-probs activation");
  }
  // Megatron-Core runs 1F1B or interleaved 1F1B (get_forward_backward_func,
  // megatron/core/pipeline_parallel/schedules.py:161-168 at the commit).
  if (p.pp > 1 &&
      (p.schedule == Schedule::kGpipe || p.schedule == Schedule::kZeroBubble || p.schedule == Schedule::kDualPipe))
    return refuse(std::string("no ") + Name(p.schedule) +
                      " schedule: Megatron-Core runs 1F1B or interleaved 1F1B "
                      "(megatron/core/pipeline_parallel/schedules.py:161-168)",
                  "--schedule 1f1b");
  // The parameter all-gather overlaps the forward only beside the overlapped gradient reduction
  // (arguments.py:1028-1029).
  if (p.zero >= 1 && p.zero <= 2 && p.dp * p.cp > 1 && p.overlap_param_gather && !p.overlap_grad_reduce)
    return refuse("--overlap-param-gather needs --overlap-grad-reduce (arguments.py:1028-1029)",
                  "--no-overlap-param-gather");
  // HSDP: the optimizer (ZeRO-1) or Megatron-FSDP's state (ZeRO-2/3) sharded inside groups of
  // hsdp_shard_size data-parallel ranks and replicated over dp*cp/hsdp_shard_size instances
  // (--num-distributed-optimizer-instances, arguments.py:3216; Megatron-FSDP turns Hybrid FSDP on
  // when it is above 1, megatron/core/distributed/fsdp/mcore_fsdp_adapter.py:346). The expert
  // data-parallel group must divide the same way (megatron/core/parallel_state.py:1447-1449).
  const int64_t instances =
      p.sharding == Sharding::kHsdp && p.hsdp_shard_size > 0 ? p.dp * p.cp / p.hsdp_shard_size : 1;
  if (instances > 1 && m.moe && p.ep > 1) {
    const int64_t expert_dp = p.tp * p.cp * p.dp / (p.ep * p.etp);
    if (expert_dp % instances != 0)
      return refuse("the expert data-parallel size " + std::to_string(expert_dp) +
                        " must be divisible by --num-distributed-optimizer-instances " + std::to_string(instances) +
                        " (megatron/core/parallel_state.py:1447-1449)",
                    "--hsdp-shard with dp*cp/shard dividing " + std::to_string(expert_dp));
  }
  // Megatron-FSDP for ZeRO-2 and ZeRO-3: PyTorch FSDP2 refuses pipeline and expert parallelism
  // and tied embeddings (arguments.py:1033-1045); Megatron-FSDP takes them (arguments.py:1118).
  const bool fsdp = p.zero >= 2;
  // Model.
  arg("--num-layers " + std::to_string(m.layers));
  arg("--hidden-size " + std::to_string(m.hidden));
  arg("--num-attention-heads " + std::to_string(m.heads));
  if (m.ffn_hidden > 0) arg("--ffn-hidden-size " + std::to_string(m.ffn_hidden));
  if (!m.mla && m.head_dim * m.heads != m.hidden) arg("--kv-channels " + std::to_string(m.head_dim));
  if (m.mla) {
    // Multi-latent attention (TransformerConfig.multi_latent_attention, transformer_config.py:288;
    // the ranks and head dimensions, arguments.py:3548-3556); exclusive with GQA (1973).
    arg("--multi-latent-attention");
    if (m.mla->q_lora_rank > 0) arg("--q-lora-rank " + std::to_string(m.mla->q_lora_rank));
    arg("--kv-lora-rank " + std::to_string(m.mla->kv_lora_rank));
    arg("--qk-head-dim " + std::to_string(m.mla->qk_nope_head_dim));
    arg("--qk-pos-emb-head-dim " + std::to_string(m.mla->qk_rope_head_dim));
    arg("--v-head-dim " + std::to_string(m.mla->v_head_dim));
  } else if (m.kv_heads != m.heads) {
    arg("--group-query-attention");
    arg("--num-query-groups " + std::to_string(m.kv_heads));
  }
  if (m.mlp == MlpKind::kSwiglu) arg("--swiglu");
  if (m.norm == NormKind::kRmsNorm) arg("--normalization RMSNorm");
  if (m.qk_norm) arg("--qk-layernorm");  // TransformerConfig.qk_layernorm (transformer_config.py:259)
  if (m.chunked_attention)
    return refuse(
        "no chunked attention in pretrain_gpt.py's layers (Megatron-Bridge's Llama4SelfAttention "
        "chunkifies; TransformerConfig has a sliding window_size only, transformer_config.py)",
        "a model without model.chunked_attention");
  if (m.sliding_window > 0) {
    // TransformerConfig.window_size (left, right) and window_attn_skip_freq (every N-th layer global,
    // transformer/utils.py is_layer_window_attention). Transformer Engine's left window counts the
    // keys before the query, meshplan's window the query too: w keys are (w - 1, 0).
    arg("--window-size " + std::to_string(m.sliding_window - 1) + ",0");
    if (m.global_attention_every > 0) arg("--window-attn-skip-freq " + std::to_string(m.global_attention_every));
  }
  if (m.position == PositionKind::kRope) arg("--position-embedding-type rope");
  if (m.bias == BiasKind::kNone) arg("--disable-bias-linear");
  if (!m.tied_embeddings) arg("--untie-embeddings-and-output-weights");
  arg("--seq-length " + std::to_string(p.seq_len));
  // The vocabulary the plan costs (PlanSpec::vocab_divisible_by): Megatron pads to a multiple of
  // this times TP, 128 unless told (_vocab_size_with_padding).
  if (p.vocab_divisible_by != 128) arg("--make-vocab-size-divisible-by " + std::to_string(p.vocab_divisible_by));
  arg("--max-position-embeddings " + std::to_string(std::max(m.max_seq, p.seq_len)));
  if (m.moe) {
    arg("--num-experts " + std::to_string(m.moe->experts));
    arg("--moe-router-topk " + std::to_string(m.moe->top_k));
    arg("--moe-ffn-hidden-size " + std::to_string(m.moe->expert_ffn_hidden));
    // Latent MoE: TransformerConfig.moe_latent_size (transformer_config.py:952), an argument as
    // every TransformerConfig field is.
    if (m.moe->latent_size > 0) arg("--moe-latent-size " + std::to_string(m.moe->latent_size));
    if (m.moe->shared_experts > 0)
      arg("--moe-shared-expert-intermediate-size " +
          std::to_string(m.moe->shared_experts * m.moe->shared_expert_ffn_hidden));
    // Which layers are MoE, as a Python list expression (arguments.py:3520), when not all are.
    const std::string pattern = MoeLayerPattern(m);
    if (!pattern.empty()) arg("--moe-layer-freq \"" + pattern + "\"");
    // The router (transformer_config.py:808, 816): sigmoid scores; the score-correction bias of
    // aux-loss-free balancing, which Megatron allows with sigmoid only (2617).
    if (m.moe->router == RouterKind::kSigmoid) arg("--moe-router-score-function sigmoid");
    if (m.moe->router_bias && m.moe->router == RouterKind::kSigmoid) arg("--moe-router-enable-expert-bias");
    else if (m.moe->router_bias)
      notes.push_back("router bias of a softmax router: not mapped (Megatron's expert bias needs sigmoid scores)");
    // A softmax router choosing one expert needs the pre-softmax order (transformer_config.py:2662).
    if (m.moe->router == RouterKind::kSoftmax && m.moe->top_k == 1) arg("--moe-router-pre-softmax");
    // The weighting outside the SwiGLU kernel: its output kept (plan.moe_probs activation). The
    // flag is TransformerConfig.bias_activation_fusion, which every other SwiGLU MLP reads too.
    if (m.mlp != MlpKind::kGelu && p.moe_probs == MoeProbs::kActivation) {
      arg("--no-bias-swiglu-fusion");
      if (!pattern.empty() || m.moe->shared_experts > 0)
        notes.push_back(
            "moe probs activation: --no-bias-swiglu-fusion also runs the dense layers' and shared experts' "
            "SwiGLU unfused (bias_activation_fusion), which the plan costs fused (plan.elementwise)");
    }
  }
  if (m.mtp_layers > 0) arg("--mtp-num-layers " + std::to_string(m.mtp_layers));
  if (m.mtp_shared) arg("--mtp-use-repeated-layer");  // transformer_config.py:82
  // The loss and the output layer's weight gradient as the plan costs them (core/specs.h).
  const bool te_loss = p.cross_entropy == CrossEntropy::kTe || p.cross_entropy == CrossEntropy::kTeInplace;
  if (p.cross_entropy == CrossEntropy::kNative || te_loss) {
    arg("--cross-entropy-loss-fusion");
    arg(te_loss ? "--cross-entropy-fusion-impl te" : "--cross-entropy-fusion-impl native");
    // The flag cannot pick between the two: the installed Transformer Engine does (#3193, v2.18).
    if (p.cross_entropy == CrossEntropy::kTeInplace)
      notes.push_back("cross entropy te-inplace: Transformer Engine 2.17 or older (2.18 keeps an fp32 gradient)");
    else if (p.cross_entropy == CrossEntropy::kTe)
      notes.push_back("cross entropy te: Transformer Engine 2.18 or newer (older ones write the gradient in place)");
  }
  if (p.deferred_head_wgrad > 0) {
    arg("--defer-embedding-wgrad-compute");
    // Megatron's 0 defers every microbatch, which is the plan's count when it equals the step's.
    arg("--wgrad-deferral-limit " +
        std::to_string(p.deferred_head_wgrad >= p.Microbatches() ? 0 : p.deferred_head_wgrad));
  }
  // Parallelism.
  arg("--tensor-model-parallel-size " + std::to_string(p.tp));
  arg("--pipeline-model-parallel-size " + std::to_string(p.pp));
  // The split: Megatron places first/last-stage counts and splits the rest evenly; any other
  // split (uneven middle stages, or uneven with interleaving) is a --pipeline-model-parallel-layout
  // (arguments.py:3103): the virtual stages in model order, E on the first, the MTP layers and L
  // on the last; it excludes the first/last counts (transformer_config.py:2245) and the vpp
  // arguments (arguments.py:926-938).
  bool layout = false;
  if (!p.stage_layers.empty()) {
    const std::vector<int64_t> chunks = ChunkLayers(m, p);
    const int64_t first = chunks.front(), last = chunks.back();
    bool middle_even = p.vpp == 1;
    for (size_t i = 1; i + 1 < chunks.size(); ++i) middle_even &= chunks[i] == chunks[1];
    if (middle_even) {
      arg("--decoder-first-pipeline-num-layers " + std::to_string(first));
      arg("--decoder-last-pipeline-num-layers " + std::to_string(last));
    } else {
      std::string text;
      for (size_t i = 0; i < chunks.size(); ++i) {
        if (i > 0) text += "|";
        if (i == 0) text += "E";
        if (chunks[i] > 0) text += chunks[i] == 1 ? "t" : "t*" + std::to_string(chunks[i]);
        if (i + 1 == chunks.size()) text += std::string(static_cast<size_t>(m.mtp_layers), 'm') + "L";
      }
      arg("--pipeline-model-parallel-layout \"" + text + "\"");
      layout = true;
    }
  }
  if (p.vpp > 1 && !layout) {
    if (p.stage_layers.empty())
      arg("--num-layers-per-virtual-pipeline-stage " + std::to_string(m.layers / (p.pp * p.vpp)));
    else arg("--num-virtual-stages-per-pipeline-rank " + std::to_string(p.vpp));
  }
  // The tunable interleaved schedule (arguments.py --microbatch-group-size-per-virtual-pipeline-stage;
  // its rules are the plan's, core/validate.cc).
  if (p.schedule == Schedule::kInterleaved && p.vpp_group > 0)
    arg("--microbatch-group-size-per-virtual-pipeline-stage " + std::to_string(p.vpp_group));
  if (p.cp > 1) {
    arg("--context-parallel-size " + std::to_string(p.cp));
    // megatron/training/arguments.py:3221 (d98e8a64): p2p (the ring), a2a (Ulysses), allgather.
    arg(std::string("--cp-comm-type ") + (p.cp_kind == CpKind::kRing        ? "p2p"
                                          : p.cp_kind == CpKind::kAllGather ? "allgather"
                                                                            : "a2a"));
  }
  if (p.ep > 1) {
    arg("--expert-model-parallel-size " + std::to_string(p.ep));
    // The dispatcher meshplan costs (transformer_config.py:891, 898: Megatron's own default is
    // allgather, which meshplan does not cost); flex with its default DeepEP backend.
    arg(std::string("--moe-token-dispatcher-type ") + (p.moe_dispatcher == MoeDispatcher::kFlex ? "flex" : "alltoall"));
    // Round-robin routing is a benchmark's fixed gate (NeMo AutoModel's FakeBalancedGate), not a
    // router Megatron-LM has: its forced load balancing draws random scores (router.py).
    if (p.moe_routing == MoeRouting::kRoundRobin)
      notes.push_back(
          "moe_routing round-robin (NeMo AutoModel's fake balanced gate) has no Megatron-LM flag: its trained router "
          "routes as the data does, --moe-router-force-load-balancing at random (moe_routing uniform)");
  }
  if (p.etp > 1 || (m.moe && p.tp > 1)) arg("--expert-tensor-parallel-size " + std::to_string(p.etp));
  if (p.sequence_parallel && p.tp > 1) arg("--sequence-parallel");
  if (p.tp_overlap == TpOverlap::kFull && p.tp > 1) arg("--tp-comm-overlap");
  // Data parallel and ZeRO.
  if (fsdp) {
    arg("--use-megatron-fsdp");
    arg(std::string("--data-parallel-sharding-strategy ") + (p.zero == 3 ? "optim_grads_params" : "optim_grads"));
    arg("--ckpt-format fsdp_dtensor");  // Megatron-FSDP requires it (arguments.py:1169)
  } else if (p.zero == 1 && p.optimizer != Optimizer::kMuon) {
    // Muon shards its states layer by layer instead (--optimizer dist_muon, below): Megatron-Core
    // refuses Muon with the distributed optimizer (optimizer/muon.py).
    arg("--use-distributed-optimizer");
  }
  if (instances > 1) {
    arg("--num-distributed-optimizer-instances " + std::to_string(instances));
    // The outer (replica) group holds whole copies: Megatron-FSDP's default, written out
    // (arguments.py:3193; "optim" would shard the optimizer across replicas too).
    if (fsdp) arg("--outer-dp-sharding-strategy no_shard");
  }
  if (p.overlap_grad_reduce && p.dp * p.cp > 1) arg("--overlap-grad-reduce");
  if (!p.grad_accum_fusion) arg("--no-gradient-accumulation-fusion");
  if (!p.grad_prescale && p.zero < 3) arg("--ddp-average-in-collective");
  if (p.ep_overlap) arg("--overlap-moe-expert-parallel-comm");
  if (p.delay_wgrad) arg("--delay-wgrad-compute");
  if (p.moe_router_padding) arg("--moe-router-padding-for-quantization");
  // --overlap-param-gather needs the distributed optimizer or Megatron-FSDP and
  // --overlap-grad-reduce (arguments.py:1024-1029).
  if (p.zero >= 1 && p.optimizer != Optimizer::kMuon && p.overlap_grad_reduce && p.overlap_param_gather &&
      p.dp * p.cp > 1)
    arg("--overlap-param-gather");
  if (p.offload_optimizer == OffloadTarget::kCpu) {
    arg("--use-precision-aware-optimizer");  // needed by the offload (arguments.py:1884)
    arg("--optimizer-cpu-offload");
  }
  // Activation offloading: the TransformerConfig field as an argument, which turns cpu_offloading
  // on (arguments.py:1950-1951); activations only by default (model_parallel_config.py:471-474).
  if (p.offload_activation_layers > 0)
    arg("--cpu-offloading-num-layers " + std::to_string(p.offload_activation_layers));
  // Fine-grained activation offloading: TransformerConfig's fine_grained_activation_offloading and
  // offload_modules (a list[str], nargs "+": argument_utils.py), transformer_config.py:1323-1328.
  if (p.offload_modules != 0) {
    std::string mods = OffloadModulesString(p.offload_modules);
    std::replace(mods.begin(), mods.end(), ',', ' ');
    arg("--fine-grained-activation-offloading");
    arg("--offload-modules " + mods);
  }
  // Recompute.
  if (p.recompute == Recompute::kSelective) {
    arg("--recompute-granularity selective");
    if (p.Recomputes(RecomputeModule::kTorchtitanOp)) {
      notes.push_back(
          "recompute modules [torchtitan_op]: torchtitan's per-op policy has no Megatron-LM equivalent; "
          "the default selective recomputation (core_attn) is exported");
    } else if (p.Recomputes(RecomputeModule::kSaveQkvProj)) {
      notes.push_back(
          "recompute modules [save_qkv_proj]: MaxText's remat policy has no Megatron-LM equivalent; "
          "the default selective recomputation (core_attn) is exported");
    } else if (p.recompute_modules != kDefaultRecomputeModules) {  // space-separated (nargs *)
      std::string mods = RecomputeModulesString(p.recompute_modules);
      std::replace(mods.begin(), mods.end(), ',', ' ');
      arg("--recompute-modules " + mods);
    }
  } else if (p.recompute == Recompute::kFull) {
    arg("--recompute-granularity full");
    if (p.recompute_layers > 0) {
      arg("--recompute-method block");
      arg("--recompute-num-layers " + std::to_string(p.recompute_layers));
    } else {
      arg("--recompute-method uniform");
      arg("--recompute-num-layers 1");
    }
    if (p.recompute_early_stop)
      notes.push_back(
          "recompute early stop: Megatron-LM's checkpoint (tensor_parallel.checkpoint) is reentrant and reruns "
          "the whole layer, its MLP output projection too; the plan costs PyTorch's non-reentrant early stop");
  }
  // Batch and precision.
  arg("--micro-batch-size " + std::to_string(p.micro_batch));
  arg("--global-batch-size " + std::to_string(p.global_batch));
  if (p.precision == Dtype::kBf16) arg("--bf16");
  else if (p.precision == Dtype::kFp16) arg("--fp16");
  else if (p.precision == Dtype::kNvfp4) {
    // Transformer Engine's NVFP4 (TransformerConfig.fp4 as --fp4-format, fp4_recipe "nvfp4" by
    // default: transformer_config.py:673-679 at d98e8a64), with BF16 outside the linear layers.
    arg("--bf16");
    arg("--fp4-format e2m1");
  } else if (p.precision == Dtype::kFp8) {
    // Transformer Engine's FP8 (TransformerConfig.fp8 as --fp8-format, fp8_recipe:
    // transformer_config.py:587-600): the plan's scaling as the recipe of the same name.
    arg("--bf16");
    arg("--fp8-format hybrid");
    arg(std::string("--fp8-recipe ") + (p.fp8_scaling == Fp8Scaling::kCurrent ? "tensorwise"
                                        : p.fp8_scaling == Fp8Scaling::kBlock ? "blockwise"
                                                                              : "delayed"));
    // The distributed optimizer's parameter all-gather in FP8 (arguments.py:2016 at d98e8a64).
    if (p.fp8_param_gather) arg("--fp8-param-gather");
  }
  // Transformer Engine's FP8 attention (TransformerConfig.fp8_dot_product_attention as an argument).
  if (p.fp8_attention) arg("--fp8-dot-product-attention");
  if (p.placement == dp_last) arg("--use-tp-pp-dp-mapping");
  if (p.segment_nodes > 0)
    notes.push_back("launch with sbatch --segment " + std::to_string(p.segment_nodes) +
                    " (plan.segment_nodes: Slurm's topology/block plugin keeps each segment of nodes in one NVLink "
                    "domain)");
  // The layers kept in BF16: TransformerConfig's first_last_layers_bf16 and its two counts, flags
  // of the transformer group (arguments.py:2373 at d98e8a64, ArgumentGroupFactory(TransformerConfig)).
  if (p.HasBf16Layers()) {
    arg("--first-last-layers-bf16");
    arg("--num-layers-at-start-in-bf16 " + std::to_string(p.bf16_layers_at_start));
    arg("--num-layers-at-end-in-bf16 " + std::to_string(p.bf16_layers_at_end));
  }
  if (p.dtypes.grads == Dtype::kFp32) arg("--accumulate-allreduce-grads-in-fp32");
  if (p.optimizer == Optimizer::kSgdMomentum) arg("--optimizer sgd");
  else if (p.optimizer == Optimizer::kMuon) arg(p.zero >= 1 ? "--optimizer dist_muon" : "--optimizer muon");
  else arg("--optimizer adam");
  // TP or CP on GPUs before Blackwell, without FSDP or the MoE all-to-all overlap, asserts
  // CUDA_DEVICE_MAX_CONNECTIONS=1 (arguments.py:1453-1479); FSDP asserts it is not 1
  // (arguments.py:1166).
  if (fsdp) {
    notes.push_back("Megatron-FSDP: leave CUDA_DEVICE_MAX_CONNECTIONS unset (it must not be 1)");
  } else if ((p.tp > 1 || p.cp > 1) && !p.ep_overlap && !IsBlackwellOrLater(s.gpu)) {
    env.push_back("export CUDA_DEVICE_MAX_CONNECTIONS=1");
  }
  const int64_t per_node = std::max<int64_t>(1, std::min(p.gpus, s.cluster.gpus_per_node));
  std::ostringstream out;
  out << "# Megatron-LM " << kMegatronCommit << " arguments: " << m.name << " on " << p.gpus << " GPUs (tp " << p.tp
      << ", pp " << p.pp << ", dp " << p.dp << ", cp " << p.cp << ", ep " << p.ep << ")\n";
  for (const auto& n : notes) out << "# note: " << n << "\n";
  for (const auto& e : env) out << e << "\n";
  out << "torchrun --nproc-per-node " << per_node << " --nnodes " << (p.gpus + per_node - 1) / per_node
      << " pretrain_gpt.py \\\n";
  for (size_t i = 0; i < args.size(); ++i) out << "  " << args[i] << (i + 1 < args.size() ? " \\\n" : "\n");
  return out.str();
}

// torchtitan job config (TOML) for commit kTorchtitanCommit, the last that reads TOML; every rule
// cited is torchtitan's at that commit.
// Both torchtitan exports: its training loop runs a step's microbatches in one schedule run.
constexpr char kTorchtitanOneFlush[] =
    "its training loop runs the step's microbatches in one pipeline schedule run (plan.pp_flushes)";
// torchtitan gathers FP8 weights only under FSDP2 (its float8 converter's enable_fsdp_float8_all_gather),
// not with the ZeRO 1/2 optimizer plan.fp8_param_gather describes.
constexpr char kTorchtitanFp8Gather[] =
    "torchtitan all-gathers FP8 weights only under FSDP2 (float8 enable_fsdp_float8_all_gather), not with a "
    "ZeRO 1/2 distributed optimizer (plan.fp8_param_gather, Megatron-Core's --fp8-param-gather)";

Result<std::string> ExportTorchtitan(const Scenario& s) {
  const ModelSpec& m = s.model;
  const PlanSpec& p = s.plan;
  auto refuse = [](const std::string& rule, const std::string& nearest) {
    return Refusal("torchtitan", kTorchtitanCommit, rule, nearest);
  };
  if (Status no = TorchtitanRefusal(p, refuse); !no.ok()) return no;
  const TitanFlavor* flavor = TitanFlavorOf(m);
  if (flavor == nullptr)
    return refuse("no model definition for " + m.name +
                      " (torchtitan/models: llama3 8B/70B/405B, deepseek_v3, gpt_oss, qwen3, llama4, flux; without "
                      "[model] it trains its debug model)",
                  "a model torchtitan defines, e.g. --model llama3-8b");
  if (p.optimizer != Optimizer::kAdam && p.optimizer != Optimizer::kAdamW)
    return refuse(std::string("no ") + Name(p.optimizer) +
                      " optimizer (torchtitan/components/optimizer.py:315-316: Adam and AdamW only)",
                  "--optimizer adamw");
  // DDP (ZeRO-0) only as the only parallelism (models/llama3/infra/parallelize.py:151).
  if (p.zero == 0 && p.dp > 1 && p.tp * p.pp * p.cp * p.ep > 1)
    return refuse("\"DDP has not supported > 1D parallelism\" (torchtitan/models/llama3/infra/parallelize.py:151)",
                  "--zero 3 (FSDP2) with the same degrees");
  if (p.offload_optimizer == OffloadTarget::kNvme || p.offload_params == OffloadTarget::kNvme)
    return refuse("no NVMe offload (training.enable_cpu_offload offloads to host memory, job_config.py:270)",
                  "--offload-optimizer cpu");
  if (p.offload_activation_layers > 0)
    return refuse(
        "no activation offloading (training.enable_cpu_offload offloads FSDP's parameters, gradients and "
        "optimizer states, job_config.py:270-273)",
        "--offload-activations 0, or activation checkpointing (--recompute full)");
  if (p.offload_checkpoints)
    return refuse(
        "no checkpoints in host memory (activation checkpointing keeps them on the GPU; training.enable_cpu_offload "
        "offloads FSDP's parameters, gradients and optimizer states)",
        "the checkpoints on the GPU (without --offload-checkpoints)");
  if (p.offload_modules != 0)
    return refuse(
        "no fine-grained activation offloading (training.enable_cpu_offload offloads FSDP's parameters, "
        "gradients and optimizer states)",
        "the activations on the GPU (without --offload-modules), or activation checkpointing");
  // Context parallelism is PyTorch's ring attention, the K/V shards passed on by all-to-all (a
  // ring) or all-gathered (Parallelism.context_parallel_rotate_method, job_config.py:446), never
  // Ulysses' head split.
  if (p.cp > 1 && p.cp_kind == CpKind::kUlysses)
    return refuse(
        "context parallelism is ring attention, its K/V shards rotated or all-gathered "
        "(context_parallel_rotate_method, job_config.py:446)",
        "--cp-kind ring");
  // FSDP2 shards parameters, gradients and optimizer states together, or keeps the parameters
  // gathered after the forward (fsdp_reshard_after_forward, job_config.py:336): no optimizer-only
  // sharding.
  if (p.zero == 1 && p.dp > 1)
    return refuse(
        "no optimizer-only sharding (FSDP2; fsdp_reshard_after_forward = \"never\" is ZeRO-2, "
        "job_config.py:336)",
        "--zero 2");
  // PyTorch's DualPipeV is V-shaped: two of 2 x pp stages per rank, one copy of the weights
  // ("v schedules assume 2 stages per rank", distributed/pipeline_parallel.py:455-460), not
  // DualPipe's two copies of one stage.
  if (p.pp > 1 && p.schedule == Schedule::kDualPipe)
    return refuse(
        "PyTorch's DualPipeV runs two of 2 x pp stages per rank, one copy of the weights, not DualPipe's "
        "two (\"v schedules assume 2 stages per rank\", distributed/pipeline_parallel.py:455-460)",
        "--schedule interleaved --vpp 2");
  // PyTorch's Interleaved1F1B has no microbatch groups of its own (Megatron-Core's tunable schedule).
  if (p.schedule == Schedule::kInterleaved && p.vpp_group > 0 && p.vpp_group != p.pp)
    return refuse("PyTorch's Interleaved1F1B runs no microbatch groups (plan.vpp_group, Megatron-Core's)",
                  "--vpp-group 0 with a multiple of pp microbatches per pipeline");
  if (p.Flushes() > 1) return refuse(kTorchtitanOneFlush, "--pp-flushes 1");
  if (p.fp8_param_gather) return refuse(kTorchtitanFp8Gather, "the plan without --fp8-param-gather");
  std::ostringstream out;
  std::vector<std::string> notes;
  if (p.tp > 1 && !p.dtensor_tp) notes.push_back(kTorchtitanTpNote);
  if (p.cp > 1 && !p.torch_cp) notes.push_back(kTorchtitanCpNote);
  out << "# torchtitan job config (TOML) for torchtitan " << kTorchtitanCommit
      << " (2026-02-23), the last commit that reads TOML (later commits configure in Python): " << m.name << " on "
      << p.gpus << " GPUs\n";
  // torchtitan's data parallelism is DDP (replicate) or FSDP2 (shard, ZeRO-3; with
  // reshard_after_forward = never it keeps gathered weights between forward and backward, ZeRO-2).
  int64_t replicate = 1, shard = 1;
  if (p.zero == 0) replicate = p.dp;
  else shard = p.dp;
  if (p.sharding == Sharding::kHsdp && p.hsdp_shard_size > 0) {
    shard = std::max<int64_t>(1, p.hsdp_shard_size / p.cp);
    replicate = p.dp / std::max<int64_t>(shard, 1);
  }
  const char* schedule = "1F1B";
  switch (p.schedule) {
    case Schedule::kGpipe: schedule = "GPipe"; break;
    case Schedule::k1F1B: schedule = "1F1B"; break;
    case Schedule::kInterleaved: schedule = "Interleaved1F1B"; break;
    case Schedule::kZeroBubble:
      schedule = "InterleavedZeroBubble";
      notes.push_back("zero-bubble: PyTorch's zero-bubble schedules are looped (two or more stages per rank)");
      break;
    case Schedule::kDualPipe: break;  // refused above
  }
  out << "\n[model]\n";
  out << "name = \"" << flavor->name << "\"\n";
  out << "flavor = \"" << flavor->flavor << "\"\n";
  // FP8 through torchao's Float8Linear converter (components/quantization/float8.py:238).
  if (p.precision == Dtype::kFp8) out << "converters = [\"quantize.linear.float8\"]\n";
  const int64_t local_batch = p.pp > 1 ? p.global_batch / p.dp : p.micro_batch;
  out << "\n[training]\n";
  out << "local_batch_size = " << local_batch << "\n";
  out << "global_batch_size = " << p.global_batch << "\n";
  out << "seq_len = " << p.seq_len << "\n";
  out << "mixed_precision_param = \"" << (p.precision == Dtype::kFp32 ? "float32" : "bfloat16") << "\"\n";
  if (p.offload_optimizer == OffloadTarget::kCpu || p.offload_params == OffloadTarget::kCpu) {
    out << "enable_cpu_offload = true\n";
    notes.push_back("offload: FSDP2 offloads parameters, gradients and optimizer states together");
  }
  out << "\n[parallelism]\n";
  out << "data_parallel_replicate_degree = " << replicate << "\n";
  out << "data_parallel_shard_degree = " << shard << "\n";
  if (p.zero == 2) out << "fsdp_reshard_after_forward = \"never\"\n";
  out << "tensor_parallel_degree = " << p.tp << "\n";
  const bool async_tp = p.tp > 1 && p.tp_overlap == TpOverlap::kAsync;
  if (async_tp) out << "enable_async_tensor_parallel = true\n";
  out << "pipeline_parallel_degree = " << p.pp << "\n";
  if (p.pp > 1) {
    out << "pipeline_parallel_schedule = \"" << schedule << "\"\n";
    out << "pipeline_parallel_microbatch_size = " << p.micro_batch << "\n";
    // The plan's exact split, chunk by chunk in model order (Parallelism.module_fqns_per_model_part,
    // job_config.py:367; torchtitan's own split from layers_per_stage weights the embedding and the
    // output as a layer each, distributed/pipeline_parallel.py:236-330).
    const std::vector<int64_t> chunks = ChunkLayers(m, p);
    out << "module_fqns_per_model_part = [";
    int64_t layer = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      out << (i ? ", [" : "[");
      bool first = true;
      auto item = [&](const std::string& fqn) {
        out << (first ? "" : ", ") << "\"" << fqn << "\"";
        first = false;
      };
      if (i == 0) item("tok_embeddings");
      for (int64_t k = 0; k < chunks[i]; ++k) item("layers." + std::to_string(layer++));
      if (i + 1 == chunks.size()) {
        item("norm");
        item("output");
      }
      out << "]";
    }
    out << "]\n";
  }
  out << "context_parallel_degree = " << p.cp << "\n";
  // The K/V exchange (job_config.py:446, default "allgather"; distributed/utils.py:216 hands it to
  // PyTorch's set_rotate_method): "alltoall" passes each shard to the next rank, the ring.
  if (p.cp > 1)
    out << "context_parallel_rotate_method = \"" << (p.cp_kind == CpKind::kAllGather ? "allgather" : "alltoall")
        << "\"\n";
  if (p.ep > 1) out << "expert_parallel_degree = " << p.ep << "\n";

  if (!p.sequence_parallel && p.tp > 1)
    notes.push_back("torchtitan always shards norms and dropout along the sequence with TP (sequence parallel on)");
  out << "\n[activation_checkpoint]\n";
  out << "mode = \"" << Name(p.recompute) << "\"\n";
  if (p.recompute == Recompute::kSelective) out << "selective_ac_option = \"op\"\n";
  if (p.recompute == Recompute::kSelective && !p.Recomputes(RecomputeModule::kTorchtitanOp))
    notes.push_back("recompute selective [" + RecomputeModulesString(p.recompute_modules) +
                    "]: torchtitan's selective AC \"op\" is its own per-op policy (recompute_modules torchtitan_op), "
                    "not Megatron-Core's modules");
  // Async TP needs the compiled model (distributed/tensor_parallel.py:20-23).
  if (async_tp) out << "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n";
  for (const auto& n : notes) out << "# note: " << n << "\n";
  return out.str();
}

// torchtitan configuration as a Python module for kTorchtitanPythonCommit; every rule cited is
// torchtitan's at that commit (CFG: torchtitan/config/configs.py).
Result<std::string> ExportTorchtitanPython(const Scenario& s) {
  const ModelSpec& m = s.model;
  const PlanSpec& p = s.plan;
  auto refuse = [](const std::string& rule, const std::string& nearest) {
    return Refusal("torchtitan", kTorchtitanPythonCommit, rule, nearest);
  };
  if (Status no = TorchtitanRefusal(p, refuse); !no.ok()) return no;
  const TitanFlavor* flavor = TitanFlavorOf(m);
  if (flavor == nullptr)
    return refuse("no model definition for " + m.name +
                      " (torchtitan/models: llama3 8B/70B/405B, deepseek_v3 671B, gpt_oss 120b, qwen3 30B-A3B and "
                      "235B-A22B, among others)",
                  "a model torchtitan defines, e.g. --model llama3-8b");
  // Adam, AdamW and DistMuon (components/optimizer/optimizer.py:143-146); meshplan writes the first
  // two (DistMuon's flex_shard configuration is not written).
  if (p.optimizer != Optimizer::kAdam && p.optimizer != Optimizer::kAdamW)
    return refuse(std::string("no ") + Name(p.optimizer) +
                      " optimizer written (torchtitan/components/optimizer/optimizer.py:143-146: Adam, AdamW, and "
                      "DistMuon, whose flex_shard configuration meshplan does not write)",
                  "--optimizer adamw");
  if (p.offload_optimizer == OffloadTarget::kNvme || p.offload_params == OffloadTarget::kNvme)
    return refuse("no NVMe offload (training.enable_cpu_offload offloads to host memory, CFG:70)",
                  "--offload-optimizer cpu");
  if (p.offload_activation_layers > 0)
    return refuse(
        "no activation offloading (training.enable_cpu_offload offloads FSDP's parameters, gradients and "
        "optimizer states, CFG:70-73)",
        "--offload-activations 0, or activation checkpointing (--recompute full)");
  if (p.offload_checkpoints)
    return refuse(
        "no checkpoints in host memory (activation checkpointing keeps them on the GPU; training.enable_cpu_offload "
        "offloads FSDP's parameters, gradients and optimizer states)",
        "the checkpoints on the GPU (without --offload-checkpoints)");
  if (p.offload_modules != 0)
    return refuse(
        "no fine-grained activation offloading (training.enable_cpu_offload offloads FSDP's parameters, "
        "gradients and optimizer states)",
        "the activations on the GPU (without --offload-modules), or activation checkpointing");
  // FSDP2 shards parameters, gradients and optimizer states together, or keeps the parameters
  // gathered after the forward (fsdp_reshard_after_forward "never", CFG:145): no optimizer-only
  // sharding.
  if (p.zero == 1 && p.dp > 1)
    return refuse("no optimizer-only sharding (FSDP2; fsdp_reshard_after_forward \"never\" is ZeRO-2, CFG:145)",
                  "--zero 2");
  // Context parallelism all-gathers K and V at the attention's local_map boundary and reduces
  // their gradients on the way out (models/common/decoder_sharding.py:275-284): neither the
  // head-split (Ulysses) all-to-all nor a ring.
  if (p.cp > 1 && p.cp_kind != CpKind::kAllGather)
    return refuse("context parallelism all-gathers K and V (models/common/decoder_sharding.py:275-284), no " +
                      std::string(p.cp_kind == CpKind::kUlysses ? "Ulysses" : "ring"),
                  "--cp-kind allgather");
  // TP shards the attention heads and the KV heads (models/common/decoder.py update_from_config).
  if (p.tp > 1 && m.kv_heads % p.tp != 0)
    return refuse("tensor_parallel_degree must divide the " + std::to_string(m.kv_heads) +
                      " KV heads (models/common/decoder.py:139-236)",
                  "--tp dividing " + std::to_string(m.kv_heads));
  // Expert tensor parallelism was removed: with EP the routed experts shard on EP alone, without
  // it on TP (models/common/MOE_SHARDING.md; ParallelismConfig has no expert_tensor_parallel_degree).
  if (m.moe && ((p.ep > 1 && p.etp > 1) || (p.ep == 1 && p.tp > 1 && p.etp != p.tp)))
    return refuse(
        "no expert tensor parallelism: with EP the experts shard on EP alone, without it on TP "
        "(models/common/MOE_SHARDING.md)",
        p.ep > 1 ? "--etp 1" : "--etp " + std::to_string(p.tp));
  // Pipeline schedules from PyTorch's pipelining: DualPipeV cuts the model in 2 x pp stages, one
  // copy of the weights (not DualPipe's two), and the zero-bubble schedules run two or more stages
  // per rank (distributed/pipeline_parallel.py:252-257, 551-563).
  if (p.pp > 1 && p.schedule == Schedule::kDualPipe)
    return refuse(
        "PyTorch's DualPipeV splits the model into 2 x pp stages in a V, one copy of the weights, not "
        "DualPipe's two (distributed/pipeline_parallel.py:551-563)",
        "--schedule interleaved --vpp 2");
  if (p.schedule == Schedule::kInterleaved && p.vpp_group > 0 && p.vpp_group != p.pp)
    return refuse("PyTorch's Interleaved1F1B runs no microbatch groups (plan.vpp_group, Megatron-Core's)",
                  "--vpp-group 0 with a multiple of pp microbatches per pipeline");
  if (p.Flushes() > 1) return refuse(kTorchtitanOneFlush, "--pp-flushes 1");
  if (p.fp8_param_gather) return refuse(kTorchtitanFp8Gather, "the plan without --fp8-param-gather");
  if (p.pp > 1 && p.schedule == Schedule::kZeroBubble)
    return refuse(
        "PyTorch's zero-bubble schedules run two or more stages per rank "
        "(distributed/pipeline_parallel.py:252-257), not ZB-H1's one",
        "--schedule 1f1b");
  if (p.seq_len > flavor->max_context)
    return refuse("sequence " + std::to_string(p.seq_len) + " is longer than the " +
                      std::to_string(flavor->max_context) + " tokens " + flavor->name + " " + flavor->flavor +
                      "'s RoPE takes (models/common/decoder.py:216-225)",
                  "--seq " + std::to_string(flavor->max_context));
  // Multi-token prediction: DeepSeek-V3's only, and not beside PP or CP
  // (models/deepseek_v3/mtp.py:197-206).
  const bool dsv3 = std::string(flavor->name) == "deepseek_v3";
  if (m.mtp_layers > 0 && (!dsv3 || p.pp > 1 || p.cp > 1))
    return refuse(dsv3 ? "\"MTP does not support pipeline parallelism yet\" (nor context parallelism; "
                         "models/deepseek_v3/mtp.py:197-206)"
                       : "multi-token prediction is DeepSeek-V3's only (models/deepseek_v3/mtp.py)",
                  "--mtp-layers 0");
  // FSDP (dp_shard) and its replicas (dp_replicate): ZeRO-0 is FSDP over one rank, replicated.
  int64_t replicate = 1, shard = 1;
  if (p.zero == 0) replicate = p.dp;
  else shard = p.dp;
  if (p.sharding == Sharding::kHsdp && p.hsdp_shard_size > 0) {
    shard = std::max<int64_t>(1, p.hsdp_shard_size / p.cp);
    replicate = p.dp / std::max<int64_t>(shard, 1);
  }
  // EP borrows its ranks from dp_shard x cp x tp (distributed/parallel_dims.py:187-192).
  if (p.ep > 1 && (shard * p.cp * p.tp) % p.ep != 0)
    return refuse("expert_parallel_degree " + std::to_string(p.ep) + " must divide dp_shard x cp x tp = " +
                      std::to_string(shard * p.cp * p.tp) + " (distributed/parallel_dims.py:187-192)",
                  "--ep dividing " + std::to_string(shard * p.cp * p.tp));
  // Tokens per microbatch divide over the sequence shards (trainer.py:296-308).
  const int64_t tokens_mb = p.micro_batch * p.seq_len;
  const int64_t shards = (p.sequence_parallel && p.tp > 1 ? p.tp : 1) * (p.cp > 1 ? 2 * p.cp : 1);
  if (tokens_mb % shards != 0)
    return refuse("num_tokens_per_microbatch_per_dp_rank " + std::to_string(tokens_mb) + " must divide by " +
                      std::to_string(shards) + " (tp with SP x 2 cp, trainer.py:296-308)",
                  "--seq a multiple of " + std::to_string(shards));

  std::vector<std::string> notes;
  if (p.tp > 1 && !p.dtensor_tp) notes.push_back(kTorchtitanTpNote);
  // This torchtitan's CP is not PyTorch's context_parallel (the refusal above says what it is).
  if (p.cp > 1 && p.torch_cp)
    notes.push_back(
        "context parallelism: this torchtitan all-gathers K and V at the attention's local_map boundary "
        "(models/common/decoder_sharding.py:275-284), not through PyTorch's context_parallel, whose ring copies and "
        "fp32 merges this plan was costed with (plan.torch_cp; --no-torch-cp costs without them)");
  const bool async_tp = p.tp > 1 && p.tp_overlap == TpOverlap::kAsync;
  // torch.compile fuses the norms, RoPE and activations (the plan's fused elementwise kernels) and
  // async TP needs the compiled model (CFG:306-313).
  const bool compile = p.elementwise == Elementwise::kFused || async_tp;
  const bool fp8 = p.precision == Dtype::kFp8;
  const std::string module = std::string("torchtitan.models.") + flavor->name;
  std::ostringstream out;
  out << "# torchtitan configuration (Python) for torchtitan " << kTorchtitanPythonCommit << " (2026-08-21): " << m.name
      << " on " << p.gpus << " GPUs (tp " << p.tp << ", pp " << p.pp << ", dp " << p.dp << ", cp " << p.cp << ", ep "
      << p.ep << ")\n";
  out << "# Save as meshplan_plan.py in the launch directory (or on PYTHONPATH): torchtitan takes an importable\n"
      << "# module name, not a path (torchtitan/config/manager.py:129-158). Then, on each of the " << (p.gpus + 7) / 8
      << " nodes:\n"
      << "#   torchrun --nproc-per-node " << std::min<int64_t>(p.gpus, 8) << " --nnodes " << (p.gpus + 7) / 8
      << " -m torchtitan.train --module meshplan_plan --config " << kTorchtitanPythonFunction << "\n";
  out << "from " << module << " import model_registry\n";
  if (*flavor->registry_function != '\0')
    out << "from " << module << ".config_registry import " << flavor->registry_function << "\n";
  else out << "from " << module << ".config_registry import qwen3_30b_a3b\n";
  out << "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n";
  out << "from torchtitan.trainer import Trainer\n\n\n";
  out << "def " << kTorchtitanPythonFunction << "() -> Trainer.Config:\n";
  if (*flavor->registry_function != '\0') {
    out << "    config = " << flavor->registry_function << "()\n";
  } else {
    out << "    config = qwen3_30b_a3b()  # torchtitan configures 235B-A22B by its flavor only\n";
    notes.push_back(
        "qwen3 235B-A22B: torchtitan has the flavor but no configuration function; this one starts from "
        "qwen3_30b_a3b (same tokenizer family) and swaps the model");
  }
  // The model: torchtitan's flavor, with FP8 converters and the attention backend CP needs.
  std::vector<std::string> registry_args = {"\"" + std::string(flavor->flavor) + "\""};
  if (p.cp > 1 && std::string(flavor->name) == "gpt_oss")
    registry_args.push_back("attn_backend=\"flex\"");  // CP needs FlexAttention (decoder.py:176-183)
  if (m.mtp_layers > 0) registry_args.push_back("num_mtp_layers=" + std::to_string(m.mtp_layers));
  if (fp8) {
    out << "    from torchtitan.components.quantization import Float8LinearConverter";
    if (m.moe) out << ", Float8GroupedExpertsConverter";
    out << "\n";
    std::string conv = "[Float8LinearConverter.Config(filter_fqns=[\"lm_head\"";
    if (m.moe) conv += ", \"router.gate\"";
    conv += std::string("], model_compile_enabled=") + (compile ? "True" : "False") + ")";
    if (m.moe)
      conv += std::string(", Float8GroupedExpertsConverter.Config(model_compile_enabled=") +
              (compile ? "True" : "False") + ")";
    conv += "]";
    registry_args.push_back("converters=" + conv);
    notes.push_back(std::string("fp8: torchao's rowwise dynamic scaling (recipe_name rowwise, "
                                "components/quantization/float8.py:58; the plan costs ") +
                    Name(p.fp8_scaling) +
                    " scaling); the converter is built when the configuration loads and needs torchao and an SM89+ GPU "
                    "(float8.py:77-96)");
  }
  out << "    config.model_spec = model_registry(";
  for (size_t i = 0; i < registry_args.size(); ++i) out << (i ? ", " : "") << registry_args[i];
  out << ")\n";
  // Parallelism (CFG:120-290).
  out << "    p = config.parallelism\n";
  out << "    p.data_parallel_replicate_degree = " << replicate << "\n";
  out << "    p.data_parallel_shard_degree = " << shard << "\n";
  // ZeRO-3 reshards after the forward, ZeRO-2 keeps the gathered weights to the backward; the
  // default would follow the pipeline instead (distributed/fsdp.py:112-136).
  if (p.zero >= 2) out << "    p.fsdp_reshard_after_forward = \"" << (p.zero == 3 ? "always" : "never") << "\"\n";
  out << "    p.tensor_parallel_degree = " << p.tp << "\n";
  out << "    p.enable_sequence_parallel = " << (p.sequence_parallel || p.tp == 1 ? "True" : "False") << "\n";
  out << "    p.pipeline_parallel_degree = " << p.pp << "\n";
  if (p.pp > 1) {
    out << "    p.pipeline_parallel_schedule = \""
        << (p.schedule == Schedule::kInterleaved ? "Interleaved1F1B"
            : p.schedule == Schedule::kGpipe     ? "GPipe"
                                                 : "1F1B")
        << "\"\n";
    // The step's microbatches in one accumulation step (CFG:232; trainer.py:409-428).
    out << "    p.num_pp_microbatches = " << p.Microbatches() << "\n";
    // The plan's split, part by part in model order (CFG:187; module names as
    // distributed/pipeline_parallel.py:384-387 writes them).
    const std::vector<int64_t> chunks = ChunkLayers(m, p);
    out << "    p.module_fqns_per_model_part = [";
    int64_t layer = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      out << (i ? ", [" : "[");
      bool first = true;
      auto item = [&](const std::string& fqn) {
        out << (first ? "" : ", ") << "\"" << fqn << "\"";
        first = false;
      };
      if (i == 0) item("tok_embeddings");
      for (int64_t k = 0; k < chunks[i]; ++k) item("layers." + std::to_string(layer++));
      if (i + 1 == chunks.size()) {
        item("norm");
        item("lm_head");
      }
      out << "]";
    }
    out << "]\n";
  }
  out << "    p.context_parallel_degree = " << p.cp << "\n";
  out << "    p.expert_parallel_degree = " << p.ep << "\n";
  // Tokens (CFG:37-51): G sequences of S tokens, b per microbatch; the accumulation is derived
  // (trainer.py:409-428).
  out << "    t = config.training\n";
  out << "    t.max_context_length = " << p.seq_len << "\n";
  out << "    t.num_tokens_per_microbatch_per_dp_rank = " << tokens_mb << "\n";
  out << "    t.num_tokens_per_train_step = " << p.global_batch * p.seq_len << "\n";
  out << "    t.mixed_precision_param = \"bfloat16\"\n";
  out << "    t.enable_cpu_offload = "
      << (p.offload_optimizer == OffloadTarget::kCpu || p.offload_params == OffloadTarget::kCpu ? "True" : "False")
      << "\n";
  if (p.offload_optimizer == OffloadTarget::kCpu || p.offload_params == OffloadTarget::kCpu)
    notes.push_back("offload: FSDP2 offloads parameters, gradients and optimizer states together");
  // CUDA graphs are refused beside PP and the standard EP dispatcher (trainer.py:168-199).
  if (p.pp > 1 || p.ep > 1) out << "    t.disable_cuda_graphs = True\n";
  // Recomputation (distributed/activation_checkpoint.py:332-337): none, all (FullAC) or torchtitan's
  // per-op selective policy.
  out << "    config.activation_checkpoint = "
      << (p.recompute == Recompute::kFull        ? "FullAC.Config()"
          : p.recompute == Recompute::kSelective ? "SelectiveAC.Config()"
                                                 : "None")
      << "\n";
  if (p.recompute == Recompute::kSelective && !p.Recomputes(RecomputeModule::kTorchtitanOp))
    notes.push_back("recompute selective [" + RecomputeModulesString(p.recompute_modules) +
                    "]: torchtitan's SelectiveAC is its own per-op policy (recompute_modules torchtitan_op), not "
                    "Megatron-Core's modules");
  if (p.recompute == Recompute::kFull && p.recompute_layers > 0)
    notes.push_back("recompute: FullAC wraps every layer; the plan recomputes " + std::to_string(p.recompute_layers) +
                    " per stage");
  if (p.elementwise == Elementwise::kEagerFusedNorm)
    notes.push_back(
        "elementwise eager-fused-norm: torchtitan removed its Triton RMSNorm (norm_type "
        "fused_rmsnorm) in 37c4b8181 (2025-02-06, #826); this configuration runs the norms op by op "
        "like RoPE and SwiGLU, keeping their fp32 copies (plan.elementwise eager)");
  out << "    config.compile.enable = " << (compile ? "True" : "False") << "\n";
  if (compile) out << "    config.compile.components = [\"model\", \"loss\"]\n";
  out << "    config.compile.enable_async_tensor_parallel = " << (async_tp ? "True" : "False") << "\n";
  out << "    return config\n";
  for (const auto& n : notes) out << "# note: " << n << "\n";
  return out.str();
}

// The AutoEP preset DeepSpeed has for a model (deepspeed/module_inject/auto_ep_presets at
// kDeepSpeedCommit: mixtral, qwen3_moe, qwen3_5_moe, deepseek_v2, deepseek_v3), by meshplan's
// preset name; "" for an MoE model it has none for (gpt-oss).
std::string AutoEpPreset(const ModelSpec& m) {
  const std::string& n = m.name;
  if (n.rfind("mixtral-", 0) == 0) return "mixtral";
  if (n.rfind("qwen3-", 0) == 0) return "qwen3_moe";
  if (n == "deepseek-v3") return "deepseek_v3";
  return "";
}

// DeepSpeed config JSON; what DeepSpeed sets in code (pipeline stages) goes to `notes`. Every rule
// read at kDeepSpeedCommit (edaa72212, 2026-08-22).
Result<std::string> ExportDeepSpeed(const Scenario& s, std::vector<std::string>* notes) {
  const PlanSpec& p = s.plan;
  auto refuse = [](const std::string& rule, const std::string& nearest) {
    return Refusal("deepspeed", kDeepSpeedCommit, rule, nearest);
  };
  if (p.Flushes() > 1)
    return refuse(
        "DeepSpeed's pipeline engine runs a step's gradient-accumulation microbatches in one flush "
        "(plan.pp_flushes)",
        "--pp-flushes 1");
  if (p.precision == Dtype::kNvfp4)
    return refuse("this exporter maps no NVFP4 recipe for DeepSpeed (it maps none for FP8 either)", "--precision bf16");
  if (p.tp > 1 && p.dtensor_tp)
    return refuse("DeepSpeed runs its own AutoTP tensor parallelism, not PyTorch's DTensor styles (plan.dtensor_tp)",
                  "--no-dtensor-tp");
  if (s.model.Hybrid())
    return refuse("no Mamba layers in the GPT model this config trains (a hybrid model.hybrid_pattern)",
                  "a transformer model, e.g. --model llama3-8b");
  if (s.model.moe && s.model.moe->latent_size > 0)
    return refuse(
        "no latent MoE: deepspeed.moe.layer.MoE routes hidden_size-wide tokens to its experts "
        "(deepspeed/moe/layer.py), with no latent projection around them",
        "a model without model.moe.latent_size");
  // DeepSpeed moves activation checkpoints to host memory (activation_checkpointing
  // cpu_checkpointing, runtime/activation_checkpointing/config.py), which recomputes; not the
  // layer offloading without recomputation the plan costs.
  if (p.offload_activation_layers > 0)
    return refuse(
        "no activation offloading without recomputation (cpu_checkpointing moves activation checkpoints, "
        "deepspeed/runtime/activation_checkpointing/config.py)",
        "--offload-activations 0");
  if (p.offload_modules != 0)
    return refuse(
        "no fine-grained activation offloading (cpu_checkpointing moves activation checkpoints, "
        "deepspeed/runtime/activation_checkpointing/config.py)",
        "the activations on the GPU (without --offload-modules)");
  if (p.pp > 1 && p.zero >= 2)
    return refuse(
        "\"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\" "
        "(deepspeed/runtime/pipe/engine.py:76-77)",
        "--zero 1 with the same pipeline");
  // MoE: AutoEP (deepspeed/module_inject/auto_ep.py; docs/code-docs/source/autoep.rst) replaces the
  // Hugging Face model's MoE layers for the models it has a preset for; other MoE models need the
  // native deepspeed.moe.layer.MoE, which ZeRO-3 refuses (engine.py:1889-1891).
  const std::string autoep = s.model.moe ? AutoEpPreset(s.model) : "";
  if (!autoep.empty()) {
    // AutoEP's folding rules at every ZeRO stage (deepspeed/module_inject/auto_ep_folding.py
    // validate_folding_global, run before any process group is made).
    const char* folding = "deepspeed/module_inject/auto_ep_folding.py";
    if (p.etp > 1)
      return refuse(std::string("\"expert_parallel.expert_tensor_parallel_size ... is not supported yet\" (") +
                        folding + ":214-217)",
                    "--etp 1");
    if (p.tp > 1 && p.pp > 1)
      return refuse(
          std::string("\"AutoEP+AutoTP folding currently supports pp_size=1 only\" (") + folding + ":206-208)",
          "--pp 1 with the same --tp, or --tp 1");
    if (p.tp > 1 && p.cp > 1)
      return refuse(std::string("\"tensor_parallel.autotp_size and Ulysses sequence parallelism are mutually exclusive "
                                "for AutoEP folding\" (") +
                        folding + ":210-212)",
                    "--cp 1 with the same --tp, or --tp 1");
    if (p.tp > 1 && p.ep == 1)
      return refuse(
          std::string("\"AutoEP+AutoTP folding requires expert_parallel.autoep_size > 1\" (") + folding + ":240-242)",
          "--ep 2 or more, or --tp 1");
    if (p.tp > 1 && (p.offload_optimizer != OffloadTarget::kNone || p.offload_params != OffloadTarget::kNone))
      return refuse(
          std::string("\"ZeRO optimizer/parameter offload with AutoEP+AutoTP folding is not validated yet\" (") +
              folding + ":252-254)",
          "--offload-optimizer none --offload-params none, or --tp 1");
  }
  if (s.model.moe && p.zero == 3) {
    if (autoep.empty())
      return refuse(
          "\"Native DeepSpeed MoE is not supported with ZeRO Stage 3. Use AutoEP or choose ZeRO stage 1/2.\" "
          "(deepspeed/runtime/engine.py:1889-1891; AutoEP has no preset for " +
              s.model.name + ": deepspeed/module_inject/auto_ep_presets)",
          "--zero 2");
    // AutoEP's ZeRO-3 rules (engine.py _validate_zero3_moe_compatibility, 1894-1907; expert TP,
    // 1913-1916, is refused at every stage above).
    if (p.tp > 1)
      return refuse("\"AutoEP with ZeRO Stage 3 does not support AutoTP yet\" (deepspeed/runtime/engine.py:1894-1897)",
                    "--zero 2 with the same --tp, or --tp 1");
    if (p.cp > 1)
      return refuse(
          "\"AutoEP with ZeRO Stage 3 does not support sequence parallelism yet\" "
          "(deepspeed/runtime/engine.py:1898-1900)",
          "--zero 2 with the same --cp, or --cp 1");
    if (p.sharding == Sharding::kHsdp)
      return refuse("\"AutoEP with ZeRO Stage 3 does not support MiCS yet\" (deepspeed/runtime/engine.py:1904-1907)",
                    "--sharding fsdp");
  }
  // MiCS is built in the stage-3 branch only (engine.py:2434, 2468-2469).
  if (p.sharding == Sharding::kHsdp && p.zero < 3)
    return refuse(
        "hybrid sharding (MiCS, mics_shard_size) is ZeRO-3's only: ZeRO-1/2 shard over the whole data-parallel group "
        "(deepspeed/runtime/engine.py:2434, 2468-2469)",
        "--zero 3 with the same --hsdp-shard, or --sharding fsdp");
  // DeepSpeed's context parallelism is Ulysses: all-to-all over heads (deepspeed/sequence/layer.py
  // DistributedAttention, 351).
  if (p.cp > 1 && p.cp_kind != CpKind::kUlysses)
    return refuse(
        "sequence parallelism is Ulysses, all-to-all over heads (deepspeed/sequence/layer.py:351 "
        "DistributedAttention); no ring or all-gather context parallelism",
        "--cp-kind ulysses");
  // DeepSpeed's PipelineEngine runs its TrainSchedule, one stage per rank (pipe/engine.py:389).
  if (p.pp > 1 && (p.schedule != Schedule::k1F1B || p.vpp > 1))
    return refuse(std::string("the pipeline engine runs its own 1F1B TrainSchedule, one stage per rank, not ") +
                      Name(p.schedule) + " (deepspeed/runtime/pipe/engine.py:389)",
                  "--schedule 1f1b --vpp 1");
  // The gradient dtype. DeepSpeed accumulates gradients in data_types.grad_accum_dtype, which
  // defaults to the model's dtype whenever ZeRO is on and to fp32 for bf16 without ZeRO, and the
  // pair picks the optimizer wrapper (engine.py get_data_types, _do_optimizer_sanity_check, read at
  // 38327e07f, 2025-02-21, kDeepSpeedGradRulesCommit): bf16 with fp32 accumulation runs the
  // BF16_Optimizer at ZeRO 0 and at ZeRO 1 without CPU offload, which keeps the bf16 gradients
  // beside a whole fp32 gradient buffer and partitions the fp32 master weights and Adam states
  // over the data-parallel group (bf16_optimizer.py: fp32_groups_gradients_flat, partition_size =
  // numel // real_dp_world_size): the plan's --keep-lp-grads at ZeRO 1. Otherwise a ZeRO
  // optimizer accumulates fp32 in a buffer of its own (stage_1_and_2.py use_separate_grad_accum;
  // stage3.py gradient_accumulation_dtype).
  // The plan's GEMM precision is DeepSpeed's model dtype (FP8 written as bf16, NVFP4 refused above); its
  // 16-bit gradients are accumulated in that dtype (the same bytes, whichever 16-bit type the plan
  // names), fp32 gradients in fp32.
  const Dtype model_dtype = p.precision == Dtype::kBf16 || p.precision == Dtype::kFp8 ? Dtype::kBf16
                            : p.precision == Dtype::kFp16                             ? Dtype::kFp16
                                                                                      : Dtype::kFp32;
  const bool sixteen = p.dtypes.grads == Dtype::kBf16 || p.dtypes.grads == Dtype::kFp16;
  if (!sixteen && p.dtypes.grads != Dtype::kFp32)
    return refuse(std::string("gradients in ") + Name(p.dtypes.grads) +
                      " (plan.dtypes.grads): DeepSpeed accumulates in bf16, fp16 or fp32 "
                      "(data_types.grad_accum_dtype, deepspeed/runtime/constants.py at " +
                      kDeepSpeedGradRulesCommit + ")",
                  "--grads-dtype fp32");
  const Dtype grads = sixteen && model_dtype != Dtype::kFp32 ? model_dtype : p.dtypes.grads;
  const std::string grads_said =
      std::string("gradients in ") + Name(grads) + " (plan.dtypes.grads) with a " + Name(model_dtype) + " model";
  const std::string sanity =
      std::string("deepspeed/runtime/engine.py _do_optimizer_sanity_check at ") + kDeepSpeedGradRulesCommit;
  const bool cpu_offload = p.offload_optimizer != OffloadTarget::kNone;
  const bool bf16_optimizer =
      model_dtype == Dtype::kBf16 && grads == Dtype::kFp32 && (p.zero == 0 || (p.zero == 1 && !cpu_offload));
  if (bf16_optimizer && p.zero == 0)
    return refuse(grads_said +
                      " at ZeRO 0: DeepSpeed runs its BF16_Optimizer, which partitions the fp32 master "
                      "weights and Adam states over the data-parallel group as ZeRO-1 does "
                      "(deepspeed/runtime/bf16_optimizer.py fp32_groups_flat_partition; " +
                      sanity + ")",
                  "--zero 1 --keep-lp-grads, or --grads-dtype bf16 --zero 1");
  if (bf16_optimizer && !p.keep_lp_grads)
    return refuse(grads_said +
                      " at ZeRO 1: DeepSpeed runs its BF16_Optimizer, which keeps the bf16 gradients "
                      "beside its fp32 gradient buffer for the whole step (deepspeed/runtime/bf16_optimizer.py "
                      "fp32_groups_gradients_flat; " +
                      sanity + ")",
                  "--keep-lp-grads, or --grads-dtype bf16");
  if (p.keep_lp_grads && !bf16_optimizer)
    return refuse(
        "--keep-lp-grads is DeepSpeed's BF16_Optimizer, which runs only for a bf16 model with fp32 "
        "gradient accumulation at ZeRO 0 or 1 without CPU offload (" +
            sanity + "); this plan's optimizer keeps no 16-bit gradients beside its accumulation",
        "the plan without --keep-lp-grads");
  if (grads != model_dtype && p.zero == 0 && !bf16_optimizer)
    return refuse(
        grads_said + " at ZeRO 0: \"unsupported mix of model dtype and gradient accumulation type\" (" + sanity + ")",
        std::string("--zero 1 with the same gradients, or --grads-dtype ") + Name(model_dtype));
  if (grads == Dtype::kBf16 && model_dtype == Dtype::kBf16 && p.zero == 0 && p.pp == 1)
    return refuse(grads_said +
                      " at ZeRO 0: \"Bfloat16 wrapper must use a gradient accumulation type of fp32, enable "
                      "ZeRO to use Bfloat16 gradient accumulation\" (" +
                      sanity + ")",
                  "--zero 1");
  notes->push_back(std::string("DeepSpeed ") + kDeepSpeedCommit +
                   " (2026-08-22): the configuration and its rules were read at this commit");
  OJson j;
  // DeepSpeedConfig asserts train_batch_size == micro x accumulation x the world size it sees
  // (deepspeed/runtime/config.py:925-940 at edaa72212), which is every rank unless the model
  // passes an mpu or mesh (711-724): with TP, PP or CP the data-parallel size is smaller, so the
  // global batch is left for DeepSpeed to derive from the other two (its 966-969).
  const bool model_parallel = p.tp * p.pp * p.cp > 1;
  if (!model_parallel) j["train_batch_size"] = p.global_batch;
  else
    notes->push_back("train_batch_size left out (" + std::to_string(p.global_batch) +
                     " sequences = micro x accumulation x dp " + std::to_string(p.dp) +
                     "): DeepSpeed checks it against all ranks unless an mpu is passed "
                     "(deepspeed/runtime/config.py:711-724, 925-940)");
  j["train_micro_batch_size_per_gpu"] = p.micro_batch;
  j["gradient_accumulation_steps"] = p.Microbatches();
  if (model_dtype == Dtype::kBf16) j["bf16"] = {{"enabled", true}};
  if (model_dtype == Dtype::kFp16) j["fp16"] = {{"enabled", true}};
  if (p.precision == Dtype::kFp8)
    notes->push_back("precision fp8: written as bf16; this exporter maps no FP8 recipe for DeepSpeed");
  // Written even where it is DeepSpeed's default, so the run cannot take another wrapper.
  j["data_types"] = {{"grad_accum_dtype", Name(grads)}};
  if (grads != p.dtypes.grads)
    notes->push_back(std::string("data_types.grad_accum_dtype ") + Name(grads) + ": the plan's " +
                     Name(p.dtypes.grads) + " gradients in the " + Name(model_dtype) +
                     " model's own 16-bit type, as DeepSpeed accumulates them (the same bytes)");
  if (bf16_optimizer)
    notes->push_back(
        "data_types.grad_accum_dtype fp32 with bf16 at ZeRO 1: DeepSpeed runs its BF16_Optimizer (fp32 gradient "
        "buffer, the bf16 gradients kept beside it: the plan's --keep-lp-grads)");
  OJson zero = {{"stage", p.zero}};
  if (p.zero >= 1) {
    zero["overlap_comm"] = p.overlap_grad_reduce;
    zero["contiguous_gradients"] = true;
    zero["reduce_scatter"] = true;
  }
  // ZeRO-1/2 gather the updated weights at the end of the optimizer step, blocking
  // (deepspeed/runtime/zero/stage_1_and_2.py:2396, all_gather_dp_groups in step()): no setting
  // overlaps them with the next forward, so a plan that does runs slower here than planned.
  if (p.zero >= 1 && p.zero <= 2 && p.dp * p.cp > 1 && p.overlap_param_gather)
    notes->push_back(
        "parameter all-gather: DeepSpeed runs it inside the optimizer step (stage_1_and_2.py:2396), not under the "
        "next forward as the plan does; the plan with --no-overlap-param-gather predicts this run");
  // Offload: NVMe needs a path (offload_config.py:30, 64; None by default), and a ZeRO-Offload run
  // needs DeepSpeed's own optimizer from the config: a client optimizer other than
  // DeepSpeedCPUAdam raises (engine.py:2040-2045).
  auto offload = [&](OffloadTarget t) {
    OJson o = {{"device", t == OffloadTarget::kCpu ? "cpu" : "nvme"}, {"pin_memory", true}};
    if (t == OffloadTarget::kNvme) o["nvme_path"] = "/local_nvme";
    return o;
  };
  if (p.offload_optimizer != OffloadTarget::kNone) zero["offload_optimizer"] = offload(p.offload_optimizer);
  if (p.offload_params != OffloadTarget::kNone) zero["offload_param"] = offload(p.offload_params);
  if (p.offload_optimizer == OffloadTarget::kNvme || p.offload_params == OffloadTarget::kNvme)
    notes->push_back("nvme_path: set it to a local NVMe mount (written as /local_nvme)");
  if (p.offload_optimizer != OffloadTarget::kNone || p.offload_params != OffloadTarget::kNone) {
    j["optimizer"] = {{"type", "AdamW"}, {"params", OJson::object()}};
    notes->push_back(
        "optimizer: DeepSpeed's AdamW from the config, as ZeRO-Offload needs; set its lr, betas and "
        "weight_decay to the recipe's");
  }
  // HSDP is MiCS: ZeRO-3's state sharded inside groups of mics_shard_size ranks and replicated
  // across them (zero/config.py:341, read at config.py:814; engine.py:2468-2469 builds
  // MiCS_Optimizer in the stage-3 branch only). Not ZeRO++'s zero_hpz_partition_size, which keeps a second
  // copy of the parameters inside the group while gradients and optimizer state stay sharded over
  // all ranks.
  if (p.sharding == Sharding::kHsdp && p.hsdp_shard_size > 0) zero["mics_shard_size"] = p.hsdp_shard_size;
  j["zero_optimization"] = zero;
  if (p.tp > 1) j["tensor_parallel"] = {{"autotp_size", p.tp}};
  if (p.cp > 1) j["sequence_parallel_size"] = p.cp;
  if (p.recompute != Recompute::kNone) {
    j["activation_checkpointing"] = {{"partition_activations", p.sequence_parallel && p.tp > 1},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", p.offload_checkpoints}};
    notes->push_back(std::string("recompute ") + Name(p.recompute) +
                     ": wrap each transformer layer in deepspeed.checkpointing.checkpoint" +
                     (p.recompute == Recompute::kSelective ? " (attention core only, for selective)" : ""));
    if (p.recompute_early_stop)
      notes->push_back(
          "recompute early stop: DeepSpeed's checkpoint is reentrant and reruns the whole layer, its MLP output "
          "projection too; the plan costs PyTorch's non-reentrant early stop");
  }
  if (p.pp > 1) {
    notes->push_back("pipeline: build the model as deepspeed.pipe.PipelineModule(layers=..., num_stages=" +
                     std::to_string(p.pp) + ", partition_method=" +
                     (p.stage_layers.empty()
                          ? std::string("'uniform')")
                          : "a custom partition: " + Join(ChunkLayers(s.model, s.plan), ",") + " layers per stage)") +
                     "; DeepSpeed runs 1F1B");
  }
  if (!autoep.empty()) {
    // AutoEP (config.py:69 "expert_parallel", parsed by auto_ep_config.py parse_autoep_config):
    // the preset knows the model's router, expert and weight names.
    OJson ep = {{"enabled", true}, {"autoep_size", p.ep}, {"preset_model", autoep}};
    j["expert_parallel"] = ep;
    notes->push_back("expert_parallel: AutoEP replaces the Hugging Face " + autoep +
                     " model's MoE layers in deepspeed.initialize (its presets need Transformers >= 5.0.0, "
                     "docs/code-docs/source/autoep.rst)");
    if (s.model.moe->router_bias)
      notes->push_back(
          "router: AutoEP does not update the aux-loss-free expert bias (load_balance_coeff is rejected, "
          "auto_ep_presets/base.py _raise_unsupported_load_balance_coeff); the bias stays as loaded");
  } else if (s.model.moe) {
    notes->push_back("ep: no AutoEP preset for " + s.model.name +
                     ": build its MoE layers as deepspeed.moe.layer.MoE(ep_size=" + std::to_string(p.ep) + ")");
  }
  return j.dump(2) + "\n";
}

int ComputeCapabilityMajor(const GpuSpec& g) {
  std::string n = g.name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto starts = [&](const char* prefix) { return n.rfind(prefix, 0) == 0; };
  if (starts("b2") || starts("b3") || starts("gb2") || starts("gb3")) return 10;
  if (starts("h100") || starts("h200") || starts("h800") || starts("gh200")) return 9;
  if (starts("a100") || starts("a800")) return 8;
  if (starts("v100")) return 7;
  return 0;
}

}  // namespace meshplan::core
