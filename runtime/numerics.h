// The numerics check: one real training step (forward and backward, no optimizer update) of a
// small GPT with real data flow between ops, run on a Backend for one rank of a plan's TP x PP x DP
// layout, so that a distributed run can be compared with one process computing the same math
// (`meshplan-run verify`, docs/runtime.md). The executor (runtime/executor.h) times a StepGraph's
// ops on standalone random tensors; this file instead chains the Backend's kernels into a model:
//
//   token embedding (+ learned positions) -> L x [pre-norm causal attention, pre-norm MLP, each
//   with a residual] -> final norm -> output head (tied to the token embedding or not) ->
//   softmax cross-entropy, averaged over every token of the global batch.
//
// Every kernel runs on the backend (GEMMs, attention forward/backward, norms, GELU, softmax, add,
// collectives, send/recv). The host only builds inputs (one-hot matrices for the embedding
// lookups and the labels, a column of ones that turns bias adds and bias gradients into GEMMs),
// permutes layouts the Backend has no kernel for ([b*s, heads*d] <-> [b, heads, s, d] and the
// gathered logits), and reads the softmax output to sum -log p(label) in double.
//
// Sharding (Megatron-LM, Shoeybi et al. 2019):
//   TP  Q, K, V and MLP-up are column-parallel (each rank holds heads/tp heads, ffn/tp columns,
//       and the matching bias slices); attention-out and MLP-down are row-parallel, their outputs
//       all-reduced over TP before the (replicated) bias and the residual; the input gradients of
//       the column-parallel GEMMs are all-reduced in the backward pass. The token embedding (and
//       an untied head) is vocab-parallel: rank t holds rows [t V/tp, (t+1) V/tp); the lookup is
//       a one-hot GEMM against the local rows followed by a TP all-reduce. The head's logits are
//       all-gathered over TP (the "gather the logits" option, not Megatron's vocab-parallel
//       cross-entropy: the Backend's softmax works on whole rows), every TP rank computes the
//       same softmax, and each backpropagates through its own vocabulary slice. Norms, position
//       embeddings and row-parallel biases are replicated. Sequence parallelism is not modelled:
//       a plan with sequence_parallel runs without it (the same math).
//   PP  layers split by core::StageLayers; activations [b*s, h] are sent forward and their
//       gradients backward with Send/Recv on the pipeline group, in GPipe order (all
//       microbatches' forwards, then their backwards): the plan's schedule changes when, not
//       what, is computed. With tied embeddings and pp > 1 the last stage holds a copy of the
//       token embedding for the head; the two copies' gradients are exchanged and summed
//       (Megatron's embedding group).
//   DP  DP rank d takes sequences [d M b, (d+1) M b) of the global batch (M = plan.Microbatches(),
//       b = plan.micro_batch); gradients are summed over DP. The loss gradient is scaled by
//       1/(global tokens) on every rank, so the DP sum is the gradient of the global-batch mean
//       loss (the same as Megatron's per-microbatch mean, 1/M scaling and 1/dp after the
//       all-reduce, since every microbatch has b*s tokens).
//
// Precision: every tensor is fp32 whatever plan.precision says (the check compares math, not a
// dtype's rounding); the result's notes say so.
//
// Weights and data depend only on the seed, never on the layout: each element of a parameter is
// a pure function of (seed, parameter, its index in the FULL tensor) - the same as generating the
// full tensor on every rank and keeping this rank's shard - and the tokens of sequence n are a
// function of (seed, n). Weights are uniform in [-init_scale, init_scale], norm gains
// 1 + that. Input tokens are uniform over the vocabulary; labels are the next token.
//
// Output: the global mean loss and, per parameter (in model order), checksums of its FULL
// gradient - sum, sum of |g|, sum of g^2, and a weighted sum with pseudo-random weights in
// [-1, 1] fixed by the element's index in the full tensor (so a shard written at the wrong offset
// changes it) - reduced in double over the world communicator, so they are complete on every
// rank. Each element is counted once: by DP rank 0, by TP rank 0 for replicated parameters, and
// by the first stage for a tied embedding.
//
// Thread-safety: not thread-safe (the Backend is not). Collective over the world when
// groups.world is set: every rank of the plan must call RunNumericsStep with the same arguments.
#ifndef MESHPLAN_RUNTIME_NUMERICS_H_
#define MESHPLAN_RUNTIME_NUMERICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/presets.h"
#include "core/specs.h"
#include "core/status.h"
#include "runtime/backend.h"
#include "runtime/executor.h"

