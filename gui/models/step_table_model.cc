#include "gui/models/step_table_model.h"

#include <array>

#include "gui/models/format.h"

namespace meshplan::gui {

StepTableModel::StepTableModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  connect(scenario_, &ScenarioModel::evaluated, this, &StepTableModel::Reset);
  Reset();
}

void StepTableModel::Reset() {
  beginResetModel();
  valid_ = scenario_->evaluation().valid;
  step_ = valid_ ? scenario_->evaluation().step : sim::StepEstimate{};
  accuracy_.clear();
  runs_like_.clear();
  range_ = {};
  accuracy_runs_ = 0;
  comparisons_.clear();
  repeats_ = {};
  step_split_ = {};
  if (valid_ && scenario_->profile().name != "default") {
    accuracy_source_ =
        "the accuracy table is the default profile's; meshplan validate --profile NAME measures "
        "this profile's own";
  } else if (valid_) {
    // The shipped table, parsed once (it is built into the program).
    static const core::Result<sim::AccuracyTable> table = sim::LoadAccuracyTable("step");
    if (table.ok()) {
      sim::PlanAccuracy a = sim::AccuracyOfPlan(*table, scenario_->scenario(), "");
      accuracy_ = std::move(a.groups);
      joint_ = a.joint;
      range_ = a.range;
      if (a.like.size() > 5) a.like.resize(5);  // the tooltip's five nearest
      runs_like_ = std::move(a.like);
      runs_like_same_gpu_ = a.like_same_gpu;
      accuracy_runs_ = table->all.n;
      comparisons_ = table->comparisons;
      repeats_ = table->repeats;
      step_split_ = table->step_split;
      accuracy_source_ = QString::fromStdString(table->made_by);
    } else {
      accuracy_source_ = QString::fromStdString(table.status().message());
    }
  }
  endResetModel();
}

QString StepTableModel::accuracyText() const {
  const sim::AccuracyGroup* w = sim::LeastAccurate(accuracy_);
  if (!w) return "-";
  // Two short lines (the metric's box is narrow); the p90 and every group are in accuracyHelp().
  return QString("%1 median\n%2 %3")
      .arg(Percent(w->median_abs_error), QString::fromStdString(w->dimension), QString::fromStdString(w->value));
}

QString StepTableModel::accuracyHelp() const {
  QString t = QString(
                  "How far off the step time came on published runs in this plan's groups (|error| median, p90; "
                  "signed > 0: predicted too fast), of %1 runs:")
                  .arg(accuracy_runs_);
  for (const auto& g : accuracy_) {
    t += QString("\n%1 %2: ").arg(QString::fromStdString(g.dimension), QString::fromStdString(g.value));
    t += g.n == 0 ? QString("no published run")
                  : QString("%1 runs, %2, %3, signed %4")
                        .arg(g.n)
                        .arg(Percent(g.median_abs_error), Percent(g.p90_abs_error))
                        .arg(QString::asprintf("%+.1f%%", 100 * g.median_error));
  }
  if (!accuracy_.empty())
    t += joint_.n == 0 ? QString("\nno published run of this GPU, model kind and precision at once (%1)")
                             .arg(QString::fromStdString(joint_.value))
                       : QString("\nthis GPU, model kind and precision at once (%1): %2 runs, %3, %4, signed %5")
                             .arg(QString::fromStdString(joint_.value))
                             .arg(joint_.n)
                             .arg(Percent(joint_.median_abs_error), Percent(joint_.p90_abs_error))
                             .arg(QString::asprintf("%+.1f%%", 100 * joint_.median_error));
  if (!accuracy_.empty() && range_.n > 0) {
    const std::array<double, 2> tokens = range_.Measured(step_.tokens_per_s_per_gpu);
    t += QString(
             "\nruns like it (the %1 of %2) measured %3x to %4x the predicted tokens/s (their 10th to 90th "
             "percentile): %5 to %6 tokens/s per GPU")
             .arg(range_.n)
             .arg(QString::fromStdString(range_.basis))
             .arg(range_.LowFactor(), 0, 'f', 2)
             .arg(range_.HighFactor(), 0, 'f', 2)
             .arg(tokens[0], 0, 'f', 0)
             .arg(tokens[1], 0, 'f', 0);
  }
  if (!runs_like_.empty()) {
    t += QString("\npublished runs of %1%2:")
             .arg(QString::fromStdString(runs_like_.front().model),
                  runs_like_same_gpu_ ? " on " + QString::fromStdString(runs_like_.front().gpu)
                                      : QString(" (none on this GPU; on others)"));
    for (const auto& r : runs_like_)
      t += QString("\n  %1: %2 GPUs, %3, %4, %5")
               .arg(QString::fromStdString(r.id))
               .arg(r.gpus)
               .arg(QString::fromStdString(r.precision), QString::fromStdString(r.gpu),
                    QString::asprintf("%+.1f%%", 100 * r.error));
  }
  if (!accuracy_.empty() && !comparisons_.empty()) {
    // Comparing this plan with another (sim/comparison.h): the ratio of two runs that differ in one thing.
    t += QString(
             "\nagainst another plan: the ratio of two published runs that differ in one thing came within %1 "
             "(median, %2 pairs):")
             .arg(Percent(comparisons_.front().median_abs_error))
             .arg(comparisons_.front().n);
    for (size_t i = 1; i < comparisons_.size(); ++i)
      t += QString(" %1 %2%3")
               .arg(QString::fromStdString(comparisons_[i].value), Percent(comparisons_[i].median_abs_error))
               .arg(i + 1 < comparisons_.size() ? ";" : "");
  }
  if (!accuracy_.empty() && repeats_.scenarios > 0) {
    // The published runs' own spread where one plan was printed more than once (sim::FindRepeats):
    // no prediction comes closer to both than the floor.
    t += QString(
             "\none plan measured twice: %1 plans printed more than once (%2 runs) differ by %3 (median; p90 %4), "
             "so one prediction is at least %5 off one of them (median; p90 %6)")
             .arg(repeats_.scenarios)
             .arg(repeats_.runs)
             .arg(Percent(repeats_.spread_median), Percent(repeats_.spread_p90), Percent(repeats_.floor_median),
                  Percent(repeats_.floor_p90));
  }
  if (!accuracy_.empty() && step_split_.series > 0) {
    // Where the step-time error sits on plans measured at several GPU counts (sim::SplitSteps), as
    // report prints it: per microbatch (t) or per step (F).
    t += QString(
             "\none plan at several GPU counts: over %1 strong-scaling series (%2 runs) the time a microbatch adds "
             "came within %3 (median; p90 %4, signed %5) and a step's fixed cost %6 s off (median; < 0 predicted "
             "short)")
             .arg(step_split_.series)
             .arg(step_split_.runs)
             .arg(Percent(step_split_.t_median), Percent(step_split_.t_p90),
                  QString::asprintf("%+.1f%%", 100 * step_split_.t_signed),
                  QString::asprintf("%+.2f", step_split_.f_gap_median_s));
  }
  return t + "\n(" + accuracy_source_ + "; docs/validation.md, How close)";
}

int StepTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() || !valid_ ? 0 : kRowCount; }
int StepTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

double StepTableModel::seconds(Row r) const {
  const auto& b = step_.breakdown;
  switch (r) {
    case kCompute: return b.compute_s;
    case kRecompute: return b.recompute_s;
    case kTpComm: return b.tp_comm_s;
    case kCpComm: return b.cp_comm_s;
    case kEpComm: return b.ep_comm_s;
    case kDpComm: return b.dp_comm_s;
    case kPpComm: return b.pp_comm_s;
    case kBubble: return b.bubble_s;
    case kOffload: return b.offload_s;
    case kHost: return b.host_s;
    case kOptimizer: return b.optimizer_s;
    case kStep: return step_.time_s;
    case kRowCount: break;
  }
  return 0;
}

QString StepTableModel::termName(Row r) {
  switch (r) {
    case kCompute: return "compute";
    case kRecompute: return "recompute";
    case kTpComm: return "TP communication";
    case kCpComm: return "CP communication";
    case kEpComm: return "EP all-to-all";
    case kDpComm: return "DP communication";
    case kPpComm: return "pipeline communication";
    case kBubble: return "pipeline bubble";
    case kOffload: return "activation offload";
    case kHost: return "waiting for the host";
    case kOptimizer: return "optimizer step";
    case kStep: return "step";
    case kRowCount: break;
  }
  return {};
}

QString StepTableModel::termHelp(Row r) {
  switch (r) {
    case kCompute: return "forward and backward kernels (GEMMs, attention, memory-bound ops) on the critical path";
    case kRecompute: return "forward kernels run again in backward (activation recomputation)";
    case kTpComm: return "tensor-parallel all-reduce / reduce-scatter / all-gather not hidden under GEMMs";
    case kCpComm: return "context-parallel KV exchange not hidden under attention";
    case kEpComm: return "expert-parallel token dispatch and combine not hidden under compute";
    case kDpComm: return "data-parallel gradient reduction / parameter gathering not hidden under backward";
    case kPpComm:
      return "pipeline activation sends on the critical path, and a tied word embedding's gradient all-reduce between "
             "the first and last stage";
    case kBubble: return "pipeline fill and drain (idle ranks)";
    case kOffload: return "activation copies to and from host memory the compute waits for (offloaded layers)";
    case kHost:
      return "MoE layers whose kernels finish before the host has issued them: the framework's host time per layer "
             "(Megatron-Core's, measured, and Transformer Engine's cuBLASLt calls per expert) beyond the GPU's";
    case kOptimizer: return "the optimizer step (memory bound)";
    case kStep: return "one optimizer step: the sum of the rows above";
    case kRowCount: break;
  }
  return {};
}

QVariant StepTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const auto r = static_cast<Row>(index.row());
  const double sec = seconds(r);
  const double share = step_.time_s > 0 ? sec / step_.time_s : 0;
  switch (role) {
    case Qt::DisplayRole:
      if (index.column() == kTerm) return termName(r);
      if (index.column() == kSeconds) return QString::number(sec, 'f', 3);
      return QString::number(100 * share, 'f', 1);
    case kSecondsRole:
      if (index.column() == kTerm) return {};
      return index.column() == kSeconds ? sec : share;
    case Qt::ToolTipRole: return termHelp(r);
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(index.column() == kTerm ? Qt::AlignLeft | Qt::AlignVCenter
                                                         : Qt::AlignRight | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant StepTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= kColumnCount) return {};
  switch (section) {
    case kTerm: return "term";
    case kSeconds: return "time (s)";
    case kShare: return "share (%)";
  }
  return {};
}

}  // namespace meshplan::gui
