// Alpha-beta costs of NCCL-style collectives on a two-tier (scale-up / scale-out) cluster.
// Every formula, its source and its assumptions: docs/collectives.md. Sources cited below:
//   [NT]  nccl-tests doc/PERFORMANCE.md (algbw, busbw and their factors).
//   [TRG] Thakur, Rabenseifner, Gropp 2005, "Optimization of Collective Communication Operations
//         in MPICH", IJHPCA 19(1): ring, pairwise-exchange and tree costs in the alpha-beta model.
//   [PY]  Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of
//         workstations", JPDC 69(2): the ring's 2(n-1)/n * S per rank is the lower bound.
//   [SST] Sanders, Speck, Traeff 2009, "Two-tree algorithms for full bandwidth broadcast,
//         reduction and scan" (the double binary tree NCCL 2.4 adopted).
//   [NCCL] NCCL src/graph/tuning.cc (per-hop intra/inter latency counts for ring, tree and
//         CollNet); NVIDIA/nccl#530 and #687 (rings are flat, every ring enters and leaves each
//         node once, and the rings/trees of one collective use all NICs in parallel).
//   [NVLS] NVIDIA/nccl-tests#212 and NVIDIA/nccl#1442, #1455 (NVLink SHARP: ~480 GB/s all-reduce
//         busbw vs ~370 GB/s ring on 8x H100, "a 30% improvement").
//   [SHARP] Graham et al. 2016, "Scalable Hierarchical Aggregation Protocol (SHArP)", COMHPC;
//         NCCL CollNet (nccl-rdma-sharp-plugins): in-network reduction, each rank sends and
//         receives its buffer once.
#include "core/collectives.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace meshplan::core {
namespace {

// Degree of `a` in the dense world tp x cp x dp x pp (EP is carved out of it, degree 1 here).
int64_t DenseDegree(Axis a, const PlanSpec& p) {
  switch (a) {
    case Axis::kTp: return p.tp;
    case Axis::kCp: return p.cp;
    case Axis::kEp: return 1;
    case Axis::kDp: return p.dp;
    case Axis::kPp: return p.pp;
  }
  return 1;
}

// Degree of `a` in Megatron-Core's expert regrouping etp x ep x edp x pp of the same ranks
// (parallel_state.py: the expert RankGenerator uses tp=etp, cp=1, dp=edp with the same order).
int64_t ExpertDegree(Axis a, const PlanSpec& p) {
  switch (a) {
    case Axis::kTp: return p.etp;
    case Axis::kCp: return 1;
    case Axis::kEp: return p.ep;
    case Axis::kDp: return std::max<int64_t>(1, p.tp * p.cp * p.dp / std::max<int64_t>(1, p.ep * p.etp));
    case Axis::kPp: return p.pp;
  }
  return 1;
}

template <typename Degree>
int64_t StrideIn(Axis axis, const PlanSpec& p, Degree degree) {
  int64_t stride = 1;
  for (Axis a : p.placement) {
    if (a == axis) return stride;
    stride *= std::max<int64_t>(1, degree(a, p));
  }
  return stride;  // `axis` absent from the placement: outermost
}

int64_t AxisSize(Axis a, const PlanSpec& p) { return a == Axis::kEp ? p.ep : DenseDegree(a, p); }

// Per-hop latency and per-GPU bandwidth of the two tiers.
struct Tiers {
  double a_up, a_out;  // s
  double b_up, b_out;  // B/s
};
Tiers TiersOf(const ClusterSpec& c, const CommEfficiency& eff) {
  return {c.scale_up_latency_s, c.scale_out_latency_s, ScaleUpBytesPerS(c, eff), ScaleOutBytesPerS(c, eff)};
}

// Bandwidth time of a pipelined ring or tree whose every member sends `volume` bytes (`out_volume`
// of them on the paths that leave the domain), when the group spans d domains of p members. NCCL
// runs one channel per rail: each member is the exit point of 1/p of the channels, so (p-1)/p of
// its traffic crosses the scale-up fabric and 1/p its own NIC share, both links busy at once
// ([NCCL] #530, #687). One domain: scale-up only; one member per domain: scale-out only.
double RailTime(double volume, double out_volume, const GroupSpan& s, const Tiers& t) {
  if (s.domains <= 1) return volume / t.b_up;
  if (s.per_domain <= 1) return out_volume / t.b_out;
  const double p = static_cast<double>(s.per_domain);
  return std::max((p - 1) / p * volume / t.b_up, out_volume / (p * t.b_out));
}
double RailTime(double volume, const GroupSpan& s, const Tiers& t) { return RailTime(volume, volume, s, t); }

// Hops of a ring pass of `steps` steps, `inter_steps` of which cross domains ([NCCL] tuning.cc:
// (nsteps - nInterSteps) * intraLat + nInterSteps * interLat).
double RingLatency(int64_t steps, int64_t inter_steps, const Tiers& t) {
  return static_cast<double>(steps - inter_steps) * t.a_up + static_cast<double>(inter_steps) * t.a_out;
}

double CeilLog2(int64_t n) { return n <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(n))); }

