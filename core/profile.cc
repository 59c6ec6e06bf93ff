#include "core/profile.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <set>

#include "core/presets.h"
#include "core/spec_json.h"

namespace meshplan::core {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

// Reads a positive number if present; records an error naming the field otherwise. `hi` is the
// field's physical bound (docs/calibration.md): a fitted factor or a time beyond it is a unit slip
// or a failed fit, and a count beyond it would not convert to an integer.
void ReadPositive(const Json& j, const char* key, const std::string& path, double* out, Diagnostics* d, double hi,
                  const char* why) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_number() || !(it->get<double>() > 0)) {
    d->Error(path + "." + key, "must be a number > 0 (got " + it->dump() + ")");
    return;
  }
  if (!(it->get<double>() <= hi)) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", hi);
    d->Error(path + "." + key, std::string("must be at most ") + bound + " (got " + it->dump() + "): " + why);
    return;
  }
  *out = it->get<double>();
}

// Also the check that a section is an object at all (iterating keys of anything else throws).
void CheckKeys(const Json& j, const std::string& path, const std::set<std::string>& known, Diagnostics* d) {
  if (!j.is_object()) {
    d->Error(path, "must be a JSON object (got " + j.dump().substr(0, 40) + ")");
    return;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (known.count(it.key())) continue;
    const std::string best = NearestKnownKey(it.key(), {known.begin(), known.end()});
    d->Error(path + "." + it.key(), "is not a known field" + (best.empty() ? "" : " (did you mean \"" + best + "\"?)"));
  }
}

}  // namespace

