// The cpu backend: the reference implementation of runtime/backend.h, written for clarity over
// speed (OpenMM's Reference platform). GEMMs are Eigen matrix products; every other kernel is a
// plain loop over rows with fp32 arithmetic. Tensors live in host memory as fp32 whatever their
// dtype: bf16 and fp16 tensors are emulated by rounding (round to nearest even) every value a
// kernel writes and every value copied in, so results carry the dtype's precision while the
// arithmetic inside a kernel accumulates in fp32, as tensor cores do. tf32 is stored and computed
// as fp32. fp8 and int8 tensors are Unavailable. Collectives run on the communicator's HostComm
// (MPI when built with it, or the process alone); every call completes before it returns.
// Timing events read an injectable Clock. A tensor of 16 MiB or more that would exceed the
// memory the kernel reports available (MemAvailable) is Unavailable rather than left to the
// out-of-memory killer.
// Thread-safety: one CpuBackend per thread. Eigen's thread count is process-wide.
#ifndef MESHPLAN_RUNTIME_CPU_CPU_BACKEND_H_
#define MESHPLAN_RUNTIME_CPU_CPU_BACKEND_H_

#include <memory>

#include "runtime/backend.h"

namespace meshplan::runtime {

struct CpuBackendOptions {
  std::shared_ptr<Clock> clock;  // null: SteadyClock()
  int threads = 0;               // Eigen's GEMM threads (OpenMP builds only); 0: leave as is
};

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options = {});

// Rounds `x` to the nearest value representable in `dtype` (ties to even): bf16 keeps 8
// significand bits, fp16 11 (with fp16's range: subnormals below 2^-14, infinity above 65504);
// fp32 and tf32 return x. The cpu backend's emulation of 16-bit storage.
float RoundToDtype(core::Dtype dtype, float x);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_CPU_CPU_BACKEND_H_
