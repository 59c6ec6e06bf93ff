// The conformance suite every backend runs (OpenMM's shared test bodies, in gtest form): each op
// against a double-precision reference computed here from the same (rounded) inputs, read back
// from the backend. Backward kernels are checked against central finite differences of the
// double forward reference, so forward and backward are tested independently of each other.
// Cpu is always instantiated; Cuda where the build has it (labelled gpu; skipped, with the
// backend's one-line reason, when no GPU can be used).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/host_comm.h"

namespace meshplan::runtime {
namespace {

using core::Dtype;
using Vec = std::vector<double>;

class BackendConformanceTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    auto b = MakeBackend(GetParam());
    if (!b.ok()) {
      if (b.status().code() == core::Status::Code::kUnavailable) GTEST_SKIP() << b.status().ToString();
      FAIL() << b.status().ToString();
    }
    backend_ = std::move(b).value();
  }

  // A tensor of random values (seeded per call) and its contents as doubles.
  Tensor Random(const std::vector<int64_t>& shape, Dtype d, float scale = 1.0f) {
    auto t = backend_->Allocate(shape, d);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    Tensor x = *t;
    EXPECT_TRUE(backend_->FillRandom(&x, ++seed_, scale).ok());
    return x;
  }
  Tensor Empty(const std::vector<int64_t>& shape, Dtype d) {
    auto t = backend_->Allocate(shape, d);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return *t;
  }
  Vec Read(const Tensor& t) {
    std::vector<float> f(static_cast<size_t>(t.numel()));
    EXPECT_TRUE(backend_->CopyToHost(t, f.data()).ok());
    return Vec(f.begin(), f.end());
  }

  std::unique_ptr<Backend> backend_;
  uint64_t seed_ = 1000;
};

// max |got - want| <= tol * max(max |want|, 1e-30): a normwise relative error.
::testing::AssertionResult Near(const Vec& got, const Vec& want, double tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  double scale = 1e-30, err = 0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    if (!(std::fabs(got[i] - want[i]) <= err)) {  // also catches NaN
      err = std::isnan(got[i]) ? INFINITY : std::fabs(got[i] - want[i]);
      at = i;
    }
  }
  if (err <= tol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max error " << err << " at " << at << " (got " << got[at] << ", want "
                                       << want[at] << ") > tol " << tol << " x scale " << scale;
}

// Central finite differences of a scalar function of x, in double: exact to ~1e-9 here.
Vec NumericGrad(const std::function<double(const Vec&)>& f, Vec x) {
  Vec g(x.size());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}
double Dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// ---- references, in double -----------------------------------------------------------------

// C = alpha op(A) op(B) + beta C0 for one batch entry; A is ar x ac row-major, etc.
Vec RefGemm(const Vec& a, const Vec& b, const Vec& c0, int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
            double alpha, double beta) {
  Vec c(static_cast<size_t>(batch * m * n));
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double av =
              ta ? a[static_cast<size_t>(z * m * k + p * m + i)] : a[static_cast<size_t>(z * m * k + i * k + p)];
          const double bv =
              tb ? b[static_cast<size_t>(z * k * n + j * k + p)] : b[static_cast<size_t>(z * k * n + p * n + j)];
          s += av * bv;
        }
        const size_t ci = static_cast<size_t>(z * m * n + i * n + j);
        c[ci] = alpha * s + (beta != 0 ? beta * c0[ci] : 0.0);
      }
  return c;
}

struct AttnShape {
  int64_t b, h, sq, skv, d, dv;
  bool causal;
};
Vec RefAttention(const AttnShape& s, const Vec& q, const Vec& k, const Vec& v, Vec* lse = nullptr) {
  Vec out(static_cast<size_t>(s.b * s.h * s.sq * s.dv), 0.0);
  if (lse) lse->assign(static_cast<size_t>(s.b * s.h * s.sq), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  for (int64_t bh = 0; bh < s.b * s.h; ++bh)
    for (int64_t i = 0; i < s.sq; ++i) {
      const int64_t end = s.causal ? std::clamp<int64_t>(i + s.skv - s.sq + 1, 0, s.skv) : s.skv;
      if (end == 0) {
        if (lse) (*lse)[static_cast<size_t>(bh * s.sq + i)] = -INFINITY;
        continue;
      }
      Vec p(static_cast<size_t>(end));
      double mx = -INFINITY;
      for (int64_t j = 0; j < end; ++j) {
        double dot = 0;
        for (int64_t t = 0; t < s.d; ++t)
          dot += q[static_cast<size_t>((bh * s.sq + i) * s.d + t)] * k[static_cast<size_t>((bh * s.skv + j) * s.d + t)];
        p[static_cast<size_t>(j)] = dot * scale;
        mx = std::max(mx, p[static_cast<size_t>(j)]);
      }
      double sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < end; ++j)
        for (int64_t t = 0; t < s.dv; ++t)
          out[static_cast<size_t>((bh * s.sq + i) * s.dv + t)] +=
              p[static_cast<size_t>(j)] / sum * v[static_cast<size_t>((bh * s.skv + j) * s.dv + t)];
      if (lse) (*lse)[static_cast<size_t>(bh * s.sq + i)] = mx + std::log(sum);
    }
  return out;
}

