// The defaults a user means: model dimensions that follow an override, and the pipeline split
// when the layers do not divide.
#include "core/defaults.h"

#include <gtest/gtest.h>

#include "core/params.h"
#include "core/presets.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

ModelSpec Preset(const std::string& name) {
  auto m = LoadModel(name);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : ModelSpec{};
}

// ApplyModelOverrides on a preset, with what it reported.
struct Applied {
  ModelSpec model;
  Diagnostics diag;
  std::vector<std::string> notes;
};
Applied Apply(const ModelSpec& base, const ModelOverrides& o) {
  Applied a;
  a.model = ApplyModelOverrides(base, o, &a.diag, &a.notes);
  return a;
}

// Every architecture field of `a` equals `b`'s (names and sources aside).
void ExpectSameArchitecture(ModelSpec a, ModelSpec b) {
  a.name = b.name;
  a.source = b.source;
  EXPECT_EQ(a, b);
  EXPECT_EQ(CountParams(a).total, CountParams(b).total);
}

TEST(ModelOverridesTest, Gpt3ShrunkToMegatronsOnePointSevenB) {
  // Narayanan et al. 2021 Table 1's 1.7B GPT is GPT-3's architecture at 24 layers, hidden 2304
  // and 24 heads, vocabulary 51,200: ffn 4 x 2304 = 9216, head_dim 2304/24 = 96, MHA kv heads 24.
  ModelOverrides o;
  o.layers = 24;
  o.hidden = 2304;
  o.heads = 24;
  o.vocab = 51200;
  auto [m, d, notes] = Apply(Preset("gpt3-175b"), o);
  EXPECT_FALSE(d.has_errors()) << d.ToStatus().message();
  EXPECT_EQ(m.ffn_hidden, 9216);
  EXPECT_EQ(m.kv_heads, 24);
  EXPECT_EQ(m.head_dim, 96);
  ExpectSameArchitecture(m, Preset("gpt-1.7b"));
  const double params = static_cast<double>(CountParams(m).total);
  EXPECT_GT(params, 1.6e9);
  EXPECT_LT(params, 1.8e9);
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0], "ffn_hidden 9216 (4 x hidden 2304, the preset's ratio 49152/12288; --ffn to change)");
  EXPECT_EQ(notes[1], "kv_heads 24 (= heads: the preset is multi-head attention; --kv-heads to change)");
  EXPECT_EQ(notes[2], "head_dim 96 (hidden/heads = 2304/24; --head-dim to change)");
}

TEST(ModelOverridesTest, Gpt3GrownToFiveThirtyB) {
  // The 530B shape (Narayanan et al. 2021 Table 1: 105 layers, hidden 20480, 128 heads): kv heads
  // follow the 128 heads (MHA), head_dim 160, ffn 81920. Validation accepts it.
  ModelOverrides o;
  o.layers = 105;
  o.hidden = 20480;
  o.heads = 128;
  o.vocab = 51200;
  auto [m, d, notes] = Apply(Preset("gpt3-175b"), o);
  ValidateModel(m, "model", &d);
  EXPECT_FALSE(d.has_errors()) << d.ToStatus().message();
  ExpectSameArchitecture(m, Preset("gpt-529.6b"));
}

TEST(ModelOverridesTest, GivenValuesWin) {
  ModelOverrides o;
  o.hidden = 2304;
  o.heads = 24;
  o.ffn_hidden = 6144;
  o.kv_heads = 8;
  o.head_dim = 128;
  auto [m, d, notes] = Apply(Preset("gpt3-175b"), o);
  EXPECT_EQ(m.ffn_hidden, 6144);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_TRUE(notes.empty());
}

TEST(ModelOverridesTest, GroupedQueryKeepsItsGroupSize) {
  // Llama 3 8B: 32 heads in groups of 4 (8 kv heads). 16 heads -> 4 kv heads. 24 heads: head_dim
  // would follow hidden/heads = 4096/24, not a whole number: an error naming model.head_dim.
  const ModelSpec base = Preset("llama3-8b");
  {
    ModelOverrides o;
    o.heads = 16;
    auto [m, d, notes] = Apply(base, o);
    EXPECT_FALSE(d.has_errors());
    EXPECT_EQ(m.kv_heads, 4);        // 16 / 4
    EXPECT_EQ(m.head_dim, 256);      // 4096 / 16
    EXPECT_EQ(m.ffn_hidden, 14336);  // hidden unchanged
  }
  {
    ModelOverrides o;
    o.heads = 24;
    const Diagnostics d = Apply(base, o).diag;
    ASSERT_TRUE(d.has_errors());
    EXPECT_EQ(d.errors().front().path, "model.head_dim");
  }
  {
    // Doubling hidden and heads: ffn 3.5 x 8192 = 28672 (Llama 3 70B's), kv heads 64/4 = 16.
    ModelOverrides o;
    o.hidden = 8192;
    o.heads = 64;
    auto [m, d, notes] = Apply(base, o);
    EXPECT_FALSE(d.has_errors());
    EXPECT_EQ(m.ffn_hidden, 28672);
    EXPECT_EQ(m.kv_heads, 16);
    EXPECT_EQ(m.head_dim, 128);
  }
}

