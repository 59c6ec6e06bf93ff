#include "core/step_graph.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string_view>

#include "core/flops.h"
#include "core/memory.h"
#include "core/params.h"

namespace meshplan::core {

const char* Name(OpKind k) {
  switch (k) {
    case OpKind::kGemm: return "gemm";
    case OpKind::kAttention: return "attention";
    case OpKind::kMemoryBound: return "memory";
    case OpKind::kCollective: return "collective";
    case OpKind::kP2p: return "p2p";
    case OpKind::kOptimizer: return "optimizer";
  }
  return "?";
}
const char* Name(Pass p) {
  switch (p) {
    case Pass::kForward: return "forward";
    case Pass::kBackwardInput: return "backward_input";
    case Pass::kBackwardWeight: return "backward_weight";
    case Pass::kRecompute: return "recompute";
    case Pass::kStep: return "step";
  }
  return "?";
}
const char* Name(CommGroup g) {
  switch (g) {
    case CommGroup::kNone: return "none";
    case CommGroup::kTp: return "tp";
    case CommGroup::kCp: return "cp";
    case CommGroup::kEp: return "ep";
    case CommGroup::kDp: return "dp";
    case CommGroup::kPp: return "pp";
    case CommGroup::kDpCp: return "dp_cp";
    case CommGroup::kExpertDp: return "expert_dp";
    case CommGroup::kHsdpShard: return "hsdp_shard";
    case CommGroup::kHsdpReplica: return "hsdp_replica";
    case CommGroup::kPpEnds: return "pp_ends";
  }
  return "?";
}

double MoeBusiestRank(const ModelSpec& m, const PlanSpec& p) {
  return !m.moe || m.moe->capacity_factor > 0 ? 1.0 : p.moe_imbalance;
}

bool GluClampCopies(const ModelSpec& m, const PlanSpec& p) {
  return m.glu_clamp > 0 && m.mlp == MlpKind::kSwiglu && p.elementwise == Elementwise::kFused && !p.moe_op_fuser;
}

double RanksPerToken(int64_t experts, int64_t top_k, int64_t ranks, MoeRouting routing) {
  if (ranks <= 1 || experts <= 0) return 1.0;
  const int64_t per_rank = experts / ranks;
  if (routing == MoeRouting::kRoundRobin && per_rank > 0 && top_k > 0) {
    // Starts s = t k mod E, t = 0, 1, ...: the multiples of g = gcd(E, k) below E, each as often.
    // The block [s, s + k) (mod E) spans ranks floor(s / L) .. floor((s + k - 1) / L), wrapping
    // past the last expert to the first; k >= E covers every rank.
    if (top_k >= experts) return static_cast<double>(ranks);
    const int64_t g = std::gcd(experts, top_k);
    int64_t spans = 0, starts = 0;
    for (int64_t s = 0; s < experts; s += g, ++starts) {
      const int64_t first = s / per_rank, last = ((s + top_k - 1) % experts) / per_rank;
      spans += last >= first ? last - first + 1 : ranks - first + last + 1;
    }
    return static_cast<double>(spans) / static_cast<double>(starts);
  }
  // P(no expert on a given rank) = C(E - L, k) / C(E, k) = prod_{i<k} (E - L - i) / (E - i).
  double miss = 1.0;
  for (int64_t i = 0; i < top_k; ++i) {
    const int64_t num = experts - per_rank - i;
    if (num <= 0) return static_cast<double>(ranks);
    miss *= static_cast<double>(num) / static_cast<double>(experts - i);
  }
  return static_cast<double>(ranks) * (1.0 - miss);
}

double Op::Flops() const {
  if (kind == OpKind::kGemm)
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch) *
           share;
  if (kind == OpKind::kAttention) {
    // QK^T (2 s_q s_kv d_qk) + AV (2 s_q s_kv d_v) per head; backward recomputes the scores and
    // forms dQ, dK, dV, dS: 2.5x forward (FlashAttention-2 paper, §3.1 accounting).
    // Keys per query: KeysPerQuery's, its no-window case inline (the search costs every op).
    const AttentionFlops conv = causal ? AttentionFlops::kCausal : AttentionFlops::kFull;
    const double keys = !Windowed() ? static_cast<double>(seq_kv) * (causal ? 0.5 : 1.0)
                        : chunked   ? ChunkedKeysPerQuery(seq_kv, window, conv)
                                    : KeysPerQuery(seq_kv, window, conv);
    double f = 2.0 * static_cast<double>(attn_batch) * static_cast<double>(heads) * static_cast<double>(seq_q) * keys *
               static_cast<double>(head_dim_qk + head_dim_v);
    if (pass == Pass::kBackwardInput) f *= 2.5;
    return f * share;
  }
  return 0;
}

namespace {

// A default Op, the template the builder's helpers copy each new op from.
constexpr Op kBlankOp{};

class Builder {
 public:
  Builder(const ModelSpec& m, const PlanSpec& p) : m_(m), p_(p), vocab_(PaddedVocab(m, p)) {
    t_ = p.tp;
    sp_ = p.sequence_parallel && p.tp > 1;
    async_tp_ = sp_ && p.tp_overlap == TpOverlap::kAsync;
    dtensor_ = sp_ && p.dtensor_tp;
    float8_tp_ = dtensor_ && p.precision == Dtype::kFp8;
    eager_ = p.elementwise != Elementwise::kFused;
    eager_norm_ = p.elementwise == Elementwise::kEager;
    rope_cost_ = eager_ ? &kEagerRope : m.rope_mscale != 1.0 ? &kMegatronRope : nullptr;
    glu_clamp_ = GluClampCopies(m, p);
    s_ = p.seq_len / p.cp;
    tokens_ = s_ * p.micro_batch;
    e_ = (p.precision == Dtype::kFp32 || p.precision == Dtype::kTf32) ? 4 : 2;
    gemm_dtype_ = p.precision;
    busiest_rank_ = MoeBusiestRank(m, p);
  }

  // One layer's forward ops into `fwd` (cleared first; its capacity is kept).
  void ForwardInto(bool moe, std::vector<Op>* fwd) {
    fwd->clear();
    fwd->reserve(40);
    if (m_.Hybrid()) {
      HybridMix(fwd);
      return;
    }
    Attention(fwd, moe);
    if (moe && m_.moe) MoeMlp(fwd);
    else DenseMlp(fwd, m_.ffn_hidden, "mlp");
  }
  std::vector<Op> Forward(bool moe) {
    std::vector<Op> fwd;
    ForwardInto(moe, &fwd);
    return fwd;
  }

  // The whole layer into `out` (its forward built in `fwd`): both are cleared first and keep
  // their capacity, so a caller that reuses them builds a graph without allocating.
  void LayerInto(bool moe, std::vector<Op>* fwd, std::vector<Op>* out) {
    ForwardInto(moe, fwd);
    out->clear();
    out->reserve(4 * fwd->size() + 8);
    out->insert(out->end(), fwd->begin(), fwd->end());
    Backward(*fwd, out);
    Recompute(*fwd, out);
    GradSync(moe, out);
  }

  // One part into `out`, the forward built in `fwd` (both cleared first, their capacity kept).
  void PartInto(bool moe, LayerPart part, std::vector<Op>* out, std::vector<Op>* fwd) {
    out->clear();
    if (part == LayerPart::kSync) {
      out->reserve(8);
      GradSync(moe, out);
      return;
    }
    ForwardInto(moe, fwd);
    if (part == LayerPart::kRecompute) {
      out->reserve(fwd->size());
      Recompute(*fwd, out);
      return;
    }
    out->reserve(3 * fwd->size());
    out->insert(out->end(), fwd->begin(), fwd->end());
    Backward(*fwd, out);
  }

  // (Capacities are reserved up front: the search builds a graph per candidate plan.)
  // The embedding's and head's lists into `out`, with `fwd` as scratch (both cleared first, as
  // LayerInto); by part, each alone (BuildEmbeddingPart, BuildHeadPart).
  using StageCompute = void (Builder::*)(std::vector<Op>*, std::vector<Op>*);
  void EmbeddingInto(std::vector<Op>* fwd, std::vector<Op>* out) {
    EmbeddingCompute(fwd, out);
    EmbeddingSync(out);
  }
  // The embedding's sync part: its weight gradient (like the unfused gradient accumulation it
  // depends on the state dtypes, the fusion and the ZeRO stage, not on the tokens), then the
  // synchronisation and optimizer of its parameters.
  void EmbeddingSync(std::vector<Op>* out) {
    EmbeddingWeightGrad(out);
    StageParamSync(EmbeddingParams(), EmbeddingTensors(), out);
    TiedEmbeddingSync(out);
  }
  void EmbeddingPartInto(LayerPart part, std::vector<Op>* out, std::vector<Op>* fwd) {
    if (part != LayerPart::kSync) {
      StagePartInto(part, &Builder::EmbeddingCompute, out, fwd);
      return;
    }
    out->clear();
    EmbeddingSync(out);
  }
  void HeadInto(std::vector<Op>* fwd, std::vector<Op>* out) {
    HeadCompute(fwd, out);
    HeadSync(out);
  }
  void HeadSync(std::vector<Op>* out) {
    StageParamSync(HeadParams(), HeadTensors(), out);
    // DualPipe: ranks 0 and pp - 1 each hold an embedding and a head (the two directions), so the
    // embedding's list carries the one all-reduce between them.
    if (p_.schedule != Schedule::kDualPipe) TiedEmbeddingSync(out);
  }
  void HeadPartInto(LayerPart part, std::vector<Op>* out, std::vector<Op>* fwd) {
    if (part != LayerPart::kSync) {
      StagePartInto(part, &Builder::HeadCompute, out, fwd);
      return;
    }
    out->clear();
    HeadSync(out);
  }
  // A word embedding tied to the output layer across pipeline stages (pp > 1) has a copy on the
  // first stage and one on the last, each given the gradient of its own use; after the backward
  // the two are summed by an all-reduce over the pipeline's ends, once per step and blocking,
  // after the data-parallel reduction and before the optimizer (Megatron-LM's
  // _allreduce_word_embedding_grads in finalize_model_grads.py; DeepSpeed's pipeline engine
  // allreduce_tied_weight_gradients in its ReduceTiedGrads instruction, before the DP reduction;
  // both a plain all-reduce of the copy's V*h/t gradient on the embedding group). In the
  // gradients' dtype; under ZeRO-3 the rank's shard of it.
  void TiedEmbeddingSync(std::vector<Op>* out) {
    if (!m_.tied_embeddings || p_.pp <= 1) return;
    int64_t elements = vocab_ * m_.hidden / t_;
    if (p_.zero == 3) elements = std::max<int64_t>(elements / std::max<int64_t>(p_.dp * p_.cp, 1), 1);
    Coll(out, "tied_embedding_all_reduce", CollectiveKind::kAllReduce, CommGroup::kPpEnds,
         elements * DtypeBytes(p_.dtypes.grads));
    out->back().pass = Pass::kStep;
  }
  void EmbeddingCompute(std::vector<Op>* fwd_ops, std::vector<Op>* out_ops) {
    std::vector<Op>& fwd = *fwd_ops;
    std::vector<Op>& out = *out_ops;
    fwd.clear();
    out.clear();
    fwd.reserve(4);
    Mem(&fwd, "embedding_lookup", tokens_ * m_.hidden * e_ * 2);
    // Vocab-parallel embedding: partial rows summed over TP (reduce-scatter under SP).
    TpReduce(&fwd, "embedding_reduce", /*after_gemm=*/false);
    out.reserve(4 * fwd.size() + 8);
    out.insert(out.end(), fwd.begin(), fwd.end());
    // Without SP the reduction's backward is the identity (Megatron's
    // reduce_from_tensor_model_parallel_region); under SP the reduce-scatter's is an all-gather.
    if (!sp_) fwd.resize(1);
    Backward(fwd, &out);
  }
  // The embedding's weight gradient, every microbatch. F.embedding's backward materializes a dense
  // gradient of the whole (vocab-parallel) table: PyTorch's embedding_dense_backward allocates it
  // with at::zeros (one write of the table in the weights' dtype) and adds each token's row (as
  // many rows as tokens, the lookup's size, counted in its backward). No GEMM writes it into the
  // gradient buffer, so gradient-accumulation fusion does not reach it: Megatron-Core's DDP hook
  // adds it there (distributed_data_parallel.py _make_backward_post_hook at d98e8a64:
  // param.main_grad.add_(param.grad.data); read the gradient and the buffer, write the buffer).
  // Without the fusion that add is every parameter's (ParamSync's grad_accumulate); ZeRO-3 hands
  // the dense gradient to its reduce-scatter (whose copies its gather kind costs).
  void EmbeddingWeightGrad(std::vector<Op>* out) {
    const int64_t params = EmbeddingParams();
    const int64_t wb = DtypeBytes(p_.dtypes.weights), gb = DtypeBytes(p_.dtypes.grads);
    if (Mem(out, "embedding_grad_zero_fill", params * wb)) out->back().pass = Pass::kBackwardWeight;
    if (p_.grad_accum_fusion && p_.zero < 3 && Mem(out, "embedding_grad_accumulate", params * (wb + 2 * gb)))
      out->back().pass = Pass::kBackwardWeight;
  }