Vec RefNorm(bool rms, const Vec& x, const Vec& g, const Vec& beta, int64_t h, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(h); ++r) {
    double mu = 0, var = 0;
    if (!rms) {
      for (int64_t i = 0; i < h; ++i) mu += x[r * h + i];
      mu /= static_cast<double>(h);
    }
    for (int64_t i = 0; i < h; ++i) var += (x[r * h + i] - mu) * (x[r * h + i] - mu);
    const double rs = 1 / std::sqrt(var / static_cast<double>(h) + eps);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = (x[r * h + i] - mu) * rs * g[i] + (rms ? 0 : beta[i]);
  }
  return y;
}
double RefGelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
Vec RefSwiglu(const Vec& x, int64_t f) {
  const size_t rows = x.size() / static_cast<size_t>(2 * f);
  Vec y(rows * static_cast<size_t>(f));
  for (size_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < f; ++i) {
      const double g = x[r * 2 * f + i], u = x[r * 2 * f + f + i];
      y[r * f + i] = g / (1 + std::exp(-g)) * u;
    }
  return y;
}
Vec RefSoftmax(const Vec& x, int64_t n) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(n); ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[r * n + i]);
    for (int64_t i = 0; i < n; ++i) sum += (y[r * n + i] = std::exp(x[r * n + i] - mx));
    for (int64_t i = 0; i < n; ++i) y[r * n + i] /= sum;
  }
  return y;
}

// ---- GEMM --------------------------------------------------------------------------------

TEST_P(BackendConformanceTest, GemmMatchesReferenceForEveryDtypeAndTranspose) {
  for (Dtype d : {Dtype::kFp32, Dtype::kBf16, Dtype::kFp16}) {
    for (int64_t batch : {int64_t{0}, int64_t{3}}) {  // 0: rank-2 tensors
      for (int tr = 0; tr < 4; ++tr) {
        const bool ta = tr & 1, tb = tr & 2;
        const int64_t m = 37, n = 29, k = 70;  // odd sizes: no kernel may assume multiples of 8
        auto shape = [&](int64_t r, int64_t c) {
          return batch ? std::vector<int64_t>{batch, r, c} : std::vector<int64_t>{r, c};
        };
        Tensor a = Random(ta ? shape(k, m) : shape(m, k), d);
        Tensor b = Random(tb ? shape(n, k) : shape(k, n), d);
        Tensor c = Random(shape(m, n), d);
        const Vec c0 = Read(c);
        GemmArgs args{.transpose_a = ta, .transpose_b = tb, .alpha = 0.5f, .beta = 0.25f};
        ASSERT_TRUE(backend_->Gemm(args, a, b, &c).ok());
        const Vec want = RefGemm(Read(a), Read(b), c0, std::max<int64_t>(batch, 1), m, n, k, ta, tb, 0.5, 0.25);
        EXPECT_TRUE(Near(Read(c), want, RelativeTolerance(d, k)))
            << core::Name(d) << " batch " << batch << " ta " << ta << " tb " << tb;
      }
    }
  }
}

TEST_P(BackendConformanceTest, GemmWithBetaZeroNeverReadsC) {
  Tensor a = Random({8, 16}, Dtype::kFp32), b = Random({16, 4}, Dtype::kFp32), c = Empty({8, 4}, Dtype::kFp32);
  ASSERT_TRUE(backend_->Fill(&c, NAN).ok());  // BLAS: beta = 0 means C is not an input
  ASSERT_TRUE(backend_->Gemm({}, a, b, &c).ok());
  EXPECT_TRUE(Near(Read(c), RefGemm(Read(a), Read(b), {}, 1, 8, 4, 16, false, false, 1, 0), 1e-5));
}

TEST_P(BackendConformanceTest, GemmRejectsShapesThatDoNotMatch) {
  Tensor a = Random({8, 16}, Dtype::kFp32), b = Random({15, 4}, Dtype::kFp32), c = Empty({8, 4}, Dtype::kFp32);
  const core::Status s = backend_->Gemm({}, a, b, &c);
  EXPECT_EQ(s.code(), core::Status::Code::kInvalidArgument) << s.ToString();
  Tensor c16 = Empty({8, 4}, Dtype::kBf16);
  b = Random({16, 4}, Dtype::kFp32);
  EXPECT_EQ(backend_->Gemm({}, a, b, &c16).code(), core::Status::Code::kInvalidArgument);
}

// ---- attention ---------------------------------------------------------------------------

TEST_P(BackendConformanceTest, AttentionForwardMatchesReference) {
  // Causal and not; s_q < s_kv is a context-parallel rank's view (bottom-right aligned mask).
  for (AttnShape s : {AttnShape{2, 3, 17, 17, 16, 16, true}, AttnShape{1, 2, 9, 9, 8, 12, false},
                      AttnShape{1, 2, 5, 13, 8, 8, true}}) {
    for (Dtype d : {Dtype::kFp32, Dtype::kBf16}) {
      Tensor q = Random({s.b, s.h, s.sq, s.d}, d), k = Random({s.b, s.h, s.skv, s.d}, d),
             v = Random({s.b, s.h, s.skv, s.dv}, d);
      Tensor out = Empty({s.b, s.h, s.sq, s.dv}, d), lse = Empty({s.b, s.h, s.sq}, Dtype::kFp32);
      ASSERT_TRUE(backend_->AttentionForward({.causal = s.causal}, q, k, v, &out, &lse).ok());
      Vec want_lse;
      const Vec want = RefAttention(s, Read(q), Read(k), Read(v), &want_lse);
      EXPECT_TRUE(Near(Read(out), want, RelativeTolerance(d, s.skv))) << core::Name(d) << " sq " << s.sq;
      EXPECT_TRUE(Near(Read(lse), want_lse, RelativeTolerance(Dtype::kFp32, s.skv)));
    }
  }
}

