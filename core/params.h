// Exact parameter counts from the architecture, split the way tensor and expert parallelism split
// them, so the memory model can say what one GPU holds. Conventions: no vocabulary padding (the
// published counts use the true vocabulary); `active` = total minus the routed experts a token does
// not visit (Mixtral's "12.9B active" convention: embeddings and output head included).
// Pure functions; thread-safe.
#ifndef MESHPLAN_CORE_PARAMS_H_
#define MESHPLAN_CORE_PARAMS_H_

#include <cstdint>

#include "core/specs.h"

namespace meshplan::core {

// One transformer layer. "tp_sharded" parts are split over tensor-parallel ranks (column/row
// parallel weights, their column biases); "replicated" parts are held whole by every TP rank
// (norm weights, row-parallel output biases, MLA down-projections, the router).
struct LayerParams {
  int64_t attn_tp_sharded = 0;
  int64_t attn_kv_proj = 0;  // the k/v projections inside attn_tp_sharded (GQA replication)
  int64_t attn_replicated = 0;
  int64_t mlp_tp_sharded = 0;  // dense MLP, or the shared experts of an MoE layer
  int64_t mlp_replicated = 0;
  int64_t norms = 0;  // the two pre-norms (replicated)
  // A Mamba-2 mixer's (ModelSpec::mamba), all split over TP (Megatron-Core mamba_mixer.py splits
  // in_proj's outputs, the conv, dt_bias, A_log, D and the gated norm by head and group, out_proj's
  // input): in_proj h x (2 Inner + 2 G N + heads), conv1d (Inner + 2 G N) x (kernel + 1 bias),
  // dt_bias, A_log and D (heads each), the gated norm (Inner), out_proj Inner x h.
  int64_t mamba_tp_sharded = 0;
  int64_t router = 0;              // replicated
  int64_t expert_etp_sharded = 0;  // ONE routed expert, split over expert-TP ranks
  int64_t expert_replicated = 0;   // ONE routed expert's output bias
  int64_t experts = 0;             // routed experts in this layer (0: dense layer)
  int64_t top_k = 0;

  int64_t Attention() const { return attn_tp_sharded + attn_replicated; }
  int64_t RoutedExpert() const { return expert_etp_sharded + expert_replicated; }
  int64_t NonExpert() const {
    return Attention() + mamba_tp_sharded + mlp_tp_sharded + mlp_replicated + norms + router;
  }
  int64_t Total() const { return NonExpert() + experts * RoutedExpert(); }
  int64_t Active() const { return NonExpert() + top_k * RoutedExpert(); }
};

// One layer of the kind `moe_layer` selects. A hybrid model's (ModelSpec::hybrid_pattern) is its
// mix: each field the layer kinds' parameters weighted by their counts, over the layers, rounded
// (what one layer holds on average; ParamCount's totals are exact).
LayerParams CountLayerParams(const ModelSpec& m, bool moe_layer);
// The parameters of one layer of a hybrid pattern's kind ('M', '*', '-', 'E'; its pre-norm
// included), exact.
LayerParams HybridLayerParams(const ModelSpec& m, char kind);

struct ParamCount {
  int64_t total = 0;
  int64_t active = 0;
  int64_t embedding = 0;    // input token embedding (vocab-parallel over TP)
  int64_t position = 0;     // learned position embedding (replicated)
  int64_t output_head = 0;  // 0 when tied to the input embedding
  int64_t final_norm = 0;
  int64_t dense_layers = 0, moe_layers = 0;
  LayerParams dense_layer, moe_layer;
  // Multi-token prediction (ModelSpec::mtp_layers) on the last stage: `mtp_layers` modules, each
  // one layer of the last decoder layer's kind (`mtp_moe`; a hybrid model's: its mtp_pattern's
  // blocks, `mtp_layer_total` parameters) plus `mtp_extra`: eh_proj (2h x h, column-parallel, no
  // bias) and its three norms (enorm, hnorm, final). `mtp_copies` of them hold parameters (1 with
  // ModelSpec::mtp_shared). Included in total/active.
  int64_t mtp_layers = 0;
  bool mtp_moe = false;
  int64_t mtp_copies = 0;
  int64_t mtp_layer_total = 0, mtp_layer_active = 0;  // one module's layer
  int64_t mtp_extra = 0;                              // per module: mtp_eh_proj + mtp_norms
  int64_t mtp_eh_proj = 0;                            // 2h x h, split over TP
  int64_t mtp_norms = 0;                              // enorm, hnorm, final norm (replicated)
};

// Parameters of one norm over `dim`: LayerNorm's gain and bias, RMSNorm's gain.
int64_t NormParams(const ModelSpec& m, int64_t dim);

ParamCount CountParams(const ModelSpec& m);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_PARAMS_H_
