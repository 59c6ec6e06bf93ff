// Pairs of published runs that differ in one thing (sim/comparison.h): which records pair, on
// which axis, and the ratio error, derived by hand from the records' own figures.
#include "sim/comparison.h"

#include <gtest/gtest.h>

#include <cmath>

#include <string>
#include <vector>

#include "core/presets.h"
#include "core/published.h"

namespace meshplan::sim {
namespace {

core::Scenario Llama8b() {
  core::Scenario s;
  s.model = *core::LoadModel("llama3-8b");
  s.gpu = *core::LoadGpu("h100-sxm");
  s.cluster = *core::LoadCluster("dgx-h100");
  s.plan.gpus = 8;
  s.plan.dp = 8;
  s.plan.micro_batch = 1;
  s.plan.global_batch = 8;
  s.plan.seq_len = 8192;
  return s;
}

ValidationRecord Record(const std::string& id, double published, double predicted) {
  ValidationRecord r;
  r.id = id;
  r.stack = "torchtitan-2024";
  r.published = published;
  r.predicted = predicted;
  r.error = (predicted - published) / published;
  r.groups = {{"dataset", "t.json"}};
  return r;
}

// The pairs among runs of one source table, record i with scenario i.
ComparisonSummary PairsOfOneTable(const std::vector<ValidationRecord>& r, const std::vector<core::Scenario>& s) {
  std::vector<ComparisonInput> in;
  for (size_t i = 0; i < s.size(); ++i) in.push_back({&r[i], &s[i], "Paper, Table 1"});
  return ComparePairs(in);
}

TEST(ComparisonTest, RunsThatDifferInOneThingPairOnItsAxis) {
  std::vector<core::Scenario> s(5, Llama8b());
  s[1].plan.precision = core::Dtype::kFp8;                              // bf16 -> fp8
  s[2].plan.gpus = 16, s[2].plan.dp = 16, s[2].plan.global_batch = 16;  // weak scaling
  s[3].plan.seq_len = 16384;                                            // and the model's max_seq with it:
  s[3].model.max_seq = 16384;                                           // still the same architecture
  // Three things from a, two from every other: no pair.
  s[4].plan.gpus = 16, s[4].plan.dp = 16, s[4].plan.precision = core::Dtype::kFp8, s[4].plan.seq_len = 16384;
  std::vector<ValidationRecord> r = {Record("a", 1000, 1100), Record("b", 1400, 1650), Record("c", 950, 1080),
                                     Record("d", 800, 850), Record("e", 1300, 1500)};
  const ComparisonSummary c = PairsOfOneTable(r, s);
  ASSERT_EQ(c.pairs.size(), 3u);
  // precision a -> b: published 1400 / 1000 = 1.4, predicted 1650 / 1100 = 1.5, 1.5 / 1.4 - 1 = +7.14%.
  EXPECT_EQ(c.pairs[0].axis, "precision");
  EXPECT_EQ(c.pairs[0].first, "a");
  EXPECT_EQ(c.pairs[0].second, "b");
  EXPECT_EQ(c.pairs[0].change, "precision bf16 -> fp8");
  EXPECT_DOUBLE_EQ(c.pairs[0].published_ratio, 1.4);
  EXPECT_DOUBLE_EQ(c.pairs[0].predicted_ratio, 1.5);
  EXPECT_NEAR(c.pairs[0].error, 1.5 / 1.4 - 1, 1e-12);
  // gpus a -> c (dp and the global batch with them): 0.95 against 1080 / 1100 = 0.98182, +3.35%.
  EXPECT_EQ(c.pairs[1].axis, "gpus");
  EXPECT_EQ(c.pairs[1].second, "c");
  EXPECT_EQ(c.pairs[1].change, "gpus 8 -> 16");
  EXPECT_NEAR(c.pairs[1].error, (1080.0 / 1100) / 0.95 - 1, 1e-12);
  // seq_len a -> d: 0.8 against 850 / 1100 = 0.77273, -3.41%: the model says a longer sequence costs more.
  EXPECT_EQ(c.pairs[2].axis, "seq_len");
  EXPECT_EQ(c.pairs[2].change, "seq_len 8192 -> 16384");
  EXPECT_NEAR(c.pairs[2].error, (850.0 / 1100) / 0.8 - 1, 1e-12);
  // One pair per axis: each axis's summary is its pair's error, the overall one the median of three.
  ASSERT_EQ(c.axes.size(), 3u);
  EXPECT_EQ(c.axes[0].value, "precision");
  EXPECT_EQ(c.all.n, 3u);
  EXPECT_NEAR(c.all.median_error, (1080.0 / 1100) / 0.95 - 1, 1e-12);
}

TEST(ComparisonTest, SelectiveModulesAndTheEpOverlapAreWhatARunChanges) {
  // Two selective recomputations of other modules are a recompute pair (the granularity equal, the
  // modules the change), and Megatron-Core's EP overlap on or off is a pair of its own axis.
  std::vector<core::Scenario> s(3, Llama8b());
  for (auto& x : s) {
    x.plan.recompute = core::Recompute::kSelective;
    x.plan.recompute_modules = core::ModuleBit(core::RecomputeModule::kLayernorm);
  }
  s[1].plan.recompute_modules |= core::ModuleBit(core::RecomputeModule::kMlp);
  s[2].plan.ep_overlap = true;
  std::vector<ValidationRecord> r = {Record("a", 1000, 1100), Record("b", 950, 1000), Record("c", 1200, 1300)};
  const ComparisonSummary c = PairsOfOneTable(r, s);
  ASSERT_EQ(c.pairs.size(), 2u);
  EXPECT_EQ(c.pairs[0].axis, "recompute");
  EXPECT_EQ(c.pairs[0].first, "a");  // ["layernorm"] sorts before ["layernorm","mlp"]
  EXPECT_EQ(c.pairs[0].second, "b");
  EXPECT_EQ(c.pairs[0].change, R"(recompute_modules ["layernorm"] -> ["layernorm","mlp"])");
  // b over a: published 0.95, predicted 1000 / 1100 = 0.90909, -4.31%.
  EXPECT_NEAR(c.pairs[0].error, (1000.0 / 1100) / 0.95 - 1, 1e-12);
  // c over a: published 1.2, predicted 1300 / 1100 = 1.18182, -1.52%.
  EXPECT_EQ(c.pairs[1].axis, "ep_overlap");
  EXPECT_EQ(c.pairs[1].first, "a");
  EXPECT_EQ(c.pairs[1].second, "c");
  EXPECT_EQ(c.pairs[1].change, "ep_overlap false -> true");
  EXPECT_NEAR(c.pairs[1].error, (1300.0 / 1100) / 1.2 - 1, 1e-12);
}

TEST(ComparisonTest, RunsOfOtherTablesStacksOrModelsDoNotPair) {
  std::vector<core::Scenario> s(4, Llama8b());
  for (size_t i = 1; i < s.size(); ++i) s[i].plan.precision = core::Dtype::kFp8;
  s[3].model.layers = 31;  // another architecture
  std::vector<ValidationRecord> r = {Record("a", 1000, 1100), Record("b", 1400, 1650), Record("c", 1400, 1650),
                                     Record("d", 1400, 1650)};
  r[2].stack = "megatron-core-2024";
  const std::vector<ComparisonInput> in = {{&r[0], &s[0], "Paper, Table 1"},
                                           {&r[1], &s[1], "Paper, Table 2"},
                                           {&r[2], &s[2], "Paper, Table 1"},
                                           {&r[3], &s[3], "Paper, Table 1"}};
  EXPECT_TRUE(ComparePairs(in).pairs.empty());
}

TEST(ComparisonTest, ASeriesPairsConsecutiveSteps) {
  // 8, 16, 32 GPUs given out of order: 8 -> 16 and 16 -> 32, not 8 -> 32.
  std::vector<core::Scenario> s(3, Llama8b());
  s[0].plan.gpus = 32, s[0].plan.dp = 32;
  s[2].plan.gpus = 16, s[2].plan.dp = 16;
  std::vector<ValidationRecord> r = {Record("g32", 900, 1000), Record("g8", 1000, 1000), Record("g16", 950, 1000)};
  const ComparisonSummary c = PairsOfOneTable(r, s);
  ASSERT_EQ(c.pairs.size(), 2u);
  EXPECT_EQ(c.pairs[0].first, "g8");
  EXPECT_EQ(c.pairs[0].second, "g16");
  EXPECT_EQ(c.pairs[1].first, "g16");
  EXPECT_EQ(c.pairs[1].second, "g32");
  // The model predicts flat scaling where the runs lost 5% and 5.26%: it overstates each step's ratio.
  EXPECT_NEAR(c.pairs[1].error, 1.0 / (900.0 / 950) - 1, 1e-12);
}

TEST(ComparisonTest, ATablesLineNumberAndPrecisionWordsDoNotSeparateItsRuns) {
  // dgxc-benchmarking's README prints each precision of a model on its own line.
  EXPECT_EQ(ComparisonTableOf("NVIDIA dgxc-benchmarking v25.03, line 58: Llama 3.1 70b FP8 (TP=4, PP=4)"),
            ComparisonTableOf("NVIDIA dgxc-benchmarking v25.03, line 51: Llama 3.1 70b BF16 (TP=4, PP=4)"));
  EXPECT_EQ(ComparisonTableOf("Summary, Pre-Training, Precision: FP8-CS"),
            ComparisonTableOf("Summary, Pre-Training, Precision: BF16"));
  // A release is a table of its own.
  EXPECT_NE(ComparisonTableOf("Bridge summary, ## 26.04 NeMo Container"),
            ComparisonTableOf("Bridge summary, ## 26.02 NeMo Container"));
}

// The corpus as validate judges it: the dgxc-benchmarking pairs of BF16 and FP8 runs of one
// layout are found, and GPT-3 175B's FP8 gain on 128 H100s is within 5% of what the README printed
// (published 1.477x: 128-GPU FP8 over BF16 tokens/s, predicted 1.542x on 2026-12-04).
TEST(ComparisonTest, CorpusPairsIncludeTheDgxcPrecisionPairs) {
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/papers_at_scale.json");
  ASSERT_TRUE(text.ok());
  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  const ValidationSummary v = ValidateRuns(*runs, core::Profile{});
  const ComparisonSummary c = CompareRuns(*runs, v);
  bool found = false;
  for (const ComparisonRecord& p : c.pairs) {
    if (p.first != "dgxc-v2503-gpt3-175b-h100-128gpu-bf16") continue;
    if (p.second != "dgxc-v2503-gpt3-175b-h100-128gpu-fp8") continue;
    found = true;
    EXPECT_EQ(p.axis, "precision");
    EXPECT_NEAR(p.published_ratio, 1.477, 0.001);
    EXPECT_LT(std::abs(p.error), 0.05);
  }
  EXPECT_TRUE(found);
  EXPECT_GE(c.pairs.size(), 60u);
}

TEST(ComparisonTest, DeepSeekV3OnGb200SplitsIntoTheMicrobatchItPredictsAndAStepCostItLacks) {
  // MLPerf Training v6.0's DeepSeek-V3 671B on GB200 (mlperf_training.json): one recipe (TP 2, PP 4,
  // VP 4, EP 32, one sequence a microbatch) at Google's 256 GPUs and NVIDIA's 512, 2,048, 4,096 and
  // 8,192, m = 480, 240, 60, 32 and 16 microbatches a pipeline. Their published steps, 15,360 or
  // 16,384 x 4,096 tokens over tokens/s per GPU x GPUs: 59.613, 32.892, 8.904, 5.406, 3.505 s (8,192
  // GPUs: 16,384 x 4,096 / (2,337.24 x 8,192) = 3.5050). Least squares: t = 0.1220 s a microbatch,
  // F = 1.861 s a step. The model's microbatch is within 3% of that (1.024x since the GB200's
  // short-reduction cost, 2026-12-07; within 1% before); its F about 0.3 s: the step lacks over a
  // second that does not shrink with the microbatches (docs/validation.md, the runs-off table;
  // update it if this closes).
  auto text = core::ReadTextFile(MESHPLAN_TEST_DATA_DIR "/validation/mlperf_training.json");
  ASSERT_TRUE(text.ok());
  auto runs = core::LoadPublishedRuns(*text, nullptr);
  ASSERT_TRUE(runs.ok());
  const ValidationSummary v = ValidateRuns(*runs, core::Profile{});
  const StepSplitSummary split = SplitRunSteps(*runs, v);
  const StepSplitSeries* gb200 = nullptr;
  for (const StepSplitSeries& g : split.series)
    if (g.ids.back() == "mlperf-v60-nvidia-tyche-hsg-ngpu8192-ngc26.04-nemo-deepseekv3-671b") gb200 = &g;
  ASSERT_TRUE(gb200);
  EXPECT_EQ(gb200->ids.front(), "mlperf-v60-google-gb200-nvl72-n64-ngc26.04-nemo-deepseekv3-671b");
  EXPECT_EQ(gb200->microbatches, (std::vector<int64_t>{480, 240, 60, 32, 16}));
  EXPECT_NEAR(gb200->published_step_s.back(), 16384.0 * 4096 / (2337.24 * 8192), 1e-9);
  EXPECT_NEAR(gb200->published_t, 0.1220, 0.0001);
  EXPECT_NEAR(gb200->published_f, 1.861, 0.001);
  EXPECT_NEAR(gb200->predicted_t / gb200->published_t, 1.024, 0.01);
  EXPECT_LT(gb200->predicted_f - gb200->published_f, -1.0);
}

// Runs of one scenario printed twice (sim::FindRepeats): other tables, stacks or datasets do not
// separate them; another plan, another measured quantity or another prediction does.
TEST(ComparisonTest, RunsOfOneScenarioPrintedTwiceAreARepeat) {
  std::vector<core::Scenario> s(4, Llama8b());
  s[2].plan.precision = core::Dtype::kFp8;
  std::vector<ValidationRecord> r = {Record("a", 1000, 1100), Record("b", 1250, 1100), Record("c", 1400, 1650),
                                     Record("d", 1100, 1100)};
  r[1].stack = "megatron-core-2024";
  r[1].groups = {{"dataset", "u.json"}};
  r[3].groups.push_back({"measured", "reserved"});  // the same plan, another quantity
  const std::vector<ComparisonInput> in = {{&r[0], &s[0], "Paper, Table 1"},
                                           {&r[1], &s[1], "Release notes, 26.02"},
                                           {&r[2], &s[2], "Paper, Table 1"},
                                           {&r[3], &s[3], "Paper, Table 1"}};
  const RepeatSummary rep = FindRepeats(in);
  ASSERT_EQ(rep.groups.size(), 1u);
  EXPECT_EQ(rep.groups[0].ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(rep.groups[0].published_min, 1000);
  EXPECT_DOUBLE_EQ(rep.groups[0].published_max, 1250);
  EXPECT_DOUBLE_EQ(rep.groups[0].predicted, 1100);
  // 1250 / 1000 - 1 = 25%; one prediction P is off by at least 250 / 2250 = 11.11% on one of the
  // two: P = 2 x 1000 x 1250 / 2250 = 1111.1 is +11.11% over 1000 and -11.11% under 1250, and any
  // other P is further from one of them (the geometric mean 1118.0 is +11.80% over 1000).
  EXPECT_NEAR(rep.groups[0].spread, 0.25, 1e-12);
  EXPECT_NEAR(rep.groups[0].floor, 250.0 / 2250, 1e-12);
  EXPECT_EQ(rep.runs, 2u);
  EXPECT_EQ(rep.spread.n, 1u);
  EXPECT_NEAR(rep.spread.median_abs_error, 0.25, 1e-12);
}

TEST(ComparisonTest, RepeatsAreListedWidestFirstWithTheirRunsInInputOrder) {
  std::vector<core::Scenario> s(7, Llama8b());
  for (size_t i = 3; i < s.size(); ++i) s[i].plan.gpus = 16, s[i].plan.dp = 16, s[i].plan.global_batch = 16;
  std::vector<ValidationRecord> r = {Record("a", 1000, 1100), Record("b", 1250, 1100),
                                     Record("z", 0, 1100),  // nothing published: left out
                                     Record("e", 100, 110),   Record("f", 104, 110),
                                     Record("g", 102, 110),   Record("h", 90, 111)};  // another prediction
  std::vector<ComparisonInput> in;
  for (size_t i = 0; i < s.size(); ++i) in.push_back({&r[i], &s[i], "Paper, Table 1"});
  const RepeatSummary rep = FindRepeats(in);
  ASSERT_EQ(rep.groups.size(), 2u);
  EXPECT_EQ(rep.groups[0].ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rep.groups[1].ids, (std::vector<std::string>{"e", "f", "g"}));
  // 104 / 100 - 1 = 4%, 4 / 204 = 1.961%.
  EXPECT_NEAR(rep.groups[1].spread, 0.04, 1e-12);
  EXPECT_NEAR(rep.groups[1].floor, 4.0 / 204, 1e-12);
  EXPECT_EQ(rep.runs, 5u);
  // Two groups: the median between them, (25% + 4%) / 2; p90 at 0.9 of the way, 4% + 0.9 x 21%.
  EXPECT_NEAR(rep.spread.median_abs_error, 0.145, 1e-12);
  EXPECT_NEAR(rep.spread.p90_abs_error, 0.229, 1e-12);
  EXPECT_NEAR(rep.floor.max_abs_error, 250.0 / 2250, 1e-12);
}

TEST(ComparisonTest, AStrongScalingSeriesSplitsItsStepIntoMicrobatchesAndAStepCost) {
  // Llama 3 8B at a global batch of 64 sequences of 8,192 tokens (524,288 a step) on 8, 16, 32 and
  // 64 GPUs, one sequence a microbatch: m = 64 / dp = 8, 4, 2, 1 microbatches a pipeline. Published
  // steps m x 0.1 + 1.0 s, predicted m x 0.12 + 0.2 s, written as the tokens/s per GPU they give
  // (524,288 / (step x GPUs)): the split recovers both lines exactly.
  auto at = [](int64_t gpus) {
    core::Scenario s = Llama8b();
    s.plan.gpus = s.plan.dp = gpus;
    s.plan.global_batch = 64;
    return s;
  };
  std::vector<core::Scenario> s = {at(8), at(16), at(32), at(64)};
  std::vector<ValidationRecord> r;
  for (const core::Scenario& x : s) {
    const double m = 64.0 / static_cast<double>(x.plan.dp);
    const double gpus = static_cast<double>(x.plan.gpus);
    r.push_back(Record("g" + std::to_string(x.plan.gpus), 524288 / ((0.1 * m + 1.0) * gpus),
                       524288 / ((0.12 * m + 0.2) * gpus)));
  }
  // Not a series: one run of another precision (a series needs three runs of one plan), and a plan
  // measured on 8, 10 and 12 GPUs at a batch of 120, m = 15, 12 and 10, which do not span a factor
  // of 2.
  s.push_back(at(8));
  s.back().plan.precision = core::Dtype::kFp8;
  r.push_back(Record("fp8", 1000, 1000));
  for (int64_t dp : {8, 10, 12}) {
    core::Scenario x = Llama8b();
    x.plan.gpus = x.plan.dp = dp;
    x.plan.global_batch = 120;
    x.plan.seq_len = 4096;
    x.model.max_seq = 4096;
    s.push_back(x);
    r.push_back(Record("narrow" + std::to_string(dp), 1000, 1000));
  }
  std::vector<ComparisonInput> in;
  for (size_t i = 0; i < s.size(); ++i) in.push_back({&r[i], &s[i], "Paper, Table " + std::to_string(i)});
  const StepSplitSummary split = SplitSteps(in);
  ASSERT_EQ(split.series.size(), 1u);
  const StepSplitSeries& g = split.series[0];
  EXPECT_EQ(g.ids, (std::vector<std::string>{"g8", "g16", "g32", "g64"}));  // most microbatches first
  EXPECT_EQ(g.microbatches, (std::vector<int64_t>{8, 4, 2, 1}));
  EXPECT_NEAR(g.published_step_s[0], 1.8, 1e-9);
  EXPECT_NEAR(g.predicted_step_s[3], 0.32, 1e-9);
  EXPECT_NEAR(g.published_t, 0.1, 1e-9);
  EXPECT_NEAR(g.published_f, 1.0, 1e-9);
  EXPECT_NEAR(g.predicted_t, 0.12, 1e-9);
  EXPECT_NEAR(g.predicted_f, 0.2, 1e-9);
  EXPECT_NEAR(g.published_residual, 0, 1e-9);
  EXPECT_EQ(split.runs, 4u);
  // One series: t predicted 0.12 / 0.1 - 1 = +20% longer, F 0.8 s short.
  EXPECT_NEAR(split.t.median_error, 0.2, 1e-9);
  EXPECT_NEAR(split.median_f_gap_s, -0.8, 1e-9);
}

}  // namespace
}  // namespace meshplan::sim
