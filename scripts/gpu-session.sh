#!/usr/bin/env bash
# One GPU session's checks, in one command: the cuda backend's tests, its GEMM sweep, the executor
# on one GPU (a tiny plan, a 1.7B plan and two held-out plans), the one-process numerics check, a
# GEMM sweep over the validation corpus's layer shapes, and the PyTorch probes (scripts/gpu_probes.py:
# CUDA context memory, SDPA attention speeds, sustained GEMM rate, a torchtitan-style step's memory, host cost). Each step has its own time
# limit and log, so one failure does not hide the others.
#
#   scripts/gpu-session.sh BIN_DIR OUT_DIR [STAGE ...]
#
# STAGEs (default: all, in this order): gtest gemm tiny verify gpt17b context_attention gemm_shapes
# heldout sustained memory memory_expandable memory_default8 sustained_more memory_expandable8 host_moe expert_gemm megatron_moe megatron_layer cp_attention checkpoint_early_stop unfused_attention gemm_alignment layer_sustained layer_shapes layer_profile fp8_shapes gemm_calls memory_pools. The first GPU session (2026-11-28, H200) ran the first six; the second the
# rest and tiny, verify again; the third memory_expandable and memory_default8; the fourth sustained_more and memory_expandable8; the fifth (2026-11-30) host_moe, expert_gemm and memory_pools, then megatron_moe by itself; the sixth (2026-11-30) expert_gemm (with its four-stream loop) and megatron_layer, then cp_attention by itself. Everything lands in OUT_DIR: one session.log and a JSON per stage.
# Since 2026-11-29 the memory stages also write the caching allocator's segments after the last step by stream
# (pools_after_last_step), the check of FSDP2's reduce-scatter and all-gather pools in docs/memory.md §4.
#
# BIN_DIR holds meshplan-run and runtime_tests built with the cuda backend (a build with
# -DMESHPLAN_CUDA=ON -DMESHPLAN_MPI=OFF travels alone; cuBLAS and NCCL come from the machine),
# and BIN_DIR/lib any other shared library it needs that the GPU machine may lack.
set -u
bin=$1
out=$2
shift 2
stages="$*"
mkdir -p "$out"
log() { echo "== $* ($(date -u +%H:%M:%S))"; }

# cuBLAS, cudart and NCCL: wherever this machine keeps them (toolkit, or the Python wheels).
libdirs=""
for name in libcublasLt.so.13 libcudart.so.13 libnccl.so.2; do
  f=$(find /usr/local/cuda* /usr/lib /opt -name "$name" 2>/dev/null | head -1)
  [ -n "$f" ] && libdirs="$libdirs:$(dirname "$f")"
  echo "$name: ${f:-NOT FOUND}"
done
# $bin/lib last: libraries the build machine linked that this one may lack (libgomp).
export LD_LIBRARY_PATH="${libdirs#:}:$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# memory.reserved: what the driver keeps of memory.total; total less it is what CUDA reports, the GPU
# preset's cuda_total_bytes (docs/memory.md §4).
nvidia-smi --query-gpu=name,memory.total,memory.reserved,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv |
  tee "$out/nvidia-smi.csv"
ldd "$bin/meshplan-run" | grep -E "not found|cublas|nccl|cudart" || true

step() {  # step NAME SECONDS COMMAND...: its output to the session log ($out/session.log)
  local name=$1 secs=$2
  shift 2
  log "$name" | tee -a "$out/session.log"
  timeout "$secs" "$@" >>"$out/session.log" 2>&1
  echo "rc=$?" | tee -a "$out/session.log"
}
want() { [ -z "$stages" ] || [[ " $stages " == *" $1 "* ]]; }

# GEMM shapes of the validation corpus's layers (tokens x N x K, N and K as TP 1 or 8 splits them):
# Llama 3 8B (TP 1), 70B and 405B (TP 8), GPT-3 175B (TP 8, 2048 tokens); small-M rows; N = 1024,
# 1152, 1280, 1536 at 8192 x K 8192, where 128x256 tiles fill 97%, 81%, 81%, 97% of their waves.
shapes="8192x6144x4096 8192x4096x4096 8192x28672x4096 8192x4096x14336
  8192x1280x8192 8192x8192x1024 8192x7168x8192 8192x8192x3584
  8192x2304x16384 8192x16384x2048 8192x13312x16384 8192x16384x6656
  2048x4608x12288 2048x12288x1536 2048x6144x12288 2048x12288x6144
  512x4096x4096 1024x4096x4096 2048x4096x4096 4096x4096x4096
  8192x1024x8192 8192x1152x8192 8192x1536x8192"
