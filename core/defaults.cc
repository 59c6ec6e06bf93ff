#include "core/defaults.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace meshplan::core {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// `value` scaled by new_hidden / old_hidden; a fraction rounds up to a multiple of 256.
int64_t FollowHidden(int64_t value, int64_t old_hidden, int64_t new_hidden) {
  if (value <= 0 || old_hidden <= 0 || new_hidden <= 0) return value;
  int64_t num = 0;
  if (__builtin_mul_overflow(value, new_hidden, &num)) {
    // Sizes this large are rejected by validation; keep the arithmetic defined on the way there.
    const double scaled =
        static_cast<double>(value) / static_cast<double>(old_hidden) * static_cast<double>(new_hidden);
    return scaled >= 9e18 ? INT64_MAX : static_cast<int64_t>(std::ceil(scaled / 256) * 256);
  }
  if (num % old_hidden == 0) return num / old_hidden;
  const int64_t up = num / old_hidden + 1;
  return (up + 255) / 256 * 256;
}

std::string RatioText(int64_t value, int64_t hidden) {
  if (hidden > 0 && value % hidden == 0) return S(value / hidden) + " x hidden";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g x hidden", static_cast<double>(value) / static_cast<double>(hidden));
  return buf;
}

}  // namespace

ModelSpec ApplyModelOverrides(const ModelSpec& base, const ModelOverrides& o, Diagnostics* d,
                              std::vector<std::string>* notes) {
  Diagnostics unused_d;
  std::vector<std::string> unused_notes;
  if (d == nullptr) d = &unused_d;
  if (notes == nullptr) notes = &unused_notes;
  ModelSpec m = base;
  if (o.layers) m.layers = *o.layers;
  if (o.vocab) m.vocab = *o.vocab;
  if (o.hidden) m.hidden = *o.hidden;
  if (o.heads) m.heads = *o.heads;

  // The MLP widths keep the preset's ratio to hidden.
  if (o.hidden && *o.hidden != base.hidden) {
    auto follow = [&](int64_t* field, int64_t preset, const char* name, const char* flag) {
      const int64_t v = FollowHidden(preset, base.hidden, m.hidden);
      if (v == *field) return;
      *field = v;
      notes->push_back(std::string(name) + " " + S(v) + " (" + RatioText(preset, base.hidden) + " " + S(m.hidden) +
                       ", the preset's ratio " + S(preset) + "/" + S(base.hidden) + "; " + flag + " to change)");
    };
    if (!o.ffn_hidden) follow(&m.ffn_hidden, base.ffn_hidden, "ffn_hidden", "--ffn");
    if (m.moe && base.moe) {
      follow(&m.moe->expert_ffn_hidden, base.moe->expert_ffn_hidden, "moe.expert_ffn_hidden", "a model file");
      if (base.moe->shared_experts > 0)
        follow(&m.moe->shared_expert_ffn_hidden, base.moe->shared_expert_ffn_hidden, "moe.shared_expert_ffn_hidden",
               "a model file");
    }
  }
  if (o.ffn_hidden) m.ffn_hidden = *o.ffn_hidden;

  // kv heads follow the head count.
  if (o.kv_heads) {
    m.kv_heads = *o.kv_heads;
  } else if (o.heads && *o.heads != base.heads && base.heads > 0 && base.kv_heads > 0) {
    const int64_t heads = m.heads;
    std::string why;
    if (base.kv_heads == base.heads) {
      m.kv_heads = heads;
      why = "= heads: the preset is multi-head attention";
    } else if (base.kv_heads == 1) {
      m.kv_heads = 1;
      why = "the preset is multi-query attention";
    } else if (base.heads % base.kv_heads == 0 && heads % (base.heads / base.kv_heads) == 0) {
      const int64_t group = base.heads / base.kv_heads;
      m.kv_heads = heads / group;
      why = "heads/" + S(group) + ": the preset's " + S(group) + " query heads per kv head";
    } else if (heads % base.kv_heads == 0) {
      why = "the preset's kv head count, which divides heads " + S(heads);
    } else {
      d->Error("model.kv_heads", "the preset's " + S(base.kv_heads) + " kv heads (groups of " +
                                     S(base.heads / std::max<int64_t>(base.kv_heads, 1)) +
                                     ") fit no grouping of heads=" + S(heads) + "; give --kv-heads");
    }
    if (!why.empty()) notes->push_back("kv_heads " + S(m.kv_heads) + " (" + why + "; --kv-heads to change)");
  }

  // Sliding-window layers: turning the window off leaves no windowed layers to interleave.
  if (o.sliding_window) {
    m.sliding_window = *o.sliding_window;
    if (*o.sliding_window == 0) m.global_attention_every = 0;
  }
  if (o.global_attention_every) m.global_attention_every = *o.global_attention_every;

  // head_dim = hidden / heads where the preset derives it so.
  if (o.head_dim) {
    m.head_dim = *o.head_dim;
  } else if ((o.hidden || o.heads) && base.heads > 0 && base.head_dim * base.heads == base.hidden &&
             (m.hidden != base.hidden || m.heads != base.heads)) {
    if (m.heads > 0 && m.hidden % m.heads == 0) {
      m.head_dim = m.hidden / m.heads;
      if (m.head_dim != base.head_dim)
        notes->push_back("head_dim " + S(m.head_dim) + " (hidden/heads = " + S(m.hidden) + "/" + S(m.heads) +
                         "; --head-dim to change)");
    } else {
      d->Error("model.head_dim", "hidden=" + S(m.hidden) + " is not a multiple of heads=" + S(m.heads) +
                                     ", so head_dim cannot follow hidden/heads; give --head-dim");
    }
  }
  return m;
}