TEST_P(BackendConformanceTest, AttentionBackwardMatchesFiniteDifferences) {
  for (AttnShape s :
       {AttnShape{1, 2, 6, 6, 4, 4, true}, AttnShape{1, 1, 4, 7, 4, 3, true}, AttnShape{2, 1, 5, 5, 3, 3, false}}) {
    Tensor q = Random({s.b, s.h, s.sq, s.d}, Dtype::kFp32), k = Random({s.b, s.h, s.skv, s.d}, Dtype::kFp32),
           v = Random({s.b, s.h, s.skv, s.dv}, Dtype::kFp32), dout = Random({s.b, s.h, s.sq, s.dv}, Dtype::kFp32);
    Tensor out = Empty({s.b, s.h, s.sq, s.dv}, Dtype::kFp32), lse = Empty({s.b, s.h, s.sq}, Dtype::kFp32);
    Tensor dq = Empty(q.shape(), Dtype::kFp32), dk = Empty(k.shape(), Dtype::kFp32),
           dv = Empty(v.shape(), Dtype::kFp32);
    AttentionArgs args{.causal = s.causal};
    ASSERT_TRUE(backend_->AttentionForward(args, q, k, v, &out, &lse).ok());
    ASSERT_TRUE(backend_->AttentionBackward(args, q, k, v, out, dout, lse, &dq, &dk, &dv).ok());
    const Vec Q = Read(q), K = Read(k), V = Read(v), dO = Read(dout);
    // L = <dout, attention(q, k, v)>: its gradients are what backward returns.
    EXPECT_TRUE(Near(Read(dq), NumericGrad([&](const Vec& x) { return Dot(dO, RefAttention(s, x, K, V)); }, Q), 1e-4));
    EXPECT_TRUE(Near(Read(dk), NumericGrad([&](const Vec& x) { return Dot(dO, RefAttention(s, Q, x, V)); }, K), 1e-4));
    EXPECT_TRUE(Near(Read(dv), NumericGrad([&](const Vec& x) { return Dot(dO, RefAttention(s, Q, K, x)); }, V), 1e-4));
  }
}

// ---- norms, activations, softmax, elementwise -----------------------------------------------

TEST_P(BackendConformanceTest, NormForwardAndBackwardMatchReference) {
  for (bool rms : {false, true}) {
    const int64_t rows = 6, h = 24;
    const double eps = 1e-5;
    for (Dtype d : {Dtype::kFp32, Dtype::kBf16}) {
      Tensor x = Random({rows, h}, d), g = Random({h}, d), be = Random({h}, d), y = Empty({rows, h}, d);
      Tensor mean = Empty({rows}, Dtype::kFp32), rstd = Empty({rows}, Dtype::kFp32);
      ASSERT_TRUE(backend_->NormForward(rms, x, g, rms ? Tensor() : be, 1e-5f, &y, rms ? nullptr : &mean, &rstd).ok());
      EXPECT_TRUE(Near(Read(y), RefNorm(rms, Read(x), Read(g), Read(be), h, eps), RelativeTolerance(d, h)))
          << (rms ? "rmsnorm " : "layernorm ") << core::Name(d);
    }
    Tensor x = Random({rows, h}, Dtype::kFp32), g = Random({h}, Dtype::kFp32), be = Random({h}, Dtype::kFp32);
    Tensor dy = Random({rows, h}, Dtype::kFp32), y = Empty({rows, h}, Dtype::kFp32);
    Tensor mean = Empty({rows}, Dtype::kFp32), rstd = Empty({rows}, Dtype::kFp32);
    Tensor dx = Empty({rows, h}, Dtype::kFp32), dg = Empty({h}, Dtype::kFp32), db = Empty({h}, Dtype::kFp32);
    ASSERT_TRUE(backend_->NormForward(rms, x, g, be, 1e-5f, &y, &mean, &rstd).ok());
    ASSERT_TRUE(backend_->NormBackward(rms, x, g, mean, rstd, dy, &dx, &dg, &db).ok());
    const Vec X = Read(x), G = Read(g), B = Read(be), DY = Read(dy);
    EXPECT_TRUE(
        Near(Read(dx), NumericGrad([&](const Vec& v) { return Dot(DY, RefNorm(rms, v, G, B, h, eps)); }, X), 1e-4));
    EXPECT_TRUE(
        Near(Read(dg), NumericGrad([&](const Vec& v) { return Dot(DY, RefNorm(rms, X, v, B, h, eps)); }, G), 1e-4));
    if (!rms) {
      EXPECT_TRUE(
          Near(Read(db), NumericGrad([&](const Vec& v) { return Dot(DY, RefNorm(rms, X, G, v, h, eps)); }, B), 1e-4));
    }
  }
}

