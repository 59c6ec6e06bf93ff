// Activation memory against Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", arXiv 2205.05198), Table 2 and Eq. 1-5, for the paper's own GPT configs.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/memory.h"
#include "core/presets.h"

namespace meshplan::core {
namespace {

// A layer's saved tensors by name, under the plan's recomputation.
std::map<std::string, int64_t> TermsByName(const ModelSpec& m, const PlanSpec& p, bool moe) {
  std::map<std::string, int64_t> out;
  for (const auto& t : LayerActivationTerms(m, p, moe, p.recompute)) out[t.name] = t.bytes;
  return out;
}

// A GPT layer as the paper models it: 2-matrix GELU MLP with f = 4h, biases, LayerNorm, dropout
// after attention and MLP, naive attention (the s^2 scores are stored).
ModelSpec PaperGpt(int64_t layers, int64_t hidden, int64_t heads) {
  ModelSpec m;
  m.name = "korthikanti-gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = 4 * hidden;
  m.mlp = MlpKind::kGelu;
  m.vocab = 51200;
  m.max_seq = 2048;
  m.tied_embeddings = true;
  m.position = PositionKind::kLearned;
  m.norm = NormKind::kLayerNorm;
  m.bias = BiasKind::kAll;
  m.dropout = true;
  m.attention = AttentionImpl::kNaive;
  return m;
}

PlanSpec Plan(int64_t tp, bool sp, int64_t mbs) {
  PlanSpec p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.micro_batch = mbs;
  p.seq_len = 2048;
  p.global_batch = mbs;
  p.gpus = tp;
  return p;
}

struct PaperConfig {
  const char* name;
  int64_t layers, hidden, heads, tp, mbs;
};
// Table 3 of the paper: 22B (t=8, b=4), 175B, 530B and 1T (t=8, b=1).
const PaperConfig kConfigs[] = {{"22B", 48, 6144, 64, 8, 4},
                                {"175B", 96, 12288, 96, 8, 1},
                                {"530B", 105, 20480, 128, 8, 1},
                                {"1T", 128, 25600, 160, 8, 1}};

TEST(ActivationsTest, TableTwoNoParallelism) {
  // Eq. 1: sbh(34 + 5as/h) bytes per layer.
  for (const auto& c : kConfigs) {
    const ModelSpec m = PaperGpt(c.layers, c.hidden, c.heads);
    const int64_t s = 2048, b = c.mbs, h = c.hidden, a = c.heads;
    const int64_t expect = s * b * h * 34 + 5 * a * s * s * b;
    EXPECT_EQ(LayerActivationBytes(m, Plan(1, false, b), false, Recompute::kNone), expect) << c.name;
  }
}

TEST(ActivationsTest, TableTwoTensorParallel) {
  // Eq. 2: sbh(10 + 24/t + 5as/(ht)).
  for (const auto& c : kConfigs) {
    const ModelSpec m = PaperGpt(c.layers, c.hidden, c.heads);
    const int64_t s = 2048, b = c.mbs, h = c.hidden, a = c.heads, t = c.tp;
    const int64_t expect = s * b * h * 10 + s * b * h * 24 / t + 5 * a * s * s * b / t;
    EXPECT_EQ(LayerActivationBytes(m, Plan(t, false, b), false, Recompute::kNone), expect) << c.name;
  }
}

TEST(ActivationsTest, TableTwoTensorPlusSequenceParallel) {
  // Eq. 4: (sbh/t)(34 + 5as/h).
  for (const auto& c : kConfigs) {
    const ModelSpec m = PaperGpt(c.layers, c.hidden, c.heads);
    const int64_t s = 2048, b = c.mbs, h = c.hidden, a = c.heads, t = c.tp;
    const int64_t expect = (s * b * h * 34 + 5 * a * s * s * b) / t;
    EXPECT_EQ(LayerActivationBytes(m, Plan(t, true, b), false, Recompute::kNone), expect) << c.name;
  }
}

TEST(ActivationsTest, TableTwoSelectiveRecompute) {
  // TP + selective: sbh(10 + 24/t); TP + SP + selective: 34sbh/t (the 5as/h term is gone).
  for (const auto& c : kConfigs) {
    const ModelSpec m = PaperGpt(c.layers, c.hidden, c.heads);
    const int64_t sbh = 2048 * c.mbs * c.hidden, t = c.tp;
    EXPECT_EQ(LayerActivationBytes(m, Plan(t, false, c.mbs), false, Recompute::kSelective), 10 * sbh + 24 * sbh / t)
        << c.name;
    EXPECT_EQ(LayerActivationBytes(m, Plan(t, true, c.mbs), false, Recompute::kSelective), 34 * sbh / t) << c.name;
  }
}

TEST(ActivationsTest, TableTwoFullRecompute) {
  // Full recompute keeps the layer input: 2sbh (Table 2, last row). With sequence parallelism
  // the residual stream is sharded along s, so the checkpoint is 2sbh/t (as Megatron stores it).
  for (const auto& c : kConfigs) {
    const ModelSpec m = PaperGpt(c.layers, c.hidden, c.heads);
    const int64_t sbh = 2048 * c.mbs * c.hidden;
    EXPECT_EQ(LayerActivationBytes(m, Plan(c.tp, false, c.mbs), false, Recompute::kFull), 2 * sbh) << c.name;
    EXPECT_EQ(LayerActivationBytes(m, Plan(c.tp, true, c.mbs), false, Recompute::kFull), 2 * sbh / c.tp) << c.name;
  }
}

TEST(ActivationsTest, FigureSevenRatiosFor175B) {
  // Figure 7 (175B, % of the TP baseline): SP 62.04, selective 56.53, SP+selective 18.49, full
  // 8.71 (Calculon's transcription). Per layer with 5as/h = 80 and t = 8: baseline 23sbh,
  // SP 14.25sbh, selective 13sbh, both 4.25sbh, full 2sbh: 61.96%, 56.52%, 18.48%, 8.70%.
  const ModelSpec m = PaperGpt(96, 12288, 96);
  const double base = static_cast<double>(LayerActivationBytes(m, Plan(8, false, 1), false, Recompute::kNone));
  auto pct = [&](bool sp, Recompute r) {
    return 100.0 * static_cast<double>(LayerActivationBytes(m, Plan(8, sp, 1), false, r)) / base;
  };
  EXPECT_NEAR(pct(true, Recompute::kNone), 62.04, 0.1);
  EXPECT_NEAR(pct(false, Recompute::kSelective), 56.53, 0.1);
  EXPECT_NEAR(pct(true, Recompute::kSelective), 18.49, 0.1);
  EXPECT_NEAR(pct(false, Recompute::kFull), 8.71, 0.1);
}

TEST(ActivationsTest, FirstStageHoldsPMicrobatchesUnderOneFOneB) {
  // Eq. 5: the first stage of a 1F1B pipeline keeps p microbatches of L/p layers, i.e.
  // (sbhL/t)(34 + 5as/h) for TP+SP, independent of p. 175B, t=8, p=8, 64 microbatches.
  const ModelSpec m = PaperGpt(96, 12288, 96);
  PlanSpec p = Plan(8, true, 1);
  p.pp = 8;
  p.gpus = 64;
  p.global_batch = 64;
  GpuSpec g;
  g.hbm_bytes = 80LL << 30;
  const MemoryReport r = EstimateMemory(m, p, g);
  const int64_t s = 2048, h = 12288, a = 96, L = 96, t = 8;
  const int64_t eq5 = (s * h * L * 34 + 5 * a * s * s * L) / t;
  const StageMemory& first = r.stages[0];
  EXPECT_DOUBLE_EQ(first.inflight_microbatches, 8.0);
  // Plus the embedding's dropout mask for each microbatch in flight: sbhp/t (§4.3).
  EXPECT_EQ(first.activations_bytes, eq5 + s * h * 8 / t);
  // Stage i holds p - i microbatches.
  for (int64_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(r.stages[i].inflight_microbatches, 8.0 - i);
}

TEST(ActivationsTest, InterleavingMultipliesFirstStageByOnePlusPMinusOneOverPM) {
  // §4.2.3: with v model chunks per rank the first stage holds (1 + (p-1)/(pv)) x Eq. 5.
  const ModelSpec m = PaperGpt(96, 12288, 96);
  PlanSpec p = Plan(8, true, 1);
  p.pp = 8;
  p.vpp = 3;
  p.schedule = Schedule::kInterleaved;
  p.gpus = 64;
  p.global_batch = 64;
  GpuSpec g;
  g.hbm_bytes = 80LL << 30;
  const MemoryReport r = EstimateMemory(m, p, g);
  EXPECT_NEAR(r.stages[0].inflight_microbatches, 8.0 * (1.0 + 7.0 / 24.0), 1e-9);
  const int64_t per_layer = LayerActivationBytes(m, p, false, Recompute::kNone);
  EXPECT_NEAR(static_cast<double>(r.stages[0].layer_activations_bytes) * r.stages[0].inflight_microbatches,
              static_cast<double>(per_layer * 96) * (1.0 + 7.0 / 24.0), 1.0);
}

TEST(ActivationsTest, SingleStageAddsEmbeddingAndOutputTerms) {
  // §4.3 with p = 1: the embedding dropout mask sbh/t plus 4sbh/t (final norm and output-head
  // inputs) plus the logits at the loss, 22B config, t=8, b=4, SP: §4.3's 4sbv/t (the fp32 copy)
  // and the bf16 logits beside it, 6sbv/t (core/specs.h CrossEntropy::kFused).
  const ModelSpec m = PaperGpt(48, 6144, 64);
  PlanSpec p = Plan(8, true, 4);
  GpuSpec g;
  g.hbm_bytes = 80LL << 30;
  const MemoryReport r = EstimateMemory(m, p, g);
  const int64_t s = 2048, b = 4, h = 6144, v = 51200, t = 8;
  EXPECT_EQ(r.stages[0].embedding_activations_bytes, s * b * h / t);
  EXPECT_EQ(r.stages[0].loss_activations_bytes, 4 * s * b * h / t + 6 * s * b * v / t);
}

TEST(ActivationsTest, FlashAttentionRemovesTheQuadraticTerm) {
  // With flash attention the s^2 softmax tensors are never stored; only an fp32 log-sum-exp
  // per query row and head (4 * a * s * b bytes) remains.
  ModelSpec m = PaperGpt(96, 12288, 96);
  const PlanSpec p = Plan(8, true, 1);
  const int64_t naive = LayerActivationBytes(m, p, false, Recompute::kNone);
  m.attention = AttentionImpl::kFlash;
  const int64_t flash = LayerActivationBytes(m, p, false, Recompute::kNone);
  const int64_t s = 2048, a = 96, t = 8;
  // naive - flash = (5as^2b)/t - 4(a/t)sb
  EXPECT_EQ(naive - flash, 5 * a * s * s / t - 4 * (a / t) * s);
}

TEST(ActivationsTest, Fp8KeepsTheLinearLayersInputsInOneByte) {
  // Transformer Engine saves the FP8 copy of each linear layer's input (QKV input 2sbh, output
  // projection input 2sbh, fc1 input 2sbh, fc2 input 8sbh of Korthikanti's 34sbh) at one byte per
  // element: 34 - (1 + 1 + 1 + 4) = 27sbh, the s^2 terms unchanged. Block scaling adds a scale
  // byte per 32 elements of those: 7sbh/32.
  const ModelSpec m = PaperGpt(96, 12288, 96);
  const int64_t s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
  PlanSpec p = Plan(1, false, b);
  p.precision = Dtype::kFp8;
  p.fp8_scaling = Fp8Scaling::kDelayed;
  EXPECT_EQ(LayerActivationBytes(m, p, false, Recompute::kNone), 27 * sbh + 5 * a * s * s * b);
  p.fp8_scaling = Fp8Scaling::kBlock;
  EXPECT_EQ(LayerActivationBytes(m, p, false, Recompute::kNone), 27 * sbh + 7 * sbh / 32 + 5 * a * s * s * b);
  // Full recomputation keeps the layer input, which is no linear layer's: 2sbh as in bf16.
  EXPECT_EQ(LayerActivationBytes(m, p, false, Recompute::kFull), 2 * sbh);
}

TEST(ActivationsTest, Nvfp4KeepsTheLinearLayersInputsInNineSixteenthsOfAByte) {
  // Transformer Engine's NVFP4 keeps the same column-wise copy of each linear layer's input as FP8
  // (module/linear.py at v2.12: the row-wise data dropped), 4 bits and one E4M3 scale per 16
  // elements: 9/16 B. Of Korthikanti's 34sbh the linear inputs 2 + 2 + 2 + 8 = 14sbh become
  // 7sbh x 9/16 (each rounded up to whole bytes, none here), the rest and the s^2 terms unchanged.
  const ModelSpec m = PaperGpt(96, 12288, 96);
  const int64_t s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
  PlanSpec p = Plan(1, false, b);
  p.precision = Dtype::kNvfp4;
  EXPECT_EQ(LayerActivationBytes(m, p, false, Recompute::kNone),
            20 * sbh + 3 * (sbh * 9 / 16) + 4 * sbh * 9 / 16 + 5 * a * s * s * b);
  EXPECT_EQ(LayerActivationBytes(m, p, false, Recompute::kFull), 2 * sbh);
}

TEST(ActivationsTest, GqaAndSwigluFollowTheirTensors) {
  // Llama-3-70B, one GPU, s=8192, b=1, flash: per layer (bytes, bf16)
  //   norms 2x2sbh, qkv input 2sbh, q 2sbh, k and v 2sb*1024 each, lse 4*64*s, out-proj input 2sbh,
  //   fc-in 2sbh, gate+up 2*2sb*28672, down input 2sb*28672.
  auto m = LoadModel("llama3-70b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 8192;
  const int64_t s = 8192, h = 8192;
  const int64_t expect = 2 * 2 * s * h + 2 * s * h + 2 * s * h + 2 * 2 * s * 1024 + 4 * 64 * s + 2 * s * h + 2 * s * h +
                         2 * 2 * s * 28672 + 2 * s * 28672;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kNone), expect);
}

TEST(ActivationsTest, ContextParallelDividesTheSequence) {
  auto m = LoadModel("llama3-70b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 8192;
  p.tp = 8;
  p.sequence_parallel = true;
  const int64_t one = LayerActivationBytes(*m, p, false, Recompute::kNone);
  p.cp = 4;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kNone) * 4, one);
}

TEST(ActivationsTest, MoeExpertTokensScaleWithTopK) {
  // Mixtral, t=1: a token's expert work is k x one expert's (balanced routing), so the expert
  // tensors are k = 2 times those of a dense SwiGLU MLP of the expert's width.
  auto m = LoadModel("mixtral-8x7b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 4096;
  p.ep = 8;
  p.dp = 8;
  const int64_t s = 4096, h = 4096, f = 14336, k = 2;
  auto expert_terms = [&] {
    int64_t sum = 0;
    for (const auto& term : LayerActivationTerms(*m, p, true, Recompute::kNone))
      if (term.name.rfind("expert_", 0) == 0) sum += term.bytes;
    return sum;
  };
  // The router's probabilities inside the fused weighted SwiGLU (the default, Megatron-Core 0.13
  // on): input 2*sk*h, gate and up 2*2*sk*f, fc2 input 2*sk*f.
  EXPECT_EQ(expert_terms(), 2 * s * k * h + 4 * s * k * f + 2 * s * k * f);
  // Applied at the unpermutation (Megatron-Core before 0.13, DeepSpeed): the experts' output, 2*sk*h.
  p.moe_probs = MoeProbs::kUnpermute;
  EXPECT_EQ(expert_terms(), 2 * s * k * h + 4 * s * k * f + 2 * s * k * f + 2 * s * k * h);
  // To the activation's output in a multiply of its own: that output, 2*sk*f.
  p.moe_probs = MoeProbs::kActivation;
  EXPECT_EQ(expert_terms(), 2 * s * k * h + 4 * s * k * f + 2 * s * k * f + 2 * s * k * f);
}

TEST(ActivationsTest, RecomputeModulesDropWhatTheyRecompute) {
  // Megatron-Core's recompute_modules (core/specs.h RecomputeModule), per layer, bf16, flash:
  // each module drops exactly the tensors it recomputes in the backward.
  // Llama 3 70B dense layer, s = 8192: mlp keeps only the block's input (its norm input), so the
  // layer loses fc-in 2sbh, gate+up 2*2sb*28672 and down input 2sb*28672; core_attn (the
  // default) drops flash attention's log-sum-exp 4*64*s.
  auto l = LoadModel("llama3-70b");
  ASSERT_TRUE(l.ok());
  PlanSpec p;
  p.seq_len = 8192;
  const int64_t s = 8192, h = 8192;
  const int64_t none = LayerActivationBytes(*l, p, false, Recompute::kNone);
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kMlp);
  EXPECT_EQ(LayerActivationBytes(*l, p, false, Recompute::kSelective),
            none - (2 * s * h + 2 * 2 * s * 28672 + 2 * s * 28672));
  p.recompute_modules |= ModuleBit(RecomputeModule::kCoreAttn);
  EXPECT_EQ(LayerActivationBytes(*l, p, false, Recompute::kSelective),
            none - (2 * s * h + 2 * 2 * s * 28672 + 2 * s * 28672) - 4 * 64 * s);
  // layernorm on a dense, non-MLA layer: both norms are fused into their linears (Transformer
  // Engine LayerNormLinear), nothing to drop.
  p.recompute_modules = ModuleBit(RecomputeModule::kLayernorm);
  EXPECT_EQ(LayerActivationBytes(*l, p, false, Recompute::kSelective), none);

  // DeepSeek-V3 MoE layer on one GPU's view (ep 8), s = 4096, b = 1: moe_act drops the experts'
  // fc2 input (tokens s*k = 4096*8, width 2048: 2*s*k*2048 B); layernorm the router's input (the
  // pre-MLP norm's output, 2sbh) and MLA's down-projection input (the input norm's output, 2sbh);
  // mla_up_proj drops q, k (128 heads x 192) and v (128 x 128).
  auto d = LoadModel("deepseek-v3");
  ASSERT_TRUE(d.ok());
  PlanSpec q;
  q.seq_len = 4096;
  q.ep = 8;
  q.dp = 8;
  const int64_t ds = 4096, dh = 7168, k = 8;
  const auto base = TermsByName(*d, q, true);
  q.recompute = Recompute::kSelective;
  q.recompute_modules = ModuleBit(RecomputeModule::kMoeAct);
  auto t = TermsByName(*d, q, true);
  EXPECT_EQ(t.count("expert_fc2_input"), 0u);
  EXPECT_EQ(base.at("expert_fc2_input"), 2 * ds * k * 2048);
  EXPECT_EQ(t.count("softmax_lse"), 1u);  // core_attn not listed: kept
  q.recompute_modules = ModuleBit(RecomputeModule::kLayernorm);
  t = TermsByName(*d, q, true);
  EXPECT_EQ(t.count("router_input") + t.count("qkv_input"), 0u);
  EXPECT_EQ(base.at("router_input"), 2 * ds * dh);
  EXPECT_EQ(base.at("qkv_input"), 2 * ds * dh);
  q.recompute_modules = ModuleBit(RecomputeModule::kMlaUpProj);
  t = TermsByName(*d, q, true);
  EXPECT_EQ(t.count("q") + t.count("k") + t.count("v"), 0u);
  EXPECT_EQ(base.at("q") + base.at("k") + base.at("v"), 2 * ds * 128 * (192 + 192 + 128));
  EXPECT_EQ(t.count("kv_latent"), 1u);  // the up-projections' inputs stay
  // shared_experts drops the shared expert's two activation tensors (width 2048).
  q.recompute_modules = ModuleBit(RecomputeModule::kSharedExperts);
  t = TermsByName(*d, q, true);
  EXPECT_EQ(t.count("shared_act_input") + t.count("shared_fc2_input"), 0u);
  EXPECT_EQ(base.at("shared_act_input") + base.at("shared_fc2_input"), 2 * 2 * ds * 2048 + 2 * ds * 2048);
  // moe checkpoints the whole MoE layer: of its block only its input, the pre-MLP norm's output
  // (2sbh), stays; with layernorm as well that one is freed too. The attention block keeps its own.
  q.recompute_modules = ModuleBit(RecomputeModule::kMoe);
  t = TermsByName(*d, q, true);
  for (const char* gone : {"router_input", "router_probs", "expert_input", "expert_act_input", "expert_fc2_input",
                           "shared_act_input", "shared_fc2_input"})
    EXPECT_EQ(t.count(gone), 0u) << gone;
  EXPECT_EQ(t.at("moe_input"), 2 * ds * dh);
  EXPECT_EQ(t.at("q"), base.at("q"));
  q.recompute_modules |= ModuleBit(RecomputeModule::kLayernorm);
  t = TermsByName(*d, q, true);
  EXPECT_EQ(t.count("moe_input"), 0u);
  // Full recomputation ignores the list: the layer input alone.
  q.recompute = Recompute::kFull;
  EXPECT_EQ(LayerActivationBytes(*d, q, true, Recompute::kFull), 2 * ds * dh);
}

TEST(ActivationsTest, TorchtitanPerOpPolicyKeepsEveryOtherMatmul) {
  // Llama 3 8B, one GPU, s = 8192, b = 1, bf16 (torchtitan selective_ac_option "op"): the layer
  // input 2sbh, wq's output 2sbh, wv's 2sb*1024, SDPA's output 2sbh and LSE 4*32*s, w1's output
  // 2sb*14336 and w2's 2sbh = 2s(4 h + 1024 + 14336) + 128 s.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 8192;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kTorchtitanOp);
  const int64_t s = 8192, h = 4096;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kSelective), 2 * s * (4 * h + 1024 + 14336) + 4 * 32 * s);
  // FP8 the same: torchao's Float8Linear calls torch.mm on its float8 subclass, which the policy
  // sees (and saves) as aten.mm; the matmuls' outputs are bf16. (torchtitan's 8B FSDP runs with
  // torch.compile: 77.0 GiB measured, 76.8 with float8.)
  p.precision = Dtype::kFp8;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kSelective), 2 * s * (4 * h + 1024 + 14336) + 4 * 32 * s);
  // TP 2 with SP: the two reduce-scatter outputs (T x h / t) are saved too; w2's output is the
  // row-parallel partial sum over the whole sequence.
  p.precision = Dtype::kBf16;
  p.tp = 2;
  p.sequence_parallel = true;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kSelective),
            2 * s * h / 2 + 2 * s * h / 2 + 2 * s * 512 + 2 * s * h / 2 + 4 * 16 * s + 2 * s * 14336 / 2 + 2 * s * h +
                2 * 2 * s * h / 2);
}

