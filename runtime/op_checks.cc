#include "runtime/op_checks.h"

#include <algorithm>
#include <cmath>

#include "runtime/status_macros.h"

namespace meshplan::runtime {

using core::Status;

int64_t LastExtent(const Tensor& t) { return t.rank() == 0 ? 1 : t.dim(t.rank() - 1); }
int64_t Rows(const Tensor& t) {
  const int64_t l = LastExtent(t);
  return l == 0 ? 0 : t.numel() / l;
}

Status OpChecks::Bad(const std::string& op, const std::string& why) const {
  return Status::InvalidArgument(prefix_ + op + ": " + why);
}

Status OpChecks::Defined(const std::string& op, std::initializer_list<const Tensor*> ts) const {
  for (const Tensor* t : ts)
    if (t == nullptr || !t->defined()) return Bad(op, "a tensor argument is undefined");
  return Status::Ok();
}

Status OpChecks::SameNumel(const std::string& op, const Tensor& a, const Tensor& b) const {
  if (a.numel() != b.numel()) return Bad(op, a.ShapeString() + " and " + b.ShapeString() + " differ in size");
  return Status::Ok();
}

Status OpChecks::NumelIs(const std::string& op, const Tensor& t, int64_t n, const char* what) const {
  if (t.numel() != n)
    return Bad(op, std::string(what) + " is " + t.ShapeString() + ", expected " + std::to_string(n) + " elements");
  return Status::Ok();
}

Status OpChecks::AllGather(const char* op, int ranks, const Tensor& in, const Tensor* out) const {
  MESHPLAN_RETURN_IF_ERROR(Defined(op, {&in, out}));
  return NumelIs(op, *out, in.numel() * ranks, "all-gather output");
}

Status OpChecks::ReduceScatter(const char* op, int ranks, const Tensor& in, const Tensor* out) const {
  MESHPLAN_RETURN_IF_ERROR(Defined(op, {&in, out}));
  return NumelIs(op, in, out->numel() * ranks, "reduce-scatter input");
}

Status OpChecks::AllToAll(const char* op, int ranks, const Tensor& in, const Tensor* out) const {
  MESHPLAN_RETURN_IF_ERROR(Defined(op, {&in, out}));
  MESHPLAN_RETURN_IF_ERROR(SameNumel(op, in, *out));
  if (in.numel() % ranks != 0)
    return Bad(op, "all-to-all buffer of " + std::to_string(in.numel()) + " elements does not split in " +
                       std::to_string(ranks) + " blocks");
  return Status::Ok();
}

Status OpChecks::SameDtype(const std::string& op, const Tensor& a, const Tensor& b) const {
  if (a.dtype() != b.dtype()) return Bad(op, a.ShapeString() + " and " + b.ShapeString() + " differ in dtype");
  return Status::Ok();
}

core::Result<GemmDims> OpChecks::Gemm(const GemmArgs& args, const Tensor& a, const Tensor& b, const Tensor* c) const {
  MESHPLAN_RETURN_IF_ERROR(Defined("gemm", {&a, &b, c}));
  const int r = a.rank();
  if ((r != 2 && r != 3) || b.rank() != r || c->rank() != r)
    return Bad("gemm", "A, B, C must all be rank 2 or all rank 3 (got " + a.ShapeString() + ", " + b.ShapeString() +
                           ", " + c->ShapeString() + ")");
  if (a.dtype() != b.dtype() || a.dtype() != c->dtype()) return Bad("gemm", "A, B and C must share one dtype");
  GemmDims g;
  g.batch = r == 3 ? a.dim(0) : 1;
  if (r == 3 && (b.dim(0) != g.batch || c->dim(0) != g.batch)) return Bad("gemm", "batch extents differ");
  g.a_rows = a.dim(r - 2), g.a_cols = a.dim(r - 1), g.b_rows = b.dim(r - 2), g.b_cols = b.dim(r - 1);
  g.m = args.transpose_a ? g.a_cols : g.a_rows;
  g.k = args.transpose_a ? g.a_rows : g.a_cols;
  const int64_t kb = args.transpose_b ? g.b_cols : g.b_rows;
  g.n = args.transpose_b ? g.b_rows : g.b_cols;
  if (g.k != kb || c->dim(r - 2) != g.m || c->dim(r - 1) != g.n)
    return Bad("gemm", "op(A) " + std::to_string(g.m) + "x" + std::to_string(g.k) + ", op(B) " + std::to_string(kb) +
                           "x" + std::to_string(g.n) + " and C " + c->ShapeString() + " do not match");
  return g;
}

core::Result<AttnDims> OpChecks::Attention(const char* op, const AttentionArgs& args, const Tensor& q, const Tensor& k,
                                           const Tensor& v) const {
  MESHPLAN_RETURN_IF_ERROR(Defined(op, {&q, &k, &v}));
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) return Bad(op, "q, k, v must be rank 4 [b, h, s, d]");
  AttnDims x{q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3), args.scale};
  if (k.dim(0) != x.b || v.dim(0) != x.b || k.dim(1) != x.h || v.dim(1) != x.h || k.dim(3) != x.d || v.dim(2) != x.skv)
    return Bad(op, "q " + q.ShapeString() + ", k " + k.ShapeString() + ", v " + v.ShapeString() + " do not match");
  if (x.scale == 0) x.scale = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(x.d, 1)));
  return x;
}

