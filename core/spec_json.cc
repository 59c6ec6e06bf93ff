// JSON <-> specs. The only place (with presets.cc and hf_config.cc) that includes nlohmann/json.
#include "core/spec_json.h"

#include <nlohmann/json.hpp>

#include <climits>
#include <cmath>
#include <set>
#include <sstream>

#include "core/units.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

std::string Show(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// Levenshtein distance, for "did you mean" on unknown keys.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Reads the fields of one JSON object, recording every problem; Finish() flags unknown keys.
class ObjectReader {
 public:
  ObjectReader(const Json& j, std::string path, Diagnostics* diag) : j_(j), path_(std::move(path)), diag_(diag) {
    if (!j_.is_object()) {
      diag_->Error(path_, "must be a JSON object (got " + Show(j_) + ")");
      ok_ = false;
    }
  }
  bool ok() const { return ok_; }
  std::string Path(const char* key) const { return path_ + "." + key; }

  // Returns the value if present (marking the key known); reports a missing required key.
  const Json* Find(const char* key, bool required) {
    known_.insert(key);
    if (!ok_) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) diag_->Error(Path(key), "is required");
      return nullptr;
    }
    return &*it;
  }

  bool Int(const char* key, int64_t* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      diag_->Error(Path(key), "must be at most 9223372036854775807 (got " + Show(*v) + ")");
      return false;
    }
    if (v->is_number_integer() || v->is_number_unsigned()) {
      *out = v->get<int64_t>();
      return true;
    }
    if (v->is_number_float()) {
      double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) {
        *out = static_cast<int64_t>(d);
        return true;
      }
    }
    diag_->Error(Path(key), "must be an integer (got " + Show(*v) + ")");
    return false;
  }
  bool Int(const char* key, int* out, bool required = false) {
    int64_t v = 0;
    if (!Int(key, &v, required)) return false;
    if (v < INT_MIN || v > INT_MAX) {
      diag_->Error(Path(key), "must be an integer between -2147483648 and 2147483647 (got " + std::to_string(v) + ")");
      return false;
    }
    *out = static_cast<int>(v);
    return true;
  }
  bool Double(const char* key, double* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_number()) {
      *out = v->get<double>();
      return true;
    }
    diag_->Error(Path(key), "must be a number (got " + Show(*v) + ")");
    return false;
  }
  bool Bool(const char* key, bool* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_boolean()) {
      *out = v->get<bool>();
      return true;
    }
    diag_->Error(Path(key), "must be true or false (got " + Show(*v) + ")");
    return false;
  }
  bool String(const char* key, std::string* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_string()) {
      *out = v->get<std::string>();
      return true;
    }
    diag_->Error(Path(key), "must be a string (got " + Show(*v) + ")");
    return false;
  }
  template <typename E>
  bool Enum(const char* key, E* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_string() && FromName(v->get<std::string>(), out)) return true;
    diag_->Error(Path(key), "must be one of " + Choices<E>() + " (got " + Show(*v) + ")");
    return false;
  }
  // An integer number of bytes, or a string with a unit ("80GiB", "141GB").
  bool ByteSize(const char* key, int64_t* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      diag_->Error(Path(key), "must be at most 9223372036854775807 bytes (got " + Show(*v) + ")");
      return false;
    }
    if (v->is_number_integer() || v->is_number_unsigned()) {
      *out = v->get<int64_t>();
      return true;
    }
    if (v->is_number_float()) {
      double d = v->get<double>();
      if (std::isfinite(d) && d >= 0 && d < 9e18) {
        *out = static_cast<int64_t>(std::llround(d));
        return true;
      }
    }
    if (v->is_string() && ParseByteSize(v->get<std::string>(), out)) return true;
    if (v->is_string()) {
      const std::string text = v->get<std::string>();
      const char last = text.empty() ? '\0' : text.back();
      if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
        diag_->Error(Path(key),
                     "\"" + text + "\" is ambiguous: write \"" + text + "iB\" (binary) or \"" + text + "B\" (decimal)");
        return false;
      }
    }
    diag_->Error(Path(key),
                 "must be a byte count or a size with a unit such as \"80GiB\" or "
                 "\"80GB\" (got " +
                     Show(*v) + ")");
    return false;
  }
  // A number of bytes per second, or a string with a unit ("400Gb/s", "450GB/s").
  bool Bandwidth(const char* key, double* out, bool required = false) {
    const Json* v = Find(key, required);
    if (!v) return false;
    if (v->is_number()) {
      *out = v->get<double>();
      return true;
    }
    if (v->is_string() && ParseBandwidth(v->get<std::string>(), out)) return true;
    diag_->Error(Path(key),
                 "must be bytes per second or a rate with a unit such as "
                 "\"400Gb/s\" or \"450GB/s\" (got " +
                     Show(*v) + ")");
    return false;
  }

  void Finish() {
    if (!ok_) return;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (known_.count(it.key())) continue;
      const std::string best = NearestKnownKey(it.key(), {known_.begin(), known_.end()});
      diag_->Error(Path(it.key().c_str()),
                   "is not a known field" + (best.empty() ? "" : " (did you mean \"" + best + "\"?)"));
    }
  }

 private:
  const Json& j_;
  std::string path_;
  Diagnostics* diag_;
  std::set<std::string> known_;
  bool ok_ = true;
};

