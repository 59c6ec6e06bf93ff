// Collective costs: group spans under rank placement, hand-derived alpha-beta times, nccl-tests'
// bus-bandwidth factors, and the orderings a planner relies on. Formulas: docs/collectives.md.
#include "core/collectives.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/presets.h"
#include "core/profile.h"
#include "core/units.h"

namespace meshplan::core {
namespace {

// dgx-h100 preset: 8 GPUs per node and NVLink domain, 450 GB/s per direction, 3 us; 8 NICs of
// 50 GB/s, 5 us; SHARP and NVLS on. Default efficiencies: scale-up 0.8, scale-out 0.9, NVLS gain
// 1.3, launch 5 us. So B_up = 360e9 B/s and B_out = 50e9 * 8/8 * 0.9 = 45e9 B/s per GPU.
ClusterSpec Cluster(const char* name) {
  auto c = LoadCluster(name);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ClusterSpec{};
}

constexpr double kBup = 360e9, kBout = 45e9, kAup = 3e-6, kAout = 5e-6, kLaunch = 5e-6;

double Forced(CollectiveAlgorithm a, CollectiveKind k, int64_t bytes, const GroupSpan& s, const ClusterSpec& c) {
  auto cost = CollectiveTimeWith(a, k, bytes, s, c);
  EXPECT_TRUE(cost.has_value()) << Name(a) << " should apply to " << Name(k);
  return cost ? cost->time_s : 0;
}

TEST(CollectivesTest, RingAllReduceOnOneDgxH100NodeMatchesHandDerivation) {
  const ClusterSpec c = Cluster("dgx-h100");
  const GroupSpan node = SpanOfStride(8, 1, c);  // 8 consecutive ranks: one domain
  const double S = static_cast<double>(kGiB);
  // Ring: 2(n-1) hops of alpha_up + 2(n-1)/n * S / B_up + launch
  //     = 14 * 3 us + 1.75 * 1073741824 / 360e9 + 5 us = 42 us + 5219.578 us + 5 us = 5266.578 us.
  const double expected = 14 * kAup + 1.75 * S / kBup + kLaunch;
  auto ring = CollectiveTimeWith(CollectiveAlgorithm::kRing, CollectiveKind::kAllReduce, kGiB, node, c);
  ASSERT_TRUE(ring.has_value());
  EXPECT_NEAR(ring->time_s, expected, 1e-12);
  EXPECT_NEAR(ring->time_s, 5266.578e-6, 1e-9);
  EXPECT_STREQ(ring->algorithm, "ring");
  // algbw = S / t; busbw = algbw * 2(n-1)/n (nccl-tests).
  EXPECT_NEAR(ring->algbw_bytes_per_s, S / expected, 1e-3);
  EXPECT_NEAR(ring->busbw_bytes_per_s, S / expected * 1.75, 1e-3);
}

TEST(CollectivesTest, DefaultsReproducePublishedBusbw) {
  const ClusterSpec h100 = Cluster("dgx-h100");
  const GroupSpan node = SpanOfStride(8, 1, h100);
  // nccl-tests#212 (NCCL maintainer): 8x H100 ring busbw ~370 GB/s, NVLS ~480 GB/s at large sizes.
  // Model at 1 GiB: ring 1.75 * S / 5266.578 us = 356.8 GB/s; NVLS: t = 42 + 5 us +
  // 1.75 * S / (360e9 * 1.3) = 4062.06 us, busbw = 1.75 * S / t = 462.6 GB/s. Both within 5%.
  auto ring = CollectiveTimeWith(CollectiveAlgorithm::kRing, CollectiveKind::kAllReduce, kGiB, node, h100);
  ASSERT_TRUE(ring.has_value());
  EXPECT_NEAR(ring->busbw_bytes_per_s / 370e9, 1.0, 0.05);
  const CollectiveCost best = CollectiveTime(CollectiveKind::kAllReduce, kGiB, node, h100);
  EXPECT_STREQ(best.algorithm, "nvls");
  EXPECT_NEAR(best.busbw_bytes_per_s, 462.6e9, 0.1e9);
  EXPECT_NEAR(best.busbw_bytes_per_s / 480e9, 1.0, 0.05);
  // nccl#812 (NCCL maintainer): 2+ DGX A100 nodes (8x 200 Gb/s IB) measure 192 GB/s ring busbw.
  // Model, 16 ranks on 2 nodes: B_up = 240e9, B_out = 22.5e9; the 8 rails of a node carry
  // 8 * 22.5e9 = 180e9 < 8/7 * 240e9, so busbw -> 180 GB/s (178.4 at 1 GiB with latency): -7%.
  const ClusterSpec a100 = Cluster("dgx-a100");
  auto multi =
      CollectiveTimeWith(CollectiveAlgorithm::kRing, CollectiveKind::kAllReduce, kGiB, SpanOfStride(16, 1, a100), a100);
  ASSERT_TRUE(multi.has_value());
  EXPECT_NEAR(multi->busbw_bytes_per_s / 192e9, 1.0, 0.10);
}

TEST(CollectivesTest, BusBandwidthFactorsForEightRanks) {
  // nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n = 14/8; all-gather, reduce-scatter,
  // all-to-all (n-1)/n = 7/8; broadcast and send/recv 1.
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kAllToAll, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kSendRecv, 8), 1.0);
}

