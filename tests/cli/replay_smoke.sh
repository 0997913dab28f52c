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
exit $fail
