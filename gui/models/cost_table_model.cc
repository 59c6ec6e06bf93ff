#include "gui/models/cost_table_model.h"

#include <cmath>
#include <limits>

#include "gui/models/format.h"

namespace meshplan::gui {

CostTableModel::CostTableModel(ScenarioModel* scenario, QObject* parent)
    : QAbstractTableModel(parent), scenario_(scenario) {
  connect(scenario_, &ScenarioModel::evaluated, this, &CostTableModel::Reset);
  connect(scenario_, &ScenarioModel::reliabilityChanged, this, [this] {
    if (rowCount() > 0) emit dataChanged(index(kGoodput, 0), index(kRowCount - 1, kColumnCount - 1));
  });
}

void CostTableModel::Reset() {
  beginResetModel();
  endResetModel();
}

int CostTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !scenario_->evaluation().valid ? 0 : kRowCount;
}
int CostTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

double CostTableModel::value(Row r) const {
  const Evaluation& e = scenario_->evaluation();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto& t = e.train;
  const auto* rel = e.reliability_state == Evaluation::Pending::kReady && e.reliability ? &*e.reliability : nullptr;
  switch (r) {
    case kTokens: return t.tokens;
    case kSteps: return t.steps;
    case kStepTime: return e.step.time_s;
    case kTokensPerS: return e.step.tokens_per_s;
    case kDays: return t.days;
    case kGpuHours: return t.gpu_hours;
    case kCost: return t.cost_usd;
    case kEnergy: return t.energy_kwh;
    case kGoodput: return rel ? rel->expected.goodput : nan;
    case kDaysP50: return rel ? rel->mc.days.p50 : nan;
    case kDaysP90: return rel ? rel->mc.days.p90 : nan;
    case kCostP50: return rel ? rel->mc.cost_usd.p50 : nan;
    case kRowCount: break;
  }
  return nan;
}

QString CostTableModel::quantityName(Row r) {
  switch (r) {
    case kTokens: return "tokens to train";
    case kSteps: return "optimizer steps";
    case kStepTime: return "step time";
    case kTokensPerS: return "throughput";
    case kDays: return "wall-clock days (no failures)";
    case kGpuHours: return "GPU-hours";
    case kCost: return "cost";
    case kEnergy: return "energy (GPUs at TDP)";
    case kGoodput: return "goodput with failures";
    case kDaysP50: return "days with failures (p50)";
    case kDaysP90: return "days with failures (p90)";
    case kCostP50: return "cost with failures (p50)";
    case kRowCount: break;
  }
  return {};
}

QString CostTableModel::valueText(Row r) const {
  const double v = value(r);
  if (std::isnan(v)) {
    const Evaluation& e = scenario_->evaluation();
    if (e.reliability_state == Evaluation::Pending::kFailed) return "n/a: " + e.reliability_error;
    return "computing...";
  }
  switch (r) {
    case kTokens: return Count(v);
    case kSteps: return QString::number(v, 'f', 0);
    case kStepTime: return Duration(v);
    case kTokensPerS: return Count(v) + " tokens/s";
    case kDays:
    case kDaysP50:
    case kDaysP90: return QString::number(v, 'f', 1) + " days";
    case kGpuHours: return Count(v) + " GPU-h";
    case kCost:
    case kCostP50: return Dollars(v);
    case kEnergy: return Count(v / 1000) + " MWh";
    case kGoodput: return Percent(v, 2);
    case kRowCount: break;
  }
  return {};
}

QString CostTableModel::how(Row r) const {
  const auto& c = scenario_->scenario().cluster;
  switch (r) {
    case kTokens:
      return scenario_->tokensSetting() > 0 ? QString("as set") : QString("20 per parameter (Hoffmann et al. 2022)");
    case kSteps: return "tokens / (global batch x seq)";
    case kStepTime: return "analytic step model (Step view)";
    case kTokensPerS: return "global batch x seq / step time";
    case kDays: return "steps x step time";
    case kGpuHours: return "GPUs x wall-clock hours";
    case kCost: return QString("GPU-hours x $%1 per GPU-hour (%2)").arg(c.price_per_gpu_hour_usd).arg(Q(c.name));
    case kEnergy: return "GPUs x TDP x hours: an upper bound on the GPUs' draw";
    case kGoodput: return "closed form at the optimal async checkpoint interval (Reliability view)";
    case kDaysP50:
    case kDaysP90: return "Monte Carlo, 200 trials, llama3-405b failure rates (as meshplan report)";
    case kCostP50: return "the same Monte Carlo; billed GPUs include the hot spare nodes";
    case kRowCount: break;
  }
  return {};
}

QVariant CostTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const auto r = static_cast<Row>(index.row());
  switch (role) {
    case Qt::DisplayRole:
      if (index.column() == kQuantity) return quantityName(r);
      if (index.column() == kValue) return valueText(r);
      return how(r);
    case kValueRole: return index.column() == kValue ? QVariant(value(r)) : QVariant();
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(index.column() == kValue ? Qt::AlignRight | Qt::AlignVCenter
                                                          : Qt::AlignLeft | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant CostTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kQuantity: return "quantity";
    case kValue: return "value";
    case kHow: return "how";
  }
  return {};
}

}  // namespace meshplan::gui
