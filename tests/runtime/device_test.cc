// runtime/device.h: CUDA device detection. Runs on every machine: without a GPU (or without the
// CUDA backend compiled in) the contract is Unavailable with a useful message, never a crash.
// On a GPU machine, set MESHPLAN_REQUIRE_GPU=1 to make "Unavailable" a failure there.
#include "runtime/device.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

namespace meshplan::runtime {
namespace {

#if !MESHPLAN_HAVE_CUDA

TEST(DeviceTest, ListCudaDevicesIsUnavailableWithoutCudaBackend) {
  const auto devices = ListCudaDevices();
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), core::Status::Code::kUnavailable);
  // The message tells the user how to get the backend, so it must name CUDA.
  EXPECT_NE(devices.status().message().find("CUDA"), std::string::npos) << devices.status().ToString();
}

TEST(DeviceTest, NcclVersionIsEmptyWithoutCudaBackend) { EXPECT_EQ(NcclVersionString(), ""); }

#else  // MESHPLAN_HAVE_CUDA

TEST(DeviceTest, ListCudaDevicesReturnsDevicesOrUnavailable) {
  const auto devices = ListCudaDevices();
  if (!devices.ok()) {
    // No GPU or no driver here: the "no GPU" path, reported with the CUDA error string.
    EXPECT_EQ(devices.status().code(), core::Status::Code::kUnavailable) << devices.status().ToString();
    EXPECT_FALSE(devices.status().message().empty());
    if (const char* require = std::getenv("MESHPLAN_REQUIRE_GPU"); require != nullptr && std::string(require) == "1") {
      ADD_FAILURE() << "MESHPLAN_REQUIRE_GPU=1 but " << devices.status().ToString();
    }
    return;
  }
  ASSERT_FALSE(devices->empty());  // ok() promises at least one device.
  for (const DeviceInfo& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.memory_bytes, 0) << d.name;
    // Every GPU this CUDA runtime supports is sm_50 or newer (CUDA 12 and 13 dropped older).
    EXPECT_GE(d.compute_capability_major, 5) << d.name;
    EXPECT_GE(d.compute_capability_minor, 0) << d.name;
    EXPECT_GT(d.sm_count, 0) << d.name;
  }
}

TEST(DeviceTest, ListCudaDevicesGivesTheSameAnswerTwice) {
  const auto first = ListCudaDevices();
  const auto second = ListCudaDevices();
  ASSERT_EQ(first.ok(), second.ok());
  if (first.ok()) {
    EXPECT_EQ(first->size(), second->size());
  } else {
    EXPECT_EQ(first.status().code(), second.status().code());
  }
}

TEST(DeviceTest, NcclVersionIsMajorMinorPatch) {
  // ncclGetVersion needs no GPU, so the linked library always answers, e.g. "2.28.9".
  const std::string version = NcclVersionString();
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)"))) << "'" << version << "'";
}

#endif  // MESHPLAN_HAVE_CUDA

// cudaDeviceProp names as the CUDA runtime prints them (nvidia-smi -L shows the same).
TEST(DeviceTest, GpuPresetForDeviceMapsKnownNames) {
  auto preset = [](const char* name, int64_t gib) { return GpuPresetForDevice({name, gib << 30, 9, 0, 132}); };
  EXPECT_EQ(preset("NVIDIA H100 80GB HBM3", 80), "h100-sxm");
  EXPECT_EQ(preset("NVIDIA H100 PCIe", 80), "h100-pcie");
  EXPECT_EQ(preset("NVIDIA H100 NVL", 94), "");  // no preset: the caller asks for --gpu
  EXPECT_EQ(preset("NVIDIA H200", 141), "h200");
  EXPECT_EQ(preset("NVIDIA H800", 80), "h800");
  EXPECT_EQ(preset("NVIDIA A100-SXM4-80GB", 80), "a100-80g");
  EXPECT_EQ(preset("NVIDIA A100-SXM4-40GB", 40), "a100-40g");
  EXPECT_EQ(preset("NVIDIA A800-SXM4-80GB", 80), "a800");
  EXPECT_EQ(preset("NVIDIA A800 80GB PCIe", 80), "");  // a PCIe card: no preset
  EXPECT_EQ(preset("NVIDIA B200", 180), "b200");
  EXPECT_EQ(preset("Tesla V100-SXM2-32GB", 32), "v100");
  EXPECT_EQ(preset("NVIDIA GeForce RTX 4090", 24), "");
}

}  // namespace
}  // namespace meshplan::runtime