  void HeadCompute(std::vector<Op>* fwd_ops, std::vector<Op>* out_ops) {
    std::vector<Op>& fwd = *fwd_ops;
    std::vector<Op>& out = *out_ops;
    fwd.clear();
    out.clear();
    fwd.reserve(8 + 16 * static_cast<size_t>(m_.mtp_layers));
    // Each multi-token-prediction module before the main head's loss (Megatron-Core
    // MultiTokenPredictionLayer.forward): embed the shifted tokens (vocab-parallel, reduced over
    // TP), enorm and hnorm, eh_proj over the concatenation [s, b, 2h] -> h/t (column-parallel,
    // its output all-gathered over TP), then its own final norm, the shared head and a loss. Its
    // transformer layer is counted with the stage's layers (core/memory.h StageCompositionOf).
    for (int64_t d = 0; d < m_.mtp_layers; ++d) {
      Mem(&fwd, "mtp_embedding_lookup", tokens_ * m_.hidden * e_ * 2);
      TpReduce(&fwd, "mtp_embedding_reduce", /*after_gemm=*/false);
      Norm(&fwd, "mtp_enorm", tokens_ * m_.hidden / (sp_ ? t_ : 1));
      Norm(&fwd, "mtp_hnorm", tokens_ * m_.hidden / (sp_ ? t_ : 1));
      TpGather(&fwd, "mtp_eh_gather");
      Gemm(&fwd, "mtp_eh_proj", tokens_, m_.hidden / t_, 2 * m_.hidden);
      if (t_ > 1)
        Coll(&fwd, "mtp_eh_output_gather", CollectiveKind::kAllGather, CommGroup::kTp, tokens_ * m_.hidden * e_);
      HeadLoss(&fwd, "mtp_final_norm");
    }
    HeadLoss(&fwd, "final_norm");
    out.reserve(4 * fwd.size() + 8);
    out.insert(out.end(), fwd.begin(), fwd.end());
    Backward(fwd, &out);
    // Without SP the head's input is the identity forward (f, no forward op) and all-reduces its
    // gradient backward (Shoeybi 2019 Fig. 3), overlapped with the weight gradient as a layer's
    // column-parallel input is (tp_overlap), else blocking.
    if (!sp_ && t_ > 1) {
      const bool overlap = p_.tp_overlap != TpOverlap::kNone;
      Coll(&out, "head_input_grad_reduce", CollectiveKind::kAllReduce, CommGroup::kTp, tokens_ * m_.hidden * e_,
           overlap);
      out.back().pass = overlap ? Pass::kBackwardWeight : Pass::kBackwardInput;
    }
  }
  // The final norm, the vocab-parallel output head and the loss, forward.
  void HeadLoss(std::vector<Op>* ops, const char* norm_name) {
    std::vector<Op>& fwd = *ops;
    Norm(&fwd, norm_name, tokens_ * m_.hidden / (sp_ ? t_ : 1));
    TpGather(&fwd, "head_gather", /*sixteen_bit=*/true);
    // The vocab-parallel head: each rank holds ceil(V/t) columns of the padded vocabulary
    // (PlanSpec::vocab_divisible_by; with none, the last rank's padded).
    const int64_t v_local = (vocab_ + t_ - 1) / t_;
    Gemm(&fwd, "output_head", tokens_, v_local, m_.hidden, 1, /*sixteen_bit=*/true);
    // The loss over this rank's logits, by its implementation's passes (CrossEntropyCost; the
    // backward's from EagerBackward). Flash (FlashAttention's kernel) keeps the three fp32 passes
    // it was costed with: its passes over the bf16 logits are not traced here (its memory is
    // modelled: core/memory.cc).
    if (const EagerCost* c = CrossEntropyCost())
      Eager(&fwd, "cross_entropy", c->forward * tokens_ * v_local, c->forward_kernels, MemOp::kCrossEntropy);
    else Mem(&fwd, "cross_entropy", 3 * tokens_ * v_local * 4, MemOp::kCrossEntropy);
  }
  // The compute or recompute part of the embedding or head: its forward and backward
  // (`compute()`), or nothing (they are never recomputed). Their sync parts: EmbeddingSync, HeadSync.
  // (Into `out`, with `fwd` as scratch: both cleared first.)
  void StagePartInto(LayerPart part, StageCompute compute, std::vector<Op>* out, std::vector<Op>* fwd) {
    out->clear();
    if (part == LayerPart::kCompute) (this->*compute)(fwd, out);
  }
  // The head's own parameters (untied output projection) and the final norm; tied across
  // pipeline stages (pp > 1), the last stage's own copy of the word embedding, a parameter of that
  // stage that its data-parallel group reduces and its optimizer updates like any other (Megatron's
  // shared embedding, DeepSpeed's TiedLayerSpec; core/memory.cc holds it too). The all-reduce that
  // keeps the two copies' gradients equal: TiedEmbeddingSync.
  // With MTP: each module's eh_proj (2h x h/t) and three norms, and, untied across stages, the
  // last stage's copy of the word embedding (core/memory.cc).
  bool HeadHoldsOutputWeight() const { return !m_.tied_embeddings || p_.pp > 1; }
  int64_t HeadParams() const {
    int64_t n = (HeadHoldsOutputWeight() ? vocab_ * m_.hidden / t_ : 0) + m_.hidden;
    if (m_.mtp_layers > 0) {
      n += m_.MtpParamCopies() * (2 * m_.hidden * m_.hidden / t_ + 3 * NormParams(m_, m_.hidden));
      if (!m_.tied_embeddings && p_.pp > 1) n += vocab_ * m_.hidden / t_;
    }
    return n;
  }

  Op P2p() const {
    Op op = kBlankOp;
    op.name = "pipeline_send";
    op.kind = OpKind::kP2p;
    op.collective = CollectiveKind::kSendRecv;
    op.group = CommGroup::kPp;
    // Megatron's scatter/gather optimisation sends 1/t of the activation and all-gathers it over
    // NVLink on the receiver (Narayanan 2021 §4.1); with SP the activation is already 1/t.
    op.bytes = tokens_ * m_.hidden * e_ / t_;
    return op;
  }
  // The receiver's half of the scatter/gather: gather_split_1d_tensor all-gathers the slices over
  // the TP group, on the critical path before the pass that needs them (Megatron-LM
  // p2p_communication.py; Narayanan 2021 §4.1, Fig. 9). Under SP the slice is what the next
  // stage computes on; with t = 1 or one stage there is nothing to gather.
  Op P2pGather() const {
    Op op = kBlankOp;
    op.name = "pipeline_gather";
    op.kind = OpKind::kCollective;
    op.collective = CollectiveKind::kAllGather;
    op.group = CommGroup::kTp;
    op.bytes = (!sp_ && t_ > 1 && p_.pp > 1) ? tokens_ * m_.hidden * e_ : 0;
    return op;
  }

