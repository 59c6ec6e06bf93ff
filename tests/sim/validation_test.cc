// The step model against published runs, in tokens/s per GPU: Narayanan 2021 Table 1 and
// Korthikanti 2022 Table 5 (tests/data/validation/published.json, the tuning set) and the runs
// beyond it (published_beyond_tuning.json: Narayanan Table 2, MegaScale, the Megatron-LM README's
// H100 table, Megatron-Bridge 25.11).
//
// With the built-in defaults the tuning set is at median 9.7%, max 14.5% (too fast on every
// record); with the shipped profile a100-megatron-2022 (fitted to Korthikanti Table 4 only) at
// median 2.9%, max 6.5%. The set beyond it: median 16.3%, p90 30.0%, no run called out of
// memory (13 were before records that leave SP and recomputation unprinted took the cheapest
// settings that fit), ZeRO-3 +24% median (+136% before DeepSpeed 0.3's per-tensor gathers were
// modelled), FP8 +11% (+26% before Transformer Engine's quantization traffic and the BF16 output
// head); docs/validation.md has every run and the mechanism it lacks. These tests pin the
// current levels so that changes can only improve them; tighten them as the model does.
#include "sim/validation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/memory.h"
#include "core/params.h"
#include "core/presets.h"
#include "core/spec_json.h"
#include "core/stack.h"
#include "core/step_graph.h"
#include "core/validate.h"
#include "sim/fit.h"
#include "sim/step_model.h"

namespace meshplan::sim {
namespace {

// Whether any of a run's assumptions says `fragment`.
bool Says(const std::vector<std::string>& assumptions, const std::string& fragment) {
  for (const auto& a : assumptions)
    if (a.find(fragment) != std::string::npos) return true;
  return false;
}

TEST(ValidationTest, PublishedRunsRegressionBound) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(*text, &skipped);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  // Narayanan Table 1 (10 rows), Korthikanti Table 5 (8 rows) and its §6.3 DP=8 run.
  ASSERT_EQ(runs->size(), 19u);
  const ValidationSummary v = ValidateRuns(*runs, core::Profile{});
  // 3.1% median, 6.7% max since compute runs at the slowest GPU's pace (5.0% / 10.0% before).
  for (const auto& r : v.records) EXPECT_LT(std::abs(r.error), 0.07) << r.id;
  EXPECT_LE(v.median_abs_error, 0.035);
  EXPECT_LE(v.max_abs_error, 0.07);
  EXPECT_EQ(v.all.out_of_memory, 0u);
}

TEST(ValidationTest, RecordsMapToTheirPublishedPlans) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok());
  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  for (const auto& r : *runs) {
    if (r.id != "korthikanti2022-t5-175B-seq-selective") continue;
    // Table 3: 175B, TP 8, PP 8, 64 GPUs, GBS 64, MBS 1; §6: interleaving 3, SP + selective.
    const auto& p = r.scenario.plan;
    EXPECT_EQ(p.tp, 8);
    EXPECT_EQ(p.pp, 8);
    EXPECT_EQ(p.dp, 1);
    EXPECT_EQ(p.vpp, 3);
    EXPECT_EQ(p.schedule, core::Schedule::kInterleaved);
    EXPECT_TRUE(p.sequence_parallel);
    EXPECT_EQ(p.recompute, core::Recompute::kSelective);
    // 13.75 s per 64 x 2048-token step on 64 GPUs = 148.95 tokens/s per GPU.
    EXPECT_DOUBLE_EQ(r.published, 64.0 * 2048 / (13.75 * 64));
    EXPECT_EQ(r.printed, "iteration_time_s 13.75");
    EXPECT_EQ(r.stack, "megatron-lm-2022");
    EXPECT_TRUE(p.grad_accum_fusion);
    EXPECT_FALSE(r.scenario.cluster.sharp);  // NCCL's CollNet is off unless enabled
    return;
  }
  FAIL() << "korthikanti2022-t5-175B-seq-selective not loaded";
}

TEST(ValidationTest, UnprintedSettingsComeFromTheAuthorsLaunchScript) {
  // Megatron-LM examples/sc21/run_table_1.sh (presets/launches/megatron-sc21-table1.json): 76B
  // ran MBS 2 with --num-layers-per-virtual-pipeline-stage 5 (60 layers / 4 stages / 5 = 3 chunks)
  // and Megatron's local DDP; 1.7B ran MBS 16 under PyTorch DDP (all-reduce under the backward).
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok());
  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  int seen = 0;
  for (const auto& r : *runs) {
    const auto& p = r.scenario.plan;
    if (r.id == "narayanan2021-t1-76.1B") {
      ++seen;
      EXPECT_EQ(p.micro_batch, 2);
      EXPECT_EQ(p.vpp, 3);
      EXPECT_EQ(p.schedule, core::Schedule::kInterleaved);
      EXPECT_FALSE(p.overlap_grad_reduce);
      EXPECT_FALSE(p.grad_accum_fusion);  // the SC21 container predates the fusion
      EXPECT_TRUE(r.scenario.model.tied_embeddings);
      EXPECT_EQ(p.Microbatches(), 1792 / (2 * 32));
    } else if (r.id == "narayanan2021-t1-1.7B") {
      ++seen;
      EXPECT_EQ(p.micro_batch, 16);
      EXPECT_EQ(p.vpp, 1);
      EXPECT_TRUE(p.overlap_grad_reduce);
      bool cited = false;
      for (const auto& a : r.assumptions) cited |= a.find("run_table_1.sh") != std::string::npos;
      EXPECT_TRUE(cited) << "the assumptions name the launch script";
    }
  }
  EXPECT_EQ(seen, 2);
}

std::vector<core::PublishedRun> BeyondTuning() {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published_beyond_tuning.json");
  EXPECT_TRUE(text.ok());
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(text.ok() ? *text : "[]", &skipped);
  EXPECT_TRUE(runs.ok());
  // 51 records; not mapped: the README's strong-scaling endpoints (no model dimensions) and the
  // MegaScale ablation steps (no single measurement).
  EXPECT_EQ(skipped.size(), 2u);
  return runs.ok() ? *runs : std::vector<core::PublishedRun>{};
}

const core::PublishedRun* Find(const std::vector<core::PublishedRun>& runs, const std::string& id) {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  ADD_FAILURE() << id << " not loaded";
  return nullptr;
}

TEST(ValidationTest, BeyondTuningRecordsAreComparedInTokensPerGpu) {
  const auto runs = BeyondTuning();
  ASSERT_EQ(runs.size(), 49u);
  // TFLOP/s with the source's own count: Narayanan Eq. 3 (tests/core/stack_test.cc: 100.42).
  const auto* z3 = Find(runs, "narayanan2021-t2-zero3-174.6B-384gpu");
  ASSERT_TRUE(z3);
  EXPECT_NEAR(z3->published, 100.42, 0.01);
  EXPECT_EQ(z3->stack, "deepspeed-zero3-2021");
  EXPECT_EQ(z3->scenario.plan.zero, 3);
  EXPECT_EQ(z3->scenario.plan.recompute, core::Recompute::kFull);  // the stack's: Eq. 3 counts it
  // The iteration time MegaScale prints: 768 x 2048 tokens in 40.0 s on 256 GPUs.
  const auto* ms = Find(runs, "megascale-t2-megatron-lm-256gpu");
  ASSERT_TRUE(ms);
  EXPECT_DOUBLE_EQ(ms->published, 768.0 * 2048 / (40.0 * 256));
  EXPECT_EQ(ms->scenario.gpu.name, "a100-80g");  // "NVIDIA Ampere"
  // MFU only (MegaScale Figure 9): 49.2% of 312 TFLOP/s over 72 l h^2 (1 + s/6h + V/12lh) with
  // l 105, h 20480, s 2048, V 64000 = 3.2298e12 FLOPs per token: 47.53 tokens/s per GPU.
  const auto* f9 = Find(runs, "megascale-fig9-megatron-lm-530B-2240gpu");
  ASSERT_TRUE(f9);
  EXPECT_NEAR(
      f9->published,
      0.492 * 312e12 / (72.0 * 105 * 20480.0 * 20480 * (1 + 2048.0 / (6 * 20480) + 64000.0 / (12.0 * 105 * 20480))),
      1e-9);
  // Printed tokens/s (Megatron-Bridge), the named model's preset, FP8, FSDP over the 8 GPUs.
  const auto* b8 = Find(runs, "megatron-bridge-2511-dgx-h100-llama3-8b-8gpu");
  ASSERT_TRUE(b8);
  EXPECT_EQ(b8->published, 14451.0);
  EXPECT_EQ(b8->scenario.model.name, "llama3-8b");
  EXPECT_EQ(b8->scenario.plan.precision, core::Dtype::kFp8);
  EXPECT_EQ(b8->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);  // "FP8-CS"
  EXPECT_EQ(b8->scenario.plan.zero, 3);
  EXPECT_EQ(b8->scenario.plan.dp, 8);  // GPUs / (tp pp cp)
  EXPECT_EQ(b8->scenario.gpu.name, "h100-sxm");
  // The README labels its GPTs by the untied parameter count: "GPT 1.7B" is 1.75B untied (1.48B
  // tied). fp32 gradients, as Megatron-Core keeps them for bf16.
  const auto* r17 = Find(runs, "megatronlm-readme-h100-2024-1.7B");
  ASSERT_TRUE(r17);
  EXPECT_FALSE(r17->scenario.model.tied_embeddings);
  EXPECT_EQ(r17->scenario.plan.dtypes.grads, core::Dtype::kFp32);
  // 126 layers over pp 8 x vpp 8 = 64 chunks: the default uneven split.
  const auto* b405 = Find(runs, "megatron-bridge-2511-dgx-h100-llama3-1-405b-1024gpu");
  ASSERT_TRUE(b405);
  EXPECT_EQ(b405->scenario.plan.stage_layers.size(), 64u);
  EXPECT_EQ(b405->scenario.plan.cp, 2);
}

TEST(ValidationTest, UnprintedMemorySaversAreTheCheapestThatFit) {
  // MegaScale's Megatron-LM baseline (175B, TP 8, PP 8, vpp 6, 128 heads, seq 2048, fp16) does
  // not print SP or recomputation. Per layer and microbatch (Korthikanti 2022 Eq. 2-5, t = 8):
  // no SP, no recompute s b h (10 + 24/t + 5 a s / (h t)) = 2048 x 12288 x 26.3 B = 663 MB; SP
  // s b h (34 + 5 a s / h) / t = 442 MB; SP with selective recomputation 34 s b h / t = 107 MB.
  // Stage 0 of the interleaved schedule holds p (1 + (p-1)/(p v)) = 9.2 microbatches of its 12
  // layers (110 layer-microbatches) next to ~49 GB of model state (2.73B params x 18 B): 122 GB,
  // 98 GB, 61 GB. Only the last fits 80 GiB; it is Korthikanti's recommended configuration, and
  // the measured 53% MFU leaves no room for full recomputation.
  const auto runs = BeyondTuning();
  const auto* ms = Find(runs, "megascale-t2-megatron-lm-256gpu");
  ASSERT_TRUE(ms);
  EXPECT_TRUE(ms->scenario.plan.sequence_parallel);
  EXPECT_EQ(ms->scenario.plan.recompute, core::Recompute::kSelective);
  const bool said = Says(ms->assumptions, "cheapest memory savers that fit");
  EXPECT_TRUE(said);
  const ValidationSummary v = ValidateRuns({*ms}, core::Profile{});
  EXPECT_TRUE(v.records[0].fits);
  // A record that prints its settings keeps them, fitting or not: MegaScale's own rows print SP
  // (on) and the stack's recompute (none) fits.
  const auto* own = Find(runs, "megascale-t2-megascale-256gpu");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->scenario.plan.recompute, core::Recompute::kNone);
  // Qwen3-30B-A3B on 16 H100s (PP 2, EP 8, seq 4096), recipe known: no recomputation whatever the
  // memory model says, and the recipe's VP 12 at micro batch 1 with the EP overlap where the row
  // prints 25.09's VP 24 at micro batch 2 (the launch entry's layout, its notes). The memory below
  // is the printed layout's, as derived. Its release (25.11, Megatron-Core 0.14+) weights
  // the tokens by the router's probabilities inside the fused SwiGLU (moe_probs fused, from the
  // launch file's release defaults), so the last stage is at 68.1 GB on the GPU. Before Megatron-Core
  // 0.13 the weighting at the unpermutation kept each MoE layer's experts' output: 2 B x 8,192 tokens
  // x top-8 x 2,048 = 268.4 MB per layer and microbatch, x 47 layer-microbatches in flight on the
  // last stage (1 + 46 warm-up chunks of one layer: (vpp - 1) x pp = 46) = 12.62 GB, and 5% of it
  // as fragmentation: 81.4 GB. Its loss, Transformer Engine's run in place (te-inplace, 2 B per
  // logit), holds 4.98 GB less than TE 2.18's fp32 gradient (4 B x 8,192 x 151,936).
  const auto* q = Find(runs, "megatron-bridge-2511-dgx-h100-qwen3-30b-a3b-16gpu");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->scenario.plan.cross_entropy, core::CrossEntropy::kTeInplace);
  EXPECT_EQ(q->scenario.plan.recompute, core::Recompute::kNone);
  EXPECT_EQ(q->scenario.plan.moe_probs, core::MoeProbs::kFused);
  EXPECT_TRUE(Says(q->assumptions, "MoE probabilities applied in a fused weighted activation"));
  EXPECT_TRUE(ValidateRuns({*q}, core::Profile{}).records[0].fits);
  EXPECT_EQ(q->scenario.plan.vpp, 12);
  EXPECT_EQ(q->scenario.plan.micro_batch, 1);
  EXPECT_TRUE(q->scenario.plan.ep_overlap);
  EXPECT_TRUE(q->scenario.plan.delay_wgrad);
  EXPECT_TRUE(Says(q->assumptions, "interleave degree 12 where the row prints 24, the layout "));
  EXPECT_TRUE(Says(q->assumptions, "micro batch 1 where the row prints 2, the layout "));
  const auto mem = [&](const core::PlanSpec& p) {
    return core::EstimateMemory(q->scenario.model, p, q->scenario.gpu, core::MemoryOverheads{});
  };
  core::PlanSpec printed = q->scenario.plan;
  printed.vpp = 24;
  printed.micro_batch = 2;
  core::PlanSpec unpermute = printed;
  unpermute.moe_probs = core::MoeProbs::kUnpermute;
  const core::MemoryReport fused_mem = mem(printed), unpermute_mem = mem(unpermute);
  EXPECT_NEAR(static_cast<double>(fused_mem.stages[1].activations_bytes), 31.98e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(unpermute_mem.stages[1].activations_bytes - fused_mem.stages[1].activations_bytes),
              47.0 * 2 * 8192 * 8 * 2048, 1e6);
  core::PlanSpec fp32_grad = printed;
  fp32_grad.cross_entropy = core::CrossEntropy::kTe;
  EXPECT_NEAR(static_cast<double>(mem(fp32_grad).stages[1].activations_bytes - fused_mem.stages[1].activations_bytes),
              4.0 * 8192 * 151936, 0.01e9);
}

TEST(ValidationTest, ZeroThreeThroughputFallsWithScaleAsNarayananTable2Measured) {
  // Table 2 at a fixed global batch: tokens/s per GPU of 175B under DeepSpeed ZeRO-3 fall from
  // 100.4 (384 GPUs) to 61.4 (768) and 30.7 (1536), because every GPU still gathers and reduces
  // all 3 psi per step, one list collective per parameter tensor with one copy kernel per rank,
  // while its compute halves. Flat, prefetched gathers would keep the prediction flat
  // (155.9/153.9/149.9 before the mechanism).
  const auto runs = BeyondTuning();
  std::vector<core::PublishedRun> z3;
  for (const char* id : {"narayanan2021-t2-zero3-174.6B-384gpu", "narayanan2021-t2-zero3-174.6B-768gpu",
                         "narayanan2021-t2-zero3-174.6B-1536gpu"})
    if (const auto* r = Find(runs, id)) z3.push_back(*r);
  ASSERT_EQ(z3.size(), 3u);
  const ValidationSummary v = ValidateRuns(z3, core::Profile{});
  ASSERT_EQ(v.records.size(), 3u);
  EXPECT_GT(v.records[0].predicted, 1.4 * v.records[1].predicted);
  EXPECT_GT(v.records[1].predicted, 1.8 * v.records[2].predicted);
  for (const auto& r : v.records) EXPECT_LT(std::abs(r.error), 0.25) << r.id;  // today +14%, +24%, +16%
  // The same plan with flat gathers stays near the compute-bound rate.
  core::PublishedRun flat = z3[2];
  flat.scenario.plan.zero3_gather = core::Zero3Gather::kFlat;
  EXPECT_GT(ValidateRuns({flat}, core::Profile{}).records[0].predicted, 3 * v.records[2].predicted);
}

TEST(ValidationTest, MegatronRunsTakeTheCrossEntropyTheirCodeRan) {
  // Megatron-Bridge turns cross_entropy_loss_fusion on in its GPT and hybrid providers; 25.09
  // (v0.1.0rc3) leaves Megatron-Core's default impl, native; from 25.11 the performance scripts set
  // cross_entropy_fusion_impl = "te" (presets/launches/megatron-bridge-performance.json,
  // release_defaults), whose kernels write the gradient over the logits in every TE those releases
  // pin (2.9.0 to 2.17.1; TE #3193 keeps an fp32 gradient from 2.18): te-inplace. Megatron-LM's pretrain_gpt runs
  // without the flag: the eager vocab_parallel_cross_entropy (fused, the stack's). Every Bridge performance run keeps
  // its gradients in bf16 (grad_reduce_in_fp32 = False in all 245 traced configurations), also the rows whose printed
  // layout matches no traced variant (release_defaults).
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/nemo_performance_summaries.json");
  ASSERT_TRUE(text.ok());
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(*text, &skipped);
  ASSERT_TRUE(runs.ok());
  int native = 0, te = 0;
  for (const auto& r : *runs) {
    if (r.id.rfind("megatron-bridge-", 0) != 0) continue;
    const bool r2509 = r.id.rfind("megatron-bridge-2509-", 0) == 0;
    EXPECT_EQ(r.scenario.plan.cross_entropy, r2509 ? core::CrossEntropy::kNative : core::CrossEntropy::kTeInplace)
        << r.id;
    EXPECT_EQ(r.scenario.plan.dtypes.grads, core::Dtype::kBf16) << r.id;
    // 25.09's recipes leave average_in_collective at Megatron-Core's False; 25.11 on set it.
    EXPECT_EQ(r.scenario.plan.grad_prescale, r2509) << r.id;
    (r2509 ? native : te) += 1;
  }
  EXPECT_GT(native, 10);
  EXPECT_GT(te, 150);
  auto beyond = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published_beyond_tuning.json");
  ASSERT_TRUE(beyond.ok());
  auto shared = core::LoadPublishedRuns(*beyond, &skipped);
  ASSERT_TRUE(shared.ok());
  for (const auto& r : *shared) {
    if (r.id.rfind("megatronlm-readme-", 0) == 0) {
      EXPECT_EQ(r.scenario.plan.cross_entropy, core::CrossEntropy::kFused) << r.id;
      EXPECT_TRUE(r.scenario.plan.grad_prescale) << r.id;  // --ddp-average-in-collective is off by default
    }
    if (r.id.rfind("megatron-bridge-2511-", 0) == 0)
      EXPECT_EQ(r.scenario.plan.cross_entropy, core::CrossEntropy::kTeInplace) << r.id;
  }
}

TEST(ValidationTest, MoeRunsKeepTheHostFloorUnlessTheirRecipeGraphsTheLayers) {
  // The MoE layer's host floor (core/specs.h MoeHost, docs/compute.md) stays unless the recipe
  // captures whole layers or the whole iteration in CUDA graphs (presets/launches/
  // megatron-bridge-performance.json cuda_graph: full_iteration, local); the "(tokendrop)" runs pad
  // each expert's input to capacity factor 1.0 (apply_moe_token_drop's defaults) and need no host
  // synchronisation. Qwen3-30B-A3B on 8 B200s at one sequence a microbatch (25.11, router and
  // preprocessing graphed only) waits for the host: +211.0% -> +97.3% (docs/validation.md).
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/nemo_performance_summaries.json");
  ASSERT_TRUE(text.ok());
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(*text, &skipped);
  ASSERT_TRUE(runs.ok());
  int graphed = 0, dropping = 0, floored = 0;
  for (const auto& r : *runs) {
    const core::PlanSpec& p = r.scenario.plan;
    if (!r.scenario.model.moe) continue;
    const bool tokendrop = r.id.find("tokendrop") != std::string::npos;
    if (tokendrop) {
      EXPECT_EQ(r.scenario.model.moe->capacity_factor, 1.0) << r.id;
      EXPECT_EQ(sim::MoeLayerHostFloor(r.scenario.model, p), 0.0) << r.id;
      ++dropping;
    }
    if (p.moe_host == core::MoeHost::kNone) {
      ++graphed;
      continue;
    }
    if (!tokendrop && r.id.rfind("megatron-bridge-", 0) == 0) ++floored;
    if (r.id == "megatron-bridge-2511-dgx-b200-qwen3-30b-a3b-8gpu-fp8-mx") {
      // Transformer Engine's GroupedLinear issues each of the 128 / 8 = 16 local experts' GEMMs as a
      // cuBLASLt call of its own, 10 us of host time each (sim::kTeGroupedGemmHostPerGemmS): 2 an
      // expert forward, 4 backward, 16 x 6 x 10 us = 0.96 ms beside the router's, dispatcher's and
      // synchronisation's 5.041.
      EXPECT_TRUE(p.transformer_engine && p.moe_grouped_gemm);
      EXPECT_DOUBLE_EQ(
          sim::MoeLayerHostFloor(r.scenario.model, p),
          sim::kMoeHostForwardBaseS + sim::kMoeHostBackwardBaseS + 16 * 6 * sim::kTeGroupedGemmHostPerGemmS);
      const sim::StepEstimate e =
          sim::EstimateStep(r.scenario.model, p, r.scenario.gpu, r.scenario.cluster, core::Profile{});
      // 9.58 s of a 19.96 s step: its layers' kernels after the dispatcher's synchronisation take
      // about a third of the 2.976 ms forward host time, its backward about three fifths of 3.025
      // (10.19 s of the same 19.96 before the experts' FP8 padding copies, 2026-12-07: more GPU work
      // beside the same host time, the step still the host's; 10.76 s of 19.99 before each local expert's MXFP8
      // quantization was a kernel of its own, 2026-12-07, Transformer Engine's split_quantize: more GPU work beside the
      // same host time; 7.81 s of 17.04 before the expert GEMMs' host time, 2026-12-06: the row +65.4% -> +41.0%; 7.97
      // s before its expert GEMMs of 2,048 rows, some under 4 us in FP8 on a B200, took the per-kernel time).
      // 0.4798 before the B200's short-reduction cost (2026-12-07: its expert GEMMs reduce over 2,048
      // and 768, K0 274 in FP8, so more GPU work beside the same host time).
      EXPECT_NEAR(e.breakdown.host_s / e.time_s, 0.4724, 0.005) << r.id;
    }
  }
  // The corpus's mapped MoE runs: 8 token-drop runs, 28 whose recipes graph whole layers or the
  // iteration (4 of them token-drop runs), 131 other Megatron-Bridge runs that keep the floor.
  EXPECT_EQ(dropping, 8);
  EXPECT_EQ(graphed, 28);
  EXPECT_EQ(floored, 131);
}

