#!/usr/bin/env bash
# Submits a kvsim sweep to Slurm as a job array of SHARDS tasks plus a merge job that runs
# after them (afterany: see merge.sbatch), and prints the two job ids.
#
#   KVSIM=build/bin/kvsim scripts/slurm/submit.sh SCENARIO OUT SHARDS [--set k=v ...]
#
# Extra arguments go to every shard (and to the point count), so all shards run the same
# sweep; add sbatch options through SBATCH_* environment variables (SBATCH_PARTITION, ...).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: KVSIM=path/to/kvsim $0 SCENARIO OUT SHARDS [kvsim sweep flags]" >&2; exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
scenario=$1; out=$2; shards=$3; shift 3
kvsim=$(realpath "${KVSIM:-$(command -v kvsim)}")
points=$("$kvsim" sweep "$scenario" --count "$@")
[ "$shards" -gt "$points" ] && shards=$points   # an empty shard would be a wasted task
mkdir -p "$out"
array=$(sbatch --parsable --array=0-$((shards - 1)) --chdir="$PWD" --output="$out/slurm-%A_%a.out" \
        --export=ALL,KVSIM="$kvsim" "$here/sweep_array.sbatch" "$scenario" "$out" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency=afterany:"$array" --chdir="$PWD" \
        --output="$out/slurm-merge-%j.out" --export=ALL,KVSIM="$kvsim" \
        "$here/merge.sbatch" "$out" "$shards")
echo "sweep: $points points in $shards shards: array job $array, merge job ${merge%%;*}"