TEST(CollectivesTest, SpansOfLlama3With405BPlanOnDgxH100) {
  // Llama 3 paper: TP8 x PP16 x DP128 = 16384 GPUs, placement tp-cp-ep-dp-pp (innermost first).
  const ClusterSpec c = Cluster("dgx-h100");
  PlanSpec p;
  p.gpus = 16384;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  // tp: stride 1, 8 members -> all 8 in one node.
  const GroupSpan tp = SpanOf(Axis::kTp, p, c);
  EXPECT_EQ(tp.size, 8);
  EXPECT_EQ(tp.per_domain, 8);
  EXPECT_EQ(tp.domains, 1);
  EXPECT_FALSE(tp.Crosses());
  // dp: stride tp*cp = 8 = the domain -> one member per node, 128 nodes.
  EXPECT_EQ(StrideOf(Axis::kDp, p), 8);
  const GroupSpan dp = SpanOf(Axis::kDp, p, c);
  EXPECT_EQ(dp.size, 128);
  EXPECT_EQ(dp.per_domain, 1);
  EXPECT_EQ(dp.domains, 128);
  // pp: stride tp*cp*dp = 1024 -> one stage per node, 16 nodes.
  EXPECT_EQ(StrideOf(Axis::kPp, p), 1024);
  const GroupSpan pp = SpanOf(Axis::kPp, p, c);
  EXPECT_EQ(pp.size, 16);
  EXPECT_EQ(pp.per_domain, 1);
  EXPECT_EQ(pp.domains, 16);
  // cp and ep of degree 1: trivial groups.
  EXPECT_EQ(SpanOf(Axis::kCp, p, c).size, 1);
  EXPECT_EQ(SpanOf(Axis::kEp, p, c).size, 1);
}

TEST(CollectivesTest, ExpertAxisFollowsMegatronRegrouping) {
  // Megatron-Core regroups a stage's tp*cp*dp ranks as etp x ep x edp for expert layers; EP is not
  // an extra factor of the world. tp=8, ep=8, dp=16, etp=1 on dgx-h100:
  const ClusterSpec c = Cluster("dgx-h100");
  PlanSpec p;
  p.tp = 8;
  p.ep = 8;
  p.dp = 16;
  // Dense DP ignores ep: stride tp*cp = 8 -> one per node, 16 nodes.
  EXPECT_EQ(StrideOf(Axis::kDp, p), 8);
  EXPECT_EQ(SpanOf(Axis::kDp, p, c).domains, 16);
  // EP stride = etp = 1: the 8 expert ranks are the 8 GPUs of a node.
  EXPECT_EQ(StrideOf(Axis::kEp, p), 1);
  const GroupSpan ep = SpanOf(Axis::kEp, p, c);
  EXPECT_EQ(ep.per_domain, 8);
  EXPECT_EQ(ep.domains, 1);
  // Expert DP: edp = 8*1*16/(8*1) = 16 ranks, stride etp*ep = 8 -> 16 nodes.
  const GroupSpan edp = SpanOfExpertDp(p, c);
  EXPECT_EQ(edp.size, 16);
  EXPECT_EQ(edp.per_domain, 1);
  EXPECT_EQ(edp.domains, 16);
  // etp = 8 (experts also tensor-parallel): EP stride 8 -> one expert rank per node.
  p.etp = 8;
  EXPECT_EQ(StrideOf(Axis::kEp, p), 8);
  EXPECT_EQ(SpanOf(Axis::kEp, p, c).domains, 8);
}

