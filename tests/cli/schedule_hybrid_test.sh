#!/usr/bin/env bash
# kvsim schedule on hybrid KV caches (issue 28 §4): --hybrid mamba-align / swa:W, and
# --scenario FILE, in both vLLM profiles. The expected step tables are worked by hand below.
# Usage: schedule_hybrid_test.sh KVSIM
set -u
kvsim=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
prompt=$(python3 -c "print(list(range(1, 101)))")

# --- Mamba (align) beside full attention, 16-token blocks, 200 blocks (199 usable) ---------
# A and B share a 100-token prompt, max_tokens 1, both waiting at step 0.
# step 0: the align split stops A's chunk at 96 (the last block boundary it can cache a state
#         at); 6 full-attention blocks + 1 Mamba state block: 199 - 7 = 192 free. B's lookup
#         now hits 96 tokens, but on a state cached in this very step: it waits a step.
# step 1: A's last 4 tokens and B's 4 after its 96-token hit. A: +1 full-attention block and
#         +1 Mamba block (its state at 100); B shares A's 6 blocks and the state at 96, and
#         takes +1 full-attention and +1 Mamba block: 192 - 4 = 188. Both sample their token.
printf '{"id": "A", "tokens": %s, "max_tokens": 1}\n{"id": "B", "tokens": %s, "max_tokens": 1}\n' \
  "$prompt" "$prompt" > "$tmp/mamba.jsonl"
