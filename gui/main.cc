// meshplan-gui: the desktop what-if explorer.
//   meshplan-gui [--plan FILE] [--db FILE]
//   meshplan-gui --screenshot FILE.png [--plan FILE] [--db FILE] [--view memory|step|...] [--size WxH]
// --db: the result store the History view reads (default core::DefaultStorePath()); never written.
// --screenshot renders one view offscreen (MainWindow::renderView: the search view runs its TP x PP
// search; the compare view pins the plan and two variants) (QT_QPA_PLATFORM=offscreen unless set), waits for its
// background work (timeline, Monte Carlo, search, explanation), saves a PNG and exits: 0 on
// success, 1 when the plan or the image cannot be read or written, 2 on a usage error.
// --help and --version need no display. Without one (and without --screenshot) it says so in one
// line and exits 2, instead of Qt's abort.
#include <QApplication>
#include <QCommandLineParser>
#include <QImage>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gui/main_window.h"
#include "gui/views/history_view.h"

namespace {

bool WantsScreenshot(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--screenshot", 12) == 0) return true;
  return false;
}

// --help, --help-all or --version: answered by a QCoreApplication, which needs no display.
bool WantsInfo(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help") || !std::strcmp(a, "-?") || !std::strcmp(a, "--help-all") ||
        !std::strcmp(a, "-v") || !std::strcmp(a, "--version"))
      return true;
  }
  return false;
}

bool HasDisplay() {
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0';
  };
  return set("QT_QPA_PLATFORM") || set("DISPLAY") || set("WAYLAND_DISPLAY");
}

constexpr char kNoDisplayAdvice[] =
    "run it in a desktop session or under xvfb-run, or render a view without one: "
    "meshplan-gui --screenshot FILE.png --view memory";

// Qt ends with qFatal (an abort) when its platform plugin cannot start (a DISPLAY that names no
// reachable X server): one line and exit 2 instead.
QtMessageHandler g_previous_handler = nullptr;
void ExitOnFatal(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (type == QtFatalMsg) {
    std::fprintf(stderr, "error: meshplan-gui cannot start its display (%s); %s\n", qPrintable(message.simplified()),
                 kNoDisplayAdvice);
    std::fflush(stderr);
    std::_Exit(2);
  }
  // The platform plugin's own warnings while it fails ("could not connect to display") would
  // make the one line several; the fatal message above carries the reason.
  if (context.category && std::strncmp(context.category, "qt.qpa", 6) == 0) return;
  if (g_previous_handler) g_previous_handler(type, context, message);
}

struct Options {
  QCommandLineOption screenshot{"screenshot", "Render a view offscreen to FILE (PNG) and exit.", "FILE"};
  QCommandLineOption plan{"plan", "Open this plan JSON (from `meshplan plan --output` or File > Save plan).", "FILE"};
  QCommandLineOption view;
  QCommandLineOption db{"db",
                        "The result store the History view reads, read only (default: $MESHPLAN_DB, else "
                        "$XDG_DATA_HOME/meshplan/meshplan.db, else ~/.local/share/meshplan/meshplan.db; "
                        "as `meshplan history --db`).",
                        "FILE"};
  QCommandLineOption size{"size", "Screenshot size in pixels (default 1200x800).", "WxH", "1200x800"};

  explicit Options(const QString& ids)
      : view("view",
             "The view to show or render: " + ids +
                 " (default memory); --screenshot also takes 'window' (the whole window with the inputs panel).",
             "NAME", "memory") {}
  void AddTo(QCommandLineParser* parser) const {
    parser->setApplicationDescription("meshplan what-if explorer: memory, step time, cost and reliability of a plan");
    parser->addHelpOption();
    parser->addVersionOption();
    parser->addOptions({screenshot, plan, db, view, size});
  }
};

}  // namespace

