// One training step's time on the critical path, by cause (sim::StepBreakdown, the rows
// `meshplan report` prints under "Step time"): compute, recompute, exposed TP/CP/EP/DP
// communication, pipeline sends, bubble, optimizer, and the step. Every row is always present
// (zero when the plan has no such cost) so the chart keeps its categories.
// Columns: term, seconds, share of the step. kSecondsRole: the raw double.
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_STEP_TABLE_MODEL_H_
#define MESHPLAN_GUI_MODELS_STEP_TABLE_MODEL_H_

#include <QAbstractTableModel>

#include "gui/models/scenario_model.h"

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

 private:
  void Reset();
  ScenarioModel* scenario_;
  bool valid_ = false;
  sim::StepEstimate step_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_STEP_TABLE_MODEL_H_
