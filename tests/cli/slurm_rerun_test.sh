#!/usr/bin/env bash
# The Slurm recovery path without a Slurm: scripts/slurm/sweep_array.sbatch run by hand with a
# faked job-array environment, as sbatch would run it. Tasks 0, 1 and 3 of a 4-shard array
# run; the merge then fails naming the missing points. A rerun of task 2 alone (what
# `sbatch --array=2` gives: SLURM_ARRAY_TASK_MIN = MAX = 2, COUNT = 1) must run exactly
# shard 2 of 4, and the merge must then succeed and equal a single-process sweep byte for
# byte. Also: -j follows SLURM_CPUS_PER_TASK, and each task writes its own provenance.
# Usage: slurm_rerun_test.sh KVSIM ROOT
set -u
kvsim=$(realpath "$1"); root=$2
tmp=$(mktemp -d /tmp/kvsim-slurm-rerun.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
scen=$root/tests/cli/sweep_kill.yaml
sets=(--set workload.num_requests=300)
"$kvsim" sweep "$scen" "${sets[@]}" -o "$tmp/single" > /dev/null 2>&1 || fail "single-process sweep"

task() {  # task ID MIN MAX COUNT: one array task with Slurm's variables faked
  env SLURM_ARRAY_TASK_ID=$1 SLURM_ARRAY_TASK_MIN=$2 SLURM_ARRAY_TASK_MAX=$3 \
      SLURM_ARRAY_TASK_COUNT=$4 SLURM_ARRAY_TASK_STEP=1 SLURM_CPUS_PER_TASK=2 \
      KVSIM="$kvsim" KVSIM_SHARDS=4 \
      bash "$root/scripts/slurm/sweep_array.sbatch" "$scen" "$tmp/out" "${sets[@]}" \
      > "$tmp/task$1.log" 2>&1
}
for id in 0 1 3; do task $id 0 3 4 || fail "task $id: $(cat "$tmp/task$id.log")"; done
"$kvsim" merge "$tmp/out/sweep.csv" "$tmp"/out/sweep.shard-*-of-4.csv 2> "$tmp/merge1.txt"
rc=$?
[ $rc -eq 1 ] || fail "merge with shard 2 missing exited $rc, want 1"
grep -q "missing: 2" "$tmp/merge1.txt" || fail "missing point not named: $(cat "$tmp/merge1.txt")"
echo "ok   tasks 0, 1, 3 of 4; the merge names point 2 missing"

# The rerun: an array of one task, id 2.
task 2 2 2 1 || fail "rerun of task 2: $(cat "$tmp/task2.log")"
[ -f "$tmp/out/sweep.shard-2-of-4.csv" ] || fail "the rerun wrote no shard 2 of 4: $(ls "$tmp/out")"
ls "$tmp/out" | grep -q "of-1" && fail "the rerun ran the whole sweep as shard 0 of 1"
[ -f "$tmp/out/sweep.csv" ] && fail "the rerun wrote sweep.csv (the whole sweep)"
"$kvsim" merge "$tmp/out/sweep.csv" "$tmp"/out/sweep.shard-*-of-4.csv > /dev/null 2>&1 \
  || fail "merge after the rerun"
cmp -s "$tmp/out/sweep.csv" "$tmp/single/sweep.csv" || fail "merged CSV differs from the single-process sweep"
echo "ok   the rerun of task 2 alone runs shard 2 of 4; the merge then equals the single sweep"

for k in 0 1 2 3; do
  [ -f "$tmp/out/provenance.shard-$k-of-4.json" ] || fail "no provenance.shard-$k-of-4.json"
done
grep -q '"jobs": 2' "$tmp/out/provenance.shard-2-of-4.json" \
  || fail "-j did not follow SLURM_CPUS_PER_TASK: $(cat "$tmp/out/provenance.shard-2-of-4.json")"
echo "ok   each task wrote its own provenance; -j follows SLURM_CPUS_PER_TASK"

# Without the number of shards the template refuses rather than guess from the array.
env SLURM_ARRAY_TASK_ID=2 KVSIM="$kvsim" bash "$root/scripts/slurm/sweep_array.sbatch" "$scen" \
  "$tmp/out2" > "$tmp/nos.log" 2>&1 && fail "ran without KVSIM_SHARDS"
grep -q KVSIM_SHARDS "$tmp/nos.log" || fail "no hint about KVSIM_SHARDS: $(cat "$tmp/nos.log")"
echo "ok   without KVSIM_SHARDS the task refuses and says why"
