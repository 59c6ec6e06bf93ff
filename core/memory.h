// Memory per GPU, per pipeline stage: model states (weights, gradients, master weights, optimizer
// moments) by dtype and ZeRO stage over their sharding group, activations derived tensor by
// tensor (Korthikanti et al. 2022, "Reducing Activation Recomputation", Table 2, generalised to
// GQA/MLA, SwiGLU, MoE, flash attention and context parallelism), pipeline in-flight microbatches
// per schedule, embedding and loss buffers on the first and last stage, and named fixed overheads.
// The formulas and their sources are in docs/memory.md. Pure functions; thread-safe.
#ifndef MESHPLAN_CORE_MEMORY_H_
#define MESHPLAN_CORE_MEMORY_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/specs.h"
#include "core/status.h"

namespace meshplan::core {

// Fixed per-GPU overheads: explicit, named, and overridable (a calibration profile replaces them).
struct MemoryOverheads {
  // CUDA context with lazy module loading (CUDA >= 11.7), cuBLAS's kernels loaded: 685 MiB of device
  // memory beyond PyTorch's reserved bytes on an H200 (driver 580.159.04, CUDA 13.0, PyTorch 2.11)
  // after its first bf16 GEMM, 619 MiB before it (tests/data/gpu/h200-2026-11-28/probes.json,
  // scripts/gpu_probes.py context_attention). Other drivers and GPUs differ: measure yours the same way.
  int64_t cuda_context_bytes = 685 * (int64_t{1} << 20);
  // cuBLAS workspace: 32 MiB, the size the cuBLAS documentation recommends for Hopper
  // (CUBLAS_WORKSPACE_CONFIG=:4096:8).
  int64_t cublas_workspace_bytes = 32 * (int64_t{1} << 20);
  // NCCL: NCCL_BUFFSIZE (default 4 MiB) per channel per ring neighbour (2), per communicator.
  int64_t nccl_buffsize_bytes = 4 * (int64_t{1} << 20);
  int64_t nccl_channels = 16;
  // Caching-allocator fragmentation, as a fraction of activation memory. An assumption until a
  // calibration measures it: reported as its own line so nobody mistakes it for the model.
  double fragmentation_frac = 0.05;
};

// One saved tensor (or group of tensors) of a layer, per microbatch, on one GPU.
struct ActivationTerm {
  std::string name;  // "q", "softmax_output", "fc2_input", ...
  int64_t bytes = 0;
};

// Bytes of `elems` inputs of a linear layer as its quantized GEMM holds them (FP8: 1 B, block
// scaling a scale byte per 32 more; NVFP4: 9/16 B, rounded up), 2 or 4 B in other precisions:
// what Transformer Engine saves for the backward and what it all-gathers under SP.
int64_t LinearInputBytes(const PlanSpec& p, int64_t elems);

// Activations one layer keeps for backward, per microbatch, on one GPU, under `recompute`.
// REQUIRES: the plan is valid for the model (ValidatePlan).
std::vector<ActivationTerm> LayerActivationTerms(const ModelSpec& m, const PlanSpec& p, bool moe_layer,
                                                 Recompute recompute);
int64_t LayerActivationBytes(const ModelSpec& m, const PlanSpec& p, bool moe_layer, Recompute recompute);
// Activation offloading (PlanSpec::offload_activation_layers): the bytes one microbatch's first N
// layers save for their backward (LayerActivationBytes without recomputation, each layer's kind),
// which go to host memory and cross the host link each way.
int64_t OffloadedActivationBytes(const ModelSpec& m, const PlanSpec& p);
// Fine-grained activation offloading (PlanSpec::offload_modules): the bytes one layer of the kind
// saves inside the offloaded modules, per microbatch (the plan's recomputation applied), which go
// to host memory and cross the host link each way; 0 with none.
int64_t FineGrainedOffloadBytes(const ModelSpec& m, const PlanSpec& p, bool moe_layer);

struct StageMemory {
  int64_t stage = 0;            // pipeline rank
  std::vector<int64_t> layers;  // model layer indices this rank holds
  int64_t mtp_layers = 0;       // multi-token-prediction modules it holds (the last stage's)
  int64_t params = 0;           // parameters this GPU holds before ZeRO sharding
  int64_t dense_params = 0;     // ... of which sharded over the dense ZeRO group
  int64_t expert_params = 0;    // ... of which sharded over the expert data-parallel group
  int64_t weights_bytes = 0;
  int64_t grads_bytes = 0;
  int64_t master_weights_bytes = 0;
  int64_t optimizer_moments_bytes = 0;
  int64_t optimizer_bytes = 0;          // master weights + moments (the ZeRO paper's K=12 share)
  double inflight_microbatches = 0;     // in units of this rank's whole set of layers
  int64_t layer_activations_bytes = 0;  // per microbatch, all of this rank's layers
  int64_t embedding_activations_bytes = 0;
  int64_t loss_activations_bytes = 0;
  int64_t recompute_working_bytes = 0;
  int64_t deferred_wgrad_bytes = 0;  // last stage: logits gradients kept for a deferred head wgrad
  // The pipeline runtime's per-microbatch tensors (PlanSpec::keep_pp_outputs): the last stage's
  // kept logits of the step's other microbatches, other stages' kept outputs and gradient
  // receive buffers.
  int64_t pipeline_buffers_bytes = 0;
  // Activation offloading (PlanSpec::offload_activation_layers): the offloaded layers' saved
  // tensors of one microbatch, in host memory (counted in host_bytes), not in the activations;
  // with fine-grained offloading (PlanSpec::offload_modules) the named modules' saved tensors of
  // one microbatch, less the one layer's kept on the GPU.
  int64_t offloaded_activations_bytes = 0;
  // Checkpoints in host memory (PlanSpec::offload_checkpoints): full recomputation's layer inputs
  // of one microbatch, in host memory (counted in host_bytes for every microbatch in flight), not
  // in the activations.
  int64_t offloaded_checkpoints_bytes = 0;
  int64_t activations_bytes = 0;
  int64_t cuda_context_bytes = 0;
  int64_t cublas_workspace_bytes = 0;
  int64_t te_workspace_bytes = 0;  // Transformer Engine's own cuBLAS workspaces (plan.transformer_engine)
  int64_t nccl_bytes = 0;
  int64_t zero3_prefetch_bytes = 0;
  // DeepSpeed 0.3's per-tensor ZeRO-3 (Zero3Gather::kPerTensor): its reduce buckets and the whole
  // gradients it holds for their reduce-scatter, with the activation gradients alive beside them,
  // at the backward's peak (docs/memory.md §4).
  int64_t zero3_grad_bytes = 0;
  int64_t fragmentation_bytes = 0;
  // FSDP2 (zero3_gather fsdp2, ZeRO >= 1): its sharded gradients, the reduce-scatter outputs, which
  // live in the reduce-scatter stream's pool of the caching allocator. Under ZeRO-2/3 they are the
  // gradients above (grads_bytes); under ZeRO-1 (pipeline parallelism) they come beside the
  // unsharded accumulators and are counted in other_bytes. rs_pool_idle_bytes: the part of them
  // that pool holds reserved but not allocated at the activations' peak (docs/memory.md §4).
  int64_t rs_pool_bytes = 0;
  int64_t rs_pool_idle_bytes = 0;
  // FSDP2: what its all-gather copy-in stream's pool holds idle at the activations' peak, the
  // largest flat all-gather buffer (the root module's: embedding, final norm, untied head) less the
  // one block's buffer that may still be held; reserved, not allocated (docs/memory.md §4).
  int64_t ag_pool_idle_bytes = 0;
  // DeepSpeed's BF16_Optimizer (PlanSpec::keep_lp_grads): at the step its engine casts the fp32
  // gradient buffer to the weights dtype, its communication dtype, for the data-parallel
  // all-reduce, after the microbatches' activations were freed. The caching allocator keeps those
  // freed blocks and cannot serve the copy from them, so the copy comes on top of the activations'
  // peak in reserved memory while the GPU has room; where it has none, the allocator frees its
  // cached blocks and retries, and the step's own peak (states and the copy) is what must fit
  // (docs/memory.md §4). step_copy_bytes: the copy; step_copy_on_top_bytes: what it adds to the
  // stage's total; step_copy_idle_bytes: the part of that reserved, not allocated, at the peak.
  int64_t step_copy_bytes = 0;
  int64_t step_copy_on_top_bytes = 0;
  int64_t step_copy_idle_bytes = 0;
  int64_t other_bytes = 0;
  int64_t total_bytes = 0;  // on the GPU
  int64_t host_bytes = 0;   // offloaded to CPU memory
  int64_t nvme_bytes = 0;   // offloaded to NVMe
  // Of host_bytes and nvme_bytes: the model states offload moved there (master weights and moments,
  // the weight shard), which a checkpoint saves as it does those on the GPU (core::EstimateCheckpoint).
  int64_t offloaded_state_bytes = 0;
};

// The three numbers a user compares a stage with (docs/memory.md §4):
// - peak allocated: what the framework's caching allocator hands out at the peak
//   (torch.cuda.max_memory_allocated; Megatron-LM's "mem-max-allocated-bytes"): the stage total
//   less the CUDA context and NCCL's buffers (cudaMalloc'd by NCCL outside the allocator), less
//   the allocator's fragmentation and less what FSDP2's reduce-scatter and all-gather stream
//   pools hold idle at the activations' peak (rs_pool_idle_bytes, ag_pool_idle_bytes) and the
//   part of the BF16_Optimizer's step copy that is not allocated at the peak (step_copy_idle_bytes);
// - peak reserved: the segments the allocator holds (torch.cuda.max_memory_reserved,
//   torchtitan's logged "memory"): allocated plus fragmentation plus those idle pools;
// - on the GPU (nvidia-smi): reserved plus the CUDA context and NCCL's buffers = total_bytes.
// The fit verdict compares the last with the GPU's memory: that is what must fit on the device.
// The CUDA context a stage holds: the plan's where it sets one (its software's own measurement),
// else the profile's.
// FSDP2's two rules the report and the GUI also print (docs/memory.md §2, §4): under ZeRO-3 with a
// master copy it keeps no low-precision shard (the shard is the master weight), and its
// reduce-scatter pool comes on top of the stage's gradients only under ZeRO-1 (torchtitan's stages
// under pipeline parallelism); under ZeRO-2/3 it holds the gradients themselves.
inline bool Fsdp2KeepsNoLowPrecisionShard(const PlanSpec& p) {
  return p.zero >= 3 && p.zero3_gather == Zero3Gather::kFsdp2 && p.dtypes.master_weights != Dtype::kNone;
}
inline int64_t RsPoolOnTopBytes(const StageMemory& st, const PlanSpec& p) { return p.zero < 2 ? st.rs_pool_bytes : 0; }
// The stage's allocations a framework makes through PyTorch's allocator beyond the model states,
// the activations and the step copy: the gathered ZeRO-3/FSDP layers, DeepSpeed 0.3's ZeRO-3
// gradient buffers, Transformer Engine's workspaces and FSDP2's two pools (what meshplan-run holds
// as its buffers).
inline int64_t FrameworkBufferBytes(const StageMemory& st, const PlanSpec& p) {
  return st.zero3_prefetch_bytes + st.zero3_grad_bytes + st.te_workspace_bytes + RsPoolOnTopBytes(st, p) +
         st.ag_pool_idle_bytes;
}
inline int64_t CudaContextBytes(const PlanSpec& p, const MemoryOverheads& o) {
  return p.cuda_context_bytes > 0 ? p.cuda_context_bytes : o.cuda_context_bytes;
}
inline int64_t PeakReservedBytes(const StageMemory& st) {
  return st.total_bytes - st.cuda_context_bytes - st.nccl_bytes;
}
// What the allocator holds reserved but not allocated at the peak beside fragmentation: FSDP2's
// idle stream pools and the part of the BF16_Optimizer's step copy not allocated then.
inline int64_t IdleReservedBytes(const StageMemory& st) {
  return st.rs_pool_idle_bytes + st.ag_pool_idle_bytes + st.step_copy_idle_bytes;
}
inline int64_t PeakAllocatedBytes(const StageMemory& st) {
  return PeakReservedBytes(st) - st.fragmentation_bytes - IdleReservedBytes(st);
}
// The least a stage can hold on the GPU: its peak allocated plus the CUDA context and NCCL's
// buffers. PyTorch's caching allocator holds the rest of its reserve (fragmentation, the idle
// stream pools) only while the GPU has room: "If the cudaMalloc fails, the allocator will free all
// cached blocks that are not split and retry the allocation" (c10/cuda/CUDACachingAllocator.cpp,
// its header comment since the THC allocator), so a stage above its total but within this may run,
// each retry a cudaFree that waits for the device, and one above this cannot (docs/memory.md §4).
inline int64_t LeastOnGpuBytes(const StageMemory& st) {
  return PeakAllocatedBytes(st) + st.cuda_context_bytes + st.nccl_bytes;
}

// The fit verdict (docs/memory.md §4): kFits, every stage's total within the GPU's memory;
// kTight, some stage's total over it but every stage's LeastOnGpuBytes within it (it runs only if
// the allocator frees its cached blocks, and only if the blocks it cannot free, split ones, stay
// under the headroom); kDoesNotFit, some stage's LeastOnGpuBytes over it.
enum class FitVerdict : uint8_t { kFits, kTight, kDoesNotFit };
// "fits", "tight", "out_of_memory"
const char* FitVerdictName(FitVerdict v);

struct MemoryReport {
  ParamCount params;
  std::vector<StageMemory> stages;
  int64_t worst_stage = 0;
  int64_t per_gpu_bytes = 0;   // total of the worst stage
  int64_t capacity_bytes = 0;  // gpu.CapacityBytes(): what CUDA reports, else the physical memory
  // per_gpu_bytes within capacity_bytes: the plan fits with the allocator's whole reserve. What the
  // search, the fit advice and `explain` require.
  bool fits = false;
  int64_t least_per_gpu_bytes = 0;  // the largest LeastOnGpuBytes of any stage
  FitVerdict verdict = FitVerdict::kDoesNotFit;
  int64_t dense_shard_group = 1;   // ranks the dense states are sharded over
  int64_t expert_shard_group = 1;  // ranks the expert states are sharded over
  double bytes_per_param = 0;      // unsharded model-state bytes per parameter (16 for mixed Adam)
};

// Model-state bytes of `params` parameters under the plan's dtypes, optimizer and ZeRO stage,
// sharded over `group` ranks (Rajbhandari et al. 2020 §5.1: P_os shards master weights and
// moments, P_os+g also gradients, P_os+g+p also weights). Doubles: the ZeRO paper's tables are
// written for a round Psi such as 7.5e9.
struct ModelStateBytes {
  double weights = 0, grads = 0, master_weights = 0, moments = 0;
  double Optimizer() const { return master_weights + moments; }
  double Total() const { return weights + grads + master_weights + moments; }
};
double BytesPerParam(const PlanSpec& p);  // unsharded: 16 for bf16 mixed-precision Adam
ModelStateBytes ShardedModelStates(double params, const PlanSpec& p, int64_t group);

// The optimizer's state buffers per parameter beside the master weights: Adam/AdamW (and 8-bit
// Adam) keep m and v, SGD-momentum and Muon one buffer (Muon's momentum; the parameters it leaves
// to Adam keep two, counted by the memory model per stage).
int MomentBuffers(Optimizer o);

// kTotalsOnly is the search's hot path: MemoryReport::stages holds only the worst stage (its
// `stage` field says which; worst_stage and per_gpu_bytes are as with kFull) and its `layers`
// list is empty; every byte count is the same as kFull's.
enum class MemoryDetail { kFull, kTotalsOnly };

// REQUIRES: ValidatePlan(plan, model, gpu, cluster) reported no errors. `params`, when given, is
// CountParams(m), which a caller estimating many plans of one model (the search) counts once.
MemoryReport EstimateMemory(const ModelSpec& m, const PlanSpec& p, const GpuSpec& g,
                            const MemoryOverheads& overheads = {}, MemoryDetail detail = MemoryDetail::kFull,
                            const ParamCount* params = nullptr);
// The same into `out`, replacing all of it but the capacity of its stages: a caller that reuses one
// report (each search worker) estimates plan after plan without allocating.
void EstimateMemory(const ModelSpec& m, const PlanSpec& p, const GpuSpec& g, const MemoryOverheads& overheads,
                    MemoryDetail detail, const ParamCount* params, MemoryReport* out);

// Parameters of one layer held by one GPU, before ZeRO sharding: `dense` (sharded over the dense
// data-parallel group) and `expert` (routed experts, sharded over the expert-data-parallel group).
struct RankParams {
  int64_t dense = 0;
  int64_t expert = 0;
};
RankParams LayerParamsOnRank(const ModelSpec& m, const PlanSpec& p, const LayerParams& lp);

// Model layers held by pipeline rank `stage`, in execution order (all its virtual chunks).
std::vector<int64_t> StageLayers(const ModelSpec& m, const PlanSpec& p, int64_t stage);
// The layer ranges [first, first + count) a pipeline rank holds, one per model chunk, handed to
// `fn(first, count)` without allocating (the hot path of the step model and the search).
template <typename Fn>
void ForEachStageChunk(const ModelSpec& m, const PlanSpec& p, int64_t stage, Fn fn) {
  const int64_t chunks = p.pp * p.vpp;
  auto in_chunk = [&](int64_t c) { return p.stage_layers.empty() ? m.layers / chunks : p.stage_layers[c]; };
  auto visit = [&](int64_t chunk) {
    int64_t first = 0;
    if (p.stage_layers.empty()) first = chunk * (m.layers / chunks);
    else
      for (int64_t c = 0; c < chunk; ++c) first += in_chunk(c);
    fn(first, in_chunk(chunk));
  };
  if (p.schedule == Schedule::kDualPipe) {
    visit(stage);
    if (p.pp - 1 - stage != stage) visit(p.pp - 1 - stage);
    return;
  }
  for (int64_t v = 0; v < p.vpp; ++v) visit(v * p.pp + stage);
}
// First layer of every model chunk (pp x vpp of them, execution order) and, last, m.layers: one
// pass over plan.stage_layers, so that a loop over all ranks visits their chunks in linear time.
std::vector<int64_t> ChunkStarts(const ModelSpec& m, const PlanSpec& p);
// The same into `out`, reusing its storage (hot paths keep one per thread: no allocation).
void ChunkStarts(const ModelSpec& m, const PlanSpec& p, std::vector<int64_t>* out);
// ForEachStageChunk with the chunk starts computed once (`starts` = ChunkStarts(m, p)).
template <typename Fn>
void ForEachStageChunk(const std::vector<int64_t>& starts, const PlanSpec& p, int64_t stage, Fn fn) {
  auto visit = [&](int64_t c) {
    const size_t i = static_cast<size_t>(c);
    fn(starts[i], starts[i + 1] - starts[i]);
  };
  if (p.schedule == Schedule::kDualPipe) {
    visit(stage);
    if (p.pp - 1 - stage != stage) visit(p.pp - 1 - stage);
    return;
  }
  for (int64_t v = 0; v < p.vpp; ++v) visit(v * p.pp + stage);
}
// What pipeline rank `stage` holds, as the step model and the simulators count it: its dense and
// MoE layers, and whether it has the model's first layer (and so the embedding) or its last (the
// head). `starts` = ChunkStarts(m, p).
struct StageComposition {
  int64_t dense = 0, moe = 0;
  // Of those, the layers that keep their GEMMs in BF16 under a quantized precision
  // (PlanSpec::KeepsLayerInBf16; 0 unless the plan has some and its precision is fp8 or nvfp4).
  int64_t bf16_dense = 0, bf16_moe = 0;
  bool first = false, last = false;
  friend bool operator==(const StageComposition&, const StageComposition&) = default;
};
inline StageComposition StageCompositionOf(const ModelSpec& m, const PlanSpec& p, const std::vector<int64_t>& starts,
                                           int64_t stage) {
  StageComposition s;
  const bool bf16 = p.HasBf16Layers();
  ForEachStageChunk(starts, p, stage, [&](int64_t begin, int64_t count) {
    const int64_t moe_here = m.MoeLayersBefore(begin + count) - m.MoeLayersBefore(begin);
    s.moe += moe_here;
    s.dense += count - moe_here;
    if (bf16) {
      // The chunk's share of the BF16 ranges [0, start) and [layers - end, layers).
      const int64_t ranges[2][2] = {{0, p.bf16_layers_at_start}, {m.layers - p.bf16_layers_at_end, m.layers}};
      int64_t covered = begin;  // the two ranges may meet: count no layer twice
      for (const auto& r : ranges) {
        const int64_t a = std::max({r[0], begin, covered}), b = std::min(r[1], begin + count);
        if (a >= b) continue;
        const int64_t moe_bf16 = m.MoeLayersBefore(b) - m.MoeLayersBefore(a);
        s.bf16_moe += moe_bf16;
        s.bf16_dense += b - a - moe_bf16;
        covered = b;
      }
    }
    s.first |= begin == 0;
    if (begin + count == m.layers) {
      s.last = true;
      // The MTP modules run on the stage with the last decoder layer (Megatron-Core
      // mtp_on_this_rank), each one layer of that layer's kind (core/params.h); a hybrid model's
      // one costed layer per block of its mtp_pattern (ModelSpec::MtpCostedLayers).
      if (m.mtp_layers > 0) (m.MtpLayerIsMoe() ? s.moe : s.dense) += m.MtpCostedLayers();
    }
  });
  return s;
}
// The kinds of pipeline rank a plan has and which rank is of which kind: what the step model
// and the totals-only memory estimate walk instead of every rank. It depends only on the model's
// layer count and MoE layout and on pp, vpp, the layer split and whether the schedule is DualPipe.
struct RankLayout {
  std::vector<StageComposition> kinds;  // in order of their first rank
  std::vector<int64_t> first_rank;      // per kind: its lowest rank
  std::vector<int64_t> last_rank;       // per kind: its highest rank
  std::vector<int64_t> count;           // per kind: how many ranks are of it
  std::vector<uint32_t> kind_of;        // per rank: its kind
};
// The layout of `p`. The reference is to the calling thread's copy and stays valid until its next
// call; consecutive calls with the same inputs (the search tries many variants of one pipeline
// shape) return it without recomputing.
const RankLayout& RankLayoutOf(const ModelSpec& m, const PlanSpec& p);

// The same layers, handed to `fn` one by one.
template <typename Fn>
void ForEachStageLayer(const ModelSpec& m, const PlanSpec& p, int64_t stage, Fn fn) {
  ForEachStageChunk(m, p, stage, [&](int64_t first, int64_t count) {
    for (int64_t l = first; l < first + count; ++l) fn(l);
  });
}

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_MEMORY_H_
