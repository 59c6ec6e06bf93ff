// meshplan calibrate fit FILES... --name NAME: fit a Profile to meshplan-run measurements, store
// the measurements, the predictions before and after and the profile (docs/calibration.md).
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/profile_ref.h"
#include "cli/store_flags.h"
#include "core/measurement.h"
#include "core/presets.h"
#include "core/published.h"
#include "core/spec_json.h"
#include "sim/fit.h"
#include "sim/step_model.h"

namespace meshplan::cli {
namespace {

struct Loaded {
  std::string path;
  core::Measurement m;
};

// The scenario a measurement's embedded plan describes (its model, GPU and cluster).
core::Result<core::Scenario> ScenarioOf(const core::Measurement& m, const std::string& path) {
  if (!m.plan || !m.plan->model || !m.plan->gpu || !m.plan->cluster)
    return core::Status::InvalidArgument(path + ": plan: needs its model, gpu and cluster embedded");
  return core::Scenario{*m.plan->model, *m.plan->gpu, *m.plan->cluster, m.plan->plan};
}

// Measured rows as samples: executed compute ops, GEMM sweep rows, collective sweep rows, and
// executed collectives of MPI runs (per call).
void Collect(const Loaded& f, std::vector<sim::ComputeSample>* compute, std::vector<sim::CollectiveSample>* comm) {
  const core::Measurement& m = f.m;
  for (const auto& r : m.ops) {
    if (r.modeled || r.time_s <= 0 || r.calls_per_step <= 0) continue;
    if (r.kind == core::OpKind::kCollective || r.kind == core::OpKind::kP2p) {
      if (r.group_size < 2 || !m.plan || !m.plan->cluster) continue;
      const core::GroupSpan span = core::SpanOfGroup(r.group, m.plan->plan, *m.plan->cluster);
      comm->push_back({r.kind == core::OpKind::kP2p ? core::CollectiveKind::kSendRecv : r.collective, span.Crosses(),
                       r.group_size, r.bytes, r.time_s / static_cast<double>(r.calls_per_step)});
      continue;
    }
    sim::ComputeSample s;
    s.name = r.name;
    s.op.kind = r.kind;
    s.op.pass = r.pass;
    s.op.dtype = r.dtype;
    s.op.m = r.m, s.op.n = r.n, s.op.k = r.k, s.op.batch = r.batch;
    s.op.attn_batch = r.attn_batch, s.op.heads = r.heads, s.op.seq_q = r.seq_q, s.op.seq_kv = r.seq_kv;
    s.op.head_dim_qk = r.head_dim_qk, s.op.head_dim_v = r.head_dim_v;
    s.op.bytes = r.bytes;
    s.calls = static_cast<double>(r.calls_per_step);
    s.time_s = r.time_s;
    s.source = f.path;
    compute->push_back(s);
  }
  for (const auto& g : m.gemm) {
    sim::ComputeSample s;
    s.name = "bench_gemm";
    s.op.kind = core::OpKind::kGemm;
    s.op.m = g.shape.m, s.op.n = g.shape.n, s.op.k = g.shape.k, s.op.dtype = g.shape.dtype;
    s.calls = 1;
    s.time_s = g.time_s;
    s.source = f.path;
    compute->push_back(s);
  }
  for (const auto& c : m.collectives) {
    if (c.ranks < 2 || c.time_s <= 0) continue;
    // One host (the cpu backend, or no more ranks than the host's GPUs): inside a scale-up domain.
    const bool scale_out =
        m.hardware.backend != "cpu" && c.ranks > static_cast<int>(std::max<size_t>(1, m.hardware.gpus.size()));
    comm->push_back({c.kind, scale_out, c.ranks, c.size_bytes, c.time_s});
  }
}

// The cpu backend has no published peaks: a device whose compute peak is the fastest GEMM seen
// (or the measured ceiling, if higher) and whose bandwidth is the fastest memory-bound op seen.
// REQUIRES: xs holds at least one GEMM, attention or memory-bound sample.
// The fit then raises both to its highest efficiency (FitOptions::rescale_device).
core::GpuSpec CpuDevice(const std::vector<Loaded>& files, const std::vector<sim::ComputeSample>& xs) {
  core::GpuSpec g;
  const core::Measurement& first = files.front().m;
  g.name = "cpu:" + first.hardware.hostname;
  g.source = "fitted by meshplan calibrate from the cpu backend (" + first.hardware.description +
             "): peaks are the highest throughput the fit found; memory is this host's RAM";
  double flops = 0, bw = 0, gemm_bw = 0;
  for (const auto& f : files)
    if (f.m.peak) flops = std::max(flops, f.m.peak->flops_per_s);
  for (const auto& s : xs) {
    const double per_s = s.calls / s.time_s;
    if (s.op.kind == core::OpKind::kGemm || s.op.kind == core::OpKind::kAttention)
      flops = std::max(flops, s.op.Flops() * per_s);
    if (s.op.kind == core::OpKind::kGemm)  // A, B and C moved once: a lower bound on the bandwidth
      gemm_bw = std::max(gemm_bw, static_cast<double>((s.op.m * s.op.k + s.op.k * s.op.n + s.op.m * s.op.n) *
                                                      s.op.batch * core::DtypeBytes(s.op.dtype)) *
                                      per_s);
    if (s.op.kind == core::OpKind::kMemoryBound || s.op.kind == core::OpKind::kOptimizer)
      bw = std::max(bw, static_cast<double>(s.op.bytes) * per_s);
  }
  // Without memory-bound samples (a GEMM sweep alone) the bandwidth is the fastest GEMM traffic
  // seen, so the GEMM roofline's memory side never predicts more than a sample measured.
  if (bw == 0) bw = gemm_bw;
  for (core::Dtype d : {core::Dtype::kFp32, core::Dtype::kTf32, core::Dtype::kBf16, core::Dtype::kFp16,
                        core::Dtype::kFp8, core::Dtype::kInt8})
    g.peak_flops_per_s[d] = flops;
  g.hbm_bytes_per_s = bw;
  g.hbm_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  // The cpu's power is not measured: tdp_w 0, and predictions take the plan GPU's (a note says so).
  g.tdp_w = 0;
  g.source += "; power not measured (tdp_w 0)";
  // The ranks' spread of speed is not measured either (Sinha et al.'s GPU figure is not a CPU's):
  // 0, so a multi-rank prediction on this device is not paced by a slowest rank.
  g.speed_spread = 0;
  g.speed_spread_source = "not measured on the cpu backend: 0 (no slowest-rank pace)";
  return g;
}

// --name must be something `--profile NAME` can find again.
bool NameOk(const std::string& name) {
  if (!name.empty() && name != "default" && !core::LooksLikePath(name)) return true;
  std::cerr << "error: --name: must be a profile name, not \"default\" or a path (got \"" << name << "\")\n";
  return false;
}

// -o: the profile JSON as a file too (empty path: nothing to do).
bool WriteOutput(const std::string& path, const std::string& json) {
  if (path.empty()) return true;
  if (core::Status st = core::WriteTextFileAtomically(path, json); !st.ok()) {
    std::cerr << "error: -o: " << st.message() << "\n";
    return false;
  }
  return true;
}

// --format json: the profile, its stored version and the fit report in one object.
void PrintJson(const core::StoredProfile& sp, int64_t version) {
  std::cout << "{\"profile\": " << sp.profile_json << ", \"version\": " << version
            << ", \"report\": " << sp.fit_report_json << "}\n";
}

struct Options {
  std::vector<std::string> files;
  std::string name, db, gpu, start = "default", format = "table", output;
};

int Run(const Options& o) {
  if (!NameOk(o.name)) return 2;
  if (o.format != "table" && o.format != "json") {
    std::cerr << "error: --format must be table or json (got \"" << o.format << "\")\n";
    return 2;
  }
  std::vector<Loaded> files;
  std::set<std::string> backends;
  for (const auto& path : o.files) {
    auto text = core::ReadTextFile(path);
    auto m = text.ok() ? core::ParseMeasurementJson(*text) : core::Result<core::Measurement>(text.status());
    if (!m.ok()) {
      std::cerr << "error: " << path << ": " << m.status().message() << "\n";
      return 2;
    }
    backends.insert(m->hardware.backend);
    files.push_back({path, *m});
  }
  if (backends.size() > 1) {
    std::cerr << "error: the files were measured on different backends (cpu and cuda): fit each separately\n";
    return 2;
  }
  std::vector<sim::ComputeSample> compute;
  std::vector<sim::CollectiveSample> comm;
  for (const auto& f : files) Collect(f, &compute, &comm);
  auto start = LoadProfileRef(o.start, o.db);
  if (!start.ok()) {
    std::cerr << "error: --profile: " << start.status().message() << "\n";
    return 2;
  }

  const bool cpu = *backends.begin() == "cpu";
  core::GpuSpec device;
  sim::FitOptions fo;
  if (cpu && compute.empty()) {
    device.name = "cpu:" + files.front().m.hardware.hostname;  // collectives only: no peaks needed
  } else if (cpu) {
    device = CpuDevice(files, compute);
    fo.rescale_device = true;
  } else if (!o.gpu.empty()) {
    auto g = core::LoadGpu(o.gpu);
    if (!g.ok()) {
      std::cerr << "error: --gpu: " << g.status().message() << "\n";
      return 2;
    }
    device = *g;
  } else {
    for (const auto& f : files)
      if (f.m.plan && f.m.plan->gpu) device = *f.m.plan->gpu;
    // Microbenchmarks only: the preset of the device they ran on, when its name maps to one.
    for (const auto& f : files) {
      if (!device.name.empty() || f.m.hardware.gpus.empty()) continue;
      const std::string preset = core::GpuPresetForDevice(f.m.hardware.gpus.front());
      if (preset.empty()) continue;
      auto g = core::LoadGpu(preset);
      if (g.ok()) {
        device = *g;
        // (stderr under --format json, so stdout stays one JSON document)
        (o.format == "json" ? std::cerr : std::cout) << "# GPU preset " << preset << " from the device name \""
                                                     << f.m.hardware.gpus.front().name << "\" (--gpu to override)\n";
      }
    }
    if (device.name.empty()) {
      std::cerr << "error: --gpu: no file names its GPU and the device name matches no preset: give the GPU preset\n";
      return 2;
    }
  }
  // The device's own memory against the preset's capacity (the fit verdicts' figure).
  if (!cpu)
    for (const auto& f : files)
      if (!f.m.hardware.gpus.empty()) {
        const std::string note = core::DeviceCapacityNote(device, f.m.hardware.gpus.front());
        if (!note.empty()) (o.format == "json" ? std::cerr : std::cout) << "# " << note << "\n";
        break;
      }
  auto fit = sim::FitProfile(compute, comm, device, *start, fo);
  if (!fit.ok()) {
    std::cerr << "error: " << fit.status().message() << "\n";
    return 1;
  }
  core::Profile prof = fit->profile;
  prof.name = o.name;
  prof.source = "meshplan calibrate fit on " + std::to_string(files.size()) + " measurement file(s) from " +
                files.front().m.hardware.hostname + " (" + files.front().m.hardware.description + "), starting from " +
                start->name;

  // Store the measurements (with the step predicted by the fitted profile), the predictions of
  // each measured plan before and after, and the profile.
  auto store = OpenStoreFromFlag(o.db);
  if (!store.ok()) {
    std::cerr << "error: " << StoreSourceFromFlag(o.db) << ": " << store.status().message() << "\n";
    return 1;
  }
  core::StoredProfile sp;
  sp.name = o.name;
  sp.profile_json = core::ProfileToJson(prof);
  sp.fit_report_json = sim::FitReportToJson(fit->report);
  std::string step_lines;
  for (const auto& f : files) {
    core::StoredMeasurement sm;
    sm.source = f.path;
    sm.backend = f.m.hardware.backend;
    sm.mode = f.m.mode;
    sm.hostname = f.m.hardware.hostname;
    sm.json = core::MeasurementToJson(f.m);
    sm.profile_name = o.name;
    if (f.m.step) {
      sm.step_time_s = f.m.step->time_s;
      sm.mfu = f.m.step->mfu;
    }
    if (f.m.plan) {
      auto sc = ScenarioOf(f.m, f.path);
      if (!sc.ok()) {
        std::cerr << "error: " << sc.status().message() << "\n";
        return 2;
      }
      core::Scenario s = *sc;
      auto plan_id = (*store)->PutPlan({0, PlanLabel(s), core::PlanFileToJson(*f.m.plan), ""});
      if (!plan_id.ok()) {
        std::cerr << "error: " << StoreSourceFromFlag(o.db) << ": " << plan_id.status().message() << "\n";
        return 1;
      }
      sm.plan_id = *plan_id;
      const sim::StepEstimate before = sim::EstimateStep(s.model, s.plan, s.gpu, s.cluster, *start);
      std::vector<std::string> notes;
      ApplyProfileDevice(prof, &s, &notes);
      const sim::StepEstimate after = sim::EstimateStep(s.model, s.plan, s.gpu, s.cluster, prof);
      sm.predicted_step_s = after.time_s;
      for (const auto& [pname, est] :
           {std::pair<std::string, const sim::StepEstimate*>{start->name, &before}, {o.name, &after}}) {
        auto id = (*store)->PutPrediction({0, *plan_id, pname, sim::kStepModelVersion, est->time_s, est->mfu, "", ""});
        if (!id.ok()) {
          std::cerr << "error: " << StoreSourceFromFlag(o.db) << ": " << id.status().message() << "\n";
          return 1;
        }
      }
      if (f.m.step) {
        char line[400];
        std::snprintf(line, sizeof line, "  %-40s %12.4f %12.4f %8.1f %12.4f %8.1f\n", f.path.c_str(), f.m.step->time_s,
                      before.time_s, 100 * (before.time_s / f.m.step->time_s - 1), after.time_s,
                      100 * (after.time_s / f.m.step->time_s - 1));
        step_lines += line;
      }
    }
    for (const auto& r : f.m.ops)
      sm.ops.push_back(
          {r.section, r.name, core::Name(r.kind), core::Name(r.pass), r.calls_per_step, r.time_s, 0, r.modeled});
    auto id = (*store)->PutMeasurement(sm);
    if (!id.ok()) {
      std::cerr << "error: " << StoreSourceFromFlag(o.db) << ": " << id.status().message() << "\n";
      return 1;
    }
    sp.measurement_ids.push_back(*id);
  }
  auto saved = (*store)->PutProfile(sp);
  if (!saved.ok()) {
    std::cerr << "error: " << StoreSourceFromFlag(o.db) << ": " << saved.status().message() << "\n";
    return 1;
  }
  if (!WriteOutput(o.output, sp.profile_json)) return 1;
  if (o.format == "json") {
    PrintJson(sp, saved->version);
    return 0;
  }
  std::cout << "# meshplan calibrate fit: profile " << o.name << " from " << files.size() << " file(s), "
            << compute.size() << " compute and " << comm.size() << " collective samples, on " << device.name << "\n";
  std::cout << sim::FitReportTable(fit->report);
  if (!step_lines.empty()) {
    char line[400];
    std::snprintf(line, sizeof line, "# %-40s %12s %12s %8s %12s %8s\n", "step of", "measured_s", "before_s", "err_%",
                  "after_s", "err_%");
    std::cout << line << step_lines;
  }
  if (prof.device)
    std::cout << "# device " << prof.device->name << ": compute peak "
              << prof.device->peak_flops_per_s.begin()->second / 1e12 << " TFLOP/s, memory "
              << prof.device->hbm_bytes_per_s / 1e9 << " GB/s (the highest the fit found)\n";
  std::cout << "# saved profile " << o.name << " version " << saved->version << " to " << StorePathFromFlag(o.db)
            << "; use it with: meshplan report --profile " << o.name << (o.db.empty() ? std::string() : " --db " + o.db)
            << " ...\n";
  return 0;
}

// Fits to published per-layer timings (Korthikanti 2022 Table 4 in the validation set): the
// kernels of a GPU generation as a published paper measured them, no hardware needed.
int RunPublished(const Options& o, const std::string& dataset) {
  if (!NameOk(o.name)) return 2;
  auto text = core::ReadTextFile(dataset);
  auto timings = text.ok() ? core::LoadPublishedLayerTimings(*text)
                           : core::Result<std::vector<core::PublishedLayerTiming>>(text.status());
  if (!timings.ok()) {
    std::cerr << "error: --dataset: " << timings.status().message() << "\n";
    return 2;
  }
  if (timings->empty()) {
    std::cerr << "error: --dataset: " << dataset << " holds no per-layer timings (measured.other.forward_ms)\n";
    return 2;
  }
  std::vector<sim::LayerSample> layers;
  for (const auto& t : *timings) layers.push_back({t.id, t.scenario, t.forward_s, t.backward_s});
  const core::GpuSpec& gpu = layers.front().scenario.gpu;
  for (const auto& l : layers)
    if (l.scenario.gpu.name != gpu.name) {
      std::cerr << "error: --dataset: the timings are on different GPUs (" << gpu.name << ", " << l.scenario.gpu.name
                << "): a profile describes one\n";
      return 2;
    }
  auto start = LoadProfileRef(o.start, o.db);
  if (!start.ok()) {
    std::cerr << "error: --profile: " << start.status().message() << "\n";
    return 2;
  }
  auto fit = sim::FitProfile({}, {}, gpu, *start, {}, layers);
  if (!fit.ok()) {
    std::cerr << "error: " << fit.status().message() << "\n";
    return 1;
  }
  core::Profile prof = fit->profile;
  prof.name = o.name;
  prof.source = "meshplan calibrate published: fitted to " + std::to_string(layers.size()) + " per-layer timings on " +
                gpu.name + " (" + timings->front().source + ", ...) in " + dataset + ", starting from " + start->name;
  core::StoredProfile sp;
  sp.name = o.name;
  sp.profile_json = core::ProfileToJson(prof);
  sp.fit_report_json = sim::FitReportToJson(fit->report);
  if (!WriteOutput(o.output, sp.profile_json)) return 1;
  auto store = OpenStoreFromFlag(o.db);
  auto saved = store.ok() ? (*store)->PutProfile(sp) : core::Result<core::StoredProfile>(store.status());
  if (!saved.ok()) {
    std::cerr << "error: " << StoreSourceFromFlag(o.db) << ": " << saved.status().message() << "\n";
    return 1;
  }
  if (o.format == "json") {
    PrintJson(sp, saved->version);
    return 0;
  }
  std::cout << "# meshplan calibrate published: profile " << o.name << " from " << layers.size()
            << " per-layer timings on " << gpu.name << " (" << dataset << ")\n";
  std::cout << sim::FitReportTable(fit->report);
  std::cout << "# saved profile " << o.name << " version " << saved->version << " to " << StorePathFromFlag(o.db)
            << (o.output.empty() ? std::string() : " and " + o.output) << "\n";
  return 0;
}

}  // namespace

void AddCalibrateCommand(CLI::App* app, int* exit_code) {
  auto* cmd = app->add_subcommand("calibrate", "Fit the simulator to measurements (meshplan-run JSON)");
  cmd->require_subcommand(1);
  auto* fit = cmd->add_subcommand("fit", "Fit a profile to measurement files and store it under --name");
  auto o = std::make_shared<Options>();
  fit->add_option("files", o->files, "meshplan-run measurement JSON files (runs, bench gemm, bench collectives)")
      ->required();
  fit->add_option("--name", o->name, "Name to store the profile under (a new version if it exists)")->required();
  AddDbFlag(fit, &o->db);
  fit->add_option("--gpu", o->gpu, "GPU preset the efficiencies are fractions of (default: the files' plan GPU)");
  fit->add_option("--profile", o->start, "Starting profile; what the samples do not cover is kept from it");
  fit->add_option("--format", o->format, "table|json");
  fit->add_option("-o,--output", o->output, "Also write the profile JSON here");
  fit->callback([o, exit_code] { *exit_code = Run(*o); });

  auto* pub = cmd->add_subcommand("published", "Fit a profile to published per-layer timings (validation set)");
  auto po = std::make_shared<Options>();
  auto dataset = std::make_shared<std::string>();
  pub->add_option("--dataset", *dataset, "Records in the format of shared/validation/published.json")->required();
  pub->add_option("--name", po->name, "Name to store the profile under")->required();
  AddDbFlag(pub, &po->db);
  pub->add_option("--profile", po->start, "Starting profile; what the timings do not cover is kept from it");
  pub->add_option("--format", po->format, "table|json");
  pub->add_option("-o,--output", po->output, "Also write the profile JSON here (e.g. presets/profiles/NAME.json)");
  pub->callback([po, dataset, exit_code] { *exit_code = RunPublished(*po, *dataset); });
}

}  // namespace meshplan::cli
