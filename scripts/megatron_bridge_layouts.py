#!/usr/bin/env python3
"""Pipeline layouts of the Megatron-Bridge DeepSeek-V3 and Kimi K2 performance runs.

For each DeepSeek-V3 or Kimi K2 run in presets/launches/megatron-bridge-performance.json, reads the recipe it
names, at the commit it names, in a Megatron-Bridge git directory, and records the run's
--pipeline-model-parallel-layout: the variant's `pp_layout` (scripts/performance/configs/deepseek/
deepseek_workload_base_configs.py, followed through its `replace(...)` chain and aliases) or the
layout string the flat perf recipe passes (perf_recipes/deepseek/<gpu>/deepseek_v3.py); where
neither is set, the recipe library's default for the run's PP x VP
(`_get_deepseek_v3_pipeline_layout` in src/megatron/bridge/recipes/deepseek/, at the same commit;
for Kimi K2 `_get_kimi_k2_pipeline_layout`'s `map_pp_vp_to_layout` in src/megatron/bridge/recipes/kimi/,
the table kimi_llm_pretrain.py reads when the variant sets no `pp_layout`; Kimi K2 has no MTP module).
Writes, per run: `pp_layout` (the layout as Megatron-Core takes it, one string), `stage_layers`
(decoder layers per model chunk, in chunk order) and `mtp_layers` (MTP modules, on the last
chunk). Runs whose layout cannot be read are left as they are and listed on stderr. Also
`optimizer_states_dtype`: "bf16" where the DeepSeek-V3 library recipe at the run's commit turns on
the precision-aware optimizer with bf16 Adam moments (`use_precision_aware_optimizer = True`,
`exp_avg_dtype` and `exp_avg_sq_dtype = torch.bfloat16`) and the run does not use Megatron-FSDP
(scripts/performance/utils/overrides.py turns it off there).

    scripts/megatron_bridge_layouts.py --repo <Megatron-Bridge git dir> \\
        --launch presets/launches/megatron-bridge-performance.json
"""
import argparse
import ast
import json
import re
import subprocess
import sys


def show(repo, commit, path):
    r = subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def variant_fields(text, name):
    """The keyword arguments of variant `name`, following `X = replace(BASE, ...)` and `X = Y`."""
    tree = ast.parse(text)
    assigns = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigns[node.targets[0].id] = node.value
    fields, seen = {}, set()
    while name in assigns and name not in seen:
        seen.add(name)
        v = assigns[name]
        if isinstance(v, ast.Name):
            name = v.id
            continue
        if isinstance(v, ast.Call):
            for kw in v.keywords:
                if kw.arg not in fields:
                    try:
                        fields[kw.arg] = ast.literal_eval(kw.value)
                    except ValueError:
                        fields[kw.arg] = None
            if getattr(v.func, "id", "") == "replace" and v.args and isinstance(v.args[0], ast.Name):
                name = v.args[0].id
                continue
        break
    return fields


def default_layout(repo, commit, pp, vp, mtp, model="deepseek"):
    """The recipe library's layout for pp x vp (a list of chunks), or None. DeepSeek-V3: the
    `layout_map` dict literal of set_deepseek_v3_pipeline_model_parallel_layout (or, later,
    _get_deepseek_v3_pipeline_layout), evaluated with its `last_layer` (MTP modules, then loss).
    Kimi K2: the `map_pp_vp_to_layout` dict literal of _get_kimi_k2_pipeline_layout."""
    if model == "kimi":
        paths, key = ("src/megatron/bridge/recipes/kimi/kimi_k2.py",
                      "src/megatron/bridge/recipes/kimi/h100/kimi_k2.py"), "map_pp_vp_to_layout = {"
    else:
        paths, key = ("src/megatron/bridge/recipes/deepseek/deepseek_v3.py",
                      "src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py"), "layout_map = {"
    for path in paths:
        text = show(repo, commit, path)
        if not text or key not in text:
            continue
        at = text.index(key) + len(key) - 1
        depth, end = 0, at
        for end in range(at, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        table = eval(text[at:end + 1], {"__builtins__": {}}, {"last_layer": ["mtp"] * mtp + ["loss"]})
        return table.get((pp, vp))
    return None


def bf16_moments(repo, commit):
    """True when the DeepSeek-V3 library recipe at `commit` keeps Adam's moments in bf16."""
    names = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", commit,
                            "src/megatron/bridge/recipes/deepseek/"], capture_output=True, text=True).stdout
    for path in names.split():
        if not path.endswith("deepseek_v3.py"):
            continue
        text = show(repo, commit, path) or ""
        if ("use_precision_aware_optimizer = True" in text
                and re.search(r"exp_avg_dtype = torch\.bfloat16", text)
                and re.search(r"exp_avg_sq_dtype = torch\.bfloat16", text)):
            return True
    return False


