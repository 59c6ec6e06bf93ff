// The window driven like a user: the inputs panel's lists and boxes change the plan, and what the
// memory view shows must be what `meshplan report` computes for the same plan (the plan as the
// CLI resolves it from the GUI's "copy as command" line, then core::EstimateMemory). Also: invalid
// values greyed with their rule, the BF16 first/last layers under FP8, the MoE probabilities'
// placement, TP overlap, the loss, offloading and recomputed layers, save/open round trip, a
// search cell click, the HF config import, the software-stack choice and the evaluation time of a
// dense 405B plan.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <QApplication>
#include <QMenu>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTest>
#include <string>
#include <vector>

#include "cli/plan_flags.h"
#include "core/memory.h"
#include "core/profile.h"
#include "core/stack.h"
#include "core/validate.h"
#include "gui/main_window.h"
#include "gui/views/memory_view.h"
#include "gui/views/search_view.h"
#include "gui/views/step_view.h"
#include "sim/step_model.h"

namespace meshplan::gui {
namespace {

// The scenario `meshplan` resolves from `command` (the GUI's copy-as-command line): the CLI's own
// flag registration and resolution (cli/plan_flags.cc), as `meshplan report` runs them.
bool ResolveCommand(const QString& command, core::Scenario* out, std::string* error) {
  CLI::App app("meshplan");
  auto* report = app.add_subcommand("report");
  cli::PlanFlags flags;
  flags.Register(report);
  double tokens = 0;
  report->add_option("--tokens", tokens);
  try {
    app.parse(command.section('\n', 0, 0).toStdString(), true);
  } catch (const CLI::ParseError& e) {
    *error = std::string("parse: ") + e.what();
    return false;
  }
  core::Diagnostics d;
  std::vector<std::string> notes;
  if (!flags.Resolve(out, &d, &notes)) {
    *error = d.ToStatus().message();
    return false;
  }
  return true;
}

// The CLI's resolution of the window's copy-as-command line, which must mean the window's plan.
void ResolveTheWindowsCommand(const ScenarioModel& s, core::Scenario* cli) {
  const QString command = s.commandLine();
  std::string error;
  ASSERT_TRUE(ResolveCommand(command, cli, &error)) << error << "\n" << command.toStdString();
  EXPECT_EQ(cli->plan, s.plan()) << command.toStdString();
}

// The window's copied command, run as `meshplan report` runs it (the default profile), gives the
// memory the window shows, byte for byte.
void ExpectTheWindowsCommandGivesItsMemory(const ScenarioModel& s) {
  core::Scenario cli;
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(s, &cli));
  const auto profile = core::LoadProfile("default");
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(core::EstimateMemory(cli.model, cli.plan, cli.gpu, profile->memory).per_gpu_bytes,
            s.evaluation().memory.per_gpu_bytes);
}

// Selects `value` in a degree list the way a user does (the list must offer it enabled).
void Choose(QComboBox* box, int64_t value) {
  const int i = box->findData(QVariant::fromValue<qlonglong>(value));
  ASSERT_GE(i, 0) << "the list does not offer " << value;
  auto* m = qobject_cast<QStandardItemModel*>(box->model());
  ASSERT_TRUE(m->item(i)->isEnabled()) << value << " is greyed: " << m->item(i)->toolTip().toStdString();
  box->setCurrentIndex(i);
}

// The panel's MoE shape for the expert tests: `model` on 8 GPUs, all of them the EP group (TP 1,
// PP 1), one `seq`-token sequence per microbatch; returns the plan for more settings.
core::PlanSpec OnEightGpusAtEp8(InputsPanel* in, ScenarioModel* s, const char* model, int64_t seq) {
  in->modelBox()->setCurrentIndex(in->modelBox()->findData(model));
  in->gpusBox()->setValue(8);
  Choose(in->degreeBox(Degree::kPp), 1);
  Choose(in->degreeBox(Degree::kTp), 1);
  Choose(in->degreeBox(Degree::kEp), 8);
  core::PlanSpec p = s->plan();
  p.seq_len = seq;
  p.micro_batch = 1;
  return p;
}

TEST(GuiDriveTest, TpOneToEightMemoryViewEqualsReport) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  // Llama-3-70B on 64 GPUs, one pipeline stage so TP alone moves the numbers.
  in->modelBox()->setCurrentIndex(in->modelBox()->findData("llama3-70b"));
  in->gpusBox()->setValue(64);
  Choose(in->degreeBox(Degree::kPp), 1);
  const auto profile = core::LoadProfile("default");
  ASSERT_TRUE(profile.ok());
  for (int64_t tp : {1, 2, 4, 8}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    Choose(in->degreeBox(Degree::kTp), tp);
    ASSERT_EQ(s->plan().tp, tp);
    ASSERT_EQ(s->plan().dp, 64 / tp);  // dp follows the GPU count
    ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();

    ASSERT_FALSE(s->commandLine().contains('\n')) << s->commandLine().toStdString();
    core::Scenario cli;
    ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
    const core::MemoryReport want = core::EstimateMemory(cli.model, cli.plan, cli.gpu, profile->memory);

    // The table model: exact bytes.
    MemoryTableModel* m = w.memoryModel();
    ASSERT_EQ(m->rowCount(), static_cast<int>(want.stages.size()));
    for (int r = 0; r < m->rowCount(); ++r) {
      const core::StageMemory& st = want.stages[static_cast<size_t>(r)];
      const std::pair<MemoryTableModel::Column, int64_t> expected[] = {
          {MemoryTableModel::kWeights, st.weights_bytes},
          {MemoryTableModel::kGrads, st.grads_bytes},
          {MemoryTableModel::kMasterWeights, st.master_weights_bytes},
          {MemoryTableModel::kMoments, st.optimizer_moments_bytes},
          {MemoryTableModel::kActivations, st.activations_bytes},
          {MemoryTableModel::kOverheads, st.other_bytes},
          {MemoryTableModel::kTotal, st.total_bytes}};
      for (const auto& [col, bytes] : expected)
        EXPECT_EQ(m->data(m->index(r, col), MemoryTableModel::kBytesRole).toLongLong(), bytes)
            << MemoryTableModel::termName(col).toStdString();
      // The table shows the report's GB with two decimals.
      EXPECT_EQ(m->data(m->index(r, MemoryTableModel::kTotal)).toString(),
                QString::number(static_cast<double>(st.total_bytes) / 1e9, 'f', 2));
    }
    // The chart: one stacked bar per stage, segments in GB, against the HBM line.
    MemoryView* v = w.memoryView();
    ASSERT_EQ(v->barCount(), static_cast<int>(want.stages.size()));
    EXPECT_DOUBLE_EQ(v->hbmLineGb(), static_cast<double>(want.capacity_bytes) / 1e9);
    for (int r = 0; r < v->barCount(); ++r) {
      const std::vector<double> bars = v->barValues(r);
      const auto cols = MemoryView::stackedColumns();
      ASSERT_EQ(bars.size(), cols.size());
      double sum = 0;
      for (size_t k = 0; k < cols.size(); ++k) {
        EXPECT_DOUBLE_EQ(bars[k], static_cast<double>(m->bytes(r, cols[k])) / 1e9);
        sum += bars[k];
      }
      EXPECT_NEAR(sum, static_cast<double>(want.stages[static_cast<size_t>(r)].total_bytes) / 1e9, 1e-9);
    }
    EXPECT_EQ(s->evaluation().memory.fits, want.fits);
  }
  // Sanity of the physics the user watches: more TP, less memory per GPU.
  EXPECT_LT(s->evaluation().memory.per_gpu_bytes, core::EstimateMemory(
                                                      s->scenario().model,
                                                      [&] {
                                                        core::PlanSpec p = s->plan();
                                                        p.tp = 1;
                                                        p.dp = 64;
                                                        return p;
                                                      }(),
                                                      s->scenario().gpu, profile->memory)
                                                      .per_gpu_bytes);
}

