// The cuda backend's kernels; contracts in runtime/cuda/kernels.h. Written for correctness and a
// short nvcc time first: one kernel per op, elements loaded and stored through a runtime switch
// on the element type (uniform across a launch, so the branch costs little) instead of one
// template instantiation per dtype. Formulas mirror runtime/cpu/cpu_backend.cc line by line.
#include "runtime/cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>

namespace meshplan::runtime::cuda {
namespace {

constexpr int kThreads = 256;      // elementwise, row and column kernels
constexpr int kAttnThreads = 128;  // attention: keys (or query rows) per chunk; a multiple of 32
constexpr int64_t kMaxGrid = 0x7fffffff;
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi), as the cpu backend

// ---- element access ---------------------------------------------------------------------------

__device__ __forceinline__ float Ld(const void* p, ElemType t, int64_t i) {
  switch (t) {
    case ElemType::kBf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case ElemType::kF16: return __half2float(static_cast<const __half*>(p)[i]);
    case ElemType::kFp8E4M3: return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(p)[i]);
    case ElemType::kF32: break;
  }
  return static_cast<const float*>(p)[i];
}
__device__ __forceinline__ float Ld(DevPtr p, int64_t i) { return Ld(p.data, p.type, i); }

// Round to nearest even: bf16 and fp16 as the cpu's RoundToDtype; fp8 e4m3 saturates (+-448).
__device__ __forceinline__ void St(DevPtr p, int64_t i, float x) {
  switch (p.type) {
    case ElemType::kBf16: static_cast<__nv_bfloat16*>(p.data)[i] = __float2bfloat16_rn(x); return;
    case ElemType::kF16: static_cast<__half*>(p.data)[i] = __float2half_rn(x); return;
    case ElemType::kFp8E4M3: static_cast<__nv_fp8_e4m3*>(p.data)[i] = __nv_fp8_e4m3(x); return;
    case ElemType::kF32: break;
  }
  static_cast<float*>(p.data)[i] = x;
}

// The smallest positive subnormal of each element type, as a float.
__device__ __forceinline__ float SmallestSubnormal(ElemType t) {
  switch (t) {
    case ElemType::kBf16: return __int_as_float(0x00010000);  // bf16 0x0001 = 2^-133
    case ElemType::kF16: return 5.9604644775390625e-08f;      // 2^-24
    case ElemType::kFp8E4M3: return 0.001953125f;             // 2^-9
    case ElemType::kF32: break;
  }
  return __int_as_float(1);  // 2^-149
}

// ---- reductions -------------------------------------------------------------------------------

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// The sum (or max) of `v` over the block, returned to every thread. Every thread of the block
// must call it; blockDim.x is a multiple of 32. `red`: 32 floats of shared memory. Its barriers
// also publish every shared-memory write made before the call.
template <bool kMax>
__device__ float BlockReduce(float v, float* red) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  v = kMax ? WarpMax(v) : WarpSum(v);
  __syncthreads();  // a previous call's readers of red[0] are done
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float r = lane < warps ? red[lane] : (kMax ? -CUDART_INF_F : 0.0f);
    r = kMax ? WarpMax(r) : WarpSum(r);
    if (lane == 0) red[0] = r;  // every lane of warp 0 has read red[lane] (the shuffles sync it)
  }
  __syncthreads();
  return red[0];
}

__device__ __forceinline__ int64_t GlobalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridThreads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

unsigned GridFor(int64_t n) {  // grid-stride kernels: enough blocks to fill any GPU, capped
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65536 ? 65536 : blocks));
}

// ---- conversion, fills, transpose ------------------------------------------------------------

__global__ void ConvertFromF32Kernel(const float* src, DevPtr dst, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) St(dst, i, src[i]);
}
__global__ void ConvertToF32Kernel(DevPtr src, float* dst, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) dst[i] = Ld(src, i);
}

// splitmix64's output function (Steele, Lea & Flood 2014): a bijective 64-bit mix.
__host__ __device__ __forceinline__ uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