 private:
  // ---- op helpers
  // A linear layer's GEMM in the plan's precision; `sixteen_bit` keeps an FP8 or NVFP4 plan's GEMM
  // in BF16 (what Transformer Engine does not quantize: Megatron-Core's output layer is a plain
  // ColumnParallelLinear and its router a torch linear in the router dtype; gpt_model.py,
  // router.py). A quantized GEMM first quantizes its input (Fp8Scaling, core/specs.h; NVFP4 below).
  // Returns whether it added the GEMM (none for an empty shape).
  bool Gemm(std::vector<Op>* ops, const char* name, int64_t m, int64_t n, int64_t k, int64_t batch = 1,
            bool sixteen_bit = false) {
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return false;
    const Dtype dtype = sixteen_bit && Quantized(gemm_dtype_) ? Dtype::kBf16 : gemm_dtype_;
    if (Quantized(dtype)) Quantize(ops, /*grad=*/false, m * k * batch, Pass::kForward, QuantizedTensors(name, batch));
    // Built in place from a constant (Mem, Coll too): a local Op copied in, or one value-initialised
    // in place (a `rep stos` of its 128 bytes), costs more than its fields.
    Op& op = ops->emplace_back(kBlankOp);
    op.name = name;
    op.kind = OpKind::kGemm;
    op.m = m;
    op.n = n;
    op.k = k;
    op.batch = batch;
    op.dtype = dtype;
    return true;
  }
  // Quantizing `elements` 16-bit values for a GEMM, row- and column-wise: bytes read and written
  // per element and kernels by the recipe. FP8 by its scaling (core/specs.h Fp8Scaling): delayed,
  // one cast-transpose (read 2 B, write 1 + 1 B); current, Float8CurrentScalingQuantizer::
  // quantize_impl (csrc/quantizer.cpp at TE v2.9) runs an amax kernel over the input, a
  // scale-from-amax kernel and the cast (nvte_compute_amax_with_config, nvte_compute_scale_from_amax,
  // nvte_quantize_v2): read 2 + 2 B, write 1 + 1 B in 3 kernels; block (1x128 tiles, and MXFP8's
  // 1x32), under Transformer Engine one kernel reads the input once and writes both layouts with
  // their scales (quantize_transpose_vector_blockwise for NVTE_BLOCK_SCALING_1D, cast_mxfp8_2D_kernel
  // for MXFP8; common/util/cast_kernels.cuh at v2.9): 2 + 1 + 1 B and an fp32 scale per 128 values
  // (an E8M0 byte per 32 under MXFP8) for each layout, 1/16 B: 65/16 B in 1 kernel; without it, as
  // the DeepSeek-V3 report §3.5.2 describes its own framework, 1x128-tile quantization in the
  // forward, then read back, transposed and re-quantized for the backward: 5 B in 2 kernels. NVFP4
  // (Transformer Engine's NVFP4BlockScaling, transformer_engine/common/recipe/__init__.py at
  // v2.12): an amax pass over the input and over its 16-point random Hadamard transform (the
  // per-tensor fp32 scales), then one quantize that reads the 2 B again and writes both layouts,
  // each 4 bits and an E4M3 scale per 16 values (9/16 B): 2 + 2 + 2 x 9/16 = 41/8 B in 2 kernels;
  // the Hadamard transform (16 multiply-adds a value, on the column-wise copy the weight gradient
  // reads) and the gradients' stochastic rounding run inside them.
  struct QuantizeCost {
    int64_t sixteenths = 64;  // bytes read and written per element, in sixteenths
    int64_t kernels = 1;
  };
  QuantizeCost QuantizeCostPerElement() const {
    if (gemm_dtype_ == Dtype::kNvfp4) return {82, 2};
    if (p_.fp8_scaling == Fp8Scaling::kCurrent) return {96, 3};
    if (p_.fp8_scaling == Fp8Scaling::kBlock) return p_.transformer_engine ? QuantizeCost{65, 1} : QuantizeCost{80, 2};
    return {64, 1};
  }
  // The tensors a quantization is launched for, one kernel set each: a routed expert GEMM's inputs
  // (and output gradients) are `batch` tensors, one a local expert, which Transformer Engine's
  // GroupedLinear quantizes with tex.split_quantize (module/grouped_linear.py at v2.9 to v2.17.1,
  // forward and backward; its grouped-tensor path is opt-in, NVTE_GROUPED_LINEAR_USE_FUSED_GROUPED_GEMM
  // default 0), whose multi_tensor_quantize_impl (csrc/extensions/cast.cpp at the same releases) has a
  // fused multi-tensor kernel for delayed scaling only ("Currently only have fused kernel for FP8
  // delayed scaling") and quantizes the others one tensor after another. NVFP4's split quantize
  // has a grouped Hadamard path of its own (split_quantize_nvfp4_impl_with_rht_helper): one set.
  int64_t QuantizedTensors(std::string_view gemm, int64_t batch) const {
    const bool expert = gemm == "expert_fc1" || gemm == "expert_fc2";
    if (!expert || batch <= 1 || !p_.transformer_engine || gemm_dtype_ != Dtype::kFp8 ||
        p_.fp8_scaling == Fp8Scaling::kDelayed)
      return 1;
    return batch;
  }
  void Quantize(std::vector<Op>* ops, bool grad, int64_t elements, Pass pass, int64_t tensors = 1) {
    const bool nvfp4 = gemm_dtype_ == Dtype::kNvfp4;
    const char* name = nvfp4 ? (grad ? "nvfp4_quantize_grad" : "nvfp4_quantize_input")
                             : (grad ? "fp8_quantize_grad" : "fp8_quantize_input");
    const QuantizeCost c = QuantizeCostPerElement();
    if (!Mem(ops, name, elements * c.sixteenths / 16, MemOp::kFp8Quantize)) return;
    ops->back().pass = pass;
    ops->back().batch = c.kernels * tensors;
  }
  // Returns whether it added the op (none for no bytes).
  bool Mem(std::vector<Op>* ops, const char* name, int64_t bytes, MemOp what = MemOp::kCopy) {
    if (bytes <= 0) return false;
    Op& op = ops->emplace_back(kBlankOp);
    op.name = name;
    op.kind = OpKind::kMemoryBound;
    op.bytes = bytes;
    op.mem_op = what;
    return true;
  }
  // A memory-bound layer of `kernels` eager kernels moving `bytes` in all.
  void Eager(std::vector<Op>* ops, const char* name, int64_t bytes, int64_t kernels, MemOp what) {
    if (Mem(ops, name, bytes, what)) ops->back().batch = kernels;
  }
  // Bytes per element of PyTorch eager's decompositions (core/specs.h Elementwise), forward and
  // backward, each op reading and writing whole tensors (bf16 2 B, fp32 4 B), and their kernels:
  //  RMSNorm, x * rsqrt(x.float().pow(2).mean(-1) + eps), .type_as(x) * weight: forward
  //    float 2+4, pow 4+4, mean 4, mul 4+4, type_as 4+2, * weight 2+2 = 36 B (and two per-row
  //    kernels: 8); backward (autograd) grad * weight and its weight-gradient product 4+8, cast 6,
  //    the mul's two gradients 8+16, mean's expand 4, pow's 12, the two paths summed 12, cast 6
  //    = 76 B in 10 kernels;
  //  RoPE on q and k, view_as_complex(x.float()) * freqs, view_as_real, type_as: float 2+4,
  //    complex mul 4+4, type_as 4+2 = 20 B per element in 3 kernels per tensor; backward the same;
  //  SwiGLU silu(a) * b over the f-wide output: silu 2+2, mul 2+2+2 = 10 B in 2 kernels; backward
  //    the mul's two gradients 6+6 and silu's 6 = 18 B in 3.
  struct EagerCost {
    int64_t forward, backward, forward_kernels, backward_kernels;
  };
  static constexpr EagerCost kEagerNorm{36, 76, 8, 10}, kEagerRope{20, 20, 6, 6}, kEagerSwiglu{10, 18, 2, 3};
  // Megatron-Core's unfused RoPE (ModelSpec::rope_mscale: Transformer Engine's fused RoPE computes
  // cos and sin inside its kernel and takes no scale, so apply_rotary_pos_emb runs
  // _apply_rotary_pos_emb_bshd when mscale != 1.0, rope_utils.py at 0d8e0714cd to cd4afffa64,
  // the Megatron-LM that Megatron-Bridge 25.11-26.08 pin), per element of q and k (16-bit):
  //  forward t * cos_ 2+2, _rotate_half's -x2 on half the elements 1+1 and torch.cat((-x2, x1))
  //    2+2, * sin_ 2+2, the add 2+2+2, torch.cat((t, t_pass)) with t_pass empty 2+2 = 24 B in 6
  //    kernels, and before them cos and sin of the frequencies, each scaled and cast: 6 kernels over
  //    s x d values (their bytes left out): 12 kernels a tensor, 24 for q and k;
  //  backward (autograd) the product with sin_ 2+2, the negation's 1+1, chunk's backward cat of
  //    the two halves' gradients 2+2, the product with cos_ 2+2, the two uses of t summed 2+2+2,
  //    the slice t[..., :rot_dim]'s backward, zeros of t's size 2 and the gradient copied in 2+2
  //    = 26 B in 7 kernels a tensor, 14 (the empty t_pass's own slice backward is left out).
  static constexpr EagerCost kMegatronRope{24, 26, 24, 14};
  // A clamped GLU under Megatron-Core's fused activation (ModelSpec::glu_clamp;
  // weighted_bias_quick_geglu_impl, fusions/fused_bias_geglu.py at 0d8e0714cd to cd4afffa64:
  // the gate half clamped from above, the linear half both ways, then torch.cat of the two,
  // eagerly, before the jit_fuser'd activation), per element of the activation's f-wide output:
  //  forward the two clamps 2+2 each and the cat 4+4 = 16 B in 3 kernels;
  //  backward each clamp's gradient reads the incoming one and its saved input and writes 2+2+2,
  //    and chunk's backward concatenates the halves' gradients 4+4 = 20 B in 3 (the cat's
  //    backward is two views).
  static constexpr EagerCost kGluClamp{16, 20, 3, 3};
  // Megatron-Core's _apply_bias (core/specs.h ExpertBias) per element of fc2's 16-bit output, its
  // kernels per local expert (ExpertBiasOnceKernels adds those run once), by autograd's ops:
  //  per-expert (16-bit probabilities p, 16-bit bias b): forward b * p writes 2, t + (b * p) reads
  //    2+2 and writes 2, torch.cat reads 2 and writes 2, .to() of a tensor already 16-bit copies
  //    nothing = 12 B, 2 kernels per expert and the cat; backward the cat's and the add's
  //    gradients are views and pass-throughs, b's gradient (grad * p, summed over the rows) 2+2+2,
  //    p's (grad * b, summed over the hidden) 2+2+2, and torch.split's backward concatenates the
  //    experts' output gradients 2+2 = 16 B, 4 kernels per expert and two cats (t's and p's);
  //  per-expert-fp32 (fp32 p): b * p is fp32, 4; the add 2+4 read, 4 written; the cat 4+4; the cast
  //    back 4+2 = 28 B, 2 per expert, the cat and the cast; backward the cast's gradient 2+4, the
  //    add's gradient to the 16-bit t cast per expert 4+2, b's and p's gradients 4+4+4 each, the
  //    split's cat 2+2 = 40 B, 5 per expert, the cast and two cats.
  static constexpr EagerCost kExpertBias16{12, 16, 2, 4}, kExpertBias32{28, 40, 2, 5};
  const EagerCost* ExpertBiasCost() const {
    return p_.expert_bias == ExpertBias::kPerExpert       ? &kExpertBias16
           : p_.expert_bias == ExpertBias::kPerExpertFp32 ? &kExpertBias32
                                                          : nullptr;
  }
  // The kernels _apply_bias runs once whatever the experts: forward the cat (and the cast back
  // with fp32 probabilities), backward the split's two cats (and the cast's gradient).
  int64_t ExpertBiasOnceKernels(bool backward) const {
    const int64_t fp32 = p_.expert_bias == ExpertBias::kPerExpertFp32 ? 1 : 0;
    return backward ? 2 + fp32 : 1 + fp32;
  }
  // The cross entropy per logit (HeadCompute; core/specs.h CrossEntropy), bf16 logits in:
  //  upcast, .float() (read 2, write 4), log_softmax (read 4 twice, write 4) and the loss: 18 B in
  //    3 kernels; backward 22 B in 3 (the loss's dense gradient 4, log_softmax's backward 12, the
  //    cast back 6). With tp > 1, loss_parallel's DTensor decomposition (torch/distributed/tensor/
  //    parallel/loss.py, torch 2.5-2.6): forward .float() 2+4, amax 4, x - max 4+4, exp 4+4, sum 4,
  //    shifted - logsumexp 4+4 = 38 B in 6 kernels; backward zeros_like 4, exp 4+4, add 8+4, mul by
  //    the per-row gradient 4+4, the cast back 4+2 = 38 B in 5;
  //  fused, Megatron-Core's eager vocab_parallel_cross_entropy (tensor_parallel/cross_entropy.py at
  //    d98e8a64 and f2e5db402c): .float() 2+4, max 4, in-place subtract 4+4, exp 4+4, sum 4,
  //    in-place divide 4+4 = 38 B in 6 kernels; backward the in-place scale by the per-token
  //    gradient 4+4 (the update at the targets touches one logit per token) and autograd's cast of
  //    the fp32 gradient to the logits' bf16 4+2 = 14 B in 2;
  //  native, the same steps in three jit_fuser functions (fusions/fused_cross_entropy.py at
  //    d98e8a64), each writing its fp32 result once: cast and max 2+4, subtract, exp and sum 4+4,
  //    divide 4+4 = 22 B in 3 kernels; backward one function, the scaled gradient cast to bf16
  //    4+2 = 6 B in 1;
  //  te, Transformer Engine's Triton kernels (triton/cross_entropy.py at d0067d0d):
  //    online_softmax_kernel reads the logits 2, cross_entropy_kernel reads them again 2 and writes
  //    the fp32 gradient 4 = 8 B in 2 kernels; backward element_mul_kernel scales it in place 4+4
  //    (Megatron passes per-token losses, so the incoming gradient is not the scalar 1 TE skips)
  //    and autograd casts it to bf16 4+2 = 14 B in 2;
  //  te-inplace, the same kernels before TE #3193 (v2.17.1 and earlier, triton/cross_entropy.py at
  //    70f53666 and 4329ff84): cross_entropy_kernel stores the gradient over the bf16 logits,
  //    2 + (2 + 2) = 6 B in 2 kernels; backward element_mul_kernel scales it in place 2+2 = 4 B in
  //    1, already in the logits' dtype (no cast).
  //  compiled, the upcast loss under torch.compile: one looped reduction reading the bf16 logits
  //    twice (the row's max, then its sum of exponentials) 2+2 = 4 B in 1 kernel; backward one
  //    pointwise kernel reading them and writing the bf16 gradient 2+2 = 4 B in 1.
  //  plain, PyTorch's F.cross_entropy on the bf16 logits (no upcast): log_softmax reads them twice
  //    and writes its bf16 output 2+2+2 = 6 B in 1 kernel (the NLL gathers one value a row);
  //    backward nll_loss's zeroed dense gradient 2 and log_softmax's backward reading it and the
  //    saved output, writing the input gradient, 2+2+2: 8 B in 2, no cast.
  static constexpr EagerCost kCompiledCrossEntropy{4, 4, 1, 1}, kPlainCrossEntropy{6, 8, 1, 2};
  static constexpr EagerCost kUpcastCrossEntropy{18, 22, 3, 3}, kLossParallelCrossEntropy{38, 38, 6, 5},
      kMegatronCrossEntropy{38, 14, 6, 2}, kNativeCrossEntropy{22, 6, 3, 1}, kTeCrossEntropy{8, 14, 2, 2},
      kTeInplaceCrossEntropy{6, 4, 2, 1};
  const EagerCost* CrossEntropyCost() const {
    switch (p_.cross_entropy) {
      case CrossEntropy::kUpcast: return t_ > 1 ? &kLossParallelCrossEntropy : &kUpcastCrossEntropy;
      case CrossEntropy::kFused: return &kMegatronCrossEntropy;
      case CrossEntropy::kNative: return &kNativeCrossEntropy;
      case CrossEntropy::kTe: return &kTeCrossEntropy;
      case CrossEntropy::kTeInplace: return &kTeInplaceCrossEntropy;
      case CrossEntropy::kFlash: return nullptr;
      case CrossEntropy::kCompiled: return &kCompiledCrossEntropy;
      case CrossEntropy::kPlain: return &kPlainCrossEntropy;
    }
    return nullptr;
  }
  // One pointwise op over `elements`: eager, its decomposition's bytes and kernels (`eager`, when
  // the op has one); fused, one kernel moving `fused_tensors` activation-sized tensors.
  void Pointwise(std::vector<Op>* ops, const char* name, MemOp what, int64_t elements, const EagerCost* eager,
                 int64_t fused_tensors) {
    if (eager_ && eager != nullptr) Eager(ops, name, elements * eager->forward, eager->forward_kernels, what);
    else Mem(ops, name, fused_tensors * elements * e_, what);
  }
  // RoPE on q and k: fused, one kernel reading and writing them once; eager (torchtitan's
  // decomposition) or Megatron-Core's unfused path (a scaled RoPE), their bytes and kernels.
  void Rope(std::vector<Op>* ops, int64_t elements) {
    if (rope_cost_ != nullptr)
      Eager(ops, "rope", elements * rope_cost_->forward, rope_cost_->forward_kernels, MemOp::kRope);
    else Mem(ops, "rope", 2 * elements * e_, MemOp::kRope);
  }
  // A norm reads and writes the activation once when fused (eager-fused-norm: torchtitan's Triton
  // RMSNorm beside the eager RoPE and SwiGLU).
  void Norm(std::vector<Op>* ops, const char* name, int64_t elements) {
    Pointwise(ops, name, MemOp::kNorm, elements, eager_norm_ ? &kEagerNorm : nullptr, 2);
  }
  // The MLP's activation over its `elements` outputs (T x f/t): GELU reads its input; SwiGLU its two.
  void Activation(std::vector<Op>* ops, const char* name, int64_t elements) {
    const bool glu = m_.mlp == MlpKind::kSwiglu;
    Pointwise(ops, name, MemOp::kActivation, elements, glu ? &kEagerSwiglu : nullptr, glu ? 3 : 2);
  }
  // The backward of an eager forward op (Norm, RoPE, SwiGLU, the upcast cross entropy): its bytes
  // and kernels from the table above; false for any other op.
  bool EagerBackward(Op* op) const {
    if (op->mem_op == MemOp::kCpRing) {
      const MemCost cost = TorchCpCost(/*backward=*/true);
      op->bytes = cost.bytes;
      op->batch = cost.kernels;
      return true;
    }
    const EagerCost* c = nullptr;
    if (op->mem_op == MemOp::kExpertBias) {
      c = ExpertBiasCost();
      op->bytes = op->bytes / c->forward * c->backward;
      op->batch = c->backward_kernels * (m_.moe->experts / p_.ep) + ExpertBiasOnceKernels(/*backward=*/true);
      return true;
    }
    if (op->mem_op == MemOp::kCrossEntropy) c = CrossEntropyCost();
    else if (op->mem_op == MemOp::kGluClamp) c = &kGluClamp;
    else if (op->mem_op == MemOp::kRope) c = rope_cost_;
    else if (!eager_) return false;
    else if (op->mem_op == MemOp::kNorm) c = eager_norm_ ? &kEagerNorm : nullptr;
    else if (m_.mlp == MlpKind::kSwiglu && op->mem_op == MemOp::kActivation) c = &kEagerSwiglu;
    if (c == nullptr) return false;
    op->bytes = op->bytes / c->forward * c->backward;
    op->batch = c->backward_kernels;
    return true;
  }
  void Coll(std::vector<Op>* ops, const char* name, CollectiveKind kind, CommGroup g, int64_t bytes,
            bool overlappable = false) {
    Op& op = ops->emplace_back(kBlankOp);
    op.name = name;
    op.kind = OpKind::kCollective;
    op.collective = kind;
    op.group = g;
    op.bytes = bytes;
    op.overlappable = overlappable;
  }
  // The TP boundary before a column-parallel GEMM (all-gather of the sequence-sharded input under
  // SP; nothing without SP) and after a row-parallel GEMM (all-reduce, or reduce-scatter under SP).
  // Korthikanti 2022 §4.2.2: the same bytes either way.
  // The sequence-parallel all-gather of a column-parallel linear layer's input. Transformer
  // Engine quantizes the local input first and gathers the quantized data when the GEMM is FP8 or
  // NVFP4 (module/linear.py and layernorm_linear.py at v2.12: gather_along_first_dim(inputmat,
  // tp_group, quantizer=...), the userbuffers path likewise): 1 B per element (block scaling's
  // scale byte per 32 with it), 9/16 B in NVFP4, instead of 2. `sixteen_bit`: the GEMM behind it
  // is not quantized (the output layer).
  // DTensor's TP (PlanSpec::dtensor_tp) gathers in float8 the same way: torchao's
  // PrepareFloat8ModuleInput casts the attention's and the MLP's input before its all-gather
  // ("This is to ensure the float8 cast happens before the all-gather"), and Float8ColwiseParallel
  // its own input (torchao/float8/float8_tensor_parallel.py at eab345c and 6243040); the output
  // layer is a plain ColwiseParallel (torchtitan apply_tp): 16-bit.
  // `userbuffers`: a transformer layer's linear layer's (Op::userbuffers).
  void TpGather(std::vector<Op>* ops, const char* name, bool sixteen_bit = false, bool userbuffers = false) {
    if (!sp_) return;
    const int64_t elems = tokens_ * m_.hidden;
    const bool quantized = (p_.transformer_engine || float8_tp_) && !sixteen_bit && Quantized(gemm_dtype_);
    Coll(ops, name, CollectiveKind::kAllGather, CommGroup::kTp, quantized ? LinearInputBytes(p_, elems) : elems * e_,
         async_tp_);
    ops->back().userbuffers = userbuffers;
    if (async_tp_) [[unlikely]]
      AsyncTpKernels(ops, ops->back());
    else if (dtensor_) [[unlikely]] SequenceDimCopy(ops, ops->back());
  }
  // `after_gemm`: the reduced tensor is one GEMM's output alone (a row-parallel linear layer's),
  // not the embedding's lookup, so AsyncTP fuses the reduce-scatter with that GEMM.
  void TpReduce(std::vector<Op>* ops, const char* name, bool after_gemm = true, bool userbuffers = false) {
    if (t_ == 1) return;
    Coll(ops, name, sp_ ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, CommGroup::kTp,
         tokens_ * m_.hidden * e_, async_tp_ && after_gemm);
    ops->back().userbuffers = userbuffers;
    if (async_tp_ && after_gemm) [[unlikely]]
      AsyncTpKernels(ops, ops->back());
    else if (dtensor_) [[unlikely]] SequenceDimCopy(ops, ops->back());
  }
  // DTensor's sequence-parallel collectives (PlanSpec::dtensor_tp) run on the sequence, dim 1 of
  // [batch, seq, hidden]: PyTorch's functional collectives gather along dim 0 and then
  // torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim), and before a reduce-scatter
  // torch.cat(torch.chunk(self, group_size, dim=scatter_dim)) (torch/distributed/
  // _functional_collectives.py all_gather_tensor, reduce_scatter_tensor: DTensor's Shard(1)
  // redistributes), a copy of the collective's whole tensor S: S read and S written, one kernel
  // (torchtitan PR 437, "an extra aten.cat after each collective"; its measurement: "for 8k seq
  // len, batch size 1 on H100, these two cats take about 0.18 ms", the two 268 MB copies of a
  // 70B layer, 8192 x 8192 x 2 B, at 3.0 TB/s; torchtitan's apply_tp keeps the Shard(1) layout at
  // 9dec370 and 820504e, "we can accelerate Sequence Parallel by folding ... the batch dimension
  // and the sequence dimension"). The copy is compute-stream work of the TP group's, charged as
  // exposed TP time as AsyncTpKernels' are; AsyncTP's fused collectives take none (the fused op
  // lays the shards out itself). The reduce-scatter's copy is charged after it: the order within
  // the pass changes no time. (`c` by value, as AsyncTpKernels.)
  [[gnu::noinline, gnu::cold]] void SequenceDimCopy(std::vector<Op>* ops, const Op c) {
    if (c.collective != CollectiveKind::kAllGather && c.collective != CollectiveKind::kReduceScatter) return;
    if (!Mem(ops, c.name, 2 * c.bytes)) return;
    ops->back().group = CommGroup::kTp;
    ops->back().collective = c.collective;
    ops->back().pass = c.pass;
  }
  // The kernels of an AsyncTP-fused collective `c` beyond its GEMMs (PyTorch
  // torch/distributed/_symmetric_memory/__init__.py at 006b161f): the fused all-gather copies the
  // local shard into the symmetric buffer before the first GEMM (_pipelined_multi_all_gather_and_
  // consume: "giving up the chance to overlap mv ... with the first shard_consumer") and into the
  // gathered output the backward keeps (return_A), S/t read and written twice; the fused
  // reduce-scatter's GEMM chunks land as t partials that a kernel sums into the local shard
  // (_fused_matmul_reduce_scatter_impl: reduce_fn over the stacked partials), S read and S/t
  // written. S is the collective's whole size (nccl-tests' S). Charged to TP's exposed time, as a
  // list collective's copies are; the transfers themselves are copies on the copy engines under
  // the GEMMs (the collective, hidden).
  // (`c` by value: it is often `ops`' last element, which the push may move. Out of line: plans
  // without AsyncTP build their graphs as before.)
  [[gnu::noinline, gnu::cold]] void AsyncTpKernels(std::vector<Op>* ops, const Op c) {
    const int64_t bytes = c.collective == CollectiveKind::kAllGather ? 4 * c.bytes / t_ : c.bytes + c.bytes / t_;
    if (!Mem(ops, c.name, bytes)) return;
    ops->back().group = CommGroup::kTp;
    ops->back().collective = c.collective;
    ops->back().pass = c.pass;
  }

