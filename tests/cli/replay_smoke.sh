#!/usr/bin/env bash
# kvsim replay as a user runs it. Usage: replay_smoke.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
tok=$root/scenarios/traces/sample_tokens.jsonl
moon=$root/scenarios/traces/mooncake_conversation_head60.jsonl
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"  # check NAME EXPECTED_RC CMD...
check "tokens" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 200
check "mooncake" 0 "$kvsim" replay "$moon" --block-size 512 --cache-tokens 200000
check "hybrid swa" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid swa:128
check "hybrid mamba" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid mamba-align
check "classic" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --vllm-semantics classic
check "concurrency" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --concurrency 4
check "model" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 3000 --model llama-3.1-8b
check "curve" 0 "$kvsim" replay "$tok" --block-size 16 --curve
check "retention null" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid swa:128 --prefix-cache-retention-interval null
check "retention 64" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid mamba-all --prefix-cache-retention-interval 64
check "retention bad" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid mamba-all --prefix-cache-retention-interval -3
check "retention not a block multiple" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid mamba-all --prefix-cache-retention-interval 40
check "retention classic" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid mamba-all --vllm-semantics classic --prefix-cache-retention-interval 0
out=$("$kvsim" replay "$tok" --block-size 16 --num-blocks 300 --hybrid swa:128 --json --prefix-cache-retention-interval null)
echo "$out" | grep -q '"prefix_cache_retention_interval": null' || { echo "FAIL retention null not reported: $out"; fail=1; }
check "no capacity" 2 "$kvsim" replay "$tok" --block-size 16
check "bad hybrid" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 10 --hybrid swa:x
check "missing trace" 2 "$kvsim" replay /nonexistent.jsonl --block-size 16 --num-blocks 10
printf '{"tokens":[1,2,3]}\n{"tokens":[1,\n{"tokens":[4]}\n' > "$tmp/bad.jsonl"
check "bad line" 2 "$kvsim" replay "$tmp/bad.jsonl" --block-size 16 --num-blocks 10
out=$("$kvsim" replay "$tmp/bad.jsonl" --block-size 16 --num-blocks 10 2>&1)
echo "$out" | grep -q 'bad.jsonl:2:' || { echo "FAIL bad line not named: $out"; fail=1; }
check "skip bad lines" 0 "$kvsim" replay "$tmp/bad.jsonl" --block-size 16 --num-blocks 10 --skip-bad-lines
# --json summary keys; --per-request lines.
out=$("$kvsim" replay "$tok" --block-size 16 --num-blocks 200 --json --per-request "$tmp/pr.jsonl")
for k in requests prompt_tokens hit_tokens hit_rate blocks_per_s; do
  echo "$out" | grep -q "\"$k\"" || { echo "FAIL json key $k missing"; fail=1; }
done
[ "$(wc -l < "$tmp/pr.jsonl")" -eq 120 ] || { echo "FAIL per-request line count"; fail=1; }
head -1 "$tmp/pr.jsonl" | grep -q '"id":"r0","prompt_tokens":' || { echo "FAIL per-request form"; fail=1; }
# --concurrency 1 equals the default mode.
a=$("$kvsim" replay "$tok" --block-size 16 --num-blocks 150 --json | grep hit_tokens)
b=$("$kvsim" replay "$tok" --block-size 16 --num-blocks 150 --json --concurrency 1 | grep hit_tokens)
[ "$a" = "$b" ] || { echo "FAIL concurrency 1 differs: $a vs $b"; fail=1; }
# The curve's header and a row.
"$kvsim" replay "$tok" --block-size 16 --curve | head -1 | grep -qx 'capacity_blocks,hit_tokens,hit_rate' \
  || { echo "FAIL curve header"; fail=1; }
# A CPU offloading tier: the tiny trace of tests/sim/replay_offload_test.cc (r0, r1 evicting r0
# from a 3-block GPU cache, r0 again): r2 loads r0's two blocks from the CPU.
{ for f in 0 1000 0; do printf '{"tokens":['; seq -s, $f $((f+39)) | tr -d '\n'; printf ']}\n'; done; } > "$tmp/tiny.jsonl"
check "offload" 0 "$kvsim" replay "$tmp/tiny.jsonl" --block-size 16 --num-blocks 4 --num-cpu-blocks 8
out=$("$kvsim" replay "$tmp/tiny.jsonl" --block-size 16 --num-blocks 4 --num-cpu-blocks 8 --json)
for kv in '"gpu_hit_tokens": 0' '"cpu_hit_tokens": 32' '"total_hit_tokens": 32' '"cpu_blocks_stored": 4'; do
  echo "$out" | grep -q "$kv" || { echo "FAIL offload json: $kv missing in $out"; fail=1; }
done
"$kvsim" replay "$tmp/tiny.jsonl" --block-size 16 --num-blocks 4 --num-cpu-blocks 8 \
  | grep -q 'gpu hit tokens 0  cpu hit tokens 32  total 32' || { echo "FAIL offload text"; fail=1; }
check "offload arc obs" 0 "$kvsim" replay "$tok" --block-size 16 --num-blocks 200 --num-cpu-blocks 500 \
  --offload-block-size 64 --eviction-policy arc --store-threshold 2
check "offload obs not a multiple" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 200 \
  --num-cpu-blocks 50 --offload-block-size 24
check "offload flags without tier" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 200 \
  --eviction-policy arc
check "offload mamba align" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 300 \
  --hybrid mamba-align --num-cpu-blocks 50
"$kvsim" list | grep -q 'cache.offload.num_cpu_blocks' || { echo "FAIL list lacks cache.offload"; fail=1; }
printf 'name: off\nmodel: {preset: llama-3.1-8b}\ncache:\n  offload: {num_cpu_blocks: 500, eviction_policy: arc}\n' > "$tmp/off.yaml"
"$kvsim" replay "$tok" --block-size 16 --num-blocks 200 --scenario "$tmp/off.yaml" \
  | grep -q 'CPU tier: 500 blocks of 16 tokens, arc' || { echo "FAIL scenario cache.offload"; fail=1; }
check "scenario offload plus flags" 2 "$kvsim" replay "$tok" --block-size 16 --num-blocks 200 \
  --scenario "$tmp/off.yaml" --store-threshold 2
printf 'name: off\nmodel: {preset: llama-3.1-8b}\ncache:\n  num_gpu_blocks: 2000\n  offload: {num_cpu_blocks: 500}\nworkload: {kind: multi_turn, num_requests: 20}\n' > "$tmp/offrun.yaml"
check "run with cache.offload" 0 "$kvsim" run "$tmp/offrun.yaml"
"$kvsim" run "$tmp/offrun.yaml" | grep -q 'CPU hit' || { echo "FAIL run table lacks the CPU tier"; fail=1; }
check "offload curve" 2 "$kvsim" replay "$tok" --block-size 16 --curve --num-cpu-blocks 50
exit $fail
