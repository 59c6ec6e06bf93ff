#include "core/hf_config.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/diagnostics.h"

namespace meshplan::core {
namespace {

using Json = nlohmann::json;

constexpr const char* kSupported =
    "llama|mistral|mixtral|qwen2|qwen3|qwen3_moe|deepseek_v3|kimi_k2|gpt2|gpt_oss|nemotron_h";

// What a config.json may leave out. Size-defining fields (layers, widths, vocab, expert counts
// and sizes, MLA ranks) are required: a transformers default there would silently plan a
// different model, and every published config.json states them. Everything else takes the
// default of transformers' configuration_<family>.py, because that is what transformers itself
// builds from the same file.
struct FamilyDefaults {
  int64_t kv_heads = 0;  // 0: equal to num_attention_heads (llama's None)
  int64_t head_dim = 0;  // 0: hidden_size / num_attention_heads
  int64_t max_position = 0;
  bool tie_embeddings = false;
};

FamilyDefaults DefaultsFor(const std::string& type) {
  // Values from transformers/models/<family>/configuration_<family>.py (v4.55).
  if (type == "llama") return {0, 0, 2048, false};
  if (type == "mistral" || type == "mixtral") return {8, 0, 4096 * 32, false};
  if (type == "qwen2") return {32, 0, 32768, false};
  if (type == "qwen3") return {32, 128, 32768, false};
  if (type == "qwen3_moe") return {4, 0, 32768, false};
  if (type == "deepseek_v3") return {128, 0, 4096, false};
  if (type == "gpt_oss") return {8, 64, 131072, false};
  return {0, 0, 1024, true};  // gpt2: PretrainedConfig ties embeddings by default
}

std::string Brief(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// Reads top-level fields of one config object; every problem goes to `diag` as
// "config.<key>: ...", so the caller can report all of them at once. A JSON null counts as
// absent (transformers writes null for unset optional fields).
class FieldReader {
 public:
  FieldReader(const Json& j, Diagnostics* diag) : j_(j), diag_(diag) {}

  bool Has(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }

  // A required integer > 0; 0 (and an error) when absent or invalid.
  int64_t Required(const char* key) {
    if (!Has(key)) {
      diag_->Error(Path(key), "missing (required)");
      return 0;
    }
    int64_t v = 0;
    if (!ToInt(key, j_.at(key), &v)) return 0;
    if (v <= 0) {
      diag_->Error(Path(key), "must be > 0, got " + std::to_string(v));
      return 0;
    }
    return v;
  }

  // An optional integer >= 0.
  int64_t Optional(const char* key, int64_t fallback) {
    if (!Has(key)) return fallback;
    int64_t v = 0;
    if (!ToInt(key, j_.at(key), &v)) return fallback;
    if (v < 0) {
      diag_->Error(Path(key), "must be >= 0, got " + std::to_string(v));
      return fallback;
    }
    return v;
  }

  // A key that must be present but may be null, meaning 0 (DeepSeek's q_lora_rank: null is a
  // full-rank q projection; n_shared_experts: null is none).
  int64_t RequiredOrNull(const char* key) {
    if (!j_.contains(key)) {
      diag_->Error(Path(key), "missing (required; null means 0)");
      return 0;
    }
    return Optional(key, 0);
  }

  bool Bool(const char* key, bool fallback) {
    if (!Has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_boolean()) {
      diag_->Error(Path(key), "expected true or false, got " + Brief(v));
      return fallback;
    }
    return v.get<bool>();
  }

  double Number(const char* key, double fallback) {
    if (!Has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_number()) {
      diag_->Error(Path(key), "expected a number, got " + Brief(v));
      return fallback;
    }
    return v.get<double>();
  }

  std::string String(const char* key, const std::string& fallback) {
    if (!Has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_string()) {
      diag_->Error(Path(key), "expected a string, got " + Brief(v));
      return fallback;
    }
    return v.get<std::string>();
  }

  // A list of layer indices in [0, layers); absent or null is empty.
  std::set<int64_t> LayerList(const char* key, int64_t layers) {
    std::set<int64_t> out;
    if (!Has(key)) return out;
    const Json& v = j_.at(key);
    if (!v.is_array()) {
      diag_->Error(Path(key), "expected a list of layer indices, got " + Brief(v));
      return out;
    }
    for (const Json& e : v) {
      int64_t l = 0;
      if (!ToInt(key, e, &l)) return {};
      if (l < 0 || (layers > 0 && l >= layers)) {
        diag_->Error(Path(key), "layer " + std::to_string(l) + " is outside [0, " + std::to_string(layers) + ")");
        return {};
      }
      out.insert(l);
    }
    return out;
  }

  void Error(const char* key, std::string message) { diag_->Error(Path(key), std::move(message)); }
  const Json& Object() const { return j_; }
  static std::string Path(const char* key) { return std::string("config.") + key; }

 private:
  // JSON integers, and floats with an integral value ("4096.0"), are accepted.
  bool ToInt(const char* key, const Json& v, int64_t* out) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        *out = static_cast<int64_t>(u);
        return true;
      }
    } else if (v.is_number_integer()) {
      *out = v.get<int64_t>();
      return true;
    } else if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
        *out = static_cast<int64_t>(d);
        return true;
      }
    }
    diag_->Error(Path(key), "expected an integer, got " + Brief(v));
    return false;
  }

  const Json& j_;
  Diagnostics* diag_;
};

