#!/usr/bin/env python3
"""A GEMM tile's fixed work, K0, from XLA's published per-shape matmul table.

`xla_gemm_k0.py [tests/data/gpu/xla-matmul-table/matmul_m4096.json]` fits, per compute capability,
the kernel time of each dot lhs[b,m,k] x rhs[b,k,n] in the file as

    t = 2*b*m*n*(k + K0) / R + t0

by least squares on the relative error (R the long-k rate, K0 the elements of the reduction a
tile's prologue and epilogue cost, t0 the kernel's own fixed time: launch to first tile, last
wave's drain; XLA's shapes are 20-700 us kernels, where t0 shows, unlike the 1 TFLOP shapes of
this project's own H200 sweep). The fit is repeated over nine selections (output tiles of 128 x 256
at least 0, 250 or 512; k at least 256, 512 or 1024) and the median K0 over them is what a preset
takes; the spread over them is printed as the K0's uncertainty. sm_90's K0 from the same table is
the check against this project's own H200 sweep (tests/data/gpu/h200-2026-11-28/gemm_shapes.json:
K0 = 150 in bf16). Only the bf16 column is fitted: the table's sm_90 fp8 column exceeds the H100's
dense FP8 peak, so its fp8 times are not kernel times to fit (see the data file's caveat).

Pure Python (no numpy): the 3 x 3 normal equations solved by Gaussian elimination.
"""
import json
import statistics
import sys


def solve3(a, y):
    """Solves the 3 x 3 system a x = y (partial pivoting)."""
    m = [row[:] + [v] for row, v in zip(a, y)]
    for c in range(3):
        p = max(range(c, 3), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(3):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * z for x, z in zip(m[r], m[c])]
    return [m[i][3] / m[i][i] for i in range(3)]


def fit(rows):
    """Least squares of t = F/R + (F/k)(K0/R) + t0 weighted by 1/t; returns R, K0, t0, rms."""
    ata = [[0.0] * 3 for _ in range(3)]
    aty = [0.0] * 3
    samples = []
    for r in rows:
        f = 2.0 * r["b"] * r["m"] * r["n"] * r["k"]
        t = f / (r["bf16_tflops"] * 1e12)
        a = [f / t, f / r["k"] / t, 1.0 / t]  # the row scaled by 1/t: relative error
        for i in range(3):
            aty[i] += a[i] * 1.0
            for j in range(3):
                ata[i][j] += a[i] * a[j]
        samples.append((f, r["k"], t))
    x = solve3(ata, aty)
    rate, k0, t0 = 1.0 / x[0], x[1] / x[0], x[2]
    rel = [((f / rate) * (k + k0) / k + t0 - t) / t for f, k, t in samples]
    return rate, k0, t0, (sum(e * e for e in rel) / len(rel)) ** 0.5


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/gpu/xla-matmul-table/matmul_m4096.json"
    with open(path) as f:
        doc = json.load(f)
    for gpu in sorted({r["gpu"] for r in doc["rows"]}, reverse=True):
        k0s = []
        for tiles_min in (0, 250, 512):
            for k_min in (256, 512, 1024):
                sel = [r for r in doc["rows"] if r["gpu"] == gpu and r["k"] >= k_min and
                       r["b"] * (r["m"] // 128) * (r["n"] // 256) >= tiles_min]
                rate, k0, t0, rms = fit(sel)
                k0s.append(k0)
                print(f"{gpu} bf16 tiles >= {tiles_min:3d}, k >= {k_min:4d}: {len(sel):2d} shapes, "
                      f"R {rate / 1e12:6.1f} TFLOP/s, K0 {k0:5.1f}, t0 {t0 * 1e6:4.2f} us, rms {100 * rms:3.1f}%")
        print(f"{gpu} bf16 K0: median {statistics.median(k0s):.1f} over the nine selections "
              f"(range {min(k0s):.1f} to {max(k0s):.1f})")


if __name__ == "__main__":
    main()
