// Memory per GPU, per pipeline stage: a stacked bar per stage (weights, gradients, master
// weights, optimizer moments, activations, fixed overheads) against the GPU's HBM (red dashed
// line); the band above HBM is shaded red and a stage over it is labelled OVER. Hovering a
// segment shows that term's size and derivation. Below, the same numbers as a table. Both read
// MemoryTableModel (core::EstimateMemory, as `meshplan report`).
#ifndef MESHPLAN_GUI_VIEWS_MEMORY_VIEW_H_
#define MESHPLAN_GUI_VIEWS_MEMORY_VIEW_H_

#include <QChart>
#include <QChartView>
#include <QTableView>
#include <vector>

#include "gui/models/memory_table_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class MemoryView : public View {
  Q_OBJECT

 public:
  MemoryView(ScenarioModel* scenario, MemoryTableModel* model, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return chart_view_; }

  // What the chart shows, for tests: the stacked segments (GB) of stage `row`, in the order of
  // stackedColumns(), and the HBM line's height (GB).
  static std::vector<MemoryTableModel::Column> stackedColumns();
  std::vector<double> barValues(int row) const;
  double hbmLineGb() const { return hbm_line_gb_; }
  int barCount() const;

 private:
  void Rebuild();
  MemoryTableModel* model_;
  QChart* chart_;
  QChartView* chart_view_;
  QTableView* table_;
  std::vector<std::vector<double>> bars_;  // [set][stage]
  double hbm_line_gb_ = 0;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_MEMORY_VIEW_H_
