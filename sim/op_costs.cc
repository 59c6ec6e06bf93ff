// How a costed op is described (`meshplan report --ops`, meshplan-gui's op table): sim/step_model.h.
#include <cstdio>
#include <string>
#include <string_view>

#include "core/collectives.h"
#include "sim/step_model.h"

namespace meshplan::sim {

std::string CostedOpShape(const core::Op& op) {
  char b[96];
  switch (op.kind) {
    case core::OpKind::kGemm:
      if (op.batch > 1)
        std::snprintf(b, sizeof b, "%lldx%lldx%lld x%lld", static_cast<long long>(op.m), static_cast<long long>(op.n),
                      static_cast<long long>(op.k), static_cast<long long>(op.batch));
      else
        std::snprintf(b, sizeof b, "%lldx%lldx%lld", static_cast<long long>(op.m), static_cast<long long>(op.n),
                      static_cast<long long>(op.k));
      return b;
    case core::OpKind::kAttention:
      std::snprintf(b, sizeof b, "%lldx%lld %lldx%lld d%lld", static_cast<long long>(op.attn_batch),
                    static_cast<long long>(op.heads), static_cast<long long>(op.seq_q),
                    static_cast<long long>(op.seq_kv), static_cast<long long>(op.head_dim_qk));
      return b;
    case core::OpKind::kCollective:
    case core::OpKind::kP2p: return core::Name(op.collective);
    default:
      if (op.batch <= 1) return "";
      std::snprintf(b, sizeof b, "x%lld kernels", static_cast<long long>(op.batch));
      return b;
  }
}

std::string CostedOpHow(const CostedOp& c) {
  const core::Op& op = c.op;
  char b[160];
  // A hybrid model's block (or a share of the layers): FLOPs, bytes and time are the share's, per
  // layer of the list averaged over its layers.
  std::string in_share;
  if (op.share < 1.0 && op.kind != core::OpKind::kAttention) {
    std::snprintf(b, sizeof b, ", in %.0f%% of the layers", 100 * op.share);
    in_share = b;
  }
  switch (op.kind) {
    case core::OpKind::kGemm:
      // A kernel shorter than t_k takes t_k (ComputeOpTime): "kernel-bound", per kernel.
      std::snprintf(b, sizeof b, "%.0f TFLOP/s, %s%s", c.time_s > 0 ? op.Flops() / c.time_s / 1e12 : 0.0,
                    c.kernel_bound   ? "kernel-bound"
                    : c.memory_bound ? "memory-bound"
                                     : "compute-bound",
                    c.kernel_bound && op.batch > 1 ? " (each of its kernels)" : "");
      if (c.alignment < 1.0) {
        // GemmAlignmentEfficiency: cuBLAS's kernels for rows that are not 16-byte multiples.
        const std::string done = b;
        std::snprintf(b, sizeof b, ", %s width off a multiple of 8 (x%.3f)",
                      core::GpuSpec::MisalignedGemm::Kind(op.n, op.k), c.alignment);
        return done + b + in_share;
      }
      return b + in_share;
    case core::OpKind::kAttention: {
      std::snprintf(b, sizeof b, "%.0f TFLOP/s, %s%s", c.time_s > 0 ? op.Flops() / c.time_s / 1e12 : 0.0,
                    core::Name(op.attention), op.causal ? ", causal" : "");
      std::string how = b;
      // The FLOPs and time are the share's: per layer of the list, averaged over its layers.
      if (op.window > 0) how += ", window " + std::to_string(op.window);
      if (op.share < 1.0) {
        std::snprintf(b, sizeof b, ", in %.0f%% of the layers", 100 * op.share);
        how += b;
      }
      return how;
    }
    case core::OpKind::kCollective:
    case core::OpKind::kP2p: {
      std::snprintf(b, sizeof b, "%s %lld ranks (%lld x %lld domains), %s", core::Name(op.group),
                    static_cast<long long>(c.span.size), static_cast<long long>(c.span.per_domain),
                    static_cast<long long>(c.span.domains), c.algorithm);
      std::string note = b;
      if (c.fused()) {
        if (std::string_view(c.pairing) == "AsyncTP")
          std::snprintf(b, sizeof b, "; fused with its GEMMs (AsyncTP), %.1f us of it exposed", c.exposed_s * 1e6);
        else
          std::snprintf(b, sizeof b, "; beside its GEMM (%s), %.1f us of it exposed, slows compute by %.3f", c.pairing,
                        c.exposed_s * 1e6, c.slowdown);
        note += b;
      } else if (c.hidden) {
        std::snprintf(b, sizeof b, "; may hide, slows compute by %.3f", c.slowdown);
        note += b;
      } else {
        note += "; exposed";
      }
      return note + in_share;
    }
    default:
      // Off the GPU (core::OpSite, ZeRO-Offload's step): the link's or the host's rate per rank.
      if (op.site != core::OpSite::kGpu) {
        std::snprintf(b, sizeof b, "%.1f GB/s, %s", c.time_s > 0 ? static_cast<double>(op.bytes) / c.time_s / 1e9 : 0.0,
                      op.site == core::OpSite::kHostLink
                          ? "over the GPU's host link"
                          : "the host CPUs over host memory, shared by the node's ranks");
        return b;
      }
      std::snprintf(b, sizeof b, "%.2f TB/s%s",
                    c.time_s > 0 ? op.share * static_cast<double>(op.bytes) / c.time_s / 1e12 : 0.0,
                    op.group != core::CommGroup::kNone ? "; part of its collective (exposed)" : "");
      return b + in_share;
  }
}

const char* PassShortName(core::Pass p) {
  switch (p) {
    case core::Pass::kForward: return "fwd";
    case core::Pass::kBackwardInput: return "bwd-in";
    case core::Pass::kBackwardWeight: return "bwd-w";
    case core::Pass::kRecompute: return "recomp";
    case core::Pass::kStep: return "step";
  }
  return "?";
}

}  // namespace meshplan::sim
