#include "gui/views/history_view.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSplitter>
#include <QTime>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <system_error>

#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

// Points of each profile in one colour (tab10, as the other charts); the lines in grey.
const QColor kColours[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                           {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

// Above this ratio between the largest and the smallest step, the axes go logarithmic so that a
// 20 ms microbenchmark-sized run and a 20 s step are both readable.
constexpr double kLogAxesRatio = 20;

QLineSeries* Line(const QString& name, double slope, double lo, double hi, const QPen& pen) {
  auto* s = new QLineSeries();
  s->setName(name);
  s->append(lo, slope * lo);
  s->append(hi, slope * hi);
  s->setPen(pen);
  return s;
}

}  // namespace

HistoryView::HistoryView(ScenarioModel* scenario, HistoryModel* history, ProfilesModel* profiles, QWidget* parent)
    : View(scenario, "history", "History: predicted against measured", false, parent),
      history_(history),
      profiles_(profiles) {
  auto* body = new QWidget();
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);

  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel("Database:"));
  path_edit_ = new QLineEdit();
  path_edit_->setObjectName("history_path");
  path_edit_->setToolTip(
      "The result store (SQLite) that `meshplan calibrate` and `meshplan history` use; "
      "default: $MESHPLAN_DB, else $XDG_DATA_HOME/meshplan/meshplan.db, else "
      "~/.local/share/meshplan/meshplan.db. Read only: the GUI never writes it.");
  bar->addWidget(path_edit_, 1);
  open_ = new QPushButton("Open database...");
  refresh_ = new QPushButton("Refresh");
  refresh_->setToolTip(
      QString("Read the store again (it is also re-read within %1 s of any change to the file)").arg(kPollMs / 1000));
  bar->addWidget(open_);
  bar->addWidget(refresh_);
  layout->addLayout(bar);
  status_ = new QLabel();
  status_->setObjectName("history_status");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);

  history_table_ = new QTableView();
  history_table_->setObjectName("history_table");
  history_table_->setModel(history_);
  history_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  history_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  history_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  history_table_->horizontalHeader()->setStretchLastSection(true);
  history_table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  profiles_table_ = new QTableView();
  profiles_table_->setObjectName("profiles_table");
  profiles_table_->setModel(profiles_);
  profiles_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  profiles_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  profiles_table_->verticalHeader()->hide();

  auto* measurements = new QWidget();
  auto* ml = new QVBoxLayout(measurements);
  ml->setContentsMargins(0, 0, 0, 0);
  ml->addWidget(new QLabel("<b>Measurements</b>, newest first (error = (predicted - measured) / measured step)"));
  ml->addWidget(history_table_, 1);
  auto* profiles_box = new QWidget();
  auto* pl = new QVBoxLayout(profiles_box);
  pl->setContentsMargins(0, 0, 0, 0);
  pl->addWidget(new QLabel("<b>Calibration profiles</b>, newest version of each"));
  pl->addWidget(profiles_table_, 1);
  pl->addWidget(new QLabel("Predict with one: meshplan report --profile NAME"));

  chart_ = new QChart();
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_view_ = MakeChartView(chart_, /*legend=*/true);

  // The measurements across the whole width (nine columns); below, the profiles beside the chart,
  // which gets the larger share so that it stays roughly square (y = x on the diagonal).
  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(profiles_box);
  bottom->addWidget(chart_view_);
  bottom->setStretchFactor(0, 2);
  bottom->setStretchFactor(1, 3);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(measurements);
  split->addWidget(bottom);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  layout->addWidget(split, 1);
  setBody(body);

  connect(open_, &QPushButton::clicked, this, &HistoryView::OpenDialog);
  connect(refresh_, &QPushButton::clicked, this, &HistoryView::reload);
  connect(path_edit_, &QLineEdit::editingFinished, this, [this] {
    if (path_edit_->text() != path_) setStorePath(path_edit_->text());
  });
  connect(history_, &QAbstractItemModel::modelReset, this, &HistoryView::RebuildChart);
  poll_.setInterval(kPollMs);
  connect(&poll_, &QTimer::timeout, this, &HistoryView::Poll);
  poll_.start();

  setStorePath(QString::fromStdString(core::DefaultStorePath()));
}

QString HistoryView::subtitle() const {
  return "What the result store holds: measurements with the step predicted for them, and the calibration "
         "profiles fitted from them (read only)";
}

void HistoryView::setStorePath(const QString& path) {
  path_ = path;
  if (path_edit_->text() != path) path_edit_->setText(path);
  // Rows read from another file must not stand under this path, even if this one fails to read.
  history_->clear();
  profiles_->clear();
  reload();
}

