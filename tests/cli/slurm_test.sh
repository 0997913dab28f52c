#!/usr/bin/env bash
# A kvsim sweep as a Slurm job array on a real one-node Slurm: stands up munged, slurmctld and
# slurmd on localhost (Debian's packages; private config, sockets, ports and state in a temp
# dir; started here and stopped by PID), submits a 4-task array plus the afterany merge
# through scripts/slurm/submit.sh, then a 1-based array by hand, and checks that both merged
# CSVs equal a single-process sweep byte for byte. Then the strict merge on the CLI: a shard
# of another sweep exits 2, a missing shard exits 1. Exit 77 (skipped) where Slurm is not
# installed or we are not root (slurmd must run as root).
# Usage: slurm_test.sh KVSIM ROOT
set -u
kvsim=$(realpath "$1"); root=$2
for c in munged slurmctld slurmd sbatch squeue sinfo; do
  command -v $c > /dev/null || { echo "SKIP: $c not installed (scripts/install-deps.sh --slurm)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: slurmd needs root"; exit 77; }

tmp=$(mktemp -d /tmp/kvsim-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done
  sleep 1
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL $*"; for f in "$tmp"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

# munge: a private key and socket.
mkdir -m 700 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/sock" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" \
  --seed-file="$tmp/munge/seed" &> "$tmp/munged.out.log" &
pids+=($!)

# Ports from the PID so that two runs on one machine do not collide.
port=$((20000 + ($$ % 5000) * 2))
host=$(hostname -s)
mkdir -p "$tmp/state" "$tmp/spool"
cat > "$tmp/slurm.conf" <<CONF
ClusterName=kvsimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SwitchType=switch/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
for i in $(seq 50); do [ -S "$tmp/munge/sock" ] && break; sleep 0.1; done
[ -S "$tmp/munge/sock" ] || fail "munged did not start"
slurmctld -D -i -f "$SLURM_CONF" &> "$tmp/slurmctld.out.log" &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" &> "$tmp/slurmd.out.log" &
pids+=($!)
up=0
for i in $(seq 120); do
  if sinfo -h -o %t 2> /dev/null | grep -q idle; then up=1; break; fi
  sleep 0.5
done
[ $up -eq 1 ] || fail "the one-node Slurm did not come up (sinfo: $(sinfo -h 2>&1))"
echo "ok   one-node Slurm up on $host:$port"

# The sweep: 6 points, small enough for a test.
scen=$root/tests/cli/sweep_kill.yaml
sets=(--set workload.num_requests=1500)
"$kvsim" sweep "$scen" "${sets[@]}" -o "$tmp/single" > /dev/null 2> "$tmp/single.log" \
  || fail "single-process sweep"
[ "$("$kvsim" sweep "$scen" "${sets[@]}" --count)" = 6 ] || fail "--count is not 6"

wait_queue() {  # waits until the queue is empty (bounded)
  for i in $(seq 360); do
    [ -z "$(squeue -h 2> /dev/null)" ] && return 0
    sleep 0.5
  done
  fail "jobs still queued after 180 s: $(squeue 2>&1)"
}

# 1. submit.sh: a 0-based array of 4 shards and the afterany merge.
(cd "$tmp" && KVSIM=$kvsim bash "$root/scripts/slurm/submit.sh" "$scen" "$tmp/a" 4 "${sets[@]}") \
  > "$tmp/submit.log" 2>&1 || fail "submit.sh: $(cat "$tmp/submit.log")"
cat "$tmp/submit.log"
wait_queue
[ -f "$tmp/a/sweep.csv" ] || fail "no merged sweep.csv: $(cat "$tmp"/a/slurm-*.out 2>/dev/null | tail -20)"
cmp -s "$tmp/a/sweep.csv" "$tmp/single/sweep.csv" || fail "0-based array + merge differs from the single-process sweep"
echo "ok   4-task array (0-3) + afterany merge == single-process sweep"

# 2. A 1-based array by hand: shards 0..3 all the same.
mkdir -p "$tmp/b"
jid=$(cd "$tmp" && sbatch --parsable --array=1-4 --output="$tmp/b/slurm-%A_%a.out" \
      --export=ALL,KVSIM="$kvsim",KVSIM_SHARDS=4 "$root/scripts/slurm/sweep_array.sbatch" "$scen" "$tmp/b" \
      "${sets[@]}") || fail "sbatch --array=1-4"
(cd "$tmp" && sbatch --parsable --dependency=afterany:"${jid%%;*}" --output="$tmp/b/merge.out" \
   --export=ALL,KVSIM="$kvsim" "$root/scripts/slurm/merge.sbatch" "$tmp/b" 4) > /dev/null \
  || fail "sbatch merge"
wait_queue
for k in 0 1 2 3; do [ -f "$tmp/b/sweep.shard-$k-of-4.csv" ] || fail "1-based array: no shard $k"; done
cmp -s "$tmp/b/sweep.csv" "$tmp/single/sweep.csv" || fail "1-based array + merge differs from the single-process sweep"
echo "ok   4-task array (1-4) + merge == single-process sweep"

# 2b. A rerun of one failed task, as submit.sh prints it: shard 2 of run (a) lost, then
# `sbatch --array=2` with KVSIM_SHARDS=4 fills exactly that shard and the merge succeeds.
rm -f "$tmp/a/sweep.shard-2-of-4.csv" "$tmp/a/sweep.csv"
"$kvsim" merge "$tmp/a/sweep.csv" "$tmp"/a/sweep.shard-*-of-4.csv 2> /dev/null \
  && fail "merge without shard 2 succeeded"
jid=$(cd "$tmp" && sbatch --parsable --array=2 --output="$tmp/a/rerun-%A_%a.out" \
      --export=ALL,KVSIM="$kvsim",KVSIM_SHARDS=4 "$root/scripts/slurm/sweep_array.sbatch" "$scen" \
      "$tmp/a" "${sets[@]}") || fail "sbatch --array=2"
wait_queue
[ -f "$tmp/a/sweep.shard-2-of-4.csv" ] || fail "rerun of task 2 wrote no shard 2: $(cat "$tmp"/a/rerun-*.out)"
[ -f "$tmp/a/sweep.shard-0-of-1.csv" ] || [ ! -f "$tmp/a/sweep.csv" ] || fail "rerun ran the whole sweep"
"$kvsim" merge "$tmp/a/sweep.csv" "$tmp"/a/sweep.shard-*-of-4.csv > /dev/null 2>&1 || fail "merge after the rerun"
cmp -s "$tmp/a/sweep.csv" "$tmp/single/sweep.csv" || fail "merge after the rerun differs from the single-process sweep"
echo "ok   rerun of task 2 alone (--array=2) fills shard 2; the merge then succeeds"

# 3. The strict merge as a pipeline sees it.
"$kvsim" merge "$tmp/m.csv" "$tmp/a/sweep.shard-0-of-4.csv" "$tmp/a/sweep.shard-2-of-4.csv" \
  2> "$tmp/missing.txt"; rc=$?
[ $rc -eq 1 ] || fail "merge with missing shards exited $rc, want 1"
grep -q "missing: 1 3 5" "$tmp/missing.txt" || fail "missing points not named: $(cat "$tmp/missing.txt")"
[ -f "$tmp/m.csv" ] && fail "merge with missing points wrote a CSV"
"$kvsim" sweep "$scen" "${sets[@]}" --set seed=9 --shard 1/4 -o "$tmp/c" > /dev/null 2>&1
"$kvsim" merge "$tmp/m.csv" "$tmp/a/sweep.shard-0-of-4.csv" "$tmp/c/sweep.shard-1-of-4.csv" \
  "$tmp/a/sweep.shard-2-of-4.csv" "$tmp/a/sweep.shard-3-of-4.csv" 2> "$tmp/foreign.txt"; rc=$?
[ $rc -eq 2 ] || fail "merge with a foreign shard exited $rc, want 2"
grep -q "c/sweep.shard-1-of-4.csv" "$tmp/foreign.txt" || fail "foreign shard not named: $(cat "$tmp/foreign.txt")"
echo "ok   strict merge: missing points exit 1, a foreign shard exits 2, both named"
