#include "gui/models/scenario_model.h"

#include <QElapsedTimer>
#include <QSaveFile>
#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "core/defaults.h"
#include "core/params.h"
#include "core/validate.h"
#include "gui/models/format.h"
#include "sim/evaluate.h"
#include "sim/search.h"

namespace meshplan::gui {
namespace {

// A shell word: quoted when it holds anything but [A-Za-z0-9._/,:=+-].
QString ShellWord(const QString& w) {
  static const QString kSafe = "._/,:=+-";
  bool safe = !w.isEmpty();
  for (QChar c : w)
    if (!(c.isLetterOrNumber() && c.unicode() < 128) && !kSafe.contains(c)) safe = false;
  if (safe) return w;
  QString q = w;
  q.replace("'", "'\\''");
  return "'" + q + "'";
}

// Histogram samples of wall-clock days: this many single-trial runs (seeds 1..kDaysSamples).
constexpr int kDaysSamples = 500;

std::vector<int64_t> Divisors(int64_t n, int64_t cap) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= std::min(n, cap); ++v)
    if (n % v == 0) out.push_back(v);
  return out;
}

QString JoinErrors(const core::Diagnostics& d) {
  QStringList lines;
  for (const auto& e : d.errors()) lines << Q(e.ToString());
  return lines.join("\n");
}

int64_t* DegreeField(core::PlanSpec* p, Degree d) {
  switch (d) {
    case Degree::kTp: return &p->tp;
    case Degree::kPp: return &p->pp;
    case Degree::kCp: return &p->cp;
    case Degree::kEp: return &p->ep;
    case Degree::kVpp: return &p->vpp;
  }
  return &p->tp;
}

}  // namespace

const char* Name(Degree d) {
  switch (d) {
    case Degree::kTp: return "tp";
    case Degree::kPp: return "pp";
    case Degree::kCp: return "cp";
    case Degree::kEp: return "ep";
    case Degree::kVpp: return "vpp";
  }
  return "?";
}

ScenarioModel::ScenarioModel(QObject* parent) : QObject(parent) {
  if (auto p = core::LoadProfile("default"); p.ok()) profile_ = *p;
  if (auto f = core::LoadFailureModel("llama3-405b"); f.ok()) failures_ = *f;
  reliability_debounce_.setSingleShot(true);
  reliability_debounce_.setInterval(150);
  connect(&reliability_debounce_, &QTimer::timeout, this, [this] { StartReliability(); });

  core::ScenarioSources src;
  src.model = {std::nullopt, "llama3-70b", "model", "is required"};
  src.gpu = {std::nullopt, "h100-sxm", "gpu", ""};
  src.cluster = {std::nullopt, "", "cluster", ""};
  core::Diagnostics d;
  std::vector<std::string> notes;
  if (core::ResolveSpecs(src, &s_, &d, &notes)) {
    model_ref_ = "llama3-70b";
    gpu_ref_ = "h100-sxm";
    cluster_ref_ = Q(s_.cluster.name);
  }
  model_base_ = s_.model;
  gpu_base_ = s_.gpu;
  cluster_base_ = s_.cluster;
  core::PlanSpec& p = s_.plan;
  p.gpus = 64;
  p.tp = 8;
  p.pp = 4;
  p.zero = 1;
  p.sequence_parallel = true;
  p.recompute = core::Recompute::kSelective;
  p.seq_len = s_.model.max_seq > 0 ? s_.model.max_seq : 8192;
  p.global_batch = 128;
  p = Normalized(p, true, false);
  Evaluate();
}

ScenarioModel::~ScenarioModel() = default;