TEST(CollectivesTest, UnevenSpansKeepSizeEqualPerDomainTimesDomains) {
  const ClusterSpec h100 = Cluster("dgx-h100");
  // Stride 3 in a domain of 8: floor(8/3) = 2 members per domain; 4 members -> 2 x 2.
  GroupSpan s = SpanOfStride(4, 3, h100);
  EXPECT_EQ(s.per_domain, 2);
  EXPECT_EQ(s.domains, 2);
  // 6 members at stride 1: 6 fit in a domain of 8.
  s = SpanOfStride(6, 1, h100);
  EXPECT_EQ(s.per_domain, 6);
  EXPECT_EQ(s.domains, 1);
  // NVL72: 128 members at stride 1 -> floor 72, lowered to 64 (the largest divisor of 128 <= 72).
  const ClusterSpec nvl72 = Cluster("gb200-nvl72");
  s = SpanOfStride(128, 1, nvl72);
  EXPECT_EQ(s.per_domain, 64);
  EXPECT_EQ(s.domains, 2);
  // DP of 64 at stride 8 on NVL72: 9 per domain fit, 8 divides 64 -> 8 x 8.
  s = SpanOfStride(64, 8, nvl72);
  EXPECT_EQ(s.per_domain, 8);
  EXPECT_EQ(s.domains, 8);
}

TEST(CollectivesTest, TensorParallelAcrossNodesIsSlower) {
  // The seeds' rule "TP <= 8, cross-node TP collapses throughput", for a 64 MiB all-reduce
  // (b*s*h*2 for s = 4096, h = 8192). S = 67108864.
  const ClusterSpec c = Cluster("dgx-h100");
  const double S = 64.0 * kMiB;
  // TP=8, one node, NVLS: max(S/B_up, 1.75 S/(1.3 B_up)) = 250.92 us; + 14 * 3 us + 5 us = 297.92 us.
  const CollectiveCost tp8 = CollectiveTime(CollectiveKind::kAllReduce, 64 * kMiB, SpanOfStride(8, 1, c), c);
  EXPECT_STREQ(tp8.algorithm, "nvls");
  EXPECT_NEAR(tp8.time_s, 1.75 * S / (1.3 * kBup) + 14 * kAup + kLaunch, 1e-12);
  // TP=16 over two dgx-h100 nodes (8 + 8). Each node's 8 NICs give 8 * 45e9 = 360e9 B/s, as much
  // as NVLink, so NCCL's tree wins: chain 2(p-1)/p S / B_up = 326.20 us vs network S/(8 B_out)
  // = 186.41 us (2 nodes: the tree sends S, not 2S); latency 2(7 * 3 + 1 * 5) us = 52 us; total
  // 383.20 us, 1.29x TP=8. With 8x 400G rails the bandwidth penalty is small.
  const GroupSpan two_nodes = SpanOfStride(16, 1, c);
  ASSERT_EQ(two_nodes.per_domain, 8);
  ASSERT_EQ(two_nodes.domains, 2);
  const CollectiveCost tp16 = CollectiveTime(CollectiveKind::kAllReduce, 64 * kMiB, two_nodes, c);
  EXPECT_STREQ(tp16.algorithm, "tree");
  EXPECT_NEAR(tp16.time_s, 1.75 * S / kBup + 52e-6 + kLaunch, 1e-12);
  EXPECT_NEAR(tp16.time_s / tp8.time_s, 1.286, 0.001);
  // The seeds' premise, "IB at 400 Gb/s" per node: one NIC per node, B_out = 50e9/8 * 0.9 =
  // 5.625e9 per GPU, 45e9 per node. Tree: max(326.20 us, S / 45e9 = 1491.31 us) + 52 + 5 us =
  // 1548.31 us = 5.2x TP=8: cross-node TP collapses when the node has one NIC, not eight.
  ClusterSpec one_nic = c;
  one_nic.nics_per_node = 1;
  const CollectiveCost thin = CollectiveTime(CollectiveKind::kAllReduce, 64 * kMiB, two_nodes, one_nic);
  EXPECT_NEAR(thin.time_s, S / 45e9 + 52e-6 + kLaunch, 1e-12);
  EXPECT_GT(thin.time_s, 5 * tp8.time_s);
}

