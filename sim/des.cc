#include "sim/des.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>

#include "core/collectives.h"
#include "core/memory.h"
#include "core/schedule.h"
#include "core/step_graph.h"

namespace meshplan::sim {

const char* Name(Stream s) {
  switch (s) {
    case Stream::kCompute: return "compute";
    case Stream::kTpComm: return "tp_comm";
    case Stream::kDpComm: return "dp_comm";
    case Stream::kP2p: return "p2p";
  }
  return "?";
}

const char* Name(TaskKind k) {
  switch (k) {
    case TaskKind::kExposedComm: return "exposed";
    case TaskKind::kOverlappedComm: return "overlapped";
    case TaskKind::kSend: return "send";
    case TaskKind::kGradSync: return "grad_sync";
    case TaskKind::kOptimizer: return "optimizer";
    case TaskKind::kParamGather: return "param_gather";
    case TaskKind::kTiedSync: return "tied_sync";
  }
  return "?";
}

// ---- splitting the analytic times by stream -----------------------------------------------------

namespace {

// The per-microbatch passes as StageTimes groups them: recompute runs inside the backward.
int PassIndex(core::Pass p) {
  switch (p) {
    case core::Pass::kForward: return 0;
    case core::Pass::kBackwardInput:
    case core::Pass::kRecompute: return 1;
    case core::Pass::kBackwardWeight: return 2;
    case core::Pass::kStep: break;
  }
  return -1;
}

// tp_comm carries the model-parallel groups, dp_comm the data-parallel ones.
int CommStream(core::CommGroup g) {
  switch (g) {
    case core::CommGroup::kDp:
    case core::CommGroup::kDpCp:
    case core::CommGroup::kExpertDp:
    case core::CommGroup::kHsdpShard:
    case core::CommGroup::kHsdpReplica: return 1;
    default: return 0;
  }
}

struct PassSplit {
  double compute = 0;
  std::array<double, 2> blocking{}, hidden{};  // by CommStream
};
struct ListSplit {
  std::array<PassSplit, 3> pass;  // by PassIndex
  double grad_sync = 0, optimizer = 0, param_gather = 0, tied_sync = 0;
  void Add(const ListSplit& o, double count) {
    for (size_t i = 0; i < 3; ++i) {
      pass[i].compute += o.pass[i].compute * count;
      for (size_t s = 0; s < 2; ++s) {
        pass[i].blocking[s] += o.pass[i].blocking[s] * count;
        pass[i].hidden[s] += o.pass[i].hidden[s] * count;
      }
    }
    grad_sync += o.grad_sync * count;
    optimizer += o.optimizer * count;
    param_gather += o.param_gather * count;
    tied_sync += o.tied_sync * count;
  }
};

}  // namespace

std::vector<StageStreams> StageStreamCosts(const core::ModelSpec& m, const core::PlanSpec& p, const core::GpuSpec& g,
                                           const core::ClusterSpec& c, const core::Profile& profile,
                                           const std::vector<StageTimes>& stages) {
  const core::StepGraph graph = core::BuildStepGraph(m, p);
  std::array<core::GroupSpan, core::kCommGroups> spans;
  for (int i = 0; i < core::kCommGroups; ++i) spans[i] = core::SpanOfGroup(static_cast<core::CommGroup>(i), p, c);
  // The same costs as the step model's Coster: compute ops by ComputeOpTime, collectives by
  // ProfiledCollectiveTime on the tiers their group spans, hidden or exposed by CollectiveHidden.
  auto collective = [&](const core::Op& op) {
    return op.share *  // 1 but for a hybrid model's blocks (core/step_graph.cc HybridMix)
           core::ProfiledCollectiveTime(profile, op.collective, op.bytes, spans[static_cast<size_t>(op.group)], c)
               .time_s;
  };
  // Compute at the pace of the job's slowest GPU, as the step model's Coster costs it.
  const double pace = SlowestGpuPace(p, g);
  auto op_time = [&](const core::Op& op) {
    return op.site != core::OpSite::kGpu ? HostOpTime(op, g, c, p) : pace * ComputeOpTime(op, g, profile);
  };
  auto split = [&](const std::vector<core::Op>& ops) {
    ListSplit s;
    for (size_t i = 0; i < ops.size(); ++i) {
      const core::Op& op = ops[i];
      const bool comm = op.kind == core::OpKind::kCollective || op.kind == core::OpKind::kP2p;
      const int pass = PassIndex(op.pass);
      if (pass < 0) {  // once per step: gradient synchronisation, the optimizer, ZeRO-1/2's gather
        if (comm && IsTiedEmbeddingSync(op)) s.tied_sync += collective(op);
        else if (comm && IsParamGather(op)) s.param_gather += collective(op);
        else if (comm) s.grad_sync += collective(op);
        else s.optimizer += op_time(op);
        continue;
      }
      PassSplit& ps = s.pass[static_cast<size_t>(pass)];
      if (!comm && op.group == core::CommGroup::kNone) {
        ps.compute += op_time(op);
        continue;
      }
      if (!comm) {  // a collective's own kernels (list-collective copies): blocking, as in the step model;
                    // a copy on its stream (offloaded parameters) hides or waits as its collective
        (op.overlappable ? ps.hidden : ps.blocking)[static_cast<size_t>(CommStream(op.group))] += op_time(op);
        continue;
      }
      const bool hide = CollectiveHidden(op, p);
      double t = collective(op);
      if (hide && TpPairing(op, p))  // AsyncTP, userbuffers: hidden only beside its own GEMM, as the Coster
        t = TpPairedSplit(ops, i, t, p, op_time, &ps.blocking[static_cast<size_t>(CommStream(op.group))]);
      (hide ? ps.hidden : ps.blocking)[static_cast<size_t>(CommStream(op.group))] += t;
    }
    return s;
  };
  const ListSplit dense = split(graph.dense_layer), moe = split(graph.moe_layer), emb = split(graph.embedding),
                  head = split(graph.head);
  // The layers kept in BF16 under a quantized precision: the plan's layers with precision bf16.
  ListSplit dense_bf16, moe_bf16;
  if (p.HasBf16Layers()) {
    const core::StepGraph gb = core::BuildStepGraph(m, p.Bf16LayerPlan());
    dense_bf16 = split(gb.dense_layer);
    moe_bf16 = split(gb.moe_layer);
  }
  const double p2p = p.pp > 1 ? PipelineSendSeconds(graph.p2p, p, c, profile) +
                                    (graph.p2p_gather.bytes > 0 ? collective(graph.p2p_gather) : 0.0)
                              : 0.0;
  // The step model puts p2p x sends into each microbatch's F and B (one send per model chunk).
  const double sends = SendsPerMicrobatch(p);

  std::vector<StageStreams> out;
  const core::RankLayout& layout = core::RankLayoutOf(m, p);
  for (int64_t r = 0; r < p.pp && r < static_cast<int64_t>(stages.size()); ++r) {
    // The rank's layers, as the step model counts them.
    ListSplit total;
    const core::StageComposition& here = layout.kinds[layout.kind_of[static_cast<size_t>(r)]];
    const int64_t n_moe = here.moe, n_dense = here.dense;
    const bool first = here.first, last = here.last;
    total.Add(dense, static_cast<double>(n_dense - here.bf16_dense));
    if (here.bf16_dense > 0) total.Add(dense_bf16, static_cast<double>(here.bf16_dense));
    if (n_moe > 0) total.Add(moe, static_cast<double>(n_moe - here.bf16_moe));
    if (here.bf16_moe > 0) total.Add(moe_bf16, static_cast<double>(here.bf16_moe));
    if (first) total.Add(emb, 1);
    if (last) total.Add(head, 1);

    const StageTimes& t = stages[static_cast<size_t>(r)];
    StageStreams s;
    s.p2p_s = p2p;
    // The first stage's word embedding syncs after its last backward and gathers before its first
    // forward, under no compute (the step model's EmbeddingTail).
    const double tail_sync = first ? emb.grad_sync : 0.0, tail_gather = first ? emb.param_gather : 0.0;
    s.grad_sync_s = total.grad_sync - tail_sync;
    s.grad_sync_tail_s = tail_sync;
    s.tied_sync_s = total.tied_sync;
    s.optimizer_s = total.optimizer;
    s.param_gather_s =
        std::max(0.0, total.param_gather - tail_gather - (p.overlap_param_gather ? t.forward_s : 0.0)) + tail_gather;
    // The step model's rule (StepOverlapSlowdown): the hidden synchronisation slows the compute.
    s.overlap_slowdown_s = StepOverlapSlowdown(p, t, total.grad_sync - tail_sync, total.param_gather - tail_gather);
    const std::array<double, 3> pass_time = {t.forward_s, t.backward_input_s, t.backward_weight_s};
    const std::array<double, 3> pass_slowed = {t.forward_slowdown_s, t.backward_input_slowdown_s,
                                               t.backward_weight_slowdown_s};
    std::array<PassStreams*, 3> passes = {&s.forward, &s.backward_input, &s.backward_weight};
    for (size_t k = 0; k < 3; ++k) {
      const PassSplit& ps = total.pass[k];
      const double in_pass_p2p = k < 2 ? p2p * sends : 0.0;
      // The activation-offload wait (StageTimes) is neither kernel nor collective: the compute
      // stream holds it below (the timeline shows it as compute; the breakdown names it).
      const double in_pass_offload = k == 0 ? t.forward_offload_s : k == 1 ? t.backward_input_offload_s : 0.0;
      // So is the wait for the host (the MoE layers' host floor, StageTimes): the compute stream
      // holds it too.
      const double in_pass_host = k == 0   ? t.forward_host_s
                                  : k == 1 ? t.backward_input_host_s
                                           : t.backward_weight_host_s;
      // The step model's exposed communication is what its pass time holds beyond the kernels
      // and the sends; of that, the blocking collectives first, then the spill of the
      // overlappable ones, shared between the streams by their overlappable time. The compute
      // the hidden ones slow (StageTimes' per-pass slowdown) stays with the kernels.
      const double exposed = std::max(0.0, pass_time[k] - in_pass_p2p - in_pass_offload - in_pass_host - ps.compute);
      const double hidden = ps.hidden[0] + ps.hidden[1];
      const double spill = std::clamp(exposed - ps.blocking[0] - ps.blocking[1] - pass_slowed[k], 0.0, hidden);
      std::array<double, 2> spill_by{};
      for (size_t i = 0; i < 2; ++i) spill_by[i] = hidden > 0 ? spill * ps.hidden[i] / hidden : 0.0;
      PassStreams& out_pass = *passes[k];
      out_pass.tp_exposed_s = ps.blocking[0] + spill_by[0];
      out_pass.dp_exposed_s = ps.blocking[1] + spill_by[1];
      // Anchored to the analytic pass time, so the pass holds compute for exactly as long.
      out_pass.compute_s = std::max(0.0, pass_time[k] - in_pass_p2p - out_pass.tp_exposed_s - out_pass.dp_exposed_s);
      out_pass.tp_overlapped_s = std::clamp(ps.hidden[0] - spill_by[0], 0.0, out_pass.compute_s);
      out_pass.dp_overlapped_s = std::clamp(ps.hidden[1] - spill_by[1], 0.0, out_pass.compute_s);
    }
    out.push_back(s);
  }
  return out;
}

std::vector<StageStreams> ComputeOnlyStreams(const std::vector<StageTimes>& stages) {
  std::vector<StageStreams> out;
  out.reserve(stages.size());
  for (const StageTimes& t : stages) {
    StageStreams s;
    s.forward.compute_s = t.forward_s;
    s.backward_input.compute_s = t.backward_input_s;
    s.backward_weight.compute_s = t.backward_weight_s;
    s.optimizer_s = t.step_s;
    out.push_back(s);
  }
  return out;
}

// ---- the event-by-event simulation --------------------------------------------------------------

namespace {

constexpr double kUnset = -1.0;

using Pipe = core::PipeTopology;  // virtual stages on ranks (core/schedule.h)

struct OpRef {
  PipeOpKind kind;
  int64_t vs, mb;  // mb: the pass's microbatch, 0..m-1
};

// One pass of one chunk on one rank, in seconds.
struct OpCost {
  double compute = 0, tp_exposed = 0, tp_overlapped = 0, dp_exposed = 0, dp_overlapped = 0;
};
OpCost Scaled(const PassStreams& p, double k) {
  return {p.compute_s * k, p.tp_exposed_s * k, p.tp_overlapped_s * k, p.dp_exposed_s * k, p.dp_overlapped_s * k};
}
OpCost Scaled(const OpCost& c, double k) {
  return {c.compute * k, c.tp_exposed * k, c.tp_overlapped * k, c.dp_exposed * k, c.dp_overlapped * k};
}
OpCost Sum(const OpCost& a, const OpCost& b) {
  return {a.compute + b.compute, a.tp_exposed + b.tp_exposed, a.tp_overlapped + b.tp_overlapped,
          a.dp_exposed + b.dp_exposed, a.dp_overlapped + b.dp_overlapped};
}

struct Interval {
  double start, end;
};

// Per rank: what one pass op costs (F, B, W of one chunk), its send, and the step-level work.
struct RankCost {
  std::array<OpCost, 3> op;
  double send = 0, grad_sync = 0, grad_tail = 0, optimizer = 0, param_gather = 0, tied_sync = 0;
  double slowdown = 0;  // StageStreams::overlap_slowdown_s
};

class Simulator {
 public:
  Simulator(const Pipe& pipe, std::vector<RankCost> cost, bool split_w, double jitter, uint64_t seed,
            DesResult* timeline)
      : pipe_(pipe), cost_(std::move(cost)), split_w_(split_w), jitter_(jitter), rng_(seed), timeline_(timeline) {
    const size_t n = static_cast<size_t>(pipe_.Stages());
    for (auto& e : end_) {
      e.assign(n, {});
      for (size_t vs = 0; vs < n; ++vs) e[vs].assign(static_cast<size_t>(pipe_.m), kUnset);
    }
    last_b_start_.assign(n, kUnset);
    const size_t ranks = static_cast<size_t>(pipe_.pp);
    free_.assign(ranks, 0.0);
    held_.assign(ranks, 0.0);
    last_backward_end_.assign(ranks, 0.0);
    busy_.assign(ranks, {});
    dp_busy_.assign(ranks, {});
  }

