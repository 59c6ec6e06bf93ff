// The four specs every meshplan computation starts from: ModelSpec (architecture), GpuSpec (one
// accelerator), ClusterSpec (nodes and networks) and PlanSpec (how a run is parallelised).
// Plain value types: parsing, validation and JSON live in core/spec_json.h; presets in
// core/presets.h. Field names equal their JSON keys; units are in the names.
// Thread-safety: values, safe to copy between threads.
#ifndef MESHPLAN_CORE_SPECS_H_
#define MESHPLAN_CORE_SPECS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace meshplan::core {

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------
enum class MlpKind { kGelu, kSwiglu };                       // gelu: 2 matrices (h->f->h); swiglu: 3 (gate, up, down)
enum class NormKind { kLayerNorm, kRmsNorm };                // layernorm: weight+bias (2h); rmsnorm: weight (h)
enum class PositionKind { kLearned, kRope, kAlibi, kNone };  // learned adds max_seq*h parameters
enum class BiasKind { kNone, kQkv, kAll };                   // qkv: q/k/v projections only; all: every linear
// flash: the fastest fused kernel on the GPU (cuDNN's fused attention or FlashAttention-3 on
// Hopper, as Transformer Engine runs it; FlashAttention-2 on Ampere); flash2: FlashAttention-2
// itself (PyTorch SDPA's flash backend, the flash-attn 2 package) wherever it runs, the same
// memory as flash but the kernel's own speed; naive keeps the s^2 scores (Korthikanti 2022).
// flash is the kernel as last measured; cudnn-9.13 is cuDNN's as it ran before cuDNN 9.17 (9.10 to
// 9.13, NGC PyTorch containers 25.05 to 25.09), measured on Blackwell, where it ran a quarter
// slower at 8k tokens and more at shorter ones (docs/compute.md). cudnn-fp8 is cuDNN's FP8 fused
// attention, which a plan runs with plan.fp8_attention (a GPU curve, never a model's kernel).
enum class AttentionImpl : uint8_t { kFlash, kNaive, kFlash2, kFlash1, kTriton, kCudnn913, kCudnnFp8 };
enum class RouterKind { kSoftmax, kSigmoid };

// Multi-head latent attention (DeepSeek-V2/V3): low-rank q and kv projections.
struct MlaSpec {
  int64_t q_lora_rank = 0;  // 0: q is a full projection h -> heads*(nope+rope)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  friend bool operator==(const MlaSpec&, const MlaSpec&) = default;
};

struct MoeSpec {
  int64_t experts = 0;                   // routed experts per MoE layer
  int64_t top_k = 0;                     // routed experts each token visits
  int64_t expert_ffn_hidden = 0;         // intermediate size of one routed expert
  int64_t shared_experts = 0;            // always-active experts (DeepSeek MoE)
  int64_t shared_expert_ffn_hidden = 0;  // intermediate size of one shared expert
  int64_t first_dense_layers = 0;        // the first k layers keep a dense MLP (DeepSeek-V3: 3)
  int64_t layer_freq = 1;                // every n-th layer (after the dense ones) is MoE
  RouterKind router = RouterKind::kSoftmax;
  bool router_bias = false;    // a bias (or score-correction vector) of `experts` values
  double capacity_factor = 0;  // 0: dropless; else tokens per expert cap = cf * T*k/E
  // Latent MoE (Megatron-Core moe_latent_size; Nemotron 3 Super and Ultra): the routed experts
  // work in a latent width instead of the hidden size. The router sees the hidden states;
  // fc1_latent_proj (h -> latent) before the dispatch and fc2_latent_proj (latent -> h) after the
  // combine are held whole on every TP rank (TE Linear, parallel_mode "duplicated"), so the
  // dispatch, the permutations and the experts move and multiply latent-wide tokens; the shared
  // experts see the hidden states (megatron/core/transformer/moe/moe_layer.py at d98e8a64).
  // 0: no latent projection.
  int64_t latent_size = 0;
  int64_t Width(int64_t hidden) const { return latent_size > 0 ? latent_size : hidden; }
  friend bool operator==(const MoeSpec&, const MoeSpec&) = default;
};

// A Mamba-2 mixer (Dao & Gu 2024, arXiv 2405.21060; Megatron-Core megatron/core/ssm/mamba_mixer.py
// at d98e8a64): in_proj h -> z, x (heads x head_dim each), B, C (groups x state each) and dt
// (heads); a depthwise causal conv1d of conv_kernel taps over x, B and C (with a bias); the SSD
// scan in chunks of `chunk` tokens; a gated RMSNorm over x's width; out_proj back to h. Tensor
// parallelism splits heads and groups.
struct MambaSpec {
  int64_t heads = 0;        // mamba_num_heads
  int64_t head_dim = 64;    // mamba_head_dim (P)
  int64_t state = 128;      // mamba_state_dim (N)
  int64_t groups = 8;       // mamba_num_groups (G)
  int64_t conv_kernel = 4;  // d_conv
  int64_t chunk = 128;      // the SSD's chunk length (mamba_chunk_size)
  int64_t Inner() const { return heads * head_dim; }
  // in_proj's output width: z and x (Inner() each), B and C (groups x state each), dt (heads).
  int64_t InProjWidth() const { return 2 * Inner() + 2 * groups * state + heads; }
  friend bool operator==(const MambaSpec&, const MambaSpec&) = default;
};

// The layers of a hybrid model by kind (ModelSpec::hybrid_pattern).
struct HybridCounts {
  int64_t mamba = 0, attention = 0, mlp = 0, moe = 0;
};

// The most layers a model may have (ValidateModel; the HF config reader refuses more before it
// builds anything per layer): the deepest published LLMs have a few hundred.
inline constexpr int64_t kMaxModelLayers = 10000;

struct ModelSpec {
  std::string name;
  std::string source;  // citation: paper/model card/config the numbers come from
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;    // == heads: MHA; 1: MQA; between: GQA
  int64_t head_dim = 0;    // usually hidden/heads
  int64_t ffn_hidden = 0;  // dense MLP intermediate size
  MlpKind mlp = MlpKind::kGelu;
  int64_t vocab = 0;
  int64_t max_seq = 0;
  bool tied_embeddings = false;
  PositionKind position = PositionKind::kRope;
  NormKind norm = NormKind::kRmsNorm;
  BiasKind bias = BiasKind::kNone;
  bool qk_norm = false;          // per-head RMSNorm on q and k (Qwen3)
  bool attention_sinks = false;  // one learned logit per head (gpt-oss)
  // RoPE's attention scaling: the factor its cos and sin carry (YaRN, Peng et al. 2023, arXiv
  // 2309.00071 §3.4: 0.1 ln(s) + 1 for a context stretched s times; Megatron-Core's
  // _yarn_get_concentration_factor, yarn_rotary_pos_embedding.py at d7288711ba, the ratio of two
  // such factors when mscale and mscale_all_dim are given). 1: plain RoPE, or YaRN whose two
  // factors cancel (DeepSeek-V3); gpt-oss 0.1 ln 32 + 1 = 1.3466. Transformer Engine's fused RoPE
  // takes no such factor, so Megatron-Core runs RoPE unfused when it is not 1 (docs/compute.md).
  double rope_mscale = 1.0;
  // A gated MLP's clamp (gpt-oss's swiglu_limit: the gate clamped from above at the limit, the
  // linear half to [-limit, limit] before the gating; Megatron-Core's activation_func_clamp_value).
  // 0: none.
  double glu_clamp = 0.0;
  bool dropout = false;  // GPT-style dropout after attention, MLP and embedding
  AttentionImpl attention = AttentionImpl::kFlash;
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  // Multi-token prediction depth (DeepSeek-V3 §2.2; Megatron-Core multi_token_prediction.py): each
  // MTP module on the last pipeline stage normalises the hidden state and the next token's
  // embedding, projects their concatenation 2h -> h (eh_proj), runs one transformer layer of the
  // last decoder layer's kind, then its own final norm, the shared output head and a loss.
  int64_t mtp_layers = 0;
  // A hybrid model's MTP module layer as hybrid_pattern blocks (Megatron-Core's pattern after
  // '/': Nemotron 3 Super's "*E", an attention block then an MoE block); required with mtp_layers
  // in a hybrid model, empty otherwise.
  std::string mtp_pattern;
  // One MTP module run mtp_layers times (Megatron-Core mtp_use_repeated_layer): its parameters
  // once, its work at every depth.
  bool mtp_shared = false;
  // Sliding-window (local) attention: a windowed layer's queries attend only the
  // `sliding_window` most recent tokens, themselves included (0: every layer attends the whole
  // sequence). Every `global_attention_every`-th layer (1-based layer number divisible by it:
  // Megatron-Core's --window-attn-skip-freq, transformer/utils.py is_layer_window_attention)
  // attends the whole sequence; 0: every layer is windowed. gpt-oss: 128 and 2 (Hugging Face
  // config.json layer_types: sliding, full, sliding, ...); Gemma 3: 1024 and 6; Mistral 7B: 4096
  // and 0.
  int64_t sliding_window = 0;
  int64_t global_attention_every = 0;
  // The windowed layers attend within aligned chunks of sliding_window tokens instead of a sliding
  // window (Llama 4's attention_chunk_size on its RoPE layers, every 4th layer global): Megatron-
  // Bridge's Llama4SelfAttention pads the sequence to a multiple of the chunk and runs the chunks as
  // separate sequences when the sequence is longer (src/megatron/bridge/models/llama/llama4_utils.py
  // chunkify at 067f987df), so a query meets the keys of its own chunk only.
  bool chunked_attention = false;
  // A hybrid model (Megatron-Core's hybrid_layer_pattern, megatron/core/models/hybrid/
  // hybrid_layer_allocation.py: Nemotron-H, Nemotron 3): one character per layer, each layer one
  // pre-norm block with its own residual: 'M' a Mamba-2 mixer (`mamba`), '*' self-attention alone,
  // '-' a dense MLP alone, 'E' an MoE block alone. Empty: every layer is a transformer layer
  // (attention, then the MLP or MoE block). meshplan costs a hybrid model's layers as one mix:
  // every layer carries each kind's ops weighted by that kind's share of the layers (exact for the
  // whole model and for pp = 1; a pipeline stage is costed at the model's mix, docs/compute.md).
  std::string hybrid_pattern;
  std::optional<MambaSpec> mamba;

