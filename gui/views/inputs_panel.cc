#include "gui/views/inputs_panel.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QMenu>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/defaults.h"
#include "core/params.h"
#include "core/presets.h"
#include "core/stack.h"
#include "gui/models/format.h"

namespace meshplan::gui {
namespace {

QSpinBox* IntBox(int min, int max, const QString& tip) {
  auto* b = new QSpinBox();
  b->setRange(min, max);
  b->setToolTip(tip);
  b->setKeyboardTracking(true);
  return b;
}

QDoubleSpinBox* RealBox(double min, double max, int decimals, const QString& suffix, const QString& tip) {
  auto* b = new QDoubleSpinBox();
  b->setRange(min, max);
  b->setDecimals(decimals);
  b->setSuffix(suffix);
  b->setToolTip(tip);
  return b;
}

// A list of an enum's values, each shown by its name (core::Name) and holding the value.
template <typename E>
QComboBox* EnumBox(std::initializer_list<E> values, const QString& tip) {
  auto* b = new QComboBox();
  for (E v : values) b->addItem(core::Name(v), static_cast<int>(v));
  b->setToolTip(tip);
  return b;
}

// Selects `value` in an EnumBox.
template <typename E>
void SelectEnum(QComboBox* box, E value) {
  box->setCurrentIndex(box->findData(static_cast<int>(value)));
}

// A set of module bits (PlanSpec::recompute_modules, PlanSpec::offload_modules) as a button whose
// menu holds one checkable name per module, in the enum's order; the button reads the set as the
// CLI writes it. `count` modules, bit i for the enum's value i.
template <typename E>
QToolButton* ModuleSetButton(int count, const QString& tip) {
  auto* b = new QToolButton();
  b->setPopupMode(QToolButton::InstantPopup);
  b->setToolButtonStyle(Qt::ToolButtonTextOnly);
  b->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  b->setToolTip(tip);
  auto* menu = new QMenu(b);
  for (int i = 0; i < count; ++i) {
    QAction* a = menu->addAction(core::Name(static_cast<E>(i)));
    a->setCheckable(true);
    a->setData(i);
  }
  b->setMenu(menu);
  return b;
}

// The set a ModuleSetButton's checked names stand for.
uint32_t CheckedModules(const QToolButton* b) {
  uint32_t bits = 0;
  for (const QAction* a : b->menu()->actions())
    if (a->isChecked()) bits |= uint32_t{1} << a->data().toInt();
  return bits;
}

// Shows `bits` in a ModuleSetButton (its checks and its text) without editing the plan.
void ShowModules(QToolButton* b, uint32_t bits, const std::string& text) {
  for (QAction* a : b->menu()->actions()) {
    const QSignalBlocker block(a);
    a->setChecked((bits >> a->data().toInt()) & 1u);
  }
  b->setText(text.empty() ? QString("none") : QString::fromStdString(text));
}

// Fills a list with the choices; invalid ones greyed out with the rule they break as tooltip.
// Keeps the items (and so the popup) when the values are unchanged.
void FillChoices(QComboBox* box, const std::vector<Choice>& choices, int64_t current,
                 const std::function<QString(int64_t)>& label) {
  const QSignalBlocker block(box);
  auto* m = qobject_cast<QStandardItemModel*>(box->model());
  bool same = m && m->rowCount() == static_cast<int>(choices.size());
  for (size_t i = 0; same && i < choices.size(); ++i)
    same = box->itemData(static_cast<int>(i)).toLongLong() == choices[i].value;
  if (!same) {
    box->clear();
    for (const auto& c : choices) box->addItem(label(c.value), QVariant::fromValue<qlonglong>(c.value));
    m = qobject_cast<QStandardItemModel*>(box->model());
  }
  int current_index = -1;
  for (size_t i = 0; i < choices.size(); ++i) {
    const Choice& c = choices[i];
    QStandardItem* item = m ? m->item(static_cast<int>(i)) : nullptr;
    if (!item) continue;
    item->setEnabled(c.valid);
    item->setToolTip(c.valid ? QString() : "Not allowed here:\n" + c.reason);
    item->setForeground(c.valid ? QBrush() : QBrush(Qt::gray));
    if (c.value == current) current_index = static_cast<int>(i);
  }
  box->setCurrentIndex(current_index);
  const int ci = current_index;
  box->setToolTip(ci >= 0 && !choices[static_cast<size_t>(ci)].valid
                      ? "The current value breaks a rule:\n" + choices[static_cast<size_t>(ci)].reason
                      : QString("Greyed values are not allowed for this model and GPU count; hover one to see why."));
}

// The presets of `kind`; the current spec selected, or listed as its own entry when it is a file,
// an embedded spec or an edited preset (choosing the preset again reloads it, dropping the edits).
void FillPresets(QComboBox* box, const std::string& kind, const QString& current_ref, const QString& current_name,
                 bool edited) {
  const QSignalBlocker block(box);
  box->clear();
  for (const auto& name : core::PresetNames(kind)) box->addItem(Q(name), Q(name));
  int i = current_ref.isEmpty() || edited ? -1 : box->findData(current_ref);
  if (i < 0) {
    QString label = current_name;
    if (edited) label += " (edited)";
    else if (current_ref.isEmpty()) label += " (from the plan file)";
    else label += " (file)";
    box->addItem(label, QString());
    i = box->count() - 1;
  }
  box->setCurrentIndex(i);
}

void SetValue(QSpinBox* b, int64_t v) {
  const QSignalBlocker block(b);
  b->setValue(static_cast<int>(std::min<int64_t>(v, b->maximum())));
}
void SetValue(QDoubleSpinBox* b, double v) {
  const QSignalBlocker block(b);
  b->setValue(v);
}

}  // namespace

template <typename E>
void InputsPanel::BindEnum(QComboBox* box, E core::PlanSpec::*field) {
  connect(box, &QComboBox::currentIndexChanged, this, [this, box, field](int i) {
    if (i >= 0) EditPlan([&](core::PlanSpec& p) { p.*field = static_cast<E>(box->itemData(i).toInt()); });
  });
}

InputsPanel::InputsPanel(ScenarioModel* scenario, QWidget* parent) : QScrollArea(parent), scenario_(scenario) {
  setWidgetResizable(true);
  setMinimumWidth(330);
  auto* inner = new QWidget();
  auto* col = new QVBoxLayout(inner);

  // ---- model --------------------------------------------------------------------------------
  auto* mg = new QGroupBox("Model");
  auto* mf = new QFormLayout(mg);
  model_ = new QComboBox();
  model_->setToolTip("Built-in model presets (presets/models)");
  load_hf_ = new QPushButton("Load HF config.json...");
  load_hf_->setToolTip(
      "A Hugging Face config.json (llama, mistral, mixtral, qwen2/3, deepseek_v3, gpt2, gpt_oss) or a meshplan "
      "model JSON");
  mf->addRow("preset", model_);
  mf->addRow("", load_hf_);
  layers_ = IntBox(1, 100000, "Transformer layers");
  hidden_ = IntBox(1, 1 << 20, "Hidden size");
  heads_ = IntBox(1, 1 << 16, "Attention heads");
  kv_heads_ = IntBox(1, 1 << 16, "Key/value heads (GQA); = heads for MHA");
  ffn_ = IntBox(1, 1 << 22, "Dense MLP intermediate size");
  vocab_ = IntBox(1, 1 << 24, "Vocabulary size");
  window_ = IntBox(0, 1 << 27,
                   "Sliding window: keys a windowed layer's query attends, itself included (0: every layer "
                   "global; gpt-oss 128). Which layers are windowed is the model's (global_attention_every)");
  mf->addRow("layers", layers_);
  mf->addRow("hidden", hidden_);
  mf->addRow("heads", heads_);
  mf->addRow("kv heads", kv_heads_);
  mf->addRow("ffn hidden", ffn_);
  mf->addRow("vocab", vocab_);
  mf->addRow("sliding window", window_);
  params_ = new QLabel();
  mf->addRow("parameters", params_);
  col->addWidget(mg);

  // ---- hardware -----------------------------------------------------------------------------
  auto* hg = new QGroupBox("Hardware");
  auto* hf = new QFormLayout(hg);
  gpu_ = new QComboBox();
  gpu_->setToolTip("GPU presets; picks the built-in cluster of that GPU");
  cluster_ = new QComboBox();
  cluster_->setToolTip("Cluster presets; picks the cluster's GPU");
  hbm_ = RealBox(1, 100000, 1, " GB", "HBM per GPU (1 GB = 1e9 bytes)");
  peak_ = RealBox(0, 1e6, 0, " TFLOP/s", "Dense tensor-core peak at the plan's precision");
  peak_label_ = new QLabel("peak");
  gpus_ = IntBox(1, 10000000, "GPUs in the job (= tp x pp x dp x cp)");
  price_ = RealBox(0, 10000, 2, " $/GPU-h", "Price per GPU-hour (the cluster's price_per_gpu_hour_usd)");
  hf->addRow("GPU", gpu_);
  hf->addRow("cluster", cluster_);
  hf->addRow("HBM", hbm_);
  hf->addRow(peak_label_, peak_);
  hf->addRow("GPUs", gpus_);
  hf->addRow("price", price_);
  col->addWidget(hg);

  // ---- parallelism --------------------------------------------------------------------------
  auto* pg = new QGroupBox("Parallelism");
  auto* pf = new QFormLayout(pg);
  stack_ = new QComboBox();
  stack_->addItem("(apply a stack's defaults)", QString());
  for (const std::string& name : core::PresetNames("stacks")) stack_->addItem(Q(name), Q(name));
  stack_->setToolTip(
      "A software stack's defaults for this plan (presets/stacks, as `meshplan report --stack NAME`): precision, "
      "attention kernel, recomputation, ZeRO, SP, TP and DP overlap, gradient dtype, loss, MoE dispatcher and "
      "the rest that framework does by default. Choosing one sets those fields; edit any of them afterwards");
  pf->addRow("software stack", stack_);
  const std::pair<Degree, const char*> degrees[] = {
      {Degree::kTp, "TP"}, {Degree::kPp, "PP"}, {Degree::kCp, "CP"}, {Degree::kEp, "EP"}, {Degree::kVpp, "VPP"}};
  for (const auto& [d, name] : degrees) {
    auto* box = new QComboBox();
    degree_[d] = box;
    pf->addRow(name, box);
    connect(box, &QComboBox::currentIndexChanged, this, [this, d = d, box](int i) {
      if (i >= 0) scenario_->setDegree(d, box->itemData(i).toLongLong());
    });
  }
  dp_ = new QLabel();
  dp_->setToolTip("Data parallel size follows the GPU count: gpus / (tp x pp x cp), as `meshplan report` without --dp");
  pf->addRow("DP", dp_);
  zero_ = new QComboBox();
  zero_->setToolTip("ZeRO stage: 1 shards optimizer states, 2 also gradients, 3 also weights");
  pf->addRow("ZeRO", zero_);
  sp_ = new QCheckBox("sequence parallel");
  sp_->setToolTip("Shard norms and dropout activations over the TP group (Korthikanti et al. 2022)");
  pf->addRow("", sp_);
  dtensor_tp_ = new QCheckBox("DTensor TP (PyTorch, torchtitan)");
  dtensor_tp_->setToolTip(
      "With TP and sequence parallelism: PyTorch's DTensor styles, whose collectives on the sequence dimension "
      "each copy their whole tensor and which gather in float8 under fp8 (torchtitan; needs TP overlap none or "
      "async; docs/compute.md)");
  pf->addRow("", dtensor_tp_);
  fp8_param_gather_ = new QCheckBox("FP8 parameter gather");
  fp8_param_gather_->setToolTip(
      "Under fp8 with ZeRO 1 or 2: the distributed optimizer all-gathers the updated parameters in FP8, 1 byte "
      "each instead of the weights' 2 (Megatron-Core --fp8-param-gather, NeMo's fp8_params)");
  pf->addRow("", fp8_param_gather_);
  recompute_ = EnumBox({core::Recompute::kNone, core::Recompute::kSelective, core::Recompute::kFull},
                       "Activation recomputation: selective drops the attention scores, full keeps layer inputs");
  pf->addRow("recompute", recompute_);
  recompute_modules_ = ModuleSetButton<core::RecomputeModule>(
      static_cast<int>(core::kLastRecomputeModule) + 1,
      "Under selective recompute: the modules whose activations are recomputed in the backward instead of kept "
      "(Megatron-Core --recompute-modules; core_attn by default; moe_act and shared_experts need an MoE model, "
      "mla_up_proj MLA; torchtitan_op and save_qkv_proj are torchtitan's and MaxText's policies, alone; "
      "docs/memory.md)");
  pf->addRow("recompute modules", recompute_modules_);
  recompute_layers_ = IntBox(0, 100000,
                             "Under full recompute: layers per stage recomputed, the rest keep their activations "
                             "(Megatron-Core --recompute-method block --recompute-num-layers N); 0: every layer");
  recompute_layers_->setSpecialValueText("all");
  pf->addRow("recomputed layers", recompute_layers_);
  recompute_early_stop_ = new QCheckBox("early stop (PyTorch >= 2.1 checkpoint)");
  recompute_early_stop_->setToolTip(
      "Under full recompute: PyTorch's non-reentrant checkpoint stops the replay at the block's "
      "last saved tensor, so a dense block's MLP output projection, its TP reduction and the residual are not "
      "rerun (not with Transformer Engine or FP8 layers, dropout, or MoE, Mamba or MLA blocks; docs/compute.md)");
  pf->addRow("", recompute_early_stop_);
  vocab_divisible_by_ = IntBox(1, 65536,
                               "Pad the vocabulary to a multiple of N x TP, as Megatron-LM's "
                               "--make-vocab-size-divisible-by does (its default 128); 1: the model's vocabulary "
                               "as it is. A head whose columns a rank are not a multiple of 8 runs cuBLAS's slow "
                               "kernels on Hopper (docs/compute.md)");
  pf->addRow("vocab divisible by", vocab_divisible_by_);
  tp_overlap_ =
      EnumBox({core::TpOverlap::kNone, core::TpOverlap::kBackward, core::TpOverlap::kFull, core::TpOverlap::kAsync},
              "With TP > 1: which TP collectives run under GEMMs. none: every one exposed (Megatron-LM 2021); "
              "backward: the input-gradient reduction under the weight-gradient GEMM (Megatron-LM since "
              "2022); full: the forward's too (Transformer Engine userbuffers); async: PyTorch's AsyncTP "
              "(torchtitan, needs SP), every one fused with its GEMMs but the backward reduce-scatters of "
              "inputs several GEMMs read (q/k/v, a gated MLP's w1/w3)");
  pf->addRow("TP overlap", tp_overlap_);
  cp_kind_ = EnumBox({core::CpKind::kRing, core::CpKind::kUlysses, core::CpKind::kAllGather},
                     "With CP > 1: how context parallelism exchanges K and V. ring: blocks circulate under the "
                     "attention; ulysses: all-to-alls trade the sequence split for a head split; allgather: K and V "
                     "gathered whole before attention, exposed (Llama 3, torchtitan's default)");
  pf->addRow("CP kind", cp_kind_);
  torch_cp_ = new QCheckBox("PyTorch CP (torchtitan)");
  torch_cp_->setToolTip(
      "With CP > 1: PyTorch's context_parallel, whose Python ring copies K and V for each exchange, merges each "
      "block's output in fp32 with eager kernels and sends dK, dV around the ring in fp32 (torchtitan; ring or "
      "allgather, not ulysses; docs/compute.md)");
  pf->addRow("", torch_cp_);
  col->addWidget(pg);

  // ---- memory savers ------------------------------------------------------------------------
  auto* og = new QGroupBox("Offload and loss");
  auto* of = new QFormLayout(og);
  offload_optimizer_ =
      EnumBox({core::OffloadTarget::kNone, core::OffloadTarget::kCpu, core::OffloadTarget::kNvme},
              "Where the optimizer's states and step live: on the GPU, in host memory or on NVMe (ZeRO-Offload, "
              "ZeRO-Infinity; Megatron-Core --optimizer-cpu-offload)");
  offload_params_ = EnumBox({core::OffloadTarget::kNone, core::OffloadTarget::kCpu, core::OffloadTarget::kNvme},
                            "Where the sharded parameters live between uses (ZeRO-3 parameter offload)");
  offload_activations_ =
      IntBox(0, 100000,
             "Layers whose activations go to host memory during the forward and come back for their backward "
             "(Megatron-Core --cpu-offloading-num-layers N; needs PP 1, no recompute and the GPU's host link)");
  offload_activations_->setSpecialValueText("none");
  offload_checkpoints_ = new QCheckBox("checkpoints in host memory (DeepSpeed)");
  offload_checkpoints_->setToolTip(
      "Under full recompute: each layer's checkpoint goes to host memory in the forward and comes back before "
      "its recomputation, both copies on the compute stream (DeepSpeed's cpu_checkpointing; needs the GPU's host "
      "link; docs/memory.md, docs/compute.md)");
  cross_entropy_ =
      EnumBox({core::CrossEntropy::kFused, core::CrossEntropy::kTe, core::CrossEntropy::kTeInplace,
               core::CrossEntropy::kUpcast, core::CrossEntropy::kCompiled, core::CrossEntropy::kFlash,
               core::CrossEntropy::kNative, core::CrossEntropy::kPlain},
              "How the loss computes the cross entropy, and so the bytes per logit it holds: fused (Megatron-Core's "
              "vocab-parallel loss, 6 B), te (Transformer Engine 2.18 on, 6 B), te-inplace (before 2.18, 2 B), "
              "upcast (bf16 logits .float() into PyTorch's, torchtitan 2024: 12 B), compiled (the same under "
              "torch.compile, torchtitan from 2025-04: 4 B), flash (FlashAttention's "
              "kernel, LLM Foundry: 4 B), native (Megatron-Core --cross-entropy-loss-fusion native: 10 B), plain "
              "(PyTorch's on the bf16 logits without the upcast, NeMo AutoModel's MoE benchmarks: 6 B)");
  of->addRow("offload optimizer", offload_optimizer_);
  of->addRow("offload parameters", offload_params_);
  of->addRow("offload activations", offload_activations_);
  offload_modules_ = ModuleSetButton<core::OffloadModule>(
      static_cast<int>(core::OffloadModule::kFusedGroupMlp) + 1,
      "Fine-grained activation offloading: each checked module's saved tensors go to host memory in the forward "
      "and come back for its backward, all but one layer's (Megatron-Core --fine-grained-activation-offloading "
      "--offload-modules; not with offloaded layers or full recompute; attn_proj with core_attn; the expert "
      "modules need an MoE model; needs the GPU's host link; docs/memory.md)");
  of->addRow("offload modules", offload_modules_);
  of->addRow("", offload_checkpoints_);
  of->addRow("cross entropy", cross_entropy_);
  col->addWidget(og);

  // ---- batch, schedule, precision ----------------------------------------------------------
  auto* bg = new QGroupBox("Batch and schedule");
  auto* bf = new QFormLayout(bg);
  mbs_ = IntBox(1, 1 << 20, "Micro batch size in sequences");
  gbs_ = IntBox(1, 1 << 30, "Global batch size in sequences per optimizer step");
  seq_ = IntBox(1, 1 << 24, "Sequence length in tokens");
  schedule_ = new QComboBox();
  precision_ =
      EnumBox({core::Dtype::kBf16, core::Dtype::kFp16, core::Dtype::kFp8, core::Dtype::kNvfp4, core::Dtype::kFp32},
              "GEMM compute precision");
  fp8_scaling_ =
      EnumBox({core::Fp8Scaling::kDelayed, core::Fp8Scaling::kCurrent, core::Fp8Scaling::kBlock},
              "Under fp8: how each GEMM operand is scaled (Transformer Engine recipes). delayed: from an amax "
              "history; current: from the tensor's own amax, one more pass; block: per 1x128 tile (DeepSeek-V3). "
              "BF16 first/last layers need current or block");
  bf16_start_ = IntBox(0, 100000,
                       "Under fp8 or nvfp4: the model's first N decoder layers run their GEMMs in BF16 "
                       "(Megatron-Core --first-last-layers-bf16 --num-layers-at-start-in-bf16 N)");
  bf16_end_ = IntBox(0, 100000,
                     "Under fp8 or nvfp4: the model's last M decoder layers run their GEMMs in BF16 "
                     "(Megatron-Core --first-last-layers-bf16 --num-layers-at-end-in-bf16 M)");
  bf->addRow("micro batch", mbs_);
  bf->addRow("global batch", gbs_);
  bf->addRow("sequence", seq_);
  bf->addRow("schedule", schedule_);
  pp_flushes_ = IntBox(1, 1 << 20,
                       "With PP > 1: pipeline flushes a step, each running its share of the microbatches with its "
                       "own warm-up and drain (NeMo AutoModel runs one per local batch); must divide the microbatches");
  bf->addRow("pipeline flushes", pp_flushes_);
  bf->addRow("precision", precision_);
  bf->addRow("FP8 scaling", fp8_scaling_);
  bf->addRow("BF16 layers at start", bf16_start_);
  bf->addRow("BF16 layers at end", bf16_end_);
  moe_probs_ =
      EnumBox({core::MoeProbs::kFused, core::MoeProbs::kActivation, core::MoeProbs::kUnpermute},
              "MoE: where the router's probabilities weight the tokens, which sets what is kept for their "
              "gradient. fused: a fused weighted SwiGLU/quick-GeGLU/squared-ReLU (Megatron-Core 0.13 on), nothing "
              "more; activation: the activation's output times them (GELU experts), that output kept; unpermute: "
              "the experts' output times them (Megatron-Core before 0.13, DeepSpeed), that output kept");
  bf->addRow("MoE probabilities", moe_probs_);
  expert_bias_ =
      EnumBox({core::ExpertBias::kFused, core::ExpertBias::kPerExpert, core::ExpertBias::kPerExpertFp32},
              "MoE experts with biases (gpt-oss): how fc2's bias is added. fused: in the GEMM or a fused kernel, "
              "no pass of its own; per-expert: Megatron-Core's TEGroupedMLP from 2025-09, t + b * p one local "
              "expert at a time and a concatenation, in eager PyTorch; per-expert-fp32: the same with fp32 "
              "probabilities, as the flex dispatcher hands them");
  bf->addRow("expert bias", expert_bias_);
  moe_dispatcher_ =
      EnumBox({core::MoeDispatcher::kAllToAll, core::MoeDispatcher::kFlex},
              "MoE with EP > 1: the token dispatcher. alltoall: Megatron-Core's, every token copy sent and permuted "
              "four times; flex: DeepEP / HybridEP, each token sent once per rank, two permutations fewer");
  bf->addRow("MoE dispatcher", moe_dispatcher_);
  moe_router_padding_ = new QCheckBox("tokens padded before the experts");
  moe_router_padding_->setToolTip(
      "MoE under fp8/nvfp4: each expert's tokens arrive padded to the quantization's alignment (Megatron-Core's "
      "--moe-router-padding-for-quantization, or its HybridEP dispatcher), so Transformer Engine's grouped "
      "experts skip their padding copies (docs/compute.md)");
  bf->addRow("", moe_router_padding_);
  moe_op_fuser_ = new QCheckBox("experts through TE's op fuser");
  moe_op_fuser_->setToolTip(
      "MoE with Transformer Engine's grouped experts: fc1, the activation and fc2 through its op fuser "
      "(Megatron-Core's --use-transformer-engine-op-fuser): a clamped activation (gpt-oss) without its copies, "
      "fc2's bias inside its grouped linear op (docs/compute.md)");
  bf->addRow("", moe_op_fuser_);
  moe_imbalance_ =
      RealBox(1.0, 65536.0, 3, QString::fromUtf8("× the mean"),
              "MoE, dropless: the routed tokens the busiest expert-parallel rank receives over the mean, "
              "which sets the layer's pace and its activations (a measured ratio, e.g. from Megatron-Core's "
              "--moe-per-layer-logging; at most ep). 1: balanced routing");
  bf->addRow("busiest EP rank", moe_imbalance_);
  moe_routing_ =
      EnumBox({core::MoeRouting::kUniform, core::MoeRouting::kRoundRobin},
              "MoE under the flex dispatcher: which experts a token picks. uniform: at random (a trained router, "
              "--moe-router-force-load-balancing); round-robin: k consecutive experts (NeMo AutoModel's fake "
              "balanced gate), so a token reaches fewer ranks");
  bf->addRow("MoE routing", moe_routing_);
  col->addWidget(bg);

  // ---- the run ------------------------------------------------------------------------------
  auto* rg = new QGroupBox("Training run");
  auto* rf = new QFormLayout(rg);
  tokens_ = RealBox(0, 1e6, 1, " B tokens", "Tokens to train, in billions; 0: 20 per parameter (Hoffmann et al. 2022)");
  tokens_->setSpecialValueText("20 per parameter");
  rf->addRow("tokens", tokens_);
  col->addWidget(rg);

  messages_ = new QLabel();
  messages_->setWordWrap(true);
  messages_->setTextFormat(Qt::RichText);
  messages_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  col->addWidget(messages_);
  col->addStretch(1);
  setWidget(inner);

  // ---- wiring -------------------------------------------------------------------------------
  connect(model_, &QComboBox::currentIndexChanged, this, [this](int i) {
    const QString name = model_->itemData(i).toString();
    if (name.isEmpty()) return;
    QString err;
    if (!scenario_->setModelPreset(name, &err)) ShowError(err);
  });
  connect(load_hf_, &QPushButton::clicked, this, &InputsPanel::loadModelFileDialog);
  // As the CLI's overrides (core::ApplyModelOverrides): the MLP width and head_dim follow hidden,
  // kv heads and head_dim follow heads, as the model being edited derives them.
  auto model_field = [this](QSpinBox* box, std::optional<int64_t> core::ModelOverrides::*field) {
    connect(box, &QSpinBox::valueChanged, this, [this, field](int v) {
      EditModel([&](core::ModelSpec& m) {
        core::ModelOverrides o;
        o.*field = v;
        m = core::ApplyModelOverrides(m, o, nullptr, nullptr);  // what cannot follow: validation says
      });
    });
  };
  model_field(layers_, &core::ModelOverrides::layers);
  model_field(hidden_, &core::ModelOverrides::hidden);
  model_field(heads_, &core::ModelOverrides::heads);
  model_field(kv_heads_, &core::ModelOverrides::kv_heads);
  model_field(ffn_, &core::ModelOverrides::ffn_hidden);
  model_field(vocab_, &core::ModelOverrides::vocab);
  model_field(window_, &core::ModelOverrides::sliding_window);
  connect(gpu_, &QComboBox::currentIndexChanged, this, [this](int i) {
    const QString name = gpu_->itemData(i).toString();
    QString err;
    if (!name.isEmpty() && !scenario_->setGpuPreset(name, &err)) ShowError(err);
  });
  connect(cluster_, &QComboBox::currentIndexChanged, this, [this](int i) {
    const QString name = cluster_->itemData(i).toString();
    QString err;
    if (!name.isEmpty() && !scenario_->setClusterPreset(name, &err)) ShowError(err);
  });
  connect(hbm_, &QDoubleSpinBox::valueChanged, this, [this](double gb) {
    core::GpuSpec g = scenario_->scenario().gpu;
    const int64_t bytes = std::llround(gb * 1e9);
    if (bytes == g.hbm_bytes) return;
    g.hbm_bytes = bytes;
    // A GPU with other memory: the preset's measured CUDA total was another GPU's; the fit then
    // takes the physical memory, as for any GPU without a measurement (GpuSpec::CapacityBytes).
    g.cuda_total_bytes = 0;
    g.cuda_total_source.clear();
    scenario_->setGpu(g);
  });
  connect(peak_, &QDoubleSpinBox::valueChanged, this, [this](double tflops) {
    core::GpuSpec g = scenario_->scenario().gpu;
    g.peak_flops_per_s[scenario_->plan().precision] = tflops * 1e12;
    scenario_->setGpu(g);
  });
  connect(gpus_, &QSpinBox::valueChanged, this, [this](int v) { scenario_->setGpus(v); });
  connect(price_, &QDoubleSpinBox::valueChanged, this, [this](double v) { scenario_->setPricePerGpuHour(v); });
  connect(tokens_, &QDoubleSpinBox::valueChanged, this, [this](double b) { scenario_->setTokens(b * 1e9); });
  connect(stack_, &QComboBox::currentIndexChanged, this, [this](int i) {
    const QString name = stack_->itemData(i).toString();
    if (!name.isEmpty()) ApplyStackPreset(name);
  });
  connect(zero_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) EditPlan([&](core::PlanSpec& p) { p.zero = static_cast<int>(zero_->itemData(i).toLongLong()); });
  });
  connect(sp_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.sequence_parallel = on; }); });
  connect(fp8_param_gather_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.fp8_param_gather = on; }); });
  connect(moe_router_padding_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.moe_router_padding = on; }); });
  connect(moe_op_fuser_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.moe_op_fuser = on; }); });
  connect(moe_imbalance_, &QDoubleSpinBox::valueChanged, this,
          [this](double v) { EditPlan([&](core::PlanSpec& p) { p.moe_imbalance = v; }); });
  connect(dtensor_tp_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.dtensor_tp = on; }); });
  connect(torch_cp_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.torch_cp = on; }); });
  connect(pp_flushes_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.pp_flushes = v; }); });
  BindEnum(recompute_, &core::PlanSpec::recompute);
  connect(recompute_layers_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.recompute_layers = v; }); });
  connect(recompute_modules_->menu(), &QMenu::triggered, this, [this](QAction*) {
    const uint32_t bits = CheckedModules(recompute_modules_);
    EditPlan([&](core::PlanSpec& p) { p.recompute_modules = bits; });
  });
  connect(offload_modules_->menu(), &QMenu::triggered, this, [this](QAction*) {
    const uint32_t bits = CheckedModules(offload_modules_);
    EditPlan([&](core::PlanSpec& p) { p.offload_modules = bits; });
  });
  connect(recompute_early_stop_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.recompute_early_stop = on; }); });
  connect(vocab_divisible_by_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.vocab_divisible_by = v; }); });
  BindEnum(tp_overlap_, &core::PlanSpec::tp_overlap);
  BindEnum(cp_kind_, &core::PlanSpec::cp_kind);
  BindEnum(offload_optimizer_, &core::PlanSpec::offload_optimizer);
  BindEnum(offload_params_, &core::PlanSpec::offload_params);
  connect(offload_activations_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.offload_activation_layers = v; }); });
  connect(offload_checkpoints_, &QCheckBox::toggled, this,
          [this](bool on) { EditPlan([&](core::PlanSpec& p) { p.offload_checkpoints = on; }); });
  BindEnum(cross_entropy_, &core::PlanSpec::cross_entropy);
  connect(mbs_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.micro_batch = v; }); });
  connect(gbs_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.global_batch = v; }); });
  connect(seq_, &QSpinBox::valueChanged, this, [this](int v) { EditPlan([&](core::PlanSpec& p) { p.seq_len = v; }); });
  connect(schedule_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0)
      EditPlan(
          [&](core::PlanSpec& p) { p.schedule = static_cast<core::Schedule>(schedule_->itemData(i).toLongLong()); });
  });
  BindEnum(precision_, &core::PlanSpec::precision);
  BindEnum(fp8_scaling_, &core::PlanSpec::fp8_scaling);
  BindEnum(moe_probs_, &core::PlanSpec::moe_probs);
  BindEnum(expert_bias_, &core::PlanSpec::expert_bias);
  BindEnum(moe_dispatcher_, &core::PlanSpec::moe_dispatcher);
  BindEnum(moe_routing_, &core::PlanSpec::moe_routing);
  connect(bf16_start_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.bf16_layers_at_start = v; }); });
  connect(bf16_end_, &QSpinBox::valueChanged, this,
          [this](int v) { EditPlan([&](core::PlanSpec& p) { p.bf16_layers_at_end = v; }); });
  connect(scenario_, &ScenarioModel::evaluated, this, &InputsPanel::Refresh);
  Refresh();
}

