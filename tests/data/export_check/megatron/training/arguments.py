# Test double of Megatron-LM's megatron/training/arguments.py (see ../../README.md): the entry
# points meshplan's checker calls and three rules of d98e8a64, nothing else.
import argparse
import os


def get_device_arch_version():
    # Megatron asks the GPU (megatron/training/utils/common_utils.py:527); there is none here, so
    # the checker must answer for it.
    raise RuntimeError("no GPU: get_device_arch_version was not replaced")


def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    p = argparse.ArgumentParser(prog="pretrain_gpt.py")
    for flag in ("--num-layers", "--hidden-size", "--num-attention-heads", "--ffn-hidden-size",
                 "--num-query-groups", "--seq-length", "--max-position-embeddings", "--make-vocab-size-divisible-by",
                 "--micro-batch-size", "--global-batch-size"):
        p.add_argument(flag, type=int)
    for flag in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"):
        p.add_argument(flag, type=int)
    for flag, default in (("--tensor-model-parallel-size", 1), ("--pipeline-model-parallel-size", 1),
                          ("--context-parallel-size", 1)):
        p.add_argument(flag, type=int, default=default)
    for flag in ("--normalization", "--position-embedding-type", "--optimizer", "--recompute-granularity"):
        p.add_argument(flag)
    for flag in ("--group-query-attention", "--swiglu", "--disable-bias-linear",
                 "--untie-embeddings-and-output-weights", "--sequence-parallel",
                 "--use-distributed-optimizer", "--use-megatron-fsdp", "--overlap-grad-reduce",
                 "--overlap-param-gather", "--bf16"):
        p.add_argument(flag, action="store_true")
    args = p.parse_args()
    # arguments.py:145
    args.world_size = int(os.getenv("WORLD_SIZE", "1"))
    args.rank = int(os.getenv("RANK", "0"))
    return args


def validate_args(args, defaults={}):
    # arguments.py:432
    total = args.tensor_model_parallel_size * args.pipeline_model_parallel_size * args.context_parallel_size
    assert args.world_size % total == 0, (
        f"world size ({args.world_size}) is not divisible by total_model_size ({total=})")
    # arguments.py:1024-1029
    if args.overlap_param_gather:
        assert args.use_distributed_optimizer or args.use_megatron_fsdp, \
            '--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or dist_muon'
        assert args.overlap_grad_reduce, 'Must use --overlap-param-gather with --overlap-grad-reduce'
    # arguments.py:1453-1479 (Megatron-FSDP warns instead)
    if (args.tensor_model_parallel_size > 1 or args.context_parallel_size > 1) \
            and get_device_arch_version() < 10 and not args.use_megatron_fsdp:
        assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') == "1", \
            "Using tensor model parallelism or context parallelism require setting the environment variable " \
            "CUDA_DEVICE_MAX_CONNECTIONS to 1"
