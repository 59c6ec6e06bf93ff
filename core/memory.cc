#include "core/memory.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string_view>

#include "core/step_graph.h"

namespace meshplan::core {
namespace {

// Bytes of one stored activation element: 2 for 16-bit training (bf16, fp16, and fp8 plans'
// tensors other than linear inputs), 4 for fp32/tf32.
int64_t ActBytes(const PlanSpec& p) { return (p.precision == Dtype::kFp32 || p.precision == Dtype::kTf32) ? 4 : 2; }

// Query and kv heads one TP rank computes. With tp > kv_heads each rank keeps one (replicated)
// kv head, which is how Megatron and vLLM split GQA past the group count.
int64_t LocalHeads(const ModelSpec& m, const PlanSpec& p) { return m.heads / p.tp; }
int64_t LocalKvHeads(const ModelSpec& m, const PlanSpec& p) { return std::max<int64_t>(m.kv_heads / p.tp, 1); }

// std::llround for the non-negative byte counts here, inline (llround is a libm call, and the
// search rounds eight values per stage per plan). REQUIRES: 0 <= x < 2^62.
int64_t RoundBytes(double x) { return static_cast<int64_t>(x + 0.5); }

// Microbatches whose activations a pipeline rank holds at its peak, in units of the rank's whole
// set of layers. 1F1B (Narayanan 2021 §2.2.1; Korthikanti 2022 Eq. 5): rank i warms up with p-i.
// Interleaved (Megatron's warm-up count): 2(p-i-1) + (v-1)p + 1 chunks, each 1/v of the rank,
// which for i=0 is Korthikanti's factor 1 + (p-1)/(pv). GPipe: all m. Zero-bubble ZB-H1
// (Qi et al. 2023): the same peak as 1F1B. DualPipe (DeepSeek-V3 report, Table 2): PP+1
// microbatches of one stage, and the rank holds two stages.
double InflightMicrobatches(const PlanSpec& p, int64_t rank) {
  const double m = static_cast<double>(p.MicrobatchesPerFlush());  // one flush at a time
  const double pp = static_cast<double>(p.pp);
  if (p.pp == 1) return 1.0;  // gradient accumulation runs one microbatch at a time
  switch (p.schedule) {
    case Schedule::kGpipe: return m;
    case Schedule::k1F1B:
    case Schedule::kZeroBubble: return std::min(pp - static_cast<double>(rank), m);
    case Schedule::kInterleaved: {
      // Megatron-Core's warm-up, 2(pp - r - 1) + (v - 1)N chunk-microbatches for a microbatch
      // group of N (plan.vpp_group, default pp; schedules.py get_pp_rank_microbatches), plus the
      // one in flight, each holding 1/v of the rank's layers.
      const double v = static_cast<double>(p.vpp);
      const double group = static_cast<double>(p.VppGroup());
      const double chunks = 2.0 * (pp - static_cast<double>(rank) - 1) + (v - 1) * group + 1;
      return std::min(chunks, m * v) / v;
    }
    case Schedule::kDualPipe: return std::min((pp + 1) / 2.0, m);
  }
  return 1.0;
}

int64_t Ceil(double v) { return static_cast<int64_t>(std::ceil(v)); }

}  // namespace

// Bytes of `elems` saved inputs of FP8 linear layers. Transformer Engine's Linear,
// LayerNormLinear and GroupedLinear (v2.9, transformer_engine/pytorch/module/linear.py around
// line 385, layernorm_linear.py 414, grouped_linear.py 204) keep for the backward the input they
// quantized for the forward GEMM, one byte per element (the FP8 copy's row-wise data is dropped
// and its column-wise data kept for the weight-gradient GEMM), not the 16-bit input. Block
// scaling adds one scale per 32 elements (MXFP8's E8M0; DeepSeek's 1x128 fp32 scales are the same
// 1/32 byte per element); tensor scaling adds one scalar. NVFP4 keeps the same column-wise copy
// (linear.py at v2.12, "Discard row-wise data since it is not needed in backward pass"): 4 bits
// and one E4M3 scale per 16 elements, 9/16 B per element (its fp32 per-tensor scale aside).
// Other precisions: ActBytes.
int64_t LinearInputBytes(const PlanSpec& p, int64_t elems) {
  if (p.precision == Dtype::kNvfp4) return (elems * 9 + 15) / 16;
  if (p.precision != Dtype::kFp8) return ActBytes(p) * elems;
  return elems + (p.fp8_scaling == Fp8Scaling::kBlock ? elems / 32 : 0);
}

RankParams LayerParamsOnRank(const ModelSpec& m, const PlanSpec& p, const LayerParams& lp) {
  const int64_t t = p.tp;
  // kv projections: with tp > kv_heads each rank holds one kv head's projection.
  const int64_t kv_local = m.kv_heads >= t ? lp.attn_kv_proj / t : lp.attn_kv_proj / m.kv_heads;
  RankParams r;
  r.dense = (lp.attn_tp_sharded - lp.attn_kv_proj) / t + kv_local + lp.attn_replicated + lp.mlp_tp_sharded / t +
            lp.mlp_replicated + lp.norms + lp.router + lp.mamba_tp_sharded / t;
  r.expert = lp.experts / p.ep * (lp.expert_etp_sharded / p.etp + lp.expert_replicated);
  return r;
}

int MomentBuffers(Optimizer o) { return o == Optimizer::kSgdMomentum || o == Optimizer::kMuon ? 1 : 2; }

double BytesPerParam(const PlanSpec& p) {
  const ModelStateBytes s = ShardedModelStates(1.0, p, 1);
  return s.Total();
}

ModelStateBytes ShardedModelStates(double params, const PlanSpec& p, int64_t group) {
  // Moments: Adam/AdamW keep m and v, SGD-momentum and Muon one buffer (Muon's momentum; the
  // parameters it leaves to Adam add theirs in PlaceModelStates); 8-bit Adam adds one fp32 scale
  // per 2048-value block per moment (bitsandbytes' blockwise quantisation).
  const int moments = MomentBuffers(p.optimizer);
  double moment_bytes = moments * static_cast<double>(DtypeBytes(p.dtypes.optimizer_states));
  if (p.optimizer == Optimizer::kAdam8bit) moment_bytes += moments * 4.0 / 2048.0;
  const double g = static_cast<double>(group);
  auto div = [&](int min_stage) { return p.zero >= min_stage ? g : 1.0; };
  ModelStateBytes s;
  s.weights = params * static_cast<double>(DtypeBytes(p.dtypes.weights)) / div(3);
  // FSDP2 (fully_shard with a MixedPrecisionPolicy) keeps the sharded parameter in its own dtype,
  // the master's, and casts only the all-gather's input to param_dtype: the low-precision copy
  // exists only while a layer is gathered (zero3_prefetch_bytes), so ZeRO-3 under FSDP2 holds no
  // sharded weights beside the master (torch/distributed/_composable/fsdp/_fsdp_param.py
  // all_gather_inputs: _to_dtype_if_needed(sharded_param_data, param_dtype); torchtitan builds
  // its model in fp32 and wraps it with param_dtype bf16).
  if (Fsdp2KeepsNoLowPrecisionShard(p)) s.weights = 0;
  s.grads = params * static_cast<double>(DtypeBytes(p.dtypes.grads)) / div(2);
  if (p.keep_lp_grads) s.grads += params * static_cast<double>(DtypeBytes(p.dtypes.weights)) / div(2);
  s.master_weights = params * static_cast<double>(DtypeBytes(p.dtypes.master_weights)) / div(1);
  s.moments = params * moment_bytes / div(1);
  return s;
}

void ChunkStarts(const ModelSpec& m, const PlanSpec& p, std::vector<int64_t>* out) {
  const int64_t chunks = p.pp * p.vpp;
  std::vector<int64_t>& starts = *out;
  starts.resize(static_cast<size_t>(chunks + 1));
  int64_t first = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    starts[static_cast<size_t>(c)] = first;
    first += p.stage_layers.empty() ? m.layers / chunks : p.stage_layers[static_cast<size_t>(c)];
  }
  starts[static_cast<size_t>(chunks)] = first;
}

std::vector<int64_t> ChunkStarts(const ModelSpec& m, const PlanSpec& p) {
  std::vector<int64_t> starts;
  ChunkStarts(m, p, &starts);
  return starts;
}

