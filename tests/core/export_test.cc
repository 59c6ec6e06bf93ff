// The framework writers of `meshplan export`, called from core as the GUI would: the plan's
// degrees, schedule and batch come out under each framework's own names.
#include "core/export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "core/defaults.h"
#include "core/diagnostics.h"
#include "core/presets.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

// Llama 3 70B on 64 H100s: TP 8, PP 4 with 2 virtual stages, DP 2, ZeRO-1, 128 sequences of 8k.
// Llama 3 405B on dgx-h100 with TP 8, SP and the interleaved schedule over pp x vpp chunks.
Scenario Llama405BInterleaved(int64_t pp, int64_t vpp, int64_t dp, int zero, int64_t global_batch) {
  Scenario s;
  s.model = *LoadModel("llama3-405b");
  s.gpu = *LoadGpu("h100-sxm");
  s.cluster = *LoadCluster("dgx-h100");
  PlanSpec& p = s.plan;
  p.gpus = 8 * pp * dp;
  p.tp = 8;
  p.pp = pp;
  p.vpp = vpp;
  p.dp = dp;
  p.zero = zero;
  p.sequence_parallel = true;
  p.schedule = Schedule::kInterleaved;
  p.seq_len = 8192;
  p.global_batch = global_batch;
  return s;
}

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

// The same with ZeRO-2 and plain 1F1B (PP 4, no interleaving), a plan all three frameworks run.
Scenario Llama70BOneFOneB() {
  Scenario s = Llama70B();
  s.plan.zero = 2;
  s.plan.vpp = 1;
  s.plan.schedule = Schedule::k1F1B;
  return s;
}

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// A scenario of presets with the plan's degrees still to set.
Scenario On(const char* model, const char* gpu, const char* cluster) {
  Scenario s;
  s.model = *LoadModel(model);
  s.gpu = *LoadGpu(gpu);
  s.cluster = *LoadCluster(cluster);
  return s;
}

// Qwen3-30B-A3B on one DGX H100: DP 8 with its 128 experts over EP 8, ZeRO-1, 64 x 4,096 tokens.
Scenario Qwen3MoeOnOneNode() {
  Scenario s = On("qwen3-30b-a3b", "h100-sxm", "dgx-h100");
  s.plan.gpus = 8;
  s.plan.dp = 8;
  s.plan.ep = 8;
  s.plan.zero = 1;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 64;
  return s;
}

// An export that must succeed: its text, or "" and a failure naming the refusal.
std::string Text(const Result<std::string>& r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::string();
}

// An export that must be refused with a message saying `why`.
void ExpectRefused(const Result<std::string>& r, const std::string& why) {
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(std::string(r.status().message()), why)) << r.status().message();
}

// What ValidatePlan says against the scenario's plan: "" when it reports no error.
std::string PlanErrors(const Scenario& s) {
  Diagnostics d;
  ValidatePlan(s.plan, s.model, s.gpu, s.cluster, &d);
  return d.has_errors() ? d.ToStatus().ToString() : std::string();
}

TEST(ExportTest, DTensorTensorParallelismIsTorchtitansAlone) {
  // plan.dtensor_tp costs PyTorch's DTensor TP (its sequence-dimension copies, torchao's float8
  // gathers): torchtitan runs it; Megatron-LM (Megatron-Core's TP) and DeepSpeed (AutoTP) refuse it;
  // torchtitan's exporters say so when the plan was costed without it.
  Scenario s = Llama70BOneFOneB();
  s.plan.tp_overlap = TpOverlap::kNone;
  const std::string plain = Text(ExportTorchtitan(s));
  EXPECT_TRUE(Has(plain, "# note: tensor parallelism: torchtitan runs PyTorch's DTensor styles")) << plain;
  EXPECT_TRUE(Has(Text(ExportTorchtitanPython(s)), "--dtensor-tp"));
  s.plan.dtensor_tp = true;
  ASSERT_EQ(PlanErrors(s), "");
  const std::string titan = Text(ExportTorchtitan(s));
  EXPECT_TRUE(Has(titan, "tensor_parallel_degree = 8")) << titan;
  EXPECT_FALSE(Has(titan, "DTensor styles")) << titan;
  ExpectRefused(ExportMegatron(s), "plan.dtensor_tp");
  s.plan.zero = 1;
  std::vector<std::string> notes;
  ExpectRefused(ExportDeepSpeed(s, &notes), "plan.dtensor_tp");
}

TEST(ExportTest, PyTorchContextParallelIsTorchtitansTomlAlone) {
  // plan.torch_cp costs PyTorch's context_parallel (its ring's copies, fp32 merges and dK/dV): the
  // TOML exporter's torchtitan runs it (context_parallel_rotate_method, set_rotate_method) and says
  // so when the plan was costed without it; Megatron-LM (Transformer Engine's CP) refuses it; the
  // Python exporter's torchtitan all-gathers K and V at local_map and says the plan assumed PyTorch's.
  Scenario s = Llama70BOneFOneB();
  s.plan.cp = 2;
  s.plan.dp = 1;
  s.plan.cp_kind = CpKind::kAllGather;
  ASSERT_EQ(PlanErrors(s), "");
  EXPECT_TRUE(
      Has(Text(ExportTorchtitan(s)), "# note: context parallelism: this torchtitan runs PyTorch's context_parallel"));
  EXPECT_FALSE(Has(Text(ExportTorchtitanPython(s)), "plan.torch_cp"));
  s.plan.torch_cp = true;
  ASSERT_EQ(PlanErrors(s), "");
  const std::string titan = Text(ExportTorchtitan(s));
  EXPECT_TRUE(Has(titan, "context_parallel_rotate_method = \"allgather\"")) << titan;
  EXPECT_FALSE(Has(titan, "context parallelism: this torchtitan runs")) << titan;
  EXPECT_TRUE(Has(Text(ExportTorchtitanPython(s)), "local_map boundary"));
  ExpectRefused(ExportMegatron(s), "plan.torch_cp");
  s.plan.cp = 1;
  s.plan.dp = 2;
  EXPECT_TRUE(Has(Text(ExportMegatron(s)), "--tensor-model-parallel-size 8"));  // no CP, nothing to refuse
}

TEST(ExportTest, EachFrameworkGetsThePlansDegreesUnderItsOwnNames) {
  const Scenario s = Llama70BOneFOneB();
  ASSERT_EQ(PlanErrors(s), "");
  const std::string megatron = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(megatron, "--tensor-model-parallel-size 8")) << megatron;
  EXPECT_TRUE(Has(megatron, "--pipeline-model-parallel-size 4")) << megatron;
  EXPECT_TRUE(Has(megatron, "--num-layers 80")) << megatron;
  EXPECT_TRUE(Has(megatron, "--global-batch-size 128")) << megatron;
  const std::string titan = Text(ExportTorchtitan(s));
  EXPECT_TRUE(Has(titan, "tensor_parallel_degree = 8")) << titan;
  EXPECT_TRUE(Has(titan, "pipeline_parallel_degree = 4")) << titan;
  // DeepSpeed refuses ZeRO-2 with a pipeline (pipe/engine.py:76-77): the same plan at ZeRO-1.
  Scenario z1 = s;
  z1.plan.zero = 1;
  std::vector<std::string> notes;
  const std::string ds = Text(ExportDeepSpeed(z1, &notes));
  // 128 sequences = micro 1 x 64 accumulation steps x DP 2. DeepSpeedConfig would check a
  // train_batch_size against all 64 ranks without an mpu (deepspeed/runtime/config.py:925-940 at
  // edaa72212), so with TP and PP it is left for DeepSpeed to derive, and a note says why.
  EXPECT_FALSE(Has(ds, "\"train_batch_size\"")) << ds;
  EXPECT_TRUE(Has(ds, "\"train_micro_batch_size_per_gpu\": 1")) << ds;
  EXPECT_TRUE(Has(ds, "\"gradient_accumulation_steps\": 64")) << ds;
  bool said = false;
  for (const std::string& n : notes) said |= Has(n, "train_batch_size left out (128 sequences");
  EXPECT_TRUE(said);
  // ZeRO-1/2 gather the updated weights inside the optimizer step (stage_1_and_2.py:2396): the
  // plan's overlapped gather is not what this run does, and a note says so.
  bool gather_said = false;
  for (const std::string& n : notes) gather_said |= Has(n, "stage_1_and_2.py:2396");
  EXPECT_TRUE(gather_said);
  z1.plan.overlap_param_gather = false;
  notes.clear();
  Text(ExportDeepSpeed(z1, &notes));
  for (const std::string& n : notes) EXPECT_FALSE(Has(n, "stage_1_and_2.py:2396")) << n;
  // Data parallel alone: DeepSpeed's world size is the DP size, and the global batch is written.
  Scenario dp = s;
  dp.plan.tp = dp.plan.pp = dp.plan.vpp = 1;
  dp.plan.dp = 64;
  dp.plan.schedule = Schedule::k1F1B;
  dp.plan.sequence_parallel = false;
  dp.plan.stage_layers.clear();
  dp.plan.zero = 3;
  std::vector<std::string> dp_notes;
  EXPECT_TRUE(Has(Text(ExportDeepSpeed(dp, &dp_notes)), "\"train_batch_size\": 128"));
}

