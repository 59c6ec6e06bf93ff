#!/usr/bin/env python3
"""Throughput records from MLPerf Training submissions (github.com/mlcommons/training_results_vX.Y).

An MLPerf Training result is a time to train, but its log (results/<system>/<benchmark>/result_N.txt,
the MLLOG lines) also times the training between evaluations: each `block_start` / `block_stop`
pair brackets `epoch_count` training tokens (the GPT-3 benchmark's custom_callbacks.py:
`tokens_per_block = val_check_interval * global_batch_size * encoder_seq_length`), and the Llama 3.1
logs of v5.0 on print every step's `train_step_time` (`tracked_stats`). This script turns them into
tokens/s per GPU:

  - GPT-3 175B (v3.1-v4.1): per block, epoch_count / (block_stop - block_start); the first block of
    each run is left out (it holds the warm-up steps); the median over the remaining blocks of all
    of a system's result files.
  - Llama 3.1 (v5.0 on): the median printed `train_step_time` over all steps of all result files
    (the first 3 steps of each file left out), tokens per step = global_batch_size x
    max_sequence_length as the log prints them.

  - Llama 3.1 8B on AMD Instinct (v5.1: AMD's own implementation, NeMo 2 on ROCm's Megatron-LM fork and
    Transformer Engine, which AMD's partners ran too): its log prints no step time but brackets the
    training between evaluations (`block_start` / `block_stop` with `samples_count`, the sequences
    trained so far); per block (samples_count at stop - at start) x max_sequence_length / the block's
    time, the first block of each run left out; the median over the blocks of all result files.

The layout (TP, PP, VP, CP, micro batch, the per-GPU batch MINIBS) is read from the config_*.sh the
submission's implementation directory holds for that system (AMD's: TP, PP, CP, GBS, MBS; the micro
batch the log's gradient_accumulation_steps gives wins where the two differ) (its `export` lines, `source`d common
files followed in order, `if` blocks skipped), and checked against the global batch the log
prints. Writes the records (the format of shared/validation/published.json) and a launch file
(presets/launches/) with what the configs set that the records do not print.

    scripts/mlperf_corpus.py --mirror v3.1=<git dir> --mirror v4.0=<git dir> ... \\
        --out tests/data/validation/mlperf_training.json --launch presets/launches/mlperf-training.json

A version without --mirror keeps the records (and launch entries) the --out and --launch files
already hold for it, so one release's submissions can be added without fetching every release.
"""
import argparse
import json
import re
import statistics
import subprocess
import sys


def git(repo, *args):
    r = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {repo}: {r.stderr.strip()}")
    return r.stdout


def show(repo, path):
    return git(repo, "show", f"HEAD:{path}")


def shell_condition(cond, env):
    """True/False for a test on one variable (`[[ "${VAR:-x}" == "v" ]]`, `[ ${VAR} -gt 1 ]`), None otherwise."""
    m = re.match(r'^\[\[?\s*"?\$\{?(\w+)(?::-([^}]*))?\}?"?\s*(==|!=|=|-eq|-ne|-gt|-lt|-ge|-le)\s*"?([^"\]\s]*)"?\s*\]\]?$',
                 cond.strip())
    if not m:
        return None
    value = env.get(m.group(1), m.group(2) if m.group(2) is not None else "")
    op, ref = m.group(3), m.group(4)
    if op in ("==", "=", "!="):
        return (value == ref) != (op == "!=")
    try:
        a, b = int(value), int(ref)
    except ValueError:
        return None
    return {"-eq": a == b, "-ne": a != b, "-gt": a > b, "-lt": a < b, "-ge": a >= b, "-le": a <= b}[op]


def shell_vars(repo, path, env=None, missing=None, common=None):
    """The variables a config_*.sh exports, in order, following `source`. An `if` on one variable's
    value takes the branch the variables so far select (`if [[ "${MLPERF_VERSION:-}" == "v31" ]]`
    sources one common file or the other); any other `if` is skipped whole. A sourced file the
    config's directory does not hold is read from `common` (the directory a submission's README
    points to for the rest of the implementation) where given, else listed in `missing`."""
    env = {} if env is None else env
    try:
        text = show(repo, path)
    except RuntimeError:
        if common is not None and not path.startswith(common + "/"):
            return shell_vars(repo, f"{common}/{path.rsplit('/', 1)[1]}", env, missing, common)
        if missing is None:
            raise
        missing.append(path.rsplit("/", 1)[1])
        return env
    # One frame per open `if`: [this branch runs, a branch already ran, the condition was readable].
    frames = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip() if not raw.strip().startswith("#") else ""
        if not line:
            continue
        live = all(f[0] for f in frames)
        m = re.match(r"^(if|elif)\s+(.*?);?\s*then$", line)
        if m:
            cond = shell_condition(m.group(2), env) if live else None
            if m.group(1) == "if":
                frames.append([bool(cond), bool(cond), cond is not None])
            elif frames:
                f = frames[-1]
                f[2] = f[2] and cond is not None
                f[0] = f[2] and not f[1] and bool(cond)
                f[1] = f[1] or f[0]
            continue
        if line == "else" and frames:
            f = frames[-1]
            f[0] = f[2] and not f[1]
            continue
        if (line == "fi" or line.startswith("fi ") or line.endswith("; fi")) and frames:
            frames.pop()
            continue
        if not live:
            continue
        m = re.match(r"^source\s+\$\(dirname \$\{BASH_SOURCE\[0\]\}\)/(\S+)", line)
        if m:
            sub = path.rsplit("/", 1)[0] + "/" + m.group(1)
            shell_vars(repo, sub, env, missing, common)
            continue
        m = re.match(r'^:\s*"\$\{(\w+):=([^}]*)\}"', line)
        if m:
            env.setdefault(m.group(1), m.group(2))
            continue
        m = re.match(r"^export\s+(\w+)=(.*)$", line)
        if m:
            name, value = m.group(1), m.group(2).strip().strip('"')
            d = re.match(r"^\$\{(\w+):[-=]([^}]*)\}$", value)
            if d:
                value = env.get(d.group(1), d.group(2))
            a = re.match(r"^\$\(\((.*)\)\)$", value)
            if a:  # shell arithmetic on variables set so far: `$(( (TENSOR_MODEL_PARALLEL * ...) / DGXNGPU ))`
                expr = re.sub(r"\$?\{?([A-Za-z_]\w*)\}?", lambda v: env.get(v.group(1), "x"), a.group(1))
                if re.fullmatch(r"[\d\s+*/()-]+", expr):
                    value = str(eval(expr.replace("/", "//")))
            env[name] = value
            continue
        m = re.match(r"^unset\s+(\w+)", line)
        if m:
            env.pop(m.group(1), None)
    return env


def yaml_env_default(text, key):
    """The default of `key: ${oc.decode:${oc.env:ENV,DEFAULT}}` in a Hydra yaml."""
    m = re.search(rf"^\s*{key}:\s*\$\{{oc\.decode:\$\{{oc\.env:(\w+),([^}}]*)\}}\}}", text, re.M)
    return (m.group(1), m.group(2)) if m else (None, None)


def mllog(text):
    events, sysjson = [], None
    for line in text.splitlines():  # some logs prefix the lines (a rank, a shell trace)
        at = line.find(":::MLLOG {")
        if at >= 0:
            try:
                events.append(json.loads(line[at + len(":::MLLOG "):]))
            except json.JSONDecodeError:
                pass
            continue
        at = line.find(":::SYSJSON {")
        if at >= 0 and sysjson is None:
            try:
                sysjson = json.loads(line[at + len(":::SYSJSON "):])
            except json.JSONDecodeError:
                pass
    return events, sysjson


def first_value(events, key):
    for e in events:
        if e["key"] == key:
            return e["value"]
    return None


def block_rates(events):
    """tokens/s of each block after the first: epoch_count / (block_stop - block_start)."""
    rates, start = [], None
    for e in events:
        if e["key"] == "block_start":
            start = e
        elif e["key"] == "block_stop" and start is not None:
            tokens = e["metadata"].get("epoch_count", start["metadata"].get("epoch_count"))  # v3.0: on the start only
            rates.append((tokens, (e["time_ms"] - start["time_ms"]) / 1000.0))
            start = None
    return rates[1:]


def step_times(events, skip=3):
    times = []
    for e in events:  # train_step_time (v5.0 on), train_step_timing (v3.0's GPT-3)
        if e["key"] == "tracked_stats" and isinstance(e["value"], dict):
            t = e["value"].get("train_step_time", e["value"].get("train_step_timing"))
            if t is not None:
                times.append(t)
    return times[skip:]


def config_from_readme(repo, submitter, bench, system):
    """(implementation dir, config) that the system's README-<system>.md says to `source`."""
    base = f"{submitter}/benchmarks/{bench}/implementations/"
    impls = [d[len(base):] for d in git(repo, "ls-tree", "--name-only", "HEAD", base).split()]
    for impl in impls:
        try:
            text = show(repo, f"{base}{impl}/README-{system}.md")
        except RuntimeError:
            continue
        m = re.search(r"^source (config_\S+\.sh)", text, re.M)
        if not m:
            continue
        for where in [impl] + impls:
            try:  # the README's own directory, else the one that holds the config (a shared `nemo/`)
                show(repo, f"{base}{where}/{m.group(1)}")
                return where, m.group(1)
            except RuntimeError:
                continue
    raise RuntimeError(f"{base}*/README-{system}.md names no config")


