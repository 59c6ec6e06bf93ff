// Collective communication costs: which network tiers a parallel group spans given the rank
// placement order, alpha-beta time per algorithm (ring, tree, NCCL-style hierarchical, NVLS and
// SHARP in-network reduction, all-to-all, send/recv), and the bus-bandwidth factors exactly as
// nccl-tests defines them, so runtime measurements compare 1:1. Formulas and sources in
// docs/collectives.md. Pure functions; thread-safe.
#ifndef MESHPLAN_CORE_COLLECTIVES_H_
#define MESHPLAN_CORE_COLLECTIVES_H_

#include <cstdint>
#include <optional>

#include "core/specs.h"

namespace meshplan::core {

enum class CollectiveKind : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };
const char* Name(CollectiveKind k);

// How a group of `size` ranks sits on the cluster: `per_domain` members share one scale-up
// (NVLink) domain, spread over `domains` domains (size = per_domain * domains).
struct GroupSpan {
  int64_t size = 1;
  int64_t per_domain = 1;
  int64_t domains = 1;
  bool Crosses() const { return domains > 1; }
};
// The span of the group along `axis` (tp, cp, ep, dp, pp) under plan.placement (innermost first):
// its size is the axis degree (plan.ep for the expert axis, plan.dp for dp) and its stride the
// product of the degrees of the axes placed inside it, with Megatron-Core's semantics (EP is
// carved out of tp*cp*dp, not an extra factor of the world): dense axes (tp, cp, dp, pp) skip ep;
// the expert axis sees the expert regrouping of a stage's ranks, etp x ep x edp, so inside it tp
// counts as etp, cp as 1, dp as edp = tp*cp*dp/(ep*etp). Default placement: StrideOf(kEp) = etp.
GroupSpan SpanOf(Axis axis, const PlanSpec& p, const ClusterSpec& c);
// Rank distance between consecutive members of the group along `axis` (the rule above).
int64_t StrideOf(Axis axis, const PlanSpec& p);
// A pipeline's neighbour links (docs/collectives.md 4.7). Every schedule exchanges each
// microbatch's activations and input gradients with the neighbour stages, one batched send/recv
// per neighbour and step (Megatron-LM p2p_communication.py: send_forward_recv_backward with the
// next stage, send_backward_recv_forward with the previous one, both directions of a pair in flight
// together), so a rank's per-microbatch link time is the sum over its neighbour links, each at the
// tier it crosses, and the rank whose links cost most sets the pace. The links: consecutive members
// of the PP group (plan.placement's stride apart), and under the interleaved schedule also the last
// stage's link back to the first (the next model chunk); the end ranks of the other schedules have
// one neighbour. Scale-up domains are JobDomainGpus consecutive ranks (the cluster's domain, or
// the whole Slurm segments it holds), as SpanOf assumes. PipelineLinkCounts says which (links leaving the rank's
// domain, links inside it) pairs the group's ranks have; the pace is the costliest of them.
struct PipelineLinks {
  uint16_t seen = 0;  // bit crossing * 3 + inside, for crossing + inside <= 2
  void Add(int crossing, int inside) { seen = static_cast<uint16_t>(seen | 1u << (crossing * 3 + inside)); }
  bool Has(int crossing, int inside) const { return (seen >> (crossing * 3 + inside)) & 1u; }
  // Whether some rank has a link across its domain (inside it).
  bool AnyCrossing() const { return Has(1, 0) || Has(1, 1) || Has(2, 0); }
  bool AnyInside() const { return Has(0, 1) || Has(0, 2) || Has(1, 1); }
};
// At most this many (rank, stage) visits; past it every link is counted as crossing.
inline constexpr double kMaxPipelineLinkVisits = 1 << 22;
PipelineLinks PipelineLinkCounts(const PlanSpec& p, const ClusterSpec& c);
struct PipelinePace {
  double seconds = 0;  // the pacing rank's time on its links per microbatch
  int crossing = 0, inside = 0;
  double inside_s = 0, crossing_s = 0;  // one link's time on each tier, as given
};
// The costliest of `links` with one link's time inside a domain and across two.
PipelinePace PipelineLinkPace(const PipelineLinks& links, double inside_s, double crossing_s);

// The expert-data-parallel group (edp = tp*cp*dp/(ep*etp) ranks holding the same experts), placed
// where dp sits in the expert regrouping. REQUIRES: ep*etp divides tp*cp*dp.
GroupSpan SpanOfExpertDp(const PlanSpec& p, const ClusterSpec& c);

// Where a group's members sit among the global ranks (placement order, innermost first): `size`
// members, `stride` ranks apart; a member's group differs from its own rank in one mixed-radix
// digit. A group over two axes that are not adjacent in the placement (DP with CP when pp sits
// between them, as in NeMo's tp-cp-ep-pp-dp) differs in two digits: member i sits at
// (i % inner) * stride + (i / inner) * outer_stride from the group's first rank (inner = 0: one
// digit). The spans above are SpanOfLayoutIn; the runtime builds its communicators from the same
// layouts (core::LayoutOfGroup, step_graph.h).
struct GroupLayout {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t inner = 0;         // members along the first digit; 0: one digit
  int64_t outer_stride = 0;  // the second digit's stride
  friend bool operator==(const GroupLayout&, const GroupLayout&) = default;
};
GroupLayout AxisLayout(Axis axis, const PlanSpec& p);  // SpanOf's group
GroupLayout ExpertDpLayout(const PlanSpec& p);         // SpanOfExpertDp's group
// A group of `size` members, `stride` ranks apart (for derived groups such as DP x CP).
// Members per domain: floor(domain/stride), lowered to the largest divisor of `size` so that
// size = per_domain * domains (conservative when stride does not divide the domain); 1 when
// stride >= domain. Groups are assumed aligned to domain boundaries (docs/collectives.md).
GroupSpan SpanOfStride(int64_t size, int64_t stride, const ClusterSpec& c);
// The same within domains of `domain_gpus` consecutive ranks.
GroupSpan SpanOfStrideIn(int64_t size, int64_t stride, int64_t domain_gpus);
// The tiers a layout spans within domains of `domain_gpus` ranks: one digit, SpanOfStrideIn; two,
// the inner digit's members per domain times the outer digit's where the inner digit fits in one
// domain (the outer digit's members are whole domains apart otherwise, so only the inner digit's
// count).
GroupSpan SpanOfLayoutIn(const GroupLayout& l, int64_t domain_gpus);
// The consecutive ranks one scale-up domain holds for this job: cluster.scale_up_domain_gpus, or
// with plan.segment_nodes = N the whole segments a domain holds, floor(domain / (N g)) x N g
// (g = gpus_per_node; a GB200 NVL72 rack of 18 trays with segments of 16 holds one: 64 ranks).
int64_t JobDomainGpus(const PlanSpec& p, const ClusterSpec& c);

