// meshplan export --check: runs a framework's own validation of an export in the user's Python
// (Megatron-LM's parse_args and validate_args, DeepSpeed's DeepSpeedConfig, torchtitan's
// ConfigManager and ParallelDims): no GPU, no training, no process group beyond one local rank.
#ifndef MESHPLAN_CLI_EXPORT_CHECK_H_
#define MESHPLAN_CLI_EXPORT_CHECK_H_

#include <cstdint>
#include <string>

namespace meshplan::cli {

enum class CheckVerdict {
  kAccepted,  // the framework's validation ran and raised nothing
  kRejected,  // it raised: an assertion, an argument error, a value error
  kNotRun,    // no verdict: Python or the framework could not be run or imported, or it failed
              // for a reason that is not a verdict on the export (e.g. an unexpected exception)
};

struct CheckResult {
  CheckVerdict verdict = CheckVerdict::kNotRun;
  std::string message;  // the framework's words (its exception), or why it could not run
};

// Writes `text` (the export for `framework`: megatron, torchtitan or deepspeed) and the checker
// for it to a temporary directory and runs `python checker export world_size dp arch`; the
// checker imports the framework from that interpreter's path (PYTHONPATH included). `arch`: the
// plan's GPU's compute capability major (core::ComputeCapabilityMajor), which answers Megatron's
// questions to the GPU; 0 lets them reach the real one.
CheckResult CheckExport(const std::string& framework, const std::string& text, int64_t world_size, int64_t dp, int arch,
                        const std::string& python);

}  // namespace meshplan::cli

#endif  // MESHPLAN_CLI_EXPORT_CHECK_H_