void InputsPanel::EditModel(const std::function<void(core::ModelSpec&)>& edit) {
  core::ModelSpec m = scenario_->scenario().model;
  edit(m);
  error_.clear();
  scenario_->setModel(m);
}

void InputsPanel::EditPlan(const std::function<void(core::PlanSpec&)>& edit) {
  core::PlanSpec p = scenario_->plan();
  edit(p);
  error_.clear();
  scenario_->setPlan(p);
}

void InputsPanel::ApplyStackPreset(const QString& name) {
  auto stack = core::LoadStack(name.toStdString());
  if (!stack.ok()) {
    ShowError(Q(stack.status().message()));
    return;
  }
  core::ModelSpec m = scenario_->scenario().model;
  core::PlanSpec p = scenario_->plan();
  // The fields a stack owns but sets only where it says so (its checkpoint early stop, its CUDA
  // context, its vocabulary padding, its FP8 parameter gather) go back to the plan's defaults
  // first, so a stack chosen after another gives the plan it gives alone.
  const core::PlanSpec defaults;
  p.recompute_early_stop = defaults.recompute_early_stop;
  p.cuda_context_bytes = defaults.cuda_context_bytes;
  p.vocab_divisible_by = defaults.vocab_divisible_by;
  p.fp8_param_gather = defaults.fp8_param_gather;
  core::ApplyStackWhole(*stack, &m, &p);
  error_.clear();
  scenario_->setModel(m);
  scenario_->setPlan(p);
  // What the combo shows until a field differs from what the stack set (Refresh).
  applied_stack_ = name;
  applied_model_ = scenario_->scenario().model;
  applied_plan_ = scenario_->plan();
  Refresh();
}

