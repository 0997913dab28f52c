#!/usr/bin/env bash
# kvsim schedule as a user runs it. Usage: schedule_smoke.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
req=$root/scenarios/traces/sample_requests.jsonl
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"  # check NAME EXPECTED_RC CMD...
flags=(--num-gpu-blocks 40 --max-num-batched-tokens 64)
check "sync" 0 "$kvsim" schedule "$req" "${flags[@]}" --step-log "$tmp/sync.jsonl"
check "async priority classic" 0 "$kvsim" schedule "$req" "${flags[@]}" --async-scheduling \
  --policy priority --vllm-semantics classic --step-log "$tmp/async.jsonl"
check "unchunked, no caching" 0 "$kvsim" schedule "$req" --num-gpu-blocks 60 \
  --max-num-batched-tokens 256 --no-chunked-prefill --no-enable-prefix-caching
# One record per step, then the summary; steps are increasing.
steps=$(grep -c '"step":' "$tmp/sync.jsonl")
tail -n 1 "$tmp/sync.jsonl" | grep -q "\"summary\": true, \"steps\": $steps," ||
  { echo "FAIL summary does not count the $steps records"; fail=1; }
grep -o '"step": [0-9]*' "$tmp/sync.jsonl" | awk '{print $2}' | sort -n -c ||
  { echo "FAIL steps out of order"; fail=1; }
# Same input, same log (determinism).
"$kvsim" schedule "$req" "${flags[@]}" --step-log "$tmp/again.jsonl" > /dev/null
cmp -s "$tmp/sync.jsonl" "$tmp/again.jsonl" || { echo "FAIL two runs differ"; fail=1; }
# --json prints the summary object.
"$kvsim" schedule "$req" "${flags[@]}" --json | grep -q '"per_request"' ||
  { echo "FAIL --json summary"; fail=1; }
# Bad input: exit 2 naming file, line and key; a request that never fits is bad input too.
printf '{"id": "a", "tokens": [1, 2], "max_tokens": 2}\n{"id": "b", "tokens": [1], "max_tokens": 0}\n' \
  > "$tmp/bad.jsonl"
check "bad max_tokens" 2 "$kvsim" schedule "$tmp/bad.jsonl" --num-gpu-blocks 10
out=$("$kvsim" schedule "$tmp/bad.jsonl" --num-gpu-blocks 10 2>&1)
echo "$out" | grep -q 'bad.jsonl:2: max_tokens' || { echo "FAIL not named: $out"; fail=1; }
printf '{"id": "a", "tokens": [1, 2], "max_tokens": 2}\n{"id": "a", "tokens": [3], "max_tokens": 1}\n' \
  > "$tmp/dup.jsonl"
check "duplicate id" 2 "$kvsim" schedule "$tmp/dup.jsonl" --num-gpu-blocks 10
check "missing file" 2 "$kvsim" schedule /nonexistent.jsonl --num-gpu-blocks 10
check "no blocks flag" 2 "$kvsim" schedule "$req"
check "bad policy" 2 "$kvsim" schedule "$req" --num-gpu-blocks 10 --policy lifo
check "never fits" 2 "$kvsim" schedule "$req" --num-gpu-blocks 4
exit $fail