// ModelSpec places MoE layers as "l >= first_dense_layers and (l - first_dense_layers) %
// layer_freq == 0". Families state it differently (Qwen: (l+1) % decoder_sparse_step == 0 minus
// mlp_only_layers; DeepSeek: l >= first_k_dense_replace and l % moe_layer_freq == 0), so the
// importer enumerates the family's own rule and finds the one (first, freq) that reproduces it.
// REQUIRES: some entry of is_moe is true. False when no (first, freq) matches.
bool FitLayerPattern(const std::vector<bool>& is_moe, int64_t* first, int64_t* freq) {
  const int64_t n = static_cast<int64_t>(is_moe.size());
  int64_t f = 0;
  while (f < n && !is_moe[f]) ++f;
  int64_t next = f + 1;
  while (next < n && !is_moe[next]) ++next;
  const int64_t step = next < n ? next - f : n - f;  // one MoE layer: any step past the end
  for (int64_t l = 0; l < n; ++l) {
    const bool want = l >= f && (l - f) % step == 0;
    if (want != is_moe[l]) return false;
  }
  *first = f;
  *freq = step;
  return true;
}

std::string LayerSetString(const std::vector<bool>& is_moe) {
  std::string s;
  for (size_t l = 0; l < is_moe.size(); ++l) {
    if (!is_moe[l]) continue;
    if (!s.empty()) s += ",";
    s += std::to_string(l);
  }
  return "{" + s + "}";
}

// Sets m->moe from the MoE layer set, or leaves it empty when no layer is MoE. `field` names the
// config key blamed when ModelSpec cannot express the set.
void SetMoeLayers(const std::vector<bool>& is_moe, MoeSpec moe, FieldReader& r, const char* field, ModelSpec* m) {
  bool any = false;
  for (bool b : is_moe) any = any || b;
  if (!any) return;  // every layer dense: a dense model
  if (!FitLayerPattern(is_moe, &moe.first_dense_layers, &moe.layer_freq)) {
    r.Error(field, "gives MoE layers " + LayerSetString(is_moe) +
                       ", which meshplan cannot express (it needs the first k layers dense, "
                       "then every n-th layer MoE)");
    return;
  }
  m->moe = moe;
}

