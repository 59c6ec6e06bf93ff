// The cuda backend (contract in runtime/cuda/cuda_backend.h; op semantics in
// runtime/cpu/cpu_backend.cc, whose argument checks are repeated here word for word so that both
// backends reject the same calls with the same messages). Host API calls only — CUDA runtime,
// cuBLAS, cuBLASLt, NCCL — so this is a plain .cc; the kernels are in kernels.cu.
#include "runtime/cuda/cuda_backend.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/kernels.h"
#include "runtime/host_comm.h"
#include "runtime/op_checks.h"
#include "runtime/status_macros.h"

namespace meshplan::runtime::cuda {
namespace {

using core::Dtype;
using core::Result;
using core::Status;

constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;  // cuBLASLt's advice for Hopper
constexpr int64_t kMaxSharedPerBlock = 48 * 1024;       // without opting in to more
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// ---- argument checks (as runtime/cpu/cpu_backend.cc) -------------------------------------------

// The shared argument checks (runtime/op_checks.h), named as the methods below call them.
const OpChecks kChecks("cuda");
Status Bad(const std::string& op, const std::string& why) { return kChecks.Bad(op, why); }
Status Defined(const std::string& op, std::initializer_list<const Tensor*> ts) { return kChecks.Defined(op, ts); }
Status SameNumel(const std::string& op, const Tensor& a, const Tensor& b) { return kChecks.SameNumel(op, a, b); }
Status NumelIs(const std::string& op, const Tensor& t, int64_t n, const char* what) {
  return kChecks.NumelIs(op, t, n, what);
}
Status SameDtype(const std::string& op, const Tensor& a, const Tensor& b) { return kChecks.SameDtype(op, a, b); }
int64_t Last(const Tensor& t) { return LastExtent(t); }

// `s` with "cuda backend: <what>: " in front (for library errors, which name only the call).
Status Prefixed(const std::string& what, const Status& s) {
  if (s.ok()) return s;
  std::string msg = "cuda backend: " + what + ": " + s.message();
  switch (s.code()) {
    case Status::Code::kInvalidArgument: return Status::InvalidArgument(std::move(msg));
    case Status::Code::kUnavailable: return Status::Unavailable(std::move(msg));
    default: return Status::Internal(std::move(msg));
  }
}

// ---- dtypes ------------------------------------------------------------------------------------

bool ElemOf(Dtype d, ElemType* out) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32: *out = ElemType::kF32; return true;
    case Dtype::kBf16: *out = ElemType::kBf16; return true;
    case Dtype::kFp16: *out = ElemType::kF16; return true;
    case Dtype::kFp8: *out = ElemType::kFp8E4M3; return true;
    case Dtype::kInt8:
    case Dtype::kNone:
    case Dtype::kNvfp4: break;
  }
  return false;
}
// A tensor this backend allocated (so its dtype has an ElemType).
DevPtr Dev(const Tensor& t) {
  DevPtr p{t.data(), ElemType::kF32};
  (void)ElemOf(t.dtype(), &p.type);
  return p;
}

Result<ncclDataType_t> NcclType(const std::string& what, Dtype d) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32: return ncclFloat32;
    case Dtype::kBf16: return ncclBfloat16;
    case Dtype::kFp16: return ncclFloat16;
    case Dtype::kFp8:
#if NCCL_VERSION_CODE >= 22400  // ncclFloat8e4m3 arrived in NCCL 2.24
      return ncclFloat8e4m3;
#else
      break;
#endif
    case Dtype::kInt8:
    case Dtype::kNone:
    case Dtype::kNvfp4: break;
  }
  return Status::Unavailable("cuda backend: " + what + ": NCCL has no " + core::Name(d) + " type in this build");
}

std::string CudaVersionText(int v) {  // 1000 X + 10 Y
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// cudaMalloc that reports running out of memory as Unavailable (the plan does not fit), not as
// an internal error.
Status DeviceAlloc(void** p, int64_t bytes, const std::string& what) {
  const cudaError_t err = cudaMalloc(p, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  if (err == cudaSuccess) return Status::Ok();
  *p = nullptr;
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return Status::Unavailable("cuda backend: out of device memory allocating " + std::to_string(bytes) +
                               " bytes for " + what);
  }
  return CudaErrorStatus(err, "cudaMalloc(p, bytes)", __FILE__, __LINE__);
}

// Device memory the backend keeps for itself; grows, never shrinks. Growing frees the old
// buffer with cudaFree, which waits for the device, so queued kernels never see it vanish.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (p_ != nullptr) (void)cudaFree(p_);
  }
  Status Reserve(int64_t bytes, const char* what) {
    if (bytes <= bytes_) return Status::Ok();
    if (p_ != nullptr) {
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaFree(p_));
      p_ = nullptr;
      bytes_ = 0;
    }
    MESHPLAN_RETURN_IF_ERROR(DeviceAlloc(&p_, bytes, what));
    bytes_ = bytes;
    return Status::Ok();
  }
  void* get() const { return p_; }
  float* floats() const { return static_cast<float*>(p_); }
  int64_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  int64_t bytes_ = 0;
};

// cuBLASLt descriptors, destroyed on every path.
struct LtDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { (void)cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* d) const { (void)cublasLtMatrixLayoutDestroy(d); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* d) const { (void)cublasLtMatmulPreferenceDestroy(d); }
};
using LtMatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDeleter>;
using LtLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDeleter>;
using LtPreference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDeleter>;

