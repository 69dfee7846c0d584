#!/usr/bin/env bash
# The test suite under the sanitizers: `scripts/sanitize.sh asan|tsan|all [CTEST_ARGS...]`.
#   asan  every test program (and onnx_conformance), built with AddressSanitizer +
#         UndefinedBehaviorSanitizer in build-asan; the fusebench binary the tests run, and so
#         its worker processes and MPI ranks, is the sanitized one too
#   tsan  ThreadSanitizer (build-tsan) on what runs threads: the engine's threaded runtime
#         (oneTBB and OpenMP kernels), worker processes and the run loop, the load generator's
#         instances, MPI ranks, the store's concurrent readers; TSAN_TESTS below is that list
# Any sanitizer report fails its test (every UB report is fatal; a leak fails the process).
# Default: asan. Extra arguments go to ctest (e.g. -R Store). SANITIZE_TESTS='test_store|test_plan'
# builds and runs only those test programs (in a build dir that holds others too: only the
# tests whose command is one of them are run). Prints how long the build and the tests took
# and appends that to build-KIND/sanitize_summary.tsv (read by scripts/reliability_doc.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-asan}"
shift || true
TSAN_TESTS='test_engine|test_dynamic_engine|test_ops|test_attention|test_process_merge|test_timer|test_store|test_resume|test_kill_run|test_end_to_end|test_load|test_concurrent_readers|test_paired_run|test_mpi_run'

scripts/setup.sh sanitize
if [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer; fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Leaks of third-party libraries only: scripts/lsan_suppressions.txt says why each.
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan_suppressions.txt:print_suppressions=0"
# Races inside uninstrumented third-party runtimes only: scripts/tsan_suppressions.txt says why each.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan_suppressions.txt"

# The ctest numbers of the tests whose program is one of PROGRAMS (a regex), as ctest -I wants them.
test_numbers() {  # test_numbers BUILD_DIR PROGRAMS
  (cd "$1" && ctest -N -V) | awk -v re="^($2)$" \
    '$2 == "Test" && $3 == "command:" { n = $1; sub(":", "", n); p = $4; sub(".*/", "", p); if (p ~ re) printf ",%s", n }'
}

suite() {  # suite KIND PROGRAMS CTEST_ARGS...
  local k="$1" regex="$2"; shift 2
  local t0=$SECONDS
  local programs
  programs=$(ls tests/test_*.cpp tests/onnx_conformance.cpp | sed 's|.*/||; s|\.cpp$||' | grep -E "^($regex)$")
  # shellcheck disable=SC2086
  scripts/sanitized_build.sh "$k" fusebench make_history_db $programs
  local build_s=$((SECONDS - t0))
  echo "sanitize: $k build took $build_s s"
  # OpenMPI leaks what MPI_Init allocated, from plugins it has unloaded by the leak check:
  # only a full (slow) unwind reaches a frame of its libraries, which lsan_suppressions.txt
  # names; the MPI tests run apart with it.
  local mpi="test_mpi_run" others numbers="" mpi_numbers=""
  others=$(echo "$programs" | grep -vx "$mpi" | paste -sd'|' || true)
  if [ -n "$others" ]; then numbers=$(test_numbers "build-$k" "$others"); fi
  if echo "$programs" | grep -qx "$mpi"; then mpi_numbers=$(test_numbers "build-$k" "$mpi"); fi
  if [ -z "$numbers$mpi_numbers" ]; then echo "sanitize: no test of '$regex' is registered in build-$k" >&2; return 1; fi
  t0=$SECONDS
  local rc=0 log="sanitize_last.log"
  rm -f "build-$k/$log" "build-$k/$log.mpi"
  if [ -n "$numbers" ]; then
    (cd "build-$k" && ctest --output-on-failure -j "$(nproc)" -O "$PWD/$log" -I "0,0,0$numbers" "$@") || rc=$?
  fi
  if [ -n "$mpi_numbers" ]; then
    (cd "build-$k" && ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
      ctest --output-on-failure -j "$(nproc)" -O "$PWD/$log.mpi" -I "0,0,0$mpi_numbers" "$@") || rc=$?
  fi
  local test_s=$((SECONDS - t0))
  echo "sanitize: $k tests took $test_s s (exit $rc)"
  local tally  # "TESTS\tFAILED" over both ctest calls
  tally=$(cat "build-$k/$log" "build-$k/$log.mpi" 2>/dev/null || true) && tally=$(echo "$tally" |
    sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\2 \1/p' |
    awk '{ n += $1; f += $2 } END { if (NR) printf "%d\t%d", n, f }')
  [ -f "build-$k/sanitize_summary.tsv" ] ||
    printf 'kind\tprograms\ttests\tfailed\tbuild_s\ttest_s\tctest_args\tcommit\tload\n' > "build-$k/sanitize_summary.tsv"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$(echo "$programs" | wc -w)" "${tally:-?	?}" "$build_s" "$test_s" \
    "$*" "$(git rev-parse --short=12 HEAD)" "$(cut -d' ' -f1-3 /proc/loadavg)" >> "build-$k/sanitize_summary.tsv"
  return $rc
}

rc=0
case "$kind" in
  asan) suite asan "${SANITIZE_TESTS:-test_[a-z0-9_]*|onnx_conformance}" "$@" || rc=$? ;;
  tsan) suite tsan "${SANITIZE_TESTS:-$TSAN_TESTS}" "$@" || rc=$? ;;
  all) suite asan "${SANITIZE_TESTS:-test_[a-z0-9_]*|onnx_conformance}" "$@" || rc=$?
       suite tsan "${SANITIZE_TESTS:-$TSAN_TESTS}" "$@" || rc=$? ;;
  *) echo "sanitize: asan, tsan or all, not '$kind'" >&2; exit 2 ;;
esac
exit $rc
