// meshplan export --check (cli/export_check.h): the framework's own validation in Python. The
// frameworks need PyTorch, which this machine does not have, so the checks run against the test
// doubles in tests/data/export_check (their interfaces and a few of their rules, each cited
// there): what is tested is the plumbing, that the export, the world size and the GPU reach the
// framework's entry points and that its verdict comes back with its own words.
#include "cli/export_check.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/export.h"
#include "core/presets.h"

namespace meshplan::cli {
namespace {

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Llama 3 8B on 16 H100s: TP 2, PP 2, DP 4, ZeRO-1 (ZeRO-2 for torchtitan, which has no ZeRO-1).
core::Scenario Llama8B(int64_t zero) {
  core::Scenario s;
  s.model = *core::LoadModel("llama3-8b");
  s.gpu = *core::LoadGpu("h100-sxm");
  s.cluster = *core::LoadCluster("dgx-h100");
  s.plan.tp = 2;
  s.plan.pp = 2;
  s.plan.dp = 4;
  s.plan.gpus = 16;
  s.plan.zero = zero;
  s.plan.sequence_parallel = true;
  s.plan.seq_len = 4096;
  s.plan.global_batch = 64;
  return s;
}

class ExportCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("PYTHONPATH");
    saved_ = old != nullptr ? std::make_unique<std::string>(old) : nullptr;
    setenv("PYTHONPATH", MESHPLAN_TEST_DATA_DIR "/export_check", 1);
  }
  void TearDown() override {
    if (saved_) setenv("PYTHONPATH", saved_->c_str(), 1);
    else unsetenv("PYTHONPATH");
  }
  std::unique_ptr<std::string> saved_;
};

TEST_F(ExportCheckTest, MegatronGetsTheArgumentsTheEnvironmentTheWorldAndTheGpu) {
  const core::Scenario s = Llama8B(1);
  const std::string text = *core::ExportMegatron(s);
  const int hopper = core::ComputeCapabilityMajor(s.gpu);
  ASSERT_EQ(hopper, 9);
  // As exported: accepted (parse_args, then validate_args with WORLD_SIZE 16 and the H100 standing
  // in for the GPU get_device_arch_version asks).
  CheckResult r = CheckExport("megatron", text, 16, 4, hopper, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kAccepted) << r.message;
  EXPECT_TRUE(Has(r.message, "parse_args and validate_args accept")) << r.message;
  // Without the environment line the export writes for TP on Hopper, the assertion of
  // arguments.py:1477 comes back in Megatron's words; on Blackwell (10) it does not apply.
  std::string no_env = text;
  no_env.erase(no_env.find("export CUDA_DEVICE_MAX_CONNECTIONS=1\n"), 38);
  r = CheckExport("megatron", no_env, 16, 4, hopper, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "AssertionError: Using tensor model parallelism")) << r.message;
  EXPECT_EQ(CheckExport("megatron", no_env, 16, 4, 10, "python3").verdict, CheckVerdict::kAccepted);
  // With no GPU named (arch 0) the question reaches the absent GPU: no verdict, and it says so.
  r = CheckExport("megatron", text, 16, 4, 0, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kNotRun) << r.message;
  EXPECT_TRUE(Has(r.message, "stopped without a verdict")) << r.message;
  // The world size reaches args.world_size: 10 GPUs are not a multiple of TP 2 x PP 2
  // (arguments.py:432).
  r = CheckExport("megatron", text, 10, 4, hopper, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "world size (10) is not divisible")) << r.message;
  // An argument the parser does not know is its error line, quoted.
  std::string unknown = text;
  unknown.insert(unknown.find("  --num-layers"), "  --no-such-flag \\\n");
  r = CheckExport("megatron", unknown, 16, 4, hopper, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "unrecognized arguments: --no-such-flag")) << r.message;
}

TEST_F(ExportCheckTest, DeepSpeedSeesTheDataParallelSizeThroughAnMpu) {
  // DP alone: train_batch_size 64 = micro 1 x accumulation 4 x DP 16 (config.py:919-934).
  core::Scenario s = Llama8B(1);
  s.plan.tp = s.plan.pp = 1;
  s.plan.dp = 16;
  s.plan.sequence_parallel = false;
  std::vector<std::string> notes;
  const std::string text = *core::ExportDeepSpeed(s, &notes);
  CheckResult r = CheckExport("deepspeed", text, 16, 16, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kAccepted) << r.message;
  EXPECT_TRUE(Has(r.message, "data-parallel size 16")) << r.message;
  // Another data-parallel size breaks the batch rule, in DeepSpeed's words.
  r = CheckExport("deepspeed", text, 16, 8, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "64 != 1 * 4 * 8")) << r.message;
}

TEST_F(ExportCheckTest, TorchtitanParsesTheTomlAndChecksTheMeshOverThePlansGpus) {
  const std::string text = *core::ExportTorchtitan(Llama8B(2));
  CheckResult r = CheckExport("torchtitan", text, 16, 4, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kAccepted) << r.message;
  // ParallelDims over a world of 32: dp_shard 4 x tp 2 x pp 2 = 16 (parallel_dims.py:51-55).
  r = CheckExport("torchtitan", text, 32, 4, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "!= WORLD_SIZE(32)")) << r.message;
}

TEST_F(ExportCheckTest, TorchtitanLoadsThePythonConfigurationByModuleName) {
  // torchtitan b5bcd76c6: the module is imported by name and its function called, as
  // `torchtitan.train --module meshplan_plan --config meshplan_plan` does (manager.py:54-159).
  const std::string text = *core::ExportTorchtitanPython(Llama8B(2));
  CheckResult r = CheckExport("torchtitan-py", text, 16, 4, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kAccepted) << r.message;
  EXPECT_TRUE(Has(r.message, "ConfigManager loads the configuration")) << r.message;
  // The world size reaches ParallelDims.
  r = CheckExport("torchtitan-py", text, 32, 4, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "!= WORLD_SIZE(32)")) << r.message;
  // A field the configuration classes no longer have (238fa99's pipeline microbatch size,
  // replaced by num_pp_microbatches) is an AttributeError of their slots: rejected.
  std::string old_field = text;
  old_field.replace(old_field.find("p.num_pp_microbatches"), 21, "p.pipeline_parallel_microbatch_size");
  r = CheckExport("torchtitan-py", old_field, 16, 4, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "AttributeError")) << r.message;
  // Without disable_cuda_graphs a pipeline is refused (trainer.py:172-176).
  std::string graphs = text;
  graphs.erase(graphs.find("    t.disable_cuda_graphs = True\n"), 33);
  r = CheckExport("torchtitan-py", graphs, 16, 4, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kRejected) << r.message;
  EXPECT_TRUE(Has(r.message, "CUDA graphs")) << r.message;
}

TEST_F(ExportCheckTest, WithoutTheFrameworkOrPythonThereIsNoVerdict) {
  const std::string text = *core::ExportMegatron(Llama8B(1));
  setenv("PYTHONPATH", MESHPLAN_TEST_DATA_DIR "/no_such_dir", 1);
  CheckResult r = CheckExport("megatron", text, 16, 4, 9, "python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kNotRun) << r.message;
  EXPECT_TRUE(Has(r.message, "cannot import megatron.training.arguments (ModuleNotFoundError")) << r.message;
  r = CheckExport("megatron", text, 16, 4, 9, "/no/such/python3");
  EXPECT_EQ(r.verdict, CheckVerdict::kNotRun) << r.message;
  EXPECT_TRUE(Has(r.message, "cannot run '/no/such/python3'")) << r.message;
}

}  // namespace
}  // namespace meshplan::cli
