// The StepGraph against the closed forms it must agree with.
#include "core/step_graph.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include <gtest/gtest.h>

#include "core/flops.h"
#include "core/memory.h"
#include "core/params.h"
#include "core/presets.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

double PassFlops(const std::vector<Op>& ops, Pass pass) {
  double f = 0;
  for (const Op& op : ops)
    if (op.pass == pass) f += op.Flops();
  return f;
}

// Bytes a collective moves per rank in nccl-tests' bus terms: S x busbw/algbw factor.
double BusBytes(const std::vector<Op>& ops, CommGroup g, int64_t n, double microbatches) {
  double b = 0;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kCollective || op.group != g) continue;
    const double per = op.pass == Pass::kStep ? 1.0 : microbatches;
    b += per * static_cast<double>(op.bytes) * BusBandwidthFactor(op.collective, n);
  }
  return b;
}

PlanSpec Plan(int64_t tp, int64_t dp, bool sp) {
  PlanSpec p;
  p.tp = tp;
  p.dp = dp;
  p.gpus = tp * dp;
  p.sequence_parallel = sp;
  p.seq_len = 2048;
  p.global_batch = dp;
  return p;
}
// An MoE plan's usual test shape: 8 GPUs, all of them the EP group, 4096-token sequences.
PlanSpec Ep8Plan() {
  PlanSpec p = Plan(1, 8, false);
  p.ep = 8;
  p.seq_len = 4096;
  return p;
}

TEST(StepGraphTest, ForwardFlopsEqualTheClosedForm) {
  // GPT-3 (naive attention: full s^2 scores computed) on tp=8: the ranks' forward FLOPs sum to
  // ForwardFlopsPerToken x tokens. V = 50257 does not split over 8 ranks: each holds
  // ceil(V/8) = 6283 columns, 7 padded columns in all (2 x 2048 x 12288 x 7 FLOPs, 5e-8 relative).
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  const PlanSpec p = Plan(8, 1, true);
  const StepGraph g = BuildStepGraph(*m, p);
  const double per_rank = PassFlops(g.dense_layer, Pass::kForward) * 96 + PassFlops(g.head, Pass::kForward);
  const ForwardFlops f = ForwardFlopsPerToken(*m, 2048, AttentionFlops::kFull);
  EXPECT_NEAR(per_rank * 8, f.Total() * 2048 + 2.0 * 2048 * 12288 * 7, f.Total() * 2048 * 1e-12);
}

TEST(StepGraphTest, BackwardIsTwiceForwardForGemms) {
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  const StepGraph g = BuildStepGraph(*m, Plan(1, 1, false));
  double fwd = 0, bwd = 0;
  for (const Op& op : g.dense_layer) {
    if (op.kind != OpKind::kGemm) continue;
    if (op.pass == Pass::kForward) fwd += op.Flops();
    if (op.pass == Pass::kBackwardInput || op.pass == Pass::kBackwardWeight) bwd += op.Flops();
  }
  EXPECT_DOUBLE_EQ(bwd, 2 * fwd);
}

TEST(StepGraphTest, FullRecomputeRepeatsTheForwardSelectiveOnlyAttention) {
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(8, 1, true);
  p.recompute = Recompute::kFull;
  StepGraph g = BuildStepGraph(*m, p);
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute), PassFlops(g.dense_layer, Pass::kForward));
  p.recompute = Recompute::kSelective;
  g = BuildStepGraph(*m, p);
  // Recomputed: QK^T and AV, 2 x 2 s^2 (h/t) per microbatch on a rank (naive attention).
  const double s = 2048, h = 12288;
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute), 4 * s * s * h / 8);
}

TEST(StepGraphTest, RecomputeModulesRerunTheirOwnOps) {
  // Llama 3 8B on tp 2 with SP, T = 2048 tokens: mlp reruns the dense MLP block on each rank,
  // fc1 (gate and up, T x 2f/t x h) and fc2 (T x h x f/t): 2T(2f/2)h + 2T(f/2)h FLOPs, and its SP
  // all-gather and reduce-scatter again.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(2, 1, true);
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kMlp);
  StepGraph g = BuildStepGraph(*m, p);
  const double T = 2048, h = 4096, f = 14336;
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute), 2 * T * h * (2 * f / 2) + 2 * T * (f / 2) * h);
  int colls = 0;
  for (const Op& op : g.dense_layer)
    if (op.pass == Pass::kRecompute && op.kind == OpKind::kCollective) ++colls;
  EXPECT_EQ(colls, 2);  // mlp_gather and mlp_reduce
  // An FP8 plan requantizes the recomputed GEMMs' inputs: fc1's T x h and fc2's T x f/2.
  p.precision = Dtype::kFp8;
  g = BuildStepGraph(*m, p);
  int64_t quantized = 0;
  for (const Op& op : g.dense_layer)
    if (op.pass == Pass::kRecompute && std::string_view(op.name) == "fp8_quantize_input") quantized += op.bytes;
  EXPECT_EQ(quantized, 4 * (2048 * 4096 + 2048 * 14336 / 2));  // delayed scaling: 4 B per element
  // DeepSeek-V3 MoE layer: mla_up_proj reruns q_up (T x 128*192 x 1536) and kv_up
  // (T x 128*256 x 512); moe_act the experts' activation (a memory-bound op, no FLOPs).
  auto d = LoadModel("deepseek-v3");
  ASSERT_TRUE(d.ok());
  PlanSpec q = Ep8Plan();
  q.recompute = Recompute::kSelective;
  q.recompute_modules = ModuleBit(RecomputeModule::kMlaUpProj) | ModuleBit(RecomputeModule::kMoeAct);
  g = BuildStepGraph(*d, q);
  const double Td = 4096;
  EXPECT_DOUBLE_EQ(PassFlops(g.moe_layer, Pass::kRecompute), 2 * Td * 128 * 192 * 1536 + 2 * Td * 128 * 256 * 512);
  bool act = false, attention = false;
  for (const Op& op : g.moe_layer) {
    if (op.pass != Pass::kRecompute) continue;
    act |= std::string_view(op.name) == "expert_activation";
    attention |= op.kind == OpKind::kAttention;
  }
  EXPECT_TRUE(act);
  EXPECT_FALSE(attention);  // core_attn not listed
  // A list without selective recomputation, or mla_up_proj on a model without MLA: errors naming
  // the field (Megatron-Core refuses the latter, transformer_config.py).
  PlanSpec bad = Plan(1, 8, false);
  bad.gpus = 8;
  bad.global_batch = 8;
  bad.recompute_modules = ModuleBit(RecomputeModule::kMlp);
  Diagnostics none_diag;
  ValidatePlan(bad, *m, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &none_diag);
  EXPECT_NE(none_diag.ToStatus().message().find("plan.recompute_modules: [mlp] needs plan.recompute=selective"),
            std::string::npos)
      << none_diag.ToStatus().message();
  bad.recompute = Recompute::kSelective;
  bad.recompute_modules = ModuleBit(RecomputeModule::kMlaUpProj);
  Diagnostics mla_diag;
  ValidatePlan(bad, *m, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &mla_diag);
  EXPECT_NE(mla_diag.ToStatus().message().find("mla_up_proj needs a model with multi-latent attention"),
            std::string::npos)
      << mla_diag.ToStatus().message();
}

TEST(StepGraphTest, RecomputeRerunsMoeDispatcherSaysWhetherTheRecomputedLayerSynchronises) {
  // The MoE dispatcher synchronises after its first permutation (moe_permute), and what follows is
  // marked after_moe_sync. RecomputeRerunsMoeDispatcher (read by the step model's host wait) holds
  // exactly when the recomputed MoE layer reruns the permutation and ops after it.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  auto reruns = [&](const PlanSpec& q) {
    bool permute = false, after = false;
    for (const Op& op : BuildLayerPart(*m, q, true, LayerPart::kRecompute)) {
      permute = permute || std::string_view(op.name) == "moe_permute";
      after = after || op.after_moe_sync;
    }
    return permute && after;
  };
  p.recompute = Recompute::kFull;
  EXPECT_TRUE(RecomputeRerunsMoeDispatcher(p));
  EXPECT_TRUE(reruns(p));
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kTorchtitanOp);
  EXPECT_TRUE(RecomputeRerunsMoeDispatcher(p));
  EXPECT_TRUE(reruns(p));
  // moe checkpoints the whole MoE layer (moe_layer.py): its dispatcher reruns.
  p.recompute_modules = ModuleBit(RecomputeModule::kMoe);
  EXPECT_TRUE(RecomputeRerunsMoeDispatcher(p));
  EXPECT_TRUE(reruns(p));
  for (RecomputeModule mod : {RecomputeModule::kCoreAttn, RecomputeModule::kMoeAct, RecomputeModule::kLayernorm,
                              RecomputeModule::kSharedExperts, RecomputeModule::kMlp}) {
    p.recompute_modules = ModuleBit(mod);
    EXPECT_FALSE(RecomputeRerunsMoeDispatcher(p)) << static_cast<int>(mod);
    EXPECT_FALSE(reruns(p)) << static_cast<int>(mod);
  }
  p.recompute = Recompute::kNone;
  EXPECT_FALSE(RecomputeRerunsMoeDispatcher(p));
  EXPECT_FALSE(reruns(p));
}

TEST(StepGraphTest, MoeModuleRerunsTheWholeMoeLayer) {
  // DeepSeek-V3 at EP 8, recompute_modules [moe] (moe_layer.py: MoELayer.forward under
  // tensor_parallel.checkpoint): the recompute pass reruns the router, the dispatcher (its
  // permutations and both all-to-alls), the routed and the shared experts, and nothing outside
  // the MoE layer: not its pre-MLP norm (the layernorm module's), the residual or the attention.
  auto m = LoadModel("deepseek-v3");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kMoe);
  std::set<std::string> names;
  for (const Op& op : BuildLayerPart(*m, p, true, LayerPart::kRecompute)) {
    EXPECT_EQ(op.pass, Pass::kRecompute) << op.name;
    names.insert(op.name);
  }
  for (const char* rerun : {"router", "router_topk", "moe_permute", "ep_dispatch", "moe_permute_local", "expert_fc1",
                            "expert_activation", "expert_fc2", "moe_permute_local_restore", "ep_combine",
                            "moe_permute_restore", "shared_fc1", "shared_activation", "shared_fc2"})
    EXPECT_EQ(names.count(rerun), 1u) << rerun;
  for (const char* kept : {"moe_norm", "moe_residual", "attn_norm", "flash_attention", "attn_out_proj"})
    EXPECT_EQ(names.count(kept), 0u) << kept;
}

TEST(StepGraphTest, TorchtitanPerOpPolicyRerunsTheUnsavedMatmuls) {
  // Llama 3 8B, T = 2048 tokens on one GPU: the policy saves wq, wv, w1 and w2 and SDPA, so the
  // recompute pass reruns wk (T x 1024 x h), wo (T x h x h) and w3 (T x f x h) and no attention.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kTorchtitanOp);
  StepGraph g = BuildStepGraph(*m, p);
  const double T = 2048, h = 4096, f = 14336;
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute), 2 * T * 1024 * h + 2 * T * h * h + 2 * T * f * h);
  for (const Op& op : g.dense_layer) EXPECT_FALSE(op.pass == Pass::kRecompute && op.kind == OpKind::kAttention);
  // Under FP8 the same matmuls rerun (the policy sees torchao's float8 matmul as aten.mm), and
  // every linear's input quantization reruns with them: four in the recompute pass.
  p.precision = Dtype::kFp8;
  g = BuildStepGraph(*m, p);
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute), 2 * T * 1024 * h + 2 * T * h * h + 2 * T * f * h);
  int quantizes = 0;
  for (const Op& op : g.dense_layer)
    quantizes += op.pass == Pass::kRecompute && op.kind == OpKind::kMemoryBound && op.mem_op == MemOp::kFp8Quantize;
  EXPECT_EQ(quantizes, 4);
  // The policy is whole (not listed with Megatron modules) and for dense Llama-style layers.
  PlanSpec bad = p;
  bad.gpus = 1;
  bad.global_batch = 1;
  bad.recompute_modules |= ModuleBit(RecomputeModule::kCoreAttn);
  Diagnostics both;
  ValidatePlan(bad, *m, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &both);
  EXPECT_NE(both.ToStatus().message().find("torchtitan_op is a whole policy"), std::string::npos)
      << both.ToStatus().message();
  bad.recompute_modules = ModuleBit(RecomputeModule::kTorchtitanOp);
  bad.ep = 8;
  bad.dp = 8;
  bad.gpus = 8;
  bad.global_batch = 8;
  Diagnostics moe;
  ValidatePlan(bad, *LoadModel("mixtral-8x7b"), *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &moe);
  EXPECT_NE(moe.ToStatus().message().find("dense Llama-style layers"), std::string::npos) << moe.ToStatus().message();
}

TEST(StepGraphTest, MaxTextSaveQkvProjRerunsWhatTheBackwardReads) {
  // Llama 3 8B, T = 2048 tokens on one GPU under MaxText's save_qkv_proj: Q, K and V are saved and
  // JAX drops from the replay what no gradient reads, so the recompute pass reruns the attention,
  // wo (T x h x h) and w1 with w3 (T x 2f x h): not the Q/K/V GEMM (T x (h + 2 x 1024) x h) nor w2.
  // Against full recomputation's 2T(h(h + 2048) + h^2 + 3fh) GEMM FLOPs: 2T(h^2 + 2fh), plus the
  // causal attention's 2T^2 h (QK^T and AV, 2T x T x h each, over half the scores).
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kSaveQkvProj);
  StepGraph g = BuildStepGraph(*m, p);
  const double T = 2048, h = 4096, f = 14336;
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute), 2 * T * h * h + 2 * T * 2 * f * h + 2 * T * T * h);
  auto recomputed = [](const StepGraph& graph) {
    std::vector<std::string> names;
    for (const Op& op : graph.dense_layer)
      if (op.pass == Pass::kRecompute) names.push_back(op.name);
    return names;
  };
  EXPECT_EQ(recomputed(g), (std::vector<std::string>{"attn_norm", "flash_attention", "attn_out_proj", "attn_residual",
                                                     "mlp_norm", "mlp_fc1", "mlp_activation"}));
  // Under FP8 the rerun GEMMs' input quantizations rerun with them (wo's and w1/w3's), not Q/K/V's
  // or w2's.
  p.precision = Dtype::kFp8;
  g = BuildStepGraph(*m, p);
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute), 2 * T * h * h + 2 * T * 2 * f * h + 2 * T * T * h);
  int quantizes = 0;
  for (const Op& op : g.dense_layer)
    quantizes += op.pass == Pass::kRecompute && op.kind == OpKind::kMemoryBound && op.mem_op == MemOp::kFp8Quantize;
  EXPECT_EQ(quantizes, 2);
  // TP 2 with SP: the gathers before the attention and the MLP rerun (their outputs feed the
  // rerun GEMMs' weight gradients), the attention's reduce-scatter too; the MLP's does not.
  p.precision = Dtype::kBf16;
  p.tp = 2;
  p.gpus = 2;
  p.sequence_parallel = true;
  g = BuildStepGraph(*m, p);
  EXPECT_EQ(recomputed(g),
            (std::vector<std::string>{"attn_norm", "attn_gather", "flash_attention", "attn_out_proj", "attn_reduce",
                                      "attn_residual", "mlp_norm", "mlp_gather", "mlp_fc1", "mlp_activation"}));
  // A whole policy, for dense Llama-style layers.
  PlanSpec bad = Plan(1, 1, false);
  bad.gpus = 1;
  bad.global_batch = 1;
  bad.recompute = Recompute::kSelective;
  bad.recompute_modules = ModuleBit(RecomputeModule::kSaveQkvProj) | ModuleBit(RecomputeModule::kCoreAttn);
  Diagnostics both;
  ValidatePlan(bad, *m, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &both);
  EXPECT_NE(both.ToStatus().message().find("save_qkv_proj is a whole policy"), std::string::npos)
      << both.ToStatus().message();
  bad.recompute_modules = ModuleBit(RecomputeModule::kSaveQkvProj);
  bad.ep = 8;
  bad.dp = 8;
  bad.gpus = 8;
  bad.global_batch = 8;
  Diagnostics moe;
  ValidatePlan(bad, *LoadModel("mixtral-8x7b"), *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &moe);
  EXPECT_NE(moe.ToStatus().message().find("MaxText's policy as costed for dense Llama-style layers"), std::string::npos)
      << moe.ToStatus().message();
}

