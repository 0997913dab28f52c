#!/usr/bin/env bash
# The checked build (issue 12 §5), in its own build directory so the normal build keeps its
# flags and ccache hits: AddressSanitizer + UndefinedBehaviorSanitizer (-DKVSIM_SANITIZE=ON,
# gcc). Builds kvsim, core_tests, sim_tests and calibrate_tests and runs every unit and
# scenario test of theirs (CTest label `sanitize`); any sanitizer report fails the test.
# scripts/fuzz.sh then fuzzes the parsers against the same libraries.
# Usage: scripts/sanitize.sh [BUILD_DIR] [JOBS]        (default build-sanitize, nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-sanitize}; jobs=${2:-$(nproc)}
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B "$dir" -G Ninja -DKVSIM_SANITIZE=ON -DKVSIM_ENABLE_CUDA=OFF -DKVSIM_BUILD_VIZ=OFF \
  -DKVSIM_BUILD_BENCH=OFF > /dev/null
cmake --build "$dir" -j "$jobs" --target kvsim core_tests sim_tests calibrate_tests cli_tests
# Leaks are reported too; UBSan stops at the first report (-fno-sanitize-recover).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$dir"
# The kernels' host tests, the viewer, benchmarks and Slurm are not part of this build.
ctest --output-on-failure -j "$jobs" -L sanitize -LE "gpu|bench|slurm|viz" -E "^kernels"
