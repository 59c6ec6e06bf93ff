#include "core/hf_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <cmath>
#include <string>

#include "core/params.h"
#include "core/presets.h"
#include "core/specs.h"
#include "core/status.h"

#ifndef MESHPLAN_TEST_DATA_DIR
#error "MESHPLAN_TEST_DATA_DIR must name the absolute tests/data directory (tests/CMakeLists.txt)"
#endif

namespace meshplan::core {
namespace {

// The text of tests/data/hf/<file>; empty (and a test failure) when it cannot be read.
std::string ReadFixture(const std::string& file) {
  const std::string path = std::string(MESHPLAN_TEST_DATA_DIR) + "/hf/" + file;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<ModelSpec> Import(const std::string& file) {
  return ModelFromHfConfig(ReadFixture(file), file, "tests/data/hf/" + file);
}

// A minimal llama config.json with every required field; tests add or remove keys.
std::string MinimalLlama(const std::string& extra = "") {
  return R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
             "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100)" +
         extra + "}";
}

// Field by field, so a failure names the field; then the whole struct, so a field added to
// ModelSpec later is compared too.
void ExpectSameModel(const ModelSpec& got, const ModelSpec& want) {
  EXPECT_EQ(got.layers, want.layers);
  EXPECT_EQ(got.hidden, want.hidden);
  EXPECT_EQ(got.heads, want.heads);
  EXPECT_EQ(got.kv_heads, want.kv_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.ffn_hidden, want.ffn_hidden);
  EXPECT_STREQ(Name(got.mlp), Name(want.mlp));
  EXPECT_EQ(got.vocab, want.vocab);
  EXPECT_EQ(got.max_seq, want.max_seq);
  EXPECT_EQ(got.tied_embeddings, want.tied_embeddings);
  EXPECT_STREQ(Name(got.position), Name(want.position));
  EXPECT_STREQ(Name(got.norm), Name(want.norm));
  EXPECT_STREQ(Name(got.bias), Name(want.bias));
  EXPECT_EQ(got.qk_norm, want.qk_norm);
  EXPECT_EQ(got.attention_sinks, want.attention_sinks);
  EXPECT_EQ(got.rope_mscale, want.rope_mscale);
  EXPECT_EQ(got.glu_clamp, want.glu_clamp);
  EXPECT_EQ(got.dropout, want.dropout);
  EXPECT_STREQ(Name(got.attention), Name(want.attention));
  EXPECT_EQ(got.sliding_window, want.sliding_window);
  EXPECT_EQ(got.global_attention_every, want.global_attention_every);
  ASSERT_EQ(got.mla.has_value(), want.mla.has_value());
  if (got.mla) {
    EXPECT_EQ(got.mla->q_lora_rank, want.mla->q_lora_rank);
    EXPECT_EQ(got.mla->kv_lora_rank, want.mla->kv_lora_rank);
    EXPECT_EQ(got.mla->qk_nope_head_dim, want.mla->qk_nope_head_dim);
    EXPECT_EQ(got.mla->qk_rope_head_dim, want.mla->qk_rope_head_dim);
    EXPECT_EQ(got.mla->v_head_dim, want.mla->v_head_dim);
  }
  ASSERT_EQ(got.moe.has_value(), want.moe.has_value());
  if (got.moe) {
    EXPECT_EQ(got.moe->experts, want.moe->experts);
    EXPECT_EQ(got.moe->top_k, want.moe->top_k);
    EXPECT_EQ(got.moe->expert_ffn_hidden, want.moe->expert_ffn_hidden);
    EXPECT_EQ(got.moe->shared_experts, want.moe->shared_experts);
    EXPECT_EQ(got.moe->shared_expert_ffn_hidden, want.moe->shared_expert_ffn_hidden);
    EXPECT_EQ(got.moe->first_dense_layers, want.moe->first_dense_layers);
    EXPECT_EQ(got.moe->layer_freq, want.moe->layer_freq);
    EXPECT_STREQ(Name(got.moe->router), Name(want.moe->router));
    EXPECT_EQ(got.moe->router_bias, want.moe->router_bias);
    EXPECT_EQ(got.moe->capacity_factor, want.moe->capacity_factor);
  }
  EXPECT_EQ(got, want);
}

// Imports tests/data/hf/<file> into *got and loads the built-in preset `preset` into *want, with
// name and source copied from *got (those only say where each copy came from).
void ImportAndLoad(const std::string& file, const std::string& preset, ModelSpec* got, ModelSpec* want) {
  Result<ModelSpec> imported = Import(file);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  Result<ModelSpec> builtin = LoadModel(preset);
  ASSERT_TRUE(builtin.ok()) << builtin.status().ToString();
  *got = imported.value();
  *want = builtin.value();
  want->name = got->name;
  want->source = got->source;
}

void ExpectMatchesPreset(const std::string& file, const std::string& preset) {
  ModelSpec got, want;
  ASSERT_NO_FATAL_FAILURE(ImportAndLoad(file, preset, &got, &want));
  ExpectSameModel(got, want);
}

// ---- the published config.json files against the presets ------------------------------------

TEST(HfConfigTest, Llama3SeventyBMatchesPreset) { ExpectMatchesPreset("llama3-70b.json", "llama3-70b"); }

TEST(HfConfigTest, Mixtral8x7BMatchesPreset) { ExpectMatchesPreset("mixtral-8x7b.json", "mixtral-8x7b"); }

// As ExpectMatchesPreset, but for the one deliberate difference of the long-context configs: their
// max_position_embeddings (`max_seq`) against the preset's pretraining length.
void ExpectMatchesPresetButMaxSeq(const std::string& file, const std::string& preset, int64_t max_seq,
                                  ModelSpec* imported = nullptr) {
  ModelSpec got, want;
  ASSERT_NO_FATAL_FAILURE(ImportAndLoad(file, preset, &got, &want));
  EXPECT_EQ(got.max_seq, max_seq);
  want.max_seq = got.max_seq;
  ExpectSameModel(got, want);
  if (imported != nullptr) *imported = got;
}

TEST(HfConfigTest, DeepSeekV3MatchesPreset) {
  // config.json's max_position_embeddings is the YaRN-extended 163840, while the preset records
  // the 4096 pretraining length (its source says why).
  ExpectMatchesPresetButMaxSeq("deepseek-v3.json", "deepseek-v3", 163840);
}

TEST(HfConfigTest, KimiK2IsReadAsDeepSeekV3AndMatchesPreset) {
  // Kimi K2 ships DeepSeek-V3's architecture under model_type "kimi_k2" (Moonshot's deployment
  // guide: "Kimi-K2 reuses the DeepSeekV3CausalLM architecture"; Megatron-Bridge's KimiK2Bridge maps
  // it as DeepSeek's). tests/data/hf/kimi-k2.json holds Kimi K2's config fields in Hugging Face's
  // DeepSeek-V3 names, valued as Megatron-Bridge v0.3.0's KimiK2Provider (the preset's source):
  // 1.026T parameters, no MTP module. Its max_position_embeddings is the long-context 131072; the
  // preset records the 4096 pretraining length, as deepseek-v3's does.
  ModelSpec got;
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesPresetButMaxSeq("kimi-k2.json", "kimi-k2", 131072, &got));
  EXPECT_EQ(CountParams(got).total, 1'026'408'232'448);
}

TEST(HfConfigTest, NemotronHybridIsReadAsMegatronBridgeMapsIt) {
  // model_type nemotron_h (Nemotron 3 Nano): tests/data/hf/nemotron-3-nano.json holds Megatron-Bridge's
  // NemotronH bridge test fixture (tests/unit_tests/models/nemotronh/test_nemotron_h_bridge.py at
  // 067f987df: the hybrid pattern, Mamba and attention fields) with Nemotron3NanoProvider's MoE
  // sizes in the base CONFIG_MAPPING's names (n_routed_experts, num_experts_per_tok,
  // moe_intermediate_size, moe_shared_expert_intermediate_size). Its max_position_embeddings is
  // 8192; the preset records the provider's 262144.
  ModelSpec got;
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesPresetButMaxSeq("nemotron-3-nano.json", "nemotron-3-nano", 8192, &got));
  EXPECT_EQ(CountParams(got).total, 31'577'940'288LL);
  // MTP without the blocks of its layer is refused, naming the field (the bridge raises too).
  std::string text = ReadFixture("nemotron-3-nano.json");
  text.insert(text.find('{') + 1, "\"num_nextn_predict_layers\": 2,");
  const auto bad = ModelFromHfConfig(text, "x", "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("config.mtp_hybrid_override_pattern"), std::string::npos)
      << bad.status().ToString();
}

// A config with more layers than any model (the fuzzer's, tests/data/malformed/
// hf_config_eleven_billion_layers.json: DeepSeek-V3's type, 11,283,333,171 layers) is refused
// naming the field before the reader builds its per-layer MoE list (it hung filling 11e9 entries);
// every reader takes the same bound, GPT-2's too.
TEST(HfConfigTest, MoreLayersThanAnyModelAreRefusedBeforeAnythingPerLayer) {
  const std::string text =
      ReadTextFile(std::string(MESHPLAN_TEST_DATA_DIR) + "/malformed/hf_config_eleven_billion_layers.json").value();
  const auto bad = ModelFromHfConfig(text, "x", "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("config.num_hidden_layers: must be at most 10000 (the deepest published "
                                        "LLMs have a few hundred), got 11283333171"),
            std::string::npos)
      << bad.status().ToString();
  const auto gpt2 = ModelFromHfConfig(
      R"({"model_type": "gpt2", "n_layer": 20000, "n_embd": 768, "n_head": 12, "vocab_size": 50257})", "x", "test");
  ASSERT_FALSE(gpt2.ok());
  EXPECT_NE(gpt2.status().message().find("config.n_layer: must be at most 10000"), std::string::npos)
      << gpt2.status().ToString();
}

TEST(HfConfigTest, NemotronSuperReadsItsLatentMoeAndSharedMtpModule) {
  // Nemotron 3 Super in NemotronHBridge's names (tests/data/hf/nemotron-3-super.json: the Nano
  // fixture's fields valued as Megatron-LM's arguments for the released checkpoint,
  // examples/post_training/modelopt/conf/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16.sh at
  // d98e8a64, and the bridge's unit test of Super's MoE fields: moe_latent_size 1024; MTP as the
  // checkpoint holds it, one module of "*E" used at every depth). The preset runs the recipes'
  // two depths (mtp_num_layers 2 with the repeated layer): the same parameters, one more depth.
  ModelSpec got, want;
  ASSERT_NO_FATAL_FAILURE(ImportAndLoad("nemotron-3-super.json", "nemotron-3-super", &got, &want));
  EXPECT_EQ(got.moe->latent_size, 1024);
  EXPECT_EQ(got.mtp_layers, 1);
  EXPECT_EQ(got.mtp_pattern, "*E");
  EXPECT_TRUE(got.mtp_shared);
  EXPECT_EQ(CountParams(got).total, CountParams(want).total);
  want.mtp_layers = got.mtp_layers;
  want.max_seq = got.max_seq;
  ExpectSameModel(got, want);
}

TEST(HfConfigTest, Qwen3ThirtyBA3BMatchesPreset) { ExpectMatchesPreset("qwen3-30b-a3b.json", "qwen3-30b-a3b"); }

TEST(HfConfigTest, GptOss120BMatchesPreset) { ExpectMatchesPreset("gpt-oss-120b.json", "gpt-oss-120b"); }

// ---- the same files against the numbers in them (independent of the presets) ----------------

TEST(HfConfigTest, Llama3SeventyBFields) {
  Result<ModelSpec> m = Import("llama3-70b.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->name, "llama3-70b.json");
  EXPECT_EQ(m->source, "tests/data/hf/llama3-70b.json");
  EXPECT_EQ(m->layers, 80);
  EXPECT_EQ(m->hidden, 8192);
  EXPECT_EQ(m->heads, 64);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->head_dim, 128);  // no head_dim key: 8192 / 64
  EXPECT_EQ(m->ffn_hidden, 28672);
  EXPECT_EQ(m->vocab, 128256);
  EXPECT_EQ(m->max_seq, 8192);
  EXPECT_FALSE(m->tied_embeddings);
  EXPECT_EQ(m->mlp, MlpKind::kSwiglu);
  EXPECT_EQ(m->norm, NormKind::kRmsNorm);
  EXPECT_EQ(m->position, PositionKind::kRope);
  EXPECT_EQ(m->bias, BiasKind::kNone);  // attention_bias false, no mlp_bias
  EXPECT_FALSE(m->qk_norm);
  EXPECT_FALSE(m->dropout);
  EXPECT_EQ(m->attention, AttentionImpl::kFlash);
  EXPECT_FALSE(m->moe.has_value());
  EXPECT_FALSE(m->mla.has_value());
}

TEST(HfConfigTest, DeepSeekV3MapsMlaAndSharedExperts) {
  Result<ModelSpec> m = Import("deepseek-v3.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->layers, 61);
  EXPECT_EQ(m->hidden, 7168);
  EXPECT_EQ(m->heads, 128);
  EXPECT_EQ(m->kv_heads, 128);
  EXPECT_EQ(m->head_dim, 192);      // qk_nope_head_dim 128 + qk_rope_head_dim 64
  EXPECT_EQ(m->ffn_hidden, 18432);  // the 3 dense layers
  EXPECT_EQ(m->vocab, 129280);
  EXPECT_EQ(m->max_seq, 163840);
  ASSERT_TRUE(m->mla.has_value());
  EXPECT_EQ(m->mla->q_lora_rank, 1536);
  EXPECT_EQ(m->mla->kv_lora_rank, 512);
  EXPECT_EQ(m->mla->qk_nope_head_dim, 128);
  EXPECT_EQ(m->mla->qk_rope_head_dim, 64);
  EXPECT_EQ(m->mla->v_head_dim, 128);
  ASSERT_TRUE(m->moe.has_value());
  EXPECT_EQ(m->moe->experts, 256);
  EXPECT_EQ(m->moe->top_k, 8);
  EXPECT_EQ(m->moe->expert_ffn_hidden, 2048);
  EXPECT_EQ(m->moe->shared_experts, 1);
  EXPECT_EQ(m->moe->shared_expert_ffn_hidden, 2048);  // one shared expert, moe_intermediate_size
  EXPECT_EQ(m->moe->first_dense_layers, 3);
  EXPECT_EQ(m->moe->layer_freq, 1);
  EXPECT_EQ(m->moe->router, RouterKind::kSigmoid);  // scoring_func
  EXPECT_TRUE(m->moe->router_bias);                 // topk_method noaux_tc
  EXPECT_EQ(m->moe->capacity_factor, 0);
  EXPECT_EQ(m->MoeLayerCount(), 58);  // 61 - 3 dense
}

TEST(HfConfigTest, Qwen3ThirtyBA3BFields) {
  Result<ModelSpec> m = Import("qwen3-30b-a3b.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->layers, 48);
  EXPECT_EQ(m->hidden, 2048);
  EXPECT_EQ(m->heads, 32);
  EXPECT_EQ(m->kv_heads, 4);
  EXPECT_EQ(m->head_dim, 128);  // explicit head_dim, not 2048 / 32 = 64
  EXPECT_EQ(m->ffn_hidden, 6144);
  EXPECT_EQ(m->max_seq, 40960);
  EXPECT_TRUE(m->qk_norm);
  EXPECT_EQ(m->bias, BiasKind::kNone);
  ASSERT_TRUE(m->moe.has_value());
  EXPECT_EQ(m->moe->experts, 128);
  EXPECT_EQ(m->moe->top_k, 8);
  EXPECT_EQ(m->moe->expert_ffn_hidden, 768);
  EXPECT_EQ(m->moe->shared_experts, 0);
  EXPECT_EQ(m->moe->first_dense_layers, 0);
  EXPECT_EQ(m->moe->layer_freq, 1);
  EXPECT_EQ(m->moe->router, RouterKind::kSoftmax);
  EXPECT_FALSE(m->moe->router_bias);
  EXPECT_EQ(m->MoeLayerCount(), 48);
}

TEST(HfConfigTest, Gpt2MapsLearnedPositionsLayerNormAllBiasTied) {
  Result<ModelSpec> m = Import("gpt2.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->layers, 12);
  EXPECT_EQ(m->hidden, 768);
  EXPECT_EQ(m->heads, 12);
  EXPECT_EQ(m->kv_heads, 12);
  EXPECT_EQ(m->head_dim, 64);      // 768 / 12
  EXPECT_EQ(m->ffn_hidden, 3072);  // no n_inner: 4 * 768
  EXPECT_EQ(m->vocab, 50257);
  EXPECT_EQ(m->max_seq, 1024);  // n_positions
  EXPECT_EQ(m->mlp, MlpKind::kGelu);
  EXPECT_EQ(m->position, PositionKind::kLearned);
  EXPECT_EQ(m->norm, NormKind::kLayerNorm);
  EXPECT_EQ(m->bias, BiasKind::kAll);
  EXPECT_TRUE(m->tied_embeddings);  // no tie_word_embeddings key: PretrainedConfig's true
  EXPECT_TRUE(m->dropout);          // resid_pdrop 0.1
  EXPECT_FALSE(m->moe.has_value());
}

TEST(HfConfigTest, Gpt2NoDropoutAndUntiedWhenTheFileSaysSo) {
  Result<ModelSpec> m = ModelFromHfConfig(
      R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_inner": 100,
          "vocab_size": 10, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "tie_word_embeddings": false})",
      "tiny", "inline");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->ffn_hidden, 100);  // n_inner
  EXPECT_EQ(m->max_seq, 1024);    // GPT2Config's n_positions default
  EXPECT_FALSE(m->dropout);
  EXPECT_FALSE(m->tied_embeddings);
}

TEST(HfConfigTest, Qwen2SevenBHasQkvBias) {
  Result<ModelSpec> m = Import("qwen2-7b.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->layers, 28);
  EXPECT_EQ(m->hidden, 3584);
  EXPECT_EQ(m->heads, 28);
  EXPECT_EQ(m->kv_heads, 4);
  EXPECT_EQ(m->head_dim, 128);  // 3584 / 28
  EXPECT_EQ(m->ffn_hidden, 18944);
  EXPECT_EQ(m->vocab, 152064);
  EXPECT_EQ(m->max_seq, 131072);
  EXPECT_EQ(m->bias, BiasKind::kQkv);  // Qwen2 always biases q, k and v
  EXPECT_FALSE(m->qk_norm);
  EXPECT_FALSE(m->tied_embeddings);
}

TEST(HfConfigTest, GptOssTwentyBHasSinksBiasesAndRouterBias) {
  Result<ModelSpec> m = Import("gpt-oss-20b.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->layers, 24);
  EXPECT_EQ(m->hidden, 2880);
  EXPECT_EQ(m->heads, 64);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->head_dim, 64);  // explicit; 2880 / 64 = 45 would be wrong
  EXPECT_EQ(m->ffn_hidden, 2880);
  EXPECT_EQ(m->vocab, 201088);
  EXPECT_EQ(m->max_seq, 131072);
  EXPECT_TRUE(m->attention_sinks);
  EXPECT_EQ(m->bias, BiasKind::kAll);
  ASSERT_TRUE(m->moe.has_value());
  EXPECT_EQ(m->moe->experts, 32);
  EXPECT_EQ(m->moe->top_k, 4);
  EXPECT_EQ(m->moe->expert_ffn_hidden, 2880);
  EXPECT_EQ(m->moe->router, RouterKind::kSoftmax);
  EXPECT_TRUE(m->moe->router_bias);
  EXPECT_EQ(m->MoeLayerCount(), 24);
}

// YaRN's attention scaling from rope_scaling (transformers' _compute_yarn_parameters): gpt-oss
// gives no mscale, so 0.1 ln 32 + 1; DeepSeek-V3's mscale and mscale_all_dim (both 1) cancel; an
// attention_factor is taken as given; a ratio where the two differ (mscale 1, mscale_all_dim 0:
// (0.1 ln 4 + 1) / 1); other scalings carry none. And gpt-oss's swiglu_limit is its GLU's clamp.
TEST(HfConfigTest, YarnRopeScalingGivesTheAttentionFactorAndGptOssItsClamp) {
  Result<ModelSpec> oss = Import("gpt-oss-20b.json");
  ASSERT_TRUE(oss.ok()) << oss.status().ToString();
  EXPECT_NEAR(oss->rope_mscale, 1.3465735902799727, 1e-15);
  EXPECT_EQ(oss->glu_clamp, 7.0);
  Result<ModelSpec> ds = Import("deepseek-v3.json");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->rope_mscale, 1.0);
  EXPECT_EQ(ds->glu_clamp, 0.0);
  auto with = [](const std::string& scaling) {
    return ModelFromHfConfig(MinimalLlama(R"(, "rope_scaling": )" + scaling), "a", "");
  };
  Result<ModelSpec> given = with(R"({"rope_type": "yarn", "factor": 8, "attention_factor": 1.25})");
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->rope_mscale, 1.25);
  Result<ModelSpec> ratio = with(R"({"type": "yarn", "factor": 4, "mscale": 1, "mscale_all_dim": 0})");
  ASSERT_TRUE(ratio.ok()) << ratio.status().ToString();
  EXPECT_NEAR(ratio->rope_mscale, 0.1 * std::log(4.0) + 1, 1e-15);
  Result<ModelSpec> llama3 = with(R"({"rope_type": "llama3", "factor": 8})");
  ASSERT_TRUE(llama3.ok());
  EXPECT_EQ(llama3->rope_mscale, 1.0);
  Result<ModelSpec> bad = with(R"({"rope_type": "yarn", "factor": "big"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("config.rope_scaling: factor expected a number"), std::string::npos)
      << bad.status().ToString();
  Result<ModelSpec> list = with("[1, 2]");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().ToString().find("config.rope_scaling: expected an object"), std::string::npos);
}

// ---- family rules and defaults ----------------------------------------------------------------

TEST(HfConfigTest, LlamaAttentionBiasIsQkvAndMlpBiasIsAll) {
  Result<ModelSpec> qkv = ModelFromHfConfig(MinimalLlama(R"(, "attention_bias": true)"), "a", "");
  ASSERT_TRUE(qkv.ok()) << qkv.status().ToString();
  EXPECT_EQ(qkv->bias, BiasKind::kQkv);
  Result<ModelSpec> all = ModelFromHfConfig(MinimalLlama(R"(, "mlp_bias": true)"), "b", "");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->bias, BiasKind::kAll);
}

TEST(HfConfigTest, LlamaDefaultsFollowTransformers) {
  Result<ModelSpec> m = ModelFromHfConfig(MinimalLlama(), "tiny", "inline");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->kv_heads, 4);    // num_key_value_heads None: = num_attention_heads
  EXPECT_EQ(m->head_dim, 16);   // 64 / 4
  EXPECT_EQ(m->max_seq, 2048);  // LlamaConfig.max_position_embeddings
  EXPECT_FALSE(m->tied_embeddings);
  EXPECT_EQ(m->bias, BiasKind::kNone);
}

