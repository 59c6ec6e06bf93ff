// The base of every result view: a heading with the current plan, the view's body, and in place
// of the body a plain message while the plan does not validate (views that need a valid plan).
// Views only read models (gui/models/); they hold no numbers of their own.
// Thread-safety: GUI thread only. Slots never throw.
#ifndef MESHPLAN_GUI_VIEWS_VIEW_H_
#define MESHPLAN_GUI_VIEWS_VIEW_H_

#include <QAbstractItemModel>
#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QTableView>
#include <QStackedWidget>
#include <QWidget>

#include "gui/models/scenario_model.h"

namespace meshplan::gui {

class View : public QWidget {
  Q_OBJECT

 public:
  // `id`: the name used by --view and in file names ("memory", "step", ...).
  View(ScenarioModel* scenario, const QString& id, const QString& heading, bool needs_valid_plan,
       QWidget* parent = nullptr);
  QString id() const { return id_; }
  // What "Export chart" saves: the chart, or the whole view when it has no single chart.
  virtual QWidget* chartWidget() { return this; }

 protected:
  void setBody(QWidget* body);
  // The grey line under the heading: the current plan, unless the view is about something else.
  virtual QString subtitle() const;
  ScenarioModel* scenario_;

 private:
  void Refresh();
  QString id_, heading_;
  bool needs_valid_plan_;
  QLabel* title_;
  QStackedWidget* stack_;
  QLabel* invalid_;
};

// A QLabel-based "metric card": a small caption over a large value.
QWidget* MakeMetric(const QString& caption, QLabel** value, QWidget* parent);
// How every view shows a chart: no animation (screenshots and tests see the final state),
// antialiased, the legend shown only when asked. The view owns `chart`.
QChartView* MakeChartView(QChart* chart, bool legend);
// How the result views show a model as a table: no row numbers, columns sized to their contents,
// the last one stretched.
QTableView* MakeTable(QAbstractItemModel* model);

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_VIEW_H_
