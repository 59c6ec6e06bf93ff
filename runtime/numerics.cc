#include "runtime/numerics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "core/schedule.h"
#include "runtime/host_comm.h"
#include "runtime/status_macros.h"

namespace meshplan::runtime {

using core::CommGroup;
using core::Dtype;
using core::Result;
using core::Status;

// Why 1e-4: a distributed layout computes the same fp32 operations as one process, only summed in
// a different order (a GEMM's inner dimension split over TP ranks and then all-reduced, gradients
// accumulated over microbatches and then summed over DP, the tied embedding's two halves added on
// another stage). Reordering a sum of k fp32 terms moves it by at most ~k u sum|terms| and
// typically ~sqrt(k) u sum|terms| (u = 2^-24 ~ 6e-8; Higham, "Accuracy and Stability of Numerical
// Algorithms", 2nd ed., section 4.2). The longest sums here are a GEMM over the vocabulary (4096
// for tiny: sqrt(k) u ~ 4e-6) and a gradient accumulated over every token of the batch; a few
// layers chain such errors. Measured on tiny (2, 4 and 8 ranks): at most 2e-7, and 5.4e-7 for an
// untied RMSNorm variant (docs/runtime.md). 1e-4 keeps a margin of ~200 over that, while what the
// check exists to catch moves a checksum by far more: a missing TP all-reduce or a bias added
// before one moves some checksum by > 0.4, a missing tied-embedding exchange or a wrong DP slice
// by > 0.6, a shard at the wrong offset changes the weighted checksum by O(1), and
// --debug-perturb-rank's 1% on one of dp ranks moves the sums it feeds by ~1%/dp (measured
// >= 6e-3 with dp = 2).
const double kNumericsTolerance = 1e-4;

namespace {

// ---- deterministic values -------------------------------------------------------------------

uint64_t SplitMix64(uint64_t x) {  // Steele, Lea & Flood 2014 (java.util.SplittableRandom)
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t Mix(uint64_t a, uint64_t b) { return SplitMix64(a ^ SplitMix64(b)); }
uint64_t HashName(const std::string& s) {  // FNV-1a: a parameter's stream depends on its name only
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}
// Uniform in [-1, 1): the top 24 bits of the hash, exact in fp32.
double Unit(uint64_t h) { return static_cast<double>(h >> 40) / 8388608.0 - 1.0; }

constexpr uint64_t kDataSalt = 0x6461746121ull;      // tokens
constexpr uint64_t kWeightedSalt = 0x636b73756dull;  // checksum weights (independent of the seed)

// ---- the model's parameters -----------------------------------------------------------------

enum class Shard { kReplicated, kRows, kCols };  // over TP: whole, split along rows, along columns
enum class Init { kUniform, kGain };             // U(-s, s); 1 + U(-s, s)
constexpr int64_t kEmbeddingLayer = -1;          // held by the first stage
constexpr int64_t kHeadLayer = -2;               // held by the last stage

struct ParamDef {
  std::string name;
  int64_t rows = 1, cols = 1;
  Shard shard = Shard::kReplicated;
  Init init = Init::kUniform;
  int64_t layer = 0;  // a layer index, kEmbeddingLayer or kHeadLayer
};

const char* ShardName(Shard s) { return s == Shard::kRows ? "tp_rows" : s == Shard::kCols ? "tp_cols" : "replicated"; }

std::vector<ParamDef> Defs(const core::ModelSpec& m) {
  std::vector<ParamDef> out;
  const int64_t h = m.hidden, qd = m.heads * m.head_dim, f = m.ffn_hidden;
  const bool ln = m.norm == core::NormKind::kLayerNorm;
  const bool bias_qkv = m.bias != core::BiasKind::kNone, bias_all = m.bias == core::BiasKind::kAll;
  auto norm = [&](const std::string& p, int64_t layer) {
    out.push_back({p + ".weight", 1, h, Shard::kReplicated, Init::kGain, layer});
    if (ln) out.push_back({p + ".bias", 1, h, Shard::kReplicated, Init::kUniform, layer});
  };
  out.push_back({"embedding.word", m.vocab, h, Shard::kRows, Init::kUniform, kEmbeddingLayer});
  if (m.position == core::PositionKind::kLearned)
    out.push_back({"embedding.position", m.max_seq, h, Shard::kReplicated, Init::kUniform, kEmbeddingLayer});
  for (int64_t l = 0; l < m.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    norm(p + "ln1", l);
    for (const char* x : {"q", "k", "v"}) {
      out.push_back({p + "attn." + x + ".weight", h, qd, Shard::kCols, Init::kUniform, l});
      if (bias_qkv) out.push_back({p + "attn." + x + ".bias", 1, qd, Shard::kCols, Init::kUniform, l});
    }
    out.push_back({p + "attn.out.weight", qd, h, Shard::kRows, Init::kUniform, l});
    if (bias_all) out.push_back({p + "attn.out.bias", 1, h, Shard::kReplicated, Init::kUniform, l});
    norm(p + "ln2", l);
    out.push_back({p + "mlp.up.weight", h, f, Shard::kCols, Init::kUniform, l});
    if (bias_all) out.push_back({p + "mlp.up.bias", 1, f, Shard::kCols, Init::kUniform, l});
    out.push_back({p + "mlp.down.weight", f, h, Shard::kRows, Init::kUniform, l});
    if (bias_all) out.push_back({p + "mlp.down.bias", 1, h, Shard::kReplicated, Init::kUniform, l});
  }
  norm("final_norm", kHeadLayer);
  if (!m.tied_embeddings) out.push_back({"head.weight", m.vocab, h, Shard::kRows, Init::kUniform, kHeadLayer});
  return out;
}

std::string S(int64_t v) { return std::to_string(v); }

// ---- one rank's step ------------------------------------------------------------------------

// This rank's shard of one parameter, its gradient, and where the shard sits in the full tensor.
struct Param {
  const ParamDef* def = nullptr;
  int64_t rows = 0, cols = 0, row0 = 0, col0 = 0;  // local extent and offset
  Tensor w, g;
  bool counted = false;  // this rank's shard enters the checksums (see numerics.h)
  int64_t FullIndex(int64_t r, int64_t c) const { return (row0 + r) * def->cols + col0 + c; }
};

// A layer's parameters on this rank (null: the model has no such bias / norm bias).
struct LayerRefs {
  Param *ln1_w = nullptr, *ln1_b = nullptr, *ln2_w = nullptr, *ln2_b = nullptr;
  Param* qkv_w[3] = {nullptr, nullptr, nullptr};
  Param* qkv_b[3] = {nullptr, nullptr, nullptr};
  Param *out_w = nullptr, *out_b = nullptr, *up_w = nullptr, *up_b = nullptr, *down_w = nullptr, *down_b = nullptr;
};

// What a layer's forward keeps for its backward.
struct LayerSaved {
  Tensor x_in, h1, mean1, rstd1;
  Tensor qkv[3];  // [b, heads/tp, s, d]
  Tensor o, lse, o_rows;
  Tensor x1, h2, mean2, rstd2, u, a;
};
struct MicrobatchSaved {
  Tensor tokens;  // one-hot [rows, vocab/tp] of this rank's vocabulary slice (first stage)
  std::vector<LayerSaved> layers;
  Tensor x_last, hf, mean_f, rstd_f, dlogits;  // last stage; dlogits [rows, vocab/tp], unscaled
};

class NumericsStep {
 public:
  NumericsStep(Backend& be, const core::Scenario& s, const NumericsOptions& o, const RankGroups& g)
      : be_(be), m_(s.model), p_(s.plan), o_(o), groups_(g) {}

  Result<NumericsResult> Run() {
    MESHPLAN_RETURN_IF_ERROR(CheckNumericsSupport(m_, p_));
    if (o_.rank < 0 || o_.rank >= p_.gpus)
      return Status::InvalidArgument("verify: rank " + S(o_.rank) + " is outside the plan's " + S(p_.gpus) +
                                     " ranks (plan.gpus)");
    MESHPLAN_RETURN_IF_ERROR(Setup());
    MESHPLAN_RETURN_IF_ERROR(InitParams());
    MESHPLAN_RETURN_IF_ERROR(InitData());
    std::vector<MicrobatchSaved> saved(static_cast<size_t>(microbatches_));
    for (const core::ScheduleSlot& slot : core::StageOrder(core::Schedule::kGpipe, p_.pp, 1, stage_, microbatches_)) {
      const bool forward = slot.pass == core::PipePass::kForward;
      MicrobatchSaved& sv = saved[static_cast<size_t>(slot.microbatch)];
      if (forward) MESHPLAN_RETURN_IF_ERROR(Forward(slot.microbatch, &sv));
      else MESHPLAN_RETURN_IF_ERROR(Backward(&sv));
      if (!forward) sv = MicrobatchSaved{};  // free the activations
    }
    MESHPLAN_RETURN_IF_ERROR(ReduceGradients());
    return Collect();
  }

 private:
  // ---- setup
  Status Setup() {
    auto index_in = [&](CommGroup g) {
      const std::vector<int64_t> members = GroupMembers(g, p_, o_.rank);
      return static_cast<int64_t>(std::find(members.begin(), members.end(), o_.rank) - members.begin());
    };
    tp_rank_ = index_in(CommGroup::kTp);
    dp_rank_ = index_in(CommGroup::kDp);
    stage_ = StageOfRank(p_, o_.rank);
    first_ = stage_ == 0;
    last_ = stage_ == p_.pp - 1;
    for (auto [g, comm] : {std::pair{CommGroup::kTp, &tp_}, {CommGroup::kPp, &pp_}, {CommGroup::kDp, &dp_}}) {
      const int64_t size = core::LayoutOfGroup(g, p_).size;
      if (size <= 1) continue;
      HostComm* h = groups_.groups[static_cast<size_t>(g)];
      if (h == nullptr)
        return Status::InvalidArgument(std::string("verify: plan.") + core::Name(g) + " = " + S(size) +
                                       " needs a real " + core::Name(g) + " group: run under mpirun -np " + S(p_.gpus) +
                                       " (one process runs the reference layout, tp = pp = dp = 1)");
      const int64_t want_rank = g == CommGroup::kTp ? tp_rank_ : g == CommGroup::kPp ? stage_ : dp_rank_;
      if (h->size() != size || h->rank() != want_rank)
        return Status::Internal(std::string("verify: group ") + core::Name(g) + " has rank " + S(h->rank()) + " of " +
                                S(h->size()) + ", the plan's layout says " + S(want_rank) + " of " + S(size));
      MESHPLAN_ASSIGN_OR_RETURN(*comm, be_.CreateCommunicator(h));
    }
    layers_ = core::StageLayers(m_, p_, stage_);
    microbatches_ = p_.Microbatches();
    b_ = p_.micro_batch;
    s_ = p_.seq_len;
    rows_ = b_ * s_;
    heads_ = m_.heads / p_.tp;
    vocab_ = m_.vocab / p_.tp;
    tokens_ = p_.global_batch * p_.seq_len;
    return Status::Ok();
  }

  bool Holds(const ParamDef& d) const {
    if (d.layer == kEmbeddingLayer)
      return first_ || (last_ && m_.tied_embeddings && d.name == "embedding.word");  // the head's copy
    if (d.layer == kHeadLayer) return last_;
    return std::find(layers_.begin(), layers_.end(), d.layer) != layers_.end();
  }

  Result<Tensor> New(std::vector<int64_t> shape) { return be_.Allocate(shape, Dtype::kFp32); }
  Result<Tensor> Zeros(std::vector<int64_t> shape) {
    MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(std::move(shape)));
    MESHPLAN_RETURN_IF_ERROR(be_.Fill(&t, 0.0f));
    return t;
  }
  Result<Tensor> FromHost(const std::vector<float>& v, std::vector<int64_t> shape) {
    MESHPLAN_ASSIGN_OR_RETURN(Tensor t, New(std::move(shape)));
    if (t.numel() != static_cast<int64_t>(v.size())) return Status::Internal("verify: host buffer size mismatch");
    MESHPLAN_RETURN_IF_ERROR(be_.CopyFromHost(v.data(), &t));
    return t;
  }
  Result<std::vector<float>> ToHost(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    MESHPLAN_RETURN_IF_ERROR(be_.CopyToHost(t, v.data()));
    return v;
  }

  Status InitParams() {
    defs_ = Defs(m_);
    for (const WeightDelta& wd : o_.weight_deltas) MESHPLAN_RETURN_IF_ERROR(CheckEntry(wd.entry, "weight delta"));
    for (const ParamEntry& e : o_.probes) MESHPLAN_RETURN_IF_ERROR(CheckEntry(e, "probe"));
    params_.assign(defs_.size(), Param{});
    for (size_t i = 0; i < defs_.size(); ++i) {
      const ParamDef& d = defs_[i];
      if (!Holds(d)) continue;
      Param& pr = params_[i];
      pr.def = &d;
      pr.rows = d.shard == Shard::kRows ? d.rows / p_.tp : d.rows;
      pr.cols = d.shard == Shard::kCols ? d.cols / p_.tp : d.cols;
      pr.row0 = d.shard == Shard::kRows ? tp_rank_ * pr.rows : 0;
      pr.col0 = d.shard == Shard::kCols ? tp_rank_ * pr.cols : 0;
      const bool tied_copy = d.layer == kEmbeddingLayer && !first_;
      pr.counted = dp_rank_ == 0 && (d.shard != Shard::kReplicated || tp_rank_ == 0) && !tied_copy;
      // Each element from (seed, name, full index): the same values as slicing the full tensor.
      const uint64_t stream = Mix(o_.seed, HashName(d.name));
      std::vector<float> host(static_cast<size_t>(pr.rows * pr.cols));
      for (int64_t r = 0; r < pr.rows; ++r)
        for (int64_t c = 0; c < pr.cols; ++c) {
          const double u = Unit(Mix(stream, static_cast<uint64_t>(pr.FullIndex(r, c)))) * o_.init_scale;
          host[static_cast<size_t>(r * pr.cols + c)] = static_cast<float>(d.init == Init::kGain ? 1.0 + u : u);
        }
      for (const WeightDelta& wd : o_.weight_deltas) {
        if (wd.entry.param != d.name) continue;
        const int64_t r = wd.entry.index / d.cols - pr.row0, c = wd.entry.index % d.cols - pr.col0;
        if (r >= 0 && r < pr.rows && c >= 0 && c < pr.cols) host[static_cast<size_t>(r * pr.cols + c)] += wd.delta;
      }
      MESHPLAN_ASSIGN_OR_RETURN(pr.w, FromHost(host, {pr.rows, pr.cols}));
      MESHPLAN_ASSIGN_OR_RETURN(pr.g, Zeros({pr.rows, pr.cols}));
      by_name_[d.name] = &pr;
    }
    auto get = [&](const std::string& n) -> Param* {
      auto it = by_name_.find(n);
      return it == by_name_.end() ? nullptr : it->second;
    };
    for (int64_t l : layers_) {
      const std::string p = "layers." + S(l) + ".";
      LayerRefs L;
      L.ln1_w = get(p + "ln1.weight");
      L.ln1_b = get(p + "ln1.bias");
      L.ln2_w = get(p + "ln2.weight");
      L.ln2_b = get(p + "ln2.bias");
      const char* names[3] = {"q", "k", "v"};
      for (int i = 0; i < 3; ++i) {
        L.qkv_w[i] = get(p + "attn." + names[i] + ".weight");
        L.qkv_b[i] = get(p + "attn." + names[i] + ".bias");
      }
      L.out_w = get(p + "attn.out.weight");
      L.out_b = get(p + "attn.out.bias");
      L.up_w = get(p + "mlp.up.weight");
      L.up_b = get(p + "mlp.up.bias");
      L.down_w = get(p + "mlp.down.weight");
      L.down_b = get(p + "mlp.down.bias");
      refs_.push_back(L);
    }
    word_ = get("embedding.word");
    position_ = get("embedding.position");
    final_w_ = get("final_norm.weight");
    final_b_ = get("final_norm.bias");
    head_ = m_.tied_embeddings ? word_ : get("head.weight");
    return Status::Ok();
  }

  Status CheckEntry(const ParamEntry& e, const char* what) const {
    for (const ParamDef& d : defs_) {
      if (d.name != e.param) continue;
      if (e.index < 0 || e.index >= d.rows * d.cols)
        return Status::InvalidArgument(std::string("verify: ") + what + " " + e.param + "[" + S(e.index) +
                                       "]: index outside the parameter's " + S(d.rows * d.cols) + " elements");
      return Status::Ok();
    }
    return Status::InvalidArgument(std::string("verify: ") + what + ": no parameter named \"" + e.param + "\"");
  }

  // Token t of global sequence n (t = 0..seq_len; inputs are 0..s-1, labels 1..s).
  int64_t Token(int64_t n, int64_t t) const {
    return static_cast<int64_t>(Mix(Mix(o_.seed ^ kDataSalt, static_cast<uint64_t>(n)), static_cast<uint64_t>(t)) %
                                static_cast<uint64_t>(m_.vocab));
  }
  int64_t FirstSequence(int64_t mb) const { return (dp_rank_ * microbatches_ + mb) * b_; }

  Status InitData() {
    MESHPLAN_ASSIGN_OR_RETURN(ones_, FromHost(std::vector<float>(static_cast<size_t>(rows_), 1.0f), {rows_, 1}));
    if (first_ && position_ != nullptr) {
      std::vector<float> pos(static_cast<size_t>(rows_ * m_.max_seq), 0.0f);
      for (int64_t r = 0; r < rows_; ++r) pos[static_cast<size_t>(r * m_.max_seq + r % s_)] = 1.0f;
      MESHPLAN_ASSIGN_OR_RETURN(positions_, FromHost(pos, {rows_, m_.max_seq}));
    }
    return Status::Ok();
  }

  // ---- kernels, composed
  Status AllReduceTp(Tensor* t, const char* what) {
    if (tp_ == nullptr) return Status::Ok();
    return be_.AllReduce(*tp_, t, what);
  }
  // y = x W (+ b): W stored [in, out] (this rank's shard); a bias is a rank-1 GEMM update.
  Status Linear(const Tensor& x, const Param& w, const Param* b, Tensor* y) {
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({}, x, w.w, y));
    return AddBias(b, y);
  }
  Status AddBias(const Param* b, Tensor* y) {
    if (b == nullptr) return Status::Ok();
    return be_.Gemm({.beta = 1.0f}, ones_, b->w, y);  // y += 1 b
  }
  // dW += x^T dy, db += 1^T dy.
  Status LinearWeightGrad(const Tensor& x, const Tensor& dy, Param& w, Param* b) {
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_a = true, .beta = 1.0f}, x, dy, &w.g));
    if (b == nullptr) return Status::Ok();
    return be_.Gemm({.transpose_a = true, .beta = 1.0f}, ones_, dy, &b->g);
  }
  Status Norm(const Param& gamma, const Param* beta, const Tensor& x, Tensor* y, Tensor* mean, Tensor* rstd) {
    MESHPLAN_ASSIGN_OR_RETURN(*y, New({rows_, m_.hidden}));
    MESHPLAN_ASSIGN_OR_RETURN(*mean, New({rows_}));
    MESHPLAN_ASSIGN_OR_RETURN(*rstd, New({rows_}));
    return be_.NormForward(Rms(), x, gamma.w, beta ? beta->w : Tensor(), kNormEps, y, mean, rstd);
  }
  // dx = norm'(dy); the parameter gradients are accumulated.
  Result<Tensor> NormGrad(Param& gamma, Param* beta, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                          const Tensor& dy) {
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dx, New({rows_, m_.hidden}));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dg, New({m_.hidden}));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor db, New({m_.hidden}));
    MESHPLAN_RETURN_IF_ERROR(be_.NormBackward(Rms(), x, gamma.w, mean, rstd, dy, &dx, &dg, &db));
    MESHPLAN_RETURN_IF_ERROR(be_.Add(gamma.g, dg, 1.0f, &gamma.g));
    if (beta != nullptr) MESHPLAN_RETURN_IF_ERROR(be_.Add(beta->g, db, 1.0f, &beta->g));
    return dx;
  }
  bool Rms() const { return m_.norm == core::NormKind::kRmsNorm; }
  static constexpr float kNormEps = 1e-5f;

  // [b*s, heads*d] (rows of tokens) <-> [b, heads, s, d] (attention's layout): host permutes,
  // as the Backend has no transpose kernel.
  Result<Tensor> ToHeads(const Tensor& x) { return PermuteHeads(x, true); }
  Result<Tensor> FromHeads(const Tensor& x) { return PermuteHeads(x, false); }
  Result<Tensor> PermuteHeads(const Tensor& x, bool to_heads) {
    MESHPLAN_ASSIGN_OR_RETURN(std::vector<float> in, ToHost(x));
    const int64_t d = m_.head_dim, hd = heads_ * d;
    std::vector<float> out(in.size());
    for (int64_t bi = 0; bi < b_; ++bi)
      for (int64_t t = 0; t < s_; ++t)
        for (int64_t h = 0; h < heads_; ++h) {
          const size_t rows = static_cast<size_t>((bi * s_ + t) * hd + h * d);
          const size_t heads = static_cast<size_t>(((bi * heads_ + h) * s_ + t) * d);
          std::copy_n(&in[to_heads ? rows : heads], d, &out[to_heads ? heads : rows]);
        }
    if (to_heads) return FromHost(out, {b_, heads_, s_, d});
    return FromHost(out, {rows_, hd});
  }

  // ---- forward
  Status Forward(int64_t mb, MicrobatchSaved* sv) {
    Tensor x;
    if (first_) {
      MESHPLAN_RETURN_IF_ERROR(Embed(mb, sv, &x));
    } else {
      MESHPLAN_ASSIGN_OR_RETURN(x, New({rows_, m_.hidden}));
      MESHPLAN_RETURN_IF_ERROR(be_.Recv(*pp_, static_cast<int>(stage_ - 1), &x, "verify activation"));
    }
    sv->layers.resize(layers_.size());
    for (size_t i = 0; i < layers_.size(); ++i) MESHPLAN_RETURN_IF_ERROR(LayerForward(refs_[i], &sv->layers[i], &x));
    if (last_) return Head(mb, sv, x);
    in_flight_.push_back(x);
    return be_.Send(*pp_, static_cast<int>(stage_ + 1), x, "verify activation");
  }

  // x = onehot(tokens) E (+ onehot(positions) P): the lookup as GEMMs against this rank's
  // vocabulary rows, summed over TP (exactly one rank holds each token's row).
  Status Embed(int64_t mb, MicrobatchSaved* sv, Tensor* x) {
    std::vector<float> onehot(static_cast<size_t>(rows_ * vocab_), 0.0f);
    const int64_t v0 = tp_rank_ * vocab_, n0 = FirstSequence(mb);
    for (int64_t r = 0; r < rows_; ++r) {
      const int64_t tok = Token(n0 + r / s_, r % s_) - v0;
      if (tok >= 0 && tok < vocab_) onehot[static_cast<size_t>(r * vocab_ + tok)] = 1.0f;
    }
    MESHPLAN_ASSIGN_OR_RETURN(sv->tokens, FromHost(onehot, {rows_, vocab_}));
    MESHPLAN_ASSIGN_OR_RETURN(*x, New({rows_, m_.hidden}));
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({}, sv->tokens, word_->w, x));
    MESHPLAN_RETURN_IF_ERROR(AllReduceTp(x, "verify embedding"));
    if (position_ != nullptr) MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.beta = 1.0f}, positions_, position_->w, x));
    return Status::Ok();
  }

  // Pre-norm block: x1 = x + Attn(LN1(x)); x_out = x1 + MLP(LN2(x1)). *x is replaced by x_out.
  Status LayerForward(const LayerRefs& L, LayerSaved* sv, Tensor* x) {
    const int64_t h = m_.hidden, hd = heads_ * m_.head_dim, f = m_.ffn_hidden / p_.tp;
    sv->x_in = *x;
    MESHPLAN_RETURN_IF_ERROR(Norm(*L.ln1_w, L.ln1_b, *x, &sv->h1, &sv->mean1, &sv->rstd1));
    for (int i = 0; i < 3; ++i) {  // column-parallel Q, K, V: this rank's heads
      MESHPLAN_ASSIGN_OR_RETURN(Tensor rows, New({rows_, hd}));
      MESHPLAN_RETURN_IF_ERROR(Linear(sv->h1, *L.qkv_w[i], L.qkv_b[i], &rows));
      MESHPLAN_ASSIGN_OR_RETURN(sv->qkv[i], ToHeads(rows));
    }
    MESHPLAN_ASSIGN_OR_RETURN(sv->o, New({b_, heads_, s_, m_.head_dim}));
    MESHPLAN_ASSIGN_OR_RETURN(sv->lse, New({b_, heads_, s_}));
    MESHPLAN_RETURN_IF_ERROR(
        be_.AttentionForward({.causal = true}, sv->qkv[0], sv->qkv[1], sv->qkv[2], &sv->o, &sv->lse));
    MESHPLAN_ASSIGN_OR_RETURN(sv->o_rows, FromHeads(sv->o));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor attn, New({rows_, h}));  // row-parallel: partial sums
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({}, sv->o_rows, L.out_w->w, &attn));
    MESHPLAN_RETURN_IF_ERROR(AllReduceTp(&attn, "verify attn_out"));
    MESHPLAN_RETURN_IF_ERROR(AddBias(L.out_b, &attn));
    MESHPLAN_ASSIGN_OR_RETURN(sv->x1, New({rows_, h}));
    MESHPLAN_RETURN_IF_ERROR(be_.Add(*x, attn, 1.0f, &sv->x1));

    MESHPLAN_RETURN_IF_ERROR(Norm(*L.ln2_w, L.ln2_b, sv->x1, &sv->h2, &sv->mean2, &sv->rstd2));
    MESHPLAN_ASSIGN_OR_RETURN(sv->u, New({rows_, f}));  // column-parallel up
    MESHPLAN_RETURN_IF_ERROR(Linear(sv->h2, *L.up_w, L.up_b, &sv->u));
    MESHPLAN_ASSIGN_OR_RETURN(sv->a, New({rows_, f}));
    MESHPLAN_RETURN_IF_ERROR(be_.GeluForward(sv->u, &sv->a));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor mlp, New({rows_, h}));  // row-parallel down
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({}, sv->a, L.down_w->w, &mlp));
    MESHPLAN_RETURN_IF_ERROR(AllReduceTp(&mlp, "verify mlp_down"));
    MESHPLAN_RETURN_IF_ERROR(AddBias(L.down_b, &mlp));
    MESHPLAN_ASSIGN_OR_RETURN(*x, New({rows_, h}));
    return be_.Add(sv->x1, mlp, 1.0f, x);
  }

  // Final norm, logits against the head's vocabulary rows, gathered over TP, softmax; the loss
  // is summed on the host and d(loss)/d(logits) = softmax - onehot(label) (Goodfellow et al.,
  // Deep Learning, 6.2.2.3) is kept, unscaled, for the backward pass.
  Status Head(int64_t mb, MicrobatchSaved* sv, const Tensor& x) {
    sv->x_last = x;
    MESHPLAN_RETURN_IF_ERROR(Norm(*final_w_, final_b_, x, &sv->hf, &sv->mean_f, &sv->rstd_f));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor local, New({rows_, vocab_}));
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_b = true}, sv->hf, head_->w, &local));
    Tensor logits = local;
    if (tp_ != nullptr) {
      MESHPLAN_ASSIGN_OR_RETURN(Tensor gathered, New({p_.tp, rows_, vocab_}));
      MESHPLAN_RETURN_IF_ERROR(be_.AllGather(*tp_, local, &gathered, "verify logits"));
      MESHPLAN_ASSIGN_OR_RETURN(std::vector<float> g, ToHost(gathered));
      std::vector<float> full(g.size());  // [tp, rows, V/tp] -> [rows, V]
      for (int64_t t = 0; t < p_.tp; ++t)
        for (int64_t r = 0; r < rows_; ++r)
          std::copy_n(&g[static_cast<size_t>((t * rows_ + r) * vocab_)], vocab_,
                      &full[static_cast<size_t>(r * m_.vocab + t * vocab_)]);
      MESHPLAN_ASSIGN_OR_RETURN(logits, FromHost(full, {rows_, m_.vocab}));
    }
    MESHPLAN_ASSIGN_OR_RETURN(Tensor probs, New({rows_, m_.vocab}));
    MESHPLAN_RETURN_IF_ERROR(be_.SoftmaxForward(logits, &probs));
    MESHPLAN_ASSIGN_OR_RETURN(std::vector<float> p, ToHost(probs));
    std::vector<float> onehot(p.size(), 0.0f);
    const int64_t n0 = FirstSequence(mb);
    for (int64_t r = 0; r < rows_; ++r) {
      const int64_t label = Token(n0 + r / s_, r % s_ + 1);
      const size_t at = static_cast<size_t>(r * m_.vocab + label);
      onehot[at] = 1.0f;
      // Every TP rank of the last stage computes the same loss; TP rank 0 counts it.
      if (tp_rank_ == 0) loss_sum_ -= std::log(static_cast<double>(p[at]));
    }
    MESHPLAN_ASSIGN_OR_RETURN(Tensor labels, FromHost(onehot, {rows_, m_.vocab}));
    MESHPLAN_RETURN_IF_ERROR(be_.Add(probs, labels, -1.0f, &probs));
    if (tp_ == nullptr) {
      sv->dlogits = probs;
      return Status::Ok();
    }
    MESHPLAN_ASSIGN_OR_RETURN(std::vector<float> d, ToHost(probs));  // this rank's vocabulary slice
    std::vector<float> slice(static_cast<size_t>(rows_ * vocab_));
    for (int64_t r = 0; r < rows_; ++r)
      std::copy_n(&d[static_cast<size_t>(r * m_.vocab + tp_rank_ * vocab_)], vocab_,
                  &slice[static_cast<size_t>(r * vocab_)]);
    MESHPLAN_ASSIGN_OR_RETURN(sv->dlogits, FromHost(slice, {rows_, vocab_}));
    return Status::Ok();
  }

  // ---- backward
  Status Backward(MicrobatchSaved* sv) {
    Tensor dx;
    if (last_) {
      MESHPLAN_ASSIGN_OR_RETURN(dx, HeadGrad(*sv));
    } else {
      MESHPLAN_ASSIGN_OR_RETURN(dx, New({rows_, m_.hidden}));
      MESHPLAN_RETURN_IF_ERROR(be_.Recv(*pp_, static_cast<int>(stage_ + 1), &dx, "verify gradient"));
    }
    for (size_t i = layers_.size(); i-- > 0;) MESHPLAN_RETURN_IF_ERROR(LayerBackward(refs_[i], sv->layers[i], &dx));
    if (!first_) {
      in_flight_.push_back(dx);
      return be_.Send(*pp_, static_cast<int>(stage_ - 1), dx, "verify gradient");
    }
    // Embedding: dE += onehot^T dx (this rank's vocabulary rows), dP += onehot(pos)^T dx.
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_a = true, .beta = 1.0f}, sv->tokens, dx, &word_->g));
    if (position_ != nullptr)
      MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_a = true, .beta = 1.0f}, positions_, dx, &position_->g));
    return Status::Ok();
  }

  Result<Tensor> HeadGrad(const MicrobatchSaved& sv) {
    // The loss is the mean over the global batch's tokens: every rank scales by the same 1/N.
    const float c = static_cast<float>(1.0 / static_cast<double>(tokens_));
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_a = true, .alpha = c, .beta = 1.0f}, sv.dlogits, sv.hf, &head_->g));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dhf, New({rows_, m_.hidden}));
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.alpha = c}, sv.dlogits, head_->w, &dhf));
    MESHPLAN_RETURN_IF_ERROR(AllReduceTp(&dhf, "verify head dx"));
    return NormGrad(*final_w_, final_b_, sv.x_last, sv.mean_f, sv.rstd_f, dhf);
  }

  // *dx: d(loss)/d(x_out) in, d(loss)/d(x_in) out.
  Status LayerBackward(const LayerRefs& L, const LayerSaved& sv, Tensor* dx) {
    const int64_t h = m_.hidden, hd = heads_ * m_.head_dim, f = m_.ffn_hidden / p_.tp;
    const Tensor dout = *dx;
    // MLP: down is row-parallel (its input gradient stays local), up column-parallel (its input
    // gradient is a partial sum over TP).
    MESHPLAN_ASSIGN_OR_RETURN(Tensor da, New({rows_, f}));
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_b = true}, dout, L.down_w->w, &da));
    MESHPLAN_RETURN_IF_ERROR(LinearWeightGrad(sv.a, dout, *L.down_w, L.down_b));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor du, New({rows_, f}));
    MESHPLAN_RETURN_IF_ERROR(be_.GeluBackward(sv.u, da, &du));
    MESHPLAN_RETURN_IF_ERROR(LinearWeightGrad(sv.h2, du, *L.up_w, L.up_b));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dh2, New({rows_, h}));
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_b = true}, du, L.up_w->w, &dh2));
    MESHPLAN_RETURN_IF_ERROR(AllReduceTp(&dh2, "verify mlp_up dx"));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dx1n, NormGrad(*L.ln2_w, L.ln2_b, sv.x1, sv.mean2, sv.rstd2, dh2));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dx1, New({rows_, h}));
    MESHPLAN_RETURN_IF_ERROR(be_.Add(dout, dx1n, 1.0f, &dx1));

    // Attention: out is row-parallel, Q/K/V column-parallel.
    MESHPLAN_ASSIGN_OR_RETURN(Tensor do_rows, New({rows_, hd}));
    MESHPLAN_RETURN_IF_ERROR(be_.Gemm({.transpose_b = true}, dx1, L.out_w->w, &do_rows));
    MESHPLAN_RETURN_IF_ERROR(LinearWeightGrad(sv.o_rows, dx1, *L.out_w, L.out_b));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dO, ToHeads(do_rows));
    Tensor dqkv[3];
    for (int i = 0; i < 3; ++i) {
      MESHPLAN_ASSIGN_OR_RETURN(dqkv[i], New(sv.qkv[i].shape()));
    }
    MESHPLAN_RETURN_IF_ERROR(be_.AttentionBackward({.causal = true}, sv.qkv[0], sv.qkv[1], sv.qkv[2], sv.o, dO, sv.lse,
                                                   &dqkv[0], &dqkv[1], &dqkv[2]));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dh1, New({rows_, h}));
    for (int i = 0; i < 3; ++i) {
      MESHPLAN_ASSIGN_OR_RETURN(Tensor d_rows, FromHeads(dqkv[i]));
      MESHPLAN_RETURN_IF_ERROR(LinearWeightGrad(sv.h1, d_rows, *L.qkv_w[i], L.qkv_b[i]));
      MESHPLAN_RETURN_IF_ERROR(
          be_.Gemm({.transpose_b = true, .beta = i == 0 ? 0.0f : 1.0f}, d_rows, L.qkv_w[i]->w, &dh1));
    }
    MESHPLAN_RETURN_IF_ERROR(AllReduceTp(&dh1, "verify qkv dx"));
    MESHPLAN_ASSIGN_OR_RETURN(Tensor dxn, NormGrad(*L.ln1_w, L.ln1_b, sv.x_in, sv.mean1, sv.rstd1, dh1));
    MESHPLAN_ASSIGN_OR_RETURN(*dx, New({rows_, h}));
    return be_.Add(dx1, dxn, 1.0f, dx);
  }

  // ---- gradient reduction
  Status ReduceGradients() {
    // Tied embedding split over the first and last stage: each adds the other's gradient, so
    // both copies hold the full one (a two-rank all-reduce from Send/Recv; a + b == b + a).
    if (pp_ != nullptr && m_.tied_embeddings && (first_ || last_)) {
      const int peer = static_cast<int>(first_ ? p_.pp - 1 : 0);
      MESHPLAN_ASSIGN_OR_RETURN(std::vector<float> mine, ToHost(word_->g));  // word_->g changes below
      MESHPLAN_ASSIGN_OR_RETURN(Tensor snapshot, FromHost(mine, {word_->rows, word_->cols}));
      in_flight_.push_back(snapshot);
      MESHPLAN_RETURN_IF_ERROR(be_.Send(*pp_, peer, snapshot, "verify tied embedding"));
      MESHPLAN_ASSIGN_OR_RETURN(Tensor other, New({word_->rows, word_->cols}));
      MESHPLAN_RETURN_IF_ERROR(be_.Recv(*pp_, peer, &other, "verify tied embedding"));
      MESHPLAN_RETURN_IF_ERROR(be_.Add(word_->g, other, 1.0f, &word_->g));
    }
    if (pp_ != nullptr) MESHPLAN_RETURN_IF_ERROR(be_.FlushSends(*pp_, "verify pipeline sends"));
    in_flight_.clear();
    for (Param& pr : params_) {
      if (pr.def == nullptr) continue;
      if (o_.perturb_rank == o_.rank)  // g += scale g
        MESHPLAN_RETURN_IF_ERROR(be_.Add(pr.g, pr.g, o_.perturb_scale, &pr.g));
      if (dp_ != nullptr) MESHPLAN_RETURN_IF_ERROR(be_.AllReduce(*dp_, &pr.g, "verify dp gradients"));
    }
    return Status::Ok();
  }

  // ---- results: checksums of this rank's counted shards, summed over the world in double.
  Result<NumericsResult> Collect() {
    const size_t n = defs_.size();
    std::vector<double> acc(1 + 4 * n + o_.probes.size(), 0.0);
    acc[0] = loss_sum_;
    for (size_t i = 0; i < n; ++i) {
      const Param& pr = params_[i];
      if (pr.def == nullptr || !pr.counted) continue;
      MESHPLAN_ASSIGN_OR_RETURN(std::vector<float> g, ToHost(pr.g));
      const uint64_t stream = Mix(kWeightedSalt, HashName(pr.def->name));
      double* c = &acc[1 + 4 * i];
      for (int64_t r = 0; r < pr.rows; ++r)
        for (int64_t col = 0; col < pr.cols; ++col) {
          const double v = g[static_cast<size_t>(r * pr.cols + col)];
          c[0] += v;
          c[1] += std::fabs(v);
          c[2] += v * v;
          c[3] += v * Unit(Mix(stream, static_cast<uint64_t>(pr.FullIndex(r, col))));
        }
      for (size_t k = 0; k < o_.probes.size(); ++k) {
        const ParamEntry& e = o_.probes[k];
        if (e.param != pr.def->name) continue;
        const int64_t r = e.index / pr.def->cols - pr.row0, col = e.index % pr.def->cols - pr.col0;
        if (r >= 0 && r < pr.rows && col >= 0 && col < pr.cols)
          acc[1 + 4 * n + k] += g[static_cast<size_t>(r * pr.cols + col)];
      }
    }
    if (groups_.world != nullptr && groups_.world->size() > 1)
      MESHPLAN_RETURN_IF_ERROR(
          groups_.world->AllReduceSumDouble(acc.data(), static_cast<int64_t>(acc.size()), "verify checksums"));

    NumericsResult r;
    r.model = m_.name;
    r.tp = p_.tp;
    r.pp = p_.pp;
    r.dp = p_.dp;
    r.ranks = p_.gpus;
    r.global_batch = p_.global_batch;
    r.seq_len = p_.seq_len;
    r.micro_batch = p_.micro_batch;
    r.microbatches = microbatches_;
    r.tokens = tokens_;
    r.seed = o_.seed;
    r.loss = acc[0] / static_cast<double>(tokens_);
    for (size_t i = 0; i < n; ++i) {
      const ParamDef& d = defs_[i];
      r.grads.push_back(
          {d.name, d.rows, d.cols, ShardName(d.shard), acc[1 + 4 * i], acc[2 + 4 * i], acc[3 + 4 * i], acc[4 + 4 * i]});
    }
    for (size_t k = 0; k < o_.probes.size(); ++k) r.probe_grads.push_back(acc[1 + 4 * n + k]);
    if (p_.precision != Dtype::kFp32)
      r.notes.push_back(std::string("computed in fp32, not the plan's ") + core::Name(p_.precision) +
                        ": the check compares math, not a dtype's rounding");
    if (p_.pp > 1 && p_.schedule != core::Schedule::kGpipe)
      r.notes.push_back(std::string("pipeline run in GPipe order, not the plan's ") + core::Name(p_.schedule) +
                        ": the order of passes does not change the math");
    if (p_.sequence_parallel && p_.tp > 1)
      r.notes.push_back(
          "sequence parallelism not modelled: norms and residuals run replicated over TP (the same math)");
    if (p_.zero > 0)
      r.notes.push_back(
          "ZeRO stage " + S(p_.zero) +
          " not modelled: gradients are all-reduced whole over DP (sharding states does not change them)");
    if (p_.recompute != core::Recompute::kNone)
      r.notes.push_back("activation recompute not modelled: activations are kept (recomputing gives the same values)");
    return r;
  }

  Backend& be_;
  const core::ModelSpec& m_;
  const core::PlanSpec& p_;
  const NumericsOptions& o_;
  const RankGroups& groups_;
  std::unique_ptr<Communicator> tp_, pp_, dp_;  // null: a group of one
  int64_t tp_rank_ = 0, dp_rank_ = 0, stage_ = 0;
  bool first_ = false, last_ = false;
  std::vector<int64_t> layers_;
  int64_t microbatches_ = 0, b_ = 0, s_ = 0, rows_ = 0, heads_ = 0, vocab_ = 0, tokens_ = 0;
  std::vector<ParamDef> defs_;
  std::vector<Param> params_;  // by def index; def == nullptr where this rank holds none
  std::map<std::string, Param*> by_name_;
  std::vector<LayerRefs> refs_;  // one per layers_ entry
  Param *word_ = nullptr, *position_ = nullptr, *final_w_ = nullptr, *final_b_ = nullptr, *head_ = nullptr;
  Tensor ones_, positions_;
  // Sent tensors stay alive and unwritten until FlushSends: a backend may defer a send (cuda
  // issues it with the communicator's next Recv).
  std::vector<Tensor> in_flight_;
  double loss_sum_ = 0;
};

}  // namespace

