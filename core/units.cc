#include "core/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace meshplan::core {
namespace {

// Splits "80 GiB" into 80 and "GiB". False if there is no number.
bool SplitNumber(const std::string& text, double* number, std::string* unit) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return false;
  std::string rest(end);
  size_t i = 0;
  while (i < rest.size() && rest[i] == ' ') ++i;
  *number = v;
  *unit = rest.substr(i);
  return true;
}

}  // namespace

bool ParseByteSize(const std::string& text, int64_t* out) {
  double v = 0;
  std::string unit;
  if (!SplitNumber(text, &v, &unit) || v < 0) return false;
  double scale = 0;
  if (unit == "B") scale = 1;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  else if (unit == "TB") scale = 1e12;
  else if (unit == "KiB") scale = static_cast<double>(kKiB);
  else if (unit == "MiB") scale = static_cast<double>(kMiB);
  else if (unit == "GiB") scale = static_cast<double>(kGiB);
  else if (unit == "TiB") scale = static_cast<double>(kGiB) * 1024;
  else return false;
  double bytes = v * scale;
  if (bytes > 9.0e18) return false;
  *out = static_cast<int64_t>(std::llround(bytes));
  return true;
}

bool ParseBandwidth(const std::string& text, double* bytes_per_s) {
  double v = 0;
  std::string unit;
  if (!SplitNumber(text, &v, &unit) || v < 0) return false;
  static const struct {
    const char* unit;
    double scale;
  } kUnits[] = {{"B/s", 1},         {"KB/s", 1e3},           {"MB/s", 1e6},        {"GB/s", 1e9},
                {"TB/s", 1e12},     {"GiB/s", 1073741824.0}, {"MiB/s", 1048576.0}, {"Gb/s", 1e9 / 8},
                {"Tb/s", 1e12 / 8}, {"Mb/s", 1e6 / 8},       {"Gbps", 1e9 / 8}};
  for (const auto& u : kUnits) {
    if (unit == u.unit) {
      *bytes_per_s = v * u.scale;
      return true;
    }
  }
  return false;
}

std::string FormatBytes(int64_t bytes) {
  double b = static_cast<double>(bytes);
  double a = std::fabs(b);
  char buf[64];
  if (a >= 1e12) std::snprintf(buf, sizeof buf, "%.3f TB", b / 1e12);
  else if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

}  // namespace meshplan::core