  // Earliest start of `op` given its dependencies, or kUnset if one is not yet scheduled. A
  // dependency on another stage's pass is on the end of its send.
  double Ready(const OpRef& op) const {
    double t = 0;
    auto need = [&](int kind, int64_t vs) {
      const double e = end_[kind][static_cast<size_t>(vs)][static_cast<size_t>(op.mb)];
      if (e == kUnset) return false;
      t = std::max(t, e);
      return true;
    };
    switch (op.kind) {
      case PipeOpKind::kForward:
        if (pipe_.Prev(op.vs) >= 0 && !need(0, pipe_.Prev(op.vs))) return kUnset;
        return t;
      case PipeOpKind::kBackward:
        if (!need(0, op.vs)) return kUnset;
        if (pipe_.Next(op.vs) >= 0 && !need(1, pipe_.Next(op.vs))) return kUnset;
        return t;
      case PipeOpKind::kWeight:
        if (!need(1, op.vs)) return kUnset;
        return t;
    }
    return kUnset;
  }

  // Places `op` at max(ready, compute free): first half of its kernels, its exposed collectives
  // (TP/CP/EP, then DP), the second half of its kernels; the overlapped collectives start with
  // each half (half each, so a stream never overlaps itself); then its blocking send.
  void Run(const OpRef& op, double ready) {
    const int64_t rank = pipe_.Rank(op.vs);
    const size_t ri = static_cast<size_t>(rank);
    const RankCost& rc = cost_[ri];
    OpCost c = rc.op[static_cast<size_t>(op.kind)];
    if (op.kind == PipeOpKind::kBackward && !split_w_) c = Sum(c, rc.op[2]);
    const int64_t to = op.kind == PipeOpKind::kForward    ? pipe_.Next(op.vs)
                       : op.kind == PipeOpKind::kBackward ? pipe_.Prev(op.vs)
                                                          : -1;
    double send = to >= 0 && pipe_.Rank(to) != rank ? rc.send : 0.0;
    if (jitter_ > 0) {
      std::normal_distribution<double> n(1.0, jitter_);
      const double f = std::max(0.05, n(rng_));
      c = Scaled(c, f);
      send *= f;
    }
    const double start = std::max(free_[ri], ready);
    const double a = start + c.compute / 2;            // end of the first half of the kernels
    const double b = a + c.tp_exposed + c.dp_exposed;  // start of the second half
    const double end = b + c.compute / 2;
    const double done = end + send;
    free_[ri] = done;
    held_[ri] += done - start;
    auto& busy = busy_[ri];
    busy[static_cast<size_t>(Stream::kCompute)] += c.compute;
    busy[static_cast<size_t>(Stream::kTpComm)] += c.tp_exposed + c.tp_overlapped;
    busy[static_cast<size_t>(Stream::kDpComm)] += c.dp_exposed + c.dp_overlapped;
    busy[static_cast<size_t>(Stream::kP2p)] += send;
    end_[static_cast<int>(op.kind)][static_cast<size_t>(op.vs)][static_cast<size_t>(op.mb)] = done;
    if (op.kind == PipeOpKind::kBackward && op.mb == pipe_.FirstMb(op.vs) + pipe_.Mbs(op.vs) - 1)
      last_b_start_[static_cast<size_t>(op.vs)] = start;
    if (op.kind != PipeOpKind::kForward) last_backward_end_[ri] = std::max(last_backward_end_[ri], end);
    const double h_tp = c.tp_overlapped / 2, h_dp = c.dp_overlapped / 2;
    if (c.dp_exposed + c.dp_overlapped > 0) {
      // Kept for the gradient synchronisation, which fills the stream's gaps.
      auto& iv = dp_busy_[ri];
      if (h_dp > 0) iv.push_back({start, start + h_dp});
      if (c.dp_exposed > 0) iv.push_back({a + c.tp_exposed, b});
      if (h_dp > 0) iv.push_back({b, b + h_dp});
    }
    if (!timeline_) return;
    const int64_t chunk = pipe_.Chunk(op.vs);
    timeline_->ops.push_back({rank, chunk, op.mb, op.kind, start, end});
    auto task = [&](TaskKind k, Stream s, double t0, double t1) {
      if (t1 > t0) timeline_->tasks.push_back({rank, chunk, op.mb, op.kind, k, s, t0, t1});
    };
    task(TaskKind::kOverlappedComm, Stream::kTpComm, start, start + h_tp);
    task(TaskKind::kExposedComm, Stream::kTpComm, a, a + c.tp_exposed);
    task(TaskKind::kOverlappedComm, Stream::kTpComm, b, b + h_tp);
    task(TaskKind::kOverlappedComm, Stream::kDpComm, start, start + h_dp);
    task(TaskKind::kExposedComm, Stream::kDpComm, a + c.tp_exposed, b);
    task(TaskKind::kOverlappedComm, Stream::kDpComm, b, b + h_dp);
    task(TaskKind::kSend, Stream::kP2p, end, done);
  }

