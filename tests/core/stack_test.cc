// Software-stack presets (presets/stacks) and the FLOP counts sources print with.
#include "core/stack.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/presets.h"

namespace meshplan::core {
namespace {

TEST(StackTest, EveryBuiltInStackParsesAndNamesItsSource) {
  const auto names = PresetNames("stacks");
  ASSERT_GE(names.size(), 5u);
  for (const auto& n : names) {
    auto s = LoadStack(n);
    ASSERT_TRUE(s.ok()) << n << ": " << s.status().ToString();
    EXPECT_EQ(s->name, n);
    EXPECT_FALSE(s->source.empty()) << n;
    EXPECT_FALSE(s->applies_to.empty()) << n;
    EXPECT_FALSE(s->recognized_by.empty()) << n;
  }
}

TEST(StackTest, RecordsFindTheStackThatProducedThem) {
  // Narayanan 2021's own runs: Megatron-LM of SC21, no async TP, no wgrad fusion, fp16.
  auto t1 = StackForRecord("narayanan2021-t1-1.7B");
  ASSERT_TRUE(t1);
  EXPECT_EQ(t1->name, "megatron-lm-2021");
  EXPECT_EQ(t1->tp_overlap, TpOverlap::kNone);
  EXPECT_FALSE(t1->grad_accum_fusion);
  EXPECT_EQ(t1->flop_count, FlopCount::kNarayananEq3);
  // The same table's ZeRO-3 rows ran DeepSpeed.
  auto z3 = StackForRecord("narayanan2021-t2-zero3-174.6B-384gpu");
  ASSERT_TRUE(z3);
  EXPECT_EQ(z3->name, "deepspeed-zero3-2021");
  EXPECT_EQ(z3->zero, 3);
  EXPECT_EQ(StackForRecord("megascale-t2-megatron-lm-256gpu")->name, "megatron-lm-2022");
  EXPECT_EQ(StackForRecord("megascale-t2-megascale-256gpu")->name, "megascale-2024");
  // Megatron-Bridge: 25.11 on is its own stack, 25.09 Megatron-Core's of 2024 (with its release's
  // defaults); the longest prefix wins where megatron-core-2024's "megatron-bridge-" also names it.
  EXPECT_EQ(StackForRecord("megatron-bridge-2511-dgx-h100-llama3-8b-8gpu")->name, "megatron-bridge-2025");
  EXPECT_EQ(StackForRecord("megatron-bridge-260401-dgx-gb300-llama3-70b-64gpu-fp8")->name, "megatron-bridge-2025");
  EXPECT_EQ(StackForRecord("megatron-bridge-2509-dgx-gb200-llama3-8b-8gpu")->name, "megatron-core-2024");
  // Megatron-Core reduces gradients in fp32 (core_r0.8.0 arguments.py forces it for bf16;
  // Megatron-Bridge's Llama 3 H100 recipes set ddp.grad_reduce_in_fp32).
  EXPECT_EQ(StackForRecord("megatronlm-readme-h100-2024-1.7B")->grads, Dtype::kFp32);
  EXPECT_FALSE(StackForRecord("someone-else-2030-run"));
}

TEST(StackTest, AutoModelDispatchesThroughDeepEpWithItsFakeBalancedGate) {
  // presets/stacks/nemo-automodel-2025.json: DeepEP (each token once per rank) and the
  // benchmarks' FakeBalancedGate (k consecutive experts per token); every other stack keeps
  // Megatron-Core's all-to-all dispatcher and uniform routing.
  auto s = StackForRecord("automodel-2510-h100-deepseek-v3-671b-256gpu");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "nemo-automodel-2025");
  EXPECT_EQ(s->moe_dispatcher, MoeDispatcher::kFlex);
  EXPECT_EQ(s->moe_routing, MoeRouting::kRoundRobin);
  EXPECT_EQ(s->zero3_gather, Zero3Gather::kFsdp2);
  PlanSpec p;
  ModelSpec m;
  ApplyStack(*s, &m, &p);
  EXPECT_EQ(p.moe_dispatcher, MoeDispatcher::kFlex);
  EXPECT_EQ(p.moe_routing, MoeRouting::kRoundRobin);
  auto bridge = StackForRecord("megatron-bridge-2511-dgx-h100-qwen3-30b-a3b-16gpu");
  ASSERT_TRUE(bridge);
  EXPECT_EQ(bridge->moe_dispatcher, MoeDispatcher::kAllToAll);
  EXPECT_EQ(bridge->moe_routing, MoeRouting::kUniform);
}

TEST(StackTest, SourcesNameTheirStackWithoutTheRecordId) {
  // SoftwareStack::recognized_by: the record's source text (paper, repo, path, table, row...)
  // names the software; the most specific entry wins.
  auto named = [](const std::string& source, const std::string& row = "") {
    auto s = StackForSource(source, row);
    return s ? s->name : std::string("none");
  };
  EXPECT_EQ(named("pytorch/torchtitan | benchmarks/llama3_h100_202412_torchtitan.md"), "torchtitan-2024");
  // torchtitan's June 2025 benchmark files: the 2025 stack (its loss compiled with the model).
  EXPECT_EQ(named("pytorch/torchtitan | benchmarks/llama3_8b_h200_2025-06_torchtitan.md"), "torchtitan-2025");
  EXPECT_EQ(named("torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"), "torchtitan-2025");
  EXPECT_EQ(named("LLM Foundry benchmarking README (github.com/mosaicml/llm-foundry)"), "llm-foundry-2023");
  // NeMo AutoModel (PyTorch FSDP2 with DeepEP) is not NeMo's Megatron-Core stack.
  EXPECT_EQ(named("NeMo AutoModel performance summary (github.com/NVIDIA-NeMo/Automodel)"), "nemo-automodel-2025");
  // One paper, two stacks: MegaScale's own rows and its Megatron-LM baseline, by the row.
  const std::string megascale = "MegaScale (ByteDance, arXiv 2402.15627v1, NSDI 2024) | Table 2";
  EXPECT_EQ(named(megascale, "MegaScale, 256 GPUs, batch 768"), "megascale-2024");
  EXPECT_EQ(named(megascale, "Megatron-LM, 256 GPUs, batch 768"), "megatron-lm-2022");
  // Narayanan 2021 Table 2: PTD-P is Megatron-LM of SC21, the ZeRO-3 rows DeepSpeed.
  const std::string sc21 = "Narayanan2021-MegatronLM-PTDP (SC21, arXiv 2104.04473)";
  EXPECT_EQ(named(sc21, "PTD parallelism, 174.6B, 384 GPUs"), "megatron-lm-2021");
  EXPECT_EQ(named(sc21, "ZeRO-3 without model parallelism, 174.6B, 384 GPUs"), "deepspeed-zero3-2021");
  EXPECT_EQ(named("Korthikanti2022-ReducingActivationRecomputation (arXiv 2205.05198)", "530B"), "megatron-lm-2022");
  EXPECT_EQ(named("Megatron-Bridge performance summary (github.com/NVIDIA-NeMo/Megatron-Bridge)"),
            "megatron-core-2024");
  // A release named beside Megatron-Bridge: 25.11 on is megatron-bridge-2025 (two terms beat one),
  // the patch releases (26.02.01) with their release.
  const std::string bridge = "Megatron-Bridge performance summary (github.com/NVIDIA-NeMo/Megatron-Bridge) | ";
  EXPECT_EQ(named(bridge + "## 25.11 NeMo Container / ### Pre-Training Performance"), "megatron-bridge-2025");
  EXPECT_EQ(named(bridge + "## 26.02.01 NeMo Container / ### Pre-Training Performance"), "megatron-bridge-2025");
  EXPECT_EQ(named(bridge + "## 25.09 NeMo Container / ### Pre-Training Performance"), "megatron-core-2024");
  EXPECT_EQ(named("Megatron-Bridge 26.06 (NeMo container nvcr.io/nvidia/nemo:26.06), DGX-B200"),
            "megatron-bridge-2025");
  EXPECT_EQ(named("Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B"), "megatron-deepspeed-2022");
  // dgxc-benchmarking publishes NeMo runs (Megatron-Core) and JAX MaxText runs: only the former.
  EXPECT_EQ(named("NVIDIA dgxc-benchmarking v25.03 | line 12: Nemotron4 15b"), "megatron-core-2024");
  EXPECT_EQ(named("NVIDIA dgxc-benchmarking v25.03 | line 51: Maxtext Llama3 70b BF16"), "none");
  EXPECT_EQ(named("someone's blog about a run"), "none");
  EXPECT_STREQ(kDefaultStack, "megatron-core-2024");
  ASSERT_TRUE(LoadStack(kDefaultStack).ok());
}

// A stack file's problems come all at once, one line each, and a key meshplan does not read is
// refused with the nearest known one: before, the first problem alone was reported and a misspelt
// key ("overlap_grad_reduc") was ignored, leaving the default (overlap on) in its place.
TEST(StackTest, AStackFileReportsEveryProblemAndRefusesUnknownKeys) {
  const std::string base = R"({"name": "x", "source": "s", "notes": "n")";
  auto r = ParseStackJson(base + R"(, "zero": 4, "dropout": "no", "overlap_grad_reduc": false, "foo": 1})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "stack.dropout: must be true or false\n"
            "stack.zero: must be 0, 1, 2 or 3\n"
            "stack.foo: is not a known field\n"
            "stack.overlap_grad_reduc: is not a known field (did you mean \"overlap_grad_reduce\"?)");
  r = ParseStackJson(R"({"source": "", "zero": "one"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "stack.name: must be a non-empty string\nstack.source: must be a non-empty string\n"
            "stack.notes: must be a non-empty string\nstack.zero: must be 0, 1, 2 or 3");
  EXPECT_EQ(ParseStackJson("{not json").status().message(), "stack: not valid JSON");
  // cuda_context_source cites cuda_context_bytes for a reader: accepted as a string, read by no code.
  EXPECT_TRUE(ParseStackJson(base + R"(, "cuda_context_bytes": 1024, "cuda_context_source": "a log"})").ok());
  EXPECT_FALSE(ParseStackJson(base + R"(, "cuda_context_source": 5})").ok());
  // Every built-in stack still parses under the stricter rule.
  for (const char* name : {"deepspeed-zero3-2021", "llama3-2024", "llm-foundry-2023", "megascale-2024",
                           "megatron-bridge-2025", "megatron-core-2024", "megatron-deepspeed-2022", "megatron-lm-2021",
                           "megatron-lm-2022", "nemo-automodel-2025", "torchtitan-2024", "torchtitan-2025"})
    EXPECT_TRUE(LoadStack(name).ok()) << name << ": " << LoadStack(name).status().ToString();
}

TEST(StackTest, BadStackFilesNameTheFieldAndTheRule) {
  const std::string base = R"({"name": "x", "source": "s", "notes": "n")";
  auto bad = [&](const std::string& extra) { return ParseStackJson(base + extra + "}"); };
  ASSERT_TRUE(bad("").ok());
  auto r = bad(R"(, "zero": 4)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.zero: must be 0, 1, 2 or 3"), std::string::npos);
  r = bad(R"(, "precision": "fp32")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.precision"), std::string::npos);
  r = bad(R"(, "tp_overlap": "sometimes")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.tp_overlap: must be one of"), std::string::npos);
  r = bad(R"(, "grads_dtype": "int8")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.grads_dtype: must be fp32, bf16 or fp16"), std::string::npos);
  for (const char* n : {"1", "2.5", "\"two\"", "65"}) {
    r = bad(std::string(R"(, "interleaved_stages_per_rank": )") + n);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_NE(r.status().message().find("stack.interleaved_stages_per_rank: must be an integer from 2 to 64"),
              std::string::npos);
  }
  EXPECT_EQ(bad(R"(, "interleaved_stages_per_rank": 2)")->interleaved_stages_per_rank, 2);
  r = bad(R"(, "compiled_cross_entropy": "jit")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.compiled_cross_entropy: must be one of"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(bad("")->compiled_cross_entropy.has_value());
  EXPECT_EQ(bad(R"(, "compiled_cross_entropy": "compiled")")->compiled_cross_entropy, CrossEntropy::kCompiled);
  r = bad(R"(, "cp_kind": "star")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.cp_kind: must be one of"), std::string::npos) << r.status().message();
  EXPECT_EQ(bad(R"(, "cp_kind": "allgather")")->cp_kind, CpKind::kAllGather);
  EXPECT_EQ(bad("")->cp_kind, CpKind::kRing);
  // The stacks whose context parallelism all-gathers K and V: Llama 3 (§3.3.2) and torchtitan
  // (context_parallel_rotate_method default "allgather" at 9dec370).
  EXPECT_EQ(StackForRecord("llama3-2024-t4-405b-16384gpu-seq131072")->cp_kind, CpKind::kAllGather);
  EXPECT_EQ(StackForRecord("torchtitan-2412-t2-8b-8gpu-fsdp1-cp8-seq256k")->cp_kind, CpKind::kAllGather);
  EXPECT_EQ(StackForRecord("megatron-bridge-2511-dgx-h100-llama3-1-405b-1024gpu")->cp_kind, CpKind::kRing);
  r = bad(R"(, "recognized_by": [{"paper": ["x"]}])");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.recognized_by.paper: unknown key (source, row, unless)"),
            std::string::npos)
      << r.status().message();
  r = bad(R"(, "recognized_by": [{"source": []}])");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.recognized_by.source: must be a non-empty array of strings"),
            std::string::npos);
  r = bad(R"(, "recognized_by": [{"unless": ["x"]}])");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("an entry must list source or row strings"), std::string::npos);
  ASSERT_EQ(bad(R"(, "recognized_by": [{"source": ["Foo"], "row": ["Bar"]}])")->recognized_by.size(), 1u);
  EXPECT_EQ(bad(R"(, "recognized_by": [{"source": ["Foo"]}])")->recognized_by[0].source[0], "foo");  // lower case
  // A stack's own measurement of its CUDA context: a positive byte count up to 64 GiB.
  for (const char* n : {"0", "-5", "1.5", "\"big\"", "68719476737"}) {
    r = bad(std::string(R"(, "cuda_context_bytes": )") + n);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_NE(r.status().message().find("stack.cuda_context_bytes: must be a byte count from 1 to 64 GiB"),
              std::string::npos);
  }
  EXPECT_EQ(bad("")->cuda_context_bytes, 0);
  // BigScience measured its 2022 stack's: 1,573 MiB (chronicles-prequel.md at 9e64ede); the plan
  // takes it, and the summary says it. Stacks without a measurement leave the profile's.
  const auto bloom = StackForRecord("bloom-2022-tr11-176b-384gpu-iter85376");
  ASSERT_TRUE(bloom.has_value());
  EXPECT_EQ(bloom->cuda_context_bytes, 1573LL << 20);
  ModelSpec m;
  PlanSpec p;
  ApplyStack(*bloom, &m, &p);
  EXPECT_EQ(p.cuda_context_bytes, 1573LL << 20);
  EXPECT_NE(StackSummary(*bloom).find("CUDA context 1573 MiB"), std::string::npos) << StackSummary(*bloom);
  PlanSpec q;
  ApplyStack(*StackForRecord("torchtitan-2412-t2-8b-8gpu-fsdp1-cp8-seq256k"), &m, &q);
  EXPECT_EQ(q.cuda_context_bytes, 0);
  // Megatron-Core runs its layers as Transformer Engine's modules; torchtitan and BigScience's
  // Megatron-DeepSpeed do not.
  EXPECT_FALSE(q.transformer_engine);
  EXPECT_FALSE(p.transformer_engine);
  PlanSpec mc;
  const auto core_stack = StackForRecord("megatron-bridge-2511-dgx-h100-llama3-1-405b-1024gpu");
  ApplyStack(*core_stack, &m, &mc);
  EXPECT_TRUE(mc.transformer_engine);
  EXPECT_NE(StackSummary(*core_stack).find("Transformer Engine"), std::string::npos);
  // The MoE layers' host floor is Megatron-Core's measurement: its stack keeps it, torchtitan's
  // (whose MoE host time is not measured) says it has none; a name it does not know is refused.
  EXPECT_EQ(mc.moe_host, MoeHost::kMegatronCore);
  EXPECT_EQ(q.moe_host, MoeHost::kNone);
  EXPECT_EQ(StackSummary(*core_stack).find("no MoE host floor"), std::string::npos);
  EXPECT_NE(StackSummary(*StackForRecord("torchtitan-2412-t2-8b-8gpu-fsdp1-cp8-seq256k")).find("no MoE host floor"),
            std::string::npos);
  r = bad(R"(, "moe_host": "torchtitan")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.moe_host"), std::string::npos);
  // A stack whose model code trains without dropout says so (LLM Foundry's MPT: resid_pdrop 0);
  // the model keeps its own otherwise.
  r = bad(R"(, "dropout": "no")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.dropout"), std::string::npos) << r.status().message();
  EXPECT_FALSE(bad("")->dropout.has_value());
  const auto lf = StackForRecord("llmfoundry-h100-80g-mpt-7b-1024-8gpu");
  ASSERT_TRUE(lf.has_value());
  ModelSpec gpt;
  gpt.dropout = true;
  PlanSpec lp;
  ApplyStack(*lf, &gpt, &lp);
  EXPECT_FALSE(gpt.dropout);
  EXPECT_NE(StackSummary(*lf).find(", no dropout"), std::string::npos) << StackSummary(*lf);
  ModelSpec kept;
  kept.dropout = true;
  ApplyStack(*core_stack, &kept, &lp);
  EXPECT_TRUE(kept.dropout);
  r = bad(R"(, "flop_count": "6N")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.flop_count"), std::string::npos);
  r = ParseStackJson(R"({"name": "x", "source": "s"})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stack.notes"), std::string::npos);
  EXPECT_FALSE(ParseStackJson("[1, 2]").ok());
}