Status OpChecks::NormForward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor* y,
                             const Tensor* mean, const Tensor* rstd) const {
  const char* op = "norm_forward";
  MESHPLAN_RETURN_IF_ERROR(Defined(op, {&x, &gamma, y, rstd}));
  if (!rms) MESHPLAN_RETURN_IF_ERROR(Defined(op, {&beta, mean}));
  const int64_t h = LastExtent(x), rows = Rows(x);
  MESHPLAN_RETURN_IF_ERROR(NumelIs(op, gamma, h, "gamma"));
  if (!rms) MESHPLAN_RETURN_IF_ERROR(NumelIs(op, beta, h, "beta"));
  if (!rms) MESHPLAN_RETURN_IF_ERROR(NumelIs(op, *mean, rows, "mean"));
  MESHPLAN_RETURN_IF_ERROR(NumelIs(op, *rstd, rows, "rstd"));
  return SameNumel(op, x, *y);
}

Status OpChecks::NormBackward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                              const Tensor& dy, const Tensor* dx, const Tensor* dgamma, const Tensor* dbeta) const {
  const char* op = "norm_backward";
  MESHPLAN_RETURN_IF_ERROR(Defined(op, {&x, &gamma, &rstd, &dy, dx, dgamma}));
  if (!rms) MESHPLAN_RETURN_IF_ERROR(Defined(op, {&mean, dbeta}));
  const int64_t h = LastExtent(x), rows = Rows(x);
  MESHPLAN_RETURN_IF_ERROR(NumelIs(op, gamma, h, "gamma"));
  MESHPLAN_RETURN_IF_ERROR(NumelIs(op, *dgamma, h, "dgamma"));
  if (!rms) MESHPLAN_RETURN_IF_ERROR(NumelIs(op, *dbeta, h, "dbeta"));
  MESHPLAN_RETURN_IF_ERROR(NumelIs(op, rstd, rows, "rstd"));
  if (!rms) MESHPLAN_RETURN_IF_ERROR(NumelIs(op, mean, rows, "mean"));
  MESHPLAN_RETURN_IF_ERROR(SameNumel(op, x, dy));
  return SameNumel(op, x, *dx);
}

Status OpChecks::Add(const Tensor& a, const Tensor& b, const Tensor* out) const {
  MESHPLAN_RETURN_IF_ERROR(Defined("add", {&a, &b, out}));
  MESHPLAN_RETURN_IF_ERROR(SameNumel("add", a, b));
  return SameNumel("add", a, *out);
}

Status OpChecks::Adam(const AdamArgs& args, const Tensor& grad, const Tensor* param, const Tensor* m,
                      const Tensor* v) const {
  MESHPLAN_RETURN_IF_ERROR(Defined("adam_update", {&grad, param, m, v}));
  MESHPLAN_RETURN_IF_ERROR(SameNumel("adam_update", grad, *param));
  MESHPLAN_RETURN_IF_ERROR(SameNumel("adam_update", grad, *m));
  MESHPLAN_RETURN_IF_ERROR(SameNumel("adam_update", grad, *v));
  if (m->dtype() != core::Dtype::kFp32 || v->dtype() != core::Dtype::kFp32)
    return Bad("adam_update", "the moments m and v must be fp32");
  if (args.step < 1) return Bad("adam_update", "step counts from 1");
  return Status::Ok();
}

}  // namespace meshplan::runtime
