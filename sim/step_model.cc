#include "sim/step_model.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/collectives.h"
#include "core/flops.h"
#include "core/memory.h"
#include "core/params.h"

namespace meshplan::sim {

using core::CommGroup;
using core::Op;
using core::OpKind;
using core::Pass;

// (MergedEp's schedule, step_model.h.)
double MergedEpPeriod(const MergedEp& e) {
  double comm = 0, comp = 0, grad = 0, input = 0;  // the streams free; the backward's and forward's inputs ready
  double end[7] = {};
  for (int layer = 1; layer <= 6; ++layer) {
    const double combine_b = std::max(comm, grad) + e.combine_b + e.post_b;
    const double pre_f = std::max(comp, input) + e.pre_f + e.post_b;
    const double mlp_b = std::max(pre_f, combine_b) + e.mlp_b;
    const double mlp_w = mlp_b + e.mlp_w;
    const double dispatch_f = std::max(combine_b, pre_f) + e.dispatch_f;
    const double dispatch_b = std::max(dispatch_f, e.delay_wgrad ? mlp_b : mlp_w) + e.dispatch_b;
    const double mlp_f = std::max(mlp_w, dispatch_f) + e.mlp_f;
    const double combine_f = std::max(dispatch_b, mlp_f) + e.combine_f + e.post_f;
    const double pre_b = std::max(mlp_f, dispatch_b) + e.pre_b + e.post_f;
    const double pre_w = pre_b + e.pre_w;
    comm = combine_f;
    comp = pre_w;
    grad = e.delay_wgrad ? pre_b : pre_w;
    input = combine_f;
    end[layer] = std::max(comm, comp);
  }
  return (end[6] - end[2]) / 4;
}

// (step_model.h.)
double EpOverlapUnmergedShare(const core::PlanSpec& p) {
  if (!MergedEpSchedule(p)) return 0.0;
  const double m = static_cast<double>(std::max<int64_t>(1, p.MicrobatchesPerFlush()));
  const double pp = static_cast<double>(std::max<int64_t>(1, p.pp));
  const double v = p.schedule == core::Schedule::kInterleaved ? static_cast<double>(std::max<int64_t>(1, p.vpp)) : 1.0;
  if (p.pp <= 1) return std::min(1.0, 1.0 / m);
  double share = 0;
  for (int64_t r = 0; r < p.pp; ++r) {
    const double rest = static_cast<double>(p.pp - r - 1);
    const double warmup = v > 1 ? 2 * rest + (v - 1) * pp + 1 : rest + 1;
    share += std::min(1.0, warmup / (m * v));
  }
  return share / pp;
}

namespace {

double Peak(const core::GpuSpec& g, core::Dtype d) {
  if (auto it = g.peak_flops_per_s.find(d); it != g.peak_flops_per_s.end()) return it->second;
  for (core::Dtype f : {core::Dtype::kBf16, core::Dtype::kFp16, core::Dtype::kFp32})
    if (auto it = g.peak_flops_per_s.find(f); it != g.peak_flops_per_s.end()) return it->second;
  return g.peak_flops_per_s.begin()->second;
}

// The per-dtype figures ComputeOpTime reads from the GPU's and profile's maps, each looked up on
// first use: the Coster keeps one per plan for its few dozen ops, a lone call a fresh one.
class OpRates {
 public:
  double PeakOf(const core::GpuSpec& g, core::Dtype d) {
    const auto i = static_cast<size_t>(d);
    if (!have_peak_[i]) {
      peak_[i] = Peak(g, d);
      have_peak_[i] = true;
    }
    return peak_[i];
  }
  // Peak(d) x GemmEfficiency(d): the GEMM rate before the small-GEMM ramp and wave quantization.
  double GemmRate(const core::GpuSpec& g, const core::Profile& prof, core::Dtype d) {
    const auto i = static_cast<size_t>(d);
    if (!have_rate_[i]) {
      const double eff = GemmEfficiency(prof, g, d);
      rate_[i] = PeakOf(g, d) * eff;
      have_rate_[i] = true;
    }
    return rate_[i];
  }
  // The GPU's gemm_k_overhead for d; 0 where it lists none.
  double KOverhead(const core::GpuSpec& g, core::Dtype d) {
    const auto i = static_cast<size_t>(d);
    if (!have_k0_[i]) {
      const auto it = g.gemm_k_overhead.find(d);
      k0_[i] = it == g.gemm_k_overhead.end() ? 0.0 : it->second;
      have_k0_[i] = true;
    }
    return k0_[i];
  }

 private:
  static constexpr size_t kDtypes = core::kDtypeCount;
  std::array<double, kDtypes> peak_{}, rate_{}, k0_{};
  std::array<bool, kDtypes> have_peak_{}, have_rate_{}, have_k0_{};
};

// GemmReductionCost with the dtype's K0 looked up (0: none) and the GPU's reference reduction
// (GpuSpec::gemm_reference_k, where its sustained efficiencies were measured).
double ReductionCostWith(const Op& op, double k0, double ref) {
  if (op.kind != OpKind::kGemm || !(k0 > 0)) return 1.0;
  // The reduction of each pass's product: the forward's k; the input gradient dX = dY W^T reduces
  // over n; the weight gradient dW = X^T dY over m.
  const int64_t k = op.pass == Pass::kBackwardInput ? op.n : op.pass == Pass::kBackwardWeight ? op.m : op.k;
  if (k <= 0) return 1.0;
  return (static_cast<double>(k) + k0) / static_cast<double>(k) * ref / (ref + k0);
}

double ComputeOpTimeWith(const Op& op, const core::GpuSpec& g, const core::Profile& prof, OpRates* rates);

// Costed ops of one list, grouped by pass.
struct PassCost {
  double compute = 0;
  double attention = 0;  // the core-attention part of `compute`: all a CP ring exchange can hide under
  std::array<double, core::kCommGroups> blocking{};  // exposed collective time by CommGroup
  std::array<double, core::kCommGroups> hidden{};    // overlappable collective time by CommGroup
  double slow = 0, slow_cp = 0;  // of `hidden` (other groups', CP's) x OverlapSlowdown: the compute it slows
  // Of `compute` and `blocking`: the MoE block's ops after its dispatcher's synchronisation
  // (Op::after_moe_sync), the only GPU work its forward host time can run beside (HostWait).
  double after_sync = 0;
  // The groups whose `blocking` or `hidden` time was added to, bit CommGroup: the others are zero
  // (most passes of most lists carry no communication), so the overlap rule visits only these.
  uint32_t groups = 0;
};
static_assert(core::kCommGroups <= 32, "PassCost::groups holds one bit per CommGroup");
// One microbatch of a finished list as a rank adds it (Accumulate): the passes' times as
// StageTimes holds them (recompute runs inside the backward pass), the compute and recompute parts
// of the breakdown, and the exposed communication by group over the passes (with the compute the
// hidden collectives slow, also per pass in slowdown_s). Small (23 doubles): it is what the cache
// keeps per plan.
struct ListTotals {
  double forward_s = 0, backward_input_s = 0, backward_weight_s = 0, compute_s = 0, recompute_s = 0;
  double forward_after_sync_s = 0;  // of forward_s: the MoE block's after its synchronisation (PassCost)
  // The recomputed forward's time (in backward_input_s) and, of it, the MoE block's after the
  // dispatcher's synchronisation (HostWait: when the recomputation reruns the dispatcher).
  double recompute_pass_s = 0, recompute_after_sync_s = 0;
  std::array<double, 3> slowdown_s{};  // forward, backward input (with recompute), backward weight
  std::array<double, core::kCommGroups> exposed_s{};
  // Under Megatron-Core's EP overlap (MergedEp): what a forward and a backward pass that run
  // unmerged (the warm-up's and the cool-down's, EpOverlapUnmergedShare) take beyond the merged
  // ones, their all-to-alls blocking instead of the merged schedule's exposed share.
  double unmerged_forward_s = 0, unmerged_backward_s = 0;
};
struct ListCost {
  // By core::Pass, the four that repeat per microbatch; once-per-step work (Pass::kStep) is
  // costed apart (Coster::Add's StepWork).
  std::array<PassCost, 4> pass;
  MergedEp ep;  // a MoE layer's under Megatron-Core's EP overlap (Coster::AddMergedEp); else inactive
  void AddPasses(const ListCost& o) {
    for (size_t ps = 0; ps < pass.size(); ++ps) {
      pass[ps].compute += o.pass[ps].compute;
      pass[ps].attention += o.pass[ps].attention;
      pass[ps].after_sync += o.pass[ps].after_sync;
      if (!o.pass[ps].groups) continue;
      pass[ps].groups |= o.pass[ps].groups;
      for (uint32_t bits = o.pass[ps].groups; bits; bits &= bits - 1) {
        const int g = std::countr_zero(bits);
        pass[ps].blocking[g] += o.pass[ps].blocking[g];
        pass[ps].hidden[g] += o.pass[ps].hidden[g];
      }
      pass[ps].slow += o.pass[ps].slow;
      pass[ps].slow_cp += o.pass[ps].slow_cp;
    }
    if (o.ep.active) [[unlikely]]
      ep.Add(o.ep);
  }
  // Finishes the list: applies the overlap rule to each pass and returns the totals a rank adds.
  // A ring-attention KV exchange runs under the attention blocks it feeds (Liu et al. 2023; the
  // ring step i+1's transfer overlaps step i's block), so it hides only under attention compute;
  // the other overlappable collectives hide under the pass's remaining compute, and what does not
  // fit is exposed, shared among their groups in proportion to their times. While they run they
  // slow the compute beside it (OverlapSlowdown): with H the overlappable time, W the compute it
  // hides under and K = sum of OverlapSlowdown x time, the pass holds max(H, W + K) instead of
  // max(H, W), i.e. K less the spill more (nothing once the collectives outlast the slowed
  // compute), shared among the groups as the spill is and counted with their exposed time.
  ListTotals Finish() const {
    constexpr int kF = static_cast<int>(Pass::kForward), kB = static_cast<int>(Pass::kBackwardInput),
                  kW = static_cast<int>(Pass::kBackwardWeight), kR = static_cast<int>(Pass::kRecompute);
    constexpr int cp = static_cast<int>(CommGroup::kCp);
    ListTotals t;
    double time[4] = {}, slowed[4] = {};
    for (int ps : {kF, kB, kW, kR}) {
      const PassCost& c = pass[ps];
      time[ps] = c.compute;
      if (!c.groups) continue;  // most passes of most lists carry no communication
      // A group outside `groups` has no time and adds exactly nothing below (its share is 0; CP's
      // slowdown is of its own hidden time): skipping it changes no sum.
      double hidden_total = 0;
      for (uint32_t bits = c.groups; bits; bits &= bits - 1)
        if (const int i = std::countr_zero(bits); i != cp) hidden_total += c.hidden[i];
      const double room = std::max(0.0, c.compute - std::min(c.hidden[cp], c.attention));
      const double spill = std::max(0.0, hidden_total - room);
      const double extra = std::max(0.0, c.slow - spill);
      for (uint32_t bits = c.groups; bits; bits &= bits - 1) {
        const int g = std::countr_zero(bits);
        double e, slowdown;
        if (g == cp) {
          const double cp_spill = std::max(0.0, c.hidden[cp] - c.attention);
          e = c.blocking[cp] + cp_spill;
          slowdown = std::max(0.0, c.slow_cp - cp_spill);
        } else {
          const double share = hidden_total > 0 ? c.hidden[g] / hidden_total : 0;
          e = c.blocking[g] + spill * share;
          slowdown = extra * share;
        }
        t.exposed_s[g] += e + slowdown;
        slowed[ps] += slowdown;
        time[ps] += e + slowdown;
      }
    }
    if (ep.active) [[unlikely]]
      FinishMergedEp(time, slowed, &t);
    t.forward_s = time[kF];
    t.forward_after_sync_s = pass[kF].after_sync;
    t.recompute_pass_s = time[kR];
    t.recompute_after_sync_s = pass[kR].after_sync;
    t.backward_input_s = time[kB] + time[kR];  // recompute runs inside the backward pass
    t.backward_weight_s = time[kW];
    t.slowdown_s = {slowed[kF], slowed[kB] + slowed[kR], slowed[kW]};
    t.compute_s = pass[kF].compute + pass[kB].compute + pass[kW].compute;
    t.recompute_s = pass[kR].compute;
    return t;
  }
  // The merged schedule's EP all-to-alls (MergedEp; Coster::Add left them out of the passes): what
  // one merged layer adds beyond its compute stream's blocks, MergedEpPeriod - MergedEp::Compute(),
  // is their exposed time, shared between the forward and the backward input-gradient pass by their
  // communication streams' time; while the rest runs beside compute it slows it by OverlapSlowdown,
  // in the hidden share, counted as exposed EP time as Finish does for the others.
  [[gnu::noinline, gnu::cold]] void FinishMergedEp(double* time, double* slowed, ListTotals* t) const {
    constexpr int kF = static_cast<int>(Pass::kForward), kB = static_cast<int>(Pass::kBackwardInput);
    const double comm = ep.Comm();
    const double exposed = std::max(0.0, MergedEpPeriod(ep) - ep.Compute());
    const double hidden = comm > 0 ? std::max(0.0, 1.0 - exposed / comm) : 0.0;
    const double forward = comm > 0 ? ep.ForwardComm() / comm : 0.0;
    const double slowdown = ep.slow * hidden;
    time[kF] += (exposed + slowdown) * forward;
    time[kB] += (exposed + slowdown) * (1.0 - forward);
    slowed[kF] += slowdown * forward;
    slowed[kB] += slowdown * (1.0 - forward);
    t->exposed_s[static_cast<int>(CommGroup::kEp)] += exposed + slowdown;
    t->unmerged_forward_s = ep.dispatch_f + ep.combine_f - (exposed + slowdown) * forward;
    t->unmerged_backward_s = ep.dispatch_b + ep.combine_b - (exposed + slowdown) * (1.0 - forward);
  }
  // The same list without its recompute pass: a layer that full recomputation of only some
  // layers (PlanSpec::recompute_layers) leaves alone.
  ListTotals FinishWithoutRecompute() const {
    ListCost kept = *this;
    kept.pass[static_cast<int>(Pass::kRecompute)] = PassCost{};
    return kept.Finish();
  }
};

// The core-attention part of a pass (what a ring-attention KV exchange can hide under): the fused
// kernel, or the unfused path's two batched GEMMs and softmax.
bool IsAttentionCore(const Op& op) { return op.kind == OpKind::kAttention || op.attention_core; }

// Collective times shared by the plans of one search: a collective's time depends only on its
// kind, size and the span of its group (the cluster and profile are fixed per cache).
struct CollectiveKey {
  int64_t kind, bytes, size, per_domain, domains;
  bool operator==(const CollectiveKey&) const = default;
};
struct CollectiveKeyHash {
  size_t operator()(const CollectiveKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : {k.kind, k.bytes, k.size, k.per_domain, k.domains})
      h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};
using CollectiveMemo = std::unordered_map<CollectiveKey, double, CollectiveKeyHash>;

// Once-per-step work of one list (gradient sync, optimizer), costed once per list. `comm` is the
// step's data-parallel collectives; `param_gather` the part of it that is ZeRO-1/2's all-gather of
// the updated parameters (the step's only all-gather: core/step_graph.cc ParamSync), which overlaps
// a different pass than the gradient reduction. `tied`: the tied word embedding's all-reduce over
// the pipeline's ends (core/step_graph.cc TiedEmbeddingSync), blocking, once per step.
struct StepWork {
  double comm = 0, optimizer = 0, param_gather = 0, tied = 0;
  StepWork operator+(const StepWork& o) const {
    return {comm + o.comm, optimizer + o.optimizer, param_gather + o.param_gather, tied + o.tied};
  }
};

// The part of the first stage's step synchronisation no compute hides: its word embedding's
// (the embedding list's gradient reduction and parameter gather). Every framework's buckets follow
// the order gradients become final (Megatron-Core's are the parameters in reverse, a parameter never
// split between two: param_and_grad_buffer.py at d98e8a64; DeepSpeed's ZeRO-1/2 fill theirs as the
// gradients arrive; FSDP's root unit holds the embedding), and the embedding's gradient is the
// backward's last while its parameters are the forward's first: its bucket reduces after the last
// backward and gathers before the first forward. A lower bound: the bucket may hold a remainder of
// other parameters too (docs/compute.md).
StepWork EmbeddingTail(const StepWork& embedding) { return {embedding.comm, 0, embedding.param_gather, 0}; }

class Coster {
 public:
  Coster(const core::PlanSpec& p, const core::GpuSpec& g, const core::ClusterSpec& c, const core::Profile& prof,
         CollectiveMemo* shared = nullptr)
      : p_(p),
        g_(g),
        c_(c),
        prof_(prof),
        shared_(shared),
        pace_(SlowestGpuPace(p, g)),
        merged_ep_(MergedEpSchedule(p)) {}
  // A compute op's time at the pace of the job's slowest GPU (SlowestGpuPace).
  // An op off the GPU (core::OpSite: ZeRO-Offload's copies and host Adam) at its link's or the
  // host's rate (HostOpTime), not the GPU's pace.
  double OpTime(const Op& op) const {
    if (op.site != core::OpSite::kGpu) [[unlikely]]
      return HostOpTime(op, g_, c_, p_);
    return pace_ * ComputeOpTimeWith(op, g_, prof_, &rates_);
  }

