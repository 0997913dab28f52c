#!/usr/bin/env bash
# Input that used to crash, hang or print silent numbers (issue 12 §2), as a user gives it:
# every case exits with the documented code, names what is wrong, and never aborts.
# Usage: robustness_test.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/kvsim_robust.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"  # check, expect

small="--set sweep={} --set workload.num_requests=20"

# --- --json errors quoting bytes that are not UTF-8 ---------------------------------------
out=$("$kvsim" layout --json --set "model.preset=$(printf 'qw\xff\xfeen')" 2>/dev/null); rc=$?
if [ $rc -eq 2 ] && python3 -c 'import json,sys; j=json.loads(sys.stdin.buffer.read()); assert j["error"]' <<<"$out"; then
  echo "ok   --json error with invalid UTF-8 is a JSON object, exit 2"
else
  echo "FAIL --json error with invalid UTF-8 (exit $rc)"; echo "$out" | head -5; fail=1
fi

# --- YAML aliases -----------------------------------------------------------------------------
printf 'include: []\nmodel: &m\n  preset: qwen3.5-35b-a3b\n  again: *m\n' > "$work/self.yaml"
expect "self-referencing YAML alias" 2 "self.yaml:4: model.again:|cycle" "$kvsim" run "$work/self.yaml"
{
  echo 'model: {preset: qwen3.5-35b-a3b}'
  echo 'x0: &x0 [a, a, a, a, a, a, a, a, a, a]'
  for i in 1 2 3 4 5 6 7 8 9; do
    printf 'x%d: &x%d [*x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d]\n' \
      $i $i $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1))
  done
} > "$work/laughs.yaml"
expect "billion laughs YAML" 2 "laughs.yaml:|aliases" "$kvsim" layout "$work/laughs.yaml"

# --- Huge trace sizes: replay, run --------------------------------------------------------------
for n in 1000000000000 9223372036854775807 4294967296; do
  printf '{"hash_ids": [1], "input_length": %s}\n' $n > "$work/big_$n.jsonl"
  expect "replay input_length $n" 2 "big_$n.jsonl:1: 'input_length'" \
    "$kvsim" replay "$work/big_$n.jsonl" --block-size 16 --num-blocks 100
  expect "replay --skip-bad-lines input_length $n" 0 "1 bad lines skipped" \
    "$kvsim" replay "$work/big_$n.jsonl" --block-size 16 --num-blocks 100 --skip-bad-lines
  expect "run trace input_length $n" 2 "big_$n.jsonl:1: 'input_length'|max_model_len" \
    "$kvsim" run --set sweep={} --set "workload={kind: trace, trace: {path: $work/big_$n.jsonl}}"
  printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,%s,10\n' $n > "$work/big_$n.csv"
  expect "run azure ContextTokens $n" 2 "big_$n.csv:2: ContextTokens: $n is above" \
    "$kvsim" run --set sweep={} --set "workload={kind: trace, trace: {path: $work/big_$n.csv}}"
done
# With a model, its max_model_len bounds replay prompts too.
printf '{"hash_ids": [1, 2], "input_length": 1000}\n' > "$work/mml.jsonl"
printf 'model: {preset: llama-3.1-8b, max_model_len: 999}\n' > "$work/mml.yaml"
expect "replay bounded by the scenario's max_model_len" 2 "mml.jsonl:1: 'input_length' = 1000 is above 999" \
  "$kvsim" replay "$work/mml.jsonl" --block-size 16 --num-blocks 100 --scenario "$work/mml.yaml"


# --- An unbounded synthetic workload is refused -----------------------------------------------
expect "num_requests 0 without a limit" 2 "workload.num_requests: 0 (no cap)" \
  "$kvsim" run --set sweep={} --set workload.num_requests=0
expect "num_requests 0 with duration_s" 0 "requests finished" \
  "$kvsim" run --set sweep={} --set workload.num_requests=0 --set workload.duration_s=0.5

# --- Every request rejected: say why, n/a, exit 1 ----------------------------------------------
expect "all rejected: max_model_len" 1 "20 of 20 requests rejected|prompt ≥ max_model_len 2009|n/a" \
  "$kvsim" run $small --set model.max_model_len=2009