  // ---- attention block
  // A rank's attention as its kernel sees it: query heads, K/V heads (MLA's up-projection gives
  // every query head its own), the K/V heads after repeat_kv (PlanSpec::repeat_kv), head dims.
  struct AttnDims {
    int64_t a, kv_heads, kv_seen, dqk, dv;
  };
  AttnDims Dims() const {
    AttnDims d{};
    d.a = m_.heads / t_;
    if (m_.mla) {
      d.dqk = m_.mla->qk_nope_head_dim + m_.mla->qk_rope_head_dim;
      d.dv = m_.mla->v_head_dim;
      d.kv_heads = d.a;
    } else {
      d.dqk = d.dv = m_.head_dim;
      d.kv_heads = std::max<int64_t>(m_.kv_heads / t_, 1);
    }
    d.kv_seen = p_.repeat_kv && !m_.mla && d.kv_heads < d.a ? d.a : d.kv_heads;
    return d;
  }
  // PyTorch's context_parallel around its SDPA kernels (PlanSpec::torch_cp), per layer, on the
  // slowest rank, from torch/distributed/tensor/experimental/_attention.py (read at 0123248a; the
  // same steps in the 2024 copy without load balancing). Q has q elements, K and V kv together,
  // the output o, 16-bit activations e B, c = cp. Forward (_templated_ring_attention): K and V
  // made contiguous (torchtitan passes transposed views) and, before each of the c - 1
  // exchanges, torch.cat'ed into one buffer: c copies of kv, 2e B an element; _SDPAMerger takes
  // each block's output to fp32 (e + 4 B), and from the second block on merges it with three
  // full-size fp32 kernels, out - out_b 12 B, sigmoid(lse_b - lse) * that 8 B, out - that 12 B
  // (the per-row lse work is 1/d of it, left out); results() casts back (4 + e). The slowest rank
  // is the last, whose blocks after the first all cover its whole local query: load balancing
  // halves the others' (partial updates). Backward (_templated_ring_attention_backward): fp32
  // zeros for dQ, dK, dV (4 B); K and V contiguous and c - 1 cats again; the first block's
  // 16-bit gradients added into the fp32 ones (4 + e + 4 B); on the last rank each later block
  // adds dK, dV into their first half (_partial_update) and concatenates the halves (8 B), dQ
  // whole; every block's fp32 dK, dV concatenated for the ring send (8 B, c times); the casts back
  // (4 + e). Kernels: forward 2 + (c - 1) copies, 2 casts, 10 per merge, 2 at the end; backward 3
  // zero fills, 2 + (c - 1) copies, 3 first adds, 5 per later block, c cats, 2 casts.
  struct MemCost {
    int64_t bytes, kernels;
  };
  MemCost TorchCpCost(bool backward) const {
    const AttnDims d = Dims();
    const int64_t c = p_.cp, e = e_;
    const int64_t q = tokens_ * d.a * d.dqk, kv = tokens_ * d.kv_seen * (d.dqk + d.dv), o = tokens_ * d.a * d.dv;
    if (!backward) return {2 * e * c * kv + o * (2 * (e + 4) + (c - 1) * (e + 36)), 6 + 11 * (c - 1)};
    return {4 * (q + kv) + 2 * e * c * kv + (8 + e) * (q + kv) + (c - 1) * ((8 + e) * kv / 2 + 8 * kv + (8 + e) * q) +
                8 * c * kv + (4 + e) * (q + kv),
            10 + 6 * (c - 1) + c};
  }
  void Attention(std::vector<Op>* ops, bool moe) {
    const int64_t h = m_.hidden;
    const AttnDims dims = Dims();
    const int64_t a = dims.a, dqk = dims.dqk, dv = dims.dv, kv_heads = dims.kv_heads;
    const int64_t norm_div = sp_ ? t_ : 1;
    Norm(ops, "attn_norm", tokens_ * h / norm_div);
    TpGather(ops, "attn_gather", /*sixteen_bit=*/false, /*userbuffers=*/!m_.mla);
    if (m_.mla) {
      const MlaSpec& x = *m_.mla;
      // Down-projections are replicated on every TP rank (computed redundantly).
      if (x.q_lora_rank > 0) {
        Gemm(ops, "q_down", tokens_, x.q_lora_rank, h);
        Gemm(ops, "q_up", tokens_, a * dqk, x.q_lora_rank);
      } else {
        Gemm(ops, "q_proj", tokens_, a * dqk, h);
      }
      Gemm(ops, "kv_down", tokens_, x.kv_lora_rank + x.qk_rope_head_dim, h);
      Gemm(ops, "kv_up", tokens_, a * (x.qk_nope_head_dim + x.v_head_dim), x.kv_lora_rank);
    } else {
      Gemm(ops, "qkv_proj", tokens_, (a + 2 * kv_heads) * m_.head_dim, h);
    }
    if (m_.position == PositionKind::kRope) Rope(ops, tokens_ * (a + kv_heads) * dqk);
    // repeat_kv (PlanSpec::repeat_kv): K and V read at kv_heads and written at a heads, one
    // expand-and-reshape copy each; the backward reads the a-head gradients and writes their sums
    // (the same bytes). From here on the attention and its CP exchanges see a heads of K and V.
    const int64_t kv_seen = dims.kv_seen;
    if (kv_seen != kv_heads && Mem(ops, "repeat_kv", 2 * tokens_ * (kv_heads + a) * dqk * e_, MemOp::kRepeatKv))
      ops->back().batch = 2;
    // Context parallel: each rank's queries meet every rank's keys. Ring: cp-1 KV exchanges
    // overlapped with attention blocks; Ulysses: all-to-alls of q, k, v and the output; all-gather:
    // K and V gathered whole before the attention, on the critical path (Llama 3 §3.3.2: "the
    // all-gather communication latency is exposed"; Transformer Engine
    // AttnFuncWithCPAndKVAllGather, context_parallel.py at d0067d0d: "KV all-gather between CP
    // ranks is exposed"). Its backward gathers K and V again and reduce-scatters dK, dV (Backward).
    // PyTorch's context_parallel (PlanSpec::torch_cp) issues its all-gather before the local
    // block's SDPA and waits for it after (_AllGatherRotater: exchange_buffers at the first step,
    // next_buffer at the second): it can hide under that block alone, 1/cp of the layer's
    // attention, where an overlappable op here hides under the whole pass; costed exposed, the
    // nearer of the two where the gather crosses nodes (Llama 3.1 405B at TP 8 x CP 8, 32k tokens a
    // rank: 2.1 GB gathered in about 40 ms against a 15 ms local block).
    const int64_t seq_kv = s_ * p_.cp;
    if (p_.cp > 1) {
      const int64_t kv_bytes = 2 * tokens_ * kv_seen * dqk * e_;
      if (p_.cp_kind == CpKind::kRing) {
        for (int64_t i = 1; i < p_.cp; ++i)
          Coll(ops, "cp_kv_exchange", CollectiveKind::kSendRecv, CommGroup::kCp, kv_bytes, true);
      } else if (p_.cp_kind == CpKind::kAllGather) {
        Coll(ops, "cp_kv_all_gather", CollectiveKind::kAllGather, CommGroup::kCp, kv_bytes * p_.cp);
      } else {
        Coll(ops, "ulysses_qkv", CollectiveKind::kAllToAll, CommGroup::kCp, tokens_ * (a + 2 * kv_seen) * dqk * e_);
      }
    }
    const bool flash = m_.attention != AttentionImpl::kNaive;
    if (flash && p_.torch_cp && p_.cp > 1 && p_.cp_kind != CpKind::kUlysses) [[unlikely]] {
      const MemCost c = TorchCpCost(/*backward=*/false);
      Eager(ops, "cp_ring_copies_and_merges", c.bytes, c.kernels, MemOp::kCpRing);
    }
    if (flash && p_.fp8_attention) {
      // Transformer Engine's FP8 attention under current scaling (PlanSpec::fp8_attention): Q, K
      // and V quantized together (combine_and_quantize with one Float8CurrentScalingQuantizer): an
      // amax pass over the 16-bit values and a cast, read 2 + 2, write 1: 5 B an element in 2
      // kernels; the output stays 16-bit. The backward quantizes the output gradient the same way
      // (FlashAttention below).
      Mem(ops, "fp8_quantize_attention_qkv", tokens_ * ((a + kv_seen) * dqk + kv_seen * dv) * 5, MemOp::kFp8Quantize);
      ops->back().batch = 2;
    }
    if (flash) {
      Op op = kBlankOp;
      op.name = "flash_attention";
      op.attention = p_.fp8_attention ? AttentionImpl::kCudnnFp8 : m_.attention;
      op.kind = OpKind::kAttention;
      op.attn_batch = p_.micro_batch;
      op.heads = a;
      op.seq_q = s_;
      op.seq_kv = seq_kv;
      op.head_dim_qk = dqk;
      op.head_dim_v = dv;
      op.causal = true;
      op.flash = true;
      op.dtype = Quantized(gemm_dtype_) ? Dtype::kBf16 : gemm_dtype_;
      // Sliding-window layers: the fused kernels skip the key blocks outside the window
      // (FlashAttention's window_size, cuDNN's sliding window), so a windowed layer's attention
      // is its own op; with global layers in the same list, each op carries its layers' share.
      const int64_t layers = moe ? m_.MoeLayerCount() : m_.layers - m_.MoeLayerCount();
      const int64_t windowed = m_.sliding_window < seq_kv ? m_.WindowedLayerCount(moe) : 0;
      if (windowed == 0) {
        ops->push_back(op);
      } else {
        const double share = static_cast<double>(windowed) / static_cast<double>(layers);
        if (windowed < layers) {
          op.share = 1 - share;
          ops->push_back(op);
        }
        op.name = m_.chunked_attention ? "flash_attention_chunked" : "flash_attention_window";
        op.window = m_.sliding_window;
        op.chunked = m_.chunked_attention;
        op.share = share;
        ops->push_back(op);
      }
    } else {
      // Unfused attention (Megatron 2021): batched GEMMs over b*a heads plus a fused
      // scale-mask-softmax(-dropout) kernel over the full s x s scores.
      if (Gemm(ops, "attn_scores", s_, seq_kv, dqk, p_.micro_batch * a, /*sixteen_bit=*/true))
        ops->back().attention_core = true;
      const int64_t scores = p_.micro_batch * a * s_ * seq_kv;
      if (Mem(ops, "softmax", scores * e_ * 2 + (m_.dropout ? scores * (1 + e_) : 0), MemOp::kSoftmax))
        ops->back().attention_core = true;
      if (Gemm(ops, "attn_values", s_, dv, seq_kv, p_.micro_batch * a, /*sixteen_bit=*/true))
        ops->back().attention_core = true;
    }
    if (p_.cp > 1 && p_.cp_kind == CpKind::kUlysses)
      Coll(ops, "ulysses_out", CollectiveKind::kAllToAll, CommGroup::kCp, tokens_ * a * dv * e_);
    Gemm(ops, "attn_out_proj", tokens_, h, a * dv);
    TpReduce(ops, "attn_reduce", /*after_gemm=*/true, /*userbuffers=*/true);
    Mem(ops, "attn_residual", (m_.dropout ? 4 : 3) * tokens_ * h * e_ / norm_div);
  }

  // ---- a hybrid model's layer (core/specs.h ModelSpec::hybrid_pattern): each kind's block, its
  // ops weighted by the kind's share of the layers (Op::share: the GEMMs' and attention's FLOPs
  // and every op's time scale by it), so the model's layers together run each block as often as
  // its pattern has it. The MTP modules' blocks (ModelSpec::mtp_pattern) join the mix as the
  // costed layers they add to the last stage (ModelSpec::HybridCostedCounts), so the model's
  // layers and its MTP layers together run each block as often as the model does.
  void HybridMix(std::vector<Op>* fwd) {
    const HybridCounts c = m_.HybridCostedCounts();
    const double n = static_cast<double>(std::max<int64_t>(m_.HybridCostedLayers(), 1));
    auto part = [&](int64_t count, auto&& emit) {
      if (count == 0) return;
      const size_t first = fwd->size();
      emit();
      for (size_t i = first; i < fwd->size(); ++i) (*fwd)[i].share *= static_cast<double>(count) / n;
    };
    if (m_.mamba) part(c.mamba, [&] { MambaMixer(fwd); });
    part(c.attention, [&] { Attention(fwd, false); });
    part(c.mlp, [&] { DenseMlp(fwd, m_.ffn_hidden, "mlp"); });
    if (m_.moe) part(c.moe, [&] { MoeMlp(fwd); });
  }

  // A Mamba-2 layer (Megatron-Core mamba_mixer.py, memory-efficient path): its pre-norm (fused
  // into in_proj), in_proj (column-parallel: z, x, B, C and dt split by head and group), the
  // depthwise causal conv1d with SiLU over x, B and C, the SSD scan, the z-gated RMSNorm over x's
  // width, out_proj (row-parallel), the residual. The SSD (Dao & Gu 2024 §6, chunks of Q tokens;
  // core/flops.cc SsdForwardFlopsPerToken) as its four matmuls, each costed as one 16-bit GEMM of
  // all its rows (C B^T per group, the masked scores times X per head, the chunk states B^T X, the
  // output from the carried states C S), and the state passing between chunks: the fp32 states
  // (heads x P x N per chunk) written by the chunk-state kernel, read and rewritten by the state
  // passing and read by the chunk scan. The Triton kernels' own speed is not measured: the GEMM
  // rule and HBM bandwidth stand in for it (docs/compute.md).
  void MambaMixer(std::vector<Op>* ops) {
    const MambaSpec& x = *m_.mamba;
    const int64_t h = m_.hidden, norm_div = sp_ ? t_ : 1;
    const int64_t heads = x.heads / t_, groups = x.groups / t_, inner = x.Inner() / t_;
    const int64_t conv = inner + 2 * groups * x.state;
    const int64_t chunks = (s_ + x.chunk - 1) / x.chunk;
    const int64_t b = p_.micro_batch;
    Norm(ops, "mamba_norm", tokens_ * h / norm_div);
    TpGather(ops, "mamba_gather");
    Gemm(ops, "mamba_in_proj", tokens_, x.InProjWidth() / t_, h);
    Mem(ops, "mamba_conv1d", 2 * tokens_ * conv * e_, MemOp::kActivation);
    Gemm(ops, "ssd_cb", tokens_ * groups, x.chunk, x.state, 1, /*sixteen_bit=*/true);
    Gemm(ops, "ssd_scores_x", tokens_ * heads, x.head_dim, x.chunk, 1, /*sixteen_bit=*/true);
    Gemm(ops, "ssd_chunk_states", b * chunks * heads * x.state, x.head_dim, x.chunk, 1, /*sixteen_bit=*/true);
    Gemm(ops, "ssd_state_output", tokens_ * heads, x.head_dim, x.state, 1, /*sixteen_bit=*/true);
    Mem(ops, "ssd_state_passing", 4 * b * chunks * heads * x.head_dim * x.state * 4);
    Mem(ops, "mamba_gated_norm", 3 * tokens_ * inner * e_, MemOp::kNorm);
    Gemm(ops, "mamba_out_proj", tokens_, h, inner);
    TpReduce(ops, "mamba_reduce");
    Mem(ops, "mamba_residual", 3 * tokens_ * h * e_ / norm_div);
  }