const RankLayout& RankLayoutOf(const ModelSpec& m, const PlanSpec& p) {
  // The inputs of the last layout computed on this thread, compared field by field.
  struct Memo {
    bool valid = false;
    int64_t layers = 0, first_dense = -1, freq = -1, pp = 0, vpp = 0, mtp = 0;
    int hybrid = 0;  // 0: not hybrid; 1: hybrid with MoE blocks (all layers costed as MoE); 2: without
    bool dualpipe = false;
    int64_t bf16_start = 0, bf16_end = 0;  // the plan's BF16 layers, when its precision is quantized
    std::vector<int64_t> split;
    RankLayout layout;
    std::vector<int64_t> starts;
  };
  thread_local Memo memo;
  const int64_t first_dense = m.moe ? m.moe->first_dense_layers : -1, freq = m.moe ? m.moe->layer_freq : -1;
  const bool dualpipe = p.schedule == Schedule::kDualPipe;
  const int hybrid = m.Hybrid() ? (m.HybridHasMoe() ? 1 : 2) : 0;
  const bool bf16 = p.HasBf16Layers();
  const int64_t bf16_start = bf16 ? p.bf16_layers_at_start : 0, bf16_end = bf16 ? p.bf16_layers_at_end : 0;
  if (memo.valid && memo.layers == m.layers && memo.mtp == m.MtpCostedLayers() && memo.first_dense == first_dense &&
      memo.freq == freq && memo.hybrid == hybrid && memo.pp == p.pp && memo.vpp == p.vpp && memo.dualpipe == dualpipe &&
      memo.bf16_start == bf16_start && memo.bf16_end == bf16_end && memo.split == p.stage_layers)
    return memo.layout;
  memo.valid = true;
  memo.bf16_start = bf16_start;
  memo.bf16_end = bf16_end;
  memo.hybrid = hybrid;
  memo.layers = m.layers;
  memo.mtp = m.MtpCostedLayers();
  memo.first_dense = first_dense;
  memo.freq = freq;
  memo.pp = p.pp;
  memo.vpp = p.vpp;
  memo.dualpipe = dualpipe;
  memo.split = p.stage_layers;
  RankLayout& l = memo.layout;
  l.kinds.clear();
  l.first_rank.clear();
  l.last_rank.clear();
  l.count.clear();
  l.kind_of.assign(static_cast<size_t>(p.pp), 0);
  ChunkStarts(m, p, &memo.starts);
  for (int64_t i = 0; i < p.pp; ++i) {
    const StageComposition here = StageCompositionOf(m, p, memo.starts, i);
    // Neighbouring ranks are usually of one kind: the previous rank's is tried first.
    size_t k = 0;
    if (i > 0 && l.kinds[l.kind_of[static_cast<size_t>(i - 1)]] == here) k = l.kind_of[static_cast<size_t>(i - 1)];
    else
      while (k < l.kinds.size() && !(l.kinds[k] == here)) ++k;
    l.kind_of[static_cast<size_t>(i)] = static_cast<uint32_t>(k);
    if (k < l.kinds.size()) {
      ++l.count[k];
      l.last_rank[k] = i;
      continue;
    }
    l.kinds.push_back(here);
    l.first_rank.push_back(i);
    l.last_rank.push_back(i);
    l.count.push_back(1);
  }
  return l;
}

std::vector<int64_t> StageLayers(const ModelSpec& m, const PlanSpec& p, int64_t stage) {
  std::vector<int64_t> out;
  ForEachStageLayer(m, p, stage, [&](int64_t l) { out.push_back(l); });
  return out;
}

