#include "core/params.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace meshplan::core {
namespace {

// Parameters of one MLP h -> f -> h (h the model's hidden size, or `width`: a latent MoE's
// experts): weights, then biases when the model has them.
// gelu: fc1 (h*f) + fc2 (f*h); swiglu: gate + up (2*h*f) + down (f*h).
void AddMlp(const ModelSpec& m, int64_t f, int64_t* sharded, int64_t* replicated, int64_t width = 0) {
  const int64_t h = width > 0 ? width : m.hidden;
  const int64_t in_mats = m.mlp == MlpKind::kSwiglu ? 2 : 1;
  *sharded += in_mats * h * f + f * h;
  if (m.bias == BiasKind::kAll) {
    *sharded += in_mats * f;  // column-parallel biases split with their columns
    *replicated += h;         // the row-parallel output bias is added once, after the reduce
  }
}

}  // namespace

int64_t NormParams(const ModelSpec& m, int64_t dim) {
  return m.norm == NormKind::kLayerNorm ? 2 * dim : dim;  // LayerNorm: gain + bias
}

namespace {

void AddAttention(const ModelSpec& m, LayerParams* out) {
  LayerParams& p = *out;
  const int64_t h = m.hidden;
  if (m.mla) {
    // Multi-head latent attention (DeepSeek-V2 §2.1; V3 config.json): low-rank down-projections
    // are held whole on every TP rank; up-projections split by head.
    const MlaSpec& a = *m.mla;
    const int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      p.attn_replicated += h * a.q_lora_rank + NormParams(m, a.q_lora_rank);
      p.attn_tp_sharded += a.q_lora_rank * m.heads * qk_head;
    } else {
      p.attn_tp_sharded += h * m.heads * qk_head;
    }
    p.attn_replicated += h * (a.kv_lora_rank + a.qk_rope_head_dim) + NormParams(m, a.kv_lora_rank);
    p.attn_tp_sharded += a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
    p.attn_tp_sharded += m.heads * a.v_head_dim * h;  // output projection
  } else {
    const int64_t q = m.heads * m.head_dim;
    const int64_t kv = m.kv_heads * m.head_dim;
    p.attn_kv_proj = 2 * h * kv;
    p.attn_tp_sharded += h * q + p.attn_kv_proj + q * h;  // q, k, v, o
    if (m.bias != BiasKind::kNone) {
      p.attn_tp_sharded += q + 2 * kv;
      p.attn_kv_proj += 2 * kv;
    }
    if (m.bias == BiasKind::kAll) p.attn_replicated += h;  // o bias
  }
  if (m.qk_norm) p.attn_replicated += 2 * NormParams(m, m.head_dim);
  if (m.attention_sinks) p.attn_tp_sharded += m.heads;
}

void AddFfn(const ModelSpec& m, bool moe_layer, LayerParams* out) {
  LayerParams& p = *out;
  if (moe_layer && m.moe) {
    const MoeSpec& e = *m.moe;
    p.router = m.hidden * e.experts + (e.router_bias ? e.experts : 0);
    AddMlp(m, e.expert_ffn_hidden, &p.expert_etp_sharded, &p.expert_replicated, e.Width(m.hidden));
    // Latent MoE: fc1_latent_proj (h -> latent) and fc2_latent_proj (latent -> h), whole on every
    // TP rank (TE Linear, parallel_mode "duplicated"; their biases with add_bias_linear).
    if (e.latent_size > 0)
      p.mlp_replicated += 2 * m.hidden * e.latent_size + (m.bias == BiasKind::kAll ? e.latent_size + m.hidden : 0);
    p.experts = e.experts;
    p.top_k = e.top_k;
    // The shared experts: each one MLP of shared_expert_ffn_hidden (counted once and multiplied;
    // a loop per expert once ran 1e12 times on a mutated file).
    if (e.shared_experts > 0) {
      int64_t sharded = 0, replicated = 0;
      AddMlp(m, e.shared_expert_ffn_hidden, &sharded, &replicated);
      p.mlp_tp_sharded += e.shared_experts * sharded;
      p.mlp_replicated += e.shared_experts * replicated;
    }
  } else {
    AddMlp(m, m.ffn_hidden, &p.mlp_tp_sharded, &p.mlp_replicated);
  }
}

}  // namespace

