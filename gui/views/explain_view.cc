#include "gui/views/explain_view.h"

#include "gui/models/format.h"

namespace meshplan::gui {

ExplainView::ExplainView(ScenarioModel* scenario, ExplainModel* model, QWidget* parent)
    : View(scenario, "explain", "How the numbers are derived", true, parent), model_(model) {
  text_ = new QTextBrowser();
  text_->setOpenExternalLinks(false);
  setBody(text_);
  connect(model_, &QAbstractItemModel::modelReset, this, &ExplainView::Refresh);
  Refresh();
}

void ExplainView::Refresh() {
  if (!model_->error().isEmpty()) {
    text_->setHtml("<p style='color:#b00000'>The explanation failed: " + model_->error().toHtmlEscaped() + "</p>");
    return;
  }
  if (model_->rowCount() == 0) {
    text_->setHtml("<p style='color:#666'>Working out the derivation on a worker thread...</p>");
    return;
  }
  auto cell = [this](int r, int c) { return model_->data(model_->index(r, c)).toString().toHtmlEscaped(); };
  QString html = "<html><body style='font-size:10.5pt'>";
  html += "<h2>" + Q(model_->explanation().title).toHtmlEscaped() + "</h2>";
  html +=
      "<p style='color:#555'>Each step: the rule and its source, the formula, the formula with this plan's "
      "numbers, and what follows. Every number comes from core/ and sim/ (as <tt>meshplan explain</tt>).</p>";
  for (int r = 0; r < model_->rowCount(); ++r) {
    html += QString("<h3>%1. %2</h3>").arg(r + 1).arg(cell(r, ExplainModel::kTitle));
    const QString rule = cell(r, ExplainModel::kRule);
    if (!rule.isEmpty()) html += "<p>" + rule + "</p>";
    const QString formula = cell(r, ExplainModel::kFormula);
    if (!formula.isEmpty()) html += "<p style='margin-left:16px'><tt>" + formula + "</tt></p>";
    QString subst = cell(r, ExplainModel::kSubstituted);
    if (!subst.isEmpty())
      html += "<p style='margin-left:16px'><tt style='color:#1f4e99'>" + subst.replace("\n", "<br>") + "</tt></p>";
    const QString result = cell(r, ExplainModel::kResult);
    if (!result.isEmpty()) html += "<p><b>&rArr; " + result + "</b></p>";
    const QString note = cell(r, ExplainModel::kNote);
    if (!note.isEmpty()) html += "<p style='color:#8a4b00'><i>Rule of thumb check: " + note + "</i></p>";
  }
  html += "</body></html>";
  text_->setHtml(html);
}

}  // namespace meshplan::gui