def chunk_layout(layers, pp, vp, embed, loss):
    """Decoder layers per model chunk when the embedding and the loss count as layers in the split
    (Megatron-Core account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split)."""
    chunks = pp * vp
    total = layers + int(embed) + int(loss)
    if total % chunks:
        raise RuntimeError(f"{total} layers do not split over {chunks} chunks")
    per = total // chunks
    split = [per] * chunks
    if embed:
        split[0] -= 1
    if loss:
        split[-1] -= 1
    inner = "t" * per
    first = ("E" if embed else "") + "t" * split[0]
    last = "t" * split[-1] + ("L" if loss else "")
    return split, f"{first}|({inner}|)*{chunks - 2}{last}"


def log_record(rid, version, commit, res_dir, paper, table, row, model, hardware, parallel, mbs, gbs, seq, step,
               tokens_s, gpus, how, spread, derived, notes):
    """A record in the format of shared/validation/published.json for a run timed from its MLLOG lines."""
    rec = {
        "id": rid,
        "source": {
            "paper": paper,
            "table": table,
            "row": row,
            "url": f"https://github.com/mlcommons/training_results_{version}/tree/{commit}/{res_dir}",
            "commit": commit,
            "path": res_dir,
        },
        "kind": "log",
        "model": {k: model[k] for k in ("name", "params_b", "layers", "hidden", "heads", "kv_heads",
                                          "ffn_hidden", "vocab")},
        "hardware": {"gpu": hardware["gpu"], "count": hardware["count"], "peak_tflops_per_gpu_used_by_authors": None,
                     "precision": hardware["precision"], "notes": hardware["notes"]},
        "parallel": {"tp": parallel["tp"], "pp": parallel["pp"], "dp": parallel["dp"], "cp": parallel["cp"], "ep": None,
                     "vpp": parallel["vpp"], "model_parallel_size": None, "zero_stage": None, "fsdp": None,
                     "recompute": parallel["recompute"], "sequence_parallel": parallel["sequence_parallel"],
                     "notes": parallel["notes"]},
        "microbatch": mbs,
        "global_batch": gbs,
        "global_batch_tokens": gbs * seq,
        "measured": {
            "tflops_per_gpu": None, "mfu_pct": None, "hfu_pct": None, "pct_of_peak": None,
            "aggregate_pflops": None,
            "iteration_time_s": round(step, 4),
            "tokens_per_s": round(tokens_s, 1),
            "tokens_per_s_per_gpu": round(tokens_s / gpus, 2),
            "memory_gib": None, "training_days": None,
            "other": {
                "how": how,
                "per_result_file_tokens_per_s_per_gpu": [round(x, 2) for x in spread],
            },
        },
        "derived_fields": ["measured.iteration_time_s", "measured.tokens_per_s", "measured.tokens_per_s_per_gpu"] + derived,
        "confidence": "high",
        "notes": notes,
    }
    rec["model"]["seq_len"] = seq
    return rec


