// The cuda backend's own kernels (runtime/cuda/kernels.cu, the one file nvcc compiles): dtype
// conversion, fills, a batched transpose, causal attention forward/backward, layernorm/rmsnorm,
// gelu, swiglu, softmax, add and AdamW. Plain C++ declarations, so that runtime/cuda/*.cc files
// need no nvcc; internal to runtime/cuda/ (this header includes the CUDA runtime API header).
//
// Every launcher enqueues its kernel(s) on `stream` and returns the launch's cudaError_t
// (cudaGetLastError()); it does not synchronise. Shapes are checked by the caller
// (runtime/cuda/cuda_backend.cc), which mirrors the cpu reference's checks; launchers assume
// valid arguments. Element i of a tensor is element i of its row-major layout.
//
// Numerics: every kernel loads its inputs as fp32, computes in fp32 with the same formulas as
// the cpu reference (runtime/cpu/cpu_backend.cc, which the comments cite) and rounds once when it
// stores (round to nearest even; fp16 overflows to infinity; fp8 e4m3 saturates to +-448).
// Reductions run in a different order than the cpu's sequential loops, so results agree to fp32
// rounding, not bit for bit.
// Thread-safety: launchers are stateless; streams carry the ordering.
#ifndef MESHPLAN_RUNTIME_CUDA_KERNELS_H_
#define MESHPLAN_RUNTIME_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace meshplan::runtime::cuda {

// How a tensor's elements are stored on the device (tf32 tensors are stored as fp32).
enum class ElemType : int { kF32 = 0, kBf16 = 1, kF16 = 2, kFp8E4M3 = 3 };

// A device tensor's storage and element type. Non-owning.
struct DevPtr {
  void* data = nullptr;
  ElemType type = ElemType::kF32;
};

// ---- data movement and fills
// dst[i] = round(src[i]) for i < n (src: fp32 device memory).
cudaError_t LaunchConvertFromF32(const float* src, DevPtr dst, int64_t n, cudaStream_t stream);
// dst[i] = float(src[i]) (dst: fp32 device memory).
cudaError_t LaunchConvertToF32(DevPtr src, float* dst, int64_t n, cudaStream_t stream);
// Uniform values in [-scale, scale] from a counter-based hash of (seed, i): deterministic, the
// same on every GPU and launch configuration, and never exactly zero after rounding to the
// element type (|x| >= scale/1024 as on cpu; a value the element type would round to zero is
// stored as its smallest subnormal, sign kept).
cudaError_t LaunchFillRandom(DevPtr dst, int64_t n, uint64_t seed, float scale, cudaStream_t stream);
cudaError_t LaunchFill(DevPtr dst, int64_t n, float value, cudaStream_t stream);
// For each of `batch` matrices: dst [cols, rows] = src [rows, cols]^T, elements of `elem_bytes`
// (1, 2 or 4) bytes. REQUIRES: src and dst do not overlap.
cudaError_t LaunchTranspose(const void* src, void* dst, int elem_bytes, int64_t batch, int64_t rows, int64_t cols,
                            cudaStream_t stream);

// ---- attention: q [b, h, sq, d], k [b, h, skv, d], v [b, h, skv, dv], out [b, h, sq, dv],
// lse [b, h, sq]. One thread block per (batch, head, query row), keys in chunks of the block
// size with an online softmax (Milakov & Gimelshein 2018), so any sequence length fits.
struct AttentionShape {
  int64_t b = 0, h = 0, sq = 0, skv = 0, d = 0, dv = 0;
  float scale = 0;  // > 0 (the caller resolves 0 to 1/sqrt(d))
  bool causal = true;
};
// Dynamic shared memory the attention kernels need; the caller rejects shapes above the
// device's per-block limit.
int64_t AttentionSharedBytes(const AttentionShape& s);
cudaError_t LaunchAttentionForward(const AttentionShape& s, DevPtr q, DevPtr k, DevPtr v, DevPtr out, DevPtr lse,
                                   cudaStream_t stream);
// FlashAttention-2's backward (Dao 2023, Algorithm 2) without tiling: one kernel per query row
// writes dQ and the row's D = rowsum(dO o O) into `row_scratch` (b*h*sq floats), then one kernel
// per key row writes dK and dV by looping over the query rows that see it. No atomics:
// deterministic.
cudaError_t LaunchAttentionBackward(const AttentionShape& s, DevPtr q, DevPtr k, DevPtr v, DevPtr out, DevPtr dout,
                                    DevPtr lse, DevPtr dq, DevPtr dk, DevPtr dv, float* row_scratch,
                                    cudaStream_t stream);

// ---- norms over the last dimension of x [rows, h]. rms: beta and mean are unused (data may be
// null). mean, rstd: [rows].
cudaError_t LaunchNormForward(bool rms, DevPtr x, DevPtr gamma, DevPtr beta, float eps, DevPtr y, DevPtr mean,
                              DevPtr rstd, int64_t rows, int64_t h, cudaStream_t stream);
// Floats of scratch LaunchNormBackward needs for (rows, h): partial column sums for dgamma and
// dbeta over chunks of rows.
int64_t NormBackwardScratchFloats(int64_t rows, int64_t h);
cudaError_t LaunchNormBackward(bool rms, DevPtr x, DevPtr gamma, DevPtr mean, DevPtr rstd, DevPtr dy, DevPtr dx,
                               DevPtr dgamma, DevPtr dbeta, int64_t rows, int64_t h, float* scratch,
                               cudaStream_t stream);

// ---- activations, softmax, elementwise, optimizer
cudaError_t LaunchGeluForward(DevPtr x, DevPtr y, int64_t n, cudaStream_t stream);
cudaError_t LaunchGeluBackward(DevPtr x, DevPtr dy, DevPtr dx, int64_t n, cudaStream_t stream);
// x [rows, 2f] = [gate | up], y and dy [rows, f].
cudaError_t LaunchSwigluForward(DevPtr x, DevPtr y, int64_t rows, int64_t f, cudaStream_t stream);
cudaError_t LaunchSwigluBackward(DevPtr x, DevPtr dy, DevPtr dx, int64_t rows, int64_t f, cudaStream_t stream);
// Over the last dimension (n) of [rows, n].
cudaError_t LaunchSoftmaxForward(DevPtr x, DevPtr y, int64_t rows, int64_t n, cudaStream_t stream);
cudaError_t LaunchSoftmaxBackward(DevPtr y, DevPtr dy, DevPtr dx, int64_t rows, int64_t n, cudaStream_t stream);
// out = a + alpha b; out may alias a or b.
cudaError_t LaunchAdd(DevPtr a, DevPtr b, float alpha, DevPtr out, int64_t n, cudaStream_t stream);
// AdamW; m and v fp32. c1 = 1 - beta1^step, c2 = 1 - beta2^step (computed by the caller as the
// cpu backend does).
struct AdamScalars {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0, c1 = 1, c2 = 1;
};
cudaError_t LaunchAdamUpdate(const AdamScalars& a, DevPtr grad, DevPtr param, float* m, float* v, int64_t n,
                             cudaStream_t stream);

}  // namespace meshplan::runtime::cuda

#endif  // MESHPLAN_RUNTIME_CUDA_KERNELS_H_