  // ---- MLP blocks
  void DenseMlp(std::vector<Op>* ops, int64_t f, const char* prefix) {
    const int64_t h = m_.hidden, fl = f / t_;
    const int64_t norm_div = sp_ ? t_ : 1;
    const bool glu = m_.mlp == MlpKind::kSwiglu;
    (void)prefix;
    Norm(ops, "mlp_norm", tokens_ * h / norm_div);
    TpGather(ops, "mlp_gather", /*sixteen_bit=*/false, /*userbuffers=*/true);
    Gemm(ops, "mlp_fc1", tokens_, (glu ? 2 : 1) * fl, h);
    Activation(ops, "mlp_activation", tokens_ * fl);
    Gemm(ops, "mlp_fc2", tokens_, h, fl);
    TpReduce(ops, "mlp_reduce", /*after_gemm=*/true, /*userbuffers=*/true);
    Mem(ops, "mlp_residual", (m_.dropout ? 4 : 3) * tokens_ * h * e_ / norm_div);
  }

  void MoeMlp(std::vector<Op>* ops) {
    const MoeSpec& x = *m_.moe;
    const int64_t h = m_.hidden;
    // What the dispatch, the permutations and the experts move: latent-wide tokens in a latent
    // MoE (MoeSpec::latent_size), else hidden-wide.
    const int64_t w = x.Width(h);
    const int64_t norm_div = sp_ ? t_ : 1;
    const bool glu = m_.mlp == MlpKind::kSwiglu;
    Norm(ops, "moe_norm", tokens_ * h / norm_div);
    // The router sees this rank's (sequence-sharded under SP) tokens.
    const int64_t local = tokens_ / norm_div;
    Gemm(ops, "router", local, x.experts, h, 1, /*sixteen_bit=*/true);
    Mem(ops, "router_topk", local * x.experts * 4 * 2, MemOp::kRouter);
    // Latent MoE: fc1_latent_proj on this rank's tokens, whole weights (parallel_mode
    // "duplicated"), before the dispatcher's preprocessing (moe_layer.py preprocess).
    if (x.latent_size > 0) Gemm(ops, "moe_latent_down", local, x.latent_size, h);
    // Balanced routing: each GPU's experts receive s*b*k*etp/t tokens (see memory.cc).
    double tok = static_cast<double>(tokens_ * x.top_k * p_.etp) / static_cast<double>(t_);
    if (x.capacity_factor > 0) tok *= x.capacity_factor;
    // The busiest EP rank's share sets the layer's pace (MoeBusiestRank): its experts' rows, and
    // what its all-to-alls carry (it receives that many in the dispatch and sends them back).
    tok *= busiest_rank_;
    const int64_t expert_tokens = static_cast<int64_t>(tok);
    const int64_t local_experts = x.experts / p_.ep;
    // EP all-to-alls are exposed, unless the schedule overlaps them: DualPipe runs one
    // direction's all-to-all under the other direction's compute (DeepSeek-V3 report §3.2.1), and
    // Megatron-Core's batch-level EP overlap (plan.ep_overlap) merges the forward and backward of
    // adjacent microbatches so that each one's all-to-alls run under the other's compute.
    const bool hide_a2a = p_.schedule == Schedule::kDualPipe || p_.ep_overlap;
    // Megatron-Core's all-to-all dispatcher (megatron/core/transformer/moe/token_dispatcher.py,
    // MoEAlltoAllTokenDispatcher): permutation 1 gathers each token's k copies into expert order
    // before the all-to-all, permutation 2 sorts the received tokens by local expert (more than one
    // local expert), and their inverses run before and after the combine all-to-all; each reads
    // and writes the k copies' activations once (moe_utils.permute/unpermute, sort_chunks_by_idxs).
    // Its flex dispatcher (MoEFlexTokenDispatcher, d98e8a64) hands the tokens unpermuted to
    // DeepEP's or HybridEP's kernels, which send each token once to every rank holding one of its
    // experts (fused_a2a.py FusedDispatch: get_dispatch_layout's is_token_in_rank; the combine
    // returns one partial sum per rank): no permutation before the dispatch or after the combine,
    // D rows per token on the wire instead of k (RanksPerToken), and the receiver sorts the D-fold
    // received tokens into the k-fold expert order (_DeepepManager.get_permuted_hidden_states_by_
    // experts, HybridEP's permute blocks) and back.
    const bool flex = p_.moe_dispatcher == MoeDispatcher::kFlex && p_.ep > 1;
    const double rows = flex ? RanksPerToken(x.experts, x.top_k, p_.ep, p_.moe_routing) : static_cast<double>(x.top_k);
    const int64_t sent = static_cast<int64_t>(static_cast<double>(local) * rows * busiest_rank_);
    const int64_t received =
        flex ? static_cast<int64_t>(static_cast<double>(expert_tokens) * rows / static_cast<double>(x.top_k))
             : expert_tokens;
    if (!flex) Mem(ops, "moe_permute", 2 * local * x.top_k * w * e_, MemOp::kPermute);
    // The dispatcher's device-to-host synchronisation (token_dispatcher.py at d98e8a64,
    // _maybe_dtoh_and_synchronize): the all-to-all dispatcher's after the first permutation (before
    // the EP all-to-all, or at EP 1 before the second permutation or the dispatch's end); the flex
    // dispatcher's after its dispatch, whose received counts the host waits for (fused_a2a.py).
    // What follows, to the block's end, is queued only after it.
    size_t synced = ops->size();
    if (p_.ep > 1) Coll(ops, "ep_dispatch", CollectiveKind::kAllToAll, CommGroup::kEp, sent * w * e_, hide_a2a);
    if (flex) synced = ops->size();
    if (local_experts > 1) Mem(ops, "moe_permute_local", (received + expert_tokens) * w * e_, MemOp::kPermute);
    const int64_t fl = x.expert_ffn_hidden / p_.etp;
    const int64_t per_expert = std::max<int64_t>(expert_tokens / std::max<int64_t>(local_experts, 1), 1);
    // Transformer Engine's quantized GroupedLinear takes each local expert's rows in multiples of
    // the recipe's alignment (get_align_size_for_quantization: 16, MXFP8's 32, NVFP4's 128; the
    // block recipe is costed at MXFP8's), so Megatron-Core's TEGroupedMLP pads them before fc1 with
    // TE's Fp8Padding (the rows and their probabilities, two fused_multi_row_padding kernels: each
    // reads the rows and writes the padded ones) and strips the padding after fc2 (and its bias)
    // with Fp8Unpadding (experts.py since Megatron-LM 56b49a4cab; TE module/fp8_padding.py,
    // fp8_unpadding.py, common/util/padding.cu at d0067d0d); the backward runs the inverses over the
    // gradients, the same bytes. Both return their input untouched when every count is aligned: a
    // router or dispatcher that pads (plan.moe_router_padding), or capacity-factor dropping whose
    // capacity is a multiple of the alignment. Under balanced dropless routing the counts vary from
    // expert to expert, so some are not (the padded rows, under an alignment per expert, are not
    // counted).
    const int64_t align = gemm_dtype_ == Dtype::kNvfp4 ? 128 : p_.fp8_scaling == Fp8Scaling::kBlock ? 32 : 16;
    const bool pad_copies = Quantized(gemm_dtype_) && p_.transformer_engine && p_.moe_grouped_gemm &&
                            !p_.moe_router_padding && (x.capacity_factor <= 0 || per_expert % align != 0);
    if (pad_copies && Mem(ops, "moe_quant_padding", 2 * expert_tokens * (w * e_ + 4), MemOp::kPermute))
      ops->back().batch = 2;
    // Each local expert's GEMM is a kernel of its own under Transformer Engine (its GroupedLinear
    // issues one cuBLAS GEMM per expert over four streams: cublaslt_gemm.cu, multi_stream.cpp at
    // d0067d0d) and without a grouped GEMM (SequentialMLP, one after another); a grouped kernel
    // (the grouped_gemm package's, torch._grouped_mm) runs them all as one.
    const bool expert_kernels = p_.transformer_engine || !p_.moe_grouped_gemm;
    if (Gemm(ops, "expert_fc1", per_expert, (glu ? 2 : 1) * fl, w, local_experts))
      ops->back().instance_kernels = expert_kernels;
    if (glu_clamp_)
      Eager(ops, "expert_activation_clamp", expert_tokens * fl * kGluClamp.forward, kGluClamp.forward_kernels,
            MemOp::kGluClamp);
    Activation(ops, "expert_activation", expert_tokens * fl);
    if (Gemm(ops, "expert_fc2", per_expert, w, fl, local_experts)) ops->back().instance_kernels = expert_kernels;
    if (const EagerCost* c = ExpertBiasCost(); c != nullptr && m_.bias == BiasKind::kAll)
      Eager(ops, "expert_fc2_bias", expert_tokens * w * c->forward,
            c->forward_kernels * local_experts + ExpertBiasOnceKernels(/*backward=*/false), MemOp::kExpertBias);
    if (pad_copies) Mem(ops, "moe_quant_unpadding", 2 * expert_tokens * w * e_, MemOp::kPermute);
    if (local_experts > 1) Mem(ops, "moe_permute_local_restore", (received + expert_tokens) * w * e_, MemOp::kPermute);
    if (p_.ep > 1) Coll(ops, "ep_combine", CollectiveKind::kAllToAll, CommGroup::kEp, sent * w * e_, hide_a2a);
    if (!flex) Mem(ops, "moe_permute_restore", 2 * local * x.top_k * w * e_, MemOp::kPermute);
    // fc2_latent_proj back to the hidden size after the combine (moe_layer.py postprocess).
    if (x.latent_size > 0) Gemm(ops, "moe_latent_up", local, h, x.latent_size);
    if (x.shared_experts > 0) {
      const int64_t fs = x.shared_experts * x.shared_expert_ffn_hidden / t_;
      TpGather(ops, "shared_gather");
      Gemm(ops, "shared_fc1", tokens_, (glu ? 2 : 1) * fs, h);
      Activation(ops, "shared_activation", tokens_ * fs);
      Gemm(ops, "shared_fc2", tokens_, h, fs);
      TpReduce(ops, "shared_reduce");
    }
    Mem(ops, "moe_residual", (m_.dropout ? 4 : 3) * tokens_ * h * e_ / norm_div);
    for (size_t i = synced; i < ops->size(); ++i) (*ops)[i].after_moe_sync = true;
  }

  // AsyncTP's backward of the forward TP collective `f`, whose blocking conjugate is `out`'s last
  // op: fused when the forward was and, for the reduce-scatter of an input gradient, when one GEMM
  // wrote that gradient. In PyTorch's models q, k and v are three projections of the attention's
  // gathered input (MLA's down-projections two), a gated MLP's w1 and w3 two (a shared expert's
  // alike), so autograd sums their input gradients first; the output layer, a non-gated fc1,
  // Mamba's in_proj and MTP's eh_proj are one GEMM each.
  [[gnu::noinline, gnu::cold]] void AsyncTpConjugate(const Op& f, std::vector<Op>* out) {
    Op& op = out->back();
    op.overlappable = f.overlappable && (op.collective == CollectiveKind::kAllGather || !SummedInputGradient(f));
    if (op.overlappable) AsyncTpKernels(out, op);
  }
  // Whether forward gather `f`'s output feeds several GEMMs, whose input gradients autograd sums
  // before the conjugate reduce-scatter (above).
  bool SummedInputGradient(const Op& f) const {
    const std::string_view n(f.name);
    const bool glu = m_.mlp == MlpKind::kSwiglu;
    return n == "attn_gather" || (glu && (n == "mlp_gather" || n == "shared_gather"));
  }

