// meshplan-run: executes a plan's StepGraph on a backend and measures it, runs the GEMM and
// collective microbenchmarks, or checks a layout's numerics against one process (verify).
//
//   meshplan-run --plan plan.json [--backend cpu|cuda] [--steps K] [--output m.json]
//   mpirun -np N meshplan-run --plan plan.json ...        (N = plan.gpus: every rank, real groups)
//   meshplan-run --plan big.json --rank R [--working-set-only]   (rank slice: rank R of a large plan)
//   meshplan-run bench gemm [--backend cpu] [--format json]
//   mpirun -np N meshplan-run bench collectives [--min-bytes 8B] [--max-bytes 64MiB]
//   meshplan-run verify --plan plan.json [--seed N] [--format table|json]   (the reference layout)
//   mpirun -np N meshplan-run verify --plan plan.json --reference           (layout vs reference)
//
// Exit codes: 0 ok, 1 an error (one line on stderr; "cuda backend: ..." when no GPU can be used),
// 2 a usage error. Under MPI only world rank 0 prints and writes files.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/diagnostics.h"
#include "core/presets.h"
#include "core/spec_json.h"
#include "core/units.h"
#include "core/validate.h"
#include "runtime/backend.h"
#include "runtime/bench.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/host_comm.h"
#include "runtime/measurement.h"
#include "runtime/numerics.h"

#ifndef MESHPLAN_HAVE_MPI
#define MESHPLAN_HAVE_MPI 0
#endif
#if MESHPLAN_HAVE_MPI
#include "runtime/mpi/mpi_comm.h"
#endif