TEST(GuiDriveTest, InvalidDegreesAreGreyedWithTheRule) {
  MainWindow w;
  QComboBox* tp = w.inputs()->degreeBox(Degree::kTp);
  auto* m = qobject_cast<QStandardItemModel*>(tp->model());
  ASSERT_NE(m, nullptr);
  // Llama-3-70B on 64 GPUs with pp 4: the list offers the divisors of 64; tp 1-16 leave a dp
  // (16: dp 1), tp 32 and 64 need more than 64 GPUs with pp 4 and are greyed, saying why.
  ASSERT_EQ(w.scenario()->plan().pp, 4);
  for (int i = 0; i < tp->count(); ++i) {
    const int64_t v = tp->itemData(i).toLongLong();
    SCOPED_TRACE("tp " + std::to_string(v));
    EXPECT_EQ(m->item(i)->isEnabled(), v <= 16);
    if (v > 16) {
      EXPECT_TRUE(m->item(i)->toolTip().contains("does not divide gpus = 64")) << m->item(i)->toolTip().toStdString();
    }
  }
  // No PP is greyed for its layer count: 80 layers that do not divide (PP 32 with 16 chunks of 3
  // and 16 of 2) take the default uneven split (core::DefaultStageSplit), as in the CLI; PP 32
  // is greyed only because tp x pp exceeds the 64 GPUs.
  bool pp32_seen = false;
  for (const Choice& c : w.scenario()->choices(Degree::kPp)) {
    EXPECT_FALSE(c.reason.contains("model.layers")) << c.value << ": " << c.reason.toStdString();
    if (c.value == 32) {
      pp32_seen = true;
      EXPECT_FALSE(c.valid);
      EXPECT_TRUE(c.reason.contains("gpus")) << c.reason.toStdString();
    }
  }
  EXPECT_TRUE(pp32_seen);
  // Every enabled value validates and every greyed one does not: the list and core agree.
  for (const Choice& c : w.scenario()->choices(Degree::kPp)) {
    core::Diagnostics d;
    core::ValidatePlan(w.scenario()->planWith(Degree::kPp, c.value), w.scenario()->scenario().model,
                       w.scenario()->scenario().gpu, w.scenario()->scenario().cluster, &d);
    EXPECT_EQ(c.valid, !d.has_errors()) << "pp " << c.value;
  }
}

TEST(GuiDriveTest, CopyAsCommandMeansTheSamePlan) {
  ScenarioModel s;
  // The default; interleaved; 405B (126 layers) with the balanced uneven split over PP 16; ZeRO-3
  // with the tokens set.
  std::vector<std::function<void()>> edits = {[] {},
                                              [&] {
                                                s.setDegree(Degree::kPp, 8);
                                                s.setDegree(Degree::kVpp, 2);  // switches 1f1b to interleaved
                                              },
                                              [&] {
                                                QString err;
                                                ASSERT_TRUE(s.setModelPreset("llama3-405b", &err)) << err.toStdString();
                                                s.setGpus(16384);
                                                core::PlanSpec p = s.plan();
                                                p.global_batch = 2048;
                                                s.setPlan(p);
                                                s.setDegree(Degree::kVpp, 1);  // back to 1f1b
                                                s.setDegree(Degree::kTp, 8);
                                                s.setDegree(Degree::kPp, 16);
                                              },
                                              [&] {
                                                core::PlanSpec p = s.plan();
                                                p.zero = 3;
                                                p.recompute = core::Recompute::kFull;
                                                s.setPlan(p);
                                                s.setTokens(15.6e12);
                                              },
                                              // The fields a stack sets: module-level selective
                                              // recomputation, the cross entropy, eager
                                              // elementwise kernels, per-tensor ZeRO-3 gathers,
                                              // FP8 current scaling, MoE probabilities at the
                                              // unpermutation.
                                              [&] {
                                                core::PlanSpec p = s.plan();
                                                p.recompute = core::Recompute::kSelective;
                                                p.recompute_modules =
                                                    core::ModuleBit(core::RecomputeModule::kLayernorm) |
                                                    core::ModuleBit(core::RecomputeModule::kMlp);
                                                p.cross_entropy = core::CrossEntropy::kUpcast;
                                                p.elementwise = core::Elementwise::kEager;
                                                p.zero3_gather = core::Zero3Gather::kPerTensor;
                                                p.fp8_scaling = core::Fp8Scaling::kCurrent;
                                                p.moe_probs = core::MoeProbs::kUnpermute;
                                                s.setPlan(p);
                                              },
                                              // Megatron-Core's native fused loss and a deferred
                                              // output-layer weight gradient.
                                              [&] {
                                                core::PlanSpec p = s.plan();
                                                p.cross_entropy = core::CrossEntropy::kNative;
                                                p.deferred_head_wgrad = 2;
                                                s.setPlan(p);
                                              },
                                              // FP8 with the first layer and the last two kept in
                                              // BF16 (--bf16-layers-at-start/--bf16-layers-at-end).
                                              [&] {
                                                core::PlanSpec p = s.plan();
                                                p.precision = core::Dtype::kFp8;
                                                p.bf16_layers_at_start = 1;
                                                p.bf16_layers_at_end = 2;
                                                s.setPlan(p);
                                              },
                                              // Sliding-window layers (the Inputs panel's box):
                                              // --sliding-window and --global-attention-every.
                                              [&] {
                                                core::ModelSpec m = s.scenario().model;
                                                m.sliding_window = 4096;
                                                m.global_attention_every = 4;
                                                s.setModel(m);
                                              }};
  for (size_t i = 0; i < edits.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    edits[i]();
    ASSERT_TRUE(s.evaluation().valid) << s.evaluation().errors.join("\n").toStdString();
    if (i == 1) {
      EXPECT_EQ(s.plan().schedule, core::Schedule::kInterleaved);
    }
    if (i == 2) {
      EXPECT_EQ(s.plan().stage_layers.size(), 16u);  // 7 + 14 x 8 + 7 (search.h)
      EXPECT_EQ(s.plan().schedule, core::Schedule::k1F1B);
    }
    const QString command = s.commandLine();
    ASSERT_FALSE(command.contains('\n')) << command.toStdString();
    core::Scenario cli;
    ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(s, &cli));
    // The CLI names a model its flags modified "<preset> (modified)"; the GUI keeps the name.
    core::ModelSpec want = s.scenario().model;
    if (cli.model.name != want.name) {
      EXPECT_EQ(cli.model.name, want.name + " (modified)");
      want.name = cli.model.name;
    }
    EXPECT_EQ(cli.model, want) << command.toStdString();
    EXPECT_EQ(cli.gpu, s.scenario().gpu);
    EXPECT_EQ(cli.cluster, s.scenario().cluster);
  }
  EXPECT_TRUE(s.commandLine().contains("--tokens 15600000000000"));
  EXPECT_TRUE(s.commandLine().contains("--sliding-window 4096 --global-attention-every 4"))
      << s.commandLine().toStdString();
  // An edit no flag expresses is said, not dropped.
  s.setPricePerGpuHour(1.25);
  EXPECT_TRUE(s.commandLine().contains("# not expressed: price per GPU-hour $1.25"));
}