  // ---- backward and recompute, derived from the forward ops
  void Backward(const std::vector<Op>& fwd, std::vector<Op>* out) {
    // (Each op is copied straight into `out` and changed there: one copy per op derived.)
    bool dkv_tail_sent = false;  // TorchCpBackward's c-th dK/dV send, once per layer's ring
    for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
      const Op& f = *it;
      switch (f.kind) {
        case OpKind::kGemm: {
          // dX = dY W^T (m x k from m x n) and dW = X^T dY (k x n over m): each 2mnk. A quantized
          // GEMM's output gradient dY is quantized first (both layouts: dgrad and wgrad read it).
          if (Quantized(f.dtype)) {
            const size_t before = out->size();
            Quantize(out, /*grad=*/true, f.m * f.n * f.batch, Pass::kBackwardInput, QuantizedTensors(f.name, f.batch));
            if (out->size() > before) out->back().share = f.share;  // a hybrid block's weight
          }
          out->push_back(f);
          out->back().pass = Pass::kBackwardInput;
          out->push_back(f);
          out->back().pass = Pass::kBackwardWeight;
          break;
        }
        case OpKind::kAttention:
          if (f.attention == AttentionImpl::kCudnnFp8) {
            // FP8 attention's backward reads the output gradient in FP8: amax and cast, 5 B an
            // element in 2 kernels (the forward's QKV quantize above).
            const int64_t elements = f.attn_batch * f.seq_q * f.heads * f.head_dim_v;
            if (Mem(out, "fp8_quantize_attention_dout", elements * 5, MemOp::kFp8Quantize)) {
              out->back().pass = Pass::kBackwardInput;
              out->back().batch = 2;
              out->back().share = f.share;
            }
          }
          out->push_back(f);
          out->back().pass = Pass::kBackwardInput;
          break;
        case OpKind::kMemoryBound: {
          // The forward's FP8 quantization has no backward of its own (the gradient's is above);
          // nor has an AsyncTP collective's kernels (AsyncTpKernels: its conjugate's come with it).
          if (f.mem_op == MemOp::kFp8Quantize || f.group == CommGroup::kTp) break;
          Op& op = out->emplace_back(f);
          op.pass = Pass::kBackwardInput;
          // A permutation's gradient is the inverse permutation (the same bytes); an eager op's as
          // its decomposition's autograd runs it; other ops read the saved input and the incoming
          // gradient and write two gradients.
          if (!EagerBackward(&op) && op.mem_op != MemOp::kPermute && op.mem_op != MemOp::kRepeatKv) op.bytes *= 2;
          break;
        }
        case OpKind::kCollective: {
          Op op = f;
          op.pass = Pass::kBackwardInput;
          if (op.group == CommGroup::kTp) {
            // Megatron's tensor-parallel backward (Shoeybi 2019 §3; Korthikanti 2022 §4.2.2):
            // the gradient of a column-parallel GEMM's input is all-reduced (no SP) or
            // reduce-scattered (SP) asynchronously while the weight-gradient GEMM runs
            // (LinearWithGradAccumulationAndAsyncCommunication); under SP the input is also
            // all-gathered again for that weight gradient, overlapped with the input gradient.
            // The conjugate of a row-parallel output's reduce-scatter is a blocking all-gather.
            // (AsyncTP keeps each conjugate below: PyTorch's autograd saves the gathered input.)
            const bool column_input =
                (sp_ ? op.collective == CollectiveKind::kAllGather : op.collective == CollectiveKind::kAllReduce) &&
                (p_.tp_overlap == TpOverlap::kBackward || p_.tp_overlap == TpOverlap::kFull);
            // The input gradient's reduction is 16-bit whatever the forward gathered (TpGather).
            const int64_t grad_bytes = tokens_ * m_.hidden * e_;
            if (column_input) {
              Op regather = op;  // the saved (quantized) input gathered again
              op.collective = sp_ ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
              op.bytes = grad_bytes;
              op.pass = Pass::kBackwardWeight;
              op.overlappable = true;
              out->push_back(op);
              if (sp_) {
                regather.collective = CollectiveKind::kAllGather;
                regather.overlappable = true;
                out->push_back(regather);
              }
            } else {
              // Blocking. Under SP each collective's conjugate: a reduce-scatter's is an
              // all-gather and the input all-gather's a reduce-scatter. Without SP the forward
              // all-reduce (g) is the identity backward and the column input's identity (f,
              // no forward op) all-reduces its gradient (Shoeybi 2019 Fig. 3): one all-reduce
              // of the same bytes per forward all-reduce.
              if (!sp_) op.collective = CollectiveKind::kAllReduce;
              else if (op.collective == CollectiveKind::kReduceScatter) op.collective = CollectiveKind::kAllGather;
              else op.collective = CollectiveKind::kReduceScatter;
              op.bytes = grad_bytes;
              // torchao's Float8RowwiseParallel casts the output gradient to float8 (e5m2) before
              // the all-gather that conjugates its forward reduce-scatter (NoopFwToFloat8BwDynamic
              // after the redistribute, torchao/float8/float8_tensor_parallel.py at eab345c and
              // 6243040): the attention's and the MLP's output projections (torchtitan apply_tp).
              if (float8_tp_ && op.collective == CollectiveKind::kAllGather) {
                const std::string_view n(f.name);
                if (n == "attn_reduce" || n == "mlp_reduce") op.bytes = LinearInputBytes(p_, tokens_ * m_.hidden);
              }
              // AsyncTP (PyTorch torch/_inductor/fx_passes/micro_pipeline_tp.py at 00122fb1, the
              // same rules at 0e9ed9cf): a forward reduce-scatter's conjugate gathers the output
              // gradient that the input-gradient GEMM reads as its left operand, so it fuses
              // (fuse_all_gather_matmul; the weight-gradient GEMM reads it transposed, along the
              // gathered dimension, which is never decomposed, and takes the gathered copy); a
              // gather's conjugate reduce-scatters the input gradient, fused only when one GEMM
              // wrote it (fuse_matmul_reduce_scatter: its input must be an mm's output with no
              // other user), not when autograd summed several (q, k, v; w1, w3).
              out->push_back(op);
              const size_t at = out->size() - 1;
              if (async_tp_) [[unlikely]]
                AsyncTpConjugate(*it, out);
              // DTensor's conjugate runs on the sequence dimension too (SequenceDimCopy) unless
              // AsyncTP fused it, or torch.compile (elementwise fused, as a PyTorch-native stack
              // runs compiled) wrote the summed input gradient straight into the reduce-scatter's
              // layout: Inductor fuses the sum of the GEMMs' outputs and the chunk-and-cat copy
              // into one pointwise kernel (an eager run launches both).
              const bool summed_in_layout = (*out)[at].collective == CollectiveKind::kReduceScatter &&
                                            SummedInputGradient(f) && p_.elementwise == Elementwise::kFused;
              if (dtensor_ && !(async_tp_ && (*out)[at].overlappable) && !summed_in_layout) [[unlikely]]
                SequenceDimCopy(out, (*out)[at]);
            }
            break;
          }
          if (op.group == CommGroup::kCp && p_.torch_cp && op.collective != CollectiveKind::kAllToAll) [[unlikely]] {
            TorchCpBackward(op, &dkv_tail_sent, out);
            break;
          }
          // Other groups: all-to-all stays itself; the ring's KV exchange carries dK and dV back.
          // All-gather CP's backward gathers K and V again from the saved local shards, then
          // reduce-scatters dK and dV (Transformer Engine AttnFuncWithCPAndKVAllGather.backward).
          if (op.group == CommGroup::kCp && op.collective == CollectiveKind::kAllGather) out->push_back(op);
          if (op.collective == CollectiveKind::kAllGather) op.collective = CollectiveKind::kReduceScatter;
          else if (op.collective == CollectiveKind::kReduceScatter) op.collective = CollectiveKind::kAllGather;
          if (op.group == CommGroup::kCp && op.collective == CollectiveKind::kSendRecv) op.bytes *= 2;
          out->push_back(op);
          break;
        }
        default: break;
      }
    }
  }

  // PyTorch's context_parallel backward (PlanSpec::torch_cp; TorchCpCost): K and V rotate as in
  // the forward (the all-gather again, or the c - 1 ring sends of kv_rotater), and dK, dV travel
  // the ring in fp32 with every block, c sends (dkv_rotater, always ALL_TO_ALL: permute_tensor),
  // each under the next block's kernels; the ring's c-th goes with the first exchange met.
  [[gnu::noinline, gnu::cold]] void TorchCpBackward(Op op, bool* dkv_tail_sent, std::vector<Op>* out) const {
    Op dkv = op;
    dkv.name = "cp_dkv_exchange";
    dkv.collective = CollectiveKind::kSendRecv;
    dkv.overlappable = true;
    if (op.collective == CollectiveKind::kAllGather) {
      out->push_back(op);
      dkv.bytes = op.bytes / p_.cp / e_ * 4;
      for (int64_t i = 0; i < p_.cp; ++i) out->push_back(dkv);
      return;
    }
    dkv.bytes = op.bytes / e_ * 4;
    out->push_back(op);
    out->push_back(dkv);
    if (!*dkv_tail_sent) out->push_back(dkv);
    *dkv_tail_sent = true;
  }

  void Recompute(const std::vector<Op>& fwd, std::vector<Op>* out) {
    if (p_.recompute == Recompute::kNone) return;
    if (p_.Recomputes(RecomputeModule::kTorchtitanOp)) {
      RecomputeTorchtitanOps(fwd, out);
      return;
    }
    if (p_.Recomputes(RecomputeModule::kSaveQkvProj)) {
      RecomputeSaveQkvProj(fwd, out);
      return;
    }
    const size_t end = p_.recompute == Recompute::kFull && p_.recompute_early_stop ? EarlyStopEnd(fwd) : fwd.size();
    for (size_t i = 0; i < end; ++i) {
      // An FP8 GEMM's input quantization runs again with its GEMM.
      const Op& f = fwd[i].kind == OpKind::kMemoryBound && fwd[i].mem_op == MemOp::kFp8Quantize && i + 1 < fwd.size()
                        ? fwd[i + 1]
                        : fwd[i];
      if (p_.recompute == Recompute::kSelective && !SelectivelyRecomputed(f)) continue;
      out->push_back(fwd[i]);
      out->back().pass = Pass::kRecompute;
    }
  }
  // Where PyTorch's non-reentrant checkpoint stops replaying a dense block (PlanSpec::
  // recompute_early_stop): at the MLP's output projection, whose saved inputs are the last tensors
  // the backward needs (packed before its GEMM runs), when only its TP reduction and the residual
  // (which save nothing) follow it; the whole forward otherwise.
  static size_t EarlyStopEnd(const std::vector<Op>& fwd) {
    for (size_t k = fwd.size(); k-- > 0;) {
      const std::string_view n(fwd[k].name);
      if (n == "mlp_fc2") return k;
      if (n != "mlp_reduce" && n != "mlp_residual") break;
    }
    return fwd.size();
  }
  // torchtitan's per-op policy (core/specs.h RecomputeModule::kTorchtitanOp) replays the layer's
  // forward with the saved outputs served from memory: every op again but SDPA, the SP
  // reduce-scatters and the saved matmuls (wq, wv, w1, w2; fc1 with GELU). The fused QKV GEMM
  // reruns its wk columns, fc1 its w3 half. Under FP8 the same matmuls are saved (torchao's
  // Float8Linear calls torch.mm on its float8 subclass: the policy sees aten.mm), and every
  // linear's input quantization reruns (its casts are not saved; the backward needs them).
  void RecomputeTorchtitanOps(const std::vector<Op>& fwd, std::vector<Op>* out) {
    const bool fp8 = Quantized(p_.precision);
    const bool glu = m_.mlp == MlpKind::kSwiglu;
    for (size_t i = 0; i < fwd.size(); ++i) {
      Op op = fwd[i];
      op.pass = Pass::kRecompute;
      const std::string_view n(op.name);
      if (op.kind == OpKind::kAttention) continue;
      if ((op.kind == OpKind::kCollective || op.kind == OpKind::kMemoryBound) && op.group == CommGroup::kTp &&
          op.collective == CollectiveKind::kReduceScatter)
        continue;  // the reduce-scatter, and under AsyncTP its partials' sum (AsyncTpKernels)
      if (op.kind == OpKind::kMemoryBound && op.mem_op == MemOp::kFp8Quantize) {
        if (fp8) out->push_back(op);  // with its GEMM, next
        continue;
      }
      if (op.kind == OpKind::kGemm) {
        if (n == "qkv_proj") op.n = Dims().kv_heads * m_.head_dim;     // wk
        else if (n == "mlp_fc1" && glu) op.n /= 2;                     // w3
        else if (n == "mlp_fc1" || (n == "mlp_fc2" && glu)) continue;  // saved
      }
      out->push_back(op);
    }
  }

  // MaxText's save_qkv_proj policy (core/specs.h RecomputeModule::kSaveQkvProj) replays the
  // layer's forward but what is saved or what no gradient reads: not the Q/K/V GEMM and RoPE (their
  // outputs saved), nor the MLP's output GEMM, its TP reduction and the residual after it (JAX's
  // dead-code elimination of the replay: the next layer's input is saved by the scan). An FP8
  // GEMM's input quantization reruns with its GEMM only.
  void RecomputeSaveQkvProj(const std::vector<Op>& fwd, std::vector<Op>* out) {
    auto skipped = [](const Op& op) {
      const std::string_view n(op.name);
      return n == "qkv_proj" || n == "rope" || n == "mlp_fc2" || n == "mlp_reduce" || n == "mlp_residual";
    };
    for (size_t i = 0; i < fwd.size(); ++i) {
      const bool quantize = fwd[i].kind == OpKind::kMemoryBound && fwd[i].mem_op == MemOp::kFp8Quantize;
      if (skipped(quantize && i + 1 < fwd.size() ? fwd[i + 1] : fwd[i])) continue;
      out->push_back(fwd[i]);
      out->back().pass = Pass::kRecompute;
    }
  }

  // An op of MoeMlp's MoE layer proper (moe_layer.py MoELayer.forward: router, latent projections,
  // dispatcher, experts, combine, shared experts), the ops the moe module reruns.
  static bool MoeLayerOp(std::string_view n) {
    for (std::string_view op :
         {"router", "router_topk", "moe_latent_down", "moe_permute", "ep_dispatch", "moe_permute_local", "expert_fc1",
          "expert_activation_clamp", "expert_activation", "expert_fc2", "expert_fc2_bias", "moe_permute_local_restore",
          "ep_combine", "moe_permute_restore", "moe_latent_up"})
      if (n == op) return true;
    return n.substr(0, 7) == "shared_";
  }
  // Whether selective recomputation runs forward op `f` again: the plan's recompute_modules
  // (core/specs.h RecomputeModule), each the ops of its Megatron-Core module.
  bool SelectivelyRecomputed(const Op& f) const {
    auto on = [&](RecomputeModule mod) { return (p_.recompute_modules & ModuleBit(mod)) != 0; };
    if (on(RecomputeModule::kCoreAttn) && (f.kind == OpKind::kAttention || f.attention_core)) return true;
    // The modules below are told by the op's name; the default (core_attn alone) reads none.
    if ((p_.recompute_modules & ~ModuleBit(RecomputeModule::kCoreAttn)) == 0) return false;
    const std::string_view n(f.name);
    if (on(RecomputeModule::kMoeAct) && (n == "expert_activation" || n == "expert_activation_clamp")) return true;
    // The norms that are modules of their own: the MoE layer's pre-MLP norm, MLA's input norm.
    if (on(RecomputeModule::kLayernorm) && (n == "moe_norm" || (m_.mla && n == "attn_norm"))) return true;
    if (on(RecomputeModule::kMlaUpProj) && m_.mla && (n == "q_up" || n == "q_proj" || n == "kv_up" || n == "rope"))
      return true;
    // A dense layer's MLP block, its TP collectives included (the checkpoint reruns the module).
    if (on(RecomputeModule::kMlp) && (n == "mlp_norm" || n == "mlp_gather" || n == "mlp_fc1" || n == "mlp_activation" ||
                                      n == "mlp_fc2" || n == "mlp_reduce"))
      return true;
    if (on(RecomputeModule::kSharedExperts) && n.substr(0, 7) == "shared_") return true;
    // The whole MoE layer (MoELayer.forward checkpointed): every op of the block from the router to
    // the combine and the shared experts, the dispatcher's all-to-alls and permutations included;
    // not the pre-MLP norm (a module of its own: layernorm) nor the residual add after the layer.
    if (on(RecomputeModule::kMoe) && MoeLayerOp(n)) return true;
    return false;
  }

  // ---- per-step data-parallel synchronisation of this layer's parameters
  void GradSync(bool moe, std::vector<Op>* out) {
    const LayerParams lp = CountLayerParams(m_, moe);
    const RankParams rp = LayerParamsOnRank(m_, p_, lp);
    const bool recomputed = p_.recompute == Recompute::kFull;
    ParamSync(rp.dense, CommGroup::kDpCp, p_.dp * p_.cp, out, DenseTensors(moe), recomputed);
    ParamSync(rp.expert, CommGroup::kExpertDp, p_.tp * p_.cp * p_.dp / (p_.ep * p_.etp), out, ExpertTensors(moe),
              recomputed);
    if (p_.optimizer == Optimizer::kMuon) MuonNewtonSchulz(moe, out);
    WeightQuantize(rp.dense + rp.expert, moe, out);
  }

  // Transformer Engine quantizes a quantized GEMM's weight once per step, in the step's first
  // microbatch, and keeps it for the others (its modules' is_first_microbatch cache: Megatron-Core
  // sets the flag at a step's first forward, megatron/core/pipeline_parallel/schedules.py:497 and
  // transformer/module.py set_is_first_microbatch at d98e8a64, "TE modules will update their fp8
  // parameter cache"): row- and column-wise, as the input's Quantize, 4 to 6 B an element by the
  // FP8 scaling, 41/8 under NVFP4. With the FP8 parameter gather the weights arrive in FP8 and only
  // the transposed copy the backward reads is made (read 1 B, write 1 B; assumed for block scaling
  // as well). Costed once per step (Pass::kStep): it runs on the compute stream before the first
  // microbatch's GEMMs. The norms, biases and the router (BF16) are counted with the weights, well
  // under 1% of a layer's parameters. Stacks without Transformer Engine (torchao's float8 casts
  // the weight at every forward) are not costed with it.
  void WeightQuantize(int64_t weights, bool moe, std::vector<Op>* out) {
    if (!Quantized(gemm_dtype_) || !p_.transformer_engine || weights <= 0) return;
    const bool nvfp4 = gemm_dtype_ == Dtype::kNvfp4;
    const QuantizeCost c = !nvfp4 && p_.fp8_param_gather ? QuantizeCost{32, 1} : QuantizeCostPerElement();
    // One kernel set per weight matrix: attention's projections, the MLP's or shared experts' two,
    // and both of every local expert's (GroupedLinear quantizes its weights one at a time, each with
    // its own quantizer: module.get_weight_workspace in a loop over the GEMMs, module/grouped_linear.py
    // at TE v2.9).
    const bool moe_layer = moe && m_.moe;
    const int64_t local = moe_layer ? std::max<int64_t>(m_.moe->experts / std::max<int64_t>(p_.ep, 1), 1) : 0;
    const int64_t mats =
        AttentionWeightMatrices() + 2 * (moe_layer ? (m_.moe->shared_experts > 0 ? 1 : 0) : 1) + 2 * local;
    if (!Mem(out, nvfp4 ? "nvfp4_weight_quantize" : "fp8_weight_quantize", weights * c.sixteenths / 16)) return;
    out->back().pass = Pass::kStep;
    out->back().batch = mats * c.kernels;
  }