def record_for(repo, version, commit, submitter, system, bench, impl_dir, config, model, notes, overrides, common=None):
    res_dir = f"{submitter}/results/{system}/{bench}"
    readme_note = ""
    if config is None:
        impl_dir, config = config_from_readme(repo, submitter, bench, system)
        readme_note = f"config named by {submitter}/benchmarks/{bench}/implementations/{impl_dir}/README-{system}.md"

    files = sorted(p for p in git(repo, "ls-tree", "--name-only", "HEAD", res_dir + "/").split()
                   if re.search(r"/result_\d+\.txt$", p))
    impl_path = (impl_dir[1:] if impl_dir.startswith("/")  # a submission laid out without implementations/
                 else f"{submitter}/benchmarks/{bench}/implementations/{impl_dir}")
    cfg_path = f"{impl_path}/{config}"
    common_path = (common[1:] if common.startswith("/") else f"{submitter}/benchmarks/{bench}/implementations/{common}"
                   ) if common else None
    missing = []
    env = shell_vars(repo, cfg_path, None, missing, common_path)
    env.update(overrides)
    custom = None
    for where in [impl_path] + ([common_path] if common_path else []):
        try:
            custom = show(repo, f"{where}/conf/custom.yaml")
            break
        except RuntimeError:
            pass
    tp = int(env["TENSOR_MODEL_PARALLEL"])
    pp = int(env["PIPELINE_MODEL_PARALLEL"])
    cp = int(env.get("CONTEXT_PARALLEL", "1"))
    mbs = int(env["MICRO_BATCH_SIZE"])
    minibs = int(env["MINIBS"])
    vp = env.get("INTERLEAVED_PIPELINE")
    vp_source = "config"
    if vp is None and custom is not None:
        name, default = yaml_env_default(custom, "virtual_pipeline_model_parallel_size")
        vp, vp_source = default, f"conf/custom.yaml default of {name}"
    vp = int(vp) if vp not in (None, "null", "None", "") else 1
    per_file, gbs, seq, sysjson = [], None, None, None
    rates_all, steps_all = [], []
    for f in files:
        events, sj = mllog(show(repo, f))
        sysjson = sysjson or sj
        g = first_value(events, "global_batch_size")
        s = first_value(events, "max_sequence_length")
        gbs = gbs or g
        seq = seq or s
        if model.get("timing") == "steps":
            t = step_times(events)
            steps_all += t
            if t:
                per_file.append(statistics.median(t))
        else:
            r = block_rates(events)
            rates_all += [tok / sec for tok, sec in r]
            if r:
                per_file.append(statistics.median(tok / sec for tok, sec in r))
    seq = seq or model["seq_len"]
    try:  # the submission's own system description; the log's SYSJSON line where there is none
        sysjson = json.loads(show(repo, f"{submitter}/systems/{system}.json"))
    except RuntimeError:
        pass
    nodes = int(sysjson["number_of_nodes"])
    gpn = int(sysjson["accelerators_per_node"])
    gpus = nodes * gpn
    dp = gpus // (tp * pp * cp)
    if gbs != minibs * dp:
        raise RuntimeError(f"{res_dir}: global batch {gbs} in the log, MINIBS {minibs} x DP {dp} in {config}")
    if model.get("timing") == "steps":
        step = statistics.median(steps_all)
        tokens_s = gbs * seq / step
        spread = [gbs * seq / x / gpus for x in per_file]
        how = (f"median train_step_time over {len(steps_all)} steps of {len(files)} result files "
               f"(first 3 of each left out): {step:.4f} s; tokens/s = global_batch_size {gbs} x "
               f"max_sequence_length {seq} / step")
    else:
        tokens_s = statistics.median(rates_all)
        step = gbs * seq / tokens_s
        spread = [x / gpus for x in per_file]
        how = (f"median over {len(rates_all)} blocks of {len(files)} result files (the first block of each "
               f"left out) of epoch_count / (block_stop - block_start), epoch_count the block's training "
               f"tokens; step = global_batch_size {gbs} x {seq} / that")
    gpu = sysjson["accelerator_model_name"]
    precision = "FP8" if env.get("FP8", "").lower() == "true" else "BF16"
    if env.get("FP4", "").lower() == "true" or env.get("NVFP4", "").lower() == "true":
        precision = "NVFP4"
    rid = f"mlperf-{version.replace('.', '')}-{re.split('[+_]', submitter)[-1 if submitter.startswith('NVIDIA_') else 0].lower()}-{system.lower().replace('_', '-')}-{bench.replace('_', '-')}"
    rec = log_record(
        rid, version, commit, res_dir,
        paper=f"MLPerf Training {version} results (github.com/mlcommons/training_results_{version}), "
              f"{submitter}, system {system}, an implementation on NVIDIA NeMo (its Dockerfile installs NeMo; the "
              f"system's framework field: {sysjson.get('framework', '')})",
        table=f"{res_dir}/result_*.txt ({len(files)} runs): " + (
            "MLLOG tracked_stats train_step_time" if model.get("timing") == "steps" else
            "MLLOG block_start / block_stop (the training between evaluations)"),
        row=f"{cfg_path}", model=model,
        hardware={"gpu": gpu, "count": gpus, "precision": precision,
                  "notes": f"{nodes} nodes x {gpn} {gpu} (SYSJSON); {sysjson.get('accelerator_interconnect', '')}; "
                           f"{sysjson.get('host_networking', '')}"},
        parallel={"tp": tp, "pp": pp, "dp": dp, "cp": cp, "vpp": vp,
                  "recompute": model.get("recompute", "none"), "sequence_parallel": True,
                  "notes": f"TP {tp}, PP {pp}, CP {cp}, MINIBS {minibs}, micro batch {mbs} from {config}"
                           f"{' (' + readme_note + ')' if readme_note else ''}; interleave {vp} from the {vp_source}"},
        mbs=mbs, gbs=gbs, seq=seq, step=step, tokens_s=tokens_s, gpus=gpus, how=how, spread=spread,
        derived=["parallel.dp", "model.seq_len"],
        notes=(notes + (" " if notes else "") + ("The config sources " + ", ".join(missing) +
               ", which the submission does not hold." if missing else "")).strip())
    if model.get("cuda_graph_env"):
        graphs = any(env.get(k, "").lower() in ("1", "true") for k in model["cuda_graph_env"]) or "_cg" in config
    else:
        graphs = env.get("LAYER_CUDA_GRAPH") == "1" or "_cg" in config
    launch = {
        "recompute": model.get("recompute", "none"),
        "tp_comm_overlap": env.get("TP_COMM_OVERLAP", "").lower() == "true",
        "overlap_grad_reduce": True,
        "overlap_param_gather": True,
        "grad_reduce_in_fp32": False,
        "cuda_graph": "local: transformer layer" if graphs else "none",
        "recipe": f"{cfg_path} @{commit[:10]} (mlcommons/training_results_{version})",
        "evidence": model["evidence"],
    }
    # The distributed optimizer's FP8 parameter all-gather: the env variable the implementation's
    # conf/custom.yaml reads for it (FP8_PARAMS in v4.0 to v5.0's H100 runs, FP8_PARAM_GATHER later).
    gather_var, gather_default = None, None
    for key in ("fp8_param_gather", "fp8_params"):
        if custom is not None:
            gather_var, gather_default = yaml_env_default(custom, key)
            if gather_var:
                break
    if gather_var is None:  # no conf/custom.yaml that reads it: the variable the configs set
        gather_var = "FP8_PARAMS" if "FP8_PARAMS" in env else "FP8_PARAM_GATHER"
    gather_default = gather_default or "False"
    if precision == "FP8" and env.get(gather_var, gather_default).lower() == "true":
        launch["fp8_param_gather"] = True
        launch["evidence"] += (f"; {gather_var}={env.get(gather_var, gather_default)}: the distributed optimizer "
                               f"all-gathers the parameters in FP8 (NeMo's fp8_params / Megatron-Core's fp8_param_gather)")
    # The FP8 scaling: NeMo 2's MegatronMixedPrecision fp8_recipe, read by the implementation's
    # pretrain.py from conf/custom.yaml (`fp8_recipe: ${oc.decode:${oc.env:FP8_RECIPE,<default>}}`):
    # "tensorwise" is Transformer Engine's Float8CurrentScaling, "delayed" its DelayedScaling.
    # A submission without conf/custom.yaml (Oracle's v5.1 8B): the variable its configs export.
    recipe_var, recipe_default = yaml_env_default(custom, "fp8_recipe") if custom is not None else (None, None)
    where = f"conf/custom.yaml's {recipe_var}, default {recipe_default}"
    if recipe_var is None and "FP8_RECIPE" in env:
        recipe_var, where = "FP8_RECIPE", "FP8_RECIPE in the config, no conf/custom.yaml"
    fp8_recipe = env.get(recipe_var, recipe_default) if recipe_var else None
    if precision == "FP8" and fp8_recipe in ("tensorwise", "delayed"):
        launch["fp8_scaling"] = "current" if fp8_recipe == "tensorwise" else "delayed"
        launch["evidence"] += (f"; fp8_recipe {fp8_recipe} ({where}): "
                               + ("Transformer Engine's Float8CurrentScaling, an amax pass before each cast"
                                  if fp8_recipe == "tensorwise" else "Transformer Engine's DelayedScaling"))
    # FP8 attention: conf/custom.yaml `fp8_dot_product_attention: ${oc.decode:${oc.env:FP8_DPA,False}}`,
    # set by config_common_fp8attn.sh (FP8_DPA=True, NVTE_DPA_FP8_RECIPE the attention's scaling).
    dpa_var, dpa_default = yaml_env_default(custom, "fp8_dot_product_attention") if custom is not None else (None, None)
    dpa_var = dpa_var or "FP8_DPA"
    fp8_dpa = env.get(dpa_var, dpa_default or "False").lower() == "true"
    dpa_recipe = env.get("NVTE_DPA_FP8_RECIPE", "")
    if fp8_dpa and dpa_recipe == "F16":  # Transformer Engine's override: the attention stays 16-bit
        fp8_dpa = False
        launch["evidence"] += f"; {dpa_var}=True but NVTE_DPA_FP8_RECIPE=F16: attention in 16 bits"
    if fp8_dpa:
        if precision not in ("FP8", "NVFP4"):
            raise RuntimeError(f"{cfg_path}: {dpa_var}=True without FP8 or FP4 linear layers")
        current = dpa_recipe == "Float8CurrentScaling" or (dpa_recipe == "" and fp8_recipe == "tensorwise")
        if not current:
            raise RuntimeError(f"{cfg_path}: NVTE_DPA_FP8_RECIPE={dpa_recipe or 'unset'} with fp8_recipe {fp8_recipe}: "
                               f"meshplan costs FP8 attention's current scaling only")
        launch["fp8_attention"] = True
        launch["evidence"] += (f"; {dpa_var}=True (config_common_fp8attn.sh; conf/custom.yaml fp8_dot_product_attention): "
                               f"Transformer Engine's FP8 attention, NVTE_DPA_FP8_RECIPE={dpa_recipe or 'unset'}, "
                               f"NVTE_DPA_FP8CS_O_in_F16={env.get('NVTE_DPA_FP8CS_O_in_F16', 'unset')}")
    if precision == "NVFP4":
        knobs = [f"{k}={env[k]}" for k in ("NVTE_NVFP4_DISABLE_RHT", "NVTE_NVFP4_DISABLE_STOCHASTIC_ROUNDING",
                                            "NVTE_NVFP4_DISABLE_2D_QUANTIZATION") if k in env]
        launch["evidence"] += (f"; FP4=True, FP4_RECIPE {env.get('FP4_RECIPE', 'nvfp4')} (conf/custom.yaml fp4 / "
                               f"fp4_recipe: Transformer Engine's NVFP4BlockScaling for the linear layers)"
                               + (", " + ", ".join(knobs) if knobs else "")
                               + ("" if fp8_dpa else "; FP8_DPA not set (custom.yaml fp8_dot_product_attention "
                                                     "defaults to False): attention in BF16"))
    # The loss: conf/custom.yaml `cross_entropy_loss_fusion: ${oc.decode:${oc.env:CROSS_ENTROPY_LOSS_FUSION,True}}`
    # (GPT-3 from v4.1, Llama 3.1 from v5.0), which NeMo hands to Megatron-Core's config, and from v5.1
    # `cross_entropy_fusion_impl: ${oc.decode:${oc.env:CE_FUSION_IMPL,'native'}}`: Megatron-Core's
    # compute_language_model_loss then runs fused_vocab_parallel_cross_entropy (impl native, its default)
    # or Transformer Engine's Triton loss (te). Without the key (v3.0 to v4.0) the eager one.
    fusion_var, fusion_default = yaml_env_default(custom, "cross_entropy_loss_fusion") if custom is not None else (None, None)
    impl_var, impl_default = yaml_env_default(custom, "cross_entropy_fusion_impl") if custom is not None else (None, None)
    if env.get("CE_FUSION_IMPL") == "te":
        launch["cross_entropy"] = "te-inplace"
        launch["evidence"] += ("; CE_FUSION_IMPL=te: Transformer Engine's Triton cross entropy, which before TE 2.18 "
                               "(TransformerEngine #3193) writes its gradient over the bf16 logits")
    elif fusion_var and env.get(fusion_var, fusion_default).lower() == "true":
        impl = (env.get(impl_var, impl_default) if impl_var else "native").strip("'\"")
        if impl != "native":
            raise RuntimeError(f"{cfg_path}: cross_entropy_fusion_impl {impl}: only native and te are read")
        launch["cross_entropy"] = "native"
        launch["evidence"] += (f"; {fusion_var}={env.get(fusion_var, fusion_default)} (conf/custom.yaml's "
                               f"cross_entropy_loss_fusion, default {fusion_default})"
                               + (f", {impl_var}={impl} (its cross_entropy_fusion_impl)" if impl_var else "")
                               + ": Megatron-Core's fused_vocab_parallel_cross_entropy, the native fused loss")
    if env.get("SEQ_PARALLEL", "").lower() == "false":
        rec["parallel"]["sequence_parallel"] = False
    # The rank order: NeMo's use_tp_pp_dp_mapping (conf/custom.yaml `${oc.env:TP_PP_DP_MAPPING,False}`)
    # builds the groups in the order tp-cp-ep-pp-dp, data parallel outermost, instead of Megatron-Core's
    # tp-cp-ep-dp-pp (nemo/lightning/megatron_init.py fake_initialize_model_parallel's RankGenerator, and
    # Megatron-LM's initialize.py likewise): a pipeline's stages sit TP x CP ranks apart. Only a layout
    # with PP > 1 and DP > 1 differs.
    map_var, map_default = yaml_env_default(custom, "use_tp_pp_dp_mapping") if custom is not None else (None, None)
    if map_var and env.get(map_var, map_default).lower() == "true" and pp > 1 and dp > 1:
        launch["placement"] = "tp-cp-ep-pp-dp"
        launch["evidence"] += (f"; {map_var}={env.get(map_var, map_default)} (conf/custom.yaml use_tp_pp_dp_mapping): "
                               "NeMo builds the process groups in the order tp-cp-ep-pp-dp, data parallel outermost")
    # Slurm segments: NVIDIA's v5.1 README runs each benchmark with `sbatch -N $DGXNNODES -t $WALLTIME
    # --segment $SEGMENT run.sub` (NVIDIA/README.md, step 4), and the GB200/GB300 configs set SEGMENT to
    # the model-parallel group's nodes, (TP x PP x CP) / DGXNGPU: each such group inside one NVL72 rack.
    # Only NVIDIA's own submissions document that launch line (v5.0's README has no --segment).
    segment = env.get("SEGMENT", "")
    if submitter == "NVIDIA" and segment.isdigit() and int(segment) > 0 and int(segment) < nodes:
        if "--segment $SEGMENT" in show(repo, "NVIDIA/README.md"):
            launch["segment_nodes"] = int(segment)
            launch["evidence"] += (f"; SEGMENT={segment} with NVIDIA/README.md's launch line `sbatch ... --segment "
                                   f"$SEGMENT run.sub`: Slurm places the job's nodes {segment} at a time inside one "
                                   f"NVLink domain (the topology/block plugin)")
    embed = env.get("ASYM_PP_EMBED", "").lower() == "true"
    loss = env.get("ASYM_PP_LOSS", "").lower() == "true"
    if (embed or loss) and pp > 1:
        split, layout = chunk_layout(model["layers"], pp, vp, embed, loss)
        launch["pp_layout"] = layout
        launch["stage_layers"] = split
        launch["evidence"] += (f"; ASYM_PP_EMBED={embed}, ASYM_PP_LOSS={loss} (Megatron-Core account_for_embedding_in_"
                               f"pipeline_split / account_for_loss_in_pipeline_split): the embedding and the loss each "
                               f"count as a layer in the split of {model['layers']} layers over {pp * vp} chunks")
    return rec, launch


