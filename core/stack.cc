#include "core/stack.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "core/params.h"
#include "core/presets.h"
#include "core/spec_json.h"

namespace meshplan::core {
namespace {

using Json = nlohmann::json;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Reads a stack file's keys, collecting every problem, one line each ("PREFIX.key: rule"), as the
// spec parsers do (core/spec_json.h): a user sees them all at once. Every key it is asked for
// counts as known; Finish() refuses the others, so a misspelt key cannot leave a default in place.
class StackReader {
 public:
  StackReader(const Json& j, std::string prefix) : j_(j), prefix_(std::move(prefix)) {}
  // The key's value, nullptr when absent.
  const Json* Find(const char* key) {
    known_.push_back(key);
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  void Error(const std::string& key, const std::string& rule) {
    text_ += (text_.empty() ? "" : "\n") + prefix_ + "." + key + ": " + rule;
  }
  template <typename E>
  void Enum(const char* key, E* out) {
    if (const Json* v = Find(key); v && (!v->is_string() || !FromName(v->get<std::string>(), out)))
      Error(key, "must be one of " + Choices<E>());
  }
  void Bool(const char* key, bool* out) {
    const Json* v = Find(key);
    if (!v) return;
    if (!v->is_boolean()) Error(key, "must be true or false");
    else *out = v->get<bool>();
  }
  // An integer from lo to hi (`rule` the error's text).
  template <typename T>
  void Int(const char* key, int64_t lo, int64_t hi, const std::string& rule, T* out) {
    const Json* v = Find(key);
    if (!v) return;
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi) Error(key, rule);
    else *out = static_cast<T>(v->get<int64_t>());
  }
  // The problems so far and every key no Find asked for; Ok() when there is none.
  Status Finish() {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
      const std::string best = NearestKnownKey(it.key(), known_);
      Error(it.key(), "is not a known field" + (best.empty() ? "" : " (did you mean \"" + best + "\"?)"));
    }
    return text_.empty() ? Status::Ok() : Status::InvalidArgument(text_);
  }

 private:
  const Json& j_;
  std::string prefix_, text_;
  std::vector<std::string> known_;
};

}  // namespace

const char* Name(FlopCount v) {
  switch (v) {
    case FlopCount::kNarayananEq3: return "narayanan-eq3";
    case FlopCount::kMegatron: return "megatron";
    case FlopCount::kPalm: return "palm";
    case FlopCount::kMegatron2025: return "megatron-2025";
  }
  return "?";
}

