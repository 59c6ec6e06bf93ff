#include "runtime/executor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "core/memory.h"
#include "core/schedule.h"
#include "core/units.h"
#include "runtime/bench.h"
#include "runtime/status_macros.h"

namespace meshplan::runtime {

using core::CollectiveKind;
using core::CommGroup;
using core::Dtype;
using core::Op;
using core::OpKind;
using core::Pass;
using core::Result;
using core::Status;

namespace {

enum class MemKernel { kNorm, kActivation, kSoftmax, kAdd };

// The kernel that runs a memory-bound op, by what the step graph says it computes.
MemKernel KernelFor(core::MemOp what) {
  switch (what) {
    case core::MemOp::kNorm: return MemKernel::kNorm;
    case core::MemOp::kActivation: return MemKernel::kActivation;
    case core::MemOp::kSoftmax:
    case core::MemOp::kRouter:
    case core::MemOp::kCrossEntropy: return MemKernel::kSoftmax;
    default: return MemKernel::kAdd;  // copies, adds, permutes, quantization, rope: bytes moved
  }
}

// [numel / last, last] when `last` divides numel, else [1, numel].
std::vector<int64_t> Rows(int64_t numel, int64_t last) {
  numel = std::max<int64_t>(numel, 1);
  if (last > 0 && numel >= last && numel % last == 0) return {numel / last, last};
  return {1, numel};
}

// The tensors of one op shape, shared by every layer and microbatch that runs it.
struct Buffers {
  std::vector<Tensor> t;  // meaning by op kind; see Prepare()
  MemKernel kernel = MemKernel::kAdd;
};

struct Slot {
  std::string section;
  int64_t index = 0;
  Op op;
  Buffers* buffers = nullptr;
  Communicator* comm = nullptr;  // real group (collective, p2p)
  bool send = false;             // p2p: send (else receive)
  bool gradient = false;         // p2p: the input gradient (else the activation)
  bool modeled = false;
  double predicted_s = 0;
  // Accumulated over the timed steps.
  double time_s = 0;
  int64_t calls = 0;
};

// One list instance's optimizer states: the shard of the rank's model states its optimizer op
// updates (param = master weights, or the working weights when there are none).
struct OptimizerState {
  Tensor param, grad, m, v;
};

// Neither backend stores int8 (8-bit Adam's moments): such bytes, and a state without a dtype, are
// held as fp32 of the same byte count.
Dtype Storable(Dtype d) { return d == Dtype::kInt8 || d == Dtype::kNone ? Dtype::kFp32 : d; }
// Elements of `d` that hold `bytes` (rounded up; none for a count at or below 0).
int64_t NumelOf(int64_t bytes, Dtype d) {
  const int64_t e = std::max<int64_t>(core::DtypeBytes(d), 1);
  return (std::max<int64_t>(bytes, 0) + e - 1) / e;
}

// Where an executor tensor's bytes count (StepMemory::held).
enum class Use { kWorkingSet, kWeights, kGrads, kMasterWeights, kMoments, kActivations, kStepCopy, kBuffers };
constexpr int kUses = 8;

class Executor {
 public:
  Executor(Backend& backend, const core::Scenario& s, const ExecutorOptions& o, const RankGroups& g)
      : be_(backend), s_(s), p_(s.plan), o_(o), groups_(g), vp_(TopologyOf(s.plan)) {}

  Result<Measurement> Run() {
    if (o_.rank < 0 || o_.rank >= p_.gpus)
      return Status::InvalidArgument("executor: rank " + std::to_string(o_.rank) + " is outside the plan's " +
                                     std::to_string(p_.gpus) + " ranks");
    if (o_.steps < 1 || o_.warmup_steps < 0)
      return Status::InvalidArgument("executor: steps must be >= 1 and warmup steps >= 0");
    if (s_.model.Hybrid())
      return Status::InvalidArgument("executor: model " + s_.model.name +
                                     " is hybrid (model.hybrid_pattern): the runtime has no Mamba kernels and runs "
                                     "transformer layers only");
    if (p_.offload_activation_layers > 0)
      return Status::InvalidArgument(
          "executor: plan.offload.activation_layers " + std::to_string(p_.offload_activation_layers) +
          ": the runtime does not copy activations to host memory and back, so it would measure neither the "
          "copies nor the memory they free; run the plan without --offload-activations");
    if (p_.offload_modules != 0)
      return Status::InvalidArgument(
          "executor: plan.offload.modules " + core::OffloadModulesString(p_.offload_modules) +
          ": the runtime does not copy modules' saved tensors to host memory and back, so it would measure neither "
          "the copies nor the memory they free; run the plan without --offload-modules");
    if (p_.offload_optimizer != core::OffloadTarget::kNone || p_.offload_params != core::OffloadTarget::kNone)
      return Status::InvalidArgument(
          "executor: plan.offload.optimizer/params: the runtime keeps the optimizer's states and the parameters on "
          "the device and steps the optimizer there, so it would measure neither the host's step nor the copies; "
          "run the plan without --offload-optimizer and --offload-params");
    if (p_.offload_checkpoints)
      return Status::InvalidArgument(
          "executor: plan.offload.checkpoints: the runtime keeps its recomputation's checkpoints on the device and "
          "does not copy them to host memory and back, so it would measure neither the copies nor the memory they "
          "free; run the plan without --offload-checkpoints");
    if (p_.HasBf16Layers())
      return Status::InvalidArgument(
          "executor: plan.bf16_layers_at_start/_at_end: the runtime runs every layer's GEMMs in the plan's one "
          "precision, so it would measure the BF16 layers in " +
          std::string(core::Name(p_.precision)) + "; run the plan without --bf16-layers-at-start/--bf16-layers-at-end");
    if (p_.fp8_attention)
      return Status::InvalidArgument(
          "executor: plan.fp8_attention: the runtime's attention is its own 16-bit kernel, not cuDNN's FP8 fused "
          "attention, so it would measure 16-bit attention; run the plan without --fp8-attention");
    if (p_.precision == Dtype::kNvfp4)
      return Status::InvalidArgument(
          "executor: plan.precision nvfp4: the runtime has no NVFP4 GEMMs (its GEMMs are cuBLAS fp32, bf16, fp16 and "
          "fp8), so it would measure another precision; run the plan with --precision fp8 or bf16");
    seed_ = o_.seed * 1000003;
    graph_ = core::BuildStepGraph(s_.model, p_);
    stage_ = StageOfRank(p_, o_.rank);
    act_ = (p_.precision == Dtype::kFp32 || p_.precision == Dtype::kTf32) ? Dtype::kFp32
           : p_.precision == Dtype::kFp16                                 ? Dtype::kFp16
                                                                          : Dtype::kBf16;
    MESHPLAN_RETURN_IF_ERROR(BuildCommunicators());
    MESHPLAN_RETURN_IF_ERROR(BuildProgram());
    for (core::StageMemory& st : core::EstimateMemory(s_.model, p_, s_.gpu, o_.profile.memory).stages)
      if (st.stage == stage_) stage_memory_ = std::move(st);
    // The peak GEMM (cpu) allocates its own tensors: measured first, so that the peak below is
    // this run's tensors only.
    MESHPLAN_ASSIGN_OR_RETURN(DevicePeak peak, Peak());
    be_.ResetPeakMemory();
    MESHPLAN_RETURN_IF_ERROR(Prepare());
    if (o_.hold_training_state) MESHPLAN_RETURN_IF_ERROR(HoldTrainingState());

    std::vector<double> step_times;
    for (int step = 0; step < o_.warmup_steps + o_.steps; ++step) {
      const bool timed = step >= o_.warmup_steps;
      if (groups_.world != nullptr) MESHPLAN_RETURN_IF_ERROR(groups_.world->Barrier("step start"));
      MESHPLAN_ASSIGN_OR_RETURN(double t, RunStep(step, timed));
      if (timed) step_times.push_back(t);
    }
    return Finish(peak, step_times);
  }

