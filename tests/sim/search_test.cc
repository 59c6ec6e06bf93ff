// The plan search: the published recipes it must rediscover, the pruning that must never change
// its answer, and the bookkeeping (counts, order, Pareto front) a user reads.
#include "sim/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/diagnostics.h"
#include "core/presets.h"
#include "core/validate.h"

namespace meshplan::sim {
namespace {

using core::PlanSpec;

struct Scenario {
  core::ModelSpec model;
  core::GpuSpec gpu;
  core::ClusterSpec cluster;
  PlanSpec base;
};

Scenario Load(const std::string& model, const std::string& cluster, int64_t gpus, int64_t seq, int64_t gbs) {
  Scenario s;
  s.model = *core::LoadModel(model);
  s.cluster = *core::LoadCluster(cluster);
  s.gpu = *core::LoadGpu(s.cluster.gpu);
  s.base.gpus = gpus;
  s.base.seq_len = seq;
  s.base.global_batch = gbs;
  return s;
}

SearchResult RunSearch(const Scenario& s, const SearchOptions& o) {
  return SearchPlans(s.model, s.gpu, s.cluster, s.base, core::Profile{}, o);
}

// What ValidatePlan says of a ranked plan on the scenario's model, GPU and cluster ("" when valid).
std::string PlanErrors(const Scenario& s, const PlanSpec& p) {
  core::Diagnostics d;
  core::ValidatePlan(p, s.model, s.gpu, s.cluster, &d);
  return d.has_errors() ? d.ToStatus().ToString() : "";
}

TEST(SearchObjectiveTest, NamesRoundTrip) {
  for (Objective o : {Objective::kThroughput, Objective::kTime, Objective::kCost}) {
    Objective back;
    ASSERT_TRUE(FromName(Name(o), &back));
    EXPECT_EQ(back, o);
  }
  Objective unused;
  EXPECT_FALSE(FromName("speed", &unused));
}

// The seeds' sanity check: Llama 3 405B on 16,384 H100s at seq 8192 and a 2048-sequence batch
// (Dubey et al. 2024, Table 4: TP 8, CP 1, PP 16, DP 128). The search must put TP 8 with a deep
// pipeline first, and the published TP8/PP16 within 5% of the winner.
TEST(SearchSanityTest, Llama405BOn16kH100sPicksTp8AndDeepPipeline) {
  const Scenario s = Load("llama3-405b", "dgx-h100", 16384, 8192, 2048);
  SearchOptions o;
  o.top_k = 5;
  const SearchResult r = RunSearch(s, o);
  ASSERT_FALSE(r.top.empty());
  const RankedPlan& best = r.top.front();
  EXPECT_EQ(best.plan.tp, 8);
  EXPECT_GE(best.plan.pp, 8);

  SearchOptions recipe = o;
  recipe.tp = {8};
  recipe.pp = {16};
  const SearchResult r16 = RunSearch(s, recipe);
  ASSERT_FALSE(r16.top.empty());
  EXPECT_GE(r16.top.front().step.tokens_per_s, 0.95 * best.step.tokens_per_s)
      << "TP8/PP16 " << r16.top.front().step.tokens_per_s << " tokens/s vs the winner's " << best.step.tokens_per_s;
  // 126 layers do not split over 16 stages: the recipe runs on the balanced uneven split, or on
  // an interleaved one whose chunks do.
  const PlanSpec& p16 = r16.top.front().plan;
  if (p16.vpp == 1) {
    ASSERT_EQ(p16.stage_layers.size(), 16u);
    EXPECT_EQ(p16.stage_layers.front(), 7);
  }
}

// The seeds' whiteboard rule: a 7B model on one 8-GPU node is pure data parallel with ZeRO (its
// 16 B/param model states, 6.7e9 x 16 = 108 GB, do not fit an 80 GB GPU without sharding), never
// TP or PP.
TEST(SearchSanityTest, SevenBOnEightGpusIsDataParallelWithZero) {
  const Scenario s = Load("llama2-7b", "dgx-h100", 8, 4096, 512);
  const SearchResult r = RunSearch(s, SearchOptions{});
  ASSERT_FALSE(r.top.empty());
  const PlanSpec& p = r.top.front().plan;
  EXPECT_EQ(p.tp, 1);
  EXPECT_EQ(p.pp, 1);
  EXPECT_EQ(p.cp, 1);
  EXPECT_EQ(p.dp, 8);
  EXPECT_GE(p.zero, 1);
}

TEST(SearchTest, EveryRankedPlanIsValidFitsAndMatchesTheModels) {
  const Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 128);
  SearchOptions o;
  o.top_k = 8;
  o.max_memory_frac = 0.9;
  const SearchResult r = RunSearch(s, o);
  ASSERT_EQ(r.top.size(), 8u);
  const core::Profile prof;
  const int64_t budget = static_cast<int64_t>(std::floor(0.9 * static_cast<double>(s.gpu.CapacityBytes())));
  for (const RankedPlan& rp : r.top) {
    EXPECT_EQ(PlanErrors(s, rp.plan), "");
    EXPECT_LE(rp.per_gpu_bytes, budget);
    // The numbers are EstimateMemory's and EstimateStep's, not the search's own.
    EXPECT_EQ(rp.per_gpu_bytes, core::EstimateMemory(s.model, rp.plan, s.gpu, prof.memory).per_gpu_bytes);
    EXPECT_DOUBLE_EQ(rp.step.time_s, EstimateStep(s.model, rp.plan, s.gpu, s.cluster, prof).time_s);
    EXPECT_EQ(rp.plan.tp * rp.plan.pp * rp.plan.dp * rp.plan.cp, 64);
  }
  for (size_t i = 1; i < r.top.size(); ++i)
    EXPECT_LE(r.top[i].step.tokens_per_s, r.top[i - 1].step.tokens_per_s) << "ranked by throughput, best first";
}

TEST(SearchTest, AllowTightRanksThePlansOverTheBudgetOnlyWithTheAllocatorsReserve) {
  // Llama 3 8B on 8 H100s at 7,424 tokens, one sequence per microbatch, no recomputation, TP/PP/CP
  // 1: ZeRO-1 holds 85.9 GB with the assumed 5% fragmentation on its activations and 84.0 GB
  // without it, of the 85.0 GB CUDA reports (tests/core/memory_test.cc); ZeRO-2 and ZeRO-3 fit
  // outright.
  const Scenario s = Load("llama3-8b", "dgx-h100", 8, 7424, 8);
  SearchOptions o;
  o.tp = o.pp = o.cp = o.mbs = {1};
  o.zero = {1};
  o.recompute = {core::Recompute::kNone};
  o.schedules = {core::Schedule::k1F1B};
  const SearchResult strict = RunSearch(s, o);
  EXPECT_TRUE(strict.top.empty());
  EXPECT_EQ(strict.stats.out_of_memory, 1);
  EXPECT_EQ(strict.stats.tight, 1);
  o.allow_tight = true;
  const SearchResult loose = RunSearch(s, o);
  ASSERT_EQ(loose.top.size(), 1u);
  EXPECT_EQ(loose.stats.out_of_memory, 0);
  EXPECT_EQ(loose.stats.tight, 1);
  const RankedPlan& rp = loose.top.front();
  EXPECT_TRUE(rp.tight);
  const core::MemoryReport mem = core::EstimateMemory(s.model, rp.plan, s.gpu, core::Profile{}.memory);
  EXPECT_EQ(mem.verdict, core::FitVerdict::kTight);
  EXPECT_EQ(rp.per_gpu_bytes, mem.per_gpu_bytes);
  EXPECT_GT(rp.per_gpu_bytes, s.gpu.CapacityBytes());
  EXPECT_LE(mem.least_per_gpu_bytes, s.gpu.CapacityBytes());
  // With every ZeRO stage, the ones that fit outright are not tight, and pruning changes nothing.
  o.zero = {0, 1, 2, 3};
  const SearchResult all = RunSearch(s, o);
  SearchOptions exhaustive = o;
  exhaustive.prune = false;
  const SearchResult every = RunSearch(s, exhaustive);
  ASSERT_EQ(all.top.size(), every.top.size());
  int tight = 0;
  for (size_t i = 0; i < all.top.size(); ++i) {
    EXPECT_EQ(all.top[i].plan.zero, every.top[i].plan.zero);
    EXPECT_EQ(all.top[i].tight, all.top[i].per_gpu_bytes > s.gpu.CapacityBytes());
    tight += all.top[i].tight ? 1 : 0;
  }
  EXPECT_EQ(tight, 1);
}

TEST(SearchTest, ABasePlanThatOffloadsActivationsRanksOnlyPlansThatMayOffload) {
  // The GUI's search grid starts from the scenario's plan: with 40 of Llama 3 70B's layers
  // offloaded, every ranked plan keeps pp 1 and no recomputation (Megatron-Core's rules), the
  // validity of each recompute mode checked on its own.
  Scenario s = Load("llama3-70b", "gb200-nvl72", 64, 8192, 256);
  s.base.offload_activation_layers = 40;
  SearchOptions o;
  o.top_k = 20;
  const SearchResult r = RunSearch(s, o);
  ASSERT_FALSE(r.top.empty());
  for (const RankedPlan& rp : r.top) {
    EXPECT_EQ(PlanErrors(s, rp.plan), "");
    EXPECT_EQ(rp.plan.pp, 1);
    EXPECT_EQ(rp.plan.recompute, core::Recompute::kNone);
    EXPECT_EQ(rp.plan.offload_activation_layers, 40);
  }
}

// Every ranked plan is one ValidatePlan accepts, ranked at the step model's time for that plan.
void ExpectRankedPlansValidAndCosted(const Scenario& s, const SearchResult& r) {
  for (const RankedPlan& rp : r.top) {
    EXPECT_EQ(PlanErrors(s, rp.plan), "");
    EXPECT_DOUBLE_EQ(rp.step.time_s, EstimateStep(s.model, rp.plan, s.gpu, s.cluster, core::Profile{}).time_s);
  }
}

TEST(SearchTest, ABasePlanWithCheckpointEarlyStopKeepsItOnFullRecomputationOnly) {
  // The GUI's search grid from a plan that recomputes as PyTorch's checkpoint does: the plans it
  // ranks carry the early stop exactly where they recompute fully, every one valid, and each
  // ranked step is the step model's for that plan (shorter than the whole replay's).
  Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 64);
  s.base.recompute = core::Recompute::kFull;
  s.base.recompute_early_stop = true;
  SearchOptions o;
  o.top_k = 10;
  o.tp = {8};
  for (core::Recompute mode : {core::Recompute::kSelective, core::Recompute::kFull}) {
    o.recompute = {mode};
    const SearchResult r = RunSearch(s, o);
    ASSERT_FALSE(r.top.empty());
    ExpectRankedPlansValidAndCosted(s, r);
    for (const RankedPlan& rp : r.top) {
      EXPECT_EQ(rp.plan.recompute_early_stop, mode == core::Recompute::kFull);
      if (mode == core::Recompute::kFull) {
        PlanSpec whole = rp.plan;
        whole.recompute_early_stop = false;
        EXPECT_LT(rp.step.time_s, EstimateStep(s.model, whole, s.gpu, s.cluster, core::Profile{}).time_s);
      }
    }
  }
}

