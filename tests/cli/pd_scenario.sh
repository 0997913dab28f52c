#!/usr/bin/env bash
# One shipped P/D scenario end to end (docs/pd.md): `kvsim run` succeeds, writes its outputs,
# every request finishes, and a second run writes byte-identical files (same seed ⇒ same
# outputs). Usage: pd_scenario.sh KVSIM SCENARIO.yaml WORKDIR
set -u
kvsim=$1; scenario=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL $(basename "$scenario"): $*"; exit 1; }
"$kvsim" run "$scenario" -o "$work/a" > "$work/a.txt" 2>&1 || { cat "$work/a.txt"; fail "exit $?"; }
"$kvsim" run "$scenario" -o "$work/b" > "$work/b.txt" 2>&1 || fail "second run failed"
if [ -f "$work/a/summary.csv" ]; then
  rows=$(tail -n +2 "$work/a/summary.csv" | wc -l)
  [ "$rows" -ge 2 ] || fail "sweep wrote $rows rows"
  grep -q ",error" "$work/a/summary.csv" && fail "a sweep point failed"
  files=$(cd "$work/a" && find . -type f | sort)
else
  [ -f "$work/a/metrics.json" ] && [ -f "$work/a/requests.csv" ] || fail "missing outputs"
  grep -q '"unfinished": 0' "$work/a/metrics.json" || fail "unfinished requests"
  grep -q "KV transfer:" "$work/a.txt" || fail "no summary printed"
  files=$(cd "$work/a" && find . -type f | sort)
fi
# provenance.json records how each run ran (command line, host, start and wall time): only
# those keys may differ.
run_keys='"(command_line|host|started_utc|wall_s)"'
for f in $files; do
  if [ "$(basename "$f")" = provenance.json ]; then
    diff <(grep -vE "$run_keys" "$work/a/$f") <(grep -vE "$run_keys" "$work/b/$f") > /dev/null \
      || fail "$f differs between two runs beyond its run keys"
    continue
  fi
  cmp -s "$work/a/$f" "$work/b/$f" || fail "$f differs between two runs"
done
echo "ok   $(basename "$scenario"): $(echo "$files" | wc -l) files, deterministic"