LayerParams HybridLayerParams(const ModelSpec& m, char kind) {
  LayerParams p;
  p.norms = NormParams(m, m.hidden);  // the block's pre-norm
  if (kind == '*') AddAttention(m, &p);
  else if (kind == '-') AddFfn(m, false, &p);
  else if (kind == 'E') AddFfn(m, true, &p);
  else if (kind == 'M' && m.mamba) {
    const MambaSpec& x = *m.mamba;
    const int64_t conv = x.Inner() + 2 * x.groups * x.state;
    p.mamba_tp_sharded =
        m.hidden * x.InProjWidth() + conv * (x.conv_kernel + 1) + 3 * x.heads + x.Inner() + x.Inner() * m.hidden;
  }
  return p;
}

LayerParams CountLayerParams(const ModelSpec& m, bool moe_layer) {
  if (m.Hybrid()) {
    // The mix: every parameter field's sum over the pattern's layers, divided by their number.
    static constexpr int64_t LayerParams::*kFields[] = {
        &LayerParams::attn_tp_sharded,  &LayerParams::attn_kv_proj,   &LayerParams::attn_replicated,
        &LayerParams::mlp_tp_sharded,   &LayerParams::mlp_replicated, &LayerParams::norms,
        &LayerParams::mamba_tp_sharded, &LayerParams::router,         &LayerParams::expert_etp_sharded,
        &LayerParams::expert_replicated};
    double sums[std::size(kFields)] = {};
    LayerParams mix;
    for (char kind : m.hybrid_pattern) {
      const LayerParams k = HybridLayerParams(m, kind);
      for (size_t i = 0; i < std::size(kFields); ++i) sums[i] += static_cast<double>(k.*kFields[i]);
      if (k.experts > 0) mix.experts = k.experts, mix.top_k = k.top_k;
    }
    const double n = static_cast<double>(std::max<int64_t>(m.layers, 1));
    for (size_t i = 0; i < std::size(kFields); ++i) mix.*kFields[i] = std::llround(sums[i] / n);
    (void)moe_layer;
    return mix;
  }
  LayerParams p;
  AddAttention(m, &p);
  p.norms = 2 * NormParams(m, m.hidden);
  AddFfn(m, moe_layer, &p);
  return p;
}

ParamCount CountParams(const ModelSpec& m) {
  ParamCount c;
  c.embedding = m.vocab * m.hidden;
  c.position = m.position == PositionKind::kLearned ? m.max_seq * m.hidden : 0;
  c.output_head = m.tied_embeddings ? 0 : m.vocab * m.hidden;
  c.final_norm = NormParams(m, m.hidden);
  c.dense_layer = CountLayerParams(m, false);
  c.moe_layer = CountLayerParams(m, true);
  c.moe_layers = m.MoeLayerCount();
  c.dense_layers = m.layers - c.moe_layers;
  const int64_t outside = c.embedding + c.position + c.output_head + c.final_norm;
  c.total = outside + c.dense_layers * c.dense_layer.Total() + c.moe_layers * c.moe_layer.Total();
  c.active = outside + c.dense_layers * c.dense_layer.Active() + c.moe_layers * c.moe_layer.Active();
  if (m.Hybrid()) {
    // Exact, kind by kind (the per-layer mix above is rounded).
    c.total = c.active = outside;
    for (char kind : m.hybrid_pattern) {
      const LayerParams k = HybridLayerParams(m, kind);
      c.total += k.Total();
      c.active += k.Active();
    }
  }
  if (m.mtp_layers > 0) {
    // Megatron-Core MultiTokenPredictionLayer: enorm, hnorm, eh_proj(2h -> h, bias=False), one
    // transformer layer of the decoder's last layer spec (a hybrid model: its mtp_pattern's
    // blocks), final_layernorm; embedding and output head shared with the main model. With
    // mtp_shared one module serves every depth (mtp_use_repeated_layer): its parameters once.
    c.mtp_layers = m.mtp_layers;
    c.mtp_moe = m.MtpLayerIsMoe();
    c.mtp_eh_proj = 2 * m.hidden * m.hidden;
    c.mtp_norms = 3 * NormParams(m, m.hidden);
    c.mtp_extra = c.mtp_eh_proj + c.mtp_norms;
    c.mtp_copies = m.MtpParamCopies();
    if (m.Hybrid()) {
      for (char kind : m.mtp_pattern) {
        const LayerParams k = HybridLayerParams(m, kind);
        c.mtp_layer_total += k.Total();
        c.mtp_layer_active += k.Active();
      }
    } else {
      const LayerParams& l = c.mtp_moe ? c.moe_layer : c.dense_layer;
      c.mtp_layer_total = l.Total();
      c.mtp_layer_active = l.Active();
    }
    c.total += c.mtp_copies * (c.mtp_layer_total + c.mtp_extra);
    c.active += c.mtp_copies * (c.mtp_layer_active + c.mtp_extra);
  }
  return c;
}

}  // namespace meshplan::core