TEST(CollectivesTest, HierarchicalBeatsFlatRingForDataParallelSixtyFour) {
  // DP=64 placed innermost on dgx-h100 (tp=1): 8 per node over 8 nodes.
  const ClusterSpec c = Cluster("dgx-h100");
  PlanSpec p;
  p.dp = 64;
  p.placement = {Axis::kDp, Axis::kTp, Axis::kCp, Axis::kEp, Axis::kPp};
  const GroupSpan dp = SpanOf(Axis::kDp, p, c);
  ASSERT_EQ(dp.per_domain, 8);
  ASSERT_EQ(dp.domains, 8);
  const double S = 16.0 * kMiB;  // a gradient bucket
  // Flat ring: latency 2(n-d) alpha_up + 2(d-1) alpha_out = 112 * 3 + 14 * 5 = 406 us; bandwidth
  // 2*63/64 * S / min-rail 360e9 = 91.75 us; + 5 us = 502.75 us.
  const double ring = Forced(CollectiveAlgorithm::kRing, CollectiveKind::kAllReduce, 16 * kMiB, dp, c);
  EXPECT_NEAR(ring, 406e-6 + 2.0 * 63 / 64 * S / kBup + kLaunch, 1e-12);
  // Hierarchical: 2(7 * 3 + 7 * 5) = 112 us; RS + AG inside: 1.75 S / B_up = 81.56 us; ring over
  // the rails on S/8: 2 * 7/8 * (S/8) / B_out = 81.56 us; + 5 us = 280.13 us.
  const double hier = Forced(CollectiveAlgorithm::kHierarchical, CollectiveKind::kAllReduce, 16 * kMiB, dp, c);
  EXPECT_NEAR(hier, 112e-6 + 1.75 * S / kBup + 1.75 * (S / 8) / kBout + kLaunch, 1e-12);
  EXPECT_LT(hier, ring);
  // At 1 GiB the sequential phases lose to the pipelined ring (10.55 ms vs 6.28 ms): the
  // latency advantage is gone and NVLink and the NICs are not busy at the same time.
  const double ring_big = Forced(CollectiveAlgorithm::kRing, CollectiveKind::kAllReduce, kGiB, dp, c);
  const double hier_big = Forced(CollectiveAlgorithm::kHierarchical, CollectiveKind::kAllReduce, kGiB, dp, c);
  EXPECT_LT(ring_big, hier_big);
  // The automatic choice is never worse than either.
  EXPECT_LE(CollectiveTime(CollectiveKind::kAllReduce, 16 * kMiB, dp, c).time_s, hier);
  // All-gather: NCCL runs the ring alone (tuning.cc skips every other algorithm for it), so the
  // automatic choice is the ring even where the composition would be cheaper. Ring: (63 - 7) *
  // 3 us + 7 * 5 us = 203 us + 63/64 S / B_up = 45.88 us, + 5 us; composition: 7 * 3 + 7 * 5 =
  // 56 us + 7/8 S / B_up + 7/8 (S/8) / B_out = 81.56 us, + 5 us.
  const CollectiveCost ag = CollectiveTime(CollectiveKind::kAllGather, 16 * kMiB, dp, c);
  EXPECT_STREQ(ag.algorithm, "ring");
  EXPECT_NEAR(ag.time_s, 203e-6 + 63.0 / 64 * S / kBup + kLaunch, 1e-12);
  EXPECT_LT(Forced(CollectiveAlgorithm::kHierarchical, CollectiveKind::kAllGather, 16 * kMiB, dp, c), ag.time_s);
}

