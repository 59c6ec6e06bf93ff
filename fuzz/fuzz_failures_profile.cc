// libFuzzer harness: the failure-rate file (`--failures`) and the calibration profile
// (`--profile`) parsers, one per build (MESHPLAN_FUZZ_KIND 0: failures, 1: profile).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/failures.h"
#include "core/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
#if MESHPLAN_FUZZ_KIND == 0
  auto r = meshplan::core::ParseFailureModelJson(text);
#else
  auto r = meshplan::core::ParseProfileJson(text);
#endif
  if (!r.ok() && r.status().message().empty()) __builtin_trap();
  return 0;
}
