#include "core/published.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/defaults.h"
#include "core/memory.h"
#include "core/params.h"
#include "core/spec_json.h"
#include "core/stack.h"
#include "core/validate.h"

namespace meshplan::core {
namespace {

using Json = nlohmann::json;

// An integer field: a JSON integer, or a float that holds a whole number within int64's range
// (1536.0, 4.194304e6); anything else is the fallback.
int64_t IntOr(const Json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15) return static_cast<int64_t>(v);
  }
  return fallback;
}
double NumOr(const Json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string StrOr(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
std::string Lower(std::string t) {
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return t;
}
// A number with two decimals ("1.00", "1.25").
std::string TwoDecimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
std::optional<bool> BoolAt(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? std::optional<bool>(it->get<bool>()) : std::nullopt;
}

// A GPU name as the matcher reads it: upper case, and a memory size written apart from its unit
// joined to it ("40 GB", "40 GiB" -> "40GB"), so that "a100 40 GB" reads as "A100 40GB".
std::string GpuNameKey(const std::string& text) {
  std::string up;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
    if (ch == ' ' && !up.empty() && std::isdigit(static_cast<unsigned char>(up.back())) && i + 2 < text.size() &&
        std::toupper(static_cast<unsigned char>(text[i + 1])) == 'G' &&
        (std::toupper(static_cast<unsigned char>(text[i + 2])) == 'B' ||
         (std::toupper(static_cast<unsigned char>(text[i + 2])) == 'I' && i + 3 < text.size() &&
          std::toupper(static_cast<unsigned char>(text[i + 3])) == 'B')))
      continue;
    up += ch;
  }
  // "40GIB" -> "40GB": the same part, whichever unit the source prints.
  for (size_t at = up.find("GIB"); at != std::string::npos; at = up.find("GIB", at))
    if (at > 0 && std::isdigit(static_cast<unsigned char>(up[at - 1]))) up.erase(at + 1, 1);
    else ++at;
  return up;
}

// A record's hardware -> our presets (GPU, cluster), with what the mapping assumed. The GPU from
// its printed name, read without case (GpuNameKey), the more specific names first ("A100 40GB"
// before "A100", "GB200" before "B200", "GH200" before "H200"); the cluster the GPU's usual one,
// unless the hardware names the machine (Jean Zay). A part that looks like a preset's but is not
// the same machine (a PCIe card, the 144 GB Grace Hopper module, an export variant with narrower NVLink, a
// V100 without a cluster preset) is refused with the reason in `why`, never mapped to the
// look-alike.
bool MapGpu(const Json& hardware, std::string* gpu, std::string* cluster, std::vector<std::string>* assumed,
            std::string* why) {
  const std::string text = StrOr(hardware, "gpu");
  const std::string key = GpuNameKey(text);
  auto has = [&](const char* w) { return key.find(w) != std::string::npos; };
  auto refuse = [&](const std::string& reason) {
    *why = reason;
    return false;
  };
  if (has("GH200") && (has("144GB") || has("141GB") || has("HBM3E")))
    return refuse(
        "the 144 GB HBM3e Grace Hopper module (4.9 TB/s) has no preset; the gh200 preset is the 96 GB HBM3 one, "
        "another part");
  if (has("H20") && !has("H200"))
    return refuse(
        "an export variant (H20: a reduced Hopper) has no preset; the part it derives from would be another "
        "machine");
  // The A800's only 40GB part is a PCIe card (A800 40GB Active).
  if ((has("A100") || has("A800") || has("H100")) &&
      (has("PCIE") || has("H100 NVL") || has("H100-NVL") || has("H100NVL") || (has("A800") && has("40GB"))))
    return refuse(
        "a PCIe card (or the NVLink-bridged H100 NVL pair) has no cluster preset; the SXM part's "
        "NVSwitch node would be another machine");
  if (has("V100") && (has("PCIE") || has("16GB") || has("DGX-1") || has("DGX1") || has("SXM2")))
    return refuse(
        "a V100 other than the DGX-2's 32GB SXM3 (a PCIe card, a 16GB part, or an SXM2 module in a DGX-1's "
        "hybrid cube-mesh NVLink, where not every pair of GPUs is linked) has no preset; the DGX-2's NVSwitch "
        "node would be another machine");
  if (has("GH200")) {
    // Checked before H200 and H100: the GH200 is a module of its own (HBM3 at 4 TB/s, NVLink-C2C
    // to its Grace CPU), four to a node in the HPC systems that train on it.
    *gpu = "gh200";
    *cluster = "gh200-quad";
    assumed->push_back(
        "GH200 (96 GB HBM3) in nodes of four modules, all-to-all NVLink at 150 GB/s per pair and one 200 Gb/s NIC "
        "each (gh200-quad: CSCS Alps' shape; JUPITER and Isambard-AI build the same)");
  } else if (has("V100") && (has("DGX-2H") || has("DGX2H"))) {
    // Shoeybi et al. 2019: V100 SXM3 32GB at the DGX-2H's 450 W and 130 TFLOP/s.
    *gpu = "v100-dgx2h";
    *cluster = "dgx-2h";
  } else if (has("V100")) {
    *gpu = "v100";
    *cluster = "dgx-2";
    if (!has("DGX-2") && !has("DGX2"))
      assumed->push_back(
          "V100 without its machine printed: 32GB SXM3 in a DGX-2 (16 GPUs on NVSwitch, 8 x 100 Gb/s NICs)");
  } else if (has("A100") && has("40GB")) {
    *gpu = "a100-40g";
    *cluster = "dgx-a100";
  } else if (has("A100")) {
    *gpu = "a100-80g";
    *cluster = "dgx-a100";
  } else if (has("A800")) {
    // The A100 80GB SXM4 with NVLink at 400 GB/s (presets/gpus/a800.json).
    *gpu = "a800";
    *cluster = "hgx-a800";
    assumed->push_back(
        "A800 in an 8-GPU HGX node (hgx-a800): NVLink 200 GB/s per direction, the DGX A100's network assumed (8 x "
        "200 Gb/s NICs)");
  } else if (has("AMPERE")) {
    // MegaScale §6 names "NVIDIA Ampere GPUs"; its MFU figures divide by 312 TFLOP/s (A100).
    *gpu = "a100-80g";
    *cluster = "dgx-a100";
    assumed->push_back("GPU printed as 'Ampere': A100 80GB in 8-GPU NVLink nodes with 8 x 200 Gb/s NICs (dgx-a100)");
  } else if (has("H800")) {
    *gpu = "h800";
    *cluster = "hgx-h800";
  } else if (has("H200")) {
    *gpu = "h200";
    *cluster = "dgx-h200";
  } else if (has("GB300")) {
    *gpu = "gb300";
    *cluster = "gb300-nvl72";
  } else if (has("B300")) {
    *gpu = "b300";
    *cluster = "dgx-b300";
  } else if (has("GB200")) {
    *gpu = "gb200";
    *cluster = "gb200-nvl72";
  } else if (has("B200")) {
    *gpu = "b200";
    *cluster = "dgx-b200";
  } else if (has("H100") && has("96GB")) {
    *gpu = "h100-96g-hbm2e";
    *cluster = "grand-teton-h100";
  } else if (has("H100")) {
    *gpu = "h100-sxm";
    *cluster = "dgx-h100";
  } else if (has("MI300X")) {
    *gpu = "mi300x";
    *cluster = "mi300x-8";
  } else if (has("MI325X")) {
    *gpu = "mi325x";
    *cluster = "mi325x-8";
  } else if (has("MI355X")) {
    // Before MI350X: the two names share no substring, but a record may print both ("MI350X
    // series, MI355X"); the part is the one named most specifically.
    *gpu = "mi355x";
    *cluster = "mi355x-8";
  } else if (has("MI350X")) {
    *gpu = "mi350x";
    *cluster = "mi350x-8";
  } else {
    return refuse("no GPU preset for '" + text + "'");
  }
  // A100s the record places on IDRIS's Jean Zay (BigScience's runs): 4 Omni-Path links per node,
  // not a DGX A100's 8 HDR NICs (presets/clusters/jean-zay-a100.json).
  const std::string where = GpuNameKey(text + " " + StrOr(hardware, "gpu_as_printed") + " " + StrOr(hardware, "notes"));
  if (*cluster == "dgx-a100" && where.find("JEAN ZAY") != std::string::npos) {
    *cluster = "jean-zay-a100";
    assumed->push_back("cluster jean-zay-a100 (the record names Jean Zay: 4 x 100 Gb/s Omni-Path per node)");
  }
  return true;
}

// A model named but not dimensioned ("LLAMA3_8B": the source says to use the public config) ->
// the model preset of that name, compared without case or punctuation. Llama 3.1 models are the
// Llama 3 presets (the 405B is the Llama 3 paper's).
std::string Squash(const std::string& text) {
  std::string out;
  for (char ch : text)
    if (std::isalnum(static_cast<unsigned char>(ch)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}
// The model size a record prints, in billions: model.params_b, else a "<number>B" label in its
// name ("GPT 1.7B"); 0 when neither.
double PrintedBillions(const Json& mj) {
  if (const double b = NumOr(mj, "params_b", 0); b > 0) return b;
  const std::string name = StrOr(mj, "name");
  for (size_t i = 0; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) ||
        (i > 0 && std::isalnum(static_cast<unsigned char>(name[i - 1]))))
      continue;
    size_t j = i;
    while (j < name.size() && (std::isdigit(static_cast<unsigned char>(name[j])) || name[j] == '.')) ++j;
    if (j < name.size() && name[j] == 'B' &&
        (j + 1 == name.size() || !std::isalnum(static_cast<unsigned char>(name[j + 1]))))
      return std::atof(name.substr(i, j - i).c_str());
    i = j;
  }
  return 0;
}

std::optional<std::string> ModelPresetFor(const std::string& name) {
  // A parenthesised qualifier names the recipe or a run variant, not another model: "Llama 3.1
  // 405B (NeMo recipe)", "Qwen3_30B_a3B (tokendrop)".
  std::string bare;
  int depth = 0;
  for (char ch : name) {
    if (ch == '(') ++depth;
    else if (ch == ')') depth = std::max(0, depth - 1);
    else if (depth == 0) bare += ch;
  }
  std::string key = Squash(bare);
  // Hugging Face's repository names carry the organisation: Meta-Llama-3-8B is Llama 3 8B.
  if (key.rfind("metallama", 0) == 0) key = key.substr(4);
  // Llama 3.1 keeps Llama 3's shapes (a longer context): llama3.1-8b is the llama3-8b preset. So
  // does Llama 3.3 70B, its one size (oumi-ai/oumi configs/recipes/llama3_3/README.md at bd18cd68:
  // vocab 128,256, hidden 8192, MLP 28,672, 80 layers, 64 heads, 8 KV heads, untied).
  if (key.rfind("llama31", 0) == 0 || key.rfind("llama33", 0) == 0) key = "llama3" + key.substr(7);
  // NeMo 24.07's performance summary names Nemotron models without their generation; its own
  // TFLOP/s over tokens/s per row matches Megatron's FLOP count on Nemotron 3 8B and 22B and
  // Nemotron-4 340B within 0.1% (presets/models/nemotron*.json).
  static const std::map<std::string, std::string> kNemotron = {
      {"nemotron8b", "nemotron38b"}, {"nemotron22b", "nemotron322b"}, {"nemotron340b", "nemotron4340b"}};
  if (auto it = kNemotron.find(key); it != kNemotron.end()) key = it->second;
  // NeMo AutoModel's performance summary writes Nemotron 3 as "Nemotron V3" ("Nemotron V3 Nano
  // 30B", whose benchmark config loads nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16:
  // examples/benchmark/configs/nemotron_nano_v3_te_deepep.yaml at c0e4fe1bc) and Qwen3's MoE models
  // by their total size ("Qwen3 MoE 30B": Qwen/Qwen3-30B-A3B in qwen3_moe_30b_te_deepep.yaml at
  // 8d9bfb90e); Qwen3's MoE models are 30B-A3B and 235B-A22B (Qwen3 Technical Report, arXiv
  // 2505.09388, Table 2).
  if (key.rfind("nemotronv3", 0) == 0) key = "nemotron3" + key.substr(10);
  static const std::map<std::string, std::string> kQwen3Moe = {{"qwen3moe30b", "qwen330ba3b"},
                                                               {"qwen3moe235b", "qwen3235ba22b"}};
  if (auto it = kQwen3Moe.find(key); it != kQwen3Moe.end()) key = it->second;
  // The exact name wins; else a size after a preset's own name ("DeepSeek-V3 671B"), when the rest
  // is only the size in billions (and, for an MoE model, "MoE": "Llama 4 Maverick 400B MoE").
  if (key.size() > 4 && key.compare(key.size() - 4, 4, "bmoe") == 0) key.resize(key.size() - 3);
  std::optional<std::string> sized;
  for (const auto& preset : PresetNames("models")) {
    const std::string p = Squash(preset);
    if (p == key) return preset;
    if (!sized && key.size() > p.size() + 1 && key.rfind(p, 0) == 0 && key.back() == 'b' &&
        std::all_of(key.begin() + static_cast<std::ptrdiff_t>(p.size()), key.end() - 1,
                    [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; }))
      sized = preset;
  }
  return sized;
}

// What a run's authors published outside the paper's table (their launch scripts and recipes):
// micro-batch size, interleave degree, data-parallel implementation, recomputation and activation
// offloading, from presets/launches/*.json. Found by record id; null when no launch file names
// the record.
struct LaunchConfig {
  int64_t microbatch = 0;
  int64_t vpp = 0;
  // The layout the run's recipe ran where the row prints another (the launch entry's "layout":
  // a release's table that carried a previous release's columns over, its notes saying how that
  // is known); each field > 0 replaces what the record prints, said among the assumptions. 0: the
  // printed value stands.
  struct Layout {
    int64_t pp = 0, vpp = 0, ep = 0, microbatch = 0;
  } layout;
  std::string ddp;  // "torch" (bucketed, overlapped with backward) or "local" (after the flush)
  // Activation recomputation as the recipe sets it: none, selective or full ("" when the launch
  // file does not say); recompute_layers > 0: full recomputation of that many layers per stage
  // (Megatron's recompute_method block), 0: all.
  std::string recompute;
  std::vector<std::string> recompute_modules;  // selective: Megatron-Core's recompute_modules
  int64_t recompute_layers = 0;
  int64_t activation_offload_layers = 0;  // layers whose activations go to host memory
  // Megatron-Core's fine-grained activation offloading as the recipe sets it (offload_modules:
  // each named submodule's saved tensors copied to host memory in the forward and back before its
  // backward): PlanSpec::offload_modules.
  std::vector<std::string> fine_grained_offload;
  // Megatron-FSDP as the recipe turns it on (use_megatron_fsdp; its perf recipes shard
  // optim_grads_params): ZeRO-3 for a record whose table prints no FSDP column.
  bool megatron_fsdp = false;
  bool ep_overlap = false;   // Megatron-Core's batch-level EP all-to-all overlap
  bool delay_wgrad = false;  // Megatron-Core's delay_wgrad_compute (with the overlap)
  // The recipe's moe_token_dispatcher_type and flex backend ("alltoall", "flex/deepep",
  // "flex/hybridep"; empty: the launch file does not say).
  std::string moe_dispatcher;
  // Megatron-Core's moe_router_padding_for_quantization (or _for_fp8) as the recipe sets it.
  bool moe_router_padding = false;
  // Megatron-Core's use_transformer_engine_op_fuser as the recipe sets it (PlanSpec::moe_op_fuser).
  bool moe_op_fuser = false;
  // Megatron-Core's ddp.grad_reduce_in_fp32 as the recipe sets it (absent: the launch file does
  // not say): false keeps the gradient buffer, its accumulation and its DP reduction in bf16.
  std::optional<bool> grad_reduce_in_fp32;
  // Megatron-Core's DDP overlaps as the recipe sets them (CommOverlapConfig or the recipe's ddp
  // config; absent: the launch file does not say).
  std::optional<bool> overlap_grad_reduce, overlap_param_gather;
  // Transformer Engine's TP communication overlap as the recipe's CommOverlapConfig requests it
  // after Megatron-Bridge's runtime rule (kept only with TP >= 2 and sequence parallelism; its
  // NVFP4 recipes turn it off: llama3_llm_pretrain.py "tp_comm_overlap = False if precision ==
  // \"nvfp4\"" at v0.4.0); absent: the launch file does not say.
  std::optional<bool> tp_comm_overlap;
  // The distributed optimizer's parameter all-gather in FP8 as the run's config sets it
  // (Megatron-Core's fp8_param_gather, NeMo's fp8_params: MLPerf Training's FP8_PARAMS=True;
  // PlanSpec::fp8_param_gather); absent: the launch file does not say.
  std::optional<bool> fp8_param_gather;
  std::string recipe;  // the recipe file and preset, for the assumptions
  std::string source;
  // What the launch file's author noted about the run (settings read but not modelled, how a
  // printed value was taken), shown among the run's assumptions.
  std::string notes;
  // The run's --pipeline-model-parallel-layout (scripts/megatron_bridge_layouts.py): decoder
  // layers per model chunk, and the MTP modules it places (-1: the launch file does not say).
  std::string pp_layout;
  std::vector<int64_t> stage_layers;
  int64_t mtp_layers = -1;
  // Pipeline flushes per step (PlanSpec::pp_flushes): the training loop's schedule runs a step
  // (0: the launch file does not say).
  int64_t pp_flushes = 0;
  // Adam's moments as the recipe keeps them (Megatron-Core's precision-aware optimizer,
  // exp_avg_dtype/exp_avg_sq_dtype); empty: the stack's.
  std::string optimizer_states_dtype;
  // The optimizer's own copy of the weights as the recipe keeps it (Apex DistributedFusedAdam's
  // state dtype, NeMo's optim.dtype); empty: the stack's.
  std::string master_weights_dtype;
  // The recipe's optimizer when it is not the stack's ("muon": Megatron-Core's layer-wise
  // distributed Muon, dist_muon); empty: the stack's.
  std::string optimizer;
  // The recipe's compute precision ("fp8", "bf16") and FP8 scaling ("delayed", "current",
  // "block"), for a record whose table prints none; empty: the launch file does not say.
  std::string precision, fp8_scaling;
  // The loss's cross-entropy implementation as the recipe sets it (core/specs.h CrossEntropy
  // names: "native", "te", "te-inplace"); empty: the launch file does not say.
  std::string cross_entropy;
  // What the recipe captures in CUDA graphs ("none", "full_iteration", "local (...)",
  // "transformer_engine: attn, moe_router, ..."; empty: the launch file does not say).
  std::string cuda_graph;
  // The rank order of the recipe's process groups when it is not Megatron-Core's default
  // (core/specs.h placement text, e.g. "tp-cp-ep-pp-dp" for NeMo's use_tp_pp_dp_mapping); empty:
  // the launch file does not say.
  std::string placement;
  // The Slurm segment the recipe's launch asks for (sbatch --segment N), in nodes; 0: none said.
  int64_t segment_nodes = 0;
  // Transformer Engine's FP8 attention as the recipe turns it on (NeMo's FP8_DPA,
  // fp8_dot_product_attention: PlanSpec::fp8_attention).
  bool fp8_attention = false;
  // MoE token dropping as the recipe turns it on (NeMo's MegatronTokenDropCallback: Megatron-Core's
  // moe_expert_capacity_factor, each expert's input padded to its capacity); 0: the launch file
  // does not say.
  double moe_capacity_factor = 0;
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
        std::vector<std::string> modules, offload_modules;
        std::vector<int64_t> split;
        if (v.contains("stage_layers") && v["stage_layers"].is_array())
          for (const Json& n : v["stage_layers"])
            if (n.is_number_integer()) split.push_back(n.get<int64_t>());
        if (v.contains("recompute_modules") && v["recompute_modules"].is_array())
          for (const Json& mod : v["recompute_modules"])
            if (mod.is_string()) modules.push_back(mod.get<std::string>());
        if (v.contains("fine_grained_activation_offload") && v["fine_grained_activation_offload"].is_array())
          for (const Json& mod : v["fine_grained_activation_offload"])
            if (mod.is_string()) offload_modules.push_back(mod.get<std::string>());
        LaunchConfig::Layout layout;
        if (v.contains("layout") && v["layout"].is_object()) {
          const Json& l = v["layout"];
          layout = {.pp = IntOr(l, "pp", 0),
                    .vpp = IntOr(l, "vpp", 0),
                    .ep = IntOr(l, "ep", 0),
                    .microbatch = IntOr(l, "microbatch", 0)};
        }
        runs.emplace(run_id, LaunchConfig{.microbatch = IntOr(v, "microbatch", 0),
                                          .vpp = IntOr(v, "vpp", 0),
                                          .layout = layout,
                                          .ddp = StrOr(v, "ddp"),
                                          .recompute = StrOr(v, "recompute"),
                                          .recompute_modules = modules,
                                          .recompute_layers = IntOr(v, "recompute_num_layers", 0),
                                          .activation_offload_layers = IntOr(v, "activation_offload_layers", 0),
                                          .fine_grained_offload = offload_modules,
                                          .megatron_fsdp = BoolAt(v, "megatron_fsdp").value_or(false),
                                          .ep_overlap = BoolAt(v, "moe_a2a_overlap").value_or(false),
                                          .delay_wgrad = BoolAt(v, "delay_wgrad").value_or(false),
                                          .moe_dispatcher = StrOr(v, "moe_dispatcher"),
                                          .moe_router_padding = BoolAt(v, "moe_router_padding").value_or(false),
                                          .moe_op_fuser = BoolAt(v, "moe_op_fuser").value_or(false),
                                          .grad_reduce_in_fp32 = BoolAt(v, "grad_reduce_in_fp32"),
                                          .overlap_grad_reduce = BoolAt(v, "overlap_grad_reduce"),
                                          .overlap_param_gather = BoolAt(v, "overlap_param_gather"),
                                          .tp_comm_overlap = BoolAt(v, "tp_comm_overlap"),
                                          .fp8_param_gather = BoolAt(v, "fp8_param_gather"),
                                          .recipe = StrOr(v, "recipe"),
                                          .source = StrOr(j, "source"),
                                          .notes = StrOr(v, "notes"),
                                          .pp_layout = StrOr(v, "pp_layout"),
                                          .stage_layers = split,
                                          .mtp_layers = IntOr(v, "mtp_layers", -1),
                                          .pp_flushes = IntOr(v, "pp_flushes", 0),
                                          .optimizer_states_dtype = StrOr(v, "optimizer_states_dtype"),
                                          .master_weights_dtype = StrOr(v, "master_weights_dtype"),
                                          .optimizer = StrOr(v, "optimizer"),
                                          .precision = StrOr(v, "precision"),
                                          .fp8_scaling = StrOr(v, "fp8_scaling"),
                                          .cross_entropy = StrOr(v, "cross_entropy"),
                                          .cuda_graph = StrOr(v, "cuda_graph"),
                                          .placement = StrOr(v, "placement"),
                                          .segment_nodes = IntOr(v, "segment_nodes", 0),
                                          .fp8_attention = BoolAt(v, "fp8_attention").value_or(false),
                                          .moe_capacity_factor = NumOr(v, "moe_capacity_factor", 0)});
      }
    }
    return runs;
  }();
  auto it = kRuns.find(id);
  if (it == kRuns.end()) return std::nullopt;
  return it->second;
}

