#!/usr/bin/env bash
# `meshplan export --check` over the plans in scripts/export-plans/, against each framework's own
# validation in a Python that has PyTorch 2.x (the GPU machine's; no GPU is used), with the
# frameworks' source trees at the commits the exporters target:
#
#   scripts/export-check-session.sh MESHPLAN SRC_DIR OUT_DIR
#
# SRC_DIR/py holds megatron/ (Megatron-LM d98e8a64), torchtitan/ (238fa99, the TOML exporter's) and
# deepspeed/ (edaa72212); SRC_DIR/py-tt-new holds torchtitan/ at b5bcd76c6 (the Python exporter's).
# Made with `git archive <commit> <dir> | tar -x` from each repository. One line per plan and
# framework in OUT_DIR/export_check.tsv (plan, framework, exit code, the checker's line); exports and
# checker output in OUT_DIR/export_check.log.
set -u
meshplan=$1
src=$(cd "$2" && pwd)
out=$3
mkdir -p "$out"
: >"$out/export_check.tsv"
python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__)" | tee "$out/export_check.log"
for plan in scripts/export-plans/*.json; do
  for fw in megatron deepspeed torchtitan torchtitan-py; do
    pp="$src/py"
    [ "$fw" = torchtitan-py ] && pp="$src/py-tt-new"
    result=$(PYTHONPATH="$pp" timeout 120 "$meshplan" export --plan "$plan" --to "$fw" --check 2>&1)
    rc=$?
    {
      echo "=== $plan $fw rc=$rc"
      echo "$result"
    } >>"$out/export_check.log"
    line=$(echo "$result" | grep -i "check" | tail -1)
    [ -z "$line" ] && line=$(echo "$result" | tail -1)
    printf '%s\t%s\t%s\t%s\n' "$(basename "$plan" .json)" "$fw" "$rc" "$line" | tee -a "$out/export_check.tsv"
  done
done
