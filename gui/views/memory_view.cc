#include "gui/views/memory_view.h"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCursor>
#include <QHeaderView>
#include <QLineSeries>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>

#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

QColor TermColor(MemoryTableModel::Column c) {
  switch (c) {
    case MemoryTableModel::kWeights: return QColor(31, 119, 180);
    case MemoryTableModel::kGrads: return QColor(255, 127, 14);
    case MemoryTableModel::kMasterWeights: return QColor(44, 160, 44);
    case MemoryTableModel::kMoments: return QColor(152, 223, 138);
    case MemoryTableModel::kActivations: return QColor(148, 103, 189);
    case MemoryTableModel::kOverheads: return QColor(127, 127, 127);
    default: return QColor(0, 0, 0);
  }
}

}  // namespace

std::vector<MemoryTableModel::Column> MemoryView::stackedColumns() {
  return {MemoryTableModel::kWeights, MemoryTableModel::kGrads,       MemoryTableModel::kMasterWeights,
          MemoryTableModel::kMoments, MemoryTableModel::kActivations, MemoryTableModel::kOverheads};
}

MemoryView::MemoryView(ScenarioModel* scenario, MemoryTableModel* model, QWidget* parent)
    : View(scenario, "memory", "Memory per GPU, by pipeline stage", true, parent), model_(model) {
  chart_ = new QChart();
  chart_->legend()->setAlignment(Qt::AlignRight);
  chart_view_ = MakeChartView(chart_, /*legend=*/true);
  chart_view_->setMinimumHeight(300);
  table_ = new QTableView();
  table_->setModel(model_);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setAlternatingRowColors(true);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(chart_view_);
  split->addWidget(table_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 1);
  split->setSizes({560, 220});
  setBody(split);
  connect(model_, &QAbstractItemModel::modelReset, this, &MemoryView::Rebuild);
  Rebuild();
}

int MemoryView::barCount() const { return bars_.empty() ? 0 : static_cast<int>(bars_.front().size()); }

std::vector<double> MemoryView::barValues(int row) const {
  std::vector<double> out;
  for (const auto& set : bars_)
    out.push_back(row >= 0 && row < static_cast<int>(set.size()) ? set[static_cast<size_t>(row)] : 0);
  return out;
}

