#!/usr/bin/env python3
"""Mutation sweep: N mutated preset files through `meshplan report` (the hardening check of docs/reliability.md).

Each case takes a built-in model, GPU, cluster, failure-rate or software-stack preset (presets/), applies one to
three mutations (a number scaled by 10^k or negated, set to 0, NaN-like text, a huge integer, a
string or a list in place of a number, a key deleted, renamed or duplicated, a truncated file),
writes it to a temporary file and runs `meshplan report` on a fixed plan with it. A case passes
when the command finishes within the time limit and either succeeds (exit 0, or 1 for a plan that
does not fit: the mutation left a valid file) or refuses it with exit 2 and an error message that
names a field. A crash (a signal, another exit code), a hang or a silent refusal fails the sweep.

  scripts/mutation_sweep.py --meshplan build/release/meshplan --cases 1000 --seed 1
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Which flag takes each kind of preset, and the rest of the command line (a plan every preset fits
# the shape of: 8 GPUs, TP 1, DP 8).
KINDS = {
    "models": ("--model", ["--gpu", "h100-sxm"]),
    "gpus": ("--gpu", ["--model", "llama3-8b"]),
    "clusters": ("--cluster", ["--model", "llama3-8b"]),
    "failures": ("--failures", ["--model", "llama3-8b", "--gpu", "h100-sxm"]),
    "stacks": ("--stack", ["--model", "gpt-oss-20b", "--gpu", "h100-sxm", "--ep", "8", "--seq", "4096"]),
}
FIELD = re.compile(r"(model|gpu|cluster|failures|plan|stack)(\.[A-Za-z0-9_\-\[\]]+)*: \S|--[a-z-]+: \S")


def leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, path + (i,))
    yield path


def get_parent(obj, path):
    for p in path[:-1]:
        obj = obj[p]
    return obj


def mutate_value(v, rng):
    choice = rng.randrange(10)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return rng.choice([0, -1, 1e308, "", "x" * 50, None, [], {}, True, 12345678901234567890])
    if choice == 0: return v * 10 ** rng.choice([3, 6, 9, 12, 300])
    if choice == 1: return v * 10 ** -rng.choice([3, 6, 9, 12])
    if choice == 2: return -v
    if choice == 3: return 0
    if choice == 4: return "NaN"
    if choice == 5: return 2 ** 63 + rng.randrange(1000)
    if choice == 6: return str(v)
    if choice == 7: return [v]
    if choice == 8: return 1e308
    return rng.choice([1, 2, 3, 7, 1000000])


def mutate(doc, rng):
    paths = [p for p in leaves(doc) if p]
    if not paths:
        return doc
    path = rng.choice(paths)
    parent = get_parent(doc, path)
    key = path[-1]
    op = rng.randrange(10)
    if op <= 6:
        parent[key] = mutate_value(parent[key], rng)
    elif op == 7 and isinstance(parent, dict):
        del parent[key]
    elif op == 8 and isinstance(parent, dict):
        parent[str(key) + "_typo"] = parent.pop(key)
    else:
        parent[key] = mutate_value(0, rng)
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshplan", default=os.path.join(ROOT, "build/release/meshplan"))
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds a case may take")
    ap.add_argument("--keep", help="directory to keep the failing inputs in")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    files = []
    for kind in KINDS:
        d = os.path.join(ROOT, "presets", kind)
        files += [(kind, os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".json")]
    counts = {}
    failures = []
    slowest = (0.0, "")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            kind, src = rng.choice(files)
            text = open(src).read()
            if rng.random() < 0.05:
                mutated = text[: rng.randrange(len(text))]  # truncated
            else:
                doc = json.loads(text)
                for _ in range(rng.randint(1, 3)):
                    doc = mutate(doc, rng)
                mutated = json.dumps(doc, allow_nan=True)
            path = os.path.join(tmp, f"case{i}.json")
            with open(path, "w") as f:
                f.write(mutated)
            flag, rest = KINDS[kind]
            cmd = [args.meshplan, "report", flag, path, "--gpus", "8"] + rest
            t0 = time.monotonic()
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = "hang", ""
            dt = time.monotonic() - t0
            slowest = max(slowest, (dt, f"case {i} ({os.path.basename(src)})"))
            ok = rc in (0, 1) or (rc == 2 and FIELD.search(err) is not None)
            counts[rc] = counts.get(rc, 0) + 1
            if not ok:
                failures.append((i, os.path.basename(src), rc, err.strip()[:300]))
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    with open(os.path.join(args.keep, f"case{i}_{kind}.json"), "w") as f:
                        f.write(mutated)
    print(f"mutation sweep: {args.cases} cases (seed {args.seed}) through `meshplan report`")
    for rc in sorted(counts, key=str):
        what = {0: "accepted (valid after mutation)", 1: "accepted, does not fit",
                2: "refused with a message naming the field"}.get(rc, "FAILED")
        print(f"  exit {rc}: {counts[rc]:5d}  {what}")
    print(f"  slowest case {slowest[0]:.2f} s: {slowest[1]}")
    for f in failures[:20]:
        print("  FAIL case %d (%s): exit %s: %s" % f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
