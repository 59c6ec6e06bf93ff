// The analytic step model: costs every op of the StepGraph with the Profile (roofline with
// efficiencies; alpha-beta collectives on the tiers each group spans), applies the overlap rules
// and the pipeline schedule, and reports step time, its breakdown, throughput, MFU/HFU and the
// cost of a training run. Formulas and sources: docs/compute.md, docs/schedules.md.
// Pure functions; thread-safe.
#ifndef MESHPLAN_SIM_STEP_MODEL_H_
#define MESHPLAN_SIM_STEP_MODEL_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/profile.h"
#include "core/specs.h"
#include "core/step_graph.h"

namespace meshplan::sim {

// Seconds of one step on the critical path, by cause. They add up to StepEstimate::time_s.
struct StepBreakdown {
  double compute_s = 0;    // forward and backward kernels (GEMM, attention, memory-bound)
  double recompute_s = 0;  // recomputed forward kernels
  double tp_comm_s = 0;    // exposed tensor-parallel collectives
  double cp_comm_s = 0;    // exposed context-parallel exchanges
  double ep_comm_s = 0;    // exposed expert-parallel all-to-alls
  double dp_comm_s = 0;    // exposed data-parallel gradient/parameter synchronisation
  // Pipeline sends on the critical path, and a tied embedding's all-reduce over the pipeline's ends.
  double pp_comm_s = 0;
  double bubble_s = 0;     // pipeline fill and drain
  double optimizer_s = 0;  // the optimizer step
  double offload_s = 0;    // activation offloading's host-link transfers the compute waits for
  double host_s = 0;       // the GPU waiting for the host: MoE layers under their host floor (MoeLayerHostFloor)
};

// One term of a StepBreakdown: its key in the JSON outputs ("tp_comm"; report and search add
// "_s"), its name for people ("exposed TP communication") and its seconds.
struct BreakdownTerm {
  const char* key;
  const char* name;
  double seconds;
};
// Every term, in the order the outputs list them: the one list that report, validate, search and
// explain read.
std::array<BreakdownTerm, 11> BreakdownTerms(const StepBreakdown& b);

// Per-microbatch times of one pipeline rank, in seconds (exposed communication included).
struct StageTimes {
  double forward_s = 0;
  double backward_input_s = 0;   // input gradients (and recompute)
  double backward_weight_s = 0;  // weight gradients
  double step_s = 0;             // once per step: exposed DP sync + optimizer
  // Of each pass's time: the compute the collectives hidden under it slow (OverlapSlowdown).
  double forward_slowdown_s = 0, backward_input_slowdown_s = 0, backward_weight_slowdown_s = 0;
  // Of the forward and input-gradient passes' time: the activation-offload copies the compute
  // waits for (OffloadExposed).
  double forward_offload_s = 0, backward_input_offload_s = 0;
  // Of each pass's time: the GPU waiting for the host, the MoE layers' host floor beyond their
  // kernels (MoeLayerHostFloor).
  double forward_host_s = 0, backward_input_host_s = 0, backward_weight_host_s = 0;
  double Total() const { return forward_s + backward_input_s + backward_weight_s; }
  double Slowdown() const { return forward_slowdown_s + backward_input_slowdown_s + backward_weight_slowdown_s; }
};

struct StepEstimate {
  double time_s = 0;
  StepBreakdown breakdown;
  std::vector<StageTimes> stages;
  int64_t critical_stage = 0;
  double bubble_fraction = 0;  // bubble_s / time_s
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  // FLOPs per step, whole job. Default convention: full s^2 attention scores (PaLM, Narayanan,
  // Korthikanti); `_causal`: only the lower triangle (Megatron-Core, FlashAttention).
  double model_flops = 0, model_flops_causal = 0, hardware_flops = 0;
  double tflops_per_gpu = 0;  // model FLOPs / s / GPU, in TFLOP/s
  double mfu = 0, hfu = 0, mfu_causal = 0;
  // Of the exposed communication in `breakdown`: the compute slowed by the collectives hidden
  // under it on the critical path (OverlapSlowdown), per step.
  double overlap_slowdown_s = 0;
};

// Activation offloading (PlanSpec::offload_activation_layers): what of a pass the compute waits
// for the offload copies, `bytes` (core::OffloadedActivationBytes) over the host link at
// `link_bytes_per_s`, on a copy stream beside the pass's compute (`pass_s` over `layers` layers).
// The copies of the first offloaded layer start only once it has saved its tensors, and the
// reload of the last one needed must end before its layer's backward starts, so they hide under
// all but one layer's share of the pass: max(0, bytes / link - pass_s (layers - 1) / layers)
// (Transformer Engine's default scheduling, cpu_offloading.rst at d0067d0d: asynchronous
// transfers, compute stalled only to keep at most layers - N sets on the GPU). Not costed: the
// copies' HBM traffic beside the compute (the same document: "unlikely to affect" GEMMs).
double OffloadExposed(double bytes, double link_bytes_per_s, double pass_s, int64_t layers);

// REQUIRES: ValidatePlan(plan, model, gpu, cluster) reported no errors.
// One dense transformer layer, one microbatch, on one rank: forward and backward (input and
// weight gradients plus recompute) with the layer's exposed communication, as the step model
// costs it inside EstimateStep. What a per-layer timing (Korthikanti 2022 Table 4) measures.
StageTimes DenseLayerTimes(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                           const core::ClusterSpec& c, const core::Profile& profile);

// One op of a plan's step graph as the step model costs it (`meshplan report --ops`): a compute
// op's time at the pace of the plan's slowest GPU (ComputeOpTime x SlowestGpuPace), a collective's
// or pipeline send's on the tiers its group spans (core::ProfiledCollectiveTime, with the
// algorithm it picks), whether it may run under its pass's compute (CollectiveHidden; a step
// collective: under the last backward with overlap_grad_reduce, an all-gather under the first
// forward with overlap_param_gather, a tied embedding's all-reduce and the word embedding's own (EmbeddingTail) never)
// and, if so, the fraction of a second of compute each of its seconds costs (OverlapSlowdown; NCCL's for the step's).
// Times are per microbatch, except the ops of Pass::kStep (once per step). What hides and what is exposed is decided
// per pass over the whole list (the step breakdown), not per op.
struct CostedOp {
  core::Op op;
  double time_s = 0;
  bool hidden = false;
  double slowdown = 0;
  // A TP collective that hides only beside its own GEMM (TpPairing: an AsyncTP-fused one, or
  // Transformer Engine's userbuffers), and the part of it that GEMM cannot hide (TpPairedHidden),
  // exposed.
  const char* pairing = nullptr;
  bool fused() const { return pairing != nullptr; }
  double exposed_s = 0;
  bool memory_bound = false;   // a GEMM whose operands' HBM traffic outlasts its math (GemmSides)
  bool kernel_bound = false;   // a GEMM of kernels shorter than the per-kernel time t_k (each takes t_k)
  double alignment = 1.0;      // a 16-bit GEMM's GemmAlignmentEfficiency (widths off a multiple of 8: < 1)
  core::GroupSpan span;        // a collective's or send's group on the cluster's tiers
  const char* algorithm = "";  // a collective's or send's algorithm ("ring", "tree", ...)
};
struct CostedOpList {
  const char* name = "";  // "dense layer", "MoE layer", "embedding", "head", "pipeline send", "step"
  std::string where;      // which ranks run it and how often
  int64_t count = 0;      // layers of this kind in the model (1 for the other lists)
  std::vector<CostedOp> ops;
};
// REQUIRES: ValidatePlan(plan, model, gpu, cluster) reported no errors.
std::vector<CostedOpList> CostStepGraph(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                                        const core::ClusterSpec& c, const core::Profile& profile);
// How `report --ops` and meshplan-gui's op table describe a costed op (sim/op_costs.cc): its shape
// (a GEMM's "m x n x k" and batch, core attention's "batch x heads queries x keys" and head dim, a
// collective's kind, a memory-bound op's kernel count), how it was costed (the TFLOP/s or TB/s its
// time implies and whether a GEMM is compute- or memory-bound; a collective's group, span,
// algorithm and whether it may hide) and a pass's short name ("fwd", "bwd-in", "bwd-w", "recomp",
// "step").
std::string CostedOpShape(const core::Op& op);
std::string CostedOpHow(const CostedOp& c);
const char* PassShortName(core::Pass p);

// Names this step model in stored predictions (core/result_store.h); bump it when a change moves
// predictions, so history can tell predictions of different models apart.
inline constexpr const char* kStepModelVersion =
    "meshplan 0.1.0 step-model/11 (userbuffers hide each TP collective only beside its own GEMM)";

// The costed op lists of a plan (its layers, embedding, head, pipeline send, once-per-step work)
// depend on the plan's sharding, batch shape, precision and placement but not on its pipeline
// shape: the interleave degree, the schedule (except DualPipe, which hides the EP all-to-alls),
// an uneven layer split, the global batch or overlap_grad_reduce (except under per-tensor ZeRO-3,
// whose per-microbatch reduce-scatters it overlaps). A search evaluates many plans
// that differ only there, so EstimateStep can keep the costed lists here and reuse them: the
// result is identical with and without a cache (tests/sim/step_model_test.cc).
// One cache serves one (model, GPU, cluster, profile) and GPU count (the slowest GPU's pace) — it
// forgets everything when called with another — and one thread at a time.
class StepCostCache {
 public:
  StepCostCache();
  ~StepCostCache();
  StepCostCache(const StepCostCache&) = delete;
  StepCostCache& operator=(const StepCostCache&) = delete;
  int64_t hits() const;
  int64_t misses() const;
  struct Impl;  // sim/step_model.cc
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// kTotalsOnly leaves StepEstimate::stages empty (every other field as kFull): the search ranks
// plans by their totals and asks for the stages of the few it keeps.
enum class StepDetail { kFull, kTotalsOnly };

StepEstimate EstimateStep(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                          const core::ClusterSpec& c, const core::Profile& profile, StepCostCache* cache = nullptr,
                          StepDetail detail = StepDetail::kFull);

// A training run of `tokens` tokens at the step's throughput, without failures (EstimateReliability, sim/run_sim.h,
// adds them).
struct TrainEstimate {
  double tokens = 0;
  double steps = 0;
  double days = 0;
  double gpu_hours = 0;
  double cost_usd = 0;    // gpu_hours x cluster price per GPU-hour
  double energy_kwh = 0;  // GPUs x TDP x hours: an upper bound on the GPUs' draw
};
TrainEstimate EstimateTraining(const StepEstimate& step, const core::PlanSpec& p, const core::GpuSpec& g,
                               const core::ClusterSpec& c, double tokens);

// Pipeline time of one step from the ranks' per-microbatch times: `work` = m x the critical
// rank's time (for DualPipe, half: a rank runs each microbatch through one of its two stages),
// `bubble` the fill and drain. 1F1B/GPipe: sum_i t_i - t_max, i.e. (p-1)t for uniform stages,
// a fraction (p-1)/(m+p-1); interleaved: that / v; ZB-H1: (p-1)(F + B - W); DualPipe:
// (p/2 - 1)(F&B + B - 3W). docs/schedules.md.
struct PipelineTime {
  double work_s = 0;
  double bubble_s = 0;
  int64_t critical_stage = 0;
};
PipelineTime SchedulePipeline(core::Schedule schedule, const std::vector<StageTimes>& stages, int64_t microbatches,
                              int64_t vpp);

// The overlap rule of one collective: it may run under its pass's compute when the step graph
// marks it overlappable, or when it is a TP collective and tp_overlap is full (Transformer Engine
// userbuffers); otherwise it is exposed. The step model and the DES both apply it.
inline bool CollectiveHidden(const core::Op& op, const core::PlanSpec& p) {
  return op.overlappable || (op.group == core::CommGroup::kTp && p.tp_overlap == core::TpOverlap::kFull);
}

// AsyncTP (tp_overlap async): a fused collective runs beside the GEMMs it was fused with and
// nothing else. PyTorch's fused ops (torch/distributed/_symmetric_memory/__init__.py at 006b161f)
// are single graph nodes that start and end with a barrier: the all-gather's shard copies
// alternate with the reader GEMM's t row chunks on two streams, the first chunk on the local
// shard beside the first copy and the last chunk after the last copy
// (_pipelined_all_gather_and_consume); the reduce-scatter's chunks each land before their copy,
// the local one beside the last (_pipelined_produce_and_all2all). With G those GEMMs' time and C
// the collective's, the op takes max(G, C + G/t): G (t - 1)/t of the GEMMs can hide it, and
// what C exceeds that by is exposed. The GEMM is the first of its pass after an all-gather (the
// QKV op, fc1, the output layer; MLA's first projection only, its kv down-projection left out of
// the window) and the last before a reduce-scatter (the output projection, fc2); in the backward
// the input-gradient GEMM. Returns the hidden part, min(C, G (t - 1)/t), of `ops[i]`'s time `c`
// (`gemm_time` costs a GEMM). The step model and the DES both apply it.
inline bool AsyncTpFused(const core::Op& op, const core::PlanSpec& p) {
  return op.overlappable && op.group == core::CommGroup::kTp && p.tp_overlap == core::TpOverlap::kAsync;
}
// The time (`gemm_time`) of the GEMM of ops[i]'s pass next after it (`ahead`) or last before it;
// 0 where there is none.
template <class GemmTime>
double PartnerGemmTime(const std::vector<core::Op>& ops, size_t i, bool ahead, GemmTime&& gemm_time) {
  for (size_t j = i;;) {
    if (ahead) {
      if (++j >= ops.size()) return 0;
    } else {
      if (j == 0) return 0;
      --j;
    }
    const core::Op& x = ops[j];
    if (x.kind == core::OpKind::kGemm && x.pass == ops[i].pass) return gemm_time(x);
  }
}
template <class GemmTime>
double AsyncTpHidden(const std::vector<core::Op>& ops, size_t i, double c, int64_t tp, GemmTime&& gemm_time) {
  const double g = PartnerGemmTime(ops, i, ops[i].collective == core::CollectiveKind::kAllGather, gemm_time);
  const double t = static_cast<double>(std::max<int64_t>(tp, 1));
  return std::min(c, g * (t - 1) / t);
}
// The same split applied: the part of `c` its GEMM cannot hide is added to `*exposed`, the
// hidden part returned (what the pass's overlappable time takes).
template <class GemmTime>
double AsyncTpSplit(const std::vector<core::Op>& ops, size_t i, double c, int64_t tp, GemmTime&& gemm_time,
                    double* exposed) {
  const double under = AsyncTpHidden(ops, i, c, tp, gemm_time);
  *exposed += c - under;
  return under;
}

// Transformer Engine's userbuffers (tp_overlap full with sequence parallelism, tp > 1): the four
// linear layers' sequence-parallel collectives (the all-gathers before qkv and fc1, the
// reduce-scatters after proj and fc2, and their backward conjugates) run inside one GEMM of their
// own and nothing else (transformer_engine/pytorch/module/base.py initialize_ub's default methods
// at v2.9; comm_gemm_overlap.cpp at d0067d0d):
//   ring exchange (the forward and recomputed all-gathers before qkv and fc1; the backward
//     all-gathers of proj's and fc2's output gradient before their input-gradient GEMM): the GEMM
//     runs in tp chunks, each on the shard at hand while the next arrives (split_overlap_ag), so
//     the first chunk is local and G (t - 1)/t of the GEMM can hide the collective C: the pair
//     takes max(G, C + G/t);
//   pipeline (the forward and recomputed reduce-scatters after proj and fc2 in 16 bits, num_splits
//     4): the GEMM runs in 4 chunks and each chunk's reduce-scatter follows it on the communication
//     stream (split_overlap_rs), so the last chunk's waits for nothing but is waited for: the pair takes
//     G/4 + max(3G/4, 3C/4) + C/4, i.e. hides min(C, G) x 3/4. Under FP8 (and NVFP4) those
//     reduce-scatters are a ring exchange instead (split_overlap_rs_p2p: each of the tp GEMM chunks'
//     partial sums sent on while the next chunk runs, the local one last), hiding min(C, G (t - 1)/t),
//     as Megatron-Bridge's tuned configurations set them: proj_fprop and fc2_fprop
//     RingExchangeOverlapCfg in 7 of its 8 FP8 pretraining configurations, PipelineOverlapCfg for
//     both in 3 of its 4 BF16 ones on H100 (src/megatron/bridge/training/comm_overlap.py at v0.2.0
//     and v0.6.0);
//   bulk (the backward all-gather of qkv's and fc1's input for their weight gradient beside the
//     input-gradient GEMM; that GEMM's reduce-scatter beside the weight-gradient GEMM): the whole
//     collective runs beside the whole GEMM (bulk_overlap), hiding min(C, G).
// The partner: the next GEMM of the pass for an all-gather's ring exchange, the previous one for
// a reduce-scatter or a bulk overlap (the step graph's order: core/step_graph.cc). The collectives are those the
// step graph marks (core::Op::userbuffers); other TP collectives (the embedding's, the output
// layer's, Mamba's, the shared experts' and MLA's input gather) keep the pass rule. Tuned
// configurations (Megatron-Bridge's comm_overlap.py, MLPerf's tp_overlap yamls) set other methods
// or split counts per layer; TE's defaults are what a run that names none gets.
enum class UbMethod { kNone, kRingExchange, kPipeline, kBulk };
inline constexpr int64_t kUserbufferPipelineSplits = 4;
inline UbMethod UserbufferMethod(const core::Op& op, const core::PlanSpec& p) {
  if (!op.userbuffers || p.tp_overlap != core::TpOverlap::kFull || !p.sequence_parallel || p.tp <= 1 ||
      op.kind != core::OpKind::kCollective)
    return UbMethod::kNone;
  const bool gather = op.collective == core::CollectiveKind::kAllGather;
  const bool scatter = op.collective == core::CollectiveKind::kReduceScatter;
  switch (op.pass) {
    case core::Pass::kForward:
    case core::Pass::kRecompute:  // the recomputed forward runs the same modules
      if (gather) return UbMethod::kRingExchange;
      if (!scatter) return UbMethod::kNone;
      return core::Quantized(p.precision) ? UbMethod::kRingExchange : UbMethod::kPipeline;
    case core::Pass::kBackwardInput:
      return gather ? (op.overlappable ? UbMethod::kBulk : UbMethod::kRingExchange) : UbMethod::kNone;
    case core::Pass::kBackwardWeight: return scatter ? UbMethod::kBulk : UbMethod::kNone;
    default: return UbMethod::kNone;
  }
}
inline const char* Name(UbMethod m) {
  switch (m) {
    case UbMethod::kRingExchange: return "ring exchange";
    case UbMethod::kPipeline: return "pipeline";
    case UbMethod::kBulk: return "bulk";
    default: return "none";
  }
}
// The part of `c` (ops[i]'s time) its userbuffers GEMM hides, by the method's rule above.
template <class GemmTime>
double UserbufferHidden(const std::vector<core::Op>& ops, size_t i, double c, UbMethod method, int64_t tp,
                        GemmTime&& gemm_time) {
  const bool ahead = method == UbMethod::kRingExchange && ops[i].collective == core::CollectiveKind::kAllGather;
  const double g = PartnerGemmTime(ops, i, ahead, gemm_time);
  switch (method) {
    case UbMethod::kRingExchange: {
      const double t = static_cast<double>(std::max<int64_t>(tp, 1));
      return std::min(c, g * (t - 1) / t);
    }
    case UbMethod::kPipeline: {
      const double n = static_cast<double>(kUserbufferPipelineSplits);
      return std::min(c, g) * (n - 1) / n;
    }
    case UbMethod::kBulk: return std::min(c, g);
    default: return c;
  }
}

// A TP collective that hides only beside its own GEMM: AsyncTP's fused ones and Transformer
// Engine's userbuffers. TpPairedSplit adds the part of `c` its GEMM cannot hide to `*exposed` and
// returns the hidden part; TpPairing names the pairing (nullptr: the pass rule).
inline const char* TpPairing(const core::Op& op, const core::PlanSpec& p) {
  if (AsyncTpFused(op, p)) return "AsyncTP";
  switch (UserbufferMethod(op, p)) {
    case UbMethod::kRingExchange: return "userbuffers ring exchange";
    case UbMethod::kPipeline: return "userbuffers pipeline";
    case UbMethod::kBulk: return "userbuffers bulk";
    default: return nullptr;
  }
}
template <class GemmTime>
double TpPairedHidden(const std::vector<core::Op>& ops, size_t i, double c, const core::PlanSpec& p,
                      GemmTime&& gemm_time) {
  if (AsyncTpFused(ops[i], p)) return AsyncTpHidden(ops, i, c, p.tp, gemm_time);
  return UserbufferHidden(ops, i, c, UserbufferMethod(ops[i], p), p.tp, gemm_time);
}
template <class GemmTime>
double TpPairedSplit(const std::vector<core::Op>& ops, size_t i, double c, const core::PlanSpec& p,
                     GemmTime&& gemm_time, double* exposed) {
  const double under = TpPairedHidden(ops, i, c, p, gemm_time);
  *exposed += c - under;
  return under;
}

// Pipeline sends a rank's StageTimes hold per microbatch in each direction: one per model chunk
// the rank runs (interleaved: vpp; DualPipe: its two stages; otherwise one).
double SendsPerMicrobatch(const core::PlanSpec& p);

// The pace of a synchronous job's slowest GPU relative to a typical one: 1 + spread x E[max of n
// standard normals], the expectation by Blom's approximation, Phi^-1((n - 0.375) / (n + 0.25))
// (Blom 1958; 4.5% above the exact expectation at n = 2, within 1% from n = 8). Every GPU of a data-, tensor-,
// pipeline- or context-parallel job waits for the others at least once per step, so the step
// runs at the slowest one's speed; `spread` is the relative standard deviation of one GPU's
// sustained speed (core::GpuSpec::speed_spread). 1 for one GPU or spread 0.
double SlowestGpuPace(int64_t gpus, double spread);
// The plan's GPUs (tp x cp x pp x dp) of `g`: SlowestGpuPace's factor for its compute.
double SlowestGpuPace(const core::PlanSpec& p, const core::GpuSpec& g);

// One pipeline send as every pass charges it (per model chunk and direction): half the pacing
// rank's per-microbatch time on its neighbour links (core::PipelineLinkPace, docs/collectives.md
// 4.7), each link the send's message at the tier it crosses (ProfiledCollectiveTime on a pair inside
// one scale-up domain or across two). 0 with one stage. `pace`, when given, receives the rank's
// link counts.
double PipelineSendSeconds(const core::Op& send, const core::PlanSpec& p, const core::ClusterSpec& c,
                           const core::Profile& prof, core::PipelinePace* pace = nullptr);

// Overlap slows the compute beside it (docs/compute.md): a collective hidden under compute takes
// GPU resources from it, so for each second the collective runs beside the compute, the compute
// loses this fraction of a second of progress. NCCL's kernels: Lee et al. 2025 ("Characterizing
// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning", arXiv 2507.03114:
// compute beside a collective takes on average 18.9% longer, A100 and H100, GPT and Llama
// training), 1 - 1/1.189. Under full TP overlap with SP a layer's linear layers' TP collectives
// run on Transformer Engine userbuffers instead (transformer_engine/pytorch/module/base.py,
// initialize_ub's default methods and get_default_config), whose communication kernels hold SMs
// beside the GEMM while the collective runs: 1 for "ring_exchange" (the copy engines move the
// data: the forward all-gathers before qkv and fc1, as the recompute reruns them, and the backward
// all-gathers of proj's and fc2's output gradient, the blocking conjugates of their forward
// reduce-scatters) and 16 for "pipeline" and "bulk" (the forward reduce-scatters after proj and
// fc2, the backward reduce-scatter of qkv's and fc1's input gradient and the overlappable
// all-gather of their input for the weight gradient): TE's default before 2.0 (v1.9 to v1.13:
// num_sm 16, set_sm_margin False). Not modelled (docs/compute.md): TE 2.0's default
// (544dd14b4, 2025-02-07) sets set_sm_margin for pipeline and bulk, which runs the paired GEMM
// on SMs - 16 for its whole duration (comm_gemm_overlap.cpp _math_sms at d0067d0d), and tuned
// configurations (NeMo's, Megatron-Bridge's comm_overlap.py, MLPerf's conf/tp_overlap/*.yaml)
// set each layer's own. 0 on a GPU whose SM count is unknown. `layer`: the op is a transformer
// layer's (not the embedding's, the head's or the MTP module's, which stay NCCL's).
// AsyncTP's fused collectives (tp_overlap async) move their shards by copies from the peers'
// symmetric memory (Tensor.copy_, which PyTorch runs on the copy engines: the NOTE [low-contention
// collectives] of torch/distributed/_symmetric_memory/__init__.py at 006b161f) and synchronise by
// one-block barrier kernels, so they hold no SMs from the GEMM chunks beside them: 0 (their own
// copy and sum kernels are costed, exposed: core/step_graph.cc AsyncTpKernels).
inline constexpr double kNcclOverlapSlowdown = 1.0 - 1.0 / 1.189;
inline constexpr int64_t kUserbufferSms = 16;
inline double OverlapSlowdown(const core::Op& op, const core::PlanSpec& p, const core::GpuSpec& g, bool layer) {
  if (op.group == core::CommGroup::kTp && p.tp_overlap == core::TpOverlap::kAsync) return 0.0;
  if (!layer || op.group != core::CommGroup::kTp || p.tp_overlap != core::TpOverlap::kFull || !p.sequence_parallel ||
      p.tp <= 1)
    return kNcclOverlapSlowdown;
  if (g.sms <= 0) return 0.0;
  const bool all_gather = op.collective == core::CollectiveKind::kAllGather;
  const bool ring_exchange = (op.pass == core::Pass::kForward || op.pass == core::Pass::kRecompute)
                                 ? all_gather
                                 : op.pass == core::Pass::kBackwardInput && all_gather && !op.overlappable;
  return std::min(1.0, (ring_exchange ? 1.0 : static_cast<double>(kUserbufferSms)) / static_cast<double>(g.sms));
}
// The time NCCL's slowdown adds to a window of `window_s` compute with a collective of `comm_s`
// run under it: max(comm, window + s x comm) - max(comm, window), i.e. s x comm less what spills
// past the window (0 without a window: nothing runs beside it).
double OverlapExtra(double comm_s, double window_s);
// The step-level part, for a rank with per-microbatch times `t`: its gradient synchronisation
// (`grad_sync_s`) under one microbatch's backward when overlap_grad_reduce, its ZeRO-1/2 parameter
// gather (`param_gather_s`) under one forward when overlap_param_gather (the step model and the
// DES alike).
double StepOverlapSlowdown(const core::PlanSpec& p, const StageTimes& t, double grad_sync_s, double param_gather_s);
// A MoE layer's blocks as Megatron-Core's EP overlap (plan.ep_overlap) runs them: its schedule
// merges one microbatch's forward of a layer with another's backward of a layer
// (TransformerLayerSchedulePlan.run, megatron/core/models/common/model_chunk_schedule_plan.py at
// 6cd6ea530e), each layer cut into four nodes (fine_grained_callables.py at 6cd6ea530e): the
// pre-dispatch computation (attention, the pre-MLP norm, the router, the dispatcher's preprocessing
// and the shared experts), the dispatch all-to-all, the MLP (the local permutations and the
// experts) and the combine (the all-to-all, the unpermutation and the residual), the two
// communication nodes on a stream of their own. Times of one microbatch's layer (MergedEpPeriod).
struct MergedEp {
  // The compute stream's blocks: forward, input gradient (with what the recomputation reruns of
  // them) and weight gradient.
  double pre_f = 0, pre_b = 0, pre_w = 0, mlp_f = 0, mlp_b = 0, mlp_w = 0;
  // The communication stream's: the all-to-alls, and the combine node's kernels (forward, and
  // backward with any weight gradient of theirs). Those kernels share the GPU with the compute
  // stream's beside them (a memory-bound unpermutation beside attention's or the GEMMs' kernels,
  // which hold every SM): their time is charged to both streams, the compute stream's in the block
  // they run beside (MergedEpPeriod), so that no kernel's time vanishes by running on another stream.
  double dispatch_f = 0, combine_f = 0, post_f = 0, dispatch_b = 0, combine_b = 0, post_b = 0;
  double slow = 0;  // sum of OverlapSlowdown x all-to-all time
  bool active = false, delay_wgrad = false;
  void Add(const MergedEp& o) {
    pre_f += o.pre_f, pre_b += o.pre_b, pre_w += o.pre_w, mlp_f += o.mlp_f, mlp_b += o.mlp_b, mlp_w += o.mlp_w;
    dispatch_f += o.dispatch_f, combine_f += o.combine_f, post_f += o.post_f;
    dispatch_b += o.dispatch_b, combine_b += o.combine_b, post_b += o.post_b;
    slow += o.slow;
    active = active || o.active;
    delay_wgrad = delay_wgrad || o.delay_wgrad;
  }
  double Compute() const { return pre_f + pre_b + pre_w + mlp_f + mlp_b + mlp_w + post_f + post_b; }
  double ForwardComm() const { return dispatch_f + combine_f + post_f; }
  double Comm() const { return ForwardComm() + dispatch_b + combine_b + post_b; }
};

// The time one merged layer adds in the steady state of MergedEp's schedule: two streams, each
// running its nodes in the order the host queues them, each node starting once its stream is free
// and its input is ready (TransformerLayerSchedulePlan.run at 6cd6ea530e, forward layer f of
// microbatch i + 1 beside backward layer b of microbatch i):
//   communication: combine_b | dispatch_f            -> dispatch_b | combine_f
//   compute:       pre_f     | mlp_b -> mlp_w        -> mlp_f      | pre_b -> pre_w
// (the combine nodes' kernels, post_b and post_f, also charged to the compute stream beside them:
// post_b with pre_f, post_f with pre_b);
// combine_b waits for the previous merged layer's backward (the layer above's input gradient:
// pre_b with delay_wgrad, else pre_w, the node's backward computing both), pre_f for its
// combine_f (the layer below's output), mlp_b for combine_b, dispatch_f for pre_f, dispatch_b for mlp_b (with
// delay_wgrad) or mlp_w (without it the MLP node's backward computes both), mlp_f for dispatch_f,
// combine_f for mlp_f, pre_b for dispatch_b. Identical layers make a max-plus recurrence whose
// growth per layer settles within a few layers: the mean over layers 3 to 6.
double MergedEpPeriod(const MergedEp& e);
// Whether a plan's MoE layers run MergedEp's schedule: Megatron-Core's EP overlap with EP > 1
// (DualPipe's all-to-alls keep the pass rule).
inline bool MergedEpSchedule(const core::PlanSpec& p) {
  return p.ep_overlap && p.ep > 1 && p.schedule != core::Schedule::kDualPipe;
}

// Under Megatron-Core's EP overlap, the share of a rank's forward (and as many backward) chunk
// passes a step runs unmerged: its schedule merges a forward with a backward only in the steady
// state. Without pipelining the first microbatch's forward and the last one's backward run alone
// (combined_1f1b_schedule_for_no_pipelining); interleaved, rank r's warm-up forwards, (p - r - 1) x 2
// + (v - 1) x p and one more under the overlap, and as many cool-down backwards
// (forward_backward_pipelining_with_interleaving, schedules.py at 6cd6ea530e), of m x v chunk passes
// a flush, each rank's share capped at all of them (with few microbatches the warm-up is the whole
// flush and nothing merges); 1F1B (which Megatron-Core refuses with the overlap) its p - r - 1
// warm-up forwards and the one more. The mean over the pipeline's ranks (each stage's own share is
// not carried to the pipeline model).
double EpOverlapUnmergedShare(const core::PlanSpec& p);

// How the step model and the DES sort a step's (Pass::kStep) collectives. The ZeRO-1/2 all-gather
// of the updated parameters (the step's only all-gather: core/step_graph.cc ParamSync), which
// overlaps the next step's first forward; a tied embedding's all-reduce over the pipeline's ends
// (TiedEmbeddingSync), blocking, after the gradient reduction; the others are the gradient
// reduction, under the last microbatch's backward (StepOverlapSlowdown).
inline bool IsParamGather(const core::Op& op) { return op.collective == core::CollectiveKind::kAllGather; }
inline bool IsTiedEmbeddingSync(const core::Op& op) { return op.group == core::CommGroup::kPpEnds; }
// Whether the plan overlaps a step collective with compute: the gather with overlap_param_gather,
// the gradient reduction with overlap_grad_reduce, a tied embedding's all-reduce never. The word
// embedding's own still hide under nothing (EmbeddingTail in step_model.cc).
inline bool StepSyncOverlapped(const core::Op& op, const core::PlanSpec& p) {
  return !IsTiedEmbeddingSync(op) && (IsParamGather(op) ? p.overlap_param_gather : p.overlap_grad_reduce);
}

// Time of one compute op (GEMM, attention, memory-bound, optimizer) on `g` under `profile`.
double ComputeOpTime(const core::Op& op, const core::GpuSpec& g, const core::Profile& profile);
// The share of its host's DRAM peak DeepSpeed's CPU Adam streams at, measured: DeepSpeed's
// ZeRO-Offload tutorial (docs/_tutorials/zero-offload.md, its training-log screenshot
// docs/assets/images/zero_offload_dp1_10B_log.png at 38327e07f) trains a 10B GPT-2 (50 layers,
// hidden 4,096: 10,279,239,680 parameters with its 50,304-row embedding and 1,024 positions) on one
// V100-SXM3 of a DGX-2, its optimizer_step timer 6,478.57 and 6,217.36 ms: 1.619e9 parameters/s,
// 45.34 GB/s at DeepSpeedCPUAdam's 28 B a parameter, of the DGX-2 host's 255.9 GB/s (2 Xeon
// Platinum 8168 of six DDR4-2666 channels each; the tutorial's htop screenshot shows the host's 48
// CPUs and 1.47 TB): 0.177. One host's figure, applied to every host's peak.
inline constexpr double kHostAdamDramShare = 0.177;
// The rate the host's optimizer streams host memory at, the node's whole: kHostAdamDramShare of its
// memory bandwidth (0 where the cluster does not give it).
inline double HostAdamBytesPerS(const core::ClusterSpec& c) { return c.host_memory_bytes_per_s * kHostAdamDramShare; }
// The plan's processes on one node, whose host optimizers share its memory: min(gpus, gpus_per_node).
inline int64_t HostRanksPerNode(const core::PlanSpec& p, const core::ClusterSpec& c) {
  return std::clamp<int64_t>(std::min(p.gpus, c.gpus_per_node), 1, int64_t{1} << 20);
}
// An op whose bytes move off the GPU (core::OpSite, ZeRO-Offload's step): a copy over the GPU's
// host link at its rate per direction (a lower bound), or the host CPUs' optimizer pass over host
// memory at kHostAdamDramShare of the node's memory bandwidth, shared by the plan's processes on
// the node (min(gpus, gpus_per_node)). 0 for an op on the GPU (ComputeOpTime costs those).
double HostOpTime(const core::Op& op, const core::GpuSpec& g, const core::ClusterSpec& c, const core::PlanSpec& p);
// Wave quantization (NVIDIA's Matrix Multiplication Background guide §3.2; the rule
// mamf-finder.py's wave_efficiency applies to the shapes behind the GPU presets' GEMM
// efficiencies, ml-engineering 082816f9be8a): the output is cut into tiles of 128 x 256, `sms` of
// them run at once, and a partial last wave costs a whole one. The fraction of the waves' capacity
// the GEMM fills, blocks / (ceil(blocks / sms) x sms), from one full wave up (batched GEMMs' tiles
// share the waves); 1 under one wave, for a GPU without `sms`, or one whose
// `gemm_wave_quantization` is false (Hopper: measured, docs/compute.md).
inline constexpr int64_t kGemmTileRows = 128, kGemmTileCols = 256;
double GemmWaveEfficiency(const core::Op& op, const core::GpuSpec& g);
// A 16-bit GEMM whose feature widths (n or k: the leading dimensions of the framework's row-major
// operands, in every pass) are not multiples of 8 elements runs at `g`'s
// gemm_misaligned_efficiency (even, or odd where one width is odd) of the aligned speed; 1
// otherwise, for other dtypes (not measured) and for a GPU without the measurement.
double GemmAlignmentEfficiency(const core::Op& op, const core::GpuSpec& g);
// The factor on a GEMM's compute time from the length of its reduction, k (the forward's k, the
// input gradient's n, the weight gradient's m): (k + K0) / k x R / (R + K0) with K0 `g`'s
// gemm_k_overhead for the op's dtype and R its gemm_reference_k, where the GPU's sustained
// efficiency was taken; 1 for a dtype or GPU without the measurement.
double GemmReductionCost(const core::Op& op, const core::GpuSpec& g);
// One GEMM instance's two roofline sides, as ComputeOpTime costs them: compute at the dtype's peak x
// efficiency (with the wave fraction and the F_half ramp), and A, B and C at HBM speed x the
// profile's hbm_efficiency. The op takes batch x the larger (at least the kernel overhead t_k
// each where every instance is a kernel of its own, Op::instance_kernels), plus t_k once.
// full_rate_s is the compute side at the full efficiency alone (no ramp, no partial wave).
struct GemmRoofline {
  double compute_s = 0;
  double memory_s = 0;
  double full_rate_s = 0;
};
GemmRoofline GemmSides(const core::Op& op, const core::GpuSpec& g, const core::Profile& profile);
// The achieved fraction of `g`'s dense peak for a large GEMM in dtype `d`: the profile's when it
// measured one (Profile::gemm_efficiency_measured), else the GPU preset's sustained figure
// (GpuSpec::gemm_efficiency, from a public measurement), else the profile's default (0.8 when
// the dtype is not listed).
double GemmEfficiency(const core::Profile& profile, const core::GpuSpec& g, core::Dtype d);

// The host time of one MoE layer and microbatch, forward and backward (PlanSpec::moe_host;
// docs/compute.md, "The MoE layer's host time"): Megatron-Core's MoE layer, measured host-bound
// on three lent H200 machines (tests/data/gpu/h200-2026-11-30/megatron_moe*.json, SequentialMLP
// experts of 2,048 x 768: with 16 local experts 12 runs, forward median 8.532 ms, forward +
// backward 19.389; with 4, 8 runs, 4.125 and 8.628). Per expert run one after another
// (moe_grouped_gemm off) (8.532 - 4.125) / 12 = 0.367 ms forward and (19.389 - 8.628) / 12 -
// 0.367 = 0.530 ms backward; the rest, the router, the dispatcher and its synchronisation, 4.125 -
// 4 x 0.367 = 2.656 ms forward and 8.628 - 4 x 0.897 - 2.656 = 2.385 ms backward. Under Transformer
// Engine's grouped GEMM (moe_grouped_gemm with transformer_engine: TEGroupedMLP's GroupedLinear)
// each local expert's GEMM is still a cuBLASLt call of its own, issued from the host one after
// another (nvte_multi_stream_cublas_gemm loops over the GEMMs, and cublas_gemm creates the matmul
// descriptor, the matrix layouts and the preference and queries cublasLtMatmulAlgoGetHeuristic on
// every call: transformer_engine/common/gemm/cublaslt_gemm.cu at v2.9, v2.12 and v2.17.1, no plan
// cache), kTeGroupedGemmHostPerGemmS each: 2 GEMMs an expert forward (fc1, fc2), 4 backward (their
// input and weight gradients). A grouped GEMM without Transformer Engine (one CUTLASS kernel)
// counts 0; the host time of the layer's other blocks is not counted either (a lower bound). The
// step model (HostWait) sets the forward host time against the MoE block's kernels after the
// dispatcher's device-to-host synchronisation alone, since the host queues them only once every
// kernel before it has run (measured on Megatron-Core's whole layer, megatron_layer*.json), and the
// backward host time against the whole backward. Zero without MoE, under capacity-factor token
// dropping, or with moe_host none. For a hybrid model, per mixed layer: times the MoE layers' share
// of its layers.
struct MoeHostTime {
  double forward_s = 0, backward_s = 0;
  double Total() const { return forward_s + backward_s; }
};
inline constexpr double kMoeHostForwardBaseS = 2.656e-3, kMoeHostForwardPerExpertS = 0.367e-3;
inline constexpr double kMoeHostBackwardBaseS = 2.385e-3, kMoeHostBackwardPerExpertS = 0.530e-3;
// The host time of one cuBLASLt GEMM whose descriptors and algorithm are built for the call, from
// entering the wrapper to the kernel's launch: about 10 us, against 5 with them memoized (RAPIDS
// RAFT's measurement, NVIDIA/raft PR #1736, 2023-08: "approx 10us -> 5us, as measured by NVTX from
// entering matmul wrapper on the host to the launch of the kernel").
inline constexpr double kTeGroupedGemmHostPerGemmS = 10e-6;
// Whether a plan's MoE experts run as Transformer Engine's GroupedLinear, whose per-expert
// cuBLASLt calls MoeLayerHostTime counts (moe_grouped_gemm with transformer_engine).
inline bool TeGroupedGemmHost(const core::PlanSpec& p) { return p.moe_grouped_gemm && p.transformer_engine; }
MoeHostTime MoeLayerHostTime(const core::ModelSpec& m, const core::PlanSpec& p);
// FP8 delayed scaling's amax reductions. Transformer Engine's DelayedScaling reduces each FP8
// tensor's amax across the fp8_autocast's group: leaving the autocast concatenates the forward
// amaxes and all-reduces them (op MAX, async_op=False: the compute stream waits for it;
// transformer_engine/pytorch/fp8.py FP8GlobalStateManager.fp8_autocast_exit ->
// reduce_and_update_fp8_tensors(forward=True) -> reduce_tensor_across_group_op_max, the same at TE
// v1.10, v1.13, v2.0, v2.1 and quantization.py at v2.9), and the backward of the region's first
// module the backward ones (module/linear.py, layernorm_linear.py, grouped_linear.py:
// reduce_and_update_bwd_fp8_tensors). Megatron-Core wraps a TransformerBlock's whole forward in one
// fp8_autocast under delayed scaling (transformer_block.py: use_outer_quantization_context at
// d98e8a64, the block's fp8_context at core_r0.10.0) with the group TP x DP x CP
// (parallel_state.get_amax_reduction_group(with_context_parallel=True)): two small all-reduces
// over a pipeline stage's ranks per microbatch and model chunk. Current and block scaling keep no
// amax history and reduce nothing here. Zero unless precision fp8, fp8_scaling delayed and
// transformer_engine (torchao's float8 scales dynamically), or for a stage of one rank. Seconds of
// one forward and one backward reduction.
struct AmaxReduction {
  double forward_s = 0, backward_s = 0;
};
AmaxReduction AmaxReductionTime(const core::PlanSpec& p, const core::ClusterSpec& c);
// Its forward and backward together.
inline double MoeLayerHostFloor(const core::ModelSpec& m, const core::PlanSpec& p) {
  return MoeLayerHostTime(m, p).Total();
}
// The achieved fraction of the 16-bit peak for fused attention kernel `impl` (forward, or
// backward) at head dim `head_dim` and `seq` queries per sequence: the profile's when it measured
// them (Profile::attention_efficiency_measured), else the GPU preset's measured curve for that
// kernel (GpuSpec::attention_curve: AttentionCurveEfficiency at the head dim the kernel computes,
// AttentionKernelHeadDim, times the share of it the model's head dim uses), else its fixed figure
// (GpuSpec::attention_efficiency), else the profile's.
double AttentionEfficiency(const core::Profile& profile, const core::GpuSpec& g, core::AttentionImpl impl,
                           bool backward, int64_t head_dim, int64_t seq);
// What a step's cost takes from the profile's assumed figures because neither the profile nor
// the GPU preset measured it (docs/compute.md, the defaults table), one sentence each for
// report's and explain's "default:" lines: the GEMM efficiency of each dtype the plan's step
// graph (core::BuildStepGraph) runs GEMMs in, and each fused attention kernel's speed; and where a
// measured attention curve is read beyond its points (a sequence or head dim it did not measure,
// which takes its end value). Empty when everything the graph runs has a measured figure inside
// its range (the A100s' GEMMs take the 0.80). REQUIRES: the plan passed ValidatePlan with the model.
std::vector<std::string> AssumedRates(const core::Profile& profile, const core::GpuSpec& g, const core::ModelSpec& m,
                                      const core::PlanSpec& plan);
// A measured curve's forward + backward speed over g's bf16 peak: linear in log2(seq) between
// the measured sequence lengths and linear in the head dim between the measured head dims, the
// nearest measured value beyond either end (docs/compute.md).
double AttentionCurveEfficiency(const core::GpuSpec& g, const std::vector<core::GpuSpec::AttentionPoint>& points,
                                int64_t head_dim, int64_t seq);
// The head dim kernel `impl` computes at for a head dim of `head_dim`, where its source pads it:
// FlashAttention-2 runs the smallest of its compiled head dims (32, 64, 96, 128, 160, 192, 224,
// 256) that holds it (csrc/flash_attn/src/static_switch.h HEADDIM_SWITCH, v2.0.0 to v2.6.x), the
// Triton kernel the next power of two (flash_attn/flash_attn_triton.py: BLOCK_HEADDIM =
// max(triton.next_power_of_2(d), 16)); head_dim itself for the kernels whose padding is not read.
int64_t AttentionKernelHeadDim(core::AttentionImpl impl, int64_t head_dim);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_STEP_MODEL_H_