TEST(CollectivesTest, SharpReducesCrossNodeAllReduce) {
  // DP=128, one GPU per node (the Llama 3 405B DP group), 1 GiB. Without SHARP the best is tree:
  // 2 * log2(128) * 5 us + 2 S / B_out = 70 us + 47721.86 us; ring: 2 * 127 * 5 us +
  // 2*127/128 S / B_out = 1270 + 47349.03 us. With SHARP: 2 * 5 us + S / B_out = 23870.93 us.
  const ClusterSpec with = Cluster("dgx-h100");
  ClusterSpec without = with;
  without.sharp = false;
  const GroupSpan dp = SpanOfStride(128, 8, with);
  const double S = static_cast<double>(kGiB);
  const CollectiveCost off = CollectiveTime(CollectiveKind::kAllReduce, kGiB, dp, without);
  EXPECT_STREQ(off.algorithm, "tree");
  EXPECT_NEAR(off.time_s, 70e-6 + 2 * S / kBout + kLaunch, 1e-12);
  const CollectiveCost on = CollectiveTime(CollectiveKind::kAllReduce, kGiB, dp, with);
  EXPECT_STREQ(on.algorithm, "sharp");
  EXPECT_NEAR(on.time_s, 2 * kAout + S / kBout + kLaunch, 1e-12);
  EXPECT_LT(on.time_s, 0.55 * off.time_s);
  EXPECT_FALSE(
      CollectiveTimeWith(CollectiveAlgorithm::kSharp, CollectiveKind::kAllReduce, kGiB, dp, without).has_value());
}

TEST(CollectivesTest, ZeroBytesCostOnlyLatency) {
  const ClusterSpec c = Cluster("dgx-h100");
  // One node, 8 ranks: ring and NVLS both 14 alpha_up; + launch = 47 us.
  const CollectiveCost node = CollectiveTime(CollectiveKind::kAllReduce, 0, SpanOfStride(8, 1, c), c);
  EXPECT_NEAR(node.time_s, 14 * kAup + kLaunch, 1e-15);
  EXPECT_EQ(node.algbw_bytes_per_s, 0);
  // 128 nodes, one GPU each: SHARP's 2 alpha_out = 10 us is the cheapest latency; + 5 us.
  const CollectiveCost wide = CollectiveTime(CollectiveKind::kAllReduce, 0, SpanOfStride(128, 8, c), c);
  EXPECT_NEAR(wide.time_s, 2 * kAout + kLaunch, 1e-15);
  // Send/recv across nodes: alpha_out + launch.
  EXPECT_NEAR(CollectiveTime(CollectiveKind::kSendRecv, 0, SpanOfStride(16, 1024, c), c).time_s, kAout + kLaunch,
              1e-15);
}

TEST(CollectivesTest, GroupOfOneCostsNothing) {
  const ClusterSpec c = Cluster("dgx-h100");
  const CollectiveCost one = CollectiveTime(CollectiveKind::kAllReduce, kGiB, SpanOfStride(1, 1, c), c);
  EXPECT_EQ(one.time_s, 0);
  EXPECT_STREQ(one.algorithm, "none");
}

TEST(CollectivesTest, TimeIsMonotonicInBytes) {
  const ClusterSpec c = Cluster("dgx-h100");
  const std::vector<GroupSpan> spans = {SpanOfStride(2, 1, c),  SpanOfStride(8, 1, c),   SpanOfStride(16, 1, c),
                                        SpanOfStride(64, 1, c), SpanOfStride(128, 8, c), SpanOfStride(4, 4, c)};
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                           CollectiveKind::kAllToAll, CollectiveKind::kBroadcast, CollectiveKind::kSendRecv}) {
    for (const GroupSpan& s : spans) {
      double prev = 0;
      for (int64_t bytes = 0; bytes <= 4 * kGiB; bytes = bytes == 0 ? 1 : bytes * 2) {
        const double t = CollectiveTime(k, bytes, s, c).time_s;
        EXPECT_GE(t, prev) << Name(k) << " n=" << s.size << " bytes=" << bytes;
        prev = t;
      }
    }
  }
}

