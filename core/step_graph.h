// The StepGraph: the ops one rank executes in one training step, with exact shapes. The one
// description of a layer: the simulator costs it and the runtime executes it.
//
// One layer's ops are listed once per layer kind (dense, MoE) for one microbatch: forward,
// backward (split into input-gradient and weight-gradient ops, which zero-bubble schedules
// reorder) and the recomputed forward. Stage-level ops (embedding, output head, loss),
// pipeline sends, data-parallel gradient synchronisation, ZeRO gathers and the optimizer step are
// listed separately. Shapes are per rank (after TP/CP/EP/SP sharding). Pure; thread-safe.
#ifndef MESHPLAN_CORE_STEP_GRAPH_H_
#define MESHPLAN_CORE_STEP_GRAPH_H_

#include <cstdint>
#include <vector>

#include "core/collectives.h"
#include "core/specs.h"

namespace meshplan::core {

// One byte each (as the enums of specs.h and collectives.h an Op holds): core::Op is 128 bytes.
enum class OpKind : uint8_t { kGemm, kAttention, kMemoryBound, kCollective, kP2p, kOptimizer };
enum class Pass : uint8_t { kForward, kBackwardInput, kBackwardWeight, kRecompute, kStep };
// The communicator an op runs on. kDpCp: data parallel together with context parallel (the group
// dense gradients are reduced over); kExpertDp: the expert-data-parallel group; kHsdpShard and
// kHsdpReplica: HSDP's shard group (innermost hsdp_shard_size ranks of DP x CP) and the group of
// replicas across shard groups. kPpEnds: the pipeline's first and last stage at the same other
// coordinates (Megatron's embedding group, DeepSpeed's tied-module group), where a tied word
// embedding's two copies live; a middle stage's rank is a group of its own.
enum class CommGroup : uint8_t { kNone, kTp, kCp, kEp, kDp, kPp, kDpCp, kExpertDp, kHsdpShard, kHsdpReplica, kPpEnds };
constexpr int kCommGroups = 11;
const char* Name(OpKind k);
const char* Name(Pass p);
const char* Name(CommGroup g);

// Where an op's bytes move (ZeRO-Offload's step, PlanSpec::offload_optimizer): on the GPU (its
// HBM), over the GPU's host link (GpuSpec::host_link_bytes_per_s, a copy between the GPU and host
// memory), or in host memory by the host CPUs (ClusterSpec::host_memory_bytes_per_s, shared by the
// node's GPUs' processes).
enum class OpSite : uint8_t { kGpu, kHostLink, kHost };

// What a memory-bound op computes: the runtime runs a kernel of that kind on the op's bytes
// (runtime/executor.cc), and the step graph derives an eager op's backward and an FP8 GEMM's
// quantization by it, never by the op's name.
enum class MemOp : uint8_t {
  kCopy,          // data movement and adds: residuals, lookups, copies, gradient accumulation
  kNorm,          // LayerNorm / RMSNorm
  kActivation,    // the MLP's GELU or SwiGLU
  kRope,          // rotary position embedding on q and k
  kSoftmax,       // the attention scores' scale-mask-softmax (unfused attention)
  kRouter,        // the MoE router's softmax and top-k over the experts
  kCrossEntropy,  // the loss over the vocabulary
  kPermute,       // MoE token permutation and its inverse (the gradient is the inverse permutation)
  kFp8Quantize,   // FP8 or NVFP4 quantize of a GEMM's input (forward) or gradient (backward)
  kRepeatKv,      // GQA's K and V copied to every query head (the gradient sums the copies back)
  kExpertBias,    // an MoE layer's fc2 bias added one local expert at a time (PlanSpec::expert_bias)
  kCpRing,        // PyTorch's context_parallel: its ring's copies, fp32 merges and accumulators (PlanSpec::torch_cp)
  kGluClamp,  // a clamped GLU's two eager clamps and concatenation before the fused activation (ModelSpec::glu_clamp)
};

struct Op {
  // Fields by size (8-byte, then the enums, then the flags): the search copies millions of ops.
  // What the op is, for reports, traces and measurements: a string literal with static storage
  // (the builder assigns only literals), so it outlives every graph; never parsed for meaning
  // outside the builder (`mem_op`, `kind`, `pass` and `group` say what the op does).
  const char* name = "";
  // kGemm: C[m x n] = A[m x k] B[k x n], `batch` independent instances (local experts).
  int64_t m = 0, n = 0, k = 0, batch = 1;
  // kAttention (core attention, per rank): batch x heads of (seq_q x seq_kv) scores.
  int64_t attn_batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim_qk = 0, head_dim_v = 0;
  // kAttention: the keys a query meets at most (ModelSpec::sliding_window; 0: the whole causal
  // sequence), and the share of the list's layers that run this op: a model mixing windowed and
  // global layers gets one op of each kind per layer, weighted by their shares. kGemm: the share
  // of the GEMMs this rank runs (Muon's orthogonalisation spread over a sharded optimizer's group).
  int64_t window = 0;
  double share = 1.0;
  // kAttention: a window shorter than the keys, so fewer keys per query than the causal sequence.
  bool Windowed() const { return window > 0 && window < seq_kv; }
  // kMemoryBound, kOptimizer: bytes read + written (by `batch` kernels). kCollective, kP2p:
  // nccl-tests' S.
  int64_t bytes = 0;
  OpKind kind = OpKind::kGemm;
  Pass pass = Pass::kForward;
  Dtype dtype = Dtype::kBf16;
  AttentionImpl attention = AttentionImpl::kFlash;  // kAttention: the fused kernel (kFlash or kFlash2)
  MemOp mem_op = MemOp::kCopy;                      // kMemoryBound: what it computes
  CollectiveKind collective = CollectiveKind::kAllReduce;
  // A collective's group; on a memory-bound op, the collective it is part of (a list
  // collective's per-rank copies): its time is that group's exposed communication.
  CommGroup group = CommGroup::kNone;
  bool causal = true, flash = true;  // kAttention
  bool chunked = false;              // kAttention: `window` is a chunk (ModelSpec::chunked_attention)
  // Part of core attention: the fused kernel (kAttention) or the unfused path's score and value
  // GEMMs and softmax (what selective recompute's core_attn reruns and a ring's KV exchange hides
  // under).
  bool attention_core = false;
  bool overlappable = false;  // a collective that may run under compute of the same pass
  // A sequence-parallel collective of a transformer layer's linear layers (the all-gather before
  // qkv and fc1, the reduce-scatter after proj and fc2, and their backward partners), which
  // Transformer Engine's userbuffers run beside their own GEMM under full TP overlap
  // (sim::UserbufferMethod); MLA's input gather, whose down-projections are replicated, is not.
  bool userbuffers = false;
  // An MoE block's op after its dispatcher's device-to-host synchronisation (the forward's; its
  // copies in the other passes keep the flag, unread): the host queues it only once every kernel
  // before the synchronisation has finished (sim::MoeLayerHostTime, docs/compute.md).
  bool after_moe_sync = false;
  // kGemm: each of the `batch` instances is a kernel of its own, launched one after another (the
  // experts' GEMMs, Muon's iterations), not one batched kernel (the unfused attention's score and
  // value GEMMs): no instance takes less than the per-kernel time (sim::ComputeOpTime).
  bool instance_kernels = false;
  // kMemoryBound, kOptimizer: where its bytes move (OpSite; sim::HostOpTime costs the two host sites).
  OpSite site = OpSite::kGpu;
  // FLOPs this op executes: 2mnk x batch for a GEMM; for attention 2 s_q K (d_qk + d_v) per head,
  // K the keys a query meets (s_kv, s_kv/2 when causal, the window's count with one: KeysPerQuery),
  // x2.5 in backward (dQ, dK, dV, dS and the recomputed scores), x share.
  double Flops() const;
};
// Two cache lines: the step graph copies every op it derives (backward, recompute) and the search
// builds a graph per candidate.
static_assert(sizeof(Op) == 128, "core::Op is 128 bytes: one-byte enums, then the flags");

struct StepGraph {
  std::vector<Op> dense_layer;  // one dense layer, one microbatch
  std::vector<Op> moe_layer;    // one MoE layer, one microbatch (empty for dense models)
  std::vector<Op> embedding;    // first stage, per microbatch
  std::vector<Op> head;         // last stage, per microbatch: final norm, output GEMM, loss
  Op p2p;                       // activation sent to the next stage per microbatch (each direction)
  // Megatron's scatter/gather (no SP, t > 1): the receiver all-gathers the 1/t slice `p2p` carried
  // back into the whole activation over TP, once per received tensor. bytes = 0 when not used.
  Op p2p_gather;
  // Per step, per rank: gradient synchronisation, ZeRO-3 gathers (all layers), optimizer.
  std::vector<Op> step;
  int64_t microbatches = 0;
  int64_t tokens_per_microbatch = 0;  // s/cp * b on this rank
};

// REQUIRES: ValidatePlan(plan, model, ...) reported no errors.
StepGraph BuildStepGraph(const ModelSpec& m, const PlanSpec& p);
// The same into `g`, whose lists are cleared and refilled: a caller that keeps one StepGraph per
// thread builds graph after graph without allocating (the one-plan estimate, sim/step_model.cc).
void BuildStepGraph(const ModelSpec& m, const PlanSpec& p, StepGraph* g);

// The expected number of `ranks` expert-parallel ranks (each holding experts/ranks experts) that
// a token's `top_k` distinct experts land on when it picks them uniformly at random among
// `experts` (what balanced routing averages to; Megatron-Bridge's MoE benchmarks force it,
// moe_router_force_load_balancing: random router logits):
// ranks x (1 - C(experts - experts/ranks, k) / C(experts, k)); 1 for one rank. What a dispatcher
// that sends each token once per rank (MoeDispatcher::kFlex) puts on the wire, against k.
// Under round-robin routing (MoeRouting::kRoundRobin: token t's experts are t k, ..., t k + k - 1
// mod E, and rank r holds experts [r L, r L + L), L = experts/ranks) it is the exact average over
// the E / gcd(E, k) starting experts the tokens cycle through of the ranks their k consecutive
// experts span: 1 + (number of rank boundaries inside the block).
double RanksPerToken(int64_t experts, int64_t top_k, int64_t ranks, MoeRouting routing = MoeRouting::kUniform);

// The share of the mean routed rows plan `p` runs model `m`'s MoE layers at, for the busiest
// expert-parallel rank (PlanSpec::moe_imbalance); 1 for a dense model or under capacity-factor
// dropping, which pads every expert to its capacity.
double MoeBusiestRank(const ModelSpec& m, const PlanSpec& p);

// Whether plan `p` runs model `m`'s clamped GLU (ModelSpec::glu_clamp) as Megatron-Core's fused
// activation does: two eager clamps and a cat before it, the clamped copy kept for its backward
// (core/step_graph.cc kGluClamp; docs/memory.md §3). Not under eager elementwise ops (their
// decomposition is costed as it is) nor Transformer Engine's op fuser (PlanSpec::moe_op_fuser).
bool GluClampCopies(const ModelSpec& m, const PlanSpec& p);

// One layer's ops in three parts, by what they depend on, so that a search can cost each part
// once for all the plans that share it: kCompute, the forward and backward ops (the same for
// every recompute mode and ZeRO stage); kRecompute, the recomputed forward (the plan's recompute
// mode); kSync, unfused gradient accumulation, the DP / ZeRO / HSDP synchronisation and the
// optimizer step (the plan's ZeRO stage and sharding). StepGraph's layer lists are the three
// concatenated in this order. `moe` selects the MoE layer (REQUIRES: m.moe for true).
enum class LayerPart { kCompute, kRecompute, kSync };
std::vector<Op> BuildLayerPart(const ModelSpec& m, const PlanSpec& p, bool moe, LayerPart part);
// The same into `out`, with `scratch` for the forward (both cleared first, their capacity kept:
// a caller that reuses them builds parts without allocating).
void BuildLayerPart(const ModelSpec& m, const PlanSpec& p, bool moe, LayerPart part, std::vector<Op>* out,
                    std::vector<Op>* scratch);
// Whether the plan's recomputed forward of an MoE layer reruns the dispatcher up to its
// synchronisation (the recompute part holds the ops before and after it): full recomputation, and
// torchtitan's per-op policy, which replays every op but SDPA and the SP reduce-scatters; no
// selective module does (kMoeAct, kLayernorm, kSharedExperts rerun ops on one side of it).
bool RecomputeRerunsMoeDispatcher(const PlanSpec& p);
// StepGraph's embedding and head lists by the same parts: kCompute, forward and backward; kSync,
// the synchronisation and optimizer of their parameters (the embedding's also its dense weight
// gradient's zero fill and its add into the gradient buffer); kRecompute, nothing (they are never
// recomputed). Concatenated in that order they are StepGraph's entries. And its p2p entry alone.
std::vector<Op> BuildEmbeddingPart(const ModelSpec& m, const PlanSpec& p, LayerPart part);
std::vector<Op> BuildHeadPart(const ModelSpec& m, const PlanSpec& p, LayerPart part);
void BuildEmbeddingPart(const ModelSpec& m, const PlanSpec& p, LayerPart part, std::vector<Op>* out,
                        std::vector<Op>* scratch);
void BuildHeadPart(const ModelSpec& m, const PlanSpec& p, LayerPart part, std::vector<Op>* out,
                   std::vector<Op>* scratch);
Op BuildP2pOp(const ModelSpec& m, const PlanSpec& p);
Op BuildP2pGatherOp(const ModelSpec& m, const PlanSpec& p);

// The global ranks of communicator `g` (size, stride) under the plan's placement: the one
// layout of every StepGraph group, which the runtime splits its communicators by.
GroupLayout LayoutOfGroup(CommGroup g, const PlanSpec& p);
// The cluster tiers the communicator `g` spans: SpanOfStride over LayoutOfGroup, the one
// mapping from a StepGraph group to the network, used by the simulator and the runtime alike.
GroupSpan SpanOfGroup(CommGroup g, const PlanSpec& p, const ClusterSpec& c);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_STEP_GRAPH_H_