Result<Profile> ParseProfileJson(const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("profile: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument("profile: must be a JSON object");
  Diagnostics d;
  Profile p;
  CheckKeys(j, "profile",
            {"version", "name", "source", "gemm_efficiency", "gemm_half_flops", "attention_fwd_efficiency",
             "attention_bwd_efficiency", "hbm_efficiency", "memory_op_efficiency", "kernel_overhead_s", "comm",
             "collectives", "memory", "device"},
            &d);
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() < 1 ||
      j["version"].get<int>() > Profile::kVersion)
    d.Error("profile.version", "must be 1 or " + std::to_string(Profile::kVersion) + " (got " +
                                   (j.contains("version") ? j["version"].dump() : std::string("nothing")) + ")");
  if (j.contains("name") && j["name"].is_string()) p.name = j["name"];
  if (j.contains("source") && j["source"].is_string()) p.source = j["source"];
  if (j.contains("gemm_efficiency")) {
    const Json& g = j["gemm_efficiency"];
    if (!g.is_object()) {
      d.Error("profile.gemm_efficiency", "must be an object of dtype -> fraction of peak");
    } else {
      for (auto it = g.begin(); it != g.end(); ++it) {
        Dtype dt;
        const std::string path = "profile.gemm_efficiency." + it.key();
        if (!FromName(it.key(), &dt)) d.Error(path, "is not a dtype");
        else if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > 1)
          d.Error(path, "must be in (0, 1]");
        else p.gemm_efficiency[dt] = it->get<double>();
      }
      p.gemm_efficiency_measured = true;
    }
  }
  ReadPositive(j, "gemm_half_flops", "profile", &p.gemm_half_flops, &d, 1e16,
               "FLOPs per GEMM at half its efficiency: fitted values are 1e8-1e11");
  if (j.contains("attention_fwd_efficiency") || j.contains("attention_bwd_efficiency"))
    p.attention_efficiency_measured = true;
  ReadPositive(j, "attention_fwd_efficiency", "profile", &p.attention_fwd_efficiency, &d, 1, "a fraction of the peak");
  ReadPositive(j, "attention_bwd_efficiency", "profile", &p.attention_bwd_efficiency, &d, 1, "a fraction of the peak");
  ReadPositive(j, "hbm_efficiency", "profile", &p.hbm_efficiency, &d, 1, "a fraction of the HBM bandwidth");
  ReadPositive(j, "kernel_overhead_s", "profile", &p.kernel_overhead_s, &d, 0.1,
               "seconds per kernel: launches cost microseconds");
  for (const char* key : {"attention_fwd_efficiency", "attention_bwd_efficiency", "hbm_efficiency"}) {
    if (j.contains(key) && j[key].is_number() && j[key].get<double>() > 1)
      d.Error(std::string("profile.") + key, "must be in (0, 1]");
  }
  if (j.contains("memory_op_efficiency")) {
    const Json& mo = j["memory_op_efficiency"];
    if (!mo.is_object()) {
      d.Error("profile.memory_op_efficiency", "must be an object of op name -> fraction of HBM bandwidth");
    } else {
      for (auto it = mo.begin(); it != mo.end(); ++it) {
        if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > 1)
          d.Error("profile.memory_op_efficiency." + it.key(), "must be in (0, 1] (got " + it->dump() + ")");
        else p.memory_op_efficiency[it.key()] = it->get<double>();
      }
    }
  }
  if (j.contains("collectives")) {
    const Json& cs = j["collectives"];
    if (!cs.is_array()) d.Error("profile.collectives", "must be an array");
    for (size_t i = 0; cs.is_array() && i < cs.size(); ++i) {
      const std::string path = "profile.collectives[" + std::to_string(i) + "]";
      const Json& x = cs[i];
      if (!x.is_object()) {
        d.Error(path, "must be an object");
        continue;
      }
      CheckKeys(x, path, {"collective", "tier", "ranks", "alpha_s", "beta_s_per_byte", "min_bytes", "max_bytes", "r2"},
                &d);
      CollectiveFit f;
      bool ok = true;
      const std::string kind = x.value("collective", std::string());
      bool found = false;
      for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                               CollectiveKind::kAllToAll, CollectiveKind::kBroadcast, CollectiveKind::kSendRecv})
        if (kind == Name(k)) f.kind = k, found = true;
      if (!found) d.Error(path + ".collective", "must be a collective name (got \"" + kind + "\")"), ok = false;
      const std::string tier = x.value("tier", std::string());
      if (tier != "scale_up" && tier != "scale_out")
        d.Error(path + ".tier", "must be scale_up or scale_out (got \"" + tier + "\")"), ok = false;
      f.scale_out = tier == "scale_out";
      if (!x.contains("ranks") || !x["ranks"].is_number_integer() || x["ranks"].get<int64_t>() < 2)
        d.Error(path + ".ranks", "must be an integer >= 2"), ok = false;
      else f.ranks = x["ranks"].get<int64_t>();
      for (auto [key, out] :
           {std::pair<const char*, double*>{"alpha_s", &f.alpha_s}, {"beta_s_per_byte", &f.beta_s_per_byte}}) {
        if (!x.contains(key) || !x[key].is_number() || x[key].get<double>() < 0)
          d.Error(path + "." + key, "must be a number >= 0"), ok = false;
        else *out = x[key].get<double>();
      }
      for (auto [key, out] :
           {std::pair<const char*, int64_t*>{"min_bytes", &f.min_bytes}, {"max_bytes", &f.max_bytes}}) {
        if (!x.contains(key) || !x[key].is_number_integer() || x[key].get<int64_t>() < 1)
          d.Error(path + "." + key, "must be an integer >= 1"), ok = false;
        else *out = x[key].get<int64_t>();
      }
      if (ok && f.min_bytes > f.max_bytes) d.Error(path + ".min_bytes", "must be <= max_bytes"), ok = false;
      f.r2 = x.value("r2", 0.0);
      if (ok) p.collectives.push_back(f);
    }
  }
  if (j.contains("device")) {
    // A fitted device's power is not measured: tdp_w 0 means "the plan GPU's" (ApplyProfileDevice
    // in the CLI); every other field is checked as for any GPU spec.
    Json dev = j["device"];
    const bool no_power =
        dev.is_object() && dev.contains("tdp_w") && dev["tdp_w"].is_number() && dev["tdp_w"].get<double>() == 0;
    if (no_power) dev["tdp_w"] = 1;
    auto g = ParseGpuJson(dev.dump(), "profile.device");
    if (!g.ok()) {
      d.Error("profile.device", g.status().message());
    } else {
      p.device = *g;
      if (no_power) p.device->tdp_w = 0;
    }
  }
  if (j.contains("comm")) {
    const Json& c = j["comm"];
    CheckKeys(c, "profile.comm", {"scale_up", "scale_out", "nvls_speedup", "launch_s"}, &d);
    ReadPositive(c, "scale_up", "profile.comm", &p.comm.scale_up, &d, 10, "a factor on the link's bandwidth");
    ReadPositive(c, "scale_out", "profile.comm", &p.comm.scale_out, &d, 10, "a factor on the link's bandwidth");
    ReadPositive(c, "nvls_speedup", "profile.comm", &p.comm.nvls_speedup, &d, 10,
                 "NVLink SHARP speeds all-reduce up ~2x (nccl-tests)");
    ReadPositive(c, "launch_s", "profile.comm", &p.comm.launch_s, &d, 0.1,
                 "seconds per collective: launches cost microseconds");
  }
  if (j.contains("memory")) {
    const Json& m = j["memory"];
    CheckKeys(
        m, "profile.memory",
        {"cuda_context_bytes", "cublas_workspace_bytes", "nccl_buffsize_bytes", "nccl_channels", "fragmentation_frac"},
        &d);
    double v;
    auto rd = [&](const char* key, int64_t* out, double hi, const char* why) {
      v = static_cast<double>(*out);
      ReadPositive(m, key, "profile.memory", &v, &d, hi, why);
      *out = static_cast<int64_t>(v);
    };
    rd("cuda_context_bytes", &p.memory.cuda_context_bytes, 68719476736.0, "bytes: a CUDA context takes ~0.5 GiB");
    rd("cublas_workspace_bytes", &p.memory.cublas_workspace_bytes, 68719476736.0,
       "bytes: cuBLAS workspaces are MiB (32 MiB on Hopper)");
    rd("nccl_buffsize_bytes", &p.memory.nccl_buffsize_bytes, 17179869184.0, "bytes: NCCL_BUFFSIZE defaults to 4 MiB");
    rd("nccl_channels", &p.memory.nccl_channels, 1024, "NCCL uses at most 64 channels (NCCL_MAX_NCHANNELS)");
    if (m.contains("fragmentation_frac")) {
      if (!m["fragmentation_frac"].is_number() || !(m["fragmentation_frac"].get<double>() >= 0) ||
          !(m["fragmentation_frac"].get<double>() <= 1))
        d.Error("profile.memory.fragmentation_frac", "must be a number in [0, 1] (a share of the activations)");
      else p.memory.fragmentation_frac = m["fragmentation_frac"];
    }
  }
  if (d.has_errors()) return d.ToStatus();
  return p;
}