// Achieved fractions of link bandwidth and fixed latencies, from the calibration Profile.
struct CommEfficiency {
  double scale_up = 0.80;     // NVLink: busbw/link ~0.8 (nccl-tests all_reduce on DGX A100/H100)
  double scale_out = 0.90;    // InfiniBand/RoCE per NIC
  double nvls_speedup = 1.3;  // all-reduce busbw gain from NVLS relative to ring inside a domain:
                              // ~480 vs ~370 GB/s on 8x H100 (NVIDIA/nccl-tests#212, NVIDIA/nccl#1442)
  double launch_s = 5e-6;     // per-collective software/launch latency
};

struct CollectiveCost {
  double time_s = 0;
  double algbw_bytes_per_s = 0;  // nccl-tests: S / t
  double busbw_bytes_per_s = 0;  // algbw x BusBandwidthFactor
  const char* algorithm = "";    // "ring", "tree", "hierarchical", "nvls", "sharp", "pairwise", "p2p"
                                 // ("none" for a group of one)
};

// The algorithms costed. Which apply: ring (all-reduce, all-gather, reduce-scatter, broadcast);
// tree, sharp (all-reduce across domains; sharp needs cluster.sharp); hierarchical (all-reduce,
// all-gather, reduce-scatter with per_domain > 1 and domains > 1); nvls (all-reduce inside one
// domain, cluster.nvls); pairwise (all-to-all); p2p (send/recv).
enum class CollectiveAlgorithm { kRing, kTree, kHierarchical, kNvls, kSharp, kPairwise, kP2p };
const char* Name(CollectiveAlgorithm a);

// Time with one algorithm forced (as NCCL_ALGO does); nullopt where it does not apply to `kind`,
// `span` or the cluster. A group of one costs nothing ("none") whatever the algorithm.
std::optional<CollectiveCost> CollectiveTimeWith(CollectiveAlgorithm algo, CollectiveKind kind, int64_t bytes,
                                                 const GroupSpan& span, const ClusterSpec& c,
                                                 const CommEfficiency& eff = {});

// Achieved per-GPU bandwidths (bytes/s, one direction): scale-up = link x eff.scale_up; scale-out =
// the GPU's share of its node's NICs x eff.scale_out / oversubscription (rail-optimized: every GPU
// drives its own NIC share in parallel).
double ScaleUpBytesPerS(const ClusterSpec& c, const CommEfficiency& eff = {});
double ScaleOutBytesPerS(const ClusterSpec& c, const CommEfficiency& eff = {});

// Time of one collective of `bytes` (nccl-tests' S: the whole buffer for all-reduce and
// broadcast, the total gathered/scattered buffer for all-gather/reduce-scatter, the per-rank
// buffer for all-to-all, the message for send/recv) on `span`. The cheapest available algorithm
// is chosen. size 1 costs nothing.
CollectiveCost CollectiveTime(CollectiveKind kind, int64_t bytes, const GroupSpan& span, const ClusterSpec& c,
                              const CommEfficiency& eff = {});
// Its time_s alone, without the bandwidth figures (what the step model's costs read).
double CollectiveSeconds(CollectiveKind kind, int64_t bytes, const GroupSpan& span, const ClusterSpec& c,
                         const CommEfficiency& eff = {});

// An all-reduce too small for bandwidth to matter (a few KB: FP8 amaxes), as NCCL 2.28's tuner
// estimates it (src/graph/tuning.cc at 5067397c, ncclTunerConstantsDefaults and the latency
// formulas of ncclTopoTuneModel), the cheapest of the algorithms it may pick, LL protocol where it
// has one: ring 6.6 µs + (2(n-1) - 2(nodes-1)) x max(0.6 µs NVLink, 1 µs network overhead across
// nodes) + 2(nodes-1) x 2.7 µs (5.0 at one GPU a node); tree, across nodes, 6.8 µs + 2((ppn-1) x
// 0.6 µs + floor(log2 nodes) x 5.0 µs); NVLS inside one domain (cluster.nvls), Simple only, 25 µs.
// Nodes are the span's scale-up domains, ppn its members per domain. The analytic model above,
// with one latency per tier for every size, stays the one for everything else (section 7 of
// docs/collectives.md).
double TinyAllReduceSeconds(const GroupSpan& span, const ClusterSpec& c);

// nccl-tests busbw/algbw: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n;
// broadcast and send/recv 1 (doc/PERFORMANCE.md).
double BusBandwidthFactor(CollectiveKind kind, int64_t n);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_COLLECTIVES_H_
