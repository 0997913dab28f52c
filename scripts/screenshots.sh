#!/usr/bin/env bash
# `make screenshots`: regenerates every figure under docs/ (the viewer's screenshots and the
# plots) and the data each is drawn from, as docs/figures.json lists them; the validation
# scatter (40 minutes) only when named. Renders under xvfb-run with Mesa's software OpenGL,
# so it works on a machine without a display.
#   bash scripts/screenshots.sh [BUILD_DIR] [FIGURE...]
set -euo pipefail
build=${1:-build}
shift || true
if [ ! -x "$build/bin/kvsim-viz" ] || [ ! -x "$build/bin/kvsim" ]; then
  echo "screenshots: $build/bin/kvsim and kvsim-viz are not built (cmake --build $build --target kvsim kvsim-viz)" >&2
  exit 2
fi
if ! command -v xvfb-run > /dev/null; then
  echo "screenshots: needs xvfb-run (apt-get install xvfb xauth)" >&2
  exit 2
fi
build="$(realpath "$build")"
cd "$(dirname "$0")/.."
exec /usr/bin/python3 scripts/figures.py make --build "$build" "$@"
