#!/usr/bin/env bash
# `pip install .` offline, as the README shows it: Debian's pip and setuptools install the
# module into a fresh target directory with no package index (--no-index fails on any fetch),
# and kvsim imports from there and runs. KVSIM_CMAKE_BUILD_DIR points setup.py at the build
# tree ctest runs in, so the extension is not compiled a second time (setup.py builds its
# `_kvsim` target there, which is up to date after `make`).
# Usage: pip_install.sh PYTHON SOURCE_DIR BUILD_DIR KVSIM_BIN WORK_DIR
set -eu
py=$1; src=$2; build=$3; kvsim=$4; work=$5
rm -rf "$work"; mkdir -p "$work"
KVSIM_CMAKE_BUILD_DIR=$build "$py" -m pip install --no-index --no-build-isolation --no-deps \
  --no-cache-dir --disable-pip-version-check --target "$work/site" "$src"
# The installed files are the build tree's module: the same extension and package files.
for f in "$build"/python/kvsim/*; do
  [ -f "$f" ] || continue
  cmp "$f" "$work/site/kvsim/$(basename "$f")" || { echo "FAIL: $(basename "$f") differs"; exit 1; }
done
# Imported from the target directory (not the build tree, not the source tree), it runs
# and prints what the CLI prints.
cd "$work"
trace=$src/scenarios/traces/sample_tokens.jsonl
"$kvsim" replay "$trace" --block-size 16 --num-blocks 200 > cli.txt
PYTHONPATH=$work/site "$py" - "$work/site" "$trace" cli.txt <<'PY'
import pathlib, sys
import kvsim
site, trace, cli = sys.argv[1:]
assert pathlib.Path(kvsim.__file__).resolve().parent == pathlib.Path(site, "kvsim").resolve(), kvsim.__file__
r = kvsim.replay(trace, num_blocks=200, block_size=16)
assert r.text == pathlib.Path(cli).read_text(), (r.text, pathlib.Path(cli).read_text())
plan = kvsim.layout(set={"cache.attn_pack_size": 8})
assert plan["attn_block_size"] == 144, plan["attn_block_size"]
print("pip install: kvsim", kvsim.__version__, "from", kvsim.__file__)
PY
