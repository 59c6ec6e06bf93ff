// The argument checks every Backend runs before it touches memory (runtime/backend.h states the
// shapes each op takes): one implementation, so the cpu reference and the cuda backend accept and
// reject the same calls with the same messages, "<backend> backend: <op>: <why>", and the
// conformance suite's error cases hold for both. Pure functions; thread-safe.
#ifndef MESHPLAN_RUNTIME_OP_CHECKS_H_
#define MESHPLAN_RUNTIME_OP_CHECKS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/status.h"
#include "runtime/backend.h"

namespace meshplan::runtime {

// Extents of a checked GEMM: C[batch][m x n] = op(A)[m x k] op(B)[k x n].
struct GemmDims {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0;  // A and B as stored
};

// Extents of checked attention: q [b, h, sq, d], k [b, h, skv, d], v [b, h, skv, dv].
struct AttnDims {
  int64_t b = 0, h = 0, sq = 0, skv = 0, d = 0, dv = 0;
  float scale = 0;  // args.scale, or 1/sqrt(d) when it was 0
};

class OpChecks {
 public:
  explicit OpChecks(std::string backend) : prefix_(std::move(backend) + " backend: ") {}

  core::Status Bad(const std::string& op, const std::string& why) const;
  core::Status Defined(const std::string& op, std::initializer_list<const Tensor*> ts) const;
  core::Status SameNumel(const std::string& op, const Tensor& a, const Tensor& b) const;
  core::Status NumelIs(const std::string& op, const Tensor& t, int64_t n, const char* what) const;
  core::Status SameDtype(const std::string& op, const Tensor& a, const Tensor& b) const;
  // Collectives over a group of `ranks`: all-gather out = ranks x in elements; reduce-scatter
  // in = ranks x out; all-to-all in and out of one size that splits in `ranks` blocks.
  core::Status AllGather(const char* op, int ranks, const Tensor& in, const Tensor* out) const;
  core::Status ReduceScatter(const char* op, int ranks, const Tensor& in, const Tensor* out) const;
  core::Status AllToAll(const char* op, int ranks, const Tensor& in, const Tensor* out) const;
  // A, B, C all rank 2 or all rank 3 (batched), one dtype, matching extents after the transposes.
  core::Result<GemmDims> Gemm(const GemmArgs& args, const Tensor& a, const Tensor& b, const Tensor* c) const;
  core::Result<AttnDims> Attention(const char* op, const AttentionArgs& args, const Tensor& q, const Tensor& k,
                                   const Tensor& v) const;
  // Norm forward: gamma [h] (and beta [h], mean [rows] unless rms), rstd [rows], y like x.
  core::Status NormForward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor* y,
                           const Tensor* mean, const Tensor* rstd) const;
  // Norm backward: as forward, plus dy and dx like x, dgamma [h] (and dbeta [h] unless rms).
  core::Status NormBackward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                            const Tensor& dy, const Tensor* dx, const Tensor* dgamma, const Tensor* dbeta) const;
  // out = a + alpha b: three defined tensors of one size.
  core::Status Add(const Tensor& a, const Tensor& b, const Tensor* out) const;
  // AdamW: param, m, v the size of grad; m and v fp32; step >= 1.
  core::Status Adam(const AdamArgs& args, const Tensor& grad, const Tensor* param, const Tensor* m,
                    const Tensor* v) const;

 private:
  std::string prefix_;
};

// The last extent (1 for a scalar), and the number of rows of that length.
int64_t LastExtent(const Tensor& t);
int64_t Rows(const Tensor& t);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_OP_CHECKS_H_