TEST(CollectivesTest, AllToAllAcrossNodesIsSlowerThanWithin) {
  const ClusterSpec c = Cluster("dgx-h100");
  const double S = 64.0 * kMiB;  // per-rank buffer
  // EP=8 in one node: 7 alpha_up + 7/8 S / B_up + launch = 21 + 163.10 + 5 = 189.10 us.
  const CollectiveCost in = CollectiveTime(CollectiveKind::kAllToAll, 64 * kMiB, SpanOfStride(8, 1, c), c);
  EXPECT_STREQ(in.algorithm, "pairwise");
  EXPECT_NEAR(in.time_s, 7 * kAup + 7.0 / 8 * S / kBup + kLaunch, 1e-12);
  // EP=16 over two nodes: 7 alpha_up + 8 alpha_out + max(7/16 S / B_up, 8/16 S / B_out) + launch
  // = 21 + 40 + 745.65 + 5 = 811.65 us: half of each rank's buffer leaves over its own NIC.
  const CollectiveCost out = CollectiveTime(CollectiveKind::kAllToAll, 64 * kMiB, SpanOfStride(16, 1, c), c);
  EXPECT_NEAR(out.time_s, 7 * kAup + 8 * kAout + 0.5 * S / kBout + kLaunch, 1e-12);
  EXPECT_GT(out.time_s, 4 * in.time_s);
}

TEST(CollectivesTest, SendRecvUsesTheTierBetweenPeers) {
  const ClusterSpec c = Cluster("dgx-h100");
  const double S = 32.0 * kMiB;
  // Pipeline stages in one node (pp=8 innermost): alpha_up + S / B_up + launch.
  EXPECT_NEAR(CollectiveTime(CollectiveKind::kSendRecv, 32 * kMiB, SpanOfStride(8, 1, c), c).time_s,
              kAup + S / kBup + kLaunch, 1e-12);
  // One stage per node: alpha_out + S / B_out + launch.
  const CollectiveCost cross = CollectiveTime(CollectiveKind::kSendRecv, 32 * kMiB, SpanOfStride(16, 1024, c), c);
  EXPECT_STREQ(cross.algorithm, "p2p");
  EXPECT_NEAR(cross.time_s, kAout + S / kBout + kLaunch, 1e-12);
  EXPECT_DOUBLE_EQ(cross.busbw_bytes_per_s, cross.algbw_bytes_per_s);
}

