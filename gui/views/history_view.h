// The result store as `meshplan history` shows it, plus a picture of calibration quality: the
// store's path (core::DefaultStorePath() unless changed with the line edit or "Open database..."),
// the measurements newest first (HistoryModel), the calibration profiles (ProfilesModel), and a
// scatter of predicted against measured step time, one colour per profile, with the y = x line
// (a perfect prediction) and dashed +-10% lines.
//
// Read only: the view never writes. A path that does not exist (or an empty file, a database
// being created this instant) is reported as "no database at PATH yet (meshplan calibrate fit
// creates it)" and is not opened, so nothing is created. An existing store is opened, read and
// closed on each reload (core::OpenSqliteResultStore; at the current schema version Open only
// reads), with a 1 s busy timeout so a writer's lock cannot freeze the window for long.
//
// Reload: the Refresh button, a new path, and a 2 s poll of the file and its write-ahead log
// (size and modification time of PATH and PATH-wal): SQLite in WAL mode lets this read while
// `meshplan calibrate` writes, and a commit lands in PATH-wal first, a file that comes and goes,
// which is why the view polls rather than using QFileSystemWatcher (it drops a deleted file).
// Thread-safety: GUI thread only. Slots never throw.
#ifndef MESHPLAN_GUI_VIEWS_HISTORY_VIEW_H_
#define MESHPLAN_GUI_VIEWS_HISTORY_VIEW_H_

#include <QChart>
#include <QChartView>
#include <QDateTime>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QTimer>

#include "gui/models/history_model.h"
#include "gui/views/view.h"

namespace meshplan::gui {

class HistoryView : public View {
  Q_OBJECT

 public:
  static constexpr int kPollMs = 2000;
  static constexpr int kBusyTimeoutMs = 1000;

  // Reads core::DefaultStorePath() at once. The models are the window's; the view only fills them.
  HistoryView(ScenarioModel* scenario, HistoryModel* history, ProfilesModel* profiles, QWidget* parent = nullptr);
  QWidget* chartWidget() override { return chart_view_; }

  QString storePath() const { return path_; }
  // Shows the store at `path` from now on and reads it now (the rows of another path are dropped).
  void setStorePath(const QString& path);
  // Reads the store again (the Refresh button; the poll when the file changed).
  void reload();
  // What the last read found: the "no database" line, an error, or what was read.
  QString message() const { return message_; }
  // True when the last read succeeded (false for no database and for errors).
  bool loaded() const { return loaded_; }
  // The poll's period (kPollMs unless a test shortens it).
  void setPollIntervalMs(int ms) { poll_.setInterval(ms); }
  QChart* chart() { return chart_; }
  QTableView* historyTable() { return history_table_; }
  QTableView* profilesTable() { return profiles_table_; }

 protected:
  QString subtitle() const override;

 private:
  // What the poll compares: existence, size and mtime of PATH and of PATH-wal.
  struct FileState {
    bool db = false, wal = false;
    qint64 db_size = 0, wal_size = 0;
    QDateTime db_mtime, wal_mtime;
    bool operator==(const FileState&) const = default;
  };
  FileState ReadFileState() const;
  void Poll();
  void OpenDialog();
  void SetMessage(const QString& text, const QString& colour);
  void RebuildChart();
  void ShowPointTip(const QPointF& point, bool state);
  void SelectPoint(const QPointF& point);
  int RowOfPoint(const QPointF& point) const;

  HistoryModel* history_;
  ProfilesModel* profiles_;
  QString path_;
  QString message_;
  bool loaded_ = false;
  FileState last_state_;
  QTimer poll_;
  QLineEdit* path_edit_;
  QPushButton *open_, *refresh_;
  QLabel* status_;
  QTableView* history_table_;
  QTableView* profiles_table_;
  QChart* chart_;
  QChartView* chart_view_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_VIEWS_HISTORY_VIEW_H_
