// Model-state memory against the ZeRO paper, the seeds' worked numbers and Megatron's recipe.
#include "core/memory.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "core/presets.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

PlanSpec ZeroPlan(int zero, int64_t dp) {
  PlanSpec p;
  p.zero = zero;
  p.dp = dp;
  p.gpus = dp;
  p.seq_len = 2048;
  p.global_batch = dp;
  return p;
}

TEST(MemoryTest, MixedPrecisionAdamIsSixteenBytesPerParam) {
  // ZeRO paper §3.1: 2 (fp16 weights) + 2 (fp16 grads) + K=12 (fp32 master, momentum, variance).
  EXPECT_DOUBLE_EQ(BytesPerParam(PlanSpec{}), 16.0);
  const ModelStateBytes s = ShardedModelStates(1.0, PlanSpec{}, 1);
  EXPECT_DOUBLE_EQ(s.weights, 2.0);
  EXPECT_DOUBLE_EQ(s.grads, 2.0);
  EXPECT_DOUBLE_EQ(s.Optimizer(), 12.0);
}

TEST(MemoryTest, MuonKeepsOneMomentAndAdamsTwoForTheEmbeddingHeadAndNorms) {
  // Megatron-Core's Muon: one momentum buffer for the 2D hidden weights, its scalar optimizer
  // (Adam, m and v) for the embedding, the output head and the norms. Llama-3-8B on one GPU:
  // 8,030,261,248 parameters, of which Adam's: the embedding and the untied head 2 x 128,256 x
  // 4,096 = 1,050,673,152, the final norm 4,096 and 32 layers x 2 norms x 4,096 = 262,144, so
  // 1,050,939,392. Moments: 4 x 8,030,261,248 + 4 x 1,050,939,392 = 36,324,802,560 B (AdamW:
  // 8 x 8,030,261,248 = 64,242,089,984).
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = ZeroPlan(0, 1);
  p.optimizer = Optimizer::kMuon;
  const MemoryReport r = EstimateMemory(*m, p, *LoadGpu("h100-sxm"));
  ASSERT_EQ(r.stages.size(), 1u);
  EXPECT_EQ(r.stages[0].params, 8'030'261'248);
  EXPECT_EQ(r.stages[0].optimizer_moments_bytes, 36'324'802'560);
  p.optimizer = Optimizer::kAdamW;
  EXPECT_EQ(EstimateMemory(*m, p, *LoadGpu("h100-sxm")).stages[0].optimizer_moments_bytes, 64'242'089'984);
  // Sharded (ZeRO-1 over 8, the layer-wise distributed Muon): both parts over the group.
  PlanSpec z = ZeroPlan(1, 8);
  z.optimizer = Optimizer::kMuon;
  EXPECT_EQ(EstimateMemory(*m, z, *LoadGpu("h100-sxm")).stages[0].optimizer_moments_bytes, 36'324'802'560 / 8);
}

TEST(MemoryTest, SeventyBNeedsOnePointOneTwoTerabytes) {
  // The seeds: 70e9 x 16 B = 1.12 TB; ZeRO-3 over 8 ranks = 140 GB.
  EXPECT_DOUBLE_EQ(ShardedModelStates(70e9, ZeroPlan(0, 8), 8).Total(), 1.12e12);
  EXPECT_DOUBLE_EQ(ShardedModelStates(70e9, ZeroPlan(3, 8), 8).Total(), 140e9);
}

TEST(MemoryTest, SeedsSevenBOnFourGpusTable) {
  // The seeds' table (7B, 4 GPUs): fp16 params 14 GB, grads 14 GB, optimizer 56 GB (8 B/param:
  // fp32 m and v, no separate master copy) -> DP 84, ZeRO-1 42, ZeRO-2 31.5, ZeRO-3 21 GB.
  const double expect[] = {84e9, 42e9, 31.5e9, 21e9};
  for (int zero = 0; zero <= 3; ++zero) {
    PlanSpec p = ZeroPlan(zero, 4);
    p.dtypes.master_weights = Dtype::kNone;
    EXPECT_DOUBLE_EQ(ShardedModelStates(7e9, p, 4).Total(), expect[zero]) << "zero " << zero;
  }
}

TEST(MemoryTest, ZeroPaperTableOneEveryCell) {
  // Rajbhandari et al. 2020, Table 1 (all cells, as recorded in shared/validation/published.json):
  // per-device model-state GB for Psi in {7.5B, 128B, 1T} and DP in {1..1024}, rounded by the paper.
  std::ifstream in(MESHPLAN_VALIDATION_DIR "/published.json");
  ASSERT_TRUE(in) << "missing " MESHPLAN_VALIDATION_DIR "/published.json";
  const auto records = nlohmann::json::parse(in);
  int cells = 0;
  for (const auto& r : records) {
    const std::string id = r["id"];
    if (id.rfind("zero-t1-", 0) != 0) continue;
    const double psi = r["model"]["params_b"].get<double>() * 1e9;
    const int64_t dp = r["parallel"]["dp"];
    const auto& gb = r["measured"]["other"]["model_state_memory_GB_per_device"];
    const struct {
      const char* key;
      int zero;
    } kCols[] = {{"P_os (ZeRO-1)", 1}, {"P_os+g (ZeRO-2)", 2}, {"P_os+g+p (ZeRO-3)", 3}};
    for (const auto& col : kCols) {
      if (!gb.contains(col.key) || gb[col.key].is_null()) continue;
      const double published = gb[col.key].get<double>();
      const double ours = ShardedModelStates(psi, ZeroPlan(col.zero, dp), dp).Total() / 1e9;
      // The paper prints 3 significant figures (e.g. 31.4, 1.88, 0.12): compare at 0.5% + rounding.
      const double tol = std::max(published * 0.005, 0.0051);
      EXPECT_NEAR(ours, published, tol) << id << " " << col.key;
      ++cells;
    }
  }
  EXPECT_EQ(cells, 54);  // 3 models x 6 DP degrees x 3 stages
}

TEST(MemoryTest, MegatronRecipeIsEighteenBytesAndDistributedOptimizerSixPlusTwelveOverD) {
  // Megatron-LM keeps fp32 main gradients: 2 + 4 + 4 + 4 + 4 = 18 B/param; its distributed
  // optimizer shards master weights and moments (ZeRO-1): 6 + 12/d (Megatron docs, distrib_optimizer).
  PlanSpec p = ZeroPlan(0, 8);
  p.dtypes.grads = Dtype::kFp32;
  EXPECT_DOUBLE_EQ(BytesPerParam(p), 18.0);
  p.zero = 1;
  EXPECT_DOUBLE_EQ(ShardedModelStates(1.0, p, 8).Total(), 6.0 + 12.0 / 8.0);
}

TEST(MemoryTest, Bf16OptimizerKeepsTheBf16GradientsBesideItsFp32Buffer) {
  // DeepSpeed's BF16_Optimizer (bf16_optimizer.py at 56c5223, backward(clear_lp_grads=False)):
  // the bf16 .grad stays beside the fp32 accumulation buffer, 2 + 4 B of gradients per parameter;
  // with its ZeRO-1 sharding of master weights and moments: 2 + 4 + 2 + 12/d (BigScience: "4bytes x
  // params ... not sharded across gpus" over fp16's 2 B of 16-bit accumulation, 6 B against 2).
  PlanSpec p = ZeroPlan(1, 8);
  p.dtypes.grads = Dtype::kFp32;
  p.keep_lp_grads = true;
  ModelStateBytes s = ShardedModelStates(1.0, p, 8);
  EXPECT_DOUBLE_EQ(s.grads, 6.0);
  EXPECT_DOUBLE_EQ(s.Total(), 8.0 + 12.0 / 8.0);
  // The kept gradients are sharded as the gradients are (ZeRO-2: both over d).
  p.zero = 2;
  s = ShardedModelStates(1.0, p, 8);
  EXPECT_DOUBLE_EQ(s.grads, 6.0 / 8.0);
}

struct Loaded {
  ModelSpec model;
  GpuSpec gpu;
  ClusterSpec cluster;
};
Loaded Load(const char* model, const char* gpu, const char* cluster) {
  Loaded l;
  auto m = LoadModel(model);
  auto g = LoadGpu(gpu);
  auto c = LoadCluster(cluster);
  EXPECT_TRUE(m.ok() && g.ok() && c.ok());
  if (m.ok()) l.model = *m;
  if (g.ok()) l.gpu = *g;
  if (c.ok()) l.cluster = *c;
  return l;
}

TEST(MemoryTest, Llama3SeventyBZeroThreeOnEightH100s) {
  // Model states by hand: 70.55e9 params x 16 B / 8 = 141.1 GB of model states per GPU; ZeRO-0
  // keeps all 1.129 TB on each GPU. Neither fits an 80 GiB H100.
  Loaded l = Load("llama3-70b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(3, 8);
  p.seq_len = 8192;
  Diagnostics d;
  ValidatePlan(p, l.model, l.gpu, l.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  MemoryReport r = EstimateMemory(l.model, p, l.gpu);
  const StageMemory& st = r.stages[0];
  const int64_t states = st.weights_bytes + st.grads_bytes + st.optimizer_bytes;
  EXPECT_NEAR(static_cast<double>(states), 141.1e9, 141.1e9 * 0.01);
  EXPECT_EQ(states, 70'553'706'496LL * 16 / 8);
  EXPECT_FALSE(r.fits);
  p.zero = 0;
  r = EstimateMemory(l.model, p, l.gpu);
  const StageMemory& st0 = r.stages[0];
  EXPECT_EQ(st0.weights_bytes + st0.grads_bytes + st0.optimizer_bytes, 70'553'706'496LL * 16);
  EXPECT_FALSE(r.fits);
  EXPECT_GT(r.per_gpu_bytes, r.capacity_bytes);
}

TEST(MemoryTest, Bf16OptimizerStepCastsItsFp32GradientsForTheAllReduceBesideTheCachedActivations) {
  // DeepSpeed 15293139f (2022-02-28): the pipeline engine all-reduces the BF16_Optimizer's fp32
  // gradient buffer through allreduce_bucket, which first casts it to the engine's communication
  // dtype (bf16 under ZeRO stage 0): 2 B per parameter, made after the last backward, when the
  // microbatches' activations are freed but their blocks stay cached. GPT-3 175B at TP 8 x PP 3 x
  // DP 16 on A100 80GB: stage 0 holds 7,352,821,248 parameters, so the copy is 14,705,642,496 B.
  Loaded l = Load("gpt3-175b", "a100-80g", "dgx-a100");
  PlanSpec p;
  p.tp = 8;
  p.pp = 3;
  p.dp = 16;
  p.gpus = 384;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = Recompute::kFull;
  p.micro_batch = 2;
  p.global_batch = 2048;
  p.seq_len = 2048;
  p.dtypes.grads = Dtype::kFp32;
  Diagnostics d;
  ValidatePlan(p, l.model, l.gpu, l.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const MemoryReport without = EstimateMemory(l.model, p, l.gpu);
  p.keep_lp_grads = true;
  const MemoryReport with = EstimateMemory(l.model, p, l.gpu);
  const StageMemory &a = without.stages[0], &b = with.stages[0];
  constexpr int64_t kCopy = 14'705'642'496;
  EXPECT_EQ(b.params, 7'352'821'248);
  EXPECT_EQ(b.step_copy_bytes, kCopy);
  EXPECT_EQ(a.step_copy_bytes, 0);
  // Micro batch 2: beside the cached activations the stage holds 82.2 GB of 85.9: on the GPU it
  // gains the kept bf16 gradients and the copy, 2 x 14.7 GB. The step's allocated peak (the
  // states and the copy, 79.08 GB) is above the activations' (66.3 GB with the kept gradients),
  // so the peak allocated gains the kept gradients and the copy less the activations (1.93 GB).
  EXPECT_EQ(b.total_bytes - a.total_bytes, 2 * kCopy);
  EXPECT_EQ(b.step_copy_on_top_bytes, kCopy);
  EXPECT_EQ(PeakAllocatedBytes(b) - PeakAllocatedBytes(a), kCopy + kCopy - a.activations_bytes);
  EXPECT_EQ(PeakReservedBytes(b) - PeakReservedBytes(a), 2 * kCopy);
  EXPECT_TRUE(with.fits);
  // Micro batch 8 (7.73 GB of activations): beside them the stage would hold 88.3 GB of 85.9, so
  // the allocator frees its cached blocks and the step's own peak is what the GPU holds: the
  // states (64.34 GB) and the copy (14.71 GB) with the context, cuBLAS's workspace and NCCL's
  // buffers (1.15 GB), 80.20 GB.
  p.micro_batch = 8;
  const MemoryReport big = EstimateMemory(l.model, p, l.gpu, MemoryOverheads{}, MemoryDetail::kFull);
  const StageMemory& c = big.stages[0];
  EXPECT_GT(c.weights_bytes + c.grads_bytes + c.optimizer_bytes + c.activations_bytes + c.step_copy_bytes +
                c.cuda_context_bytes + c.nccl_bytes,
            big.capacity_bytes);
  EXPECT_EQ(c.total_bytes, c.weights_bytes + c.grads_bytes + c.optimizer_bytes + kCopy + c.cuda_context_bytes +
                               c.cublas_workspace_bytes + c.nccl_bytes);
  EXPECT_NEAR(static_cast<double>(c.total_bytes), 80.20e9, 0.01e9);
  EXPECT_LT(c.step_copy_on_top_bytes, kCopy);
}

TEST(MemoryTest, ThePlansCudaContextReplacesTheProfiles) {
  // A CUDA context is outside the allocator: it moves the total on the GPU, not the peak
  // allocated. BigScience's stack: 1,573 MiB (chronicles-prequel.md at 9e64ede) against the
  // profile's 685 MiB, 888 MiB more on every stage.
  Loaded l = Load("llama3-70b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(3, 8);
  p.seq_len = 8192;
  const MemoryReport base = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(base.stages[0].cuda_context_bytes, 685LL << 20);
  p.cuda_context_bytes = 1573LL << 20;
  Diagnostics d;
  ValidatePlan(p, l.model, l.gpu, l.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const MemoryReport r = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(r.stages[0].cuda_context_bytes, 1573LL << 20);
  EXPECT_EQ(r.stages[0].total_bytes - base.stages[0].total_bytes, 888LL << 20);
  EXPECT_EQ(PeakAllocatedBytes(r.stages[0]), PeakAllocatedBytes(base.stages[0]));
  // Out of range: named with its rule.
  for (int64_t bad : {int64_t{-1}, (int64_t{64} << 30) + 1}) {
    p.cuda_context_bytes = bad;
    Diagnostics e;
    ValidatePlan(p, l.model, l.gpu, l.cluster, &e);
    EXPECT_NE(e.ToStatus().ToString().find("plan.cuda_context_bytes: must be 0 (the profile's) or a byte count"),
              std::string::npos)
        << e.ToStatus().ToString();
  }
}

TEST(MemoryTest, TransformerEngineHoldsItsOwnCublasWorkspaces) {
  // transformer_engine/pytorch/module/base.py: get_cublas_workspace_size_bytes() is 33,554,432 B
  // from compute capability 9 up and 4,194,304 below; GroupedLinear holds one more per compute
  // stream (4). They go through PyTorch's allocator: peak allocated moves with them.
  Loaded h = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(1, 8);
  p.seq_len = 4096;
  const MemoryReport none = EstimateMemory(h.model, p, h.gpu);
  EXPECT_EQ(none.stages[0].te_workspace_bytes, 0);
  p.transformer_engine = true;
  const MemoryReport te = EstimateMemory(h.model, p, h.gpu);
  EXPECT_EQ(te.stages[0].te_workspace_bytes, 33554432);
  EXPECT_EQ(PeakAllocatedBytes(te.stages[0]) - PeakAllocatedBytes(none.stages[0]), 33554432);
  Loaded a = Load("llama3-8b", "a100-80g", "dgx-a100");
  EXPECT_EQ(a.gpu.compute_capability_major, 8);
  EXPECT_EQ(EstimateMemory(a.model, p, a.gpu).stages[0].te_workspace_bytes, 4194304);
  // An MoE stage with the grouped GEMM: 1 + 4 workspaces; its experts one after another: 1.
  Loaded q = Load("qwen3-30b-a3b", "h100-sxm", "dgx-h100");
  PlanSpec e = ZeroPlan(1, 8);
  e.seq_len = 4096;
  e.ep = 8;
  e.transformer_engine = true;
  EXPECT_EQ(EstimateMemory(q.model, e, q.gpu).stages[0].te_workspace_bytes, 5 * 33554432LL);
  e.moe_grouped_gemm = false;
  EXPECT_EQ(EstimateMemory(q.model, e, q.gpu).stages[0].te_workspace_bytes, 33554432);
}

// Llama-3-70B at TP 8 x PP 4 with SP, 16 microbatches of 8192 tokens.
PlanSpec Llama70bTp8Pp4() {
  PlanSpec p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 1;
  p.gpus = 32;
  p.seq_len = 8192;
  p.global_batch = 16;
  p.sequence_parallel = true;
  return p;
}

TEST(MemoryTest, PipelineStagesSplitWeightsAndPutEmbeddingsAtTheEnds) {
  // Llama-3-70B, pp=4: 20 layers per stage; stage 0 adds the vocab-parallel embedding
  // (128256*8192/tp), the last stage the untied head plus the final norm.
  Loaded l = Load("llama3-70b", "h100-sxm", "dgx-h100");
  const PlanSpec p = Llama70bTp8Pp4();
  const MemoryReport r = EstimateMemory(l.model, p, l.gpu);
  ASSERT_EQ(r.stages.size(), 4u);
  // Per layer on one TP rank: (8192^2*2 + 8192*1024*2 + 3*8192*28672)/8 + 2*8192 norms.
  const int64_t layer = (2LL * 8192 * 8192 + 2LL * 8192 * 1024 + 3LL * 8192 * 28672) / 8 + 2 * 8192;
  const int64_t emb = 128256LL * 8192 / 8;
  EXPECT_EQ(r.stages[0].params, 20 * layer + emb);
  EXPECT_EQ(r.stages[1].params, 20 * layer);
  EXPECT_EQ(r.stages[3].params, 20 * layer + emb + 8192);
  EXPECT_EQ(r.worst_stage, 0);  // most activations in flight
}

TEST(MemoryTest, MtpModuleSitsOnTheLastStage) {
  // The same Llama-3-70B plan with one MTP module (Megatron-Core MultiTokenPredictionLayer): the
  // last stage adds one layer (20 -> 21), eh_proj 2*8192*8192/8, three RMSNorms 3*8192, and, the
  // model being untied, its own copy of the word embedding (128256*8192/8); stages 0-2 unchanged.
  Loaded l = Load("llama3-70b", "h100-sxm", "dgx-h100");
  const PlanSpec p = Llama70bTp8Pp4();
  const MemoryReport base = EstimateMemory(l.model, p, l.gpu);
  ModelSpec m = l.model;
  m.mtp_layers = 1;
  const MemoryReport r = EstimateMemory(m, p, l.gpu);
  const int64_t layer = (2LL * 8192 * 8192 + 2LL * 8192 * 1024 + 3LL * 8192 * 28672) / 8 + 2 * 8192;
  const int64_t emb = 128256LL * 8192 / 8;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.stages[i].params, base.stages[i].params);
  EXPECT_EQ(r.stages[3].mtp_layers, 1);  // the report's "60-79+mtp"
  EXPECT_EQ(r.stages[0].mtp_layers, 0);
  EXPECT_EQ(r.stages[3].params, base.stages[3].params + layer + 2LL * 8192 * 8192 / 8 + 3 * 8192 + emb);
  // Activations: the layer's, plus the module's enorm/hnorm/eh_proj inputs (4sbh/t under SP)
  // and a second set of head inputs and logits.
  const int64_t sbh = 8192LL * 1 * 8192 * 2 / 8;  // one s x b x h bf16 tensor, ÷t under SP; the concat is two
  EXPECT_EQ(r.stages[3].loss_activations_bytes, 2 * base.stages[3].loss_activations_bytes + 4 * sbh);
  EXPECT_EQ(r.stages[3].layer_activations_bytes, base.stages[3].layer_activations_bytes * 21 / 20);
}

TEST(MemoryTest, NativeFusedLossAndDeferredHeadWgradHoldMoreOnTheLastStage) {
  // Llama-3-70B, TP 8 x PP 4, 8192 tokens a microbatch: the last stage's logits are
  // 8192 x ceil(128256/8) = 8192 x 16032 = 131,334,144 per microbatch.
  //  - native (Megatron-Core --cross-entropy-loss-fusion, compiled): 10 B per logit against the
  //    in-place loss's 6 B: 4 x 131,334,144 = 525,336,576 bytes more;
  //  - te-inplace (Transformer Engine before #3193: the gradient stored over the bf16 logits): 2 B,
  //    4 x 131,334,144 = 525,336,576 bytes less than the fused loss's 6 B;
  //  - compiled (the upcast loss under torch.compile: the bf16 logits and the bf16 gradient): 4 B,
  //    2 x 131,334,144 = 262,668,288 bytes less than fused, 12 x 131,334,144 = 1,576,009,728 less
  //    than the same loss eager under loss_parallel (upcast at TP > 1: 16 B);
  //  - 2 deferred output-layer weight gradients: 2 x (2 B x 131,334,144 logits + the head's input
  //    8192 x 8192 x 2 B / 8 under SP) = 2 x (262,668,288 + 16,777,216) = 558,891,008 bytes.
  Loaded l = Load("llama3-70b", "h100-sxm", "dgx-h100");
  PlanSpec p = Llama70bTp8Pp4();
  const MemoryReport base = EstimateMemory(l.model, p, l.gpu);
  p.cross_entropy = CrossEntropy::kNative;
  const MemoryReport native = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(native.stages[3].loss_activations_bytes - base.stages[3].loss_activations_bytes, 525336576);
  EXPECT_EQ(native.stages[0].total_bytes, base.stages[0].total_bytes);
  p.cross_entropy = CrossEntropy::kTeInplace;
  const MemoryReport inplace = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(base.stages[3].loss_activations_bytes - inplace.stages[3].loss_activations_bytes, 525336576);
  p.cross_entropy = CrossEntropy::kCompiled;
  const MemoryReport compiled = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(base.stages[3].loss_activations_bytes - compiled.stages[3].loss_activations_bytes, 262668288);
  p.cross_entropy = CrossEntropy::kUpcast;
  const MemoryReport upcast = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(upcast.stages[3].loss_activations_bytes - compiled.stages[3].loss_activations_bytes, 1576009728);
  p.cross_entropy = CrossEntropy::kFused;
  p.deferred_head_wgrad = 2;
  const MemoryReport deferred = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(deferred.stages[3].deferred_wgrad_bytes, 558891008);
  EXPECT_EQ(deferred.stages[3].activations_bytes - base.stages[3].activations_bytes, 558891008);
  EXPECT_EQ(deferred.stages[2].deferred_wgrad_bytes, 0);
  // More than the step's 16 microbatches is refused, naming the field.
  p.deferred_head_wgrad = 17;
  Diagnostics d;
  ValidatePlan(p, l.model, l.gpu, l.cluster, &d);
  ASSERT_TRUE(d.has_errors());
  EXPECT_NE(d.ToStatus().message().find("plan.deferred_head_wgrad"), std::string::npos) << d.ToStatus().message();
}

TEST(MemoryTest, TorchPipelineKeepsTheLastStagesOutputsAndGradientBuffers) {
  // PyTorch's pipeline stage (plan.keep_pp_outputs): Llama-3-70B, TP 8 x PP 4 with SP, 16
  // microbatches of 8192 tokens.
  //  - the last stage keeps the other 15 microbatches' bf16 logits, vocab-parallel:
  //    15 x 2 B x 8192 x ceil(128256/8) = 15 x 262,668,288 = 3,940,024,320 bytes;
  //  - the others keep each microbatch's output (the layer output, sequence-parallel) and hold a
  //    gradient receive buffer of its size per microbatch: 2 x 16 x 2 B x 8192 x 8192 / 8 =
  //    2 x 16 x 16,777,216 = 536,870,912 bytes.
  Loaded l = Load("llama3-70b", "h100-sxm", "dgx-h100");
  PlanSpec p = Llama70bTp8Pp4();
  const MemoryReport base = EstimateMemory(l.model, p, l.gpu);
  p.keep_pp_outputs = true;
  const MemoryReport kept = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(kept.stages[3].pipeline_buffers_bytes, 3940024320);
  EXPECT_EQ(kept.stages[3].activations_bytes - base.stages[3].activations_bytes, 3940024320);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(kept.stages[i].pipeline_buffers_bytes, 536870912) << i;
    EXPECT_EQ(kept.stages[i].activations_bytes - base.stages[i].activations_bytes, 536870912) << i;
  }
  // Two interleaved stages per rank: the last rank's other stage adds its 2 x 16, the other ranks
  // hold twice theirs.
  p.vpp = 2;
  p.schedule = Schedule::kInterleaved;
  const MemoryReport v2 = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(v2.stages[3].pipeline_buffers_bytes, 3940024320 + 536870912);
  EXPECT_EQ(v2.stages[0].pipeline_buffers_bytes, 2 * 536870912);
  // Without pipeline parallelism there is no pipeline runtime.
  p = Llama70bTp8Pp4();
  p.pp = 1;
  p.gpus = 8;
  p.keep_pp_outputs = true;
  EXPECT_EQ(EstimateMemory(l.model, p, l.gpu).stages[0].pipeline_buffers_bytes, 0);
}

TEST(MemoryTest, GpipeHoldsAllMicrobatchesOneFOneBAtMostP) {
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p;
  p.pp = 4;
  p.gpus = 4;
  p.seq_len = 4096;
  p.global_batch = 32;  // 32 microbatches
  p.schedule = Schedule::kGpipe;
  MemoryReport r = EstimateMemory(l.model, p, l.gpu);
  for (const auto& st : r.stages) EXPECT_DOUBLE_EQ(st.inflight_microbatches, 32.0);
  p.schedule = Schedule::k1F1B;
  r = EstimateMemory(l.model, p, l.gpu);
  for (const auto& st : r.stages) EXPECT_DOUBLE_EQ(st.inflight_microbatches, 4.0 - static_cast<double>(st.stage));
  // Interleaved, pp 4 x 2 chunks (32 layers, 4 per chunk), in Megatron-Core's warm-up chunks:
  // 2(pp - r - 1) + (v - 1)N + 1 over v. With the default group N = pp = 4: rank 0 (6 + 4 + 1)/2
  // = 5.5, rank 3 (0 + 4 + 1)/2 = 2.5. With groups of 8 microbatches (plan.vpp_group 8, 32 a
  // multiple of it): rank 0 (6 + 8 + 1)/2 = 7.5, rank 3 (0 + 8 + 1)/2 = 4.5.
  p.schedule = Schedule::kInterleaved;
  p.vpp = 2;
  r = EstimateMemory(l.model, p, l.gpu);
  EXPECT_DOUBLE_EQ(r.stages[0].inflight_microbatches, 5.5);
  EXPECT_DOUBLE_EQ(r.stages[3].inflight_microbatches, 2.5);
  p.vpp_group = 8;
  r = EstimateMemory(l.model, p, l.gpu);
  EXPECT_DOUBLE_EQ(r.stages[0].inflight_microbatches, 7.5);
  EXPECT_DOUBLE_EQ(r.stages[3].inflight_microbatches, 4.5);
}

TEST(MemoryTest, ExpertParallelDividesExpertsAndShardsOverExpertDataParallel) {
  // Mixtral 8x7B on 8 GPUs, ep=8, dp=8: each GPU holds 1 of 8 experts per layer; the expert
  // states are sharded over edp = dp/ep = 1, the dense ones over dp = 8 (ZeRO-1).
  Loaded l = Load("mixtral-8x7b", "h100-sxm", "dgx-h100");
  PlanSpec p;
  p.dp = 8;
  p.ep = 8;
  p.gpus = 8;
  p.zero = 1;
  p.seq_len = 4096;
  p.global_batch = 8;
  const MemoryReport r = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(r.dense_shard_group, 8);
  EXPECT_EQ(r.expert_shard_group, 1);
  const int64_t one_expert = 3LL * 4096 * 14336;
  EXPECT_EQ(r.stages[0].expert_params, 32 * one_expert);
  // master + moments: 12 B for every expert param (not sharded), 12/8 for dense ones.
  EXPECT_EQ(r.stages[0].optimizer_bytes, 32 * one_expert * 12 + r.stages[0].dense_params * 12 / 8);
}

TEST(MemoryTest, OffloadMovesOptimizerStateToTheHost) {
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(2, 8);
  p.seq_len = 4096;
  const MemoryReport on_gpu = EstimateMemory(l.model, p, l.gpu);
  p.offload_optimizer = OffloadTarget::kCpu;
  const MemoryReport off = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(off.stages[0].optimizer_bytes, 0);
  EXPECT_EQ(off.stages[0].host_bytes, on_gpu.stages[0].optimizer_bytes);
  EXPECT_EQ(on_gpu.stages[0].total_bytes - off.stages[0].total_bytes, on_gpu.stages[0].optimizer_bytes);
}

TEST(MemoryTest, ActivationOffloadKeepsTheOtherLayersOnTheGpu) {
  // Megatron-Core --cpu-offloading-num-layers 20 on Llama 3 8B (32 layers, pp 1, no recompute):
  // Transformer Engine keeps at most 32 - 20 layers' activation sets on the GPU, the other 20
  // layers' saved tensors are in host memory. Every layer is the same, so the GPU loses exactly
  // 20 x LayerActivationBytes of one microbatch and the host holds them.
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(3, 8);
  p.seq_len = 8192;
  p.micro_batch = 2;
  p.global_batch = 16;
  const MemoryReport on_gpu = EstimateMemory(l.model, p, l.gpu);
  p.offload_activation_layers = 20;
  const MemoryReport off = EstimateMemory(l.model, p, l.gpu);
  const int64_t layer = LayerActivationBytes(l.model, p, false, Recompute::kNone);
  EXPECT_EQ(off.stages[0].offloaded_activations_bytes, 20 * layer);
  EXPECT_EQ(off.stages[0].host_bytes, 20 * layer);
  EXPECT_EQ(off.stages[0].layer_activations_bytes, 12 * layer);
  EXPECT_EQ(on_gpu.stages[0].layer_activations_bytes, 32 * layer);
  // The activations (and the 5% fragmentation assumed on them) shrink by what moved.
  EXPECT_EQ(on_gpu.stages[0].activations_bytes - off.stages[0].activations_bytes, 20 * layer);
  EXPECT_GT(on_gpu.stages[0].total_bytes - off.stages[0].total_bytes, 20 * layer);
}

TEST(MemoryTest, CheckpointsInHostMemoryLeaveTheGpuForEveryMicrobatchInFlight) {
  // DeepSpeed's cpu_checkpointing on Llama 3 8B (32 layers, h 4,096), micro batch 2 at 8,192
  // tokens, full recomputation, no sequence parallelism: each layer's checkpoint, its bf16 input,
  // is 2 B x 8,192 x 2 x 4,096 = 134,217,728 B (128 MiB). At pp 2 (1F1B, 16 layers a stage) the
  // first stage holds 2 microbatches in flight (Narayanan 2021: stage i holds p - i): 16 x 128 MiB
  // = 2 GiB a microbatch leave its activations and 2 x 2 GiB sit in host memory, while the layer
  // being recomputed has its checkpoint back beside the working set (128 MiB more).
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p;
  p.gpus = 16;
  p.pp = 2;
  p.dp = 8;
  p.seq_len = 8192;
  p.micro_batch = 2;
  p.global_batch = 64;
  p.recompute = Recompute::kFull;
  constexpr int64_t kCheckpoint = 134217728;
  ASSERT_EQ(LayerActivationBytes(l.model, p, false, Recompute::kFull), kCheckpoint);
  const MemoryReport kept = EstimateMemory(l.model, p, l.gpu);
  PlanSpec off = p;
  off.offload_checkpoints = true;
  Diagnostics d;
  ValidatePlan(off, l.model, l.gpu, l.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const MemoryReport moved = EstimateMemory(l.model, off, l.gpu);
  const StageMemory &a = kept.stages[0], &b = moved.stages[0];
  ASSERT_DOUBLE_EQ(b.inflight_microbatches, 2.0);
  EXPECT_EQ(b.offloaded_checkpoints_bytes, 16 * kCheckpoint);
  EXPECT_EQ(a.layer_activations_bytes, 16 * kCheckpoint);
  EXPECT_EQ(b.layer_activations_bytes, 0);
  EXPECT_EQ(b.host_bytes - a.host_bytes, 2 * 16 * kCheckpoint);
  EXPECT_EQ(b.recompute_working_bytes - a.recompute_working_bytes, kCheckpoint);
  EXPECT_EQ(a.activations_bytes - b.activations_bytes, 2 * 16 * kCheckpoint - kCheckpoint);
  // The last stage holds one microbatch in flight: 16 x 128 MiB in host memory.
  EXPECT_EQ(moved.stages[1].host_bytes - kept.stages[1].host_bytes, 16 * kCheckpoint);
  EXPECT_LT(moved.per_gpu_bytes, kept.per_gpu_bytes);
}

TEST(MemoryTest, CheckpointsInHostMemoryNeedFullRecomputationAndAHostLink) {
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  auto errors = [&](const PlanSpec& p, const GpuSpec& g) {
    Diagnostics d;
    ValidatePlan(p, l.model, g, l.cluster, &d);
    return d.ToStatus().ToString();
  };
  PlanSpec p = ZeroPlan(3, 8);
  p.recompute = Recompute::kFull;
  p.offload_checkpoints = true;
  EXPECT_EQ(errors(p, l.gpu).find("offload"), std::string::npos) << errors(p, l.gpu);
  PlanSpec sel = p;
  sel.recompute = Recompute::kSelective;
  EXPECT_NE(errors(sel, l.gpu).find("plan.offload.checkpoints: checkpoints in host memory need plan.recompute=full"),
            std::string::npos)
      << errors(sel, l.gpu);
  PlanSpec both = p;
  both.recompute = Recompute::kNone;
  both.offload_activation_layers = 4;
  EXPECT_NE(errors(both, l.gpu).find("two frameworks' offloading; set one"), std::string::npos) << errors(both, l.gpu);
  GpuSpec unknown = l.gpu;
  unknown.host_link_bytes_per_s = 0;
  EXPECT_NE(errors(p, unknown).find("plan.offload.checkpoints: gpu h100-sxm has no host_link_bytes_per_s"),
            std::string::npos)
      << errors(p, unknown);
}

TEST(MemoryTest, FineGrainedOffloadingMovesTheNamedModulesSavedTensorsButOneLayers) {
  // Megatron-Core's fine-grained activation offloading on Mixtral 8x7B (32 MoE layers, h 4,096,
  // experts of 14,336, top 2, SwiGLU) on 8 H100s at EP 8, 4,096 tokens, capacity factor 1.0 (each
  // rank's experts take exactly s x k = 8,192 tokens), bf16, no recomputation, pp 1 (one
  // microbatch in flight). expert_fc1's input: 2 B x 8,192 x 4,096 = 67,108,864 B a layer;
  // fused_group_mlp adds the activation's input (gate and up, 2 x 2 B x 8,192 x 14,336 =
  // 469,762,048) and fc2's (2 B x 8,192 x 14,336 = 234,881,024): 771,751,936. Offloaded per
  // microbatch: 32 layers' worth; the last layer's group stays on the GPU (the offload margin), so
  // the activations held fall by 31 layers' worth.
  Loaded l = Load("mixtral-8x7b", "h100-sxm", "dgx-h100");
  l.model.moe->capacity_factor = 1.0;
  PlanSpec p = ZeroPlan(1, 8);
  p.ep = 8;
  p.seq_len = 4096;
  p.global_batch = 8;
  constexpr int64_t kFc1 = 67108864, kGroupMlp = 67108864 + 469762048 + 234881024;
  PlanSpec fc1 = p;
  fc1.offload_modules = OffloadBit(OffloadModule::kExpertFc1);
  PlanSpec group = p;
  group.offload_modules = OffloadBit(OffloadModule::kFusedGroupMlp);
  EXPECT_EQ(FineGrainedOffloadBytes(l.model, p, true), 0);
  EXPECT_EQ(FineGrainedOffloadBytes(l.model, fc1, true), kFc1);
  EXPECT_EQ(FineGrainedOffloadBytes(l.model, group, true), kGroupMlp);
  for (const PlanSpec* q : {&fc1, &group}) {
    Diagnostics d;
    ValidatePlan(*q, l.model, l.gpu, l.cluster, &d);
    ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  }
  const MemoryReport kept = EstimateMemory(l.model, p, l.gpu);
  const MemoryReport moved = EstimateMemory(l.model, fc1, l.gpu);
  const StageMemory &a = kept.stages[0], &b = moved.stages[0];
  ASSERT_DOUBLE_EQ(b.inflight_microbatches, 1.0);
  EXPECT_EQ(b.offloaded_activations_bytes, 32 * kFc1);
  EXPECT_EQ(a.layer_activations_bytes - b.layer_activations_bytes, 32 * kFc1);
  EXPECT_EQ(b.host_bytes - a.host_bytes, 32 * kFc1);
  EXPECT_EQ(a.activations_bytes - b.activations_bytes, 31 * kFc1);
  const MemoryReport grouped = EstimateMemory(l.model, group, l.gpu);
  EXPECT_EQ(a.activations_bytes - grouped.stages[0].activations_bytes, 31 * kGroupMlp);
}

TEST(MemoryTest, FineGrainedOffloadingIsRefusedWhereMegatronRefusesIt) {
  // transformer_config.py __post_init__ at d98e8a64: not with cpu_offloading, attn_proj only with
  // core_attn, fused_group_mlp alone among the expert modules, no expert module inside a whole
  // recomputed MoE layer; and meshplan's own: the expert modules need an MoE model, full
  // recomputation leaves nothing of a module to offload, and the copies need the host link.
  Loaded l = Load("mixtral-8x7b", "h100-sxm", "dgx-h100");
  Loaded dense = Load("llama3-8b", "h100-sxm", "dgx-h100");
  auto errors = [&](const PlanSpec& p, const ModelSpec& m, const GpuSpec& g) {
    Diagnostics d;
    ValidatePlan(p, m, g, l.cluster, &d);
    return d.ToStatus().ToString();
  };
  PlanSpec p = ZeroPlan(1, 8);
  p.ep = 8;
  p.offload_modules = OffloadBit(OffloadModule::kCoreAttn) | OffloadBit(OffloadModule::kAttnProj) |
                      OffloadBit(OffloadModule::kExpertFc1);
  EXPECT_EQ(errors(p, l.model, l.gpu).find("offload"), std::string::npos) << errors(p, l.model, l.gpu);
  auto expect = [&](PlanSpec q, const ModelSpec& m, const std::string& text) {
    const std::string e = errors(q, m, l.gpu);
    EXPECT_NE(e.find("plan.offload.modules: " + text), std::string::npos) << e;
  };
  PlanSpec proj = p;
  proj.offload_modules = OffloadBit(OffloadModule::kAttnProj);
  expect(proj, l.model, "attn_proj needs core_attn");
  PlanSpec mixed = p;
  mixed.offload_modules = OffloadBit(OffloadModule::kFusedGroupMlp) | OffloadBit(OffloadModule::kMoeAct);
  expect(mixed, l.model, "fused_group_mlp offloads the whole grouped MLP");
  PlanSpec layers = p;
  layers.offload_activation_layers = 4;
  expect(layers, l.model, "fine-grained offloading cannot run with plan.offload.activation_layers");
  PlanSpec full = p;
  full.recompute = Recompute::kFull;
  expect(full, l.model, "full recomputation keeps only each layer's input");
  PlanSpec whole = p;
  whole.recompute = Recompute::kSelective;
  whole.recompute_modules = ModuleBit(RecomputeModule::kMoe);
  expect(whole, l.model, "expert modules cannot be offloaded while the whole MoE layer is recomputed");
  PlanSpec on_dense = ZeroPlan(1, 8);
  on_dense.offload_modules = OffloadBit(OffloadModule::kMoeAct);
  expect(on_dense, dense.model, "expert_fc1, moe_act and fused_group_mlp need an MoE model");
  GpuSpec unknown = l.gpu;
  unknown.host_link_bytes_per_s = 0;
  EXPECT_NE(errors(p, l.model, unknown).find("plan.offload.modules: gpu h100-sxm has no host_link_bytes_per_s"),
            std::string::npos)
      << errors(p, l.model, unknown);
}

TEST(MemoryTest, ActivationOffloadIsRefusedWhereMegatronRefusesIt) {
  // Megatron-Core (transformer_config.py at d98e8a64): fewer layers than the model's, pp 1, no
  // recomputation; and meshplan needs the GPU's host link to cost the copies.
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  auto errors = [&](const PlanSpec& p, const GpuSpec& g) {
    Diagnostics d;
    ValidatePlan(p, l.model, g, l.cluster, &d);
    return d.ToStatus().ToString();
  };
  PlanSpec p = ZeroPlan(3, 8);
  p.offload_activation_layers = 16;
  EXPECT_EQ(errors(p, l.gpu).find("offload"), std::string::npos) << errors(p, l.gpu);
  PlanSpec all = p;
  all.offload_activation_layers = 32;
  EXPECT_NE(errors(all, l.gpu).find("plan.offload.activation_layers: must be fewer than model.layers=32"),
            std::string::npos);
  PlanSpec neg = p;
  neg.offload_activation_layers = -1;
  EXPECT_NE(errors(neg, l.gpu).find("plan.offload.activation_layers: must be >= 0"), std::string::npos);
  PlanSpec piped = p;
  piped.pp = 2;
  piped.dp = 4;
  EXPECT_NE(errors(piped, l.gpu).find("needs plan.pp=1"), std::string::npos) << errors(piped, l.gpu);
  PlanSpec rc = p;
  rc.recompute = Recompute::kFull;
  EXPECT_NE(errors(rc, l.gpu).find("needs plan.recompute=none"), std::string::npos) << errors(rc, l.gpu);
  GpuSpec unknown = l.gpu;
  unknown.host_link_bytes_per_s = 0;
  EXPECT_NE(errors(p, unknown).find("has no host_link_bytes_per_s"), std::string::npos) << errors(p, unknown);
}

TEST(MemoryTest, HsdpShardsWithinTheShardGroupOnly) {
  // HSDP over dp=64 with shard groups of 8: states are divided by 8, not 64.
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(3, 64);
  p.seq_len = 4096;
  p.sharding = Sharding::kHsdp;
  p.hsdp_shard_size = 8;
  const MemoryReport r = EstimateMemory(l.model, p, l.gpu);
  EXPECT_EQ(r.dense_shard_group, 8);
  EXPECT_EQ(r.stages[0].weights_bytes + r.stages[0].grads_bytes + r.stages[0].optimizer_bytes,
            CountParams(l.model).total * 16 / 8);
}

TEST(MemoryTest, OverheadsAreNamedAndCounted) {
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(1, 8);
  p.seq_len = 4096;
  const MemoryOverheads o;
  const MemoryReport r = EstimateMemory(l.model, p, l.gpu, o);
  const StageMemory& st = r.stages[0];
  EXPECT_EQ(st.cuda_context_bytes, 685LL << 20);  // measured on an H200 (core/memory.h)
  EXPECT_EQ(st.cublas_workspace_bytes, 32LL << 20);
  EXPECT_EQ(st.nccl_bytes, 1 * 16 * 2 * (4LL << 20));  // one communicator (dp): 128 MiB
  EXPECT_EQ(st.fragmentation_bytes, std::llround(0.05 * static_cast<double>(st.activations_bytes)));
  EXPECT_EQ(st.total_bytes,
            st.weights_bytes + st.grads_bytes + st.optimizer_bytes + st.activations_bytes + st.other_bytes);
  // The allocator's two peaks: reserved = on the GPU less the CUDA context (685 MiB) and NCCL's
  // buffers (128 MiB), which the caching allocator never holds; allocated = reserved less the
  // fragmentation term.
  EXPECT_EQ(PeakReservedBytes(st), st.total_bytes - (685LL << 20) - (128LL << 20));
  EXPECT_EQ(PeakAllocatedBytes(st), PeakReservedBytes(st) - st.fragmentation_bytes);
  EXPECT_LT(PeakAllocatedBytes(st), PeakReservedBytes(st));
}

TEST(MemoryTest, FitVerdictIsTightWhereOnlyTheAllocatorsReserveIsOver) {
  // Llama 3 8B on 8 H100s, ZeRO-1, one sequence per microbatch. The GPU's memory is what CUDA
  // reports of it, 85,045,477,376 B (the preset's cuda_total_bytes; 80 GiB = 85,899,345,920 B
  // physical). At 7,424 tokens the activations are 38,949,748,736 B, the assumed 5% fragmentation
  // on them 1,947,487,437 B, and the rank holds 85,949,719,757 B with it: over the GPU. Without the
  // allocator's reserve (no FSDP2 pools here) it holds 85,949,719,757 - 1,947,487,437 =
  // 84,002,232,320 B: within it, so tight (the caching allocator frees its unsplit cached blocks
  // and retries a failed cudaMalloc). 256 tokens more (7,680) and even that is over: out of memory.
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(1, 8);
  p.seq_len = 7424;
  const MemoryReport r = EstimateMemory(l.model, p, l.gpu);
  const StageMemory& st = r.stages[0];
  EXPECT_EQ(st.activations_bytes, 38'949'748'736);
  EXPECT_EQ(st.fragmentation_bytes, 1'947'487'437);
  EXPECT_EQ(r.per_gpu_bytes, 85'949'719'757);
  EXPECT_EQ(r.least_per_gpu_bytes, 84'002'232'320);
  EXPECT_EQ(r.least_per_gpu_bytes, PeakAllocatedBytes(st) + st.cuda_context_bytes + st.nccl_bytes);
  EXPECT_EQ(r.capacity_bytes, 85'045'477'376);
  EXPECT_EQ(r.capacity_bytes, l.gpu.CapacityBytes());
  EXPECT_LT(r.capacity_bytes, l.gpu.hbm_bytes);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.verdict, FitVerdict::kTight);
  EXPECT_STREQ(FitVerdictName(r.verdict), "tight");
  // The search's path gives the same verdict from the worst stage alone.
  EXPECT_EQ(EstimateMemory(l.model, p, l.gpu, {}, MemoryDetail::kTotalsOnly).verdict, FitVerdict::kTight);
  // At 7,680 tokens (least 85,345,327,104 B) the physical 80 GiB would call it tight: the 854 MB
  // the driver keeps make it out of memory.
  core::GpuSpec physical = l.gpu;
  physical.cuda_total_bytes = 0;
  p.seq_len = 7680;
  EXPECT_EQ(EstimateMemory(l.model, p, physical).verdict, FitVerdict::kTight);
  const MemoryReport over = EstimateMemory(l.model, p, l.gpu);
  EXPECT_GT(over.least_per_gpu_bytes, over.capacity_bytes);
  EXPECT_EQ(over.verdict, FitVerdict::kDoesNotFit);
  EXPECT_STREQ(FitVerdictName(over.verdict), "out_of_memory");
  p.seq_len = 4096;
  const MemoryReport fits = EstimateMemory(l.model, p, l.gpu);
  EXPECT_TRUE(fits.fits);
  EXPECT_EQ(fits.verdict, FitVerdict::kFits);
  // A pipeline's stages: the least is the largest of any stage's, whichever stage is worst.
  p.pp = 4;
  p.dp = 2;
  p.global_batch = 8;
  const MemoryReport pp = EstimateMemory(l.model, p, l.gpu);
  int64_t least = 0;
  for (const StageMemory& s : pp.stages) least = std::max(least, LeastOnGpuBytes(s));
  EXPECT_EQ(pp.least_per_gpu_bytes, least);
}

TEST(MemoryTest, DeepSpeedPerTensorZeroThreeHoldsItsBucketsAndWholeGradientsAtTheMlpBackward) {
  // DeepSpeed 0.3's ZeRO-3 (stage3.py, partition_parameters.py at v0.3.13), fp16, micro batch 4 of
  // 2,048 tokens, full recomputation, no model parallelism. Its gradient path holds two reduce
  // buckets of 5e8 fp16 elements (2,000,000,000 B) through the backward; each gradient over a
  // bucket keeps a tensor of its own until the reduction after its own, and PyTorch's list
  // reduce-scatter copies it whole into a flat input.
  PlanSpec p = ZeroPlan(3, 640);
  p.micro_batch = 4;
  p.global_batch = 2560;
  p.recompute = Recompute::kFull;
  p.zero3_gather = Zero3Gather::kPerTensor;
  p.dtypes.weights = Dtype::kFp16;
  p.dtypes.grads = Dtype::kFp16;
  // 529.6B (h 20,480, f 81,920, 128 heads of 160). Gathered: 1e9 elements + one MLP matrix
  // (1,677,721,600) = 2,677,721,600 x 2 B = 5,355,443,200 B. As a layer's backward begins: the
  // buckets, the layer after's QKV gradient (3 x 20,480^2 = 1,258,291,200 elements, 2,516,582,400 B)
  // and the gathered weights: 9,872,025,600 B. At the MLP's first matrix's gradient hook: the
  // buckets, its weight and gradient, the second matrix's gradient and its flat copy (4 x
  // 3,355,443,200 B), less the MLP's saved tensors autograd has freed: its input 2sbh
  // (335,544,320), the GeLU's input and the second matrix's input 2 x 2sbf (2 x 1,342,177,280) and
  // the dropout mask sbh (167,772,160), 3,187,671,040 B: 12,234,101,760 B. Autograd holds two
  // activation gradients of 2sbh (335,544,320 B) then, the layer output's (the residual's) and the
  // MLP input's, which the first matrix's backward has just made: 12,905,190,400 B. (The start
  // holds the layer output's alone beside the rest: 10,207,569,920 B.) Beyond the gathered weights:
  // 12,905,190,400 - 5,355,443,200 = 7,549,747,200 B.
  Loaded big = Load("gpt-529.6b", "a100-80g", "dgx-a100");
  const StageMemory st = EstimateMemory(big.model, p, big.gpu).stages[0];
  EXPECT_EQ(st.zero3_prefetch_bytes, 5'355'443'200);
  EXPECT_EQ(st.zero3_grad_bytes, 7'549'747'200);
  EXPECT_EQ(FrameworkBufferBytes(st, p), 5'355'443'200 + 7'549'747'200);
  // 175B (h 12,288, f 49,152): the MLP's matrices (603,979,776 elements) are over a bucket, its QKV
  // weight (452,984,832) is not. Gathered 1,603,979,776 x 2 = 3,207,959,552 B; the backward's start
  // holds the buckets and the layer output's gradient (2sbh = 201,326,592 B) beside them,
  // 5,409,286,144 B; the MLP's hook 2e9 + 4 x 1,207,959,552 - (201,326,592 + 2 x 805,306,368 +
  // 100,663,296) + 2 x 201,326,592 = 5,321,888,768 B. The start is the larger: the buckets and one
  // activation gradient come on top of the gathered weights.
  Loaded gpt3 = Load("gpt3-175b", "a100-80g", "dgx-a100");
  const StageMemory small = EstimateMemory(gpt3.model, p, gpt3.gpu).stages[0];
  EXPECT_EQ(small.zero3_prefetch_bytes, 3'207'959'552);
  EXPECT_EQ(small.zero3_grad_bytes, 2'201'326'592);
  // The flat ZeRO-3 and FSDP2 hold none of it.
  p.zero3_gather = Zero3Gather::kFlat;
  EXPECT_EQ(EstimateMemory(big.model, p, big.gpu).stages[0].zero3_grad_bytes, 0);
}

TEST(MemoryTest, Fsdp2KeepsNoLowPrecisionShardsAndItsGradientsInTheReduceScatterPool) {
  // Llama 3 8B (8,030,261,248 parameters) on 8 H100s, ZeRO-3 with fp32 gradients as torchtitan
  // runs FSDP2, one microbatch of 8,192 tokens per rank. The flat ZeRO-3 keeps a bf16 shard beside
  // the fp32 master: 8,030,261,248 x 2 / 8 = 2,007,565,312 B; FSDP2's shard is the master itself.
  // Its sharded gradients, 8,030,261,248 x 4 / 8 = 4,015,130,624 B, are the reduce-scatter outputs
  // in that stream's pool (PyTorch PR 129721): freed by zero_grad, reserved and idle at the
  // activations' peak, so the peak allocated is the reserved less them and the fragmentation.
  Loaded l = Load("llama3-8b", "h100-sxm", "dgx-h100");
  PlanSpec p = ZeroPlan(3, 8);
  p.seq_len = 8192;
  p.dtypes.grads = Dtype::kFp32;
  const StageMemory flat = EstimateMemory(l.model, p, l.gpu).stages[0];
  p.zero3_gather = Zero3Gather::kFsdp2;
  Diagnostics d;
  ValidatePlan(p, l.model, l.gpu, l.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const StageMemory st = EstimateMemory(l.model, p, l.gpu).stages[0];
  EXPECT_EQ(flat.weights_bytes, 2'007'565'312);
  EXPECT_EQ(st.weights_bytes, 0);
  EXPECT_EQ(st.grads_bytes, 4'015'130'624);
  EXPECT_EQ(st.rs_pool_bytes, 4'015'130'624);
  EXPECT_EQ(st.rs_pool_idle_bytes, 4'015'130'624);
  EXPECT_EQ(flat.rs_pool_bytes, 0);
  // Its all-gathers' flat outputs live on the copy-in stream's pool, which keeps the largest: the
  // root module's (embedding and head 2 x 525,336,576, final norm 4,096: 1,050,677,248 parameters)
  // against a block's 218,112,000, of which one may still be held at the peak: (1,050,677,248 -
  // 218,112,000) x 2 B = 1,665,130,496 B idle.
  EXPECT_EQ(st.ag_pool_idle_bytes, 1'665'130'496);
  EXPECT_EQ(flat.ag_pool_idle_bytes, 0);
  EXPECT_EQ(PeakReservedBytes(flat) - PeakReservedBytes(st), 2'007'565'312 - 1'665'130'496);
  EXPECT_EQ(PeakAllocatedBytes(st), PeakReservedBytes(st) - st.fragmentation_bytes - 4'015'130'624 - 1'665'130'496);
  // Two microbatches a step: the second forward runs with the first's gradients accumulated in
  // the sharded buffers, so they are allocated at its peak.
  p.global_batch = 16;
  const StageMemory two = EstimateMemory(l.model, p, l.gpu).stages[0];
  EXPECT_EQ(two.rs_pool_idle_bytes, 0);
  EXPECT_EQ(PeakAllocatedBytes(two), PeakReservedBytes(two) - two.fragmentation_bytes - 1'665'130'496);
  // Under pipeline parallelism torchtitan's stages stay gathered with unsharded fp32 accumulators
  // (ZeRO-1's memory); the reduce-scatter outputs come beside them, sharded over the 4 DP ranks,
  // on top of the total and idle at the peak. Stage 0 of PP 2 holds 16 layers and the embedding.
  PlanSpec q = ZeroPlan(1, 4);
  q.gpus = 8;
  q.pp = 2;
  q.seq_len = 8192;
  q.global_batch = 8;
  q.dtypes.grads = Dtype::kFp32;
  const StageMemory q_flat = EstimateMemory(l.model, q, l.gpu).stages[0];
  q.zero3_gather = Zero3Gather::kFsdp2;
  const StageMemory q_fsdp2 = EstimateMemory(l.model, q, l.gpu).stages[0];
  EXPECT_EQ(q_fsdp2.weights_bytes, q_flat.weights_bytes);  // gathered for the step
  EXPECT_EQ(q_fsdp2.grads_bytes, q_flat.params * 4);       // the unsharded accumulators
  EXPECT_EQ(q_fsdp2.rs_pool_bytes, q_flat.params * 4 / 4);
  // Stage 0's root share, the embedding (525,336,576), against a block: 614,449,152 B idle.
  EXPECT_EQ(q_fsdp2.ag_pool_idle_bytes, (525'336'576 - 218'112'000) * 2);
  EXPECT_EQ(q_fsdp2.total_bytes - q_flat.total_bytes, q_fsdp2.rs_pool_bytes + q_fsdp2.ag_pool_idle_bytes);
  EXPECT_EQ(PeakAllocatedBytes(q_fsdp2), PeakAllocatedBytes(q_flat));
}

}  // namespace
}  // namespace meshplan::core

namespace meshplan::core {
namespace {

TEST(MemoryTest, TotalsOnlyFindsTheSameWorstStage) {
  // kTotalsOnly (the search's path) computes one rank per kind of rank and keeps the worst; the
  // result must be the kFull report's worst stage, byte for byte, whatever the schedule, split,
  // MoE layout or partial recompute.
  const GpuSpec g = *LoadGpu("h100-sxm");
  struct Case {
    const char* model;
    int64_t tp, pp, vpp;
    Schedule s;
    Recompute rc;
    int64_t recompute_layers;
    std::vector<int64_t> split;
  };
  const std::vector<Case> cases = {
      {"llama3-70b", 8, 4, 1, Schedule::k1F1B, Recompute::kSelective, 0, {}},
      {"llama3-70b", 8, 4, 2, Schedule::kInterleaved, Recompute::kNone, 0, {}},
      {"llama3-70b", 8, 8, 1, Schedule::kGpipe, Recompute::kFull, 0, {}},
      {"llama3-70b", 8, 8, 1, Schedule::kDualPipe, Recompute::kFull, 0, {}},
      {"llama3-70b", 8, 4, 1, Schedule::k1F1B, Recompute::kFull, 3, {}},
      {"llama3-70b", 8, 4, 1, Schedule::kZeroBubble, Recompute::kNone, 0, {19, 21, 21, 19}},
      {"deepseek-v3", 8, 8, 1, Schedule::k1F1B, Recompute::kSelective, 0, {}},
      {"deepseek-v3", 8, 4, 1, Schedule::k1F1B, Recompute::kFull, 0, {13, 16, 16, 16}},
  };
  for (const Case& k : cases) {
    const ModelSpec m = *LoadModel(k.model);
    PlanSpec p;
    p.tp = k.tp;
    p.pp = k.pp;
    p.vpp = k.vpp;
    p.dp = 4;
    p.gpus = k.tp * k.pp * 4;
    p.schedule = k.s;
    p.recompute = k.rc;
    p.recompute_layers = k.recompute_layers;
    p.stage_layers = k.split;
    p.seq_len = 4096;
    p.global_batch = 64;
    if (m.moe) p.ep = 8, p.etp = 1;
    const MemoryReport full = EstimateMemory(m, p, g, {}, MemoryDetail::kFull);
    const MemoryReport fast = EstimateMemory(m, p, g, {}, MemoryDetail::kTotalsOnly);
    ASSERT_EQ(fast.stages.size(), 1u);
    EXPECT_EQ(fast.worst_stage, full.worst_stage) << k.model << " pp" << k.pp;
    EXPECT_EQ(fast.per_gpu_bytes, full.per_gpu_bytes) << k.model << " pp" << k.pp;
    EXPECT_EQ(fast.stages.front().stage, full.worst_stage);
    EXPECT_EQ(fast.stages.front().activations_bytes,
              full.stages[static_cast<size_t>(full.worst_stage)].activations_bytes);
  }
}

TEST(MemoryTest, RankLayoutGroupsRanksByWhatTheyHold) {
  // RankLayoutOf must agree rank by rank with StageCompositionOf, count every rank once, and give
  // each kind its lowest and highest rank; a repeated call with the same inputs returns the memo,
  // a changed split is recomputed.
  struct Case {
    const char* model;
    int64_t pp, vpp;
    Schedule s;
    std::vector<int64_t> split;
  };
  const std::vector<Case> cases = {
      {"llama3-70b", 4, 1, Schedule::k1F1B, {}},         // first, middle x2, last: 3 kinds
      {"llama3-70b", 4, 2, Schedule::kInterleaved, {}},  // rank 0 has chunk 0, rank 3 the last
      {"llama3-70b", 8, 1, Schedule::kDualPipe, {}},     // ranks 0 and 7 hold both ends
      {"llama3-405b", 16, 1, Schedule::k1F1B, {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}},
      {"deepseek-v3", 4, 1, Schedule::k1F1B, {13, 16, 16, 16}},  // 3 dense layers on rank 0
      {"llama3-70b", 1, 1, Schedule::k1F1B, {}},                 // one rank holds everything
  };
  for (const Case& k : cases) {
    const ModelSpec m = *LoadModel(k.model);
    PlanSpec p;
    p.pp = k.pp;
    p.vpp = k.vpp;
    p.schedule = k.s;
    p.stage_layers = k.split;
    const std::vector<int64_t> starts = ChunkStarts(m, p);
    const RankLayout& l = RankLayoutOf(m, p);
    ASSERT_EQ(l.kind_of.size(), static_cast<size_t>(k.pp)) << k.model;
    int64_t ranks = 0;
    for (size_t c = 0; c < l.kinds.size(); ++c) {
      ranks += l.count[c];
      EXPECT_EQ(l.kind_of[static_cast<size_t>(l.first_rank[c])], c);
      EXPECT_EQ(l.kind_of[static_cast<size_t>(l.last_rank[c])], c);
    }
    EXPECT_EQ(ranks, k.pp) << k.model;
    for (int64_t r = 0; r < k.pp; ++r) {
      const size_t c = l.kind_of[static_cast<size_t>(r)];
      EXPECT_TRUE(l.kinds[c] == StageCompositionOf(m, p, starts, r)) << k.model << " rank " << r;
      EXPECT_LE(l.first_rank[c], r);
      EXPECT_GE(l.last_rank[c], r);
    }
  }
  // Hand-checked: Llama 3 70B (80 layers) on pp 4, 1F1B: 20 layers each; rank 0 first, rank 3 last.
  const ModelSpec m = *LoadModel("llama3-70b");
  PlanSpec p;
  p.pp = 4;
  const RankLayout& a = RankLayoutOf(m, p);
  ASSERT_EQ(a.kinds.size(), 3u);
  EXPECT_EQ(a.count, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_TRUE(a.kinds[0].first && !a.kinds[0].last && a.kinds[0].dense == 20);
  EXPECT_TRUE(a.kinds[2].last && !a.kinds[2].first);
  EXPECT_EQ(&RankLayoutOf(m, p), &a);  // the memo
  p.stage_layers = {19, 21, 21, 19};
  const RankLayout& b = RankLayoutOf(m, p);
  EXPECT_EQ(b.kinds[0].dense, 19);
  EXPECT_EQ(b.kinds[1].dense, 21);
  EXPECT_EQ(b.count, (std::vector<int64_t>{1, 2, 1}));
}

// Llama 3 8B on 8 B200s: TP 1 x PP 4 x DP 2 (8 layers per stage), one 8,192-token sequence per
// microbatch, Transformer Engine's modules.
PlanSpec Llama8BOnB200sPp4() {
  PlanSpec p;
  p.gpus = 8, p.tp = 1, p.pp = 4, p.dp = 2, p.zero = 1;
  p.micro_batch = 1, p.global_batch = 64, p.seq_len = 8192;
  p.transformer_engine = true;
  return p;
}

TEST(MemoryTest, Bf16LayersSaveTheirLinearInputsInSixteenBits) {
  // Llama 3 8B on 8 B200s (TP 1, PP 4: 8 layers per stage), NVFP4, the last 4 layers kept in BF16
  // (Megatron-Core --first-last-layers-bf16 --num-layers-at-end-in-bf16 4, the Llama 3 8B NVFP4
  // recipe of Megatron-Bridge, recipes/llama/h100/llama3.py:596-598 at v0.6.0). Those four layers
  // save their activations as the BF16 plan's layers do (linear inputs in 2 B, not 9/16 B); the
  // other stages hold none of them.
  Loaded l = Load("llama3-8b", "b200", "dgx-b200");
  PlanSpec p = Llama8BOnB200sPp4();
  p.precision = Dtype::kNvfp4;
  PlanSpec pb = p;
  pb.precision = Dtype::kBf16;
  PlanSpec pe = p;
  pe.bf16_layers_at_end = 4;
  Diagnostics d;
  ValidatePlan(pe, l.model, l.gpu, l.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const int64_t fp4 = LayerActivationBytes(l.model, p, false, Recompute::kNone);
  const int64_t bf16 = LayerActivationBytes(l.model, pb, false, Recompute::kNone);
  ASSERT_GT(bf16, fp4);
  const MemoryReport a = EstimateMemory(l.model, p, l.gpu), e = EstimateMemory(l.model, pe, l.gpu);
  for (int s = 0; s < 3; ++s) EXPECT_EQ(e.stages[s].layer_activations_bytes, a.stages[s].layer_activations_bytes) << s;
  EXPECT_EQ(a.stages[3].layer_activations_bytes, 8 * fp4);
  EXPECT_EQ(e.stages[3].layer_activations_bytes, 4 * fp4 + 4 * bf16);
}

TEST(MemoryTest, AClampedGluKeepsItsClampedCopyUnlessRecomputedOrFused) {
  // gpt-oss-120b at EP 8, one 4096-token sequence: 16,384 expert rows a rank. Megatron-Core's
  // weighted_bias_quick_geglu_impl saves the clamped copy of fc1's output for its fused function's
  // backward beside the output the clamps keep: 16,384 x 2 x 2880 x 2 B = 188,743,680 B more a
  // MoE layer; none under moe_act recomputation or Transformer Engine's op fuser.
  auto m = LoadModel("gpt-oss-120b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.dp = 8;
  p.gpus = 8;
  p.ep = 8;
  p.seq_len = 4096;
  p.global_batch = 8;
  auto clamped = [&](const PlanSpec& plan, Recompute r) {
    int64_t bytes = -1;
    for (const ActivationTerm& t : LayerActivationTerms(*m, plan, /*moe_layer=*/true, r))
      if (t.name == "expert_clamped_act_input") bytes = t.bytes;
    return bytes;
  };
  EXPECT_EQ(clamped(p, Recompute::kNone), int64_t{16384} * 2 * 2880 * 2);
  PlanSpec fused = p;
  fused.moe_op_fuser = true;
  EXPECT_EQ(clamped(fused, Recompute::kNone), -1);
  PlanSpec act = p;
  act.recompute = Recompute::kSelective;
  act.recompute_modules = ModuleBit(RecomputeModule::kMoeAct);
  EXPECT_EQ(clamped(act, Recompute::kSelective), -1);
  EXPECT_EQ(
      LayerActivationBytes(*m, p, true, Recompute::kNone) - LayerActivationBytes(*m, fused, true, Recompute::kNone),
      int64_t{16384} * 2 * 2880 * 2);
}

TEST(MemoryTest, Bf16LayersAreRefusedWhereMegatronCoreRefusesThem) {
  // transformer_config.py at d98e8a64: each count within 0..layers / pp, not with delayed FP8
  // scaling; meshplan: only under a quantized precision, and not beside a partial recomputation.
  Loaded l = Load("llama3-8b", "b200", "dgx-b200");
  PlanSpec p = Llama8BOnB200sPp4();
  auto error_of = [&](const PlanSpec& q) {
    Diagnostics d;
    ValidatePlan(q, l.model, l.gpu, l.cluster, &d);
    return d.has_errors() ? d.ToStatus().ToString() : std::string();
  };
  PlanSpec q = p;
  q.bf16_layers_at_end = 2;  // bf16 precision: nothing to keep
  EXPECT_NE(error_of(q).find("plan.bf16_layers_at_end: keeps layers in BF16 under a quantized plan.precision"),
            std::string::npos)
      << error_of(q);
  q.precision = Dtype::kFp8;
  q.fp8_scaling = Fp8Scaling::kDelayed;
  EXPECT_NE(error_of(q).find("Megatron-Core refuses them with delayed scaling"), std::string::npos) << error_of(q);
  q.fp8_scaling = Fp8Scaling::kCurrent;
  EXPECT_EQ(error_of(q), "");
  q.bf16_layers_at_end = 9;  // 32 layers / pp 4 = 8
  EXPECT_NE(error_of(q).find("plan.bf16_layers_at_end: 9 exceeds the layers per pipeline stage (8 = 32 layers / pp 4)"),
            std::string::npos)
      << error_of(q);
  q.bf16_layers_at_end = -1;
  EXPECT_NE(error_of(q).find("plan.bf16_layers_at_end: must be >= 0 layers (got -1)"), std::string::npos);
  q.bf16_layers_at_end = 2;
  q.recompute = Recompute::kFull;
  q.recompute_layers = 4;
  EXPECT_NE(error_of(q).find("are not modelled: recompute every layer or none"), std::string::npos) << error_of(q);
}

}  // namespace
}  // namespace meshplan::core