Status ParseText(const std::string& text, const std::string& what, Json* out) {
  try {
    *out = Json::parse(text);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(what + ": not valid JSON: " + e.what());
  }
  return Status::Ok();
}

// ---- model -------------------------------------------------------------------------------------
void ReadModel(const Json& j, const std::string& prefix, ModelSpec* m, Diagnostics* d) {
  ObjectReader r(j, prefix, d);
  r.String("name", &m->name, true);
  r.String("source", &m->source);
  r.Int("layers", &m->layers, true);
  r.Int("hidden", &m->hidden, true);
  r.Int("heads", &m->heads, true);
  m->kv_heads = 0;
  r.Int("kv_heads", &m->kv_heads);
  m->head_dim = 0;
  r.Int("head_dim", &m->head_dim);
  r.Int("ffn_hidden", &m->ffn_hidden, true);
  r.Enum("mlp", &m->mlp, true);
  r.Int("vocab", &m->vocab, true);
  r.Int("max_seq", &m->max_seq, true);
  r.Bool("tied_embeddings", &m->tied_embeddings);
  r.Enum("position", &m->position);
  r.Enum("norm", &m->norm);
  r.Enum("bias", &m->bias);
  r.Bool("qk_norm", &m->qk_norm);
  r.Bool("attention_sinks", &m->attention_sinks);
  r.Double("rope_mscale", &m->rope_mscale);
  r.Double("glu_clamp", &m->glu_clamp);
  r.Bool("dropout", &m->dropout);
  r.Enum("attention", &m->attention);
  r.Int("mtp_layers", &m->mtp_layers);
  r.String("mtp_pattern", &m->mtp_pattern);
  r.Bool("mtp_shared", &m->mtp_shared);
  r.Int("sliding_window", &m->sliding_window);
  r.Int("global_attention_every", &m->global_attention_every);
  r.Bool("chunked_attention", &m->chunked_attention);
  if (const Json* v = r.Find("mla", false)) {
    MlaSpec mla;
    ObjectReader q(*v, prefix + ".mla", d);
    q.Int("q_lora_rank", &mla.q_lora_rank);
    q.Int("kv_lora_rank", &mla.kv_lora_rank, true);
    q.Int("qk_nope_head_dim", &mla.qk_nope_head_dim, true);
    q.Int("qk_rope_head_dim", &mla.qk_rope_head_dim, true);
    q.Int("v_head_dim", &mla.v_head_dim, true);
    q.Finish();
    m->mla = mla;
  }
  r.String("hybrid_pattern", &m->hybrid_pattern);
  if (const Json* v = r.Find("mamba", false)) {
    MambaSpec mamba;
    ObjectReader q(*v, prefix + ".mamba", d);
    q.Int("heads", &mamba.heads, true);
    q.Int("head_dim", &mamba.head_dim);
    q.Int("state", &mamba.state);
    q.Int("groups", &mamba.groups);
    q.Int("conv_kernel", &mamba.conv_kernel);
    q.Int("chunk", &mamba.chunk);
    q.Finish();
    m->mamba = mamba;
  }
  if (const Json* v = r.Find("moe", false)) {
    MoeSpec moe;
    ObjectReader q(*v, prefix + ".moe", d);
    q.Int("experts", &moe.experts, true);
    q.Int("top_k", &moe.top_k, true);
    q.Int("expert_ffn_hidden", &moe.expert_ffn_hidden, true);
    q.Int("shared_experts", &moe.shared_experts);
    q.Int("shared_expert_ffn_hidden", &moe.shared_expert_ffn_hidden);
    q.Int("first_dense_layers", &moe.first_dense_layers);
    q.Int("layer_freq", &moe.layer_freq);
    q.Enum("router", &moe.router);
    q.Bool("router_bias", &moe.router_bias);
    q.Double("capacity_factor", &moe.capacity_factor);
    q.Int("latent_size", &moe.latent_size);
    q.Finish();
    m->moe = moe;
  }
  r.Finish();
  // Defaults that depend on other fields.
  if (m->kv_heads == 0) m->kv_heads = m->heads;
  if (m->head_dim == 0 && m->heads > 0) {
    if (m->hidden % m->heads != 0)
      d->Error(prefix + ".head_dim", "is required when hidden=" + std::to_string(m->hidden) +
                                         " is not divisible by heads=" + std::to_string(m->heads));
    else m->head_dim = m->hidden / m->heads;
  }
  if (m->moe && m->moe->shared_experts > 0 && m->moe->shared_expert_ffn_hidden == 0)
    m->moe->shared_expert_ffn_hidden = m->moe->expert_ffn_hidden;
}

