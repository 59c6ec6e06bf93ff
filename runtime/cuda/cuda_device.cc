// The CUDA half of runtime/device.h: host API calls only (cudart, NCCL), no kernels, so a plain
// .cc compiled by the C++ compiler; built only when CMake found the CUDA toolkit and NCCL.
#include "runtime/cuda/cuda_device.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_check.h"

namespace meshplan::runtime::cuda {
namespace {

std::string CudaVersionText(int version) {  // CUDA encodes X.Y as 1000*X + 10*Y.
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// cudaErrorInsufficientDriver is also what a machine with no driver at all gets; say which.
std::string DriverHint(cudaError_t err) {
  if (err != cudaErrorInsufficientDriver) return "";
  int driver = 0;
  int runtime = 0;
  (void)cudaDriverGetVersion(&driver);  // Sets 0, and succeeds, when no driver is loaded.
  (void)cudaRuntimeGetVersion(&runtime);
  if (driver == 0) return "; no NVIDIA driver (libcuda.so.1) is installed";
  return "; the driver supports CUDA " + CudaVersionText(driver) + ", this runtime is CUDA " + CudaVersionText(runtime);
}

}  // namespace

core::Result<std::vector<DeviceInfo>> ListDevices() {
  int count = 0;
  // Whatever the code, a failing cudaGetDeviceCount means this process cannot use CUDA (no GPU,
  // no driver, a driver older than the runtime), so it is Unavailable, never Internal: machines
  // without a GPU run the same binaries.
  if (const cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    (void)cudaGetLastError();  // Not sticky; do not let a later check see it again.
    return core::Status::Unavailable(CudaErrorMessage(err, "cudaGetDeviceCount(&count)", __FILE__, __LINE__) +
                                     DriverHint(err));
  }
  if (count <= 0) {  // Documented not to happen (cudaErrorNoDevice instead); kept for safety.
    return core::Status::Unavailable("cudaGetDeviceCount found no CUDA-capable device");
  }

  std::vector<DeviceInfo> devices;
  devices.reserve(static_cast<std::size_t>(count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp prop{};
    MESHPLAN_RETURN_IF_CUDA_ERROR(cudaGetDeviceProperties(&prop, ordinal));
    devices.push_back(DeviceInfo{
        .name = std::string(prop.name),
        .memory_bytes = static_cast<int64_t>(prop.totalGlobalMem),
        .compute_capability_major = prop.major,
        .compute_capability_minor = prop.minor,
        .sm_count = prop.multiProcessorCount,
    });
  }
  return devices;
}

std::string NcclVersion() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess || code <= 0) return "";
  // nccl.h's NCCL_VERSION(X,Y,Z) is X*1000 + Y*100 + Z up to 2.8 and X*10000 + Y*100 + Z from
  // 2.9 on; ncclGetVersion returns the library's code, which may be newer than the header's.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace meshplan::runtime::cuda
