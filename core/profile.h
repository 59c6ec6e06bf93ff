// The calibration Profile: the efficiencies that turn a roofline into a prediction. Defaults are
// public microbenchmark figures (cited per field in docs/compute.md); a measured profile
// (meshplan calibrate, issue 7) replaces them. JSON, versioned.
// Thread-safety: a value type.
#ifndef MESHPLAN_CORE_PROFILE_H_
#define MESHPLAN_CORE_PROFILE_H_

#include <map>
#include <string>

#include "core/collectives.h"
#include "core/memory.h"
#include "core/specs.h"
#include "core/status.h"

namespace meshplan::core {

struct Profile {
  static constexpr int kVersion = 1;
  std::string name = "default";
  std::string source = "built-in defaults (docs/compute.md)";
  // Achieved fraction of the dense tensor-core peak for a large GEMM, per dtype.
  std::map<Dtype, double> gemm_efficiency = {{Dtype::kBf16, 0.80}, {Dtype::kFp16, 0.80},
                                             {Dtype::kFp8, 0.70},  {Dtype::kTf32, 0.70},
                                             {Dtype::kFp32, 0.90}};
  // Small GEMMs do not fill the GPU: efficiency x F / (F + gemm_half_flops), F = 2mnk
  // (a saturating fit to cuBLAS shape sweeps; 1 GFLOP halves the efficiency).
  double gemm_half_flops = 1e9;
  // Fused attention kernels (FlashAttention): fraction of the dense peak, forward and backward.
  double attention_fwd_efficiency = 0.60;
  double attention_bwd_efficiency = 0.50;
  // Memory-bound kernels (norms, activations, softmax, optimizer): fraction of HBM bandwidth.
  double hbm_efficiency = 0.80;
  // Per-kernel launch and tail latency added to every compute op.
  double kernel_overhead_s = 4e-6;
  CommEfficiency comm;
  MemoryOverheads memory;
};

Result<Profile> ParseProfileJson(const std::string& text);
std::string ProfileToJson(const Profile& p);
// A profile name (presets/profiles/<name>.json, "default") or a path to a JSON file.
Result<Profile> LoadProfile(const std::string& name_or_path);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_PROFILE_H_