Result<SoftwareStack> ParseStackJson(const std::string& text, const std::string& prefix) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(prefix + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(prefix + ": not a JSON object");
  StackReader r(j, prefix);
  SoftwareStack s;
  for (auto [key, field] : {std::pair{"name", &s.name}, {"source", &s.source}, {"notes", &s.notes}}) {
    const Json* v = r.Find(key);
    if (!v || !v->is_string() || v->get<std::string>().empty()) r.Error(key, "must be a non-empty string");
    else *field = v->get<std::string>();
  }
  if (const Json* v = r.Find("applies_to")) {
    if (!v->is_array()) r.Error("applies_to", "must be an array of id prefixes");
    else
      for (const Json& e : *v) {
        if (!e.is_string() || e.get<std::string>().empty()) {
          r.Error("applies_to", "every entry must be a non-empty string");
          break;
        }
        s.applies_to.push_back(e.get<std::string>());
      }
  }
  if (const Json* v = r.Find("recognized_by")) {
    if (!v->is_array()) r.Error("recognized_by", "must be an array of {source, row} objects");
    else
      for (const Json& e : *v) {
        if (!e.is_object()) {
          r.Error("recognized_by", "every entry must be an object");
          continue;
        }
        SourceMatch m;
        bool entry_ok = true;
        for (const auto& [key, terms] : e.items()) {
          std::vector<std::string>* out = key == "source"   ? &m.source
                                          : key == "row"    ? &m.row
                                          : key == "unless" ? &m.unless
                                                            : nullptr;
          const std::string where = "recognized_by." + key;
          std::string problem;
          if (out == nullptr) problem = "unknown key (source, row, unless)";
          else if (!terms.is_array() || terms.empty()) problem = "must be a non-empty array of strings";
          else
            for (const Json& t : terms) {
              if (!t.is_string() || t.get<std::string>().empty()) {
                problem = "every entry must be a non-empty string";
                break;
              }
              out->push_back(Lower(t.get<std::string>()));
            }
          if (!problem.empty()) {
            r.Error(where, problem);
            entry_ok = false;
          }
        }
        if (!entry_ok) continue;
        if (m.Terms() == 0) r.Error("recognized_by", "an entry must list source or row strings");
        else s.recognized_by.push_back(std::move(m));
      }
  }
  if (const Json* v = r.Find("flop_count")) {
    const std::string name = v->is_string() ? v->get<std::string>() : "";
    if (name == "narayanan-eq3") s.flop_count = FlopCount::kNarayananEq3;
    else if (name == "megatron") s.flop_count = FlopCount::kMegatron;
    else if (name == "palm") s.flop_count = FlopCount::kPalm;
    else if (name == "megatron-2025") s.flop_count = FlopCount::kMegatron2025;
    else r.Error("flop_count", "must be one of narayanan-eq3|megatron|palm|megatron-2025");
  }
  r.Enum("precision", &s.precision);
  r.Enum("attention", &s.attention);
  r.Enum("recompute", &s.recompute);
  r.Enum("tp_overlap", &s.tp_overlap);
  r.Enum("zero3_gather", &s.zero3_gather);
  r.Enum("grads_dtype", &s.grads);
  r.Enum("cross_entropy", &s.cross_entropy);
  r.Enum("elementwise", &s.elementwise);
  r.Enum("moe_host", &s.moe_host);
  r.Enum("cp_kind", &s.cp_kind);
  r.Enum("moe_probs", &s.moe_probs);
  r.Enum("expert_bias", &s.expert_bias);
  r.Enum("moe_dispatcher", &s.moe_dispatcher);
  r.Enum("moe_routing", &s.moe_routing);
  for (auto [key, out] : {std::pair{"sequence_parallel", &s.sequence_parallel},
                          {"grad_accum_fusion", &s.grad_accum_fusion},
                          {"grad_prescale", &s.grad_prescale},
                          {"overlap_grad_reduce", &s.overlap_grad_reduce},
                          {"overlap_param_gather", &s.overlap_param_gather},
                          {"zero3_unsharded_under_pp", &s.zero3_unsharded_under_pp},
                          {"microbatches_equal_pp", &s.microbatches_equal_pp},
                          {"repeat_kv", &s.repeat_kv},
                          {"dtensor_tp", &s.dtensor_tp},
                          {"torch_cp", &s.torch_cp},
                          {"keep_pp_outputs", &s.keep_pp_outputs},
                          {"transformer_engine", &s.transformer_engine},
                          {"fp8_param_gather", &s.fp8_param_gather},
                          {"recompute_early_stop", &s.recompute_early_stop}})
    r.Bool(key, out);
  if (s.precision == Dtype::kNone || s.precision == Dtype::kInt8 || s.precision == Dtype::kFp32 ||
      s.precision == Dtype::kNvfp4)
    r.Error("precision", "must be a 16- or 8-bit training dtype (bf16|fp16|fp8)");
  if (s.grads != Dtype::kFp32 && s.grads != Dtype::kBf16 && s.grads != Dtype::kFp16)
    r.Error("grads_dtype", "must be fp32, bf16 or fp16");
  if (const Json* v = r.Find("compiled_cross_entropy")) {
    CrossEntropy ce{};
    if (v->is_string() && FromName(v->get<std::string>(), &ce)) s.compiled_cross_entropy = ce;
    else r.Error("compiled_cross_entropy", "must be one of " + Choices<CrossEntropy>());
  }
  r.Int("interleaved_stages_per_rank", 2, 64, "must be an integer from 2 to 64", &s.interleaved_stages_per_rank);
  if (const Json* v = r.Find("dropout")) {
    if (v->is_boolean()) s.dropout = v->get<bool>();
    else r.Error("dropout", "must be true or false");
  }
  r.Int("vocab_divisible_by", 1, 65536,
        "must be an integer from 1 to 65536 (Megatron-LM's --make-vocab-size-divisible-by, default 128)",
        &s.vocab_divisible_by);
  r.Int("cuda_context_bytes", 1, int64_t{64} << 30, "must be a byte count from 1 to 64 GiB", &s.cuda_context_bytes);
  // cuda_context_bytes' citation, for a reader: a string meshplan keeps no further.
  if (const Json* v = r.Find("cuda_context_source"); v && !v->is_string())
    r.Error("cuda_context_source", "must be a string (the citation of cuda_context_bytes)");
  r.Int("zero", 0, 3, "must be 0, 1, 2 or 3", &s.zero);
  if (Status st = r.Finish(); !st.ok()) return st;
  return s;
}

