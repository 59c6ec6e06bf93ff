#include "core/flops.h"

#include <algorithm>
#include <cmath>

#include "core/params.h"

namespace meshplan::core {
namespace {

// MLA's up-projections, the weights a token multiplies after the latents: q's up-projection (or
// the whole q projection without a q latent) and kv's.
double MlaUpProjectionParams(const ModelSpec& m) {
  const MlaSpec& a = *m.mla;
  const double heads = static_cast<double>(m.heads);
  const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
  const double q_in = a.q_lora_rank > 0 ? static_cast<double>(a.q_lora_rank) : static_cast<double>(m.hidden);
  return q_in * heads * qk +
         static_cast<double>(a.kv_lora_rank) * heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);
}

// Weights one token multiplies in a layer's attention block: the projections.
double AttentionMatmulParams(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    // The down-projections (q's latent when there is one, kv's latent and RoPE key), the
    // up-projections, the output projection.
    return (a.q_lora_rank > 0 ? h * static_cast<double>(a.q_lora_rank) : 0.0) +
           h * static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim) + MlaUpProjectionParams(m) +
           static_cast<double>(m.heads * a.v_head_dim) * h;
  }
  const double q = static_cast<double>(m.heads * m.head_dim);
  const double kv = static_cast<double>(m.kv_heads * m.head_dim);
  return 2 * h * q + 2 * h * kv;
}

// ... in its MLP or MoE block: the MLP, or the routed experts top_k times, the shared experts and
// the router.
double FfnMatmulParams(const ModelSpec& m, bool moe_layer) {
  const double h = static_cast<double>(m.hidden);
  const double mats = m.mlp == MlpKind::kSwiglu ? 3 : 2;
  if (moe_layer && m.moe) {
    // A latent MoE's experts multiply latent-wide tokens, between its two latent projections.
    const MoeSpec& e = *m.moe;
    const double w = static_cast<double>(e.Width(m.hidden));
    return mats * (w * static_cast<double>(e.top_k * e.expert_ffn_hidden) +
                   h * static_cast<double>(e.shared_experts * e.shared_expert_ffn_hidden)) +
           h * static_cast<double>(e.experts) +         // router
           2 * h * static_cast<double>(e.latent_size);  // latent projections
  }
  return mats * h * static_cast<double>(m.ffn_hidden);
}

// ... in a Mamba-2 mixer: in_proj and out_proj (core/params.h).
double MambaMatmulParams(const ModelSpec& m) {
  const MambaSpec& x = *m.mamba;
  return static_cast<double>(m.hidden) * static_cast<double>(x.InProjWidth() + x.Inner());
}

// ... in one block of a hybrid pattern's kind ('M', '*', '-', 'E').
double HybridBlockMatmulParams(const ModelSpec& m, char kind) {
  if (kind == '*') return AttentionMatmulParams(m);
  if (kind == '-') return FfnMatmulParams(m, false);
  if (kind == 'E') return FfnMatmulParams(m, true);
  if (kind == 'M' && m.mamba) return MambaMatmulParams(m);
  return 0;
}

// Weights one token multiplies in a layer: everything but norms, biases and sinks, with routed
// experts counted top_k times. Biases and norms are O(h) per token and left out, as in every
// published FLOP formula. A hybrid model's layer: its kinds' weighted by their counts.
double LayerMatmulParams(const ModelSpec& m, bool moe_layer) {
  if (m.Hybrid()) {
    const HybridCounts c = m.HybridLayerCounts();
    double sum = static_cast<double>(c.attention) * AttentionMatmulParams(m) +
                 static_cast<double>(c.mlp) * FfnMatmulParams(m, false) +
                 static_cast<double>(c.moe) * FfnMatmulParams(m, true);
    if (m.mamba) sum += static_cast<double>(c.mamba) * MambaMatmulParams(m);
    return sum / static_cast<double>(std::max<int64_t>(m.layers, 1));
  }
  return AttentionMatmulParams(m) + FfnMatmulParams(m, moe_layer);
}