TEST(HfConfigTest, NullOptionalFieldsTakeDefaults) {
  Result<ModelSpec> m = ModelFromHfConfig(
      MinimalLlama(R"(, "num_key_value_heads": null, "head_dim": null, "rope_scaling": null)"), "tiny", "inline");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->kv_heads, 4);
  EXPECT_EQ(m->head_dim, 16);
}

TEST(HfConfigTest, MistralExplicitHeadDimWins) {
  // Mistral-Nemo style: head_dim 128 while 5120 / 32 = 160.
  Result<ModelSpec> m = ModelFromHfConfig(
      R"({"model_type": "mistral", "num_hidden_layers": 40, "hidden_size": 5120,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
          "intermediate_size": 14336, "vocab_size": 131072, "max_position_embeddings": 1024000,
          "sliding_window": null})",
      "nemo", "inline");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->head_dim, 128);
  EXPECT_EQ(m->bias, BiasKind::kNone);
  EXPECT_FALSE(m->moe.has_value());
}

TEST(HfConfigTest, Qwen3DenseHasQkNorm) {
  Result<ModelSpec> m = ModelFromHfConfig(
      R"({"model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 4096,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
          "intermediate_size": 12288, "vocab_size": 151936, "max_position_embeddings": 40960,
          "tie_word_embeddings": false, "attention_bias": false})",
      "qwen3-8b", "inline");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->qk_norm);
  EXPECT_EQ(m->bias, BiasKind::kNone);
  EXPECT_FALSE(m->moe.has_value());
}

