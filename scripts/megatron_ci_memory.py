#!/usr/bin/env python3
"""Measured per-GPU memory peaks from Megatron-LM's functional-test golden values.

Reads a Megatron-LM git repository (no work tree needed) at one commit and writes one record per
(test case, platform) in the format of shared/validation/memory_measured.json:
  tests/functional_tests/test_cases/{gpt,moe}/<case>/model_config.yaml   the launch arguments
  tests/functional_tests/test_cases/{gpt,moe}/<case>/golden_values_dev_<platform>.json
      "mem-max-allocated-bytes": torch.cuda.max_memory_allocated() on the last global rank
      (Megatron's training.py logs it to the TensorBoard writer, rank world_size - 1)
  tests/test_utils/recipes/<platform family>/{gpt,moe}.yaml               nodes x gpus

Each record carries the translated model as a meshplan model spec (model.spec) next to the
arguments it came from (source.model_args), the commit that last touched the golden values and
the config as it stood then (the run that produced them; a later config edit is not what ran).
A case is left out, with the reason printed to stderr, when it uses something meshplan does not
model (see SKIP_ARGS) or that this translation does not read.

Usage: scripts/megatron_ci_memory.py --repo /path/to/Megatron-LM.git [--commit REV] [--exclude DATASET] -o FILE
(needs git and PyYAML: Debian python3-yaml)
"""
import argparse
import json
import math
import subprocess
import sys

import yaml

CASES = "tests/functional_tests/test_cases"
# Platform of a golden-values file -> (GPU as the records name it, recipe files listing its cases).
PLATFORMS = {
    "dgx_h100": ("NVIDIA H100 80GB SXM (DGX H100)", ["h100/gpt.yaml", "h100/moe.yaml"]),
    "dgx_a100": ("NVIDIA A100 80GB SXM (DGX A100)", ["h100/gpt.yaml", "h100/moe.yaml"]),
    "dgx_gb200": ("NVIDIA GB200 (GB200 NVL72)", ["gb200/gpt.yaml", "gb200/moe.yaml"]),
}
# Arguments whose memory meshplan does not model, or that this translation does not read.
SKIP_ARGS = {
    "--fp8-format": "FP8 weights and activations",
    "--fp4-format": "FP4",
    "--enable-cuda-graph": "CUDA graphs (static memory pools)",
    "--cuda-graph-impl": "CUDA graphs (static memory pools)",
    "--external-cuda-graph": "CUDA graphs (static memory pools)",
    "--cpu-offloading": "activation offloading",
    "--fine-grained-activation-offloading": "activation offloading",
    "--optimizer-cpu-offload": "optimizer offloading",
    "--use-precision-aware-optimizer": "low-precision optimizer states",
    "--multi-latent-attention": "MLA (not translated here)",
    "--mtp-num-layers": "multi-token prediction layers",
    "--decoder-first-pipeline-num-layers": "uneven pipeline split",
    "--decoder-last-pipeline-num-layers": "uneven pipeline split",
    "--pipeline-model-parallel-layout": "custom pipeline layout",
    "--account-for-embedding-in-pipeline-split": "uneven pipeline split",
    "--account-for-loss-in-pipeline-split": "uneven pipeline split",
    "--num-distributed-optimizer-instances": "partial distributed optimizer",
    "--hybrid-override-pattern": "hybrid (Mamba) layers",
    "--heterogeneous-layers-config-path": "heterogeneous layers",
    "--moe-use-upcycling": "upcycling",
    "--num-layers-at-start-in-bf16": "mixed-precision layers",
    "--overlap-moe-expert-parallel-comm": "EP overlap's extra microbatch in flight",
    "--moe-layer-recompute": "MoE-layer recomputation (not translated)",
    "--recompute-activations": "legacy selective recomputation flag (not translated)",
    "--distribute-saved-activations": "saved activations split over TP",
    "--sequence-packing": "packed sequences",
    "--spec": "a custom layer spec",
    "--yaml-cfg": "a YAML config",
    "--moe-expert-capacity-factor": "token dropping with padding",
    "--moe-router-padding-for-fp8": "FP8 padding",
    "--fp8-param-gather": "FP8 weights",
    "--export-kd-teacher-load": "knowledge distillation (a teacher model beside the student)",
    "--export-quant-cfg": "ModelOpt quantization",
}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def show(repo, rev, path):
    try:
        return git(repo, "show", f"{rev}:{path}")
    except subprocess.CalledProcessError:
        return None


def last_commit(repo, rev, path):
    out = git(repo, "log", "-1", "--format=%H %cs", rev, "--", path).split()
    return (out[0], out[1]) if out else (None, None)