  bool Hybrid() const { return !hybrid_pattern.empty(); }
  HybridCounts HybridLayerCounts() const;
  // A hybrid model with MoE blocks: all its layers are costed as "MoE layers" (the mix includes
  // the MoE block at its share), the rest as dense ones.
  bool HybridHasMoe() const { return hybrid_pattern.find('E') != std::string::npos; }

  bool IsMoeLayer(int64_t layer) const;       // REQUIRES: 0 <= layer < layers
  bool IsWindowedLayer(int64_t layer) const;  // REQUIRES: 0 <= layer < layers
  // Windowed layers among the MoE (moe = true) or dense decoder layers, or among all of them.
  int64_t WindowedLayerCount(bool moe) const;
  int64_t WindowedLayerCount() const { return WindowedLayerCount(false) + WindowedLayerCount(true); }
  int64_t MoeLayerCount() const;
  // An MTP module's layer takes the last decoder layer's spec (Megatron-Core's MTP block spec); a
  // hybrid model's is its mtp_pattern's blocks, costed in the hybrid mix (all "MoE" layers when
  // the model has MoE blocks).
  bool MtpLayerIsMoe() const { return Hybrid() ? HybridHasMoe() : layers > 0 && IsMoeLayer(layers - 1); }
  // The layers the MTP modules add to the last stage's costed layers: one per module, or in a
  // hybrid model one per block of its mtp_pattern per module.
  int64_t MtpCostedLayers() const {
    return Hybrid() ? mtp_layers * static_cast<int64_t>(mtp_pattern.size()) : mtp_layers;
  }
  // The MTP modules whose parameters the model holds (mtp_shared: one).
  int64_t MtpParamCopies() const { return mtp_layers > 0 && mtp_shared ? 1 : mtp_layers; }
  // Sets the MTP depth. At 0 the model has no MTP module, and the description of one goes with it
  // (mtp_pattern, mtp_shared: validation takes them only beside mtp_layers > 0), so a run or a
  // flag that turns a preset's MTP off leaves a model that validates and reads back from its JSON.
  void SetMtpLayers(int64_t n) {
    mtp_layers = n;
    if (n == 0) {
      mtp_pattern.clear();
      mtp_shared = false;
    }
  }
  // A hybrid model's blocks as costed: its pattern's and its MTP modules' (mtp_layers x
  // mtp_pattern), and how many costed layers they make (layers + MtpCostedLayers()).
  HybridCounts HybridCostedCounts() const;
  int64_t HybridCostedLayers() const { return layers + MtpCostedLayers(); }
  // MoE layers among layers [0, end): closed form, no loop (inline: the search calls it per stage).
  int64_t MoeLayersBefore(int64_t end) const {
    if (!hybrid_pattern.empty()) return moe && HybridHasMoe() ? end : 0;  // the mix, above
    // Layers first_dense_layers, first_dense_layers + freq, ... below `end`.
    if (!moe || end <= moe->first_dense_layers || moe->layer_freq <= 0) return 0;
    return (end - moe->first_dense_layers + moe->layer_freq - 1) / moe->layer_freq;
  }
  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// ---------------------------------------------------------------------------------------------
// GPU
// ---------------------------------------------------------------------------------------------
// kNvfp4 is NVIDIA's 4-bit block-scaled format (E2M1 values, one E4M3 scale per 16 of them and one
// fp32 scale per tensor: Transformer Engine's NVFP4BlockScaling recipe), a compute precision only:
// no weight, gradient or optimizer state is held in it (core/validate.cc).
enum class Dtype : uint8_t { kFp32, kTf32, kBf16, kFp16, kFp8, kInt8, kNone, kNvfp4 };
inline constexpr size_t kDtypeCount = static_cast<size_t>(Dtype::kNvfp4) + 1;  // the last one
// The dtypes a plan's GEMMs may compute in (plan.precision): every floating-point one; int8 and
// none name state dtypes only. kComputePrecisionChoices lists them for errors and help.
constexpr bool IsComputePrecision(Dtype d) { return d != Dtype::kInt8 && d != Dtype::kNone; }
inline constexpr const char* kComputePrecisionChoices = "fp32|tf32|bf16|fp16|fp8|nvfp4";
// fp32 4, tf32 4, bf16 2, fp16 2, fp8 1, int8 1, none 0 (inline: the search calls it per op);
// nvfp4 1: half a byte and a one-byte scale per 16 values, 9/16 B, rounded up where a whole
// number of bytes is counted (a GEMM's operand traffic); the memory model counts its 9/16
// (core/memory.cc LinearInputBytes).
constexpr int64_t DtypeBytes(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32: return 4;
    case Dtype::kBf16:
    case Dtype::kFp16: return 2;
    case Dtype::kFp8:
    case Dtype::kInt8:
    case Dtype::kNvfp4: return 1;
    case Dtype::kNone: return 0;
  }
  return 0;
}
// A GEMM dtype that Transformer Engine quantizes to from 16-bit inputs (FP8 or NVFP4): its linear
// layers' inputs and output gradients pass through quantize kernels, attention stays in BF16.
constexpr bool Quantized(Dtype d) { return d == Dtype::kFp8 || d == Dtype::kNvfp4; }

