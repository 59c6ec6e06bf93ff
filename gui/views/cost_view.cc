#include "gui/views/cost_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QSplitter>
#include <QValueAxis>
#include <cmath>

#include "gui/models/format.h"

namespace meshplan::gui {

CostView::CostView(ScenarioModel* scenario, CostTableModel* model, QWidget* parent)
    : View(scenario, "cost", "What the training run costs", true, parent), model_(model) {
  auto* body = new QWidget();
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* cards = new QHBoxLayout();
  cards->addWidget(MakeMetric("wall-clock days (no failures)", &days_, body));
  cards->addWidget(MakeMetric("GPU-hours", &gpu_hours_, body));
  cards->addWidget(MakeMetric("cost", &dollars_, body));
  cards->addWidget(MakeMetric("energy (GPUs at TDP)", &energy_, body));
  layout->addLayout(cards);
  chart_ = new QChart();
  chart_view_ = MakeChartView(chart_, /*legend=*/false);
  table_ = MakeTable(model_);
  table_->setFocusPolicy(Qt::NoFocus);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(chart_view_);
  split->setSizes({380, 260});
  layout->addWidget(split, 1);
  setBody(body);
  connect(model_, &QAbstractItemModel::modelReset, this, &CostView::Refresh);
  connect(model_, &QAbstractItemModel::dataChanged, this, &CostView::Refresh);
  Refresh();
}

void CostView::Refresh() {
  chart_->removeAllSeries();
  for (QAbstractAxis* a : chart_->axes()) {
    chart_->removeAxis(a);
    delete a;
  }
  if (model_->rowCount() == 0) return;
  days_->setText(QString::number(model_->value(CostTableModel::kDays), 'f', 1));
  gpu_hours_->setText(Count(model_->value(CostTableModel::kGpuHours)));
  dollars_->setText(Dollars(model_->value(CostTableModel::kCost)));
  energy_->setText(Count(model_->value(CostTableModel::kEnergy) / 1000) + " MWh");

  // Days: the ideal run against the Monte Carlo with failures (when it has arrived).
  auto* set = new QBarSet("days");
  set->setColor(QColor(31, 119, 180));
  set->setLabelColor(Qt::black);
  QStringList categories;
  auto add = [&](const QString& name, CostTableModel::Row r) {
    const double v = model_->value(r);
    categories << QString("%1: %2").arg(name, std::isnan(v) ? QString("computing...") : QString::number(v, 'f', 1));
    set->append(std::isnan(v) ? 0 : v);
  };
  add("with failures, p90", CostTableModel::kDaysP90);
  add("with failures, p50", CostTableModel::kDaysP50);
  add("no failures", CostTableModel::kDays);
  auto* series = new QHorizontalBarSeries();
  series->append(set);
  chart_->addSeries(series);
  auto* y = new QBarCategoryAxis();
  y->append(categories);
  auto* x = new QValueAxis();
  double top = 0;
  for (int i = 0; i < set->count(); ++i) top = std::max(top, set->at(i));
  x->setRange(0, top > 0 ? top * 1.1 : 1);
  x->setTitleText("wall-clock days");
  x->setLabelFormat("%.0f");
  x->applyNiceNumbers();
  chart_->addAxis(y, Qt::AlignLeft);
  chart_->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  series->attachAxis(y);
  chart_->setTitle(
      QString("Wall-clock days for %1 tokens at %2 tokens/s, without and with failures")
          .arg(Count(model_->value(CostTableModel::kTokens)), Count(model_->value(CostTableModel::kTokensPerS))));
}

}  // namespace meshplan::gui
