// gui_tests' main: a QApplication on the offscreen platform (unless QT_QPA_PLATFORM is set),
// because ctest's test discovery runs this binary without any ENVIRONMENT property.
#include <gtest/gtest.h>

#include <QApplication>
#include <cstdlib>

int main(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