// Calls add(name, bytes) for every tensor a layer keeps; the one derivation behind both public
// functions (the byte count is on the search's hot path, so it must not allocate).
template <typename Add>
void VisitLayerActivations(const ModelSpec& m, const PlanSpec& p, bool moe_layer, Recompute recompute, Add&& add_term) {
  // Notation of Korthikanti 2022: s sequence (here per CP rank), b microbatch, h hidden,
  // a heads, t tensor-parallel size. `rep` is a tensor every TP rank holds whole unless
  // sequence parallelism shards it along s.
  const int64_t e = ActBytes(p);
  const int64_t t = p.tp;
  const int64_t s = p.seq_len / p.cp;
  const int64_t s_kv = p.seq_len;  // naive attention under CP still scores against all keys
  const int64_t b = p.micro_batch;
  const int64_t h = m.hidden;
  const int64_t sbh = s * b * h;
  const int64_t rep_div = p.sequence_parallel ? t : 1;
  // A column-parallel linear layer's saved input: Megatron-Core's saves the sequence-sharded
  // input and gathers it again for the weight gradient (LinearWithGradAccumulationAndAsync-
  // Communication: "all-gather is launched asynchronously" in its backward under sequence
  // parallelism); PyTorch's DTensor TP (PlanSpec::dtensor_tp) runs F.linear on the gathered
  // tensor, which autograd saves whole (its step graph gathers nothing again, core/step_graph.cc).
  // Applied to the dense attention's and MLP's inputs (and the head's, PlaceActivations); MLA's
  // latents, MoE's and Mamba's inputs keep the sharded rule (no DTensor plan of theirs read).
  const int64_t linear_input_div = p.dtensor_tp ? 1 : rep_div;
  // A hybrid model's layer is its kinds' mix (core/specs.h ModelSpec::hybrid_pattern): each
  // block's terms weighted by its kind's share of the layers.
  double scale = 1.0;
  auto add = [&](const char* name, int64_t bytes) {
    if (bytes > 0) add_term(name, scale == 1.0 ? bytes : std::llround(static_cast<double>(bytes) * scale));
  };

  if (recompute == Recompute::kFull) {
    // Only the layer input is checkpointed (Korthikanti Table 2: 2sbh); with sequence
    // parallelism the residual stream is sharded along s, so the checkpoint is too.
    add("layer_input_checkpoint", e * sbh / rep_div);
    return;
  }
  if (recompute == Recompute::kSelective && (p.recompute_modules & ModuleBit(RecomputeModule::kTorchtitanOp))) {
    // torchtitan's per-op policy (core/specs.h RecomputeModule::kTorchtitanOp): the layer input
    // and what the policy saves. A Llama layer's aten.mm in order: wq, wk, wv, wo, then w1, w3, w2
    // (SwiGLU) or fc1, fc2 (GELU); the odd ones are saved. Each mm's output is T x its local width;
    // the row-parallel w2's is the partial sum over the whole sequence (before its reduce-scatter).
    // Under FP8 the same: torchao's Float8Linear calls torch.mm on its float8 tensor subclass,
    // and the policy's dispatch mode sees that aten.mm before the subclass turns it into
    // _scaled_mm, so the bf16 outputs of the same matmuls are saved (the 8B FSDP runs' measured
    // peaks: 77.0 GiB with torch.compile, 76.8 with compile and float8).
    const int64_t hd = m.head_dim, fl = m.ffn_hidden / t;
    add("layer_input_checkpoint", e * sbh / rep_div);
    add("wq_output", e * s * b * LocalHeads(m, p) * hd);
    add("wv_output", e * s * b * LocalKvHeads(m, p) * hd);
    add(m.mlp == MlpKind::kSwiglu ? "w1_output" : "fc1_output", e * s * b * fl);
    if (m.mlp == MlpKind::kSwiglu) add("w2_output", e * sbh);
    add("attention_output", e * s * b * LocalHeads(m, p) * hd);
    add("softmax_lse", 4 * LocalHeads(m, p) * s * b);
    if (p.sequence_parallel && t > 1) add("tp_reduce_scatter_outputs", 2 * e * sbh / t);  // after wo and w2
    return;
  }
  if (recompute == Recompute::kSelective && (p.recompute_modules & ModuleBit(RecomputeModule::kSaveQkvProj))) {
    // MaxText's save_qkv_proj (core/specs.h RecomputeModule::kSaveQkvProj): the layer input (the
    // scan's carry) and the named Q, K and V after RoPE, in the activations' dtype (the GEMMs'
    // outputs under FP8 too); the rest is rematerialised in the backward.
    const int64_t hd = m.head_dim;
    add("layer_input_checkpoint", e * sbh / rep_div);
    add("query_proj", e * s * b * LocalHeads(m, p) * hd);
    add("key_value_proj", 2 * e * s * b * LocalKvHeads(m, p) * hd);
    return;
  }

  const int64_t a = LocalHeads(m, p);
  const bool naive = m.attention == AttentionImpl::kNaive;
  // `elementwise eager` is torchtitan's 2024 model code run op by op (torchtitan/models/llama/
  // model.py and models/norms.py at 3f20451b): its RMSNorm upcasts (x.float(): pow and mul save the
  // fp32 copy) and keeps the normalized bf16 tensor for the weight's gradient, not the bf16 input;
  // (its repeat_kv copies of K and V, which SDPA saves, are PlanSpec::repeat_kv's, below); SDPA's
  // output is saved and copied again (.transpose(1, 2).contiguous()) as wo's input; SwiGLU's
  // silu(w1 x) * w3 x saves w1's output, silu's output and w3's output. Checked against a
  // measurement on an H200 (tests/data/gpu/h200-2026-11-28/memory_default8.json: 1.75 GB per
  // layer at Llama 3 8B's width over 8,192 tokens, 52 T*h bytes; these terms give 54, the fused
  // ones 34; docs/memory.md). `eager-fused-norm` runs the norms as torchtitan's Triton RMSNorm
  // (models/norms.py TritonFusedRMSNorm at 395a526: ctx.save_for_backward(x, weight, rstd)), which
  // keeps the bf16 input as a fused norm does (its fp32 rstd, 4 B per token, is left out here as
  // for every fused norm).
  const bool eager = p.elementwise != Elementwise::kFused;
  const bool eager_norm = p.elementwise == Elementwise::kEager;
  auto norm_terms = [&](const char* input_name, const char* fp32_name, const char* normalized_name) {
    if (!eager_norm) {
      add(input_name, e * sbh / rep_div);
      return;
    }
    add(fp32_name, 4 * sbh / rep_div);
    add(normalized_name, e * sbh / rep_div);
  };
  // Selective recomputation's modules (PlanSpec::recompute_modules): what they recompute in the
  // backward is not kept (Megatron-Core: core_attn and mlp checkpoint their inputs; moe_act,
  // layernorm and mla_up_proj discard their outputs, CheckpointWithoutOutput).
  auto recomputed = [&](RecomputeModule mod) {
    return recompute == Recompute::kSelective && (p.recompute_modules & ModuleBit(mod)) != 0;
  };
  // ---- attention block: Korthikanti §4.1 "11sbh + 5as^2b" plus its LayerNorm's 2sbh.
  auto attention_terms = [&]() {
    norm_terms("attn_norm_input", "attn_norm_fp32_input", "attn_norm_normalized");
    // The norm's output, the QKV (or MLA down-projection) input. Transformer Engine fuses the norm
    // into that linear for standard attention (LayerNormLinear: layernorm recompute does not apply);
    // MLA's input norm is its own module.
    if (!(m.mla && recomputed(RecomputeModule::kLayernorm)))
      add("qkv_input", LinearInputBytes(p, sbh / linear_input_div));
    int64_t q_dim, k_dim, v_dim;  // per-token widths of the saved q, k, v on this rank
    if (m.mla) {
      const int64_t qk = m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim;
      q_dim = a * qk;
      k_dim = a * qk;
      v_dim = a * m.mla->v_head_dim;
      // The latents are the inputs of the up-projection linears.
      if (m.mla->q_lora_rank > 0) add("q_latent", LinearInputBytes(p, s * b * m.mla->q_lora_rank / rep_div));
      add("kv_latent", LinearInputBytes(p, s * b * m.mla->kv_lora_rank / rep_div));
    } else {
      // Naive attention expands GQA's kv heads to every query head before QK^T (Megatron's
      // unfused path), and so does model code that calls repeat_kv before the kernel
      // (PlanSpec::repeat_kv, eager or compiled; the torchtitan stack sets it): the kernel saves the
      // copies. Flash attention called on the grouped heads reads them directly. The step graph
      // costs the copies on the same rule, so time and memory agree.
      const int64_t kv = naive || p.repeat_kv ? a : LocalKvHeads(m, p);
      q_dim = a * m.head_dim;
      k_dim = kv * m.head_dim;
      v_dim = kv * m.head_dim;
    }
    if (!(m.mla && recomputed(RecomputeModule::kMlaUpProj))) {  // MLA's up-projections and RoPE again
      // FP8 attention (PlanSpec::fp8_attention) saves its FP8 Q, K and V, 1 B each (Transformer
      // Engine's FusedAttnFunc: fp8_tensors = (q_fp8, k_fp8, v_fp8, None) under current scaling).
      const int64_t qkv_bytes = p.fp8_attention && !naive ? 1 : e;
      add("q", qkv_bytes * s * b * q_dim);
      add("k", qkv_bytes * s * b * k_dim);
      add("v", qkv_bytes * s * b * v_dim);
    }
    if (!recomputed(RecomputeModule::kCoreAttn)) {
      if (naive) {
        // The s^2 terms: softmax output 2as^2b, with dropout also its mask as^2b and output 2as^2b.
        add("softmax_output", e * a * s * s_kv * b);
        if (m.dropout) {
          add("softmax_dropout_mask", a * s * s_kv * b);
          add("softmax_dropout_output", e * a * s * s_kv * b);
        }
      } else {
        add("softmax_lse", 4 * a * s * b);                          // flash attention's fp32 log-sum-exp per row
        if (eager) add("sdpa_output", e * s * b * a * m.head_dim);  // wo's input is a copy of it
      }
    }
    const int64_t attn_out = m.mla ? a * m.mla->v_head_dim : a * m.head_dim;
    add("attn_out_proj_input", LinearInputBytes(p, s * b * attn_out));
    if (m.dropout) add("attn_dropout_mask", sbh / rep_div);
  };

  // ---- MLP block: Korthikanti "19sbh" (for f = 4h) plus its LayerNorm's 2sbh.
  auto ffn_terms = [&](bool moe_block) {
    norm_terms("mlp_norm_input", "mlp_norm_fp32_input", "mlp_norm_normalized");
    auto mlp_terms = [&](const char* act_name, const char* fc2_name, int64_t tokens, int64_t f_local,
                         bool act_recomputed) {
      // swiglu saves gate and up; op by op also silu's output
      const int64_t act_mult = m.mlp == MlpKind::kSwiglu ? (eager ? 3 : 2) : 1;
      add(act_name, act_mult * e * tokens * f_local);
      if (!act_recomputed) add(fc2_name, LinearInputBytes(p, tokens * f_local));
    };
    if (moe_block && m.moe && recomputed(RecomputeModule::kMoe)) {
      // The whole MoE layer checkpointed (moe_layer.py: tensor_parallel.checkpoint(custom_forward,
      // False, hidden_states, ...)): its input alone, the pre-MLP norm's output, which the
      // layernorm module's checkpoint frees too when it is recomputed (transformer_layer.py
      // discard_output_and_register_recompute on that tensor).
      if (!recomputed(RecomputeModule::kLayernorm)) add("moe_input", e * sbh / rep_div);
    } else if (moe_block && m.moe) {
      const MoeSpec& x = *m.moe;
      // The pre-MLP norm's output (router and dispatcher input): a module of its own in MoE layers.
      if (!recomputed(RecomputeModule::kLayernorm)) add("router_input", e * sbh / rep_div);
      add("router_probs", 4 * s * b * x.experts / rep_div);
      // Tokens this GPU's experts process per microbatch. A stage's tp*cp*dp ranks regroup as
      // etp x ep x edp for expert layers; with balanced routing each GPU receives
      // s*b*k*etp/tp tokens (s per CP rank), each with f/etp of the expert's width.
      double tokens = static_cast<double>(s * b * x.top_k * p.etp) / static_cast<double>(t);
      if (x.capacity_factor > 0) tokens *= x.capacity_factor;  // buffers padded to capacity
      // Dropless, the busiest EP rank holds its larger share (MoeBusiestRank, core/step_graph.h),
      // and the fit verdict is that rank's.
      else tokens *= MoeBusiestRank(m, p);
      const int64_t tok = Ceil(tokens);
      // A latent MoE's experts see latent-wide tokens (MoeSpec::latent_size); fc1_latent_proj
      // reads the router's input (an FP8 plan keeps its own FP8 copy of it) and fc2_latent_proj's
      // input is the combined latent output of this rank's tokens.
      const int64_t w = x.Width(h);
      if (x.latent_size > 0) {
        if (Quantized(p.precision)) add("latent_down_input", LinearInputBytes(p, sbh / rep_div));
        add("latent_up_input", LinearInputBytes(p, s * b * w / rep_div));
      }
      const int64_t f_local = x.expert_ffn_hidden / p.etp;
      add("expert_input", LinearInputBytes(p, tok * w));
      mlp_terms("expert_act_input", "expert_fc2_input", tok, f_local, recomputed(RecomputeModule::kMoeAct));
      // A clamped GLU under Megatron-Core's fused activation (ModelSpec::glu_clamp;
      // weighted_bias_quick_geglu_impl): the clamps keep fc1's output for their gradient and the
      // fused function saves the clamped copy, fc1's width again. Not under moe_act recomputation
      // (CheckpointWithoutOutput runs the function without autograd, its input kept) nor the op
      // fuser (the clamp inside its activation op).
      if (GluClampCopies(m, p) && !recomputed(RecomputeModule::kMoeAct))
        add("expert_clamped_act_input", 2 * e * tok * f_local);
      // What the router's probabilities weight is kept for their gradient (PlanSpec::moe_probs):
      // the experts' output at the unpermutation, the activation's output in a separate multiply;
      // a fused weighted activation keeps nothing more.
      if (p.moe_probs == MoeProbs::kUnpermute) add("expert_output", e * tok * w);
      if (p.moe_probs == MoeProbs::kActivation) add("expert_weighted_act", e * tok * f_local);
      if (x.shared_experts > 0 && !recomputed(RecomputeModule::kSharedExperts))  // checkpointed: input only
        mlp_terms("shared_act_input", "shared_fc2_input", s * b, x.shared_experts * x.shared_expert_ffn_hidden / t,
                  false);
    } else if (!recomputed(RecomputeModule::kMlp)) {  // mlp: the block checkpoints its input alone
      add("fc1_input", LinearInputBytes(p, sbh / linear_input_div));
      mlp_terms(m.mlp == MlpKind::kSwiglu ? "swiglu_gate_up" : "gelu_input", "fc2_input", s * b, m.ffn_hidden / t,
                false);
    }
    if (m.dropout) add("mlp_dropout_mask", sbh / rep_div);
  };

  if (!m.Hybrid()) {
    attention_terms();
    ffn_terms(moe_layer);
    return;
  }
  // ---- a hybrid model's mix. A Mamba layer (Megatron-Core mamba_mixer.py, memory-efficient
  // path) keeps its pre-norm's input and in_proj's input (the norm is fused into in_proj, as the
  // attention block's into QKV), in_proj's output zxbcdt and the scan's output out_x (mamba_ssm
  // MambaSplitConv1dScanCombinedFn.forward: save_for_backward(zxbcdt, ..., out_x, ...); the conv
  // and the SSD states are recomputed in its backward), its z-gated output y, which the gated
  // RMSNorm saves as its input, and the norm's output, out_proj's input.
  // The MTP modules' blocks are in the mix (ModelSpec::HybridCostedCounts), as in the step graph.
  const HybridCounts c = m.HybridCostedCounts();
  const double n = static_cast<double>(std::max<int64_t>(m.HybridCostedLayers(), 1));
  scale = static_cast<double>(c.attention) / n;
  if (c.attention > 0) attention_terms();
  scale = static_cast<double>(c.mlp) / n;
  if (c.mlp > 0) ffn_terms(false);
  scale = static_cast<double>(c.moe) / n;
  if (c.moe > 0) ffn_terms(true);
  scale = static_cast<double>(c.mamba) / n;
  if (c.mamba > 0 && m.mamba) {
    const MambaSpec& x = *m.mamba;
    norm_terms("mamba_norm_input", "mamba_norm_fp32_input", "mamba_norm_normalized");
    add("in_proj_input", LinearInputBytes(p, sbh / rep_div));
    add("in_proj_output", e * s * b * x.InProjWidth() / t);
    add("scan_output", e * s * b * x.Inner() / t);
    add("gated_scan_output", e * s * b * x.Inner() / t);
    add("out_proj_input", LinearInputBytes(p, s * b * x.Inner() / t));
  }
}

