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