  // The step-level work of rank `r` after its pipeline ops: the gradient synchronisation on
  // dp_comm, then the optimizer on compute. Overlapped (Megatron's overlap_grad_reduce), the
  // gradients of each chunk stream out in buckets while its last microbatch's backward runs: in
  // the limit of small buckets the chunk's share (the rank's total split evenly over its chunks)
  // is ready from the start of that backward, so the reduction ends at max(backward end,
  // start + its time), the step model's rule. Not overlapped: it starts when the rank's last
  // backward finishes. A tied word embedding's all-reduce (StageStreams::tied_sync_s) follows on
  // p2p, blocking: the step model adds it to the end rank's step. Then the exposed part of
  // ZeRO-1/2's parameter all-gather (StageStreams::param_gather_s) on dp_comm. Returns the end of
  // the rank's step.
  double Finish(int64_t r, bool overlap, const std::vector<int64_t>& hosted) {
    const size_t ri = static_cast<size_t>(r);
    const RankCost& rc = cost_[ri];
    double sync_end = 0;
    if (rc.grad_sync > 0) {
      std::vector<double> ready;
      if (overlap) {
        for (int64_t vs : hosted)
          if (last_b_start_[static_cast<size_t>(vs)] != kUnset) ready.push_back(last_b_start_[static_cast<size_t>(vs)]);
        std::sort(ready.begin(), ready.end());
      }
      if (ready.empty()) ready.push_back(last_backward_end_[ri]);
      const double share = rc.grad_sync / static_cast<double>(ready.size());
      for (double t : ready) sync_end = std::max(sync_end, FillGaps(r, t, share));
      busy_[ri][static_cast<size_t>(Stream::kDpComm)] += rc.grad_sync;
    }
    // The first stage's word embedding: its gradient is final when the last backward ends.
    if (rc.grad_tail > 0) {
      sync_end = std::max(sync_end, FillGaps(r, last_backward_end_[ri], rc.grad_tail));
      busy_[ri][static_cast<size_t>(Stream::kDpComm)] += rc.grad_tail;
    }
    // The compute the hidden synchronisation slowed (StageStreams::overlap_slowdown_s) ends
    // before the optimizer, as the step model adds it.
    double ready = std::max(free_[ri], sync_end);
    if (rc.tied_sync > 0) {
      busy_[ri][static_cast<size_t>(Stream::kP2p)] += rc.tied_sync;
      if (timeline_)
        timeline_->tasks.push_back(
            {r, -1, -1, PipeOpKind::kWeight, TaskKind::kTiedSync, Stream::kP2p, ready, ready + rc.tied_sync});
      ready += rc.tied_sync;
    }
    const double start = ready + rc.slowdown;
    const double end = start + rc.optimizer;
    busy_[ri][static_cast<size_t>(Stream::kCompute)] += rc.slowdown + rc.optimizer;
    if (timeline_ && rc.optimizer > 0)
      timeline_->tasks.push_back({r, -1, -1, PipeOpKind::kWeight, TaskKind::kOptimizer, Stream::kCompute, start, end});
    if (rc.param_gather <= 0) return end;
    busy_[ri][static_cast<size_t>(Stream::kDpComm)] += rc.param_gather;
    if (timeline_)
      timeline_->tasks.push_back(
          {r, -1, -1, PipeOpKind::kWeight, TaskKind::kParamGather, Stream::kDpComm, end, end + rc.param_gather});
    return end + rc.param_gather;
  }

