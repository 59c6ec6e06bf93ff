// FLOP counts against the closed forms of Narayanan 2021 (Eq. 3) and Korthikanti 2022 (App. A).
#include "core/flops.h"

#include <gtest/gtest.h>

#include "core/presets.h"

namespace meshplan::core {
namespace {

// What recomputation adds: hardware FLOPs less model FLOPs of an iteration, the full s^2 count.
double RecomputedFlops(const ModelSpec& m, const PlanSpec& p) {
  return HardwareFlopsPerIteration(m, p, AttentionFlops::kFull) - ModelFlopsPerIteration(m, p, AttentionFlops::kFull);
}

PlanSpec Batch(int64_t gbs, int64_t seq, Recompute r) {
  PlanSpec p;
  p.global_batch = gbs;
  p.seq_len = seq;
  p.recompute = r;
  return p;
}

TEST(FlopsTest, ModelFlopsEqualKorthikantiAppendixA) {
  // Model FLOPs = 72 B L s h^2 (1 + s/(6h) + V/(12 h L)) for a GPT (f = 4h, full attention).
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  const double B = 64, L = 96, s = 2048, h = 12288, V = 50257;
  const double expect = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  EXPECT_NEAR(ModelFlopsPerIteration(*m, Batch(64, 2048, Recompute::kNone), AttentionFlops::kFull), expect,
              expect * 1e-12);
}

TEST(FlopsTest, FullRecomputeHardwareFlopsEqualNarayananEquationThree) {
  // Eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)): forward, recomputed forward, 2x backward
  // for the layers; the output head is not recomputed (its V term is 3x forward: 6BshV).
  auto m = LoadModel("gpt-18.4b");
  ASSERT_TRUE(m.ok());
  const double B = 1024, l = 40, s = 2048, h = 6144, V = 51200;
  const double expect = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(HardwareFlopsPerIteration(*m, Batch(1024, 2048, Recompute::kFull), AttentionFlops::kFull), expect,
              expect * 1e-12);
}

TEST(FlopsTest, CausalConventionHalvesOnlyTheAttentionScores) {
  auto m = LoadModel("llama3-70b");
  ASSERT_TRUE(m.ok());
  const ForwardFlops full = ForwardFlopsPerToken(*m, 8192, AttentionFlops::kFull);
  const ForwardFlops causal = ForwardFlopsPerToken(*m, 8192, AttentionFlops::kCausal);
  EXPECT_DOUBLE_EQ(causal.attention * 2, full.attention);
  EXPECT_DOUBLE_EQ(causal.matmul, full.matmul);
  // Dense matmul FLOPs are 2 x (non-embedding weights): 2 x 80 x 855,638,016 (no norms).
  EXPECT_DOUBLE_EQ(full.matmul, 2.0 * 80 * (2.0 * 8192 * 8192 + 2.0 * 8192 * 1024 + 3.0 * 8192 * 28672));
  // 4 s (a d) per layer: 4 x 8192 x 8192 x 80.
  EXPECT_DOUBLE_EQ(full.attention, 4.0 * 8192 * 8192 * 80);
}

TEST(FlopsTest, MoeCountsOnlyTheExpertsATokenVisits) {
  // Mixtral: per layer 2 of 8 experts (3 x 4096 x 14336 each) plus the 4096 x 8 router.
  auto m = LoadModel("mixtral-8x7b");
  ASSERT_TRUE(m.ok());
  const ForwardFlops f = ForwardFlopsPerToken(*m, 4096, AttentionFlops::kFull);
  const double attn = 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024;
  EXPECT_DOUBLE_EQ(f.matmul, 2.0 * 32 * (attn + 2 * 3.0 * 4096 * 14336 + 4096.0 * 8));
}

TEST(FlopsTest, SelectiveRecomputeAddsTheAttentionScoresOnce) {
  // Korthikanti §5: selective recompute re-runs only QK^T, softmax and AV: hardware - model =
  // one forward of the attention-score FLOPs.
  auto m = LoadModel("gpt3-175b");
  ASSERT_TRUE(m.ok());
  const PlanSpec p = Batch(64, 2048, Recompute::kSelective);
  const double diff = RecomputedFlops(*m, p);
  EXPECT_NEAR(diff, 64.0 * 2048 * ForwardFlopsPerToken(*m, 2048, AttentionFlops::kFull).attention, 1e6);
}

TEST(FlopsTest, RecomputeModulesAddTheirGemmsToHardwareFlops) {
  // Llama 3 8B, mlp without core_attn: hardware - model = one forward of the 32 dense MLPs,
  // 2 x 3 x 4096 x 14336 per token per layer; no attention scores.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Batch(8, 8192, Recompute::kSelective);
  p.recompute_modules = ModuleBit(RecomputeModule::kMlp);
  const double diff = RecomputedFlops(*m, p);
  EXPECT_NEAR(diff, 8.0 * 8192 * 32 * 2 * 3.0 * 4096 * 14336, 1e6);
}

TEST(FlopsTest, MoeModuleAddsTheWholeMoeLayerToHardwareFlops) {
  // Qwen3-30B-A3B (48 MoE layers, h 2048, 128 experts of width 768, top 8, SwiGLU, no shared
  // expert) under recompute_modules [moe]: hardware - model = one forward of every MoE layer, its
  // router (2048 x 128) and its 8 routed experts (3 x 2048 x 768 each) per token:
  // 2 x (8 x 3 x 2048 x 768 + 2048 x 128) = 76,021,760 FLOPs a token and layer.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Batch(8, 4096, Recompute::kSelective);
  p.recompute_modules = ModuleBit(RecomputeModule::kMoe);
  const double diff = RecomputedFlops(*m, p);
  EXPECT_NEAR(diff, 8.0 * 4096 * 48 * 76021760.0, 1e6);
}

TEST(FlopsTest, SaveQkvProjAddsTheAttentionWoAndTheMlpInput) {
  // Llama 3 8B under MaxText's save_qkv_proj: hardware - model = one forward of the attention
  // scores, of wo (h x h) and of w1 and w3 (2 x h x f) per token per layer; not Q/K/V or w2.
  auto m = LoadModel("llama3-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p = Batch(8, 8192, Recompute::kSelective);
  p.recompute_modules = ModuleBit(RecomputeModule::kSaveQkvProj);
  const double diff = RecomputedFlops(*m, p);
  const double attention = ForwardFlopsPerToken(*m, 8192, AttentionFlops::kFull).attention;
  EXPECT_NEAR(diff, 8.0 * 8192 * (attention + 32 * 2 * (4096.0 * 4096 + 2 * 4096.0 * 14336)), 1e6);
}

TEST(FlopsTest, KeysPerQueryOfAWindow) {
  // Without a window (or one as long as the sequence): s/2 causal, s full.
  EXPECT_EQ(KeysPerQuery(4096, 0, AttentionFlops::kCausal), 2048);
  EXPECT_EQ(KeysPerQuery(4096, 4096, AttentionFlops::kCausal), 2048);
  EXPECT_EQ(KeysPerQuery(4096, 0, AttentionFlops::kFull), 4096);
  // A 128-key window over 4096 tokens: w - w^2/(2s) = 128 - 16384/8192 = 126 causal; 128 full.
  EXPECT_EQ(KeysPerQuery(4096, 128, AttentionFlops::kCausal), 126);
  EXPECT_EQ(KeysPerQuery(4096, 128, AttentionFlops::kFull), 128);
}

TEST(FlopsTest, SlidingWindowLayersCountTheirWindow) {
  // gpt-oss-120b at 4096 tokens: 64 heads x head dim 64 (qk = v = 4096 wide), 18 global layers
  // and 18 windowed ones (128 keys). Attention FLOPs per token = 2 (qk + v) x sum of keys:
  // causal 16384 x (18 x 2048 + 18 x 126) = 641,138,688; full 16384 x (18 x 4096 + 18 x 128)
  // = 1,245,708,288. Without the window: 16384 x 36 x 2048 = 1,207,959,552 (causal).
  auto m = LoadModel("gpt-oss-120b");
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->sliding_window, 128);
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(*m, 4096, AttentionFlops::kCausal).attention, 641138688.0);
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(*m, 4096, AttentionFlops::kFull).attention, 1245708288.0);
  ModelSpec global = *m;
  global.sliding_window = 0;
  global.global_attention_every = 0;
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(global, 4096, AttentionFlops::kCausal).attention, 1207959552.0);
}

