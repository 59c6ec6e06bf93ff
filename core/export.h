// A plan as a framework's own configuration: Megatron-LM arguments, a torchtitan job config
// (TOML) and a DeepSpeed config JSON, for `meshplan export` (and the GUI). Pure functions of the
// scenario; what a framework sets in code or cannot express goes to `# note:` lines or `notes`.
// What each maps: docs/search.md ("export"). Thread-safe.
#ifndef MESHPLAN_CORE_EXPORT_H_
#define MESHPLAN_CORE_EXPORT_H_

#include <string>
#include <vector>

#include "core/presets.h"
#include "core/status.h"

namespace meshplan::core {

// REQUIRES (all three): ValidatePlan(s.plan, s.model, s.gpu, s.cluster) reported no errors.
// The Megatron-LM commit the arguments are written for and checked against (2026-08-22).
inline constexpr const char* kMegatronCommit = "d98e8a64";
// Megatron-LM (pretrain_gpt.py / Megatron-Core) arguments, one per line, after the environment it
// asserts and its torchrun line. InvalidArgument, naming Megatron's rule (file and line at
// kMegatronCommit) and the nearest plan it runs, for a plan it cannot express (8-bit Adam, NVMe
// or parameter offload, optimizer offload without the distributed optimizer, HSDP).
Result<std::string> ExportMegatron(const Scenario& s);
// The torchtitan commit the TOML is for: the last that reads TOML (2026-02-23); later commits
// (b5bcd76 and on) configure in Python.
inline constexpr const char* kTorchtitanCommit = "238fa99";
// torchtitan job config (TOML) for kTorchtitanCommit: [model] names the torchtitan model and flavor
// the preset is, the split is written module by module. InvalidArgument, naming torchtitan's rule
// and the nearest plan it runs, for a model it does not define, DDP beside other parallelism, or
// NVMe offload.
Result<std::string> ExportTorchtitan(const Scenario& s);
// The torchtitan commit the Python configuration is for (2026-08-21): torchtitan's configuration
// mechanism since it stopped reading TOML (torchtitan/config/README.md there).
inline constexpr const char* kTorchtitanPythonCommit = "b5bcd76c6";
// The function name the Python configuration defines (torchtitan's --config).
inline constexpr const char* kTorchtitanPythonFunction = "meshplan_plan";
// torchtitan configuration as a Python module for kTorchtitanPythonCommit: one function,
// kTorchtitanPythonFunction, that starts from torchtitan's own configuration of the model
// (config_registry) and sets the plan's degrees, split, schedule, tokens, recomputation,
// precision and compile; run with torchtitan's --module <the file's module name> --config
// meshplan_plan. InvalidArgument, naming torchtitan's rule and the nearest plan it runs, for what
// it cannot express.
Result<std::string> ExportTorchtitanPython(const Scenario& s);
// The DeepSpeed commit its rules were read at (2026-08-22).
inline constexpr const char* kDeepSpeedCommit = "edaa72212";
// Where the exporter's gradient-dtype rules were read (deepspeed/runtime/engine.py get_data_types
// and _do_optimizer_sanity_check, bf16_optimizer.py, zero/stage_1_and_2.py, zero/stage3.py).
inline constexpr const char* kDeepSpeedGradRulesCommit = "38327e07f";
// DeepSpeed config JSON (rules read at kDeepSpeedCommit); the commit and what DeepSpeed sets in
// code (pipeline stages, MoE layers) go to `notes`, the commit first. MoE models with an AutoEP
// preset (Mixtral, Qwen3-MoE, DeepSeek-V3) get its expert_parallel section. InvalidArgument,
// naming DeepSpeed's rule and the nearest plan it runs, for ZeRO-2/3 with a pipeline, ZeRO-3 with
// native MoE or with AutoEP beside TP, CP, MiCS or expert TP, ring CP, and other pipeline
// schedules.
Result<std::string> ExportDeepSpeed(const Scenario& s, std::vector<std::string>* notes);

// The CUDA compute capability's major version of an NVIDIA GPU preset, by its name (V100 7, A100 8,
// H100/H200/H800 9, B200/B300/GB200/GB300 10); 0 for a GPU that is not one of them (MI300X, a
// custom file). What Megatron-LM's get_device_arch_version returns on that GPU.
int ComputeCapabilityMajor(const GpuSpec& g);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_EXPORT_H_
