#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/: scenario YAML, model/hardware presets,
# token/Mooncake JSONL, Azure CSV) with Debian's clang, -fsanitize=fuzzer,address,undefined,
# in the checked build directory scripts/sanitize.sh configures, and runs each for SECONDS
# from its seed corpus (CTest label `fuzz`). A crash, sanitizer report, hang (>10 s per
# input) or accepted invalid input fails.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR] [JOBS]   (default 45, build-sanitize)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-45}; dir=${2:-build-sanitize}; jobs=${3:-$(nproc)}
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DKVSIM_SANITIZE=ON -DKVSIM_FUZZ=ON \
  -DKVSIM_ENABLE_CUDA=OFF -DKVSIM_BUILD_VIZ=OFF -DKVSIM_BUILD_BENCH=OFF \
  -DKVSIM_FUZZ_SECONDS="$seconds" > /dev/null
cmake --build "$dir" -j "$jobs" --target fuzz_scenario fuzz_preset fuzz_trace_jsonl fuzz_azure_csv
cd "$dir"
ctest --output-on-failure -V -L fuzz | grep -E "inputs in|ERROR|ACCEPTED|SUMMARY|tests passed|Failed|reproducers"