TEST_P(BackendConformanceTest, GeluForwardAndBackwardMatchReference) {
  Tensor x = Random({5, 33}, Dtype::kFp32, 3.0f), y = Empty({5, 33}, Dtype::kFp32);
  Tensor dy = Random({5, 33}, Dtype::kFp32), dx = Empty({5, 33}, Dtype::kFp32);
  ASSERT_TRUE(backend_->GeluForward(x, &y).ok());
  ASSERT_TRUE(backend_->GeluBackward(x, dy, &dx).ok());
  auto gelu = [](const Vec& v) {
    Vec r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = RefGelu(v[i]);
    return r;
  };
  const Vec X = Read(x), DY = Read(dy);
  EXPECT_TRUE(Near(Read(y), gelu(X), 1e-6));
  EXPECT_TRUE(Near(Read(dx), NumericGrad([&](const Vec& v) { return Dot(DY, gelu(v)); }, X), 1e-5));
}

TEST_P(BackendConformanceTest, SwigluForwardAndBackwardMatchReference) {
  const int64_t f = 10;
  Tensor x = Random({4, 2 * f}, Dtype::kFp32, 3.0f), y = Empty({4, f}, Dtype::kFp32);
  Tensor dy = Random({4, f}, Dtype::kFp32), dx = Empty({4, 2 * f}, Dtype::kFp32);
  ASSERT_TRUE(backend_->SwigluForward(x, &y).ok());
  ASSERT_TRUE(backend_->SwigluBackward(x, dy, &dx).ok());
  const Vec X = Read(x), DY = Read(dy);
  EXPECT_TRUE(Near(Read(y), RefSwiglu(X, f), 1e-6));
  EXPECT_TRUE(Near(Read(dx), NumericGrad([&](const Vec& v) { return Dot(DY, RefSwiglu(v, f)); }, X), 1e-5));
}

TEST_P(BackendConformanceTest, SoftmaxForwardAndBackwardMatchReference) {
  const int64_t n = 50;
  for (Dtype d : {Dtype::kFp32, Dtype::kBf16, Dtype::kFp16}) {
    Tensor x = Random({3, n}, d, 8.0f), y = Empty({3, n}, d);
    ASSERT_TRUE(backend_->SoftmaxForward(x, &y).ok());
    EXPECT_TRUE(Near(Read(y), RefSoftmax(Read(x), n), RelativeTolerance(d, n))) << core::Name(d);
  }
  Tensor x = Random({3, n}, Dtype::kFp32, 4.0f), y = Empty({3, n}, Dtype::kFp32);
  Tensor dy = Random({3, n}, Dtype::kFp32), dx = Empty({3, n}, Dtype::kFp32);
  ASSERT_TRUE(backend_->SoftmaxForward(x, &y).ok());
  ASSERT_TRUE(backend_->SoftmaxBackward(y, dy, &dx).ok());
  const Vec DY = Read(dy);
  EXPECT_TRUE(Near(Read(dx), NumericGrad([&](const Vec& v) { return Dot(DY, RefSoftmax(v, n)); }, Read(x)), 1e-5));
}

TEST_P(BackendConformanceTest, AddMatchesReferenceAndMayRunInPlace) {
  Tensor a = Random({7, 9}, Dtype::kBf16), b = Random({7, 9}, Dtype::kBf16);
  const Vec A = Read(a), B = Read(b);
  ASSERT_TRUE(backend_->Add(a, b, -0.5f, &a).ok());  // out aliases a
  Vec want(A.size());
  for (size_t i = 0; i < A.size(); ++i) want[i] = A[i] - 0.5 * B[i];
  EXPECT_TRUE(Near(Read(a), want, RelativeTolerance(Dtype::kBf16, 1)));
}

TEST_P(BackendConformanceTest, AdamUpdateMatchesKingmaBaAlgorithm1) {
  const int64_t n = 40;
  Tensor p = Random({n}, Dtype::kFp32), g = Random({n}, Dtype::kFp32);
  Tensor m = Random({n}, Dtype::kFp32, 0.1f), v = Random({n}, Dtype::kFp32, 0.1f);
  ASSERT_TRUE(backend_->Fill(&v, 0.01f).ok());  // v >= 0
  const Vec P = Read(p), G = Read(g), M = Read(m), V = Read(v);
  AdamArgs args{.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 3};
  ASSERT_TRUE(backend_->AdamUpdate(args, g, &p, &m, &v).ok());
  Vec want_p(n), want_m(n), want_v(n);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    want_m[i] = 0.9 * M[i] + 0.1 * G[i];
    want_v[i] = 0.95 * V[i] + 0.05 * G[i] * G[i];
    const double mhat = want_m[i] / (1 - std::pow(0.9, 3)), vhat = want_v[i] / (1 - std::pow(0.95, 3));
    want_p[i] = P[i] - 1e-2 * (mhat / (std::sqrt(vhat) + 1e-8) + 0.1 * P[i]);
  }
  EXPECT_TRUE(Near(Read(m), want_m, 1e-6));
  EXPECT_TRUE(Near(Read(v), want_v, 1e-6));
  EXPECT_TRUE(Near(Read(p), want_p, 1e-5));
}

// ---- memory, data, collectives on a group of one, timing ---------------------------------

TEST_P(BackendConformanceTest, FillRandomIsDeterministicAndNeverZero) {
  Tensor a = Empty({1000}, Dtype::kBf16), b = Empty({1000}, Dtype::kBf16);
  ASSERT_TRUE(backend_->FillRandom(&a, 7, 1.0f).ok());
  ASSERT_TRUE(backend_->FillRandom(&b, 7, 1.0f).ok());
  const Vec A = Read(a);
  EXPECT_EQ(A, Read(b));
  for (double x : A) {
    EXPECT_NE(x, 0.0);
    EXPECT_LE(std::fabs(x), 1.0);
  }
}