namespace meshplan::runtime {

// One element of a parameter's full tensor: `index` is row-major in the full (unsharded) shape.
struct ParamEntry {
  std::string param;  // a name from NumericsParamNames(), e.g. "layers.0.attn.q.weight"
  int64_t index = 0;
};
struct WeightDelta {
  ParamEntry entry;
  float delta = 0;  // added to the initial value, on every rank holding that element
};

struct NumericsOptions {
  uint64_t seed = 1;         // weights and data
  float init_scale = 0.02f;  // weights U(-s, s); norm gains 1 + U(-s, s)
  int64_t rank = 0;          // global rank in the plan's placement order (MPI: the world rank)
  // Test hooks. weight_deltas: finite differences. probes: full-gradient entries to report.
  std::vector<WeightDelta> weight_deltas;
  std::vector<ParamEntry> probes;
  // This global rank scales every local gradient by (1 + perturb_scale) before the DP
  // reduction: a deliberately wrong rank, to prove the comparison can fail. -1: none.
  int64_t perturb_rank = -1;
  float perturb_scale = 1e-2f;
};

struct GradientChecksum {
  std::string param;
  int64_t rows = 0, cols = 0;  // full shape (vectors: 1 x n)
  std::string sharding;        // "replicated", "tp_rows" (split along rows), "tp_cols"
  double sum = 0, abs_sum = 0, sum_sq = 0, weighted = 0;
};

struct NumericsResult {
  std::string model;
  int64_t tp = 1, pp = 1, dp = 1;
  int64_t ranks = 1;
  int64_t global_batch = 0, seq_len = 0, micro_batch = 0, microbatches = 0;  // microbatches per DP rank
  int64_t tokens = 0;  // global batch x seq_len: the loss's denominator
  uint64_t seed = 0;
  double loss = 0;  // mean cross-entropy (nats) over the global batch
  std::vector<GradientChecksum> grads;
  std::vector<double> probe_grads;  // in options.probes order
  std::vector<std::string> notes;
};

// InvalidArgument naming the field and the rule when the model or plan uses something the check
// does not implement (MoE, MLA, swiglu, rope/alibi, GQA/MQA, qk_norm, attention sinks, dropout,
// cp/ep > 1, vpp > 1, non-contiguous stages, sizes tp does not divide).
core::Status CheckNumericsSupport(const core::ModelSpec& m, const core::PlanSpec& p);

// The single-process reference of a plan: tp = pp = dp = cp = ep = vpp = 1 on one GPU, the same
// micro batch, global batch and sequence length.
core::PlanSpec ReferencePlan(const core::PlanSpec& p);

// The model's parameter names, in checksum order.
std::vector<std::string> NumericsParamNames(const core::ModelSpec& m);

// Runs one step for options.rank. Every plan group larger than one needs a real communicator in
// `groups` (a single process runs ReferencePlan(plan)); InvalidArgument otherwise, or when
// CheckNumericsSupport fails, a probe or delta names an unknown parameter or index; the backend's
// Status if a kernel fails.
core::Result<NumericsResult> RunNumericsStep(Backend& backend, const core::Scenario& scenario,
                                             const NumericsOptions& options, const RankGroups& groups);

// The relative differences between a run and its reference. Loss: |a - b| / |b|. Per parameter,
// the largest over its checksums, each scaled by what bounds its rounding error: sum, abs_sum
// and weighted (|weights| <= 1) by the reference's abs_sum, since |sum(a) - sum(b)| <=
// sum|a_i - b_i| <= eps sum|b_i| when every element agrees to eps; sum_sq by itself. Each scale
// is at least what the parameter's checksum would be if its elements had the model's RMS
// gradient (numel x rms, numel x rms^2): a gradient that is zero in exact arithmetic (the
// attention key bias: softmax is shift-invariant) is pure rounding noise, which no two summation
// orders reproduce relative to itself.
struct ChecksumDiff {
  std::string param;
  double rel_diff = 0;
};
struct NumericsComparison {
  double tolerance = 0;
  double loss_rel_diff = 0;
  std::vector<ChecksumDiff> params;
  double max_rel_diff = 0;  // over the loss and every parameter
  std::string worst;        // "loss" or the parameter with max_rel_diff
  bool ok = false;          // max_rel_diff <= tolerance and the parameter lists match
};
// The default tolerance for fp32 (why 1e-4: numerics.cc, kNumericsTolerance).
extern const double kNumericsTolerance;
NumericsComparison CompareNumerics(const NumericsResult& run, const NumericsResult& reference, double tolerance);

// `meshplan-run verify` output: nccl-tests-style table ('#' comment lines) or JSON
// (schema "meshplan.verify/1"). `comparison` and `reference` may be null.
std::string NumericsTable(const NumericsResult& r, const NumericsResult* reference,
                          const NumericsComparison* comparison);
std::string NumericsJson(const NumericsResult& r, const NumericsResult* reference,
                         const NumericsComparison* comparison);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_NUMERICS_H_
