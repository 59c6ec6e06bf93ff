// libFuzzer harness: a validation dataset (`validate --dataset`, the format of
// shared/validation/published.json) through the whole judge: the converter of throughput records
// (LoadPublishedRuns), of memory records (LoadPublishedMemory) and of per-layer timings
// (LoadPublishedLayerTimings), then the prediction of every record that maps (ValidateRuns,
// ValidateMemory, ValidateLayerTimings). Published runs kept aside are judged by this same path,
// so a record the converter has never seen must map, be skipped with a reason, or be refused with
// an error: never crash, hang or blow up memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"
#include "core/published.h"
#include "sim/validation.h"

namespace mc = meshplan::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> skipped;
  auto runs = mc::LoadPublishedRuns(text, &skipped);
  if (!runs.ok() && runs.status().message().empty()) __builtin_trap();
  for (const std::string& why : skipped)
    if (why.empty()) __builtin_trap();  // every skipped record says why
  if (runs.ok() && !runs->empty()) (void)meshplan::sim::ValidateRuns(*runs, mc::Profile{});
  skipped.clear();
  auto memory = mc::LoadPublishedMemory(text, &skipped);
  if (!memory.ok() && memory.status().message().empty()) __builtin_trap();
  for (const std::string& why : skipped)
    if (why.empty()) __builtin_trap();
  if (memory.ok() && !memory->empty()) (void)meshplan::sim::ValidateMemory(*memory);
  auto timings = mc::LoadPublishedLayerTimings(text);
  if (!timings.ok() && timings.status().message().empty()) __builtin_trap();
  if (timings.ok() && !timings->empty()) (void)meshplan::sim::ValidateLayerTimings(*timings, mc::Profile{});
  return 0;
}
