#include "core/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <string_view>

#include "core/schedule.h"
#include "core/step_graph.h"

namespace meshplan::core {
namespace {

std::string S(int64_t v) { return std::to_string(v); }
std::string S(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Field-level checks read as one line each: Positive(d, "model.layers", m.layers).
// (The path is a view: the search validates every candidate, and a field name becomes a string
// only when there is something to say about it.)
void Positive(Diagnostics* d, std::string_view path, int64_t v) {
  if (v <= 0) d->Error(std::string(path), "must be > 0 (got " + S(v) + ")");
}
void NonNegative(Diagnostics* d, std::string_view path, double v) {
  if (!(v >= 0)) d->Error(std::string(path), "must be >= 0 (got " + S(v) + ")");
}
void PositiveReal(Diagnostics* d, std::string_view path, double v) {
  if (!(v > 0)) d->Error(std::string(path), "must be > 0 (got " + S(v) + ")");
}

// Physical bounds (docs/specs.md "Physical bounds"): a value outside [lo, hi] is not a model, a
// GPU or a cluster but a typo or a unit slip (seconds for microseconds, bits for bytes); `why`
// says what the bound rests on. NaN fails too.
// A value at or below zero (or NaN) is left to Positive/NonNegative's message.
void Within(Diagnostics* d, std::string_view path, double v, double lo, double hi, std::string_view why) {
  if (lo > 0 ? !(v > 0) : !(v >= 0)) return;
  if (!(v >= lo && v <= hi))
    d->Error(std::string(path), "must be in [" + S(lo) + ", " + S(hi) + "] (got " + S(v) + "): " + std::string(why));
}

}  // namespace

void ValidateModel(const ModelSpec& m, const std::string& p, Diagnostics* d) {
  if (m.name.empty()) d->Error(p + ".name", "must not be empty");
  Positive(d, p + ".layers", m.layers);
  Positive(d, p + ".hidden", m.hidden);
  Positive(d, p + ".heads", m.heads);
  Positive(d, p + ".head_dim", m.head_dim);
  Positive(d, p + ".vocab", m.vocab);
  Positive(d, p + ".max_seq", m.max_seq);
  const bool all_moe = m.moe && m.moe->first_dense_layers == 0 && m.moe->layer_freq == 1;
  if (all_moe) {
    if (m.ffn_hidden < 0) d->Error(p + ".ffn_hidden", "must be >= 0 (got " + S(m.ffn_hidden) + ")");
  } else {
    Positive(d, p + ".ffn_hidden", m.ffn_hidden);
  }
  if (m.heads <= 0) {
    // Reported above; a kv_heads check against it would only repeat the problem.
  } else if (m.kv_heads <= 0 || m.kv_heads > m.heads) {
    d->Error(p + ".kv_heads", "must be between 1 and heads=" + S(m.heads) + " (got " + S(m.kv_heads) + ")");
  } else if (m.heads % m.kv_heads != 0) {
    d->Error(p + ".kv_heads", S(m.kv_heads) + " must divide heads=" + S(m.heads) +
                                  " (each kv head serves a whole group of query heads)");
  }
  if (m.mla) {
    const std::string q = p + ".mla";
    if (m.mla->q_lora_rank < 0) d->Error(q + ".q_lora_rank", "must be >= 0 (0: full-rank q)");
    Positive(d, q + ".kv_lora_rank", m.mla->kv_lora_rank);
    Positive(d, q + ".qk_nope_head_dim", m.mla->qk_nope_head_dim);
    Positive(d, q + ".qk_rope_head_dim", m.mla->qk_rope_head_dim);
    Positive(d, q + ".v_head_dim", m.mla->v_head_dim);
    if (m.kv_heads != m.heads)
      d->Error(p + ".kv_heads", "with mla must equal heads=" + S(m.heads) + " (got " + S(m.kv_heads) + ")");
  }
  if (m.Hybrid()) {
    const std::string hp = p + ".hybrid_pattern";
    if (static_cast<int64_t>(m.hybrid_pattern.size()) != m.layers)
      d->Error(hp, "must have one character per layer: layers=" + S(m.layers) + ", the pattern has " +
                       S(static_cast<int64_t>(m.hybrid_pattern.size())));
    for (size_t i = 0; i < m.hybrid_pattern.size(); ++i) {
      const char ch = m.hybrid_pattern[i];
      if (ch != 'M' && ch != '*' && ch != '-' && ch != 'E') {
        d->Error(hp, "character " + S(static_cast<int64_t>(i)) + " '" + std::string(1, ch) +
                         "' is not a layer kind meshplan models (M Mamba-2, * attention, - MLP, E MoE)");
        break;
      }
    }
    const HybridCounts c = m.HybridLayerCounts();
    if (c.mamba > 0 && !m.mamba) d->Error(p + ".mamba", "is required by the pattern's " + S(c.mamba) + " M layers");
    if (c.moe > 0 && !m.moe) d->Error(p + ".moe", "is required by the pattern's " + S(c.moe) + " E layers");
    if (c.mlp > 0 && m.ffn_hidden <= 0)
      d->Error(p + ".ffn_hidden",
               "must be > 0 for the pattern's " + S(c.mlp) + " - layers (got " + S(m.ffn_hidden) + ")");
    if (m.moe && (m.moe->first_dense_layers != 0 || m.moe->layer_freq != 1))
      d->Error(p + ".moe.layer_freq",
               "must be 1 with first_dense_layers 0 in a hybrid model: its pattern places the "
               "MoE layers");
    if (m.mla) d->Error(hp, "with multi-latent attention (model.mla) is not modelled");
    // An MTP module's layer in a hybrid model: its blocks (Megatron-Core's pattern after '/'),
    // each a kind the decoder has, so the costed mix holds it.
    if (m.mtp_layers > 0 && m.mtp_pattern.empty())
      d->Error(p + ".mtp_pattern",
               "is required with mtp_layers in a hybrid model: the blocks of one MTP module's layer, e.g. \"*E\"");
    for (size_t i = 0; i < m.mtp_pattern.size(); ++i) {
      const char ch = m.mtp_pattern[i];
      if (m.hybrid_pattern.find(ch) == std::string::npos) {
        d->Error(p + ".mtp_pattern", "character " + S(static_cast<int64_t>(i)) + " '" + std::string(1, ch) +
                                         "' is not a block kind of model.hybrid_pattern (M, *, - or E that the "
                                         "decoder has)");
        break;
      }
    }
    if (m.mtp_pattern.size() > 64)
      d->Error(p + ".mtp_pattern",
               "must have at most 64 blocks (got " + S(static_cast<int64_t>(m.mtp_pattern.size())) + ")");
    if (m.mtp_layers == 0 && !m.mtp_pattern.empty()) d->Error(p + ".mtp_pattern", "needs model.mtp_layers > 0 (got 0)");
    if (m.sliding_window > 0) d->Error(hp, "with sliding-window attention (model.sliding_window) is not modelled");
  } else if (m.mamba) {
    d->Error(p + ".mamba", "needs model.hybrid_pattern, which says which layers are Mamba (M)");
  }
  if (!m.Hybrid() && !m.mtp_pattern.empty())
    d->Error(p + ".mtp_pattern",
             "is a hybrid model's (model.hybrid_pattern); a transformer's MTP layer is its last layer's kind");
  if (m.mtp_shared && m.mtp_layers <= 0) d->Error(p + ".mtp_shared", "needs model.mtp_layers > 0 (got 0)");
  if (m.mamba) {
    const std::string q = p + ".mamba";
    Positive(d, q + ".heads", m.mamba->heads);
    Positive(d, q + ".head_dim", m.mamba->head_dim);
    Positive(d, q + ".state", m.mamba->state);
    Positive(d, q + ".groups", m.mamba->groups);
    Positive(d, q + ".conv_kernel", m.mamba->conv_kernel);
    Positive(d, q + ".chunk", m.mamba->chunk);
    if (m.mamba->heads > 0 && m.mamba->groups > 0 && m.mamba->heads % m.mamba->groups != 0)
      d->Error(q + ".groups", S(m.mamba->groups) + " must divide heads=" + S(m.mamba->heads) +
                                  " (heads share B and C within a group; Megatron-Core mamba_mixer.py)");
  }
  // Physical bounds, each far beyond the largest published model (so a real one never trips
  // them) and far below what makes the step graph, the event simulation or the byte counts
  // overflow or run for minutes.
  struct Bound {
    const char* field;
    int64_t value;
    double lo, hi;
    const char* why;
  };
  for (const Bound& b : {
           Bound{".layers", m.layers, 1, static_cast<double>(kMaxModelLayers),
                 "the deepest published LLMs have a few hundred (Llama 3.1 405B 126, PaLM 540B 118)"},
           Bound{".hidden", m.hidden, 1, 1048576,
                 "the widest published models have tens of thousands (PaLM 540B 18432, Megatron's 1T 25600)"},
           Bound{".heads", m.heads, 1, 65536,
                 "published models have at most a few hundred (Llama 3.1 405B and DeepSeek-V3 128)"},
           Bound{".head_dim", m.head_dim, 1, 16384,
                 "published head sizes are 64-256 (Gemma 256; DeepSeek-V3's MLA query 192)"},
           Bound{".vocab", m.vocab, 1, 16777216,
                 "published vocabularies are at most a few hundred thousand (Gemma 3 262144)"},
           Bound{".max_seq", m.max_seq, 1, 134217728, "the longest published contexts are 10M tokens (Llama 4 Scout)"},
           Bound{".ffn_hidden", m.ffn_hidden, 0, 16777216,
                 "published MLP widths are at most ~8x hidden (Gemma 7B 24576 over 3072)"},
       })
    Within(d, p + b.field, static_cast<double>(b.value), b.lo, b.hi, b.why);
  // The attention's projection width against the residual stream: DeepSeek-V3's MLA query
  // (128 heads x 192 over hidden 7168) is 3.4x, Qwen3 and gpt-oss 1.4-2x; 16x is a typo.
  if (m.heads > 0 && m.head_dim > 0 && m.hidden > 0 &&
      static_cast<double>(m.heads) * static_cast<double>(m.head_dim) > 16.0 * static_cast<double>(m.hidden))
    d->Error(p + ".heads", "heads x head_dim = " + S(static_cast<double>(m.heads) * static_cast<double>(m.head_dim)) +
                               " must be at most 16 x hidden = " + S(16.0 * static_cast<double>(m.hidden)) +
                               ": published models stay within 4x (DeepSeek-V3's MLA query 3.4x)");
  // DeepSeek-V3 trains with depth 1 (its §2.2 and config.json num_nextn_predict_layers); each
  // module is a whole layer on the last stage, so more than the decoder's own layers is a typo.
  if (m.mtp_layers < 0 || (m.layers > 0 && m.mtp_layers > m.layers))
    d->Error(p + ".mtp_layers", "must be between 0 and layers=" + S(m.layers) + " (got " + S(m.mtp_layers) + ")");
  // Sliding-window attention: a window of at least one token (the query itself); a global layer
  // every G layers, G >= 2 (G = 1 would make every layer global: no window at all).
  if (m.sliding_window < 0)
    d->Error(p + ".sliding_window", "must be >= 0 (0: no sliding-window layers; got " + S(m.sliding_window) + ")");
  else if (m.sliding_window > 0)
    Within(d, p + ".sliding_window", static_cast<double>(m.sliding_window), 1, 134217728,
           "a window is at most the longest published context (10M tokens)");
  if (m.global_attention_every < 0)
    d->Error(p + ".global_attention_every",
             "must be >= 0 (0: every layer windowed; got " + S(m.global_attention_every) + ")");
  else if (m.global_attention_every == 1 && m.sliding_window > 0)
    d->Error(p + ".global_attention_every",
             "1 makes every layer global: set sliding_window to 0 for a model without windowed layers, or 0 "
             "(every layer windowed) or >= 2 (gpt-oss 2, Gemma 3 6)");
  else if (m.global_attention_every > 0 && m.sliding_window == 0)
    d->Error(p + ".global_attention_every", "needs sliding_window > 0 (the window of the other layers)");
  // RoPE's attention scaling: YaRN's factor 0.1 ln(s) + 1 is 1 to 2.4 for stretches up to a
  // million-fold, and a ratio of two of them may be below 1; 0.1 to 10 bounds both.
  if (!(m.rope_mscale > 0) || !std::isfinite(m.rope_mscale))
    d->Error(p + ".rope_mscale", "must be a positive number (1: plain RoPE; got " + S(m.rope_mscale) + ")");
  else Within(d, p + ".rope_mscale", m.rope_mscale, 0.1, 10, "YaRN's factor is 0.1 ln(s) + 1 (gpt-oss 1.3466)");
  if (m.rope_mscale != 1.0 && m.position != PositionKind::kRope)
    d->Error(p + ".rope_mscale",
             "scales RoPE's cos and sin: needs position rope (got " + std::string(Name(m.position)) + ")");
  if (!(m.glu_clamp >= 0) || !std::isfinite(m.glu_clamp))
    d->Error(p + ".glu_clamp", "must be >= 0 (0: no clamp; gpt-oss 7; got " + S(m.glu_clamp) + ")");
  else if (m.glu_clamp > 0 && m.mlp != MlpKind::kSwiglu)
    d->Error(p + ".glu_clamp",
             "clamps a gated MLP's two halves: needs mlp swiglu (got " + std::string(Name(m.mlp)) + ")");
  if (m.chunked_attention && m.sliding_window <= 0)
    d->Error(p + ".chunked_attention", "needs sliding_window > 0 (the chunk's length in tokens)");
  // Exact integer byte counts need every size to stay far below 2^63; refuse absurd inputs
  // rather than overflow (checked in double, which cannot overflow here).
  {
    const double h = static_cast<double>(m.hidden), f = static_cast<double>(std::max<int64_t>(m.ffn_hidden, 1));
    double experts = 1, ef = 0, shared = 0;
    if (m.moe) {
      experts = static_cast<double>(std::max<int64_t>(m.moe->experts, 1));
      ef = static_cast<double>(std::max<int64_t>(m.moe->expert_ffn_hidden, 0));
      shared = static_cast<double>(std::max<int64_t>(m.moe->shared_experts, 0)) *
               static_cast<double>(std::max<int64_t>(m.moe->shared_expert_ffn_hidden, 0));
    }
    const double mtp =
        static_cast<double>(std::max<int64_t>(0, std::min<int64_t>(m.mtp_layers, std::max<int64_t>(m.layers, 0))));
    const double rough = (static_cast<double>(m.layers) + mtp) *
                             (4 * h * static_cast<double>(m.heads) * static_cast<double>(m.head_dim) + 3 * h * f +
                              3 * h * ef * experts + 3 * h * shared) +
                         2 * static_cast<double>(m.vocab) * h + static_cast<double>(m.max_seq) * h;
    if (rough > 1e16) d->Error(p, "has about " + S(rough) + " parameters; meshplan accepts models up to 1e16");
  }
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    const std::string q = p + ".moe";
    Positive(d, q + ".experts", e.experts);
    if (e.experts > 0)
      Within(d, q + ".experts", static_cast<double>(e.experts), 1, 65536,
             "published MoE models have at most a few hundred experts per layer (Kimi K2 384, DeepSeek-V3 256)");
    Within(d, q + ".expert_ffn_hidden", static_cast<double>(e.expert_ffn_hidden), 0, 16777216,
           "published expert widths are a few thousand at most (Mixtral 14336)");
    if (e.top_k < 1 || e.top_k > e.experts)
      d->Error(q + ".top_k", "must be between 1 and experts=" + S(e.experts) + " (got " + S(e.top_k) + ")");
    Positive(d, q + ".expert_ffn_hidden", e.expert_ffn_hidden);
    if (e.shared_experts < 0 || e.shared_experts > 65536)
      d->Error(q + ".shared_experts",
               "must be between 0 and 65536 (published MoE models share 1 or 2 experts: DeepSeek-V3 1, DeepSeek-V2 2; "
               "got " +
                   S(e.shared_experts) + ")");
    if (e.shared_experts > 0) Positive(d, q + ".shared_expert_ffn_hidden", e.shared_expert_ffn_hidden);
    if (e.first_dense_layers < 0 || (m.layers > 0 && e.first_dense_layers >= m.layers))
      d->Error(q + ".first_dense_layers",
               "must be between 0 and layers-1=" + S(m.layers - 1) + " (got " + S(e.first_dense_layers) + ")");
    Positive(d, q + ".layer_freq", e.layer_freq);
    if (!(e.capacity_factor == 0 || e.capacity_factor >= 1.0))
      d->Error(q + ".capacity_factor", "must be 0 (dropless) or >= 1 (got " + S(e.capacity_factor) + ")");
    if (e.latent_size < 0 || e.latent_size > (int64_t{1} << 20))
      d->Error(q + ".latent_size",
               "must be 0 (no latent projection) or the experts' width, up to 1048576 (got " + S(e.latent_size) + ")");
  }
}

void ValidateGpu(const GpuSpec& g, const std::string& p, Diagnostics* d) {
  if (g.name.empty()) d->Error(p + ".name", "must not be empty");
  if (g.peak_flops_per_s.empty()) d->Error(p + ".peak_flops_per_s", "must list at least one dtype");
  for (const auto& [dt, v] : g.peak_flops_per_s) PositiveReal(d, p + ".peak_flops_per_s." + Name(dt), v);
  for (const auto& [dt, v] : g.peak_flops_per_s)
    Within(d, p + ".peak_flops_per_s." + Name(dt), v, 1e9, 1e17,
           "FLOP/s: from a slow CPU (the CPU runtime's profiles measure ~4e10) to 100 PFLOP/s, beyond a B300's "
           "dense fp4 (1.5e16)");
  Positive(d, p + ".hbm_bytes", g.hbm_bytes);
  PositiveReal(d, p + ".hbm_bytes_per_s", g.hbm_bytes_per_s);
  PositiveReal(d, p + ".tdp_w", g.tdp_w);
  Within(d, p + ".hbm_bytes", static_cast<double>(g.hbm_bytes), 1e8, 1e14,
         "bytes: accelerators hold GB, not bytes or PB (B300 288 GB)");
  // 0 = not measured; else what CUDA reports, the physical memory less the driver's reserve.
  if (g.cuda_total_bytes != 0) {
    Positive(d, p + ".cuda_total_bytes", g.cuda_total_bytes);
    if (g.cuda_total_bytes > g.hbm_bytes)
      d->Error(p + ".cuda_total_bytes",
               "must be <= hbm_bytes (" + std::to_string(g.hbm_bytes) + "): CUDA reports the physical memory less " +
                   "what the driver reserves (got " + std::to_string(g.cuda_total_bytes) + ")");
    else if (g.cuda_total_bytes < g.hbm_bytes * 9 / 10)
      d->Error(p + ".cuda_total_bytes",
               "must be >= 90% of hbm_bytes (" + std::to_string(g.hbm_bytes) + "): drivers reserve about 1% (H100 " +
                   "80GB: 79.2 of 80 GiB); a smaller figure is a unit slip or another GPU (got " +
                   std::to_string(g.cuda_total_bytes) + ")");
    if (g.cuda_total_source.empty())
      d->Error(p + ".cuda_total_source", "must name the measurement cuda_total_bytes comes from");
  }
  Within(d, p + ".hbm_bytes_per_s", g.hbm_bytes_per_s, 1e9, 1e15,
         "bytes/s: HBM moves TB/s (H100 3.35e12, B300 8e12), a CPU's DRAM tens of GB/s; a value in GB is a unit slip");
  Within(d, p + ".tdp_w", g.tdp_w, 1, 100000, "watts: accelerators draw 300-1,400 W (B300 1,400 W)");
  // 0 = unknown; else a host link: PCIe Gen3 x16 moves 16 GB/s each way, NVLink-C2C 450 GB/s.
  if (g.host_link_bytes_per_s != 0)
    Within(d, p + ".host_link_bytes_per_s", g.host_link_bytes_per_s, 1e9, 1e13,
           "bytes/s per direction: 0 (unknown) or a host link's GB/s (PCIe Gen5 x16 64e9, NVLink-C2C 450e9)");
  // 0 = unknown. The largest accelerators have a few hundred (MI300X: 304 CUs); thousands is a typo.
  if (g.sms < 0 || g.sms > 2048)
    d->Error(p + ".sms",
             "must be 0 (unknown) or the GPU's streaming multiprocessors, at most 2048 (got " + S(g.sms) + ")");
  if (!(g.speed_spread >= 0 && g.speed_spread <= 0.2))
    d->Error(p + ".speed_spread",
             "must be a fraction in [0, 0.2]: the relative standard deviation of one GPU's speed (0.013 = 1.3%; 0 "
             "turns the slowest-GPU pace off; got " +
                 S(g.speed_spread) + ")");
  for (auto [what, v] :
       {std::pair{"even", g.gemm_misaligned_efficiency.even}, std::pair{"odd", g.gemm_misaligned_efficiency.odd}})
    if (!(v > 0 && v <= 1))
      d->Error(p + ".gemm_misaligned_efficiency." + what,
               "must be a fraction of the aligned GEMM's speed in (0, 1] (1: not measured; got " + S(v) + ")");
  if (!(g.gemm_misaligned_efficiency.odd <= g.gemm_misaligned_efficiency.even))
    d->Error(p + ".gemm_misaligned_efficiency.odd",
             "must not exceed .even: an odd width loads narrower vectors than an even one (got odd " +
                 S(g.gemm_misaligned_efficiency.odd) + ", even " + S(g.gemm_misaligned_efficiency.even) + ")");
  for (const auto& [dt, v] : g.gemm_k_overhead)
    if (!(v >= 0 && v <= 65536))
      d->Error(p + ".gemm_k_overhead." + Name(dt),
               "must be the elements of the reduction a GEMM tile's fixed work costs, in [0, 65536] (0: none; got " +
                   S(v) + ")");
  if (!(g.gemm_reference_k >= 256 && g.gemm_reference_k <= 1048576))
    d->Error(p + ".gemm_reference_k",
             "must be the reduction (k) of the GEMM shape the sustained efficiencies were measured on, in [256, "
             "1048576] elements (default 8192; got " +
                 S(g.gemm_reference_k) + ")");
  for (const auto& [dt, v] : g.gemm_efficiency) {
    if (!(v > 0 && v <= 1))
      d->Error(p + ".gemm_efficiency." + Name(dt), "must be a fraction of the peak in (0, 1] (got " + S(v) + ")");
    if (!g.peak_flops_per_s.count(dt))
      d->Error(p + ".gemm_efficiency." + Name(dt),
               "has no peak_flops_per_s." + std::string(Name(dt)) + " to be a fraction of");
  }
  for (const auto& [impl, e] : g.attention_efficiency) {
    for (auto [what, v] : {std::pair{"forward", e.forward}, std::pair{"backward", e.backward}})
      if (!(v > 0 && v <= 1))
        d->Error(p + ".attention_efficiency." + Name(impl) + "." + what,
                 "must be a fraction of the peak in (0, 1] (got " + S(v) + ")");
  }
  const auto bf16 = g.peak_flops_per_s.find(Dtype::kBf16);
  for (const auto& [impl, points] : g.attention_curve) {
    const std::string q = p + ".attention_curve." + Name(impl);
    if (points.empty()) d->Error(q, "must list at least one measured point");
    if (bf16 == g.peak_flops_per_s.end())
      d->Error(q, "has no peak_flops_per_s.bf16 to be a fraction of (the curve is 16-bit attention)");
    for (size_t i = 0; i < points.size(); ++i) {
      const auto& pt = points[i];
      const std::string at = q + "[" + std::to_string(i) + "]";
      Positive(d, at + ".head_dim", pt.head_dim);
      Positive(d, at + ".seq", pt.seq);
      // cuDNN's FP8 attention runs on the FP8 tensor cores: bounded by the fp8 peak.
      const auto fp8 = g.peak_flops_per_s.find(Dtype::kFp8);
      const bool fp8_kernel = impl == AttentionImpl::kCudnnFp8 && fp8 != g.peak_flops_per_s.end();
      const auto cap = fp8_kernel ? fp8 : bf16;
      if (!(pt.tflops > 0) || (cap != g.peak_flops_per_s.end() && pt.tflops * 1e12 > cap->second))
        d->Error(at + ".tflops", std::string("must be a measured speed in (0, the ") + (fp8_kernel ? "fp8" : "bf16") +
                                     " peak] TFLOP/s (got " + S(pt.tflops) + ")");
      for (size_t k = 0; k < i; ++k)
        if (points[k].head_dim == pt.head_dim && points[k].seq == pt.seq)
          d->Error(at,
                   "repeats the point at head_dim " + std::to_string(pt.head_dim) + ", seq " + std::to_string(pt.seq));
    }
  }
  if (!g.attention_curve.empty() && g.attention_curve_source.empty())
    d->Error(p + ".attention_curve_source", "must name the benchmark the attention curves come from");
  if (!g.attention_efficiency.empty() && g.attention_efficiency_source.empty())
    d->Error(p + ".attention_efficiency_source", "must name the measurement the attention efficiencies come from");
  if (g.gemm_misaligned_efficiency != GpuSpec::MisalignedGemm{} && g.gemm_misaligned_source.empty())
    d->Error(p + ".gemm_misaligned_source", "must name the measurement the misaligned GEMMs' fractions come from");
  if (!g.gemm_k_overhead.empty() && g.gemm_k_overhead_source.empty())
    d->Error(p + ".gemm_k_overhead_source", "must name the GEMM shape sweep the reduction overheads come from");
  if (!g.gemm_efficiency.empty() && g.gemm_efficiency_source.empty())
    d->Error(p + ".gemm_efficiency_source", "must name the measurement the sustained GEMM efficiencies come from");
}

void ValidateCluster(const ClusterSpec& c, const std::string& p, Diagnostics* d) {
  if (c.name.empty()) d->Error(p + ".name", "must not be empty");
  Positive(d, p + ".gpus_per_node", c.gpus_per_node);
  Positive(d, p + ".scale_up_domain_gpus", c.scale_up_domain_gpus);
  if (c.gpus_per_node > 0 && c.scale_up_domain_gpus > 0 && c.scale_up_domain_gpus % c.gpus_per_node != 0 &&
      c.gpus_per_node % c.scale_up_domain_gpus != 0)
    d->Error(p + ".scale_up_domain_gpus",
             S(c.scale_up_domain_gpus) + " must be a multiple or a divisor of gpus_per_node=" + S(c.gpus_per_node));
  PositiveReal(d, p + ".scale_up_bytes_per_s", c.scale_up_bytes_per_s);
  NonNegative(d, p + ".scale_up_latency_s", c.scale_up_latency_s);
  Positive(d, p + ".nics_per_node", c.nics_per_node);
  PositiveReal(d, p + ".nic_bytes_per_s", c.nic_bytes_per_s);
  NonNegative(d, p + ".scale_out_latency_s", c.scale_out_latency_s);
  NonNegative(d, p + ".storage_bytes_per_s", c.storage_bytes_per_s);
  NonNegative(d, p + ".host_memory_bytes_per_node", static_cast<double>(c.host_memory_bytes_per_node));
  NonNegative(d, p + ".price_per_gpu_hour_usd", c.price_per_gpu_hour_usd);
  Within(d, p + ".gpus_per_node", static_cast<double>(c.gpus_per_node), 1, 65536,
         "nodes hold 4-8 GPUs (a GB200 NVL72 rack 72)");
  Within(d, p + ".scale_up_domain_gpus", static_cast<double>(c.scale_up_domain_gpus), 1, 65536,
         "the largest scale-up domains are hundreds of GPUs (NVL576)");
  Within(d, p + ".scale_up_bytes_per_s", c.scale_up_bytes_per_s, 1e8, 1e14,
         "bytes/s per GPU per direction: PCIe 3 x16 moves 1.6e10, NVLink 5 9e11; a value in bits or GB is a unit slip");
  // NCCL's measured latencies are microseconds (nccl-tests: a few us within a node, 10-30 us
  // across nodes); a tenth of a second is a value in milliseconds or microseconds typed as seconds.
  Within(d, p + ".scale_up_latency_s", c.scale_up_latency_s, 0, 0.1,
         "seconds: collective latencies are microseconds (1e-6); a larger value is a unit slip");
  Within(d, p + ".nics_per_node", static_cast<double>(c.nics_per_node), 1, 1024, "nodes carry 1-16 NICs");
  Within(d, p + ".nic_bytes_per_s", c.nic_bytes_per_s, 1e7, 1e13,
         "bytes/s per NIC per direction: 400 Gb/s is 5e10; a value in bits or GB is a unit slip");
  Within(d, p + ".scale_out_latency_s", c.scale_out_latency_s, 0, 0.1,
         "seconds: collective latencies are microseconds (1e-5 across nodes); a larger value is a unit slip");
  if (!(c.oversubscription >= 1.0))
    d->Error(p + ".oversubscription", "must be >= 1 (1 = non-blocking; got " + S(c.oversubscription) + ")");
  else
    Within(d, p + ".oversubscription", c.oversubscription, 1, 1000,
           "fabrics are tapered at most a few times (1 = non-blocking)");
  Within(d, p + ".storage_bytes_per_s", c.storage_bytes_per_s, 0, kMaxStorageBytesPerS,
         "bytes/s: the fastest parallel file systems write TB/s (1e12)");
  Within(d, p + ".host_memory_bytes_per_node", static_cast<double>(c.host_memory_bytes_per_node), 0, 1e15,
         "bytes: nodes hold TB of host memory (DGX B200 2 TB)");
  Within(d, p + ".price_per_gpu_hour_usd", c.price_per_gpu_hour_usd, 0, 10000,
         "USD per GPU-hour: on-demand prices are a few dollars");
  // 0 = unknown; else a node's DRAM: two sockets of 8 DDR5-4800 channels move 614 GB/s.
  if (c.host_memory_bytes_per_s != 0) {
    Within(d, p + ".host_memory_bytes_per_s", c.host_memory_bytes_per_s, 1e10, 1e13,
           "bytes/s, all of a node's sockets: 0 (unknown) or its DRAM's hundreds of GB/s (8 DDR5-4800 channels "
           "3.07e11 a socket); a value in GB is a unit slip");
    if (c.host_memory_bw_source.empty())
      d->Error(p + ".host_memory_bw_source", "must name where host_memory_bytes_per_s comes from");
  }
}

namespace {

// Legal but unusual inputs (docs/reliability.md §1): said once per report, not refused.
void WarnUnusual(const ModelSpec& m, const ClusterSpec& c, Diagnostics* d) {
  if (d->wants_warnings()) {
    for (auto [field, v] : {std::pair{"cluster.scale_up_latency_s", c.scale_up_latency_s},
                            std::pair{"cluster.scale_out_latency_s", c.scale_out_latency_s}})
      if (v > 1e-4)
        d->Warning(field, S(v) +
                              " s is above 100 us; NCCL's collective latencies are microseconds (nccl-tests: a few "
                              "within a node, 10-30 across nodes): is it in seconds?");
    if (m.layers > 1000)
      d->Warning("model.layers", S(m.layers) + " is more than any published LLM has (Llama 3.1 405B 126)");
    if (static_cast<double>(m.heads) * static_cast<double>(m.head_dim) > 4.0 * static_cast<double>(m.hidden))
      d->Warning("model.heads", "heads x head_dim = " + S(m.heads * m.head_dim) + " is more than 4 x hidden = " +
                                    S(4 * m.hidden) + " (published models: at most 3.4x, DeepSeek-V3's MLA query)");
    if (c.price_per_gpu_hour_usd > 100)
      d->Warning("cluster.price_per_gpu_hour_usd",
                 S(c.price_per_gpu_hour_usd) + " USD per GPU-hour: on-demand prices are a few dollars");
  }
}

// The device count and tensor parallelism: heads, kv heads and the MLP split evenly.
void CheckDegrees(const PlanSpec& pl, const ModelSpec& m, const ClusterSpec& c, Diagnostics* d) {
  // Device count.
  const int64_t product = pl.tp * pl.pp * pl.dp * pl.cp;
  if (product != pl.gpus)
    d->Error("plan.gpus", S(pl.gpus) + " must equal tp*pp*dp*cp = " + S(pl.tp) + "*" + S(pl.pp) + "*" + S(pl.dp) + "*" +
                              S(pl.cp) + " = " + S(product));

  // Tensor parallel: heads, kv heads and the MLP split evenly.
  if (m.heads % pl.tp != 0) d->Error("plan.tp", S(pl.tp) + " must divide model.heads=" + S(m.heads));
  if (m.mamba && m.mamba->heads > 0 && m.mamba->groups > 0 &&
      (m.mamba->heads % pl.tp != 0 || m.mamba->groups % pl.tp != 0))
    d->Error("plan.tp", S(pl.tp) + " must divide model.mamba.heads=" + S(m.mamba->heads) +
                            " and model.mamba.groups=" + S(m.mamba->groups) + " (Megatron-Core mamba_mixer.py)");
  if (m.kv_heads % pl.tp != 0 && pl.tp % m.kv_heads != 0)
    d->Error("plan.tp", S(pl.tp) + " must divide model.kv_heads=" + S(m.kv_heads) +
                            " or be a multiple of it (kv heads are then replicated)");
  if (m.ffn_hidden > 0 && m.ffn_hidden % pl.tp != 0)
    d->Error("plan.tp", S(pl.tp) + " must divide model.ffn_hidden=" + S(m.ffn_hidden));
  if (pl.tp > c.scale_up_domain_gpus)
    d->Warning("plan.tp", S(pl.tp) + " spans more than one scale-up domain (cluster.scale_up_domain_gpus=" +
                              S(c.scale_up_domain_gpus) + "): tensor-parallel traffic crosses the scale-out network");
  if (pl.sequence_parallel && pl.tp == 1) d->Warning("plan.sequence_parallel", "has no effect with tp=1");
  if (pl.vocab_divisible_by < 1 || pl.vocab_divisible_by > 65536)
    d->Error("plan.vocab_divisible_by",
             "must be from 1 (the model's vocabulary as it is) to 65536: the vocabulary is padded to a multiple of "
             "it times plan.tp (Megatron-LM's --make-vocab-size-divisible-by, default 128; got " +
                 S(pl.vocab_divisible_by) + ")");
  if (pl.segment_nodes < 0) {
    d->Error("plan.segment_nodes", "must be >= 0 nodes (0: no Slurm segments; got " + S(pl.segment_nodes) + ")");
  } else if (pl.segment_nodes > 0 && c.gpus_per_node > 0 && c.scale_up_domain_gpus > 0) {
    if (pl.segment_nodes * c.gpus_per_node > c.scale_up_domain_gpus)
      d->Error("plan.segment_nodes", S(pl.segment_nodes) + " nodes x " + S(c.gpus_per_node) +
                                         " GPUs must fit in one scale-up domain (cluster.scale_up_domain_gpus=" +
                                         S(c.scale_up_domain_gpus) + "): a Slurm segment lies inside one block");
    else if (pl.gpus > 0 && pl.gpus % (pl.segment_nodes * c.gpus_per_node) != 0)
      d->Error("plan.segment_nodes", "the job's " + S(pl.gpus) + " GPUs must be whole segments of " +
                                         S(pl.segment_nodes) + " nodes x " + S(c.gpus_per_node) +
                                         " GPUs (sbatch --segment needs a node count it divides)");
  }
  if (pl.fp8_param_gather && !pl.Fp8ParamGatherApplies())
    d->Error("plan.fp8_param_gather",
             std::string("gathers the parameters in FP8 for the distributed optimizer: needs plan.precision fp8 and "
                         "plan.zero 1 or 2 (got precision ") +
                 Name(pl.precision) + ", zero " + S(static_cast<int64_t>(pl.zero)) + ")");
  if (pl.recompute_early_stop) {
    // PlanSpec::recompute_early_stop: what the stop skips is the dense block's trailing MLP output
    // projection; a plan where nothing would be skipped is refused, not costed as if it were.
    const std::string rule =
        "stops the recomputation at the block's last saved tensor (PyTorch's non-reentrant checkpoint)";
    if (pl.recompute != Recompute::kFull)
      d->Error("plan.recompute_early_stop", rule + ": needs plan.recompute full (got " + Name(pl.recompute) + ")");
    else if (const char* why = RecomputeEarlyStopBlocker(m, pl))
      d->Error("plan.recompute_early_stop", rule + ", which here skips nothing: " + why);
  }
  if (pl.keep_lp_grads && DtypeBytes(pl.dtypes.grads) <= DtypeBytes(pl.dtypes.weights))
    d->Error("plan.keep_lp_grads", std::string("keeps the ") + Name(pl.dtypes.weights) +
                                       " gradients beside a wider gradient buffer: needs plan.dtypes.grads wider than "
                                       "the weights (got grads " +
                                       Name(pl.dtypes.grads) + ", weights " + Name(pl.dtypes.weights) + ")");
}

// Layers over pipeline stages.
void CheckStages(const PlanSpec& pl, const ModelSpec& m, Diagnostics* d) {
  const int64_t chunks = pl.pp * pl.vpp;
  if (pl.stage_layers.empty()) {
    if (m.layers % chunks != 0)
      d->Error("plan.pp", "model.layers=" + S(m.layers) + " must split evenly over pp*vpp=" + S(chunks) +
                              " (or give plan.stage_layers for an uneven split)");
  } else {
    if (static_cast<int64_t>(pl.stage_layers.size()) != chunks) {
      d->Error("plan.stage_layers", "must have pp*vpp=" + S(chunks) + " entries (got " +
                                        S(static_cast<int64_t>(pl.stage_layers.size())) + ")");
    } else {
      // The first chunk may hold the embedding alone and the last the output layer and loss alone
      // (Megatron-Core's layout "E|t|...|t|L", pipeline_parallel_layer_layout.py at d98e8a64; the
      // Llama 3 paper §3.3.2: "the first model chunk on the first stage has only the embedding,
      // and the last model chunk on the last stage has only output projection and loss").
      // A valid split (every candidate of a search: pp x vpp up to hundreds of chunks) is told by
      // one pass without branches; only a split that fails it is walked again to name the entry.
      const std::vector<int64_t>& v = pl.stage_layers;
      int64_t sum = v.front() + (v.size() > 1 ? v.back() : 0), low = std::min(v.front(), v.back());
      int64_t middle_low = 1;
      for (size_t i = 1; i + 1 < v.size(); ++i) {
        sum += v[i];
        middle_low = std::min(middle_low, v[i]);
      }
      if (low >= 0 && middle_low >= 1 && sum == m.layers) return;
      sum = 0;
      for (size_t i = 0; i < pl.stage_layers.size(); ++i) {
        const bool end = i == 0 || i + 1 == pl.stage_layers.size();
        if (pl.stage_layers[i] < (end ? 0 : 1))
          d->Error("plan.stage_layers[" + std::to_string(i) + "]",
                   std::string(end ? "must be >= 0" : "must be >= 1 (only the first and last chunks may be empty)") +
                       " (got " + S(pl.stage_layers[i]) + ")");
        sum += pl.stage_layers[i];
      }
      if (sum != m.layers)
        d->Error("plan.stage_layers", "must sum to model.layers=" + S(m.layers) + " (got " + S(sum) + ")");
    }
  }
}

// Batch and schedule.
void CheckBatchAndSchedule(const PlanSpec& pl, Diagnostics* d) {
  if (pl.global_batch % (pl.micro_batch * pl.dp) != 0)
    d->Error("plan.global_batch", S(pl.global_batch) + " must be divisible by micro_batch*dp = " + S(pl.micro_batch) +
                                      "*" + S(pl.dp) + " = " + S(pl.micro_batch * pl.dp));
  int64_t mb = pl.global_batch / (pl.micro_batch * pl.dp);
  // Several pipeline flushes a step: each runs mb / pp_flushes microbatches, which the schedule
  // rules below apply to.
  if (pl.pp_flushes < 1) {
    d->Error("plan.pp_flushes", "must be >= 1 (got " + S(pl.pp_flushes) + ")");
  } else if (pl.pp_flushes > 1) {
    if (pl.pp < 2)
      d->Error("plan.pp_flushes", "more than one pipeline flush needs plan.pp >= 2 (got " + S(pl.pp) + ")");
    if (mb > 0 && mb % pl.pp_flushes != 0)
      d->Error("plan.pp_flushes", S(pl.pp_flushes) + " must divide the microbatches per pipeline (" + S(mb) + ")");
    else mb /= pl.pp_flushes;
  }
  if (pl.vpp > 1 && pl.schedule != Schedule::kInterleaved)
    d->Error("plan.vpp", S(pl.vpp) + " needs plan.schedule=interleaved (got " + Name(pl.schedule) + ")");
  if (pl.schedule == Schedule::kInterleaved) {
    if (pl.vpp < 2) d->Error("plan.schedule", "interleaved needs plan.vpp >= 2 (got " + S(pl.vpp) + ")");
    if (pl.pp < 2) d->Error("plan.schedule", "interleaved needs plan.pp >= 2 (got " + S(pl.pp) + ")");
    // Megatron-Core's microbatch groups (core/schedule.h VppGroupViolation); with the default
    // group of pp, m a multiple of pp.
    if (pl.vpp_group < 0) {
      d->Error("plan.vpp_group", "must be >= 0 (0: pp) (got " + S(pl.vpp_group) + ")");
    } else if (pl.vpp_group == 0) {
      if (mb > 0 && mb % pl.pp != 0)
        d->Error("plan.global_batch", "interleaved schedule needs the microbatches per pipeline (" + S(mb) +
                                          ") to be a multiple of pp=" + S(pl.pp) +
                                          " (or a microbatch group, plan.vpp_group, that leaves no remainder)");
    } else if (mb > 0) {
      if (std::string rule = VppGroupViolation(pl.pp, mb, pl.vpp_group); !rule.empty())
        d->Error("plan.vpp_group", rule);
    }
  } else if (pl.vpp_group != 0) {
    d->Error("plan.vpp_group", std::string("needs plan.schedule=interleaved (got ") + Name(pl.schedule) + ")");
  }
  if (pl.schedule == Schedule::kZeroBubble && pl.pp > 1 && mb < pl.pp)
    d->Error("plan.schedule", "zero-bubble needs at least pp=" + S(pl.pp) + " microbatches (got " + S(mb) + ")");
  if (pl.schedule == Schedule::kDualPipe) {
    if (pl.pp < 2 || pl.pp % 2 != 0) d->Error("plan.pp", "dualpipe needs an even pp >= 2 (got " + S(pl.pp) + ")");
    else if (mb < 2 * pl.pp || mb % 2 != 0)
      d->Error("plan.global_batch", "dualpipe needs an even number of microbatches per pipeline, at least 2*pp=" +
                                        S(2 * pl.pp) + " (got " + S(mb) + "; DeepSeek's dualpipe.py asserts both)");
  }
  if ((pl.schedule == Schedule::k1F1B || pl.schedule == Schedule::kGpipe) && pl.pp > 1 && mb > 0 && mb < pl.pp &&
      d->wants_warnings())
    d->Warning("plan.global_batch", S(mb) + " microbatches per pipeline never fill pp=" + S(pl.pp) + " stages");
}

// Context parallel.
void CheckContextParallel(const PlanSpec& pl, const ModelSpec& m, Diagnostics* d) {
  if (pl.cp > 1) {
    const int64_t chunks_needed = CpSequenceChunks(pl.cp_kind, pl.cp);
    const char* why = pl.cp_kind == CpKind::kRing        ? " (load-balanced causal ring)"
                      : pl.cp_kind == CpKind::kAllGather ? " (load-balanced causal all-gather CP)"
                                                         : "";
    if (pl.seq_len % chunks_needed != 0)
      d->Error("plan.seq_len", S(pl.seq_len) + " must be divisible by " +
                                   (pl.cp_kind == CpKind::kUlysses ? "cp=" : "2*cp=") + S(chunks_needed) + why);
    if (pl.cp_kind == CpKind::kUlysses && m.heads % (pl.tp * pl.cp) != 0)
      d->Error("plan.cp", "ulysses needs tp*cp=" + S(pl.tp * pl.cp) + " to divide model.heads=" + S(m.heads));
    if (m.Hybrid() && m.HybridLayerCounts().mamba > 0)
      d->Error("plan.cp", S(pl.cp) +
                              ": context parallelism of Mamba layers (Megatron-Core's all-to-all to head "
                              "sharding, mamba_context_parallel.py) is not modelled");
    if (m.chunked_attention && m.sliding_window < pl.seq_len)
      d->Error("plan.cp", S(pl.cp) + ": context parallelism of chunked attention (model.chunked_attention: chunks of " +
                              S(m.sliding_window) + " tokens run as separate sequences) is not modelled");
  }
  if (pl.sequence_parallel && pl.tp > 1 && (pl.seq_len / pl.cp) % pl.tp != 0)
    d->Error("plan.seq_len",
             "with sequence_parallel, seq_len/cp=" + S(pl.seq_len / pl.cp) + " must be divisible by tp=" + S(pl.tp));
  if (pl.seq_len > m.max_seq) d->Warning("plan.seq_len", S(pl.seq_len) + " exceeds model.max_seq=" + S(m.max_seq));
}

// Expert parallel.
void CheckExpertParallel(const PlanSpec& pl, const ModelSpec& m, Diagnostics* d) {
  if (!m.moe) {
    if (pl.ep > 1) d->Error("plan.ep", S(pl.ep) + " needs an MoE model (model.moe is absent)");
    if (pl.etp > 1) d->Error("plan.etp", S(pl.etp) + " needs an MoE model (model.moe is absent)");
  } else {
    if (m.moe->experts % pl.ep != 0)
      d->Error("plan.ep", S(pl.ep) + " must divide model.moe.experts=" + S(m.moe->experts));
    const int64_t pool = pl.tp * pl.cp * pl.dp;
    if (pool % (pl.ep * pl.etp) != 0)
      d->Error("plan.ep", "ep*etp=" + S(pl.ep * pl.etp) + " must divide tp*cp*dp=" + S(pool) +
                              " (expert layers regroup a stage's ranks as etp x ep x expert-dp)");
    if (m.moe->expert_ffn_hidden % pl.etp != 0)
      d->Error("plan.etp", S(pl.etp) + " must divide model.moe.expert_ffn_hidden=" + S(m.moe->expert_ffn_hidden));
  }
}

// Sharding and offload.
// An offload that copies over the GPU's host link: refused without it, naming the plan's field and
// what the link's rate would cost.
void RequireHostLink(const GpuSpec& g, const char* field, const char* to, Diagnostics* d) {
  if (g.host_link_bytes_per_s <= 0)
    d->Error(field, "gpu " + g.name +
                        " has no host_link_bytes_per_s (its CPU link's bandwidth per direction): set it in the GPU's "
                        "JSON to " +
                        to);
}

void CheckShardingAndOffload(const PlanSpec& pl, const ModelSpec& m, const GpuSpec& g, const ClusterSpec& c,
                             Diagnostics* d) {
  if (pl.sharding == Sharding::kHsdp) {
    if (pl.zero < 1) d->Error("plan.sharding", "hsdp shards state, so it needs plan.zero >= 1 (got 0)");
    if (pl.hsdp_shard_size < 1)
      d->Error("plan.hsdp_shard_size", "must be >= 1 with sharding=hsdp (got " + S(pl.hsdp_shard_size) + ")");
    else if ((pl.dp * pl.cp) % pl.hsdp_shard_size != 0)
      d->Error("plan.hsdp_shard_size", S(pl.hsdp_shard_size) + " must divide dp*cp=" + S(pl.dp * pl.cp));
    else if (const GroupLayout l = LayoutOfGroup(CommGroup::kDpCp, pl);
             l.inner > 0 && pl.hsdp_shard_size % l.inner != 0 && l.inner % pl.hsdp_shard_size != 0)
      // CP and DP apart in the placement: a shard group is whole CP groups or part of one.
      d->Error("plan.hsdp_shard_size", S(pl.hsdp_shard_size) + " must be a multiple or a divisor of cp=" + S(pl.cp) +
                                           " when the placement puts an axis between cp and dp (" +
                                           PlacementString(pl.placement) + ")");
  } else if (pl.hsdp_shard_size != 0) {
    d->Error("plan.hsdp_shard_size", "is only used with sharding=hsdp (got sharding=fsdp)");
  }
  if (pl.offload_params != OffloadTarget::kNone && pl.zero != 3)
    d->Error("plan.offload.params", "parameter offload needs plan.zero=3 (got " + S(int64_t{pl.zero}) + ")");
  if (pl.offload_optimizer == OffloadTarget::kCpu && pl.zero < 1)
    d->Error("plan.offload.optimizer", "optimizer offload needs plan.zero >= 1 (got 0)");
  if (pl.offload_optimizer == OffloadTarget::kNvme && pl.zero != 3)
    d->Error("plan.offload.optimizer",
             "nvme offload needs plan.zero=3 (ZeRO-Infinity; got " + S(int64_t{pl.zero}) + ")");
  // The offloaded optimizer steps on the host (ZeRO-Offload's CPU Adam, core/step_graph.cc): its
  // states stream through the host's memory and the gradients and updated weights cross the GPU's
  // host link, so both must be known to cost it.
  if (pl.offload_optimizer != OffloadTarget::kNone) {
    if (c.host_memory_bytes_per_s <= 0)
      d->Error("plan.offload.optimizer",
               "cluster " + c.name +
                   " has no host_memory_bytes_per_s (its host CPUs' memory bandwidth, all sockets together): set it "
                   "in the cluster's JSON to cost the optimizer's step on the host");
    RequireHostLink(g, "plan.offload.optimizer", "cost the gradients' and weights' copies", d);
  }
  // Offloaded parameters cross the host link before each ZeRO-3 gather (core/step_graph.cc).
  if (pl.offload_params != OffloadTarget::kNone)
    RequireHostLink(g, "plan.offload.params", "cost the parameters' copies before each gather", d);

  // Activation offloading as Megatron-Core runs it (transformer_config.py at d98e8a64: fewer
  // layers than the model's, no pipeline parallelism, no recomputation), over a known host link.
  if (pl.offload_activation_layers < 0) {
    d->Error("plan.offload.activation_layers", "must be >= 0 layers (got " + S(pl.offload_activation_layers) + ")");
  } else if (pl.offload_activation_layers > 0) {
    const int64_t a = pl.offload_activation_layers;
    if (a >= m.layers)
      d->Error("plan.offload.activation_layers", "must be fewer than model.layers=" + S(m.layers) +
                                                     " (at least one layer's activations stay on the GPU; got " + S(a) +
                                                     ")");
    if (pl.pp > 1)
      d->Error("plan.offload.activation_layers",
               "activation offloading needs plan.pp=1: Megatron-Core has no pipeline-parallel CPU offloading (got pp " +
                   S(pl.pp) + ")");
    if (pl.recompute != Recompute::kNone)
      d->Error("plan.offload.activation_layers",
               "activation offloading needs plan.recompute=none: Megatron-Core's CPU offloading does not run with "
               "recomputation (got " +
                   std::string(Name(pl.recompute)) + ")");
    if (m.Hybrid())
      d->Error("plan.offload.activation_layers",
               "a hybrid model's layers are costed as one mix; offloading some of "
               "them is not modelled");
    RequireHostLink(g, "plan.offload.activation_layers", "offload activations", d);
  }
  // DeepSpeed's checkpoints in host memory (PlanSpec::offload_checkpoints): the checkpoints are
  // what full recomputation keeps, and they cross the GPU's host link.
  if (pl.offload_checkpoints) {
    if (pl.recompute != Recompute::kFull)
      d->Error("plan.offload.checkpoints",
               "checkpoints in host memory need plan.recompute=full: DeepSpeed's cpu_checkpointing moves the layer "
               "inputs full recomputation keeps (got " +
                   std::string(Name(pl.recompute)) + ")");
    if (pl.offload_activation_layers > 0)
      d->Error("plan.offload.checkpoints",
               "checkpoints in host memory and plan.offload.activation_layers are two frameworks' offloading; set one "
               "(got activation_layers " +
                   S(pl.offload_activation_layers) + ")");
    RequireHostLink(g, "plan.offload.checkpoints", "keep checkpoints in host memory", d);
  }
  // Fine-grained activation offloading (PlanSpec::offload_modules) under Megatron-Core's rules
  // (transformer_config.py __post_init__ at d98e8a64): not with layer offloading, attn_proj only
  // with core_attn, fused_group_mlp not with expert_fc1 or moe_act, nothing inside an MoE layer
  // that is recomputed whole; the expert modules need an MoE model, and full recomputation keeps
  // only each layer's input, so there is nothing of a module's left to offload.
  if (pl.offload_modules != 0) {
    const auto has = [&](OffloadModule x) { return (pl.offload_modules & OffloadBit(x)) != 0; };
    const std::string got = " (got " + OffloadModulesString(pl.offload_modules) + ")";
    if ((pl.offload_modules & ~kAllOffloadModules) != 0)
      d->Error("plan.offload.modules", "must name only " + Choices<OffloadModule>() + got);
    if (pl.offload_activation_layers > 0)
      d->Error("plan.offload.modules",
               "fine-grained offloading cannot run with plan.offload.activation_layers (Megatron-Core: "
               "fine_grained_activation_offloading cannot be enabled with cpu_offloading)" +
                   got);
    if (pl.offload_checkpoints)
      d->Error("plan.offload.modules",
               "fine-grained offloading and plan.offload.checkpoints are two frameworks' offloading; set one" + got);
    if (pl.recompute == Recompute::kFull)
      d->Error("plan.offload.modules",
               "full recomputation keeps only each layer's input, so no module's saved tensors are left to offload; "
               "use plan.recompute none or selective" +
                   got);
    if (has(OffloadModule::kAttnProj) && !has(OffloadModule::kCoreAttn))
      d->Error("plan.offload.modules",
               "attn_proj needs core_attn: the output projection's input is core attention's output, which its "
               "backward needs" +
                   got);
    if (has(OffloadModule::kFusedGroupMlp) && (has(OffloadModule::kExpertFc1) || has(OffloadModule::kMoeAct)))
      d->Error(
          "plan.offload.modules",
          "fused_group_mlp offloads the whole grouped MLP: it cannot be combined with expert_fc1 or moe_act" + got);
    const bool expert_modules =
        has(OffloadModule::kExpertFc1) || has(OffloadModule::kMoeAct) || has(OffloadModule::kFusedGroupMlp);
    if (expert_modules && !m.moe)
      d->Error("plan.offload.modules", "expert_fc1, moe_act and fused_group_mlp need an MoE model (model.moe)" + got);
    if (expert_modules && pl.Recomputes(RecomputeModule::kMoe))
      d->Error(
          "plan.offload.modules",
          "expert modules cannot be offloaded while the whole MoE layer is recomputed (recompute_modules moe)" + got);
    RequireHostLink(g, "plan.offload.modules", "offload activations", d);
  }

  // PyTorch's micro-pipeline TP matches all-gathers and reduce-scatters only (torch/_inductor/
  // fx_passes/micro_pipeline_tp.py): without SP the TP collectives are all-reduces it never fuses.
  if (pl.tp_overlap == TpOverlap::kAsync && pl.tp > 1 && !pl.sequence_parallel)
    d->Error("plan.tp_overlap",
             "async (PyTorch's AsyncTP) fuses the sequence-parallel all-gathers and reduce-scatters with their GEMMs: "
             "it needs plan.sequence_parallel (without it the TP collectives are all-reduces, which it leaves alone)");
  // DTensor's TP styles overlap nothing of their own (PlanSpec::dtensor_tp); backward and full are
  // Megatron's and Transformer Engine's overlaps (core/step_graph.cc Backward).
  if (pl.dtensor_tp && pl.tp > 1 && (pl.tp_overlap == TpOverlap::kBackward || pl.tp_overlap == TpOverlap::kFull))
    d->Error("plan.dtensor_tp",
             "PyTorch's DTensor TP runs its collectives blocking, or fused by AsyncTP: it needs plan.tp_overlap none "
             "or async (got " +
                 std::string(Name(pl.tp_overlap)) + ", Megatron-Core's overlap)");
  // PyTorch's context_parallel rotates K and V by all-gather or by ring sends (set_rotate_method
  // allgather / alltoall); it has no Ulysses all-to-all (PlanSpec::torch_cp).
  if (pl.torch_cp && pl.cp > 1 && pl.cp_kind == CpKind::kUlysses)
    d->Error("plan.torch_cp",
             "PyTorch's context_parallel runs ring attention, its K/V rotated by all-gather or ring sends: it needs "
             "plan.cp_kind allgather or ring (got ulysses)");
  // Its ring dispatches SDPA's fused kernels (flash, memory-efficient, cuDNN: _sdpa_handler's
  // call_maps), so a model whose attention is unfused has none of it to cost.
  if (pl.torch_cp && pl.cp > 1 && m.attention == AttentionImpl::kNaive)
    d->Error("plan.torch_cp",
             "PyTorch's context_parallel rings SDPA's fused kernels (flash, memory-efficient, cuDNN): it needs a fused "
             "model.attention (got naive)");
  if (pl.ep_overlap && pl.ep <= 1)
    d->Error(
        "plan.ep_overlap",
        "needs plan.ep > 1: without expert parallelism there are no all-to-alls to overlap (got ep " + S(pl.ep) + ")");
  // Megatron-Core's merged schedule runs whole layers of two microbatches side by side and refuses
  // what would break that (transformer_config.py at 6cd6ea530e: no full recomputation, no `moe`
  // module recomputed, and with PP > 1 the interleaved schedule: combined_1f1b.py has no other).
  if (pl.ep_overlap && pl.ep > 1) {
    if (pl.recompute == Recompute::kFull)
      d->Error("plan.recompute",
               "Megatron-Core's EP overlap (plan.ep_overlap) refuses full recomputation; recompute selective modules "
               "or none");
    else if (pl.Recomputes(RecomputeModule::kMoe))
      d->Error("plan.recompute_modules",
               "Megatron-Core's EP overlap (plan.ep_overlap) refuses recomputing the moe module; its merged schedule "
               "runs the MoE layer's nodes apart");
    if (pl.pp > 1 && pl.schedule != Schedule::kInterleaved)
      d->Error("plan.schedule",
               "Megatron-Core's EP overlap (plan.ep_overlap) with pp > 1 runs the interleaved schedule only (it "
               "needs virtual pipeline stages); got " +
                   std::string(Name(pl.schedule)));
  }
  // The busiest EP rank's share: a measured ratio of routed tokens, from the mean (1) to every
  // token on one rank (ep); dropless only, since token dropping pads every expert to its capacity.
  if (pl.moe_imbalance != 1) {
    if (!m.moe)
      d->Error("plan.moe_imbalance",
               "the busiest expert-parallel rank's share of an MoE layer's tokens: needs an MoE "
               "model (model.moe), got a dense one");
    else if (m.moe->capacity_factor > 0)
      d->Error("plan.moe_imbalance", "token dropping at capacity factor " + S(m.moe->capacity_factor) +
                                         " pads every expert to its capacity, so no rank is busier: leave it at 1 "
                                         "or train dropless");
    else if (!(pl.moe_imbalance >= 1) || pl.moe_imbalance > static_cast<double>(std::max<int64_t>(pl.ep, 1)))
      d->Error("plan.moe_imbalance", "must be from 1 (every rank the mean) to ep = " + S(std::max<int64_t>(pl.ep, 1)) +
                                         " (every token on one rank); got " + S(pl.moe_imbalance));
  }
  if (pl.moe_router_padding && !m.moe)
    d->Error("plan.moe_router_padding",
             "pads each expert's tokens in an MoE layer's routing: needs an MoE model (model.moe), got a dense one");
  if (pl.moe_op_fuser) {
    const std::string f = "plan.moe_op_fuser";
    if (!m.moe)
      d->Error(f, "runs an MoE layer's experts through Transformer Engine's op fuser: needs an MoE model (model.moe)");
    else if (!pl.transformer_engine || !pl.moe_grouped_gemm)
      d->Error(f,
               "is Transformer Engine's grouped experts fused (Megatron-Core TEGroupedMLP): needs "
               "plan.transformer_engine and plan.moe_grouped_gemm");
    else if (pl.etp > 1)
      d->Error(f,
               "Megatron-Core's fused experts refuse expert tensor parallelism (_is_fused_impl_supported): needs "
               "etp 1, got " +
                   S(pl.etp));
    else if (pl.expert_bias != ExpertBias::kFused && m.bias == BiasKind::kAll)
      d->Error("plan.expert_bias", std::string("the op fuser adds fc2's bias in its grouped linear op: fused, not ") +
                                       Name(pl.expert_bias));
  }
  if (pl.delay_wgrad && !pl.ep_overlap)
    d->Error("plan.delay_wgrad",
             "needs plan.ep_overlap: Megatron-Core delays the weight gradients only for the merged EP-overlap schedule "
             "(--delay-wgrad-compute asserts --overlap-moe-expert-parallel-comm)");
}

// The first and last layers kept in BF16 under a quantized precision (Megatron-Core's rules,
// transformer_config.py at d98e8a64: each count within 0..layers / pp; not with delayed scaling,
// whose amax history a per-layer change of context would corrupt).
void CheckBf16Layers(const PlanSpec& pl, const ModelSpec& m, const GpuSpec& g, Diagnostics* d) {
  const std::pair<const char*, int64_t> counts[] = {{"plan.bf16_layers_at_start", pl.bf16_layers_at_start},
                                                    {"plan.bf16_layers_at_end", pl.bf16_layers_at_end}};
  const int64_t per_stage = pl.pp > 0 ? m.layers / pl.pp : m.layers;
  for (const auto& [field, n] : counts) {
    if (n < 0) d->Error(field, "must be >= 0 layers (got " + S(n) + ")");
    if (n <= 0) continue;
    if (!Quantized(pl.precision))
      d->Error(field, std::string("keeps layers in BF16 under a quantized plan.precision (fp8, nvfp4); got ") +
                          Name(pl.precision) + ", in which every layer already runs");
    if (n > per_stage)
      d->Error(field, S(n) + " exceeds the layers per pipeline stage (" + S(per_stage) + " = " + S(m.layers) +
                          " layers / pp " + S(pl.pp) + "), Megatron-Core's bound");
  }
  if (!pl.HasBf16Layers()) return;
  if (pl.bf16_layers_at_start + pl.bf16_layers_at_end > m.layers)
    d->Error("plan.bf16_layers_at_end", "the BF16 layers at the start (" + S(pl.bf16_layers_at_start) + ") and end (" +
                                            S(pl.bf16_layers_at_end) + ") exceed the model's " + S(m.layers) +
                                            " layers");
  if (pl.recompute == Recompute::kFull && pl.recompute_layers > 0)
    d->Error("plan.bf16_layers_at_start",
             "BF16 layers beside full recomputation of only some layers (plan.recompute_layers " +
                 S(pl.recompute_layers) + ") are not modelled: recompute every layer or none");
  if (pl.precision == Dtype::kFp8 && pl.fp8_scaling == Fp8Scaling::kDelayed)
    d->Error("plan.bf16_layers_at_start",
             "BF16 layers need an FP8 scaling other than delayed (plan.fp8_scaling current or block): "
             "Megatron-Core refuses them with delayed scaling");
  if (!g.peak_flops_per_s.count(Dtype::kBf16))
    d->Error("plan.bf16_layers_at_start", "gpu " + g.name + " has no bf16 peak for the BF16 layers");
}

// Recompute.
void CheckRecompute(const PlanSpec& pl, const ModelSpec& m, Diagnostics* d) {
  if (m.Hybrid() && pl.recompute == Recompute::kSelective &&
      (pl.recompute_modules & ModuleBit(RecomputeModule::kTorchtitanOp)))
    d->Error("plan.recompute_modules",
             "torchtitan's per-op policy is a Llama layer's; a hybrid model's is not modelled");
  if (pl.recompute_layers > 0) {
    if (pl.recompute != Recompute::kFull)
      d->Error("plan.recompute_layers", "needs plan.recompute=full (got " + std::string(Name(pl.recompute)) + ")");
    const int64_t chunks = pl.pp * pl.vpp;
    int64_t per_stage = chunks > 0 ? m.layers / chunks * pl.vpp : m.layers;
    if (pl.recompute_layers > per_stage)
      d->Error("plan.recompute_layers",
               S(pl.recompute_layers) + " exceeds the layers per pipeline stage (" + S(per_stage) + ")");
  }
  if (pl.recompute_modules == 0 || (pl.recompute_modules & ~kAllRecomputeModules) != 0) {
    d->Error("plan.recompute_modules", "must name at least one of " + Choices<RecomputeModule>());
  } else if (pl.recompute_modules != kDefaultRecomputeModules) {
    const std::string mods = "[" + RecomputeModulesString(pl.recompute_modules) + "]";
    if (pl.recompute != Recompute::kSelective)
      d->Error("plan.recompute_modules",
               mods + " needs plan.recompute=selective (got " + std::string(Name(pl.recompute)) + ")");
    // Megatron-Core refuses mla_up_proj without MLA (transformer_config.py __post_init__); the
    // others would recompute nothing on this model: said, not refused.
    if ((pl.recompute_modules & ModuleBit(RecomputeModule::kMlaUpProj)) && !m.mla)
      d->Error("plan.recompute_modules", "mla_up_proj needs a model with multi-latent attention (model.mla)");
    if ((pl.recompute_modules & ModuleBit(RecomputeModule::kMoeAct)) && !m.moe)
      d->Warning("plan.recompute_modules", "moe_act recomputes nothing: the model has no MoE layers");
    if ((pl.recompute_modules & ModuleBit(RecomputeModule::kMoe)) && !m.moe)
      d->Warning("plan.recompute_modules", "moe recomputes nothing: the model has no MoE layers");
    if ((pl.recompute_modules & ModuleBit(RecomputeModule::kSharedExperts)) && (!m.moe || m.moe->shared_experts == 0))
      d->Warning("plan.recompute_modules", "shared_experts recomputes nothing: the model has no shared experts");
    if (pl.recompute_modules & ModuleBit(RecomputeModule::kTorchtitanOp)) {
      if (pl.recompute_modules != ModuleBit(RecomputeModule::kTorchtitanOp))
        d->Error("plan.recompute_modules", "torchtitan_op is a whole policy: list it alone (got " + mods + ")");
      if (m.moe || m.mla || m.attention == AttentionImpl::kNaive || m.bias != BiasKind::kNone)
        d->Error("plan.recompute_modules",
                 "torchtitan_op is torchtitan's policy for dense Llama-style layers: fused attention, no MoE, MLA or "
                 "biases (a biased linear runs addmm, which the policy does not count)");
    }
    if (pl.recompute_modules & ModuleBit(RecomputeModule::kSaveQkvProj)) {
      if (pl.recompute_modules != ModuleBit(RecomputeModule::kSaveQkvProj))
        d->Error("plan.recompute_modules", "save_qkv_proj is a whole policy: list it alone (got " + mods + ")");
      if (m.moe || m.mla || m.Hybrid() || m.attention == AttentionImpl::kNaive)
        d->Error("plan.recompute_modules",
                 "save_qkv_proj is MaxText's policy as costed for dense Llama-style layers: fused attention, no MoE, "
                 "MLA or hybrid layers");
    }
  }
}

// Precision and state dtypes.
void CheckPrecision(const PlanSpec& pl, const GpuSpec& g, Diagnostics* d) {
  if (!IsComputePrecision(pl.precision)) {
    d->Error("plan.precision", std::string("must be a floating-point compute dtype, one of ") +
                                   kComputePrecisionChoices + " (got " + Name(pl.precision) + ")");
  } else if (!g.peak_flops_per_s.count(pl.precision)) {
    std::string have;
    for (const auto& [dt, v] : g.peak_flops_per_s) {
      if (!IsComputePrecision(dt)) continue;  // an int8 peak is no plan.precision
      if (!have.empty()) have += "|";
      have += Name(dt);
    }
    d->Error("plan.precision",
             std::string(Name(pl.precision)) + " is not supported by gpu " + g.name + " (it has: " + have + ")");
  }
  if (pl.precision == Dtype::kNvfp4 && !pl.transformer_engine)
    d->Error("plan.precision",
             "nvfp4 is Transformer Engine's NVFP4BlockScaling recipe: needs plan.transformer_engine "
             "(--transformer-engine, or a stack that runs it, e.g. --stack megatron-core-2024)");
  for (auto [field, dt] : {std::pair{"weights", pl.dtypes.weights}, std::pair{"grads", pl.dtypes.grads},
                           std::pair{"master_weights", pl.dtypes.master_weights},
                           std::pair{"optimizer_states", pl.dtypes.optimizer_states}})
    if (dt == Dtype::kNvfp4)
      d->Error(std::string("plan.dtypes.") + field,
               "nvfp4 is a compute precision only (plan.precision): no state is held in it");
  if (pl.dtypes.weights == Dtype::kNone) d->Error("plan.dtypes.weights", "must not be none");
  if (pl.dtypes.grads == Dtype::kNone) d->Error("plan.dtypes.grads", "must not be none");
  const bool eight_bit = pl.optimizer == Optimizer::kAdam8bit;
  if (eight_bit && pl.dtypes.optimizer_states != Dtype::kInt8)
    d->Error("plan.dtypes.optimizer_states",
             std::string("adam-8bit keeps int8 moments (got ") + Name(pl.dtypes.optimizer_states) + ")");
  if (!eight_bit && pl.dtypes.optimizer_states == Dtype::kInt8)
    d->Error("plan.dtypes.optimizer_states",
             std::string("int8 moments need optimizer=adam-8bit (got ") + Name(pl.optimizer) + ")");
  if (pl.optimizer != Optimizer::kSgdMomentum && pl.dtypes.optimizer_states == Dtype::kNone)
    d->Error("plan.dtypes.optimizer_states", std::string(Name(pl.optimizer)) + " keeps moments; none is not allowed");
}

}  // namespace

// Widths the GPU's GEMMs run slowly at (GpuSpec::gemm_misaligned_efficiency, measured): the
// vocabulary a rank's head holds and the attention's head dim, said as warnings with the fraction,
// since they are the plan's and the model's choice (Megatron pads the vocabulary).
void CheckGemmWidths(const PlanSpec& pl, const ModelSpec& m, const GpuSpec& g, Diagnostics* d) {
  if (!d->wants_warnings() || g.gemm_misaligned_efficiency == GpuSpec::MisalignedGemm{} || pl.tp < 1) return;
  auto fraction = [&](int64_t width) { return g.gemm_misaligned_efficiency.Of(width, width); };
  const int64_t head_columns = (PaddedVocab(m, pl) + pl.tp - 1) / pl.tp;
  if (GpuSpec::MisalignedGemm::Kind(head_columns, head_columns) != nullptr)
    d->Warning("plan.vocab_divisible_by",
               "the output head's " + S(head_columns) + " vocabulary columns a rank (model.vocab " + S(m.vocab) +
                   " over tp " + S(pl.tp) + ") are not a multiple of 8: its GEMMs run at " + S(fraction(head_columns)) +
                   " of the aligned speed on " + g.name +
                   " (docs/compute.md); Megatron-LM pads the vocabulary to a "
                   "multiple of 128 x tp (--vocab-divisible-by 128, the Megatron stacks' default)");
  if (m.attention == AttentionImpl::kNaive && GpuSpec::MisalignedGemm::Kind(m.head_dim, m.head_dim) != nullptr)
    d->Warning("model.head_dim",
               S(m.head_dim) + " is not a multiple of 8: the unfused attention's score and value GEMMs run at " +
                   S(fraction(m.head_dim)) + " of the aligned speed on " + g.name + " (docs/compute.md)");
}

void ValidatePlan(const PlanSpec& pl, const ModelSpec& m, const GpuSpec& g, const ClusterSpec& c, Diagnostics* d) {
  // Ranges first; the cross-checks below assume positive degrees.
  Diagnostics r;
  Positive(&r, "plan.gpus", pl.gpus);
  Positive(&r, "plan.tp", pl.tp);
  Positive(&r, "plan.pp", pl.pp);
  Positive(&r, "plan.dp", pl.dp);
  Positive(&r, "plan.cp", pl.cp);
  Positive(&r, "plan.ep", pl.ep);
  Positive(&r, "plan.etp", pl.etp);
  Positive(&r, "plan.vpp", pl.vpp);
  Positive(&r, "plan.micro_batch", pl.micro_batch);
  Positive(&r, "plan.global_batch", pl.global_batch);
  Positive(&r, "plan.seq_len", pl.seq_len);
  // Each degree at most 2^20 keeps every product the checks below divide by far from overflow.
  for (auto [name, v] : {std::pair{"tp", pl.tp},
                         {"pp", pl.pp},
                         {"dp", pl.dp},
                         {"cp", pl.cp},
                         {"ep", pl.ep},
                         {"etp", pl.etp},
                         {"vpp", pl.vpp},
                         {"micro_batch", pl.micro_batch}}) {
    if (v > (int64_t{1} << 20)) r.Error(std::string("plan.") + name, "must be <= 1048576 (got " + S(v) + ")");
  }
  // Not divisors of anything below: reported without stopping the cross-checks.
  if (pl.zero < 0 || pl.zero > 3) d->Error("plan.zero", "must be 0, 1, 2 or 3 (got " + S(int64_t{pl.zero}) + ")");
  if (pl.recompute_layers < 0) d->Error("plan.recompute_layers", "must be >= 0 (got " + S(pl.recompute_layers) + ")");
  // A CUDA context is hundreds of MiB to a few GiB (docs/memory.md); 64 GiB bounds a typo in bytes.
  if (pl.cuda_context_bytes < 0 || pl.cuda_context_bytes > (int64_t{64} << 30))
    d->Error("plan.cuda_context_bytes",
             "must be 0 (the profile's) or a byte count up to 64 GiB (got " + S(pl.cuda_context_bytes) + ")");
  // Deferred output-layer weight gradients: at most one per microbatch of the step (checked as a
  // count; more than the step holds is a typo, not Megatron's 0 = all, which is the count itself).
  if (pl.deferred_head_wgrad < 0)
    d->Error("plan.deferred_head_wgrad", "must be >= 0 microbatches (got " + S(pl.deferred_head_wgrad) + ")");
  else if (pl.deferred_head_wgrad > 0 && pl.global_batch > 0 && pl.micro_batch > 0 && pl.dp > 0) {
    // In double: micro_batch x dp may overflow int64 on absurd inputs (checked elsewhere).
    const double per_pipeline =
        static_cast<double>(pl.global_batch) / (static_cast<double>(pl.micro_batch) * static_cast<double>(pl.dp));
    if (static_cast<double>(pl.deferred_head_wgrad) > per_pipeline)
      d->Error("plan.deferred_head_wgrad", "must be at most the step's " + S(std::floor(per_pipeline)) +
                                               " microbatches per pipeline (got " + S(pl.deferred_head_wgrad) + ")");
  }
  if (pl.hsdp_shard_size < 0) d->Error("plan.hsdp_shard_size", "must be >= 0 (got " + S(pl.hsdp_shard_size) + ")");
  d->Append(r);
  if (r.has_errors()) return;

  // Sizes meshplan can count exactly in 64-bit bytes: the largest per-layer tensor (naive
  // attention's a*s^2*b scores, or s*b*f of the MLP) must stay below 1e17 bytes.
  {
    const double sq = static_cast<double>(pl.seq_len), b = static_cast<double>(pl.micro_batch);
    const double width = static_cast<double>(
        std::max({m.hidden, m.ffn_hidden, m.vocab, m.moe ? m.moe->expert_ffn_hidden * m.moe->top_k : 0}));
    const double largest = std::max(5.0 * static_cast<double>(m.heads) * sq * sq * b, 8.0 * sq * b * width);
    if (largest > 1e17 || pl.gpus > (int64_t{1} << 40)) {
      d->Error("plan.seq_len", "seq_len=" + S(pl.seq_len) + " with micro_batch=" + S(pl.micro_batch) +
                                   " makes a single activation tensor of ~" + S(largest) +
                                   " bytes; meshplan accepts up to 1e17");
      return;
    }
  }

  // The cross-checks, by area; each reports every broken rule.
  WarnUnusual(m, c, d);
  CheckDegrees(pl, m, c, d);
  CheckStages(pl, m, d);
  CheckBatchAndSchedule(pl, d);
  CheckContextParallel(pl, m, d);
  CheckExpertParallel(pl, m, d);
  CheckShardingAndOffload(pl, m, g, c, d);
  CheckRecompute(pl, m, d);
  CheckPrecision(pl, g, d);
  CheckBf16Layers(pl, m, g, d);
  CheckGemmWidths(pl, m, g, d);
  // A dated kernel is a measurement of one library release on the GPUs it was measured on; on
  // another GPU there is nothing to read it from (the undated kernels fall back to the profile's
  // default efficiency).
  if (m.attention == AttentionImpl::kCudnnFp8)
    d->Error("model.attention",
             "cudnn-fp8 is cuDNN's FP8 attention, which a plan runs with plan.fp8_attention "
             "(--fp8-attention), not a model's kernel: use flash");
  if (pl.fp8_attention) {
    if (!pl.Fp8AttentionApplies())
      d->Error("plan.fp8_attention", std::string("is Transformer Engine's FP8 attention: needs plan.precision fp8 or "
                                                 "nvfp4 and plan.transformer_engine (got precision ") +
                                         Name(pl.precision) + (pl.transformer_engine ? "" : ", no transformer_engine") +
                                         ")");
    else if (m.attention == AttentionImpl::kNaive)
      d->Error("plan.fp8_attention", "runs cuDNN's fused FP8 attention: model.attention naive has no fused kernel");
    else if (!g.attention_curve.count(AttentionImpl::kCudnnFp8))
      d->Error("plan.fp8_attention", "gpu " + g.name +
                                         " has no measured attention_curve.cudnn-fp8 (cuDNN's FP8 fused attention is "
                                         "measured on H200, GB200 and GB300, and taken for the other Hopper boards, "
                                         "B200 and B300)");
  }
  if (m.attention == AttentionImpl::kCudnn913 && !g.attention_curve.count(AttentionImpl::kCudnn913))
    d->Error("model.attention", "cudnn-9.13 (cuDNN before 9.17) is measured on Blackwell only; gpu " + g.name +
                                    " has no attention_curve.cudnn-9.13: use flash (its current cuDNN)");
  if (!c.gpu.empty() && c.gpu != g.name)
    d->Warning("gpu.name", g.name + " differs from the GPU of cluster " + c.name + " (" + c.gpu + ")");
}

}  // namespace meshplan::core