TEST(ValidationTest, TorchtitanH100RunsMapToTheirTables) {
  // torchtitan benchmarks/llama3_h100_202412_torchtitan.md (@31a17bfdb7), Tables 1-6: 18 runs of
  // Llama 3.1 8B/70B/405B on 96GB H100s at 500 W, printed as TPS/GPU.
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/torchtitan_h100_2412.json");
  ASSERT_TRUE(text.ok());
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(*text, &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(skipped.empty()) << skipped.front();
  ASSERT_EQ(runs->size(), 18u);
  for (const auto& r : *runs) {
    EXPECT_EQ(r.stack, "torchtitan-2024") << r.id;
    EXPECT_EQ(r.scenario.gpu.name, "h100-96g-hbm2e");
    EXPECT_EQ(r.scenario.plan.zero3_gather, core::Zero3Gather::kFsdp2);             // FSDP2's copies
    EXPECT_EQ(r.scenario.plan.cross_entropy, core::CrossEntropy::kUpcast) << r.id;  // train.py loss_fn
    // Eager norms, RoPE and SwiGLU, unless the run was compiled (measured.other.torch_compile):
    // only the two 8B FSDP rows without compile ran eager.
    const bool eager = r.id == "torchtitan-2412-t1-8b-8gpu-fsdp" || r.id == "torchtitan-2412-t3-8b-128gpu-fsdp";
    EXPECT_EQ(r.scenario.plan.elementwise, eager ? core::Elementwise::kEager : core::Elementwise::kFused) << r.id;
    // "selective (torchtitan per-op SAC)": the per-op policy, not Megatron's attention core.
    if (r.scenario.plan.recompute == core::Recompute::kSelective)
      EXPECT_EQ(r.scenario.plan.recompute_modules, core::ModuleBit(core::RecomputeModule::kTorchtitanOp)) << r.id;
    if (r.scenario.plan.pp == 1) {
      EXPECT_EQ(r.scenario.plan.zero, 3) << r.id;  // FSDP2
      continue;
    }
    // FSDP2 under PP (the 405B 3D and 4D runs): torchtitan does not reshard after forward and
    // PyTorch's pipeline stage defers the gradient reduce-scatter to the last microbatch, the
    // unsharded gradients accumulating in fp32: ZeRO-1's memory and traffic, said.
    EXPECT_EQ(r.scenario.plan.zero, 1) << r.id;
    EXPECT_EQ(r.scenario.plan.dtypes.grads, core::Dtype::kFp32) << r.id;
    EXPECT_FALSE(r.scenario.plan.overlap_grad_reduce) << r.id;
    const bool said = Says(r.assumptions, "ZeRO-3 under pipeline parallelism keeps");
    EXPECT_TRUE(said) << r.id;
  }
  const auto* cp8 = Find(*runs, "torchtitan-2412-t2-8b-8gpu-fsdp1-cp8-seq256k");
  ASSERT_TRUE(cp8);
  EXPECT_EQ(cp8->scenario.plan.cp, 8);
  EXPECT_EQ(cp8->scenario.plan.dp, 1);
  EXPECT_EQ(cp8->scenario.plan.seq_len, 262144);
  EXPECT_EQ(cp8->published, 548.0);
  EXPECT_EQ(cp8->scenario.model.name, "llama3-8b");  // "Llama 3.1 8B"
  const auto* il = Find(*runs, "torchtitan-2412-t5-405b-512gpu-3d-interleaved1f1b");
  ASSERT_TRUE(il);
  EXPECT_EQ(il->scenario.plan.vpp, 2);                               // torchtitan's default for multi-stage schedules
  EXPECT_EQ(il->scenario.plan.tp_overlap, core::TpOverlap::kAsync);  // AsyncTP
  EXPECT_EQ(il->scenario.plan.precision, core::Dtype::kFp8);
  EXPECT_EQ(il->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);  // float8 tensorwise
  // 126 layers over 16 chunks, as torchtitan's generate_split_points makes them: 7, 8 x 14, 7.
  ASSERT_EQ(il->scenario.plan.stage_layers.size(), 16u);
  EXPECT_EQ(il->scenario.plan.stage_layers.front(), 7);
  EXPECT_EQ(il->scenario.plan.stage_layers[1], 8);
  EXPECT_EQ(il->scenario.plan.stage_layers.back(), 7);
  // Today's level: far too fast (median +66%, long-context CP up to +160%; docs/validation.md).
  const ValidationSummary v = ValidateRuns(*runs, core::Profile{});
  EXPECT_LE(v.all.median_abs_error, 0.67);
  EXPECT_LE(v.all.max_abs_error, 1.61);
  EXPECT_LE(v.all.out_of_memory, 3u);
}

TEST(ValidationTest, BeyondTuningRegressionBound) {
  // Today's level with the built-in defaults (not yet the targets: median <= 5%, p90 <= 10%,
  // max <= 25%, every group's median <= 8%, no run that ran called out of memory).
  const ValidationSummary v = ValidateRuns(BeyondTuning(), core::Profile{});
  ASSERT_EQ(v.all.n, 49u);
  // The median rose from 17.4% to 19.0% when the 11 MegaScale baseline rows, called out of
  // memory before, took the memory savers that fit them (SP and selective recomputation: less
  // work per GPU than the plan that did not fit); p90 34.0% -> 31.8%, max 137% -> 81%. With the
  // H100's sustained GEMM efficiency (GPU presets' MSMF, 0.716 bf16 and 0.651 fp8 instead of the
  // flat 0.80 and 0.70): median 16.3%, p90 30.3%, max 77.6%, H100 median 20.4% -> 13.1%. With
  // GEMM wave quantization and the full node's slowest GPU (docs/compute.md): 10.2%, 26.1%, 73.9%;
  // with the H100's own burst measurement 10.2%, 23.9%, 71.5% (H100 rows 7.9% -> 3.9%). With
  // ZeRO-1/2's parameter all-gather under the next step's first forward, no longer under the
  // backward beside the gradient reduction (Megatron-Core --overlap-param-gather; two windows
  // hide more than one): 10.5%, 24.9%, 71.5%, the 32B README row -22.1% -> -17.7%, the smaller
  // H100 rows, already too fast, 1-7 points faster (docs/validation.md). With all-gathers and
  // reduce-scatters on NCCL's ring (not the hierarchical composition NCCL does not run): 9.8%,
  // 24.9%, 71.5%; ZeRO-3 175B at 1,536 GPUs +15.0% -> -6.7%, 529.6B at 2,240 +46.8% -> +31.8%.
  // With compute at the pace of the slowest of the plan's GPUs (sim::SlowestGpuPace; the Hopper
  // presets a typical busy GPU's, not the slowest of a node's): 5.9%, 22.6%, 70.3% (signed median
  // +9.2% -> +4.9%; A100 10.9% -> 6.9%, MegaScale 10.5% -> 5.9%, ZeRO-3 16.1% -> 12.6%). With
  // hidden collectives slowing the compute beside them (sim::OverlapSlowdown: NCCL's 18.9%, Lee
  // et al. 2025; Transformer Engine userbuffers' 16 or 1 SMs): 6.4%, 19.6%, 70.2% (mean 10.2% ->
  // 9.7%; the Megatron README H100 rows, whose TP collectives all overlap, 1-5 points slower, so
  // the H100 median 5.0% -> 6.4% while MegaScale 5.9% -> 4.4%, FP8 14.1% -> 11.4%). With DeepSpeed
  // 0.3's zero fill before each gather and gradient pre-division: 6.4%, 19.5%, 70.2% (ZeRO-3 11.2%
  // -> 10.3%). With its reduce-scatters exposed (the next sub-module's fetch calls
  // torch.cuda.synchronize(), and the group's collectives share one NCCL stream): 5.0%, 17.3%,
  // 70.2%; the ZeRO-3 rows +7.4/+9.1/-10.3/+23.6/+23.6/+25.6% -> +3.6/+2.4/-14.7/+19.5/+16.6/
  // +16.5% (mean 16.6% -> 12.2%), the ZeRO-3 group's median 10.3% -> 14.7%: its middle row is
  // now the 1,536-GPU one, slower than measured (every gather counted exposed, an upper bound).
  // With the cross entropy costed as each stack's code runs it (Megatron-LM's eager
  // vocab_parallel_cross_entropy 52 B per logit, Megatron-Bridge's Transformer Engine kernels 22 B,
  // both 36 B before) and the embedding's dense weight gradient (its zero fill and its add into
  // the main gradient): 5.1%, 16.8%, 72.7%; the Megatron README 1.7B and 7.1B rows +23.8/+17.2% ->
  // +17.9/+15.2%, the Bridge 25.11 MoE rows, too fast already, 1-3 points faster (Qwen3-30B-A3B
  // +70.2% -> +72.7%, the H100 group's median 6.4% -> 7.1%, MoE 17.6% -> 19.0%). With the DP
  // gradients divided before their reduction where Megatron-Core's DDP does it (PlanSpec::
  // grad_prescale): 5.2%, 16.5%, 72.8% (README 1.7B/7.1B +17.9/+15.2% -> +16.2/+13.4%, the large
  // README rows, too slow already, 0.1-1 point slower: 32B -18.7% -> -19.7%). With Megatron-
  // Bridge's Transformer Engine loss as its pinned TE runs it, in place (te-inplace: 10 B per logit
  // moved, 2 B held, against 22 and 6): 4.9%, 16.5%, 131.7%; Llama 3 8B/70B -4.1/-5.6% ->
  // -3.3/-4.9%, gpt-oss-120b +7.7% -> +10.2%, Qwen3-235B-A22B +19.0% -> +20.3%, and Qwen3-30B-A3B
  // +72.8% -> +131.7%: with 5 GB fewer at the loss it fits without recomputation (its recipe
  // recomputes only layernorm and moe_act), and full recomputation had been hiding most of the
  // per-microbatch host floor it lacks (docs/validation.md). With the interleaved schedule the
  // Megatron-LM README's PP > 1 rows ran (one layer a virtual stage: presets/launches/megatron-lm-
  // readme-2024.json; they were costed as 1F1B, whose 12-23% bubble had been hiding a per-microbatch
  // time 10-15% short, docs/validation.md): 5.2%, 16.5%, 131.6%; 70B -3.6% -> -0.1%, 119B +0.7% ->
  // +10.1%, 177B -0.5% -> +11.2%, 314B -7.3% -> +5.2%, 462B -5.3% -> +8.0%. With Megatron-Bridge
  // 25.11's H100 GPT-OSS 120B row read as its recipe ran (micro batch 1 and layernorm/moe_act
  // recomputed, the launch entry's layout: the row prints the B200 row's micro batch 4 and GA 2,
  // which its own PP 4 contradicts and which needs 107 GB of an 85 GB H100 under that recipe):
  // 6.4%, 16.5%, 104.5%; that row +2.2% -> +40.6% (it was right for the wrong reason, full
  // recomputation assumed so the printed layout would fit), beside its release siblings at +40%
  // to +44% (docs/validation.md).
  EXPECT_LE(v.all.median_abs_error, 0.065);
  EXPECT_LE(v.all.p90_abs_error, 0.166);
  EXPECT_LE(v.all.max_abs_error, 1.32);
  EXPECT_EQ(v.all.out_of_memory, 0u);
  for (const auto& g : v.groups) {
    if (g.dimension == "stack" && g.value == "megatron-lm-2021") EXPECT_LE(g.summary.median_abs_error, 0.03);
    if (g.dimension == "sharding" && g.value == "zero-3") {
      EXPECT_LE(g.summary.median_abs_error, 0.148);
      EXPECT_EQ(g.summary.out_of_memory, 0u);
    }
    // Scale above 1,024 GPUs: 7.4% -> 10.5% with the README's 119B, 177B, 314B and 462B rows
    // interleaved as they ran (above), each now too fast by what its 1F1B bubble had hidden.
    if (g.dimension == "scale" && g.value == ">1024") EXPECT_LE(g.summary.median_abs_error, 0.106);
    // FP8 (5 runs): Llama 3 8B/70B +4%, 405B +23%, Qwen3-30B-A3B +76%, Qwen3-235B-A22B +20%
    // (-11% before its recipe's batch-level EP all-to-all overlap was modelled: hidden in full, an
    // upper bound, it was too slow with the overlap missing and is too fast with it whole). Its
    // median row, Llama 3.1 405B on 1,024 H100s (25.11), +12.0% -> +13.1% since its recipe's FP8
    // parameter gather (bf16_with_fp8_current_scaling_mixed sets fp8_param_gather at v0.2.0): the
    // bound moves with a sourced mechanism, the row being too fast for what docs/validation.md says.
    if (g.dimension == "precision" && g.value == "fp8") EXPECT_LE(g.summary.median_abs_error, 0.132);
    // H100 (15 runs): its median row, the Megatron-LM README's 314B, -7.33% (within -7.3% before)
    // since Megatron's DDP zeroes its whole gradient buffer each step under ZeRO-1, not the
    // optimizer's shard (param_and_grad_buffer.py reset() at core_v0.14.0): too slow already, as
    // the 32B row (-19.7% -> -20.1%); the 1.7B and 7.1B rows, too fast, +15.0/+12.1% -> +14.3/+11.3%.
    // Since the README's PP > 1 rows run the interleaved schedule they ran (above): 5.3% -> 10.1%,
    // its median row the 119B (+10.1%), 10 of the 15 rows too fast; 10.2% since the 25.11 GPT-OSS
    // 120B row runs its recipe's micro batch (above).
    if (g.dimension == "gpu" && g.value == "h100-sxm") EXPECT_LE(g.summary.median_abs_error, 0.103);
    // MoE: its median row, Qwen3-235B-A22B at TP 2 in FP8, +20.3% -> +20.5% since Transformer
    // Engine's sequence-parallel all-gathers carry the quantized inputs (1 B, not 2): too fast
    // already, its hidden TP collectives slow the compute beside them a little less; +20.6% since
    // recipes without userbuffers keep the backward's asynchronous TP collectives (tp_overlap
    // backward, Transformer Engine linear.py at v2.9), which also slow the compute beside them.
    // Since the 25.11 GPT-OSS 120B row runs its recipe's micro batch 1 (above), the three rows are
    // +14.9%, +40.6% and +104.5%: the median is that row.
    if (g.dimension == "model" && g.value == "moe") EXPECT_LE(g.summary.median_abs_error, 0.406);
  }
}

// The whole corpus of tests/data/validation (at least 150 runs with provenance).
// A file of tests/data/memory, read and mapped as `validate --memory` does.
core::Result<std::vector<core::PublishedMemory>> MemoryCorpus(const char* file, std::vector<std::string>* skipped) {
  auto text = core::ReadTextFile(std::string(MESHPLAN_TEST_DATA_DIR "/memory/") + file);
  if (!text.ok()) return text.status();
  return core::LoadPublishedMemory(*text, skipped);
}

std::vector<core::PublishedRun> Corpus(const char* file, size_t* skipped_count = nullptr,
                                       std::vector<std::string>* skipped_out = nullptr) {
  auto text = core::ReadTextFile(std::string(MESHPLAN_TEST_DATA_DIR "/validation/") + file);
  EXPECT_TRUE(text.ok()) << file;
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(text.ok() ? *text : "[]", &skipped);
  EXPECT_TRUE(runs.ok()) << file;
  if (skipped_count) *skipped_count = skipped.size();
  if (skipped_out) *skipped_out = skipped;
  if (!runs.ok()) return {};
  std::vector<core::PublishedRun> out = *runs;
  for (auto& r : out) r.dataset = file;
  return out;
}

TEST(ValidationTest, Nvfp4RunsMapButNemotron3SupersModuleRecipeIsSaid) {
  // Megatron-Bridge's NVFP4 runs: Llama 3 70B and 3.1 405B run every linear layer in NVFP4
  // (bf16_with_nvfp4_mixed) and map to plan.precision nvfp4; Nemotron 3 Super's NVFP4 recipe keeps
  // its last 14 layers in BF16 (nemotron_3_llm_pretrain.py:48-50 at v0.4.0; plan.bf16_layers_at_end
  // says that much) and sets a quantization file by module (te_quant.cfg: attention and latent
  // projections and MTP in BF16, the Mamba out_proj in MXFP8), which one precision for a layer's
  // linears cannot say: skipped, with the reason.
  std::vector<std::string> skipped;
  const auto runs = Corpus("nemo_performance_summaries.json", nullptr, &skipped);
  int mapped = 0;
  for (const auto& r : runs)
    if (r.id.find("-nvfp4") != std::string::npos) {
      ++mapped;
      EXPECT_EQ(r.scenario.plan.precision, core::Dtype::kNvfp4) << r.id;
      EXPECT_TRUE(r.scenario.plan.transformer_engine) << r.id;
      EXPECT_EQ(r.id.find("nemotron-3-super"), std::string::npos) << r.id;
    }
  EXPECT_EQ(mapped, 18);
  int super = 0;
  for (const auto& s : skipped)
    if (s.find("nemotron-3-super") != std::string::npos && s.find("nvfp4") != std::string::npos) {
      ++super;
      EXPECT_NE(s.find("te_quant.cfg"), std::string::npos) << s;
    }
  EXPECT_EQ(super, 15);
}

TEST(ValidationTest, DeepSpeedsCheckpointsInHostMemoryAreCostedWhereARunKeptThem) {
  // DeepSpeed's 2022 Azure runs (papers_at_scale.json) keep their activation checkpoints in host
  // memory ("the activation and optimizer states are allocated in the main memory", parallel.offload
  // activations): plan.offload_checkpoints with full recomputation, said among the assumptions.
  // GPT 2T at 8 x 1,024 tokens a GPU: 160 layers x 8 x 1,024 x 32,768 x 2 B = 87.96 GB of
  // checkpoints a microbatch, more than an A100 holds, leave the GPU, and the run fits.
  const auto papers = Corpus("papers_at_scale.json");
  int seen = 0;
  for (const char* id :
       {"deepspeed-azure-2022-175b-256gpu", "deepspeed-azure-2022-1t-1024gpu", "deepspeed-azure-2022-2t-1024gpu"}) {
    const auto* r = Find(papers, id);
    ASSERT_TRUE(r) << id;
    ++seen;
    EXPECT_TRUE(r->scenario.plan.offload_checkpoints) << id;
    EXPECT_EQ(r->scenario.plan.recompute, core::Recompute::kFull) << id;
    EXPECT_EQ(r->scenario.plan.offload_optimizer, core::OffloadTarget::kCpu) << id;
    bool said = false;
    for (const auto& a : r->assumptions) said |= a.find("DeepSpeed's cpu_checkpointing") != std::string::npos;
    EXPECT_TRUE(said) << id;
  }
  EXPECT_EQ(seen, 3);
  const auto* t2 = Find(papers, "deepspeed-azure-2022-2t-1024gpu");
  const core::MemoryReport mem =
      core::EstimateMemory(t2->scenario.model, t2->scenario.plan, t2->scenario.gpu, core::MemoryOverheads{});
  EXPECT_EQ(mem.stages[0].offloaded_checkpoints_bytes, int64_t{160} * 8 * 1024 * 32768 * 2);
  EXPECT_TRUE(mem.fits);
  core::PlanSpec kept = t2->scenario.plan;
  kept.offload_checkpoints = false;
  EXPECT_FALSE(core::EstimateMemory(t2->scenario.model, kept, t2->scenario.gpu, core::MemoryOverheads{}).fits);
}

TEST(ValidationTest, ARecordWithoutAGlobalBatchIsSkippedSayingSo) {
  // OPT-175B (Zhang et al. 2022 §2.4, papers_at_scale.json) prints its batch only as "2M" tokens in
  // its notes: no global_batch, no global_batch_tokens. Skipped with that reason, not as an invalid
  // plan.
  std::vector<std::string> skipped;
  Corpus("papers_at_scale.json", nullptr, &skipped);
  int seen = 0;
  for (const auto& s : skipped)
    if (s.find("opt-2022-175b-992gpu") != std::string::npos) {
      ++seen;
      EXPECT_NE(s.find("no global batch: neither global_batch (sequences) nor global_batch_tokens is printed"),
                std::string::npos)
          << s;
    }
  EXPECT_EQ(seen, 1);
}

TEST(ValidationTest, ModelNamesReachTheirPresetsUnlessThePrintedArchitectureDiffers) {
  // A record that names its model without dimensions is costed as the preset of that name (Llama
  // 3.3 70B keeps Llama 3's shapes). A record that prints dimensions agreeing with a preset in
  // layers and hidden size is that preset, unless what else it prints contradicts it: then it is
  // built from what it prints, said (dgxc-benchmarking's Grok-1 proxy: a 128,256-word vocabulary
  // where xAI's Grok-1 has 131,072; a padded vocabulary, 51,200 for GPT-3's 50,257, agrees).
  auto rec = [](const std::string& model, int ep) {
    return R"([{"id": "x-7", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB", "count": 64},
      "model": )" +
           model + R"(, "parallel": {"tp": 8, "pp": 1, "dp": 8, "ep": )" + std::to_string(ep) +
           R"(}, "microbatch": 1, "global_batch": 64, "precision": "bf16",
      "measured": {"tokens_per_s_per_gpu": 1000}}])";
  };
  struct Case {
    const char* model;
    const char* preset;  // the model the run is costed as
    int ep = 1;          // expert parallelism for the MoE models
  };
  const Case cases[] = {
      {R"({"name": "Llama 3.3 70B", "seq_len": 8192})", "llama3-70b"},
      {R"({"name": "Qwen3-32B", "seq_len": 4096})", "qwen3-32b"},
      {R"({"name": "Qwen3 8B", "seq_len": 4096})", "qwen3-8b"},
      {R"({"name": "Qwen2.5-72B", "seq_len": 4096})", "qwen2.5-72b"},
      {R"({"name": "Mistral 7B", "seq_len": 4096})", "mistral-7b"},
      {R"({"name": "gpt-oss-20b", "seq_len": 4096})", "gpt-oss-20b", 8},
      {R"({"name": "Llama-4-Scout", "seq_len": 8192})", "llama4-scout", 8},
      {R"({"name": "Grok-1 314B", "layers": 64, "hidden": 6144, "heads": 48, "seq_len": 8192, "vocab": 131072})",
       "grok-1", 8},
      {R"({"name": "Grok-1 314B", "layers": 64, "hidden": 6144, "heads": 48, "seq_len": 8192, "vocab": 128256,
          "ffn_hidden": 32768, "moe_experts": 8, "moe_topk": 2, "moe_ffn_hidden": 32768})",
       "Grok-1 314B", 8},
      {R"({"name": "GPT-3 175B", "layers": 96, "hidden": 12288, "heads": 96, "seq_len": 2048, "vocab": 51200})",
       "gpt3-175b"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(c.model, c.ep), &skipped);
    ASSERT_TRUE(runs.ok()) << c.model;
    ASSERT_EQ(runs->size(), 1u) << c.model << ": " << (skipped.empty() ? "" : skipped.front());
    EXPECT_EQ(runs->front().scenario.model.name, c.preset) << c.model;
    if (std::string(c.preset) == "Grok-1 314B") {
      bool said = false;
      for (const auto& a : runs->front().assumptions)
        said = said || a.find("not preset grok-1, whose vocab 128256 (the preset's 131072)") != std::string::npos;
      EXPECT_TRUE(said) << c.model;
    }
  }
}

TEST(ValidationTest, RecipesWithoutTpCommOverlapKeepOnlyTheBackwardsAsyncTpCollectives) {
  // presets/launches/megatron-bridge-performance.json tp_comm_overlap: the recipe's
  // CommOverlapConfig after Megatron-Bridge's runtime rule. Nemotron 3 Super on 64 GB200s (TP 2,
  // 26.04) runs without Transformer Engine's userbuffers: its forward's sequence-parallel
  // collectives sit between the GEMMs, and its backward keeps the asynchronous input all-gather and
  // input-gradient reduce-scatter every Transformer Engine linear layer issues (linear.py and
  // layernorm_linear.py at v2.9, async_op=True): tp_overlap backward. Llama 3 70B on 64 GB200s with
  // MXFP8 (TP 2, 26.04), whose recipe keeps the overlap, keeps the stack's full overlap.
  const auto runs = Corpus("nemo_performance_summaries.json");
  const core::PublishedRun* off = Find(runs, "megatron-bridge-2604-dgx-gb200-nemotron-3-super-64gpu-mxfp8");
  const core::PublishedRun* on = Find(runs, "megatron-bridge-2604-dgx-gb200-llama3-70b-64gpu-mxfp8");
  ASSERT_NE(off, nullptr);
  ASSERT_NE(on, nullptr);
  EXPECT_EQ(off->scenario.plan.tp, 2);
  EXPECT_EQ(off->scenario.plan.tp_overlap, core::TpOverlap::kBackward);
  EXPECT_TRUE(Says(off->assumptions, "tp_comm_overlap false")) << off->id;
  EXPECT_EQ(on->scenario.plan.tp, 2);
  EXPECT_EQ(on->scenario.plan.tp_overlap, core::TpOverlap::kFull);
}

TEST(ValidationTest, ARunThatPassedTpCommOverlapToAStackThatLeavesItOffGetsTheFullOverlap) {
  // presets/launches/megatron-moe-modelzoo.json tp_comm_overlap: NVIDIA's Megatron-MoE-ModelZoo
  // harness passes --tp-comm-overlap to its BF16 runs (sbatch_benchmarking.sh at e8650517d6),
  // which the stack megatron-lm-2026 leaves off (tp_overlap backward). Megatron-LM then opens
  // Transformer Engine's userbuffers with their defaults (initialize.py at d98e8a64): the H100 row
  // at TP 4 takes tp_overlap full. The GB200 row at TP 1, with no TP group to overlap (the launch
  // file records the flag false there), keeps the stack's setting.
  const auto runs = Corpus("megatron_moe_modelzoo.json");
  const core::PublishedRun* on = Find(runs, "megatron-moe-modelzoo-qwen3-235b-a22b-h100-256gpu-deepep-tp4-ep8");
  const core::PublishedRun* tp1 = Find(runs, "megatron-moe-modelzoo-qwen3-235b-a22b-gb200-256gpu-bf16");
  ASSERT_NE(on, nullptr);
  ASSERT_NE(tp1, nullptr);
  EXPECT_EQ(on->scenario.plan.tp, 4);
  EXPECT_TRUE(on->scenario.plan.sequence_parallel);
  EXPECT_EQ(on->scenario.plan.tp_overlap, core::TpOverlap::kFull);
  EXPECT_TRUE(Says(on->assumptions, "tp_comm_overlap true")) << on->id;
  EXPECT_EQ(tp1->scenario.plan.tp, 1);
  EXPECT_EQ(tp1->scenario.plan.tp_overlap, core::TpOverlap::kBackward);
}

TEST(ValidationTest, RunsWhoseRoutingPadsTheExpertsTokensSkipTheExpertsPaddingCopies) {
  // Under FP8 Megatron-Core's quantized grouped experts pad each expert's rows to 16 unless the
  // tokens arrive padded (core/specs.h moe_router_padding): HybridEP's dispatch pads them
  // (token_dispatcher.py _HybridEPManager pad_multiple), and Megatron-LM's MoE recipes set
  // moe_router_padding_for_quantization (presets/launches/megatron-lm-moe-recipes.json, from each
  // YAML's ARGS). Megatron-Bridge 26.02's H100 Qwen3-235B-A22B recipe runs the all-to-all
  // dispatcher without router padding: the experts pad, and nothing is said. A 16-bit run pads
  // nothing either way; its recipe's setting is kept, unsaid, so that its FP8 twin differs from it
  // in the precision alone (validate --pairs).
  struct Case {
    const char *file, *id;
    bool padded;
    const char* said;  // null: no padding assumption
  };
  for (const Case& c : {
           Case{"nemo_performance_summaries.json", "megatron-bridge-2608-dgx-gb300-deepseekv3-256gpu-mxfp8", true,
                "in HybridEP's dispatch"},
           Case{"nemo_performance_summaries.json", "megatron-bridge-2602-dgx-h100-qwen3-235b-a22b-256gpu-fp8", false,
                nullptr},
           Case{"megatron_lm_moe_recipes.json", "megatron-lm-moe-recipes-qwen3-235b-a22b-b200-128gpu-mxfp8", true,
                "by the router (moe_router_padding_for_quantization)"},
           // HybridEP in BF16: the setting kept, unsaid.
           Case{"megatron_lm_moe_recipes.json", "megatron-lm-moe-recipes-qwen3-30b-a3b-h100-32gpu-bf16", true, nullptr},
       }) {
    const auto runs = Corpus(c.file);
    const core::PublishedRun* r = Find(runs, c.id);
    ASSERT_NE(r, nullptr) << c.id;
    EXPECT_EQ(r->scenario.plan.moe_router_padding, c.padded) << c.id;
    EXPECT_EQ(Says(r->assumptions, c.said != nullptr ? c.said : "padded for the quantized GEMMs"), c.said != nullptr)
        << c.id;
  }
}

// What `validate --record ID --plan-out FILE` writes is a plan file `report --plan FILE` reads:
// every mapped record's scenario, throughput and memory alike, written with its model, GPU and
// cluster embedded, parses back and validates as a user's plan file does. Found by writing them
// all: NeMo AutoModel's Nemotron 3 Super run has no MTP module (AutoModel builds none), and the
// record kept the preset's MTP layer description (mtp_pattern "*E", mtp_shared) beside
// mtp_layers 0, which a plan file is refused for (ModelSpec::SetMtpLayers drops it now).
TEST(ValidationTest, EveryRecordsScenarioIsAPlanFileThatReadsBack) {
  auto check = [](const std::string& id, const core::Scenario& sc) {
    core::PlanFile pf;
    pf.plan = sc.plan;
    pf.model = sc.model;
    pf.gpu = sc.gpu;
    pf.cluster = sc.cluster;
    auto back = core::ParsePlanFileJson(core::PlanFileToJson(pf));
    ASSERT_TRUE(back.ok()) << id << ": " << back.status().message();
    ASSERT_TRUE(back->model && back->gpu && back->cluster) << id;
    core::Diagnostics d;
    core::ValidatePlan(back->plan, *back->model, *back->gpu, *back->cluster, &d);
    EXPECT_FALSE(d.has_errors()) << id << ": " << d.ToStatus().message();
  };
  size_t runs = 0, peaks = 0;
  for (const char* f : {"automodel_performance_summary.json", "bloom_prequel_2202.json", "llmfoundry_benchmarks.json",
                        "megatron_bridge_cards.json", "megatron_bridge_skills.json", "megatron_lm_moe_recipes.json",
                        "megatron_lm_readme_2024.json", "mlperf_training.json", "nemo_long_sequence.json",
                        "nemo_performance_summaries.json", "papers_at_scale.json", "published.json",
                        "published_beyond_tuning.json", "torchtitan_a100_2404.json", "torchtitan_h100_2412.json",
                        "torchtitan_h100_2506_asynctp.json", "torchtitan_h200_2506.json"})
    for (const auto& r : Corpus(f)) {
      check(r.id, r.scenario);
      ++runs;
    }
  for (const char* f : {"memory_measured.json", "megatron_ci_memory.json", "published_outcomes.json",
                        "h200_probe_memory.json", "torchtitan_h200_2506_memory.json",
                        "megatron_bridge_cards_memory.json", "megatron_bridge_skills_memory.json"}) {
    std::vector<std::string> skipped;
    const auto records = MemoryCorpus(f, &skipped);
    ASSERT_TRUE(records.ok()) << f;
    for (const auto& r : *records) {
      check(r.id, r.scenario);
      ++peaks;
    }
  }
  // docs/validation.md: 1,044 step times map (921 before dgxc v25.05.01's 7 Nemotron-H 56B rows,
  // v25.04.02's 28 Llama 3.1 and 24 Nemotron-4 rows and v24.11.1's 28 Llama 3.1, 16 Nemotron-4 15B
  // and 10 GPT-3 175B rows; 1,034 before MLPerf Training v6.0's 10 DeepSeek-V3 rows, 1,044 before
  // Megatron-LM's 14 MoE recipes, 1,058 before the 7 points of its README's H100 strong-scaling
  // figure, 1,065 before Megatron-Bridge's 15 verification-card runs, 1,080 before the 5 of its
  // performance skills' matched experiments, 1,085 before DeepSpeed's three Azure runs with their
  // checkpoints in host memory); docs/memory.md: 274 measured peaks (268 before the
  // three those cards print, 271 before the skills' three) and 26 records that print only whether
  // the run fitted (22 before the skills' four Nemotron 3 Nano layouts that ran out of memory).
  EXPECT_EQ(runs, 1088u);
  EXPECT_EQ(peaks, 300u);
}

TEST(ValidationTest, CorpusMapsMoreThan150RunsWithProvenance) {
  // Records per file, and how many map to a plan the model can cost: LLM Foundry's benchmark
  // tables (216 of 216), NVIDIA's NeMo 24.07 and Megatron-Bridge 25.09-26.08 summaries (173 of
  // 272: no B300/GB300 NVFP4 GEMMs, no presets for Nemotron 3 or Kimi K2 (187 with kimi-k2), 12 runs whose recipes
  // offload activations to host memory until that was modelled), papers and NVIDIA's
  // dgxc-benchmarking at scale (154 of 159: not DeepSpeed's runs that keep activation checkpoints
  // in host memory; 104 before records were given the stack their source names or the
  // default one: MT-NLG, the 2020 Megatron-LM README's A100 runs, dgxc's JAX MaxText runs), and
  // the three earlier sets. The NeMo summaries map 178 since the default pipeline split lets the
  // end chunks hold only the embedding and the loss (five Llama 3.1 405B runs on PP 16 x VP 8:
  // 126 layers on 128 chunks, core::DefaultStageSplit), and 183 with the presets NeMo 24.07 names
  // without their architecture (GPT3-5B/20B, Nemotron-8B/22B/340B: presets/models). The papers map
  // 132 (126 before) with the V100 presets: the 2020 Megatron-LM README's DGX-2 rows (dgx-2) and
  // Megatron-LM 2019's DGX-2H rows (dgx-2h), and 146 with dgxc-benchmarking's 14 Grok-1 rows
  // (model.moe_experts/moe_topk read, GeGLU, their expert TP). Megatron-Bridge's pages map 207 (187
  // before) with the 20 Nemotron 3 Nano runs (a hybrid Mamba-2/MoE model: presets/models/
  // nemotron-3-nano.json). The papers map 154 with dgxc-benchmarking's 8 Llama 4 Maverick rows (their
  // "400B MoE" names the llama4-maverick preset: interleaved dense and MoE layers, a shared expert),
  // and Megatron-Bridge's pages 219 with the 12 runs whose recipes offload activations to host
  // memory (PlanSpec::offload_activation_layers), 234 with the 15 Nemotron 3 Super MXFP8 runs
  // (presets/models/nemotron-3-super.json: latent MoE and a shared MTP module; its NVFP4 runs and
  // Nemotron 3 Ultra stay skipped), 235 with Nemotron 3.5 Lightning's (Nano with a shared MTP
  // module, presets/models/nemotron-3-5-lightning.json), 253 with the 18 Llama 3 70B and 3.1
  // 405B NVFP4 runs (plan.precision nvfp4; Nemotron 3 Super's 15 keep a BF16 tail, skipped).
  // NeMo's long-sequence page (nemo_long_sequence.json) adds 17: Llama 2 7B on H100 and Llama 3 8B
  // on B200 at 4K to 1024K tokens with CP up to 32. The papers map 161 with dgxc v25.05.01's 7
  // Nemotron-H 56B rows (a hybrid Mamba-2/attention/MLP model: presets/models/nemotron-h-56b.json),
  // 189 with v25.04.02's 28 Llama 3.1 8B/70B/405B rows (NeMo 25.02.01; its 405B proxies not recorded)
  // and 213 with its 24 Nemotron-4 15B and 340B rows; 241 with v24.11.1's 28 Llama 3.1 rows (NeMo
  // 24.09, the v25.03 tables' layouts and configs a container earlier) and 257 with its 16 Nemotron-4
  // 15B rows (its 340B tables repeat v25.03's numbers and are not recorded twice), 267 with its 10
  // GPT-3 175B rows (nemo:24.05, FlashAttention-2: NVTE_FUSED_ATTN=0), 270 with DeepSpeed's 2022
  // Azure runs of 175B, 1T and 2T with their checkpoints in host memory (plan.offload_checkpoints:
  // DeepSpeed's cpu_checkpointing, skipped before it was costed).
  struct Want {
    const char* file;
    size_t mapped, skipped;
  };
  size_t total = 0;
  for (const Want& w : {Want{"llmfoundry_benchmarks.json", 216, 0}, Want{"nemo_performance_summaries.json", 253, 19},
                        Want{"papers_at_scale.json", 270, 2}, Want{"published.json", 19, 71},
                        Want{"published_beyond_tuning.json", 49, 2}, Want{"torchtitan_h100_2412.json", 18, 0},
                        Want{"nemo_long_sequence.json", 17, 0}}) {
    size_t skipped = 0;
    const auto runs = Corpus(w.file, &skipped);
    EXPECT_EQ(runs.size(), w.mapped) << w.file;
    EXPECT_EQ(skipped, w.skipped) << w.file;
    total += runs.size();
    for (const auto& r : runs) {
      EXPECT_FALSE(r.source.empty()) << r.id;   // paper or repo, table, row
      EXPECT_FALSE(r.printed.empty()) << r.id;  // what the source prints
      EXPECT_GT(r.published, 0) << r.id;
    }
  }
  EXPECT_EQ(total, 842u);
}

TEST(ValidationTest, MegatronBridgeRunsTakeTheirRecipesRecomputation) {
  // The performance pages print no recomputation; presets/launches/megatron-bridge-performance.json
  // holds what each release's scripts/performance recipe set. Qwen3-30B-A3B on 8 GB300s (26.04):
  // qwen3_llm_pretrain.py sets recompute_granularity None, so none (the cheapest-that-fits rule,
  // which took full recomputation before, no longer applies: the run is known).
  std::vector<std::string> skipped;
  const auto nemo = Corpus("nemo_performance_summaries.json", nullptr, &skipped);
  const auto* q = Find(nemo, "megatron-bridge-2604-dgx-gb300-qwen3-30b-a3b-8gpu-mxfp8");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->scenario.plan.recompute, core::Recompute::kNone);
  bool from_recipe = false;
  for (const auto& a : q->assumptions) from_recipe |= a.rfind("recompute none from ", 0) == 0;
  EXPECT_TRUE(from_recipe);
  // DeepSeek-V3 on 256 B200s (26.04) recomputes mla_up_proj only: selective recomputation of
  // that module (plan.recompute_modules), said.
  const auto* ds = Find(nemo, "megatron-bridge-2604-dgx-b200-deepseekv3-256gpu-mxfp8");
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->scenario.plan.recompute, core::Recompute::kSelective);
  EXPECT_EQ(ds->scenario.plan.recompute_modules, core::ModuleBit(core::RecomputeModule::kMlaUpProj));
  bool module_said = false, grads_said = false;
  for (const auto& a : ds->assumptions) {
    module_said |= a.rfind("recompute selective [mla_up_proj] from ", 0) == 0;
    // deepseek_llm_pretrain.py: cfg.ddp.grad_reduce_in_fp32 = False, bf16 gradients.
    grads_said |= a.rfind("gradients accumulated and reduced in bf16 (grad_reduce_in_fp32 false) from ", 0) == 0;
  }
  EXPECT_TRUE(module_said);
  EXPECT_TRUE(grads_said);
  EXPECT_EQ(ds->scenario.plan.dtypes.grads, core::Dtype::kBf16);
  // Qwen3-30B-A3B on 8 GB300s (26.06) turns on the batch-level EP all-to-all overlap.
  const auto* a2a = Find(nemo, "megatron-bridge-2606-dgx-gb300-qwen3-30b-a3b-8gpu-mxfp8");
  ASSERT_TRUE(a2a);
  EXPECT_TRUE(a2a->scenario.plan.ep_overlap);
  EXPECT_FALSE(q->scenario.plan.ep_overlap);  // 26.04's recipe does not
  // Llama 3 70B FP8 with Megatron-FSDP on 64 GB300s offloads 20 layers' activations to host
  // memory (its recipe's cpu_offloading_num_layers), on 64 GB200s 40: the plan says so, the
  // assumptions name the recipe, and the run fits (on GB200 it would not without: 40 more layers'
  // activations, 2 x 8192 tokens each).
  const auto* off300 = Find(nemo, "megatron-bridge-2604-dgx-gb300-llama3-70b-64gpu-fp8");
  const auto* off200 = Find(nemo, "megatron-bridge-2604-dgx-gb200-llama3-70b-64gpu-fp8");
  ASSERT_TRUE(off300);
  ASSERT_TRUE(off200);
  EXPECT_EQ(off300->scenario.plan.offload_activation_layers, 20);
  EXPECT_EQ(off200->scenario.plan.offload_activation_layers, 40);
  bool offload_said = false;
  for (const auto& a : off200->assumptions)
    offload_said |= a.rfind("the activations of the first 40 layers offloaded to host memory (", 0) == 0;
  EXPECT_TRUE(offload_said);
  const core::MemoryReport with = core::EstimateMemory(off200->scenario.model, off200->scenario.plan,
                                                       off200->scenario.gpu, core::MemoryOverheads{});
  core::PlanSpec kept = off200->scenario.plan;
  kept.offload_activation_layers = 0;
  const core::MemoryReport without =
      core::EstimateMemory(off200->scenario.model, kept, off200->scenario.gpu, core::MemoryOverheads{});
  EXPECT_TRUE(with.fits);
  EXPECT_FALSE(without.fits);
}

// From 26.02 the Megatron-Bridge tables print an FP8 per-tensor run's precision as "FP8" alone,
// where 25.11 printed "FP8-CS"; the recipe each such run resolves to is its model's fp8_cs variant
// (LLAMA31_405B_PRETRAIN_CONFIG_H100_FP8_CS_V2 for the 26.06 H100 row), which the performance
// scripts build with get_precision_config("fp8_cs"): Transformer Engine's per-tensor current
// scaling (fp8_recipe "tensorwise", scripts/performance/utils/precision.py:28-32 at v0.3.0-v0.6.0),
// so the launch file's fp8_scaling "current" is what the plan takes, said, and not the stack's
// delayed scaling. A row whose table names the scaling keeps the printed one (25.11's FP8-CS).
TEST(ValidationTest, MegatronBridgeFp8RowsTakeTheirRecipesCurrentScaling) {
  const auto nemo = Corpus("nemo_performance_summaries.json");
  const auto* r = Find(nemo, "megatron-bridge-2606-dgx-h100-llama3-1-405b-1024gpu-fp8");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->scenario.plan.precision, core::Dtype::kFp8);
  EXPECT_EQ(r->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);
  EXPECT_TRUE(Says(r->assumptions, "FP8 current scaling from "));
  // A Qwen3-30B-A3B rank's 8 local experts each quantize their inputs apart under current scaling
  // (3 kernels a tensor), where delayed scaling fused them: the same plan under delayed scaling is
  // faster.
  const auto* q = Find(nemo, "megatron-bridge-2606-dgx-h100-qwen3-30b-a3b-16gpu-fp8");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);
  auto delayed = *q;
  delayed.scenario.plan.fp8_scaling = core::Fp8Scaling::kDelayed;
  EXPECT_LT(ValidateRuns({*q}, core::Profile{}).records[0].predicted,
            ValidateRuns({delayed}, core::Profile{}).records[0].predicted);
  const auto* cs = Find(nemo, "megatron-bridge-2511-dgx-gb200-llama3-70b-64gpu-fp8-cs");
  ASSERT_TRUE(cs);
  EXPECT_EQ(cs->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);
}