namespace meshplan::runtime {
namespace {

constexpr const char* kTool = "meshplan-run 0.1.0";

struct CommonFlags {
  std::string backend = "cpu";
  std::string format = "table";
  std::string output;
  int threads = 0;
};

// The process's view of the job: the world communicator (MPI or this process alone).
struct Job {
  std::unique_ptr<HostComm> world;
  bool mpi = false;
  bool leader() const { return world->rank() == 0; }
};

int Fail(const Job& job, const std::string& message, int code = 1) {
  std::cerr << "meshplan-run: " << (job.world->size() > 1 ? "rank " + std::to_string(job.world->rank()) + ": " : "")
            << message << "\n";
  return code;
}

Hardware DetectHardware(const Backend& backend, const Job& job) {
  Hardware h;
  h.backend = Name(backend.kind());
  h.description = backend.Description();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) h.hostname = host;
  h.world_size = job.world->size();
  if (auto gpus = ListCudaDevices(); gpus.ok()) h.gpus = *gpus;
  return h;
}

core::Result<std::unique_ptr<Backend>> OpenBackend(const CommonFlags& f) {
  BackendKind kind{};
  if (!FromName(f.backend, &kind))
    return core::Status::InvalidArgument("--backend must be cpu or cuda (got \"" + f.backend + "\")");
  if (kind == BackendKind::kCpu) {
    CpuBackendOptions o;
    o.threads = f.threads;
    return MakeCpuBackend(o);
  }
  return MakeBackend(kind);
}

// Writes JSON to --output (atomically), or prints the table / JSON on stdout. Leader only.
int Emit(const Job& job, const CommonFlags& f, const Measurement& m, const std::string& table) {
  if (!job.leader()) return 0;
  const std::string json = MeasurementToJson(m);
  if (!f.output.empty()) {
    if (core::Status st = core::WriteTextFileAtomically(f.output, json); !st.ok())
      return Fail(job, "--output: " + st.message());
    std::cerr << "wrote " << f.output << "\n";
  }
  if (f.format == "json") std::cout << json;
  else std::cout << table;
  return 0;
}

bool ParseShape(const std::string& text, GemmShape* out) {
  // "MxNxK" or "MxNxK:dtype"
  GemmShape s;
  std::string dims = text, dtype = "bf16";
  if (auto colon = text.find(':'); colon != std::string::npos) {
    dims = text.substr(0, colon);
    dtype = text.substr(colon + 1);
  }
  long long m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(dims.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 || k <= 0) return false;
  if (!core::FromName(dtype, &s.dtype)) return false;
  s.m = m;
  s.n = n;
  s.k = k;
  *out = s;
  return true;
}

// ---- meshplan-run --plan ------------------------------------------------------------------

struct RunFlags {
  std::string plan;
  int steps = 3;
  int warmup = 1;
  int64_t rank = -1;
  double peak_tflops = 0;
  int hang_rank = -1;
  int kill_rank = -1;
  bool working_set_only = false;
};

// Reads, resolves and validates a plan file: 0, or the exit code after printing why.
int LoadPlan(const Job& job, const std::string& path, core::Scenario* out) {
  if (path.empty()) return Fail(job, "--plan is required (write one with `meshplan plan ... -o plan.json`)", 2);
  auto text = core::ReadTextFile(path);
  if (!text.ok()) return Fail(job, "--plan: " + text.status().message());
  auto file = core::ParsePlanFileJson(*text);
  if (!file.ok()) return Fail(job, path + ": " + file.status().message());
  auto scenario = core::ResolvePlanFile(*file);
  if (!scenario.ok()) return Fail(job, path + ": " + scenario.status().message());
  core::Diagnostics d;
  core::ValidatePlan(scenario->plan, scenario->model, scenario->gpu, scenario->cluster, &d);
  if (d.has_errors()) {
    for (const auto& e : d.errors()) std::cerr << "meshplan-run: " << path << ": " << e.ToString() << "\n";
    return 1;
  }
  *out = *scenario;
  return 0;
}

int RunPlan(Job& job, const CommonFlags& f, const RunFlags& r) {
  auto scenario = std::make_unique<core::Scenario>();
  if (int rc = LoadPlan(job, r.plan, scenario.get()); rc != 0) return rc;
  const core::PlanSpec& plan = scenario->plan;

  auto backend = OpenBackend(f);
  if (!backend.ok()) return Fail(job, backend.status().message());

  ExecutorOptions opts;
  opts.steps = r.steps;
  opts.warmup_steps = r.warmup;
  opts.hold_training_state = !r.working_set_only;
  if (r.peak_tflops > 0)
    opts.peak = DevicePeak{r.peak_tflops * 1e12, plan.precision, "given on the command line (--peak-tflops)"};
  std::unique_ptr<PlanGroups> groups;
  RankGroups view;
  if (job.world->size() > 1) {
    if (r.rank >= 0)
      return Fail(job, "--rank is for one process (a rank slice); under mpirun each rank runs itself", 2);
    auto g = SplitPlanGroups(*job.world, plan);
    if (!g.ok()) return Fail(job, g.status().message() + " (mpirun -np " + std::to_string(plan.gpus) + ")");
    groups = std::move(g).value();
    view = groups->view;
    opts.rank = job.world->rank();
    opts.mode = "mpi";
  } else {
    opts.rank = r.rank >= 0 ? r.rank : 0;
    opts.mode = plan.gpus > 1 ? "rank_slice" : "single_process";
  }
  // Test hooks for the watchdog: one rank hangs, or dies, where the others wait in a collective.
  if (r.hang_rank == job.world->rank() && job.world->size() > 1) {
    std::cerr << "meshplan-run: rank " << r.hang_rank << ": hanging on purpose (--debug-hang-rank)\n";
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (r.kill_rank == job.world->rank() && job.world->size() > 1) {
    std::cerr << "meshplan-run: rank " << r.kill_rank << ": killing itself (--debug-kill-rank)\n";
    std::raise(SIGKILL);
  }

  auto result = ExecuteStep(**backend, *scenario, opts, view);
  if (!result.ok()) return Fail(job, result.status().message());
  Measurement m = std::move(result).value();
  m.tool = kTool;
  m.hardware = DetectHardware(**backend, job);
  core::PlanFile pf;
  pf.plan = plan;
  pf.model = scenario->model;
  pf.gpu = scenario->gpu;
  pf.cluster = scenario->cluster;
  m.plan = pf;
  return Emit(job, f, m, StepTable(m));
}

// ---- meshplan-run verify -------------------------------------------------------------------

struct VerifyFlags {
  std::string plan;
  uint64_t seed = 1;
  bool reference = false;
  double tolerance = kNumericsTolerance;
  int perturb_rank = -1;
};

// One real training step of the plan's model (runtime/numerics.h): one process runs the
// reference layout (tp = pp = dp = 1), mpirun the plan's layout. --reference under MPI: rank 0
// also runs the reference and compares; every rank exits with the verdict.
int VerifyCmd(Job& job, const CommonFlags& f, const VerifyFlags& v) {
  auto scenario = std::make_unique<core::Scenario>();
  if (int rc = LoadPlan(job, v.plan, scenario.get()); rc != 0) return rc;
  const core::PlanSpec& plan = scenario->plan;
  if (core::Status st = CheckNumericsSupport(scenario->model, plan); !st.ok())
    return Fail(job, v.plan + ": " + st.message());
  if (!(v.tolerance > 0)) return Fail(job, "verify: --tolerance must be > 0", 2);
  if (v.perturb_rank >= plan.gpus)
    return Fail(job, "verify: --debug-perturb-rank must name one of the plan's " + std::to_string(plan.gpus) + " ranks",
                2);
  auto backend = OpenBackend(f);
  if (!backend.ok()) return Fail(job, backend.status().message());

  NumericsOptions opts;
  opts.seed = v.seed;
  opts.perturb_rank = v.perturb_rank;
  const bool distributed = job.world->size() > 1;
  core::Scenario run = *scenario;
  std::unique_ptr<PlanGroups> groups;
  RankGroups view;
  if (distributed) {
    auto g = SplitPlanGroups(*job.world, plan);
    if (!g.ok()) return Fail(job, g.status().message() + " (mpirun -np " + std::to_string(plan.gpus) + ")");
    groups = std::move(g).value();
    view = groups->view;
    opts.rank = job.world->rank();
  } else {
    run.plan = ReferencePlan(plan);  // one process: the whole model as one rank
  }
  if (v.perturb_rank >= 0 && job.leader())
    std::cerr << "meshplan-run: verify: rank " << v.perturb_rank
              << " scales its gradients by 1.01 before the DP reduction (--debug-perturb-rank)\n";
  auto result = RunNumericsStep(**backend, run, opts, view);
  if (!result.ok()) return Fail(job, result.status().message());
  NumericsResult r = std::move(result).value();
  if (!distributed && plan.gpus > 1)
    r.notes.push_back("one process runs the reference layout (tp=pp=dp=1), not the plan's " +
                      std::to_string(plan.gpus) + " ranks: run under mpirun -np " + std::to_string(plan.gpus) +
                      " for those");

  std::unique_ptr<NumericsResult> ref;
  std::unique_ptr<NumericsComparison> cmp;
  if (v.reference && !distributed)
    r.notes.push_back(plan.gpus == 1
                          ? std::string("--reference: a one-rank plan is its own reference; nothing to compare")
                          : "--reference: one process runs the reference itself; run under mpirun -np " +
                                std::to_string(plan.gpus) + " to compare the plan's layout with it");
  if (v.reference && distributed) {
    // 0: compared and within tolerance, 1: a difference, 2: the reference failed. Broadcast so
    // that every rank exits with the verdict (the others wait here while rank 0 computes).
    float verdict = 0;
    std::string error;
    if (job.leader()) {
      core::Scenario rs = *scenario;
      rs.plan = ReferencePlan(plan);
      NumericsOptions ro = opts;
      ro.rank = 0;
      ro.perturb_rank = -1;
      auto rr = RunNumericsStep(**backend, rs, ro, RankGroups{});
      if (!rr.ok()) {
        error = "reference: " + rr.status().message();
        verdict = 2;
      } else {
        ref = std::make_unique<NumericsResult>(std::move(rr).value());
        cmp = std::make_unique<NumericsComparison>(CompareNumerics(r, *ref, v.tolerance));
        verdict = cmp->ok ? 0.0f : 1.0f;
      }
    }
    if (core::Status st = job.world->Broadcast(&verdict, 1, 0, "verify verdict"); !st.ok())
      return Fail(job, st.message());
    if (verdict == 2) return job.leader() ? Fail(job, error) : 1;
    if (verdict != 0 && !job.leader()) return 1;  // rank 0 prints the comparison and the error
  }
  if (job.leader()) {
    std::cout << (f.format == "json" ? NumericsJson(r, ref.get(), cmp.get()) : NumericsTable(r, ref.get(), cmp.get()));
    std::cout.flush();
  }
  if (cmp != nullptr && !cmp->ok) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "verify: max relative difference %.3e (%s) exceeds the tolerance %.1e",
                  cmp->max_rel_diff, cmp->worst.c_str(), cmp->tolerance);
    return Fail(job, msg);
  }
  return 0;
}

