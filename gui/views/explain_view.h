// The current plan's derivation with its numbers (ExplainModel: sim::ExplainScenario for this
// plan, as `meshplan explain` with the plan given), rendered as a readable page: each step's
// rule, formula, the formula with the numbers, and the result.
#ifndef MESHPLAN_GUI_VIEWS_EXPLAIN_VIEW_H_
#define MESHPLAN_GUI_VIEWS_EXPLAIN_VIEW_H_

#include <QTextBrowser>

#include "gui/models/explain_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class ExplainView : public View {
  Q_OBJECT

 public:
  ExplainView(ScenarioModel* scenario, ExplainModel* model, QWidget* parent = nullptr);
  QString html() const { return text_->toHtml(); }

 private:
  void Refresh();
  ExplainModel* model_;
  QTextBrowser* text_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_EXPLAIN_VIEW_H_
