#!/usr/bin/env bash
# The CLI as a newcomer runs it. Usage: cli_smoke.sh KVSIM REPO_ROOT
set -u
kvsim=$1; root=$2
fail=0
check() {  # check NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | head -20; fail=1
  else
    echo "ok   $name"
  fi
}
check "layout default" 0 "$kvsim" layout
check "layout json" 0 "$kvsim" layout --json
for f in "$root"/scenarios/*.yaml; do
  check "layout $(basename "$f")" 0 "$kvsim" layout "$f"
done
check "missing file" 2 "$kvsim" layout /nonexistent.yaml
check "bad set" 2 "$kvsim" layout --set cache.block_size=abc
check "unknown key" 2 "$kvsim" layout --set cache.blok_size=16
check "unknown preset" 2 "$kvsim" layout --model llama-9
out=$("$kvsim" layout --json --set cache.block_size=abc); rc=$?
echo "$out" | grep -q '"error"' || { echo "FAIL json error object missing"; fail=1; }
exit $fail
