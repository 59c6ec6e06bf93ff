#include "gui/main_window.h"

#include <QApplication>
#include <QClipboard>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>

#if MESHPLAN_GUI_HAVE_SVG
#include <QPainter>
#include <QSvgGenerator>
#endif

#include "gui/models/format.h"
#include "gui/views/compare_view.h"
#include "gui/views/cost_view.h"
#include "gui/views/explain_view.h"
#include "gui/views/history_view.h"
#include "gui/views/memory_view.h"
#include "gui/views/reliability_view.h"
#include "gui/views/search_view.h"
#include "gui/views/step_view.h"
#include "gui/views/timeline_view.h"

namespace meshplan::gui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      memory_(&scenario_),
      step_(&scenario_),
      ops_(&scenario_),
      cost_(&scenario_),
      reliability_(&scenario_),
      timeline_(&scenario_),
      search_(&scenario_),
      explain_(&scenario_) {
  setWindowTitle("meshplan: what-if explorer");
  inputs_ = new InputsPanel(&scenario_);
  auto* dock = new QDockWidget("Inputs", this);
  dock->setObjectName("inputs_dock");
  dock->setWidget(inputs_);
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  dock_ = dock;

  tabs_ = new QTabWidget();
  memory_view_ = new MemoryView(&scenario_, &memory_);
  search_view_ = new SearchView(&scenario_, &search_);
  compare_view_ = new CompareView(&scenario_, &compare_);
  history_view_ = new HistoryView(&scenario_, &history_, &profiles_);
  views_ = {memory_view_,  new StepView(&scenario_, &step_, &ops_),        new TimelineView(&scenario_, &timeline_),
            search_view_,  new ReliabilityView(&scenario_, &reliability_), new CostView(&scenario_, &cost_),
            compare_view_, new ExplainView(&scenario_, &explain_),         history_view_};
  const QStringList names = {"Memory", "Step",    "Timeline", "Search", "Reliability",
                             "Cost",   "Compare", "Explain",  "History"};
  for (size_t i = 0; i < views_.size(); ++i) tabs_->addTab(views_[i], names[static_cast<int>(i)]);
  setCentralWidget(tabs_);

  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open plan...", QKeySequence::Open, this, &MainWindow::OpenPlan);
  file->addAction("&Save plan...", QKeySequence::Save, this, &MainWindow::SavePlan);
  file->addAction("Load HF &config.json...", inputs_, &InputsPanel::loadModelFileDialog);
  file->addSeparator();
  file->addAction(
#if MESHPLAN_GUI_HAVE_SVG
      "&Export chart (PNG or SVG)...",
#else
      "&Export chart as PNG...",
#endif
      this, &MainWindow::ExportCurrent);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  QMenu* edit = menuBar()->addMenu("&Edit");
  edit->addAction("Copy as &command", QKeySequence("Ctrl+Shift+C"), this, &MainWindow::CopyCommand);
  QMenu* plan = menuBar()->addMenu("&Plan");
  plan->addAction("&Pin for comparison", QKeySequence("Ctrl+P"), compare_view_, &CompareView::pinCurrent);
  plan->addAction("&Run search", search_view_, &SearchView::run);

  status_ = new QLabel();
  statusBar()->addWidget(status_, 1);
  connect(&scenario_, &ScenarioModel::evaluated, this, &MainWindow::UpdateStatus);
  UpdateStatus();
  resize(1500, 950);
}

MainWindow::~MainWindow() {
  search_.cancel();
  // Widgets are children (deleted by QWidget's destructor, after the members): delete the views
  // and the panel now, while the models they point at still exist.
  delete tabs_;
  delete dock_;
}

QStringList MainWindow::viewIds() {
  return {"memory", "step", "timeline", "search", "reliability", "cost", "compare", "explain", "history"};
}

View* MainWindow::view(const QString& id) const {
  for (View* v : views_)
    if (v->id() == id) return v;
  return nullptr;
}

void MainWindow::showView(const QString& id) {
  if (View* v = view(id)) tabs_->setCurrentWidget(v);
}

void MainWindow::waitForBackground() {
  scenario_.waitForBackground();
  explain_.waitForIdle();
  search_.worker()->WaitForIdle();
}

