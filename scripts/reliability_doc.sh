#!/usr/bin/env bash
# Writes docs/reliability.md from the tests' own output: each fault and hostile-input test
# prints a `reliability: FAULT | TRIES | WHAT HAPPENED` line, and scripts/fuzz.sh leaves
# build-asan/fuzz/summary.tsv (run it first for the fuzzing rows; without it they are left
# out, said so). `scripts/reliability_doc.sh [BUILD_DIR]` (default build) runs the test
# programs from BUILD_DIR and fails if any test fails, so the page never shows a failure as
# a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
doc=docs/reliability.md
# Before the page is rewritten: whether the tree differs from HEAD, and the fuzzing and
# sanitizer sections it holds (each kept when this machine has no summary of its own).
dirty=$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with local changes)')
old_fuzzing=$(awk '/^## Fuzzing/ { on = 1; next } /^## / { on = 0 } on' "$doc" 2>/dev/null | sed '/./,$!d' || true)
old_sanitizers=$(awk '/^## The test suite under sanitizers/ { on = 1; next } /^## / { on = 0 } on' "$doc" 2>/dev/null | sed '/./,$!d' || true)
tests=(test_faults test_kill_run test_mpi_run test_concurrent_readers test_fuzz_regressions)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in "${tests[@]}"; do
  [ -x "$build/tests/$t" ] || { echo "reliability_doc: $build/tests/$t is not built" >&2; exit 1; }
  "$build/tests/$t" --gtest_brief=1 > "$out.$t" 2>&1 || { cat "$out.$t"; echo "reliability_doc: $t failed" >&2; exit 1; }
  grep '^reliability: ' "$out.$t" | sed 's/^reliability: //' >> "$out" || true
  rm -f "$out.$t"
done
{
  echo "# Reliability: faults and hostile input tried, and what happened"
  echo
  echo "Written by \`scripts/reliability_doc.sh\` from the tests' own output on $(date -u +%Y-%m-%d), at commit"
  echo "$(git rev-parse --short=12 HEAD)$dirty, on $(nproc) cores (load $(cut -d' ' -f1-3 /proc/loadavg)). Every row is a"
  echo "test that passed: the tests assert what the last column says. Run the script again after"
  echo "changing a test, and \`scripts/fuzz.sh SECONDS\` first for fresh fuzzing rows."
  echo
  echo "## Faults during a run, and damaged files"
  echo
  echo "| fault or input | tries | what happened |"
  echo "| --- | --- | --- |"
  sed 's/^/| /; s/$/ |/' "$out"
  echo
  echo "## Fuzzing (libFuzzer, AddressSanitizer + UndefinedBehaviorSanitizer)"
  echo
  if [ -f build-asan/fuzz/summary.tsv ]; then
    echo "From the last \`scripts/fuzz.sh\` (build-asan/fuzz/summary.tsv). A finding is a crash, a"
    echo "sanitizer report, a hang (10 s), an allocation over 2 GB, or an exception other than"
    echo "fusebench's own clear error escaping the reader (tests/fuzz/fuzz_guard.h); every one found"
    echo "was fixed and its input is in tests/data/fuzz_regressions/, run by test_fuzz_regressions (the"
    echo "plan target's, whose inputs name the commit that wrote them, as a test in tests/test_plan.cpp)."
    echo
    echo "| target | seconds | executions | coverage (cov) | features (ft) | corpus | findings | commit |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    tail -n +2 build-asan/fuzz/summary.tsv | sed 's/\t/ | /g; s/^/| /; s/$/ |/'
  elif [ -n "$old_fuzzing" ]; then
    echo "Kept from the previous page: this machine has no build-asan/fuzz/summary.tsv (\`scripts/fuzz.sh 60\` makes it)."
    echo "$old_fuzzing" | sed '/^Kept from the previous page/d'
  else
    echo "Not run for this page: build-asan/fuzz/summary.tsv is absent (\`scripts/fuzz.sh 60\` makes it)."
  fi
  echo
  echo "## The test suite under sanitizers"
  echo
  summaries=()
  for f in build-asan/sanitize_summary.tsv build-tsan/sanitize_summary.tsv; do if [ -f "$f" ]; then summaries+=("$f"); fi; done
  if [ ${#summaries[@]} -gt 0 ]; then
    echo "From \`scripts/sanitize.sh\` (build-asan/ and build-tsan/sanitize_summary.tsv), one row per call in the"
    echo "order run: ASan+UBSan over every test program, ThreadSanitizer over the threaded ones"
    echo "(scripts/sanitize.sh names them, tsan_suppressions.txt says what it cannot see). A test fails"
    echo "on any sanitizer report; a failed row is what the fix after it (git log) answered."
    echo
    echo "| sanitizer | test programs | tests | failed | build (s) | tests (s) | ctest arguments | commit | load |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for f in "${summaries[@]}"; do tail -n +2 "$f" | sed 's/\t/ | /g; s/^/| /; s/$/ |/'; done
  elif [ -n "$old_sanitizers" ]; then
    echo "Kept from the previous page: this machine has no build-asan or build-tsan/sanitize_summary.tsv (\`scripts/sanitize.sh all\` makes them); the commits in the table say how old the runs are."
    echo "$old_sanitizers" | sed '/^Kept from the previous page/d'
  else
    echo "Not run for this page: no build-asan or build-tsan/sanitize_summary.tsv (\`scripts/sanitize.sh all\` makes them)."
  fi
} > "$doc"
echo "reliability_doc: wrote $doc ($(wc -l < "$out") fault rows)"