// Megatron-LM's own rules at kMegatronCommit (d98e8a64, megatron/training/arguments.py unless
// another file is named), each checked on the export it shapes.
TEST(ExportTest, MegatronWritesTheEnvironmentAndLauncherItAsserts) {
  Scenario s = Llama70B();
  const std::string h100 = Text(ExportMegatron(s));
  // The first line names the commit; TP 8 on Hopper without FSDP asserts
  // CUDA_DEVICE_MAX_CONNECTIONS == "1" (arguments.py:1477); 64 GPUs on 8-GPU nodes: 8 nodes.
  EXPECT_EQ(h100.rfind("# Megatron-LM d98e8a64 arguments:", 0), 0u) << h100;
  EXPECT_TRUE(Has(h100, "\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n")) << h100;
  EXPECT_TRUE(Has(h100, "torchrun --nproc-per-node 8 --nnodes 8 pretrain_gpt.py")) << h100;
  // --overlap-param-gather needs the distributed optimizer and --overlap-grad-reduce (1024-1029).
  EXPECT_TRUE(Has(h100, "--use-distributed-optimizer")) << h100;
  EXPECT_TRUE(Has(h100, "--overlap-param-gather")) << h100;
  // A plan that overlaps the parameter all-gather but not the gradient reduction (MegaScale's
  // kind) is refused, naming the rule (1028-1029), rather than written without the overlap.
  s.plan.overlap_grad_reduce = false;
  const auto refused = ExportMegatron(s);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Has(refused.status().message(), "arguments.py:1028-1029")) << refused.status().ToString();
  EXPECT_TRUE(Has(refused.status().message(), "nearest plan it runs: --no-overlap-param-gather"));
  s.plan.overlap_param_gather = false;
  EXPECT_FALSE(Has(Text(ExportMegatron(s)), "--overlap-param-gather"));
  // The distributed optimizer's FP8 parameter gather is Megatron-LM's --fp8-param-gather
  // (arguments.py:2016); torchtitan gathers FP8 weights under FSDP2 only and refuses it.
  {
    Scenario fp8 = Llama70B();
    fp8.plan.precision = Dtype::kFp8;
    EXPECT_FALSE(Has(Text(ExportMegatron(fp8)), "--fp8-param-gather"));
    fp8.plan.fp8_param_gather = true;
    EXPECT_TRUE(Has(Text(ExportMegatron(fp8)), "--fp8-param-gather"));
    Scenario titan_plan = Llama70BOneFOneB();  // ZeRO 2, which torchtitan runs as FSDP2 without resharding
    titan_plan.plan.precision = Dtype::kFp8;
    titan_plan.plan.fp8_param_gather = true;
    const auto titan = ExportTorchtitan(titan_plan);
    ASSERT_FALSE(titan.ok());
    EXPECT_TRUE(Has(titan.status().message(), "plan.fp8_param_gather")) << titan.status().ToString();
    EXPECT_TRUE(Has(titan.status().message(), "nearest plan it runs: the plan without --fp8-param-gather"));
    // FP8 attention: Megatron-LM's --fp8-dot-product-attention; torchtitan has none (refused).
    fp8.plan.fp8_attention = true;
    EXPECT_TRUE(Has(Text(ExportMegatron(fp8)), "--fp8-dot-product-attention"));
    titan_plan.plan.fp8_param_gather = false;
    titan_plan.plan.fp8_attention = true;
    const auto titan_dpa = ExportTorchtitan(titan_plan);
    ASSERT_FALSE(titan_dpa.ok());
    EXPECT_TRUE(Has(titan_dpa.status().message(), "nearest plan it runs: the plan without --fp8-attention"));
  }
  // The rank order: NeMo's and Megatron-LM's data-parallel-last mapping is an argument; an order
  // Megatron-LM cannot build is refused; Slurm segments are a note on the launch.
  {
    Scenario dp_last = s;
    ASSERT_TRUE(ParsePlacement("tp-cp-ep-pp-dp", &dp_last.plan.placement));
    dp_last.plan.segment_nodes = 2;
    const std::string text = Text(ExportMegatron(dp_last));
    EXPECT_TRUE(Has(text, "--use-tp-pp-dp-mapping"));
    EXPECT_TRUE(Has(text, "sbatch --segment 2"));
    EXPECT_FALSE(Has(Text(ExportMegatron(s)), "--use-tp-pp-dp-mapping"));
    Scenario odd = s;
    ASSERT_TRUE(ParsePlacement("pp-tp-cp-ep-dp", &odd.plan.placement));
    const auto refused = ExportMegatron(odd);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(Has(refused.status().message(), "plan.placement pp-tp-cp-ep-dp")) << refused.status().ToString();
  }
  EXPECT_FALSE(Has(Text(ExportMegatron(s)), "--overlap-grad-reduce"));
  // PyTorch's AsyncTP has no Megatron-LM flag: refused, naming Transformer Engine's overlap.
  // Losses Megatron-LM does not have (torchtitan's upcast and compiled ones, FlashAttention's
  // Triton one) are refused, not written as its default.
  for (CrossEntropy ce : {CrossEntropy::kUpcast, CrossEntropy::kFlash, CrossEntropy::kCompiled}) {
    Scenario other = s;
    other.plan.cross_entropy = ce;
    const auto refused_loss = ExportMegatron(other);
    ASSERT_FALSE(refused_loss.ok()) << Name(ce);
    EXPECT_TRUE(Has(refused_loss.status().message(), "nearest plan it runs: --cross-entropy fused"))
        << refused_loss.status().message();
  }
  Scenario async = s;
  ASSERT_EQ(async.plan.tp, 8);
  async.plan.tp_overlap = TpOverlap::kAsync;
  const auto no_async = ExportMegatron(async);
  ASSERT_FALSE(no_async.ok());
  EXPECT_TRUE(Has(no_async.status().message(), "nearest plan it runs: --tp-overlap full"))
      << no_async.status().message();
  // Blackwell has no such requirement (arguments.py:1455: "no longer exists since the Blackwell
  // architecture").
  s.gpu = *LoadGpu("b200");
  EXPECT_FALSE(Has(Text(ExportMegatron(s)), "CUDA_DEVICE_MAX_CONNECTIONS=1"));
}

TEST(ExportTest, MegatronShardsZeroTwoAndThreeWithMegatronFsdpEvenWithPipelines) {
  // ZeRO-3 with PP 4: PyTorch FSDP2 refuses pipeline parallelism (arguments.py:1033) while
  // Megatron-FSDP takes it, with the fsdp_dtensor checkpoint format (1169) and
  // CUDA_DEVICE_MAX_CONNECTIONS not 1 (1166).
  Scenario s = Llama70B();
  s.plan.zero = 3;
  ASSERT_EQ(PlanErrors(s), "");
  const std::string z3 = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(z3, "--use-megatron-fsdp")) << z3;
  EXPECT_TRUE(Has(z3, "--data-parallel-sharding-strategy optim_grads_params")) << z3;
  EXPECT_TRUE(Has(z3, "--ckpt-format fsdp_dtensor")) << z3;
  EXPECT_FALSE(Has(z3, "--use-torch-fsdp2")) << z3;
  EXPECT_FALSE(Has(z3, "export CUDA_DEVICE_MAX_CONNECTIONS=1")) << z3;
  s.plan.zero = 2;  // sharded gradients and optimizer states: optim_grads (3190)
  EXPECT_TRUE(Has(Text(ExportMegatron(s)), "--data-parallel-sharding-strategy optim_grads \\"));
}

