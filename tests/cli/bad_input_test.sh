#!/usr/bin/env bash
# The bad inputs of the turn-3 newcomer audit (reports/newcomer-audit.md §4) that hung, were
# taken silently or answered unclearly: each now exits with the documented code (2 bad input,
# 1 nothing could be served) and names the key, flag or line to change. One case or more per
# row; the figures in the fragments are worked by hand in the comments.
# Usage: bad_input_test.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/kvsim_bad_input.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"  # check, expect
one="--set sweep={}"

# lacks NAME FRAGMENT CMD...   the output of CMD (any exit code) does not hold FRAGMENT.
lacks() {
  local name=$1 frag=$2; shift 2
  if timeout 60 "$@" 2>&1 | grep -qF -- "$frag"; then
    echo "FAIL $name: output holds \"$frag\""; fail=1
  else
    echo "ok   $name"
  fi
}

# --- H1: the requests a synthetic workload implies are bounded (2^24 = 16777216) --------------
# 1e30 s at the default scenario's 50 requests/s is 5e31 requests.
expect "H1 duration_s 1e30 with no request cap" 2 \
  "workload.duration_s: 1e+30 s at rate_per_s 50 is about 5e+31 arrivals|above 16777216" \
  "$kvsim" run $one --set workload.num_requests=0 --set workload.duration_s=1e30
expect "H1 num_requests above the bound" 2 "workload.num_requests: 20000000 requests, above 16777216" \
  "$kvsim" run $one --set workload.num_requests=20000000
# multi_turn: 1e6 s at 50 sessions/s = 5e7 sessions, above the bound even at 1 turn each.
expect "H1 max_sim_seconds bounds, per session" 2 "run.max_sim_seconds:|× up to 8 requests per session" \
  "$kvsim" run $one --set workload.kind=multi_turn --set workload.num_requests=0 \
  --set run.max_sim_seconds=1000000
expect "H1 burst with no request cap" 2 "workload.num_requests: 0 (no cap) with burst arrivals" \
  "$kvsim" run $one --set workload.num_requests=0 --set workload.duration_s=5 \
  --set workload.arrival=burst
# The bound leaves ordinary runs alone: 2 s at 50/s is ~100 requests.
expect "H1 a bounded duration still runs" 0 "requests finished" \
  "$kvsim" run $one --set workload.num_requests=0 --set workload.duration_s=2

# --- H2: synthetic lengths are bounded like a trace's (2^24 tokens) ---------------------------
expect "H2 system_prompt.tokens 5e8" 2 "workload.system_prompt.tokens:|16777216" \
  "$kvsim" run $one --set workload.system_prompt.tokens=500000000
# 1000 prompts × 100000 tokens = 1e8 tokens, above the 2^25 = 33554432 kept as token ids.
expect "H2 system prompts too many tokens in all" 2 \
  "workload.system_prompt.tokens: count 1000 * tokens 100000 is above 33554432" \
  "$kvsim" run $one --set workload.system_prompt.tokens=100000 --set workload.system_prompt.count=1000
expect "H2 prompt_tokens.max 1e9" 2 "workload.prompt_tokens.max:" \
  "$kvsim" run $one --set workload.prompt_tokens.max=1000000000
# Qwen3.5-35B-A3B's context is 262144 tokens: a 300000-token system prompt fills it.
expect "H2 system prompt longer than the context" 2 \
  "workload.system_prompt.tokens: 300000 tokens reach the max_model_len 262144 (model.max_model_len)" \
  "$kvsim" run $one --set workload.system_prompt.tokens=300000

# --- S2: a mean outside [min, max] is an error, not a silent clamp ----------------------------
expect "S2 output mean above max" 2 \
  "workload.output_tokens.mean: mean 1000 is above max 256: every draw would be clamped to 256" \
  "$kvsim" run $one --set "workload.output_tokens={mean: 1000, max: 256}"
expect "S2 output mean 1e8" 2 "workload.output_tokens.mean:" \
  "$kvsim" run $one --set "workload.output_tokens={mean: 1e8, max: 256}"
expect "S2 prompt mean below min" 2 "mean 10 is below min 100" \
  "$kvsim" run $one --set "workload.prompt_tokens={dist: fixed, mean: 10, min: 100, max: 200}"

# --- S3: max_model_len above the model's native context ---------------------------------------
expect "S3 model.max_model_len above native" 2 \
  "model.max_model_len: 100000000 is above Llama-3.1-8B's native context of 131072 tokens|VLLM_ALLOW_LONG_MAX_MODEL_LEN" \
  "$kvsim" layout --set model.preset=llama-3.1-8b --set model.max_model_len=100000000
expect "S3 cache.max_model_len above native" 2 "cache.max_model_len: 200000 is above Llama-3.1-8B's" \
  "$kvsim" layout --set model.preset=llama-3.1-8b --set cache.max_model_len=200000
