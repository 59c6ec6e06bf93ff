#!/usr/bin/env python3
"""Head dim 64 on Blackwell's cuDNN attention curves, from head dim 128 and Hopper's measured ratio.

`blackwell_d64_attention.py [tests/data/gpu/h200-2026-11-28/probes.json]` prints the `flash`
curve's head-dim-64 points of the GB200, B200, GB300 and B300 presets (sequence 2k to 32k).

NVIDIA's training SDPA benchmark (cudnn-frontend `benchmark/sdpa_benchmark_training`, results of
2026-04-24 read at 3929da2, cuDNN 9.22) measured Blackwell's full causal attention at head dim 128
only (its `gpt_oss` config, head dim 64, runs just a 128-token window). The head-dim-64 points are
head dim 128's forward and backward, each times the head-dim-64 / head-dim-128 ratio this
project measured for cuDNN on an H200 (the `attention` rows of the probe file: cuDNN 9.19 through
PyTorch's SDPA, 16k tokens a batch, hidden 2048, causal, forward and backward timed apart), at
the same sequence, joined as meshplan joins them: forward + backward = 3.5 / (1/f + 2.5/b).
32k takes 16k's ratio (the probe stops there).

Why Hopper's ratio bounds Blackwell's from above: a head of 64 does half the tensor-core work of
a head of 128 for every score element, while the softmax's exponentials per score element stay
one; from the H100 to the B200 the tensor cores went from 1 to 2.25 PFLOP/s of BF16 while the
exponential units per SM stayed as they were (Together AI, "FlashAttention-4", 2026-03-05, whose
analysis puts Blackwell's forward on the exponential units at head dim 128 already). So head dim
64 is no closer to its tensor-core speed on Blackwell than on Hopper. It is an assumption, not a
measurement: a Blackwell sweep at head dim 64 replaces it.

Pure Python. The GB200's and GB300's head-dim-128 forward/backward TFLOP/s are the benchmark's
(results/llama3.1/gb200/llama3.1_20260424_100750.csv, results/llama3.1/gb300/
llama3.1_20260424_100757.csv), as the presets' `attention_curve_source` quotes them; the B200
takes the GB200's times 1770.9 / 1822.0 and the B300 the GB300's times 1769.0 / 1822.0 (their
bf16 MAMF over the GB200's, as their head-dim-128 points do).
"""
import json
import sys

# Head dim 128, causal, forward / backward TFLOP/s at 2k, 4k, 8k, 16k, 32k (cuDNN 9.22).
BLACKWELL_D128 = {
    "gb200": [(1097, 885), (1408, 1148), (1574, 1332), (1708, 1328), (1622, 1226)],
    "gb300": [(1373, 967), (1703, 1248), (1856, 1435), (1915, 1507), (1953, 1490)],
}
SEQS = [2048, 4096, 8192, 16384, 32768]
SCALED = {"b200": ("gb200", 1770.9 / 1822.0), "b300": ("gb300", 1769.0 / 1822.0)}


def joined(f, b):
    return 3.5 / (1.0 / f + 2.5 / b)


def hopper_ratios(path):
    """{seq: (forward ratio, backward ratio)} of cuDNN head dim 64 over 128 on the H200."""
    rows = json.load(open(path))["attention"]
    by = {(r["head_dim"], r["seq"]): r for r in rows if r["backend"] == "CUDNN_ATTENTION"}
    out = {}
    for s in SEQS:
        m = min(s, 16384)
        d64, d128 = by[(64, m)], by[(128, m)]
        out[s] = (d64["fwd_tflops"] / d128["fwd_tflops"], d64["bwd_tflops"] / d128["bwd_tflops"])
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/gpu/h200-2026-11-28/probes.json"
    r = hopper_ratios(path)
    for s in SEQS:
        print(f"# H200 cuDNN head dim 64 / 128 at {s}: forward {r[s][0]:.4f}, backward {r[s][1]:.4f}")
    curves = {}
    for gpu, points in BLACKWELL_D128.items():
        curves[gpu] = [joined(f * r[s][0], b * r[s][1]) for s, (f, b) in zip(SEQS, points)]
        d128 = [joined(f, b) for f, b in points]
        print(f"# {gpu} head dim 128 joined: " + ", ".join(f"{x:.1f}" for x in d128))
    for gpu, (src, k) in SCALED.items():
        curves[gpu] = [x * k for x in curves[src]]
    for gpu in ["gb200", "b200", "gb300", "b300"]:
        pts = ", ".join(f'{{"head_dim": 64, "seq": {s}, "tflops": {x:.1f}}}' for s, x in zip(SEQS, curves[gpu]))
        print(f"{gpu}: {pts}")


if __name__ == "__main__":
    main()