TEST(ExportTest, MegatronRunsHsdpAsDistributedOptimizerInstances) {
  // HSDP with shard groups of 8 over DP 32: 32 / 8 = 4 replicas, which Megatron calls
  // distributed-optimizer instances (--num-distributed-optimizer-instances, arguments.py:3216):
  // the partial data-parallel group is dp*cp / instances = 8 ranks (parallel_state.py:922-929).
  // Under ZeRO-3 it is Megatron-FSDP's Hybrid FSDP (on when instances > 1,
  // mcore_fsdp_adapter.py:346) with whole copies across replicas (--outer-dp-sharding-strategy
  // no_shard, 3193); under ZeRO-1 the distributed optimizer's.
  Scenario s = Llama70B();
  s.plan.tp = 8;
  s.plan.pp = s.plan.vpp = 1;
  s.plan.schedule = Schedule::k1F1B;
  s.plan.dp = 32;
  s.plan.gpus = 256;
  s.plan.global_batch = 256;
  s.plan.stage_layers.clear();
  s.plan.sharding = Sharding::kHsdp;
  s.plan.hsdp_shard_size = 8;
  s.plan.zero = 3;
  ASSERT_EQ(PlanErrors(s), "");
  const std::string z3 = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(z3, "--use-megatron-fsdp")) << z3;
  EXPECT_TRUE(Has(z3, "--num-distributed-optimizer-instances 4")) << z3;
  EXPECT_TRUE(Has(z3, "--outer-dp-sharding-strategy no_shard")) << z3;
  s.plan.zero = 1;
  const std::string z1 = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(z1, "--use-distributed-optimizer")) << z1;
  EXPECT_TRUE(Has(z1, "--num-distributed-optimizer-instances 4")) << z1;
  EXPECT_FALSE(Has(z1, "--outer-dp-sharding-strategy")) << z1;
  // DeepSpeed's hybrid sharding is MiCS, ZeRO-3's only (engine.py:1706): mics_shard_size 8 at
  // ZeRO-3 (not ZeRO++'s zero_hpz_partition_size, which leaves gradients and optimizer state
  // sharded over all ranks), refused at ZeRO-1.
  std::vector<std::string> notes;
  const auto ds1 = ExportDeepSpeed(s, &notes);
  ASSERT_FALSE(ds1.ok());
  EXPECT_TRUE(Has(ds1.status().message(), "MiCS")) << ds1.status().ToString();
  s.plan.zero = 3;
  const std::string ds3 = Text(ExportDeepSpeed(s, &notes));
  EXPECT_TRUE(Has(ds3, "\"mics_shard_size\": 8")) << ds3;
  EXPECT_FALSE(Has(ds3, "zero_hpz_partition_size")) << ds3;
  // Without HSDP no instances are written (Megatron's default, 1).
  s.plan.sharding = Sharding::kFsdp;
  s.plan.hsdp_shard_size = 0;
  EXPECT_FALSE(Has(Text(ExportMegatron(s)), "--num-distributed-optimizer-instances"));
}

TEST(ExportTest, MegatronRefusesHsdpWhoseExpertGroupDoesNotDivide) {
  // Mixtral 8x7B, EP 8 over DP 16: the expert data-parallel group is tp*cp*dp / (ep*etp) = 2.
  // HSDP shard 2 makes 16 / 2 = 8 instances, and 2 is not divisible by 8
  // (parallel_state.py:1447-1449).
  Scenario s;
  s.model = *LoadModel("mixtral-8x7b");
  s.gpu = *LoadGpu("h100-sxm");
  s.cluster = *LoadCluster("dgx-h100");
  s.plan.dp = 16;
  s.plan.ep = 8;
  s.plan.gpus = 16;
  s.plan.zero = 1;
  s.plan.sharding = Sharding::kHsdp;
  s.plan.hsdp_shard_size = 2;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 64;
  ASSERT_EQ(PlanErrors(s), "");
  const auto r = ExportMegatron(s);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status().message(),
                  "expert data-parallel size 2 must be divisible by "
                  "--num-distributed-optimizer-instances 8"))
      << r.status().ToString();
  EXPECT_TRUE(Has(r.status().message(), "parallel_state.py:1447-1449"));
  // Shard 8: 2 instances, which divide 2.
  s.plan.hsdp_shard_size = 8;
  EXPECT_TRUE(Has(Text(ExportMegatron(s)), "--num-distributed-optimizer-instances 2"));
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
  const std::string offload = Text(ExportMegatron(s));
  // Megatron-Core runs 1F1B or interleaved 1F1B (schedules.py:161-168): DualPipe is refused.
  s.plan.offload_optimizer = OffloadTarget::kNone;
  s.plan.vpp = 1;
  s.plan.schedule = Schedule::kDualPipe;
  refused("megatron/core/pipeline_parallel/schedules.py:161-168");
  EXPECT_TRUE(Has(offload, "--use-precision-aware-optimizer")) << offload;
  EXPECT_TRUE(Has(offload, "--optimizer-cpu-offload")) << offload;
}

TEST(ExportTest, ActivationOffloadIsMegatronsNumLayersAndRefusedElsewhere) {
  // Llama 3 70B on 64 GB200s with Megatron-FSDP (ZeRO-3), pp 1, 40 layers' activations in host
  // memory: Megatron-LM's --cpu-offloading-num-layers 40 (arguments.py:1950-1951 turns
  // cpu_offloading on); torchtitan's enable_cpu_offload moves FSDP's states, not activations,
  // and DeepSpeed's cpu_checkpointing moves recomputed checkpoints: both refuse, naming why.
  Scenario s = On("llama3-70b", "gb200", "gb200-nvl72");
  s.plan.gpus = 64;
  s.plan.dp = 64;
  s.plan.zero = 3;
  s.plan.micro_batch = 2;
  s.plan.seq_len = 8192;
  s.plan.global_batch = 256;
  s.plan.offload_activation_layers = 40;
  ASSERT_EQ(PlanErrors(s), "");
  const std::string megatron = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(megatron, "--cpu-offloading-num-layers 40")) << megatron;
  ExpectRefused(ExportTorchtitan(s), "no activation offloading");
  ExpectRefused(ExportTorchtitanPython(s), "no activation offloading");
  std::vector<std::string> notes;
  ExpectRefused(ExportDeepSpeed(s, &notes), "cpu_checkpointing");
}

TEST(ExportTest, FineGrainedOffloadingIsMegatronsOffloadModulesAndRefusedElsewhere) {
  // Mixtral 8x7B on 8 H100s at EP 8 offloading the experts' fc1 inputs and core attention's saved
  // tensors: Megatron-LM's --fine-grained-activation-offloading --offload-modules core_attn
  // expert_fc1 (TransformerConfig fields, transformer_config.py:1323-1328); torchtitan and DeepSpeed
  // have no such offloading and refuse.
  Scenario s = On("mixtral-8x7b", "h100-sxm", "dgx-h100");
  s.plan.gpus = 8;
  s.plan.dp = 8;
  s.plan.ep = 8;
  s.plan.zero = 1;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 64;
  s.plan.offload_modules = OffloadBit(OffloadModule::kExpertFc1) | OffloadBit(OffloadModule::kCoreAttn);
  ASSERT_EQ(PlanErrors(s), "");
  const std::string megatron = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(megatron, "--fine-grained-activation-offloading")) << megatron;
  EXPECT_TRUE(Has(megatron, "--offload-modules core_attn expert_fc1")) << megatron;
  std::vector<std::string> notes;
  ExpectRefused(ExportDeepSpeed(s, &notes), "no fine-grained activation offloading");
  Scenario l = On("llama3-8b", "h100-sxm", "dgx-h100");
  l.plan = s.plan;
  l.plan.ep = 1;
  l.plan.zero = 3;
  l.plan.offload_modules = OffloadBit(OffloadModule::kCoreAttn);
  ASSERT_EQ(PlanErrors(l), "");
  ExpectRefused(ExportTorchtitan(l), "no fine-grained activation offloading");
  ExpectRefused(ExportTorchtitanPython(l), "no fine-grained activation offloading");
}

TEST(ExportTest, CheckpointsInHostMemoryAreDeepSpeedsCpuCheckpointingAndRefusedElsewhere) {
  // GPT 175B as DeepSpeed's 2022 Azure runs trained it (ZeRO-3 over 256 A100s, full recomputation,
  // the checkpoints in host memory): DeepSpeed's activation_checkpointing writes cpu_checkpointing
  // true; Megatron-LM's CPU offloading and torchtitan's enable_cpu_offload have no such mode and
  // refuse, naming what they offload instead.
  Scenario s = On("gpt3-175b", "a100-80g", "dgx-a100");
  s.plan.gpus = 256;
  s.plan.dp = 256;
  s.plan.zero = 3;
  s.plan.micro_batch = 32;
  s.plan.seq_len = 512;
  s.plan.global_batch = 8192;
  s.plan.recompute = Recompute::kFull;
  s.plan.offload_checkpoints = true;
  ASSERT_EQ(PlanErrors(s), "");
  std::vector<std::string> notes;
  const std::string ds = Text(ExportDeepSpeed(s, &notes));
  EXPECT_TRUE(Has(ds, R"("cpu_checkpointing": true)")) << ds;
  ExpectRefused(ExportMegatron(s), "no checkpoints in host memory");
  // torchtitan defines no GPT-3: the same plan of a model it does.
  Scenario l = On("llama3-70b", "a100-80g", "dgx-a100");
  l.plan = s.plan;
  l.plan.seq_len = 8192;
  l.plan.micro_batch = 1;
  l.plan.global_batch = 256;
  ASSERT_EQ(PlanErrors(l), "");
  ExpectRefused(ExportTorchtitan(l), "no checkpoints in host memory");
  ExpectRefused(ExportTorchtitanPython(l), "no checkpoints in host memory");
  s.plan.offload_checkpoints = false;
  EXPECT_TRUE(Has(Text(ExportDeepSpeed(s, &notes)), R"("cpu_checkpointing": false)"));
}