 private:
  // ---- setup
  Status BuildCommunicators() {
    self_ = MakeSelfComm("self");
    MESHPLAN_ASSIGN_OR_RETURN(self_comm_, be_.CreateCommunicator(self_.get()));
    for (int g = 0; g < core::kCommGroups; ++g) {
      HostComm* h = groups_.groups[static_cast<size_t>(g)];
      // This rank's members (a middle stage's rank is alone in the pipeline's ends).
      const auto want = static_cast<int64_t>(GroupMembers(static_cast<CommGroup>(g), p_, o_.rank).size());
      if (h == nullptr || want <= 1) continue;
      if (h->size() != want)
        return Status::InvalidArgument(std::string("executor: group ") + core::Name(static_cast<CommGroup>(g)) +
                                       " has " + std::to_string(h->size()) + " ranks, the plan says " +
                                       std::to_string(want));
      MESHPLAN_ASSIGN_OR_RETURN(comms_[static_cast<size_t>(g)], be_.CreateCommunicator(h));
    }
    return Status::Ok();
  }

  // The model chunks this stage runs (each a list of sections in forward order), one Slot per
  // op of each list, and the stage's pipeline program.
  Status BuildProgram() {
    AddSection("embedding", graph_.embedding);
    AddSection("dense_layer", graph_.dense_layer);
    AddSection("moe_layer", graph_.moe_layer);
    AddSection("head", graph_.head);
    int64_t local = 0;
    core::ForEachStageChunk(s_.model, p_, stage_, [&](int64_t first, int64_t count) {
      Chunk c;
      c.vstage = vp_.VStage(stage_, local++);
      if (first == 0 && count > 0) c.lists.push_back(0);
      for (int64_t l = first; l < first + count; ++l) c.lists.push_back(s_.model.IsMoeLayer(l) ? 2 : 1);
      if (first + count == s_.model.layers && count > 0) {
        // The MTP modules' layers (the simulator's StageCompositionOf counts them the same way);
        // their embedding, norms, eh_proj and heads are in the head list.
        for (int64_t d = 0; d < s_.model.mtp_layers; ++d) c.lists.push_back(s_.model.MtpLayerIsMoe() ? 2 : 1);
        c.lists.push_back(3);
      }
      chunks_.push_back(c);
    });
    for (const Chunk& c : chunks_) {
      if (c.lists.empty())
        return Status::InvalidArgument("executor: stage " + std::to_string(stage_) + " holds an empty model chunk");
      forward_lists_.insert(forward_lists_.end(), c.lists.begin(), c.lists.end());
    }
    if (forward_lists_.empty())
      return Status::InvalidArgument("executor: stage " + std::to_string(stage_) + " holds no layers");
    MESHPLAN_ASSIGN_OR_RETURN(program_, PipelineProgram(p_, stage_));
    if (static_cast<int64_t>(chunks_.size()) != vp_.chunks)
      return Status::Internal("executor: stage " + std::to_string(stage_) + " holds " + std::to_string(chunks_.size()) +
                              " model chunks, its " + core::Name(p_.schedule) + " order " + std::to_string(vp_.chunks));
    split_weight_ = core::SplitsWeightGradients(p_.schedule);

    // Pipeline transfers: the program's real sends and receives in an MPI run, else the
    // simulator's charge of one activation transfer per F and one gradient transfer per B, modeled.
    if (p_.pp > 1) {
      sections_.push_back({"pipeline", {}});
      auto& sec = sections_.back().slots;
      auto add = [&](const char* name, Pass pass, bool send, bool gradient) {
        Slot sl;
        sl.section = "pipeline";
        sl.index = static_cast<int64_t>(sec.size());
        sl.op = graph_.p2p;
        sl.op.name = name;
        sl.op.pass = pass;
        sl.send = send;
        sl.gradient = gradient;
        sec.push_back(sl);
      };
      if (RealGroup(CommGroup::kPp)) {
        auto used = [&](PipeAction::Kind kind, bool gradient) {
          return std::any_of(program_.begin(), program_.end(),
                             [&](const PipeAction& a) { return a.kind == kind && a.message.gradient == gradient; });
        };
        if (used(PipeAction::kRecv, false)) add("pipeline_recv_activation", Pass::kForward, false, false);
        if (used(PipeAction::kSend, false)) add("pipeline_send_activation", Pass::kForward, true, false);
        if (used(PipeAction::kRecv, true)) add("pipeline_recv_gradient", Pass::kBackwardInput, false, true);
        if (used(PipeAction::kSend, true)) add("pipeline_send_gradient", Pass::kBackwardInput, true, true);
      } else {
        add("pipeline_send", Pass::kForward, true, false);
        add("pipeline_send", Pass::kBackwardInput, true, true);
      }
    }
    for (auto& sec : sections_)
      for (Slot& sl : sec.slots) ClassifyComm(&sl);
    return Status::Ok();
  }

  void AddSection(const char* name, const std::vector<Op>& ops) {
    sections_.push_back({name, {}});
    for (size_t i = 0; i < ops.size(); ++i) {
      Slot sl;
      sl.section = name;
      sl.index = static_cast<int64_t>(i);
      sl.op = ops[i];
      sections_.back().slots.push_back(sl);
    }
  }

  bool RealGroup(CommGroup g) const { return comms_[static_cast<size_t>(g)] != nullptr; }

  void ClassifyComm(Slot* sl) {
    if (sl->op.kind != OpKind::kCollective && sl->op.kind != OpKind::kP2p) return;
    const int64_t size = core::LayoutOfGroup(sl->op.group, p_).size;
    if (size <= 1) {
      sl->comm = self_comm_.get();
      return;
    }
    if (RealGroup(sl->op.group)) {
      sl->comm = comms_[static_cast<size_t>(sl->op.group)].get();
      return;
    }
    sl->modeled = true;
    sl->predicted_s = core::CollectiveTime(sl->op.collective, sl->op.bytes,
                                           core::SpanOfGroup(sl->op.group, p_, s_.cluster), s_.cluster, o_.profile.comm)
                          .time_s;
  }

  // Allocates (once per distinct shape) and initialises every executed op's tensors, running
  // each forward once so that backward ops find saved tensors. The optimizer op has tensors of
  // its own only when the model states cannot feed it (HoldTrainingState).
  Status Prepare() {
    states_feed_optimizer_ = o_.hold_training_state && OptimizerShardParams() > 0;
    for (auto& sec : sections_) {
      for (Slot& sl : sec.slots) {
        if (sl.modeled || !Executes(sec.name)) continue;
        if (sl.op.kind == OpKind::kOptimizer && states_feed_optimizer_) continue;
        MESHPLAN_ASSIGN_OR_RETURN(sl.buffers, BuffersFor(sl));
      }
    }
    return Status::Ok();
  }
  bool Executes(const std::string& section) const {
    if (section == "pipeline") return true;
    const int id = section == "embedding" ? 0 : section == "dense_layer" ? 1 : section == "moe_layer" ? 2 : 3;
    return std::find(forward_lists_.begin(), forward_lists_.end(), id) != forward_lists_.end();
  }

  // A tensor held for the run, counted under `use` in logical bytes (StepMemory::held). While
  // sizing_ (HoldTrainingState's first pass), only counts its elements and returns no tensor.
  Result<Tensor> New(const std::vector<int64_t>& shape, Dtype d, bool random, Use use = Use::kWorkingSet) {
    if (sizing_) {
      int64_t n = 1;
      for (int64_t x : shape) n *= x;
      sized_elements_[d] += n;
      return Tensor();
    }
    MESHPLAN_ASSIGN_OR_RETURN(Tensor t, be_.Allocate(shape, d));
    if (random) MESHPLAN_RETURN_IF_ERROR(be_.FillRandom(&t, ++seed_, 1.0f));
    else MESHPLAN_RETURN_IF_ERROR(be_.Fill(&t, 0.0f));
    held_[static_cast<size_t>(use)] += t.bytes();
    held_by_dtype_[d] += t.bytes();
    return t;
  }

  // ---- the training state (ExecutorOptions::hold_training_state)

