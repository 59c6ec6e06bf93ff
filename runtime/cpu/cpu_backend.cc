#include "runtime/cpu/cpu_backend.h"

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "runtime/host_comm.h"
#include "runtime/op_checks.h"
#include "runtime/status_macros.h"

namespace meshplan::runtime {

float RoundToDtype(core::Dtype dtype, float x) {
  if (!std::isfinite(x)) return x;
  if (dtype == core::Dtype::kBf16) {
    // Keep the top 16 bits of the fp32 pattern, rounding the dropped 16 to nearest even.
    uint32_t u = std::bit_cast<uint32_t>(x);
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::bit_cast<float>(u & 0xffff0000u);
  }
  if (dtype == core::Dtype::kFp16) {
    const float a = std::fabs(x);
    if (a >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);  // rounds past 65504
    if (a < 6.103515625e-05f) {
      // Subnormal fp16: a multiple of 2^-24. nearbyint rounds ties to even in the default mode.
      return std::copysign(std::nearbyint(a * 16777216.0f) / 16777216.0f, x);
    }
    uint32_t u = std::bit_cast<uint32_t>(x);  // 23 significand bits -> 10: drop 13, ties to even
    u += 0xfffu + ((u >> 13) & 1u);
    return std::bit_cast<float>(u & 0xffffe000u);
  }
  return x;
}

namespace {

using core::Dtype;
using core::Result;
using core::Status;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

float* F(const Tensor& t) { return static_cast<float*>(t.data()); }

void RoundAll(Dtype d, float* p, int64_t n) {
  if (d != Dtype::kBf16 && d != Dtype::kFp16) return;
  for (int64_t i = 0; i < n; ++i) p[i] = RoundToDtype(d, p[i]);
}
void RoundAll(Tensor* t) { RoundAll(t->dtype(), F(*t), t->numel()); }

// The shared argument checks (runtime/op_checks.h), named as the kernels below call them.
const OpChecks kChecks("cpu");
Status Bad(const std::string& op, const std::string& why) { return kChecks.Bad(op, why); }
Status Defined(const std::string& op, std::initializer_list<const Tensor*> ts) { return kChecks.Defined(op, ts); }
Status SameNumel(const std::string& op, const Tensor& a, const Tensor& b) { return kChecks.SameNumel(op, a, b); }
Status NumelIs(const std::string& op, const Tensor& t, int64_t n, const char* what) {
  return kChecks.NumelIs(op, t, n, what);
}
int64_t Last(const Tensor& t) { return LastExtent(t); }

struct Stats {
  MemoryStats m;
};

// Allocations from this size on are checked against the memory the kernel says is available.
constexpr int64_t kCheckedAllocationBytes = int64_t{16} << 20;

// MemAvailable from /proc/meminfo in bytes (the kernel's estimate of what can be allocated
// without swapping), or -1 where it cannot be read.
int64_t AvailableHostBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

class CpuCommunicator final : public Communicator {
 public:
  explicit CpuCommunicator(HostComm* host) : host_(host) {}
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  HostComm* host() const { return host_; }

 private:
  HostComm* host_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& o)
      : clock_(o.clock ? o.clock : SteadyClock()), stats_(std::make_shared<Stats>()) {
    if (o.threads > 0) Eigen::setNbThreads(o.threads);
  }

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string Description() const override {
    return "cpu: Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
           std::to_string(EIGEN_MINOR_VERSION) + ", " + std::to_string(Eigen::nbThreads()) +
           " thread(s), fp32 storage (bf16/fp16 emulated by rounding)";
  }

