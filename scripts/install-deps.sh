#!/usr/bin/env bash
# Installs the Debian 12 (bookworm) packages meshplan needs to build, test and run.
# Idempotent and silent when everything is present: each package is checked with dpkg-query, and
# only if some are missing does it run `apt-get update` once and install just those, printing one
# line per action. Uses sudo when not root. apt's own output goes to a log, shown on failure.
#
#   scripts/install-deps.sh            # everything, the Qt 6 GUI and xvfb included
#   scripts/install-deps.sh --no-gui   # skip the Qt 6 / OpenGL / xvfb packages
#
# The CUDA toolkit and NCCL are not Debian packages here; CMake uses them from /usr/local/cuda
# when present (MESHPLAN_CUDA=AUTO).
set -euo pipefail

usage() { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0"; }

with_gui=1
for arg in "$@"; do
  case "$arg" in
    --no-gui) with_gui=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

packages=(
  build-essential g++ cmake ninja-build git pkg-config   # toolchain (CMake >= 3.25: bookworm's)
  nlohmann-json3-dev libcli11-dev libeigen3-dev libsqlite3-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev                               # libFuzzer harnesses (fuzz/, the fuzz preset)
  clang-format                                           # the format check (.clang-format, a ctest test)
  python3                                                # scripts/mutation_sweep.py (a ctest test)
)
# Qt 6.4 Widgets + Charts as find_package(Qt6 COMPONENTS Widgets Charts) needs them on Debian 12:
# bookworm names the Charts package qt6-charts-dev (there is no libqt6charts6-dev); Qt6Charts'
# CMake config requires Qt6OpenGL and Qt6OpenGLWidgets, whose configs ship in libqt6opengl6-dev
# (qt6-charts-dev does not depend on it: without it find_package(Qt6 ... Charts) fails); Qt6Gui's
# config needs OpenGL headers (libgl-dev; qt6-base-dev also pulls libglx-dev, libopengl-dev and
# libvulkan-dev). xvfb/xauth give GUI checks an X server when offscreen is not enough.
# The release presets require every one of these (MESHPLAN_GUI=ON): a missing one stops the
# configure instead of leaving the GUI out.
gui_packages=(qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-svg-dev libgl-dev xvfb xauth)
if (( with_gui )); then
  packages+=("${gui_packages[@]}")
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: dpkg-query/apt-get not found; this script supports Debian 12 only." >&2
  echo "install-deps: install by hand: ${packages[*]}" >&2
  exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
  # "install ok installed" only; "deinstall ok config-files" and unknown packages count as missing.
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done
(( ${#missing[@]} == 0 )) && exit 0

if (( EUID == 0 )); then
  as_root=(env)
elif command -v sudo >/dev/null 2>&1; then
  # Without a terminal (CI) sudo must not wait for a password nobody can type.
  if [[ -t 0 ]]; then as_root=(sudo env); else as_root=(sudo -n env); fi
else
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: not root and sudo is not installed; run this script as root." >&2
  exit 1
fi

log="$(mktemp "${TMPDIR:-/tmp}/meshplan-install-deps.XXXXXX.log")"
trap 'rm -f "$log"' EXIT
run_logged() {
  if ! "$@" >>"$log" 2>&1; then
    echo "install-deps: failed: $*" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

echo "install-deps: apt-get update (missing: ${missing[*]})"
run_logged "${as_root[@]}" DEBIAN_FRONTEND=noninteractive apt-get update
echo "install-deps: apt-get install ${missing[*]}"
run_logged "${as_root[@]}" DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
