# Test double of torchtitan/distributed/activation_checkpoint.py at b5bcd76c6 (see ../../README.md).
from dataclasses import dataclass


class FullAC:

    @dataclass(kw_only=True, slots=True)
    class Config:
        preserve_rng_state: bool = True


class SelectiveAC:

    @dataclass(kw_only=True, slots=True)
    class Config:
        preserve_rng_state: bool = True
