#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from a seed corpus and reports what it did.
# Usage: run_fuzz.sh TARGET SEED_DIR SECONDS
# Exit 0 when the run ended cleanly; otherwise libFuzzer's exit code, with the reproducer
# (crash-*, timeout-*, oom-*) left in the scratch directory it prints.
set -u
target=$1 seeds=$2 seconds=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/kvsim_fuzz.XXXXXX")
mkdir -p "$work/corpus"
# -timeout: one input over 10 s is a hang; -rss_limit_mb: a runaway allocation is an OOM.
"$target" "$work/corpus" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=16384 -artifact_prefix="$work/" -print_final_stats=1 > "$work/log" 2>&1
rc=$?
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
echo "$(basename "$target"): ${runs:-?} inputs in ${seconds}s, exit $rc"
if [ $rc -ne 0 ]; then
  grep -E 'ERROR|ACCEPTED INVALID|runtime error|Test unit written|SUMMARY' "$work/log" | head -20
  echo "reproducers and log kept in $work"
  exit $rc
fi
rm -rf "$work"
