#!/usr/bin/env python3
"""Measurements on a real GPU that the memory and compute models take as inputs.

Run by scripts/gpu-session.sh on a machine with an NVIDIA GPU and PyTorch 2.x:
`gpu_probes.py MODE OUT.json`, MODE one of context_attention, sustained, memory, host_moe, expert_gemm,
megatron_moe, megatron_layer, cp_attention, checkpoint_early_stop, unfused_attention, gemm_alignment, layer_profile (each function's docstring says what it measures); writes one JSON file. Nothing here is fitted to a published run: each number is what this GPU, driver
and PyTorch did, recorded with the versions that did it.

  context:   device memory a process holds beyond PyTorch's reserved bytes after CUDA's
             initialisation (lazy loading, the default since CUDA 11.7), then after the first
             bf16 cuBLAS GEMM (handle + workspace), read with cudaMemGetInfo (the GPU holds no
             other process) against the free memory before this process touched the GPU
             (nvidia-smi).
  attention: PyTorch SDPA's causal attention, bf16, per backend (FLASH_ATTENTION is
             FlashAttention-2; CUDNN_ATTENTION is cuDNN's fused kernel), forward and forward +
             backward, over the FlashAttention-2 benchmark's grid: 16k tokens per batch
             (batch = 16384 / seq), hidden 2048 (heads = 2048 / d), d 64 and 128, seq 512..16k.
             FLOPs as benchmark_flash_attention.py counts them: forward 4*b*s^2*h*d / 2 (causal),
             backward 2.5 x forward. Median of 20 timed runs after 5 warm-ups (CUDA events), fresh
             random inputs per case.
"""
import json
import os
import subprocess
import sys
import time


def smi(query):
    out = subprocess.check_output(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"])
    return [x.strip() for x in out.decode().strip().splitlines()[0].split(",")]


def main_context_attention(path):
    free_before_mib = float(smi("memory.free")[0])
    import torch  # noqa: E402 (the free memory above is read before CUDA starts)

    res = {
        "format": "meshplan.gpu_probes/1",
        "command": "python3 scripts/gpu_probes.py context_attention OUT.json (scripts/gpu-session.sh)",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": smi("name")[0],
        "driver": smi("driver_version")[0],
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }

    # --- context -----------------------------------------------------------------------------
    ctx = {"free_before_process_mib": free_before_mib}
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    ctx["total_mib"] = total / 2**20
    ctx["after_init_used_beyond_reserved_mib"] = (free_before_mib * 2**20 - free - torch.cuda.memory_reserved()) / 2**20
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ b).sum().item()
    torch.cuda.synchronize()
    free, _ = torch.cuda.mem_get_info()
    ctx["after_bf16_gemm_used_beyond_reserved_mib"] = (free_before_mib * 2**20 - free - torch.cuda.memory_reserved()) / 2**20
    ctx["reserved_mib"] = torch.cuda.memory_reserved() / 2**20
    ctx["allocated_mib"] = torch.cuda.memory_allocated() / 2**20
    res["context"] = ctx
    del a, b
    torch.cuda.empty_cache()
    print("context:", json.dumps(ctx), flush=True)

    # --- attention -----------------------------------------------------------------------------
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    def timed(fn, reps=20, warm=5):
        return event_median_ms(torch, fn, reps, warm) / 1e3

    rows = []
    for backend in ("FLASH_ATTENTION", "CUDNN_ATTENTION"):
        for d in (64, 128):
            for seq in (512, 1024, 2048, 4096, 8192, 16384):
                bsz, heads = 16384 // seq, 2048 // d
                row = {"backend": backend, "head_dim": d, "seq": seq, "batch": bsz, "heads": heads}
                try:
                    q, k, v = (torch.randn(bsz, heads, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                               for _ in range(3))
                    g = torch.randn(bsz, heads, seq, d, device="cuda", dtype=torch.bfloat16)
                    fwd_flops = 4.0 * bsz * seq * seq * heads * d / 2
                    with sdpa_kernel([getattr(SDPBackend, backend)]):
                        t_f = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))

                        def fb():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                            torch.autograd.grad(o, (q, k, v), g)  # no accumulation into .grad

                        t_fb = timed(fb)
                    t_b = max(t_fb - t_f, 1e-9)
                    row.update({"fwd_s": t_f, "fwd_bwd_s": t_fb, "fwd_tflops": fwd_flops / t_f / 1e12,
                                "bwd_tflops": 2.5 * fwd_flops / t_b / 1e12,
                                "fwd_bwd_tflops": 3.5 * fwd_flops / t_fb / 1e12})
                    del q, k, v, g
                except Exception as ex:  # a backend that refuses a shape: recorded, not fatal
                    row["error"] = f"{type(ex).__name__}: {str(ex).splitlines()[0][:200]}"
                rows.append(row)
                print("attention:", json.dumps(row), flush=True)
    res["attention"] = rows
    write_json(path, res)


def failed(row):
    """Records the exception being handled in `row` (the last 1,500 characters of its traceback):
    recorded, not fatal, so the other configs of a probe still run."""
    import traceback
    row["error"] = traceback.format_exc()[-1500:]


def add_run(res, label, row):
    """Appends one config's `row` to the probe's runs and prints it (the session log keeps it)."""
    res["runs"].append(row)
    print(label + ":", json.dumps(row), flush=True)


def write_json(path, res):
    """Writes a probe's result file."""
    with open(path, "w") as f:
        json.dump(res, f, indent=1)


def event_median_ms(torch, fn, reps, warm, calls=1):
    """The median over `reps` trials of `calls` back-to-back calls of `fn()`, per call, after `warm`
    untimed calls, each trial timed by CUDA events around it (ms)."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / calls)
    return sorted(times)[len(times) // 2]


def header(torch):
    return {"command": "python3 scripts/gpu_probes.py " + " ".join(sys.argv[1:]) + " (scripts/gpu-session.sh)",
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": smi("name")[0],
            "driver": smi("driver_version")[0], "torch": torch.__version__, "cuda_runtime": torch.version.cuda}


def fwd_bwd_wall_ms(torch, forward, iters=13, warmup=3):
    """Median wall times (ms) of `forward()` and of it with `.float().sum().backward()` on its output,
    each started from an idle GPU, over `iters` runs after `warmup`: a host-bound layer shows its
    host time here, not its kernels'."""
    fwd_ms, step_ms = [], []
    for i in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = forward()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        out.float().sum().backward()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if i >= warmup:
            fwd_ms.append((t1 - t0) * 1e3)
            step_ms.append((t2 - t0) * 1e3)
    return sorted(fwd_ms)[len(fwd_ms) // 2], sorted(step_ms)[len(step_ms) // 2]


def profiled_fwd_bwd(torch, forward, cpu=False):
    """One forward and backward under torch.profiler: its CUDA kernels' summed time (ms), their
    count, and every profiler event (CPU ones too when `cpu`)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=([ProfilerActivity.CPU] if cpu else []) + [ProfilerActivity.CUDA]) as prof:
        forward().float().sum().backward()
        torch.cuda.synchronize()
    kernels = [ev for ev in prof.events() if ev.device_type.name == "CUDA"]
    return sum(ev.device_time for ev in kernels) / 1e3, len(kernels), prof.events()  # device_time in us


GEMM_KERNEL_TAGS = ("gemm", "cutlass", "nvjet", "xmma")  # cuBLAS / CUTLASS kernel names, sm80 to sm100


def profiled_gemms(torch, fn):
    """One call of `fn()` under torch.profiler: its GEMM kernels (names with GEMM_KERNEL_TAGS) as
    {"gemm_kernels": count, "gemm_ms": summed device time, "gemm_kernel_names": distinct names}."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    gemms = [ev for ev in prof.events() if ev.device_type.name == "CUDA" and
             any(t in ev.name.lower() for t in GEMM_KERNEL_TAGS)]
    return {"gemm_kernels": len(gemms), "gemm_ms": sum(ev.device_time for ev in gemms) / 1e3,
            "gemm_kernel_names": sorted({ev.name[:120] for ev in gemms})}


