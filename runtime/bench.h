// Microbenchmarks on a Backend: a GEMM sweep (TFLOP/s per shape and dtype) and collectives timed
// the way nccl-tests times them (warm-up, barrier, N back-to-back launches between two events,
// one synchronisation, divide by N; algbw = S/t, busbw = algbw x the nccl-tests factor of
// core::BusBandwidthFactor). Both check their results, so a fast wrong kernel cannot pass:
// the GEMM against a double-precision reference on a sample of entries, the collectives with
// nccl-tests' "#wrong" count over exactly-representable rank-dependent data.
// Not thread-safe (the Backend is not).
#ifndef MESHPLAN_RUNTIME_BENCH_H_
#define MESHPLAN_RUNTIME_BENCH_H_

#include <cstdint>
#include <vector>

#include "core/collectives.h"
#include "core/measurement.h"
#include "core/specs.h"
#include "core/status.h"
#include "runtime/backend.h"
#include "runtime/host_comm.h"

namespace meshplan::runtime {

struct TimingOptions {
  int warmup = 2;      // untimed launches first
  int iterations = 5;  // timed launches, back to back; the time is their mean
};

using core::GemmBenchResult;  // the measurement record's rows (core/measurement.h)
using core::GemmShape;

// The default sweep: square GEMMs and transformer-shaped ones (tokens x 3h x h, tokens x 4h x h,
// tokens x h x 4h) in the dtypes the backend runs. The cpu sweep is small (seconds on 2 cores);
// the cuda sweep goes to 16384 and adds fp8.
std::vector<GemmShape> DefaultGemmSweep(BackendKind kind);

// C = A B with A [m x k], B [k x n] of random data. InvalidArgument for a non-positive extent;
// the backend's own Status for an unsupported dtype.
core::Result<GemmBenchResult> BenchGemm(Backend& backend, const GemmShape& shape, const TimingOptions& opts);

using core::CollectiveBenchResult;

// Sizes in bytes from `min_bytes` to `max_bytes`, doubling (nccl-tests -b/-e/-f 2).
std::vector<int64_t> SizeSweep(int64_t min_bytes, int64_t max_bytes);

// Runs every kind at every size on `world` (all ranks call it together, with the same
// arguments). Send/recv runs as a ring: rank r sends to r+1 and receives from r-1 (needs >= 2
// ranks; skipped on one). Sizes are rounded down to a whole number of fp32 elements per rank.
core::Result<std::vector<CollectiveBenchResult>> BenchCollectives(Backend& backend, HostComm& world,
                                                                  const std::vector<core::CollectiveKind>& kinds,
                                                                  const std::vector<int64_t>& sizes_bytes,
                                                                  const TimingOptions& opts);

}  // namespace meshplan::runtime

#endif  // MESHPLAN_RUNTIME_BENCH_H_
