// What the result store holds, as tables (the GUI side of `meshplan history`):
//
// HistoryModel: one row per stored measurement, newest first (core::ResultStore::History), with
// the step measured next to the step predicted at ingest and the error between them.
// Columns: when (UTC), plan, backend, mode, host, measured step (s), predicted step (s),
// error = (predicted - measured) / measured in percent with its sign ("+10.0%"), profile.
// A value the store does not have (a microbenchmark has no step; a measurement ingested without
// a profile has no prediction) reads "-". kValueRole: the raw double of the numeric columns
// (invalid where "-"). Qt::ToolTipRole: the measurement id and the file it came from. The
// vertical header is the measurement id.
//
// ProfilesModel: the newest version of each calibration profile, by name
// (core::ResultStore::ListProfiles). Columns: name, version, created (UTC), sources (the number
// of measurements it was fitted from; the tooltip lists their ids).
//
// Both own a copy of the rows (no reference to the store is kept) and never write to a store.
// Reload reads through the store's own calls; a store error is returned, never thrown, and leaves
// the rows as they were (a transient busy lock does not blank the table).
// Thread-safety: GUI thread only.
#ifndef MESHPLAN_GUI_MODELS_HISTORY_MODEL_H_
#define MESHPLAN_GUI_MODELS_HISTORY_MODEL_H_

#include <QAbstractTableModel>
#include <optional>
#include <vector>

#include "core/result_store.h"
#include "core/status.h"

namespace meshplan::gui {

class HistoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kWhen, kPlan, kBackend, kMode, kHost, kMeasured, kPredicted, kError, kProfile, kColumnCount };
  static constexpr int kValueRole = Qt::UserRole;  // double: seconds, or percent for kError
  // How many measurements Reload reads by default (newest first): enough for any table a person
  // scrolls and any scatter plot that stays readable.
  static constexpr int64_t kDefaultLimit = 1000;

  explicit HistoryModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Replaces the rows with store.History(limit) (limit <= 0: all). On error the rows are kept.
  core::Status Reload(const core::ResultStore& store, int64_t limit = kDefaultLimit);
  // Replaces the rows (kept in the order given; the store gives newest first).
  void setRows(std::vector<core::HistoryRow> rows);
  void clear() { setRows({}); }
  const std::vector<core::HistoryRow>& rows() const { return rows_; }

  // (predicted - measured) / measured in percent; none unless both steps are > 0 (as the CLI).
  static std::optional<double> ErrorPercent(const core::HistoryRow& r);
  // "+10.0%", "-3.2%", "-" when there is no error to give.
  static QString ErrorText(const core::HistoryRow& r);
  static QString columnName(Column c);

 private:
  std::vector<core::HistoryRow> rows_;
};

class ProfilesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kName, kVersion, kCreated, kSources, kColumnCount };
  static constexpr int kValueRole = Qt::UserRole;  // qlonglong for kVersion and kSources

  explicit ProfilesModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Replaces the rows with store.ListProfiles(). On error the rows are kept.
  core::Status Reload(const core::ResultStore& store);
  void setProfiles(std::vector<core::StoredProfile> profiles);
  void clear() { setProfiles({}); }
  const std::vector<core::StoredProfile>& profiles() const { return profiles_; }

 private:
  std::vector<core::StoredProfile> profiles_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_HISTORY_MODEL_H_