def sample_block_rates(events, seq):
    """tokens/s of each block after the first: (samples_count at block_stop - at block_start) x seq /
    the block's time (AMD's Llama 3.1 8B logs, whose blocks carry samples_count, not epoch_count)."""
    rates, start = [], None
    for e in events:
        if e["key"] == "block_start":
            start = e
        elif e["key"] == "block_stop" and start is not None:
            samples = e["metadata"]["samples_count"] - start["metadata"]["samples_count"]
            rates.append((samples * seq, (e["time_ms"] - start["time_ms"]) / 1000.0))
            start = None
    return rates[1:]


def amd_record_for(repo, version, commit, submitter, system, bench, cfg_path, model, notes):
    """A record of AMD's Llama 3.1 8B implementation (NeMo 2 on ROCm), as record_for does NVIDIA's."""
    res_dir = f"{submitter}/results/{system}/{bench}"
    files = sorted(p for p in git(repo, "ls-tree", "--name-only", "HEAD", res_dir + "/").split()
                   if re.search(r"/result_\d+\.txt$", p))
    env = shell_vars(repo, cfg_path)
    tp, pp, cp = int(env["TP"]), int(env["PP"]), int(env.get("CP", "1"))
    cfg_mbs = int(env["MBS"])
    sysjson = json.loads(show(repo, f"{submitter}/systems/{system}.json"))
    nodes, gpn = int(sysjson["number_of_nodes"]), int(sysjson["accelerators_per_node"])
    gpus = nodes * gpn
    dp = gpus // (tp * pp * cp)
    gbs = seq = accum = None
    rates_all, per_file = [], []
    for f in files:
        events, _ = mllog(show(repo, f))
        gbs = gbs or first_value(events, "global_batch_size")
        seq = seq or first_value(events, "max_sequence_length")
        accum = accum or first_value(events, "gradient_accumulation_steps")
        r = sample_block_rates(events, seq)
        rates_all += [tok / sec for tok, sec in r]
        if r:
            per_file.append(statistics.median(tok / sec for tok, sec in r))
    mbs = gbs // (dp * accum)
    if mbs * dp * accum != gbs:
        raise RuntimeError(f"{res_dir}: global batch {gbs} is not DP {dp} x accumulation {accum} x a micro batch")
    mbs_note = ""
    if mbs != cfg_mbs:
        mbs_note = (f" The log's gradient_accumulation_steps {accum} gives micro batch {mbs} (global batch {gbs} / DP {dp}"
                    f" / {accum}); the config's MBS={cfg_mbs} would give {gbs // (dp * cfg_mbs)}, so the run took another"
                    f" value than the file's.")
    tokens_s = statistics.median(rates_all)
    step = gbs * seq / tokens_s
    gpu = sysjson["accelerator_model_name"]
    precision = "FP8" if "fp8" in sysjson.get("sw_notes", "").lower() or env.get("FP8_PARAMS") == "1" else "BF16"
    rid = f"mlperf-{version.replace('.', '')}-{submitter.lower()}-{system.lower().replace('_', '-')}-{bench.replace('_', '-')}"
    rec = log_record(
        rid, version, commit, res_dir,
        paper=f"MLPerf Training {version} results (github.com/mlcommons/training_results_{version}), {submitter}, "
              f"system {system}, AMD's implementation on NeMo 2 with ROCm's Megatron-LM fork and Transformer "
              f"Engine (its Dockerfile; the system's framework field: {sysjson.get('framework', '')})",
        table=f"{res_dir}/result_*.txt ({len(files)} runs): MLLOG block_start / block_stop (samples_count)",
        row=cfg_path, model=model,
        hardware={"gpu": gpu, "count": gpus, "precision": precision,
                  "notes": f"{nodes} nodes x {gpn} {gpu} (systems/{system}.json); "
                           f"{sysjson.get('accelerator_interconnect', '')}; {sysjson.get('system_name', '')}"},
        parallel={"tp": tp, "pp": pp, "dp": dp, "cp": cp, "vpp": 1, "recompute": "none", "sequence_parallel": False,
                  "notes": f"TP {tp}, PP {pp}, CP {cp}, GBS {env['GBS']}, MBS {cfg_mbs} from "
                           f"{cfg_path.rsplit('/', 1)[1]}; micro batch {mbs} from the log's global batch and "
                           f"gradient_accumulation_steps"},
        mbs=mbs, gbs=gbs, seq=seq, step=step, tokens_s=tokens_s, gpus=gpus,
        how=(f"median over {len(rates_all)} blocks of {len(files)} result files (the first block of each left out) of "
             f"(samples_count at block_stop - at block_start) x max_sequence_length {seq} / the block's time; "
             f"step = global_batch_size {gbs} x {seq} / that"),
        spread=[x / gpus for x in per_file], derived=["parallel.dp", "microbatch", "model.seq_len"],
        notes=(notes + mbs_note).strip())
    launch = {
        "recompute": "none",
        "tp_comm_overlap": env.get("TP_COMM_OVERLAP", "").lower() == "true",
        "overlap_grad_reduce": False,
        "overlap_param_gather": False,
        "grad_reduce_in_fp32": False,
        "cuda_graph": "none",
        "fp8_param_gather": True,
        "cross_entropy": "native",
        "recipe": f"{cfg_path} @{commit[:10]} (mlcommons/training_results_{version})",
        "evidence": model["evidence"],
    }
    return rec, launch