  // Muon's orthogonalisation of this layer's 2D weights, once per step (Jordan et al. 2024,
  // "Muon: An optimizer for hidden layers in neural networks"; Megatron-Core's TensorParallelMuon
  // with its defaults, megatron/core/optimizer/optimizer_config.py at 17a67b9a97: 5 quintic
  // Newton-Schulz steps, "blockwise" TP mode (each rank orthogonalises its own shard), QKV split
  // per query group). Each step on an r x c matrix X (r <= c, transposed otherwise): A = X X^T
  // (r x r x c), B = bA + cA A (r x r x r), X = aX + B X (r x c x r): 4r^2 c + 2r^3 FLOPs. The
  // momentum is fp32, multiplied at "medium" fp32 precision (bf16 tensor cores). With the
  // optimizer sharded (ZeRO >= 1: Megatron's layer-wise distributed Muon) each rank orthogonalises
  // 1/group of the matrices (`share`); without it, all of them. Embedding, head and norms take Adam.
  void MuonNewtonSchulz(bool moe, std::vector<Op>* out) {
    const int64_t h = m_.hidden, t = t_;
    const int64_t dense_group = p_.dp * p_.cp;
    const int64_t expert_group = std::max<int64_t>(p_.tp * p_.cp * p_.dp / (p_.ep * p_.etp), 1);
    auto add = [&](int64_t rows, int64_t cols, int64_t count, int64_t group) {
      if (rows <= 0 || cols <= 0 || count <= 0) return;
      const int64_t r = std::min(rows, cols), c = std::max(rows, cols);
      const double share = p_.zero >= 1 ? 1.0 / static_cast<double>(std::max<int64_t>(group, 1)) : 1.0;
      for (const auto& [mm, nn, kk] : {std::array<int64_t, 3>{r, r, c}, {r, r, r}, {r, c, r}}) {
        Op op = kBlankOp;
        op.name = "muon_newton_schulz";
        op.kind = OpKind::kGemm;
        op.pass = Pass::kStep;
        op.m = mm, op.n = nn, op.k = kk;
        op.batch = 5 * count;
        op.instance_kernels = true;  // five iterations, one matrix at a time
        op.dtype = Dtype::kBf16;
        op.share = share;
        out->push_back(op);
      }
    };
    // Attention: Megatron's linear_qkv split per query group (q of heads/groups heads, k, v), or
    // MLA's down and up projections; the output projection.
    if (m_.mla) {
      const MlaSpec& a = *m_.mla;
      const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      if (a.q_lora_rank > 0) {
        add(a.q_lora_rank, h, 1, dense_group);
        add(m_.heads * qk / t, a.q_lora_rank, 1, dense_group);
      } else {
        add(m_.heads * qk / t, h, 1, dense_group);
      }
      add(a.kv_lora_rank + a.qk_rope_head_dim, h, 1, dense_group);
      add(m_.heads * (a.qk_nope_head_dim + a.v_head_dim) / t, a.kv_lora_rank, 1, dense_group);
      add(h, m_.heads * a.v_head_dim / t, 1, dense_group);
    } else {
      const int64_t groups = std::max<int64_t>(m_.kv_heads / std::min(t, m_.kv_heads), 1);
      const int64_t q_rows = m_.heads / std::max<int64_t>(m_.kv_heads, 1) * m_.head_dim;
      add(q_rows, h, groups, dense_group);
      add(m_.head_dim, h, 2 * groups, dense_group);
      add(h, m_.heads * m_.head_dim / t, 1, dense_group);
    }
    const bool gated = m_.mlp == MlpKind::kSwiglu;
    auto mlp = [&](int64_t f, int64_t shard, int64_t count, int64_t group) {
      add((gated ? 2 : 1) * f / shard, h, count, group);
      add(h, f / shard, count, group);
    };
    if (!moe) {
      mlp(m_.ffn_hidden, t, 1, dense_group);
      return;
    }
    const MoeSpec& x = *m_.moe;
    add(x.experts, h, 1, dense_group);  // the router
    if (x.shared_experts > 0) mlp(x.shared_experts * x.shared_expert_ffn_hidden, t, 1, dense_group);
    mlp(x.expert_ffn_hidden, p_.etp, x.experts / p_.ep, expert_group);
  }
  void StageParamSync(int64_t params, int64_t tensors, std::vector<Op>* out) {
    ParamSync(params, CommGroup::kDpCp, p_.dp * p_.cp, out, tensors, /*recomputed=*/false);
  }
  // Parameter tensors (what a framework that gathers tensor by tensor issues one collective for)
  // of a layer outside its routed experts, as Megatron-LM lays them out: fused QKV and output
  // projections (MLA: the q, kv down and up projections), the MLP's two (gated: fused) weight
  // matrices, biases where the model has them, the two pre-norms (LayerNorm: weight and bias), QK
  // norms, and an MoE layer's router and shared experts.
  // The attention block's weight matrices: QKV and the output projection, or MLA's projections.
  int64_t AttentionWeightMatrices() const { return m_.mla ? (m_.mla->q_lora_rank > 0 ? 4 : 3) : 2; }
  int64_t DenseTensors(bool moe) const {
    const int64_t norm = m_.norm == NormKind::kLayerNorm ? 2 : 1;
    int64_t n = AttentionWeightMatrices() + (m_.mla ? 2 * norm : 0);  // attention weights (+ MLA norms)
    if (m_.bias == BiasKind::kAll) n += 2;
    else if (m_.bias == BiasKind::kQkv) n += 1;
    n += 2 * norm + (m_.qk_norm ? 2 : 0);
    const bool moe_layer = moe && m_.moe;
    const int64_t mlps = moe_layer ? (m_.moe->shared_experts > 0 ? 1 : 0) : 1;
    n += mlps * (m_.bias == BiasKind::kAll ? 4 : 2);
    if (moe_layer) n += 1;  // router
    return n;
  }
  // A rank's routed experts: two weight matrices each (biases where the model has them).
  int64_t ExpertTensors(bool moe) const {
    if (!moe || !m_.moe) return 0;
    return m_.moe->experts / p_.ep * (m_.bias == BiasKind::kAll ? 4 : 2);
  }
  int64_t EmbeddingTensors() const { return 1 + (m_.position == PositionKind::kLearned ? 1 : 0); }
  int64_t HeadTensors() const {
    const int64_t norm = m_.norm == NormKind::kLayerNorm ? 2 : 1;
    return (HeadHoldsOutputWeight() ? 1 : 0) + norm + m_.mtp_layers * (1 + 3 * norm) +
           (m_.mtp_layers > 0 && !m_.tied_embeddings && p_.pp > 1 ? 1 : 0);
  }
  int64_t EmbeddingParams() const {
    return vocab_ * m_.hidden / t_ + (m_.position == PositionKind::kLearned ? m_.max_seq * m_.hidden : 0);
  }

  // ZeRO paper §7: DDP all-reduces gradients (2 psi); ZeRO-1/2 reduce-scatter gradients and
  // all-gather updated weights (the same 2 psi); ZeRO-3 all-gathers weights in forward and again
  // in backward for every microbatch, and reduce-scatters gradients (3 psi per step when m = 1).
  // `tensors`: the parameter tensors `params` is made of; `recomputed`: their forward runs again
  // in the backward (a layer under full recompute; never the embedding or head).
  void ParamSync(int64_t params, CommGroup g, int64_t group_size, std::vector<Op>* out, int64_t tensors,
                 bool recomputed) {
    if (params <= 0) return;
    const int64_t gb = DtypeBytes(p_.dtypes.grads), wb = DtypeBytes(p_.dtypes.weights);
    if (!p_.grad_accum_fusion) {
      // Unfused gradient accumulation, every microbatch: the weight-gradient GEMM writes a fresh
      // gradient in the working dtype, then a separate kernel reads it and adds it into the
      // gradient buffer (read + write): Megatron-LM's DDP hook `main_grad.add_(grad)`.
      Mem(out, "grad_accumulate", params * (wb + 2 * gb));
      out->back().pass = Pass::kBackwardWeight;
    }
    // HSDP (Zhao et al. 2023 §3.2.3): ZeRO inside the shard group, then the shard's gradients
    // all-reduced across the replicas.
    int64_t replicas = 1;
    if (p_.sharding == Sharding::kHsdp && g == CommGroup::kDpCp && p_.hsdp_shard_size > 0) {
      replicas = group_size / p_.hsdp_shard_size;
      group_size = p_.hsdp_shard_size;
      g = CommGroup::kHsdpShard;
    }
    if (replicas > 1) {
      Coll(out, "hsdp_replica_all_reduce", CollectiveKind::kAllReduce, CommGroup::kHsdpReplica,
           std::max<int64_t>(params / group_size, 1) * gb, true);
      out->back().pass = Pass::kStep;
    }
    if (group_size > 1) {
      // Megatron-Core's DDP divides each bucket by the group size before reducing it, unless it
      // averages in the collective (PlanSpec::grad_prescale): a pass over the gradient buffer, once
      // per step, on the compute stream.
      if (p_.zero < 3 && p_.grad_prescale) {
        Mem(out, "grad_prescale", params * 2 * gb);
        out->back().pass = Pass::kStep;
      }
      if (p_.zero == 0) {
        Coll(out, "grad_all_reduce", CollectiveKind::kAllReduce, g, params * gb, true);
        out->back().pass = Pass::kStep;
      } else if (p_.zero == 3 && p_.zero3_gather == Zero3Gather::kPerTensor) {
        PerTensorZero3(params, std::max<int64_t>(tensors, 1), g, group_size, recomputed, out);
      } else {
        const bool fsdp1 = p_.zero3_gather == Zero3Gather::kFsdp1 && p_.zero >= 2;
        if (fsdp1) Fsdp1GradCopies(params, out);
        Coll(out, "grad_reduce_scatter", CollectiveKind::kReduceScatter, g, params * gb, true);
        out->back().pass = fsdp1 ? Pass::kBackwardWeight : Pass::kStep;
        if (p_.zero < 3) {
          // In FP8, 1 byte a parameter, where the plan says so (PlanSpec::fp8_param_gather).
          Coll(out, "param_all_gather", CollectiveKind::kAllGather, g, params * (p_.fp8_param_gather ? 1 : wb), true);
          out->back().pass = fsdp1 ? Pass::kForward : Pass::kStep;
        } else {
          // Per microbatch, so listed with the forward and backward passes (prefetched). With the
          // parameters offloaded, each gather's input, the rank's shard, first crosses the host link
          // on the gather's own stream (OffloadedParamsCopy).
          OffloadedParamsCopy(params / group_size, g, Pass::kForward, true, out);
          Coll(out, "zero3_gather_fwd", CollectiveKind::kAllGather, g, params * wb, true);
          OffloadedParamsCopy(params / group_size, g, Pass::kBackwardInput, true, out);
          Coll(out, "zero3_gather_bwd", CollectiveKind::kAllGather, g, params * wb, true);
          out->back().pass = Pass::kBackwardInput;
          if (p_.zero3_gather == Zero3Gather::kFsdp2) Fsdp2Copies(params, out);
        }
      }
    }
    OptimizerStep(params, group_size, out);
  }

  // ZeRO-3 as DeepSpeed 0.3 runs it (Zero3Gather::kPerTensor, core/specs.h), per microbatch: each
  // of the `tensors` parameter tensors all-gathered before the forward, again before the
  // recomputed forward (full recompute) and before the backward, blocking; its gradient
  // reduce-scattered after the backward (overlapped when overlap_grad_reduce: DeepSpeed's
  // overlap_comm). Every collective goes through PyTorch's list API, which copies between the flat
  // NCCL buffer and one tensor per rank: `group_size` copy kernels per collective, each paying the
  // per-kernel overhead (the op's batch), and the buffer's bytes read and written once. The
  // tensors are taken as equal shares of the parameters (the bytes add up; what the count sets is
  // the collectives' latency and the copies). The count is every parameter tensor, although
  // DeepSpeed keeps those of <= stage3_param_persistence_threshold (1e5) elements resident: a known
  // gap, docs/validation.md (Narayanan Table 2) says what the source count does to the rows.
  void PerTensorZero3(int64_t params, int64_t tensors, CommGroup g, int64_t group_size, bool recomputed,
                      std::vector<Op>* out) {
    const int64_t gb = DtypeBytes(p_.dtypes.grads), wb = DtypeBytes(p_.dtypes.weights);
    const int64_t each_w = std::max<int64_t>(params * wb / tensors, 1),
                  each_g = std::max<int64_t>(params * gb / tensors, 1);
    // DeepSpeed v0.3.13 partition_parameters.py _allgather_param: each parameter's gather first
    // allocates its whole tensor with torch.zeros (one fill kernel writing it), and average_tensor
    // (stage3.py) divides each gradient by the group size before its reduce-scatter (one kernel
    // reading and writing it); both are part of their collective's path.
    auto part_of = [&](const char* name, int64_t bytes, Pass pass) {
      Mem(out, name, bytes);
      out->back().pass = pass;
      out->back().batch = tensors;
      out->back().group = g;
    };
    auto gather = [&](Pass pass) {
      OffloadedParamsCopy(params / group_size, g, pass, false, out);
      part_of("zero3_gather_zero_fill", params * wb, pass);
      for (int64_t i = 0; i < tensors; ++i) {
        Coll(out, "zero3_tensor_gather", CollectiveKind::kAllGather, g, each_w);
        out->back().pass = pass;
      }
      Mem(out, "zero3_gather_copies", 2 * params * wb);
      out->back().pass = pass;
      out->back().batch = tensors * group_size;
      out->back().group = g;  // part of the collective: charged to its group's exposed time
    };
    gather(Pass::kForward);
    if (recomputed) gather(Pass::kRecompute);
    gather(Pass::kBackwardInput);
    part_of("zero3_grad_predivide", 2 * params * gb, Pass::kBackwardWeight);
    for (int64_t i = 0; i < tensors; ++i) {
      Coll(out, "zero3_tensor_reduce_scatter", CollectiveKind::kReduceScatter, g, each_g, p_.overlap_grad_reduce);
      out->back().pass = Pass::kBackwardWeight;
    }
    Mem(out, "zero3_reduce_scatter_copies", 2 * params * gb);
    out->back().pass = Pass::kBackwardWeight;
    out->back().batch = tensors * group_size;
    out->back().group = g;
  }