TEST(ModelOverridesTest, KvCountKeptWhenTheGroupDoesNotDivide) {
  // Qwen3-235B: 64 heads, 4 kv heads (groups of 16). 72 heads: 72 % 16 != 0, but 4 | 72.
  ModelOverrides o;
  o.heads = 72;
  auto [m, d, notes] = Apply(Preset("qwen3-235b-a22b"), o);
  EXPECT_FALSE(d.has_errors());
  EXPECT_EQ(m.kv_heads, 4);
  // Qwen3's head_dim 128 with hidden 4096 and 64 heads is decoupled (4096/64 = 64): it stays.
  EXPECT_EQ(m.head_dim, 128);
}

TEST(ModelOverridesTest, MultiQueryStaysMultiQuery) {
  ModelSpec base = Preset("llama3-8b");
  base.kv_heads = 1;
  ModelOverrides o;
  o.heads = 64;
  o.hidden = 8192;
  EXPECT_EQ(Apply(base, o).model.kv_heads, 1);
}

TEST(ModelOverridesTest, AFractionalRatioRoundsUpToMultipleOf256) {
  // Llama 2 7B: ffn 11008 = 2.6875 x 4096. Hidden 5000: 11008 * 5000 / 4096 = 13437.5 -> 13568.
  ModelOverrides o;
  o.hidden = 5000;
  o.heads = 40;
  auto [m, d, notes] = Apply(Preset("llama2-7b"), o);
  EXPECT_EQ(m.ffn_hidden, 13568);
  EXPECT_EQ(m.head_dim, 125);
  // Hidden 5120 (Llama 2 13B's): 11008 * 5120 / 4096 = 13760 exactly.
  o.hidden = 5120;
  EXPECT_EQ(Apply(Preset("llama2-7b"), o).model.ffn_hidden, 13760);
}

TEST(ModelOverridesTest, MoeExpertWidthsFollowHidden) {
  // Mixtral 8x7B: experts 14336 wide at hidden 4096; at hidden 2048 they are 7168.
  const ModelSpec base = Preset("mixtral-8x7b");
  ASSERT_TRUE(base.moe.has_value());
  ModelOverrides o;
  o.hidden = base.hidden / 2;
  auto [m, d, notes] = Apply(base, o);
  EXPECT_EQ(m.moe->expert_ffn_hidden, base.moe->expert_ffn_hidden / 2);
}

TEST(DefaultStageSplitTest, EvenSplitIsEmpty) {
  auto split = DefaultStageSplit(80, 4);
  ASSERT_TRUE(split.has_value());
  EXPECT_TRUE(split->empty());
}

TEST(DefaultStageSplitTest, Llama3FourOFiveB) {
  // Dubey et al. 2024 §3.3.2: 126 layers on 16 stages, one layer less on the first and last.
  std::vector<int64_t> want(16, 8);
  want.front() = 7;
  want.back() = 7;
  EXPECT_EQ(DefaultStageSplit(126, 16), want);
  EXPECT_EQ(StageSplitText(want), "7, 8 (x14), 7");
}

TEST(DefaultStageSplitTest, MtpModulesTakeTheLastChunksPlaces) {
  // DeepSeek-V3: 61 layers and 1 MTP module on 16 chunks are 62 units, 4 each but two short
  // (the last and the first, 3): the last chunk gives its MTP place back, 2 decoder layers + MTP.
  auto m = LoadModel("deepseek-v3");
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->mtp_layers, 1);
  std::vector<int64_t> want(16, 4);
  want.front() = 3;
  want.back() = 2;
  EXPECT_EQ(DefaultStageSplit(*m, 16), want);
  // 61 + 1 over 2 chunks divide evenly (31 each): 31, then 30 + MTP.
  EXPECT_EQ(DefaultStageSplit(*m, 2), (std::vector<int64_t>{31, 30}));
  // Without MTP, the layer-only split.
  ModelSpec plain = *m;
  plain.mtp_layers = 0;
  EXPECT_EQ(DefaultStageSplit(plain, 16), DefaultStageSplit(61, 16));
}

