#include "gui/models/timeline_table_model.h"

namespace meshplan::gui {

TimelineTableModel::TimelineTableModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  connect(scenario_, &ScenarioModel::timelineChanged, this, &TimelineTableModel::Reset);
  Reset();
}

void TimelineTableModel::Reset() {
  beginResetModel();
  const Evaluation& e = scenario_->evaluation();
  state_ = e.valid ? e.timeline_state : Evaluation::Pending::kNone;
  error_ = e.timeline_error;
  result_ = state_ == Evaluation::Pending::kReady ? e.timeline : sim::DesResult{};
  ranks_ = scenario_->plan().pp;
  endResetModel();
}

int TimelineTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(result_.ops.size());
}
int TimelineTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QString TimelineTableModel::kindName(sim::PipeOpKind k) {
  switch (k) {
    case sim::PipeOpKind::kForward: return "F";
    case sim::PipeOpKind::kBackward: return "B";
    case sim::PipeOpKind::kWeight: return "W";
  }
  return "?";
}

QVariant TimelineTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const sim::TimelineOp& o = op(index.row());
  if (role == Qt::DisplayRole || role == kValueRole) {
    switch (index.column()) {
      case kRank: return QVariant::fromValue<qint64>(o.stage);
      case kChunk: return QVariant::fromValue<qint64>(o.chunk);
      case kMicrobatch: return QVariant::fromValue<qint64>(o.microbatch);
      case kKind: return kindName(o.kind);
      case kStart: return role == kValueRole ? QVariant(o.start_s) : QVariant(QString::number(o.start_s, 'f', 4));
      case kEnd: return role == kValueRole ? QVariant(o.end_s) : QVariant(QString::number(o.end_s, 'f', 4));
    }
  }
  return {};
}

QVariant TimelineTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kRank: return "rank";
    case kChunk: return "chunk";
    case kMicrobatch: return "microbatch";
    case kKind: return "kind";
    case kStart: return "start (s)";
    case kEnd: return "end (s)";
  }
  return {};
}

}  // namespace meshplan::gui