// Megatron-Bridge 26.02.01 prints its GB300 Llama 3 70B MXFP8 and NVFP4 rows with a layout that
// no configuration of its release (v0.3.1) has (MBS 2, VP n/a; the NVFP4 one PP 1 and DDP, every
// GPU holding the 70.6B parameters' bf16 weights and gradients: 282 GB beside the activations on
// a 288 GB GPU). Both rows take, from their launch entries, the release's one GB300 configuration of their precision at
// GBS 256, PP 4 x VP 5 at micro batch 1 (llama3_workload_base_configs.py:219-231 at v0.3.1), as
// 26.02, 26.04 and 26.04.01 print it, and then fit.
TEST(ValidationTest, GB300Llama70BRowsOf260201TakeTheirReleasesLayout) {
  const auto nemo = Corpus("nemo_performance_summaries.json");
  for (const char* id : {"megatron-bridge-260201-dgx-gb300-llama3-70b-64gpu-mxfp8",
                         "megatron-bridge-260201-dgx-gb300-llama3-70b-64gpu-nvfp4"}) {
    SCOPED_TRACE(id);
    const auto* r = Find(nemo, id);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->scenario.plan.tp, 1);
    EXPECT_EQ(r->scenario.plan.pp, 4);
    EXPECT_EQ(r->scenario.plan.vpp, 5);
    EXPECT_EQ(r->scenario.plan.micro_batch, 1);
    EXPECT_EQ(r->scenario.plan.dp, 16);
    EXPECT_EQ(r->scenario.plan.recompute, core::Recompute::kNone);  // the recipe sets none
    const core::MemoryReport m =
        core::EstimateMemory(r->scenario.model, r->scenario.plan, r->scenario.gpu, core::MemoryOverheads{});
    EXPECT_TRUE(m.fits) << m.per_gpu_bytes / 1e9 << " GB";
  }
}

// Megatron-Bridge 26.02.01 prints its H100 Qwen3-30B-A3B FP8 row with 26.02's layout (PP 2 x VP 12,
// EP 8), which no configuration of v0.3.1 has: QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1
// (qwen3_workload_base_configs.py:408-415) runs EP 16 at PP 1 with HybridEP and no EP overlap. The
// launch entry gives that layout and the recipe's other settings: its 9,058 tokens/s
// per GPU lies among the EP 16 rows 26.04 to 26.06 print (8,826-8,960), not near 26.02's 5,113.
TEST(ValidationTest, H100Qwen330BRowOf260201TakesItsReleasesLayout) {
  const auto nemo = Corpus("nemo_performance_summaries.json");
  const auto* r = Find(nemo, "megatron-bridge-260201-dgx-h100-qwen3-30b-a3b-16gpu-fp8");
  const auto* later = Find(nemo, "megatron-bridge-2604-dgx-h100-qwen3-30b-a3b-16gpu-fp8");
  ASSERT_TRUE(r);
  ASSERT_TRUE(later);
  EXPECT_EQ(r->scenario.plan.ep, 16);
  EXPECT_EQ(r->scenario.plan.pp, 1);
  EXPECT_EQ(r->scenario.plan.dp, 16);
  EXPECT_EQ(r->scenario.plan.micro_batch, 1);
  EXPECT_FALSE(r->scenario.plan.ep_overlap);
  EXPECT_EQ(r->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);
  // One plan with 26.04's row (the same configuration at v0.4.0): one prediction for both.
  const ValidationSummary v = ValidateRuns({*r, *later}, core::Profile{});
  EXPECT_DOUBLE_EQ(v.records[0].predicted, v.records[1].predicted);
}

// Megatron-Bridge 25.11 prints its B200 GPT-OSS 120B row at EP 8, but every commit the table can
// have run has one B200 configuration, GPT_OSS_120B_B200_BF16_BASE_CONFIG (workload_base_configs.py
// :50-55 at v0.2.0): EP 64 at micro batch 4 and GBS 512, as printed, recomputing layernorm and
// moe_act. The launch entry gives EP 64 and the recomputation: the scenario 26.02's B200
// row runs at GBS 1,280 (8,047 tokens/s per GPU against this row's 8,213), so the two predictions
// are one per-GPU rate but for the microbatches a step.
TEST(ValidationTest, B200GptOssRowOf2511TakesItsReleasesExpertParallelism) {
  const auto nemo = Corpus("nemo_performance_summaries.json");
  const auto* r = Find(nemo, "megatron-bridge-2511-dgx-b200-gpt-oss-120b-64gpu-bf16");
  const auto* later = Find(nemo, "megatron-bridge-2602-dgx-b200-gpt-oss-120b-64gpu-bf16");
  ASSERT_TRUE(r);
  ASSERT_TRUE(later);
  EXPECT_EQ(r->scenario.plan.ep, 64);
  EXPECT_EQ(r->scenario.plan.micro_batch, 4);
  EXPECT_EQ(r->scenario.plan.global_batch, 512);
  EXPECT_EQ(r->scenario.plan.recompute, core::Recompute::kSelective);
  EXPECT_EQ(r->scenario.plan.recompute_modules,
            core::ModuleBit(core::RecomputeModule::kLayernorm) | core::ModuleBit(core::RecomputeModule::kMoeAct));
  core::PlanSpec same = later->scenario.plan;
  same.global_batch = r->scenario.plan.global_batch;
  same.gpus = r->scenario.plan.gpus;
  EXPECT_EQ(same, r->scenario.plan);
}

// A copy of such a row that prints what the table printed (EP 8 for 25.11's B200 GPT-OSS 120B;
// 26.02's PP 2 x VP 12 at EP 8 for 26.02.01's H100 Qwen3-30B-A3B) takes the layout its launch
// entry says the recipe ran (presets/launches/megatron-bridge-performance.json "layout"), derives
// the data-parallel degree again, and says what it replaced; the corpus records print what the
// pages printed too, and map to the same plans.
TEST(ValidationTest, ALaunchEntrysLayoutReplacesAStaleOnePrinted) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/nemo_performance_summaries.json");
  ASSERT_TRUE(text.ok());
  nlohmann::json all = nlohmann::json::parse(*text);
  nlohmann::json printed = nlohmann::json::array();
  for (auto& r : all) {
    if (r["id"] == "megatron-bridge-2511-dgx-b200-gpt-oss-120b-64gpu-bf16") {
      r["parallel"]["ep"] = 8;
      printed.push_back(r);
    }
    if (r["id"] == "megatron-bridge-260201-dgx-h100-qwen3-30b-a3b-16gpu-fp8") {
      r["parallel"]["pp"] = 2;
      r["parallel"]["vpp"] = 12;
      r["parallel"]["ep"] = 8;
      printed.push_back(r);
    }
  }
  ASSERT_EQ(printed.size(), 2u);
  auto runs = core::LoadPublishedRuns(printed.dump(), nullptr);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 2u);
  const auto& gpt = (*runs)[0].id.find("gpt-oss") != std::string::npos ? (*runs)[0] : (*runs)[1];
  const auto& qwen = (*runs)[0].id.find("gpt-oss") != std::string::npos ? (*runs)[1] : (*runs)[0];
  EXPECT_EQ(gpt.scenario.plan.ep, 64);
  EXPECT_EQ(gpt.scenario.plan.dp, 64);
  EXPECT_TRUE(Says(gpt.assumptions, "EP 64 where the row prints 8, the layout "));
  EXPECT_EQ(qwen.scenario.plan.pp, 1);
  EXPECT_EQ(qwen.scenario.plan.vpp, 1);
  EXPECT_EQ(qwen.scenario.plan.ep, 16);
  EXPECT_EQ(qwen.scenario.plan.dp, 16);  // GPUs / (TP x PP) again, with PP 1
  EXPECT_TRUE(Says(qwen.assumptions, "PP 1 where the row prints 2, the layout "));
  EXPECT_TRUE(Says(qwen.assumptions, "interleave degree 1 where the row prints 12, the layout "));
  // What the corpus's corrected record gives, field for field.
  const auto nemo = Corpus("nemo_performance_summaries.json");
  EXPECT_EQ(Find(nemo, qwen.id)->scenario.plan, qwen.scenario.plan);
  EXPECT_EQ(Find(nemo, gpt.id)->scenario.plan, gpt.scenario.plan);
}

// Where the router's probabilities weight an MoE layer's tokens (PlanSpec::moe_probs), as the
// Megatron-Core each run ran applies them: Megatron-Bridge's releases (Megatron-Core 0.14 on, fused
// weighted activations in every MoE recipe) keep nothing more, which takes the four GB300
// DeepSeek-V3 rows (26.02-26.04.01, 269.8 GiB on a 268.2 GiB GPU when the experts' output was
// kept) and Qwen3-30B-A3B's 25.09 H100 row (85.5 GiB of 80) to fitting, as they ran;
// dgxc-benchmarking v25.03 (NeMo 24.12, Megatron-Core before 0.13) weights at the unpermutation
// (the megatron-core-2024 stack); Megatron-LM's CI golden values (commits after 2659630721): the
// GELU MoE test multiplies the activation's output, the SwiGLU one runs the fused weighted SwiGLU.
TEST(ValidationTest, MoeProbabilitiesApplyWhereEachRunsMegatronCoreAppliesThem) {
  const auto nemo = Corpus("nemo_performance_summaries.json");
  for (const char* id : {"megatron-bridge-260201-dgx-gb300-deepseekv3-256gpu-mxfp8",
                         "megatron-bridge-2602-dgx-gb300-deepseekv3-256gpu-mxfp8",
                         "megatron-bridge-2604-dgx-gb300-deepseekv3-256gpu-mxfp8",
                         "megatron-bridge-260401-dgx-gb300-deepseekv3-256gpu-mxfp8",
                         "megatron-bridge-2509-dgx-h100-qwen3-30b-a3b-tokendrop-16gpu"}) {
    SCOPED_TRACE(id);
    const auto* r = Find(nemo, id);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->scenario.plan.moe_probs, core::MoeProbs::kFused);
    EXPECT_TRUE(Says(r->assumptions, "MoE probabilities applied in a fused weighted activation"));
    EXPECT_TRUE(ValidateRuns({*r}, core::Profile{}).records[0].fits);
  }
  const auto papers = Corpus("papers_at_scale.json");
  const auto* grok = Find(papers, "dgxc-v2503-grok1-314b-h100-512gpu-bf16");
  ASSERT_TRUE(grok);
  EXPECT_EQ(grok->scenario.plan.moe_probs, core::MoeProbs::kUnpermute);
  std::vector<std::string> skipped;
  const auto ci = MemoryCorpus("megatron_ci_memory.json", &skipped);
  ASSERT_TRUE(ci.ok());
  const auto measured = MemoryCorpus("memory_measured.json", &skipped);
  ASSERT_TRUE(measured.ok());
  auto find = [](const std::vector<core::PublishedMemory>& v, const std::string& id) -> const core::PublishedMemory* {
    for (const auto& r : v)
      if (r.id == id) return &r;
    return nullptr;
  };
  const auto* gelu = find(*ci, "megatron-ci-gpt3-moe-mcore-te-ep8-resume-torch-dist-dist-optimizer-dgx-a100");
  const auto* swiglu = find(*measured, "megatron-ci-gpt3-mcore-te-tp2-pp2-ep4-etp1-memory-speed-dgx-h100");
  ASSERT_TRUE(gelu);
  ASSERT_TRUE(swiglu);
  EXPECT_EQ(gelu->scenario.model.mlp, core::MlpKind::kGelu);
  EXPECT_EQ(gelu->scenario.plan.moe_probs, core::MoeProbs::kActivation);
  EXPECT_EQ(swiglu->scenario.model.mlp, core::MlpKind::kSwiglu);
  EXPECT_EQ(swiglu->scenario.plan.moe_probs, core::MoeProbs::kFused);
}

// How the experts add fc2's bias (PlanSpec::expert_bias): gpt-oss on Megatron-Bridge 25.11 to 26.08,
// whose Megatron-Core adds it one local expert at a time (_apply_bias), with fp32 probabilities
// where the recipe's dispatcher is HybridEP's (the flex dispatcher upcasts them), whatever
// dispatcher the run is costed with; NeMo AutoModel's gpt-oss keeps the fused default. A model
// without expert biases (Qwen3) takes its stack's setting (megatron-bridge-2025: per-expert) at no
// cost: it has no bias to add. Each per-expert pass makes the run slower than it was predicted fused.
// (A recipe that runs the experts through Transformer Engine's op fuser adds the bias in its
// grouped linear op: MegatronBridgeOpFuserRunsClampAndAddTheBiasInsideItsOps.)
TEST(ValidationTest, GptOssExpertBiasesAreAddedAsEachRunsMegatronCoreAddsThem) {
  const auto nemo = Corpus("nemo_performance_summaries.json");
  const auto* h100 = Find(nemo, "megatron-bridge-2604-dgx-h100-gpt-oss-120b-64gpu-bf16");
  const auto* gb300 = Find(nemo, "megatron-bridge-2604-dgx-gb200-gpt-oss-120b-64gpu-bf16");
  const auto* qwen = Find(nemo, "megatron-bridge-2604-dgx-h100-qwen3-30b-a3b-16gpu-fp8");
  ASSERT_TRUE(h100 && gb300 && qwen);
  EXPECT_EQ(h100->scenario.plan.expert_bias, core::ExpertBias::kPerExpert);
  EXPECT_TRUE(Says(h100->assumptions, "expert fc2 bias added per-expert from Megatron-Bridge 25.11"));
  EXPECT_EQ(gb300->scenario.plan.expert_bias, core::ExpertBias::kPerExpertFp32);
  EXPECT_TRUE(Says(gb300->assumptions, "fp32 probabilities, as the recipe's flex/hybridep dispatcher hands them"));
  EXPECT_EQ(qwen->stack, "megatron-bridge-2025");
  EXPECT_EQ(qwen->scenario.plan.expert_bias, core::ExpertBias::kPerExpert);
  core::PublishedRun qwen_fused = *qwen;
  qwen_fused.scenario.plan.expert_bias = core::ExpertBias::kFused;
  const auto qwen_runs = ValidateRuns({*qwen, qwen_fused}, core::Profile{});
  EXPECT_EQ(qwen_runs.records[0].predicted, qwen_runs.records[1].predicted);
  const auto automodel = Corpus("automodel_performance_summary.json");
  const auto* oss = Find(automodel, "automodel-2510-h100-gpt-oss-120b-64gpu");
  ASSERT_TRUE(oss);
  EXPECT_EQ(oss->scenario.plan.expert_bias, core::ExpertBias::kFused);
  for (const auto* r : {h100, gb300}) {
    core::PublishedRun fused = *r;
    fused.scenario.plan.expert_bias = core::ExpertBias::kFused;
    const auto runs = ValidateRuns({*r, fused}, core::Profile{});
    EXPECT_LT(runs.records[0].predicted, runs.records[1].predicted) << r->id;
  }
}

// gpt-oss on Megatron-Bridge as its Megatron-Core runs it (core/step_graph.cc kMegatronRope,
// kGluClamp): its YaRN RoPE unfused and, in Megatron-Core's own experts, its clamped SwiGLU's two
// clamps and cat before the fused activation. The 26.06-26.08 MXFP8 recipes on GB200 and GB300 run
// the experts through Transformer Engine's op fuser (cutedsl_fused_grouped_mlp, or the perf recipe's
// use_transformer_engine_op_fuser): the clamp inside its activation op and fc2's bias inside its
// grouped linear op, so none of those copies nor the per-expert bias pass; their 26.06 B300 sibling,
// whose recipe is the BF16 one's, runs Megatron-Core's own experts. Each mechanism makes its runs
// slower than they were predicted without it.
TEST(ValidationTest, MegatronBridgeOpFuserRunsClampAndAddTheBiasInsideItsOps) {
  const auto nemo = Corpus("nemo_performance_summaries.json");
  const auto* fuser = Find(nemo, "megatron-bridge-2608-dgx-gb300-gpt-oss-120b-64gpu-mxfp8");
  const auto* b300 = Find(nemo, "megatron-bridge-2606-dgx-b300-gpt-oss-120b-64gpu-mxfp8");
  const auto* h100 = Find(nemo, "megatron-bridge-2604-dgx-h100-gpt-oss-120b-64gpu-bf16");
  ASSERT_TRUE(fuser && b300 && h100);
  EXPECT_TRUE(fuser->scenario.plan.moe_op_fuser);
  EXPECT_EQ(fuser->scenario.plan.expert_bias, core::ExpertBias::kFused);
  EXPECT_TRUE(Says(fuser->assumptions,
                   "the experts through Transformer Engine's op fuser (use_transformer_engine_op_fuser; the "
                   "activation's clamp in its op; fc2's bias in its grouped linear op) from "));
  EXPECT_FALSE(b300->scenario.plan.moe_op_fuser);
  EXPECT_EQ(b300->scenario.plan.expert_bias, core::ExpertBias::kPerExpertFp32);
  auto has = [](const core::PublishedRun& r, std::string_view name) {
    for (const core::Op& op : core::BuildStepGraph(r.scenario.model, r.scenario.plan).moe_layer)
      if (std::string_view(op.name) == name) return true;
    return false;
  };
  EXPECT_FALSE(has(*fuser, "expert_activation_clamp"));
  EXPECT_FALSE(has(*fuser, "expert_fc2_bias"));
  EXPECT_TRUE(has(*b300, "expert_activation_clamp"));
  EXPECT_TRUE(has(*b300, "expert_fc2_bias"));
  // Without the mechanisms (a plain RoPE, no clamp) every one of them is predicted faster.
  for (const auto* r : {fuser, b300, h100}) {
    core::PublishedRun plain = *r;
    plain.scenario.model.rope_mscale = 1;
    plain.scenario.model.glu_clamp = 0;
    const auto runs = ValidateRuns({*r, plain}, core::Profile{});
    EXPECT_LT(runs.records[0].predicted, runs.records[1].predicted) << r->id;
  }
}

TEST(ValidationTest, AnUnknownAttentionKernelSkipsTheRecordSayingWhy) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/llmfoundry_benchmarks.json");
  ASSERT_TRUE(text.ok());
  std::string edited = *text;
  const std::string named = R"("attention_kernel": "flash2")";
  const size_t at = edited.find(named);  // the first record, llmfoundry-h100-80g-mpt-70b-2048-512gpu
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, named.size(), R"("attention_kernel": "flashy")");
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(edited, &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 215u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("model.attention_kernel 'flashy' is not an attention kernel"), std::string::npos)
      << skipped[0];
}

TEST(ValidationTest, ARecordWhoseModelIsInvalidIsSkippedNamingTheField) {
  // A record's printed dimensions build its model; one that a model file could not hold (kv_heads
  // 0 here, found by fuzz_published: the memory model divided by it, SIGFPE in `meshplan
  // validate`) is skipped naming the field and the rule, as a model file with it is refused.
  auto record = [](int kv_heads) {
    return std::string(R"([{"id": "kv-heads-check", "source": {"paper": "hand-written"},
      "model": {"name": "GPT 8B", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": )") +
           std::to_string(kv_heads) + R"(, "vocab": 128256, "seq_len": 8192},
      "hardware": {"gpu": "H100 SXM", "count": 8},
      "parallel": {"tp": 1, "pp": 1, "dp": 8},
      "microbatch": 1, "global_batch": 64,
      "measured": {"tokens_per_s_per_gpu": 9000}}])";
  };
  std::vector<std::string> skipped;
  auto ok = core::LoadPublishedRuns(record(8), &skipped);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 1u) << (skipped.empty() ? "" : skipped[0]);
  skipped.clear();
  auto bad = core::LoadPublishedRuns(record(0), &skipped);
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  EXPECT_TRUE(bad->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("kv-heads-check: model invalid: model.kv_heads: must be between 1 and heads=32 (got 0)"),
            std::string::npos)
      << skipped[0];
}

TEST(ValidationTest, CorpusRecordsMapAsTheirSourcesRanThem) {
  size_t skipped_count = 0;
  std::vector<std::string> skipped;
  const auto lf = Corpus("llmfoundry_benchmarks.json");
  // FSDP SHARD_GRAD_OP is ZeRO-2; mixed precision PURE reduces gradients in bf16; amp_fp8 is FP8.
  const auto* sgo = Find(lf, "llmfoundry-h100-80g-mpt-3b-2048-512gpu");
  ASSERT_TRUE(sgo);
  EXPECT_EQ(sgo->scenario.plan.zero, 2);
  EXPECT_EQ(sgo->stack, "llm-foundry-2023");
  // Composer drives PyTorch's FSDP1: its gradient path and a reduce-scatter every microbatch.
  EXPECT_EQ(sgo->scenario.plan.zero3_gather, core::Zero3Gather::kFsdp1);
  // The 2024 large-scale sweep ran FlashAttention-2 for 3b (sweep.py --attn_impl flash), named by
  // the record; the 2023 sweeps left --attn_impl at submit_benchmarks.py's default, triton, which
  // the stack says; the large-scale 13b and 30b rows name triton.
  EXPECT_EQ(sgo->scenario.model.attention, core::AttentionImpl::kFlash2);
  const auto* sweep2023 = Find(lf, "llmfoundry-a100-80g-mpt-125m-65536-8gpu");
  ASSERT_TRUE(sweep2023);
  EXPECT_EQ(sweep2023->scenario.model.attention, core::AttentionImpl::kTriton);
  const auto* large13b = Find(lf, "llmfoundry-h100-80g-mpt-13b-2048-512gpu");
  ASSERT_TRUE(large13b);
  EXPECT_EQ(large13b->scenario.model.attention, core::AttentionImpl::kTriton);
  bool named = false;
  for (const auto& a : sgo->assumptions) named |= a == "attention kernel flash2 (the record's model.attention_kernel)";
  EXPECT_TRUE(named);
  const auto* pure = Find(lf, "llmfoundry-a100-80g-mpt-70b-2048-64gpu");
  ASSERT_TRUE(pure);
  EXPECT_EQ(pure->scenario.plan.dtypes.grads, core::Dtype::kBf16);
  EXPECT_EQ(pure->scenario.plan.zero, 3);
  const auto* fp8 = Find(lf, "llmfoundry-h100-80g-mpt-3b-8192-8gpu-fp8");
  ASSERT_TRUE(fp8);
  EXPECT_EQ(fp8->scenario.plan.precision, core::Dtype::kFp8);
  // MPT trains without dropout (the stack); whole-block checkpointing replays a block up to its
  // last saved tensor under PyTorch 2.1 (the A100 80GB and H100 sweeps of 2023-10 and 2024-01) and
  // whole under PyTorch 1.13 (the A100 40GB table and the two A100 80GB 70b rows kept from
  // 2023-05): presets/launches/llm-foundry-benchmarks.json. Its FP8 rows run Transformer Engine's
  // linear layers, which save after their GEMM: nothing is skipped, and the assumptions say so.
  EXPECT_FALSE(pure->scenario.model.dropout);
  auto early = [&](const char* id) {
    const auto* r = Find(lf, id);
    EXPECT_TRUE(r) << id;
    return r != nullptr && r->scenario.plan.recompute_early_stop;
  };
  EXPECT_TRUE(early("llmfoundry-h100-80g-mpt-7b-1024-8gpu"));
  EXPECT_TRUE(early("llmfoundry-h100-80g-mpt-70b-2048-512gpu"));
  EXPECT_TRUE(early("llmfoundry-a100-80g-mpt-13b-4096-8gpu"));
  EXPECT_FALSE(early("llmfoundry-a100-80g-mpt-70b-2048-64gpu"));
  EXPECT_FALSE(early("llmfoundry-a100-40g-mpt-7b-4096-8gpu"));
  EXPECT_FALSE(early("llmfoundry-h100-80g-mpt-1b-2048-8gpu"));  // no activation checkpointing
  const auto* fp8_ac = Find(lf, "llmfoundry-h100-80g-mpt-3b-32768-8gpu-fp8");
  ASSERT_TRUE(fp8_ac);
  EXPECT_EQ(fp8_ac->scenario.plan.recompute, core::Recompute::kFull);
  EXPECT_FALSE(fp8_ac->scenario.plan.recompute_early_stop);
  bool said_not = false;
  for (const auto& a : fp8_ac->assumptions)
    said_not |= a.rfind(
                    "checkpoint early stop not applied (FP8 linear layers save their inputs after their GEMM) from LLM "
                    "Foundry's H100 tables",
                    0) == 0;
  EXPECT_TRUE(said_not);
  // A record of the stack that no release default covers takes the stack's early stop, and says
  // whose (presets/stacks/llm-foundry-2023.json: Composer's non-reentrant checkpoint).
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/llmfoundry_benchmarks.json");
  ASSERT_TRUE(text.ok());
  std::string renamed = *text;
  const std::string from_id = "\"llmfoundry-h100-80g-mpt-7b-1024-8gpu\"";
  renamed.replace(renamed.find(from_id), from_id.size(), "\"llmfoundry-next-mpt-7b-1024-8gpu\"");
  std::vector<std::string> renamed_skipped;
  auto next = core::LoadPublishedRuns(renamed, &renamed_skipped);
  ASSERT_TRUE(next.ok());
  const auto* stack_default = Find(*next, "llmfoundry-next-mpt-7b-1024-8gpu");
  ASSERT_TRUE(stack_default);
  EXPECT_EQ(stack_default->stack, "llm-foundry-2023");
  EXPECT_EQ(stack_default->scenario.plan.recompute, core::Recompute::kFull);
  EXPECT_TRUE(stack_default->scenario.plan.recompute_early_stop);
  EXPECT_TRUE(Says(stack_default->assumptions,
                   "the MLP output projection and the residual are not rerun from stack "
                   "llm-foundry-2023 (its default)"));
  // NVFP4 maps (Llama 3.1 405B on GB300); GB300 maps to its preset.
  const auto nemo = Corpus("nemo_performance_summaries.json", &skipped_count, &skipped);
  const auto* fp4 = Find(nemo, "megatron-bridge-2606-dgx-gb300-llama3-1-405b-256gpu-nvfp4");
  ASSERT_TRUE(fp4);
  EXPECT_EQ(fp4->scenario.plan.precision, core::Dtype::kNvfp4);
  const auto* gb300 = Find(nemo, "megatron-bridge-2604-dgx-gb300-qwen3-30b-a3b-8gpu-mxfp8");
  ASSERT_TRUE(gb300);
  EXPECT_EQ(gb300->scenario.gpu.name, "gb300");
  EXPECT_EQ(gb300->scenario.cluster.name, "gb300-nvl72");
  EXPECT_EQ(gb300->stack, "megatron-bridge-2025");  // 26.04: its release's own stack
  // A named model whose printed layers and hidden size agree with a preset is that preset (GQA,
  // SwiGLU and vocabulary included); "DeepSeek-V3 671B (NeMo recipe)" names deepseek-v3.
  const auto papers = Corpus("papers_at_scale.json");
  const auto* d405 = Find(papers, "dgxc-v2503-llama31-405b-h100-576gpu-bf16");
  ASSERT_TRUE(d405);
  EXPECT_EQ(d405->scenario.model.name, "llama3-405b");
  EXPECT_EQ(d405->scenario.plan.cp, 2);
  EXPECT_EQ(d405->scenario.plan.vpp, 7);
  const auto* ds = Find(papers, "dgxc-v25051-deepseek-v3-671b-gb200-128gpu-bf16");
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->scenario.model.name, "deepseek-v3");
  // "Llama 4 Maverick 400B MoE (NeMo recipe)": the preset (its 48 layers and hidden 5120 agree),
  // not the flat MoE fields, whose every-layer top-1 MoE without a shared expert is another model;
  // the H100 layout's expert TP 4 as printed. 400,711,848,960 parameters = 24 dense layers x
  // (62,914,560 attention + 3 x 5120 x 16384) + 24 MoE layers x (62,914,560 + 129 x 3 x 5120 x
  // 8192 + 5120 x 128 router) + 2 x 202048 x 5120 + 97 x 5120 norms.
  const auto* mav = Find(papers, "dgxc-v25051-llama4-maverick-400b-h100-512gpu-bf16");
  ASSERT_TRUE(mav);
  EXPECT_EQ(mav->scenario.model.name, "llama4-maverick");
  EXPECT_EQ(core::CountParams(mav->scenario.model).total, 400'711'848'960);
  EXPECT_EQ(mav->scenario.model.MoeLayerCount(), 24);
  EXPECT_EQ(mav->scenario.plan.etp, 4);
  EXPECT_EQ(mav->scenario.plan.ep, 128);
  // Llama 3 Table 4 prints TFLOP/s per GPU, counted as PaLM does: 400 TFLOP/s over 2.6381e12
  // FLOPs per token (tests/core/stack_test.cc) = 151.6 tokens/s per GPU.
  const auto* l3 = Find(papers, "llama3-2024-t4-405b-16384gpu-seq8192");
  ASSERT_TRUE(l3);
  EXPECT_EQ(l3->stack, "llama3-2024");
  EXPECT_NEAR(l3->published, 400e12 / (6.0 * 405853388800.0 + 12.0 * 126 * 16384 * 8192), 1e-9);
  EXPECT_EQ(l3->scenario.plan.zero, 2);  // FSDP without resharding after forward
}