  // `layer`: the ops are a transformer layer's (OverlapSlowdown).
  ListTotals Cost(const std::vector<Op>& ops, bool layer = true, StepWork* step = nullptr) const {
    ListCost lc;
    Add(ops, &lc, layer, step);
    return lc.Finish();
  }
  // The ops' times added into `lc`'s per-pass sums (no Finish: parts of a list are added first);
  // the once-per-step ops' into `step` when given (gradient sync and the parameter all-gather by
  // their collective time, the optimizer by its kernels'), else skipped. `moe_layer`: the ops are
  // (a part of) the MoE layer's list, whose all-to-alls the EP overlap's merged schedule costs
  // (AddMergedEp); the MTP module's MoE layer in the head's list keeps the pass rule.
  void Add(const std::vector<Op>& ops, ListCost* out, bool layer = true, StepWork* step = nullptr,
           bool moe_layer = false) const {
    ListCost& lc = *out;
    const bool merged = merged_ep_ && moe_layer;
    gemm_memo_ = {};
    for (const Op& op : ops) {
      if (op.pass == Pass::kStep) {
        if (!step) continue;
        if (op.kind == OpKind::kCollective) {
          const double t = CollectiveTime(op);
          if (IsTiedEmbeddingSync(op)) {
            step->tied += t;
            continue;
          }
          step->comm += t;
          if (IsParamGather(op)) step->param_gather += t;
        } else {
          step->optimizer += OpTime(op);
        }
        continue;
      }
      PassCost& pc = lc.pass[static_cast<int>(op.pass)];
      if (op.kind == OpKind::kCollective || op.kind == OpKind::kP2p) {
        if (merged && op.group == CommGroup::kEp) [[unlikely]]
          continue;                                // AddMergedEp's
        double t = op.share * CollectiveTime(op);  // share: a hybrid block's (HybridMix)
        const bool hide = CollectiveHidden(op, p_);
        if (hide && TpPairing(op, p_)) [[unlikely]]
          t = SplitPaired(ops, static_cast<size_t>(&op - ops.data()), t, &pc);
        (hide ? pc.hidden : pc.blocking)[static_cast<int>(op.group)] += t;
        if (op.after_moe_sync && !hide) pc.after_sync += t;
        if (hide) (op.group == CommGroup::kCp ? pc.slow_cp : pc.slow) += OverlapSlowdown(op, p_, g_, layer) * t;
        pc.groups |= 1u << static_cast<int>(op.group);
      } else if (op.group != CommGroup::kNone) {
        // Work of a collective done by kernels (a list collective's copies): exposed, its group's;
        // or a copy on the collective's own stream that hides or waits as it does (`overlappable`:
        // offloaded parameters crossing the host link before a prefetched ZeRO-3 gather).
        const double t = OpTime(op);
        (op.overlappable ? pc.hidden : pc.blocking)[static_cast<int>(op.group)] += t;
        if (op.after_moe_sync) pc.after_sync += t;
        pc.groups |= 1u << static_cast<int>(op.group);
      } else {
        // A GEMM a paired TP collective looked up before (SplitPaired) is not costed twice.
        const double t = &op == gemm_memo_.next ? gemm_memo_.next_t : OpTime(op);
        if (op.kind == OpKind::kGemm) gemm_memo_.last = &op, gemm_memo_.last_t = t;
        pc.compute += t;
        if (op.after_moe_sync) pc.after_sync += t;
        if (IsAttentionCore(op)) pc.attention += t;
      }
    }
    if (merged) [[unlikely]]
      AddMergedEp(ops, &lc, layer);
  }

  // A MoE layer's ops (or a part of them) under the EP overlap into `lc`'s MergedEp blocks: the
  // compute and blocking collectives of each node by pass, the EP all-to-alls (which Add left out)
  // on the communication stream. An EP all-to-all the recomputation reruns (Megatron-Core
  // refuses to recompute the MoE layer under the overlap) stays blocking in its pass. The node of
  // an op: by name, an FP8 quantization's the next op's (the GEMM it feeds).
  [[gnu::noinline, gnu::cold]] void AddMergedEp(const std::vector<Op>& ops, ListCost* lc, bool layer) const {
    enum Node { kPre, kMlp, kPost };
    auto node_of = [](std::string_view n) {
      for (std::string_view x : {"moe_permute_local", "expert_fc1", "expert_activation", "expert_fc2",
                                 "expert_fc2_bias", "moe_permute_local_restore"})
        if (n == x) return kMlp;
      for (std::string_view x : {"moe_permute_restore", "moe_latent_up", "moe_residual"})
        if (n == x) return kPost;
      return kPre;
    };
    MergedEp& e = lc->ep;
    e.active = true;
    e.delay_wgrad = p_.delay_wgrad;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.pass == Pass::kStep) continue;
      const bool comm = op.kind == OpKind::kCollective || op.kind == OpKind::kP2p;
      const bool forward = op.pass == Pass::kForward, weight = op.pass == Pass::kBackwardWeight;
      if (comm && op.group == CommGroup::kEp) {
        const double t = op.share * CollectiveTime(op);
        if (op.pass == Pass::kRecompute) {
          PassCost& pc = lc->pass[static_cast<int>(op.pass)];
          pc.blocking[static_cast<int>(op.group)] += t;
          pc.groups |= 1u << static_cast<int>(op.group);
          e.pre_b += t;
          continue;
        }
        const bool dispatch = std::string_view(op.name) == "ep_dispatch";
        (forward ? (dispatch ? e.dispatch_f : e.combine_f) : (dispatch ? e.dispatch_b : e.combine_b)) += t;
        e.slow += OverlapSlowdown(op, p_, g_, layer) * t;
        continue;
      }
      double t;
      if (comm) {
        if (CollectiveHidden(op, p_)) continue;  // the pass's overlap rule (Finish)
        t = op.share * CollectiveTime(op);
      } else {
        t = OpTime(op);
      }
      const bool quantize = op.kind == OpKind::kMemoryBound && op.mem_op == core::MemOp::kFp8Quantize;
      const Node node = node_of(quantize && i + 1 < ops.size() ? ops[i + 1].name : op.name);
      if (node == kPost) {
        (forward ? e.post_f : e.post_b) += t;
      } else if (node == kMlp) {
        (forward ? e.mlp_f : weight ? e.mlp_w : e.mlp_b) += t;
      } else {
        (forward ? e.pre_f : weight ? e.pre_w : e.pre_b) += t;
      }
    }
  }

  // A TP collective of time `t` at ops[i] that hides only beside its own GEMM (AsyncTP's fused
  // ones, Transformer Engine's userbuffers: TpPairedHidden): the rest is added to `pc`'s exposed
  // time, the hidden part returned. Out of line, so that Add's loop stays as small as without them.
  // The partner GEMM's time is the one Add costed last, or is kept for Add to take when it gets there.
  [[gnu::noinline, gnu::cold]] double SplitPaired(const std::vector<Op>& ops, size_t i, double t, PassCost* pc) const {
    auto gemm_time = [&](const Op& x) {
      if (&x == gemm_memo_.last) return gemm_memo_.last_t;
      const double gt = OpTime(x);
      gemm_memo_.next = &x, gemm_memo_.next_t = gt;
      return gt;
    };
    return TpPairedSplit(ops, i, t, p_, gemm_time, &pc->blocking[static_cast<int>(ops[i].group)]);
  }

