// One training step's time on the critical path, by cause (sim::StepBreakdown, the rows
// `meshplan report` prints under "Step time"): compute, recompute, exposed TP/CP/EP/DP
// communication, pipeline sends, bubble, optimizer, and the step. Every row is always present
// (zero when the plan has no such cost) so the chart keeps its categories.
// Columns: term, seconds, share of the step. kSecondsRole: the raw double.
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_STEP_TABLE_MODEL_H_
#define MESHPLAN_GUI_MODELS_STEP_TABLE_MODEL_H_

#include <QAbstractTableModel>

#include <vector>

#include "gui/models/scenario_model.h"
#include "sim/accuracy.h"

namespace meshplan::gui {

class StepTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Row {
    kCompute,
    kRecompute,
    kTpComm,
    kCpComm,
    kEpComm,
    kDpComm,
    kPpComm,
    kBubble,
    kOffload,
    kHost,
    kOptimizer,
    kStep,
    kRowCount
  };
  enum Column { kTerm, kSeconds, kShare, kColumnCount };
  static constexpr int kSecondsRole = Qt::UserRole;  // double seconds (kShare: the fraction)

  explicit StepTableModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  double seconds(Row r) const;
  static QString termName(Row r);
  static QString termHelp(Row r);

  // How close the step time came on published runs in the plan's groups (sim/accuracy.h: the
  // rows `meshplan report` prints under "How close"; no stack row, the GUI names none). Empty for
  // an invalid plan or a calibrated profile (the shipped table is the default profile's).
  const std::vector<sim::AccuracyGroup>& accuracy() const { return accuracy_; }
  // The accuracy text for the step view: the least accurate group's median |error| and its name,
  // and a tooltip with every group's runs, median, p90 and signed median, the published runs of
  // the plan's model (its precision first, nearest in GPU count) and where they come from.
  QString accuracyText() const;
  QString accuracyHelp() const;

 private:
  void Reset();
  ScenarioModel* scenario_;
  bool valid_ = false;
  sim::StepEstimate step_;
  std::vector<sim::AccuracyGroup> accuracy_;
  sim::AccuracyGroup joint_;                 // the runs of the plan's GPU, model kind and precision at once
  std::vector<sim::AccuracyRun> runs_like_;  // the model's published runs (sim::RunsLike), at most 5
  bool runs_like_same_gpu_ = false;
  sim::AccuracyRange range_;  // what runs like the plan measured (sim::RangeOf)
  size_t accuracy_runs_ = 0;  // the table's runs
  // The table's what-if pairs (sim::AccuracyTable::comparisons): "all", then per axis.
  std::vector<sim::AccuracyGroup> comparisons_;
  // The table's scenarios printed more than once (sim::AccuracyTable::repeats); scenarios 0: none.
  sim::AccuracyRepeats repeats_;
  // The table's strong-scaling series split per microbatch and per step (sim::AccuracyTable::
  // step_split); series 0: none.
  sim::AccuracyStepSplit step_split_;
  QString accuracy_source_;  // the command that made the table, or why there is none
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_STEP_TABLE_MODEL_H_