// ---- meshplan-run bench gemm | collectives --------------------------------------------------

int BenchGemmCmd(Job& job, const CommonFlags& f, const std::vector<std::string>& shapes, const TimingOptions& t) {
  auto backend = OpenBackend(f);
  if (!backend.ok()) return Fail(job, backend.status().message());
  std::vector<GemmShape> sweep;
  for (const auto& s : shapes) {
    GemmShape g;
    if (!ParseShape(s, &g))
      return Fail(job, "--shape \"" + s + "\": expected MxNxK or MxNxK:dtype (e.g. 4096x4096x4096:bf16)", 2);
    sweep.push_back(g);
  }
  if (sweep.empty()) sweep = DefaultGemmSweep((*backend)->kind());
  Measurement m;
  m.tool = kTool;
  m.mode = "bench_gemm";
  m.hardware = DetectHardware(**backend, job);
  for (const GemmShape& s : sweep) {
    auto r = BenchGemm(**backend, s, t);
    if (!r.ok()) {
      // The default sweep skips what this backend cannot run (fp8 on cpu), saying so; a shape the
      // command line asked for is measured or the command fails naming it.
      if (r.status().code() == core::Status::Code::kUnavailable && shapes.empty()) {
        m.notes.push_back(r.status().message());
        continue;
      }
      return Fail(job, "--shape " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + ":" +
                           core::Name(s.dtype) + ": " + r.status().message());
    }
    m.gemm.push_back(*r);
  }
  std::string table = "# meshplan-run bench gemm: " + m.hardware.description + "\n" + GemmBenchTable(m.gemm);
  for (const auto& n : m.notes) table += "# note: " + n + "\n";
  return Emit(job, f, m, table);
}