def expand(layout):
    """Megatron-Core's layout string (or list of chunks) as a list of chunks of symbols."""
    if isinstance(layout, list):
        sym = {"embedding": "E", "decoder": "t", "mtp": "m", "loss": "L"}
        return ["".join(sym[x] for x in chunk) for chunk in layout]
    out, i = [], 0

    def seq():
        nonlocal i
        s = ""
        while i < len(layout) and layout[i] != ")":
            if layout[i] == "(":
                i += 1
                unit = seq()
                i += 1
            else:
                unit = layout[i]
                i += 1
            n = 1
            m = re.match(r"\*(\d+)", layout[i:])
            if m:
                n = int(m.group(1))
                i += len(m.group(0))
            s += unit * n
        return s

    return seq().split("|")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--launch", required=True)
    args = ap.parse_args()
    with open(args.launch) as f:
        launch = json.load(f)
    done = 0
    for rid, run in launch["runs"].items():
        model = "kimi" if "kimi-k2" in rid else "deepseek" if "deepseekv3" in rid else None
        if model is None:
            continue
        recipe = run.get("recipe", "")
        m = re.match(r"(\S+) (\S+?)(?:\(\))? @\S+ \((?:main )?([0-9a-f]{7,40})", recipe)
        if not m:
            print(f"{rid}: recipe not read: {recipe}", file=sys.stderr)
            continue
        path, name, commit = m.groups()
        text = show(args.repo, commit, path)
        if text is None:
            print(f"{rid}: {path} not at {commit}", file=sys.stderr)
            continue
        # DeepSeek-V3's provider: mtp_num_layers 1; Kimi K2's: None.
        mtp = 0 if "w-o-mtp" in rid or model == "kimi" else 1
        layout, pp, vp = None, None, None
        if path.endswith("_workload_base_configs.py") or path.endswith("workload_base_configs.py"):
            fields = variant_fields(text, name)
            layout = fields.get("pp_layout")
            pp = fields.get("pipeline_model_parallel_size")
            vp = fields.get("virtual_pipeline_model_parallel_size")
        else:
            body = re.search(rf"def {name}\(.*?\n(?=def |\Z)", text, re.S)
            body = body.group(0) if body else ""
            lm = re.search(r'set_deepseek_v3_pipeline_model_parallel_layout\(cfg\.model, "([^"]+)"\)', body)
            layout = lm.group(1) if lm else None
            pm = re.search(r"pipeline_model_parallel_size = (\d+)", body)
            vm = re.search(r"virtual_pipeline_model_parallel_size = (\d+|None)", body)
            pp = int(pm.group(1)) if pm else None
            vp = int(vm.group(1)) if vm and vm.group(1) != "None" else None
        if layout is None and pp:
            layout = default_layout(args.repo, commit, pp, vp or 1, mtp, model)
        if not layout:
            print(f"{rid}: no layout (pp {pp}, vp {vp})", file=sys.stderr)
            continue
        if model == "deepseek" and bf16_moments(args.repo, commit) and not run.get("megatron_fsdp"):
            run["optimizer_states_dtype"] = "bf16"
        chunks = expand(layout)
        text_layout = layout if isinstance(layout, str) else "|".join(chunks)
        run["pp_layout"] = text_layout
        run["stage_layers"] = [c.count("t") for c in chunks]
        run["mtp_layers"] = sum(c.count("m") for c in chunks)
        done += 1
    with open(args.launch, "w") as f:
        json.dump(launch, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"{done} runs given their pipeline layout", file=sys.stderr)


if __name__ == "__main__":
    main()
