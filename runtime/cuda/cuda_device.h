// Internal to runtime/: the CUDA half of runtime/device.h, built only when MESHPLAN_HAVE_CUDA is 1
// (runtime/cuda/cuda_device.cc). runtime/device.cc forwards to these so that it needs no CUDA
// header. Contracts are those of ListCudaDevices() and NcclVersionString() in runtime/device.h.
#ifndef MESHPLAN_RUNTIME_CUDA_CUDA_DEVICE_H_
#define MESHPLAN_RUNTIME_CUDA_CUDA_DEVICE_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/device.h"

namespace meshplan::runtime::cuda {

core::Result<std::vector<DeviceInfo>> ListDevices();
std::string NcclVersion();

}  // namespace meshplan::runtime::cuda

#endif  // MESHPLAN_RUNTIME_CUDA_CUDA_DEVICE_H_