TEST(DefaultStageSplitTest, EndChunksMayHoldOnlyTheEmbeddingAndTheLoss) {
  // Megatron-Bridge's Llama 3.1 405B recipe counts the embedding and the loss as layers
  // (account_for_embedding/loss_in_pipeline_split): 126 + 2 over pp 16 x vpp 8 = 128 chunks is
  // one each, so the first chunk holds the embedding alone and the last the loss alone, the
  // layout Llama 3 trained with (Dubey et al. 2024 §3.3.2, "E|(t|)*126L").
  std::vector<int64_t> want(128, 1);
  want.front() = 0;
  want.back() = 0;
  EXPECT_EQ(DefaultStageSplit(126, 128), want);
  // One chunk more than layers: the loss's chunk alone is empty.
  std::vector<int64_t> one(128, 1);
  one.back() = 0;
  EXPECT_EQ(DefaultStageSplit(127, 128), one);
  // Three more: a middle chunk would be empty, which no framework splits by default.
  EXPECT_FALSE(DefaultStageSplit(125, 128).has_value());
}

TEST(DefaultStageSplitTest, OneShortGoesToTheLastChunk) {
  EXPECT_EQ(DefaultStageSplit(80, 3), (std::vector<int64_t>{27, 27, 26}));
}

TEST(DefaultStageSplitTest, DeepSeekV3OnSixteenStages) {
  // 61 = 16 x 4 - 3: the last, the first and the second to last chunks hold 3 layers.
  std::vector<int64_t> want(16, 4);
  want[15] = 3;
  want[0] = 3;
  want[14] = 3;
  EXPECT_EQ(DefaultStageSplit(61, 16), want);
  EXPECT_EQ(StageSplitText(want), "3, 4 (x13), 3 (x2)");
}

TEST(DefaultStageSplitTest, Qwen3TwoThirtyFiveBInterleaved) {
  // 94 layers over pp 8 x vpp 4 = 32 chunks: 2, 3 x 30, 2.
  std::vector<int64_t> want(32, 3);
  want.front() = 2;
  want.back() = 2;
  EXPECT_EQ(DefaultStageSplit(94, 32), want);
}

TEST(DefaultStageSplitTest, EveryChunkHoldsKOrKMinusOne) {
  for (int64_t layers = 1; layers <= 130; ++layers) {
    for (int64_t chunks = 1; chunks <= layers; ++chunks) {
      auto split = DefaultStageSplit(layers, chunks);
      ASSERT_TRUE(split.has_value()) << layers << "/" << chunks;
      if (layers % chunks == 0) {
        EXPECT_TRUE(split->empty());
        continue;
      }
      const int64_t k = (layers + chunks - 1) / chunks;
      int64_t sum = 0;
      for (int64_t v : *split) {
        EXPECT_TRUE(v == k || v == k - 1) << layers << "/" << chunks;
        EXPECT_GE(v, 1);
        sum += v;
      }
      EXPECT_EQ(sum, layers);
      EXPECT_EQ(split->back(), k - 1);  // the head's chunk always gives up a layer
    }
  }
  // More than two chunks beyond the layers: no default (a middle chunk would be empty).
  EXPECT_FALSE(DefaultStageSplit(3, 6).has_value());
  EXPECT_FALSE(DefaultStageSplit(125, 128).has_value());
}

TEST(DefaultStageSplitTest, ApplyFillsOnlyWhatIsMissing) {
  const ModelSpec m = Preset("llama3-405b");
  std::vector<std::string> notes;
  PlanSpec p;
  p.pp = 16;
  ApplyDefaultStageSplit(m, &p, &notes);
  ASSERT_EQ(p.stage_layers.size(), 16u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("stage_layers 7, 8 (x14), 7"), std::string::npos) << notes[0];
  // A given split stays; an even one stays empty.
  p.stage_layers = std::vector<int64_t>(16, 0);
  p.stage_layers[0] = 126;
  ApplyDefaultStageSplit(m, &p, &notes);
  EXPECT_EQ(p.stage_layers[0], 126);
  PlanSpec even;
  even.pp = 2;
  ApplyDefaultStageSplit(m, &even, &notes);
  EXPECT_TRUE(even.stage_layers.empty());
  EXPECT_EQ(notes.size(), 1u);
}

}  // namespace
}  // namespace meshplan::core
