// Hybrid Mamba-2 models (ModelSpec::hybrid_pattern): parameters against published counts and
// hand derivations, FLOPs, the step graph's mix and the activation mix, and the input rules.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/export.h"
#include "core/flops.h"
#include "core/memory.h"
#include "core/params.h"
#include "core/presets.h"
#include "core/spec_json.h"
#include "core/stack.h"
#include "core/step_graph.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

// Nemotron 3 Nano 4B (presets/models/nemotron-3-nano-4b.json, from Megatron-Bridge
// recipes/nemotronh/h100/nemotron_3_nano_4b.py at 067f987df): 42 layers, 21 Mamba-2, 17 MLP, 4
// attention.
ModelSpec Nano4B() {
  auto m = LoadModel("nemotron-3-nano-4b");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : ModelSpec{};
}

TEST(HybridTest, NemotronNano4BMatchesItsVerificationCard) {
  // Megatron-Bridge examples/model_verification_cards/nemotron-3-nano-4b/card.yaml (067f987df):
  // 3,973,556,832 parameters. A Mamba layer: pre-norm 3136 + in_proj 3136 x (2 x 7680 + 2 x 8 x
  // 128 + 96 = 17,504) = 54,892,544 + conv (7680 + 2048) x 5 = 48,640 + dt_bias, A_log, D 288 +
  // gated norm 7680 + out_proj 7680 x 3136 = 24,084,480: 79,036,768; attention 3136 (norm) +
  // q 3136 x 5120 + k, v 2 x 3136 x 1024 + o 5120 x 3136 = 38,538,304; MLP 3136 + 2 x 3136 x
  // 12544 = 78,679,104; 21 + 4 + 17 of them, with the untied embedding and head (2 x 131072 x
  // 3136) and the final norm.
  const ModelSpec m = Nano4B();
  EXPECT_EQ(HybridLayerParams(m, 'M').Total(), 79'036'768);
  EXPECT_EQ(HybridLayerParams(m, '*').Total(), 38'538'304);
  EXPECT_EQ(HybridLayerParams(m, '-').Total(), 78'679'104);
  EXPECT_EQ(CountParams(m).total, 3'973'556'832LL);
}

TEST(HybridTest, PresetsCountTheirKindsExactly) {
  // Nemotron-H 8B: Mamba 4096 + 4096 x 18,560 + 10,240 x 5 + 384 + 8192 + 8192 x 4096 =
  // 109,640,064; attention 4096 + 2 x 4096^2 + 2 x 4096 x 1024 = 41,947,136; MLP 4096 + 2 x 4096 x
  // 21504 = 176,164,864; 24 + 4 + 24 layers and 2 x 131072 x 4096 + 4096 outside: 8,100,852,736.
  auto h8 = LoadModel("nemotron-h-8b");
  ASSERT_TRUE(h8.ok());
  EXPECT_EQ(CountParams(*h8).total, 8'100'852'736LL);
  // Nemotron-H 56B (d_inner 256 x 64 = 16,384, N 256, G 8): Mamba 8192 + 8192 x 37,120 (2 x 16,384
  // + 2 x 8 x 256 + 256) + 20,480 x 5 + 768 + 16,384 + 16,384 x 8192 = 438,432,512; attention 8192 +
  // 2 x 8192^2 + 2 x 8192 x 1024 = 151,003,136; MLP 8192 + 2 x 8192 x 32,768 = 536,879,104; 54 + 10
  // + 54 layers and 2 x 131,072 x 8192 + 8192 outside: 56,324,350,464 (the name's 56B).
  auto h56 = LoadModel("nemotron-h-56b");
  ASSERT_TRUE(h56.ok());
  EXPECT_EQ(CountParams(*h56).total, 56'324'350'464LL);
  // Nemotron 3 Nano: 31,577,940,288 (Megatron-Bridge's card counts 31,577,937,344 without the
  // router's 128-value expert bias, 23 x 128 = 2,944 more here); "3.5B active".
  auto nano = LoadModel("nemotron-3-nano");
  ASSERT_TRUE(nano.ok());
  const ParamCount c = CountParams(*nano);
  EXPECT_EQ(c.total, 31'577'940'288LL);
  EXPECT_NEAR(static_cast<double>(c.active), 3.58e9, 0.01e9);
  // Every layer is costed as the mix: its rounded average, within one parameter per field of the
  // exact total over the 52 layers.
  const int64_t outside = c.embedding + c.output_head + c.final_norm;
  EXPECT_NEAR(static_cast<double>(outside + 52 * CountLayerParams(*nano, true).Total()), static_cast<double>(c.total),
              52.0 * 130);
}

TEST(HybridTest, SsdFlopsAreItsFourChunkedMatmuls) {
  // Nemotron 3 Nano's mixer (Q 128, N 128, G 8, H 64, P 64): 2 x 128 x 128 x 8 + 64 x (2 x 128 x
  // 64 + 4 x 128 x 64) = 262,144 + 3,145,728 = 3,407,872 FLOPs per token.
  auto nano = LoadModel("nemotron-3-nano");
  ASSERT_TRUE(nano.ok());
  EXPECT_DOUBLE_EQ(SsdForwardFlopsPerToken(*nano->mamba), 3'407'872.0);
}

TEST(HybridTest, MegatronsOwnCountMatchesThePrintedTflops) {
  // Megatron-LM's hybrid_flops per token (core/stack.cc): Nemotron 3 Nano at 8192 tokens, attention
  // 4 x 4096 x 2856 + 2 x 8192 x 4096 = 113,901,568, MoE 4 x 2688 x 14848 = 159,645,696, Mamba (inner
  // width taken as 2h) 2 x 2688 x 12864 + 7 x 5376 x 128 + 2 x 5376 x 2688 = 102,875,136, logits
  // 2 x 2688 x 131072 = 704,643,072: 3 x (6, 23, 23 layers and the logits) = 22,278,094,848. The
  // page it converts: Megatron-Bridge 26.06.01, GB200, 34,816 tokens/s per GPU and 776 TFLOP/s.
  auto nano = LoadModel("nemotron-3-nano");
  ASSERT_TRUE(nano.ok());
  const double f = SourceFlopsPerToken(FlopCount::kMegatron, *nano, 8192);
  EXPECT_DOUBLE_EQ(f, 22'278'094'848.0);
  EXPECT_NEAR(f * 34816 / 1e12, 776.0, 0.5);
}

TEST(HybridTest, StepGraphForwardFlopsEqualTheClosedForm) {
  // The mix's forward ops over the 52 layers plus the head: ForwardFlopsPerToken x tokens (one
  // rank, TP 1), attention in the 4 attention layers only.
  auto m = LoadModel("nemotron-h-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 8192;
  p.global_batch = 1;
  const StepGraph g = BuildStepGraph(*m, p);
  double per_layer = 0;
  for (const Op& op : g.dense_layer)
    if (op.pass == Pass::kForward) per_layer += op.Flops();
  double head = 0;
  for (const Op& op : g.head)
    if (op.pass == Pass::kForward) head += op.Flops();
  const ForwardFlops f = ForwardFlopsPerToken(*m, 8192, AttentionFlops::kCausal);
  EXPECT_NEAR(per_layer * 52 + head, f.Total() * 8192, f.Total() * 8192 * 1e-9);
  // Attention: 4 layers x 2 x (4096 + 4096) x 8192 / 2 keys per token.
  EXPECT_DOUBLE_EQ(f.attention, 4.0 * 2 * 8192 * 4096);
  EXPECT_TRUE(g.moe_layer.empty());
}

TEST(HybridTest, ActivationsAreTheKindsMix) {
  // Nemotron-H 8B, one sequence of 8192 tokens, TP 1, bf16, nothing recomputed (sbh =
  // 33,554,432): attention block norm input, QKV input, q, attention output 2sbh each, k and v
  // 2 x 8192 x 1024 each, the fp32 LSE 4 x 32 x 8192: 303,038,464; MLP block norm and fc1 inputs
  // 2sbh each, the activation's and fc2's inputs 2 x 8192 x 21504 each: 838,860,800; Mamba block
  // norm and in_proj inputs 2sbh each, zxbcdt 2 x 8192 x 18,560, out_x, y and out_proj's input
  // 2 x 8192 x 8192 each: 840,957,952. Weighted 4 / 24 / 24 of 52 (each term rounded).
  auto m = LoadModel("nemotron-h-8b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 8192;
  p.global_batch = 1;
  const double want = (4.0 * 303'038'464 + 24.0 * 838'860'800 + 24.0 * 840'957'952) / 52;
  EXPECT_NEAR(static_cast<double>(LayerActivationBytes(*m, p, false, Recompute::kNone)), want, 16);
  // Full recomputation keeps each layer's input alone, whatever its kind.
  EXPECT_EQ(LayerActivationBytes(*m, p, false, Recompute::kFull), 2 * 33'554'432);
}

TEST(HybridTest, NemotronSuperCountsItsLatentExpertsAndOneSharedMtpModule) {
  // Nemotron 3 Super (presets/models/nemotron-3-super.json), by hand. h = 4096.
  //   '*': q 4096^2 + k, v 2 x 4096 x 256 + o 4096^2 + norm 4096           =    35,655,680
  //   'M': in_proj 4096 x (2 x 8192 + 2 x 8 x 128 + 128) = 76,021,760, conv (8192 + 2048) x 5,
  //        dt_bias/A_log/D 3 x 128, gated norm 8192, out_proj 8192 x 4096, norm 4096 = 109,640,064
  //   'E': router 4096 x 512 + 512 bias; 512 experts of 2 x 1024 x 2688 (latent-wide, squared
  //        ReLU: two matrices); shared 2 x 4096 x 5376; latent projections 2 x 4096 x 1024;
  //        norm 4096                                                          = 2,873,102,848
  //   8 '*' + 40 'M' + 40 'E' + embedding and head 2 x 131072 x 4096 + final norm 4096
  //                                                                          = 120,668,707,840
  //   one MTP module ("*E", shared by both depths) + eh_proj 2 x 4096^2 + 3 norms
  //                                                    2,908,758,528 + 33,566,720 = 2,942,325,248
  // 123,611,033,088 in all: Megatron-Bridge's verification card for the released checkpoint
  // (examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml at 067f987df: "all
  // 42,683 source tensors and 123,611,033,088 elements, including the 41 FP32 router
  // correction-bias tensors", 40 MoE layers and the MTP module's).
  auto m = LoadModel("nemotron-3-super");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(HybridLayerParams(*m, '*').Total(), 35'655'680);
  EXPECT_EQ(HybridLayerParams(*m, 'M').Total(), 109'640'064);
  EXPECT_EQ(HybridLayerParams(*m, 'E').Total(), 2'873'102'848);
  const ParamCount c = CountParams(*m);
  EXPECT_EQ(c.mtp_copies, 1);
  EXPECT_EQ(c.mtp_layer_total, 2'908'758'528);
  EXPECT_EQ(c.total, 120'668'707'840 + 2'942'325'248);
  EXPECT_EQ(c.total, 123'611'033'088);
  // Active: a token visits 22 of 512 experts: each 'E' 175,641,088 (router, 22 experts, shared,
  // projections, norm), the decoder 12,770,237,440 ("A12B"), the MTP module 244,863,488 more.
  EXPECT_EQ(HybridLayerParams(*m, 'E').Active(), 175'641'088);
  EXPECT_EQ(c.active, 12'770'237'440 + 244'863'488);
  // Two depths without the shared module would hold it twice.
  ModelSpec unshared = *m;
  unshared.mtp_shared = false;
  EXPECT_EQ(CountParams(unshared).total, c.total + 2'942'325'248);
}

TEST(HybridTest, NemotronLightningIsNanoWithASharedMtpModule) {
  // Nemotron 3.5 Lightning: Nano's decoder (31,577,940,288) and one "*E" MTP module used at both
  // depths: attention 2688 x 4096 x 2 + 2 x 2688 x 256 + norm 2688 = 23,399,040; MoE router
  // 2688 x 128 + 128 bias, 128 experts of 2 x 2688 x 1856, shared 2 x 2688 x 3712, norm 2688 =
  // 1,297,468,160; eh_proj 2 x 2688^2 = 14,450,688 and three norms 8,064: 1,335,325,952.
  // 32,913,266,240 in all, Megatron-Bridge's verification card (examples/model_verification_cards/
  // nemotron-3.5-lightning/card.yaml at 067f987df: "all 6,513 tensors and 32,913,266,240
  // parameters match").
  auto m = LoadModel("nemotron-3-5-lightning");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(CountParams(*m).total, 32'913'266'240);
  EXPECT_EQ(CountParams(*m).total - CountParams(*LoadModel("nemotron-3-nano")).total, 1'335'325'952);
}

TEST(HybridTest, SuperStepGraphRunsTheMtpBlocksInTheMix) {
  // One sequence of 8192 tokens on one rank: the mix layer over the 88 decoder layers and the 2 x
  // "*E" MTP blocks (92 costed layers: 10 attention, 42 MoE, 40 Mamba blocks), plus the head with
  // both MTP depths' eh_proj and logits, is ForwardFlopsPerToken x tokens; the routed experts see
  // 1024-wide tokens between the latent projections.
  auto m = LoadModel("nemotron-3-super");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->MtpCostedLayers(), 4);
  EXPECT_EQ(m->HybridCostedCounts().attention, 10);
  EXPECT_EQ(m->HybridCostedCounts().moe, 42);
  PlanSpec p;
  p.seq_len = 8192;
  p.global_batch = 1;
  const StepGraph g = BuildStepGraph(*m, p);
  double per_layer = 0;
  bool latent_down = false;
  for (const Op& op : g.moe_layer) {
    if (op.pass == Pass::kForward) per_layer += op.Flops();
    if (op.pass == Pass::kForward && op.name == std::string("expert_fc1")) EXPECT_EQ(op.k, 1024);
    latent_down |= op.name == std::string("moe_latent_down");
  }
  EXPECT_TRUE(latent_down);
  double head = 0;
  for (const Op& op : g.head)
    if (op.pass == Pass::kForward) head += op.Flops();
  const ForwardFlops f = ForwardFlopsPerToken(*m, 8192, AttentionFlops::kCausal);
  EXPECT_NEAR(per_layer * 92 + head, f.Total() * 8192, f.Total() * 8192 * 1e-9);
  // Megatron-LM's hybrid_flops, counting the MTP blocks once per depth and each depth's logits:
  // attention 4h(h + h g/a) + 2sh = 138,412,032, MoE 4(1024 x 2688 x 22 + 4096 x 5376) + 4 x 4096
  // x 1024 = 347,078,656, Mamba 2h(4h + 2GN + H) + 7(2h)N + 2(2h)h = 226,492,416, logits 2hV x 3;
  // 3 x (10 x attention + 42 x MoE + 40 x Mamba + logits) = 84,727,037,952 per token.
  EXPECT_DOUBLE_EQ(SourceFlopsPerToken(FlopCount::kMegatron, *m, 8192), 84'727'037'952.0);
}

TEST(HybridTest, LatentExpertsSaveLatentWideTensors) {
  // Qwen3-30B-A3B with a 512-wide latent MoE, 4096 tokens, TP 1, bf16, nothing recomputed: the
  // experts' input and output (the output kept where the router's probabilities weight it, at the
  // unpermutation) are 8 x 4096 tokens x 512 x 2 B = 33,554,432 each, fc2_latent_proj's
  // input 4096 x 512 x 2 = 4,194,304; without the latent, 2048-wide: 134,217,728.
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok());
  PlanSpec p;
  p.seq_len = 4096;
  p.global_batch = 1;
  auto term = [&](const ModelSpec& x, const char* name) {
    for (const auto& t : LayerActivationTerms(x, p, true, Recompute::kNone))
      if (t.name == name) return t.bytes;
    return int64_t{-1};
  };
  EXPECT_EQ(term(*m, "expert_input"), 134'217'728);
  EXPECT_EQ(term(*m, "latent_up_input"), -1);
  ModelSpec latent = *m;
  latent.moe->latent_size = 512;
  EXPECT_EQ(term(latent, "expert_input"), 33'554'432);
  EXPECT_EQ(term(latent, "expert_output"), -1);  // weighted inside the fused SwiGLU (moe_probs fused)
  p.moe_probs = MoeProbs::kUnpermute;
  EXPECT_EQ(term(latent, "expert_output"), 33'554'432);  // weighted at the unpermutation: kept, latent-wide
  p.moe_probs = MoeProbs::kFused;
  EXPECT_EQ(term(latent, "latent_up_input"), 4'194'304);
  // Its parameters: experts 128 x 3 x 512 x 768 (SwiGLU) and the projections 2 x 2048 x 512 in
  // every layer, instead of 128 x 3 x 2048 x 768.
  EXPECT_EQ(CountLayerParams(*m, true).Total() - CountLayerParams(latent, true).Total(),
            128LL * 3 * (2048 - 512) * 768 - 2LL * 2048 * 512);
}

TEST(HybridTest, MtpPatternsAreCheckedNamingTheField) {
  auto m = LoadModel("nemotron-3-super");
  ASSERT_TRUE(m.ok());
  auto error = [](const ModelSpec& x) {
    Diagnostics d;
    ValidateModel(x, "model", &d);
    return d.ToStatus().ToString();
  };
  EXPECT_EQ(error(*m).find("model."), std::string::npos) << error(*m);
  ModelSpec none = *m;
  none.mtp_pattern.clear();
  EXPECT_NE(error(none).find("model.mtp_pattern: is required with mtp_layers"), std::string::npos) << error(none);
  ModelSpec foreign = *m;
  foreign.mtp_pattern = "*-";  // Super's decoder has no MLP block
  EXPECT_NE(error(foreign).find("model.mtp_pattern: character 1 '-'"), std::string::npos) << error(foreign);
  ModelSpec dense = *LoadModel("llama3-8b");
  dense.mtp_layers = 1;
  dense.mtp_pattern = "*E";
  EXPECT_NE(error(dense).find("model.mtp_pattern: is a hybrid model's"), std::string::npos) << error(dense);
  dense.mtp_pattern.clear();
  dense.mtp_layers = 0;
  dense.mtp_shared = true;
  EXPECT_NE(error(dense).find("model.mtp_shared: needs model.mtp_layers > 0"), std::string::npos) << error(dense);
  ModelSpec bad_latent = *m;
  bad_latent.moe->latent_size = -1;
  EXPECT_NE(error(bad_latent).find("model.moe.latent_size"), std::string::npos) << error(bad_latent);
}

TEST(HybridTest, ModelJsonRoundTripsThePatternAndTheMixer) {
  // What `presets models` and `plan` write is what they read back, the hybrid fields included.
  auto nano = LoadModel("nemotron-3-nano");
  ASSERT_TRUE(nano.ok());
  const std::string text = ModelToJson(*nano);
  EXPECT_NE(text.find("\"hybrid_pattern\""), std::string::npos);
  auto back = ParseModelJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *nano);
}

TEST(HybridTest, MalformedPatternsAreRefusedNamingTheField) {
  auto parse = [](const std::string& pattern, const std::string& extra) {
    return ParseModelJson(R"J({"name": "x", "source": "s", "layers": 4, "hidden": 512, "heads": 8,
      "ffn_hidden": 1024, "mlp": "gelu", "vocab": 1000, "max_seq": 1024, "hybrid_pattern": ")J" +
                          pattern + "\"" + extra + "}");
  };
  const std::string mamba = R"J(, "mamba": {"heads": 16, "head_dim": 64})J";
  EXPECT_TRUE(parse("M*M-", mamba).ok());
  auto bad = parse("M*M", mamba);  // 3 characters for 4 layers
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.hybrid_pattern"), std::string::npos) << bad.status().ToString();
  bad = parse("M*MX", mamba);  // not a layer kind
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'X'"), std::string::npos) << bad.status().ToString();
  bad = parse("M*M-", "");  // Mamba layers without a mixer spec
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.mamba"), std::string::npos) << bad.status().ToString();
  bad = parse("M*ME", mamba);  // MoE layers without model.moe
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.moe"), std::string::npos) << bad.status().ToString();
  bad = parse("M*M-", R"J(, "mamba": {"heads": 12, "head_dim": 64, "groups": 8})J");  // 8 does not divide 12
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.mamba.groups"), std::string::npos) << bad.status().ToString();
}

TEST(HybridTest, PlansTheModelCannotRunAreRefused) {
  auto m = LoadModel("nemotron-3-nano");
  auto g = LoadGpu("h100-sxm");
  auto c = LoadCluster("dgx-h100");
  ASSERT_TRUE(m.ok() && g.ok() && c.ok());
  PlanSpec p;
  p.tp = 16;  // 16 does not divide the 8 Mamba groups (nor the 32 heads)
  p.gpus = 16;
  p.seq_len = 8192;
  p.global_batch = 1;
  Diagnostics d;
  ValidatePlan(p, *m, *g, *c, &d);
  EXPECT_NE(d.ToStatus().message().find("model.mamba.heads"), std::string::npos) << d.ToStatus().message();
  p.tp = 1;
  p.cp = 2;  // Mamba's context parallelism is not modelled
  p.gpus = 2;
  Diagnostics d2;
  ValidatePlan(p, *m, *g, *c, &d2);
  EXPECT_NE(d2.ToStatus().message().find("plan.cp"), std::string::npos) << d2.ToStatus().message();
  // The exports write transformer models only, and say so.
  p.cp = 1;
  p.gpus = 1;
  const Scenario s{*m, *g, *c, p};
  const auto megatron = ExportMegatron(s);
  ASSERT_FALSE(megatron.ok());
  EXPECT_NE(megatron.status().message().find("hybrid"), std::string::npos) << megatron.status().ToString();
}

}  // namespace
}  // namespace meshplan::core
