#include "runtime/measurement.h"

#include <cstdio>
#include <sstream>

#include "core/units.h"

namespace meshplan::runtime {

namespace {
std::string Fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}
}  // namespace

std::string GemmBenchTable(const std::vector<GemmBenchResult>& rows) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "# %8s %8s %8s %6s %12s %10s %10s\n", "m", "n", "k", "dtype", "time_us", "TFLOP/s",
                "rel_err");
  out << line;
  std::snprintf(line, sizeof line, "# %8s %8s %8s %6s %12s %10s %10s\n", "", "", "", "", "(us)", "(1e12/s)", "");
  out << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "  %8lld %8lld %8lld %6s %12.2f %10.4f %10.2e\n",
                  static_cast<long long>(r.shape.m), static_cast<long long>(r.shape.n),
                  static_cast<long long>(r.shape.k), core::Name(r.shape.dtype), r.time_s * 1e6, r.flops_per_s / 1e12,
                  r.max_rel_error);
    out << line;
  }
  return out.str();
}

std::string CollectiveBenchTable(const std::vector<CollectiveBenchResult>& rows) {
  std::ostringstream out;
  char line[256];
  const int ranks = rows.empty() ? 0 : rows.front().ranks;
  out << "# nccl-tests columns (out-of-place); algbw = size/time, busbw = algbw x factor "
         "(all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast, send_recv 1)\n";
  out << "# ranks: " << ranks << "\n";
  // Two header rows, nccl-tests style (names, then units).
  std::snprintf(line, sizeof line, "# %14s %12s %12s %6s %6s %5s %12s %11s %11s %7s\n", "collective", "size", "count",
                "type", "redop", "root", "time", "algbw", "busbw", "#wrong");
  out << line;
  std::snprintf(line, sizeof line, "# %14s %12s %12s %6s %6s %5s %12s %11s %11s %7s\n", "", "(B)", "(elements)", "", "",
                "", "(us)", "(GB/s)", "(GB/s)", "");
  out << line;
  for (const auto& r : rows) {
    const bool sum = r.kind == core::CollectiveKind::kAllReduce || r.kind == core::CollectiveKind::kReduceScatter;
    std::snprintf(line, sizeof line, "  %14s %12lld %12lld %6s %6s %5d %12.2f %11.3f %11.3f %7lld\n",
                  core::Name(r.kind), static_cast<long long>(r.size_bytes), static_cast<long long>(r.count),
                  core::Name(r.dtype), sum ? "sum" : "none", r.root, r.time_s * 1e6, r.algbw_bytes_per_s / 1e9,
                  r.busbw_bytes_per_s / 1e9, static_cast<long long>(r.wrong));
    out << line;
  }
  return out.str();
}

std::string StepTable(const Measurement& m) {
  std::ostringstream out;
  char line[320];
  out << "# meshplan-run " << m.mode << ": rank " << m.rank << " (pipeline stage " << m.stage << "), backend "
      << m.hardware.description << "\n";
  std::snprintf(line, sizeof line, "# %-12s %-22s %-16s %-10s %8s %12s %10s %9s\n", "section", "op", "pass", "kind",
                "calls", "time_ms", "TFLOP/s", "source");
  out << line;
  std::snprintf(line, sizeof line, "# %-12s %-22s %-16s %-10s %8s %12s %10s %9s\n", "", "", "", "", "(/step)",
                "(ms/step)", "(1e12/s)", "");
  out << line;
  for (const auto& o : m.ops) {
    const double tf = o.time_s > 0 && o.flops > 0 ? o.flops / o.time_s / 1e12 : 0;
    std::snprintf(line, sizeof line, "  %-12s %-22s %-16s %-10s %8lld %12.3f %10s %9s\n", o.section.c_str(),
                  o.name.c_str(), core::Name(o.pass), core::Name(o.kind), static_cast<long long>(o.calls_per_step),
                  o.time_s * 1e3, tf > 0 ? Fmt("%.4f", tf).c_str() : "-", o.modeled ? "modeled" : "measured");
    out << line;
  }
  if (m.step) {
    const StepMeasurement& s = *m.step;
    out << "# step: " << Fmt("%.6f", s.time_s) << " s (measured " << Fmt("%.6f", s.measured_s) << " s + modeled comm "
        << Fmt("%.6f", s.modeled_comm_s) << " s), " << Fmt("%.4f", s.tflops_per_gpu) << " TFLOP/s per GPU, MFU "
        << Fmt("%.1f", 100 * s.mfu) << "%, HFU " << Fmt("%.1f", 100 * s.hfu) << "%, peak memory "
        << core::FormatBytes(s.peak_memory_bytes) << "\n";
    if (s.memory) {
      const StepMemory& mem = *s.memory;
      const MemoryBreakdown &h = mem.held, &p = mem.predicted;
      out << "# memory (logical bytes, as a GPU holds them; storage " << mem.storage << "): held "
          << core::FormatBytes(mem.logical_peak_bytes) << " = weights " << core::FormatBytes(h.weights_bytes)
          << " + grads " << core::FormatBytes(h.grads_bytes) << " + master "
          << core::FormatBytes(h.master_weights_bytes) << " + moments " << core::FormatBytes(h.optimizer_moments_bytes)
          << " + activations " << core::FormatBytes(h.activations_bytes) << " (" << Fmt("%.2f", h.inflight_microbatches)
          << " microbatches) + op buffers " << core::FormatBytes(h.working_set_bytes)
          << (h.buffers_bytes > 0 ? " + buffers " + core::FormatBytes(h.buffers_bytes) : std::string())
          << (h.step_copy_bytes > 0 ? " + step copy " + core::FormatBytes(h.step_copy_bytes) : std::string()) << "\n";
      out << "# memory model (stage " << mem.predicted_stage
          << "): " << core::FormatBytes(p.total_bytes - p.other_bytes) << " = weights "
          << core::FormatBytes(p.weights_bytes) << " + grads " << core::FormatBytes(p.grads_bytes) << " + master "
          << core::FormatBytes(p.master_weights_bytes) << " + moments " << core::FormatBytes(p.optimizer_moments_bytes)
          << " + activations " << core::FormatBytes(p.activations_bytes) << " (" << Fmt("%.2f", p.inflight_microbatches)
          << " microbatches"
          << (p.buffers_bytes > 0 ? "; buffers " + core::FormatBytes(p.buffers_bytes) : std::string())
          << (p.step_copy_bytes > 0 ? "; step copy " + core::FormatBytes(p.step_copy_bytes) : std::string()) << "); "
          << core::FormatBytes(p.total_bytes) << " with " << core::FormatBytes(p.other_bytes) << " of overheads\n";
    }
  }
  if (m.peak)
    out << "# device peak: " << Fmt("%.4g", m.peak->flops_per_s / 1e12) << " TFLOP/s (" << m.peak->source << ")\n";
  for (const auto& n : m.notes) out << "# note: " << n << "\n";
  return out.str();
}

}  // namespace meshplan::runtime
