# Test double of torchtitan's torchtitan/config at 238fa99 (see ../../README.md): the TOML is
# read; an unknown section is an error (manager.py _dict_to_dataclass).
import tomllib
from types import SimpleNamespace

_SECTIONS = {"job", "model", "training", "parallelism", "activation_checkpoint", "compile", "optimizer",
             "lr_scheduler", "checkpoint", "metrics", "quantize"}


class ConfigManager:

    def parse_args(self, args):
        path = args[args.index("--job.config_file") + 1]
        with open(path, "rb") as f:
            data = tomllib.load(f)
        unknown = sorted(set(data) - _SECTIONS)
        if unknown:
            raise ValueError(f"unknown sections in {path}: {unknown}")
        p = data.get("parallelism", {})
        parallelism = SimpleNamespace(
            data_parallel_shard_degree=p.get("data_parallel_shard_degree", -1),
            data_parallel_replicate_degree=p.get("data_parallel_replicate_degree", 1),
            context_parallel_degree=p.get("context_parallel_degree", 1),
            tensor_parallel_degree=p.get("tensor_parallel_degree", 1),
            pipeline_parallel_degree=p.get("pipeline_parallel_degree", 1),
            expert_parallel_degree=p.get("expert_parallel_degree", 1),
            expert_tensor_parallel_degree=p.get("expert_tensor_parallel_degree", 1))
        m = data.get("model", {})
        return SimpleNamespace(parallelism=parallelism,
                               model=SimpleNamespace(name=m.get("name", "llama3"), flavor=m.get("flavor", "debugmodel")))