shape_args=""
for s in $shapes; do shape_args="$shape_args --shape $s:bf16"; done
for s in 8192x1280x8192 8192x8192x1024 8192x7168x8192 8192x8192x3584 8192x2304x16384 8192x13312x16384 \
  8192x16384x6656 8192x6144x4096 8192x28672x4096 8192x4096x14336; do
  shape_args="$shape_args --shape $s:fp8"
done

export MESHPLAN_REQUIRE_GPU=1
run="$bin/meshplan-run"
want gtest && step gtest_gpu 120 "$bin/runtime_tests" --gtest_filter='Cuda/*:*Device*:*Cuda*' --gtest_brief=1
want gemm && step bench_gemm 100 "$run" --backend cuda bench gemm --format json -o "$out/gemm.json"
want tiny && step tiny 40 "$run" --backend cuda --plan tests/runtime/data/tiny_1gpu.json --steps 3 -o "$out/tiny.json"
want verify && step verify 40 "$run" verify --backend cuda --plan tests/runtime/data/tiny_1gpu.json
want gpt17b && step gpt17b 60 "$run" --backend cuda --plan scripts/gpu-plans/gpt-1.7b-h200.json --steps 3 \
  --warmup 1 -o "$out/gpt17b.json"
want context_attention && step context_attention 100 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py \
  context_attention "$out/probes.json"
# shellcheck disable=SC2086
want gemm_shapes && step gemm_shapes 90 "$run" --backend cuda bench gemm --warmup 5 -n 20 $shape_args \
  -o "$out/gemm_shapes.json"
want heldout && step gpt36b 60 "$run" --backend cuda --plan scripts/gpu-plans/gpt-3.6b-h200.json --steps 3 \
  --warmup 1 -o "$out/gpt36b.json"
want heldout && step gpt17b_s4k 60 "$run" --backend cuda --plan scripts/gpu-plans/gpt-1.7b-s4096-h200.json \
  --steps 3 --warmup 1 -o "$out/gpt17b_s4k.json"
want sustained && step sustained 70 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py sustained "$out/sustained.json"
want memory && step memory 90 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py memory "$out/memory.json"
# torchtitan's launcher sets expandable segments (run_llama_train.sh since a5e57e4a9, 2024-10-22).
want memory_expandable && step memory_expandable 150 env -u LD_LIBRARY_PATH \
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 scripts/gpu_probes.py memory \
  "$out/memory_expandable.json" 2:1:8192 4:1:8192 4:2:4096 8:1:8192
want sustained_more && step sustained_more 100 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py sustained \
  "$out/sustained_more.json" fp8:8192x8192x8192:15 fp8:8448x8192x16384:15 bf16:8192x28672x4096:12 \
  bf16:2048x4608x12288:12 bf16:8192x1280x8192:12
want memory_expandable8 && step memory_expandable8 90 env -u LD_LIBRARY_PATH \
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 scripts/gpu_probes.py memory \
  "$out/memory_expandable8.json" 8:1:8192
want memory_default8 && step memory_default8 90 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py memory \
  "$out/memory_default8.json" 8:1:8192
# Host dispatch cost per eager op and a dropless MoE layer's wall time against its kernels' (for a
# host-bound floor under small MoE layers: docs/validation.md's MoE rows).
want host_moe && step host_moe 120 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py host_moe "$out/host_moe.json"
# Expert GEMMs against rows per expert: a per-expert cuBLAS loop (eager and graphed) and
# torch._grouped_mm, for the MoE rows' GEMM efficiency (docs/compute.md).
want expert_gemm && step expert_gemm 200 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py expert_gemm \
  "$out/expert_gemm.json"
# Megatron-Core's own MoE layer, for its host floor (docs/compute.md): MEGATRON_CORE_DIR holds
# megatron/core of Megatron-LM d98e8a64 (git archive d98e8a64 megatron/core | tar -x -C DIR).
want megatron_moe && step megatron_moe 200 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py megatron_moe \
  "$out/megatron_moe.json" "${MEGATRON_CORE_DIR:-.mcore}"
# Megatron-Core's whole layer (attention + MoE, local spec) against its kernels at 1k-16k tokens,
# its attention block alone and a chain of 4: the attention block's host time and how host and GPU
# time combine when each MoE layer synchronises (docs/validation.md, the MoE rows' lead).
want megatron_layer && step megatron_layer 300 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py megatron_layer \
  "$out/megatron_layer.json" "${MEGATRON_CORE_DIR:-.mcore}"
