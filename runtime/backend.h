// The runtime's Backend: the device a StepGraph's ops run on (OpenMM's Platform, reduced to an
// interface plus a factory). A backend allocates tensors, runs the kernels a transformer step
// needs (GEMM, causal attention, norms, activations, softmax, elementwise, the optimizer update),
// runs collectives on communicators over the plan's groups, records timing events and keeps
// memory statistics.
//
// Backends:
//   kCpu   always built; the reference, written for clarity: Eigen GEMMs, straightforward loops,
//          collectives through a HostComm (MPI when built with it). Tensors are stored in fp32
//          whatever their dtype; bf16 and fp16 are emulated by rounding every value a kernel
//          writes (and every value copied in) to that dtype, with fp32 accumulation inside
//          kernels. fp8 is not supported on cpu (Unavailable).
//   kCuda  built when the CUDA toolkit and NCCL are found (runtime/cuda/cuda_backend.h: tensors
//          stored in their dtype, cuBLAS/cuBLASLt GEMMs, NCCL collectives); Unavailable at run
//          time when no GPU can be used (the message says why in one line).
//
// Execution model: calls are issued in order on one stream; a backend may run them
// asynchronously (cuda), so results are visible on the host only after Synchronize() or a
// CopyToHost(). The cpu backend runs every call to completion before returning.
//
// Errors: every call returns Status/Result; a shape or dtype mismatch is InvalidArgument naming
// the op and the shapes. No exception crosses this header.
// Thread-safety: a Backend is not thread-safe; use one per thread. Tensors are owned by the
// caller (shared handles); their storage is released when the last handle goes, and may outlive
// the Backend object.
//
// This header includes no Eigen, MPI, CUDA or NCCL header.
#ifndef MESHPLAN_RUNTIME_BACKEND_H_
#define MESHPLAN_RUNTIME_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/specs.h"
#include "core/status.h"

namespace meshplan::runtime {

class HostComm;  // runtime/host_comm.h

enum class BackendKind { kCpu, kCuda };
const char* Name(BackendKind k);                           // "cpu", "cuda"
bool FromName(const std::string& text, BackendKind* out);  // inverse of Name()

// A dense, row-major tensor owned by a backend. A cheap handle: copies share the storage.
// `shape` is outermost first (e.g. [batch, heads, seq, dim]); `dtype` the logical element type
// (bytes() = numel x DtypeBytes(dtype)); where and how the elements are stored is the backend's
// business (cpu: fp32 host memory; cuda: device memory in dtype).
class Tensor {
 public:
  Tensor() = default;
  // For backends: wraps storage allocated for `shape` and `dtype`.
  Tensor(std::vector<int64_t> shape, core::Dtype dtype, std::shared_ptr<void> storage)
      : shape_(std::move(shape)), dtype_(dtype), storage_(std::move(storage)) {}

  bool defined() const { return storage_ != nullptr; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i)]; }  // REQUIRES: 0 <= i < rank()
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape_) n *= d;
    return n;
  }
  core::Dtype dtype() const { return dtype_; }
  int64_t bytes() const { return numel() * core::DtypeBytes(dtype_); }
  void* data() const { return storage_.get(); }  // backend-defined layout
  std::string ShapeString() const;               // "[2, 4, 128, 64] bf16"

 private:
  std::vector<int64_t> shape_;
  core::Dtype dtype_ = core::Dtype::kFp32;
  std::shared_ptr<void> storage_;
};

// Bytes a backend holds for tensors (storage actually allocated: the cpu backend stores fp32, so
// a bf16 tensor costs 4 bytes per element there).
struct MemoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;   // since construction or the last ResetPeakMemory()
  int64_t allocations = 0;  // tensors allocated since construction
};

// A point in the backend's stream, for timing (cuda: a CUDA event; cpu: a clock reading).
struct Event {
  int64_t id = -1;
};

// A monotonic clock in seconds. The cpu backend reads time through one, so tests can inject a
// fake. Not thread-safe unless the implementation says so.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double NowSeconds() = 0;
};
// std::chrono::steady_clock. Thread-safe.
std::shared_ptr<Clock> SteadyClock();

