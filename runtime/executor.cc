#include "runtime/executor.h"

#include "core/schedule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/memory.h"
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

// Megatron-Core's expert regrouping of a stage's tp*cp*dp ranks: inside the expert axes tp counts
// as etp, cp as 1, ep as ep and dp as edp = tp*cp*dp/(ep*etp) (core/collectives.h, SpanOf).
int64_t ExpertDegree(core::Axis a, const core::PlanSpec& p) {
  switch (a) {
    case core::Axis::kTp:
      return p.etp;
    case core::Axis::kCp:
      return 1;
    case core::Axis::kEp:
      return p.ep;
    case core::Axis::kDp:
      return std::max<int64_t>(1, p.tp * p.cp * p.dp / std::max<int64_t>(1, p.ep * p.etp));
    case core::Axis::kPp:
      return p.pp;
  }
  return 1;
}
int64_t ExpertStrideOfDp(const core::PlanSpec& p) {
  int64_t stride = 1;
  for (core::Axis a : p.placement) {
    if (a == core::Axis::kDp) break;
    stride *= ExpertDegree(a, p);
  }
  return stride;
}

}  // namespace

GroupLayout LayoutOf(CommGroup g, const core::PlanSpec& p) {
  const int64_t cp_stride = core::StrideOf(core::Axis::kCp, p);
  const int64_t shard = std::max<int64_t>(p.hsdp_shard_size, 1);
  switch (g) {
    case CommGroup::kTp:
      return {p.tp, core::StrideOf(core::Axis::kTp, p)};
    case CommGroup::kCp:
      return {p.cp, cp_stride};
    case CommGroup::kEp:
      return {p.ep, core::StrideOf(core::Axis::kEp, p)};
    case CommGroup::kDp:
      return {p.dp, core::StrideOf(core::Axis::kDp, p)};
    case CommGroup::kPp:
      return {p.pp, core::StrideOf(core::Axis::kPp, p)};
    // DP together with CP: adjacent in the default placement (sim/step_model.cc's Span).
    case CommGroup::kDpCp:
      return {p.dp * p.cp, cp_stride};
    case CommGroup::kExpertDp:
      return {ExpertDegree(core::Axis::kDp, p), ExpertStrideOfDp(p)};
    case CommGroup::kHsdpShard:
      return {shard, cp_stride};
    case CommGroup::kHsdpReplica:
      return {std::max<int64_t>(1, p.dp * p.cp / shard), cp_stride * shard};
    case CommGroup::kNone:
      break;
  }
  return {1, 1};
}

std::vector<int64_t> GroupMembers(CommGroup g, const core::PlanSpec& p, int64_t rank) {
  const GroupLayout l = LayoutOf(g, p);
  // The group's members differ only in one mixed-radix digit of the rank: radix l.size at l.stride.
  const int64_t base = rank - ((rank / l.stride) % l.size) * l.stride;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < l.size; ++i) out.push_back(base + i * l.stride);
  return out;
}

int64_t StageOfRank(const core::PlanSpec& p, int64_t rank) {
  return (rank / core::StrideOf(core::Axis::kPp, p)) % p.pp;
}


Result<std::unique_ptr<PlanGroups>> SplitPlanGroups(HostComm& world, const core::PlanSpec& p) {
  if (world.size() != p.gpus)
    return Status::InvalidArgument("the plan needs " + std::to_string(p.gpus) + " ranks (plan.gpus) but " +
                                   std::to_string(world.size()) + " processes were started");
  auto out = std::make_unique<PlanGroups>();
  out->view.world = &world;
  for (int g = 1; g < core::kCommGroups; ++g) {  // every group but kNone, in the same order on every rank
    const auto group = static_cast<CommGroup>(g);
    const std::vector<int64_t> members = GroupMembers(group, p, world.rank());
    const auto me = std::find(members.begin(), members.end(), world.rank()) - members.begin();
    MESHPLAN_ASSIGN_OR_RETURN(out->owned[static_cast<size_t>(g)],
                              world.Split(static_cast<int>(members.front()), static_cast<int>(me), core::Name(group)));
    out->view.groups[static_cast<size_t>(g)] = out->owned[static_cast<size_t>(g)].get();
  }
  return out;
}