TEST(StackTest, TorchtitanFsdpUnderPipelineParallelismHoldsTheStageUnsharded) {
  // torchtitan 2024 with PP: reshard_after_forward=False and the gradients reduce-scattered once,
  // after the last microbatch: ZeRO-1 (weights bf16 and fp32 gradients whole, master and moments
  // sharded). Llama 3.1 405B at TP 8 x PP 8 x FSDP 8 (torchtitan's Table 5): 126 layers, 16 per
  // stage; per GPU 405.9e9 / 64 params ~ 6.3e9: 2 + 4 bytes each whole, 12 / 8 sharded.
  auto tt = LoadStack("torchtitan-2024");
  ASSERT_TRUE(tt.ok());
  EXPECT_TRUE(tt->zero3_unsharded_under_pp);
  EXPECT_TRUE(tt->microbatches_equal_pp);               // config_manager.py: as many as stages
  EXPECT_EQ(tt->cross_entropy, CrossEntropy::kUpcast);  // train.py: cross_entropy(pred.float())
  EXPECT_TRUE(tt->repeat_kv);                           // models/llama/model.py: repeat_kv before SDPA
  EXPECT_TRUE(tt->keep_pp_outputs);                     // pipelining/stage.py: output_chunks, grad_recv_info
  PlanSpec p;
  p.tp = 8;
  p.pp = 8;
  p.dp = 8;
  ModelSpec m;
  ApplyStack(*tt, &m, &p);
  ASSERT_EQ(p.zero, 3);
  EXPECT_TRUE(p.repeat_kv);
  EXPECT_NE(ApplyStackPipelineSharding(*tt, &p).find("ZeRO-1's memory and traffic"), std::string::npos);
  EXPECT_EQ(p.zero, 1);
  EXPECT_EQ(p.dtypes.grads, Dtype::kFp32);
  EXPECT_FALSE(p.overlap_grad_reduce);
  // Without PP, or in a stack without the rule (Megatron-Core's FSDP reshards per layer): as is.
  PlanSpec q;
  q.dp = 8;
  ApplyStack(*tt, &m, &q);
  EXPECT_EQ(ApplyStackPipelineSharding(*tt, &q), "");
  EXPECT_EQ(q.zero, 3);
  auto mc = LoadStack("megatron-core-2024");
  ASSERT_TRUE(mc.ok());
  PlanSpec r = p;
  r.zero = 3;
  EXPECT_EQ(ApplyStackPipelineSharding(*mc, &r), "");
  EXPECT_EQ(r.zero, 3);
  EXPECT_FALSE(mc->repeat_kv);  // Transformer Engine's attention reads the grouped heads
  // The flag is a boolean, said so otherwise.
  auto bad = ParseStackJson(R"({"name": "x", "source": "s", "notes": "n", "zero3_unsharded_under_pp": 1})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stack.zero3_unsharded_under_pp"), std::string::npos);
  bad = ParseStackJson(R"({"name": "x", "source": "s", "notes": "n", "repeat_kv": "yes"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stack.repeat_kv"), std::string::npos);
}