expect "all rejected: token budget, chunked prefill off" 1 \
  "20 of 20 requests rejected|above the token budget 256 with chunked prefill off|n/a" \
  "$kvsim" run $small --set scheduler.max_num_batched_tokens=256 --set scheduler.enable_chunked_prefill=false \
  --set "workload.prompt_tokens={dist: fixed, mean: 1000, min: 1000, max: 1000}"
out=$("$kvsim" run $small --set model.max_model_len=2009 2>/dev/null)
grep -q "0.0%" <<<"$out" && { echo "FAIL all rejected: the table shows 0.0%"; fail=1; } || echo "ok   all rejected: no 0.0% in the table"

# --- A missing trace is an error unless the scenario allows the synthetic fallback -----------
expect "missing trace, required by default" 2 "cannot find trace" \
  "$kvsim" run --set sweep={} --set "workload={kind: trace, trace: {path: no_such_trace.jsonl}}"
expect "missing trace, required: false" 0 "using the synthetic shared_prefix generator" \
  "$kvsim" run --set sweep={} \
  --set "workload={kind: trace, num_requests: 20, trace: {path: no_such_trace.jsonl, required: false}}"

# --- --set on a swept key fixes that axis, and says so -----------------------------------------
out=$("$kvsim" run --set workload.num_requests=20 --set cache.attn_pack_size=2 2>"$work/err"); rc=$?
rows=$(grep -c "cache.attn_pack_size=" <<<"$out")
if [ $rc -eq 0 ] && [ "$rows" -eq 0 ] && grep -q "cache.attn_pack_size is swept (4 values); --set fixes it to 2" "$work/err" &&
   grep -q " 528 " <<<"$out"; then
  echo "ok   --set on a swept key runs one point at that value (block 528) and says so"
else
  echo "FAIL --set on a swept key (exit $rc, $rows sweep rows)"; echo "$out"; cat "$work/err"; fail=1
fi
expect "sweep --count with --set on a swept key" 0 "1" \
  "$kvsim" sweep "$root/scenarios/default.yaml" --set cache.attn_pack_size=4 --count

# --- layout flags are range-checked like --set -----------------------------------------------
expect "layout --tp 0" 2 "parallel.tp" "$kvsim" layout --tp 0
expect "layout --tp -2" 2 "parallel.tp" "$kvsim" layout --tp -2
expect "layout --block-size -1" 2 "cache.block_size" "$kvsim" layout --block-size -1
expect "layout --attn-pack-size 0" 2 "cache.attn_pack_size" "$kvsim" layout --attn-pack-size 0
expect "layout --attn-pack-size -3" 2 "cache.attn_pack_size" "$kvsim" layout --attn-pack-size -3
expect "layout --attn-pack-size 4" 0 "attention block:  272 tokens" "$kvsim" layout --attn-pack-size 4

# --- -o DIR reproduces itself; a DIR of another scenario is refused ----------------------------
# reproduce NAME ARGS...: run ARGS -o A, rerun A/scenario.resolved.yaml -o B, same results.
reproduce() {
  local name=$1; shift
  local a="$work/repro_$name.a" b="$work/repro_$name.b"
  if ! "$kvsim" run "$@" -o "$a" >/dev/null 2>&1 ||
     ! "$kvsim" run "$a/scenario.resolved.yaml" -o "$b" >/dev/null 2>&1; then
    echo "FAIL reproduce $name: a run failed"; fail=1; return
  fi
  if [ ! -s "$a/provenance.json" ] || [ ! -s "$a/scenario.resolved.yaml" ]; then
    echo "FAIL reproduce $name: no provenance"; fail=1; return
  fi
  if diff -r -x provenance.json -x scenario.resolved.yaml "$a" "$b" >/dev/null &&
     diff <(grep -v '^#' "$a/scenario.resolved.yaml") <(grep -v '^#' "$b/scenario.resolved.yaml") >/dev/null; then
    echo "ok   reproduce $name: rerunning scenario.resolved.yaml gives byte-identical outputs"
  else
    echo "FAIL reproduce $name"; diff -r "$a" "$b" | head -10; fail=1
  fi
}
reproduce default --set workload.num_requests=20 --set cache.attn_pack_size=4
reproduce default_sweep --set workload.num_requests=20
reproduce pd "$root/scenarios/pd_qwen35_hybrid_pack.yaml" --set workload.num_requests=20
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["overrides"]==["workload.num_requests=20","cache.attn_pack_size=4"] and len(j["scenario_hash"])==16 and j["kvsim_version"]' \
  "$work/repro_default.a/provenance.json" && echo "ok   provenance.json: overrides, hash, version" \
  || { echo "FAIL provenance.json"; fail=1; }
