// meshplan-gui's window: the inputs panel on the left, the result views in tabs (Memory, Step,
// Timeline, Search, Reliability, Cost, Compare, Explain; History: the result store), and File /
// Edit / Plan menus: open and save plan JSON (core::ParsePlanFileJson / PlanFileToJson), load a
// Hugging Face config.json, export the current view's chart as PNG (and SVG when Qt SVG is built
// in), copy the equivalent `meshplan report` command, pin the plan for comparison. Owns the models.
// Thread-safety: GUI thread only. Slots never throw.
#ifndef MESHPLAN_GUI_MAIN_WINDOW_H_
#define MESHPLAN_GUI_MAIN_WINDOW_H_

#include <QImage>
#include <QLabel>
#include <QMainWindow>
#include <QTabWidget>
#include <vector>

#include "gui/models/compare_model.h"
#include "gui/models/cost_table_model.h"
#include "gui/models/explain_model.h"
#include "gui/models/history_model.h"
#include "gui/models/memory_table_model.h"
#include "gui/models/ops_table_model.h"
#include "gui/models/reliability_table_model.h"
#include "gui/models/scenario_model.h"
#include "gui/models/search_grid_model.h"
#include "gui/models/step_table_model.h"
#include "gui/models/timeline_table_model.h"
#include "gui/views/inputs_panel.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class MemoryView;
class SearchView;
class CompareView;
class HistoryView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  // Stops background work and deletes the views before the models they read.
  ~MainWindow() override;

  ScenarioModel* scenario() { return &scenario_; }
  InputsPanel* inputs() { return inputs_; }
  MemoryTableModel* memoryModel() { return &memory_; }
  StepTableModel* stepModel() { return &step_; }
  OpsTableModel* opsModel() { return &ops_; }
  CostTableModel* costModel() { return &cost_; }
  ReliabilityTableModel* reliabilityModel() { return &reliability_; }
  TimelineTableModel* timelineModel() { return &timeline_; }
  SearchGridModel* searchModel() { return &search_; }
  CompareModel* compareModel() { return &compare_; }
  ExplainModel* explainModel() { return &explain_; }
  HistoryModel* historyModel() { return &history_; }
  ProfilesModel* profilesModel() { return &profiles_; }
  MemoryView* memoryView() { return memory_view_; }
  SearchView* searchView() { return search_view_; }
  CompareView* compareView() { return compare_view_; }
  HistoryView* historyView() { return history_view_; }

  // The view whose id() is `id` ("memory", "step", ...), or nullptr; the ids in tab order.
  View* view(const QString& id) const;
  static QStringList viewIds();
  void showView(const QString& id);
  // Saves the current view's chart: PNG, or SVG when built with Qt SVG. False with `error`.
  bool exportChart(View* v, const QString& path, QString* error);
  // Waits for every background job that feeds the views (screenshots and tests).
  void waitForBackground();
  // Renders view `id` alone at `size` (what --screenshot saves), after its background work. So
  // that the picture shows something: the search view runs its TP x PP search if it has not, and
  // a compare view with nothing pinned pins the plan and two variants (TP halved, PP doubled,
  // where they validate; the plan is restored after). The view goes back to its tab.
  // A null image for an unknown id.
  QImage renderView(const QString& id, QSize size);

 private:
  void OpenPlan();
  void SavePlan();
  void ExportCurrent();
  void CopyCommand();
  void UpdateStatus();

  ScenarioModel scenario_;
  MemoryTableModel memory_;
  StepTableModel step_;
  OpsTableModel ops_;
  CostTableModel cost_;
  ReliabilityTableModel reliability_;
  TimelineTableModel timeline_;
  SearchGridModel search_;
  CompareModel compare_;
  ExplainModel explain_;
  HistoryModel history_;
  ProfilesModel profiles_;
  InputsPanel* inputs_;
  QTabWidget* tabs_;
  QWidget* dock_;
  std::vector<View*> views_;
  MemoryView* memory_view_ = nullptr;
  SearchView* search_view_ = nullptr;
  CompareView* compare_view_ = nullptr;
  HistoryView* history_view_ = nullptr;
  QLabel* status_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MAIN_WINDOW_H_