  // Layers repeat the same few collectives (same kind, group and size): each is costed once.
  // The look-up is inline; a collective not yet costed takes the out-of-line path below, so the
  // hits (most calls) pay no prologue for it.
  double CollectiveTime(const Op& op) const {
    for (size_t i = 0; i < memo_count_; ++i) {
      const Memo& e = memo_[i];
      if (e.kind == op.collective && e.group == op.group && e.bytes == op.bytes) return e.time_s;
    }
    return CostCollective(op);
  }
  [[gnu::noinline]] double CostCollective(const Op& op) const {
    // A group's span is found on its first collective (a plan's lists use a few of the groups).
    const int gi = static_cast<int>(op.group);
    if (!have_span_[gi]) {
      spans_[gi] = core::SpanOfGroup(op.group, p_, c_);
      have_span_[gi] = true;
    }
    const core::GroupSpan& span = spans_[gi];
    double t;
    if (shared_) {
      const CollectiveKey key{static_cast<int64_t>(op.collective), op.bytes, span.size, span.per_domain, span.domains};
      auto [it, fresh] = shared_->try_emplace(key, 0.0);
      if (fresh) it->second = core::ProfiledCollectiveSeconds(prof_, op.collective, op.bytes, span, c_);
      t = it->second;
    } else {
      t = core::ProfiledCollectiveSeconds(prof_, op.collective, op.bytes, span, c_);
    }
    if (memo_count_ < memo_.size()) memo_[memo_count_++] = {op.collective, op.group, op.bytes, t};
    return t;
  }
  // One pipeline send as the pass that waits for it sees it: the send, then the receiver's
  // scatter/gather all-gather when the graph has one (core::StepGraph::p2p_gather).
  double PipelineSendTime(const Op& send, const Op& gather) const { return PipelineSendTime(send, gather, p_); }
  // The same under another schedule (StageListCosts holds the interleaved one's beside the rest's).
  double PipelineSendTime(const Op& send, const Op& gather, core::Schedule schedule) const {
    core::PlanSpec q = p_;
    q.schedule = schedule;
    return PipelineSendTime(send, gather, q);
  }

 private:
  struct Memo {
    core::CollectiveKind kind;
    CommGroup group;
    int64_t bytes;
    double time_s;
  };
  // A plan has a handful of distinct collectives; past this many the rest are costed each time.
  double PipelineSendTime(const Op& send, const Op& gather, const core::PlanSpec& p) const {
    return PipelineSendSeconds(send, p, c_, prof_) + (gather.bytes > 0 ? CollectiveTime(gather) : 0.0);
  }
  mutable std::array<Memo, 32> memo_;
  mutable size_t memo_count_ = 0;
  // Within one Add: the GEMM costed last and the one a paired TP collective costed ahead of Add.
  struct GemmMemo {
    const Op* last = nullptr;
    double last_t = 0;
    const Op* next = nullptr;
    double next_t = 0;
  };
  mutable GemmMemo gemm_memo_;
  mutable std::array<core::GroupSpan, core::kCommGroups> spans_;
  mutable OpRates rates_;  // the plan's GEMM rates and peaks, each looked up once
  mutable std::array<bool, core::kCommGroups> have_span_{};
  const core::PlanSpec& p_;
  const core::GpuSpec& g_;
  const core::ClusterSpec& c_;
  const core::Profile& prof_;
  CollectiveMemo* shared_;
  double pace_;  // SlowestGpuPace of the plan's GPUs
  // Megatron-Core's EP overlap (plan.ep_overlap, not DualPipe's, whose all-to-alls hide under
  // their pass): a MoE layer's blocks on two streams (MergedEp).
  bool merged_ep_;
};

// What one microbatch costs a pipeline rank, split for the breakdown.
struct RankCost {
  StageTimes times;
  double compute = 0, recompute = 0, p2p = 0;
  std::array<double, core::kCommGroups> comm{};  // exposed, per microbatch, by group
  double step_comm = 0, optimizer = 0;
  double offload = 0;        // exposed activation-offload transfers, per microbatch
  double host = 0;           // the GPU waiting for the host (MoE layers' host floor), per microbatch
  double param_gather = 0;   // of step_comm: the ZeRO-1/2 parameter all-gather (StepWork)
  double step_slowdown = 0;  // of step_comm (once exposed): compute slowed by the hidden DP sync
  double tied = 0;           // the tied embedding's all-reduce over the pipeline's ends (StepWork)
};

// `count` microbatch-passes of a finished list added to a rank (the per-list sums from Finish()).
void Accumulate(const ListTotals& lc, double count, RankCost* r) {
  r->times.forward_s += lc.forward_s * count;
  r->times.backward_input_s += lc.backward_input_s * count;
  r->times.backward_weight_s += lc.backward_weight_s * count;
  r->compute += lc.compute_s * count;
  r->recompute += lc.recompute_s * count;
  for (int g = 0; g < core::kCommGroups; ++g) r->comm[g] += lc.exposed_s[g] * count;
  r->times.forward_slowdown_s += lc.slowdown_s[0] * count;
  r->times.backward_input_slowdown_s += lc.slowdown_s[1] * count;
  r->times.backward_weight_slowdown_s += lc.slowdown_s[2] * count;
}

// `count` MoE layers' wait for the host (MoeLayerHostTime), per microbatch. Forward: the
// dispatcher's synchronisation drains the queue, so the host issues the block's remaining ops only
// once every kernel before it has run, and only those ops' kernels (forward_after_sync_s) run
// beside the block's forward host time: the pass waits max(0, host forward - them), whatever ran
// before. Backward: no synchronisation (the all-to-all splits are the forward's), so the host's
// backward time runs beside the whole backward (its recompute too): max(0, host backward - that).
// Unless the recomputed forward reruns the dispatcher (`rerun_sync`,
// core::RecomputeRerunsMoeDispatcher): its synchronisation drains the queue again inside the
// backward, after which the host issues the rerun's remaining ops and the backward, host forward +
// backward, beside the rerun's GPU work after it and the backward's own: max(0, host forward +
// backward - those) (measured on Megatron-Core's layer under tensor_parallel.checkpoint,
// megatron_layer_recompute.json).
// `merged`: a schedule that runs one microbatch's forward beside another's backward layer by
// layer (Megatron-Core's EP overlap: model_chunk_schedule_plan.py run() at d98e8a64 queues the
// backward's MLP before the forward's dispatch and its attention after, so both run beside the
// host's work after the synchronisation; DualPipe likewise): one wait, max(0, host forward +
// backward - forward after the synchronisation - backward), shared as the host times are. A
// backward wait is shared between the input- and weight-gradient passes as their times are.
void HostWait(const ListTotals& lc, const MoeHostTime& host, double count, bool merged, bool rerun_sync, RankCost* r) {
  if (count <= 0) return;
  const double back = lc.backward_input_s + lc.backward_weight_s;
  double f, wait_b;
  if (merged) {
    const double wait = std::max(0.0, host.Total() - lc.forward_after_sync_s - back) * count;
    f = wait * host.forward_s / host.Total();
    wait_b = wait - f;
  } else {
    f = std::max(0.0, host.forward_s - lc.forward_after_sync_s) * count;
    wait_b = rerun_sync && lc.recompute_pass_s > 0
                 ? std::max(0.0, host.Total() - lc.recompute_after_sync_s - (back - lc.recompute_pass_s)) * count
                 : std::max(0.0, host.backward_s - back) * count;
  }
  const double bi = back > 0 ? wait_b * lc.backward_input_s / back : wait_b, bw = wait_b - bi;
  r->times.forward_s += f;
  r->times.backward_input_s += bi;
  r->times.backward_weight_s += bw;
  r->times.forward_host_s += f;
  r->times.backward_input_host_s += bi;
  r->times.backward_weight_host_s += bw;
  r->host += f + bi + bw;
}

}  // namespace

namespace {

// The schedule's work and bubble from the sum of the stages' per-microbatch times, the critical
// (slowest, lowest-numbered) stage `tc` at index `crit`, and the stage count.
PipelineTime PipelineOf(core::Schedule schedule, double sum_t, const StageTimes& tc, int64_t crit, int64_t stages,
                        int64_t microbatches, int64_t vpp) {
  PipelineTime r;
  const double t_max = tc.Total();
  const double mb = static_cast<double>(microbatches);
  const double pp = static_cast<double>(stages);
  r.critical_stage = crit;
  r.work_s = mb * t_max;
  if (stages == 1) return r;
  switch (schedule) {
    case core::Schedule::kGpipe:
    case core::Schedule::k1F1B:
      r.bubble_s = sum_t - t_max;  // Narayanan 2021 §2.2.1
      break;
    case core::Schedule::kInterleaved:
      r.bubble_s = (sum_t - t_max) / static_cast<double>(vpp);  // Narayanan 2021 §2.2.2
      break;
    case core::Schedule::kZeroBubble:
      // ZB-H1 (Qi et al. 2023, §3): weight-gradient work fills the drain.
      r.bubble_s = (pp - 1) * std::max(0.0, tc.forward_s + tc.backward_input_s - tc.backward_weight_s);
      break;
    case core::Schedule::kDualPipe: {
      // DeepSeek-V3 report, Table 2, with per-stage F, B, W (a rank holds two stages).
      const double f = tc.forward_s / 2, b = tc.backward_input_s / 2, w = tc.backward_weight_s / 2;
      r.work_s = mb * t_max / 2;
      r.bubble_s = (pp / 2 - 1) * std::max(0.0, (f + b + w) + b - 3 * w);
      break;
    }
  }
  return r;
}

}  // namespace

PipelineTime SchedulePipeline(core::Schedule schedule, const std::vector<StageTimes>& stages, int64_t microbatches,
                              int64_t vpp) {
  if (stages.empty()) return {};
  double sum_t = 0;
  size_t crit = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    sum_t += stages[i].Total();
    if (stages[i].Total() > stages[crit].Total()) crit = i;
  }
  return PipelineOf(schedule, sum_t, stages[crit], static_cast<int64_t>(crit), static_cast<int64_t>(stages.size()),
                    microbatches, vpp);
}

double SendsPerMicrobatch(const core::PlanSpec& p) {
  if (p.schedule == core::Schedule::kInterleaved) return static_cast<double>(p.vpp);
  if (p.schedule == core::Schedule::kDualPipe) return 2.0;
  return 1.0;
}

AmaxReduction AmaxReductionTime(const core::PlanSpec& p, const core::ClusterSpec& c) {
  if (p.precision != core::Dtype::kFp8 || p.fp8_scaling != core::Fp8Scaling::kDelayed || !p.transformer_engine)
    return {};
  const int64_t size = p.tp * p.dp * p.cp;  // every rank of a pipeline stage
  if (size <= 1) return {};
  // The stage's ranks: consecutive unless the pipeline is the fastest-varying axis of the
  // placement (then every pp-th rank).
  const core::GroupSpan span = core::SpanOfStride(size, core::StrideOf(core::Axis::kPp, p) == 1 ? p.pp : 1, c);
  // The buffers hold three amaxes a GEMM forward (input, weight, output) and two backward (output
  // and input gradients), 4 B each, for the chunk's linear layers: a few KB, latency-bound, as
  // NCCL's tuner estimates a tiny all-reduce (core::TinyAllReduceSeconds).
  AmaxReduction a;
  a.forward_s = a.backward_s = core::TinyAllReduceSeconds(span, c);
  return a;
}

std::array<BreakdownTerm, 11> BreakdownTerms(const StepBreakdown& b) {
  return {{{"compute", "compute", b.compute_s},
           {"recompute", "recompute", b.recompute_s},
           {"tp_comm", "exposed TP communication", b.tp_comm_s},
           {"cp_comm", "exposed CP communication", b.cp_comm_s},
           {"ep_comm", "exposed EP all-to-all", b.ep_comm_s},
           {"dp_comm", "exposed DP communication", b.dp_comm_s},
           {"pp_comm", "pipeline sends (and the tied embedding's all-reduce)", b.pp_comm_s},
           {"bubble", "pipeline bubble", b.bubble_s},
           {"optimizer", "optimizer step", b.optimizer_s},
           {"offload", "exposed offload copies (activations, checkpoints)", b.offload_s},
           {"host", "waiting for the host (MoE layers)", b.host_s}}};
}

MoeHostTime MoeLayerHostTime(const core::ModelSpec& m, const core::PlanSpec& p) {
  if (!m.moe || p.moe_host == core::MoeHost::kNone) return {};
  // Token dropping pads each expert's input to its capacity (Megatron-Core's drop_and_pad, as
  // Megatron-Bridge's token-drop recipes set it): the splits are known without the host sync.
  if (m.moe->capacity_factor > 0) return {};
  const double local = static_cast<double>(std::max<int64_t>(m.moe->experts / std::max<int64_t>(p.ep, 1), 1));
  const double experts = p.moe_grouped_gemm ? 0.0 : local;
  MoeHostTime t{kMoeHostForwardBaseS + kMoeHostForwardPerExpertS * experts,
                kMoeHostBackwardBaseS + kMoeHostBackwardPerExpertS * experts};
  // Transformer Engine's GroupedLinear: a cuBLASLt call per local expert and GEMM (step_model.h).
  if (TeGroupedGemmHost(p)) {
    t.forward_s += 2 * kTeGroupedGemmHostPerGemmS * local;
    t.backward_s += 4 * kTeGroupedGemmHostPerGemmS * local;
  }
  // A hybrid model's layer list is one mixed layer per layer (core/step_graph.cc HybridMix), its
  // MoE block weighted by the MoE layers' share: between two MoE layers' synchronisations run
  // n / moe layers, whose GPU time the host time is weighed against, so each mixed layer takes
  // the host time times that share.
  if (m.Hybrid()) {
    const double share = static_cast<double>(m.HybridCostedCounts().moe) /
                         static_cast<double>(std::max<int64_t>(m.HybridCostedLayers(), 1));
    t.forward_s *= share;
    t.backward_s *= share;
  }
  return t;
}

