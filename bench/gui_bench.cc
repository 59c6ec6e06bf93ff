// The desktop app's what-if loop: one change of a parallel degree in the inputs panel and the
// whole synchronous update it causes (the scenario's evaluation, every model and view, the
// panel), on the largest preset plan. The target is one frame, 16 ms.
// Run: build/release/bench/meshplan_gui_bench (offscreen unless QT_QPA_PLATFORM is set).
#include <benchmark/benchmark.h>

#include <QApplication>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gui/main_window.h"
#include "gui/models/scenario_model.h"

namespace meshplan::gui {
namespace {

// Llama 3 405B on 16,384 GPUs (PP 16, global batch 2,048), TP flipped between 4 and 8: each
// iteration is one user change. The counter eval_ms is the scenario's own timer for its
// evaluation alone.
void BM_GuiTpChangeLlama405B16384Gpus(benchmark::State& state) {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  ScenarioModel* s = w.scenario();
  QString err;
  if (!s->setModelPreset("llama3-405b", &err)) {
    state.SkipWithError(err.toStdString().c_str());
    return;
  }
  s->setGpus(16384);
  core::PlanSpec p = s->plan();
  p.global_batch = 2048;
  s->setPlan(p);
  s->setDegree(Degree::kPp, 16);
  QApplication::processEvents();
  s->setDegree(Degree::kTp, 4);  // warm up: first chart layout, font caches
  s->setDegree(Degree::kTp, 8);
  int i = 0;
  double eval_ms = 0;
  for (auto _ : state) {
    s->setDegree(Degree::kTp, (i++ % 2) ? 8 : 4);
    if (!s->evaluation().valid) {
      state.SkipWithError("the plan stopped being valid");
      return;
    }
    eval_ms += s->evaluation().eval_ms;
  }
  state.counters["eval_ms"] = benchmark::Counter(eval_ms, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_GuiTpChangeLlama405B16384Gpus)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace meshplan::gui

int main(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  // A store that does not exist: the History view never reads the developer's own.
  const std::string no_db =
      (std::filesystem::temp_directory_path() / "meshplan-gui-bench-no-store" / "meshplan.db").string();
  setenv("MESHPLAN_DB", no_db.c_str(), 1);
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