def world_sizes(repo, rev):
    """(platform, case) -> GPUs from the recipes (spec nodes x gpus, or a product's own)."""
    sizes = {}
    for platform, (_, recipes) in PLATFORMS.items():
        for recipe in recipes:
            text = show(repo, rev, "tests/test_utils/recipes/" + recipe)
            if text is None:
                continue
            doc = yaml.safe_load(text)
            spec = doc.get("spec", {})
            base = int(spec.get("nodes", 1)) * int(spec.get("gpus", 8))
            for product in doc.get("products", []):
                n = int(product.get("nodes", spec.get("nodes", 1))) * int(product.get("gpus", spec.get("gpus", 8)))
                for case in product.get("test_case", []):
                    sizes.setdefault((platform, case), n if n else base)
    return sizes


def arg(args, name, default=None):
    v = args.get(name, default)
    return default if v is None else v


def flag(args, name):
    v = args.get(name, False)
    return v is True or (isinstance(v, str) and v.lower() == "true")


def padded_vocab(v, tp, divisible=128):
    m = divisible * tp
    return int(math.ceil(v / m) * m)


def translate(args, tp):
    """Megatron-LM arguments -> (meshplan model spec, notes), or (None, reason)."""
    layers = int(arg(args, "--num-layers", 0))
    hidden = int(arg(args, "--hidden-size", 0))
    heads = int(arg(args, "--num-attention-heads", 0))
    if not (layers and hidden and heads):
        return None, "no --num-layers/--hidden-size/--num-attention-heads"
    seq = int(arg(args, "--seq-length", 0))
    swiglu = flag(args, "--swiglu")
    if args.get("--squared-relu") or args.get("--activation-func") is not None:
        return None, "activation other than GELU/SwiGLU"
    ffn = arg(args, "--ffn-hidden-size")
    if ffn is None:  # megatron/training/arguments.py: 4h, or 2/3 of it rounded down to 64 with SwiGLU
        ffn = int((4 * hidden * 2 / 3) / 64) * 64 if swiglu else 4 * hidden
    kv = int(arg(args, "--num-query-groups", heads)) if flag(args, "--group-query-attention") else heads
    head_dim = int(arg(args, "--kv-channels", hidden // heads))
    # Vocabulary: --vocab-size (NullTokenizer), else the GPT-2 BPE files the CI uses (50257).
    tok = arg(args, "--tokenizer-type", "GPT2BPETokenizer")
    if arg(args, "--vocab-size") is not None:
        vocab = int(args["--vocab-size"])
    elif tok == "GPT2BPETokenizer" and args.get("--vocab-file"):
        vocab = 50257
    else:
        return None, f"tokenizer {tok} (vocabulary size not in the arguments)"
    vocab = padded_vocab(vocab, tp, int(arg(args, "--make-vocab-size-divisible-by", 128)))
    pos = arg(args, "--position-embedding-type", "learned_absolute")
    position = {"learned_absolute": "learned", "rope": "rope", "none": "none"}.get(pos)
    if position is None:
        return None, f"position embedding {pos}"
    norm = {"LayerNorm": "layernorm", "RMSNorm": "rmsnorm"}.get(arg(args, "--normalization", "LayerNorm"))
    if norm is None:
        return None, "normalization " + str(args.get("--normalization"))
    dropout = float(arg(args, "--attention-dropout", 0.1)) > 0 or float(arg(args, "--hidden-dropout", 0.1)) > 0
    bias = "none" if flag(args, "--disable-bias-linear") else "all"
    if bias == "none" and flag(args, "--add-qkv-bias"):
        bias = "qkv"
    spec = {
        "name": "megatron-ci",
        "source": "Megatron-LM functional test arguments (source.model_args)",
        "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv, "head_dim": head_dim,
        "ffn_hidden": int(ffn), "mlp": "swiglu" if swiglu else "gelu", "vocab": vocab,
        "max_seq": max(seq, int(arg(args, "--max-position-embeddings", seq) or seq)),
        "tied_embeddings": not flag(args, "--untie-embeddings-and-output-weights"),
        "position": position, "norm": norm, "bias": bias, "qk_norm": flag(args, "--qk-layernorm"),
        "attention_sinks": False, "dropout": dropout,
        "attention": "naive" if arg(args, "--transformer-impl", "transformer_engine") == "local"
        or arg(args, "--attention-backend") == "unfused" else "flash",
    }
    experts = arg(args, "--num-experts")
    if experts:
        freq = arg(args, "--moe-layer-freq", 1)
        if not isinstance(freq, int):
            return None, f"--moe-layer-freq {freq} (a pattern)"
        score = arg(args, "--moe-router-score-function", "softmax")
        shared = arg(args, "--moe-shared-expert-intermediate-size")
        spec["moe"] = {
            "experts": int(experts), "top_k": int(arg(args, "--moe-router-topk", 2)),
            "expert_ffn_hidden": int(arg(args, "--moe-ffn-hidden-size", ffn)),
            "shared_experts": 1 if shared else 0, "shared_expert_ffn_hidden": int(shared or 0),
            "first_dense_layers": 0, "layer_freq": int(freq), "router": score,
            "router_bias": flag(args, "--moe-router-enable-expert-bias"), "capacity_factor": 0,
        }
    return spec, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--exclude", action="append", default=[],
                    help="a dataset whose record ids are left out (records already kept elsewhere)")
    a = ap.parse_args()
    rev = git(a.repo, "rev-parse", a.commit).strip()
    sizes = world_sizes(a.repo, rev)
    paths = git(a.repo, "ls-tree", "-r", "--name-only", rev, CASES).split()
    records, skipped = [], []
    excluded = {r["id"] for f in a.exclude for r in json.load(open(f))}
    for path in sorted(paths):
        parts = path.split("/")
        if len(parts) != 6 or parts[3] not in ("gpt", "moe") or not parts[5].startswith("golden_values_dev_"):
            continue
        family, case, fname = parts[3], parts[4], parts[5]
        platform = fname[len("golden_values_dev_"):-len(".json")]
        if platform not in PLATFORMS:
            continue
        rid = f"megatron-ci-{case}-{platform}".replace("_", "-")
        why = lambda w: skipped.append(f"{rid}: {w}")
        if rid in excluded:
            why("already in an excluded dataset")
            continue
        gpus = sizes.get((platform, case))
        if not gpus:
            why("not in the platform's gpt/moe recipe (GPU count unknown)")
            continue
        cfg_path = f"{CASES}/{family}/{case}/model_config.yaml"
        # The config as it was when the golden values were committed: the run that produced them.
        gold_commit, gold_date = last_commit(a.repo, rev, path)
        cfg_text = show(a.repo, gold_commit, cfg_path) if gold_commit else None
        if cfg_text is None:
            why("no model_config.yaml at the golden values' commit")
            continue
        cfg = yaml.safe_load(cfg_text)
        args = cfg.get("MODEL_ARGS") or {}
        script = cfg.get("TRAINING_SCRIPT_PATH") or "pretrain_gpt.py"
        if cfg.get("TEST_TYPE") not in ("regular", "ckpt-resume") or "pretrain_gpt" not in str(script):
            why(f"test type {cfg.get('TEST_TYPE')} / {script}")
            continue
        bad = [f"{k} ({v})" for k, v in SKIP_ARGS.items() if k in args and args[k] not in (False, None, "false")]
        if bad:
            why("uses " + "; ".join(bad))
            continue
        if arg(args, "--optimizer", "adam") != "adam":
            why("optimizer " + str(args["--optimizer"]))
            continue
        cfg_commit, _ = last_commit(a.repo, gold_commit, cfg_path)
        golden = json.loads(show(a.repo, rev, path))
        mem = golden.get("mem-max-allocated-bytes", {}).get("values", {})
        if not mem:
            why("no mem-max-allocated-bytes")
            continue
        last_step = max(mem, key=lambda s: int(s))
        peak = max(float(v) for v in mem.values())
        tp = int(arg(args, "--tensor-model-parallel-size", 1))
        pp = int(arg(args, "--pipeline-model-parallel-size", 1))
        cp = int(arg(args, "--context-parallel-size", 1))
        ep = int(arg(args, "--expert-model-parallel-size", 1))
        # Megatron's expert TP defaults to TP (for the experts only; dense layers have none).
        etp = int(arg(args, "--expert-tensor-parallel-size", tp)) if args.get("--num-experts") else 1
        if gpus % (tp * pp * cp):
            why(f"{gpus} GPUs not divisible by tp*pp*cp")
            continue
        dp = gpus // (tp * pp * cp)
        spec, reason = translate(args, tp)
        if spec is None:
            why(reason)
            continue
        spec["name"] = rid
        fsdp = flag(args, "--use-megatron-fsdp") or flag(args, "--use-torch-fsdp2")
        zero = 3 if fsdp else 1 if flag(args, "--use-distributed-optimizer") else 0
        gran = arg(args, "--recompute-granularity")
        recompute = {"full": "full", "selective": "selective", None: "none"}.get(gran)
        parallel = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "etp": etp, "zero_stage": zero,
                    "fsdp": None, "recompute": recompute, "sequence_parallel": flag(args, "--sequence-parallel"),
                    "vpp": None, "notes": ""}
        if gran == "full":
            method = arg(args, "--recompute-method", "uniform")
            layers_n = int(arg(args, "--recompute-num-layers", 1))
            if method == "block":
                parallel["recompute_num_layers"] = layers_n
            elif layers_n != 1:
                why(f"uniform recomputation in groups of {layers_n} layers")
                continue
        if gran == "selective" and args.get("--recompute-modules"):
            mods = args["--recompute-modules"]
            parallel["recompute_modules"] = mods.split() if isinstance(mods, str) else list(mods)
        vl = arg(args, "--num-layers-per-virtual-pipeline-stage")
        if vl:
            per_stage = spec["layers"] // pp
            if per_stage % int(vl):
                why("virtual stages do not divide the layers")
                continue
            parallel["vpp"] = per_stage // int(vl)
        elif arg(args, "--num-virtual-stages-per-pipeline-rank"):
            parallel["vpp"] = int(args["--num-virtual-stages-per-pipeline-rank"])
        # The loss: --cross-entropy-loss-fusion takes --cross-entropy-fusion-impl (default native,
        # model_parallel_config.py); unfused, Megatron's in-place vocab_parallel_cross_entropy.
        if flag(args, "--cross-entropy-loss-fusion"):
            impl = arg(args, "--cross-entropy-fusion-impl", "native")
            parallel["cross_entropy"] = "native" if impl == "native" else "te"
        # --defer-embedding-wgrad-compute keeps the output layer's logits gradients of the first
        # --wgrad-deferral-limit microbatches (0: all of them) until the step's end.
        if flag(args, "--defer-embedding-wgrad-compute"):
            limit = int(arg(args, "--wgrad-deferral-limit", 0))
            per_pipeline = int(arg(args, "--global-batch-size", 1)) // (int(arg(args, "--micro-batch-size", 1)) * dp)
            parallel["deferred_head_wgrad"] = limit if limit > 0 else per_pipeline
        notes = []
        if arg(args, "--transformer-impl", "transformer_engine") == "local":
            notes.append("local impl (Megatron-Core local spec, unfused attention)")
        if arg(args, "--attention-backend") == "unfused":
            notes.append("attention-backend unfused")
        parallel["notes"] = "; ".join(notes)
        precision = "fp16" if flag(args, "--fp16") else "bf16" if flag(args, "--bf16") else "fp32"
        if precision == "fp32":
            why("fp32 training")
            continue
        mbs = int(arg(args, "--micro-batch-size", 1))
        gbs = int(arg(args, "--global-batch-size", mbs * dp))
        keep = {k: v for k, v in args.items() if not str(v).startswith("${") and not k.startswith("--log")}
        records.append({
            "id": rid,
            "source": {
                "repo": "NVIDIA/Megatron-LM", "path": path, "config_path": cfg_path, "commit": gold_commit,
                "config_commit": cfg_commit, "read_at": rev, "table": "functional-test golden values",
                "row": case, "model_args": keep,
                "url": f"https://github.com/NVIDIA/Megatron-LM/tree/{rev}/{CASES}/{family}/{case}",
            },
            "kind": "ci_golden_values",
            "model": {"name": f"Megatron CI {family} test model ({case})", "layers": spec["layers"],
                      "hidden": spec["hidden"], "heads": spec["heads"], "seq_len": int(arg(args, "--seq-length")),
                      "spec": spec},
            "hardware": {"gpu": PLATFORMS[platform][0], "count": gpus},
            "parallel": parallel,
            "microbatch": mbs, "global_batch": gbs, "seq_len": int(arg(args, "--seq-length")),
            "precision": precision,
            "measured": {
                "peak_allocated_gib": round(peak / 2**30, 4),
                "reserved_gib": None,
                "metric": "torch.cuda.memory_stats allocated_bytes.all.peak (Megatron \"mem-max-allocated-bytes\", cumulative since process start)",
                "value_as_printed": f"{int(peak)} bytes (maximum over the logged steps; last step {last_step})",
                "which_rank": "last global rank (world_size-1): the TensorBoard writer rank, i.e. last PP stage, last TP/DP rank",
            },
            "derived_fields": ["parallel.dp", "model.spec"],
            "confidence": "high",
            "notes": f"Generated by scripts/megatron_ci_memory.py from {path} at {rev[:12]}; {gpus} GPUs from the recipe.",
        })
    with open(a.output, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    for s in skipped:
        print("skipped " + s, file=sys.stderr)
    print(f"{len(records)} records, {len(skipped)} skipped", file=sys.stderr)


if __name__ == "__main__":
    main()
