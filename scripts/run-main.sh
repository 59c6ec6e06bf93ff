#!/usr/bin/env bash
# The one command that shows what meshplan does: installs what is missing (scripts/install-deps.sh),
# configures build/release (cmake --preset release), builds it, and prints the capacity
# report for Llama 3 70B on 64 H100s (8 DGX H100 nodes, TP 8 x PP 2 x DP 4).
#
#   scripts/run-main.sh                                   # the example above
#   scripts/run-main.sh presets list                      # any other meshplan arguments instead
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh
# Configure every time (seconds once configured): the preset's settings (GUI and MPI required)
# then reach a build folder made before they changed, and a configure that failed half-way is redone.
cmake --preset release >/dev/null  # errors still reach stderr
cmake --build --preset release --parallel "$(nproc)"

if (( $# > 0 )); then
  exec build/release/meshplan "$@"
fi
exec build/release/meshplan report --model llama3-70b --gpu h100-sxm --cluster dgx-h100 \
  --gpus 64 --tp 8 --pp 2 --dp 4 --sp --zero 1 --recompute selective --mbs 1 --gbs 512 --seq 8192