// What every run of one release of a framework sets whatever its recipe variant (a launch file's
// "release_defaults"), for records that no run entry names as well as those one does. Each
// setting is the first matching entry's that says it (its id_prefix starts the record's id), with
// that entry's evidence.
template <class T>
struct Sourced {
  std::optional<T> value;
  std::string source;
};
struct ReleaseDefaults {
  Sourced<std::string> cross_entropy;   // core/specs.h CrossEntropy name
  Sourced<bool> grad_reduce_in_fp32;    // Megatron-Core's ddp.grad_reduce_in_fp32
  Sourced<bool> average_in_collective;  // Megatron-Core's ddp.average_in_collective
  Sourced<std::string> moe_probs;       // core/specs.h MoeProbs name (its Megatron-Core's MoE code)
  Sourced<std::string> moe_probs_gelu;  // the same for non-gated (GELU) experts, where it differs
  Sourced<std::string> expert_bias;     // core/specs.h ExpertBias name (its Megatron-Core's TEGroupedMLP)
  Sourced<bool> fp8_param_gather;       // the FP8 recipes' parameter all-gather (PlanSpec::fp8_param_gather)
  Sourced<bool> recompute_early_stop;   // PyTorch >= 2.1's checkpoint early stop (PlanSpec::recompute_early_stop)
};
std::optional<std::string> OptStr(const Json& v, const char* key) {
  const std::string s = StrOr(v, key);
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}
// A record's launch arguments, kept whole in source.model_args (scripts/megatron_ci_memory.py);
// null when it has none.
const Json* ModelArgs(const Json& r) {
  if (!r.contains("source") || !r["source"].is_object()) return nullptr;
  const Json& src = r["source"];
  return src.contains("model_args") && src["model_args"].is_object() ? &src["model_args"] : nullptr;
}
// A store_true launch argument that is set.
bool FlagSet(const Json& args, const char* flag) {
  return args.contains(flag) && args[flag].is_boolean() && args[flag].get<bool>();
}
std::optional<ReleaseDefaults> FindReleaseDefaults(const std::string& id) {
  static const std::vector<std::pair<std::string, ReleaseDefaults>> kPrefixes = [] {
    std::vector<std::pair<std::string, ReleaseDefaults>> out;
    for (const auto& name : PresetNames("launches")) {
      auto text = PresetText("launches", name);
      if (!text.ok()) continue;
      const Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("release_defaults") || !j["release_defaults"].is_array()) continue;
      for (const Json& v : j["release_defaults"]) {
        if (!v.is_object() || StrOr(v, "id_prefix").empty()) continue;
        const std::string evidence = StrOr(v, "evidence");
        out.emplace_back(StrOr(v, "id_prefix"),
                         ReleaseDefaults{.cross_entropy = {OptStr(v, "cross_entropy"), evidence},
                                         .grad_reduce_in_fp32 = {BoolAt(v, "grad_reduce_in_fp32"), evidence},
                                         .average_in_collective = {BoolAt(v, "average_in_collective"), evidence},
                                         .moe_probs = {OptStr(v, "moe_probs"), evidence},
                                         .moe_probs_gelu = {OptStr(v, "moe_probs_gelu"), evidence},
                                         .expert_bias = {OptStr(v, "expert_bias"), evidence},
                                         .fp8_param_gather = {BoolAt(v, "fp8_param_gather"), evidence},
                                         .recompute_early_stop = {BoolAt(v, "recompute_early_stop"), evidence}});
      }
    }
    return out;
  }();
  auto take = [](auto* found, const auto& entry) {
    if (!found->value && entry.value) *found = entry;
  };
  std::optional<ReleaseDefaults> found;
  for (const auto& [prefix, d] : kPrefixes) {
    if (id.rfind(prefix, 0) != 0) continue;
    if (!found) found = ReleaseDefaults{};
    take(&found->cross_entropy, d.cross_entropy);
    take(&found->grad_reduce_in_fp32, d.grad_reduce_in_fp32);
    take(&found->average_in_collective, d.average_in_collective);
    take(&found->moe_probs, d.moe_probs);
    take(&found->moe_probs_gelu, d.moe_probs_gelu);
    take(&found->expert_bias, d.expert_bias);
    take(&found->fp8_param_gather, d.fp8_param_gather);
    take(&found->recompute_early_stop, d.recompute_early_stop);
  }
  return found;
}

}  // namespace

