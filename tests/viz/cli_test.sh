#!/usr/bin/env bash
# kvsim-viz's command line as the newcomer audit (turn 3, §4) met it: --version, a --step
# past the run, a --run whose every request is rejected, and a --screenshot path. None of
# these cases opens a window (they are decided before the display), except the last, which
# runs under xvfb-run where it exists.
# Usage: cli_test.sh KVSIM_VIZ REPO_ROOT
set -u
viz=$1; root=$2
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/kvsim_viz_cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$root/tests/cli/common.sh"  # expect

expect "U12 --version" 0 "kvsim-viz 0." "$viz" --version

# Three requests that finish by step 5 or so: step 5000 is past the end.
for i in 0 1 2; do
  printf '{"id": "r%d", "tokens": [%d, 2, 3, 4, 5], "max_tokens": 2}\n' $i $i
done > "$work/reqs.jsonl"
expect "S4 --step past the last step" 2 "--step 5000: beyond the simulation, whose steps run from 0 to" \
  "$viz" --requests "$work/reqs.jsonl" --num-gpu-blocks 16 --step 5000

# Every prompt (1000 tokens) is above the 256-token budget with chunked prefill off.
expect "U9 --run with every request rejected gives kvsim run's reason" 2 \
  "ran no steps: 20 of 20 requests rejected: 20 × prompt above the token budget 256 with chunked prefill off" \
  "$viz" --run --set sweep={} --set workload.num_requests=20 \
  --set scheduler.max_num_batched_tokens=256 --set scheduler.enable_chunked_prefill=false \
  --set "workload.prompt_tokens={dist: fixed, mean: 1000, min: 1000, max: 1000}"

expect "U10 --screenshot under an unwritable folder" 4 "cannot create /proc/kvsim" \
  "$viz" --screenshot /proc/kvsim/x.png
if command -v xvfb-run >/dev/null; then
  expect "U10 --screenshot makes its folder" 0 "wrote $work/new/dir/x.png" \
    xvfb-run -a "$viz" --screenshot "$work/new/dir/x.png" --size 640x480
  [ -s "$work/new/dir/x.png" ] && echo "ok   the PNG exists" || { echo "FAIL no PNG"; fail=1; }
fi
exit $fail
