// What meshplan-run measured, and its JSON (schema "meshplan.measurement/1", docs/runtime.md):
// the plan, the hardware it ran on, one entry per StepGraph op the rank executed (or modeled),
// the step (time, TFLOP/s per GPU, MFU, peak memory) and microbenchmark rows. The runtime writes
// it; `meshplan report --compare` and `meshplan calibrate` read it back with ParseMeasurementJson
// (in core, so that the meshplan command needs no runtime). nlohmann/json stays inside
// measurement.cc. Value types; thread-safe to copy.
#ifndef MESHPLAN_CORE_MEASUREMENT_H_
#define MESHPLAN_CORE_MEASUREMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/collectives.h"
#include "core/spec_json.h"
#include "core/specs.h"
#include "core/status.h"
#include "core/step_graph.h"

namespace meshplan::core {

inline constexpr const char* kMeasurementSchema = "meshplan.measurement/1";

// A CUDA device as the runtime detects it (runtime::ListCudaDevices).
struct DeviceInfo {
  std::string name;                  // e.g. "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;          // total device (HBM) memory, bytes; cudaDeviceProp::totalGlobalMem
  int compute_capability_major = 0;  // e.g. 9 for Hopper (sm_90)
  int compute_capability_minor = 0;  // e.g. 0 for Hopper (sm_90)
  int sm_count = 0;                  // streaming multiprocessors; cudaDeviceProp::multiProcessorCount
};

// The GPU preset (presets/gpus/) a detected device is, from its name and memory ("NVIDIA H100
// 80GB HBM3" -> "h100-sxm", "NVIDIA A100-SXM4-40GB" -> "a100-40g"); "" when no preset matches
// (an H100 NVL, say), so callers ask for --gpu rather than guess. Pure.
std::string GpuPresetForDevice(const DeviceInfo& d);

// What a measured device's memory (DeviceInfo::memory_bytes, cudaGetDeviceProperties'
// totalGlobalMem) says of a GPU spec's capacity (GpuSpec::CapacityBytes, docs/memory.md §4): "" when
// the device reports none; otherwise one line, saying whether the spec's capacity is that figure
// and, where it is not, the cuda_total_bytes to set. Pure.
std::string DeviceCapacityNote(const GpuSpec& g, const DeviceInfo& d);

// One row of the GEMM microbenchmark (runtime/bench.h).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  Dtype dtype = Dtype::kBf16;
};
struct GemmBenchResult {
  GemmShape shape;
  double time_s = 0;         // one GEMM
  double flops = 0;          // 2mnk
  double flops_per_s = 0;    // flops / time_s
  double max_rel_error = 0;  // on the sampled entries, normwise, vs a double reference
  int iterations = 0;
};

// One row of the collective microbenchmark, as nccl-tests prints it (runtime/bench.h).
struct CollectiveBenchResult {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int64_t size_bytes = 0;  // nccl-tests' S: the whole buffer (all-reduce, broadcast), the gathered or
                           // scattered total (all-gather, reduce-scatter), one rank's buffer
                           // (all-to-all), the message (send/recv)
  int64_t count = 0;       // elements, as nccl-tests prints it
  Dtype dtype = Dtype::kFp32;
  int root = -1;  // broadcast: 0; others -1
  int ranks = 1;
  double time_s = 0;  // mean over ranks of each rank's mean launch time (nccl-tests' default -a 1)
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
  int64_t wrong = 0;  // elements that differ from the expected result (summed over ranks)
};

struct Hardware {
  std::string backend;      // "cpu", "cuda"
  std::string description;  // Backend::Description()
  std::string hostname;
  int world_size = 1;            // processes in the run
  std::vector<DeviceInfo> gpus;  // visible CUDA devices (empty on cpu)
};

// The FLOP/s that MFU divides by. On cuda: the GPU preset's dense peak for the plan's precision.
// The cpu has no published tensor peak: the executor measures a large GEMM in the plan's dtype on
// this backend and uses that ceiling, so cpu MFU reads "fraction of this machine's GEMM ceiling".
struct DevicePeak {
  double flops_per_s = 0;
  core::Dtype dtype = core::Dtype::kBf16;
  std::string source;  // e.g. "measured: bf16 GEMM 1024x1024x1024 on this backend"
};

// One StepGraph op as this rank ran it in one step (means over the timed steps).
struct OpMeasurement {
  std::string section;  // "embedding", "dense_layer", "moe_layer", "head", "pipeline"
  int64_t index = 0;    // position in the section's op list (core::StepGraph)
  std::string name;     // the op's name ("qkv_proj")
  core::OpKind kind = core::OpKind::kGemm;
  core::Pass pass = core::Pass::kForward;
  core::Dtype dtype = core::Dtype::kBf16;
  int64_t m = 0, n = 0, k = 0, batch = 1;                    // gemm
  int64_t attn_batch = 0, heads = 0, seq_q = 0, seq_kv = 0;  // attention
  int64_t head_dim_qk = 0, head_dim_v = 0;
  int64_t bytes = 0;  // memory, optimizer, collective, p2p
  core::CollectiveKind collective = core::CollectiveKind::kAllReduce;
  core::CommGroup group = core::CommGroup::kNone;
  int64_t group_size = 1;  // ranks in the plan's group (collective, p2p)
  bool overlappable = false;
  int64_t calls_per_step = 0;  // layers x microbatches (or 1 for once-per-step ops)
  double time_s = 0;           // per step, all calls (measured, or the prediction if modeled)
  double flops = 0;            // per step, all calls (op.Flops() x calls)
  bool modeled = false;        // not executed here (no real group): time_s is predicted
};

