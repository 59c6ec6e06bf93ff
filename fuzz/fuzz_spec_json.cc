// libFuzzer harness: the model, GPU and cluster JSON parsers with their validation (what
// `--model file.json`, `--gpu`, `--cluster` read). Built once per spec kind (MESHPLAN_FUZZ_KIND:
// 0 model, 1 GPU, 2 cluster, 3 Hugging Face config.json) by fuzz/CMakeLists.txt. A parse either
// succeeds or returns a status naming a field; anything else (a crash, a sanitizer report, more
// than a second) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/hf_config.h"
#include "core/spec_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
#if MESHPLAN_FUZZ_KIND == 0
  auto r = meshplan::core::ParseModelJson(text);
#elif MESHPLAN_FUZZ_KIND == 1
  auto r = meshplan::core::ParseGpuJson(text);
#elif MESHPLAN_FUZZ_KIND == 2
  auto r = meshplan::core::ParseClusterJson(text);
#else
  auto r = meshplan::core::ModelFromHfConfig(text, "fuzz", "fuzz input");
#endif
  if (!r.ok() && r.status().message().empty()) __builtin_trap();  // an error must say what is wrong
  return 0;
}