std::vector<ActivationTerm> LayerActivationTerms(const ModelSpec& m, const PlanSpec& p, bool moe_layer,
                                                 Recompute recompute) {
  std::vector<ActivationTerm> terms;
  VisitLayerActivations(m, p, moe_layer, recompute, [&](const char* name, int64_t bytes) {
    terms.push_back({name, bytes});
  });
  return terms;
}

int64_t OffloadedActivationBytes(const ModelSpec& m, const PlanSpec& p) {
  int64_t bytes = 0, per[2] = {-1, -1};
  for (int64_t l = 0; l < std::min(p.offload_activation_layers, m.layers); ++l) {
    const int k = m.IsMoeLayer(l) ? 1 : 0;
    if (per[k] < 0) per[k] = LayerActivationBytes(m, p, k == 1, Recompute::kNone);
    bytes += per[k];
  }
  return bytes;
}

int64_t FineGrainedOffloadBytes(const ModelSpec& m, const PlanSpec& p, bool moe_layer) {
  if (p.offload_modules == 0) return 0;
  // Each module's group is what its forward saves for the backward (Megatron-Core's
  // group_start/group_offload around the submodule, capturing save_for_backward), named here by
  // the activation terms VisitLayerActivations gives it.
  struct Group {
    OffloadModule module;
    std::initializer_list<const char*> terms;
  };
  static const Group kGroups[] = {
      {OffloadModule::kAttnNorm, {"attn_norm_input", "attn_norm_fp32_input", "attn_norm_normalized"}},
      {OffloadModule::kQkvLinear, {"qkv_input"}},
      {OffloadModule::kCoreAttn,
       {"q", "k", "v", "softmax_lse", "sdpa_output", "softmax_output", "softmax_dropout_mask",
        "softmax_dropout_output"}},
      {OffloadModule::kAttnProj, {"attn_out_proj_input"}},
      {OffloadModule::kMlpNorm, {"mlp_norm_input", "mlp_norm_fp32_input", "mlp_norm_normalized"}},
      {OffloadModule::kExpertFc1, {"expert_input"}},
      {OffloadModule::kMoeAct, {"expert_act_input", "expert_clamped_act_input"}},
      {OffloadModule::kFusedGroupMlp, {"expert_input", "expert_act_input", "expert_fc2_input"}},
  };
  const Recompute mode = p.recompute == Recompute::kSelective ? Recompute::kSelective : Recompute::kNone;
  int64_t total = 0;
  VisitLayerActivations(m, p, moe_layer, mode, [&](const char* name, int64_t bytes) {
    for (const Group& g : kGroups) {
      if ((p.offload_modules & OffloadBit(g.module)) == 0) continue;
      if (std::any_of(g.terms.begin(), g.terms.end(), [&](const char* t) { return std::strcmp(t, name) == 0; })) {
        total += bytes;
        return;  // a term counts once, whichever offloaded module names it
      }
    }
  });
  return total;
}

int64_t LayerActivationBytes(const ModelSpec& m, const PlanSpec& p, bool moe_layer, Recompute recompute) {
  int64_t total = 0;
  VisitLayerActivations(m, p, moe_layer, recompute, [&](const char*, int64_t bytes) { total += bytes; });
  return total;
}