// Weights one token multiplies again, per model, under selective recomputation's GEMM modules
// (core/specs.h RecomputeModule): mlp, the dense layers' MLPs; mla_up_proj, MLA's q (up-)projection
// and kv up-projection; shared_experts, the MoE layers' shared experts; moe, the MoE layers whole
// (their router, top_k routed experts and shared experts: FfnMatmulParams).
double SelectiveRecomputeMatmulParams(const ModelSpec& m, const PlanSpec& p) {
  const double h = static_cast<double>(m.hidden);
  const double mats = m.mlp == MlpKind::kSwiglu ? 3 : 2;
  double moe_layers = static_cast<double>(m.MoeLayerCount());
  double dense_layers = static_cast<double>(m.layers) - moe_layers;
  if (m.Hybrid()) {  // the '-' and 'E' layers
    const HybridCounts c = m.HybridLayerCounts();
    dense_layers = static_cast<double>(c.mlp);
    moe_layers = static_cast<double>(c.moe);
  }
  double params = 0;
  if (p.Recomputes(RecomputeModule::kMlp)) params += dense_layers * mats * h * static_cast<double>(m.ffn_hidden);
  if (p.Recomputes(RecomputeModule::kMlaUpProj) && m.mla)
    params += static_cast<double>(m.layers) * MlaUpProjectionParams(m);
  if (p.Recomputes(RecomputeModule::kMoe) && m.moe)  // the whole MoE layer: router, routed and shared experts
    params += moe_layers * FfnMatmulParams(m, true);
  else if (p.Recomputes(RecomputeModule::kSharedExperts) && m.moe)
    params += moe_layers * mats * h * static_cast<double>(m.moe->shared_experts * m.moe->shared_expert_ffn_hidden);
  if (p.Recomputes(RecomputeModule::kTorchtitanOp)) {
    // wk, wo and w3 (SwiGLU) or fc2 (GELU), under FP8 too (core/step_graph.cc).
    const double kv = static_cast<double>(m.kv_heads * m.head_dim), q = static_cast<double>(m.heads * m.head_dim);
    const double f = static_cast<double>(m.ffn_hidden);
    params += static_cast<double>(m.layers) * (h * kv + q * h + h * f);
  }
  if (p.Recomputes(RecomputeModule::kSaveQkvProj)) {
    // The attention's output projection and the MLP's input GEMM (w1 and w3 under SwiGLU), not
    // its output GEMM nor Q/K/V (core/step_graph.cc); the attention itself, HardwareFlops.
    const double q = static_cast<double>(m.heads * m.head_dim), f = static_cast<double>(m.ffn_hidden);
    params += static_cast<double>(m.layers) * (q * h + (mats - 1) * h * f);
  }
  return params;
}

}  // namespace

double SsdForwardFlopsPerToken(const MambaSpec& x) {
  // Mamba-2's SSD in chunks of Q tokens (Dao & Gu 2024, arXiv 2405.21060 §6): per chunk and group
  // C B^T (Q x Q, N deep: 2 Q^2 N), per chunk and head (C B^T o L) X (Q x P, Q deep: 2 Q^2 P), the
  // chunk's state B^T X (N x P, Q deep: 2 N P Q) and the output from the carried state C S
  // (Q x P, N deep: 2 Q N P); per token 2 Q N G + H (2 Q P + 4 N P).
  const double q = static_cast<double>(x.chunk), n = static_cast<double>(x.state), pd = static_cast<double>(x.head_dim);
  return 2 * q * n * static_cast<double>(x.groups) + static_cast<double>(x.heads) * (2 * q * pd + 4 * n * pd);
}

double KeysPerQuery(int64_t seq_len, int64_t window, AttentionFlops convention) {
  const double s = static_cast<double>(seq_len);
  if (window <= 0 || window >= seq_len) return convention == AttentionFlops::kCausal ? 0.5 * s : s;
  // A causal window of w keys: query i meets min(i + 1, w) keys, on average w - w^2/(2s) (the
  // continuous count, equal to the causal s/2 at w = s); the full convention counts w per query.
  const double w = static_cast<double>(window);
  return convention == AttentionFlops::kCausal ? w - w * w / (2 * s) : w;
}

double ChunkedKeysPerQuery(int64_t seq_len, int64_t chunk, AttentionFlops convention) {
  if (chunk <= 0 || chunk >= seq_len) return KeysPerQuery(seq_len, 0, convention);
  const double s = static_cast<double>(seq_len), c = static_cast<double>(chunk);
  const double n = std::ceil(s / c);
  return (convention == AttentionFlops::kCausal ? 0.5 : 1.0) * n * c * c / s;
}