TEST(SearchTest, ABasePlanWithFp8ParamGatherKeepsItOnZeroOneAndTwoOnly) {
  // `search --fp8-param-gather` (or the GUI's grid from such a plan): the distributed optimizer's
  // FP8 all-gather rides on the ZeRO-1 and ZeRO-2 candidates, whose optimizer gathers; the ZeRO-0
  // and ZeRO-3 ones run without it instead of every one being refused (they were, all counted
  // invalid). Each ranked step is the step model's for that plan.
  Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 64);
  s.base.precision = core::Dtype::kFp8;
  s.base.fp8_param_gather = true;
  SearchOptions o;
  o.top_k = 40;
  o.tp = {8};
  for (int zero : {0, 1, 2, 3}) {
    o.zero = {zero};
    const SearchResult r = RunSearch(s, o);
    EXPECT_EQ(r.stats.invalid, 0) << "zero " << zero;
    ASSERT_FALSE(r.top.empty()) << "zero " << zero;
    ExpectRankedPlansValidAndCosted(s, r);
    for (const RankedPlan& rp : r.top) EXPECT_EQ(rp.plan.fp8_param_gather, zero == 1 || zero == 2) << "zero " << zero;
  }
}

TEST(SearchTest, CountsAddUp) {
  const Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 128);
  const SearchResult r = RunSearch(s, SearchOptions{});
  const SearchStats& st = r.stats;
  EXPECT_GT(st.enumerated, 0);
  EXPECT_EQ(st.enumerated, st.pruned_bound + st.pruned_monotone + st.invalid + st.memory_estimates);
  EXPECT_EQ(st.memory_estimates, st.out_of_memory + st.evaluated);
  EXPECT_EQ(st.invalid, 0) << "the enumeration generates only plans ValidatePlan accepts";
  EXPECT_GT(st.pruned_bound, 0);
  EXPECT_GT(st.evaluated, 0);
}