double GemmEfficiency(const core::Profile& prof, const core::GpuSpec& g, core::Dtype d) {
  if (!prof.gemm_efficiency_measured) {
    auto it = g.gemm_efficiency.find(d);
    if (it != g.gemm_efficiency.end()) return it->second;
  }
  auto it = prof.gemm_efficiency.find(d);
  return it != prof.gemm_efficiency.end() ? it->second : 0.8;
}

namespace {

using AttentionPoint = core::GpuSpec::AttentionPoint;

// The sequence an attention op's kernel runs at, as its curve is read. A windowed layer's kernel
// runs rows of w keys, as long as a causal kernel's at sequence 2w (its rows average s/2 keys): its
// speed is the curve's at min(s, 2w) (docs/compute.md). A chunked layer's kernel runs sequences of
// one chunk: its speed is the curve's at the chunk.
int64_t AttentionCurveSeq(const Op& op) {
  return !op.Windowed() ? op.seq_q : (op.chunked ? op.window : std::min(op.seq_q, 2 * op.window));
}

// What a curve measured around head dim `hd`: its head dims' range, the head dim it is read at
// (`hd` held to that range), and the sequences measured at the nearest measured head dim at or
// below it (the one AttentionCurveEfficiency interpolates from); seq_min 0: none.
struct CurveSpan {
  int64_t hd_min = 0, hd_max = 0, read_hd = 0, seq_min = 0, seq_max = 0;
};
CurveSpan SpanOf(const std::vector<core::GpuSpec::AttentionPoint>& points, int64_t hd) {
  CurveSpan c;
  for (const auto& pt : points) {
    if (c.hd_min == 0 || pt.head_dim < c.hd_min) c.hd_min = pt.head_dim;
    c.hd_max = std::max(c.hd_max, pt.head_dim);
  }
  c.read_hd = std::clamp(hd, c.hd_min, c.hd_max);
  int64_t hd_lo = 0;
  for (const auto& pt : points)
    if (pt.head_dim <= c.read_hd) hd_lo = std::max(hd_lo, pt.head_dim);
  for (const auto& pt : points) {
    if (pt.head_dim != hd_lo) continue;
    if (c.seq_min == 0 || pt.seq < c.seq_min) c.seq_min = pt.seq;
    c.seq_max = std::max(c.seq_max, pt.seq);
  }
  return c;
}

// The curve's speed at head dim `hd` (a measured one) and sequence `seq`: linear in log2(seq)
// between the nearest measured lengths, the end value beyond them.
double CurveSpeed(const std::vector<AttentionPoint>& points, int64_t hd, double seq) {
  const AttentionPoint *lo = nullptr, *hi = nullptr;  // the longest seq <= s, the shortest >= s
  for (const AttentionPoint& pt : points) {
    if (pt.head_dim != hd) continue;
    const double ps = static_cast<double>(pt.seq);
    if (ps <= seq && (lo == nullptr || pt.seq > lo->seq)) lo = &pt;
    if (ps >= seq && (hi == nullptr || pt.seq < hi->seq)) hi = &pt;
  }
  if (lo == nullptr) return hi->tflops;
  if (hi == nullptr || lo->seq == hi->seq) return lo->tflops;
  const double t = std::log2(seq / static_cast<double>(lo->seq)) /
                   std::log2(static_cast<double>(hi->seq) / static_cast<double>(lo->seq));
  return lo->tflops + t * (hi->tflops - lo->tflops);
}

}  // namespace

double AttentionCurveEfficiency(const core::GpuSpec& g, const std::vector<AttentionPoint>& points, int64_t head_dim,
                                int64_t seq) {
  // A measured point itself (the common case: head dim 64 or 128 at a power-of-two sequence).
  for (const AttentionPoint& pt : points)
    if (pt.head_dim == head_dim && pt.seq == seq) return pt.tflops * 1e12 / Peak(g, core::Dtype::kBf16);
  // The measured head dims around `head_dim` (linear between them, the nearest beyond them).
  int64_t hd_lo = 0, hd_hi = 0;
  for (const AttentionPoint& pt : points) {
    if (pt.head_dim <= head_dim && pt.head_dim > hd_lo) hd_lo = pt.head_dim;
    if (pt.head_dim >= head_dim && (hd_hi == 0 || pt.head_dim < hd_hi)) hd_hi = pt.head_dim;
  }
  if (hd_lo == 0) hd_lo = hd_hi;
  if (hd_hi == 0) hd_hi = hd_lo;
  const double s = static_cast<double>(std::max<int64_t>(seq, 1));
  double tflops = CurveSpeed(points, hd_lo, s);
  if (hd_hi != hd_lo) {
    const double t = static_cast<double>(head_dim - hd_lo) / static_cast<double>(hd_hi - hd_lo);
    tflops += t * (CurveSpeed(points, hd_hi, s) - tflops);
  }
  return tflops * 1e12 / Peak(g, core::Dtype::kBf16);
}

std::vector<std::string> AssumedRates(const core::Profile& prof, const core::GpuSpec& g, const core::ModelSpec& m,
                                      const core::PlanSpec& plan) {
  const core::StepGraph graph = core::BuildStepGraph(m, plan);
  std::set<core::Dtype> gemm;
  std::set<core::AttentionImpl> attention;
  std::vector<const Op*> attention_ops;
  for (const std::vector<Op>* ops : {&graph.dense_layer, &graph.moe_layer, &graph.embedding, &graph.head, &graph.step})
    for (const Op& op : *ops) {
      if (op.kind == OpKind::kGemm) gemm.insert(op.dtype);
      if (op.kind != OpKind::kAttention) continue;
      attention.insert(op.attention);
      attention_ops.push_back(&op);
    }
  std::vector<std::string> notes;
  auto fixed = [](double v) {
    char b[16];
    std::snprintf(b, sizeof b, "%.2f", v);
    return std::string(b);
  };
  if (!prof.gemm_efficiency_measured)
    for (core::Dtype d : gemm)
      if (!g.gemm_efficiency.count(d))
        notes.push_back(std::string(core::Name(d)) + " GEMMs at " + fixed(GemmEfficiency(prof, g, d)) + " of " +
                        g.name +
                        "'s peak: the profile's assumed figure, the GPU preset has no measured one (docs/compute.md)");
  if (!prof.attention_efficiency_measured)
    for (core::AttentionImpl impl : attention) {
      auto curve = g.attention_curve.find(impl);
      if ((curve != g.attention_curve.end() && !curve->second.empty()) || g.attention_efficiency.count(impl)) continue;
      notes.push_back("attention (" + std::string(core::Name(impl)) + ") at " + fixed(prof.attention_fwd_efficiency) +
                      " forward and " + fixed(prof.attention_bwd_efficiency) + " backward of " + g.name +
                      "'s 16-bit peak: the profile's assumed figures, the GPU preset has no measured curve or figure "
                      "for that kernel (docs/compute.md)");
    }
  // A measured curve read beyond what it measured takes its nearest measured value
  // (AttentionCurveEfficiency): a sequence longer or shorter than its points, a head dim wider or
  // narrower. The speed there is the curve's end, not a measurement: say so, once per kernel, bound
  // and value.
  if (!prof.attention_efficiency_measured) {
    std::set<std::string> beyond;
    for (const Op* op : attention_ops) {
      auto curve = g.attention_curve.find(op->attention);
      if (curve == g.attention_curve.end() || curve->second.empty()) continue;
      const int64_t hd = AttentionKernelHeadDim(op->attention, op->head_dim_qk), seq = AttentionCurveSeq(*op);
      const CurveSpan span = SpanOf(curve->second, hd);
      const std::string kernel = "attention (" + std::string(core::Name(op->attention)) + ") at ";
      const std::string measured = "'s curve measured ";
      const std::string end = "'s speed, the curve's end, not a measurement (docs/compute.md)";
      if (span.read_hd != hd)
        beyond.insert(kernel + "head dim " + std::to_string(hd) + ": " + g.name + measured +
                      (span.hd_min == span.hd_max
                           ? "head dim " + std::to_string(span.hd_min) + " only"
                           : "head dims " + std::to_string(span.hd_min) + " to " + std::to_string(span.hd_max)) +
                      ", so it runs at " + std::to_string(span.read_hd) + end);
      if (span.seq_min == 0 || (seq >= span.seq_min && seq <= span.seq_max)) continue;
      beyond.insert(kernel + std::to_string(seq) + " queries per sequence: " + g.name + measured +
                    std::to_string(span.seq_min) + " to " + std::to_string(span.seq_max) + ", so it runs at " +
                    std::to_string(seq > span.seq_max ? span.seq_max : span.seq_min) + end);
    }
    for (const std::string& n : beyond) notes.push_back(n);
  }
  return notes;
}

int64_t AttentionKernelHeadDim(core::AttentionImpl impl, int64_t head_dim) {
  if (impl == core::AttentionImpl::kFlash2) {
    for (int64_t compiled : {32, 64, 96, 128, 160, 192, 224, 256})
      if (head_dim <= compiled) return compiled;
  } else if (impl == core::AttentionImpl::kTriton && head_dim <= 128) {  // the kernel's limit
    int64_t block = 16;
    while (block < head_dim) block *= 2;
    return block;
  }
  return head_dim;
}

double AttentionEfficiency(const core::Profile& prof, const core::GpuSpec& g, core::AttentionImpl impl, bool backward,
                           int64_t head_dim, int64_t seq) {
  if (!prof.attention_efficiency_measured) {
    auto curve = g.attention_curve.find(impl);
    if (curve != g.attention_curve.end() && !curve->second.empty()) {
      // A padded head dim runs the kernel's tiles whole: its speed, on the model's share of them.
      const int64_t computed = std::max<int64_t>(AttentionKernelHeadDim(impl, head_dim), 1);
      return AttentionCurveEfficiency(g, curve->second, computed, seq) * static_cast<double>(head_dim) /
             static_cast<double>(computed);
    }
    auto it = g.attention_efficiency.find(impl);
    if (it != g.attention_efficiency.end()) return backward ? it->second.backward : it->second.forward;
  }
  return backward ? prof.attention_bwd_efficiency : prof.attention_fwd_efficiency;
}

namespace {
// 1 / GemmWaveEfficiency: the waves' capacity over the tiles (integer tiles and waves, one
// floating division: ComputeOpTime runs it for every GEMM of an estimate).
double GemmWaveCost(const Op& op, const core::GpuSpec& g) {
  if (op.kind != OpKind::kGemm || g.sms <= 0 || !g.gemm_wave_quantization) return 1.0;
  // The GEMM's output: forward (and its recompute) C[m x n]; the input gradient dX[m x k]; the
  // weight gradient dW[k x n].
  int64_t rows = op.m, cols = op.n;
  if (op.pass == Pass::kBackwardInput) cols = op.k;
  if (op.pass == Pass::kBackwardWeight) rows = op.k;
  const int64_t tiles = ((rows + kGemmTileRows - 1) / kGemmTileRows) * ((cols + kGemmTileCols - 1) / kGemmTileCols) *
                        std::max<int64_t>(op.batch, 1);
  // Under one wave cuBLAS takes smaller tiles or splits k to fill the GPU; the F_half ramp costs those.
  if (tiles < g.sms) return 1.0;
  const int64_t waves = (tiles + g.sms - 1) / g.sms;
  return static_cast<double>(waves * g.sms) / static_cast<double>(tiles);
}
}  // namespace

double GemmWaveEfficiency(const Op& op, const core::GpuSpec& g) { return 1.0 / GemmWaveCost(op, g); }

double GemmReductionCost(const Op& op, const core::GpuSpec& g) {
  const auto it = g.gemm_k_overhead.find(op.dtype);
  return ReductionCostWith(op, it == g.gemm_k_overhead.end() ? 0.0 : it->second, g.gemm_reference_k);
}

double GemmAlignmentEfficiency(const Op& op, const core::GpuSpec& g) {
  if (op.kind != OpKind::kGemm || (op.dtype != core::Dtype::kBf16 && op.dtype != core::Dtype::kFp16)) return 1.0;
  return g.gemm_misaligned_efficiency.Of(op.n, op.k);
}

