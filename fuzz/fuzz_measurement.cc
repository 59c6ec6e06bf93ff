// libFuzzer harness: meshplan-run's measurement JSON as `report --compare` and `calibrate` read it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/measurement.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = meshplan::core::ParseMeasurementJson(text);
  if (r.ok()) (void)meshplan::core::MeasurementToJson(*r);  // what was read can be written back
  else if (r.status().message().empty()) __builtin_trap();
  return 0;
}
