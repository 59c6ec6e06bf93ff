#!/usr/bin/env python3
"""BigScience's BLOOM sizing runs of 2022-02-25 to 02-28 as throughput records.

Reads train/tr11-176B-ml/chronicles-prequel.md at a commit of a bigscience-workshop/bigscience
git directory (`fetch` gives one) and writes every table row of the sections "GBS Variations",
"Another round of NHEADS", "Batchsize Warmup", "Re-do" and "Rebalancing layers" that prints a
Sec/it as a record of tests/data/validation/bloom_prequel_2202.json's format, judged on Sec/it.
The earlier rows of that file (02-21 to 02-24) are kept as they are; this script replaces only
the records it writes (ids bloom-2022-prequel-0225- to -0228-).

  scripts/bloom_prequel_corpus.py --repo /work/.mirror/bigscience-workshop+bigscience/repo \
      --out tests/data/validation/bloom_prequel_2202.json

What each record derives, and why, is in its `derived` field:
  * precision: fp16 with DeepSpeed's ZeRO-1 (16-bit gradients) before 02-28, bf16 with the
    BF16_Optimizer from 02-28 on: the "Rebalancing layers" section, "from now on the testing is
    happening with BF16 optimizer that was just written to accumulate gradients in fp32 ... this
    is compared to fp16 which grad accumulates in fp16";
  * the pipeline partition: 'type:transformer' (the embeddings beside the end stages' layers)
    until the sections that name 'type:transformer|embed(ding)' (the 02-27 106-layer table and
    "Rebalancing layers"), where each embedding takes a layer's slot; 78 layers over PP 12 as the
    file states it ("78/12=6.5 - so the last stage has 1 block, while the rest have 7");
  * heads: the row's NHEADS column, else the section's "NHEADS=64"; the one row whose heads no
    header prints (12,288 x 96 layers at TP 1, PP 48) is left out;
  * seq 2048, vocabulary 250,880, full activation checkpointing and ZeRO-1, as the 02-21 to 02-24
    records derive them.
"""
import argparse
import json
import re
import subprocess
import sys

COMMIT = "9e64edec2ad1fb9263bf39ba616a84ff64b4d947"
PATH = "train/tr11-176B-ml/chronicles-prequel.md"
SECTIONS = ["GBS Variations", "Another round of NHEADS", "Batchsize Warmup", "Re-do", "Rebalancing layers"]


def header_of(line, current):
    """The model a section's header line names (hidden, layers, heads, partition), or None."""
    h = re.search(r"\bN?HIDDEN=(\d+)", line)
    l = re.search(r"\bNLAYERS=(\d+)", line)
    if not (h or l):
        return None
    out = {k: v for k, v in current.items() if k != "heads"}  # a new model: its heads are its own
    if h:
        out["hidden"] = int(h.group(1))
    if l:
        out["layers"] = int(l.group(1))
    out["header"] = line.strip()
    out["embed_slots"] = "transformer|embed" in line
    return out


