#!/usr/bin/env bash
# kvsim schedule with the CPU tier at two edges found by random inputs: a sliding-window load
# (kv-offload.md §9) and a waiting head that can never be admitted while a loaded request
# behind it holds blocks. The expected values are worked by hand below.
# Usage: schedule_offload_edges_test.sh KVSIM
set -u
kvsim=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
field() {  # field STEP KEY < LOG: the JSON value of KEY in the record of STEP
  python3 -c "import json,sys
for l in sys.stdin:
    d = json.loads(l)
    if d.get('step') == int(sys.argv[1]): print(json.dumps(d[sys.argv[2]]))" "$1" "$2"
}

# --- a sliding-window group's load reads only the blocks after its null blocks -------------
# Full attention + a 2-token window, 1-token blocks, GPU prefix caching off (every hit comes
# from the CPU tier), 8 CPU blocks (LRU), copies reported with their step's output, sync.
# step 0: A [1,2,3,4] prefills and finishes; its 8 blocks (4 per group) are stored: CPU full.
# step 1: P [1,2,3,4,9]: A's stores are still in flight, so the lookup is deferred.
# step 2: P hits 4 tokens (capped at 5 - 1). The window group computes token 4 from tokens
#         3-4: its blocks 0-2 are null and only block 3 is loaded: [0,1,2,3] + [3]. (Loading
#         window blocks 0-2 would pin CPU blocks no lookup checked.) 39 - 4 - 1 = 34 free.
# step 3: P computes token 4 and stores its block 4 in both groups; 2 evictions. [latest] the
#         step-2 lookup touched the full group's keys and window keys from 4 - 2 = 2 on, so
#         the window group's A#0 and A#1 are the least recent: evicted, oldest first.
# step 4: Q [1,2,3,4,7] still hits 4: the full group's 0-3 are there, and the window scan
#         from the end finds 3 and 2. It loads [0,1,2,3] + [3].
printf '%s\n' '{"id": "A", "tokens": [1,2,3,4], "max_tokens": 1}' \
  '{"id": "P", "tokens": [1,2,3,4,9], "max_tokens": 1, "arrival_step": 1}' \
  '{"id": "Q", "tokens": [1,2,3,4,7], "max_tokens": 1, "arrival_step": 4}' > "$tmp/swa.jsonl"
for sem in classic latest; do
  "$kvsim" schedule "$tmp/swa.jsonl" --hybrid swa:2 --block-size 1 --num-gpu-blocks 40 \
    --num-cpu-blocks 8 --no-async-scheduling --no-enable-prefix-caching --vllm-semantics $sem \
    --step-log "$tmp/swa.$sem.log" > "$tmp/swa.$sem.out" 2>&1 ||
    { echo "FAIL swa $sem: exit $?"; cat "$tmp/swa.$sem.out"; fail=1; continue; }
  got=$(field 2 cpu_loads < "$tmp/swa.$sem.log")
  [ "$got" = '[["P", [0, 1, 2, 3, 3]]]' ] || { echo "FAIL swa $sem: step 2 loads $got"; fail=1; }
  got=$(field 2 num_free_blocks < "$tmp/swa.$sem.log")
  [ "$got" = 34 ] || { echo "FAIL swa $sem: step 2 free blocks $got"; fail=1; }
done
got=$(field 3 cpu_evicted < "$tmp/swa.latest.log")
[ "$got" = '["A#0", "A#1"]' ] || { echo "FAIL swa latest: step 3 evicted $got"; fail=1; }
got=$(field 4 cpu_loads < "$tmp/swa.latest.log")
[ "$got" = '[["Q", [0, 1, 2, 3, 3]]]' ] || { echo "FAIL swa latest: step 4 loads $got"; fail=1; }

# --- PRIORITY: a head that cannot fit while a loaded request behind it holds blocks --------
# 1-token blocks, 11 GPU blocks (10 usable), prefix caching off, 10 CPU blocks, sync.
# step 0: A [1..6] (priority 1) prefills, finishes, and stores its 6 blocks.
# step 2: L [1..7] (priority 1) hits 6 tokens in the CPU tier: 6 blocks allocated, loading.
# step 3: H (5 new tokens, priority 0) is served before L, whose load is done but who waits
#         for its turn: H needs 5 blocks and 4 are free. Nothing runs, nothing is in flight,
#         nothing else arrives: every later step would repeat this one. vLLM would spin; kvsim
#         must stop with an error that names H and the 6 blocks L holds.
printf '%s\n' '{"id": "A", "tokens": [1,2,3,4,5,6], "max_tokens": 1, "priority": 1}' \
  '{"id": "L", "tokens": [1,2,3,4,5,6,7], "max_tokens": 1, "arrival_step": 2, "priority": 1}' \
  '{"id": "H", "tokens": [50,51,52,53,54], "max_tokens": 1, "arrival_step": 3}' > "$tmp/prio.jsonl"
