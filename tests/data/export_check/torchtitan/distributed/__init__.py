# Test double of torchtitan's ParallelDims (torchtitan/distributed/parallel_dims.py at 238fa99,
# _validate, lines 34-58; see ../../README.md).
class ParallelDims:

    def __init__(self, dp_replicate, dp_shard, cp, tp, pp, ep, world_size, etp=1):
        if dp_shard < 0:
            dp_shard = world_size // (dp_replicate * cp * tp * pp)
        assert dp_shard >= 1
        assert dp_replicate * dp_shard * cp * tp * pp == world_size, (
            f"Invalid parallel dims: dp_replicate({dp_replicate}) * dp_shard({dp_shard}) * "
            f"cp({cp}) * tp({tp}) * pp({pp}) != WORLD_SIZE({world_size})"
        )
        self.dp_replicate, self.dp_shard = dp_replicate, dp_shard
