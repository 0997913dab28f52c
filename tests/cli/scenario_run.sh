#!/usr/bin/env bash
# Runs one shipped scenario with fast settings (few requests, the first two sweep points
# are enough to show the table) and checks that two runs write byte-identical outputs.
# Usage: scenario_run.sh KVSIM [SCENARIO_FILE]   (no file: the built-in default)
set -u
kvsim=$1; file=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sets=(--set workload.num_requests=60)
if [ -n "$file" ] && grep -q "kind: trace" "$file"; then
  # The sample head of the Mooncake trace is built in; the real one may be absent here.
  sets+=(--set workload.trace.path=mooncake_conversation_head60.jsonl)
fi
for run in a b; do
  if ! "$kvsim" run $file "${sets[@]}" -o "$work/$run" --trace "$work/$run/trace.json" \
       > "$work/$run.txt" 2>&1; then
    echo "FAIL kvsim run $file"; cat "$work/$run.txt"; exit 1
  fi
done
cat "$work/a.txt"
# (P/D cluster scenarios write the same kinds of files: metrics.json, requests.csv, the trace)
# provenance.json records how each run ran (command line, host, start and wall time): only
# those keys may differ.
run_keys='"(command_line|host|started_utc|wall_s)"'
if [ -d "$work/a" ] && { ! diff -r -x provenance.json "$work/a" "$work/b" > /dev/null ||
     ! diff <(grep -vE "$run_keys" "$work/a/provenance.json") \
            <(grep -vE "$run_keys" "$work/b/provenance.json") > /dev/null; }; then
  echo "FAIL outputs differ between two runs with the same seed"; diff -r "$work/a" "$work/b" | head; exit 1
fi
# Wall-clock time and the output folder (outputs in, traces:) are the only lines allowed to differ.
if ! diff <(grep -v "wall)\|outputs in\|kvsim: traces:" "$work/a.txt") <(grep -v "wall)\|outputs in\|kvsim: traces:" "$work/b.txt") > /dev/null; then
  echo "FAIL the printed table differs between two runs"; exit 1
fi
# A P/D cluster scenario prints its setup; an engine scenario prints the table.
grep -q "hit rate\|prefill" "$work/a.txt" || { echo "FAIL no table in the output"; exit 1; }
echo "ok   $file deterministic"