namespace {
// Inlined into ComputeOpTimeWith, its hot caller: a call per GEMM costed 20 instructions of
// prologue and epilogue (about 2% of an estimate).
[[gnu::always_inline]] inline GemmRoofline GemmSidesWith(const Op& op, const core::GpuSpec& g,
                                                         const core::Profile& prof, OpRates* rates) {
  // Roofline per instance: compute at the dtype's peak x efficiency, the efficiency falling for
  // small GEMMs as F/(F + F_half); or the bytes of A, B and C at HBM speed, if slower. The
  // efficiency is a wave-perfect shape's; a shape whose tiles leave the last wave part empty runs
  // that wave anyway (GemmWaveEfficiency); and a reduction's, over gemm_reference_k elements: a
  // shorter one pays its tiles' fixed work over fewer main-loop steps (GemmReductionCost).
  const double f1 = 2.0 * static_cast<double>(op.m) * static_cast<double>(op.n) * static_cast<double>(op.k);
  const double bytes =
      static_cast<double>(op.m * op.k + op.k * op.n + op.m * op.n) * static_cast<double>(core::DtypeBytes(op.dtype));
  const double rate = rates->GemmRate(g, prof, op.dtype);
  return {(f1 * GemmWaveCost(op, g) * ReductionCostWith(op, rates->KOverhead(g, op.dtype), g.gemm_reference_k) /
               GemmAlignmentEfficiency(op, g) +
           prof.gemm_half_flops) /
              rate,
          bytes / (g.hbm_bytes_per_s * prof.hbm_efficiency), f1 / rate};
}
}  // namespace

GemmRoofline GemmSides(const Op& op, const core::GpuSpec& g, const core::Profile& prof) {
  OpRates rates;
  return GemmSidesWith(op, g, prof, &rates);
}