// One rank's training memory by kind, in logical bytes (numel x core::DtypeBytes: what a GPU
// holds; the cpu backend stores 4 bytes per element whatever the dtype).
struct MemoryBreakdown {
  int64_t weights_bytes = 0;
  int64_t grads_bytes = 0;
  int64_t master_weights_bytes = 0;
  int64_t optimizer_moments_bytes = 0;
  int64_t activations_bytes = 0;     // saved activations of the in-flight microbatches
  double inflight_microbatches = 0;  // in units of the rank's whole set of layers
  int64_t working_set_bytes = 0;     // held: the op kernels' per-shape tensors (no predicted twin)
  // DeepSpeed's BF16_Optimizer (plan.keep_lp_grads): the weights-dtype copy of the fp32 gradients
  // its step all-reduces (core::StageMemory::step_copy_bytes); predicted: counted in other_bytes
  // where it comes on top of the stage's peak.
  int64_t step_copy_bytes = 0;
  // The frameworks' other allocations (core::FrameworkBufferBytes: gathered ZeRO-3/FSDP layers,
  // Transformer Engine's workspaces, FSDP2's pools); predicted: counted in other_bytes.
  int64_t buffers_bytes = 0;
  int64_t other_bytes = 0;  // predicted: CUDA context, cuBLAS, NCCL, ZeRO-3 prefetch, fragmentation
  int64_t total_bytes = 0;  // the sum of the above (held; predicted: as core::StageMemory)
};

// What the executor held against what the memory model (core::EstimateMemory) predicts for the
// rank's pipeline stage. Compare logical_peak_bytes with predicted.total_bytes -
// predicted.other_bytes + predicted.buffers_bytes (the backend holds no CUDA context, cuBLAS
// workspace or NCCL buffers as tensors, nor the fragmentation term), plus the step copy where the
// model keeps it on top of the cached activations.
struct StepMemory {
  std::string storage;             // "fp32" (cpu: 4 bytes per element) or "dtype" (cuda)
  int64_t logical_peak_bytes = 0;  // the executor's tensors at their dtype's size, at the peak
  std::vector<std::pair<std::string, int64_t>> logical_bytes_by_dtype;  // ("bf16", bytes), ...
  MemoryBreakdown held;                                                 // logical; total_bytes == logical_peak_bytes
  int64_t predicted_stage = 0;
  MemoryBreakdown predicted;  // the memory model for this rank's stage
};

struct StepMeasurement {
  int warmup_steps = 0;
  int steps = 0;                     // timed steps
  std::vector<double> step_times_s;  // wall time of each timed step (executed ops only)
  double measured_s = 0;             // mean of step_times_s
  double modeled_comm_s = 0;         // predicted time of modeled collectives that would be exposed
  double time_s = 0;                 // measured_s + modeled_comm_s (for MPI runs: the slowest rank's)
  double flops = 0;                  // model FLOPs of this rank per step (GEMM + attention, no recompute)
  double hardware_flops = 0;         // with recompute
  double tflops_per_gpu = 0;         // flops / time_s / 1e12
  double mfu = 0;                    // flops / (time_s x peak)
  double hfu = 0;
  int64_t peak_memory_bytes = 0;     // the backend's peak: storage actually allocated (docs/runtime.md)
  std::optional<StepMemory> memory;  // executor runs: the breakdown and the memory model's prediction
};

// One rank's summary in an MPI run.
struct RankSummary {
  int rank = 0;
  int64_t stage = 0;
  double time_s = 0;
  int64_t peak_memory_bytes = 0;          // the backend's peak (storage)
  int64_t logical_peak_memory_bytes = 0;  // the same tensors at their dtype's size
  int64_t predicted_memory_bytes = 0;     // the memory model's total for the rank's stage
};

struct Measurement {
  std::string schema = kMeasurementSchema;
  std::string tool;  // "meshplan-run 0.1.0"
  std::string mode;  // "single_process", "rank_slice", "mpi", "bench_gemm", "bench_collectives"
  Hardware hardware;
  std::optional<DevicePeak> peak;
  std::optional<core::PlanFile> plan;  // with the model, GPU and cluster embedded
  int64_t rank = 0;                    // global rank (placement order) whose ops are listed
  int64_t stage = 0;                   // its pipeline stage
  std::vector<OpMeasurement> ops;
  std::optional<StepMeasurement> step;
  std::vector<RankSummary> ranks;
  std::vector<GemmBenchResult> gemm;
  std::vector<CollectiveBenchResult> collectives;
  std::vector<std::string> notes;  // what was modeled, approximated or left out
};

// Pretty JSON ending in a newline. Keys carry their units.
std::string MeasurementToJson(const Measurement& m);
// Reads what MeasurementToJson writes. InvalidArgument names the field; a schema other than
// meshplan.measurement/1 is rejected.
Result<Measurement> ParseMeasurementJson(const std::string& text);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_MEASUREMENT_H_