OJson WriteModel(const ModelSpec& m) {
  OJson j;
  j["name"] = m.name;
  j["source"] = m.source;
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["head_dim"] = m.head_dim;
  j["ffn_hidden"] = m.ffn_hidden;
  j["mlp"] = Name(m.mlp);
  j["vocab"] = m.vocab;
  j["max_seq"] = m.max_seq;
  j["tied_embeddings"] = m.tied_embeddings;
  j["position"] = Name(m.position);
  j["norm"] = Name(m.norm);
  j["bias"] = Name(m.bias);
  j["qk_norm"] = m.qk_norm;
  j["attention_sinks"] = m.attention_sinks;
  if (m.rope_mscale != 1.0) j["rope_mscale"] = m.rope_mscale;
  if (m.glu_clamp > 0) j["glu_clamp"] = m.glu_clamp;
  j["dropout"] = m.dropout;
  j["attention"] = Name(m.attention);
  if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
  if (!m.mtp_pattern.empty()) j["mtp_pattern"] = m.mtp_pattern;
  if (m.mtp_shared) j["mtp_shared"] = true;
  if (m.sliding_window > 0) {
    j["sliding_window"] = m.sliding_window;
    j["global_attention_every"] = m.global_attention_every;
    if (m.chunked_attention) j["chunked_attention"] = true;
  }
  if (m.mla) {
    OJson q;
    q["q_lora_rank"] = m.mla->q_lora_rank;
    q["kv_lora_rank"] = m.mla->kv_lora_rank;
    q["qk_nope_head_dim"] = m.mla->qk_nope_head_dim;
    q["qk_rope_head_dim"] = m.mla->qk_rope_head_dim;
    q["v_head_dim"] = m.mla->v_head_dim;
    j["mla"] = q;
  }
  if (!m.hybrid_pattern.empty()) j["hybrid_pattern"] = m.hybrid_pattern;
  if (m.mamba) {
    OJson q;
    q["heads"] = m.mamba->heads;
    q["head_dim"] = m.mamba->head_dim;
    q["state"] = m.mamba->state;
    q["groups"] = m.mamba->groups;
    q["conv_kernel"] = m.mamba->conv_kernel;
    q["chunk"] = m.mamba->chunk;
    j["mamba"] = q;
  }
  if (m.moe) {
    OJson q;
    q["experts"] = m.moe->experts;
    q["top_k"] = m.moe->top_k;
    q["expert_ffn_hidden"] = m.moe->expert_ffn_hidden;
    q["shared_experts"] = m.moe->shared_experts;
    q["shared_expert_ffn_hidden"] = m.moe->shared_expert_ffn_hidden;
    q["first_dense_layers"] = m.moe->first_dense_layers;
    q["layer_freq"] = m.moe->layer_freq;
    q["router"] = Name(m.moe->router);
    q["router_bias"] = m.moe->router_bias;
    q["capacity_factor"] = m.moe->capacity_factor;
    if (m.moe->latent_size > 0) q["latent_size"] = m.moe->latent_size;
    j["moe"] = q;
  }
  return j;
}

// ---- gpu ---------------------------------------------------------------------------------------
// An object of dtype -> number (`unit` says what the number is, for the errors) into `out`.
void ReadDtypeMap(const Json* v, const std::string& path, const char* unit, std::map<Dtype, double>* out,
                  Diagnostics* d) {
  if (!v) return;
  if (!v->is_object()) {
    d->Error(path, std::string("must be an object of dtype -> ") + unit + " (got " + Show(*v) + ")");
    return;
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    Dtype dt;
    const std::string field = path + "." + it.key();
    if (!FromName(it.key(), &dt) || dt == Dtype::kNone)
      d->Error(field, "is not a dtype (one of fp32|tf32|bf16|fp16|fp8|int8)");
    else if (!it->is_number()) d->Error(field, std::string("must be a number: ") + unit + " (got " + Show(*it) + ")");
    else (*out)[dt] = it->get<double>();
  }
}

// Calls read(kernel, value, path) for each key of `v`, an object at `path` keyed by fused attention
// kernel; a key that is not one is an error naming it.
template <typename Read>
void ForEachKernel(const Json* v, const std::string& path, const char* value_shape, Diagnostics* d, Read read) {
  if (v == nullptr) return;
  if (!v->is_object()) {
    d->Error(path, std::string("must be an object of kernel (flash|flash2|flash1|triton|cudnn-9.13|cudnn-fp8) -> ") +
                       value_shape + " (got " + Show(*v) + ")");
    return;
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    AttentionImpl impl;
    const std::string at = path + "." + it.key();
    if (!FromName(it.key(), &impl) || impl == AttentionImpl::kNaive) {
      d->Error(at, "is not a fused attention kernel (one of flash|flash2|flash1|triton|cudnn-9.13|cudnn-fp8)");
      continue;
    }
    read(impl, *it, at);
  }
}

