// The search heat map: the best plan for every pair of values of two chosen axes (e.g. TP x PP),
// each cell found by sim::SearchPlans restricted to that pair (every other axis searched: ZeRO,
// recompute, SP, micro batch, schedule, and the remaining degrees). Cells are computed on a worker
// thread, one after another, and appear as they finish; a cell with no plan that fits shows the
// lightest out-of-memory variant (none when the search's closed-form bound ruled out every
// variant before estimating it), a cell with no valid plan the first rule it breaks.
// Rows: values of the y axis; columns: values of the x axis.
// Roles: DisplayRole a short label, kStateRole the CellState, kTokensPerSPerGpuRole (double),
// ToolTipRole the plan and its numbers. cell(row, col) gives the plan itself.
// Thread-safety: GUI thread only; the search runs on the model's Worker.
#ifndef MESHPLAN_GUI_MODELS_SEARCH_GRID_MODEL_H_
#define MESHPLAN_GUI_MODELS_SEARCH_GRID_MODEL_H_

#include <QAbstractTableModel>
#include <optional>
#include <vector>

#include "gui/models/scenario_model.h"
#include "sim/search.h"

namespace meshplan::gui {

enum class SearchAxis { kTp, kPp, kCp, kEp, kVpp, kZero, kMbs };
const char* Name(SearchAxis a);  // "TP", "PP", ...

class SearchGridModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class CellState { kPending, kFits, kOutOfMemory, kNoPlan };
  struct Cell {
    CellState state = CellState::kPending;
    std::optional<sim::RankedPlan> plan;  // kFits: the best; kOutOfMemory: the lightest variant, if any
    QString note;                         // kNoPlan, kOutOfMemory without a plan: why
    int64_t evaluated = 0;                // plans costed for this cell
  };
  static constexpr int kStateRole = Qt::UserRole;
  static constexpr int kTokensPerSPerGpuRole = Qt::UserRole + 1;

  SearchGridModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // The values an axis offers for the current scenario (divisors of the GPU count, ZeRO 0-3, ...).
  std::vector<int64_t> axisValues(SearchAxis a) const;
  // Starts (or restarts) the search over x and y; cancels a running one.
  void run(SearchAxis x, SearchAxis y);
  void cancel();
  Worker* worker() { return &worker_; }
  SearchAxis xAxis() const { return x_; }
  SearchAxis yAxis() const { return y_; }
  const std::vector<int64_t>& xValues() const { return xs_; }  // the columns' values
  const std::vector<int64_t>& yValues() const { return ys_; }  // the rows' values
  const Cell& cell(int row, int col) const;
  // The range of tokens/s per GPU over the cells that fit (0, 0 before any).
  double minTokensPerSPerGpu() const { return min_tps_gpu_; }
  double maxTokensPerSPerGpu() const { return max_tps_gpu_; }
  // The scenario of a cell's plan (the searched scenario with that plan), if it has one.
  std::optional<core::Scenario> cellScenario(int row, int col) const;
  // True when the scenario changed since the search ran (the map no longer describes it).
  bool stale() const { return stale_; }
  bool hasRun() const { return has_run_; }
  // The searched scenario's value of `a` (to mark the current plan's cell).
  static int64_t PlanValue(const core::PlanSpec& p, SearchAxis a);

 signals:
  void staleChanged(bool stale);

 private:
  ScenarioModel* scenario_;
  Worker worker_;
  SearchAxis x_ = SearchAxis::kTp, y_ = SearchAxis::kPp;
  std::vector<int64_t> xs_, ys_;
  std::vector<Cell> cells_;  // row-major: ys_ x xs_
  core::Scenario searched_;
  double min_tps_gpu_ = 0, max_tps_gpu_ = 0;
  bool stale_ = false, has_run_ = false;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_SEARCH_GRID_MODEL_H_