// YaRN's attention scaling (ModelSpec::rope_mscale) from rope_scaling, as transformers'
// _compute_yarn_parameters (modeling_rope_utils.py) and Megatron-Core's
// _yarn_get_concentration_factor derive it: attention_factor when given; else, with mscale and
// mscale_all_dim, the ratio of get_mscale(factor, mscale) to get_mscale(factor, mscale_all_dim);
// else get_mscale(factor) = 0.1 ln(factor) + 1 (1 for factor <= 1). Other RoPE scalings (llama3,
// linear, dynamic) scale no cos or sin: 1.
void ReadRopeScaling(FieldReader& r, ModelSpec* m) {
  const Json& j = r.Object();
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return;
  if (!it->is_object()) {
    r.Error("rope_scaling", "expected an object, got " + Brief(*it));
    return;
  }
  const Json& s = *it;
  auto text = [&](const char* key) {
    auto k = s.find(key);
    return k != s.end() && k->is_string() ? k->get<std::string>() : std::string();
  };
  const std::string kind = text("rope_type").empty() ? text("type") : text("rope_type");
  if (kind != "yarn") return;
  auto number = [&](const char* key, double* out) {
    auto k = s.find(key);
    if (k == s.end() || k->is_null()) return false;
    if (!k->is_number()) {
      r.Error("rope_scaling", std::string(key) + " expected a number, got " + Brief(*k));
      return false;
    }
    *out = k->get<double>();
    return true;
  };
  double factor = 1, attention = 0, mscale = 0, mscale_all_dim = 0;
  if (!number("factor", &factor) || !(factor > 0)) {
    r.Error("rope_scaling", "yarn needs factor > 0");
    return;
  }
  auto get_mscale = [factor](double scale) { return factor <= 1 ? 1.0 : 0.1 * scale * std::log(factor) + 1.0; };
  if (number("attention_factor", &attention)) m->rope_mscale = attention;
  else if (number("mscale", &mscale) && number("mscale_all_dim", &mscale_all_dim))
    m->rope_mscale = get_mscale(mscale) / get_mscale(mscale_all_dim);
  else m->rope_mscale = get_mscale(1.0);
  if (!(m->rope_mscale > 0) || !std::isfinite(m->rope_mscale)) {
    r.Error("rope_scaling",
            "gives an attention factor of " + std::to_string(m->rope_mscale) + ": it must be a positive number");
    m->rope_mscale = 1.0;
  }
}

// Sliding-window attention (ModelSpec::sliding_window, global_attention_every). transformers
// states it per layer in `layer_types` ("sliding_attention" / "full_attention": gpt-oss, Gemma,
// and every family since v4.54); Mistral and Mixtral window every layer when `sliding_window` is
// set (modeling_mistral.py); Qwen2/Qwen3 window the layers from `max_window_layers` on only when
// `use_sliding_window` is true (configuration_qwen2.py; false in every released config).
void ReadSlidingWindow(const std::string& type, FieldReader& r, ModelSpec* m) {
  std::vector<bool> windowed;
  const Json& j = r.Object();
  if (auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
    if (!it->is_array() || static_cast<int64_t>(it->size()) != m->layers) {
      r.Error("layer_types", "expected a list of " + std::to_string(m->layers) + " layer types (num_hidden_layers)");
      return;
    }
    for (const Json& e : *it) {
      const std::string t = e.is_string() ? e.get<std::string>() : "";
      if (t != "sliding_attention" && t != "full_attention") {
        r.Error("layer_types", "has " + Brief(e) + "; meshplan knows sliding_attention and full_attention");
        return;
      }
      windowed.push_back(t == "sliding_attention");
    }
  } else if ((type == "mistral" || type == "mixtral") && r.Has("sliding_window")) {
    windowed.assign(static_cast<size_t>(std::max<int64_t>(m->layers, 0)), true);
  } else if ((type == "qwen2" || type == "qwen3" || type == "qwen3_moe") && r.Bool("use_sliding_window", false)) {
    const int64_t from = r.Optional("max_window_layers", 0);
    for (int64_t l = 0; l < m->layers; ++l) windowed.push_back(l >= from);
  }
  int64_t count = 0;
  for (bool w : windowed) count += w ? 1 : 0;
  if (count == 0) return;
  m->sliding_window = r.Required("sliding_window");
  if (count == static_cast<int64_t>(windowed.size())) return;  // every layer windowed: G = 0
  // Global layers at 1-based numbers divisible by G: the first global layer fixes G (a global
  // first layer gives G = 1, which the check below refuses: some layer is windowed).
  int64_t g = 0;
  while (g < static_cast<int64_t>(windowed.size()) && windowed[static_cast<size_t>(g)]) ++g;
  const int64_t every = g + 1;
  for (int64_t l = 0; l < static_cast<int64_t>(windowed.size()); ++l)
    if (windowed[static_cast<size_t>(l)] != ((l + 1) % every != 0)) {
      r.Error(r.Has("layer_types") ? "layer_types" : "max_window_layers",
              "gives windowed layers meshplan cannot express (it needs a global layer every n-th layer, the others "
              "windowed, or every layer windowed)");
      return;
    }
  m->global_attention_every = every;
}