std::string ProfileToJson(const Profile& p) {
  OJson j;
  j["version"] = Profile::kVersion;
  j["name"] = p.name;
  j["source"] = p.source;
  // Written only when measured: a file that lists it is read back as measured, and overrides the
  // GPU presets' sustained figures (Profile::gemm_efficiency_measured).
  if (p.gemm_efficiency_measured) {
    OJson g = OJson::object();
    for (const auto& [dt, v] : p.gemm_efficiency) g[Name(dt)] = v;
    j["gemm_efficiency"] = g;
  }
  j["gemm_half_flops"] = p.gemm_half_flops;
  if (p.attention_efficiency_measured) {
    j["attention_fwd_efficiency"] = p.attention_fwd_efficiency;
    j["attention_bwd_efficiency"] = p.attention_bwd_efficiency;
  }
  j["hbm_efficiency"] = p.hbm_efficiency;
  if (!p.memory_op_efficiency.empty()) {
    OJson mo = OJson::object();
    for (const auto& [name, v] : p.memory_op_efficiency) mo[name] = v;
    j["memory_op_efficiency"] = mo;
  }
  j["kernel_overhead_s"] = p.kernel_overhead_s;
  j["comm"] = {{"scale_up", p.comm.scale_up},
               {"scale_out", p.comm.scale_out},
               {"nvls_speedup", p.comm.nvls_speedup},
               {"launch_s", p.comm.launch_s}};
  if (!p.collectives.empty()) {
    OJson cs = OJson::array();
    for (const CollectiveFit& f : p.collectives)
      cs.push_back({{"collective", Name(f.kind)},
                    {"tier", f.scale_out ? "scale_out" : "scale_up"},
                    {"ranks", f.ranks},
                    {"alpha_s", f.alpha_s},
                    {"beta_s_per_byte", f.beta_s_per_byte},
                    {"min_bytes", f.min_bytes},
                    {"max_bytes", f.max_bytes},
                    {"r2", f.r2}});
    j["collectives"] = cs;
  }
  OJson m;
  m["cuda_context_bytes"] = p.memory.cuda_context_bytes;
  m["cublas_workspace_bytes"] = p.memory.cublas_workspace_bytes;
  m["nccl_buffsize_bytes"] = p.memory.nccl_buffsize_bytes;
  m["nccl_channels"] = p.memory.nccl_channels;
  m["fragmentation_frac"] = p.memory.fragmentation_frac;
  j["memory"] = m;
  if (p.device) j["device"] = OJson::parse(GpuToJson(*p.device));
  return j.dump(2) + "\n";
}

