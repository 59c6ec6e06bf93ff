// The calibration Profile: the efficiencies that turn a roofline into a prediction. Defaults are
// public microbenchmark figures (cited per field in docs/compute.md); a measured profile
// (meshplan calibrate) replaces them. JSON, versioned.
// Thread-safety: a value type.
#ifndef MESHPLAN_CORE_PROFILE_H_
#define MESHPLAN_CORE_PROFILE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/memory.h"
#include "core/specs.h"
#include "core/status.h"

namespace meshplan::core {

// A collective measured on real hardware and fitted as t = alpha_s + beta_s_per_byte x bytes
// (nccl-tests' S, docs/collectives.md) from the raw times of a size sweep, not from busbw.
// Applies to (kind, tier, ranks) inside [min_bytes/4, 4 max_bytes] of the sizes it was fitted on;
// other groups and sizes use the analytic model with `comm` efficiencies.
struct CollectiveFit {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  bool scale_out = false;  // tier: false = inside one scale-up domain, true = across domains
  int64_t ranks = 2;
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  int64_t min_bytes = 0, max_bytes = 0;
  double r2 = 0;  // of the fit, on the sweep it came from
  friend bool operator==(const CollectiveFit&, const CollectiveFit&) = default;
};

struct Profile {
  static constexpr int kVersion = 2;  // 2: memory_op_efficiency, collectives, device
  std::string name = "default";
  std::string source = "built-in defaults (docs/compute.md)";
  // Achieved fraction of the dense tensor-core peak for a large GEMM, per dtype.
  std::map<Dtype, double> gemm_efficiency = {
      {Dtype::kBf16, 0.80}, {Dtype::kFp16, 0.80}, {Dtype::kFp8, 0.70}, {Dtype::kTf32, 0.70}, {Dtype::kFp32, 0.90}};
  // True when gemm_efficiency was measured or fitted for this profile (a profile file that lists
  // it, meshplan calibrate). Otherwise a GPU preset's own sustained figure (GpuSpec::
  // gemm_efficiency) is used where it has one, and the values above only for GPUs without.
  bool gemm_efficiency_measured = false;
  // The same for attention_fwd/bwd_efficiency below (a profile file that lists either, a fit):
  // otherwise a GPU preset's figure for the kernel (GpuSpec::attention_efficiency) is used.
  bool attention_efficiency_measured = false;
  // Small GEMMs do not fill the GPU: efficiency x F / (F + gemm_half_flops), F = 2mnk
  // (a saturating fit to cuBLAS shape sweeps; 1 GFLOP halves the efficiency).
  double gemm_half_flops = 1e9;
  // Fused attention kernels (FlashAttention): fraction of the dense peak, forward and backward.
  double attention_fwd_efficiency = 0.60;
  double attention_bwd_efficiency = 0.50;
  // Memory-bound kernels (norms, activations, softmax, optimizer): fraction of HBM bandwidth.
  double hbm_efficiency = 0.80;
  // Measured per-kernel HBM efficiency, keyed "name.pass" ("cross_entropy.forward") or "name"
  // ("optimizer_step"), StepGraph op names; the first key found wins, ops not listed use
  // hbm_efficiency. Filled by calibration; empty in the defaults.
  std::map<std::string, double> memory_op_efficiency;
  // Per-kernel launch and tail latency added to every compute op.
  double kernel_overhead_s = 4e-6;
  CommEfficiency comm;
  std::vector<CollectiveFit> collectives;  // fitted; empty in the defaults
  MemoryOverheads memory;
  // The device the profile was fitted on, when it is not a GPU preset (the cpu backend): its
  // peaks are what the efficiencies are fractions of. A profile with a device predicts for that
  // device whatever GPU the plan names (docs/calibration.md). tdp_w 0: power not measured.
  std::optional<GpuSpec> device;
};

// The fitted collective for (kind, tier, ranks) whose size range covers `bytes`, or nullptr.
const CollectiveFit* FindCollectiveFit(const Profile& p, CollectiveKind kind, bool scale_out, int64_t ranks,
                                       int64_t bytes);
// CollectiveTime with the profile: a fitted alpha-beta where one applies (algorithm "fitted"),
// else the analytic model with p.comm.
CollectiveCost ProfiledCollectiveTime(const Profile& p, CollectiveKind kind, int64_t bytes, const GroupSpan& span,
                                      const ClusterSpec& c);
// Its time_s alone (CollectiveSeconds under the same rule).
double ProfiledCollectiveSeconds(const Profile& p, CollectiveKind kind, int64_t bytes, const GroupSpan& span,
                                 const ClusterSpec& c);

// Reads versions 1 and 2 (version 1 has none of the fitted tables).
Result<Profile> ParseProfileJson(const std::string& text);
std::string ProfileToJson(const Profile& p);
// A profile name (presets/profiles/<name>.json, "default") or a path to a JSON file.
Result<Profile> LoadProfile(const std::string& name_or_path);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_PROFILE_H_