void ReadGpu(const Json& j, const std::string& prefix, GpuSpec* g, Diagnostics* d) {
  ObjectReader r(j, prefix, d);
  r.String("name", &g->name, true);
  r.String("source", &g->source);
  ReadDtypeMap(r.Find("peak_flops_per_s", true), prefix + ".peak_flops_per_s", "FLOP/s", &g->peak_flops_per_s, d);
  r.ByteSize("hbm_bytes", &g->hbm_bytes, true);
  r.ByteSize("cuda_total_bytes", &g->cuda_total_bytes);
  r.String("cuda_total_source", &g->cuda_total_source);
  r.Bandwidth("hbm_bytes_per_s", &g->hbm_bytes_per_s, true);
  r.Double("tdp_w", &g->tdp_w, true);
  r.Int("sms", &g->sms);
  r.Int("compute_capability_major", &g->compute_capability_major);
  r.Bandwidth("host_link_bytes_per_s", &g->host_link_bytes_per_s);
  r.String("host_link_source", &g->host_link_source);
  r.Bool("gemm_wave_quantization", &g->gemm_wave_quantization);
  if (const Json* m = r.Find("gemm_misaligned_efficiency", false)) {
    ObjectReader e(*m, prefix + ".gemm_misaligned_efficiency", d);
    e.Double("even", &g->gemm_misaligned_efficiency.even, true);
    e.Double("odd", &g->gemm_misaligned_efficiency.odd, true);
    e.Finish();
  }
  r.String("gemm_misaligned_source", &g->gemm_misaligned_source);
  ReadDtypeMap(r.Find("gemm_k_overhead", false), prefix + ".gemm_k_overhead",
               "elements of the reduction a GEMM tile's fixed work costs", &g->gemm_k_overhead, d);
  r.String("gemm_k_overhead_source", &g->gemm_k_overhead_source);
  r.Double("gemm_reference_k", &g->gemm_reference_k);
  r.Double("speed_spread", &g->speed_spread);
  r.String("speed_spread_source", &g->speed_spread_source);
  ReadDtypeMap(r.Find("gemm_efficiency", false), prefix + ".gemm_efficiency", "fraction of the dtype's peak",
               &g->gemm_efficiency, d);
  r.String("gemm_efficiency_source", &g->gemm_efficiency_source);
  ForEachKernel(r.Find("attention_efficiency", false), prefix + ".attention_efficiency", "{forward, backward}", d,
                [&](AttentionImpl impl, const Json& v, const std::string& path) {
                  ObjectReader e(v, path, d);
                  GpuSpec::AttentionEfficiency eff;
                  e.Double("forward", &eff.forward, true);
                  e.Double("backward", &eff.backward, true);
                  e.Finish();
                  g->attention_efficiency[impl] = eff;
                });
  r.String("attention_efficiency_source", &g->attention_efficiency_source);
  ForEachKernel(r.Find("attention_curve", false), prefix + ".attention_curve", "[{head_dim, seq, tflops}]", d,
                [&](AttentionImpl impl, const Json& v, const std::string& path) {
                  if (!v.is_array()) {
                    d->Error(path, "must be a list of measured points {head_dim, seq, tflops} (got " + Show(v) + ")");
                    return;
                  }
                  std::vector<GpuSpec::AttentionPoint>& points = g->attention_curve[impl];
                  for (size_t i = 0; i < v.size(); ++i) {
                    ObjectReader e(v[i], path + "[" + std::to_string(i) + "]", d);
                    GpuSpec::AttentionPoint pt;
                    e.Int("head_dim", &pt.head_dim, true);
                    e.Int("seq", &pt.seq, true);
                    e.Double("tflops", &pt.tflops, true);
                    e.Finish();
                    points.push_back(pt);
                  }
                });
  r.String("attention_curve_source", &g->attention_curve_source);
  r.Finish();
}

