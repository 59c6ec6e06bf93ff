// Device detection for the runtime: which CUDA GPUs this process can see, and which NCCL it links.
// Used by the CLI (to print what a machine has) and by the CUDA backend (to pick a device).
// No CUDA or NCCL header is included here; a build without the CUDA backend still has these
// functions, and they report Unavailable instead of failing to link.
// Thread-safety: both functions may be called from any thread (the CUDA runtime is thread-safe).
#ifndef MESHPLAN_RUNTIME_DEVICE_H_
#define MESHPLAN_RUNTIME_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/measurement.h"
#include "core/status.h"

namespace meshplan::runtime {

// One CUDA device as cudaGetDeviceProperties describes it (a value type of the measurement
// record, core/measurement.h).
using core::DeviceInfo;

// The CUDA devices visible to this process (CUDA_VISIBLE_DEVICES applies), in CUDA ordinal order;
// never empty when ok(). Unavailable when this build has no CUDA backend, or when the CUDA runtime
// finds no usable device or driver (the message carries the CUDA error string, e.g. "no
// CUDA-capable device is detected"). The first call initialises the CUDA runtime, which can take
// a second or more.
core::Result<std::vector<DeviceInfo>> ListCudaDevices();

using core::GpuPresetForDevice;  // a detected device's GPU preset (core/measurement.h)

// The version of the NCCL library linked at run time, "MAJOR.MINOR.PATCH" (ncclGetVersion; needs
// no GPU). Empty in a build without the CUDA backend, or if NCCL reports an error.
std::string NcclVersionString();

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_DEVICE_H_