struct GpuSpec {
  std::string name;
  std::string source;
  std::map<Dtype, double> peak_flops_per_s;  // dense (not 2:4 sparse) tensor-core peak per dtype
  int64_t hbm_bytes = 0;                     // the physical memory, as the datasheet gives it
  // The memory a process can use, as CUDA reports the device's total (cudaMemGetInfo's total,
  // cudaGetDeviceProperties' totalGlobalMem, torch.cuda.get_device_properties().total_memory;
  // nvidia-smi's "FB Memory Usage" total less its "Reserved"), from the measurement named in
  // `cuda_total_source`: the driver keeps the rest (docs/memory.md §4). What the fit verdict, the
  // search's budget and `explain` compare a stage's memory on the GPU with (CapacityBytes). 0: not
  // measured, and the physical memory stands in (the report says so).
  int64_t cuda_total_bytes = 0;
  std::string cuda_total_source;
  // The memory a plan may fill: cuda_total_bytes where measured, else hbm_bytes.
  int64_t CapacityBytes() const { return cuda_total_bytes > 0 ? cuda_total_bytes : hbm_bytes; }
  double hbm_bytes_per_s = 0;
  double tdp_w = 0;
  // Streaming multiprocessors (NVIDIA) or compute units (AMD), from the architecture whitepaper
  // named in `source`: how many GEMM thread-block tiles run at once (docs/compute.md, wave
  // quantization). 0: not known, and no wave quantization is costed.
  int64_t sms = 0;
  // CUDA compute capability, major (7 Volta, 8 Ampere, 9 Hopper, 10 Blackwell); 0: not a CUDA GPU
  // or not known. Libraries size their buffers by it (Transformer Engine's cuBLAS workspace:
  // 32 MiB from 9 up, 4 MiB below; docs/memory.md §4).
  int compute_capability_major = 0;
  // The link between this GPU and its CPU's memory, per direction, from the document named in
  // `host_link_source`: what activation offloading (PlanSpec::offload_activation_layers) moves
  // the saved tensors over. 0: not known, and a plan that offloads activations is refused on this
  // GPU until it is set.
  double host_link_bytes_per_s = 0;
  std::string host_link_source;
  // Whether the GPU's GEMM library pays for a partial last wave of fixed 128x256 tiles (NVIDIA's
  // Matrix Multiplication Background guide, measured on V100/A100). false where a measurement
  // showed it does not: Hopper with cuBLAS 13.1 runs 8192x1280x8192 (81% of its last wave filled)
  // at the speed of 8192x1024x8192 (tests/data/gpu/h200-2026-11-28, docs/compute.md).
  bool gemm_wave_quantization = true;
  // The speed of a 16-bit GEMM whose leading dimensions are not multiples of 8 elements (16
  // bytes), as a fraction of the aligned speed, from the measurement named in
  // `gemm_misaligned_source`: cuBLAS then cannot take its kernels that load 16-byte vectors
  // (NVIDIA's Matrix Multiplication Background guide, "Tensor Core Requirements", which gives no
  // factor). In the framework's row-major calls the leading dimensions are a GEMM's feature widths,
  // its n and k here, whichever pass, never its token count. `even`: both widths even, one not a
  // multiple of 8; `odd`: one odd. 1: not measured, and no such GEMM is slowed (docs/compute.md).
  struct MisalignedGemm {
    double even = 1, odd = 1;
    // Which of the two a GEMM of widths n and k meets: "odd" when either is odd, "even" when either
    // is off a multiple of 8, nullptr when both are multiples of 8.
    static const char* Kind(int64_t n, int64_t k) {
      if (n % 2 != 0 || k % 2 != 0) return "odd";
      return n % 8 != 0 || k % 8 != 0 ? "even" : nullptr;
    }
    // Its fraction of the aligned speed: odd, even, or 1.
    double Of(int64_t n, int64_t k) const {
      const char* kind = Kind(n, k);
      return kind == nullptr ? 1.0 : kind[0] == 'o' ? odd : even;
    }
    friend bool operator==(const MisalignedGemm&, const MisalignedGemm&) = default;
  };
  MisalignedGemm gemm_misaligned_efficiency;
  std::string gemm_misaligned_source;
  // Per dtype, K0: the elements of the reduction (k) a GEMM tile's fixed work (its prologue, the
  // epilogue that writes the tile) costs, from the shape sweep named in `gemm_k_overhead_source`.
  // A tile's main loop runs k / (k tile) steps, so a GEMM reducing over k runs at k / (k + K0) of
  // one whose k is unbounded (docs/compute.md "A short reduction"). The sustained efficiencies
  // above are taken at `gemm_reference_k` (the reduction of the shape they were measured on), so a
  // GEMM's time is scaled by (k + K0) / k x R / (R + K0), R = gemm_reference_k: longer below it,
  // shorter above. The reduction is the forward's k, the input gradient's n and the weight
  // gradient's m (the token count). Empty (or a dtype not listed): not measured, no scaling.
  std::map<Dtype, double> gemm_k_overhead;
  std::string gemm_k_overhead_source;
  static constexpr double kGemmReferenceK = 8192;
  double gemm_reference_k = kGemmReferenceK;
  // The relative standard deviation of one GPU's sustained speed between GPUs of this SKU busy at
  // once (manufacturing and power-management variability), from the measurement named in
  // `speed_spread_source`: a synchronous job runs at its slowest GPU's pace, so sim::SlowestGpuPace
  // scales the compute of an n-GPU plan by 1 + speed_spread x E[max of n standard normals]
  // (docs/compute.md "The slowest GPU"). The efficiencies above are a typical GPU's. 0: off.
  double speed_spread = kDefaultSpeedSpread;
  std::string speed_spread_source;
  // Without a measurement for the GPU: Sinha et al., "Not All GPUs Are Created Equal:
  // Characterizing Variability in Large-Scale, Accelerator-Rich Systems", SC22 (arXiv
  // 2208.11035): 8% average performance variation between the GPUs (one SKU) of each of five
  // clusters of hundreds to thousands of GPUs, read as their range, about 6 standard deviations
  // at those sizes (2 x E[max] of 400 to 4,000 normals is 5.9-7.2): 8% / 6.
  static constexpr double kDefaultSpeedSpread = 0.013;
  // The fraction of the dense peak a long, power-saturated GEMM sustains, per dtype, from a public
  // measurement named in `gemm_efficiency_source` (docs/compute.md): what a training step sees,
  // below the short-burst best at the boost clock. Used where the calibration profile has not
  // measured its own (core::Profile::gemm_efficiency_measured); empty: the profile's default.
  std::map<Dtype, double> gemm_efficiency;
  std::string gemm_efficiency_source;
  // The fraction of the 16-bit dense peak a fused attention kernel reaches on this GPU, forward
  // and backward (FLOPs counted causal-halved), per kernel, from a public measurement named in
  // `attention_efficiency_source`; used unless the profile measured its own. Empty: the
  // profile's attention_fwd/bwd_efficiency for every kernel.
  struct AttentionEfficiency {
    double forward = 0, backward = 0;
    friend bool operator==(const AttentionEfficiency&, const AttentionEfficiency&) = default;
  };
  std::map<AttentionImpl, AttentionEfficiency> attention_efficiency;
  std::string attention_efficiency_source;
  // A kernel's measured forward + backward speed with the causal mask, by head dim and sequence
  // length (FLOPs counted as attention_efficiency's: causal halved, backward 2.5 x forward), from
  // the benchmark named in `attention_curve_source`. Where a kernel has points they win over its
  // attention_efficiency: sim::AttentionEfficiency interpolates them (docs/compute.md).
  struct AttentionPoint {
    int64_t head_dim = 0, seq = 0;
    double tflops = 0;  // TFLOP/s, forward + backward
    friend bool operator==(const AttentionPoint&, const AttentionPoint&) = default;
  };
  std::map<AttentionImpl, std::vector<AttentionPoint>> attention_curve;
  std::string attention_curve_source;
  friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

// ---------------------------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------------------------
enum class Topology { kRailOptimizedFatTree, kFatTree, kTorus, kSingleSwitch };

// The fastest checkpoint storage a cluster may name, bytes/s: the fastest parallel file systems
// write TB/s (1e12); a cluster file and reliability's --storage-bw keep below 100 TB/s.
inline constexpr double kMaxStorageBytesPerS = 1e14;

struct ClusterSpec {
  std::string name;
  std::string source;
  std::string gpu;  // GPU preset name of the nodes
  int64_t gpus_per_node = 0;
  int64_t scale_up_domain_gpus = 0;  // GPUs in one NVLink/NVSwitch (or xGMI) domain: 8, 72
  double scale_up_bytes_per_s = 0;   // per GPU, per direction
  double scale_up_latency_s = 0;
  int64_t nics_per_node = 0;
  double nic_bytes_per_s = 0;  // per NIC, per direction
  double scale_out_latency_s = 0;
  Topology topology = Topology::kRailOptimizedFatTree;
  double oversubscription = 1.0;   // >= 1; 1 = non-blocking
  bool sharp = false;              // in-network reduction on the scale-out switches
  bool nvls = false;               // NVLink SHARP in the scale-up switches
  double storage_bytes_per_s = 0;  // aggregate checkpoint storage write bandwidth, <= kMaxStorageBytesPerS
  int64_t host_memory_bytes_per_node = 0;
  // The host CPUs' memory bandwidth, all of a node's sockets together, bytes/s, and where it
  // comes from (`host_memory_bw_source`): what an optimizer offloaded to the host (ZeRO-Offload's
  // CPU Adam, PlanSpec::offload_optimizer) streams its states through. 0: not known, and a plan
  // that offloads the optimizer is refused on this cluster until it is set.
  double host_memory_bytes_per_s = 0;
  std::string host_memory_bw_source;
  double price_per_gpu_hour_usd = 0;
  friend bool operator==(const ClusterSpec&, const ClusterSpec&) = default;
};

// ---------------------------------------------------------------------------------------------
// Plan
// ---------------------------------------------------------------------------------------------
enum class Sharding { kFsdp, kHsdp };  // fsdp: shard over the whole DP(xCP) group
enum class Recompute { kNone, kSelective, kFull };
// What selective recomputation recomputes: Megatron-Core's recompute_modules
// (megatron/core/transformer/transformer_config.py, transformer_layer.py, experts.py,
// multi_latent_attention.py at d98e8a64). core_attn: the attention core (its scores, or flash
// attention's output statistics); moe_act: the experts' activation function (its output, fc2's
// input, is not kept); layernorm: the norms that are separate modules (the MoE layer's pre-MLP norm
// and MLA's input norm; a norm fused into its linear, Transformer Engine's LayerNormLinear, is
// not); mla_up_proj: MLA's q/kv up-projections and RoPE (q, k, v are not kept); mlp: a dense
// layer's whole MLP; shared_experts: the MoE layer's shared experts; moe: the whole MoE layer
// (moe_layer.py MoELayer.forward under tensor_parallel.checkpoint, or te_checkpoint under FP8: its
// router, dispatch, experts, combine and shared experts rerun in the backward, their all-to-alls
// included; it keeps its input alone, which the layernorm module's discard frees as well).
// torchtitan_op is not Megatron's: torchtitan's per-op selective checkpointing
// (selective_ac_option "op", torchtitan/parallelisms/parallelize_llama.py _save_list and
// _custom_policy at 3f20451b): each layer keeps its input and the outputs of every other aten.mm
// (the 1st, 3rd, 5th, 7th: wq, wv, w1, w2), of SDPA and of the SP reduce-scatters, and recomputes
// everything else; under FP8 the same (torchao's Float8Linear calls torch.mm on its float8
// subclass, which the policy's dispatch mode sees as aten.mm), the linears' input casts rerun.
// Dense models without MLA only, and alone in the list.
// save_qkv_proj is not Megatron's either: MaxText's remat policy of that name
// (layers/decoders.py get_remat_policy: jax.checkpoint_policies.save_only_these_names("query_proj",
// "value_proj", "key_proj", "qkv_proj"), the Q, K and V projections after RoPE), on the scanned
// decoder layer. The backward replays the layer's forward from its input with those served from
// memory, and JAX keeps of the replay only what the backward reads (jax/_src/ad_checkpoint.py
// remat_partial_eval: pe.dce_jaxpr over the staged jaxpr): the norms, the attention, its output
// projection and residual, and the MLP up to its activation; not the Q/K/V GEMMs (saved) nor the
// MLP's output GEMM, its TP reduction and residual (no gradient reads their outputs). Dense models
// without MLA only, and alone in the list.
enum class RecomputeModule {
  kCoreAttn,
  kMoeAct,
  kLayernorm,
  kMlaUpProj,
  kMlp,
  kSharedExperts,
  kTorchtitanOp,
  kSaveQkvProj,
  kMoe
};
constexpr uint32_t ModuleBit(RecomputeModule m) { return uint32_t{1} << static_cast<int>(m); }
// The last module and every module's bit (the enum is dense from 0).
constexpr RecomputeModule kLastRecomputeModule = RecomputeModule::kMoe;
constexpr uint32_t kAllRecomputeModules = (ModuleBit(kLastRecomputeModule) << 1) - 1;
constexpr uint32_t kDefaultRecomputeModules = ModuleBit(RecomputeModule::kCoreAttn);
// What fine-grained activation offloading copies to host memory (PlanSpec::offload_modules):
// Megatron-Core's offload_modules, each the tensors a submodule's forward saves for its backward
// (transformer_config.py and pipeline_parallel/fine_grained_activation_offload.py at d98e8a64).
// GatedDeltaProduct's gdp_qkv is not among them (no such mixer here).
enum class OffloadModule {
  kAttnNorm,       // the attention block's input norm: its input
  kQkvLinear,      // the QKV (or MLA down-projection) linear: its input
  kCoreAttn,       // core attention: q, k, v and what the kernel keeps
  kAttnProj,       // the attention's output projection: its input (needs core_attn)
  kMlpNorm,        // the MLP block's input norm: its input
  kExpertFc1,      // the routed experts' fc1: its input
  kMoeAct,         // the routed experts' activation: its input
  kFusedGroupMlp,  // the whole fused grouped MLP: fc1's, the activation's and fc2's inputs
};
constexpr uint32_t OffloadBit(OffloadModule m) { return uint32_t{1} << static_cast<int>(m); }
constexpr uint32_t kAllOffloadModules = (OffloadBit(OffloadModule::kFusedGroupMlp) << 1) - 1;
enum class Schedule { kGpipe, k1F1B, kInterleaved, kZeroBubble, kDualPipe };
// Muon (Jordan et al. 2024; Megatron-Core's TensorParallelMuon): momentum orthogonalised by Newton-Schulz
// for the 2D hidden weights, Adam for the embedding, the output head and the norms.
enum class Optimizer { kAdam, kAdamW, kSgdMomentum, kAdam8bit, kMuon };
enum class OffloadTarget { kNone, kCpu, kNvme };
// Context parallelism: ring (K/V blocks circulate, each exchange under an attention block),
// Ulysses (all-to-alls that trade the sequence split for a head split), or all-gather (K and V
// gathered whole before attention, exposed; Llama 3 §3.3.2, Transformer Engine's cp_comm_type
// all_gather, torchtitan's default).
enum class CpKind { kRing, kUlysses, kAllGather };
// The chunks context parallelism cuts a sequence into: the ring and the all-gather 2*cp, rank i
// holding chunks i and 2cp-1-i so that causal work is balanced (Llama 3 §3.3.2; Transformer
// Engine's all_gather requires seq_len % 2 == 0 per rank); Ulysses cp.
constexpr int64_t CpSequenceChunks(CpKind kind, int64_t cp) { return kind == CpKind::kUlysses ? cp : 2 * cp; }
enum class Axis { kTp, kCp, kEp, kDp, kPp };
enum class TpOverlap { kNone, kBackward, kFull, kAsync };
// How ZeRO-3 moves parameters and gradients. flat: one all-gather per layer before its forward and
// again before its backward, prefetched under the previous layer's compute, and the gradients
// reduce-scattered per layer (PyTorch FSDP's flat parameters; DeepSpeed's coalesced collectives).
// per-tensor: DeepSpeed 0.3's stage 3 (deepspeed/runtime/zero/stage3.py fetch_sub_module,
// partition_parameters.py _allgather_param and _reduce_scatter_gradient at v0.3.13): one
// collective per parameter tensor, each behind a torch.cuda.synchronize(), so the gathers do not
// overlap compute; each goes through PyTorch's list all_gather/reduce_scatter, which copies the
// flat buffer to or from one tensor per rank (ProcessGroupNCCL: dp copy kernels per collective);
// the forward is re-gathered for full recompute.
// fsdp2: PyTorch's FSDP2 (fully_shard; torch/distributed/_composable/fsdp/_fsdp_collectives.py at
// 415cc26): flat per layer, plus its copies on the GPU: each all-gather's output is copied into the
// per-parameter unsharded tensors on the compute stream (foreach_all_gather_copy_out:
// torch.split_with_sizes_copy, the gathered bytes read and written), and the reduce-scatter's input
// is the unsharded gradients copied and cast to the reduce dtype (foreach_reduce_scatter_copy_in:
// torch._chunk_cat). Costed with ZeRO-3 only (not under pipeline parallelism, where the stack keeps
// stages gathered).
// fsdp1: PyTorch's FSDP1 (FullyShardedDataParallel, FlatParameter), flat per layer, plus what its
// gradient path does on the GPU each backward that reduces: autograd concatenates the parameters'
// gradients into the flat parameter's (the forward's parameters are torch.split views of it:
// _flat_param.py _use_unsharded_views(as_params=False) in the forward; the SplitWithSizesBackward
// copy, which fairscale PR 1184's trace shows once per microbatch and FSDP module), casts that
// unsharded gradient to the reduce dtype when it differs and divides it in place by the
// predivide factor before the reduce-scatter (_runtime_utils.py _post_backward_hook at
// 00ae0bc91a, default_hooks.py reduce_scatter_hook). Outside no_sync() every microbatch's backward
// reduce-scatters (Composer's trainer, which drives it for LLM Foundry, uses no_sync for DDP only:
// trainer.py at v0.17.2), and SHARD_GRAD_OP (ZeRO-2) gathers again for every forward. Costed with
// ZeRO-2 and ZeRO-3.
enum class Zero3Gather { kFlat, kPerTensor, kFsdp2, kFsdp1 };
// How FP8 GEMM operands are scaled (Transformer Engine recipes), which sets the memory traffic of
// quantizing each FP8 GEMM's input in the forward and its output gradient in the backward, both
// row- and column-wise (the wgrad GEMM reads the transpose): delayed (amax from history, one
// cast-transpose pass: read 2 B, write 1 + 1 B per element), current (Float8CurrentScaling: an
// amax pass first, TE v2.9 quantizer.cpp quantize_impl: +2 B), block (per-tile scales, DeepSeek-V3
// report §3.5.2: quantize 1x128 tiles in the forward, read back, transpose and re-quantize for the
// backward: 2 + 1 + 1 + 1 B).
enum class Fp8Scaling { kDelayed, kCurrent, kBlock };
// How the loss turns the logits into a cross entropy, which sets the bytes per logit the last
// stage holds at the loss (docs/memory.md) and the passes its kernels make over them
// (docs/compute.md). fused: Megatron-Core's vocab_parallel_cross_entropy, what runs without
// --cross-entropy-loss-fusion (tensor_parallel/cross_entropy.py at d98e8a64, the same steps at
// f2e5db402c): logits.float(), exp in place, saved for the backward: the bf16 logits and one fp32
// buffer, 6 B; its eager in-place ops pass over the logits six times forward and twice backward.
// te: Transformer Engine's parallel_cross_entropy (--cross-entropy-fusion-impl te; Triton kernels,
// triton/cross_entropy.py at d0067d0d): an online softmax over the bf16 logits, then one kernel
// that writes the loss and an fp32 gradient beside them, 6 B (TE v2.18 on: #3193, 01bbe3eea,
// 2026-07-09). te-inplace: the same kernels before #3193 (TE v2.17.1 and earlier: every
// Megatron-Bridge release's pinned TE, uv.lock v0.2.0 2.9.0 to v0.6.0 2.17.1): the gradient is
// written over the bf16 logits in place, 2 B. upcast: the bf16 logits upcast with .float() into
// PyTorch's cross_entropy (torchtitan 2024, train.py loss_fn at 3f20451b): at its backward the
// saved fp32 log-softmax, the fp32 gradient flowing in and the one flowing out are alive at once,
// 12 B (at the forward's end: bf16 logits 2 + fp32 copy 4 + log-softmax 4 = 10 B). With tp > 1
// the logits are vocab-sharded and the loss runs under loss_parallel, whose DTensor handlers
// decompose both passes (torch/distributed/tensor/parallel/loss.py, torch 2.5-2.6: `_log_softmax`
// keeps the fp32 input, `shifted`, `exp(shifted)` and the result, 14 B with the bf16 logits;
// `_nll_loss_and_log_softmax_backward` holds the saved result, `zeros_like` grad_input,
// `exp(x)` and their sum, 16 B): 16 B. flash:
// FlashAttention's cross entropy (flash_attn/ops/triton/cross_entropy.py: saves the bf16 logits
// and per-row log-sum-exp, its backward allocates the bf16 gradient; LLM Foundry's MPT default
// loss_fn fused_crossentropy, modeling_mpt.py at 7f7c0979), 4 B. native: Megatron-Core's
// --cross-entropy-loss-fusion with --cross-entropy-fusion-impl native (fusions/
// fused_cross_entropy.py: the same steps under jit_fuser, whose compiled functions return new
// buffers where the eager version works in place), 10 B: the bf16 logits, the fp32 copy and the
// fp32 exp/softmax buffer alive together at the forward's peak (Megatron-LM CI: its
// gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion peaks 0.41 GiB above the unfused twin, 4.3 B
// per logit on its 103M logits). compiled: the upcast loss under torch.compile (torchtitan from
// bbb1b616e, 2025-04-02: components/loss.py build_cross_entropy_loss compiles it whenever the run
// compiles, "reduction of memory and slightly better throughput"): Inductor fuses the upcast,
// log-softmax and NLL into a reduction over each row and the backward's softmax, one-hot and
// downcast into one pointwise kernel, so it keeps the bf16 logits and a per-row log-sum-exp and
// its backward writes the bf16 gradient beside them, 4 B (assumed as derived, not measured alone).
// plain: PyTorch's F.cross_entropy on the bf16 logits as they are, no upcast (NeMo AutoModel's
// MaskedCrossEntropy with fp32_upcast false, nemo_automodel/components/loss/masked_ce.py at
// 8d9bfb90e, its MoE benchmark configs): log_softmax keeps its bf16 output, and at the backward
// that output, nll_loss's dense gradient and log_softmax's input gradient are alive together,
// 6 B, counted as upcast's 12 B are (costed on the rank's logits; with TP AutoModel gathers the
// whole logits first, DTensor full_tensor, which is not costed).
enum class CrossEntropy { kFused, kUpcast, kFlash, kNative, kTe, kTeInplace, kCompiled, kPlain };
// How the elementwise layers run: fused, one kernel per norm, RoPE and activation (Transformer
// Engine, Apex, torch.compile); eager, PyTorch eager's op-by-op decomposition of torchtitan 2024's
// RMSNorm, RoPE and SwiGLU (torchtitan/models/norms.py RMSNorm, models/llama/model.py
// apply_rotary_emb and FeedForward at 3f20451b), each op reading and writing its whole tensor, in
// fp32 where the code upcasts (docs/compute.md); eager-fused-norm, the same with torchtitan's Triton
// RMSNorm (`norm_type = "fused_rmsnorm"`, the 7B and 13B configs of April 2024 at 395a526:
// models/norms.py TritonFusedRMSNorm, one kernel each way that saves its bf16 input and the fp32
// per-row rstd) while RoPE and SwiGLU stay op by op.
enum class Elementwise { kFused, kEager, kEagerFusedNorm };
// How an MoE layer moves its tokens to the experts (Megatron-Core's --moe-token-dispatcher-type,
// megatron/core/transformer/moe/token_dispatcher.py at d98e8a64): alltoall
// (MoEAlltoAllTokenDispatcher: each token's k copies are permuted into expert order, sent by an
// NCCL all-to-all, sorted by local expert on arrival, and the inverses run around the combine);
// flex (MoEFlexTokenDispatcher with the DeepEP or HybridEP backend: the dispatch kernel reads the
// tokens where they are and sends each one once to every rank that holds one of its experts,
// DeepEP's get_dispatch_layout is_token_in_rank, the receiver sorts them by local expert, and the
// combine returns one partial sum per rank; docs/compute.md).
enum class MoeDispatcher { kAllToAll, kFlex };
// Which experts a token's router picks, as the run's router does it (every pattern balanced: each
// expert receives the same share of the tokens). uniform: k distinct experts at random, the
// average of balanced routing (Megatron-Core's moe_router_force_load_balancing draws random
// router scores, router.py at d98e8a64). round-robin: token t takes experts (t k + j) mod E for
// j < k, k consecutive experts (NeMo AutoModel's FakeBalancedGate, nemo_automodel/components/moe/
// layers.py at 8d9bfb90e: indices = arange(T k).view(-1, k) % E, the performance summary's "fake
// balanced gate"); with experts placed in contiguous blocks per EP rank, a token reaches
// ceil-wise one or two ranks instead of about k. It changes only what a dispatcher that sends
// each token once per rank (flex) puts on the wire (RanksPerToken, core/step_graph.h).
enum class MoeRouting { kUniform, kRoundRobin };
// The host time of an MoE layer as the framework's code runs it (docs/compute.md, "The MoE layer's
// host floor"). Megatron-Core's dropless dispatchers wait on the host once per MoE layer forward
// for the tokens per expert (token_dispatcher.py `_maybe_dtoh_and_synchronize` at d98e8a64), so
// the host cannot run ahead of the GPU across MoE layers, and a layer whose kernels finish before
// the host has issued them takes the host's time: kMegatronCore costs that floor from Megatron-
// Core's own MoE layer measured on a GPU (tests/data/gpu/h200-2026-11-30/megatron_moe.json).
// kNone: no host floor (a framework whose MoE host time is not measured, or a run that captures
// the MoE layer in CUDA graphs).
enum class MoeHost { kMegatronCore, kNone };
// Where the router's probabilities weight an MoE layer's tokens, which sets what autograd keeps for
// the probabilities' gradient (docs/memory.md §3). fused: inside a fused weighted activation that
// recomputes what it needs, nothing more kept (Megatron-Core 0.13 on with bias_activation_fusion
// for SwiGLU and quick-GeGLU, weighted_bias_swiglu_impl / weighted_bias_quick_geglu_impl, or
// use_fused_weighted_squared_relu; experts.py at d98e8a64). activation: the activation's output
// times the probabilities as a separate multiply, which keeps that output (tokens x top-k x
// f, 16-bit): Megatron-Core 0.13 on with the fusion off, which GELU experts require
// (TEGroupedMLP's fused path takes only SwiGLU and quick-GeGLU). unpermute: the experts' output
// times the probabilities where the tokens are unpermuted, which keeps that output (tokens x top-k
// x hidden): Megatron-Core before 0.13 (token_dispatcher.py unpermute(..., probs=self.probs) until
// Megatron-LM 2659630721, 2025-04-09, "Memory efficient token permutation") and DeepSpeed's MoE
// (sharded_moe.py: einsum("sec,ecm->sm", combine_weights, expert_output)).
enum class MoeProbs { kFused, kActivation, kUnpermute };
// How an MoE layer's experts add their output projection's (fc2's) bias, for a model whose
// experts have biases (gpt-oss; ModelSpec::bias all); nothing for one without. fused: inside the
// GEMM's epilogue or a fused kernel, no pass of its own. per-expert: Megatron-Core's TEGroupedMLP
// since Megatron-LM a329dd6da5 (2025-09-22, "Enable bias in expert mlp"), whose fc2 returns its
// bias (skip_bias_add) and _apply_bias adds it weighted by the router's probabilities one local
// expert at a time in eager PyTorch: torch.cat([t + b * p for t, b, p in zip(split(out),
// biases, split(probs))]).to(out.dtype) (experts.py at cd4afffa64, Megatron-Bridge 26.08's pin; the
// same from Megatron-Bridge 25.11 on); per-expert-fp32: the same with fp32 probabilities (the
// flex dispatcher's, which HybridEP and DeepEP require: token_dispatcher.py token_probs.float()),
// which makes the sum fp32 and adds a cast back. Bytes and kernels by autograd's ops in
// core/step_graph.cc (ExpertBiasCost); fc1's bias is in TE's grouped GEMM (epilogue) either way.
enum class ExpertBias { kFused, kPerExpert, kPerExpertFp32 };

struct StateDtypes {
  Dtype weights = Dtype::kBf16;           // working copy used by forward/backward
  Dtype grads = Dtype::kBf16;             // gradient buffer (Megatron: fp32 main grads)
  Dtype master_weights = Dtype::kFp32;    // kNone: the optimizer updates the working copy
  Dtype optimizer_states = Dtype::kFp32;  // Adam m and v (8-bit Adam: int8)
  friend bool operator==(const StateDtypes&, const StateDtypes&) = default;
};

struct PlanSpec {
  int64_t gpus = 0;
  int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  int64_t etp = 1;  // expert tensor parallel (MCore); ep*etp | tp*cp*dp
  int64_t vpp = 1;  // virtual stages (model chunks) per pipeline rank
  // Interleaved: consecutive microbatches each model chunk runs before the next chunk's turn
  // (Megatron-Core --microbatch-group-size-per-virtual-pipeline-stage, its tunable schedule,
  // schedules.py get_schedule_table); 0 = pp, Megatron's default and the classic interleaving.
  int64_t vpp_group = 0;
  // Pipeline flushes per step: the step's microbatches run through the pipeline in this many
  // schedule runs of Microbatches() / pp_flushes each, every one with its own warm-up and drain,
  // before the one optimizer step (torch.distributed.pipelining under NeMo AutoModel's gradient
  // accumulation: nemo_automodel/recipes/llm/train_ft.py _run_train_optim_step at 8d9bfb90e calls
  // schedule.step once per local batch, GA of them a step; the pipeline stage syncs the FSDP
  // gradients at each run's last microbatch, stage.py backward_maybe_with_nosync). 1: one flush,
  // as Megatron's schedules run every microbatch of the step. With pp > 1.
  int64_t pp_flushes = 1;
  int zero = 0;  // 0..3
  Sharding sharding = Sharding::kFsdp;
  int64_t hsdp_shard_size = 0;  // HSDP: ranks one shard group spans; 0 unless hsdp
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  int64_t recompute_layers = 0;  // full recompute: layers per stage recomputed; 0 = all
  // Full recompute as PyTorch's non-reentrant activation checkpointing runs it from torch 2.1
  // (torch.utils.checkpoint use_reentrant=False, FSDP's checkpoint_wrapper NO_REENTRANT): the
  // recomputation stops as soon as the last tensor the backward needs is packed again
  // (checkpoint.py _recomputation_hook raising _StopRecomputationError; early stop the default
  // since pytorch/pytorch #96866, 2023-03), and autograd packs an op's saved inputs before it runs
  // its kernel (tools/autograd/gen_variable_type.py: setup_derivative before emit_call). Of a
  // dense block run eagerly that skips the MLP's output projection, its TP reduction and the
  // residual. Not with Transformer Engine or FP8 linear layers (autograd Functions that save after
  // their GEMM), nor behind a dropout (its mask is the last tensor saved); Megatron-LM's and
  // DeepSpeed's checkpoints are reentrant and rerun the whole layer. With recompute_layers, in each
  // recomputed layer (RecomputeEarlyStopBlocker says where it skips nothing).
  bool recompute_early_stop = false;
  // The vocabulary the embedding and the output head are built with: the model's, padded up to a
  // multiple of vocab_divisible_by x tp (Megatron-LM's --make-vocab-size-divisible-by, default
  // 128, and _vocab_size_with_padding in megatron/training/tokenizer/tokenizer.py, which pads to a
  // multiple of it times the TP size; NeMo and Megatron-DeepSpeed the same). 1: the model's
  // vocabulary as it is (PyTorch-native frameworks). PaddedVocab gives the size.
  int64_t vocab_divisible_by = 1;
  // Selective recompute: the modules recomputed, ModuleBit(RecomputeModule) bits.
  uint32_t recompute_modules = kDefaultRecomputeModules;
  int64_t micro_batch = 1;   // sequences per microbatch
  int64_t global_batch = 0;  // sequences per optimizer step
  int64_t seq_len = 0;
  Schedule schedule = Schedule::k1F1B;
  Dtype precision = Dtype::kBf16;  // GEMM compute dtype: bf16, fp16 or fp8
  StateDtypes dtypes;
  Optimizer optimizer = Optimizer::kAdamW;
  OffloadTarget offload_optimizer = OffloadTarget::kNone;
  OffloadTarget offload_params = OffloadTarget::kNone;
  // Activation offloading (Megatron-Core --cpu-offloading --cpu-offloading-num-layers N, its
  // activations only; Transformer Engine's get_cpu_offload_context): the tensors the first N
  // layers save for their backward go to host memory during the forward and come back before
  // their backward, on a stream of their own beside the compute; at most (layers - N) layers'
  // sets are on the GPU at once (Transformer Engine docs/features/other_optimizations/
  // cpu_offloading/cpu_offloading.rst at d0067d0d). Megatron-Core allows it with pp = 1 and no
  // recomputation only (transformer_config.py at d98e8a64). 0: off.
  int64_t offload_activation_layers = 0;
  // DeepSpeed's activation checkpoints in host memory (its activation_checkpointing config's
  // cpu_checkpointing, Megatron-DeepSpeed --checkpoint-in-cpu): under full recomputation each
  // layer's checkpoint, its input, is copied to host memory as the forward leaves the layer and
  // copied back before the layer is recomputed in the backward, both on the compute stream and
  // waited for (deepspeed/runtime/activation_checkpointing/checkpointing.py at v0.6.2:
  // CheckpointFunction.forward's partition.cpu() or copy_to_device(..., cpu), its backward's
  // copy into a new GPU tensor; the transport stream beside it is commented out), so the
  // checkpoints live in host memory and the copies do not hide. Needs recompute full.
  bool offload_checkpoints = false;
  // Fine-grained activation offloading (Megatron-Core --fine-grained-activation-offloading
  // --offload-modules ...): OffloadBit(OffloadModule) bits. Each named submodule's saved tensors go
  // to pinned host memory on a copy stream as its forward ends and come back on another before
  // its backward; after the first iteration the last group of each module name stays on the GPU
  // so that its reload does not stall the backward (PipelineOffloadManager.post_warmup_callback:
  // the offload margin, one group per distinct name). 0: off.
  uint32_t offload_modules = 0;
  CpKind cp_kind = CpKind::kRing;
  std::vector<Axis> placement = {Axis::kTp, Axis::kCp, Axis::kEp, Axis::kDp, Axis::kPp};
  // Slurm's segments (sbatch --segment N with the topology/block plugin, whose blocks are the
  // scale-up domains, e.g. a GB200 NVL72 rack): the job's nodes come in segments of N consecutive
  // nodes, each inside one domain, so a domain holds floor(domain / (N x gpus_per_node)) whole
  // segments and the ranks of one segment never straddle two domains (core::JobDomainGpus).
  // 0: nodes allocated domain after domain, as many to a domain as it holds.
  int64_t segment_nodes = 0;
  std::vector<int64_t> stage_layers;  // optional uneven split: pp*vpp entries summing to layers
  bool overlap_grad_reduce = true;    // DP gradient reduction runs under the last backward
  // ZeRO-1/2: the updated parameters' all-gather runs bucket by bucket under the next step's first
  // microbatch forward, each module waiting only for its own bucket (Megatron-Core
  // --overlap-param-gather: distributed_data_parallel.py forward pre-hooks,
  // param_and_grad_buffer.py finish_param_sync, at d98e8a64). Off: the all-gather runs after the
  // optimizer step and nothing overlaps it.
  bool overlap_param_gather = true;
  // Weight-gradient GEMMs accumulate straight into the gradient buffer (beta = 1; Megatron-LM's
  // gradient-accumulation fusion, Transformer Engine's default). Off: every microbatch writes a
  // fresh gradient and a separate kernel adds it into the buffer.
  bool grad_accum_fusion = true;
  // ZeRO 0-2: the gradient buffer is divided by the data-parallel size in a pass of its own before
  // its reduction, once per step (Megatron-Core's DDP without average_in_collective, its default:
  // param_and_grad_buffer.py start_grad_sync `grad_data *= gradient_scaling_factor` at f2e5db402c
  // and d98e8a64; Megatron-LM 2020-22's local DDP divides its buffer the same way). Off: the
  // average is taken inside the collective (--ddp-average-in-collective, NCCL's ReduceOp.AVG).
  bool grad_prescale = true;
  // MoE: the expert-parallel all-to-alls of one microbatch run under the computation of another
  // (Megatron-Core's --overlap-moe-expert-parallel-comm, "batch-level EP A2A overlap": the
  // forward and backward passes of adjacent microbatches are merged; megatron/core/transformer/
  // moe/README.md). DualPipe does the same by itself.
  bool ep_overlap = false;
  // With ep_overlap: the weight gradients of a merged layer's blocks run apart from their input
  // gradients (Megatron-Core's --delay-wgrad-compute, which needs the overlap: transformer_config.py
  // at 6cd6ea530e), so the backward's all-to-all after a block waits for its input gradient only
  // (sim/step_model.cc MergedEpPeriod).
  bool delay_wgrad = false;
  // Which TP collectives run under GEMMs: none (Megatron-LM 2021), backward (the input-gradient
  // all-reduce/reduce-scatter under the weight-gradient GEMM, Megatron-LM since 2022), full
  // (also the forward ones: Transformer Engine userbuffers), async (PyTorch's micro-pipeline TP,
  // torchtitan's AsyncTP: under SP, each all-gather fused with the GEMMs that read its output
  // and each reduce-scatter with the one GEMM that writes its input; a backward reduce-scatter of
  // an input that several GEMMs read, q/k/v or a gated MLP's w1/w3, stays a blocking NCCL one;
  // core/step_graph.cc TpGather, docs/compute.md).
  TpOverlap tp_overlap = TpOverlap::kBackward;
  Zero3Gather zero3_gather = Zero3Gather::kFlat;  // with zero = 3 (fsdp1: 2 as well)
  Fp8Scaling fp8_scaling = Fp8Scaling::kDelayed;  // with precision = fp8
  // Under a quantized precision (fp8, nvfp4), the model's first and last this many decoder layers
  // keep their GEMMs in BF16 (Megatron-Core --first-last-layers-bf16 with
  // --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16: fp8_utils.py and fp4_utils.py
  // is_first_last_bf16_layer at d98e8a64, by the global layer index, so whichever stage holds the
  // layer; each at most layers / pp, and never with delayed scaling, transformer_config.py). Such a
  // layer runs as the plan would with precision bf16. The MTP modules keep the plan's precision.
  int64_t bf16_layers_at_start = 0;
  int64_t bf16_layers_at_end = 0;
  CrossEntropy cross_entropy = CrossEntropy::kFused;
  Elementwise elementwise = Elementwise::kFused;
  // The model code copies GQA's K and V to every query head before the attention kernel
  // (torchtitan 2024's Llama: repeat_kv before F.scaled_dot_product_attention,
  // torchtitan/models/llama/model.py at 9dec370), eager or compiled: the kernel, the copies saved
  // for its backward and context parallelism's K/V exchanges see a query heads, not kv_heads.
  // Off: the kernel reads the grouped heads (flash-attn, cuDNN, Transformer Engine).
  bool repeat_kv = false;
  // Tensor parallelism through PyTorch's DTensor styles (torchtitan's SequenceParallel,
  // ColwiseParallel, RowwiseParallel on [batch, seq, hidden] activations sharded on dim 1):
  // each SP collective runs along the sequence, dim 1, which the functional collectives turn into
  // a dim-0 NCCL collective plus a copy of the whole tensor, torch.cat of its chunks after an
  // all-gather and before a reduce-scatter (torch/distributed/_functional_collectives.py
  // all_gather_tensor / reduce_scatter_tensor with gather_dim or scatter_dim != 0; torchtitan
  // PR 437: "an extra aten.cat after each collective"). AsyncTP's fused collectives take no copy.
  // Under an FP8 plan, torchao's Float8ColwiseParallel, Float8RowwiseParallel and
  // PrepareFloat8ModuleInput cast before they gather: the input all-gathers and the output
  // gradients' all-gathers move float8, 1 B an element (torchao/float8/float8_tensor_parallel.py
  // at eab345c and 6243040). Off: Megatron-Core's TP (first-dimension collectives; Transformer
  // Engine's quantized gathers by PlanSpec::transformer_engine). core/step_graph.cc TpGather.
  bool dtensor_tp = false;
  // Context parallelism through PyTorch's context_parallel (torchtitan; torch/distributed/tensor/
  // experimental/_attention.py, _templated_ring_attention and its backward): the ring runs in
  // Python around one SDPA call per K/V block, so beyond the kernels it copies K and V into
  // contiguous buffers, concatenates them for each exchange (torch.cat), and merges each block's
  // output into an fp32 accumulator with eager kernels (out.to(float32), then out - sigmoid(lse_b -
  // lse) * (out - out_b)); its backward accumulates dQ, dK and dV in fp32 (zeros_like, +=,
  // torch.cat of the half updated under load balancing) and sends dK and dV around the ring in fp32
  // (ALL_TO_ALL permute_tensor, whichever rotation moves K and V). cp_kind allgather or ring (its
  // rotate methods allgather and alltoall); Ulysses is not one of them. Off: Transformer Engine's or
  // Megatron-Core's CP (fused corrections, 16-bit dK/dV). core/step_graph.cc TorchCpCost.
  bool torch_cp = false;
  // The 16-bit gradients stay allocated beside the gradient buffer for the whole step: DeepSpeed's
  // BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py at 56c5223: backward(clear_lp_grads=False)
  // adds each microbatch's bf16 .grad into its fp32 fp32_groups_gradients and leaves the bf16 one
  // in place), which BigScience measured as "4bytes x params and ... not sharded across gpus" over
  // fp16's 16-bit accumulation (train/tr11-176B-ml/chronicles-prequel.md at 9e64ede). With
  // dtypes.grads fp32 the rank holds weights-dtype bytes more per parameter, sharded as the
  // gradients are.
  bool keep_lp_grads = false;
  // The distributed optimizer all-gathers the updated parameters in FP8, 1 byte each, and the
  // layers compute from those FP8 copies (Megatron-Core's --fp8-param-gather, arguments.py at
  // d98e8a64: "Keep the compute param in fp8 ... and perform the param all-gather in fp8"; its
  // param buffer is uint8, param_and_grad_buffer.py; NeMo's fp8_params, which MLPerf Training's
  // GPT-3 and Llama 3.1 configs set with FP8_PARAMS=True). With precision fp8 and zero 1 or 2.
  // Memory is costed as before: the FP8 weight and the transpose Transformer Engine caches for
  // the backward's FP8 GEMM hold as many bytes as the 16-bit weight they replace (docs/memory.md).
  bool fp8_param_gather = false;
  // Transformer Engine's FP8 attention (DotProductAttention under fp8_dot_product_attention,
  // Megatron-Core's --fp8-dot-product-attention, NeMo's FP8_DPA): with current scaling it
  // quantizes Q, K and V before cuDNN's FP8 fused attention and the output gradient before its
  // backward, saves the FP8 Q, K and V for the backward and keeps the output in 16 bits
  // (NVTE_DPA_FP8CS_O_in_F16, default on: attention/dot_product_attention/backends.py
  // FusedAttnFunc). Costed at the GPU's attention_curve.cudnn-fp8. Needs precision fp8 or nvfp4.
  bool fp8_attention = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;  // with ep > 1
  // Each expert's tokens arrive padded to the quantization's alignment, so Transformer Engine's
  // grouped experts need no padding copies: Megatron-Core's moe_router_padding_for_quantization
  // (moe_router_padding_for_fp8 before it) pads the routing map before the dispatch, and its
  // HybridEP flex backend pads in its fused dispatch (token_dispatcher.py _HybridEPManager
  // pad_multiple). Off, as Megatron-Core defaults: under fp8 or nvfp4, TEGroupedMLP pads each
  // local expert's rows to a multiple of 16 (32 under MXFP8, 128 under NVFP4) with TE's Fp8Padding
  // before fc1 and strips them with Fp8Unpadding after fc2, a copy of the experts' rows each way
  // and its inverse in the backward (experts.py since Megatron-LM 56b49a4cab, 2024-10-29; TE
  // module/fp8_padding.py, fp8_unpadding.py). With an MoE model.
  bool moe_router_padding = false;
  // The experts' fc1, activation and fc2 through Transformer Engine's op fuser (Megatron-Core's
  // use_transformer_engine_op_fuser, TEGroupedMLP._fused_forward at d0b3b77549: a GroupedLinear op,
  // ScaledSwiGLU or ScaledClampedQGeGLU applying the router's probabilities, the clamp
  // (ModelSpec::glu_clamp) included, and a GroupedLinear op with fc2's bias; Megatron-Bridge turns
  // it on with cutedsl_fused_grouped_mlp, scripts/performance/utils/overrides.py:238 at v0.5.0).
  // Costed: no clamp copies before the activation, fc2's bias in its grouped linear op (expert_bias
  // fused). Not costed: the CuTe DSL kernel that fuses the GEMMs with the activation on Blackwell
  // (NVTE_CUTEDSL_FUSED_GROUPED_MLP): the GEMMs and the activation stay kernels of their own. Off,
  // Megatron-Core's default. With an MoE model, Transformer Engine's grouped GEMM and etp 1.
  bool moe_op_fuser = false;
  // The routed tokens the busiest expert-parallel rank receives over the mean, which sets an MoE
  // layer's pace (the combine's all-to-all waits for it) and its activations: 1, balanced routing's
  // mean, as the MoE layer is costed otherwise (under Megatron-Core's forced load balancing, random
  // router logits, the busiest of R ranks exceeds it by about 1% at 4,096 tokens a rank:
  // docs/compute.md); a measured ratio where the router is not balanced (Megatron-Core's
  // --moe-per-layer-logging prints the tokens per expert), at most ep (every token on one rank).
  // Dropless MoE only: token dropping pads every expert to its capacity.
  double moe_imbalance = 1.0;
  MoeRouting moe_routing = MoeRouting::kUniform;  // the router's expert pattern (above)
  MoeHost moe_host = MoeHost::kMegatronCore;      // the MoE layer's host floor (above)
  MoeProbs moe_probs = MoeProbs::kFused;          // where the router's probabilities apply (above)
  ExpertBias expert_bias = ExpertBias::kFused;    // how the experts add fc2's bias (above)
  // Microbatches whose output-layer weight gradient is deferred to the end of the step
  // (Megatron-Core --defer-embedding-wgrad-compute with --wgrad-deferral-limit n; its 0, "all",
  // is the plan's microbatches): the last stage keeps each one's logits gradient and the head's
  // input until then (tensor_parallel/layers.py grad_output_buffer). 0: computed in place.
  int64_t deferred_head_wgrad = 0;
  // The pipeline runtime holds per-microbatch tensors for the whole step (PyTorch's
  // torch.distributed.pipelining before torch 2.8, stage.py _PipelineStageBase): every stage
  // appends each microbatch's output to output_chunks in forward_one_chunk and drops them only
  // when the next step clears its runtime state (PR 153383, torch 2.8, keeps the last stage's
  // alone), so at the last microbatch the step's earlier outputs are all alive, on the last stage
  // its logits; and _prepare_backward_infra allocates a gradient receive buffer the size of the
  // stage's output for each microbatch up front (grad_recv_info), on every stage but the last.
  // Off: Megatron's schedules, which free each microbatch's output after its backward and receive
  // into fresh tensors. With pp > 1.
  bool keep_pp_outputs = false;
  // The CUDA context the training software's process holds on each GPU, in bytes: device memory
  // nvidia-smi shows beyond the caching allocator's reserve (the context, the loaded kernels, the
  // runtime's own heaps). 0: the profile's (MemoryOverheads::cuda_context_bytes, measured with
  // lazy module loading). A stack whose source measured its own sets it (core/stack.h).
  int64_t cuda_context_bytes = 0;
  // The layers run as Transformer Engine's modules (Megatron-Core's --transformer-impl
  // transformer_engine, its default; NeMo, Megatron-Bridge): TE holds cuBLAS workspaces of its
  // own beside PyTorch's (docs/memory.md §4). The megatron-core-2024 stack sets it.
  bool transformer_engine = false;
  // MoE experts run as one grouped GEMM (Megatron-Core --moe-grouped-gemm; with Transformer Engine
  // its GroupedLinear, which holds a cuBLAS workspace per compute stream). Off: one GEMM per
  // expert in turn (SequentialMLP).
  bool moe_grouped_gemm = true;