TEST(StepGraphTest, PyTorchCheckpointEarlyStopDoesNotRerunTheMlpOutputProjection) {
  // Llama 3 8B (no dropout), T = 2048 tokens on one GPU, full recomputation as PyTorch >= 2.1's
  // non-reentrant checkpoint replays a block: it stops when w2's saved inputs are packed, before
  // w2's GEMM runs, so the replay is the forward less w2 (T x h x f: 2 T h f FLOPs) and less the
  // residual after it.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  ASSERT_FALSE(m->dropout);
  PlanSpec p = Plan(1, 1, false);
  p.recompute = Recompute::kFull;
  p.recompute_early_stop = true;
  StepGraph g = BuildStepGraph(*m, p);
  const double T = 2048, h = 4096, f = 14336;
  EXPECT_DOUBLE_EQ(PassFlops(g.dense_layer, Pass::kRecompute),
                   PassFlops(g.dense_layer, Pass::kForward) - 2 * T * h * f);
  auto recomputed = [](const StepGraph& graph) {
    std::vector<std::string> names;
    for (const Op& op : graph.dense_layer)
      if (op.pass == Pass::kRecompute) names.push_back(op.name);
    return names;
  };
  EXPECT_EQ(recomputed(g),
            (std::vector<std::string>{"attn_norm", "qkv_proj", "rope", "flash_attention", "attn_out_proj",
                                      "attn_residual", "mlp_norm", "mlp_fc1", "mlp_activation"}));
  // With TP 2 and SP the MLP's reduce-scatter, which follows w2, is not rerun either.
  p.tp = 2;
  p.gpus = 2;
  p.sequence_parallel = true;
  g = BuildStepGraph(*m, p);
  const std::vector<std::string> names = recomputed(g);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "mlp_activation");
  EXPECT_EQ(std::count(names.begin(), names.end(), "mlp_gather"), 1);
  // The hardware FLOP count (HFU) leaves w2 out of the recompute too: 2 L h f per token less.
  PlanSpec whole = Plan(1, 1, false);
  whole.recompute = Recompute::kFull;
  PlanSpec stop = whole;
  stop.recompute_early_stop = true;
  const double tokens = static_cast<double>(whole.global_batch) * static_cast<double>(whole.seq_len);
  EXPECT_DOUBLE_EQ(HardwareFlopsPerIteration(*m, whole, AttentionFlops::kCausal) -
                       HardwareFlopsPerIteration(*m, stop, AttentionFlops::kCausal),
                   2 * 32 * h * f * tokens);
}

TEST(StepGraphTest, CheckpointEarlyStopIsRefusedWhereNothingWouldBeSkipped) {
  // Early stop skips what follows the block's last saved tensor; where that is not the dense MLP's
  // output projection the plan is refused naming the rule, not costed as a full replay.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  const GpuSpec g = *LoadGpu("h100-sxm");
  const ClusterSpec c = *LoadCluster("dgx-h100");
  PlanSpec p = Plan(1, 8, false);
  p.recompute = Recompute::kFull;
  p.recompute_early_stop = true;
  auto message = [&](const PlanSpec& plan, const ModelSpec& model) {
    Diagnostics d;
    ValidatePlan(plan, model, g, c, &d);
    return d.ToStatus().message();
  };
  EXPECT_EQ(message(p, *m).find("plan.recompute_early_stop"), std::string::npos) << message(p, *m);
  PlanSpec selective = p;
  selective.recompute = Recompute::kSelective;
  EXPECT_NE(message(selective, *m)
                .find("plan.recompute_early_stop: stops the recomputation at the block's last saved "
                      "tensor (PyTorch's non-reentrant checkpoint): needs plan.recompute full"),
            std::string::npos)
      << message(selective, *m);
  PlanSpec te = p;
  te.transformer_engine = true;
  EXPECT_NE(message(te, *m).find(
                "which here skips nothing: Transformer Engine's linear layers save their inputs after their GEMM"),
            std::string::npos)
      << message(te, *m);
  ModelSpec dropout = *m;
  dropout.dropout = true;
  EXPECT_NE(message(p, dropout).find("the dropout after the MLP saves its mask last"), std::string::npos)
      << message(p, dropout);
  auto moe = LoadModel("mixtral-8x7b");
  ASSERT_TRUE(moe.ok());
  EXPECT_NE(message(p, *moe).find("MoE, Mamba or MLA blocks"), std::string::npos) << message(p, *moe);
}

// The bytes a dense layer's ops of this name move in this pass.
int64_t DenseLayerBytes(const StepGraph& g, const char* name, Pass pass) {
  int64_t b = 0;
  for (const Op& op : g.dense_layer)
    if (op.pass == pass && std::string_view(op.name) == name) b += op.bytes;
  return b;
}

TEST(StepGraphTest, EagerElementwiseOpsMoveTheirDecompositionsBytes) {
  // Llama 3 8B, T = 2048 tokens, one GPU, PyTorch eager (torchtitan 2024 without compile): per
  // element, RMSNorm 36 B forward / 76 B backward, RoPE on q and k (32 + 8 heads of 128) 20 / 20,
  // SwiGLU over f = 14336 outputs 10 / 18 (core/step_graph.cc EagerCost); fused: 4 / 8, 4 / 8, 6 / 12.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.elementwise = Elementwise::kEager;
  const StepGraph g = BuildStepGraph(*m, p);
  auto bytes = [&](const char* name, Pass pass) { return DenseLayerBytes(g, name, pass); };
  const int64_t T = 2048, h = 4096, qk = 40 * 128, f = 14336;
  EXPECT_EQ(bytes("attn_norm", Pass::kForward), 36 * T * h);
  EXPECT_EQ(bytes("attn_norm", Pass::kBackwardInput), 76 * T * h);
  EXPECT_EQ(bytes("rope", Pass::kForward), 20 * T * qk);
  EXPECT_EQ(bytes("rope", Pass::kBackwardInput), 20 * T * qk);
  EXPECT_EQ(bytes("mlp_activation", Pass::kForward), 10 * T * f);
  EXPECT_EQ(bytes("mlp_activation", Pass::kBackwardInput), 18 * T * f);
  p.elementwise = Elementwise::kFused;
  const StepGraph fused = BuildStepGraph(*m, p);
  for (const Op& op : fused.dense_layer)
    if (op.pass == Pass::kForward && std::string_view(op.name) == "attn_norm") EXPECT_EQ(op.bytes, 4 * T * h);
  // eager-fused-norm (torchtitan's Triton RMSNorm): the norms move the fused 4 / 8 B per element,
  // RoPE and SwiGLU keep their decompositions.
  p.elementwise = Elementwise::kEagerFusedNorm;
  const StepGraph triton = BuildStepGraph(*m, p);
  auto triton_bytes = [&](const char* name, Pass pass) { return DenseLayerBytes(triton, name, pass); };
  EXPECT_EQ(triton_bytes("attn_norm", Pass::kForward), 4 * T * h);
  EXPECT_EQ(triton_bytes("attn_norm", Pass::kBackwardInput), 8 * T * h);
  EXPECT_EQ(triton_bytes("rope", Pass::kForward), 20 * T * qk);
  EXPECT_EQ(triton_bytes("mlp_activation", Pass::kBackwardInput), 18 * T * f);
  // The upcast cross entropy: 18 B per logit forward, 22 B backward.
  p.cross_entropy = CrossEntropy::kUpcast;
  const StepGraph up = BuildStepGraph(*m, p);
  for (const Op& op : up.head) {
    if (std::string_view(op.name) != "cross_entropy") continue;
    EXPECT_EQ(op.bytes, (op.pass == Pass::kForward ? 18 : 22) * T * 128256) << Name(op.pass);
  }
  // Under TP, loss_parallel's decomposition: 38 B per local logit both ways (6 and 5 kernels).
  p.tp = 8;
  p.gpus = 8;
  const StepGraph tp = BuildStepGraph(*m, p);
  int seen = 0;
  for (const Op& op : tp.head) {
    if (std::string_view(op.name) != "cross_entropy") continue;
    EXPECT_EQ(op.bytes, 38 * T * (128256 / 8)) << Name(op.pass);
    EXPECT_EQ(op.batch, op.pass == Pass::kForward ? 6 : 5) << Name(op.pass);
    ++seen;
  }
  EXPECT_EQ(seen, 2);
}

// Llama 3 8B on 8 GPUs at TP 2 x DP 4, 8,192 tokens, fp32 gradients: the plan of the loss,
// embedding-gradient and DDP tests below.
PlanSpec Llama8bTp2Plan() {
  PlanSpec p;
  p.gpus = 8;
  p.tp = 2;
  p.dp = 4;
  p.seq_len = 8192;
  p.global_batch = 16;
  p.dtypes.grads = Dtype::kFp32;
  return p;
}
// The bytes of the ops named `name` in `ops`, each expected in `pass`.
int64_t NamedBytes(const std::vector<Op>& ops, std::string_view name, Pass pass) {
  int64_t b = 0;
  for (const Op& op : ops)
    if (name == op.name) {
      EXPECT_EQ(op.pass, pass) << name;
      b += op.bytes;
    }
  return b;
}

TEST(StepGraphTest, CrossEntropyPassesOverTheLogitsAsEachImplementationRunsThem) {
  // Bytes per logit and kernels, forward / backward (core/step_graph.cc CrossEntropyCost, by hand
  // from each implementation's code):
  //  fused (Megatron-Core's eager vocab_parallel_cross_entropy): .float() 2+4, max 4, x -= max
  //    4+4, exp_ 4+4, sum 4, /= sum 4+4 = 38 B in 6; backward the in-place scale 4+4 and
  //    autograd's cast to bf16 4+2 = 14 B in 2;
  //  native (three jit_fuser functions): 2+4, 4+4, 4+4 = 22 B in 3; backward 4+2 = 6 B in 1;
  //  te (Transformer Engine's Triton kernels): 2, 2+4 = 8 B in 2; backward 4+4, 4+2 = 14 B in 2;
  //  te-inplace (the same before TE #3193, the gradient stored over the bf16 logits): 2, 2+2 = 6 B
  //    in 2; backward the in-place scale 2+2 = 4 B in 1, no cast;
  //  compiled (the upcast loss under torch.compile): one looped row reduction reading the bf16
  //    logits twice, 2+2 = 4 B in 1; backward one kernel reading them and writing the bf16
  //    gradient, 2+2 = 4 B in 1.
  // Llama 3 8B on 8 GPUs at TP 2: 8,192 tokens x 64,128 local logits.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Llama8bTp2Plan();
  const int64_t logits = int64_t{8192} * (128256 / 2);
  struct Want {
    CrossEntropy ce;
    int64_t fwd, bwd, fwd_kernels, bwd_kernels;
  };
  for (const Want w : {Want{CrossEntropy::kFused, 38, 14, 6, 2}, Want{CrossEntropy::kNative, 22, 6, 3, 1},
                       Want{CrossEntropy::kTe, 8, 14, 2, 2}, Want{CrossEntropy::kTeInplace, 6, 4, 2, 1},
                       Want{CrossEntropy::kCompiled, 4, 4, 1, 1}}) {
    p.cross_entropy = w.ce;
    const StepGraph g = BuildStepGraph(*m, p);
    int seen = 0;
    for (const Op& op : g.head) {
      if (std::string_view(op.name) != "cross_entropy") continue;
      const bool fwd = op.pass == Pass::kForward;
      EXPECT_EQ(op.bytes, (fwd ? w.fwd : w.bwd) * logits) << Name(w.ce) << " " << Name(op.pass);
      EXPECT_EQ(op.batch, fwd ? w.fwd_kernels : w.bwd_kernels) << Name(w.ce) << " " << Name(op.pass);
      ++seen;
    }
    EXPECT_EQ(seen, 2) << Name(w.ce);
  }
}

TEST(StepGraphTest, TheEmbeddingsDenseGradientIsZeroedAndAddedEveryMicrobatch) {
  // F.embedding's backward writes a zeroed dense gradient of the local table (128,256 / 2 rows x
  // 4,096 on a TP-2 rank of Llama 3 8B: 262,668,288 values) in bf16, 2 B each; Megatron-Core's DDP
  // hook adds it into the fp32 main gradient (read 2 + 4, write 4 = 10 B). Without gradient-
  // accumulation fusion that add is the generic grad_accumulate (the same 10 B) and not a second
  // one; under ZeRO-3 there is no add, only the zero fill.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Llama8bTp2Plan();
  const int64_t table = int64_t{128256} / 2 * 4096;
  auto bytes = [](const StepGraph& g, std::string_view name) {
    return NamedBytes(g.embedding, name, Pass::kBackwardWeight);
  };
  const StepGraph fused = BuildStepGraph(*m, p);
  EXPECT_EQ(bytes(fused, "embedding_grad_zero_fill"), 2 * table);
  EXPECT_EQ(bytes(fused, "embedding_grad_accumulate"), 10 * table);
  EXPECT_EQ(bytes(fused, "grad_accumulate"), 0);
  p.grad_accum_fusion = false;
  const StepGraph unfused = BuildStepGraph(*m, p);
  EXPECT_EQ(bytes(unfused, "embedding_grad_accumulate"), 0);
  EXPECT_EQ(bytes(unfused, "grad_accumulate"), 10 * table);
  p.grad_accum_fusion = true;
  p.zero = 3;
  const StepGraph zero3 = BuildStepGraph(*m, p);
  EXPECT_EQ(bytes(zero3, "embedding_grad_zero_fill"), 2 * table);
  EXPECT_EQ(bytes(zero3, "embedding_grad_accumulate"), 0);
}

TEST(StepGraphTest, DdpDividesTheGradientsBeforeReducingThemUnlessTheCollectiveAverages) {
  // Megatron-Core's DDP scales each bucket by 1/dp in place before its reduce-scatter
  // (grad_data *= gradient_scaling_factor): once per step, read and write every gradient of the
  // rank, fp32 here (8 B per parameter). Averaging in the collective (average_in_collective) and
  // ZeRO-3 (the framework's own path) have no such pass. Llama 3 8B, TP 2, DP 4, ZeRO-1, one
  // layer's parameters on a rank: (QKV 4096 x 6144 + O 4096 x 4096 + 3 x 4096 x 14336) / 2 and
  // the two norms' 2 x 4096.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Llama8bTp2Plan();
  p.zero = 1;
  auto prescale = [](const StepGraph& g) { return NamedBytes(g.dense_layer, "grad_prescale", Pass::kStep); };
  const int64_t layer = (int64_t{4096} * 6144 + int64_t{4096} * 4096 + 3 * int64_t{4096} * 14336) / 2 + 2 * 4096;
  EXPECT_EQ(prescale(BuildStepGraph(*m, p)), 8 * layer);
  p.grad_prescale = false;
  EXPECT_EQ(prescale(BuildStepGraph(*m, p)), 0);
  p.grad_prescale = true;
  p.zero = 3;
  EXPECT_EQ(prescale(BuildStepGraph(*m, p)), 0);
}

TEST(StepGraphTest, TensorParallelMovesTheSameBytesWithAndWithoutSequenceParallel) {
  // Korthikanti §4.2.2: SP replaces each all-reduce by a reduce-scatter + all-gather pair of the
  // same total volume. Per layer: 4 all-reduces of sbh (fwd + bwd) = 4 x 2(t-1)/t x 2sbh bytes.
  // Megatron additionally re-gathers the sequence-sharded input for each weight gradient (SP
  // keeps only the shard), overlapped with the input-gradient GEMM: left out of the comparison.
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  auto without_regather = [](std::vector<Op> ops) {
    std::erase_if(ops, [](const Op& op) {
      return op.pass == Pass::kBackwardInput && op.overlappable && op.collective == CollectiveKind::kAllGather;
    });
    return ops;
  };
  const double no_sp = BusBytes(BuildStepGraph(*m, Plan(8, 1, false)).dense_layer, CommGroup::kTp, 8, 1);
  const std::vector<Op> sp_ops = BuildStepGraph(*m, Plan(8, 1, true)).dense_layer;
  const double with_sp = BusBytes(without_regather(sp_ops), CommGroup::kTp, 8, 1);
  EXPECT_DOUBLE_EQ(BusBytes(sp_ops, CommGroup::kTp, 8, 1), 1.25 * with_sp);  // 2 re-gathers on top of 8
  EXPECT_DOUBLE_EQ(no_sp, with_sp);
  EXPECT_DOUBLE_EQ(no_sp, 4 * (2.0 * 7 / 8) * (2048.0 * 12288 * 2));
}