// ---- public ---------------------------------------------------------------------------------

Status CheckNumericsSupport(const core::ModelSpec& m, const core::PlanSpec& p) {
  auto bad = [](const std::string& field, const std::string& rule) {
    return Status::InvalidArgument("verify: " + field + ": " + rule);
  };
  if (m.moe) return bad("model.moe", "verify implements dense models only (no MoE layers)");
  if (m.mla) return bad("model.mla", "verify implements multi-head attention, not multi-head latent attention");
  if (m.mlp != core::MlpKind::kGelu)
    return bad("model.mlp", std::string("verify implements gelu MLPs, not ") + core::Name(m.mlp));
  if (m.position != core::PositionKind::kLearned && m.position != core::PositionKind::kNone)
    return bad("model.position",
               std::string("verify implements learned or no position embeddings, not ") + core::Name(m.position));
  if (m.kv_heads != m.heads)
    return bad("model.kv_heads", "must equal model.heads (" + S(m.heads) +
                                     "): verify implements multi-head attention, not grouped-query or multi-query");
  if (m.qk_norm) return bad("model.qk_norm", "must be false (not implemented by verify)");
  if (m.attention_sinks) return bad("model.attention_sinks", "must be false (not implemented by verify)");
  if (m.mtp_layers > 0) return bad("model.mtp_layers", "must be 0 (verify implements no multi-token prediction)");
  if (m.dropout) return bad("model.dropout", "must be false (the check compares deterministic steps)");
  for (auto [field, v] : {std::pair{"model.layers", m.layers},
                          {"model.hidden", m.hidden},
                          {"model.heads", m.heads},
                          {"model.head_dim", m.head_dim},
                          {"model.ffn_hidden", m.ffn_hidden},
                          {"model.vocab", m.vocab},
                          {"plan.seq_len", p.seq_len},
                          {"plan.micro_batch", p.micro_batch},
                          {"plan.global_batch", p.global_batch},
                          {"plan.tp", p.tp},
                          {"plan.pp", p.pp},
                          {"plan.dp", p.dp}})
    if (v < 1) return bad(field, "must be >= 1 (got " + S(v) + ")");
  if (p.cp != 1) return bad("plan.cp", "must be 1: verify shards over tp, pp and dp only");
  if (p.ep != 1) return bad("plan.ep", "must be 1: verify implements dense models only");
  if (p.vpp != 1) return bad("plan.vpp", "must be 1: verify runs one model chunk per pipeline stage");
  if (p.gpus != p.tp * p.pp * p.dp)
    return bad("plan.gpus", "must equal tp*pp*dp = " + S(p.tp * p.pp * p.dp) + " (got " + S(p.gpus) + ")");
  for (auto [field, v] :
       {std::pair{"model.heads", m.heads}, {"model.ffn_hidden", m.ffn_hidden}, {"model.vocab", m.vocab}})
    if (v % p.tp != 0)
      return bad(field, "(" + S(v) + ") must be divisible by plan.tp (" + S(p.tp) + ") for Megatron sharding");
  if (p.global_batch % (p.micro_batch * p.dp) != 0)
    return bad("plan.global_batch",
               "(" + S(p.global_batch) + ") must be divisible by micro_batch*dp = " + S(p.micro_batch * p.dp));
  if (m.position == core::PositionKind::kLearned && p.seq_len > m.max_seq)
    return bad("plan.seq_len",
               "(" + S(p.seq_len) + ") must be <= model.max_seq (" + S(m.max_seq) + ") with learned positions");
  // Stages must hold consecutive layer ranges, in order, covering the model.
  int64_t next = 0;
  for (int64_t st = 0; st < p.pp; ++st) {
    const std::vector<int64_t> layers = core::StageLayers(m, p, st);
    if (layers.empty()) return bad("plan.pp", "stage " + S(st) + " holds no layers");
    for (int64_t l : layers) {
      if (l != next)
        return bad(p.stage_layers.empty() ? "plan.schedule" : "plan.stage_layers",
                   "verify needs each stage to hold the next consecutive layers (stage " + S(st) + " holds layer " +
                       S(l) + " where layer " + S(next) + " was expected)");
      ++next;
    }
  }
  if (next != m.layers)
    return bad("plan.pp", "the stages hold " + S(next) + " of model.layers = " + S(m.layers) + " layers");
  return Status::Ok();
}