__global__ void FillRandomKernel(DevPtr dst, int64_t n, uint64_t key, float scale) {
  const float smallest = scale * (1.0f / 1024.0f);  // as the cpu backend: far from zero
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) {
    // Element i is splitmix64's (i+1)-th output from state `key`: independent of the launch.
    const uint64_t z = Mix64(key + kGolden * (static_cast<uint64_t>(i) + 1));
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // 24 bits: exact, [0, 1)
    float x = (2.0f * u - 1.0f) * scale;
    if (fabsf(x) < smallest) x = copysignf(smallest, x == 0.0f ? 1.0f : x);
    St(dst, i, x);
    if (Ld(dst, i) == 0.0f) St(dst, i, copysignf(SmallestSubnormal(dst.type), x));
  }
}
__global__ void FillKernel(DevPtr dst, int64_t n, float value) {
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) St(dst, i, value);
}

template <typename T>
__global__ void TransposeKernel(const T* src, T* dst, int64_t rows, int64_t cols) {
  __shared__ T tile[32][33];
  const int64_t offset = static_cast<int64_t>(blockIdx.z) * rows * cols;
  src += offset;
  dst += offset;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  for (int64_t j = threadIdx.y; j < 32; j += blockDim.y) {
    const int64_t r = static_cast<int64_t>(blockIdx.y) * 32 + j;
    if (r < rows && c < cols) tile[j][threadIdx.x] = src[r * cols + c];
  }
  __syncthreads();
  const int64_t r_out = static_cast<int64_t>(blockIdx.y) * 32 + threadIdx.x;  // a source row
  for (int64_t j = threadIdx.y; j < 32; j += blockDim.y) {
    const int64_t c_out = static_cast<int64_t>(blockIdx.x) * 32 + j;  // a source column
    if (c_out < cols && r_out < rows) dst[c_out * rows + r_out] = tile[threadIdx.x][j];
  }
}

// ---- attention --------------------------------------------------------------------------------

// The exclusive end of the keys query row i sees (the cpu backend's KeyEnd).
__device__ __forceinline__ int64_t KeyEnd(const AttentionShape& s, int64_t i) {
  if (!s.causal) return s.skv;
  const int64_t e = i + (s.skv - s.sq) + 1;
  return e < 0 ? 0 : (e > s.skv ? s.skv : e);
}

// One block per (batch*head, query row). Shared: q row [d], acc [dv], p [kAttnThreads], red [32].
__global__ void __launch_bounds__(kAttnThreads)
    AttentionForwardKernel(AttentionShape s, DevPtr q, DevPtr k, DevPtr v, DevPtr out, DevPtr lse) {
  extern __shared__ float smem[];
  float* q_s = smem;
  float* acc = q_s + s.d;
  float* p_s = acc + s.dv;
  float* red = p_s + kAttnThreads;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t row = blockIdx.x;  // bh * sq + i
  const int64_t bh = row / s.sq, i = row % s.sq;
  const int64_t end = KeyEnd(s, i);
  const int64_t key0 = bh * s.skv;
  for (int64_t t = tid; t < s.d; t += kAttnThreads) q_s[t] = Ld(q, row * s.d + t);
  for (int64_t t = tid; t < s.dv; t += kAttnThreads) acc[t] = 0.0f;
  __syncthreads();
  // Online softmax over chunks of keys: m the running max of the scaled scores, l the running
  // sum of exp(score - m), acc the running sum of exp(score - m) v. Equal to the cpu's
  // max-then-sum form up to rounding.
  float m = -CUDART_INF_F, l = 0.0f;
  for (int64_t c0 = 0; c0 < end; c0 += kAttnThreads) {
    const int64_t j = c0 + tid;
    float score = -CUDART_INF_F;
    if (j < end) {
      float dot = 0.0f;
      for (int64_t t = 0; t < s.d; ++t) dot += q_s[t] * Ld(k, (key0 + j) * s.d + t);
      score = dot * s.scale;
    }
    const float chunk_max = BlockReduce<true>(score, red);  // finite: the chunk has a key
    const float new_m = fmaxf(m, chunk_max);
    const float rescale = expf(m - new_m);  // 0 on the first chunk (m = -inf)
    const float p = j < end ? expf(score - new_m) : 0.0f;
    p_s[tid] = p;
    l = l * rescale + BlockReduce<false>(p, red);  // its barriers publish p_s
    const int64_t len = end - c0 < kAttnThreads ? end - c0 : kAttnThreads;
    for (int64_t t = tid; t < s.dv; t += kAttnThreads) {
      float a = acc[t] * rescale;
      for (int64_t jj = 0; jj < len; ++jj) a += p_s[jj] * Ld(v, (key0 + c0 + jj) * s.dv + t);
      acc[t] = a;  // only this thread touches acc[t]
    }
    m = new_m;
    __syncthreads();  // the next chunk rewrites p_s
  }
  // No visible key: a zero row and lse = -inf, as the cpu backend.
  for (int64_t t = tid; t < s.dv; t += kAttnThreads) St(out, row * s.dv + t, end > 0 ? acc[t] / l : 0.0f);
  if (tid == 0) St(lse, row, end > 0 ? m + logf(l) : -CUDART_INF_F);
}