bool Applies(CollectiveAlgorithm algo, CollectiveKind kind, const GroupSpan& s, const ClusterSpec& c) {
  const bool crosses = s.domains > 1, split = s.per_domain > 1 && s.domains > 1;
  switch (algo) {
    case CollectiveAlgorithm::kRing:
      return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
             kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kBroadcast;
    case CollectiveAlgorithm::kTree: return kind == CollectiveKind::kAllReduce && crosses;
    case CollectiveAlgorithm::kHierarchical:
      return split && (kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
                       kind == CollectiveKind::kReduceScatter);
    case CollectiveAlgorithm::kNvls: return kind == CollectiveKind::kAllReduce && !crosses && c.nvls;
    case CollectiveAlgorithm::kSharp: return kind == CollectiveKind::kAllReduce && crosses && c.sharp;
    case CollectiveAlgorithm::kPairwise: return kind == CollectiveKind::kAllToAll;
    case CollectiveAlgorithm::kP2p: return kind == CollectiveKind::kSendRecv;
  }
  return false;
}

// Seconds without the launch overhead. REQUIRES: Applies(algo, kind, s, c), s.size > 1.
double Seconds(CollectiveAlgorithm algo, CollectiveKind kind, double bytes, const GroupSpan& s, const Tiers& t,
               const CommEfficiency& eff) {
  const int64_t n = s.size, p = s.per_domain, d = s.domains;
  const double nd = static_cast<double>(n), pd = static_cast<double>(p), dd = static_cast<double>(d);
  const double S = bytes;
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  switch (algo) {
    case CollectiveAlgorithm::kRing: {
      // [TRG] sec. 4 / [PY]: all-reduce = reduce-scatter + all-gather, 2(n-1) steps of S/n each;
      // all-gather, reduce-scatter n-1 steps; broadcast a pipelined chain of n-1 hops moving S.
      if (all_reduce) return RingLatency(2 * (n - 1), 2 * (d - 1), t) + RailTime(2 * (nd - 1) / nd * S, s, t);
      if (kind == CollectiveKind::kBroadcast) return RingLatency(n - 1, d - 1, t) + RailTime(S, s, t);
      return RingLatency(n - 1, d - 1, t) + RailTime((nd - 1) / nd * S, s, t);
    }
    case CollectiveAlgorithm::kTree: {
      // NCCL tree: a chain inside each domain, a double binary tree across domains ([SST]);
      // reduce up then broadcast down, pipelined. Every tree vertex sends and receives 2S in all
      // (interior in one tree, leaf in the other, each tree carrying S/2); NCCL's tuner likewise
      // converts tree busbw to algbw with 0.5. On two domains each tree is a single edge, so the
      // network carries S, half the intra-domain traffic (nccl#946, #812: tree beats ring on 2
      // nodes). Latency 2((p-1) intra + log2(d) inter) hops ([NCCL] tuning.cc).
      const double lat = 2 * (static_cast<double>(p - 1) * t.a_up + CeilLog2(d) * t.a_out);
      return lat + RailTime(2 * S, d == 2 ? S : 2 * S, s, t);
    }
    case CollectiveAlgorithm::kHierarchical: {
      // Three phases one after another ([TRG]'s composition; Horovod's hierarchical all-reduce):
      // reduce-scatter of S inside the domain (p ranks), then every GPU runs a ring over its own
      // rail across the d domains on its S/p shard, then all-gather inside the domain. All-gather
      // (reduce-scatter) alone: the inter-domain gather (scatter) phase and the intra-domain one.
      const double k = all_reduce ? 2.0 : 1.0;
      const double lat = k * (static_cast<double>(p - 1) * t.a_up + static_cast<double>(d - 1) * t.a_out);
      return lat + k * (pd - 1) / pd * S / t.b_up + k * (dd - 1) / dd * (S / pd) / t.b_out;
    }
    case CollectiveAlgorithm::kNvls: {
      // NVLink SHARP: the switch reduces and multicasts, so each GPU sends and receives S once
      // instead of 2(n-1)/n S; that bound is the floor. Measured gain over ring is lower (switch
      // and protocol limits): eff.nvls_speedup on busbw ([NVLS]). No latency advantage is taken
      // (nccl#1259: NVLS latency on 8 GPUs is not below the ring's).
      const double bw = std::max(S / t.b_up, 2 * (nd - 1) / nd * S / (t.b_up * std::max(1.0, eff.nvls_speedup)));
      return RingLatency(2 * (n - 1), 0, t) + bw;
    }
    case CollectiveAlgorithm::kSharp: {
      // In-network reduction across domains ([SHARP]): each rail's S/p shard goes up the switch
      // tree once and comes back reduced once (S/p per direction instead of 2(d-1)/d S/p). With
      // p > 1, NCCL CollNet-chain style: intra-domain chain reduce to the per-rail heads and
      // broadcast back, pipelined with the switch reduction (latency as CollNet in [NCCL]).
      const double lat = 2 * static_cast<double>(p - 1) * t.a_up + 2 * t.a_out;
      if (p <= 1) return lat + S / t.b_out;
      return lat + std::max(2 * (pd - 1) / pd * S / t.b_up, S / (pd * t.b_out));
    }
    case CollectiveAlgorithm::kPairwise: {
      // [TRG] pairwise exchange, n-1 steps: each rank sends S/n to every peer. (p-1)/n S stays on
      // scale-up, (n-p)/n S = (d-1)/d S leaves through the GPU's own NIC share; the two links
      // run concurrently, so across domains the NIC dominates (nccl-tests#130, #181: busbw ~
      // N/(N-1) x per-GPU NIC bandwidth; all-to-all cannot aggregate several NICs).
      const double lat = static_cast<double>(p - 1) * t.a_up + static_cast<double>(n - p) * t.a_out;
      if (d <= 1) return lat + (nd - 1) / nd * S / t.b_up;
      return lat + std::max((pd - 1) / nd * S / t.b_up, (nd - pd) / nd * S / t.b_out);
    }
    case CollectiveAlgorithm::kP2p: {
      // One message between neighbours: the slowest hop in the group. A group spanning domains
      // has at least one neighbour pair that crosses, and in a pipeline that pair sets the pace.
      if (d > 1) return t.a_out + S / t.b_out;
      return t.a_up + S / t.b_up;
    }
  }
  return 0;
}

