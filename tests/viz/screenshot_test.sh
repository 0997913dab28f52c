#!/usr/bin/env bash
# Renders every kvsim-viz panel for two scenarios under xvfb-run and checks each PNG's
# structure (viz_png_check): the default scenario (hybrid Qwen3.5: Mamba conv/SSM pages,
# padded to the attention page) and a padded mixed-page-size one (MiMo-style target + DFlash
# draft at TP 4: the draft's 8 KiB page padded to 12 KiB).
#   screenshot_test.sh KVSIM_VIZ PNG_CHECK OUT_DIR DATA_DIR REPO_ROOT
# data/sweep_sample.csv is a small synthetic fixture (made-up numbers) for the Sweep panel.
set -u
viz=$1 check=$2 out=$3 data=$4 repo=$5
mkdir -p "$out"
size=1280x800
fail=0
# xvfb-run exits 5 when it cannot remove its own temporary directory (a race in its cleanup
# on a busy machine), which hides the viewer's exit code: such a run is made once more.
run_x() {  # log, kvsim-viz args...
  local log=$1 rc=0
  shift
  for _ in 1 2; do
    timeout 120 xvfb-run -a -s "-screen 0 ${size}x24" "$viz" "$@" > "$log" 2>&1
    rc=$?
    if [ $rc -ne 5 ] || ! grep -q "problem while cleaning up temporary directory" "$log"; then
      return $rc
    fi
  done
  return $rc
}
shot() {  # name, expected colours..., -- , kvsim-viz args...
  local name=$1; shift
  local expects=()
  while [ "$1" != "--" ]; do expects+=(--expect "$1"); shift; done
  shift
  local png="$out/$name.png"
  rm -f "$png"
  if ! run_x "$out/$name.log" "$@" --size "$size" --screenshot "$png"; then
    echo "FAIL $name: kvsim-viz failed:"; cat "$out/$name.log"; fail=1; return
  fi
  "$check" "$png" --size "$size" "${expects[@]}" || fail=1
}
shot default_steps prefill decode recompute preempt -- --panel steps --steps "$data/steps_sample.jsonl"
mimo=("$repo/scenarios/mimo_dflash_padding.yaml")
shot default_plan -- --panel plan
shot default_page_map K V conv ssm highlight -- --panel page_map
shot default_page_map_hnd K V highlight -- --panel page_map --set cache.layout=HND
shot default_block_pool free cached -- --panel block_pool
shot default_sweep series0 series1 -- --panel sweep --sweep "$data/sweep_sample.csv"
shot mimo_plan -- "${mimo[@]}" --panel plan
shot mimo_page_map K V padding:2000 highlight -- "${mimo[@]}" --panel page_map
shot mimo_block_pool free cached series0 -- "${mimo[@]}" --panel block_pool --trace scenarios/traces/sample_tokens.jsonl
# Simulations run by the viewer (the README's two-tier demo): the Steps panel over kvsim
# schedule's step clock, and the Block pool panel following it with the CPU tier's strip
# (next-step copies, so the two slots r27 loads at step 62 show pinned); then the default
# scenario through the engine.
req=("--requests" "$repo/scenarios/traces/sample_requests.jsonl" --num-gpu-blocks 40
     --max-num-batched-tokens 64 --num-cpu-blocks 200)
shot sim_steps prefill decode recompute preempt -- --panel steps "${req[@]}" --step 62
shot sim_block_pool_two_tier free cached ready:5000 loading:400 -- --panel block_pool \
  "${req[@]}" --xfer-timing next-step --step 62
shot run_block_pool free cached series0 -- --panel block_pool --run --set workload.num_requests=100 \
  --step 40
# P/D: the prefill pool (NHD, 64-token blocks, TP 4) beside the decode pool (HND, 16, TP 2).
shot pd_page_map K V highlight -- "$repo/scenarios/pd_nhd64_tp4_hnd16_tp2.yaml" --panel page_map
# Bad input: exit code 2 and a message, never a crash.
if timeout 60 "$viz" --set parallel.tp=abc --screenshot "$out/bad.png" > "$out/bad.log" 2>&1; then
  echo "FAIL bad scenario: exit 0"; fail=1
elif [ $? -ne 2 ]; then
  echo "FAIL bad scenario: exit code not 2"; cat "$out/bad.log"; fail=1
fi
# A panel that shows an error (a bad --trace, a missing --sweep, a trace line of 1e12 tokens) still
# writes its PNG, but exits 2 and names the error, so scripts notice.
printf 'not json\n' > "$out/bad_trace.jsonl"
printf '{"hash_ids": [1], "input_length": 1000000000000}\n' > "$out/huge_trace.jsonl"
# A bad simulation is bad input: exit 2 with the flag or file named.
for c in "--requests $out/no_such_requests.jsonl --num-gpu-blocks 40|no_such_requests.jsonl" \
         "--requests $repo/scenarios/traces/sample_requests.jsonl --num-gpu-blocks 1|--num-gpu-blocks" \
         "$repo/scenarios/pd_nhd64_tp4_hnd16_tp2.yaml --run|P/D" \
         "--num-gpu-blocks 40|need --requests"; do
  args=${c%%|*} want=${c##*|}
  # shellcheck disable=SC2086
  timeout 60 "$viz" --panel steps $args --screenshot "$out/bad_sim.png" > "$out/bad_sim.log" 2>&1
  rc=$?
  if [ $rc -ne 2 ] || ! grep -qF -- "$want" "$out/bad_sim.log"; then
    echo "FAIL bad simulation $args: exit $rc"; cat "$out/bad_sim.log"; fail=1
  else
    echo "ok   bad simulation $args: exit 2"
  fi
done
for c in "block_pool --trace $out/bad_trace.jsonl|bad_trace.jsonl:1" \
         "block_pool --trace $out/huge_trace.jsonl|input_length" \
         "sweep --sweep $out/no_such_sweep.csv|no_such_sweep.csv"; do
  args=${c%%|*} want=${c##*|}
  # shellcheck disable=SC2086
  run_x "$out/err.log" --panel $args --size "$size" --screenshot "$out/err.png"
  rc=$?
  if [ $rc -ne 2 ] || ! grep -q "shows an error" "$out/err.log" || ! grep -qF "$want" "$out/err.log" ||
     grep -qiE 'terminate|abort|runtime error' "$out/err.log"; then
    echo "FAIL panel error --panel $args: exit $rc"; cat "$out/err.log"; fail=1
  else
    echo "ok   panel error --panel $args: exit 2"
  fi
done
exit $fail