TEST(ValidationTest, CorpusRegressionBound) {
  // Today's level on all 579 mapped runs with the built-in defaults (the targets: median
  // <= 5%, p90 <= 10%, max <= 25%, every group's median <= 8%). Too fast on most runs (signed
  // median +4.5%); docs/validation.md lists the groups and the mechanisms they lack. GEMM wave
  // quantization took the median from 12.9% to 11.0% and the p90 from 42.4% to 40.5%; the full
  // node's slowest GPU (GPU presets' efficiencies with all 8 GPUs busy) to 10.1% and 35.6%; each
  // GPU's own burst measurement (H100, H800, GB200, B300 against their proxies) to 8.5% and 32.3%.
  std::vector<core::PublishedRun> all;
  for (const char* f : {"llmfoundry_benchmarks.json", "nemo_performance_summaries.json", "papers_at_scale.json",
                        "published.json", "published_beyond_tuning.json", "torchtitan_h100_2412.json",
                        "torchtitan_a100_2404.json", "bloom_prequel_2202.json", "nemo_long_sequence.json"}) {
    auto runs = Corpus(f);
    all.insert(all.end(), runs.begin(), runs.end());
  }
  const ValidationSummary v = ValidateRuns(all, core::Profile{});
  // 635 with BigScience's February 2022 topology search (29 rows of Megatron-DeepSpeed on Jean Zay,
  // +14..+55%, median +20.7%: median 7.4% -> 7.9%, p90 27.4% -> 30.0%; docs/validation.md) and
  // 606 with torchtitan's April 2024 A100 table (five rows, +4..+16%); 601 since records are given
  // the stack their source names or the default one (22 more: MT-NLG +16..+21%, the 2020 Megatron-LM README's A100 runs
  // -8..+5%, dgxc's JAX MaxText runs -9..-18% with Megatron-Core's defaults); median 7.2% -> 7.3%, p90 30.1% -> 27.5%.
  // 640 with five Llama 3.1 405B runs on PP 16 x VP 8 (126 layers on 128 chunks, the end chunks
  // the embedding and the loss alone: -13..-16%), 645 with five NeMo 24.07 rows that name their
  // model only (GPT3-5B +10%, GPT3-20B +15%, Nemotron-8B +17%, Nemotron-22B -1%, Nemotron-340B
  // -18%), 651 with the V100 runs (the 2020 Megatron-LM README's DGX-2 rows -14..-5%, Megatron-LM
  // 2019's DGX-2H rows +17%/+38%: docs/validation.md), 655 with Megatron-Bridge's four Kimi K2 runs
  // on 256 GB300s (-4.8% to +0.9%, with their recipe's pipeline layout and Muon), 669 with
  // dgxc-benchmarking's 14 Grok-1 runs (flat MoE fields, GeGLU, expert TP: -4.6% to +28.6%), 689
  // with Megatron-Bridge's 20 Nemotron 3 Nano runs (hybrid Mamba-2/MoE: +19% to +42%, too fast as
  // the pages' other MoE runs at one to four sequences per microbatch; median 8.0% -> 8.5%), 697 with
  // dgxc-benchmarking's 8 Llama 4 Maverick runs (the llama4-maverick preset: +2% to +14%), 709 with
  // Megatron-Bridge's 12 runs whose recipes offload activations (Llama 3 70B on 64 GB200s, 40
  // layers: +6% to +16%; on 64 GB300s, 20: -8% to +5%; 405B on 128 GB200s, 95: +19%; the copies
  // hide under the compute over NVLink-C2C; p90 30.7% -> 30.1%), 724 with Megatron-Bridge's 15
  // Nemotron 3 Super MXFP8 runs (latent MoE, 512 experts top-22, a shared MTP module; EP 64 in
  // the NVL72 racks, EP 8 on B300: GB300 +22..+30%, GB200 at TP 2 +55..+64%, B300 +49..+68%, too
  // fast as the pages' other MoE runs at one sequence per microbatch; B200, EP 64 over eight
  // nodes' network, -30% and called out of memory; median 8.5% -> 8.7%, p90 30.1% -> 32.9%), 725
  // with Nemotron 3.5 Lightning's GB200 run (+25.5%). The cross entropy as each stack runs it and
  // the embedding's dense weight gradient: median 8.7% -> 8.8% (341 runs closer, 225 further: the
  // Megatron-Bridge runs' Transformer Engine loss is cheaper than the 36 B per logit costed before,
  // and their MoE rows were too fast already); then 8.7% with every Megatron-Bridge run's bf16
  // gradients (release_defaults: the rows whose printed layout matches no traced variant, which
  // the cheapest-that-fits rule had given full recomputation with fp32 gradients) and the 26.02.01
  // GB300 Llama 3 70B MXFP8 row's layout as its release's only configuration sets it (-45% ->
  // -8.5%).
  // 8.66% with the DP gradients divided before their reduction where Megatron-Core's DDP and
  // FSDP do it (200 runs closer, 41 further); 8.74% with Megatron-Bridge's Transformer Engine loss
  // in place, as the TE its releases pin runs it (205 runs moved: dense 36 closer, 17 further; MoE,
  // too fast already, 41 closer, 117 further).
  // 743 with the 18 NVFP4 runs of Llama 3 70B and 3.1 405B (-35% to +13%; the 405B ones on GB200
  // at PP 16 x VP 8, one layer a chunk, -28..-35% as that layout's MXFP8 runs are -13..-16%, their
  // TP collectives now exposed): median 8.74% -> 8.82%.
  // 8.71% with pipeline sends costed link by link (core::PipelineLinkCounts: the pacing rank's
  // neighbour links each at its own tier; 24 runs moved, 16 closer: the GB200 405B rows at a PP
  // stride of 16 in 72-GPU domains, one link across and one inside, MXFP8 VP 8 -12..-15% ->
  // -7..-10%).
  // 760 with NeMo's long-sequence page (17 runs, all too fast: Llama 2 7B on H100 +11% at 4K,
  // +29% at 16K, +40..+48% from 32K to 1024K tokens; Llama 3 8B on B200 +16..+31%): median
  // 8.71% -> 8.95%, p90 33.9% -> 34.2% (docs/validation.md).
  // 8.84% (p90 33.7%) when the Blackwell runs in containers before cuDNN 9.17 (NeMo 25.04,
  // dgxc-benchmarking v25.05.01, Megatron-Bridge 25.09: 52 runs, all too fast, all but one closer)
  // read cuDNN 9.13's measured attention (model.attention_kernel cudnn-9.13: the B200 long-sequence
  // rows +16..+31% -> +8..+19%) and Llama 3's stack FlashAttention-2 (its 128K row +36% -> +7%).
  // 8.78% when dgxc-benchmarking's rows took their NeMo recipes' bf16 gradients and token dropping
  // (presets/launches/dgxc-benchmarking-v25051.json: 49 runs moved, 4 closer, Nemotron-4 15B and
  // Llama 3.1 405B BF16 on H100 -22.0/-21.6% -> +0.9/+4.2% now that they fit without recomputation;
  // the rest, too fast already, 0.1-6 points further; max 175% -> 182%, DeepSeek-V3 on GB200).
  // 8.32% (p90 30.6%) when the runs whose launch turned cuDNN's fused attention off read
  // FlashAttention-2 (NeMo-Framework-Launcher 24.01-24.07's NVTE_FUSED_ATTN: 0; dgxc v25.03's
  // Nemotron-4 340B and Grok-1 configure.sh): 37 runs moved, 32 closer, NeMo 24.03's long-sequence
  // H100 rows +11..+48% -> -5..+5%.
  // 8.1% when dgxc-benchmarking v25.03's MaxText runs took their configure.sh's remat policy
  // (save_qkv_proj, costed as full recomputation before): the 10 Llama 3 70B rows -10..-18% ->
  // -2..-12%.
  // 823 with the prequel's sizing runs of 02-25 to 02-28 (63 rows, scripts/bloom_prequel_corpus.py:
  // TP 2 to 8, PP 2 to 24, fp16 and the BF16_Optimizer; median +7.9%, all but three too fast).
  // 7.65% -> 7.55% with a tied embedding's two copies all-reduced over the pipeline's ends once a
  // step (172 runs of the whole corpus moved, 141 closer: BigScience's rows up to 2.3 points).
  // Under 7.60% -> 7.62% when the NeMo configs' own loss and gradient dtype were read (presets/launches
  // dgxc-benchmarking*.json and nemo-launcher-2407.json release_defaults: cross_entropy_loss_fusion
  // in the Llama 3/3.1, Nemotron and every NeMo 2.0 recipe, Megatron-Core's native fused loss;
  // Apex DistributedFusedAdam's grad_sync_dtype bf16 in dgxc v25.03's Llama 3.1 and GPT-3 175B):
  // of all 921 runs 112 moved, 9 closer, the rest, too fast already, 0.1-3 points faster.
  // 830 with dgxc v25.05.01's 7 Nemotron-H 56B rows (+6.9% to +12.2%, as the other NeMo H100 rows),
  // 858 with v25.04.02's 28 Llama 3.1 rows (-7.0% to +4.3%), 882 with its 24 Nemotron-4 rows
  // (-3.3% to +6.6%), 910 with v24.11.1's 28 Llama 3.1 rows (0.0% to +16.2%: NeMo 24.09 ran the
  // v25.03 configs up to 5% slower, 10% at 405B FP8 on 2,304 GPUs, and 2% faster at 405B BF16), 926
  // with its 16 Nemotron-4 15B rows (+4.3% to +9.5%), 936 with its 10 GPT-3 175B rows (+5.8% to
  // +20.1%, the FP8 steps at 512 and 1,024 GPUs 9-14% longer than at 128), 939 with DeepSpeed's
  // three 2022 Azure runs, their checkpoints in host memory (175B -3.9%, 1T +23.0%, 2T +32.4%).
  ASSERT_EQ(v.all.n, 939u);
  EXPECT_LE(v.all.median_abs_error, 0.0763);
  // p90 42.5% -> 44.0% when the Megatron-Bridge runs took their recipes' bf16 gradients (their DP
  // reduction halves, and gpt-oss-120b on B200/B300, already too fast, went from +41..61% to
  // +61..76%; docs/validation.md lists what those runs lack), then 42.4% with torchtitan's eager
  // elementwise kernels, then 40.5% with wave quantization, 35.6% with the full node's pace and
  // 32.3% with each GPU's own burst measurement; 31.9% with NCCL's ring for every all-gather
  // and reduce-scatter; 32.4% when Llama 3's runs took the paper's pipeline layout (one layer per
  // model chunk, V = 8: the two 8K rows -16%/-32% -> +5%/+6%, the 128K CP row, whose -8% had
  // come from a 94% bubble, +50%: docs/validation.md); 31.3% (median 8.3% -> 8.2%) with compute at
  // the slowest GPU's pace; 30.0% -> 29.1% (median 7.9% -> 7.8%) with torchtitan's repeat_kv;
  // 26.4% when Jean Zay's Omni-Path ports carry what NCCL reached through one (5.1 GB/s each way,
  // BigScience's benchmark: the 31 Megatron-DeepSpeed rows on it, median +20% -> +13%); 30.9% with
  // the 20 Nemotron 3 Nano runs (all but one above the old p90's 26.5%: the MoE group's too-fast
  // runs, docs/validation.md); 32.9% with the 15 Nemotron 3 Super runs (the same pattern); 32.3%
  // with the Megatron-Bridge runs' bf16 gradients and the corrected GB300 row (above); 33.2% with
  // their Transformer Engine loss in place (the MoE rows 1-5 points faster, Qwen3-30B-A3B on 16
  // H100s without the full recomputation it had been given); 33.9% (mean 15.31% -> 15.24%) with
  // cuDNN's measured attention on Blackwell (cudnn-frontend's training SDPA benchmark, GB200 and
  // GB300, B200 and B300 from them) instead of the profile's 0.60 / 0.50: 224 runs moved, 117
  // closer (GB300 dense -7.8% -> -5.8%, gpt-oss's 128-token windows at their measured speed 1-8
  // points closer), the Blackwell MoE and GB200 dense rows, too fast already, slightly faster.
  // 30.6% with FlashAttention-2 where the launch turned cuDNN's attention off (above); 31.9%
  // when BigScience's topology search of 2022-02-21 to 02-24 took the 16-bit gradients its source
  // dates (chronicles-prequel.md: the BF16_Optimizer's fp32 accumulation began with the 02-28
  // tables; presets/launches/bigscience-tr11-prequel.json): its 29 rows, too fast already, 2-6
  // points faster (median +13.1% -> +17.3%).
  EXPECT_LE(v.all.p90_abs_error, 0.319);
  // 4 runs that ran are called out of memory (75 before FP8 plans kept their linear inputs in
  // one byte, 41 before the recipes' bf16 gradients and module-level recomputation, 6 before
  // torchtitan's per-op checkpointing): two token-drop MoE runs and Nemotron-4 340B at 8k
  // (docs/validation.md).
  // 8 since the DeepSeek-V3 runs take their recipes' pipeline layouts and MTP module: on four
  // GB300 rows (PP 2 x VPP 8, mbs 2, "Et*4|(t*4|)*14tmL") rank 0 holds 32 of the 61 layers and is
  // predicted at 289.3 GB of 288 with the recipe's bf16 Adam moments (299.8 GB with fp32 ones;
  // the default split's 31 layers were at 99.9%): over by 1.3 GB, within the 9.0 GB the assumed
  // 5% fragmentation adds (docs/validation.md).
  // 7 since Megatron-Bridge 25.09's runs take their recipes' FP8 (Qwen3-235B-A22B on 64 B200s fits).
  // 8 since Llama 3's runs take the paper's layout: the 8,192-GPU 8K row, 32 microbatches of the
  // interleaved schedule with no checkpointing, at 87.1 GB of 85.9: over by 1.2 GB, within the
  // 3.8 GB the assumed 5% fragmentation adds.
  // 6 since dgxc-benchmarking v25.03's Nemotron-4 340B rows take their config's optimizer
  // (nemotron4-340b-synth.yaml: Apex DistributedFusedAdam with dtype and grad_sync_dtype bf16,
  // presets/launches/dgxc-benchmarking.json): the 128-GPU rows fit at 68 GiB (102 GB with fp32).
  // 8 with Nemotron 3 Super's two B200 rows (TP 1, EP 64, selective recomputation of moe_act
  // and layernorm): 197.7 GB of 192, over by 5.7 GB, within the 6.4 GB the assumed 5%
  // fragmentation adds; their MXFP8 recipe's fp8_param_gather and
  // reuse_grad_buf_for_mxfp8_param_ag (Megatron-Bridge mixed_precision.py bf16_with_mxfp8_mixed)
  // are not modelled. 6 since the Megatron-Bridge runs hold their Transformer Engine loss in place
  // (2 B per logit, not 6): those two rows fit at 171.5 GB. 7 with the NVFP4 runs: 26.02.01's
  // GB300 Llama 3 70B row prints TP 1, PP 1 and micro batch 2, no variant of its release's recipes
  // (its MXFP8 sibling's printed layout was a misprint too), and is called out of memory at 305 GB
  // of 288.
  // 0 since the fit verdict calls a plan out of memory only where a stage's peak allocated, CUDA
  // context and NCCL buffers are over the GPU (2026-12-01, core::FitVerdict; the caching allocator
  // frees its cached blocks and retries before it fails): the 8,192-GPU Llama 3 8K row, the one
  // left, is tight, 83.5 GB of 85.9 without the 3.8 GB of assumed fragmentation (87.3 with it).
  EXPECT_EQ(v.all.out_of_memory, 0u);
  size_t tight = 0;
  for (const auto& r : v.records) {
    tight += r.tight ? 1 : 0;
    if (r.id.rfind("dgxc-v2503-maxtext-", 0) == 0) EXPECT_TRUE(r.fits) << r.id;  // Q/K/V kept: 68-77 GB
    if (r.id == "llama3-2024-t4-405b-8192gpu-seq8192") {
      EXPECT_FALSE(r.fits);  // not with the allocator's whole reserve
      EXPECT_TRUE(r.tight);
      EXPECT_FALSE(r.OutOfMemory());
      EXPECT_GT(r.memory_gib, 80.0);  // on the GPU with the reserve: over 80 GiB
    }
  }
  EXPECT_EQ(tight, 1u);
  // The DeepSeek-V3 runs: the launch file's layout and MTP module (scripts/megatron_bridge_layouts.py),
  // and a run named without MTP trains none.
  for (const auto& run : all) {
    const core::PlanSpec& p = run.scenario.plan;
    if (run.id == "megatron-bridge-2604-dgx-gb300-deepseekv3-256gpu-mxfp8") {
      std::vector<int64_t> want(16, 4);
      want.back() = 1;
      EXPECT_EQ(p.stage_layers, want);
      EXPECT_EQ(run.scenario.model.mtp_layers, 1);
      EXPECT_EQ(p.dtypes.optimizer_states, core::Dtype::kBf16);  // the precision-aware optimizer
    }
    if (run.id == "megatron-bridge-2511-dgx-gb300-deepseekv3-w-o-mtp-256gpu-fp8-mx")
      EXPECT_EQ(run.scenario.model.mtp_layers, 0);
    // Kimi K2 (Megatron-Bridge v0.3.0's KimiK2Provider: 1.026T parameters, 32.9B active): its
    // recipe's PP 4 x VP 4 layout (_get_kimi_k2_pipeline_layout: the embedding and four layers,
    // four layers in each of 14 chunks, one layer and the loss) and Muon (--optimizer_type's
    // default), whose one momentum buffer makes it fit in 288 GB where AdamW's two would not.
    if (run.id == "megatron-bridge-2606-dgx-gb300-kimi-k2-256gpu-mxfp8") {
      std::vector<int64_t> want(16, 4);
      want.back() = 1;
      EXPECT_EQ(p.stage_layers, want);
      EXPECT_EQ(p.optimizer, core::Optimizer::kMuon);
      EXPECT_EQ(run.scenario.model.name, "kimi-k2");
    }
    // Runs whose container predates cuDNN 9.17 read its Blackwell attention as it was (the record's
    // model.attention_kernel); the same stack's later runs, and its Hopper runs, the current one.
    if (run.id == "nemo-2504-long-seq-dgx-b200-llama3-8b-64k-16gpu-cp4-fp8" ||
        run.id == "megatron-bridge-2509-dgx-gb200-llama3-8b-8gpu" ||
        run.id == "dgxc-v25051-llama31-405b-gb200-128gpu-bf16")
      EXPECT_EQ(run.scenario.model.attention, core::AttentionImpl::kCudnn913) << run.id;
    if (run.id == "megatron-bridge-2511-dgx-gb200-llama3-8b-8gpu-fp8-cs" ||
        run.id == "dgxc-v2503-nemotron4-15b-h100-16gpu-fp8")
      EXPECT_EQ(run.scenario.model.attention, core::AttentionImpl::kFlash) << run.id;
    if (run.id.rfind("llama3-2024-", 0) == 0) EXPECT_EQ(run.scenario.model.attention, core::AttentionImpl::kFlash2);
    // MLA on Blackwell under Transformer Engine before 2.5 (nemo:25.04.01 pins bee4649c, which has
    // no fused MLA attention on sm100): the unfused kernel, with core_attn recomputed as the launch
    // script passes it; the same release's H100 run keeps a fused kernel and recomputes mla_up_proj.
    if (run.id.rfind("dgxc-v25051-deepseek-v3-671b-gb200-", 0) == 0) {
      EXPECT_EQ(run.scenario.model.attention, core::AttentionImpl::kNaive) << run.id;
      EXPECT_EQ(p.recompute, core::Recompute::kSelective) << run.id;
      EXPECT_EQ(p.recompute_modules, core::ModuleBit(core::RecomputeModule::kCoreAttn)) << run.id;
    }
    if (run.id == "dgxc-v25051-deepseek-v3-671b-h100-1024gpu-bf16") {
      EXPECT_EQ(run.scenario.model.attention, core::AttentionImpl::kFlash);
      EXPECT_EQ(p.recompute, core::Recompute::kSelective);
      EXPECT_EQ(p.recompute_modules, core::ModuleBit(core::RecomputeModule::kMlaUpProj));
    }
    // Runs whose launch turned cuDNN's fused attention off (NVTE_FUSED_ATTN=0) read FlashAttention-2:
    // NeMo-Framework-Launcher 24.01-24.07's config.yaml for every run it launched, dgxc-benchmarking
    // v25.03's configure.sh for Nemotron-4 340B and Grok-1 (the record's model.attention_kernel).
    if (run.id == "nemo-2403-long-seq-dgx-h100-llama2-7b-64k-64gpu-cp2-fp8" ||
        run.id == "nemo-2407-dgx-h100-llama3-8b-8gpu-fp8" || run.id == "dgxc-v2503-nemotron4-340b-h100-128gpu-fp8" ||
        run.id == "dgxc-v2503-grok1-314b-h100-512gpu-bf16")
      EXPECT_EQ(run.scenario.model.attention, core::AttentionImpl::kFlash2) << run.id;
    // dgxc-benchmarking v25.03's MaxText runs recompute as their configure.sh sets (remat_policy
    // save_qkv_proj, the record's parallel.recompute_modules), with the Q/K/V projections kept.
    if (run.id.rfind("dgxc-v2503-maxtext-", 0) == 0) {
      EXPECT_EQ(p.recompute, core::Recompute::kSelective) << run.id;
      EXPECT_EQ(p.recompute_modules, core::ModuleBit(core::RecomputeModule::kSaveQkvProj)) << run.id;
      // "FSDP=128" on 512 GPUs and more: MaxText's fsdp axis over 16 nodes, the rest data-parallel.
      const bool hsdp = p.gpus >= 512;
      EXPECT_EQ(p.sharding, hsdp ? core::Sharding::kHsdp : core::Sharding::kFsdp) << run.id;
      EXPECT_EQ(p.hsdp_shard_size, hsdp ? 128 : 0) << run.id;
      EXPECT_EQ(p.zero, 3) << run.id;
    }
    if (run.id == "dgxc-v2503-nemotron4-340b-h100-128gpu-bf16") {
      EXPECT_EQ(p.dtypes.grads, core::Dtype::kBf16);
      EXPECT_EQ(p.dtypes.master_weights, core::Dtype::kBf16);
      EXPECT_EQ(p.dtypes.optimizer_states, core::Dtype::kBf16);
    }
    // dgxc-benchmarking v25.05.01 (presets/launches/dgxc-benchmarking-v25051.json): NeMo's
    // performance recipes reduce gradients in bf16 (pretrain_performance_optimizations), DeepSeek-V3's
    // excepted; its three MoE workloads drop tokens at capacity factor 1.0 (MegatronTokenDropCallback).
    // With 2-byte gradients Nemotron-4 15B BF16 fits without recomputation (NeMo's CSV:
    // recompute_layers 0), where 4-byte ones had put it over 80 GB and full recomputation on it.
    if (run.id == "dgxc-v25051-nemotron4-15b-h100-16gpu-bf16" ||
        run.id == "dgxc-v25051-llama31-405b-h100-512gpu-bf16") {
      EXPECT_EQ(p.dtypes.grads, core::Dtype::kBf16) << run.id;
      EXPECT_EQ(p.recompute, core::Recompute::kNone) << run.id;
    }
    if (run.id == "dgxc-v25051-deepseek-v3-671b-gb200-128gpu-bf16") EXPECT_EQ(p.dtypes.grads, core::Dtype::kFp32);
    // NeMo 24.07's Nemotron-340B: its launcher config's bf16 optimizer state and selective
    // recomputation (presets/launches/nemo-launcher-2407.json), with which it fits.
    if (run.id == "nemo-2407-dgx-h100-nemotron-340b-128gpu-fp8") {
      EXPECT_EQ(p.recompute, core::Recompute::kSelective);
      EXPECT_EQ(p.dtypes.grads, core::Dtype::kBf16);
      EXPECT_EQ(p.dtypes.master_weights, core::Dtype::kBf16);
      EXPECT_EQ(p.dtypes.optimizer_states, core::Dtype::kBf16);
    }
    if (run.id == "dgxc-v25051-grok1-314b-gb200-128gpu-fp8" ||
        run.id == "dgxc-v25051-deepseek-v3-671b-gb200-128gpu-bf16" ||
        run.id == "dgxc-v25051-llama4-maverick-400b-h100-512gpu-bf16") {
      ASSERT_TRUE(run.scenario.model.moe.has_value()) << run.id;
      EXPECT_DOUBLE_EQ(run.scenario.model.moe->capacity_factor, 1.0) << run.id;
    }
    // Llama 3 §3.3.2: the first chunk holds the embedding alone, the last the output layer and
    // loss alone, one layer in every other: 126 + 2 chunks on PP 16 are V = 8 ("E|(t|)*126L").
    if (run.id == "llama3-2024-t4-405b-16384gpu-seq8192") {
      std::vector<int64_t> want(128, 1);
      want.front() = 0;
      want.back() = 0;
      EXPECT_EQ(p.vpp, 8);
      EXPECT_EQ(p.schedule, core::Schedule::kInterleaved);
      EXPECT_EQ(p.stage_layers, want);
    }
  }
  // Per stack, today's medians (+0.5 points): the bound each change must keep. torchtitan's rose
  // from 36.4% to 37.9% when FlashAttention-2 took its measured curve by sequence: at 32k and more
  // tokens per rank it runs faster (16k's 328 TFLOP/s) than the fixed 4k figure did, and the
  // long-context CP rows, already too fast, lack CP's own costs (docs/validation.md); it fell to
  // 31.5% with its FSDP under PP, per-op checkpointing and eager elementwise kernels. GEMM wave
  // quantization lowered every stack's but Llama 3's (8.7% -> 10.8%: its three 405B runs, already
  // too slow, slowed further; 12.6% with the full node's slowest GPU and 16.4% with the H100's own
  // MAMF: the paper does not print its interleaving, so its runs are mapped as 1F1B with a 31-47%
  // bubble, docs/validation.md). torchtitan's 25.0% -> 25.8% when the parameter all-gather of
  // its FSDP under PP hid under the first forward (FSDP2's prefetch), where it was exposed.
  // Llama 3's 16.4% -> 6.4% with the paper's layout (V = 8); its 128K row is +50%.
  // DeepSpeed ZeRO-3 2021's 26.9% -> 23.5% with NCCL's ring for its all-gathers. With compute at
  // the slowest GPU's pace: LLM Foundry 7.2% -> 6.6%, Megatron-Core 9.9% -> 9.1%, torchtitan 24.5%
  // -> 22.5%, Megatron-LM 2021 3.5% -> 2.2% and 2022 7.6% -> 4.5%, MegaScale 10.5% -> 5.9%,
  // DeepSpeed ZeRO-3 23.5% -> 19.6%, Llama 3 5.3% -> 3.7%, Megatron-DeepSpeed 21.9% -> 17.6%.
  // Megatron-LM 2021's 2.2% -> 2.3% when the 2020 Megatron-LM README's nine A100 runs took it by
  // their source (-8% to +5% with that code's micro batch, its --batch-size being per model
  // instance; -15% to -32% read as micro batch 1). Megatron-DeepSpeed 2022's 17.2% -> 15.9% on
  // Jean Zay's own network (4 Omni-Path links per node, jean-zay-a100), then 19.8% with the 29
  // topology-search rows of February 2022 (all too fast, median +20.7%; docs/validation.md), then
  // 13.4% with Jean Zay's ports at the 5.1 GB/s NCCL reached through one (presets/clusters).
  // DeepSpeed ZeRO-3 2021's 17.0% -> 15.6% with its reduce-scatters exposed (stage3.py's
  // torch.cuda.synchronize() in every fetch; presets/stacks/deepspeed-zero3-2021.json).
  // torchtitan's 16.9% (with its April 2024 A100 rows) -> 13.8% with FSDP2's copy-out and copy-in,
  // 12.9% with repeat_kv (its Llama copies K and V to every query head before SDPA: the copies,
  // and the 405B CP rows' all-gathers over the network at 128 heads, +45..+70% -> +24..+36%).
  // Megatron-LM 2021's 2.3% -> 3.0% with the V100 runs its source names (the 2020 README's DGX-2
  // rows -14..-5%, Megatron-LM 2019's DGX-2H rows +17%/+38%, whose code predates the fused kernels
  // the stack assumes: docs/validation.md). Megatron-Core's 9.0% -> 10.2% with the 20 Nemotron 3
  // Nano runs (hybrid Mamba-2/MoE, +19% to +42%). Megatron-Core's 10.5% -> 10.0% with cuDNN
  // 9.13's Blackwell attention for the runs in containers before cuDNN 9.17; Llama 3's 3.4% ->
  // 0.7% with FlashAttention-2 (its rows +2.3/+3.4/+35.8% -> -0.4/+0.7/+7.4%). Megatron-DeepSpeed's
  // 13.2% -> 16.9% when the prequel's topology search took the 16-bit gradients its date says (above),
  // 11.5% with its sizing runs of 02-25 to 02-28 (63 rows at TP 2 to 8, median +7.9%), 8.9% when the
  // forks' backward TP all-reduce is blocking as their code runs it (tp_overlap none: 97 runs closer).
  // Megatron-Bridge 25.11 to 26.08 as their own stack (2026-12-05, the same predictions): its 230
  // runs 12.7% (the MoE and Blackwell rows, too fast), the 378 left with Megatron-Core's of 2024 5.0%.
  const std::map<std::string, double> stack_bound = {{"llm-foundry-2023", 0.071}, {"megatron-core-2024", 0.051},
                                                     {"torchtitan-2024", 0.133},  {"megatron-bridge-2025", 0.128},
                                                     {"megatron-lm-2021", 0.035}, {"megatron-lm-2022", 0.05},
                                                     {"megascale-2024", 0.064},   {"deepspeed-zero3-2021", 0.161},
                                                     {"llama3-2024", 0.012},      {"megatron-deepspeed-2022", 0.090}};
  for (const auto& g : v.groups)
    if (g.dimension == "stack") {
      auto it = stack_bound.find(g.value);
      ASSERT_NE(it, stack_bound.end()) << g.value;
      EXPECT_LE(g.summary.median_abs_error, it->second) << g.value;
    }
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

TEST(ValidationTest, MeasuredMemoryPeaksAgainstTheMemoryModel) {
  // tests/data/memory/memory_measured.json (a copy of shared/validation's): 34 measured per-GPU
  // peaks; 31 map (the three MoE CI runs name no MoE model). torchtitan logs the allocator's peak
  // reserved bytes, Megatron-LM's CI its peak allocated bytes, and each is compared with the same
  // kind of prediction.
  std::vector<std::string> skipped;
  auto records = MemoryCorpus("memory_measured.json", &skipped);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 34u);
  for (const auto& rec : *records) {
    if (rec.id == "torchtitan-2412-t5-405b-512gpu-3d-interleaved1f1b") {
      EXPECT_EQ(rec.scenario.plan.vpp, 2);
      EXPECT_EQ(rec.scenario.plan.schedule, core::Schedule::kInterleaved);
    }
    if (rec.id != "megatron-ci-gpt3-mcore-tp1-pp4-dgx-h100") continue;
    EXPECT_TRUE(rec.last_stage);                                           // measured.which_rank: "last PP stage"
    EXPECT_EQ(rec.scenario.model.attention, core::AttentionImpl::kNaive);  // notes: "local impl"
  }
  // Every record maps: the three MoE CI runs by the architecture they state (model.moe, MLA,
  // layer_pattern, mtp_layers; the pipeline layout "Et*3|(tt|)*6tmL" and the recompute modules
  // they quote).
  ASSERT_EQ(skipped.size(), 0u);
  for (const auto& rec : *records) {
    if (rec.id != "megatron-ci-gpt3-mcore-te-tp2-pp2-ep4-etp1-selective-recompute-experimental-dgx-h100") continue;
    const core::ModelSpec& m = rec.scenario.model;
    ASSERT_TRUE(m.moe && m.mla);
    EXPECT_EQ(m.moe->experts, 32);
    EXPECT_EQ(m.moe->first_dense_layers, 3);  // "layers 0-2 dense"
    EXPECT_EQ(m.mtp_layers, 1);
    EXPECT_EQ(rec.scenario.plan.vpp, 4);
    EXPECT_EQ(rec.scenario.plan.stage_layers, (std::vector<int64_t>{3, 2, 2, 2, 2, 2, 2, 1}));
    EXPECT_FALSE(rec.scenario.plan.Recomputes(core::RecomputeModule::kCoreAttn));
    EXPECT_TRUE(rec.scenario.plan.Recomputes(core::RecomputeModule::kMlaUpProj));
  }
  const ValidationSummary v = ValidateMemory(*records);
  size_t reserved = 0;
  for (const auto& r : v.records) {
    reserved += r.printed.find("reserved") != std::string::npos;
    // Megatron-LM CI's GPT 7B memory-speed runs (TP 4 or PP 4, distributed optimizer): within 5%.
    if (r.id.rfind("megatron-ci-gpt3-7b-", 0) == 0) EXPECT_LT(std::fabs(r.error), 0.05) << r.id;
  }
  EXPECT_EQ(reserved, 18u);  // the torchtitan rows
  // Today's level (the target: within 10%): median 9.5%, p90 27.8%. Before
  // torchtitan's FSDP under PP kept the stage unsharded, its per-op checkpointing and upcast
  // cross entropy were modelled and its pipeline took as many microbatches as stages: median
  // 32.3%, p90 58.1%, 405B at TP 8 x PP 8 19 GiB against 82.5 measured (now 62.7); docs/memory.md.
  // Then 4.6% / 20.5% when Megatron-Core's local layer spec ran unfused attention, the CI peaks
  // were compared on the last stage's rank they were logged on, and the fused cross entropy held
  // the bf16 logits beside its fp32 buffer (6 B per logit): every Megatron CI record within 7.5%.
  // Then 2.8% / 17.3% when torchtitan's eager layer kept what its model code saves (the fp32 norm
  // input, repeat_kv's K/V copies, SDPA's output and its copy, silu's output: 54 T*h bytes per layer
  // against the fused 34, measured 52 on an H200, core/memory.cc): +1.3 GiB on the rows below,
  // the layer being recomputed in the backward at the peak.
  // Then 3.2% / 17.8% when the records' "Float8" (torchao) was read as FP8, the precision they ran
  // (their linears' inputs in one byte: the 70B 2D rows -12.7% / -7.2% -> -9.0% / -3.2%, the
  // 405B rows 0.5 GiB smaller), with the per-op policy saving the float8 matmuls' outputs (8B:
  // +0.7% and -0.4%; -31% and -40% had they been recomputed).
  // Then 3.2% / 15.0% when PyTorch's pipeline stage (torch before 2.8) kept every microbatch's
  // output to the step's end and a gradient receive buffer per microbatch (keep_pp_outputs): on
  // the 405B PP rows' last rank 7 x 2 B x 4 x 8192 x 16032 = 7.35 GB of logits more, on the others
  // 2 x 8 x 4 x 8192 x 16384 x 2 B / 8 = 2.15 GB (1F1B -24.6% -> -22.0%, the CP rows -17..-27% ->
  // -15..-24%); interleaved holds both on its last rank: -11.6% -> +0.6%.
  // Then 4.2% / 11.2% when FSDP2 kept no bf16 shard beside its fp32 one and its sharded gradients
  // sat in the reduce-scatter stream's pool (PyTorch PR 129721): the 405B PP rows +2.95 GiB
  // reserved (405.9e9 / 64 x 4 B / 8, the reduce-scatter outputs beside the unsharded
  // accumulators), -18.5% / -10.7..-20.8%; the FSDP rows 2 B / FSDP degree less (the 8B rows
  // -1.9 GiB, -5.7% -> -7.9%). Then 3.3% / 11.2% with the all-gather copy-in stream's pool
  // holding the root module's flat buffer (the 8B rows +1.55 GiB: -7.9% -> -6.0%). Then 3.5% /
  // 11.2% with the router's probabilities where the CI's Megatron-Core (0.13 on) applies them
  // (PlanSpec::moe_probs): its SwiGLU MoE runs keep no experts' output (the fused weighted SwiGLU:
  // the two TP 2 x PP 2 x EP 4 runs, at the median, -3.3% / -3.4% -> -5.0% / -5.3%) and its GELU one
  // keeps the activation's output instead (below). Then 3.3% / 9.0% (max 18.9%) when DTensor's TP
  // (PlanSpec::dtensor_tp: torchtitan's F.linear on the all-gathered input, which autograd saves
  // whole) kept its column-parallel linears' and its head's inputs gathered, where Megatron-Core
  // keeps them sequence-sharded and gathers again: the 70B 2D rows -9.3% / -3.5% -> -4.2% / +1.9%
  // (float8 inputs, 2 x 7/8 x 16 x 8192 x 8192 x 1 B in the recomputed layer, and the bf16 head
  // input, 7/8 x 2 B x the same), the 405B rows +1.7 GiB each (below).
  EXPECT_LE(v.all.median_abs_error, 0.034);
  EXPECT_LE(v.all.p90_abs_error, 0.091);
  for (const auto& r : v.records) {
    if (r.id == "torchtitan-2412-t1-8b-8gpu-fsdp-compile-float8") EXPECT_NEAR(r.error, 0.002, 0.01);
    // 62.2 GiB before the pipeline runtime's kept tensors, then its first stage (+2.15 GB and 5% of
    // it as fragmentation): 64.3 GiB; with FSDP2's reduce-scatter pool (+3.17 GB) 67.2 GiB; with
    // DTensor's gathered linear inputs (mbs 4 x 8192 x 16384: the recomputed layer's q/k/v and
    // w1/w3 inputs in float8, 2 x 7/8 x 537 MB, and the head's in bf16, 7/8 x 1.07 GB) 68.9 GiB
    // against 82.5 measured.
    if (r.id == "torchtitan-2412-t5-405b-512gpu-3d-1f1b") EXPECT_NEAR(r.predicted, 68.9, 0.1);
    // "Interleaved 1F1B" without a printed degree: torchtitan's 2 stages per rank (generate_split_points
    // at 9dec370), 16 chunks of 7-8 layers, more microbatch-chunks in flight than 1F1B: 62.2 -> 64.2 GiB;
    // the last rank's kept logits and its other stage's kept outputs and gradient buffers: 73.1;
    // FSDP2's reduce-scatter pool: 76.0; DTensor's gathered linear inputs: 77.9 against 72.7 measured.
    if (r.id == "torchtitan-2412-t5-405b-512gpu-3d-interleaved1f1b") EXPECT_NEAR(r.predicted, 77.9, 0.1);
    // The small MoE run's allgather token dispatcher gathers every EP rank's tokens (its
    // buffers are not modelled): -6.9% (-14.9% before Transformer Engine's workspaces: 5 x 32 MiB
    // with its grouped GEMM on an H100; -9.9% before its GELU experts kept the activation's output
    // for the probabilities' weighting, 2 B x 8,192 token slots x 1,024 = 16.8 MB a layer, in place
    // of the experts' output, 2 B x 8,192 x 512: +101 MB over 12 layers). The two
    // DeepSeek-V3-like proxies (MLA, MoE, MTP): -3.6% and -3.7%.
    if (r.id == "megatron-ci-gpt3-moe-mcore-te-ep8-resume-torch-dist-dist-optimizer-dgx-h100")
      EXPECT_NEAR(r.error, -0.069, 0.01);
    else if (r.id.rfind("megatron-ci-", 0) == 0) EXPECT_LT(std::fabs(r.error), 0.08) << r.id;
    // The local-spec CI runs (notes: "local impl"): unfused attention, and the last stage's rank.
    if (r.id == "megatron-ci-gpt3-mcore-tp1-pp4-dgx-h100")
      EXPECT_NE(r.conversion.find("last stage"), std::string::npos) << r.conversion;
    // Llama 3.1 8B FSDP on 8 GPUs, selective per-op checkpointing: 82.4 GiB reserved measured;
    // 77.7 before FSDP2's shards were the master weights (2 B x 8.03e9 / 8 = 1.87 GiB less), 75.9,
    // and with the all-gather pool's root buffer (1.665e9 B) 77.4.
    if (r.id == "torchtitan-2412-t1-8b-8gpu-fsdp") EXPECT_NEAR(r.predicted, 77.4, 0.1);
  }
}

