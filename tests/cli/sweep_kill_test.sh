#!/usr/bin/env bash
# A sweep killed with SIGKILL mid-run and then resumed writes the same CSV as an
# uninterrupted sweep. Usage: sweep_kill_test.sh KVSIM REPO_ROOT [SCENARIO] [JOBS]
# (default scenario: tests/cli/sweep_kill.yaml, single engines; tests/cli/sweep_kill_pd.yaml
# is the P/D cluster variant). The uninterrupted sweep runs at -j 1; the killed and the
# resumed ones at -j JOBS (default 1), so with JOBS > 1 this also checks -j independence.
set -u
kvsim=$1; root=$2
scn=${3:-$root/tests/cli/sweep_kill.yaml}
jobs=${4:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$kvsim" sweep "$scn" -o "$work/full" >/dev/null 2>&1 || { echo "FAIL uninterrupted sweep"; exit 1; }
"$kvsim" sweep "$scn" -j "$jobs" -o "$work/killed" >/dev/null 2>&1 &
pid=$!
journal="$work/killed/sweep.csv.journal"
# Wait until at least two points are journaled (fingerprint + header + 2 rows).
for _ in $(seq 1 600); do
  if [ -f "$journal" ] && [ "$(wc -l < "$journal")" -ge 4 ]; then break; fi
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if [ -f "$work/killed/sweep.csv" ]; then
  echo "FAIL the sweep finished before it could be killed (make the test scenario slower)"; exit 1
fi
rows=$(($(wc -l < "$journal") - 2))
echo "killed with $rows point(s) journaled"
"$kvsim" sweep "$scn" -j "$jobs" -o "$work/killed" 2>"$work/resume.log" >/dev/null || { echo "FAIL resume"; cat "$work/resume.log"; exit 1; }
grep -q "resuming" "$work/resume.log" || { echo "FAIL resume did not use the journal"; cat "$work/resume.log"; exit 1; }
grep -q ",error" "$work/full/sweep.csv" && { echo "FAIL a point failed"; exit 1; }
if cmp -s "$work/full/sweep.csv" "$work/killed/sweep.csv"; then
  echo "ok   killed + resumed sweep CSV is identical to the uninterrupted one ($(basename "$scn"))"
else
  echo "FAIL CSVs differ"; diff "$work/full/sweep.csv" "$work/killed/sweep.csv" | head; exit 1
fi