namespace {

// Appends text[*i..] up to an unmatched ')' (or the end) to `out`, expanding "x*n" repeats of a
// symbol or a parenthesised group; false on anything else.
bool ExpandLayout(const std::string& text, size_t* i, std::string* out) {
  while (*i < text.size() && text[*i] != ')') {
    std::string unit;
    if (text[*i] == '(') {
      ++*i;
      if (!ExpandLayout(text, i, &unit) || *i >= text.size()) return false;
      ++*i;  // the ')'
    } else if (std::string_view("EtmL|").find(text[*i]) != std::string_view::npos) {
      unit = text[(*i)++];
    } else {
      return false;
    }
    int64_t times = 1;
    if (*i < text.size() && text[*i] == '*') {
      size_t end = ++*i;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      if (end == *i || end - *i > 4) return false;
      times = std::strtoll(text.substr(*i, end - *i).c_str(), nullptr, 10);
      *i = end;
    }
    for (int64_t k = 0; k < times; ++k) *out += unit;
  }
  return true;
}
// Megatron-Core's --pipeline-model-parallel-layout string (pipeline_parallel_layout.py): chunks
// separated by '|', 'E' embedding, 't' a decoder layer, 'm' an MTP module, 'L' the loss; "x*n"
// repeats a symbol or a parenthesised group n times. The decoder layers per chunk, in chunk
// order; nullopt when the text is not such a layout.
std::optional<std::vector<int64_t>> ParseMegatronLayout(const std::string& text) {
  size_t i = 0;
  std::string flat;
  if (!ExpandLayout(text, &i, &flat) || i != text.size() || flat.find('t') == std::string::npos) return std::nullopt;
  std::vector<int64_t> chunks(1, 0);
  for (char ch : flat) {
    if (ch == '|') chunks.push_back(0);
    else if (ch == 't') ++chunks.back();
  }
  return chunks;
}

// The architecture fields a record may state beside its dimensions (shared/validation's
// memory_measured.json): tied_embeddings, activation, norm, position, an MoE block (num_experts,
// topk, moe_ffn_hidden, shared_expert_ffn), MLA attention (its ranks and head dims),
// layer_pattern ("layer 0 dense, layers 1-15 MoE", "layers 0-2 dense, ...") and mtp_layers.
// False (and `why`) when a stated field cannot be read.
bool ApplyRecordArchitecture(const Json& mj, ModelSpec* m, std::vector<std::string>* notes, std::string* why) {
  std::vector<std::string> said;
  if (const auto tied = BoolAt(mj, "tied_embeddings")) {
    m->tied_embeddings = *tied;
    said.push_back(*tied ? "tied embeddings" : "untied embeddings");
  }
  if (const std::string act = Lower(StrOr(mj, "activation")); !act.empty()) {
    // A gated GELU (GeGLU: NeMo's "fast-geglu") has SwiGLU's three matrices and is costed with
    // them; then GELU, before SwiGLU: "GeLU (no --swiglu)" names the flag it does not use.
    if (act.find("geglu") != std::string::npos) {
      m->mlp = MlpKind::kSwiglu;
      said.push_back("gated GELU (GeGLU), costed with SwiGLU's three matrices");
    } else {
      if (act.find("gelu") != std::string::npos) m->mlp = MlpKind::kGelu;
      else if (act.find("swiglu") != std::string::npos) m->mlp = MlpKind::kSwiglu;
      said.push_back(std::string(Name(m->mlp)));
    }
  }
  if (const std::string norm = Lower(StrOr(mj, "norm")); !norm.empty()) {
    if (norm.find("rmsnorm") != std::string::npos) m->norm = NormKind::kRmsNorm;
    else if (norm.find("layernorm") != std::string::npos) m->norm = NormKind::kLayerNorm;
    said.push_back(std::string(Name(m->norm)));
  }
  if (const std::string pos = Lower(StrOr(mj, "position")); !pos.empty()) {
    if (pos.find("rope") != std::string::npos) m->position = PositionKind::kRope;
    else if (pos.find("learned") != std::string::npos) m->position = PositionKind::kLearned;
    said.push_back(std::string(Name(m->position)));
  }
  // Megatron-Core's GPT with SwiGLU/RMSNorm/RoPE (--swiglu --normalization RMSNorm
  // --position-embedding-type rope, --disable-bias-linear) carries no biases or dropout.
  if (m->mlp == MlpKind::kSwiglu && m->norm == NormKind::kRmsNorm) {
    m->bias = BiasKind::kNone;
    m->dropout = false;
  }
  if (mj.contains("attention") && mj["attention"].is_object()) {
    const Json& a = mj["attention"];
    if (Lower(StrOr(a, "type")) == "mla") {
      MlaSpec mla;
      mla.q_lora_rank = IntOr(a, "q_lora_rank", 0);
      mla.kv_lora_rank = IntOr(a, "kv_lora_rank", 0);
      mla.qk_nope_head_dim = IntOr(a, "qk_head_dim", 0);
      mla.qk_rope_head_dim = IntOr(a, "qk_rope_head_dim", 0);
      mla.v_head_dim = IntOr(a, "v_head_dim", 0);
      if (mla.kv_lora_rank <= 0 || mla.qk_nope_head_dim <= 0 || mla.qk_rope_head_dim <= 0 || mla.v_head_dim <= 0) {
        *why = "model.attention: MLA needs kv_lora_rank, qk_head_dim, qk_rope_head_dim and v_head_dim";
        return false;
      }
      m->mla = mla;
      m->kv_heads = m->heads;
      m->head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
      said.push_back("MLA");
    }
  }
  if (mj.contains("moe") && mj["moe"].is_object()) {
    const Json& e = mj["moe"];
    MoeSpec moe;
    moe.experts = IntOr(e, "num_experts", 0);
    moe.top_k = IntOr(e, "topk", 0);
    moe.expert_ffn_hidden = IntOr(e, "moe_ffn_hidden", 0);
    moe.shared_expert_ffn_hidden = IntOr(e, "shared_expert_ffn", 0);
    moe.shared_experts = moe.shared_expert_ffn_hidden > 0 ? 1 : 0;
    const std::string router = Lower(StrOr(e, "router"));
    moe.router = router.find("sigmoid") != std::string::npos ? RouterKind::kSigmoid : RouterKind::kSoftmax;
    moe.router_bias = router.find("expert bias") != std::string::npos;
    if (moe.experts <= 0 || moe.top_k <= 0 || moe.expert_ffn_hidden <= 0) {
      *why = "model.moe: needs num_experts, topk and moe_ffn_hidden";
      return false;
    }
    // "layer 0 dense, ..." / "layers 0-2 dense, ...": the leading dense layers end at the number
    // before " dense".
    const std::string pattern = Lower(StrOr(mj, "layer_pattern"));
    if (const size_t at = pattern.find(" dense"); pattern.rfind("layer", 0) == 0 && at != std::string::npos) {
      size_t start = at;
      while (start > 0 && std::isdigit(static_cast<unsigned char>(pattern[start - 1]))) --start;
      if (start < at) moe.first_dense_layers = std::strtoll(pattern.substr(start, at - start).c_str(), nullptr, 10) + 1;
    }
    m->moe = moe;
    said.push_back("MoE " + std::to_string(moe.experts) + " experts top-" + std::to_string(moe.top_k) +
                   (moe.first_dense_layers > 0 ? ", first " + std::to_string(moe.first_dense_layers) + " dense" : ""));
  }
  // MoE given as flat fields (dgxc-benchmarking's records: model.moe_experts, model.moe_topk,
  // model.moe_ffn_hidden): every layer an MoE layer of experts that wide, a softmax router, no
  // shared expert; model.moe_capacity_factor when the run drops tokens at a capacity. Without the
  // experts' width the layout is not known (Llama 4 Maverick's interleaved layers and shared expert
  // do not fit this shape): skipped, saying so.
  if (!m->moe && IntOr(mj, "moe_experts", 0) > 0) {
    MoeSpec moe;
    moe.experts = IntOr(mj, "moe_experts", 0);
    moe.top_k = IntOr(mj, "moe_topk", 0);
    moe.expert_ffn_hidden = IntOr(mj, "moe_ffn_hidden", 0);
    moe.capacity_factor = NumOr(mj, "moe_capacity_factor", 0);
    if (moe.expert_ffn_hidden <= 0) {
      *why =
          "model.moe_ffn_hidden: flat MoE fields (moe_experts, moe_topk) need the experts' width; without it "
          "the MoE layout (shared experts, dense layers between) is not known";
      return false;
    }
    if (moe.top_k <= 0 || moe.top_k > moe.experts || moe.capacity_factor < 0) {
      *why = "model.moe_topk: needs 1 <= moe_topk <= moe_experts and moe_capacity_factor >= 0";
      return false;
    }
    m->moe = moe;
    said.push_back("MoE " + std::to_string(moe.experts) + " experts top-" + std::to_string(moe.top_k) +
                   (moe.capacity_factor > 0 ? ", capacity factor " + TwoDecimals(moe.capacity_factor) : ""));
  }
  if (const int64_t mtp = IntOr(mj, "mtp_layers", 0); mtp > 0) {
    m->mtp_layers = mtp;
    said.push_back(std::to_string(mtp) + " MTP module(s)");
  }
  if (!said.empty()) {
    std::string text;
    for (const auto& x : said) text += (text.empty() ? "" : ", ") + x;
    notes->push_back("architecture as the record states it: " + text);
  }
  return true;
}

// A record's source as text for SoftwareStack::recognized_by: its source's paper, repo, path,
// url, table, row, software and config path, and the record's framework and software fields;
// and its row alone.
std::pair<std::string, std::string> RecordSourceText(const Json& r) {
  std::string text, row;
  auto add = [&](const Json& j, const char* key) {
    if (j.is_object() && j.contains(key) && j[key].is_string()) text += j[key].get<std::string>() + " | ";
  };
  if (r.contains("source") && r["source"].is_object()) {
    const Json& src = r["source"];
    for (const char* key : {"paper", "repo", "path", "url", "table", "row", "software", "config_path"}) add(src, key);
    if (src.contains("row") && src["row"].is_string()) row = src["row"].get<std::string>();
  }
  for (const char* key : {"framework", "software"}) add(r, key);
  return {text, row};
}

// The one fixed mapping from a record to a scenario (model, GPU, cluster, plan) with the
// assumptions it made; false (and `why`) for a record that does not describe a run we can plan.
// What the record prints wins; what it does not print comes from the software stack that ran it
// (presets/stacks), then from the authors' launch script (presets/launches), each said in the
// assumptions. With `with_measurement`, also the published tokens/s per GPU (a record without
// one is skipped).
bool MapRecord(const Json& r, bool with_measurement, PublishedRun* out, std::string* why) {
  const std::string id = StrOr(r, "id");
  if (!r.contains("model") || !r.contains("parallel") || !r.contains("measured") || !r["model"].is_object() ||
      !r["parallel"].is_object() || !r["measured"].is_object()) {
    *why = "not a run record";
    return false;
  }
  auto skip = [&](const std::string& w) { *why = w; };
  const Json& mj = r["model"];
  const Json& pj = r["parallel"];
  static const Json kNone = Json::object();
  const Json& hj = r.contains("hardware") && r["hardware"].is_object() ? r["hardware"] : kNone;
  PublishedRun& run = *out;
  run.id = id;
  if (r.contains("source") && r["source"].is_object()) {
    run.table = StrOr(r["source"], "paper") + ", " + StrOr(r["source"], "table");
    run.source = run.table + ", " + StrOr(r["source"], "row");
  }

  // The software that produced the run: the stack whose applies_to names the record's id prefix,
  // else the one its source names (SoftwareStack::recognized_by), else the default stack, said.
  std::optional<SoftwareStack> stack = StackForRecord(id);
  if (!stack) {
    const auto [source_text, row_text] = RecordSourceText(r);
    stack = StackForSource(source_text, row_text);
    if (stack) {
      run.assumptions.push_back("stack " + stack->name + ": recognised from the record's source");
    } else {
      auto fallback = LoadStack(kDefaultStack);
      if (!fallback.ok()) {
        skip("the default stack " + std::string(kDefaultStack) + " does not load: " + fallback.status().message());
        return false;
      }
      stack = *fallback;
      run.assumptions.push_back("stack " + stack->name + ": the record's id and source name no stack meshplan has (" +
                                "presets/stacks), so the default's");
    }
  }
  run.stack = stack->name;

  // Hardware.
  std::string gpu, cluster, gpu_why;
  if (!MapGpu(hj, &gpu, &cluster, &run.assumptions, &gpu_why)) {
    skip(gpu_why);
    return false;
  }
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

  // Model: the printed dimensions (a GPT of Megatron-LM), else the named model's preset.
  ModelSpec& m = s.model;
  const int64_t layers = IntOr(mj, "layers", 0), hidden = IntOr(mj, "hidden", 0), heads = IntOr(mj, "heads", 0);
  const int64_t seq = IntOr(mj, "seq_len", IntOr(r, "seq_len", 0));
  // A named model with a preset whose layers and hidden size agree with the printed ones is that
  // preset (its attention, MLP and vocabulary too: "Llama 3.1 405B (NeMo recipe)" prints only
  // layers, hidden, heads and ffn; built as a GPT it would lose its GQA and SwiGLU).
  const std::optional<std::string> named = ModelPresetFor(StrOr(mj, "name"));
  std::optional<ModelSpec> agreeing;
  std::string disagreeing;  // a printed dimension the named preset contradicts, said below
  if (named && layers > 0 && hidden > 0 && seq > 0) {
    auto loaded = LoadModel(*named);
    if (loaded.ok() && loaded->layers == layers && loaded->hidden == hidden) {
      // The record's own printed architecture wins over a name: a proxy or variant of the named
      // model (dgxc-benchmarking's "Grok-1 314B MoE (NeMo proxy recipe)" drops tokens at capacity
      // factor 1.0 where xAI's Grok-1 is dropless) is built from what it prints, not from the
      // preset. A printed vocabulary agrees when it is the preset's padded up to a multiple of
      // 128 (Megatron's make-vocab-size-divisible-by: 51,200 for GPT-3's 50,257) or the preset's
      // rounded in prose, within 0.5% (the Llama 3 paper's "128,000" for 128,256).
      const int64_t printed_ffn = IntOr(mj, "ffn_hidden", 0);
      const bool ffn_agrees = printed_ffn <= 0 || printed_ffn == loaded->ffn_hidden ||
                              (loaded->moe && printed_ffn == loaded->moe->expert_ffn_hidden);
      const MoeSpec none;
      const MoeSpec& lm = loaded->moe ? *loaded->moe : none;
      const std::pair<const char*, std::pair<int64_t, int64_t>> checks[] = {
          {"heads", {heads, loaded->heads}},
          {"kv_heads", {IntOr(mj, "kv_heads", 0), loaded->kv_heads}},
          {"moe_experts", {IntOr(mj, "moe_experts", 0), lm.experts}},
          {"moe_topk", {IntOr(mj, "moe_topk", 0), lm.top_k}}};
      for (const auto& [field, v] : checks)
        if (v.first > 0 && v.first != v.second)
          disagreeing =
              std::string(field) + " " + std::to_string(v.first) + " (the preset's " + std::to_string(v.second) + ")";
      if (!ffn_agrees) disagreeing = "ffn_hidden " + std::to_string(printed_ffn);
      if (const int64_t v = IntOr(mj, "vocab", 0); v > 0 && v != loaded->vocab) {
        const bool padded = v > loaded->vocab && v % 128 == 0 && v - loaded->vocab < 128 * 64;
        const bool rounded =
            std::fabs(static_cast<double>(v - loaded->vocab)) <= 0.005 * static_cast<double>(loaded->vocab);
        if (!padded && !rounded)
          disagreeing = "vocab " + std::to_string(v) + " (the preset's " + std::to_string(loaded->vocab) + ")";
      }
      if (const double cf = NumOr(mj, "moe_capacity_factor", 0); cf > 0 && cf != lm.capacity_factor) {
        char text[128];
        std::snprintf(text, sizeof text, "moe_capacity_factor %g (the preset's %g; 0 is dropless)", cf,
                      lm.capacity_factor);
        disagreeing = text;
      }
      if (disagreeing.empty()) agreeing = *loaded;
    }
  }
  if (mj.contains("spec") && mj["spec"].is_object()) {
    // The record gives the model as a meshplan model spec, translated from the run's own launch
    // arguments (scripts/megatron_ci_memory.py: source.model_args): taken whole.
    auto spec = ParseModelJson(mj["spec"].dump(), "model.spec");
    if (!spec.ok()) {
      skip(spec.status().message());
      return false;
    }
    m = *spec;
    if (seq > 0) m.max_seq = std::max(m.max_seq, seq);
    run.assumptions.push_back("model as the record's model.spec gives it (translated from the launch arguments)");
  } else if (agreeing) {
    m = *agreeing;
    m.max_seq = std::max(m.max_seq, seq);
    run.assumptions.push_back("model '" + StrOr(mj, "name") + "': preset " + *named +
                              " (its printed layers and hidden size agree)");
  } else if (layers > 0 && hidden > 0 && heads > 0) {
    // The GPT of Megatron-LM (Narayanan 2021 §5.1, Korthikanti 2022 §3; Megatron-Core's GPT
    // defaults): f = 4h GELU MLP, biases, LayerNorm, learned positions, tied embeddings, dropout.
    if (!disagreeing.empty())
      run.assumptions.push_back("model '" + StrOr(mj, "name") + "': not preset " + *named + ", whose " + disagreeing +
                                " the record contradicts; built from its printed dimensions");
    m.name = StrOr(mj, "name").empty() ? id : StrOr(mj, "name");
    m.source = run.source;
    m.layers = layers;
    m.hidden = hidden;
    m.heads = heads;
    m.kv_heads = IntOr(mj, "kv_heads", heads);
    m.head_dim = hidden / heads;
    m.ffn_hidden = IntOr(mj, "ffn_hidden", 4 * hidden);
    m.mlp = MlpKind::kGelu;
    m.vocab = IntOr(mj, "vocab", 51200);
    m.max_seq = seq > 0 ? seq : 2048;
    m.tied_embeddings = true;
    m.position = PositionKind::kLearned;
    m.norm = NormKind::kLayerNorm;
    m.bias = BiasKind::kAll;
    m.dropout = true;
    // The size the record prints picks tied or untied embeddings, whichever count is closer: the
    // Megatron-LM README labels its GPTs by the untied count (1.7B = 24 layers x 12 x 2048^2 +
    // 2 x 131072 x 2048; tied would be 1.48B), Narayanan 2021's 1.7B is the tied 1.65B.
    if (const double label = PrintedBillions(mj); label > 0) {
      auto off = [&](const ModelSpec& x) {
        return std::fabs(static_cast<double>(CountParams(x).total) / 1e9 - label) / label;
      };
      ModelSpec untied = m;
      untied.tied_embeddings = false;
      if (off(untied) < off(m)) {
        m.tied_embeddings = false;
        run.assumptions.push_back("untied embeddings: the printed size matches the untied parameter count");
      }
    }
  } else if (named && seq > 0) {
    auto loaded = LoadModel(*named);
    if (!loaded.ok()) {
      skip("model preset " + *named + ": " + loaded.status().message());
      return false;
    }
    m = *loaded;
    m.max_seq = std::max(m.max_seq, seq);
    run.assumptions.push_back("model '" + StrOr(mj, "name") + "' not dimensioned: preset " + *named);
    // Megatron-Bridge's "(tokendrop)" runs: apply_moe_token_drop's defaults, capacity factor 1.0
    // with each expert's input padded to its capacity (src/megatron/bridge/training/utils/
    // moe_token_drop.py at bf71eba07b), so the dispatcher needs no host synchronisation.
    if (m.moe && m.moe->capacity_factor == 0 && Squash(StrOr(mj, "name")).find("tokendrop") != std::string::npos) {
      m.moe->capacity_factor = 1.0;
      run.assumptions.push_back(
          "token dropping: capacity factor 1.0, padded to capacity (Megatron-Bridge "
          "apply_moe_token_drop's defaults)");
    }
  } else {
    skip("no model dimensions (layers, hidden, heads), no model preset named '" + StrOr(mj, "name") +
         "', or no sequence length");
    return false;
  }

  // What the record states about the architecture beyond the dimensions (memory_measured.json's
  // records do): it wins over the GPT defaults above.
  if (!(mj.contains("spec") && mj["spec"].is_object()) && !agreeing && layers > 0 && hidden > 0 && heads > 0) {
    if (!ApplyRecordArchitecture(mj, &m, &run.assumptions, why)) return false;
  }
  // A run the source names as without (or with) multi-token prediction.
  {
    const std::string name = Squash(StrOr(mj, "name"));
    if (m.mtp_layers > 0 && (name.find("womtp") != std::string::npos || name.find("withoutmtp") != std::string::npos)) {
      m.SetMtpLayers(0);
      run.assumptions.push_back("no multi-token prediction: the record names the run without MTP");
    }
  }

  // The model as built from the record's fields must be one the tool can cost: a record printing
  // kv_heads 0 (or any dimension out of range) is skipped naming the field, as a model file with
  // it is refused, never divided by.
  {
    Diagnostics md;
    ValidateModel(m, "model", &md);
    if (md.has_errors()) {
      skip("model invalid: " + md.ToStatus().message());
      return false;
    }
  }

  // Plan.
  PlanSpec& p = s.plan;
  const int64_t count = IntOr(hj, "count", 0);
  p.tp = IntOr(pj, "tp", 0);
  p.pp = IntOr(pj, "pp", 0);
  p.cp = IntOr(pj, "cp", 1);
  p.ep = IntOr(pj, "ep", 1);
  p.dp = IntOr(pj, "dp", 0);
  p.etp = IntOr(pj, "etp", 1);
  if (p.tp <= 0 || p.pp <= 0 || p.cp <= 0 || p.ep <= 0) {
    skip("no tp/pp plan printed");
    return false;
  }
  const std::optional<LaunchConfig> launch = FindLaunchConfig(id);
  // The layout the recipe ran where the row prints another (LaunchConfig::layout): the pipeline and
  // expert degrees here (a changed pipeline degree derives the data-parallel one again), the
  // interleave degree and micro batch where they are read below.
  const auto corrected = [&](const char* what, int64_t printed, int64_t ran) {
    if (ran <= 0 || ran == printed) return printed;
    run.assumptions.push_back(std::string(what) + " " + std::to_string(ran) + " where the row prints " +
                              (printed > 0 ? std::to_string(printed) : std::string("none")) + ", the layout " +
                              (launch->recipe.empty() ? launch->source : launch->recipe) +
                              " runs (the launch file's notes say how the printed one is known to be another's)");
    return ran;
  };
  if (launch) {
    const int64_t pp = corrected("PP", p.pp, launch->layout.pp);
    if (pp != p.pp) p.dp = 0;
    p.pp = pp;
    p.ep = corrected("EP", p.ep, launch->layout.ep);
  }
  if (p.dp <= 0) {
    if (count <= 0 || count % (p.tp * p.pp * p.cp) != 0) {
      skip("no dp printed and GPUs/(tp*pp*cp) is not whole");
      return false;
    }
    p.dp = count / (p.tp * p.pp * p.cp);
    run.assumptions.push_back("dp = GPUs/(tp*pp*cp) = " + std::to_string(p.dp));
  }
  p.gpus = p.tp * p.pp * p.dp * p.cp;
  if (count > 0 && count != p.gpus) {
    skip("hardware.count " + std::to_string(count) + " differs from tp*pp*dp*cp = " + std::to_string(p.gpus));
    return false;
  }
  p.seq_len = m.max_seq;
  if (seq > 0) p.seq_len = seq;
  p.global_batch = IntOr(r, "global_batch", 0);
  // A batch printed in tokens only ("4M tokens per step"): in sequences of the record's length.
  if (const double printed_tokens = NumOr(r, "global_batch_tokens", 0); p.global_batch <= 0 && printed_tokens > 0) {
    const int64_t batch_tokens = printed_tokens <= 1e15 ? static_cast<int64_t>(printed_tokens) : 0;
    if (p.seq_len <= 0 || batch_tokens <= 0 || static_cast<double>(batch_tokens) != printed_tokens ||
        batch_tokens % p.seq_len != 0) {
      char printed[32];
      std::snprintf(printed, sizeof printed, "%.17g", printed_tokens);
      skip(std::string("global_batch_tokens ") + printed + " is not a whole number of sequences of " +
           std::to_string(p.seq_len) + " tokens, and global_batch is not printed");
      return false;
    }
    p.global_batch = batch_tokens / p.seq_len;
    run.assumptions.push_back("global batch " + std::to_string(p.global_batch) + " sequences = global_batch_tokens " +
                              std::to_string(batch_tokens) + " / sequence " + std::to_string(p.seq_len));
  }
  if (p.global_batch <= 0) {
    // Nothing to size the step by: a record printing its batch only in words ("2M tokens" among its
    // notes) is not read.
    skip("no global batch: neither global_batch (sequences) nor global_batch_tokens is printed");
    return false;
  }
  // Token dropping the recipe turns on and the record does not print: each expert's input capped
  // and padded to that capacity, so the dispatcher needs no host synchronisation (the
  // "(tokendrop)" rule above).
  if (launch && launch->moe_capacity_factor > 0 && m.moe && m.moe->capacity_factor == 0) {
    m.moe->capacity_factor = launch->moe_capacity_factor;
    run.assumptions.push_back("token dropping: capacity factor " + TwoDecimals(launch->moe_capacity_factor) +
                              ", padded to capacity, from " +
                              (launch->recipe.empty() ? launch->source : launch->recipe));
  }
  // What the record prints, else what the launch script gives (said in the assumptions), else 0.
  auto printed_or_launched = [&](int64_t printed, int64_t LaunchConfig::*field, const char* what) -> int64_t {
    if (printed > 0) return printed;
    if (!launch || (*launch).*field <= 0) return 0;
    run.assumptions.push_back(std::string(what) + " " + std::to_string((*launch).*field) + " from " + launch->source);
    return (*launch).*field;
  };
  p.micro_batch = printed_or_launched(IntOr(r, "microbatch", 0), &LaunchConfig::microbatch, "micro batch");
  if (launch) p.micro_batch = corrected("micro batch", p.micro_batch, launch->layout.microbatch);
  const int64_t per_pipeline = p.dp > 0 ? p.global_batch / p.dp : 0;  // sequences per data-parallel rank
  if (p.micro_batch <= 0 && stack->microbatches_equal_pp && p.pp > 1 && per_pipeline % p.pp == 0 &&
      per_pipeline >= p.pp) {
    // The stack's default split of a rank's batch into the pipeline's microbatches.
    p.micro_batch = per_pipeline / p.pp;
    run.assumptions.push_back("micro batch not printed: " + std::to_string(p.micro_batch) + " (stack " + stack->name +
                              ": as many microbatches as pipeline stages)");
  }
  if (p.micro_batch <= 0) {
    p.micro_batch = 1;
    run.assumptions.push_back("micro batch not printed: 1");
  }
  p.vpp = printed_or_launched(IntOr(pj, "vpp", 0), &LaunchConfig::vpp, "interleave degree");
  if (launch) p.vpp = corrected("interleave degree", p.vpp, launch->layout.vpp);
  if (p.vpp <= 0) {
    p.vpp = 1;
    const bool named_interleaved = StrOr(pj, "schedule").find("nterleav") != std::string::npos;
    if (p.pp > 1 && named_interleaved && stack->interleaved_stages_per_rank > 1) {
      // The schedule the record names, with the stack's default model chunks per rank.
      p.vpp = stack->interleaved_stages_per_rank;
      run.assumptions.push_back("interleave degree not printed: " + std::to_string(p.vpp) + " (stack " + stack->name +
                                ": its default stages per rank for the interleaved schedule the record names)");
    } else if (p.pp > 1 && (named_interleaved || StrOr(pj, "notes").find("nterleav") != std::string::npos)) {
      run.assumptions.push_back("interleave degree not printed: 1F1B (no interleaving)");
    }
  }
  if (p.pp == 1 && p.vpp > 1) {
    run.assumptions.push_back("interleave degree " + std::to_string(p.vpp) +
                              " printed with pp 1: no pipeline, ignored");
    p.vpp = 1;
  }
  // A custom pipeline layout the record quotes (Megatron-Core's --pipeline-model-parallel-layout,
  // in parallel.schedule or model.layer_pattern): its chunks are the virtual stages.
  for (const std::string& text : {StrOr(pj, "schedule"), StrOr(mj, "layer_pattern")}) {
    const size_t at = text.find("layout");
    if (at == std::string::npos || p.pp <= 1) continue;
    size_t b = text.find_first_not_of(" \"", at + 6), e = b;
    while (e < text.size() && text[e] != ' ' && text[e] != '"' && text[e] != ';' && text[e] != ',') ++e;
    const auto layout = b == std::string::npos ? std::nullopt : ParseMegatronLayout(text.substr(b, e - b));
    if (!layout || static_cast<int64_t>(layout->size()) % p.pp != 0) continue;
    int64_t sum = 0;
    for (int64_t n : *layout) sum += n;
    if (sum != m.layers) continue;
    p.vpp = static_cast<int64_t>(layout->size()) / p.pp;
    p.stage_layers = *layout;
    run.assumptions.push_back("pipeline layout " + text.substr(b, e - b) +
                              " as the record quotes it: " + std::to_string(layout->size()) + " chunks over pp " +
                              std::to_string(p.pp) + " (vpp " + std::to_string(p.vpp) + ")");
    break;
  }
  // The recipe's pipeline layout and MTP modules (presets/launches), where the record prints none.
  if (launch && launch->mtp_layers >= 0 && launch->mtp_layers != m.mtp_layers) {
    m.SetMtpLayers(launch->mtp_layers);
    run.assumptions.push_back(std::to_string(m.mtp_layers) + " MTP module(s) from " +
                              (launch->recipe.empty() ? launch->source : launch->recipe));
  }
  if (launch && launch->pp_flushes > 1 && p.pp > 1) {
    p.pp_flushes = launch->pp_flushes;
    run.assumptions.push_back(std::to_string(p.pp_flushes) + " pipeline flushes a step, " +
                              std::to_string(p.MicrobatchesPerFlush()) + " microbatches each, from " +
                              (launch->recipe.empty() ? launch->source : launch->recipe));
  }
  if (launch && p.stage_layers.empty() && !launch->stage_layers.empty() &&
      static_cast<int64_t>(launch->stage_layers.size()) == p.pp * p.vpp) {
    int64_t sum = 0;
    for (int64_t n : launch->stage_layers) sum += n;
    if (sum == m.layers) {
      p.stage_layers = launch->stage_layers;
      run.assumptions.push_back("pipeline layout " + launch->pp_layout + " from " +
                                (launch->recipe.empty() ? launch->source : launch->recipe));
    }
  }
  if (launch && !launch->placement.empty()) {
    // The ranks' order decides which groups share an NVLink domain (core/collectives.h SpanOf).
    if (!ParsePlacement(launch->placement, &p.placement)) {
      skip("launch placement '" + launch->placement + "' is not a rank order meshplan reads (e.g. \"tp-cp-ep-pp-dp\")");
      return false;
    }
    run.assumptions.push_back("rank order " + launch->placement + " (innermost first) from " +
                              (launch->recipe.empty() ? launch->source : launch->recipe));
  }
  if (launch && launch->fp8_attention) {
    p.fp8_attention = true;
    run.assumptions.push_back(
        "FP8 attention (Transformer Engine's fp8_dot_product_attention, cuDNN's FP8 fused "
        "attention) from " +
        (launch->recipe.empty() ? launch->source : launch->recipe));
  }
  if (launch && launch->segment_nodes > 0) {
    p.segment_nodes = launch->segment_nodes;
    run.assumptions.push_back("Slurm segments of " + std::to_string(p.segment_nodes) +
                              " nodes, each inside one scale-up domain (sbatch --segment), from " +
                              (launch->recipe.empty() ? launch->source : launch->recipe));
  }
  if (p.vpp > 1) p.schedule = Schedule::kInterleaved;
  // A schedule the record names other than 1F1B and its interleaving: GPipe (all forwards, then
  // all backwards), the zero-bubble schedules (Qi et al. 2023: ZB-H1, split weight gradients) and
  // DeepSeek's DualPipe, each costed as meshplan's schedule of that name (docs/schedules.md).
  if (p.pp > 1 && p.vpp == 1) {
    const std::string named_schedule = Lower(StrOr(pj, "schedule"));
    auto says = [&](const char* w) { return named_schedule.find(w) != std::string::npos; };
    std::optional<Schedule> sched;
    if (says("zb-v") || says("zbv") || says("dualpipev") || says("dualpipe-v") || says("dualpipe v")) {
      // V-shaped schedules (two stages per rank folded back: ZB-V, DualPipeV) are not the ones
      // meshplan costs; 1F1B would be another schedule.
      skip("parallel.schedule '" + StrOr(pj, "schedule") +
           "': a V-shaped schedule meshplan does not cost (it costs 1F1B, interleaved, GPipe, ZB-H1 and DualPipe)");
      return false;
    }
    if (says("dualpipe")) sched = Schedule::kDualPipe;
    else if (says("zero bubble") || says("zero-bubble") || says("zb-h1") || says("zbh1")) sched = Schedule::kZeroBubble;
    else if (says("gpipe")) sched = Schedule::kGpipe;
    if (sched) {
      p.schedule = *sched;
      run.assumptions.push_back(std::string("schedule ") + Name(*sched) + " as the record names it ('" +
                                StrOr(pj, "schedule") + "')");
    }
  }

  // The stack's defaults (ApplyStack), then what the record prints instead; `from_stack` names
  // the defaults the record left standing.
  ApplyStack(*stack, &m, &p);
  std::vector<std::string> from_stack;
  // Sequence parallelism as a boolean, or in words ("yes", "on", "true"; "no", "off", "false").
  std::optional<bool> sp_said;
  if (pj.contains("sequence_parallel") && pj["sequence_parallel"].is_boolean()) {
    sp_said = pj["sequence_parallel"].get<bool>();
  } else if (const std::string sp_text = Lower(StrOr(pj, "sequence_parallel")); !sp_text.empty()) {
    if (sp_text == "yes" || sp_text == "on" || sp_text == "true" || sp_text == "enabled") sp_said = true;
    else if (sp_text == "no" || sp_text == "off" || sp_text == "false" || sp_text == "disabled") sp_said = false;
    else run.assumptions.push_back("parallel.sequence_parallel '" + sp_text + "' not read: the stack's setting stands");
  }
  const bool sp_printed = sp_said.has_value();
  if (sp_printed) {
    p.sequence_parallel = *sp_said && p.tp > 1;
  } else if (p.tp > 1) {
    from_stack.push_back(std::string("sequence parallel ") + (p.sequence_parallel ? "on" : "off"));
  }
  // The loss's cross entropy and a deferred output-layer weight gradient, as the record's launch
  // arguments set them (scripts/megatron_ci_memory.py: --cross-entropy-loss-fusion,
  // --defer-embedding-wgrad-compute).
  if (const std::string ce = StrOr(pj, "cross_entropy"); !ce.empty()) {
    if (!FromName(ce, &p.cross_entropy)) {
      skip("parallel.cross_entropy '" + ce + "' is not a cross-entropy kind meshplan models");
      return false;
    }
    run.assumptions.push_back("cross entropy " + ce + " (the record's parallel.cross_entropy)");
  }
  if (const int64_t n = IntOr(pj, "deferred_head_wgrad", 0); n > 0) {
    p.deferred_head_wgrad = n;
    run.assumptions.push_back("output-layer weight gradient deferred for " + std::to_string(n) +
                              " microbatches (the record's parallel.deferred_head_wgrad)");
  }
  // Transformer Engine as the stack runs it, unless the record's launch arguments name Megatron-Core's
  // local layer spec (--transformer-impl local; transformer_engine is its default); with TE, MoE
  // experts run as its GroupedLinear only under --moe-grouped-gemm (scripts/megatron_ci_memory.py
  // keeps the arguments whole in source.model_args).
  if (const Json* args = ModelArgs(r)) {
    const Json& a = *args;
    // Megatron-Core's tunable interleaved schedule (its microbatch group per virtual stage).
    if (const int64_t group = IntOr(a, "--microbatch-group-size-per-virtual-pipeline-stage", 0); group > 0) {
      p.vpp_group = group;
      run.assumptions.push_back("interleaved in microbatch groups of " + std::to_string(group) +
                                " (the record's --microbatch-group-size-per-virtual-pipeline-stage)");
    }
    if (StrOr(a, "--transformer-impl") == "local" && p.transformer_engine) {
      p.transformer_engine = false;
      run.assumptions.push_back("no Transformer Engine (the record's --transformer-impl local)");
    }
    if (m.moe && !FlagSet(a, "--moe-grouped-gemm")) {
      p.moe_grouped_gemm = false;
      run.assumptions.push_back("experts one GEMM after another (the record's arguments have no --moe-grouped-gemm)");
    }
  }
  // A recipe that offloads the activations of its first N layers to host memory (Megatron-Core
  // --cpu-offloading --cpu-offloading-num-layers N, activations only): PlanSpec::
  // offload_activation_layers (pp 1, no recomputation, a GPU with a known host link: the plan's
  // validation says which rule a run breaks).
  if (launch && launch->activation_offload_layers > 0) {
    p.offload_activation_layers = launch->activation_offload_layers;
    run.assumptions.push_back("the activations of the first " + std::to_string(launch->activation_offload_layers) +
                              " layers offloaded to host memory (" + launch->recipe + ")");
  }
  // Megatron-Core's fine-grained activation offloading (fine_grained_activation_offloading,
  // offload_modules) as the recipe sets it: PlanSpec::offload_modules; a module meshplan has no
  // term for is said, not dropped.
  if (launch && !launch->fine_grained_offload.empty()) {
    std::string mods, unknown;
    for (const auto& mod : launch->fine_grained_offload) {
      OffloadModule x;
      if (FromName(mod, &x)) {
        p.offload_modules |= OffloadBit(x);
        mods += (mods.empty() ? "" : ", ") + mod;
      } else {
        unknown += (unknown.empty() ? "" : ", ") + mod;
      }
    }
    if (!mods.empty())
      run.assumptions.push_back("fine-grained activation offloading of " + mods + " (Megatron-Core offload_modules; " +
                                launch->recipe + ")");
    if (!unknown.empty())
      run.assumptions.push_back("not modelled: the recipe's fine-grained activation offloading of " + unknown +
                                " (no such module here): counted on the GPU, its copies not costed");
  }
  if (launch && !launch->notes.empty())
    run.assumptions.push_back("the launch file's notes on this run (presets/launches): " + launch->notes);
  auto launch_name = [&] { return launch->recipe.empty() ? launch->source : launch->recipe; };
  // Recomputation as the record prints it, else as the run's recipe sets it (presets/launches),
  // else the stack's.
  // The record's words, read without case: "Full activation checkpointing" is full, "None" none;
  // a boolean is full or none; activation checkpointing that names no granularity checkpoints
  // every layer (Megatron's --checkpoint-activations, DeepSpeed's and PyTorch's per-block
  // checkpointing): full. Text not read this way is said, and the stack's setting stands.
  std::string rc = Lower(StrOr(pj, "recompute"));
  if (pj.contains("recompute") && pj["recompute"].is_boolean()) rc = pj["recompute"].get<bool>() ? "full" : "none";
  if (!rc.empty() && rc.rfind("full", 0) != 0 && rc.rfind("selective", 0) != 0 && rc.rfind("none", 0) != 0) {
    const std::string printed = StrOr(pj, "recompute");
    auto has_word = [&](const char* w) { return rc.find(w) != std::string::npos; };
    // torchtitan's words too: "SAC" (selective activation checkpointing), "no AC".
    if (has_word("selective") || has_word(" sac") || rc.rfind("sac", 0) == 0) rc = "selective (" + printed + ")";
    else if (rc == "no" || rc == "off" || rc == "false" || has_word("no recomput") || has_word("no activation") ||
             rc == "no ac" || has_word("disabled"))
      rc = "none (" + printed + ")";
    else if (has_word("full") || has_word("checkpoint") || rc == "yes" || rc == "on" || rc == "true") {
      rc = "full (" + printed + ")";
      run.assumptions.push_back("parallel.recompute '" + printed +
                                "' read as full recomputation (every layer's activations recomputed)");
    } else {
      run.assumptions.push_back("parallel.recompute '" + printed + "' not read: the stack's setting stands");
      rc.clear();
    }
  }
  const bool printed_rc = rc.rfind("full", 0) == 0 || rc.rfind("selective", 0) == 0 || rc.rfind("none", 0) == 0;
  std::string said_rc = printed_rc ? rc : launch ? launch->recompute : std::string();
  // Megatron-Core's selective recomputation names modules (PlanSpec::recompute_modules); a module
  // meshplan does not model (moe, or another architecture's) is said and left out, and a list of
  // none it models is costed as no recomputation.
  uint32_t modules = kDefaultRecomputeModules;
  // The modules the record prints (parallel.recompute_modules), else the launch file's.
  std::vector<std::string> printed_modules;
  if (pj.contains("recompute_modules") && pj["recompute_modules"].is_array())
    for (const Json& mod : pj["recompute_modules"])
      if (mod.is_string()) printed_modules.push_back(mod.get<std::string>());
  // Or in the recompute text itself: "selective: modules layernorm, mla_up_proj, mlp".
  if (const size_t at = rc.find("modules ");
      printed_modules.empty() && rc.rfind("selective", 0) == 0 && at != std::string::npos) {
    std::string list = rc.substr(at + 8);
    list.erase(std::remove(list.begin(), list.end(), ' '), list.end());
    for (size_t start = 0, end; start < list.size(); start = end + 1) {
      end = std::min(list.find(',', start), list.size());
      if (end > start) printed_modules.push_back(list.substr(start, end - start));
    }
  }
  const std::vector<std::string>& module_list = !printed_modules.empty() ? printed_modules
                                                : launch                 ? launch->recompute_modules
                                                                         : printed_modules;
  if (said_rc.rfind("selective", 0) == 0 && (!printed_rc || !printed_modules.empty()) && !module_list.empty()) {
    modules = 0;
    std::string unknown;
    for (const auto& mod : module_list) {
      RecomputeModule rm;
      if (FromName(mod, &rm)) modules |= ModuleBit(rm);
      else unknown += (unknown.empty() ? "" : ", ") + mod;
    }
    if ((modules & ModuleBit(RecomputeModule::kMlaUpProj)) && !m.mla) {
      modules &= ~ModuleBit(RecomputeModule::kMlaUpProj);
      unknown += std::string(unknown.empty() ? "" : ", ") + "mla_up_proj (the model has no MLA)";
    }
    if (!unknown.empty())
      run.assumptions.push_back("recomputation of " + unknown + " not modelled (costed as kept, not recomputed)");
    if (modules == 0) said_rc = "none";
  }
  bool recompute_printed = true;
  if (said_rc.rfind("full", 0) == 0) p.recompute = Recompute::kFull;
  else if (said_rc.rfind("selective", 0) == 0) p.recompute = Recompute::kSelective;
  else if (said_rc.rfind("none", 0) == 0) p.recompute = Recompute::kNone;
  else {
    recompute_printed = false;
    from_stack.push_back(std::string("recompute ") + Name(p.recompute));
  }
  // A record that names torchtitan's per-op selective checkpointing (selective_ac_option "op").
  if (printed_rc && p.recompute == Recompute::kSelective && rc.find("per-op") != std::string::npos) {
    p.recompute_modules = ModuleBit(RecomputeModule::kTorchtitanOp);
    run.assumptions.push_back(
        "selective recomputation by torchtitan's per-op policy (torchtitan_op: every other "
        "matmul and SDPA saved, the rest recomputed)");
  }
  if (printed_rc && p.recompute == Recompute::kSelective && !printed_modules.empty()) {
    p.recompute_modules = modules;
    run.assumptions.push_back("selective recomputation of " + RecomputeModulesString(modules) +
                              " (the record's parallel.recompute_modules)");
  }
  // Full recomputation of only the first n layers of each stage (Megatron's --recompute-method
  // block --recompute-num-layers n), as the record prints it.
  if (printed_rc && p.recompute == Recompute::kFull && IntOr(pj, "recompute_num_layers", 0) > 0) {
    p.recompute_layers = IntOr(pj, "recompute_num_layers", 0);
    run.assumptions.push_back("full recomputation of " + std::to_string(p.recompute_layers) +
                              " layers per stage (the record's parallel.recompute_num_layers)");
  }
  if (!printed_rc && recompute_printed) {
    if (p.recompute == Recompute::kFull) p.recompute_layers = launch->recompute_layers;
    if (p.recompute == Recompute::kSelective) {
      p.recompute_modules = modules;
      said_rc += " [" + RecomputeModulesString(modules) + "]";
    }
    run.assumptions.push_back(
        "recompute " + said_rc +
        (p.recompute_layers > 0 ? " (" + std::to_string(p.recompute_layers) + " layers per stage)" : "") + " from " +
        launch_name());
  }
  std::string precision = StrOr(r, "precision");
  if (precision.empty()) precision = StrOr(hj, "precision");
  // A table that prints no precision: the recipe's, where the launch file names it (Megatron-Bridge
  // 25.09: every first value is an FP8 per-tensor run, presets/launches).
  const bool launch_precision = precision.empty() && launch && !launch->precision.empty();
  if (launch_precision) {
    if (!FromName(launch->precision, &p.precision)) {
      skip("launch precision '" + launch->precision + "' is not a dtype meshplan models");
      return false;
    }
    if (!launch->fp8_scaling.empty() && !FromName(launch->fp8_scaling, &p.fp8_scaling)) {
      skip("launch fp8_scaling '" + launch->fp8_scaling + "' is not an FP8 scaling meshplan models");
      return false;
    }
    run.assumptions.push_back(
        "precision " + launch->precision +
        (p.precision == Dtype::kFp8 ? " (" + std::string(Name(p.fp8_scaling)) + " scaling)" : "") + " from " +
        launch_name());
  }
  const std::string lower_precision = Lower(precision);
  const bool nvfp4 = lower_precision.find("nvfp4") != std::string::npos;
  if (!nvfp4 && (precision.find("FP4") != std::string::npos || precision.find("fp4") != std::string::npos)) {
    skip("precision '" + precision + "': 4-bit formats other than NVFP4 are not modelled");
    return false;
  }
  // Megatron-Bridge's Nemotron 3 Super NVFP4 recipe keeps its last 14 layers in BF16
  // (scripts/performance/configs/nemotronh/nemotron_3_llm_pretrain.py:48-50 at v0.4.0,
  // num_layers_at_end_in_bf16 = 14, which PlanSpec::bf16_layers_at_end says) but also sets a
  // quantization recipe by module (cfg.model.quant_recipe = te_quant.cfg beside it, v0.4.0 to
  // v0.5.1; perf_recipes/nemotronh/te_quant.cfg at v0.6.0): every layer's attention QKV and output
  // projections, its MoE latent projections and the MTP modules in BF16, the Mamba out_proj in
  // MXFP8, the rest NVFP4. A plan has one GEMM precision for the linears of a layer.
  if (nvfp4 && m.name == "nemotron-3-super") {
    skip("precision '" + precision +
         "': the recipe's quantization file (te_quant.cfg) keeps every layer's attention projections, MoE latent "
         "projections and MTP modules in BF16 and the Mamba out_proj in MXFP8, and a plan has one GEMM precision "
         "for a layer's linears");
    return false;
  }
  // Composer's FSDP mixed precision PURE reduces gradients in bf16 (DEFAULT: in fp32).
  if (precision.find("PURE") != std::string::npos) {
    p.dtypes.grads = Dtype::kBf16;
    run.assumptions.push_back("FSDP mixed precision PURE: gradients reduced in bf16");
  }
  // torchao's Float8Linear ("bf16 mixed + Float8 (torchao float8 tensorwise ...)") scales each
  // tensor by its own amax at cast time: current scaling (its "dynamic").
  const bool torchao_float8 =
      precision.find("Float8") != std::string::npos || precision.find("float8") != std::string::npos;
  auto names = [&](const char* w) { return lower_precision.find(w) != std::string::npos; };
  if (nvfp4) {
    // Transformer Engine's NVFP4BlockScaling for every linear layer (Megatron-Bridge's
    // bf16_with_nvfp4_mixed: training/mixed_precision.py at v0.4.0, no BF16 layers).
    p.precision = Dtype::kNvfp4;
  } else if (names("fp8") || names("e4m3") || names("e5m2") || torchao_float8) {
    // (FP8 also by its formats' names: E4M3, E5M2, Transformer Engine's "hybrid" of the two.)
    p.precision = Dtype::kFp8;
    // Megatron-Bridge's recipe names: FP8-CS current scaling, FP8-DS delayed, FP8-MX / MXFP8
    // block; the scaling in words ("current scaling", "blockwise") as well, and Megatron-Core's
    // --fp8-recipe names: tensorwise is Transformer Engine's Float8CurrentScaling
    // (fp8_utils.py:777 at d98e8a64), blockwise its 1x128/128x128 block scaling.
    if (precision.find("CS") != std::string::npos || names("current") || names("tensorwise") || torchao_float8) {
      p.fp8_scaling = Fp8Scaling::kCurrent;
    } else if (precision.find("MX") != std::string::npos || names("mxfp8") || names("block")) {
      p.fp8_scaling = Fp8Scaling::kBlock;
    } else if (launch && !launch->fp8_scaling.empty()) {
      // "FP8" alone: the scaling the run's own config sets (MLPerf Training's NeMo configs:
      // FP8_RECIPE, conf/custom.yaml's fp8_recipe; presets/launches/mlperf-training.json).
      if (!FromName(launch->fp8_scaling, &p.fp8_scaling)) {
        skip("launch fp8_scaling '" + launch->fp8_scaling + "' is not an FP8 scaling meshplan models");
        return false;
      }
      run.assumptions.push_back("FP8 " + std::string(Name(p.fp8_scaling)) + " scaling from " + launch_name());
    }
  } else if (names("bf16") || names("bfloat16")) {
    p.precision = Dtype::kBf16;
  } else if (names("fp16") || names("float16")) {
    p.precision = Dtype::kFp16;
  } else if (names("tf32")) {
    // No 16- or 8-bit type named: the tensor cores' TF32 (or plain FP32 below), as printed.
    p.precision = Dtype::kTf32;
  } else if (names("fp32") || names("float32")) {
    p.precision = Dtype::kFp32;
  } else if (!launch_precision) {
    from_stack.push_back(std::string("precision ") + Name(p.precision));
  }
  // Data-parallel sharding: a ZeRO stage, or an FSDP degree (Megatron-Bridge: "FSDP > 0: FSDP
  // over #GPUs/(TP x PP)", i.e. parameters, gradients and optimizer state over the DP group).
  // The stage as a number (3, 3.0) or in words ("ZeRO-3", "stage 2"): its one digit 0-3.
  int64_t zero = -1;
  if (pj.contains("zero_stage")) {
    const Json& z = pj["zero_stage"];
    if (z.is_number() && z.get<double>() >= 0 && z.get<double>() <= 3 && z.get<double>() == std::floor(z.get<double>()))
      zero = static_cast<int64_t>(z.get<double>());
    else if (z.is_string()) {
      std::string digits;
      for (char ch : z.get<std::string>())
        if (std::isdigit(static_cast<unsigned char>(ch))) digits += ch;
      if (digits.size() == 1 && digits[0] <= '3') zero = digits[0] - '0';
    }
    if (zero < 0 && !z.is_null())
      run.assumptions.push_back("parallel.zero_stage " + z.dump() + " not read: the stack's ZeRO stage stands");
  }
  // PyTorch FSDP's sharding strategies: FULL_SHARD shards parameters, gradients and optimizer
  // state (ZeRO-3); SHARD_GRAD_OP keeps the parameters whole between forward and backward (ZeRO-2).
  // An FSDP degree as a number or a string; true is FULL_SHARD.
  std::string fsdp = StrOr(pj, "fsdp");
  if (pj.contains("fsdp") && pj["fsdp"].is_number_integer()) fsdp = std::to_string(pj["fsdp"].get<int64_t>());
  if (pj.contains("fsdp") && pj["fsdp"].is_boolean()) fsdp = pj["fsdp"].get<bool>() ? "FULL_SHARD" : "0";
  // The degree: a number ("8"), or one after "FSDP=" (dgxc-benchmarking's MaxText tables print
  // "FSDP=128"); digits that do not fit an int64 are not a degree.
  int64_t fsdp_degree = 0;
  const size_t digits_at = !fsdp.empty() && std::isdigit(static_cast<unsigned char>(fsdp[0])) ? 0
                           : fsdp.rfind("FSDP=", 0) == 0                                      ? 5
                                                                                              : std::string::npos;
  if (digits_at != std::string::npos && digits_at < fsdp.size()) {
    const char* first = fsdp.data() + digits_at;
    if (std::from_chars(first, fsdp.data() + fsdp.size(), fsdp_degree).ec != std::errc()) fsdp_degree = 0;
  }
  if (zero >= 0 && zero <= 3) {
    p.zero = static_cast<int>(zero);
  } else if (fsdp.rfind("SHARD_GRAD_OP", 0) == 0) {
    p.zero = 2;
  } else if (fsdp_degree > 0 || fsdp.rfind("FULL_SHARD", 0) == 0) {
    p.zero = 3;
    // "FSDP=N" (dgxc-benchmarking's MaxText tables) is the size of the sharding axis, ici_fsdp x
    // dcn_fsdp in MaxText's mesh; with fewer than the data-parallel ranks the rest replicate
    // (dcn_data_parallelism: dgxc-benchmarking v25.03 maxtext/configure.sh sets dcn_FSDP=16 and
    // dcn_DP = nodes / 16 from 64 nodes on): HSDP, sharded over N and replicated across.
    const int64_t group = p.dp * p.cp;
    if (digits_at == 5 && fsdp_degree < group && group % fsdp_degree == 0) {
      p.sharding = Sharding::kHsdp;
      p.hsdp_shard_size = fsdp_degree;
      run.assumptions.push_back("parallel.fsdp " + fsdp + ": HSDP, ZeRO-3 over " + std::to_string(fsdp_degree) +
                                " data-parallel ranks, replicated " + std::to_string(group / fsdp_degree) +
                                " times (MaxText's fsdp and data-parallel mesh axes)");
    }
  } else if (fsdp.rfind("NO_SHARD", 0) == 0) {
    p.zero = 0;  // PyTorch FSDP's NO_SHARD: plain data parallelism
  } else if (fsdp.rfind("HYBRID_SHARD", 0) == 0 || fsdp.rfind("_HYBRID_SHARD_ZERO2", 0) == 0) {
    // PyTorch FSDP's HYBRID_SHARD: "FULL_SHARD within a node, and replicate parameters across
    // nodes" (torch/distributed/fsdp/api.py ShardingStrategy; _HYBRID_SHARD_ZERO2 the same with
    // SHARD_GRAD_OP): HSDP over the data-parallel ranks one node holds (its GPUs over TP, the
    // innermost axis), the largest such count that divides dp x cp.
    const int64_t group = p.dp * p.cp;
    int64_t shard = std::clamp<int64_t>(s.cluster.gpus_per_node / std::max<int64_t>(p.tp, 1), 1, group);
    while (group % shard != 0) --shard;
    p.zero = fsdp.rfind("_HYBRID", 0) == 0 ? 2 : 3;
    p.sharding = Sharding::kHsdp;
    p.hsdp_shard_size = shard;
    run.assumptions.push_back("parallel.fsdp " + fsdp + ": HSDP, ZeRO-" + std::to_string(p.zero) +
                              " within each node's " + std::to_string(shard) +
                              " data-parallel ranks, replicated across nodes");
  } else if (fsdp.rfind("FSDP2", 0) == 0 || Lower(fsdp).find("fully_shard") != std::string::npos) {
    p.zero = 3;  // FSDP2's fully_shard: parameters, gradients and optimizer state sharded
  } else if (fsdp.empty() && launch && launch->megatron_fsdp) {
    // A table without an FSDP column whose recipe turns Megatron-FSDP on (use_megatron_fsdp with
    // data_parallel_sharding_strategy optim_grads_params, Megatron-Bridge's perf recipes): the
    // parameters, gradients and optimizer states sharded over the data-parallel ranks.
    p.zero = 3;
    run.assumptions.push_back("Megatron-FSDP (use_megatron_fsdp, optim_grads_params): ZeRO-3 from " + launch->recipe);
  } else {
    if (!fsdp.empty() && digits_at == std::string::npos)
      run.assumptions.push_back("parallel.fsdp '" + fsdp + "' not read: the stack's ZeRO stage stands");
    from_stack.push_back("ZeRO " + std::to_string(p.zero));
  }
  // What a run keeps in host memory (parallel.offload: a string or list of "optimizer", "params",
  // "activations"): optimizer states and parameters as ZeRO-Offload does (PlanSpec), activations
  // as DeepSpeed's checkpoints in host memory (PlanSpec::offload_checkpoints).
  if (pj.contains("offload") && !pj["offload"].is_null()) {
    std::vector<std::string> parts;
    if (pj["offload"].is_string()) parts.push_back(pj["offload"].get<std::string>());
    else if (pj["offload"].is_array())
      for (const Json& v : pj["offload"])
        if (v.is_string()) parts.push_back(v.get<std::string>());
    if (parts.empty()) {
      skip("parallel.offload must be a string or a list of optimizer, params, activations");
      return false;
    }
    for (const std::string& what : parts) {
      if (what == "optimizer") {
        p.offload_optimizer = OffloadTarget::kCpu;
      } else if (what == "params") {
        p.offload_params = OffloadTarget::kCpu;
      } else if (what == "activations") {
        // DeepSpeed's activation checkpoints in host memory (activation_checkpointing
        // cpu_checkpointing, with full recomputation): PlanSpec::offload_checkpoints, which the
        // plan's validation checks against its recomputation and the GPU's host link.
        p.offload_checkpoints = true;
        run.assumptions.push_back(
            "activation checkpoints in host memory, copied out and back on the compute stream (parallel.offload "
            "activations: DeepSpeed's cpu_checkpointing)");
        // Checkpoints are full recomputation's: where the record prints no recomputation, that is
        // what it ran, not the stack's setting.
        if (!recompute_printed) {
          p.recompute = Recompute::kFull;
          recompute_printed = true;
          std::erase_if(from_stack, [](const std::string& e) { return e.rfind("recompute ", 0) == 0; });
          run.assumptions.push_back(
              "recompute full: the checkpoints it keeps in host memory are full recomputation's (parallel.recompute "
              "not printed)");
        }
        continue;
      } else {
        skip("parallel.offload '" + what + "' is not optimizer, params or activations");
        return false;
      }
      run.assumptions.push_back(what + " offloaded to host memory (parallel.offload)");
    }
  }
  // A run that names its TP overlap (torchtitan's AsyncTP) overrides the stack's.
  if (pj.contains("async_tp") && pj["async_tp"].is_boolean() && pj["async_tp"].get<bool>()) {
    p.tp_overlap = TpOverlap::kAsync;
    run.assumptions.push_back(
        "AsyncTP (tp_overlap async): PyTorch's micro-pipeline TP fuses each all-gather and reduce-scatter "
        "with its GEMMs, but not the backward reduce-scatters of the q/k/v and w1/w3 inputs' summed gradients");
  }
  // A record that names its attention kernel (model.attention_kernel: flash, flash2, flash1, cudnn-9.13,
  // triton, naive) overrides the stack's.
  const std::string kernel = StrOr(mj, "attention_kernel");
  // Megatron-Core's local layer spec, as the record's notes name it: its linears are Megatron-Core's
  // own, not Transformer Engine's.
  const std::string notes = StrOr(pj, "notes");
  const bool local_spec =
      notes.find("local impl") != std::string::npos || notes.find("local (non-TE)") != std::string::npos;
  if (local_spec) p.transformer_engine = false;
  if (!kernel.empty()) {
    AttentionImpl impl;
    if (!FromName(kernel, &impl)) {
      skip("model.attention_kernel '" + kernel +
           "' is not an attention kernel (flash|flash2|flash1|triton|cudnn-9.13|naive)");
      return false;
    }
    m.attention = impl;
    run.assumptions.push_back("attention kernel " + kernel + " (the record's model.attention_kernel)");
  } else if (local_spec || notes.find("attention-backend unfused") != std::string::npos) {
    // Megatron-Core's local (non-Transformer-Engine) layer spec runs its own unfused
    // DotProductAttention (models/backends.py LocalSpecProvider.core_attention at d98e8a64), as
    // does TE with --attention-backend unfused: the s x s scores are kept.
    m.attention = AttentionImpl::kNaive;
    run.assumptions.push_back(
        "attention unfused (naive: the s x s scores kept), as the record's notes say (local "
        "layer spec or attention-backend unfused)");
  } else {
    from_stack.push_back(std::string("attention ") + Name(m.attention));
  }
  // How context parallelism exchanges K and V, where the record says (parallel.cp_kind, or
  // Transformer Engine's cp_comm_type): the ring (p2p), Ulysses' all-to-alls (a2a), or an
  // all-gather; a hierarchical a2a+p2p is not one meshplan costs and is said.
  const std::string cp_text = Lower(!StrOr(pj, "cp_kind").empty() ? StrOr(pj, "cp_kind") : StrOr(pj, "cp_comm_type"));
  if (p.cp > 1 && !cp_text.empty()) {
    auto says = [&](const char* w) { return cp_text.find(w) != std::string::npos; };
    std::optional<CpKind> read;
    if (!(says("a2a") && says("p2p"))) {
      if (says("ring") || cp_text == "p2p") read = CpKind::kRing;
      else if (says("ulysses") || says("a2a") || says("all-to-all") || says("alltoall")) read = CpKind::kUlysses;
      else if (says("allgather") || says("all_gather") || says("all-gather")) read = CpKind::kAllGather;
    }
    if (read) {
      p.cp_kind = *read;
      run.assumptions.push_back(std::string("context parallelism ") + Name(p.cp_kind) + " as the record says ('" +
                                cp_text + "')");
    } else {
      run.assumptions.push_back("context parallelism '" + cp_text + "' not read: the stack's " + Name(p.cp_kind) +
                                " stands");
    }
  } else if (p.cp > 1) {
    from_stack.push_back(std::string("context parallelism ") + Name(p.cp_kind));
  }
  if (launch && launch->ep_overlap && p.ep > 1) {
    p.ep_overlap = true;
    run.assumptions.push_back(
        "EP all-to-alls under another microbatch's compute (overlap_moe_expert_parallel_comm) from " + launch_name());
    if (launch->delay_wgrad) {
      p.delay_wgrad = true;
      run.assumptions.push_back("weight gradients apart from the input gradients (delay_wgrad_compute) from " +
                                launch_name());
    }
  }
  // The MoE layer's host floor (core/specs.h MoeHost): a recipe that captures whole layers or the
  // whole iteration in CUDA graphs (Megatron-Core's cuda_graph_impl local, or full_iteration)
  // replays them without the host issuing each kernel. A capture of only the router and the
  // dispatcher's preprocessing (transformer_engine: moe_router, moe_preprocess) leaves the
  // synchronisation and everything after it to the host: the floor stays (docs/compute.md).
  if (m.moe && launch &&
      (launch->cuda_graph.find("full_iteration") != std::string::npos || launch->cuda_graph.rfind("local", 0) == 0)) {
    p.moe_host = MoeHost::kNone;
    run.assumptions.push_back("no MoE host floor: CUDA graphs (" + launch->cuda_graph + ") from " + launch_name());
  }
  // The recipe's token dispatcher, said but not applied: DeepEP's and HybridEP's flex dispatcher
  // (core/specs.h MoeDispatcher::kFlex) sends each token once per rank and skips two of the
  // all-to-all dispatcher's four permutations, which takes the MoE runs of the corpus further from
  // their measurements while their host-side costs are not modelled (docs/validation.md), so they
  // are costed as alltoall.
  if (launch && p.ep > 1 && launch->moe_dispatcher.rfind("flex", 0) == 0)
    run.assumptions.push_back("token dispatcher " + launch->moe_dispatcher + " from " + launch_name() +
                              ", costed as alltoall (docs/validation.md)");
  // Each expert's tokens padded to the quantization's alignment before the experts
  // (PlanSpec::moe_router_padding): by the router, where the recipe sets
  // moe_router_padding_for_quantization (or _for_fp8), or by HybridEP's dispatch, which pads them
  // under fp8 at every Megatron-LM a Megatron-Bridge release pins (token_dispatcher.py
  // _HybridEPManager: pad_multiple from the quantization recipe, fp8 at 0d8e0714cd, fp8 or fp4 at
  // b0cc2706dd and d7288711ba), so TEGroupedMLP's Fp8Padding finds nothing to pad. Set for the
  // recipe's 16-bit runs too, where nothing is padded either way, so that a recipe's BF16 and FP8
  // runs differ in their precision alone (validate --pairs); said where it changes the cost.
  if (launch && m.moe && (launch->moe_router_padding || launch->moe_dispatcher == "flex/hybridep")) {
    p.moe_router_padding = true;
    if (Quantized(p.precision))
      run.assumptions.push_back(std::string("each expert's tokens padded for the quantized GEMMs ") +
                                (launch->moe_router_padding ? "by the router (moe_router_padding_for_quantization)"
                                                            : "in HybridEP's dispatch") +
                                ", not by the experts, from " + launch_name());
  }
  // The recipe's gradient dtype (Megatron-Bridge's performance recipes: ddp.grad_reduce_in_fp32 =
  // False), else its release's: 2 bytes per parameter of gradient buffer instead of 4, and half the
  // DP reduction bytes.
  const std::optional<ReleaseDefaults> release = FindReleaseDefaults(id);
  if ((launch && launch->grad_reduce_in_fp32) || (release && release->grad_reduce_in_fp32.value)) {
    const bool from_launch = launch && launch->grad_reduce_in_fp32;
    const bool fp32 = from_launch ? *launch->grad_reduce_in_fp32 : *release->grad_reduce_in_fp32.value;
    p.dtypes.grads = fp32 ? Dtype::kFp32 : p.precision == Dtype::kFp16 ? Dtype::kFp16 : Dtype::kBf16;
    run.assumptions.push_back(std::string("gradients accumulated and reduced in ") + Name(p.dtypes.grads) +
                              " (grad_reduce_in_fp32 " + (fp32 ? "true" : "false") + ") from " +
                              (from_launch ? launch_name() : release->grad_reduce_in_fp32.source));
  }
  // The parameter all-gather in FP8 where the run's config says so, else its release's, else its
  // stack's (PlanSpec::fp8_param_gather; Megatron-Bridge's FP8 mixed-precision recipes turn it on):
  // with FP8 compute and the distributed optimizer only, as Megatron-Core takes it.
  {
    const bool from_launch = launch && launch->fp8_param_gather;
    const bool from_release = !from_launch && release && release->fp8_param_gather.value && p.precision == Dtype::kFp8;
    const bool stack_says = !from_launch && !from_release && stack->fp8_param_gather && p.precision == Dtype::kFp8;
    const std::string said = from_launch    ? launch_name()
                             : from_release ? release->fp8_param_gather.source
                             : stack_says   ? "stack " + stack->name
                                            : "";
    if ((from_launch && *launch->fp8_param_gather) || (from_release && *release->fp8_param_gather.value) ||
        stack_says) {
      if (p.Fp8ParamGatherApplies()) {
        p.fp8_param_gather = true;
        run.assumptions.push_back("parameters all-gathered in FP8 (fp8_param_gather) from " + said);
      } else {
        run.assumptions.push_back("fp8_param_gather in " + said +
                                  " not applied: it needs FP8 compute and "
                                  "ZeRO 1 or 2 (this plan: " +
                                  Name(p.precision) + ", ZeRO " + std::to_string(p.zero) + ")");
      }
    }
  }
  // The recipe's cross entropy, else its release's (Megatron-Bridge's GPT and hybrid providers turn
  // cross_entropy_loss_fusion on; from 25.11 its performance scripts pick Transformer Engine's
  // kernels, cross_entropy_fusion_impl = "te", which the TE versions its releases pin run in place,
  // "te-inplace": presets/launches/megatron-bridge-performance.json).
  {
    const bool from_launch = launch && !launch->cross_entropy.empty();
    const std::string ce = from_launch                               ? launch->cross_entropy
                           : release && release->cross_entropy.value ? *release->cross_entropy.value
                                                                     : "";
    if (!ce.empty() && StrOr(pj, "cross_entropy").empty()) {  // the record's own wins (above)
      if (!FromName(ce, &p.cross_entropy)) {
        skip("launch cross_entropy '" + ce + "' is not a cross-entropy kind meshplan models");
        return false;
      }
      run.assumptions.push_back("cross entropy " + ce + " from " +
                                (from_launch ? launch_name() : release->cross_entropy.source));
    }
  }
  // Whether the DP reduction averages in the collective (Megatron-Bridge's recipes set
  // ddp.average_in_collective = True from 25.11) or the gradients are divided before it
  // (PlanSpec::grad_prescale).
  if (release && release->average_in_collective.value) {
    p.grad_prescale = !*release->average_in_collective.value;
    run.assumptions.push_back(std::string("DP gradients ") +
                              (p.grad_prescale ? "divided by the DP size before their reduction"
                                               : "averaged inside the reduction (average_in_collective)") +
                              " from " + release->average_in_collective.source);
  }
  // Where the router's probabilities weight the tokens (PlanSpec::moe_probs): the Megatron-Core its
  // release or commit runs, when the stack's era is not it; for non-gated (GELU) experts the
  // release's own rule where it has one (Megatron-Core fuses the weighting into SwiGLU and
  // quick-GeGLU only), and a record whose launch arguments turn the SwiGLU fusion off
  // (--no-bias-swiglu-fusion) multiplies the activation's output instead.
  if (release && m.moe && (release->moe_probs.value || release->moe_probs_gelu.value)) {
    const bool gated = m.mlp != MlpKind::kGelu;
    const Sourced<std::string>& where =
        !gated && release->moe_probs_gelu.value ? release->moe_probs_gelu : release->moe_probs;
    if (where.value) {
      if (!FromName(*where.value, &p.moe_probs)) {
        skip("release moe_probs '" + *where.value + "' is not a place meshplan models");
        return false;
      }
      std::string said = " from " + where.source;
      const Json* args = ModelArgs(r);
      if (gated && p.moe_probs == MoeProbs::kFused && args && FlagSet(*args, "--no-bias-swiglu-fusion")) {
        p.moe_probs = MoeProbs::kActivation;
        said += "; --no-bias-swiglu-fusion (the record's arguments): not fused";
      }
      run.assumptions.push_back(std::string("MoE probabilities applied ") +
                                (p.moe_probs == MoeProbs::kUnpermute ? "at the unpermutation (the experts' output kept)"
                                 : p.moe_probs == MoeProbs::kActivation
                                     ? "to the activation's output (that output kept)"
                                     : "in a fused weighted activation (nothing more kept)") +
                                said);
    }
  }
  // How the experts add fc2's bias (PlanSpec::expert_bias), for a model whose experts have biases:
  // the release's Megatron-Core, with fp32 probabilities when the recipe's dispatcher is the flex
  // one (HybridEP and DeepEP take only fp32 probabilities and upcast others: token_dispatcher.py
  // at cd4afffa64), whichever dispatcher the run is costed with.
  const bool op_fuser = launch && launch->moe_op_fuser && m.moe;
  if (release && release->expert_bias.value && m.moe && m.bias == BiasKind::kAll && !op_fuser) {
    if (!FromName(*release->expert_bias.value, &p.expert_bias)) {
      skip("release expert_bias '" + *release->expert_bias.value + "' is not a path meshplan models");
      return false;
    }
    std::string said = " from " + release->expert_bias.source;
    if (p.expert_bias == ExpertBias::kPerExpert && launch && launch->moe_dispatcher.rfind("flex", 0) == 0) {
      p.expert_bias = ExpertBias::kPerExpertFp32;
      said += "; fp32 probabilities, as the recipe's " + launch->moe_dispatcher + " dispatcher hands them (" +
              launch_name() + ")";
    }
    run.assumptions.push_back(std::string("expert fc2 bias added ") + Name(p.expert_bias) + said);
  }
  // The experts through Transformer Engine's op fuser (PlanSpec::moe_op_fuser), where the recipe
  // turns it on: the clamp inside its activation op and fc2's bias inside its grouped linear op,
  // whatever path the release's unfused experts take.
  if (op_fuser) {
    p.moe_op_fuser = true;
    p.expert_bias = ExpertBias::kFused;
    run.assumptions.push_back(std::string("the experts through Transformer Engine's op fuser "
                                          "(use_transformer_engine_op_fuser") +
                              (m.glu_clamp > 0 ? "; the activation's clamp in its op" : "") +
                              (m.bias == BiasKind::kAll ? "; fc2's bias in its grouped linear op" : "") + ") from " +
                              launch_name());
  }
  // The recipe's DP overlaps. Megatron-LM asserts --overlap-param-gather only beside
  // --overlap-grad-reduce (arguments.py:1028-1029 at d98e8a64), so a run that ran without the
  // latter gathered after the step.
  if (launch && (launch->overlap_grad_reduce || launch->overlap_param_gather)) {
    if (launch->overlap_grad_reduce) p.overlap_grad_reduce = *launch->overlap_grad_reduce;
    if (launch->overlap_param_gather) p.overlap_param_gather = *launch->overlap_param_gather;
    p.overlap_param_gather = p.overlap_param_gather && p.overlap_grad_reduce;
    if (!p.overlap_grad_reduce || !p.overlap_param_gather)
      run.assumptions.push_back(
          std::string("gradient reduction ") + (p.overlap_grad_reduce ? "under the backward" : "after the backward") +
          ", parameter all-gather " + (p.overlap_param_gather ? "under the next forward" : "after the optimizer step") +
          " (overlap_grad_reduce/overlap_param_gather) from " + launch_name());
  }
  // The recipe's TP overlap: without Transformer Engine's userbuffers the forward's sequence-parallel
  // all-gathers and reduce-scatters run between the GEMMs, exposed, while the backward keeps the
  // asynchronous collectives every Megatron-Core linear layer issues: a column-parallel layer's
  // input all-gathered again under its input-gradient GEMM and that gradient reduce-scattered
  // under its weight-gradient GEMM (Transformer Engine linear.py and layernorm_linear.py at v2.9,
  // gather_along_first_dim / reduce_scatter_along_first_dim with async_op=True; Megatron-Core's
  // own LinearWithGradAccumulationAndAsyncCommunication likewise): tp_overlap backward.
  if (launch && launch->tp_comm_overlap && !*launch->tp_comm_overlap && p.tp > 1 && p.tp_overlap == TpOverlap::kFull) {
    p.tp_overlap = TpOverlap::kBackward;
    run.assumptions.push_back(
        "TP communication without userbuffers (tp_comm_overlap false): the forward's collectives exposed, the "
        "backward's asynchronous ones under the GEMMs (tp_overlap backward) from " +
        launch_name());
  }
  // And the converse: a run that passed --tp-comm-overlap to a stack that leaves it off. Megatron-LM
  // asserts it beside sequence parallelism (arguments.py:1441-1442 at d98e8a64, SP itself dropped at
  // TP 1, :1433-1439) and then opens Transformer Engine's userbuffers with their default
  // configuration (initialize.py _initialize_tp_communicators, ub_cfgs {} without
  // --tp-comm-overlap-cfg): every sequence-parallel all-gather and reduce-scatter split under its
  // GEMM, forward and backward (tp_overlap full).
  if (launch && launch->tp_comm_overlap && *launch->tp_comm_overlap && p.tp > 1 && p.sequence_parallel &&
      (p.tp_overlap == TpOverlap::kNone || p.tp_overlap == TpOverlap::kBackward)) {
    p.tp_overlap = TpOverlap::kFull;
    run.assumptions.push_back(
        "TP communication under Transformer Engine's userbuffers (tp_comm_overlap true): the sequence-parallel "
        "collectives split under their GEMMs, forward and backward (tp_overlap full) from " +
        launch_name());
  }
  // The recipe's Adam moments (Megatron-Core's precision-aware optimizer with bf16 exp_avg and
  // exp_avg_sq: 2 + 2 bytes per parameter instead of 4 + 4).
  if (launch && !launch->optimizer_states_dtype.empty()) {
    Dtype moments;
    if (!FromName(launch->optimizer_states_dtype, &moments)) {
      skip("launch file: optimizer_states_dtype '" + launch->optimizer_states_dtype + "' is not a dtype");
      return false;
    }
    p.dtypes.optimizer_states = moments;
    run.assumptions.push_back(std::string("Adam moments in ") + Name(moments) + " from " + launch_name());
  }
  // The recipe's optimizer (Kimi K2's runs train with Muon: one momentum buffer for the 2D hidden
  // weights, Adam's two for the rest, and a Newton-Schulz orthogonalisation per step).
  if (launch && !launch->optimizer.empty()) {
    Optimizer opt;
    if (!FromName(launch->optimizer, &opt)) {
      skip("launch file: optimizer '" + launch->optimizer + "' is not one of " + Choices<Optimizer>());
      return false;
    }
    p.optimizer = opt;
    run.assumptions.push_back(std::string("optimizer ") + Name(opt) + " from " + launch_name());
  }
  if (launch && !launch->master_weights_dtype.empty()) {
    Dtype master;
    if (!FromName(launch->master_weights_dtype, &master)) {
      skip("launch file: master_weights_dtype '" + launch->master_weights_dtype + "' is not a dtype");
      return false;
    }
    p.dtypes.master_weights = master;
    run.assumptions.push_back(std::string("the optimizer's copy of the weights in ") + Name(master) + " from " +
                              launch_name());
  }
  if (launch && launch->ddp == "torch") {
    // PyTorch DDP reduces gradients in buckets while the backward pass runs.
    p.overlap_grad_reduce = true;
    run.assumptions.push_back("PyTorch DDP (gradient all-reduce overlapped with backward) from " + launch->source);
  }
  // torchtitan's own name for its norm (model.norm_type in its TOML, as the record's configuration
  // sets it): fused_rmsnorm ran the Triton RMSNorm (models/norms.py at 395a526, removed in
  // 37c4b8181), rmsnorm the op-by-op one the stack already costs.
  if (mj.contains("norm_type")) {
    const Json& nt = mj["norm_type"];
    if (!nt.is_string() || (nt != "fused_rmsnorm" && nt != "rmsnorm")) {
      skip("model.norm_type: must be rmsnorm or fused_rmsnorm (torchtitan's names for the RMSNorms it costs)");
      return false;
    }
    if (nt == "fused_rmsnorm" && p.elementwise == Elementwise::kEager) {
      p.elementwise = Elementwise::kEagerFusedNorm;
      run.assumptions.push_back(
          "norms: torchtitan's Triton RMSNorm (model.norm_type fused_rmsnorm), RoPE and SwiGLU op by op");
    }
  }
  // A run that says it ran under torch.compile had its norms, RoPE and activations fused.
  const Json& measured_other = r["measured"].contains("other") ? r["measured"]["other"] : kNone;
  // (measured.other.torch_compile only: read from the memory records' precision text as well, the
  // fused kernels' smaller saved set put their compiled torchtitan peaks at median 5.6% off
  // against 3.2% with the eager terms, docs/memory.md.)
  if (p.elementwise != Elementwise::kFused && measured_other.is_object() &&
      BoolAt(measured_other, "torch_compile").value_or(false)) {
    p.elementwise = Elementwise::kFused;
    run.assumptions.push_back("torch.compile: norms, RoPE and activations fused (the stack's eager kernels otherwise)");
    // A stack whose code compiles its loss with the model (torchtitan from bbb1b616e).
    if (stack->compiled_cross_entropy && p.cross_entropy == stack->cross_entropy) {
      p.cross_entropy = *stack->compiled_cross_entropy;
      run.assumptions.push_back(std::string("torch.compile: the loss compiled too, cross entropy ") +
                                Name(p.cross_entropy) + " (stack " + stack->name + ")");
    }
  }
  // DeepSpeed's BF16_Optimizer, when the record names it (its framework, software or optimizer
  // field): the bf16 gradients stay beside the fp32 accumulation buffer (PlanSpec::keep_lp_grads).
  // BigScience switched to it on 2022-02-28 (chronicles-prequel.md at 9e64ede: "from now on the
  // testing is happening with BF16 optimizer"); the runs before it do not name it.
  if (p.precision == Dtype::kBf16 && p.dtypes.grads == Dtype::kFp32) {
    const std::string said_opt =
        Lower(StrOr(r, "framework") + " " + StrOr(r, "software") + " " + StrOr(r, "optimizer"));
    if (said_opt.find("bf16_optimizer") != std::string::npos || said_opt.find("bf16 optimizer") != std::string::npos) {
      p.keep_lp_grads = true;
      run.assumptions.push_back(
          "optimizer: DeepSpeed's BF16_Optimizer keeps the bf16 gradients beside its fp32 accumulation buffer "
          "(+2 B per parameter on the rank, bf16_optimizer.py at 56c5223)");
    }
  }
  if (std::string said_pp = ApplyStackPipelineSharding(*stack, &p); !said_pp.empty())
    run.assumptions.push_back(said_pp);
  // Layers that do not divide over pp*vpp chunks: the project's default uneven split.
  ApplyDefaultStageSplit(m, &p, &run.assumptions);
  // DTensor's TP (core/specs.h PlanSpec::dtensor_tp): said where it costs something.
  if (p.dtensor_tp && p.tp > 1 && p.sequence_parallel)
    from_stack.push_back(p.precision == Dtype::kFp8 ? "DTensor's TP (sequence-dimension copies, float8 gathers)"
                                                    : "DTensor's TP (sequence-dimension copies)");
  // PyTorch's context_parallel (PlanSpec::torch_cp): said where it costs something.
  if (p.torch_cp && p.cp > 1 && p.cp_kind != CpKind::kUlysses)
    from_stack.push_back(std::string("PyTorch's context_parallel (K/V by ") +
                         (p.cp_kind == CpKind::kAllGather ? "all-gather" : "ring") +
                         "; eager fp32 merges, fp32 dK/dV ring)");
  std::string said = "stack " + stack->name;
  for (size_t i = 0; i < from_stack.size(); ++i) said += (i ? ", " : ": ") + from_stack[i];
  run.assumptions.push_back(said);
  Diagnostics d;
  ValidatePlan(p, m, s.gpu, s.cluster, &d);
  if (d.has_errors()) {
    skip("plan invalid: " + d.ToStatus().message());
    return false;
  }
  // A run that ran fitted in its GPUs' memory. Where the record leaves sequence parallelism
  // or recomputation unprinted and the stack's defaults do not fit, the run used the cheapest
  // of Megatron-LM's memory savers that fits, taken in the order Korthikanti et al. 2022 (arXiv
  // 2205.05198 §4.2.2, §5, Table 2) rank them by cost: sequence parallelism (no extra FLOPs; with
  // tp > 1), then selective recomputation (the attention core again, 2-3% of the FLOPs), then full
  // recomputation (a whole forward again). Said in the assumptions.
  if (!sp_printed || !recompute_printed) {
    auto fits = [&] { return EstimateMemory(m, p, s.gpu, {}, MemoryDetail::kTotalsOnly).fits; };
    std::vector<std::string> turned_on;
    if (!fits() && !sp_printed && p.tp > 1 && !p.sequence_parallel && p.seq_len % (p.tp * p.cp) == 0) {
      p.sequence_parallel = true;
      turned_on.push_back("sequence parallelism");
    }
    const Recompute stack_recompute = p.recompute;
    for (Recompute next : {Recompute::kSelective, Recompute::kFull}) {
      if (recompute_printed || fits() || static_cast<int>(p.recompute) >= static_cast<int>(next)) continue;
      p.recompute = next;
    }
    if (p.recompute != stack_recompute) turned_on.push_back(std::string(Name(p.recompute)) + " recomputation");
    if (!turned_on.empty()) {
      std::string what;
      for (size_t i = 0; i < turned_on.size(); ++i) what += (i ? ", " : "") + turned_on[i];
      run.assumptions.push_back("not printed and the stack's defaults do not fit in " + s.gpu.name + ": " + what +
                                " (the cheapest memory savers that fit; a run that ran fitted)");
    }
  }
  // Full recomputation as the run's PyTorch checkpoints (PlanSpec::recompute_early_stop): from torch
  // 2.1 the non-reentrant checkpoint stops replaying a block at its last saved tensor, which the
  // release's software version says (LLM Foundry's sweeps: presets/launches/llm-foundry-benchmarks.json),
  // true or false, else the stack's default (SoftwareStack::recompute_early_stop). After the rule
  // above, so a run whose recomputation it turned on replays as its PyTorch does; the stop changes
  // no memory, so the fit holds.
  std::optional<bool> early_stop;
  std::string early_stop_from;
  if (release && release->recompute_early_stop.value) {
    early_stop = *release->recompute_early_stop.value;
    early_stop_from = " from " + release->recompute_early_stop.source;
  } else if (stack->recompute_early_stop) {
    early_stop = true;
    early_stop_from = " from stack " + stack->name + " (its default)";
  }
  if (early_stop && *early_stop)
    if (std::string stop = ApplyRecomputeEarlyStop(m, &p); !stop.empty())
      run.assumptions.push_back(stop + early_stop_from);
  if (!with_measurement) return true;

  // The published number in tokens/s per GPU: printed as such, else from the iteration time,
  // else from TFLOP/s or MFU with the stack's FLOP count.
  const Json& me = r["measured"];
  const double gpus = static_cast<double>(p.gpus);
  const double tokens_per_step = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
  const double flops_per_token = SourceFlopsPerToken(stack->flop_count, m, p.seq_len);
  auto fmt = [](const char* what, double v) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s %.6g", what, v);
    return std::string(buf);
  };
  if (const double v = NumOr(me, "tokens_per_s_per_gpu", 0); v > 0) {
    run.published = v;
    run.printed = fmt("tokens_per_s_per_gpu", v);
    run.conversion = "as printed";
  } else if (const double t = NumOr(me, "tokens_per_s", 0); t > 0) {
    run.published = t / gpus;
    run.printed = fmt("tokens_per_s", t);
    run.conversion = "tokens/s / GPUs";
  } else if (const double it = NumOr(me, "iteration_time_s", 0); it > 0) {
    run.published = tokens_per_step / (it * gpus);
    run.printed = fmt("iteration_time_s", it);
    run.conversion = "global batch x sequence / (iteration time x GPUs)";
  } else if (const double tf = NumOr(me, "tflops_per_gpu", 0); tf > 0) {
    run.published = tf * 1e12 / flops_per_token;
    run.printed = fmt("tflops_per_gpu", tf);
    run.conversion =
        fmt((std::string("TFLOP/s / FLOPs per token (") + Name(stack->flop_count) + ":").c_str(), flops_per_token) +
        ")";
  } else if (const double pf = NumOr(me, "aggregate_pflops", 0); pf > 0) {
    // The whole run's FLOP rate, counted as the source counts (the stack's FLOP count), shared by
    // its GPUs.
    run.published = pf * 1e15 / gpus / flops_per_token;
    run.printed = fmt("aggregate_pflops", pf);
    run.conversion = fmt((std::string("PFLOP/s / GPUs / FLOPs per token (") + Name(stack->flop_count) + ":").c_str(),
                         flops_per_token) +
                     ")";
  } else if (const char* field = NumOr(me, "mfu_pct", 0) > 0       ? "mfu_pct"
                                 : NumOr(me, "pct_of_peak", 0) > 0 ? "pct_of_peak"
                                                                   : nullptr;
             field != nullptr) {
    // MFU, or a percentage of the theoretical peak (Narayanan 2021's, counted with Eq. 3, which
    // includes the recomputation: the stack's FLOP count says which count the source used), against
    // the peak the authors state, else the GPU's dense 16-bit peak.
    const bool is_mfu = std::string_view(field) == "mfu_pct";
    const double percent = NumOr(me, field, 0);
    double peak = NumOr(hj, "peak_tflops_per_gpu_used_by_authors", 0) * 1e12;
    if (peak <= 0) {
      auto it16 = s.gpu.peak_flops_per_s.find(Dtype::kBf16);
      if (it16 == s.gpu.peak_flops_per_s.end()) it16 = s.gpu.peak_flops_per_s.find(Dtype::kFp16);
      if (it16 == s.gpu.peak_flops_per_s.end()) {
        skip(std::string("measured.") + field + " printed but the GPU has no 16-bit peak");
        return false;
      }
      peak = it16->second;
    }
    run.published = percent / 100 * peak / flops_per_token;
    run.printed = fmt(field, percent);
    run.conversion =
        fmt(is_mfu ? "MFU x peak" : "percent of peak x peak", peak / 1e12) + " TFLOP/s" +
        fmt((std::string(" / FLOPs per token (") + Name(stack->flop_count) + ":").c_str(), flops_per_token) + ")";
  } else if (NumOr(me, "hfu_pct", 0) > 0) {
    skip(
        "measured.hfu_pct alone: hardware FLOPs count the recomputation, and the record does not say how the "
        "source counted it");
    return false;
  } else {
    skip("no measured tokens/s, iteration time, TFLOP/s, aggregate PFLOP/s, MFU or percent of peak");
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
  // The records themselves, or an object that holds them under "records".
  if (records.is_object() && records.contains("records") && records["records"].is_array()) {
    Json inner = std::move(records["records"]);
    return inner;
  }
  if (!records.is_array())
    return Status::InvalidArgument("dataset: must be a JSON array of records (or an object with a \"records\" array)");
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
    if (!r.is_object() || !MapRecord(r, /*with_measurement=*/true, &run, &why)) {
      if (skipped) skipped->push_back(id + ": " + (why.empty() ? "not a run record" : why));
      continue;
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

namespace {
// What a memory record's metric text says it measured: "reserved" (the caching allocator's
// reserved or "cached" bytes), "device" (nvidia-smi's used memory), "allocated", or "" when it
// names none of them.
std::string MemoryMetricKind(const std::string& metric) {
  const std::string kind = Lower(metric);
  if (kind.find("reserved") != std::string::npos || kind.find("cached") != std::string::npos) return "reserved";
  if (kind.find("nvidia-smi") != std::string::npos || kind.find("device") != std::string::npos) return "device";
  if (kind.find("alloc") != std::string::npos) return "allocated";
  return "";
}
}  // namespace

Result<std::vector<PublishedMemory>> LoadPublishedMemory(const std::string& text, std::vector<std::string>* skipped) {
  auto records = ParseDataset(text);
  if (!records.ok()) return records.status();
  std::vector<PublishedMemory> out;
  for (const Json& r : *records) {
    const std::string id = r.is_object() ? StrOr(r, "id") : "";
    auto skip = [&](const std::string& why) {
      if (skipped) skipped->push_back(id + ": " + why);
    };
    if (!r.is_object() || !r.contains("measured") || !r["measured"].is_object()) {
      skip("no measured memory");
      continue;
    }
    const Json& me = r["measured"];
    const std::string metric = StrOr(me, "metric");
    PublishedMemory mem;
    mem.metric = metric;
    const std::string outcome = StrOr(me, "outcome");
    if (!outcome.empty() && outcome != "out_of_memory" && outcome != "fits") {
      skip("measured.outcome '" + outcome + "' must be out_of_memory or fits");
      continue;
    }
    if (outcome == "out_of_memory" && (NumOr(me, "peak_allocated_gib", 0) > 0 || NumOr(me, "reserved_gib", 0) > 0 ||
                                       NumOr(me, "peak_gib", 0) > 0 || NumOr(me, "device_gib", 0) > 0)) {
      skip("measured.outcome out_of_memory with a measured peak: a run with a peak ran");
      continue;
    }
    if (const double a = NumOr(me, "peak_allocated_gib", 0); a > 0) {
      mem.measured_gib = a;
    } else if (const double rsv = NumOr(me, "reserved_gib", 0); rsv > 0) {
      mem.measured_gib = rsv;
      mem.reserved = true;
    } else if (const double pk = NumOr(me, "peak_gib", 0); pk > 0 && !MemoryMetricKind(metric).empty()) {
      // The one number the record compares against, of the kind its metric names (read without
      // case): the allocator's reserved (or "cached") bytes, its allocated bytes, or the device's
      // used memory as nvidia-smi shows it.
      const std::string kind = MemoryMetricKind(metric);
      mem.measured_gib = pk;
      mem.reserved = kind == "reserved";
      mem.device = kind == "device";
    } else if (const double dev = NumOr(me, "device_gib", 0); dev > 0) {
      mem.measured_gib = dev;
      mem.device = true;
    } else if (NumOr(me, "peak_gib", 0) > 0) {
      skip("measured.peak_gib with a metric that names neither allocated, reserved nor nvidia-smi memory ('" + metric +
           "')");
      continue;
    } else if (!outcome.empty()) {
      mem.outcome = outcome == "fits" ? PublishedMemory::Outcome::kFits : PublishedMemory::Outcome::kOutOfMemory;
    } else {
      skip("no measured peak_allocated_gib, reserved_gib, device_gib or outcome");
      continue;
    }
    const std::string which = Lower(StrOr(me, "which_rank"));
    mem.last_stage =
        which.find("last pp stage") != std::string::npos || which.find("last pipeline stage") != std::string::npos;
    PublishedRun run;
    std::string why;
    if (!MapRecord(r, /*with_measurement=*/false, &run, &why)) {
      skip(why.empty() ? "not a run record" : why);
      continue;
    }
    if (mem.last_stage && run.scenario.plan.pp > 1)
      run.assumptions.push_back(
          "measured on the last pipeline stage's rank (measured.which_rank): that stage compared");
    mem.id = run.id;
    mem.source = run.source;
    mem.table = run.table;
    mem.scenario = std::move(run.scenario);
    mem.stack = run.stack;
    mem.assumptions = std::move(run.assumptions);
    out.push_back(std::move(mem));
  }
  return out;
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
    if (!MapRecord(r, /*with_measurement=*/false, &run, &why)) continue;
    out.push_back({run.id, run.source, run.scenario, run.dataset, run.stack, f_ms / 1e3, b_ms / 1e3, run.assumptions});
  }
  return out;
}

}  // namespace meshplan::core