TEST(ActivationsTest, MaxTextSaveQkvProjKeepsTheLayerInputAndQkv) {
  // Llama 3 70B as MaxText runs it (remat_policy save_qkv_proj, FSDP, micro batch 2, s = 8192):
  // the layer input 2sbh and Q, K, V after RoPE, 2sb(64 + 2 x 8) x 128, bf16 under FP8 too:
  // 2sb(8192 + 10240) = 604 MB a layer at b = 2, 48 GB over 80 layers.
  auto m = LoadModel("llama3-70b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 8192;
  p.micro_batch = 2;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = ModuleBit(RecomputeModule::kSaveQkvProj);
  const int64_t s = 8192, b = 2, h = 8192;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kSelective), 2 * s * b * (h + (64 + 2 * 8) * 128));
  p.precision = Dtype::kFp8;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kSelective), 2 * s * b * (h + (64 + 2 * 8) * 128));
  // TP 8 with SP: the input sharded along s, one head group of Q (8 heads) and one of K and V each.
  p.precision = Dtype::kBf16;
  p.tp = 8;
  p.sequence_parallel = true;
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kSelective), 2 * s * b * (h / 8 + (8 + 2 * 1) * 128));
}

TEST(ActivationsTest, UpcastCrossEntropyHoldsTwelveBytesPerLogit) {
  // The last stage's loss terms: final-norm and head inputs 2 x 2sbh, and the logits at the loss
  // per CrossEntropy: fused 6 B each (bf16 logits and the kernel's fp32 buffer), upcast
  // (torchtitan's .float() into PyTorch's cross_entropy) 12 B. Llama 3 8B, one GPU, s = 8192: s x 128256 logits.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.gpus = 1;
  p.seq_len = 8192;
  p.global_batch = 1;
  const GpuSpec g = *LoadGpu("h100-sxm");
  const int64_t s = 8192, h = 4096, v = 128256;
  const MemoryReport fused = EstimateMemory(*m, p, g, {});
  EXPECT_EQ(fused.stages[0].loss_activations_bytes, 2 * 2 * s * h + 6 * s * v);
  p.cross_entropy = CrossEntropy::kUpcast;
  const MemoryReport upcast = EstimateMemory(*m, p, g, {});
  EXPECT_EQ(upcast.stages[0].loss_activations_bytes, 2 * 2 * s * h + 12 * s * v);
  // With TP 8 (SP on) the logits are vocab-sharded and the loss runs under loss_parallel, whose
  // decomposed backward holds the saved fp32 log-softmax, the zeros gradient, exp of it and their
  // sum: 16 B per local logit (torch/distributed/tensor/parallel/loss.py). 128256 / 8 = 16032.
  p.gpus = 8;
  p.tp = 8;
  p.sequence_parallel = true;
  const MemoryReport parallel = EstimateMemory(*m, p, g, {});
  EXPECT_EQ(parallel.stages[0].loss_activations_bytes, 2 * 2 * s * h / 8 + 16 * s * (v / 8));
}