core::PlanSpec ReferencePlan(const core::PlanSpec& p) {
  core::PlanSpec r = p;
  r.gpus = 1;
  r.tp = r.pp = r.dp = r.cp = r.ep = r.etp = r.vpp = 1;
  r.zero = 0;
  r.sharding = core::Sharding::kFsdp;
  r.hsdp_shard_size = 0;
  r.sequence_parallel = false;
  r.stage_layers.clear();
  r.schedule = core::Schedule::kGpipe;
  return r;
}

std::vector<std::string> NumericsParamNames(const core::ModelSpec& m) {
  std::vector<std::string> out;
  for (const ParamDef& d : Defs(m)) out.push_back(d.name);
  return out;
}

Result<NumericsResult> RunNumericsStep(Backend& backend, const core::Scenario& scenario, const NumericsOptions& options,
                                       const RankGroups& groups) {
  NumericsStep step(backend, scenario, options, groups);
  return step.Run();
}

NumericsComparison CompareNumerics(const NumericsResult& run, const NumericsResult& ref, double tolerance) {
  NumericsComparison c;
  c.tolerance = tolerance;
  auto rel = [](double a, double b, double scale) {
    const double d = std::fabs(a - b);
    if (std::isnan(d)) return HUGE_VAL;  // a NaN never passes
    if (d == 0) return 0.0;
    return scale > 0 ? d / scale : HUGE_VAL;
  };
  c.loss_rel_diff = rel(run.loss, ref.loss, std::fabs(ref.loss));
  c.max_rel_diff = c.loss_rel_diff;
  c.worst = "loss";
  bool same_params = run.grads.size() == ref.grads.size();
  for (size_t i = 0; same_params && i < run.grads.size(); ++i) {
    const GradientChecksum &a = run.grads[i], &b = ref.grads[i];
    same_params = a.param == b.param && a.rows == b.rows && a.cols == b.cols;
  }
  if (!same_params) {
    c.max_rel_diff = HUGE_VAL;
    c.worst = "parameter lists differ";
    return c;
  }
  // The floor of every scale: the model's RMS gradient (reference). A parameter whose gradient
  // is zero in exact arithmetic holds only rounding noise, and relative to itself that noise
  // differs by O(1) between any two summation orders. The attention key bias is one: softmax
  // ignores the per-query constant q.b_k added to every score, so d(loss)/d(b_k) = 0.
  double sq = 0, count = 0;
  for (const GradientChecksum& g : ref.grads) {
    sq += g.sum_sq;
    count += static_cast<double>(g.rows * g.cols);
  }
  const double rms = count > 0 ? std::sqrt(sq / count) : 0;
  for (size_t i = 0; i < run.grads.size(); ++i) {
    const GradientChecksum &a = run.grads[i], &b = ref.grads[i];
    const double n = static_cast<double>(b.rows * b.cols);
    const double l1 = std::max(b.abs_sum, n * rms), l2 = std::max(b.sum_sq, n * rms * rms);
    const double d = std::max({rel(a.sum, b.sum, l1), rel(a.abs_sum, b.abs_sum, l1), rel(a.sum_sq, b.sum_sq, l2),
                               rel(a.weighted, b.weighted, l1)});
    c.params.push_back({a.param, d});
    if (d > c.max_rel_diff) {
      c.max_rel_diff = d;
      c.worst = a.param;
    }
  }
  c.ok = c.max_rel_diff <= tolerance;
  return c;
}