  double Free(int64_t rank) const { return free_[static_cast<size_t>(rank)]; }
  double Held(int64_t rank) const { return held_[static_cast<size_t>(rank)]; }
  const std::array<double, kStreams>& Busy(int64_t rank) const { return busy_[static_cast<size_t>(rank)]; }

 private:
  // Runs `d` seconds of gradient synchronisation on rank r's dp_comm stream from `t` on, in the
  // gaps its per-microbatch DP collectives leave; returns the end.
  double FillGaps(int64_t r, double t, double d) {
    auto& iv = dp_busy_[static_cast<size_t>(r)];
    std::sort(iv.begin(), iv.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });
    auto it = std::upper_bound(iv.begin(), iv.end(), t, [](double v, const Interval& x) { return v < x.end; });
    std::vector<Interval> added;
    while (d > 0) {
      if (it != iv.end() && it->start <= t) {
        t = std::max(t, it->end);
        ++it;
        continue;
      }
      const double gap = it == iv.end() ? std::numeric_limits<double>::infinity() : it->start - t;
      const double piece = std::min(d, gap);
      added.push_back({t, t + piece});
      if (timeline_)
        timeline_->tasks.push_back(
            {r, -1, -1, PipeOpKind::kWeight, TaskKind::kGradSync, Stream::kDpComm, t, t + piece});
      if (piece < d) {
        d -= piece;
        t = it->start;
      } else {
        t += piece;
        d = 0;
      }
    }
    iv.insert(iv.end(), added.begin(), added.end());
    return t;
  }