CollectiveCost Finish(CollectiveAlgorithm algo, CollectiveKind kind, int64_t bytes, int64_t n, double seconds) {
  CollectiveCost cost;
  cost.time_s = seconds;
  cost.algbw_bytes_per_s = seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
  cost.busbw_bytes_per_s = cost.algbw_bytes_per_s * BusBandwidthFactor(kind, n);
  cost.algorithm = Name(algo);
  return cost;
}

}  // namespace

const char* Name(CollectiveKind k) {
  switch (k) {  // nccl-tests' binary names (all_reduce_perf, alltoall_perf, sendrecv_perf, ...)
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAll: return "alltoall";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kSendRecv: return "sendrecv";
  }
  return "?";
}

const char* Name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kTree: return "tree";
    case CollectiveAlgorithm::kHierarchical: return "hierarchical";
    case CollectiveAlgorithm::kNvls: return "nvls";
    case CollectiveAlgorithm::kSharp: return "sharp";
    case CollectiveAlgorithm::kPairwise: return "pairwise";
    case CollectiveAlgorithm::kP2p: return "p2p";
  }
  return "?";
}

GroupSpan SpanOfStride(int64_t size, int64_t stride, const ClusterSpec& c) {
  return SpanOfStrideIn(size, stride, c.scale_up_domain_gpus);
}

