// What the run costs: wall-clock days, GPU-hours, dollars and energy for the tokens to train
// (sim::EstimateTraining), without and with failures (the reliability Monte Carlo; those rows
// fill in when the worker thread finishes). Reads CostTableModel.
#ifndef MESHPLAN_GUI_VIEWS_COST_VIEW_H_
#define MESHPLAN_GUI_VIEWS_COST_VIEW_H_

#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QTableView>

#include "gui/models/cost_table_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class CostView : public View {
  Q_OBJECT

 public:
  CostView(ScenarioModel* scenario, CostTableModel* model, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return chart_view_; }

 private:
  void Refresh();
  CostTableModel* model_;
  QLabel *days_, *gpu_hours_, *dollars_, *energy_;
  QChart* chart_;
  QChartView* chart_view_;
  QTableView* table_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_COST_VIEW_H_