namespace {

// A stage's model states: its dense and expert parameters' weights, gradients, master weights and
// moments, each sharded over its group by the ZeRO stage, and what offload moves to the host or NVMe.
// Under Muon the embedding, the output head and the norms (`adam_params` of the dense ones) keep
// Adam's second moment beside the momentum every parameter has (Megatron-Core's
// get_megatron_muon_optimizer: Muon for 2D non-embedding weights, its scalar optimizer, Adam, for
// the rest).
void PlaceModelStates(const PlanSpec& p, int64_t dense, int64_t expert, int64_t dense_group, int64_t expert_group,
                      int64_t adam_params, StageMemory* out) {
  StageMemory& st = *out;
  ModelStateBytes ds = ShardedModelStates(static_cast<double>(dense), p, dense_group);
  if (p.optimizer == Optimizer::kMuon)
    ds.moments += static_cast<double>(adam_params) * static_cast<double>(DtypeBytes(p.dtypes.optimizer_states)) /
                  (p.zero >= 1 ? static_cast<double>(dense_group) : 1.0);
  const ModelStateBytes es = ShardedModelStates(static_cast<double>(expert), p, expert_group);
  st.weights_bytes = RoundBytes(ds.weights + es.weights);
  st.grads_bytes = RoundBytes(ds.grads + es.grads);
  st.master_weights_bytes = RoundBytes(ds.master_weights + es.master_weights);
  st.optimizer_moments_bytes = RoundBytes(ds.moments + es.moments);
  if (p.offload_optimizer != OffloadTarget::kNone) {
    int64_t& dest = p.offload_optimizer == OffloadTarget::kCpu ? st.host_bytes : st.nvme_bytes;
    dest += st.master_weights_bytes + st.optimizer_moments_bytes;
    st.offloaded_state_bytes += st.master_weights_bytes + st.optimizer_moments_bytes;
    st.master_weights_bytes = 0;
    st.optimizer_moments_bytes = 0;
  }
  if (p.offload_params != OffloadTarget::kNone) {
    int64_t& dest = p.offload_params == OffloadTarget::kCpu ? st.host_bytes : st.nvme_bytes;
    dest += st.weights_bytes;
    st.offloaded_state_bytes += st.weights_bytes;
    st.weights_bytes = 0;
  }
  st.optimizer_bytes = st.master_weights_bytes + st.optimizer_moments_bytes;
  // FSDP2 allocates each reduce-scatter's output, which becomes the sharded gradient, on its
  // reduce-scatter stream, and PyTorch's caching allocator keeps a freed block in the pool of the
  // stream it was allocated on (PyTorch PR 129721, awgu, 2024-06-27: "The reduce-scatter outputs
  // are still allocated in the separate reduce_scatter stream ... we iteratively allocate them
  // through backward and free them altogether after optimizer"; memory in a non-default stream's
  // pool "cannot be reused by the default stream"; _fsdp_collectives.py foreach_reduce,
  // reduce_output = reduce_scatter_input.new_empty(...) under the reduce-scatter stream). Under
  // ZeRO-2/3 those are the stage's gradients; under pipeline parallelism (the stack's ZeRO-1
  // memory) they come beside the unsharded fp32 accumulators, sharded over the data-parallel group.
  if (p.zero3_gather == Zero3Gather::kFsdp2 && p.zero >= 1) {
    if (p.zero >= 2) {
      st.rs_pool_bytes = st.grads_bytes;
    } else {
      const double grad_bytes = static_cast<double>(DtypeBytes(p.dtypes.grads));
      st.rs_pool_bytes = RoundBytes(static_cast<double>(dense) * grad_bytes / static_cast<double>(dense_group) +
                                    static_cast<double>(expert) * grad_bytes / static_cast<double>(expert_group));
    }
  }
}

// A stage's activations: the in-flight microbatches of its layers (per_mb each), the embedding's
// and the loss's, deferred output-layer gradients and recompute's working set.
void PlaceActivations(const ModelSpec& m, const PlanSpec& p, int64_t stage, bool has_first, bool has_last,
                      int64_t per_mb, int64_t max_working, StageMemory* out) {
  StageMemory& st = *out;
  const int64_t t = p.tp;
  st.inflight_microbatches = InflightMicrobatches(p, stage);
  st.layer_activations_bytes = per_mb;
  const int64_t e = ActBytes(p);
  const int64_t s = p.seq_len / p.cp, b = p.micro_batch, h = m.hidden;
  const int64_t rep_div = p.sequence_parallel ? t : 1;
  // The vocabulary the head is built with (PlanSpec::vocab_divisible_by), and a rank's columns of it.
  const int64_t vocab = PaddedVocab(m, p), vocab_local = (vocab + t - 1) / t;
  if (has_first && m.dropout) st.embedding_activations_bytes = s * b * h / rep_div;  // dropout mask
  if (has_last) {
    // Final norm input and output-head input (2sbh each), and the fp32 logits the
    // vocab-parallel cross entropy keeps (4sbv/t): Korthikanti §4.3's 4sbh/t + 4sbv/t.
    // The final norm's and the head's inputs, and the logits at the loss: bytes per logit by the
    // cross entropy's implementation (core/specs.h CrossEntropy).
    const int64_t per_logit = p.cross_entropy == CrossEntropy::kUpcast      ? (t > 1 ? 16 : 12)
                              : p.cross_entropy == CrossEntropy::kNative    ? 10
                              : p.cross_entropy == CrossEntropy::kFlash     ? 4
                              : p.cross_entropy == CrossEntropy::kCompiled  ? 4
                              : p.cross_entropy == CrossEntropy::kTeInplace ? 2
                                                                            : 6;  // fused, te, plain
    // Under DTensor's TP the head's input is saved gathered (its ColwiseParallel runs F.linear on
    // the all-gathered Shard(1) input; PlanSpec::dtensor_tp), the norm's input sharded.
    const int64_t head_input_div = p.dtensor_tp ? 1 : rep_div;
    st.loss_activations_bytes =
        e * s * b * h / rep_div + e * s * b * h / head_input_div + per_logit * s * b * vocab / t;
    // Each MTP module keeps its enorm and hnorm inputs (sbh each) and eh_proj's input, the
    // concatenation (2sbh), then its own final norm, head input and logits as above.
    if (m.mtp_layers > 0)
      st.loss_activations_bytes += m.mtp_layers * (4 * e * s * b * h / rep_div + st.loss_activations_bytes);
  }
  const double loss_inflight =
      p.schedule == Schedule::kGpipe && p.pp > 1 ? static_cast<double>(p.MicrobatchesPerFlush()) : 1.0;
  st.recompute_working_bytes = max_working;
  // A deferred output-layer weight gradient keeps, per deferred microbatch, the bf16 logits
  // gradient (2 B per logit, cast to the input dtype) and the head's input until the step's end
  // (Megatron-Core tensor_parallel/layers.py grad_output_buffer, GPTModel
  // embedding_activation_buffer).
  if (has_last && p.deferred_head_wgrad > 0)
    st.deferred_wgrad_bytes =
        std::min(p.deferred_head_wgrad, p.MicrobatchesPerFlush()) * (2 * s * b * vocab_local + e * s * b * h / rep_div);
  // PyTorch's pipeline stage (PlanSpec::keep_pp_outputs): the last stage keeps every microbatch's
  // output, the logits in the activations' dtype and vocab-parallel over t, until the step ends,
  // so at the last microbatch's loss the other m - 1 are alive beside the one the loss counts;
  // every other stage keeps its output (the layer output, sequence-parallel over t) of each of
  // the m microbatches and holds a gradient receive buffer of the same size for each. A rank with
  // v interleaved stages holds v of them, the last rank the last stage and v - 1 others. Each
  // schedule run clears them (plan.pp_flushes: the microbatches of one flush).
  if (p.keep_pp_outputs && p.pp > 1) {
    const int64_t mbs = p.MicrobatchesPerFlush();
    const int64_t stages_here = std::max<int64_t>(1, p.vpp);
    const int64_t grad_buffers = (stages_here - (has_last ? 1 : 0)) * 2 * mbs * e * s * b * h / rep_div;
    const int64_t kept_logits = has_last ? (mbs - 1) * e * s * b * vocab_local : 0;
    st.pipeline_buffers_bytes = grad_buffers + kept_logits;
  }
  st.activations_bytes =
      RoundBytes(static_cast<double>(per_mb + st.embedding_activations_bytes) * st.inflight_microbatches) +
      RoundBytes(static_cast<double>(st.loss_activations_bytes) * loss_inflight) + st.deferred_wgrad_bytes +
      st.pipeline_buffers_bytes + st.recompute_working_bytes;
}

// DeepSpeed's BF16_Optimizer at the step (PlanSpec::keep_lp_grads; StageMemory::step_copy_bytes).
// Its pipeline engine reduces the optimizer's fp32 gradient buffers (bf16_optimizer.py
// get_grads_for_reduction: fp32_groups_gradients_flat, one flat tensor per parameter group) with
// buffered_allreduce_fallback, whose allreduce_bucket casts each bucket to the engine's
// communication dtype before dist.all_reduce: bf16 for bf16 under ZeRO stage 0, which BigScience's
// runs set (engine.py communication_data_type and pipe/engine.py _bf16_reduce_grads at DeepSpeed
// 15293139f, 2022-02-28, the day of their BF16_Optimizer runs). The weights' group is one tensor
// larger than the 5e8-element bucket, so it is cast whole; the other group (biases and norms,
// under 0.1% of it) is counted with it: the copy is the weights-dtype image of the fp32 buffer.
// It is made after the last backward, when the microbatches' activations are freed but their
// blocks stay cached, none of them that large: the allocator asks CUDA for a new segment while the
// GPU has room (reserved = the activations' peak + the copy), and otherwise frees every cached
// block and retries (PyTorch's CUDACachingAllocator malloc, v1.10-1.11: "Free all non-split cached
// blocks and retry alloc"), when the step's own peak, the model states and the copy without the
// activations, is what the GPU holds. The peak allocated is the larger of the two phases'.
void PlaceStepCopy(const PlanSpec& p, const GpuSpec& g, StageMemory* out) {
  StageMemory& st = *out;
  const int64_t w = DtypeBytes(p.dtypes.weights), gr = DtypeBytes(p.dtypes.grads);
  // grads_bytes holds the fp32 buffer and the kept weights-dtype gradients (ShardedModelStates).
  st.step_copy_bytes =
      RoundBytes(static_cast<double>(st.grads_bytes) * static_cast<double>(w) / static_cast<double>(gr + w));
  const int64_t idle_pools = st.ag_pool_idle_bytes + (RsPoolOnTopBytes(st, p) > 0 ? st.rs_pool_idle_bytes : 0);
  const int64_t cached = st.total_bytes + st.step_copy_bytes;
  const int64_t released =
      st.total_bytes - st.activations_bytes - st.fragmentation_bytes - idle_pools + st.step_copy_bytes;
  const int64_t on_top =
      cached <= g.CapacityBytes() ? st.step_copy_bytes : std::max<int64_t>(0, released - st.total_bytes);
  st.step_copy_on_top_bytes = on_top;
  // Allocated at the peak: the activations' phase or the step's, whichever is larger.
  st.step_copy_idle_bytes =
      std::clamp<int64_t>(on_top - std::max<int64_t>(0, st.step_copy_bytes - st.activations_bytes), 0, on_top);
  st.other_bytes += on_top;
  st.total_bytes += on_top;
}

// DeepSpeed 0.3's ZeRO-3 gradient path (Zero3Gather::kPerTensor; stage3.py and
// partition_parameters.py at v0.3.13) holds, beyond the gathered weights `gathered` counts:
// - two reduce buckets of reduce_bucket_size = 5e8 elements in the gradients' dtype, allocated as
//   the backward starts (the double buffer of contiguous_gradients with overlap_comm, both on by
//   default; stage3.py backward: ipg_buffer buf_0 and buf_1);
// - each gradient larger than a bucket in a tensor of its own (`extra_large_param_to_reduce`),
//   reduced when the next gradient's hook overflows the bucket and freed only at the reduction
//   after that (partition_previous_reduced_grads copies its shard out);
// - the reduction's input: `_reduce_scatter_gradient` hands PyTorch's list reduce_scatter one view
//   per rank, which ProcessGroupNCCL copies into one flat tensor of the whole gradient
//   (flatten_for_scatter_gather).
// Two moments of a layer's backward set the peak. As its recompute and backward begin, the
// buckets and the last gradient of the layer after (its QKV weight's, awaiting its shard copy)
// sit beside the gathered weights. At the MLP's input matrix's gradient hook, its weight, its
// gradient, the output matrix's gradient and that one's flat copy are held at once (the hook's
// bucket overflow reduces the output matrix's); by then autograd has freed the MLP's saved
// tensors (its input, the activation's input, the second matrix's input, the dropout mask). A
// matrix within a bucket is copied into it (counted with the buckets), and the reduction's flat
// copies come to at most a bucket. Beside them, the activation gradients autograd holds at each
// moment (PyTorch's engine frees a node's input gradient once the node has run, and the residual
// add hands its output's gradient on to both branches): the layer output's gradient through the
// whole backward (the residual's, and the recomputing checkpoint's argument), and at the hook also
// the MLP input's gradient, which the first matrix's backward has just made for the norm's
// backward (the engine runs a weight's AccumulateGrad, and so its hook, before that norm). `mlp_in`:
// the MLP's first (fused gated) matrix's TP-local elements. Returns what these add to `gathered`,
// never less than 0.
int64_t PerTensorZero3GradBytes(const ModelSpec& m, const PlanSpec& p, int64_t mlp_in, int64_t gathered) {
  constexpr int64_t kBucket = 500000000;  // DeepSpeed v0.3.13 reduce_bucket_size default
  const int64_t w = DtypeBytes(p.dtypes.weights), gr = DtypeBytes(p.dtypes.grads);
  const int64_t buckets = 2 * kBucket * gr;
  const int64_t qkv = (m.heads + 2 * m.kv_heads) * m.head_dim * m.hidden / p.tp;
  const int64_t mlp_out = m.ffn_hidden * m.hidden / p.tp;
  int64_t freed = 0;
  VisitLayerActivations(m, p, false, Recompute::kNone, [&](const char* name, int64_t bytes) {
    const std::string_view n(name);
    if (n == "fc1_input" || n == "gelu_input" || n == "swiglu_gate_up" || n == "fc2_input" || n == "mlp_dropout_mask")
      freed += bytes;
  });
  // One residual-stream activation gradient (sbh, sequence-sharded under sequence parallelism).
  const int64_t act_grad =
      ActBytes(p) * (p.seq_len / p.cp) * p.micro_batch * m.hidden / (p.sequence_parallel ? p.tp : 1);
  const int64_t begin = buckets + (qkv > kBucket ? qkv * gr : 0) + gathered + act_grad;
  const int64_t at_mlp =
      buckets + mlp_in * w + mlp_in * gr + (mlp_out > kBucket ? 2 * mlp_out * gr : kBucket * gr) - freed + 2 * act_grad;
  return std::max<int64_t>(0, std::max(begin, at_mlp) - gathered);
}

// A stage's named overheads: CUDA context, cuBLAS workspace, NCCL buffers of its `comms`
// communicators, ZeRO-3's gathered and prefetched layers (largest layer `max_layer` parameters),
// fragmentation; then its total.
void PlaceOverheads(const ModelSpec& m, const PlanSpec& p, const GpuSpec& g, const MemoryOverheads& o, int64_t comms,
                    int64_t max_layer, int64_t end_params, bool has_experts, StageMemory* out) {
  StageMemory& st = *out;
  st.cuda_context_bytes = CudaContextBytes(p, o);
  st.cublas_workspace_bytes = o.cublas_workspace_bytes;
  // Transformer Engine allocates cuBLAS workspaces of its own through PyTorch's allocator
  // (transformer_engine/pytorch/module/base.py: get_workspace() holds one of
  // get_cublas_workspace_size_bytes(), 33,554,432 B from compute capability 9 up and 4,194,304
  // below; GroupedLinear, the MoE grouped GEMM, one more per compute stream,
  // get_multi_stream_cublas_workspace(), 4 streams: common/util/multi_stream.cpp). Megatron CI's
  // golden peaks of the same test on H100 and A100 agree: higher on H100 by a median of 28 MiB
  // over 41 tests with TE (28 MiB here), 0.18 GiB over 4 with its grouped GEMM (0.137 here), and
  // 1 MiB in the two without any TE module (docs/memory.md §4).
  if (p.transformer_engine) {
    const int64_t ws = g.compute_capability_major >= 9 ? int64_t{33554432} : int64_t{4194304};
    st.te_workspace_bytes = ws * (1 + (has_experts && p.moe_grouped_gemm ? 4 : 0));
  }
  st.nccl_bytes = comms * o.nccl_channels * 2 * o.nccl_buffsize_bytes;
  // ZeRO-3 gathers a layer's full (TP-local) weights before using it and prefetches the next.
  // Per-tensor gathers (DeepSpeed 0.3) hold fewer: the sub-module in use plus what was
  // prefetched, which stops at stage3_max_live_parameters = 1e9 elements (DeepSpeed v0.3.13
  // constants.py and stage3.py prefetch_next_sub_modules): at most 1e9 elements plus one layer's
  // largest matrix, the MLP's (fused gated) weight.
  if (p.zero == 3) {
    int64_t live = 2 * max_layer;
    if (p.zero3_gather == Zero3Gather::kPerTensor) {
      const int64_t mlp = m.ffn_hidden * m.hidden * (m.mlp == MlpKind::kSwiglu ? 2 : 1) / p.tp;
      live = std::min(live, int64_t{1000000000} + mlp);
      st.zero3_grad_bytes = PerTensorZero3GradBytes(m, p, mlp, live * DtypeBytes(p.dtypes.weights));
    }
    st.zero3_prefetch_bytes = live * DtypeBytes(p.dtypes.weights);
  }
  st.fragmentation_bytes = RoundBytes(o.fragmentation_frac * static_cast<double>(st.activations_bytes));
  // FSDP2's sharded gradients on the reduce-scatter stream's pool (PlaceModelStates). The optimizer
  // frees them (zero_grad sets them to None, PyTorch's default), so through the next forward that
  // pool holds their blocks reserved where the compute stream's activations cannot use them: at the
  // activations' peak they are reserved, not allocated. Not so under ZeRO-2/3 with several
  // microbatches a step, whose later forwards run with the sharded gradients accumulating. Under
  // pipeline parallelism they are made after the step's last backward, beside the unsharded
  // accumulators, and counted here on top of them.
  if (st.rs_pool_bytes > 0) {
    const bool accumulating = p.zero >= 2 && p.Microbatches() > 1;
    st.rs_pool_idle_bytes = accumulating ? 0 : std::min(st.rs_pool_bytes, st.activations_bytes);
  }
  // FSDP2's all-gathers allocate their flat output on the all-gather copy-in stream
  // (_fsdp_collectives.py foreach_all_gather: all_gather_output = torch.empty(...) under
  // all_gather_copy_in_stream, at 415cc26) and free it once copied out into the parameters, so that
  // stream's pool keeps the largest group's flat buffer for the rest of the run. torchtitan wraps
  // each block and the root module (the embedding, the final norm and an untied output head), whose
  // group is the largest wherever the vocabulary's share outweighs a block's (Llama 3 8B: 1.05e9
  // parameters against 0.22e9). At the activations' peak one block's flat buffer may still be held
  // (the last all-gather's), so the pool holds at least the difference idle, in the gathered dtype.
  if (p.zero3_gather == Zero3Gather::kFsdp2 && p.zero >= 1 && end_params > max_layer)
    st.ag_pool_idle_bytes = (end_params - max_layer) * DtypeBytes(p.dtypes.weights);
  st.other_bytes = st.cuda_context_bytes + st.cublas_workspace_bytes + st.te_workspace_bytes + st.nccl_bytes +
                   st.zero3_prefetch_bytes + st.zero3_grad_bytes + st.fragmentation_bytes + RsPoolOnTopBytes(st, p) +
                   st.ag_pool_idle_bytes;
  st.total_bytes = st.weights_bytes + st.grads_bytes + st.optimizer_bytes + st.activations_bytes + st.other_bytes;
  if (p.keep_lp_grads) PlaceStepCopy(p, g, &st);
}

}  // namespace