HistoryView::FileState HistoryView::ReadFileState() const {
  FileState s;
  const QFileInfo db(path_), wal(path_ + "-wal");
  s.db = db.exists();
  s.wal = wal.exists();
  if (s.db) {
    s.db_size = db.size();
    s.db_mtime = db.lastModified();
  }
  if (s.wal) {
    s.wal_size = wal.size();
    s.wal_mtime = wal.lastModified();
  }
  return s;
}

void HistoryView::SetMessage(const QString& text, const QString& colour) {
  message_ = text;
  status_->setStyleSheet("color:" + colour + ";");
  status_->setText(text);
}

void HistoryView::reload() {
  loaded_ = false;
  const std::string path = path_.toStdString();
  std::error_code ec;
  const std::filesystem::path p(path);
  const bool exists = !path.empty() && std::filesystem::exists(p, ec);
  const bool is_dir = exists && std::filesystem::is_directory(p, ec);
  // A zero-length file is a database being created this instant (sqlite3_open_v2 makes the file
  // before the schema is written); opening it here would write the schema, so wait for the writer.
  const bool empty_file = exists && !is_dir && std::filesystem::file_size(p, ec) == 0 && !ec;
  if (path.empty()) {
    history_->clear();
    profiles_->clear();
    SetMessage("no database path given: type one or use \"Open database...\"", "#444");
  } else if (!exists || empty_file) {
    history_->clear();
    profiles_->clear();
    SetMessage("no database at " + path_ + " yet (meshplan calibrate fit creates it)", "#444");
  } else if (is_dir) {
    history_->clear();
    profiles_->clear();
    SetMessage(path_ + " is a directory, not a result store", "#b00000");
  } else {
    // Opened per read and closed at the end of this block: a fresh connection sees the newest
    // commit, and a file replaced on disk is followed rather than read through a stale handle.
    core::SqliteStoreOptions options;
    options.busy_timeout_ms = kBusyTimeoutMs;
    auto store = core::OpenSqliteResultStore(path, options);
    core::Status status = store.ok() ? core::Status::Ok() : store.status();
    if (status.ok()) status = history_->Reload(**store);
    if (status.ok()) status = profiles_->Reload(**store);
    if (!status.ok()) {
      const bool stale = history_->rowCount() > 0 || profiles_->rowCount() > 0;
      SetMessage("cannot read the store: " + Q(status.message()) +
                     (stale ? QString(" (showing the previous read)") : QString()),
                 "#b00000");
    } else {
      loaded_ = true;
      const int n = history_->rowCount();
      QString text = QString("%1 measurement%2").arg(n).arg(n == 1 ? "" : "s");
      if (n >= HistoryModel::kDefaultLimit) text += QString(" (the newest %1)").arg(HistoryModel::kDefaultLimit);
      text += QString(", %1 profile%2 in %3; read at %4, read again when the file changes")
                  .arg(profiles_->rowCount())
                  .arg(profiles_->rowCount() == 1 ? "" : "s")
                  .arg(path_, QTime::currentTime().toString("HH:mm:ss"));
      SetMessage(text, "#444");
    }
  }
  // After the store is closed: closing the last connection checkpoints and removes PATH-wal, which
  // must not read as a change by someone else.
  last_state_ = ReadFileState();
}

void HistoryView::Poll() {
  if (ReadFileState() != last_state_) reload();
}

void HistoryView::OpenDialog() {
  const QString dir = QFileInfo(path_).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, "Open result store", dir,
                                                    "SQLite database (*.db *.sqlite *.sqlite3);;All files (*)");
  if (!path.isEmpty()) setStorePath(path);
}

