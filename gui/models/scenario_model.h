// The GUI's one source of truth: the current core::Scenario (model, GPU, cluster, plan), the
// training-run inputs (tokens, price) and everything core/ and sim/ say about it. Every setter
// re-evaluates at once on the calling (GUI) thread: ValidatePlan, EstimateMemory, EstimateStep,
// EstimateTraining and, for small pipelines, SimulateStreams (microseconds to a few
// milliseconds). Large discrete-event simulations and the failure Monte Carlo run on Workers and
// arrive later (timelineChanged / reliabilityChanged). No model math here: the numbers come from
// the same core/sim calls `meshplan report` makes (cli/report_cmd.cc), with the same defaults.
//
// Thread-safety: GUI thread only. Slots and setters never throw.
#ifndef MESHPLAN_GUI_MODELS_SCENARIO_MODEL_H_
#define MESHPLAN_GUI_MODELS_SCENARIO_MODEL_H_

#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/failures.h"
#include "core/memory.h"
#include "core/presets.h"
#include "core/profile.h"
#include "core/spec_json.h"
#include "gui/models/worker.h"
#include "sim/des.h"
#include "sim/run_sim.h"
#include "sim/step_model.h"

namespace meshplan::gui {

// The parallel degrees the inputs panel offers as lists of values.
enum class Degree { kTp, kPp, kCp, kEp, kVpp };
const char* Name(Degree d);  // "tp", "pp", ...

// One value a list offers, and why it is not allowed (ValidatePlan's errors for that plan).
struct Choice {
  int64_t value = 0;
  bool valid = false;
  QString reason;  // empty when valid
};

// What the current scenario evaluates to. `valid` false: `errors` says why and no estimate is set.
struct Evaluation {
  bool valid = false;
  QStringList errors, warnings, notes;
  core::MemoryReport memory;
  sim::StepEstimate step;
  sim::TrainEstimate train;
  double tokens = 0;   // the training run's tokens (20 per parameter when not set)
  double eval_ms = 0;  // wall time of the synchronous part, for the status bar

  // Discrete-event simulation of one step with its communication streams (sim::SimulateStreams).
  enum class Pending { kNone, kRunning, kReady, kFailed };
  Pending timeline_state = Pending::kNone;
  sim::DesResult timeline;
  QString timeline_error;

  // Failures and checkpoints (sim::EstimateReliability with `meshplan report`'s options: the
  // llama3-405b failure preset, async checkpoints at the optimum, 200 trials, seed 1), plus a
  // histogram sample of wall-clock days from single-trial runs.
  Pending reliability_state = Pending::kNone;
  std::optional<sim::ReliabilityReport> reliability;
  std::vector<double> days_samples;  // one per simulated run
  QString reliability_error;
};

class ScenarioModel : public QObject {
  Q_OBJECT

 public:
  // Starts with Llama-3-70B on 64 H100 SXM (DGX H100): tp 8, pp 4, dp 2, ZeRO-1, SP, selective
  // recompute, gbs 128 x seq 8192 (1M tokens per step).
  explicit ScenarioModel(QObject* parent = nullptr);
  ~ScenarioModel() override;

  const core::Scenario& scenario() const { return s_; }
  const core::PlanSpec& plan() const { return s_.plan; }
  const Evaluation& evaluation() const { return e_; }
  const core::Profile& profile() const { return profile_; }
  const core::FailureModel& failureModel() const { return failures_; }
  // Tokens the user set (0: 20 per parameter, Hoffmann et al. 2022, as `meshplan report`).
  double tokensSetting() const { return tokens_; }

  // Presets and files. False (and `error` set) when the name or file does not load; the scenario
  // is then unchanged. Choosing a GPU picks the built-in cluster of that GPU and choosing a
  // cluster picks its GPU (core::ResolveSpecs, as the CLI).
  bool setModelPreset(const QString& name, QString* error);
  bool loadModelFile(const QString& path, QString* error);  // meshplan JSON or HF config.json
  bool setGpuPreset(const QString& name, QString* error);
  bool setClusterPreset(const QString& name, QString* error);
  bool openPlanFile(const QString& path, QString* error);
  bool savePlanFile(const QString& path, QString* error) const;
  core::PlanFile planFile() const;  // the plan with the model, GPU and cluster embedded