TEST(ValidationTest, Fsdp2PeaksMeasuredOnAnH200AllocatedAndReserved) {
  // tests/data/memory/h200_probe_memory.json: scripts/gpu_probes.py memory on a lent H200
  // (tests/data/gpu/h200-2026-11-28/memory.json and memory_default8.json, each its process's first
  // configuration): torchtitan's 2024 Llama layer code with Llama 3 8B dimensions and 2 or 8
  // layers, FSDP2 over one rank (bf16 params, fp32 reduce), fused AdamW, 8,192 tokens, no
  // checkpointing; the third step's peaks, allocated and reserved. The allocated peaks: fp32
  // parameters (4 B) and AdamW's moments (8 B) beside the activations and the upcast loss's 12 B per
  // logit, the gradients freed by zero_grad before the peak: 1,486,901,248 x 12 B = 17.8 GB of
  // states for 2 layers, 33.5 GB for 8. The reserved peaks hold the fp32 gradients besides,
  // 5.9 GB and 11.2 GB, idle in the reduce-scatter stream's pool.
  std::vector<std::string> skipped;
  auto records = MemoryCorpus("h200_probe_memory.json", &skipped);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 4u);
  ASSERT_EQ(skipped.size(), 0u);
  const ValidationSummary v = ValidateMemory(*records);
  ASSERT_EQ(v.records.size(), 4u);
  for (const auto& r : v.records) {
    EXPECT_EQ(r.stack, "torchtitan-2024") << r.id;
    // Allocated: 33.9 and 58.3 GiB measured, 32.7 and 57.5 predicted (+21% and +25% when the bf16
    // shard and the gradients were counted at the peak).
    if (r.id == "meshplan-h200-2611-fsdp2-1rank-llama8b-2layers-allocated") EXPECT_NEAR(r.error, -0.035, 0.01);
    if (r.id == "meshplan-h200-2611-fsdp2-1rank-llama8b-8layers-allocated") EXPECT_NEAR(r.error, -0.014, 0.01);
    // Reserved: 44.6 and 73.2 GiB measured, 40.6 and 70.7 predicted with the all-gather copy-in
    // pool's root buffer ((1,050,677,248 - 218,112,000) x 2 B idle; 39.0 and 69.1 without); 3.1
    // and 1.9 GB not explained (docs/memory.md).
    if (r.id == "meshplan-h200-2611-fsdp2-1rank-llama8b-2layers-reserved") EXPECT_NEAR(r.error, -0.090, 0.01);
    if (r.id == "meshplan-h200-2611-fsdp2-1rank-llama8b-8layers-reserved") EXPECT_NEAR(r.error, -0.034, 0.01);
  }
}

TEST(ValidationTest, TorchtitanJune2025RunsCompileTheirLossWithTheModel) {
  // torchtitan's June 2025 runs (benchmarks/llama3_8b_h200_2025-06_torchtitan.md @bcdeaa37: Llama
  // 3.1 8B on 32 and 64 H200s, FSDP over every GPU, torch.compile, float8 tensorwise, per-op
  // selective checkpointing, 2 x 8,192 tokens per GPU) map to the torchtitan-2025 stack, whose
  // code compiles the loss whenever the run compiles (components/loss.py build_cross_entropy_loss
  // since bbb1b616e): the upcast loss's 12 B per logit become 4 B, 8 x 2 x 8,192 x 128,256 =
  // 16,810,770,432 B less on every GPU. Measured (torchtitan's memory log, reserved): 47.96 and
  // 46.97 GiB; predicted with the eager loss and kernels +37% / +36% (the records carry the
  // run's --training.compile as measured.other.torch_compile).
  const std::vector<core::PublishedRun> runs = Corpus("torchtitan_h200_2506.json");
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    EXPECT_EQ(r.stack, "torchtitan-2025") << r.id;
    EXPECT_EQ(r.scenario.gpu.name, "h200") << r.id;
    EXPECT_EQ(r.scenario.plan.cross_entropy, core::CrossEntropy::kCompiled) << r.id;
    EXPECT_EQ(r.scenario.plan.elementwise, core::Elementwise::kFused) << r.id;
    EXPECT_EQ(r.scenario.plan.recompute_modules, core::ModuleBit(core::RecomputeModule::kTorchtitanOp)) << r.id;
    EXPECT_TRUE(Says(r.assumptions, "the loss compiled too, cross entropy compiled")) << r.id;
    core::PlanSpec eager = r.scenario.plan;
    eager.cross_entropy = core::CrossEntropy::kUpcast;
    const auto compiled_mem = core::EstimateMemory(r.scenario.model, r.scenario.plan, r.scenario.gpu);
    const auto eager_mem = core::EstimateMemory(r.scenario.model, eager, r.scenario.gpu);
    EXPECT_EQ(eager_mem.stages[0].loss_activations_bytes - compiled_mem.stages[0].loss_activations_bytes,
              int64_t{16810770432})
        << r.id;
  }
  // The December 2024 runs, whose loss was not compiled (train.py:137-138 at 9dec370), keep it eager.
  for (const auto& r : Corpus("torchtitan_h100_2412.json")) {
    EXPECT_EQ(r.stack, "torchtitan-2024") << r.id;
    EXPECT_EQ(r.scenario.plan.cross_entropy, core::CrossEntropy::kUpcast) << r.id;
  }
  std::vector<std::string> skipped;
  auto records = MemoryCorpus("torchtitan_h200_2506_memory.json", &skipped);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 2u);
  const ValidationSummary v = ValidateMemory(*records);
  ASSERT_EQ(v.records.size(), 2u);
  // Predicted 48.2 and 46.3 GiB: +0.5% and -1.3% (the compiled loss 15.7 GiB of the 17.6 GiB
  // the eager predictions, 65.8 and 63.9, were over; the fused norms, RoPE and SwiGLU the rest).
  for (const auto& r : v.records) {
    EXPECT_EQ(r.stack, "torchtitan-2025") << r.id;
    EXPECT_NEAR(r.error, r.id == "torchtitan-2506-h200-8b-32gpu-fsdp-float8" ? 0.005 : -0.013, 0.005) << r.id;
  }
}