std::string NumericsTable(const NumericsResult& r, const NumericsResult* ref, const NumericsComparison* cmp) {
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("# meshplan-run verify: model %s, tp=%lld pp=%lld dp=%lld (%lld rank%s), fp32, seed %llu\n", r.model.c_str(),
      static_cast<long long>(r.tp), static_cast<long long>(r.pp), static_cast<long long>(r.dp),
      static_cast<long long>(r.ranks), r.ranks == 1 ? "" : "s", static_cast<unsigned long long>(r.seed));
  add("# global batch %lld x seq %lld = %lld tokens; micro batch %lld, %lld microbatch(es) per DP rank\n",
      static_cast<long long>(r.global_batch), static_cast<long long>(r.seq_len), static_cast<long long>(r.tokens),
      static_cast<long long>(r.micro_batch), static_cast<long long>(r.microbatches));
  add("# loss %.9f (mean cross-entropy, nats)\n", r.loss);
  if (ref != nullptr) add("# reference loss %.9f (one process, tp=pp=dp=1)\n", ref->loss);
  add("# %-30s %6s %6s %-10s %15s %15s %15s %15s%s\n", "param", "rows", "cols", "sharding", "grad_sum", "grad_abs_sum",
      "grad_sum_sq", "grad_weighted", cmp ? "   rel_diff" : "");
  for (size_t i = 0; i < r.grads.size(); ++i) {
    const GradientChecksum& g = r.grads[i];
    add("  %-30s %6lld %6lld %-10s %15.8e %15.8e %15.8e %15.8e", g.param.c_str(), static_cast<long long>(g.rows),
        static_cast<long long>(g.cols), g.sharding.c_str(), g.sum, g.abs_sum, g.sum_sq, g.weighted);
    if (cmp != nullptr && i < cmp->params.size()) add("  %9.2e", cmp->params[i].rel_diff);
    out += "\n";
  }
  if (cmp != nullptr) {
    add("# loss rel diff %.2e\n", cmp->loss_rel_diff);
    add("# max rel diff %.2e (%s) %s tolerance %.0e: %s\n", cmp->max_rel_diff, cmp->worst.c_str(), cmp->ok ? "<=" : ">",
        cmp->tolerance, cmp->ok ? "OK" : "FAILED");
  }
  for (const std::string& n : r.notes) out += "# note: " + n + "\n";
  return out;
}