TEST(ActivationsTest, TorchtitanEagerLayerKeepsWhatItsModelCodeSaves) {
  // A Llama 3 8B layer (h 4096, 32 heads of 128, 8 KV heads, SwiGLU 14336) over 8,192 tokens, no
  // checkpointing, T*h = 33,554,432. Fused (Megatron-Core, Transformer Engine): norm inputs 2 + 2,
  // QKV input 2, q 2, k and v 0.5 each, wo input 2, fc1 input 2, gate and up 2 x 7, fc2 input 7 =
  // 34 T*h bytes (+ the fp32 log-sum-exp). torchtitan's 2024 code op by op (elementwise eager):
  // each RMSNorm keeps its fp32 upcast 4 and the normalized 2 instead of the input 2 (+4 twice),
  // repeat_kv's K and V copies at 32 heads 2 each (+3, plan.repeat_kv, which that code also
  // sets), SDPA's output beside wo's copy of it (+2), silu's output 7 (+7): 54 T*h.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.gpus = 1;
  p.seq_len = 8192;
  p.micro_batch = 1;
  p.global_batch = 1;
  const double th = 8192.0 * 4096.0, lse = 4.0 * 32 * 8192;
  EXPECT_DOUBLE_EQ(static_cast<double>(LayerActivationBytes(*m, p, false, Recompute::kNone)), 34 * th + lse);
  p.elementwise = Elementwise::kEager;
  p.repeat_kv = true;
  const double eager = static_cast<double>(LayerActivationBytes(*m, p, false, Recompute::kNone));
  EXPECT_DOUBLE_EQ(eager, 54 * th + lse);
  // Measured on an H200 (tests/data/gpu/h200-2026-11-28: the same code with Llama 3 8B's widths,
  // FSDP2 on one rank, 2 and 8 layers, peak allocated of the third step 36.38 and 62.56 GB): 4.363
  // GB per layer, less the 12 B per parameter (fp32 parameter, Adam's two moments; the gradients
  // are created in the backward, after the peak) of its 218.1M parameters, 1.746 GB: within 4%.
  const double measured = (62563744768.0 - 36383979520.0) / 6 - 12.0 * (2795573248.0 - 1486901248.0) / 6;
  EXPECT_NEAR(measured / 1e9, 1.746, 0.001);
  EXPECT_NEAR(eager / measured, 1.04, 0.01);
}

