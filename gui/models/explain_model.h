// The current plan's derivation, step by step (sim::ExplainScenario with the plan kept as given
// and no search: `meshplan explain` for this plan): one row per step with its rule, formula,
// the numbers substituted and the result. Computed on a worker thread (it runs a small failure
// Monte Carlo) shortly after each change; empty while it runs and for an invalid plan.
// Columns: title, rule, formula, substituted, result, note (where a rule of thumb goes wrong).
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_EXPLAIN_MODEL_H_
#define MESHPLAN_GUI_MODELS_EXPLAIN_MODEL_H_

#include <QAbstractTableModel>
#include <QTimer>

#include "gui/models/scenario_model.h"
#include "sim/explain.h"

namespace meshplan::gui {

class ExplainModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kTitle, kRule, kFormula, kSubstituted, kResult, kNote, kColumnCount };

  explicit ExplainModel(ScenarioModel* scenario, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  const sim::Explanation& explanation() const { return explanation_; }
  QString error() const { return error_; }
  Worker* worker() { return &worker_; }
  // Starts the computation now if one is pending, then waits for it (screenshots and tests).
  void waitForIdle();

 private:
  void Start();
  ScenarioModel* scenario_;
  Worker worker_;
  QTimer debounce_;
  sim::Explanation explanation_;
  QString error_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_EXPLAIN_MODEL_H_
