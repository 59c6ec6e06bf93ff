// What the training run costs: tokens, steps, days, GPU-hours, dollars and energy
// (sim::EstimateTraining), then the same with failures and checkpoints (the reliability Monte
// Carlo, which arrives from a worker thread: its rows read "computing..." until then).
// Columns: quantity, value, how it is obtained. kValueRole: the raw double.
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_COST_TABLE_MODEL_H_
#define MESHPLAN_GUI_MODELS_COST_TABLE_MODEL_H_

#include <QAbstractTableModel>

#include "gui/models/scenario_model.h"

namespace meshplan::gui {

class CostTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Row {
    kTokens,
    kSteps,
    kStepTime,
    kTokensPerS,
    kDays,
    kGpuHours,
    kCost,
    kEnergy,
    kGoodput,
    kDaysP50,
    kDaysP90,
    kCostP50,
    kRowCount
  };
  enum Column { kQuantity, kValue, kHow, kColumnCount };
  static constexpr int kValueRole = Qt::UserRole;

  explicit CostTableModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // NaN while the reliability rows are not known.
  double value(Row r) const;
  static QString quantityName(Row r);

 private:
  void Reset();
  QString valueText(Row r) const;
  QString how(Row r) const;
  ScenarioModel* scenario_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_COST_TABLE_MODEL_H_