  // Edited specs (the inputs panel's fields).
  void setModel(const core::ModelSpec& m);
  void setGpu(const core::GpuSpec& g);
  void setCluster(const core::ClusterSpec& c);
  // A whole scenario (a plan picked in the search or compare views).
  void setScenario(const core::Scenario& s);

  // The plan. dp follows the GPU count (dp = gpus / (tp*pp*cp), as `meshplan report` without
  // --dp); a pp*vpp that does not divide the layers gets the default uneven split
  // (core::DefaultStageSplit, as the CLI and the search); vpp > 1 switches 1f1b to interleaved and back.
  void setGpus(int64_t gpus);
  void setDegree(Degree d, int64_t value);
  void setPlan(const core::PlanSpec& p);  // any other field (zero, sp, recompute, batch, ...)
  void setTokens(double tokens);          // 0: 20 per parameter
  void setPricePerGpuHour(double usd);

  // The values a list offers for `d` (divisors of the GPU count; vpp 1-8), each checked with
  // core::ValidatePlan on the plan that choosing it would give.
  std::vector<Choice> choices(Degree d) const;
  std::vector<Choice> zeroChoices() const;
  std::vector<Choice> scheduleChoices() const;  // value = static_cast<int64_t>(core::Schedule)
  // The plan that choosing `value` for `d` gives (dp, stage split and schedule adjusted).
  core::PlanSpec planWith(Degree d, int64_t value) const;

  // The equivalent `meshplan report ...` command; edits no flag can express are listed after it
  // as '#' comment lines (save the plan and pass --plan FILE instead).
  QString commandLine() const;

  // Where the specs came from: preset names (empty after an edit or for an embedded spec).
  QString modelRef() const { return model_ref_; }
  QString gpuRef() const { return gpu_ref_; }
  QString clusterRef() const { return cluster_ref_; }
  // True when a spec was edited after it was loaded (the panel marks the preset "(edited)").
  bool modelEdited() const { return !(s_.model == model_base_); }
  bool gpuEdited() const { return !(s_.gpu == gpu_base_); }
  bool clusterEdited() const { return !(s_.cluster == cluster_base_); }
  // "llama3-70b on 64 x h100-sxm: tp 8 . pp 1 . dp 8 ..." for headings.
  QString title() const;

  Worker* timelineWorker() { return &timeline_worker_; }
  Worker* reliabilityWorker() { return &reliability_worker_; }
  // Waits for the background parts of the evaluation (screenshots and tests).
  void waitForBackground();

  // Pipelines with more F/B/W ops than this are simulated on the worker thread.
  static constexpr int64_t kSyncDesOps = 20000;

 signals:
  void scenarioChanged();  // specs or plan changed (inputs panel refreshes its fields)
  void evaluated();        // evaluation() has new synchronous results
  void timelineChanged();
  void reliabilityChanged();

 private:
  void Evaluate();
  void StartReliability();
  core::PlanSpec Normalized(core::PlanSpec p, bool split_changed, bool vpp_changed) const;

  core::Scenario s_;
  core::Profile profile_;
  core::FailureModel failures_;
  double tokens_ = 0;
  Evaluation e_;
  QString model_ref_, gpu_ref_, cluster_ref_;
  core::ModelSpec model_base_;  // the preset/file the model came from (for override flags)
  core::GpuSpec gpu_base_;
  core::ClusterSpec cluster_base_;
  Worker timeline_worker_, reliability_worker_;
  QTimer reliability_debounce_;
};

}  // namespace meshplan::gui

#endif  // MESHPLAN_GUI_MODELS_SCENARIO_MODEL_H_