// The bounds skip only plans that cannot fit: with and without them the answer is the same.
TEST(SearchTest, PruningNeverChangesTheAnswer) {
  const Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 128);
  SearchOptions pruned;
  pruned.top_k = 20;
  SearchOptions exhaustive = pruned;
  exhaustive.prune = false;
  const SearchResult a = RunSearch(s, pruned), b = RunSearch(s, exhaustive);
  EXPECT_EQ(a.stats.evaluated, b.stats.evaluated);
  EXPECT_EQ(a.stats.enumerated, b.stats.enumerated);
  EXPECT_LT(a.stats.memory_estimates, b.stats.memory_estimates);
  ASSERT_EQ(a.top.size(), b.top.size());
  for (size_t i = 0; i < a.top.size(); ++i) EXPECT_EQ(a.top[i].plan, b.top[i].plan) << "rank " << i + 1;
  ASSERT_EQ(a.pareto.size(), b.pareto.size());
  for (size_t i = 0; i < a.pareto.size(); ++i) EXPECT_EQ(a.pareto[i].plan, b.pareto[i].plan);
}

TEST(SearchTest, ThreadsDoNotChangeTheAnswer) {
  const Scenario s = Load("llama3-8b", "dgx-h100", 16, 8192, 256);
  SearchOptions one;
  one.threads = 1;
  SearchOptions four = one;
  four.threads = 4;
  const SearchResult a = RunSearch(s, one), b = RunSearch(s, four);
  EXPECT_EQ(b.stats.threads, 4);
  EXPECT_EQ(a.stats.evaluated, b.stats.evaluated);
  ASSERT_EQ(a.top.size(), b.top.size());
  for (size_t i = 0; i < a.top.size(); ++i) EXPECT_EQ(a.top[i].plan, b.top[i].plan);
  ASSERT_EQ(a.pareto.size(), b.pareto.size());
  for (size_t i = 0; i < a.pareto.size(); ++i) EXPECT_EQ(a.pareto[i].plan, b.pareto[i].plan);
}

