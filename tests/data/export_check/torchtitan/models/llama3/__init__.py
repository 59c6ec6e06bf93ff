# Test double of torchtitan.models.llama3.model_registry at b5bcd76c6 (models/llama3/__init__.py:369-390;
# see ../../../README.md): the flavors and the signature.
from types import SimpleNamespace

_FLAVORS = ("debugmodel", "1B", "3B", "8B", "70B", "405B")


def model_registry(flavor, attn_backend="flex", tp_gemm_backend="default", converters=None):
    if flavor not in _FLAVORS:
        raise KeyError(flavor)
    return SimpleNamespace(name="llama3", flavor=flavor)