// Writes sizes that are whole GiB as "NGiB" (how HBM is specified), else as integers.
OJson SizeJson(int64_t bytes) {
  if (bytes > 0 && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "GiB";
  return bytes;
}

OJson WriteGpu(const GpuSpec& g) {
  OJson j;
  j["name"] = g.name;
  j["source"] = g.source;
  OJson peaks = OJson::object();
  for (const auto& [dt, v] : g.peak_flops_per_s) peaks[Name(dt)] = v;
  j["peak_flops_per_s"] = peaks;
  j["hbm_bytes"] = SizeJson(g.hbm_bytes);
  if (g.cuda_total_bytes > 0) {
    j["cuda_total_bytes"] = SizeJson(g.cuda_total_bytes);
    j["cuda_total_source"] = g.cuda_total_source;
  }
  j["hbm_bytes_per_s"] = g.hbm_bytes_per_s;
  j["tdp_w"] = g.tdp_w;
  if (g.sms > 0) j["sms"] = g.sms;
  if (g.compute_capability_major > 0) j["compute_capability_major"] = g.compute_capability_major;
  if (g.host_link_bytes_per_s > 0) {
    j["host_link_bytes_per_s"] = g.host_link_bytes_per_s;
    j["host_link_source"] = g.host_link_source;
  }
  if (!g.gemm_wave_quantization) j["gemm_wave_quantization"] = false;
  if (g.gemm_misaligned_efficiency != GpuSpec::MisalignedGemm{}) {
    j["gemm_misaligned_efficiency"] = {{"even", g.gemm_misaligned_efficiency.even},
                                       {"odd", g.gemm_misaligned_efficiency.odd}};
    j["gemm_misaligned_source"] = g.gemm_misaligned_source;
  }
  if (!g.gemm_k_overhead.empty()) {
    Json k0 = Json::object();
    for (const auto& [dt, v] : g.gemm_k_overhead) k0[Name(dt)] = v;
    j["gemm_k_overhead"] = k0;
    j["gemm_k_overhead_source"] = g.gemm_k_overhead_source;
  }
  if (g.gemm_reference_k != GpuSpec::kGemmReferenceK) j["gemm_reference_k"] = g.gemm_reference_k;
  j["speed_spread"] = g.speed_spread;
  if (!g.speed_spread_source.empty()) j["speed_spread_source"] = g.speed_spread_source;
  if (!g.gemm_efficiency.empty()) {
    OJson eff = OJson::object();
    for (const auto& [dt, v] : g.gemm_efficiency) eff[Name(dt)] = v;
    j["gemm_efficiency"] = eff;
    j["gemm_efficiency_source"] = g.gemm_efficiency_source;
  }
  if (!g.attention_efficiency.empty()) {
    OJson eff = OJson::object();
    for (const auto& [impl, e] : g.attention_efficiency) {
      OJson one;
      one["forward"] = e.forward;
      one["backward"] = e.backward;
      eff[Name(impl)] = one;
    }
    j["attention_efficiency"] = eff;
    j["attention_efficiency_source"] = g.attention_efficiency_source;
  }
  if (!g.attention_curve.empty()) {
    OJson curves = OJson::object();
    for (const auto& [impl, points] : g.attention_curve) {
      OJson list = OJson::array();
      for (const auto& pt : points) list.push_back({{"head_dim", pt.head_dim}, {"seq", pt.seq}, {"tflops", pt.tflops}});
      curves[Name(impl)] = list;
    }
    j["attention_curve"] = curves;
    j["attention_curve_source"] = g.attention_curve_source;
  }
  return j;
}

// ---- cluster -----------------------------------------------------------------------------------
void ReadCluster(const Json& j, const std::string& prefix, ClusterSpec* c, Diagnostics* d) {
  ObjectReader r(j, prefix, d);
  r.String("name", &c->name, true);
  r.String("source", &c->source);
  r.String("gpu", &c->gpu);
  r.Int("gpus_per_node", &c->gpus_per_node, true);
  r.Int("scale_up_domain_gpus", &c->scale_up_domain_gpus, true);
  r.Bandwidth("scale_up_bytes_per_s", &c->scale_up_bytes_per_s, true);
  r.Double("scale_up_latency_s", &c->scale_up_latency_s);
  r.Int("nics_per_node", &c->nics_per_node, true);
  r.Bandwidth("nic_bytes_per_s", &c->nic_bytes_per_s, true);
  r.Double("scale_out_latency_s", &c->scale_out_latency_s);
  r.Enum("topology", &c->topology);
  r.Double("oversubscription", &c->oversubscription);
  r.Bool("sharp", &c->sharp);
  r.Bool("nvls", &c->nvls);
  r.Bandwidth("storage_bytes_per_s", &c->storage_bytes_per_s);
  r.ByteSize("host_memory_bytes_per_node", &c->host_memory_bytes_per_node);
  r.Bandwidth("host_memory_bytes_per_s", &c->host_memory_bytes_per_s);
  r.String("host_memory_bw_source", &c->host_memory_bw_source);
  r.Double("price_per_gpu_hour_usd", &c->price_per_gpu_hour_usd);
  r.Finish();
}

OJson WriteCluster(const ClusterSpec& c) {
  OJson j;
  j["name"] = c.name;
  j["source"] = c.source;
  j["gpu"] = c.gpu;
  j["gpus_per_node"] = c.gpus_per_node;
  j["scale_up_domain_gpus"] = c.scale_up_domain_gpus;
  j["scale_up_bytes_per_s"] = c.scale_up_bytes_per_s;
  j["scale_up_latency_s"] = c.scale_up_latency_s;
  j["nics_per_node"] = c.nics_per_node;
  j["nic_bytes_per_s"] = c.nic_bytes_per_s;
  j["scale_out_latency_s"] = c.scale_out_latency_s;
  j["topology"] = Name(c.topology);
  j["oversubscription"] = c.oversubscription;
  j["sharp"] = c.sharp;
  j["nvls"] = c.nvls;
  j["storage_bytes_per_s"] = c.storage_bytes_per_s;
  j["host_memory_bytes_per_node"] = SizeJson(c.host_memory_bytes_per_node);
  if (c.host_memory_bytes_per_s > 0) {
    j["host_memory_bytes_per_s"] = c.host_memory_bytes_per_s;
    j["host_memory_bw_source"] = c.host_memory_bw_source;
  }
  j["price_per_gpu_hour_usd"] = c.price_per_gpu_hour_usd;
  return j;
}

// ---- plan --------------------------------------------------------------------------------------
void ReadPlan(ObjectReader& r, const std::string& prefix, PlanSpec* p, Diagnostics* d) {
  r.Int("gpus", &p->gpus, true);
  r.Int("tp", &p->tp);
  r.Int("pp", &p->pp);
  r.Int("dp", &p->dp);
  r.Int("cp", &p->cp);
  r.Int("ep", &p->ep);
  r.Int("etp", &p->etp);
  r.Int("vpp", &p->vpp);
  r.Int("vpp_group", &p->vpp_group);
  r.Int("pp_flushes", &p->pp_flushes);
  r.Int("zero", &p->zero);
  r.Enum("sharding", &p->sharding);
  r.Int("hsdp_shard_size", &p->hsdp_shard_size);
  r.Bool("sequence_parallel", &p->sequence_parallel);
  r.Enum("recompute", &p->recompute);
  r.Int("recompute_layers", &p->recompute_layers);
  r.Bool("recompute_early_stop", &p->recompute_early_stop);
  r.Int("vocab_divisible_by", &p->vocab_divisible_by);
  // A list of Megatron-Core module names, e.g. ["core_attn", "moe_act"], as a set of bits.
  const auto modules = [&](const Json* v, const std::string& field, bool (*parse)(const std::string&, uint32_t*),
                           const std::string& choices, uint32_t* out) {
    std::string joined;
    bool strings = v->is_array() && !v->empty();
    if (strings)
      for (const Json& e : *v) {
        if (!e.is_string()) strings = false;
        else joined += (joined.empty() ? "" : ",") + e.get<std::string>();
      }
    if (!strings || !parse(joined, out))
      d->Error(field,
               "must be a non-empty list of distinct modules, each one of " + choices + " (got " + Show(*v) + ")");
  };
  if (const Json* v = r.Find("recompute_modules", false))
    modules(v, prefix + ".recompute_modules", &ParseRecomputeModules, Choices<RecomputeModule>(),
            &p->recompute_modules);
  r.Int("micro_batch", &p->micro_batch, true);
  r.Int("global_batch", &p->global_batch, true);
  r.Int("seq_len", &p->seq_len, true);
  r.Enum("schedule", &p->schedule);
  r.Enum("precision", &p->precision);
  r.Int("bf16_layers_at_start", &p->bf16_layers_at_start);
  r.Int("bf16_layers_at_end", &p->bf16_layers_at_end);
  if (const Json* v = r.Find("dtypes", false)) {
    ObjectReader q(*v, prefix + ".dtypes", d);
    q.Enum("weights", &p->dtypes.weights);
    q.Enum("grads", &p->dtypes.grads);
    q.Enum("master_weights", &p->dtypes.master_weights);
    q.Enum("optimizer_states", &p->dtypes.optimizer_states);
    q.Finish();
  }
  r.Enum("optimizer", &p->optimizer);
  if (const Json* v = r.Find("offload", false)) {
    ObjectReader q(*v, prefix + ".offload", d);
    q.Enum("optimizer", &p->offload_optimizer);
    q.Enum("params", &p->offload_params);
    q.Int("activation_layers", &p->offload_activation_layers);
    q.Bool("checkpoints", &p->offload_checkpoints);
    if (const Json* list = q.Find("modules", false))  // fine-grained activation offloading's offload_modules
      modules(list, prefix + ".offload.modules", &ParseOffloadModules, Choices<OffloadModule>(), &p->offload_modules);
    q.Finish();
  }
  r.Enum("cp_kind", &p->cp_kind);
  r.Int("segment_nodes", &p->segment_nodes);
  std::string placement;
  if (r.String("placement", &placement) && !ParsePlacement(placement, &p->placement)) {
    d->Error(prefix + ".placement",
             "must order all five axes tp, cp, ep, dp, pp once each, innermost first, e.g. "
             "\"tp-cp-ep-dp-pp\" (got \"" +
                 placement + "\")");
  }
  r.Bool("overlap_grad_reduce", &p->overlap_grad_reduce);
  r.Bool("overlap_param_gather", &p->overlap_param_gather);
  r.Bool("grad_accum_fusion", &p->grad_accum_fusion);
  r.Bool("grad_prescale", &p->grad_prescale);
  r.Bool("ep_overlap", &p->ep_overlap);
  r.Bool("delay_wgrad", &p->delay_wgrad);
  r.Enum("tp_overlap", &p->tp_overlap);
  r.Enum("zero3_gather", &p->zero3_gather);
  r.Enum("fp8_scaling", &p->fp8_scaling);
  r.Enum("cross_entropy", &p->cross_entropy);
  r.Int("deferred_head_wgrad", &p->deferred_head_wgrad);
  r.Enum("elementwise", &p->elementwise);
  r.Bool("repeat_kv", &p->repeat_kv);
  r.Bool("dtensor_tp", &p->dtensor_tp);
  r.Bool("torch_cp", &p->torch_cp);
  r.Bool("keep_lp_grads", &p->keep_lp_grads);
  r.Bool("fp8_param_gather", &p->fp8_param_gather);
  r.Bool("fp8_attention", &p->fp8_attention);
  r.Bool("keep_pp_outputs", &p->keep_pp_outputs);
  r.Int("cuda_context_bytes", &p->cuda_context_bytes);
  r.Bool("transformer_engine", &p->transformer_engine);
  r.Bool("moe_grouped_gemm", &p->moe_grouped_gemm);
  r.Bool("moe_router_padding", &p->moe_router_padding);
  r.Bool("moe_op_fuser", &p->moe_op_fuser);
  r.Double("moe_imbalance", &p->moe_imbalance);
  r.Enum("moe_dispatcher", &p->moe_dispatcher);
  r.Enum("moe_routing", &p->moe_routing);
  r.Enum("moe_host", &p->moe_host);
  r.Enum("moe_probs", &p->moe_probs);
  r.Enum("expert_bias", &p->expert_bias);
  if (const Json* v = r.Find("stage_layers", false)) {
    if (!v->is_array()) {
      d->Error(prefix + ".stage_layers", "must be an array of layer counts (got " + Show(*v) + ")");
    } else {
      p->stage_layers.clear();
      for (size_t i = 0; i < v->size(); ++i) {
        const Json& e = (*v)[i];
        if (!e.is_number_integer()) {
          d->Error(prefix + ".stage_layers[" + std::to_string(i) + "]", "must be an integer (got " + Show(e) + ")");
        } else {
          p->stage_layers.push_back(e.get<int64_t>());
        }
      }
    }
  }
}

// A set of module bits (bit i for the enum's value i, up to `last`) as the list of their names.
template <typename E>
OJson ModuleNames(uint32_t bits, E last) {
  OJson names = OJson::array();
  for (int i = 0; i <= static_cast<int>(last); ++i)
    if ((bits & (uint32_t{1} << i)) != 0) names.push_back(Name(static_cast<E>(i)));
  return names;
}

OJson WritePlan(const PlanSpec& p) {
  OJson j;
  j["gpus"] = p.gpus;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["dp"] = p.dp;
  j["cp"] = p.cp;
  j["ep"] = p.ep;
  j["etp"] = p.etp;
  j["vpp"] = p.vpp;
  if (p.vpp_group > 0) j["vpp_group"] = p.vpp_group;
  if (p.pp_flushes != 1) j["pp_flushes"] = p.pp_flushes;
  j["zero"] = p.zero;
  j["sharding"] = Name(p.sharding);
  j["hsdp_shard_size"] = p.hsdp_shard_size;
  j["sequence_parallel"] = p.sequence_parallel;
  j["recompute"] = Name(p.recompute);
  j["recompute_layers"] = p.recompute_layers;
  if (p.recompute_early_stop) j["recompute_early_stop"] = true;
  if (p.vocab_divisible_by != 1) j["vocab_divisible_by"] = p.vocab_divisible_by;
  if (p.recompute_modules != kDefaultRecomputeModules)
    j["recompute_modules"] = ModuleNames(p.recompute_modules, kLastRecomputeModule);
  j["micro_batch"] = p.micro_batch;
  j["global_batch"] = p.global_batch;
  j["seq_len"] = p.seq_len;
  j["schedule"] = Name(p.schedule);
  j["precision"] = Name(p.precision);
  if (p.bf16_layers_at_start > 0) j["bf16_layers_at_start"] = p.bf16_layers_at_start;
  if (p.bf16_layers_at_end > 0) j["bf16_layers_at_end"] = p.bf16_layers_at_end;
  OJson dt;
  dt["weights"] = Name(p.dtypes.weights);
  dt["grads"] = Name(p.dtypes.grads);
  dt["master_weights"] = Name(p.dtypes.master_weights);
  dt["optimizer_states"] = Name(p.dtypes.optimizer_states);
  j["dtypes"] = dt;
  j["optimizer"] = Name(p.optimizer);
  OJson off;
  off["optimizer"] = Name(p.offload_optimizer);
  off["params"] = Name(p.offload_params);
  if (p.offload_activation_layers > 0) off["activation_layers"] = p.offload_activation_layers;
  if (p.offload_checkpoints) off["checkpoints"] = true;
  if (p.offload_modules != 0) off["modules"] = ModuleNames(p.offload_modules, OffloadModule::kFusedGroupMlp);
  j["offload"] = off;
  j["cp_kind"] = Name(p.cp_kind);
  j["placement"] = PlacementString(p.placement);
  if (p.segment_nodes > 0) j["segment_nodes"] = p.segment_nodes;
  if (!p.stage_layers.empty()) j["stage_layers"] = p.stage_layers;
  j["overlap_grad_reduce"] = p.overlap_grad_reduce;
  j["overlap_param_gather"] = p.overlap_param_gather;
  j["grad_accum_fusion"] = p.grad_accum_fusion;
  j["grad_prescale"] = p.grad_prescale;
  j["ep_overlap"] = p.ep_overlap;
  j["delay_wgrad"] = p.delay_wgrad;
  j["tp_overlap"] = Name(p.tp_overlap);
  j["zero3_gather"] = Name(p.zero3_gather);
  j["fp8_scaling"] = Name(p.fp8_scaling);
  j["cross_entropy"] = Name(p.cross_entropy);
  if (p.deferred_head_wgrad > 0) j["deferred_head_wgrad"] = p.deferred_head_wgrad;
  j["elementwise"] = Name(p.elementwise);
  j["repeat_kv"] = p.repeat_kv;
  if (p.dtensor_tp) j["dtensor_tp"] = true;
  if (p.torch_cp) j["torch_cp"] = true;
  j["keep_lp_grads"] = p.keep_lp_grads;
  if (p.fp8_param_gather) j["fp8_param_gather"] = true;
  if (p.fp8_attention) j["fp8_attention"] = true;
  if (p.keep_pp_outputs) j["keep_pp_outputs"] = true;
  if (p.cuda_context_bytes > 0) j["cuda_context_bytes"] = p.cuda_context_bytes;
  j["transformer_engine"] = p.transformer_engine;
  if (!p.moe_grouped_gemm) j["moe_grouped_gemm"] = false;
  if (p.moe_router_padding) j["moe_router_padding"] = true;
  if (p.moe_op_fuser) j["moe_op_fuser"] = true;
  if (p.moe_imbalance != 1) j["moe_imbalance"] = p.moe_imbalance;
  j["moe_dispatcher"] = Name(p.moe_dispatcher);
  if (p.moe_routing != MoeRouting::kUniform) j["moe_routing"] = Name(p.moe_routing);
  if (p.moe_host != MoeHost::kMegatronCore) j["moe_host"] = Name(p.moe_host);
  if (p.moe_probs != MoeProbs::kFused) j["moe_probs"] = Name(p.moe_probs);
  if (p.expert_bias != ExpertBias::kFused) j["expert_bias"] = Name(p.expert_bias);
  return j;
}

std::string Dump(const OJson& j) { return j.dump(2) + "\n"; }

template <typename Spec, typename ReadFn, typename ValidateFn>
Result<Spec> ParseSpec(const std::string& text, const std::string& prefix, ReadFn read, ValidateFn validate) {
  Json j;
  Status s = ParseText(text, prefix, &j);
  if (!s.ok()) return s;
  Spec spec;
  Diagnostics d;
  read(j, prefix, &spec, &d);
  if (!d.has_errors()) validate(spec, prefix, &d);
  if (d.has_errors()) return d.ToStatus();
  return spec;
}

}  // namespace

