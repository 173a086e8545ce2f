#!/bin/sh
# submit.sh: queues the tuning of one search space over N nodes (docs/cluster.md): the job array of
# tune_array.sbatch (shard i on array task i), then merge_export.sbatch once every task succeeded.
#   scripts/slurm/submit.sh N SPACE.yaml [sbatch options for the array, e.g. --gres=gpu:8 -p gpu]
# The AUTOTUNE_* variables of the two scripts pass through (sbatch exports the environment).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 N SPACE.yaml [sbatch options for the array...]" >&2; exit 2; }
n=$1 space=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
export AUTOTUNE_SHARDS="$n" AUTOTUNE_SPACE="$space"
array=$(sbatch --parsable --array="1-$n" "$@" "$here/tune_array.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" "$here/merge_export.sbatch")
echo "array job $array (shards 1-$n), merge job $merge"