def llama_block_class(torch, repeat_kv=False):
    """A Llama-style block in plain PyTorch modules (RMSNorm, q/k/v/o linears, SDPA causal
    attention with grouped KV heads, SwiGLU w1/w3/w2; no RoPE). With `repeat_kv` K and V are
    repeated to every query head before SDPA, as torchtitan's Llama does (`repeat_kv`); else SDPA
    takes the grouped heads itself (`enable_gqa`)."""
    import torch.nn.functional as F

    class Block(torch.nn.Module):
        def __init__(self, h, f, heads, kv):
            super().__init__()
            self.heads, self.kv, self.d = heads, kv, h // heads
            self.n1 = torch.nn.RMSNorm(h) if hasattr(torch.nn, "RMSNorm") else torch.nn.LayerNorm(h)
            self.n2 = torch.nn.RMSNorm(h) if hasattr(torch.nn, "RMSNorm") else torch.nn.LayerNorm(h)
            self.wq = torch.nn.Linear(h, h, bias=False)
            self.wk = torch.nn.Linear(h, kv * self.d, bias=False)
            self.wv = torch.nn.Linear(h, kv * self.d, bias=False)
            self.wo = torch.nn.Linear(h, h, bias=False)
            self.w1 = torch.nn.Linear(h, f, bias=False)
            self.w3 = torch.nn.Linear(h, f, bias=False)
            self.w2 = torch.nn.Linear(f, h, bias=False)

        def forward(self, x):
            b, s, h = x.shape
            a = self.n1(x)
            q = self.wq(a).view(b, s, self.heads, self.d).transpose(1, 2)
            k = self.wk(a).view(b, s, self.kv, self.d).transpose(1, 2)
            v = self.wv(a).view(b, s, self.kv, self.d).transpose(1, 2)
            if repeat_kv and self.kv != self.heads:
                k = k.repeat_interleave(self.heads // self.kv, dim=1)
                v = v.repeat_interleave(self.heads // self.kv, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               enable_gqa=not repeat_kv and self.kv != self.heads)
            x = x + self.wo(o.transpose(1, 2).reshape(b, s, h))
            m = self.n2(x)
            return x + self.w2(F.silu(self.w1(m)) * self.w3(m))

    return Block


def block_dims(shape):
    """SHAPE as four_llama_blocks reads it: (seq, hidden, ffn, heads, kv_heads, sequences a step)."""
    dims = [int(v) for v in shape.split("x")]
    seq, h, f, heads, kv = dims if len(dims) == 5 else (dims[0], 4096, 14336, 32, 8)
    return seq, h, f, heads, kv, max(8192 // seq, 1)


def four_llama_blocks(torch, shape, repeat_kv=False, compiled=False):
    """Four Llama blocks (llama_block_class) in bf16 and one step's input: SHAPE is SEQ (Llama 3 8B's
    block) or SEQxHIDDENxFFNxHEADSxKV_HEADS, 8,192 tokens in 8192 / SEQ sequences. Returns the dims
    (seq, h, f, heads, kv, batch), the blocks and step(), a forward + backward of the four (each
    compiled whole with compiled=True)."""
    Block = llama_block_class(torch, repeat_kv=repeat_kv)
    seq, h, f, heads, kv, batch = block_dims(shape)
    blocks = [Block(h, f, heads, kv).cuda().to(torch.bfloat16) for _ in range(4)]
    runs = [torch.compile(blk, fullgraph=True) for blk in blocks] if compiled else blocks
    x = torch.randn(batch, seq, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step():
        y = x
        for blk in runs:
            y = blk(y)
        y.float().sum().backward()
    return (seq, h, f, heads, kv, batch), blocks, step


def main_sustained(path, *cases):
    """GEMMs back to back for SECONDS per case: TFLOP/s per 1 s window, with the SM clock and power
    read after each window (nvidia-smi), to compare a short burst with the settled rate. cases:
    DTYPE:MxNxK:SECONDS (DTYPE bf16 or fp8; fp8 is torch._scaled_mm, e4m3 in, unit scales, bf16
    out, B column-major as cuBLASLt's fp8 kernels take it), or attn:SEQ:SECONDS (a causal
    FlashAttention-2 forward + backward of one SEQ-token sequence, 32 heads of 128, through SDPA's
    flash backend: whether attention is held by the power limit as the GEMMs are), or
    layer:SHAPE:SECONDS / layer_compiled:SHAPE:SECONDS (four Llama blocks, forward + backward of
    8,192 tokens in sequences of SEQ, eager or each block compiled whole; SHAPE is SEQ for Llama 3
    8B's block or SEQxHIDDENxFFNxHEADSxKV_HEADS: whether a training step's mix settles as a GEMM
    alone does; its TFLOP/s count the step's GEMM and causal attention FLOPs, with step_ms per
    window); default
    bf16:8192x8192x8192:20 and
    bf16:8192x8448x20480:20 (ml-engineering's H200 bf16 MSMF shape)."""
    import torch

    res = header(torch)
    res["format"] = "meshplan.gpu_sustained/1"
    res["shapes"] = []
    for case in cases or ("bf16:8192x8192x8192:20", "bf16:8192x8448x20480:20"):
        dtype, shape, seconds = case.split(":")
        seconds = float(seconds)
        if dtype == "attn":  # causal FlashAttention-2 (SDPA's flash backend), forward + backward
            m, n, k = int(shape), 32, 128  # sequence, heads, head dim: one sequence
            q, kk, v = (torch.randn(1, n, m, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                        for _ in range(3))
            from torch.nn.attention import SDPBackend, sdpa_kernel

            def gemm():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    torch.nn.functional.scaled_dot_product_attention(q, kk, v, is_causal=True).sum().backward()
            flops = 3.5 * 4.0 * m * m / 2 * n * k  # forward + backward (2.5x), causal
            a, b = q, kk
        elif dtype in ("layer", "layer_compiled"):
            # Four Llama 3 8B blocks (llama_block_class), one SHAPE-token sequence, bf16, forward +
            # backward without checkpointing, eager or each block compiled whole: a training
            # step's mix of GEMMs, attention and memory-bound ops, held as long as a GEMM case.
            # SHAPE: SEQ (Llama 3 8B's block) or SEQxHIDDENxFFNxHEADSxKV_HEADS (a TP rank's share),
            # 8,192 tokens a step in 8192 / SEQ sequences.
            (seq, h, f, heads, kv, batch), blocks, gemm = four_llama_blocks(
                torch, shape, compiled=dtype == "layer_compiled")
            gemm_fwd = 2.0 * batch * seq * (h * (h + 2 * kv * h // heads) + h * h + 3 * h * f)
            attn_fwd = 4.0 * batch * seq * seq * h / 2  # causal, as benchmark_flash_attention.py counts it
            flops = 4 * (3 * gemm_fwd + 3.5 * attn_fwd)  # the step's FLOPs: forward, backward 2x / 2.5x
            m, n, k = seq, h, f
            a, b = blocks, gemm
        elif dtype == "fp8":
            m, n, k = (int(x) for x in shape.split("x"))
            flops = 2.0 * m * n * k
            a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
            one = torch.tensor(1.0, device="cuda")

            def gemm():
                torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        else:
            m, n, k = (int(x) for x in shape.split("x"))
            flops = 2.0 * m * n * k
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

            def gemm():
                torch.matmul(a, b, out=c)
        for _ in range(3):
            gemm()
        torch.cuda.synchronize()
        windows, t0 = [], time.time()
        while time.time() - t0 < seconds:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            n_calls = 0
            w0 = time.time()
            while time.time() - w0 < 1.0:
                for _ in range(20):
                    gemm()
                n_calls += 20
                e.record()
                e.synchronize()
            e.record()
            e.synchronize()
            t = s.elapsed_time(e) / 1e3
            clk, pw = smi("clocks.sm,power.draw")
            windows.append({"tflops": flops * n_calls / t / 1e12, "sm_mhz": float(clk), "power_w": float(pw)})
        extra = {}
        if dtype.startswith("layer"):
            for w in windows:
                w["step_ms"] = flops / (w["tflops"] * 1e12) * 1e3
            # The step's GEMM kernels right after the windows (the profiler over one step).
            extra = {"tokens": batch * seq, "hidden": h, "ffn": f, "heads": heads, "kv_heads": kv,
                     **{key: v for key, v in profiled_gemms(torch, gemm).items() if key != "gemm_kernel_names"}}
        row = {"dtype": dtype, "m": m, "n": n, "k": k, "windows": windows, **extra,
               "first_window_tflops": windows[0]["tflops"],
               "last5_mean_tflops": sum(w["tflops"] for w in windows[-5:]) / len(windows[-5:])}
        res["shapes"].append(row)
        print("sustained:", json.dumps({x: row[x] for x in row if x != "windows"}),
              "last clock/power:", windows[-1]["sm_mhz"], windows[-1]["power_w"], flush=True)
        del a, b
        torch.cuda.empty_cache()
    write_json(path, res)


def main_memory(path, *configs):
    """Peak allocated and reserved bytes of a Llama 3 training step written as torchtitan wrote it in
    December 2024 (torchtitan/models/llama/model.py then: RMSNorm in fp32 then type_as, complex
    RoPE, repeat_kv, SDPA causal, SwiGLU w2(silu(w1 x) * w3 x), output(h).float(), cross entropy),
    FSDP2 over a one-rank group with torchtitan's mixed precision (bf16 params, fp32 reduce), each
    block and the root wrapped, reshard after forward; fused AdamW; gradient clipping at 1.0; no
    activation checkpointing, no torch.compile. torch.cuda.max_memory_* after reset each step.
    configs: LAYERS:MBS:SEQ each (default 2:1:8192 4:1:8192 4:2:4096); the allocator's settings
    are the environment's (PYTORCH_CUDA_ALLOC_CONF, recorded)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-5):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight

    def rope(x, freqs):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs.view(1, x.shape[1], 1, -1)).flatten(3).type_as(x)

    class Attention(nn.Module):
        def __init__(self, h, heads, kv):
            super().__init__()
            self.heads, self.kv, self.d = heads, kv, h // heads
            self.wq = nn.Linear(h, heads * self.d, bias=False)
            self.wk = nn.Linear(h, kv * self.d, bias=False)
            self.wv = nn.Linear(h, kv * self.d, bias=False)
            self.wo = nn.Linear(heads * self.d, h, bias=False)

        def forward(self, x, freqs):
            b, s, _ = x.shape
            q = self.wq(x).view(b, s, self.heads, self.d)
            k = self.wk(x).view(b, s, self.kv, self.d)
            v = self.wv(x).view(b, s, self.kv, self.d)
            q, k = rope(q, freqs), rope(k, freqs)
            rep = self.heads // self.kv
            k = k[:, :, :, None, :].expand(b, s, self.kv, rep, self.d).reshape(b, s, self.heads, self.d)
            v = v[:, :, :, None, :].expand(b, s, self.kv, rep, self.d).reshape(b, s, self.heads, self.d)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            return self.wo(o.transpose(1, 2).contiguous().view(b, s, -1))

    class Block(nn.Module):
        def __init__(self, h, heads, kv, ffn):
            super().__init__()
            self.attention, self.attention_norm, self.ffn_norm = Attention(h, heads, kv), RMSNorm(h), RMSNorm(h)
            self.w1, self.w2, self.w3 = nn.Linear(h, ffn, bias=False), nn.Linear(ffn, h, bias=False), nn.Linear(h, ffn, bias=False)

        def forward(self, x, freqs):
            h = x + self.attention(self.attention_norm(x), freqs)
            y = self.ffn_norm(h)
            return h + self.w2(F.silu(self.w1(y)) * self.w3(y))

    class Model(nn.Module):
        def __init__(self, layers, h, heads, kv, ffn, vocab, seq):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, h)
            self.layers = nn.ModuleDict({str(i): Block(h, heads, kv, ffn) for i in range(layers)})
            self.norm, self.output = RMSNorm(h), nn.Linear(h, vocab, bias=False)
            d = h // heads
            inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2).float() / d))
            self.register_buffer("freqs_cis", torch.polar(torch.ones(seq, d // 2), torch.outer(torch.arange(seq).float(), inv)),
                                 persistent=True)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for layer in self.layers.values():
                h = layer(h, self.freqs_cis[: tokens.shape[1]])
            return self.output(self.norm(h)).float()

    res = header(torch)
    res["format"] = "meshplan.gpu_memory/1"
    res["model"] = "Llama 3 8B dimensions (h 4096, 32 heads, 8 kv heads, ffn 14336, vocab 128256), fewer layers"
    res["alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") or os.environ.get("PYTORCH_ALLOC_CONF", "")
    res["runs"] = []
    for layers, mbs, seq in [tuple(int(x) for x in c.split(":")) for c in (configs or ("2:1:8192", "4:1:8192", "4:2:4096"))]:
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = Model(layers, 4096, 32, 8, 14336, 128256, seq)
        for p in model.parameters():
            nn.init.normal_(p, std=0.02)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for blk in model.layers.values():
            fully_shard(blk, mp_policy=mp, reshard_after_forward=True)
        fully_shard(model, mp_policy=mp, reshard_after_forward=True)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        n_params = sum(p.numel() for p in model.parameters())
        steps = []
        for _ in range(3):
            torch.cuda.reset_peak_memory_stats()
            tokens = torch.randint(0, 128256, (mbs, seq + 1), device="cuda")
            out = model(tokens[:, :-1])
            loss = F.cross_entropy(out.flatten(0, 1), tokens[:, 1:].flatten(0, 1))
            del out
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            steps.append({"max_allocated_bytes": torch.cuda.max_memory_allocated(),
                          "max_reserved_bytes": torch.cuda.max_memory_reserved(),
                          "loss": loss.item()})
        free, total = torch.cuda.mem_get_info()
        row = {"layers": layers, "mbs": mbs, "seq": seq, "params": n_params, "steps": steps,
               "device_used_bytes_end": total - free}
        # The caching allocator's segments after the last step, by the stream whose pool holds them
        # (torch.cuda.memory_snapshot: each segment's stream, total_size, allocated_size): FSDP2's
        # reduce-scatter outputs and all-gather buffers live in their streams' pools, which the
        # compute stream cannot reuse (docs/memory.md §4). The default stream is handle 0.
        pools = {}
        for seg in torch.cuda.memory_snapshot():
            key = "default" if seg["stream"] == 0 else "stream %d" % seg["stream"]
            pool = pools.setdefault(key, {"segments": 0, "reserved_bytes": 0, "allocated_bytes": 0})
            pool["segments"] += 1
            pool["reserved_bytes"] += seg["total_size"]
            pool["allocated_bytes"] += seg["allocated_size"]
        row["pools_after_last_step"] = pools
        add_run(res, "memory", row)
        del model, opt
        # FSDP's modules and their hooks form reference cycles: without a collection the previous
        # model's fp32 parameters stay allocated into the next configuration (the first sessions'
        # files, tests/data/gpu/h200-2026-11-28/README.md).
        import gc
        gc.collect()
        torch.cuda.empty_cache()
    torch.distributed.destroy_process_group()
    write_json(path, res)


def main_host_moe(path, *configs):
    """Where an eager step waits on the host rather than the GPU, for the step model's per-kernel
    cost and a dropless MoE layer's (docs/compute.md).
    (1) dispatch: the host time of one eager PyTorch op, no grad and under autograd (forward then
    backward), on one-element tensors whose kernels take about a microsecond: wall time per op over
    20,000 ops, and the GPU time per op by CUDA events around the same loop.
    (2) moe: one dropless MoE layer as Megatron-Core's all-to-all dispatcher runs it on one rank
    (EP 1, so the all-to-alls are the identity): router linear and softmax, top-k, the tokens per
    expert copied to the host (the sync the dispatcher needs for its splits), permute by a stable
    sort of the expert ids, one GEMM pair per expert over its rows (SwiGLU fc1, fc2; a loop, as
    Transformer Engine's GroupedLinear issues one cuBLAS GEMM per expert), unpermute weighted by
    the router probabilities; bf16, balanced random routing. Per config: wall time of forward and
    forward + backward (median of 10 after 3 warm-ups), the CUDA kernels' summed time from
    torch.profiler for one forward + backward, and the kernel count. configs:
    TOKENS:HIDDEN:EXPERTS:TOPK:FFN each (default Qwen3-30B-A3B's layer as one EP-8 rank sees it,
    8192 tokens, 2048 hidden, 16 local experts of 128 with top-8 keeping a sixteenth of the
    tokens' copies: 8192:2048:16:1:768; and gpt-oss-120b's (top-4 of 128, micro batch 4), 8192:2880:16:1:2880; and a dense
    check, 8192:4096:1:1:14336)."""
    import torch
    import torch.nn.functional as F

    res = header(torch)
    res["format"] = "meshplan.gpu_host_moe/1"
    dev = torch.device("cuda")

    def wall_and_gpu(fn, n):
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        s.record()
        fn(n)
        e.record()
        t_host = time.perf_counter() - t0  # the host returns before the GPU finishes
        e.synchronize()
        return t_host, s.elapsed_time(e) / 1e3

    x = torch.zeros(1, device=dev)

    def plain(n):
        for _ in range(n):
            x.add_(1.0)

    w = torch.zeros(1, device=dev, requires_grad=True)

    def graph(n):
        y = w
        for _ in range(n):
            y = y * 1.0001
        y.backward()

    n = 20000
    plain(100)
    graph(100)
    rows = []
    for name, fn in (("add_ no grad", plain), ("mul under autograd + backward", graph)):
        host, gpu = wall_and_gpu(fn, n)
        rows.append({"op": name, "ops": n, "host_us_per_op": host / n * 1e6, "gpu_us_per_op": gpu / n * 1e6})
        print("dispatch:", json.dumps(rows[-1]), flush=True)
    res["dispatch"] = rows

    def moe_layer(tokens, hidden, experts, topk, ffn):
        router = torch.randn(hidden, experts, device=dev, dtype=torch.bfloat16, requires_grad=True)
        fc1 = [torch.randn(hidden, 2 * ffn, device=dev, dtype=torch.bfloat16).mul_(0.02).requires_grad_()
               for _ in range(experts)]
        fc2 = [torch.randn(ffn, hidden, device=dev, dtype=torch.bfloat16).mul_(0.02).requires_grad_()
               for _ in range(experts)]
        inp = torch.randn(tokens, hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)

        def forward():
            logits = inp @ router
            probs, idx = torch.topk(torch.softmax(logits.float(), dim=-1), topk, dim=-1)
            flat = idx.flatten()
            per_expert = torch.bincount(flat, minlength=experts).tolist()  # the host sync
            order = torch.argsort(flat, stable=True)
            src = order // topk
            x = inp.index_select(0, src)
            outs, start = [], 0
            for ei, rows_e in enumerate(per_expert):
                h = x[start:start + rows_e] @ fc1[ei]
                a, b = h.chunk(2, dim=-1)
                outs.append((F.silu(a) * b) @ fc2[ei])
                start += rows_e
            y = torch.cat(outs, 0) * probs.flatten()[order].unsqueeze(-1).to(torch.bfloat16)
            return torch.zeros_like(inp).index_add(0, src, y)

        return forward, inp

    res["moe"] = []
    for cfg in configs or ("8192:2048:16:1:768", "8192:2880:16:1:2880", "8192:4096:1:1:14336"):
        tokens, hidden, experts, topk, ffn = (int(v) for v in cfg.split(":"))
        forward, inp = moe_layer(tokens, hidden, experts, topk, ffn)
        fwd_ms, step_ms = fwd_bwd_wall_ms(torch, forward)
        kernel_ms, kernels, _ = profiled_fwd_bwd(torch, forward)
        flops = 2.0 * tokens * topk * hidden * 3 * ffn * 3  # fc1 (2 ffn) + fc2, forward and backward
        row = {"tokens": tokens, "hidden": hidden, "experts": experts, "topk": topk, "ffn": ffn,
               "forward_ms_median": fwd_ms, "forward_backward_ms_median": step_ms,
               "kernel_ms_sum": kernel_ms, "kernels": kernels, "expert_gemm_flops": flops}
        res["moe"].append(row)
        print("moe:", json.dumps(row), flush=True)
        del forward, inp
        torch.cuda.empty_cache()
    write_json(path, res)


def main_expert_gemm(path, *cases):
    """An MoE layer's expert GEMMs against the rows each expert gets (docs/compute.md: the small-GEMM
    ramp and wave quantization at low tokens per expert). Per case, 8 experts' GEMMs of one pass,
    bf16, fresh random inputs: forward Y[r x N] = X[r x K] W[K x N], input gradient dX[r x K] =
    dY W^T, weight gradient dW[K x N] = X^T dY, for r rows per expert. Two ways to run them: a loop
    of one cuBLAS GEMM per expert (Transformer Engine's GroupedLinear before its CUTLASS path, and
    Megatron-Core's SequentialMLP), timed eagerly (host launches included) and as a CUDA graph
    (device time alone); the same loop over 4 streams as a graph (Transformer Engine's default
    multi-stream cuBLAS grouped GEMM; added after the first 2026-11-30 run, whose
    expert_gemm.json has no loop4 fields: expert_gemm_streams.json has them); and torch._grouped_mm, one kernel for all experts
    (torchtitan's MoE), as a graph. Median of 5 trials of 20 calls each (5 above a TFLOP a call) after 3 warm-ups (CUDA events). cases:
    NAME:K:N each, the layer's fc1 (hidden -> 2 x ffn for a GLU) and fc2 (ffn -> hidden); default
    Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V3, gpt-oss-120b and Mixtral 8x7B; rows 64..8192
    (Mixtral to 4096)."""
    import torch

    res = header(torch)
    res["format"] = "meshplan.gpu_expert_gemm/1"
    res["experts_per_call"] = experts = 8
    dev = torch.device("cuda")
    grouped = hasattr(torch, "_grouped_mm")
    res["torch_grouped_mm"] = grouped
    res["cases"] = []
    side = [torch.cuda.Stream() for _ in range(4)]  # Transformer Engine's 4 compute streams

    def median_ms(fn, calls, trials=5):
        return event_median_ms(torch, fn, trials, 3, calls)

    def as_graph(fn):
        fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return g.replay

    layers = cases or ("qwen3-30b-a3b.fc1:2048:1536", "qwen3-30b-a3b.fc2:768:2048",
                       "qwen3-235b-a22b.fc1:4096:3072", "qwen3-235b-a22b.fc2:1536:4096",
                       "deepseek-v3.fc1:7168:4096", "deepseek-v3.fc2:2048:7168",
                       "gpt-oss-120b.fc1:2880:5760", "gpt-oss-120b.fc2:2880:2880",
                       "mixtral-8x7b.fc1:4096:28672", "mixtral-8x7b.fc2:14336:4096")
    for layer in layers:
        name, k, n = layer.split(":")
        k, n = int(k), int(n)
        for r in (64, 128, 256, 512, 1024, 2048, 4096, 8192):
            if r * n * k > 8192 * 4096 * 28672 // 2:
                continue
            x = torch.randn(experts * r, k, device=dev, dtype=torch.bfloat16)
            w = torch.randn(experts, n, k, device=dev, dtype=torch.bfloat16) * 0.02  # (E, N, K) as torchtitan
            dy = torch.randn(experts * r, n, device=dev, dtype=torch.bfloat16)
            offs = torch.arange(1, experts + 1, device=dev, dtype=torch.int32) * r
            y = torch.empty(experts * r, n, device=dev, dtype=torch.bfloat16)
            dx = torch.empty(experts * r, k, device=dev, dtype=torch.bfloat16)
            dw = torch.empty(experts, k, n, device=dev, dtype=torch.bfloat16)
            xs, dys = x.split(r), dy.split(r)
            ys, dxs = y.split(r), dx.split(r)
            passes = {
                "fwd": (r, n, k, lambda: [torch.mm(xs[e], w[e].t(), out=ys[e]) for e in range(experts)],
                        lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)),
                "dgrad": (r, k, n, lambda: [torch.mm(dys[e], w[e], out=dxs[e]) for e in range(experts)],
                          lambda: torch._grouped_mm(dy, w, offs=offs)),
                "wgrad": (k, n, r, lambda: [torch.mm(xs[e].t(), dys[e], out=dw[e]) for e in range(experts)],
                          lambda: torch._grouped_mm(x.t(), dy, offs=offs)),
            }
            for pname, (m_, n_, k_, loop, one) in passes.items():
                flops = 2.0 * m_ * n_ * k_ * experts
                calls = 20 if flops < 1e12 else 5  # the largest cases take milliseconds a call
                row = {"layer": name, "pass": pname, "rows_per_expert": r, "m": m_, "n": n_, "k": k_,
                       "experts": experts, "flops": flops}
                def loop4(loop=loop, m_=m_, n_=n_, k_=k_, pname=pname):
                    # Transformer Engine's default grouped GEMM (general_grouped_gemm -> multi-stream
                    # cuBLAS, transformer_engine/common/gemm/cublaslt_gemm.cu at d0067d0d): GEMM i on
                    # compute stream i % 4 after the main stream, the main stream then waits on all.
                    cur = torch.cuda.current_stream()
                    for st in side:
                        st.wait_stream(cur)
                    for e in range(experts):
                        with torch.cuda.stream(side[e % 4]):
                            if pname == "fwd":
                                torch.mm(xs[e], w[e].t(), out=ys[e])
                            elif pname == "dgrad":
                                torch.mm(dys[e], w[e], out=dxs[e])
                            else:
                                torch.mm(xs[e].t(), dys[e], out=dw[e])
                    for st in side:
                        cur.wait_stream(st)
                try:
                    row["loop4_graph_ms"] = median_ms(as_graph(loop4), calls)
                    row["loop4_graph_tflops"] = flops / row["loop4_graph_ms"] / 1e9
                except Exception as ex:
                    row["loop4_error"] = repr(ex)[:200]
                try:
                    row["loop_eager_ms"] = median_ms(loop, calls)
                    row["loop_graph_ms"] = median_ms(as_graph(loop), calls)
                    row["loop_graph_tflops"] = flops / row["loop_graph_ms"] / 1e9
                    row["loop_eager_tflops"] = flops / row["loop_eager_ms"] / 1e9
                except Exception as ex:  # recorded, not fatal: the other cases still run
                    row["loop_error"] = repr(ex)[:200]
                if grouped:
                    try:
                        row["grouped_graph_ms"] = median_ms(as_graph(one), calls)
                        row["grouped_graph_tflops"] = flops / row["grouped_graph_ms"] / 1e9
                    except Exception as ex:
                        row["grouped_error"] = repr(ex)[:200]
                res["cases"].append(row)
                print("expert_gemm:", json.dumps(row), flush=True)
            del x, w, dy, y, dx, dw, xs, dys, ys, dxs, passes
            torch.cuda.empty_cache()
    write_json(path, res)


def megatron_one_gpu(megatron_dir, fmt, port):
    """Megatron-Core from MEGATRON_DIR on GPU 0 as a one-rank job (TP 1, PP 1, a fixed seed): torch
    and the result's header, with the format, the Megatron directory and the host CPU recorded."""
    sys.path.insert(0, megatron_dir)
    import torch

    res = header(torch)
    res["format"] = fmt
    res["megatron_dir"] = megatron_dir
    try:
        res["cpu"] = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")][0]
    except Exception as ex:  # recorded, not fatal
        res["cpu"] = repr(ex)
    res["cpus"] = os.cpu_count()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", port)
    torch.cuda.set_device(0)
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1)
    model_parallel_cuda_manual_seed(123)
    res["runs"] = []
    return torch, res


def main_megatron_moe(path, megatron_dir, *configs):
    """Megatron-Core's own MoE layer on one GPU: the host time a dropless MoE layer costs as its
    code runs it (docs/compute.md, the per-microbatch host floor). MEGATRON_DIR holds megatron/core
    of a recorded commit (no Transformer Engine on the machine: the local spec, SequentialMLP, one
    ColumnParallelLinear/RowParallelLinear pair per expert, unfused permutation). EP 1 and TP 1, so
    the all-to-alls are the identity, but the router, the dispatcher's permutations and its
    device-to-host synchronisation of the tokens per expert run as in training. Per config: wall
    time of forward and of forward + backward (median of 10 after 3 warm-ups, the GPU idle at the
    start of each), the kernels' summed time and count (torch.profiler, one forward + backward),
    the host CPU; the router alone, forward and backward. configs: EXPERTS:TOPK:TOKENS:HIDDEN:FFN[:ds]
    (ds: DeepSeek-V3's router, group-limited sigmoid with expert bias, and a shared expert) (default an EP-8 rank of Qwen3-30B-A3B at
    one 4,096-token sequence per microbatch, 16 local experts of 768 with 2,048 rows each:
    16:8:4096:2048:768; the same rows per expert over 4 experts, 4:2:4096:2048:768; and one expert,
    1:1:4096:2048:768)."""
    torch, res = megatron_one_gpu(megatron_dir, "meshplan.gpu_megatron_moe/1", "29512")
    import torch.nn.functional as F
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_submodules
    from megatron.core.transformer.moe.moe_layer import MoELayer
    from megatron.core.transformer.spec_utils import get_submodules
    from megatron.core.transformer.transformer_config import TransformerConfig

    for cfg in configs or ("16:8:4096:2048:768", "4:2:4096:2048:768", "1:1:4096:2048:768"):
        fields = cfg.split(":")
        experts, topk, tokens, hidden, ffn = (int(v) for v in fields[:5])
        deepseek = len(fields) > 5 and fields[5] == "ds"
        row = {"experts": experts, "topk": topk, "tokens": tokens, "hidden": hidden, "ffn": ffn,
               "router": "deepseek-v3" if deepseek else "softmax-aux-loss"}
        # DeepSeek-V3's router as Megatron-Bridge's provider sets it: sigmoid scores in fp32 with a
        # per-expert bias, group-limited top-k (8 groups, 4 of them), scaling 2.5, the sequence-wise
        # aux loss, and one shared expert of the routed experts' width.
        router_args = dict(moe_router_score_function="sigmoid", moe_router_enable_expert_bias=True,
                           moe_router_num_groups=8, moe_router_group_topk=4, moe_router_topk_scaling_factor=2.5,
                           moe_router_dtype="fp32", moe_router_load_balancing_type="seq_aux_loss",
                           moe_aux_loss_coeff=1e-4, moe_shared_expert_intermediate_size=ffn) if deepseek else \
            dict(moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3)
        try:
            config = TransformerConfig(
                num_layers=1, hidden_size=hidden, num_attention_heads=16, num_moe_experts=experts,
                moe_ffn_hidden_size=ffn, ffn_hidden_size=ffn, moe_router_topk=topk,
                moe_token_dispatcher_type="alltoall", moe_grouped_gemm=False, gated_linear_unit=True,
                activation_func=F.silu, add_bias_linear=False, bf16=True, params_dtype=torch.bfloat16,
                use_cpu_initialization=True, **router_args)
            submodules = get_submodules(get_gpt_layer_local_submodules(num_experts=experts,
                                                                       moe_grouped_gemm=False).mlp)
            layer = MoELayer(config, submodules).cuda()
            layer.set_layer_number(1)  # the router's aux-loss tracker indexes losses by layer
            row["layer"] = type(layer.experts).__name__ + " / " + type(layer.token_dispatcher).__name__
            x = torch.randn(tokens, 1, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            fwd_ms, step_ms = fwd_bwd_wall_ms(torch, lambda: layer(x)[0])
            router_ms = []  # the router alone, forward and backward
            for i in range(13):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                probs = layer.router(x)[0]
                probs.float().sum().backward()
                torch.cuda.synchronize()
                if i >= 3:
                    router_ms.append((time.perf_counter() - t0) * 1e3)
            row["router_forward_backward_ms_median"] = sorted(router_ms)[len(router_ms) // 2]
            kernel_ms, kernels, events = profiled_fwd_bwd(torch, lambda: layer(x)[0], cpu=True)
            syncs = [ev for ev in events if ev.device_type.name == "CPU" and
                     ev.name in ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize",
                                 "cudaMemcpyAsync", "aten::_local_scalar_dense", "aten::to", "aten::copy_")]
            row.update({"forward_ms_median": fwd_ms, "forward_backward_ms_median": step_ms,
                        "kernel_ms_sum": kernel_ms, "kernels": kernels, "host_sync_like_calls": len(syncs)})
            del layer, x
            torch.cuda.empty_cache()
        except Exception:  # recorded, not fatal: the other configs still run
            failed(row)
        add_run(res, "megatron_moe", row)
    torch.distributed.destroy_process_group()
    write_json(path, res)


def main_megatron_layer(path, megatron_dir, *configs):
    """Megatron-Core's whole transformer layer (attention block + MoE block, local spec: no Transformer
    Engine on the machine) on one GPU: what the per-microbatch host floor of an MoE layer
    (docs/compute.md) leaves out, the attention block's host time, and how host and GPU time
    combine once a device-to-host synchronisation drains the queue in every layer. Per config,
    wall time of forward + backward (median of 10 after 3 warm-ups, each from an idle GPU) against
    the kernels' summed time (torch.profiler), for the layer, for its attention block alone and for
    a chain of CHAIN layers run back to back as a pipeline stage runs them; TOKENS sweeps the GPU
    work at fixed host work, so that wall = max(host, kernels) shows as wall flat then following
    the kernels, and wall = kernels + a fixed exposed host part as a constant gap. configs:
    EXPERTS:TOPK:TOKENS:HIDDEN:FFN:HEADS:KV_HEADS:CHAIN[:rc] (rc: each layer under Megatron-Core's
    tensor_parallel.checkpoint, its forward, the dispatcher's synchronisation too, rerun in the
    backward; default Qwen3-30B-A3B's EP-8 rank, 16 local
    experts of 768, 32 heads of 128 with 4 kv heads, at 1,024, 4,096 and 8,192 tokens, chains of 4)."""
    torch, res = megatron_one_gpu(megatron_dir, "meshplan.gpu_megatron_layer/1", "29513")
    import torch.nn.functional as F
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.spec_utils import build_module
    from megatron.core.transformer.transformer_config import TransformerConfig

    # (16,384 tokens ran out of memory on an H200: the unfused attention's scores, four layers deep.)
    default = tuple("16:8:%d:2048:768:32:4:4" % n for n in (1024, 4096, 8192))
    for cfg in configs or default:
        fields = cfg.split(":")
        experts, topk, tokens, hidden, ffn, heads, kv_heads, chain = (int(v) for v in fields[:8])
        recompute = len(fields) > 8 and fields[8] == "rc"
        row = {"experts": experts, "topk": topk, "tokens": tokens, "hidden": hidden, "ffn": ffn,
               "heads": heads, "kv_heads": kv_heads, "chain": chain, "recompute": "full" if recompute else "none"}
        try:
            config = TransformerConfig(
                num_layers=chain, hidden_size=hidden, num_attention_heads=heads, num_query_groups=kv_heads,
                kv_channels=128, num_moe_experts=experts, moe_ffn_hidden_size=ffn, ffn_hidden_size=ffn,
                moe_router_topk=topk, moe_token_dispatcher_type="alltoall", moe_grouped_gemm=False,
                moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3, gated_linear_unit=True,
                activation_func=F.silu, add_bias_linear=False, normalization="RMSNorm", qk_layernorm=True,
                bf16=True, params_dtype=torch.bfloat16, use_cpu_initialization=True)
            spec = get_gpt_layer_local_spec(num_experts=experts, moe_grouped_gemm=False, qk_layernorm=True,
                                            normalization="RMSNorm")
            layers = [build_module(spec, config=config, layer_number=i + 1).cuda() for i in range(chain)]
            row["layer"] = type(layers[0]).__name__ + " / " + type(layers[0].mlp).__name__
            x = torch.randn(tokens, 1, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)

            from megatron.core import tensor_parallel

            def run(layer, h):  # rc: the layer's forward rerun in its backward (Megatron's full recompute)
                if recompute:
                    return tensor_parallel.checkpoint(lambda t: layer(t, attention_mask=None)[0], False, h)
                return layer(h, attention_mask=None)[0]

            def one():
                return run(layers[0], x)

            def attention():
                return layers[0].self_attention(x, attention_mask=None)[0]

            def stage():
                h = x
                for layer in layers:
                    h = run(layer, h)
                return h

            for name, fn in (("layer", one), ("attention", attention), ("chain", stage)):
                fwd_ms, step_ms = fwd_bwd_wall_ms(torch, fn)
                kernel_ms, kernels, _ = profiled_fwd_bwd(torch, fn)
                row[name] = {"forward_ms_median": fwd_ms, "forward_backward_ms_median": step_ms,
                             "kernel_ms_sum": kernel_ms, "kernels": kernels}
            del layers, x
            torch.cuda.empty_cache()
        except Exception:  # recorded, not fatal: the other configs still run
            failed(row)
        add_run(res, "megatron_layer", row)
    torch.distributed.destroy_process_group()
    write_json(path, res)


def main_cp_attention(path, *configs):
    """The attention work of one context-parallel rank as PyTorch's load-balanced ring attention
    does it with the all-gather rotater (torchtitan's December 2024 default; the loops of
    torch/distributed/tensor/experimental/_attention.py as read at pytorch 0123248a:
    _templated_ring_attention and _templated_ring_attention_backward), on one GPU with the
    communication left out: per step the flash SDPA op on the step's blocks (the local causal
    block first, then half the keys or half the queries, non-causal), the K/V concatenation each
    step makes for its rotater, the fp32 merge of outputs and log-sum-exps (_SDPAMerger, with the
    chunk-and-cat partial updates), and in the backward the flash backward op per step with the
    fp32 accumulation and concatenation of dK/dV and dQ. Against it, one causal flash SDPA of the
    whole sequence divided by the ranks: the same FLOPs in one kernel, what a step model that costs
    CP attention as one kernel assumes. configs: SEQ:CP:HEADS (default Llama 3.1 8B with K/V copied
    to 32 heads, head dim 128, as torchtitan's CP rows ran it: 65536:2, 131072:4, 262144:8)."""
    import torch
    import torch.nn.functional as F

    res = header(torch)
    res["format"] = "meshplan.gpu_cp_attention/1"
    res["pytorch_code_read"] = "pytorch 0123248a torch/distributed/tensor/experimental/_attention.py"
    res["runs"] = []
    aten = torch.ops.aten
    d, dt, dev = 128, torch.bfloat16, "cuda"

    def median_ms(fn, reps=5, warm=2):
        return event_median_ms(torch, fn, reps, warm)

    def partial_update(original, new, idx, add):
        chunks = list(original.chunk(2, dim=2))
        if add:
            chunks[idx] += new
        else:
            chunks[idx] = new
        return torch.cat(chunks, dim=2)

    def ring(cp, q, agg):
        """The ring's forward and backward for one rank holding `q`, the all-gather's output `agg`."""
        n = q.numel()

        def kv_at(idx):
            flat = agg.chunk(cp)[idx]
            return flat[:n].reshape(q.shape), flat[n:].reshape(q.shape)

        def blocks(rank, i):  # the step's q, k, v slices and flags, as the ring chooses them
            key, value = kv_at((rank - i) % cp)
            if i == 0:
                return q, key, value, True, False, key, value
            if i <= rank:
                return q, key.chunk(2, dim=2)[0], value.chunk(2, dim=2)[0], False, False, key, value
            return q.chunk(2, dim=2)[1], key, value, False, True, key, value

        first = aten._scaled_dot_product_flash_attention(q, q, q, 0.0, True)
        cums, philox = (first[2], first[3]), (first[6], first[7])

        def fwd(rank):
            out = lse = None
            for i in range(cp):
                qq, k, v, causal, partial, key, value = blocks(rank, i)
                if i < cp - 1:
                    torch.cat([key.flatten(), value.flatten()])  # for the rotater
                o, l = aten._scaled_dot_product_flash_attention(qq, k, v, 0.0, causal)[:2]
                o, l = o.float(), l.float().unsqueeze(-1)
                if lse is None:
                    out, lse = o, l
                    continue
                lo = lse.chunk(2, dim=2)[1] if partial else lse
                oo = out.chunk(2, dim=2)[1] if partial else out
                oo = oo - F.sigmoid(l - lo) * (oo - o)
                lo = lo - F.logsigmoid(lo - l)
                if partial:
                    lse = partial_update(lse, lo, 1, False)
                    out = partial_update(out, oo, 1, False)
                else:
                    out, lse = oo, lo
            return out.to(dt), lse.squeeze(-1)

        def bwd(rank, out, lse, dout):
            gq = torch.zeros_like(q, dtype=torch.float32)
            gk = torch.zeros_like(q, dtype=torch.float32)
            gv = torch.zeros_like(q, dtype=torch.float32)
            grad_kv = None
            for i in range(cp):
                qq, k, v, causal, partial, key, value = blocks(rank, i)
                if i != cp - 1:
                    torch.cat([key.flatten(), value.flatten()])
                oo = out.chunk(2, dim=2)[1] if partial else out
                do = dout.chunk(2, dim=2)[1] if partial else dout
                ll = lse.chunk(2, dim=2)[1].contiguous() if partial else lse
                gq_, gk_, gv_ = aten._scaled_dot_product_flash_attention_backward(
                    do, qq, k, v, oo, ll, cums[0], cums[1], qq.shape[2], k.shape[2], 0.0, causal,
                    philox[0], philox[1])[:3]
                if i == 0:
                    gk += gk_
                    gv += gv_
                else:
                    # The previous rank's accumulated dK/dV (emulated: this rank's own).
                    gk, gv = grad_kv[:n].reshape(q.shape), grad_kv[n:].reshape(q.shape)
                    if i <= rank:
                        gk = partial_update(gk, gk_, 0, True)
                        gv = partial_update(gv, gv_, 0, True)
                    else:
                        gk += gk_
                        gv += gv_
                grad_kv = torch.cat([gk.flatten(), gv.flatten()])
                if i <= rank:
                    gq += gq_
                else:
                    gq = partial_update(gq, gq_, 1, True)
            return gq.to(dt), grad_kv.to(dt)

        return fwd, bwd

    # Correct first: the ring's output for each rank's round-robin chunks (rank r holds chunks r
    # and 2 cp - 1 - r of the sequence) against one causal SDPA of the whole sequence, fp32.
    torch.manual_seed(1)
    cp_c, seq_c, heads_c = 4, 4096, 4
    qf, kf, vf = (torch.randn(1, heads_c, seq_c, d, device=dev, dtype=dt) for _ in range(3))
    ref = F.scaled_dot_product_attention(qf.float(), kf.float(), vf.float(), is_causal=True)
    chunks = lambda t: t.chunk(2 * cp_c, dim=2)
    errs = []
    for rank in range(cp_c):
        pick = lambda t: torch.cat([chunks(t)[rank], chunks(t)[2 * cp_c - 1 - rank]], dim=2)
        parts = []
        for r in range(cp_c):
            kr = torch.cat([chunks(kf)[r], chunks(kf)[2 * cp_c - 1 - r]], dim=2)
            vr = torch.cat([chunks(vf)[r], chunks(vf)[2 * cp_c - 1 - r]], dim=2)
            parts.append(torch.cat([kr.flatten(), vr.flatten()]))
        fwd, _ = ring(cp_c, pick(qf).contiguous(), torch.cat(parts))
        out, _ = fwd(rank)
        want = pick(ref)
        errs.append(float((out.float() - want).norm() / want.norm()))
    res["check_relative_error_by_rank"] = errs
    print("cp_attention check:", errs, flush=True)

    for cfg in configs or ("65536:2:32", "131072:4:32", "262144:8:32"):
        seq, cp, heads = (int(v) for v in cfg.split(":"))
        local = seq // cp
        row = {"seq": seq, "cp": cp, "heads": heads, "head_dim": d, "local_tokens": local}
        try:
            torch.manual_seed(0)
            q = torch.randn(1, heads, local, d, device=dev, dtype=dt)
            # The all-gather's output: every rank's concatenated, flattened K and V.
            agg = torch.cat([torch.cat([torch.randn(1, heads, local, d, device=dev, dtype=dt).flatten(),
                                        torch.randn(1, heads, local, d, device=dev, dtype=dt).flatten()])
                             for _ in range(cp)])
            fwd, bwd = ring(cp, q, agg)
            for rank in (0, cp - 1):
                out, lse = fwd(rank)
                dout = torch.randn_like(out)
                row["rank%d_forward_ms" % rank] = median_ms(lambda: fwd(rank))
                row["rank%d_backward_ms" % rank] = median_ms(lambda: bwd(rank, out, lse, dout))
                del out, lse, dout
            del q, agg, fwd, bwd
            torch.cuda.empty_cache()
            # One causal flash SDPA of the whole sequence.
            qf, kf, vf = (torch.randn(1, heads, seq, d, device=dev, dtype=dt) for _ in range(3))
            res_f = aten._scaled_dot_product_flash_attention(qf, kf, vf, 0.0, True)
            of, lf = res_f[0], res_f[1]
            dof = torch.randn_like(of)
            row["whole_forward_ms"] = median_ms(lambda: aten._scaled_dot_product_flash_attention(qf, kf, vf, 0.0, True),
                                                reps=3, warm=1)
            row["whole_backward_ms"] = median_ms(lambda: aten._scaled_dot_product_flash_attention_backward(
                dof, qf, kf, vf, of, lf, res_f[2], res_f[3], seq, seq, 0.0, True, res_f[6], res_f[7]), reps=3, warm=1)
            flops = 4.0 * seq * seq / 2 * heads * d  # causal forward
            row["whole_forward_tflops"] = flops / row["whole_forward_ms"] / 1e9
            row["whole_backward_tflops"] = 2.5 * flops / row["whole_backward_ms"] / 1e9
            for rank in (0, cp - 1):
                row["rank%d_forward_over_whole_share" % rank] = row["rank%d_forward_ms" % rank] * cp / row["whole_forward_ms"]
                row["rank%d_backward_over_whole_share" % rank] = row["rank%d_backward_ms" % rank] * cp / row["whole_backward_ms"]
            del qf, kf, vf, of, lf, dof, res_f
            torch.cuda.empty_cache()
        except Exception:  # recorded, not fatal: the other configs still run
            failed(row)
        add_run(res, "cp_attention", row)
    write_json(path, res)



def main_checkpoint_early_stop(path, *configs):
    """What PyTorch's activation checkpointing replays (PlanSpec::recompute_early_stop,
    docs/compute.md): a Llama-style block in plain PyTorch modules, bf16 (RMSNorm, q/k/v/o linears,
    SDPA causal attention, SwiGLU w1/w3/w2), forward + backward on one GPU without checkpointing,
    under torch.utils.checkpoint with use_reentrant=True (the whole forward replayed, as Megatron's
    and DeepSpeed's checkpoints do), with use_reentrant=False (from torch 2.1 the replay stops at the
    last tensor the backward needs: w2's inputs, packed before w2 runs), and with use_reentrant=False
    under set_checkpoint_early_stop(False). Per run: the median of 20 CUDA-event-timed steps after 5
    warm-ups, and the profiler's count and summed time of its matmul kernels (aten::mm, addmm and
    their cuBLAS kernels), with w2's forward GEMM alone for comparison. The model predicts: the early-stop
    step is the whole-replay step less w2's GEMM and the residual, and it launches one GEMM fewer per
    block; compiled whole (torchtitan's apply_ac then apply_compile: compiled_none, compiled_full_ac), the
    checkpointed block too launches one GEMM fewer per block than the whole replay would. configs: TOKENS:HIDDEN:FFN:HEADS:KV_HEADS:LAYERS (default Llama 3 8B's shape, 8,192 tokens,
    4 blocks)."""
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop

    res = header(torch)
    res.update({"format": "meshplan.gpu_checkpoint_early_stop/1", "runs": []})

    Block = llama_block_class(torch)

    default = ("8192:4096:14336:32:8:4",)
    for cfg in configs or default:
        tokens, hidden, ffn, heads, kv, layers = (int(v) for v in cfg.split(":"))
        row = {"tokens": tokens, "hidden": hidden, "ffn": ffn, "heads": heads, "kv_heads": kv, "layers": layers}
        try:
            blocks = [Block(hidden, ffn, heads, kv).cuda().to(torch.bfloat16) for _ in range(layers)]
            x = torch.randn(1, tokens, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)

            # torchtitan's compiled blocks: each checkpoint-wrapped block compiled whole
            # (apply_ac then apply_compile), whose replay is what AOTAutograd's partitioner keeps of
            # the joint graph after dead-code elimination (w2 should not rerun there either).
            compiled = {}
            if hasattr(torch, "compile"):
                compiled["compiled_none"] = [torch.compile(blk, fullgraph=True) for blk in blocks]
                compiled["compiled_full_ac"] = [
                    torch.compile(lambda h, blk=blk: checkpoint(blk, h, use_reentrant=False), fullgraph=True)
                    for blk in blocks]

            def run(mode):
                def step():
                    h = x
                    for i, blk in enumerate(blocks):
                        if mode == "none":
                            h = blk(h)
                        elif mode == "reentrant":
                            h = checkpoint(blk, h, use_reentrant=True)
                        elif mode == "early_stop":
                            h = checkpoint(blk, h, use_reentrant=False)
                        elif mode in compiled:
                            h = compiled[mode][i](h)
                        else:
                            with set_checkpoint_early_stop(False):
                                h = checkpoint(blk, h, use_reentrant=False)
                    h.float().sum().backward()
                return step

            for mode in ("none", "reentrant", "early_stop", "no_early_stop") + tuple(compiled):
                try:
                    fn = run(mode)
                    row[mode] = {"step_ms_median": event_median_ms(torch, fn, 20, 5), **profiled_gemms(torch, fn)}
                except Exception:  # a mode that fails (torch.compile's, say) leaves the others
                    import traceback
                    row[mode] = {"error": traceback.format_exc()[-1000:]}
                print("checkpoint_early_stop mode:", mode, json.dumps(row[mode]), flush=True)
            m = blocks[0].n2(torch.randn(1, tokens, hidden, device="cuda", dtype=torch.bfloat16))
            u = F.silu(blocks[0].w1(m)) * blocks[0].w3(m)
            with torch.no_grad():
                row["w2_forward_ms"] = event_median_ms(torch, lambda: blocks[0].w2(u), 20, 5)
            row["reentrant_minus_early_stop_ms"] = row["reentrant"]["step_ms_median"] - row["early_stop"]["step_ms_median"]
            row["predicted_difference_ms"] = layers * row["w2_forward_ms"]
            del blocks, x, m, u
            torch.cuda.empty_cache()
        except Exception:  # recorded, not fatal: the other configs still run
            failed(row)
        add_run(res, "checkpoint_early_stop", row)
    write_json(path, res)

def main_unfused_attention(path, *configs):
    """Megatron-LM 2021's unfused attention (the `naive` kernel of the megatron-deepspeed-2022 and
    megatron-lm stacks) as its ParallelAttention runs it, fp16, per rank: the fused QKV output
    [s, b, np, 3*hn] split into views, baddbmm of q and k^T into the [b*np, s, s] scores (scaled),
    the causal mask and softmax, bmm with v, forward and backward. The views keep the QKV tensor's
    strides, so each batch of the batched GEMMs starts 3*hn elements after the last: at hn = 108
    (BigScience's 13,824 hidden over 128 heads) 648 bytes, not a multiple of 16, where 104, 112 and
    128 are. docs/validation.md (the BLOOM topology-search rows: hn 108 +40% to +47%, the others at
    their neighbours' level) asks whether cuBLAS runs those GEMMs slower than their FLOPs say. Per
    config: forward and forward + backward ms (median of 20 after 5 warm-ups), the two GEMMs' share
    (profiler), and the same GEMMs on contiguous (aligned) copies. configs: SEQ:BATCH:HEADS:HEADDIM
    (default 2048 tokens, micro batch 4, 16 heads a rank, head dims 104, 108, 112, 128; then head dims 108
    and 112 at micro batches 1 and 8 and at 32 heads a rank, the TP 4 rows' layout)."""
    import torch

    res = header(torch)
    res.update({"format": "meshplan.gpu_unfused_attention/1", "runs": []})
    default = ("2048:4:16:104", "2048:4:16:108", "2048:4:16:112", "2048:4:16:128", "2048:1:16:108",
               "2048:1:16:112", "2048:8:16:108", "2048:8:16:112", "2048:2:32:108", "2048:2:32:112")
    for cfg in configs or default:
        seq, batch, heads, hd = (int(v) for v in cfg.split(":"))
        row = {"seq": seq, "micro_batch": batch, "heads": heads, "head_dim": hd,
               "qkv_batch_stride_bytes": 3 * hd * 2}
        try:
            mixed = torch.randn(seq, batch, heads, 3 * hd, device="cuda", dtype=torch.float16, requires_grad=True)
            mask = torch.ones(seq, seq, device="cuda", dtype=torch.bool).triu(1)
            scale = 1.0 / hd ** 0.5

            def attention(contiguous):
                def forward():
                    q, k, v = torch.split(mixed, hd, dim=-1)
                    q = q.reshape(seq, batch * heads, hd)
                    k = k.reshape(seq, batch * heads, hd)
                    v = v.reshape(seq, batch * heads, hd)
                    if contiguous:
                        q, k, v = (t.transpose(0, 1).contiguous() for t in (q, k, v))
                    else:
                        q, k, v = (t.transpose(0, 1) for t in (q, k, v))
                    scores = torch.bmm(q, k.transpose(1, 2)) * scale
                    probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
                    return torch.bmm(probs, v)
                return forward

            flops = 2 * 2 * batch * heads * seq * seq * hd  # both GEMMs, the whole s x s (as unfused code does)
            for name, contiguous in (("views", False), ("contiguous", True)):
                fwd = attention(contiguous)
                step = lambda: fwd().float().sum().backward()
                row[name] = {"forward_ms": event_median_ms(torch, fwd, 20, 5),
                             "step_ms": event_median_ms(torch, step, 20, 5), **profiled_gemms(torch, step)}
                gemm_ms = row[name]["gemm_ms"]
                row[name]["gemm_tflops"] = 3 * flops / (gemm_ms * 1e9) if gemm_ms else None
            mixed.grad = None
            del mixed, mask
            torch.cuda.empty_cache()
        except Exception:  # recorded, not fatal: the other configs still run
            failed(row)
        add_run(res, "unfused_attention", row)
    write_json(path, res)


def main_gemm_alignment(path, *cases):
    """cuBLAS GEMMs whose dimensions are not multiples of 8 16-bit elements (16 bytes): NVIDIA's
    Matrix Multiplication Background guide (Tensor Core requirements) says such GEMMs run less
    efficiently, not by how much; unfused_attention (2026-12-04, H200) found the head-dim-108
    score and value GEMMs on CUTLASS sm80 "align2" kernels at 146-164 TFLOP/s where head dims 104,
    112 and 128 ran cuBLAS's sm90 kernels at 333-437. Which dimension matters and by how much, per
    remainder mod 8: (1) torch.mm [M,K] x [K,N], fp16 and bf16, 8192 cubed with one of M, N, K
    at 8192 - r (r = 0..8): in PyTorch's row-major call to column-major cuBLAS the leading
    dimensions are K (A) and N (B, C), M none; (2) the unfused attention's batched GEMMs on
    contiguous tensors, batch 64 (micro batch 4 x 16 heads), 2,048 tokens, head dim d = 96..136:
    scores [s,d] x [d,s] (K = d) and values [s,s] x [s,d] (N = d), fp16. Per case: median of 20
    CUDA-event-timed calls after 5 warm-ups, TFLOP/s, and the kernel the profiler saw. cases
    (optional): mm:DTYPE:MxNxK or bmm:BATCH:SEQ:HEADDIM."""
    import torch

    res = header(torch)
    res.update({"format": "meshplan.gpu_gemm_alignment/1", "cases": []})
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}
    if not cases:
        cases = []
        for d in ("fp16", "bf16"):
            for r in range(9):
                cases += [f"mm:{d}:{8192 - r}x8192x8192", f"mm:{d}:8192x{8192 - r}x8192", f"mm:{d}:8192x8192x{8192 - r}"]
        cases += [f"bmm:64:2048:{hd}" for hd in range(96, 137)]
    for case in cases:
        kind, *rest = case.split(":")
        row = {"case": case}
        try:
            if kind == "mm":
                m, n, k = (int(v) for v in rest[1].split("x"))
                a = torch.randn(m, k, device="cuda", dtype=dt[rest[0]])
                b = torch.randn(k, n, device="cuda", dtype=dt[rest[0]])
                gemms = {"mm": (lambda: torch.mm(a, b), 2 * m * n * k)}
            else:
                batch, seq, hd = (int(v) for v in rest)
                q = torch.randn(batch, seq, hd, device="cuda", dtype=torch.float16)
                kt = torch.randn(batch, hd, seq, device="cuda", dtype=torch.float16)
                p = torch.randn(batch, seq, seq, device="cuda", dtype=torch.float16)
                fl = 2 * batch * seq * seq * hd
                gemms = {"scores": (lambda: torch.bmm(q, kt), fl), "values": (lambda: torch.bmm(p, q), fl)}
            for name, (fn, flops) in gemms.items():
                ms = event_median_ms(torch, fn, 20, 5)
                prof = profiled_gemms(torch, fn)
                row[name] = {"ms": ms, "tflops": flops / (ms * 1e9), "kernel": (prof["gemm_kernel_names"] or ["?"])[0][:100]}
        except Exception as ex:  # recorded, not fatal
            row["error"] = f"{type(ex).__name__}: {str(ex).splitlines()[0][:200]}"
        res["cases"].append(row)
        print("gemm_alignment:", json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    write_json(path, res)


def main_layer_profile(path, *configs):
    """Where a training step's time goes, kernel by kernel: four Llama blocks (llama_block_class),
    bf16, forward + backward of 8,192 tokens, eager, after 5 warm-up steps, one step under the
    profiler: the CUDA kernels' summed time by kind (GEMM: GEMM_KERNEL_TAGS; attention: names with
    flash, fmha, attention or sdpa; norm; the rest) and the ten longest kernels, against the step's
    CUDA-event median over 10 (docs/compute.md, the step's mix). configs: SEQ or
    SEQxHIDDENxFFNxHEADSxKV_HEADS, with a trailing r for K and V repeated before SDPA as torchtitan
    does (default Llama 3 8B at 8,192 and 2,048 tokens a sequence, each both ways)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    res = header(torch)
    res.update({"format": "meshplan.gpu_layer_profile/1", "runs": []})
    for cfg in configs or ("8192", "8192r", "2048", "2048r"):
        seq, h, f, heads, kv, batch = block_dims(cfg.rstrip("r"))
        row = {"seq": seq, "batch": batch, "hidden": h, "ffn": f, "heads": heads, "kv_heads": kv,
               "repeat_kv": cfg.endswith("r")}
        try:
            _, blocks, step = four_llama_blocks(torch, cfg.rstrip("r"), repeat_kv=cfg.endswith("r"))
            row["step_ms_median"] = event_median_ms(torch, step, 10, 5)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            kinds, per_name = {}, {}
            for ev in prof.events():
                if ev.device_type.name != "CUDA":
                    continue
                name = ev.name.lower()
                kind = ("gemm" if any(t in name for t in GEMM_KERNEL_TAGS) else
                        "attention" if any(t in name for t in ("flash", "fmha", "attention", "sdpa")) else
                        "norm" if "norm" in name else "other")
                kinds[kind] = kinds.get(kind, 0.0) + ev.device_time / 1e3
                key = ev.name[:100]
                n, t = per_name.get(key, (0, 0.0))
                per_name[key] = (n + 1, t + ev.device_time / 1e3)
            row["kernel_ms_by_kind"] = kinds
            row["kernel_ms_total"] = sum(kinds.values())
            row["longest_kernels"] = [{"name": k, "count": n, "ms": t} for k, (n, t) in
                                      sorted(per_name.items(), key=lambda kv_: -kv_[1][1])[:12]]
            del blocks, step
            torch.cuda.empty_cache()
        except Exception:  # recorded, not fatal
            failed(row)
        res["runs"].append(row)
        print("layer_profile:", json.dumps({k: v for k, v in row.items() if k != "longest_kernels"}), flush=True)
    write_json(path, res)


def main_gemm_calls(path, *cases):
    """The host time one GEMM call costs, as the MoE layer's grouped GEMM pays it once per expert
    (docs/validation.md: the fine-grained MoE runs lack a per-expert cost; Transformer Engine's
    GroupedLinear issues one cuBLASLt GEMM per expert, building its descriptors and querying the
    heuristic on every call, transformer_engine/common/gemm/cublaslt_gemm.cu at v2.9). Per case, CALLS
    GEMMs of ROWS x N x K (rows per expert) issued back to back from Python, timed on the host
    (time.perf_counter around the issue loop, no synchronisation inside it) and on the device (CUDA
    events): where the host time per call exceeds the device's, the loop is host-bound and its host
    time is the call's cost. Each case runs with PyTorch's cuBLAS path and with its cuBLASLt path
    (torch.backends.cuda.preferred_blas_library, whose cuBLASLt GEMM queries the heuristic per call
    as Transformer Engine's does), on one stream and over 4 (Transformer Engine's compute streams);
    fp8 cases run torch._scaled_mm (cuBLASLt always). A 1-element torch.add loop gives the Python
    dispatch floor. Median of 7 trials after 3 warm-ups. cases: ROWS:N:K[:fp8] each."""
    import torch

    res = header(torch)
    res["format"] = "meshplan.gpu_gemm_calls/1"
    dev = torch.device("cuda")
    calls = 256
    res["calls_per_trial"] = calls
    side = [torch.cuda.Stream() for _ in range(4)]

    def timed(issue, trials=7, warm=3):
        for _ in range(warm):
            issue()
        torch.cuda.synchronize()
        host, device = [], []
        for _ in range(trials):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            s.record()
            t0 = time.perf_counter()
            issue()
            t1 = time.perf_counter()
            e.record()
            e.synchronize()
            host.append((t1 - t0) * 1e6 / calls)
            device.append(s.elapsed_time(e) * 1e3 / calls)
        return sorted(host)[len(host) // 2], sorted(device)[len(device) // 2]

    one = torch.ones(1, device=dev)
    res["python_add_us"], _ = timed(lambda: [torch.add(one, one) for _ in range(calls)])
    res["cases"] = []
    for case in cases or ("64:1536:2048", "64:2048:768", "256:1536:2048", "1024:1536:2048", "64:4096:7168",
                          "64:1536:2048:fp8", "256:4096:7168:fp8"):
        parts = case.split(":")
        r, n, k = int(parts[0]), int(parts[1]), int(parts[2])
        fp8 = len(parts) > 3 and parts[3] == "fp8"
        row = {"case": case, "rows": r, "n": n, "k": k, "dtype": "fp8" if fp8 else "bf16"}
        try:
            if fp8:
                a = torch.randn(r, k, device=dev).to(torch.float8_e4m3fn)
                b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major: cuBLASLt's TN
                scale = torch.ones((), device=dev)
                mm = lambda: torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
                libraries = ("cublaslt",)
            else:
                a = torch.randn(r, k, device=dev, dtype=torch.bfloat16)
                b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
                out = torch.empty(r, n, device=dev, dtype=torch.bfloat16)
                mm = lambda: torch.mm(a, b, out=out)
                libraries = ("cublas", "cublaslt")
            for lib in libraries:
                if not fp8:
                    torch.backends.cuda.preferred_blas_library(lib)

                def loop1():
                    for _ in range(calls):
                        mm()

                def loop4():
                    cur = torch.cuda.current_stream()
                    for st in side:
                        st.wait_stream(cur)
                    for i in range(calls):
                        with torch.cuda.stream(side[i % 4]):
                            mm()
                    for st in side:
                        cur.wait_stream(st)

                for name, fn in (("stream1", loop1), ("stream4", loop4)):
                    h, d = timed(fn)
                    row[f"{lib}_{name}_host_us"], row[f"{lib}_{name}_device_us"] = h, d
            torch.backends.cuda.preferred_blas_library("cublas")
        except Exception:  # recorded, not fatal: the other cases still run
            failed(row)
        res["cases"].append(row)
        print("gemm_calls:", json.dumps(row), flush=True)
    write_json(path, res)


if __name__ == "__main__":
    modes = {"context_attention": main_context_attention, "sustained": main_sustained, "memory": main_memory,
             "host_moe": main_host_moe, "expert_gemm": main_expert_gemm,
             "megatron_moe": main_megatron_moe, "megatron_layer": main_megatron_layer,
             "cp_attention": main_cp_attention, "checkpoint_early_stop": main_checkpoint_early_stop,
             "unfused_attention": main_unfused_attention,
             "gemm_alignment": main_gemm_alignment, "layer_profile": main_layer_profile,
             "gemm_calls": main_gemm_calls}
    modes[sys.argv[1]](*sys.argv[2:])