std::optional<std::vector<int64_t>> DefaultStageSplit(int64_t layers, int64_t chunks) {
  // One or two chunks more than layers: the last chunk holds the output layer and loss alone and
  // the first the embedding alone, as Megatron-Core splits layers + 2 when the embedding and the
  // loss count as layers (--account-for-embedding-in-pipeline-split,
  // --account-for-loss-in-pipeline-split, which Megatron-Bridge's Llama 3.1 405B recipe sets) and
  // as Llama 3 trained (Dubey et al. 2024 §3.3.2); no other chunk may be empty.
  if (chunks < 1 || layers < 1 || layers < chunks - 2) return std::nullopt;
  if (layers % chunks == 0) return std::vector<int64_t>{};
  const int64_t k = (layers + chunks - 1) / chunks;  // the common chunk size
  const int64_t short_chunks = chunks * k - layers;  // chunks holding k-1 layers; < chunks
  std::vector<int64_t> split(static_cast<size_t>(chunks), k);
  // Last, first, second to last, second, ...: the end chunks run the head and the embedding.
  for (int64_t i = 0; i < short_chunks; ++i) {
    const int64_t c = i % 2 == 0 ? chunks - 1 - i / 2 : i / 2;
    split[static_cast<size_t>(c)] -= 1;
  }
  return split;
}

std::optional<std::vector<int64_t>> DefaultStageSplit(const ModelSpec& m, int64_t chunks) {
  if (m.mtp_layers <= 0 || chunks < 1 || m.layers % chunks == 0) return DefaultStageSplit(m.layers, chunks);
  // MTP modules run on the last chunk (core/memory.h StageCompositionOf): split the layers and
  // the modules together; the last chunk gives the modules' places back.
  const int64_t units = m.layers + m.mtp_layers;
  auto split = DefaultStageSplit(units, chunks);
  if (split && split->empty()) split = std::vector<int64_t>(static_cast<size_t>(chunks), units / chunks);
  if (!split || split->back() <= m.mtp_layers) return DefaultStageSplit(m.layers, chunks);
  split->back() -= m.mtp_layers;
  return split;
}

void ApplyDefaultStageSplit(const ModelSpec& m, PlanSpec* p, std::vector<std::string>* notes) {
  if (!p->stage_layers.empty() || p->pp < 1 || p->vpp < 1 || m.layers < 1) return;
  const int64_t chunks = p->pp * p->vpp;
  if (m.layers % chunks == 0) return;
  auto split = DefaultStageSplit(m, chunks);
  if (!split) return;
  p->stage_layers = *split;
  if (notes == nullptr) return;
  notes->push_back("stage_layers " + StageSplitText(*split) + " (" + S(m.layers) + " layers" +
                   (m.mtp_layers > 0 ? " and " + S(m.mtp_layers) + " MTP module(s) on the last chunk" : std::string()) +
                   " over pp*vpp=" + S(chunks) +
                   " chunks: the remainder taken from the first and last chunks, which also hold the "
                   "embedding and the output head; --stage-layers to change)");
}

void ApplyDefaultSequenceParallel(PlanSpec* p, std::vector<std::string>* notes) {
  if (p->tp <= 1 || p->sequence_parallel) return;
  if (p->cp > 0 && p->seq_len > 0 && (p->seq_len / p->cp) % p->tp == 0) {
    p->sequence_parallel = true;
    notes->push_back("sequence parallel on (with tp " + S(p->tp) +
                     ", as Megatron-Core recipes and torchtitan run TP; --no-sp to turn off)");
  } else {
    notes->push_back("sequence parallel off (seq/cp does not divide by tp " + S(p->tp) + ")");
  }
}

void ApplyDefaultPrecision(const GpuSpec& g, PlanSpec* p, std::vector<std::string>* notes) {
  if (p->precision != Dtype::kBf16 || g.peak_flops_per_s.count(Dtype::kBf16) || !g.peak_flops_per_s.count(Dtype::kFp16))
    return;
  p->precision = Dtype::kFp16;
  notes->push_back("precision fp16 (" + g.name + " has no bf16; --precision to change)");
}

std::string StageSplitText(const std::vector<int64_t>& split) {
  std::string out;
  for (size_t i = 0; i < split.size();) {
    size_t j = i;
    while (j < split.size() && split[j] == split[i]) ++j;
    if (!out.empty()) out += ", ";
    out += S(split[i]);
    if (j - i > 1) out += " (x" + S(static_cast<int64_t>(j - i)) + ")";
    i = j;
  }
  return out;
}

}  // namespace meshplan::core