std::vector<std::pair<bool, int64_t>> StagePassOrder(core::Schedule schedule, int64_t pp, int64_t stage,
                                                     int64_t microbatches) {
  std::vector<std::pair<bool, int64_t>> order;
  for (const core::ScheduleSlot& slot : core::StageOrder(schedule, pp, 1, stage, microbatches))
    order.push_back({slot.forward, slot.microbatch});
  return order;
}

namespace {

enum class MemKernel { kNorm, kActivation, kSoftmax, kAdd };

MemKernel KernelFor(std::string_view name) {
  if (name.find("norm") != std::string_view::npos) return MemKernel::kNorm;
  if (name.ends_with("activation")) return MemKernel::kActivation;
  if (name == "softmax" || name == "cross_entropy" || name == "router_topk") return MemKernel::kSoftmax;
  return MemKernel::kAdd;
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
  int peer = -1;                 // p2p: the peer's rank in the pipeline group
  bool send = false;             // p2p: send (else receive)
  bool modeled = false;
  double predicted_s = 0;
  // Accumulated over the timed steps.
  double time_s = 0;
  int64_t calls = 0;
};

class Executor {
 public:
  Executor(Backend& backend, const core::Scenario& s, const ExecutorOptions& o, const RankGroups& g)
      : be_(backend), s_(s), p_(s.plan), o_(o), groups_(g) {}

  Result<Measurement> Run() {
    if (o_.rank < 0 || o_.rank >= p_.gpus)
      return Status::InvalidArgument("executor: rank " + std::to_string(o_.rank) + " is outside the plan's " +
                                     std::to_string(p_.gpus) + " ranks");
    if (o_.steps < 1 || o_.warmup_steps < 0)
      return Status::InvalidArgument("executor: steps must be >= 1 and warmup steps >= 0");
    if (groups_.groups[static_cast<size_t>(CommGroup::kPp)] != nullptr && p_.pp > 1 &&
        p_.schedule != core::Schedule::kGpipe && p_.schedule != core::Schedule::k1F1B)
      return Status::InvalidArgument(std::string("executor: schedule ") + core::Name(p_.schedule) +
                                     " is not executed across real pipeline stages yet (gpipe and 1f1b are); "
                                     "run a rank slice (one process) instead");
    seed_ = o_.seed * 1000003;
    graph_ = core::BuildStepGraph(s_.model, p_);
    stage_ = StageOfRank(p_, o_.rank);
    act_ = (p_.precision == Dtype::kFp32 || p_.precision == Dtype::kTf32) ? Dtype::kFp32
           : p_.precision == Dtype::kFp16                                 ? Dtype::kFp16
                                                                          : Dtype::kBf16;
    MESHPLAN_RETURN_IF_ERROR(BuildCommunicators());
    MESHPLAN_RETURN_IF_ERROR(BuildProgram());
    MESHPLAN_RETURN_IF_ERROR(Prepare());
    MESHPLAN_ASSIGN_OR_RETURN(DevicePeak peak, Peak());

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
      const int64_t want = LayoutOf(static_cast<CommGroup>(g), p_).size;
      if (h == nullptr || want <= 1) continue;
      if (h->size() != want)
        return Status::InvalidArgument(std::string("executor: group ") + core::Name(static_cast<CommGroup>(g)) +
                                       " has " + std::to_string(h->size()) + " ranks, the plan says " +
                                       std::to_string(want));
      MESHPLAN_ASSIGN_OR_RETURN(comms_[static_cast<size_t>(g)], be_.CreateCommunicator(h));
    }
    return Status::Ok();
  }

