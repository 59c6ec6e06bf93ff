// The framework writers of `meshplan export`, called from core as the GUI would: the plan's
// degrees, schedule and batch come out under each framework's own names.
#include "core/export.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/defaults.h"
#include "core/diagnostics.h"
#include "core/presets.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

// Llama 3 70B on 64 H100s: TP 8, PP 4 with 2 virtual stages, DP 2, ZeRO-1, 128 sequences of 8k.
Scenario Llama70B() {
  Scenario s;
  s.model = *LoadModel("llama3-70b");
  s.gpu = *LoadGpu("h100-sxm");
  s.cluster = *LoadCluster("dgx-h100");
  PlanSpec& p = s.plan;
  p.gpus = 64;
  p.tp = 8;
  p.pp = 4;
  p.vpp = 2;
  p.dp = 2;
  p.zero = 1;
  p.sequence_parallel = true;
  p.schedule = Schedule::kInterleaved;
  p.seq_len = 8192;
  p.global_batch = 128;
  return s;
}

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(ExportTest, EachFrameworkGetsThePlansDegreesUnderItsOwnNames) {
  const Scenario s = Llama70B();
  Diagnostics d;
  ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors());
  const std::string megatron = *ExportMegatron(s);
  EXPECT_TRUE(Has(megatron, "--tensor-model-parallel-size 8")) << megatron;
  EXPECT_TRUE(Has(megatron, "--pipeline-model-parallel-size 4")) << megatron;
  EXPECT_TRUE(Has(megatron, "--num-layers 80")) << megatron;
  EXPECT_TRUE(Has(megatron, "--global-batch-size 128")) << megatron;
  const std::string titan = ExportTorchtitan(s);
  EXPECT_TRUE(Has(titan, "tensor_parallel_degree = 8")) << titan;
  EXPECT_TRUE(Has(titan, "pipeline_parallel_degree = 4")) << titan;
  std::vector<std::string> notes;
  const std::string ds = ExportDeepSpeed(s, &notes);
  // 128 sequences = micro 1 x 64 accumulation steps x DP 2.
  EXPECT_TRUE(Has(ds, "\"train_batch_size\": 128")) << ds;
  EXPECT_TRUE(Has(ds, "\"gradient_accumulation_steps\": 64")) << ds;
  EXPECT_FALSE(notes.empty());  // the pipeline is built in code: said in a note
}

// Megatron-LM's own rules at kMegatronCommit (d98e8a64, megatron/training/arguments.py unless
// another file is named), each checked on the export it shapes.
TEST(ExportTest, MegatronWritesTheEnvironmentAndLauncherItAsserts) {
  Scenario s = Llama70B();
  const std::string h100 = *ExportMegatron(s);
  // The first line names the commit; TP 8 on Hopper without FSDP asserts
  // CUDA_DEVICE_MAX_CONNECTIONS == "1" (arguments.py:1477); 64 GPUs on 8-GPU nodes: 8 nodes.
  EXPECT_EQ(h100.rfind("# Megatron-LM d98e8a64 arguments:", 0), 0u) << h100;
  EXPECT_TRUE(Has(h100, "\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n")) << h100;
  EXPECT_TRUE(Has(h100, "torchrun --nproc-per-node 8 --nnodes 8 pretrain_gpt.py")) << h100;
  // --overlap-param-gather needs the distributed optimizer and --overlap-grad-reduce (1024-1029).
  EXPECT_TRUE(Has(h100, "--use-distributed-optimizer")) << h100;
  EXPECT_TRUE(Has(h100, "--overlap-param-gather")) << h100;
  s.plan.overlap_grad_reduce = false;
  EXPECT_FALSE(Has(*ExportMegatron(s), "--overlap-param-gather"));
  // Blackwell has no such requirement (arguments.py:1455: "no longer exists since the Blackwell
  // architecture").
  s.gpu = *LoadGpu("b200");
  EXPECT_FALSE(Has(*ExportMegatron(s), "CUDA_DEVICE_MAX_CONNECTIONS=1"));
}

