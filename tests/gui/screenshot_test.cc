// A screenshot of every view, as `meshplan-gui --screenshot` renders it (MainWindow::renderView):
// the image exists, has the size asked for, and is a picture rather than one flat fill (many
// colours, no colour covering almost everything). Also the PNG export of a chart. The history view
// is given a SQLite store with a few measurements (in a temporary directory), since its default
// store does not exist under gui_tests.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <QHash>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>

#include "core/result_store.h"
#include "gui/main_window.h"
#include "gui/views/history_view.h"

namespace meshplan::gui {
namespace {

struct Colours {
  int distinct = 0;
  double top_share = 0;  // share of the pixels with the most common colour
};

Colours CountColours(const QImage& image) {
  QHash<QRgb, int> counts;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) ++counts[image.pixel(x, y)];
  int top = 0;
  for (int c : counts) top = std::max(top, c);
  return {static_cast<int>(counts.size()), static_cast<double>(top) / (image.width() * image.height())};
}

// Three runs of one plan predicted with the default profile, three with a fitted one, and the
// profile: what `meshplan calibrate fit` leaves behind.
void FillStore(const QString& path) {
  auto store = core::OpenSqliteResultStore(path.toStdString());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  core::StoredPlan p;
  p.label = "tiny tp1 pp1 dp1 on 1x cpu";
  p.plan_json = "{}";
  auto plan = (*store)->PutPlan(p);
  ASSERT_TRUE(plan.ok());
  const double measured[] = {0.21, 0.43, 0.88};
  for (int fitted = 0; fitted < 2; ++fitted)
    for (double m : measured) {
      core::StoredMeasurement s;
      s.plan_id = *plan;
      s.source = "runs/tiny.json";
      s.backend = "cpu";
      s.mode = "single_process";
      s.hostname = "node7";
      s.step_time_s = m;
      s.predicted_step_s = fitted ? m * 1.03 : m * 0.7;
      s.profile_name = fitted ? "cpu-fit" : "default";
      s.json = "{}";
      ASSERT_TRUE((*store)->PutMeasurement(s).ok());
    }
  core::StoredProfile fit;
  fit.name = "cpu-fit";
  fit.profile_json = "{}";
  fit.measurement_ids = {1, 2, 3};
  ASSERT_TRUE((*store)->PutProfile(fit).ok());
}

class GuiScreenshotTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GuiScreenshotTest, RendersAPicture) {
  MainWindow w;
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  if (std::string(GetParam()) == "history") {
    FillStore(dir.filePath("meshplan.db"));
    w.historyView()->setStorePath(dir.filePath("meshplan.db"));
    ASSERT_TRUE(w.historyView()->loaded()) << w.historyView()->message().toStdString();
  }
  const QSize size(1000, 700);
  const QImage image = w.renderView(GetParam(), size);
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), size);
  const Colours c = CountColours(image);
  // Text, bars and lines give hundreds of colours (anti-aliasing); a blank view has a handful.
  EXPECT_GT(c.distinct, 50) << GetParam();
  EXPECT_LT(c.top_share, 0.9) << GetParam();
  // The view went back to its tab, and a second render gives the same size.
  EXPECT_EQ(w.renderView(GetParam(), QSize(640, 480)).size(), QSize(640, 480));
}

INSTANTIATE_TEST_SUITE_P(AllViews, GuiScreenshotTest,
                         ::testing::Values("memory", "step", "timeline", "search", "reliability", "cost", "compare",
                                           "explain", "history"),
                         [](const auto& test) { return std::string(test.param); });

TEST(GuiScreenshotTest, EveryViewIdIsTested) {
  EXPECT_EQ(MainWindow::viewIds(), QStringList({"memory", "step", "timeline", "search", "reliability", "cost",
                                                "compare", "explain", "history"}));
  EXPECT_EQ(MainWindow().view("nope"), nullptr);
}

TEST(GuiScreenshotTest, ExportsAChartAsPng) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  const QString path = dir.filePath("memory.png");
  QString err;
  ASSERT_TRUE(w.exportChart(w.view("memory"), path, &err)) << err.toStdString();
  QImage png(path);
  ASSERT_FALSE(png.isNull());
  EXPECT_GT(CountColours(png).distinct, 50);
#if MESHPLAN_GUI_HAVE_SVG
  // With Qt SVG the same chart exports as an SVG document.
  const QString svg = dir.filePath("memory.svg");
  ASSERT_TRUE(w.exportChart(w.view("memory"), svg, &err)) << err.toStdString();
  QFile f(svg);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  EXPECT_TRUE(f.readAll().contains("<svg"));
#else
  // Without Qt SVG, SVG export says why instead of writing a broken file.
  EXPECT_FALSE(w.exportChart(w.view("memory"), dir.filePath("memory.svg"), &err));
  EXPECT_TRUE(err.contains("Qt SVG"));
  EXPECT_FALSE(QFileInfo::exists(dir.filePath("memory.svg")));
#endif
}

}  // namespace
}  // namespace meshplan::gui
