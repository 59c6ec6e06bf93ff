// The framework writers of `meshplan export`, called from core as the GUI would: the plan's
// degrees, schedule and batch come out under each framework's own names.
#include "core/export.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  const std::string megatron = ExportMegatron(s);
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

}  // namespace
}  // namespace meshplan::core
