#include "gui/views/reliability_view.h"

#include <QAreaSeries>
#include <QHBoxLayout>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSplitter>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "core/units.h"
#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

void Clear(QChart* c) {
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
}

}  // namespace

ReliabilityView::ReliabilityView(ScenarioModel* scenario, ReliabilityTableModel* model, QWidget* parent)
    : View(scenario, "reliability", "Failures, checkpoints and goodput over the run", true, parent), model_(model) {
  auto* body = new QWidget();
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* cards = new QHBoxLayout();
  cards->addWidget(MakeMetric("job MTBF", &mtbf_, body));
  cards->addWidget(MakeMetric("interruptions (expected)", &interruptions_, body));
  cards->addWidget(MakeMetric("checkpoint pause (async)", &pause_, body));
  cards->addWidget(MakeMetric("checkpoint every", &interval_, body));
  cards->addWidget(MakeMetric("goodput", &goodput_, body));
  cards->addWidget(MakeMetric("days p10 / p50 / p90", &days_, body));
  layout->addLayout(cards);
  auto* status = new QHBoxLayout();
  status_ = new QLabel();
  progress_ = new QProgressBar();
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(240);
  status->addWidget(status_, 1);
  status->addWidget(progress_);
  layout->addLayout(status);
  goodput_chart_ = new QChart();
  goodput_view_ = MakeChartView(goodput_chart_, /*legend=*/true);
  days_chart_ = new QChart();
  days_view_ = MakeChartView(days_chart_, /*legend=*/false);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(goodput_view_);
  split->addWidget(days_view_);
  split->setSizes({600, 500});
  layout->addWidget(split, 1);
  setBody(body);
  Worker* w = scenario_->reliabilityWorker();
  connect(w, &Worker::progressChanged, this, [this](double f) { progress_->setValue(static_cast<int>(100 * f)); });
  connect(model_, &QAbstractItemModel::modelReset, this, &ReliabilityView::Refresh);
  Refresh();
}