namespace {
// The standard normal quantile Phi^-1(q), 0 < q < 1: Acklam's rational approximation (relative
// error below 1.2e-9; P. J. Acklam, "An algorithm for computing the inverse normal cumulative
// distribution function", 2003), its central region and its tails.
double NormalQuantile(double q) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  auto tail = [&](double t) {  // t = q or 1 - q, below kLow
    const double r = std::sqrt(-2 * std::log(t));
    return (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) /
           ((((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1);
  };
  if (q < kLow) return tail(q);
  if (q > 1 - kLow) return -tail(1 - q);
  const double u = q - 0.5, r = u * u;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * u /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}
}  // namespace

double SlowestGpuPace(int64_t gpus, double spread) {
  if (gpus <= 1 || !(spread > 0)) return 1.0;
  const double n = static_cast<double>(gpus);
  return 1.0 + spread * NormalQuantile((n - 0.375) / (n + 0.25));
}

double SlowestGpuPace(const core::PlanSpec& p, const core::GpuSpec& g) {
  return SlowestGpuPace(p.tp * p.cp * p.pp * p.dp, g.speed_spread);
}

double PipelineSendSeconds(const core::Op& send, const core::PlanSpec& p, const core::ClusterSpec& c,
                           const core::Profile& prof, core::PipelinePace* pace) {
  if (p.pp <= 1) return 0.0;
  const core::PipelineLinks links = core::PipelineLinkCounts(p, c);
  // Each tier costed only if some rank has a link on it.
  auto link = [&](bool crossing) {
    return core::ProfiledCollectiveSeconds(prof, send.collective, send.bytes,
                                           crossing ? core::GroupSpan{2, 1, 2} : core::GroupSpan{2, 2, 1}, c);
  };
  const core::PipelinePace paced =
      core::PipelineLinkPace(links, links.AnyInside() ? link(false) : 0.0, links.AnyCrossing() ? link(true) : 0.0);
  if (pace) *pace = paced;
  return paced.seconds / 2;
}

double OverlapExtra(double comm_s, double window_s) {
  if (window_s <= 0) return 0;
  return std::max(0.0, kNcclOverlapSlowdown * comm_s - std::max(0.0, comm_s - window_s));
}

double StepOverlapSlowdown(const core::PlanSpec& p, const StageTimes& t, double grad_sync_s, double param_gather_s) {
  const double grad_window = p.overlap_grad_reduce ? t.backward_input_s + t.backward_weight_s : 0.0;
  const double param_window = p.overlap_param_gather ? t.forward_s : 0.0;
  return OverlapExtra(grad_sync_s, grad_window) + OverlapExtra(param_gather_s, param_window);
}

namespace {
double ComputeOpTimeWith(const Op& op, const core::GpuSpec& g, const core::Profile& prof, OpRates* rates) {
  const double hbm = g.hbm_bytes_per_s * prof.hbm_efficiency;
  switch (op.kind) {
    case OpKind::kGemm: {
      // `share`: the part of the GEMMs this rank runs (1 but for Muon's orthogonalisation, which a
      // sharded optimizer spreads over its group: core/step_graph.cc MuonNewtonSchulz).
      // Where each of the `batch` instances is a kernel of its own (Op::instance_kernels: the
      // experts' GEMMs, Muon's iterations), none takes less than the per-kernel time t_k: back to
      // back, the GPU retires short kernels one per t_k, long ones at their roofline; t_k once more
      // for the first launch. Measured on an H200 (docs/compute.md, "Expert GEMMs at few rows per
      // expert"). A batched kernel (the unfused attention's) pays t_k once.
      const GemmRoofline r = GemmSidesWith(op, g, prof, rates);
      double instance = std::max(r.compute_s, r.memory_s);
      if (op.instance_kernels) instance = std::max(instance, prof.kernel_overhead_s);
      return op.share * (static_cast<double>(op.batch) * instance + prof.kernel_overhead_s);
    }
    case OpKind::kAttention: {
      const double eff = AttentionEfficiency(prof, g, op.attention, op.pass == Pass::kBackwardInput, op.head_dim_qk,
                                             AttentionCurveSeq(op));
      return op.Flops() / (rates->PeakOf(g, op.dtype) * eff) + op.share * prof.kernel_overhead_s;
    }
    case OpKind::kMemoryBound:
    case OpKind::kOptimizer: {
      // `batch` kernels move the bytes between them, each paying the per-kernel overhead (one for
      // most ops; a list collective's per-rank copies: core/step_graph.cc PerTensorZero3); x share
      // (1 but for a hybrid model's blocks, core/step_graph.cc HybridMix).
      const double kernels = static_cast<double>(std::max<int64_t>(op.batch, 1));
      // A calibrated kernel's own efficiency (docs/calibration.md), else the profile's HBM fraction.
      // Keys: "name.pass" (a kernel whose backward differs from its forward), then "name".
      if (!prof.memory_op_efficiency.empty()) {
        auto it = prof.memory_op_efficiency.find(std::string(op.name) + "." + core::Name(op.pass));
        if (it == prof.memory_op_efficiency.end()) it = prof.memory_op_efficiency.find(op.name);
        if (it != prof.memory_op_efficiency.end())
          return op.share *
                 (static_cast<double>(op.bytes) / (g.hbm_bytes_per_s * it->second) + kernels * prof.kernel_overhead_s);
      }
      return op.share * (static_cast<double>(op.bytes) / hbm + kernels * prof.kernel_overhead_s);
    }
    default: return 0;
  }
}
}  // namespace

double HostOpTime(const Op& op, const core::GpuSpec& g, const core::ClusterSpec& c, const core::PlanSpec& p) {
  const double bytes = static_cast<double>(op.bytes);
  switch (op.site) {
    case core::OpSite::kHostLink: return g.host_link_bytes_per_s > 0 ? bytes / g.host_link_bytes_per_s : 0.0;
    case core::OpSite::kHost: {
      const double ranks = static_cast<double>(HostRanksPerNode(p, c));
      return c.host_memory_bytes_per_s > 0 ? bytes * ranks / HostAdamBytesPerS(c) : 0.0;
    }
    case core::OpSite::kGpu: break;
  }
  return 0.0;
}

double ComputeOpTime(const Op& op, const core::GpuSpec& g, const core::Profile& prof) {
  OpRates rates;
  return ComputeOpTimeWith(op, g, prof, &rates);
}

std::vector<CostedOpList> CostStepGraph(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                                        const core::ClusterSpec& c, const core::Profile& prof) {
  const core::StepGraph graph = core::BuildStepGraph(m, p);
  const Coster coster(p, g, c, prof);
  // `embedding`: the first stage's word embedding, whose step synchronisation hides under nothing
  // (EmbeddingTail).
  auto costed = [&](const char* name, std::string where, int64_t count, const std::vector<Op>& ops, bool layer,
                    bool embedding = false) {
    CostedOpList list{name, std::move(where), count, {}};
    list.ops.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      CostedOp row;
      row.op = op;
      if (op.kind == OpKind::kCollective || op.kind == OpKind::kP2p) {
        row.span = core::SpanOfGroup(op.group, p, c);
        const core::CollectiveCost cc = core::ProfiledCollectiveTime(prof, op.collective, op.bytes, row.span, c);
        row.time_s = op.share * cc.time_s;
        row.algorithm = cc.algorithm;
        if (op.pass == Pass::kStep) {
          // The step's synchronisation (StepOverlapSlowdown's windows): the parameter all-gather
          // under the next step's first forward with overlap_param_gather, the gradient reduction
          // under the last microbatch's backward with overlap_grad_reduce; NCCL's kernels. A tied
          // embedding's all-reduce over the pipeline's ends never hides (EstimateStep adds it whole),
          // nor does the word embedding's own reduction and gather (EmbeddingTail).
          row.hidden = !embedding && StepSyncOverlapped(op, p);
          if (row.hidden) row.slowdown = kNcclOverlapSlowdown;
        } else {
          row.hidden = CollectiveHidden(op, p);
          if (row.hidden) row.slowdown = OverlapSlowdown(op, p, g, layer);
          row.pairing = row.hidden ? TpPairing(op, p) : nullptr;
          if (row.fused())
            row.exposed_s =
                row.time_s - TpPairedHidden(ops, i, row.time_s, p, [&](const Op& x) { return coster.OpTime(x); });
        }
      } else {
        row.time_s = coster.OpTime(op);
        if (op.kind == OpKind::kGemm) {
          const GemmRoofline sides = GemmSides(op, g, prof);
          row.memory_bound = sides.memory_s > sides.compute_s;
          row.kernel_bound = op.instance_kernels && std::max(sides.compute_s, sides.memory_s) < prof.kernel_overhead_s;
          row.alignment = GemmAlignmentEfficiency(op, g);
        }
      }
      list.ops.push_back(row);
    }
    return list;
  };
  std::vector<CostedOpList> out;
  const int64_t moe_layers = m.MoeLayerCount();
  // With full recomputation of only some layers, the recompute rows are theirs alone.
  const std::string per_layer = p.recompute == core::Recompute::kFull && p.recompute_layers > 0
                                    ? "every rank, per layer of its stage (recompute: only its first " +
                                          std::to_string(p.recompute_layers) + " layers)"
                                    : "every rank, per layer of its stage";
  if (m.layers - moe_layers > 0)
    out.push_back(costed(m.Hybrid() ? "hybrid layer (its kinds' mix)" : "dense layer", per_layer, m.layers - moe_layers,
                         graph.dense_layer, true));
  if (moe_layers > 0)
    out.push_back(costed(m.Hybrid() ? "hybrid layer (its kinds' mix)" : "MoE layer", per_layer, moe_layers,
                         graph.moe_layer, true));
  out.push_back(costed("embedding", "the first pipeline stage", 1, graph.embedding, false, true));
  out.push_back(costed("head", "the last pipeline stage", 1, graph.head, false));
  if (p.pp > 1) {
    std::vector<Op> send{graph.p2p};
    if (graph.p2p_gather.bytes > 0) send.push_back(graph.p2p_gather);
    // The send as the passes charge it: half the pacing rank's time on its neighbour links.
    core::PipelinePace pace;
    const double seconds = PipelineSendSeconds(graph.p2p, p, c, prof, &pace);
    CostedOpList list = costed("pipeline send",
                               "per model chunk and direction: half the pacing rank's neighbour links, " +
                                   std::to_string(pace.crossing) + " leaving its scale-up domain and " +
                                   std::to_string(pace.inside) + " inside (docs/collectives.md 4.7)",
                               1, send, false);
    list.ops.front().time_s = seconds;
    out.push_back(std::move(list));
  }
  if (!graph.step.empty()) out.push_back(costed("step", "every rank, once per step", 1, graph.step, false));
  return out;
}

StageTimes DenseLayerTimes(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                           const core::ClusterSpec& c, const core::Profile& prof) {
  const core::StepGraph graph = core::BuildStepGraph(m, p);
  const ListTotals lc = Coster(p, g, c, prof).Cost(graph.dense_layer);
  RankCost r;
  Accumulate(lc, 1.0, &r);
  return r.times;
}

namespace {

struct StageListCosts;

// Everything EstimateStep needs from the op lists: what StepCostCache keeps. The embedding, head
// and send costs are shared by every plan with the same sync key, so they are held by pointer
// (into the cache's node-based table, or next to the lists on the one-plan path).
struct CostedLists {
  ListTotals dense, moe;
  // With full recomputation: the layers without their recompute pass (a stage recomputes only its
  // first recompute_layers layers when that is set).
  ListTotals dense_kept, moe_kept;
  StepWork dense_step, moe_step;
  const StageListCosts* stage = nullptr;
};

// The plan fields the costed lists depend on (core/step_graph.cc's Builder and the groups' spans,
// core/collectives.cc); everything else is the pipeline's. Adding a field that the step graph
// reads means adding it here.
using ListKey = std::array<int64_t, 15>;
static_assert(core::kAllRecomputeModules < (1u << 9), "KeyOf packs recompute_modules into 9 bits (48-55 and 58)");
ListKey KeyOf(const core::PlanSpec& p) {
  auto e = [](auto v) { return static_cast<int64_t>(v); };
  const bool merged_ep = MergedEpSchedule(p);  // Coster's
  int64_t placement = 0;
  for (core::Axis a : p.placement) placement = placement * 8 + e(a) + 1;
  placement |= std::max<int64_t>(0, p.segment_nodes) << 16;  // the order takes 15 bits; Slurm segments above
  const int64_t enums =
      e(p.precision) | e(p.recompute) << 4 | e(p.recompute == core::Recompute::kFull && p.recompute_early_stop) << 7 |
      e(p.tp_overlap) << 8 | e(p.cp_kind) << 12 | e(p.sharding) << 16 | e(p.optimizer) << 20 |
      e(p.dtypes.weights) << 24 | e(p.dtypes.grads) << 28 | e(p.dtypes.master_weights) << 32 |
      e(p.dtypes.optimizer_states) << 36 | e(p.sequence_parallel) << 40 | e(p.grad_accum_fusion) << 41 |
      e(p.schedule == core::Schedule::kDualPipe || p.ep_overlap) << 42 | e(p.zero3_gather) << 43 |
      e(p.zero3_gather == core::Zero3Gather::kPerTensor && p.overlap_grad_reduce) << 60 |
      e(p.precision == core::Dtype::kFp8 ? p.fp8_scaling : core::Fp8Scaling::kDelayed) << 45 |
      e(p.recompute == core::Recompute::kSelective ? p.recompute_modules & 0xFFu : 0u) << 48 |
      e(p.recompute == core::Recompute::kSelective ? p.recompute_modules >> 8 : 0u) << 58 | e(p.elementwise) << 56 |
      e(p.ep > 1 ? p.moe_dispatcher : core::MoeDispatcher::kAllToAll) << 59 | e(p.repeat_kv) << 61 |
      e(p.grad_prescale) << 62;
  // (The recompute mode: 4-5, its early stop 7, inside kRecomputeBits; ZeRO-3 gather kind: 43-44; recompute_modules: 9
  // bits, 48-55 and 58 (the ninth, moe); elementwise 56-57; MoE dispatcher 59; per-tensor ZeRO-3's overlapped
  // reduce-scatters 60; repeat_kv 61; grad_prescale 62. The last word: the cross entropy, Transformer Engine at bit 8,
  // whose FP8 TP gathers move the quantized bytes, core/step_graph.cc TpGather, and the MoE routing at bit 9 where the
  // flex dispatcher reads it, the FP8 parameter gather at bit 10, FP8 attention at bit 11, the vocabulary's padding
  // multiple from bit 12, DTensor's TP at bit 56: its collectives' copies and float8 gathers, core/step_graph.cc
  // TpGather; PyTorch's CP at bit 57: its ring's copies and fp32 merges, core/step_graph.cc TorchCpCost; the merged
  // EP-overlap schedule at bit 58 (bit 42 holds DualPipe's hidden all-to-alls too) and its delayed weight gradients at
  // bit 59: Coster::AddMergedEp; the optimizer offloaded to the host at bit 60: ZeRO-Offload's step ops,
  // core/step_graph.cc OffloadedOptimizerStep; the parameters at bit 61: their copies before each ZeRO-3
  // gather, OffloadedParamsCopy.)
  return {p.tp, p.cp, p.ep, p.etp, p.pp, p.dp, p.micro_batch, p.seq_len, p.zero, p.hsdp_shard_size, enums, placement,
          e(p.cross_entropy) | e(p.transformer_engine) << 8 |
              e(p.ep > 1 && p.moe_dispatcher == core::MoeDispatcher::kFlex ? p.moe_routing : core::MoeRouting::kUniform)
                  << 9 |
              e(p.fp8_param_gather) << 10 | e(p.fp8_attention) << 11 | p.vocab_divisible_by << 12 |
              e(p.dtensor_tp) << 56 | e(p.torch_cp) << 57 | e(merged_ep) << 58 | e(merged_ep && p.delay_wgrad) << 59 |
              e(p.offload_optimizer != core::OffloadTarget::kNone) << 60 |
              e(p.offload_params != core::OffloadTarget::kNone) << 61,
          // The MoE layer's: whether its tokens arrive padded for the quantized experts
          // (moe_router_padding), Transformer Engine's op fuser (moe_op_fuser: the clamp's copies)
          // and the busiest EP rank's share (moe_imbalance), whatever the
          // dispatcher.
          e(p.moe_router_padding) | e(p.moe_op_fuser) << 1, std::bit_cast<int64_t>(p.moe_imbalance)};
}
struct ListKeyHash {
  size_t operator()(const ListKey& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// The embedding and head lists and the pipeline send: they do not depend on the recompute mode.
// The send depends on the schedule only through the interleaved one's link from the last stage
// back to the first (core::PipelineLinkCounts), so both are held and EstimateStep takes its own.
struct StageListCosts {
  ListTotals emb, head;
  StepWork emb_step, head_step;
  double p2p = 0, p2p_interleaved = 0;
  double P2p(const core::PlanSpec& p) const {
    return p.schedule == core::Schedule::kInterleaved ? p2p_interleaved : p2p;
  }
};

// One part (core::LayerPart) of the embedding and head lists, costed but not finished.
struct StagePartCosts {
  ListCost emb, head;
  StepWork emb_step, head_step;
};

// A layer's three parts (core::LayerPart), costed but not finished, for the dense and MoE layer.
struct LayerPartCosts {
  std::array<ListCost, 2> lists;   // dense, MoE
  std::array<StepWork, 2> step{};  // kSync only: its once-per-step work
};

LayerPartCosts CostLayerPart(const core::ModelSpec& m, const core::PlanSpec& p, const Coster& coster,
                             core::LayerPart part) {
  LayerPartCosts out;
  thread_local std::vector<Op> ops, scratch;  // refilled per part: their capacity reused
  for (int moe = 0; moe < (m.moe ? 2 : 1); ++moe) {
    core::BuildLayerPart(m, p, moe == 1, part, &ops, &scratch);
    coster.Add(ops, &out.lists[static_cast<size_t>(moe)], true,
               part == core::LayerPart::kSync ? &out.step[static_cast<size_t>(moe)] : nullptr, moe == 1);
  }
  return out;
}

// The key of one part (core::LayerPart): what the part does not depend on is blanked, so plans
// that differ only there share it. The compute and recompute parts (core/step_graph.cc: Forward,
// Backward, Recompute) read the TP, CP and EP degrees and the spans of those groups, the micro
// batch, sequence, precision, TP overlap, CP kind, SP and DualPipe's all-to-all overlap (and the
// recompute part its mode): not pp, dp, ZeRO, sharding, optimizer, state dtypes or
// gradient-accumulation fusion. The sync part: SyncPartKey below.
// The spans (members per scale-up domain) of the TP, CP and EP groups, packed: the compute parts'
// stand-in for the placement.
int64_t ComputeSpans(const core::PlanSpec& p, const core::ClusterSpec& c) {
  int64_t spans = 0;
  for (CommGroup g : {CommGroup::kTp, CommGroup::kCp, CommGroup::kEp})
    spans = spans << 20 | std::min<int64_t>(core::SpanOfGroup(g, p, c).per_domain, (1 << 20) - 1);
  return spans;
}
// The same for the groups the synchronisation runs on (DP x CP, expert DP, HSDP shard and replica).
int64_t SyncSpans(const core::PlanSpec& p, const core::ClusterSpec& c) {
  int64_t spans = 0;
  for (CommGroup g : {CommGroup::kDpCp, CommGroup::kExpertDp, CommGroup::kHsdpShard, CommGroup::kHsdpReplica})
    spans = spans << 15 | std::min<int64_t>(core::SpanOfGroup(g, p, c).per_domain, (1 << 15) - 1);
  return spans;
}
// The sync part (core/step_graph.cc: GradSync, StageParamSync; layers, embedding and head alike)
// reads the parameters a rank holds (tp, ep, etp), the group sizes (dp, cp, HSDP shard), the ZeRO
// stage, sharding, optimizer, precision (the fp16 optimizer), state dtypes, gradient-accumulation
// fusion, the ZeRO-3 gather kind (and, for per-tensor gathers, the recompute mode) and the spans
// of its groups: not the micro batch, sequence, pp, TP overlap, CP kind, SP or schedule.
ListKey SyncPartKey(ListKey k, int64_t sync_spans) {
  // Kept: precision (bits 0-3), sharding (16-19), optimizer (20-23), the state dtypes (24-39),
  // grad_accum_fusion (41), grad_prescale (62).
  // The ZeRO-3 gather kind (43-44: flat 0, per-tensor 1, fsdp2 2). Per-tensor ZeRO-3 also reads
  // the recompute mode (4-7: full recompute re-gathers) and whether its per-microbatch
  // reduce-scatters overlap (60).
  constexpr int64_t kGatherKind = int64_t{3} << 43;
  const bool per_tensor = ((k[10] & kGatherKind) >> 43) == static_cast<int64_t>(core::Zero3Gather::kPerTensor);
  const int64_t kept = int64_t{0xF} | (int64_t{0xFFFFFF} << 16) | int64_t{1} << 41 | kGatherKind | int64_t{1} << 60 |
                       int64_t{1} << 62 | (per_tensor ? int64_t{0xF} << 4 : 0);
  k[10] &= kept;
  k[4] = k[6] = k[7] = -1;  // pp, micro batch, sequence
  k[11] = sync_spans;       // replaces the placement
  return k;
}
// The embedding's and head's sync part reads, beyond a layer's, whether the pipeline has more than
// one stage (with a tied embedding the last stage holds its own copy, which it synchronises and
// all-reduces with the first's: core/step_graph.cc HeadHoldsOutputWeight, TiedEmbeddingSync), the
// span of the pipeline's ends (its members per scale-up domain) and whether the schedule is
// DualPipe (whose head leaves that all-reduce to the embedding): in place of pp.
ListKey StageSyncKey(const ListKey& key, const core::PlanSpec& p, const core::ClusterSpec& c, int64_t sync_spans) {
  ListKey k = SyncPartKey(key, sync_spans);
  if (p.pp > 1)
    k[4] = core::SpanOfGroup(CommGroup::kPpEnds, p, c).per_domain |
           (p.schedule == core::Schedule::kDualPipe ? 1 << 20 : 0);
  return k;
}
// The recompute mode's bits in a ListKey's enum word (KeyOf): the mode and selective's modules.
constexpr int64_t kRecomputeBits = int64_t{0xF} << 4 | int64_t{0xFF} << 48 | int64_t{1} << 58;
ListKey PartKey(ListKey k, core::LayerPart part, int64_t compute_spans, int64_t sync_spans) {
  if (part == core::LayerPart::kSync) return SyncPartKey(k, sync_spans);
  if (part != core::LayerPart::kRecompute) k[10] &= ~kRecomputeBits;  // recompute
  // Kept: precision (bits 0-3), recompute (4-7 and its modules 48-55, 58), tp_overlap (8-11), cp_kind
  // (12-15), SP (40), EP all-to-alls hidden (42: DualPipe or ep_overlap), FP8 scaling (45-46),
  // elementwise kernels (56-57), the MoE dispatcher (59) and repeat_kv (61: its copies are compute
  // ops); the cross entropy (word 12).
  // Blanked: sharding, optimizer, the four state dtypes, grad_accum_fusion (41), the ZeRO-3 gather
  // kind (43-44).
  constexpr int64_t kKept = int64_t{0xFFFF} | int64_t{1} << 40 | int64_t{1} << 42 | int64_t{3} << 45 |
                            int64_t{0xFF} << 48 | int64_t{0xF} << 56 | int64_t{1} << 61;
  k[10] &= kKept;
  k[4] = k[5] = k[8] = k[9] = -1;  // pp, dp, zero, hsdp shard
  k[11] = compute_spans;           // replaces the placement: only these groups' spans reach the costs
  return k;
}

void CostLists(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g, const core::ClusterSpec& c,
               const core::Profile& prof, const ListKey& key, StepCostCache::Impl* cache, CostedLists* out);

}  // namespace

struct StepCostCache::Impl {
  const core::ModelSpec* m = nullptr;
  const core::GpuSpec* g = nullptr;
  const core::ClusterSpec* c = nullptr;
  const core::Profile* prof = nullptr;
  // The job's GPU count, tp x cp x pp x dp: the compute is costed at the pace of the slowest of
  // them (SlowestGpuPace), which the parts' keys leave out (a search's plans share one count).
  int64_t gpus = 0;
  std::unordered_map<ListKey, CostedLists, ListKeyHash> lists;
  std::array<std::unordered_map<ListKey, LayerPartCosts, ListKeyHash>, 3> parts;  // by core::LayerPart
  CollectiveMemo collectives;
  std::unordered_map<ListKey, StageListCosts, ListKeyHash> stage_lists;    // by the kSync part's key
  std::unordered_map<ListKey, StagePartCosts, ListKeyHash> stage_compute;  // by the kCompute part's key
  std::unordered_map<ListKey, StagePartCosts, ListKeyHash> stage_sync;     // by the kSync part's key
  int64_t hits = 0, misses = 0;

