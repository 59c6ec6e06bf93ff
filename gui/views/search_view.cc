#include "gui/views/search_view.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

constexpr int kLeft = 90, kTop = 40, kRight = 160, kBottom = 50;

// Light yellow (slow) to dark green (fast): a sequential scale readable in grey print too.
QColor Heat(double f) {
  f = std::clamp(f, 0.0, 1.0);
  const QColor a(255, 255, 204), b(120, 198, 121), c(0, 90, 50);
  auto mix = [](QColor x, QColor y, double t) {
    return QColor(static_cast<int>(x.red() + (y.red() - x.red()) * t),
                  static_cast<int>(x.green() + (y.green() - x.green()) * t),
                  static_cast<int>(x.blue() + (y.blue() - x.blue()) * t));
  };
  return f < 0.5 ? mix(a, b, f * 2) : mix(b, c, (f - 0.5) * 2);
}

}  // namespace

HeatMapWidget::HeatMapWidget(SearchGridModel* model, ScenarioModel* scenario, QWidget* parent)
    : QWidget(parent), model_(model), scenario_(scenario) {
  setMouseTracking(true);
  setMinimumSize(300, 200);
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, Qt::white);
  setPalette(pal);
  auto repaint = [this] { update(); };
  connect(model_, &QAbstractItemModel::modelReset, this, repaint);
  connect(model_, &QAbstractItemModel::dataChanged, this, repaint);
  connect(scenario_, &ScenarioModel::scenarioChanged, this, repaint);
}

QRectF HeatMapWidget::gridRect() const {
  return QRectF(kLeft, kTop, std::max(10, width() - kLeft - kRight), std::max(10, height() - kTop - kBottom));
}

QRectF HeatMapWidget::cellRect(int row, int col) const {
  const QRectF g = gridRect();
  const double w = g.width() / std::max(1, model_->columnCount());
  const double h = g.height() / std::max(1, model_->rowCount());
  return QRectF(g.left() + col * w, g.top() + row * h, w, h);
}

std::pair<int, int> HeatMapWidget::cellAt(QPoint pos) const {
  const QRectF g = gridRect();
  if (!g.contains(pos) || model_->rowCount() == 0 || model_->columnCount() == 0) return {-1, -1};
  const int col = static_cast<int>((pos.x() - g.left()) / (g.width() / model_->columnCount()));
  const int row = static_cast<int>((pos.y() - g.top()) / (g.height() / model_->rowCount()));
  if (row < 0 || col < 0 || row >= model_->rowCount() || col >= model_->columnCount()) return {-1, -1};
  return {row, col};
}

void HeatMapWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  p.setRenderHint(QPainter::Antialiasing, false);
  if (model_->rowCount() == 0) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               "Choose two axes and press Run: every cell gets the best plan with those two values.");
    return;
  }
  const double best = model_->maxTokensPerSPerGpu();
  const double worst = model_->minTokensPerSPerGpu();
  const core::PlanSpec& current = scenario_->plan();
  QFont bold = font();
  bold.setBold(true);
  for (int r = 0; r < model_->rowCount(); ++r) {
    for (int c = 0; c < model_->columnCount(); ++c) {
      const QRectF box = cellRect(r, c).adjusted(1, 1, -1, -1);
      const QModelIndex idx = model_->index(r, c);
      const auto state =
          static_cast<SearchGridModel::CellState>(model_->data(idx, SearchGridModel::kStateRole).toInt());
      QColor fill(235, 235, 235);
      QColor text = Qt::darkGray;
      switch (state) {
        case SearchGridModel::CellState::kPending: fill = QColor(245, 245, 245); break;
        case SearchGridModel::CellState::kFits: {
          // Coloured from the slowest fitting cell (light) to the fastest (dark).
          const double v = model_->data(idx, SearchGridModel::kTokensPerSPerGpuRole).toDouble();
          const double f = best > worst ? (v - worst) / (best - worst) : 1.0;
          fill = Heat(f);
          text = f > 0.6 ? Qt::white : Qt::black;
          break;
        }
        case SearchGridModel::CellState::kOutOfMemory:
          fill = QColor(250, 210, 210);
          text = QColor(170, 0, 0);
          break;
        case SearchGridModel::CellState::kNoPlan: fill = QColor(215, 215, 215); break;
      }
      p.fillRect(box, fill);
      if (state == SearchGridModel::CellState::kOutOfMemory)
        p.fillRect(box, QBrush(QColor(200, 0, 0, 90), Qt::BDiagPattern));
      p.setPen(text);
      p.setFont(bold);
      QString label = model_->data(idx).toString();
      if (state == SearchGridModel::CellState::kFits) label += "\ntok/s/GPU";
      p.drawText(box, Qt::AlignCenter, label);
    }
  }
  // The current plan's cell.
  const auto& xs = model_->xValues();
  const auto& ys = model_->yValues();
  const auto cx = std::find(xs.begin(), xs.end(), SearchGridModel::PlanValue(current, model_->xAxis()));
  const auto cy = std::find(ys.begin(), ys.end(), SearchGridModel::PlanValue(current, model_->yAxis()));
  if (cx != xs.end() && cy != ys.end()) {
    p.setPen(QPen(Qt::black, 3));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cellRect(static_cast<int>(cy - ys.begin()), static_cast<int>(cx - xs.begin())).adjusted(2, 2, -2, -2));
  }
  // Headers.
  p.setPen(Qt::black);
  p.setFont(font());
  for (int c = 0; c < model_->columnCount(); ++c) {
    const QRectF cr = cellRect(0, c);
    p.drawText(QRectF(cr.left(), kTop - 22, cr.width(), 20), Qt::AlignCenter,
               model_->headerData(c, Qt::Horizontal).toString());
  }
  for (int r = 0; r < model_->rowCount(); ++r) {
    const QRectF cr = cellRect(r, 0);
    p.drawText(QRectF(0, cr.top(), kLeft - 8, cr.height()), Qt::AlignRight | Qt::AlignVCenter,
               model_->headerData(r, Qt::Vertical).toString());
  }
  // Legend: the colour scale and the other states.
  const QRectF g = gridRect();
  const double lx = g.right() + 20;
  const QRectF scale(lx, g.top(), 18, std::min(160.0, g.height() * 0.6));
  for (int i = 0; i < static_cast<int>(scale.height()); ++i)
    p.fillRect(QRectF(scale.left(), scale.bottom() - i - 1, scale.width(), 1), Heat(i / scale.height()));
  p.drawRect(scale);
  p.drawText(QRectF(scale.right() + 4, scale.top() - 2, 100, 14), Qt::AlignLeft,
             best > 0 ? Count(best) + " (best)" : QString("fastest"));
  p.drawText(QRectF(scale.right() + 4, scale.bottom() - 12, 100, 14), Qt::AlignLeft,
             worst > 0 ? Count(worst) + " (slowest)" : QString("slowest"));
  p.drawText(QRectF(scale.left() - 4, scale.top() - 34, 150, 30), Qt::AlignLeft | Qt::TextWordWrap,
             "tokens/s per GPU of the cells that fit");
  double ly = scale.bottom() + 14;
  auto key = [&](QColor c, bool hatch, const QString& t) {
    const QRectF k(lx, ly, 18, 14);
    p.fillRect(k, c);
    if (hatch) p.fillRect(k, QBrush(QColor(200, 0, 0, 90), Qt::BDiagPattern));
    p.drawRect(k);
    p.drawText(QRectF(lx + 24, ly - 1, 120, 16), Qt::AlignLeft | Qt::AlignVCenter, t);
    ly += 20;
  };
  key(QColor(250, 210, 210), true, "out of memory");
  key(QColor(215, 215, 215), false, "no valid plan");
  p.setPen(QPen(Qt::black, 3));
  p.drawRect(QRectF(lx, ly, 18, 14));
  p.setPen(Qt::black);
  p.drawText(QRectF(lx + 24, ly - 1, 90, 16), Qt::AlignLeft | Qt::AlignVCenter, "current plan");
  p.drawText(QRectF(g.left(), g.bottom() + 8, g.width(), 36), Qt::AlignHCenter | Qt::TextWordWrap,
             QString("%1 (columns) x %2 (rows); cell text: best tokens/s per GPU; hover for the plan, click to load it")
                 .arg(Name(model_->xAxis()), Name(model_->yAxis())));
}

