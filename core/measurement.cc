#include "core/measurement.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/units.h"

namespace meshplan::core {

using nlohmann::ordered_json;

namespace {

// A JSON library error as a user reads it: its text without the "[json.exception.type_error.302] "
// tag, and a missing key (out_of_range 403, "key 'mode' not found") said as a required field.
std::string JsonErrorText(const nlohmann::json::exception& e) {
  std::string what = e.what();
  if (what.rfind("[json.exception.", 0) == 0)
    if (const size_t close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
  return e.id == 403 ? "is required (" + what + ")" : what;
}

// An integer field: a JSON integer, or a float holding a whole number inside int64's range (a
// file edited by hand may say 1e6). Anything else throws BadInteger, which ParseMeasurementJson
// reports naming the field: nlohmann's own get<int64_t>() casts an out-of-range float, which is
// undefined behaviour (found by fuzz/fuzz_measurement.cc).
struct BadInteger : std::runtime_error {
  using std::runtime_error::runtime_error;
};
int64_t Int(const ordered_json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw BadInteger("must be an integer below 2^63 (got " + v.dump() + ")");
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  throw BadInteger("must be an integer (got " + v.dump().substr(0, 40) + ")");
}
// The optional field `key` of `obj`, or nullptr when absent.
const ordered_json* Optional(const ordered_json& obj, const char* key) {
  if (!obj.is_object()) throw BadInteger("must be a JSON object");
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
int64_t IntOr(const ordered_json& obj, const char* key, int64_t fallback) {
  const ordered_json* v = Optional(obj, key);
  return v ? Int(*v) : fallback;
}
// The same for an int field (ranks, counts, steps).
int SmallInt(const ordered_json& v) {
  const int64_t x = Int(v);
  if (x < INT32_MIN || x > INT32_MAX) throw BadInteger("must fit a 32-bit integer (got " + v.dump() + ")");
  return static_cast<int>(x);
}
int SmallIntOr(const ordered_json& obj, const char* key, int fallback) {
  const ordered_json* v = Optional(obj, key);
  return v ? SmallInt(*v) : fallback;
}

template <typename E>
bool EnumFromName(const std::string& s, int count, E* out) {
  for (int i = 0; i < count; ++i) {
    if (s == core::Name(static_cast<E>(i))) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}
constexpr int kOpKinds = 6, kPasses = 5, kCollectiveKinds = 6;

ordered_json GemmJson(const GemmBenchResult& g) {
  ordered_json j;
  j["kind"] = "gemm";
  j["m"] = g.shape.m;
  j["n"] = g.shape.n;
  j["k"] = g.shape.k;
  j["dtype"] = core::Name(g.shape.dtype);
  j["time_s"] = g.time_s;
  j["flops"] = g.flops;
  j["tflops_per_s"] = g.flops_per_s / 1e12;
  j["max_rel_error"] = g.max_rel_error;
  j["iterations"] = g.iterations;
  return j;
}

ordered_json CollectiveJson(const CollectiveBenchResult& c) {
  ordered_json j;
  j["kind"] = "collective";
  j["collective"] = core::Name(c.kind);
  j["size_bytes"] = c.size_bytes;
  j["count"] = c.count;
  j["dtype"] = core::Name(c.dtype);
  j["redop"] =
      c.kind == core::CollectiveKind::kAllReduce || c.kind == core::CollectiveKind::kReduceScatter ? "sum" : "none";
  j["root"] = c.root;
  j["ranks"] = c.ranks;
  j["time_s"] = c.time_s;
  j["algbw_bytes_per_s"] = c.algbw_bytes_per_s;
  j["busbw_bytes_per_s"] = c.busbw_bytes_per_s;
  j["wrong"] = c.wrong;
  return j;
}

// A breakdown's keys: what both sides have, then the side's own (held: working set; predicted:
// other), so that a reader sees which is which.
ordered_json BreakdownJson(const MemoryBreakdown& b, bool predicted) {
  ordered_json j;
  j["weights_bytes"] = b.weights_bytes;
  j["grads_bytes"] = b.grads_bytes;
  j["master_weights_bytes"] = b.master_weights_bytes;
  j["optimizer_moments_bytes"] = b.optimizer_moments_bytes;
  j["activations_bytes"] = b.activations_bytes;
  j["inflight_microbatches"] = b.inflight_microbatches;
  if (predicted) j["other_bytes"] = b.other_bytes;
  else j["working_set_bytes"] = b.working_set_bytes;
  if (b.step_copy_bytes > 0) j["step_copy_bytes"] = b.step_copy_bytes;
  if (b.buffers_bytes > 0) j["buffers_bytes"] = b.buffers_bytes;
  j["total_bytes"] = b.total_bytes;
  return j;
}
MemoryBreakdown ParseBreakdown(const ordered_json& x) {
  MemoryBreakdown b;
  b.weights_bytes = Int(x.at("weights_bytes"));
  b.grads_bytes = Int(x.at("grads_bytes"));
  b.master_weights_bytes = Int(x.at("master_weights_bytes"));
  b.optimizer_moments_bytes = Int(x.at("optimizer_moments_bytes"));
  b.activations_bytes = Int(x.at("activations_bytes"));
  b.inflight_microbatches = x.value("inflight_microbatches", 0.0);
  b.working_set_bytes = IntOr(x, "working_set_bytes", 0);
  b.other_bytes = IntOr(x, "other_bytes", 0);
  b.step_copy_bytes = IntOr(x, "step_copy_bytes", 0);
  b.buffers_bytes = IntOr(x, "buffers_bytes", 0);
  b.total_bytes = Int(x.at("total_bytes"));
  return b;
}

ordered_json OpJson(const OpMeasurement& o) {
  ordered_json j;
  j["section"] = o.section;
  j["index"] = o.index;
  j["name"] = o.name;
  j["kind"] = core::Name(o.kind);
  j["pass"] = core::Name(o.pass);
  switch (o.kind) {
    case core::OpKind::kGemm:
      j["m"] = o.m;
      j["n"] = o.n;
      j["k"] = o.k;
      j["batch"] = o.batch;
      j["dtype"] = core::Name(o.dtype);
      break;
    case core::OpKind::kAttention:
      j["attn_batch"] = o.attn_batch;
      j["heads"] = o.heads;
      j["seq_q"] = o.seq_q;
      j["seq_kv"] = o.seq_kv;
      j["head_dim_qk"] = o.head_dim_qk;
      j["head_dim_v"] = o.head_dim_v;
      j["dtype"] = core::Name(o.dtype);
      break;
    case core::OpKind::kCollective:
    case core::OpKind::kP2p:
      j["collective"] = core::Name(o.collective);
      j["group"] = core::Name(o.group);
      j["group_size"] = o.group_size;
      j["overlappable"] = o.overlappable;
      j["bytes"] = o.bytes;
      break;
    default: j["bytes"] = o.bytes; break;
  }
  j["calls_per_step"] = o.calls_per_step;
  j["time_s"] = o.time_s;
  j["flops"] = o.flops;
  j["modeled"] = o.modeled;
  return j;
}

}  // namespace

std::string MeasurementToJson(const Measurement& m) {
  ordered_json j;
  j["schema"] = m.schema;
  j["tool"] = m.tool;
  j["mode"] = m.mode;
  ordered_json hw;
  hw["backend"] = m.hardware.backend;
  hw["description"] = m.hardware.description;
  hw["hostname"] = m.hardware.hostname;
  hw["world_size"] = m.hardware.world_size;
  hw["gpus"] = ordered_json::array();
  for (const DeviceInfo& d : m.hardware.gpus) {
    ordered_json g;
    g["name"] = d.name;
    g["memory_bytes"] = d.memory_bytes;
    g["compute_capability"] =
        std::to_string(d.compute_capability_major) + "." + std::to_string(d.compute_capability_minor);
    g["sm_count"] = d.sm_count;
    hw["gpus"].push_back(g);
  }
  j["hardware"] = hw;
  if (m.peak) {
    j["device_peak"] = {
        {"flops_per_s", m.peak->flops_per_s}, {"dtype", core::Name(m.peak->dtype)}, {"source", m.peak->source}};
  }
  if (m.plan) j["plan"] = ordered_json::parse(core::PlanFileToJson(*m.plan));
  if (!m.ops.empty() || m.step) {
    j["rank"] = m.rank;
    j["stage"] = m.stage;
  }
  if (!m.ops.empty()) {
    j["ops"] = ordered_json::array();
    for (const auto& o : m.ops) j["ops"].push_back(OpJson(o));
  }
  if (m.step) {
    const StepMeasurement& s = *m.step;
    ordered_json st;
    st["warmup_steps"] = s.warmup_steps;
    st["steps"] = s.steps;
    st["step_times_s"] = s.step_times_s;
    st["measured_s"] = s.measured_s;
    st["modeled_comm_s"] = s.modeled_comm_s;
    st["time_s"] = s.time_s;
    st["flops"] = s.flops;
    st["hardware_flops"] = s.hardware_flops;
    st["tflops_per_gpu"] = s.tflops_per_gpu;
    st["mfu"] = s.mfu;
    st["hfu"] = s.hfu;
    st["peak_memory_bytes"] = s.peak_memory_bytes;
    if (s.memory) {
      const StepMemory& mem = *s.memory;
      ordered_json mj;
      mj["storage"] = mem.storage;
      mj["logical_peak_bytes"] = mem.logical_peak_bytes;
      ordered_json by = ordered_json::object();
      for (const auto& [dtype, bytes] : mem.logical_bytes_by_dtype) by[dtype] = bytes;
      mj["logical_bytes_by_dtype"] = by;
      mj["held"] = BreakdownJson(mem.held, false);
      mj["predicted_stage"] = mem.predicted_stage;
      mj["predicted"] = BreakdownJson(mem.predicted, true);
      st["memory"] = mj;
    }
    j["step"] = st;
  }
  if (!m.ranks.empty()) {
    j["ranks"] = ordered_json::array();
    for (const auto& r : m.ranks)
      j["ranks"].push_back({{"rank", r.rank},
                            {"stage", r.stage},
                            {"time_s", r.time_s},
                            {"peak_memory_bytes", r.peak_memory_bytes},
                            {"logical_peak_memory_bytes", r.logical_peak_memory_bytes},
                            {"predicted_memory_bytes", r.predicted_memory_bytes}});
  }
  if (!m.gemm.empty()) {
    j["gemm"] = ordered_json::array();
    for (const auto& g : m.gemm) j["gemm"].push_back(GemmJson(g));
  }
  if (!m.collectives.empty()) {
    j["collectives"] = ordered_json::array();
    for (const auto& c : m.collectives) j["collectives"].push_back(CollectiveJson(c));
  }
  j["notes"] = m.notes;
  return j.dump(2) + "\n";
}

Result<Measurement> ParseMeasurementJson(const std::string& text) {
  ordered_json j;
  try {
    j = ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("measurement: ") + e.what());
  }
  Measurement m;
  std::string field;
  try {
    field = "schema";
    m.schema = j.at("schema").get<std::string>();
    if (m.schema != kMeasurementSchema)
      return Status::InvalidArgument("measurement.schema: \"" + m.schema + "\" is not " + kMeasurementSchema);
    field = "mode";
    m.mode = j.at("mode").get<std::string>();
    m.tool = j.value("tool", "");
    field = "hardware";
    const auto& hw = j.at("hardware");
    m.hardware.backend = hw.at("backend").get<std::string>();
    m.hardware.description = hw.value("description", "");
    m.hardware.hostname = hw.value("hostname", "");
    m.hardware.world_size = SmallIntOr(hw, "world_size", 1);
    if (hw.contains("gpus")) {
      for (size_t i = 0; i < hw.at("gpus").size(); ++i) {
        field = "hardware.gpus[" + std::to_string(i) + "]";
        const auto& g = hw["gpus"][i];
        DeviceInfo d;
        d.name = g.at("name").get<std::string>();
        d.memory_bytes = IntOr(g, "memory_bytes", 0);
        const std::string cc = g.value("compute_capability", std::string());  // "9.0"
        const size_t dot = cc.find('.');
        if (!cc.empty() &&
            (dot == std::string::npos ||
             std::from_chars(cc.data(), cc.data() + dot, d.compute_capability_major).ptr != cc.data() + dot ||
             std::from_chars(cc.data() + dot + 1, cc.data() + cc.size(), d.compute_capability_minor).ptr !=
                 cc.data() + cc.size()))
          return Status::InvalidArgument("measurement." + field +
                                         ".compute_capability: must be \"MAJOR.MINOR\" (got \"" + cc + "\")");
        d.sm_count = SmallIntOr(g, "sm_count", 0);
        m.hardware.gpus.push_back(d);
      }
    }
    if (j.contains("device_peak")) {
      field = "device_peak";
      DevicePeak p;
      p.flops_per_s = j["device_peak"].at("flops_per_s").get<double>();
      if (!core::FromName(j["device_peak"].at("dtype").get<std::string>(), &p.dtype))
        return Status::InvalidArgument("measurement.device_peak.dtype: unknown dtype");
      p.source = j["device_peak"].value("source", "");
      m.peak = p;
    }
    if (j.contains("plan")) {
      auto plan = core::ParsePlanFileJson(j["plan"].dump());
      if (!plan.ok()) return Status::InvalidArgument("measurement.plan: " + plan.status().message());
      m.plan = *plan;
    }
    m.rank = IntOr(j, "rank", 0);
    m.stage = IntOr(j, "stage", 0);
    if (j.contains("ops")) {
      for (size_t i = 0; i < j["ops"].size(); ++i) {
        field = "ops[" + std::to_string(i) + "]";
        const auto& x = j["ops"][i];
        OpMeasurement o;
        o.section = x.at("section").get<std::string>();
        o.index = Int(x.at("index"));
        o.name = x.at("name").get<std::string>();
        if (!EnumFromName(x.at("kind").get<std::string>(), kOpKinds, &o.kind) ||
            !EnumFromName(x.at("pass").get<std::string>(), kPasses, &o.pass))
          return Status::InvalidArgument("measurement." + field + ": unknown kind or pass");
        if (x.contains("dtype") && !core::FromName(x["dtype"].get<std::string>(), &o.dtype))
          return Status::InvalidArgument("measurement." + field + ".dtype: unknown dtype");
        o.m = IntOr(x, "m", 0);
        o.n = IntOr(x, "n", 0);
        o.k = IntOr(x, "k", 0);
        o.batch = IntOr(x, "batch", 1);
        o.attn_batch = IntOr(x, "attn_batch", 0);
        o.heads = IntOr(x, "heads", 0);
        o.seq_q = IntOr(x, "seq_q", 0);
        o.seq_kv = IntOr(x, "seq_kv", 0);
        o.head_dim_qk = IntOr(x, "head_dim_qk", 0);
        o.head_dim_v = IntOr(x, "head_dim_v", 0);
        o.bytes = IntOr(x, "bytes", 0);
        if (x.contains("collective") &&
            !EnumFromName(x["collective"].get<std::string>(), kCollectiveKinds, &o.collective))
          return Status::InvalidArgument("measurement." + field + ".collective: unknown collective");
        if (x.contains("group") && !EnumFromName(x["group"].get<std::string>(), core::kCommGroups, &o.group))
          return Status::InvalidArgument("measurement." + field + ".group: unknown group");
        o.group_size = IntOr(x, "group_size", 1);
        o.overlappable = x.value("overlappable", false);
        o.calls_per_step = Int(x.at("calls_per_step"));
        o.time_s = x.at("time_s").get<double>();
        o.flops = x.value("flops", 0.0);
        o.modeled = x.value("modeled", false);
        m.ops.push_back(o);
      }
    }
    if (j.contains("step")) {
      field = "step";
      const auto& x = j["step"];
      StepMeasurement s;
      s.warmup_steps = SmallIntOr(x, "warmup_steps", 0);
      s.steps = SmallIntOr(x, "steps", 0);
      s.step_times_s = x.value("step_times_s", std::vector<double>{});
      s.measured_s = x.value("measured_s", 0.0);
      s.modeled_comm_s = x.value("modeled_comm_s", 0.0);
      s.time_s = x.at("time_s").get<double>();
      s.flops = x.value("flops", 0.0);
      s.hardware_flops = x.value("hardware_flops", 0.0);
      s.tflops_per_gpu = x.at("tflops_per_gpu").get<double>();
      s.mfu = x.at("mfu").get<double>();
      s.hfu = x.value("hfu", 0.0);
      s.peak_memory_bytes = Int(x.at("peak_memory_bytes"));
      if (x.contains("memory")) {
        field = "step.memory";
        const auto& y = x["memory"];
        StepMemory mem;
        mem.storage = y.value("storage", std::string());
        mem.logical_peak_bytes = Int(y.at("logical_peak_bytes"));
        if (y.contains("logical_bytes_by_dtype"))
          for (const auto& [dtype, bytes] : y["logical_bytes_by_dtype"].items())
            mem.logical_bytes_by_dtype.push_back({dtype, Int(bytes)});
        field = "step.memory.held";
        mem.held = ParseBreakdown(y.at("held"));
        field = "step.memory.predicted";
        mem.predicted_stage = IntOr(y, "predicted_stage", 0);
        mem.predicted = ParseBreakdown(y.at("predicted"));
        s.memory = mem;
      }
      m.step = s;
    }
    if (j.contains("ranks")) {
      for (const auto& x : j["ranks"])
        m.ranks.push_back({SmallInt(x.at("rank")), Int(x.at("stage")), x.at("time_s").get<double>(),
                           Int(x.at("peak_memory_bytes")), IntOr(x, "logical_peak_memory_bytes", 0),
                           IntOr(x, "predicted_memory_bytes", 0)});
    }
    if (j.contains("gemm")) {
      for (size_t i = 0; i < j["gemm"].size(); ++i) {
        field = "gemm[" + std::to_string(i) + "]";
        const auto& x = j["gemm"][i];
        GemmBenchResult g;
        g.shape.m = Int(x.at("m"));
        g.shape.n = Int(x.at("n"));
        g.shape.k = Int(x.at("k"));
        if (!core::FromName(x.at("dtype").get<std::string>(), &g.shape.dtype))
          return Status::InvalidArgument("measurement." + field + ".dtype: unknown dtype");
        g.time_s = x.at("time_s").get<double>();
        g.flops = x.at("flops").get<double>();
        g.flops_per_s = x.value("tflops_per_s", 0.0) * 1e12;
        g.max_rel_error = x.value("max_rel_error", 0.0);
        g.iterations = SmallIntOr(x, "iterations", 0);
        m.gemm.push_back(g);
      }
    }
    if (j.contains("collectives")) {
      for (size_t i = 0; i < j["collectives"].size(); ++i) {
        field = "collectives[" + std::to_string(i) + "]";
        const auto& x = j["collectives"][i];
        CollectiveBenchResult c;
        if (!EnumFromName(x.at("collective").get<std::string>(), kCollectiveKinds, &c.kind))
          return Status::InvalidArgument("measurement." + field + ".collective: unknown collective");
        c.size_bytes = Int(x.at("size_bytes"));
        c.count = Int(x.at("count"));
        c.root = SmallIntOr(x, "root", -1);
        c.ranks = SmallIntOr(x, "ranks", 1);
        c.time_s = x.at("time_s").get<double>();
        c.algbw_bytes_per_s = x.at("algbw_bytes_per_s").get<double>();
        c.busbw_bytes_per_s = x.at("busbw_bytes_per_s").get<double>();
        c.wrong = IntOr(x, "wrong", 0);
        m.collectives.push_back(c);
      }
    }
    m.notes = j.value("notes", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument("measurement." + field + ": " + JsonErrorText(e));
  } catch (const BadInteger& e) {
    return Status::InvalidArgument("measurement." + field + ": " + e.what());
  }
  return m;
}

std::string GpuPresetForDevice(const DeviceInfo& d) {
  std::string n = d.name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("GB200")) return "gb200";
  if (has("B200")) return "b200";
  if (has("H200")) return "h200";
  if (has("H800")) return "h800";
  if (has("H100")) {
    if (has("NVL")) return "";  // 94 GB, its own clocks: no preset
    return has("PCIE") ? "h100-pcie" : "h100-sxm";
  }
  if (has("A100")) return d.memory_bytes > (int64_t{60} << 30) ? "a100-80g" : "a100-40g";
  if (has("A800")) return has("PCIE") ? "" : "a800";  // the SXM part; a PCIe card has no preset
  if (has("V100")) return "v100";
  return "";
}

std::string DeviceCapacityNote(const GpuSpec& g, const DeviceInfo& d) {
  if (d.memory_bytes <= 0) return "";
  const int64_t cap = g.CapacityBytes();
  const std::string reports = "the device (" + d.name + ") reports " + std::to_string(d.memory_bytes) +
                              " B of memory (cudaGetDeviceProperties' totalGlobalMem)";
  if (d.memory_bytes == cap)
    return reports + ", " + g.name + "'s capacity as the fit verdicts take it (docs/memory.md §4)";
  const double diff = static_cast<double>(d.memory_bytes - cap) / static_cast<double>(cap);
  char pct[32];
  std::snprintf(pct, sizeof pct, "%+.2f%%", 100 * diff);
  return reports + "; " + g.name + "'s capacity is " + std::to_string(cap) + " B (" +
         (g.cuda_total_bytes > 0 ? "its cuda_total_bytes" : "its physical memory: no cuda_total_bytes") + "), " + pct +
         " from it: a GPU JSON with \"cuda_total_bytes\": " + std::to_string(d.memory_bytes) +
         " fits plans to this device (docs/memory.md §4)";
}

}  // namespace meshplan::core