  // Parameters of this rank's optimizer shard when the model states can feed the AdamW kernel
  // (Adam/AdamW with fp32 moments on this GPU), else 0.
  int64_t OptimizerShardParams() const {
    const core::StageMemory& sm = stage_memory_;
    const bool adam = p_.optimizer == core::Optimizer::kAdam || p_.optimizer == core::Optimizer::kAdamW;
    if (!adam || p_.dtypes.optimizer_states != Dtype::kFp32 || sm.optimizer_moments_bytes <= 0) return 0;
    return sm.optimizer_moments_bytes / (2 * core::DtypeBytes(Dtype::kFp32));  // m and v, fp32
  }

  // DeepSpeed's BF16_Optimizer (plan.keep_lp_grads): its kept weights-dtype gradients are the
  // weights-dtype image of the fp32 gradient buffer, as large as the step's all-reduce copy
  // (core::StageMemory::step_copy_bytes: grads_bytes x w / (g + w)).
  int64_t KeptLowPrecisionGradBytes() const { return stage_memory_.step_copy_bytes; }
  // Whether the memory model keeps the step copy on top of the cached activations (the GPU has
  // room for both); otherwise the allocator frees its cached blocks for it at each step.
  bool StepCopyCached() const {
    const core::StageMemory& sm = stage_memory_;
    return p_.keep_lp_grads && sm.step_copy_bytes > 0 && sm.step_copy_on_top_bytes >= sm.step_copy_bytes;
  }
  bool StepCopyReleasesActivations() const {
    return p_.keep_lp_grads && o_.hold_training_state && stage_memory_.step_copy_bytes > 0 && !StepCopyCached();
  }

  // Allocates what the memory model says this rank's stage holds besides the op buffers: model
  // states (split over the list instances' optimizer ops in proportion to their bytes, which the
  // step graph sizes from each list's parameter shard) and the activation pool.
  Status HoldTrainingState() {
    // First the sizes alone, then one tensor as large as all of them, given back at once: a state
    // that cannot fit fails here, before any of it is allocated and written (the cpu backend
    // checks a large allocation against the memory available; cuda's cudaMalloc fails).
    sizing_ = true;
    Status st = AllocateModelStates();
    if (st.ok()) st = AllocateActivationPool();
    if (st.ok()) st = AllocateBuffers();
    sizing_ = false;
    optimizer_states_.clear();
    states_.clear();
    stash_.clear();
    if (st.ok()) st = Probe();
    if (st.ok()) st = AllocateModelStates();
    if (st.ok()) st = AllocateActivationPool();
    if (st.ok()) st = AllocateBuffers();
    if (st.ok() || st.code() != Status::Code::kUnavailable) return st;
    const core::StageMemory& sm = stage_memory_;
    return Status::Unavailable(
        "executor: rank " + std::to_string(o_.rank) + " cannot hold its training state (the memory model's " +
        core::FormatBytes(sm.weights_bytes + sm.grads_bytes + sm.optimizer_bytes) + " of model states and " +
        core::FormatBytes(sm.activations_bytes) + " of activations for stage " + std::to_string(stage_) +
        "): " + st.message() +
        "; run with hold_training_state off (meshplan-run --working-set-only) to measure the op buffers alone");
  }

  // Allocates and releases, as one fp32 tensor, the storage the sized elements take on this
  // backend (bytes per element of each dtype read from the backend's MemoryStats).
  Status Probe() {
    auto stored_per_element = [&](Dtype d) -> Result<double> {
      const int64_t before = be_.Memory().current_bytes;
      MESHPLAN_ASSIGN_OR_RETURN(Tensor t, be_.Allocate({1024}, d));
      return static_cast<double>(be_.Memory().current_bytes - before) / 1024.0;
    };
    double bytes = 0;
    for (const auto& [d, n] : sized_elements_) {
      MESHPLAN_ASSIGN_OR_RETURN(const double per, stored_per_element(d));
      bytes += per * static_cast<double>(n);
    }
    MESHPLAN_ASSIGN_OR_RETURN(const double fp32, stored_per_element(Dtype::kFp32));
    if (bytes <= 0 || fp32 <= 0) return Status::Ok();
    MESHPLAN_ASSIGN_OR_RETURN(Tensor all, be_.Allocate({static_cast<int64_t>(std::ceil(bytes / fp32))}, Dtype::kFp32));
    return Status::Ok();  // `all` is given back here
  }

  Status AllocateModelStates() {
    const core::StageMemory& sm = stage_memory_;
    const core::StateDtypes& d = p_.dtypes;
    // DeepSpeed's BF16_Optimizer (plan.keep_lp_grads): the gradient bytes are the fp32 buffer and
    // the weights-dtype gradients kept beside it (core::EstimateMemory), held in their own dtypes.
    const int64_t kept_lp = p_.keep_lp_grads ? KeptLowPrecisionGradBytes() : 0;
    const int64_t weights = NumelOf(sm.weights_bytes, d.weights), grads = NumelOf(sm.grads_bytes - kept_lp, d.grads);
    const bool master = d.master_weights != Dtype::kNone && sm.master_weights_bytes > 0;
    const int64_t shard = states_feed_optimizer_ ? OptimizerShardParams() : 0;
    int64_t rest_weights = weights, rest_grads = grads;
    if (shard > 0) {
      // One state per list instance, `shard` parameters in all: param (master weights, else the
      // working weights), the gradients it reads, m and v.
      std::vector<int64_t> bytes;
      for (const Chunk& c : chunks_)
        for (int id : c.lists) {
          int64_t b = 0;
          for (const Slot& sl : sections_[static_cast<size_t>(id)].slots)
            if (sl.op.kind == OpKind::kOptimizer) b += sl.op.bytes;
          bytes.push_back(b);
        }
      double total = 0;
      for (int64_t b : bytes) total += static_cast<double>(b);
      int64_t given = 0;
      const Dtype param_dtype = master ? d.master_weights : d.weights;
      for (size_t i = 0; i < bytes.size(); ++i) {
        int64_t n =
            total > 0 ? static_cast<int64_t>(static_cast<double>(shard) * static_cast<double>(bytes[i]) / total) : 0;
        if (i + 1 == bytes.size()) n = shard - given;  // the rounding remainder
        n = std::max<int64_t>(n, 0);
        given += n;
        OptimizerState s;
        MESHPLAN_ASSIGN_OR_RETURN(s.param,
                                  New({n}, Storable(param_dtype), true, master ? Use::kMasterWeights : Use::kWeights));
        MESHPLAN_ASSIGN_OR_RETURN(s.grad, New({n}, Storable(d.grads), true, Use::kGrads));
        MESHPLAN_ASSIGN_OR_RETURN(s.m, New({n}, Dtype::kFp32, true, Use::kMoments));
        MESHPLAN_ASSIGN_OR_RETURN(s.v, New({n}, Dtype::kFp32, false, Use::kMoments));
        if (!sizing_) MESHPLAN_RETURN_IF_ERROR(be_.Fill(&s.v, 0.01f));  // v >= 0
        optimizer_states_.push_back(s);
      }
      if (!master) rest_weights = std::max<int64_t>(weights - shard, 0);
      rest_grads = std::max<int64_t>(grads - shard, 0);
    }
    // What the optimizer does not touch here: the working weights (and the gradients outside the
    // shard: ZeRO-0/1 keep them all), and, when the states cannot feed the kernel, the rest.
    auto hold = [&](int64_t n, Dtype dtype, Use use) -> Status {
      MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New({n}, dtype, true, use));
      states_.push_back(std::move(t));
      return Status::Ok();
    };
    if (rest_weights > 0) MESHPLAN_RETURN_IF_ERROR(hold(rest_weights, Storable(d.weights), Use::kWeights));
    if (rest_grads > 0) MESHPLAN_RETURN_IF_ERROR(hold(rest_grads, Storable(d.grads), Use::kGrads));
    if (kept_lp > 0) MESHPLAN_RETURN_IF_ERROR(hold(NumelOf(kept_lp, d.weights), Storable(d.weights), Use::kGrads));
    // The step's all-reduce copy (core::StageMemory::step_copy_bytes), where the memory model
    // keeps it on top of the cached activations: the caching allocator keeps its block for the
    // rest of the run, so it is held from the start. Otherwise it is made at each step (StepCopy).
    if (StepCopyCached()) MESHPLAN_RETURN_IF_ERROR(HoldBytes(sm.step_copy_bytes, d.weights, Use::kStepCopy));
    if (shard == 0) {
      const Dtype mw = Storable(d.master_weights), md = Storable(d.optimizer_states);
      if (master) MESHPLAN_RETURN_IF_ERROR(hold(NumelOf(sm.master_weights_bytes, mw), mw, Use::kMasterWeights));
      if (sm.optimizer_moments_bytes > 0)
        MESHPLAN_RETURN_IF_ERROR(hold(NumelOf(sm.optimizer_moments_bytes, md), md, Use::kMoments));
    }
    return Status::Ok();
  }