// Backward, query rows: dQ_i = scale sum_j P_ij (dP_ij - D_i) K_j with P_ij = exp(scale q_i.k_j -
// lse_i), dP_ij = dO_i.v_j, D_i = dO_i.O_i (written to d_rows for the key kernel).
// Shared: q [d], dO [dv], dq [d], dS [kAttnThreads], red [32].
__global__ void __launch_bounds__(kAttnThreads)
    AttentionBackwardRowsKernel(AttentionShape s, DevPtr q, DevPtr k, DevPtr v, DevPtr out, DevPtr dout, DevPtr lse,
                                DevPtr dq, float* d_rows) {
  extern __shared__ float smem[];
  float* q_s = smem;
  float* do_s = q_s + s.d;
  float* dq_s = do_s + s.dv;
  float* ds_s = dq_s + s.d;
  float* red = ds_s + kAttnThreads;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t row = blockIdx.x;
  const int64_t bh = row / s.sq, i = row % s.sq;
  const int64_t end = KeyEnd(s, i);
  const int64_t key0 = bh * s.skv;
  for (int64_t t = tid; t < s.d; t += kAttnThreads) {
    q_s[t] = Ld(q, row * s.d + t);
    dq_s[t] = 0.0f;
  }
  float part = 0.0f;
  for (int64_t t = tid; t < s.dv; t += kAttnThreads) {
    const float g = Ld(dout, row * s.dv + t);
    do_s[t] = g;
    part += g * Ld(out, row * s.dv + t);
  }
  const float D = BlockReduce<false>(part, red);  // its barriers publish q_s, do_s, dq_s
  if (tid == 0) d_rows[row] = D;
  const float L = Ld(lse, row);
  for (int64_t c0 = 0; c0 < end; c0 += kAttnThreads) {
    const int64_t j = c0 + tid;
    float ds = 0.0f;
    if (j < end) {
      float dot = 0.0f, dp = 0.0f;
      for (int64_t t = 0; t < s.d; ++t) dot += q_s[t] * Ld(k, (key0 + j) * s.d + t);
      for (int64_t t = 0; t < s.dv; ++t) dp += do_s[t] * Ld(v, (key0 + j) * s.dv + t);
      const float P = expf(dot * s.scale - L);
      ds = P * (dp - D) * s.scale;
    }
    ds_s[tid] = ds;
    __syncthreads();
    const int64_t len = end - c0 < kAttnThreads ? end - c0 : kAttnThreads;
    for (int64_t t = tid; t < s.d; t += kAttnThreads) {
      float a = dq_s[t];
      for (int64_t jj = 0; jj < len; ++jj) a += ds_s[jj] * Ld(k, (key0 + c0 + jj) * s.d + t);
      dq_s[t] = a;
    }
    __syncthreads();
  }
  for (int64_t t = tid; t < s.d; t += kAttnThreads) St(dq, row * s.d + t, dq_s[t]);
}