QImage MainWindow::renderView(const QString& id, QSize size) {
  View* v = view(id);
  if (!v) return {};
  if (v == search_view_ && !search_.hasRun()) search_view_->run();
  if (v == compare_view_ && compare_.columnCount() == 0) {
    const core::Scenario original = scenario_.scenario();
    compare_view_->pinCurrent();
    const std::pair<Degree, int64_t> variants[] = {{Degree::kTp, original.plan.tp / 2},
                                                   {Degree::kPp, original.plan.pp * 2}};
    for (const auto& [d, value] : variants) {
      if (value < 1) continue;
      scenario_.setDegree(d, value);
      if (scenario_.evaluation().valid) compare_view_->pinCurrent();
      scenario_.setScenario(original);
    }
  }
  waitForBackground();
  const int index = tabs_->indexOf(v);
  const QString label = tabs_->tabText(index);
  tabs_->removeTab(index);
  v->setParent(nullptr);
  // The size asked for, even below the layout's minimum (a small picture clips, it does not grow).
  const QSize min = v->minimumSize();
  v->setMinimumSize(1, 1);
  v->resize(size);
  v->show();
  QApplication::processEvents();
  waitForBackground();
  QApplication::processEvents();
  const QImage image = v->grab().toImage();
  v->hide();
  v->setMinimumSize(min);
  tabs_->insertTab(index, v, label);
  return image;
}

void MainWindow::UpdateStatus() {
  const Evaluation& e = scenario_.evaluation();
  if (!e.valid) {
    status_->setText("<span style='color:#b00000'>invalid plan: " + e.errors.value(0).toHtmlEscaped() +
                     (e.errors.size() > 1 ? QString(" (+%1 more)").arg(e.errors.size() - 1) : QString()) + "</span>");
    return;
  }
  const auto& m = e.memory;
  status_->setText(
      QString("%1 %2 of %3 GB per GPU | step %4 | %5 tokens/s | MFU %6 | %7 days | %8 | evaluated in %9 ms")
          .arg(m.fits                                  ? "fits:"
               : m.verdict == core::FitVerdict::kTight ? "TIGHT (fits only without the allocator's reserve):"
                                                       : "DOES NOT FIT:")
          .arg(Gb(m.per_gpu_bytes), Gb(m.capacity_bytes), Duration(e.step.time_s), Count(e.step.tokens_per_s),
               Percent(e.step.mfu), QString::number(e.train.days, 'f', 1), Dollars(e.train.cost_usd))
          .arg(e.eval_ms, 0, 'f', 2));
}

void MainWindow::OpenPlan() {
  const QString path = QFileDialog::getOpenFileName(this, "Open plan", {}, "Plan JSON (*.json);;All files (*)");
  if (path.isEmpty()) return;
  QString err;
  if (!scenario_.openPlanFile(path, &err)) QMessageBox::warning(this, "Open plan", err);
}

void MainWindow::SavePlan() {
  const QString path = QFileDialog::getSaveFileName(this, "Save plan", "plan.json", "Plan JSON (*.json)");
  if (path.isEmpty()) return;
  QString err;
  if (!scenario_.savePlanFile(path, &err)) QMessageBox::warning(this, "Save plan", err);
  else statusBar()->showMessage("saved " + path + " (meshplan report --plan " + path + ")", 5000);
}

bool MainWindow::exportChart(View* v, const QString& path, QString* error) {
  if (!v) {
    if (error) *error = "no view";
    return false;
  }
  QWidget* w = v->chartWidget();
  if (path.endsWith(".svg", Qt::CaseInsensitive)) {
#if MESHPLAN_GUI_HAVE_SVG
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(w->size());
    svg.setViewBox(QRect(QPoint(0, 0), w->size()));
    svg.setTitle("meshplan " + v->id());
    QPainter painter(&svg);
    w->render(&painter);
    painter.end();
    return true;
#else
    if (error) *error = "SVG export needs Qt SVG (Debian: qt6-svg-dev), which this build did not find; save as .png";
    return false;
#endif
  }
  if (!w->grab().save(path, "PNG")) {
    if (error) *error = "cannot write " + path;
    return false;
  }
  return true;
}

void MainWindow::ExportCurrent() {
  auto* v = qobject_cast<View*>(tabs_->currentWidget());
  if (!v) return;
#if MESHPLAN_GUI_HAVE_SVG
  const QString filter = "PNG image (*.png);;SVG drawing (*.svg)";
#else
  const QString filter = "PNG image (*.png)";
#endif
  QString path = QFileDialog::getSaveFileName(this, "Export chart", v->id() + ".png", filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += ".png";
  QString err;
  if (!exportChart(v, path, &err)) QMessageBox::warning(this, "Export chart", err);
  else statusBar()->showMessage("wrote " + path, 5000);
}

void MainWindow::CopyCommand() {
  const QString cmd = scenario_.commandLine();
  QApplication::clipboard()->setText(cmd);
  statusBar()->showMessage("copied: " + cmd.section('\n', 0, 0), 8000);
}

}  // namespace meshplan::gui