def transcript_record_for(tdir, version, submitter, system, bench, model, notes):
    """A record of a run read from a transcript (tests/data/validation/sources/mlperf_<version>/): the
    numbers a release's files print, copied where no clone of the release can be had. Each transcript
    holds, for one run, every train_step_time its result files print (in file order), the global
    batch, sequence and accumulation steps they print, the system description's fields, and the
    variables the README-named config exports once the files it sources are followed; step times
    are reduced exactly as step_times() reduces a log's (the first 3 printed values of each file left
    out, the median of the rest)."""
    with open(f"{tdir}/{system}__{bench}.json") as f:
        t = json.load(f)
    env, sj, read = t["config"]["exports"], t["system_json"], t["read_from"]
    nodes, gpn = int(sj["number_of_nodes"]), int(sj["accelerators_per_node"])
    gpus = nodes * gpn
    tp, pp = int(env["TENSOR_MODEL_PARALLEL"]), int(env["PIPELINE_MODEL_PARALLEL"])
    cp, ep = int(env.get("CONTEXT_PARALLEL", "1")), int(env.get("EXPERT_PARALLEL", "1"))
    vp = int(env.get("INTERLEAVED_PIPELINE") or 1)
    minibs = int(env["MINIBS"])
    mbs = int(env.get("MICRO_BATCH_SIZE", model.get("micro_batch_default", "1")))
    dp = gpus // (tp * pp * cp)
    steps_all, per_file, gbs, seq, accum = [], [], None, None, None
    for r in t["results"]:
        if len(r["train_step_time"]) != len(r["train_step_time_lineno"]):
            raise RuntimeError(f"{r['path']}: {len(r['train_step_time'])} step times, "
                               f"{len(r['train_step_time_lineno'])} line numbers")
        gbs, seq, accum = gbs or r["global_batch_size"], seq or r["max_sequence_length"], accum or r["gradient_accumulation_steps"]
        times = r["train_step_time"][3:]
        steps_all += times
        per_file.append(statistics.median(times))
    res_dir = f"{submitter}/results/{system}/{bench}"
    if gbs != minibs * dp:
        raise RuntimeError(f"{res_dir}: global batch {gbs} in the log, MINIBS {minibs} x DP {dp} in the config")
    if accum * mbs != minibs:
        raise RuntimeError(f"{res_dir}: gradient_accumulation_steps {accum} x micro batch {mbs} != MINIBS {minibs}")
    step = statistics.median(steps_all)
    tokens_s = gbs * seq / step
    cfg_path = t["readme"]["config"]
    gpu = sj["accelerator_model_name"]
    precision = "FP8" if env.get("FP8", "").lower() == "true" else "BF16"
    rid = f"mlperf-{version.replace('.', '')}-{submitter.lower()}-{system.lower().replace('_', '-')}-{bench.replace('_', '-')}"
    how = (f"median train_step_time over {len(steps_all)} values of {len(t['results'])} result files (the first 3 "
           f"of each left out; each step prints two, NeMo's step-end and block-end callbacks): {step:.4f} s; "
           f"tokens/s = global_batch_size {gbs} x max_sequence_length {seq} / step; the values read from "
           f"{read['repository']} at {read['commit'][:10]} (tests/data/validation/sources/mlperf_{version}/"
           f"{system}__{bench}.json)")
    rec = log_record(
        rid, version, read["commit"], res_dir,
        paper=f"MLPerf Training {version} results (github.com/mlcommons/training_results_{version}), {submitter}, "
              f"system {system}, an implementation on Megatron-Bridge (its Dockerfile: Megatron-Bridge and "
              f"Megatron-LM {t['implementation']['MBRIDGE_REVISION']}, Transformer Engine "
              f"{t['implementation']['TE_REVISION']}; the system's framework field: {sj.get('framework', '')})",
        table=f"{res_dir}/result_*.txt ({len(t['results'])} runs): MLLOG tracked_stats train_step_time",
        row=cfg_path, model=model,
        hardware={"gpu": gpu, "count": gpus, "precision": precision,
                  "notes": f"{nodes} nodes x {gpn} {gpu} ({t['system_json']['path']}: {sj.get('system_name', '')}); "
                           f"{sj.get('accelerator_interconnect', '')}; {sj.get('host_networking', '')}"},
        parallel={"tp": tp, "pp": pp, "dp": dp, "cp": cp, "vpp": vp,
                  "recompute": "selective" if env.get("RECOMPUTE_MODULES") else "none",
                  "sequence_parallel": tp > 1,
                  "notes": f"TP {tp}, PP {pp}, VP {vp}, CP {cp}, EP {ep}, MINIBS {minibs} from "
                           f"{cfg_path.rsplit('/', 1)[1]} ({t['readme'].get('how') or 'named by ' + t['readme']['path'].rsplit('/', 1)[1]}); micro "
                           f"batch {mbs}, "
                           + ("the config's MICRO_BATCH_SIZE" if "MICRO_BATCH_SIZE" in env else
                              "the model config's default (MICRO_BATCH_SIZE unset)")
                           + f", as the log's gradient_accumulation_steps {accum} gives; sequence parallelism with "
                           f"TP > 1 (pretrain.py)"},
        mbs=mbs, gbs=gbs, seq=seq, step=step, tokens_s=tokens_s, gpus=gpus, how=how,
        spread=[gbs * seq / x / gpus for x in per_file], derived=["parallel.dp", "model.seq_len"], notes=notes)
    rec["parallel"]["ep"] = ep
    rec["source"]["url"] = f"https://github.com/{read['repository'].split('github.com/', 1)[1]}/tree/{read['commit']}/{res_dir}"
    rec["source"]["read_from"] = read["how"]
    modules = [m for m in env.get("RECOMPUTE_MODULES", "").split(",") if m]
    dispatcher = env.get("MOE_TOKEN_DISPATCHER_TYPE", "alltoall")
    if dispatcher == "flex":
        dispatcher += "/" + env["MOE_FLEX_DISPATCHER_BACKEND"]
    launch = {
        "recompute": "selective" if modules else "none",
        "recompute_modules": modules,
        "cuda_graph": env.get("CUDA_GRAPH_SCOPE") or "none",
        "moe_dispatcher": dispatcher,
        "moe_a2a_overlap": env.get("OVERLAP_MOE_EXPERT_PARALLEL_COMM", "").lower() == "true",
        **({"delay_wgrad": True} if env.get("OVERLAP_MOE_EXPERT_PARALLEL_COMM", "").lower() == "true"
           and env.get("DELAY_WGRAD_COMPUTE", "").lower() == "true" else {}),
        "tp_comm_overlap": model["launch"]["tp_comm_overlap"],
        "overlap_grad_reduce": True,
        "overlap_param_gather": True,
        "grad_reduce_in_fp32": False,
        "recipe": f"{cfg_path} @{read['commit'][:10]} ({read['repository']}; mlcommons/training_results_{version})",
        "evidence": model["evidence"],
        "pp_layout": env["PIPELINE_LAYOUT"],
        "stage_layers": model["stage_layers"](env["PIPELINE_LAYOUT"]),
        "mtp_layers": int(env.get("MTP_NUM_LAYERS", model["mtp_layers_default"])),
        "optimizer_states_dtype": model["launch"]["optimizer_states_dtype"],
        "cross_entropy": model["launch"]["cross_entropy"],
    }
    if precision == "FP8":
        launch["fp8_scaling"] = "block"
        launch["fp8_param_gather"] = env.get("FP8_PARAM_GATHER", "").lower() == "true"
    segment = env.get("SEGMENT", "")
    if segment.isdigit() and 0 < int(segment) < nodes and t.get("readme_segment_launch"):
        launch["segment_nodes"] = int(segment)
        launch["evidence"] += (f"; SEGMENT={segment} with the launch line {t['readme_segment_launch']}: Slurm places the "
                               f"job's nodes {segment} at a time inside one NVLink domain (the topology/block plugin)")
    knobs = ", ".join(f"{k}={env[k]}" for k in model["knobs"] if k in env)
    launch["evidence"] += f"; the config's exports: {knobs}"
    return rec, launch


GPT3 = {
    "name": "GPT-3 175B", "params_b": None, "layers": 96, "hidden": 12288, "heads": 96, "kv_heads": None,
    "ffn_hidden": 49152, "vocab": 50257, "seq_len": 2048,
    "evidence": "conf/custom.yaml (NeMo megatron_gpt_config overrides): num_layers 96, hidden_size 12288, "
                "ffn_hidden_size 4 x hidden, 96 heads, encoder_seq_length 2048, dropout 0, sequence_parallel True, "
                "activations_checkpoint_granularity null (no recomputation), transformer_engine True, "
                "ub_tp_comm_overlap from TP_COMM_OVERLAP; conf/optim/distributed_fused_adam.yaml: "
                "overlap_grad_sync and overlap_param_sync True, grad_sync_dtype bf16 (gradients reduced in bf16); "
                "config_fp8.sh: FP8 hybrid, delayed scaling (amax history 1024); LAYER_CUDA_GRAPH=1 in the _cg configs",
}


GPT3_STEPS = dict(GPT3, timing="steps")  # v3.0: one training block a run, every step's time printed


LLAMA405 = {
    "name": "Llama 3.1 405B", "params_b": None, "layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8,
    "ffn_hidden": 53248, "vocab": 128256, "seq_len": 8192, "timing": "steps",
    "cuda_graph_env": ["LAYER_CUDA_GRAPH", "MCORE_CUDA_GRAPH"],
    "evidence": "pretrain.py (NeMo 2 Llama31Config405B, 126 layers unless OVERWRITTEN_NUM_LAYERS; FP8 from FP8, "
                "delayed scaling unless FP8_RECIPE; DistributedDataParallelConfig grad_reduce_in_fp32=False, "
                "overlap_grad_reduce / overlap_param_gather from OVERLAP_GRAD_REDUCE / OVERLAP_PARAM_GATHER, "
                "fp8_param_gather from FP8_PARAMS); conf/custom.yaml: encoder_seq_length 8192, "
                "activations_checkpoint_granularity null unless ACT_CKPT_GRANULARITY (no recomputation), "
                "sequence_parallel True, ub_tp_comm_overlap from TP_COMM_OVERLAP; CUDA graphs from "
                "LAYER_CUDA_GRAPH / MCORE_CUDA_GRAPH",
}


LLAMA8 = dict(LLAMA405, name="Llama 3.1 8B", layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336)
LLAMA8["evidence"] = LLAMA405["evidence"].replace("Llama31Config405B, 126 layers unless OVERWRITTEN_NUM_LAYERS",
                                                  "Llama31Config8B; config_common_8b.sh OVERWRITTEN_NUM_LAYERS=32")