  const Pipe& pipe_;
  std::vector<RankCost> cost_;
  bool split_w_;
  double jitter_;
  std::mt19937_64 rng_;
  DesResult* timeline_;
  std::vector<std::vector<double>> end_[3];  // when each pass's output is at its consumer
  std::vector<double> last_b_start_;         // per virtual stage: start of its last microbatch's B
  std::vector<double> free_, held_, last_backward_end_;
  std::vector<std::array<double, kStreams>> busy_;
  std::vector<std::vector<Interval>> dp_busy_;
};

core::Status CheckPass(const PassStreams& p, int64_t rank, const char* pass) {
  const std::string where = "stages[" + std::to_string(rank) + "]." + pass;
  for (double v : {p.compute_s, p.tp_exposed_s, p.tp_overlapped_s, p.dp_exposed_s, p.dp_overlapped_s})
    if (!(v >= 0) || !std::isfinite(v))
      return core::Status::InvalidArgument(where + ": durations must be finite and >= 0");
  const double slack = 1e-12 * (1 + p.compute_s);
  if (p.tp_overlapped_s > p.compute_s + slack || p.dp_overlapped_s > p.compute_s + slack)
    return core::Status::InvalidArgument(where + ": an overlapped collective longer than the pass's compute (" +
                                         std::to_string(p.compute_s) + " s) is partly exposed");
  return core::Status::Ok();
}

}  // namespace

