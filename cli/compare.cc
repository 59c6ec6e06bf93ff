#include "cli/compare.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "core/collectives.h"
#include "core/memory.h"
#include "core/step_graph.h"

namespace meshplan::cli {
namespace {

// The StepGraph op a measurement row describes.
core::Op OpOf(const core::OpMeasurement& r) {
  core::Op op;
  op.name = r.name.c_str();
  op.kind = r.kind;
  op.pass = r.pass;
  op.dtype = r.dtype;
  op.m = r.m;
  op.n = r.n;
  op.k = r.k;
  op.batch = r.batch;
  op.attn_batch = r.attn_batch;
  op.heads = r.heads;
  op.seq_q = r.seq_q;
  op.seq_kv = r.seq_kv;
  op.head_dim_qk = r.head_dim_qk;
  op.head_dim_v = r.head_dim_v;
  op.bytes = r.bytes;
  op.collective = r.collective;
  op.group = r.group;
  op.overlappable = r.overlappable;
  return op;
}

// Predicted seconds per step for the row (all its calls).
double Predicted(const core::OpMeasurement& r, const core::Scenario& s, const core::Profile& prof) {
  const core::Op op = OpOf(r);
  double one = 0;
  if (op.kind == core::OpKind::kCollective || op.kind == core::OpKind::kP2p)
    one = core::ProfiledCollectiveTime(prof, op.collective, op.bytes, core::SpanOfGroup(op.group, s.plan, s.cluster),
                                       s.cluster)
              .time_s;
  else one = sim::ComputeOpTime(op, s.gpu, prof);
  return one * static_cast<double>(r.calls_per_step);
}

// The memory model's stage for the measured rank, with the report's profile; the executor held
// model states and activations, not the CUDA context, workspaces or NCCL buffers ("other").
struct MemoryRow {
  const char* name;
  int64_t measured, predicted;
};
std::vector<MemoryRow> MemoryRows(const core::Scenario& s, const core::StepMemory& held, int64_t stage,
                                  const core::Profile& prof) {
  const core::MemoryReport r = core::EstimateMemory(s.model, s.plan, s.gpu, prof.memory);
  if (stage < 0 || stage >= static_cast<int64_t>(r.stages.size())) return {};
  const core::StageMemory& p = r.stages[static_cast<size_t>(stage)];
  const core::MemoryBreakdown& h = held.held;
  std::vector<MemoryRow> rows = {
      {"weights", h.weights_bytes, p.weights_bytes},
      {"grads", h.grads_bytes, p.grads_bytes},
      {"master_weights", h.master_weights_bytes, p.master_weights_bytes},
      {"optimizer_moments", h.optimizer_moments_bytes, p.optimizer_moments_bytes},
      {"activations", h.activations_bytes, p.activations_bytes},
      {"states_and_activations",
       h.weights_bytes + h.grads_bytes + h.master_weights_bytes + h.optimizer_moments_bytes + h.activations_bytes,
       p.weights_bytes + p.grads_bytes + p.master_weights_bytes + p.optimizer_moments_bytes + p.activations_bytes}};
  // DeepSpeed's BF16_Optimizer: the weights-dtype copy of the fp32 gradients its step all-reduces.
  if (s.plan.keep_lp_grads) rows.push_back({"step_copy", h.step_copy_bytes, p.step_copy_bytes});
  // The frameworks' other allocations: gathered ZeRO-3/FSDP layers, TE workspaces, FSDP2's pools.
  const int64_t buffers = core::FrameworkBufferBytes(p, s.plan);
  if (buffers > 0 || h.buffers_bytes > 0) rows.push_back({"framework_buffers", h.buffers_bytes, buffers});
  return rows;
}

}  // namespace

std::string CompareTable(const core::Scenario& s, const core::Measurement& m, const sim::StepEstimate& e,
                         const core::Profile& prof) {
  std::ostringstream o;
  char line[320];
  o << "# meshplan report --compare: " << m.tool << ", " << m.mode << " on " << m.hardware.description << ", rank "
    << m.rank << " (stage " << m.stage << ")\n";
  o << "# predictions for " << s.gpu.name << " with profile " << prof.name
    << (m.hardware.backend == "cpu" && !prof.device
            ? " (a cpu measurement: expect large ratios until a cpu profile is fitted: meshplan calibrate fit)"
            : "")
    << "\n";
  std::snprintf(line, sizeof line, "# %-12s %-22s %-16s %6s %12s %12s %8s\n", "section", "op", "pass", "calls",
                "measured_ms", "predicted_ms", "ratio");
  o << line;
  for (const auto& r : m.ops) {
    const double pred = Predicted(r, s, prof);
    std::snprintf(line, sizeof line, "  %-12s %-22s %-16s %6lld %12.3f %12.3f %8.2f%s\n", r.section.c_str(),
                  r.name.c_str(), core::Name(r.pass), static_cast<long long>(r.calls_per_step), r.time_s * 1e3,
                  pred * 1e3, pred > 0 ? r.time_s / pred : 0.0, r.modeled ? "  (modeled)" : "");
    o << line;
  }
  if (m.step) {
    const auto& st = *m.step;
    std::snprintf(line, sizeof line,
                  "step: measured %.4f s vs predicted %.4f s (ratio %.2f); TFLOP/s per GPU %.3f vs %.3f; MFU %.1f%% "
                  "(of %s) vs %.1f%% (causal count, of %s's peak)\n",
                  st.time_s, e.time_s, e.time_s > 0 ? st.time_s / e.time_s : 0.0, st.tflops_per_gpu, e.tflops_per_gpu,
                  100 * st.mfu, m.peak ? m.peak->source.c_str() : "the device peak", 100 * e.mfu_causal,
                  s.gpu.name.c_str());
    o << line;
    if (st.memory) {
      const auto rows = MemoryRows(s, *st.memory, m.stage, prof);
      if (!rows.empty()) {
        o << "# memory of rank " << m.rank << " (stage " << m.stage << "), logical bytes (each tensor at its dtype's "
          << "size; the memory model's CUDA context, cuBLAS workspace, NCCL buffers and fragmentation are not "
             "held by the executor)\n";
        std::snprintf(line, sizeof line, "# %-24s %14s %14s %8s\n", "memory", "measured_MB", "predicted_MB", "ratio");
        o << line;
        for (const auto& r : rows) {
          std::snprintf(line, sizeof line, "  %-24s %14.3f %14.3f %8.2f\n", r.name,
                        static_cast<double>(r.measured) / 1e6, static_cast<double>(r.predicted) / 1e6,
                        r.predicted > 0 ? static_cast<double>(r.measured) / static_cast<double>(r.predicted) : 0.0);
          o << line;
        }
        std::snprintf(line, sizeof line, "  %-24s %14.3f %14s %8s\n", "op working set",
                      static_cast<double>(st.memory->held.working_set_bytes) / 1e6, "-", "-");
        o << line;
      }
    }
  }
  return o.str();
}

std::string CompareJson(const core::Scenario& s, const core::Measurement& m, const sim::StepEstimate& e,
                        const core::Profile& prof) {
  nlohmann::ordered_json j;
  j["measurement"] = {{"tool", m.tool}, {"mode", m.mode}, {"backend", m.hardware.backend}, {"rank", m.rank}};
  j["profile"] = prof.name;
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const auto& r : m.ops) {
    const double pred = Predicted(r, s, prof);
    ops.push_back({{"section", r.section},
                   {"index", r.index},
                   {"name", r.name},
                   {"kind", core::Name(r.kind)},
                   {"pass", core::Name(r.pass)},
                   {"calls_per_step", r.calls_per_step},
                   {"measured_s", r.time_s},
                   {"predicted_s", pred},
                   {"modeled", r.modeled}});
  }
  j["ops"] = ops;
  if (m.step)
    j["step"] = {{"measured_time_s", m.step->time_s},
                 {"predicted_time_s", e.time_s},
                 {"measured_tflops_per_gpu", m.step->tflops_per_gpu},
                 {"predicted_tflops_per_gpu", e.tflops_per_gpu},
                 {"measured_mfu", m.step->mfu},
                 {"predicted_mfu_causal", e.mfu_causal}};
  if (m.step && m.step->memory) {
    nlohmann::ordered_json mem = nlohmann::ordered_json::object();
    for (const auto& r : MemoryRows(s, *m.step->memory, m.stage, prof))
      mem[std::string(r.name)] = {{"measured_bytes", r.measured}, {"predicted_bytes", r.predicted}};
    if (!mem.empty()) {
      mem["working_set_bytes"] = m.step->memory->held.working_set_bytes;
      j["memory"] = mem;
    }
  }
  return j.dump(2) + "\n";
}

}  // namespace meshplan::cli
