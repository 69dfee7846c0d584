#!/usr/bin/env bash
# The nightly job a team's cron or CI runs: the nightly scenarios into one long-lived
# database, then compare with the last good night (and explain what moved), the gate (with JUnit XML for the CI's
# test view), change points over all nights, and the HTML report, all into one folder.
#
#   scripts/nightly.sh [DB=results/nightly.db]
#
# Environment: FUSEBENCH (default ./build/fusebench), SCENARIOS (default
# scenarios/nightly.json), OUT_DIR (default results/nightly-YYYYMMDD-HHMMSS).
# The last good night (one whose gate passed) is remembered in DB.last-good; a night is
# compared with it, not simply with the night before, so one bad night is not the next
# night's baseline.
#
# Exit: the gate's code — 0 pass, 1 a regression or failing case, 2 an error, 3 inconclusive
# (noisy, or the machine moved: `environment`).
set -uo pipefail
cd "$(dirname "$0")/.."

DB=${1:-results/nightly.db}
FUSEBENCH=${FUSEBENCH:-./build/fusebench}
SCENARIOS=${SCENARIOS:-scenarios/nightly.json}
OUT_DIR=${OUT_DIR:-results/nightly-$(date -u +%Y%m%d-%H%M%S)}
LAST_GOOD="$DB.last-good"
mkdir -p "$OUT_DIR" "$(dirname "$DB")"

echo "nightly: load $(cut -d' ' -f1-3 /proc/loadavg), database $DB, output $OUT_DIR"
# shellcheck disable=SC2086  # SCENARIOS may name several files
"$FUSEBENCH" run $SCENARIOS --db "$DB" --report "$OUT_DIR/report.html" | tee "$OUT_DIR/run.txt"
run_rc=${PIPESTATUS[0]}
run_id=$(sed -n 's/^results: .* (run \([0-9]*\))$/\1/p' "$OUT_DIR/run.txt")
if [ -z "$run_id" ]; then
  echo "nightly: the run stored nothing (exit $run_rc)" >&2
  exit 2
fi

baseline=()
if [ -s "$LAST_GOOD" ]; then
  baseline=(--baseline "$(cat "$LAST_GOOD")")
  "$FUSEBENCH" compare --db "$DB" --run "$run_id" "${baseline[@]}" | tee "$OUT_DIR/compare.txt"
  # Why each slower or faster case moved, by layer and fusion decision (from the profiles
  # the scenario stores); a night without them says so there and the job goes on.
  "$FUSEBENCH" explain --db "$DB" --run "$run_id" "${baseline[@]}" > "$OUT_DIR/explain.txt" 2>&1 || true
else
  echo "nightly: no good night yet in $LAST_GOOD; this run is judged on its own rules" | tee "$OUT_DIR/compare.txt"
fi

"$FUSEBENCH" gate --db "$DB" --run "$run_id" "${baseline[@]}" --junit "$OUT_DIR/junit.xml" | tee "$OUT_DIR/gate.txt"
gate_rc=${PIPESTATUS[0]}
"$FUSEBENCH" history --db "$DB" --metric speedup > "$OUT_DIR/history.txt" 2>&1 || true
tail -1 "$OUT_DIR/history.txt"

if [ "$gate_rc" -eq 0 ]; then echo "$run_id" > "$LAST_GOOD"; fi
echo "nightly: run $run_id, gate exit $gate_rc; report $OUT_DIR/report.html, JUnit $OUT_DIR/junit.xml"
exit "$gate_rc"
