#include "core/specs.h"

#include <array>
#include <utility>

namespace meshplan::core {
namespace {

// One table per enum: the value and its name. Aliases follow the canonical spelling.
template <typename E>
struct NameTable;

#define MESHPLAN_NAMES(E, ...)                                             \
  template <>                                                              \
  struct NameTable<E> {                                                    \
    static constexpr std::pair<E, const char*> kEntries[] = {__VA_ARGS__}; \
  };

MESHPLAN_NAMES(MlpKind, {MlpKind::kGelu, "gelu"}, {MlpKind::kSwiglu, "swiglu"})
MESHPLAN_NAMES(NormKind, {NormKind::kLayerNorm, "layernorm"}, {NormKind::kRmsNorm, "rmsnorm"})
MESHPLAN_NAMES(PositionKind, {PositionKind::kLearned, "learned"}, {PositionKind::kRope, "rope"},
               {PositionKind::kAlibi, "alibi"}, {PositionKind::kNone, "none"})
MESHPLAN_NAMES(BiasKind, {BiasKind::kNone, "none"}, {BiasKind::kQkv, "qkv"}, {BiasKind::kAll, "all"})
MESHPLAN_NAMES(AttentionImpl, {AttentionImpl::kFlash, "flash"}, {AttentionImpl::kNaive, "naive"},
               {AttentionImpl::kFlash2, "flash2"}, {AttentionImpl::kFlash1, "flash1"},
               {AttentionImpl::kTriton, "triton"}, {AttentionImpl::kCudnn913, "cudnn-9.13"},
               {AttentionImpl::kCudnnFp8, "cudnn-fp8"})
MESHPLAN_NAMES(RouterKind, {RouterKind::kSoftmax, "softmax"}, {RouterKind::kSigmoid, "sigmoid"})
MESHPLAN_NAMES(Dtype, {Dtype::kFp32, "fp32"}, {Dtype::kTf32, "tf32"}, {Dtype::kBf16, "bf16"}, {Dtype::kFp16, "fp16"},
               {Dtype::kFp8, "fp8"}, {Dtype::kInt8, "int8"}, {Dtype::kNone, "none"}, {Dtype::kNvfp4, "nvfp4"})
MESHPLAN_NAMES(Topology, {Topology::kRailOptimizedFatTree, "rail-optimized-fat-tree"}, {Topology::kFatTree, "fat-tree"},
               {Topology::kTorus, "torus"}, {Topology::kSingleSwitch, "single-switch"})
MESHPLAN_NAMES(Sharding, {Sharding::kFsdp, "fsdp"}, {Sharding::kHsdp, "hsdp"})
MESHPLAN_NAMES(Recompute, {Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"})
MESHPLAN_NAMES(RecomputeModule, {RecomputeModule::kCoreAttn, "core_attn"}, {RecomputeModule::kMoeAct, "moe_act"},
               {RecomputeModule::kLayernorm, "layernorm"}, {RecomputeModule::kMlaUpProj, "mla_up_proj"},
               {RecomputeModule::kMlp, "mlp"}, {RecomputeModule::kSharedExperts, "shared_experts"},
               {RecomputeModule::kTorchtitanOp, "torchtitan_op"}, {RecomputeModule::kSaveQkvProj, "save_qkv_proj"},
               {RecomputeModule::kMoe, "moe"})
MESHPLAN_NAMES(Schedule, {Schedule::kGpipe, "gpipe"}, {Schedule::k1F1B, "1f1b"},
               {Schedule::kInterleaved, "interleaved"}, {Schedule::kZeroBubble, "zero-bubble"},
               {Schedule::kDualPipe, "dualpipe"})
MESHPLAN_NAMES(Optimizer, {Optimizer::kAdam, "adam"}, {Optimizer::kAdamW, "adamw"},
               {Optimizer::kSgdMomentum, "sgd-momentum"}, {Optimizer::kAdam8bit, "adam-8bit"},
               {Optimizer::kMuon, "muon"})
MESHPLAN_NAMES(OffloadTarget, {OffloadTarget::kNone, "none"}, {OffloadTarget::kCpu, "cpu"},
               {OffloadTarget::kNvme, "nvme"})
MESHPLAN_NAMES(OffloadModule, {OffloadModule::kAttnNorm, "attn_norm"}, {OffloadModule::kQkvLinear, "qkv_linear"},
               {OffloadModule::kCoreAttn, "core_attn"}, {OffloadModule::kAttnProj, "attn_proj"},
               {OffloadModule::kMlpNorm, "mlp_norm"}, {OffloadModule::kExpertFc1, "expert_fc1"},
               {OffloadModule::kMoeAct, "moe_act"}, {OffloadModule::kFusedGroupMlp, "fused_group_mlp"})
MESHPLAN_NAMES(CpKind, {CpKind::kRing, "ring"}, {CpKind::kUlysses, "ulysses"}, {CpKind::kAllGather, "allgather"})
MESHPLAN_NAMES(Axis, {Axis::kTp, "tp"}, {Axis::kCp, "cp"}, {Axis::kEp, "ep"}, {Axis::kDp, "dp"}, {Axis::kPp, "pp"})
MESHPLAN_NAMES(TpOverlap, {TpOverlap::kNone, "none"}, {TpOverlap::kBackward, "backward"}, {TpOverlap::kFull, "full"},
               {TpOverlap::kAsync, "async"})
MESHPLAN_NAMES(Zero3Gather, {Zero3Gather::kFlat, "flat"}, {Zero3Gather::kPerTensor, "per-tensor"},
               {Zero3Gather::kFsdp2, "fsdp2"}, {Zero3Gather::kFsdp1, "fsdp1"})
MESHPLAN_NAMES(Fp8Scaling, {Fp8Scaling::kDelayed, "delayed"}, {Fp8Scaling::kCurrent, "current"},
               {Fp8Scaling::kBlock, "block"})
MESHPLAN_NAMES(CrossEntropy, {CrossEntropy::kFused, "fused"}, {CrossEntropy::kUpcast, "upcast"},
               {CrossEntropy::kFlash, "flash"}, {CrossEntropy::kNative, "native"}, {CrossEntropy::kTe, "te"},
               {CrossEntropy::kTeInplace, "te-inplace"}, {CrossEntropy::kCompiled, "compiled"},
               {CrossEntropy::kPlain, "plain"})
MESHPLAN_NAMES(Elementwise, {Elementwise::kFused, "fused"}, {Elementwise::kEager, "eager"},
               {Elementwise::kEagerFusedNorm, "eager-fused-norm"})
MESHPLAN_NAMES(MoeDispatcher, {MoeDispatcher::kAllToAll, "alltoall"}, {MoeDispatcher::kFlex, "flex"})
MESHPLAN_NAMES(MoeRouting, {MoeRouting::kUniform, "uniform"}, {MoeRouting::kRoundRobin, "round-robin"})
MESHPLAN_NAMES(MoeHost, {MoeHost::kMegatronCore, "megatron-core"}, {MoeHost::kNone, "none"})
MESHPLAN_NAMES(MoeProbs, {MoeProbs::kFused, "fused"}, {MoeProbs::kActivation, "activation"},
               {MoeProbs::kUnpermute, "unpermute"})
MESHPLAN_NAMES(ExpertBias, {ExpertBias::kFused, "fused"}, {ExpertBias::kPerExpert, "per-expert"},
               {ExpertBias::kPerExpertFp32, "per-expert-fp32"})
#undef MESHPLAN_NAMES

template <typename E>
const char* NameOf(E v) {
  for (const auto& [value, name] : NameTable<E>::kEntries)
    if (value == v) return name;
  return "?";
}

template <typename E>
bool Parse(const std::string& text, E* out) {
  for (const auto& [value, name] : NameTable<E>::kEntries) {
    if (text == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace

template <typename E>
std::string Choices() {
  std::string s;
  for (const auto& [value, name] : NameTable<E>::kEntries) {
    if (!s.empty()) s += "|";
    s += name;
  }
  return s;
}

#define MESHPLAN_ENUM_FUNCS(E)                                                \
  const char* Name(E v) { return NameOf(v); }                                 \
  bool FromName(const std::string& text, E* out) { return Parse(text, out); } \
  template std::string Choices<E>();
MESHPLAN_ENUM_FUNCS(MlpKind)
MESHPLAN_ENUM_FUNCS(NormKind)
MESHPLAN_ENUM_FUNCS(PositionKind)
MESHPLAN_ENUM_FUNCS(BiasKind)
MESHPLAN_ENUM_FUNCS(AttentionImpl)
MESHPLAN_ENUM_FUNCS(RouterKind)
MESHPLAN_ENUM_FUNCS(Dtype)
MESHPLAN_ENUM_FUNCS(Topology)
MESHPLAN_ENUM_FUNCS(Sharding)
MESHPLAN_ENUM_FUNCS(Recompute)
MESHPLAN_ENUM_FUNCS(RecomputeModule)
MESHPLAN_ENUM_FUNCS(Schedule)
MESHPLAN_ENUM_FUNCS(Optimizer)
MESHPLAN_ENUM_FUNCS(OffloadTarget)
MESHPLAN_ENUM_FUNCS(OffloadModule)
MESHPLAN_ENUM_FUNCS(CpKind)
MESHPLAN_ENUM_FUNCS(Axis)
MESHPLAN_ENUM_FUNCS(TpOverlap)
MESHPLAN_ENUM_FUNCS(Zero3Gather)
MESHPLAN_ENUM_FUNCS(Fp8Scaling)
MESHPLAN_ENUM_FUNCS(CrossEntropy)
MESHPLAN_ENUM_FUNCS(Elementwise)
MESHPLAN_ENUM_FUNCS(MoeDispatcher)
MESHPLAN_ENUM_FUNCS(MoeRouting)
MESHPLAN_ENUM_FUNCS(MoeHost)
MESHPLAN_ENUM_FUNCS(MoeProbs)
MESHPLAN_ENUM_FUNCS(ExpertBias)
#undef MESHPLAN_ENUM_FUNCS

HybridCounts ModelSpec::HybridLayerCounts() const {
  HybridCounts c;
  for (char ch : hybrid_pattern) {
    if (ch == 'M') ++c.mamba;
    else if (ch == '*') ++c.attention;
    else if (ch == '-') ++c.mlp;
    else if (ch == 'E') ++c.moe;
  }
  return c;
}

HybridCounts ModelSpec::HybridCostedCounts() const {
  HybridCounts c = HybridLayerCounts();
  for (char ch : mtp_pattern) {
    const int64_t n = mtp_layers;
    if (ch == 'M') c.mamba += n;
    else if (ch == '*') c.attention += n;
    else if (ch == '-') c.mlp += n;
    else if (ch == 'E') c.moe += n;
  }
  return c;
}

bool ModelSpec::IsMoeLayer(int64_t layer) const {
  if (!moe) return false;
  if (Hybrid()) return HybridHasMoe();
  if (layer < moe->first_dense_layers) return false;
  return (layer - moe->first_dense_layers) % moe->layer_freq == 0;
}

int64_t ModelSpec::MoeLayerCount() const { return MoeLayersBefore(layers); }

bool ModelSpec::IsWindowedLayer(int64_t layer) const {
  if (sliding_window <= 0) return false;
  return global_attention_every <= 0 || (layer + 1) % global_attention_every != 0;
}

int64_t ModelSpec::WindowedLayerCount(bool moe_layers) const {
  if (sliding_window <= 0) return 0;
  int64_t n = 0;
  for (int64_t i = 0; i < layers; ++i)
    if (IsMoeLayer(i) == moe_layers && IsWindowedLayer(i)) ++n;
  return n;
}

namespace {

// A set of module names as bits (bit i for the enum's value i), to text and back.
template <typename E>
std::string ModulesString(uint32_t modules) {
  std::string s;
  for (const auto& [value, name] : NameTable<E>::kEntries) {
    if ((modules & (uint32_t{1} << static_cast<int>(value))) == 0) continue;
    if (!s.empty()) s += ",";
    s += name;
  }
  return s;
}

template <typename E>
bool ParseModules(const std::string& text, uint32_t* out) {
  uint32_t modules = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    E m;
    if (!Parse(text.substr(start, end - start), &m)) return false;
    const uint32_t bit = uint32_t{1} << static_cast<int>(m);
    if ((modules & bit) != 0) return false;
    modules |= bit;
    start = end + 1;
  }
  *out = modules;
  return true;
}

}  // namespace

std::string RecomputeModulesString(uint32_t modules) { return ModulesString<RecomputeModule>(modules); }
bool ParseRecomputeModules(const std::string& text, uint32_t* out) { return ParseModules<RecomputeModule>(text, out); }
std::string OffloadModulesString(uint32_t modules) { return ModulesString<OffloadModule>(modules); }
bool ParseOffloadModules(const std::string& text, uint32_t* out) { return ParseModules<OffloadModule>(text, out); }

int64_t PaddedVocab(const ModelSpec& m, const PlanSpec& p) {
  if (p.vocab_divisible_by <= 1) return m.vocab;  // the model's, as it is (the head splits it ceil(V/t) a rank)
  const int64_t multiple = p.vocab_divisible_by * std::max<int64_t>(p.tp, 1);
  return (m.vocab + multiple - 1) / multiple * multiple;
}

const char* RecomputeEarlyStopBlocker(const ModelSpec& m, const PlanSpec& p) {
  if (p.transformer_engine) return "Transformer Engine's linear layers save their inputs after their GEMM";
  if (Quantized(p.precision)) return "FP8 linear layers save their inputs after their GEMM";
  if (m.dropout) return "the dropout after the MLP saves its mask last";
  if (m.moe || m.mamba || m.mla) return "MoE, Mamba or MLA blocks, whose last saved tensor is not traced";
  return nullptr;
}

std::string ApplyRecomputeEarlyStop(const ModelSpec& m, PlanSpec* p) {
  if (p->recompute != Recompute::kFull) return "";
  if (const char* why_not = RecomputeEarlyStopBlocker(m, *p))
    return std::string("checkpoint early stop not applied (") + why_not + ")";
  p->recompute_early_stop = true;
  return "full recomputation stops at the block's last saved tensor (PyTorch's non-reentrant checkpoint, early stop): "
         "the MLP output projection and the residual are not rerun";
}

std::string PlacementString(const std::vector<Axis>& order) {
  std::string s;
  for (Axis a : order) {
    if (!s.empty()) s += "-";
    s += Name(a);
  }
  return s;
}

bool ParsePlacement(const std::string& text, std::vector<Axis>* out) {
  std::vector<Axis> order;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('-', start);
    if (end == std::string::npos) end = text.size();
    Axis a;
    if (!FromName(text.substr(start, end - start), &a)) return false;
    for (Axis seen : order)
      if (seen == a) return false;
    order.push_back(a);
    start = end + 1;
  }
  if (order.size() != 5) return false;
  *out = std::move(order);
  return true;
}

}  // namespace meshplan::core
