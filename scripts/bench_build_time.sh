#!/usr/bin/env bash
# Build time against graph size: `fusebench inspect` of zoo:bert with L layers at fusion
# aggressive (import, shape binding, every pass, planning; the issue's measure), the median
# of REPEAT runs per size of wall time and of CPU time (user + sys: what a loaded machine
# distorts least; the build is single-threaded), the node count from the build log, and
# the ratio of each size's CPU time to the previous one's. The same at fusion none
# (none_cpu_s: making the zoo model, hashing, import, shape binding and planning, no
# fusion pass) shows what the passes themselves cost: cpu_s - none_cpu_s. The bar (issue 16): 50,000 nodes under 5 s, and
# doubling the nodes at most 2.3x the time.
#
#   scripts/bench_build_time.sh [LAYERS...]        default: 128 256 512 1024 (6,000 to 50,000 nodes)
#   FUSEBENCH=./build/fusebench REPEAT=3 scripts/bench_build_time.sh 100 200
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FUSEBENCH:-./build/fusebench}
repeat=${REPEAT:-3}
layers=("$@")
[ ${#layers[@]} -gt 0 ] || layers=(128 256 512 1024)
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)   binary: $bin   repeats: $repeat"
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
printf "%8s %8s %10s %10s %8s %12s\n" layers nodes wall_s cpu_s ratio none_cpu_s
prev=""
TIMEFORMAT="%R %U %S"
for l in "${layers[@]}"; do
  model="zoo:bert?layers=$l&hidden=64&heads=2&seq=16"
  walls=() cpus=() nones=()
  for ((r = 0; r < repeat; ++r)); do
    t=$({ time "$bin" inspect "$model" --fusion aggressive > /tmp/bench_build_time.$$; } 2>&1)
    walls+=("$(awk '{print $1}' <<<"$t")")
    cpus+=("$(awk '{print $2 + $3}' <<<"$t")")
    t=$({ time "$bin" inspect "$model" --fusion none > /dev/null; } 2>&1)
    nones+=("$(awk '{print $2 + $3}' <<<"$t")")
  done
  nodes=$(grep -o 'imported: [0-9]* nodes' /tmp/bench_build_time.$$ | grep -o '[0-9]*')
  wall=$(printf "%s\n" "${walls[@]}" | median)
  cpu=$(printf "%s\n" "${cpus[@]}" | median)
  none=$(printf "%s\n" "${nones[@]}" | median)
  ratio=""
  [ -n "$prev" ] && ratio=$(awk -v a="$cpu" -v b="$prev" 'BEGIN {printf "%.2f", a / b}')
  printf "%8s %8s %10.3f %10.3f %8s %12.3f\n" "$l" "$nodes" "$wall" "$cpu" "$ratio" "$none"
  prev=$cpu
done
rm -f /tmp/bench_build_time.$$