  // The frameworks' other allocations the memory model names (core::FrameworkBufferBytes): the
  // gathered ZeRO-3/FSDP layers, Transformer Engine's workspaces, FSDP2's reduce-scatter and
  // all-gather pools, held as one tensor for the run; and the pipeline runtime's per-microbatch
  // buffers and the deferred head weight-gradient's kept logits gradients, which the memory model
  // counts with the activations (core::StageMemory::pipeline_buffers_bytes, deferred_wgrad_bytes),
  // as one more. Their contents are not used: they occupy what a training run keeps.
  Status AllocateBuffers() {
    const core::StageMemory& sm = stage_memory_;
    // In the weights' dtype: most of it is gathered weights.
    MESHPLAN_RETURN_IF_ERROR(HoldBytes(core::FrameworkBufferBytes(sm, p_), p_.dtypes.weights, Use::kBuffers));
    return HoldBytes(sm.pipeline_buffers_bytes + sm.deferred_wgrad_bytes, act_, Use::kActivations);
  }

  // One tensor of `bytes` (none for 0) in `d` as a backend stores it, held for the run under `use`
  // (its contents unused).
  Status HoldBytes(int64_t bytes, Dtype d, Use use) {
    if (bytes <= 0) return Status::Ok();
    MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New({NumelOf(bytes, Storable(d))}, Storable(d), false, use));
    states_.push_back(std::move(t));
    return Status::Ok();
  }