// Qwen's rule (modeling_qwen3_moe.py): layer l is MoE iff (l + 1) % decoder_sparse_step == 0
// and l is not in mlp_only_layers.
std::string Qwen3Moe(const std::string& extra) {
  return R"({"model_type": "qwen3_moe", "num_hidden_layers": 8, "hidden_size": 64,
             "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 100,
             "num_experts": 16, "num_experts_per_tok": 2, "moe_intermediate_size": 32)" +
         extra + "}";
}

TEST(HfConfigTest, Qwen3MoeSparseStepTwoMakesOddLayersMoe) {
  Result<ModelSpec> m = ModelFromHfConfig(Qwen3Moe(R"(, "decoder_sparse_step": 2)"), "q", "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->moe.has_value());
  // MoE at l = 1, 3, 5, 7: the first layer dense, then every 2nd.
  EXPECT_EQ(m->moe->first_dense_layers, 1);
  EXPECT_EQ(m->moe->layer_freq, 2);
  for (int64_t l = 0; l < 8; ++l) EXPECT_EQ(m->IsMoeLayer(l), (l + 1) % 2 == 0) << "layer " << l;
}

TEST(HfConfigTest, Qwen3MoeLeadingMlpOnlyLayersBecomeFirstDenseLayers) {
  Result<ModelSpec> m = ModelFromHfConfig(Qwen3Moe(R"(, "mlp_only_layers": [0, 1])"), "q", "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->moe.has_value());
  EXPECT_EQ(m->moe->first_dense_layers, 2);
  EXPECT_EQ(m->moe->layer_freq, 1);
  EXPECT_EQ(m->MoeLayerCount(), 6);  // 8 - 2
}

TEST(HfConfigTest, Qwen3MoeScatteredMlpOnlyLayersIsAnError) {
  Result<ModelSpec> m = ModelFromHfConfig(Qwen3Moe(R"(, "mlp_only_layers": [5])"), "q", "");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(m.status().message().find("config.mlp_only_layers"), std::string::npos) << m.status().message();
}

TEST(HfConfigTest, Qwen3MoeMlpOnlyLayerOutOfRangeIsAnError) {
  Result<ModelSpec> m = ModelFromHfConfig(Qwen3Moe(R"(, "mlp_only_layers": [8])"), "q", "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("config.mlp_only_layers"), std::string::npos) << m.status().message();
}

TEST(HfConfigTest, DeepSeekLayerFreqFollowsItsOwnRule) {
  // modeling_deepseek.py: MoE iff l >= first_k_dense_replace and l % moe_layer_freq == 0. With
  // k = 1, freq = 2 over 8 layers that is {2, 4, 6}: first_dense_layers 2, layer_freq 2.
  Result<ModelSpec> m = ModelFromHfConfig(
      R"({"model_type": "deepseek_v3", "num_hidden_layers": 8, "hidden_size": 64,
          "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 100,
          "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
          "n_shared_experts": null, "first_k_dense_replace": 1, "moe_layer_freq": 2,
          "q_lora_rank": null, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
          "qk_rope_head_dim": 4, "v_head_dim": 8, "scoring_func": "softmax",
          "topk_method": "greedy"})",
      "tiny-dsv3", "inline");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->moe.has_value());
  EXPECT_EQ(m->moe->first_dense_layers, 2);
  EXPECT_EQ(m->moe->layer_freq, 2);
  EXPECT_EQ(m->MoeLayerCount(), 3);
  EXPECT_EQ(m->moe->shared_experts, 0);  // null
  EXPECT_EQ(m->moe->shared_expert_ffn_hidden, 0);
  EXPECT_EQ(m->moe->router, RouterKind::kSoftmax);
  EXPECT_FALSE(m->moe->router_bias);  // greedy has no correction bias
  ASSERT_TRUE(m->mla.has_value());
  EXPECT_EQ(m->mla->q_lora_rank, 0);  // null: full-rank q projection
  EXPECT_EQ(m->head_dim, 12);         // 8 + 4
}