struct Stats {
  MemoryStats m;
};

// ---- communicator ------------------------------------------------------------------------------

struct PendingSend {
  Tensor buf;  // keeps the storage alive until the send is issued
  int peer = 0;
};

class CudaCommunicator final : public Communicator {
 public:
  CudaCommunicator(HostComm* host, ncclComm_t comm) : host_(host), comm_(comm) {}
  CudaCommunicator(const CudaCommunicator&) = delete;
  CudaCommunicator& operator=(const CudaCommunicator&) = delete;
  ~CudaCommunicator() override {
    if (comm_ != nullptr) (void)ncclCommDestroy(comm_);
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  HostComm* host() const { return host_; }
  ncclComm_t nccl() const { return comm_; }  // null: a group of one
  std::vector<PendingSend>& pending() { return pending_; }

 private:
  HostComm* host_;
  ncclComm_t comm_;
  std::vector<PendingSend> pending_;
};
CudaCommunicator& Cast(Communicator& c) { return static_cast<CudaCommunicator&>(c); }

// ---- the backend -------------------------------------------------------------------------------

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, int device_count, DeviceInfo info)
      : device_(device), device_count_(device_count), info_(std::move(info)), stats_(std::make_shared<Stats>()) {}
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  ~CudaBackend() override {
    // Errors are ignored: a destructor cannot report them, and the device may already be gone.
    if (comm_ != nullptr) (void)cudaStreamSynchronize(comm_);
    if (compute_ != nullptr) (void)cudaStreamSynchronize(compute_);
    fp8_plans_.clear();  // cuBLASLt descriptors before the cuBLASLt handle
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
    if (ready_ != nullptr) (void)cudaEventDestroy(ready_);
    if (done_ != nullptr) (void)cudaEventDestroy(done_);
    if (lt_ != nullptr) (void)cublasLtDestroy(lt_);
    if (blas_ != nullptr) (void)cublasDestroy(blas_);
    if (comm_ != nullptr) (void)cudaStreamDestroy(comm_);
    if (compute_ != nullptr) (void)cudaStreamDestroy(compute_);
  }

  // Streams, events, library handles, the cuBLASLt workspace and the description.
  Status Init() {
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaSetDevice(device_));
    int least = 0, greatest = 0;  // numerically: greatest <= least
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamCreateWithPriority(&compute_, cudaStreamNonBlocking, least));
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamCreateWithPriority(&comm_, cudaStreamNonBlocking, greatest));
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasCreate(&blas_));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasSetStream(blas_, compute_));
    // fp32 accumulation throughout: no TF32 unless a tf32 GEMM asks, and no fp16/bf16 split-K
    // reductions.
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasSetMathMode(
        blas_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtCreate(&lt_));
    MESHPLAN_RETURN_IF_ERROR(lt_workspace_.Reserve(static_cast<int64_t>(kLtWorkspaceBytes), "the cuBLASLt workspace"));

    int runtime = 0, driver = 0, blas_major = 0, blas_minor = 0, blas_patch = 0;
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaRuntimeGetVersion(&runtime));
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaDriverGetVersion(&driver));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasGetProperty(MAJOR_VERSION, &blas_major));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasGetProperty(MINOR_VERSION, &blas_minor));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasGetProperty(PATCH_LEVEL, &blas_patch));
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(info_.memory_bytes) / (1 << 30));
    const std::string nccl = NcclVersion();
    description_ = "cuda: " + info_.name + " (sm_" + std::to_string(info_.compute_capability_major) +
                   std::to_string(info_.compute_capability_minor) + ", " + std::to_string(info_.sm_count) + " SMs, " +
                   memory + "), device " + std::to_string(device_) + " of " + std::to_string(device_count_) +
                   "; CUDA runtime " + CudaVersionText(runtime) + ", driver " + CudaVersionText(driver) + "; cuBLAS " +
                   std::to_string(blas_major) + "." + std::to_string(blas_minor) + "." + std::to_string(blas_patch) +
                   "; NCCL " + (nccl.empty() ? "?" : nccl);
    return Status::Ok();
  }

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string Description() const override { return description_; }

  // ---- memory
  Result<Tensor> Allocate(const std::vector<int64_t>& shape, Dtype dtype) override {
    if (dtype == Dtype::kInt8)
      return Status::Unavailable("cuda backend: int8 tensors are not supported (no op of the interface takes them)");
    if (dtype == Dtype::kNvfp4)
      return Status::Unavailable("cuda backend: nvfp4 tensors are not supported (the backend has no NVFP4 GEMM)");
    if (dtype == Dtype::kNone) return Bad("allocate", "dtype none");
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) return Bad("allocate", "negative extent in shape");
      n *= d;
    }
    const int64_t bytes = n * core::DtypeBytes(dtype);
    void* p = nullptr;
    MESHPLAN_RETURN_IF_ERROR(DeviceAlloc(&p, bytes, Tensor(shape, dtype, nullptr).ShapeString()));
    stats_->m.current_bytes += bytes;
    stats_->m.peak_bytes = std::max(stats_->m.peak_bytes, stats_->m.current_bytes);
    ++stats_->m.allocations;
    std::shared_ptr<Stats> stats = stats_;
    std::shared_ptr<void> storage(p, [stats, bytes](void* q) {
      (void)cudaFree(q);  // waits for the device: queued kernels may still read q
      stats->m.current_bytes -= bytes;
    });
    return Tensor(shape, dtype, std::move(storage));
  }

  Status CopyFromHost(const float* src, Tensor* dst) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("copy_from_host", {dst}));
    const int64_t n = dst->numel();
    if (n == 0) return Status::Ok();
    const DevPtr d = Dev(*dst);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    if (d.type == ElemType::kF32) {
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(d.data, src, bytes, cudaMemcpyHostToDevice, compute_));
    } else {
      MESHPLAN_RETURN_IF_ERROR(staging_.Reserve(static_cast<int64_t>(bytes), "host copy staging"));
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(staging_.get(), src, bytes, cudaMemcpyHostToDevice, compute_));
      MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchConvertFromF32(staging_.floats(), d, n, compute_));
    }
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(compute_));  // `src` may be reused on return
    return Status::Ok();
  }

  Status CopyToHost(const Tensor& src, float* dst) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("copy_to_host", {&src}));
    const int64_t n = src.numel();
    if (n == 0) return Status::Ok();
    const DevPtr s = Dev(src);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    if (s.type == ElemType::kF32) {
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst, s.data, bytes, cudaMemcpyDeviceToHost, compute_));
    } else {
      MESHPLAN_RETURN_IF_ERROR(staging_.Reserve(static_cast<int64_t>(bytes), "host copy staging"));
      MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchConvertToF32(s, staging_.floats(), n, compute_));
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst, staging_.get(), bytes, cudaMemcpyDeviceToHost, compute_));
    }
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(compute_));
    return Status::Ok();
  }

  Status FillRandom(Tensor* t, uint64_t seed, float scale) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("fill_random", {t}));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchFillRandom(Dev(*t), t->numel(), seed, scale, compute_));
    return Status::Ok();
  }
  Status Fill(Tensor* t, float value) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("fill", {t}));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchFill(Dev(*t), t->numel(), value, compute_));
    return Status::Ok();
  }
  MemoryStats Memory() const override { return stats_->m; }
  void ResetPeakMemory() override { stats_->m.peak_bytes = stats_->m.current_bytes; }

  // ---- compute
  Status Gemm(const GemmArgs& args, const Tensor& a, const Tensor& b, Tensor* c) override {
    MESHPLAN_ASSIGN_OR_RETURN(const GemmDims g, kChecks.Gemm(args, a, b, c));
    const int64_t batch = g.batch, m = g.m, n = g.n, k = g.k;
    if (m == 0 || n == 0 || batch == 0) return Status::Ok();
    if (m > kInt32Max || n > kInt32Max || k > kInt32Max || batch > kInt32Max)
      return Bad("gemm", "extents above 2^31 - 1 are beyond cuBLAS's 32-bit interface");
    if (a.dtype() == Dtype::kFp8) return GemmFp8(args, a, b, c, batch, m, n, k);

    cudaDataType_t type = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    switch (a.dtype()) {
      case Dtype::kFp32: break;
      case Dtype::kTf32: compute = CUBLAS_COMPUTE_32F_FAST_TF32; break;
      case Dtype::kBf16: type = CUDA_R_16BF; break;
      case Dtype::kFp16: type = CUDA_R_16F; break;
      default: return Status::Unavailable(std::string("cuda backend: gemm: no ") + core::Name(a.dtype()) + " GEMM");
    }
    // Row-major C [m x n] is column-major C^T [n x m] = op(B)^T op(A)^T: cuBLAS's "A" is our B
    // (column-major [n x k] when not transposed, ld n; else [k x n], ld k) and its "B" our A
    // (column-major [k x m], ld k; transposed [m x k], ld m). beta = 0 never reads C (BLAS).
    const cublasOperation_t op_b = args.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = args.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ld_b = static_cast<int>(std::max<int64_t>(1, args.transpose_b ? k : n));
    const int ld_a = static_cast<int>(std::max<int64_t>(1, args.transpose_a ? m : k));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasGemmStridedBatchedEx(
        blas_, op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &args.alpha, b.data(), type,
        ld_b, k * n, a.data(), type, ld_a, m * k, &args.beta, c->data(), type, static_cast<int>(n), m * n,
        static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT));
    return Status::Ok();
  }

  // fp8 e4m3 x e4m3 -> e4m3 with fp32 accumulation and unit scales, on cuBLASLt (the sample
  // LtFp8Matmul in NVIDIA's CUDALibrarySamples shows the type combination: C descriptor bf16, unread
  // with beta = 0).
  Status GemmFp8(const GemmArgs& args, const Tensor& a, const Tensor& b, Tensor* c, int64_t batch, int64_t m, int64_t n,
                 int64_t k) {
    const int cc = info_.compute_capability_major * 10 + info_.compute_capability_minor;
    if (cc < 89)
      return Status::Unavailable("cuda backend: gemm: fp8 GEMMs need an sm_89 or newer GPU (Ada, Hopper, Blackwell); " +
                                 info_.name + " is sm_" + std::to_string(cc));
    if (args.beta != 0.0f)
      return Bad("gemm", "fp8 GEMMs take beta = 0 only (cuBLASLt reads an fp8 GEMM's C input as bf16, not fp8)");
    if (m % 16 != 0 || n % 16 != 0 || k % 16 != 0)
      return Bad("gemm", "fp8 GEMMs need m, n and k to be multiples of 16 (cuBLASLt's fp8 alignment); got " +
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
    // cuBLASLt's fp8 kernels before Blackwell take only "TN": in our row-major terms A not
    // transposed and B transposed (both operands k-contiguous). Transpose the other layouts.
    const bool any_layout = info_.compute_capability_major >= 10;
    const void* pa = a.data();
    const void* pb = b.data();
    bool ta = args.transpose_a, tb = args.transpose_b;
    if (!any_layout && ta) {  // A [k, m] -> [m, k]
      MESHPLAN_RETURN_IF_ERROR(fp8_a_.Reserve(batch * m * k, "fp8 GEMM operand transpose"));
      MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchTranspose(pa, fp8_a_.get(), 1, batch, k, m, compute_));
      pa = fp8_a_.get();
      ta = false;
    }
    if (!any_layout && !tb) {  // B [k, n] -> [n, k]
      MESHPLAN_RETURN_IF_ERROR(fp8_b_.Reserve(batch * k * n, "fp8 GEMM operand transpose"));
      MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchTranspose(pb, fp8_b_.get(), 1, batch, k, n, compute_));
      pb = fp8_b_.get();
      tb = true;
    }
    MESHPLAN_ASSIGN_OR_RETURN(const Fp8Plan* plan, Fp8PlanFor(batch, m, n, k, ta, tb));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatmul(lt_, plan->op.get(), &args.alpha, pb, plan->layouts[0].get(), pa,
                                                   plan->layouts[1].get(), &args.beta, nullptr, plan->layouts[2].get(),
                                                   c->data(), plan->layouts[3].get(), &plan->algo, lt_workspace_.get(),
                                                   lt_workspace_.bytes(), compute_));
    return Status::Ok();
  }

  // The cuBLASLt descriptors and algorithm of one fp8 GEMM shape, built once per shape: the
  // heuristic query costs far more host time than a small GEMM takes on the device.
  struct Fp8Plan {
    LtMatmulDesc op;
    LtLayout layouts[4];  // cuBLASLt's A (our B), B (our A), C (bf16, unread), D (our C)
    cublasLtMatmulAlgo_t algo{};
  };
  Result<const Fp8Plan*> Fp8PlanFor(int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
    const std::array<int64_t, 6> key{batch, m, n, k, ta ? 1 : 0, tb ? 1 : 0};
    if (auto it = fp8_plans_.find(key); it != fp8_plans_.end()) return &it->second;
    Fp8Plan plan;
    // Column-major as in Gemm(): cuBLASLt's A is our B, its B our A, D = C^T [n x m].
    cublasLtMatmulDesc_t raw_op = nullptr;
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescCreate(&raw_op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    plan.op.reset(raw_op);
    const cublasOperation_t op_lt_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_lt_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(
        cublasLtMatmulDescSetAttribute(plan.op.get(), CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof op_lt_a));
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(
        cublasLtMatmulDescSetAttribute(plan.op.get(), CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof op_lt_b));
    struct LayoutSpec {
      cudaDataType_t type;
      int64_t rows, cols, stride;
    };
    const LayoutSpec specs[4] = {
        {CUDA_R_8F_E4M3, tb ? k : n, tb ? n : k, k * n},  // our B
        {CUDA_R_8F_E4M3, ta ? m : k, ta ? k : m, m * k},  // our A
        {CUDA_R_16BF, n, m, m * n},                       // C: not read (beta = 0)
        {CUDA_R_8F_E4M3, n, m, m * n},                    // D: our C
    };
    for (int i = 0; i < 4; ++i) {
      cublasLtMatrixLayout_t raw = nullptr;
      MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&raw, specs[i].type,
                                                                 static_cast<uint64_t>(specs[i].rows),
                                                                 static_cast<uint64_t>(specs[i].cols), specs[i].rows));
      plan.layouts[i].reset(raw);
      if (batch > 1) {
        const int32_t count = static_cast<int32_t>(batch);
        const int64_t stride = specs[i].stride;
        MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutSetAttribute(
            plan.layouts[i].get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutSetAttribute(
            plan.layouts[i].get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
      }
    }
    cublasLtMatmulPreference_t raw_pref = nullptr;
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatmulPreferenceCreate(&raw_pref));
    const LtPreference pref(raw_pref);
    const uint64_t workspace = static_cast<uint64_t>(lt_workspace_.bytes());
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatmulPreferenceSetAttribute(
        pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    MESHPLAN_RETURN_IF_CUBLAS_ERROR(cublasLtMatmulAlgoGetHeuristic(
        lt_, plan.op.get(), plan.layouts[0].get(), plan.layouts[1].get(), plan.layouts[2].get(), plan.layouts[3].get(),
        pref.get(), 1, &heuristic, &found));
    if (found == 0)
      return Status::Unavailable("cuda backend: gemm: cuBLASLt has no fp8 kernel for " + std::to_string(m) + "x" +
                                 std::to_string(n) + "x" + std::to_string(k) + " on " + info_.name);
    plan.algo = heuristic.algo;
    return &fp8_plans_.emplace(key, std::move(plan)).first->second;
  }

  // Checks q [b,h,sq,d], k [b,h,skv,d], v [b,h,skv,dv]; fills the shape (the cpu's CheckAttention).
  Result<AttentionShape> CheckAttention(const char* op, const AttentionArgs& args, const Tensor& q, const Tensor& k,
                                        const Tensor& v) {
    MESHPLAN_ASSIGN_OR_RETURN(const AttnDims dims, kChecks.Attention(op, args, q, k, v));
    AttentionShape x;
    x.b = dims.b;
    x.h = dims.h;
    x.sq = dims.sq;
    x.skv = dims.skv;
    x.d = dims.d;
    x.dv = dims.dv;
    x.scale = dims.scale;
    x.causal = args.causal;
    if (AttentionSharedBytes(x) > kMaxSharedPerBlock)
      return Bad(op, "head dimensions d = " + std::to_string(x.d) + ", d_v = " + std::to_string(x.dv) +
                         " exceed the attention kernel's shared memory (48 KiB per block)");
    return x;
  }

  Status AttentionForward(const AttentionArgs& args, const Tensor& q, const Tensor& k, const Tensor& v, Tensor* out,
                          Tensor* lse) override {
    MESHPLAN_ASSIGN_OR_RETURN(const AttentionShape x, CheckAttention("attention_forward", args, q, k, v));
    MESHPLAN_RETURN_IF_ERROR(Defined("attention_forward", {out, lse}));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_forward", *out, x.b * x.h * x.sq * x.dv, "out"));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_forward", *lse, x.b * x.h * x.sq, "lse"));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchAttentionForward(x, Dev(q), Dev(k), Dev(v), Dev(*out), Dev(*lse), compute_));
    return Status::Ok();
  }

  Status AttentionBackward(const AttentionArgs& args, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& out, const Tensor& dout, const Tensor& lse, Tensor* dq, Tensor* dk,
                           Tensor* dv) override {
    MESHPLAN_ASSIGN_OR_RETURN(const AttentionShape x, CheckAttention("attention_backward", args, q, k, v));
    MESHPLAN_RETURN_IF_ERROR(Defined("attention_backward", {&out, &dout, &lse, dq, dk, dv}));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_backward", out, x.b * x.h * x.sq * x.dv, "out"));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_backward", dout, x.b * x.h * x.sq * x.dv, "dout"));
    MESHPLAN_RETURN_IF_ERROR(NumelIs("attention_backward", lse, x.b * x.h * x.sq, "lse"));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("attention_backward", q, *dq));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("attention_backward", k, *dk));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("attention_backward", v, *dv));
    MESHPLAN_RETURN_IF_ERROR(
        rows_scratch_.Reserve(x.b * x.h * x.sq * static_cast<int64_t>(sizeof(float)), "attention backward row sums"));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchAttentionBackward(x, Dev(q), Dev(k), Dev(v), Dev(out), Dev(dout), Dev(lse),
                                                          Dev(*dq), Dev(*dk), Dev(*dv), rows_scratch_.floats(),
                                                          compute_));
    return Status::Ok();
  }

  Status NormForward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* y,
                     Tensor* mean, Tensor* rstd) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.NormForward(rms, x, gamma, beta, y, mean, rstd));
    const int64_t h = Last(x), rows = Rows(x);
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchNormForward(rms, Dev(x), Dev(gamma), rms ? DevPtr{} : Dev(beta), eps, Dev(*y),
                                                    rms ? DevPtr{} : Dev(*mean), Dev(*rstd), rows, h, compute_));
    return Status::Ok();
  }

  Status NormBackward(bool rms, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                      const Tensor& dy, Tensor* dx, Tensor* dgamma, Tensor* dbeta) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.NormBackward(rms, x, gamma, mean, rstd, dy, dx, dgamma, dbeta));
    const int64_t h = Last(x), rows = Rows(x);
    MESHPLAN_RETURN_IF_ERROR(norm_scratch_.Reserve(
        NormBackwardScratchFloats(rows, h) * static_cast<int64_t>(sizeof(float)), "norm backward partial sums"));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchNormBackward(rms, Dev(x), Dev(gamma), rms ? DevPtr{} : Dev(mean), Dev(rstd),
                                                     Dev(dy), Dev(*dx), Dev(*dgamma), rms ? DevPtr{} : Dev(*dbeta),
                                                     rows, h, norm_scratch_.floats(), compute_));
    return Status::Ok();
  }

  Status GeluForward(const Tensor& x, Tensor* y) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("gelu_forward", {&x, y}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("gelu_forward", x, *y));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchGeluForward(Dev(x), Dev(*y), x.numel(), compute_));
    return Status::Ok();
  }
  Status GeluBackward(const Tensor& x, const Tensor& dy, Tensor* dx) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("gelu_backward", {&x, &dy, dx}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("gelu_backward", x, dy));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("gelu_backward", x, *dx));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchGeluBackward(Dev(x), Dev(dy), Dev(*dx), x.numel(), compute_));
    return Status::Ok();
  }
  Status SwigluForward(const Tensor& x, Tensor* y) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("swiglu_forward", {&x, y}));
    const int64_t f2 = Last(x), rows = Rows(x), f = f2 / 2;
    if (f2 % 2 != 0) return Bad("swiglu_forward", "the last extent of x must be even ([gate | up])");
    MESHPLAN_RETURN_IF_ERROR(NumelIs("swiglu_forward", *y, rows * f, "y"));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchSwigluForward(Dev(x), Dev(*y), rows, f, compute_));
    return Status::Ok();
  }
  Status SwigluBackward(const Tensor& x, const Tensor& dy, Tensor* dx) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("swiglu_backward", {&x, &dy, dx}));
    const int64_t f2 = Last(x), rows = Rows(x), f = f2 / 2;
    if (f2 % 2 != 0) return Bad("swiglu_backward", "the last extent of x must be even ([gate | up])");
    MESHPLAN_RETURN_IF_ERROR(NumelIs("swiglu_backward", dy, rows * f, "dy"));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("swiglu_backward", x, *dx));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchSwigluBackward(Dev(x), Dev(dy), Dev(*dx), rows, f, compute_));
    return Status::Ok();
  }
  Status SoftmaxForward(const Tensor& x, Tensor* y) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("softmax_forward", {&x, y}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("softmax_forward", x, *y));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchSoftmaxForward(Dev(x), Dev(*y), Rows(x), Last(x), compute_));
    return Status::Ok();
  }
  Status SoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor* dx) override {
    MESHPLAN_RETURN_IF_ERROR(Defined("softmax_backward", {&y, &dy, dx}));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("softmax_backward", y, dy));
    MESHPLAN_RETURN_IF_ERROR(SameNumel("softmax_backward", y, *dx));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchSoftmaxBackward(Dev(y), Dev(dy), Dev(*dx), Rows(y), Last(y), compute_));
    return Status::Ok();
  }
  Status Add(const Tensor& a, const Tensor& b, float alpha, Tensor* out) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.Add(a, b, out));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchAdd(Dev(a), Dev(b), alpha, Dev(*out), a.numel(), compute_));
    return Status::Ok();
  }
  Status AdamUpdate(const AdamArgs& args, const Tensor& grad, Tensor* param, Tensor* m, Tensor* v) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.Adam(args, grad, param, m, v));
    AdamScalars s;
    s.lr = args.lr;
    s.beta1 = args.beta1;
    s.beta2 = args.beta2;
    s.eps = args.eps;
    s.weight_decay = args.weight_decay;
    s.c1 = 1.0f - std::pow(args.beta1, static_cast<float>(args.step));  // as the cpu backend
    s.c2 = 1.0f - std::pow(args.beta2, static_cast<float>(args.step));
    MESHPLAN_RETURN_IF_CUDA_ERROR(LaunchAdamUpdate(s, Dev(grad), Dev(*param), static_cast<float*>(m->data()),
                                                   static_cast<float*>(v->data()), grad.numel(), compute_));
    return Status::Ok();
  }

  // ---- collectives
  Result<std::unique_ptr<Communicator>> CreateCommunicator(HostComm* group) override {
    if (group == nullptr) return Bad("create_communicator", "no group");
    if (group->size() == 1) return std::unique_ptr<Communicator>(std::make_unique<CudaCommunicator>(group, nullptr));
    const std::string what = "create_communicator on group " + group->name();
    ncclUniqueId id{};
    if (group->rank() == 0) MESHPLAN_RETURN_IF_ERROR(Prefixed(what, NcclGetId(&id)));
    MESHPLAN_RETURN_IF_ERROR(group->BroadcastBytes(&id, static_cast<int64_t>(sizeof id), 0, "nccl unique id"));
    ncclComm_t comm = nullptr;
    MESHPLAN_RETURN_IF_ERROR(Prefixed(what, NcclInit(&comm, group->size(), id, group->rank())));
    return std::unique_ptr<Communicator>(std::make_unique<CudaCommunicator>(group, comm));
  }

  Status AllReduce(Communicator& comm, Tensor* buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {buf}));
    MESHPLAN_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(what, buf->dtype()));
    CudaCommunicator& c = Cast(comm);
    if (c.nccl() == nullptr) return Status::Ok();  // the sum over one rank
    return OnCommStream(what, c, [&] {
      MESHPLAN_RETURN_IF_NCCL_ERROR(
          ncclAllReduce(buf->data(), buf->data(), static_cast<size_t>(buf->numel()), type, ncclSum, c.nccl(), comm_));
      return Status::Ok();
    });
  }
  Status AllGather(Communicator& comm, const Tensor& in, Tensor* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.AllGather(what, comm.size(), in, out));
    MESHPLAN_RETURN_IF_ERROR(SameDtype(what, in, *out));
    MESHPLAN_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(what, in.dtype()));
    CudaCommunicator& c = Cast(comm);
    if (c.nccl() == nullptr) return CopyOnCompute(what, in, out);
    return OnCommStream(what, c, [&] {
      MESHPLAN_RETURN_IF_NCCL_ERROR(
          ncclAllGather(in.data(), out->data(), static_cast<size_t>(in.numel()), type, c.nccl(), comm_));
      return Status::Ok();
    });
  }
  Status ReduceScatter(Communicator& comm, const Tensor& in, Tensor* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.ReduceScatter(what, comm.size(), in, out));
    MESHPLAN_RETURN_IF_ERROR(SameDtype(what, in, *out));
    MESHPLAN_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(what, in.dtype()));
    CudaCommunicator& c = Cast(comm);
    if (c.nccl() == nullptr) return CopyOnCompute(what, in, out);
    return OnCommStream(what, c, [&] {
      MESHPLAN_RETURN_IF_NCCL_ERROR(
          ncclReduceScatter(in.data(), out->data(), static_cast<size_t>(out->numel()), type, ncclSum, c.nccl(), comm_));
      return Status::Ok();
    });
  }
  Status AllToAll(Communicator& comm, const Tensor& in, Tensor* out, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(kChecks.AllToAll(what, comm.size(), in, out));
    MESHPLAN_RETURN_IF_ERROR(SameDtype(what, in, *out));
    MESHPLAN_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(what, in.dtype()));
    CudaCommunicator& c = Cast(comm);
    if (c.nccl() == nullptr) return CopyOnCompute(what, in, out);
    // Block j of `in` to rank j, block i of `out` from rank i: one send and one receive per peer
    // in one NCCL group (nccl-tests' alltoall).
    const int64_t block = in.numel() / comm.size();
    const int64_t block_bytes = block * core::DtypeBytes(in.dtype());
    return OnCommStream(what, c, [&] {
      const char* src = static_cast<const char*>(in.data());
      char* dst = static_cast<char*>(out->data());
      for (int peer = 0; peer < comm.size(); ++peer) {
        MESHPLAN_RETURN_IF_NCCL_ERROR(
            ncclSend(src + peer * block_bytes, static_cast<size_t>(block), type, peer, c.nccl(), comm_));
        MESHPLAN_RETURN_IF_NCCL_ERROR(
            ncclRecv(dst + peer * block_bytes, static_cast<size_t>(block), type, peer, c.nccl(), comm_));
      }
      return Status::Ok();
    });
  }
  Status Broadcast(Communicator& comm, int root, Tensor* buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {buf}));
    if (root < 0 || root >= comm.size())
      return Bad(what, "broadcast root " + std::to_string(root) + " is not a rank of a group of " +
                           std::to_string(comm.size()));
    MESHPLAN_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(what, buf->dtype()));
    CudaCommunicator& c = Cast(comm);
    if (c.nccl() == nullptr) return Status::Ok();  // the root is this rank
    return OnCommStream(what, c, [&] {
      MESHPLAN_RETURN_IF_NCCL_ERROR(
          ncclBroadcast(buf->data(), buf->data(), static_cast<size_t>(buf->numel()), type, root, c.nccl(), comm_));
      return Status::Ok();
    });
  }
  Status Send(Communicator& comm, int peer, const Tensor& buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {&buf}));
    MESHPLAN_RETURN_IF_ERROR(CheckPeer(comm, peer, "send to", what));
    MESHPLAN_RETURN_IF_ERROR(NcclType(what, buf.dtype()).status());
    Cast(comm).pending().push_back({buf, peer});  // issued with the next Recv or FlushSends
    return Status::Ok();
  }
  Status Recv(Communicator& comm, int peer, Tensor* buf, const char* what) override {
    MESHPLAN_RETURN_IF_ERROR(Defined(what, {buf}));
    MESHPLAN_RETURN_IF_ERROR(CheckPeer(comm, peer, "receive from", what));
    MESHPLAN_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(what, buf->dtype()));
    CudaCommunicator& c = Cast(comm);
    // This rank's pending sends and the receive in one group, so that neither waits on the other.
    return OnCommStream(
        what, c,
        [&] {
          MESHPLAN_RETURN_IF_NCCL_ERROR(
              ncclRecv(buf->data(), static_cast<size_t>(buf->numel()), type, peer, c.nccl(), comm_));
          return Status::Ok();
        },
        /*group_pending=*/true);
  }
  Status FlushSends(Communicator& comm, const char* what) override {
    CudaCommunicator& c = Cast(comm);
    if (c.nccl() == nullptr || c.pending().empty()) return Status::Ok();
    return OnCommStream(
        what, c, [] { return Status::Ok(); }, /*group_pending=*/true);
  }

  // ---- timing
  Status Synchronize() override {
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(comm_));
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(compute_));
    return Status::Ok();
  }
  Result<Event> RecordEvent() override {
    if (used_events_ == events_.size()) {
      cudaEvent_t e = nullptr;
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaEventCreate(&e));
      events_.push_back(e);
    }
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaEventRecord(events_[used_events_], compute_));
    return Event{static_cast<int64_t>(used_events_++)};
  }
  Result<double> ElapsedSeconds(Event start, Event stop) override {
    const auto n = static_cast<int64_t>(used_events_);
    if (start.id < 0 || stop.id < 0 || start.id >= n || stop.id >= n)
      return Bad("elapsed_seconds", "unknown event (released, or never recorded)");
    float ms = 0;
    const cudaError_t err =
        cudaEventElapsedTime(&ms, events_[static_cast<size_t>(start.id)], events_[static_cast<size_t>(stop.id)]);
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return Bad("elapsed_seconds", "an event has not completed yet (call Synchronize() first)");
    }
    if (err != cudaSuccess) return CudaErrorStatus(err, "cudaEventElapsedTime(&ms, start, stop)", __FILE__, __LINE__);
    return static_cast<double>(ms) * 1e-3;
  }
  void ReleaseEvents() override { used_events_ = 0; }  // the events are reused by later records

 private:
  Status NcclGetId(ncclUniqueId* id) {
    MESHPLAN_RETURN_IF_NCCL_ERROR(ncclGetUniqueId(id));
    return Status::Ok();
  }
  Status NcclInit(ncclComm_t* comm, int size, const ncclUniqueId& id, int rank) {
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaSetDevice(device_));
    MESHPLAN_RETURN_IF_NCCL_ERROR(ncclCommInitRank(comm, size, id, rank));
    return Status::Ok();
  }

  Status CheckPeer(Communicator& comm, int peer, const char* verb, const char* what) {
    if (comm.size() == 1)
      return Bad(what, std::string(verb) + " peer " + std::to_string(peer) + ": group " + Cast(comm).host()->name() +
                           " has one rank, so there is no peer");
    if (peer < 0 || peer >= comm.size())
      return Bad(what, std::string(verb) + " peer " + std::to_string(peer) + ": not a rank of group " +
                           Cast(comm).host()->name() + " (" + std::to_string(comm.size()) + " ranks)");
    return Status::Ok();
  }

  // A group of one: the collective's result is its input, copied on the compute stream.
  Status CopyOnCompute(const char* what, const Tensor& in, Tensor* out) {
    if (in.data() == out->data() || in.bytes() == 0) return Status::Ok();
    const cudaError_t err =
        cudaMemcpyAsync(out->data(), in.data(), static_cast<size_t>(in.bytes()), cudaMemcpyDeviceToDevice, compute_);
    if (err != cudaSuccess)
      return Prefixed(what, CudaErrorStatus(err, "cudaMemcpyAsync(out, in, bytes, D2D, compute)", __FILE__, __LINE__));
    return Status::Ok();
  }

  // Issues `body` (NCCL calls on comm_) on the communication stream between the two joins (see
  // the header): comm_ waits for the compute stream's work so far, and the compute stream waits
  // for the body. With `group_pending`, the communicator's pending sends join the body in one NCCL
  // group; otherwise they are issued first, in a group of their own.
  Status OnCommStream(const char* what, CudaCommunicator& c, const std::function<Status()>& body,
                      bool group_pending = false) {
    if (!group_pending && !c.pending().empty())
      MESHPLAN_RETURN_IF_ERROR(OnCommStream(
          what, c, [] { return Status::Ok(); }, true));
    Status s = [&]() -> Status {
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaEventRecord(ready_, compute_));
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(comm_, ready_, 0));
      MESHPLAN_RETURN_IF_NCCL_ERROR(ncclGroupStart());
      Status inner = Status::Ok();
      if (group_pending) {
        for (const PendingSend& p : c.pending()) {
          auto type = NcclType(what, p.buf.dtype());  // checked by Send
          if (!type.ok()) {
            inner = type.status();
            break;
          }
          const ncclResult_t r =
              ncclSend(p.buf.data(), static_cast<size_t>(p.buf.numel()), *type, p.peer, c.nccl(), comm_);
          if (r != ncclSuccess) {
            inner = NcclErrorStatus(r, "ncclSend(buf, count, type, peer, comm, stream)", __FILE__, __LINE__);
            break;
          }
        }
      }
      if (inner.ok()) inner = body();
      const ncclResult_t end = ncclGroupEnd();  // always closes the group, even after an error
      MESHPLAN_RETURN_IF_ERROR(inner);
      if (end != ncclSuccess) return NcclErrorStatus(end, "ncclGroupEnd()", __FILE__, __LINE__);
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaEventRecord(done_, comm_));
      MESHPLAN_RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(compute_, done_, 0));
      return Status::Ok();
    }();
    if (group_pending) c.pending().clear();
    return Prefixed(std::string(what) + " on group " + c.host()->name(), s);
  }

  const int device_;
  const int device_count_;
  const DeviceInfo info_;
  std::string description_;
  cudaStream_t compute_ = nullptr;  // every op, in call order
  cudaStream_t comm_ = nullptr;     // NCCL, joined to compute_ around each call
  cudaEvent_t ready_ = nullptr;     // joins (no timing)
  cudaEvent_t done_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  Scratch lt_workspace_;
  Scratch staging_;                                      // fp32 values of a host copy of a 16/8-bit tensor
  Scratch rows_scratch_;                                 // attention backward: D per query row
  Scratch norm_scratch_;                                 // norm backward: partial column sums
  Scratch fp8_a_, fp8_b_;                                // fp8 GEMM operands transposed to cuBLASLt's TN layout
  std::map<std::array<int64_t, 6>, Fp8Plan> fp8_plans_;  // by (batch, m, n, k, ta, tb)
  std::vector<cudaEvent_t> events_;                      // pool; the first used_events_ are this round's
  size_t used_events_ = 0;
  std::shared_ptr<Stats> stats_;
};

