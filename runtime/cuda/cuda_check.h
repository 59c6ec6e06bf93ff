// CUDA runtime, cuBLAS/cuBLASLt and NCCL return codes as core::Status: a typed version of
// nccl-tests' CUDACHECK and NCCLCHECK that returns instead of aborting. For .cc files in
// runtime/cuda/ only: this header includes the CUDA runtime, cuBLAS and NCCL headers, which no
// header outside runtime/cuda/ may do.
//
//   core::Result<int> DeviceCount() {
//     int n = 0;
//     MESHPLAN_RETURN_IF_CUDA_ERROR(cudaGetDeviceCount(&n));
//     return n;
//   }
//
// The returned Status is Unavailable for errors that say the machine cannot run CUDA (no device,
// no or too old a driver; see IsUnavailableCudaError) and Internal for the rest, which are bugs
// or broken hardware. Its message reads
//   "<error string> (<error name>) from <expr> at <file>:<line>".
// Thread-safety: stateless apart from the CUDA runtime's per-thread last error (see below).
#ifndef MESHPLAN_RUNTIME_CUDA_CUDA_CHECK_H_
#define MESHPLAN_RUNTIME_CUDA_CUDA_CHECK_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <utility>

#include "core/status.h"

namespace meshplan::runtime::cuda {

// True for the codes that describe the environment rather than the program: the "no GPU here"
// path that every signature keeps.
inline bool IsUnavailableCudaError(cudaError_t err) {
  switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorSystemNotReady:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStubLibrary:
    case cudaErrorCallRequiresNewerDriver: return true;
    default: return false;
  }
}

inline std::string CudaErrorMessage(cudaError_t err, const char* expr, const char* file, int line) {
  return std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + ") from " + expr + " at " +
         core::SourcePlace(file, line);
}

// REQUIRES: err != cudaSuccess. Also clears the thread's last CUDA error, so that a later
// cudaGetLastError() check does not report a non-sticky error that was already returned.
inline core::Status CudaErrorStatus(cudaError_t err, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();
  std::string msg = CudaErrorMessage(err, expr, file, line);
  return IsUnavailableCudaError(err) ? core::Status::Unavailable(std::move(msg))
                                     : core::Status::Internal(std::move(msg));
}

// NCCL: system and remote errors (network, a peer gone) are the environment's; the rest
// (invalid usage, unhandled CUDA error, internal) are Internal. ncclInProgress, which only
// non-blocking communicators return, counts as an error here: use the macro on blocking calls.
// REQUIRES: res != ncclSuccess.
inline core::Status NcclErrorStatus(ncclResult_t res, const char* expr, const char* file, int line) {
  std::string msg = std::string(ncclGetErrorString(res)) + " (ncclResult_t " + std::to_string(static_cast<int>(res)) +
                    ") from " + expr + " at " + core::SourcePlace(file, line);
  const bool unavailable = res == ncclSystemError || res == ncclRemoteError;
  return unavailable ? core::Status::Unavailable(std::move(msg)) : core::Status::Internal(std::move(msg));
}

// cuBLAS and cuBLASLt (one status type): "not supported" (no kernel for this dtype, layout or
// architecture), an allocation failure and a library/architecture mismatch describe what this
// machine can do, so they are Unavailable; the rest (invalid value, execution failed, internal)
// are Internal. REQUIRES: st != CUBLAS_STATUS_SUCCESS.
inline core::Status CublasErrorStatus(cublasStatus_t st, const char* expr, const char* file, int line) {
  std::string msg = std::string(cublasGetStatusString(st)) + " (cublasStatus_t " +
                    std::to_string(static_cast<int>(st)) + ") from " + expr + " at " + core::SourcePlace(file, line);
  const bool unavailable = st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ALLOC_FAILED ||
                           st == CUBLAS_STATUS_ARCH_MISMATCH || st == CUBLAS_STATUS_NOT_INITIALIZED;
  return unavailable ? core::Status::Unavailable(std::move(msg)) : core::Status::Internal(std::move(msg));
}

}  // namespace meshplan::runtime::cuda

// Evaluates expr (a CUDA runtime call returning cudaError_t) once; on failure returns the Status
// from the enclosing function, which must return core::Status or core::Result<T>.
#define MESHPLAN_RETURN_IF_CUDA_ERROR(expr)                                                             \
  do {                                                                                                  \
    const cudaError_t meshplan_cuda_err_ = (expr);                                                      \
    if (meshplan_cuda_err_ != cudaSuccess) {                                                            \
      return ::meshplan::runtime::cuda::CudaErrorStatus(meshplan_cuda_err_, #expr, __FILE__, __LINE__); \
    }                                                                                                   \
  } while (0)

// The same for an NCCL call returning ncclResult_t.
#define MESHPLAN_RETURN_IF_NCCL_ERROR(expr)                                                             \
  do {                                                                                                  \
    const ncclResult_t meshplan_nccl_res_ = (expr);                                                     \
    if (meshplan_nccl_res_ != ncclSuccess) {                                                            \
      return ::meshplan::runtime::cuda::NcclErrorStatus(meshplan_nccl_res_, #expr, __FILE__, __LINE__); \
    }                                                                                                   \
  } while (0)

// The same for a cuBLAS or cuBLASLt call returning cublasStatus_t.
#define MESHPLAN_RETURN_IF_CUBLAS_ERROR(expr)                                                              \
  do {                                                                                                     \
    const cublasStatus_t meshplan_cublas_st_ = (expr);                                                     \
    if (meshplan_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                                    \
      return ::meshplan::runtime::cuda::CublasErrorStatus(meshplan_cublas_st_, #expr, __FILE__, __LINE__); \
    }                                                                                                      \
  } while (0)

#endif  // MESHPLAN_RUNTIME_CUDA_CUDA_CHECK_H_
