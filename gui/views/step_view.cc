#include "gui/views/step_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCursor>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QSplitter>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>

#include "gui/models/format.h"

namespace meshplan::gui {

StepView::StepView(ScenarioModel* scenario, StepTableModel* model, OpsTableModel* ops, QWidget* parent)
    : View(scenario, "step", "One training step: where the time goes", true, parent), model_(model) {
  auto* body = new QWidget();
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* metrics = new QHBoxLayout();
  metrics->addWidget(MakeMetric("step time", &step_time_, body));
  metrics->addWidget(MakeMetric("throughput", &tokens_, body));
  metrics->addWidget(MakeMetric("model TFLOP/s per GPU", &tflops_, body));
  metrics->addWidget(MakeMetric("MFU (causal count)", &mfu_, body));
  metrics->addWidget(MakeMetric("HFU (with recompute)", &hfu_, body));
  metrics->addWidget(MakeMetric("pipeline bubble", &bubble_, body));
  metrics->addWidget(MakeMetric("how close (published runs)", &accuracy_, body));
  layout->addLayout(metrics);
  chart_ = new QChart();
  chart_view_ = MakeChartView(chart_, /*legend=*/false);
  table_ = MakeTable(model_);
  table_->setMaximumWidth(380);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(chart_view_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setSizes({800, 360});
  // Every op of one microbatch below the chart (`meshplan report --ops`).
  QTableView* ops_table = MakeTable(ops);
  ops_table->setToolTip("every op of one microbatch as the step model costs it (meshplan report --ops)");
  auto* vsplit = new QSplitter(Qt::Vertical);
  vsplit->addWidget(split);
  vsplit->addWidget(ops_table);
  vsplit->setStretchFactor(0, 3);
  vsplit->setStretchFactor(1, 2);
  layout->addWidget(vsplit, 1);
  setBody(body);
  connect(model_, &QAbstractItemModel::modelReset, this, &StepView::Rebuild);
  Rebuild();
}

void StepView::Rebuild() {
  chart_->removeAllSeries();
  for (QAbstractAxis* a : chart_->axes()) {
    chart_->removeAxis(a);
    delete a;
  }
  if (model_->rowCount() == 0) return;
  const Evaluation& e = scenario_->evaluation();
  const sim::StepEstimate& s = e.step;
  step_time_->setText(Duration(s.time_s));
  // The compute runs at the pace of the plan's slowest GPU (sim::SlowestGpuPace, docs/compute.md).
  const core::PlanSpec& plan = scenario_->plan();
  const double pace = sim::SlowestGpuPace(plan, scenario_->scenario().gpu);
  QString tip = pace > 1 ? QString("compute at the slowest of %1 GPUs' pace: x %2 (the GPU's speed spread %3)")
                               .arg(plan.gpus)
                               .arg(pace, 0, 'f', 3)
                               .arg(Percent(scenario_->scenario().gpu.speed_spread))
                         : QString("one GPU: no slower GPU to wait for");
  // Of the exposed communication: the compute the hidden collectives slowed (docs/compute.md).
  if (s.overlap_slowdown_s > 0)
    tip += QString("\noverlapped communication slows the compute beside it: +%1 (in the exposed communication)")
               .arg(Duration(s.overlap_slowdown_s));
  // The rates no measurement covers, taken from the profile's assumed figures (sim::AssumedRates).
  for (const std::string& n :
       sim::AssumedRates(scenario_->profile(), scenario_->scenario().gpu, scenario_->scenario().model, plan))
    tip += "\nassumed: " + QString::fromStdString(n);
  step_time_->setToolTip(tip);
  tokens_->setText(QString("%1 tokens/s\n%2 per GPU").arg(Count(s.tokens_per_s), Count(s.tokens_per_s_per_gpu)));
  tflops_->setText(QString::number(s.tflops_per_gpu, 'f', 1));
  mfu_->setText(QString("%1 (%2)").arg(Percent(s.mfu), Percent(s.mfu_causal)));
  hfu_->setText(Percent(s.hfu));
  bubble_->setText(Percent(s.bubble_fraction));
  // How far off such predictions came on published runs (docs/validation.md, How close).
  accuracy_->setText(model_->accuracyText());
  accuracy_->setToolTip(model_->accuracyHelp());

  // Rows bottom-up in a horizontal bar chart: list them in reverse so compute is on top.
  auto* set = new QBarSet("seconds");
  set->setColor(QColor(31, 119, 180));
  set->setLabelColor(Qt::black);
  QStringList categories;
  std::vector<StepTableModel::Row> rows;
  for (int r = StepTableModel::kOptimizer; r >= StepTableModel::kCompute; --r)
    rows.push_back(static_cast<StepTableModel::Row>(r));
  double max_s = 0;
  for (auto r : rows) {
    const double sec = model_->seconds(r);
    max_s = std::max(max_s, sec);
    const double share = s.time_s > 0 ? sec / s.time_s : 0;
    categories << QString("%1  %2 (%3)").arg(StepTableModel::termName(r), Duration(sec), Percent(share));
    set->append(sec);
  }
  connect(set, &QBarSet::hovered, this, [rows](bool status, int index) {
    if (status && index >= 0 && index < static_cast<int>(rows.size()))
      QToolTip::showText(QCursor::pos(), StepTableModel::termHelp(rows[static_cast<size_t>(index)]));
    else QToolTip::hideText();
  });
  auto* series = new QHorizontalBarSeries();
  series->append(set);
  series->setBarWidth(0.7);
  chart_->addSeries(series);
  auto* y = new QBarCategoryAxis();
  y->append(categories);
  auto* x = new QValueAxis();
  x->setRange(0, max_s > 0 ? max_s * 1.05 : 1);
  x->setTitleText("seconds per step, critical path");
  x->setLabelFormat("%.3g");
  x->applyNiceNumbers();
  chart_->addAxis(y, Qt::AlignLeft);
  chart_->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  series->attachAxis(y);
  QFont f = chart_->titleFont();
  f.setPointSize(12);
  f.setBold(true);
  chart_->setTitleFont(f);
  chart_->setTitle(QString("Step %1 = the bars below (analytic model, profile %2)")
                       .arg(Duration(s.time_s), Q(scenario_->profile().name)));
}

}  // namespace meshplan::gui
