#!/usr/bin/env bash
# Simulates a nightly series: runs scenarios/nightly_sim.json NIGHTS times into one database,
# with a slowdown switched on from night SLOW_FROM (the scenario's inject_delay_us test hook:
# a busy wait after every engine run), then asks `fusebench history` where the change began
# and checks it is that night, and that the morning report of the last night against night 1
# shows the regression with that change point.
#
# The check reads the speedup series (reference median / engine median of the same run):
# the reference is timed interleaved with the engine, so what the machine does to both —
# another job on the cores, a process's memory layout, the clock — cancels in the ratio. On
# a shared machine a run's engine median alone moves 8-18% from one run to the next, more
# than a small step; the engine series is printed too, for comparison.
#
# The step is sized from the noise the nights before it measured, so that it stands out on
# this machine as it is: the engine is slowed by at least STEP_PERCENT, and by enough that
# the speedup falls by STEP_SIGMAS times its spread between those nights (history's
# "spread between runs"). A 5% step is a fair test on a quiet machine; on a loaded one the
# speedup moves 2-5% between runs, and a change point placed to the night needs a step
# several times that.
#
#   scripts/nightly_sim.sh [NIGHTS=60] [SLOW_FROM=37] [STEP_PERCENT=5] [STEP_SIGMAS=5]
#
# At the end it writes the HTML report of the last night against night 1 (REPORT, default
# results/nightly_sim.html): the regression in the verdicts with the run where `history`
# places it, the change point marked on the case's trend, and the engine view from the
# profiles taken after night 1 and after the last night (the busy wait is outside every
# layer, so the layer times stay put: the slowdown is not in the kernels). About 2.7 s per
# night (5 worker processes each) on a 2-core machine at load 4-5.
#
# Uses FUSEBENCH (default ./build/fusebench); writes OUT (default results/nightly_sim.db,
# replaced). Exit 0 when the step is found at SLOW_FROM and the report shows it, 1 when not,
# 2 on bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTS=${1:-60}
SLOW_FROM=${2:-37}
STEP_PERCENT=${3:-5}
STEP_SIGMAS=${4:-5}
DELAY_US=
FUSEBENCH=${FUSEBENCH:-./build/fusebench}
OUT=${OUT:-results/nightly_sim.db}
REPORT=${REPORT:-results/nightly_sim.html}

if [ "$SLOW_FROM" -lt 5 ] || [ "$SLOW_FROM" -gt $((NIGHTS - 2)) ]; then
  echo "nightly_sim: SLOW_FROM must leave at least 4 nights before it and 3 from it (5..$((NIGHTS - 2)))" >&2
  exit 2
fi
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT" "$OUT-wal" "$OUT-shm"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for night in $(seq 1 "$NIGHTS"); do
  delay=0
  if [ "$night" -ge "$SLOW_FROM" ]; then delay=$DELAY_US; fi
  sed "s/\"inject_delay_us\": 0/\"inject_delay_us\": $delay/" scenarios/nightly_sim.json > "$tmp/nightly_sim.json"
  line=$("$FUSEBENCH" run "$tmp/nightly_sim.json" --db "$OUT" --report "$tmp/report.html" | grep '^\[1/1\]')
  echo "night $night (delay ${delay} us): ${line#\[1/1\] }"
  if [ "$night" -eq 1 ] || [ "$night" -eq "$NIGHTS" ]; then
    # The engine view's layer times: a profile of the night's case, stored beside it.
    model=$(sed -n 's/.*"model": "\([^"]*\)".*/\1/p' scenarios/nightly_sim.json)
    "$FUSEBENCH" profile "$model" --fusion standard --batch 4 --threads 1 --iterations 50 --db "$OUT" > /dev/null
  fi
  echo "$line" | sed -n 's/.* engine \([0-9.]*\) ms .*/\1/p' >> "$tmp/engine_ms"
  if [ "$night" -eq $((SLOW_FROM - 1)) ]; then
    # Size the step from the nights so far: their median engine time and the spread of
    # their speedup between runs (the standard deviation of its logarithm).
    spread=$("$FUSEBENCH" history --db "$OUT" --metric speedup | sed -n 's/.*spread between runs: speedup \([0-9.]*\)%.*/\1/p')
    median_ms=$(sort -g "$tmp/engine_ms" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    # The speedup falls by x when the engine slows by x / (1 - x).
    read -r step_percent DELAY_US < <(awk -v m="$median_ms" -v p="$STEP_PERCENT" -v s="$spread" -v k="$STEP_SIGMAS" 'BEGIN {
      x = 1 - 1 / (1 + p / 100); if (k * s / 100 > x) x = k * s / 100; if (x > 0.5) x = 0.5
      f = x / (1 - x); printf "%.1f %.2f\n", 100 * f, m * 1000 * f }')
    echo "nightly_sim: nights 1-$night: speedup spread between runs ${spread}%, median engine ${median_ms} ms;" \
         "from night $SLOW_FROM a ${DELAY_US} us busy wait after every engine run (engine +${step_percent}%," \
         "speedup -$(awk -v f="$step_percent" 'BEGIN { printf "%.1f", 100 * (1 - 1 / (1 + f / 100)) }')%)"
  fi
done

echo
"$FUSEBENCH" history --db "$OUT" --metric engine
echo
"$FUSEBENCH" history --db "$OUT" --metric speedup | tee "$tmp/history.txt"
echo
"$FUSEBENCH" report --db "$OUT" --baseline 1 -o "$REPORT"
found=0
if grep -q "#$SLOW_FROM in the series" "$tmp/history.txt"; then
  echo "nightly_sim: history found the step at night $SLOW_FROM, where it was switched on"
else
  echo "nightly_sim: history did not place the step at night $SLOW_FROM" >&2
  found=1
fi
# The report: the case among the regressions against night 1, its speedup history changing
# since night SLOW_FROM's run (runs are numbered from 1 in a fresh database).
if grep -q '<h3>Regressions <span class="muted">(1)</span></h3>' "$REPORT" &&
   grep -q "since <a href=\"#run-$SLOW_FROM\">" "$REPORT"; then
  echo "nightly_sim: the report lists the regression against night 1, since run $SLOW_FROM"
else
  echo "nightly_sim: the report does not show the regression since run $SLOW_FROM ($REPORT)" >&2
  found=1
fi
exit $found