TEST(ActivationsTest, TorchtitanTritonRmsNormKeepsOnlyItsInput) {
  // torchtitan's 13B config of April 2024 (norm_type fused_rmsnorm, 395a526): the Triton RMSNorm
  // saves its bf16 input (and a per-row fp32 rstd, left out as for every fused norm) where the
  // op-by-op one keeps the fp32 upcast and the normalized tensor. Llama 2 13B (h 5120, 40 heads,
  // MHA, SwiGLU 13824) over 2 x 4096 tokens: eager 26 T*h + 8 T*f (norms 6 + 6, QKV input 2, q k
  // v 6, SDPA output and wo's copy 2 + 2, fc1 input 2; gate, up and silu 6 T*f, fc2 input 2 T*f);
  // with the Triton norm each norm keeps 2 instead of 6: 18 T*h + 8 T*f.
  auto loaded = LoadModel("llama2-13b");
  ASSERT_TRUE(loaded.ok());
  const ModelSpec& m = *loaded;
  ASSERT_EQ(m.hidden, 5120);
  ASSERT_EQ(m.kv_heads, 40);
  ASSERT_EQ(m.ffn_hidden, 13824);
  PlanSpec p;
  p.gpus = 1;
  p.seq_len = 4096;
  p.micro_batch = 2;
  p.global_batch = 2;
  const double T = 8192, h = 5120, f = 13824, lse = 4.0 * 40 * 8192;
  p.elementwise = Elementwise::kEager;
  EXPECT_DOUBLE_EQ(static_cast<double>(LayerActivationBytes(m, p, false, Recompute::kNone)),
                   26 * T * h + 8 * T * f + lse);
  p.elementwise = Elementwise::kEagerFusedNorm;
  const double fused_norm = static_cast<double>(LayerActivationBytes(m, p, false, Recompute::kNone));
  EXPECT_DOUBLE_EQ(fused_norm, 18 * T * h + 8 * T * f + lse);
  // 1,660,944,384 B per layer (1,996,488,704 op by op): 40 layers hold 13.4 GB less, what decides
  // whether torchtitan's no-checkpointing row of that table fits in 80 GiB (docs/memory.md).
  EXPECT_DOUBLE_EQ(fused_norm - lse, 1660944384.0);
}

