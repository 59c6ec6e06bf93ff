#include "sim/fit.h"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "sim/step_model.h"

namespace meshplan::sim {
namespace {

using core::Dtype;
using core::OpKind;
using core::Pass;

enum class ParamKind { kGemmEff, kHalfFlops, kOverhead, kAttnFwd, kAttnBwd, kMemOp, kHbm, kScaleUp };

struct Param {
  ParamKind kind;
  Dtype dtype = Dtype::kBf16;  // kGemmEff
  std::string op;              // kMemOp
  std::string label;
  double start = 0;
  int samples = 0;
};

bool IsMemory(OpKind k) { return k == OpKind::kMemoryBound || k == OpKind::kOptimizer; }

// The memory_op_efficiency key a memory-bound sample is fitted under: per op and pass, because a
// kernel's backward is a different kernel (ComputeOpTime looks "name.pass" up first).
std::string MemKey(const ComputeSample& s) { return s.name + "." + core::Name(s.op.pass); }

double GetParam(const Param& p, const core::Profile& prof) {
  switch (p.kind) {
    case ParamKind::kGemmEff: {
      auto it = prof.gemm_efficiency.find(p.dtype);
      return it != prof.gemm_efficiency.end() ? it->second : 0.8;  // ComputeOpTime's fallback
    }
    case ParamKind::kHalfFlops: return prof.gemm_half_flops;
    case ParamKind::kOverhead: return prof.kernel_overhead_s;
    case ParamKind::kAttnFwd: return prof.attention_fwd_efficiency;
    case ParamKind::kAttnBwd: return prof.attention_bwd_efficiency;
    case ParamKind::kMemOp: {
      auto it = prof.memory_op_efficiency.find(p.op);
      return it != prof.memory_op_efficiency.end() ? it->second : prof.hbm_efficiency;
    }
    case ParamKind::kHbm: return prof.hbm_efficiency;
    case ParamKind::kScaleUp: return prof.comm.scale_up;
  }
  return 0;
}

void SetParam(const Param& p, double v, core::Profile* prof) {
  switch (p.kind) {
    case ParamKind::kGemmEff:
      prof->gemm_efficiency[p.dtype] = v;
      prof->gemm_efficiency_measured = true;
      break;
    case ParamKind::kHalfFlops: prof->gemm_half_flops = v; break;
    case ParamKind::kOverhead: prof->kernel_overhead_s = v; break;
    case ParamKind::kAttnFwd:
      prof->attention_fwd_efficiency = v;
      prof->attention_efficiency_measured = true;
      break;
    case ParamKind::kAttnBwd:
      prof->attention_bwd_efficiency = v;
      prof->attention_efficiency_measured = true;
      break;
    case ParamKind::kMemOp: prof->memory_op_efficiency[p.op] = v; break;
    case ParamKind::kHbm: prof->hbm_efficiency = v; break;
    case ParamKind::kScaleUp: prof->comm.scale_up = v; break;
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double PeakOf(const core::GpuSpec& g, Dtype d) {
  auto it = g.peak_flops_per_s.find(d);
  return it != g.peak_flops_per_s.end() ? it->second : 0;
}

// The parameters the samples determine, with data-driven starting values where the starting
// profile is far off (a cpu device): the median achieved fraction of peak or bandwidth.
std::vector<Param> ChooseParams(const std::vector<ComputeSample>& samples, const core::GpuSpec& dev,
                                const core::Profile& start, bool gemm_memory_side) {
  std::map<Dtype, std::vector<double>> gemm;
  int gemm_bw_samples = 0;  // GEMMs whose memory side binds at the starting profile
  std::vector<double> attn_fwd, attn_bwd;
  std::map<std::string, std::vector<double>> mem;
  for (const ComputeSample& s : samples) {
    const double per_call = s.time_s / s.calls;
    switch (s.op.kind) {
      case OpKind::kGemm:
        gemm[s.op.dtype].push_back(2.0 * static_cast<double>(s.op.m) * static_cast<double>(s.op.n) *
                                   static_cast<double>(s.op.k) * static_cast<double>(s.op.batch) / per_call /
                                   PeakOf(dev, s.op.dtype));
        if (gemm_memory_side) {
          // A GEMM whose memory side binds at the starting profile once it runs at its full rate
          // (the ramp and the wave are fitted too): the attention's batched score and value
          // GEMMs, s x s outputs over a head's width.
          const GemmRoofline r = GemmSides(s.op, dev, start);
          if (r.memory_s > r.full_rate_s) ++gemm_bw_samples;
        }
        break;
      case OpKind::kAttention:
        (s.op.pass == Pass::kBackwardInput ? attn_bwd : attn_fwd)
            .push_back(s.op.Flops() / per_call / PeakOf(dev, s.op.dtype));
        break;
      case OpKind::kMemoryBound:
      case OpKind::kOptimizer:
        mem[MemKey(s)].push_back(static_cast<double>(s.op.bytes) / per_call / dev.hbm_bytes_per_s);
        break;
      default: break;
    }
  }
  std::vector<Param> ps;
  for (const auto& [d, v] : gemm)
    ps.push_back({ParamKind::kGemmEff, d, "", std::string("gemm_efficiency.") + core::Name(d), Median(v), 0});
  if (!gemm.empty())
    ps.push_back({ParamKind::kHalfFlops, Dtype::kBf16, "", "gemm_half_flops", start.gemm_half_flops, 0});
  ps.push_back({ParamKind::kOverhead, Dtype::kBf16, "", "kernel_overhead_s", start.kernel_overhead_s, 0});
  if (!attn_fwd.empty())
    ps.push_back({ParamKind::kAttnFwd, Dtype::kBf16, "", "attention_fwd_efficiency", Median(attn_fwd), 0});
  if (!attn_bwd.empty())
    ps.push_back({ParamKind::kAttnBwd, Dtype::kBf16, "", "attention_bwd_efficiency", Median(attn_bwd), 0});
  for (const auto& [name, v] : mem)
    ps.push_back({ParamKind::kMemOp, Dtype::kBf16, name, "memory_op_efficiency." + name, Median(v), 0});
  // The GEMMs' memory side reads hbm_efficiency (ComputeOpTime): fitted from memory-bound GEMMs,
  // not left to the mean of the memory kernels (which a runtime's own kernels can put far below
  // what cuBLAS streams: docs/calibration.md, "On a GPU").
  // Started from the starting profile's value: a small GEMM that looks memory-bound there may be
  // ramp-bound (F_half) in truth, and its achieved bandwidth would be a misleading start.
  if (gemm_bw_samples > 0) ps.push_back({ParamKind::kHbm, Dtype::kBf16, "", "hbm_efficiency", start.hbm_efficiency, 0});
  return ps;
}

bool Uses(const Param& p, const ComputeSample& s) {
  switch (p.kind) {
    case ParamKind::kGemmEff: return s.op.kind == OpKind::kGemm && s.op.dtype == p.dtype;
    case ParamKind::kHalfFlops: return s.op.kind == OpKind::kGemm;
    case ParamKind::kOverhead: return true;
    case ParamKind::kAttnFwd: return s.op.kind == OpKind::kAttention && s.op.pass != Pass::kBackwardInput;
    case ParamKind::kAttnBwd: return s.op.kind == OpKind::kAttention && s.op.pass == Pass::kBackwardInput;
    case ParamKind::kMemOp: return IsMemory(s.op.kind) && MemKey(s) == p.op;
    case ParamKind::kHbm: return s.op.kind == OpKind::kGemm;  // the GEMMs' memory side (kernels have their own)
    case ParamKind::kScaleUp: return false;
  }
  return false;
}

core::Profile WithParams(const core::Profile& base, const std::vector<Param>& ps, const Eigen::VectorXd& theta) {
  core::Profile p = base;
  for (size_t i = 0; i < ps.size(); ++i) SetParam(ps[i], std::exp(theta[static_cast<Eigen::Index>(i)]), &p);
  return p;
}

constexpr double kPrior = 1e-2;  // residual weight per unit of log distance from the start (1e-4 in the cost)

// What the least squares sees: the samples, the parameters and where they started.
struct Problem {
  const std::vector<ComputeSample>& compute;
  const std::vector<LayerSample>& layers;
  const core::GpuSpec& device;
  const core::Profile& base;
  const std::vector<Param>& params;
  Eigen::VectorXd theta0;

  Eigen::Index Rows() const { return static_cast<Eigen::Index>(compute.size() + 2 * layers.size()) + theta0.size(); }
  Eigen::VectorXd Residuals(const Eigen::VectorXd& theta) const {
    const core::Profile p = WithParams(base, params, theta);
    Eigen::VectorXd r(Rows());
    Eigen::Index i = 0;
    for (const ComputeSample& s : compute) r[i++] = (PredictSample(s, device, p) - s.time_s) / s.time_s;
    for (const LayerSample& l : layers) {
      const StageTimes t = DenseLayerTimes(l.scenario.model, l.scenario.plan, l.scenario.gpu, l.scenario.cluster, p);
      r[i++] = (t.forward_s - l.forward_s) / l.forward_s;
      r[i++] = (t.backward_input_s + t.backward_weight_s - l.backward_s) / l.backward_s;
    }
    r.tail(theta.size()) = kPrior * (theta - theta0);
    return r;
  }
};

// Levenberg-Marquardt with Marquardt's diagonal scaling and a forward-difference Jacobian.
int LevenbergMarquardt(const Problem& pb, int max_iterations, Eigen::VectorXd* theta, bool* converged) {
  *converged = false;
  Eigen::VectorXd r = pb.Residuals(*theta);
  double cost = r.squaredNorm();
  double mu = 1e-3;
  int it = 0;
  for (; it < max_iterations; ++it) {
    Eigen::MatrixXd jac(r.size(), theta->size());
    for (Eigen::Index k = 0; k < theta->size(); ++k) {
      Eigen::VectorXd t = *theta;
      const double h = 1e-6;
      t[k] += h;
      jac.col(k) = (pb.Residuals(t) - r) / h;
    }
    const Eigen::MatrixXd jtj = jac.transpose() * jac;
    const Eigen::VectorXd g = jac.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 30 && !improved; ++tries) {
      Eigen::MatrixXd a = jtj;
      for (Eigen::Index k = 0; k < a.rows(); ++k) a(k, k) += mu * std::max(jtj(k, k), 1e-12);
      const Eigen::VectorXd step = a.ldlt().solve(-g);
      const Eigen::VectorXd cand = *theta + step;
      const Eigen::VectorXd rc = pb.Residuals(cand);
      const double c = rc.squaredNorm();
      if (std::isfinite(c) && c < cost) {
        const double gain = cost - c;
        *theta = cand;
        r = rc;
        improved = true;
        mu = std::max(mu / 3, 1e-12);
        if (gain <= 1e-12 * cost || step.norm() < 1e-9) {
          *converged = true;
          return it + 1;
        }
        cost = c;
      } else {
        mu *= 4;
      }
    }
    if (!improved) {  // no step lowers the cost: a minimum to the precision of the Jacobian
      *converged = true;
      return it + 1;
    }
  }
  return it;
}

// Weighted least squares t = alpha + beta x bytes, minimising relative residuals.
CollectiveFitReport FitCollective(const std::vector<CollectiveSample>& xs, std::string* note) {
  CollectiveFitReport rep;
  rep.samples = static_cast<int>(xs.size());
  core::CollectiveFit& f = rep.fit;
  f.kind = xs.front().kind;
  f.scale_out = xs.front().scale_out;
  f.ranks = xs.front().ranks;
  f.min_bytes = xs.front().bytes;
  f.max_bytes = xs.front().bytes;
  const Eigen::Index n = static_cast<Eigen::Index>(xs.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const CollectiveSample& s = xs[static_cast<size_t>(i)];
    a(i, 0) = 1.0 / s.time_s;
    a(i, 1) = static_cast<double>(s.bytes) / s.time_s;
    f.min_bytes = std::min(f.min_bytes, s.bytes);
    f.max_bytes = std::max(f.max_bytes, s.bytes);
  }
  Eigen::Vector2d x = a.colPivHouseholderQr().solve(b);
  // A negative intercept or slope has no physical meaning: refit with it fixed at zero.
  if (x[0] < 0) {
    x[0] = 0;
    x[1] = a.col(1).dot(b) / a.col(1).squaredNorm();
    *note = "alpha fitted below 0; refitted as beta only";
  } else if (x[1] < 0) {
    x[1] = 0;
    x[0] = a.col(0).dot(b) / a.col(0).squaredNorm();
    *note = "beta fitted below 0; refitted as alpha only";
  }
  f.alpha_s = x[0];
  f.beta_s_per_byte = x[1];
  double mean = 0;
  for (const auto& s : xs) mean += s.time_s;
  mean /= static_cast<double>(n);
  double ss_res = 0, ss_tot = 0;
  for (const auto& s : xs) {
    const double pred = f.alpha_s + f.beta_s_per_byte * static_cast<double>(s.bytes);
    ss_res += (s.time_s - pred) * (s.time_s - pred);
    ss_tot += (s.time_s - mean) * (s.time_s - mean);
    rep.max_abs_rel_error = std::max(rep.max_abs_rel_error, std::abs(pred - s.time_s) / s.time_s);
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  return rep;
}

}  // namespace

double PredictSample(const ComputeSample& s, const core::GpuSpec& device, const core::Profile& profile) {
  core::Op op = s.op;
  op.name = s.name.c_str();
  return ComputeOpTime(op, device, profile) * s.calls;
}

namespace {

// Every sample usable, or InvalidArgument naming it.
core::Status CheckSamples(const std::vector<ComputeSample>& compute, const std::vector<CollectiveSample>& collectives,
                          const core::GpuSpec& device, const std::vector<LayerSample>& layers) {
  if (compute.empty() && collectives.empty() && layers.empty())
    return core::Status::InvalidArgument("calibrate: no samples (the files hold no op rows, GEMMs or collectives)");
  for (const LayerSample& l : layers)
    if (!(l.forward_s > 0) || !(l.backward_s > 0))
      return core::Status::InvalidArgument("layer sample " + l.id + ": forward_s and backward_s must be > 0");
  for (size_t i = 0; i < compute.size(); ++i) {
    const ComputeSample& s = compute[i];
    const std::string where = "sample " + std::to_string(i) + " (" + s.name + ", " + s.source + ")";
    if (!(s.time_s > 0) || !std::isfinite(s.time_s))
      return core::Status::InvalidArgument(where + ": time_s must be > 0 (got " + std::to_string(s.time_s) + ")");
    if (!(s.calls > 0)) return core::Status::InvalidArgument(where + ": calls must be > 0");
    if ((s.op.kind == OpKind::kGemm || s.op.kind == OpKind::kAttention) && !(PeakOf(device, s.op.dtype) > 0))
      return core::Status::InvalidArgument(where + ": device " + device.name + " has no peak for " +
                                           core::Name(s.op.dtype));
    if (IsMemory(s.op.kind) && !(device.hbm_bytes_per_s > 0))
      return core::Status::InvalidArgument(where + ": device " + device.name + " has no memory bandwidth");
    if (s.op.kind != OpKind::kGemm && s.op.kind != OpKind::kAttention && !IsMemory(s.op.kind))
      return core::Status::InvalidArgument(where + ": only compute ops are fitted here (got " + core::Name(s.op.kind) +
                                           ")");
  }
  for (size_t i = 0; i < collectives.size(); ++i)
    if (!(collectives[i].time_s > 0) || collectives[i].bytes <= 0 || collectives[i].ranks < 2)
      return core::Status::InvalidArgument("collective sample " + std::to_string(i) +
                                           ": needs time_s > 0, bytes > 0 and ranks >= 2");
  return core::Status::Ok();
}

// The compute fit: GEMM, attention and HBM efficiencies (and the per-layer fractions) by least
// squares on the op and layer samples, and its report; InvalidArgument for a fraction of the
// device's peak above 1 (the device spec understates the hardware).
core::Status FitCompute(const std::vector<ComputeSample>& compute, const std::vector<LayerSample>& layers,
                        const core::GpuSpec& device, const core::Profile& start, const FitOptions& options,
                        FitResult* result) {
  FitResult& out = *result;
  FitReport& rep = out.report;
  core::GpuSpec dev = device;
  // On a GPU (published peaks) the GEMMs' memory side is fitted where a GEMM sample is memory-bound;
  // the cpu backend's bandwidth is itself the fastest memory op's (rescale_device).
  std::vector<Param> ps = ChooseParams(compute, dev, start, !options.rescale_device);
  // Per-layer timings add what a whole layer exercises: the GEMM efficiency of its precision,
  // F_half, attention when fused, the HBM fraction of its memory-bound kernels and the
  // scale-up bandwidth of its tensor-parallel collectives; they start from `start`.
  std::vector<bool> layer_param(ps.size(), false);
  auto add = [&](ParamKind kind, Dtype d, const std::string& label) {
    for (size_t k = 0; k < ps.size(); ++k)
      if (ps[k].label == label) {
        layer_param[k] = true;
        return;
      }
    Param p{kind, d, "", label, 0, 0};
    p.start = GetParam(p, start);
    ps.push_back(p);
    layer_param.push_back(true);
  };
  for (const LayerSample& l : layers) {
    const core::PlanSpec& lp = l.scenario.plan;
    add(ParamKind::kGemmEff, lp.precision, std::string("gemm_efficiency.") + core::Name(lp.precision));
    add(ParamKind::kHalfFlops, Dtype::kBf16, "gemm_half_flops");
    add(ParamKind::kOverhead, Dtype::kBf16, "kernel_overhead_s");
    if (l.scenario.model.attention != core::AttentionImpl::kNaive) {
      add(ParamKind::kAttnFwd, Dtype::kBf16, "attention_fwd_efficiency");
      add(ParamKind::kAttnBwd, Dtype::kBf16, "attention_bwd_efficiency");
    }
    add(ParamKind::kHbm, Dtype::kBf16, "hbm_efficiency");
    if (lp.tp > 1 || lp.cp > 1 || lp.ep > 1) add(ParamKind::kScaleUp, Dtype::kBf16, "comm.scale_up");
  }
  const Eigen::Index np = static_cast<Eigen::Index>(ps.size());
  Eigen::VectorXd theta0(np);
  for (Eigen::Index k = 0; k < np; ++k) {
    Param& p = ps[static_cast<size_t>(k)];
    for (const ComputeSample& s : compute) p.samples += Uses(p, s) ? 1 : 0;
    if (layer_param[static_cast<size_t>(k)]) p.samples += 2 * static_cast<int>(layers.size());
    theta0[k] = std::log(std::max(p.start, 1e-300));
    p.start = GetParam(p, start);  // the report's "start" is the starting profile's value
  }
  Eigen::VectorXd theta = theta0;
  rep.iterations = LevenbergMarquardt(Problem{compute, layers, dev, start, ps, theta0}, options.max_iterations, &theta,
                                      &rep.converged);
  out.profile = WithParams(start, ps, theta);
  // Bounded least squares for the fractions a whole layer fits (active set): a layer-level HBM
  // or scale-up fraction above 1 says the model counts more bytes than the real (fused)
  // kernels move; it is held at 1 and the rest refitted, and the report says so.
  core::Profile bounded = start;
  std::vector<Param> free_ps;
  Eigen::VectorXd free0(np);
  Eigen::Index nf = 0;
  for (Eigen::Index k = 0; k < np; ++k) {
    const Param& p = ps[static_cast<size_t>(k)];
    const double v = std::exp(theta[k]);
    if ((p.kind == ParamKind::kHbm || p.kind == ParamKind::kScaleUp) && v > 1) {
      SetParam(p, 1.0, &bounded);
      rep.kept.push_back(p.label + " held at 1 (fitted " + std::to_string(v) +
                         "): the model moves more bytes than the measured kernels");
      continue;
    }
    free_ps.push_back(p);
    free0[nf++] = theta0[k];
  }
  if (static_cast<Eigen::Index>(free_ps.size()) < np) {
    free0.conservativeResize(nf);
    Eigen::VectorXd ft = free0;
    rep.iterations += LevenbergMarquardt(Problem{compute, layers, dev, bounded, free_ps, free0}, options.max_iterations,
                                         &ft, &rep.converged);
    out.profile = WithParams(bounded, free_ps, ft);
    for (Eigen::Index k = 0; k < np; ++k) theta[k] = std::log(GetParam(ps[static_cast<size_t>(k)], out.profile));
  }
  for (Eigen::Index k = 0; k < np; ++k) {
    const Param& p = ps[static_cast<size_t>(k)];
    rep.parameters.push_back({p.label, p.start, std::exp(theta[k]), p.samples});
  }
  // The global HBM fraction for kernels the samples did not cover: all memory bytes over the
  // time they took at full bandwidth (a bytes-weighted harmonic mean of the per-op fractions).
  double bytes = 0, full_bw_time = 0;
  for (const ComputeSample& s : compute) {
    if (!IsMemory(s.op.kind)) continue;
    const double e = out.profile.memory_op_efficiency.at(MemKey(s));
    bytes += static_cast<double>(s.op.bytes) * s.calls;
    full_bw_time += static_cast<double>(s.op.bytes) * s.calls / e;
  }
  bool hbm_fitted = false;
  for (const Param& p : ps) hbm_fitted |= p.kind == ParamKind::kHbm;
  if (bytes > 0 && !hbm_fitted) {
    out.profile.hbm_efficiency = bytes / full_bw_time;
    rep.parameters.push_back({"hbm_efficiency (bytes-weighted mean of the op fractions)", start.hbm_efficiency,
                              out.profile.hbm_efficiency, 0});
  }
  for (const char* kept : {"attention_fwd_efficiency", "attention_bwd_efficiency", "gemm_half_flops"}) {
    bool fitted = false;
    for (const Param& p : ps) fitted |= p.label == kept;
    if (!fitted) rep.kept.push_back(kept);
  }
  if (bytes == 0 && !hbm_fitted) rep.kept.push_back("hbm_efficiency");

  if (options.rescale_device) {
    // Peaks follow the efficiencies so that the highest is 1; times depend on peak x efficiency.
    double mc = 0, mh = out.profile.hbm_efficiency;
    for (const Param& p : ps) {
      const double v = GetParam(p, out.profile);
      if (p.kind == ParamKind::kGemmEff || p.kind == ParamKind::kAttnFwd || p.kind == ParamKind::kAttnBwd)
        mc = std::max(mc, v);
      if (p.kind == ParamKind::kMemOp) mh = std::max(mh, v);
    }
    if (mc > 0) {
      for (auto& [d, peak] : dev.peak_flops_per_s) peak *= mc;
      for (auto& [d, e] : out.profile.gemm_efficiency) e = std::min(1.0, e / mc);
      out.profile.attention_fwd_efficiency = std::min(1.0, out.profile.attention_fwd_efficiency / mc);
      out.profile.attention_bwd_efficiency = std::min(1.0, out.profile.attention_bwd_efficiency / mc);
    }
    if (mh > 0) {
      dev.hbm_bytes_per_s *= mh;
      out.profile.hbm_efficiency /= mh;
      for (auto& [name, e] : out.profile.memory_op_efficiency) e /= mh;
    }
    out.profile.device = dev;
    for (FittedParameter& fp : rep.parameters) {
      core::Profile probe = out.profile;
      for (const Param& p : ps)
        if (p.label == fp.name) fp.value = GetParam(p, probe);
      if (fp.name.rfind("hbm_efficiency", 0) == 0) fp.value = out.profile.hbm_efficiency;
    }
  } else {
    for (const Param& p : ps) {
      const double v = GetParam(p, out.profile);
      if (p.kind != ParamKind::kHalfFlops && p.kind != ParamKind::kOverhead && v > 1)
        return core::Status::InvalidArgument(
            "calibrate: " + p.label + " fitted to " + std::to_string(v) + " of " + device.name +
            "'s peak (above 1): the device spec understates this hardware; check the GPU preset and its clocks");
    }
  }

  for (const LayerSample& l : layers) {
    const core::Scenario& sc = l.scenario;
    const StageTimes b = DenseLayerTimes(sc.model, sc.plan, sc.gpu, sc.cluster, start);
    const StageTimes a = DenseLayerTimes(sc.model, sc.plan, sc.gpu, sc.cluster, out.profile);
    rep.layers.push_back({l.id, l.forward_s, l.backward_s, b.forward_s, b.backward_input_s + b.backward_weight_s,
                          a.forward_s, a.backward_input_s + a.backward_weight_s});
  }
  // Fit quality and per-op errors, before (the starting profile) and after.
  std::vector<double> before, after, ly, lyhat;
  std::map<std::string, std::tuple<std::string, std::vector<double>, std::vector<double>>> by_op;
  for (const ComputeSample& s : compute) {
    const double b = std::abs(PredictSample(s, device, start) - s.time_s) / s.time_s;
    const double pa = PredictSample(s, dev, out.profile);
    const double a = std::abs(pa - s.time_s) / s.time_s;
    before.push_back(b);
    after.push_back(a);
    ly.push_back(std::log(s.time_s));
    lyhat.push_back(std::log(pa));
    auto& e = by_op[s.name];
    std::get<0>(e) = core::Name(s.op.kind);
    std::get<1>(e).push_back(b);
    std::get<2>(e).push_back(a);
  }
  double mean = 0;
  for (double y : ly) mean += y;
  if (!ly.empty()) mean /= static_cast<double>(ly.size());
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < ly.size(); ++i) {
    ss_res += (ly[i] - lyhat[i]) * (ly[i] - lyhat[i]);
    ss_tot += (ly[i] - mean) * (ly[i] - mean);
  }
  rep.r2_log = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  rep.median_abs_rel_error_before = Median(before);
  rep.median_abs_rel_error_after = Median(after);
  rep.max_abs_rel_error_after = after.empty() ? 0 : *std::max_element(after.begin(), after.end());
  for (const auto& [name, e] : by_op) {
    const auto& [kind, b, a] = e;
    rep.ops.push_back(
        {name, kind, static_cast<int>(a.size()), Median(b), Median(a), *std::max_element(a.begin(), a.end())});
  }
  return core::Status::Ok();
}

// Collectives, one alpha-beta line per (kind, tier, ranks) with at least two sizes.
void FitCollectives(const std::vector<CollectiveSample>& collectives, FitResult* result) {
  FitResult& out = *result;
  FitReport& rep = out.report;
  std::map<std::tuple<int, bool, int64_t>, std::vector<CollectiveSample>> groups;
  for (const CollectiveSample& s : collectives) groups[{static_cast<int>(s.kind), s.scale_out, s.ranks}].push_back(s);
  if (!collectives.empty()) out.profile.collectives.clear();  // else the start's stay
  for (const auto& [key, xs] : groups) {
    std::vector<int64_t> sizes;
    for (const auto& s : xs) sizes.push_back(s.bytes);
    std::sort(sizes.begin(), sizes.end());
    if (std::unique(sizes.begin(), sizes.end()) - sizes.begin() < 2) {
      rep.kept.push_back(std::string("collective ") + core::Name(xs.front().kind) + " x" +
                         std::to_string(xs.front().ranks) + " (one size only: alpha and beta not separable)");
      continue;
    }
    std::string note;
    CollectiveFitReport cr = FitCollective(xs, &note);
    if (!note.empty()) rep.kept.push_back(std::string("collective ") + core::Name(cr.fit.kind) + ": " + note);
    out.profile.collectives.push_back(cr.fit);
    rep.collectives.push_back(cr);
  }
}

}  // namespace

core::Result<FitResult> FitProfile(const std::vector<ComputeSample>& compute,
                                   const std::vector<CollectiveSample>& collectives, const core::GpuSpec& device,
                                   const core::Profile& start, const FitOptions& options,
                                   const std::vector<LayerSample>& layers) {
  if (core::Status st = CheckSamples(compute, collectives, device, layers); !st.ok()) return st;
  FitResult out;
  out.profile = start;
  out.report.compute_samples = static_cast<int>(compute.size());
  if (!compute.empty() || !layers.empty()) {
    if (core::Status st = FitCompute(compute, layers, device, start, options, &out); !st.ok()) return st;
  }
  FitCollectives(collectives, &out);
  return out;
}

std::string FitReportToJson(const FitReport& r) {
  nlohmann::ordered_json j;
  j["compute_samples"] = r.compute_samples;
  j["iterations"] = r.iterations;
  j["converged"] = r.converged;
  j["r2_log_time"] = r.r2_log;
  j["median_abs_rel_error_before"] = r.median_abs_rel_error_before;
  j["median_abs_rel_error_after"] = r.median_abs_rel_error_after;
  j["max_abs_rel_error_after"] = r.max_abs_rel_error_after;
  j["parameters"] = nlohmann::ordered_json::array();
  for (const auto& p : r.parameters)
    j["parameters"].push_back({{"name", p.name}, {"start", p.start}, {"value", p.value}, {"samples", p.samples}});
  j["kept"] = r.kept;
  j["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : r.layers)
    j["layers"].push_back({{"id", l.id},
                           {"forward_s", l.forward_s},
                           {"backward_s", l.backward_s},
                           {"forward_before_s", l.forward_before_s},
                           {"backward_before_s", l.backward_before_s},
                           {"forward_after_s", l.forward_after_s},
                           {"backward_after_s", l.backward_after_s}});
  j["ops"] = nlohmann::ordered_json::array();
  for (const auto& o : r.ops)
    j["ops"].push_back({{"name", o.name},
                        {"kind", o.kind},
                        {"samples", o.samples},
                        {"median_abs_rel_error_before", o.median_abs_rel_error_before},
                        {"median_abs_rel_error_after", o.median_abs_rel_error_after},
                        {"max_abs_rel_error_after", o.max_abs_rel_error_after}});
  j["collectives"] = nlohmann::ordered_json::array();
  for (const auto& c : r.collectives)
    j["collectives"].push_back({{"collective", core::Name(c.fit.kind)},
                                {"tier", c.fit.scale_out ? "scale_out" : "scale_up"},
                                {"ranks", c.fit.ranks},
                                {"alpha_s", c.fit.alpha_s},
                                {"beta_s_per_byte", c.fit.beta_s_per_byte},
                                {"r2", c.fit.r2},
                                {"samples", c.samples},
                                {"max_abs_rel_error", c.max_abs_rel_error}});
  return j.dump(2) + "\n";
}

std::string FitReportTable(const FitReport& r) {
  std::ostringstream o;
  char line[320];
  if (r.compute_samples > 0 || !r.layers.empty()) {
    std::snprintf(line, sizeof line,
                  "# compute: %d samples, Levenberg-Marquardt %d iterations (%s); R^2 on log time %.4f; median "
                  "|error| %.1f%% before, %.1f%% after (max %.1f%%)\n",
                  r.compute_samples, r.iterations, r.converged ? "converged" : "NOT converged", r.r2_log,
                  100 * r.median_abs_rel_error_before, 100 * r.median_abs_rel_error_after,
                  100 * r.max_abs_rel_error_after);
    o << line;
    std::snprintf(line, sizeof line, "# %-52s %14s %14s %8s\n", "parameter", "start", "fitted", "samples");
    o << line;
    for (const auto& p : r.parameters) {
      std::snprintf(line, sizeof line, "  %-52s %14.6g %14.6g %8d\n", p.name.c_str(), p.start, p.value, p.samples);
      o << line;
    }
    std::snprintf(line, sizeof line, "# %-24s %-10s %8s %12s %12s %12s\n", "op", "kind", "samples", "err_before",
                  "err_after", "max_after");
    o << line;
    std::snprintf(line, sizeof line, "# %-24s %-10s %8s %12s %12s %12s\n", "", "", "", "(median %)", "(median %)",
                  "(%)");
    o << line;
    for (const auto& e : r.ops) {
      std::snprintf(line, sizeof line, "  %-24s %-10s %8d %12.1f %12.1f %12.1f\n", e.name.c_str(), e.kind.c_str(),
                    e.samples, 100 * e.median_abs_rel_error_before, 100 * e.median_abs_rel_error_after,
                    100 * e.max_abs_rel_error_after);
      o << line;
    }
  }
  if (!r.layers.empty()) {
    std::snprintf(line, sizeof line, "# %-52s %9s %9s %9s %9s %9s %9s\n", "layer timing", "fwd", "before", "after",
                  "bwd", "before", "after");
    o << line;
    std::snprintf(line, sizeof line, "# %-52s %9s %9s %9s %9s %9s %9s\n", "", "(ms)", "(ms)", "(ms)", "(ms)", "(ms)",
                  "(ms)");
    o << line;
    for (const auto& l : r.layers) {
      std::snprintf(line, sizeof line, "  %-52s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", l.id.c_str(), 1e3 * l.forward_s,
                    1e3 * l.forward_before_s, 1e3 * l.forward_after_s, 1e3 * l.backward_s, 1e3 * l.backward_before_s,
                    1e3 * l.backward_after_s);
      o << line;
    }
  }
  if (!r.collectives.empty()) {
    std::snprintf(line, sizeof line, "# %-16s %-9s %6s %12s %14s %8s %8s %10s\n", "collective", "tier", "ranks",
                  "alpha_us", "beta_GBps", "R^2", "samples", "max_err");
    o << line;
    std::snprintf(line, sizeof line, "# %-16s %-9s %6s %12s %14s %8s %8s %10s\n", "", "", "", "(us)", "(1/beta, GB/s)",
                  "", "", "(%)");
    o << line;
    for (const auto& c : r.collectives) {
      std::snprintf(line, sizeof line, "  %-16s %-9s %6lld %12.2f %14.3f %8.4f %8d %10.1f\n", core::Name(c.fit.kind),
                    c.fit.scale_out ? "scale_out" : "scale_up", static_cast<long long>(c.fit.ranks),
                    c.fit.alpha_s * 1e6, c.fit.beta_s_per_byte > 0 ? 1e-9 / c.fit.beta_s_per_byte : 0.0, c.fit.r2,
                    c.samples, 100 * c.max_abs_rel_error);
      o << line;
    }
  }
  for (const auto& k : r.kept) o << "# kept (not fitted): " << k << "\n";
  return o.str();
}

}  // namespace meshplan::sim
