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
kvsim="$(realpath "$build/bin/kvsim")"
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
shot docs/page_map_mimo_padding.png scenarios/mimo_dflash_padding.yaml --panel page_map
# The block pool after the built-in sample trace, on the padded MiMo plan with a smaller pool.
shot docs/block_pool.png scenarios/mimo_dflash_padding.yaml --panel block_pool \
  --set cache.num_gpu_blocks=20000 --trace scenarios/traces/sample_tokens.jsonl
# The default study's sweep (attention pack size 1/2/4/8), run now: a few seconds.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvsim" sweep scenarios/default.yaml -o "$tmp/sweep" -j 2 > /dev/null 2>&1
shot docs/sweep.png --panel sweep --sweep "$tmp/sweep/sweep.csv"
# P/D disaggregation: the prefill pool's pages (NHD, 64-token blocks, TP 4) beside the decode
# pool's (HND, 16-token blocks, TP 2), the same token highlighted in both.
shot docs/page_map_pd.png scenarios/pd_nhd64_tp4_hnd16_tp2.yaml --panel page_map