int64_t JobDomainGpus(const PlanSpec& p, const ClusterSpec& c) {
  const int64_t domain = std::max<int64_t>(1, c.scale_up_domain_gpus);
  const int64_t segment = p.segment_nodes * std::max<int64_t>(1, c.gpus_per_node);
  if (p.segment_nodes <= 0 || segment > domain) return domain;  // core/validate.cc refuses the latter
  return domain / segment * segment;
}

GroupSpan SpanOfStrideIn(int64_t size, int64_t stride, int64_t domain_gpus) {
  GroupSpan s;
  s.size = std::max<int64_t>(1, size);
  stride = std::max<int64_t>(1, stride);
  const int64_t domain = std::max<int64_t>(1, domain_gpus);
  int64_t per = stride < domain ? std::min(s.size, std::max<int64_t>(1, domain / stride)) : 1;
  while (s.size % per != 0)
    --per;  // uneven fill: keep size = per_domain * domains, the fuller
            // domains' extra members are costed as if remote
  s.per_domain = per;
  s.domains = s.size / per;
  return s;
}

GroupSpan SpanOfLayoutIn(const GroupLayout& l, int64_t domain_gpus) {
  if (l.inner <= 0 || l.inner >= l.size) return SpanOfStrideIn(l.size, l.stride, domain_gpus);
  const GroupSpan in = SpanOfStrideIn(l.inner, l.stride, domain_gpus);
  const GroupSpan out = SpanOfStrideIn(l.size / l.inner, l.outer_stride, domain_gpus);
  GroupSpan s;
  s.size = std::max<int64_t>(1, l.size);
  s.per_domain = in.domains == 1 ? in.per_domain * out.per_domain : in.per_domain;
  s.domains = s.size / s.per_domain;
  return s;
}

int64_t StrideOf(Axis axis, const PlanSpec& p) {
  return axis == Axis::kEp ? StrideIn(axis, p, ExpertDegree) : StrideIn(axis, p, DenseDegree);
}

GroupLayout AxisLayout(Axis axis, const PlanSpec& p) { return {AxisSize(axis, p), StrideOf(axis, p)}; }

GroupLayout ExpertDpLayout(const PlanSpec& p) {
  return {ExpertDegree(Axis::kDp, p), StrideIn(Axis::kDp, p, ExpertDegree)};
}

GroupSpan SpanOf(Axis axis, const PlanSpec& p, const ClusterSpec& c) {
  const GroupLayout l = AxisLayout(axis, p);
  return SpanOfStrideIn(l.size, l.stride, JobDomainGpus(p, c));
}