TEST(ValidationTest, TorchtitanAsyncTpRowsPairVanillaAndAsyncTp) {
  // torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (@c720cb87): Llama 3.1 70B on
  // 256 and 8B on 64 96GB H100s, FSDP x TP 8, compiled, vanilla against async TP in bf16 and
  // float8 tensorwise. Each pair is one plan but for the TP overlap: AsyncTP as PyTorch's
  // micro-pipeline pass fuses it (tp_overlap async: each fused collective hidden only beside its
  // own GEMMs, the backward reduce-scatters of the q/k/v and w1/w3 inputs' summed gradients
  // exposed, the fused ops' copy and sum kernels; docs/compute.md), vanilla TP as none hidden.
  // Measured speedups 1.092 / 1.164 (70B bf16 / float8) and 1.098 / 1.097 (8B); predicted 1.203 /
  // 1.177 and 1.242 / 1.150 since the GEMMs' reduction length is costed (GemmReductionCost: TP 8
  // shortens the row-parallel layers' k; 1.200 / 1.174 and 1.242 / 1.147 before), and since
  // DTensor's TP is costed (PlanSpec::dtensor_tp: vanilla TP's
  // sequence-dimension copies, which AsyncTP's fused collectives do without, and torchao's float8
  // gathers; the vanilla rows +15.2 / -0.9 / +22.7 / +11.8% -> +7.7 / -1.2 / +11.7 / +14.2%, the
  // pairs further: what AsyncTP costs beyond its modelled kernels is not known, docs/compute.md);
  // 1.123 / 1.122 and 1.132 / 1.078 before (every TP collective hidden under its pass had given
  // 1.23 to 1.38; the 70B bf16 pair 1.131 before its compiled blocks' replay skipped w2 and its
  // reduce-scatter, which vanilla TP exposes: presets/launches/torchtitan-benchmarks.json).
  size_t skipped = 0;
  const std::vector<core::PublishedRun> all = Corpus("torchtitan_h100_2506_asynctp.json", &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(all.size(), 8u);
  const auto profile = core::LoadProfile("default");
  ASSERT_TRUE(profile.ok());
  const std::map<std::string, double> want = {{"torchtitan-2506-70b-256gpu-fsdp32-tp8-bf16", 1.203},
                                              {"torchtitan-2506-70b-256gpu-fsdp32-tp8-fp8", 1.177},
                                              {"torchtitan-2506-8b-64gpu-fsdp8-tp8-bf16", 1.242},
                                              {"torchtitan-2506-8b-64gpu-fsdp8-tp8-fp8", 1.150}};
  for (const auto& [stem, predicted_speedup] : want) {
    const auto* vanilla = Find(all, stem + "-vanillatp");
    const auto* async = Find(all, stem + "-asynctp");
    ASSERT_TRUE(vanilla && async) << stem;
    EXPECT_EQ(vanilla->stack, "torchtitan-2025");  // June 2025: the loss compiled with the model
    EXPECT_EQ(vanilla->scenario.plan.cross_entropy, core::CrossEntropy::kCompiled) << stem;
    EXPECT_EQ(vanilla->scenario.plan.tp, 8);
    EXPECT_EQ(vanilla->scenario.plan.zero, 3);
    EXPECT_EQ(vanilla->scenario.plan.elementwise, core::Elementwise::kFused) << stem;  // torch.compile
    EXPECT_EQ(vanilla->scenario.plan.tp_overlap, core::TpOverlap::kNone) << stem;
    EXPECT_EQ(async->scenario.plan.tp_overlap, core::TpOverlap::kAsync) << stem;
    core::PlanSpec same = async->scenario.plan;
    same.tp_overlap = vanilla->scenario.plan.tp_overlap;
    EXPECT_EQ(same, vanilla->scenario.plan) << stem;
    const double measured = async->published / vanilla->published;
    EXPECT_GT(measured, 1.08) << stem;
    EXPECT_LT(measured, 1.17) << stem;
    const double predicted = sim::EstimateStep(vanilla->scenario.model, vanilla->scenario.plan, vanilla->scenario.gpu,
                                               vanilla->scenario.cluster, *profile)
                                 .time_s /
                             sim::EstimateStep(async->scenario.model, async->scenario.plan, async->scenario.gpu,
                                               async->scenario.cluster, *profile)
                                 .time_s;
    EXPECT_NEAR(predicted, predicted_speedup, 0.0015) << stem;
    EXPECT_NEAR(predicted, measured, 0.15) << stem;          // the level reached: within 0.011 to 0.144
    EXPECT_TRUE(vanilla->scenario.plan.dtensor_tp) << stem;  // the stack's TP styles, said
    EXPECT_TRUE(Says(vanilla->assumptions, "DTensor's TP (sequence-dimension copies")) << stem;
  }
  // The 70B rows checkpoint whole blocks, each compiled whole: AOTAutograd's partitioner extracts
  // the backward with dead code eliminated, so w2 and what follows it are not rerun (the early
  // stop, from the launch file); the float8 rows keep the whole replay, said.
  const auto* bf16 = Find(all, "torchtitan-2506-70b-256gpu-fsdp32-tp8-bf16-vanillatp");
  const auto* fp8 = Find(all, "torchtitan-2506-70b-256gpu-fsdp32-tp8-fp8-vanillatp");
  ASSERT_TRUE(bf16 && fp8);
  EXPECT_EQ(bf16->scenario.plan.recompute, core::Recompute::kFull);
  EXPECT_TRUE(bf16->scenario.plan.recompute_early_stop);
  EXPECT_EQ(fp8->scenario.plan.recompute, core::Recompute::kFull);
  EXPECT_FALSE(fp8->scenario.plan.recompute_early_stop);
  EXPECT_TRUE(Says(fp8->assumptions, "checkpoint early stop not applied (FP8 linear layers"));
}

TEST(ValidationTest, AutoModelRunsTakeDeepEpTheFakeBalancedGateAndTheirConfigs) {
  // tests/data/validation/automodel_performance_summary.json: NeMo AutoModel's H100 pre-training
  // rows (FSDP2, DeepEP, Transformer Engine), a stack none of the other runs use. Nine map; the
  // Nemotron 3 Ultra row names no model meshplan has.
  size_t skipped = 0;
  const std::vector<core::PublishedRun> all = Corpus("automodel_performance_summary.json", &skipped);
  EXPECT_EQ(skipped, 1u);
  ASSERT_EQ(all.size(), 9u);
  for (const auto& r : all) {
    EXPECT_EQ(r.stack, "nemo-automodel-2025") << r.id;
    EXPECT_EQ(r.scenario.plan.zero3_gather, core::Zero3Gather::kFsdp2) << r.id;
  }
  // DeepSeek-V3 on 256 H100s (PP 4, EP 64, one sequence per microbatch): DeepEP sends each token
  // once per rank holding one of its experts, and the fake balanced gate gives a token experts
  // 8t .. 8t + 7, two whole ranks of 4 experts (core::RanksPerToken): the dispatch carries
  // 4096 tokens x 2 ranks x 7168 x 2 B = 117,440,512 B, a quarter of the 8 copies an all-to-all
  // dispatcher sends. No MTP module (AutoModel's DeepseekV3Model has none), Adam's moments in
  // bf16 with no fp32 master (torch.optim.Adam on the bf16 model), the loss on the bf16 logits.
  const auto* ds = Find(all, "automodel-2510-h100-deepseek-v3-671b-256gpu");
  ASSERT_TRUE(ds);
  const core::PlanSpec& p = ds->scenario.plan;
  EXPECT_EQ(p.moe_dispatcher, core::MoeDispatcher::kFlex);
  EXPECT_EQ(p.moe_routing, core::MoeRouting::kRoundRobin);
  EXPECT_EQ(ds->scenario.model.mtp_layers, 0);
  EXPECT_EQ(p.dtypes.master_weights, core::Dtype::kNone);
  EXPECT_EQ(p.dtypes.optimizer_states, core::Dtype::kBf16);
  EXPECT_EQ(p.cross_entropy, core::CrossEntropy::kPlain);
  EXPECT_EQ(p.recompute, core::Recompute::kFull);
  const core::StepGraph g = core::BuildStepGraph(ds->scenario.model, p);
  int dispatches = 0;
  for (const core::Op& op : g.moe_layer)
    if (std::string_view(op.name) == "ep_dispatch") {
      ++dispatches;
      EXPECT_EQ(op.bytes, int64_t{4096} * 2 * 7168 * 2);
    }
  EXPECT_EQ(dispatches, 3);  // forward, its rerun under full recomputation, its mirror in the backward
  // The Llama row: its config's loss upcasts (MaskedCrossEntropy's default) and it compiles.
  const auto* llama = Find(all, "automodel-2604-h100-llama3-70b-64gpu");
  ASSERT_TRUE(llama);
  EXPECT_EQ(llama->scenario.plan.cross_entropy, core::CrossEntropy::kUpcast);
  EXPECT_EQ(llama->scenario.plan.elementwise, core::Elementwise::kFused);
  EXPECT_EQ(llama->scenario.plan.dtypes.optimizer_states, core::Dtype::kFp32);  // TE FusedAdam's default
  // Gradient accumulation under PP runs one schedule per local batch (train_ft.py
  // _run_train_optim_step): DeepSeek-V3 on 1,024 GPUs 4 flushes of 8 microbatches, Kimi K2 2.
  const auto* ds1024 = Find(all, "automodel-2510-h100-deepseek-v3-671b-1024gpu");
  const auto* kimi = Find(all, "automodel-2510-h100-kimi-k2-256gpu");
  ASSERT_TRUE(ds1024 && kimi);
  EXPECT_EQ(ds1024->scenario.plan.pp_flushes, 4);
  EXPECT_EQ(ds1024->scenario.plan.MicrobatchesPerFlush(), 8);
  EXPECT_EQ(kimi->scenario.plan.pp_flushes, 2);
  EXPECT_EQ(p.pp_flushes, 1);
  // Today's level (2026-12-07), both signs: median 7.4%, max 18.1% (Nemotron 3 Super -18.1%; -16.7%
  // before the GEMMs' reduction length, GemmReductionCost, on 2026-12-07; median 8.3%); with
  // the all-to-all dispatcher and uniform routing these runs were -47% to -5%, median 22.1% over
  // the six that mapped then; with one flush a step DeepSeek-V3 on 1,024 GPUs and Kimi K2 were
  // +14.3% / +25.4% and called out of memory (docs/validation.md).
  const ValidationSummary v = ValidateRuns(all, core::Profile{});
  EXPECT_LE(v.all.median_abs_error, 0.075);
  EXPECT_LE(v.all.max_abs_error, 0.182);
  EXPECT_EQ(v.all.out_of_memory, 0u);
}

TEST(ValidationTest, NeMoFp8RecipesGatherTheParametersInFp8) {
  // Megatron-Bridge's FP8 mixed-precision recipes (delayed, current scaling, MXFP8) set
  // fp8_param_gather = True in every release the pages come from (the launch file's
  // release_defaults): its FP8 runs gather 1 byte a parameter, its BF16 runs 2. Kimi K2's runs turn
  // it off (kimi_llm_pretrain.py: Muon with MXFP8), and their own entries say so.
  size_t fp8 = 0;
  for (const auto& r : Corpus("nemo_performance_summaries.json")) {
    if (r.id.rfind("megatron-bridge-", 0) != 0) continue;
    const core::PlanSpec& p = r.scenario.plan;
    const bool kimi = r.id.find("kimi") != std::string::npos;
    const bool distributed_optimizer = p.zero == 1 || p.zero == 2;
    EXPECT_EQ(p.fp8_param_gather, p.precision == core::Dtype::kFp8 && distributed_optimizer && !kimi) << r.id;
    if (p.fp8_param_gather) ++fp8;
  }
  EXPECT_GT(fp8, 150u);
  // dgxc-benchmarking v25.03's NeMo runs likewise (gpt3_175b_hydra.yaml fp8_params: true; the
  // Llama 3.1, Nemotron-4 and Grok-1 configure.sh pass fp8_params=$FP8_ENABLED); its JAX MaxText
  // runs have no such setting.
  size_t dgxc_fp8 = 0;
  for (const auto& r : Corpus("papers_at_scale.json")) {
    if (r.id.rfind("dgxc-v2503-", 0) != 0) continue;
    const core::PlanSpec& p = r.scenario.plan;
    const bool nemo = r.id.find("maxtext") == std::string::npos;
    EXPECT_EQ(p.fp8_param_gather, nemo && p.precision == core::Dtype::kFp8) << r.id;
    if (p.fp8_param_gather) ++dgxc_fp8;
  }
  EXPECT_EQ(dgxc_fp8, 35u);
  // And its v25.05.01 runs: every FP8 launch there takes NeMo 2's delayed-scaling recipe
  // (bf16_with_fp8_mixed, the perf scripts' default fp8_recipe 'ds', or installed by the Grok-1 and
  // Llama 4 scripts themselves), which sets fp8_param_gather = True (mixed_precision.py:70 at the
  // three NeMo commits the workloads check out); 27 since the 7 Nemotron-H 56B rows (set_primary_perf_configs'
  // default fp8_recipe 'ds', scripts/performance/utils.py:427-430 at 7a8f1cc7bc).
  size_t v25051_fp8 = 0;
  for (const auto& r : Corpus("papers_at_scale.json")) {
    if (r.id.rfind("dgxc-v25051-", 0) != 0) continue;
    const core::PlanSpec& p = r.scenario.plan;
    EXPECT_EQ(p.fp8_param_gather, p.precision == core::Dtype::kFp8) << r.id;
    if (p.fp8_param_gather) ++v25051_fp8;
  }
  EXPECT_EQ(v25051_fp8, 27u);
}

TEST(ValidationTest, MlperfTrainingLogsAtTenThousandGpus) {
  // tests/data/validation/mlperf_training.json (scripts/mlperf_corpus.py over the MLPerf Training
  // results v3.0 to v5.1): NeMo runs of GPT-3 175B (256 to 11,616 H100s at NVIDIA, CoreWeave, Azure
  // and Oracle; 64 B200s) and Llama 3.1 405B (512 to 8,192 H100s, H200, GB200 to 2,496) and 8B (GB200,
  // GB300; B200, B300 and H100 at five other submitters; AMD's own implementation on 8 MI355X or
  // MI350X at AMD and four partners), and v5.1's 405B (NVFP4 on 512 to 5,120 GB200s and 512 GB300s,
  // FP8 on 512 and 1,024 H200s and 256 and 448 B200s), each timed from its own MLLOG lines, its
  // layout from the config its README names (else the one whose batch the log prints), and v5.1's
  // 8B runs with Transformer Engine's FP8 attention (NVFP4 on one node of GB200, GB300, B200 and
  // B300 at five submitters, two and four B200 nodes at Nebius; FP8 on 64 H200s at HPE); and v6.0's
  // DeepSeek-V3 671B (MXFP8: NVIDIA on 256 and 512 GB300s and 512 to 8,192 GB200s, CoreWeave on 2,048 to
  // 8,192 GB300s, Google on 256 GB200s; read from the transcripts in
  // tests/data/validation/sources/mlperf_v6.0/, scripts/mlperf_corpus.py --transcript). All 89 map.
  size_t skipped = 0;
  const std::vector<core::PublishedRun> all = Corpus("mlperf_training.json", &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(all.size(), 89u);
  for (const auto& r : all)
    EXPECT_EQ(r.stack, r.id.rfind("mlperf-v60-", 0) == 0 ? "megatron-bridge-2025" : "megatron-core-2024") << r.id;
  // GPT-3 175B on 1,344 DGX H100s (v4.0, config_DGXH100_1344x8x6x4x6_mbs1_cg.sh): TP 4 x PP 6 x
  // DP 448, interleave 8, one sequence per microbatch, MINIBS 6: 2,688 sequences a step. The log's
  // training blocks carry 55,050,240 tokens each (10 steps); their median time 9.21 s gives
  // 55,050,240 / 9.21 / 10,752 = 556.1 tokens/s per GPU, 0.921 s a step. Gradients reduced in bf16
  // (distributed_fused_adam grad_sync_dtype bf16), parameters gathered in FP8 (FP8_PARAMS=True in
  // its config_common.sh, which the config sources in the else branch of its MLPERF_VERSION test):
  // -6.5% with the bf16 gather, +2.1% with it. v3.1's configs set no FP8_PARAMS.
  const auto* gpt3 = Find(all, "mlperf-v40-nvidia-eos-dfw-n1344-ngc24.04-nemo-gpt3");
  ASSERT_TRUE(gpt3);
  const core::PlanSpec& p = gpt3->scenario.plan;
  EXPECT_EQ(p.tp, 4);
  EXPECT_EQ(p.pp, 6);
  EXPECT_EQ(p.dp, 448);
  EXPECT_EQ(p.vpp, 8);
  EXPECT_EQ(p.global_batch, 2688);
  EXPECT_EQ(p.recompute, core::Recompute::kNone);
  EXPECT_EQ(p.dtypes.grads, core::Dtype::kBf16);
  EXPECT_EQ(p.precision, core::Dtype::kFp8);
  EXPECT_NEAR(gpt3->published, 556.1, 0.05);
  EXPECT_TRUE(p.fp8_param_gather);
  const auto* gpt3_v31 = Find(all, "mlperf-v31-nvidia-eos-dfw-n1344-ngc23.09-nemo-gpt3");
  ASSERT_TRUE(gpt3_v31);
  EXPECT_FALSE(gpt3_v31->scenario.plan.fp8_param_gather);
  // Llama 3.1 405B (v5.0): the embedding and the loss count as layers in the split
  // (ASYM_PP_EMBED / ASYM_PP_LOSS): 126 + 2 = 128 over PP 8 x VP 8 = 64 chunks of 2, so the first
  // chunk holds the embedding and 1 layer, the last 1 layer and the loss.
  const auto* l405 = Find(all, "mlperf-v50-nvidia-eos-dfw-n1024-ngc25.01-nemo-llama31-405b");
  ASSERT_TRUE(l405);
  const std::vector<int64_t>& split = l405->scenario.plan.stage_layers;
  ASSERT_EQ(split.size(), 64u);
  EXPECT_EQ(split.front(), 1);
  EXPECT_EQ(split[1], 2);
  EXPECT_EQ(split.back(), 1);
  EXPECT_EQ(l405->scenario.plan.cp, 2);
  // Llama 3.1 8B on AMD's 8 MI355X (v5.1, its config_MI355X_1x8x1_8b.sh and src/train.py): TP 1,
  // DP 8, global batch 32 with 2 accumulation steps, so micro batch 2; the log's blocks of 12,288
  // sequences x 8,192 tokens take 401.42 s, 250,770 tokens/s = 31,346 per GPU (the median over all
  // blocks of the ten runs 31,416.05). FP8 with the parameters gathered in FP8, bf16 gradients, the
  // DP overlaps off (Megatron-Core's DistributedDataParallelConfig defaults), NeMo 2's fused loss
  // with Megatron-Core's native implementation.
  const auto* amd = Find(all, "mlperf-v51-amd-mi355x-epyc-9575f-pytorch-llama31-8b");
  ASSERT_TRUE(amd);
  const core::PlanSpec& a = amd->scenario.plan;
  EXPECT_EQ(amd->scenario.gpu.name, "mi355x");
  EXPECT_EQ(amd->scenario.cluster.name, "mi355x-8");
  EXPECT_EQ(a.tp, 1);
  EXPECT_EQ(a.dp, 8);
  EXPECT_EQ(a.micro_batch, 2);
  EXPECT_EQ(a.global_batch, 32);
  EXPECT_EQ(a.precision, core::Dtype::kFp8);
  EXPECT_TRUE(a.fp8_param_gather);
  EXPECT_FALSE(a.overlap_grad_reduce);
  EXPECT_FALSE(a.overlap_param_gather);
  EXPECT_EQ(a.dtypes.grads, core::Dtype::kBf16);
  EXPECT_EQ(a.cross_entropy, core::CrossEntropy::kNative);
  EXPECT_NEAR(amd->published, 31416.05, 0.01);
  // The FP8 scaling each config sets (NeMo 2's fp8_recipe: conf/custom.yaml's default or
  // FP8_RECIPE): v5.1's "tensorwise" (config_common.sh) is Transformer Engine's current scaling,
  // v5.0's 405B runs keep the yaml's "delayed"; the records print only "FP8".
  const auto* uf = Find(all, "mlperf-v51-university-of-florida-hpg.dgxb200x8.n1-llama31-8b");
  ASSERT_TRUE(uf);
  EXPECT_EQ(uf->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);
  EXPECT_EQ(l405->scenario.plan.fp8_scaling, core::Fp8Scaling::kDelayed);
  // Llama 3.1 405B on 5,120 GB200s (v5.1, config_GB200_1280x4x16xtp4pp8cp2_cg_fp4.sh, which its
  // README names): TP 4 x PP 8 x CP 2 x DP 80, interleave 8, MINIBS 16: 1,280 sequences a step;
  // NVFP4 (config_common_fp4.sh: FP4=True, FP8=False) with TP overlap off (no userbuffers: the
  // backward's asynchronous TP collectives only, tp_overlap backward); the median step 2.2268 s
  // over the three logs gives 1,280 x 8,192 / 2.2268 / 5,120 = 919.5 tokens/s per GPU.
  const auto* fp4 = Find(all, "mlperf-v51-nvidia-hsg-ngpu5120-ngc25.09-nemo-llama31-405b");
  ASSERT_TRUE(fp4);
  const core::PlanSpec& f = fp4->scenario.plan;
  EXPECT_EQ(f.precision, core::Dtype::kNvfp4);
  EXPECT_EQ(f.tp_overlap, core::TpOverlap::kBackward);
  EXPECT_EQ(f.dp, 80);
  EXPECT_EQ(f.vpp, 8);
  EXPECT_EQ(f.global_batch, 1280);
  EXPECT_EQ(fp4->scenario.gpu.name, "gb200");
  EXPECT_NEAR(fp4->published, 919.53, 0.005);
  // Its ranks: NeMo's use_tp_pp_dp_mapping (TP_PP_DP_MAPPING=True in config_common.sh) orders the
  // groups tp-cp-ep-pp-dp, and NVIDIA's v5.1 launch line (sbatch --segment $SEGMENT, SEGMENT =
  // 4 x 8 x 2 / 4 = 16 nodes) keeps each 64-rank pipeline inside one NVL72 rack. v5.0's GB200 runs
  // use the same order, but their README's sbatch line has no --segment.
  std::vector<core::Axis> dp_last;
  ASSERT_TRUE(core::ParsePlacement("tp-cp-ep-pp-dp", &dp_last));
  EXPECT_EQ(f.placement, dp_last);
  EXPECT_EQ(f.segment_nodes, 16);
  const auto* ibm = Find(all, "mlperf-v50-ibm-carina-ngpu2496-ngc25.04-nemo-llama31-405b");
  ASSERT_TRUE(ibm);
  EXPECT_EQ(ibm->scenario.plan.placement, dp_last);
  EXPECT_EQ(ibm->scenario.plan.segment_nodes, 0);
  EXPECT_EQ(l405->scenario.plan.placement, core::PlanSpec{}.placement);  // H100, no mapping set
  // The University of Florida's 405B on 56 B200 nodes: its hpg.dgxb200x8 config sources common
  // files that only b200_nemo holds (FP8=True, FP8_RECIPE tensorwise, FP8_PARAM_GATHER=True there).
  const auto* uf405 = Find(all, "mlperf-v51-university-of-florida-hpg.dgxb200x8.n56-llama31-405b");
  ASSERT_TRUE(uf405);
  EXPECT_EQ(uf405->scenario.plan.precision, core::Dtype::kFp8);
  EXPECT_EQ(uf405->scenario.plan.fp8_scaling, core::Fp8Scaling::kCurrent);
  EXPECT_TRUE(uf405->scenario.plan.fp8_param_gather);
  EXPECT_EQ(uf405->scenario.plan.dp, 7);
  // FP8 attention where the config sources config_common_fp8attn.sh (FP8_DPA=True): NVIDIA's
  // 8-GPU GB200 run in NVFP4, HPE's H200 run in FP8 (current scaling from the config's tensorwise).
  const auto* dpa = Find(all, "mlperf-v51-nvidia-tyche-ngpu8-ngc25.09-nemo-llama31-8b");
  ASSERT_TRUE(dpa);
  EXPECT_TRUE(dpa->scenario.plan.fp8_attention);
  EXPECT_EQ(dpa->scenario.plan.precision, core::Dtype::kNvfp4);
  const auto* hpe = Find(all, "mlperf-v51-hpe-hpe-cray-xd670-h200-sxm5-141gb-n8-25.09-llama31-8b");
  ASSERT_TRUE(hpe);
  EXPECT_TRUE(hpe->scenario.plan.fp8_attention);
  EXPECT_EQ(hpe->scenario.plan.precision, core::Dtype::kFp8);
  EXPECT_EQ(hpe->scenario.gpu.name, "h200");
  EXPECT_FALSE(uf405->scenario.plan.fp8_attention);
  // GigaComputing's config says MBS=4 but its log accumulates 2 steps of the 32: micro batch 2.
  const auto* giga = Find(all, "mlperf-v51-gigacomputing-g893-zx1-aax4-pytorch-llama31-8b");
  ASSERT_TRUE(giga);
  EXPECT_EQ(giga->scenario.plan.micro_batch, 2);
  // DeepSeek-V3 671B on 8,192 GB200s (v6.0, config_GB200_2048x4x16xtp2pp4ep32cp1_mxfp8_full_cg.sh,
  // which its README names): TP 2 x PP 4 x DP 1,024, EP 32, interleave 4 as the layout
  // Et*4|(t*4|)*14tmL (16 chunks of 4 layers, the last one layer, the MTP layer and the loss),
  // MINIBS 16 of one sequence: 16,384 sequences a step. Megatron-Bridge 26.04 (the stack
  // megatron-bridge-2025: Transformer Engine's in-place loss, bf16 gradients averaged in the
  // collective), MXFP8 (block scaling) with the parameters gathered in FP8, the whole iteration in a
  // CUDA graph (no MoE host floor), the EP all-to-alls overlapped (overlap_moe_expert_parallel_comm),
  // the dense layers' MLP recomputed (RECOMPUTE_MODULES=mlp), HybridEP costed as the all-to-all
  // dispatcher, Slurm segments of 16 nodes. The transcript's 270 step times (3 logs of 90, the first
  // 3 of each left out) have the median 3.50499 s: 16,384 x 4,096 / 3.50499 / 8,192 = 2,337.24
  // tokens/s per GPU. On 256 GB300s (TP 1, MINIBS 240, nothing recomputed): 285 step times, median
  // 39.3552 s, 15,360 x 4,096 / 39.3552 / 256 = 6,244.67.
  const auto* ds = Find(all, "mlperf-v60-nvidia-tyche-hsg-ngpu8192-ngc26.04-nemo-deepseekv3-671b");
  ASSERT_TRUE(ds);
  const core::PlanSpec& d = ds->scenario.plan;
  EXPECT_EQ(ds->scenario.gpu.name, "gb200");
  EXPECT_EQ(d.tp, 2);
  EXPECT_EQ(d.pp, 4);
  EXPECT_EQ(d.vpp, 4);
  EXPECT_EQ(d.ep, 32);
  EXPECT_EQ(d.dp, 1024);
  EXPECT_EQ(d.micro_batch, 1);
  EXPECT_EQ(d.global_batch, 16384);
  EXPECT_EQ(d.stage_layers, std::vector<int64_t>({4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1}));
  EXPECT_EQ(ds->scenario.model.mtp_layers, 1);
  EXPECT_EQ(d.precision, core::Dtype::kFp8);
  EXPECT_EQ(d.fp8_scaling, core::Fp8Scaling::kBlock);
  EXPECT_TRUE(d.fp8_param_gather);
  EXPECT_TRUE(d.ep_overlap);
  EXPECT_EQ(d.moe_host, core::MoeHost::kNone);
  EXPECT_EQ(d.recompute, core::Recompute::kSelective);
  EXPECT_EQ(d.cross_entropy, core::CrossEntropy::kTeInplace);
  EXPECT_EQ(d.dtypes.grads, core::Dtype::kBf16);
  EXPECT_EQ(d.dtypes.optimizer_states, core::Dtype::kBf16);
  EXPECT_EQ(d.segment_nodes, 16);
  EXPECT_FALSE(d.fp8_attention);  // MXFP8 attention is not modelled: costed in BF16
  EXPECT_NEAR(ds->published, 2337.24, 0.005);
  const auto* ds300 = Find(all, "mlperf-v60-nvidia-theia-ngpu256-ngc26.04-nemo-deepseekv3-671b");
  ASSERT_TRUE(ds300);
  EXPECT_EQ(ds300->scenario.gpu.name, "gb300");
  EXPECT_EQ(ds300->scenario.plan.tp, 1);
  EXPECT_EQ(ds300->scenario.plan.dp, 64);
  EXPECT_EQ(ds300->scenario.plan.recompute, core::Recompute::kNone);
  EXPECT_NEAR(ds300->published, 6244.67, 0.005);
  // The same recipe at 8,192 GB300s on CoreWeave's RoCE fabric (its config for 2,048 nodes, MINIBS 8,
  // DP 2,048; submit_train.sh's sbatch --segment=16): 257 step times, median 1.7787 s, 16,384 x 4,096
  // / 1.7787 / 8,192 = 4,605.66; and Google's 256 GB200s (MINIBS 480, DP 32: 480 microbatches a
  // pipeline; its README's 16 nodes from each of 4 NVLink domains), 4,122.56.
  const auto* cw = Find(all, "mlperf-v60-coreweave-coreweave-gb300-2048x4-deepseekv3-671b");
  ASSERT_TRUE(cw);
  EXPECT_EQ(cw->scenario.gpu.name, "gb300");
  EXPECT_EQ(cw->scenario.plan.dp, 2048);
  EXPECT_EQ(cw->scenario.plan.global_batch, 16384);
  EXPECT_EQ(cw->scenario.plan.segment_nodes, 16);
  EXPECT_NEAR(cw->published, 4605.66, 0.005);
  const auto* google = Find(all, "mlperf-v60-google-gb200-nvl72-n64-ngc26.04-nemo-deepseekv3-671b");
  ASSERT_TRUE(google);
  EXPECT_EQ(google->scenario.plan.dp, 32);
  EXPECT_EQ(google->scenario.plan.tp, 2);
  EXPECT_EQ(google->scenario.plan.segment_nodes, 16);
  EXPECT_NEAR(google->published, 4122.56, 0.005);
  // Today's level (2026-12-04), both signs: median 7.5%, p90 17.4%, max 49.5% (Llama 3.1 8B on
  // Cisco's 128 H100s, TP 2 on an Ethernet fabric); the other 8B rows on NeMo, one microbatch a step,
  // -0.4% to +26.8% (FP8 current scaling where the config's fp8_recipe is tensorwise); GPT-3 on Oracle's 3,072 H100s
  // +21.8% (+1.3% on 1,536 at the same batch); v3.0's GPT-3 rows +13.6% to +18.2%, where v3.1 ran the same config 9%
  // faster (+4.2%); GPT-3 at 10,752 and 11,616 H100s +2.1% / +1.6%; the MI355X rows +8.5% to +14.4% and the MI350X rows
  // +25.1% / +29.3%, on burst GEMM and attention figures; v5.1's 405B rows -16.2% to +5.2%, too slow in NVFP4 on GB200
  // at 2,560 and 5,120 GPUs (-13.1%, -16.2%: the step's DP synchronisation); the 13 8B rows with FP8 attention
  // +0.9% to +19.3%, too fast as the benchmark's other 8B rows are (docs/validation.md); p90 17.8% before the
  // B300's NVFP4 GEMMs took Transformer Engine's measured rate (its two NVFP4 rows +19.8/+16.3% -> +11.0/+7.8%).
  // Max 49.5% -> 50.3% (2026-12-05) when the runs took the loss their conf/custom.yaml sets
  // (cross_entropy_loss_fusion, default True from v4.1: Megatron-Core's native fused loss;
  // scripts/mlperf_corpus.py): 25 runs 0.2-2.2 points faster, Cisco's two 8B rows among them.
  // With v6.0's ten DeepSeek-V3 runs (2026-12-06) median 7.3%, p90 17.7%, max 53.5%: NVIDIA's GB300
  // rows -18.3% and -17.2%, CoreWeave's -5.7% to -9.5%, Google's 256 GB200s +0.8%, NVIDIA's GB200 rows
  // +10.4% at 512 GPUs to +53.5% at 8,192 (a per-step cost the model lacks; docs/validation.md).
  // Median 7.9%, p90 17.8%, max 50.3% (Cisco's 8B row again) when the EP overlap's warm-up and
  // cool-down passes ran unmerged (2026-12-06, sim::EpOverlapUnmergedShare: PP 4 x VP 4 at 8 to 480
  // microbatches a pipeline): NVIDIA's GB300 rows -18.6% / -17.7%, CoreWeave's -7.7% to -13.2% (8 to
  // 32 microbatches: a half to a sixth of their passes unmerged), Google's +0.6%, NVIDIA's GB200
  // rows +10.1% to +48.5%.
  const ValidationSummary v = ValidateRuns(all, core::Profile{});
  EXPECT_LE(v.all.median_abs_error, 0.080);
  EXPECT_LE(v.all.p90_abs_error, 0.178);
  EXPECT_LE(v.all.max_abs_error, 0.535);
  EXPECT_EQ(v.all.out_of_memory, 0u);
}

TEST(ValidationTest, MegatronLmMoeRecipesTakeTheirYamls) {
  // tests/data/validation/megatron_lm_moe_recipes.json: the Recipe Index of Megatron-LM's
  // examples/moe_recipes (dev branch at 9c5258f109), 14 rows that print a median TFLOP/s per GPU
  // (Qwen3-30B-A3B, Qwen3-235B-A22B and DeepSeek-V3 on H100, B200, B300, GB200 and GB300), each with
  // its YAML in presets/launches/megatron-lm-moe-recipes.json; DeepSeek-V3's two H100 rows print
  // none and DeepSeek-V4 has no preset, so they are not recorded.
  size_t skipped = 0;
  const std::vector<core::PublishedRun> all = Corpus("megatron_lm_moe_recipes.json", &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(all.size(), 14u);
  for (const auto& r : all) EXPECT_EQ(r.stack, "megatron-lm-2026") << r.id;
  // Qwen3-30B-A3B on 32 H100s in BF16 (EP 8, 16 experts a rank, one sequence per microbatch):
  // 234.1 TFLOP/s / 23,006,281,728 FLOPs per token (megatron-2025, the causal scores halved) =
  // 10,175.5 tokens/s per GPU; with the s^2 term whole it would read 8,409.3.
  const auto* q30 = Find(all, "megatron-lm-moe-recipes-qwen3-30b-a3b-h100-32gpu-bf16");
  ASSERT_TRUE(q30);
  EXPECT_NEAR(q30->published, 234.1e12 / 23006281728.0, 1e-6);
  EXPECT_NE(q30->conversion.find("megatron-2025"), std::string::npos) << q30->conversion;
  EXPECT_EQ(q30->scenario.plan.recompute, core::Recompute::kNone);
  EXPECT_EQ(q30->scenario.plan.dtypes.grads, core::Dtype::kFp32);  // main_grads_dtype fp32
  // Qwen3-235B-A22B on 256 H100s: num_layers_per_virtual_pipeline_stage 3 with the embedding and
  // the loss counted as layers, (94 + 2) / 3 = 32 chunks over PP 8, VP 4, the end chunks 2 layers;
  // recompute_modules "moe_act layernorm"; EP overlap; the DDP overlaps not set (Megatron-LM's
  // default off).
  const auto* q235 = Find(all, "megatron-lm-moe-recipes-qwen3-235b-a22b-h100-256gpu-bf16");
  ASSERT_TRUE(q235);
  const core::PlanSpec& p = q235->scenario.plan;
  EXPECT_EQ(p.vpp, 4);
  ASSERT_EQ(p.stage_layers.size(), 32u);
  EXPECT_EQ(p.stage_layers.front(), 2);
  EXPECT_EQ(p.stage_layers[1], 3);
  EXPECT_EQ(p.recompute, core::Recompute::kSelective);
  EXPECT_EQ(p.recompute_modules,
            core::ModuleBit(core::RecomputeModule::kMoeAct) | core::ModuleBit(core::RecomputeModule::kLayernorm));
  EXPECT_TRUE(p.ep_overlap);
  EXPECT_TRUE(p.delay_wgrad);  // delay_wgrad_compute: true in the recipe
  EXPECT_FALSE(p.overlap_grad_reduce);
  // DeepSeek-V3 on 256 GB200s: the layout Et*4|(tttt|)*14tmL over PP 4 (VP 4), its MTP module, the
  // FP8 parameter gather and Adam's moments in bf16 (use_precision_aware_optimizer, exp_avg_dtype).
  const auto* ds = Find(all, "megatron-lm-moe-recipes-deepseek-v3-gb200-256gpu-mxfp8");
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->scenario.plan.vpp, 4);
  EXPECT_EQ(ds->scenario.plan.stage_layers.back(), 1);
  EXPECT_EQ(ds->scenario.model.mtp_layers, 1);
  EXPECT_TRUE(ds->scenario.plan.fp8_param_gather);
  EXPECT_EQ(ds->scenario.plan.dtypes.optimizer_states, core::Dtype::kBf16);
  EXPECT_EQ(ds->scenario.plan.precision, core::Dtype::kFp8);
  EXPECT_EQ(ds->scenario.plan.fp8_scaling, core::Fp8Scaling::kBlock);
  EXPECT_NEAR(ds->published, 1127.6e12 / 259992950784.0, 1e-6);
  // The whole iteration in a CUDA graph (cuda_graph_impl local, full_iteration): no MoE host floor.
  const auto* cg = Find(all, "megatron-lm-moe-recipes-qwen3-235b-a22b-gb300-128gpu-mxfp8-full-cg");
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->scenario.plan.moe_host, core::MoeHost::kNone);
  // Today's level (2026-12-06): median 9.3%, p90 38.0%, max 43.7%, both signs: the NVL72 rows
  // (GB200, GB300) -5.7% to +5.0% for the large-expert models and +12.5% to +41.5% for Qwen3-30B-A3B
  // on 16 GB200s; the H100 rows +6.1% (Qwen3-30B-A3B BF16, 16 experts a rank) to +23.5% (Qwen3-235B-
  // A22B BF16; +22.9% with its all-to-alls hidden under whole passes, before the merged schedule and
  // its unmerged warm-up); the B200 rows, whose EP groups cross 8-GPU nodes over the network with
  // DeepEP, -29.9% and -43.7% (their flex dispatcher is costed as the all-to-all one;
  // docs/validation.md). Median 7.3%, p90 38.8% (2026-12-07) when Transformer Engine's quantization
  // took its kernels (MXFP8 one a tensor, each local expert's its own, FP8 current scaling three):
  // the GB200/GB300 MXFP8 rows 0.5 to 2 points faster (Qwen3-30B-A3B with partial graphs +41.5% ->
  // +42.6%), the H100 FP8-blockwise Qwen3-30B-A3B row +8.5% -> +8.1%. The B200 and GB200 rows a
  // point or two slower with those GPUs' short-reduction cost (2026-12-07; the max, Qwen3-30B-A3B's
  // MXFP8 GB200 row with partial graphs, 43.8%).
  const ValidationSummary v = ValidateRuns(all, core::Profile{});
  EXPECT_LE(v.all.median_abs_error, 0.094);
  EXPECT_LE(v.all.p90_abs_error, 0.388);
  EXPECT_LE(v.all.max_abs_error, 0.439);
  EXPECT_EQ(v.all.out_of_memory, 0u);
}

TEST(ValidationTest, MegatronLmReadmeRunsInterleaveOneLayerAStage) {
  // tests/data/validation/megatron_lm_readme_2024.json: the seven points of the Megatron-LM README's
  // H100 strong-scaling figure (GPT 177B, batch 1,152, 96 to 4,608 GPUs; its 2,304-GPU point is the
  // model table's 177B row, recorded there), read from the PNG by scripts/megatron_readme_scaling.py.
  size_t skipped = 0;
  const std::vector<core::PublishedRun> all = Corpus("megatron_lm_readme_2024.json", &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(all.size(), 7u);
  for (const auto& r : all) {
    EXPECT_EQ(r.stack, "megatron-core-2024") << r.id;
    EXPECT_EQ(r.scenario.plan.tp, 8) << r.id;
    EXPECT_EQ(r.scenario.plan.pp, 6) << r.id;
    EXPECT_EQ(r.scenario.plan.dp * 48, r.scenario.plan.gpus) << r.id;
    // PP communication overlap, which the README says the runs use, exists only in the interleaved
    // schedule at that commit (arguments.py); one layer a virtual stage: 96 / 6 = 16 chunks a rank.
    EXPECT_EQ(r.scenario.plan.vpp, 16) << r.id;
    EXPECT_EQ(r.scenario.plan.schedule, core::Schedule::kInterleaved) << r.id;
  }
  // 96 GPUs: 44.3 PFLOP/s read from the figure / 96 GPUs / Megatron-LM's count for the 177B, 12 s L
  // h^2 (1 + 1 + s/h + f/h + V/(2 L h)) / s = 12 x 96 x 12288^2 x (2.3333 + 4 + 0.0556) =
  // 1.11132e12 FLOPs a token: 415.2 tokens/s per GPU (MFU 46.7% of the BF16 peak; the README: 47%).
  const auto* r96 = Find(all, "megatronlm-readme-h100-2024-177B-strong-96gpu");
  ASSERT_TRUE(r96);
  EXPECT_NEAR(r96->published, 44.3e15 / 96 / 1111322787840.0, 1e-6);
  EXPECT_NE(r96->printed.find("aggregate_pflops"), std::string::npos) << r96->printed;
  // The model table's PP > 1 rows take the same rule from the same launch file: 84 / 2, 92 / 4,
  // 96 / 6, 96 / 8 and 112 / 16 layers a stage (23 and 7 leave no other interleaving).
  const auto beyond = BeyondTuning();
  for (const auto& [id, vpp] : std::vector<std::pair<const char*, int64_t>>{{"megatronlm-readme-h100-2024-70B", 42},
                                                                            {"megatronlm-readme-h100-2024-119B", 23},
                                                                            {"megatronlm-readme-h100-2024-177B", 16},
                                                                            {"megatronlm-readme-h100-2024-314B", 12},
                                                                            {"megatronlm-readme-h100-2024-462B", 7}}) {
    const auto* r = Find(beyond, id);
    ASSERT_TRUE(r) << id;
    EXPECT_EQ(r->scenario.plan.vpp, vpp) << id;
  }
  // Today's level (2026-12-06): every point too fast, +15.2% at 96 GPUs (576 microbatches a
  // pipeline, a step of 118 s with no bubble or data-parallel cost to speak of) down to +6.3% at
  // 4,608 (12): split as step = m t + F, the published t is 0.205 s a microbatch against 0.178 s
  // predicted, F 0.32 s against 0.49 s (docs/validation.md).
  const ValidationSummary v = ValidateRuns(all, core::Profile{});
  EXPECT_LE(v.all.median_abs_error, 0.139);
  EXPECT_LE(v.all.p90_abs_error, 0.151);
  EXPECT_LE(v.all.max_abs_error, 0.153);
  EXPECT_GT(v.all.median_error, 0.0);
  EXPECT_EQ(v.all.out_of_memory, 0u);
}

TEST(ValidationTest, MegatronBridgeCardsTakeTheirRecipesAndTheirStepTimes) {
  // tests/data/validation/megatron_bridge_cards.json: the pretraining performance runs Megatron-
  // Bridge's model verification cards mark verified (examples/model_verification_cards at
  // 067f987df0), 15 of models meshplan has; each recipe's settings at the card's commit in
  // presets/launches/megatron-bridge-cards.json.
  size_t skipped = 0;
  const std::vector<core::PublishedRun> all = Corpus("megatron_bridge_cards.json", &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(all.size(), 15u);
  for (const auto& r : all) {
    EXPECT_EQ(r.stack, "megatron-bridge-2025") << r.id;
    EXPECT_NE(r.printed.find("iteration_time_s"), std::string::npos) << r.id;  // the step time, not the tokens/s
  }
  // Nemotron 3 Super on 64 GB200s: the recipe runs 8,192 tokens a sequence (the library recipe's;
  // the perf recipe sets none), so 512 x 8192 / (9.92635 s x 64) = 6,601.7 tokens/s per GPU; the
  // card's own 3,301.1 counts 4,096 (its TFLOP/s per token, 0.169, twice the pages' 0.085 at 8,192).
  const auto* super = Find(all, "megatron-bridge-2606-card-gb200-nemotron-3-super-64gpu-bf16");
  ASSERT_TRUE(super);
  EXPECT_NEAR(super->published, 512.0 * 8192 / (9.92635 * 64), 1e-6);
  // DeepSeek-V3 on 1,024 H100s: TP 2 x PP 8 x VP 4 with the perf recipe's layout Et|(tt|)*30mL (32
  // chunks: the embedding and one layer, 30 of two, the MTP module and the loss), selective
  // recomputation of mla_up_proj and mlp, bf16 Adam moments, the gradient reduce-scatter not
  // overlapped.
  const auto* ds = Find(all, "megatron-bridge-2608-card-h100-deepseekv3-1024gpu-bf16");
  ASSERT_TRUE(ds);
  const core::PlanSpec& p = ds->scenario.plan;
  EXPECT_EQ(p.vpp, 4);
  ASSERT_EQ(p.stage_layers.size(), 32u);
  EXPECT_EQ(p.stage_layers.front(), 1);
  EXPECT_EQ(p.stage_layers.back(), 0);
  EXPECT_EQ(p.recompute_modules,
            core::ModuleBit(core::RecomputeModule::kMlaUpProj) | core::ModuleBit(core::RecomputeModule::kMlp));
  EXPECT_EQ(p.dtypes.optimizer_states, core::Dtype::kBf16);
  EXPECT_FALSE(p.overlap_grad_reduce);
  // Nemotron 3 Super on 64 H100s recomputes whole MoE layers (recompute_modules moe, with
  // layernorm, moe_act and core_attn) and pads each expert to 1.1x its tokens: it fits (the card
  // measured 59.0 GB allocated, 69.3 reserved, as Megatron-Bridge logs bytes / 1e9; out_of_memory
  // below, 0: it was called out of memory while moe was costed as kept).
  const auto* sh = Find(all, "megatron-bridge-2606-card-h100-nemotron-3-super-64gpu-bf16");
  ASSERT_TRUE(sh);
  EXPECT_TRUE(sh->scenario.plan.Recomputes(core::RecomputeModule::kMoe));
  // Nemotron 3.5 Lightning on 16 H100s: its recipe offloads the experts' fc1 inputs to host memory
  // (fine_grained_activation_offloading, offload_modules ['expert_fc1']): the plan offloads them
  // and the assumptions say where from.
  const auto* lightning = Find(all, "megatron-bridge-2608-card-h100-nemotron-3-5-lightning-16gpu-bf16");
  ASSERT_TRUE(lightning);
  EXPECT_EQ(lightning->scenario.plan.offload_modules, core::OffloadBit(core::OffloadModule::kExpertFc1));
  EXPECT_EQ(sh->scenario.plan.offload_modules, 0u);
  bool offload_said = false;
  for (const auto& a : lightning->assumptions)
    offload_said |=
        a.rfind("fine-grained activation offloading of expert_fc1 (Megatron-Core offload_modules; ", 0) == 0;
  EXPECT_TRUE(offload_said);
  // The launch file's own notes on a run (what it read and how it is costed) are shown too.
  bool notes_said = false;
  for (const auto& a : lightning->assumptions)
    notes_said |= a.rfind(
                      "the launch file's notes on this run (presets/launches): fine-grained offload of expert_fc1 "
                      "activations to host memory",
                      0) == 0;
  EXPECT_TRUE(notes_said);
  // Today's level (2026-12-06): median 12.4%, p90 36.7%, max 72.7% (gpt-oss-120b BF16 on GB200, as
  // the pages' rows of that recipe), both signs: the GB300/GB200 MXFP8 repeats of the 26.08 page
  // within -15% to +20%, the H100 ones -13% to -38% (DeepSeek-V3 on 1,024 GPUs with HybridEP across
  // nodes, costed as the all-to-all dispatcher; docs/validation.md). Since 2026-12-07 the median is
  // 15.0%: gpt-oss-120b's MXFP8 card on GB300, +3.2% while its per-expert fc2 bias pass was costed,
  // runs the experts through Transformer Engine's op fuser, which adds the bias in its grouped
  // linear op (+19.6%, as the page's rows of that recipe: ValidationTest.
  // MegatronBridgeOpFuserRunsClampAndAddTheBiasInsideItsOps); right before for the wrong reason.
  const ValidationSummary v = ValidateRuns(all, core::Profile{});
  EXPECT_LE(v.all.median_abs_error, 0.151);
  EXPECT_LE(v.all.p90_abs_error, 0.368);
  EXPECT_LE(v.all.max_abs_error, 0.728);
  EXPECT_EQ(v.all.out_of_memory, 0u);
}

TEST(ValidationTest, MegatronBridgeSkillsChangeOneSettingARun) {
  // tests/data/validation/megatron_bridge_skills.json and tests/data/memory/
  // megatron_bridge_skills_memory.json (scripts/megatron_bridge_skills.py): the matched experiments
  // Megatron-Bridge's performance skills print (skills/ at 067f987df0), each recipe's settings in
  // presets/launches/megatron-bridge-skills.json.
  size_t skipped = 0;
  const std::vector<core::PublishedRun> all = Corpus("megatron_bridge_skills.json", &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(all.size(), 5u);
  for (const auto& r : all) EXPECT_EQ(r.stack, "megatron-bridge-2025") << r.id;
  // Plain EP overlap on Qwen3-30B-A3B, 16 H100s, EP 16 over two nodes with HybridEP: 24.7138 s a
  // step without it, 21.0725 s with it (1024 x 4096 / (step x 16) tokens/s per GPU), the only
  // change (Megatron-Bridge #5094).
  const auto* off = Find(all, "megatron-bridge-skills-h100-qwen3-30b-a3b-16gpu-bf16-ep-overlap-off");
  const auto* on = Find(all, "megatron-bridge-skills-h100-qwen3-30b-a3b-16gpu-bf16-ep-overlap-on");
  ASSERT_TRUE(off && on);
  EXPECT_FALSE(off->scenario.plan.ep_overlap);
  EXPECT_TRUE(on->scenario.plan.ep_overlap);
  EXPECT_FALSE(on->scenario.plan.delay_wgrad);  // the recipe's delay_wgrad_compute=False
  EXPECT_NEAR(off->published, 1024.0 * 4096 / (24.7138 * 16), 1e-6);
  EXPECT_NEAR(on->published / off->published, 24.7138 / 21.0725, 1e-9);  // 1.173
  // Predicted, the overlap gains 1.449x (2026-12-07, with the GEMMs' reduction length, which
  // lengthens the experts' fc2 over k = 768; 1.429x before, 2026-12-06, with the expert GEMMs' host time under
  // Transformer Engine's GroupedLinear, which the merged schedule's overlapped microbatches wait
  // for; 1.482x before it, 1.495x before its merged schedule and the unmerged first forward and last
  // backward of a step's 64 microbatches): the all-to-all it hides is costed as k = 8 copies of each
  // token, half of them over the network, where HybridEP forwards one copy a node (the node-level
  // dispatch named in docs/validation.md); -28.8% without the overlap, -13.3% with.
  const ValidationSummary v = ValidateRuns(all, core::Profile{});
  double pred_off = 0, pred_on = 0;
  for (const auto& r : v.records) {
    if (r.id == off->id) pred_off = r.predicted;
    if (r.id == on->id) pred_on = r.predicted;
  }
  ASSERT_GT(pred_off, 0);
  EXPECT_NEAR(pred_on / pred_off, 1.449, 0.02);
  // Nemotron 3 Nano on 16 H100s at 8,192 tokens, one microbatch a step: whole MoE layers
  // recomputed (moe), then with layernorm too; the study's rows +4.1% and +7.1%.
  const auto* moe = Find(all, "megatron-bridge-skills-h100-nemotron-3-nano-16gpu-bf16-recompute-moe");
  ASSERT_TRUE(moe);
  EXPECT_TRUE(moe->scenario.plan.Recomputes(core::RecomputeModule::kMoe));
  EXPECT_FALSE(moe->scenario.plan.Recomputes(core::RecomputeModule::kLayernorm));
  EXPECT_NEAR(moe->published, 16.0 * 8192 / (0.65742 * 16), 1e-6);
  EXPECT_LE(v.all.max_abs_error, 0.296);  // the overlap-off row, -29.6% (-28.8% before 2026-12-07)
  EXPECT_EQ(v.all.out_of_memory, 0u);

  // Memory: the peaks as Megatron-Bridge logs them, bytes / 1e9 (64.653 GB = 60.21 GiB); the four
  // Nemotron 3 Nano layouts that ran out of memory (none, core_attn, moe_act, layernorm + moe_act).
  std::vector<std::string> mskipped;
  const auto mem = MemoryCorpus("megatron_bridge_skills_memory.json", &mskipped);
  ASSERT_TRUE(mem.ok());
  EXPECT_TRUE(mskipped.empty());
  ASSERT_EQ(mem->size(), 7u);
  const ValidationSummary m = ValidateMemory(*mem);
  EXPECT_EQ(m.all.n, 3u);
  ASSERT_EQ(m.verdicts.size(), 4u);
  for (const auto& r : m.records)
    if (r.id == moe->id) EXPECT_NEAR(r.published, 64.653e9 / (1 << 30), 1e-3);
  // Today (2026-12-06): the two Nano peaks +12.1% / +12.4% (67.5 and 66.6 GiB predicted against
  // 60.2 and 59.3), Qwen3-30B-A3B's -6.0%; all four verdicts right. Layernorm + moe_act, which ran
  // out of memory in its first iteration, holds 84.42 GB allocated, 0.72 GB of CUDA context and
  // 0.40 GB of NCCL buffers: 85.54 GB without the allocator's reserve, over the 85.05 GB CUDA
  // reports of an H100 (it was tight against the physical 80 GiB, 85.90 GB).
  EXPECT_LE(m.all.max_abs_error, 0.13);
  EXPECT_EQ(m.verdicts_wrong, 0u);
  for (const auto& vr : m.verdicts) EXPECT_TRUE(vr.Right()) << vr.id << " " << vr.predicted_gib;
}

TEST(ValidationTest, MegatronBridgePrintsTflopsWithMegatronLmsCausalCount) {
  // Megatron-Bridge's performance pages from 25.11 print tokens/s per GPU and model TFLOP/s per GPU
  // side by side, so each row says which FLOP count its TFLOP/s uses. The stack's count
  // (megatron-bridge-2025: megatron-2025, Megatron-LM's count with the causal scores halved; core/
  // stack.cc) is what a record that printed only its TFLOP/s would be converted with. On the 194
  // rows of models without windowed attention it comes within 2.5% (1% but for 26.04.01's rows,
  // up to 2.2%), and on every row of a model that is not hybrid closer than the older count (the
  // s^2 scores whole). gpt-oss-120b
  // (windowed attention in half its layers) Megatron-Bridge counts its own way, by release: 0.79
  // of this count from 25.11 to 26.04.01, 0.95 from 26.06 (flop_utils.py's sliding-window context);
  // neither is Megatron-LM's, which counts every layer's scores whole, so those rows stay apart.
  auto text = core::ReadTextFile(std::string(MESHPLAN_TEST_DATA_DIR "/validation/nemo_performance_summaries.json"));
  ASSERT_TRUE(text.ok());
  std::map<std::string, double> tflops;
  for (const auto& r : nlohmann::json::parse(*text))
    if (r["measured"]["tflops_per_gpu"].is_number())
      tflops[r["id"].get<std::string>()] = r["measured"]["tflops_per_gpu"];
  auto stack = core::LoadStack("megatron-bridge-2025");
  ASSERT_TRUE(stack.ok());
  EXPECT_EQ(stack->flop_count, core::FlopCount::kMegatron2025);
  size_t checked = 0, windowed = 0;
  for (const auto& r : Corpus("nemo_performance_summaries.json")) {
    if (r.stack != "megatron-bridge-2025" || !tflops.count(r.id)) continue;
    const core::ModelSpec& m = r.scenario.model;
    const double printed = tflops[r.id] * 1e12 / r.published;  // FLOPs per token the page used
    const double count = core::SourceFlopsPerToken(stack->flop_count, m, r.scenario.plan.seq_len);
    const double older = core::SourceFlopsPerToken(core::FlopCount::kMegatron, m, r.scenario.plan.seq_len);
    // (Hybrid models take Megatron-LM's hybrid_flops either way, whose scores were always halved.)
    if (m.Hybrid()) EXPECT_EQ(count, older) << r.id;
    else EXPECT_LT(std::abs(count / printed - 1), std::abs(older / printed - 1)) << r.id;
    if (m.sliding_window > 0) {
      EXPECT_TRUE(std::abs(printed / count - 0.79) < 0.025 || std::abs(printed / count - 0.95) < 0.01)
          << r.id << " " << printed / count;
      ++windowed;
      continue;
    }
    EXPECT_NEAR(printed / count, 1.0, 0.025) << r.id;
    ++checked;
  }
  EXPECT_EQ(checked, 194u);
  EXPECT_EQ(windowed, 30u);
}

TEST(ValidationTest, MegatronCiGoldenValuesCorpus) {
  // tests/data/memory/megatron_ci_memory.json: scripts/megatron_ci_memory.py over Megatron-LM at
  // d98e8a64 (the functional tests' golden "mem-max-allocated-bytes" on the last global rank,
  // with each test's arguments, as they stood when the values were committed, translated to a
  // model.spec). 177 records, all mapped: the 5 tunable-overlap tests run 5 microbatches per
  // pipeline over pp 4 in one microbatch group of 5 (--microbatch-group-size-per-virtual-pipeline-
  // stage 5: plan.vpp_group), which Megatron-Core's interleaved schedule takes and the default
  // group of pp would refuse.
  std::vector<std::string> skipped;
  auto records = MemoryCorpus("megatron_ci_memory.json", &skipped);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(records->size(), 177u);
  EXPECT_TRUE(skipped.empty()) << skipped.front();
  int grouped = 0;
  for (const auto& rec : *records) {
    if (rec.id.find("tunable-overlap") == std::string::npos) continue;
    ++grouped;
    EXPECT_EQ(rec.scenario.plan.vpp_group, 5) << rec.id;
    EXPECT_EQ(rec.scenario.plan.vpp, 3) << rec.id;
    // The last rank measured (rank 3): Megatron's warm-up 2(4 - 3 - 1) + (3 - 1) x 5 = 10 chunk-
    // microbatches, with the one in flight 11 of its 3 chunks: 11/3 microbatches' activations
    // (9/3 with a group of pp = 4).
    const core::MemoryReport mem = core::EstimateMemory(rec.scenario.model, rec.scenario.plan, rec.scenario.gpu);
    EXPECT_DOUBLE_EQ(mem.stages.back().inflight_microbatches, 11.0 / 3.0) << rec.id;
  }
  EXPECT_EQ(grouped, 5);
  bool found = false;
  for (const auto& rec : *records) {
    if (rec.id != "megatron-ci-gpt3-moe-mcore-te-tp4-ep2-etp2-pp2-resume-torch-dist-dist-optimizer-dgx-h100") continue;
    found = true;
    // The test's arguments by hand: 12 layers, hidden 512, 8 heads, --disable-bias-linear, GPT-2
    // BPE vocab 50257 padded to a multiple of 128 x TP 4 = 512 -> 50688, ffn 4h = 2048, 8 experts
    // top-2 of 1024 with a 512-wide shared expert; TP 4, PP 2, EP 2, ETP 2 on 8 GPUs -> DP 1;
    // --use-distributed-optimizer -> ZeRO-1; the last stage's rank measured.
    const core::ModelSpec& m = rec.scenario.model;
    EXPECT_EQ(m.layers, 12);
    EXPECT_EQ(m.vocab, 50688);
    EXPECT_EQ(m.ffn_hidden, 2048);
    EXPECT_EQ(m.bias, core::BiasKind::kNone);
    ASSERT_TRUE(m.moe.has_value());
    EXPECT_EQ(m.moe->experts, 8);
    EXPECT_EQ(m.moe->top_k, 2);
    EXPECT_EQ(m.moe->expert_ffn_hidden, 1024);
    EXPECT_EQ(m.moe->shared_expert_ffn_hidden, 512);
    const core::PlanSpec& p = rec.scenario.plan;
    EXPECT_EQ(p.tp, 4);
    EXPECT_EQ(p.ep, 2);
    EXPECT_EQ(p.etp, 2);
    EXPECT_EQ(p.dp, 1);
    EXPECT_EQ(p.zero, 1);
    EXPECT_TRUE(p.sequence_parallel);
    EXPECT_TRUE(rec.last_stage);
    // Transformer Engine (Megatron-Core's default --transformer-impl) with --moe-grouped-gemm: its
    // cuBLAS workspace and one per grouped-GEMM stream, 5 x 33,554,432 B on an H100.
    EXPECT_TRUE(p.transformer_engine);
    EXPECT_TRUE(p.moe_grouped_gemm);
    const core::MemoryReport mem = core::EstimateMemory(m, p, rec.scenario.gpu);
    EXPECT_EQ(mem.stages.back().te_workspace_bytes, 5 * 33554432LL);
  }
  EXPECT_TRUE(found);
  // The local layer spec runs no Transformer Engine; a MoE test without --moe-grouped-gemm runs its
  // experts one after another.
  for (const auto& rec : *records) {
    if (rec.id == "megatron-ci-gpt3-mcore-tp2-pp2-uninstall-te-dgx-a100")
      EXPECT_FALSE(rec.scenario.plan.transformer_engine);
    if (rec.id == "megatron-ci-gpt3-mcore-te-tp2-pp2-resume-torch-dist-dgx-a100")
      EXPECT_TRUE(rec.scenario.plan.transformer_engine);
    if (rec.id == "megatron-ci-gpt3-mcore-te-tp2-pp1-resume-torch-dist-te-8experts2parallel-dist-optimizer-dgx-h100")
      EXPECT_FALSE(rec.scenario.plan.moe_grouped_gemm);
  }
  const ValidationSummary v = ValidateMemory(*records);
  // Today's level: median 3.7%, p90 7.9%, max 21.6%, nearly all predicted too small (small test
  // models: fixed buffers dominate); 4.8% / 10.1% / 23.0% before Transformer Engine's own cuBLAS
  // workspaces (32 MiB on H100 and GB200, 4 MiB on A100; 5 of them with its grouped GEMM), 5.3% /
  // 10.9% / 40.2% before the native fused cross entropy (10 B per logit) and the deferred
  // output-layer wgrad's buffers (the same 3.6% / 7.9% / 21.6% over 177 with the 5 microbatch-group
  // tests, -1.0% to -3.5%). 3.3% / 6.8% / 21.6% since the router's probabilities are applied
  // where the golden values' Megatron-Core (0.13 on) applies them (PlanSpec::moe_probs, the 43
  // MoE records: the GELU ones keep the activation's output, the SwiGLU ones nothing; their
  // median 7.2% -> 5.5%). Off by more than 10% (docs/memory.md §6): the A100 golden values of the
  // fused-loss tests (0.4 GiB above H100's for the same config), tiny MoE layers with TP.
  EXPECT_LE(v.all.median_abs_error, 0.034);
  EXPECT_LE(v.all.p90_abs_error, 0.07);
  EXPECT_LE(v.all.max_abs_error, 0.22);
  EXPECT_EQ(v.all.out_of_memory, 0u);
  for (const auto& r : v.records) {
    // gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion and _defer_embedding_wgrad_compute on H100:
    // -27% and -29% when costed as the unfused loss without deferral.
    if (r.id == "megatron-ci-gpt3-mcore-te-tp2-pp2-cross-entropy-loss-fusion-dgx-h100" ||
        r.id == "megatron-ci-gpt3-mcore-te-tp2-pp2-resume-torch-dist-defer-embedding-wgrad-compute-dgx-h100")
      EXPECT_LT(std::fabs(r.error), 0.075) << r.id;
  }
}

TEST(ValidationTest, MemoryRecordWithAModelSpecAndRecomputeModules) {
  // A record may give its model whole (model.spec, meshplan's model JSON) and its selective
  // recomputation's modules (parallel.recompute_modules); a bad spec is skipped naming the field.
  const std::string good = R"([{"id": "megatron-ci-spec-check", "hardware": {"gpu": "H100 SXM", "count": 8},
    "model": {"name": "x", "seq_len": 2048, "spec": {"name": "x", "source": "test", "layers": 4, "hidden": 1024,
      "heads": 8, "kv_heads": 8, "head_dim": 128, "ffn_hidden": 4096, "mlp": "gelu", "vocab": 32768, "max_seq": 2048,
      "tied_embeddings": true, "position": "rope", "norm": "rmsnorm", "bias": "none", "qk_norm": false,
      "attention_sinks": false, "dropout": false, "attention": "flash"}},
    "parallel": {"tp": 2, "pp": 1, "etp": 1, "recompute": "selective", "recompute_modules": ["layernorm", "mlp"]},
    "microbatch": 1, "global_batch": 8, "seq_len": 2048, "precision": "bf16",
    "measured": {"peak_allocated_gib": 10.0, "metric": "allocated"}}])";
  std::vector<std::string> skipped;
  auto records = core::LoadPublishedMemory(good, &skipped);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  const auto& rec = records->front();
  EXPECT_EQ(rec.scenario.model.vocab, 32768);
  EXPECT_EQ(rec.scenario.model.position, core::PositionKind::kRope);
  EXPECT_EQ(rec.scenario.plan.recompute, core::Recompute::kSelective);
  EXPECT_EQ(rec.scenario.plan.recompute_modules,
            core::ModuleBit(core::RecomputeModule::kLayernorm) | core::ModuleBit(core::RecomputeModule::kMlp));
  std::string bad = good;
  bad.replace(bad.find("\"heads\": 8"), 10, "\"heads\": 0");
  skipped.clear();
  records = core::LoadPublishedMemory(bad, &skipped);
  ASSERT_TRUE(records.ok());
  EXPECT_TRUE(records->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("model.spec.heads"), std::string::npos) << skipped.front();
}

TEST(ValidationTest, RecordsNeedNoKnownIdToFindTheirStack) {
  // The converter names a run's software stack by its id prefix (presets/stacks applies_to), else
  // by what its source says (recognized_by), else the default stack: a record of a new id keeps
  // its stack. Every shipped corpus file with its ids replaced by "anon-N": the same stack for
  // every record that maps both ways, and no record lost.
  for (const char* file : {"published.json", "published_beyond_tuning.json", "llmfoundry_benchmarks.json",
                           "nemo_performance_summaries.json", "papers_at_scale.json", "torchtitan_h100_2412.json"}) {
    auto text = core::ReadTextFile(std::string(MESHPLAN_TEST_DATA_DIR "/validation/") + file);
    ASSERT_TRUE(text.ok()) << file;
    std::vector<std::string> skipped;
    auto named = core::LoadPublishedRuns(*text, &skipped);
    ASSERT_TRUE(named.ok()) << file;
    nlohmann::json j = nlohmann::json::parse(*text);
    nlohmann::json& recs = j.is_object() ? j["records"] : j;
    int n = 0;
    for (auto& r : recs)
      if (r.is_object() && r.contains("id")) r["id"] = "anon-" + std::to_string(n++);
    auto anon = core::LoadPublishedRuns(j.dump(), &skipped);
    ASSERT_TRUE(anon.ok()) << file;
    EXPECT_GE(anon->size(), named->size()) << file;
    // Match the records by their source (paper, table, row): the stacks a source's records map to.
    std::map<std::string, std::vector<std::string>> anon_stacks, named_stacks;
    for (const auto& r : *anon) anon_stacks[r.source].push_back(r.stack);
    for (const auto& r : *named) named_stacks[r.source].push_back(r.stack);
    for (const auto& [source, stacks] : named_stacks) {
      ASSERT_TRUE(anon_stacks.count(source)) << file << ": " << source;
      for (const auto& st : stacks)
        EXPECT_NE(std::find(anon_stacks[source].begin(), anon_stacks[source].end(), st), anon_stacks[source].end())
            << file << ": " << source << " " << st;
    }
  }
  // A record whose source names no stack meshplan has is predicted with the default one, said.
  const std::string unknown = R"([{"id": "x-1", "source": {"paper": "a blog"}, "hardware": {"gpu": "H100 SXM",
    "count": 8}, "model": {"name": "Llama 3.1 8B", "seq_len": 8192}, "parallel": {"tp": 1, "pp": 1},
    "microbatch": 1, "global_batch": 64, "seq_len": 8192, "measured": {"tokens_per_s_per_gpu": 9000}}])";
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(unknown, &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  EXPECT_EQ(runs->front().stack, core::kDefaultStack);
  const bool said = Says(runs->front().assumptions, "the default's");
  EXPECT_TRUE(said);
}