TEST(SearchTest, ProgressRisesToOneAndTheCallerWorks) {
  // The calling thread is a worker too and reports progress between its blocks (at most every
  // 100 ms) and while it waits; the last report is the whole search, 1.0.
  const Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 128);
  SearchOptions o;
  o.threads = 2;
  std::vector<double> fractions;
  o.progress = [&](double fraction, double /*elapsed_s*/) { fractions.push_back(fraction); };
  const SearchResult r = RunSearch(s, o);
  EXPECT_EQ(r.stats.threads, 2);
  ASSERT_FALSE(fractions.empty());
  EXPECT_EQ(fractions.back(), 1.0);
  for (size_t i = 0; i < fractions.size(); ++i) {
    EXPECT_GE(fractions[i], 0.0);
    EXPECT_LE(fractions[i], 1.0);
    if (i > 0) EXPECT_GE(fractions[i], fractions[i - 1]);
  }
}

TEST(SearchTest, ParetoFrontIsNonDominatedAndHoldsTheFastestPlan) {
  const Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 128);
  const SearchResult r = RunSearch(s, SearchOptions{});
  ASSERT_FALSE(r.pareto.empty());
  for (const RankedPlan& a : r.pareto) {
    for (const RankedPlan& b : r.pareto) {
      if (&a == &b) continue;
      const bool dominates = a.step.tokens_per_s >= b.step.tokens_per_s && a.per_gpu_bytes <= b.per_gpu_bytes &&
                             a.train.cost_usd <= b.train.cost_usd &&
                             (a.step.tokens_per_s > b.step.tokens_per_s || a.per_gpu_bytes < b.per_gpu_bytes ||
                              a.train.cost_usd < b.train.cost_usd);
      EXPECT_FALSE(dominates);
    }
  }
  EXPECT_EQ(r.pareto.front().step.tokens_per_s, r.top.front().step.tokens_per_s);
  // The lightest plan that fits is on the front too: memory is one of its axes.
  int64_t lightest = r.pareto.front().per_gpu_bytes;
  for (const RankedPlan& p : r.pareto) lightest = std::min(lightest, p.per_gpu_bytes);
  EXPECT_LT(lightest, r.top.front().per_gpu_bytes);
}

TEST(SearchTest, MemoryBudgetIsHonoured) {
  const Scenario s = Load("llama3-70b", "dgx-h100", 64, 8192, 128);
  SearchOptions o;
  o.max_memory_frac = 0.5;
  const SearchResult r = RunSearch(s, o);
  ASSERT_FALSE(r.top.empty());
  for (const RankedPlan& p : r.top) EXPECT_LE(p.per_gpu_bytes, s.gpu.CapacityBytes() / 2);
  for (const RankedPlan& p : r.pareto) EXPECT_LE(p.per_gpu_bytes, s.gpu.CapacityBytes() / 2);
}

