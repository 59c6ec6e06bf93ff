// The defaults a user means when they leave something out: model dimensions that follow an
// overridden one, the pipeline layer split when the layers do not divide evenly, and sequence
// parallelism with tensor parallelism. One place, so that the CLI (cli/plan_flags.cc), the GUI
// (gui/views/inputs_panel.cc, gui/models/scenario_model.cc), the search and explain all fill in
// the same values; every value filled in is returned as a note, printed as a `default:` line.
// Thread-safety: pure functions.
#ifndef MESHPLAN_CORE_DEFAULTS_H_
#define MESHPLAN_CORE_DEFAULTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/specs.h"

namespace meshplan::core {

// Architecture fields a user may override on a preset. Unset fields keep the preset's value,
// or follow an overridden field as ApplyModelOverrides says.
struct ModelOverrides {
  std::optional<int64_t> layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, sliding_window,
      global_attention_every;
  bool empty() const {
    return !layers && !hidden && !heads && !kv_heads && !head_dim && !ffn_hidden && !vocab && !sliding_window &&
           !global_attention_every;
  }
};

// `base` with `o` applied, keeping the dimensions the preset derives from others consistent
// (each follows unless given explicitly):
//  - ffn_hidden (and a MoE model's expert_ffn_hidden and shared_expert_ffn_hidden) keep the
//    preset's ratio to hidden when hidden changes: GPT-3 and Megatron's GPTs 4h (Brown et al.
//    2020 Table 2.1; Narayanan et al. 2021 Table 1), Llama 3 3.5h. A ratio that gives no whole
//    number is rounded up to a multiple of 256, as Meta's Llama reference code rounds its MLP
//    width (`multiple_of`).
//  - kv_heads follows heads: = heads for a multi-head (MHA) preset; 1 for a multi-query preset;
//    otherwise the preset's group size (query heads per kv head) where it divides the new head
//    count, else the preset's kv head count where that divides it (Llama 3 keeps 8 kv heads from
//    8B to 405B). When neither divides, kv_heads is left for validation to reject.
//  - head_dim = hidden / heads when the preset's head_dim is hidden / heads (a preset with a
//    decoupled head_dim, such as Qwen3's 128, keeps it).
//  - global_attention_every follows sliding_window to 0 when the window is turned off (no
//    windowed layers, so no global ones among them).
// Every followed value that differs from the preset is appended to `notes` ("ffn_hidden 9216
// (4 x hidden 2304, the preset's ratio; --ffn to change)"). Problems go to `d` under
// "model.<field>"; either may be nullptr (the GUI applies edits silently and validates after).
// Does not run ValidateModel.
ModelSpec ApplyModelOverrides(const ModelSpec& base, const ModelOverrides& o, Diagnostics* d,
                              std::vector<std::string>* notes);

// The default layer split over `chunks` = pp*vpp model chunks: an empty vector when chunks
// divides layers (PlanSpec::stage_layers left empty, the even split). Otherwise every chunk holds
// k = ceil(layers/chunks) layers except the ones that give up the remainder, taken first from
// the last and the first chunk (they also run the output head and loss, and the embedding),
// then from the chunks next to them, alternating inwards: Llama 3 405B's 126 layers on 16 stages
// are 7 + 14 x 8 + 7 (Dubey et al. 2024 §3.3.2), as Megatron-Core's
// account_for_embedding/loss_in_pipeline_split gives. Every chunk holds k or k-1 layers, so the
// slowest stage is never slower than the balanced split's. With one or two chunks more than
// layers, the last (then the first) chunk holds no layer: the output layer and loss alone, the
// embedding alone (Megatron-Core's split of layers + 2, Llama 3's 126 layers on 128 chunks).
// nullopt when chunks > layers + 2.
std::optional<std::vector<int64_t>> DefaultStageSplit(int64_t layers, int64_t chunks);
// The same for model `m`: when its layers do not divide by `chunks` and it has MTP modules (which
// run on the last chunk), the layers and the modules are split together and the last chunk keeps
// its share less the modules (at least one decoder layer), as Megatron-Bridge's DeepSeek-V3
// layouts do ("Et*4|(t*4|)*14tmL": 4 x 15 chunks, then 1 layer + MTP + loss).
std::optional<std::vector<int64_t>> DefaultStageSplit(const ModelSpec& m, int64_t chunks);

// Fills plan->stage_layers with DefaultStageSplit when it is empty and layers do not divide by
// pp*vpp, and notes the split ("stage_layers 7, 8 (x14), 7 (126 layers over pp*vpp=16 chunks: ...)";
// `notes` may be nullptr). Leaves the plan alone when the split is given, even, or impossible
// (validation says why).
void ApplyDefaultStageSplit(const ModelSpec& m, PlanSpec* plan, std::vector<std::string>* notes);

// Sequence parallelism on with tp > 1, as Megatron-Core's recipes and torchtitan's TP run it
// (docs/memory.md, "Defaults a user did not type"); left off, with a note saying why, when seq/cp
// does not divide by tp. For a plan whose sequence_parallel the user did not give.
void ApplyDefaultSequenceParallel(PlanSpec* plan, std::vector<std::string>* notes);

// The default precision (bf16) on a GPU without bf16 tensor cores but with fp16 (V100): fp16,
// noted. For a plan whose precision neither the user, a stack nor a plan file gave.
void ApplyDefaultPrecision(const GpuSpec& gpu, PlanSpec* plan, std::vector<std::string>* notes);

// Layers per chunk as text, runs of equal counts compressed: "7, 8 (x14), 7".
std::string StageSplitText(const std::vector<int64_t>& split);

// The training run's length when the user gives none: 20 tokens per parameter, the
// compute-optimal ratio of Hoffmann et al. 2022 ("Chinchilla", Table 3), used by report,
// reliability, explain, the search and the GUI alike.
inline constexpr double kTokensPerParameter = 20.0;
inline double DefaultTrainingTokens(int64_t total_params) {
  return kTokensPerParameter * static_cast<double>(total_params);
}

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_DEFAULTS_H_