  // FSDP1's gradient path (Zero3Gather::kFsdp1, core/specs.h), per microbatch, charged as the
  // backward's memory traffic: autograd's concatenation of the parameters' gradients into the flat
  // parameter's, in the weights' dtype, on the compute stream (read and write); then, on the
  // post-backward stream beside the next layer's backward, the cast of that unsharded gradient to
  // the reduce dtype where it differs (read one, write the other) and the in-place division by the
  // predivide factor, which is above 1 for any group of 2 or more (read and write, reduce dtype).
  void Fsdp1GradCopies(int64_t params, std::vector<Op>* out) {
    const int64_t gb = DtypeBytes(p_.dtypes.grads), wb = DtypeBytes(p_.dtypes.weights);
    Mem(out, "fsdp1_grad_concat", 2 * params * wb);
    out->back().pass = Pass::kBackwardWeight;
    if (gb != wb) {
      Mem(out, "fsdp1_grad_cast", params * (wb + gb));
      out->back().pass = Pass::kBackwardWeight;
    }
    Mem(out, "fsdp1_grad_predivide", 2 * params * gb);
    out->back().pass = Pass::kBackwardWeight;
  }

  // FSDP2's copies beside its flat collectives (Zero3Gather::kFsdp2, core/specs.h), on the GPU per
  // microbatch: after each all-gather the compute stream copies the gathered bytes into the
  // per-parameter tensors (read and write), and before the reduce-scatter the unsharded gradients
  // (the weights' dtype, as autograd makes them) are copied into its input in the reduce dtype.
  // The copy-in runs on the reduce-scatter's stream beside the backward; it is charged as the
  // backward's memory traffic. (torchtitan runs one microbatch per step without PP, so per
  // microbatch is per step there.)
  void Fsdp2Copies(int64_t params, std::vector<Op>* out) {
    const int64_t gb = DtypeBytes(p_.dtypes.grads), wb = DtypeBytes(p_.dtypes.weights);
    for (Pass pass : {Pass::kForward, Pass::kBackwardInput}) {
      Mem(out, "fsdp2_all_gather_copy_out", 2 * params * wb);
      out->back().pass = pass;
    }
    Mem(out, "fsdp2_reduce_scatter_copy_in", params * (wb + gb));
    out->back().pass = Pass::kBackwardWeight;
  }

  // ZeRO-3 with its parameters offloaded to the host (PlanSpec::offload_params; DeepSpeed's
  // offload_param): before each all-gather the rank's shard of the parameters, `shard` of them, is
  // copied from host memory to the GPU as the gather's input, on the gather's stream
  // (partition_parameters.py all_gather_coalesced: torch.cat of p.ds_tensor.to(device) into the
  // gather's own partition, at v0.6.2 and 38327e07f), so it hides or waits as the gather does
  // (`overlappable`). Part of its collective: the group's time, costed over the host link.
  void OffloadedParamsCopy(int64_t shard, CommGroup g, Pass pass, bool overlappable, std::vector<Op>* out) {
    if (p_.offload_params == OffloadTarget::kNone) return;
    Op op = kBlankOp;
    op.name = "offload_params_to_gpu";
    op.kind = OpKind::kMemoryBound;
    op.site = OpSite::kHostLink;
    op.pass = pass;
    op.bytes = shard * DtypeBytes(p_.dtypes.weights);
    op.group = g;
    op.overlappable = overlappable;
    out->push_back(op);
  }

  // ZeRO-Offload's step (PlanSpec::offload_optimizer; DeepSpeed's offload_optimizer, Megatron-Core
  // --optimizer-cpu-offload): the master weights and moments live in host memory and the host's
  // CPUs update them. Per step, on each rank: the shard's reduced gradients cross the host link to
  // the host's fp32 gradient buffer (DeepSpeed stage_1_and_2.py
  // async_inplace_copy_grad_to_fp32_buffer_from_gpu; counted in the gradients' dtype, the fewest
  // bytes the copy can move), the host's Adam reads that gradient, the master weight and the
  // moments and writes the master weight and the moments (DeepSpeed's DeepSpeedCPUAdam,
  // csrc/adam/cpu_adam_impl.cpp Step_AVX: one pass over param, grad, exp_avg, exp_avg_sq), and the
  // updated weights come back over the link in the weights' dtype (the 16-bit pinned buffer of
  // DeepSpeed PR #7309; before it, fp32). The GPU still zeroes its gradient buffer. The ops are
  // costed where their bytes move (OpSite; sim::HostOpTime): the host's Adam at the share of the
  // node's memory bandwidth DeepSpeed's CPU Adam was measured to reach (sim::kHostAdamDramShare),
  // shared by its GPUs' processes. With offload to NVMe (ZeRO-Infinity) the states' swaps to and
  // from NVMe are not costed.
  void OffloadedOptimizerStep(int64_t shard, int64_t zeroed, std::vector<Op>* out) {
    const int64_t gb = DtypeBytes(p_.dtypes.grads), wb = DtypeBytes(p_.dtypes.weights);
    const int64_t master = DtypeBytes(p_.dtypes.master_weights), states = DtypeBytes(p_.dtypes.optimizer_states);
    const int64_t moments = MomentBuffers(p_.optimizer);
    const int64_t host_grad = std::max<int64_t>(gb, 4);  // the host's fp32 gradient buffer
    auto add = [&](const char* name, OpKind kind, OpSite site, int64_t bytes) {
      Op op = kBlankOp;
      op.name = name;
      op.kind = kind;
      op.site = site;
      op.pass = Pass::kStep;
      op.bytes = bytes;
      out->push_back(op);
    };
    add("grad_zero", OpKind::kMemoryBound, OpSite::kGpu, zeroed * gb);
    add("offload_grads_to_host", OpKind::kMemoryBound, OpSite::kHostLink, shard * gb);
    add("host_optimizer_step", OpKind::kOptimizer, OpSite::kHost,
        shard * (host_grad + 2 * master + 2 * moments * states));
    add("offload_weights_to_gpu", OpKind::kMemoryBound, OpSite::kHostLink, shard * wb);
  }

  void OptimizerStep(int64_t params, int64_t group_size, std::vector<Op>* out) {
    const int64_t gb = DtypeBytes(p_.dtypes.grads), wb = DtypeBytes(p_.dtypes.weights);
    // Optimizer step over this rank's shard (memory-bound): read the gradients for the global
    // gradient norm (clipping), read them again for the update, read+write master weights and
    // moments, write the working weights, and zero the gradient buffer for the next step
    // (Megatron-LM's clip_grad_norm_fp32, optimizer.step, zero_grad_buffer).
    const int64_t shard = p_.zero >= 1 ? std::max<int64_t>(params / group_size, 1) : params;
    const int64_t moments = MomentBuffers(p_.optimizer);
    // fp16 trains with dynamic loss scaling: before the step the gradients are unscaled and checked
    // for inf/NaN (read + write in fp32; 16-bit gradients are first copied to fp32, and the norm
    // and the update then read that copy). Megatron-LM's Float16Optimizer
    // (_copy_model_grads_to_main_grads, _unscale_main_grads_and_check_for_nan); PyTorch's
    // GradScaler.unscale_ does the same read and write.
    const bool fp16 = p_.precision == Dtype::kFp16;
    const int64_t g_read = fp16 ? std::max<int64_t>(gb, 4) : gb;
    int64_t per_param = 2 * g_read + 2 * DtypeBytes(p_.dtypes.master_weights) +
                        2 * moments * DtypeBytes(p_.dtypes.optimizer_states) + wb;
    if (fp16) per_param += (gb < 4 ? gb + 4 : 0) + 2 * 4;
    // The zeroing covers the whole gradient buffer, not the shard: under ZeRO-1 the buffer holds
    // every gradient of the rank (core/memory.cc keeps them replicated), and Megatron's DDP zeroes
    // all of it at each step's start (param_and_grad_buffer.py reset(): grad_data.zero_(), called
    // by zero_grad_buffer from training.py's train_step at core_v0.14.0). ZeRO-2/3 keep the shard.
    const int64_t zeroed = p_.zero <= 1 ? params : shard;
    if (p_.offload_optimizer != OffloadTarget::kNone) {
      OffloadedOptimizerStep(shard, zeroed, out);
      return;
    }
    const int64_t bytes = shard * per_param + zeroed * gb;
    Op op = kBlankOp;
    op.name = "optimizer_step";
    op.kind = OpKind::kOptimizer;
    op.pass = Pass::kStep;
    op.bytes = bytes;
    out->push_back(op);
  }

  const ModelSpec& m_;
  const PlanSpec& p_;
  int64_t vocab_;  // PaddedVocab: the embedding's and the head's rows
  int64_t t_ = 1, s_ = 0, tokens_ = 0, e_ = 2;
  bool sp_ = false, async_tp_ = false, eager_ = false, eager_norm_ = false, glu_clamp_ = false;
  const EagerCost* rope_cost_ = nullptr;      // RoPE's eager decomposition; null: one fused kernel
  bool dtensor_ = false, float8_tp_ = false;  // PlanSpec::dtensor_tp under SP; and an FP8 plan
  Dtype gemm_dtype_ = Dtype::kBf16;
  double busiest_rank_ = 1.0;  // MoeBusiestRank: the MoE layers' busiest EP rank over the mean
};

}  // namespace

// The cluster tiers a group spans. Expert-data-parallel ranks sit etp*ep apart (a stage's
// tp*cp*dp ranks regroup as etp x ep x edp, innermost first, as in Megatron-Core).
namespace {
// DP together with CP, the group whose members hold the same parameters: cp x dp ranks, CP's
// digit inside DP's (Megatron-Core's data-parallel-with-CP group). One digit where the two axes
// are adjacent in the placement (the default tp-cp-ep-dp-pp, where ep takes no room among the
// dense axes), two where another axis sits between them (pp in tp-cp-ep-pp-dp).
GroupLayout DpCpLayout(const PlanSpec& p) {
  const GroupLayout cp = AxisLayout(Axis::kCp, p), dp = AxisLayout(Axis::kDp, p);
  if (cp.size <= 1) return dp;
  if (dp.size <= 1) return cp;
  if (dp.stride == cp.stride * cp.size) return {dp.size * cp.size, cp.stride};
  return {dp.size * cp.size, cp.stride, cp.size, dp.stride};
}
// Members [0, n) of a layout's order, or every n-th of them (`every`): HSDP's shard and replica
// groups. REQUIRES (core/validate.cc): with two digits, n a multiple of the inner digit or a
// divisor of it.
GroupLayout SubLayout(const GroupLayout& l, int64_t n, bool every) {
  if (l.inner <= 0) return every ? GroupLayout{l.size / n, l.stride * n} : GroupLayout{n, l.stride};
  if (n % l.inner == 0) {
    const int64_t outer = n / l.inner;  // whole inner digits
    return every ? GroupLayout{l.size / n, l.outer_stride * outer}
                 : (outer == 1 ? GroupLayout{n, l.stride} : GroupLayout{n, l.stride, l.inner, l.outer_stride});
  }
  // n divides the inner digit.
  if (!every) return {n, l.stride};
  const int64_t in = l.inner / n;
  return in == 1 ? GroupLayout{l.size / n, l.outer_stride} : GroupLayout{l.size / n, l.stride * n, in, l.outer_stride};
}
}  // namespace

GroupLayout LayoutOfGroup(CommGroup g, const PlanSpec& p) {
  const int64_t shard = std::max<int64_t>(p.hsdp_shard_size, 1);
  switch (g) {
    case CommGroup::kTp: return AxisLayout(Axis::kTp, p);
    case CommGroup::kCp: return AxisLayout(Axis::kCp, p);
    case CommGroup::kEp: return AxisLayout(Axis::kEp, p);
    case CommGroup::kDp: return AxisLayout(Axis::kDp, p);
    case CommGroup::kPp: return AxisLayout(Axis::kPp, p);
    case CommGroup::kDpCp: return DpCpLayout(p);
    case CommGroup::kExpertDp: return ExpertDpLayout(p);
    case CommGroup::kHsdpShard: return SubLayout(DpCpLayout(p), std::min(shard, p.dp * p.cp), false);
    case CommGroup::kHsdpReplica: return SubLayout(DpCpLayout(p), std::min(shard, p.dp * p.cp), true);
    // The first and the last stage: two members pp - 1 stages apart (one rank with one stage).
    case CommGroup::kPpEnds:
      return p.pp > 1 ? GroupLayout{2, (p.pp - 1) * StrideOf(Axis::kPp, p)} : GroupLayout{1, StrideOf(Axis::kPp, p)};
    case CommGroup::kNone: break;
  }
  return {};
}

GroupSpan SpanOfGroup(CommGroup g, const PlanSpec& p, const ClusterSpec& c) {
  if (g == CommGroup::kNone) return GroupSpan{};
  return SpanOfLayoutIn(LayoutOfGroup(g, p), JobDomainGpus(p, c));
}

bool RecomputeRerunsMoeDispatcher(const PlanSpec& p) {
  return p.recompute == Recompute::kFull || p.Recomputes(RecomputeModule::kTorchtitanOp) ||
         p.Recomputes(RecomputeModule::kMoe);
}

void BuildLayerPart(const ModelSpec& m, const PlanSpec& p, bool moe, LayerPart part, std::vector<Op>* out,
                    std::vector<Op>* scratch) {
  Builder(m, p).PartInto(moe, part, out, scratch);
}
std::vector<Op> BuildLayerPart(const ModelSpec& m, const PlanSpec& p, bool moe, LayerPart part) {
  std::vector<Op> out, scratch;
  BuildLayerPart(m, p, moe, part, &out, &scratch);
  return out;
}
void BuildEmbeddingPart(const ModelSpec& m, const PlanSpec& p, LayerPart part, std::vector<Op>* out,
                        std::vector<Op>* scratch) {
  Builder(m, p).EmbeddingPartInto(part, out, scratch);
}
std::vector<Op> BuildEmbeddingPart(const ModelSpec& m, const PlanSpec& p, LayerPart part) {
  std::vector<Op> out, scratch;
  BuildEmbeddingPart(m, p, part, &out, &scratch);
  return out;
}
void BuildHeadPart(const ModelSpec& m, const PlanSpec& p, LayerPart part, std::vector<Op>* out,
                   std::vector<Op>* scratch) {
  Builder(m, p).HeadPartInto(part, out, scratch);
}
std::vector<Op> BuildHeadPart(const ModelSpec& m, const PlanSpec& p, LayerPart part) {
  std::vector<Op> out, scratch;
  BuildHeadPart(m, p, part, &out, &scratch);
  return out;
}
Op BuildP2pOp(const ModelSpec& m, const PlanSpec& p) { return Builder(m, p).P2p(); }
Op BuildP2pGatherOp(const ModelSpec& m, const PlanSpec& p) { return Builder(m, p).P2pGather(); }

void BuildStepGraph(const ModelSpec& m, const PlanSpec& p, StepGraph* g) {
  Builder b(m, p);
  thread_local std::vector<Op> fwd;  // each list's forward, scratch: kept per thread, reused
  b.LayerInto(false, &fwd, &g->dense_layer);
  if (m.moe) b.LayerInto(true, &fwd, &g->moe_layer);
  else g->moe_layer.clear();
  b.EmbeddingInto(&fwd, &g->embedding);
  b.HeadInto(&fwd, &g->head);
  g->p2p = b.P2p();
  g->p2p_gather = b.P2pGather();
  g->step.clear();
  g->microbatches = p.Microbatches();
  g->tokens_per_microbatch = p.seq_len / p.cp * p.micro_batch;
}

StepGraph BuildStepGraph(const ModelSpec& m, const PlanSpec& p) {
  StepGraph g;
  BuildStepGraph(m, p, &g);
  return g;
}

}  // namespace meshplan::core