// Backward, key rows: dV_j = sum_i P_ij dO_i, dK_j = scale sum_i P_ij (dP_ij - D_i) Q_i over the
// query rows i that see key j (causal: i >= j - (skv - sq)). Shared: k [d], v [dv], dk [d],
// dv [dv], P [kAttnThreads], dS [kAttnThreads].
__global__ void __launch_bounds__(kAttnThreads)
    AttentionBackwardKeysKernel(AttentionShape s, DevPtr q, DevPtr k, DevPtr v, DevPtr dout, DevPtr lse, DevPtr dk,
                                DevPtr dv, const float* d_rows) {
  extern __shared__ float smem[];
  float* k_s = smem;
  float* v_s = k_s + s.d;
  float* dk_s = v_s + s.dv;
  float* dv_s = dk_s + s.d;
  float* p_s = dv_s + s.dv;
  float* ds_s = p_s + kAttnThreads;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t key_row = blockIdx.x;  // bh * skv + j
  const int64_t bh = key_row / s.skv, j = key_row % s.skv;
  const int64_t row0 = bh * s.sq;
  for (int64_t t = tid; t < s.d; t += kAttnThreads) {
    k_s[t] = Ld(k, key_row * s.d + t);
    dk_s[t] = 0.0f;
  }
  for (int64_t t = tid; t < s.dv; t += kAttnThreads) {
    v_s[t] = Ld(v, key_row * s.dv + t);
    dv_s[t] = 0.0f;
  }
  __syncthreads();
  int64_t first = 0;
  if (s.causal) {
    first = j - (s.skv - s.sq);
    if (first < 0) first = 0;
  }
  for (int64_t c0 = first; c0 < s.sq; c0 += kAttnThreads) {
    const int64_t i = c0 + tid;
    float p = 0.0f, ds = 0.0f;
    if (i < s.sq) {
      const int64_t r = row0 + i;
      float dot = 0.0f, dp = 0.0f;
      for (int64_t t = 0; t < s.d; ++t) dot += Ld(q, r * s.d + t) * k_s[t];
      for (int64_t t = 0; t < s.dv; ++t) dp += Ld(dout, r * s.dv + t) * v_s[t];
      p = expf(dot * s.scale - Ld(lse, r));  // lse finite: row i sees at least key j
      ds = p * (dp - d_rows[r]) * s.scale;
    }
    p_s[tid] = p;
    ds_s[tid] = ds;
    __syncthreads();
    const int64_t len = s.sq - c0 < kAttnThreads ? s.sq - c0 : kAttnThreads;
    for (int64_t t = tid; t < s.dv; t += kAttnThreads) {
      float a = dv_s[t];
      for (int64_t ii = 0; ii < len; ++ii) a += p_s[ii] * Ld(dout, (row0 + c0 + ii) * s.dv + t);
      dv_s[t] = a;
    }
    for (int64_t t = tid; t < s.d; t += kAttnThreads) {
      float a = dk_s[t];
      for (int64_t ii = 0; ii < len; ++ii) a += ds_s[ii] * Ld(q, (row0 + c0 + ii) * s.d + t);
      dk_s[t] = a;
    }
    __syncthreads();
  }
  for (int64_t t = tid; t < s.d; t += kAttnThreads) St(dk, key_row * s.d + t, dk_s[t]);
  for (int64_t t = tid; t < s.dv; t += kAttnThreads) St(dv, key_row * s.dv + t, dv_s[t]);
}

// ---- norms ------------------------------------------------------------------------------------

