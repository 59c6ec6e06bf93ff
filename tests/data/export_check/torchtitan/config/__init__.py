# Test double of torchtitan's torchtitan/config (see ../../README.md), for both exporters:
# - 238fa99 (TOML): ConfigManager.parse_args(["--job.config_file", path]) reads the TOML; an
#   unknown section is an error (manager.py _dict_to_dataclass).
# - b5bcd76c6 (Python): ConfigManager.parse_args(["--module", m, "--config", f]) imports m and calls f
#   (manager.py:54-159), then the checks that run on the built configuration: CompileConfig's
#   (configs.py:306-313) and Trainer.Config's CUDA-graph rule (trainer.py:168-199). The config
#   classes are slotted dataclasses with the field names of configs.py, so a misspelt field
#   raises AttributeError as the real ones do (configs.py:35,120,293: slots=True).
import importlib
import tomllib
from dataclasses import dataclass, field
from types import SimpleNamespace

_SECTIONS = {"job", "model", "training", "parallelism", "activation_checkpoint", "compile", "optimizer",
             "lr_scheduler", "checkpoint", "metrics", "quantize"}


@dataclass(kw_only=True, slots=True)
class TrainingConfig:
    num_tokens_per_microbatch_per_dp_rank: int = 16384
    num_tokens_per_train_step: int = -1
    max_context_length: int = 2048
    steps: int = 10000
    dtype: str = "float32"
    mixed_precision_param: str = "bfloat16"
    mixed_precision_reduce: str = "float32"
    enable_cpu_offload: bool = False
    disable_cuda_graphs: bool = False


@dataclass(kw_only=True, slots=True)
class ParallelismConfig:
    data_parallel_replicate_degree: int = 1
    data_parallel_shard_degree: int = -1
    fsdp_reshard_after_forward: str = "default"
    enable_fsdp_symm_mem: bool = False
    tensor_parallel_degree: int = 1
    enable_sequence_parallel: bool = True
    spmd_backend: str = "spmd_types"
    pipeline_parallel_degree: int = 1
    module_fqns_per_model_part: list | None = None
    pipeline_parallel_first_stage_less_layers: int = 1
    pipeline_parallel_last_stage_less_layers: int = 1
    pipeline_parallel_layers_per_stage: int | None = None
    pipeline_parallel_schedule: str = "1F1B"
    pipeline_parallel_schedule_csv: str | None = ""
    num_pp_microbatches: int = 1
    context_parallel_degree: int = 1
    context_parallel_load_balancer: str | None = "headtail"
    context_parallel_ptrr_mask_key: str | None = None
    expert_parallel_degree: int = 1


@dataclass(kw_only=True, slots=True)
class CompileConfig:
    enable: bool = False
    enable_async_tensor_parallel: bool = False
    components: list = field(default_factory=lambda: ["model", "loss"])
    backend: str = "inductor"


def _check_built(c):
    # configs.py:306-313
    if c.compile.enable_async_tensor_parallel and not (c.compile.enable and "model" in c.compile.components):
        raise ValueError("Async TP requires compile.enable and 'model' in compile.components")
    # trainer.py:172-176
    if c.parallelism.pipeline_parallel_degree > 1 and not c.training.disable_cuda_graphs:
        raise ValueError("CUDA graphs are not supported with pipeline parallelism: set training.disable_cuda_graphs")


class ConfigManager:

    def parse_args(self, args):
        if "--module" in args:
            module = importlib.import_module(args[args.index("--module") + 1])
            c = getattr(module, args[args.index("--config") + 1])()
            _check_built(c)
            return c
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