TEST(ExportTest, MegatronShardsZeroTwoAndThreeWithMegatronFsdpEvenWithPipelines) {
  // ZeRO-3 with PP 4: PyTorch FSDP2 refuses pipeline parallelism (arguments.py:1033) while
  // Megatron-FSDP takes it, with the fsdp_dtensor checkpoint format (1169) and
  // CUDA_DEVICE_MAX_CONNECTIONS not 1 (1166).
  Scenario s = Llama70B();
  s.plan.zero = 3;
  Diagnostics d;
  ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors());
  const std::string z3 = *ExportMegatron(s);
  EXPECT_TRUE(Has(z3, "--use-megatron-fsdp")) << z3;
  EXPECT_TRUE(Has(z3, "--data-parallel-sharding-strategy optim_grads_params")) << z3;
  EXPECT_TRUE(Has(z3, "--ckpt-format fsdp_dtensor")) << z3;
  EXPECT_FALSE(Has(z3, "--use-torch-fsdp2")) << z3;
  EXPECT_FALSE(Has(z3, "export CUDA_DEVICE_MAX_CONNECTIONS=1")) << z3;
  s.plan.zero = 2;  // sharded gradients and optimizer states: optim_grads (3190)
  EXPECT_TRUE(Has(*ExportMegatron(s), "--data-parallel-sharding-strategy optim_grads \\"));
}

TEST(ExportTest, MegatronRefusesWhatItCannotExpressNamingTheRule) {
  Scenario s = Llama70B();
  auto refused = [&](const std::string& rule) {
    auto r = ExportMegatron(s);
    EXPECT_FALSE(r.ok());
    if (r.ok()) return;
    EXPECT_TRUE(Has(r.status().message(), rule)) << r.status().message();
    EXPECT_TRUE(Has(r.status().message(), "nearest plan it runs")) << r.status().message();
  };
  s.plan.optimizer = Optimizer::kAdam8bit;  // --optimizer choices (2913)
  refused("arguments.py:2913");
  s.plan.optimizer = Optimizer::kAdamW;
  s.plan.offload_optimizer = OffloadTarget::kNvme;  // only --optimizer-cpu-offload
  refused("no NVMe or parameter offload");
  s.plan.offload_optimizer = OffloadTarget::kCpu;
  s.plan.zero = 0;  // the offload needs the precision-aware optimizer (1884), which needs the
                    // distributed optimizer (megatron/core/optimizer/__init__.py:1057)
  refused("megatron/core/optimizer/__init__.py:1057");
  s.plan.zero = 1;
  const std::string offload = *ExportMegatron(s);
  EXPECT_TRUE(Has(offload, "--use-precision-aware-optimizer")) << offload;
  EXPECT_TRUE(Has(offload, "--optimizer-cpu-offload")) << offload;
}

TEST(ExportTest, MegatronKeepsQwen3sQkNorm) {
  // Qwen3 normalises q and k per head: TransformerConfig.qk_layernorm (transformer_config.py:259).
  Scenario s = Llama70B();
  s.model = *LoadModel("qwen3-30b-a3b");
  EXPECT_TRUE(s.model.qk_norm);
  s.plan = PlanSpec{};
  s.plan.gpus = 16;
  s.plan.tp = 2;
  s.plan.dp = 8;
  s.plan.ep = 8;
  s.plan.sequence_parallel = true;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 64;
  Diagnostics d;
  ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.all().front().ToString();
  EXPECT_TRUE(Has(*ExportMegatron(s), "--qk-layernorm"));
}

TEST(ExportTest, MegatronWritesDeepSeekV3sAttentionLayersAndRouter) {
  // DeepSeek-V3 (its preset: MLA with q/kv ranks 1536/512, head dims 128 + 64 rope, v 128; the
  // first 3 of 61 layers dense; 256 sigmoid-scored experts with the aux-loss-free bias):
  // --multi-latent-attention and its ranks (arguments.py:3548-3556; exclusive with GQA, 1973),
  // --moe-layer-freq as a list expression (3520), the router's score function and expert bias
  // (transformer_config.py:808, 816; the bias only with sigmoid, 2617).
  Scenario s;
  s.model = *LoadModel("deepseek-v3");
  s.gpu = *LoadGpu("h800");
  s.cluster = *LoadCluster("hgx-h800");
  s.plan.gpus = 2048;
  s.plan.pp = 16;
  s.plan.dp = 128;
  s.plan.ep = 64;
  s.plan.zero = 1;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 4096;
  ApplyDefaultStageSplit(s.model, &s.plan, nullptr);  // 61 layers over 16 stages
  Diagnostics d;
  ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.all().front().ToString();
  const std::string out = *ExportMegatron(s);
  for (const char* want : {"--multi-latent-attention", "--q-lora-rank 1536", "--kv-lora-rank 512", "--qk-head-dim 128",
                           "--qk-pos-emb-head-dim 64", "--v-head-dim 128", "--moe-layer-freq \"([0]*3+[1]*58)\"",
                           "--moe-router-score-function sigmoid", "--moe-router-enable-expert-bias"})
    EXPECT_TRUE(Has(out, want)) << want << "\n" << out;
  EXPECT_FALSE(Has(out, "--group-query-attention")) << out;
}

}  // namespace
}  // namespace meshplan::core
