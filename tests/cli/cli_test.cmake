# End-to-end checks of the meshplan command: exit codes and the numbers a user checks first.
# cmake -DMESHPLAN=path -DDATA=tests/data -DWORK=dir -P cli_test.cmake
file(MAKE_DIRECTORY ${WORK})
set(failures 0)
# The result store: tests pass --db under WORK; should one forget, the default path lands here
# (checked at the end), never in the user's data directory.
set(default_db ${WORK}/default-store-must-stay-unused.db)
set(ENV{MESHPLAN_DB} ${default_db})
file(REMOVE_RECURSE ${WORK}/store ${default_db} ${default_db}-wal ${default_db}-shm ${WORK}/cal.db ${WORK}/cal.db-wal
     ${WORK}/cal.db-shm)

# run(<name> <expected exit code> <regex the output must match> args...)
function(run name code regex)
  execute_process(COMMAND ${MESHPLAN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(SEND_ERROR "${name}: exit ${rc}, expected ${code}\nstdout:\n${out}\nstderr:\n${err}")
    return()
  endif()
  if(NOT "${out}${err}" MATCHES "${regex}")
    message(SEND_ERROR "${name}: output does not match '${regex}'\nstdout:\n${out}\nstderr:\n${err}")
    return()
  endif()
  # Every non-zero exit says why on stderr, in a line of its own (a script sees only stderr).
  if(NOT code EQUAL 0 AND NOT err MATCHES "error: [^\n]+")
    message(SEND_ERROR "${name}: exit ${rc} without an 'error: ...' line on stderr\nstdout:\n${out}\nstderr:\n${err}")
    return()
  endif()
  message(STATUS "ok ${name}")
endfunction()

# run_without(<name> <expected exit code> <regex the output must not match> args...)
function(run_without name code regex)
  execute_process(COMMAND ${MESHPLAN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code OR "${out}${err}" MATCHES "${regex}")
    message(SEND_ERROR "${name}: exit ${rc} (expected ${code}); output must not match '${regex}'\nstdout:\n${out}\nstderr:\n${err}")
    return()
  endif()
  message(STATUS "ok ${name}")
endfunction()

# run_stderr(<name> <expected exit code> <regex stderr alone must match> args...)
function(run_stderr name code regex)
  execute_process(COMMAND ${MESHPLAN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code OR NOT "${err}" MATCHES "${regex}")
    message(SEND_ERROR "${name}: exit ${rc} (expected ${code}); stderr must match '${regex}'\nstdout:\n${out}\nstderr:\n${err}")
    return()
  endif()
  message(STATUS "ok ${name}")
endfunction()

# The memory model's first check: ZeRO-3 over 8 H100s -> 141.1 GB of model states; ZeRO-0 -> 1.129 TB, no fit.
run(zero3_json 1 "\"model_state_bytes\": 141107412992"
    report --model llama3-70b --gpu h100-sxm --gpus 8 --dp 8 --zero 3 --format json)
run(zero0_json 1 "\"model_state_bytes\": 1128859303936.*\"fits\": false|\"fits\": false.*\"model_state_bytes\": 1128859303936"
    report --model llama3-70b --gpu h100-sxm --gpus 8 --dp 8 --zero 0 --format json)
# The main job fits.
run(main_job 0 "fits: "
    report --model llama3-70b --gpu h100-sxm --cluster dgx-h100 --gpus 64 --tp 8 --pp 2 --dp 4 --sp --zero 1
           --recompute selective --mbs 1 --gbs 512 --seq 8192)
run(csv 0 "stage,layers,params"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --format csv)
# report --ops: every op of one microbatch as the step model costs it. Llama 3 8B at TP 2, seq
# 8192 on 8 H100s: the forward QKV GEMM (8192 x 3072 x 4096, w = 1 on Hopper) takes
# pace x ((2mnk x c_k + F_half) / (peak x eta) + t_k) = 1.014916 x ((2.06158e11 x 1.018023 + 1e9) /
# (989.4e12 x 0.643) + 4e-6) = 340.46 us, the pace 1 + 0.0104 x Phi^-1((8 - 0.375) / 8.25), the
# reduction's c_k = (4096 + 150) / 4096 x 8192 / (8192 + 150) (docs/compute.md).
run(report_ops_json 0 "\"name\": \"qkv_proj\",[^}]*\"pass\": \"forward\",[^}]*\"time_s\": 0\\.00034045"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --tp 2 --seq 8192 --zero 1 --ops --format json)
run(report_ops_table 0 "fwd +qkv_proj +8192x3072x4096 +bf16 +206\\.16 +- +340\\.5 +606 TFLOP/s, compute-bound"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --tp 2 --seq 8192 --zero 1 --ops)
# AsyncTP (PyTorch's micro-pipeline TP): Llama 3 8B at TP 8, 8192 tokens. The attention's gather
# (67.11 MB, 189.1 us) runs beside the QKV GEMM only (89.4 us, 7/8 of it a window): 189.1 - 78.2 =
# 110.9 us stays exposed; its kernels copy the local shard twice (4 x 67.11 / 8 = 33.55 MB).
# Without SP it is refused.
run(report_async_tp_ops 0 "fwd +attn_gather +all_gather +- +67\\.11 +189\\.1 +tp 8 ranks .*fused with its GEMMs \\(AsyncTP\\), 110\\.9 us of it exposed.*fwd +attn_gather +- +33\\.55 "
    report --model llama3-8b --gpu h100-sxm --gpus 8 --tp 8 --seq 8192 --zero 1 --tp-overlap async --ops)
run(report_async_tp_without_sp 1 "plan.tp_overlap: async \\(PyTorch's AsyncTP\\) fuses the sequence-parallel"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --tp 8 --no-sp --seq 8192 --zero 1 --tp-overlap async)
# NVFP4 (Transformer Engine's NVFP4BlockScaling): Llama 3 70B at TP 2 on 64 GB200s, the forward QKV
# GEMM 8192 x 5120 x 8192 at the GB200's nvfp4 rate, 1e16 x 0.440 (presets/gpus/gb200.json),
# 1280 tiles of 128 x 256 over 148 SMs in 9 waves (w = 1280 / 1332), at 64 GPUs' pace
# 1 + 0.0241 x Phi^-1(63.625 / 64.25) = 1.0563: 1.0563 x ((687.19e9 + 1e9) / (4.4e15 x 1280 / 1332)
# + 4e-6) = 176.1 us, its input quantized first (41/8 B per element in 2 kernels, docs/compute.md).
run(report_nvfp4_ops 0 "fwd +nvfp4_quantize_input +x2 kernels +- +343\\.93 .*fwd +qkv_proj +8192x5120x8192 +nvfp4 +687\\.19 +- +176\\.1 "
    report --model llama3-70b --gpu gb200 --gpus 64 --tp 2 --pp 4 --zero 1 --gbs 256 --seq 8192 --precision nvfp4
           --transformer-engine --ops)
# search takes --transformer-engine too: an NVFP4 sweep on GB200 ranks plans (each one's GEMMs nvfp4).
run(search_nvfp4 0 "top 1\n.*\n.*\n +1 +[0-9]+ +[0-9]+"
    search --model llama3-70b --gpu gb200 --gpus 64 --gbs 256 --seq 8192 --precision nvfp4 --transformer-engine
           --top 1)
# FP8 attention on the H100 SXM5 runs at the H200's measured cuDNN FP8 curve (the same die and peaks;
# presets/gpus/h100-sxm.json): Llama 3 8B at 8192 tokens, the forward's 549.76 GFLOP at 510.9 TFLOP/s
# plus t_k 4 us, at 8 GPUs' pace 1 + 0.0104 x Phi^-1(7.625 / 8.25) = 1.01491:
# (549.76e9 / 510.9e12 + 4e-6) x 1.01491 = 1096.2 us. It was refused before (no curve).
run(report_fp8_attention_h100 0 "fwd +flash_attention +1x32 8192x8192 d128 +bf16 +549\\.76 +- +1096\\.2 +502 TFLOP/s, cudnn-fp8"
    report --model llama3-8b --gpu h100-sxm --cluster dgx-h100 --gpus 8 --dp 8 --zero 1 --mbs 1 --gbs 16
           --seq 8192 --precision fp8 --fp8-attention --transformer-engine --ops)
# search takes the FP8 recipe a run uses: every plan's scaling and Transformer Engine's FP8 attention
# (they were report's flags only); the winner written with -o carries them. What they need is
# checked once, naming the flag.
run(search_fp8_recipe 0 "wrote [^\n]*search_fp8_winner\\.json \\(the winner\\)"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 8192 --precision fp8 --transformer-engine
           --fp8-scaling current --fp8-attention --top 1 -o ${WORK}/search_fp8_winner.json)
file(READ ${WORK}/search_fp8_winner.json search_fp8_winner)
if(NOT search_fp8_winner MATCHES "\"fp8_scaling\": \"current\"" OR NOT search_fp8_winner MATCHES "\"fp8_attention\": true")
  message(SEND_ERROR "search_fp8_recipe: the winner's plan file lacks the FP8 recipe:\n${search_fp8_winner}")
endif()
run(search_fp8_attention_needs_te 2 "--fp8-attention: is Transformer Engine's FP8 attention: needs --precision fp8 or nvfp4 and --transformer-engine \\(got precision bf16, no --transformer-engine\\)"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 8192 --fp8-attention)
run(search_fp8_scaling_bad 2 "--fp8-scaling: must be one of delayed\\|current\\|block \\(got \"sometimes\"\\)"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 8192 --precision fp8 --fp8-scaling sometimes)
run(search_fp8_scaling_needs_fp8 2 "--fp8-scaling: scales FP8 GEMMs: needs --precision fp8 \\(got bf16\\)"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 8192 --fp8-scaling current)
run(search_fp8_param_gather_needs_fp8 2 "--fp8-param-gather: gathers the parameters in FP8: needs --precision fp8 \\(got bf16\\)"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 8192 --fp8-param-gather)
# With it, no candidate is refused for it: the ZeRO-0 and ZeRO-3 plans run without it.
run(search_fp8_param_gather_none_invalid 0 " 0 invalid,"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 8192 --precision fp8 --fp8-param-gather
           --zero 0,1,2,3 --top 1)
run(report_nvfp4_on_h100 1 "plan.precision: nvfp4 is not supported by gpu h100-sxm"
    report --model llama3-70b --gpu h100-sxm --gpus 64 --tp 2 --pp 4 --zero 1 --gbs 256 --precision nvfp4
           --transformer-engine)
# --precision takes the compute dtypes only: int8 and none are state dtypes no GEMM runs in, refused
# naming the flag and the choices (the error once listed them as choices); a plan file's the same.
# What the step takes from the profile's assumed figures is said: the A100s have no measured GEMM
# figure (0.80 of the peak), the V100 no attention curve (0.60 / 0.50); an H100 has both.
run(report_assumed_gemm 0 "# default: bf16 GEMMs at 0.80 of a100-80g's peak: the profile's assumed figure"
    report --model llama3-8b --gpu a100-80g --gpus 8 --gbs 64 --zero 3 --recompute full)
run(report_assumed_attention 0 "# default: attention \\(flash\\) at 0.60 forward and 0.50 backward of v100's 16-bit peak"
    report --model llama3-8b --gpu v100 --gpus 8 --gbs 64 --zero 3 --recompute full)
run_without(report_measured_rates 0 "assumed figure"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --zero 3 --recompute full)
run(search_assumed_gemm 0 "# note: bf16 GEMMs at 0.80 of a100-80g's peak: the profile's assumed figure"
    search --model llama3-8b --gpu a100-80g --gpus 16 --gbs 128 --top 1)
run(explain_assumed_gemm 0 "# default: bf16 GEMMs at 0.80 of a100-80g's peak"
    explain --model llama3-8b --gpu a100-80g --gpus 8 --gbs 64 --no-search)
# A GPU count of zero or less is said once, as plan.gpus's error, with no plan.dp echo of it (dp
# is derived from it only when it is positive).
run(report_gpus_zero 1 "error: plan.gpus: must be > 0 \\(got 0\\)"
    report --model llama3-8b --gpu h100-sxm --gpus 0 --gbs 64)
run_without(report_gpus_zero_no_dp_echo 1 "plan.dp"
    report --model llama3-8b --gpu h100-sxm --gpus -8 --gbs 64)
run(report_precision_int8 2 "--precision: must be one of fp32\\|tf32\\|bf16\\|fp16\\|fp8\\|nvfp4 \\(set plan.precision; got \"int8\"\\)"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --precision int8)
run(report_precision_unknown 2 "--precision: must be one of fp32\\|tf32\\|bf16\\|fp16\\|fp8\\|nvfp4 \\(set plan.precision; got \"foo\"\\)"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --precision foo)
run(search_precision_none 2 "--precision: must be one of fp32\\|tf32\\|bf16\\|fp16\\|fp8\\|nvfp4 \\(got \"none\"\\)"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --precision none)
run(report_nvfp4_without_te 1 "plan.precision: nvfp4 is Transformer Engine's NVFP4BlockScaling recipe: needs plan.transformer_engine"
    report --model llama3-70b --gpu gb200 --gpus 64 --tp 2 --pp 4 --zero 1 --gbs 256 --precision nvfp4)
# Sliding-window attention: gpt-oss-120b's 18 windowed layers (128 keys) and 18 global ones; the
# windowed op's forward: 2 x 64 heads x 4096 x (128 - 128^2/8192 = 126 keys) x (64 + 64) x 1/2
# (its share of the layers) = 4.23 GFLOP.
run(report_sliding_window 0
    "18 of 36 layers attend a 128-token window; the last of every 2 the whole sequence.*fwd +flash_attention_window +1x64 4096x4096 d64 +bf16 +4\\.23 .*window 128, in 50% of the layers"
    report --model gpt-oss-120b --gpu h100-sxm --cluster dgx-h100 --gpus 64 --tp 1 --pp 4 --ep 8 --seq 4096
           --gbs 1280 --mbs 1 --zero 1 --ops)
run(sliding_window_bad 1 "model.global_attention_every: 1 makes every layer global"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --seq 4096 --zero 1 --global-attention-every 1)
run(sliding_window_mistral 0 "32 of 32 layers attend a 4096-token window\n" report --model llama3-8b --gpu h100-sxm --gpus 8 --seq 8192 --zero 3
    --sliding-window 4096)
# gpt-oss's YaRN RoPE and clamped SwiGLU as Megatron-Core runs them (docs/compute.md): said on the
# report's elementwise line; the RoPE's forward over q (64 heads) and k (8) of 64 at 4,096 tokens,
# 18,874,368 elements x 24 B = 452.98 MB in 24 kernels. A clamp on a GELU MLP is refused naming the
# field.
run(report_scaled_rope_and_clamp 0
    "# elementwise: RoPE's cos and sin scaled by 1\\.347 \\(no fused RoPE takes a scale: Megatron-Core's unfused one\\); SwiGLU clamped at 7 \\(Megatron-Core's eager clamps and cat before its fused activation\\).*fwd +rope +x24 kernels +- +452\\.98 "
    report --model gpt-oss-120b --gpu h100-sxm --cluster dgx-h100 --gpus 64 --tp 1 --pp 4 --ep 8 --seq 4096
           --gbs 1280 --mbs 1 --zero 1 --ops)
run(glu_clamp_on_gelu 1 "model.glu_clamp: clamps a gated MLP's two halves: needs mlp swiglu"
    report --model gpt3-5b --gpu h100-sxm --gpus 8 --glu-clamp 7)
# Usage errors exit 2, inconsistent plans 1; every message names the field.
run(unknown_model 2 "--model: .*no model preset named 'llama9'" report --model llama9 --gpu h100-sxm --gpus 8)
run(bad_format 2 "--format must be" report --model tiny --gpu h100-sxm --gpus 1 --format xml)
run(bad_flag 2 "unknown-flag|The following argument" report --model tiny --gpu h100-sxm --gpus 1 --unknown-flag 3)
run(bad_enum 2 "--schedule: must be one of" report --model tiny --gpu h100-sxm --gpus 1 --schedule 2f2b)
run(tp_heads 1 "plan.tp: 3 must divide model.heads=64" report --model llama3-70b --gpu h100-sxm --gpus 24 --tp 3)
run(gpus_product 1 "plan.gpus: 10 must equal tp\\*pp\\*dp\\*cp" report --model tiny --gpu h100-sxm --gpus 10 --dp 4)
run(no_gpu 2 "--gpu: is required" report --model tiny --gpus 1)
# Model overrides keep the architecture consistent (core::ApplyModelOverrides): GPT-3 shrunk to
# Megatron's 1.7B (Narayanan et al. 2021 Table 1; 1.6-1.8B with vocab 51,200: 1,652,230,656, the
# gpt-1.7b preset's count, tests/core/defaults_test.cc), and grown to the 530B shape.
run(override_gpt_1_7b 0 "\"params_total\": 1652230656,"
    report --model gpt3-175b --layers 24 --hidden 2304 --heads 24 --vocab 51200 --gpu a100-80g --gpus 8
           --seq 2048 --format json)
run(override_defaults_printed 0 "# default: ffn_hidden 9216 \\(4 x hidden 2304.*# default: kv_heads 24 .*# default: head_dim 96 "
    report --model gpt3-175b --layers 24 --hidden 2304 --heads 24 --gpu a100-80g --gpus 8 --seq 2048)
# 96 layers at the 530B width: 96 x 12 x 20480^2 = 483.2B + embedding 50257 x 20480 = 1.03B.
run(override_530b_shape 0 "\"params_total\": 484280627200,"
    report --model gpt3-175b --heads 128 --hidden 20480 --gpu a100-80g --gpus 3360 --tp 8 --pp 35
           --seq 2048 --gbs 2520 --format json)
# Uneven pipeline splits by default (core::DefaultStageSplit), printed as a default line.
run(split_llama405 0 "# default: stage_layers 7, 8 \\(x14\\), 7 "
    report --model llama3-405b --gpu h100-sxm --gpus 16384 --tp 8 --pp 16 --zero 1 --seq 8192 --gbs 2048)
# DeepSeek-V3's MTP module takes the last chunk's fourth place: 3, 4 x 14, then 2 + MTP.
run(split_deepseek 0 "# default: stage_layers 3, 4 \\(x14\\), 2 \\(61 layers and 1 MTP module"
    report --model deepseek-v3 --gpu h100-sxm --gpus 2048 --tp 8 --pp 16 --ep 8 --zero 1)
run(split_qwen3_interleaved 0 "# default: stage_layers 2, 3 \\(x30\\), 2 "
    report --model qwen3-235b-a22b --gpu h100-sxm --gpus 512 --tp 4 --pp 8 --vpp 4 --ep 8 --zero 1 --seq 4096)
# Sequence parallelism is on with TP unless --no-sp, and says so.
run(sp_default 0 "# default: sequence parallel on \\(with tp 8"
    report --model llama3-70b --gpu h100-sxm --cluster dgx-h100 --gpus 64 --tp 8 --pp 2 --zero 1 --seq 8192 --gbs 512)
# A V100 has no bf16: the default precision becomes fp16 on its DGX-2, and says so; bf16 asked for is
# refused naming the field and what the GPU has.
run(v100_default_precision 0 "1f1b, 1 microbatches \\| fp16.*# default: precision fp16 \\(v100 has no bf16"
    report --model gpt-1.7b --gpu v100 --gpus 16 --mbs 4 --gbs 64 --recompute full)
run(v100_bf16_refused 1 "plan.precision: bf16 is not supported by gpu v100 \\(it has: fp32\\|fp16\\)"
    report --model gpt-1.7b --gpu v100 --gpus 16 --mbs 4 --gbs 64 --precision bf16)
# A plan that does not fit names the standard setting that makes it fit, on stderr and in the
# table. Llama 3's 405B recipe typed without the distributed optimizer (SP is on by default):
# ZeRO-1 is the cheapest setting that fits (ZeRO-2 prints the same step and comes after it: ties
# at the printed 0.1% keep the simpler setting first). Llama 3 8B on 8 H100s without ZeRO (16
# B/param x 8.03B = 128.5 GB of states): ZeRO-2 and ZeRO-3 fit (tests/sim/fit_advice_test.cc).
run_stderr(no_fit_advice 1 "^error: does not fit: stage 1 needs [0-9.]+ GB, the GPU has 85.0 GB; --zero 1 \\(distributed optimizer \\(ZeRO-1\\)\\) makes it fit with [0-9.]+ GB headroom, step [+-][0-9.]+%"
    report --model llama3-405b --gpu h100-sxm --gpus 16384 --tp 8 --pp 16 --seq 8192 --gbs 2048)
run(no_fit_table 1 "DOES NOT FIT.*to fit, change one of \\(cheapest in step time first\\):\n  --zero [23] .*\n  --zero [23] "
    report --model llama3-8b --gpu h100-sxm --gpus 8 --seq 8192)
run(no_fit_json 1 "\"fit_advice\": \\{[ \n]*\"alone\": \\[[ \n]*\\{[ \n]*\"flags\": \"--zero [23]\""
    report --model llama3-8b --gpu h100-sxm --gpus 8 --seq 8192 --format json)
run_stderr(reliability_no_fit 1 "^error: does not fit: .*--zero [23]"
    reliability --model llama3-8b --gpu h100-sxm --gpus 8 --seq 8192 --days 10)
# Tight (docs/memory.md §4): Llama 3 8B, ZeRO-1 on 8 H100s at 7,424 tokens holds 85.9 GB with the
# assumed 5% fragmentation on its 38.9 GB of activations and 84.0 GB without it, of the 85.0 GB
# CUDA reports of an H100 (tests/core/memory_test.cc): it runs only if the caching allocator frees
# its cached blocks, so the report says TIGHT, gives the advice and exits 0; at 7,680 tokens it is
# out of memory. The report names the GPU's memory as CUDA reports it, with the physical beside it.
run(tight_table 0 "TIGHT: stage 0 needs 85.9 GB with the allocator's reserve, the GPU has 85.0 GB; without the reserve \\(peak allocated, CUDA context, NCCL\\) the most any stage needs is 84.0 GB.*to fit, change one of"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 7424)
run(gpu_memory_row 0 "#   the GPU's memory +85.05 GB  what CUDA reports of its 80 GiB \\(85.9 GB\\) physical; the driver keeps the rest"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 7424)
run_stderr(tight_warning 0 "^warning: tight: stage 0 needs 85.9 GB with the allocator's reserve, 84.0 GB without it, the GPU has 85.0 GB"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 7424)
run(tight_json 0 "\"verdict\": \"tight\",[ \n]*\"least_per_gpu_bytes\": 84002232320"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 7424 --format json)
run(tight_over 1 "DOES NOT FIT: stage 0"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 7680)
# The search counts that plan as tight and, with --allow-tight, ranks it, marked.
run(search_tight_counted 1 "1 of the plans estimated are over the budget only with the allocator's reserve.*--allow-tight ranks them"
    search --model llama3-8b --cluster dgx-h100 --gpus 8 --seq 7424 --gbs 8 --tp 1 --pp 1 --cp 1 --mbs 1 --zero 1 --recompute none)
run(search_tight_ranked 0 "ranked \\(--allow-tight\\), marked 'tight'.*\n    1   1   1     8 .* tight\n"
    search --model llama3-8b --cluster dgx-h100 --gpus 8 --seq 7424 --gbs 8 --tp 1 --pp 1 --cp 1 --mbs 1 --zero 1 --recompute none --allow-tight)

# presets lists what is built in.
run(presets 0 "llama3-70b.*h100-sxm.*dgx-h100" presets)
run(preset_json 0 "\"name\": \"mixtral-8x7b\"" presets models mixtral-8x7b)
# Each GPU's 16-bit GEMM rate as a step is costed (the default profile): the preset's sourced
# fraction, or the profile's assumed 0.80 where the preset has none (the A100s). H100 SXM5: 989.4 x
# 0.643 = 636.2 at a reduction of k = 8192, its K0 150 (shorter k slower); A100: 312 x 0.80 = 249.6.
run(presets_gpus_gemm_rate 0 "a100-80g [^\n]* GEMMs  249.6 TFLOP/s \\(assumed 0.800\\).*h100-sxm [^\n]* GEMMs  636.2 TFLOP/s \\(preset 0.643 at k 8192, K0 150\\)"
    presets gpus)
# and, where the preset has it, the memory CUDA reports, which plans are fitted to (docs/memory.md §4);
# a GPU without that measurement prints none.
run(presets_gpus_cuda_total 0 "h100-sxm [^\n]* CUDA reports 85.0 GB\n.*h200 [^\n]* CUDA reports 150.1 GB\n"
    presets gpus)
run_without(presets_gpus_b200_no_cuda_total 0 "b200 [^\n]* CUDA reports"
    presets gpus)
# plan --output writes a file that report --plan reads back to the same numbers.
run(plan_write 0 "wrote" plan --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 2 --sp --zero 1 --recompute selective
    --gbs 512 --seq 8192 --output ${WORK}/plan.json)
run(plan_read 0 "\"per_gpu_bytes\"" report --plan ${WORK}/plan.json --format json)
run(plan_override 1 "plan.gpus: 64 must equal" report --plan ${WORK}/plan.json --tp 4)
run(missing_plan 2 "--plan: .*cannot open" report --plan ${WORK}/nope.json)

file(WRITE ${WORK}/bad_plan.json "{\"gpus\": 8, \"dp\": 8, \"micro_batch\": 1, \"global_batch\": 8, \"seq_len\": 4096, \"model\": \"tiny\", \"cluster\": \"dgx-h100\", \"zer0\": 1}")
run(plan_typo 2 "plan.zer0: is not a known field \\(did you mean \"zero\"\\?\\)" report --plan ${WORK}/bad_plan.json)

# A Hugging Face config.json works as --model and counts the same parameters as the preset.
run(hf_config 0 "\"params_total\": 70553706496"
    report --model ${DATA}/hf/llama3-70b.json --gpu h100-sxm --gpus 64 --tp 8 --pp 2 --sp --zero 1
           --recompute selective --gbs 512 --seq 8192 --format json)
# --gbs-tokens: the seeds' 4M-token batch at seq 4096 is 1024 sequences.
run(gbs_tokens 0 "\"global_batch\": 1024" report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096
    --gbs-tokens 4194304 --format json)
run(gbs_tokens_bad 2 "--gbs-tokens: 1000 must be a positive multiple of seq=4096"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --seq 4096 --gbs-tokens 1000)
# Absurd sizes are refused, not overflowed.
run(huge_seq 1 "plan.seq_len: .*meshplan accepts up to 1e17"
    report --model llama3-70b --gpu h100-sxm --gpus 8 --dp 8 --seq 1000000000 --attention naive)
# A dated attention kernel runs only where it was measured: cuDNN 9.13's curve is Blackwell's.
run(dated_kernel_hopper 1 "model.attention: cudnn-9.13 .*measured on Blackwell only; gpu h100-sxm"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --attention cudnn-9.13)
run(dated_kernel_b200 0 "18799 per GPU"
    report --model llama3-8b --gpu b200 --cluster dgx-b200 --gpus 8 --attention cudnn-9.13)

# Speed and cost: report's step and train keys; validate's summary.
run(step_keys 0 "\"step\": \\{.*\"time_s\".*\"mfu\".*\"breakdown\".*\"train\": \\{.*\"cost_usd\""
    report --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 2 --sp --zero 1 --recompute selective --gbs 512
           --seq 8192 --tokens 15e12 --format json)
run(validate_json 0 "\"summary\": \\{.*\"n\": 19.*\"median_abs_error\""
    validate --dataset ${DATA}/validation/published.json --format json)
run(validate_missing 2 "--dataset: .*cannot open" validate --dataset ${WORK}/none.json)
# One record, and its scenario as a plan file: Korthikanti 2022's 530B on 2,240 A100s (TP 8: the
# QKV GEMM of a 2048-token microbatch is 2048 x 3*20480/8 x 20480) at 52.31 tokens/s per GPU,
# with the assumptions its plan was read under (the stack's among them).
run(validate_record 0 "korthikanti2022-530B-dp8-2240gpu +megatron-lm-2022 +52\\.31 [^\n]*\n# assumptions of korthikanti2022-530B-dp8-2240gpu:\n#   - .*#   - stack megatron-lm-2022: precision fp16.*\n  all +1 "
    validate --dataset ${DATA}/validation/published.json --record korthikanti2022-530B-dp8-2240gpu
             --plan-out ${WORK}/k530.json)
run(validate_record_ops 0 "qkv_proj +2048x7680x20480 +fp16" report --plan ${WORK}/k530.json --ops)
run(validate_record_none 2 "--record: no record 'nope' in the datasets \\(19 records\\)"
    validate --dataset ${DATA}/validation/published.json --record nope)
run(validate_plan_out_alone 2 "--plan-out: needs --record ID"
    validate --dataset ${DATA}/validation/published.json --plan-out ${WORK}/x.json)
# Korthikanti 2022 Table 4's per-layer timings are judged in their own table (forward and backward
# ms), not skipped; --record names one of them alone and --plan-out writes its plan.
run(validate_layer_timings 0 "19 records from 1 file\\(s\\), 66 skipped.*per-layer timings.*\n.*\n  korthikanti2022-t4-22B-1layer-baseline-no-recompute +megatron-lm-2022 +7\\.70 +[0-9.]+ +11\\.90 +[0-9.]+ +[+-][0-9.]+%.*# 5 layer timings: \\|error\\| of forward \\+ backward median"
    validate --dataset ${DATA}/validation/published.json)
run(validate_layer_record 0 "# dataset [^\n]*\n#\n# per-layer timings[^\n]*\n[^\n]*\n  korthikanti2022-t4-22B-1layer-selective-recompute +megatron-lm-2022 +7\\.70 +[0-9.]+ +13\\.20 .*# 1 layer timings"
    validate --dataset ${DATA}/validation/published.json --record korthikanti2022-t4-22B-1layer-selective-recompute
    --plan-out ${WORK}/layer.json)
run(validate_layer_json 0 "\"layer_timings\": \\[[ \n]*\\{[ \n]*\"id\": \"korthikanti2022-t4-22B-1layer-baseline-no-recompute\",.*\"published_forward_ms\": 7\\.7,.*\"layer_timings_summary\": \\{[ \n]*\"n\": 5,"
    validate --dataset ${DATA}/validation/published.json --format json)
# Each record says where its predicted step goes and carries the scenario as a plan file.
run(validate_json_breakdown 0 "\"step_s\": [0-9.]+,[^\"]*\"breakdown_s\": \\{[^\"]*\"compute\": [0-9.]+.*\"plan\": \\{.*\"name\": \"gpt-1.7b\""
    validate --dataset ${DATA}/validation/published.json --format json)
# Measured memory peaks (a copy of shared/validation/memory_measured.json): per record measured vs
# predicted GiB, summarised per group; the MoE CI runs by the architecture their records state.
run(validate_memory 0 "34 records from 1 file.*0 skipped.*all +34 .*parallelism tp\\+pp\\+ep +2 .*measured allocated +16 .*stack torchtitan-2024 +18 "
    validate --memory --dataset ${DATA}/memory/memory_measured.json)
# A record that printed only whether its run fitted (BLOOM 206B ran out of memory) is judged by the
# verdict alone, with no table of zero errors beside it.
run(validate_memory_outcome_only 0 "206b-a100x384-dp8-tp4-pp12-mbs2 +out_of_memory fits.*wrong \\(predicted to fit\\).*no measured value among these records: no error to summarise"
    validate --memory --dataset ${DATA}/memory --record bigscience-tr11-bloom-206b-a100x384-dp8-tp4-pp12-mbs2)
run(validate_memory_json 0 "\"metric\": \"memory_gib\".*\"measured\": 82.4,.*\"predicted\": [0-9.]+"
    validate --memory --dataset ${DATA}/memory/memory_measured.json --format json)
# Several datasets, or a directory of them: one table in tokens/s per GPU, summarised per group.
run(validate_two_datasets 0 "68 records from 2 file.*all +68 .*sharding zero-3 +7 .*stack deepspeed-zero3-2021 +6 "
    validate --dataset ${DATA}/validation/published.json --dataset ${DATA}/validation/published_beyond_tuning.json)
run(validate_directory 0 "narayanan2021-t2-zero3-174.6B-384gpu +deepspeed-zero3-2021 +100.4 .*dataset published_beyond_tuning.json +49 "
    validate --dataset ${DATA}/validation)
# What-if pairs (sim/comparison.h): runs of one table that differ in one thing, the ratio of the
# second to the first, published against predicted; dgxc-benchmarking's GPT-3 175B on 128 H100s
# printed FP8 at 1.477x BF16's tokens/s. The per-axis summary always, every pair with --pairs.
run(validate_pairs 0 "  precision +dgxc-v2503-gpt3-175b-h100-128gpu-bf16 +dgxc-v2503-gpt3-175b-h100-128gpu-fp8 +1\\.477 +1\\.[0-9]+ +[+-][0-9.]+%  precision bf16 -> fp8\n.*# axis +n +median +p90 +max +signed\n  all +[0-9]+ .*\n  precision +[0-9]+ .*# [0-9]+ pairs: \\|error\\| of the ratio median [0-9.]+%"
    validate --dataset ${DATA}/validation/papers_at_scale.json --pairs)
run(validate_pairs_summary 0 "# comparisons: pairs of runs measured together.*\n  all +[0-9]+ .*\n  precision +[0-9]+ .*\n  gpus +[0-9]+ "
    validate --dataset ${DATA}/validation/papers_at_scale.json)
run(validate_pairs_json 0 "\"comparisons\": \\{[ \n]*\"summary\": \\{[ \n]*\"n\": [0-9]+,.*\"axes\": \\[[ \n]*\\{[ \n]*\"n\": [0-9]+,.*\"axis\": \"precision\".*\"pairs\": \\[[ \n]*\\{[ \n]*\"axis\": \"precision\",[ \n]*\"first\": "
    validate --dataset ${DATA}/validation/papers_at_scale.json --format json)
run(validate_pairs_none 0 "# comparisons: pairs of runs.*\n# no pairs: no two of these runs are of one table and differ in one thing\n"
    validate --dataset ${DATA}/validation/published.json --record korthikanti2022-530B-dp8-2240gpu --pairs)
# Repeats (sim::FindRepeats): runs of one scenario printed more than once, in other tables or
# releases; dgxc-benchmarking printed Llama 3.1 405B FP8 on 2,304 H100s at 320 tokens/s per GPU
# (v25.03) and 290.2 (v24.11.1) for the same configs: 10.3% apart, one prediction (308.4) for both,
# so at least (320 - 290.2) / (320 + 290.2) = 4.9% off one of them. The summary always, every scenario
# with --repeats.
run(validate_repeats 0 "  +10\\.3% +4\\.9% +308\\.4 +290\\.2 +320  dgxc-v2503-llama31-405b-h100-2304gpu-fp8 dgxc-v24111-llama31-405b-h100-2304gpu-fp8\n.*# [0-9]+ scenarios, [0-9]+ runs \\(tokens/s per GPU\\): published max/min - 1 median [0-9.]+%, p90 [0-9.]+%, max 10\\.3%; the least largest \\|error\\| one prediction can have on a scenario's runs, \\(max - min\\)/\\(max \\+ min\\): median [0-9.]+%, p90 [0-9.]+%, max 4\\.9%\n"
    validate --dataset ${DATA}/validation/papers_at_scale.json --repeats)
run(validate_repeats_json 0 "\"repeats\": \\{[ \n]*\"scenarios\": [0-9]+,[ \n]*\"runs\": [0-9]+,[ \n]*\"spread\": \\{[ \n]*\"median\": [0-9.e-]+,.*\"groups\": \\[[ \n]*\\{[ \n]*\"ids\": \\[[ \n]*\"dgxc-v2503-llama31-405b-h100-2304gpu-fp8\",[ \n]*\"dgxc-v24111-llama31-405b-h100-2304gpu-fp8\""
    validate --dataset ${DATA}/validation/papers_at_scale.json --format json)
run(validate_repeats_none 0 "# repeats: runs of one scenario printed more than once.*\n# no repeats: no scenario of these runs is printed twice\n"
    validate --dataset ${DATA}/validation/published.json)
# The step split (sim::SplitSteps): MLPerf Training v6.0's DeepSeek-V3 on GB200 at 480 (Google's 256
# GPUs) down to 16 microbatches a pipeline (NVIDIA's 8,192) fits step = m t + F with t = 0.1220 s
# and F = 1.861 s published (docs/validation.md); the summary always, every series with --step-split;
# none where no plan is measured three times over microbatch counts a factor of 2 apart.
run(validate_step_split 0 "  +0\\.1220 +0\\.1[0-9]+ +1\\.861 +0\\.[0-9]+ +[0-9.]+%  mlperf-v60-google-gb200-nvl72-n64-ngc26\\.04-nemo-deepseekv3-671b \\(480: 59\\.61 / [0-9.]+\\), .*mlperf-v60-nvidia-tyche-hsg-ngpu8192-ngc26\\.04-nemo-deepseekv3-671b \\(16: 3\\.505 / [0-9.]+\\)\n.*# [0-9]+ series, [0-9]+ runs: predicted t against published \\|error\\| median [0-9.]+%"
    validate --dataset ${DATA}/validation/mlperf_training.json --step-split)
run(validate_step_split_json 0 "\"step_split\": \\{[ \n]*\"series_count\": [0-9]+,[ \n]*\"runs\": [0-9]+,"
    validate --dataset ${DATA}/validation/mlperf_training.json --format json)
# ... and every report's How close section carries the corpus's step split (presets/accuracy/step.json).
run(report_accuracy_step_split 0 "#   step time of one plan at several GPU counts: over [0-9]+ strong-scaling series \\([0-9]+ runs; validate --step-split\\) the time a microbatch adds came within [0-9.]+% \\(median; p90 [0-9.]+%, signed [-+][0-9.]+%\\) and a step's fixed cost [-+][0-9.]+ s off"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --zero 1 --seq 4096 --gbs 1280 --stack megatron-core-2024)
run(validate_step_split_none 0 "# step split: strong-scaling series.*\n# no series: no plan of these runs is measured three times over microbatch counts a factor of 2 apart\n"
    validate --dataset ${DATA}/validation/published.json)
# Memory: torchtitan's 8B FSDP step on 8 H100s, eager (82.4 GiB reserved) and compiled (77.0), is
# one scenario to the memory model, which does not read torch.compile from these records.
run(validate_memory_repeats 0 "  +7\\.0% +3\\.4% +77\\.4[0-9] +77 +82\\.4  torchtitan-2412-t1-8b-8gpu-fsdp torchtitan-2412-t1-8b-8gpu-fsdp-compile\n.*# [0-9]+ scenarios, [0-9]+ runs \\(peak GiB\\)"
    validate --memory --dataset ${DATA}/memory/memory_measured.json --repeats)
run(report_accuracy_pairs 0 "#   step time of one plan against another: the ratio of two published runs that differ in one thing came within [0-9.]+% \\(median; p90 [0-9.]+%, [0-9]+ pairs; validate --pairs\\); by what differs, pairs and median: precision [0-9]+, [0-9.]+%; gpus [0-9]+, [0-9.]+%"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --zero 1 --seq 4096 --gbs 1280)
# ... and the published runs' own spread where one plan was printed twice (the tables' repeats).
run(report_accuracy_repeats 0 "#   step time of one plan measured twice: [0-9]+ plans printed more than once \\([0-9]+ runs; validate --repeats\\) differ by [0-9.]+% \\(median; p90 [0-9.]+%\\), so one prediction is at least [0-9.]+% off one of them \\(median; p90 [0-9.]+%\\)\n#   memory of one plan measured twice: [0-9]+ plans"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --zero 1 --seq 4096 --gbs 1280)
run(report_accuracy_repeats_json 0 "\"repeats\": \\{[ \n]*\"scenarios\": [0-9]+,[ \n]*\"runs\": [0-9]+,[ \n]*\"spread_median\": [0-9.]+"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --zero 1 --seq 4096 --gbs 1280 --format json)
# How close: report shows the shipped accuracy tables' rows of the plan's groups (presets/accuracy,
# made by validate --accuracy-out on tests/data; docs/validation.md), step time beside memory, for
# the default profile only; a group with no memory dimension (scale) or no step dimension
# (parallelism) leaves that side blank.
run(report_accuracy 0 "# How close: the error on published runs in this plan's groups \\(meshplan validate, default profile: [0-9]+ step times, [0-9]+ memory peaks.*\n#   all +[0-9]+ +[0-9.]+% +[0-9.]+% +[+-][0-9.]+% \\| +[0-9]+ .*\n#   joint h100-sxm moe bf16 +[0-9]+ +[0-9.]+% .*\n#   model moe +[0-9]+ .*\n#   scale <=64 +[0-9]+ +[0-9.]+% +[0-9.]+% +[+-][0-9.]+% \\|\n#   sequence <=32k +[0-9]+ +[0-9.]+% +[0-9.]+% +[+-][0-9.]+% \\| +[0-9]+ .*\n#   stack megatron-core-2024 +[0-9]+ .*\n#   parallelism tp\\+pp\\+ep +\\| +[0-9]+ .*\n#   step time: runs of this GPU, model kind and precision at once \\(h100-sxm moe bf16\\): median [0-9.]+%, p90 [0-9.]+% \\([0-9]+ runs, signed [+-][0-9.]+%\\)\n#   step time: as uncertain as its least accurate group, model moe"
    report --model mixtral-8x7b --gpu h100-sxm --gpus 64 --tp 2 --ep 8 --pp 2 --zero 1 --stack megatron-core-2024 --recompute full)
# ... and the published runs of the plan's very model on its GPU, its precision first, nearest in
# GPU count: gpt-oss-120b on 64 H100s, NeMo AutoModel's BF16 run and Megatron-Bridge's five (the
# first five shown, in the table's order).
run(report_accuracy_runs 0 "#   published runs of gpt-oss-120b on h100-sxm, the plan's precision first, then nearest in GPU count \\(5 of 6; validate --record ID\\):\n#     automodel-2510-h100-gpt-oss-120b-64gpu +64 GPUs bf16 +h100-sxm +[+-][0-9.]+%\n#     megatron-bridge-2511-dgx-h100-gpt-oss-120b-64gpu +64 GPUs bf16 +h100-sxm +[+-][0-9.]+%\n"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --zero 1 --seq 4096 --gbs 1280)
# ... and the range runs like it measured (sim::RangeOf; its figures: tests/sim/accuracy_test.cc),
# as the plan's own numbers: tokens/s per GPU, step, days and cost; the peak against the GPU.
run(report_accuracy_range 0 "#   step time: runs like this plan \\(the [0-9]+ of h100-sxm moe bf16\\) measured 0\\.[0-9]+x to [01]\\.[0-9]+x the predicted tokens/s \\(their 10th to 90th percentile\\): [0-9]+ to [0-9]+ tokens/s per GPU, a step of [0-9.]+ to [0-9.]+ s, [0-9.]+ to [0-9.]+ days, \\$[0-9.e+]+ to \\$[0-9.e+]+ before failures\n#   memory: peaks like this plan's \\(the [0-9]+ of h100-sxm moe bf16\\) measured [0-9.]+x to [0-9.]+x the predicted \\(their 10th to 90th percentile\\): [0-9.]+ to [0-9.]+ GB on the GPU of 85\\.0 GB\n"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --zero 1 --seq 4096 --gbs 1280)
run(report_accuracy_range_json 0 "\"range\": \\{[ \n]*\"basis\": \"h100-sxm dense bf16\",[ \n]*\"n\": [0-9]+,[ \n]*\"p10_error\": [-0-9.e]+,[ \n]*\"p90_error\": [-0-9.e]+,[ \n]*\"low_factor\": [0-9.e-]+,[ \n]*\"high_factor\": [0-9.e-]+,[ \n]*\"tokens_per_s_per_gpu\": \\[[-0-9.e+, \n]+\\],[ \n]*\"step_s\": \\[[-0-9.e+, \n]+\\],[ \n]*\"days\": \\[[-0-9.e+, \n]+\\],[ \n]*\"cost_usd\""
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --format json)
run(report_accuracy_json 0 "\"accuracy\": \\{[ \n]*\"profile\": \"default\",[ \n]*\"step\": \\{[ \n]*\"metric\": \"tokens_per_s_per_gpu\",[ \n]*\"made_by\": \"meshplan validate --dataset tests/data/validation --accuracy-out presets/accuracy/step.json\""
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --format json)
run_without(report_accuracy_profile 0 "How close|\"accuracy\""
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --profile a100-megatron-2022)
# validate --accuracy-out writes the table (the command that made it inside); only for the
# default profile and every record.
file(REMOVE ${WORK}/acc.json)
run_stderr(validate_accuracy_out 0 "wrote .*acc.json \\(19 runs, [0-9]+ groups\\)"
    validate --dataset ${DATA}/validation/published.json --accuracy-out ${WORK}/acc.json)
file(READ ${WORK}/acc.json acc_text)
if(NOT acc_text MATCHES "\"metric\": \"tokens_per_s_per_gpu\",[ \n]*\"made_by\": \"meshplan validate --dataset [^\"]*published.json --accuracy-out [^\"]*acc.json\".*\"all\": \\{[ \n]*\"n\": 19,")
  message(SEND_ERROR "validate_accuracy_out: the table does not say what made it:\n${acc_text}")
endif()
run(validate_accuracy_profile 2 "--accuracy-out: the accuracy table is the default profile's"
    validate --dataset ${DATA}/validation/published.json --profile a100-megatron-2022 --accuracy-out ${WORK}/x.json)
run(validate_accuracy_record 2 "--accuracy-out: a table of every record; drop --record"
    validate --dataset ${DATA}/validation/published.json --record korthikanti2022-530B-dp8-2240gpu --accuracy-out ${WORK}/x.json)

# A software stack's defaults for a plan: Narayanan Table 2's PTD-P run at 384 GPUs (the
# validate row narayanan2021-t2-ptd-174.6B-384gpu predicts the same 104 tokens/s per GPU).
run(stack_flag 0 "zero 0 \\| sp off \\| recompute full .*fp16.*default: stack megatron-lm-2021: fp16, naive attention.*\\(104 per GPU\\)"
    report --model gpt3-175b --cluster dgx-a100 --tp 8 --pp 12 --dp 4 --gbs 1536 --stack megatron-lm-2021)
# GPUs that do not divide over tp*pp*cp: said of --gpus, where dp came from (it read "8 must equal
# tp*pp*dp*cp = 1*1*1*3", with a dp of 1 nobody gave).
run(gpus_not_a_multiple 2 "--gpus: 8 must be a multiple of tp\\*pp\\*cp = 1\\*1\\*3 = 3"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --cp 3)
run(stack_unknown 2 "--stack: no stack preset named 'nope'" report --model gpt3-175b --cluster dgx-a100 --gpus 8 --stack nope)
# A stack file reports every problem at once, one "stack.key: rule" line each after the file's
# name, and a misspelt key is refused with the nearest known one (it used to be ignored silently,
# leaving the stack's default in its place).
run_stderr(stack_file_every_problem 2
    "error: --stack: [^\n]*malformed/stack_typo_and_bad_values.json:\nstack.recompute: must be one of none\\|selective\\|full\nstack.zero: must be 0, 1, 2 or 3\nstack.overlap_grad_reduc: is not a known field \\(did you mean \"overlap_grad_reduce\"\\?\\)"
    report --model gpt3-175b --cluster dgx-a100 --gpus 8 --stack ${DATA}/malformed/stack_typo_and_bad_values.json)
# A GPU no built-in cluster holds: the error lists the clusters of its generation (compute
# capability 8: the A100 80GB and A800 nodes), and --cluster dgx-a100 costs it in those nodes.
run(cluster_for_a100_40g 2 "--cluster: is required: no built-in cluster uses gpu a100-40g; clusters of its generation: dgx-a100 \\(a100-80g\\), hgx-a800 \\(a800\\), jean-zay-a100 \\(a100-80g\\)"
    report --model llama3-8b --gpu a100-40g --gpus 64)
run(cluster_a100_40g_in_dgx_a100 0 "llama3-8b on 64 x a100-40g \\(dgx-a100\\)"
    report --model llama3-8b --gpu a100-40g --cluster dgx-a100 --gpus 64 --seq 4096 --zero 3 --recompute full)
# search takes a stack's fixed defaults (FlashAttention-2, fp32 gradients, no TP overlap) and still
# searches ZeRO, recompute and SP.
run(search_stack 0 "note: stack torchtitan-2024: bf16, flash2 attention.*still tries every ZeRO stage.*top 3"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 8192 --stack torchtitan-2024 --top 3)
run(search_stack_unknown 2 "--stack: no stack preset named 'nope'"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --stack nope)
run(presets_stacks 0 "megatron-core-2024 +bf16 flash +recompute none +tp-overlap full +zero 1  sp  FLOPs: megatron" presets stacks)
file(MAKE_DIRECTORY ${WORK}/no-datasets)
run(validate_empty_directory 2 "--dataset: .*no-datasets: directory holds no .json files"
    validate --dataset ${WORK}/no-datasets)
run(validate_json_groups 0 "\"printed\": \"tflops_per_gpu 144\".*\"groups\": \\[.*\"dimension\": \"sharding\""
    validate --dataset ${DATA}/validation/published_beyond_tuning.json --format json)
run(bad_profile 2 "--profile: no profile named \"fast\": not a preset, and the store .* does not exist"
    report --model tiny --gpu h100-sxm --gpus 1 --profile fast --db ${WORK}/no-such-store.db)
# calibrate: usage errors name the flag; a profile name from a fit is looked up in --db.
run(calibrate_no_name 2 "--name is required|name.*required" calibrate fit ${DATA}/measurements/tiny-cpu.json)
run(calibrate_bad_name 2 "--name: must be a profile name" calibrate fit ${DATA}/measurements/tiny-cpu.json
    --name default --db ${WORK}/cal.db)
run(calibrate_missing_file 2 "no-such.json" calibrate fit ${WORK}/no-such.json --name x --db ${WORK}/cal.db)
run(calibrate_fit 0 "saved profile tiny-cpu version 1 to .*cal.db"
    calibrate fit ${DATA}/measurements/tiny-cpu.json --name tiny-cpu --db ${WORK}/cal.db)
run(calibrate_refit 0 "saved profile tiny-cpu version 2"
    calibrate fit ${DATA}/measurements/tiny-cpu.json --name tiny-cpu --db ${WORK}/cal.db)
run(report_stored_profile 0 "predictions for cpu:vm with profile tiny-cpu"
    report --compare ${DATA}/measurements/tiny-cpu.json --profile tiny-cpu --db ${WORK}/cal.db)
run(history_after_fit 0 "tiny tp1 pp1 dp1 mbs2 seq256 on 1x h100-sxm.*cpu.*single_process" history --db ${WORK}/cal.db)
run(history_profiles_after_fit 0 "tiny-cpu +2" history --profiles --db ${WORK}/cal.db)
run(validate_cpu_profile 2 "fitted on cpu:vm, not on a GPU preset"
    validate --dataset ${DATA}/validation/published.json --profile tiny-cpu --db ${WORK}/cal.db)
# A GEMM sweep alone is enough for a cpu profile (meshplan-run --threads 1 bench gemm on the
# development machine: tests/data/measurements/cpu-bench-gemm.json); its power is the plan GPU's.
run(calibrate_gemm_only 0 "gemm_efficiency.bf16 .*kept \\(not fitted\\): hbm_efficiency.*saved profile gemm-only version 1"
    calibrate fit ${DATA}/measurements/cpu-bench-gemm.json --name gemm-only --db ${WORK}/cal.db)
run(report_gemm_only 0 "energy uses h100-sxm's TDP: cpu:vm's power was not measured"
    report --model tiny --gpu h100-sxm --gpus 1 --profile gemm-only --db ${WORK}/cal.db)
run(calibrate_published 0 "korthikanti2022-t4-22B-1layer-baseline-no-recompute +7.70 .*saved profile t4 version 1"
    calibrate published --dataset ${DATA}/validation/published.json --name t4 --db ${WORK}/cal.db)
# (the defaults' 2.4% became 2.6% when a tied model's last pipeline stage synchronised and updated its
# own copy of the word embedding, as Megatron-LM does: the PP rows of Narayanan Table 1 0.1-0.3 points slower)
run(validate_shipped_profile 0 "median 5.3%, p90 9.6%, mean 5.7%, max 11.5%.*with the built-in defaults: \\|error\\| median 2.7%"
    validate --dataset ${DATA}/validation/published.json --profile a100-megatron-2022)
# The stage's three totals: what torch reports as peak allocated and reserved, and what the GPU
# holds (the fit verdict's number); JSON has the first two per stage.
run(report_allocator_peaks 0 "= peak allocated +[0-9.]+ GB +torch.cuda.max_memory_allocated.*= peak reserved +[0-9.]+ GB.*= on the GPU +[0-9.]+ GB +nvidia-smi"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --mbs 1 --gbs 8 --seq 8192)
run(report_allocator_peaks_json 0 "\"peak_allocated_bytes\": [0-9]+,.*\"peak_reserved_bytes\": [0-9]+"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --mbs 1 --gbs 8 --seq 8192 --format json)
run(report_save 0 "saved plan [0-9]+ and prediction [0-9]+ to .*cal.db"
    report --model tiny --gpu h100-sxm --gpus 1 --save --db ${WORK}/cal.db)
run(history_predictions 0 "tiny tp1 pp1 dp1 mbs1 seq.* default +meshplan 0.1.0 step-model/11"
    history --predictions --db ${WORK}/cal.db)

# simulate: the event-by-event pipeline, its JSON and timelines, with a busy time per stream.
run(simulate_json 0 "\"step_time_s\".*\"bubble_fraction\".*\"stages\".*\"busy_s\".*\"idle_s\".*\"compute_busy_s\".*\"tp_comm_busy_s\".*\"dp_comm_busy_s\": [0-9.]*[1-9].*\"p2p_busy_s\": [0-9.]*[1-9]"
    simulate --model llama3-8b --gpu h100-sxm --gpus 16 --pp 4 --dp 4 --zero 1 --seq 4096 --gbs 32 --format json
             --trace ${WORK}/trace.json --svg ${WORK}/gantt.svg)
# The trace names a thread per stream; the SVG has a sub-row per communication stream in use.
file(READ ${WORK}/trace.json trace_json)
foreach(stream compute tp_comm dp_comm p2p)
  if(NOT trace_json MATCHES "\"thread_name\", \"ph\": \"M\", \"pid\": 3, \"tid\": [0-9], \"args\": {\"name\": \"${stream}\"}")
    message(SEND_ERROR "simulate_trace: ${WORK}/trace.json names no ${stream} thread for rank 3")
  endif()
endforeach()
file(READ ${WORK}/gantt.svg gantt_svg)
if(NOT gantt_svg MATCHES ">dp_comm</text>.*>p2p</text>")
  message(SEND_ERROR "simulate_svg: ${WORK}/gantt.svg has no dp_comm and p2p sub-rows")
endif()
run(simulate_gantt 0 "rank 3  \\|[^\n]*\n dp_comm\\|[^\n]*\n     p2p\\|" simulate --model llama3-8b --gpu h100-sxm
    --gpus 16 --pp 4 --dp 4 --zero 1 --seq 4096 --gbs 32 --gantt)
run(simulate_table_streams 0 "compute +tp_comm +dp_comm +p2p" simulate --model llama3-8b --gpu h100-sxm --gpus 32
    --tp 2 --pp 4 --dp 4 --sp --zero 1 --seq 4096 --gbs 32)
run(simulate_bad_straggler 2 "--straggler: \"9:1.1\" must be RANK:FACTOR" simulate --model llama3-8b --gpu h100-sxm
    --gpus 16 --pp 4 --dp 4 --seq 4096 --gbs 32 --straggler 9:1.1)

# search: the seeds' sanity checks end to end, the winner as a plan file, explanations,
# usage errors; export of a known plan to each framework.
run(search_7b_json 0 "\"evaluated\": [1-9][0-9]*.*\"plans\": \\[[ \n]*\\{[ \n]*\"rank\": 1,[ \n]*\"gpus\": 8,[ \n]*\"tp\": 1,[ \n]*\"pp\": 1,[ \n]*\"dp\": 8,"
    search --model llama2-7b --cluster dgx-h100 --gpus 8 --seq 4096 --gbs 512 --format json)
run(search_405b 0 "# top 3\n#rank[^\n]*\n#[^\n]*\n +1 +8 +(8|16|32|64) "
    search --model llama3-405b --cluster dgx-h100 --gpus 16384 --seq 8192 --gbs 2048 --top 3)
run(search_output 0 "wrote .*winner.json"
    search --model llama3-8b --cluster dgx-h100 --gpus 16 --seq 8192 --gbs 256 --top 1 --output ${WORK}/winner.json)
run(search_output_read 0 "\"fits\": true" report --plan ${WORK}/winner.json --format json)
run(search_explain 0 "data parallel \\(DDP, ZeRO-0\\): out_of_memory.*needs [0-9.]+ GB per GPU.*ZeRO-1/2: fits"
    search --model llama2-7b --cluster dgx-h100 --gpus 8 --seq 4096 --gbs 512 --top 1 --explain-rejections)
run(search_restrict 0 "\"plans\": \\[[ \n]*\\{[ \n]*\"rank\": 1,[ \n]*\"gpus\": 64,[ \n]*\"tp\": 4,[ \n]*\"pp\": 2,"
    search --model llama3-70b --cluster dgx-h100 --gpus 64 --seq 8192 --gbs 128 --tp 4 --pp 2 --zero 1,2 --format json)
run(search_no_fit 1 "no plan fits" search --model llama3-405b --cluster dgx-h100 --gpus 8 --seq 8192 --gbs 64)
run(search_no_gpus 2 "--gpus: is required" search --model llama3-8b --cluster dgx-h100 --gbs 64)
# Activation offloading in every plan: Llama 3 70B on 64 GB200s, 40 layers in host memory; the
# recipe's own plan (DP 64, ZeRO-3, micro batch 2) is among the top, pp 1 and no recomputation only.
run(search_offload_activations 0 "\"pp\": 1,.*\"recompute\": \"none\".*\"activation_layers\": 40"
    search --model llama3-70b --gpu gb200 --gpus 64 --gbs 256 --precision fp8 --offload-activations 40 --top 3 --format json)
run(search_offload_bad 2 "--offload-optimizer: must be one of none\\|cpu\\|nvme"
    search --model llama3-70b --gpu gb200 --gpus 64 --gbs 256 --offload-optimizer bogus)
# Report with activation offloading: the offloaded bytes on their own line, the copies costed.
run(report_offload_activations 0 "activations offloaded +145\\.12 GB.*fits"
    report --model llama3-70b --gpu gb200 --gpus 64 --zero 3 --mbs 2 --gbs 256 --precision fp8 --offload-activations 40)
run(report_offload_activations_pp 1 "plan.offload.activation_layers: activation offloading needs plan.pp=1"
    report --model llama3-70b --gpu gb200 --gpus 64 --pp 2 --zero 1 --gbs 256 --offload-activations 40)
# Fine-grained offloading of core attention's saved tensors: Llama 3 8B, 4 x 8192 tokens a
# microbatch, q (32 x 128) and k, v (8 x 128) in bf16 and the fp32 log-sum-exp of 32 heads:
# 32768 x (2 x 6144 + 4 x 32) = 406,847,488 B a layer, 32 layers 13.02 GB in host memory (the
# plan still does not fit: exit 1, the table printed).
run(report_offload_modules 1 "activations offloaded +13\\.02 GB +per microbatch: what core_attn save"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --mbs 4 --seq 8192 --gbs 64 --offload-modules core_attn)
run(report_offload_modules_bad 2 "--offload-modules: must list distinct modules, comma-separated, each one of attn_norm\\|qkv_linear"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --gbs 64 --offload-modules experts)
run(report_offload_modules_dense 1 "plan.offload.modules: expert_fc1, moe_act and fused_group_mlp need an MoE model"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --gbs 64 --offload-modules moe_act)
# DeepSpeed's checkpoints in host memory (cpu_checkpointing): GPT 175B on 256 A100s as its 2022 Azure
# runs trained it. 96 layers x 512 x 32 x 12,288 x 2 B = 38.65 GB of checkpoints a microbatch leave
# the GPU; their copies out and back over PCIe Gen4's 32 GB/s each way, 2 x 1.208 s, are exposed.
run(report_offload_checkpoints 0 "checkpoints offloaded +38\\.65 GB.*offload copies \\(exposed\\) +2\\.416 s.*fits"
    report --model gpt3-175b --gpu a100-80g --cluster dgx-a100 --gpus 256 --zero 3 --mbs 32 --seq 512 --gbs 8192
    --recompute full --offload-checkpoints)
run(report_offload_checkpoints_selective 1 "plan.offload.checkpoints: checkpoints in host memory need plan.recompute=full"
    report --model gpt3-175b --gpu a100-80g --cluster dgx-a100 --gpus 256 --zero 3 --mbs 32 --seq 512 --gbs 8192
    --recompute selective --offload-checkpoints)
# ZeRO-Offload: Llama 3 8B at ZeRO-2 on a DGX H100, the optimizer on the host. Its Adam streams 28 B
# a parameter of each rank's 1,003,782,656 at DeepSpeed's measured 0.177 of the node's 563.2 GB/s,
# shared by 8 ranks (2.256 s), and the bf16 gradients and weights cross the 64 GB/s link (2 x
# 0.031 s), with the GPU's gradient zeroing and pre-division (13 ms): 2.331 s where the GPU's own
# Adam took 0.025 s.
run(report_offload_optimizer 0 "optimizer step +2\\.331 s.*the optimizer steps on the host: its Adam at 99\\.7 GB/s, DeepSpeed's measured 0\\.177 of the node's 563\\.2 GB/s of host memory, shared by 8 ranks"
    report --model llama3-8b --cluster dgx-h100 --gpus 8 --zero 2 --offload-optimizer cpu --gbs 64)
run(report_offload_optimizer_unknown_host 1 "plan.offload.optimizer: cluster dgx-b200 has no host_memory_bytes_per_s"
    report --model llama3-8b --cluster dgx-b200 --gpus 8 --zero 2 --offload-optimizer cpu --gbs 64)
# Searched with the checkpoints in host memory: every plan recomputes whole layers.
run(search_offload_checkpoints_full 0 "\"recompute\": \"full\".*\"checkpoints\": true"
    search --model gpt3-175b --gpu a100-80g --cluster dgx-a100 --gpus 256 --seq 512 --gbs 8192 --offload-checkpoints
    --top 3 --format json)
run_without(search_offload_checkpoints 0 "\"recompute\": \"(none|selective)\""
    search --model gpt3-175b --gpu a100-80g --cluster dgx-a100 --gpus 256 --seq 512 --gbs 8192 --offload-checkpoints
    --top 3 --format json)
run(search_bad_objective 2 "--objective: must be throughput, time or cost"
    search --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 64 --objective speed)
run(search_bad_frac 2 "--max-memory-frac: must be in \\(0, 1\\]"
    search --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 64 --max-memory-frac 1.5)
run(export_plan 0 "wrote" plan --model llama3-405b --cluster dgx-h100 --gpus 16384 --tp 8 --pp 16 --sp --zero 1
    --recompute selective --gbs 2048 --seq 8192 --stage-layers 7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7 --output ${WORK}/l3.json)
# An --output that is a directory is refused saying so (it read "cannot replace it with DIR.tmp").
run(plan_output_directory 1 "--output: [^\n]*: is a directory \\(give the path of a file to write\\)"
    plan --model llama3-8b --cluster dgx-h100 --gpus 8 --output ${WORK})
run(export_megatron 0 "--tensor-model-parallel-size 8.*--pipeline-model-parallel-size 16.*--decoder-first-pipeline-num-layers 7.*--decoder-last-pipeline-num-layers 7.*--sequence-parallel.*--use-distributed-optimizer.*--recompute-granularity selective.*--micro-batch-size 1.*--global-batch-size 2048"
    export --plan ${WORK}/l3.json --to megatron)
# --pp-flushes 4: Llama 3 70B's 32 microbatches per pipeline in 4 schedule runs of 8 (torch's
# pipelining under NeMo AutoModel's gradient accumulation). The step is 4 x (the 8-microbatch
# step, gbs 16: 2.946 s, less its 0.018 s optimizer step) + 0.018 = 11.730 s, four bubbles of
# 0.764 s (tests/sim/step_model_test.cc checks the identity exactly). The stream simulation and
# the exports, which run a step in one flush, refuse it naming the field.
run(report_pp_flushes 0 "1f1b, 32 microbatches in 4 flushes \\|.*pipeline bubble +3\\.05[0-9] s.*step +11\\.73[0-9] s"
    report --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 4 --sp --zero 1 --seq 8192 --gbs 64 --recompute selective --pp-flushes 4)
run(report_pp_flushes_one 0 "pipeline bubble +0\\.764 s.*step +2\\.946 s"
    report --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 4 --sp --zero 1 --seq 8192 --gbs 16 --recompute selective)
run(simulate_pp_flushes 2 "plan\\.pp_flushes: the stream simulation runs the step's microbatches in one pipeline flush"
    simulate --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 4 --sp --zero 1 --seq 8192 --gbs 64 --pp-flushes 4)
run(report_pp_flushes_bad 1 "plan\\.pp_flushes: more than one pipeline flush needs plan\\.pp >= 2"
    report --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --zero 1 --seq 8192 --gbs 64 --pp-flushes 2)
run(plan_pp_flushes 0 "wrote" plan --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 4 --sp --zero 1 --seq 8192
    --gbs 64 --recompute selective --pp-flushes 4 --output ${WORK}/flushes.json)
run(export_pp_flushes 1 "Megatron-LM's pipeline schedules run every microbatch of the step in one flush \\(plan\\.pp_flushes\\)"
    export --plan ${WORK}/flushes.json --to megatron)
# The stage holding the MTP module says so in the per-stage table.
run(report_mtp_stage 0 " 15 +59-60\\+mtp +[0-9]"
    report --model deepseek-v3 --gpu h800 --gpus 2048 --pp 16 --ep 64 --zero 1 --recompute full)
# --mtp-layers 0 trains a preset without its MTP module, the module's description (Nemotron 3
# Super's shared *E layer) going with it: 120,668,707,840 parameters, 12,770,237,440 active, the
# count without MTP its preset's source states (123,611,033,088 with the module: Megatron-Bridge's
# verification card). It was refused before, naming mtp_pattern and mtp_shared.
run(report_mtp_off 0 "parameters: 120.7B total \\(120668707840\\), 12.77B active"
    report --model nemotron-3-super --gpu b200 --gpus 64 --ep 8 --zero 1 --recompute full --mtp-layers 0)
# A hybrid model takes an MTP module from flags: Nemotron 3 Nano with a shared *E module at two
# depths is Nemotron 3.5 Lightning, 32,913,266,240 parameters (its preset, and Megatron-Bridge's
# verification card's count); the pattern without depths is refused naming the field.
run(report_mtp_on_hybrid 0 "parameters: 32.91B total \\(32913266240\\), 3.698B active"
    report --model nemotron-3-nano --gpu b200 --gpus 8 --ep 8 --seq 8192 --zero 1 --recompute full --mtp-layers 2
    --mtp-pattern "*E" --mtp-shared true)
run(report_mtp_pattern_alone 1 "model.mtp_pattern: needs model.mtp_layers > 0"
    report --model nemotron-3-nano --gpu b200 --gpus 8 --ep 8 --mtp-pattern "*E")
# DeepSeek-V3's MTP module, the native fused loss and a deferred head wgrad reach Megatron's flags.
run(export_plan_dsv3 0 "wrote" plan --model deepseek-v3 --gpu h800 --gpus 2048 --pp 16 --ep 64 --zero 1
    --cross-entropy native --defer-head-wgrad 2 --output ${WORK}/dsv3.json)
run(export_megatron_mtp 0 "--mtp-num-layers 1.*--cross-entropy-loss-fusion.*--cross-entropy-fusion-impl native.*--defer-embedding-wgrad-compute.*--wgrad-deferral-limit 2"
    export --plan ${WORK}/dsv3.json --to megatron)
# Transformer Engine's cross entropy (Megatron-Bridge's performance runs since 25.11).
run(export_plan_te_loss 0 "wrote" plan --model llama3-8b --gpu h100-sxm --gpus 8 --cross-entropy te
    --output ${WORK}/te_loss.json)
run(export_megatron_te_loss 0 "Transformer Engine 2.18 or newer.*--cross-entropy-loss-fusion.*--cross-entropy-fusion-impl te"
    export --plan ${WORK}/te_loss.json --to megatron)
# The same flags for the in-place kernels of TE 2.17 and older, which only the installed TE picks.
run(export_plan_te_inplace_loss 0 "wrote" plan --model llama3-8b --gpu h100-sxm --gpus 8 --cross-entropy te-inplace
    --output ${WORK}/te_inplace_loss.json)
run(export_megatron_te_inplace_loss 0 "Transformer Engine 2.17 or older.*--cross-entropy-fusion-impl te"
    export --plan ${WORK}/te_inplace_loss.json --to megatron)
# torchtitan's loss under torch.compile (from bbb1b616e): 4 B per logit where its eager upcast loss
# holds 12: Llama 3 8B at 2 x 8,192 tokens on H200s, 98.57 GB of activations eager, 8 x 16,384 x
# 128,256 B = 16.81 GB less compiled.
run(report_cross_entropy_upcast 0 "activations held +98.57 GB" report --model llama3-8b --gpu h200 --gpus 32
    --zero 3 --mbs 2 --seq 8192 --gbs 64 --cross-entropy upcast)
run(report_cross_entropy_compiled 0 "activations held +81.76 GB" report --model llama3-8b --gpu h200 --gpus 32
    --zero 3 --mbs 2 --seq 8192 --gbs 64 --cross-entropy compiled)
# Gradients averaged inside the DP collective (Megatron-Bridge's recipes since 25.11).
run(export_plan_average_in_collective 0 "wrote" plan --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1
    --no-grad-prescale --output ${WORK}/avg.json)
run(export_megatron_average_in_collective 0 "--ddp-average-in-collective" export --plan ${WORK}/avg.json --to megatron)
# The MoE token dispatcher meshplan costs reaches Megatron's flags (its own default, allgather,
# is not what meshplan costs); a dispatcher it does not cost is refused naming the field.
run(export_plan_q30_flex 0 "wrote" plan --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --zero 1 --seq 4096
    --moe-dispatcher flex --output ${WORK}/q30.json)
run(export_megatron_flex 0 "--expert-model-parallel-size 8.*--moe-token-dispatcher-type flex"
    export --plan ${WORK}/q30.json --to megatron)
run(export_megatron_alltoall 0 "--moe-token-dispatcher-type alltoall"
    export --plan ${WORK}/dsv3.json --to megatron)
# --repeat-kv (torchtitan's repeat_kv): Llama 3 8B's 8 KV heads copied to 32 before the kernel,
# 2 x 8192 x (8 + 32) x 128 x 2 B = 167.77 MB per layer at 8k tokens per rank, and CP 8 gathers
# the copies: 8 x 2 x 8192 x 32 x 128 x 2 B = 1073.74 MB (268.44 MB without the flag).
run(report_repeat_kv 0 "fwd +repeat_kv +x2 kernels +- +167\\.77.*fwd +cp_kv_all_gather +all_gather +- +1073\\.74"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --cp 8 --zero 3 --seq 65536 --gbs 1 --cp-kind allgather --repeat-kv --ops)
run(report_grouped_kv 0 "fwd +cp_kv_all_gather +all_gather +- +268\\.44"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --cp 8 --zero 3 --seq 65536 --gbs 1 --cp-kind allgather --ops)
# --keep-lp-grads (DeepSpeed's BF16_Optimizer): 2 + 4 + 2 + 4 + 2 x 4 = 20 B of model state per
# parameter before sharding; refused beside a 16-bit gradient buffer, naming the field.
run(report_keep_lp_grads 0 "20 B/param of model state = weights bf16 2 \\+ grads fp32 4 \\+ bf16 grads kept 2 \\+ master fp32 4"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 2 --seq 4096 --grads-dtype fp32 --keep-lp-grads)
# Its engine casts the fp32 gradients to bf16 for the step's all-reduce beside the activations'
# cached blocks: 2 B x 7,352,821,248 parameters of GPT-3 175B's first stage at TP 8 x PP 3 = 14.71
# GB on top, of which the activations' 1.93 GB is not allocated at the step's peak.
run(report_keep_lp_grads_step_copy 0 "step's all-reduce copy +14\\.71 GB +14\\.71 GB: BF16_Optimizer's fp32 gradients cast to bf16 for the all-reduce, beside the activations' cached blocks; 1\\.93 GB"
    report --model gpt3-175b --gpu a100-80g --tp 8 --pp 3 --dp 16 --zero 1 --recompute full --mbs 2 --gbs 2048
    --seq 2048 --grads-dtype fp32 --keep-lp-grads)
run(report_keep_lp_grads_bad 1 "plan.keep_lp_grads: keeps the bf16 gradients beside a wider gradient buffer"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --grads-dtype bf16 --keep-lp-grads)
# --recompute-early-stop (PyTorch >= 2.1's non-reentrant checkpoint): the replay of Llama 3 8B's
# block stops when w2's inputs are saved again, so w2 and the residual after it are not rerun;
# refused without full recomputation and under Transformer Engine, naming the field.
run(report_recompute_early_stop 0 "recompute full \\(early stop\\).*recomp +mlp_activation"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --seq 4096 --recompute full --recompute-early-stop --ops)
run_without(report_recompute_early_stop_no_w2 0 "recomp +mlp_fc2"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --seq 4096 --recompute full --recompute-early-stop --ops)
run(report_recompute_early_stop_bad 1 "plan.recompute_early_stop: stops the recomputation at the block's last saved tensor \\(PyTorch's non-reentrant checkpoint\\): needs plan.recompute full \\(got none\\)"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --seq 4096 --recompute-early-stop)
run(report_recompute_early_stop_te 1 "plan.recompute_early_stop: .*which here skips nothing: Transformer Engine's linear layers"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 3 --seq 4096 --recompute full --recompute-early-stop
    --transformer-engine)
# A 16-bit GEMM whose widths are not multiples of 8 runs cuBLAS's narrow-load kernels (measured on
# an H200: 0.358 of the aligned speed for even widths, 0.186 for odd; docs/compute.md). GPT-3's
# 50,257-token head at TP 8 is 6,283 columns a rank (odd); Megatron pads the vocabulary to a
# multiple of 128 x TP, 6,400 columns (--vocab-divisible-by 128, the Megatron stacks' default).
run(report_misaligned_gemm 0 "output_head +2048x6283x12288 +bf16 .* compute-bound, odd width off a multiple of 8 \\(x0\\.186\\)"
    report --model gpt3-175b --gpu h100-sxm --tp 8 --pp 8 --dp 4 --seq 2048 --mbs 1 --gbs 256 --ops)
run(report_vocab_padded 0 "output_head +2048x6400x12288 +bf16 .* compute-bound\n"
    report --model gpt3-175b --gpu h100-sxm --tp 8 --pp 8 --dp 4 --seq 2048 --mbs 1 --gbs 256 --ops
    --vocab-divisible-by 128)
# Said where the plan meets it, with the fix; not once the vocabulary is padded.
run(report_misaligned_vocab_warning 0 "plan.vocab_divisible_by: the output head's 6283 vocabulary columns a rank \\(model.vocab 50257 over tp 8\\) are not a multiple of 8: its GEMMs run at 0.186 of the aligned speed on h100-sxm"
    report --model gpt3-175b --gpu h100-sxm --tp 8 --pp 8 --dp 4 --seq 2048 --mbs 1 --gbs 256)
run_without(report_padded_vocab_no_warning 0 "vocabulary columns a rank"
    report --model gpt3-175b --gpu h100-sxm --tp 8 --pp 8 --dp 4 --seq 2048 --mbs 1 --gbs 256 --stack megatron-core-2024)
run(report_misaligned_head_dim_warning 0 "model.head_dim: 108 is not a multiple of 8: the unfused attention's score and value GEMMs run at 0.358 of the aligned speed on h100-sxm"
    report --model gpt3-175b --gpu h100-sxm --tp 8 --pp 8 --dp 4 --seq 2048 --mbs 1 --gbs 256 --attention naive
    --heads 128 --hidden 13824 --vocab-divisible-by 128 --zero 1 --recompute full)
run(report_vocab_padded_bad 1 "plan.vocab_divisible_by: must be from 1 \\(the model's vocabulary as it is\\) to 65536"
    report --model gpt3-175b --gpu h100-sxm --tp 8 --pp 8 --dp 4 --seq 2048 --mbs 1 --gbs 256 --vocab-divisible-by 0)
# The torchtitan and LLM Foundry stacks' full recomputation is PyTorch's non-reentrant checkpoint
# (presets/stacks): the early stop by default, said; --no-recompute-early-stop replays the block.
run(report_stack_recompute_early_stop 0 "recompute full \\(early stop\\).*stack torchtitan-2024: full recomputation stops at the block's last saved tensor"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --seq 4096 --stack torchtitan-2024 --recompute full)
run_without(report_stack_no_recompute_early_stop 0 "early stop\\)"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --seq 4096 --stack torchtitan-2024 --recompute full
    --no-recompute-early-stop)
# --fp8-param-gather: the distributed optimizer all-gathers the updated parameters in FP8. Llama 3
# 8B's layer (218,112,000 parameters) at ZeRO 1 over 8: 218.11 MB a layer instead of bf16's 436.22;
# refused without FP8 compute, naming the field.
run(report_fp8_param_gather 0 "\\| fp8, parameters gathered in fp8.*step +param_all_gather +all_gather +- +218\\.11"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --precision fp8 --grads-dtype bf16
    --fp8-param-gather --ops)
run(report_fp8_param_gather_bad 1 "plan.fp8_param_gather: gathers the parameters in FP8 for the distributed optimizer: needs plan.precision fp8"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --fp8-param-gather)
# --cuda-context-mib: the software's own CUDA context (BigScience's 2022 stack: 1573 MiB =
# 1.65 GB) replaces the profile's 685 MiB (0.72 GB); --stack megatron-deepspeed-2022 sets it.
run(report_cuda_context 0 "CUDA context +1\\.65 GB +the plan's"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --cuda-context-mib 1573)
run(report_cuda_context_stack 0 "CUDA context 1573 MiB.*CUDA context +1\\.65 GB"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --stack megatron-deepspeed-2022)
run(report_cuda_context_bad 2 "--cuda-context-mib: must be a MiB count from 1 to 65536 \\(got 0\\)"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --cuda-context-mib 0)
# Transformer Engine's own cuBLAS workspaces: 33,554,432 B on an H100 (0.03 GB), five of them
# with an MoE grouped GEMM (167.77 MB = 0.17 GB).
run(report_te_workspace 0 "TE cuBLAS workspaces +0\\.03 GB"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --transformer-engine)
run(report_te_workspace_moe 0 "TE cuBLAS workspaces +0\\.17 GB"
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --zero 1 --seq 4096 --recompute full --stack megatron-core-2024)
# The MoE layers' host time (docs/compute.md): Qwen3-30B-A3B at EP 8 on B200s, one sequence a
# microbatch, waits for Megatron-Core's measured 2.656 ms forward and 2.385 ms backward per layer
# (grouped GEMM); --moe-host none drops it; a name it does not know is refused naming the field.
run(report_moe_host_floor 0 "waiting for the host \\(MoE\\).*its host time, Megatron-Core's measured, 2\\.656 ms forward and 2\\.385 ms backward per microbatch"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64)
# The busiest EP rank's share and the quantized experts' padding, as report says them; a share
# beyond every token on one rank is refused naming the field.
run(report_moe_imbalance_and_padding 0 "routing uniform, the busiest EP rank 1\\.25x the mean .*tokens padded by the experts"
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --zero 1 --recompute full --seq 4096 --gbs 64 --precision fp8
    --transformer-engine --moe-imbalance 1.25)
run(report_moe_router_padding 0 "tokens padded by the router"
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --zero 1 --recompute full --seq 4096 --gbs 64 --precision fp8
    --transformer-engine --moe-router-padding)
run(report_moe_imbalance_beyond_ep 1 "plan\\.moe_imbalance: must be from 1 \\(every rank the mean\\) to ep = 8"
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --seq 4096 --gbs 64 --moe-imbalance 9)
# Under Transformer Engine (the megatron-core-2024 stack) its grouped GEMM is a cuBLASLt call per
# local expert and GEMM, 10 us of host time each: 16 experts x 2 GEMMs forward (2.976 ms) and x 4
# backward (3.025 ms).
run(report_moe_host_te 0 "Megatron-Core's measured with Transformer Engine's cuBLASLt call per expert GEMM, 2\\.976 ms forward and 3\\.025 ms backward per microbatch"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64 --stack megatron-core-2024)
run(report_moe_host_none 0 "\\(exposed\\) +[0-9.]+ s +[0-9.]+%\n#   optimizer step"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64 --moe-host none)
run(moe_host_bad 2 "--moe-host: must be one of megatron-core\\|none"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --moe-host gpu)
# Where the router's probabilities weight the tokens (docs/memory.md §3): Qwen3-30B-A3B at EP 8,
# 4,096 tokens x top-8 per microbatch, 48 MoE layers. fused (the default) keeps 20.66 GB a
# microbatch; unpermute also the experts' output, 2 B x 32,768 x 2,048 x 48 = 6.44 GB (27.10);
# activation the activation's output, 2 B x 32,768 x 768 x 48 = 2.42 GB (23.08).
run(report_moe_probs_fused 0 "activations / microbatch +20\\.66 GB"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64)
run(report_moe_probs_unpermute 0 "activations / microbatch +27\\.10 GB"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64 --moe-probs unpermute)
run(report_moe_probs_activation 0 "activations / microbatch +23\\.08 GB"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64 --moe-probs activation)
run(moe_probs_bad 2 "--moe-probs: must be one of fused\\|activation\\|unpermute"
    report --model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --moe-probs sideways)
run(moe_dispatcher_bad 2 "--moe-dispatcher: must be one of alltoall\\|flex"
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --moe-dispatcher nccl)
# --moe-routing round-robin (NeMo AutoModel's fake balanced gate: token t takes experts 8t..8t+7)
# with the flex dispatcher: Qwen3-30B-A3B's 16 experts per rank at EP 8 hold a token's whole block,
# so each of 4,096 tokens goes to one rank: 4096 x 2048 x 2 B = 16.78 MB per dispatch (uniform
# routing: 5.34 ranks, 89.58 MB).
run(report_moe_routing 0 "fwd +ep_dispatch +alltoall +- +16\\.78 "
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64 --recompute full --moe-dispatcher flex --moe-routing round-robin --ops)
run(report_moe_routing_uniform 0 "fwd +ep_dispatch +alltoall +- +89\\.58 "
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64 --recompute full --moe-dispatcher flex --ops)
run(plan_moe_routing 0 "wrote" plan --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --zero 1 --seq 4096 --gbs 64
    --recompute full --moe-dispatcher flex --moe-routing round-robin --output ${WORK}/round_robin.json)
run(export_moe_routing_note 0 "# note: moe_routing round-robin \\(NeMo AutoModel's fake balanced gate\\) has no Megatron-LM flag.*--moe-token-dispatcher-type flex"
    export --plan ${WORK}/round_robin.json --to megatron)
run(moe_routing_bad 2 "--moe-routing: must be one of uniform\\|round-robin"
    report --model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --moe-routing sideways)
# --bf16-layers-at-end (Megatron-Core's --first-last-layers-bf16): Llama 3 8B on 8 B200s in NVFP4
# with its last 4 of 32 layers in BF16 takes 3.318 s + 4/32 x (5.806 - 3.318) s = 3.629 s, the
# all-NVFP4 and all-BF16 steps being 3.318 and 5.806 s; under bf16 it is refused naming the rule.
run(report_bf16_layers 0 "\\| nvfp4 \\(bf16: last 4 layers\\).*step +3\\.629 s"
    report --model llama3-8b --gpu b200 --gpus 8 --stack megatron-core-2024 --precision nvfp4 --gbs 128 --mbs 2 --seq 8192 --bf16-layers-at-end 4)
run(report_bf16_layers_bad 1 "plan\\.bf16_layers_at_end: keeps layers in BF16 under a quantized plan\\.precision"
    report --model llama3-8b --gpu b200 --gpus 8 --precision bf16 --gbs 128 --seq 8192 --bf16-layers-at-end 4)
run(export_deepspeed 0 "\"train_micro_batch_size_per_gpu\": 1,.*\"gradient_accumulation_steps\": 16,.*\"zero_optimization\": \\{[ \n]*\"stage\": 1,.*\"autotp_size\": 8.*# note: DeepSpeed edaa72212 \\(2026-08-22\\).*train_batch_size left out \\(2048 sequences.*num_stages=16"
    export --plan ${WORK}/l3.json --to deepspeed)
# Megatron-Core's tunable interleaved schedule: 10 microbatches over pp 4 run in groups of 5
# (--vpp-group, its --microbatch-group-size-per-virtual-pipeline-stage); the default group (pp)
# needs a multiple of pp, and a group leaving a last group below pp is refused naming the field.
run(plan_vpp_group 0 "wrote" plan --model llama3-8b --gpu h100-sxm --gpus 4 --pp 4 --vpp 2 --gbs 10 --vpp-group 5
    --seq 2048 --output ${WORK}/vppg.json)
run(report_vpp_group 0 "interleaved, 10 microbatches in groups of 5" report --plan ${WORK}/vppg.json)
run(report_vpp_group_default 1 "plan.global_batch: interleaved schedule needs the microbatches per pipeline \\(10\\) to be a multiple of pp=4"
    report --model llama3-8b --gpu h100-sxm --gpus 4 --pp 4 --vpp 2 --gbs 10)
run(report_vpp_group_remainder 1 "plan.vpp_group: leaves a last group of 2 microbatches"
    report --model llama3-8b --gpu h100-sxm --gpus 4 --pp 4 --vpp 2 --gbs 10 --vpp-group 4)
run(export_megatron_vpp_group 0 "--num-layers-per-virtual-pipeline-stage 4.*--microbatch-group-size-per-virtual-pipeline-stage 5"
    export --plan ${WORK}/vppg.json --to megatron)
run(export_torchtitan_vpp_group 1 "error: --to torchtitan: .*no microbatch groups.*nearest plan it runs: --vpp-group 0"
    export --plan ${WORK}/vppg.json --to torchtitan)
run(simulate_vpp_group 0 "step" simulate --plan ${WORK}/vppg.json)
# torchtitan has no optimizer-only sharding (FSDP2): the ZeRO-1 plan is refused naming the rule,
# the same plan at ZeRO-2 exports.
run(export_torchtitan_zero1 1 "error: --to torchtitan: torchtitan \\(238fa99\\): no optimizer-only sharding.*nearest plan it runs: --zero 2"
    export --plan ${WORK}/l3.json --to torchtitan)
run(export_plan_zero2 0 "wrote" plan --model llama3-405b --cluster dgx-h100 --gpus 16384 --tp 8 --pp 16 --sp --zero 2
    --recompute selective --gbs 2048 --seq 8192 --stage-layers 7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7 --output ${WORK}/l3z2.json)
run(export_torchtitan 0 "^# torchtitan job config \\(TOML\\) for torchtitan 238fa99.*\\[model\\][ \n]*name = \"llama3\"[ \n]*flavor = \"405B\".*\\[parallelism\\].*data_parallel_shard_degree = 128.*tensor_parallel_degree = 8.*pipeline_parallel_degree = 16.*module_fqns_per_model_part = \\[\\[\"tok_embeddings\", \"layers.0\",.*\"layers.6\"\\], \\[\"layers.7\",.*\"layers.125\", \"norm\", \"output\"\\]\\].*\\[activation_checkpoint\\][ \n]*mode = \"selective\""
    export --plan ${WORK}/l3z2.json --to torchtitan)
# Megatron-LM's environment and launcher (its commit on the first line), and a plan it cannot
# express refused naming its rule (8-bit Adam: --optimizer's choices, arguments.py:2913 at d98e8a64).
run(export_megatron_launch 0 "^# Megatron-LM d98e8a64 arguments:.*export CUDA_DEVICE_MAX_CONNECTIONS=1[ \n]+torchrun --nproc-per-node 8 --nnodes 2048 pretrain_gpt.py"
    export --plan ${WORK}/l3.json --to megatron)
run(export_plan_adam8 0 "wrote" plan --model llama3-8b --cluster dgx-h100 --gpus 8 --zero 1 --optimizer adam-8bit
    --output ${WORK}/adam8.json)
run(export_megatron_refused 1 "error: --to megatron: megatron \\(d98e8a64\\): --optimizer has no 8-bit Adam.*arguments.py:2913.*nearest plan it runs"
    export --plan ${WORK}/adam8.json --to megatron)
run(export_bad_target 2 "--to: must be megatron, torchtitan, torchtitan-py or deepspeed" export --plan ${WORK}/l3.json --to jax)
# torchtitan's Python configuration (b5bcd76c6): the plan's degrees in a module torchtitan loads by name.
run(export_torchtitan_py 0 "^# torchtitan configuration \\(Python\\) for torchtitan b5bcd76c6.*--module meshplan_plan --config meshplan_plan.*config = llama3_405b\\(\\).*p.data_parallel_shard_degree = 128.*p.tensor_parallel_degree = 8.*p.pipeline_parallel_degree = 16.*t.num_tokens_per_train_step = 16777216"
    export --plan ${WORK}/l3z2.json --to torchtitan-py)
run(export_missing_plan 2 "--plan: .*cannot open" export --plan ${WORK}/none.json --to megatron)
# --check runs the framework's own validation in Python: without the framework importable it
# says so and exits 4; with it (here the test doubles of data/export_check, see its README) the
# verdict is printed and sets the exit code.
set(ENV{PYTHONPATH} ${WORK}/no_such_dir)
run(export_check_not_run 4 "error: --check: the framework's validation did not run: cannot import megatron.training.arguments"
    export --plan ${WORK}/l3.json --to megatron --check)
set(ENV{PYTHONPATH} ${DATA}/export_check)
run(export_check_megatron 0 "--tensor-model-parallel-size 8.*check: Megatron-LM \\(megatron.core test-double\\): parse_args and validate_args accept"
    export --plan ${WORK}/l3.json --to megatron --check)
unset(ENV{PYTHONPATH})

# Reliability: the Llama 3 405B snapshot (16,384 H100s, 54 days, async checkpoints every
# 30 min to 2 TB/s) -> MTBF 3.09 h, 419 expected unexpected interruptions, goodput above 90%;
# the JSON keys a user scripts against; usage errors exit 2.
set(llama405 --model llama3-405b --gpu h100-sxm --cluster dgx-h100 --gpus 16384 --tp 8 --pp 16 --sp --zero 1
    --recompute selective --seq 8192 --gbs 2048 --stage-layers 7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7)
run(reliability_json 0
    "\"reliability\": \\{.*\"mtbf_h\": 3\\.09.*\"interruptions\": 41[89]\\..*\"ckpt_interval_s\": 1800\\.0.*\"goodput\": 0\\.90.*\"train\": \\{.*\"days_p50\": 54\\.0.*\"days_p90\".*\"cost_usd_p50\""
    reliability ${llama405} --days 54 --ckpt-interval 30m --storage-bw 2TB/s --trials 200 --format json)
run(reliability_table 0 "<- optimum.*Monte Carlo: 100 trials"
    reliability ${llama405} --tokens 15.6e12 --ckpt-mode sync --trials 100)
run(reliability_days_and_tokens 2 "--days and --tokens: give one, not both"
    reliability ${llama405} --days 54 --tokens 1e12)
# --tokens given is a finite count above 0 and at most 1e18, in every command that prices a run:
# report, explain and search took 0 and NaN for the default and infinity as a count before.
run(report_tokens_zero 2 "--tokens: must be a finite number > 0 \\(got 0\\)" report ${llama405} --tokens 0)
run(report_tokens_nan 2 "--tokens: must be a finite number > 0 \\(got nan\\)" report ${llama405} --tokens nan)
run(explain_tokens_inf 2 "--tokens: must be a finite number > 0 \\(got inf\\)" explain ${llama405} --tokens inf)
run(search_tokens_huge 2 "--tokens: must be <= 1e\\+18 \\(got 1e\\+19\\)"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --tokens 1e19)
run(reliability_tokens_huge 2 "--tokens: must be <= 1e\\+18" reliability ${llama405} --tokens 1e19)
run(reliability_bad_interval 2 "--ckpt-interval: must be auto or a positive duration"
    reliability ${llama405} --days 54 --ckpt-interval soon)
run(reliability_bad_mode 2 "--ckpt-mode: must be async or sync" reliability ${llama405} --days 54 --ckpt-mode lazy)
# The flags keep the bounds of the files they override (failure model: one loss spike a minute;
# cluster: 100 TB/s of storage) and a run's scale (a year between checkpoints, 100,000 days): beyond
# them the tables printed inf (an interval of 1e30 h, 1e300 TB/s, 1e30 spikes a day).
run(reliability_interval_huge 2 "--ckpt-interval: must be auto or a positive duration of at most a year"
    reliability ${llama405} --days 54 --ckpt-interval 1e30h)
run(reliability_storage_huge 2 "--storage-bw: must be a rate above 0 and at most 100TB/s"
    reliability ${llama405} --days 54 --storage-bw 1e300TB/s)
run(reliability_spikes_huge 2 "--loss-spikes-per-day: must be in \\[0, 1440\\]"
    reliability ${llama405} --days 54 --loss-spikes-per-day 1e30)
run(reliability_days_huge 2 "--days: must be in \\(0, 100000\\]" reliability ${llama405} --days 1e30)
run(reliability_no_failures_preset 2 "--failures: .*no failure preset named 'nope'"
    reliability ${llama405} --days 54 --failures nope)
run(reliability_inconsistent 1 "plan.tp: 3 must divide model.heads=64"
    reliability --model llama3-70b --gpu h100-sxm --gpus 24 --tp 3 --days 10)

# report's reliability section and the failures presets.
run(report_reliability 0 "\"days_p50\".*\"days_p90\".*\"cost_usd_p50\".*\"reliability\": \\{.*\"mtbf_h\".*\"interruptions\".*\"ckpt_interval_s\".*\"goodput\""
    report --model llama3-8b --gpu h100-sxm --gpus 8 --zero 1 --seq 4096 --gbs 64 --format json)
run(presets_failures 0 "llama3-405b" presets failures)

# explain: the whiteboard checklist and the topics, with the seeds' worked numbers read
# from --format json; markdown for notes; exit codes 0 (fits), 1 (nothing fits), 2 (usage).
run(explain_405b_rules 0 "\"rules_plan\": \\{[^}]*\"tp\": 8,[^}]*\"pp\": 16,[^}]*\"dp\": 128,.*\"recommended\": \\{.*\"two_weeks_cost_usd\": 16515072\\.0"
    explain --model llama3-405b --cluster dgx-h100 --gpus 16384 --seq 8192 --gbs 2048 --format json)
run(explain_70b_state 0 "\"state_bytes\": 1128859303936\\.0.*\"min_gpus_for_state\": 14\\.0"
    explain --model llama3-70b --gpu h100-sxm --gpus 64 --seq 8192 --gbs 512 --no-search --format json)
run(explain_text 0 "1\\. Model size\n   rule: .*numbers: .*result: .*12\\. Time, cost and goodput.*recommended: tp "
    explain --model llama3-70b --gpu h100-sxm --gpus 64 --seq 8192 --gbs 512)
run(explain_own_plan 0 "\"parallelism\".*\"tp\": 4\\.0,[ \n]*\"pp\": 4\\.0"
    explain --model llama3-70b --gpu h100-sxm --gpus 64 --tp 4 --pp 4 --zero 1 --sp --recompute full --gbs 512
            --seq 8192 --no-search --format json)
run(explain_no_fit 1 "no plan fits" explain --model llama3-70b --gpu h100-sxm --gpus 8 --seq 8192)
run(explain_zero_topic 0 "\"seeds_state_bytes\": 1120000000000\\.0.*\"seeds_optimizer_bytes\": 105000000000\\.0,[ \n]*\"seeds_total_bytes\": 140000000000\\.0.*\"zero3_over_ddp\": 1\\.5"
    explain --topic zero --format json)
run(explain_pp_markdown 0 "## 1\\. The 1F1B bubble\n\n\\*\\*Rule\\.\\*\\* .*\\*\\*Formula\\.\\*\\* `bubble = "
    explain --topic pp --format markdown)
run(explain_collectives 0 "\"all_reduce_factor_8\": 1\\.75" explain --topic collectives --format json)
run(explain_grad_accum 0 "\"accumulation_steps\": 256\\.0,[ \n]*\"batch_tokens\": 4194304\\.0"
    explain --topic recompute --format json)
run(explain_bad_topic 2 "--topic: must be one of zero\\|tp\\|sp" explain --topic zero4)
run(explain_topic_and_model 2 "--topic: give a topic or a scenario" explain --topic zero --model llama3-70b)
run(explain_nothing 2 "--model: give a scenario" explain)
run(explain_bad_format 2 "--format must be text, markdown or json" explain --topic tp --format html)
run(explain_inconsistent 1 "plan.tp: 3 must divide model.heads=64" explain --model llama3-70b --gpu h100-sxm --gpus 24 --tp 3)

# report --compare: a meshplan-run measurement side by side with the prediction.
run(compare_table 0 "section +op .*qkv_proj.*step: measured [0-9.]+ s vs predicted"
    report --compare ${DATA}/measurements/tiny-cpu.json)
run(compare_json 0 "\"ops\": \\[.*\"measured_s\".*\"predicted_s\".*\"step\": \\{.*\"measured_time_s\""
    report --compare ${DATA}/measurements/tiny-cpu.json --format json)
# Memory held by the executor against the memory model: tiny has 2,759,680 parameters, so bf16
# weights are 5,519,360 B and fp32 Adam moments 22,077,440 B (2 x 4 B each), in both columns.
run(compare_memory 0 "memory +measured_MB +predicted_MB.*weights +5.519 +5.519 +1.00.*optimizer_moments +22.077 +22.077 +1.00.*states_and_activations"
    report --compare ${DATA}/measurements/tiny-cpu-memory.json)
run(compare_memory_json 0 "\"memory\": \\{.*\"weights\": \\{.*\"measured_bytes\": 5519360,.*\"predicted_bytes\": 5519360"
    report --compare ${DATA}/measurements/tiny-cpu-memory.json --format json)
# DeepSpeed's BF16_Optimizer (--grads-dtype fp32 --keep-lp-grads): the kept bf16 gradients and the
# step's all-reduce copy held by meshplan-run, 2 B per parameter each (2,759,680 parameters).
run(compare_memory_step_copy 0 "grads +16.558 +16.558 +1.00.*step_copy +5.519 +5.519 +1.00"
    report --compare ${DATA}/measurements/tiny-cpu-bf16-optimizer.json)
# ZeRO-3: the two gathered layers (2 x 789,760 parameters x 2 B) held by meshplan-run as the
# framework's buffers, against the memory model's ZeRO-3 gather buffers.
run(compare_memory_framework_buffers 0 "framework_buffers +3.159 +3.159 +1.00"
    report --compare ${DATA}/measurements/tiny-cpu-zero3.json)
run(compare_missing 2 "--compare: .*cannot open" report --compare ${WORK}/none.json)

# The result store: history on an empty store, search --save then history --sweeps,
# store errors exit 1 naming the path, usage errors 2. Every case passes --db under WORK.
run(history_empty 0 "# meshplan history: measurements in [^\n]*store/empty\\.db[^\n]*\n# no measurements yet"
    history --db ${WORK}/store/empty.db)
run(history_empty_json 0 "\"db\": \"[^\"]*store/empty\\.db\",[ \n]*\"measurements\": \\[\\]"
    history --db ${WORK}/store/empty.db --format json)
run(history_profiles_empty 0 "calibration profiles in [^\n]*\n# no profiles yet" history --profiles --db ${WORK}/store/empty.db)
# Reading creates nothing: the three reads above leave no store (nor its folder) behind.
if(EXISTS ${WORK}/store)
  message(SEND_ERROR "history_creates_nothing: history created ${WORK}/store")
else()
  message(STATUS "ok history_creates_nothing")
endif()
run(search_save 0 "# top 1.*# saved sweep 1 to [^\n]*store/sweeps\\.db"
    search --model llama3-8b --cluster dgx-h100 --gpus 16 --seq 8192 --gbs 256 --top 1 --save --db ${WORK}/store/sweeps.db)
run(search_save_json 0 "\"plans\": \\[.*# saved sweep 2 to "
    search --model llama3-8b --cluster dgx-h100 --gpus 8 --seq 4096 --gbs 256 --top 1 --format json --save
           --db ${WORK}/store/sweeps.db)
run(history_sweeps 0 "#id +created +candidates +label\n# +\\(UTC\\) +\\(plans\\)\n +2 +[0-9T:Z-]+ +[1-9][0-9]* +llama3-8b on 8x h100-sxm\n +1 +[0-9T:Z-]+ +[1-9][0-9]* +llama3-8b on 16x h100-sxm"
    history --sweeps --db ${WORK}/store/sweeps.db)
run(history_sweeps_json 0 "\"sweeps\": \\[[ \n]*\\{[ \n]*\"id\": 2,.*\"label\": \"llama3-8b on 8x h100-sxm\""
    history --sweeps --limit 1 --format json --db ${WORK}/store/sweeps.db)
file(WRITE ${WORK}/store/not-a-dir "x")
run(history_bad_db 1 "error: --db: [^\n]*store/not-a-dir/sub/x\\.db" history --db ${WORK}/store/not-a-dir/sub/x.db)
# A store path from $MESHPLAN_DB (no --db) is named as such in its error, not as a flag never given.
set(ENV{MESHPLAN_DB} ${WORK}/store/not-a-dir/sub/x.db)
run(history_bad_env_db 1 "error: \\$MESHPLAN_DB: [^\n]*store/not-a-dir/sub/x\\.db" history)
set(ENV{MESHPLAN_DB} ${default_db})
run(search_save_bad_db 1 "error: --db: [^\n]*store/not-a-dir/x\\.db"
    search --model llama3-8b --cluster dgx-h100 --gpus 8 --seq 4096 --gbs 256 --top 1 --save
           --db ${WORK}/store/not-a-dir/x.db)
run(history_bad_format 2 "--format: must be table or json" history --db ${WORK}/store/empty.db --format xml)
run(history_bad_limit 2 "--limit: must be >= 0" history --db ${WORK}/store/empty.db --limit -1)
run(history_two_lists 2 "--profiles, --sweeps and --predictions: give one at most"
    history --db ${WORK}/store/empty.db --profiles --sweeps)
run(search_db_needs_save 2 "--db requires --save"
    search --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 256 --db ${WORK}/store/sweeps.db)
run(history_help_default 0 "--db .*default ${default_db}" history --help)
if(EXISTS ${default_db})
  message(SEND_ERROR "a CLI test wrote the default store ${default_db}: pass --db")
endif()
# --stack megatron-bridge-2025 (Megatron-Bridge 25.11 to 26.08): its FP8 recipes gather the
# parameters in FP8 once the plan is FP8 with the distributed optimizer, said, and
# --no-fp8-param-gather gathers them in the weights' dtype; the report's accuracy table shows the
# stack's own group.
run(report_bridge_fp8_gather 0 "\\| fp8, parameters gathered in fp8\n.*# default: stack megatron-bridge-2025: the distributed optimizer all-gathers the parameters in FP8.*stack megatron-bridge-2025 +[0-9]+ "
    report --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 4 --stack megatron-bridge-2025 --precision fp8 --gbs 128 --seq 8192 --recompute full)
run_without(report_bridge_no_fp8_gather 0 "parameters gathered in fp8"
    report --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 4 --stack megatron-bridge-2025 --precision fp8 --gbs 128 --seq 8192 --recompute full --no-fp8-param-gather)
# DTensor's TP (torchtitan's stacks set it; --dtensor-tp): the plan line says it, and Megatron's
# backward overlap is refused, naming the field.
run(report_dtensor_tp 0 "\\| sp on, DTensor TP \\| recompute none"
    report --model llama3-8b --gpu h100-sxm --gpus 64 --tp 8 --seq 8192 --gbs 64 --stack torchtitan-2024)
run(report_dtensor_tp_megatron_overlap 1 "plan.dtensor_tp: .*needs plan.tp_overlap none or async \\(got backward"
    report --model llama3-8b --gpu h100-sxm --gpus 64 --tp 8 --seq 8192 --gbs 64 --dtensor-tp)
# PyTorch's context_parallel (torchtitan's CP): the plan line says it and how K and V rotate; Ulysses
# is not one of its rotations, an error naming the field.
run(report_torch_cp 0 "cp 8 \\. ep 1 \\(PyTorch CP, allgather\\) \\|"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --cp 8 --zero 3 --seq 262144 --gbs 1 --recompute full --stack torchtitan-2024)
run(report_torch_cp_ulysses 1 "plan.torch_cp: PyTorch's context_parallel runs ring attention.*\\(got ulysses\\)"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --cp 8 --seq 262144 --gbs 1 --cp-kind ulysses --torch-cp)
# An MoE plan's report says how it runs its MoE layers (what the plan line leaves out): gpt-oss-120b
# under megatron-bridge-2025 adds the experts' fc2 bias one local expert at a time; 128 experts over
# EP 8 are 16 per rank.
run(report_moe_line 0 "# moe: 128 experts, top 4, 16 per EP rank \\| dropless \\| dispatcher alltoall, routing uniform \\| probabilities fused \\| grouped GEMM \\| host floor megatron-core \\| expert fc2 bias per-expert\n"
    report --model gpt-oss-120b --gpu h100-sxm --gpus 64 --pp 4 --ep 8 --zero 1 --seq 4096 --gbs 1280 --stack megatron-bridge-2025)
run_without(report_dense_no_moe_line 0 "# moe:"
    report --model llama3-8b --gpu h100-sxm --gpus 8 --seq 4096 --zero 3)
# search on an MoE model says how close the published runs of each experts-per-rank kind among its
# top plans came (the shipped step table's group): Qwen3-30B-A3B's 128 experts at EP 1 and 2 are
# more than 16 a rank, at EP 8 sixteen (the second and fifth plans, within the 85.0 GB CUDA reports
# of an H100); a dense model's search has no such lines.
run(search_moe_how_close 0 "# how close, by experts a rank: published MoE runs of each kind among the top plans[^\n]*\n#   >16 experts a rank \\(plans 1,3,4\\): [0-9]+ runs, median [0-9.]+%, p90 [0-9.]+%, signed [+-][0-9.]+% \\(predicted too (fast|slow)\\)\n#   <=16 experts a rank \\(plans 2,5\\): "
    search --model qwen3-30b-a3b --gpu h100-sxm --gpus 16 --gbs 256 --seq 4096 --top 5)
run_without(search_dense_no_experts_lines 0 "experts a rank"
    search --model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --seq 4096 --top 3)
# The README's preset counts are what `meshplan presets` lists (they had drifted to 34 models, 14
# GPUs, 13 clusters and 9 stacks against 45, 19, 18 and 12 before 2026-12-05).
file(READ ${DATA}/../../README.md readme_text)
string(REGEX MATCH "Presets\\*\\* for ([0-9]+) models" _ "${readme_text}")
set(readme_models "${CMAKE_MATCH_1}")
string(REGEX MATCH "([0-9]+) GPUs, ([0-9]+) clusters and ([0-9]+) software stacks" _ "${readme_text}")
set(readme_counts "models=${readme_models} gpus=${CMAKE_MATCH_1} clusters=${CMAKE_MATCH_2} stacks=${CMAKE_MATCH_3}")
set(listed_counts "")
foreach(kind models gpus clusters stacks)
  execute_process(COMMAND ${MESHPLAN} presets ${kind} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "\n  [^ \n]" rows "\n${out}")
  list(LENGTH rows n)
  string(APPEND listed_counts " ${kind}=${n}")
endforeach()
string(STRIP "${listed_counts}" listed_counts)
if(NOT readme_counts STREQUAL listed_counts)
  message(SEND_ERROR "readme_preset_counts: README.md says ${readme_counts}, meshplan presets lists ${listed_counts}")
else()
  message(STATUS "ok readme_preset_counts (${listed_counts})")
endif()
# The README's figures of the corpus's repeats are what `meshplan validate` prints of them: the
# scenarios printed more than once, their published spread (median, max) and the floor's median.
execute_process(COMMAND ${MESHPLAN} validate --dataset ${DATA}/validation RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(REGEX MATCH "# ([0-9]+) scenarios, [0-9]+ runs \\(tokens/s per GPU\\): published max/min - 1 median ([0-9.]+)%, p90 [0-9.]+%, max ([0-9.]+)%; [^\n]* \\(max - min\\)/\\(max \\+ min\\): median ([0-9.]+)%"
       _ "${out}")
set(repeats_n "${CMAKE_MATCH_1}")
set(repeats_median "${CMAKE_MATCH_2}")
set(repeats_max "${CMAKE_MATCH_3}")
set(repeats_floor "${CMAKE_MATCH_4}")
set(repeats_said "${repeats_n} plans ... ${repeats_median}% apart at the median and ${repeats_max}% at the most ... at least ${repeats_floor}% off")
foreach(v repeats_median repeats_max repeats_floor)
  string(REPLACE "." "\\." ${v}_re "${${v}}")
endforeach()
if(NOT rc EQUAL 0 OR repeats_n STREQUAL "" OR NOT readme_text MATCHES
   "${repeats_n} plans of the corpus are printed more than once[^;]* values ${repeats_median_re}% apart at the median and ${repeats_max_re}% at the most,[ \n]+so the one prediction that serves each is at least ${repeats_floor_re}% off")
  message(SEND_ERROR "readme_repeats: README.md does not say '${repeats_said}' (meshplan validate: rc ${rc})")
else()
  message(STATUS "ok readme_repeats (${repeats_said})")
endif()
# The README's accuracy figures are the shipped tables' (presets/accuracy/step.json and memory.json,
# which AccuracyTest pins to what `meshplan validate` gives): the corpus's runs, median and p90, the
# MoE runs' and the runs beyond 32k tokens' medians, the memory corpus's peaks, median and p90; and
# validate's own summaries of the tuning set (median, max) and of the runs beyond it (runs, median, p90),
# of the memory corpus's published fit outcomes (how many right) and of the runs called tight.
# A fraction of the table (four decimals) as the README writes it, percent to one decimal.
function(percent_of fraction out)
  if(NOT fraction MATCHES "^-?0\\.([0-9]+)$")
    message(SEND_ERROR "readme_accuracy: ${fraction} is not a fraction below 1")
    return()
  endif()
  string(SUBSTRING "${CMAKE_MATCH_1}0000" 0 4 digits)  # ten-thousandths
  string(REGEX REPLACE "^0+([0-9])" "\\1" digits "${digits}")
  math(EXPR tenths "(${digits} + 5) / 10")
  math(EXPR whole "${tenths} / 10")
  math(EXPR decimal "${tenths} % 10")
  set(${out} "${whole}.${decimal}%" PARENT_SCOPE)
endfunction()
file(READ ${DATA}/../../presets/accuracy/step.json step_table)
file(READ ${DATA}/../../presets/accuracy/memory.json memory_table)
string(JSON step_n GET "${step_table}" all n)
string(JSON step_median GET "${step_table}" all median_abs_error)
string(JSON step_p90 GET "${step_table}" all p90_abs_error)
string(JSON memory_n GET "${memory_table}" all n)
string(JSON memory_median GET "${memory_table}" all median_abs_error)
string(JSON memory_p90 GET "${memory_table}" all p90_abs_error)
string(JSON groups_n LENGTH "${step_table}" groups)
math(EXPR groups_last "${groups_n} - 1")
foreach(i RANGE ${groups_last})
  string(JSON dimension GET "${step_table}" groups ${i} dimension)
  string(JSON value GET "${step_table}" groups ${i} value)
  if(dimension STREQUAL "model" AND value STREQUAL "moe")
    string(JSON moe_median GET "${step_table}" groups ${i} median_abs_error)
  elseif(dimension STREQUAL "sequence" AND value STREQUAL ">32k")
    string(JSON long_median GET "${step_table}" groups ${i} median_abs_error)
  endif()
endforeach()
percent_of(${step_median} step_median)
percent_of(${step_p90} step_p90)
percent_of(${memory_median} memory_median)
percent_of(${memory_p90} memory_p90)
percent_of(${moe_median} moe_median)
percent_of(${long_median} long_median)
# The tuning set's and the runs beyond it, which the table's groups do not split: validate's own
# summary of the two files (the corpus's copies of ../shared/validation's).
foreach(file published published_beyond_tuning)
  execute_process(COMMAND ${MESHPLAN} validate --dataset ${DATA}/validation/${file}.json RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCH "\n  all +([0-9]+) +([0-9.]+%) +([0-9.]+%) +([0-9.]+%)" _ "${out}")
  set(${file}_n "${CMAKE_MATCH_1}")
  set(${file}_median "${CMAKE_MATCH_2}")
  set(${file}_p90 "${CMAKE_MATCH_3}")
  set(${file}_max "${CMAKE_MATCH_4}")
endforeach()
# The memory corpus's published fit outcomes and how many the verdict gets right; the throughput
# corpus's runs called tight (over the GPU only with the allocator's reserve), as README words them.
execute_process(COMMAND ${MESHPLAN} validate --memory --dataset ${DATA}/memory RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(REGEX MATCH "# ([0-9]+) published outcomes: ([0-9]+) right" _ "${out}")
set(outcomes_n "${CMAKE_MATCH_1}")
set(outcomes_right "${CMAKE_MATCH_2}")
execute_process(COMMAND ${MESHPLAN} validate --dataset ${DATA}/validation RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(REPLACE "\n" "\n\n" doubled "\n${out}\n")  # each row between newlines of its own
string(REGEX MATCHALL "\n  [^\n]* tight\n" tight_rows "${doubled}")
list(LENGTH tight_rows tight_n)
set(number_words "none;one;two;three;four;five;six;seven;eight;nine;ten")
if(tight_n LESS 11)
  list(GET number_words ${tight_n} tight_word)
else()
  set(tight_word "${tight_n}")
endif()
set(tuning_median "${published_median}")
set(tuning_max "${published_max}")
set(beyond_n "${published_beyond_tuning_n}")
set(beyond_median "${published_beyond_tuning_median}")
set(beyond_p90 "${published_beyond_tuning_p90}")
math(EXPR step_thousands "${step_n} / 1000")
math(EXPR step_units "${step_n} % 1000")
if(step_thousands GREATER 0)
  string(LENGTH "${step_units}" units_length)
  if(units_length EQUAL 1)
    set(step_units "00${step_units}")
  elseif(units_length EQUAL 2)
    set(step_units "0${step_units}")
  endif()
  set(step_runs "${step_thousands},${step_units}")
else()
  set(step_runs "${step_n}")
endif()
string(REPLACE "." "\\." step_median_rx "${step_median}")
string(REPLACE "." "\\." step_p90_rx "${step_p90}")
string(REPLACE "." "\\." memory_median_rx "${memory_median}")
string(REPLACE "." "\\." memory_p90_rx "${memory_p90}")
string(REPLACE "." "\\." moe_median_rx "${moe_median}")
string(REPLACE "." "\\." long_median_rx "${long_median}")
string(REPLACE "." "\\." tuning_median_rx "${tuning_median}")
string(REPLACE "." "\\." tuning_max_rx "${tuning_max}")
string(REPLACE "." "\\." beyond_median_rx "${beyond_median}")
string(REPLACE "." "\\." beyond_p90_rx "${beyond_p90}")
string(REGEX REPLACE "[ \n]+" " " readme_flat "${readme_text}")
set(readme_wrong "")
foreach(rx "maps ${step_runs} published runs" "median ${step_median_rx}, p90 ${step_p90_rx} off"
        "MoE runs most: median ${moe_median_rx}" "runs beyond 32k tokens ${long_median_rx}"
        "against ${memory_n} measured per-GPU peaks" "median ${memory_median_rx}, p90 ${memory_p90_rx} off today"
        "Korthikanti 2022\\) it is median ${tuning_median_rx}, max ${tuning_max_rx} off"
        "beyond the tuning set's ${beyond_n} runs: ${beyond_median_rx}, p90 ${beyond_p90_rx}\\)"
        "${outcomes_n} published fit outcomes, ${outcomes_right} right" "\\(${tight_word} tight,")
  if(NOT readme_flat MATCHES "${rx}")
    list(APPEND readme_wrong "'${rx}'")
  endif()
endforeach()
if(readme_wrong)
  message(SEND_ERROR "readme_accuracy: README.md does not say ${readme_wrong} (presets/accuracy/step.json, memory.json)")
else()
  message(STATUS "ok readme_accuracy (${step_runs} runs ${step_median}/${step_p90}, MoE ${moe_median}, >32k ${long_median}, tuning ${tuning_median}/max ${tuning_max}, beyond ${beyond_n} ${beyond_median}/${beyond_p90}, ${tight_word} tight; ${memory_n} peaks ${outcomes_right} of ${outcomes_n} outcomes right, ${memory_median}/${memory_p90})")
endif()