TEST(ExportTest, MaxTextsRematPolicyIsSaidNotExportedAsModules) {
  // Llama 3 70B on 128 H100s as dgxc-benchmarking's MaxText runs it (FSDP, micro batch 2,
  // save_qkv_proj): Megatron-LM has no such module list, so the export keeps --recompute-granularity
  // selective with its default (core_attn) and says why, as it does for torchtitan's per-op policy.
  Scenario s = On("llama3-70b", "h100-sxm", "dgx-h100");
  s.plan.gpus = 128;
  s.plan.dp = 128;
  s.plan.zero = 3;
  s.plan.micro_batch = 2;
  s.plan.seq_len = 8192;
  s.plan.global_batch = 256;
  s.plan.recompute = Recompute::kSelective;
  s.plan.recompute_modules = ModuleBit(RecomputeModule::kSaveQkvProj);
  ASSERT_EQ(PlanErrors(s), "");
  const std::string megatron = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(megatron, "--recompute-granularity selective")) << megatron;
  EXPECT_FALSE(Has(megatron, "--recompute-modules")) << megatron;
  EXPECT_TRUE(Has(megatron, "[save_qkv_proj]: MaxText's remat policy has no Megatron-LM equivalent")) << megatron;
}

TEST(ExportTest, CheckpointEarlyStopIsSaidWhereTheFrameworksCheckpointRerunsTheWholeLayer) {
  // Llama 3 8B on 8 H100s, FSDP, full recomputation as PyTorch's non-reentrant checkpoint replays
  // it (early stop before w2): Megatron-LM's and DeepSpeed's checkpoints are reentrant and rerun
  // the whole layer, so their exports keep full recomputation and say the plan costs less.
  Scenario s = On("llama3-8b", "h100-sxm", "dgx-h100");
  s.plan.gpus = 8;
  s.plan.dp = 8;
  s.plan.zero = 3;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 8;
  s.plan.recompute = Recompute::kFull;
  s.plan.recompute_early_stop = true;
  ASSERT_EQ(PlanErrors(s), "");
  const std::string megatron = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(megatron, "--recompute-granularity full")) << megatron;
  EXPECT_TRUE(Has(megatron, "recompute early stop: Megatron-LM's checkpoint (tensor_parallel.checkpoint) is reentrant"))
      << megatron;
  std::vector<std::string> notes;
  ASSERT_TRUE(ExportDeepSpeed(s, &notes).ok());
  bool said = false;
  for (const auto& n : notes) said |= n.rfind("recompute early stop: DeepSpeed's checkpoint is reentrant", 0) == 0;
  EXPECT_TRUE(said);
}

TEST(ExportTest, LatentMoeAndASharedMtpModuleAreMegatronArguments) {
  // A transformer with a latent MoE and one MTP module used at both depths: Megatron-LM's
  // --moe-latent-size and --mtp-use-repeated-layer (TransformerConfig fields, arguments as every
  // field is); DeepSpeed's MoE layer routes hidden-size tokens and refuses it.
  Scenario s = Qwen3MoeOnOneNode();
  s.model.moe->latent_size = 512;
  s.model.mtp_layers = 2;
  s.model.mtp_shared = true;
  ASSERT_EQ(PlanErrors(s), "");
  const std::string megatron = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(megatron, "--moe-latent-size 512")) << megatron;
  EXPECT_TRUE(Has(megatron, "--mtp-num-layers 2")) << megatron;
  EXPECT_TRUE(Has(megatron, "--mtp-use-repeated-layer")) << megatron;
  std::vector<std::string> notes;
  ExpectRefused(ExportDeepSpeed(s, &notes), "no latent MoE");
}

TEST(ExportTest, MegatronRefusesChunkedAttention) {
  // Llama 4's chunked attention is Megatron-Bridge's layer (Llama4SelfAttention), not a
  // TransformerConfig field pretrain_gpt.py's layers read: refused, naming it.
  Scenario s = On("llama4-maverick", "h100-sxm", "dgx-h100");
  s.plan.gpus = 512;
  s.plan.tp = 4;
  s.plan.dp = 128;
  s.plan.ep = 128;
  s.plan.etp = 4;
  s.plan.zero = 1;
  s.plan.sequence_parallel = true;
  s.plan.seq_len = 8192;
  s.plan.global_batch = 1024;
  ExpectRefused(ExportMegatron(s), "no chunked attention");
}

TEST(ExportTest, MegatronRunsFp8WithThePlansScalingRecipe) {
  // TransformerConfig.fp8 (--fp8-format) and fp8_recipe (transformer_config.py:587-600): the
  // plan's delayed / current / block scaling as Transformer Engine's delayed / tensorwise /
  // blockwise recipes.
  Scenario s = Llama70B();
  s.plan.precision = Dtype::kFp8;
  EXPECT_TRUE(Has(Text(ExportMegatron(s)), "--fp8-format hybrid \\\n  --fp8-recipe delayed"));
  s.plan.fp8_scaling = Fp8Scaling::kCurrent;
  EXPECT_TRUE(Has(Text(ExportMegatron(s)), "--fp8-recipe tensorwise"));
  s.plan.fp8_scaling = Fp8Scaling::kBlock;
  EXPECT_TRUE(Has(Text(ExportMegatron(s)), "--fp8-recipe blockwise"));
}

TEST(ExportTest, Bf16LayersAreMegatronsFirstLastLayersFlagsAndRefusedByTorchtitan) {
  // TransformerConfig.first_last_layers_bf16 with its two counts (flags of the transformer group,
  // arguments.py:2373 at d98e8a64); torchtitan's exporters convert every linear but the head with
  // torchao's float8: refused.
  Scenario s = Llama70B();
  s.plan.precision = Dtype::kFp8;
  s.plan.fp8_scaling = Fp8Scaling::kCurrent;
  EXPECT_FALSE(Has(Text(ExportMegatron(s)), "--first-last-layers-bf16"));
  s.plan.bf16_layers_at_end = 2;
  const std::string text = Text(ExportMegatron(s));
  EXPECT_TRUE(
      Has(text, "--first-last-layers-bf16 \\\n  --num-layers-at-start-in-bf16 0 \\\n  --num-layers-at-end-in-bf16 2"))
      << text;
  ExpectRefused(ExportTorchtitan(s), "plan.bf16_layers_at_start/_at_end");
  ExpectRefused(ExportTorchtitanPython(s), "plan.bf16_layers_at_start/_at_end");
}

TEST(ExportTest, Nvfp4IsMegatronsFp4FormatAndNoOtherExportersRecipe) {
  // TransformerConfig.fp4 as --fp4-format e2m1, fp4_recipe "nvfp4" by default
  // (transformer_config.py:673-679 at d98e8a64), BF16 elsewhere. The torchtitan and DeepSpeed
  // exporters map no NVFP4 recipe: refused, naming the nearest precision they write.
  Scenario s = Llama70B();
  s.plan.precision = Dtype::kNvfp4;
  const std::string text = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(text, "--bf16 \\\n  --fp4-format e2m1")) << text;
  EXPECT_FALSE(Has(text, "--fp8-format"));
  ExpectRefused(ExportTorchtitan(s), "no NVFP4 recipe");
  ExpectRefused(ExportTorchtitanPython(s), "no NVFP4 recipe");
  std::vector<std::string> notes;
  ExpectRefused(ExportDeepSpeed(s, &notes), "no NVFP4 recipe");
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
  ASSERT_EQ(PlanErrors(s), "");
  EXPECT_TRUE(Has(Text(ExportMegatron(s)), "--qk-layernorm"));
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
  ASSERT_EQ(PlanErrors(s), "");
  const std::string out = Text(ExportMegatron(s));
  for (const char* want : {"--multi-latent-attention", "--q-lora-rank 1536", "--kv-lora-rank 512", "--qk-head-dim 128",
                           "--qk-pos-emb-head-dim 64", "--v-head-dim 128", "--moe-layer-freq \"([0]*3+[1]*58)\"",
                           "--moe-router-score-function sigmoid", "--moe-router-enable-expert-bias"})
    EXPECT_TRUE(Has(out, want)) << want << "\n" << out;
  EXPECT_FALSE(Has(out, "--group-query-attention")) << out;
}