core::Result<DesResult> SimulateStreams(const core::PlanSpec& plan, const std::vector<StageStreams>& stages,
                                        int64_t microbatches, const DesOptions& options) {
  const int64_t pp = plan.pp;
  if (static_cast<int64_t>(stages.size()) != pp)
    return core::Status::InvalidArgument("stages: " + std::to_string(stages.size()) +
                                         " given, plan.pp=" + std::to_string(pp));
  if (microbatches < 1) return core::Status::InvalidArgument("microbatches: must be >= 1");
  if (plan.Flushes() > 1)
    return core::Status::InvalidArgument(
        "plan.pp_flushes: the stream simulation runs the step's microbatches in one pipeline flush; use report's "
        "analytic step for " +
        std::to_string(plan.pp_flushes) + " flushes");
  // Bounded work: every (rank, chunk, microbatch) is up to three passes, each an event with its
  // communication and, with a timeline, a record.
  const double passes = 3.0 * static_cast<double>(pp) * static_cast<double>(std::max<int64_t>(plan.vpp, 1)) *
                        static_cast<double>(microbatches);
  if (passes > kMaxDesPasses) {
    char msg[512];
    std::snprintf(msg, sizeof msg,
                  "plan.global_batch: %lld microbatches per pipeline x pp %lld x vpp %lld x 3 passes = %.3g "
                  "passes, above the event simulation's bound of %.0e (about a second and 1 GB); simulate a "
                  "smaller global batch (the step time scales with the microbatches) or use report's analytic step",
                  static_cast<long long>(microbatches), static_cast<long long>(pp),
                  static_cast<long long>(std::max<int64_t>(plan.vpp, 1)), passes, kMaxDesPasses);
    return core::Status::InvalidArgument(msg);
  }
  if (!options.stage_slowdown.empty() && static_cast<int64_t>(options.stage_slowdown.size()) != pp)
    return core::Status::InvalidArgument("stage_slowdown: needs one factor per pipeline rank (" + std::to_string(pp) +
                                         "), got " + std::to_string(options.stage_slowdown.size()));
  for (double f : options.stage_slowdown)
    if (!(f > 0) || !std::isfinite(f))
      return core::Status::InvalidArgument("stage_slowdown: factors must be finite and > 0 (got " + std::to_string(f) +
                                           ")");
  // A relative standard deviation: above 1 most draws would be clamped at the floor of 0.05.
  if (!(options.jitter >= 0 && options.jitter <= 1))
    return core::Status::InvalidArgument("jitter: must be a relative standard deviation in [0, 1] (got " +
                                         std::to_string(options.jitter) + ")");
  for (int64_t r = 0; r < pp; ++r) {
    const StageStreams& s = stages[static_cast<size_t>(r)];
    for (auto [pass, name] : {std::pair{&s.forward, "forward"},
                              {&s.backward_input, "backward_input"},
                              {&s.backward_weight, "backward_weight"}}) {
      if (core::Status st = CheckPass(*pass, r, name); !st.ok()) return st;
    }
    for (double v : {s.p2p_s, s.grad_sync_s, s.grad_sync_tail_s, s.tied_sync_s, s.optimizer_s, s.param_gather_s,
                     s.overlap_slowdown_s})
      if (!(v >= 0) || !std::isfinite(v))
        return core::Status::InvalidArgument("stages[" + std::to_string(r) +
                                             "]: p2p, grad_sync, grad_sync_tail, tied_sync, optimizer, param_gather "
                                             "and overlap_slowdown times must be finite and >= 0");
  }

  // The schedule's fixed per-rank orders (core/schedule.h), the ones the runtime runs.
  auto orders = core::PipelineOrders(plan.schedule, pp, plan.vpp, microbatches, plan.vpp_group);
  if (!orders.ok()) return orders.status();
  const Pipe pipe(plan.schedule, pp, plan.vpp, microbatches);
  // Per-op durations: a rank's per-microbatch times split over its chunks (DualPipe: two stages).
  // A send is one pipeline_send per op whatever the split.
  const double split = static_cast<double>(pipe.chunks);
  std::vector<RankCost> cost;
  for (int64_t r = 0; r < pp; ++r) {
    const double slow = options.stage_slowdown.empty() ? 1.0 : options.stage_slowdown[static_cast<size_t>(r)];
    const StageStreams& s = stages[static_cast<size_t>(r)];
    RankCost rc;
    rc.op = {Scaled(s.forward, slow / split), Scaled(s.backward_input, slow / split),
             Scaled(s.backward_weight, slow / split)};
    rc.send = s.p2p_s * slow;
    rc.grad_sync = s.grad_sync_s;
    rc.grad_tail = s.grad_sync_tail_s;
    rc.tied_sync = s.tied_sync_s;
    rc.optimizer = s.optimizer_s;
    rc.param_gather = s.param_gather_s;
    rc.slowdown = s.overlap_slowdown_s;
    cost.push_back(rc);
  }
  DesResult res;
  Simulator sim(pipe, std::move(cost), core::SplitsWeightGradients(plan.schedule), options.jitter, options.seed,
                options.keep_timeline ? &res : nullptr);
  std::vector<std::vector<int64_t>> hosted(static_cast<size_t>(pp));  // virtual stages per rank
  for (int64_t vs = 0; vs < pipe.Stages(); ++vs) hosted[static_cast<size_t>(pipe.Rank(vs))].push_back(vs);

  // Each rank runs its next op as soon as that op's inputs have arrived and the rank is free.
  std::vector<size_t> next(static_cast<size_t>(pp), 0);
  size_t remaining = 0;
  for (const auto& o : *orders) remaining += o.size();
  while (remaining > 0) {
    bool progress = false;
    for (int64_t r = 0; r < pp; ++r) {
      auto& i = next[static_cast<size_t>(r)];
      const auto& order = (*orders)[static_cast<size_t>(r)];
      while (i < order.size()) {
        const core::ScheduleSlot& slot = order[i];
        const OpRef op{slot.pass, pipe.VStage(r, slot.chunk), slot.microbatch};
        const double ready = sim.Ready(op);
        if (ready == kUnset) break;
        sim.Run(op, ready);
        ++i;
        --remaining;
        progress = true;
      }
    }
    if (!progress) return core::Status::Internal("pipeline schedule deadlocked (a bug in the order)");
  }

  for (int64_t r = 0; r < pp; ++r) res.pipeline_s = std::max(res.pipeline_s, sim.Free(r));
  double held = 0;
  res.step_time_s = res.pipeline_s;
  for (int64_t r = 0; r < pp; ++r) {
    res.step_time_s =
        std::max(res.step_time_s, sim.Finish(r, plan.overlap_grad_reduce, hosted[static_cast<size_t>(r)]));
    DesStage st;
    st.busy_s = sim.Held(r);
    st.idle_s = res.pipeline_s - st.busy_s;
    st.stream_busy_s = sim.Busy(r);
    held += st.busy_s;
    res.stages.push_back(st);
  }
  res.bubble_fraction = res.pipeline_s > 0 ? 1.0 - held / (res.pipeline_s * static_cast<double>(pp)) : 0;
  if (options.keep_timeline) {
    std::stable_sort(res.ops.begin(), res.ops.end(), [](const TimelineOp& x, const TimelineOp& y) {
      return x.stage != y.stage ? x.stage < y.stage : x.start_s < y.start_s;
    });
    std::stable_sort(res.tasks.begin(), res.tasks.end(), [](const TimelineTask& x, const TimelineTask& y) {
      if (x.stage != y.stage) return x.stage < y.stage;
      if (x.stream != y.stream) return x.stream < y.stream;
      return x.start_s < y.start_s;
    });
  }
  return res;
}

