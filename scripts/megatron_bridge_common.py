"""What scripts/megatron_bridge_cards.py and scripts/megatron_bridge_skills.py share: the mirror
argument, reading a file of the Megatron-Bridge mirror at a commit, and the unit Megatron-Bridge
logs its memory in."""
import argparse, subprocess

# Megatron-Bridge's training log prints "(after N iterations) memory (GB)": torch.cuda.memory_stats()
# bytes / 1.0e9, rounded to five significant digits (src/megatron/bridge/training/utils/train_utils.py
# report_memory, line 1263 at ffeb5a7ae8, 1204 at 600d069b82 and 067f987df0), whatever the cards and
# skills that quote it call the unit: every value they print has five significant digits (59.000, 69.344,
# 72.066, 156.85, 161.26, 62.166, 64.653, 63.639). The records hold GiB: value x GIB_PER_GB.
GIB_PER_GB = 1e9 / 2**30
LOGGED_GB = ('Megatron-Bridge logs bytes / 1.0e9 rounded to five significant digits (training/utils/train_utils.py '
             "report_memory at the run's commit)")


def mirror_args(commit):
    """--mirror (a git dir of NVIDIA-NeMo/Megatron-Bridge holding `commit`) and --out-dir."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--mirror', required=True, help='git dir of NVIDIA-NeMo/Megatron-Bridge holding %s' % commit)
    ap.add_argument('--out-dir', default='.')
    return ap.parse_args()


def git_show(mirror, commit, path):
    """The text of `path` at `commit` in the mirror."""
    return subprocess.run(['git', '--git-dir', mirror, 'show', '%s:%s' % (commit, path)], check=True,
                          capture_output=True, text=True).stdout
