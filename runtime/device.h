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

#include "core/status.h"

namespace meshplan::runtime {

// One CUDA device as cudaGetDeviceProperties describes it. Value type.
struct DeviceInfo {
  std::string name;                  // e.g. "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;          // total device (HBM) memory, bytes; cudaDeviceProp::totalGlobalMem
  int compute_capability_major = 0;  // e.g. 9 for Hopper (sm_90)
  int compute_capability_minor = 0;  // e.g. 0 for Hopper (sm_90)
  int sm_count = 0;                  // streaming multiprocessors; cudaDeviceProp::multiProcessorCount
};

// The CUDA devices visible to this process (CUDA_VISIBLE_DEVICES applies), in CUDA ordinal order;
// never empty when ok(). Unavailable when this build has no CUDA backend, or when the CUDA runtime
// finds no usable device or driver (the message carries the CUDA error string, e.g. "no
// CUDA-capable device is detected"). The first call initialises the CUDA runtime, which can take
// a second or more.
core::Result<std::vector<DeviceInfo>> ListCudaDevices();

// The GPU preset (presets/gpus/) a detected device is, from its name and memory ("NVIDIA H100
// 80GB HBM3" -> "h100-sxm", "NVIDIA A100-SXM4-40GB" -> "a100-40g"); "" when no preset matches
// (an H100 NVL, say), so callers ask for --gpu rather than guess. Pure.
std::string GpuPresetForDevice(const DeviceInfo& d);

// The version of the NCCL library linked at run time, "MAJOR.MINOR.PATCH" (ncclGetVersion; needs
// no GPU). Empty in a build without the CUDA backend, or if NCCL reports an error.
std::string NcclVersionString();

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_DEVICE_H_
