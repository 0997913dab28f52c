#!/usr/bin/env bash
# A bounded fuzz run of every input parser (tests/fuzz/: scenario YAML, model/hardware
# presets, Hugging Face config.json, token/Mooncake JSONL, Azure CSV, `kvsim schedule`
# requests). Each target is linked
# with the mutation fuzzer tests/fuzz/mutate_main.cc against a build's libraries — by default
# the ASan + UBSan build of scripts/sanitize.sh, and then with the same sanitizers — and runs
# N mutated inputs from its seed corpus. A crash, a sanitizer report or an accepted invalid
# input fails (the input is kept in BUILD_DIR/fuzz/mutate-crash); the slowest input's time is
# printed (hangs).
# (-DKVSIM_FUZZ=ON builds the same targets for clang's libFuzzer; see tests/fuzz/CMakeLists.txt.)
# Usage: scripts/fuzz.sh [N_PER_TARGET] [BUILD_DIR]      (default 20000, build-sanitize)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}; build=${2:-build-sanitize}
san=()
if grep -q "KVSIM_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
fi
out=$build/fuzz; mkdir -p "$out"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in fuzz_scenario fuzz_preset fuzz_trace_jsonl fuzz_azure_csv fuzz_step_requests \
         fuzz_hf_config; do
  if [ ! -x "$out/$t" ] || [ "$out/$t" -ot "$build/sim/libkvsim_sim.a" ] ||
     [ "$out/$t" -ot "tests/fuzz/$t.cc" ] || [ "$out/$t" -ot tests/fuzz/mutate_main.cc ]; then
    g++ -std=c++20 -O2 -g "${san[@]}" -I. "tests/fuzz/$t.cc" tests/fuzz/mutate_main.cc -o "$out/$t" \
      "$build/sim/libkvsim_sim.a" "$build/core/libkvsim_core.a" -lfmt -lyaml-cpp -lxxhash -lcrypto -lpthread
  fi
  (cd "$out" && timeout 1200 ./"$t" "$OLDPWD/tests/fuzz/corpus/$t" "$n" 1 | sed "s/^/$t: /") || {
    echo "$t: FAILED (the input is in $out/mutate-crash)"; exit 1; }
done
