#!/usr/bin/env python3
"""Host time of DeepSpeed 0.3's per-rank Python loops (docs/validation.md, Narayanan Table 2).

DeepSpeed v0.3.13's stage 3 runs a Python loop over the data-parallel world for every parameter
tensor it gathers or reduces, while the GPU waits behind torch.cuda.synchronize():
- partition_parameters.py `_allgather_param`: per rank, `flat_tensor.narrow(...)` appended to the
  output list and `i == torch.distributed.get_rank(group=...)`;
- partition_parameters.py `_reduce_scatter_gradient`: per rank, `param.grad.view(-1).narrow(...)`
  appended to the input list (after two bounds checks).
This times the same statements on CPU tensors (a view costs the same host time on any device) with
a one-rank gloo group for get_rank, `iterations` ranks per call. It needs PyTorch (Debian's
python3-torch):

    /usr/bin/python3 scripts/host_loop_probe.py tests/data/host/deepspeed03_loops.json
"""
import datetime
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.distributed as dist


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else None
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=0, world_size=1)
    group = dist.new_group([0])
    flat = torch.zeros(1 << 20, dtype=torch.float16)
    grad = torch.zeros(1 << 20, dtype=torch.float16)
    partition = 16

    def allgather_param_loop(world: int) -> list:
        partitions = []
        for i in range(world):
            partitions.append(flat.narrow(0, partition * (i % 1000), partition))
            if i == dist.get_rank(group=group):
                pass  # the rank's own shard is copied in here (a device copy, costed on the GPU)
        return partitions

    def reduce_scatter_gradient_loop(world: int) -> list:
        inputs = []
        for i in range(world):
            start = (i % 1000) * partition
            end = start + partition
            if start < grad.numel() and end <= grad.numel():
                inputs.append(grad.view(-1).narrow(0, start, partition))
        return inputs

    world, calls = 1536, 200
    results = {}
    for name, loop in (("allgather_param", allgather_param_loop),
                       ("reduce_scatter_gradient", reduce_scatter_gradient_loop)):
        for _ in range(20):
            loop(world)
        per_iteration = []
        for _ in range(calls):
            t = time.perf_counter()
            loop(world)
            per_iteration.append((time.perf_counter() - t) / world)
        results[name] = {
            "iterations_per_call": world,
            "calls": calls,
            "median_us_per_iteration": round(statistics.median(per_iteration) * 1e6, 3),
            "min_us_per_iteration": round(min(per_iteration) * 1e6, 3),
        }
    record = {
        "command": "/usr/bin/python3 scripts/host_loop_probe.py " + (out or ""),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                 "torch": torch.__version__},
        "what": "host time per rank of DeepSpeed v0.3.13's per-tensor Python loops "
                "(partition_parameters.py _allgather_param and _reduce_scatter_gradient), on CPU tensors",
        "results": results,
    }
    text = json.dumps(record, indent=1) + "\n"
    if out:
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