TEST_P(BackendConformanceTest, MemoryStatsTrackAllocationAndRelease) {
  const MemoryStats before = backend_->Memory();
  {
    Tensor t = Empty({256, 256}, Dtype::kBf16);
    const MemoryStats during = backend_->Memory();
    // At least the logical bytes (256*256*2); the cpu backend stores fp32 (x2).
    EXPECT_GE(during.current_bytes - before.current_bytes, 256 * 256 * 2);
    EXPECT_GE(during.peak_bytes, during.current_bytes);
    EXPECT_EQ(during.allocations, before.allocations + 1);
  }
  EXPECT_EQ(backend_->Memory().current_bytes, before.current_bytes);
  backend_->ResetPeakMemory();
  EXPECT_EQ(backend_->Memory().peak_bytes, before.current_bytes);
}

TEST_P(BackendConformanceTest, CollectivesOnAGroupOfOneCopyAndSendHasNoPeer) {
  auto self = MakeSelfComm("self");
  auto comm = backend_->CreateCommunicator(self.get());
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  Tensor a = Random({64}, Dtype::kFp32), out = Empty({64}, Dtype::kFp32);
  const Vec A = Read(a);
  ASSERT_TRUE(backend_->AllReduce(**comm, &a, "test_all_reduce").ok());
  EXPECT_EQ(Read(a), A);
  ASSERT_TRUE(backend_->AllGather(**comm, a, &out, "test_all_gather").ok());
  EXPECT_EQ(Read(out), A);
  ASSERT_TRUE(backend_->ReduceScatter(**comm, a, &out, "test_reduce_scatter").ok());
  EXPECT_EQ(Read(out), A);
  ASSERT_TRUE(backend_->AllToAll(**comm, a, &out, "test_all_to_all").ok());
  EXPECT_EQ(Read(out), A);
  ASSERT_TRUE(backend_->Broadcast(**comm, 0, &a, "test_broadcast").ok());
  const core::Status s = backend_->Send(**comm, 1, a, "test_send");
  EXPECT_EQ(s.code(), core::Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("test_send"), std::string::npos) << s.ToString();  // names the op
  Tensor wrong = Empty({63}, Dtype::kFp32);
  EXPECT_FALSE(backend_->AllGather(**comm, a, &wrong, "test_all_gather").ok());
}

TEST_P(BackendConformanceTest, EventsMeasureElapsedTime) {
  auto start = backend_->RecordEvent();
  ASSERT_TRUE(start.ok());
  Tensor a = Random({64, 64}, Dtype::kFp32), c = Empty({64, 64}, Dtype::kFp32);
  ASSERT_TRUE(backend_->Gemm({}, a, a, &c).ok());
  auto stop = backend_->RecordEvent();
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(backend_->Synchronize().ok());
  auto t = backend_->ElapsedSeconds(*start, *stop);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_GE(*t, 0.0);
  EXPECT_LT(*t, 10.0);
  backend_->ReleaseEvents();
  EXPECT_FALSE(backend_->ElapsedSeconds(*start, *stop).ok());
}

std::string KindName(const ::testing::TestParamInfo<BackendKind>& info) { return Name(info.param); }
INSTANTIATE_TEST_SUITE_P(Cpu, BackendConformanceTest, ::testing::Values(BackendKind::kCpu), KindName);
#if MESHPLAN_HAVE_CUDA  // SetUp(): an Unavailable backend skips with its one-line reason
INSTANTIATE_TEST_SUITE_P(Cuda, BackendConformanceTest, ::testing::Values(BackendKind::kCuda), KindName);

// ---- cuda-only: what the shared suite cannot see (real 16/8-bit storage, fp8 and tf32 GEMMs)
// and shapes larger than one chunk of the kernels' thread blocks, checked against the cpu
// reference on the same inputs. Instantiated as Cuda/..., so the gpu label covers them.

class CudaBackendTest : public BackendConformanceTest {
 protected:
  // The same values in a cpu tensor (already representable in the dtype, so copying is exact).
  Tensor OnCpu(const Tensor& t) {
    auto c = cpu_->Allocate(t.shape(), t.dtype());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    Tensor x = *c;
    std::vector<float> f(static_cast<size_t>(t.numel()));
    EXPECT_TRUE(backend_->CopyToHost(t, f.data()).ok());
    EXPECT_TRUE(cpu_->CopyFromHost(f.data(), &x).ok());
    return x;
  }
  Tensor CpuEmpty(const std::vector<int64_t>& shape, Dtype d) {
    auto t = cpu_->Allocate(shape, d);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return *t;
  }
  Vec ReadCpu(const Tensor& t) {
    std::vector<float> f(static_cast<size_t>(t.numel()));
    EXPECT_TRUE(cpu_->CopyToHost(t, f.data()).ok());
    return Vec(f.begin(), f.end());
  }
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend();
};

TEST_P(CudaBackendTest, DescriptionNamesTheDeviceAndLibraries) {
  const std::string d = backend_->Description();
  for (const char* part : {"cuda: ", "sm_", "CUDA runtime", "cuBLAS", "NCCL"})
    EXPECT_NE(d.find(part), std::string::npos) << part << " missing from: " << d;
  EXPECT_EQ(d.find('\n'), std::string::npos);
}

