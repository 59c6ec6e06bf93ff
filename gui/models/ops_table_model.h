// Every op of one microbatch as the step model costs it (sim::CostStepGraph, the rows of
// `meshplan report --ops`): per list (a dense and an MoE layer, the embedding, the head, the
// pipeline send, the once-per-step work) and pass, the op's shape, GFLOP, MB, time and how it was
// costed (the rate its time implies; a collective's group, span, algorithm and whether it may
// hide). Empty while the plan is invalid.
// Columns: list, pass, op, shape, GFLOP, MB, time, how. kSecondsRole (time column): the raw double.
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_OPS_TABLE_MODEL_H_
#define MESHPLAN_GUI_MODELS_OPS_TABLE_MODEL_H_

#include <QAbstractTableModel>
#include <vector>

#include "gui/models/scenario_model.h"
#include "sim/step_model.h"

namespace meshplan::gui {

class OpsTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kList, kPass, kOp, kShape, kGflop, kMegabytes, kTime, kHow, kColumnCount };
  static constexpr int kSecondsRole = Qt::UserRole;  // kTime: double seconds

  explicit OpsTableModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // The op of row `row` and the list it belongs to (REQUIRES: 0 <= row < rowCount()).
  const sim::CostedOp& op(int row) const;
  const sim::CostedOpList& list(int row) const;

 private:
  void Reset();
  ScenarioModel* scenario_;
  std::vector<sim::CostedOpList> lists_;
  std::vector<std::pair<size_t, size_t>> rows_;  // (list, op) per row
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_OPS_TABLE_MODEL_H_