// Megatron's own reading of a layout (pipeline_parallel_layer_layout.py parse_str_to_list at
// d98e8a64): commas dropped, "x*n" unrolled, stages split at "|".
std::vector<std::string> UnrollLayout(std::string text) {
  text = std::regex_replace(text, std::regex(","), "");
  std::smatch mt;
  while (std::regex_search(text, mt, std::regex(R"((.)\*(\d+))")))
    text = mt.prefix().str() + std::string(static_cast<size_t>(std::stoi(mt[2].str())), mt[1].str()[0]) +
           mt.suffix().str();
  std::vector<std::string> stages(1);
  for (char ch : text) {
    if (ch == '|') stages.emplace_back();
    else stages.back() += ch;
  }
  return stages;
}

TEST(ExportTest, MegatronWritesAnUnevenInterleavedSplitAsItsLayout) {
  // Llama 3 405B, 126 layers over pp 8 x vpp 2 = 16 chunks (7, 8 x 14, 7): not first/last counts
  // with an even middle, so a --pipeline-model-parallel-layout. Megatron's checks
  // (validate_layer_layout, pipeline_parallel_layer_layout.py:86-112): stages a multiple of pp,
  // E first and once, L last and once, one t per decoder layer; no vpp argument beside it
  // (arguments.py:926-938) and no first/last counts (transformer_config.py:2245).
  Scenario s = Llama405BInterleaved(/*pp=*/8, /*vpp=*/2, /*dp=*/8, /*zero=*/1, /*global_batch=*/64);
  PlanSpec& p = s.plan;
  ApplyDefaultStageSplit(s.model, &p, nullptr);
  ASSERT_EQ(p.stage_layers.size(), 16u);
  Diagnostics d;
  ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.all().front().ToString();
  const std::string out = Text(ExportMegatron(s));
  const std::smatch found = [&] {
    std::smatch x;
    std::regex_search(out, x, std::regex("--pipeline-model-parallel-layout \"([^\"]+)\""));
    return x;
  }();
  ASSERT_FALSE(found.empty()) << out;
  const std::vector<std::string> stages = UnrollLayout(found[1].str());
  ASSERT_EQ(stages.size(), 16u);
  EXPECT_EQ(stages.size() % static_cast<size_t>(p.pp), 0u);
  std::string flat;
  for (const std::string& st : stages) flat += st;
  EXPECT_EQ(flat.front(), 'E');
  EXPECT_EQ(flat.back(), 'L');
  EXPECT_EQ(std::count(flat.begin(), flat.end(), 'E'), 1);
  EXPECT_EQ(std::count(flat.begin(), flat.end(), 'L'), 1);
  EXPECT_EQ(std::count(flat.begin(), flat.end(), 't'), 126);
  for (size_t i = 0; i < stages.size(); ++i)  // the plan's layers per chunk, in model order
    EXPECT_EQ(std::count(stages[i].begin(), stages[i].end(), 't'), p.stage_layers[i]) << i;
  EXPECT_FALSE(Has(out, "--num-virtual-stages-per-pipeline-rank")) << out;
  EXPECT_FALSE(Has(out, "--decoder-first-pipeline-num-layers")) << out;
}

TEST(ExportTest, EmptyEndChunksHoldTheEmbeddingAndTheHeadAlone) {
  // Llama 3 as its paper trained it (§3.3.2: the first chunk holds the embedding alone, the last
  // the output projection and loss alone): 126 layers over pp 16 x vpp 8, one per middle chunk.
  // Megatron-Core takes it as a layout "E|t|...|t|L" (empty stages are allowed,
  // pipeline_parallel_layer_layout.py:86-112); torchtitan as model parts, the first
  // ["tok_embeddings"] and the last ["norm", "output"].
  Scenario s = Llama405BInterleaved(/*pp=*/16, /*vpp=*/8, /*dp=*/128, /*zero=*/2, /*global_batch=*/2048);
  PlanSpec& p = s.plan;
  p.stage_layers.assign(128, 1);
  p.stage_layers.front() = 0;
  p.stage_layers.back() = 0;
  Diagnostics d;
  ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.all().front().ToString();
  const std::string out = Text(ExportMegatron(s));
  std::smatch found;
  ASSERT_TRUE(std::regex_search(out, found, std::regex("--pipeline-model-parallel-layout \"([^\"]+)\""))) << out;
  const std::vector<std::string> stages = UnrollLayout(found[1].str());
  ASSERT_EQ(stages.size(), 128u);
  EXPECT_EQ(stages.front(), "E");
  EXPECT_EQ(stages[1], "t");
  EXPECT_EQ(stages.back(), "L");
  const std::string toml = Text(ExportTorchtitan(s));
  EXPECT_TRUE(Has(toml, "module_fqns_per_model_part = [[\"tok_embeddings\"], [\"layers.0\"], [\"layers.1\"]")) << toml;
  EXPECT_TRUE(Has(toml, "[\"layers.125\"], [\"norm\", \"output\"]]")) << toml;
}

