#!/usr/bin/env bash
# Self-contained provenance: an output directory's scenario.resolved.yaml reproduces it
# byte for byte from another folder; provenance.json records the command line, host, start
# and wall time; a rerun refuses a trace whose SHA-256 differs, and says why.
# Usage: provenance_test.sh KVSIM
set -u
kvsim=$(realpath "$1")
tmp=$(mktemp -d /tmp/kvsim-prov.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
cat > "$tmp/t.jsonl" <<'J'
{"timestamp": 0, "input_length": 1024, "output_length": 8, "hash_ids": [1, 2]}
{"timestamp": 100, "input_length": 1024, "output_length": 8, "hash_ids": [1, 3]}
{"timestamp": 200, "input_length": 512, "output_length": 8, "hash_ids": [1]}
J
cat > "$tmp/s.yaml" <<'Y'
name: prov
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 2000}
workload: {kind: trace, trace: {path: t.jsonl}}
Y
(cd "$tmp" && "$kvsim" run s.yaml -o d1 > /dev/null 2>&1) || fail "first run"
grep -q "sha256: $(sha256sum "$tmp/t.jsonl" | cut -d' ' -f1)" "$tmp/d1/scenario.resolved.yaml" \
  || fail "the resolved file does not pin the trace's SHA-256"
grep -q "step_overhead_us:" "$tmp/d1/scenario.resolved.yaml" || fail "hardware coefficients not written in"
grep -q "layers:" "$tmp/d1/scenario.resolved.yaml" || fail "model layers not written in"
for k in command_line host started_utc wall_s; do
  grep -q "\"$k\"" "$tmp/d1/provenance.json" || fail "provenance.json lacks $k"
done
grep -q "s.yaml -o d1" "$tmp/d1/provenance.json" || fail "command line not recorded"
echo "ok   the resolved file pins the trace, the coefficients and the layers; provenance.json has the command line, host and times"
# The rerun from the same working directory finds the same trace on the search path,
# into d2.
(cd "$tmp" && "$kvsim" run d1/scenario.resolved.yaml -o d2 > /dev/null 2>&1) || fail "rerun"
for f in metrics.json requests.csv; do
  cmp -s "$tmp/d1/$f" "$tmp/d2/$f" || fail "$f differs on rerun"
done
echo "ok   kvsim run DIR/scenario.resolved.yaml reproduces metrics.json and requests.csv"
# Another file of the same name: refused, naming both hashes.
echo '{"timestamp": 300, "input_length": 64, "output_length": 8, "hash_ids": [9]}' >> "$tmp/t.jsonl"
(cd "$tmp" && "$kvsim" run d1/scenario.resolved.yaml -o d3 > "$tmp/out.txt" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "rerun with a changed trace exited $rc, want 2: $(cat "$tmp/out.txt")"
grep -q "not the trace the run was made with" "$tmp/out.txt" || fail "no reason given: $(cat "$tmp/out.txt")"
echo "ok   a trace whose SHA-256 changed is refused, and the message says why"
