// Memory per GPU, per pipeline stage: one row per pipeline rank of the current plan, one column
// per term of core::StageMemory (EstimateMemory, the numbers `meshplan report` prints). Feeds the
// memory view's table and its stacked bar chart.
// Roles: DisplayRole GB text (2 decimals, as the report), kBytesRole the exact int64 bytes,
// ToolTipRole what the term is, ForegroundRole red for a stage over the GPU's HBM.
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_MEMORY_TABLE_MODEL_H_
#define MESHPLAN_GUI_MODELS_MEMORY_TABLE_MODEL_H_

#include <QAbstractTableModel>

#include "gui/models/scenario_model.h"

namespace meshplan::gui {

class MemoryTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kStage,
    kLayers,
    kWeights,
    kGrads,
    kMasterWeights,
    kMoments,
    kActivations,
    kCudaContext,
    kCublas,
    kNccl,
    kZero3Buffers,
    kFragmentation,
    kOverheads,
    kTotal,
    kHeadroom,
    kColumnCount
  };
  static constexpr int kBytesRole = Qt::UserRole;  // qint64 bytes (kStage: the rank)

  explicit MemoryTableModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // The bytes of `column` for stage `row` (what kBytesRole returns).
  int64_t bytes(int row, Column column) const;
  int64_t capacityBytes() const;
  // The fit verdict (core::FitVerdict) and the least any stage can hold (docs/memory.md §4).
  core::FitVerdict verdict() const { return report_.verdict; }
  int64_t leastBytes() const { return report_.least_per_gpu_bytes; }
  bool overCapacity(int row) const;
  static QString termName(Column c);             // "weights", "optimizer moments", ...
  QString termTooltip(int row, Column c) const;  // the term, its size and where it comes from

 private:
  void Reset();
  ScenarioModel* scenario_;
  core::MemoryReport report_;  // copy of the last valid evaluation (empty when invalid)
  core::PlanSpec plan_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_MEMORY_TABLE_MODEL_H_
