#!/usr/bin/env bash
# kvsim calibrate cannot be misused silently (newcomer audit S5, S6, U11, M8): a fit of more
# keys than independent measurements is refused with the counts unless --force; a key that
# ends on its bound is marked in the text, on stderr and in the file; --hardware defaults to
# the runs' own preset, and runs on GPUs whose presets disagree on a fitted key are refused;
# --fit with an unknown key lists the fittable ones; input files are found through
# $KVSIM_TRACE_DIR and say where they were looked for.
# Usage: calibrate_guard_test.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/kvsim_calib_guard.XXXXXX")
trap 'rm -rf "$work"' EXIT

# expect NAME RC "FRAGMENT|FRAGMENT..." CMD...   exit RC, stdout+stderr hold every fragment.
expect() {
  local name=$1 want=$2 frags=$3; shift 3
  local out rc
  out=$(timeout 300 "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | head -20; fail=1; return
  fi
  local IFS='|'
  for f in $frags; do
    if ! grep -qF -- "$f" <<<"$out"; then
      echo "FAIL $name: output lacks \"$f\""; echo "$out" | head -20; fail=1; return
    fi
  done
  echo "ok   $name"
}
# has NAME FILE LINE   FILE holds LINE as a whole line.
has() {
  if grep -qxF -- "$3" "$2"; then echo "ok   $1"; else
    echo "FAIL $1: $2 lacks the line \"$3\""; cat "$2"; fail=1; fi
}
# The value a preset file gives KEY (the presets are refitted often: read, never hard-coded).
preset_value() { sed -n "s/^$2: \([0-9.e+-]*\).*/\1/p" "$root/scenarios/hardware/$1.yaml"; }

# A small measured run: 20 requests, one measurement per --metrics name.
run() {  # run FILE HARDWARE_PRESET TPOT_MS
  cat > "$1" <<EOF
name: $(basename "$1" .yaml)
model: {preset: llama-3.1-8b}
hardware: {preset: $2}
cache: {num_gpu_blocks: 2000}
workload: {kind: shared_prefix, num_requests: 20, arrival: constant, rate_per_s: 5,
  prompt_tokens: {dist: fixed, mean: 100, min: 1, max: 100},
  output_tokens: {dist: fixed, mean: 20, min: 1, max: 20}}
reference: {summary: {ttft_mean_ms: 40.0, tpot_mean_ms: $3, e2e_mean_ms: 200.0}}
EOF
}
run "$work/h100.yaml" H100-SXM 8.0
run "$work/rtx.yaml" RTX-4090 8.0
run "$work/slow.yaml" H100-SXM 1000.0

# --- more keys than measurements ------------------------------------------------------------
# The shipped RTX 4090 run has three measured means (TTFT, TPOT, E2E) and no load stages; the
# default --fit is every bounded serving key. Refused before anything is simulated.
nkeys=$("$kvsim" calibrate --help | grep -o 'default: all [0-9]*' | grep -o '[0-9]*')
expect "refuses $nkeys keys from 3 measurements" 2 \
  "$nkeys keys to fit (mbu, mfu, moe_mbu|but only 3 independent measurements (1 run x the means of ttft_mean_ms, tpot_mean_ms, e2e_mean_ms)|Fit at most 3 keys with --fit k1,k2|--force" \
  "$kvsim" calibrate --runs scenarios/validation/lss-rtx4090-llama-3.1-8b.yaml
expect "refuses 2 keys from 1 measurement" 2 "2 keys to fit (step_overhead_us, seq_overhead_us) but only 1 independent measurement (1 run x the means of tpot_mean_ms)" \
  "$kvsim" calibrate --runs "$work/h100.yaml" --fit step_overhead_us,seq_overhead_us \
  --metrics tpot_mean_ms
expect "--force fits anyway, with a warning" 0 \
  "warning: --runs: 2 keys to fit|--force: fitting anyway|step_overhead_us = " \
  "$kvsim" calibrate --runs "$work/h100.yaml" --fit step_overhead_us,seq_overhead_us \
  --metrics tpot_mean_ms --iterations 1 --force
expect "as many keys as measurements is a fit" 0 "serving runs (1 run, 3 measurements, 3 independent, 3 keys" \
  "$kvsim" calibrate --runs "$work/h100.yaml" --fit step_overhead_us,seq_overhead_us,intake_us \
  --iterations 1
expect "--ops: 2 profile rows for 3 keys are refused" 2 \
  "3 keys to fit (mbu, mfu, layer_overhead_us) but only 2 independent measurements (one per profile row)" \
  "$kvsim" calibrate --ops "$root/tests/calibrate/data/ops_two_rows.json"
expect "--ops with --force fits 2 rows" 0 "warning: --ops|operator profiles|(one model: nothing to leave out" \
  "$kvsim" calibrate --ops "$root/tests/calibrate/data/ops_two_rows.json" --force

# --- a key on its bound -------------------------------------------------------------------
# A measured TPOT of 1 s cannot be reached with step_overhead_us <= 10000 µs (the bound of
# ServingFitParameters): the fit stops on the bound, which is no fit.
expect "a key on its upper bound is marked" 0 \
  "step_overhead_us = 10000  (at its upper bound 10000: not a fit)|warning: step_overhead_us = 10000 is at its upper bound" \
  "$kvsim" calibrate --runs "$work/slow.yaml" --fit step_overhead_us --metrics tpot_mean_ms \
  -o "$work/bound.yaml"
has "the file marks it" "$work/bound.yaml" "# step_overhead_us: at its upper bound 10000: not a fit"
has "the file keeps the bare value" "$work/bound.yaml" "step_overhead_us: 10000"

# --- the starting hardware ------------------------------------------------------------------
# With --iterations 0 the file holds the starting values: the run's own preset's mfu.
expect "--hardware defaults to the run's preset" 0 "hardware: RTX-4090 (the runs' own preset" \
  "$kvsim" calibrate --runs "$work/rtx.yaml" --fit mfu --metrics tpot_mean_ms --iterations 0 \
  -o "$work/rtx_start.yaml"
has "the file holds RTX-4090's mfu" "$work/rtx_start.yaml" "mfu: $(preset_value rtx-4090 mfu)"
expect "runs on GPUs whose presets differ on a fitted key are refused" 2 \
  "several GPUs (H100-SXM (1 run), RTX-4090 (1 run))|start mfu at different values|--hardware PRESET|--from-defaults" \
  "$kvsim" calibrate --runs "$work/h100.yaml" "$work/rtx.yaml" --fit mfu --iterations 0
expect "... accepted with --hardware, with a note" 0 \
  "note: --hardware H100-SXM: runs on RTX-4090 (1 run) keep their own values" \
  "$kvsim" calibrate --runs "$work/h100.yaml" "$work/rtx.yaml" --fit mfu --iterations 0 \
  --hardware H100-SXM
expect "... and for a key every preset shares" 0 "the fitted keys start at the same value on each" \
  "$kvsim" calibrate --runs "$work/h100.yaml" "$work/rtx.yaml" --fit step_overhead_us \
  --iterations 0

# --- --fit keys -----------------------------------------------------------------------------
expect "--fit nosuch lists the fittable keys" 2 \
  "--fit: nosuch is not a fittable hardware key|fittable: |step_overhead_us|attention_mbu|nccl_latency_us|intake_token_ns" \
  "$kvsim" calibrate --runs "$work/h100.yaml" --fit nosuch
expect "--fit with a typo suggests the key" 2 "did you mean step_overhead_us?" \
  "$kvsim" calibrate --runs "$work/h100.yaml" --fit step_overhed_us
expect "--fit naming a key twice is refused" 2 "--fit: mfu named twice" \
  "$kvsim" calibrate --runs "$work/h100.yaml" --fit mfu,mfu

# --- where input files are found ------------------------------------------------------------
mkdir -p "$work/data"
cp "$root/tests/calibrate/data/ops_two_rows.json" "$work/data/"
cp "$work/h100.yaml" "$work/data/found.yaml"
expect "--ops found in \$KVSIM_TRACE_DIR by file name" 0 "operator profiles" \
  env KVSIM_TRACE_DIR="$work/data" "$kvsim" calibrate --ops ../nowhere/ops_two_rows.json --force
expect "--runs found in \$KVSIM_TRACE_DIR" 0 "serving runs (1 run," \
  env KVSIM_TRACE_DIR="$work/data" "$kvsim" calibrate --runs found.yaml --fit step_overhead_us \
  --iterations 0
expect "a missing --ops says where it looked" 2 \
  "--ops nosuch_ops.json: no such file (looked for nosuch_ops.json, $work/data/nosuch_ops.json|/work/shared/data/fidelity/nosuch_ops.json|KVSIM_TRACE_DIR" \
  env KVSIM_TRACE_DIR="$work/data" "$kvsim" calibrate --ops nosuch_ops.json
expect "a missing --runs file says where it looked" 2 \
  "--runs nosuch_run.yaml: no such scenario file (looked for nosuch_run.yaml|built-in scenarios/" \
  "$kvsim" calibrate --runs nosuch_run.yaml

exit $fail
