// Strong unit types for public APIs. Decimal prefixes (1 GB = 1e9 B) unless a name says GiB.
#ifndef MESHPLAN_CORE_UNITS_H_
#define MESHPLAN_CORE_UNITS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace meshplan::core {

struct Bytes {  // exact; tensors exceed 4 GiB
  int64_t value = 0;
  constexpr Bytes& operator+=(Bytes o) {
    value += o.value;
    return *this;
  }
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes{a.value + b.value}; }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes{a.value - b.value}; }
  friend constexpr bool operator==(Bytes a, Bytes b) = default;
  friend constexpr auto operator<=>(Bytes a, Bytes b) = default;
};
struct Flops {
  double value = 0;
};  // a count: 6*N*D (~6e24) overflows int64
using Seconds = std::chrono::duration<double>;
struct BytesPerSecond {
  double value = 0;
};
struct FlopsPerSecond {
  double value = 0;
};

constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds{static_cast<double>(b.value) / r.value}; }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds{f.value / r.value}; }

constexpr int64_t kKiB = int64_t{1} << 10;
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr double kGB = 1e9;

// Parses "80GiB", "80GB", "512MiB", "1.5TB", "4096B" (also "80 GiB"). A bare "80G" or a number
// without a unit is rejected: binary and decimal prefixes differ by 7% at this size.
// Returns false and leaves *out untouched on error.
bool ParseByteSize(const std::string& text, int64_t* out);
// Parses "400Gb/s" (bits), "50GB/s" (bytes), "900 GB/s", "25GiB/s" into bytes per second.
bool ParseBandwidth(const std::string& text, double* bytes_per_s);
// Formats bytes with a decimal unit: "141.1 GB", "1.129 TB", "512.0 MB".
std::string FormatBytes(int64_t bytes);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_UNITS_H_