core::PlanSpec ScenarioModel::Normalized(core::PlanSpec p, bool split_changed, bool vpp_changed) const {
  const int64_t mp = p.tp * p.pp * p.cp;
  if (p.tp > 0 && p.pp > 0 && p.cp > 0 && p.gpus > 0 && p.gpus % mp == 0) p.dp = p.gpus / mp;
  const int64_t chunks = p.pp * p.vpp;
  const int64_t layers = s_.model.layers;
  if (chunks > 0 && layers > 0 &&
      (split_changed || (!p.stage_layers.empty() && static_cast<int64_t>(p.stage_layers.size()) != chunks) ||
       (p.stage_layers.empty() && layers % chunks != 0))) {
    p.stage_layers.clear();
    core::ApplyDefaultStageSplit(s_.model, &p, nullptr);
  }
  if (vpp_changed) {
    if (p.vpp > 1 && p.schedule == core::Schedule::k1F1B) p.schedule = core::Schedule::kInterleaved;
    if (p.vpp == 1 && p.schedule == core::Schedule::kInterleaved) p.schedule = core::Schedule::k1F1B;
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------
void ScenarioModel::Evaluate() {
  QElapsedTimer timer;
  timer.start();
  timeline_worker_.Cancel();
  reliability_worker_.Cancel();
  reliability_debounce_.stop();
  e_ = Evaluation{};
  core::Diagnostics d;
  core::ValidatePlan(s_.plan, s_.model, s_.gpu, s_.cluster, &d);
  for (const auto& item : d.all()) {
    if (item.severity == core::Diagnostic::Severity::kError) e_.errors << Q(item.ToString());
    else e_.warnings << Q(item.ToString());
  }
  if (d.has_errors()) {
    e_.eval_ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    emit evaluated();
    emit timelineChanged();
    emit reliabilityChanged();
    return;
  }
  e_.valid = true;
  const core::Scenario& s = s_;
  // meshplan report's evaluation; the reliability runs on the worker below (StartReliability).
  sim::EvaluateOptions eo;
  eo.tokens = tokens_;
  sim::ScenarioEvaluation ev = sim::EvaluateScenario(s, profile_, eo);
  e_.memory = std::move(ev.memory);
  e_.step = std::move(ev.step);
  e_.tokens = ev.tokens;
  if (ev.default_tokens) e_.notes << "tokens: 20 per parameter (Chinchilla, as meshplan report)";
  e_.train = ev.train;

  // The pipeline timeline: small pipelines at once, large ones on the worker.
  const int64_t microbatches = s.plan.Microbatches();
  const bool three_kinds =
      s.plan.schedule == core::Schedule::kZeroBubble || s.plan.schedule == core::Schedule::kDualPipe;
  const int64_t ops = s.plan.pp * s.plan.vpp * microbatches * (three_kinds ? 3 : 2);
  // Each rank's passes split by stream (compute, TP/CP/EP and DP communication, sends).
  std::vector<sim::StageStreams> streams =
      sim::StageStreamCosts(s.model, s.plan, s.gpu, s.cluster, profile_, e_.step.stages);
  if (ops <= kSyncDesOps) {
    auto r = sim::SimulateStreams(s.plan, streams, microbatches, sim::DesOptions{});
    if (r.ok()) {
      e_.timeline = std::move(r.value());
      e_.timeline_state = Evaluation::Pending::kReady;
    } else {
      e_.timeline_error = Q(r.status().message());
      e_.timeline_state = Evaluation::Pending::kFailed;
    }
  } else {
    e_.timeline_state = Evaluation::Pending::kRunning;
    timeline_worker_.Start(QString("simulating %1 pipeline ops").arg(ops),
                           [this, plan = s.plan, streams = std::move(streams), microbatches](Worker::Context& ctx) {
                             auto r = sim::SimulateStreams(plan, streams, microbatches, sim::DesOptions{});
                             if (ctx.cancelled()) return;
                             auto shared = std::make_shared<core::Result<sim::DesResult>>(std::move(r));
                             ctx.Post([this, shared] {
                               if (shared->ok()) {
                                 e_.timeline = std::move(shared->value());
                                 e_.timeline_state = Evaluation::Pending::kReady;
                               } else {
                                 e_.timeline_error = Q(shared->status().message());
                                 e_.timeline_state = Evaluation::Pending::kFailed;
                               }
                               emit timelineChanged();
                             });
                           });
  }
  e_.reliability_state = Evaluation::Pending::kRunning;
  e_.eval_ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  reliability_debounce_.start();
  emit evaluated();
  emit timelineChanged();
  emit reliabilityChanged();
}

void ScenarioModel::StartReliability() {
  if (!e_.valid) return;
  if (failures_.components.empty() && failures_.name.empty()) {
    e_.reliability_state = Evaluation::Pending::kFailed;
    e_.reliability_error = "the llama3-405b failure preset did not load";
    emit reliabilityChanged();
    return;
  }
  reliability_worker_.Start("failures: Monte Carlo", [this, s = s_, mem = e_.memory, step = e_.step, f = failures_,
                                                      tokens = e_.tokens](Worker::Context& ctx) {
    sim::ReliabilityOptions ro = sim::ReportReliabilityOptions(tokens);
    // A dense ladder for the goodput curve (30 s to 2 days); the sweep feeds only the chart.
    for (int i = 0; i <= 48; ++i) ro.sweep_intervals_s.push_back(30.0 * std::pow(5760.0, i / 48.0));
    auto rel = sim::EstimateReliability(s, mem, step, f, ro);
    if (!rel.ok()) {
      ctx.Post([this, msg = Q(rel.status().message())] {
        e_.reliability_error = msg;
        e_.reliability_state = Evaluation::Pending::kFailed;
        emit reliabilityChanged();
      });
      return;
    }
    ctx.SetProgress(0.2);
    // Single-trial runs for the histogram; only their wall-clock days are read.
    sim::RunSimOptions so;
    so.trials = 1;
    so.interval_s = rel->interval_s;
    so.work_s = rel->work_s;
    so.horizon_s = rel->horizon_s;
    so.billed_gpus = static_cast<double>(s.plan.gpus);
    so.tokens_per_s = rel->tokens_per_s;
    std::vector<double> days;
    days.reserve(kDaysSamples);
    for (int k = 1; k <= kDaysSamples && !ctx.cancelled(); ++k) {
      so.seed = static_cast<uint64_t>(k);
      auto one = sim::SimulateRun(rel->params, so);
      if (one.ok()) days.push_back(one->days.mean);
      ctx.SetProgress(0.2 + 0.8 * k / kDaysSamples);
    }
    auto report = std::make_shared<sim::ReliabilityReport>(std::move(rel.value()));
    ctx.Post([this, report, days = std::move(days)]() mutable {
      e_.reliability = std::move(*report);
      e_.days_samples = std::move(days);
      e_.reliability_state = Evaluation::Pending::kReady;
      emit reliabilityChanged();
    });
  });
}

void ScenarioModel::waitForBackground() {
  if (reliability_debounce_.isActive()) {
    reliability_debounce_.stop();
    StartReliability();
  }
  timeline_worker_.WaitForIdle();
  reliability_worker_.WaitForIdle();
}

// ---------------------------------------------------------------------------------------------
// Setters
// ---------------------------------------------------------------------------------------------
bool ScenarioModel::setModelPreset(const QString& name, QString* error) {
  auto m = core::LoadModel(name.toStdString());
  if (!m.ok()) {
    if (error) *error = Q(m.status().message());
    return false;
  }
  model_ref_ = name;
  model_base_ = *m;
  s_.model = *m;
  if (s_.model.max_seq > 0) s_.plan.seq_len = s_.model.max_seq;
  s_.plan = Normalized(s_.plan, true, false);
  emit scenarioChanged();
  Evaluate();
  return true;
}

bool ScenarioModel::loadModelFile(const QString& path, QString* error) {
  // core::LoadModel reads meshplan's format or a Hugging Face config.json (by its model_type).
  return setModelPreset(path, error);
}

bool ScenarioModel::setGpuPreset(const QString& name, QString* error) {
  core::ScenarioSources src;
  src.model = {s_.model, "", "model", ""};
  src.gpu = {std::nullopt, name.toStdString(), "gpu", ""};
  src.cluster = {std::nullopt, "", "cluster", ""};
  core::Scenario s = s_;
  core::Diagnostics d;
  std::vector<std::string> notes;
  if (!core::ResolveSpecs(src, &s, &d, &notes)) {
    if (error) *error = Q(d.ToStatus().message());
    return false;
  }
  s_.gpu = gpu_base_ = s.gpu;
  s_.cluster = cluster_base_ = s.cluster;
  // The default precision on a GPU without it (bf16 on a V100): fp16, as `meshplan report` does.
  core::ApplyDefaultPrecision(s_.gpu, &s_.plan, &notes);
  gpu_ref_ = name;
  cluster_ref_ = Q(s.cluster.name);
  emit scenarioChanged();
  Evaluate();
  return true;
}

bool ScenarioModel::setClusterPreset(const QString& name, QString* error) {
  core::ScenarioSources src;
  src.model = {s_.model, "", "model", ""};
  src.gpu = {std::nullopt, "", "gpu", ""};
  src.cluster = {std::nullopt, name.toStdString(), "cluster", ""};
  core::Scenario s = s_;
  core::Diagnostics d;
  std::vector<std::string> notes;
  if (!core::ResolveSpecs(src, &s, &d, &notes)) {
    if (error) *error = Q(d.ToStatus().message());
    return false;
  }
  s_.gpu = gpu_base_ = s.gpu;
  s_.cluster = cluster_base_ = s.cluster;
  gpu_ref_ = Q(s.gpu.name);
  cluster_ref_ = name;
  emit scenarioChanged();
  Evaluate();
  return true;
}

bool ScenarioModel::openPlanFile(const QString& path, QString* error) {
  auto text = core::ReadTextFile(path.toStdString());
  if (!text.ok()) {
    if (error) *error = Q(text.status().message());
    return false;
  }
  auto file = core::ParsePlanFileJson(*text);
  if (!file.ok()) {
    if (error) *error = path + ":\n" + Q(file.status().message());
    return false;
  }
  auto s = core::ResolvePlanFile(*file);
  if (!s.ok()) {
    if (error) *error = path + ":\n" + Q(s.status().message());
    return false;
  }
  // Embedded specs keep their names; only a reference is a preset the command line can name.
  model_ref_ = file->model_name ? Q(*file->model_name) : QString();
  gpu_ref_ = file->gpu_name ? Q(*file->gpu_name) : QString();
  cluster_ref_ = file->cluster_name ? Q(*file->cluster_name) : QString();
  // An embedded spec equal to the preset of its name is that preset (files `meshplan plan` wrote).
  auto same_as_preset = [](auto loaded, const auto& spec) { return loaded.ok() && *loaded == spec; };
  if (model_ref_.isEmpty() && same_as_preset(core::LoadModel(s->model.name), s->model)) model_ref_ = Q(s->model.name);
  if (gpu_ref_.isEmpty() && same_as_preset(core::LoadGpu(s->gpu.name), s->gpu)) gpu_ref_ = Q(s->gpu.name);
  if (cluster_ref_.isEmpty() && same_as_preset(core::LoadCluster(s->cluster.name), s->cluster))
    cluster_ref_ = Q(s->cluster.name);
  s_ = *s;
  model_base_ = s_.model;
  gpu_base_ = s_.gpu;
  cluster_base_ = s_.cluster;
  emit scenarioChanged();
  Evaluate();
  return true;
}

core::PlanFile ScenarioModel::planFile() const {
  core::PlanFile file;
  file.plan = s_.plan;
  file.model = s_.model;
  file.gpu = s_.gpu;
  file.cluster = s_.cluster;
  return file;
}

bool ScenarioModel::savePlanFile(const QString& path, QString* error) const {
  const std::string text = core::PlanFileToJson(planFile());
  QSaveFile out(path);  // writes a temporary file and renames it: no truncated plan on failure
  if (!out.open(QIODevice::WriteOnly) ||
      out.write(text.data(), static_cast<qint64>(text.size())) != static_cast<qint64>(text.size()) || !out.commit()) {
    if (error) *error = "cannot write " + path + ": " + out.errorString();
    return false;
  }
  return true;
}

void ScenarioModel::setModel(const core::ModelSpec& m) {
  if (m == s_.model) return;
  const bool layers_changed = m.layers != s_.model.layers;
  s_.model = m;
  s_.plan = Normalized(s_.plan, layers_changed, false);
  emit scenarioChanged();
  Evaluate();
}

void ScenarioModel::setGpu(const core::GpuSpec& g) {
  if (g == s_.gpu) return;
  s_.gpu = g;
  emit scenarioChanged();
  Evaluate();
}

void ScenarioModel::setCluster(const core::ClusterSpec& c) {
  if (c == s_.cluster) return;
  s_.cluster = c;
  emit scenarioChanged();
  Evaluate();
}

void ScenarioModel::setScenario(const core::Scenario& s) {
  if (!(s.model == s_.model)) model_ref_.clear();
  if (!(s.gpu == s_.gpu)) gpu_ref_.clear();
  if (!(s.cluster == s_.cluster)) cluster_ref_.clear();
  s_ = s;
  emit scenarioChanged();
  Evaluate();
}

void ScenarioModel::setGpus(int64_t gpus) {
  if (gpus == s_.plan.gpus) return;
  core::PlanSpec p = s_.plan;
  p.gpus = gpus;
  s_.plan = Normalized(p, false, false);
  emit scenarioChanged();
  Evaluate();
}

core::PlanSpec ScenarioModel::planWith(Degree d, int64_t value) const {
  core::PlanSpec p = s_.plan;
  *DegreeField(&p, d) = value;
  return Normalized(p, d == Degree::kPp || d == Degree::kVpp, d == Degree::kVpp);
}

void ScenarioModel::setDegree(Degree d, int64_t value) {
  core::PlanSpec p = planWith(d, value);
  if (p == s_.plan) return;
  s_.plan = p;
  emit scenarioChanged();
  Evaluate();
}

void ScenarioModel::setPlan(const core::PlanSpec& plan) {
  if (plan == s_.plan) return;
  const bool split = plan.pp != s_.plan.pp || plan.vpp != s_.plan.vpp;
  s_.plan = Normalized(plan, split && plan.stage_layers == s_.plan.stage_layers, false);
  emit scenarioChanged();
  Evaluate();
}

void ScenarioModel::setTokens(double tokens) {
  if (tokens == tokens_) return;
  tokens_ = tokens;
  emit scenarioChanged();
  Evaluate();
}

void ScenarioModel::setPricePerGpuHour(double usd) {
  if (usd == s_.cluster.price_per_gpu_hour_usd) return;
  s_.cluster.price_per_gpu_hour_usd = usd;
  emit scenarioChanged();
  Evaluate();
}

// ---------------------------------------------------------------------------------------------
// Choices
// ---------------------------------------------------------------------------------------------
std::vector<Choice> ScenarioModel::choices(Degree d) const {
  std::vector<int64_t> values;
  const int64_t gpus = std::max<int64_t>(s_.plan.gpus, 1);
  switch (d) {
    case Degree::kTp: values = Divisors(gpus, 128); break;
    case Degree::kPp: values = Divisors(gpus, std::max<int64_t>(s_.model.layers, 1)); break;
    case Degree::kCp: values = Divisors(gpus, 64); break;
    case Degree::kEp: values = Divisors(gpus, s_.model.moe ? std::max<int64_t>(s_.model.moe->experts, 1) : 8); break;
    case Degree::kVpp: values = {1, 2, 3, 4, 5, 6, 7, 8}; break;
  }
  core::PlanSpec copy = s_.plan;
  const int64_t current = *DegreeField(&copy, d);
  if (std::find(values.begin(), values.end(), current) == values.end()) {
    values.push_back(current);
    std::sort(values.begin(), values.end());
  }
  std::vector<Choice> out;
  for (int64_t v : values) {
    const core::PlanSpec p = planWith(d, v);
    core::Diagnostics diag;
    core::ValidatePlan(p, s_.model, s_.gpu, s_.cluster, &diag);
    QString reason = JoinErrors(diag);
    // dp follows the GPU count; say so when this value leaves no dp (ValidatePlan then sees the
    // previous dp in its product).
    const int64_t mp = p.tp * p.pp * p.cp;
    if (mp > 0 && p.gpus % mp != 0)
      reason = QString("tp*pp*cp = %1*%2*%3 = %4 does not divide gpus = %5, so no dp fits\n")
                   .arg(p.tp)
                   .arg(p.pp)
                   .arg(p.cp)
                   .arg(mp)
                   .arg(p.gpus) +
               reason;
    out.push_back({v, !diag.has_errors(), reason});
  }
  return out;
}

std::vector<Choice> ScenarioModel::zeroChoices() const {
  std::vector<Choice> out;
  for (int z = 0; z <= 3; ++z) {
    core::PlanSpec p = s_.plan;
    p.zero = z;
    core::Diagnostics diag;
    core::ValidatePlan(p, s_.model, s_.gpu, s_.cluster, &diag);
    out.push_back({z, !diag.has_errors(), JoinErrors(diag)});
  }
  return out;
}

std::vector<Choice> ScenarioModel::scheduleChoices() const {
  std::vector<Choice> out;
  for (auto sch : {core::Schedule::kGpipe, core::Schedule::k1F1B, core::Schedule::kInterleaved,
                   core::Schedule::kZeroBubble, core::Schedule::kDualPipe}) {
    core::PlanSpec p = s_.plan;
    p.schedule = sch;
    core::Diagnostics diag;
    core::ValidatePlan(p, s_.model, s_.gpu, s_.cluster, &diag);
    out.push_back({static_cast<int64_t>(sch), !diag.has_errors(), JoinErrors(diag)});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------
QString ScenarioModel::title() const {
  const auto& p = s_.plan;
  QString t = QString("%1 on %2 x %3 (%4): tp %5 . pp %6 . dp %7 . cp %8")
                  .arg(Q(s_.model.name), QString::number(p.gpus), Q(s_.gpu.name), Q(s_.cluster.name))
                  .arg(p.tp)
                  .arg(p.pp)
                  .arg(p.dp)
                  .arg(p.cp);
  if (p.ep > 1) t += QString(" . ep %1").arg(p.ep);
  if (p.vpp > 1) t += QString(" . vpp %1").arg(p.vpp);
  t += QString(" | zero %1 | sp %2 | recompute %3 | mbs %4 . gbs %5 . seq %6 | %7 | %8")
           .arg(p.zero)
           .arg(p.sequence_parallel ? "on" : "off")
           .arg(core::Name(p.recompute))
           .arg(p.micro_batch)
           .arg(p.global_batch)
           .arg(p.seq_len)
           .arg(core::Name(p.schedule))
           .arg(core::Name(p.precision));
  return t;
}

QString ScenarioModel::commandLine() const {
  QStringList args{"meshplan", "report"};
  QStringList notes;
  auto arg = [&](const QString& flag, const QString& value) { args << flag << ShellWord(value); };
  auto num = [](int64_t v) { return QString::number(v); };
  // Specs: preset names, plus the model override flags the CLI has.
  if (!model_ref_.isEmpty()) {
    arg("--model", model_ref_);
    const core::ModelSpec& b = model_base_;
    const core::ModelSpec& m = s_.model;
    // Every changed dimension as its flag, so the line does not depend on what the CLI derives;
    // head_dim only where the CLI's derivation (core::ApplyModelOverrides) would differ.
    core::ModelOverrides o;
    auto flag = [&](int64_t value, int64_t preset, std::optional<int64_t>* field, const char* name) {
      if (value != preset) arg(name, num(value)), *field = value;
    };
    flag(m.layers, b.layers, &o.layers, "--layers");
    flag(m.hidden, b.hidden, &o.hidden, "--hidden");
    flag(m.heads, b.heads, &o.heads, "--heads");
    flag(m.kv_heads, b.kv_heads, &o.kv_heads, "--kv-heads");
    flag(m.ffn_hidden, b.ffn_hidden, &o.ffn_hidden, "--ffn");
    flag(m.vocab, b.vocab, &o.vocab, "--vocab");
    flag(m.sliding_window, b.sliding_window, &o.sliding_window, "--sliding-window");
    flag(m.global_attention_every, b.global_attention_every, &o.global_attention_every, "--global-attention-every");
    core::ModelSpec expressed = core::ApplyModelOverrides(b, o, nullptr, nullptr);
    if (expressed.head_dim != m.head_dim) arg("--head-dim", num(m.head_dim)), expressed.head_dim = m.head_dim;
    if (m.mlp != b.mlp) arg("--mlp", core::Name(m.mlp)), expressed.mlp = m.mlp;
    if (m.attention != b.attention) arg("--attention", core::Name(m.attention)), expressed.attention = m.attention;
    expressed.name = m.name;  // the CLI renames a modified model
    if (!(expressed == m)) notes << "the model has edits no flag expresses";
  } else {
    arg("--model", Q(s_.model.name));
    notes << "model \"" + Q(s_.model.name) + "\" is not a preset";
  }
  if (!gpu_ref_.isEmpty()) arg("--gpu", gpu_ref_);
  else notes << "GPU \"" + Q(s_.gpu.name) + "\" is not a preset";
  if (!gpu_ref_.isEmpty() && !(s_.gpu == gpu_base_)) notes << "the GPU has edits no flag expresses";
  if (!cluster_ref_.isEmpty()) arg("--cluster", cluster_ref_);
  else notes << "cluster \"" + Q(s_.cluster.name) + "\" is not a preset";
  if (!cluster_ref_.isEmpty() && !(s_.cluster == cluster_base_)) {
    if (s_.cluster.price_per_gpu_hour_usd != cluster_base_.price_per_gpu_hour_usd)
      notes << QString("price per GPU-hour $%1 (the preset's is $%2; the CLI has no flag for it)")
                   .arg(s_.cluster.price_per_gpu_hour_usd)
                   .arg(cluster_base_.price_per_gpu_hour_usd);
    core::ClusterSpec c = s_.cluster;
    c.price_per_gpu_hour_usd = cluster_base_.price_per_gpu_hour_usd;
    if (!(c == cluster_base_)) notes << "the cluster has edits no flag expresses";
  }
  // The plan: every field, so the line does not depend on the CLI's defaults.
  const core::PlanSpec& p = s_.plan;
  const core::PlanSpec d;
  arg("--gpus", num(p.gpus));
  arg("--tp", num(p.tp));
  arg("--pp", num(p.pp));
  arg("--dp", num(p.dp));
  arg("--cp", num(p.cp));
  if (p.ep != 1) arg("--ep", num(p.ep));
  if (p.etp != 1) arg("--etp", num(p.etp));
  if (p.vpp != 1) arg("--vpp", num(p.vpp));
  arg("--zero", num(p.zero));
  if (p.sharding != d.sharding) arg("--sharding", core::Name(p.sharding));
  if (p.hsdp_shard_size != d.hsdp_shard_size) arg("--hsdp-shard", num(p.hsdp_shard_size));
  args << (p.sequence_parallel ? "--sp" : "--no-sp");
  arg("--recompute", core::Name(p.recompute));
  if (p.recompute_layers != 0) arg("--recompute-layers", num(p.recompute_layers));
  if (p.recompute_early_stop) args << "--recompute-early-stop";
  if (p.vocab_divisible_by != 1) arg("--vocab-divisible-by", num(p.vocab_divisible_by));
  if (p.recompute == core::Recompute::kSelective && p.recompute_modules != d.recompute_modules)
    arg("--recompute-modules", Q(core::RecomputeModulesString(p.recompute_modules)));
  arg("--mbs", num(p.micro_batch));
  arg("--gbs", num(p.global_batch));
  arg("--seq", num(p.seq_len));
  arg("--schedule", core::Name(p.schedule));
  if (p.vpp_group > 0) arg("--vpp-group", num(p.vpp_group));
  if (p.pp_flushes != 1) arg("--pp-flushes", num(p.pp_flushes));
  arg("--precision", core::Name(p.precision));
  if (p.bf16_layers_at_start != d.bf16_layers_at_start) arg("--bf16-layers-at-start", num(p.bf16_layers_at_start));
  if (p.bf16_layers_at_end != d.bf16_layers_at_end) arg("--bf16-layers-at-end", num(p.bf16_layers_at_end));
  if (p.optimizer != d.optimizer) arg("--optimizer", core::Name(p.optimizer));
  if (p.dtypes.weights != d.dtypes.weights) arg("--weights-dtype", core::Name(p.dtypes.weights));
  if (p.dtypes.grads != d.dtypes.grads) arg("--grads-dtype", core::Name(p.dtypes.grads));
  if (p.dtypes.master_weights != d.dtypes.master_weights) arg("--master-dtype", core::Name(p.dtypes.master_weights));
  if (p.dtypes.optimizer_states != d.dtypes.optimizer_states)
    arg("--moments-dtype", core::Name(p.dtypes.optimizer_states));
  if (p.offload_optimizer != d.offload_optimizer) arg("--offload-optimizer", core::Name(p.offload_optimizer));
  if (p.offload_params != d.offload_params) arg("--offload-params", core::Name(p.offload_params));
  if (p.offload_activation_layers > 0) arg("--offload-activations", num(p.offload_activation_layers));
  if (p.offload_modules != 0)
    arg("--offload-modules", QString::fromStdString(core::OffloadModulesString(p.offload_modules)));
  if (p.cp_kind != d.cp_kind) arg("--cp-kind", core::Name(p.cp_kind));
  if (p.placement != d.placement) arg("--placement", Q(core::PlacementString(p.placement)));
  if (p.segment_nodes != d.segment_nodes) arg("--segment", num(p.segment_nodes));
  if (!p.overlap_grad_reduce) args << "--no-overlap-grad-reduce";
  if (!p.overlap_param_gather) args << "--no-overlap-param-gather";
  if (!p.grad_accum_fusion) args << "--no-grad-accum-fusion";
  if (!p.grad_prescale) args << "--no-grad-prescale";
  if (p.ep_overlap) args << "--ep-overlap";
  if (p.delay_wgrad) args << "--delay-wgrad";
  if (p.offload_checkpoints) args << "--offload-checkpoints";
  if (p.tp_overlap != d.tp_overlap) arg("--tp-overlap", core::Name(p.tp_overlap));
  if (p.zero3_gather != d.zero3_gather) arg("--zero3-gather", core::Name(p.zero3_gather));
  if (p.fp8_scaling != d.fp8_scaling) arg("--fp8-scaling", core::Name(p.fp8_scaling));
  if (p.cross_entropy != d.cross_entropy) arg("--cross-entropy", core::Name(p.cross_entropy));
  if (p.deferred_head_wgrad != d.deferred_head_wgrad) arg("--defer-head-wgrad", num(p.deferred_head_wgrad));
  if (p.elementwise != d.elementwise) arg("--elementwise", core::Name(p.elementwise));
  if (p.repeat_kv) args << "--repeat-kv";
  if (p.dtensor_tp) args << "--dtensor-tp";
  if (p.torch_cp) args << "--torch-cp";
  if (p.keep_pp_outputs) args << "--keep-pp-outputs";
  if (p.keep_lp_grads) args << "--keep-lp-grads";
  if (p.fp8_param_gather) args << "--fp8-param-gather";
  if (p.fp8_attention) args << "--fp8-attention";
  if (p.transformer_engine) args << "--transformer-engine";
  if (!p.moe_grouped_gemm) args << "--no-moe-grouped-gemm";
  if (p.moe_router_padding) args << "--moe-router-padding";
  if (p.moe_op_fuser) args << "--moe-op-fuser";
  if (p.moe_imbalance != d.moe_imbalance) arg("--moe-imbalance", QString::number(p.moe_imbalance, 'g', 17));
  if (p.cuda_context_bytes > 0) arg("--cuda-context-mib", num((p.cuda_context_bytes + (int64_t{1} << 20) - 1) >> 20));
  if (p.moe_dispatcher != d.moe_dispatcher) arg("--moe-dispatcher", core::Name(p.moe_dispatcher));
  if (p.moe_routing != d.moe_routing) arg("--moe-routing", core::Name(p.moe_routing));
  if (p.moe_host != d.moe_host) arg("--moe-host", core::Name(p.moe_host));
  if (p.moe_probs != d.moe_probs) arg("--moe-probs", core::Name(p.moe_probs));
  if (p.expert_bias != d.expert_bias) arg("--expert-bias", core::Name(p.expert_bias));
  if (!p.stage_layers.empty()) {
    QStringList parts;
    for (int64_t v : p.stage_layers) parts << num(v);
    arg("--stage-layers", parts.join(","));
  }
  if (tokens_ > 0) arg("--tokens", QString::number(tokens_, 'g', 17));
  QString line = args.join(" ");
  for (const auto& n : notes) line += "\n# not expressed: " + n + " (File > Save plan, then --plan FILE)";
  return line;
}

}  // namespace meshplan::gui
