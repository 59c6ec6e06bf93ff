#include "core/spec_json.h"

#include <gtest/gtest.h>

#include "core/presets.h"

namespace meshplan::core {
namespace {

TEST(SpecJsonTest, PlanFileRoundTripsWithEmbeddedSpecs) {
  PlanFile f;
  f.plan.gpus = 64;
  f.plan.tp = 8;
  f.plan.pp = 2;
  f.plan.dp = 4;
  f.plan.zero = 1;
  f.plan.sequence_parallel = true;
  f.plan.recompute = Recompute::kSelective;
  f.plan.micro_batch = 1;
  f.plan.global_batch = 512;
  f.plan.seq_len = 8192;
  f.plan.stage_layers = {39, 41};
  f.plan.placement = {Axis::kTp, Axis::kDp, Axis::kCp, Axis::kEp, Axis::kPp};
  f.model = *LoadModel("llama3-70b");
  f.gpu = *LoadGpu("h100-sxm");
  f.cluster = *LoadCluster("dgx-h100");
  auto back = ParsePlanFileJson(PlanFileToJson(f));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->plan, f.plan);
  EXPECT_EQ(*back->model, *f.model);
  EXPECT_EQ(*back->gpu, *f.gpu);
  EXPECT_EQ(*back->cluster, *f.cluster);
}

TEST(SpecJsonTest, PlanFileMayNamePresets) {
  auto f = ParsePlanFileJson(R"({"gpus": 8, "dp": 8, "micro_batch": 1, "global_batch": 8, "seq_len": 4096,
                                  "model": "llama3-8b", "cluster": "dgx-h100"})");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*f->model_name, "llama3-8b");
  auto s = ResolvePlanFile(*f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gpu.name, "h100-sxm");  // from the cluster
}

TEST(SpecJsonTest, SizesAcceptUnitsAndWriteGibibytes) {
  auto g = ParseGpuJson(R"({"name": "x", "peak_flops_per_s": {"bf16": 1e15}, "hbm_bytes": "141GB",
                            "hbm_bytes_per_s": "4.8TB/s", "tdp_w": 700})");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->hbm_bytes, 141'000'000'000LL);
  EXPECT_DOUBLE_EQ(g->hbm_bytes_per_s, 4.8e12);
}

TEST(SpecJsonTest, DefaultsFollowOtherFields) {
  // kv_heads defaults to heads (MHA), head_dim to hidden/heads.
  auto m = ParseModelJson(R"({"name": "m", "layers": 2, "hidden": 512, "heads": 8, "ffn_hidden": 2048,
                              "mlp": "gelu", "vocab": 1000, "max_seq": 128})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->head_dim, 64);
}

}  // namespace
}  // namespace meshplan::core