LLAMA8_AMD = dict(LLAMA8, evidence=(
    "src/train.py (AMD's implementation: NeMo 2 Llama31Config8B, seq_length 8192; fp8 'hybrid' delayed scaling, amax "
    "history 4, fp8_dot_product_attention False; nl.MegatronStrategy with DistributedDataParallelConfig("
    "grad_reduce_in_fp32=False, average_in_collective=True, use_distributed_optimizer=True, fp8_param_gather=True) "
    "and no overlap_grad_reduce / overlap_param_gather, so Megatron-Core's defaults, off; virtual pipeline None; no "
    "recomputation or CUDA graph setting); run_and_time.sh passes --fp8_params when FP8_PARAMS=1; the config sets "
    "TP_COMM_OVERLAP=False and Transformer Engine's CK fused attention (NVTE_FUSED_ATTN_CK=1, NVTE_CK_USES_FWD_V3=1, "
    "NVTE_CK_USES_BWD_V3=1); the loss: NeMo 2's GPTConfig sets cross_entropy_loss_fusion = True "
    "(nemo/collections/llm/gpt/model/base.py, read at v2.1.0-v2.3.0; Llama31Config8B inherits it and AMD's "
    "nemo_v2.5.0rc0.patch leaves it) and sets no cross_entropy_fusion_impl, so Megatron-Core's default, native"))