ForwardFlops ForwardFlopsPerToken(const ModelSpec& m, int64_t seq_len, AttentionFlops convention) {
  ForwardFlops f;
  // QK^T: 2*s*(a*d_qk) per token; AV: 2*s*(a*d_v). Causal kernels skip half the scores.
  double qk_dim, v_dim;
  if (m.mla) {
    qk_dim = static_cast<double>(m.heads * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim));
    v_dim = static_cast<double>(m.heads * m.mla->v_head_dim);
  } else {
    qk_dim = v_dim = static_cast<double>(m.heads * m.head_dim);
  }
  const double moe_layers = static_cast<double>(m.MoeLayerCount());
  const double dense_layers = static_cast<double>(m.layers) - moe_layers;
  f.matmul = 2 * dense_layers * LayerMatmulParams(m, false) +
             (moe_layers > 0 ? 2 * moe_layers * LayerMatmulParams(m, true) : 0.0);
  // Per token 2 (d_qk + d_v) FLOPs per key it meets: the whole (causal) sequence in a global
  // layer, the window in a windowed one. A hybrid model attends in its '*' layers only, and its
  // Mamba layers add the SSD scan's matmuls (SsdForwardFlopsPerToken).
  const double full_keys = KeysPerQuery(seq_len, 0, convention);
  const double windowed = static_cast<double>(m.WindowedLayerCount());
  const double attending =
      m.Hybrid() ? static_cast<double>(m.HybridLayerCounts().attention) : static_cast<double>(m.layers);
  const double window_keys = m.chunked_attention ? ChunkedKeysPerQuery(seq_len, m.sliding_window, convention)
                                                 : KeysPerQuery(seq_len, m.sliding_window, convention);
  f.attention = 2 * (qk_dim + v_dim) * ((attending - windowed) * full_keys + windowed * window_keys);
  if (m.Hybrid() && m.mamba)
    f.matmul += static_cast<double>(m.HybridLayerCounts().mamba) * SsdForwardFlopsPerToken(*m.mamba);
  f.logits = 2 * static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
  if (m.mtp_layers > 0) {
    // Each MTP module: eh_proj (2h x h), one layer of the last layer's kind, its own logits
    // (Megatron-LM training.py num_floating_point_operations counts the same three); a hybrid
    // model's layer is its mtp_pattern's blocks, each depth running them once.
    const double d = static_cast<double>(m.mtp_layers), h = static_cast<double>(m.hidden);
    if (m.Hybrid()) {
      double params = 0, attending_blocks = 0, mamba_blocks = 0;
      for (char kind : m.mtp_pattern) {
        params += HybridBlockMatmulParams(m, kind);
        attending_blocks += kind == '*' ? 1 : 0;
        mamba_blocks += kind == 'M' ? 1 : 0;
      }
      f.matmul += d * (2 * params + 2 * 2 * h * h);
      if (m.mamba) f.matmul += d * mamba_blocks * SsdForwardFlopsPerToken(*m.mamba);
      f.attention += d * attending_blocks * 2 * (qk_dim + v_dim) * full_keys;
    } else {
      f.matmul += d * (2 * LayerMatmulParams(m, m.MtpLayerIsMoe()) + 2 * 2 * h * h);
      // Its layer is the last decoder layer's kind, window included.
      const bool last_windowed = m.layers > 0 && m.IsWindowedLayer(m.layers - 1);
      f.attention += d * 2 * (qk_dim + v_dim) * (last_windowed ? window_keys : full_keys);
    }
    f.logits *= 1 + d;
  }
  return f;
}

double ModelFlopsPerIteration(const ForwardFlops& f, const PlanSpec& p) {
  const double tokens = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
  return 3 * f.Total() * tokens;
}

double HardwareFlopsPerIteration(const ForwardFlops& f, const ModelSpec& m, const PlanSpec& p) {
  const double tokens = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
  double extra = 0;
  if (p.recompute == Recompute::kFull) {
    // recompute_layers is per pipeline stage, all its model chunks together (PlanSpec).
    const double share =
        p.recompute_layers > 0 ? static_cast<double>(p.recompute_layers * p.pp) / static_cast<double>(m.layers) : 1.0;
    extra = f.matmul + f.attention;
    // PyTorch's checkpoint early stop (PlanSpec::recompute_early_stop; core/step_graph.cc) does not
    // rerun a dense block's MLP output projection, h x f per layer (validation allows it for dense
    // models only).
    if (p.recompute_early_stop)
      extra -= 2 * static_cast<double>(m.layers) * static_cast<double>(m.hidden) * static_cast<double>(m.ffn_hidden);
    extra *= share > 1.0 ? 1.0 : share;
  } else if (p.recompute == Recompute::kSelective) {
    const bool attention = p.Recomputes(RecomputeModule::kCoreAttn) || p.Recomputes(RecomputeModule::kSaveQkvProj);
    extra = (attention ? f.attention : 0.0) + 2 * SelectiveRecomputeMatmulParams(m, p);
  }
  return (3 * f.Total() + extra) * tokens;
}

double ModelFlopsPerIteration(const ModelSpec& m, const PlanSpec& p, AttentionFlops convention) {
  return ModelFlopsPerIteration(ForwardFlopsPerToken(m, p.seq_len, convention), p);
}

double HardwareFlopsPerIteration(const ModelSpec& m, const PlanSpec& p, AttentionFlops convention) {
  return HardwareFlopsPerIteration(ForwardFlopsPerToken(m, p.seq_len, convention), m, p);
}

}  // namespace meshplan::core
