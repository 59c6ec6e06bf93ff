# Test double of torchtitan's Trainer.Config at b5bcd76c6 (torchtitan/trainer.py; see ../README.md).
from dataclasses import dataclass, field

from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig
from torchtitan.distributed.activation_checkpoint import SelectiveAC


class Trainer:

    @dataclass(kw_only=True, slots=True)
    class Config:
        model_spec: object = None
        training: TrainingConfig = field(default_factory=TrainingConfig)
        parallelism: ParallelismConfig = field(default_factory=ParallelismConfig)
        compile: CompileConfig = field(default_factory=CompileConfig)
        activation_checkpoint: object = field(default_factory=SelectiveAC.Config)
        hf_assets_path: str = "./tests/assets/tokenizer"