// A backend's communicator over the ranks of one group (one per plan group a rank belongs to).
// Created from a HostComm over the same ranks; the backend may build its own transport from it
// (cuda: an NCCL communicator from an id broadcast over the HostComm).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // 0..size()-1 within the group
  virtual int size() const = 0;
};

// Arguments of one GEMM: C = alpha op(A) op(B) + beta C, where op(X) is X or X^T. A, B and C are
// rank-2 ([rows, cols]) or rank-3 ([batch, rows, cols], `batch` independent products) and share
// one dtype. op(A) is [m x k], op(B) [k x n], C [m x n].
struct GemmArgs {
  bool transpose_a = false;
  bool transpose_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// Attention over q [b, h, s_q, d], k [b, h, s_kv, d], v [b, h, s_kv, d_v] -> out [b, h, s_q, d_v]:
// out = softmax(scale q k^T + mask) v, per (batch, head). Causal: query i sees key j iff
// j <= i + (s_kv - s_q) (the mask aligned to the bottom-right, as FlashAttention 2.1+ does, so a
// context-parallel rank's queries see every earlier key). `lse` [b, h, s_q] (fp32) receives the
// row log-sum-exp for the backward pass.
struct AttentionArgs {
  bool causal = true;
  float scale = 0;  // 0: 1/sqrt(d)
};

// Adam (Kingma & Ba 2015, Algorithm 1) with decoupled weight decay (AdamW, Loshchilov & Hutter
// 2019). `step` counts from 1 and sets the bias correction.
struct AdamArgs {
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
  int64_t step = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  // What runs the kernels, in one line ("cpu: Eigen 3.4.0, 2 threads, fp32 storage").
  virtual std::string Description() const = 0;

  // ---- memory
  // A tensor of `shape` and `dtype`, contents unspecified. InvalidArgument for a negative extent
  // or an unsupported dtype; Unavailable when the device is out of memory.
  virtual core::Result<Tensor> Allocate(const std::vector<int64_t>& shape, core::Dtype dtype) = 0;
  // Host <-> tensor, as fp32 values (numel of them). Copying in rounds each value to the dtype.
  virtual core::Status CopyFromHost(const float* src, Tensor* dst) = 0;
  virtual core::Status CopyToHost(const Tensor& src, float* dst) = 0;
  // Uniform random values in [-scale, scale] from a deterministic seed, never exactly zero (so
  // that a kernel that ignores its input cannot pass for one that reads it).
  virtual core::Status FillRandom(Tensor* t, uint64_t seed, float scale) = 0;
  virtual core::Status Fill(Tensor* t, float value) = 0;
  virtual MemoryStats Memory() const = 0;
  virtual void ResetPeakMemory() = 0;