  // ---- memory
  Result<Tensor> Allocate(const std::vector<int64_t>& shape, Dtype dtype) override {
    if (dtype == Dtype::kFp8 || dtype == Dtype::kInt8)
      return Status::Unavailable(std::string("cpu backend: ") + core::Name(dtype) +
                                 " tensors are not supported (fp8 GEMMs need Hopper tensor cores: use --backend cuda)");
    if (dtype == Dtype::kNvfp4)
      return Status::Unavailable(
          "cpu backend: nvfp4 tensors are not supported (no backend of the runtime has NVFP4 "
          "GEMMs)");
    if (dtype == Dtype::kNone) return Bad("allocate", "dtype none");
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) return Bad("allocate", "negative extent in shape");
      n *= d;
    }
    const int64_t bytes = n * static_cast<int64_t>(sizeof(float));
    // Linux overcommits: `new` of more than the machine has succeeds and the first write kills
    // the process. A large tensor is refused while it is still an error.
    if (bytes >= kCheckedAllocationBytes) {
      const int64_t available = AvailableHostBytes();
      if (available >= 0 && bytes > available)
        return Status::Unavailable("cpu backend: out of host memory allocating " + std::to_string(bytes) + " bytes (" +
                                   std::to_string(available) + " available, MemAvailable in /proc/meminfo)");
    }
    float* p = nullptr;
    try {
      p = new float[static_cast<size_t>(std::max<int64_t>(n, 1))];
    } catch (const std::bad_alloc&) {
      return Status::Unavailable("cpu backend: out of host memory allocating " + std::to_string(bytes) + " bytes");
    }
    stats_->m.current_bytes += bytes;
    stats_->m.peak_bytes = std::max(stats_->m.peak_bytes, stats_->m.current_bytes);
    ++stats_->m.allocations;
    std::shared_ptr<Stats> stats = stats_;
    std::shared_ptr<void> storage(p, [stats, bytes](void* q) {
      delete[] static_cast<float*>(q);
      stats->m.current_bytes -= bytes;
    });
    return Tensor(shape, dtype, std::move(storage));
  }
  Status CopyFromHost(const float* src, Tensor* dst) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("copy_from_host", {dst}));
    std::copy(src, src + dst->numel(), F(*dst));
    RoundAll(dst);
    return Status::Ok();
  }
  Status CopyToHost(const Tensor& src, float* dst) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("copy_to_host", {&src}));
    std::copy(F(src), F(src) + src.numel(), dst);
    return Status::Ok();
  }
  Status FillRandom(Tensor* t, uint64_t seed, float scale) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("fill_random", {t}));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    float* p = F(*t);
    const float smallest = scale * (1.0f / 1024.0f);  // far from zero in every dtype
    for (int64_t i = 0; i < t->numel(); ++i) {
      float x = u(rng);
      if (std::fabs(x) < smallest) x = std::copysign(smallest, x == 0.0f ? 1.0f : x);
      p[i] = x;
    }
    RoundAll(t);
    return Status::Ok();
  }
  Status Fill(Tensor* t, float value) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("fill", {t}));
    std::fill(F(*t), F(*t) + t->numel(), RoundToDtype(t->dtype(), value));
    return Status::Ok();
  }
  MemoryStats Memory() const override { return stats_->m; }
  void ResetPeakMemory() override { stats_->m.peak_bytes = stats_->m.current_bytes; }

  // ---- compute
  Status Gemm(const GemmArgs& args, const Tensor& a, const Tensor& b, Tensor* c) override {
    MESHPLAN_ASSIGN_OR_RETURN(const GemmDims g, kChecks.Gemm(args, a, b, c));
    const int64_t batch = g.batch, m = g.m, n = g.n, ar = g.a_rows, ac = g.a_cols, br = g.b_rows, bc = g.b_cols;
    for (int64_t i = 0; i < batch; ++i) {
      Eigen::Map<const RowMat> A(F(a) + i * ar * ac, ar, ac);
      Eigen::Map<const RowMat> B(F(b) + i * br * bc, br, bc);
      Eigen::Map<RowMat> C(F(*c) + i * m * n, m, n);
      // beta == 0 must not read C (it may hold anything, NaN included), as BLAS specifies.
      auto run = [&](const auto& opa, const auto& opb) {
        if (args.beta == 0.0f) C.noalias() = args.alpha * (opa * opb);
        else {
          C *= args.beta;
          C.noalias() += args.alpha * (opa * opb);
        }
      };
      if (!args.transpose_a && !args.transpose_b) run(A, B);
      else if (args.transpose_a && !args.transpose_b) run(A.transpose(), B);
      else if (!args.transpose_a && args.transpose_b) run(A, B.transpose());
      else run(A.transpose(), B.transpose());
    }
    RoundAll(c);
    return Status::Ok();
  }

  // The last key query row i may see (exclusive end).
  static int64_t KeyEnd(bool causal, int64_t i, const AttnDims& x) {
    if (!causal) return x.skv;
    return std::clamp<int64_t>(i + (x.skv - x.sq) + 1, 0, x.skv);
  }

  Status AttentionForward(const AttentionArgs& args, const Tensor& q, const Tensor& k, const Tensor& v, Tensor* out,
                          Tensor* lse) override {
    auto dims = kChecks.Attention("attention_forward", args, q, k, v);
    if (!dims.ok()) return dims.status();
    const AttnDims x = *dims;
    MESHPLAN_RETURN_IF_ERROR(Defined("attention_forward", {out, lse}));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_forward", *out, x.b * x.h * x.sq * x.dv, "out"));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_forward", *lse, x.b * x.h * x.sq, "lse"));
    std::vector<float> p(static_cast<size_t>(x.skv));
    for (int64_t bh = 0; bh < x.b * x.h; ++bh) {
      const float* Q = F(q) + bh * x.sq * x.d;
      const float* K = F(k) + bh * x.skv * x.d;
      const float* V = F(v) + bh * x.skv * x.dv;
      float* O = F(*out) + bh * x.sq * x.dv;
      float* L = F(*lse) + bh * x.sq;
      for (int64_t i = 0; i < x.sq; ++i) {
        const int64_t end = KeyEnd(args.causal, i, x);
        float* o = O + i * x.dv;
        std::fill(o, o + x.dv, 0.0f);
        if (end == 0) {  // no visible key: a zero row, lse = -inf
          L[i] = -std::numeric_limits<float>::infinity();
          continue;
        }
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < end; ++j) {
          float s = 0;
          for (int64_t t = 0; t < x.d; ++t) s += Q[i * x.d + t] * K[j * x.d + t];
          p[static_cast<size_t>(j)] = s * x.scale;
          mx = std::max(mx, p[static_cast<size_t>(j)]);
        }
        float sum = 0;
        for (int64_t j = 0; j < end; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
        for (int64_t j = 0; j < end; ++j) {
          const float w = p[static_cast<size_t>(j)] / sum;
          for (int64_t t = 0; t < x.dv; ++t) o[t] += w * V[j * x.dv + t];
        }
        L[i] = mx + std::log(sum);
      }
    }
    RoundAll(out);
    return Status::Ok();
  }

  Status AttentionBackward(const AttentionArgs& args, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& out, const Tensor& dout, const Tensor& lse, Tensor* dq, Tensor* dk,
                           Tensor* dv) override {
    auto dims = kChecks.Attention("attention_backward", args, q, k, v);
    if (!dims.ok()) return dims.status();
    const AttnDims x = *dims;
    MESHPLAN_RETURN_IF_ERROR(Defined("attention_backward", {&out, &dout, &lse, dq, dk, dv}));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_backward", out, x.b * x.h * x.sq * x.dv, "out"));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_backward", dout, x.b * x.h * x.sq * x.dv, "dout"));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_backward", lse, x.b * x.h * x.sq, "lse"));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("attention_backward", q, *dq));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("attention_backward", k, *dk));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("attention_backward", v, *dv));
    std::fill(F(*dq), F(*dq) + dq->numel(), 0.0f);
    std::fill(F(*dk), F(*dk) + dk->numel(), 0.0f);
    std::fill(F(*dv), F(*dv) + dv->numel(), 0.0f);
    // FlashAttention-2's backward, one row at a time (Dao 2023, Algorithm 2): P = exp(S - lse),
    // dP = dO V^T, D = rowsum(dO o O), dS = P o (dP - D), dQ = scale dS K, dK = scale dS^T Q,
    // dV = P^T dO.
    for (int64_t bh = 0; bh < x.b * x.h; ++bh) {
      const float* Q = F(q) + bh * x.sq * x.d;
      const float* K = F(k) + bh * x.skv * x.d;
      const float* V = F(v) + bh * x.skv * x.dv;
      const float* O = F(out) + bh * x.sq * x.dv;
      const float* dO = F(dout) + bh * x.sq * x.dv;
      const float* L = F(lse) + bh * x.sq;
      float* dQ = F(*dq) + bh * x.sq * x.d;
      float* dK = F(*dk) + bh * x.skv * x.d;
      float* dV = F(*dv) + bh * x.skv * x.dv;
      for (int64_t i = 0; i < x.sq; ++i) {
        const int64_t end = KeyEnd(args.causal, i, x);
        if (end == 0) continue;
        float D = 0;
        for (int64_t t = 0; t < x.dv; ++t) D += dO[i * x.dv + t] * O[i * x.dv + t];
        for (int64_t j = 0; j < end; ++j) {
          float s = 0;
          for (int64_t t = 0; t < x.d; ++t) s += Q[i * x.d + t] * K[j * x.d + t];
          const float P = std::exp(s * x.scale - L[i]);
          float dP = 0;
          for (int64_t t = 0; t < x.dv; ++t) {
            dP += dO[i * x.dv + t] * V[j * x.dv + t];
            dV[j * x.dv + t] += P * dO[i * x.dv + t];
          }
          const float dS = P * (dP - D) * x.scale;
          for (int64_t t = 0; t < x.d; ++t) {
            dQ[i * x.d + t] += dS * K[j * x.d + t];
            dK[j * x.d + t] += dS * Q[i * x.d + t];
          }
        }
      }
    }
    RoundAll(dq);
    RoundAll(dk);
    RoundAll(dv);
    return Status::Ok();
  }

  Status NormForward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* y,
                     Tensor* mean, Tensor* rstd) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.NormForward(rms, x, gamma, beta, y, mean, rstd));
    const int64_t h = Last(x), rows = Rows(x);
    const float* g = F(gamma);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = F(x) + r * h;
      float* yr = F(*y) + r * h;
      float mu = 0;
      if (!rms) {
        for (int64_t i = 0; i < h; ++i) mu += xr[i];
        mu /= static_cast<float>(h);
      }
      float var = 0;
      for (int64_t i = 0; i < h; ++i) var += (xr[i] - mu) * (xr[i] - mu);
      const float rs = 1.0f / std::sqrt(var / static_cast<float>(h) + eps);
      for (int64_t i = 0; i < h; ++i) yr[i] = (xr[i] - mu) * rs * g[i] + (rms ? 0.0f : F(beta)[i]);
      if (!rms) F(*mean)[r] = mu;
      F(*rstd)[r] = rs;
    }
    RoundAll(y);
    return Status::Ok();
  }

  Status NormBackward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                      const Tensor& dy, Tensor* dx, Tensor* dgamma, Tensor* dbeta) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.NormBackward(rms, x, gamma, mean, rstd, dy, dx, dgamma, dbeta));
    const int64_t h = Last(x), rows = Rows(x);
    // dxhat = dy gamma; dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) (layernorm);
    // rmsnorm drops the mean(dxhat) term. dgamma = sum_rows dy xhat; dbeta = sum_rows dy.
    std::vector<float> dg(static_cast<size_t>(h), 0.0f), db(static_cast<size_t>(h), 0.0f);
    const float* g = F(gamma);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = F(x) + r * h;
      const float* dyr = F(dy) + r * h;
      float* dxr = F(*dx) + r * h;
      const float mu = rms ? 0.0f : F(mean)[r], rs = F(rstd)[r];
      float sum_d = 0, sum_dx = 0;
      for (int64_t i = 0; i < h; ++i) {
        const float xhat = (xr[i] - mu) * rs, d = dyr[i] * g[i];
        sum_d += d;
        sum_dx += d * xhat;
        dg[static_cast<size_t>(i)] += dyr[i] * xhat;
        db[static_cast<size_t>(i)] += dyr[i];
      }
      const float hf = static_cast<float>(h);
      for (int64_t i = 0; i < h; ++i) {
        const float xhat = (xr[i] - mu) * rs, d = dyr[i] * g[i];
        dxr[i] = rs * (d - (rms ? 0.0f : sum_d / hf) - xhat * sum_dx / hf);
      }
    }
    std::copy(dg.begin(), dg.end(), F(*dgamma));
    RoundAll(dx);
    RoundAll(dgamma);
    if (!rms) {
      std::copy(db.begin(), db.end(), F(*dbeta));
      RoundAll(dbeta);
    }
    return Status::Ok();
  }

  static constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi)
  Status GeluForward(const Tensor& x, Tensor* y) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("gelu_forward", {&x, y}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("gelu_forward", x, *y));
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float v = F(x)[i];
      F(*y)[i] = 0.5f * v * (1.0f + std::tanh(kGeluC * (v + 0.044715f * v * v * v)));
    }
    RoundAll(y);
    return Status::Ok();
  }
  Status GeluBackward(const Tensor& x, const Tensor& dy, Tensor* dx) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("gelu_backward", {&x, &dy, dx}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("gelu_backward", x, dy));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("gelu_backward", x, *dx));
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float v = F(x)[i];
      const float t = std::tanh(kGeluC * (v + 0.044715f * v * v * v));
      const float d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * v * v);
      F(*dx)[i] = F(dy)[i] * d;
    }
    RoundAll(dx);
    return Status::Ok();
  }
  static float Sigmoid(float g) { return 1.0f / (1.0f + std::exp(-g)); }
  Status SwigluForward(const Tensor& x, Tensor* y) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("swiglu_forward", {&x, y}));
    const int64_t f2 = Last(x), rows = Rows(x), f = f2 / 2;
    if (f2 % 2 != 0) return Bad("swiglu_forward", "the last extent of x must be even ([gate | up])");
    MESHPLAN_RETURN_IF_ERROR(NumelIs("swiglu_forward", *y, rows * f, "y"));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < f; ++i) {
        const float g = F(x)[r * f2 + i], u = F(x)[r * f2 + f + i];
        F(*y)[r * f + i] = g * Sigmoid(g) * u;
      }
    RoundAll(y);
    return Status::Ok();
  }
  Status SwigluBackward(const Tensor& x, const Tensor& dy, Tensor* dx) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("swiglu_backward", {&x, &dy, dx}));
    const int64_t f2 = Last(x), rows = Rows(x), f = f2 / 2;
    if (f2 % 2 != 0) return Bad("swiglu_backward", "the last extent of x must be even ([gate | up])");
    MESHPLAN_RETURN_IF_ERROR(NumelIs("swiglu_backward", dy, rows * f, "dy"));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("swiglu_backward", x, *dx));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < f; ++i) {
        const float g = F(x)[r * f2 + i], u = F(x)[r * f2 + f + i], d = F(dy)[r * f + i];
        const float s = Sigmoid(g);
        F(*dx)[r * f2 + i] = d * u * s * (1.0f + g * (1.0f - s));  // d silu/dg
        F(*dx)[r * f2 + f + i] = d * g * s;
      }
    RoundAll(dx);
    return Status::Ok();
  }
  Status SoftmaxForward(const Tensor& x, Tensor* y) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("softmax_forward", {&x, y}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("softmax_forward", x, *y));
    const int64_t n = Last(x), rows = Rows(x);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = F(x) + r * n;
      float* yr = F(*y) + r * n;
      const float mx = *std::max_element(xr, xr + n);
      float sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += (yr[i] = std::exp(xr[i] - mx));
      for (int64_t i = 0; i < n; ++i) yr[i] /= sum;
    }
    RoundAll(y);
    return Status::Ok();
  }
  Status SoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor* dx) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("softmax_backward", {&y, &dy, dx}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("softmax_backward", y, dy));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("softmax_backward", y, *dx));
    const int64_t n = Last(y), rows = Rows(y);
    for (int64_t r = 0; r < rows; ++r) {
      const float* yr = F(y) + r * n;
      const float* dyr = F(dy) + r * n;
      float dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += dyr[i] * yr[i];
      for (int64_t i = 0; i < n; ++i) F(*dx)[r * n + i] = yr[i] * (dyr[i] - dot);
    }
    RoundAll(dx);
    return Status::Ok();
  }
  Status Add(const Tensor& a, const Tensor& b, float alpha, Tensor* out) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.Add(a, b, out));
    const float *pa = F(a), *pb = F(b);
    float* po = F(*out);
    for (int64_t i = 0; i < a.numel(); ++i) po[i] = pa[i] + alpha * pb[i];
    RoundAll(out);
    return Status::Ok();
  }
  Status AdamUpdate(const AdamArgs& args, const Tensor& grad, Tensor* param, Tensor* m, Tensor* v) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.Adam(args, grad, param, m, v));
    const float c1 = 1.0f - std::pow(args.beta1, static_cast<float>(args.step));
    const float c2 = 1.0f - std::pow(args.beta2, static_cast<float>(args.step));
    float *p = F(*param), *pm = F(*m), *pv = F(*v);
    const float* g = F(grad);
    for (int64_t i = 0; i < grad.numel(); ++i) {
      pm[i] = args.beta1 * pm[i] + (1.0f - args.beta1) * g[i];
      pv[i] = args.beta2 * pv[i] + (1.0f - args.beta2) * g[i] * g[i];
      const float mhat = pm[i] / c1, vhat = pv[i] / c2;
      p[i] -= args.lr * (mhat / (std::sqrt(vhat) + args.eps) + args.weight_decay * p[i]);
    }
    RoundAll(param);
    return Status::Ok();
  }

  // ---- collectives
  Result<std::unique_ptr<Communicator>> CreateCommunicator(HostComm* group) override {
    if (group == nullptr) return Bad("create_communicator", "no group");
    return std::unique_ptr<Communicator>(std::make_unique<CpuCommunicator>(group));
  }
  static HostComm* H(Communicator& c) { return static_cast<CpuCommunicator&>(c).host(); }
  Status AllReduce(Communicator& comm, Tensor* buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {buf}));
    MESHPLAN_RETURN_IF_ERROR(H(comm)->AllReduceSum(F(*buf), buf->numel(), what));
    RoundAll(buf);
    return Status::Ok();
  }
  Status AllGather(Communicator& comm, const Tensor& in, Tensor* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.AllGather(what, comm.size(), in, out));
    return H(comm)->AllGather(F(in), in.numel(), F(*out), what);
  }
  Status ReduceScatter(Communicator& comm, const Tensor& in, Tensor* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.ReduceScatter(what, comm.size(), in, out));
    MESHPLAN_RETURN_IF_ERROR(H(comm)->ReduceScatterSum(F(in), out->numel(), F(*out), what));
    RoundAll(out);
    return Status::Ok();
  }
  Status AllToAll(Communicator& comm, const Tensor& in, Tensor* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.AllToAll(what, comm.size(), in, out));
    return H(comm)->AllToAll(F(in), in.numel() / comm.size(), F(*out), what);
  }
  Status Broadcast(Communicator& comm, int root, Tensor* buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {buf}));
    return H(comm)->Broadcast(F(*buf), buf->numel(), root, what);
  }
  Status Send(Communicator& comm, int peer, const Tensor& buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {&buf}));
    return H(comm)->Send(F(buf), buf.numel(), peer, what);
  }
  Status Recv(Communicator& comm, int peer, Tensor* buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {buf}));
    return H(comm)->Recv(F(*buf), buf->numel(), peer, what);
  }
  Status FlushSends(Communicator& comm, const char* what) override { return H(comm)->FlushSends(what); }

  // ---- timing: every call has finished when it returns, so an event is a clock reading.
  Status Synchronize() override { return Status::Ok(); }
  Result<Event> RecordEvent() override {
    events_.push_back(clock_->NowSeconds());
    return Event{static_cast<int64_t>(events_.size()) - 1};
  }
  Result<double> ElapsedSeconds(Event start, Event stop) override {
    const auto n = static_cast<int64_t>(events_.size());
    if (start.id < 0 || stop.id < 0 || start.id >= n || stop.id >= n)
      return Bad("elapsed_seconds", "unknown event (released, or never recorded)");
    return events_[static_cast<size_t>(stop.id)] - events_[static_cast<size_t>(start.id)];
  }
  void ReleaseEvents() override { events_.clear(); }

 private:
  std::shared_ptr<Clock> clock_;
  std::shared_ptr<Stats> stats_;
  std::vector<double> events_;
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace meshplan::runtime