core::Result<DesResult> SimulatePipeline(const core::PlanSpec& plan, const std::vector<StageTimes>& stages,
                                         int64_t microbatches, const DesOptions& options) {
  return SimulateStreams(plan, ComputeOnlyStreams(stages), microbatches, options);
}

// ---- timelines ---------------------------------------------------------------------------------

namespace {

// "exposed F3", "send B12", "grad_sync", "optimizer".
std::string TaskLabel(const TimelineTask& t) {
  if (t.microbatch < 0) return Name(t.kind);
  return std::string(Name(t.kind)) + " " + core::Name(t.pass) + std::to_string(t.microbatch);
}

// The communication streams any rank uses, in Stream order.
std::vector<Stream> CommStreamsUsed(const DesResult& r) {
  std::array<bool, kStreams> used{};
  for (const auto& t : r.tasks) used[static_cast<size_t>(t.stream)] = true;
  std::vector<Stream> out;
  for (Stream s : {Stream::kTpComm, Stream::kDpComm, Stream::kP2p})
    if (used[static_cast<size_t>(s)]) out.push_back(s);
  return out;
}

double Horizon(const DesResult& r) { return std::max(r.pipeline_s, r.step_time_s); }

const char* TaskColour(TaskKind k) {
  switch (k) {
    case TaskKind::kExposedComm: return "#e45756";
    case TaskKind::kOverlappedComm: return "#ff9d98";
    case TaskKind::kSend: return "#b279a2";
    case TaskKind::kGradSync: return "#9d755d";
    case TaskKind::kOptimizer: return "#79706e";
    case TaskKind::kParamGather: return "#bab0ac";
    case TaskKind::kTiedSync: return "#4c78a8";
  }
  return "#000";
}

}  // namespace

std::string ChromeTraceJson(const DesResult& r) {
  // Trace Event Format: complete events ("ph": "X") in microseconds; one process per rank, one
  // thread per stream, named by metadata events ("ph": "M").
  std::ostringstream o;
  o << "{\"traceEvents\": [\n";
  bool first = true;
  char line[384];
  auto emit = [&] {
    o << (first ? "" : ",\n") << line;
    first = false;
  };
  for (size_t s = 0; s < r.stages.size(); ++s) {
    std::snprintf(line, sizeof line,
                  "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %zu, \"args\": {\"name\": \"rank %zu\"}}", s,
                  s);
    emit();
    for (int k = 0; k < kStreams; ++k) {
      std::snprintf(
          line, sizeof line,
          "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %zu, \"tid\": %d, \"args\": {\"name\": \"%s\"}}", s, k,
          Name(static_cast<Stream>(k)));
      emit();
      std::snprintf(line, sizeof line,
                    "  {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": %zu, \"tid\": %d, "
                    "\"args\": {\"sort_index\": %d}}",
                    s, k, k);
      emit();
    }
  }
  for (const auto& op : r.ops) {
    std::snprintf(line, sizeof line,
                  "  {\"name\": \"%s%lld\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %lld, \"tid\": %d, "
                  "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"chunk\": %lld}}",
                  core::Name(op.kind), static_cast<long long>(op.microbatch), core::Name(op.kind),
                  static_cast<long long>(op.stage), static_cast<int>(Stream::kCompute), op.start_s * 1e6,
                  (op.end_s - op.start_s) * 1e6, static_cast<long long>(op.chunk));
    emit();
  }
  for (const auto& t : r.tasks) {
    std::snprintf(line, sizeof line,
                  "  {\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %lld, \"tid\": %d, "
                  "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"chunk\": %lld, \"stream\": \"%s\"}}",
                  TaskLabel(t).c_str(), Name(t.kind), static_cast<long long>(t.stage), static_cast<int>(t.stream),
                  t.start_s * 1e6, (t.end_s - t.start_s) * 1e6, static_cast<long long>(t.chunk), Name(t.stream));
    emit();
  }
  o << "\n], \"displayTimeUnit\": \"ms\"}\n";
  return o.str();
}

