#include "runtime/device.h"

#ifndef MESHPLAN_HAVE_CUDA  // Set PUBLIC on meshplan_runtime by CMakeLists.txt; absent means no.
#define MESHPLAN_HAVE_CUDA 0
#endif

#include <algorithm>
#include <cctype>

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

std::string GpuPresetForDevice(const DeviceInfo& d) {
  std::string n = d.name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("GB200")) return "gb200";
  if (has("B200")) return "b200";
  if (has("H200")) return "h200";
  if (has("H800")) return "h800";
  if (has("H100")) {
    if (has("NVL")) return "";  // 94 GB, its own clocks: no preset
    return has("PCIE") ? "h100-pcie" : "h100-sxm";
  }
  if (has("A100")) return d.memory_bytes > (int64_t{60} << 30) ? "a100-80g" : "a100-40g";
  if (has("V100")) return "v100";
  return "";
}

std::string NcclVersionString() {
#if MESHPLAN_HAVE_CUDA
  return cuda::NcclVersion();
#else
  return "";
#endif
}

}  // namespace meshplan::runtime