int BenchCollectivesCmd(Job& job, const CommonFlags& f, const std::string& min_bytes, const std::string& max_bytes,
                        const std::string& kinds_text, const TimingOptions& t) {
  int64_t lo = 0, hi = 0;
  if (!core::ParseByteSize(min_bytes, &lo) || !core::ParseByteSize(max_bytes, &hi) || lo < 1 || hi < lo)
    return Fail(job, "--min-bytes/--max-bytes: sizes with a unit, min <= max (e.g. 8B, 64MiB)", 2);
  std::vector<core::CollectiveKind> kinds;
  std::stringstream ss(kinds_text);
  for (std::string item; std::getline(ss, item, ',');) {
    bool found = false;
    for (int k = 0; k < 6; ++k) {
      if (item == core::Name(static_cast<core::CollectiveKind>(k))) {
        kinds.push_back(static_cast<core::CollectiveKind>(k));
        found = true;
      }
    }
    if (!found)
      return Fail(job,
                  "--collectives: unknown \"" + item +
                      "\" (all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv)",
                  2);
  }
  auto backend = OpenBackend(f);
  if (!backend.ok()) return Fail(job, backend.status().message());
  auto rows = BenchCollectives(**backend, *job.world, kinds, SizeSweep(lo, hi), t);
  if (!rows.ok()) return Fail(job, rows.status().message());
  Measurement m;
  m.tool = kTool;
  m.mode = "bench_collectives";
  m.hardware = DetectHardware(**backend, job);
  m.collectives = *rows;
  if (job.world->size() == 1) m.notes.push_back("one process: collectives are copies; run under mpirun for a group");
  int64_t wrong = 0;
  for (const auto& r : m.collectives) wrong += r.wrong;
  std::string table =
      "# meshplan-run bench collectives: " + m.hardware.description + "\n" + CollectiveBenchTable(m.collectives);
  table += "# out of bounds values: " + std::to_string(wrong) + (wrong ? " FAILED\n" : " OK\n");
  for (const auto& n : m.notes) table += "# note: " + n + "\n";
  const int rc = Emit(job, f, m, table);
  if (wrong != 0) return Fail(job, std::to_string(wrong) + " wrong values in the collectives' results");
  return rc;
}

