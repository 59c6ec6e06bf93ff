// The plan search as a heat map over two chosen axes (TP x PP by default): each cell is the best
// plan with those two values (every other axis searched by sim::SearchPlans), coloured by its
// throughput relative to the best cell; out-of-memory cells are red and hatched, cells with no
// valid plan grey. The search runs on a worker thread with progress and Cancel; cells appear as
// they finish. Clicking a cell loads its plan into the inputs (an OOM cell loads its lightest
// variant, to show where the memory goes). The current plan's cell is outlined.
#ifndef MESHPLAN_GUI_VIEWS_SEARCH_VIEW_H_
#define MESHPLAN_GUI_VIEWS_SEARCH_VIEW_H_

#include <QComboBox>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QWidget>

#include "gui/models/search_grid_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class HeatMapWidget : public QWidget {
  Q_OBJECT

 public:
  HeatMapWidget(SearchGridModel* model, ScenarioModel* scenario, QWidget* parent = nullptr);
  // The cell at a widget position (row, col), or (-1, -1).
  std::pair<int, int> cellAt(QPoint pos) const;
  QRectF cellRect(int row, int col) const;

 signals:
  void cellClicked(int row, int col);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  QRectF gridRect() const;
  SearchGridModel* model_;
  ScenarioModel* scenario_;
};

class SearchView : public View {
  Q_OBJECT

 public:
  SearchView(ScenarioModel* scenario, SearchGridModel* model, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return map_; }
  // Starts the search over the chosen axes (the Run button).
  void run();
  HeatMapWidget* heatMap() { return map_; }

 private:
  void LoadCell(int row, int col);
  void UpdateStatus();
  SearchGridModel* model_;
  QComboBox *x_, *y_;
  QPushButton *run_, *cancel_;
  QProgressBar* progress_;
  QLabel* status_;
  HeatMapWidget* map_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_SEARCH_VIEW_H_