// DeepSpeed's own rules, read at edaa72212 (deepspeed/runtime/...): refused plans name the rule;
// offload gets what DeepSpeed needs to start; MoE models with an AutoEP preset get its section.
TEST(ExportTest, DeepSpeedRefusesWhatItCannotRunAndCompletesOffload) {
  Scenario s = Llama70B();  // PP 4
  std::vector<std::string> notes;
  s.plan.zero = 3;  // pipe/engine.py:76-77: ZeRO-2 and -3 are incompatible with pipeline parallelism
  auto piped = ExportDeepSpeed(s, &notes);
  ASSERT_FALSE(piped.ok());
  EXPECT_TRUE(Has(piped.status().message(), "deepspeed (edaa72212)")) << piped.status().message();
  EXPECT_TRUE(Has(piped.status().message(), "deepspeed/runtime/pipe/engine.py:76-77")) << piped.status().message();
  EXPECT_TRUE(Has(piped.status().message(), "nearest plan it runs: --zero 1")) << piped.status().message();
  // Mixtral with ZeRO-3 and no pipeline: AutoEP's mixtral preset runs it (engine.py
  // _validate_zero3_moe_compatibility: AutoEP-managed MoE layers pass at stage 3).
  Scenario moe;
  moe.model = *LoadModel("mixtral-8x7b");
  moe.gpu = *LoadGpu("h100-sxm");
  moe.cluster = *LoadCluster("dgx-h100");
  moe.plan.gpus = 64;
  moe.plan.dp = 64;
  moe.plan.ep = 8;
  moe.plan.zero = 3;
  moe.plan.seq_len = 4096;
  moe.plan.global_batch = 64;
  notes.clear();
  const std::string autoep = Text(ExportDeepSpeed(moe, &notes));
  EXPECT_TRUE(Has(autoep, "\"expert_parallel\": {")) << autoep;
  EXPECT_TRUE(Has(autoep, "\"autoep_size\": 8")) << autoep;
  EXPECT_TRUE(Has(autoep, "\"preset_model\": \"mixtral\"")) << autoep;
  EXPECT_TRUE(Has(autoep, "\"stage\": 3")) << autoep;
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes.front().rfind("DeepSpeed edaa72212", 0), 0u) << notes.front();
  // AutoEP at ZeRO-3 beside AutoTP (engine.py:1894-1897), or with expert TP at any stage
  // (auto_ep_folding.py:214-217): refused.
  moe.plan.tp = 2;
  moe.plan.dp = 32;
  auto with_tp = ExportDeepSpeed(moe, &notes);
  ASSERT_FALSE(with_tp.ok());
  EXPECT_TRUE(Has(with_tp.status().message(), "AutoEP with ZeRO Stage 3 does not support AutoTP yet"))
      << with_tp.status().message();
  EXPECT_TRUE(Has(with_tp.status().message(), "engine.py:1894-1897")) << with_tp.status().message();
  moe.plan.tp = 1;
  moe.plan.dp = 64;
  moe.plan.etp = 2;
  auto with_etp = ExportDeepSpeed(moe, &notes);
  ASSERT_FALSE(with_etp.ok());
  EXPECT_TRUE(Has(with_etp.status().message(), "auto_ep_folding.py:214-217")) << with_etp.status().message();
  EXPECT_TRUE(Has(with_etp.status().message(), "nearest plan it runs: --etp 1")) << with_etp.status().message();
  // AutoEP beside AutoTP at ZeRO-1 with a pipeline: folding supports pp 1 only (auto_ep_folding.py:206-208).
  moe.plan.etp = 1;
  moe.plan.zero = 1;
  moe.plan.tp = 2;
  moe.plan.pp = 2;
  moe.plan.dp = 16;
  auto tp_pp = ExportDeepSpeed(moe, &notes);
  ASSERT_FALSE(tp_pp.ok());
  EXPECT_TRUE(Has(tp_pp.status().message(), "auto_ep_folding.py:206-208")) << tp_pp.status().message();
  moe.plan.tp = moe.plan.pp = 1;
  moe.plan.dp = 64;
  moe.plan.zero = 3;
  // gpt-oss has no AutoEP preset: native deepspeed.moe.layer.MoE, which ZeRO-3 refuses
  // (engine.py:1889-1891); at ZeRO-2 the note says to build it.
  moe.plan.etp = 1;
  moe.model = *LoadModel("gpt-oss-120b");
  auto native = ExportDeepSpeed(moe, &notes);
  ASSERT_FALSE(native.ok());
  EXPECT_TRUE(Has(native.status().message(), "Native DeepSpeed MoE is not supported with ZeRO Stage 3"))
      << native.status().message();
  EXPECT_TRUE(Has(native.status().message(), "nearest plan it runs: --zero 2")) << native.status().message();
  moe.plan.zero = 2;
  notes.clear();
  const std::string native2 = Text(ExportDeepSpeed(moe, &notes));
  EXPECT_FALSE(Has(native2, "expert_parallel")) << native2;
  bool says_native = false;
  for (const auto& n : notes) says_native |= Has(n, "deepspeed.moe.layer.MoE(ep_size=8)");
  EXPECT_TRUE(says_native);
  // DeepSeek-V3's aux-loss-free expert bias: AutoEP's deepseek_v3 preset does not update it, said.
  moe.model = *LoadModel("deepseek-v3");
  moe.plan.dp = 64;
  notes.clear();
  const std::string dsv3 = Text(ExportDeepSpeed(moe, &notes));
  EXPECT_TRUE(Has(dsv3, "\"preset_model\": \"deepseek_v3\"")) << dsv3;
  bool says_bias = false;
  for (const auto& n : notes) says_bias |= Has(n, "aux-loss-free expert bias");
  EXPECT_TRUE(says_bias);
  // ZeRO-1 with the optimizer on NVMe: a path (offload_config.py: None by default) and DeepSpeed's
  // own optimizer in the config (a client optimizer raises under ZeRO-Offload, engine.py:2040-2045).
  // Interleaving: the pipeline engine runs its own 1F1B schedule, one stage per rank
  // (pipe/engine.py:389).
  s.plan.zero = 1;
  ExpectRefused(ExportDeepSpeed(s, &notes), "pipe/engine.py:389");
  // Ring context parallelism: DeepSpeed's is Ulysses (deepspeed/sequence/layer.py).
  s = Llama70BOneFOneB();
  s.plan.zero = 1;
  s.plan.cp = 2;
  s.plan.dp = 1;
  ExpectRefused(ExportDeepSpeed(s, &notes), "nearest plan it runs: --cp-kind ulysses");
  s = Llama70BOneFOneB();
  s.plan.zero = 1;
  s.plan.offload_optimizer = OffloadTarget::kNvme;
  notes.clear();
  const std::string nvme = Text(ExportDeepSpeed(s, &notes));
  EXPECT_TRUE(Has(nvme, "\"nvme_path\": \"/local_nvme\"")) << nvme;
  EXPECT_TRUE(Has(nvme, "\"optimizer\": {")) << nvme;
  EXPECT_TRUE(Has(nvme, "\"type\": \"AdamW\"")) << nvme;
}

// The gradient dtype picks DeepSpeed's optimizer wrapper (engine.py get_data_types and
// _do_optimizer_sanity_check at 38327e07f): the export writes data_types.grad_accum_dtype so the
// run holds the gradients the plan costs, and refuses the pairs that run another wrapper.
TEST(ExportTest, DeepSpeedAccumulatesGradientsInThePlansDtype) {
  Scenario s = Llama70BOneFOneB();  // bf16, PP 4
  s.plan.zero = 1;
  ASSERT_EQ(s.plan.dtypes.grads, Dtype::kBf16);
  std::vector<std::string> notes;
  // bf16 gradients under ZeRO-1: DeepSpeed's default with ZeRO on, written out.
  const std::string zero1 = Text(ExportDeepSpeed(s, &notes));
  EXPECT_TRUE(Has(zero1, "\"grad_accum_dtype\": \"bf16\"")) << zero1;
  // fp32 gradients under ZeRO-1 without offload: the BF16_Optimizer, which keeps the bf16
  // gradients beside its fp32 buffer; the plan must say so (--keep-lp-grads).
  s.plan.dtypes.grads = Dtype::kFp32;
  ExpectRefused(ExportDeepSpeed(s, &notes), "nearest plan it runs: --keep-lp-grads, or --grads-dtype bf16");
  s.plan.keep_lp_grads = true;
  ASSERT_EQ(PlanErrors(s), "");
  notes.clear();
  const std::string bf16_opt = Text(ExportDeepSpeed(s, &notes));
  EXPECT_TRUE(Has(bf16_opt, "\"grad_accum_dtype\": \"fp32\"")) << bf16_opt;
  bool says_wrapper = false;
  for (const auto& n : notes) says_wrapper |= Has(n, "BF16_Optimizer");
  EXPECT_TRUE(says_wrapper);
  // At ZeRO 0 the same wrapper partitions the optimizer states as ZeRO-1 does: not the plan's.
  s.plan.zero = 0;
  ExpectRefused(ExportDeepSpeed(s, &notes), "--zero 1 --keep-lp-grads");
  // ZeRO-2 without a pipeline: the ZeRO optimizer's own fp32 accumulation buffer; it keeps no
  // bf16 gradients, so --keep-lp-grads is refused and the plain fp32 plan is written.
  s.plan.pp = 1;
  s.plan.dp = 8;
  s.plan.stage_layers.clear();
  s.plan.zero = 2;
  ExpectRefused(ExportDeepSpeed(s, &notes), "--keep-lp-grads is DeepSpeed's BF16_Optimizer");
  s.plan.keep_lp_grads = false;
  const std::string zero2 = Text(ExportDeepSpeed(s, &notes));
  EXPECT_TRUE(Has(zero2, "\"grad_accum_dtype\": \"fp32\"")) << zero2;
  // bf16 gradients without ZeRO or a pipeline: DeepSpeed raises.
  s.plan.dtypes.grads = Dtype::kBf16;
  s.plan.zero = 0;
  ExpectRefused(ExportDeepSpeed(s, &notes), "enable ZeRO to use Bfloat16 gradient accumulation");
  // fp16 with fp32 gradients at ZeRO 0: "unsupported mix".
  s.plan.precision = Dtype::kFp16;
  s.plan.dtypes.weights = Dtype::kFp16;
  s.plan.dtypes.grads = Dtype::kFp32;
  ExpectRefused(ExportDeepSpeed(s, &notes), "unsupported mix of model dtype and gradient accumulation type");
  s.plan.dtypes.grads = Dtype::kFp16;
  EXPECT_TRUE(Has(Text(ExportDeepSpeed(s, &notes)), "\"grad_accum_dtype\": \"fp16\""));
  // The plan's default bf16 gradients under an fp16 model: the model's own 16-bit type (the same
  // bytes), said in a note.
  s.plan.dtypes.grads = Dtype::kBf16;
  notes.clear();
  EXPECT_TRUE(Has(Text(ExportDeepSpeed(s, &notes)), "\"grad_accum_dtype\": \"fp16\""));
  bool says_type = false;
  for (const auto& n : notes) says_type |= Has(n, "the plan's bf16 gradients in the fp16 model's own 16-bit type");
  EXPECT_TRUE(says_type);
  // An fp32 model with bf16 gradients at ZeRO 0: DeepSpeed raises; under ZeRO-1 it accumulates them.
  s.plan.precision = Dtype::kFp32;
  s.plan.dtypes.weights = Dtype::kFp32;
  ExpectRefused(ExportDeepSpeed(s, &notes), "unsupported mix");
  s.plan.zero = 1;
  EXPECT_TRUE(Has(Text(ExportDeepSpeed(s, &notes)), "\"grad_accum_dtype\": \"bf16\""));
}