TEST(ActivationsTest, RepeatKvSavesTheCopiesTheKernelSaw) {
  // torchtitan's repeat_kv runs eager or compiled (plan.repeat_kv): SDPA saves the K and V it was
  // given, the copies at 32 heads instead of Llama 3 8B's 8: each token keeps 2 x 2 B x (32 - 8) x
  // 128 = 12,288 B more per layer, with fused elementwise kernels (torch.compile) or op by op alike.
  // The eager layer alone does not imply them: memory follows plan.repeat_kv, as the step time does.
  auto loaded = LoadModel("llama3-8b");
  ASSERT_TRUE(loaded.ok());
  const ModelSpec& m = *loaded;
  PlanSpec p;
  p.gpus = 1;
  p.seq_len = 8192;
  p.micro_batch = 1;
  p.global_batch = 1;
  const int64_t grouped = LayerActivationBytes(m, p, false, Recompute::kNone);
  p.repeat_kv = true;
  EXPECT_EQ(LayerActivationBytes(m, p, false, Recompute::kNone) - grouped, int64_t{12288} * 8192);
  p.elementwise = Elementwise::kEager;
  const int64_t eager_repeat = LayerActivationBytes(m, p, false, Recompute::kNone);
  p.repeat_kv = false;
  EXPECT_EQ(eager_repeat - LayerActivationBytes(m, p, false, Recompute::kNone), int64_t{12288} * 8192);
}