// The HBM box shows the physical memory and says what a plan may fill: on an H100 the 85.05 GB
// CUDA reports (its preset's measurement), which the memory view's capacity is. Typing another
// size is another GPU: the measurement goes, and the typed size is the capacity.
TEST(GuiDriveTest, HbmBoxNamesWhatCudaReportsAndAnEditDropsIt) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  ASSERT_EQ(s->scenario().gpu.name, "h100-sxm");
  EXPECT_NEAR(in->hbmBox()->value(), 85.9, 0.05);
  EXPECT_TRUE(in->hbmBox()->toolTip().contains("A plan may fill 85.05 GB")) << in->hbmBox()->toolTip().toStdString();
  EXPECT_EQ(w.memoryModel()->capacityBytes(), 85'045'477'376);
  in->hbmBox()->setValue(96.0);
  EXPECT_EQ(s->scenario().gpu.hbm_bytes, 96'000'000'000);
  EXPECT_EQ(s->scenario().gpu.cuda_total_bytes, 0);
  EXPECT_EQ(w.memoryModel()->capacityBytes(), 96'000'000'000);
  EXPECT_TRUE(in->hbmBox()->toolTip().contains("No measured CUDA total")) << in->hbmBox()->toolTip().toStdString();
}

// The BF16 first and last layers under FP8, set in the inputs panel as a user does: the boxes are
// off under bf16, choosing fp8 turns them and FP8's scaling on, and what the window evaluates is
// what `meshplan report` computes for its copy-as-command line. Llama-3-70B on 64 GPUs at PP 4:
// 20 layers a stage, so the last 4 in BF16 lie on the last stage alone, which then paces the
// pipeline: the step lies between the all-FP8 and the all-BF16 plans'.
TEST(GuiDriveTest, Bf16LayersUnderFp8AreSetInThePanelAndCostAsTheCliSays) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  ASSERT_EQ(s->plan().precision, core::Dtype::kBf16);
  ASSERT_EQ(s->plan().pp, 4);
  ASSERT_EQ(s->scenario().model.layers, 80);
  EXPECT_FALSE(in->bf16LayersAtStartBox()->isEnabled());
  EXPECT_FALSE(in->bf16LayersAtEndBox()->isEnabled());
  EXPECT_FALSE(in->fp8ScalingBox()->isEnabled());
  ASSERT_TRUE(s->evaluation().valid);
  const double bf16_step = s->evaluation().step.time_s;

  auto choose = [](QComboBox* box, int data) {
    const int i = box->findData(data);
    ASSERT_GE(i, 0) << "the list does not offer " << data;
    box->setCurrentIndex(i);
  };
  choose(in->precisionBox(), static_cast<int>(core::Dtype::kFp8));
  ASSERT_EQ(s->plan().precision, core::Dtype::kFp8);
  EXPECT_TRUE(in->bf16LayersAtEndBox()->isEnabled());
  EXPECT_TRUE(in->fp8ScalingBox()->isEnabled());
  // Megatron-Core refuses BF16 layers beside delayed scaling (the plan's default): current.
  choose(in->fp8ScalingBox(), static_cast<int>(core::Fp8Scaling::kCurrent));
  ASSERT_EQ(s->plan().fp8_scaling, core::Fp8Scaling::kCurrent);
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  const double fp8_step = s->evaluation().step.time_s;

  in->bf16LayersAtEndBox()->setValue(4);
  ASSERT_EQ(s->plan().bf16_layers_at_end, 4);
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  const double mixed_step = s->evaluation().step.time_s;
  EXPECT_LT(fp8_step, mixed_step);
  EXPECT_LT(mixed_step, bf16_step);

  EXPECT_TRUE(s->commandLine().contains("--bf16-layers-at-end 4")) << s->commandLine().toStdString();
  core::Scenario cli;
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
  const auto profile = core::LoadProfile("default");
  ASSERT_TRUE(profile.ok());
  EXPECT_NEAR(sim::EstimateStep(cli.model, cli.plan, cli.gpu, cli.cluster, *profile).time_s, mixed_step,
              1e-12 * mixed_step);
  EXPECT_EQ(core::EstimateMemory(cli.model, cli.plan, cli.gpu, profile->memory).per_gpu_bytes,
            s->evaluation().memory.per_gpu_bytes);

  // Back to bf16 with a count set: kept and refused naming the field (never silently dropped),
  // the box left on so that the user can clear it.
  choose(in->precisionBox(), static_cast<int>(core::Dtype::kBf16));
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_TRUE(s->evaluation().errors.join("\n").contains("plan.bf16_layers_at_end"))
      << s->evaluation().errors.join("\n").toStdString();
  EXPECT_TRUE(in->bf16LayersAtEndBox()->isEnabled());
  EXPECT_EQ(in->bf16LayersAtEndBox()->value(), 4);
  EXPECT_FALSE(in->bf16LayersAtStartBox()->isEnabled());
  in->bf16LayersAtEndBox()->setValue(0);
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  EXPECT_FALSE(in->bf16LayersAtEndBox()->isEnabled());
  EXPECT_DOUBLE_EQ(s->evaluation().step.time_s, bf16_step);
}

// Where an MoE model's router probabilities weight its tokens (plan.moe_probs), set in the inputs
// panel: off for the dense default, on for Qwen3-30B-A3B. On 8 GPUs at EP 8 (one pipeline stage,
// one microbatch of 8,192 tokens in flight), weighting at the unpermutation keeps every MoE layer's
// experts' output: 48 layers x 2 B x 8,192 tokens x top-8 x 2,048 = 12.88 GB more activations than
// the fused default; the copy-as-command line carries it.
TEST(GuiDriveTest, MoeProbabilitiesAreSetInThePanel) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  EXPECT_FALSE(in->moeProbsBox()->isEnabled());  // Llama 3 70B: no experts
  in->modelBox()->setCurrentIndex(in->modelBox()->findData("qwen3-30b-a3b"));
  ASSERT_TRUE(s->scenario().model.moe.has_value());
  in->gpusBox()->setValue(8);
  Choose(in->degreeBox(Degree::kPp), 1);
  Choose(in->degreeBox(Degree::kTp), 1);
  Choose(in->degreeBox(Degree::kEp), 8);
  core::PlanSpec p = s->plan();  // the preset's 40,960-token context; train at 8,192
  p.seq_len = 8192;
  p.micro_batch = 1;
  s->setPlan(p);
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  EXPECT_TRUE(in->moeProbsBox()->isEnabled());
  EXPECT_EQ(s->plan().moe_probs, core::MoeProbs::kFused);
  const int64_t fused = s->evaluation().memory.stages[0].activations_bytes;

  QComboBox* box = in->moeProbsBox();
  box->setCurrentIndex(box->findData(static_cast<int>(core::MoeProbs::kUnpermute)));
  ASSERT_EQ(s->plan().moe_probs, core::MoeProbs::kUnpermute);
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  EXPECT_NEAR(static_cast<double>(s->evaluation().memory.stages[0].activations_bytes - fused),
              48.0 * 2 * 8192 * 8 * 2048, 1e6);

  EXPECT_TRUE(s->commandLine().contains("--moe-probs unpermute")) << s->commandLine().toStdString();
  core::Scenario cli;
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
}

