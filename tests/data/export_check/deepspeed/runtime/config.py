# Test double of DeepSpeed's deepspeed/runtime/config.py at 38327e07f (see ../../README.md).
import json

import deepspeed


class DeepSpeedConfig(object):

    def __init__(self, config, mpu=None, mesh_device=None):
        self._param_dict = json.load(open(config))
        # 722-733: the data-parallel size from the mpu once a process group exists, else 1.
        started = getattr(deepspeed, "initialized", False)
        self.world_size = mpu.get_data_parallel_world_size() if (started and mpu is not None) else 1
        d = self._param_dict
        micro = d.get("train_micro_batch_size_per_gpu")
        grad_acc = d.get("gradient_accumulation_steps")
        # 960-964: the missing one of the three is derived from the other two.
        self.train_batch_size = d.get("train_batch_size", micro * grad_acc * self.world_size)
        # 919-934
        assert self.train_batch_size == micro * grad_acc * self.world_size, (
            f"Check batch related parameters. train_batch_size is not equal "
            "to micro_batch_per_gpu * gradient_acc_step * world_size "
            f"{self.train_batch_size} != {micro} * {grad_acc} * {self.world_size}")
