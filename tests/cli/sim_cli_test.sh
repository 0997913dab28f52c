#!/usr/bin/env bash
# kvsim run / sweep / merge as a user runs them: bad input exits 2 with a message and no
# numbers; --json prints one object; the default study prints its table.
# Usage: sim_cli_test.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"  # check NAME EXPECTED_RC CMD...
check_bad_input_forbids="hit rate"  # bad input prints no table
check "run default" 0 "$kvsim" run --set workload.num_requests=50
out=$("$kvsim" run --set workload.num_requests=50)
for p in 1 2 4 8; do
  echo "$out" | grep -q "cache.attn_pack_size=$p" || { echo "FAIL default table lacks pack $p"; fail=1; }
done
check "run unknown workload kind" 2 "$kvsim" run --set workload.kind=foo
check "run typo in a workload key" 2 "$kvsim" run --set workload.rate_per_sec=3
check "run bad hardware preset" 2 "$kvsim" run --set hardware.preset=H300
check "run missing hardware file" 2 "$kvsim" run --set hardware.file=/nonexistent.yaml
check "run missing required trace" 2 "$kvsim" run "$root/scenarios/mooncake_block_capacity.yaml" \
  --set workload.trace.path=/nonexistent.jsonl
check "run bad zip" 2 "$kvsim" run --set "sweep={zip: [{a: [1, 2], b: [1]}]}"
check "sweep without a file sweeps the built-in default" 0 "$kvsim" sweep --count
check "sweep bad shard" 2 "$kvsim" sweep "$root/scenarios/default.yaml" --shard 3/2
check "merge missing input" 2 "$kvsim" merge "$work/m.csv" /nonexistent.csv
printf 'point,a,status\n0,1,ok\n' > "$work/s0.csv"
printf 'point,b,status\n1,1,ok\n' > "$work/s1.csv"
check "merge different headers" 2 "$kvsim" merge "$work/m.csv" "$work/s0.csv" "$work/s1.csv"
out=$("$kvsim" run --set workload.num_requests=20 --set sweep=null --json)
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["points"][0]["summary"]["requests"]["finished"] == 20' \
  && echo "ok   run --json" || { echo "FAIL run --json"; fail=1; }
out=$("$kvsim" run --set workload.kind=foo --json); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q '"error"' && echo "ok   run --json error object" \
  || { echo "FAIL run --json error object"; fail=1; }
exit $fail