void ReliabilityView::Refresh() {
  Clear(goodput_chart_);
  Clear(days_chart_);
  const Evaluation& e = scenario_->evaluation();
  for (QLabel* l : {mtbf_, interruptions_, pause_, interval_, goodput_, days_}) l->setText("-");
  if (e.reliability_state == Evaluation::Pending::kFailed) {
    status_->setText("<span style='color:#b00000'>Reliability not available: " + e.reliability_error.toHtmlEscaped() +
                     "</span>");
    progress_->hide();
    return;
  }
  if (e.reliability_state != Evaluation::Pending::kReady || !e.reliability) {
    status_->setText("Running the failure Monte Carlo on a worker thread...");
    progress_->show();
    return;
  }
  progress_->hide();
  const sim::ReliabilityReport& r = *e.reliability;
  mtbf_->setText(QString::number(r.rates.mtbf_h, 'f', 2) + " h");
  interruptions_->setText(QString::number(r.expected_interruptions, 'f', 0));
  pause_->setText(Duration(r.params.ckpt_blocking_s));
  interval_->setText(Duration(r.interval_s));
  goodput_->setText(Percent(r.expected.goodput, 2));
  if (!r.mc.skipped.empty()) {
    days_->setText(QString("%1 (closed form)").arg(r.mc.days.p50, 0, 'g', 4));
    days_->setToolTip(Q(r.mc.skipped));
  } else {
    days_->setText(QString("%1 / %2 / %3")
                       .arg(r.mc.days.p10, 0, 'f', 1)
                       .arg(r.mc.days.p50, 0, 'f', 1)
                       .arg(r.mc.days.p90, 0, 'f', 1));
    days_->setToolTip(QString());
  }
  status_->setText(QString("Failure rates: %1 (%2 GPUs, %3 nodes, %4 hot spare nodes). Checkpoint %5 per GPU, "
                           "restore %6. Closed form exact for Poisson arrivals.")
                       .arg(Q(scenario_->failureModel().name))
                       .arg(r.rates.gpus)
                       .arg(r.rates.nodes)
                       .arg(r.spare_nodes)
                       .arg(core::FormatBytes(r.checkpoint.per_gpu_bytes).c_str())
                       .arg(Duration(r.checkpoint.restore_s)));

  // Goodput against the interval, from the model's sweep.
  auto* curve = new QLineSeries();
  curve->setName("goodput");
  double lo = 100, hi = 0;
  for (int i = 0; i < model_->rowCount(); ++i) {
    const double g = 100 * model_->value(i, ReliabilityTableModel::kGoodput);
    curve->append(model_->value(i, ReliabilityTableModel::kInterval), g);
    lo = std::min(lo, g);
    hi = std::max(hi, g);
  }
  QPen cp(QColor(31, 119, 180));
  cp.setWidth(3);
  curve->setPen(cp);
  goodput_chart_->addSeries(curve);
  const double lo_y = std::max(0.0, lo - 2), hi_y = std::min(100.0, hi + 1);
  auto* y = new QValueAxis();
  y->setRange(lo_y, hi_y);
  y->setTitleText("goodput (%)");
  y->setLabelFormat("%.1f");
  y->applyNiceNumbers();
  const double ymin = y->min(), ymax = y->max();  // the vertical lines span the rounded axis
  auto vline = [&](double x, const QString& name, QColor color, Qt::PenStyle style) {
    auto* s = new QLineSeries();
    s->setName(name);
    s->append(x, ymin);
    s->append(x, ymax);
    QPen pen(color);
    pen.setWidth(2);
    pen.setStyle(style);
    s->setPen(pen);
    goodput_chart_->addSeries(s);
  };
  vline(r.young_s, QString("Young %1").arg(Duration(r.young_s)), QColor(255, 127, 14), Qt::DashLine);
  vline(r.daly_s, QString("Daly %1").arg(Duration(r.daly_s)), QColor(148, 103, 189), Qt::DotLine);
  auto* opt = new QScatterSeries();
  opt->setName(QString("optimum %1: %2").arg(Duration(r.optimal_s), Percent(r.at_optimum.goodput, 2)));
  opt->append(r.optimal_s, 100 * r.at_optimum.goodput);
  opt->setMarkerSize(12);
  opt->setColor(QColor(200, 0, 0));
  goodput_chart_->addSeries(opt);
  auto* x = new QLogValueAxis();
  x->setBase(10);
  x->setLabelFormat("%g");
  x->setTitleText("checkpoint interval (s, log scale)");
  goodput_chart_->addAxis(x, Qt::AlignBottom);
  goodput_chart_->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : goodput_chart_->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  goodput_chart_->setTitle(QString("Goodput vs checkpoint interval (MTBF %1 h)").arg(r.rates.mtbf_h, 0, 'f', 2));
  goodput_chart_->legend()->setAlignment(Qt::AlignBottom);

  // Distribution of wall-clock days: a histogram drawn as a filled step line on a days axis.
  const auto& d = e.days_samples;
  if (d.empty()) return;
  const auto [mn, mx] = std::minmax_element(d.begin(), d.end());
  const int bins = 24;
  const double lo_d = *mn, width = (*mx - *mn) > 0 ? (*mx - *mn) / bins : 1;
  std::vector<int> counts(bins, 0);
  for (double v : d) counts[static_cast<size_t>(std::min(bins - 1, static_cast<int>((v - lo_d) / width)))]++;
  auto* outline = new QLineSeries();
  int maxc = 0;
  outline->append(lo_d, 0);
  for (int i = 0; i < bins; ++i) {
    const int c = counts[static_cast<size_t>(i)];
    maxc = std::max(maxc, c);
    outline->append(lo_d + i * width, c);
    outline->append(lo_d + (i + 1) * width, c);
  }
  outline->append(lo_d + bins * width, 0);
  auto* hist = new QAreaSeries(outline);
  outline->setParent(hist);  // QAreaSeries does not own its boundary line
  hist->setName("simulated runs");
  hist->setColor(QColor(44, 160, 44, 200));
  hist->setBorderColor(QColor(20, 100, 20));
  days_chart_->addSeries(hist);
  auto marker = [&](double at, const QString& name, QColor color) {
    auto* s = new QLineSeries();
    s->setName(name);
    s->append(at, 0);
    s->append(at, maxc * 1.1);
    QPen pen(color);
    pen.setWidth(2);
    pen.setStyle(Qt::DashLine);
    s->setPen(pen);
    days_chart_->addSeries(s);
  };
  marker(r.mc.days.p50, QString("report p50 %1").arg(r.mc.days.p50, 0, 'f', 1), QColor(31, 119, 180));
  marker(r.mc.days.p90, QString("report p90 %1").arg(r.mc.days.p90, 0, 'f', 1), QColor(200, 0, 0));
  auto* bx = new QValueAxis();
  bx->setRange(lo_d - width, lo_d + (bins + 1) * width);
  bx->setTitleText("wall-clock days to train the tokens");
  bx->setLabelFormat(width * bins < 2 ? "%.2f" : "%.1f");
  auto* by = new QValueAxis();
  by->setRange(0, maxc * 1.1);
  by->setLabelFormat("%.0f");
  by->setTitleText("simulated runs");
  days_chart_->addAxis(bx, Qt::AlignBottom);
  days_chart_->addAxis(by, Qt::AlignLeft);
  for (QAbstractSeries* s : days_chart_->series()) {
    s->attachAxis(bx);
    s->attachAxis(by);
  }
  days_chart_->legend()->show();
  days_chart_->legend()->setAlignment(Qt::AlignBottom);
  days_chart_->setTitle(
      QString("Days to train: %1 simulated runs (no failures: %2 days)").arg(d.size()).arg(r.ideal_days, 0, 'f', 1));
}

}  // namespace meshplan::gui