// How an MoE model's experts add fc2's bias (plan.expert_bias), set in the inputs panel: off for
// Qwen3-30B-A3B, whose experts have no biases, on for gpt-oss-20b (32 experts top-4, biases). On
// 8 GPUs at EP 8 Megatron-Core's per-expert add is a pass of its own after fc2 in every MoE layer
// (core/step_graph.cc ExpertBiasCost), so the step is longer; the copy-as-command line carries it.
TEST(GuiDriveTest, ExpertBiasIsSetInThePanel) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };
  in->modelBox()->setCurrentIndex(in->modelBox()->findData("qwen3-30b-a3b"));
  ASSERT_TRUE(s->scenario().model.moe.has_value());
  EXPECT_FALSE(in->expertBiasBox()->isEnabled());
  core::PlanSpec p = OnEightGpusAtEp8(in, s, "gpt-oss-20b", 4096);
  ASSERT_EQ(s->scenario().model.bias, core::BiasKind::kAll);
  s->setPlan(p);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(in->expertBiasBox()->isEnabled());
  EXPECT_EQ(s->plan().expert_bias, core::ExpertBias::kFused);
  const double fused = s->evaluation().step.time_s;
  QComboBox* box = in->expertBiasBox();
  box->setCurrentIndex(box->findData(static_cast<int>(core::ExpertBias::kPerExpert)));
  ASSERT_EQ(s->plan().expert_bias, core::ExpertBias::kPerExpert);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_GT(s->evaluation().step.time_s, fused);
  EXPECT_TRUE(s->commandLine().contains("--expert-bias per-expert")) << s->commandLine().toStdString();
  core::Scenario cli;
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
}

// Transformer Engine's op fuser for the experts in the inputs panel: gpt-oss-20b at EP 8 with
// Transformer Engine clamps its SwiGLU in Megatron-Core's eager copies and adds fc2's bias one local
// expert at a time; with the op fuser (the bias fused, as the fuser adds it) neither runs: a shorter
// step, and the command line says --moe-op-fuser. Left set on a dense model it is shown and refused
// naming its field.
TEST(GuiDriveTest, MoeOpFuserIsSetInThePanel) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };
  core::PlanSpec p = OnEightGpusAtEp8(in, s, "gpt-oss-20b", 4096);
  p.transformer_engine = true;
  p.expert_bias = core::ExpertBias::kPerExpert;
  s->setPlan(p);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(in->moeOpFuserBox()->isEnabled());
  EXPECT_FALSE(in->moeOpFuserBox()->isChecked());
  const double megatron = s->evaluation().step.time_s;
  in->moeOpFuserBox()->setChecked(true);
  ASSERT_TRUE(s->plan().moe_op_fuser);
  EXPECT_FALSE(s->evaluation().valid);  // the per-expert bias is not the fuser's
  EXPECT_NE(errors().find("plan.expert_bias"), std::string::npos) << errors();
  QComboBox* box = in->expertBiasBox();
  box->setCurrentIndex(box->findData(static_cast<int>(core::ExpertBias::kFused)));
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_LT(s->evaluation().step.time_s, megatron);
  EXPECT_TRUE(s->commandLine().contains("--moe-op-fuser")) << s->commandLine().toStdString();
  core::Scenario cli;
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
  in->modelBox()->setCurrentIndex(in->modelBox()->findData("llama3-8b"));
  EXPECT_TRUE(s->plan().moe_op_fuser);
  EXPECT_TRUE(in->moeOpFuserBox()->isEnabled());
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_NE(errors().find("plan.moe_op_fuser"), std::string::npos) << errors();
}

// Pipeline flushes, the FP8 parameter gather and the MoE dispatcher and routing in the inputs
// panel, each as `meshplan report` takes it. On the default plan (Llama 3 70B, PP 4): two flushes
// run two warm-ups and drains, a slower step; a count that does not divide the microbatches stays
// and is refused naming plan.pp_flushes. The FP8 gather is offered under fp8 with ZeRO 1 and, left
// set when the precision goes back to bf16, refused naming its field. Qwen3-30B-A3B at EP 8: the
// routing is offered under the flex dispatcher, where round-robin routing (a token's 8 experts on
// one rank of 16 experts: 1 rank a token, against 5.34 at random) is a shorter step.
TEST(GuiDriveTest, FlushesFp8GatherAndMoeSettingsAreSetInThePanel) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };
  auto choose = [](QComboBox* box, int data) {
    const int i = box->findData(data);
    ASSERT_GE(i, 0) << "the list does not offer " << data;
    box->setCurrentIndex(i);
  };
  ASSERT_EQ(s->plan().pp, 4);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  const int64_t m = s->plan().Microbatches();
  ASSERT_EQ(m % 2, 0) << m;
  EXPECT_TRUE(in->ppFlushesBox()->isEnabled());
  const double one_flush = s->evaluation().step.time_s;
  in->ppFlushesBox()->setValue(2);
  ASSERT_EQ(s->plan().pp_flushes, 2);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_GT(s->evaluation().step.time_s, one_flush);
  EXPECT_TRUE(s->commandLine().contains("--pp-flushes 2")) << s->commandLine().toStdString();
  {
    core::Scenario cli;
    ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
  }
  const int64_t not_dividing = m % 3 != 0 ? 3 : m + 1;
  in->ppFlushesBox()->setValue(static_cast<int>(not_dividing));
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_NE(errors().find("plan.pp_flushes"), std::string::npos) << errors();
  in->ppFlushesBox()->setValue(1);
  ASSERT_TRUE(s->evaluation().valid) << errors();

  EXPECT_FALSE(in->fp8ParamGatherBox()->isEnabled());  // bf16
  choose(in->precisionBox(), static_cast<int>(core::Dtype::kFp8));
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(in->fp8ParamGatherBox()->isEnabled());
  in->fp8ParamGatherBox()->setChecked(true);
  ASSERT_TRUE(s->plan().fp8_param_gather);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(s->commandLine().contains("--fp8-param-gather")) << s->commandLine().toStdString();
  {
    core::Scenario cli;
    ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
  }
  // Set in a plan file (the panel has no box for them): FP8 attention and Slurm segments of one
  // node (8 GPUs of dgx-h100's 8-GPU domain) are on the copied line too; both were dropped from
  // it once, so the CLI ran another plan than the window's.
  {
    core::PlanSpec q = s->plan();
    q.fp8_attention = true;
    q.transformer_engine = true;
    q.segment_nodes = 1;
    s->setPlan(q);
    ASSERT_TRUE(s->evaluation().valid) << errors();
    EXPECT_TRUE(s->commandLine().contains("--segment 1")) << s->commandLine().toStdString();
    EXPECT_TRUE(s->commandLine().contains("--fp8-attention")) << s->commandLine().toStdString();
    core::Scenario cli;
    ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
    q.fp8_attention = false;
    q.transformer_engine = false;
    q.segment_nodes = 0;
    s->setPlan(q);
    ASSERT_TRUE(s->evaluation().valid) << errors();
  }
  choose(in->precisionBox(), static_cast<int>(core::Dtype::kBf16));
  EXPECT_TRUE(s->plan().fp8_param_gather);  // kept, shown and refused, never silently dropped
  EXPECT_TRUE(in->fp8ParamGatherBox()->isEnabled());
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_NE(errors().find("plan.fp8_param_gather"), std::string::npos) << errors();
  in->fp8ParamGatherBox()->setChecked(false);
  ASSERT_TRUE(s->evaluation().valid) << errors();

  EXPECT_FALSE(in->moeDispatcherBox()->isEnabled());  // no experts
  core::PlanSpec p = OnEightGpusAtEp8(in, s, "qwen3-30b-a3b", 8192);
  s->setPlan(p);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(in->moeDispatcherBox()->isEnabled());
  EXPECT_FALSE(in->moeRoutingBox()->isEnabled());  // all-to-all: the routing is not read
  choose(in->moeDispatcherBox(), static_cast<int>(core::MoeDispatcher::kFlex));
  ASSERT_EQ(s->plan().moe_dispatcher, core::MoeDispatcher::kFlex);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(in->moeRoutingBox()->isEnabled());
  const double uniform = s->evaluation().step.time_s;
  choose(in->moeRoutingBox(), static_cast<int>(core::MoeRouting::kRoundRobin));
  ASSERT_EQ(s->plan().moe_routing, core::MoeRouting::kRoundRobin);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_LT(s->evaluation().step.time_s, uniform);
  EXPECT_TRUE(s->commandLine().contains("--moe-dispatcher flex")) << s->commandLine().toStdString();
  EXPECT_TRUE(s->commandLine().contains("--moe-routing round-robin")) << s->commandLine().toStdString();
  core::Scenario cli;
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
  // Under FP8 with Transformer Engine's grouped experts, tokens padded before the experts save the
  // experts' padding copies: a shorter step, and the command line says --moe-router-padding.
  p = s->plan();
  p.precision = core::Dtype::kFp8;
  p.transformer_engine = true;
  s->setPlan(p);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(in->moeRouterPaddingBox()->isEnabled());
  const double experts_pad = s->evaluation().step.time_s;
  in->moeRouterPaddingBox()->setChecked(true);
  ASSERT_TRUE(s->plan().moe_router_padding);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_LT(s->evaluation().step.time_s, experts_pad);
  EXPECT_TRUE(s->commandLine().contains("--moe-router-padding")) << s->commandLine().toStdString();
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
  // The busiest EP rank at 1.25 times the mean: a longer step, and the command line says it.
  EXPECT_TRUE(in->moeImbalanceBox()->isEnabled());
  const double balanced = s->evaluation().step.time_s;
  in->moeImbalanceBox()->setValue(1.25);
  ASSERT_EQ(s->plan().moe_imbalance, 1.25);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_GT(s->evaluation().step.time_s, balanced);
  EXPECT_TRUE(s->commandLine().contains("--moe-imbalance 1.25")) << s->commandLine().toStdString();
  ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
  in->moeImbalanceBox()->setValue(1.0);
  // Kept on a dense model, shown and refused naming the field, never silently dropped.
  in->modelBox()->setCurrentIndex(in->modelBox()->findData("llama3-8b"));
  EXPECT_TRUE(s->plan().moe_router_padding);
  EXPECT_TRUE(in->moeRouterPaddingBox()->isEnabled());
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_NE(errors().find("plan.moe_router_padding"), std::string::npos) << errors();
}

