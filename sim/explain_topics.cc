// Whiteboard explanations, the concept topics: each a worked example whose numbers are core/ or
// sim/ results (the checklist is sim/explain.cc; their shared helpers sim/explain_internal.h).
// The topics are listed in docs/explain.md.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/collectives.h"
#include "core/defaults.h"
#include "core/failures.h"
#include "core/flops.h"
#include "core/memory.h"
#include "core/params.h"
#include "core/step_graph.h"
#include "core/units.h"
#include "sim/explain.h"
#include "sim/explain_internal.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace meshplan::sim {

// ---------------------------------------------------------------------------------------------
// Topics
// ---------------------------------------------------------------------------------------------
namespace {

using namespace explain_internal;  // NOLINT: the explanation's shared helpers

constexpr double kSeedsParams70B = 70e9;  // the seed notes' round "70B", as they write it

core::Result<Explanation> TopicZero(const core::Profile& profile) {
  auto k = LoadCase("llama3-70b", "dgx-h100");
  if (!k.ok()) return k.status();
  const double n = static_cast<double>(core::CountParams(k->m).total);
  const double hbm = static_cast<double>(k->g.CapacityBytes());
  PlanSpec p = MakePlan(8, 1, 1, 1, 0, false, Recompute::kNone, 8192, 8, k->m.layers);
  Explanation ex;
  ex.title = "ZeRO / FSDP: sharding the 16 bytes per parameter (worked example: llama3-70b on 8 × h100-sxm)";
  ex.fits = true;
  {
    const core::ModelStateBytes b = core::ShardedModelStates(1.0, p, 1);
    PlanSpec mega = p;
    mega.dtypes.grads = Dtype::kFp32;
    ExplainStep st = NewStep("bytes_per_param", "16 bytes per parameter");
    st.rule =
        "Adam in mixed precision (ZeRO paper Table 1): bf16 weights and gradients for forward/backward, fp32 "
        "master weights, fp32 Adam m and v for the update.";
    st.formula = "bytes/param = weights + grads + master + m + v";
    st.substituted = Fmt("%.4g + %.4g + %.4g + %.4g = %.4g B (Megatron's fp32 main grads: %.4g B)", b.weights, b.grads,
                         b.master_weights, b.moments, b.Total(), core::BytesPerParam(mega));
    st.result =
        Fmt("%.4g B/param before activations, %.4g B of it the optimizer's (ZeRO's K)", b.Total(), b.Optimizer());
    Set(&st, "bytes_per_param", b.Total(), "B");
    Set(&st, "optimizer_bytes_per_param", b.Optimizer(), "B");
    Set(&st, "megatron_bytes_per_param", core::BytesPerParam(mega), "B");
    ex.steps.push_back(st);
  }
  {
    const double seeds_state = core::ShardedModelStates(kSeedsParams70B, p, 1).Total();
    const double state = core::ShardedModelStates(n, p, 1).Total();
    ExplainStep st = NewStep("state_70b", "70B × 16 B: the memory ultimatum");
    st.rule = "Model state = parameters × bytes per parameter; it must live somewhere before any activation does.";
    st.formula = "state = N × 16 B;  GPUs needed ≥ ⌈state / M⌉, M the memory CUDA reports of one GPU";
    st.substituted = Fmt("the seeds' 70e9 × 16 B = %s; llama3-70b's exact %s × 16 B = %s; %s / %s = %.2f",
                         Bytes(seeds_state).c_str(), Eng(n).c_str(), Bytes(state).c_str(), Bytes(state).c_str(),
                         Bytes(hbm).c_str(), state / hbm);
    st.result = Fmt("%s of state (%s for the exact count); an H100 holds %s ⇒ ≥ %.0f GPUs for the state alone",
                    Bytes(seeds_state).c_str(), Bytes(state).c_str(), Capacity(k->g).c_str(), std::ceil(state / hbm));
    Set(&st, "seeds_params", kSeedsParams70B);
    Set(&st, "seeds_state_bytes", seeds_state, "B");
    Set(&st, "params", n);
    Set(&st, "state_bytes", state, "B");
    Set(&st, "capacity_bytes", hbm, "B");
    Set(&st, "min_gpus", std::ceil(state / hbm), "GPUs");
    ex.steps.push_back(st);
  }
  {
    ExplainStep st = NewStep("stages", "ZeRO stages over N = 8 ranks");
    st.rule =
        "ZeRO-1 shards the optimizer (master + moments), ZeRO-2 also the gradients, ZeRO-3 (FSDP) also the "
        "weights, each over the N data-parallel ranks (Rajbhandari et al. 2020 §5).";
    st.formula = "ZeRO-0: 16;  ZeRO-1: 4 + 12/N;  ZeRO-2: 2 + 14/N;  ZeRO-3: 16/N  (B/param)";
    std::vector<std::string> parts;
    double per[4];
    for (int z = 0; z <= 3; ++z) {
      PlanSpec q = p;
      q.zero = z;
      per[z] = core::ShardedModelStates(1.0, q, 8).Total();
      const double bytes = core::ShardedModelStates(n, q, 8).Total();
      parts.push_back(Fmt("ZeRO-%d %.4g B/param = %s", z, per[z], Bytes(bytes).c_str()) +
                      (z > 0 ? Fmt(" (%.2f× less)", per[0] / per[z]) : std::string()));
      Set(&st, Fmt("zero%d_bytes_per_param", z), per[z], "B");
      Set(&st, Fmt("zero%d_bytes", z), bytes, "B");
    }
    st.substituted = Join(parts, "; ");
    st.result = Fmt("per GPU for llama3-70b over 8 ranks: ZeRO-3 %s — none of the stages fits %s",
                    Bytes(core::ShardedModelStates(
                              n,
                              [&] {
                                PlanSpec q = p;
                                q.zero = 3;
                                return q;
                              }(),
                              8)
                              .Total())
                        .c_str(),
                    Bytes(hbm).c_str());
    // The N -> infinity limits 16/4 and 16/2.
    PlanSpec z1 = p, z2 = p;
    z1.zero = 1;
    z2.zero = 2;
    const double lim1 = per[0] / core::ShardedModelStates(1.0, z1, int64_t{1} << 40).Total();
    const double lim2 = per[0] / core::ShardedModelStates(1.0, z2, int64_t{1} << 40).Total();
    st.seeds_note =
        Fmt("The seeds' 'ZeRO-1: ~4× memory reduction, ZeRO-2: ~8×' are the limits for very many ranks "
            "(%.2f× and %.2f×). At N = 8 they are %.2f× and %.2f×.",
            lim1, lim2, per[0] / per[1], per[0] / per[2]);
    Set(&st, "zero1_reduction", per[0] / per[1]);
    Set(&st, "zero2_reduction", per[0] / per[2]);
    ex.steps.push_back(st);
  }
  {
    PlanSpec z3 = p;
    z3.zero = 3;
    const core::ModelStateBytes seeds = core::ShardedModelStates(kSeedsParams70B, z3, 8);
    const core::ModelStateBytes exact = core::ShardedModelStates(n, z3, 8);
    PlanSpec full = z3;
    full.recompute = Recompute::kFull;
    if (Status v = RequireValid(full, *k, "ZeRO-3 over 8"); !v.ok()) return v;
    const core::MemoryReport mf = core::EstimateMemory(k->m, full, k->g, profile.memory);
    PlanSpec off = full;
    off.offload_optimizer = core::OffloadTarget::kCpu;
    off.offload_params = core::OffloadTarget::kCpu;
    if (Status v = RequireValid(off, *k, "ZeRO-3 + offload"); !v.ok()) return v;
    const core::MemoryReport mo = core::EstimateMemory(k->m, off, k->g, profile.memory);
    // What the offload costs a step: the host's Adam over the node's DRAM and the copies over the
    // host link (docs/compute.md, "The optimizer offloaded to the host"), a lower bound.
    const StepEstimate so = EstimateStep(k->m, off, k->g, k->c, profile);
    ExplainStep st = NewStep("zero3_over_8", "ZeRO-3 over 8 ranks: 140 GB, which does not fit");
    st.rule =
        "The seeds' quiz: a 70B model on one node of 8 H100s with ZeRO-3/FSDP. Every state term is divided "
        "by 8 — the optimizer's 12 B/param too.";
    st.formula = "per GPU = N × (2 + 2 + 12) B / 8";
    st.substituted =
        Fmt("70e9 × 2 B / 8 = %s weights + %s grads + 70e9 × 12 B / 8 = %s optimizer = %s (exact "
            "llama3-70b: %s); with full recompute the whole GPU needs %s; offloading the optimizer "
            "and the weight shards to CPU (ZeRO-Offload/Infinity) leaves %s on the GPU",
            Bytes(seeds.weights).c_str(), Bytes(seeds.grads).c_str(), Bytes(seeds.Optimizer()).c_str(),
            Bytes(seeds.Total()).c_str(), Bytes(exact.Total()).c_str(),
            Bytes(static_cast<double>(mf.per_gpu_bytes)).c_str(), Bytes(static_cast<double>(mo.per_gpu_bytes)).c_str());
    st.result =
        Fmt("%s per GPU > %s: does not fit without more sharding (≥ %.0f GPUs) or offload (%s per GPU "
            "with CPU offload: %s; the optimizer then steps on the host, %s of a %s step: its Adam streams "
            "28 B a parameter at DeepSpeed's measured %.3f of the node's %s of host memory, and the gradients "
            "and weights cross the host link)",
            Bytes(seeds.Total()).c_str(), Bytes(hbm).c_str(), std::ceil(exact.Total() * 8 / hbm),
            Bytes(static_cast<double>(mo.per_gpu_bytes)).c_str(), mo.fits ? "fits" : "still over",
            Secs(so.breakdown.optimizer_s).c_str(), Secs(so.time_s).c_str(), kHostAdamDramShare,
            (Bytes(k->c.host_memory_bytes_per_s) + "/s").c_str());
    st.seeds_note =
        Fmt("The seeds' quiz answer puts ~17.5 GB of weights, ~17.5 GB of gradients and '~17.5 GB of "
            "optimizer state' on each of the 8 GPUs. The optimizer is 12 B/param, not 2: 12 B × 70e9 / 8 "
            "= %s. The total is %s, and the seeds' 'ZeRO-3 + activation checkpointing ≈ 50–60 GB, "
            "comfortably fits' cannot be: the states alone exceed the GPU, and with full recompute the "
            "memory model gives %s.",
            Bytes(seeds.Optimizer()).c_str(), Bytes(seeds.Total()).c_str(),
            Bytes(static_cast<double>(mf.per_gpu_bytes)).c_str());
    Set(&st, "seeds_weights_bytes", seeds.weights, "B");
    Set(&st, "seeds_grads_bytes", seeds.grads, "B");
    Set(&st, "seeds_optimizer_bytes", seeds.Optimizer(), "B");
    Set(&st, "seeds_total_bytes", seeds.Total(), "B");
    Set(&st, "exact_total_bytes", exact.Total(), "B");
    Set(&st, "capacity_bytes", hbm, "B");
    Set(&st, "fits", seeds.Total() <= hbm ? 1 : 0);
    Set(&st, "full_recompute_per_gpu_bytes", static_cast<double>(mf.per_gpu_bytes), "B");
    Set(&st, "offload_per_gpu_bytes", static_cast<double>(mo.per_gpu_bytes), "B");
    Set(&st, "offload_fits", mo.fits ? 1 : 0);
    Set(&st, "offload_optimizer_step_s", so.breakdown.optimizer_s, "s");
    Set(&st, "offload_step_s", so.time_s, "s");
    ex.steps.push_back(st);
  }
  {
    // Traffic per rank per step, from the step graph's own data-parallel collectives.
    ExplainStep st = NewStep("communication", "Communication: ZeRO-1/2 = DDP, ZeRO-3 = 1.5× DDP");
    st.rule =
        "DDP all-reduces the gradients once (2(N−1)/N · Ψ per rank, ring); ZeRO-1/2 reduce-scatter the "
        "gradients and all-gather the updated weights — the same bytes; ZeRO-3 all-gathers the weights in "
        "forward, again in backward, and reduce-scatters the gradients (ZeRO paper §7).";
    st.formula = "DDP: 2(N−1)/N·Ψ;  ZeRO-1/2: (N−1)/N·Ψ + (N−1)/N·Ψ;  ZeRO-3: 3(N−1)/N·Ψ per microbatch of gathers";
    double traffic[4];
    int64_t micro = 1;
    for (int z = 0; z <= 3; ++z) {
      PlanSpec q = p;
      q.zero = z;
      const core::StepGraph graph = core::BuildStepGraph(k->m, q);
      micro = graph.microbatches;
      traffic[z] = RankTraffic(graph.dense_layer, core::CommGroup::kDpCp, q.dp * q.cp, graph.microbatches);
    }
    // With m microbatches per step, ZeRO-3 gathers the weights 2m times.
    PlanSpec q8 = p;
    q8.zero = 3;
    q8.global_batch = 64;
    const core::StepGraph g8 = core::BuildStepGraph(k->m, q8);
    const double z3_m8 = RankTraffic(g8.dense_layer, core::CommGroup::kDpCp, 8, g8.microbatches);
    st.substituted =
        Fmt("one llama3-70b layer (Ψ = %s of bf16 gradients), N = 8, %lld microbatch per step: DDP %s, "
            "ZeRO-1 %s, ZeRO-2 %s, ZeRO-3 %s per rank; ZeRO-3 / DDP = %.3g; with %lld microbatches "
            "ZeRO-3 gathers every microbatch: %.3g×",
            Bytes(traffic[0] / core::BusBandwidthFactor(core::CollectiveKind::kAllReduce, 8)).c_str(),
            static_cast<long long>(micro), Bytes(traffic[0]).c_str(), Bytes(traffic[1]).c_str(),
            Bytes(traffic[2]).c_str(), Bytes(traffic[3]).c_str(), traffic[3] / traffic[0],
            static_cast<long long>(g8.microbatches), z3_m8 / traffic[0]);
    st.result =
        Fmt("ZeRO-1 and -2 move %.3g× DDP's bytes, ZeRO-3 %.3g× per step with one microbatch (the seeds' "
            "1.5×; more with gradient accumulation)",
            traffic[1] / traffic[0], traffic[3] / traffic[0]);
    Set(&st, "ddp_bytes", traffic[0], "B");
    Set(&st, "zero1_bytes", traffic[1], "B");
    Set(&st, "zero2_bytes", traffic[2], "B");
    Set(&st, "zero3_bytes", traffic[3], "B");
    Set(&st, "zero3_over_ddp", traffic[3] / traffic[0]);
    Set(&st, "zero1_over_ddp", traffic[1] / traffic[0]);
    Set(&st, "zero3_over_ddp_8_microbatches", z3_m8 / traffic[0]);
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicTp(const core::Profile& profile) {
  auto k = LoadCase("llama3-70b", "dgx-h100");
  if (!k.ok()) return k.status();
  const PlanSpec p = MakePlan(64, 8, 2, 1, 1, false, Recompute::kSelective, 8192, 64, k->m.layers);
  if (Status v = RequireValid(p, *k, "TP 8 × PP 2"); !v.ok()) return v;
  Explanation ex;
  ex.title = "Tensor parallelism (worked example: llama3-70b, TP 8 on dgx-h100, seq 8192)";
  ex.fits = true;
  const core::StepGraph graph = core::BuildStepGraph(k->m, p);
  const CollectiveCount cc = CountCollectives(graph.dense_layer, core::CommGroup::kTp);
  {
    ExplainStep st = NewStep("collectives_per_layer", "Column-then-row: one all-reduce per block per direction");
    st.rule =
        "Megatron (Shoeybi et al. 2019): the first GEMM of a block is split by columns, the second by rows, so "
        "the nonlinearity stays local and one all-reduce joins the partial sums — in attention (heads split) "
        "and in the MLP; backward mirrors it.";
    st.formula = "per layer: 2 all-reduces forward + 2 backward, each of s·b·h activations";
    st.substituted =
        Fmt("the step graph of one llama3-70b layer at TP 8: %d forward + %d backward TP collectives of "
            "%s each (%lld × %lld × %lld × 2 B)",
            cc.forward, cc.backward, Bytes(static_cast<double>(cc.bytes)).c_str(), static_cast<long long>(p.seq_len),
            static_cast<long long>(p.micro_batch), static_cast<long long>(k->m.hidden));
    st.result = Fmt("%d all-reduces of %s per layer and microbatch; × %lld layers", cc.forward + cc.backward,
                    Bytes(static_cast<double>(cc.bytes)).c_str(), static_cast<long long>(k->m.layers));
    Set(&st, "forward_collectives", cc.forward);
    Set(&st, "backward_collectives", cc.backward);
    Set(&st, "bytes_each", static_cast<double>(cc.bytes), "B");
    Set(&st, "flex_rows_per_token", core::RanksPerToken(k->m.moe->experts, k->m.moe->top_k, p.ep));
    ex.steps.push_back(st);
  }
  {
    const core::GroupSpan inside = core::SpanOf(core::Axis::kTp, p, k->c);
    core::GroupSpan across;
    across.size = 8;
    across.per_domain = 1;
    across.domains = 8;
    const core::CollectiveCost ci =
        core::CollectiveTime(core::CollectiveKind::kAllReduce, cc.bytes, inside, k->c, profile.comm);
    const core::CollectiveCost ca =
        core::CollectiveTime(core::CollectiveKind::kAllReduce, cc.bytes, across, k->c, profile.comm);
    const double up = k->c.scale_up_bytes_per_s, nic = k->c.nic_bytes_per_s;
    const double nic_share = nic * static_cast<double>(k->c.nics_per_node) / static_cast<double>(k->c.gpus_per_node);
    ExplainStep st = NewStep("bandwidth_cliff", "Why TP stays inside the node");
    st.rule =
        "TP's all-reduces sit on the critical path of every layer. Inside a node they run on NVLink; one rank "
        "per node would put them on the InfiniBand rails.";
    st.formula = "t = α + 2(N−1)/N · S / B  (ring), B = NVLink or the GPU's NIC share";
    st.substituted =
        Fmt("NVLink %s vs NIC %s per GPU per direction (%.3g×); one %s all-reduce over 8 GPUs: %s in one "
            "node (%s) vs %s across 8 nodes (%s)",
            Rate(up).c_str(), Rate(nic_share).c_str(), up / nic_share, Bytes(static_cast<double>(cc.bytes)).c_str(),
            Secs(ci.time_s).c_str(), ci.algorithm, Secs(ca.time_s).c_str(), ca.algorithm);
    st.result = Fmt("crossing nodes makes each TP all-reduce %.2f× slower; × %d per layer × %lld layers per step",
                    ca.time_s / ci.time_s, cc.forward + cc.backward, static_cast<long long>(k->m.layers));
    st.seeds_note =
        Fmt("The seeds quote NVLink as '900 GB/s' and '~20× a single IB link'. 900 GB/s counts both "
            "directions; per direction it is %s against a 400 Gb/s NIC's %s: %.3g×, the seeds' other "
            "figure ('IB is 10× slower').",
            Rate(up).c_str(), Rate(nic).c_str(), up / nic);
    Set(&st, "scale_up_bytes_per_s", up, "B/s");
    Set(&st, "nic_bytes_per_s", nic, "B/s");
    Set(&st, "in_node_s", ci.time_s, "s");
    Set(&st, "across_nodes_s", ca.time_s, "s");
    Set(&st, "slowdown", ca.time_s / ci.time_s);
    ex.steps.push_back(st);
  }
  {
    const StepEstimate e = EstimateStep(k->m, p, k->g, k->c, profile);
    PlanSpec no = p;
    no.tp_overlap = core::TpOverlap::kNone;
    const StepEstimate en = EstimateStep(k->m, no, k->g, k->c, profile);
    ExplainStep st = NewStep("step_cost", "What TP costs in a step");
    st.rule =
        "Exposed TP time is the all-reduces not hidden under GEMMs; Megatron overlaps the backward input-"
        "gradient reduction with the weight-gradient GEMM.";
    st.formula = "t_TP = Σ exposed TP collectives on the critical stage";
    st.substituted =
        Fmt("llama3-70b on 64 GPUs, %s: exposed TP %s of a %s step (%s without overlap)", PlanText(p).c_str(),
            Secs(e.breakdown.tp_comm_s).c_str(), Secs(e.time_s).c_str(), Secs(en.breakdown.tp_comm_s).c_str());
    st.result = Fmt("TP communication is %s of the step", Pct(e.breakdown.tp_comm_s / e.time_s).c_str());
    Set(&st, "tp_comm_s", e.breakdown.tp_comm_s, "s");
    Set(&st, "tp_comm_no_overlap_s", en.breakdown.tp_comm_s, "s");
    Set(&st, "step_s", e.time_s, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicSp(const core::Profile& profile) {
  auto k = LoadCase("llama3-70b", "dgx-h100");
  if (!k.ok()) return k.status();
  PlanSpec p = MakePlan(64, 8, 2, 1, 1, false, Recompute::kNone, 8192, 64, k->m.layers);
  PlanSpec sp = p;
  sp.sequence_parallel = true;
  if (Status v = RequireValid(sp, *k, "TP 8 + SP"); !v.ok()) return v;
  auto gpt = LoadCase("gpt3-175b", "dgx-h100");
  if (!gpt.ok()) return gpt.status();
  Explanation ex;
  ex.title = "Sequence parallelism (worked example: llama3-70b and gpt3-175b at TP 8)";
  ex.fits = true;
  {
    const double a = static_cast<double>(core::LayerActivationBytes(k->m, p, false, Recompute::kNone));
    const double b = static_cast<double>(core::LayerActivationBytes(k->m, sp, false, Recompute::kNone));
    PlanSpec gp = MakePlan(64, 8, 8, 1, 1, false, Recompute::kNone, 2048, 64, gpt->m.layers);
    PlanSpec gs = gp;
    gs.sequence_parallel = true;
    const double ga = static_cast<double>(core::LayerActivationBytes(gpt->m, gp, false, Recompute::kNone));
    const double gb = static_cast<double>(core::LayerActivationBytes(gpt->m, gs, false, Recompute::kNone));
    ExplainStep st = NewStep("activations", "What SP shards");
    st.rule =
        "With TP alone, the norms, dropout and residual see the whole sequence on every TP rank (Korthikanti "
        "et al. 2022: sbh(10 + 24/t + 5as/(ht))). SP splits those along the sequence: (sbh/t)(34 + 5as/h).";
    st.formula = "saving = a_layer(TP) / a_layer(TP + SP)";
    st.substituted =
        Fmt("llama3-70b, s = 8192, t = 8 (flash attention): %s → %s per layer (%.2f×); gpt3-175b, s = "
            "2048, t = 8 (the paper's model, s² scores kept): %s → %s (%.2f×)",
            Bytes(a).c_str(), Bytes(b).c_str(), a / b, Bytes(ga).c_str(), Bytes(gb).c_str(), ga / gb);
    st.result = Fmt("SP cuts per-layer activations %.2f× (llama3-70b) and %.2f× (gpt3-175b)", a / b, ga / gb);
    Set(&st, "tp_only_bytes", a, "B");
    Set(&st, "tp_sp_bytes", b, "B");
    Set(&st, "reduction", a / b);
    Set(&st, "gpt3_reduction", ga / gb);
    ex.steps.push_back(st);
  }
  {
    const core::StepGraph g0 = core::BuildStepGraph(k->m, p), g1 = core::BuildStepGraph(k->m, sp);
    auto forward = [](const std::vector<core::Op>& ops) {
      std::vector<core::Op> f;
      for (const core::Op& op : ops)
        if (op.pass == core::Pass::kForward) f.push_back(op);
      return f;
    };
    const double f0 = RankTraffic(forward(g0.dense_layer), core::CommGroup::kTp, 8, 1);
    const double f1 = RankTraffic(forward(g1.dense_layer), core::CommGroup::kTp, 8, 1);
    const double t0 = RankTraffic(g0.dense_layer, core::CommGroup::kTp, 8, 1);
    const double t1 = RankTraffic(g1.dense_layer, core::CommGroup::kTp, 8, 1);
    const StepEstimate e0 = EstimateStep(k->m, p, k->g, k->c, profile);
    const StepEstimate e1 = EstimateStep(k->m, sp, k->g, k->c, profile);
    ExplainStep st = NewStep("communication", "SP's communication");
    st.rule =
        "An all-reduce is a reduce-scatter followed by an all-gather. SP keeps them apart: reduce-scatter "
        "after the row-parallel GEMM, all-gather before the next column-parallel one — the same bytes "
        "(Korthikanti §4.2.2). In backward, Megatron-LM all-gathers the sequence-sharded inputs once more "
        "for the weight gradients (it keeps only the shards), overlapped with the input-gradient GEMM.";
    st.formula = "all-reduce 2(t−1)/t · S = reduce-scatter (t−1)/t · S + all-gather (t−1)/t · S";
    st.substituted =
        Fmt("one llama3-70b layer, one microbatch, per rank: forward %s (TP) vs %s (TP + SP); forward "
            "+ backward %s vs %s (the backward re-gathers); the 64-GPU step (TP 8 × PP 2 × DP 4, no "
            "recompute): %s without SP, %s with it",
            Bytes(f0).c_str(), Bytes(f1).c_str(), Bytes(t0).c_str(), Bytes(t1).c_str(), Secs(e0.time_s).c_str(),
            Secs(e1.time_s).c_str());
    st.result =
        Fmt("the forward moves %.3g× the bytes, the whole step %.3g× (the re-gathers run under GEMMs); "
            "the step takes %.3g× as long",
            f1 / f0, t1 / t0, e1.time_s / e0.time_s);
    Set(&st, "forward_tp_bytes", f0, "B");
    Set(&st, "forward_tp_sp_bytes", f1, "B");
    Set(&st, "forward_ratio", f1 / f0);
    Set(&st, "tp_bytes", t0, "B");
    Set(&st, "tp_sp_bytes", t1, "B");
    Set(&st, "ratio", t1 / t0);
    Set(&st, "step_tp_s", e0.time_s, "s");
    Set(&st, "step_tp_sp_s", e1.time_s, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicPp(const core::Profile& profile) {
  Explanation ex;
  ex.title = "Pipeline parallelism: stages, microbatches, the bubble";
  ex.fits = true;
  {
    ExplainStep st = NewStep("bubble", "The 1F1B bubble");
    st.rule =
        "p stages, m microbatches per step: the first stage waits p − 1 slots to fill the pipeline and the "
        "last p − 1 to drain it (Narayanan et al. 2021 §2.2).";
    st.formula = "bubble = (p − 1) / (p − 1 + m)";
    std::vector<std::string> parts;
    for (int64_t m : {1, 8, 16, 64, 128}) {
      const double b = UniformBubble(Schedule::k1F1B, 16, m, 1);
      parts.push_back(Fmt("m = %lld: %s", static_cast<long long>(m), Pct(b).c_str()));
      Set(&st, Fmt("bubble_p16_m%lld", static_cast<long long>(m)), b);
    }
    st.substituted = "SchedulePipeline with 16 equal stages: " + Join(parts, ", ");
    st.result = Fmt("(16 − 1)/(16 − 1 + 16) = %s: with as many microbatches as stages half the step is bubble",
                    Pct(UniformBubble(Schedule::k1F1B, 16, 16, 1)).c_str());
    ex.steps.push_back(st);
  }
  {
    const int64_t p = 16;
    int64_t m = 1;
    while (UniformBubble(Schedule::k1F1B, p, m, 1) >= 0.05) ++m;
    const double seeds_m = 20.0 * static_cast<double>(p - 1);
    const double at_seeds = UniformBubble(Schedule::k1F1B, p, static_cast<int64_t>(seeds_m), 1);
    ExplainStep st = NewStep("five_percent", "How many microbatches for a bubble under 5%");
    st.rule = "(p − 1)/(p − 1 + m) < 0.05 ⇔ m > 19(p − 1); the seeds round it to M ≈ 20·(S − 1).";
    st.formula = "m_min = 19(p − 1) + 1;  M ≈ 20(p − 1)";
    // The batch that takes, for the seeds' 405B recipe (TP 8 × PP 16 × DP 128, seq 8192, mbs 1).
    const double batch_seqs = static_cast<double>(m) * 128;
    st.substituted =
        Fmt("p = 16: smallest m with bubble < 5%% is %lld (bubble %s); M = 20 × 15 = %.0f gives %s; at "
            "DP 128, mbs 1, seq 8192 that is a %s-sequence (%s-token) batch per step",
            static_cast<long long>(m), Pct2(UniformBubble(Schedule::k1F1B, p, m, 1)).c_str(), seeds_m,
            Pct2(at_seeds).c_str(), Count(batch_seqs).c_str(), Count(batch_seqs * 8192).c_str());
    std::vector<std::string> il;
    for (int64_t v : {2, 4}) {
      const double b = UniformBubble(Schedule::kInterleaved, p, 16, v);
      il.push_back(Fmt("v = %lld: %s", static_cast<long long>(v), Pct(b).c_str()));
      Set(&st, Fmt("interleaved_v%lld_m16", static_cast<long long>(v)), b);
    }
    const double zb = UniformBubble(Schedule::kZeroBubble, p, 16, 1);
    st.result =
        Fmt("the seeds' M ≈ 20(S − 1) is right (exactly: m ≥ %lld); at a Llama-3-sized batch (2,048 × 8,192 "
            "tokens, m = 16) 1F1B idles %s, so real runs shrink the bubble by interleaving (%s) or zero-bubble "
            "schedules (ZB-H1: %s)",
            static_cast<long long>(m), Pct(UniformBubble(Schedule::k1F1B, p, 16, 1)).c_str(), Join(il, ", ").c_str(),
            Pct(zb).c_str());
    Set(&st, "p", static_cast<double>(p));
    Set(&st, "m_min", static_cast<double>(m));
    Set(&st, "seeds_m", seeds_m);
    Set(&st, "bubble_at_seeds_m", at_seeds);
    Set(&st, "zero_bubble_m16", zb);
    ex.steps.push_back(st);
  }
  {
    auto k = LoadCase("llama3-405b", "dgx-h100");
    if (!k.ok()) return k.status();
    const PlanSpec p = MakePlan(16384, 8, 16, 1, 1, true, Recompute::kSelective, 8192, 2048, k->m.layers);
    if (Status v = RequireValid(p, *k, "405B recipe"); !v.ok()) return v;
    const core::StepGraph graph = core::BuildStepGraph(k->m, p);
    const core::GroupSpan pp_span = core::SpanOf(core::Axis::kPp, p, k->c);
    const core::CollectiveCost send =
        core::CollectiveTime(core::CollectiveKind::kSendRecv, graph.p2p.bytes, pp_span, k->c, profile.comm);
    const CollectiveCount tp = CountCollectives(graph.dense_layer, core::CommGroup::kTp);
    ExplainStep st = NewStep("recipe_405b", "405B on 16,384 H100s: TP 8 × PP 16 × DP 128");
    st.rule =
        "TP fills the node, PP spreads the layers over nodes (it only sends one activation per microbatch "
        "between neighbours), DP takes the rest. 126 layers do not divide by 16: Llama 3 drops one layer "
        "from the first and the last stage (Dubey et al. 2024 §3.3.2).";
    st.formula = "DP = GPUs / (TP × PP);  send = s·b·h·2 B per microbatch per direction";
    std::vector<std::string> split;
    for (int64_t l : p.stage_layers) split.push_back(std::to_string(l));
    st.substituted =
        Fmt("16,384 / (8 × 16) = %lld; layers %s; pipeline send %s per microbatch (%s across nodes) vs "
            "%d TP collectives of %s per layer (sequence-sharded by SP)",
            static_cast<long long>(p.dp), Join(split, "+").c_str(), Bytes(static_cast<double>(graph.p2p.bytes)).c_str(),
            Secs(send.time_s).c_str(), tp.forward + tp.backward, Bytes(static_cast<double>(tp.bytes)).c_str());
    st.result =
        Fmt("TP %lld × PP %lld × DP %lld = %s GPUs; m = 2048 / (1 × %lld) = %lld microbatches per pipeline",
            static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
            Int(p.tp * p.pp * p.dp).c_str(), static_cast<long long>(p.dp), static_cast<long long>(p.Microbatches()));
    Set(&st, "tp", static_cast<double>(p.tp));
    Set(&st, "pp", static_cast<double>(p.pp));
    Set(&st, "dp", static_cast<double>(p.dp));
    Set(&st, "microbatches", static_cast<double>(p.Microbatches()));
    Set(&st, "p2p_bytes", static_cast<double>(graph.p2p.bytes), "B");
    Set(&st, "p2p_s", send.time_s, "s");
    ex.steps.push_back(st);
  }
  {
    // The same model as Megatron-Bridge lays it on GB200 NVL72: consecutive stages 16 ranks apart
    // in 72-GPU NVLink domains, so most stage boundaries stay inside a domain (docs/collectives.md 4.7).
    auto k = LoadCase("llama3-405b", "gb200-nvl72");
    if (!k.ok()) return k.status();
    PlanSpec p = MakePlan(256, 4, 16, 1, 1, true, Recompute::kNone, 8192, 1536, k->m.layers);
    p.schedule = Schedule::kInterleaved;
    p.vpp = 8;
    p.stage_layers.assign(128, 1);  // one layer a chunk, the end chunks the embedding and the loss alone
    p.stage_layers.front() = p.stage_layers.back() = 0;
    if (Status v = RequireValid(p, *k, "405B on GB200 NVL72"); !v.ok()) return v;
    const core::Op send = core::BuildP2pOp(k->m, p);
    core::PipelinePace pace;
    const double charged = PipelineSendSeconds(send, p, k->c, profile, &pace);
    const double across = pace.crossing_s, inside = pace.inside_s;
    const int64_t stride = core::StrideOf(core::Axis::kPp, p);
    ExplainStep st = NewStep("nvl72_links", "Pipeline sends on GB200 NVL72: which links leave the NVLink domain");
    st.rule =
        "Every stage exchanges each microbatch with its neighbour stages, one send/recv pair per neighbour "
        "(Megatron-LM p2p_communication.py), so the rank whose links cost most sets the pace; each link runs "
        "over NVLink when both ranks share a scale-up domain, else over the network (the interleaved schedule "
        "adds the link from the last stage back to the first).";
    st.formula = "send charged per pass = (Σ over the pacing rank's links of α + S/B at the link's tier) / 2";
    st.substituted =
        Fmt("TP 4 × DP 4 puts consecutive stages %lld ranks apart in %lld-GPU domains: the pacing rank has %d link(s) "
            "across (%s each) and %d inside (%s each) for S = %s",
            static_cast<long long>(stride), static_cast<long long>(k->c.scale_up_domain_gpus), pace.crossing,
            Secs(across).c_str(), pace.inside, Secs(inside).c_str(), Bytes(static_cast<double>(send.bytes)).c_str());
    st.result = Fmt("%s per send and pass, against %s if every send crossed the network", Secs(charged).c_str(),
                    Secs(across).c_str());
    Set(&st, "stride", static_cast<double>(stride));
    Set(&st, "crossing_links", pace.crossing);
    Set(&st, "inside_links", pace.inside);
    Set(&st, "across_s", across, "s");
    Set(&st, "inside_s", inside, "s");
    Set(&st, "send_s", charged, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicCp(const core::Profile& profile) {
  auto k = LoadCase("llama3-70b", "dgx-h100");
  if (!k.ok()) return k.status();
  const int64_t seq = 32768;
  Explanation ex;
  ex.title = "Context parallelism (worked example: llama3-70b at seq 32,768, TP 8)";
  ex.fits = true;
  {
    ExplainStep st = NewStep("activations", "CP divides the sequence");
    st.rule =
        "Context parallelism splits the sequence over cp ranks inside attention as well, so every "
        "activation of a layer shrinks by cp (ring attention: K/V blocks circulate; Ulysses: all-to-alls "
        "swap sequence and heads; all-gather: K and V gathered whole for the layer's attention only).";
    st.formula = "a_layer(cp) = a_layer(s / cp)";
    std::vector<std::string> parts;
    double base = 0;
    for (int64_t cp : {1, 2, 4, 8}) {
      PlanSpec p = MakePlan(64 * cp, 8, 1, cp, 1, true, Recompute::kSelective, seq, 8, k->m.layers);
      if (Status v = RequireValid(p, *k, "CP"); !v.ok()) return v;
      const double a = static_cast<double>(core::LayerActivationBytes(k->m, p, false, Recompute::kSelective));
      if (cp == 1) base = a;
      parts.push_back(Fmt("cp %lld: %s", static_cast<long long>(cp), Bytes(a).c_str()));
      Set(&st, Fmt("layer_bytes_cp%lld", static_cast<long long>(cp)), a, "B");
    }
    st.substituted = "per layer, TP 8 + SP, selective: " + Join(parts, ", ");
    st.result = Fmt("× %lld layers: %s per microbatch without CP, ÷ cp with it", static_cast<long long>(k->m.layers),
                    Bytes(base * static_cast<double>(k->m.layers)).c_str());
    ex.steps.push_back(st);
  }
  {
    PlanSpec p = MakePlan(64 * 4, 8, 1, 4, 1, true, Recompute::kSelective, seq, 8, k->m.layers);
    const core::StepGraph graph = core::BuildStepGraph(k->m, p);
    const core::GroupSpan span = core::SpanOf(core::Axis::kCp, p, k->c);
    double ring_s = 0, attn_s = 0;
    int exchanges = 0;
    int64_t bytes = 0;
    for (const core::Op& op : graph.dense_layer) {
      if (op.pass != core::Pass::kForward) continue;
      if (op.kind == core::OpKind::kCollective && op.group == core::CommGroup::kCp) {
        ring_s += core::CollectiveTime(op.collective, op.bytes, span, k->c, profile.comm).time_s;
        bytes = op.bytes;
        ++exchanges;
      }
      if (op.kind == core::OpKind::kAttention) attn_s += ComputeOpTime(op, k->g, profile);
    }
    ExplainStep st = NewStep("ring_exchange", "Ring attention's K/V exchange");
    st.rule =
        "Each of the cp ranks holds s/cp queries and passes its K/V block around the ring while it computes "
        "attention on the block it holds: the exchange hides under attention when the block is large enough.";
    st.formula = "exchange = (cp − 1) × K/V block over the CP group;  hidden when ≤ attention time";
    st.substituted =
        Fmt("cp 4 across nodes (%lld per domain × %lld domains): %d forward exchanges of %s per layer = "
            "%s vs %s of forward attention per layer",
            static_cast<long long>(span.per_domain), static_cast<long long>(span.domains), exchanges,
            Bytes(static_cast<double>(bytes)).c_str(), Secs(ring_s).c_str(), Secs(attn_s).c_str());
    st.result = ring_s <= attn_s ? "the ring exchange fits under attention compute: CP costs little here"
                                 : "the ring exchange is longer than the attention it hides under: exposed";
    Set(&st, "exchange_s", ring_s, "s");
    Set(&st, "attention_s", attn_s, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicEp(const core::Profile& profile) {
  auto k = LoadCase("mixtral-8x7b", "dgx-h100");
  if (!k.ok()) return k.status();
  PlanSpec p = MakePlan(8, 1, 1, 1, 1, false, Recompute::kSelective, 4096, 8, k->m.layers);
  p.ep = 8;
  if (Status v = RequireValid(p, *k, "EP 8"); !v.ok()) return v;
  const core::StepGraph graph = core::BuildStepGraph(k->m, p);
  const CollectiveCount cc = CountCollectives(graph.moe_layer, core::CommGroup::kEp);
  Explanation ex;
  ex.title = "Expert parallelism (worked example: mixtral-8x7b, 8 experts top-2, EP 8 on dgx-h100)";
  ex.fits = true;
  {
    ExplainStep st = NewStep("all_to_alls", "All-to-alls per MoE layer");
    st.rule =
        "Each token goes to its top-k experts on other GPUs (dispatch all-to-all) and comes back (combine). "
        "Backward sends the gradients the same two ways. Megatron-Core's flex dispatcher (DeepEP, HybridEP; "
        "--moe-dispatcher flex) sends a token once to each rank holding one of its experts: D = R(1 − "
        "C(E − E/R, k)/C(E, k)) rows per token on R ranks with uniform routing instead of k (docs/compute.md).";
    st.formula = "per layer and microbatch: 2 forward + 2 backward all-to-alls of s·b·k·h·2 B";
    st.substituted =
        Fmt("the step graph of one mixtral layer at EP 8: %d forward + %d backward all-to-alls of %s "
            "(%lld tokens × top-%lld × %lld × 2 B)",
            cc.forward, cc.backward, Bytes(static_cast<double>(cc.bytes)).c_str(), static_cast<long long>(p.seq_len),
            static_cast<long long>(k->m.moe->top_k), static_cast<long long>(k->m.hidden));
    st.result = Fmt("%d all-to-alls per MoE layer and microbatch", cc.forward + cc.backward);
    st.seeds_note =
        "The seeds count 'two all-to-alls per layer (dispatch + combine)': that is the forward pass. "
        "Backward runs two more, so a training step has four per MoE layer and microbatch.";
    Set(&st, "forward_all_to_alls", cc.forward);
    Set(&st, "backward_all_to_alls", cc.backward);
    Set(&st, "bytes_each", static_cast<double>(cc.bytes), "B");
    ex.steps.push_back(st);
  }
  {
    const core::GroupSpan inside = core::SpanOf(core::Axis::kEp, p, k->c);
    core::GroupSpan across;
    across.size = 8;
    across.per_domain = 1;
    across.domains = 8;
    const double a_in =
        core::CollectiveTime(core::CollectiveKind::kAllToAll, cc.bytes, inside, k->c, profile.comm).time_s;
    const double a_out =
        core::CollectiveTime(core::CollectiveKind::kAllToAll, cc.bytes, across, k->c, profile.comm).time_s;
    double expert_s = 0;
    for (const core::Op& op : graph.moe_layer)
      if (op.pass == core::Pass::kForward && op.kind == core::OpKind::kGemm &&
          std::string(op.name).rfind("expert_", 0) == 0)
        expert_s += ComputeOpTime(op, k->g, profile);
    ExplainStep st = NewStep("all_to_all_cost", "All-to-all vs expert compute");
    st.rule =
        "An all-to-all moves (N−1)/N of each rank's buffer; inside an NVLink domain it is cheap, across "
        "nodes every byte crosses a NIC. Overlap (DualPipe) or keeping EP inside the node hides it.";
    st.formula = "t = (N−1)/N · S / B  vs  the expert GEMMs it feeds";
    st.substituted = Fmt(
        "one %s all-to-all: %s inside a node, %s with one rank per node; the forward expert GEMMs "
        "of the layer: %s",
        Bytes(static_cast<double>(cc.bytes)).c_str(), Secs(a_in).c_str(), Secs(a_out).c_str(), Secs(expert_s).c_str());
    st.result = Fmt("the forward pair costs %s in the node (%.2f× the expert GEMMs) and %s across nodes (%.2f×)",
                    Secs(2 * a_in).c_str(), 2 * a_in / expert_s, Secs(2 * a_out).c_str(), 2 * a_out / expert_s);
    Set(&st, "in_node_s", a_in, "s");
    Set(&st, "across_nodes_s", a_out, "s");
    Set(&st, "expert_gemm_s", expert_s, "s");
    ex.steps.push_back(st);
  }
  {
    // The host floor shows where an MoE layer's GPU work is short: Qwen3-30B-A3B (128 experts of
    // 768, top 8) at EP 8 on eight B200s, one 4,096-token sequence a microbatch against four.
    auto q = LoadCase("qwen3-30b-a3b", "dgx-b200");
    if (!q.ok()) return q.status();
    PlanSpec one = MakePlan(8, 1, 1, 1, 1, false, Recompute::kNone, 4096, 64, q->m.layers);
    one.ep = 8;
    if (Status v = RequireValid(one, *q, "EP 8, one sequence a microbatch"); !v.ok()) return v;
    PlanSpec four = one;
    four.micro_batch = 4;
    if (Status v = RequireValid(four, *q, "EP 8, four sequences a microbatch"); !v.ok()) return v;
    const MoeHostTime host = MoeLayerHostTime(q->m, one);
    const StepEstimate e1 = EstimateStep(q->m, one, q->g, q->c, profile);
    const StepEstimate e4 = EstimateStep(q->m, four, q->g, q->c, profile);
    ExplainStep st = NewStep("host_floor", "The MoE layer's host time");
    st.rule =
        "Megatron-Core's dropless dispatcher waits on the host once per MoE layer forward for the tokens each "
        "expert receives (the all-to-all's splits): the host queues the rest of the layer only once every "
        "kernel before that point has run, so only the MoE block's own kernels after it run beside its forward "
        "host time, and the attention block before it hides none of it (measured on Megatron-Core's whole layer "
        "on an H200). The backward has no such point: its host time runs beside the whole backward. " +
        Fmt("Megatron-Core's own MoE layer needs %.3f ms of host time forward and %.3f ms backward per microbatch "
            "for its router, dispatcher and synchronisation, %.3f and %.3f ms more per expert run one after "
            "another; ",
            1e3 * kMoeHostForwardBaseS, 1e3 * kMoeHostBackwardBaseS, 1e3 * kMoeHostForwardPerExpertS,
            1e3 * kMoeHostBackwardPerExpertS) +
        Fmt("under Transformer Engine's grouped GEMM each expert's GEMM is still a cuBLASLt call built on the "
            "host, about %.0f us each (2 an expert forward, 4 backward; none in this example, which runs without "
            "Transformer Engine); the attention's host time is not measured, so this is a lower bound "
            "(docs/compute.md). ",
            1e6 * kTeGroupedGemmHostPerGemmS) +
        "Megatron-Core's MoE guide names the cures: a larger micro batch, or CUDA graphs for "
        "the router and the dispatcher's preprocessing (megatron/core/transformer/moe/README.md at d98e8a64, "
        "'CPU Overhead Bottleneck').";
    st.formula =
        Fmt("forward = GPU time before the sync + max(%.3f ms + %.3f ms × experts / ep, the MoE block's GPU time after "
            "it); backward = max(%.3f ms + %.3f ms × experts / ep, the backward's GPU time) (the per-expert terms "
            "without a grouped GEMM; with Transformer Engine's, 2 and 4 cuBLASLt calls an expert instead)",
            1e3 * kMoeHostForwardBaseS, 1e3 * kMoeHostForwardPerExpertS, 1e3 * kMoeHostBackwardBaseS,
            1e3 * kMoeHostBackwardPerExpertS);
    st.substituted =
        Fmt("qwen3-30b-a3b at EP 8 on dgx-b200, grouped GEMM: host time %s forward and %s backward per MoE layer "
            "and microbatch; one sequence a microbatch: %s of a %s step waiting for the host; four: %s of %s",
            Secs(host.forward_s).c_str(), Secs(host.backward_s).c_str(), Secs(e1.breakdown.host_s).c_str(),
            Secs(e1.time_s).c_str(), Secs(e4.breakdown.host_s).c_str(), Secs(e4.time_s).c_str());
    st.result =
        Fmt("one sequence a microbatch: %s tokens/s per GPU, %s of the step waiting for the host; four: %s "
            "tokens/s per GPU, %s",
            Count(e1.tokens_per_s_per_gpu).c_str(), Pct(e1.breakdown.host_s / e1.time_s).c_str(),
            Count(e4.tokens_per_s_per_gpu).c_str(), Pct(e4.breakdown.host_s / e4.time_s).c_str());
    Set(&st, "host_forward_s", host.forward_s, "s");
    Set(&st, "host_backward_s", host.backward_s, "s");
    Set(&st, "host_wait_mbs1_s", e1.breakdown.host_s, "s");
    Set(&st, "host_wait_mbs4_s", e4.breakdown.host_s, "s");
    Set(&st, "tokens_per_s_per_gpu_mbs1", e1.tokens_per_s_per_gpu, "tokens/s");
    Set(&st, "tokens_per_s_per_gpu_mbs4", e4.tokens_per_s_per_gpu, "tokens/s");
    ex.steps.push_back(st);
  }
  {
    // Megatron-Core's EP overlap on the layout of Megatron-Bridge's overlap skill: Qwen3-30B-A3B at
    // EP 16 over two DGX H100 nodes, one sequence a microbatch, 64 a step per rank.
    auto q = LoadCase("qwen3-30b-a3b", "dgx-h100");
    if (!q.ok()) return q.status();
    PlanSpec off = MakePlan(16, 1, 1, 1, 1, false, Recompute::kNone, 4096, 1024, q->m.layers);
    off.ep = 16;
    off.moe_host = core::MoeHost::kNone;  // the schedule alone
    if (Status v = RequireValid(off, *q, "EP 16"); !v.ok()) return v;
    PlanSpec on = off;
    on.ep_overlap = true;
    PlanSpec dw = on;
    dw.delay_wgrad = true;
    const StepEstimate eo = EstimateStep(q->m, off, q->g, q->c, profile);
    const StepEstimate en = EstimateStep(q->m, on, q->g, q->c, profile);
    const StepEstimate ed = EstimateStep(q->m, dw, q->g, q->c, profile);
    ExplainStep st = NewStep("ep_overlap", "The EP overlap's merged layers");
    st.rule =
        "Megatron-Core's --overlap-moe-expert-parallel-comm runs one microbatch's forward of a layer beside "
        "another's backward of a layer on two streams: the communication stream runs the backward's combine, "
        "the forward's dispatch, the backward's dispatch and the forward's combine, while the compute stream runs "
        "the forward's attention block, the backward's MLP (input then weight gradients), the forward's MLP and "
        "the backward's attention block (TransformerLayerSchedulePlan.run). Each all-to-all hides only under its "
        "partner block; with --delay-wgrad-compute the backward's all-to-alls start after the input gradients. "
        "The warm-up's forwards and the cool-down's backwards run unmerged, their all-to-alls exposed "
        "(docs/compute.md §4).";
    st.formula =
        "a merged layer takes the growth per layer of the two streams' schedule; exposed EP = that − its compute "
        "blocks, plus the unmerged passes' all-to-alls";
    st.substituted =
        Fmt("qwen3-30b-a3b at EP 16 on two dgx-h100 nodes, one sequence a microbatch, 64 a step per rank: exposed EP "
            "all-to-alls %s of a %s step without the overlap, %s of %s with it, %s of %s with the weight gradients "
            "delayed",
            Secs(eo.breakdown.ep_comm_s).c_str(), Secs(eo.time_s).c_str(), Secs(en.breakdown.ep_comm_s).c_str(),
            Secs(en.time_s).c_str(), Secs(ed.breakdown.ep_comm_s).c_str(), Secs(ed.time_s).c_str());
    st.result = Fmt("the overlap gains %.2f×, %.2f× with the weight gradients delayed", eo.time_s / en.time_s,
                    eo.time_s / ed.time_s);
    Set(&st, "ep_comm_off_s", eo.breakdown.ep_comm_s, "s");
    Set(&st, "ep_comm_on_s", en.breakdown.ep_comm_s, "s");
    Set(&st, "ep_comm_delayed_s", ed.breakdown.ep_comm_s, "s");
    Set(&st, "step_off_s", eo.time_s, "s");
    Set(&st, "step_on_s", en.time_s, "s");
    Set(&st, "step_delayed_s", ed.time_s, "s");
    ex.steps.push_back(st);
  }
  {
    // The quantized experts' padding copies: Qwen3-30B-A3B at EP 8 on one DGX H100 in FP8 with
    // Transformer Engine, four 4,096-token sequences a microbatch (its GPU work outlasts the host's).
    auto q = LoadCase("qwen3-30b-a3b", "dgx-h100");
    if (!q.ok()) return q.status();
    PlanSpec experts = MakePlan(8, 1, 1, 1, 1, false, Recompute::kNone, 4096, 256, q->m.layers);
    experts.ep = 8;
    experts.micro_batch = 4;
    experts.precision = core::Dtype::kFp8;
    experts.transformer_engine = true;
    if (Status v = RequireValid(experts, *q, "EP 8 in FP8"); !v.ok()) return v;
    PlanSpec routed = experts;
    routed.moe_router_padding = true;
    const core::StepGraph padded = core::BuildStepGraph(q->m, experts);
    double pad_bytes = 0, pad_s = 0;
    for (const core::Op& op : padded.moe_layer) {
      const std::string_view n(op.name);
      if (n != "moe_quant_padding" && n != "moe_quant_unpadding") continue;
      pad_bytes += static_cast<double>(op.bytes);
      pad_s += ComputeOpTime(op, q->g, profile);
    }
    const StepEstimate ee = EstimateStep(q->m, experts, q->g, q->c, profile);
    const StepEstimate er = EstimateStep(q->m, routed, q->g, q->c, profile);
    ExplainStep st = NewStep("quant_padding", "The quantized experts' padding");
    st.rule =
        "Transformer Engine's FP8 grouped GEMM takes each expert's rows in multiples of 16 (MXFP8 32, NVFP4 128). "
        "Megatron-Core's grouped experts pad them before fc1 (Fp8Padding: the rows and their probabilities) and "
        "strip the padding after fc2 (Fp8Unpadding), a copy of the experts' rows each way, and the backward runs "
        "the inverse copies. Under dropless routing the experts' counts vary, so the copies run unless the tokens "
        "arrive padded: Megatron-Core's --moe-router-padding-for-quantization pads the routing map before the "
        "dispatch, and the HybridEP dispatcher pads in its dispatch (meshplan's --moe-router-padding; "
        "docs/compute.md).";
    st.formula =
        "per MoE layer and microbatch: forward 2·R·(h·2 + 4) + 2·R·h·2 bytes, backward the same, R = the "
        "rows the rank's experts receive (tokens · top-k, balanced)";
    st.substituted =
        Fmt("qwen3-30b-a3b at EP 8 on dgx-h100, FP8, four sequences a microbatch: %s moved in %s per layer and "
            "microbatch; the step %s with the experts' padding, %s with the router's",
            Bytes(pad_bytes).c_str(), Secs(pad_s).c_str(), Secs(ee.time_s).c_str(), Secs(er.time_s).c_str());
    st.result = Fmt("padding in the router gains %.3f× (%s tokens/s per GPU against %s)", ee.time_s / er.time_s,
                    Count(er.tokens_per_s_per_gpu).c_str(), Count(ee.tokens_per_s_per_gpu).c_str());
    Set(&st, "padding_bytes", pad_bytes, "B");
    Set(&st, "padding_s", pad_s, "s");
    Set(&st, "step_expert_padding_s", ee.time_s, "s");
    Set(&st, "step_router_padding_s", er.time_s, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicCollectives(const core::Profile& profile) {
  auto k = LoadCase("llama3-405b", "dgx-h100");
  if (!k.ok()) return k.status();
  Explanation ex;
  ex.title = "The collectives toolkit (nccl-tests' definitions; dgx-h100)";
  ex.fits = true;
  {
    ExplainStep st = NewStep("ring_all_reduce", "Ring all-reduce: 2(N−1)/N · M per rank");
    st.rule =
        "A ring all-reduce is a reduce-scatter then an all-gather; each moves (N−1)/N of the buffer through "
        "every rank (Thakur et al. 2005; Patarasuk & Yuan 2009: the bandwidth lower bound). nccl-tests calls "
        "this factor busbw / algbw.";
    st.formula = "all-reduce 2(N−1)/N · M;  all-gather, reduce-scatter, all-to-all (N−1)/N · M;  broadcast M";
    std::vector<std::string> parts;
    for (int64_t n : {2, 8, 16384}) {
      const double f = core::BusBandwidthFactor(core::CollectiveKind::kAllReduce, n);
      parts.push_back(Fmt("N = %s: %.5g × M", Int(n).c_str(), f));
      Set(&st, Fmt("all_reduce_factor_%lld", static_cast<long long>(n)), f);
    }
    const double ag = core::BusBandwidthFactor(core::CollectiveKind::kAllGather, 8);
    const double rs = core::BusBandwidthFactor(core::CollectiveKind::kReduceScatter, 8);
    const double ar = core::BusBandwidthFactor(core::CollectiveKind::kAllReduce, 8);
    st.substituted =
        Join(parts, "; ") + Fmt("; N = 8: reduce-scatter %.4g + all-gather %.4g = %.4g = all-reduce", rs, ag, rs + ag);
    st.result =
        Fmt("≈ 2M per rank whatever N (%.4g at N = 8): ring all-reduce is bandwidth-bound, and AllReduce = "
            "ReduceScatter + AllGather",
            ar);
    st.seeds_note =
        Fmt("The seeds' table gives broadcast as O(M log N). A pipelined (ring/chain) broadcast moves M "
            "per rank — nccl-tests' bus factor is %.4g — and log N is only a tree's latency term.",
            core::BusBandwidthFactor(core::CollectiveKind::kBroadcast, 8));
    Set(&st, "reduce_scatter_factor_8", rs);
    Set(&st, "all_gather_factor_8", ag);
    ex.steps.push_back(st);
  }
  {
    ExplainStep st = NewStep("times", "What 1 GiB costs on the two tiers");
    st.rule =
        "Alpha–beta time on the tiers the group spans: NVLink inside a node, the rails across nodes; NCCL "
        "picks ring, tree, NVLS or SHARP, whichever is fastest. docs/collectives.md.";
    st.formula = "t = hops × α + bytes per rank / B + launch";
    std::vector<std::string> parts;
    for (int64_t n : {8, 128, 1024}) {
      const core::GroupSpan span = core::SpanOfStride(n, 1, k->c);
      const core::CollectiveCost c =
          core::CollectiveTime(core::CollectiveKind::kAllReduce, core::kGiB, span, k->c, profile.comm);
      parts.push_back(Fmt("%lld GPUs: %s (%s, busbw %s)", static_cast<long long>(n), Secs(c.time_s).c_str(),
                          c.algorithm, Rate(c.busbw_bytes_per_s).c_str()));
      Set(&st, Fmt("all_reduce_1gib_%lld_s", static_cast<long long>(n)), c.time_s, "s");
    }
    const core::GroupSpan span128 = core::SpanOfStride(128, 1, k->c);
    const auto ring = core::CollectiveTimeWith(core::CollectiveAlgorithm::kRing, core::CollectiveKind::kAllReduce,
                                               core::kGiB, span128, k->c, profile.comm);
    const auto sharp = core::CollectiveTimeWith(core::CollectiveAlgorithm::kSharp, core::CollectiveKind::kAllReduce,
                                                core::kGiB, span128, k->c, profile.comm);
    st.substituted = "1 GiB all-reduce: " + Join(parts, "; ");
    if (ring && sharp) {
      st.substituted +=
          Fmt("; at 128 GPUs a flat ring takes %s, SHARP %s", Secs(ring->time_s).c_str(), Secs(sharp->time_s).c_str());
      st.result =
          Fmt("past one node the rails set the pace: in-network reduction (SHARP) makes the 128-GPU "
              "all-reduce %.2f× faster than a ring",
              ring->time_s / sharp->time_s);
      Set(&st, "ring_128_s", ring->time_s, "s");
      Set(&st, "sharp_128_s", sharp->time_s, "s");
    } else {
      st.result = "past one node the rails set the pace";
    }
    ex.steps.push_back(st);
  }
  {
    const PlanSpec p = MakePlan(16384, 8, 16, 1, 1, true, Recompute::kSelective, 8192, 2048, k->m.layers);
    if (Status v = RequireValid(p, *k, "405B recipe"); !v.ok()) return v;
    const core::MemoryReport mem = core::EstimateMemory(k->m, p, k->g, profile.memory);
    const core::StageMemory& w = mem.stages[static_cast<size_t>(mem.worst_stage)];
    const double grad = static_cast<double>(w.params) * static_cast<double>(core::DtypeBytes(p.dtypes.grads));
    const core::GroupSpan dp = core::SpanOf(core::Axis::kDp, p, k->c);
    const core::CollectiveCost rs =
        core::CollectiveTime(core::CollectiveKind::kReduceScatter, static_cast<int64_t>(grad), dp, k->c, profile.comm);
    const core::CollectiveCost ag =
        core::CollectiveTime(core::CollectiveKind::kAllGather, static_cast<int64_t>(grad), dp, k->c, profile.comm);
    const double whole = static_cast<double>(mem.params.total) * static_cast<double>(core::DtypeBytes(p.dtypes.grads));
    ExplainStep st = NewStep("dp_405b", "Llama 405B's DP gradient traffic");
    st.rule =
        "With TP × PP, each data-parallel group reduces only its model-parallel shard of the gradients, "
        "over the DP ranks (ZeRO-1: reduce-scatter the gradients, all-gather the updated weights).";
    st.formula = "shard = N / (TP × PP) × 2 B;  t = RS + AG over DP ranks";
    st.substituted =
        Fmt("TP 8 × PP 16 × DP 128: the fullest stage holds %s parameters = %s of bf16 gradients; "
            "reduce-scatter %s + all-gather %s over %lld ranks (%lld per node × %lld nodes)",
            Count(static_cast<double>(w.params)).c_str(), Bytes(grad).c_str(), Secs(rs.time_s).c_str(),
            Secs(ag.time_s).c_str(), static_cast<long long>(dp.size), static_cast<long long>(dp.per_domain),
            static_cast<long long>(dp.domains));
    st.result = Fmt("%s per step of DP traffic per rank, overlapped with the last backward",
                    Secs(rs.time_s + ag.time_s).c_str());
    st.seeds_note =
        Fmt("The seeds' quiz sizes Llama 405B's DP all-reduce as '405B params bf16 = 810 GB over 16k "
            "GPUs'. That is the whole model's gradient (%s); with TP 8 × PP 16 each rank reduces only "
            "its shard, %s, over 128 DP ranks, not 16k.",
            Bytes(whole).c_str(), Bytes(grad).c_str());
    Set(&st, "whole_gradient_bytes", whole, "B");
    Set(&st, "shard_gradient_bytes", grad, "B");
    Set(&st, "dp_ranks", static_cast<double>(dp.size));
    Set(&st, "dp_sync_s", rs.time_s + ag.time_s, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicPrecision(const core::Profile& profile) {
  auto k = LoadCase("llama3-70b", "dgx-h100");
  if (!k.ok()) return k.status();
  PlanSpec p = MakePlan(64, 8, 2, 1, 1, true, Recompute::kSelective, 8192, 512, k->m.layers);
  if (Status v = RequireValid(p, *k, "70B on 64"); !v.ok()) return v;
  Explanation ex;
  ex.title =
      "Mixed precision: bf16, fp8, nvfp4, and what stays fp32 (worked examples: llama3-70b on 64 × h100-sxm and on "
      "64 × gb200)";
  ex.fits = true;
  {
    PlanSpec no_master = p, mega = p, bnb = p;
    no_master.dtypes.master_weights = Dtype::kNone;
    mega.dtypes.grads = Dtype::kFp32;
    bnb.optimizer = core::Optimizer::kAdam8bit;
    bnb.dtypes.optimizer_states = Dtype::kInt8;
    ExplainStep st = NewStep("state_dtypes", "What each dtype costs per parameter");
    st.rule =
        "Compute in bf16 (or fp8); keep fp32 master weights and fp32 Adam moments — an fp16/bf16 optimizer "
        "loses small updates and overflows.";
    st.formula = "bytes/param = weights + grads + master + moments";
    st.substituted = Fmt(
        "bf16 + fp32 master + fp32 Adam: %.4g B; without the master copy %.4g B; Megatron's fp32 "
        "main grads %.4g B; 8-bit Adam moments %.4g B",
        core::BytesPerParam(p), core::BytesPerParam(no_master), core::BytesPerParam(mega), core::BytesPerParam(bnb));
    st.result = Fmt("%.4g B/param is the default; fp8 compute does not change it (the master copy stays fp32)",
                    core::BytesPerParam(p));
    Set(&st, "bytes_per_param", core::BytesPerParam(p), "B");
    Set(&st, "no_master_bytes_per_param", core::BytesPerParam(no_master), "B");
    Set(&st, "megatron_bytes_per_param", core::BytesPerParam(mega), "B");
    Set(&st, "adam8bit_bytes_per_param", core::BytesPerParam(bnb), "B");
    ex.steps.push_back(st);
  }
  core::Scenario s{k->m, k->g, k->c, p};
  ExplainStep st = PrecisionStep(s, p, profile);
  st.id = "fp8_step";
  st.title = "fp8 vs bf16: the step, not the peak";
  ex.steps.push_back(st);
  {
    // NVFP4 on Blackwell: llama3-70b on 64 GB200s as Megatron-Bridge's NVFP4 recipe lays it out
    // (TP 2, PP 4, VP 5, one 8192-token sequence a microbatch, 256 a step; its TP overlap off).
    auto gb = LoadCase("llama3-70b", "gb200-nvl72");
    if (!gb.ok()) return gb.status();
    PlanSpec q = MakePlan(64, 2, 4, 1, 1, true, Recompute::kNone, 8192, 256, gb->m.layers);
    q.vpp = 5;
    q.schedule = core::Schedule::kInterleaved;
    q.stage_layers.clear();
    q.transformer_engine = true;
    q.tp_overlap = core::TpOverlap::kNone;
    PlanSpec q8 = q, q4 = q;
    q8.precision = Dtype::kFp8;
    q8.fp8_scaling = core::Fp8Scaling::kCurrent;
    q4.precision = Dtype::kNvfp4;
    if (Status v = RequireValid(q4, *gb, "70B NVFP4 on GB200"); !v.ok()) return v;
    const double tb = EstimateStep(gb->m, q, gb->g, gb->c, profile).time_s;
    const double t8 = EstimateStep(gb->m, q8, gb->g, gb->c, profile).time_s;
    const StepEstimate e4 = EstimateStep(gb->m, q4, gb->g, gb->c, profile);
    const double pb = Peak(gb->g, Dtype::kBf16), p8 = Peak(gb->g, Dtype::kFp8), p4 = Peak(gb->g, Dtype::kNvfp4);
    const double rb = pb * GemmEfficiency(profile, gb->g, Dtype::kBf16);
    const double r4 = p4 * GemmEfficiency(profile, gb->g, Dtype::kNvfp4);
    ExplainStep n = NewStep("nvfp4_step", "NVFP4 on Blackwell: four times the peak, not the step");
    n.rule =
        "NVFP4 (Transformer Engine's NVFP4BlockScaling) runs every linear layer's GEMMs in 4-bit E2M1 with an "
        "E4M3 scale per 16 values; attention, the output layer and the router stay bf16, and each GEMM first "
        "quantizes its input and output gradient (an amax pass and a quantize writing both layouts: 41/8 B "
        "per element). The GEMMs' sustained rate, not their peak, is what a step sees (docs/compute.md).";
    n.formula = "speedup = t_step(bf16) / t_step(nvfp4) ≤ sustained GEMM rate(nvfp4) / rate(bf16) ≤ peak ratio";
    n.substituted =
        Fmt("GB200 peaks %s (bf16), %s (fp8), %s (nvfp4); sustained GEMM rates %s and %s (%.2f×); step %s (bf16) → "
            "%s (fp8) → %s (nvfp4)",
            Tflops(pb).c_str(), Tflops(p8).c_str(), Tflops(p4).c_str(), Tflops(rb).c_str(), Tflops(r4).c_str(), r4 / rb,
            Secs(tb).c_str(), Secs(t8).c_str(), Secs(e4.time_s).c_str());
    n.result = Fmt("nvfp4 makes this step %.2f× faster than bf16 and %.2f× faster than fp8, against a %.0f× peak",
                   tb / e4.time_s, t8 / e4.time_s, p4 / pb);
    Set(&n, "step_bf16_s", tb, "s");
    Set(&n, "step_fp8_s", t8, "s");
    Set(&n, "step_nvfp4_s", e4.time_s, "s");
    Set(&n, "gemm_rate_ratio", r4 / rb);
    ex.steps.push_back(n);
  }
  return ex;
}

core::Result<Explanation> TopicRecompute(const core::Profile& profile) {
  auto gpt = LoadCase("gpt3-175b", "dgx-h100");
  if (!gpt.ok()) return gpt.status();
  auto l70 = LoadCase("llama3-70b", "dgx-h100");
  if (!l70.ok()) return l70.status();
  Explanation ex;
  ex.title = "Activation recomputation and gradient accumulation (gpt3-175b, llama3-70b)";
  ex.fits = true;
  {
    const PlanSpec p = MakePlan(64, 8, 8, 1, 1, true, Recompute::kNone, 2048, 64, gpt->m.layers);
    if (Status v = RequireValid(p, *gpt, "gpt3 TP 8 + SP"); !v.ok()) return v;
    double a[3];
    const Recompute modes[3] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
    for (int i = 0; i < 3; ++i) a[i] = static_cast<double>(core::LayerActivationBytes(gpt->m, p, false, modes[i]));
    std::set<std::string> kept;
    for (const auto& t : core::LayerActivationTerms(gpt->m, p, false, Recompute::kSelective)) kept.insert(t.name);
    std::vector<std::string> dropped;
    for (const auto& t : core::LayerActivationTerms(gpt->m, p, false, Recompute::kNone))
      if (!kept.count(t.name)) dropped.push_back(t.name);
    double fl[3];
    for (int i = 0; i < 3; ++i) {
      PlanSpec q = p;
      q.recompute = modes[i];
      fl[i] = core::HardwareFlopsPerIteration(gpt->m, q, core::AttentionFlops::kFull) /
              core::ModelFlopsPerIteration(gpt->m, q, core::AttentionFlops::kFull);
    }
    ExplainStep st = NewStep("selective_vs_full", "Selective vs full recomputation");
    st.rule =
        "Selective recomputation (Korthikanti et al. 2022 §5) recomputes the attention core — QKᵀ, softmax, "
        "its dropout, × V — whose s² tensors are large and cheap to redo; full recomputation keeps only each "
        "layer's input and reruns the whole forward in backward.";
    st.formula = "a_layer: (sbh/t)(34 + 5as/h) → 34 sbh/t (selective) → 2 sbh/t (full);  extra FLOPs = HFU/MFU − 1";
    st.substituted =
        Fmt("gpt3-175b, s = 2048, TP 8 + SP: %s → %s (%.2f× less) → %s (%.2f× less) per layer; selective "
            "drops %s; extra FLOPs: selective %s, full %s",
            Bytes(a[0]).c_str(), Bytes(a[1]).c_str(), a[0] / a[1], Bytes(a[2]).c_str(), a[0] / a[2],
            Join(dropped, ", ").c_str(), Pct(fl[1] - 1).c_str(), Pct(fl[2] - 1).c_str());
    st.result = Fmt("selective: %.2f× less activation memory for %s more FLOPs; full: %.1f× less for %s more",
                    a[0] / a[1], Pct(fl[1] - 1).c_str(), a[0] / a[2], Pct(fl[2] - 1).c_str());
    st.seeds_note =
        Fmt("The seed notes mix the two up: selective is said to recompute 'cheap ops (LayerNorm, GeLU, "
            "dropout)' and to cost '~33%% extra FLOPs' for '~10× memory savings'. Selective recomputes the "
            "attention core and costs %s extra FLOPs for %.2f×; ~33%% (here %s) is full recomputation, "
            "which saves %.1f×.",
            Pct(fl[1] - 1).c_str(), a[0] / a[1], Pct(fl[2] - 1).c_str(), a[0] / a[2]);
    Set(&st, "none_bytes", a[0], "B");
    Set(&st, "selective_bytes", a[1], "B");
    Set(&st, "full_bytes", a[2], "B");
    Set(&st, "selective_extra_flops", fl[1] - 1);
    Set(&st, "full_extra_flops", fl[2] - 1);
    ex.steps.push_back(st);
  }
  {
    // The seeds: "seq_len=8192, batch=4, layers=80, d_model=8192, fp16: activations ≈ 100+ GB per GPU".
    PlanSpec one = MakePlan(8, 1, 1, 1, 0, false, Recompute::kNone, 8192, 32, l70->m.layers);
    one.micro_batch = 4;
    PlanSpec tp = MakePlan(8, 8, 1, 1, 0, true, Recompute::kNone, 8192, 4, l70->m.layers);
    tp.micro_batch = 4;
    if (Status v = RequireValid(one, *l70, "70B mbs 4"); !v.ok()) return v;
    if (Status v = RequireValid(tp, *l70, "70B TP 8 mbs 4"); !v.ok()) return v;
    const double layers = static_cast<double>(l70->m.layers);
    const double a1 = layers * static_cast<double>(core::LayerActivationBytes(l70->m, one, false, Recompute::kNone));
    const double a8 = layers * static_cast<double>(core::LayerActivationBytes(l70->m, tp, false, Recompute::kNone));
    const double af = layers * static_cast<double>(core::LayerActivationBytes(l70->m, one, false, Recompute::kFull));
    ExplainStep st = NewStep("seeds_activations", "Activations at seq 8192, batch 4, 80 layers, h 8192");
    st.rule =
        "The seeds' example: one microbatch of 4 sequences of 8192 tokens through llama3-70b's 80 layers "
        "(h = 8192), every layer's saved tensors kept for backward.";
    st.formula = "activations = L × a_layer(s = 8192, b = 4)";
    st.substituted = Fmt("80 × %s = %s on one GPU without TP; with TP 8 + SP: %s per GPU; full recompute (no TP): %s",
                         Bytes(a1 / layers).c_str(), Bytes(a1).c_str(), Bytes(a8).c_str(), Bytes(af).c_str());
    st.result = Fmt("%s without model parallelism, %s per GPU at TP 8 + SP", Bytes(a1).c_str(), Bytes(a8).c_str());
    if (a1 > 3 * 100e9)
      st.seeds_note =
          Fmt("The seeds put this at '≈ 100+ GB per GPU'. Counted tensor by tensor it is %s on a GPU "
              "that holds the whole model; ~100 GB is the figure per GPU once TP 8 + SP shards it (%s).",
              Bytes(a1).c_str(), Bytes(a8).c_str());
    Set(&st, "no_tp_bytes", a1, "B");
    Set(&st, "tp8_sp_bytes", a8, "B");
    Set(&st, "full_recompute_bytes", af, "B");
    ex.steps.push_back(st);
  }
  {
    // "You want effective batch = 4M tokens ... 2k tokens/microbatch ... 8 GPUs DP": the microbatch count
    // comes from PlanSpec::Microbatches() for a 2^22-token batch at seq 2048 on DP 8.
    PlanSpec p = MakePlan(8, 1, 1, 1, 1, false, Recompute::kNone, 2048, 0, l70->m.layers);
    const int64_t target_tokens = int64_t{1} << 22;  // the seeds' "4M tokens"
    p.global_batch = target_tokens / p.seq_len;
    const int64_t accum = p.Microbatches();
    const double tokens = static_cast<double>(p.seq_len * p.micro_batch * p.dp * accum);
    ExplainStep st = NewStep("grad_accumulation", "A 4M-token batch from 2k-token microbatches");
    st.rule =
        "Effective batch = micro-batch × accumulation steps × DP: run several microbatches per optimizer step, "
        "summing gradients, before the gradient reduction.";
    st.formula = "accumulation = batch tokens / (seq × mbs × DP)";
    st.substituted = Fmt(
        "%s tokens / (%lld × %lld × %lld) = %lld; %lld × %lld × %lld × %lld = %s tokens", Int(target_tokens).c_str(),
        static_cast<long long>(p.seq_len), static_cast<long long>(p.micro_batch), static_cast<long long>(p.dp),
        static_cast<long long>(accum), static_cast<long long>(p.seq_len), static_cast<long long>(p.micro_batch),
        static_cast<long long>(p.dp), static_cast<long long>(accum), Int(static_cast<int64_t>(tokens)).c_str());
    st.result = Fmt("%lld accumulation steps: 2k × 8 × %lld = %s tokens per optimizer step",
                    static_cast<long long>(accum), static_cast<long long>(accum), Count(tokens).c_str());
    Set(&st, "seq", static_cast<double>(p.seq_len));
    Set(&st, "dp", static_cast<double>(p.dp));
    Set(&st, "accumulation_steps", static_cast<double>(accum));
    Set(&st, "batch_tokens", tokens, "tokens");
    ex.steps.push_back(st);
  }
  {
    // PyTorch's non-reentrant checkpoint (plan.recompute_early_stop): the replay stops at the last
    // saved tensor, before the MLP's output projection. Llama 3 70B (no dropout), TP 8, s = 8192.
    PlanSpec whole = MakePlan(64, 8, 1, 1, 3, true, Recompute::kFull, 8192, 64, l70->m.layers);
    if (Status v = RequireValid(whole, *l70, "70B full recompute"); !v.ok()) return v;
    PlanSpec stop = whole;
    stop.recompute_early_stop = true;
    if (Status v = RequireValid(stop, *l70, "70B full recompute, early stop"); !v.ok()) return v;
    auto extra = [&](const PlanSpec& q) {
      return core::HardwareFlopsPerIteration(l70->m, q, core::AttentionFlops::kCausal) /
                 core::ModelFlopsPerIteration(l70->m, q, core::AttentionFlops::kCausal) -
             1;
    };
    const double e_whole = extra(whole), e_stop = extra(stop);
    ExplainStep st = NewStep("early_stop", "Full recomputation as PyTorch's checkpoint runs it");
    st.rule =
        "From PyTorch 2.1 the non-reentrant checkpoint (torch.utils.checkpoint with use_reentrant=False, FSDP's "
        "checkpoint_wrapper NO_REENTRANT) stops the replay once the last tensor the backward needs is saved again; "
        "autograd saves an op's inputs before it runs the op, so a dense block's MLP output projection (w2) and the "
        "residual after it never rerun. Megatron-LM's and DeepSpeed's checkpoints are reentrant and rerun the "
        "whole layer; Transformer Engine's and FP8 layers save after their GEMM, so they skip nothing.";
    st.formula = "extra FLOPs = (forward − 2·L·h·f per token) / (3 × forward)";
    st.substituted = Fmt("llama3-70b (h = 8192, f = 28672, 80 layers), s = 8192: whole replay %s, stopped before w2 %s",
                         Pct(e_whole).c_str(), Pct(e_stop).c_str());
    st.result = Fmt("%s of extra FLOPs instead of %s", Pct(e_stop).c_str(), Pct(e_whole).c_str());
    Set(&st, "whole_replay_extra_flops", e_whole);
    Set(&st, "early_stop_extra_flops", e_stop);
    ex.steps.push_back(st);
  }
  {
    // Offloading instead of recomputing (Megatron-Core --cpu-offloading-num-layers; Transformer
    // Engine's default scheduling): llama3-70b, 2 x 8192 tokens per microbatch, ZeRO-3 over 64
    // GPUs, FP8, as Megatron-Bridge's GB200 recipe runs it with 40 layers offloaded; and llama3-8b
    // on 8 H100s (4 x 8192 tokens, 16 of 32 layers), whose host link is PCIe.
    auto gb = LoadCase("llama3-70b", "gb200-nvl72");
    if (!gb.ok()) return gb.status();
    auto h1 = LoadCase("llama3-8b", "dgx-h100");
    if (!h1.ok()) return h1.status();
    PlanSpec none = MakePlan(64, 1, 1, 1, 3, false, Recompute::kNone, 8192, 256, gb->m.layers);
    none.micro_batch = 2;
    none.precision = core::Dtype::kFp8;
    PlanSpec full = none;
    full.recompute = Recompute::kFull;
    PlanSpec off = none;
    off.offload_activation_layers = 40;
    PlanSpec small = MakePlan(8, 1, 1, 1, 3, false, Recompute::kNone, 8192, 64, h1->m.layers);
    small.micro_batch = 4;
    small.offload_activation_layers = 16;
    if (Status v = RequireValid(off, *gb, "70B offload 40 on GB200"); !v.ok()) return v;
    if (Status v = RequireValid(full, *gb, "70B full recompute on GB200"); !v.ok()) return v;
    if (Status v = RequireValid(small, *h1, "8B offload 16 on H100"); !v.ok()) return v;
    auto gpu_bytes = [](const Case& k, const PlanSpec& p) {
      return static_cast<double>(core::EstimateMemory(k.m, p, k.g).per_gpu_bytes);
    };
    const double m_none = gpu_bytes(*gb, none), m_full = gpu_bytes(*gb, full), m_off = gpu_bytes(*gb, off);
    const StepEstimate t_full = EstimateStep(gb->m, full, gb->g, gb->c, profile);
    const StepEstimate t_off = EstimateStep(gb->m, off, gb->g, gb->c, profile);
    const StepEstimate t_pcie = EstimateStep(h1->m, small, h1->g, h1->c, profile);
    const double moved = static_cast<double>(core::OffloadedActivationBytes(gb->m, off));
    const double moved_small = static_cast<double>(core::OffloadedActivationBytes(h1->m, small));
    ExplainStep st = NewStep("offload_vs_recompute", "Offloading activations instead of recomputing them");
    st.rule =
        "Activation offloading (Megatron-Core --cpu-offloading-num-layers N, Transformer Engine's default "
        "scheduling) sends the first N layers' saved tensors to host memory during the forward and brings "
        "them back for the backward on a copy stream: at most L − N layers' sets stay on the GPU, and the "
        "compute waits only for copies that outlast its pass. No forward is rerun, so it costs nothing where "
        "the host link is fast enough (NVLink-C2C) and the exposed copies where it is not (PCIe).";
    st.formula = "GPU activations = (L − N) × a_layer;  wait per pass = max(0, N·a_layer / host link − pass·(L−1)/L)";
    st.substituted =
        Fmt("llama3-70b on 64 GB200s, 2 × 8192 tokens, ZeRO-3, FP8, 40 of 80 layers: %s per microbatch to the "
            "host over NVLink-C2C (%s/s each way): %s per GPU, step %.2f s, the compute waits %.3f s; full "
            "recomputation: %s, step %.2f s; neither: %s (does not fit). llama3-8b on 8 H100s, 4 × 8192 tokens, "
            "16 of 32 layers: %s per microbatch over PCIe Gen5 (%s/s each way): step %.2f s, %.2f s of it waiting",
            Bytes(moved).c_str(), Bytes(gb->g.host_link_bytes_per_s).c_str(), Bytes(m_off).c_str(), t_off.time_s,
            t_off.breakdown.offload_s, Bytes(m_full).c_str(), t_full.time_s, Bytes(m_none).c_str(),
            Bytes(moved_small).c_str(), Bytes(h1->g.host_link_bytes_per_s).c_str(), t_pcie.time_s,
            t_pcie.breakdown.offload_s);
    st.result =
        Fmt("on GB200 offloading fits in %s at %.2f s per step, %.0f%% faster than full recomputation "
            "(%s); over PCIe the copies cost %.2f s a step",
            Bytes(m_off).c_str(), t_off.time_s, 100 * (t_full.time_s / t_off.time_s - 1), Bytes(m_full).c_str(),
            t_pcie.breakdown.offload_s);
    Set(&st, "offloaded_bytes_per_microbatch", moved, "B");
    Set(&st, "gb200_offload_per_gpu_bytes", m_off, "B");
    Set(&st, "gb200_full_recompute_per_gpu_bytes", m_full, "B");
    Set(&st, "gb200_none_per_gpu_bytes", m_none, "B");
    Set(&st, "gb200_offload_step_s", t_off.time_s, "s");
    Set(&st, "gb200_full_recompute_step_s", t_full.time_s, "s");
    Set(&st, "gb200_offload_wait_s", t_off.breakdown.offload_s, "s");
    Set(&st, "h100_offload_wait_s", t_pcie.breakdown.offload_s, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicCheckpoint(const core::Profile& profile) {
  auto k = LoadCase("llama3-70b", "dgx-h100");
  if (!k.ok()) return k.status();
  auto f = core::LoadFailureModel("llama3-405b");
  if (!f.ok()) return f.status();
  Explanation ex;
  ex.title = "Checkpoints: size, sharding, sync vs async, interval (llama3-70b, llama3-405b)";
  ex.fits = true;
  const PlanSpec p = MakePlan(64, 8, 2, 1, 1, true, Recompute::kSelective, 8192, 512, k->m.layers);
  if (Status v = RequireValid(p, *k, "70B on 64"); !v.ok()) return v;
  const core::MemoryReport mem = core::EstimateMemory(k->m, p, k->g, profile.memory);
  {
    core::Scenario s{k->m, k->g, k->c, p};
    ExplainStep st = CheckpointStep(s, p, mem, *f);
    st.id = "size";
    st.title = "What a checkpoint holds (llama3-70b, TP 8 × PP 2 × DP 4, ZeRO-1)";
    PlanSpec zero0 = p;
    zero0.zero = 0;
    const double with_grads = core::ShardedModelStates(static_cast<double>(mem.params.total), zero0, 1).Total();
    PlanSpec seeds = zero0;
    seeds.dtypes.master_weights = Dtype::kNone;
    st.seeds_note =
        Fmt("The seeds size 'Llama-70B + optimizer state ≈ 840 GB'. A checkpoint holds the weights, the "
            "fp32 master weights and the moments — not the gradients: %s for llama3-70b (the 16 B/param "
            "training state is %s; the seeds' 840 GB drops the master copy and keeps the gradients).",
            Bytes(st.Value("total_bytes")).c_str(), Bytes(with_grads).c_str());
    ex.steps.push_back(st);
  }
  {
    PlanSpec z3 = MakePlan(8, 1, 1, 1, 3, false, Recompute::kFull, 8192, 8, k->m.layers);
    if (Status v = RequireValid(z3, *k, "ZeRO-3 over 8"); !v.ok()) return v;
    const core::MemoryReport m3 = core::EstimateMemory(k->m, z3, k->g, profile.memory);
    const core::CheckpointCost c3 = core::EstimateCheckpoint(m3, z3, k->c, *f);
    ExplainStep st = NewStep("per_rank", "Per-rank shards");
    st.rule =
        "Sharded checkpoints: each rank writes exactly the states it owns, in parallel; the total is written "
        "once, not once per replica.";
    st.formula = "per rank = (weights + master + moments) / sharding group";
    st.substituted =
        Fmt("llama3-70b, ZeRO-3 over 8: %s / 8 = %s per rank; naive (every one of 8 ranks writing the "
            "whole state): %s",
            Bytes(static_cast<double>(c3.total_bytes)).c_str(), Bytes(static_cast<double>(c3.per_gpu_bytes)).c_str(),
            Bytes(8.0 * static_cast<double>(c3.total_bytes)).c_str());
    st.result = Fmt("each rank writes %s; the %s written once", Bytes(static_cast<double>(c3.per_gpu_bytes)).c_str(),
                    Bytes(static_cast<double>(c3.total_bytes)).c_str());
    st.seeds_note =
        Fmt("The seeds' async example has 'each rank write ~17 GB (70B/8)': that is only the bf16 "
            "weights. With master weights and moments each of the 8 ranks writes %s.",
            Bytes(static_cast<double>(c3.per_gpu_bytes)).c_str());
    Set(&st, "total_bytes", static_cast<double>(c3.total_bytes), "B");
    Set(&st, "per_rank_bytes", static_cast<double>(c3.per_gpu_bytes), "B");
    ex.steps.push_back(st);
  }
  {
    auto big = LoadCase("llama3-405b", "dgx-h100");
    if (!big.ok()) return big.status();
    const PlanSpec q = MakePlan(16384, 8, 16, 1, 1, true, Recompute::kSelective, 8192, 2048, big->m.layers);
    if (Status v = RequireValid(q, *big, "405B recipe"); !v.ok()) return v;
    const core::MemoryReport mq = core::EstimateMemory(big->m, q, big->g, profile.memory);
    const core::CheckpointCost cq = core::EstimateCheckpoint(mq, q, big->c, *f);
    const core::JobFailureRates r = core::JobRates(*f, q.gpus, big->c.gpus_per_node);
    const double m_s = r.mtbf_h * 3600;
    const double young_async = core::YoungInterval(cq.snapshot_s, m_s);
    const double young_sync = core::YoungInterval(cq.sync_write_s, m_s);
    ExplainStep st = NewStep("interval", "How often: set by the MTBF");
    st.rule =
        "Checkpoint often enough that the work lost to a failure (half an interval on average) balances the "
        "time spent checkpointing: Young 1974.";
    st.formula = "τ = √(2 δ M)";
    st.substituted =
        Fmt("llama3-405b on 16,384 GPUs: M = %.2f h; async δ = %s ⇒ τ = %s; sync δ = %s (%s to %s) ⇒ "
            "τ = %s",
            r.mtbf_h, Secs(cq.snapshot_s).c_str(), Secs(young_async).c_str(), Secs(cq.sync_write_s).c_str(),
            Bytes(static_cast<double>(cq.total_bytes)).c_str(), Rate(big->c.storage_bytes_per_s).c_str(),
            Secs(young_sync).c_str());
    st.result =
        Fmt("async checkpoints every %s, synchronous ones every %s: the pause, not intuition, sets the "
            "cadence",
            Secs(young_async).c_str(), Secs(young_sync).c_str());
    Set(&st, "mtbf_h", r.mtbf_h, "h");
    Set(&st, "async_pause_s", cq.snapshot_s, "s");
    Set(&st, "sync_pause_s", cq.sync_write_s, "s");
    Set(&st, "young_async_s", young_async, "s");
    Set(&st, "young_sync_s", young_sync, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

core::Result<Explanation> TopicFailures(const core::Profile& profile) {
  auto k = LoadCase("llama3-405b", "dgx-h100");
  if (!k.ok()) return k.status();
  auto f = core::LoadFailureModel("llama3-405b");
  if (!f.ok()) return f.status();
  Explanation ex;
  ex.title = "Failures at scale: rates, MTBF, goodput (Llama 3 405B failure table)";
  ex.fits = true;
  {
    ExplainStep st = NewStep("rates", "Interruptions grow with the GPU count");
    st.rule =
        "Each component fails at a rate per GPU-hour or node-hour (the Llama 3 paper's 54-day table on "
        "16,384 H100s); a job's rate is their sum times its GPUs or nodes, so MTBF falls as 1/N.";
    st.formula = "λ_job = Σ rate_c × (GPUs or nodes);  MTBF = 1 / λ_job";
    std::vector<std::string> parts;
    for (int64_t n : {8, 1024, 16384}) {
      const core::JobFailureRates r = core::JobRates(*f, n, k->c.gpus_per_node);
      parts.push_back(Fmt("%s GPUs: MTBF %s, %.3g a day", Int(n).c_str(), Secs(r.mtbf_h * 3600).c_str(),
                          24 * r.unexpected_per_hour));
      Set(&st, Fmt("per_day_%lld", static_cast<long long>(n)), 24 * r.unexpected_per_hour, "1/day");
      Set(&st, Fmt("mtbf_h_%lld", static_cast<long long>(n)), r.mtbf_h, "h");
    }
    st.substituted = Join(parts, "; ");
    const core::JobFailureRates big = core::JobRates(*f, 16384, k->c.gpus_per_node);
    st.result = Fmt("at 16,384 GPUs a job is interrupted every %.2f h: %.1f times a day", big.mtbf_h,
                    24 * big.unexpected_per_hour);
    st.seeds_note = FailureSeedsNote(*f, k->c.gpus_per_node);
    ex.steps.push_back(st);
  }
  {
    const PlanSpec p = MakePlan(16384, 8, 16, 1, 1, true, Recompute::kSelective, 8192, 2048, k->m.layers);
    if (Status v = RequireValid(p, *k, "405B recipe"); !v.ok()) return v;
    core::Scenario s{k->m, k->g, k->c, p};
    const core::MemoryReport mem = core::EstimateMemory(k->m, p, k->g, profile.memory);
    const StepEstimate step = EstimateStep(k->m, p, k->g, k->c, profile);
    ReliabilityOptions ro;
    ro.days = 54;  // the paper's snapshot
    ro.trials = 100;
    const auto rel = EstimateReliability(s, mem, step, *f, ro);
    ExplainStep st = FailuresStep(s, *f, rel);
    st.id = "goodput";
    st.title = "Goodput of the Llama 3 405B recipe over 54 days";
    st.seeds_note.clear();
    if (rel.ok()) {
      Set(&st, "expected_interruptions", rel->expected_interruptions);
      st.result += Fmt("; %.0f interruptions expected in 54 days", rel->expected_interruptions);
    }
    ex.steps.push_back(st);
  }
  return ex;
}

}  // namespace

core::Result<Explanation> TopicGemm(const core::Profile& profile) {
  auto h = LoadCase("gpt3-175b", "dgx-h100");
  if (!h.ok()) return h.status();
  auto a = LoadCase("gpt3-175b", "dgx-a100");
  if (!a.ok()) return a.status();
  auto gemm = [](int64_t m, int64_t n, int64_t k) {
    core::Op op;
    op.kind = core::OpKind::kGemm;
    op.dtype = Dtype::kBf16;
    op.m = m;
    op.n = n;
    op.k = k;
    return op;
  };
  Explanation ex;
  ex.title =
      "A GEMM's time: the roofline, the last wave, a short reduction and widths off a multiple of 8 (worked "
      "examples: GPT-3 175B's output head at TP 8 on h100-sxm, Korthikanti 2022's 22B QKV GEMM on a100-80g, Llama 3 "
      "70B's row-parallel layers at TP 8)";
  ex.fits = true;
  const core::GpuSpec& g = h->g;
  // The padded head: Megatron's 51,200-token vocabulary over TP 8, 2,048 tokens.
  const core::Op head = gemm(2048, 6400, 12288);
  {
    const GemmRoofline r = GemmSides(head, g, profile);
    const double flops = 2.0 * 2048 * 6400 * 12288;
    const double bytes = (2048.0 * 12288 + 12288.0 * 6400 + 2048.0 * 6400) * 2;
    const double t = ComputeOpTime(head, g, profile);
    ExplainStep st = NewStep("roofline", "The roofline: the slower of arithmetic and memory");
    st.rule =
        "A GEMM takes the longer of its FLOPs at the GPU's sustained rate for its dtype (η_gemm, measured per GPU "
        "preset: a long GEMM at the power limit; where a preset has none, the A100s', the profile's assumed 0.80, "
        "which report then says) and its three matrices through HBM, plus the kernel's launch and tail t_k; F½ "
        "ramps small GEMMs down (docs/compute.md §3).";
    st.formula =
        "t = max((2mnk × c_k / w + F½) / (peak × η_gemm), (mk + kn + mn) × bytes / (HBM × η_hbm)) + t_k "
        "(c_k: the reduction's length, below)";
    st.substituted =
        Fmt("2048 x 6400 x 12288 bf16: %s FLOP; compute (%s × %.4f + %s) / (%s × %.3f) = %s; memory %s / (%s × %.2f) "
            "= %s; t_k %s",
            Eng(flops).c_str(), Eng(flops).c_str(), GemmReductionCost(head, g), Eng(profile.gemm_half_flops).c_str(),
            Tflops(Peak(g, Dtype::kBf16)).c_str(), GemmEfficiency(profile, g, Dtype::kBf16), Secs(r.compute_s).c_str(),
            Bytes(bytes).c_str(), Rate(g.hbm_bytes_per_s).c_str(), profile.hbm_efficiency, Secs(r.memory_s).c_str(),
            Secs(profile.kernel_overhead_s).c_str());
    st.result = Fmt("%s, compute-bound: %s", Secs(t).c_str(), Tflops(flops / t).c_str());
    Set(&st, "compute_s", r.compute_s, "s");
    Set(&st, "memory_s", r.memory_s, "s");
    Set(&st, "time_s", t, "s");
    ex.steps.push_back(st);
  }
  {
    // Korthikanti 2022 Table 4's 22B layer at t = 8, b = 4, s = 2048: its QKV output 8192 x 2304.
    const core::Op qkv = gemm(8192, 2304, 6144);
    const double wa = GemmWaveEfficiency(qkv, a->g), wh = GemmWaveEfficiency(qkv, g);
    const int64_t tiles = (8192 / kGemmTileRows) * ((2304 + kGemmTileCols - 1) / kGemmTileCols);
    ExplainStep st = NewStep("waves", "The last wave: tiles over SMs");
    st.rule =
        "cuBLAS runs a GEMM as tiles of its output, one SM each, as many at once as the GPU has SMs; a last wave "
        "only partly full takes a whole wave (NVIDIA's Matrix Multiplication Background guide §3.2). Measured on "
        "Hopper, its kernels do not pay it (the H100/H200 presets: gemm_wave_quantization false).";
    st.formula = "w = tiles / (⌈tiles / SMs⌉ × SMs), tiles = ⌈m/128⌉ × ⌈n/256⌉";
    st.substituted = Fmt("8192 x 2304: %lld tiles over %lld SMs (a100-80g) = %.2f waves, run as %lld: w = %.3f",
                         static_cast<long long>(tiles), static_cast<long long>(a->g.sms),
                         static_cast<double>(tiles) / static_cast<double>(a->g.sms),
                         static_cast<long long>((tiles + a->g.sms - 1) / a->g.sms), wa);
    st.result =
        Fmt("the A100 loses %s of that GEMM's time to its last wave; h100-sxm w = %.0f", Pct(1 - wa).c_str(), wh);
    Set(&st, "wave_efficiency_a100", wa);
    Set(&st, "wave_efficiency_h100", wh);
    ex.steps.push_back(st);
  }
  {
    // Llama 3 70B at TP 8: the attention's output projection reduces over its 1,024 local columns,
    // the MLP's fc2 over 3,584 (28,672 / 8); 8,192 tokens.
    const core::Op proj = gemm(8192, 8192, 1024), fc2 = gemm(8192, 8192, 3584);
    const double cp = GemmReductionCost(proj, g), cf = GemmReductionCost(fc2, g);
    const auto k0 = g.gemm_k_overhead.find(Dtype::kBf16);
    const double K0 = k0 == g.gemm_k_overhead.end() ? 0.0 : k0->second;
    ExplainStep st = NewStep("reduction", "A short reduction: the tiles' fixed work");
    st.rule =
        "Each output tile loops over the reduction k in steps, then writes its result: that fixed work costs about "
        "K0 elements of k, so a GEMM runs at k / (k + K0) of a long-k one (fitted to an H200's shape sweep, "
        "tests/data/gpu/h200-2026-11-28: K0 = 150 in bf16, 230 in fp8; the Hopper presets' gemm_k_overhead; the "
        "B200's and GB200's from XLA's published sm_100 matmul table). The sustained efficiency was taken at the "
        "preset's reference k (8192 on Hopper), so the factor is relative to it. The reduction is the forward's "
        "k, the input gradient's n, the weight gradient's m (the tokens); tensor parallelism shortens the row-parallel "
        "layers' k.";
    st.formula = "c_k = (k + K0) / k × R / (R + K0), R the reference k (h100-sxm: 8192)";
    st.substituted =
        Fmt("h100-sxm, K0 = %.0f: k = 1024 (8192 x 8192 x 1024): c_k = %.4f; k = 3584: %.4f; "
            "k = 12288 (the head above): %.4f",
            K0, cp, cf, GemmReductionCost(head, g));
    st.result = Fmt("the 70B layer's output projection at TP 8 runs %s longer than at k = 8192, its fc2 %s",
                    Pct(cp - 1).c_str(), Pct(cf - 1).c_str());
    Set(&st, "k0", K0);
    Set(&st, "reduction_cost_k1024", cp);
    Set(&st, "reduction_cost_k3584", cf);
    ex.steps.push_back(st);
  }
  {
    const core::Op odd = gemm(2048, 6283, 12288);
    const double f = GemmAlignmentEfficiency(odd, g);
    const double t_odd = ComputeOpTime(odd, g, profile), t_pad = ComputeOpTime(head, g, profile);
    ExplainStep st = NewStep("alignment", "Widths off a multiple of 8: the vocabulary's padding");
    st.rule =
        "cuBLAS's fast 16-bit kernels load 16-byte vectors: a GEMM whose widths (n, k) are not multiples of 8 "
        "runs narrower-loading kernels, measured on an H200 at 0.358 of the aligned speed for even widths and "
        "0.186 for odd ones (tests/data/gpu/h200-2026-12-04). GPT-2's 50,257-token vocabulary over TP 8 is 6,283 "
        "columns a rank, odd; Megatron pads the vocabulary to a multiple of 128 × TP (plan.vocab_divisible_by).";
    st.formula = "t = (2mnk × c_k / (w × a) + F½) / (peak × η_gemm) + t_k, a = 1 (aligned), 0.358 (even), 0.186 (odd)";
    st.substituted = Fmt("2048 x 6283 x 12288: a = %.3f, %s; padded to 51,200 (6,400 columns, %s more FLOPs): %s", f,
                         Secs(t_odd).c_str(), Pct(6400.0 / 6283.0 - 1).c_str(), Secs(t_pad).c_str());
    st.result = Fmt("padding makes the head's GEMM %.2f× faster despite its extra columns", t_odd / t_pad);
    Set(&st, "alignment_efficiency", f);
    Set(&st, "unpadded_s", t_odd, "s");
    Set(&st, "padded_s", t_pad, "s");
    ex.steps.push_back(st);
  }
  return ex;
}

const char* Name(Topic t) {
  switch (t) {
    case Topic::kZero: return "zero";
    case Topic::kTp: return "tp";
    case Topic::kSp: return "sp";
    case Topic::kPp: return "pp";
    case Topic::kCp: return "cp";
    case Topic::kEp: return "ep";
    case Topic::kCollectives: return "collectives";
    case Topic::kPrecision: return "precision";
    case Topic::kRecompute: return "recompute";
    case Topic::kCheckpoint: return "checkpoint";
    case Topic::kFailures: return "failures";
    case Topic::kGemm: return "gemm";
  }
  return "zero";
}

std::vector<Topic> AllTopics() {
  return {Topic::kZero,      Topic::kTp,         Topic::kSp,          Topic::kPp,
          Topic::kCp,        Topic::kEp,         Topic::kCollectives, Topic::kPrecision,
          Topic::kRecompute, Topic::kCheckpoint, Topic::kFailures,    Topic::kGemm};
}

bool FromName(const std::string& text, Topic* out) {
  for (Topic t : AllTopics())
    if (text == Name(t)) {
      *out = t;
      return true;
    }
  return false;
}

std::string TopicChoices() {
  std::vector<std::string> names;
  for (Topic t : AllTopics()) names.push_back(Name(t));
  return Join(names, "|");
}

core::Result<Explanation> ExplainTopic(Topic topic, const core::Profile& profile) {
  switch (topic) {
    case Topic::kZero: return TopicZero(profile);
    case Topic::kTp: return TopicTp(profile);
    case Topic::kSp: return TopicSp(profile);
    case Topic::kPp: return TopicPp(profile);
    case Topic::kCp: return TopicCp(profile);
    case Topic::kEp: return TopicEp(profile);
    case Topic::kCollectives: return TopicCollectives(profile);
    case Topic::kPrecision: return TopicPrecision(profile);
    case Topic::kRecompute: return TopicRecompute(profile);
    case Topic::kCheckpoint: return TopicCheckpoint(profile);
    case Topic::kFailures: return TopicFailures(profile);
    case Topic::kGemm: return TopicGemm(profile);
  }
  return Status::InvalidArgument("unknown topic");
}

}  // namespace meshplan::sim