std::string NearestKnownKey(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = 3;
  for (const auto& k : known) {
    const size_t d = EditDistance(key, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

Result<ModelSpec> ParseModelJson(const std::string& text, const std::string& prefix) {
  return ParseSpec<ModelSpec>(text, prefix, ReadModel, ValidateModel);
}
Result<GpuSpec> ParseGpuJson(const std::string& text, const std::string& prefix) {
  return ParseSpec<GpuSpec>(text, prefix, ReadGpu, ValidateGpu);
}
Result<ClusterSpec> ParseClusterJson(const std::string& text, const std::string& prefix) {
  return ParseSpec<ClusterSpec>(text, prefix, ReadCluster, ValidateCluster);
}

std::string ModelToJson(const ModelSpec& m) { return Dump(WriteModel(m)); }
std::string GpuToJson(const GpuSpec& g) { return Dump(WriteGpu(g)); }
std::string ClusterToJson(const ClusterSpec& c) { return Dump(WriteCluster(c)); }

Result<PlanFile> ParsePlanFileJson(const std::string& text) {
  Json j;
  Status s = ParseText(text, "plan", &j);
  if (!s.ok()) return s;
  PlanFile file;
  Diagnostics d;
  ObjectReader r(j, "plan", &d);
  ReadPlan(r, "plan", &file.plan, &d);
  // model / gpu / cluster: a preset name or an embedded object.
  auto ref = [&](const char* key, std::optional<std::string>* name, auto* spec, auto read, auto validate) {
    const Json* v = r.Find(key, false);
    if (!v) return;
    std::string path = std::string("plan.") + key;
    if (v->is_string()) {
      *name = v->get<std::string>();
    } else if (v->is_object()) {
      typename std::remove_reference_t<decltype(*spec)>::value_type value;
      Diagnostics sub;
      read(*v, path, &value, &sub);
      if (!sub.has_errors()) validate(value, path, &sub);
      d.Append(sub);
      *spec = value;
    } else {
      d.Error(path, "must be a preset name or an object (got " + Show(*v) + ")");
    }
  };
  ref("model", &file.model_name, &file.model, ReadModel, ValidateModel);
  ref("gpu", &file.gpu_name, &file.gpu, ReadGpu, ValidateGpu);
  ref("cluster", &file.cluster_name, &file.cluster, ReadCluster, ValidateCluster);
  r.Finish();
  if (d.has_errors()) return d.ToStatus();
  return file;
}

std::string PlanToJson(const PlanSpec& p) { return Dump(WritePlan(p)); }

std::string PlanFileToJson(const PlanFile& file) {
  OJson j = WritePlan(file.plan);
  if (file.model) j["model"] = WriteModel(*file.model);
  else if (file.model_name) j["model"] = *file.model_name;
  if (file.gpu) j["gpu"] = WriteGpu(*file.gpu);
  else if (file.gpu_name) j["gpu"] = *file.gpu_name;
  if (file.cluster) j["cluster"] = WriteCluster(*file.cluster);
  else if (file.cluster_name) j["cluster"] = *file.cluster_name;
  return Dump(j);
}

}  // namespace meshplan::core