TEST(StackTest, MegatronStacksPadTheVocabularyAsMegatronDoes) {
  // Megatron-LM's --make-vocab-size-divisible-by (default 128) times the TP size; the PyTorch-native
  // stacks build the model's vocabulary as it is.
  for (const char* name :
       {"megatron-lm-2021", "megatron-lm-2022", "megatron-core-2024", "megatron-deepspeed-2022", "megascale-2024"}) {
    auto s = LoadStack(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_EQ(s->vocab_divisible_by, 128) << name;
    EXPECT_NE(StackSummary(*s).find("vocabulary padded to a multiple of 128 x tp"), std::string::npos) << name;
    ModelSpec m = *LoadModel("gpt3-175b");
    PlanSpec p;
    p.tp = 8;
    ApplyStack(*s, &m, &p);
    EXPECT_EQ(PaddedVocab(m, p), 51200) << name;
  }
  for (const char* name : {"torchtitan-2024", "torchtitan-2025", "llm-foundry-2023", "nemo-automodel-2025"}) {
    auto s = LoadStack(name);
    ASSERT_TRUE(s.ok()) << name;
    ModelSpec m = *LoadModel("gpt3-175b");
    PlanSpec p;
    p.tp = 8;
    ApplyStack(*s, &m, &p);
    EXPECT_EQ(PaddedVocab(m, p), 50257) << name;
  }
}

TEST(StackTest, PyTorchNativeStacksRunTheirTensorParallelismThroughDTensor) {
  // torchtitan's apply_tp (parallelize_llama.py at 9dec370, models/llama3/parallelize_llama.py at
  // 820504e): SequenceParallel, ColwiseParallel and RowwiseParallel on Shard(1), torchao's float8
  // styles under float8; NeMo AutoModel's TP plans the same styles ("DTensor-native"). Megatron's
  // stacks run Megatron-Core's TP; LLM Foundry has no TP.
  for (const char* name : {"torchtitan-2024", "torchtitan-2025", "nemo-automodel-2025"}) {
    auto s = LoadStack(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_TRUE(s->dtensor_tp) << name;
    EXPECT_NE(StackSummary(*s).find("DTensor TP"), std::string::npos) << name;
    PlanSpec p;
    p.tp = 8;
    p.tp_overlap = TpOverlap::kBackward;
    ModelSpec m;
    ApplyStack(*s, &m, &p);
    EXPECT_TRUE(p.dtensor_tp) << name;
    EXPECT_EQ(p.tp_overlap, TpOverlap::kNone) << name;
  }
  for (const char* name : {"megatron-core-2024", "megatron-bridge-2025", "llm-foundry-2023"}) {
    auto s = LoadStack(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_FALSE(s->dtensor_tp) << name;
  }
  auto bad = ParseStackJson(R"({"name": "x", "source": "s", "notes": "n", "dtensor_tp": 1})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stack.dtensor_tp"), std::string::npos) << bad.status().message();
}

TEST(StackTest, TorchtitanRunsItsContextParallelismThroughPyTorchsContextParallel) {
  // torchtitan's CP is torch.distributed.tensor.experimental.context_parallel with the rotate method
  // its config names (torchtitan/utils.py create_context_parallel_ctx at 9dec370: set_rotate_method,
  // then context_parallel; default 'allgather', config_manager.py at 9dec370 and e7c0cae). NeMo
  // AutoModel's CP row runs Transformer Engine's attention (its CP is TE's), Megatron's stacks TE's.
  for (const char* name : {"torchtitan-2024", "torchtitan-2025"}) {
    auto s = LoadStack(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_TRUE(s->torch_cp) << name;
    EXPECT_NE(StackSummary(*s).find("PyTorch's context_parallel"), std::string::npos) << name;
    PlanSpec p;
    p.cp = 4;
    ModelSpec m;
    ApplyStack(*s, &m, &p);
    EXPECT_TRUE(p.torch_cp) << name;
    EXPECT_EQ(p.cp_kind, CpKind::kAllGather) << name;
  }
  for (const char* name : {"nemo-automodel-2025", "megatron-core-2024", "megatron-bridge-2025", "llama3-2024"}) {
    auto s = LoadStack(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_FALSE(s->torch_cp) << name;
  }
  auto bad = ParseStackJson(R"({"name": "x", "source": "s", "notes": "n", "torch_cp": "yes"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stack.torch_cp"), std::string::npos) << bad.status().message();
}

TEST(StackTest, PyTorchStacksStopTheirCheckpointReplayEarlyOnFullRecomputationOnly) {
  // torchtitan wraps each block with torch's non-reentrant checkpoint_wrapper (parallelize_llama.py
  // at 9dec370 and 820504e) and LLM Foundry's MPT yamls ask Composer for the same
  // (activation_checkpointing_reentrant false): under PyTorch >= 2.1, or compiled whole, the replay
  // stops before the MLP's output projection. Megatron-Core's checkpoint is a reentrant Function.
  for (const char* name : {"torchtitan-2024", "torchtitan-2025", "llm-foundry-2023"}) {
    auto s = LoadStack(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_TRUE(s->recompute_early_stop) << name;
    EXPECT_NE(StackSummary(*s).find("full recomputation with the checkpoint early stop"), std::string::npos);
  }
  auto mc = LoadStack("megatron-core-2024");
  ASSERT_TRUE(mc.ok());
  EXPECT_FALSE(mc->recompute_early_stop);
  auto tt = LoadStack("torchtitan-2024");
  ASSERT_TRUE(tt.ok());
  ModelSpec m = *LoadModel("llama3-8b");
  PlanSpec p;
  p.dp = 8;
  ApplyStack(*tt, &m, &p);
  // The stack recomputes nothing by itself: nothing to stop, nothing said.
  EXPECT_EQ(ApplyStackRecomputeEarlyStop(*tt, m, &p), "");
  EXPECT_FALSE(p.recompute_early_stop);
  // On full recomputation it applies, and says so.
  p.recompute = Recompute::kFull;
  EXPECT_NE(ApplyStackRecomputeEarlyStop(*tt, m, &p).find("stack torchtitan-2024: full recomputation stops at"),
            std::string::npos);
  EXPECT_TRUE(p.recompute_early_stop);
  // Under FP8 linear layers it skips nothing: not applied, and why.
  PlanSpec q = p;
  q.recompute_early_stop = false;
  q.precision = Dtype::kFp8;
  EXPECT_EQ(ApplyStackRecomputeEarlyStop(*tt, m, &q),
            "stack torchtitan-2024: checkpoint early stop not applied (FP8 linear layers save their inputs after "
            "their GEMM)");
  EXPECT_FALSE(q.recompute_early_stop);
  // A stack without it leaves full recomputation whole.
  PlanSpec r;
  r.recompute = Recompute::kFull;
  EXPECT_EQ(ApplyStackRecomputeEarlyStop(*mc, m, &r), "");
  EXPECT_FALSE(r.recompute_early_stop);
  // The field is a boolean, said so otherwise.
  auto bad = ParseStackJson(R"({"name": "x", "source": "s", "notes": "n", "recompute_early_stop": "yes"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stack.recompute_early_stop"), std::string::npos);
}

TEST(StackTest, NarayananEq3PerToken) {
  // GPT-3 175B, s 2048, V 51200: 96 l h^2 (1 + s/6h + V/16lh)
  // = 9216 x 150,994,944 x (1 + 0.0277778 + 0.0027127) = 1.433999e12 FLOPs per token, so
  // Narayanan Table 2's 144 TFLOP/s per GPU (ZeRO-3, 384 GPUs) is 100.42 tokens/s per GPU.
  ModelSpec m = *LoadModel("gpt3-175b");
  m.vocab = 51200;  // Narayanan 2021 §5.1
  const double f = SourceFlopsPerToken(FlopCount::kNarayananEq3, m, 2048);
  EXPECT_NEAR(f, 1.433999e12, 1e6);
  EXPECT_NEAR(144e12 / f, 100.42, 0.01);
}

TEST(StackTest, MegatronCountIsKorthikantiAppendixAForAGpt) {
  // MegaScale's 175B (128 heads, V 64000, s 2048): 72 l h^2 (1 + s/6h + V/12lh)
  // = 6912 x 150,994,944 x 1.0322989 = 1.077386e12 per token. Its Table 2 prints both MFU 53.0%
  // (of 312 TFLOP/s) and 40.0 s per 768 x 2048-token step on 256 GPUs: 153.48 and 153.60 tokens/s
  // per GPU, so the count is the one MegaScale divides by.
  ModelSpec m = *LoadModel("gpt3-175b");
  m.heads = m.kv_heads = 128;
  m.head_dim = 96;
  m.vocab = 64000;
  const double f = SourceFlopsPerToken(FlopCount::kMegatron, m, 2048);
  EXPECT_NEAR(f, 1.077386e12, 1e6);
  EXPECT_NEAR(0.53 * 312e12 / f, 768.0 * 2048 / (40.0 * 256), 0.2);
}

TEST(StackTest, PalmCountIsSixNPlusTwelveLHQT) {
  // Chowdhery et al. 2022 Appendix B, as the Llama 3 paper's MFU counts: Llama 3 405B (405,853,388,800
  // parameters; 126 layers of 128 heads x 128) at T = 8192: 6 x 405853388800 + 12 x 126 x 16384 x
  // 8192 = 2.4351e12 + 2.0293e11 = 2.6381e12 FLOPs per token.
  auto m = LoadModel("llama3-405b");
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(SourceFlopsPerToken(FlopCount::kPalm, *m, 8192), 6.0 * 405853388800.0 + 12.0 * 126 * 16384 * 8192);
}

TEST(StackTest, MegatronCountWithGqaAndSwiglu) {
  // Llama 3 8B at s 8192 (Megatron-LM training.py, core_r0.8.0): 12 h^2 [l ((1 + g/a + s/h) q/h
  // + (f/h) 3/2) + V/2h] = 12 x 4096^2 x [32 x (3.25 + 5.25) + 128256/8192]
  // = 201,326,592 x 287.65625 = 57,912,852,480 FLOPs per token.
  const ModelSpec m = *LoadModel("llama3-8b");
  EXPECT_DOUBLE_EQ(SourceFlopsPerToken(FlopCount::kMegatron, m, 8192), 57912852480.0);
}

TEST(StackTest, Megatron2025CountHalvesTheCausalScoresAndCountsMlaAndMtp) {
  // Megatron-LM training.py transformer_flops at 9c5258f109 (the count since 8873b55d6a), per token
  // at s 4096: 6 [h e sum(f) + (L + mtp)(projections + core) + mtp (3h + 2h^2) + h V (1 + mtp)].
  // Qwen3-30B-A3B (h 2048, 32 heads x 128, 4 groups, 48 MoE layers of 8 x 768, V 151936):
  // 6 [2048 x 3 x 294,912 + 48 (2048 x 5120 + 4096 x 2048 + 4096 x 4096) + 2048 x 151936]
  // = 6 x 3,834,380,288 = 23,006,281,728; the old count (s^2 whole) adds 48 x 6 x 4096^2 more, +21.0%.
  auto q30 = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(q30.ok());
  EXPECT_DOUBLE_EQ(SourceFlopsPerToken(FlopCount::kMegatron2025, *q30, 4096), 23006281728.0);
  EXPECT_DOUBLE_EQ(SourceFlopsPerToken(FlopCount::kMegatron, *q30, 4096), 23006281728.0 + 48.0 * 6 * 4096 * 4096);
  // DeepSeek-V3 (MLA: q_lora 1536, kv_lora 512, 128 heads of 128 + 64 rope, v 128; 3 dense layers of
  // 18432, 58 MoE layers of 8 x 2048 + one shared 2048, one MTP module, V 129280): the projections
  // 1536 (7168 + 128 x 192 + 1) + 512 (7168 + 128 x 256 + 1) + 7168 x 64 + 128 x 128 x 7168 =
  // 187,107,328, the core 4096 x 128 x 320 / 2 = 83,886,080, over 62 layers; the MLP 7168 x 3 x
  // (3 x 18432 + 59 x 18432); the MTP 3 x 7168 + 2 x 7168^2; the logits 2 x 7168 x 129280:
  // 259,992,950,784. Megatron-Bridge prints tokens/s and TFLOP/s for the model beside each other
  // (26.06, GB200: 1292 TFLOP/s at 4969 tokens/s, 2.6001e11 FLOPs per token; Qwen3-235B-A22B's rows
  // 1.4805e11 against 148,034,813,952 here).
  auto dsv3 = LoadModel("deepseek-v3");
  ASSERT_TRUE(dsv3.ok());
  EXPECT_DOUBLE_EQ(SourceFlopsPerToken(FlopCount::kMegatron2025, *dsv3, 4096), 259992950784.0);
  EXPECT_NEAR(1292e12 / 4969 / 259992950784.0, 1.0, 2e-4);
  auto q235 = LoadModel("qwen3-235b-a22b");
  ASSERT_TRUE(q235.ok());
  EXPECT_DOUBLE_EQ(SourceFlopsPerToken(FlopCount::kMegatron2025, *q235, 4096), 148034813952.0);
}

// Megatron-Bridge 25.11 to 26.08 (megatron-bridge-2025): megatron-core-2024's DDP, optimizer and
// layers, its pages' TFLOP/s counted with the causal scores halved (megatron-2025; ValidationTest.
// MegatronBridgePrintsTflopsWithMegatronLmsCausalCount), and what its releases set otherwise: the in-place Transformer
// Engine loss, bf16 gradients averaged in the collective, the MoE code after Megatron-LM 2659630721 and a329dd6da5, and
// the FP8 parameter gather where the plan's precision and ZeRO stage allow it.
TEST(StackTest, MegatronBridgeTakesWhatItsReleasesSet) {
  auto mb = LoadStack("megatron-bridge-2025");
  auto mc = LoadStack("megatron-core-2024");
  ASSERT_TRUE(mb.ok() && mc.ok());
  PlanSpec p, q;
  p.tp = q.tp = 2;
  ModelSpec m, n;
  ApplyStack(*mb, &m, &p);
  ApplyStack(*mc, &n, &q);
  EXPECT_EQ(p.cross_entropy, CrossEntropy::kTeInplace);
  EXPECT_EQ(p.dtypes.grads, Dtype::kBf16);
  EXPECT_FALSE(p.grad_prescale);
  EXPECT_EQ(p.moe_probs, MoeProbs::kFused);
  EXPECT_EQ(p.expert_bias, ExpertBias::kPerExpert);
  EXPECT_FALSE(p.fp8_param_gather);  // bf16: nothing to gather in FP8
  EXPECT_EQ(mb->flop_count, FlopCount::kMegatron2025);
  EXPECT_EQ(mc->flop_count, FlopCount::kMegatron);
  // The rest as megatron-core-2024.
  EXPECT_EQ(m.attention, n.attention);
  EXPECT_EQ(p.sequence_parallel, q.sequence_parallel);
  EXPECT_EQ(p.tp_overlap, q.tp_overlap);
  EXPECT_EQ(p.grad_accum_fusion, q.grad_accum_fusion);
  EXPECT_EQ(p.overlap_grad_reduce, q.overlap_grad_reduce);
  EXPECT_EQ(p.overlap_param_gather, q.overlap_param_gather);
  EXPECT_EQ(p.zero, q.zero);
  EXPECT_EQ(p.transformer_engine, q.transformer_engine);
  EXPECT_EQ(p.vocab_divisible_by, q.vocab_divisible_by);
  EXPECT_EQ(p.moe_host, q.moe_host);
  // The FP8 gather once the precision is FP8 and the optimizer is distributed; not under ZeRO-3
  // (nothing to gather after the step) nor in a stack without it.
  p.precision = Dtype::kFp8;
  EXPECT_NE(ApplyStackFp8ParamGather(*mb, &p).find("stack megatron-bridge-2025: the distributed optimizer "
                                                   "all-gathers the parameters in FP8"),
            std::string::npos);
  EXPECT_TRUE(p.fp8_param_gather);
  PlanSpec z3 = p;
  z3.fp8_param_gather = false;
  z3.zero = 3;
  EXPECT_EQ(ApplyStackFp8ParamGather(*mb, &z3), "");
  EXPECT_FALSE(z3.fp8_param_gather);
  q.precision = Dtype::kFp8;
  EXPECT_EQ(ApplyStackFp8ParamGather(*mc, &q), "");
  EXPECT_FALSE(q.fp8_param_gather);
  EXPECT_NE(StackSummary(*mb).find("bf16 gradients averaged in the collective, zero 1, cross entropy te-inplace"),
            std::string::npos)
      << StackSummary(*mb);
  EXPECT_NE(StackSummary(*mb).find("FP8 parameter gather under FP8"), std::string::npos);
  // The stack says what the launch file's release defaults say for the releases it covers
  // (presets/launches/megatron-bridge-performance.json, the evidence per release): the two agree.
  auto text = PresetText("launches", "megatron-bridge-performance");
  ASSERT_TRUE(text.ok());
  const auto launches = nlohmann::json::parse(*text);
  int checked = 0;
  for (const auto& d : launches["release_defaults"]) {
    const std::string prefix = d["id_prefix"];
    auto owner = StackForRecord(prefix + "x");
    ASSERT_TRUE(owner) << prefix;
    if (owner->name != "megatron-bridge-2025" && prefix != "megatron-bridge-") continue;
    if (prefix == "megatron-bridge-") {
      // The entries for every release, 25.09 included: the 25.11 on releases' stack says the same.
      ASSERT_EQ(StackForRecord("megatron-bridge-2511-x")->name, "megatron-bridge-2025");
    }
    if (d.contains("cross_entropy")) {
      EXPECT_EQ(d["cross_entropy"].get<std::string>(), Name(mb->cross_entropy)) << prefix;
      ++checked;
    }
    if (d.contains("grad_reduce_in_fp32")) {
      EXPECT_EQ(d["grad_reduce_in_fp32"].get<bool>(), mb->grads == Dtype::kFp32) << prefix;
      ++checked;
    }
    if (d.contains("average_in_collective")) {
      EXPECT_EQ(d["average_in_collective"].get<bool>(), !mb->grad_prescale) << prefix;
      ++checked;
    }
    if (d.contains("moe_probs")) {
      EXPECT_EQ(d["moe_probs"].get<std::string>(), Name(mb->moe_probs)) << prefix;
      ++checked;
    }
    if (d.contains("expert_bias")) {
      EXPECT_EQ(d["expert_bias"].get<std::string>(), Name(mb->expert_bias)) << prefix;
      ++checked;
    }
    if (d.contains("fp8_param_gather")) {
      EXPECT_EQ(d["fp8_param_gather"].get<bool>(), mb->fp8_param_gather) << prefix;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 7);  // the five "megatron-bridge-" entries and the two expert_bias ones
}

}  // namespace
}  // namespace meshplan::core