void MemoryView::Rebuild() {
  chart_->removeAllSeries();
  for (QAbstractAxis* a : chart_->axes()) {
    chart_->removeAxis(a);
    delete a;
  }
  bars_.clear();
  hbm_line_gb_ = 0;
  const int stages = model_->rowCount();
  if (stages == 0) {
    chart_->setTitle({});
    return;
  }
  const double cap = GbValue(model_->capacityBytes());
  hbm_line_gb_ = cap;
  double max_total = 0;
  QStringList categories;
  int over = 0;
  int worst = 0;
  for (int r = 0; r < stages; ++r) {
    const double total = GbValue(model_->bytes(r, MemoryTableModel::kTotal));
    if (total > max_total) {
      max_total = total;
      worst = r;
    }
    const bool is_over = model_->overCapacity(r);
    over += is_over ? 1 : 0;
    // Few stages: "stage 0 47.29 GB"; many: the rank alone, so the labels stay readable.
    if (stages <= 8)
      categories << QString("stage %1\n%2 GB%3")
                        .arg(r)
                        .arg(Gb(model_->bytes(r, MemoryTableModel::kTotal)))
                        .arg(is_over ? "\nOVER" : "");
    else categories << QString("%1%2").arg(r).arg(is_over ? "!" : "");
  }
  // The value axis first: its rounded top is where the over-capacity band ends.
  auto* y = new QValueAxis();
  y->setRange(0, std::max(max_total, cap) * 1.08);
  y->applyNiceNumbers();
  y->setTitleText("GB per GPU (1e9 bytes)");
  y->setLabelFormat("%.0f");
  const double top = y->max();

  // The band above HBM: anything reaching into it does not fit.
  auto* upper = new QLineSeries();
  auto* lower = new QLineSeries();
  upper->append(-0.5, top);
  upper->append(stages - 0.5, top);
  lower->append(-0.5, cap);
  lower->append(stages - 0.5, cap);
  auto* zone = new QAreaSeries(upper, lower);
  upper->setParent(zone);  // QAreaSeries does not own its boundary lines
  lower->setParent(zone);
  zone->setName("over capacity");
  zone->setColor(QColor(255, 0, 0, 28));
  zone->setBorderColor(QColor(255, 0, 0, 0));
  chart_->addSeries(zone);

  auto* series = new QStackedBarSeries();
  series->setBarWidth(stages > 24 ? 0.9 : 0.6);
  for (auto c : stackedColumns()) {
    auto* set = new QBarSet(MemoryTableModel::termName(c));
    set->setColor(TermColor(c));
    set->setBorderColor(TermColor(c).darker(130));
    std::vector<double> values;
    for (int r = 0; r < stages; ++r) {
      values.push_back(GbValue(model_->bytes(r, c)));
      set->append(values.back());
    }
    bars_.push_back(values);
    connect(set, &QBarSet::hovered, this, [this, c](bool status, int index) {
      if (status) QToolTip::showText(QCursor::pos(), model_->termTooltip(index, c));
      else QToolTip::hideText();
    });
    series->append(set);
  }
  chart_->addSeries(series);

  auto* hbm = new QLineSeries();
  hbm->setName(QString("HBM %1 GB").arg(Gb(model_->capacityBytes())));
  hbm->append(-0.5, cap);
  hbm->append(stages - 0.5, cap);
  QPen pen(QColor(200, 0, 0));
  pen.setWidth(3);
  pen.setStyle(Qt::DashLine);
  hbm->setPen(pen);
  chart_->addSeries(hbm);

  auto* x = new QBarCategoryAxis();
  x->append(categories);
  x->setTitleText(stages <= 8 ? "pipeline stage (rank), total per GPU"
                              : "pipeline stage (rank); ! marks a stage over HBM; totals in the table");
  chart_->addAxis(x, Qt::AlignBottom);
  chart_->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart_->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }

  const int64_t worst_total = model_->bytes(worst, MemoryTableModel::kTotal);
  QFont f = chart_->titleFont();
  f.setPointSize(12);
  f.setBold(true);
  chart_->setTitleFont(f);
  if (over == 0) {
    chart_->setTitleBrush(QColor(0, 110, 0));
    chart_->setTitle(QString("Fits: worst stage %1 uses %2 of %3 GB (%4%), %5 GB headroom")
                         .arg(worst)
                         .arg(Gb(worst_total), Gb(model_->capacityBytes()))
                         .arg(QString::number(100.0 * GbValue(worst_total) / cap, 'f', 0))
                         .arg(Gb(model_->capacityBytes() - worst_total)));
  } else if (model_->verdict() == core::FitVerdict::kTight) {
    chart_->setTitleBrush(QColor(190, 110, 0));
    chart_->setTitle(QString("TIGHT: stage %1 needs %2 of %3 GB with the allocator's reserve, %4 GB without it")
                         .arg(worst)
                         .arg(Gb(worst_total), Gb(model_->capacityBytes()), Gb(model_->leastBytes())));
  } else {
    chart_->setTitleBrush(QColor(200, 0, 0));
    chart_->setTitle(QString("DOES NOT FIT: %1 of %2 stages over HBM; stage %3 needs %4 GB of %5 GB (%6x)")
                         .arg(over)
                         .arg(stages)
                         .arg(worst)
                         .arg(Gb(worst_total), Gb(model_->capacityBytes()))
                         .arg(QString::number(GbValue(worst_total) / cap, 'f', 2)));
  }
}

}  // namespace meshplan::gui
