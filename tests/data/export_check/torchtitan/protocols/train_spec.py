# Test double of torchtitan's train spec registry (torchtitan/protocols/train_spec.py at 238fa99;
# see ../../README.md): llama3's flavors only.
from types import SimpleNamespace


def get_train_spec(name):
    if name != "llama3":
        raise ValueError(f"Model {name} is not registered.")
    return SimpleNamespace(model_args={"debugmodel": {}, "8B": {}, "70B": {}, "405B": {}})
