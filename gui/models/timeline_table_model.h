// The discrete-event timeline of one step's pipeline (sim::SimulatePipeline): one row per
// forward (F), input-gradient backward (B) or weight-gradient (W) op of one microbatch on one
// pipeline rank. Feeds the timeline view's Gantt chart. Large pipelines are simulated on a worker
// thread: the model is empty until they arrive (state() says so).
// Columns: rank, chunk, microbatch, kind, start (s), end (s). kValueRole: raw numbers.
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_TIMELINE_TABLE_MODEL_H_
#define MESHPLAN_GUI_MODELS_TIMELINE_TABLE_MODEL_H_

#include <QAbstractTableModel>

#include "gui/models/scenario_model.h"

namespace meshplan::gui {

class TimelineTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kRank, kChunk, kMicrobatch, kKind, kStart, kEnd, kColumnCount };
  static constexpr int kValueRole = Qt::UserRole;

  explicit TimelineTableModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Typed access for the Gantt painter (tens of thousands of ops; QVariant per field is slow).
  const sim::TimelineOp& op(int row) const { return result_.ops[static_cast<size_t>(row)]; }
  const sim::DesResult& result() const { return result_; }
  int64_t ranks() const { return ranks_; }
  Evaluation::Pending state() const { return state_; }
  QString error() const { return error_; }
  static QString kindName(sim::PipeOpKind k);  // "F", "B", "W"

 private:
  void Reset();
  ScenarioModel* scenario_;
  sim::DesResult result_;
  int64_t ranks_ = 0;
  Evaluation::Pending state_ = Evaluation::Pending::kNone;
  QString error_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_TIMELINE_TABLE_MODEL_H_