TEST(SearchTest, CostAndTimeObjectivesRankByTheirNumber) {
  const Scenario s = Load("llama3-8b", "dgx-h100", 16, 8192, 256);
  for (Objective obj : {Objective::kCost, Objective::kTime}) {
    SearchOptions o;
    o.objective = obj;
    o.tokens = 1e12;
    const SearchResult r = RunSearch(s, o);
    ASSERT_GE(r.top.size(), 2u);
    EXPECT_DOUBLE_EQ(r.tokens, 1e12);
    for (size_t i = 1; i < r.top.size(); ++i) {
      const double prev = obj == Objective::kCost ? r.top[i - 1].train.cost_usd : r.top[i - 1].train.days;
      const double cur = obj == Objective::kCost ? r.top[i].train.cost_usd : r.top[i].train.days;
      EXPECT_LE(prev, cur);
    }
  }
}

TEST(SearchTest, RestrictionsAreObeyed) {
  const Scenario s = Load("mixtral-8x7b", "dgx-h100", 64, 4096, 256);
  SearchOptions o;
  o.ep = {8};
  o.zero = {1};
  o.schedules = {core::Schedule::k1F1B};
  o.top_k = 20;
  const SearchResult r = RunSearch(s, o);
  ASSERT_FALSE(r.top.empty());
  for (const RankedPlan& p : r.top) {
    EXPECT_EQ(p.plan.ep, 8);
    EXPECT_EQ(p.plan.zero, 1);
    EXPECT_EQ(p.plan.schedule, core::Schedule::k1F1B);
    EXPECT_LE(p.plan.tp, s.cluster.scale_up_domain_gpus);
  }
}

TEST(SearchTest, NothingFitsIsAnEmptyAnswerWithTheLightestRejection) {
  // Llama 3 405B on one 8-GPU node: even fully sharded with full recompute its 16 B/param
  // states (405.8e9 x 16 / 8 = 812 GB per GPU) are ten times an H100.
  const Scenario s = Load("llama3-405b", "dgx-h100", 8, 8192, 64);
  const SearchResult r = RunSearch(s, SearchOptions{});
  EXPECT_TRUE(r.top.empty());
  EXPECT_TRUE(r.pareto.empty());
  EXPECT_EQ(r.stats.evaluated, 0);
  EXPECT_EQ(r.stats.pruned_bound + r.stats.pruned_monotone + r.stats.invalid + r.stats.memory_estimates,
            r.stats.enumerated);
}

TEST(SearchExplainTest, SevenBZeroZeroIsOutOfMemoryAndZeroOneFits) {
  const Scenario s = Load("llama2-7b", "dgx-h100", 8, 4096, 512);
  const SearchResult r = RunSearch(s, SearchOptions{});
  ASSERT_FALSE(r.top.empty());
  const auto verdicts =
      ExplainWellKnownPlans(s.model, s.gpu, s.cluster, s.base, core::Profile{}, SearchOptions{}, &r.top.front());
  ASSERT_GE(verdicts.size(), 4u);
  EXPECT_EQ(verdicts[0].kind, WellKnownVerdict::Kind::kOutOfMemory) << verdicts[0].name;
  ASSERT_TRUE(verdicts[0].lightest.has_value());
  EXPECT_GT(verdicts[0].lightest->per_gpu_bytes, s.gpu.CapacityBytes());
  ASSERT_FALSE(verdicts[0].reasons.empty());
  EXPECT_NE(verdicts[0].reasons[0].find("out of memory"), std::string::npos);
  EXPECT_EQ(verdicts[1].kind, WellKnownVerdict::Kind::kFits) << verdicts[1].name;
  EXPECT_GT(verdicts[1].relative_score, 0.0);
  EXPECT_LE(verdicts[1].relative_score, 1.0 + 1e-12);
}

TEST(SearchExplainTest, DivisibilityIsExplainedByValidatePlan) {
  // 2048 sequences cannot be spread over 16,384 data-parallel ranks.
  const Scenario s = Load("llama3-405b", "dgx-h100", 16384, 8192, 2048);
  const auto verdicts =
      ExplainWellKnownPlans(s.model, s.gpu, s.cluster, s.base, core::Profile{}, SearchOptions{}, nullptr);
  ASSERT_FALSE(verdicts.empty());
  EXPECT_EQ(verdicts[0].kind, WellKnownVerdict::Kind::kInvalid);
  ASSERT_FALSE(verdicts[0].reasons.empty());
  EXPECT_NE(verdicts[0].reasons[0].find("plan.global_batch"), std::string::npos) << verdicts[0].reasons[0];
  bool tp8pp16_fits = false;
  for (const auto& v : verdicts) tp8pp16_fits |= v.tp == 8 && v.pp == 16 && v.kind == WellKnownVerdict::Kind::kFits;
  EXPECT_TRUE(tp8pp16_fits);
}

}  // namespace
}  // namespace meshplan::sim
