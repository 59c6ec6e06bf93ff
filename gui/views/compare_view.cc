#include "gui/views/compare_view.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QValueAxis>

#include "gui/models/format.h"

namespace meshplan::gui {

CompareView::CompareView(ScenarioModel* scenario, CompareModel* model, QWidget* parent)
    : View(scenario, "compare", "Compare pinned plans", false, parent), model_(model) {
  auto* body = new QWidget();
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout();
  pin_ = new QPushButton("Pin current plan");
  unpin_ = new QPushButton("Unpin selected");
  clear_ = new QPushButton("Clear");
  bar->addWidget(pin_);
  bar->addWidget(unpin_);
  bar->addWidget(clear_);
  bar->addWidget(new QLabel(QString("Up to %1 plans; bold: differs between pins; double-click a column header to "
                                    "load that plan.")
                                .arg(CompareModel::kMaxPins)),
                 1);
  layout->addLayout(bar);
  table_ = new QTableView();
  table_->setModel(model_);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->setSelectionBehavior(QAbstractItemView::SelectColumns);
  chart_ = new QChart();
  chart_view_ = MakeChartView(chart_, /*legend=*/false);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(chart_view_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  setBody(body);
  connect(pin_, &QPushButton::clicked, this, &CompareView::pinCurrent);
  connect(unpin_, &QPushButton::clicked, this, [this] {
    const auto cols = table_->selectionModel()->selectedColumns();
    if (!cols.isEmpty()) model_->unpin(cols.front().column());
  });
  connect(clear_, &QPushButton::clicked, model_, &CompareModel::clear);
  connect(table_->horizontalHeader(), &QHeaderView::sectionDoubleClicked, this,
          [this](int col) { scenario_->setScenario(model_->scenario(col)); });
  connect(model_, &QAbstractItemModel::modelReset, this, &CompareView::Rebuild);
  connect(model_, &QAbstractItemModel::columnsInserted, this, &CompareView::Rebuild);
  connect(model_, &QAbstractItemModel::columnsRemoved, this, &CompareView::Rebuild);
  Rebuild();
}

void CompareView::pinCurrent() {
  const auto& p = scenario_->plan();
  const QString label = QString("#%1: tp%2 pp%3 dp%4 z%5 %6")
                            .arg(++pins_made_)
                            .arg(p.tp)
                            .arg(p.pp)
                            .arg(p.dp)
                            .arg(p.zero)
                            .arg(core::Name(p.recompute));
  model_->pin(label, scenario_->scenario(), scenario_->evaluation());
}

void CompareView::Rebuild() {
  chart_->removeAllSeries();
  for (QAbstractAxis* a : chart_->axes()) {
    chart_->removeAxis(a);
    delete a;
  }
  unpin_->setEnabled(model_->columnCount() > 0);
  clear_->setEnabled(model_->columnCount() > 0);
  if (model_->columnCount() == 0) {
    chart_->setTitle("Nothing pinned yet: press \"Pin current plan\", change the inputs, pin again.");
    return;
  }
  auto* set = new QBarSet("tokens/s");
  set->setColor(QColor(31, 119, 180));
  QStringList cats;
  double top = 0;
  for (int c = 0; c < model_->columnCount(); ++c) {
    const QVariant v = model_->data(model_->index(CompareModel::kTokensPerS, c), CompareModel::kValueRole);
    const double t = v.isValid() ? v.toDouble() : 0;
    top = std::max(top, t);
    set->append(t);
    const QString fits = model_->data(model_->index(CompareModel::kFits, c)).toString();
    cats << model_->headerData(c, Qt::Horizontal).toString() + (fits == "yes" ? "" : "\n(" + fits.left(30) + ")");
  }
  auto* series = new QBarSeries();
  series->append(set);
  chart_->addSeries(series);
  auto* x = new QBarCategoryAxis();
  x->append(cats);
  auto* y = new QValueAxis();
  y->setRange(0, top > 0 ? top * 1.1 : 1);
  y->setTitleText("tokens/s (job)");
  y->setLabelFormat("%.0f");
  y->applyNiceNumbers();
  chart_->addAxis(x, Qt::AlignBottom);
  chart_->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  chart_->setTitle("Throughput of the pinned plans");
}

}  // namespace meshplan::gui