// The layer count under `key`, refused above kMaxModelLayers before any per-layer list is built
// (a fuzzed config's 11,283,333,171 layers had the DeepSeek reader fill a list that long).
int64_t Layers(FieldReader& r, const char* key) {
  const int64_t layers = r.Required(key);
  if (layers <= kMaxModelLayers) return layers;
  r.Error(key, "must be at most " + std::to_string(kMaxModelLayers) +
                   " (the deepest published LLMs have a few hundred), got " + std::to_string(layers));
  return 0;
}

void ReadGpt2(FieldReader& r, ModelSpec* m) {
  // transformers/models/gpt2/configuration_gpt2.py; the MLP is Conv1D h->n_inner->h with
  // biases, n_inner None meaning 4*n_embd.
  m->layers = Layers(r, "n_layer");
  m->hidden = r.Required("n_embd");
  m->heads = r.Required("n_head");
  m->vocab = r.Required("vocab_size");
  m->kv_heads = m->heads;
  if (m->hidden > 0 && m->heads > 0) {
    if (m->hidden % m->heads != 0) {
      r.Error("n_embd", std::to_string(m->hidden) + " is not divisible by n_head=" + std::to_string(m->heads));
    } else {
      m->head_dim = m->hidden / m->heads;
    }
  }
  m->ffn_hidden = r.Optional("n_inner", 4 * m->hidden);
  m->max_seq = r.Optional("n_positions", 1024);
  m->tied_embeddings = r.Bool("tie_word_embeddings", true);
  m->mlp = MlpKind::kGelu;
  m->norm = NormKind::kLayerNorm;
  m->position = PositionKind::kLearned;
  m->bias = BiasKind::kAll;
  // Dropout after attention, MLP (resid_pdrop) and embeddings (embd_pdrop); 0.1 by default.
  m->dropout = r.Number("resid_pdrop", 0.1) > 0 || r.Number("embd_pdrop", 0.1) > 0;
}

