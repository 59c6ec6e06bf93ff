// One training step: where the time goes (compute, recompute, exposed communication per group,
// pipeline bubble, optimizer; sim::EstimateStep's breakdown, as `meshplan report`) as horizontal
// bars with their share of the step, and the throughput metrics above them: step time, tokens/s,
// TFLOP/s per GPU, MFU (both attention conventions), HFU and the bubble fraction; below them every op
// of one microbatch as the step model costs it (OpsTableModel, `meshplan report --ops`).
#ifndef MESHPLAN_GUI_VIEWS_STEP_VIEW_H_
#define MESHPLAN_GUI_VIEWS_STEP_VIEW_H_

#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QTableView>

#include "gui/models/ops_table_model.h"
#include "gui/models/step_table_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class StepView : public View {
  Q_OBJECT

 public:
  StepView(ScenarioModel* scenario, StepTableModel* model, OpsTableModel* ops, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return chart_view_; }

 private:
  void Rebuild();
  StepTableModel* model_;
  QChart* chart_;
  QChartView* chart_view_;
  QTableView* table_;
  QLabel *step_time_, *tokens_, *tflops_, *mfu_, *hfu_, *bubble_, *accuracy_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_STEP_VIEW_H_
