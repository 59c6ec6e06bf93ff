#include "runtime/backend.h"

#include <chrono>
#include <cmath>

#include "runtime/cpu/cpu_backend.h"

#ifndef MESHPLAN_HAVE_CUDA
#define MESHPLAN_HAVE_CUDA 0
#endif
#if MESHPLAN_HAVE_CUDA
#include "runtime/cuda/cuda_backend.h"  // no CUDA header: the factory only
#endif

namespace meshplan::runtime {

const char* Name(BackendKind k) {
  switch (k) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "?";
}

bool FromName(const std::string& text, BackendKind* out) {
  for (BackendKind k : {BackendKind::kCpu, BackendKind::kCuda}) {
    if (text == Name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

std::string Tensor::ShapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape_[i]);
  }
  return s + "] " + core::Name(dtype_);
}

namespace {
class SteadyClockImpl final : public Clock {
 public:
  double NowSeconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};
}  // namespace

std::shared_ptr<Clock> SteadyClock() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SteadyClockImpl>();
  return clock;
}

core::Result<std::unique_ptr<Backend>> MakeBackend(BackendKind kind) {
  if (kind == BackendKind::kCpu) return MakeCpuBackend();
#if MESHPLAN_HAVE_CUDA
  // Unavailable in one line ("cuda backend: <the CUDA error from device detection>") when no GPU
  // can be used here.
  return cuda::MakeCudaBackend();
#else
  return core::Status::Unavailable(
      "cuda backend: this build has no CUDA backend (configure with the CUDA toolkit and NCCL present; "
      "MESHPLAN_CUDA=AUTO|ON)");
#endif
}

double RelativeTolerance(core::Dtype dtype, int64_t k) {
  const double accumulate = 2e-6 * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))) + 1e-6;
  switch (dtype) {
    case core::Dtype::kBf16: return std::ldexp(1.0, -8) + accumulate;   // 8 significand bits
    case core::Dtype::kFp16: return std::ldexp(1.0, -11) + accumulate;  // 11 significand bits
    case core::Dtype::kFp8: return std::ldexp(1.0, -4) + accumulate;    // e4m3: 4 significand bits (cuda only)
    default: return accumulate;
  }
}

}  // namespace meshplan::runtime
