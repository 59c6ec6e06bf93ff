#include "core/published.h"

#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/validate.h"

namespace meshplan::core {
namespace {

using Json = nlohmann::json;

int64_t IntOr(const Json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}
double NumOr(const Json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string StrOr(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// GPU names as the records print them -> our presets (GPU, cluster).
bool MapGpu(const std::string& text, std::string* gpu, std::string* cluster) {
  if (text.find("A100") != std::string::npos && text.find("80") != std::string::npos) {
    *gpu = "a100-80g";
    *cluster = "dgx-a100";
    return true;
  }
  return false;
}

// What a run's authors published outside the paper's table (their launch scripts): micro-batch
// size, interleave degree and data-parallel implementation, from presets/launches/*.json. Found
// by record id; null when no launch file names the record.
struct LaunchConfig {
  int64_t microbatch = 0;
  int64_t vpp = 0;
  std::string ddp;  // "torch" (bucketed, overlapped with backward) or "local" (after the flush)
  std::string source;
};
std::optional<LaunchConfig> FindLaunchConfig(const std::string& id) {
  // Every launch file parsed once (the presets are compiled in and never change).
  static const std::map<std::string, LaunchConfig> kRuns = [] {
    std::map<std::string, LaunchConfig> runs;
    for (const auto& name : PresetNames("launches")) {
      auto text = PresetText("launches", name);
      if (!text.ok()) continue;
      const Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("runs") || !j["runs"].is_object()) continue;
      for (const auto& [run_id, v] : j["runs"].items()) {
        if (!v.is_object()) continue;
        runs.emplace(run_id, LaunchConfig{.microbatch = IntOr(v, "microbatch", 0),
                                          .vpp = IntOr(v, "vpp", 0),
                                          .ddp = StrOr(v, "ddp"),
                                          .source = StrOr(j, "source")});
      }
    }
    return runs;
  }();
  auto it = kRuns.find(id);
  if (it == kRuns.end()) return std::nullopt;
  return it->second;
}

}  // namespace

namespace {

// The one fixed mapping from a record to a scenario (model, GPU, cluster, plan) with the
// assumptions it made; false (and `why`) for a record that does not describe a run we can plan.
bool MapRecord(const Json& r, PublishedRun* out, std::string* why) {
  const std::string id = StrOr(r, "id");
  if (!r.contains("model") || !r.contains("parallel") || !r.contains("measured")) {
    *why = "not a run record";
    return false;
  }
  auto skip = [&](const std::string& w) { *why = w; };
  const Json& mj = r["model"];
  const Json& pj = r["parallel"];
  static const Json kNone = Json::object();
  const Json& hj = r.contains("hardware") && r["hardware"].is_object() ? r["hardware"] : kNone;
  const int64_t layers = IntOr(mj, "layers", 0), hidden = IntOr(mj, "hidden", 0), heads = IntOr(mj, "heads", 0);
  const int64_t tp = IntOr(pj, "tp", 0), pp = IntOr(pj, "pp", 0), dp = IntOr(pj, "dp", 0);
  if (layers <= 0 || hidden <= 0 || heads <= 0 || tp <= 0 || pp <= 0 || dp <= 0) {
    skip("no model dimensions or no full tp/pp/dp plan");
    return false;
  }
  std::string gpu, cluster;
  if (!MapGpu(StrOr(hj, "gpu"), &gpu, &cluster)) {
    skip("no GPU preset for '" + StrOr(hj, "gpu") + "'");
    return false;
  }
  PublishedRun& run = *out;
  run.id = id;
  if (r.contains("source") && r["source"].is_object())
    run.source = StrOr(r["source"], "paper") + ", " + StrOr(r["source"], "table") + ", " + StrOr(r["source"], "row");
  Scenario& s = run.scenario;
  auto g = LoadGpu(gpu);
  auto c = LoadCluster(cluster);
  if (!g.ok() || !c.ok()) {
    skip("presets " + gpu + "/" + cluster + " missing");
    return false;
  }
  s.gpu = *g;
  s.cluster = *c;
  // NCCL reduces in the network (CollNet/SHARP) only when NCCL_COLLNET_ENABLE=1 and the SHARP
  // plugin is installed; the records do not say so, so NCCL's own algorithms are costed.
  if (s.cluster.sharp) {
    s.cluster.sharp = false;
    run.assumptions.push_back("no in-network reduction (NCCL's CollNet/SHARP is off unless enabled)");
  }
  // The GPT of Megatron-LM (Narayanan 2021 §5.1, Korthikanti 2022 §3): f = 4h GELU MLP, biases,
  // LayerNorm, learned positions, tied embeddings, dropout, unfused (s^2) attention.
  ModelSpec& m = s.model;
  m.name = StrOr(mj, "name").empty() ? id : StrOr(mj, "name");
  m.source = run.source;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = IntOr(mj, "ffn_hidden", 4 * hidden);
  m.mlp = MlpKind::kGelu;
  m.vocab = IntOr(mj, "vocab", 51200);
  m.max_seq = IntOr(mj, "seq_len", 2048);
  m.tied_embeddings = true;
  m.position = PositionKind::kLearned;
  m.norm = NormKind::kLayerNorm;
  m.bias = BiasKind::kAll;
  m.dropout = true;
  m.attention = AttentionImpl::kNaive;
  PlanSpec& p = s.plan;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.gpus = tp * pp * dp;
  p.seq_len = m.max_seq;
  p.global_batch = IntOr(r, "global_batch", 0);
  const std::optional<LaunchConfig> launch = FindLaunchConfig(id);
  // What the record prints, else what the launch script gives (said in the assumptions), else 0.
  auto printed_or_launched = [&](int64_t printed, int64_t LaunchConfig::*field, const char* what) -> int64_t {
    if (printed > 0) return printed;
    if (!launch || (*launch).*field <= 0) return 0;
    run.assumptions.push_back(std::string(what) + " " + std::to_string((*launch).*field) + " from " + launch->source);
    return (*launch).*field;
  };
  p.micro_batch = printed_or_launched(IntOr(r, "microbatch", 0), &LaunchConfig::microbatch, "micro batch");
  if (p.micro_batch <= 0) {
    p.micro_batch = 1;
    run.assumptions.push_back("micro batch not printed: 1");
  }
  p.vpp = printed_or_launched(IntOr(pj, "vpp", 0), &LaunchConfig::vpp, "interleave degree");
  if (p.vpp <= 0) {
    p.vpp = 1;
    if (pp > 1 && StrOr(pj, "notes").find("nterleav") != std::string::npos)
      run.assumptions.push_back("interleave degree not printed: 1F1B (no interleaving)");
  }
  if (p.vpp > 1) p.schedule = Schedule::kInterleaved;
  p.sequence_parallel = pj.contains("sequence_parallel") && pj["sequence_parallel"].is_boolean() &&
                        pj["sequence_parallel"].get<bool>();
  const std::string rc = StrOr(pj, "recompute");
  p.recompute = rc.rfind("full", 0) == 0 ? Recompute::kFull
                : rc.rfind("selective", 0) == 0 ? Recompute::kSelective
                                               : Recompute::kNone;
  p.precision = Dtype::kFp16;
  // Megatron-LM of 2021-22: data-parallel all-reduce after the pipeline flush, no distributed
  // optimizer, fp32 main gradients reduced in 16-bit.
  p.overlap_grad_reduce = false;
  if (launch && launch->ddp == "torch") {
    // PyTorch DDP reduces gradients in buckets while the backward pass runs.
    p.overlap_grad_reduce = true;
    run.assumptions.push_back("PyTorch DDP (gradient all-reduce overlapped with backward) from " + launch->source);
  }
  // The asynchronous input-gradient reduction entered Megatron-LM after the SC21 paper; the
  // Korthikanti 2022 runs have it (their SP backward overlaps both collectives, §4.2.2).
  p.tp_overlap = id.rfind("narayanan2021", 0) == 0 ? TpOverlap::kNone : TpOverlap::kBackward;
  // Gradient-accumulation fusion (the weight-gradient GEMM adding into the fp32 main gradient)
  // needs apex's fused_weight_gradient_mlp_cuda, not in the SC21 runs' container
  // (nvcr.io/nvidia/pytorch:20.12-py3, Megatron-LM examples/sc21/SRUN.sh).
  if (id.rfind("narayanan2021", 0) == 0) {
    p.grad_accum_fusion = false;
    run.assumptions.push_back("no gradient-accumulation fusion (Megatron-LM of 2021)");
  }
  p.zero = 0;
  Diagnostics d;
  ValidatePlan(p, m, s.gpu, s.cluster, &d);
  if (d.has_errors()) {
    skip("plan invalid: " + d.ToStatus().message());
    return false;
  }
  return true;
}

Result<Json> ParseDataset(const std::string& text) {
  Json records;
  try {
    records = Json::parse(text);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("dataset: not valid JSON: ") + e.what());
  }
  if (!records.is_array()) return Status::InvalidArgument("dataset: must be a JSON array of records");
  return records;
}

}  // namespace

Result<std::vector<PublishedRun>> LoadPublishedRuns(const std::string& text, std::vector<std::string>* skipped) {
  auto records = ParseDataset(text);
  if (!records.ok()) return records.status();
  std::vector<PublishedRun> runs;
  for (const Json& r : *records) {
    const std::string id = r.is_object() ? StrOr(r, "id") : "";
    PublishedRun run;
    std::string why;
    if (!r.is_object() || !MapRecord(r, &run, &why)) {
      if (skipped) skipped->push_back(id + ": " + (why.empty() ? "not a run record" : why));
      continue;
    }
    const Json& me = r["measured"];
    const double it_s = NumOr(me, "iteration_time_s", 0), tflops = NumOr(me, "tflops_per_gpu", 0);
    if (it_s > 0) {
      run.metric = PublishedMetric::kIterationTimeS;
      run.published = it_s;
    } else if (tflops > 0) {
      run.metric = PublishedMetric::kHardwareTflopsPerGpu;
      run.published = tflops;
    } else {
      if (skipped) skipped->push_back(id + ": no measured iteration time or throughput");
      continue;
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

Result<std::vector<PublishedLayerTiming>> LoadPublishedLayerTimings(const std::string& text) {
  auto records = ParseDataset(text);
  if (!records.ok()) return records.status();
  std::vector<PublishedLayerTiming> out;
  for (const Json& r : *records) {
    if (!r.is_object() || !r.contains("measured") || !r["measured"].is_object()) continue;
    if (!r["measured"].contains("other") || !r["measured"]["other"].is_object()) continue;
    const Json& other = r["measured"]["other"];
    const double f_ms = NumOr(other, "forward_ms", 0), b_ms = NumOr(other, "backward_ms", 0);
    if (f_ms <= 0 || b_ms <= 0) continue;
    PublishedRun run;
    std::string why;
    if (!MapRecord(r, &run, &why)) continue;
    out.push_back({run.id, run.source, run.scenario, f_ms / 1e3, b_ms / 1e3, run.assumptions});
  }
  return out;
}

}  // namespace meshplan::core