  int64_t Microbatches() const { return global_batch / (micro_batch * dp); }  // per pipeline
  // The pipeline flushes a step runs (pp_flushes above; one without pipeline parallelism, where
  // accumulation runs a microbatch at a time) and the microbatches of each.
  int64_t Flushes() const { return pp > 1 ? std::max<int64_t>(pp_flushes, 1) : 1; }
  int64_t MicrobatchesPerFlush() const { return Microbatches() / Flushes(); }
  // Whether fp8_param_gather (above) applies: FP8 compute and the distributed optimizer.
  bool Fp8ParamGatherApplies() const { return precision == Dtype::kFp8 && (zero == 1 || zero == 2); }
  // Transformer Engine's FP8 attention (fp8_attention) needs its quantized layers.
  bool Fp8AttentionApplies() const { return Quantized(precision) && transformer_engine; }
  // True when the plan runs some layers in BF16 beside its quantized ones (bf16_layers_at_start /
  // _at_end above, under fp8 or nvfp4), and when decoder layer `layer` (0-based, of `layers`) is
  // one of them; such a layer runs as Bf16LayerPlan() runs its layers.
  bool HasBf16Layers() const { return Quantized(precision) && (bf16_layers_at_start > 0 || bf16_layers_at_end > 0); }
  bool KeepsLayerInBf16(int64_t layer, int64_t layers) const {
    return HasBf16Layers() && (layer < bf16_layers_at_start || layer >= layers - bf16_layers_at_end);
  }
  PlanSpec Bf16LayerPlan() const {
    PlanSpec q = *this;
    q.precision = Dtype::kBf16;
    return q;
  }
  int64_t VppGroup() const { return vpp_group > 0 ? vpp_group : pp; }  // interleaved's group
  // True when selective recomputation recomputes `module` (never under none or full).
  bool Recomputes(RecomputeModule module) const {
    return recompute == Recompute::kSelective && (recompute_modules & ModuleBit(module)) != 0;
  }
  friend bool operator==(const PlanSpec&, const PlanSpec&) = default;
};

// The names used in JSON, flags and messages.
const char* Name(MlpKind v);
const char* Name(NormKind v);
const char* Name(PositionKind v);
const char* Name(BiasKind v);
const char* Name(AttentionImpl v);
const char* Name(RouterKind v);
const char* Name(Dtype v);
const char* Name(Topology v);
const char* Name(Sharding v);
const char* Name(Recompute v);
const char* Name(RecomputeModule v);
const char* Name(Schedule v);
const char* Name(Optimizer v);
const char* Name(OffloadTarget v);
const char* Name(OffloadModule v);
const char* Name(CpKind v);
const char* Name(Axis v);
const char* Name(TpOverlap v);
const char* Name(Zero3Gather v);
const char* Name(Fp8Scaling v);
const char* Name(CrossEntropy v);
const char* Name(MoeDispatcher v);
const char* Name(MoeRouting v);
const char* Name(MoeHost v);
const char* Name(MoeProbs v);
const char* Name(ExpertBias v);
const char* Name(Elementwise v);
// Inverse of Name(); false when `text` names no value. The accepted spellings are listed by
// the *Choices() functions for error messages ("one of gelu|swiglu").
bool FromName(const std::string& text, MlpKind* out);
bool FromName(const std::string& text, NormKind* out);
bool FromName(const std::string& text, PositionKind* out);
bool FromName(const std::string& text, BiasKind* out);
bool FromName(const std::string& text, AttentionImpl* out);
bool FromName(const std::string& text, RouterKind* out);
bool FromName(const std::string& text, Dtype* out);
bool FromName(const std::string& text, Topology* out);
bool FromName(const std::string& text, Sharding* out);
bool FromName(const std::string& text, Recompute* out);
bool FromName(const std::string& text, RecomputeModule* out);
bool FromName(const std::string& text, Schedule* out);
bool FromName(const std::string& text, Optimizer* out);
bool FromName(const std::string& text, OffloadTarget* out);
bool FromName(const std::string& text, OffloadModule* out);
bool FromName(const std::string& text, CpKind* out);
bool FromName(const std::string& text, Axis* out);
bool FromName(const std::string& text, TpOverlap* out);
bool FromName(const std::string& text, Zero3Gather* out);
bool FromName(const std::string& text, Fp8Scaling* out);
bool FromName(const std::string& text, CrossEntropy* out);
bool FromName(const std::string& text, Elementwise* out);
bool FromName(const std::string& text, MoeDispatcher* out);
bool FromName(const std::string& text, MoeRouting* out);
bool FromName(const std::string& text, MoeHost* out);
bool FromName(const std::string& text, MoeProbs* out);
bool FromName(const std::string& text, ExpertBias* out);
template <typename E>
std::string Choices();  // "gelu|swiglu"

// Recompute modules as text, "core_attn,moe_act" (in RecomputeModule order), and back: false for
// an unknown or repeated name or an empty list.
std::string RecomputeModulesString(uint32_t modules);
bool ParseRecomputeModules(const std::string& text, uint32_t* out);
// Offload modules the same way, "expert_fc1,moe_act" (in OffloadModule order).
std::string OffloadModulesString(uint32_t modules);
bool ParseOffloadModules(const std::string& text, uint32_t* out);

// The vocabulary `p` builds `m` with (PlanSpec::vocab_divisible_by): m.vocab rounded up to a
// multiple of vocab_divisible_by x tp; m.vocab itself when vocab_divisible_by is 1.
int64_t PaddedVocab(const ModelSpec& m, const PlanSpec& p);

// Why PyTorch's checkpoint early stop (PlanSpec::recompute_early_stop) would skip nothing of this
// model's blocks under this plan, or nullptr when it skips the dense MLP's output projection: with
// Transformer Engine or FP8 linear layers (autograd Functions that save after their GEMM), behind a
// dropout (its mask saved last), or in MoE, Mamba or MLA blocks (their last saved tensor not
// traced). Whether the plan recomputes is the caller's to check.
const char* RecomputeEarlyStopBlocker(const ModelSpec& m, const PlanSpec& p);
// Turns the early stop on for a plan that recomputes fully, where RecomputeEarlyStopBlocker finds
// nothing against it, and returns the sentence that says so or why not ("" when the plan does not
// recompute fully). Launch defaults (core/published.cc) and stacks (core/stack.cc) both apply it.
std::string ApplyRecomputeEarlyStop(const ModelSpec& m, PlanSpec* p);

// Placement order as text, "tp-cp-ep-dp-pp".
std::string PlacementString(const std::vector<Axis>& order);
bool ParsePlacement(const std::string& text, std::vector<Axis>* out);

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_SPECS_H_
