// libFuzzer harness: a validation dataset (`validate --dataset`, the format of
// shared/validation/published.json) through the whole judge: the converter of throughput records
// (LoadPublishedRuns), of memory records (LoadPublishedMemory) and of per-layer timings
// (LoadPublishedLayerTimings), then the prediction of every record that maps (ValidateRuns,
// ValidateMemory, ValidateLayerTimings) and what validate prints after the groups: the what-if
// pairs (CompareRuns, ComparePeaks) and the scenarios printed more than once (RepeatedRuns,
// RepeatedPeaks: each of at least two runs, the spread at least 0 and the floor not above it).
// Published runs kept aside are judged by this same path,
// so a record the converter has never seen must map, be skipped with a reason, or be refused with
// an error: never crash, hang or blow up memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"
#include "core/published.h"
#include "sim/comparison.h"
#include "sim/validation.h"

namespace mc = meshplan::core;
namespace ms = meshplan::sim;

namespace {
void CheckRepeats(const ms::RepeatSummary& r, size_t records) {
  size_t runs = 0;
  for (const ms::RepeatGroup& g : r.groups) {
    if (g.ids.size() < 2 || !(g.spread >= 0) || !(g.floor >= 0) || g.floor > g.spread) __builtin_trap();
    runs += g.ids.size();
  }
  if (runs != r.runs || runs > records || r.spread.n != r.groups.size()) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> skipped;
  auto runs = mc::LoadPublishedRuns(text, &skipped);
  if (!runs.ok() && runs.status().message().empty()) __builtin_trap();
  for (const std::string& why : skipped)
    if (why.empty()) __builtin_trap();  // every skipped record says why
  if (runs.ok() && !runs->empty()) {
    const ms::ValidationSummary v = ms::ValidateRuns(*runs, mc::Profile{});
    (void)ms::CompareRuns(*runs, v);
    CheckRepeats(ms::RepeatedRuns(*runs, v), v.records.size());
  }
  skipped.clear();
  auto memory = mc::LoadPublishedMemory(text, &skipped);
  if (!memory.ok() && memory.status().message().empty()) __builtin_trap();
  for (const std::string& why : skipped)
    if (why.empty()) __builtin_trap();
  if (memory.ok() && !memory->empty()) {
    const ms::ValidationSummary v = ms::ValidateMemory(*memory);
    (void)ms::ComparePeaks(*memory, v);
    CheckRepeats(ms::RepeatedPeaks(*memory, v), v.records.size());
  }
  auto timings = mc::LoadPublishedLayerTimings(text);
  if (!timings.ok() && timings.status().message().empty()) __builtin_trap();
  if (timings.ok() && !timings->empty()) (void)ms::ValidateLayerTimings(*timings, mc::Profile{});
  return 0;
}
