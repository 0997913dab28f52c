#!/usr/bin/env bash
# Golden outputs of the shipped scenarios: every scenarios/*.yaml (and the built-in default)
# run with the fast settings of tests/cli/scenario_run.sh, its printed table and every file
# of `-o DIR` kept under tests/golden/NAME/. They guard refactors: a change that moves a
# number must regenerate them in its own commit and say why in the commit message.
#
# Usage: scripts/golden.sh regen KVSIM [NAME...]   rewrite tests/golden/NAME (all by default)
#        scripts/golden.sh check KVSIM NAME        compare one scenario (the CTest test)
# NAME is a scenario file's stem (validation/STEM for scenarios/validation/, the measured runs
# scripts/validation_scenarios.py writes), or builtin_default.
set -u
mode=$1; kvsim=$(realpath "$2"); shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
golden=$root/tests/golden

run_one() {  # NAME OUTDIR: writes OUTDIR/stdout.txt and OUTDIR/out/*
  local name=$1 out=$2 file=""
  [ "$name" != builtin_default ] && file=$root/scenarios/$name.yaml
  local sets=(--set workload.num_requests=60)
  # A JSONL trace is swapped for the shipped 60-line sample (the full one may not be in the
  # clone); an Azure CSV trace (the validation runs' own, shipped) is read as it is.
  if [ -n "$file" ] && grep -q "kind: trace" "$file" && ! grep -q "format: azure" "$file"; then
    sets+=(--set workload.trace.path=mooncake_conversation_head60.jsonl)
  fi
  mkdir -p "$out"
  # Run from the repository root with a relative scenario path so that paths printed or
  # recorded do not depend on where the clone lives.
  (cd "$root" && "$kvsim" run ${file:+scenarios/$name.yaml} "${sets[@]}" -o "$out/out" \
     > "$out/stdout.raw" 2>&1)
  local rc=$?
  # provenance.json names the kvsim version (git describe), which changes with every commit.
  rm -f "$out/out/provenance.json"
  # Wall-clock time and the output folder are the only lines that may differ between runs.
  grep -v "wall)\|outputs in" "$out/stdout.raw" > "$out/stdout.txt"
  echo "exit $rc" >> "$out/stdout.txt"
  rm -f "$out/stdout.raw"
}

names() {
  echo builtin_default
  for f in "$root"/scenarios/*.yaml; do basename "$f" .yaml; done
  for f in "$root"/scenarios/validation/*.yaml; do echo "validation/$(basename "$f" .yaml)"; done
}

case $mode in
  regen)
    list=("$@"); [ ${#list[@]} -eq 0 ] && mapfile -t list < <(names)
    for n in "${list[@]}"; do
      rm -rf "${golden:?}/$n"; run_one "$n" "$golden/$n"; echo "golden: wrote tests/golden/$n"
    done ;;
  check)
    n=$1; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
    [ -d "$golden/$n" ] || { echo "FAIL no golden output for $n (scripts/golden.sh regen)"; exit 1; }
    run_one "$n" "$work/$n"
    if ! diff -r "$golden/$n" "$work/$n" > "$work/diff.txt"; then
      echo "FAIL $n differs from tests/golden/$n (if intended: scripts/golden.sh regen KVSIM $n,"
      echo "     and say why in the commit message)"; head -40 "$work/diff.txt"; exit 1
    fi
    echo "ok   $n equals tests/golden/$n" ;;
  *) echo "usage: golden.sh regen|check KVSIM [NAME...]" >&2; exit 2 ;;
esac