// Nemotron-H and Nemotron 3 (model_type nemotron_h, NVIDIA's configuration_nemotron_h.py shipped
// with the checkpoints), read as Megatron-Bridge's NemotronHBridge maps them
// (src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py at 067f987df, with the base
// CONFIG_MAPPING of models/conversion/model_bridge.py): hybrid_override_pattern the layer kinds
// (core/specs.h ModelSpec::hybrid_pattern), mamba_num_heads, mamba_head_dim, ssm_state_size,
// n_groups, conv_kernel and chunk_size the Mamba-2 mixer, head_dim or attention_head_dim the
// attention's kv_channels, n_routed_experts, num_experts_per_tok, moe_intermediate_size and
// moe_shared_expert_intermediate_size the MoE blocks, moe_latent_size a latent MoE's width,
// num_nextn_predict_layers, mtp_hybrid_override_pattern and mtp_use_repeated_layer the MTP
// modules; no position embedding, squared ReLU (not gated: costed as a two-matrix MLP), a sigmoid
// router with expert bias (the bridge's defaults).
void ReadNemotronH(FieldReader& r, ModelSpec* m) {
  m->layers = Layers(r, "num_hidden_layers");
  m->hidden = r.Required("hidden_size");
  m->heads = r.Required("num_attention_heads");
  m->vocab = r.Required("vocab_size");
  m->ffn_hidden = r.Required("intermediate_size");
  m->kv_heads = r.Optional("num_key_value_heads", m->heads);
  m->max_seq = r.Optional("max_position_embeddings", 4096);
  m->tied_embeddings = r.Bool("tie_word_embeddings", false);
  if (r.Has("head_dim")) m->head_dim = r.Required("head_dim");
  else if (r.Has("attention_head_dim")) m->head_dim = r.Required("attention_head_dim");
  else if (m->hidden > 0 && m->heads > 0 && m->hidden % m->heads == 0) m->head_dim = m->hidden / m->heads;
  else r.Error("head_dim", "absent (nor attention_head_dim), and hidden_size is not divisible by num_attention_heads");
  m->mlp = MlpKind::kGelu;
  m->norm = NormKind::kRmsNorm;
  m->position = PositionKind::kNone;
  m->attention = AttentionImpl::kFlash;
  m->dropout = false;
  m->bias = r.Bool("attention_bias", false) ? BiasKind::kQkv : BiasKind::kNone;
  if (!r.Has("hybrid_override_pattern")) r.Error("hybrid_override_pattern", "missing (required: the layer kinds)");
  m->hybrid_pattern = r.String("hybrid_override_pattern", "");
  if (m->layers > 0 && !m->hybrid_pattern.empty() && static_cast<int64_t>(m->hybrid_pattern.size()) != m->layers)
    r.Error("hybrid_override_pattern", "has " + std::to_string(m->hybrid_pattern.size()) +
                                           " characters for num_hidden_layers=" + std::to_string(m->layers));
  MambaSpec x;
  x.heads = r.Required("mamba_num_heads");
  x.head_dim = r.Required("mamba_head_dim");
  x.state = r.Required("ssm_state_size");
  x.groups = r.Required("n_groups");
  x.conv_kernel = r.Optional("conv_kernel", 4);
  x.chunk = r.Optional("chunk_size", 128);
  m->mamba = x;
  // Multi-token prediction (Nemotron 3 Super, Ultra): num_nextn_predict_layers modules whose
  // layer is mtp_hybrid_override_pattern's blocks (the bridge refuses the first without the
  // second), one module serving every depth unless mtp_use_repeated_layer is false (the
  // bridge's default: true).
  m->mtp_layers = r.Optional("num_nextn_predict_layers", 0);
  if (m->mtp_layers > 0) {
    if (!r.Has("mtp_hybrid_override_pattern"))
      r.Error("mtp_hybrid_override_pattern", "missing: num_nextn_predict_layers > 0 needs the MTP layer's blocks");
    m->mtp_pattern = r.String("mtp_hybrid_override_pattern", "");
    m->mtp_shared = r.Bool("mtp_use_repeated_layer", true);
  }
  if (m->hybrid_pattern.find('E') != std::string::npos) {
    MoeSpec moe;
    moe.experts = r.Required("n_routed_experts");
    moe.top_k = r.Required("num_experts_per_tok");
    moe.expert_ffn_hidden = r.Required("moe_intermediate_size");
    moe.shared_expert_ffn_hidden = r.Optional("moe_shared_expert_intermediate_size", 0);
    moe.shared_experts = moe.shared_expert_ffn_hidden > 0 ? 1 : 0;
    moe.router = RouterKind::kSigmoid;
    moe.router_bias = true;
    // Latent MoE (Nemotron 3 Super, Ultra): the bridge copies moe_latent_size when present.
    moe.latent_size = r.Optional("moe_latent_size", 0);
    m->moe = moe;
  }
}

