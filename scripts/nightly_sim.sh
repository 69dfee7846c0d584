#!/usr/bin/env bash
# Simulates a nightly series: runs scenarios/nightly_sim.json NIGHTS times into one database,
# with a slowdown switched on from night SLOW_FROM (the scenario's inject_delay_us test hook:
# a busy wait of DELAY_US after every engine run), then asks `fusebench history` where the
# change began and checks it is that night. About a second per night.
#
#   scripts/nightly_sim.sh [NIGHTS=30] [SLOW_FROM=19] [DELAY_US=auto]
#
# DELAY_US=auto measures night 1's engine median and sets the delay to 10% of it, so the step
# is the same size on a fast or a slow machine. Uses FUSEBENCH (default ./build/fusebench)
# and writes to OUT (default results/nightly_sim.db, replaced).
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTS=${1:-30}
SLOW_FROM=${2:-19}
DELAY_US=${3:-auto}
FUSEBENCH=${FUSEBENCH:-./build/fusebench}
OUT=${OUT:-results/nightly_sim.db}

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
  if [ "$DELAY_US" = auto ]; then
    # 10% of night 1's engine median (ms → µs: ×1000, ×0.1).
    median_ms=$(echo "$line" | sed -n 's/.* engine \([0-9.]*\) ms .*/\1/p')
    DELAY_US=$(awk -v m="$median_ms" 'BEGIN { printf "%.1f", m * 100 }')
    echo "nightly_sim: the slowdown from night $SLOW_FROM is a ${DELAY_US} us busy wait (10% of night 1)"
  fi
done

echo
"$FUSEBENCH" history --db "$OUT" | tee "$tmp/history.txt"
if grep -q "#$SLOW_FROM in the series" "$tmp/history.txt"; then
  echo "nightly_sim: history found the step at night $SLOW_FROM, where it was switched on"
else
  echo "nightly_sim: history did not place the step at night $SLOW_FROM" >&2
  exit 1
fi