// The plan's other knobs in the inputs panel, each as `meshplan report` takes it, on the default
// plan (Llama 3 70B on 64 H100s: TP 8 x PP 4 x DP 2, ZeRO-1, one 8,192-token sequence per
// microbatch). TP overlap on with TP 8 and CP kind off with CP 1; none exposes the input-gradient
// reductions the default hides. The loss: te-inplace holds 2 B per logit where the fused default
// holds 6, 4 x 8,192 x 128,256 / 8 = 525,336,576 B less on the last stage (vocab-parallel over TP 8).
// The optimizer offloaded: stage 0's master weights and moments leave the GPU for host memory, byte
// for byte. A recomputed-layer count under selective recompute, or activation offloading under
// PP 4, stays in the plan and is refused naming its field (never silently dropped).
// DTensor's TP (plan.dtensor_tp) in the inputs panel, on the default plan (Llama 3 70B, TP 8 with
// SP): with the TP overlap none, checking it adds the sequence-dimension copies (a longer step than
// Megatron's TP with none) and the command line says --dtensor-tp; Megatron's backward overlap beside
// it is refused naming the field, never silently dropped.
TEST(GuiDriveTest, DTensorTensorParallelismIsAPanelChoice) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  ASSERT_EQ(s->plan().tp, 8);
  ASSERT_TRUE(s->plan().sequence_parallel);
  ASSERT_FALSE(s->plan().dtensor_tp);
  auto choose = [](QComboBox* box, int data) {
    const int i = box->findData(data);
    ASSERT_GE(i, 0) << "the list does not offer " << data;
    box->setCurrentIndex(i);
  };
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };
  choose(in->tpOverlapBox(), static_cast<int>(core::TpOverlap::kNone));
  ASSERT_TRUE(s->evaluation().valid) << errors();
  const double megatron = s->evaluation().step.time_s;
  EXPECT_TRUE(in->dtensorTpBox()->isEnabled());
  in->dtensorTpBox()->setChecked(true);
  ASSERT_TRUE(s->plan().dtensor_tp);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_GT(s->evaluation().step.time_s, megatron);
  EXPECT_TRUE(s->commandLine().contains("--dtensor-tp")) << s->commandLine().toStdString();
  choose(in->tpOverlapBox(), static_cast<int>(core::TpOverlap::kBackward));
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_TRUE(QString::fromStdString(errors()).contains("plan.dtensor_tp")) << errors();
  in->dtensorTpBox()->setChecked(false);
  ASSERT_TRUE(s->evaluation().valid) << errors();
}

TEST(GuiDriveTest, PyTorchContextParallelIsAPanelChoice) {
  // PyTorch's context_parallel (plan.torch_cp, torchtitan's CP) beside the CP kind: enabled with
  // CP > 1, it costs the ring's copies and fp32 merges (a longer step), is on the window's command
  // line, and beside Ulysses it is refused naming its field.
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };
  ASSERT_FALSE(s->plan().torch_cp);
  EXPECT_FALSE(in->torchCpBox()->isEnabled());
  Choose(in->degreeBox(Degree::kPp), 1);
  Choose(in->degreeBox(Degree::kCp), 2);
  ASSERT_EQ(s->plan().cp, 2);
  auto choose = [](QComboBox* box, int data) {
    const int i = box->findData(data);
    ASSERT_GE(i, 0) << "the list does not offer " << data;
    box->setCurrentIndex(i);
  };
  choose(in->cpKindBox(), static_cast<int>(core::CpKind::kAllGather));
  ASSERT_TRUE(s->evaluation().valid) << errors();
  const double engine = s->evaluation().step.time_s;
  EXPECT_TRUE(in->torchCpBox()->isEnabled());
  in->torchCpBox()->setChecked(true);
  ASSERT_TRUE(s->plan().torch_cp);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_GT(s->evaluation().step.time_s, engine);
  EXPECT_TRUE(s->commandLine().contains("--torch-cp")) << s->commandLine().toStdString();
  choose(in->cpKindBox(), static_cast<int>(core::CpKind::kUlysses));
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_TRUE(QString::fromStdString(errors()).contains("plan.torch_cp")) << errors();
  in->torchCpBox()->setChecked(false);
  EXPECT_TRUE(s->evaluation().valid) << errors();
}