cat > "$tmp/mamba.want" <<'JSON'
{"step": 0, "scheduled": [["A", 96, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 192, "new": ["A"], "resumed": [], "running": 1, "waiting": 1, "num_scheduled_tokens": 96}
{"step": 1, "scheduled": [["A", 4, 96, -1], ["B", 4, 96, 96]], "preempted": [], "finished": ["A", "B"], "num_free_blocks": 188, "new": ["B"], "resumed": [], "running": 2, "waiting": 0, "num_scheduled_tokens": 8}
JSON
for sem in classic latest; do
  "$kvsim" schedule "$tmp/mamba.jsonl" --hybrid mamba-align --block-size 16 --num-gpu-blocks 200 \
    --max-num-batched-tokens 512 --max-num-seqs 8 --vllm-semantics $sem \
    --step-log "$tmp/mamba.$sem.log" > "$tmp/mamba.$sem.out" 2>&1 ||
    { echo "FAIL mamba $sem: exit $?"; cat "$tmp/mamba.$sem.out"; fail=1; }
  grep -v '"summary"' "$tmp/mamba.$sem.log" | diff "$tmp/mamba.want" - ||
    { echo "FAIL mamba $sem: step log differs from the hand-worked table"; fail=1; }
  grep -q "(full_attention + mamba)" "$tmp/mamba.$sem.out" ||
    { echo "FAIL mamba $sem: the printout does not name the groups"; fail=1; }
done

# --- a 32-token sliding window beside full attention, 16-token blocks, 40 blocks (39) -------
# A: 100-token prompt, 3 outputs; B: the same prompt, 1 output, arriving at step 4.
# step 0: A's 100 tokens: 7 blocks in each group, 39 - 14 = 25 free.
# step 1: with 100 computed, tokens before 100 - 32 + 1 = 69 are out of the window: the
#         sliding-window blocks 0-3 (tokens 0-63) are freed: 29. Token 101 needs no new block.
# step 2: the same (70 - 1 = 69 still in block 4); A samples its third token and finishes.
# step 3: nothing arrives, nothing runs: no record.
# step 4: B hits 96 tokens in both groups: full attention's 6 cached blocks, and the window's
#         blocks 4-5 (its blocks 0-3 are the null block); +1 block in each group. In use: 7
#         full-attention + 3 sliding-window blocks: 39 - 10 = 29.
printf '{"id": "A", "tokens": %s, "max_tokens": 3}\n{"id": "B", "tokens": %s, "max_tokens": 1, "arrival_step": 4}\n' \
  "$prompt" "$prompt" > "$tmp/swa.jsonl"
cat > "$tmp/swa.want" <<'JSON'
{"step": 0, "scheduled": [["A", 100, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 25, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 100}
{"step": 1, "scheduled": [["A", 1, 100, -1]], "preempted": [], "finished": [], "num_free_blocks": 29, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1}
{"step": 2, "scheduled": [["A", 1, 101, -1]], "preempted": [], "finished": ["A"], "num_free_blocks": 29, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1}
{"step": 4, "scheduled": [["B", 4, 96, 96]], "preempted": [], "finished": ["B"], "num_free_blocks": 29, "new": ["B"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 4}
JSON
# The same cache from a scenario: a model with one full-attention and one 32-token
# sliding-window layer of the same page size plans exactly these two groups.
cat > "$tmp/swa.yaml" <<'YAML'
name: swa_schedule
model:
  name: toy_swa
  layers:
    - {type: full_attention, num_kv_heads: 8, head_size: 128}
    - {type: sliding_window, num_kv_heads: 8, head_size: 128, sliding_window: 32}
cache: {block_size: 16, num_gpu_blocks: 40}
scheduler: {max_num_batched_tokens: 8192, max_num_seqs: 256}
YAML
for sem in classic latest; do
  "$kvsim" schedule "$tmp/swa.jsonl" --hybrid swa:32 --block-size 16 --num-gpu-blocks 40 \
    --vllm-semantics $sem --step-log "$tmp/swa.$sem.log" > "$tmp/swa.$sem.out" 2>&1 ||
    { echo "FAIL swa $sem: exit $?"; cat "$tmp/swa.$sem.out"; fail=1; }
  grep -v '"summary"' "$tmp/swa.$sem.log" | diff "$tmp/swa.want" - ||
    { echo "FAIL swa $sem: step log differs from the hand-worked table"; fail=1; }
  "$kvsim" schedule "$tmp/swa.jsonl" --scenario "$tmp/swa.yaml" --set cache.vllm_semantics=$sem \
    --step-log "$tmp/swa.scn.$sem.log" > "$tmp/swa.scn.$sem.out" 2>&1 ||
    { echo "FAIL swa --scenario $sem: exit $?"; cat "$tmp/swa.scn.$sem.out"; fail=1; }
  cmp -s "$tmp/swa.$sem.log" "$tmp/swa.scn.$sem.log" ||
    { echo "FAIL swa --scenario $sem: differs from --hybrid swa:32"; diff "$tmp/swa.$sem.log" "$tmp/swa.scn.$sem.log" | head; fail=1; }
done

# --- bad input: exit 2 with a message naming the flag or key -------------------------------
"$kvsim" schedule "$tmp/swa.jsonl" --hybrid swa:x --num-gpu-blocks 40 > "$tmp/bad1" 2>&1
[ $? = 2 ] && grep -q -- "--hybrid" "$tmp/bad1" || { echo "FAIL --hybrid swa:x"; cat "$tmp/bad1"; fail=1; }
"$kvsim" schedule "$tmp/swa.jsonl" --scenario "$tmp/swa.yaml" --block-size 32 > "$tmp/bad2" 2>&1
[ $? = 2 ] && grep -q -- "--block-size: the scenario gives" "$tmp/bad2" ||
  { echo "FAIL --scenario with --block-size"; cat "$tmp/bad2"; fail=1; }
"$kvsim" schedule "$tmp/swa.jsonl" --scenario "$tmp/swa.yaml" --set scheduler.max_num_seqs=0 > "$tmp/bad3" 2>&1
[ $? = 2 ] && grep -q "scheduler.max_num_seqs: 0 is out of range" "$tmp/bad3" || { echo "FAIL a bad --set"; cat "$tmp/bad3"; fail=1; }
[ $fail = 0 ] && echo "ok: hybrid step tables in both profiles, --scenario equals --hybrid"
exit $fail