PipelineLinks PipelineLinkCounts(const PlanSpec& p, const ClusterSpec& c) {
  PipelineLinks out;
  const int64_t pp = p.pp;
  if (pp <= 1) return out;
  const bool wrap = p.schedule == Schedule::kInterleaved;
  const int64_t s = std::max<int64_t>(1, StrideOf(Axis::kPp, p));
  const int64_t domain = JobDomainGpus(p, c);
  const int64_t world = std::max<int64_t>(1, p.tp) * std::max<int64_t>(1, p.cp) * std::max<int64_t>(1, p.dp) * pp;
  // A member's links: to the next stage (the first, under interleaving, from the last) and to the
  // previous one (the last, under interleaving, from the first).
  auto links = [&](int64_t i) { return static_cast<int>(i + 1 < pp || wrap) + static_cast<int>(i > 0 || wrap); };
  // Every link across: an end rank's and a middle one's.
  auto all_cross = [&] {
    out.Add(links(0), 0);
    out.Add(links(pp / 2), 0);
    return out;
  };
  // Consecutive members are a stride of at least a domain apart: every link crosses.
  if (s >= domain) return all_cross();
  // The members of a group sit at base + i s, with base a rank whose PP coordinate is 0: the first
  // s ranks of every block of s pp ranks. Whether a link crosses depends on the ranks' positions
  // modulo the domain, which repeat every domain / gcd(domain, s pp) blocks: those cover every case.
  const int64_t block = s * pp;
  const int64_t blocks = std::min(std::max<int64_t>(1, world / block), domain / std::gcd(domain, block));
  // Bounded work (docs/reliability.md §2): a placement that would need more visits than this (only
  // a custom placement with many blocks, a wide domain and a deep pipeline can) is costed as if every
  // link crossed, the slowest-hop rule, which can only overstate the sends.
  if (static_cast<double>(blocks) * static_cast<double>(s) * static_cast<double>(pp) > kMaxPipelineLinkVisits)
    return all_cross();
  for (int64_t q = 0; q < blocks; ++q)
    for (int64_t o = 0; o < s; ++o) {
      const int64_t base = q * block + o;
      for (int64_t i = 0; i < pp; ++i) {
        const int64_t k = base + i * s;
        int crossing = 0, inside = 0;
        auto link = [&](int64_t j) { ++(k / domain != (base + j * s) / domain ? crossing : inside); };
        if (i + 1 < pp) link(i + 1);
        else if (wrap) link(0);
        if (i > 0) link(i - 1);
        else if (wrap) link(pp - 1);
        out.Add(crossing, inside);
      }
    }
  return out;
}

PipelinePace PipelineLinkPace(const PipelineLinks& links, double inside_s, double crossing_s) {
  PipelinePace best;
  for (int crossing = 0; crossing <= 2; ++crossing)
    for (int inside = 0; crossing + inside <= 2; ++inside) {
      if (!links.Has(crossing, inside)) continue;
      const double t = crossing * crossing_s + inside * inside_s;
      if (t > best.seconds) best = {t, crossing, inside, inside_s, crossing_s};
    }
  return best;
}

GroupSpan SpanOfExpertDp(const PlanSpec& p, const ClusterSpec& c) {
  const GroupLayout l = ExpertDpLayout(p);
  return SpanOfStrideIn(l.size, l.stride, JobDomainGpus(p, c));
}

double ScaleUpBytesPerS(const ClusterSpec& c, const CommEfficiency& eff) {
  return c.scale_up_bytes_per_s * eff.scale_up;
}

double ScaleOutBytesPerS(const ClusterSpec& c, const CommEfficiency& eff) {
  const double gpus = static_cast<double>(std::max<int64_t>(1, c.gpus_per_node));
  return c.nic_bytes_per_s * static_cast<double>(c.nics_per_node) / gpus * eff.scale_out /
         std::max(1.0, c.oversubscription);
}

double BusBandwidthFactor(CollectiveKind kind, int64_t n) {
  const double nd = static_cast<double>(std::max<int64_t>(1, n));
  switch (kind) {  // [NT]
    case CollectiveKind::kAllReduce: return 2 * (nd - 1) / nd;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (nd - 1) / nd;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kSendRecv: return 1;
  }
  return 1;
}

std::optional<CollectiveCost> CollectiveTimeWith(CollectiveAlgorithm algo, CollectiveKind kind, int64_t bytes,
                                                 const GroupSpan& span, const ClusterSpec& c,
                                                 const CommEfficiency& eff) {
  if (span.size <= 1) return CollectiveCost{.algorithm = "none"};
  if (!Applies(algo, kind, span, c)) return std::nullopt;
  const double t = Seconds(algo, kind, static_cast<double>(std::max<int64_t>(0, bytes)), span, TiersOf(c, eff), eff);
  return Finish(algo, kind, bytes, span.size, t + eff.launch_s);
}

