#include "runtime/bench.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "runtime/status_macros.h"

namespace meshplan::runtime {

using core::CollectiveKind;
using core::Dtype;
using core::Result;
using core::Status;

std::vector<GemmShape> DefaultGemmSweep(BackendKind kind) {
  std::vector<GemmShape> out;
  if (kind == BackendKind::kCpu) {
    // Seconds in total on two cores: squares to 1024, and the GEMMs of a 512-wide layer over 512
    // tokens (qkv, MLP up, MLP down), in fp32 and emulated bf16.
    for (Dtype d : {Dtype::kFp32, Dtype::kBf16}) {
      for (int64_t s : {128, 256, 512, 1024}) out.push_back({s, s, s, d});
      out.push_back({512, 3 * 512, 512, d});
      out.push_back({512, 4 * 512, 512, d});
      out.push_back({512, 512, 4 * 512, d});
    }
    return out;
  }
  for (Dtype d : {Dtype::kFp32, Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
    for (int64_t s : {1024, 2048, 4096, 8192, 16384}) out.push_back({s, s, s, d});
    // Llama-3-8B-like layer over 8192 tokens (h = 4096): qkv (GQA 6144), MLP up (2 x 14336), down.
    out.push_back({8192, 6144, 4096, d});
    out.push_back({8192, 28672, 4096, d});
    out.push_back({8192, 4096, 14336, d});
  }
  return out;
}

namespace {

// Times `launch` as nccl-tests does: warm-up, then N launches between two events, one sync.
Result<double> TimeLaunches(Backend& backend, const TimingOptions& opts, HostComm* barrier,
                            const std::function<Status()>& launch) {
  if (opts.iterations < 1) return Status::InvalidArgument("timing: iterations must be >= 1");
  for (int i = 0; i < opts.warmup; ++i) MESHPLAN_RETURN_IF_ERROR(launch());
  MESHPLAN_RETURN_IF_ERROR(backend.Synchronize());
  if (barrier != nullptr) MESHPLAN_RETURN_IF_ERROR(barrier->Barrier("bench barrier"));
  MESHPLAN_ASSIGN_OR_RETURN(Event start, backend.RecordEvent());
  for (int i = 0; i < opts.iterations; ++i) MESHPLAN_RETURN_IF_ERROR(launch());
  MESHPLAN_ASSIGN_OR_RETURN(Event stop, backend.RecordEvent());
  MESHPLAN_RETURN_IF_ERROR(backend.Synchronize());
  MESHPLAN_ASSIGN_OR_RETURN(double t, backend.ElapsedSeconds(start, stop));
  backend.ReleaseEvents();
  return t / opts.iterations;
}

}  // namespace

Result<GemmBenchResult> BenchGemm(Backend& backend, const GemmShape& s, const TimingOptions& opts) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    return Status::InvalidArgument("bench gemm: m, n, k must be > 0 (got " + std::to_string(s.m) + "x" +
                                   std::to_string(s.n) + "x" + std::to_string(s.k) + ")");
  MESHPLAN_ASSIGN_OR_RETURN(Tensor a, backend.Allocate({s.m, s.k}, s.dtype));
  MESHPLAN_ASSIGN_OR_RETURN(Tensor b, backend.Allocate({s.k, s.n}, s.dtype));
  MESHPLAN_ASSIGN_OR_RETURN(Tensor c, backend.Allocate({s.m, s.n}, s.dtype));
  MESHPLAN_RETURN_IF_ERROR(backend.FillRandom(&a, 1, 1.0f));
  MESHPLAN_RETURN_IF_ERROR(backend.FillRandom(&b, 2, 1.0f));
  GemmBenchResult r;
  r.shape = s;
  r.iterations = opts.iterations;
  MESHPLAN_ASSIGN_OR_RETURN(r.time_s, TimeLaunches(backend, opts, nullptr, [&] { return backend.Gemm({}, a, b, &c); }));
  r.flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  r.flops_per_s = r.time_s > 0 ? r.flops / r.time_s : 0;

  // Check 64 sampled entries of C against a double-precision dot product of the same inputs.
  std::vector<float> ha(static_cast<size_t>(a.numel())), hb(static_cast<size_t>(b.numel())),
      hc(static_cast<size_t>(c.numel()));
  MESHPLAN_RETURN_IF_ERROR(backend.CopyToHost(a, ha.data()));
  MESHPLAN_RETURN_IF_ERROR(backend.CopyToHost(b, hb.data()));
  MESHPLAN_RETURN_IF_ERROR(backend.CopyToHost(c, hc.data()));
  std::mt19937_64 rng(3);
  double err = 0, scale = 1e-30;
  for (int t = 0; t < 64; ++t) {
    const int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(s.m));
    const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(s.n));
    double want = 0;
    for (int64_t p = 0; p < s.k; ++p)
      want += static_cast<double>(ha[static_cast<size_t>(i * s.k + p)]) * hb[static_cast<size_t>(p * s.n + j)];
    err = std::max(err, std::fabs(hc[static_cast<size_t>(i * s.n + j)] - want));
    scale = std::max(scale, std::fabs(want));
  }
  r.max_rel_error = err / scale;
  if (!(r.max_rel_error <= RelativeTolerance(s.dtype, s.k)))
    return Status::Internal("bench gemm: " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                            std::to_string(s.k) + " " + core::Name(s.dtype) + " result is wrong (relative error " +
                            std::to_string(r.max_rel_error) + ")");
  return r;
}