void InputsPanel::ShowError(const QString& error) {
  error_ = error;
  Refresh();
}

void InputsPanel::loadModelFileDialog() {
  const QString path = QFileDialog::getOpenFileName(this, "Load a model: Hugging Face config.json or meshplan JSON", {},
                                                    "JSON (*.json);;All files (*)");
  if (path.isEmpty()) return;
  QString err;
  if (!scenario_->loadModelFile(path, &err)) ShowError(err);
}

void InputsPanel::Refresh() {
  const core::Scenario& s = scenario_->scenario();
  const core::PlanSpec& p = s.plan;
  const Evaluation& e = scenario_->evaluation();
  FillPresets(model_, "models", scenario_->modelRef(), Q(s.model.name), scenario_->modelEdited());
  FillPresets(gpu_, "gpus", scenario_->gpuRef(), Q(s.gpu.name), scenario_->gpuEdited());
  FillPresets(cluster_, "clusters", scenario_->clusterRef(), Q(s.cluster.name), scenario_->clusterEdited());
  // The stack applied last, while the model and plan are still what it left; the placeholder after
  // any edit (the stack no longer describes the plan).
  if (!applied_stack_.isEmpty() && !(s.model == applied_model_ && p == applied_plan_)) applied_stack_.clear();
  {
    const QSignalBlocker block(stack_);
    stack_->setCurrentIndex(std::max(0, stack_->findData(applied_stack_)));
  }
  SetValue(layers_, s.model.layers);
  SetValue(hidden_, s.model.hidden);
  SetValue(heads_, s.model.heads);
  SetValue(kv_heads_, s.model.kv_heads);
  SetValue(ffn_, s.model.ffn_hidden);
  SetValue(vocab_, s.model.vocab);
  SetValue(window_, s.model.sliding_window);
  const core::ParamCount pc = core::CountParams(s.model);
  params_->setText(
      pc.active != pc.total
          ? QString("%1 (%2 active)").arg(Count(static_cast<double>(pc.total)), Count(static_cast<double>(pc.active)))
          : Count(static_cast<double>(pc.total)));
  SetValue(hbm_, static_cast<double>(s.gpu.hbm_bytes) / 1e9);
  // What the fit compares with (GpuSpec::CapacityBytes): the memory CUDA reports, where measured.
  hbm_->setToolTip(
      s.gpu.cuda_total_bytes > 0
          ? QString("HBM per GPU, physical (1 GB = 1e9 bytes). A plan may fill %1 GB: what CUDA reports of it, the "
                    "driver keeping the rest (the preset's measurement; docs/memory.md §4). Editing it drops that "
                    "measurement.")
                .arg(static_cast<double>(s.gpu.cuda_total_bytes) / 1e9, 0, 'f', 2)
          : QString("HBM per GPU (1 GB = 1e9 bytes). No measured CUDA total for this GPU: a plan may fill all of it "
                    "(drivers keep about 1%; docs/memory.md §4)."));
  peak_label_->setText(QString("peak (%1)").arg(core::Name(p.precision)));
  auto peak = s.gpu.peak_flops_per_s.find(p.precision);
  SetValue(peak_, peak == s.gpu.peak_flops_per_s.end() ? 0.0 : peak->second / 1e12);
  SetValue(gpus_, p.gpus);
  SetValue(price_, s.cluster.price_per_gpu_hour_usd);
  SetValue(tokens_, scenario_->tokensSetting() / 1e9);

  auto number = [](int64_t v) { return QString::number(v); };
  for (auto& [d, box] : degree_) {
    core::PlanSpec copy = p;
    const int64_t current = d == Degree::kTp   ? copy.tp
                            : d == Degree::kPp ? copy.pp
                            : d == Degree::kCp ? copy.cp
                            : d == Degree::kEp ? copy.ep
                                               : copy.vpp;
    FillChoices(box, scenario_->choices(d), current, number);
  }
  dp_->setText(QString("%1  (= %2 / (%3 x %4 x %5))").arg(p.dp).arg(p.gpus).arg(p.tp).arg(p.pp).arg(p.cp));
  FillChoices(zero_, scenario_->zeroChoices(), p.zero, [](int64_t z) {
    static const char* kWhat[] = {"0: replicated", "1: shard optimizer", "2: + gradients", "3: + weights (FSDP)"};
    return QString(kWhat[std::clamp<int64_t>(z, 0, 3)]);
  });
  FillChoices(schedule_, scenario_->scheduleChoices(), static_cast<int64_t>(p.schedule),
              [](int64_t v) { return QString(core::Name(static_cast<core::Schedule>(v))); });
  {
    const QSignalBlocker b1(sp_), b2(recompute_), b3(precision_), b4(fp8_scaling_), b5(moe_probs_), b6(tp_overlap_),
        b7(cp_kind_), b8(offload_optimizer_), b9(offload_params_), b10(cross_entropy_), b11(moe_dispatcher_),
        b12(moe_routing_), b13(fp8_param_gather_), b14(recompute_early_stop_), b15(expert_bias_), b16(dtensor_tp_),
        b17(torch_cp_), b18(offload_checkpoints_), b19(moe_router_padding_), b20(moe_op_fuser_);
    sp_->setChecked(p.sequence_parallel);
    SelectEnum(recompute_, p.recompute);
    SelectEnum(tp_overlap_, p.tp_overlap);
    tp_overlap_->setEnabled(p.tp > 1);
    SelectEnum(cp_kind_, p.cp_kind);
    cp_kind_->setEnabled(p.cp > 1);
    SelectEnum(offload_optimizer_, p.offload_optimizer);
    SelectEnum(offload_params_, p.offload_params);
    SelectEnum(cross_entropy_, p.cross_entropy);
    SelectEnum(precision_, p.precision);
    SelectEnum(fp8_scaling_, p.fp8_scaling);
    fp8_scaling_->setEnabled(p.precision == core::Dtype::kFp8);
    SelectEnum(moe_probs_, p.moe_probs);
    moe_probs_->setEnabled(s.model.moe.has_value());
    SelectEnum(expert_bias_, p.expert_bias);
    // Shown while set even where the experts have no biases (it then adds nothing), as above.
    expert_bias_->setEnabled(p.expert_bias != core::ExpertBias::kFused ||
                             (s.model.moe.has_value() && s.model.bias == core::BiasKind::kAll));
    SelectEnum(moe_dispatcher_, p.moe_dispatcher);
    moe_dispatcher_->setEnabled(s.model.moe.has_value() && p.ep > 1);
    SelectEnum(moe_routing_, p.moe_routing);
    moe_routing_->setEnabled(s.model.moe.has_value() && p.ep > 1 && p.moe_dispatcher == core::MoeDispatcher::kFlex);
    // Shown while set even on a dense model (validation names why), as fp8_param_gather below.
    moe_router_padding_->setChecked(p.moe_router_padding);
    moe_router_padding_->setEnabled(p.moe_router_padding || s.model.moe.has_value());
    moe_op_fuser_->setChecked(p.moe_op_fuser);
    moe_op_fuser_->setEnabled(p.moe_op_fuser || s.model.moe.has_value());
    // Likewise the busiest rank's share, which dropless MoE reads.
    SetValue(moe_imbalance_, p.moe_imbalance);
    moe_imbalance_->setEnabled(p.moe_imbalance != 1 || (s.model.moe.has_value() && s.model.moe->capacity_factor <= 0));
    // Set where it does not apply (a precision or ZeRO stage changed after), it stays shown so that
    // validation names it.
    fp8_param_gather_->setChecked(p.fp8_param_gather);
    fp8_param_gather_->setEnabled(p.fp8_param_gather || p.Fp8ParamGatherApplies());
    // Shown while set even where it does not apply (validation names why), as fp8_param_gather.
    recompute_early_stop_->setChecked(p.recompute_early_stop);
    recompute_early_stop_->setEnabled(p.recompute_early_stop || p.recompute == core::Recompute::kFull);
    // Likewise the checkpoints in host memory, which are full recomputation's.
    offload_checkpoints_->setChecked(p.offload_checkpoints);
    offload_checkpoints_->setEnabled(p.offload_checkpoints || p.recompute == core::Recompute::kFull);
    // Shown while set even without TP and SP (it then changes nothing), as fp8_param_gather.
    dtensor_tp_->setChecked(p.dtensor_tp);
    dtensor_tp_->setEnabled(p.dtensor_tp || (p.tp > 1 && p.sequence_parallel));
    // Likewise without CP.
    torch_cp_->setChecked(p.torch_cp);
    torch_cp_->setEnabled(p.torch_cp || p.cp > 1);
  }
  SetValue(pp_flushes_, p.pp_flushes);
  pp_flushes_->setEnabled(p.pp > 1 || p.pp_flushes > 1);
  SetValue(mbs_, p.micro_batch);
  SetValue(gbs_, p.global_batch);
  SetValue(seq_, p.seq_len);
  SetValue(bf16_start_, p.bf16_layers_at_start);
  SetValue(bf16_end_, p.bf16_layers_at_end);
  // Only a quantized precision has layers to keep in BF16; a count set before the precision
  // changed stays in the plan, shown, so that validation names it (never silently dropped).
  const bool quantized = core::Quantized(p.precision);
  for (QSpinBox* b : {bf16_start_, bf16_end_}) b->setEnabled(quantized || b->value() > 0);
  // The same for a count of recomputed layers outside full recompute.
  SetValue(recompute_layers_, p.recompute_layers);
  SetValue(vocab_divisible_by_, p.vocab_divisible_by);
  recompute_layers_->setEnabled(p.recompute == core::Recompute::kFull || p.recompute_layers > 0);
  SetValue(offload_activations_, p.offload_activation_layers);
  ShowModules(recompute_modules_, p.recompute_modules, core::RecomputeModulesString(p.recompute_modules));
  // Shown while changed from the default even outside selective recompute (it then changes
  // nothing), as recompute_early_stop.
  recompute_modules_->setEnabled(p.recompute == core::Recompute::kSelective ||
                                 p.recompute_modules != core::kDefaultRecomputeModules);
  ShowModules(offload_modules_, p.offload_modules, core::OffloadModulesString(p.offload_modules));

  QString html;
  if (!error_.isEmpty()) html += "<p style='color:#b00000'><b>Could not load:</b> " + error_.toHtmlEscaped() + "</p>";
  if (!e.errors.isEmpty()) {
    html += "<p style='color:#b00000'><b>The plan does not validate:</b><br>";
    for (const auto& x : e.errors) html += x.toHtmlEscaped() + "<br>";
    html += "</p>";
  }
  if (!e.warnings.isEmpty()) {
    html += "<p style='color:#8a4b00'>";
    for (const auto& x : e.warnings) html += x.toHtmlEscaped() + "<br>";
    html += "</p>";
  }
  if (e.valid)
    html += QString("<p style='color:#555'>evaluated in %1 ms (memory, step, cost%2)</p>")
                .arg(e.eval_ms, 0, 'f', 2)
                .arg(e.timeline_state == Evaluation::Pending::kReady ? ", timeline" : "");
  messages_->setText(html);
}

}  // namespace meshplan::gui