TEST(FlopsTest, ChunkedLayersAttendTheirOwnPaddedChunk) {
  // Chunks of c keys over s tokens, padded to n = ceil(s/c) chunks run as separate sequences:
  // n c^2 / (2 s) keys per token (causal). s = 32768, c = 8192: 4 x 8192^2 / 65536 = 4096 (full
  // convention 8192); s = 10000: 2 chunks, 2 x 8192^2 / 20000 = 6710.8864 (the padding's share is
  // counted: the kernel runs it); a chunk as long as the sequence is no chunking: s/2.
  EXPECT_DOUBLE_EQ(ChunkedKeysPerQuery(32768, 8192, AttentionFlops::kCausal), 4096.0);
  EXPECT_DOUBLE_EQ(ChunkedKeysPerQuery(32768, 8192, AttentionFlops::kFull), 8192.0);
  EXPECT_DOUBLE_EQ(ChunkedKeysPerQuery(10000, 8192, AttentionFlops::kCausal), 2.0 * 8192 * 8192 / 20000);
  EXPECT_DOUBLE_EQ(ChunkedKeysPerQuery(8192, 8192, AttentionFlops::kCausal), 4096.0);
  // Llama 4 Maverick at 32768 tokens: 40 heads x 128 (qk = v = 5120 wide), 12 global layers (every
  // 4th) and 36 chunked ones: 2 x 10240 x (12 x 16384 + 36 x 4096) = 7,046,430,720 per token; a
  // sliding window of the same length would meet 8192 - 8192^2/65536 = 7168 keys.
  auto m = LoadModel("llama4-maverick");
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->chunked_attention);
  EXPECT_EQ(m->WindowedLayerCount(), 36);
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(*m, 32768, AttentionFlops::kCausal).attention, 7046430720.0);
  ModelSpec sliding = *m;
  sliding.chunked_attention = false;
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(sliding, 32768, AttentionFlops::kCausal).attention,
                   2.0 * 10240 * (12 * 16384 + 36 * 7168));
  // At 8192 tokens one chunk is the sequence: every layer attends it whole.
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(*m, 8192, AttentionFlops::kCausal).attention, 2.0 * 10240 * 48 * 4096);
}

}  // namespace
}  // namespace meshplan::core
