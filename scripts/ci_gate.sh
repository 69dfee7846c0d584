#!/usr/bin/env bash
# The CI gate as a paired A/B run, the way `asv continuous` cancels a machine's drift: builds
# BASE_REF (a commit, branch or tag: what the change is judged against) in a git worktree
# under build/ (scripts/build_commit.sh), builds this checkout, then times every case of the
# scenarios in worker processes of both binaries taking turns ABBA within the same minutes (`fusebench run
# --against`), and gates this checkout's run pair by pair (`fusebench gate`: the scenario's
# max_regression, min_speedup and max_abs_err).
#
#   scripts/ci_gate.sh BASE_REF [SCENARIO...]     (default: scenarios/ci-gate.json)
#
# OUT_DIR (default results/ci-gate-YYYYMMDD-HHMMSS) receives ab.db, report.html and
# junit.xml. Exit: the gate's (0 pass, 1 fail, 2 error, 3 inconclusive). The base's first
# build is a full one (about 10 minutes on 2 cores); later ones reuse its build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
base_ref=${1:?usage: scripts/ci_gate.sh BASE_REF [SCENARIO...]}
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(scenarios/ci-gate.json)
worktree=build/ci-gate-base
scripts/build_commit.sh "$base_ref" "$worktree"  # exit 2 when it names no commit
scripts/build.sh fusebench

out=${OUT_DIR:-results/ci-gate-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
run_rc=0
./build/fusebench run "${scenarios[@]}" --against "$worktree/build/fusebench" --db "$out/ab.db" \
  --report "$out/report.html" || run_rc=$?
if [ "$run_rc" -eq 2 ]; then
  echo "ci_gate: the run failed (exit 2)" >&2
  exit 2
fi
gate_rc=0
./build/fusebench gate --db "$out/ab.db" --junit "$out/junit.xml" || gate_rc=$?
echo "ci_gate: results in $out"
exit "$gate_rc"