TEST(StepGraphTest, WithoutSequenceParallelEachBackwardAllReduceIsOneAllReduce) {
  // Shoeybi 2019 Fig. 3, by hand for GPT-3 on t = 8 without SP and without the async overlap
  // (Megatron-LM of 2021): forward, g all-reduces each row-parallel output (2 per layer) and f is
  // the identity; backward, g is the identity and f all-reduces the column-parallel input's
  // gradient (2 per layer), blocking. Each moves sbh x 2 bytes: 4 all-reduces per layer, no
  // all-gather. The vocab-parallel embedding's reduction is g-like (nothing backward); the head's
  // input is f-like (one all-reduce backward, no forward op).
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(8, 1, false);
  p.tp_overlap = TpOverlap::kNone;
  const StepGraph g = BuildStepGraph(*m, p);
  const int64_t sbh2 = 2048LL * 12288 * 2;
  auto count = [](const std::vector<Op>& ops, Pass pass, CollectiveKind kind, int64_t bytes) {
    int n = 0;
    for (const Op& op : ops)
      if (op.kind == OpKind::kCollective && op.group == CommGroup::kTp && op.pass == pass) {
        EXPECT_EQ(op.collective, kind) << op.name;
        EXPECT_EQ(op.bytes, bytes) << op.name;
        EXPECT_FALSE(op.overlappable) << op.name;
        ++n;
      }
    return n;
  };
  EXPECT_EQ(count(g.dense_layer, Pass::kForward, CollectiveKind::kAllReduce, sbh2), 2);
  EXPECT_EQ(count(g.dense_layer, Pass::kBackwardInput, CollectiveKind::kAllReduce, sbh2), 2);
  EXPECT_EQ(count(g.dense_layer, Pass::kBackwardWeight, CollectiveKind::kAllReduce, sbh2), 0);
  EXPECT_DOUBLE_EQ(BusBytes(g.dense_layer, CommGroup::kTp, 8, 1), 4 * (2.0 * 7 / 8) * sbh2);
  EXPECT_EQ(count(g.embedding, Pass::kForward, CollectiveKind::kAllReduce, sbh2), 1);
  EXPECT_EQ(count(g.embedding, Pass::kBackwardInput, CollectiveKind::kAllReduce, sbh2), 0);
  EXPECT_EQ(count(g.head, Pass::kForward, CollectiveKind::kAllReduce, sbh2), 0);
  EXPECT_EQ(count(g.head, Pass::kBackwardInput, CollectiveKind::kAllReduce, sbh2), 1);

  // Under SP each collective's conjugate, blocking: the embedding's reduce-scatter -> all-gather,
  // the head's input all-gather -> reduce-scatter, each of sbh x 2 bytes in all.
  p.sequence_parallel = true;
  const StepGraph sp = BuildStepGraph(*m, p);
  EXPECT_EQ(count(sp.embedding, Pass::kBackwardInput, CollectiveKind::kAllGather, sbh2), 1);
  EXPECT_EQ(count(sp.head, Pass::kBackwardInput, CollectiveKind::kReduceScatter, sbh2), 1);
}

TEST(StepGraphTest, ScatterGatherSendsASliceAndTheReceiverGathersIt) {
  // Narayanan 2021 §4.1: without SP each of the t ranks sends sbh x 2 / t bytes to the next stage
  // and the receivers all-gather the whole sbh x 2 over TP. Under SP the slice is what the next
  // stage computes on (no gather); with t = 1 there is nothing to gather; with one stage no send.
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(8, 1, false);
  p.pp = 2;
  p.gpus = 16;
  const int64_t sbh2 = 2048LL * 12288 * 2;
  const StepGraph g = BuildStepGraph(*m, p);
  EXPECT_EQ(g.p2p.bytes, sbh2 / 8);
  EXPECT_EQ(g.p2p_gather.collective, CollectiveKind::kAllGather);
  EXPECT_EQ(g.p2p_gather.group, CommGroup::kTp);
  EXPECT_EQ(g.p2p_gather.bytes, sbh2);
  p.sequence_parallel = true;
  EXPECT_EQ(BuildStepGraph(*m, p).p2p_gather.bytes, 0);
  p.sequence_parallel = false;
  p.tp = 1;
  p.gpus = 2;
  EXPECT_EQ(BuildStepGraph(*m, p).p2p_gather.bytes, 0);
  p.tp = 8;
  p.pp = 1;
  p.gpus = 8;
  EXPECT_EQ(BuildStepGraph(*m, p).p2p_gather.bytes, 0);
}

TEST(StepGraphTest, ZeroThreeMovesOneAndAHalfTimesDdpZeroOneAndTwoTheSame) {
  // ZeRO paper §7.2.2: DDP 2 psi, ZeRO-1/2 2 psi, ZeRO-3 3 psi (one microbatch per step).
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  auto bytes = [&](int zero) {
    PlanSpec p = Plan(1, 8, false);
    p.zero = zero;
    return BusBytes(BuildStepGraph(*m, p).dense_layer, CommGroup::kDpCp, 8, 1);
  };
  const double ddp = bytes(0);
  EXPECT_DOUBLE_EQ(bytes(1), ddp);
  EXPECT_DOUBLE_EQ(bytes(2), ddp);
  EXPECT_DOUBLE_EQ(bytes(3), 1.5 * ddp);
}

TEST(StepGraphTest, PerTensorZeroThreeGathersEveryTensorBlockingWithListCopies) {
  // DeepSpeed 0.3 stage 3 on Megatron's GPT layer: 12 parameter tensors (fused QKV and output
  // projections, two MLP matrices, their 4 biases, two LayerNorms' weight and bias). With full
  // recompute each is all-gathered, blocking, for the forward, the recomputed forward and the
  // backward, and its gradient reduce-scattered once: 36 gathers and 12 reduce-scatters per
  // microbatch, still 3 psi gathered per pass pair as with flat gathers (ZeRO paper §7.2.2), and
  // each of the 4 list collectives per tensor launches one copy kernel per rank (12 x 16 here).
  // Before each pass's gathers every tensor is allocated with torch.zeros (one fill writing the
  // layer's 2 psi bytes), and before the reduce-scatters each gradient is divided by the group
  // size (reading and writing its 2 psi bytes): DeepSpeed v0.3.13 _allgather_param, average_tensor.
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 16, false);
  p.zero = 3;
  p.recompute = Recompute::kFull;
  p.zero3_gather = Zero3Gather::kPerTensor;
  const std::vector<Op> layer = BuildStepGraph(*m, p).dense_layer;
  int gathers = 0, scatters = 0, step_ops = 0;
  int64_t gathered = 0;
  std::vector<int64_t> copy_kernels;
  int fills = 0, divides = 0;
  const LayerParams lp = CountLayerParams(*m, false);
  for (const Op& op : layer) {
    const std::string_view name(op.name);
    if (name == "zero3_gather_zero_fill") {
      ++fills;
      EXPECT_EQ(op.batch, 12);
      EXPECT_EQ(op.group, CommGroup::kDpCp);
      EXPECT_NEAR(static_cast<double>(op.bytes), 2.0 * static_cast<double>(lp.NonExpert()), 2.0);
      continue;
    }
    if (name == "zero3_grad_predivide") {
      ++divides;
      EXPECT_EQ(op.pass, Pass::kBackwardWeight);
      EXPECT_NEAR(static_cast<double>(op.bytes), 2.0 * 2.0 * static_cast<double>(lp.NonExpert()), 4.0);
      continue;
    }
    if (op.pass == Pass::kStep && op.kind == OpKind::kCollective) ++step_ops;
    if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather) {
      ++gathers;
      gathered += op.bytes;
      EXPECT_FALSE(op.overlappable);  // behind torch.cuda.synchronize()
    }
    if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kReduceScatter) ++scatters;
    if (op.kind == OpKind::kMemoryBound && op.group == CommGroup::kDpCp) copy_kernels.push_back(op.batch);
  }
  EXPECT_EQ(gathers, 36);
  EXPECT_EQ(scatters, 12);
  EXPECT_EQ(step_ops, 0);  // nothing left for the step: the gradients are reduced every microbatch
  ASSERT_EQ(copy_kernels.size(), 4u);
  for (int64_t k : copy_kernels) EXPECT_EQ(k, 12 * 16);
  EXPECT_EQ(fills, 3);  // forward, recomputed forward, backward
  EXPECT_EQ(divides, 1);
  EXPECT_NEAR(static_cast<double>(gathered), 3.0 * static_cast<double>(lp.NonExpert()) * 2, 3.0 * 12);
  // Flat gathers (the default): one prefetched all-gather per layer and pass.
  p.zero3_gather = Zero3Gather::kFlat;
  int flat = 0;
  for (const Op& op : BuildStepGraph(*m, p).dense_layer)
    if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather)
      flat += op.overlappable ? 1 : 100;
  EXPECT_EQ(flat, 2);
}

TEST(StepGraphTest, Fsdp2CopiesTheGatheredWeightsOutAndTheGradientsIn) {
  // PyTorch FSDP2 (_fsdp_collectives.py at 415cc26): after each flat all-gather the compute
  // stream copies the gathered bytes into the per-parameter tensors (split_with_sizes_copy: read
  // and write), and the reduce-scatter's input is the bf16 gradients copied and cast to fp32
  // (_chunk_cat: read 2, write 4). Llama 3 8B on 8 GPUs, ZeRO-3: a layer's 218,112,000
  // parameters (q and o 4096 x 4096 each, k and v 4096 x 1024, SwiGLU 3 x 4096 x 14336, two
  // norms of 4096): copy-out 2 x 218,112,000 x 2 B in the forward and again in the backward,
  // copy-in 218,112,000 x (2 + 4) B with the weight gradients. Flat gathers have no copies.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 8, false);
  p.zero = 3;
  p.dtypes.grads = Dtype::kFp32;
  p.zero3_gather = Zero3Gather::kFsdp2;
  const int64_t params = 218112000;
  const StepGraph g = BuildStepGraph(*m, p);
  EXPECT_EQ(DenseLayerBytes(g, "fsdp2_all_gather_copy_out", Pass::kForward), 4 * params);
  EXPECT_EQ(DenseLayerBytes(g, "fsdp2_all_gather_copy_out", Pass::kBackwardInput), 4 * params);
  EXPECT_EQ(DenseLayerBytes(g, "fsdp2_reduce_scatter_copy_in", Pass::kBackwardWeight), 6 * params);
  p.zero3_gather = Zero3Gather::kFlat;
  const StepGraph flat = BuildStepGraph(*m, p);
  for (Pass pass : {Pass::kForward, Pass::kBackwardInput, Pass::kBackwardWeight}) {
    EXPECT_EQ(DenseLayerBytes(flat, "fsdp2_all_gather_copy_out", pass), 0);
    EXPECT_EQ(DenseLayerBytes(flat, "fsdp2_reduce_scatter_copy_in", pass), 0);
  }
}

TEST(StepGraphTest, Fsdp1ConcatenatesCastsAndPredividesEachMicrobatchsGradients) {
  // PyTorch FSDP1 (core/specs.h Zero3Gather::kFsdp1): per microbatch, autograd concatenates a
  // layer's parameter gradients into its flat gradient (bf16: read 2, write 2), FSDP casts that
  // unsharded gradient to the fp32 reduce dtype (read 2, write 4) and divides it in place by the
  // predivide factor (read 4, write 4), and reduce-scatters it with the backward, not once per step.
  // Llama 3 8B on 8 GPUs, ZeRO-3: a layer's 218,112,000 parameters (as FSDP2's test above), so
  // 872,448,000 B, 1,308,672,000 B and 1,744,896,000 B.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 8, false);
  p.zero = 3;
  p.dtypes.grads = Dtype::kFp32;
  p.zero3_gather = Zero3Gather::kFsdp1;
  const int64_t params = 218112000;
  const StepGraph g = BuildStepGraph(*m, p);
  EXPECT_EQ(DenseLayerBytes(g, "fsdp1_grad_concat", Pass::kBackwardWeight), 4 * params);
  EXPECT_EQ(DenseLayerBytes(g, "fsdp1_grad_cast", Pass::kBackwardWeight), 6 * params);
  EXPECT_EQ(DenseLayerBytes(g, "fsdp1_grad_predivide", Pass::kBackwardWeight), 8 * params);
  EXPECT_EQ(DenseLayerBytes(g, "grad_reduce_scatter", Pass::kBackwardWeight), 4 * params);
  EXPECT_EQ(DenseLayerBytes(g, "grad_reduce_scatter", Pass::kStep), 0);
  // Gradients reduced in bf16 (Composer's PURE): nothing to cast, the predivide over 2 B.
  p.dtypes.grads = Dtype::kBf16;
  const StepGraph pure = BuildStepGraph(*m, p);
  EXPECT_EQ(DenseLayerBytes(pure, "fsdp1_grad_cast", Pass::kBackwardWeight), 0);
  EXPECT_EQ(DenseLayerBytes(pure, "fsdp1_grad_predivide", Pass::kBackwardWeight), 4 * params);
  // SHARD_GRAD_OP (ZeRO-2) gathers again before every forward.
  p.zero = 2;
  const StepGraph zero2 = BuildStepGraph(*m, p);
  EXPECT_EQ(DenseLayerBytes(zero2, "param_all_gather", Pass::kForward), 2 * params);
  EXPECT_EQ(DenseLayerBytes(zero2, "fsdp1_grad_concat", Pass::kBackwardWeight), 4 * params);
  // ZeRO-1 and the flat kind have none of it, their reduce-scatter once per step.
  for (auto [zero, kind] : {std::pair{1, Zero3Gather::kFsdp1}, std::pair{3, Zero3Gather::kFlat}}) {
    p.zero = zero;
    p.zero3_gather = kind;
    const StepGraph other = BuildStepGraph(*m, p);
    EXPECT_EQ(DenseLayerBytes(other, "fsdp1_grad_concat", Pass::kBackwardWeight), 0);
    EXPECT_EQ(DenseLayerBytes(other, "grad_reduce_scatter", Pass::kBackwardWeight), 0);
  }
}

TEST(StepGraphTest, Fp8QuantizesEachLinearInputAndOutputGradientHeadAndRouterStayBf16) {
  // Transformer Engine's FP8 linear (v2.9 module/linear.py): the input is quantized row- and
  // column-wise before the forward GEMM and the output gradient before the backward ones. Llama 3
  // 8B, one sequence of 8192 tokens, t = 1: inputs m x k of QKV, output projection, fc1 (h = 4096)
  // and fc2 (k = 14336): 8192 x (3 x 4096 + 14336) = 218,103,808 elements; output gradients
  // m x n: 8192 x (6144 + 4096 + 28672 + 4096) = 352,321,536. Delayed scaling moves 4 B per
  // element (read 2, write 1 + 1), current scaling 6 (an amax pass).
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.seq_len = 8192;
  p.precision = Dtype::kFp8;
  auto quantized = [&](Fp8Scaling sc, const char* name) {
    p.fp8_scaling = sc;
    int64_t bytes = 0;
    for (const Op& op : BuildStepGraph(*m, p).dense_layer)
      if (op.kind == OpKind::kMemoryBound && std::string_view(op.name) == name) bytes += op.bytes;
    return bytes;
  };
  EXPECT_EQ(quantized(Fp8Scaling::kDelayed, "fp8_quantize_input"), 4 * int64_t{218103808});
  EXPECT_EQ(quantized(Fp8Scaling::kDelayed, "fp8_quantize_grad"), 4 * int64_t{352321536});
  EXPECT_EQ(quantized(Fp8Scaling::kCurrent, "fp8_quantize_input"), 6 * int64_t{218103808});
  EXPECT_EQ(quantized(Fp8Scaling::kCurrent, "fp8_quantize_grad"), 6 * int64_t{352321536});
  // The output head (Megatron-Core's ColumnParallelLinear) stays BF16, unquantized.
  const StepGraph g = BuildStepGraph(*m, p);
  for (const Op& op : g.head) {
    if (op.kind == OpKind::kGemm) EXPECT_EQ(op.dtype, Dtype::kBf16) << op.name;
    EXPECT_NE(std::string_view(op.name), "fp8_quantize_input");
  }
  // BF16 plans quantize nothing.
  p.precision = Dtype::kBf16;
  EXPECT_EQ(quantized(Fp8Scaling::kCurrent, "fp8_quantize_input"), 0);
}

TEST(StepGraphTest, Nvfp4QuantizesEachLinearInputAndOutputGradientAttentionHeadAndRouterStayBf16) {
  // Transformer Engine's NVFP4BlockScaling (recipe/__init__.py at v2.12): every linear layer's
  // GEMMs in NVFP4, its input quantized before the forward and its output gradient before the
  // backward, each by an amax pass over the tensor and its Hadamard transform and a quantize that
  // reads the 2 B again and writes both layouts at 9/16 B: 2 + 2 + 2 x 9/16 = 41/8 B per element
  // in 2 kernels. Llama 3 8B, one 8192-token sequence, t = 1: 218,103,808 input elements and
  // 352,321,536 output-gradient elements (as in the FP8 test above).
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.seq_len = 8192;
  p.precision = Dtype::kNvfp4;
  const StepGraph g = BuildStepGraph(*m, p);
  int64_t in = 0, grad = 0;
  for (const Op& op : g.dense_layer) {
    const std::string_view n(op.name);
    if (n == "nvfp4_quantize_input") {
      in += op.bytes;
      EXPECT_EQ(op.batch, 2);  // two kernels
    }
    if (n == "nvfp4_quantize_grad") grad += op.bytes;
    if (n == "fp8_quantize_input" || n == "fp8_quantize_grad") ADD_FAILURE() << "an FP8 quantize in an NVFP4 plan";
    if (op.kind == OpKind::kGemm) EXPECT_EQ(op.dtype, Dtype::kNvfp4) << op.name;
    if (op.kind == OpKind::kAttention) EXPECT_EQ(op.dtype, Dtype::kBf16) << op.name;
  }
  EXPECT_EQ(in, int64_t{218103808} * 41 / 8);
  EXPECT_EQ(grad, int64_t{352321536} * 41 / 8);
  for (const Op& op : g.head)
    if (op.kind == OpKind::kGemm) EXPECT_EQ(op.dtype, Dtype::kBf16) << op.name;
}

