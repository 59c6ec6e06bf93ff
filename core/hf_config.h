// Import of a Hugging Face transformers `config.json` into a ModelSpec, so users can point at the
// file they already have. Families: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
// deepseek_v3, gpt2 (by `model_type`). Fields the file lacks take the family's documented
// default (transformers' configuration_<family>.py); an unknown model_type is an error naming it.
#ifndef MESHPLAN_CORE_HF_CONFIG_H_
#define MESHPLAN_CORE_HF_CONFIG_H_

#include <string>

#include "core/specs.h"
#include "core/status.h"

namespace meshplan::core {

// `name` becomes ModelSpec::name; `source` records where the file came from.
Result<ModelSpec> ModelFromHfConfig(const std::string& json_text, const std::string& name, const std::string& source);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_HF_CONFIG_H_
