#!/usr/bin/env bash
# `make screenshots`: regenerates the committed kvsim-viz screenshots under docs/ (the README
# shows docs/page_map.png). Renders under xvfb-run with Mesa's software OpenGL, so it works
# on a machine without a display.
#   bash scripts/screenshots.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
viz="$build/bin/kvsim-viz"
if [ ! -x "$viz" ]; then
  echo "screenshots: $viz is not built (cmake --build $build --target kvsim-viz)" >&2
  exit 2
fi
if ! command -v xvfb-run > /dev/null; then
  echo "screenshots: needs xvfb-run (apt-get install xvfb xauth)" >&2
  exit 2
fi
viz="$(realpath "$viz")"
cd "$(dirname "$0")/.."
mkdir -p docs
shot() {
  local out=$1
  shift
  xvfb-run -a -s "-screen 0 1600x900x24" "$viz" --size 1600x900 --screenshot "$out" "$@"
}
# Default scenario: pack 1 (NHD) beside pack 4, one token highlighted in both, the mouse
# over a cell of side A so the tooltip shows its coordinates and KvLayout::offset.
shot docs/page_map.png --panel page_map --mouse 560,430
shot docs/plan.png --panel plan
# Padded mixed page sizes: MiMo-style target + DFlash-style draft at TP 4.
shot docs/page_map_mimo_padding.png --panel page_map --set model.preset=mimo-style \
  --set parallel.tp=4
