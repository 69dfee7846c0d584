#!/usr/bin/env bash
# Submits the shard array (scripts/slurm_shards.sbatch) and a merge job that starts once
# every shard has finished (afterany: a failed shard is still merged; its missing cases
# show up as "still missing shard(s)" and the merged run stays unfinished).
#   scripts/slurm_submit.sh OUT_DIR SCENARIO...
set -euo pipefail
out="$1"; shift
here="$(cd "$(dirname "$0")" && pwd)"
array=$(sbatch --parsable "$here/slurm_shards.sbatch" "$out" "$@")
sbatch --dependency="afterany:$array" --job-name=fusebench-merge --time=00:30:00 \
  --wrap="fusebench merge $out/shard-*.db -o $out/all.db && fusebench report --db $out/all.db -o $out/all.html"
echo "submitted shards ($array) and their merge into $out/all.db"
