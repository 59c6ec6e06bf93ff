#include "gui/views/timeline_view.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

constexpr int kLeft = 70, kRight = 16, kTop = 30, kBottom = 62;

QColor KindColor(sim::PipeOpKind k) {
  switch (k) {
    case sim::PipeOpKind::kForward: return QColor(66, 133, 244);
    case sim::PipeOpKind::kBackward: return QColor(244, 160, 0);
    case sim::PipeOpKind::kWeight: return QColor(52, 168, 83);
  }
  return Qt::gray;
}

QString KindWord(sim::PipeOpKind k) {
  switch (k) {
    case sim::PipeOpKind::kForward: return "forward";
    case sim::PipeOpKind::kBackward: return "backward (input gradients)";
    case sim::PipeOpKind::kWeight: return "backward (weight gradients)";
  }
  return {};
}

QColor TaskColor(sim::TaskKind k) {
  switch (k) {
    case sim::TaskKind::kExposedComm: return QColor(219, 68, 55);
    case sim::TaskKind::kOverlappedComm: return QColor(240, 170, 165);
    case sim::TaskKind::kSend: return QColor(110, 110, 110);
    case sim::TaskKind::kGradSync: return QColor(142, 36, 170);
    case sim::TaskKind::kOptimizer: return QColor(60, 60, 60);
    case sim::TaskKind::kParamGather: return QColor(186, 104, 200);
    case sim::TaskKind::kTiedSync: return QColor(30, 136, 229);
  }
  return Qt::gray;
}

// 1, 2 or 5 x 10^k: a tick step giving about `target` ticks over `span`.
double NiceStep(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace

GanttWidget::GanttWidget(TimelineTableModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setMouseTracking(true);
  setMinimumHeight(200);
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, Qt::white);
  setPalette(pal);
  connect(model_, &QAbstractItemModel::modelReset, this, &GanttWidget::Rebuild);
  Rebuild();
}

void GanttWidget::Rebuild() {
  by_rank_.assign(static_cast<size_t>(std::max<int64_t>(model_->ranks(), 0)), {});
  for (int i = 0; i < model_->rowCount(); ++i) {
    const auto& o = model_->op(i);
    if (o.stage >= 0 && o.stage < static_cast<int64_t>(by_rank_.size()))
      by_rank_[static_cast<size_t>(o.stage)].push_back(i);
  }
  for (auto& rows : by_rank_)
    std::sort(rows.begin(), rows.end(), [this](int a, int b) { return model_->op(a).start_s < model_->op(b).start_s; });
  resetZoom();
}

double GanttWidget::Full() const {
  const sim::DesResult& r = model_->result();
  const double t = std::max(r.step_time_s, r.pipeline_s);
  return t > 0 ? t : 1;
}

void GanttWidget::resetZoom() {
  t0_ = 0;
  t1_ = Full();
  update();
}

void GanttWidget::zoom(double factor, double anchor_s) {
  const double full = Full();
  double span = (t1_ - t0_) / factor;
  span = std::clamp(span, full * 1e-4, full);
  const double frac = (t1_ > t0_) ? (anchor_s - t0_) / (t1_ - t0_) : 0.5;
  t0_ = anchor_s - frac * span;
  t1_ = t0_ + span;
  if (t0_ < 0) {
    t1_ -= t0_;
    t0_ = 0;
  }
  if (t1_ > full) {
    t0_ -= t1_ - full;
    t1_ = full;
  }
  t0_ = std::max(t0_, 0.0);
  update();
}

QRectF GanttWidget::plotRect() const {
  // Rows at most 48 px high: a short pipeline stays a compact chart at the top.
  const double rows = static_cast<double>(std::max<int64_t>(model_->ranks(), 1));
  const double h = std::min<double>(std::max(10, height() - kTop - kBottom), rows * 48.0);
  return QRectF(kLeft, kTop, std::max(10, width() - kLeft - kRight), h);
}
double GanttWidget::xOf(double t) const {
  const QRectF r = plotRect();
  return r.left() + (t - t0_) / (t1_ - t0_) * r.width();
}
double GanttWidget::tOf(double x) const {
  const QRectF r = plotRect();
  return t0_ + (x - r.left()) / r.width() * (t1_ - t0_);
}

int GanttWidget::opAt(QPoint pos) const {
  const QRectF r = plotRect();
  const int64_t ranks = model_->ranks();
  if (ranks <= 0 || !r.contains(pos)) return -1;
  const auto rank = static_cast<size_t>((pos.y() - r.top()) / (r.height() / static_cast<double>(ranks)));
  if (rank >= by_rank_.size()) return -1;
  const double t = tOf(pos.x());
  for (int i : by_rank_[rank]) {
    const auto& o = model_->op(i);
    if (o.start_s <= t && t <= o.end_s) return i;
  }
  return -1;
}

void GanttWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const QRectF r = plotRect();
  const int64_t ranks = model_->ranks();
  if (model_->rowCount() == 0 || ranks <= 0) {
    p.setPen(Qt::darkGray);
    QString msg = "No timeline.";
    if (model_->state() == Evaluation::Pending::kRunning) msg = "Simulating the pipeline on a worker thread...";
    if (model_->state() == Evaluation::Pending::kFailed) msg = "The simulation failed: " + model_->error();
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, msg);
    return;
  }
  const double row_h = r.height() / static_cast<double>(ranks);
  // Rank rows: light stripes, labels on the left.
  QFont small = font();
  small.setPointSizeF(std::max(6.0, std::min(9.0, row_h * 0.45)));
  p.setFont(small);
  const int label_every = std::max<int>(1, static_cast<int>(std::ceil(12.0 / row_h)));
  for (int64_t k = 0; k < ranks; ++k) {
    const QRectF row(r.left(), r.top() + static_cast<double>(k) * row_h, r.width(), row_h);
    p.fillRect(row, k % 2 ? QColor(246, 246, 246) : QColor(252, 252, 252));
    if (k % label_every == 0) {
      p.setPen(Qt::black);
      p.drawText(QRectF(0, row.top(), kLeft - 6, row_h), Qt::AlignRight | Qt::AlignVCenter, QString("rank %1").arg(k));
    }
  }
  // Ops on the upper part of each rank's row; below them a thin line per communication stream
  // (TP/CP/EP collectives, DP gradient sync, pipeline sends), as the simulator placed them.
  p.setClipRect(r);
  const double ops_top = 0.06, ops_h = 0.6, lane_top = 0.69, lane_h = 0.085;
  for (size_t k = 0; k < by_rank_.size(); ++k) {
    const double y = r.top() + static_cast<double>(k) * row_h + row_h * ops_top;
    const double h = row_h * ops_h;
    for (int i : by_rank_[k]) {
      const auto& o = model_->op(i);
      if (o.end_s < t0_ || o.start_s > t1_) continue;
      const double x0 = xOf(o.start_s), x1 = xOf(o.end_s);
      const QRectF box(x0, y, std::max(1.0, x1 - x0), h);
      QColor c = KindColor(o.kind);
      if (o.chunk % 2 == 1) c = c.darker(125);  // the second model chunk (interleaved, DualPipe)
      p.fillRect(box, c);
      if (x1 - x0 > 4) {
        p.setPen(QPen(Qt::white, 1));
        p.drawRect(box);
      }
      if (x1 - x0 > 18 && h > 9) {
        p.setPen(Qt::white);
        p.drawText(box, Qt::AlignCenter, QString::number(o.microbatch));
      }
    }
  }
  for (const sim::TimelineTask& t : model_->result().tasks) {
    if (t.stage < 0 || t.stage >= ranks || t.end_s < t0_ || t.start_s > t1_) continue;
    const double row_y = r.top() + static_cast<double>(t.stage) * row_h;
    const double x0 = xOf(t.start_s), x1 = xOf(t.end_s);
    QRectF box;
    if (t.stream == sim::Stream::kCompute) {
      box = QRectF(x0, row_y + row_h * ops_top, std::max(1.0, x1 - x0), row_h * ops_h);
    } else {
      const int lane = t.stream == sim::Stream::kTpComm ? 0 : t.stream == sim::Stream::kDpComm ? 1 : 2;
      box = QRectF(x0, row_y + row_h * (lane_top + lane * lane_h), std::max(1.0, x1 - x0),
                   std::max(1.0, row_h * lane_h * 0.9));
    }
    p.fillRect(box, TaskColor(t.kind));
  }
  p.setClipping(false);
  // Time axis.
  p.setPen(Qt::black);
  p.drawLine(QPointF(r.left(), r.bottom()), QPointF(r.right(), r.bottom()));
  const double step = NiceStep(t1_ - t0_, 8);
  for (double t = std::ceil(t0_ / step) * step; t <= t1_ + 1e-12; t += step) {
    const double x = xOf(t);
    p.drawLine(QPointF(x, r.bottom()), QPointF(x, r.bottom() + 4));
    p.drawText(QRectF(x - 40, r.bottom() + 5, 80, 14), Qt::AlignHCenter | Qt::AlignTop, QString::number(t, 'g', 4));
  }
  p.drawText(QRectF(r.left(), r.bottom() + 22, r.width(), 16), Qt::AlignHCenter,
             "time within the step (s); wheel: zoom, drag: pan, double-click: reset");
  // Legend.
  double lx = r.left();
  for (auto k : {sim::PipeOpKind::kForward, sim::PipeOpKind::kBackward, sim::PipeOpKind::kWeight}) {
    p.fillRect(QRectF(lx, 8, 14, 14), KindColor(k));
    const QString label = TimelineTableModel::kindName(k) + ": " + KindWord(k);
    p.drawText(QRectF(lx + 18, 6, 260, 18), Qt::AlignLeft | Qt::AlignVCenter, label);
    lx += 30 + p.fontMetrics().horizontalAdvance(label);
  }
  p.drawText(QRectF(lx, 6, r.right() - lx, 18), Qt::AlignLeft | Qt::AlignVCenter,
             "numbers: microbatch; darker: second model chunk; blank: idle (bubble)");
  // The streams under each row.
  lx = r.left();
  const std::pair<sim::TaskKind, const char*> tasks[] = {{sim::TaskKind::kExposedComm, "exposed collective"},
                                                         {sim::TaskKind::kOverlappedComm, "overlapped collective"},
                                                         {sim::TaskKind::kSend, "pipeline send"},
                                                         {sim::TaskKind::kGradSync, "DP gradient sync"},
                                                         {sim::TaskKind::kOptimizer, "optimizer"},
                                                         {sim::TaskKind::kParamGather, "param all-gather"},
                                                         {sim::TaskKind::kTiedSync, "tied embedding all-reduce"}};
  for (const auto& [kind, word] : tasks) {
    p.fillRect(QRectF(lx, r.bottom() + 46, 10, 8), TaskColor(kind));
    p.drawText(QRectF(lx + 13, r.bottom() + 42, 200, 16), Qt::AlignLeft | Qt::AlignVCenter, word);
    lx += 24 + p.fontMetrics().horizontalAdvance(word);
  }
}