namespace {
// The estimate into `r`, a report as MemoryReport{} leaves it but for its stages' capacity.
void EstimateInto(const ModelSpec& m, const PlanSpec& p, const GpuSpec& g, const MemoryOverheads& o,
                  MemoryDetail detail, const ParamCount* params, MemoryReport& r);
}  // namespace

MemoryReport EstimateMemory(const ModelSpec& m, const PlanSpec& p, const GpuSpec& g, const MemoryOverheads& o,
                            MemoryDetail detail, const ParamCount* params) {
  MemoryReport r;
  EstimateInto(m, p, g, o, detail, params, r);
  return r;
}

void EstimateMemory(const ModelSpec& m, const PlanSpec& p, const GpuSpec& g, const MemoryOverheads& o,
                    MemoryDetail detail, const ParamCount* params, MemoryReport* out) {
  std::vector<StageMemory> kept = std::move(out->stages);  // its capacity, for the stages below
  kept.clear();
  *out = MemoryReport{};
  out->stages = std::move(kept);
  EstimateInto(m, p, g, o, detail, params, *out);
}

namespace {
void EstimateInto(const ModelSpec& m, const PlanSpec& p, const GpuSpec& g, const MemoryOverheads& o,
                  MemoryDetail detail, const ParamCount* params, MemoryReport& r) {
  r.params = params != nullptr ? *params : CountParams(m);
  // The padded vocabulary's rows (PlanSpec::vocab_divisible_by) are weights like the others.
  if (const int64_t pad = (PaddedVocab(m, p) - m.vocab) * m.hidden; pad > 0) {
    const int64_t copies = 1 + (r.params.output_head > 0 ? 1 : 0);
    r.params.embedding += pad;
    if (r.params.output_head > 0) r.params.output_head += pad;
    r.params.total += copies * pad;
    r.params.active += copies * pad;
  }
  r.capacity_bytes = g.CapacityBytes();

  // Sharding groups. Dense states: DP x CP (CP ranks hold identical weights; Megatron's
  // distributed optimizer shards over the DP-with-CP group), or the HSDP shard group.
  // Expert states: the expert-data-parallel group edp = tp*cp*dp / (ep*etp).
  const int64_t dense_group = p.sharding == Sharding::kHsdp ? p.hsdp_shard_size : p.dp * p.cp;
  const int64_t edp = p.tp * p.cp * p.dp / (p.ep * p.etp);
  const int64_t expert_group = p.sharding == Sharding::kHsdp ? std::min(p.hsdp_shard_size, edp) : edp;
  r.dense_shard_group = dense_group;
  r.expert_shard_group = expert_group;

  r.bytes_per_param = BytesPerParam(p);

  const int64_t t = p.tp;
  const LayerParams& dl = r.params.dense_layer;
  const LayerParams& ml = r.params.moe_layer;
  const RankParams dense_rank = LayerParamsOnRank(m, p, dl), moe_rank = LayerParamsOnRank(m, p, ml);
  // One MTP module's layer on its rank: the decoder's layer of its kind, or a hybrid model's
  // mtp_pattern blocks kind by kind.
  RankParams mtp_rank = r.params.mtp_moe ? moe_rank : dense_rank;
  if (m.Hybrid() && m.mtp_layers > 0) {
    mtp_rank = RankParams{};
    for (char kind : m.mtp_pattern) {
      const RankParams k = LayerParamsOnRank(m, p, HybridLayerParams(m, kind));
      mtp_rank.dense += k.dense;
      mtp_rank.expert += k.expert;
    }
  }

  // Communicators this rank joins with more than one member: tp, cp, dp, pp, ep (+ the
  // dp-with-cp and expert-dp groups when they differ from dp).
  int64_t comms = 0;
  for (int64_t size : {p.tp, p.cp, p.dp, p.pp, p.ep}) comms += size > 1 ? 1 : 0;
  if (p.cp > 1 && p.dp > 1) ++comms;
  if (m.moe && edp > 1 && edp != p.dp) ++comms;

  // Activation bytes per layer kind (dense, MoE) and recompute mode (none, selective, full):
  // the same for every layer of a kind, so computed once, not per layer.
  // Only the modes this plan uses: none (what recompute re-materialises against) and its own.
  int64_t act[2][3] = {};
  // The same for the layers that keep their GEMMs in BF16 under a quantized precision
  // (PlanSpec::KeepsLayerInBf16): their linear inputs saved in 16 bits, not as FP8/FP4 copies.
  int64_t act_bf16[2][3] = {};
  auto fill = [&](const PlanSpec& q, int64_t(&out)[2][3]) {
    const Recompute modes[3] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
    for (int moe = 0; moe < (m.moe ? 2 : 1); ++moe)
      for (int mode = 0; mode < 3; ++mode)
        if (mode == 0 || modes[mode] == p.recompute) out[moe][mode] = LayerActivationBytes(m, q, moe == 1, modes[mode]);
  };
  fill(p, act);
  if (p.HasBf16Layers()) fill(p.Bf16LayerPlan(), act_bf16);  // (a copy only for such plans: none on the search's path)
  // Fine-grained activation offloading (PlanSpec::offload_modules): the offloaded modules' saved
  // tensors per layer kind, taken at the plan's precision for every layer (its BF16 layers' FP8
  // inputs aside).
  const int64_t fine[2] = {FineGrainedOffloadBytes(m, p, false), m.moe ? FineGrainedOffloadBytes(m, p, true) : 0};

  // The model chunks a pipeline rank holds. Interleaved: rank r holds chunks r, r + pp, ...
  // (chunk c on rank c mod pp while c / pp < vpp), so the first chunk (0) is rank 0's and the last
  // (pp vpp - 1) rank pp-1's; DualPipe: rank r holds stages r and pp-1-r (both
  // directions of the bidirectional pipeline), so ranks 0 and pp-1 hold both ends.
  const bool dualpipe = p.schedule == Schedule::kDualPipe;
  auto holds_first = [&](int64_t rank) { return rank == 0 || (dualpipe && rank == p.pp - 1); };
  auto holds_last = [&](int64_t rank) { return rank == p.pp - 1 || (dualpipe && rank == 0); };
  r.stages.reserve(detail == MemoryDetail::kFull ? static_cast<size_t>(p.pp) : 1);
  const bool full_all = p.recompute == Recompute::kFull && p.recompute_layers <= 0;
  const bool uniform = p.recompute != Recompute::kFull || full_all;  // every layer the same mode
  // kTotalsOnly: ranks holding the same layers (counts of dense and MoE layers, embedding, head)
  // differ only in their in-flight microbatches, which never grow with the rank under any
  // schedule (InflightMicrobatches), so the first rank of each kind is that kind's worst: the
  // others are skipped.
  const RankLayout* layout = uniform ? &RankLayoutOf(m, p) : nullptr;
  const bool by_kind = uniform && detail == MemoryDetail::kTotalsOnly;
  const int64_t visits = by_kind ? static_cast<int64_t>(layout->kinds.size()) : p.pp;
  for (int64_t visit = 0; visit < visits; ++visit) {
    // kTotalsOnly (uniform): the first rank of each kind; otherwise every rank.
    const int64_t stage = by_kind ? layout->first_rank[static_cast<size_t>(visit)] : visit;
    const bool has_first = holds_first(stage);
    const bool has_last = holds_last(stage);
    int64_t n[2] = {0, 0};       // dense, MoE layers on this rank (when `uniform`)
    int64_t n_bf16[2] = {0, 0};  // of them, the BF16 ones
    if (uniform) {
      const StageComposition& here = layout->kinds[layout->kind_of[static_cast<size_t>(stage)]];
      n[0] = here.dense;
      n[1] = here.moe;
      n_bf16[0] = here.bf16_dense;
      n_bf16[1] = here.bf16_moe;
    }
    StageMemory st;
    st.stage = stage;
    if (detail == MemoryDetail::kFull) st.layers = StageLayers(m, p, stage);
    if (has_last) st.mtp_layers = m.mtp_layers;

    // ---- parameters on this GPU, and the activations of one microbatch (one pass over the
    // layers in execution order: full recompute covers the first recompute_layers, or all).
    int64_t dense = 0, expert = 0, max_layer = 0, layers_here = 0;
    int64_t per_mb = 0, max_working = 0;
    int64_t ckpt_mb = 0, ckpt_max = 0;  // full recomputation's checkpoints: per microbatch, one layer's most
    int64_t layer_count = 0;            // layers on this rank, for the norms Muon leaves to Adam
    int64_t fine_mb = 0, fine_max = 0;  // fine-grained offloading: per microbatch, one layer's most
    if (uniform) {
      // Every layer of a kind costs the same, so the sums below are counts times one layer (the
      // search's hot path: no loop over layers).
      const int mode = full_all ? 2 : (p.recompute == Recompute::kSelective ? 1 : 0);
      for (int moe = 0; moe < 2; ++moe) {
        if (n[moe] == 0) continue;
        const RankParams& rp = moe ? moe_rank : dense_rank;
        dense += n[moe] * rp.dense;
        expert += n[moe] * rp.expert;
        layer_count += n[moe];
        max_layer = std::max(max_layer, rp.dense + rp.expert);
        per_mb += (n[moe] - n_bf16[moe]) * act[moe][mode] + n_bf16[moe] * act_bf16[moe][mode];
        fine_mb += n[moe] * fine[moe];
        fine_max = std::max(fine_max, fine[moe]);
        if (mode == 2) {
          ckpt_mb += (n[moe] - n_bf16[moe]) * act[moe][2] + n_bf16[moe] * act_bf16[moe][2];
          ckpt_max = std::max({ckpt_max, act[moe][2], n_bf16[moe] > 0 ? act_bf16[moe][2] : 0});
        }
        if (mode != 0) max_working = std::max(max_working, act[moe][0] - act[moe][mode]);
        if (mode != 0 && n_bf16[moe] > 0) max_working = std::max(max_working, act_bf16[moe][0] - act_bf16[moe][mode]);
      }
    } else
      ForEachStageLayer(m, p, stage, [&](int64_t l) {
        const bool moe = m.IsMoeLayer(l);
        const RankParams& rp = moe ? moe_rank : dense_rank;
        const int64_t d = rp.dense, x = rp.expert;
        dense += d;
        expert += x;
        ++layer_count;
        max_layer = std::max(max_layer, d + x);
        const bool full = full_all || (p.recompute == Recompute::kFull && layers_here < p.recompute_layers);
        const int mode = full ? 2 : (p.recompute == Recompute::kSelective ? 1 : 0);
        const auto& a = p.KeepsLayerInBf16(l, m.layers) ? act_bf16[moe] : act[moe];
        per_mb += a[mode];
        if (mode != 2) {
          fine_mb += fine[moe ? 1 : 0];
          fine_max = std::max(fine_max, fine[moe ? 1 : 0]);
        }
        if (mode == 2) {
          ckpt_mb += a[2];
          ckpt_max = std::max(ckpt_max, a[2]);
        }
        // Backward of a recomputed layer re-materialises what recompute dropped, one layer at a time.
        if (mode != 0) max_working = std::max(max_working, a[0] - a[mode]);
        ++layers_here;
      });
    if (has_last && m.mtp_layers > 0) {
      // The MTP modules' layers: their activations those of the costed layers they make (one per
      // module, a hybrid model's one per mtp_pattern block, as its mix), recomputed as the plan's
      // selective modules say, never by full recompute's first-layers count; their parameters
      // exact (mtp_copies of one module's layer, a hybrid model's blocks kind by kind). The
      // `uniform` kinds above counted them as layers of their kind: that count is replaced here.
      const int moe = r.params.mtp_moe ? 1 : 0;
      const RankParams& rp = moe ? moe_rank : dense_rank;
      const int64_t costed = m.MtpCostedLayers();
      if (uniform) {
        dense -= costed * rp.dense;
        expert -= costed * rp.expert;
      } else {
        const int mode = p.recompute == Recompute::kSelective ? 1 : 0;
        per_mb += costed * act[moe][mode];
      }
      dense += r.params.mtp_copies * mtp_rank.dense;
      expert += r.params.mtp_copies * mtp_rank.expert;
      max_layer = std::max(max_layer, mtp_rank.dense + mtp_rank.expert);
    }
    // What Muon leaves to Adam: the layers' norms, the embedding, the output head and the final norm.
    const int64_t dense_before_ends = dense;
    if (has_first) dense += r.params.embedding / t + r.params.position;  // vocab-parallel embedding
    if (has_last) {
      // The output head; with tied embeddings and pp > 1 the last stage keeps its own copy of
      // the word embedding (Megatron), kept in sync by an all-reduce of its gradient.
      if (!m.tied_embeddings) dense += r.params.output_head / t;
      else if (!has_first) dense += r.params.embedding / t;
      dense += r.params.final_norm;
      if (m.mtp_layers > 0) {
        // MTP embeds the shifted tokens on this stage: an untied model keeps a copy of the word
        // embedding here too (Megatron-Core GPTModel builds it when pre_process or mtp_process).
        if (!m.tied_embeddings && !has_first) dense += r.params.embedding / t;
        // eh_proj is column-parallel (2h x h/t); the three norms are replicated.
        dense += r.params.mtp_copies * (r.params.mtp_eh_proj / t + r.params.mtp_norms);
      }
    }
    st.dense_params = dense;
    st.expert_params = expert;
    st.params = dense + expert;
    const int64_t adam_params = (dense - dense_before_ends) + layer_count * dl.norms;

    // Activation offloading (PlanSpec::offload_activation_layers; pp = 1, no recomputation): the
    // first N layers' saved tensors go to host memory, so at most the other layers' sets are on
    // the GPU at once (Transformer Engine's default scheduling: "at most (model_layers -
    // num_layers) sets of activations are on GPU at any time", cpu_offloading.rst at d0067d0d).
    if (p.offload_activation_layers > 0) {
      const int64_t offloaded = std::min(OffloadedActivationBytes(m, p), per_mb);
      per_mb -= offloaded;
      st.offloaded_activations_bytes = offloaded;
      st.host_bytes += offloaded;
    }
    // Fine-grained activation offloading (PlanSpec::offload_modules): the named modules' saved
    // tensors leave the GPU for every microbatch in flight, but for the offload margin, the last
    // group of each module name, kept on the GPU so that its reload does not stall the backward
    // (one layer's groups: PipelineOffloadManager.post_warmup_callback at d98e8a64).
    if (fine_mb > 0) {
      const int64_t offloaded = std::min(fine_mb, per_mb);
      per_mb -= offloaded;
      max_working += std::min(fine_max, offloaded);
      st.offloaded_activations_bytes = offloaded;
    }
    // Checkpoints in host memory (PlanSpec::offload_checkpoints, DeepSpeed's cpu_checkpointing):
    // full recomputation's layer inputs leave the GPU as the forward passes each layer, for every
    // microbatch in flight, and the layer being recomputed has its own back beside the working set.
    if (p.offload_checkpoints && ckpt_mb > 0) {
      per_mb -= ckpt_mb;
      max_working += ckpt_max;
      st.offloaded_checkpoints_bytes = ckpt_mb;
    }

    // ---- model states, activations and overheads
    PlaceModelStates(p, dense, expert, dense_group, expert_group, adam_params, &st);
    PlaceActivations(m, p, stage, has_first, has_last, per_mb, max_working, &st);
    if (st.offloaded_checkpoints_bytes > 0)
      st.host_bytes += RoundBytes(static_cast<double>(st.offloaded_checkpoints_bytes) * st.inflight_microbatches);
    if (fine_mb > 0 && st.offloaded_activations_bytes > 0)  // pinned host memory for every microbatch in flight
      st.host_bytes += RoundBytes(static_cast<double>(st.offloaded_activations_bytes) * st.inflight_microbatches);
    PlaceOverheads(m, p, g, o, comms, max_layer, dense - dense_before_ends, expert > 0, &st);
    r.least_per_gpu_bytes = std::max(r.least_per_gpu_bytes, LeastOnGpuBytes(st));
    if (detail == MemoryDetail::kFull) {
      r.stages.push_back(std::move(st));
    } else if (r.stages.empty() || st.total_bytes > r.stages.front().total_bytes) {
      r.stages.assign(1, st);  // the first stage with the most bytes, as below
    }
  }
  if (detail == MemoryDetail::kFull) {
    for (const auto& st : r.stages)
      if (st.total_bytes > r.stages[r.worst_stage].total_bytes) r.worst_stage = st.stage;
    r.per_gpu_bytes = r.stages[r.worst_stage].total_bytes;
  } else {
    r.worst_stage = r.stages.front().stage;
    r.per_gpu_bytes = r.stages.front().total_bytes;
  }
  r.fits = r.per_gpu_bytes <= r.capacity_bytes;
  r.verdict = r.fits                                      ? FitVerdict::kFits
              : r.least_per_gpu_bytes <= r.capacity_bytes ? FitVerdict::kTight
                                                          : FitVerdict::kDoesNotFit;
}
}  // namespace

const char* FitVerdictName(FitVerdict v) {
  switch (v) {
    case FitVerdict::kFits: return "fits";
    case FitVerdict::kTight: return "tight";
    case FitVerdict::kDoesNotFit: return "out_of_memory";
  }
  return "out_of_memory";
}

}  // namespace meshplan::core
