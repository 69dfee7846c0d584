#!/usr/bin/env bash
# The report's scale check: a synthetic nightly database of RUNS runs x CASES cases (written
# by build/tests/make_history_db through ResultStore's own API, 30 samples per executor, a
# 6% step in every 10th case; made once and kept), then `fusebench report` on it with
# LAST runs of history, timed. Prints the wall time, the file size and the load; exits 1
# when the report takes 5 s or more or is 15 MB or more (the targets of issue 14).
#
#   scripts/scale_report.sh [RUNS=365] [CASES=200] [LAST=RUNS]
#
# Uses BUILD (default ./build: fusebench and tests/make_history_db must be built) and writes
# under OUT (default results/scale).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-365}
CASES=${2:-200}
LAST=${3:-$RUNS}
BUILD=${BUILD:-build}
OUT=${OUT:-results/scale}
mkdir -p "$OUT"
db=$OUT/history_${RUNS}x${CASES}.db
if [ ! -f "$db" ]; then
  t0=$(date +%s.%N)
  "$BUILD/tests/make_history_db" --db "$db.tmp" --runs "$RUNS" --cases "$CASES" --step-at $((RUNS * 4 / 5))
  mv "$db.tmp" "$db"
  echo "scale_report: wrote $db in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
fi
html=$OUT/report_${RUNS}x${CASES}_last${LAST}.html
t0=$(date +%s.%N)
"$BUILD/fusebench" report --db "$db" --last "$LAST" -o "$html"
t1=$(date +%s.%N)
seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
bytes=$(stat -c %s "$html")
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "scale_report: $RUNS runs x $CASES cases, --last $LAST: ${seconds} s, ${mb} MB ($bytes bytes)" \
     "(load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs)"
if awk -v s="$seconds" -v b="$bytes" 'BEGIN { exit !(s >= 5 || b >= 15e6) }'; then
  echo "scale_report: over the target (< 5 s, < 15 MB)" >&2
  exit 1
fi