const CollectiveFit* FindCollectiveFit(const Profile& p, CollectiveKind kind, bool scale_out, int64_t ranks,
                                       int64_t bytes) {
  for (const CollectiveFit& f : p.collectives)
    if (f.kind == kind && f.scale_out == scale_out && f.ranks == ranks && bytes >= f.min_bytes / 4 &&
        bytes <= f.max_bytes * 4)
      return &f;
  return nullptr;
}

namespace {
// The profile's fitted alpha-beta for this collective, or nullptr (a group of one, or none fits).
const CollectiveFit* FitFor(const Profile& p, CollectiveKind kind, int64_t bytes, const GroupSpan& span) {
  if (span.size <= 1 || p.collectives.empty()) return nullptr;
  return FindCollectiveFit(p, kind, span.Crosses(), span.size, bytes);
}
double FitSeconds(const CollectiveFit& f, int64_t bytes) {
  return f.alpha_s + f.beta_s_per_byte * static_cast<double>(bytes);
}
}  // namespace

CollectiveCost ProfiledCollectiveTime(const Profile& p, CollectiveKind kind, int64_t bytes, const GroupSpan& span,
                                      const ClusterSpec& c) {
  const CollectiveFit* f = FitFor(p, kind, bytes, span);
  if (!f) return CollectiveTime(kind, bytes, span, c, p.comm);
  CollectiveCost r;
  r.time_s = FitSeconds(*f, bytes);
  r.algbw_bytes_per_s = r.time_s > 0 ? static_cast<double>(bytes) / r.time_s : 0;
  r.busbw_bytes_per_s = r.algbw_bytes_per_s * BusBandwidthFactor(kind, span.size);
  r.algorithm = "fitted";
  return r;
}

double ProfiledCollectiveSeconds(const Profile& p, CollectiveKind kind, int64_t bytes, const GroupSpan& span,
                                 const ClusterSpec& c) {
  const CollectiveFit* f = FitFor(p, kind, bytes, span);
  return f ? FitSeconds(*f, bytes) : CollectiveSeconds(kind, bytes, span, c, p.comm);
}

Result<Profile> LoadProfile(const std::string& ref) {
  if (ref == "default") return Profile{};
  Result<std::string> text = LooksLikePath(ref) ? ReadTextFile(ref) : PresetText("profiles", ref);
  if (!text.ok()) return text.status();
  auto p = ParseProfileJson(*text);
  if (!p.ok()) return Status::InvalidArgument(ref + ":\n" + p.status().message());
  return p;
}

}  // namespace meshplan::core
