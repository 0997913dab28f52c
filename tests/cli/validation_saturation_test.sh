#!/usr/bin/env bash
# No training run that vLLM served without a queue may saturate in kvsim: for every
# scenarios/validation/*.yaml whose measured TTFT p90 is under 1 s, `kvsim run` must not warn
# that the queue grew through the run (TTFT measuring a backlog), and its own TTFT p90 must be
# under 1 s too.
# Usage: validation_saturation_test.sh KVSIM ROOT
set -u
kvsim=$1 root=$2
fail=0 checked=0
for f in "$root"/scenarios/validation/*.yaml; do
  p90=$(sed -n 's/^    ttft_p90_ms: \([0-9.e+]*\)$/\1/p' "$f" | head -1)
  [ -n "$p90" ] || continue
  python3 -c "import sys; sys.exit(0 if float('$p90') < 1000 else 1)" || continue
  checked=$((checked + 1))
  out=$("$kvsim" run "$f" 2>&1) || { echo "$out"; echo "FAIL: $f: kvsim run exited $?"; fail=1; continue; }
  if grep -q "TTFT measures the backlog" <<<"$out"; then
    echo "FAIL: $(basename "$f"): saturated in kvsim (measured TTFT p90 $p90 ms)"
    fail=1
  fi
  sim=$(awk '$1 == "ttft_p90_ms" {print $2; exit}' <<<"$out")
  if ! python3 -c "import sys; sys.exit(0 if float('$sim') < 1000 else 1)"; then
    echo "FAIL: $(basename "$f"): kvsim's TTFT p90 is $sim ms (measured $p90 ms)"
    fail=1
  fi
done
[ "$checked" -gt 0 ] || { echo "FAIL: no validation run checked"; exit 1; }
[ "$fail" = 0 ] || exit 1
echo "ok: $checked runs under 1 s of measured TTFT p90, none saturated in kvsim"