Result<SoftwareStack> LoadStack(const std::string& name) {
  if (LooksLikePath(name)) {
    auto text = ReadTextFile(name);
    if (!text.ok()) return text.status();
    // As a model, GPU or cluster file's errors read: the file, then one "stack.key: rule" line each.
    auto s = ParseStackJson(*text, "stack");
    if (!s.ok()) return Status::InvalidArgument(name + ":\n" + s.status().message());
    return s;
  }
  auto text = PresetText("stacks", name);
  if (!text.ok()) return text.status();
  auto s = ParseStackJson(*text, "stacks/" + name);
  if (!s.ok()) return Status::Internal("built-in preset stacks/" + name + " is invalid: " + s.status().message());
  return s;
}

namespace {
// The built-in stacks, parsed once (they are compiled in and never change).
const std::vector<SoftwareStack>& BuiltInStacks() {
  static const std::vector<SoftwareStack> kStacks = [] {
    std::vector<SoftwareStack> stacks;
    for (const auto& name : PresetNames("stacks"))
      if (auto s = LoadStack(name); s.ok()) stacks.push_back(*s);
    return stacks;
  }();
  return kStacks;
}
}  // namespace

std::optional<SoftwareStack> StackForRecord(const std::string& record_id) {
  const SoftwareStack* best = nullptr;
  size_t best_length = 0;
  for (const auto& s : BuiltInStacks())
    for (const auto& prefix : s.applies_to)
      if (prefix.size() > best_length && record_id.rfind(prefix, 0) == 0) {
        best = &s;
        best_length = prefix.size();
      }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::optional<SoftwareStack> StackForSource(const std::string& source_text, const std::string& row_text) {
  const std::string text = Lower(source_text), row = Lower(row_text);
  auto all_in = [](const std::vector<std::string>& terms, const std::string& in) {
    return std::all_of(terms.begin(), terms.end(),
                       [&](const std::string& t) { return in.find(t) != std::string::npos; });
  };
  const SoftwareStack* best = nullptr;
  size_t best_terms = 0;
  for (const auto& s : BuiltInStacks())
    for (const auto& m : s.recognized_by)
      if (m.Terms() > best_terms && all_in(m.source, text) && all_in(m.row, row) &&
          std::none_of(m.unless.begin(), m.unless.end(),
                       [&](const std::string& t) { return text.find(t) != std::string::npos; })) {
        best = &s;
        best_terms = m.Terms();
      }
  if (best == nullptr) return std::nullopt;
  return *best;
}

void ApplyStack(const SoftwareStack& s, ModelSpec* m, PlanSpec* p) {
  m->attention = s.attention;
  p->precision = s.precision;
  p->recompute = s.recompute;
  p->tp_overlap = s.tp_overlap;
  p->grad_accum_fusion = s.grad_accum_fusion;
  p->grad_prescale = s.grad_prescale;
  p->overlap_grad_reduce = s.overlap_grad_reduce;
  p->overlap_param_gather = s.overlap_param_gather;
  p->zero = s.zero;
  p->zero3_gather = s.zero3_gather;
  p->dtypes.grads = s.grads;
  p->cross_entropy = s.cross_entropy;
  p->moe_host = s.moe_host;
  p->moe_probs = s.moe_probs;
  p->expert_bias = s.expert_bias;
  p->moe_dispatcher = s.moe_dispatcher;
  p->moe_routing = s.moe_routing;
  p->elementwise = s.elementwise;
  p->repeat_kv = s.repeat_kv;
  p->dtensor_tp = s.dtensor_tp;
  p->torch_cp = s.torch_cp;
  p->keep_pp_outputs = s.keep_pp_outputs;
  p->cp_kind = s.cp_kind;
  p->sequence_parallel = s.sequence_parallel && p->tp > 1;
  if (s.cuda_context_bytes > 0) p->cuda_context_bytes = s.cuda_context_bytes;
  p->transformer_engine = s.transformer_engine;
  if (s.dropout) m->dropout = *s.dropout;
  if (s.vocab_divisible_by > 0) p->vocab_divisible_by = s.vocab_divisible_by;
}

void ApplyStackWhole(const SoftwareStack& s, ModelSpec* m, PlanSpec* p) {
  ApplyStack(s, m, p);
  (void)ApplyStackPipelineSharding(s, p);
  (void)ApplyStackRecomputeEarlyStop(s, *m, p);
  (void)ApplyStackFp8ParamGather(s, p);
}

std::string ApplyStackFp8ParamGather(const SoftwareStack& s, PlanSpec* p) {
  if (!s.fp8_param_gather || p->fp8_param_gather || !p->Fp8ParamGatherApplies()) return "";
  p->fp8_param_gather = true;
  return "stack " + s.name +
         ": the distributed optimizer all-gathers the parameters in FP8, 1 byte each (fp8_param_gather; "
         "--no-fp8-param-gather to gather them in " +
         std::string(Name(p->dtypes.weights)) + ")";
}

std::string ApplyStackPipelineSharding(const SoftwareStack& s, PlanSpec* p) {
  if (!s.zero3_unsharded_under_pp || p->zero != 3 || p->pp <= 1) return "";
  p->zero = 1;
  p->overlap_grad_reduce = false;
  return "stack " + s.name + ": ZeRO-3 under pipeline parallelism keeps each stage's parameters gathered and its " +
         Name(p->dtypes.grads) +
         " gradients unsharded over the step, reduce-scattered after the last backward (ZeRO-1's memory and "
         "traffic)";
}

std::string ApplyStackRecomputeEarlyStop(const SoftwareStack& s, const ModelSpec& m, PlanSpec* p) {
  if (!s.recompute_early_stop || p->recompute_early_stop) return "";
  const std::string said = ApplyRecomputeEarlyStop(m, p);
  if (said.empty()) return "";
  return "stack " + s.name + ": " + said +
         (p->recompute_early_stop ? " (--no-recompute-early-stop replays the whole block)" : "");
}

std::string StackSummary(const SoftwareStack& s) {
  return "stack " + s.name + ": " + Name(s.precision) + ", " + Name(s.attention) + " attention, recompute " +
         Name(s.recompute) + ", sequence parallel " + (s.sequence_parallel ? "with tp" : "off") + ", tp overlap " +
         Name(s.tp_overlap) + ", gradient-accumulation fusion " + (s.grad_accum_fusion ? "on" : "off") +
         ", DP overlap " + (s.overlap_grad_reduce ? "on" : "off") +
         (s.zero == 1 || s.zero == 2
              ? std::string(", param gather ") + (s.overlap_param_gather ? "overlapped" : "after the step")
              : std::string()) +
         ", " + Name(s.grads) + " gradients" + (s.grad_prescale ? "" : " averaged in the collective") + ", zero " +
         std::to_string(s.zero) +
         (s.cross_entropy == CrossEntropy::kFused ? std::string()
                                                  : std::string(", cross entropy ") + Name(s.cross_entropy)) +
         (s.zero3_gather == Zero3Gather::kFlat ? std::string()
                                               : std::string(", zero-3 gathers ") + Name(s.zero3_gather)) +
         (s.cp_kind == CpKind::kRing ? std::string() : std::string(", CP ") + Name(s.cp_kind)) +
         (s.repeat_kv ? ", K and V repeated to every query head" : "") +
         (s.dtensor_tp ? ", DTensor TP (sequence-dim collectives with their copies; float8 gathers under FP8)" : "") +
         (s.torch_cp ? ", PyTorch's context_parallel (eager ring merges in fp32, fp32 dK/dV ring)" : "") +
         (s.keep_pp_outputs ? ", pipeline outputs and gradient buffers kept per microbatch" : "") +
         (s.transformer_engine ? ", Transformer Engine" : "") +
         (s.fp8_param_gather ? ", FP8 parameter gather under FP8" : "") +
         (s.dropout ? std::string(*s.dropout ? ", dropout" : ", no dropout") : std::string()) +
         (s.recompute_early_stop ? ", full recomputation with the checkpoint early stop" : "") +
         (s.vocab_divisible_by > 1
              ? ", vocabulary padded to a multiple of " + std::to_string(s.vocab_divisible_by) + " x tp"
              : std::string()) +
         (s.moe_host == MoeHost::kNone ? ", no MoE host floor (its MoE host time not measured)" : "") +
         (s.moe_probs == MoeProbs::kFused ? std::string()
                                          : std::string(", MoE probabilities at the ") + Name(s.moe_probs)) +
         (s.expert_bias == ExpertBias::kFused ? std::string()
                                              : std::string(", expert bias added ") + Name(s.expert_bias)) +
         (s.moe_dispatcher == MoeDispatcher::kAllToAll ? std::string()
                                                       : std::string(", MoE dispatcher ") + Name(s.moe_dispatcher)) +
         (s.moe_routing == MoeRouting::kUniform ? std::string()
                                                : std::string(", ") + Name(s.moe_routing) + " expert routing") +
         (s.cuda_context_bytes > 0 ? ", CUDA context " + std::to_string(s.cuda_context_bytes >> 20) + " MiB" : "") +
         " (" + s.source + ")";
}

namespace {
// The MLP width a token meets in one layer, as Megatron-LM's counts take it: the dense MLP's, or an
// MoE layer's routed experts a token visits plus its shared experts.
double MlpWidth(const ModelSpec& m, bool moe) {
  return static_cast<double>(moe ? m.moe->expert_ffn_hidden * m.moe->top_k +
                                       m.moe->shared_experts * m.moe->shared_expert_ffn_hidden
                                 : m.ffn_hidden);
}

// Megatron-LM's num_floating_point_operations (megatron/training/training.py transformer_flops at
// 9c5258f109, the dev branch of 2026-08-11; the same terms since 8873b55d6a, 2025-03-06) per token
// of a sequence of s, for a model that is not hybrid: 3 (forward and two backward GEMMs) x 2 (an FMA)
// x, summed over the layers, the MLP's h f e (e = 3 gated, 2 not; an MoE layer's f the routed
// experts' k f_e plus the shared experts'), the attention's projections (GQA: h (q + 2 kv) + q h with
// q = heads x head_dim, kv = groups x head_dim; MLA: q_lora (h + a (d_nope + d_rope) + 1) + kv_lora
// (h + a (d_nope + d_v) + 1) + h d_rope + a d_v h, q as a full projection h a (d_nope + d_rope)
// where q_lora is 0) and the causal core, half the s^2 scores: s q (GQA) or s a (d_nope + d_rope +
// d_v) / 2 (MLA); each MTP module one more layer (MoE when the last layer is) plus its two norms
// and projection 3h + 2h^2 and its logits; the logits h V.
double Megatron2025FlopsPerToken(const ModelSpec& m, int64_t seq) {
  const double h = static_cast<double>(m.hidden), s = static_cast<double>(seq), v = static_cast<double>(m.vocab);
  const double a = static_cast<double>(m.heads);
  const double e = m.mlp == MlpKind::kSwiglu ? 3 : 2;
  const int64_t mtp = m.mtp_layers;
  double attn_linear = 0, attn_core = 0;
  if (m.mla) {
    const MlaSpec& l = *m.mla;
    const double nope = static_cast<double>(l.qk_nope_head_dim), rope = static_cast<double>(l.qk_rope_head_dim);
    const double dv = static_cast<double>(l.v_head_dim), q_lora = static_cast<double>(l.q_lora_rank);
    const double kv_lora = static_cast<double>(l.kv_lora_rank);
    const double q_term = l.q_lora_rank > 0 ? q_lora * (h + a * (nope + rope) + 1) : h * a * (nope + rope);
    attn_linear = q_term + kv_lora * (h + a * (nope + dv) + 1) + h * rope + a * dv * h;
    attn_core = s * (a * (nope + rope) / 2 + a * dv / 2);
  } else {
    const double q = static_cast<double>(m.heads * m.head_dim), kv = static_cast<double>(m.kv_heads * m.head_dim);
    attn_linear = h * (q + 2 * kv) + q * h;
    attn_core = s * q;  // (q/2 of the causal scores) x 2 products (QK^T and its product with V)
  }
  double mlp = static_cast<double>(mtp) * (mtp > 0 ? MlpWidth(m, m.MtpLayerIsMoe()) : 0.0);
  for (int64_t i = 0; i < m.layers; ++i) mlp += MlpWidth(m, m.IsMoeLayer(i));
  const double layers = static_cast<double>(m.layers + mtp);
  return 6 * (h * e * mlp + layers * (attn_linear + attn_core) + static_cast<double>(mtp) * (3 * h + 2 * h * h) +
              h * v * static_cast<double>(1 + mtp));
}
}  // namespace

double SourceFlopsPerToken(FlopCount count, const ModelSpec& m, int64_t seq) {
  const double l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden);
  const double s = static_cast<double>(seq), v = static_cast<double>(m.vocab);
  if (count == FlopCount::kNarayananEq3) return 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  if (count == FlopCount::kPalm)
    return 6 * static_cast<double>(CountParams(m).total) + 12 * l * static_cast<double>(m.heads * m.head_dim) * s;
  if (m.Hybrid()) {
    // Megatron-LM's hybrid_flops (megatron/training/training.py at d98e8a64; Megatron-Bridge's
    // flop_utils.py the same), per token: an attention layer 4 h p (h + h g/a) + 2 s h p (p =
    // kv_channels x heads / h, g the query groups; causal: the s^2 sum halved), an MLP layer
    // 4 f h (x 1.5 gated), an MoE layer 4 h (f_e k + f_s) (x 1.5 gated), a Mamba layer with its
    // inner width taken as 2h whatever its heads: 2 h (4h + 2 G N + H) + 7 (2h) N + 2 (2h) h, and
    // the logits 2 h V; x 3 for the backward. Megatron-Bridge's Nemotron 3 Nano rows print this
    // count (GB200, 26.06.01: 34,816 tokens/s per GPU and 776 TFLOP/s). The layer counts include
    // the MTP modules' blocks once per depth (hybrid_layer_allocation.py get_hybrid_layer_counts,
    // the pattern after '/') and each depth adds its logits; a latent MoE's routed experts run at
    // the latent width, plus its two projections 4 h l (moe_layer_flops).
    const HybridCounts c = m.HybridCostedCounts();
    const double p = static_cast<double>(m.heads * m.head_dim) / h;
    const double g = static_cast<double>(m.kv_heads), a = static_cast<double>(m.heads);
    const double scale = m.mlp == MlpKind::kSwiglu ? 1.5 : 1.0;
    const double attn = 4 * h * p * (h + h * g / a) + 2 * s * h * p;
    const double mlp = 4 * static_cast<double>(m.ffn_hidden) * h * scale;
    double moe = 0, mamba = 0;
    if (m.moe) {
      const double w = static_cast<double>(m.moe->Width(m.hidden));
      moe = 4 *
                (w * static_cast<double>(m.moe->expert_ffn_hidden * m.moe->top_k) +
                 h * static_cast<double>(m.moe->shared_experts * m.moe->shared_expert_ffn_hidden)) *
                scale +
            4 * h * static_cast<double>(m.moe->latent_size);
    }
    if (m.mamba) {
      const double d_in = 2 * h, n = static_cast<double>(m.mamba->state);
      mamba = 2 * h * (2 * d_in + 2 * static_cast<double>(m.mamba->groups) * n + static_cast<double>(m.mamba->heads)) +
              7 * d_in * n + 2 * d_in * h;
    }
    return 3 * (static_cast<double>(c.attention) * attn + static_cast<double>(c.mlp) * mlp +
                static_cast<double>(c.moe) * moe + static_cast<double>(c.mamba) * mamba +
                2 * h * v * static_cast<double>(1 + m.mtp_layers));
  }
  if (count == FlopCount::kMegatron2025) return Megatron2025FlopsPerToken(m, seq);
  // Megatron-LM num_floating_point_operations, per token: 12 h^2 per layer times the attention,
  // MLP and logit terms; MoE layers count top_k routed experts plus the shared ones at their own
  // widths (the later form of the same function, with moe_layer_freq and shared experts).
  const double a = static_cast<double>(m.heads), g = static_cast<double>(m.kv_heads);
  const double q_ratio = static_cast<double>(m.heads * m.head_dim) / h;
  const double gated = m.mlp == MlpKind::kSwiglu ? 1.5 : 1.0;
  const double attention = (1 + g / a + s / h) * q_ratio;
  double mlp_sum = 0;  // sum over layers of (f/h) x experts routed to x gated
  for (int64_t i = 0; i < m.layers; ++i) mlp_sum += MlpWidth(m, m.IsMoeLayer(i)) / h * gated;
  return 12 * h * h * (l * attention + mlp_sum + v / (2 * h));
}

}  // namespace meshplan::core
