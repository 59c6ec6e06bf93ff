# Test double of torchtitan.models.llama3.config_registry.llama3_8b at b5bcd76c6 (:194; see
# ../../../README.md): its training tokens and selective checkpointing, nothing else.
from torchtitan.config import TrainingConfig
from torchtitan.distributed.activation_checkpoint import SelectiveAC
from torchtitan.trainer import Trainer

from . import model_registry


def llama3_8b():
    return Trainer.Config(
        model_spec=model_registry("8B"),
        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=1 * 8192, max_context_length=8192, steps=1000),
        activation_checkpoint=SelectiveAC.Config(),
    )