// One block per row: mean, then the variance about it (two passes, as the cpu backend).
__global__ void __launch_bounds__(kThreads) NormForwardKernel(bool rms, DevPtr x, DevPtr gamma, DevPtr beta, float eps,
                                                              DevPtr y, DevPtr mean, DevPtr rstd, int64_t h) {
  __shared__ float red[32];
  const int64_t r = blockIdx.x, base = r * h;
  const float hf = static_cast<float>(h);
  float mu = 0.0f;
  if (!rms) {
    float sum = 0.0f;
    for (int64_t t = threadIdx.x; t < h; t += kThreads) sum += Ld(x, base + t);
    mu = BlockReduce<false>(sum, red) / hf;
  }
  float sq = 0.0f;
  for (int64_t t = threadIdx.x; t < h; t += kThreads) {
    const float c = Ld(x, base + t) - mu;
    sq += c * c;
  }
  const float rs = 1.0f / sqrtf(BlockReduce<false>(sq, red) / hf + eps);
  for (int64_t t = threadIdx.x; t < h; t += kThreads)
    St(y, base + t, (Ld(x, base + t) - mu) * rs * Ld(gamma, t) + (rms ? 0.0f : Ld(beta, t)));
  if (threadIdx.x == 0) {
    if (!rms) St(mean, r, mu);
    St(rstd, r, rs);
  }
}

// dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = dy gamma; rmsnorm drops the
// mean(dxhat) term. One block per row.
__global__ void __launch_bounds__(kThreads) NormBackwardRowsKernel(bool rms, DevPtr x, DevPtr gamma, DevPtr mean,
                                                                   DevPtr rstd, DevPtr dy, DevPtr dx, int64_t h) {
  __shared__ float red[32];
  const int64_t r = blockIdx.x, base = r * h;
  const float mu = rms ? 0.0f : Ld(mean, r), rs = Ld(rstd, r);
  float sd = 0.0f, sdx = 0.0f;
  for (int64_t t = threadIdx.x; t < h; t += kThreads) {
    const float xhat = (Ld(x, base + t) - mu) * rs, d = Ld(dy, base + t) * Ld(gamma, t);
    sd += d;
    sdx += d * xhat;
  }
  const float sum_d = BlockReduce<false>(sd, red);
  const float sum_dx = BlockReduce<false>(sdx, red);
  const float hf = static_cast<float>(h);
  for (int64_t t = threadIdx.x; t < h; t += kThreads) {
    const float xhat = (Ld(x, base + t) - mu) * rs, d = Ld(dy, base + t) * Ld(gamma, t);
    St(dx, base + t, rs * (d - (rms ? 0.0f : sum_d / hf) - xhat * sum_dx / hf));
  }
}

// dgamma = sum_rows dy xhat, dbeta = sum_rows dy: per chunk of rows, one thread per column
// (coalesced), partial sums to scratch [chunk][2][h]; then one thread per column adds the chunks.
int64_t RowsPerChunk(int64_t rows) {
  const int64_t per = (rows + 255) / 256;  // at most 256 chunks
  return per < 32 ? 32 : per;
}
__global__ void NormBackwardParamsPartialKernel(bool rms, DevPtr x, DevPtr mean, DevPtr rstd, DevPtr dy, int64_t rows,
                                                int64_t h, int64_t rows_per_chunk, float* scratch) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= h) return;
  const int64_t chunk = blockIdx.y, r0 = chunk * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  float sg = 0.0f, sb = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float mu = rms ? 0.0f : Ld(mean, r), rs = Ld(rstd, r);
    const float g = Ld(dy, r * h + col);
    sg += g * (Ld(x, r * h + col) - mu) * rs;
    sb += g;
  }
  scratch[(2 * chunk) * h + col] = sg;
  scratch[(2 * chunk + 1) * h + col] = sb;
}
__global__ void NormBackwardParamsFinalKernel(bool rms, const float* scratch, int64_t chunks, int64_t h, DevPtr dgamma,
                                              DevPtr dbeta) {
  for (int64_t col = GlobalThread(); col < h; col += GridThreads()) {
    float sg = 0.0f, sb = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      sg += scratch[(2 * c) * h + col];
      sb += scratch[(2 * c + 1) * h + col];
    }
    St(dgamma, col, sg);
    if (!rms) St(dbeta, col, sb);
  }
}

