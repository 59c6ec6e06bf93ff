#include "gui/models/history_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <cmath>

#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

// The store's timestamps are ISO 8601 UTC ("2026-11-22T18:40:00Z"); the column header says UTC,
// so the cell drops the 'T' and the 'Z' for reading. Anything else is shown as stored.
QString WhenText(const std::string& iso) {
  QString s = Q(iso);
  if (s.size() == 20 && s[10] == 'T' && s.endsWith('Z')) {
    s[10] = ' ';
    s.chop(1);
  }
  return s;
}

QString OrDash(const std::string& s) { return s.empty() ? QString("-") : Q(s); }

// Seconds with four significant digits, as `meshplan history` ("%.4g"); "-" when not stored.
QString SecondsText(double s) { return s > 0 ? QString::number(s, 'g', 4) : QString("-"); }

QVariant Right() { return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter); }
QVariant Left() { return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter); }

// Predictions more than this far off are drawn in red: the held-out calibration check
// (docs/calibration.md) asks for 10%.
constexpr double kWarnErrorPct = 10.0;

}  // namespace

// ---- HistoryModel ------------------------------------------------------------------------------

HistoryModel::HistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

int HistoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int HistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

std::optional<double> HistoryModel::ErrorPercent(const core::HistoryRow& r) {
  if (!(r.measured_step_s > 0) || !(r.predicted_step_s > 0)) return std::nullopt;
  return 100.0 * (r.predicted_step_s - r.measured_step_s) / r.measured_step_s;
}

QString HistoryModel::ErrorText(const core::HistoryRow& r) {
  const auto e = ErrorPercent(r);
  return e ? QString::asprintf("%+.1f%%", *e) : QString("-");
}

QString HistoryModel::columnName(Column c) {
  switch (c) {
    case kWhen: return "when (UTC)";
    case kPlan: return "plan";
    case kBackend: return "backend";
    case kMode: return "mode";
    case kHost: return "host";
    case kMeasured: return "measured step (s)";
    case kPredicted: return "predicted step (s)";
    case kError: return "error";
    case kProfile: return "profile";
    case kColumnCount: break;
  }
  return {};
}

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.parent().isValid() || index.row() < 0 || index.row() >= rowCount() ||
      index.column() < 0 || index.column() >= kColumnCount)
    return {};
  const core::HistoryRow& r = rows_[static_cast<size_t>(index.row())];
  const auto c = static_cast<Column>(index.column());
  const bool numeric = c == kMeasured || c == kPredicted || c == kError;
  switch (role) {
    case Qt::DisplayRole:
      switch (c) {
        case kWhen: return WhenText(r.created_at);
        case kPlan: return r.plan_label.empty() ? QString("(microbenchmark)") : Q(r.plan_label);
        case kBackend: return OrDash(r.backend);
        case kMode: return OrDash(r.mode);
        case kHost: return OrDash(r.hostname);
        case kMeasured: return SecondsText(r.measured_step_s);
        case kPredicted: return SecondsText(r.predicted_step_s);
        case kError: return ErrorText(r);
        case kProfile: return OrDash(r.profile_name);
        case kColumnCount: break;
      }
      return {};
    case kValueRole:
      if (c == kMeasured && r.measured_step_s > 0) return r.measured_step_s;
      if (c == kPredicted && r.predicted_step_s > 0) return r.predicted_step_s;
      if (c == kError) {
        if (const auto e = ErrorPercent(r)) return *e;
      }
      return {};
    case Qt::TextAlignmentRole: return numeric ? Right() : Left();
    case Qt::ForegroundRole:
      if (c == kError) {
        if (const auto e = ErrorPercent(r); e && std::fabs(*e) > kWarnErrorPct) return QBrush(QColor(176, 0, 0));
      }
      return {};
    case Qt::ToolTipRole: {
      QString tip = QString("measurement #%1 from %2").arg(r.measurement_id).arg(OrDash(r.source));
      if (c == kError)
        tip += ErrorPercent(r) ? QString("\nerror = (predicted - measured) / measured step")
                               : QString("\nno error: the measurement has no step or no prediction");
      if (c == kPredicted && !(r.predicted_step_s > 0))
        tip += "\nno prediction stored (ingested without a profile, or no step to predict)";
      if (c == kWhen) tip += "\ncreated " + Q(r.created_at);
      return tip;
    }
    default: return {};
  }
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Vertical) {
    if (role != Qt::DisplayRole || section < 0 || section >= rowCount()) return {};
    return QString("#%1").arg(rows_[static_cast<size_t>(section)].measurement_id);
  }
  if (section < 0 || section >= kColumnCount) return {};
  if (role == Qt::DisplayRole) return columnName(static_cast<Column>(section));
  if (role == Qt::ToolTipRole && section == kError)
    return "(predicted - measured) / measured step time, as `meshplan history`";
  return {};
}

core::Status HistoryModel::Reload(const core::ResultStore& store, int64_t limit) {
  auto rows = store.History(limit);
  if (!rows.ok()) return rows.status();
  setRows(std::move(rows).value());
  return core::Status::Ok();
}

void HistoryModel::setRows(std::vector<core::HistoryRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

// ---- ProfilesModel -----------------------------------------------------------------------------

ProfilesModel::ProfilesModel(QObject* parent) : QAbstractTableModel(parent) {}

int ProfilesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(profiles_.size());
}
int ProfilesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant ProfilesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.parent().isValid() || index.row() < 0 || index.row() >= rowCount() ||
      index.column() < 0 || index.column() >= kColumnCount)
    return {};
  const core::StoredProfile& p = profiles_[static_cast<size_t>(index.row())];
  const auto c = static_cast<Column>(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (c) {
        case kName: return Q(p.name);
        case kVersion: return QString::number(p.version);
        case kCreated: return WhenText(p.created_at);
        case kSources: return QString::number(static_cast<qlonglong>(p.measurement_ids.size()));
        case kColumnCount: break;
      }
      return {};
    case kValueRole:
      if (c == kVersion) return static_cast<qlonglong>(p.version);
      if (c == kSources) return static_cast<qlonglong>(p.measurement_ids.size());
      return {};
    case Qt::TextAlignmentRole: return c == kVersion || c == kSources ? Right() : Left();
    case Qt::ToolTipRole: {
      if (p.measurement_ids.empty())
        return QString("%1 v%2: fitted from no stored measurement").arg(Q(p.name)).arg(p.version);
      QStringList ids;
      for (int64_t id : p.measurement_ids) ids << QString("#%1").arg(id);
      return QString("%1 v%2: fitted from measurements %3 (meshplan report --profile %1)")
          .arg(Q(p.name))
          .arg(p.version)
          .arg(ids.join(", "));
    }
    default: return {};
  }
}

QVariant ProfilesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kName: return "profile";
    case kVersion: return "version";
    case kCreated: return "created (UTC)";
    case kSources: return "sources (#)";
  }
  return {};
}

core::Status ProfilesModel::Reload(const core::ResultStore& store) {
  auto profiles = store.ListProfiles();
  if (!profiles.ok()) return profiles.status();
  setProfiles(std::move(profiles).value());
  return core::Status::Ok();
}

void ProfilesModel::setProfiles(std::vector<core::StoredProfile> profiles) {
  beginResetModel();
  profiles_ = std::move(profiles);
  endResetModel();
}

}  // namespace meshplan::gui