namespace {
nlohmann::json GradsJson(const NumericsResult& r) {
  nlohmann::json a = nlohmann::json::array();
  for (const GradientChecksum& g : r.grads)
    a.push_back({{"param", g.param},
                 {"rows", g.rows},
                 {"cols", g.cols},
                 {"sharding", g.sharding},
                 {"sum", g.sum},
                 {"abs_sum", g.abs_sum},
                 {"sum_sq", g.sum_sq},
                 {"weighted", g.weighted}});
  return a;
}
}  // namespace

std::string NumericsJson(const NumericsResult& r, const NumericsResult* ref, const NumericsComparison* cmp) {
  nlohmann::json j;
  j["schema"] = "meshplan.verify/1";
  j["model"] = r.model;
  j["layout"] = {{"tp", r.tp}, {"pp", r.pp}, {"dp", r.dp}, {"ranks", r.ranks}};
  j["dtype"] = "fp32";
  j["seed"] = r.seed;
  j["global_batch"] = r.global_batch;
  j["seq_len"] = r.seq_len;
  j["micro_batch"] = r.micro_batch;
  j["microbatches"] = r.microbatches;
  j["tokens"] = r.tokens;
  j["loss"] = r.loss;
  j["grads"] = GradsJson(r);
  if (ref != nullptr) j["reference"] = {{"loss", ref->loss}, {"grads", GradsJson(*ref)}};
  if (cmp != nullptr) {
    nlohmann::json params = nlohmann::json::array();
    for (const ChecksumDiff& d : cmp->params) params.push_back({{"param", d.param}, {"rel_diff", d.rel_diff}});
    // JSON has no infinity: a mismatch of the parameter lists is written as null.
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    j["comparison"] = {{"tolerance", cmp->tolerance},
                       {"loss_rel_diff", num(cmp->loss_rel_diff)},
                       {"max_rel_diff", num(cmp->max_rel_diff)},
                       {"worst", cmp->worst},
                       {"ok", cmp->ok},
                       {"params", params}};
  }
  j["notes"] = r.notes;
  return j.dump(2) + "\n";
}

}  // namespace meshplan::runtime