// ---- activations, softmax, add, AdamW ---------------------------------------------------------

__global__ void GeluForwardKernel(DevPtr x, DevPtr y, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) {
    const float v = Ld(x, i);
    St(y, i, 0.5f * v * (1.0f + tanhf(kGeluC * (v + 0.044715f * v * v * v))));
  }
}
__global__ void GeluBackwardKernel(DevPtr x, DevPtr dy, DevPtr dx, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) {
    const float v = Ld(x, i);
    const float t = tanhf(kGeluC * (v + 0.044715f * v * v * v));
    const float d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * v * v);
    St(dx, i, Ld(dy, i) * d);
  }
}

__device__ __forceinline__ float Sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void SwigluForwardKernel(DevPtr x, DevPtr y, int64_t rows, int64_t f) {
  for (int64_t idx = GlobalThread(); idx < rows * f; idx += GridThreads()) {
    const int64_t r = idx / f, i = idx % f;
    const float g = Ld(x, r * 2 * f + i), u = Ld(x, r * 2 * f + f + i);
    St(y, idx, g * Sigmoid(g) * u);
  }
}
__global__ void SwigluBackwardKernel(DevPtr x, DevPtr dy, DevPtr dx, int64_t rows, int64_t f) {
  for (int64_t idx = GlobalThread(); idx < rows * f; idx += GridThreads()) {
    const int64_t r = idx / f, i = idx % f;
    const float g = Ld(x, r * 2 * f + i), u = Ld(x, r * 2 * f + f + i), d = Ld(dy, idx);
    const float s = Sigmoid(g);
    St(dx, r * 2 * f + i, d * u * s * (1.0f + g * (1.0f - s)));  // d silu/dg
    St(dx, r * 2 * f + f + i, d * g * s);
  }
}

__global__ void __launch_bounds__(kThreads) SoftmaxForwardKernel(DevPtr x, DevPtr y, int64_t n) {
  __shared__ float red[32];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  float mx = -CUDART_INF_F;
  for (int64_t t = threadIdx.x; t < n; t += kThreads) mx = fmaxf(mx, Ld(x, base + t));
  mx = BlockReduce<true>(mx, red);
  float sum = 0.0f;
  for (int64_t t = threadIdx.x; t < n; t += kThreads) sum += expf(Ld(x, base + t) - mx);
  sum = BlockReduce<false>(sum, red);
  for (int64_t t = threadIdx.x; t < n; t += kThreads) St(y, base + t, expf(Ld(x, base + t) - mx) / sum);
}
__global__ void __launch_bounds__(kThreads) SoftmaxBackwardKernel(DevPtr y, DevPtr dy, DevPtr dx, int64_t n) {
  __shared__ float red[32];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  float dot = 0.0f;
  for (int64_t t = threadIdx.x; t < n; t += kThreads) dot += Ld(dy, base + t) * Ld(y, base + t);
  dot = BlockReduce<false>(dot, red);
  for (int64_t t = threadIdx.x; t < n; t += kThreads) {
    const float yv = Ld(y, base + t);
    St(dx, base + t, yv * (Ld(dy, base + t) - dot));
  }
}

__global__ void AddKernel(DevPtr a, DevPtr b, float alpha, DevPtr out, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) St(out, i, Ld(a, i) + alpha * Ld(b, i));
}