TEST(StepGraphTest, TransformerEngineGathersQuantizedInputsAndReducesSixteenBitGradients) {
  // Sequence parallelism at TP 2 (Llama 3 8B, 8192 tokens): Transformer Engine quantizes a
  // column-parallel layer's local input and all-gathers the quantized data (module/linear.py at
  // v2.12, gather_along_first_dim(..., quantizer=...)): 8192 x 4096 elements at 1 B in FP8
  // (33,554,432 B), 9/16 B in NVFP4 (18,874,368 B), 2 B in BF16 or without Transformer Engine
  // (67,108,864 B). The backward reduce-scatters the input gradient in 16 bits and gathers the
  // saved quantized input again for the weight gradient; the output layer's gather stays 16-bit.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(2, 1, true);
  p.seq_len = 8192;
  p.transformer_engine = true;
  auto bytes = [&](Dtype d, const char* name, Pass pass, CollectiveKind kind) {
    p.precision = d;
    const StepGraph g = BuildStepGraph(*m, p);
    for (const std::vector<Op>* list : {&g.dense_layer, &g.head})
      for (const Op& op : *list)
        if (std::string_view(op.name) == name && op.pass == pass && op.collective == kind) return op.bytes;
    return int64_t{-1};
  };
  const int64_t elems = int64_t{8192} * 4096;
  EXPECT_EQ(bytes(Dtype::kFp8, "attn_gather", Pass::kForward, CollectiveKind::kAllGather), elems);
  EXPECT_EQ(bytes(Dtype::kNvfp4, "mlp_gather", Pass::kForward, CollectiveKind::kAllGather), elems * 9 / 16);
  EXPECT_EQ(bytes(Dtype::kBf16, "attn_gather", Pass::kForward, CollectiveKind::kAllGather), 2 * elems);
  EXPECT_EQ(bytes(Dtype::kFp8, "attn_gather", Pass::kBackwardWeight, CollectiveKind::kReduceScatter), 2 * elems);
  EXPECT_EQ(bytes(Dtype::kFp8, "attn_gather", Pass::kBackwardInput, CollectiveKind::kAllGather), elems);
  EXPECT_EQ(bytes(Dtype::kFp8, "head_gather", Pass::kForward, CollectiveKind::kAllGather), 2 * elems);
  p.transformer_engine = false;
  EXPECT_EQ(bytes(Dtype::kFp8, "attn_gather", Pass::kForward, CollectiveKind::kAllGather), 2 * elems);
}

TEST(StepGraphTest, DTensorTpCopiesEachSequenceCollectiveAndGathersFloat8) {
  // PyTorch's DTensor TP (plan.dtensor_tp, torchtitan): the SP collectives run on the sequence,
  // dim 1, so the functional collectives copy the whole tensor (torch.cat of its chunks) after
  // each all-gather and before each reduce-scatter: S read and S written. Llama 3 8B at TP 8,
  // 8192 tokens: S = 8192 x 4096 x 2 B = 67,108,864 B, each copy 2 S = 134,217,728 B. Forward:
  // one per gather (attn, mlp) and per reduce-scatter (attn, mlp). Backward: the reduce-scatters'
  // conjugate gathers copy; the gathers' conjugate reduce-scatters take the input gradients
  // summed over q, k, v and w1, w3, which torch.compile (elementwise fused) writes straight into
  // the collective's layout, and eager copies.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(8, 1, true);
  p.seq_len = 8192;
  p.tp_overlap = TpOverlap::kNone;
  p.dtensor_tp = true;
  p.elementwise = Elementwise::kFused;
  const int64_t S = int64_t{8192} * 4096 * 2;
  auto copies = [](const std::vector<Op>& ops, const char* name, Pass pass) {
    int64_t bytes = 0, count = 0;
    for (const Op& op : ops)
      if (op.pass == pass && std::string_view(op.name) == name && op.kind == OpKind::kMemoryBound &&
          op.group == CommGroup::kTp) {
        bytes += op.bytes;
        ++count;
      }
    return std::pair{count, bytes};
  };
  auto collective_bytes = [](const std::vector<Op>& ops, const char* name, Pass pass) {
    for (const Op& op : ops)
      if (op.pass == pass && std::string_view(op.name) == name && op.kind == OpKind::kCollective) return op.bytes;
    return int64_t{-1};
  };
  StepGraph g = BuildStepGraph(*m, p);
  for (const char* name : {"attn_gather", "mlp_gather", "attn_reduce", "mlp_reduce"}) {
    EXPECT_EQ(copies(g.dense_layer, name, Pass::kForward), (std::pair<int64_t, int64_t>{1, 2 * S})) << name;
    EXPECT_EQ(collective_bytes(g.dense_layer, name, Pass::kForward), S) << name;
  }
  for (const char* reduce : {"attn_reduce", "mlp_reduce"})
    EXPECT_EQ(copies(g.dense_layer, reduce, Pass::kBackwardInput), (std::pair<int64_t, int64_t>{1, 2 * S})) << reduce;
  for (const char* gather : {"attn_gather", "mlp_gather"})
    EXPECT_EQ(copies(g.dense_layer, gather, Pass::kBackwardInput).first, 0) << gather;
  // The embedding's reduce-scatter and the output layer's gather are DTensor's too.
  EXPECT_EQ(copies(g.embedding, "embedding_reduce", Pass::kForward).second, 2 * S);
  EXPECT_EQ(copies(g.head, "head_gather", Pass::kForward).second, 2 * S);
  // Eager: the summed gradients' reduce-scatters copy as well.
  p.elementwise = Elementwise::kEager;
  g = BuildStepGraph(*m, p);
  for (const char* gather : {"attn_gather", "mlp_gather"})
    EXPECT_EQ(copies(g.dense_layer, gather, Pass::kBackwardInput).second, 2 * S) << gather;
  // Megatron's TP: none.
  p.dtensor_tp = false;
  g = BuildStepGraph(*m, p);
  for (const char* name : {"attn_gather", "attn_reduce"}) {
    EXPECT_EQ(copies(g.dense_layer, name, Pass::kForward).first, 0) << name;
    EXPECT_EQ(copies(g.dense_layer, name, Pass::kBackwardInput).first, 0) << name;
  }
  // FP8 (torchao's float8 styles): the layers' input gathers and their output gradients' gathers
  // move 1 B an element (S / 2), their copies 2 x S / 2; the input gradients' reduce-scatters stay
  // 16-bit; the output layer (plain ColwiseParallel) gathers 16-bit.
  p.dtensor_tp = true;
  p.elementwise = Elementwise::kFused;
  p.precision = Dtype::kFp8;
  p.fp8_scaling = Fp8Scaling::kCurrent;
  g = BuildStepGraph(*m, p);
  for (const char* gather : {"attn_gather", "mlp_gather"}) {
    EXPECT_EQ(collective_bytes(g.dense_layer, gather, Pass::kForward), S / 2) << gather;
    EXPECT_EQ(copies(g.dense_layer, gather, Pass::kForward).second, S) << gather;
    EXPECT_EQ(collective_bytes(g.dense_layer, gather, Pass::kBackwardInput), S) << gather;
  }
  for (const char* reduce : {"attn_reduce", "mlp_reduce"}) {
    EXPECT_EQ(collective_bytes(g.dense_layer, reduce, Pass::kForward), S) << reduce;
    EXPECT_EQ(collective_bytes(g.dense_layer, reduce, Pass::kBackwardInput), S / 2) << reduce;
    EXPECT_EQ(copies(g.dense_layer, reduce, Pass::kBackwardInput).second, S) << reduce;
  }
  EXPECT_EQ(collective_bytes(g.head, "head_gather", Pass::kForward), S);
  // AsyncTP's fused collectives take no copy (the fused op lays the shards out itself).
  p.tp_overlap = TpOverlap::kAsync;
  g = BuildStepGraph(*m, p);
  EXPECT_EQ(copies(g.dense_layer, "attn_gather", Pass::kForward).second, 4 * (S / 2) / 8);  // AsyncTpKernels alone
  // Megatron-Core's overlaps are not DTensor's: an error naming the field.
  p.tp_overlap = TpOverlap::kBackward;
  Diagnostics d;
  ValidatePlan(p, *m, LoadGpu("h100-sxm").value(), LoadCluster("dgx-h100").value(), &d);
  EXPECT_NE(d.ToStatus().message().find("plan.dtensor_tp"), std::string::npos) << d.ToStatus().message();
}

