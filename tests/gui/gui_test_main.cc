// gui_tests' main: a QApplication on the offscreen platform (unless QT_QPA_PLATFORM is set),
// because ctest's test discovery runs this binary without any ENVIRONMENT property. MESHPLAN_DB
// names a file that does not exist, so the History view of every MainWindow here starts empty
// instead of reading the developer's own result store (tests that want a store give a path).
#include <gtest/gtest.h>
#include <unistd.h>

#include <QApplication>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  const std::string no_db =
      (tmp / ("meshplan-gui-tests-no-store-" + std::to_string(getpid())) / "meshplan.db").string();
  setenv("MESHPLAN_DB", no_db.c_str(), 1);
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