__global__ void AdamUpdateKernel(AdamScalars s, DevPtr grad, DevPtr param, float* m, float* v, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridThreads()) {
    const float g = Ld(grad, i);
    const float mi = s.beta1 * m[i] + (1.0f - s.beta1) * g;
    const float vi = s.beta2 * v[i] + (1.0f - s.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi / s.c1, vhat = vi / s.c2;
    const float p = Ld(param, i);
    St(param, i, p - s.lr * (mhat / (sqrtf(vhat) + s.eps) + s.weight_decay * p));
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

cudaError_t LaunchConvertFromF32(const float* src, DevPtr dst, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ConvertFromF32Kernel<<<GridFor(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t LaunchConvertToF32(DevPtr src, float* dst, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ConvertToF32Kernel<<<GridFor(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t LaunchFillRandom(DevPtr dst, int64_t n, uint64_t seed, float scale, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  FillRandomKernel<<<GridFor(n), kThreads, 0, stream>>>(dst, n, Mix64(seed + kGolden), scale);
  return cudaGetLastError();
}

cudaError_t LaunchFill(DevPtr dst, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  FillKernel<<<GridFor(n), kThreads, 0, stream>>>(dst, n, value);
  return cudaGetLastError();
}

cudaError_t LaunchTranspose(const void* src, void* dst, int elem_bytes, int64_t batch, int64_t rows, int64_t cols,
                            cudaStream_t stream) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t gx = (cols + 31) / 32, gy = (rows + 31) / 32;
  if (gx > kMaxGrid || gy > 65535 || batch > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(batch));
  const dim3 block(32, 8);
  switch (elem_bytes) {
    case 1:
      TransposeKernel<<<grid, block, 0, stream>>>(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), rows,
                                                  cols);
      break;
    case 2:
      TransposeKernel<<<grid, block, 0, stream>>>(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), rows,
                                                  cols);
      break;
    case 4:
      TransposeKernel<<<grid, block, 0, stream>>>(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), rows,
                                                  cols);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

int64_t AttentionSharedBytes(const AttentionShape& s) {
  const int64_t fwd = s.d + s.dv + kAttnThreads + 32;
  const int64_t rows = 2 * s.d + s.dv + kAttnThreads + 32;
  const int64_t keys = 2 * s.d + 2 * s.dv + 2 * kAttnThreads;
  int64_t most = fwd > rows ? fwd : rows;
  most = most > keys ? most : keys;
  return most * static_cast<int64_t>(sizeof(float));
}

cudaError_t LaunchAttentionForward(const AttentionShape& s, DevPtr q, DevPtr k, DevPtr v, DevPtr out, DevPtr lse,
                                   cudaStream_t stream) {
  const int64_t rows = s.b * s.h * s.sq;
  if (rows <= 0 || s.dv < 0) return cudaSuccess;
  if (rows > kMaxGrid) return cudaErrorInvalidConfiguration;
  const size_t shared = static_cast<size_t>(s.d + s.dv + kAttnThreads + 32) * sizeof(float);
  AttentionForwardKernel<<<static_cast<unsigned>(rows), kAttnThreads, shared, stream>>>(s, q, k, v, out, lse);
  return cudaGetLastError();
}

cudaError_t LaunchAttentionBackward(const AttentionShape& s, DevPtr q, DevPtr k, DevPtr v, DevPtr out, DevPtr dout,
                                    DevPtr lse, DevPtr dq, DevPtr dk, DevPtr dv, float* row_scratch,
                                    cudaStream_t stream) {
  const int64_t rows = s.b * s.h * s.sq, key_rows = s.b * s.h * s.skv;
  if (rows > kMaxGrid || key_rows > kMaxGrid) return cudaErrorInvalidConfiguration;
  if (rows > 0) {
    const size_t shared = static_cast<size_t>(2 * s.d + s.dv + kAttnThreads + 32) * sizeof(float);
    AttentionBackwardRowsKernel<<<static_cast<unsigned>(rows), kAttnThreads, shared, stream>>>(s, q, k, v, out, dout,
                                                                                               lse, dq, row_scratch);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  if (key_rows > 0) {
    const size_t shared = static_cast<size_t>(2 * s.d + 2 * s.dv + 2 * kAttnThreads) * sizeof(float);
    AttentionBackwardKeysKernel<<<static_cast<unsigned>(key_rows), kAttnThreads, shared, stream>>>(
        s, q, k, v, dout, lse, dk, dv, row_scratch);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

cudaError_t LaunchNormForward(bool rms, DevPtr x, DevPtr gamma, DevPtr beta, float eps, DevPtr y, DevPtr mean,
                              DevPtr rstd, int64_t rows, int64_t h, cudaStream_t stream) {
  if (rows <= 0 || h <= 0) return cudaSuccess;
  if (rows > kMaxGrid) return cudaErrorInvalidConfiguration;
  NormForwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(rms, x, gamma, beta, eps, y, mean, rstd, h);
  return cudaGetLastError();
}

int64_t NormBackwardScratchFloats(int64_t rows, int64_t h) {
  if (rows <= 0 || h <= 0) return 0;
  const int64_t per = RowsPerChunk(rows);
  return (rows + per - 1) / per * 2 * h;
}

cudaError_t LaunchNormBackward(bool rms, DevPtr x, DevPtr gamma, DevPtr mean, DevPtr rstd, DevPtr dy, DevPtr dx,
                               DevPtr dgamma, DevPtr dbeta, int64_t rows, int64_t h, float* scratch,
                               cudaStream_t stream) {
  if (h <= 0) return cudaSuccess;
  if (rows > kMaxGrid) return cudaErrorInvalidConfiguration;
  const int64_t per = RowsPerChunk(rows > 0 ? rows : 1);
  const int64_t chunks = rows > 0 ? (rows + per - 1) / per : 0;
  if (rows > 0) {
    NormBackwardRowsKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(rms, x, gamma, mean, rstd, dy, dx, h);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    const dim3 grid(static_cast<unsigned>((h + kThreads - 1) / kThreads), static_cast<unsigned>(chunks));
    NormBackwardParamsPartialKernel<<<grid, kThreads, 0, stream>>>(rms, x, mean, rstd, dy, rows, h, per, scratch);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  NormBackwardParamsFinalKernel<<<GridFor(h), kThreads, 0, stream>>>(rms, scratch, chunks, h, dgamma, dbeta);
  return cudaGetLastError();
}

cudaError_t LaunchGeluForward(DevPtr x, DevPtr y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  GeluForwardKernel<<<GridFor(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchGeluBackward(DevPtr x, DevPtr dy, DevPtr dx, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  GeluBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(x, dy, dx, n);
  return cudaGetLastError();
}

cudaError_t LaunchSwigluForward(DevPtr x, DevPtr y, int64_t rows, int64_t f, cudaStream_t stream) {
  if (rows <= 0 || f <= 0) return cudaSuccess;
  SwigluForwardKernel<<<GridFor(rows * f), kThreads, 0, stream>>>(x, y, rows, f);
  return cudaGetLastError();
}

cudaError_t LaunchSwigluBackward(DevPtr x, DevPtr dy, DevPtr dx, int64_t rows, int64_t f, cudaStream_t stream) {
  if (rows <= 0 || f <= 0) return cudaSuccess;
  SwigluBackwardKernel<<<GridFor(rows * f), kThreads, 0, stream>>>(x, dy, dx, rows, f);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxForward(DevPtr x, DevPtr y, int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  if (rows > kMaxGrid) return cudaErrorInvalidConfiguration;
  SoftmaxForwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxBackward(DevPtr y, DevPtr dy, DevPtr dx, int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  if (rows > kMaxGrid) return cudaErrorInvalidConfiguration;
  SoftmaxBackwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(y, dy, dx, n);
  return cudaGetLastError();
}

cudaError_t LaunchAdd(DevPtr a, DevPtr b, float alpha, DevPtr out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  AddKernel<<<GridFor(n), kThreads, 0, stream>>>(a, b, alpha, out, n);
  return cudaGetLastError();
}

cudaError_t LaunchAdamUpdate(const AdamScalars& a, DevPtr grad, DevPtr param, float* m, float* v, int64_t n,
                             cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  AdamUpdateKernel<<<GridFor(n), kThreads, 0, stream>>>(a, grad, param, m, v, n);
  return cudaGetLastError();
}

}  // namespace meshplan::runtime::cuda
