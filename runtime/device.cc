#include "runtime/device.h"

#ifndef MESHPLAN_HAVE_CUDA  // Set PUBLIC on meshplan_runtime by CMakeLists.txt; absent means no.
#define MESHPLAN_HAVE_CUDA 0
#endif

#if MESHPLAN_HAVE_CUDA
#include "runtime/cuda/cuda_device.h"
#endif

namespace meshplan::runtime {

core::Result<std::vector<DeviceInfo>> ListCudaDevices() {
#if MESHPLAN_HAVE_CUDA
  return cuda::ListDevices();
#else
  return core::Status::Unavailable(
      "this build has no CUDA backend (configure with the CUDA toolkit and NCCL present; "
      "MESHPLAN_CUDA=AUTO|ON)");
#endif
}

std::string NcclVersionString() {
#if MESHPLAN_HAVE_CUDA
  return cuda::NcclVersion();
#else
  return "";
#endif
}

}  // namespace meshplan::runtime