TEST(GuiDriveTest, OverlapLossOffloadAndRecomputedLayersAreSetInThePanel) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  ASSERT_EQ(s->plan().tp, 8);
  ASSERT_EQ(s->plan().pp, 4);
  ASSERT_EQ(s->plan().cp, 1);
  ASSERT_EQ(s->plan().seq_len, 8192);
  ASSERT_EQ(s->plan().micro_batch, 1);
  ASSERT_EQ(s->scenario().model.vocab, 128256);
  ASSERT_TRUE(s->evaluation().valid);
  EXPECT_TRUE(in->tpOverlapBox()->isEnabled());
  EXPECT_FALSE(in->cpKindBox()->isEnabled());
  EXPECT_FALSE(in->recomputeLayersBox()->isEnabled());
  auto choose = [](QComboBox* box, int data) {
    const int i = box->findData(data);
    ASSERT_GE(i, 0) << "the list does not offer " << data;
    box->setCurrentIndex(i);
  };
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };

  const double backward = s->evaluation().step.time_s;
  choose(in->tpOverlapBox(), static_cast<int>(core::TpOverlap::kNone));
  ASSERT_EQ(s->plan().tp_overlap, core::TpOverlap::kNone);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_GT(s->evaluation().step.time_s, backward);
  choose(in->tpOverlapBox(), static_cast<int>(core::TpOverlap::kFull));
  ASSERT_EQ(s->plan().tp_overlap, core::TpOverlap::kFull);

  const size_t last = s->evaluation().memory.stages.size() - 1;
  ASSERT_EQ(last, 3u);
  const int64_t fused_loss = s->evaluation().memory.stages[last].loss_activations_bytes;
  choose(in->crossEntropyBox(), static_cast<int>(core::CrossEntropy::kTeInplace));
  ASSERT_EQ(s->plan().cross_entropy, core::CrossEntropy::kTeInplace);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_EQ(fused_loss - s->evaluation().memory.stages[last].loss_activations_bytes, int64_t{525336576});

  const core::StageMemory on_gpu = s->evaluation().memory.stages[0];
  ASSERT_GT(on_gpu.optimizer_bytes, 0);
  choose(in->offloadOptimizerBox(), static_cast<int>(core::OffloadTarget::kCpu));
  ASSERT_EQ(s->plan().offload_optimizer, core::OffloadTarget::kCpu);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_EQ(s->evaluation().memory.stages[0].optimizer_bytes, 0);
  EXPECT_EQ(s->evaluation().memory.stages[0].host_bytes, on_gpu.host_bytes + on_gpu.optimizer_bytes);

  in->recomputeLayersBox()->setValue(5);  // disabled, as a user cannot; the plan still says why
  ASSERT_EQ(s->plan().recompute_layers, 5);
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_TRUE(QString::fromStdString(errors()).contains("plan.recompute_layers")) << errors();
  EXPECT_TRUE(in->recomputeLayersBox()->isEnabled());  // left on to clear it
  choose(in->recomputeBox(), static_cast<int>(core::Recompute::kFull));
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_EQ(in->recomputeLayersBox()->value(), 5);
  // Under full recompute PyTorch's checkpoint early stop can be said: the replay loses w2, so the
  // step is shorter; left checked where it does not apply, validation names the field.
  EXPECT_TRUE(in->recomputeEarlyStopBox()->isEnabled());
  const double whole_replay = s->evaluation().step.time_s;
  in->recomputeEarlyStopBox()->setChecked(true);
  ASSERT_TRUE(s->plan().recompute_early_stop);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_LT(s->evaluation().step.time_s, whole_replay);
  choose(in->recomputeBox(), static_cast<int>(core::Recompute::kSelective));
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_TRUE(QString::fromStdString(errors()).contains("plan.recompute_early_stop")) << errors();
  EXPECT_TRUE(in->recomputeEarlyStopBox()->isEnabled());  // left on to clear it
  in->recomputeEarlyStopBox()->setChecked(false);
  choose(in->recomputeBox(), static_cast<int>(core::Recompute::kFull));
  ASSERT_TRUE(s->evaluation().valid) << errors();

  in->offloadActivationsBox()->setValue(2);
  ASSERT_EQ(s->plan().offload_activation_layers, 2);
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_TRUE(QString::fromStdString(errors()).contains("plan.offload.activation_layers")) << errors();
  EXPECT_TRUE(QString::fromStdString(errors()).contains("plan.pp=1")) << errors();
  in->offloadActivationsBox()->setValue(0);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  // DeepSpeed's checkpoints in host memory, under full recompute (of the first 5 layers a stage):
  // their checkpoints leave the GPU, their copies lengthen the step, and the command says so.
  ASSERT_TRUE(in->offloadCheckpointsBox()->isEnabled());
  const double ckpt_on_gpu = s->evaluation().step.time_s;
  const int64_t act_on_gpu = s->evaluation().memory.stages[0].activations_bytes;
  in->offloadCheckpointsBox()->setChecked(true);
  ASSERT_TRUE(s->plan().offload_checkpoints);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_GT(s->evaluation().memory.stages[0].offloaded_checkpoints_bytes, 0);
  EXPECT_LT(s->evaluation().memory.stages[0].activations_bytes, act_on_gpu);
  EXPECT_GT(s->evaluation().step.time_s, ckpt_on_gpu);
  EXPECT_TRUE(s->commandLine().contains("--offload-checkpoints")) << s->commandLine().toStdString();
  in->offloadCheckpointsBox()->setChecked(false);
  ASSERT_FALSE(s->plan().offload_checkpoints);

  const QString command = s->commandLine();
  for (const char* flag : {"--tp-overlap full", "--cross-entropy te-inplace", "--offload-optimizer cpu",
                           "--recompute full", "--recompute-layers 5"})
    EXPECT_TRUE(command.contains(flag)) << flag << " in " << command.toStdString();
  ASSERT_NO_FATAL_FAILURE(ExpectTheWindowsCommandGivesItsMemory(*s));
}

// The two module sets are menus of checkable names in the panel: selective recomputation's modules
// (plan.recompute_modules, --recompute-modules) and fine-grained activation offloading's
// (plan.offload.modules, --offload-modules). Each check sets the plan field the CLI's flag sets,
// the memory view follows, a set the rules refuse is named by validation, and the copied command
// means the same plan. On the window's Llama-3-70B (TP 8 x PP 4, 8,192 tokens, H100s).
TEST(GuiDriveTest, RecomputeAndOffloadModulesAreMenusInThePanel) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  ASSERT_TRUE(s->evaluation().valid);
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };
  auto action = [](QToolButton* b, const char* name) -> QAction* {
    for (QAction* a : b->menu()->actions())
      if (a->text() == name) return a;
    return nullptr;
  };
  // Every module Megatron-Core names is offered, in the enum's order.
  ASSERT_EQ(in->recomputeModulesButton()->menu()->actions().size(), 9);
  ASSERT_EQ(in->offloadModulesButton()->menu()->actions().size(), 8);
  const int selective = in->recomputeBox()->findData(static_cast<int>(core::Recompute::kSelective));
  ASSERT_GE(selective, 0);
  in->recomputeBox()->setCurrentIndex(selective);
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_TRUE(in->recomputeModulesButton()->isEnabled());
  EXPECT_EQ(in->recomputeModulesButton()->text().toStdString(), "core_attn");  // Megatron-Core's default
  const int64_t core_attn_only = s->evaluation().memory.stages[0].activations_bytes;
  const double core_attn_step = s->evaluation().step.time_s;
  QAction* mlp = action(in->recomputeModulesButton(), "mlp");
  ASSERT_TRUE(mlp);
  mlp->trigger();
  EXPECT_EQ(s->plan().recompute_modules,
            core::ModuleBit(core::RecomputeModule::kCoreAttn) | core::ModuleBit(core::RecomputeModule::kMlp));
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_LT(s->evaluation().memory.stages[0].activations_bytes, core_attn_only);  // the MLP's tensors rerun
  EXPECT_GT(s->evaluation().step.time_s, core_attn_step);
  EXPECT_EQ(in->recomputeModulesButton()->text().toStdString(), "core_attn,mlp");
  EXPECT_TRUE(s->commandLine().contains("--recompute-modules core_attn,mlp")) << s->commandLine().toStdString();

  // core_attn's saved tensors in host memory beside it: the stage holds less on the GPU.
  const int64_t on_gpu = s->evaluation().memory.stages[0].activations_bytes;
  QAction* core_attn = action(in->offloadModulesButton(), "core_attn");
  QAction* attn_proj = action(in->offloadModulesButton(), "attn_proj");
  ASSERT_TRUE(core_attn && attn_proj);
  EXPECT_EQ(in->offloadModulesButton()->text().toStdString(), "none");
  core_attn->trigger();
  ASSERT_EQ(s->plan().offload_modules, core::OffloadBit(core::OffloadModule::kCoreAttn));
  ASSERT_TRUE(s->evaluation().valid) << errors();
  EXPECT_LT(s->evaluation().memory.stages[0].activations_bytes, on_gpu);
  EXPECT_EQ(in->offloadModulesButton()->text().toStdString(), "core_attn");
  EXPECT_TRUE(s->commandLine().contains("--offload-modules core_attn")) << s->commandLine().toStdString();
  ASSERT_NO_FATAL_FAILURE(ExpectTheWindowsCommandGivesItsMemory(*s));
  // attn_proj without core_attn is what Megatron-Core refuses: validation names the field, and the
  // menu still shows the set so that it can be mended.
  core_attn->trigger();
  attn_proj->trigger();
  ASSERT_EQ(s->plan().offload_modules, core::OffloadBit(core::OffloadModule::kAttnProj));
  EXPECT_FALSE(s->evaluation().valid);
  EXPECT_TRUE(QString::fromStdString(errors()).contains("plan.offload.modules")) << errors();
  EXPECT_TRUE(attn_proj->isChecked());
  attn_proj->trigger();
  EXPECT_EQ(s->plan().offload_modules, 0u);
  ASSERT_TRUE(s->evaluation().valid) << errors();
}