TEST(ActivationsTest, DTensorTpKeepsItsLinearsInputsGathered) {
  // PyTorch's DTensor TP (plan.dtensor_tp, torchtitan) runs F.linear on the all-gathered input,
  // which autograd saves whole for the weight gradient; Megatron-Core keeps the sequence-sharded
  // input and gathers it again in the backward. Llama 3 8B at TP 8 with SP, bf16, one 8,192-token
  // sequence: the q/k/v and w1/w3 inputs go from s*h*2/8 = 8,388,608 B to s*h*2 = 67,108,864 B
  // each; the norms' inputs stay sharded. The head's input likewise on the last stage.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.tp = 8;
  p.gpus = 8;
  p.sequence_parallel = true;
  p.seq_len = 8192;
  p.tp_overlap = TpOverlap::kNone;
  auto terms = [&] { return TermsByName(*m, p, false); };  // p.recompute: none
  const int64_t sh2 = int64_t{8192} * 4096 * 2;
  const auto megatron = terms();
  EXPECT_EQ(megatron.at("qkv_input"), sh2 / 8);
  EXPECT_EQ(megatron.at("fc1_input"), sh2 / 8);
  p.dtensor_tp = true;
  const auto dtensor = terms();
  EXPECT_EQ(dtensor.at("qkv_input"), sh2);
  EXPECT_EQ(dtensor.at("fc1_input"), sh2);
  EXPECT_EQ(dtensor.at("attn_norm_input"), megatron.at("attn_norm_input"));
  // FP8 (torchao's float8 styles gather the float8 input, and the linear saves it): 1 B each.
  p.precision = Dtype::kFp8;
  p.fp8_scaling = Fp8Scaling::kCurrent;
  EXPECT_EQ(terms().at("qkv_input"), sh2 / 2);
  // The head's input on the last stage: 7/8 of s*h*2 more than Megatron's sharded one.
  p.precision = Dtype::kBf16;
  const GpuSpec g = *LoadGpu("h100-sxm");
  const int64_t with = EstimateMemory(*m, p, g).stages[0].loss_activations_bytes;
  p.dtensor_tp = false;
  EXPECT_EQ(with - EstimateMemory(*m, p, g).stages[0].loss_activations_bytes, sh2 - sh2 / 8);
}

}  // namespace
}  // namespace meshplan::core
