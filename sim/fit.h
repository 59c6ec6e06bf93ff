// Calibration: fit a Profile to measured times (docs/calibration.md).
//
// Compute ops (GEMM, attention, memory-bound, optimizer) are fitted through the simulator's own
// op-time function, ComputeOpTime, so a fitted profile predicts exactly what it was fitted to:
// minimise sum_i ((predicted_i(theta) - measured_i) / measured_i)^2 over theta = the logs of
//   gemm_efficiency[dtype] (each dtype with GEMM samples), gemm_half_flops, kernel_overhead_s,
//   attention_fwd_efficiency / attention_bwd_efficiency (with attention samples of that pass),
//   memory_op_efficiency[name] (each memory-bound or optimizer op name with samples),
// by Levenberg-Marquardt (Eigen, finite-difference Jacobian in log space, so every parameter stays
// positive). Relative residuals weigh a 50 us kernel like a 50 ms one. Parameters without samples
// are not fitted and keep the starting profile's value (the report says which). A weak prior
// (1e-4 x the log distance from the start) keeps parameters that the samples cannot tell apart
// from wandering, and changes identified ones by far less than the measurement noise.
//
// Collectives are fitted per (kind, tier, ranks) by weighted linear least squares,
// t = alpha + beta x bytes, on the raw times of a size sweep (relative weights), with R².
//
// Thread-safety: pure functions of their arguments.
#ifndef MESHPLAN_SIM_FIT_H_
#define MESHPLAN_SIM_FIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/presets.h"
#include "core/profile.h"
#include "core/specs.h"
#include "core/status.h"
#include "core/step_graph.h"

namespace meshplan::sim {

// One measured compute op: `calls` executions took `time_s` in all. `name` is the op's name
// (op.name is ignored: predictions point it at `name`, so samples copy safely).
struct ComputeSample {
  core::Op op;
  std::string name;
  double calls = 1;
  double time_s = 0;
  std::string source;  // where it came from ("bench_gemm", "tiny-a.json"), for the report
};

// One measured collective launch (mean time of one call).
struct CollectiveSample {
  core::CollectiveKind kind = core::CollectiveKind::kAllReduce;
  bool scale_out = false;
  int64_t ranks = 2;
  int64_t bytes = 0;  // nccl-tests' S
  double time_s = 0;
};

// A per-layer timing: one dense layer's forward and backward (one microbatch, one rank) on a
// scenario, predicted with DenseLayerTimes (sim/step_model.h) on the scenario's own GPU and
// cluster. Such samples fit, besides the compute parameters, hbm_efficiency (the layer's
// memory-bound kernels) and comm.scale_up (its tensor-parallel collectives). Korthikanti 2022
// Table 4 is one source (core::LoadPublishedLayerTimings).
struct LayerSample {
  std::string id;
  core::Scenario scenario;
  double forward_s = 0, backward_s = 0;
};

// A fitted parameter as the report prints it.
struct FittedParameter {
  std::string name;  // "gemm_efficiency.bf16", "memory_op_efficiency.mlp_activation"
  double start = 0;
  double value = 0;
  int samples = 0;  // samples whose prediction depends on it
};

// Prediction error of one op name (all samples with that name), before and after the fit.
struct OpError {
  std::string name;
  std::string kind;
  int samples = 0;
  double median_abs_rel_error_before = 0;
  double median_abs_rel_error_after = 0;
  double max_abs_rel_error_after = 0;
};

struct CollectiveFitReport {
  core::CollectiveFit fit;
  int samples = 0;
  double max_abs_rel_error = 0;
};

struct LayerFitReport {
  std::string id;
  double forward_s = 0, backward_s = 0;                // measured
  double forward_before_s = 0, backward_before_s = 0;  // the starting profile
  double forward_after_s = 0, backward_after_s = 0;    // the fitted one
};

struct FitReport {
  int compute_samples = 0;
  std::vector<LayerFitReport> layers;
  int iterations = 0;
  bool converged = false;
  // Over all compute samples, on log times: R² = 1 - SS_res / SS_tot (the times span decades, so
  // the log scale is where a fit can be judged).
  double r2_log = 0;
  double median_abs_rel_error_before = 0, median_abs_rel_error_after = 0;
  double max_abs_rel_error_after = 0;
  std::vector<FittedParameter> parameters;
  std::vector<std::string> kept;  // parameters with no samples, left at the starting value
  std::vector<OpError> ops;
  std::vector<CollectiveFitReport> collectives;
};

struct FitResult {
  core::Profile profile;
  FitReport report;
};

struct FitOptions {
  // The device's peaks are not published (the cpu backend): after the fit, raise its compute peak
  // (one for every dtype) and its memory bandwidth to the highest efficiency found, so every
  // efficiency is <= 1 and every prediction is unchanged; the profile carries the device. Without
  // it, an efficiency above 1 is an error (the device spec understates the hardware).
  bool rescale_device = false;
  int max_iterations = 200;
};

// Fits `start` to the samples on `device` (the peaks the efficiencies are fractions of). The
// result keeps everything of `start` that was not fitted. InvalidArgument for no samples, a
// non-positive time or count, a device without a peak for a sampled dtype, or (without
// rescale_device) an efficiency fitted above 1.
core::Result<FitResult> FitProfile(const std::vector<ComputeSample>& compute,
                                   const std::vector<CollectiveSample>& collectives, const core::GpuSpec& device,
                                   const core::Profile& start, const FitOptions& options = {},
                                   const std::vector<LayerSample>& layers = {});

// Predicted time of a sample (all its calls) with `profile` on `device`.
double PredictSample(const ComputeSample& s, const core::GpuSpec& device, const core::Profile& profile);

// JSON of the report (stored beside the profile; `calibrate fit --format json`).
std::string FitReportToJson(const FitReport& r);
// The human report: parameters, fit quality, per-op error before and after, collectives.
std::string FitReportTable(const FitReport& r);

}  // namespace meshplan::sim

#endif  // MESHPLAN_SIM_FIT_H_