TEST(CollectivesTest, PipelineLinksCountEachRanksNeighbourLinksByTheTierTheyCross) {
  // Links of a pipeline's ranks (PipelineLinkCounts): a pair (crossing, inside) per rank, the
  // stages' members a PP stride apart (placement tp, cp, ep, dp, pp: stride tp x cp x dp).
  const ClusterSpec h100 = Cluster("dgx-h100");      // 8 GPUs per NVLink domain
  const ClusterSpec gb200 = Cluster("gb200-nvl72");  // 72
  PlanSpec p;
  p.tp = 8;
  p.dp = 4;
  p.pp = 16;
  p.schedule = Schedule::k1F1B;
  // Stride 32 >= 8: every link crosses; the middle ranks have two, the ends one.
  PipelineLinks l = PipelineLinkCounts(p, h100);
  EXPECT_TRUE(l.Has(2, 0));
  EXPECT_TRUE(l.Has(1, 0));
  EXPECT_FALSE(l.Has(1, 1));
  // The Llama 3.1 405B layout of Megatron-Bridge's GB200 runs: TP 4 x DP 4, PP 16 interleaved,
  // stride 16 on 72-GPU domains. Ranks 0-71 share a domain, so stages 0-3 and the first half of
  // stage 4 (ranks 64-71) are together; rank 56 + j (stage 3) sends to 72 + j across, and its
  // link back to 40 + j stays inside: (1, 1). Stage 1 and 2 (ranks 16-47) have both neighbours in
  // their domain: (0, 2). No rank has both links across (that needs a domain shorter than two
  // strides). The wrap link (stage 15 to stage 0: ranks 240-255 to 0-15) crosses.
  p.tp = 4;
  p.pp = 16;
  p.schedule = Schedule::kInterleaved;
  p.vpp = 8;
  l = PipelineLinkCounts(p, gb200);
  EXPECT_TRUE(l.Has(1, 1));
  EXPECT_TRUE(l.Has(0, 2));
  EXPECT_FALSE(l.Has(2, 0));
  // The pace: one link across and one inside, with a link costing 10 across and 1 inside: 11.
  const PipelinePace pace = PipelineLinkPace(l, 1.0, 10.0);
  EXPECT_DOUBLE_EQ(pace.seconds, 11.0);
  EXPECT_EQ(pace.crossing, 1);
  EXPECT_EQ(pace.inside, 1);
  // A domain shorter than two strides: stride 16 on 24-GPU domains puts ranks 8-15 of each
  // domain (mod 24) with both neighbours outside it.
  ClusterSpec narrow = gb200;
  narrow.scale_up_domain_gpus = 24;
  EXPECT_TRUE(PipelineLinkCounts(p, narrow).Has(2, 0));
  // The whole pipeline in one domain: every link inside; one stage: no links.
  p.dp = 1;
  p.pp = 8;  // 32 ranks of 72
  l = PipelineLinkCounts(p, gb200);
  EXPECT_TRUE(l.Has(0, 2));
  EXPECT_EQ(l.seen, 1u << 2);
  p.pp = 1;
  EXPECT_EQ(PipelineLinkCounts(p, gb200).seen, 0u);
  // Bounded work: PP placed inside DP (stride 64) with 1,000 stages on a 65,536-GPU domain needs
  // 128 blocks x 64 x 1,000 = 8.2e6 visits, above kMaxPipelineLinkVisits: every link is counted
  // across (the slowest-hop rule), at once.
  ClusterSpec wide = gb200;
  wide.scale_up_domain_gpus = 65536;
  p.tp = 64;
  p.pp = 1000;
  p.dp = 4096;
  p.schedule = Schedule::k1F1B;
  p.placement = {Axis::kTp, Axis::kCp, Axis::kEp, Axis::kPp, Axis::kDp};
  l = PipelineLinkCounts(p, wide);
  EXPECT_TRUE(l.Has(2, 0));
  EXPECT_TRUE(l.Has(1, 0));
  EXPECT_FALSE(l.Has(1, 1));
}

TEST(CollectivesTest, AllGatherRingMatchesHandDerivation) {
  // FSDP all-gather of 1 GiB (total output) over 8 GPUs of a node: 7 alpha_up + 7/8 S / B_up +
  // launch = 21 + 2609.79 + 5 us; busbw -> B_up (7/8 factor).
  const ClusterSpec c = Cluster("dgx-h100");
  const double S = static_cast<double>(kGiB);
  const CollectiveCost ag = CollectiveTime(CollectiveKind::kAllGather, kGiB, SpanOfStride(8, 1, c), c);
  EXPECT_STREQ(ag.algorithm, "ring");
  EXPECT_NEAR(ag.time_s, 7 * kAup + 0.875 * S / kBup + kLaunch, 1e-12);
  EXPECT_NEAR(ag.busbw_bytes_per_s / kBup, 1.0, 0.02);
  // Reduce-scatter costs the same in this model.
  EXPECT_DOUBLE_EQ(CollectiveTime(CollectiveKind::kReduceScatter, kGiB, SpanOfStride(8, 1, c), c).time_s, ag.time_s);
}

