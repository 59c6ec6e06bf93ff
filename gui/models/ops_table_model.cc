#include "gui/models/ops_table_model.h"

#include "gui/models/format.h"

namespace meshplan::gui {

OpsTableModel::OpsTableModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  connect(scenario_, &ScenarioModel::evaluated, this, &OpsTableModel::Reset);
  Reset();
}

void OpsTableModel::Reset() {
  beginResetModel();
  lists_.clear();
  rows_.clear();
  if (scenario_->evaluation().valid) {
    const core::Scenario& s = scenario_->scenario();
    lists_ = sim::CostStepGraph(s.model, s.plan, s.gpu, s.cluster, scenario_->profile());
    for (size_t l = 0; l < lists_.size(); ++l)
      for (size_t o = 0; o < lists_[l].ops.size(); ++o) rows_.emplace_back(l, o);
  }
  endResetModel();
}

int OpsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int OpsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

const sim::CostedOpList& OpsTableModel::list(int row) const { return lists_[rows_[static_cast<size_t>(row)].first]; }
const sim::CostedOp& OpsTableModel::op(int row) const {
  const auto& [l, o] = rows_[static_cast<size_t>(row)];
  return lists_[l].ops[o];
}

QVariant OpsTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const sim::CostedOp& c = op(index.row());
  const core::Op& o = c.op;
  if (role == kSecondsRole && index.column() == kTime) return c.time_s;
  if (role == Qt::TextAlignmentRole && index.column() >= kGflop && index.column() <= kTime)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    const sim::CostedOpList& l = list(index.row());
    QString tip = QString("%1: %2").arg(Q(l.name), QString::fromStdString(l.where));
    if (l.count > 1) tip += QString(" (%1 in the model)").arg(l.count);
    return tip + QString("\nper microbatch%1; compute at the slowest GPU's pace (docs/compute.md)")
                     .arg(o.pass == core::Pass::kStep ? " (this op: once per step)" : "");
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kList: return Q(list(index.row()).name);
    case kPass: return Q(sim::PassShortName(o.pass));
    case kOp: return Q(o.name);
    case kShape: {
      QString shape = Q(sim::CostedOpShape(o));
      if (o.kind == core::OpKind::kGemm || o.kind == core::OpKind::kAttention) shape += " " + Q(core::Name(o.dtype));
      return shape;
    }
    case kGflop: return o.Flops() > 0 ? QString::number(o.Flops() / 1e9, 'f', 2) : QString("-");
    case kMegabytes: return o.bytes > 0 ? QString::number(static_cast<double>(o.bytes) / 1e6, 'f', 2) : QString("-");
    case kTime: return Duration(c.time_s);
    case kHow: return Q(sim::CostedOpHow(c));
    default: return {};
  }
}

QVariant OpsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  switch (section) {
    case kList: return "list";
    case kPass: return "pass";
    case kOp: return "op";
    case kShape: return "shape";
    case kGflop: return "GFLOP";
    case kMegabytes: return "MB";
    case kTime: return "time";
    case kHow: return "how costed";
    default: return {};
  }
}

}  // namespace meshplan::gui