void HistoryView::RebuildChart() {
  chart_->removeAllSeries();
  for (QAbstractAxis* a : chart_->axes()) {
    chart_->removeAxis(a);
    delete a;
  }
  // One scatter per profile, in the order the profiles first appear (newest first).
  std::vector<QString> order;
  std::map<QString, QScatterSeries*> by_profile;
  double lo = 0, hi = 0;
  int points = 0;
  std::vector<double> abs_errors;
  for (int r = 0; r < history_->rowCount(); ++r) {
    const QVariant m = history_->data(history_->index(r, HistoryModel::kMeasured), HistoryModel::kValueRole);
    const QVariant p = history_->data(history_->index(r, HistoryModel::kPredicted), HistoryModel::kValueRole);
    const QVariant e = history_->data(history_->index(r, HistoryModel::kError), HistoryModel::kValueRole);
    if (!m.isValid() || !p.isValid()) continue;
    const QString profile = history_->data(history_->index(r, HistoryModel::kProfile)).toString();
    QScatterSeries*& s = by_profile[profile];
    if (!s) {
      s = new QScatterSeries();
      s->setName(profile);
      s->setMarkerSize(9);
      const QColor c = kColours[order.size() % std::size(kColours)];
      s->setColor(c);
      s->setBorderColor(c.darker(130));
      order.push_back(profile);
    }
    const double x = m.toDouble(), y = p.toDouble();
    s->append(x, y);
    const double a = std::min(x, y), b = std::max(x, y);
    lo = points == 0 ? a : std::min(lo, a);
    hi = points == 0 ? b : std::max(hi, b);
    ++points;
    if (e.isValid()) abs_errors.push_back(std::fabs(e.toDouble()));
  }
  if (points == 0) {
    chart_->setTitle(history_->rowCount() == 0 ? "No measurements to plot"
                                               : "No measurement with both a measured and a predicted step");
    return;
  }
  const bool log = hi / lo > kLogAxesRatio;
  // Both axes get the same range (a margin around the points), so y = x is the diagonal.
  QAbstractAxis *x = nullptr, *y = nullptr;
  double axis_lo = 0, axis_hi = 0;
  if (log) {
    axis_lo = lo / 1.5;
    axis_hi = hi * 1.5;
    auto* lx = new QLogValueAxis();
    auto* ly = new QLogValueAxis();
    for (auto* a : {lx, ly}) {
      a->setBase(10);
      a->setRange(axis_lo, axis_hi);
      a->setLabelFormat("%g");
      a->setMinorTickCount(-1);
    }
    x = lx;
    y = ly;
  } else {
    auto* vx = new QValueAxis();
    auto* vy = new QValueAxis();
    for (auto* a : {vx, vy}) {
      a->setRange(0, hi * 1.15);
      a->setLabelFormat("%.3g");
      a->applyNiceNumbers();
    }
    axis_hi = vx->max();
    x = vx;
    y = vy;
  }
  x->setTitleText("measured step (s)");
  y->setTitleText("predicted step (s)");
  chart_->addAxis(x, Qt::AlignBottom);
  chart_->addAxis(y, Qt::AlignLeft);
  QPen ideal(QColor(60, 60, 60));
  ideal.setWidthF(1.5);
  QPen band(QColor(150, 150, 150));
  band.setStyle(Qt::DashLine);
  std::vector<QAbstractSeries*> all = {Line("y = x", 1.0, axis_lo, axis_hi, ideal),
                                       Line("+/-10%", 1.1, axis_lo, axis_hi / 1.1, band),
                                       Line("-10%", 0.9, axis_lo, axis_hi, band)};
  for (const QString& name : order) all.push_back(by_profile[name]);
  for (QAbstractSeries* s : all) {
    chart_->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  // The -10% line shares the +-10% legend entry.
  for (QLegendMarker* marker : chart_->legend()->markers(all[2])) marker->setVisible(false);
  for (const QString& name : order) {
    QScatterSeries* s = by_profile[name];
    connect(s, &QScatterSeries::hovered, this, &HistoryView::ShowPointTip);
    connect(s, &QScatterSeries::clicked, this, &HistoryView::SelectPoint);
  }
  std::sort(abs_errors.begin(), abs_errors.end());
  const size_t n = abs_errors.size();
  const double median = n == 0 ? 0 : n % 2 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2;
  chart_->setTitle(QString("Predicted vs measured step: %1 point%2, median |error| %3%")
                       .arg(points)
                       .arg(points == 1 ? "" : "s")
                       .arg(QString::number(median, 'f', 1)));
}

int HistoryView::RowOfPoint(const QPointF& point) const {
  for (int r = 0; r < history_->rowCount(); ++r) {
    const QVariant m = history_->data(history_->index(r, HistoryModel::kMeasured), HistoryModel::kValueRole);
    const QVariant p = history_->data(history_->index(r, HistoryModel::kPredicted), HistoryModel::kValueRole);
    if (m.isValid() && p.isValid() && m.toDouble() == point.x() && p.toDouble() == point.y()) return r;
  }
  return -1;
}

void HistoryView::ShowPointTip(const QPointF& point, bool state) {
  const int r = state ? RowOfPoint(point) : -1;
  if (r < 0) {
    QToolTip::hideText();
    return;
  }
  auto cell = [&](HistoryModel::Column c) { return history_->data(history_->index(r, c)).toString(); };
  QToolTip::showText(QCursor::pos(),
                     QString("%1 %2\n%3 on %4 (%5)\nmeasured %6 s, predicted %7 s (%8)\n%9")
                         .arg(history_->headerData(r, Qt::Vertical).toString(), cell(HistoryModel::kPlan),
                              cell(HistoryModel::kBackend), cell(HistoryModel::kHost), cell(HistoryModel::kMode),
                              cell(HistoryModel::kMeasured), cell(HistoryModel::kPredicted), cell(HistoryModel::kError),
                              cell(HistoryModel::kWhen)));
}

void HistoryView::SelectPoint(const QPointF& point) {
  const int r = RowOfPoint(point);
  if (r < 0) return;
  history_table_->selectRow(r);
  history_table_->scrollTo(history_->index(r, 0));
}

}  // namespace meshplan::gui
