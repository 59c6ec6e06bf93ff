#include "gui/models/reliability_table_model.h"

namespace meshplan::gui {

ReliabilityTableModel::ReliabilityTableModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  connect(scenario_, &ScenarioModel::reliabilityChanged, this, &ReliabilityTableModel::Reset);
  Reset();
}

void ReliabilityTableModel::Reset() {
  beginResetModel();
  const Evaluation& e = scenario_->evaluation();
  sweep_.clear();
  if (e.reliability_state == Evaluation::Pending::kReady && e.reliability) sweep_ = e.reliability->sweep;
  endResetModel();
}

int ReliabilityTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(sweep_.size());
}
int ReliabilityTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

double ReliabilityTableModel::value(int row, Column c) const {
  if (row < 0 || row >= rowCount()) return 0;
  const core::GoodputEstimate& g = sweep_[static_cast<size_t>(row)];
  switch (c) {
    case kInterval: return g.interval_s;
    case kPause: return g.blocking_s;
    case kCheckpointShare: return g.checkpoint_frac;
    case kFailureShare: return g.failure_frac;
    case kPlannedShare: return g.planned_frac;
    case kGoodput: return g.goodput;
    case kColumnCount: break;
  }
  return 0;
}

QVariant ReliabilityTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const auto c = static_cast<Column>(index.column());
  const double v = value(index.row(), c);
  switch (role) {
    case Qt::DisplayRole:
      if (c == kInterval) return QString::number(v, 'f', 0);
      if (c == kPause) return QString::number(v, 'f', 2);
      return QString::number(100 * v, 'f', 2);
    case kValueRole: return v;
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant ReliabilityTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kInterval: return "interval (s)";
    case kPause: return "pause (s)";
    case kCheckpointShare: return "checkpoints (%)";
    case kFailureShare: return "failures (%)";
    case kPlannedShare: return "planned (%)";
    case kGoodput: return "goodput (%)";
  }
  return {};
}

}  // namespace meshplan::gui
