#!/usr/bin/env bash
# Simulates a nightly series: runs scenarios/nightly_sim.json NIGHTS times into one database,
# with a slowdown of STEP_PERCENT switched on from night SLOW_FROM (the scenario's
# inject_delay_us test hook: a busy wait after every engine run, sized from night 1's engine
# median so the step is the same on a fast or a slow machine), then asks `fusebench history`
# where the change began and checks it is that night. About 0.4 s per night.
#
# The check reads the speedup series (reference median / engine median of the same run):
# the reference is timed interleaved with the engine, so what the machine does to both —
# another job on the cores, a process's memory layout, the clock — cancels in the ratio. On
# a shared machine a run's engine median alone can move ±5% from one process to the next,
# as much as the step; the engine series is printed too, for comparison.
#
#   scripts/nightly_sim.sh [NIGHTS=60] [SLOW_FROM=37] [STEP_PERCENT=5]
#
# At the end it writes the HTML report of the last night against night 1 (REPORT, default
# results/nightly_sim.html): the regression in the verdicts with the run where `history`
# places it, the change point marked on the case's trend, and the engine view from the
# profiles taken after night 1 and after the last night (the busy wait is outside every
# layer, so the layer times stay put: the slowdown is not in the kernels).
#
# Uses FUSEBENCH (default ./build/fusebench); writes OUT (default results/nightly_sim.db,
# replaced). Exit 0 when the step is found at SLOW_FROM, 1 when not, 2 on bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTS=${1:-60}
SLOW_FROM=${2:-37}
STEP_PERCENT=${3:-5}
DELAY_US=
FUSEBENCH=${FUSEBENCH:-./build/fusebench}
OUT=${OUT:-results/nightly_sim.db}
REPORT=${REPORT:-results/nightly_sim.html}

if [ "$SLOW_FROM" -lt 4 ] || [ "$SLOW_FROM" -gt $((NIGHTS - 2)) ]; then
  echo "nightly_sim: SLOW_FROM must leave at least 3 nights on each side (4..$((NIGHTS - 2)))" >&2
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
  if [ -z "$DELAY_US" ]; then
    # STEP_PERCENT of night 1's engine median, in µs (ms × 1000 × percent / 100).
    median_ms=$(echo "$line" | sed -n 's/.* engine \([0-9.]*\) ms .*/\1/p')
    DELAY_US=$(awk -v m="$median_ms" -v p="$STEP_PERCENT" 'BEGIN { printf "%.2f", m * 10 * p }')
    echo "nightly_sim: from night $SLOW_FROM, a ${DELAY_US} us busy wait after every engine run" \
         "(${STEP_PERCENT}% of night 1's ${median_ms} ms)"
  fi
done

echo
"$FUSEBENCH" history --db "$OUT" --metric engine
echo
"$FUSEBENCH" history --db "$OUT" --metric speedup | tee "$tmp/history.txt"
echo
"$FUSEBENCH" report --db "$OUT" --baseline 1 -o "$REPORT"
if grep -q "#$SLOW_FROM in the series" "$tmp/history.txt"; then
  echo "nightly_sim: history found the step at night $SLOW_FROM, where it was switched on"
else
  echo "nightly_sim: history did not place the step at night $SLOW_FROM" >&2
  exit 1
fi