// The time-only forms the step model reads are the full forms' time_s, bit for bit: every kind
// on a node, across nodes and on a group of one; and, with a profile, a fitted alpha-beta where one
// covers the size (alpha 40 us + 1 ns/B x 1 MiB = 40 + 1048.576 us) and the analytic model where
// none does.
TEST(CollectivesTest, SecondsAloneAreTheFullCostsTime) {
  const ClusterSpec c = Cluster("dgx-h100");
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                           CollectiveKind::kAllToAll, CollectiveKind::kBroadcast, CollectiveKind::kSendRecv})
    for (const GroupSpan& s : {SpanOfStride(8, 1, c), SpanOfStride(64, 8, c), SpanOfStride(64, 1, c), GroupSpan{}}) {
      EXPECT_EQ(CollectiveSeconds(k, kGiB, s, c), CollectiveTime(k, kGiB, s, c).time_s) << Name(k) << " " << s.size;
      EXPECT_EQ(CollectiveSeconds(k, 0, s, c), CollectiveTime(k, 0, s, c).time_s) << Name(k) << " " << s.size;
    }
  Profile fitted;
  fitted.collectives.push_back({.kind = CollectiveKind::kAllReduce,
                                .scale_out = false,
                                .ranks = 8,
                                .alpha_s = 40e-6,
                                .beta_s_per_byte = 1e-9,
                                .min_bytes = 1,
                                .max_bytes = kGiB});
  const GroupSpan node = SpanOfStride(8, 1, c);
  EXPECT_DOUBLE_EQ(ProfiledCollectiveSeconds(fitted, CollectiveKind::kAllReduce, kMiB, node, c), 40e-6 + 1048576e-9);
  EXPECT_EQ(ProfiledCollectiveSeconds(fitted, CollectiveKind::kAllReduce, kMiB, node, c),
            ProfiledCollectiveTime(fitted, CollectiveKind::kAllReduce, kMiB, node, c).time_s);
  EXPECT_EQ(ProfiledCollectiveSeconds(fitted, CollectiveKind::kAllGather, kMiB, node, c),
            CollectiveTime(CollectiveKind::kAllGather, kMiB, node, c, fitted.comm).time_s);
}

TEST(CollectivesTest, NamesMatchNcclTests) {
  EXPECT_STREQ(Name(CollectiveKind::kAllReduce), "all_reduce");
  EXPECT_STREQ(Name(CollectiveKind::kAllToAll), "alltoall");
  EXPECT_STREQ(Name(CollectiveKind::kSendRecv), "sendrecv");
  EXPECT_STREQ(Name(CollectiveAlgorithm::kHierarchical), "hierarchical");
}

TEST(CollectivesTest, ATinyAllReduceCostsWhatNcclsTunerEstimates) {
  // NCCL 2.28's tuner (src/graph/tuning.cc at 5067397c): LL ring base 6.6 us, 0.6 us a step over
  // NVLink, 1 us network overhead a step inside nodes once the ring crosses them, 2.7 us a step
  // across (5.0 at one GPU a node); LL tree base 6.8 us, 2 x ((ppn - 1) x 0.6 + log2(nodes) x 5.0);
  // NVLS (Simple) 25 us inside one domain.
  const ClusterSpec h100 = *LoadCluster("dgx-h100");  // 8 a domain, NVLS
  // 8 ranks, one node: ring 6.6 + 14 x 0.6 = 15.0 us, under NVLS's 25.
  EXPECT_NEAR(TinyAllReduceSeconds(GroupSpan{8, 8, 1}, h100), 15.0e-6, 1e-12);
  // 16 ranks on 2 nodes: ring 6.6 + (30 - 2) x 1.0 + 2 x 2.7 = 40.0; tree 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2.
  EXPECT_NEAR(TinyAllReduceSeconds(GroupSpan{16, 8, 2}, h100), 25.2e-6, 1e-12);
  // 256 ranks on 32 nodes: tree 6.8 + 2 x (4.2 + 5 x 5.0) = 65.2 (the ring, 622 us, is far behind).
  EXPECT_NEAR(TinyAllReduceSeconds(GroupSpan{256, 8, 32}, h100), 65.2e-6, 1e-12);
  // One rank on each of 8 nodes: ring 6.6 + 14 x 5.0 = 76.6; tree 6.8 + 2 x 3 x 5.0 = 36.8.
  EXPECT_NEAR(TinyAllReduceSeconds(GroupSpan{8, 1, 8}, h100), 36.8e-6, 1e-12);
  // 64 ranks inside one NVL72 domain: the ring's 6.6 + 126 x 0.6 = 82.2 against NVLS's 25.
  EXPECT_NEAR(TinyAllReduceSeconds(GroupSpan{64, 64, 1}, *LoadCluster("gb200-nvl72")), 25.0e-6, 1e-12);
  EXPECT_EQ(TinyAllReduceSeconds(GroupSpan{1, 1, 1}, h100), 0.0);
}

}  // namespace
}  // namespace meshplan::core