  const CostedLists& Get(const core::ModelSpec& mm, const core::PlanSpec& p, const core::GpuSpec& gg,
                         const core::ClusterSpec& cc, const core::Profile& pr) {
    const int64_t n = p.tp * p.cp * p.pp * p.dp;
    if (&mm != m || &gg != g || &cc != c || &pr != prof || n != gpus) {
      lists.clear();
      for (auto& pc : parts) pc.clear();
      collectives.clear();
      stage_lists.clear();
      stage_compute.clear();
      stage_sync.clear();
      m = &mm;
      g = &gg;
      c = &cc;
      prof = &pr;
      gpus = n;
    }
    const ListKey key = KeyOf(p);
    auto [it, fresh] = lists.try_emplace(key);
    if (fresh) {
      ++misses;
      CostLists(mm, p, gg, cc, pr, key, this, &it->second);
    } else {
      ++hits;
    }
    return it->second;
  }
};

namespace {

// Costs every list EstimateStep needs. Without a cache: the StepGraph's lists, each costed in op
// order (the one-plan path: report, explain, validate). With one: a layer's three parts each from
// (or into) its own table, added part by part; the sums then differ from the one-plan path only
// in the rounding of their order (tests/sim/step_model_test.cc: within 1e-12). `out` is fresh
// (value-initialised): the lists a plan lacks keep their zeros.
void CostListsOnce(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                   const core::ClusterSpec& c, const core::Profile& prof, CostedLists* out, StageListCosts* stage) {
  thread_local core::StepGraph graph;  // refilled per plan: kept per thread, its lists' capacity reused
  core::BuildStepGraph(m, p, &graph);
  const Coster coster(p, g, c, prof);
  out->dense_step = out->moe_step = stage->emb_step = stage->head_step = StepWork{};
  const bool partial = p.recompute == core::Recompute::kFull && p.recompute_layers > 0;
  {
    ListCost dense;
    coster.Add(graph.dense_layer, &dense, true, &out->dense_step);
    out->dense = dense.Finish();
    if (partial) out->dense_kept = dense.FinishWithoutRecompute();
  }
  // A dense model's MoE list is empty: its totals stay the zeros that finishing nothing gives.
  if (!graph.moe_layer.empty()) {
    ListCost moe;
    coster.Add(graph.moe_layer, &moe, true, &out->moe_step, /*moe_layer=*/true);
    out->moe = moe.Finish();
    if (partial) out->moe_kept = moe.FinishWithoutRecompute();
  }
  stage->emb = coster.Cost(graph.embedding, /*layer=*/false, &stage->emb_step);
  stage->head = coster.Cost(graph.head, /*layer=*/false, &stage->head_step);
  stage->p2p = stage->p2p_interleaved = p.pp > 1 ? coster.PipelineSendTime(graph.p2p, graph.p2p_gather) : 0.0;
  out->stage = stage;
}

StagePartCosts CostStagePart(const core::ModelSpec& m, const core::PlanSpec& p, const Coster& coster,
                             core::LayerPart part) {
  StagePartCosts out;
  thread_local std::vector<Op> ops, scratch;  // refilled per part: their capacity reused
  core::BuildEmbeddingPart(m, p, part, &ops, &scratch);
  coster.Add(ops, &out.emb, /*layer=*/false, &out.emb_step);
  core::BuildHeadPart(m, p, part, &ops, &scratch);
  coster.Add(ops, &out.head, /*layer=*/false, &out.head_step);
  return out;
}

// The embedding and head lists and the send: the compute part (shared by every plan with the same
// compute key) plus this plan's sync part, added pass by pass as for the layers.
void CostStageLists(const core::ModelSpec& m, const core::PlanSpec& p, const Coster& coster,
                    const StagePartCosts& compute, const StagePartCosts& sync, StageListCosts* s) {
  ListCost emb = compute.emb, head = compute.head;
  emb.AddPasses(sync.emb);
  head.AddPasses(sync.head);
  s->emb = emb.Finish();
  s->head = head.Finish();
  s->emb_step = compute.emb_step + sync.emb_step;
  s->head_step = compute.head_step + sync.head_step;
  if (p.pp > 1) {
    const Op send = core::BuildP2pOp(m, p), gather = core::BuildP2pGatherOp(m, p);
    s->p2p = coster.PipelineSendTime(send, gather, core::Schedule::k1F1B);
    s->p2p_interleaved = coster.PipelineSendTime(send, gather, core::Schedule::kInterleaved);
  }
}

void CostLists(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g, const core::ClusterSpec& c,
               const core::Profile& prof, const ListKey& key, StepCostCache::Impl* cache, CostedLists* out) {
  const Coster coster(p, g, c, prof, &cache->collectives);
  std::array<const LayerPartCosts*, 3> part{};
  const int64_t spans = ComputeSpans(p, c), sync_spans = SyncSpans(p, c);
  for (int i = 0; i < 3; ++i) {
    const auto which = static_cast<core::LayerPart>(i);
    auto [it, fresh] = cache->parts[static_cast<size_t>(i)].try_emplace(PartKey(key, which, spans, sync_spans));
    if (fresh) it->second = CostLayerPart(m, p, coster, which);
    part[static_cast<size_t>(i)] = &it->second;
  }
  ListTotals* layer[2] = {&out->dense, &out->moe};
  ListTotals* kept[2] = {&out->dense_kept, &out->moe_kept};
  for (size_t moe = 0; moe < (m.moe ? 2u : 1u); ++moe) {
    ListCost lc = part[0]->lists[moe];
    lc.AddPasses(part[1]->lists[moe]);
    lc.AddPasses(part[2]->lists[moe]);
    *layer[moe] = lc.Finish();
    // (The key leaves out recompute_layers: every full-recompute entry carries both.)
    if (p.recompute == core::Recompute::kFull) *kept[moe] = lc.FinishWithoutRecompute();
  }
  out->dense_step = part[2]->step[0];
  out->moe_step = part[2]->step[1];
  // The embedding, head and send: by the full key less the recompute mode; their compute and sync
  // parts each by their own key.
  ListKey stage_key = key;
  stage_key[10] &= ~kRecomputeBits;
  auto [sit, sfresh] = cache->stage_lists.try_emplace(stage_key);
  if (sfresh) {
    auto [cit, cfresh] = cache->stage_compute.try_emplace(PartKey(key, core::LayerPart::kCompute, spans, sync_spans));
    if (cfresh) cit->second = CostStagePart(m, p, coster, core::LayerPart::kCompute);
    auto [yit, yfresh] = cache->stage_sync.try_emplace(StageSyncKey(key, p, c, sync_spans));
    if (yfresh) yit->second = CostStagePart(m, p, coster, core::LayerPart::kSync);
    CostStageLists(m, p, coster, cit->second, yit->second, &sit->second);
  }
  out->stage = &sit->second;
}

}  // namespace

StepCostCache::StepCostCache() : impl_(std::make_unique<Impl>()) {}
StepCostCache::~StepCostCache() = default;
int64_t StepCostCache::hits() const { return impl_->hits; }
int64_t StepCostCache::misses() const { return impl_->misses; }

double OffloadExposed(double bytes, double link_bytes_per_s, double pass_s, int64_t layers) {
  if (bytes <= 0 || link_bytes_per_s <= 0) return 0;
  const double window = layers > 1 ? pass_s * static_cast<double>(layers - 1) / static_cast<double>(layers) : 0.0;
  return std::max(0.0, bytes / link_bytes_per_s - window);
}

StepEstimate EstimateStep(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                          const core::ClusterSpec& c, const core::Profile& prof, StepCostCache* cache,
                          StepDetail detail) {
  CostedLists own_lists;  // the one-plan path's lists (the cache holds its own)
  StageListCosts own_stage;
  if (!cache) CostListsOnce(m, p, g, c, prof, &own_lists, &own_stage);
  const CostedLists& L = cache ? cache->impl().Get(m, p, g, c, prof) : own_lists;
  const StageListCosts& S = *L.stage;
  const ListTotals &dense = L.dense, &moe = L.moe, &emb = S.emb, &head = S.head;
  const ListTotals &dense_kept = L.dense_kept, &moe_kept = L.moe_kept;
  const StepWork &dense_step = L.dense_step, &moe_step = L.moe_step, &emb_step = S.emb_step, &head_step = S.head_step;
  // The layers kept in BF16 under a quantized precision (PlanSpec::KeepsLayerInBf16): costed as
  // the plan's layers with precision bf16, from the cache under that key when there is one.
  // Without a cache, a cache of their own (built only for such plans; the one-plan path keeps its
  // single call of CostListsOnce, which the compiler inlines).
  std::optional<StepCostCache> own_bf16;
  const CostedLists* LB = nullptr;
  if (p.HasBf16Layers()) {
    StepCostCache* bc = cache ? cache : &own_bf16.emplace();
    LB = &bc->impl().Get(m, p.Bf16LayerPlan(), g, c, prof);
  }
  const double p2p = S.P2p(p);
  const double sends = SendsPerMicrobatch(p);
  const AmaxReduction amax = AmaxReductionTime(p, c);
  const MoeHostTime moe_host = MoeLayerHostTime(m, p);
  const bool merged_passes = p.ep_overlap || p.schedule == core::Schedule::kDualPipe;  // HostWait
  const bool rerun_sync = core::RecomputeRerunsMoeDispatcher(p);                       // HostWait
  const double unmerged = EpOverlapUnmergedShare(p);
  auto step_costs = [&](const StepWork& w, double count, RankCost* r) {
    r->step_comm += w.comm * count;
    r->param_gather += w.param_gather * count;
    r->optimizer += w.optimizer * count;
    r->tied += w.tied * count;
  };

  // `n` layers of one kind: the first `rc` with their recompute pass (`all`), the rest without it
  // (`kept`); an MoE layer waits for the host floor.
  auto add_layers = [&](const ListTotals& all, const ListTotals& kept, const StepWork& w, int64_t n, int64_t rc,
                        bool moe_layers, RankCost* r) {
    Accumulate(all, static_cast<double>(rc), r);
    if (rc < n) Accumulate(kept, static_cast<double>(n - rc), r);
    if (moe_layers && unmerged > 0) [[unlikely]] {
      // The unmerged passes' blocking all-to-alls, as a share of every microbatch's.
      const double f = unmerged * static_cast<double>(n) * all.unmerged_forward_s;
      const double b = unmerged * static_cast<double>(n) * all.unmerged_backward_s;
      r->times.forward_s += f;
      r->times.backward_input_s += b;
      r->comm[static_cast<int>(CommGroup::kEp)] += f + b;
    }
    if (moe_layers && moe_host.Total() > 0) {
      HostWait(all, moe_host, static_cast<double>(rc), merged_passes, rerun_sync, r);
      if (rc < n) HostWait(kept, moe_host, static_cast<double>(n - rc), merged_passes, rerun_sync, r);
    }
    step_costs(w, static_cast<double>(n), r);
  };

  // A rank's cost depends only on what it holds: its dense and MoE layer counts and whether it
  // has the embedding and the head. An even split has at most four kinds of rank, so each kind is
  // accumulated once and copied to the others.
  const core::RankLayout& layout = core::RankLayoutOf(m, p);
  const std::vector<uint32_t>& kind_of = layout.kind_of;
  thread_local std::vector<RankCost> ranks;  // one per kind; kept per thread, reused
  ranks.clear();
  for (const core::StageComposition& here : layout.kinds) {
    const int64_t n_dense = here.dense, n_moe = here.moe;
    const bool first = here.first, last = here.last;
    RankCost& r = ranks.emplace_back();
    // Full recomputation of only the stage's first recompute_layers layers (PlanSpec; the memory
    // model's order): the rest run without it. A model's leading dense layers come first.
    int64_t rc_dense = n_dense, rc_moe = n_moe;
    if (p.recompute == core::Recompute::kFull && p.recompute_layers > 0) {
      const int64_t left = std::min(p.recompute_layers, n_dense + n_moe);
      rc_dense = std::min(n_dense, left);
      rc_moe = std::min(n_moe, left - rc_dense);
    }
    // The BF16 layers (ValidatePlan refuses them beside a partial full recomputation, so every
    // layer here takes the plan's one recompute mode) are costed from their own lists.
    const int64_t b_dense = LB ? here.bf16_dense : 0, b_moe = LB ? here.bf16_moe : 0;
    add_layers(dense, dense_kept, dense_step, n_dense - b_dense, std::min(rc_dense, n_dense - b_dense), false, &r);
    if (b_dense > 0) add_layers(LB->dense, LB->dense, LB->dense_step, b_dense, b_dense, false, &r);
    if (n_moe > 0) {
      add_layers(moe, moe_kept, moe_step, n_moe - b_moe, std::min(rc_moe, n_moe - b_moe), true, &r);
      if (b_moe > 0) add_layers(LB->moe, LB->moe, LB->moe_step, b_moe, b_moe, true, &r);
    }
    if (first) {
      Accumulate(emb, 1, &r);
      step_costs(emb_step, 1, &r);
    }
    if (last) {
      Accumulate(head, 1, &r);
      step_costs(head_step, 1, &r);
    }
    // Pipeline sends: activations forward and gradients backward, not overlapped (Megatron's
    // default blocking send/recv between stages).
    if (p.pp > 1) {
      const double t = p2p * sends;
      r.p2p = 2 * t;
      r.times.forward_s += t;
      r.times.backward_input_s += t;
    }
    // FP8 delayed scaling's amax reductions (AmaxReductionTime): per microbatch and model chunk,
    // one as the forward leaves the block and one at the end of its backward, each on the compute
    // stream's path.
    if (amax.forward_s > 0) {
      const double chunks = SendsPerMicrobatch(p);
      r.comm[static_cast<int>(CommGroup::kDp)] += chunks * (amax.forward_s + amax.backward_s);
      r.times.forward_s += chunks * amax.forward_s;
      r.times.backward_input_s += chunks * amax.backward_s;
    }
    // Activation offloading (pp = 1): the offloaded layers' saved tensors cross the host link
    // during the forward and come back for their backward on a stream of their own, so the copies
    // hide under the compute; the compute waits only when they outlast it (OffloadExposed).
    // Fine-grained activation offloading (PlanSpec::offload_modules) the same way with the named
    // modules' saved tensors of every layer on the stage, copied on a D2H stream as each module's
    // forward ends and back on an H2D stream before its backward (Megatron-Core
    // fine_grained_activation_offload.py at d98e8a64). The plan's validation allows one of them.
    double offloaded = 0;
    if (p.offload_activation_layers > 0) offloaded = static_cast<double>(core::OffloadedActivationBytes(m, p));
    if (p.offload_modules != 0)
      offloaded = static_cast<double>(n_dense * core::FineGrainedOffloadBytes(m, p, false) +
                                      (n_moe > 0 ? n_moe * core::FineGrainedOffloadBytes(m, p, true) : 0));
    if (offloaded > 0) {
      const int64_t layers = n_dense + n_moe;
      const double f = OffloadExposed(offloaded, g.host_link_bytes_per_s, r.times.forward_s, layers);
      const double b = OffloadExposed(offloaded, g.host_link_bytes_per_s,
                                      r.times.backward_input_s + r.times.backward_weight_s, layers);
      r.offload = f + b;
      r.times.forward_s += f;
      r.times.backward_input_s += b;
      r.times.forward_offload_s = f;
      r.times.backward_input_offload_s = b;
    }
    // Checkpoints in host memory (PlanSpec::offload_checkpoints, DeepSpeed's cpu_checkpointing):
    // each recomputed layer's checkpoint is copied to the host as the forward leaves the layer and
    // back before its recomputation, on the compute stream, which waits for both (the copies go to
    // and from pageable host memory; costed at the link's rate, a lower bound on their time).
    if (p.offload_checkpoints && g.host_link_bytes_per_s > 0) {
      const double bytes = static_cast<double>(
          rc_dense * core::LayerActivationBytes(m, p, false, core::Recompute::kFull) +
          (rc_moe > 0 ? rc_moe * core::LayerActivationBytes(m, p, true, core::Recompute::kFull) : 0));
      const double t = bytes / g.host_link_bytes_per_s;
      r.offload += 2 * t;
      r.times.forward_s += t;
      r.times.backward_input_s += t;
      r.times.forward_offload_s += t;
      r.times.backward_input_offload_s += t;
    }
    // Gradient synchronisation runs under the last microbatch's backward when overlapped
    // (Megatron-LM's overlap_grad_reduce: each bucket's reduction starts once its gradients are
    // final); ZeRO-1/2's parameter all-gather under the next step's first forward when
    // overlap_param_gather, else after the optimizer step. In the limit of small buckets each
    // collective hides under its pass's time and what does not fit is exposed (the DES places
    // the same rule in time); while they run they slow that compute (OverlapSlowdown, NCCL's), the
    // passes' rule with H the collective and W its window (OverlapExtra). But for the first
    // stage's word embedding (EmbeddingTail): its gradient is final only when the backward ends and
    // its parameters are the forward's first, so its bucket's reduction and gather hide under
    // nothing.
    const double grad_sync = r.step_comm - r.param_gather;
    const double grad_window = p.overlap_grad_reduce ? r.times.backward_input_s + r.times.backward_weight_s : 0.0;
    const double param_window = p.overlap_param_gather ? r.times.forward_s : 0.0;
    const StepWork tail = first ? EmbeddingTail(emb_step) : StepWork{};
    const double tail_sync = tail.comm - tail.param_gather;
    r.step_slowdown = StepOverlapSlowdown(p, r.times, grad_sync - tail_sync, r.param_gather - tail.param_gather);
    r.step_comm = std::max(0.0, grad_sync - tail_sync - grad_window) + tail_sync +
                  std::max(0.0, r.param_gather - tail.param_gather - param_window) + tail.param_gather +
                  r.step_slowdown;
    // The tied embedding's all-reduce after the last flush's gradient reduction, exposed whole:
    // Megatron-LM's runs after finish_grad_sync, DeepSpeed's before its DP reduction, both
    // blocking the step's end.
    r.times.step_s = r.step_comm + r.tied + r.optimizer;
  }

  StepEstimate e;
  if (detail == StepDetail::kFull) {
    e.stages.resize(static_cast<size_t>(p.pp));
    for (size_t i = 0; i < kind_of.size(); ++i) e.stages[i] = ranks[kind_of[i]].times;
  }
  // The pipeline from the kinds: the sum over ranks is a sum over kinds times their counts, and
  // the critical rank is the lowest rank of the slowest kind (SchedulePipeline's choice).
  double sum_t = 0;
  size_t crit_kind = 0;
  // Several pipeline flushes a step (plan.pp_flushes): each runs its share of the microbatches
  // with its own warm-up and drain, and the exposed gradient synchronisation after each flush's
  // last backward; the optimizer steps once.
  const int64_t flushes = p.Flushes();
  auto rank_step = [&](const RankCost& r) { return r.times.step_s + static_cast<double>(flushes - 1) * r.step_comm; };
  for (size_t k = 0; k < ranks.size(); ++k) {
    sum_t += static_cast<double>(layout.count[k]) * ranks[k].times.Total();
    const double tk = ranks[k].times.Total(), tc = ranks[crit_kind].times.Total();
    if (tk > tc || (tk == tc && layout.first_rank[k] < layout.first_rank[crit_kind])) crit_kind = k;
  }
  const PipelineTime pipe = PipelineOf(p.schedule, sum_t, ranks[crit_kind].times, layout.first_rank[crit_kind], p.pp,
                                       p.MicrobatchesPerFlush(), p.vpp);
  const size_t crit = static_cast<size_t>(pipe.critical_stage);
  const RankCost& rc = ranks[kind_of[crit]];
  const double t_max = rc.times.Total();
  const double work = pipe.work_s * static_cast<double>(flushes), bubble = pipe.bubble_s * static_cast<double>(flushes);
  double step_s = 0;
  for (const auto& r : ranks) step_s = std::max(step_s, rank_step(r));
  e.critical_stage = static_cast<int64_t>(crit);
  e.time_s = work + bubble + step_s;

  // Breakdown: the critical rank's per-microbatch parts scaled to the work, then bubble and step.
  const double scale = t_max > 0 ? work / t_max : 0;
  StepBreakdown& b = e.breakdown;
  b.compute_s = rc.compute * scale;
  b.recompute_s = rc.recompute * scale;
  b.tp_comm_s = rc.comm[static_cast<int>(CommGroup::kTp)] * scale;
  b.cp_comm_s = rc.comm[static_cast<int>(CommGroup::kCp)] * scale;
  b.ep_comm_s = rc.comm[static_cast<int>(CommGroup::kEp)] * scale;
  b.dp_comm_s = (rc.comm[static_cast<int>(CommGroup::kDpCp)] + rc.comm[static_cast<int>(CommGroup::kDp)] +
                 rc.comm[static_cast<int>(CommGroup::kExpertDp)] + rc.comm[static_cast<int>(CommGroup::kHsdpShard)] +
                 rc.comm[static_cast<int>(CommGroup::kHsdpReplica)]) *
                scale;
  b.pp_comm_s = rc.p2p * scale;
  b.offload_s = rc.offload * scale;
  b.host_s = rc.host * scale;
  b.bubble_s = bubble;
  // The step-level part: exposed synchronisation and optimizer of the slowest rank at that phase
  // (of equally slow ranks, the last).
  double step_comm = 0, optimizer = 0, step_slowdown = 0, tied = 0;
  int64_t step_rank = -1;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const RankCost& r = ranks[k];
    const double best = step_comm + tied + optimizer;
    if (rank_step(r) > best || (rank_step(r) == best && layout.last_rank[k] > step_rank)) {
      step_comm = r.step_comm * static_cast<double>(flushes);
      tied = r.tied;
      optimizer = r.optimizer;
      step_slowdown = r.step_slowdown * static_cast<double>(flushes);
      step_rank = layout.last_rank[k];
    }
  }
  e.overlap_slowdown_s = rc.times.Slowdown() * scale + step_slowdown;
  b.dp_comm_s += step_comm;
  b.pp_comm_s += tied;  // the pipeline's ends
  b.optimizer_s = optimizer;
  e.bubble_fraction = e.time_s > 0 ? bubble / e.time_s : 0;