TEST(HfConfigTest, IgnoresKeysItDoesNotUse) {
  Result<ModelSpec> m =
      ModelFromHfConfig(MinimalLlama(R"(, "some_future_key": {"nested": [1, 2]}, "x": "y")"), "tiny", "inline");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
}

// ---- errors ------------------------------------------------------------------------------------

TEST(HfConfigTest, UnknownModelTypeNamesTheFieldAndTheChoices) {
  Result<ModelSpec> m = ModelFromHfConfig(R"({"model_type": "xyz", "num_hidden_layers": 2})", "x", "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kInvalidArgument);
  const std::string& msg = m.status().message();
  EXPECT_NE(msg.find("config.model_type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'xyz'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("llama|mistral|mixtral"), std::string::npos) << msg;
}

TEST(HfConfigTest, MissingModelTypeNamesTheField) {
  Result<ModelSpec> m = ModelFromHfConfig(R"({"num_hidden_layers": 2})", "x", "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("config.model_type"), std::string::npos) << m.status().message();
}

TEST(HfConfigTest, MissingNumHiddenLayersNamesTheField) {
  Result<ModelSpec> m = ModelFromHfConfig(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100})",
      "x", "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(m.status().message().find("config.num_hidden_layers"), std::string::npos) << m.status().message();
}

TEST(HfConfigTest, ReportsEveryMissingFieldAtOnce) {
  Result<ModelSpec> m = ModelFromHfConfig(R"({"model_type": "mixtral", "hidden_size": 64})", "x", "inline");
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.status().message();
  for (const char* field : {"config.num_hidden_layers", "config.num_attention_heads", "config.intermediate_size",
                            "config.vocab_size", "config.num_local_experts", "config.num_experts_per_tok"}) {
    EXPECT_NE(msg.find(field), std::string::npos) << field << " not in: " << msg;
  }
  EXPECT_EQ(msg.find("config.hidden_size"), std::string::npos) << msg;
}

TEST(HfConfigTest, WrongTypeNamesTheField) {
  Result<ModelSpec> m = ModelFromHfConfig(MinimalLlama(R"(, "num_key_value_heads": "4")"), "x", "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("config.num_key_value_heads"), std::string::npos) << m.status().message();
}

TEST(HfConfigTest, MalformedJsonIsInvalidArgument) {
  Result<ModelSpec> m = ModelFromHfConfig(R"({"model_type": "llama", "hidden_size": })", "x", "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(m.status().message().find("parse error"), std::string::npos)
      << m.status().message();  // nlohmann's own message is passed on
}

TEST(HfConfigTest, NonObjectJsonIsInvalidArgument) {
  Result<ModelSpec> m = ModelFromHfConfig("[1, 2, 3]", "x", "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kInvalidArgument);
}

// ---- sliding-window attention -------------------------------------------------------------

TEST(HfConfigTest, GptOssAlternatesWindowedAndGlobalLayers) {
  // layer_types: sliding, full, sliding, ... (36 entries) and sliding_window 128: the 1-based
  // layers 2, 4, ..., 36 are global, so a global layer every 2nd layer; 18 of 36 windowed.
  Result<ModelSpec> m = Import("gpt-oss-120b.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->sliding_window, 128);
  EXPECT_EQ(m->global_attention_every, 2);
  EXPECT_TRUE(m->IsWindowedLayer(0));
  EXPECT_FALSE(m->IsWindowedLayer(1));
  EXPECT_EQ(m->WindowedLayerCount(/*moe=*/true), 18);
  EXPECT_EQ(m->WindowedLayerCount(/*moe=*/false), 0);  // every gpt-oss layer is MoE
}

TEST(HfConfigTest, QwenWindowsOnlyWithUseSlidingWindow) {
  // Qwen2-7B's config.json has sliding_window 131072 but use_sliding_window false: no window.
  Result<ModelSpec> m = Import("qwen2-7b.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->sliding_window, 0);
  EXPECT_EQ(m->global_attention_every, 0);
}

TEST(HfConfigTest, MistralWindowsEveryLayer) {
  // Mistral 7B v0.1 (sliding_window 4096, no layer_types): every layer windowed.
  Result<ModelSpec> m = ModelFromHfConfig(
      R"({"model_type": "mistral", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100, "sliding_window": 4096})",
      "mistral", "inline");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->sliding_window, 4096);
  EXPECT_EQ(m->global_attention_every, 0);
  EXPECT_EQ(m->WindowedLayerCount(false), 4);
}

TEST(HfConfigTest, LayerTypesMeshplanCannotExpressAreRefused) {
  // Global layers 2 and 3 (1-based): not "every n-th layer".
  Result<ModelSpec> m = ModelFromHfConfig(
      R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100, "sliding_window": 8,
          "layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention"]})",
      "odd", "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("config.layer_types"), std::string::npos) << m.status().ToString();
  // A type meshplan does not know.
  m = ModelFromHfConfig(
      MinimalLlama(R"(, "sliding_window": 8, "layer_types": ["chunked_attention", "full_attention"])"), "odd",
      "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("chunked_attention"), std::string::npos) << m.status().ToString();
}

}  // namespace
}  // namespace meshplan::core