def layout_stage_layers(layout):
    """Decoder layers per model chunk of a Megatron-Core pipeline layout ("Et*4|(t*4|)*14tmL": E the
    embedding, t a decoder layer, m an MTP layer, L the loss; `(...)*n` and `x*n` repeat)."""
    text = re.sub(r"\(([^()]*)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), layout)
    text = re.sub(r"([A-Za-z])\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    return [chunk.count("t") for chunk in text.split("|")]


DSV3 = {
    "name": "DeepSeek-V3 671B", "params_b": None, "layers": 61, "hidden": 7168, "heads": 128, "kv_heads": None,
    "ffn_hidden": 18432, "vocab": 129280, "seq_len": 4096, "timing": "steps",
    "stage_layers": layout_stage_layers, "mtp_layers_default": "1",
    # What the Megatron-Bridge recipe sets that the config does not (the evidence below says where).
    "launch": {"tp_comm_overlap": False, "optimizer_states_dtype": "bf16", "cross_entropy": "te-inplace"},
    "knobs": ["MINIBS", "TENSOR_MODEL_PARALLEL", "PIPELINE_MODEL_PARALLEL", "INTERLEAVED_PIPELINE", "CONTEXT_PARALLEL",
              "EXPERT_PARALLEL", "PIPELINE_LAYOUT", "SEGMENT", "RECOMPUTE_MODULES", "CUDA_GRAPH_IMPLEMENTATION",
              "CUDA_GRAPH_SCOPE", "MOE_TOKEN_DISPATCHER_TYPE", "MOE_FLEX_DISPATCHER_BACKEND",
              "OVERLAP_MOE_EXPERT_PARALLEL_COMM", "DELAY_WGRAD_COMPUTE", "MOE_ROUTER_FORCE_LOAD_BALANCING", "FP8",
              "FP8_PARAM_GATHER", "FP8_DPA", "FP8_OUTPUT_PROJ", "GRAD_ACCUM_FUSION", "AVERAGE_IN_COLLECTIVE",
              "NCCL_NVLS_ENABLE", "MOE_PAGED_STASH"],
    "evidence": "pretrain.py (the implementation's own: Megatron-Bridge's deepseek_v3_pretrain_config(); MTP layers from "
                "MTP_NUM_LAYERS, conf/model/671b.yaml default 1; micro batch from MICRO_BATCH_SIZE, default 1; "
                "sequence_parallel = TP > 1; recompute_modules from RECOMPUTE_MODULES, none: recompute_granularity "
                "None; cuda_graph_impl / cuda_graph_scope from CUDA_GRAPH_IMPLEMENTATION / CUDA_GRAPH_SCOPE; "
                "overlap_moe_expert_parallel_comm and delay_wgrad_compute from the config; FP8 as "
                "bf16_with_mxfp8_mixed (Transformer Engine's MXFP8BlockScaling) with fp8_param_gather from "
                "FP8_PARAM_GATHER; override_performance_configs: ddp.grad_reduce_in_fp32 False; "
                "ddp.average_in_collective from AVERAGE_IN_COLLECTIVE; conf/deepseekv3_671b.yaml: overlap_grad_reduce "
                "and overlap_param_gather True, use_precision_aware_optimizer True, so the recipe's optimizer dtypes "
                "stand); Megatron-Bridge 26.04-alpha.rc2 (fd5c4737f6, the Dockerfile's MBRIDGE_REVISION) "
                "src/megatron/bridge/recipes/deepseek/deepseek_v3.py: cross_entropy_loss_fusion True with "
                "cross_entropy_fusion_impl 'te' (Transformer Engine v2.15, the Dockerfile's TE_REVISION, before "
                "TransformerEngine #3193 of v2.18: the loss writes its gradient over the bf16 logits), main_grads, "
                "exp_avg and exp_avg_sq bfloat16, CommOverlapConfig(tp_comm_overlap=False); Megatron-LM "
                "26.04-alpha.rc2 (99a108127d) is after 2659630721 (the router's probabilities in the fused weighted "
                "activation). Not modelled, costed otherwise: FP8_DPA=True runs Transformer Engine's MXFP8 attention "
                "under the MXFP8 recipe (TE v2.15 dot_product_attention.py: linear MXFP8, attention MXFP8, 'Pass "
                "MXFP8 to autocast()'), costed in BF16; FP8_OUTPUT_PROJ=True (the GB300 configs) runs the output layer "
                "in MXFP8, costed in BF16; MOE_ROUTER_FORCE_LOAD_BALANCING=False routes the real data (aux loss "
                "coefficient 0.01), where meshplan routes uniformly; NCCL_NVLS_ENABLE=0 (config_common.sh), where the "
                "NVL72 cluster presets let NCCL use NVLS",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", action="append", default=[], help="VERSION=<git dir of training_results_VERSION>")
    ap.add_argument("--transcript", action="append", default=[],
                    help="VERSION=<directory of transcripts> (tests/data/validation/sources/mlperf_VERSION): a release "
                         "read where no clone of it can be had")
    ap.add_argument("--out", required=True)
    ap.add_argument("--launch", required=True)
    args = ap.parse_args()
    repos = dict(m.split("=", 1) for m in args.mirror)
    transcripts = dict(m.split("=", 1) for m in args.transcript)
    runs = [
        # version, submitter, results system, benchmark, implementation dir, config, model, notes
        ("v3.0", "NVIDIA", "dgxh100_n64_nemo", "gpt3", "pytorch", "config_DGXH100_64x8x128x4x8_mbs1.sh", GPT3_STEPS, None),
        ("v3.0", "NVIDIA", "dgxh100_n96_nemo", "gpt3", "pytorch", "config_DGXH100_96x8x128x4x8_mbs1.sh", GPT3_STEPS, None),
        ("v3.0", "NVIDIA_CoreWeave", "coreweave_hgxh100_n96_ngc23.04_pytorch", "gpt3", "pytorch",
         "config_DGXH100_96x8x128x4x8_mbs1.sh", GPT3_STEPS, "CoreWeave's HGX H100 nodes; the config for the system's node count."),
        ("v3.0", "NVIDIA_CoreWeave", "coreweave_hgxh100_n192_ngc23.04_pytorch", "gpt3", "pytorch",
         "config_DGXH100_192x8x64x4x8_mbs1.sh", GPT3_STEPS, "CoreWeave's HGX H100 nodes; the config for the system's node count."),
        ("v3.0", "NVIDIA_CoreWeave", "coreweave_hgxh100_n448_ngc23.04_pytorch", "gpt3", "pytorch",
         "config_DGXH100_448x8x24x4x8_mbs1.sh", GPT3_STEPS, "CoreWeave's HGX H100 nodes; the config for the system's node count."),
        ("v3.1", "NVIDIA", "eos_n64_ngc23.09_nemo", "gpt3", "pytorch", "config_DGXH100_96x8x128x4x8_mbs1.sh", GPT3,
         "The log prints a global batch of 2,048 = MINIBS 128 x DP 16: config_DGXH100_96x8x128x4x8_mbs1.sh run on 64 "
         "nodes (its DGXNNODES=${DGXNNODES:-96} takes the node count given); the directory's 64-node config "
         "(MINIBS 192) would give 3,072."),
        ("v3.1", "NVIDIA", "eos_n96_ngc23.09_nemo", "gpt3", "pytorch", "config_DGXH100_96x8x128x4x8_mbs1.sh", GPT3, None),
        ("v3.1", "NVIDIA", "eos-dfw_n512_ngc23.09_nemo", "gpt3", "pytorch", "config_DGXH100_512x8x16x4x8_mbs1.sh", GPT3, None),
        ("v3.1", "NVIDIA", "eos-dfw_n768_ngc23.09_nemo", "gpt3", "pytorch", "config_DGXH100_768x8x16x4x8_mbs1.sh", GPT3, None),
        ("v3.1", "NVIDIA", "eos-dfw_n1024_ngc23.09_nemo", "gpt3", "pytorch", "config_DGXH100_1024x8x16x4x8_mbs1.sh", GPT3, None),
        ("v3.1", "NVIDIA", "eos-dfw_n1280_ngc23.09_nemo", "gpt3", "pytorch", "config_DGXH100_1280x8x8x4x8_mbs1.sh", GPT3, None),
        ("v3.1", "NVIDIA", "eos-dfw_n1344_ngc23.09_nemo", "gpt3", "pytorch", "config_DGXH100_1344x8x8x4x8_mbs1.sh", GPT3, None),
        ("v3.1", "Azure+NVIDIA", "ND_H100_v5_n1344_pytorch", "gpt3", "pytorch", "config_DGXH100_1344x8x8x4x8_mbs1.sh",
         GPT3, None),
        ("v4.0", "NVIDIA", "eos_n64_ngc24.04_nemo", "gpt3", "nemo", "config_DGXH100_64x8x128x4x8_mbs2.sh", GPT3,
         "MINIBS 144: the log's global batch 2,304 / DP 16 (the config's MINIBS=${MINIBS:=128} takes a value given "
         "at launch).", {"MINIBS": "144"}),
        ("v4.0", "NVIDIA", "eos-dfw_n1344_ngc24.04_nemo", "gpt3", "nemo", "config_DGXH100_1344x8x6x4x6_mbs1_cg.sh", GPT3, None),
        ("v4.0", "NVIDIA", "eos-dfw_n1452_ngc24.04_nemo", "gpt3", "nemo", "config_DGXH100_1452x8x6x4x6_mbs1_cg.sh", GPT3, None),
        ("v4.1", "NVIDIA", "eos_n32_ngc24.09_nemo", "gpt3", "eos_n32_ngc24.09_nemo", "config_DGXH100_32x8x256x4x8_mbs2.sh", GPT3, None),
        ("v4.1", "NVIDIA", "eos_n64_ngc24.09_nemo", "gpt3", "eos_n64_ngc24.09_nemo", "config_DGXH100_64x8x128x4x8_mbs2.sh", GPT3, None),
        ("v4.1", "NVIDIA", "b200_n8_preview_nemo", "gpt3", "b200_n8_preview_nemo", "config_DGXB200_8x8x1024x4x8_mbs2_cg.sh", GPT3,
         "A preview submission (B200 not yet available)."),
        ("v4.1", "Oracle", "1536xBM.GPU.H100.8", "gpt3", "/Oracle/benchmarks/gpt3/DGXH100_128x8x64x4x8_mbs2",
         "config_DGXH100_192x8x64x4x8_mbs2.sh", GPT3,
         "Oracle Cloud's H100 nodes on a RoCE network (systems/1536xBM.GPU.H100.8.json); the config is the one "
         "for the system's 192 nodes in the submission's only implementation directory."),
        ("v4.1", "Oracle", "3072xBM.GPU.H100.8", "gpt3", "/Oracle/benchmarks/gpt3/DGXH100_128x8x64x4x8_mbs2",
         "config_DGXH100_384x8x32x4x8_mbs2.sh", GPT3,
         "Oracle Cloud's H100 nodes on a RoCE network (systems/3072xBM.GPU.H100.8.json); the config is the one "
         "for the system's 384 nodes in the submission's only implementation directory."),
    ]
    for system in ["eos-dfw_n64_ngc25.01_nemo", "eos-dfw_n256_ngc25.01_nemo", "eos-dfw_n304_ngc25.01_nemo",
                   "eos-dfw_n320_ngc25.01_nemo", "eos-dfw_n1024_ngc25.01_nemo", "tyche_ngpu256_ngc25.04_nemo",
                   "tyche_ngpu512_ngc25.04_nemo"]:
        runs.append(("v5.0", "NVIDIA", system, "llama31_405b", None, None, LLAMA405, None))
    for system in ["carina_ngpu512_ngc25.04_nemo", "carina_ngpu1024_ngc25.04_nemo", "carina_ngpu1536_ngc25.04_nemo",
                   "carina_ngpu2048_ngc25.04_nemo", "carina_ngpu2496_ngc25.04_nemo"]:
        runs.append(("v5.0", "IBM+CoreWeave+NVIDIA", system, "llama31_405b", None, None, LLAMA405, None))
    for system in ["nebius_soperator_8xH200_n64_ngc25.01_nemo", "nebius_soperator_8xH200_n128_ngc25.01_nemo"]:
        runs.append(("v5.0", "Nebius", system, "llama31_405b", None, None, LLAMA405, None))
    # v5.1's Llama 3.1 405B: NVIDIA's NVFP4 runs on GB200 and GB300 and Nebius's FP8 runs on H200, each
    # README naming its config; the University of Florida's two B200 runs, whose implementation
    # directory holds a config per node count and points to b200_nemo for the rest (the common files).
    for system in ["hsg_ngpu2560_ngc25.09_nemo", "hsg_ngpu5120_ngc25.09_nemo", "tyche_ngpu512_ngc25.09_nemo",
                   "theia_ngpu512_ngc25.09_nemo"]:
        runs.append(("v5.1", "NVIDIA", system, "llama31_405b", None, None, LLAMA405, None))
    for system in ["nebius_h200_n64", "nebius_h200_n128"]:
        runs.append(("v5.1", "Nebius", system, "llama31_405b", None, None, LLAMA405, None))
    uf = ("The implementation directory hpg.dgxb200x8 holds this config and a README that refers to b200_nemo for the "
          "rest; the files the config sources (config_common*.sh) and conf/custom.yaml are b200_nemo's.")
    for n in (32, 56):
        runs.append(("v5.1", "University-of-Florida", f"hpg.dgxb200x8.n{n}", "llama31_405b", "hpg.dgxb200x8",
                     f"config_DGXB200_{n}x8x144xtp4pp8cp2_cg.sh", LLAMA405, uf, {}, "b200_nemo"))
    # v5.1's Llama 3.1 8B runs whose configs source config_common_fp8attn.sh (FP8_DPA=True: Transformer
    # Engine's FP8 attention, current scaling): NVIDIA's 8-GPU NVFP4 runs (README-named configs), the other
    # submitters' NVFP4 single nodes whose configs are named for the system or are the directory's only one,
    # Nebius's per-system config directories (conf/custom.yaml one level up) and HPE's FP8 H200 run (its
    # benchmark directory is llama3_8b; the config for its 8 nodes, MINIBS 1 x DP 32 = the log's 32).
    for system in ["tyche_ngpu8_ngc25.09_nemo", "theia_ngpu8_ngc25.09_nemo"]:
        runs.append(("v5.1", "NVIDIA", system, "llama31_8b", None, None, LLAMA8, None))
    runs += [
        ("v5.1", "Dell", "1xXE9680Lx8B200-SXM-180GB", "llama31_8b", "nemo", "config_1xXE9680Lx8B200-SXM-180GB.sh", LLAMA8,
         "The config named for the system."),
        ("v5.1", "Supermicro", "AS-4126GS-NBR-LCC", "llama31_8b", "AS-4126GS-NBR-LCC",
         "config_AS-4126GS-NBR-LCC_1x8x2xtp1pp1cp1_8b_fp4.sh", LLAMA8, "The config named for the system."),
        ("v5.1", "Supermicro", "SYS-422GS-NBRT-LCC", "llama31_8b", "SYS-422GS-NBRT-LCC",
         "config_SYS-422GS-NBRT-LCC_1x8x2xtp1pp1cp1_8b_fp4.sh", LLAMA8, "The config named for the system."),
        ("v5.1", "HPE", "HPE-Cray-XD670-H200-SXM5-141GB_n8_25.09", "llama31_8b",
         "/HPE/benchmarks/llama3_8b/implementations/nemo-x86_64", "config_XD670_8x8x1xtp1pp1cp2_8b.sh", LLAMA8,
         "The submission's README names no config: the one for the system's GPUs whose MINIBS x DP gives the log's "
         "batch (8 nodes)."),
    ]
    for system in ["SR680aV3-8xB200_SXM_180GB", "SR780aV3-8xB200_SXM_180GB", "SR680aV4-8xB300_SXM"]:
        runs.append(("v5.1", "Lenovo", system, "llama31_8b", "/Lenovo/benchmarks/llama31_8b",
                     "config_SR780aV3_SR680aV3_SR680aV4.sh", LLAMA8, "The submission's only config, named for its three systems."))
    for system, cfg in [("nebius_b200_n1", "config_DGXB200_1x8x2xtp1pp1cp1_8b_fp4.sh"),
                        ("nebius_b200_n2", "config_DGXB200_2x8x2xtp1pp1cp1_8b_fp4.sh"),
                        ("nebius_b200_n4", "config_DGXB200_4x8x1xtp1pp1cp1_8b_fp4.sh"),
                        ("nebius_b300_n1", "config_DGXB200_1x8x2xtp1pp1cp1_8b.sh")]:
        runs.append(("v5.1", "Nebius", system, "llama31_8b", f"/Nebius/benchmarks/llama31_8b/configs/{system}", cfg, LLAMA8,
                     "The config in the submission's directory for the system (configs/<system>/); conf/custom.yaml from "
                     "Nebius/benchmarks/llama31_8b.", {}, "/Nebius/benchmarks/llama31_8b"))
    # v5.1's Llama 3.1 8B: NVIDIA's FP8 runs
    for system in ["tyche_ngpu72_ngc25.09_nemo", "tyche_ngpu512_ngc25.09_nemo", "theia_ngpu72_ngc25.09_nemo",
                   "theia_ngpu512_ngc25.09_nemo"]:
        runs.append(("v5.1", "NVIDIA", system, "llama31_8b", None, None, LLAMA8, None))
    # Other submitters' FP8 runs of the same implementation; their READMEs name no config, so the
    # config is the one for the system's GPU type and shape whose MINIBS x DP gives the log's batch
    # (the node count overridden where one config serves several). Their NVFP4 configs (Dell's and
    # Lenovo's single-node ones, Oracle's 1-node one is ambiguous between FP8 and NVFP4) are left out.
    shared = "the submission's README names no config: the one for the system's GPUs whose MINIBS x DP gives the log's batch"
    for n, cfg in [(1, "config_DGXB200_1x8x2xtp1pp1cp1_8b.sh"), (2, "config_DGXB200_1x8x2xtp1pp1cp1_8b.sh"),
                   (4, "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh"), (8, "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh"),
                   (16, "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh"), (32, "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh")]:
        runs.append(("v5.1", "University-of-Florida", f"hpg.dgxb200x8.n{n}", "llama31_8b", "b200_nemo", cfg, LLAMA8,
                     f"{shared} ({n} nodes)."))
    runs += [
        ("v5.1", "Verda", "b200_8x8_ngc25.09", "llama31_8b", "b200_8x8_ngc25.09", "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh",
         LLAMA8, shared + "."),
        ("v5.1", "Oracle", "8xBM.GPU.B200.8", "llama31_8b", "/Oracle/benchmarks/llama31_8b",
         "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh", LLAMA8, shared + "."),
        ("v5.1", "Cisco", "hpf_n8", "llama31_8b", "nemo", "config_DGXH100_8x8x1xtp1pp1cp1.sh", LLAMA8, shared + "."),
        ("v5.1", "Cisco", "hpf_n16", "llama31_8b", "nemo", "config_DGXH100_16x8x1xtp2pp1cp1.sh", LLAMA8, shared + "."),
        ("v5.1", "Dell", "2xXE9680Lx8B200-SXM-180GB", "llama31_8b", "nemo",
         "config_2xXE9680Lx8B200-SXM-180GB_2x8x2xtp1pp1cp1_8b.sh", LLAMA8, "The config named for the system."),
        ("v5.1", "Dell", "2xXE9685Lx8B200-SXM-180GB", "llama31_8b", "nemo",
         "config_XE9685Lx8B200-SXM-180GB_2x8x2xtp1pp1cp1.sh", LLAMA8, "The config named for the system."),
        ("v5.1", "Dell", "1xXE9780x8B300-SXM-270GB", "llama31_8b", "nemo",
         "config_XE9780x8B300-SXM-270GB_1x8x2xtp1pp1cp1_8b.sh", LLAMA8, "The config named for the system."),
    ]
    # v6.0's DeepSeek-V3 671B: NVIDIA's MXFP8 runs on GB300 (Theia) and GB200 (Tyche-hsg), each README
    # naming its config; read from transcripts (no clone of training_results_v6.0 here).
    for system in ["theia_ngpu256_ngc26.04_nemo", "theia_ngpu512_ngc26.04_nemo", "tyche-hsg_ngpu512_ngc26.04_nemo",
                   "tyche-hsg_ngpu2048_ngc26.04_nemo", "tyche-hsg_ngpu4096_ngc26.04_nemo",
                   "tyche-hsg_ngpu8192_ngc26.04_nemo"]:
        runs.append(("v6.0", "NVIDIA", system, "deepseekv3_671b", None, None, DSV3, None))
    # CoreWeave's runs of the same implementation on 2,048 to 8,192 GB300s (Spectrum-X RoCE), each
    # directory holding the one config for its nodes.
    for system in ["CoreWeave_GB300_512x4", "CoreWeave_GB300_1024x4", "CoreWeave_GB300_2048x4"]:
        runs.append(("v6.0", "CoreWeave", system, "deepseekv3_671b", None, None, DSV3, None))
    # Google's run of it on 256 GB200s (4 NVLink domains of 16 nodes, RoCE between racks).
    runs.append(("v6.0", "Google", "gb200_nvl72_n64_ngc26.04_nemo", "deepseekv3_671b", None, None, DSV3, None))
    # AMD's implementation (NeMo 2 on ROCm) and its partners' runs of it: each partner's own copy of
    # AMD's config where it holds one; Cisco's tree holds none for its MI350X, so AMD's.
    amd = "AMD/benchmarks/llama31_8b/implementations"
    amd_runs = [
        ("v5.1", "AMD", "MI355X_EPYC_9575F_pytorch", "llama31_8b",
         f"{amd}/MI355X_EPYC_9575F_pytorch_llama3_8b/config_MI355X_1x8x1_8b.sh", ""),
        ("v5.1", "AMD", "MI350X_EPYC_9575F_pytorch", "llama31_8b",
         f"{amd}/MI350X_EPYC_9575F_pytorch_llama3_8b/config_MI350X_1x8x1_8b.sh", ""),
        ("v5.1", "Dell", "XE9785L_8xMI355X", "llama31_8b",
         "Dell/benchmarks/llama31_8b/implementations/AMD/config_MI355X_1x8x1_8b.sh", "Dell's copy of AMD's implementation."),
        ("v5.1", "GigaComputing", "G893-ZX1-AAX4_pytorch", "llama31_8b",
         "GigaComputing/benchmarks/llama31_8b/implementations/MI355X/nemo/config_MI355X_1x8x1_8b.sh",
         "GigaComputing's copy of AMD's implementation."),
        ("v5.1", "Supermicro", "8xMI355X_2xEPYC_9575F", "llama31_8b",
         "Supermicro/benchmarks/llama31_8b/implementations/8xMI355X_2xEPYC_9575F/config_MI355X_1x8x1_8b.sh",
         "Supermicro's copy of AMD's implementation."),
        ("v5.1", "Cisco", "1xC885A_M8-8xMI350X-OAM-288GB", "llama31_8b",
         f"{amd}/MI350X_EPYC_9575F_pytorch_llama3_8b/config_MI350X_1x8x1_8b.sh",
         "Cisco's submission holds no implementation for its MI350X run; AMD's MI350X config, whose batch the log prints."),
    ]
    # A version without a mirror keeps what the output files hold for it.
    old_records, old_launches = [], {}
    try:
        with open(args.out) as f:
            old_records = json.load(f)
        with open(args.launch) as f:
            old_launches = json.load(f)["runs"]
    except (OSError, ValueError, KeyError):
        pass
    records, launches, kept = [], {}, set()

    def add(rec, launch):
        records.append(rec)
        launches[rec["id"]] = launch
        print(f"{rec['id']:60s} {rec['hardware']['count']:6d} GPUs  {rec['measured']['tokens_per_s_per_gpu']:9.2f} tokens/s/GPU  "
              f"step {rec['measured']['iteration_time_s']:.3f} s  {rec['measured']['other']['per_result_file_tokens_per_s_per_gpu']}",
              file=sys.stderr)

    def keep(version):
        if version in kept:
            return
        kept.add(version)
        prefix = f"mlperf-{version.replace('.', '')}-"
        held = [r for r in old_records if r["id"].startswith(prefix)]
        print(f"{version}: no --mirror, kept {len(held)} records from {args.out}", file=sys.stderr)
        for r in held:
            records.append(r)
            launches[r["id"]] = old_launches[r["id"]]

    for version, submitter, system, bench, impl, config, model, notes, *extra in runs:
        if version in transcripts:
            add(*transcript_record_for(transcripts[version], version, submitter, system, bench, model, notes or ""))
            continue
        if version not in repos:
            keep(version)
            continue
        repo = repos[version]
        commit = git(repo, "rev-parse", "HEAD").strip()
        add(*record_for(repo, version, commit, submitter, system, bench, impl, config, model,
                        notes or "", extra[0] if extra else {}, extra[1] if len(extra) > 1 else None))
    for version, submitter, system, bench, cfg_path, notes in amd_runs:
        if version not in repos:
            keep(version)
            continue
        repo = repos[version]
        commit = git(repo, "rev-parse", "HEAD").strip()
        add(*amd_record_for(repo, version, commit, submitter, system, bench, cfg_path, LLAMA8_AMD, notes))
    with open(args.out, "w") as f:
        f.write(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    launch_doc = {
        "source": "MLPerf Training results (github.com/mlcommons/training_results_v3.1 ... v6.0): the config_*.sh and "
                  "NeMo configs of each submission's implementation directory, at the commit each run names (v6.0: "
                  "read from tests/data/validation/sources/mlperf_v6.0/, each transcript naming where it was read)",
        "notes": "Written by scripts/mlperf_corpus.py. recompute, tp_comm_overlap and cuda_graph from the run's config; "
                 "overlap_grad_reduce / overlap_param_gather and grad_reduce_in_fp32 from its optimizer config "
                 "(AMD's implementation: its src/train.py's DistributedDataParallelConfig).",
        "runs": launches,
    }
    with open(args.launch, "w") as f:
        f.write(json.dumps(launch_doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