TEST(ValidationTest, RecordsSayWhatTheyOffloadAndTheirFsdpDegree) {
  // parallel.offload: optimizer states in host memory map to ZeRO-Offload; activations are not
  // modelled and the record is skipped naming the field. parallel.fsdp "FSDP=128" (dgxc's MaxText
  // tables) is an FSDP degree: ZeRO-3.
  auto rec = [](const std::string& parallel_extra) {
    return R"([{"id": "x-2", "source": {"paper": "a blog"}, "hardware": {"gpu": "H100 SXM", "count": 128},
      "model": {"name": "Llama 3 70B", "seq_len": 8192}, "parallel": {"tp": 1, "pp": 1)" +
           parallel_extra + R"(}, "microbatch": 1, "global_batch": 256, "seq_len": 8192,
      "measured": {"tokens_per_s_per_gpu": 900}}])";
  };
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(rec(R"(, "fsdp": "FSDP=128")"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  EXPECT_EQ(runs->front().scenario.plan.zero, 3);
  // A degree that does not fit an int64 is no degree (the stack's ZeRO stage), never a crash.
  runs = core::LoadPublishedRuns(rec(R"(, "fsdp": "FSDP=99999999999999999999999")"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().scenario.plan.zero, 1);  // megatron-core-2024's distributed optimizer
  runs = core::LoadPublishedRuns(rec(R"(, "zero_stage": 3, "offload": ["optimizer"])"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().scenario.plan.offload_optimizer, core::OffloadTarget::kCpu);
  // Activations offloaded: DeepSpeed's checkpoints in host memory, which are full recomputation's,
  // so a record that prints no recomputation ran full, said; one that prints another is refused by
  // the plan's rule.
  skipped.clear();
  runs = core::LoadPublishedRuns(rec(R"(, "zero_stage": 3, "offload": ["optimizer", "activations"])"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  EXPECT_TRUE(runs->front().scenario.plan.offload_checkpoints);
  EXPECT_EQ(runs->front().scenario.plan.recompute, core::Recompute::kFull);
  bool full_said = false;
  for (const auto& a : runs->front().assumptions)
    full_said |= a.rfind("recompute full: the checkpoints it keeps in host memory are full recomputation's", 0) == 0;
  EXPECT_TRUE(full_said);
  skipped.clear();
  runs = core::LoadPublishedRuns(
      rec(R"(, "zero_stage": 3, "recompute": "selective", "offload": ["optimizer", "activations"])"), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("plan.offload.checkpoints: checkpoints in host memory need plan.recompute=full"),
            std::string::npos)
      << skipped.front();
  skipped.clear();
  runs = core::LoadPublishedRuns(rec(R"(, "offload": "gpu")"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("parallel.offload 'gpu' is not optimizer, params or activations"), std::string::npos);
}

TEST(ValidationTest, RecordsOnJeanZayTakeItsNetwork) {
  // BigScience's A100s on IDRIS's Jean Zay: 4 Omni-Path links per node
  // (train/tr11-176B-ml/README.md 'Hardware'), not a DGX A100's 8 HDR NICs, each at the 5.1 GB/s
  // NCCL 2.10 reached through one (experiments/bandwidth/all_reduce_bench-a100-n4.txt: a 4 GB
  // all-reduce over 32 GPUs in 1.52 s, its ring leaving each node through one port:
  // 2 x 31/32 x 4e9 / 1.52 = 5.1e9); a record that names Jean Zay anywhere in its hardware gets
  // that cluster, and says so.
  auto rec = [](const std::string& hardware) {
    return R"([{"id": "x-4", "source": {"repo": "bigscience-workshop/bigscience"}, "hardware": {"gpu": "A100 80GB", )" +
           hardware + R"( "count": 384}, "model": {"name": "g", "layers": 72, "hidden": 14336, "heads": 64,
      "ffn_hidden": 57344, "vocab": 250880, "seq_len": 2048}, "parallel": {"tp": 8, "pp": 6, "dp": 8,
      "zero_stage": 1, "recompute": "full"}, "microbatch": 4, "global_batch": 2048, "seq_len": 2048,
      "precision": "bf16", "measured": {"iteration_time_s": 121.48}}])";
  };
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(rec(R"("gpu_as_printed": "A100 SXM 80GB, Jean Zay gpu_p5",)"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  const core::ClusterSpec& c = runs->front().scenario.cluster;
  EXPECT_EQ(c.name, "jean-zay-a100");
  EXPECT_EQ(c.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(c.nic_bytes_per_s, 5.1e9);
  const bool said = Says(runs->front().assumptions, "cluster jean-zay-a100");
  EXPECT_TRUE(said);
  runs = core::LoadPublishedRuns(rec(""), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().scenario.cluster.name, "dgx-a100");
}

TEST(ValidationTest, GpuNamesAreReadWithoutCaseAndLookAlikesAreRefused) {
  // The GPU is read from the printed name without case and with a size written apart from its unit
  // ("a100 40 GB" is an A100 40GB); a part that only looks like a preset's (a Grace Hopper module,
  // a PCIe card, an export variant, a V100 that is not the DGX-2's SXM3: an SXM2 module sits in a
  // DGX-1-style hybrid cube mesh, as on AWS's p3dn) is skipped with the reason,
  // never costed as the look-alike. V100s are the DGX-2's 32GB SXM3 (dgx-2), or the DGX-2H's at 450 W
  // where the machine is named (dgx-2h, Shoeybi et al. 2019).
  auto rec = [](const std::string& gpu) {
    // V100s have no bf16: their records train in fp16.
    const std::string precision = gpu.find("V100") != std::string::npos ? "fp16" : "bf16";
    return R"([{"id": "x-5", "source": {"paper": "p"}, "hardware": {"gpu": ")" + gpu + R"(", "count": 64},
      "model": {"name": "g", "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 16384, "vocab": 51200,
      "seq_len": 2048}, "parallel": {"tp": 1, "pp": 1, "dp": 64}, "microbatch": 1, "global_batch": 512,
      "seq_len": 2048, "precision": ")" +
           precision + R"(", "measured": {"tokens_per_s_per_gpu": 3000}}])";
  };
  struct Case {
    const char* printed;
    const char* gpu;      // the preset, or "" when refused
    const char* refusal;  // a fragment of the reason when refused
  };
  const Case cases[] = {
      {"a100 40 GB", "a100-40g", ""},
      {"NVIDIA A100-SXM4-40GB", "a100-40g", ""},
      {"A100 40GiB", "a100-40g", ""},
      {"nvidia h100 80gb hbm3", "h100-sxm", ""},
      {"A100 80GB (Jean Zay; 8 GPUs/node, NVLink, 4x Omni-Path per node)", "a100-80g", ""},
      {"NVIDIA GH200 Grace Hopper (Alps)", "gh200", ""},
      {"GH200 144GB HBM3e", "", "144 GB HBM3e"},
      {"A800 80GB", "a800", ""},  // the A100 80GB SXM4 with NVLink at 400 GB/s, on hgx-a800
      {"NVIDIA A800-SXM4-80GB", "a800", ""},
      {"A800 PCIe 80GB", "", "PCIe"},
      {"NVIDIA A800 40GB Active", "", "PCIe"},
      {"NVIDIA H20", "", "export variant"},
      {"A100 80GB PCIe", "", "PCIe"},
      {"H100 NVL", "", "PCIe"},
      {"V100 SXM3 32GB (DGX-2H)", "v100-dgx2h", ""},
      {"V100 (DGX-2)", "v100", ""},
      {"Tesla V100-SXM3-32GB", "v100", ""},
      {"Tesla V100-SXM2-32GB", "", "SXM2 module in a DGX-1's hybrid cube-mesh"},
      {"Tesla V100-SXM2-16GB", "", "16GB"},
      {"V100 PCIe 32GB", "", "PCIe"},
      {"8x V100 32GB (DGX-1)", "", "hybrid cube-mesh"},
      {"TPU v4", "", "no GPU preset for 'TPU v4'"},
      {"AMD Instinct MI355X", "mi355x", ""},  // MLPerf Training v5.1's systems/*.json spelling
      {"AMD Instinct MI350X", "mi350x", ""},
      {"AMD Instinct MI325X 256GB HBM3E", "mi325x", ""},
      {"AMD Instinct MI300X 192GB HBM3", "mi300x", ""},
  };
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(c.printed), &skipped);
    ASSERT_TRUE(runs.ok()) << c.printed;
    if (*c.gpu) {
      ASSERT_EQ(runs->size(), 1u) << c.printed << ": " << (skipped.empty() ? "" : skipped.front());
      EXPECT_EQ(runs->front().scenario.gpu.name, c.gpu) << c.printed;
    } else {
      EXPECT_TRUE(runs->empty()) << c.printed;
      ASSERT_EQ(skipped.size(), 1u) << c.printed;
      EXPECT_NE(skipped.front().find(c.refusal), std::string::npos) << skipped.front();
    }
  }
}

TEST(ValidationTest, AggregateRateAndPercentOfPeakConvertWithTheSourcesCount) {
  // Narayanan 2021 Table 1's 1.7B row prints 137 TFLOP/s per GPU, 4.4 PFLOP/s over its 32 GPUs
  // and 44% of the 312 TFLOP/s peak, all counted with Eq. 3: per token
  // 96 l h^2 (1 + s/6h + V/16lh) = 96 x 24 x 2304^2 x (1 + 2048/13824 + 51200/884736)
  // = 1.22306e10 x 1.206019 = 1.47503e10 FLOPs. A record that prints only one of the three
  // converts it with the same count: 137e12 / F = 9288.0, 4.4e15 / 32 / F = 9321.8,
  // 0.44 x 312e12 / F = 9306.9 tokens/s per GPU.
  auto rec = [](const std::string& measured) {
    return R"([{"id": "narayanan2021-t1-1.7B-x", "source": {"paper": "arXiv 2104.04473"},
      "hardware": {"gpu": "A100 80GB", "count": 32, "peak_tflops_per_gpu_used_by_authors": 312},
      "model": {"name": "GPT 1.7B", "layers": 24, "hidden": 2304, "heads": 24, "vocab": 51200, "seq_len": 2048},
      "parallel": {"tp": 1, "pp": 1, "dp": 32}, "global_batch": 512, "measured": {)" +
           measured + "}}]";
  };
  const double l = 24, h = 2304, s = 2048, v = 51200;
  const double f = 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  struct Case {
    const char* measured;
    double published;
    const char* conversion;
  };
  const Case cases[] = {
      {R"("tflops_per_gpu": 137, "aggregate_pflops": 4.4, "pct_of_peak": 44)", 137e12 / f, "TFLOP/s"},
      {R"("aggregate_pflops": 4.4, "pct_of_peak": 44)", 4.4e15 / 32 / f, "PFLOP/s / GPUs"},
      {R"("pct_of_peak": 44)", 0.44 * 312e12 / f, "percent of peak"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(c.measured), &skipped);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << c.measured << ": " << (skipped.empty() ? "" : skipped.front());
    EXPECT_NEAR(runs->front().published, c.published, 1e-9 * c.published) << c.measured;
    EXPECT_NE(runs->front().conversion.find(c.conversion), std::string::npos) << runs->front().conversion;
  }
  EXPECT_NEAR(137e12 / f, 9288.0, 0.5);  // the published.json figure validate prints
  // HFU alone is not converted: hardware FLOPs count the recomputation, which the record does
  // not say how the source counted; the record is skipped saying so.
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(rec(R"("hfu_pct": 57.0)"), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("hfu_pct"), std::string::npos) << skipped.front();
}

TEST(ValidationTest, ASchedulesNameIsCostedAsThatSchedule) {
  // parallel.schedule naming GPipe, a zero-bubble schedule (ZB-H1) or DualPipe is costed as that
  // schedule and said; a V-shaped one (ZB-V, DualPipeV), which meshplan does not cost, is skipped
  // saying so; a named schedule the plan cannot run (DualPipe with an odd pp) is skipped as invalid.
  auto rec = [](const std::string& schedule, int pp) {
    return R"([{"id": "x-6", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB", "count": )" +
           std::to_string(8 * pp) + R"(}, "model": {"name": "g", "layers": 48, "hidden": 4096, "heads": 32,
      "ffn_hidden": 16384, "vocab": 51200, "seq_len": 2048}, "parallel": {"tp": 8, "pp": )" +
           std::to_string(pp) + R"(, "dp": 1, "schedule": ")" + schedule +
           R"("}, "microbatch": 1, "global_batch": 64, "seq_len": 2048, "precision": "bf16",
      "measured": {"tokens_per_s_per_gpu": 3000}}])";
  };
  struct Case {
    const char* schedule;
    core::Schedule want;
  };
  const Case cases[] = {{"GPipe", core::Schedule::kGpipe},
                        {"ZB-H1 (zero bubble)", core::Schedule::kZeroBubble},
                        {"DualPipe", core::Schedule::kDualPipe},
                        {"1F1B", core::Schedule::k1F1B}};
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(c.schedule, 4), &skipped);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << c.schedule << ": " << (skipped.empty() ? "" : skipped.front());
    EXPECT_EQ(runs->front().scenario.plan.schedule, c.want) << c.schedule;
    const bool said = Says(runs->front().assumptions, "as the record names it");
    EXPECT_EQ(said, c.want != core::Schedule::k1F1B) << c.schedule;
  }
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(rec("ZB-V", 4), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("V-shaped"), std::string::npos) << skipped.front();
  skipped.clear();
  runs = core::LoadPublishedRuns(rec("DualPipe", 3), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("plan invalid"), std::string::npos) << skipped.front();
}

TEST(ValidationTest, ABatchPrintedInTokensIsTakenInSequences) {
  // global_batch_tokens alone (a batch printed as tokens per step): 4,194,304 tokens of 4,096 are
  // 1,024 sequences, said; a count that is not whole sequences is skipped naming the field.
  auto rec = [](const std::string& batch) {
    return R"([{"id": "x-7", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB", "count": 64},
      "model": {"name": "g", "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 16384, "vocab": 51200,
      "seq_len": 4096}, "parallel": {"tp": 8, "pp": 1, "dp": 8}, "microbatch": 1, )" +
           batch + R"(, "seq_len": 4096, "precision": "bf16", "measured": {"iteration_time_s": 10.0}}])";
  };
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(rec(R"("global_batch_tokens": 4194304)"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  EXPECT_EQ(runs->front().scenario.plan.global_batch, 1024);
  EXPECT_DOUBLE_EQ(runs->front().published, 4194304.0 / (10.0 * 64));  // tokens / (iteration x GPUs)
  const bool said = Says(runs->front().assumptions, "global_batch_tokens 4194304");
  EXPECT_TRUE(said);
  skipped.clear();
  runs = core::LoadPublishedRuns(rec(R"("global_batch_tokens": 4000000)"), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("global_batch_tokens 4000000 is not a whole number"), std::string::npos)
      << skipped.front();
  // An integer field written as a whole float (1024.0) is that integer; 1024.5 is not one.
  skipped.clear();
  runs = core::LoadPublishedRuns(rec(R"("global_batch": 1024.0)"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  EXPECT_EQ(runs->front().scenario.plan.global_batch, 1024);
  skipped.clear();
  runs = core::LoadPublishedRuns(rec(R"("global_batch": 1024.5)"), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST(ValidationTest, PrecisionIsReadAsPrintedWithoutCase) {
  // The record's precision, read without case: FP8 with its scaling in Megatron-Bridge's short
  // names or in words, bf16/fp16 under either spelling, and TF32 or FP32 where no 16- or 8-bit
  // type is named (they had fallen to the stack's bf16).
  auto rec = [](const std::string& precision) {
    return R"([{"id": "x-8", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB", "count": 64},
      "model": {"name": "g", "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 16384, "vocab": 51200,
      "seq_len": 4096}, "parallel": {"tp": 8, "pp": 1, "dp": 8}, "microbatch": 1, "global_batch": 64,
      "seq_len": 4096, "precision": ")" +
           precision + R"(", "measured": {"tokens_per_s_per_gpu": 1000}}])";
  };
  struct Case {
    const char* printed;
    core::Dtype dtype;
    core::Fp8Scaling scaling;
  };
  const Case cases[] = {
      {"FP8-CS", core::Dtype::kFp8, core::Fp8Scaling::kCurrent},
      {"fp8 (current scaling)", core::Dtype::kFp8, core::Fp8Scaling::kCurrent},
      {"FP8-DS", core::Dtype::kFp8, core::Fp8Scaling::kDelayed},
      {"MXFP8", core::Dtype::kFp8, core::Fp8Scaling::kBlock},
      {"fp8 blockwise", core::Dtype::kFp8, core::Fp8Scaling::kBlock},
      // Megatron-Core's --fp8-recipe tensorwise is Transformer Engine's Float8CurrentScaling; FP8
      // named by its formats (E4M3, E5M2) is FP8.
      {"FP8 tensorwise", core::Dtype::kFp8, core::Fp8Scaling::kCurrent},
      {"E4M3", core::Dtype::kFp8, core::Fp8Scaling::kDelayed},
      {"bf16 with e5m2 gradients", core::Dtype::kFp8, core::Fp8Scaling::kDelayed},
      {"bfloat16", core::Dtype::kBf16, core::Fp8Scaling::kDelayed},
      {"FP16 mixed", core::Dtype::kFp16, core::Fp8Scaling::kDelayed},
      {"TF32", core::Dtype::kTf32, core::Fp8Scaling::kDelayed},
      {"fp32", core::Dtype::kFp32, core::Fp8Scaling::kDelayed},
  };
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(c.printed), &skipped);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << c.printed << ": " << (skipped.empty() ? "" : skipped.front());
    EXPECT_EQ(runs->front().scenario.plan.precision, c.dtype) << c.printed;
    if (c.dtype == core::Dtype::kFp8) EXPECT_EQ(runs->front().scenario.plan.fp8_scaling, c.scaling) << c.printed;
  }
}

TEST(ValidationTest, RecomputationIsReadAsPrintedWithoutCase) {
  // parallel.recompute read without case, against a stack whose default is full recomputation
  // (megatron-deepspeed-2022, recognised by "bigscience"): an explicit "None" or false is none,
  // "Full activation checkpointing" or true full, checkpointing that names no granularity full
  // (said), and text not read leaves the stack's full, said.
  auto rec = [](const std::string& recompute) {
    return R"([{"id": "x-9", "source": {"repo": "bigscience-workshop/bigscience"}, "hardware": {"gpu": "A100 80GB",
      "count": 64}, "model": {"name": "g", "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 16384,
      "vocab": 51200, "seq_len": 2048}, "parallel": {"tp": 8, "pp": 1, "dp": 8, "recompute": )" +
           recompute + R"(}, "microbatch": 1, "global_batch": 64, "seq_len": 2048, "precision": "bf16",
      "measured": {"tokens_per_s_per_gpu": 1000}}])";
  };
  struct Case {
    const char* printed;
    core::Recompute want;
    const char* said;  // a fragment of an assumption, or ""
  };
  const Case cases[] = {
      {R"("None")", core::Recompute::kNone, ""},
      {"false", core::Recompute::kNone, ""},
      {R"("Full activation checkpointing")", core::Recompute::kFull, ""},
      {"true", core::Recompute::kFull, ""},
      {R"("Selective")", core::Recompute::kSelective, ""},
      {R"("activation checkpointing")", core::Recompute::kFull, "read as full recomputation"},
      {R"("partial")", core::Recompute::kFull, "'partial' not read: the stack's setting stands"},
      {R"("no AC")", core::Recompute::kNone, ""},
      {R"("op-level SAC")", core::Recompute::kSelective, ""},
  };
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(c.printed), &skipped);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << c.printed << ": " << (skipped.empty() ? "" : skipped.front());
    EXPECT_EQ(runs->front().stack, "megatron-deepspeed-2022");
    EXPECT_EQ(runs->front().scenario.plan.recompute, c.want) << c.printed;
    if (*c.said) {
      const bool said = Says(runs->front().assumptions, c.said);
      EXPECT_TRUE(said) << c.printed;
    }
  }
}

TEST(ValidationTest, ShardingIsReadAsPrinted) {
  // parallel.zero_stage as a number or in words, parallel.fsdp as a degree (number or string),
  // true (FULL_SHARD), FSDP2 or NO_SHARD; what is not read ("ZeRO-12") leaves the stack's stage
  // (megatron-core-2024: the distributed optimizer, ZeRO-1) and is said. HYBRID_SHARD is HSDP over
  // a node's data-parallel ranks: 8 GPUs a node over TP 2 = 4 (below).
  auto rec = [](const std::string& sharding) {
    return R"([{"id": "x-10", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB", "count": 64},
      "model": {"name": "g", "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 16384, "vocab": 51200,
      "seq_len": 4096}, "parallel": {"tp": 2, "pp": 1, "dp": 32, )" +
           sharding + R"(}, "microbatch": 1, "global_batch": 64, "seq_len": 4096, "precision": "bf16",
      "measured": {"tokens_per_s_per_gpu": 1000}}])";
  };
  struct Case {
    const char* printed;
    int zero;
    bool said;
  };
  const Case cases[] = {
      {R"("zero_stage": "ZeRO-3")", 3, false}, {R"("zero_stage": "stage 2")", 2, false},
      {R"("zero_stage": 3.0)", 3, false},      {R"("fsdp": 8)", 3, false},
      {R"("fsdp": true)", 3, false},           {R"("fsdp": "NO_SHARD")", 0, false},
      {R"("fsdp": "FSDP2")", 3, false},        {R"("zero_stage": "ZeRO-12")", 1, true},
  };
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(c.printed), &skipped);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << c.printed << ": " << (skipped.empty() ? "" : skipped.front());
    EXPECT_EQ(runs->front().scenario.plan.zero, c.zero) << c.printed;
    const bool said = Says(runs->front().assumptions, "not read");
    EXPECT_EQ(said, c.said) << c.printed;
  }
  for (const auto& [printed, zero] :
       {std::pair{R"("fsdp": "HYBRID_SHARD")", 3}, {R"("fsdp": "_HYBRID_SHARD_ZERO2")", 2}}) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(printed), &skipped);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << printed << ": " << (skipped.empty() ? "" : skipped.front());
    const core::PlanSpec& p = runs->front().scenario.plan;
    EXPECT_EQ(p.zero, zero) << printed;
    EXPECT_EQ(p.sharding, core::Sharding::kHsdp) << printed;
    EXPECT_EQ(p.hsdp_shard_size, 4) << printed;
    EXPECT_TRUE(Says(runs->front().assumptions, "within each node's 4 data-parallel ranks")) << printed;
  }
}

