// Every GUI table model under QAbstractItemModelTester (Fatal: a broken model contract aborts the
// binary), through the changes a user makes: degrees, an invalid plan and back, background
// results arriving; plus the Worker's cancel semantics.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <atomic>
#include <chrono>
#include <thread>

#include "core/memory.h"
#include "core/profile.h"
#include "gui/models/compare_model.h"
#include "gui/models/cost_table_model.h"
#include "gui/models/explain_model.h"
#include "gui/models/memory_table_model.h"
#include "gui/models/ops_table_model.h"
#include "gui/models/reliability_table_model.h"
#include "gui/models/scenario_model.h"
#include "gui/models/search_grid_model.h"
#include "gui/models/step_table_model.h"
#include "gui/models/timeline_table_model.h"
#include "gui/models/worker.h"
#include "sim/des.h"
#include "sim/search.h"

namespace meshplan::gui {
namespace {

using Tester = QAbstractItemModelTester;
constexpr auto kFatal = QAbstractItemModelTester::FailureReportingMode::Fatal;

// The changes every model must survive: more stages, an invalid plan (nothing to show), back.
void Exercise(ScenarioModel* s) {
  s->setDegree(Degree::kPp, 8);
  s->setDegree(Degree::kTp, 4);
  core::PlanSpec p = s->plan();
  p.global_batch = 127;  // not a multiple of mbs x dp: invalid
  s->setPlan(p);
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_FALSE(s->evaluation().errors.isEmpty());
  p.global_batch = 128;
  s->setPlan(p);
  EXPECT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  s->waitForBackground();
}

TEST(GuiModelsTest, DefaultScenarioIsValidAndFits) {
  ScenarioModel s;
  const Evaluation& e = s.evaluation();
  ASSERT_TRUE(e.valid) << e.errors.join("\n").toStdString();
  EXPECT_EQ(s.scenario().model.name, "llama3-70b");
  EXPECT_EQ(s.plan().gpus, 64);
  EXPECT_EQ(s.plan().tp * s.plan().pp * s.plan().dp * s.plan().cp, 64);
  EXPECT_TRUE(e.memory.fits);
  EXPECT_GT(e.step.tokens_per_s, 0);
}

TEST(GuiModelsTest, TightPlanIsNamedSoInTheMemoryAndCompareModels) {
  // Llama 3 8B, ZeRO-1 on 8 H100s at 7,424 tokens: 85.95 GB with the assumed fragmentation, 84.00
  // GB without it, of the 85.05 CUDA reports (tests/core/memory_test.cc): tight, not out of memory.
  ScenarioModel s;
  QString error;
  ASSERT_TRUE(s.setModelPreset("llama3-8b", &error)) << error.toStdString();
  core::PlanSpec p = s.plan();
  p.gpus = 8;
  p.tp = p.pp = p.cp = p.ep = p.vpp = 1;
  p.dp = 8;
  p.zero = 1;
  p.sequence_parallel = false;
  p.recompute = core::Recompute::kNone;
  p.micro_batch = 1;
  p.global_batch = 8;
  p.seq_len = 7424;
  s.setPlan(p);
  ASSERT_TRUE(s.evaluation().valid) << s.evaluation().errors.join("\n").toStdString();
  EXPECT_EQ(s.scenario().gpu.name, "h100-sxm");
  EXPECT_FALSE(s.evaluation().memory.fits);
  EXPECT_EQ(s.evaluation().memory.verdict, core::FitVerdict::kTight);
  MemoryTableModel m(&s);
  EXPECT_EQ(m.verdict(), core::FitVerdict::kTight);
  EXPECT_EQ(m.leastBytes(), 84'002'232'320);
  CompareModel c;
  const int col = c.pin("tight", s.scenario(), s.evaluation());
  EXPECT_EQ(c.data(c.index(CompareModel::kFits, col)).toString(), "tight");
}

TEST(GuiModelsTest, AGpuWithoutTheDefaultPrecisionTakesFp16) {
  // The default plan runs bf16; a V100 has none, so choosing it switches the plan to fp16 (as
  // `meshplan report --gpu v100` does) and the plan stays valid on its DGX-2.
  ScenarioModel s;
  EXPECT_EQ(s.plan().precision, core::Dtype::kBf16);
  QString error;
  ASSERT_TRUE(s.setGpuPreset("v100", &error)) << error.toStdString();
  EXPECT_EQ(s.scenario().cluster.name, "dgx-2");
  EXPECT_EQ(s.plan().precision, core::Dtype::kFp16);
  EXPECT_EQ(s.evaluation().errors.join("\n").toStdString().find("precision"), std::string::npos);
}

TEST(GuiModelsTest, MemoryTableModel) {
  ScenarioModel s;
  MemoryTableModel m(&s);
  Tester t(&m, kFatal);
  EXPECT_EQ(m.rowCount(), s.plan().pp);
  EXPECT_EQ(m.columnCount(), MemoryTableModel::kColumnCount);
  // Every byte column is the EstimateMemory field it names.
  const core::MemoryReport want =
      core::EstimateMemory(s.scenario().model, s.plan(), s.scenario().gpu, s.profile().memory);
  for (int r = 0; r < m.rowCount(); ++r) {
    const core::StageMemory& st = want.stages[static_cast<size_t>(r)];
    auto bytes = [&](MemoryTableModel::Column c) {
      return m.data(m.index(r, c), MemoryTableModel::kBytesRole).toLongLong();
    };
    EXPECT_EQ(bytes(MemoryTableModel::kWeights), st.weights_bytes);
    EXPECT_EQ(bytes(MemoryTableModel::kActivations), st.activations_bytes);
    EXPECT_EQ(bytes(MemoryTableModel::kTotal), st.total_bytes);
    EXPECT_EQ(bytes(MemoryTableModel::kHeadroom), want.capacity_bytes - st.total_bytes);
    EXPECT_FALSE(m.data(m.index(r, MemoryTableModel::kActivations), Qt::ToolTipRole).toString().isEmpty());
  }
  Exercise(&s);
  EXPECT_EQ(m.rowCount(), 8);
}

TEST(GuiModelsTest, StepTableModel) {
  ScenarioModel s;
  StepTableModel m(&s);
  Tester t(&m, kFatal);
  ASSERT_EQ(m.rowCount(), StepTableModel::kRowCount);
  // The rows add up to the step (StepBreakdown's contract), and the last row is the step.
  double sum = 0;
  for (int r = StepTableModel::kCompute; r <= StepTableModel::kOptimizer; ++r)
    sum += m.data(m.index(r, StepTableModel::kSeconds), StepTableModel::kSecondsRole).toDouble();
  const double step = s.evaluation().step.time_s;
  EXPECT_NEAR(sum, step, 1e-9 * step);
  EXPECT_DOUBLE_EQ(
      m.data(m.index(StepTableModel::kStep, StepTableModel::kSeconds), StepTableModel::kSecondsRole).toDouble(), step);
  Exercise(&s);
  EXPECT_EQ(m.rowCount(), StepTableModel::kRowCount);
}

TEST(GuiModelsTest, StepTableModelSaysHowCloseSuchPredictionsCame) {
  // The step view's "how close" metric: the shipped accuracy table's rows for the plan's groups
  // (sim::StepGroupsOf, no stack), as `meshplan report` prints them, and the least accurate of
  // them as its text; an MoE model's plan reads the MoE group's error and its experts-per-rank
  // group's; an invalid plan none.
  ScenarioModel s;
  StepTableModel m(&s);
  auto table = sim::LoadAccuracyTable("step");
  ASSERT_TRUE(table.ok());
  auto want = [&] {
    const core::Scenario& sc = s.scenario();
    return sim::MatchAccuracy(*table, sim::StepGroupsOf(sc.gpu.name, sc.model, sc.plan, ""));
  };
  ASSERT_EQ(m.accuracy().size(), 6u);  // gpu, model, precision, sharding, scale, sequence
  for (size_t i = 0; i < m.accuracy().size(); ++i) {
    EXPECT_EQ(m.accuracy()[i].dimension, want()[i].dimension);
    EXPECT_EQ(m.accuracy()[i].value, want()[i].value);
    EXPECT_EQ(m.accuracy()[i].n, want()[i].n);
    EXPECT_GT(m.accuracy()[i].n, 0u) << m.accuracy()[i].value;
  }
  const sim::AccuracyGroup* worst = sim::LeastAccurate(m.accuracy());
  ASSERT_NE(worst, nullptr);
  EXPECT_TRUE(m.accuracyText().contains(QString::fromStdString(worst->value))) << m.accuracyText().toStdString();
  EXPECT_TRUE(m.accuracyHelp().contains("meshplan validate --dataset tests/data/validation"))
      << m.accuracyHelp().toStdString();
  // The default scenario's model has published runs on its GPU (llama3-70b on H100s): the tooltip
  // lists the nearest, as report does.
  bool same_gpu = false;
  const auto like = sim::RunsLike(*table, s.scenario().model.name, s.scenario().gpu.name,
                                  core::Name(s.plan().precision), s.plan().gpus, 5, &same_gpu);
  ASSERT_FALSE(like.empty());
  EXPECT_TRUE(m.accuracyHelp().contains(QString::fromStdString(like.front()->id))) << m.accuracyHelp().toStdString();
  // ... and the range runs like it measured (sim::RangeOf), as tokens/s per GPU: the prediction
  // over (1 + the 90th percentile error) to over (1 + the 10th).
  const sim::AccuracyRange r = sim::RangeOf(*table, s.scenario().gpu.name, false, core::Name(s.plan().precision),
                                            sim::SequenceBucketOf(s.plan()));
  ASSERT_GT(r.n, 0u);
  const double tps = s.evaluation().step.tokens_per_s_per_gpu;
  const QString range = QString("runs like it (the %1 of %2) measured %3x to %4x the predicted tokens/s")
                            .arg(r.n)
                            .arg(QString::fromStdString(r.basis))
                            .arg(r.LowFactor(), 0, 'f', 2)
                            .arg(r.HighFactor(), 0, 'f', 2);
  EXPECT_TRUE(m.accuracyHelp().contains(range)) << m.accuracyHelp().toStdString();
  EXPECT_TRUE(m.accuracyHelp().contains(QString("%1 to %2 tokens/s per GPU")
                                            .arg(tps / (1 + r.p90_error), 0, 'f', 0)
                                            .arg(tps / (1 + r.p10_error), 0, 'f', 0)))
      << m.accuracyHelp().toStdString();
  // ... and how close the ratio of two plans came (the table's what-if pairs, sim/comparison.h).
  ASSERT_FALSE(table->comparisons.empty());
  EXPECT_TRUE(m.accuracyHelp().contains(
      QString("against another plan: the ratio of two published runs that differ in one thing came within %1 "
              "(median, %2 pairs): precision ")
          .arg(QString::asprintf("%.1f%%", 100 * table->comparisons.front().median_abs_error))
          .arg(table->comparisons.front().n)))
      << m.accuracyHelp().toStdString();
  // ... and how far one plan's published runs differ where it was printed twice (the table's
  // repeats, sim::FindRepeats), as report prints it: 109 plans, 320 runs in the shipped table.
  ASSERT_GT(table->repeats.scenarios, 0u);
  EXPECT_TRUE(m.accuracyHelp().contains(
      QString("one plan measured twice: %1 plans printed more than once (%2 runs) differ by %3 (median; p90 %4), "
              "so one prediction is at least %5 off one of them (median; p90 %6)")
          .arg(table->repeats.scenarios)
          .arg(table->repeats.runs)
          .arg(QString::asprintf("%.1f%%", 100 * table->repeats.spread_median),
               QString::asprintf("%.1f%%", 100 * table->repeats.spread_p90),
               QString::asprintf("%.1f%%", 100 * table->repeats.floor_median),
               QString::asprintf("%.1f%%", 100 * table->repeats.floor_p90))))
      << m.accuracyHelp().toStdString();
  // ... and the strong-scaling series split per microbatch and per step (the table's step_split,
  // sim::SplitSteps), as report prints it: 20 series, 103 runs in the shipped table.
  ASSERT_GT(table->step_split.series, 0u);
  EXPECT_TRUE(m.accuracyHelp().contains(
      QString("one plan at several GPU counts: over %1 strong-scaling series (%2 runs) the time a microbatch adds "
              "came within %3 (median; p90 %4, signed %5) and a step's fixed cost %6 s off")
          .arg(table->step_split.series)
          .arg(table->step_split.runs)
          .arg(QString::asprintf("%.1f%%", 100 * table->step_split.t_median),
               QString::asprintf("%.1f%%", 100 * table->step_split.t_p90),
               QString::asprintf("%+.1f%%", 100 * table->step_split.t_signed),
               QString::asprintf("%+.2f", table->step_split.f_gap_median_s))))
      << m.accuracyHelp().toStdString();
  QString error;
  ASSERT_TRUE(s.setModelPreset("mixtral-8x7b", &error)) << error.toStdString();
  core::PlanSpec p = s.plan();
  p.ep = 8;
  s.setPlan(p);
  ASSERT_TRUE(s.evaluation().valid) << s.evaluation().errors.join("\n").toStdString();
  ASSERT_EQ(m.accuracy().size(), 7u);  // gpu, model, experts per rank, precision, sharding, scale, sequence
  EXPECT_EQ(m.accuracy()[1].value, "moe");
  EXPECT_EQ(m.accuracy()[2].dimension, "experts/rank");
  EXPECT_EQ(m.accuracy()[2].value, "<=4");  // Mixtral's 8 experts over EP 8: one a rank
  EXPECT_TRUE(m.accuracyText().contains("model moe")) << m.accuracyText().toStdString();
  p.global_batch = 127;  // invalid: nothing to show
  s.setPlan(p);
  EXPECT_TRUE(m.accuracy().empty());
  EXPECT_EQ(m.accuracyText(), "-");
}

TEST(GuiModelsTest, OpsTableModel) {
  // The rows are sim::CostStepGraph's ops, list by list (`meshplan report --ops`): the default
  // plan's first row is the dense layer's first op, every GEMM at the slowest GPU's pace times its
  // roofline time, and an invalid plan shows nothing.
  ScenarioModel s;
  OpsTableModel m(&s);
  Tester t(&m, kFatal);
  const core::Scenario& sc = s.scenario();
  const auto lists = sim::CostStepGraph(sc.model, sc.plan, sc.gpu, sc.cluster, s.profile());
  size_t n = 0;
  for (const auto& l : lists) n += l.ops.size();
  ASSERT_EQ(m.rowCount(), static_cast<int>(n));
  EXPECT_EQ(m.data(m.index(0, OpsTableModel::kList)).toString(), "dense layer");
  int gemms = 0;
  for (int r = 0; r < m.rowCount(); ++r) {
    const sim::CostedOp& c = m.op(r);
    EXPECT_DOUBLE_EQ(m.data(m.index(r, OpsTableModel::kTime), OpsTableModel::kSecondsRole).toDouble(), c.time_s);
    if (c.op.kind != core::OpKind::kGemm) continue;
    ++gemms;
    EXPECT_DOUBLE_EQ(c.time_s, sim::SlowestGpuPace(sc.plan, sc.gpu) * sim::ComputeOpTime(c.op, sc.gpu, s.profile()));
    EXPECT_TRUE(m.data(m.index(r, OpsTableModel::kHow)).toString().contains("TFLOP/s")) << r;
  }
  EXPECT_GT(gemms, 0);
  core::PlanSpec p = s.plan();
  p.global_batch = 127;  // invalid: nothing to show
  s.setPlan(p);
  EXPECT_EQ(m.rowCount(), 0);
  Exercise(&s);
  EXPECT_GT(m.rowCount(), 0);
}

TEST(GuiModelsTest, CostTableModelFillsInReliabilityRows) {
  ScenarioModel s;
  CostTableModel m(&s);
  Tester t(&m, kFatal);
  ASSERT_EQ(m.rowCount(), CostTableModel::kRowCount);
  EXPECT_DOUBLE_EQ(m.value(CostTableModel::kDays), s.evaluation().train.days);
  EXPECT_DOUBLE_EQ(m.value(CostTableModel::kCost), s.evaluation().train.cost_usd);
  s.waitForBackground();
  ASSERT_EQ(s.evaluation().reliability_state, Evaluation::Pending::kReady)
      << s.evaluation().reliability_error.toStdString();
  EXPECT_DOUBLE_EQ(m.value(CostTableModel::kDaysP50), s.evaluation().reliability->mc.days.p50);
  // Failures only add time.
  EXPECT_GE(m.value(CostTableModel::kDaysP50), m.value(CostTableModel::kDays));
  Exercise(&s);
}

TEST(GuiModelsTest, ReliabilityTableModelIsTheSweep) {
  ScenarioModel s;
  ReliabilityTableModel m(&s);
  Tester t(&m, kFatal);
  s.waitForBackground();
  const auto& rel = s.evaluation().reliability;
  ASSERT_TRUE(rel.has_value());
  ASSERT_EQ(m.rowCount(), static_cast<int>(rel->sweep.size()));
  ASSERT_GT(m.rowCount(), 10);
  for (int r = 1; r < m.rowCount(); ++r)
    EXPECT_GT(m.value(r, ReliabilityTableModel::kInterval), m.value(r - 1, ReliabilityTableModel::kInterval));
  // The optimum is in the sweep, and no interval beats it.
  double best = 0;
  for (int r = 0; r < m.rowCount(); ++r) best = std::max(best, m.value(r, ReliabilityTableModel::kGoodput));
  EXPECT_NEAR(best, rel->at_optimum.goodput, 1e-12);
  EXPECT_EQ(s.evaluation().days_samples.size(), 500u);
  Exercise(&s);
}

TEST(GuiModelsTest, TimelineTableModelIsTheSimulatorsTimeline) {
  ScenarioModel s;
  TimelineTableModel m(&s);
  Tester t(&m, kFatal);
  const core::Scenario& sc = s.scenario();
  auto want = sim::SimulateStreams(
      s.plan(), sim::StageStreamCosts(sc.model, sc.plan, sc.gpu, sc.cluster, s.profile(), s.evaluation().step.stages),
      s.plan().Microbatches(), {});
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(m.rowCount(), static_cast<int>(want->ops.size()));
  EXPECT_EQ(m.ranks(), s.plan().pp);
  for (int r = 0; r < m.rowCount(); r += 37) {
    EXPECT_EQ(m.op(r).stage, want->ops[static_cast<size_t>(r)].stage);
    EXPECT_DOUBLE_EQ(m.data(m.index(r, TimelineTableModel::kEnd), TimelineTableModel::kValueRole).toDouble(),
                     want->ops[static_cast<size_t>(r)].end_s);
  }
  Exercise(&s);
  EXPECT_EQ(m.ranks(), 8);
}

TEST(GuiModelsTest, LargePipelinesAreSimulatedOnTheWorker) {
  ScenarioModel s;
  TimelineTableModel m(&s);
  Tester t(&m, kFatal);
  core::PlanSpec p = s.plan();
  p.global_batch = 8192;  // 4096 microbatches x 4 ranks x 2 kinds > kSyncDesOps
  s.setPlan(p);
  ASSERT_TRUE(s.evaluation().valid);
  EXPECT_EQ(s.evaluation().timeline_state, Evaluation::Pending::kRunning);
  EXPECT_EQ(m.rowCount(), 0);
  s.waitForBackground();
  EXPECT_EQ(s.evaluation().timeline_state, Evaluation::Pending::kReady);
  EXPECT_EQ(m.rowCount(), 2 * 4 * 4096);
}

TEST(GuiModelsTest, SearchGridModelCellsAreSearchPlansRestricted) {
  ScenarioModel s;
  SearchGridModel m(&s);
  Tester t(&m, kFatal);
  m.run(SearchAxis::kTp, SearchAxis::kPp);
  m.worker()->WaitForIdle();
  ASSERT_EQ(m.columnCount(), static_cast<int>(m.axisValues(SearchAxis::kTp).size()));
  ASSERT_EQ(m.rowCount(), static_cast<int>(m.axisValues(SearchAxis::kPp).size()));
  // The cell TP 8 x PP 4 is what SearchPlans finds when restricted to those values.
  const auto& xs = m.xValues();
  const auto& ys = m.yValues();
  const int col = static_cast<int>(std::find(xs.begin(), xs.end(), 8) - xs.begin());
  const int row = static_cast<int>(std::find(ys.begin(), ys.end(), 4) - ys.begin());
  ASSERT_LT(col, m.columnCount());
  ASSERT_LT(row, m.rowCount());
  sim::SearchOptions o;
  o.top_k = 1;
  o.tokens = s.evaluation().tokens;
  o.tp = {8};
  o.pp = {4};
  const auto& sc = s.scenario();
  const sim::SearchResult want = sim::SearchPlans(sc.model, sc.gpu, sc.cluster, sc.plan, s.profile(), o);
  ASSERT_FALSE(want.top.empty());
  const auto& cell = m.cell(row, col);
  ASSERT_EQ(cell.state, SearchGridModel::CellState::kFits);
  EXPECT_EQ(cell.plan->plan, want.top.front().plan);
  EXPECT_DOUBLE_EQ(m.data(m.index(row, col), SearchGridModel::kTokensPerSPerGpuRole).toDouble(),
                   want.top.front().step.tokens_per_s_per_gpu);
  // Every cell was computed; none is left pending.
  for (int r = 0; r < m.rowCount(); ++r)
    for (int c = 0; c < m.columnCount(); ++c) EXPECT_NE(m.cell(r, c).state, SearchGridModel::CellState::kPending);
  // Changing what the search depends on makes the map stale; a degree does not.
  s.setDegree(Degree::kTp, 4);
  EXPECT_FALSE(m.stale());
  s.setGpus(128);
  EXPECT_TRUE(m.stale());
}

TEST(GuiModelsTest, SearchCanBeCancelled) {
  ScenarioModel s;
  SearchGridModel m(&s);
  Tester t(&m, kFatal);
  QSignalSpy finished(m.worker(), &Worker::finished);
  m.run(SearchAxis::kTp, SearchAxis::kPp);
  m.cancel();
  ASSERT_EQ(finished.count(), 1);
  EXPECT_TRUE(finished.at(0).at(0).toBool());
  EXPECT_FALSE(m.worker()->busy());
  m.worker()->WaitForIdle();
}

TEST(GuiModelsTest, CompareModelPinsUpToFour) {
  ScenarioModel s;
  CompareModel m;
  Tester t(&m, kFatal);
  for (int64_t tp : {8, 4, 2, 1, 8}) {
    s.setDegree(Degree::kTp, tp);
    m.pin(QString("tp %1").arg(tp), s.scenario(), s.evaluation());
  }
  ASSERT_EQ(m.columnCount(), CompareModel::kMaxPins);
  EXPECT_EQ(m.headerData(0, Qt::Horizontal).toString(), "tp 4");  // the oldest (tp 8) was dropped
  EXPECT_EQ(m.scenario(0).plan.tp, 4);
  const core::Scenario& pinned = m.scenario(0);
  EXPECT_EQ(m.data(m.index(CompareModel::kMemory, 0), CompareModel::kValueRole).toLongLong(),
            core::EstimateMemory(pinned.model, pinned.plan, pinned.gpu, s.profile().memory).per_gpu_bytes);
  // The degrees row differs between pins: bold.
  EXPECT_TRUE(m.data(m.index(CompareModel::kDegrees, 0), Qt::FontRole).isValid());
  EXPECT_FALSE(m.data(m.index(CompareModel::kModel, 0), Qt::FontRole).isValid());
  m.unpin(1);
  EXPECT_EQ(m.columnCount(), 3);
  m.clear();
  EXPECT_EQ(m.columnCount(), 0);
}

TEST(GuiModelsTest, ExplainModelExplainsThePlan) {
  ScenarioModel s;
  ExplainModel m(&s);
  Tester t(&m, kFatal);
  m.waitForIdle();
  ASSERT_TRUE(m.error().isEmpty()) << m.error().toStdString();
  ASSERT_GT(m.rowCount(), 3);
  EXPECT_FALSE(m.data(m.index(0, ExplainModel::kTitle)).toString().isEmpty());
  EXPECT_NE(m.explanation().title.find("llama3-70b"), std::string::npos);
  Exercise(&s);
  m.waitForIdle();
  EXPECT_GT(m.rowCount(), 3);
}

TEST(GuiWorkerTest, CancelDropsTheJobsResults) {
  Worker w;
  std::atomic<bool> saw_cancel{false};
  bool delivered = false;
  QSignalSpy finished(&w, &Worker::finished);
  w.Start("spin", [&](Worker::Context& ctx) {
    while (!ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    saw_cancel = true;
    ctx.Post([&] { delivered = true; });
  });
  EXPECT_TRUE(w.busy());
  w.Cancel();
  EXPECT_FALSE(w.busy());
  ASSERT_EQ(finished.count(), 1);
  EXPECT_TRUE(finished.at(0).at(0).toBool());
  // A new job supersedes; the cancelled one's post never arrives.
  int value = 0;
  w.Start("answer", [&](Worker::Context& ctx) { ctx.Post([&] { value = 42; }); });
  w.WaitForIdle();
  EXPECT_EQ(value, 42);
  for (int i = 0; i < 1000 && !saw_cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  QCoreApplication::processEvents();
  EXPECT_TRUE(saw_cancel);
  EXPECT_FALSE(delivered);
}

}  // namespace
}  // namespace meshplan::gui