void HeatMapWidget::mouseReleaseEvent(QMouseEvent* event) {
  const auto [row, col] = cellAt(event->position().toPoint());
  if (row >= 0) emit cellClicked(row, col);
}

bool HeatMapWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const auto [row, col] = cellAt(help->pos());
    if (row < 0) {
      QToolTip::hideText();
      event->ignore();
    } else {
      QToolTip::showText(help->globalPos(), model_->data(model_->index(row, col), Qt::ToolTipRole).toString(), this);
    }
    return true;
  }
  return QWidget::event(event);
}

SearchView::SearchView(ScenarioModel* scenario, SearchGridModel* model, QWidget* parent)
    : View(scenario, "search", "Plan search: the best plan for every pair of values", false, parent), model_(model) {
  auto* body = new QWidget();
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout();
  x_ = new QComboBox();
  y_ = new QComboBox();
  for (auto a : {SearchAxis::kTp, SearchAxis::kPp, SearchAxis::kCp, SearchAxis::kEp, SearchAxis::kVpp,
                 SearchAxis::kZero, SearchAxis::kMbs}) {
    x_->addItem(Name(a), static_cast<int>(a));
    y_->addItem(Name(a), static_cast<int>(a));
  }
  x_->setCurrentIndex(0);
  y_->setCurrentIndex(1);
  run_ = new QPushButton("Run search");
  cancel_ = new QPushButton("Cancel");
  cancel_->setEnabled(false);
  progress_ = new QProgressBar();
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(220);
  bar->addWidget(new QLabel("columns:"));
  bar->addWidget(x_);
  bar->addWidget(new QLabel("rows:"));
  bar->addWidget(y_);
  bar->addWidget(run_);
  bar->addWidget(cancel_);
  bar->addWidget(progress_);
  bar->addStretch(1);
  layout->addLayout(bar);
  status_ = new QLabel();
  status_->setWordWrap(true);
  layout->addWidget(status_);
  map_ = new HeatMapWidget(model_, scenario_);
  layout->addWidget(map_, 1);
  setBody(body);
  connect(run_, &QPushButton::clicked, this, &SearchView::run);
  connect(cancel_, &QPushButton::clicked, model_, &SearchGridModel::cancel);
  connect(map_, &HeatMapWidget::cellClicked, this, &SearchView::LoadCell);
  Worker* w = model_->worker();
  connect(w, &Worker::progressChanged, this, [this](double f) { progress_->setValue(static_cast<int>(100 * f)); });
  connect(w, &Worker::started, this, &SearchView::UpdateStatus);
  connect(w, &Worker::finished, this, &SearchView::UpdateStatus);
  connect(model_, &SearchGridModel::staleChanged, this, &SearchView::UpdateStatus);
  UpdateStatus();
}

void SearchView::run() {
  const auto x = static_cast<SearchAxis>(x_->currentData().toInt());
  const auto y = static_cast<SearchAxis>(y_->currentData().toInt());
  if (x == y) {
    status_->setText("<span style='color:#b00000'>Choose two different axes.</span>");
    return;
  }
  model_->run(x, y);
}

void SearchView::LoadCell(int row, int col) {
  if (auto s = model_->cellScenario(row, col)) scenario_->setScenario(*s);
}

void SearchView::UpdateStatus() {
  const bool busy = model_->worker()->busy();
  run_->setEnabled(!busy);
  cancel_->setEnabled(busy);
  progress_->setVisible(busy);
  const auto& p = scenario_->plan();
  QString t = QString("Searches %1 GPUs, global batch %2 x seq %3, %4; ranks by tokens/s. ")
                  .arg(p.gpus)
                  .arg(p.global_batch)
                  .arg(p.seq_len)
                  .arg(core::Name(p.precision));
  if (busy) t += model_->worker()->label() + " on a worker thread...";
  else if (model_->stale())
    t += "<span style='color:#b00000'>The inputs changed since this map was computed: run it again.</span>";
  status_->setText(t);
}

}  // namespace meshplan::gui
