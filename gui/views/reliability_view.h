// Failures, checkpoints and goodput over the whole run (sim::EstimateReliability with the
// llama3-405b failure rates, async checkpoints, as `meshplan report`): goodput against the
// checkpoint interval (closed form, log axis) with Young's, Daly's and the numerical optimum
// marked, and the distribution of wall-clock days from the Monte Carlo (single-trial runs on a
// worker thread; the report's 200-trial p50/p90 are marked). Reads ReliabilityTableModel and the
// scenario model's reliability results.
#ifndef MESHPLAN_GUI_VIEWS_RELIABILITY_VIEW_H_
#define MESHPLAN_GUI_VIEWS_RELIABILITY_VIEW_H_

#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QProgressBar>

#include "gui/models/reliability_table_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class ReliabilityView : public View {
  Q_OBJECT

 public:
  ReliabilityView(ScenarioModel* scenario, ReliabilityTableModel* model, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return goodput_view_; }

 private:
  void Refresh();
  ReliabilityTableModel* model_;
  QLabel *mtbf_, *interruptions_, *pause_, *interval_, *goodput_, *days_;
  QLabel* status_;
  QProgressBar* progress_;
  QChart *goodput_chart_, *days_chart_;
  QChartView *goodput_view_, *days_view_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_RELIABILITY_VIEW_H_