expect "-o DIR of another scenario refused" 2 "holds the results of another" \
  "$kvsim" run --set workload.num_requests=21 --set sweep={} -o "$work/repro_default.a"
expect "-o DIR of another scenario with --force" 0 "hit rate" \
  "$kvsim" run --set workload.num_requests=21 --set sweep={} -o "$work/repro_default.a" --force
expect "kvsim --version" 0 "kvsim 0." "$kvsim" --version

# --- A write that fails exits 4 and leaves no zero-byte file ------------------------------------
mkdir -p "$work/full"
( trap '' XFSZ; ulimit -f 0; "$kvsim" run $small -o "$work/full" >/dev/null 2>&1 ); rc=$?
left=$(find "$work/full" -type f -size 0 | wc -l)
if [ $rc -eq 4 ] && [ "$left" -eq 0 ]; then
  echo "ok   a failed write exits 4 and leaves no zero-byte file"
else
  echo "FAIL failed write: exit $rc, $left zero-byte files"; find "$work/full" -type f; fail=1
fi

# --- kvsim list names the sweep keys and the per-pool cluster keys ------------------------------
expect "list: sweep and per-pool keys" 0 "sweep.zip|cluster.{prefill,decode}.cache.attn_pack_size|cluster.{prefill,decode}.parallel.tp" \
  "$kvsim" list

# --- SIGINT stops a sweep between points: finished points kept, exit 130, rerun continues -----
# One seed per point: the default study now runs 10, which under ASan outlasts the timeout.
d="$work/sigint"
"$kvsim" sweep "$root/scenarios/default.yaml" --set workload.num_requests=8000 --seeds 1 -o "$d" -j 1 \
  > /dev/null 2> "$work/sigint.err" &
pid=$!
for _ in $(seq 600); do  # until the first point is journaled (2 header lines + 1 row)
  [ -f "$d/sweep.csv.journal" ] && [ "$(wc -l < "$d/sweep.csv.journal")" -ge 3 ] && break
  sleep 0.1
done
kill -INT $pid; wait $pid; rc=$?
rows=$(($(wc -l < "$d/sweep.csv.journal") - 2))
if [ $rc -eq 130 ] && grep -q "interrupted: $rows of 4 points done" "$work/sigint.err" && [ $rows -ge 1 ] &&
   [ $rows -lt 4 ]; then
  echo "ok   SIGINT stops the sweep after $rows of 4 points, exit 130"
else
  echo "FAIL SIGINT: exit $rc, $rows rows"; cat "$work/sigint.err"; fail=1
fi
expect "rerun after SIGINT finishes the sweep" 0 "resuming, $rows of 4 points already done" \
  "$kvsim" sweep "$root/scenarios/default.yaml" --set workload.num_requests=8000 --seeds 1 -o "$d" -j 2

# --- replay says when a model's plan replaces --block-size --------------------------------------
expect "replay --scenario overriding --block-size says so" 0 \
  "the scenario's KV cache plan sets the block to 1056 tokens; --block-size 16 is not used" \
  "$kvsim" replay "$root/scenarios/traces/sample_tokens.jsonl" --block-size 16 --num-blocks 200 \
  --scenario "$root/scenarios/default.yaml"

# --- run and layout share one validation --------------------------------------------------------
expect "layout refuses a pool of 2^30 blocks or more, as run does" 2 "cache.kv_memory_bytes" \
  "$kvsim" layout --set cache.kv_memory_bytes=100000TiB
expect "run refuses a pool of 2^30 blocks or more" 2 "cache.kv_memory_bytes" \
  "$kvsim" run --set sweep={} --set cache.kv_memory_bytes=100000TiB
expect "layout refuses a missing required trace, as run does" 2 "cannot find trace" \
  "$kvsim" layout --set "workload={kind: trace, trace: {path: no_such.jsonl}}"

# --- A P/D point that rejects every request says so and exits 1 ---------------------------------
expect "P/D: every request rejected" 1 "20 of 20 requests rejected" \
  "$kvsim" run "$root/scenarios/pd_qwen35_hybrid_pack.yaml" --set workload.num_requests=20 \
  --set "cluster.decode.cache={kv_memory_bytes: 40MiB}"

exit $fail