  // Activations one microbatch leaves saved on each chunk (core::LayerActivationBytes per layer
  // under the plan's recompute, as core::EstimateMemory counts them; the embedding's and the
  // loss's on the chunks holding the first and the last layer), and the pool: per buffer size,
  // as many buffers as the program ever has in flight.
  Status AllocateActivationPool() {
    const core::StageMemory& sm = stage_memory_;
    const bool full_all = p_.recompute == core::Recompute::kFull && p_.recompute_layers <= 0;
    int64_t on_rank = 0;      // layers of this rank visited, in execution order (recompute_layers)
    int64_t layer_bytes = 0;  // one microbatch through all of the rank's layers
    for (Chunk& c : chunks_) {
      c.layer_bytes = 0;
      for (int id : c.lists) {
        if (id != 1 && id != 2) continue;
        const bool full = full_all || (p_.recompute == core::Recompute::kFull && on_rank < p_.recompute_layers);
        const core::Recompute mode = full                                          ? core::Recompute::kFull
                                     : p_.recompute == core::Recompute::kSelective ? core::Recompute::kSelective
                                                                                   : core::Recompute::kNone;
        c.layer_bytes += core::LayerActivationBytes(s_.model, p_, id == 2, mode);
        ++on_rank;
      }
      c.activation_bytes = c.layer_bytes;
      for (int id : c.lists) {
        if (id == 0) c.activation_bytes += sm.embedding_activations_bytes;
        if (id == 3) c.activation_bytes += sm.loss_activations_bytes;
      }
      layer_bytes += c.layer_bytes;
    }
    const int64_t e = core::DtypeBytes(act_);
    std::map<int64_t, size_t> class_of_numel;
    for (Chunk& c : chunks_) {
      c.stash_class = -1;
      const int64_t n = (c.activation_bytes + e - 1) / e;
      if (n <= 0) continue;
      auto [it, fresh] = class_of_numel.try_emplace(n, stash_.size());
      if (fresh) stash_.push_back({n, {}});
      c.stash_class = static_cast<int>(it->second);
    }
    // The most buffers of each size in flight at once, walking the program; and the most layer
    // activations in flight, in units of the rank's layers (as core::StageMemory counts them).
    std::vector<int64_t> live(stash_.size(), 0), most(stash_.size(), 0);
    int64_t live_layer_bytes = 0, most_layer_bytes = 0;
    for (const PipeAction& a : program_) {
      if (a.kind != PipeAction::kRun) continue;
      const Chunk& c = chunks_[static_cast<size_t>(a.slot.chunk)];
      if (c.stash_class < 0) continue;
      auto& n = live[static_cast<size_t>(c.stash_class)];
      if (a.slot.pass == PipePass::kForward) {
        most[static_cast<size_t>(c.stash_class)] = std::max(most[static_cast<size_t>(c.stash_class)], ++n);
        most_layer_bytes = std::max(most_layer_bytes, live_layer_bytes += c.layer_bytes);
      }
      if (a.slot.pass == (split_weight_ ? PipePass::kWeight : PipePass::kBackward)) {
        --n;
        live_layer_bytes -= c.layer_bytes;
      }
    }
    inflight_microbatches_ =
        layer_bytes > 0 ? static_cast<double>(most_layer_bytes) / static_cast<double>(layer_bytes) : 0;
    for (size_t i = 0; i < stash_.size(); ++i) {
      for (int64_t k = 0; k < most[i]; ++k) {
        MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New({stash_[i].numel}, act_, true, Use::kActivations));
        stash_[i].free.push_back(t);
      }
      stash_[i].count = most[i];
    }
    return Status::Ok();
  }

  // F takes a buffer of its chunk's size; the pass after which backward no longer needs the
  // microbatch (B, or W when split) gives it back.
  Status TakeActivations(const PipeSlot& s) {
    const Chunk& c = chunks_[static_cast<size_t>(s.chunk)];
    if (!o_.hold_training_state || c.stash_class < 0) return Status::Ok();
    auto& pool = stash_[static_cast<size_t>(c.stash_class)].free;
    if (pool.empty()) return Status::Internal("executor: activation pool exhausted (a bug in its sizing)");
    live_[{s.chunk, s.microbatch}] = pool.back();
    pool.pop_back();
    return Status::Ok();
  }
  Status GiveActivations(const PipeSlot& s) {
    const Chunk& c = chunks_[static_cast<size_t>(s.chunk)];
    if (!o_.hold_training_state || c.stash_class < 0) return Status::Ok();
    auto it = live_.find({s.chunk, s.microbatch});
    if (it == live_.end()) return Status::Internal("executor: backward of a microbatch without saved activations");
    stash_[static_cast<size_t>(c.stash_class)].free.push_back(it->second);
    live_.erase(it);
    return Status::Ok();
  }

  Result<Buffers*> BuffersFor(const Slot& sl) {
    const Op& op = sl.op;
    const int64_t e = core::DtypeBytes(act_);
    std::string key = std::string(core::Name(op.kind)) + "/";
    auto get = [&](const std::string& k) -> std::pair<Buffers*, bool> {
      auto [it, inserted] = buffers_.try_emplace(k);
      return {&it->second, inserted};
    };
    switch (op.kind) {
      case OpKind::kGemm: {
        key += std::to_string(op.m) + "x" + std::to_string(op.n) + "x" + std::to_string(op.k) + "x" +
               std::to_string(op.batch) + core::Name(op.dtype);
        auto [b, fresh] = get(key);
        if (!fresh) return b;
        auto sh = [&](int64_t r, int64_t c) {
          return op.batch > 1 ? std::vector<int64_t>{op.batch, r, c} : std::vector<int64_t>{r, c};
        };
        // a, b, c, dc, da, db
        for (auto [shape, random] : {std::pair{sh(op.m, op.k), true},
                                     {sh(op.k, op.n), true},
                                     {sh(op.m, op.n), false},
                                     {sh(op.m, op.n), true},
                                     {sh(op.m, op.k), false},
                                     {sh(op.k, op.n), false}}) {
          MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(shape, op.dtype, random));
          b->t.push_back(t);
        }
        return b;
      }
      case OpKind::kAttention: {
        key += std::to_string(op.attn_batch) + "x" + std::to_string(op.heads) + "x" + std::to_string(op.seq_q) + "x" +
               std::to_string(op.seq_kv) + "x" + std::to_string(op.head_dim_qk) + "x" + std::to_string(op.head_dim_v);
        auto [b, fresh] = get(key);
        if (!fresh) return b;
        const std::vector<int64_t> q{op.attn_batch, op.heads, op.seq_q, op.head_dim_qk},
            k{op.attn_batch, op.heads, op.seq_kv, op.head_dim_qk}, v{op.attn_batch, op.heads, op.seq_kv, op.head_dim_v},
            o{op.attn_batch, op.heads, op.seq_q, op.head_dim_v};
        // q, k, v, out, lse, dout, dq, dk, dv
        for (auto [shape, random] : {std::pair{q, true}, {k, true}, {v, true}, {o, false}}) {
          MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(shape, op.dtype, random));
          b->t.push_back(t);
        }
        MESHPLAN_ASSIGN_OR_RETURN(Tensor lse, New({op.attn_batch, op.heads, op.seq_q}, Dtype::kFp32, false));
        b->t.push_back(lse);
        for (auto [shape, random] : {std::pair{o, true}, {q, false}, {k, false}, {v, false}}) {
          MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(shape, op.dtype, random));
          b->t.push_back(t);
        }
        MESHPLAN_RETURN_IF_ERROR(
            be_.AttentionForward({.causal = op.causal}, b->t[0], b->t[1], b->t[2], &b->t[3], &b->t[4]));
        return b;
      }
      case OpKind::kMemoryBound: {
        const MemKernel kernel = KernelFor(op.mem_op);
        // Named kernels keep the forward's shape in backward (their own backward kernel); the
        // generic elementwise op moves exactly the op's bytes in either pass.
        const int64_t fwd_bytes =
            op.pass == Pass::kBackwardInput && kernel != MemKernel::kAdd ? op.bytes / 2 : op.bytes;
        key += std::string(op.name) + "/" + std::to_string(fwd_bytes);
        auto [b, fresh] = get(key);
        if (!fresh) return b;
        b->kernel = kernel;
        const int64_t tokens = std::max<int64_t>(graph_.tokens_per_microbatch, 1);
        switch (kernel) {
          case MemKernel::kNorm: {
            // x, y, dy, dx [rows, h]; gamma, beta, dgamma, dbeta [h]; mean, rstd [rows] fp32.
            const auto x = Rows(fwd_bytes / (2 * e), s_.model.hidden);
            const int64_t rows = x[0], h = x[1];
            for (auto [shape, d, random] : {std::tuple{x, act_, true},
                                            {x, act_, false},
                                            {x, act_, true},
                                            {x, act_, false},
                                            {std::vector<int64_t>{h}, act_, true},
                                            {std::vector<int64_t>{h}, act_, true},
                                            {std::vector<int64_t>{h}, act_, false},
                                            {std::vector<int64_t>{h}, act_, false},
                                            {std::vector<int64_t>{rows}, Dtype::kFp32, false},
                                            {std::vector<int64_t>{rows}, Dtype::kFp32, false}}) {
              MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(shape, d, random));
              b->t.push_back(t);
            }
            MESHPLAN_RETURN_IF_ERROR(RunMemory(*b, Pass::kForward));
            return b;
          }
          case MemKernel::kActivation: {
            // x, y, dy, dx. SwiGLU reads [gate | up] (2f) and writes f: 3 tensors of f per token.
            const bool glu = s_.model.mlp == core::MlpKind::kSwiglu;
            const auto y = Rows(fwd_bytes / ((glu ? 3 : 2) * e), tokens);
            const std::vector<int64_t> x{y[0], glu ? 2 * y[1] : y[1]};
            for (auto [shape, random] : {std::pair{x, true}, {y, false}, {y, true}, {x, false}}) {
              MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(shape, act_, random));
              b->t.push_back(t);
            }
            return b;
          }
          case MemKernel::kSoftmax: {
            // softmax: scores in the activation dtype (read, write); cross_entropy: fp32 logits,
            // the microbatch's tokens by this rank's vocabulary whatever passes the plan's loss
            // implementation makes over them (core/step_graph.cc CrossEntropyCost: the kernel here
            // reads the logits, writes the softmax and reads it back in backward); router_topk:
            // fp32 router scores.
            const bool scores = op.mem_op == core::MemOp::kSoftmax, loss = op.mem_op == core::MemOp::kCrossEntropy;
            const bool fp32 = !scores;
            const int64_t factor = loss ? 3 : 2;
            const int64_t last = scores         ? p_.seq_len
                                 : loss         ? (s_.model.vocab + p_.tp - 1) / p_.tp
                                 : s_.model.moe ? s_.model.moe->experts
                                                : 0;
            const Dtype d = fp32 ? Dtype::kFp32 : act_;
            const auto x =
                loss ? std::vector<int64_t>{tokens, last} : Rows(fwd_bytes / (factor * core::DtypeBytes(d)), last);
            for (auto [shape, random] : {std::pair{x, true}, {x, false}, {x, true}, {x, false}}) {
              MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(shape, d, random));
              b->t.push_back(t);
            }
            MESHPLAN_RETURN_IF_ERROR(RunMemory(*b, Pass::kForward));
            return b;
          }
          case MemKernel::kAdd: {
            // out = a + b: reads two tensors, writes one.
            const auto x = Rows(fwd_bytes / (3 * e), s_.model.hidden);
            for (bool random : {true, true, false}) {
              MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(x, act_, random));
              b->t.push_back(t);
            }
            return b;
          }
        }
        return Status::Internal("executor: unknown memory kernel");
      }
      case OpKind::kOptimizer: {
        key += std::to_string(op.bytes);
        auto [b, fresh] = get(key);
        if (!fresh) return b;
        const int64_t n = std::max<int64_t>(op.bytes / 28, 1);  // fp32 p, g, m, v read; p, m, v written
        for (bool random : {true, true, true, true}) {
          MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New({n}, Dtype::kFp32, random));
          b->t.push_back(t);
        }
        MESHPLAN_RETURN_IF_ERROR(be_.Fill(&b->t[3], 0.01f));  // v >= 0
        return b;
      }
      case OpKind::kCollective:
      case OpKind::kP2p: {
        const int64_t n = sl.comm ? sl.comm->size() : 1;
        // Gradients: the data-parallel groups' and the tied embedding's all-reduce.
        const bool dp_group = op.group == CommGroup::kDpCp || op.group == CommGroup::kDp ||
                              op.group == CommGroup::kExpertDp || op.group == CommGroup::kHsdpShard ||
                              op.group == CommGroup::kHsdpReplica || op.group == CommGroup::kPpEnds;
        const Dtype d = dp_group ? p_.dtypes.grads : act_;
        int64_t count = std::max<int64_t>(op.bytes / std::max<int64_t>(core::DtypeBytes(d), 1), 1);
        count = (count + n - 1) / n * n;  // whole blocks per rank
        key += std::string(core::Name(op.collective)) + "/" + std::to_string(count) + "/" + core::Name(op.group);
        auto [b, fresh] = get(key);
        if (!fresh) return b;
        int64_t in = count, out = count;
        if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather) in = count / n;
        if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kReduceScatter) out = count / n;
        MESHPLAN_ASSIGN_OR_RETURN(Tensor ti, New({in}, d, true));
        MESHPLAN_ASSIGN_OR_RETURN(Tensor to, New({out}, d, false));
        b->t = {ti, to};
        return b;
      }
    }
    return Status::Internal("executor: unknown op kind");
  }

  // ---- execution
  Status RunMemory(Buffers& b, Pass pass) {
    const bool bwd = pass == Pass::kBackwardInput;
    auto& t = b.t;
    switch (b.kernel) {
      case MemKernel::kNorm: {
        const bool rms = s_.model.norm == core::NormKind::kRmsNorm;
        if (!bwd) return be_.NormForward(rms, t[0], t[4], t[5], 1e-5f, &t[1], &t[8], &t[9]);
        return be_.NormBackward(rms, t[0], t[4], t[8], t[9], t[2], &t[3], &t[6], &t[7]);
      }
      case MemKernel::kActivation: {
        const bool glu = s_.model.mlp == core::MlpKind::kSwiglu;
        if (!bwd) return glu ? be_.SwigluForward(t[0], &t[1]) : be_.GeluForward(t[0], &t[1]);
        return glu ? be_.SwigluBackward(t[0], t[2], &t[3]) : be_.GeluBackward(t[0], t[2], &t[3]);
      }
      case MemKernel::kSoftmax:
        if (!bwd) return be_.SoftmaxForward(t[0], &t[1]);
        return be_.SoftmaxBackward(t[1], t[2], &t[3]);
      case MemKernel::kAdd: return be_.Add(t[0], t[1], 1.0f, &t[2]);
    }
    return Status::Internal("executor: unknown memory kernel");
  }

  // `state`: the list instance's optimizer states (optimizer op); `peer`: the pipeline rank (p2p).
  Status Execute(Slot& sl, int step, OptimizerState* state, int peer) {
    const Op& op = sl.op;
    if (op.kind == OpKind::kOptimizer && state != nullptr) {
      if (state->grad.numel() == 0) return Status::Ok();
      return be_.AdamUpdate({.step = step + 1}, state->grad, &state->param, &state->m, &state->v);
    }
    if (sl.buffers == nullptr) return Status::Internal(std::string("executor: op ") + op.name + " has no tensors");
    auto& t = sl.buffers->t;
    switch (op.kind) {
      case OpKind::kGemm:
        switch (op.pass) {
          case Pass::kBackwardInput: return be_.Gemm({.transpose_b = true}, t[3], t[1], &t[4]);   // dA = dC B^T
          case Pass::kBackwardWeight: return be_.Gemm({.transpose_a = true}, t[0], t[3], &t[5]);  // dB = A^T dC
          default: return be_.Gemm({}, t[0], t[1], &t[2]);                                        // C = A B
        }
      case OpKind::kAttention:
        if (op.pass == Pass::kBackwardInput)
          return be_.AttentionBackward({.causal = op.causal}, t[0], t[1], t[2], t[3], t[5], t[4], &t[6], &t[7], &t[8]);
        return be_.AttentionForward({.causal = op.causal}, t[0], t[1], t[2], &t[3], &t[4]);
      case OpKind::kMemoryBound: return RunMemory(*sl.buffers, op.pass);
      case OpKind::kOptimizer: return be_.AdamUpdate({.step = step + 1}, t[1], &t[0], &t[2], &t[3]);
      case OpKind::kCollective: {
        Communicator& c = *sl.comm;
        switch (op.collective) {
          case CollectiveKind::kAllReduce: return be_.AllReduce(c, &t[0], op.name);
          case CollectiveKind::kAllGather: return be_.AllGather(c, t[0], &t[1], op.name);
          case CollectiveKind::kReduceScatter: return be_.ReduceScatter(c, t[0], &t[1], op.name);
          case CollectiveKind::kAllToAll: return be_.AllToAll(c, t[0], &t[1], op.name);
          case CollectiveKind::kBroadcast: return be_.Broadcast(c, 0, &t[0], op.name);
          case CollectiveKind::kSendRecv: {  // a ring step: send to the next member, receive from the previous
            const int n = c.size(), r = c.rank();
            if (n == 1) return Status::Ok();
            MESHPLAN_RETURN_IF_ERROR(be_.Send(c, (r + 1) % n, t[0], op.name));
            MESHPLAN_RETURN_IF_ERROR(be_.Recv(c, (r + n - 1) % n, &t[1], op.name));
            return be_.FlushSends(c, op.name);
          }
        }
        return Status::Internal("executor: unknown collective");
      }
      case OpKind::kP2p:
        if (sl.send) return be_.Send(*sl.comm, peer, t[0], op.name);
        return be_.Recv(*sl.comm, peer, &t[1], op.name);
    }
    return Status::Internal("executor: unknown op kind");
  }

  struct Pending {
    Slot* slot;
    Event start, stop;
  };

  Status RunOp(Slot& sl, int step, bool timed, OptimizerState* state = nullptr, int peer = -1) {
    if (sl.modeled) {
      if (timed) {
        sl.time_s += sl.predicted_s;
        ++sl.calls;
      }
      return Status::Ok();
    }
    MESHPLAN_ASSIGN_OR_RETURN(Event a, be_.RecordEvent());
    MESHPLAN_RETURN_IF_ERROR(Execute(sl, step, state, peer));
    MESHPLAN_ASSIGN_OR_RETURN(Event b, be_.RecordEvent());
    if (timed) pending_.push_back({&sl, a, b});
    return Status::Ok();
  }

  // The ops of list `id` of one pass: F its forward ops; B its recomputed forward ops, then its
  // backward ops (input gradients only when W is split off); W its weight-gradient ops.
  Status RunList(int id, PipePass pass, int step, bool timed) {
    auto& slots = sections_[static_cast<size_t>(id)].slots;
    auto run = [&](auto keep) -> Status {
      for (Slot& sl : slots)
        if (keep(sl.op.pass)) MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed));
      return Status::Ok();
    };
    switch (pass) {
      case PipePass::kForward: return run([](Pass p) { return p == Pass::kForward; });
      case PipePass::kBackward:
        MESHPLAN_RETURN_IF_ERROR(run([](Pass p) { return p == Pass::kRecompute; }));
        return run([&](Pass p) { return p == Pass::kBackwardInput || (!split_weight_ && p == Pass::kBackwardWeight); });
      case PipePass::kWeight: return run([](Pass p) { return p == Pass::kBackwardWeight; });
    }
    return Status::Internal("executor: unknown pipeline pass");
  }

  // One pass of one chunk. A rank slice charges the modeled send after every F and B.
  Status RunPass(const PipeSlot& s, int step, bool timed) {
    const Chunk& c = chunks_[static_cast<size_t>(s.chunk)];
    if (s.pass == PipePass::kForward) {
      MESHPLAN_RETURN_IF_ERROR(TakeActivations(s));
      for (int id : c.lists) MESHPLAN_RETURN_IF_ERROR(RunList(id, s.pass, step, timed));
    } else {
      for (auto it = c.lists.rbegin(); it != c.lists.rend(); ++it)
        MESHPLAN_RETURN_IF_ERROR(RunList(*it, s.pass, step, timed));
      if (s.pass == (split_weight_ ? PipePass::kWeight : PipePass::kBackward))
        MESHPLAN_RETURN_IF_ERROR(GiveActivations(s));
    }
    if (p_.pp > 1 && !RealGroup(CommGroup::kPp) && s.pass != PipePass::kWeight)
      for (Slot& sl : sections_.back().slots)
        if (sl.gradient == (s.pass == PipePass::kBackward)) MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed));
    return Status::Ok();
  }

  // A receive or send of the program, on the real pipeline group.
  Status RunTransfer(const PipeAction& a, int step, bool timed) {
    if (!RealGroup(CommGroup::kPp)) return Status::Ok();
    for (Slot& sl : sections_.back().slots)
      if (sl.send == (a.kind == PipeAction::kSend) && sl.gradient == a.message.gradient)
        return RunOp(sl, step, timed, nullptr, static_cast<int>(a.peer));
    return Status::Internal("executor: no pipeline slot for a transfer of the program");
  }

  Result<double> RunStep(int step, bool timed) {
    MESHPLAN_ASSIGN_OR_RETURN(Event start, be_.RecordEvent());
    for (const PipeAction& a : program_) {
      if (a.kind == PipeAction::kRun) MESHPLAN_RETURN_IF_ERROR(RunPass(a.slot, step, timed));
      else MESHPLAN_RETURN_IF_ERROR(RunTransfer(a, step, timed));
    }
    // The BF16_Optimizer's all-reduce copy where the GPU has no room for it beside the cached
    // activations: PyTorch's caching allocator frees its cached blocks (the activation pool, every
    // buffer free once the last backward is done) and retries; the next step's forwards allocate
    // them again (core::PlaceStepCopy).
    Tensor step_copy;
    if (StepCopyReleasesActivations()) {
      for (StashClass& c : stash_) c.free.clear();
      const Dtype d = Storable(p_.dtypes.weights);
      MESHPLAN_ASSIGN_OR_RETURN(step_copy, be_.Allocate({NumelOf(stage_memory_.step_copy_bytes, d)}, d));
      if (step_copy_bytes_ == 0) held_by_dtype_[d] += step_copy.bytes();
      step_copy_bytes_ = step_copy.bytes();
    }
    // Once per step: every list instance's gradient synchronisation and optimizer update.
    size_t instance = 0;
    for (const Chunk& c : chunks_) {
      for (int id : c.lists) {
        OptimizerState* state = instance < optimizer_states_.size() ? &optimizer_states_[instance] : nullptr;
        ++instance;
        for (Slot& sl : sections_[static_cast<size_t>(id)].slots)
          if (sl.op.pass == Pass::kStep) MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed, state));
      }
    }
    if (RealGroup(CommGroup::kPp))
      MESHPLAN_RETURN_IF_ERROR(be_.FlushSends(*comms_[static_cast<size_t>(CommGroup::kPp)], "pipeline sends"));
    MESHPLAN_ASSIGN_OR_RETURN(Event stop, be_.RecordEvent());
    MESHPLAN_RETURN_IF_ERROR(be_.Synchronize());
    MESHPLAN_ASSIGN_OR_RETURN(double total, be_.ElapsedSeconds(start, stop));
    if (StepCopyReleasesActivations()) {
      step_copy = Tensor();
      for (StashClass& c : stash_)
        for (int64_t k = 0; k < c.count; ++k) {
          MESHPLAN_ASSIGN_OR_RETURN(Tensor t, be_.Allocate({c.numel}, act_));
          c.free.push_back(std::move(t));
        }
    }
    for (const Pending& p : pending_) {
      MESHPLAN_ASSIGN_OR_RETURN(double t, be_.ElapsedSeconds(p.start, p.stop));
      p.slot->time_s += t;
      ++p.slot->calls;
    }
    pending_.clear();
    be_.ReleaseEvents();
    return total;
  }

  // ---- device peak
  Result<DevicePeak> Peak() {
    if (o_.peak) return *o_.peak;
    const Dtype gemm = p_.precision;
    if (be_.kind() == BackendKind::kCpu) {
      // No published peak: the ceiling of a large GEMM in the plan's dtype on this backend.
      const int64_t n = 1024;
      MESHPLAN_ASSIGN_OR_RETURN(GemmBenchResult r, BenchGemm(be_, {n, n, n, gemm}, {.warmup = 1, .iterations = 3}));
      return DevicePeak{r.flops_per_s, gemm,
                        std::string("measured: ") + core::Name(gemm) +
                            " GEMM 1024x1024x1024 on this backend "
                            "(the cpu has no published tensor peak; MFU is relative to this ceiling)"};
    }
    auto it = s_.gpu.peak_flops_per_s.find(gemm);
    if (it == s_.gpu.peak_flops_per_s.end())
      return Status::InvalidArgument(std::string("executor: GPU preset ") + s_.gpu.name + " has no " +
                                     core::Name(gemm) + " peak");
    return DevicePeak{it->second, gemm, "GPU preset " + s_.gpu.name + " dense " + core::Name(gemm) + " peak"};
  }

  // ---- results
  Result<Measurement> Finish(const DevicePeak& peak, const std::vector<double>& step_times) {
    Measurement m;
    m.mode = o_.mode;
    m.peak = peak;
    m.rank = o_.rank;
    m.stage = stage_;
    StepMeasurement st;
    st.warmup_steps = o_.warmup_steps;
    st.steps = o_.steps;
    st.step_times_s = step_times;
    for (double t : step_times) st.measured_s += t / static_cast<double>(step_times.size());
    const double steps = static_cast<double>(o_.steps);
    int64_t modeled = 0;
    for (auto& sec : sections_) {
      for (Slot& sl : sec.slots) {
        if (sl.calls == 0) continue;
        const Op& op = sl.op;
        OpMeasurement om;
        om.section = sl.section;
        om.index = sl.index;
        om.name = op.name;
        om.kind = op.kind;
        om.pass = op.pass;
        om.dtype = op.dtype;
        om.m = op.m;
        om.n = op.n;
        om.k = op.k;
        om.batch = op.batch;
        om.attn_batch = op.attn_batch;
        om.heads = op.heads;
        om.seq_q = op.seq_q;
        om.seq_kv = op.seq_kv;
        om.head_dim_qk = op.head_dim_qk;
        om.head_dim_v = op.head_dim_v;
        om.bytes = op.bytes;
        om.collective = op.collective;
        om.group = op.group;
        om.group_size = core::LayoutOfGroup(op.group, p_).size;
        om.overlappable = op.overlappable;
        om.calls_per_step = sl.calls / o_.steps;
        om.time_s = sl.time_s / steps;
        om.flops = op.Flops() * static_cast<double>(om.calls_per_step);
        om.modeled = sl.modeled;
        if (sl.modeled) {
          ++modeled;
          const bool hidden =
              op.overlappable || (op.group == CommGroup::kTp && p_.tp_overlap == core::TpOverlap::kFull);
          if (!hidden) st.modeled_comm_s += om.time_s;
        }
        if (op.kind == OpKind::kGemm || op.kind == OpKind::kAttention) {
          st.hardware_flops += om.flops;
          if (op.pass != Pass::kRecompute) st.flops += om.flops;
        }
        m.ops.push_back(om);
      }
    }
    st.time_s = st.measured_s + st.modeled_comm_s;
    st.peak_memory_bytes = be_.Memory().peak_bytes;
    st.memory = MemoryReport();
    double flops_per_rank = st.flops, hw_flops_per_rank = st.hardware_flops;
    if (groups_.world != nullptr && groups_.world->size() > 1) {
      // The job's step is its slowest rank's; MFU divides the mean rank's FLOPs by it.
      HostComm& w = *groups_.world;
      const int n = w.size();
      double job_time = st.time_s;
      MESHPLAN_RETURN_IF_ERROR(w.AllReduceMax(&job_time, 1, "step summary"));
      // Byte counts travel as doubles: exact below 2^53.
      constexpr size_t kRow = 6;
      std::vector<double> rows(kRow * static_cast<size_t>(n) + 2, 0.0);
      const size_t me = kRow * static_cast<size_t>(w.rank());
      rows[me] = static_cast<double>(o_.rank);
      rows[me + 1] = static_cast<double>(stage_);
      rows[me + 2] = st.time_s;
      rows[me + 3] = static_cast<double>(st.peak_memory_bytes);
      rows[me + 4] = static_cast<double>(st.memory->logical_peak_bytes);
      rows[me + 5] = static_cast<double>(st.memory->predicted.total_bytes);
      rows[kRow * static_cast<size_t>(n)] = st.flops;
      rows[kRow * static_cast<size_t>(n) + 1] = st.hardware_flops;
      MESHPLAN_RETURN_IF_ERROR(w.AllReduceSumDouble(rows.data(), static_cast<int64_t>(rows.size()), "step summary"));
      for (int r = 0; r < n; ++r) {
        const size_t i = kRow * static_cast<size_t>(r);
        m.ranks.push_back({static_cast<int>(rows[i]), static_cast<int64_t>(rows[i + 1]), rows[i + 2],
                           static_cast<int64_t>(rows[i + 3]), static_cast<int64_t>(rows[i + 4]),
                           static_cast<int64_t>(rows[i + 5])});
      }
      flops_per_rank = rows[kRow * static_cast<size_t>(n)] / n;
      hw_flops_per_rank = rows[kRow * static_cast<size_t>(n) + 1] / n;
      st.time_s = job_time;
    }
    st.tflops_per_gpu = st.time_s > 0 ? flops_per_rank / st.time_s / 1e12 : 0;
    st.mfu = st.time_s > 0 && peak.flops_per_s > 0 ? flops_per_rank / (st.time_s * peak.flops_per_s) : 0;
    st.hfu = st.time_s > 0 && peak.flops_per_s > 0 ? hw_flops_per_rank / (st.time_s * peak.flops_per_s) : 0;
    m.step = st;

    if (modeled > 0)
      m.notes.push_back(std::to_string(modeled) +
                        " communication ops had no real group here and are modeled (alpha-beta prediction on the "
                        "plan's cluster); step.time_s adds the exposed ones (step.modeled_comm_s)");
    if (p_.pp > 1 && !RealGroup(CommGroup::kPp))
      m.notes.push_back("rank slice of a pipeline: no peer stages ran, so the pipeline bubble is not in step.time_s");
    if (o_.hold_training_state)
      m.notes.push_back(
          "peak_memory_bytes holds the op buffers (allocated once per op shape, reused across layers and "
          "microbatches), the model states the memory model gives this stage and one activation buffer per "
          "in-flight microbatch and chunk (sized by the memory model, held from F to B, or W when split); "
          "step.memory compares them with the memory model");
    else
      m.notes.push_back(
          "working set only (hold_training_state off): peak_memory_bytes is the op buffers, allocated once per op "
          "shape and reused across layers and microbatches, not the training footprint");
    if (!states_feed_optimizer_ && o_.hold_training_state)
      m.notes.push_back(std::string("the optimizer op runs AdamW on buffers of its own: the model states (") +
                        core::Name(p_.optimizer) + ", " + core::Name(p_.dtypes.optimizer_states) +
                        " moments, or offloaded) cannot feed the backend's fp32-moment AdamW kernel");
    if (be_.kind() == BackendKind::kCpu)
      m.notes.push_back(
          "cpu backend: fp32 storage, so peak_memory_bytes counts 4 bytes per element whatever the dtype (a bf16 "
          "tensor costs twice its GPU bytes; step.memory.logical_peak_bytes counts dtype bytes); bf16/fp16 emulated "
          "by rounding; attention is the naive reference kernel");
    return m;
  }

  // What the executor holds (logical bytes) against the memory model's prediction for the stage.
  StepMemory MemoryReport() const {
    StepMemory mem;
    mem.storage = be_.kind() == BackendKind::kCpu ? "fp32" : "dtype";
    auto held = [&](Use u) { return held_[static_cast<size_t>(u)]; };
    MemoryBreakdown& h = mem.held;
    h.weights_bytes = held(Use::kWeights);
    h.grads_bytes = held(Use::kGrads);
    h.master_weights_bytes = held(Use::kMasterWeights);
    h.optimizer_moments_bytes = held(Use::kMoments);
    h.activations_bytes = held(Use::kActivations);
    h.working_set_bytes = held(Use::kWorkingSet);
    h.buffers_bytes = held(Use::kBuffers);
    h.step_copy_bytes = held(Use::kStepCopy) + step_copy_bytes_;
    h.inflight_microbatches = inflight_microbatches_;
    for (int64_t b : held_) h.total_bytes += b;
    h.total_bytes += step_copy_bytes_;
    // Every executor tensor is held for the whole run, but for a step copy made at each step in
    // place of the activation pool: then the peak is the larger of the two phases.
    mem.logical_peak_bytes =
        h.total_bytes - (step_copy_bytes_ > 0 ? std::min(h.activations_bytes, step_copy_bytes_) : 0);
    for (const auto& [dtype, bytes] : held_by_dtype_) mem.logical_bytes_by_dtype.push_back({core::Name(dtype), bytes});
    const core::StageMemory& sm = stage_memory_;
    mem.predicted_stage = sm.stage;
    MemoryBreakdown& p = mem.predicted;
    p.weights_bytes = sm.weights_bytes;
    p.grads_bytes = sm.grads_bytes;
    p.master_weights_bytes = sm.master_weights_bytes;
    p.optimizer_moments_bytes = sm.optimizer_moments_bytes;
    p.activations_bytes = sm.activations_bytes;
    p.step_copy_bytes = sm.step_copy_bytes;
    p.buffers_bytes = core::FrameworkBufferBytes(sm, p_);
    p.inflight_microbatches = sm.inflight_microbatches;
    p.other_bytes = sm.other_bytes;
    p.total_bytes = sm.total_bytes;
    return mem;
  }

  struct Section {
    std::string name;
    std::vector<Slot> slots;
  };

  // A model chunk of this rank: its virtual stage, its sections in forward order, and the
  // activations one microbatch leaves saved on it (logical bytes) with their pool class (-1: none).
  struct Chunk {
    int64_t vstage = 0;
    std::vector<int> lists;
    int64_t layer_bytes = 0;       // its layers' saved activations
    int64_t activation_bytes = 0;  // with the embedding's and the loss's
    int stash_class = -1;
  };
  // Activation buffers of one size: the free ones.
  struct StashClass {
    int64_t numel = 0;
    std::vector<Tensor> free;
    int64_t count = 0;  // buffers of this size the program ever has in flight
  };

  Backend& be_;
  const core::Scenario& s_;
  const core::PlanSpec& p_;
  const ExecutorOptions& o_;
  const RankGroups& groups_;
  const core::PipeTopology vp_;
  core::StepGraph graph_;
  int64_t stage_ = 0;
  Dtype act_ = Dtype::kBf16;
  uint64_t seed_ = 0;
  std::unique_ptr<HostComm> self_;
  std::unique_ptr<Communicator> self_comm_;
  std::array<std::unique_ptr<Communicator>, core::kCommGroups> comms_;
  std::vector<Section> sections_;    // embedding, dense_layer, moe_layer, head[, pipeline]
  std::vector<int> forward_lists_;   // section ids of every chunk, in chunk order
  std::vector<Chunk> chunks_;        // this rank's model chunks (core::ForEachStageChunk order)
  std::vector<PipeAction> program_;  // one step's passes and transfers (PipelineProgram)
  bool split_weight_ = false;        // W passes run the weight gradients (zero-bubble, DualPipe)
  std::map<std::string, Buffers> buffers_;
  std::vector<Pending> pending_;
  // The training state.
  core::StageMemory stage_memory_;  // core::EstimateMemory for this rank's stage
  bool states_feed_optimizer_ = false;
  std::vector<OptimizerState> optimizer_states_;  // per list instance, in chunk and list order
  std::vector<Tensor> states_;                    // model states the optimizer does not touch
  std::vector<StashClass> stash_;
  double inflight_microbatches_ = 0;                    // the program's most, in units of the rank's layers
  std::map<std::pair<int64_t, int64_t>, Tensor> live_;  // (chunk, microbatch) -> its activations
  std::array<int64_t, kUses> held_{};                   // logical bytes by Use
  int64_t step_copy_bytes_ = 0;                         // the step copy made at each step (StepCopyReleasesActivations)
  bool sizing_ = false;                                 // New() counts elements only
  std::map<Dtype, int64_t> sized_elements_;
  std::map<Dtype, int64_t> held_by_dtype_;
};

}  // namespace

Result<Measurement> ExecuteStep(Backend& backend, const core::Scenario& scenario, const ExecutorOptions& options,
                                const RankGroups& groups) {
  // The backends' attention kernels attend the whole causal sequence; a windowed layer would run
  // (and be measured) as a global one.
  if (scenario.model.sliding_window > 0)
    return Status::InvalidArgument(
        "execute: model.sliding_window: must be 0 (meshplan-run's attention kernels have no sliding window; the "
        "step model costs it)");
  Executor ex(backend, scenario, options, groups);
  return ex.Run();
}

}  // namespace meshplan::runtime