// Each context-parallel kind under its framework's name, or refused naming the rule.
TEST(ExportTest, ContextParallelKindsMapToEachFrameworksOwn) {
  Scenario s = Llama70BOneFOneB();
  s.plan.zero = 2;
  s.plan.cp = 2;
  s.plan.dp = 1;
  auto with = [&](CpKind kind) {
    Scenario v = s;
    v.plan.cp_kind = kind;
    return v;
  };
  // Megatron-LM --cp-comm-type p2p | a2a | allgather (megatron/training/arguments.py:3221).
  EXPECT_TRUE(Has(Text(ExportMegatron(with(CpKind::kRing))), "--cp-comm-type p2p"));
  EXPECT_TRUE(Has(Text(ExportMegatron(with(CpKind::kUlysses))), "--cp-comm-type a2a"));
  EXPECT_TRUE(Has(Text(ExportMegatron(with(CpKind::kAllGather))), "--cp-comm-type allgather"));
  // torchtitan 238fa99: the K/V rotation is written, since its default is "allgather"
  // (job_config.py:446): "alltoall" passes each shard on, the ring.
  EXPECT_TRUE(Has(Text(ExportTorchtitan(with(CpKind::kRing))), "context_parallel_rotate_method = \"alltoall\""));
  EXPECT_TRUE(Has(Text(ExportTorchtitan(with(CpKind::kAllGather))), "context_parallel_rotate_method = \"allgather\""));
  // DeepSpeed's sequence parallelism is Ulysses alone (deepspeed/sequence/layer.py:351).
  Scenario ds = with(CpKind::kAllGather);
  ds.plan.pp = 1;
  ds.plan.gpus = 16;
  ds.plan.zero = 1;
  std::vector<std::string> notes;
  auto refused = ExportDeepSpeed(ds, &notes);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Has(refused.status().message(), "layer.py:351")) << refused.status().message();
  EXPECT_TRUE(Has(refused.status().message(), "nearest plan it runs: --cp-kind ulysses")) << refused.status().message();
}

// torchtitan's rules at 238fa99, the last commit that reads TOML.
TEST(ExportTest, TorchtitanNamesItsModelSplitsModuleByModuleAndRefusesWhatItCannotRun) {
  Scenario s = Llama70B();  // TP 8, PP 4 x vpp 2
  // ZeRO-1: FSDP2 has no optimizer-only sharding (fsdp_reshard_after_forward, job_config.py:336).
  ExpectRefused(ExportTorchtitan(s), "nearest plan it runs: --zero 2");
  s.plan.zero = 2;
  const std::string toml = Text(ExportTorchtitan(s));
  EXPECT_EQ(toml.rfind("# torchtitan job config (TOML) for torchtitan 238fa99", 0), 0u) << toml;
  // [model]: torchtitan's llama3 "70B" flavor (torchtitan/models/llama3/__init__.py:82), not its
  // debug model.
  EXPECT_TRUE(Has(toml, "[model]\nname = \"llama3\"\nflavor = \"70B\"")) << toml;
  // The split chunk by chunk (module_fqns_per_model_part, job_config.py:367): 80 layers over 8
  // chunks of 10, the embedding on the first, norm and output on the last.
  EXPECT_TRUE(Has(toml, "module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\"")) << toml;
  EXPECT_TRUE(Has(toml, "[\"layers.70\", \"layers.71\"")) << toml;
  EXPECT_TRUE(Has(toml, "\"layers.79\", \"norm\", \"output\"]]")) << toml;
  EXPECT_FALSE(Has(toml, "pipeline_parallel_split_points")) << toml;  // gone at 238fa99
  // Async TP needs the compiled model (distributed/tensor_parallel.py:20-23); FP8 is torchao's
  // converter (components/quantization/float8.py:238).
  s.plan.tp_overlap = TpOverlap::kFull;  // Transformer Engine's userbuffers: Megatron's, refused
  auto userbuffers = ExportTorchtitan(s);
  ASSERT_FALSE(userbuffers.ok());
  EXPECT_TRUE(Has(userbuffers.status().message(), "nearest plan it runs: --tp-overlap async"))
      << userbuffers.status().message();
  s.plan.tp_overlap = TpOverlap::kAsync;
  s.plan.precision = Dtype::kFp8;
  const std::string async = Text(ExportTorchtitan(s));
  EXPECT_TRUE(Has(async, "enable_async_tensor_parallel = true")) << async;
  EXPECT_TRUE(Has(async, "[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]")) << async;
  EXPECT_TRUE(Has(async, "converters = [\"quantize.linear.float8\"]")) << async;
  // ZeRO-0 with TP and PP is DDP, which torchtitan refuses beyond 1D (models/llama3/infra/
  // parallelize.py:151).
  s.plan.zero = 0;
  auto ddp = ExportTorchtitan(s);
  ASSERT_FALSE(ddp.ok());
  EXPECT_TRUE(Has(ddp.status().message(), "parallelize.py:151")) << ddp.status().message();
  EXPECT_TRUE(Has(ddp.status().message(), "nearest plan it runs: --zero 3")) << ddp.status().message();
  // Ulysses context parallelism: torchtitan's is ring attention (job_config.py:446).
  Scenario ulysses = Llama70BOneFOneB();
  ulysses.plan.cp = 2;
  ulysses.plan.dp = 1;
  ulysses.plan.cp_kind = CpKind::kUlysses;
  auto u = ExportTorchtitan(ulysses);
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(Has(u.status().message(), "nearest plan it runs: --cp-kind ring")) << u.status().message();
  // DualPipe: PyTorch's DualPipeV is V-shaped, two of 2 x pp stages per rank with one copy of the
  // weights (distributed/pipeline_parallel.py:455-460), not DualPipe's two copies.
  Scenario dual = Llama70BOneFOneB();
  dual.plan.schedule = Schedule::kDualPipe;
  auto dv = ExportTorchtitan(dual);
  ASSERT_FALSE(dv.ok());
  EXPECT_TRUE(Has(dv.status().message(), "pipeline_parallel.py:455-460")) << dv.status().message();
  // A model torchtitan does not define: refused rather than training its debug model.
  s.plan.zero = 2;
  s.model.name = "llama2-70b";
  ExpectRefused(ExportTorchtitan(s), "no model definition for llama2-70b");
}

// torchtitan's Python configuration at kTorchtitanPythonCommit (b5bcd76c6); CFG is
// torchtitan/config/configs.py there.
TEST(ExportTest, TorchtitanPythonConfigurationReproducesThePlan) {
  Scenario s = Llama70B();  // TP 8, PP 4 x vpp 2, DP 2, mbs 1, gbs 128, seq 8192
  s.plan.zero = 2;
  s.plan.recompute = Recompute::kFull;
  const std::string py = Text(ExportTorchtitanPython(s));
  EXPECT_EQ(py.rfind("# torchtitan configuration (Python) for torchtitan b5bcd76c6", 0), 0u) << py;
  // Loaded by module name (manager.py:129-158), from torchtitan's own 70B configuration
  // (models/llama3/config_registry.py:267) with the plan's model flavor.
  EXPECT_TRUE(Has(py, "-m torchtitan.train --module meshplan_plan --config meshplan_plan")) << py;
  EXPECT_TRUE(Has(py, "from torchtitan.models.llama3.config_registry import llama3_70b\n")) << py;
  EXPECT_TRUE(Has(py, "def meshplan_plan() -> Trainer.Config:\n    config = llama3_70b()\n")) << py;
  EXPECT_TRUE(Has(py, "config.model_spec = model_registry(\"70B\")")) << py;
  // Degrees (CFG:122-282); ZeRO-2 keeps the gathered weights (fsdp_reshard_after_forward, CFG:145).
  EXPECT_TRUE(Has(py, "p.data_parallel_shard_degree = 2\n")) << py;
  EXPECT_TRUE(Has(py, "p.fsdp_reshard_after_forward = \"never\"")) << py;
  EXPECT_TRUE(Has(py, "p.tensor_parallel_degree = 8\n")) << py;
  EXPECT_TRUE(Has(py, "p.pipeline_parallel_schedule = \"Interleaved1F1B\"")) << py;
  // 128 sequences over DP 2 at micro batch 1: 64 microbatches, one accumulation step
  // (trainer.py:409-428): tokens per microbatch 8192, per step 128 x 8192 = 1048576.
  EXPECT_TRUE(Has(py, "p.num_pp_microbatches = 64\n")) << py;
  EXPECT_TRUE(Has(py, "t.num_tokens_per_microbatch_per_dp_rank = 8192\n")) << py;
  EXPECT_TRUE(Has(py, "t.num_tokens_per_train_step = 1048576\n")) << py;
  EXPECT_TRUE(Has(py, "t.max_context_length = 8192\n")) << py;
  // 8 parts of 10 layers, the output layer named lm_head (distributed/pipeline_parallel.py:384-387).
  EXPECT_TRUE(Has(py, "\"layers.79\", \"norm\", \"lm_head\"]]")) << py;
  // PP refuses CUDA graphs (trainer.py:172-176); full recomputation is FullAC.
  EXPECT_TRUE(Has(py, "t.disable_cuda_graphs = True\n")) << py;
  EXPECT_TRUE(Has(py, "config.activation_checkpoint = FullAC.Config()\n")) << py;
  // Removed since 238fa99: none of its keys is written.
  for (const char* gone : {"pipeline_parallel_microbatch_size", "local_batch_size", "seq_len",
                           "context_parallel_rotate", "expert_tensor_parallel_degree"})
    EXPECT_FALSE(Has(py, gone)) << gone;
  // Async TP is the compiler's (CFG:298, 306-313: it needs compile with "model"); FP8 is torchao's
  // rowwise converter on the model spec (components/quantization/float8.py:56-72).
  s.plan.tp_overlap = TpOverlap::kAsync;
  s.plan.precision = Dtype::kFp8;
  s.plan.elementwise = Elementwise::kEager;
  const std::string fp8 = Text(ExportTorchtitanPython(s));
  EXPECT_TRUE(Has(fp8, "config.compile.enable = True\n")) << fp8;
  EXPECT_TRUE(Has(fp8, "config.compile.enable_async_tensor_parallel = True\n")) << fp8;
  EXPECT_TRUE(Has(fp8,
                  "converters=[Float8LinearConverter.Config(filter_fqns=[\"lm_head\"], "
                  "model_compile_enabled=True)]"))
      << fp8;
  // ZeRO-3 reshards after the forward even under PP (the default would not).
  s.plan.zero = 3;
  EXPECT_TRUE(Has(Text(ExportTorchtitanPython(s)), "p.fsdp_reshard_after_forward = \"always\""));
  // The Triton RMSNorm is gone from that torchtitan (37c4b8181): exported eager, and said.
  s.plan.tp_overlap = TpOverlap::kBackward;
  s.plan.elementwise = Elementwise::kEagerFusedNorm;
  const std::string triton = Text(ExportTorchtitanPython(s));
  EXPECT_TRUE(Has(triton, "config.compile.enable = False\n")) << triton;
  EXPECT_TRUE(Has(triton, "# note: elementwise eager-fused-norm: torchtitan removed its Triton RMSNorm")) << triton;
}