def rows(text):
    """(section, header, columns, cells) for every table row of the sections read."""
    section, header, cols = None, {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("## "):
            section = line[3:].strip() if line[3:].strip() in SECTIONS else None
            header, cols = {}, None
            continue
        if section is None:
            continue
        m = re.fullmatch(r"N?(HIDDEN|LAYERS|HEADS)=(\d+)", line)
        if m:  # the GBS Variations section prints NLAYERS / NHIDDEN / NHEADS on lines of their own
            key = {"HIDDEN": "hidden", "LAYERS": "layers", "HEADS": "heads"}[m.group(1)]
            header = dict(header, **{key: int(m.group(2))})
            header["header"] = (header.get("header", "") + " " + line).strip()
            continue
        nh = header_of(line, header) if not line.startswith("|") else None
        if nh is not None:
            header, cols = nh, None
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == "Nodes":
            cols = cells
            continue
        if cols is None or set("".join(cells)) <= set("-: "):
            continue
        yield section, dict(header), cols, cells, line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True, help="bigscience-workshop/bigscience git directory")
    ap.add_argument("--out", required=True, help="bloom_prequel_2202.json to update")
    args = ap.parse_args()
    text = subprocess.run(["git", "-C", args.repo, "show", f"{COMMIT}:{PATH}"], check=True, capture_output=True,
                          text=True).stdout
    made, skipped, seen = [], [], {}
    for section, header, cols, cells, line in rows(text):
        if len(cells) != len(cols):
            skipped.append((line, "columns do not match the table's header"))
            continue
        row = dict(zip(cols, cells))
        sec = row.get("Sec/it", "")
        if not re.fullmatch(r"\d+(\.\d+)?", sec):
            continue  # out of memory or not run: no throughput (the memory corpus judges the OOM rows)
        date = row["Notes"]
        if not re.fullmatch(r"02-2[5-8]", date):
            skipped.append((line, f"date {date!r} outside 02-25..02-28"))
            continue
        heads = int(row["NHEADS"]) if "NHEADS" in row else header.get("heads")
        if heads is None:
            skipped.append((line, "no NHEADS printed for its section's model"))
            continue
        hidden, layers = header["hidden"], header["layers"]
        dp, tp, pp, mbs, gbs = (int(row[k]) for k in ("DP", "TP", "PP", "MBS", "GBS"))
        if dp * tp * pp != 384:
            skipped.append((line, f"DP x TP x PP = {dp * tp * pp}, not the 48 nodes' 384 GPUs"))
            continue
        bf16 = date == "02-28"
        base = (f"bloom-2022-prequel-{date.replace('-', '')}-h{hidden}-l{layers}-a{heads}-dp{dp}-tp{tp}-pp{pp}"
                f"-mbs{mbs}" + ("" if gbs == 2048 else f"-gbs{gbs}"))
        if any(r["id"].startswith(base) and r["measured"]["other"]["sec_per_iteration_as_printed"] == sec for r in made):
            continue  # the same run printed again (Batchsize Warmup repeats its GBS 2048 row): kept once
        seen[base] = seen.get(base, 0) + 1
        rid = base if seen[base] == 1 else f"{base}-run{seen[base]}"
        if seen[base] == 2:  # the first of a repeated layout becomes run1
            for r in made:
                if r["id"] == base:
                    r["id"] = f"{base}-run1"
        embed_slots = header.get("embed_slots") or section == "Rebalancing layers"
        parallel = {"tp": tp, "pp": pp, "dp": dp, "cp": 1, "ep": 1, "vpp": None, "zero_stage": 1, "fsdp": None,
                    "recompute": "full", "sequence_parallel": False}
        partition = ("'type:transformer|embedding' (each embedding a layer's slot: the header names it)"
                     if embed_slots else "'type:transformer' (the embeddings beside the end stages' layers)")
        if not embed_slots and layers % pp:
            if (layers, pp) != (78, 12):
                skipped.append((line, f"{layers} layers over PP {pp} under 'type:transformer' not stated"))
                continue
            parallel["schedule"] = "1F1B, layout Et*7|(t*7|)*10tL"
            partition += (": 7 layers on each stage and 1 on the last, as the file states it ('78/12=6.5 - so the "
                          "last stage has 1 block, while the rest have 7'), quoted in parallel.schedule")
        elif embed_slots and (layers + 2) % pp:
            skipped.append((line, f"{layers} + 2 slots over PP {pp} do not divide"))
            continue
        parallel["notes"] = ("ZeRO stage 1 and --checkpoint-activations as every tr11 script of the period sets them "
                             f"(DERIVED); pipeline partition {partition}; DP/TP/PP/MBS/GBS printed.")
        precision = ("bf16 with DeepSpeed's BF16_Optimizer (fp32 gradient accumulation): the 02-28 tables are the "
                     "'Rebalancing layers' section's, 'from now on the testing is happening with BF16 optimizer'"
                     if bf16 else
                     "fp16 with DeepSpeed's ZeRO-1 and 16-bit gradients: before the BF16_Optimizer of 02-28 ('this is "
                     "compared to fp16 which grad accumulates in fp16', the 'Rebalancing layers' section)")
        made.append({
            "id": rid,
            "source": {
                "paper": f"BigScience tr11 BLOOM-176B chronicles-prequel (github.com/bigscience-workshop/bigscience @{COMMIT[:10]})",
                "repo": "bigscience-workshop/bigscience",
                "path": PATH,
                "commit": COMMIT,
                "url": f"https://github.com/bigscience-workshop/bigscience/blob/{COMMIT}/{PATH}",
                "table": f"## {section} ({header.get('header', '')})",
                "row": line,
            },
            "kind": "table_row",
            "model": {
                "name": f"BLOOM-style GPT {row['Size']} as printed (NHIDDEN={hidden}, NLAYERS={layers}, NHEADS={heads})",
                "params_b": None, "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads,
                "ffn_hidden": 4 * hidden, "vocab": 250880, "seq_len": 2048,
                "notes": ("Megatron's GPT block (ffn 4h, GeLU, LayerNorm, learned biases); vocabulary 250,880 as the "
                          "tr11 scripts pad it; heads: " +
                          ("printed in the row's NHEADS column." if "NHEADS" in row else
                           "the section's 'NHEADS=64'.")),
            },
            "hardware": {
                "gpu": "A100 80GB", "gpu_as_printed": "A100 SXM 80GB, Jean Zay gpu_p5 (8 per node)", "count": 384,
                "peak_tflops_per_gpu_used_by_authors": None, "precision": None,
                "notes": ("Nodes column 48 x 8 GPUs; Jean Zay's A100 nodes have 4 Omni-Path links each (train/tr11-176B-ml/"
                          "README.md 'Hardware'). From 02-25: 'A100s PCI-Express/NUMA was improved today so all TFLOPs "
                          "have changed for the better (1-5%)' (the GBS Variations section), not modelled."),
            },
            "parallel": parallel,
            "microbatch": mbs,
            "global_batch": gbs,
            "global_batch_tokens": None,
            "seq_len": 2048,
            "precision": "bf16" if bf16 else "fp16",
            "optimizer": "Adam (beta2 0.95)" if bf16 else "Adam (apex FusedAdam via Megatron; beta2 0.95)",
            "measured": {
                "tflops_per_gpu": float(row["TFLOPs"]) if re.fullmatch(r"\d+(\.\d+)?", row.get("TFLOPs", "")) else None,
                "mfu_pct": None,
                "iteration_time_s": float(sec),
                "tokens_per_s_per_gpu": None,
                "other": {
                    "sec_per_iteration_as_printed": sec,
                    "tflops_as_printed": row.get("TFLOPs", ""),
                    "read_at": ("iteration 2 (the file's topology search: 'I take the snapshot of a single iteration "
                                "(always 2nd) the data isn't exact and can fluctuate a bit')"),
                    "memory_as_printed": (row.get("Mem", "") or "") +
                    " (max nvidia-smi memory of the first or last nodes; judged in tests/data/memory/published_outcomes.json "
                    "where printed)",
                },
            },
            "derived_fields": ["vocab", "seq_len", "recompute", "zero_stage", "precision"] +
                              ([] if "NHEADS" in row else ["heads"]),
            "framework": ("bigscience-workshop/Megatron-DeepSpeed + DeepSpeed big-science branch (BF16_Optimizer)" if bf16
                          else "bigscience-workshop/Megatron-DeepSpeed + DeepSpeed big-science branch (ZeRO-1, fp16)"),
            "derived": ("Printed: the row's Nodes, Size, DP, TP, PP, MBS, GBS, Mem, Sec/it, TFLOPs and date; the section "
                        "header's NHIDDEN / NLAYERS" + ("" if "NHEADS" in row else " / NHEADS") +
                        ". DERIVED: seq 2048 (every tr11 run), vocabulary 250,880, full activation checkpointing and "
                        f"ZeRO-1 (the tr11 scripts); precision {precision}; pipeline partition {partition}. Judged on "
                        "Sec/it (tokens per second per GPU = GBS x 2048 / (Sec/it x GPUs)), not on the TFLOPs column. "
                        "Written by scripts/bloom_prequel_corpus.py."),
            "confidence": "medium",
            "notes": ("A one-iteration snapshot (iteration 2) during the sizing search, not a sustained rate; the same "
                      "layout printed twice in the GBS Variations section's TP table differs by 2.8% (110.48 and "
                      "113.54 s/it)."),
        })
    with open(args.out) as f:
        corpus = json.load(f)
    keep = [r for r in corpus if not re.match(r"bloom-2022-prequel-022[5-8]", r["id"])]
    with open(args.out, "w") as f:
        f.write(json.dumps(keep + made, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(made)} records written, {len(keep)} kept", file=sys.stderr)
    for line, why in skipped:
        print(f"skipped: {why}: {line}", file=sys.stderr)


if __name__ == "__main__":
    main()