void ReadDecoder(const std::string& type, FieldReader& r, ModelSpec* m) {
  const FamilyDefaults d = DefaultsFor(type);
  m->layers = Layers(r, "num_hidden_layers");
  m->hidden = r.Required("hidden_size");
  m->heads = r.Required("num_attention_heads");
  m->vocab = r.Required("vocab_size");
  m->ffn_hidden = r.Required("intermediate_size");
  m->kv_heads = r.Optional("num_key_value_heads", d.kv_heads > 0 ? d.kv_heads : m->heads);
  m->max_seq = r.Optional("max_position_embeddings", d.max_position);
  m->tied_embeddings = r.Bool("tie_word_embeddings", d.tie_embeddings);
  m->mlp = MlpKind::kSwiglu;  // gated MLP (gate, up, down) whatever hidden_act is
  m->norm = NormKind::kRmsNorm;
  m->position = PositionKind::kRope;
  m->attention = AttentionImpl::kFlash;
  m->dropout = false;  // attention_dropout is on the scores only, and 0 in every release

  if (type == "deepseek_v3") {
    // MLA: q/k heads are nope + rope wide; config's head_dim (if any) is the rope part.
    MlaSpec mla;
    mla.q_lora_rank = r.RequiredOrNull("q_lora_rank");
    mla.kv_lora_rank = r.Required("kv_lora_rank");
    mla.qk_nope_head_dim = r.Required("qk_nope_head_dim");
    mla.qk_rope_head_dim = r.Required("qk_rope_head_dim");
    mla.v_head_dim = r.Required("v_head_dim");
    m->head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
    m->mla = mla;
    // Multi-token prediction modules trained beside the decoder (DeepSeek-V3 §2.2: depth 1),
    // outside num_hidden_layers.
    m->mtp_layers = r.Optional("num_nextn_predict_layers", 0);
  } else if (r.Has("head_dim")) {
    m->head_dim = r.Required("head_dim");
  } else if (d.head_dim > 0) {
    m->head_dim = d.head_dim;
  } else if (m->hidden > 0 && m->heads > 0) {
    if (m->hidden % m->heads != 0) {
      r.Error("head_dim", "absent, and hidden_size=" + std::to_string(m->hidden) +
                              " is not divisible by num_attention_heads=" + std::to_string(m->heads));
    } else {
      m->head_dim = m->hidden / m->heads;
    }
  }

  // Biases. llama's attention_bias also biases o_proj; BiasKind has no "qkvo", and qkv is the
  // closer of the two (o_proj adds h values per layer).
  m->bias = BiasKind::kNone;
  if (type == "qwen2") {
    m->bias = BiasKind::kQkv;  // hard-coded bias=True on q/k/v in modeling_qwen2.py
  } else if (type == "gpt_oss") {
    m->bias = BiasKind::kAll;  // attention (attention_bias), experts and router all biased
  } else if (type != "mistral" && type != "mixtral") {
    if (r.Bool("attention_bias", false)) m->bias = BiasKind::kQkv;
    if (type == "llama" && r.Bool("mlp_bias", false)) m->bias = BiasKind::kAll;
  }
  m->qk_norm = type == "qwen3" || type == "qwen3_moe";
  m->attention_sinks = type == "gpt_oss";
  ReadSlidingWindow(type, r, m);
  ReadRopeScaling(r, m);
  // gpt-oss's clamped SwiGLU (modeling_gpt_oss.py GptOssExperts: gate.clamp(max=limit),
  // up.clamp(-limit, limit)).
  if (type == "gpt_oss") m->glu_clamp = r.Number("swiglu_limit", 0.0);

  const int64_t layers = m->layers;
  if (type == "mixtral" || type == "gpt_oss") {
    MoeSpec moe;
    moe.experts = r.Required("num_local_experts");
    if (type == "gpt_oss" && !r.Has("num_experts_per_tok") && r.Has("experts_per_token")) {
      moe.top_k = r.Required("experts_per_token");  // older gpt-oss files spell it this way
    } else {
      moe.top_k = r.Required("num_experts_per_tok");
    }
    moe.expert_ffn_hidden = m->ffn_hidden;
    moe.router = RouterKind::kSoftmax;
    moe.router_bias = type == "gpt_oss";
    m->moe = moe;  // every layer is MoE
  } else if (type == "qwen3_moe") {
    MoeSpec moe;
    moe.experts = r.Required("num_experts");
    moe.top_k = r.Required("num_experts_per_tok");
    moe.expert_ffn_hidden = r.Required("moe_intermediate_size");
    moe.router = RouterKind::kSoftmax;
    const int64_t step = r.Optional("decoder_sparse_step", 1);
    if (step <= 0) r.Error("decoder_sparse_step", "must be > 0, got " + std::to_string(step));
    const std::set<int64_t> dense = r.LayerList("mlp_only_layers", layers);
    if (layers > 0 && step > 0) {
      // modeling_qwen3_moe.py: MoE iff not in mlp_only_layers and (l + 1) % step == 0.
      std::vector<bool> is_moe(layers);
      for (int64_t l = 0; l < layers; ++l) is_moe[l] = dense.count(l) == 0 && (l + 1) % step == 0;
      SetMoeLayers(is_moe, moe, r, dense.empty() ? "decoder_sparse_step" : "mlp_only_layers", m);
    }
  } else if (type == "deepseek_v3") {
    MoeSpec moe;
    moe.experts = r.Required("n_routed_experts");
    moe.top_k = r.Required("num_experts_per_tok");
    moe.expert_ffn_hidden = r.Required("moe_intermediate_size");
    moe.shared_experts = r.RequiredOrNull("n_shared_experts");
    // One shared-expert MLP of width n_shared * moe_intermediate_size == n_shared experts.
    moe.shared_expert_ffn_hidden = moe.shared_experts > 0 ? moe.expert_ffn_hidden : 0;
    const std::string scoring = r.String("scoring_func", "sigmoid");
    if (scoring == "sigmoid") {
      moe.router = RouterKind::kSigmoid;
    } else if (scoring == "softmax") {
      moe.router = RouterKind::kSoftmax;
    } else {
      r.Error("scoring_func", "'" + scoring + "' is not supported (sigmoid|softmax)");
    }
    // noaux_tc keeps e_score_correction_bias, one value per routed expert.
    moe.router_bias = r.String("topk_method", "noaux_tc") == "noaux_tc";
    const int64_t first_k = r.Optional("first_k_dense_replace", 3);
    const int64_t freq = r.Optional("moe_layer_freq", 1);
    if (freq <= 0) r.Error("moe_layer_freq", "must be > 0, got " + std::to_string(freq));
    if (layers > 0 && freq > 0) {
      // modeling_deepseek.py: MoE iff l >= first_k_dense_replace and l % moe_layer_freq == 0.
      std::vector<bool> is_moe(layers);
      for (int64_t l = 0; l < layers; ++l) is_moe[l] = l >= first_k && l % freq == 0;
      SetMoeLayers(is_moe, moe, r, "moe_layer_freq", m);
    }
  }
}

}  // namespace

