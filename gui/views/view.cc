#include "gui/views/view.h"

#include <QPainter>

#include <QHeaderView>

#include <QVBoxLayout>

namespace meshplan::gui {

View::View(ScenarioModel* scenario, const QString& id, const QString& heading, bool needs_valid_plan, QWidget* parent)
    : QWidget(parent), scenario_(scenario), id_(id), heading_(heading), needs_valid_plan_(needs_valid_plan) {
  setObjectName(id + "_view");
  setAutoFillBackground(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);
  title_ = new QLabel(this);
  title_->setWordWrap(true);
  title_->setTextFormat(Qt::RichText);
  layout->addWidget(title_);
  stack_ = new QStackedWidget(this);
  invalid_ = new QLabel(this);
  invalid_->setWordWrap(true);
  invalid_->setAlignment(Qt::AlignCenter);
  invalid_->setTextFormat(Qt::RichText);
  stack_->addWidget(invalid_);
  layout->addWidget(stack_, 1);
  connect(scenario_, &ScenarioModel::evaluated, this, &View::Refresh);
}

void View::setBody(QWidget* body) {
  stack_->insertWidget(0, body);
  Refresh();
}

QString View::subtitle() const { return scenario_->title(); }

void View::Refresh() {
  title_->setText(QString("<b style='font-size:14pt'>%1</b><br><span style='color:#444'>%2</span>")
                      .arg(heading_.toHtmlEscaped(), subtitle().toHtmlEscaped()));
  const Evaluation& e = scenario_->evaluation();
  if (!needs_valid_plan_ || e.valid) {
    stack_->setCurrentIndex(0);
    return;
  }
  QString html =
      "<p style='font-size:13pt'><b>This plan does not validate</b>, so there is nothing to show.</p>"
      "<p>Fix these in the inputs panel (lists offer only valid values; hover a greyed one to see "
      "why):</p><p style='color:#b00000'>";
  for (const auto& err : e.errors) html += err.toHtmlEscaped() + "<br>";
  invalid_->setText(html + "</p>");
  stack_->setCurrentWidget(invalid_);
}

QWidget* MakeMetric(const QString& caption, QLabel** value, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* l = new QVBoxLayout(box);
  l->setContentsMargins(10, 4, 10, 4);
  l->setSpacing(0);
  auto* c = new QLabel(caption, box);
  c->setStyleSheet("color:#555;");
  *value = new QLabel("-", box);
  (*value)->setStyleSheet("font-size:16pt; font-weight:bold;");
  (*value)->setTextInteractionFlags(Qt::TextSelectableByMouse);
  l->addWidget(c);
  l->addWidget(*value);
  box->setStyleSheet("QWidget { background: #f4f6f8; }");
  return box;
}

QChartView* MakeChartView(QChart* chart, bool legend) {
  chart->setAnimationOptions(QChart::NoAnimation);
  if (!legend) chart->legend()->hide();
  auto* view = new QChartView(chart);
  view->setRenderHint(QPainter::Antialiasing);
  return view;
}

QTableView* MakeTable(QAbstractItemModel* model) {
  auto* table = new QTableView();
  table->setModel(model);
  table->verticalHeader()->setVisible(false);
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->horizontalHeader()->setStretchLastSection(true);
  return table;
}

}  // namespace meshplan::gui
