// The timeline of one training step from the discrete-event simulator (sim::SimulateStreams
// through TimelineTableModel): one row per pipeline rank, forward (F), input-gradient backward (B)
// and weight-gradient (W) ops coloured, the microbatch number inside each op when there is room,
// idle time left blank; under each row a thin line per communication stream (TP/CP/EP
// collectives exposed or overlapped, DP gradient sync, pipeline sends), and the optimizer step
// after the pipeline. Mouse wheel zooms around the cursor, drag
// pans, double-click resets; hovering an op shows its rank, microbatch, kind and times.
#ifndef MESHPLAN_GUI_VIEWS_TIMELINE_VIEW_H_
#define MESHPLAN_GUI_VIEWS_TIMELINE_VIEW_H_

#include <QLabel>
#include <QWidget>

#include "gui/models/timeline_table_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

// The Gantt chart itself (QPainter over the model's ops).
class GanttWidget : public QWidget {
  Q_OBJECT

 public:
  explicit GanttWidget(TimelineTableModel* model, QWidget* parent = nullptr);
  void resetZoom();
  void zoom(double factor, double anchor_s);  // factor > 1 zooms in
  double visibleStart() const { return t0_; }
  double visibleEnd() const { return t1_; }
  // The op under a widget position, or -1.
  int opAt(QPoint pos) const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void Rebuild();
  QRectF plotRect() const;
  double xOf(double t) const;
  double tOf(double x) const;
  TimelineTableModel* model_;
  double t0_ = 0, t1_ = 1;
  int drag_x_ = -1;
  double drag_t0_ = 0, drag_t1_ = 1;
  std::vector<std::vector<int>> by_rank_;  // op rows per rank, in start order
  double Full() const;                     // the whole step: the time axis at zoom 1
};

class TimelineView : public View {
  Q_OBJECT

 public:
  TimelineView(ScenarioModel* scenario, TimelineTableModel* model, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return gantt_; }

 private:
  void Refresh();
  TimelineTableModel* model_;
  GanttWidget* gantt_;
  QLabel* summary_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_TIMELINE_VIEW_H_