int main(int argc, char** argv) {
  const QString ids = meshplan::gui::MainWindow::viewIds().join("|");
  const Options opts(ids);
  if (WantsInfo(argc, argv)) {
    // Help and version print and exit (0) inside process(); a QCoreApplication needs no display.
    QCoreApplication info(argc, argv);
    QCoreApplication::setApplicationName("meshplan-gui");
    QCoreApplication::setApplicationVersion("0.1.0");
    QCommandLineParser parser;
    opts.AddTo(&parser);
    parser.process(info);
    return 0;
  }
  // A screenshot needs no display: render offscreen unless the user chose a platform.
  if (WantsScreenshot(argc, argv) && std::getenv("QT_QPA_PLATFORM") == nullptr)
    setenv("QT_QPA_PLATFORM", "offscreen", 1);
  if (!HasDisplay()) {
    std::fprintf(stderr,
                 "error: meshplan-gui needs a display and none is set (DISPLAY, WAYLAND_DISPLAY and "
                 "QT_QPA_PLATFORM are empty); %s\n",
                 kNoDisplayAdvice);
    return 2;
  }
  g_previous_handler = qInstallMessageHandler(ExitOnFatal);
  QApplication app(argc, argv);
  qInstallMessageHandler(g_previous_handler);
  QApplication::setApplicationName("meshplan-gui");
  QApplication::setApplicationVersion("0.1.0");

  QCommandLineParser parser;
  opts.AddTo(&parser);
  parser.process(app);
  const QCommandLineOption& screenshot = opts.screenshot;
  const QCommandLineOption& plan = opts.plan;
  const QCommandLineOption& view = opts.view;
  const QCommandLineOption& db = opts.db;
  const QCommandLineOption& size = opts.size;

  const QString view_id = parser.value(view);
  const bool whole_window = view_id == "window" && parser.isSet(screenshot);
  if (!whole_window && !meshplan::gui::MainWindow::viewIds().contains(view_id)) {
    std::fprintf(stderr, "error: --view must be one of %s (got \"%s\")\n", qPrintable(ids), qPrintable(view_id));
    return 2;
  }
  int width = 0, height = 0;
  {
    const QStringList wh = parser.value(size).split('x');
    bool ok_w = false, ok_h = false;
    if (wh.size() == 2) {
      width = wh[0].toInt(&ok_w);
      height = wh[1].toInt(&ok_h);
    }
    if (!ok_w || !ok_h || width < 200 || height < 150 || width > 10000 || height > 10000) {
      std::fprintf(stderr, "error: --size must be WxH between 200x150 and 10000x10000 (got \"%s\")\n",
                   qPrintable(parser.value(size)));
      return 2;
    }
  }

  meshplan::gui::MainWindow window;
  if (parser.isSet(plan)) {
    QString err;
    if (!window.scenario()->openPlanFile(parser.value(plan), &err)) {
      std::fprintf(stderr, "error: --plan: %s\n", qPrintable(err));
      return 1;
    }
  }
  if (parser.isSet(db)) window.historyView()->setStorePath(parser.value(db));
  if (!whole_window) window.showView(view_id);

  if (!parser.isSet(screenshot)) {
    window.show();
    return app.exec();
  }

  // Screenshot: the view alone, at the requested size, once its background work is done.
  QImage image;
  if (whole_window) {
    window.resize(width, height);
    window.show();
    QApplication::processEvents();
    window.waitForBackground();
    QApplication::processEvents();
    image = window.grab().toImage();
  } else {
    image = window.renderView(view_id, QSize(width, height));
  }
  const QString out = parser.value(screenshot);
  const bool saved = !image.isNull() && image.save(out, "PNG");
  if (!saved) {
    std::fprintf(stderr, "error: --screenshot: cannot write %s\n", qPrintable(out));
    return 1;
  }
  std::fprintf(stderr, "wrote %s (%dx%d, view %s)\n", qPrintable(out), image.width(), image.height(),
               qPrintable(view_id));
  return 0;
}