Result<ModelSpec> ModelFromHfConfig(const std::string& json_text, const std::string& name, const std::string& source) {
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("config: invalid JSON: ") + e.what());
  }
  if (!j.is_object()) {
    return Status::InvalidArgument(std::string("config: expected a JSON object, got ") + j.type_name());
  }
  auto it = j.find("model_type");
  if (it == j.end() || it->is_null()) {
    return Status::InvalidArgument(std::string("config.model_type: missing (supported: ") + kSupported + ")");
  }
  if (!it->is_string()) {
    return Status::InvalidArgument("config.model_type: expected a string, got " + Brief(*it));
  }
  const std::string type = it->get<std::string>();
  const std::string supported = std::string("|") + kSupported + "|";
  if (type.empty() || type.find('|') != std::string::npos || supported.find("|" + type + "|") == std::string::npos) {
    return Status::InvalidArgument("config.model_type: '" + type + "' is not supported (supported: " + kSupported +
                                   ")");
  }

  ModelSpec m;
  m.name = name;
  m.source = source;
  Diagnostics diag;
  FieldReader r(j, &diag);
  try {
    if (type == "gpt2") {
      ReadGpt2(r, &m);
    } else if (type == "nemotron_h") {
      ReadNemotronH(r, &m);
    } else {
      // Kimi K2's config is DeepSeek-V3's (architectures DeepseekV3ForCausalLM; Megatron-Bridge's
      // KimiK2Bridge reuses the DeepSeek MLA/MoE mapping, docs/models/kimi/kimi-k2.md).
      ReadDecoder(type == "kimi_k2" ? "deepseek_v3" : type, r, &m);
    }
  } catch (const Json::exception& e) {  // FieldReader checks types first; this is a backstop
    return Status::InvalidArgument(std::string("config: ") + e.what());
  }
  if (diag.has_errors()) return diag.ToStatus();
  return m;
}

}  // namespace meshplan::core