  // Throughput and utilisation.
  const double tokens = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
  const double gpus = static_cast<double>(p.gpus);
  e.tokens_per_s = tokens / e.time_s;
  e.tokens_per_s_per_gpu = e.tokens_per_s / gpus;
  const core::ForwardFlops fwd = core::ForwardFlopsPerToken(m, p.seq_len, core::AttentionFlops::kFull);
  const core::ForwardFlops fwd_causal = core::ForwardFlopsPerToken(m, p.seq_len, core::AttentionFlops::kCausal);
  e.model_flops = core::ModelFlopsPerIteration(fwd, p);
  e.model_flops_causal = core::ModelFlopsPerIteration(fwd_causal, p);
  e.hardware_flops = core::HardwareFlopsPerIteration(fwd, m, p);
  // The peak the FLOPs could run at: FP8 plans run GEMMs at the FP8 peak and attention at the
  // 16-bit peak, so the denominator weights each part by its own peak.
  const double gemm_peak = Peak(g, p.precision);
  const double attn_peak = Peak(g, core::Quantized(p.precision) ? core::Dtype::kBf16 : p.precision);
  const double ideal_per_flop = ((fwd.matmul + fwd.logits) / gemm_peak + fwd.attention / attn_peak) / fwd.Total();
  e.tflops_per_gpu = e.model_flops / e.time_s / gpus / 1e12;
  e.mfu = e.model_flops * ideal_per_flop / (e.time_s * gpus);
  e.mfu_causal = e.model_flops_causal * ideal_per_flop / (e.time_s * gpus);
  e.hfu = e.hardware_flops * ideal_per_flop / (e.time_s * gpus);
  return e;
}

TrainEstimate EstimateTraining(const StepEstimate& step, const core::PlanSpec& p, const core::GpuSpec& g,
                               const core::ClusterSpec& c, double tokens) {
  TrainEstimate t;
  t.tokens = tokens;
  const double tokens_per_step = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
  t.steps = tokens / tokens_per_step;
  const double seconds = t.steps * step.time_s;
  t.days = seconds / 86400.0;
  t.gpu_hours = seconds / 3600.0 * static_cast<double>(p.gpus);
  t.cost_usd = t.gpu_hours * c.price_per_gpu_hour_usd;
  t.energy_kwh = t.gpu_hours * g.tdp_w / 1000.0;
  return t;
}

}  // namespace meshplan::sim