std::vector<int64_t> SizeSweep(int64_t min_bytes, int64_t max_bytes) {
  std::vector<int64_t> out;
  for (int64_t s = std::max<int64_t>(min_bytes, 1); s <= max_bytes; s *= 2) out.push_back(s);
  return out;
}

namespace {

// Exactly representable test values (small multiples of 1/8): sums over <= 1024 ranks are exact.
float Val(int64_t a, int64_t b, int64_t e) {
  return static_cast<float>(a * 64 + b) + static_cast<float>(e % 8) * 0.125f;
}

struct CollBuffers {
  Tensor in, out;
  int64_t in_count = 0, out_count = 0;
};

}  // namespace

Result<std::vector<CollectiveBenchResult>> BenchCollectives(Backend& backend, HostComm& world,
                                                            const std::vector<CollectiveKind>& kinds,
                                                            const std::vector<int64_t>& sizes_bytes,
                                                            const TimingOptions& opts) {
  MESHPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, backend.CreateCommunicator(&world));
  const int n = world.size(), me = world.rank();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  std::vector<CollectiveBenchResult> results;
  for (CollectiveKind kind : kinds) {
    if (kind == CollectiveKind::kSendRecv && n < 2) continue;
    for (int64_t size : sizes_bytes) {
      // Elements of the nccl-tests "count": per rank for all-gather/reduce-scatter (the output /
      // input per rank), the whole buffer otherwise.
      const int64_t total = size / 4;
      int64_t per_rank = total;
      if (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter ||
          kind == CollectiveKind::kAllToAll)
        per_rank = total / n;
      if (per_rank < 1) continue;
      CollBuffers buf;
      switch (kind) {
        case CollectiveKind::kAllGather:
          buf.in_count = per_rank;
          buf.out_count = per_rank * n;
          break;
        case CollectiveKind::kReduceScatter:
          buf.in_count = per_rank * n;
          buf.out_count = per_rank;
          break;
        case CollectiveKind::kAllToAll: buf.in_count = buf.out_count = per_rank * n; break;
        default: buf.in_count = buf.out_count = total; break;
      }
      MESHPLAN_ASSIGN_OR_RETURN(buf.in, backend.Allocate({buf.in_count}, Dtype::kFp32));
      MESHPLAN_ASSIGN_OR_RETURN(buf.out, backend.Allocate({buf.out_count}, Dtype::kFp32));

      // Inputs with known results.
      std::vector<float> hin(static_cast<size_t>(buf.in_count)), want(static_cast<size_t>(buf.out_count));
      const double ranks_sum = static_cast<double>(n) * (n + 1) / 2;
      for (int64_t e = 0; e < buf.in_count; ++e) {
        float v = 0;
        switch (kind) {
          case CollectiveKind::kAllReduce:
          case CollectiveKind::kReduceScatter: v = static_cast<float>((me + 1) * (e % 11 + 1)); break;
          case CollectiveKind::kAllGather: v = Val(me, 0, e); break;
          case CollectiveKind::kAllToAll: v = Val(me, e / per_rank, e); break;  // block j goes to rank j
          case CollectiveKind::kBroadcast: v = me == 0 ? Val(0, 1, e) : -1.0f; break;
          case CollectiveKind::kSendRecv: v = Val(me, 2, e); break;
        }
        hin[static_cast<size_t>(e)] = v;
      }
      for (int64_t e = 0; e < buf.out_count; ++e) {
        float w = 0;
        switch (kind) {
          case CollectiveKind::kAllReduce: w = static_cast<float>(ranks_sum * static_cast<double>(e % 11 + 1)); break;
          case CollectiveKind::kReduceScatter:
            w = static_cast<float>(ranks_sum * static_cast<double>((me * per_rank + e) % 11 + 1));
            break;
          case CollectiveKind::kAllGather: w = Val(e / per_rank, 0, e % per_rank); break;
          case CollectiveKind::kAllToAll: w = Val(e / per_rank, me, me * per_rank + e % per_rank); break;
          case CollectiveKind::kBroadcast: w = Val(0, 1, e); break;
          case CollectiveKind::kSendRecv: w = Val(prev, 2, e); break;
        }
        want[static_cast<size_t>(e)] = w;
      }
      const char* what = core::Name(kind);
      auto launch = [&]() -> Status {
        switch (kind) {
          case CollectiveKind::kAllReduce: return backend.AllReduce(*comm, &buf.in, what);
          case CollectiveKind::kAllGather: return backend.AllGather(*comm, buf.in, &buf.out, what);
          case CollectiveKind::kReduceScatter: return backend.ReduceScatter(*comm, buf.in, &buf.out, what);
          case CollectiveKind::kAllToAll: return backend.AllToAll(*comm, buf.in, &buf.out, what);
          case CollectiveKind::kBroadcast: return backend.Broadcast(*comm, 0, &buf.in, what);
          case CollectiveKind::kSendRecv:
            MESHPLAN_RETURN_IF_ERROR(backend.Send(*comm, next, buf.in, what));
            MESHPLAN_RETURN_IF_ERROR(backend.Recv(*comm, prev, &buf.out, what));
            return backend.FlushSends(*comm, what);
        }
        return Status::Internal("unknown collective");
      };

      // Correctness first (one launch on fresh data), then timing.
      MESHPLAN_RETURN_IF_ERROR(backend.CopyFromHost(hin.data(), &buf.in));
      MESHPLAN_RETURN_IF_ERROR(launch());
      MESHPLAN_RETURN_IF_ERROR(backend.Synchronize());
      const bool in_place = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kBroadcast;
      std::vector<float> got(static_cast<size_t>(buf.out_count));
      MESHPLAN_RETURN_IF_ERROR(backend.CopyToHost(in_place ? buf.in : buf.out, got.data()));
      double wrong = 0;
      for (size_t e = 0; e < got.size(); ++e) wrong += got[e] != want[e] ? 1 : 0;

      MESHPLAN_RETURN_IF_ERROR(backend.CopyFromHost(hin.data(), &buf.in));
      MESHPLAN_ASSIGN_OR_RETURN(double t, TimeLaunches(backend, opts, &world, launch));
      double sums[2] = {t, wrong};
      MESHPLAN_RETURN_IF_ERROR(world.AllReduceSumDouble(sums, 2, "bench result"));

      CollectiveBenchResult r;
      r.kind = kind;
      r.count = kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter ? per_rank : buf.out_count;
      r.size_bytes = (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter ||
                              kind == CollectiveKind::kAllToAll
                          ? per_rank * n
                          : buf.out_count) *
                     4;
      r.root = kind == CollectiveKind::kBroadcast ? 0 : -1;
      r.ranks = n;
      r.time_s = sums[0] / n;
      r.wrong = static_cast<int64_t>(sums[1]);
      r.algbw_bytes_per_s = r.time_s > 0 ? static_cast<double>(r.size_bytes) / r.time_s : 0;
      r.busbw_bytes_per_s = r.algbw_bytes_per_s * core::BusBandwidthFactor(kind, n);
      results.push_back(r);
    }
  }
  return results;
}

}  // namespace meshplan::runtime
