// Up to four pinned plans side by side (CompareModel): plan, memory, speed and cost in rows,
// values that differ between pins in bold, and their throughput as bars. "Pin current plan"
// copies the current scenario; double-clicking a column header loads that plan back.
#ifndef MESHPLAN_GUI_VIEWS_COMPARE_VIEW_H_
#define MESHPLAN_GUI_VIEWS_COMPARE_VIEW_H_

#include <QChart>
#include <QChartView>
#include <QPushButton>
#include <QTableView>

#include "gui/models/compare_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class CompareView : public View {
  Q_OBJECT

 public:
  CompareView(ScenarioModel* scenario, CompareModel* model, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return this; }
  void pinCurrent();

 private:
  void Rebuild();
  CompareModel* model_;
  QTableView* table_;
  QChart* chart_;
  QChartView* chart_view_;
  QPushButton *pin_, *unpin_, *clear_;
  int pins_made_ = 0;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_COMPARE_VIEW_H_