// The device when the options name none: $MESHPLAN_CUDA_DEVICE, else the launcher's node-local
// rank modulo the visible devices (one GPU per rank), else 0.
Result<int> DefaultDevice(int count) {
  auto parse = [](const char* text, int* out) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 0 || v > std::numeric_limits<int>::max()) return false;
    *out = static_cast<int>(v);
    return true;
  };
  int v = 0;
  if (const char* e = std::getenv("MESHPLAN_CUDA_DEVICE"); e != nullptr && *e != '\0') {
    if (!parse(e, &v))
      return Status::Unavailable(std::string("cuda backend: MESHPLAN_CUDA_DEVICE=\"") + e +
                                 "\" is not a device ordinal");
    return v;
  }
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}) {
    if (const char* e = std::getenv(name); e != nullptr && parse(e, &v)) return v % count;
  }
  return 0;
}

}  // namespace

Result<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options) {
  auto devices = ListDevices();
  if (!devices.ok()) return Status::Unavailable("cuda backend: " + devices.status().message());
  const int count = static_cast<int>(devices->size());
  int device = options.device;
  if (device < 0) {
    MESHPLAN_ASSIGN_OR_RETURN(device, DefaultDevice(count));
  }
  if (device >= count)
    return Status::Unavailable("cuda backend: device " + std::to_string(device) + " does not exist (" +
                               std::to_string(count) + " visible)");
  auto backend = std::make_unique<CudaBackend>(device, count, (*devices)[static_cast<size_t>(device)]);
  MESHPLAN_RETURN_IF_ERROR(Prefixed("initialising device " + std::to_string(device), backend->Init()));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace meshplan::runtime::cuda