TEST(ValidationTest, AMemoryPeakIsTheKindItsMetricNames) {
  // measured.peak_gib ("the one number to compare against", shared/validation/README.md) is of the
  // kind its metric names, read without case: reserved (or cached), nvidia-smi's device memory,
  // or allocated; a metric naming none of them is skipped saying so.
  auto rec = [](const std::string& metric) {
    return R"([{"id": "x-11", "source": {"repo": "pytorch/torchtitan"}, "model": {"name": "Llama 3.1 8B",
      "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "vocab": 128256,
      "seq_len": 8192}, "hardware": {"gpu": "H100 80GB", "count": 8}, "parallel": {"tp": 1, "pp": 1, "dp": 8,
      "zero_stage": 3}, "microbatch": 1, "global_batch": 8, "seq_len": 8192, "precision": "bf16",
      "measured": {"peak_gib": 60.0, "metric": ")" +
           metric + R"("}}])";
  };
  struct Case {
    const char* metric;
    bool reserved, device;
  };
  const Case cases[] = {{"Max Reserved GiB", true, false},
                        {"torch.cuda.max_memory_cached", true, false},
                        {"nvidia-smi used memory", false, true},
                        {"torch.cuda.max_memory_allocated()", false, false}};
  for (const Case& c : cases) {
    std::vector<std::string> skipped;
    auto records = core::LoadPublishedMemory(rec(c.metric), &skipped);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 1u) << c.metric << ": " << (skipped.empty() ? "" : skipped.front());
    EXPECT_DOUBLE_EQ(records->front().measured_gib, 60.0);
    EXPECT_EQ(records->front().reserved, c.reserved) << c.metric;
    EXPECT_EQ(records->front().device, c.device) << c.metric;
  }
  std::vector<std::string> skipped;
  auto records = core::LoadPublishedMemory(rec("memory"), &skipped);
  ASSERT_TRUE(records.ok());
  EXPECT_TRUE(records->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("names neither allocated, reserved nor nvidia-smi"), std::string::npos)
      << skipped.front();
}

TEST(ValidationTest, ARecipesMegatronFsdpShardsARunWhoseTableHasNoFsdpColumn) {
  // Megatron-Bridge 26.08's tables print no FSDP column; its perf recipes turn Megatron-FSDP on
  // (use_megatron_fsdp, optim_grads_params), which the launch entry records as megatron_fsdp. The
  // 26.04 Llama 3 70B GB200 FP8 row (FSDP 64 printed, megatron_fsdp in its launch entry) read
  // without its FSDP column still shards at ZeRO-3, from the launch entry, and says so; a launch
  // entry without it keeps the stack's ZeRO-1.
  const std::string record = R"json({"id": "megatron-bridge-2604-dgx-gb200-llama3-70b-64gpu-fp8",
      "source": {"paper": "Megatron-Bridge performance summary"},
      "model": {"name": "LLAMA3_70B", "seq_len": 8192},
      "hardware": {"gpu": "GB200 (DGX-GB200)", "count": 64, "precision": "FP8"},
      "parallel": {"tp": 1, "pp": 1, "cp": 1, "fsdp": null}, "microbatch": 2, "global_batch": 256,
      "measured": {"tokens_per_s_per_gpu": 4143}})json";
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns("[" + record + "]", &skipped);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  EXPECT_EQ(runs->front().scenario.plan.zero, 3);
  bool said = false;
  for (const auto& a : runs->front().assumptions)
    said |= a.rfind("Megatron-FSDP (use_megatron_fsdp, optim_grads_params): ZeRO-3 from ", 0) == 0;
  EXPECT_TRUE(said);
  const std::string id = "megatron-bridge-2604-dgx-gb200-llama3-70b-64gpu-fp8";
  std::string other = record;
  other.replace(other.find(id), id.size(), "no-launch-entry-70b");
  auto plain = core::LoadPublishedRuns("[" + other + "]", &skipped);
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(plain->size(), 1u);
  EXPECT_NE(plain->front().scenario.plan.zero, 3);
}

TEST(ValidationTest, ADatasetMayHoldItsRecordsUnderRecords) {
  // A dataset is a JSON array of records, or an object holding that array under "records"; any
  // other shape is refused naming the rule.
  const std::string record = R"({"id": "x-12", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB",
      "count": 64}, "model": {"name": "g", "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 16384,
      "vocab": 51200, "seq_len": 4096}, "parallel": {"tp": 8, "pp": 1, "dp": 8}, "microbatch": 1,
      "global_batch": 64, "seq_len": 4096, "precision": "bf16", "measured": {"tokens_per_s_per_gpu": 1000}})";
  std::vector<std::string> skipped;
  auto plain = core::LoadPublishedRuns("[" + record + "]", &skipped);
  auto wrapped = core::LoadPublishedRuns(R"({"source": "x", "records": [)" + record + "]}", &skipped);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(wrapped.ok());
  ASSERT_EQ(plain->size(), 1u);
  ASSERT_EQ(wrapped->size(), 1u);
  EXPECT_DOUBLE_EQ(plain->front().published, wrapped->front().published);
  auto bad = core::LoadPublishedRuns(R"({"records": 5})", &skipped);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must be a JSON array of records"), std::string::npos);
}

TEST(ValidationTest, FlatMoeFieldsAndAGatedGeluAreRead) {
  // dgxc-benchmarking's records give MoE as model.moe_experts / moe_topk (Grok-1: 8 experts, top-2,
  // each as wide as ffn_hidden, every layer) and its GeGLU activation has SwiGLU's three matrices:
  // a layer's experts hold 8 x 3 x 6144 x 32768 = 4,831,838,208 parameters. A capacity factor is
  // read; an impossible top-k, or flat fields without the experts' width, are refused naming the field.
  auto rec = [](const std::string& moe) {
    return R"J([{"id": "x-14", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB", "count": 512},
      "model": {"name": "g", "layers": 64, "hidden": 6144, "heads": 48, "kv_heads": 8, "ffn_hidden": 32768,
      "vocab": 128256, "seq_len": 8192, "activation": "GeGLU (fast-geglu)", "norm": "RMSNorm", )J" +
           moe + R"(}, "parallel": {"tp": 4, "pp": 8, "cp": 2, "ep": 8, "etp": 4}, "microbatch": 1,
      "global_batch": 1024, "seq_len": 8192, "precision": "bf16", "measured": {"tokens_per_s_per_gpu": 800}}])";
  };
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(
      rec(R"("moe_experts": 8, "moe_topk": 2, "moe_ffn_hidden": 32768, "moe_capacity_factor": 1.0)"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  const core::ModelSpec& m = runs->front().scenario.model;
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->experts, 8);
  EXPECT_EQ(m.moe->top_k, 2);
  EXPECT_EQ(m.moe->expert_ffn_hidden, 32768);
  EXPECT_DOUBLE_EQ(m.moe->capacity_factor, 1.0);
  EXPECT_EQ(m.mlp, core::MlpKind::kSwiglu);
  EXPECT_EQ(core::CountLayerParams(m, true).experts * core::CountLayerParams(m, true).RoutedExpert(), 4'831'838'208);
  EXPECT_EQ(runs->front().scenario.plan.etp, 4);
  skipped.clear();
  runs = core::LoadPublishedRuns(rec(R"("moe_experts": 8, "moe_topk": 9, "moe_ffn_hidden": 32768)"), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("model.moe_topk"), std::string::npos) << skipped.front();
  // Without the experts' width the layout is not guessed (Llama 4 Maverick's records map by their
  // name to the llama4-maverick preset instead).
  skipped.clear();
  runs = core::LoadPublishedRuns(rec(R"("moe_experts": 128, "moe_topk": 1)"), &skipped);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("model.moe_ffn_hidden"), std::string::npos) << skipped.front();
}

TEST(ValidationTest, SequenceParallelismAndTheCpExchangeAreReadAsPrinted) {
  // parallel.sequence_parallel in words ("off" overrides megatron-core-2024's on-with-TP), and the
  // CP exchange from parallel.cp_kind or Transformer Engine's cp_comm_type: p2p is the ring, a2a
  // Ulysses, all_gather the all-gather; a2a+p2p (hierarchical) is not costed and is said.
  auto rec = [](const std::string& fields) {
    return R"([{"id": "x-13", "source": {"paper": "p"}, "hardware": {"gpu": "H100 80GB", "count": 64},
      "model": {"name": "g", "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 16384, "vocab": 51200,
      "seq_len": 16384}, "parallel": {"tp": 2, "pp": 1, "cp": 4, "dp": 8, )" +
           fields + R"(}, "microbatch": 1, "global_batch": 8, "seq_len": 16384, "precision": "bf16",
      "measured": {"tokens_per_s_per_gpu": 1000}}])";
  };
  auto one = [&](const std::string& fields) {
    std::vector<std::string> skipped;
    auto runs = core::LoadPublishedRuns(rec(fields), &skipped);
    EXPECT_TRUE(runs.ok());
    EXPECT_EQ(runs->size(), 1u) << fields << ": " << (skipped.empty() ? "" : skipped.front());
    return runs->empty() ? core::PublishedRun{} : runs->front();
  };
  EXPECT_FALSE(one(R"("sequence_parallel": "off")").scenario.plan.sequence_parallel);
  EXPECT_TRUE(one(R"("sequence_parallel": "Yes")").scenario.plan.sequence_parallel);
  EXPECT_EQ(one(R"("cp_comm_type": "a2a")").scenario.plan.cp_kind, core::CpKind::kUlysses);
  EXPECT_EQ(one(R"("cp_comm_type": "all_gather")").scenario.plan.cp_kind, core::CpKind::kAllGather);
  EXPECT_EQ(one(R"x("cp_kind": "Ring (p2p)")x").scenario.plan.cp_kind, core::CpKind::kRing);
  const core::PublishedRun h = one(R"("cp_comm_type": "a2a+p2p")");
  EXPECT_EQ(h.scenario.plan.cp_kind, core::CpKind::kRing);  // megatron-core-2024's
  const bool said = Says(h.assumptions, "'a2a+p2p' not read");
  EXPECT_TRUE(said);
}

TEST(ValidationTest, RecordsNameTorchtitansNorm) {
  // model.norm_type, torchtitan's own key: fused_rmsnorm (its Triton RMSNorm, the 13B config of
  // April 2024) under a stack that runs its elementwise ops eagerly gives eager-fused-norm and is
  // said; rmsnorm keeps the stack's; a stack that fuses them keeps fused; anything else is skipped
  // naming the field.
  auto rec = [](const std::string& repo, const std::string& norm) {
    return R"([{"id": "x-3", "source": {"repo": ")" + repo + R"("}, "hardware": {"gpu": "A100 80GB", "count": 64},
      "model": {"name": "Llama 2 13B", "layers": 40, "hidden": 5120, "heads": 40, "kv_heads": 40,
      "ffn_hidden": 13824, "vocab": 32000, "seq_len": 4096, "norm_type": )" +
           norm + R"(}, "parallel": {"tp": 1, "pp": 1, "dp": 64, "zero_stage": 3, "recompute": "none"},
      "microbatch": 2, "global_batch": 128, "seq_len": 4096, "measured": {"tokens_per_s_per_gpu": 2162}}])";
  };
  std::vector<std::string> skipped;
  auto runs = core::LoadPublishedRuns(rec("pytorch/torchtitan", R"("fused_rmsnorm")"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u) << (skipped.empty() ? "" : skipped.front());
  EXPECT_EQ(runs->front().stack, "torchtitan-2024");
  EXPECT_EQ(runs->front().scenario.plan.elementwise, core::Elementwise::kEagerFusedNorm);
  const bool said = Says(runs->front().assumptions, "Triton RMSNorm");
  EXPECT_TRUE(said);
  runs = core::LoadPublishedRuns(rec("pytorch/torchtitan", R"("rmsnorm")"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().scenario.plan.elementwise, core::Elementwise::kEager);
  runs = core::LoadPublishedRuns(rec("NVIDIA/Megatron-LM", R"("fused_rmsnorm")"), &skipped);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().scenario.plan.elementwise, core::Elementwise::kFused);
  for (const char* bad : {R"("layernorm")", "3"}) {
    skipped.clear();
    runs = core::LoadPublishedRuns(rec("pytorch/torchtitan", bad), &skipped);
    ASSERT_TRUE(runs.ok());
    EXPECT_TRUE(runs->empty()) << bad;
    ASSERT_EQ(skipped.size(), 1u) << bad;
    EXPECT_NE(skipped.front().find("model.norm_type: must be rmsnorm or fused_rmsnorm"), std::string::npos)
        << skipped.front();
  }
}

TEST(ValidationTest, PublishedOutOfMemoryOutcomesAgainstTheFitVerdict) {
  // measured.outcome without a peak: the source says the run ran out of memory, or that it ran.
  // Llama 3.1 8B on 8 H100s with plain DDP keeps 8.03B x 18 B (bf16 weights, fp32 gradients,
  // master weights and Adam moments) = 145 GB of model state on every GPU: it cannot fit 80 GB;
  // sharded over 8 (FSDP) the state is 18 GB and, with full recomputation at 8k tokens, it fits.
  auto rec = [](const std::string& id, int zero, const std::string& outcome) {
    return R"({"id": ")" + id + R"(", "source": {"repo": "pytorch/torchtitan"}, "hardware": {"gpu": "H100 SXM",
      "count": 8}, "model": {"name": "Llama 3.1 8B", "seq_len": 8192}, "parallel": {"tp": 1, "pp": 1,
      "zero_stage": )" +
           std::to_string(zero) + R"(, "recompute": "full"}, "microbatch": 1, "global_batch": 8,
      "seq_len": 8192, "precision": "bf16", "measured": {"outcome": ")" +
           outcome + R"("}})";
  };
  const std::string text = "[" + rec("ddp-oom", 0, "out_of_memory") + "," + rec("fsdp-fits", 3, "fits") + "," +
                           rec("ddp-said-fits", 0, "fits") + "," + rec("typo", 3, "oom") + "]";
  std::vector<std::string> skipped;
  auto records = core::LoadPublishedMemory(text, &skipped);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 3u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("measured.outcome 'oom' must be out_of_memory or fits"), std::string::npos);
  const ValidationSummary v = ValidateMemory(*records);
  EXPECT_EQ(v.all.n, 0u);  // no peaks: nothing in the error summary
  ASSERT_EQ(v.verdicts.size(), 3u);
  EXPECT_EQ(v.verdicts[0].id, "ddp-oom");
  EXPECT_FALSE(v.verdicts[0].predicted_fits);
  EXPECT_GT(v.verdicts[0].predicted_gib, 130.0);  // the 145 GB of state alone, in GiB: 134.6
  EXPECT_TRUE(v.verdicts[0].Right());
  EXPECT_TRUE(v.verdicts[1].predicted_fits);
  EXPECT_TRUE(v.verdicts[1].Right());
  EXPECT_FALSE(v.verdicts[2].Right());  // a source claiming DDP fits is judged wrong, and counted
  EXPECT_EQ(v.verdicts_wrong, 1u);
  // A record with a peak ran: an out-of-memory outcome beside it is refused.
  skipped.clear();
  std::string both = "[" + rec("both", 3, "out_of_memory") + "]";
  both.replace(both.find(R"("outcome")"), 0, R"("peak_allocated_gib": 40, )");
  records = core::LoadPublishedMemory(both, &skipped);
  ASSERT_TRUE(records.ok());
  EXPECT_TRUE(records->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.front().find("a run with a peak ran"), std::string::npos) << skipped.front();
}

TEST(ValidationTest, PublishedOutcomesAndPeaksFromSourcesNotTunedOn) {
  // tests/data/memory/published_outcomes.json: torchtitan's docs and commits (Llama 2 70B/13B on
  // 64 A100s, Llama 3.1 405B on 128 H100s, Qwen3-32B at FSDP 8-32 x TP 1-8) and BigScience's
  // BLOOM sizing runs (176B-206B on 384 A100s, and the 20B/200B fp16 and bf16 runs of February
  // 17, 2022) and Narayanan 2021 Table 2's caption (529.6B under ZeRO-3 on 560 and 640 A100s):
  // 22 printed outcomes (out of memory, or ran), 6 torchtitan-logged reserved peaks and 45
  // nvidia-smi peaks. None of their ids is a known prefix: each takes its stack by its source.
  std::vector<std::string> skipped;
  auto records = MemoryCorpus("published_outcomes.json", &skipped);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(records->size(), 73u);
  EXPECT_TRUE(skipped.empty()) << (skipped.empty() ? "" : skipped.front());
  for (const auto& r : *records)
    EXPECT_EQ(r.stack, r.id.rfind("torchtitan-", 0) == 0      ? "torchtitan-2024"
                       : r.id.rfind("narayanan2021-", 0) == 0 ? "deepspeed-zero3-2021"
                                                              : "megatron-deepspeed-2022")
        << r.id;
  const ValidationSummary v = ValidateMemory(*records);
  ASSERT_EQ(v.all.n, 51u);
  for (const auto& r : v.records) {
    // Qwen3-32B's six logged reserved peaks (43-89 GiB): every one within 6.5% (-1.8% to +6.1%).
    // Within 5% before DTensor's TP kept its linears' inputs gathered (the four TP runs +0.2..+2.2%
    // -> +4.1..+6.1%: what the measured 70B and 405B TP peaks needed over-counts these, eager and
    // bf16 at local batch 16-32 with full checkpointing; docs/memory.md §6).
    if (r.id.find("qwen3") != std::string::npos) EXPECT_LT(std::fabs(r.error), 0.065) << r.id;
    // The stack's CUDA context is BigScience's own measurement, 1,573 MiB (888 MiB above the
    // profile's 685 MiB, on every one of these nvidia-smi peaks).
    // BLOOM 181B in fp16 (DeepSpeed's ZeRO-1 optimizer), nvidia-smi: -3.0%, +13.3%, -0.7%. Its
    // bf16 layouts of 2022-02-28 name DeepSpeed's BF16_Optimizer, which keeps the bf16 gradients
    // beside its unsharded fp32 buffer (plan.keep_lp_grads, +2 B per parameter): -30..-35% ->
    // -18..-21% (184B at TP 8 x PP 6: 3.68e9 parameters per GPU, 6.9 GiB more); and whose engine
    // casts that buffer to bf16 for the step's all-reduce beside the activations' cached blocks
    // (2 B per parameter more in reserved memory): the 17 bf16 peaks of the section -6.2% to
    // -13.7% (the four of them measured before -18..-21%, the 13 added with it -6..-14%). The rest
    // is not yet traced (docs/memory.md).
    // The 19 fp16 rows of 02-25 to 02-27 added with it (181B at TP 2-8 x PP 2-24, 182B, 195B):
    // -15.7% to +18.0%, the table's own repeat of one layout printing 44 and 38 GB (+1.6% and
    // +17.6% against one prediction).
    if (r.id.find("bloom-181b") != std::string::npos) EXPECT_LT(std::fabs(r.error), 0.19) << r.id;
    if (r.id.find("-fp16-fits") != std::string::npos) EXPECT_LT(std::fabs(r.error), 0.19) << r.id;
    if (r.id.find("bloom-184b") != std::string::npos || r.id.find("bloom-176b") != std::string::npos ||
        r.id.find("bloom-195b") != std::string::npos || r.id.find("bloom-178b") != std::string::npos ||
        r.id.find("bloom-203b") != std::string::npos) {
      if (r.id.find("-fp16-") != std::string::npos) continue;  // the fp16 rows above
      EXPECT_LT(r.error, -0.05) << r.id;
      EXPECT_GT(r.error, -0.145) << r.id;
    }
    // The February 17 runs, fp16 and bf16 alike, are 20-24% under: DeepSpeed 0.5's ZeRO-1 step
    // holds more than the 16 B/param the stack costs (docs/memory.md).
    if (r.id.find("prequel-0217") != std::string::npos) {
      EXPECT_LT(r.error, -0.2) << r.id;
      EXPECT_GT(r.error, -0.245) << r.id;
    }
  }
  // 20 of 22 verdicts right: Llama 2 13B without checkpointing at 2 x 4096 tokens ran at 73.7 GiB
  // predicted with its config's Triton RMSNorm (86.8 GiB op by op); the bf16 184B at DP 16 x TP 4
  // x PP 6 ran out of memory at micro batch 1 and 2 alike, and its step's peak (the states and the
  // all-reduce copy, the cache freed) is 82.5 GiB of 80 at both (73.0 and 78.6 before the copy).
  // Wrong: 206B at DP 8 x TP 4 x PP 12, 62.6 GiB predicted, whose sibling 203B of the same table
  // holds as many parameters per GPU and ran at 67 GB (62.7 predicted): no count of bytes
  // separates the two (docs/memory.md).
  // The 51 peaks: median 8.6% (over the 32 before the fp16 rows also 8.6%; 18.2% over the 19
  // before the copy; 19.4% with the profile's CUDA context on the BLOOM ones).
  // Narayanan 2021 Table 2's caption: the 529.6B model under ZeRO-3 did not fit on 560 A100s at
  // micro batch 4 and ran on 640: their model states differ by 1.76 GiB, so the 640 run's peak
  // lies in (77.5, 79.26] GiB of the 79.26 CUDA reports of an A100 80GB (the preset's
  // cuda_total_bytes; (78.2, 80] against its physical 80 GiB). Predicted 80.4 and 78.7 GiB on the
  // GPU since DeepSpeed 0.3's gradient path
  // is counted (its two reduce buckets, the MLP matrices' whole gradients and the list
  // reduce-scatter's flat copy, less the MLP's freed activations, with the two activation
  // gradients autograd holds then: 7.5 GB; 73.4 and 71.6 before it, 79.8 and 78.0 before the
  // activation gradients): the 640 right and inside the bracket; the 560 over the GPU's memory
  // only by the allocator's assumed reserve, so tight, predicted to run, and still wrong
  // (docs/memory.md).
  EXPECT_LT(v.all.median_abs_error, 0.09);
  ASSERT_EQ(v.verdicts.size(), 22u);
  EXPECT_LE(v.verdicts_wrong, 2u);
  for (const auto& vr : v.verdicts) {
    if (vr.id == "narayanan2021-t2-zero3-529.6B-a100x640-mbs4-fits") {
      EXPECT_TRUE(vr.Right()) << vr.predicted_gib;
      EXPECT_NEAR(vr.predicted_gib, 78.7, 0.1);
      EXPECT_GT(vr.predicted_gib, 77.5);  // inside the bracket the caption sets
      EXPECT_LT(vr.predicted_gib, 79.26);
    }
    if (vr.id == "narayanan2021-t2-zero3-529.6B-a100x560-mbs4") {
      EXPECT_FALSE(vr.Right()) << vr.predicted_gib;  // a known gap: if it turns right, say why in the docs
      EXPECT_NEAR(vr.predicted_gib, 80.4, 0.1);
    }
  }
  double p203 = 0, p206 = 0;
  for (const auto& r : v.records)
    if (r.id.find("bloom-203b") != std::string::npos) p203 = r.predicted;
  for (const auto& vr : v.verdicts) {
    if (vr.id.find("bloom-184b-a100x384-dp16-tp4-pp6") != std::string::npos)
      EXPECT_TRUE(vr.Right()) << vr.id << " predicted " << vr.predicted_gib << " GiB";
    if (vr.id.find("bloom-206b") != std::string::npos) p206 = vr.predicted_gib;
  }
  EXPECT_NEAR(p206, p203, 0.5);
  for (const auto& vr : v.verdicts)
    if (vr.id.find("llama2-13b") != std::string::npos) EXPECT_TRUE(vr.Right()) << vr.predicted_gib;
  for (const auto& vr : v.verdicts)
    if (vr.id.find("qwen3") != std::string::npos || vr.id.find("405b") != std::string::npos ||
        vr.id.find("llama2-70b") != std::string::npos)
      EXPECT_TRUE(vr.Right()) << vr.id << " predicted " << vr.predicted_gib << " GiB";
}

TEST(ValidationTest, DeepSeekV3PretrainingThroughputOnH800) {
  // DeepSeek-V3 technical report (arXiv 2412.19437), Table 1: pre-training took 2,664K H800
  // GPU-hours for 14.8T tokens = 14.8e12 / (2.664e6 x 3600) = 1,543 tokens/s per GPU. Their
  // recipe (§3.2, §3.4): 2048 H800s, PP 16 with DualPipe, EP 64 across 8 nodes, no TP, ZeRO-1,
  // FP8 GEMMs, sequence 4096, batch 15,360 sequences (the final value of their ramp); the 61
  // layers split 3 + 14 x 4 + 2 here (the report does not print the split). Not in the tuning
  // set: a first-principles check on an MoE/FP8/H800 run.
  const core::ModelSpec m = *core::LoadModel("deepseek-v3");
  const core::GpuSpec g = *core::LoadGpu("h800");
  const core::ClusterSpec c = *core::LoadCluster("hgx-h800");
  core::PlanSpec p;
  p.pp = 16;
  p.ep = 64;
  p.dp = 128;
  p.gpus = 2048;
  p.zero = 1;
  p.seq_len = 4096;
  p.global_batch = 15360;
  p.schedule = core::Schedule::kDualPipe;
  p.precision = core::Dtype::kFp8;
  p.stage_layers = {3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2};
  const StepEstimate e = EstimateStep(m, p, g, c, core::Profile{});
  EXPECT_NEAR(e.tokens_per_s_per_gpu, 1543, 0.10 * 1543);  // today: about 1,403 (-9%; H800 FP8 GEMMs at 0.594)
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

// validate judges Table 4's per-layer timings beside the runs: each record's predicted passes are
// DenseLayerTimes' (the backward with its weight gradients and recompute), and the error is the
// runs' sense of one, published time over predicted less 1. Today's defaults: the five layers
// -2.8% to +1.2% (the no-SP baseline 7.70 + 11.90 ms published, 7.66 + 12.51 predicted: 19.60 /
// 20.17 - 1 = -2.8%).
TEST(ValidationTest, PerLayerTimingsAreJudgedAgainstTheLayerTheStepModelCosts) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok());
  auto timings = core::LoadPublishedLayerTimings(*text);
  ASSERT_TRUE(timings.ok()) << timings.status().ToString();
  const LayerTimingSummary v = ValidateLayerTimings(*timings, core::Profile{});
  ASSERT_EQ(v.records.size(), 5u);
  ASSERT_EQ(v.all.n, 5u);
  for (size_t i = 0; i < v.records.size(); ++i) {
    const LayerTimingRecord& r = v.records[i];
    const core::Scenario& s = (*timings)[i].scenario;
    const StageTimes t = DenseLayerTimes(s.model, s.plan, s.gpu, s.cluster, core::Profile{});
    EXPECT_DOUBLE_EQ(r.predicted_forward_s, t.forward_s) << r.id;
    EXPECT_DOUBLE_EQ(r.predicted_backward_s, t.backward_input_s + t.backward_weight_s) << r.id;
    EXPECT_DOUBLE_EQ(r.published_forward_s, (*timings)[i].forward_s) << r.id;
    EXPECT_NEAR(r.error,
                (r.published_forward_s + r.published_backward_s) / (r.predicted_forward_s + r.predicted_backward_s) - 1,
                1e-12)
        << r.id;
    EXPECT_NEAR(r.forward_error, r.published_forward_s / r.predicted_forward_s - 1, 1e-12) << r.id;
    EXPECT_EQ(r.stack, "megatron-lm-2022") << r.id;
  }
  EXPECT_EQ(v.records[0].id, "korthikanti2022-t4-22B-1layer-baseline-no-recompute");
  EXPECT_NEAR(v.records[0].published_forward_s + v.records[0].published_backward_s, 19.6e-3, 1e-9);
  EXPECT_NEAR(v.records[0].error, -0.028, 0.002);
  EXPECT_LE(v.all.max_abs_error, 0.03);
  EXPECT_LE(v.all.median_abs_error, 0.02);
}

// Calibration from published kernels (docs/calibration.md): Korthikanti 2022 Table 4 times one
// 22B layer (t = 8, b = 4, s = 2048) forward and backward in five configurations, 10 numbers.
// Fitting gemm_efficiency.fp16, F_half, the kernel overhead, hbm_efficiency (held at 1) and
// comm.scale_up to them reproduces each within 1.5%; the shipped preset a100-megatron-2022 is
// that fit. The defaults come within 5% of the 10 numbers, so the fit changes the 19 end-to-end
// records (not fitted) little.
TEST(ValidationTest, ProfileFittedToTable4ReproducesItAndIsTheShippedPreset) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/published.json");
  ASSERT_TRUE(text.ok());
  auto timings = core::LoadPublishedLayerTimings(*text);
  ASSERT_TRUE(timings.ok()) << timings.status().ToString();
  ASSERT_EQ(timings->size(), 5u);
  std::vector<LayerSample> layers;
  for (const auto& t : *timings) layers.push_back({t.id, t.scenario, t.forward_s, t.backward_s});
  auto fit = FitProfile({}, {}, layers.front().scenario.gpu, core::Profile{}, {}, layers);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  for (const auto& l : fit->report.layers) {
    EXPECT_NEAR(l.forward_after_s / l.forward_s, 1.0, 0.015) << l.id;
    EXPECT_NEAR(l.backward_after_s / l.backward_s, 1.0, 0.015) << l.id;
  }
  auto shipped = core::LoadProfile("a100-megatron-2022");
  ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
  const core::Profile& f = fit->profile;
  EXPECT_NEAR(shipped->gemm_efficiency.at(core::Dtype::kFp16), f.gemm_efficiency.at(core::Dtype::kFp16), 1e-9);
  EXPECT_NEAR(shipped->gemm_half_flops / f.gemm_half_flops, 1.0, 1e-9);
  EXPECT_NEAR(shipped->kernel_overhead_s / f.kernel_overhead_s, 1.0, 1e-9);
  EXPECT_NEAR(shipped->hbm_efficiency, f.hbm_efficiency, 1e-12);
  EXPECT_NEAR(shipped->comm.scale_up, f.comm.scale_up, 1e-9);
  // Today's values (meshplan calibrate published ... -o presets/profiles/a100-megatron-2022.json;
  // 0.8523 and 0.6949 before the hidden TP all-reduces slowed the weight-gradient GEMMs beside
  // them: the fit now takes faster GEMMs and a slower NVLink).
  EXPECT_NEAR(f.gemm_efficiency.at(core::Dtype::kFp16), 0.8859, 0.001);
  EXPECT_NEAR(f.comm.scale_up, 0.6343, 0.001);
  EXPECT_DOUBLE_EQ(f.hbm_efficiency, 1.0);

  // The defaults time the layer within 6% (GEMM wave quantization, docs/compute.md; 6-9% too
  // fast before it): today forward -3% to -1%, backward -0.4% to +5.1%. The backward was -4% to
  // +1% before the hidden TP collectives slowed the weight-gradient GEMMs beside them (NCCL's
  // 18.9%, Lee et al. 2025): the no-SP baseline, whose two asynchronous all-reduces are the
  // largest hidden collectives here, went from +1% to +5.1%, a sign that Megatron's async
  // all-reduce on A100 NVLink slows the GEMMs less than that mean (docs/compute.md).
  for (const auto& l : fit->report.layers) {
    EXPECT_NEAR(l.forward_before_s / l.forward_s, 1.0, 0.06) << l.id;
    EXPECT_NEAR(l.backward_before_s / l.backward_s, 1.0, 0.06) << l.id;
  }
  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  const ValidationSummary with = ValidateRuns(*runs, *shipped);
  const ValidationSummary without = ValidateRuns(*runs, core::Profile{});
  // Since the layer is right, fitting it no longer helps the 19 end-to-end records: with the
  // profile median 5.6%, max 11.7%; with the defaults 2.5% and 6.5% (4.0%/9.5% and 3.1%/6.7%
  // before hidden collectives slowed the compute beside them, OverlapSlowdown: the fit answers the
  // slower backward with faster GEMMs, which the end-to-end runs do not show; 5.2%/11.8% and
  // 5.0%/10.0% before the slowest-GPU pace; before wave quantization the profile gave 2.9% / 6.5%
  // and the defaults 9.4% / 12.6%: it stood in for the mechanism).
  EXPECT_LE(without.median_abs_error, 0.03);
  EXPECT_LE(without.max_abs_error, 0.07);
  EXPECT_LE(with.median_abs_error, 0.06);
  EXPECT_LE(with.max_abs_error, 0.12);
}

}  // namespace
}  // namespace meshplan::sim