namespace {
struct Best {
  CollectiveAlgorithm algorithm;
  double seconds;
};
Best BestAlgorithm(CollectiveKind kind, int64_t bytes, const GroupSpan& span, const ClusterSpec& c,
                   const CommEfficiency& eff);
}  // namespace

CollectiveCost CollectiveTime(CollectiveKind kind, int64_t bytes, const GroupSpan& span, const ClusterSpec& c,
                              const CommEfficiency& eff) {
  if (span.size <= 1) return CollectiveCost{.algorithm = "none"};
  const Best b = BestAlgorithm(kind, bytes, span, c, eff);
  return Finish(b.algorithm, kind, bytes, span.size, b.seconds);  // every kind has at least one algorithm
}

double TinyAllReduceSeconds(const GroupSpan& span, const ClusterSpec& c) {
  if (span.size <= 1) return 0.0;
  const double n = static_cast<double>(span.size);
  const int64_t nodes = span.Crosses() ? span.domains : 1;
  const double ppn = static_cast<double>(span.per_domain);
  constexpr double kUs = 1e-6;
  // Ring, LL: NCCL's base 6.6 µs; each step inside a node 0.6 µs (NVLink LL), or the network
  // overhead of 1 µs when the ring crosses nodes; each of the 2(nodes - 1) steps across 2.7 µs
  // (the tree's 5.0 when every node holds one rank).
  const double inter = nodes > 1 ? 2.0 * static_cast<double>(nodes - 1) : 0.0;
  const double intra_hop = nodes > 1 ? 1.0 : 0.6;  // max(0.6, 1.0) across nodes
  const double net_hop = span.per_domain == 1 ? 5.0 : 2.7;
  double best = 6.6 + (2.0 * (n - 1) - inter) * intra_hop + inter * net_hop;
  // Tree, LL, across nodes: up and down the node's chain and the log2(nodes) levels.
  if (nodes > 1)
    best = std::min(best, 6.8 + 2.0 * ((ppn - 1) * 0.6 + std::floor(std::log2(static_cast<double>(nodes))) * 5.0));
  // NVLS inside one domain: Simple, 25 µs.
  if (nodes == 1 && c.nvls) best = std::min(best, 25.0);
  return best * kUs;
}

double CollectiveSeconds(CollectiveKind kind, int64_t bytes, const GroupSpan& span, const ClusterSpec& c,
                         const CommEfficiency& eff) {
  return span.size <= 1 ? 0.0 : BestAlgorithm(kind, bytes, span, c, eff).seconds;
}

namespace {
Best BestAlgorithm(CollectiveKind kind, int64_t bytes, const GroupSpan& span, const ClusterSpec& c,
                   const CommEfficiency& eff) {
  // Ties (within rounding) keep the earlier, simpler algorithm: on two domains tree and SHARP
  // can cost exactly the same. Only what NCCL can choose: the hierarchical composition is not an
  // NCCL algorithm ([NCCL] tuning.cc ncclTopoTuneModel: `if (coll != ncclCollAllReduce && a !=
  // NCCL_ALGO_RING) continue;`, all-gather and reduce-scatter run the ring), so it is costed only
  // when forced (CollectiveTimeWith).
  // (CollectiveTimeWith per algorithm, with the tiers found once and only the fastest finished.)
  const Tiers tiers = TiersOf(c, eff);
  const double volume = static_cast<double>(std::max<int64_t>(0, bytes));
  CollectiveAlgorithm best = CollectiveAlgorithm::kRing;
  double best_s = 0;
  bool found = false;
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kPairwise, CollectiveAlgorithm::kP2p,
                                CollectiveAlgorithm::kTree, CollectiveAlgorithm::kNvls, CollectiveAlgorithm::kSharp}) {
    if (!Applies(a, kind, span, c)) continue;
    const double t = Seconds(a, kind, volume, span, tiers, eff) + eff.launch_s;
    if (!found || t < best_s * (1 - 1e-12)) {
      best = a;
      best_s = t;
      found = true;
    }
  }
  return {best, best_s};
}
}  // namespace

}  // namespace meshplan::core