int Main(int argc, char** argv) {
  CLI::App app{"meshplan-run: execute a plan's StepGraph on a backend and measure it; microbenchmarks"};
  app.set_version_flag("--version", kTool);
  CommonFlags common;
  RunFlags run;
  double watchdog_s = 120;
  auto add_common = [&](CLI::App* a) {
    a->add_option("--backend", common.backend, "cpu | cuda")->capture_default_str();
    a->add_option("--format", common.format, "table | json (stdout)")->check(CLI::IsMember({"table", "json"}));
    a->add_option("--output,-o", common.output, "Also write the measurement JSON here");
    a->add_option("--threads", common.threads, "cpu backend: GEMM threads (default: OpenMP's)");
  };
  add_common(&app);
  app.add_option("--plan", run.plan, "Plan file (meshplan plan -o plan.json)");
  app.add_option("--steps", run.steps, "Timed steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--warmup", run.warmup, "Untimed steps first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--rank", run.rank, "One process: run this global rank's ops (rank slice)");
  app.add_option("--peak-tflops", run.peak_tflops, "Device peak for MFU (default: cpu measures a GEMM ceiling)");
  app.add_flag("--working-set-only", run.working_set_only,
               "Hold the op buffers only, not the rank's model states and activations (a rank slice of a plan "
               "larger than this machine)");
  app.add_option("--watchdog-timeout", watchdog_s, "MPI: abort the job when a collective waits this long (s)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--debug-hang-rank", run.hang_rank, "Test hook: this rank hangs before the first step")->group("");
  app.add_option("--debug-kill-rank", run.kill_rank, "Test hook: this rank kills itself before the first step")
      ->group("");

  auto* verify = app.add_subcommand(
      "verify", "One real training step of the plan's model: loss and gradient checksums (mpirun: the plan's layout)");
  VerifyFlags vflags;
  verify->add_option("--plan", vflags.plan, "Plan file (meshplan plan -o plan.json)");
  verify->add_option("--seed", vflags.seed, "Seed of the weights and the data")->capture_default_str();
  verify->add_flag("--reference", vflags.reference,
                   "Under mpirun: rank 0 also runs one process (tp=pp=dp=1) and compares; exit 1 beyond --tolerance");
  verify->add_option("--tolerance", vflags.tolerance, "Largest relative difference accepted")->capture_default_str();
  verify->add_option("--backend", common.backend, "cpu | cuda")->capture_default_str();
  verify->add_option("--format", common.format, "table | json (stdout)")->check(CLI::IsMember({"table", "json"}));
  verify->add_option("--threads", common.threads, "cpu backend: GEMM threads (default: OpenMP's)");
  verify
      ->add_option("--debug-perturb-rank", vflags.perturb_rank,
                   "Test hook: this rank scales its gradients by 1.01 before the DP reduction")
      ->group("");

  auto* bench = app.add_subcommand("bench", "Microbenchmarks");
  bench->require_subcommand(1);
  TimingOptions timing;
  auto add_timing = [&](CLI::App* a) {
    a->add_option("--warmup", timing.warmup, "Untimed launches")->check(CLI::NonNegativeNumber)->capture_default_str();
    a->add_option("--iterations,-n", timing.iterations, "Timed launches")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
  };
  auto* gemm = bench->add_subcommand("gemm", "GEMM sweep: time and TFLOP/s per shape and dtype");
  std::vector<std::string> shapes;
  add_common(gemm);
  add_timing(gemm);
  gemm->add_option("--shape", shapes, "MxNxK[:dtype], repeatable (default: the backend's sweep)");
  auto* coll = bench->add_subcommand("collectives", "Collectives by size, nccl-tests columns (algbw, busbw)");
  std::string min_bytes = "8B", max_bytes = "1MiB";
  std::string kinds = "all_reduce,all_gather,reduce_scatter,alltoall,broadcast,sendrecv";
  add_common(coll);
  add_timing(coll);
  coll->add_option("--min-bytes,-b", min_bytes, "Smallest size, with a unit")->capture_default_str();
  coll->add_option("--max-bytes,-e", max_bytes, "Largest size, with a unit (doubling)")->capture_default_str();
  coll->add_option("--collectives", kinds, "Comma-separated nccl-tests names")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  Job job;
#if MESHPLAN_HAVE_MPI
  if (LaunchedByMpiLauncher()) {
    // Microbenchmarks time the collectives alone; the executor names missing ranks.
    MpiOptions mo{.watchdog_timeout_s = watchdog_s, .arrival_tokens = !bench->parsed()};
    auto world = InitMpi(&argc, &argv, mo);
    if (!world.ok()) {
      std::cerr << "meshplan-run: MPI: " << world.status().message() << "\n";
      return 1;
    }
    job.world = std::move(world).value();
    job.mpi = true;
  }
#else
  (void)watchdog_s;
#endif
  if (!job.world) job.world = MakeSelfComm("world");

  int rc = 0;
  if (gemm->parsed()) rc = BenchGemmCmd(job, common, shapes, timing);
  else if (coll->parsed()) rc = BenchCollectivesCmd(job, common, min_bytes, max_bytes, kinds, timing);
  else if (verify->parsed()) rc = VerifyCmd(job, common, vflags);
  else rc = RunPlan(job, common, run);

#if MESHPLAN_HAVE_MPI
  if (job.mpi) {
    // A failed rank must not leave the others waiting in the next collective.
    if (rc != 0 && job.world->size() > 1) {
      std::fflush(stderr);
      std::_Exit(rc);  // mpirun ends the job when a rank exits without MPI_Finalize
    }
    job.world.reset();
    FinalizeMpi();
  }
#endif
  return rc;
}

}  // namespace
}  // namespace meshplan::runtime

int main(int argc, char** argv) { return meshplan::runtime::Main(argc, argv); }
