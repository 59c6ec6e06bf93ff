#include "gui/models/compare_model.h"

#include <QFont>

#include "gui/models/format.h"

namespace meshplan::gui {

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {}

int CompareModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kRowCount; }
int CompareModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(pins_.size());
}

int CompareModel::pin(const QString& label, const core::Scenario& s, const Evaluation& e) {
  if (static_cast<int>(pins_.size()) >= kMaxPins) unpin(0);
  const int col = static_cast<int>(pins_.size());
  beginInsertColumns({}, col, col);
  Pin p{label, s, e};
  // The timeline and the reliability samples are not compared: keep the pin small.
  p.evaluation.timeline = {};
  p.evaluation.days_samples.clear();
  pins_.push_back(std::move(p));
  endInsertColumns();
  return col;
}

void CompareModel::unpin(int column) {
  if (column < 0 || column >= columnCount()) return;
  beginRemoveColumns({}, column, column);
  pins_.erase(pins_.begin() + column);
  endRemoveColumns();
}

void CompareModel::clear() {
  if (pins_.empty()) return;
  beginResetModel();
  pins_.clear();
  endResetModel();
}

QString CompareModel::rowName(Row r) {
  switch (r) {
    case kModel: return "model";
    case kHardware: return "GPUs";
    case kDegrees: return "tp . pp . dp . cp . ep . vpp";
    case kZero: return "ZeRO";
    case kSpRecompute: return "SP / recompute";
    case kBatch: return "mbs . gbs . seq";
    case kSchedule: return "schedule, precision";
    case kMemory: return "memory per GPU (worst stage)";
    case kFits: return "fits";
    case kStepTime: return "step time";
    case kTokensPerS: return "tokens/s";
    case kMfu: return "MFU";
    case kDays: return "days (no failures)";
    case kGpuHours: return "GPU-hours";
    case kCost: return "cost";
    case kEnergy: return "energy at TDP";
    case kRowCount: break;
  }
  return {};
}

QVariant CompareModel::value(const Pin& pin, Row r) const {
  const Evaluation& e = pin.evaluation;
  if (!e.valid) return {};
  switch (r) {
    case kMemory: return QVariant::fromValue<qint64>(e.memory.per_gpu_bytes);
    case kStepTime: return e.step.time_s;
    case kTokensPerS: return e.step.tokens_per_s;
    case kMfu: return e.step.mfu;
    case kDays: return e.train.days;
    case kGpuHours: return e.train.gpu_hours;
    case kCost: return e.train.cost_usd;
    case kEnergy: return e.train.energy_kwh;
    default: return {};
  }
}

QString CompareModel::text(const Pin& pin, Row r) const {
  const core::Scenario& s = pin.scenario;
  const core::PlanSpec& p = s.plan;
  const Evaluation& e = pin.evaluation;
  switch (r) {
    case kModel: return Q(s.model.name);
    case kHardware: return QString("%1 x %2 (%3)").arg(p.gpus).arg(Q(s.gpu.name), Q(s.cluster.name));
    case kDegrees:
      return QString("%1 . %2 . %3 . %4 . %5 . %6").arg(p.tp).arg(p.pp).arg(p.dp).arg(p.cp).arg(p.ep).arg(p.vpp);
    case kZero: return QString::number(p.zero);
    case kSpRecompute: return QString("%1 / %2").arg(p.sequence_parallel ? "on" : "off").arg(core::Name(p.recompute));
    case kBatch: return QString("%1 . %2 . %3").arg(p.micro_batch).arg(p.global_batch).arg(p.seq_len);
    case kSchedule: return QString("%1, %2").arg(core::Name(p.schedule)).arg(core::Name(p.precision));
    default: break;
  }
  if (!e.valid) return r == kFits ? "invalid: " + e.errors.value(0) : QString("-");
  switch (r) {
    case kMemory: return QString("%1 of %2 GB").arg(Gb(e.memory.per_gpu_bytes), Gb(e.memory.capacity_bytes));
    case kFits: return e.memory.fits ? "yes" : e.memory.verdict == core::FitVerdict::kTight ? "tight" : "NO";
    case kStepTime: return Duration(e.step.time_s);
    case kTokensPerS: return Count(e.step.tokens_per_s);
    case kMfu: return Percent(e.step.mfu);
    case kDays: return QString::number(e.train.days, 'f', 1);
    case kGpuHours: return Count(e.train.gpu_hours);
    case kCost: return Dollars(e.train.cost_usd);
    case kEnergy: return Count(e.train.energy_kwh / 1000) + " MWh";
    default: return {};
  }
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const auto r = static_cast<Row>(index.row());
  const Pin& pin = pins_[static_cast<size_t>(index.column())];
  switch (role) {
    case Qt::DisplayRole: return text(pin, r);
    case kValueRole: return value(pin, r);
    case Qt::FontRole: {
      bool differs = false;
      for (const auto& other : pins_) differs |= text(other, r) != text(pin, r);
      if (!differs) return {};
      QFont f;
      f.setBold(true);
      return f;
    }
    case Qt::ToolTipRole: return pin.label;
    default: return {};
  }
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Horizontal && section >= 0 && section < columnCount())
    return pins_[static_cast<size_t>(section)].label;
  if (orientation == Qt::Vertical && section >= 0 && section < kRowCount) return rowName(static_cast<Row>(section));
  return {};
}

}  // namespace meshplan::gui
