#include "gui/models/explain_model.h"

#include <memory>

#include "gui/models/format.h"

namespace meshplan::gui {

ExplainModel::ExplainModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  debounce_.setSingleShot(true);
  debounce_.setInterval(200);
  connect(&debounce_, &QTimer::timeout, this, &ExplainModel::Start);
  connect(scenario_, &ScenarioModel::evaluated, this, [this] {
    worker_.Cancel();
    beginResetModel();
    explanation_ = {};
    error_.clear();
    endResetModel();
    if (scenario_->evaluation().valid) debounce_.start();
  });
  if (scenario_->evaluation().valid) debounce_.start();
}

void ExplainModel::Start() {
  if (!scenario_->evaluation().valid) return;
  sim::ExplainOptions opt;
  opt.keep_plan = true;
  opt.search = false;
  opt.tokens = scenario_->tokensSetting();
  worker_.Start("explaining the plan", [this, s = scenario_->scenario(), profile = scenario_->profile(),
                                        failures = scenario_->failureModel(), opt](Worker::Context& ctx) {
    auto r = sim::ExplainScenario(s, profile, failures, opt);
    auto shared = std::make_shared<core::Result<sim::Explanation>>(std::move(r));
    ctx.Post([this, shared] {
      beginResetModel();
      if (shared->ok()) explanation_ = std::move(shared->value());
      else error_ = Q(shared->status().message());
      endResetModel();
    });
  });
}

void ExplainModel::waitForIdle() {
  if (debounce_.isActive()) {
    debounce_.stop();
    Start();
  }
  worker_.WaitForIdle();
}

int ExplainModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(explanation_.steps.size());
}
int ExplainModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant ExplainModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  const sim::ExplainStep& s = explanation_.steps[static_cast<size_t>(index.row())];
  switch (index.column()) {
    case kTitle: return Q(s.title);
    case kRule: return Q(s.rule);
    case kFormula: return Q(s.formula);
    case kSubstituted: return Q(s.substituted);
    case kResult: return Q(s.result);
    case kNote: return Q(s.seeds_note);
  }
  return {};
}

QVariant ExplainModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kTitle: return "step";
    case kRule: return "rule";
    case kFormula: return "formula";
    case kSubstituted: return "with the numbers";
    case kResult: return "result";
    case kNote: return "note";
  }
  return {};
}

}  // namespace meshplan::gui