timeout 60 "$kvsim" schedule "$tmp/prio.jsonl" --block-size 1 --num-gpu-blocks 11 \
  --num-cpu-blocks 10 --policy priority --no-async-scheduling --no-enable-prefix-caching \
  > "$tmp/prio.out" 2>&1
rc=$?
[ $rc = 2 ] || { echo "FAIL priority: exit $rc (want 2; 124 is a hang)"; fail=1; }
grep -q "prio.jsonl:3: request 'H' can never be scheduled" "$tmp/prio.out" &&
  grep -q "10 usable blocks of which 6 held by requests waiting behind it" "$tmp/prio.out" ||
  { echo "FAIL priority: message"; cat "$tmp/prio.out"; fail=1; }

# --- a request that cannot hold its own context: a preemption cycle, stopped --------------
# X: 12 tokens, 1 output; 1-token blocks, 10 usable; 4-token chunks; no full-prompt check at
# admission; prefix caching off. step 0: 4 tokens (6 free); step 1: 4 more (2 free); step 2:
# the next 4 tokens need 4 blocks, X preempts itself and starts again from 0 at step 3. The
# cycle has 3 steps. kvsim stops once the records exceed 64 x (12 + 1) + 4 x 1 + 1024 = 1860:
# after record 1861 (steps 0-1860), with X preempted at steps 2, 5, ..., 1859: 620 times.
printf '%s\n' '{"id": "X", "tokens": [1,2,3,4,5,6,7,8,9,10,11,12], "max_tokens": 1}' > "$tmp/cyc.jsonl"
for sem in classic latest; do
  timeout 60 "$kvsim" schedule "$tmp/cyc.jsonl" --block-size 1 --num-gpu-blocks 11 \
    --long-prefill-token-threshold 4 --no-reserve-full-isl --no-enable-prefix-caching \
    --vllm-semantics $sem --step-log "$tmp/cyc.log" > "$tmp/cyc.out" 2>&1
  rc=$?
  [ $rc = 2 ] || { echo "FAIL cycle $sem: exit $rc (want 2; 124 is a hang)"; fail=1; }
  grep -q "cyc.jsonl:1: no end after 1861 steps: request 'X' is unfinished after 620 preemptions" \
    "$tmp/cyc.out" || { echo "FAIL cycle $sem: message"; cat "$tmp/cyc.out"; fail=1; }
done

# --- a one-token prompt loaded whole from the CPU tier: looked up and loaded again ---------
# 1-token blocks, 9 usable, 4 CPU blocks. step 0: A [5] prefills, finishes, stores block 0.
# B [5] arrives at step 2: its GPU hit is capped at 1 - 1 = 0, the CPU tier has its block: a
# 1-token load. Promoted, a load that covered every token leaves one to recompute: 1 - 1 = 0
# computed tokens, so the waiting pass looks B up again, loads again, and so on (vLLM's
# scheduler does the same: it looks up any request with 0 computed tokens). One record per
# step from B's arrival; the bound is 64 x (2 + 2) + 4 x 2 + 1024 = 1288 records: kvsim stops
# after record 1289, in either profile, sync or async.
printf '%s\n' '{"id": "A", "tokens": [5], "max_tokens": 1}' \
  '{"id": "B", "tokens": [5], "max_tokens": 1, "arrival_step": 2}' > "$tmp/one.jsonl"
for sem in classic latest; do
  for async in --no-async-scheduling --async-scheduling; do
    timeout 60 "$kvsim" schedule "$tmp/one.jsonl" --block-size 1 --num-gpu-blocks 10 \
      --num-cpu-blocks 4 --vllm-semantics $sem $async > "$tmp/one.out" 2>&1
    rc=$?
    [ $rc = 2 ] || { echo "FAIL reload $sem $async: exit $rc (want 2; 124 is a hang)"; fail=1; }
    grep -q "one.jsonl:2: no end after 1289 steps: request 'B' is unfinished after 0 preemptions" \
      "$tmp/one.out" || { echo "FAIL reload $sem $async: message"; cat "$tmp/one.out"; fail=1; }
  done
done

[ $fail = 0 ] && echo "ok: sliding-window loads skip null blocks; a stuck head and a preemption cycle stop"
exit $fail