  // Lists this stage runs, in forward order, and one Slot per op of each list.
  Status BuildProgram() {
    const std::vector<int64_t> layers = core::StageLayers(s_.model, p_, stage_);
    if (layers.empty())
      return Status::InvalidArgument("executor: stage " + std::to_string(stage_) + " holds no layers");
    const bool first = std::find(layers.begin(), layers.end(), 0) != layers.end();
    const bool last = std::find(layers.begin(), layers.end(), s_.model.layers - 1) != layers.end();
    AddSection("embedding", graph_.embedding);
    AddSection("dense_layer", graph_.dense_layer);
    AddSection("moe_layer", graph_.moe_layer);
    AddSection("head", graph_.head);
    if (first) forward_lists_.push_back(0);
    for (int64_t l : layers) forward_lists_.push_back(s_.model.IsMoeLayer(l) ? 2 : 1);
    if (last) forward_lists_.push_back(3);

    // Pipeline transfers: real sends and receives in an MPI run, else the simulator's charge of
    // one activation and one gradient transfer per microbatch, modeled.
    if (p_.pp > 1) {
      sections_.push_back({"pipeline", {}});
      auto& sec = sections_.back().slots;
      auto add = [&](const char* name, Pass pass, int peer_stage, bool send) {
        Slot sl;
        sl.section = "pipeline";
        sl.index = static_cast<int64_t>(sec.size());
        sl.op = graph_.p2p;
        sl.op.name = name;
        sl.op.pass = pass;
        sl.peer = peer_stage;
        sl.send = send;
        sec.push_back(sl);
      };
      if (RealGroup(CommGroup::kPp)) {
        if (stage_ > 0) add("pipeline_recv_activation", Pass::kForward, static_cast<int>(stage_ - 1), false);
        if (stage_ < p_.pp - 1) add("pipeline_send_activation", Pass::kForward, static_cast<int>(stage_ + 1), true);
        if (stage_ < p_.pp - 1)
          add("pipeline_recv_gradient", Pass::kBackwardInput, static_cast<int>(stage_ + 1), false);
        if (stage_ > 0) add("pipeline_send_gradient", Pass::kBackwardInput, static_cast<int>(stage_ - 1), true);
      } else {
        add("pipeline_send", Pass::kForward, -1, true);
        add("pipeline_send", Pass::kBackwardInput, -1, true);
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
    const int64_t size = LayoutOf(sl->op.group, p_).size;
    if (size <= 1) {
      sl->comm = self_comm_.get();
      return;
    }
    if (RealGroup(sl->op.group)) {
      sl->comm = comms_[static_cast<size_t>(sl->op.group)].get();
      return;
    }
    sl->modeled = true;
    sl->predicted_s = core::CollectiveTime(sl->op.collective, sl->op.bytes, core::SpanOfGroup(sl->op.group, p_, s_.cluster),
                                           s_.cluster, o_.profile.comm)
                          .time_s;
  }

  // Allocates (once per distinct shape) and initialises every executed op's tensors, running
  // each forward once so that backward ops find saved tensors.
  Status Prepare() {
    for (auto& sec : sections_) {
      for (Slot& sl : sec.slots) {
        if (sl.modeled || !Executes(sec.name)) continue;
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

  Result<Tensor> New(const std::vector<int64_t>& shape, Dtype d, bool random) {
    MESHPLAN_ASSIGN_OR_RETURN(Tensor t, be_.Allocate(shape, d));
    if (random)
      MESHPLAN_RETURN_IF_ERROR(be_.FillRandom(&t, ++seed_, 1.0f));
    else
      MESHPLAN_RETURN_IF_ERROR(be_.Fill(&t, 0.0f));
    return t;
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
        const MemKernel kernel = KernelFor(op.name);
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
            // softmax: scores in the activation dtype (read, write); cross_entropy: fp32 logits
            // (read logits, write softmax, read it back in backward); router_topk: fp32 router scores.
            const std::string_view n = op.name;
            const bool fp32 = n != "softmax";
            const int64_t factor = n == "cross_entropy" ? 3 : 2;
            const int64_t last = n == "softmax"         ? p_.seq_len
                                 : n == "cross_entropy" ? (s_.model.vocab + p_.tp - 1) / p_.tp
                                 : s_.model.moe         ? s_.model.moe->experts
                                                        : 0;
            const Dtype d = fp32 ? Dtype::kFp32 : act_;
            const auto x = Rows(fwd_bytes / (factor * core::DtypeBytes(d)), last);
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
        const bool dp_group = op.group == CommGroup::kDpCp || op.group == CommGroup::kDp ||
                              op.group == CommGroup::kExpertDp || op.group == CommGroup::kHsdpShard ||
                              op.group == CommGroup::kHsdpReplica;
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
      case MemKernel::kAdd:
        return be_.Add(t[0], t[1], 1.0f, &t[2]);
    }
    return Status::Internal("executor: unknown memory kernel");
  }

  Status Execute(Slot& sl, int step) {
    auto& t = sl.buffers->t;
    const Op& op = sl.op;
    switch (op.kind) {
      case OpKind::kGemm:
        switch (op.pass) {
          case Pass::kBackwardInput:
            return be_.Gemm({.transpose_b = true}, t[3], t[1], &t[4]);  // dA = dC B^T
          case Pass::kBackwardWeight:
            return be_.Gemm({.transpose_a = true}, t[0], t[3], &t[5]);  // dB = A^T dC
          default:
            return be_.Gemm({}, t[0], t[1], &t[2]);  // C = A B
        }
      case OpKind::kAttention:
        if (op.pass == Pass::kBackwardInput)
          return be_.AttentionBackward({.causal = op.causal}, t[0], t[1], t[2], t[3], t[5], t[4], &t[6], &t[7], &t[8]);
        return be_.AttentionForward({.causal = op.causal}, t[0], t[1], t[2], &t[3], &t[4]);
      case OpKind::kMemoryBound:
        return RunMemory(*sl.buffers, op.pass);
      case OpKind::kOptimizer:
        return be_.AdamUpdate({.step = step + 1}, t[1], &t[0], &t[2], &t[3]);
      case OpKind::kCollective: {
        Communicator& c = *sl.comm;
        switch (op.collective) {
          case CollectiveKind::kAllReduce:
            return be_.AllReduce(c, &t[0], op.name);
          case CollectiveKind::kAllGather:
            return be_.AllGather(c, t[0], &t[1], op.name);
          case CollectiveKind::kReduceScatter:
            return be_.ReduceScatter(c, t[0], &t[1], op.name);
          case CollectiveKind::kAllToAll:
            return be_.AllToAll(c, t[0], &t[1], op.name);
          case CollectiveKind::kBroadcast:
            return be_.Broadcast(c, 0, &t[0], op.name);
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
        if (sl.send) return be_.Send(*sl.comm, sl.peer, t[0], op.name);
        return be_.Recv(*sl.comm, sl.peer, &t[1], op.name);
    }
    return Status::Internal("executor: unknown op kind");
  }

  struct Pending {
    Slot* slot;
    Event start, stop;
  };

  Status RunOp(Slot& sl, int step, bool timed) {
    if (sl.modeled) {
      if (timed) {
        sl.time_s += sl.predicted_s;
        ++sl.calls;
      }
      return Status::Ok();
    }
    MESHPLAN_ASSIGN_OR_RETURN(Event a, be_.RecordEvent());
    MESHPLAN_RETURN_IF_ERROR(Execute(sl, step));
    MESHPLAN_ASSIGN_OR_RETURN(Event b, be_.RecordEvent());
    if (timed) pending_.push_back({&sl, a, b});
    return Status::Ok();
  }

  // The ops of list `id` of one pass.
  Status RunList(int id, bool forward, int step, bool timed) {
    auto& slots = sections_[static_cast<size_t>(id)].slots;
    if (forward) {
      for (Slot& sl : slots)
        if (sl.op.pass == Pass::kForward) MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed));
      return Status::Ok();
    }
    for (Slot& sl : slots)  // recomputed forward ops run first in the backward pass
      if (sl.op.pass == Pass::kRecompute) MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed));
    for (Slot& sl : slots)
      if (sl.op.pass == Pass::kBackwardInput || sl.op.pass == Pass::kBackwardWeight)
        MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed));
    return Status::Ok();
  }