TEST(ExportTest, TorchtitanPythonConfigurationRefusesWhatItsVersionCannotRun) {
  Scenario s = Llama70BOneFOneB();  // ZeRO-2, 1F1B over PP 4
  auto refused = [&](const Scenario& v, const std::string& rule) {
    const auto r = ExportTorchtitanPython(v);
    ASSERT_FALSE(r.ok()) << rule;
    EXPECT_TRUE(Has(r.status().message(), "torchtitan (b5bcd76c6)")) << r.status().message();
    EXPECT_TRUE(Has(r.status().message(), rule)) << r.status().message();
  };
  Scenario v = s;
  v.plan.zero = 1;  // no optimizer-only sharding (CFG:145)
  refused(v, "nearest plan it runs: --zero 2");
  v = s;
  v.plan.schedule = Schedule::kZeroBubble;  // PyTorch's are multi-stage (pipeline_parallel.py:252-257)
  refused(v, "pipeline_parallel.py:252-257");
  v = s;
  v.plan.tp = 16;  // 8 KV heads (models/common/decoder.py)
  v.plan.gpus = 128;
  refused(v, "must divide the 8 KV heads");
  // CP all-gathers K and V (decoder_sharding.py:275-284): Ulysses and the ring refused, the
  // all-gather CP written.
  v = s;
  v.plan.cp = 2;
  v.plan.dp = 1;
  v.plan.cp_kind = CpKind::kUlysses;
  refused(v, "nearest plan it runs: --cp-kind allgather");
  v.plan.cp_kind = CpKind::kRing;
  refused(v, "decoder_sharding.py:275-284), no ring; nearest plan it runs: --cp-kind allgather");
  v.plan.cp_kind = CpKind::kAllGather;
  const std::string gathered = Text(ExportTorchtitanPython(v));
  EXPECT_TRUE(Has(gathered, "p.context_parallel_degree = 2\n")) << gathered;
  // Qwen3 235B-A22B has a flavor but no function: derived from the 30B-A3B one, and said so.
  Scenario q;
  q.model = *LoadModel("qwen3-235b-a22b");
  q.gpu = *LoadGpu("h100-sxm");
  q.cluster = *LoadCluster("dgx-h100");
  q.plan.tp = 4;
  q.plan.ep = 8;
  q.plan.etp = 1;
  q.plan.pp = 2;
  q.plan.dp = 32;
  q.plan.gpus = 256;
  q.plan.zero = 2;
  q.plan.sequence_parallel = true;
  q.plan.seq_len = 4096;
  q.plan.global_batch = 512;
  Diagnostics d;
  ValidatePlan(q.plan, q.model, q.gpu, q.cluster, &d);
  ASSERT_FALSE(d.has_errors()) << d.ToStatus().ToString();
  const std::string qwen = Text(ExportTorchtitanPython(q));
  EXPECT_TRUE(Has(qwen, "config = qwen3_30b_a3b()")) << qwen;
  EXPECT_TRUE(Has(qwen, "config.model_spec = model_registry(\"235B-A22B\")")) << qwen;
  EXPECT_TRUE(Has(qwen, "p.expert_parallel_degree = 8\n")) << qwen;
  // EP borrows from dp_shard x cp x tp = 32 x 4 (parallel_dims.py:187-192); expert TP was removed.
  q.plan.etp = 4;
  refused(q, "--etp 1");
}

TEST(ExportTest, MegatronWritesTheSlidingWindow) {
  // gpt-oss: 128-key windows (Transformer Engine's left window 127: it counts the keys before the
  // query) and a global layer every 2nd layer (--window-attn-skip-freq 2).
  Scenario s = Llama70B();
  s.model = *LoadModel("gpt-oss-120b");
  s.plan.tp = 1;
  s.plan.pp = 4;
  s.plan.vpp = 1;
  s.plan.dp = 16;
  s.plan.ep = 8;
  s.plan.sequence_parallel = false;
  s.plan.schedule = Schedule::k1F1B;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 1280;
  const std::string text = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(text, "--window-size 127,0")) << text;
  EXPECT_TRUE(Has(text, "--window-attn-skip-freq 2")) << text;
  // A model without windows writes neither.
  const std::string llama = Text(ExportMegatron(Llama70B()));
  EXPECT_FALSE(Has(llama, "--window-size"));
  EXPECT_FALSE(Has(llama, "--window-attn-skip-freq"));
}

TEST(ExportTest, MegatronPlacesTheRouterProbabilitiesAsItsMoeCodeDoes) {
  // plan.moe_probs against Megatron-LM at the export's commit (a descendant of 2659630721, which
  // moved the weighting into the experts' activation, experts.py bias_act_func): fused is its
  // default (--bias-swiglu-fusion), activation is --no-bias-swiglu-fusion, unpermute (Megatron-Core
  // before 0.13) is refused; GELU experts always multiply the activation's output, so fused is
  // refused for them.
  Scenario s = Qwen3MoeOnOneNode();
  ASSERT_EQ(PlanErrors(s), "");
  EXPECT_FALSE(Has(Text(ExportMegatron(s)), "bias-swiglu-fusion"));
  s.plan.moe_probs = MoeProbs::kActivation;
  const std::string unfused = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(unfused, "--no-bias-swiglu-fusion")) << unfused;
  EXPECT_FALSE(Has(unfused, "dense layers' and shared experts'")) << unfused;  // every layer MoE, none shared
  s.plan.moe_probs = MoeProbs::kUnpermute;
  ExpectRefused(ExportMegatron(s), "plan.moe_probs unpermute");
  ExpectRefused(ExportMegatron(s), "nearest plan it runs: --moe-probs fused");
  s.model.mlp = MlpKind::kGelu;
  ExpectRefused(ExportMegatron(s), "nearest plan it runs: --moe-probs activation");
  s.plan.moe_probs = MoeProbs::kFused;
  ExpectRefused(ExportMegatron(s), "GELU experts multiply the activation's output");
  s.plan.moe_probs = MoeProbs::kActivation;
  const std::string gelu = Text(ExportMegatron(s));
  EXPECT_TRUE(Has(gelu, "--num-experts 128")) << gelu;
  EXPECT_FALSE(Has(gelu, "bias-swiglu-fusion")) << gelu;
}

}  // namespace
}  // namespace meshplan::core