// Choosing a software stack in the panel sets what `meshplan report --stack NAME` sets
// (core::ApplyStackWhole: ApplyStack, then its FSDP under PP and its recomputation early stop),
// and the copied command line means the same plan. On the window's Llama-3-70B at TP 8 x PP 4,
// torchtitan-2024's FSDP2 (ZeRO-3) under PP keeps each stage gathered: ZeRO-1 without the
// reduce-scatter under the backward; its attention is FlashAttention-2, its loss upcast, its
// elementwise ops eager, its K/V repeated, its CP an all-gather and its vocabulary unpadded (after
// megatron-core-2024's 128). megatron-bridge-2025 sets its releases' loss and gradient
// reduction, and the copied command line says them. The box names the stack until a field is edited.
TEST(GuiDriveTest, ChoosingASoftwareStackSetsItsDefaultsAsTheCliDoes) {
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  auto errors = [s] { return s->evaluation().errors.join("\n").toStdString(); };
  ASSERT_EQ(in->stackBox()->currentIndex(), 0);
  // Each stack gives the plan it gives alone, whichever was chosen before it (the fields only some
  // stacks set, as megatron-deepspeed-2022's CUDA context and the Megatron stacks' vocabulary
  // padding, reset first).
  const core::ModelSpec m0 = s->scenario().model;
  const core::PlanSpec p0 = s->plan();
  for (const char* name : {"torchtitan-2024", "megatron-deepspeed-2022", "megatron-core-2024", "megatron-bridge-2025",
                           "torchtitan-2024", "megatron-lm-2021"}) {
    SCOPED_TRACE(name);
    auto stack = core::LoadStack(name);
    ASSERT_TRUE(stack.ok()) << stack.status().ToString();
    core::ModelSpec m = m0;
    core::PlanSpec p = p0;
    core::ApplyStackWhole(*stack, &m, &p);
    const int i = in->stackBox()->findData(QString(name));
    ASSERT_GT(i, 0) << "the list does not offer " << name;
    in->stackBox()->setCurrentIndex(i);
    EXPECT_EQ(s->scenario().model, m);
    EXPECT_EQ(s->plan(), p);
    ASSERT_TRUE(s->evaluation().valid) << errors();
    EXPECT_EQ(in->stackBox()->currentData().toString().toStdString(), name);
    core::Scenario cli;
    ASSERT_NO_FATAL_FAILURE(ResolveTheWindowsCommand(*s, &cli));
    EXPECT_EQ(cli.model.attention, m.attention) << s->commandLine().toStdString();
    if (std::string(name) == "torchtitan-2024") {
      EXPECT_EQ(m.attention, core::AttentionImpl::kFlash2);
      EXPECT_EQ(p.zero, 1);
      EXPECT_FALSE(p.overlap_grad_reduce);
      EXPECT_EQ(p.recompute, core::Recompute::kNone);
      EXPECT_EQ(p.tp_overlap, core::TpOverlap::kNone);
      EXPECT_TRUE(p.sequence_parallel);
      EXPECT_EQ(p.cross_entropy, core::CrossEntropy::kUpcast);
      EXPECT_EQ(p.elementwise, core::Elementwise::kEager);
      EXPECT_TRUE(p.repeat_kv);
      EXPECT_EQ(p.cp_kind, core::CpKind::kAllGather);
      EXPECT_EQ(s->plan().vocab_divisible_by, 1);
      EXPECT_EQ(s->plan().cuda_context_bytes, 0);
    }
    if (std::string(name) == "megatron-bridge-2025") {
      // Megatron-Bridge 25.11 on: the in-place TE loss, bf16 gradients averaged in the collective;
      // the window's bf16 plan gathers no parameter in FP8.
      EXPECT_EQ(s->plan().cross_entropy, core::CrossEntropy::kTeInplace);
      EXPECT_EQ(s->plan().dtypes.grads, core::Dtype::kBf16);
      EXPECT_FALSE(s->plan().grad_prescale);
      EXPECT_FALSE(s->plan().fp8_param_gather);
      EXPECT_EQ(cli.plan.cross_entropy, core::CrossEntropy::kTeInplace) << s->commandLine().toStdString();
      EXPECT_EQ(cli.plan.dtypes.grads, core::Dtype::kBf16) << s->commandLine().toStdString();
      EXPECT_FALSE(cli.plan.grad_prescale) << s->commandLine().toStdString();
    }
  }
  // Megatron-LM 2021 (the last applied): fp16, full recomputation, no TP overlap, no SP.
  EXPECT_EQ(s->plan().precision, core::Dtype::kFp16);
  EXPECT_EQ(s->plan().recompute, core::Recompute::kFull);
  EXPECT_FALSE(s->plan().sequence_parallel);
  // An edit after it: the box no longer names a stack.
  in->gbsBox()->setValue(static_cast<int>(s->plan().global_batch * 2));
  EXPECT_EQ(in->stackBox()->currentIndex(), 0);
  EXPECT_EQ(s->plan().precision, core::Dtype::kFp16);  // the stack's fields stay as set
  // A stack's dropout has no flag: on a model that trains with it (Megatron's GPT 7.5B), LLM
  // Foundry's stack turns it off and the copied line lists the edit it cannot express.
  QString err;
  ASSERT_TRUE(s->setModelPreset("gpt-7.5b", &err)) << err.toStdString();
  ASSERT_TRUE(s->scenario().model.dropout);
  in->stackBox()->setCurrentIndex(in->stackBox()->findData(QString("llm-foundry-2023")));
  EXPECT_FALSE(s->scenario().model.dropout);
  EXPECT_TRUE(s->commandLine().contains("# not expressed: the model has edits no flag expresses"))
      << s->commandLine().toStdString();
}