std::string SvgGantt(const DesResult& r, int64_t stages) {
  const std::vector<Stream> comm = CommStreamsUsed(r);
  const double width = 1200, row = 20, sub = 6, gap = 6, left = 70, top = 30;
  const double band = row + sub * static_cast<double>(comm.size()) + gap;  // one rank's rows
  const double horizon = Horizon(r);
  const double scale = horizon > 0 ? (width - left - 10) / horizon : 0;
  auto sub_row = [&](Stream s) {  // offset of a stream's sub-row in a band; compute: 0
    for (size_t i = 0; i < comm.size(); ++i)
      if (comm[i] == s) return row + sub * static_cast<double>(i);
    return 0.0;
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
    << top + band * static_cast<double>(stages) + 40 << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<text x=\"" << left << "\" y=\"18\">step " << r.step_time_s << " s, pipeline " << r.pipeline_s << " s, bubble "
    << 100 * r.bubble_fraction << "% (F blue, B orange, W green, optimizer grey, idle white";
  if (!comm.empty()) {
    o << "; sub-rows:";
    for (Stream s : comm) o << " " << Name(s);
    o << ", exposed red, overlapped pink, send purple, grad sync brown";
  }
  o << ")</text>\n";
  for (int64_t s = 0; s < stages; ++s) {
    const double y = top + band * static_cast<double>(s);
    o << "<text x=\"4\" y=\"" << y + 14 << "\">rank " << s << "</text>\n";
    o << "<rect x=\"" << left << "\" y=\"" << y << "\" width=\"" << horizon * scale << "\" height=\"" << row - 2
      << "\" fill=\"white\" stroke=\"#ccc\"/>\n";
    for (Stream c : comm) {
      o << "<text x=\"16\" y=\"" << y + sub_row(c) + sub - 1 << "\" font-size=\"7\">" << Name(c) << "</text>\n";
      o << "<rect x=\"" << left << "\" y=\"" << y + sub_row(c) << "\" width=\"" << horizon * scale << "\" height=\""
        << sub - 1 << "\" fill=\"white\" stroke=\"#eee\"/>\n";
    }
  }
  for (const auto& op : r.ops) {
    const char* fill = op.kind == PipeOpKind::kForward    ? "#4c78a8"
                       : op.kind == PipeOpKind::kBackward ? "#f58518"
                                                          : "#54a24b";
    o << "<rect x=\"" << left + op.start_s * scale << "\" y=\"" << top + band * static_cast<double>(op.stage)
      << "\" width=\"" << std::max(0.5, (op.end_s - op.start_s) * scale) << "\" height=\"" << row - 2 << "\" fill=\""
      << fill << "\"><title>" << core::Name(op.kind) << op.microbatch << " chunk " << op.chunk << ": " << op.start_s
      << "-" << op.end_s << " s</title></rect>\n";
  }
  for (const auto& t : r.tasks) {
    const bool main = t.stream == Stream::kCompute;
    o << "<rect x=\"" << left + t.start_s * scale << "\" y=\""
      << top + band * static_cast<double>(t.stage) + sub_row(t.stream) << "\" width=\""
      << std::max(0.5, (t.end_s - t.start_s) * scale) << "\" height=\"" << (main ? row - 2 : sub - 1) << "\" fill=\""
      << TaskColour(t.kind) << "\"><title>" << Name(t.stream) << ": " << TaskLabel(t) << ": " << t.start_s << "-"
      << t.end_s << " s</title></rect>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string AsciiGantt(const DesResult& r, int64_t stages, int width) {
  const std::vector<Stream> comm = CommStreamsUsed(r);
  const size_t lines = 1 + comm.size();  // per rank: compute, then each communication stream in use
  auto line_of = [&](Stream s) -> size_t {
    for (size_t i = 0; i < comm.size(); ++i)
      if (comm[i] == s) return 1 + i;
    return 0;
  };
  std::vector<std::string> rows(static_cast<size_t>(stages) * lines, std::string(static_cast<size_t>(width), '.'));
  const double horizon = Horizon(r);
  const double scale = horizon > 0 ? static_cast<double>(width) / horizon : 0;
  auto paint = [&](int64_t stage, size_t line, double t0, double t1, char c) {
    if (stage < 0 || stage >= stages) return;
    // Nearest column edges, so that back-to-back tasks tile the row; a task gets at least one.
    const int a = static_cast<int>(std::lround(t0 * scale)),
              b = std::max(a + 1, static_cast<int>(std::lround(t1 * scale)));
    std::string& row = rows[static_cast<size_t>(stage) * lines + line];
    for (int x = a; x < b && x < width; ++x) row[static_cast<size_t>(x)] = c;
  };
  for (const auto& op : r.ops)
    paint(op.stage, 0, op.start_s, op.end_s,
          op.kind == PipeOpKind::kForward    ? 'F'
          : op.kind == PipeOpKind::kBackward ? 'B'
                                             : 'W');
  // Overlapped collectives first, so that a one-column exposed one stays visible.
  for (const TaskKind k : {TaskKind::kOverlappedComm, TaskKind::kGradSync, TaskKind::kExposedComm, TaskKind::kSend,
                           TaskKind::kOptimizer, TaskKind::kParamGather, TaskKind::kTiedSync}) {
    for (const auto& t : r.tasks) {
      if (t.kind != k) continue;
      char c = 'O';
      switch (k) {
        case TaskKind::kOverlappedComm: c = '~'; break;
        case TaskKind::kGradSync: c = 'R'; break;
        case TaskKind::kExposedComm: c = '='; break;
        case TaskKind::kSend: c = t.pass == PipeOpKind::kForward ? '>' : '<'; break;
        case TaskKind::kOptimizer: c = 'O'; break;
        case TaskKind::kParamGather: c = 'G'; break;
        case TaskKind::kTiedSync: c = 'E'; break;
      }
      paint(t.stage, line_of(t.stream), t.start_s, t.end_s, c);
    }
  }
  std::ostringstream o;
  for (int64_t s = 0; s < stages; ++s) {
    o << "rank " << s << (s < 10 ? "  |" : " |") << rows[static_cast<size_t>(s) * lines] << "|\n";
    for (size_t i = 0; i < comm.size(); ++i) {
      char label[16];
      std::snprintf(label, sizeof label, "%8s", Name(comm[i]));
      o << label << "|" << rows[static_cast<size_t>(s) * lines + 1 + i] << "|\n";
    }
  }
  o << "        F forward  B backward  W weight gradient  . idle";
  bool optimizer = false;
  for (const auto& t : r.tasks) optimizer |= t.kind == TaskKind::kOptimizer;
  if (optimizer) o << "  O step-level work";
  o << "\n";
  if (!comm.empty()) {
    o << "        = exposed  ~ overlapped collective  > activation send  < gradient send  R gradient sync"
         "  G parameter all-gather";
    bool tied = false;
    for (const auto& t : r.tasks) tied |= t.kind == TaskKind::kTiedSync;
    if (tied) o << "  E tied embedding all-reduce";
    o << "\n";
  }
  return o.str();
}

}  // namespace meshplan::sim
