#!/usr/bin/env bash
# Submits a kvsim sweep to Slurm as a job array of SHARDS tasks plus a merge job that runs
# after them (afterany: see merge.sbatch), and prints the two job ids and the rerun command.
#
#   KVSIM=build/bin/kvsim scripts/slurm/submit.sh SCENARIO OUT SHARDS [--set k=v ...] [-j J]
#
# Extra arguments go to every shard (and to the point count), so all shards run the same
# sweep; `-j J` also asks Slurm for J CPUs per task. Add sbatch options (--time, --mem-per-cpu,
# partition; see sweep_array.sbatch for sizing) through SBATCH_* environment variables
# (SBATCH_TIMELIMIT, SBATCH_PARTITION, ...).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: KVSIM=path/to/kvsim $0 SCENARIO OUT SHARDS [kvsim sweep flags]" >&2; exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
scenario=$1; out=$2; shards=$3; shift 3
kvsim=$(realpath "${KVSIM:-$(command -v kvsim)}")
points=$("$kvsim" sweep "$scenario" --count "$@")
[ "$shards" -gt "$points" ] && shards=$points   # an empty shard would be a wasted task
cpus=1
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    -j|--jobs) cpus=${args[i+1]:-1} ;;
    --jobs=*) cpus=${args[i]#--jobs=} ;;
    -j[0-9]*) cpus=${args[i]#-j} ;;
  esac
done
mkdir -p "$out"
array=$(sbatch --parsable --array=0-$((shards - 1)) --cpus-per-task="$cpus" --chdir="$PWD" \
        --output="$out/slurm-%A_%a.out" --export=ALL,KVSIM="$kvsim",KVSIM_SHARDS="$shards" \
        "$here/sweep_array.sbatch" "$scenario" "$out" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency=afterany:"$array" --chdir="$PWD" \
        --output="$out/slurm-merge-%j.out" --export=ALL,KVSIM="$kvsim" \
        "$here/merge.sbatch" "$out" "$shards")
echo "sweep: $points points in $shards shards: array job $array, merge job ${merge%%;*}"
echo "rerun failed tasks K1,K2: sbatch --array=K1,K2 --cpus-per-task=$cpus" \
     "--export=ALL,KVSIM=$kvsim,KVSIM_SHARDS=$shards $here/sweep_array.sbatch $scenario $out $*," \
     "then the merge again: sbatch --export=ALL,KVSIM=$kvsim $here/merge.sbatch $out $shards"