TEST_P(CudaBackendTest, StoresSixteenBitValuesRoundedAsTheCpuEmulates) {
  // Ties, values near 1 and the fp16 range edges: the device's round-to-nearest-even conversion
  // must agree bit for bit with RoundToDtype, the cpu backend's emulation.
  std::vector<float> host = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-11f, 65504.0f, 0x1p-24f, 0x1p-26f, -2.5f};
  for (int i = 0; i < 200; ++i) host.push_back(std::ldexp(static_cast<float>(i * 7919 % 1000) - 500.0f, -(i % 30)));
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16}) {
    Tensor t = Empty({static_cast<int64_t>(host.size())}, d);
    ASSERT_TRUE(backend_->CopyFromHost(host.data(), &t).ok());
    const Vec got = Read(t);
    for (size_t i = 0; i < host.size(); ++i)
      EXPECT_EQ(got[i], static_cast<double>(RoundToDtype(d, host[i]))) << core::Name(d) << " value " << host[i];
  }
}

TEST_P(CudaBackendTest, MemoryStatsCountBytesInTheTensorsDtype) {
  const MemoryStats before = backend_->Memory();
  Tensor a = Empty({256, 256}, Dtype::kBf16);  // 2 bytes per element on the device
  EXPECT_EQ(backend_->Memory().current_bytes - before.current_bytes, 256 * 256 * 2);
  Tensor b = Empty({256, 256}, Dtype::kFp8);  // 1 byte
  EXPECT_EQ(backend_->Memory().current_bytes - before.current_bytes, 256 * 256 * 3);
  EXPECT_EQ(backend_->Allocate({4}, Dtype::kInt8).status().code(), core::Status::Code::kUnavailable);
}

TEST_P(CudaBackendTest, Fp8FillRandomIsDeterministicAndNeverZero) {
  Tensor a = Empty({4096}, Dtype::kFp8), b = Empty({4096}, Dtype::kFp8);
  ASSERT_TRUE(backend_->FillRandom(&a, 11, 0.01f).ok());  // scale/1024 is below fp8's subnormals
  ASSERT_TRUE(backend_->FillRandom(&b, 11, 0.01f).ok());
  const Vec A = Read(a);
  EXPECT_EQ(A, Read(b));
  for (double x : A) EXPECT_NE(x, 0.0);
}

TEST_P(CudaBackendTest, Fp8GemmMatchesReferenceInEveryLayout) {
  for (int64_t batch : {int64_t{0}, int64_t{2}}) {
    for (int tr = 0; tr < 4; ++tr) {
      const bool ta = tr & 1, tb = tr & 2;
      const int64_t m = 32, n = 48, k = 64;  // multiples of 16, as cuBLASLt's fp8 kernels need
      auto shape = [&](int64_t r, int64_t c) {
        return batch ? std::vector<int64_t>{batch, r, c} : std::vector<int64_t>{r, c};
      };
      Tensor a = Random(ta ? shape(k, m) : shape(m, k), Dtype::kFp8);
      Tensor b = Random(tb ? shape(n, k) : shape(k, n), Dtype::kFp8);
      Tensor c = Empty(shape(m, n), Dtype::kFp8);
      const GemmArgs args{.transpose_a = ta, .transpose_b = tb, .alpha = 0.5f};
      const core::Status s = backend_->Gemm(args, a, b, &c);
      if (s.code() == core::Status::Code::kUnavailable) GTEST_SKIP() << s.ToString();  // before sm_89
      ASSERT_TRUE(s.ok()) << s.ToString();
      const Vec want = RefGemm(Read(a), Read(b), {}, std::max<int64_t>(batch, 1), m, n, k, ta, tb, 0.5, 0);
      EXPECT_TRUE(Near(Read(c), want, RelativeTolerance(Dtype::kFp8, k)))
          << "batch " << batch << " ta " << ta << " tb " << tb;
    }
  }
  Tensor a = Random({32, 40}, Dtype::kFp8), b = Random({40, 16}, Dtype::kFp8), c = Empty({32, 16}, Dtype::kFp8);
  EXPECT_EQ(backend_->Gemm({}, a, b, &c).code(), core::Status::Code::kInvalidArgument);  // k = 40
}

TEST_P(CudaBackendTest, Tf32GemmMatchesReference) {
  const int64_t m = 64, n = 96, k = 256;
  Tensor a = Random({m, k}, Dtype::kTf32), b = Random({k, n}, Dtype::kTf32), c = Empty({m, n}, Dtype::kTf32);
  ASSERT_TRUE(backend_->Gemm({}, a, b, &c).ok());
  // tf32 keeps 11 significand bits of each input: bf16's tolerance is a safe bound.
  EXPECT_TRUE(
      Near(Read(c), RefGemm(Read(a), Read(b), {}, 1, m, n, k, false, false, 1, 0), RelativeTolerance(Dtype::kBf16, k)));
}

TEST_P(CudaBackendTest, LargeGemmMatchesTheCpuBackend) {
  for (Dtype d : {Dtype::kFp32, Dtype::kBf16}) {
    const int64_t m = 300, n = 520, k = 1000;
    Tensor a = Random({k, m}, d), b = Random({n, k}, d), c = Random({m, n}, d);
    Tensor ca = OnCpu(a), cb = OnCpu(b), cc = OnCpu(c);
    const GemmArgs args{.transpose_a = true, .transpose_b = true, .alpha = 1.5f, .beta = -1.0f};
    ASSERT_TRUE(backend_->Gemm(args, a, b, &c).ok());
    ASSERT_TRUE(cpu_->Gemm(args, ca, cb, &cc).ok());
    EXPECT_TRUE(Near(Read(c), ReadCpu(cc), 2 * RelativeTolerance(d, k))) << core::Name(d);
  }
}