  // ---- compute. Outputs are written in place into tensors the caller allocated with the
  // documented shapes. Input and output tensors must not alias unless a call says so.
  virtual core::Status Gemm(const GemmArgs& args, const Tensor& a, const Tensor& b, Tensor* c) = 0;
  // Forward saves lse [b, h, s_q]; backward takes q, k, v, out, dout, lse and writes dq, dk, dv
  // (shaped as q, k, v).
  virtual core::Status AttentionForward(const AttentionArgs& args, const Tensor& q, const Tensor& k, const Tensor& v,
                                        Tensor* out, Tensor* lse) = 0;
  virtual core::Status AttentionBackward(const AttentionArgs& args, const Tensor& q, const Tensor& k, const Tensor& v,
                                         const Tensor& out, const Tensor& dout, const Tensor& lse, Tensor* dq,
                                         Tensor* dk, Tensor* dv) = 0;
  // Over the last dimension of x [rows, h]: y = (x - mean) rstd gamma + beta (LayerNorm, Ba et al.
  // 2016); with `beta` undefined (rmsnorm) y = x rstd gamma, rstd = 1/sqrt(mean(x^2) + eps)
  // (RMSNorm, Zhang & Sennrich 2019). Saves mean [rows] (layernorm only) and rstd [rows], fp32.
  virtual core::Status NormForward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                   Tensor* y, Tensor* mean, Tensor* rstd) = 0;
  // dx [rows, h]; dgamma, dbeta [h] (dbeta ignored for rms), written (not accumulated).
  virtual core::Status NormBackward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                    const Tensor& rstd, const Tensor& dy, Tensor* dx, Tensor* dgamma,
                                    Tensor* dbeta) = 0;
  // GELU, tanh approximation (Hendrycks & Gimpel 2016), elementwise; y and x same shape.
  virtual core::Status GeluForward(const Tensor& x, Tensor* y) = 0;
  virtual core::Status GeluBackward(const Tensor& x, const Tensor& dy, Tensor* dx) = 0;
  // SwiGLU (Shazeer 2020): x [rows, 2f] = [gate | up] -> y [rows, f] = silu(gate) * up.
  virtual core::Status SwigluForward(const Tensor& x, Tensor* y) = 0;
  virtual core::Status SwigluBackward(const Tensor& x, const Tensor& dy, Tensor* dx) = 0;
  // Softmax over the last dimension; backward from the saved output y: dx = y (dy - sum(dy y)).
  virtual core::Status SoftmaxForward(const Tensor& x, Tensor* y) = 0;
  virtual core::Status SoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor* dx) = 0;
  // out = a + alpha b, elementwise (same numel). `out` may alias `a` or `b`.
  virtual core::Status Add(const Tensor& a, const Tensor& b, float alpha, Tensor* out) = 0;
  // One AdamW update of param (in the param's dtype) from grad, with fp32 moments m and v.
  virtual core::Status AdamUpdate(const AdamArgs& args, const Tensor& grad, Tensor* param, Tensor* m, Tensor* v) = 0;

  // ---- collectives, on a communicator from CreateCommunicator. Sum reductions. Sizes follow
  // NCCL: all-reduce and broadcast act on `buf` in place; all-gather: out.numel = n x in.numel;
  // reduce-scatter: in.numel = n x out.numel; all-to-all: in and out have equal numel, split in
  // n blocks, block j of `in` goes to rank j. Send/Recv pair with the peer's matching call
  // (peer = rank in the communicator); a Send may complete before the peer receives.
  // `what` names the op in error and watchdog messages ("attn_reduce"). `group` must outlive the
  // communicator.
  virtual core::Result<std::unique_ptr<Communicator>> CreateCommunicator(HostComm* group) = 0;
  virtual core::Status AllReduce(Communicator& comm, Tensor* buf, const char* what) = 0;
  virtual core::Status AllGather(Communicator& comm, const Tensor& in, Tensor* out, const char* what) = 0;
  virtual core::Status ReduceScatter(Communicator& comm, const Tensor& in, Tensor* out, const char* what) = 0;
  virtual core::Status AllToAll(Communicator& comm, const Tensor& in, Tensor* out, const char* what) = 0;
  virtual core::Status Broadcast(Communicator& comm, int root, Tensor* buf, const char* what) = 0;
  virtual core::Status Send(Communicator& comm, int peer, const Tensor& buf, const char* what) = 0;
  virtual core::Status Recv(Communicator& comm, int peer, Tensor* buf, const char* what) = 0;
  // Waits for this rank's outstanding sends on `comm` to complete.
  virtual core::Status FlushSends(Communicator& comm, const char* what) = 0;

  // ---- timing
  // Blocks until every call issued so far has finished.
  virtual core::Status Synchronize() = 0;
  // Marks the current point of the stream. Events live until ReleaseEvents().
  virtual core::Result<Event> RecordEvent() = 0;
  // Seconds between two recorded events. REQUIRES: both completed (after Synchronize()).
  virtual core::Result<double> ElapsedSeconds(Event start, Event stop) = 0;
  virtual void ReleaseEvents() = 0;
};

// The backend `kind`. kCpu always works. kCuda is Unavailable when this build has no CUDA backend
// or no GPU can be used here; the message says which, in one line.
core::Result<std::unique_ptr<Backend>> MakeBackend(BackendKind kind);

// Tolerances a backend promises per dtype: the relative error, against a double-precision
// reference of the same rounded inputs, of a reduction of `k` terms (GEMM inner dimension,
// softmax row). Used by the conformance suite. fp32: 1e-6 x sqrt(k) + 1e-6; bf16: output
// rounding 2^-8 plus accumulation; fp16: 2^-11 plus accumulation; fp8 (e4m3, cuda only): 2^-4
// plus accumulation.
double RelativeTolerance(core::Dtype dtype, int64_t k);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_BACKEND_H_