  Status RunPipeline(Pass pass, bool send, int step, bool timed) {
    if (p_.pp <= 1) return Status::Ok();
    for (Slot& sl : sections_.back().slots)
      if (sl.op.pass == pass && sl.send == send) MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed));
    return Status::Ok();
  }

  Result<double> RunStep(int step, bool timed) {
    MESHPLAN_ASSIGN_OR_RETURN(Event start, be_.RecordEvent());
    for (auto [forward, mb] : StagePassOrder(p_.schedule, p_.pp, stage_, graph_.microbatches)) {
      (void)mb;
      if (forward) {
        MESHPLAN_RETURN_IF_ERROR(RunPipeline(Pass::kForward, false, step, timed));
        for (int id : forward_lists_) MESHPLAN_RETURN_IF_ERROR(RunList(id, true, step, timed));
        MESHPLAN_RETURN_IF_ERROR(RunPipeline(Pass::kForward, true, step, timed));
      } else {
        MESHPLAN_RETURN_IF_ERROR(RunPipeline(Pass::kBackwardInput, false, step, timed));
        for (auto it = forward_lists_.rbegin(); it != forward_lists_.rend(); ++it)
          MESHPLAN_RETURN_IF_ERROR(RunList(*it, false, step, timed));
        MESHPLAN_RETURN_IF_ERROR(RunPipeline(Pass::kBackwardInput, true, step, timed));
      }
    }
    // Once per step: every list instance's gradient synchronisation and optimizer update.
    for (int id : forward_lists_)
      for (Slot& sl : sections_[static_cast<size_t>(id)].slots)
        if (sl.op.pass == Pass::kStep) MESHPLAN_RETURN_IF_ERROR(RunOp(sl, step, timed));
    if (RealGroup(CommGroup::kPp))
      MESHPLAN_RETURN_IF_ERROR(be_.FlushSends(*comms_[static_cast<size_t>(CommGroup::kPp)], "pipeline sends"));
    MESHPLAN_ASSIGN_OR_RETURN(Event stop, be_.RecordEvent());
    MESHPLAN_RETURN_IF_ERROR(be_.Synchronize());
    MESHPLAN_ASSIGN_OR_RETURN(double total, be_.ElapsedSeconds(start, stop));
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
        om.group_size = LayoutOf(op.group, p_).size;
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
    double flops_per_rank = st.flops, hw_flops_per_rank = st.hardware_flops;
    if (groups_.world != nullptr && groups_.world->size() > 1) {
      // The job's step is its slowest rank's; MFU divides the mean rank's FLOPs by it.
      HostComm& w = *groups_.world;
      const int n = w.size();
      double job_time = st.time_s;
      MESHPLAN_RETURN_IF_ERROR(w.AllReduceMax(&job_time, 1, "step summary"));
      std::vector<double> rows(static_cast<size_t>(4 * n + 2), 0.0);
      const size_t me = static_cast<size_t>(w.rank());
      rows[4 * me] = static_cast<double>(o_.rank);
      rows[4 * me + 1] = static_cast<double>(stage_);
      rows[4 * me + 2] = st.time_s;
      rows[4 * me + 3] = static_cast<double>(st.peak_memory_bytes);
      rows[static_cast<size_t>(4 * n)] = st.flops;
      rows[static_cast<size_t>(4 * n + 1)] = st.hardware_flops;
      MESHPLAN_RETURN_IF_ERROR(w.AllReduceSumDouble(rows.data(), static_cast<int64_t>(rows.size()), "step summary"));
      for (int r = 0; r < n; ++r) {
        const size_t i = static_cast<size_t>(4 * r);
        m.ranks.push_back({static_cast<int>(rows[i]), static_cast<int64_t>(rows[i + 1]), rows[i + 2],
                           static_cast<int64_t>(rows[i + 3])});
      }
      flops_per_rank = rows[static_cast<size_t>(4 * n)] / n;
      hw_flops_per_rank = rows[static_cast<size_t>(4 * n + 1)] / n;
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
    m.notes.push_back(
        "tensors are allocated once per op shape and reused across layers and microbatches: "
        "peak_memory_bytes is the kernels' working set, not the training footprint");
    if (be_.kind() == BackendKind::kCpu)
      m.notes.push_back(
          "cpu backend: fp32 storage; bf16/fp16 emulated by rounding; attention is the naive "
          "reference kernel");
    return m;
  }

  struct Section {
    std::string name;
    std::vector<Slot> slots;
  };

  Backend& be_;
  const core::Scenario& s_;
  const core::PlanSpec& p_;
  const ExecutorOptions& o_;
  const RankGroups& groups_;
  core::StepGraph graph_;
  int64_t stage_ = 0;
  Dtype act_ = Dtype::kBf16;
  uint64_t seed_ = 0;
  std::unique_ptr<HostComm> self_;
  std::unique_ptr<Communicator> self_comm_;
  std::array<std::unique_ptr<Communicator>, core::kCommGroups> comms_;
  std::vector<Section> sections_;   // embedding, dense_layer, moe_layer, head[, pipeline]
  std::vector<int> forward_lists_;  // section ids in forward order for this stage
  std::map<std::string, Buffers> buffers_;
  std::vector<Pending> pending_;
};

}  // namespace

Result<Measurement> ExecuteStep(Backend& backend, const core::Scenario& scenario, const ExecutorOptions& options,
                                const RankGroups& groups) {
  Executor ex(backend, scenario, options, groups);
  return ex.Run();
}

}  // namespace meshplan::runtime
