// Goodput against the checkpoint interval (closed form, core::ExpectedGoodput through
// sim::EstimateReliability): one row per interval of the sweep, ascending. Filled when the
// reliability job (a worker thread) has finished; empty before and for an invalid plan.
// Columns: interval (s), pause per checkpoint (s), checkpoint share, failure share, planned
// share, goodput. kValueRole: the raw double (shares and goodput as fractions).
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_RELIABILITY_TABLE_MODEL_H_
#define MESHPLAN_GUI_MODELS_RELIABILITY_TABLE_MODEL_H_

#include <QAbstractTableModel>
#include <vector>

#include "gui/models/scenario_model.h"

namespace meshplan::gui {

class ReliabilityTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kInterval, kPause, kCheckpointShare, kFailureShare, kPlannedShare, kGoodput, kColumnCount };
  static constexpr int kValueRole = Qt::UserRole;

  explicit ReliabilityTableModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  double value(int row, Column c) const;

 private:
  void Reset();
  ScenarioModel* scenario_;
  std::vector<core::GoodputEstimate> sweep_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_RELIABILITY_TABLE_MODEL_H_