expect "S3 the override, as vLLM's variable" 0 "capacity:" \
  "$kvsim" layout --set model.preset=llama-3.1-8b --set model.max_model_len=200000 \
  --set model.allow_long_max_model_len=true

# --- S1: replay with no request served -----------------------------------------------------------
expect "S1 replay --num-blocks 1" 1 "none of the 60 requests could be served|hit rate n/a" \
  "$kvsim" replay "$root/scenarios/traces/mooncake_conversation_head60.jsonl" --block-size 16 \
  --num-blocks 1

# --- U1: an unknown subcommand ----------------------------------------------------------------
expect "U1 kvsim bogus" 2 "kvsim: unknown subcommand 'bogus'; subcommands: run, sweep" "$kvsim" bogus
expect "U1 kvsim rnu" 2 "(did you mean run?)" "$kvsim" rnu

# --- U2: layout flags are named as typed ---------------------------------------------------------
expect "U2 layout --model nosuch" 2 "--model nosuch: model.preset: unknown model preset" \
  "$kvsim" layout --model nosuch
lacks "U2 layout --model nosuch does not blame --set" "--set model.preset" "$kvsim" layout --model nosuch
expect "U2 layout --tp 0" 2 "--tp 0: parallel.tp:" "$kvsim" layout --tp 0
expect "U2 layout --kv-dtype fp7" 2 "--kv-dtype fp7: cache.kv_dtype:" "$kvsim" layout --kv-dtype fp7

# --- U3: a derived block size says where it came from ----------------------------------------
# The hybrid default raises block 17 to 62 × 17 = 1054 tokens (its page must cover the
# GDN state), and 1054 is no multiple of 16.
expect "U3 hybrid block from --block-size 17" 2 \
  "block size 1054 of layer|derived from cache.block_size 17|62 × 17 tokens|multiple of 16" \
  "$kvsim" layout --set cache.layout=HND --block-size 17

# --- U4: a block too large for the budget blames block_size --------------------------------------
expect "U4 block_size 1000000" 2 "cache.block_size: 1000000 tokens make a|allows a block of about" \
  "$kvsim" layout --set model.preset=llama-3.1-8b --set cache.block_size=1000000

# --- U5: keys of the synthetic workload under kind trace ------------------------------------------
trace="$root/scenarios/traces/mooncake_conversation_head60.jsonl"
expect "U5 --set workload.kind=trace" 2 \
  "workload.arrival, workload.rate_per_s, workload.prompt_tokens, workload.output_tokens belong to the synthetic workloads|not used by kind trace" \
  "$kvsim" run $one --set workload.kind=trace --set "workload.trace.path=$trace"
lacks "U5 no 'unknown key' for them" "unknown key" \
  "$kvsim" run $one --set workload.kind=trace --set "workload.trace.path=$trace"

# --- U6, U7, U8: schedule's input ---------------------------------------------------------------
python3 -c 'import json; print(json.dumps({"id": "big", "tokens": list(range(2000)), "max_tokens": 4}))' \
  > "$work/big.jsonl"
# 2000 tokens in blocks of 16 need 125 blocks; 40 blocks leave 39 usable.
expect "U6 a prompt that never fits" 2 "big.jsonl:1: request 'big' can never be scheduled|need 125 blocks|39 usable" \
  "$kvsim" schedule "$work/big.jsonl" --num-gpu-blocks 40
expect "U7 a Mooncake trace given to schedule" 2 "looks like a Mooncake trace|kvsim replay" \
  "$kvsim" schedule "$trace" --num-gpu-blocks 100
expect "U8 token ids from 1e6 up" 2 "are the tokens the step clock samples" \
  "$kvsim" schedule "$root/scenarios/traces/sample_tokens.jsonl" --num-gpu-blocks 1000

# --- The sweep block: layout checks it as run does, and swept base values are checked --------
expect "layout: a misspelt swept key" 2 "cache.blok_size: unknown key" \
  "$kvsim" layout --set 'sweep.cache.blok_size=[16, 32]'
expect "layout: an empty sweep axis" 2 "sweep: cache.block_size: expected a non-empty list" \
  "$kvsim" layout --set 'sweep.cache.block_size=[]'
printf 'model: {preset: llama-3.1-8b}\ncache: {kv_memory_bytes: 8GiB, block_size: -.inf}\nworkload: {num_requests: 20}\nsweep:\n  cache.block_size: [16, 32]\n' \
  > "$work/base.yaml"
expect "run: a swept key's base value is still checked" 2 "base.yaml:2: cache.block_size:|every sweep point overrides" \
  "$kvsim" run "$work/base.yaml"
expect "layout: a swept key's base value is still checked" 2 "base.yaml:2: cache.block_size:" \
  "$kvsim" layout "$work/base.yaml"

# --- --help: boolean flags read as flags, not "{false}" -------------------------------------
lacks "schedule --help shows no {false}" "{false}" "$kvsim" schedule --help

exit $fail