# One context-parallel rank's attention as PyTorch's ring attention runs it, against one causal
# kernel of the same FLOPs (docs/validation.md, the torchtitan CP rows).
want cp_attention && step cp_attention 280 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py cp_attention \
  "$out/cp_attention.json"
# PyTorch's activation checkpointing: the whole replay (use_reentrant=True) against the non-reentrant
# early stop, which should save w2's GEMM per block (plan.recompute_early_stop, docs/compute.md).
want checkpoint_early_stop && step checkpoint_early_stop 260 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py \
  checkpoint_early_stop "$out/checkpoint_early_stop.json"
# Megatron-LM 2021's unfused attention at head dims 104/108/112/128: whether the 108 one, whose
# batched GEMMs start 648 bytes apart, runs slower than its FLOPs (docs/validation.md, BLOOM rows).
want unfused_attention && step unfused_attention 150 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py \
  unfused_attention "$out/unfused_attention.json"
# cuBLAS GEMMs with a dimension off a multiple of 8 elements, and the unfused attention's batched GEMMs
# at head dims 96-136 (docs/compute.md, the alignment rule).
want gemm_alignment && step gemm_alignment 200 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py gemm_alignment \
  "$out/gemm_alignment.json"
# A training step's mix held as long as a GEMM (four Llama 3 8B blocks, eager and compiled) against a
# layer GEMM alone, with clocks and power: whether a step settles as the GEMM efficiencies assume.
want layer_sustained && step layer_sustained 230 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py sustained \
  "$out/layer_sustained.json" layer:8192:40 layer_compiled:8192:40 bf16:8192x28672x4096:30
# The same at other shapes (Llama 3 8B at 2k tokens a sequence; Llama 3 70B's whole block at 8k) and the
# 70B block's w1 GEMM alone: how the step's rate follows its share of non-GEMM time.
want layer_shapes && step layer_shapes 200 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py sustained \
  "$out/layer_shapes.json" layer:8192:25 layer:2048:25 layer:8192x8192x28672x64x8:25 bf16:8192x28672x8192:20
# Where the step's time goes by kernel kind (GEMM, attention, norm, the rest) at the layer shapes above.
want layer_profile && step layer_profile 120 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py layer_profile \
  "$out/layer_profile.json" 8192 8192r 2048 2048r 8192x8192x28672x64x8r
# FP8 against BF16 GEMMs, each held at the power limit, at the shapes of the corpus's FP8/BF16 pairs
# (validate --pairs: FP8's gain overstated by 4-8% on dgxc-benchmarking's GPT-3 175B and Llama 3.1 70B,
# 12-17% on Grok-1, within 3% on Nemotron-4 15B; docs/validation.md, Comparing two plans): Grok-1's
# expert fc1/fc2 (v25.05.01, H100, EP 8, one expert a rank), GPT-3 175B's and Llama 3.1 70B's
# TP 4 fc1 and qkv/fc2, Nemotron-4 15B's fc1 (the pair that is right) and Llama 4 Maverick's expert fc1.
want fp8_shapes && step fp8_shapes 260 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py sustained \
  "$out/fp8_shapes.json" \
  fp8:2048x65536x6144:10 bf16:2048x65536x6144:10 fp8:2048x6144x32768:10 bf16:2048x6144x32768:10 \
  fp8:2048x12288x12288:10 bf16:2048x12288x12288:10 fp8:2048x9216x12288:10 bf16:2048x9216x12288:10 \
  fp8:4096x14336x8192:10 bf16:4096x14336x8192:10 fp8:4096x8192x7168:10 bf16:4096x8192x7168:10 \
  fp8:16384x6144x6144:10 bf16:16384x6144x6144:10 fp8:8192x4096x5120:10 bf16:8192x4096x5120:10
# The host time a GEMM call costs, cuBLAS against cuBLASLt (whose per-call heuristic query
# Transformer Engine's grouped GEMM pays once per expert), one stream and four, at expert shapes
# (docs/validation.md: what the fine-grained MoE runs lack).
want gemm_calls && step gemm_calls 90 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py gemm_calls \
  "$out/gemm_calls.json"
# The allocator's segments by stream after an FSDP2 step (pools_after_last_step; docs/memory.md §4).
want memory_pools && step memory_pools 100 env -u LD_LIBRARY_PATH python3 scripts/gpu_probes.py memory \
  "$out/memory_pools.json" 2:1:8192
log done