TEST(GuiDriveTest, VocabularyPaddingIsSetInThePanelAndClearsTheWidthWarning) {
  // GPT-3's 50,257 tokens at TP 8 leave 6,283 head columns a rank, odd: on an H100 the head's GEMMs
  // run at 0.186 of the aligned speed and the plan says so (docs/compute.md). Padded as Megatron
  // pads (128 x 8 = 1,024: 51,200, 6,400 a rank) the warning goes and the step is shorter.
  MainWindow w;
  ScenarioModel* s = w.scenario();
  InputsPanel* in = w.inputs();
  QString err;
  ASSERT_TRUE(s->setModelPreset("gpt3-175b", &err)) << err.toStdString();
  ASSERT_TRUE(s->setGpuPreset("h100-sxm", &err)) << err.toStdString();
  ASSERT_EQ(s->plan().tp, 8);
  ASSERT_EQ(s->plan().vocab_divisible_by, 1);
  EXPECT_EQ(in->vocabDivisibleByBox()->value(), 1);
  auto warnings = [s] { return s->evaluation().warnings.join("\n").toStdString(); };
  EXPECT_NE(warnings().find("plan.vocab_divisible_by: the output head's 6283 vocabulary columns a rank"),
            std::string::npos)
      << warnings();
  const double unpadded = s->evaluation().step.time_s;
  in->vocabDivisibleByBox()->setValue(128);
  ASSERT_EQ(s->plan().vocab_divisible_by, 128);
  EXPECT_EQ(warnings().find("vocabulary columns a rank"), std::string::npos) << warnings();
  EXPECT_LT(s->evaluation().step.time_s, unpadded);
  core::Scenario cli;
  ResolveTheWindowsCommand(*s, &cli);  // --vocab-divisible-by 128 in the copied command
}

TEST(GuiDriveTest, SaveAndOpenPlanRoundTrips) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString path = dir.filePath("plan.json");
  ScenarioModel a;
  a.setDegree(Degree::kPp, 2);
  a.setPricePerGpuHour(2.5);
  QString err;
  ASSERT_TRUE(a.savePlanFile(path, &err)) << err.toStdString();
  ScenarioModel b;
  ASSERT_TRUE(b.openPlanFile(path, &err)) << err.toStdString();
  EXPECT_EQ(b.scenario().plan, a.scenario().plan);
  EXPECT_EQ(b.scenario().model, a.scenario().model);
  EXPECT_EQ(b.scenario().cluster, a.scenario().cluster);
  EXPECT_EQ(b.evaluation().memory.per_gpu_bytes, a.evaluation().memory.per_gpu_bytes);
  EXPECT_DOUBLE_EQ(b.evaluation().train.cost_usd, a.evaluation().train.cost_usd);
  // A missing file is an error message, not a crash, and leaves the scenario alone.
  EXPECT_FALSE(b.openPlanFile(dir.filePath("missing.json"), &err));
  EXPECT_FALSE(err.isEmpty());
  EXPECT_EQ(b.scenario().plan, a.scenario().plan);
}

TEST(GuiDriveTest, ClickingASearchCellLoadsItsPlan) {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  w.showView("search");
  w.searchView()->run();
  w.searchModel()->worker()->WaitForIdle();
  QApplication::processEvents();
  SearchGridModel* m = w.searchModel();
  // The fastest cell.
  int best_r = -1, best_c = -1;
  double best = 0;
  for (int r = 0; r < m->rowCount(); ++r)
    for (int c = 0; c < m->columnCount(); ++c)
      if (m->cell(r, c).state == SearchGridModel::CellState::kFits && m->cell(r, c).plan->step.tokens_per_s > best) {
        best = m->cell(r, c).plan->step.tokens_per_s;
        best_r = r;
        best_c = c;
      }
  ASSERT_GE(best_r, 0);
  HeatMapWidget* map = w.searchView()->heatMap();
  QTest::mouseClick(map, Qt::LeftButton, {}, map->cellRect(best_r, best_c).center().toPoint());
  EXPECT_EQ(w.scenario()->plan(), m->cell(best_r, best_c).plan->plan);
  EXPECT_TRUE(w.scenario()->evaluation().valid);
  EXPECT_DOUBLE_EQ(w.scenario()->evaluation().step.tokens_per_s, best);
}

TEST(GuiDriveTest, HuggingFaceConfigLoads) {
  MainWindow w;
  QString err;
  ASSERT_TRUE(w.scenario()->loadModelFile(MESHPLAN_TEST_DATA_DIR "/hf/gpt2.json", &err)) << err.toStdString();
  const core::ModelSpec& m = w.scenario()->scenario().model;
  EXPECT_EQ(m.hidden, 768);
  EXPECT_EQ(m.heads, 12);
  // TP 8 does not divide 12 heads: the plan is invalid, and the list greys 8 but offers 4.
  EXPECT_FALSE(w.scenario()->evaluation().valid);
  QComboBox* tp = w.inputs()->degreeBox(Degree::kTp);
  auto* items = qobject_cast<QStandardItemModel*>(tp->model());
  EXPECT_FALSE(items->item(tp->findData(QVariant::fromValue<qlonglong>(8)))->isEnabled());
  Choose(tp, 4);
  EXPECT_EQ(w.scenario()->plan().tp, 4);
}

// How long a change takes is bench/gui_bench.cc's (BM_GuiTpChangeLlama405B16384Gpus, against a
// 16 ms frame); here, that the largest preset plan re-evaluates on every change of a degree, and
// that the panel's timer records each evaluation.
TEST(GuiDriveTest, Dense405BPlanReevaluatesOnEveryDegreeChange) {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  ScenarioModel* s = w.scenario();
  QString err;
  ASSERT_TRUE(s->setModelPreset("llama3-405b", &err));
  s->setGpus(16384);
  core::PlanSpec p = s->plan();
  p.global_batch = 2048;
  s->setPlan(p);
  s->setDegree(Degree::kPp, 16);
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  QApplication::processEvents();
  for (int i = 0; i < 4; ++i) {
    const int64_t tp = i % 2 ? 8 : 4;
    s->setDegree(Degree::kTp, tp);
    ASSERT_TRUE(s->evaluation().valid) << tp;
    EXPECT_EQ(s->plan().tp, tp);
    EXPECT_EQ(s->plan().tp * s->plan().pp * s->plan().dp * s->plan().cp, 16384);
    EXPECT_GT(s->evaluation().eval_ms, 0.0);
    EXPECT_GT(s->evaluation().step.time_s, 0.0);
  }
}

TEST(GuiDriveTest, StepTimeTooltipSaysWhichRatesAreAssumed) {
  // The step view's step time names what no measurement covers (sim::AssumedRates), as report's
  // "default:" lines do: an A100's GEMMs take the profile's 0.80; an H100's are measured.
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  ScenarioModel* s = w.scenario();
  QString err;
  ASSERT_TRUE(s->setModelPreset("llama3-8b", &err)) << err.toStdString();
  auto step_tips = [&] {
    QApplication::processEvents();
    QString all;
    for (QLabel* l : w.findChild<StepView*>()->findChildren<QLabel*>()) all += l->toolTip() + "\n";
    return all;
  };
  ASSERT_TRUE(s->setClusterPreset("dgx-a100", &err)) << err.toStdString();
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  EXPECT_TRUE(step_tips().contains("assumed: bf16 GEMMs at 0.80 of a100-80g's peak")) << step_tips().toStdString();
  ASSERT_TRUE(s->setClusterPreset("dgx-h100", &err)) << err.toStdString();
  ASSERT_TRUE(s->evaluation().valid) << s->evaluation().errors.join("\n").toStdString();
  EXPECT_FALSE(step_tips().contains("assumed:")) << step_tips().toStdString();
}

}  // namespace
}  // namespace meshplan::gui