TEST_P(CudaBackendTest, LongAttentionMatchesTheCpuBackend) {
  // Several 128-key chunks per row (online softmax), s_q < s_kv and s_q > s_kv, d != d_v.
  for (AttnShape s : {AttnShape{1, 2, 300, 300, 64, 64, true}, AttnShape{2, 1, 100, 260, 32, 48, true},
                      AttnShape{1, 1, 260, 130, 16, 16, true}, AttnShape{1, 2, 150, 150, 32, 32, false}}) {
    Tensor q = Random({s.b, s.h, s.sq, s.d}, Dtype::kFp32), k = Random({s.b, s.h, s.skv, s.d}, Dtype::kFp32),
           v = Random({s.b, s.h, s.skv, s.dv}, Dtype::kFp32), dout = Random({s.b, s.h, s.sq, s.dv}, Dtype::kFp32);
    Tensor out = Empty({s.b, s.h, s.sq, s.dv}, Dtype::kFp32), lse = Empty({s.b, s.h, s.sq}, Dtype::kFp32);
    Tensor dq = Empty(q.shape(), Dtype::kFp32), dk = Empty(k.shape(), Dtype::kFp32),
           dv = Empty(v.shape(), Dtype::kFp32);
    Tensor cq = OnCpu(q), ck = OnCpu(k), cv = OnCpu(v), cdout = OnCpu(dout);
    Tensor cout = CpuEmpty(out.shape(), Dtype::kFp32), clse = CpuEmpty(lse.shape(), Dtype::kFp32);
    Tensor cdq = CpuEmpty(q.shape(), Dtype::kFp32), cdk = CpuEmpty(k.shape(), Dtype::kFp32),
           cdv = CpuEmpty(v.shape(), Dtype::kFp32);
    const AttentionArgs args{.causal = s.causal};
    ASSERT_TRUE(backend_->AttentionForward(args, q, k, v, &out, &lse).ok());
    ASSERT_TRUE(backend_->AttentionBackward(args, q, k, v, out, dout, lse, &dq, &dk, &dv).ok());
    ASSERT_TRUE(cpu_->AttentionForward(args, cq, ck, cv, &cout, &clse).ok());
    ASSERT_TRUE(cpu_->AttentionBackward(args, cq, ck, cv, cout, cdout, clse, &cdq, &cdk, &cdv).ok());
    const std::string where = "sq " + std::to_string(s.sq) + " skv " + std::to_string(s.skv);
    EXPECT_TRUE(Near(Read(out), ReadCpu(cout), 1e-5)) << where;
    EXPECT_TRUE(Near(Read(lse), ReadCpu(clse), 1e-5)) << where;
    EXPECT_TRUE(Near(Read(dq), ReadCpu(cdq), 1e-4)) << where;
    EXPECT_TRUE(Near(Read(dk), ReadCpu(cdk), 1e-4)) << where;
    EXPECT_TRUE(Near(Read(dv), ReadCpu(cdv), 1e-4)) << where;
  }
}

TEST_P(CudaBackendTest, WideRowsMatchTheCpuBackend) {
  // Rows wider than a block (256 threads) and more rows than one dgamma chunk.
  const int64_t rows = 700, h = 1000;
  for (bool rms : {false, true}) {
    Tensor x = Random({rows, h}, Dtype::kFp32), g = Random({h}, Dtype::kFp32), be = Random({h}, Dtype::kFp32);
    Tensor dy = Random({rows, h}, Dtype::kFp32), y = Empty({rows, h}, Dtype::kFp32),
           dx = Empty({rows, h}, Dtype::kFp32);
    Tensor mean = Empty({rows}, Dtype::kFp32), rstd = Empty({rows}, Dtype::kFp32);
    Tensor dg = Empty({h}, Dtype::kFp32), db = Empty({h}, Dtype::kFp32);
    Tensor cx = OnCpu(x), cg = OnCpu(g), cbe = OnCpu(be), cdy = OnCpu(dy);
    Tensor cy = CpuEmpty({rows, h}, Dtype::kFp32), cdx = CpuEmpty({rows, h}, Dtype::kFp32);
    Tensor cmean = CpuEmpty({rows}, Dtype::kFp32), crstd = CpuEmpty({rows}, Dtype::kFp32);
    Tensor cdg = CpuEmpty({h}, Dtype::kFp32), cdb = CpuEmpty({h}, Dtype::kFp32);
    ASSERT_TRUE(backend_->NormForward(rms, x, g, be, 1e-5f, &y, &mean, &rstd).ok());
    ASSERT_TRUE(backend_->NormBackward(rms, x, g, mean, rstd, dy, &dx, &dg, &db).ok());
    ASSERT_TRUE(cpu_->NormForward(rms, cx, cg, cbe, 1e-5f, &cy, &cmean, &crstd).ok());
    ASSERT_TRUE(cpu_->NormBackward(rms, cx, cg, cmean, crstd, cdy, &cdx, &cdg, &cdb).ok());
    EXPECT_TRUE(Near(Read(y), ReadCpu(cy), 1e-5)) << rms;
    EXPECT_TRUE(Near(Read(rstd), ReadCpu(crstd), 1e-5)) << rms;
    EXPECT_TRUE(Near(Read(dx), ReadCpu(cdx), 1e-4)) << rms;
    EXPECT_TRUE(Near(Read(dg), ReadCpu(cdg), 1e-4)) << rms;
    if (!rms) {
      EXPECT_TRUE(Near(Read(db), ReadCpu(cdb), 1e-4));
    }
  }
  Tensor x = Random({3, 5000}, Dtype::kBf16, 8.0f), y = Empty({3, 5000}, Dtype::kBf16);
  Tensor cx = OnCpu(x), cy = CpuEmpty({3, 5000}, Dtype::kBf16);
  ASSERT_TRUE(backend_->SoftmaxForward(x, &y).ok());
  ASSERT_TRUE(cpu_->SoftmaxForward(cx, &cy).ok());
  EXPECT_TRUE(Near(Read(y), ReadCpu(cy), 2 * RelativeTolerance(Dtype::kBf16, 5000)));
}