TEST(StepGraphTest, TorchContextParallelCopiesMergesAndSendsGradientsInFp32) {
  // PyTorch's context_parallel (plan.torch_cp, torchtitan): its Python ring around the SDPA
  // kernels (torch/distributed/tensor/experimental/_attention.py). Llama 3 8B, CP 8 over 262,144
  // tokens (32,768 a rank), repeat_kv (32 K/V heads of 128), bf16, K/V rotated by all-gather:
  // q = o = 32,768 x 32 x 128 = 134,217,728 elements, kv (K and V) 268,435,456.
  // Forward, the last rank: c = 8 copies of K and V (contiguous, then a cat before each of the 7
  // exchanges) 2 x 2 x 8 x kv = 8,589,934,592 B; the merges: the first block's output to fp32
  // (2 + 4) and the result back (4 + 2), 12 x o, and each of the 7 later blocks 2 + 4 + 32 B an
  // element, 266 x o: 278 x o = 37,312,528,384 B; 45,902,462,976 B in 6 + 11 x 7 = 83 kernels.
  // Backward: fp32 zeros 4 (q + kv) = 1,610,612,736; copies 32 kv = 8,589,934,592; the first
  // block's adds 10 (q + kv) = 4,026,531,840; each later block 5 kv (half added) + 8 kv (the cat)
  // + 10 q = 4,831,838,208, x 7 = 33,822,867,456; the dK/dV cats 8 x 8 kv = 17,179,869,184; the
  // casts back 6 (q + kv) = 2,415,919,104: 67,645,734,912 B in 10 + 6 x 7 + 8 = 60 kernels.
  // Communication: the forward all-gather of K and V (8 x 536,870,912 B), again in the backward,
  // then 8 fp32 dK/dV sends of 1,073,741,824 B around the ring (no reduce-scatter).
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.cp = 8;
  p.gpus = 8;
  p.seq_len = 262144;
  p.cp_kind = CpKind::kAllGather;
  p.repeat_kv = true;
  p.torch_cp = true;
  auto find = [](const std::vector<Op>& ops, const char* name, Pass pass) {
    std::vector<Op> found;
    for (const Op& op : ops)
      if (op.pass == pass && std::string_view(op.name) == name) found.push_back(op);
    return found;
  };
  StepGraph g = BuildStepGraph(*m, p);
  auto fwd = find(g.dense_layer, "cp_ring_copies_and_merges", Pass::kForward);
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].bytes, int64_t{45'902'462'976});
  EXPECT_EQ(fwd[0].batch, 83);
  auto bwd = find(g.dense_layer, "cp_ring_copies_and_merges", Pass::kBackwardInput);
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_EQ(bwd[0].bytes, int64_t{67'645'734'912});
  EXPECT_EQ(bwd[0].batch, 60);
  auto gathers = find(g.dense_layer, "cp_kv_all_gather", Pass::kBackwardInput);
  ASSERT_EQ(gathers.size(), 1u);
  EXPECT_EQ(gathers[0].collective, CollectiveKind::kAllGather);
  EXPECT_EQ(gathers[0].bytes, int64_t{4'294'967'296});
  // Issued before the local block's SDPA and waited for after it (_AllGatherRotater), it can hide
  // under that block alone (1/cp of the attention); costed exposed, as Transformer Engine's.
  EXPECT_FALSE(gathers[0].overlappable);
  auto dkv = find(g.dense_layer, "cp_dkv_exchange", Pass::kBackwardInput);
  ASSERT_EQ(dkv.size(), 8u);
  for (const Op& op : dkv) {
    EXPECT_EQ(op.collective, CollectiveKind::kSendRecv);
    EXPECT_EQ(op.bytes, int64_t{1'073'741'824});
    EXPECT_TRUE(op.overlappable);
  }
  // Rotated by ring sends (torchtitan's alltoall): 7 exchanges of K and V (536,870,912 B) each way;
  // the backward's carry K and V plus fp32 dK and dV, and the ring's 8th dK/dV send comes with one.
  p.cp_kind = CpKind::kRing;
  g = BuildStepGraph(*m, p);
  EXPECT_EQ(find(g.dense_layer, "cp_kv_exchange", Pass::kBackwardInput).size(), 7u);
  for (const Op& op : find(g.dense_layer, "cp_kv_exchange", Pass::kBackwardInput))
    EXPECT_EQ(op.bytes, int64_t{536'870'912});
  EXPECT_EQ(find(g.dense_layer, "cp_dkv_exchange", Pass::kBackwardInput).size(), 8u);
  EXPECT_EQ(find(g.dense_layer, "cp_ring_copies_and_merges", Pass::kForward).size(), 1u);
  // Transformer Engine's CP (torch_cp off): none of it, and the ring's backward exchange carries
  // 16-bit dK and dV with K and V (2 x 536,870,912 B).
  p.torch_cp = false;
  g = BuildStepGraph(*m, p);
  EXPECT_TRUE(find(g.dense_layer, "cp_ring_copies_and_merges", Pass::kForward).empty());
  EXPECT_TRUE(find(g.dense_layer, "cp_dkv_exchange", Pass::kBackwardInput).empty());
  for (const Op& op : find(g.dense_layer, "cp_kv_exchange", Pass::kBackwardInput))
    EXPECT_EQ(op.bytes, int64_t{2 * 536'870'912});
  // Without CP the flag costs nothing; with Ulysses it is refused, naming the field.
  p.torch_cp = true;
  p.cp = 1;
  p.seq_len = 32768;
  p.gpus = 1;
  g = BuildStepGraph(*m, p);
  EXPECT_TRUE(find(g.dense_layer, "cp_ring_copies_and_merges", Pass::kForward).empty());
  p.cp = 8;
  p.gpus = 8;
  p.seq_len = 262144;
  p.cp_kind = CpKind::kUlysses;
  Diagnostics d;
  ValidatePlan(p, *m, LoadGpu("h100-sxm").value(), LoadCluster("dgx-h100").value(), &d);
  EXPECT_NE(d.ToStatus().message().find("plan.torch_cp"), std::string::npos) << d.ToStatus().message();
  // Nor over unfused attention: its ring calls SDPA's fused kernels.
  p.cp_kind = CpKind::kAllGather;
  ModelSpec naive = *m;
  naive.attention = AttentionImpl::kNaive;
  Diagnostics n;
  ValidatePlan(p, naive, LoadGpu("h100-sxm").value(), LoadCluster("dgx-h100").value(), &n);
  EXPECT_NE(n.ToStatus().message().find("plan.torch_cp: PyTorch's context_parallel rings SDPA's fused kernels"),
            std::string::npos)
      << n.ToStatus().message();
}

TEST(StepGraphTest, AsyncTpFusesEachCollectiveWithItsGemmsButTheSummedInputGradients) {
  // PyTorch's micro-pipeline TP (tp_overlap async; torch/_inductor/fx_passes/micro_pipeline_tp.py):
  // an all-gather fuses with the GEMMs that read its output as their left operand, a
  // reduce-scatter with the one GEMM whose output is its whole input. Llama 3 8B at TP 8 with SP,
  // 8192 tokens: each collective's S = 8192 x 4096 x 2 B = 67,108,864 B. Forward: the two gathers
  // (before q/k/v and w1/w3) and the two reduce-scatters (after wo and w2) are fused. Backward:
  // the reduce-scatters' conjugate gathers of the output gradient feed dX = dY W (fused); the
  // gathers' conjugate reduce-scatters take dX summed over q, k, v (or w1, w3), not one GEMM's
  // output, and stay NCCL's, blocking. The fused kernels beyond the GEMMs (torch/distributed/
  // _symmetric_memory at 006b161f): a gather copies the local shard twice (into the symmetric
  // buffer, into the kept output), 4 S / 8 = 33,554,432 B; a reduce-scatter sums 8 partials,
  // S + S / 8 = 75,497,472 B. Autograd keeps the gathered input, so no gather is repeated for the
  // weight gradient.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(8, 1, true);
  p.seq_len = 8192;
  p.tp_overlap = TpOverlap::kAsync;
  const int64_t S = int64_t{8192} * 4096 * 2;
  struct Seen {
    int fused = 0, blocking = 0;
    int64_t kernel_bytes = 0;
  };
  auto seen = [](const std::vector<Op>& ops, const char* name, Pass pass) {
    Seen s;
    for (const Op& op : ops) {
      if (op.pass != pass || std::string_view(op.name) != name) continue;
      if (op.kind == OpKind::kCollective) (op.overlappable ? s.fused : s.blocking) += 1;
      else if (op.kind == OpKind::kMemoryBound && op.group == CommGroup::kTp) s.kernel_bytes += op.bytes;
    }
    return s;
  };
  StepGraph g = BuildStepGraph(*m, p);
  for (const char* gather : {"attn_gather", "mlp_gather"}) {
    const Seen f = seen(g.dense_layer, gather, Pass::kForward);
    EXPECT_EQ(f.fused, 1) << gather;
    EXPECT_EQ(f.kernel_bytes, 4 * S / 8) << gather;
    const Seen b = seen(g.dense_layer, gather, Pass::kBackwardInput);
    EXPECT_EQ(b.blocking, 1) << gather;  // the summed input gradient's reduce-scatter
    EXPECT_EQ(b.fused + b.kernel_bytes, 0) << gather;
  }
  for (const char* reduce : {"attn_reduce", "mlp_reduce"}) {
    const Seen f = seen(g.dense_layer, reduce, Pass::kForward);
    EXPECT_EQ(f.fused, 1) << reduce;
    EXPECT_EQ(f.kernel_bytes, S + S / 8) << reduce;
    const Seen b = seen(g.dense_layer, reduce, Pass::kBackwardInput);
    EXPECT_EQ(b.fused, 1) << reduce;  // the output gradient's gather, under dX = dY W
    EXPECT_EQ(b.kernel_bytes, 4 * S / 8) << reduce;
  }
  for (const Op& op : g.dense_layer) EXPECT_FALSE(op.group == CommGroup::kTp && op.pass == Pass::kBackwardWeight);
  // The output layer is one GEMM reading its gather: both directions fused. The embedding's
  // reduce-scatter sums a lookup, no GEMM: NCCL's both ways.
  EXPECT_EQ(seen(g.head, "head_gather", Pass::kForward).fused, 1);
  EXPECT_EQ(seen(g.head, "head_gather", Pass::kBackwardInput).fused, 1);
  EXPECT_EQ(seen(g.head, "head_gather", Pass::kBackwardInput).kernel_bytes, S + S / 8);
  for (Pass pass : {Pass::kForward, Pass::kBackwardInput}) {
    const Seen e = seen(g.embedding, "embedding_reduce", pass);
    EXPECT_EQ(e.blocking, 1);
    EXPECT_EQ(e.fused + e.kernel_bytes, 0);
  }
  // Full recomputation reruns the fused forward with its kernels; torchtitan's per-op policy keeps
  // the reduce-scatters' outputs, so neither they nor their partials' sums rerun.
  p.recompute = Recompute::kFull;
  g = BuildStepGraph(*m, p);
  EXPECT_EQ(seen(g.dense_layer, "mlp_gather", Pass::kRecompute).fused, 1);
  EXPECT_EQ(seen(g.dense_layer, "mlp_reduce", Pass::kRecompute).kernel_bytes, S + S / 8);
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kTorchtitanOp);
  g = BuildStepGraph(*m, p);
  EXPECT_EQ(seen(g.dense_layer, "mlp_gather", Pass::kRecompute).kernel_bytes, 4 * S / 8);
  const Seen rs = seen(g.dense_layer, "mlp_reduce", Pass::kRecompute);
  EXPECT_EQ(rs.fused + rs.blocking + rs.kernel_bytes, 0);
  // A GELU MLP's fc1 is the one GEMM reading its gather, so its input gradient's reduce-scatter
  // fuses too (GPT-3 175B: S = 2048 x 12288 x 2 B).
  auto gpt = LoadModel("gpt3-175b");
  ASSERT_TRUE(gpt.ok());
  PlanSpec q = Plan(8, 1, true);
  q.tp_overlap = TpOverlap::kAsync;
  g = BuildStepGraph(*gpt, q);
  const Seen fc1 = seen(g.dense_layer, "mlp_gather", Pass::kBackwardInput);
  EXPECT_EQ(fc1.fused, 1);
  EXPECT_EQ(fc1.kernel_bytes, int64_t{2048} * 12288 * 2 * 9 / 8);
  EXPECT_EQ(seen(g.dense_layer, "attn_gather", Pass::kBackwardInput).blocking, 1);
  // Without SP the TP collectives are all-reduces, which the pass never fuses: refused.
  q.sequence_parallel = false;
  Diagnostics d;
  ValidatePlan(q, *gpt, *LoadGpu("a100-80g"), *LoadCluster("dgx-a100"), &d);
  EXPECT_TRUE(d.has_error_at("plan.tp_overlap")) << d.ToStatus().message();
}

TEST(StepGraphTest, ExpertParallelAddsDispatchAndCombine) {
  auto m = LoadModel("mixtral-8x7b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  const StepGraph g = BuildStepGraph(*m, p);
  int all_to_alls = 0;
  for (const Op& op : g.moe_layer)
    if (op.kind == OpKind::kCollective && op.group == CommGroup::kEp) ++all_to_alls;
  EXPECT_EQ(all_to_alls, 4);  // dispatch + combine, forward and backward
  // Each GPU runs one local expert on s*b*k = 8192 tokens.
  for (const Op& op : g.moe_layer)
    if (std::string_view(op.name) == "expert_fc1" && op.pass == Pass::kForward) {
      EXPECT_EQ(op.batch, 1);
      EXPECT_EQ(op.m, 8192);
    }
}

TEST(StepGraphTest, AllGatherContextParallelGathersKvExposedAndReduceScattersItsGradients) {
  // Llama 3 8B (8 KV heads of 128), CP 4, 8192 tokens: each rank holds 2048 tokens, so K and V
  // are 2 x 2048 x 8 x 128 x 2 B = 8 MiB per rank and the gathered buffer 4 x 8 = 32 MiB. The
  // forward all-gathers it on the critical path (Llama 3 §3.3.2; Transformer Engine's
  // all_gather); the backward gathers K and V again and reduce-scatters dK and dV, the same bytes.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.cp = 4;
  p.gpus = 4;
  p.seq_len = 8192;
  p.cp_kind = CpKind::kAllGather;
  const StepGraph g = BuildStepGraph(*m, p);
  std::vector<const Op*> cp;
  for (const Op& op : g.dense_layer)
    if (op.kind == OpKind::kCollective && op.group == CommGroup::kCp) cp.push_back(&op);
  ASSERT_EQ(cp.size(), 3u);
  const int64_t gathered = 4 * 2 * 2048 * 8 * 128 * 2;
  EXPECT_EQ(cp[0]->collective, CollectiveKind::kAllGather);
  EXPECT_EQ(cp[0]->pass, Pass::kForward);
  EXPECT_EQ(cp[1]->collective, CollectiveKind::kAllGather);
  EXPECT_EQ(cp[1]->pass, Pass::kBackwardInput);
  EXPECT_EQ(cp[2]->collective, CollectiveKind::kReduceScatter);
  EXPECT_EQ(cp[2]->pass, Pass::kBackwardInput);
  for (const Op* op : cp) {
    EXPECT_EQ(op->bytes, gathered);
    EXPECT_FALSE(op->overlappable);
  }
  // A ring moves the same K and V in cp - 1 exchanges, each under an attention block.
  p.cp_kind = CpKind::kRing;
  int exchanges = 0;
  const StepGraph ring = BuildStepGraph(*m, p);
  for (const Op& op : ring.dense_layer)
    if (op.kind == OpKind::kCollective && op.group == CommGroup::kCp && op.pass == Pass::kForward) {
      ++exchanges;
      EXPECT_TRUE(op.overlappable);
    }
  EXPECT_EQ(exchanges, 3);
}

TEST(StepGraphTest, RepeatKvCopiesKvToEveryHeadAndContextParallelGathersTheCopies) {
  // torchtitan 2024's Llama attention calls repeat_kv before SDPA (plan.repeat_kv): Llama 3 8B's
  // 8 KV heads become 32 copies of 128. Same plan as above (CP 4, 2048 tokens per rank): the copy
  // reads K and V at 8 heads and writes them at 32, 2 x 2048 x (8 + 32) x 128 x 2 B = 40 MiB in 2
  // kernels, and its backward sums the copies back over the same bytes; the all-gather then moves
  // 4 x (2 x 2048 x 32 x 128 x 2 B) = 128 MiB, four times the grouped heads' 32 MiB.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->heads, 32);
  ASSERT_EQ(m->kv_heads, 8);
  PlanSpec p = Plan(1, 1, false);
  p.cp = 4;
  p.gpus = 4;
  p.seq_len = 8192;
  p.cp_kind = CpKind::kAllGather;
  p.repeat_kv = true;
  const StepGraph g = BuildStepGraph(*m, p);
  std::vector<const Op*> copies, cp;
  for (const Op& op : g.dense_layer) {
    if (op.kind == OpKind::kMemoryBound && op.mem_op == MemOp::kRepeatKv) copies.push_back(&op);
    if (op.kind == OpKind::kCollective && op.group == CommGroup::kCp) cp.push_back(&op);
  }
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0]->pass, Pass::kForward);
  EXPECT_EQ(copies[1]->pass, Pass::kBackwardInput);
  for (const Op* op : copies) {
    EXPECT_EQ(op->bytes, int64_t{2} * 2048 * (8 + 32) * 128 * 2);
    EXPECT_EQ(op->batch, 2);
  }
  ASSERT_EQ(cp.size(), 3u);
  for (const Op* op : cp) EXPECT_EQ(op->bytes, int64_t{4} * 2 * 2048 * 32 * 128 * 2);
  // The ring's exchanges carry the copies too; a model without GQA has nothing to copy.
  p.cp_kind = CpKind::kRing;
  for (const Op& op : BuildStepGraph(*m, p).dense_layer)
    if (op.kind == OpKind::kCollective && op.group == CommGroup::kCp && op.pass == Pass::kForward)
      EXPECT_EQ(op.bytes, int64_t{2} * 2048 * 32 * 128 * 2);
  auto mha = LoadModel("llama2-13b");
  ASSERT_TRUE(mha.ok());
  ASSERT_EQ(mha->kv_heads, mha->heads);
  for (const Op& op : BuildStepGraph(*mha, p).dense_layer) EXPECT_NE(op.mem_op, MemOp::kRepeatKv);
}

TEST(StepGraphTest, EpOverlapHidesTheAllToAllsAsDualPipeDoes) {
  // Exposed under 1F1B; under Megatron-Core's batch-level EP overlap (plan.ep_overlap) and under
  // DualPipe each all-to-all runs under another microbatch's compute: overlappable. The bytes do
  // not change.
  auto m = LoadModel("mixtral-8x7b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  auto ep_ops = [&](const PlanSpec& q) {
    std::vector<std::pair<bool, int64_t>> out;
    for (const Op& op : BuildStepGraph(*m, q).moe_layer)
      if (op.kind == OpKind::kCollective && op.group == CommGroup::kEp) out.push_back({op.overlappable, op.bytes});
    return out;
  };
  const auto plain = ep_ops(p);
  ASSERT_EQ(plain.size(), 4u);
  PlanSpec o = p;
  o.ep_overlap = true;
  const auto overlapped = ep_ops(o);
  ASSERT_EQ(overlapped.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(plain[i].first);
    EXPECT_TRUE(overlapped[i].first);
    EXPECT_EQ(plain[i].second, overlapped[i].second);
  }
  // Without expert parallelism there is nothing to overlap: an error naming the field.
  PlanSpec bad = p;
  bad.ep = 1;
  bad.ep_overlap = true;
  Diagnostics d;
  ValidatePlan(bad, *m, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &d);
  EXPECT_NE(d.ToStatus().message().find("plan.ep_overlap"), std::string::npos) << d.ToStatus().message();
}

TEST(StepGraphTest, MoeTokensArePermutedAroundTheAllToAlls) {
  // Megatron-Core's all-to-all dispatcher: permutation 1 and its inverse around the all-to-alls
  // move the k copies of this rank's tokens (2 x T k h e bytes each, read and write); with more
  // than one local expert, permutation 2 and its inverse sort the received tokens by expert.
  // Qwen3-30B-A3B, EP 8 (16 local experts), b = 1, s = 4096: T k h e = 4096 x 8 x 2048 x 2.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  const int64_t tkhe = int64_t{4096} * 8 * 2048 * 2;
  int64_t fwd = 0, bwd = 0;
  int kinds = 0;
  for (const Op& op : BuildStepGraph(*m, p).moe_layer) {
    if (std::string_view(op.name).rfind("moe_permute", 0) != 0) continue;
    EXPECT_EQ(op.bytes, 2 * tkhe) << op.name;  // received tokens = sent tokens when balanced
    (op.pass == Pass::kForward ? fwd : bwd) += op.bytes;
    ++kinds;
  }
  EXPECT_EQ(kinds, 8);  // four permutations, forward and backward (the inverse permutation)
  EXPECT_EQ(fwd, 8 * tkhe);
  EXPECT_EQ(bwd, 8 * tkhe);
  // One local expert: no sort by expert.
  auto mixtral = LoadModel("mixtral-8x7b");
  ASSERT_TRUE(mixtral.ok());
  int sorts = 0;
  for (const Op& op : BuildStepGraph(*mixtral, p).moe_layer)
    if (std::string_view(op.name).rfind("moe_permute_local", 0) == 0) ++sorts;
  EXPECT_EQ(sorts, 0);
}

TEST(StepGraphTest, FlexDispatcherSendsEachTokenOncePerRankAndSkipsTheOuterPermutations) {
  // The ranks a token's k distinct experts land on, uniform routing: R (1 - C(E - E/R, k) / C(E, k)).
  // One expert per rank: k ranks (8 experts, k = 2, R = 8 -> 2). Qwen3-30B-A3B over EP 8: 128
  // experts, 16 per rank, k = 8: C(112, 8) / C(128, 8) = prod_{i<8} (112 - i) / (128 - i) =
  // 0.332580, so 8 x 0.667420 = 5.339357 ranks per token instead of 8 copies.
  EXPECT_DOUBLE_EQ(RanksPerToken(8, 2, 8), 2.0);
  EXPECT_DOUBLE_EQ(RanksPerToken(128, 8, 1), 1.0);
  EXPECT_NEAR(RanksPerToken(128, 8, 8), 5.339357, 1e-6);
  // A token never lands on more ranks than it has experts or than there are ranks.
  for (int64_t r : {2, 4, 8, 16, 32, 64, 128}) {
    EXPECT_LE(RanksPerToken(128, 8, r), std::min<double>(8, static_cast<double>(r)) + 1e-12) << r;
    EXPECT_GT(RanksPerToken(128, 8, r), 1.0) << r;
  }
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  p.moe_dispatcher = MoeDispatcher::kFlex;
  // T = 4096 tokens, h = 2048, 2 bytes: the wire carries T D h e per direction, the local sort
  // reads the T D received rows and writes the T k expert copies (and back).
  const double d = RanksPerToken(128, 8, 8);
  const int64_t sent = static_cast<int64_t>(4096 * d), received = static_cast<int64_t>(4096.0 * 8 * d / 8);
  int outer = 0, local = 0, a2a = 0;
  for (const Op& op : BuildStepGraph(*m, p).moe_layer) {
    const std::string_view name(op.name);
    if (name == "moe_permute" || name == "moe_permute_restore") ++outer;
    if (name.rfind("moe_permute_local", 0) == 0) {
      ++local;
      EXPECT_EQ(op.bytes, (received + int64_t{4096} * 8) * 2048 * 2) << op.name;
    }
    if (name == "ep_dispatch" || name == "ep_combine") {
      ++a2a;
      EXPECT_EQ(op.bytes, sent * 2048 * 2) << op.name;
    }
  }
  EXPECT_EQ(outer, 0);
  EXPECT_EQ(local, 4);  // the sort and its inverse, forward and backward
  EXPECT_EQ(a2a, 4);
}

const Op* FindOp(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops)
    if (name == op.name) return &op;
  return nullptr;
}

TEST(StepGraphTest, MegatronPadsTheVocabularyToAMultipleOfItsDivisorTimesTp) {
  // Megatron-LM's _vocab_size_with_padding: GPT-2's 50,257 tokens at --make-vocab-size-divisible-by
  // 128 and TP 8 pad to the next multiple of 1,024, 51,200: each rank's head GEMM is 6,400 columns
  // wide, a multiple of 8 (6,283 unpadded: odd, the GEMM cuBLAS runs at an sm75 kernel on Hopper).
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(8, 1, true);
  EXPECT_EQ(PaddedVocab(*m, p), 50257);
  const StepGraph plain_graph = BuildStepGraph(*m, p);
  const Op* unpadded = FindOp(plain_graph.head, "output_head");
  ASSERT_NE(unpadded, nullptr);
  EXPECT_EQ(unpadded->n, 6283);
  p.vocab_divisible_by = 128;
  EXPECT_EQ(PaddedVocab(*m, p), 51200);
  const StepGraph g = BuildStepGraph(*m, p);
  const Op* head = FindOp(g.head, "output_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->n, 6400);
  // The padded rows are weights: (51,200 - 50,257) x 12,288 = 11,587,584 more in each of the
  // embedding and the untied head.
  const auto gpu = LoadGpu("h100-sxm");
  ASSERT_TRUE(gpu.ok());
  PlanSpec unpadded_plan = p;
  unpadded_plan.vocab_divisible_by = 1;
  const MemoryReport padded_memory = EstimateMemory(*m, p, *gpu), plain = EstimateMemory(*m, unpadded_plan, *gpu);
  EXPECT_EQ(padded_memory.params.embedding - plain.params.embedding, 11587584);
  EXPECT_EQ(padded_memory.params.total - plain.params.total, (m->tied_embeddings ? 1 : 2) * int64_t{11587584});
  // At TP 1 the multiple is 128: 50,304 (nanoGPT's "padded up to nearest multiple of 64 for
  // efficiency" lands on the same 50,304).
  p.tp = 1;
  EXPECT_EQ(PaddedVocab(*m, p), 50304);
}

TEST(StepGraphTest, Fp8AttentionQuantizesQkvAndTheOutputGradientAndRunsTheFp8Kernel) {
  // Transformer Engine's FP8 attention under current scaling (PlanSpec::fp8_attention): Llama 3 8B
  // (32 query heads, 8 kv heads, head dim 128), one 8192-token sequence, t = 1. Q, K and V
  // quantized together: 8192 x (32 + 8 + 8) x 128 = 50,331,648 values at 5 B (amax read 2, cast
  // read 2 write 1) in 2 kernels; the output gradient 8192 x 32 x 128 = 33,554,432 values the same
  // way before the backward; the kernel is cuDNN's FP8 one, its FLOPs counted as the 16-bit one's.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.seq_len = 8192;
  p.precision = Dtype::kNvfp4;
  p.transformer_engine = true;
  const StepGraph off = BuildStepGraph(*m, p);
  p.fp8_attention = true;
  const StepGraph g = BuildStepGraph(*m, p);
  const Op* qkv = FindOp(g.dense_layer, "fp8_quantize_attention_qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->bytes, int64_t{50331648} * 5);
  EXPECT_EQ(qkv->batch, 2);
  EXPECT_EQ(qkv->pass, Pass::kForward);
  const Op* dout = FindOp(g.dense_layer, "fp8_quantize_attention_dout");
  ASSERT_NE(dout, nullptr);
  EXPECT_EQ(dout->bytes, int64_t{33554432} * 5);
  EXPECT_EQ(dout->pass, Pass::kBackwardInput);
  int attention = 0;
  for (const Op& op : g.dense_layer)
    if (op.kind == OpKind::kAttention) {
      ++attention;
      EXPECT_EQ(op.attention, AttentionImpl::kCudnnFp8);
    }
  EXPECT_EQ(attention, 2);  // forward and backward
  EXPECT_EQ(FindOp(off.dense_layer, "fp8_quantize_attention_qkv"), nullptr);
  EXPECT_EQ(g.dense_layer.size(), off.dense_layer.size() + 2);
  // Memory: the saved Q, K and V at 1 B instead of 2: 50,331,648 B less per layer.
  auto gpu = LoadGpu("gb200");
  ASSERT_TRUE(gpu.ok());
  PlanSpec q = p;
  q.fp8_attention = false;
  const int64_t with = EstimateMemory(*m, p, *gpu).stages[0].layer_activations_bytes;
  const int64_t without = EstimateMemory(*m, q, *gpu).stages[0].layer_activations_bytes;
  EXPECT_EQ(without - with, int64_t{32} * 50331648);  // 32 layers
}

TEST(StepGraphTest, RoundRobinRoutingSendsEachTokenToTheRanksItsConsecutiveExpertsSpan) {
  // NeMo AutoModel's fake balanced gate: token t takes experts t k .. t k + k - 1 (mod E), and EP
  // rank r holds experts [r L, r L + L), L = E / R. The block starts cycle through the multiples
  // of gcd(E, k); D is the average count of ranks a block spans, by hand:
  //  DeepSeek-V3 over EP 64 (E 256, k 8, L 4): every block [8i, 8i + 8) is two whole ranks: 2,
  //    where uniform routing gives 64 (1 - C(252, 8) / C(256, 8)) = 64 (1 - (248 x 247 x 246 x
  //    245) / (256 x 255 x 254 x 253)) = 64 x (1 - 0.880066) = 7.6758.
  //  Qwen3-30B-A3B over EP 8 (E 128, k 8, L 16): every block lies in one rank: 1 (uniform 5.34).
  //  Kimi K2 over EP 32 (E 384, k 8, L 12): starts 0, 8, 16 mod 24 span 1, 2 (8..15 crosses 12)
  //    and 1 rank: 4/3.
  //  gpt-oss-120b over EP 64 (E 128, k 4, L 2): 2.
  //  E 12, k 8, R 3 (L 4), a block past the last expert: starts 0, 4, 8; [8, 16) is experts 8..11
  //    and 0..3, ranks 2 and 0: 2 each, 2.
  EXPECT_DOUBLE_EQ(RanksPerToken(256, 8, 64, MoeRouting::kRoundRobin), 2.0);
  EXPECT_NEAR(RanksPerToken(256, 8, 64), 7.6758, 1e-4);
  EXPECT_DOUBLE_EQ(RanksPerToken(128, 8, 8, MoeRouting::kRoundRobin), 1.0);
  EXPECT_DOUBLE_EQ(RanksPerToken(384, 8, 32, MoeRouting::kRoundRobin), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(RanksPerToken(128, 4, 64, MoeRouting::kRoundRobin), 2.0);
  EXPECT_DOUBLE_EQ(RanksPerToken(12, 8, 3, MoeRouting::kRoundRobin), 2.0);
  EXPECT_DOUBLE_EQ(RanksPerToken(128, 8, 1, MoeRouting::kRoundRobin), 1.0);
  // The flex dispatcher's all-to-alls carry D rows per token: Qwen3-30B-A3B at EP 8 sends each of
  // its 4096 tokens' 2048 bf16 values once, 4096 x 2048 x 2 B, against 5.34 times that uniform.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  p.moe_dispatcher = MoeDispatcher::kFlex;
  p.moe_routing = MoeRouting::kRoundRobin;
  const StepGraph flex = BuildStepGraph(*m, p);
  const Op* dispatch = FindOp(flex.moe_layer, "ep_dispatch");
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->bytes, int64_t{4096} * 2048 * 2);
  // With the all-to-all dispatcher every token's k copies travel whatever the routing.
  p.moe_dispatcher = MoeDispatcher::kAllToAll;
  const StepGraph all_to_all = BuildStepGraph(*m, p);
  dispatch = FindOp(all_to_all.moe_layer, "ep_dispatch");
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->bytes, int64_t{4096} * 8 * 2048 * 2);
}

TEST(StepGraphTest, UnfusedGradientAccumulationAddsOnePassOverTheLayerGradients) {
  // Llama-3-8B layer on one GPU: 4096 x (4096 + 2 x 1024) attention (GQA, 8 of 32 heads for k, v)
  // + 4096 x 4096 output + 3 x 4096 x 14336 SwiGLU + 2 x 4096 norm weights = 218,112,000
  // parameters. Unfused, every microbatch reads the bf16 weight gradient (2 B) and reads and
  // writes the bf16 gradient buffer (2 x 2 B): 6 B x 218,112,000 = 1,308,672,000 bytes.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  EXPECT_EQ(FindOp(BuildStepGraph(*m, p).dense_layer, "grad_accumulate"), nullptr);
  p.grad_accum_fusion = false;
  const StepGraph g = BuildStepGraph(*m, p);
  const Op* acc = FindOp(g.dense_layer, "grad_accumulate");
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->pass, Pass::kBackwardWeight);
  EXPECT_EQ(acc->kind, OpKind::kMemoryBound);
  EXPECT_EQ(acc->bytes, 1'308'672'000);
}

TEST(StepGraphTest, Fp8ParamGatherMovesOneBytePerParameter) {
  // Llama-3-8B layer, 218,112,000 parameters, ZeRO-1 over 8: the distributed optimizer reduces the
  // bf16 gradients (2 B a parameter: 436,224,000 bytes) and all-gathers the updated parameters,
  // 2 B each in bf16 and 1 B with Megatron-Core's --fp8-param-gather: 218,112,000 bytes. The
  // gradient reduce-scatter is the same either way.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 8, false);
  p.zero = 1;
  p.precision = Dtype::kFp8;
  p.dtypes.grads = Dtype::kBf16;
  const StepGraph bf16_gather = BuildStepGraph(*m, p);
  p.fp8_param_gather = true;
  const StepGraph fp8_gather = BuildStepGraph(*m, p);
  const Op* before = FindOp(bf16_gather.dense_layer, "param_all_gather");
  const Op* after = FindOp(fp8_gather.dense_layer, "param_all_gather");
  ASSERT_TRUE(before && after);
  EXPECT_EQ(before->bytes, 436'224'000);
  EXPECT_EQ(after->bytes, 218'112'000);
  EXPECT_EQ(FindOp(fp8_gather.dense_layer, "grad_reduce_scatter")->bytes, 436'224'000);
}

TEST(StepGraphTest, TransformerEngineQuantizesTheWeightsOncePerStep) {
  // Llama-3-8B layer, 218,112,000 parameters on the rank (TP 1): Transformer Engine quantizes its
  // four weight matrices once per step (the is_first_microbatch cache), on the compute stream, row-
  // and column-wise as an input: FP8 delayed scaling 4 B an element (cast-transpose: read 2, write
  // 1 + 1) = 872,448,000 bytes in 4 kernels; current scaling 6 B (an amax pass first) =
  // 1,308,672,000 in 12 (amax, scale and cast kernels a matrix: quantizer.cpp at TE v2.9); block
  // (MXFP8) under Transformer Engine one kernel a matrix writing both layouts and their scales,
  // 65/16 B = 886,080,000 in 4; NVFP4 41/8 B = 1,117,824,000; with the FP8 parameter gather the
  // weights arrive in FP8 and only the transpose is made, 2 B = 436,224,000. BF16 plans and stacks
  // without Transformer Engine have no such op.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 8, false);
  p.zero = 1;
  p.transformer_engine = true;
  EXPECT_EQ(FindOp(BuildStepGraph(*m, p).dense_layer, "fp8_weight_quantize"), nullptr);  // bf16
  p.precision = Dtype::kFp8;
  auto quantize = [&](const char* name) {
    const StepGraph g = BuildStepGraph(*m, p);
    const Op* op = FindOp(g.dense_layer, name);
    return op ? std::make_tuple(op->bytes, op->batch, op->pass)
              : std::make_tuple(int64_t{-1}, int64_t{0}, Pass::kForward);
  };
  EXPECT_EQ(quantize("fp8_weight_quantize"), std::make_tuple(int64_t{872'448'000}, int64_t{4}, Pass::kStep));
  p.fp8_scaling = Fp8Scaling::kCurrent;
  EXPECT_EQ(quantize("fp8_weight_quantize"), std::make_tuple(int64_t{1'308'672'000}, int64_t{12}, Pass::kStep));
  p.fp8_scaling = Fp8Scaling::kBlock;
  EXPECT_EQ(quantize("fp8_weight_quantize"), std::make_tuple(int64_t{886'080'000}, int64_t{4}, Pass::kStep));
  p.fp8_scaling = Fp8Scaling::kDelayed;
  p.fp8_param_gather = true;
  EXPECT_EQ(quantize("fp8_weight_quantize"), std::make_tuple(int64_t{436'224'000}, int64_t{4}, Pass::kStep));
  p.fp8_param_gather = false;
  p.precision = Dtype::kNvfp4;
  EXPECT_EQ(quantize("nvfp4_weight_quantize"), std::make_tuple(int64_t{1'117'824'000}, int64_t{8}, Pass::kStep));
  p.precision = Dtype::kFp8;
  p.transformer_engine = false;
  EXPECT_EQ(FindOp(BuildStepGraph(*m, p).dense_layer, "fp8_weight_quantize"), nullptr);
}

TEST(StepGraphTest, TransformerEngineQuantizesEachLocalExpertsTensorsApartButUnderDelayedScaling) {
  // Qwen3-30B-A3B at EP 8 on one rank: 128 / 8 = 16 local experts. Transformer Engine's
  // GroupedLinear quantizes its inputs and its output gradients with tex.split_quantize, whose
  // multi_tensor_quantize_impl has a fused kernel for FP8 delayed scaling only and otherwise
  // quantizes each expert's tensor on its own (csrc/extensions/cast.cpp at v2.9 to v2.17.1): an
  // expert GEMM's quantization is 16 kernel sets under current scaling (3 kernels each: 48) and
  // block scaling or MXFP8 (1 each: 16), one under delayed scaling (1). The bytes do not change:
  // every expert's rows are quantized once. A dense GEMM's quantization keeps its one set.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  p.transformer_engine = true;
  p.precision = Dtype::kFp8;
  auto kernels = [&](const char* gemm, const char* quantize) {
    const StepGraph g = BuildStepGraph(*m, p);
    const std::vector<Op>& ops = g.moe_layer;
    for (size_t i = 1; i < ops.size(); ++i)
      if (std::string_view(ops[i].name) == gemm && std::string_view(ops[i - 1].name) == quantize)
        return std::make_pair(ops[i - 1].batch, ops[i - 1].bytes);
    return std::make_pair(int64_t{-1}, int64_t{-1});
  };
  const auto delayed = kernels("expert_fc1", "fp8_quantize_input");
  EXPECT_EQ(delayed.first, 1);
  p.fp8_scaling = Fp8Scaling::kCurrent;
  const auto current = kernels("expert_fc1", "fp8_quantize_input");
  EXPECT_EQ(current.first, 48);
  EXPECT_EQ(current.second, delayed.second * 6 / 4);  // 6 B an element against 4
  EXPECT_EQ(kernels("qkv_proj", "fp8_quantize_input").first, 3);
  p.fp8_scaling = Fp8Scaling::kBlock;
  EXPECT_EQ(kernels("expert_fc2", "fp8_quantize_input").first, 16);
  // The weights, once a step, one matrix at a time (module.get_weight_workspace in a loop): the
  // attention's 2 (QKV fused, output) and the 16 experts' 2 each, 34 kernels in one kernel set each.
  const StepGraph graph = BuildStepGraph(*m, p);  // kept alive: FindOp points into it
  const Op* weights = FindOp(graph.moe_layer, "fp8_weight_quantize");
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->batch, 2 + 16 * 2);
  p.transformer_engine = false;  // the DeepSeek-V3 report's own framework: 2 kernels, one set
  EXPECT_EQ(kernels("expert_fc2", "fp8_quantize_input").first, 2);
}

TEST(StepGraphTest, QuantizedGroupedExpertsPadEachExpertsRowsUnlessTheRoutingAlreadyDid) {
  // Qwen3-30B-A3B at EP 8, micro batch 1 of 4,096 tokens, one rank: top 8 of 128 experts, 16 local.
  // Balanced, the rank's experts receive 4,096 x 8 = 32,768 rows of the 2,048-wide hidden state.
  // Under FP8 Transformer Engine's GroupedLinear takes each expert's rows in multiples of 16, so
  // Megatron-Core's TEGroupedMLP pads them with Fp8Padding before fc1 (the rows and their fp32
  // probabilities, one fused_multi_row_padding kernel each, read once and written once:
  // 2 x 32,768 x (2,048 x 2 + 4) = 268,697,600 B in 2 kernels) and strips the padding after fc2
  // with Fp8Unpadding (2 x 32,768 x 2,048 x 2 = 268,435,456 B in 1); the backward runs the inverse
  // copies over the gradients, the same bytes (experts.py since Megatron-LM 56b49a4cab; TE
  // module/fp8_padding.py). Under dropless routing the experts' counts vary, so some are not
  // multiples of 16 and the copies run.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  p.transformer_engine = true;
  p.precision = Dtype::kFp8;
  auto bytes = [&](const ModelSpec& model, const PlanSpec& plan, const char* name, Pass pass) {
    const StepGraph g = BuildStepGraph(model, plan);
    for (const Op& op : g.moe_layer)
      if (std::string_view(op.name) == name && op.pass == pass) return std::make_pair(op.bytes, op.batch);
    return std::make_pair(int64_t{0}, int64_t{0});
  };
  EXPECT_EQ(bytes(*m, p, "moe_quant_padding", Pass::kForward), std::make_pair(int64_t{268'697'600}, int64_t{2}));
  EXPECT_EQ(bytes(*m, p, "moe_quant_padding", Pass::kBackwardInput), std::make_pair(int64_t{268'697'600}, int64_t{2}));
  EXPECT_EQ(bytes(*m, p, "moe_quant_unpadding", Pass::kForward), std::make_pair(int64_t{268'435'456}, int64_t{1}));
  EXPECT_EQ(bytes(*m, p, "moe_quant_unpadding", Pass::kBackwardInput),
            std::make_pair(int64_t{268'435'456}, int64_t{1}));
  // The padding sits between the sort by local expert and fc1's quantization, the unpadding
  // after fc2 and before the sort is undone.
  const StepGraph g = BuildStepGraph(*m, p);
  std::vector<std::string_view> order;
  for (const Op& op : g.moe_layer)
    if (op.pass == Pass::kForward) order.emplace_back(op.name);
  auto at = [&](std::string_view n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  EXPECT_EQ(at("moe_quant_padding"), at("moe_permute_local") + 1);
  EXPECT_LT(at("moe_quant_padding"), at("expert_fc1"));
  EXPECT_GT(at("moe_quant_unpadding"), at("expert_fc2"));
  EXPECT_EQ(at("moe_permute_local_restore"), at("moe_quant_unpadding") + 1);
  // None where the routing pads the counts already (moe_router_padding_for_quantization, or
  // HybridEP's dispatch), none in BF16, none without Transformer Engine's grouped experts.
  PlanSpec padded = p;
  padded.moe_router_padding = true;
  EXPECT_EQ(bytes(*m, padded, "moe_quant_padding", Pass::kForward).first, 0);
  EXPECT_EQ(bytes(*m, padded, "moe_quant_unpadding", Pass::kForward).first, 0);
  PlanSpec bf16 = p;
  bf16.precision = Dtype::kBf16;
  EXPECT_EQ(bytes(*m, bf16, "moe_quant_padding", Pass::kForward).first, 0);
  PlanSpec sequential = p;
  sequential.moe_grouped_gemm = false;
  EXPECT_EQ(bytes(*m, sequential, "moe_quant_padding", Pass::kForward).first, 0);
  // Token dropping pads every expert to its capacity: 32,768 / 16 = 2,048 rows at capacity factor
  // 1, a multiple of 16, so nothing to pad; at 1.1, 36,044 / 16 = 2,252 rows, 12 short of one.
  ModelSpec dropping = *m;
  dropping.moe->capacity_factor = 1.0;
  EXPECT_EQ(bytes(dropping, p, "moe_quant_padding", Pass::kForward).first, 0);
  dropping.moe->capacity_factor = 1.1;
  EXPECT_EQ(bytes(dropping, p, "moe_quant_padding", Pass::kForward).first, 2 * 36'044 * (2'048 * 2 + 4));
  // A dense model has no experts' tokens to pad: an error naming the field.
  auto dense = LoadModel("llama3-8b");
  ASSERT_TRUE(dense.ok());
  PlanSpec bad = Plan(1, 8, false);
  bad.moe_router_padding = true;
  Diagnostics d;
  ValidatePlan(bad, *dense, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &d);
  EXPECT_NE(d.ToStatus().message().find("plan.moe_router_padding"), std::string::npos) << d.ToStatus().message();
}

TEST(StepGraphTest, TheBusiestExpertParallelRankSetsTheMoeLayersPace) {
  // Qwen3-30B-A3B at EP 8, 4,096 tokens a rank, top 8: balanced, each rank's 16 experts receive
  // 32,768 rows, 2,048 each, and a dispatch carries 4,096 x 8 x 2,048 x 2 B = 134,217,728 B. With
  // the busiest rank at 1.25 times the mean (plan.moe_imbalance) it receives 40,960 rows, 2,560 an
  // expert, and its all-to-alls carry 167,772,160 B; the combine waits for it, so it sets the pace.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  EXPECT_EQ(MoeBusiestRank(*m, p), 1.0);
  const StepGraph balanced = BuildStepGraph(*m, p);
  p.moe_imbalance = 1.25;
  EXPECT_EQ(MoeBusiestRank(*m, p), 1.25);
  const StepGraph busy = BuildStepGraph(*m, p);
  for (const auto& [graph, rows, bytes] :
       {std::tuple{&balanced, 2'048, 134'217'728}, std::tuple{&busy, 2'560, 167'772'160}}) {
    const Op* fc1 = FindOp(graph->moe_layer, "expert_fc1");
    const Op* dispatch = FindOp(graph->moe_layer, "ep_dispatch");
    ASSERT_NE(fc1, nullptr);
    ASSERT_NE(dispatch, nullptr);
    EXPECT_EQ(fc1->m, rows);
    EXPECT_EQ(dispatch->bytes, bytes);
  }
  // Token dropping pads every expert to its capacity: no rank is busier, and the plan is refused.
  ModelSpec dropping = *m;
  dropping.moe->capacity_factor = 1.0;
  EXPECT_EQ(MoeBusiestRank(dropping, p), 1.0);
  Diagnostics d;
  ValidatePlan(p, dropping, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &d);
  EXPECT_NE(d.ToStatus().message().find("plan.moe_imbalance"), std::string::npos) << d.ToStatus().message();
  // Below the mean or beyond every token on one rank (ep = 8): refused naming the field.
  for (double bad : {0.5, 8.5}) {
    PlanSpec q = Ep8Plan();
    q.moe_imbalance = bad;
    Diagnostics dq;
    ValidatePlan(q, *m, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &dq);
    EXPECT_NE(dq.ToStatus().message().find("plan.moe_imbalance"), std::string::npos) << bad;
  }
  // The busiest rank's experts hold its share of the activations too: 25% more expert input.
  const auto expert_input = [&](const PlanSpec& q) {
    for (const ActivationTerm& t : LayerActivationTerms(*m, q, /*moe_layer=*/true, q.recompute))
      if (t.name == "expert_input") return t.bytes;
    return int64_t{0};
  };
  EXPECT_EQ(expert_input(p) * 4, expert_input(Ep8Plan()) * 5);
}

TEST(StepGraphTest, TiedEmbeddingsGiveTheLastStageItsOwnCopyToSynchronise) {
  // GPT 1.7B (Narayanan Table 1: vocabulary 51,200, hidden 2,304, tied embeddings), ZeRO-1 over
  // 2 with bf16 gradients. In one stage the head holds only its final norm (2,304 parameters in
  // the head's count): 4,608 bytes reduced. Over two pipeline stages the last one keeps its own
  // copy of the word embedding for the output layer (Megatron-LM's shared embedding), reduced and
  // updated as its other parameters are: (51,200 x 2,304 + 2,304) x 2 = 235,934,208 bytes.
  auto m = LoadModel("gpt-1.7b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 2, false);
  p.zero = 1;
  p.dtypes.grads = Dtype::kBf16;
  const StepGraph one = BuildStepGraph(*m, p);  // kept alive: FindOp points into it
  const Op* one_stage = FindOp(one.head, "grad_reduce_scatter");
  ASSERT_NE(one_stage, nullptr);
  EXPECT_EQ(one_stage->bytes, 4'608);
  p.pp = 2;
  p.gpus = 4;
  p.global_batch = 4;
  const StepGraph two = BuildStepGraph(*m, p);
  const Op* two_stages = FindOp(two.head, "grad_reduce_scatter");
  ASSERT_NE(two_stages, nullptr);
  EXPECT_EQ(two_stages->bytes, 235'934'208);
  // In one stage there is one copy: nothing to sum between stages.
  EXPECT_EQ(FindOp(one.head, "tied_embedding_all_reduce"), nullptr);
  EXPECT_EQ(FindOp(one.embedding, "tied_embedding_all_reduce"), nullptr);
}

TEST(StepGraphTest, TiedEmbeddingCopiesAreSummedOverThePipelinesEnds) {
  // GPT 1.7B over 4 stages (tp 2, bf16 gradients): the first stage's word embedding and the last
  // stage's copy each get the gradient of their own use, then one all-reduce on the pipeline's
  // ends sums them, once per step (Megatron-LM's _allreduce_word_embedding_grads): the copy's
  // 51,200 x 2,304 / 2 = 58,982,400 gradients x 2 bytes = 117,964,800 bytes, on both ends.
  auto m = LoadModel("gpt-1.7b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(2, 1, false);
  p.pp = 4;
  p.gpus = 8;
  p.global_batch = 4;
  p.dtypes.grads = Dtype::kBf16;
  const StepGraph g = BuildStepGraph(*m, p);
  for (const std::vector<Op>* list : {&g.embedding, &g.head}) {
    const Op* ar = FindOp(*list, "tied_embedding_all_reduce");
    ASSERT_NE(ar, nullptr);
    EXPECT_EQ(ar->kind, OpKind::kCollective);
    EXPECT_EQ(ar->collective, CollectiveKind::kAllReduce);
    EXPECT_EQ(ar->group, CommGroup::kPpEnds);
    EXPECT_EQ(ar->pass, Pass::kStep);
    EXPECT_FALSE(ar->overlappable);
    EXPECT_EQ(ar->bytes, 117'964'800);
  }
  // In the sync parts the search costs apart, the same op.
  const std::vector<Op> head_sync = BuildHeadPart(*m, p, LayerPart::kSync);
  const Op* in_part = FindOp(head_sync, "tied_embedding_all_reduce");
  ASSERT_NE(in_part, nullptr);
  EXPECT_EQ(in_part->bytes, 117'964'800);
  // Fp32 gradients (Megatron's main_grad under bf16) twice the bytes; an untied model none.
  p.dtypes.grads = Dtype::kFp32;
  const StepGraph g32 = BuildStepGraph(*m, p);
  const Op* fp32 = FindOp(g32.head, "tied_embedding_all_reduce");
  ASSERT_NE(fp32, nullptr);
  EXPECT_EQ(fp32->bytes, 2 * 117'964'800LL);
  // DualPipe: ranks 0 and pp - 1 each hold an embedding and a head (the two directions), so only
  // the embedding's list carries the all-reduce, once on each end.
  PlanSpec dual = p;
  dual.schedule = Schedule::kDualPipe;
  const StepGraph gd = BuildStepGraph(*m, dual);
  EXPECT_NE(FindOp(gd.embedding, "tied_embedding_all_reduce"), nullptr);
  EXPECT_EQ(FindOp(gd.head, "tied_embedding_all_reduce"), nullptr);
  ModelSpec untied = *m;
  untied.tied_embeddings = false;
  const StepGraph gu = BuildStepGraph(untied, p);
  EXPECT_EQ(FindOp(gu.head, "tied_embedding_all_reduce"), nullptr);
  EXPECT_EQ(FindOp(gu.embedding, "tied_embedding_all_reduce"), nullptr);
}

// The optimizer step's bytes in a plan's dense-layer list (-1 when it has none).
int64_t OptimizerStepBytes(const ModelSpec& m, const PlanSpec& p) {
  const StepGraph g = BuildStepGraph(m, p);
  const Op* step = FindOp(g.dense_layer, "optimizer_step");
  return step ? step->bytes : -1;
}

TEST(StepGraphTest, Fp16OptimizerUnscalesTheGradientsInFp32) {
  // Per parameter of the shard, bf16 grads and weights, fp32 master and Adam moments:
  //   bf16: 3 x 2 (grads: norm, update, zero) + 2 x 4 (master) + 2 x 2 x 4 (moments) + 2 = 32 B;
  //   fp16: copy grads to fp32 (2 + 4), unscale + inf check (4 + 4), the norm and the update read
  //         the fp32 copy (2 x 4), zero the 16-bit buffer (2), master 8, moments 16, weights 2 = 50 B.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  EXPECT_EQ(OptimizerStepBytes(*m, p), 32 * 218'112'000LL);
  p.precision = Dtype::kFp16;
  EXPECT_EQ(OptimizerStepBytes(*m, p), 50 * 218'112'000LL);
}

TEST(StepGraphTest, MegatronZeroesItsWholeGradientBufferUnderZero1) {
  // Megatron's DDP zeroes its contiguous gradient buffer at each step's start
  // (param_and_grad_buffer.py reset(): grad_data.zero_() at core_v0.14.0), and under ZeRO-1 that
  // buffer holds every gradient of the rank; the update itself runs over the optimizer's shard.
  // Llama 3 8B layer (218,112,000 parameters), bf16 gradients, DP 8:
  //   ZeRO-1: 30 B a shard parameter (the norm's and the update's reads 4, master 8, moments 16,
  //           weights 2) x 27,264,000 + 2 B x 218,112,000 (the whole buffer zeroed)
  //           = 817,920,000 + 436,224,000 = 1,254,144,000 B;
  //   ZeRO-2: the shard's gradients zeroed only: 32 x 27,264,000 = 872,448,000 B.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 8, false);
  p.zero = 1;
  EXPECT_EQ(OptimizerStepBytes(*m, p), 1'254'144'000LL);
  p.zero = 2;
  EXPECT_EQ(OptimizerStepBytes(*m, p), 872'448'000LL);
}

TEST(StepGraphTest, MuonOrthogonalisesEach2DWeightWithFiveNewtonSchulzSteps) {
  // Llama-3-8B layer on one GPU: Muon orthogonalises its momentum, matrix by matrix, 5 steps of
  // A = X X^T, B = bA + cA A, X = aX + B X on r x c (r <= c): 4 r^2 c + 2 r^3 FLOPs a step. QKV split
  // per query group (8 groups: q 512 x 4096, k and v 128 x 4096 each), the output 4096 x 4096, the
  // gated fc1 28672 x 4096 and fc2 4096 x 14336:
  //   q    8 x (4 x 512^2 x 4096 + 2 x 512^3)       =    36,507,222,016
  //   k, v 16 x (4 x 128^2 x 4096 + 2 x 128^3)      =     4,362,076,160
  //   o    4 x 4096^3 + 2 x 4096^3                  =   412,316,860,416
  //   fc1  4 x 4096^2 x 28672 + 2 x 4096^3          = 2,061,584,302,080
  //   fc2  4 x 4096^2 x 14336 + 2 x 4096^3          = 1,099,511,627,776
  //   a step 3,614,282,088,448; 5 steps 18,071,410,442,240 FLOPs, in bf16, once per step.
  // With the optimizer sharded over 8 (ZeRO-1: the layer-wise distributed Muon) a rank runs 1/8.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  auto ns_flops = [](const std::vector<Op>& ops) {
    double f = 0;
    for (const Op& op : ops)
      if (std::string_view(op.name) == "muon_newton_schulz") {
        EXPECT_EQ(op.pass, Pass::kStep);
        EXPECT_EQ(op.dtype, Dtype::kBf16);
        f += op.Flops();
      }
    return f;
  };
  EXPECT_EQ(ns_flops(BuildStepGraph(*m, p).dense_layer), 0.0);  // AdamW: none
  p.optimizer = Optimizer::kMuon;
  EXPECT_DOUBLE_EQ(ns_flops(BuildStepGraph(*m, p).dense_layer), 18'071'410'442'240.0);
  // The step's memory pass keeps one moment (the momentum): 3 x 2 + 2 x 4 + 2 x 4 + 2 = 24 B.
  const StepGraph muon = BuildStepGraph(*m, p);
  const Op* step = FindOp(muon.dense_layer, "optimizer_step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->bytes, 24 * 218'112'000LL);
  PlanSpec sharded = Plan(1, 8, false);
  sharded.optimizer = Optimizer::kMuon;
  sharded.zero = 1;
  EXPECT_DOUBLE_EQ(ns_flops(BuildStepGraph(*m, sharded).dense_layer), 18'071'410'442'240.0 / 8);
}

TEST(GroupLayoutTest, EveryGroupHasOneLayoutAndItsSpanIsThatLayouts) {
  // tp 2, dp 4, pp 2, ep 2 (etp 1) in tp-cp-ep-dp-pp, by hand: dense axes skip ep, so tp stride
  // 1, dp stride tp*cp = 2, pp stride tp*cp*dp = 8; the expert regrouping etp x ep x edp has ep
  // at stride etp = 1 and edp = tp*cp*dp/(ep*etp) = 4 at stride etp*ep = 2; DP x CP starts at
  // cp's stride 2.
  PlanSpec p;
  p.tp = 2;
  p.dp = 4;
  p.pp = 2;
  p.ep = 2;
  p.gpus = 16;
  EXPECT_EQ(LayoutOfGroup(CommGroup::kTp, p), (GroupLayout{2, 1}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kDp, p), (GroupLayout{4, 2}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kPp, p), (GroupLayout{2, 8}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kEp, p), (GroupLayout{2, 1}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kExpertDp, p), (GroupLayout{4, 2}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kDpCp, p), (GroupLayout{4, 2}));
  // HSDP over dp 4 in shards of 2: the shard at cp's stride, the replicas two shards apart.
  p.hsdp_shard_size = 2;
  EXPECT_EQ(LayoutOfGroup(CommGroup::kHsdpShard, p), (GroupLayout{2, 2}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kHsdpReplica, p), (GroupLayout{2, 4}));
  // The pipeline's ends: stages 0 and pp - 1, (pp - 1) x 8 ranks apart; one rank without a pipeline.
  EXPECT_EQ(LayoutOfGroup(CommGroup::kPpEnds, p), (GroupLayout{2, 8}));
  PlanSpec four = p;
  four.pp = 4;
  four.gpus = 32;
  EXPECT_EQ(LayoutOfGroup(CommGroup::kPpEnds, four), (GroupLayout{2, 24}));
  PlanSpec one = p;
  one.pp = 1;
  one.gpus = 8;
  EXPECT_EQ(LayoutOfGroup(CommGroup::kPpEnds, one).size, 1);
  const ClusterSpec c = *LoadCluster("dgx-h100");
  for (int g = 1; g < kCommGroups; ++g) {
    const auto group = static_cast<CommGroup>(g);
    const GroupLayout l = LayoutOfGroup(group, p);
    const GroupSpan a = SpanOfGroup(group, p, c), b = SpanOfStride(l.size, l.stride, c);
    EXPECT_EQ(std::tie(a.size, a.per_domain, a.domains), std::tie(b.size, b.per_domain, b.domains)) << Name(group);
  }
  // 16 ranks, 8 per NVLink domain: the pp group (stride 8) crosses domains, dp (stride 2) does not.
  EXPECT_TRUE(SpanOfGroup(CommGroup::kPp, p, c).Crosses());
  EXPECT_FALSE(SpanOfGroup(CommGroup::kDp, p, c).Crosses());
}

TEST(GroupLayoutTest, DataParallelOutermostSplitsDpWithCpIntoTwoDigits) {
  // MLPerf v5.1's Llama 3.1 405B on 512 GB200s: tp 4, cp 2, pp 8, dp 8 in NeMo's tp-cp-ep-pp-dp
  // (use_tp_pp_dp_mapping). By hand: tp stride 1, cp 4, pp tp*cp = 8, dp tp*cp*pp = 64. DP with CP
  // is cp's digit (2 members, 4 apart) inside dp's (8 members, 64 apart): two digits, not one.
  PlanSpec p;
  p.tp = 4;
  p.cp = 2;
  p.pp = 8;
  p.dp = 8;
  p.gpus = 512;
  ASSERT_TRUE(ParsePlacement("tp-cp-ep-pp-dp", &p.placement));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kPp, p), (GroupLayout{8, 8}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kDp, p), (GroupLayout{8, 64}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kDpCp, p), (GroupLayout{16, 4, 2, 64}));
  // In 72-GPU domains: the CP pair shares one, the DP members are 64 ranks apart, one a domain:
  // 2 per domain over 8 domains (one digit at cp's stride would say all 16 in one domain).
  const ClusterSpec c = *LoadCluster("gb200-nvl72");
  const GroupSpan dpcp = SpanOfGroup(CommGroup::kDpCp, p, c);
  EXPECT_EQ(dpcp.per_domain, 2);
  EXPECT_EQ(dpcp.domains, 8);
  // HSDP shards of 4 (two CP pairs: two whole inner digits) and of 1 (part of one).
  p.hsdp_shard_size = 4;
  EXPECT_EQ(LayoutOfGroup(CommGroup::kHsdpShard, p), (GroupLayout{4, 4, 2, 64}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kHsdpReplica, p), (GroupLayout{4, 128}));
  p.hsdp_shard_size = 1;
  EXPECT_EQ(LayoutOfGroup(CommGroup::kHsdpShard, p), (GroupLayout{1, 4}));
  EXPECT_EQ(LayoutOfGroup(CommGroup::kHsdpReplica, p), (GroupLayout{16, 4, 2, 64}));
  p.hsdp_shard_size = 0;
  // The default order keeps one digit: dp x cp = 16 ranks from cp's stride 4.
  PlanSpec d = p;
  d.placement = PlanSpec{}.placement;
  EXPECT_EQ(LayoutOfGroup(CommGroup::kDpCp, d), (GroupLayout{16, 4}));
}

TEST(GroupLayoutTest, SlurmSegmentsKeepAPipelineInsideOneDomain) {
  // The same plan: each pipeline (tp*cp*pp = 64 ranks, 16 nodes of 4) sits at 64k. NVL72 racks
  // hold 72 consecutive ranks when filled domain after domain, so most pipelines straddle two
  // racks and some of their stage links cross; with Slurm segments of 16 nodes (NVIDIA's MLPerf
  // v5.1 launch: sbatch --segment $SEGMENT, SEGMENT = tp*pp*cp/4) a rack holds one whole segment,
  // floor(72/64) x 64 = 64 ranks, and no link crosses.
  PlanSpec p;
  p.tp = 4;
  p.cp = 2;
  p.pp = 8;
  p.dp = 8;
  p.vpp = 8;
  p.schedule = Schedule::kInterleaved;
  p.gpus = 512;
  ASSERT_TRUE(ParsePlacement("tp-cp-ep-pp-dp", &p.placement));
  const ClusterSpec c = *LoadCluster("gb200-nvl72");
  EXPECT_EQ(JobDomainGpus(p, c), 72);
  EXPECT_TRUE(PipelineLinkCounts(p, c).AnyCrossing());
  p.segment_nodes = 16;
  EXPECT_EQ(JobDomainGpus(p, c), 64);
  EXPECT_FALSE(PipelineLinkCounts(p, c).AnyCrossing());
  // Segments of 4 nodes (16 GPUs): a rack holds four, 64 ranks; of 2 (8 GPUs): nine, all 72.
  p.segment_nodes = 4;
  EXPECT_EQ(JobDomainGpus(p, c), 64);
  p.segment_nodes = 2;
  EXPECT_EQ(JobDomainGpus(p, c), 72);
  // The data-parallel group (dp 8, 64 apart) crosses either way.
  EXPECT_TRUE(SpanOfGroup(CommGroup::kDp, p, c).Crosses());
}

}  // namespace
}  // namespace meshplan::core

namespace meshplan::core {
namespace {

// The attention ops of the MoE layer's forward, by name.
std::vector<Op> ForwardAttention(const std::vector<Op>& ops) {
  std::vector<Op> out;
  for (const Op& op : ops)
    if (op.kind == OpKind::kAttention && op.pass == Pass::kForward) out.push_back(op);
  return out;
}

TEST(StepGraphTest, SlidingWindowLayersGetTheirOwnAttentionOp) {
  // gpt-oss-120b, one sequence of 4096 on one GPU: every layer is MoE, half of them windowed
  // (128 keys). The MoE layer carries a global op and a windowed one, each at share 1/2:
  // global 2 x 64 heads x 4096 x 2048 keys x (64 + 64) = 137,438,953,472, x 1/2;
  // windowed 2 x 64 x 4096 x 126 keys x 128 x 1/2 = 4,227,858,432 (126 = 128 - 128^2/8192).
  auto m = LoadModel("gpt-oss-120b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Plan(1, 1, false);
  p.seq_len = 4096;
  const StepGraph g = BuildStepGraph(*m, p);
  const std::vector<Op> attn = ForwardAttention(g.moe_layer);
  ASSERT_EQ(attn.size(), 2u);
  EXPECT_EQ(attn[0].window, 0);
  EXPECT_DOUBLE_EQ(attn[0].share, 0.5);
  EXPECT_DOUBLE_EQ(attn[0].Flops(), 137438953472.0 / 2);
  EXPECT_STREQ(attn[1].name, "flash_attention_window");
  EXPECT_EQ(attn[1].window, 128);
  EXPECT_DOUBLE_EQ(attn[1].share, 0.5);
  EXPECT_DOUBLE_EQ(attn[1].Flops(), 4227858432.0);
  // The graph's forward attention per layer, x 36 layers / 4096 tokens, is ForwardFlopsPerToken's.
  const double per_token = (attn[0].Flops() + attn[1].Flops()) * 36 / 4096;
  EXPECT_DOUBLE_EQ(per_token, ForwardFlopsPerToken(*m, 4096, AttentionFlops::kCausal).attention);

  // Every layer windowed (global_attention_every 0): one op, share 1.
  ModelSpec w = *m;
  w.global_attention_every = 0;
  const std::vector<Op> all = ForwardAttention(BuildStepGraph(w, p).moe_layer);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].window, 128);
  EXPECT_DOUBLE_EQ(all[0].share, 1.0);
  // A window as long as the sequence changes nothing: one global op.
  w.sliding_window = 4096;
  const std::vector<Op> none = ForwardAttention(BuildStepGraph(w, p).moe_layer);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].window, 0);
  EXPECT_DOUBLE_EQ(none[0].Flops(), 137438953472.0);
}

TEST(StepGraphTest, ChunkedLayersAreTheirOwnAttentionOpAndPlansRespectTheirRules) {
  // Llama 4 Maverick at 32768 tokens on one GPU: 24 dense and 24 MoE layers, each list's global
  // and chunked ops weighted by its own layers' shares; the graph's attention over both lists,
  // x 24 layers each, is ForwardFlopsPerToken's, and the chunked op is marked so its kernel runs
  // at the chunk's length.
  auto m = LoadModel("llama4-maverick");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 32768;
  p.global_batch = 1;
  const StepGraph g = BuildStepGraph(*m, p);
  double sum = 0;
  bool chunked = false;
  for (const auto* list : {&g.dense_layer, &g.moe_layer}) {
    for (const Op& op : ForwardAttention(*list)) {
      sum += op.Flops() * 24;
      if (op.chunked) {
        chunked = true;
        EXPECT_STREQ(op.name, "flash_attention_chunked");
        EXPECT_EQ(op.window, 8192);
      }
    }
  }
  EXPECT_TRUE(chunked);
  EXPECT_NEAR(sum / 32768, ForwardFlopsPerToken(*m, 32768, AttentionFlops::kCausal).attention, 1e-3);
  // Refused: chunks without a length, and context parallelism over chunked layers (not modelled).
  Diagnostics d;
  ModelSpec bad = *m;
  bad.sliding_window = 0;
  bad.global_attention_every = 0;
  ValidateModel(bad, "model", &d);
  EXPECT_NE(d.ToStatus().ToString().find("model.chunked_attention: needs sliding_window > 0"), std::string::npos)
      << d.ToStatus().ToString();
  PlanSpec cp = p;
  cp.gpus = 2;
  cp.cp = 2;
  Diagnostics dc;
  ValidatePlan(cp, *m, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &dc);
  EXPECT_NE(dc.ToStatus().ToString().find("context parallelism of chunked attention"), std::string::npos)
      << dc.ToStatus().ToString();
}

TEST(StepGraphTest, MegatronCoreAddsTheExpertsFc2BiasOneLocalExpertAtATime) {
  // gpt-oss-120b (128 experts top-4, hidden 2880, biases everywhere) on 8 GPUs at EP 8, one
  // 4096-token sequence: each rank's 16 local experts receive 4096 x 4 = 16,384 rows, so fc2's
  // output is 16,384 x 2880 = 47,185,920 elements. Megatron-Core's _apply_bias (core/specs.h
  // ExpertBias), by hand from autograd's ops (core/step_graph.cc kExpertBias16/32):
  //  per-expert, 16-bit probabilities: forward 12 B an element in 2 x 16 + 1 (the cat) = 33
  //    kernels, backward 16 B in 4 x 16 + 2 (two cats) = 66;
  //  per-expert-fp32: forward 28 B in 2 x 16 + 2 (the cat, the cast back) = 34, backward 40 B in
  //    5 x 16 + 3 (the cast's gradient, two cats) = 83.
  auto m = LoadModel("gpt-oss-120b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Ep8Plan();
  const int64_t elements = int64_t{16384} * 2880;
  auto bias_ops = [&](const PlanSpec& plan) {
    std::vector<Op> found;
    for (const Op& op : BuildStepGraph(*m, plan).moe_layer)
      if (std::string_view(op.name) == "expert_fc2_bias") found.push_back(op);
    return found;
  };
  EXPECT_TRUE(bias_ops(p).empty());  // fused: the default adds no pass
  p.expert_bias = ExpertBias::kPerExpert;
  std::vector<Op> ops = bias_ops(p);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].pass, Pass::kForward);
  EXPECT_EQ(ops[0].mem_op, MemOp::kExpertBias);
  EXPECT_EQ(ops[0].bytes, elements * 12);
  EXPECT_EQ(ops[0].batch, 33);
  EXPECT_EQ(ops[1].pass, Pass::kBackwardInput);
  EXPECT_EQ(ops[1].bytes, elements * 16);
  EXPECT_EQ(ops[1].batch, 66);
  p.expert_bias = ExpertBias::kPerExpertFp32;
  ops = bias_ops(p);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].bytes, elements * 28);
  EXPECT_EQ(ops[0].batch, 34);
  EXPECT_EQ(ops[1].bytes, elements * 40);
  EXPECT_EQ(ops[1].batch, 83);
  // Experts without biases (Qwen3-30B-A3B) have nothing to add whatever the plan says.
  auto qwen = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(qwen.ok());
  for (const Op& op : BuildStepGraph(*qwen, p).moe_layer) EXPECT_NE(op.mem_op, MemOp::kExpertBias);
}

TEST(StepGraphTest, MegatronCoreRunsAScaledRopeUnfusedAndClampsTheGluEagerly) {
  // gpt-oss-120b at EP 8, one 4096-token sequence. Its YaRN RoPE scales cos and sin by
  // 0.1 ln 32 + 1 (ModelSpec::rope_mscale), which Transformer Engine's fused RoPE cannot, so
  // Megatron-Core runs _apply_rotary_pos_emb_bshd on q (64 heads) and k (8) of head dim 64:
  // 4096 x 72 x 64 = 18,874,368 elements, forward 24 B each in 2 x 12 kernels, backward 26 B in
  // 2 x 7 (core/step_graph.cc kMegatronRope). Its clamped SwiGLU (glu_clamp 7) runs two clamps and
  // a cat before the fused activation over the 16,384 expert rows of 2 x 2880: per element of the
  // 2880-wide output forward 16 B in 3 kernels, backward 20 B in 3 (kGluClamp).
  auto m = LoadModel("gpt-oss-120b");
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->rope_mscale, 0.1 * std::log(32.0) + 1, 1e-15);
  EXPECT_EQ(m->glu_clamp, 7.0);
  PlanSpec p = Ep8Plan();
  auto named = [](const std::vector<Op>& ops, std::string_view name) {
    std::vector<Op> found;
    for (const Op& op : ops)
      if (std::string_view(op.name) == name) found.push_back(op);
    return found;
  };
  const int64_t qk = int64_t{4096} * 72 * 64, act = int64_t{16384} * 2880;
  StepGraph g = BuildStepGraph(*m, p);
  std::vector<Op> rope = named(g.moe_layer, "rope"), clamp = named(g.moe_layer, "expert_activation_clamp");
  ASSERT_EQ(rope.size(), 2u);
  EXPECT_EQ(rope[0].pass, Pass::kForward);
  EXPECT_EQ(rope[0].bytes, qk * 24);
  EXPECT_EQ(rope[0].batch, 24);
  EXPECT_EQ(rope[1].pass, Pass::kBackwardInput);
  EXPECT_EQ(rope[1].bytes, qk * 26);
  EXPECT_EQ(rope[1].batch, 14);
  ASSERT_EQ(clamp.size(), 2u);
  EXPECT_EQ(clamp[0].mem_op, MemOp::kGluClamp);
  EXPECT_EQ(clamp[0].bytes, act * 16);
  EXPECT_EQ(clamp[0].batch, 3);
  EXPECT_EQ(clamp[1].pass, Pass::kBackwardInput);
  EXPECT_EQ(clamp[1].bytes, act * 20);
  EXPECT_EQ(clamp[1].batch, 3);
  // moe_act's recomputation reruns the clamps with the activation.
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kMoeAct);
  int reruns = 0;
  for (const Op& op : named(BuildStepGraph(*m, p).moe_layer, "expert_activation_clamp"))
    reruns += op.pass == Pass::kRecompute ? 1 : 0;
  EXPECT_EQ(reruns, 1);
  // Transformer Engine's op fuser clamps inside its activation op: no copies; the RoPE is
  // Megatron-Core's attention's, unchanged.
  p = Ep8Plan();
  p.moe_op_fuser = true;
  g = BuildStepGraph(*m, p);
  EXPECT_TRUE(named(g.moe_layer, "expert_activation_clamp").empty());
  EXPECT_EQ(named(g.moe_layer, "rope")[0].bytes, qk * 24);
  // Plain RoPE (mscale 1) is one fused kernel reading and writing q and k once; no clamp, none.
  ModelSpec plain = *m;
  plain.rope_mscale = 1;
  plain.glu_clamp = 0;
  g = BuildStepGraph(plain, Ep8Plan());
  EXPECT_EQ(named(g.moe_layer, "rope")[0].bytes, qk * 4);
  EXPECT_EQ(named(g.moe_layer, "rope")[0].batch, 1);
  EXPECT_TRUE(named(g.moe_layer, "expert_activation_clamp").empty());
}

TEST(StepGraphTest, ScaledRopeClampAndOpFuserAreRefusedWhereTheyCannotApply) {
  auto m = LoadModel("gpt-oss-120b");
  ASSERT_TRUE(m.ok());
  auto model_errors = [](const ModelSpec& model) {
    Diagnostics d;
    ValidateModel(model, "model", &d);
    return d.ToStatus().ToString();
  };
  ModelSpec bad = *m;
  bad.rope_mscale = 0;
  EXPECT_NE(model_errors(bad).find("model.rope_mscale: must be a positive number"), std::string::npos);
  bad = *m;
  bad.position = PositionKind::kLearned;
  EXPECT_NE(model_errors(bad).find("model.rope_mscale: scales RoPE's cos and sin: needs position rope"),
            std::string::npos);
  bad = *m;
  bad.glu_clamp = -1;
  EXPECT_NE(model_errors(bad).find("model.glu_clamp: must be >= 0"), std::string::npos);
  bad = *m;
  bad.mlp = MlpKind::kGelu;
  EXPECT_NE(model_errors(bad).find("model.glu_clamp: clamps a gated MLP's two halves"), std::string::npos);
  auto plan_errors = [&](const ModelSpec& model, const PlanSpec& plan) {
    Diagnostics d;
    ValidatePlan(plan, model, *LoadGpu("h100-sxm"), *LoadCluster("dgx-h100"), &d);
    return d.ToStatus().ToString();
  };
  PlanSpec p = Ep8Plan();
  p.moe_op_fuser = true;
  EXPECT_NE(plan_errors(*m, p).find("plan.moe_op_fuser: is Transformer Engine's grouped experts fused"),
            std::string::npos);
  p.transformer_engine = true;
  EXPECT_EQ(plan_errors(*m, p).find("plan.moe_op_fuser"), std::string::npos) << plan_errors(*m, p);
  p.expert_bias = ExpertBias::kPerExpert;
  EXPECT_NE(plan_errors(*m, p).find("plan.expert_bias: the op fuser adds fc2's bias in its grouped linear op"),
            std::string::npos);
  auto dense = LoadModel("llama3-8b");
  ASSERT_TRUE(dense.ok());
  PlanSpec d = Plan(1, 8, false);
  d.moe_op_fuser = true;
  EXPECT_NE(plan_errors(*dense, d).find("plan.moe_op_fuser: runs an MoE layer's experts"), std::string::npos);
}

}  // namespace
}  // namespace meshplan::core