void GanttWidget::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  zoom(std::pow(1.25, steps), tOf(event->position().x()));
  event->accept();
}

void GanttWidget::mousePressEvent(QMouseEvent* event) {
  drag_x_ = static_cast<int>(event->position().x());
  drag_t0_ = t0_;
  drag_t1_ = t1_;
}

void GanttWidget::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton) || drag_x_ < 0) return;
  const double full = Full();
  const double dt = (event->position().x() - drag_x_) / plotRect().width() * (drag_t1_ - drag_t0_);
  const double span = drag_t1_ - drag_t0_;
  t0_ = std::clamp(drag_t0_ - dt, 0.0, std::max(0.0, full - span));
  t1_ = t0_ + span;
  update();
}

void GanttWidget::mouseDoubleClickEvent(QMouseEvent*) { resetZoom(); }

bool GanttWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int i = opAt(help->pos());
    if (i < 0) {
      QToolTip::hideText();
      event->ignore();
      return true;
    }
    const auto& o = model_->op(i);
    QToolTip::showText(help->globalPos(),
                       QString("rank %1, microbatch %2, chunk %3\n%4\n%5 s to %6 s (%7)")
                           .arg(o.stage)
                           .arg(o.microbatch)
                           .arg(o.chunk)
                           .arg(KindWord(o.kind))
                           .arg(o.start_s, 0, 'f', 4)
                           .arg(o.end_s, 0, 'f', 4)
                           .arg(Duration(o.end_s - o.start_s)),
                       this);
    return true;
  }
  return QWidget::event(event);
}

TimelineView::TimelineView(ScenarioModel* scenario, TimelineTableModel* model, QWidget* parent)
    : View(scenario, "timeline", "Pipeline timeline of one step (discrete-event simulation)", true, parent),
      model_(model) {
  auto* body = new QWidget();
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout();
  summary_ = new QLabel();
  summary_->setWordWrap(true);
  bar->addWidget(summary_, 1);
  auto* in = new QPushButton("Zoom in");
  auto* out = new QPushButton("Zoom out");
  auto* reset = new QPushButton("Whole step");
  bar->addWidget(in);
  bar->addWidget(out);
  bar->addWidget(reset);
  layout->addLayout(bar);
  gantt_ = new GanttWidget(model_);
  layout->addWidget(gantt_, 1);
  setBody(body);
  connect(in, &QPushButton::clicked, this,
          [this] { gantt_->zoom(2, (gantt_->visibleStart() + gantt_->visibleEnd()) / 2); });
  connect(out, &QPushButton::clicked, this,
          [this] { gantt_->zoom(0.5, (gantt_->visibleStart() + gantt_->visibleEnd()) / 2); });
  connect(reset, &QPushButton::clicked, gantt_, &GanttWidget::resetZoom);
  connect(model_, &QAbstractItemModel::modelReset, this, &TimelineView::Refresh);
  Refresh();
}

void TimelineView::Refresh() {
  const auto& r = model_->result();
  const auto& p = scenario_->plan();
  if (model_->rowCount() == 0) {
    summary_->setText(model_->state() == Evaluation::Pending::kRunning ? "simulating..." : "");
    return;
  }
  const double analytic = scenario_->evaluation().step.time_s;
  summary_->setText(QString("<b>%1</b>, %2 pipeline ranks x %3 chunk(s), %4 microbatches, %5 ops: pipeline %6 + "
                            "step-level work (exposed DP sync, optimizer) %7 = step %8; bubble %9 of the ranks' "
                            "time. Analytic model: %10.")
                        .arg(core::Name(p.schedule))
                        .arg(p.pp)
                        .arg(p.vpp)
                        .arg(p.Microbatches())
                        .arg(model_->rowCount())
                        .arg(Duration(r.pipeline_s), Duration(r.step_time_s - r.pipeline_s), Duration(r.step_time_s),
                             Percent(r.bubble_fraction), Duration(analytic)));
}

}  // namespace meshplan::gui