TEST_P(CudaBackendTest, AsyncCallsAreOrderedAndEventsNeedSynchronize) {
  // Many queued kernels, then one Synchronize: the last result is the sum of all of them.
  Tensor acc = Empty({1 << 16}, Dtype::kFp32), one = Empty({1 << 16}, Dtype::kFp32);
  ASSERT_TRUE(backend_->Fill(&acc, 0.0f).ok());
  ASSERT_TRUE(backend_->Fill(&one, 1.0f).ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(backend_->Add(acc, one, 1.0f, &acc).ok());
  ASSERT_TRUE(backend_->Synchronize().ok());
  for (double x : Read(acc)) ASSERT_EQ(x, 100.0);
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaBackendTest, ::testing::Values(BackendKind::kCuda), KindName);
#endif

// Every build: kCuda either runs (a GPU build on a GPU machine) or says why not in one line
// starting "cuda backend: " (meshplan-run prints that line and exits 1; run_test.cmake checks
// the CLI side).
TEST(BackendTest, CudaIsUnavailableInOneLineOrRuns) {
  auto b = MakeBackend(BackendKind::kCuda);
  if (b.ok()) {
    EXPECT_EQ((*b)->kind(), BackendKind::kCuda);
    return;
  }
  EXPECT_EQ(b.status().code(), core::Status::Code::kUnavailable) << b.status().ToString();
  EXPECT_EQ(b.status().message().rfind("cuda backend: ", 0), 0u) << b.status().message();
  EXPECT_EQ(b.status().message().find('\n'), std::string::npos) << b.status().message();
}

// ---- cpu-only: the rounding that emulates 16-bit storage, and the injected clock -----------

TEST(CpuBackendTest, RoundToDtypeRoundsToNearestEven) {
  // bf16 keeps 8 significand bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7; even wins (1).
  EXPECT_EQ(RoundToDtype(Dtype::kBf16, 1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(RoundToDtype(Dtype::kBf16, 1.0f + 0x1p-8f + 0x1p-12f), 1.0f + 0x1p-7f);
  EXPECT_EQ(RoundToDtype(Dtype::kBf16, 1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);  // tie, odd -> up
  // fp16 keeps 11: 1 + 2^-11 ties to 1; 65504 is the largest finite value; 2^-24 the smallest.
  EXPECT_EQ(RoundToDtype(Dtype::kFp16, 1.0f + 0x1p-11f), 1.0f);
  EXPECT_EQ(RoundToDtype(Dtype::kFp16, 65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(RoundToDtype(Dtype::kFp16, 65520.0f)));
  EXPECT_EQ(RoundToDtype(Dtype::kFp16, 0x1p-24f), 0x1p-24f);
  EXPECT_EQ(RoundToDtype(Dtype::kFp16, 0x1p-26f), 0.0f);
  EXPECT_EQ(RoundToDtype(Dtype::kFp32, 1.0f + 0x1p-20f), 1.0f + 0x1p-20f);
}

class FakeClock final : public Clock {
 public:
  double NowSeconds() override { return now_ += 0.25; }  // each reading 0.25 s after the last

 private:
  double now_ = 0;
};

TEST(CpuBackendTest, EventsReadTheInjectedClock) {
  auto backend = MakeCpuBackend({.clock = std::make_shared<FakeClock>()});
  auto a = backend->RecordEvent();
  auto b = backend->RecordEvent();
  auto c = backend->RecordEvent();
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_DOUBLE_EQ(*backend->ElapsedSeconds(*a, *c), 0.5);
  EXPECT_DOUBLE_EQ(*backend->ElapsedSeconds(*b, *c), 0.25);
}

TEST(CpuBackendTest, Fp8IsUnavailableInOneLine) {
  auto backend = MakeCpuBackend();
  auto t = backend->Allocate({4, 4}, Dtype::kFp8);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), core::Status::Code::kUnavailable);
  EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
}

TEST(BackendTest, NamesRoundTrip) {
  for (BackendKind k : {BackendKind::kCpu, BackendKind::kCuda}) {
    BackendKind back{};
    ASSERT_TRUE(FromName(Name(k), &back));
    EXPECT_EQ(back, k);
  }
  BackendKind unused{};
  EXPECT_FALSE(FromName("rocm", &unused));
}

}  // namespace
}  // namespace meshplan::runtime
