// FLOPs of one training iteration, counted from the same architecture as the parameter count:
// every GEMM is 2mnk, backward is 2x forward, recompute adds forward work (HFU vs MFU).
// Two attention conventions, because published MFU numbers use both: `full` counts the whole
// s x s score matrix (Narayanan 2021 Eq. 3, Korthikanti 2022 App. A); `causal` counts only the
// lower triangle a causal kernel computes (Megatron-Core's and FlashAttention's accounting).
// Pure functions; thread-safe.
#ifndef MESHPLAN_CORE_FLOPS_H_
#define MESHPLAN_CORE_FLOPS_H_

#include "core/specs.h"

namespace meshplan::core {

enum class AttentionFlops { kFull, kCausal };

// Forward FLOPs per token of a sequence of `seq_len` tokens, split by kind.
struct ForwardFlops {
  double matmul = 0;     // 2 x (weights a token multiplies): projections, MLP/experts, router
  double attention = 0;  // QK^T and AV: 4 * s * (heads * head_dim) per layer (full), half causal
  double logits = 0;     // output head: 2 * h * V
  double Total() const { return matmul + attention + logits; }
};
ForwardFlops ForwardFlopsPerToken(const ModelSpec& m, int64_t seq_len, AttentionFlops convention);
// Keys a query meets on average in a sequence of `seq_len` tokens: s/2 (causal) or s (full)
// without a window (window 0 or >= seq_len); with a window of w keys, w - w^2/(2s) (causal) or w.
double KeysPerQuery(int64_t seq_len, int64_t window, AttentionFlops convention);
// The same for chunked attention (ModelSpec::chunked_attention): the sequence padded to
// n = ceil(s/c) chunks of c tokens, each attended as its own sequence: n c^2 / (2 s) (causal) or
// n c^2 / s (full) keys per real token; no chunking when c >= s.
double ChunkedKeysPerQuery(int64_t seq_len, int64_t chunk, AttentionFlops convention);
// The forward FLOPs per token of a Mamba-2 layer's SSD scan: its four chunked matmuls (core/flops.cc).
double SsdForwardFlopsPerToken(const MambaSpec& x);

// Model FLOPs of one iteration (global batch): 3x forward (forward + backward). MFU uses this.
double ModelFlopsPerIteration(const ModelSpec& m, const PlanSpec& p, AttentionFlops convention);
// Hardware FLOPs: model FLOPs plus what recompute runs again. Full recompute repeats each layer's
// forward (not the output head); selective repeats the attention scores (QK^T, softmax, AV).
double HardwareFlopsPerIteration(const ModelSpec& m, const PlanSpec& p, AttentionFlops convention);
// The same two from a ForwardFlopsPerToken(m, p.seq_len, convention) already in hand (the step
// model needs both conventions and both counts; the search evaluates millions of plans).
double ModelFlopsPerIteration(const ForwardFlops& f, const PlanSpec& p);
double HardwareFlopsPerIteration(const ForwardFlops& f, const ModelSpec& m, const PlanSpec& p);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_FLOPS_H_
