#!/usr/bin/env bash
# The test suite under the sanitizers: `scripts/sanitize.sh [asan|tsan|all] [CTEST_ARGS...]`.
#   asan  every test, built with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan;
#         the fusebench binary the tests run is the sanitized one too)
#   tsan  ThreadSanitizer (build-tsan) on what runs threads: the engine's threaded runtime
#         (oneTBB and OpenMP kernels), worker processes and the run loop, the store's
#         concurrent readers; TSAN_TESTS below is that list
# Any sanitizer report fails its test (every UB report is fatal; a leak fails the process).
# Default: asan. Extra arguments go to ctest (e.g. -R Store); SANITIZE_TESTS='test_store|test_plan'
# builds and runs only those test programs. Prints how long each build and each suite took.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-asan}"
shift || true
TSAN_TESTS='test_engine|test_dynamic_engine|test_ops|test_attention|test_process_merge|test_timer|test_store|test_resume|test_kill_run|test_end_to_end'

scripts/setup.sh sanitize
if [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer; fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

suite() {  # suite KIND TEST_REGEX CTEST_ARGS...
  local k="$1" regex="$2"; shift 2
  local t0=$SECONDS
  local tests
  tests=$(sed -n 's|.*/\(test_[a-z0-9_]*\)\.cpp$|\1|p' <(ls tests/test_*.cpp) | grep -E "^($regex)$")
  local extra=""
  if [ "$k" = asan ]; then extra=onnx_conformance; fi  # every op's kernels on ONNX's own data
  # shellcheck disable=SC2086
  scripts/sanitized_build.sh "$k" fusebench make_history_db $extra $tests
  echo "sanitize: $k build took $((SECONDS - t0)) s"
  t0=$SECONDS
  local rc=0
  # Test programs this suite did not build are listed by ctest as NAME_NOT_BUILT: left out.
  local skip='_NOT_BUILT'
  if [ "$k" = tsan ]; then skip+='|^plugin_project_build$|^onnx_conformance'; fi
  (cd "build-$k" && ctest --output-on-failure -j "$(nproc)" -E "$skip" "$@") || rc=$?
  echo "sanitize: $k tests took $((SECONDS - t0)) s (exit $rc)"
  return $rc
}

rc=0
case "$kind" in
  asan) suite asan "${SANITIZE_TESTS:-test_[a-z0-9_]*}" "$@" || rc=$? ;;
  tsan) suite tsan "${SANITIZE_TESTS:-$TSAN_TESTS}" "$@" || rc=$? ;;
  all) suite asan "${SANITIZE_TESTS:-test_[a-z0-9_]*}" "$@" || rc=$?; suite tsan "${SANITIZE_TESTS:-$TSAN_TESTS}" "$@" || rc=$? ;;
  *) echo "sanitize: asan, tsan or all, not '$kind'" >&2; exit 2 ;;
esac
exit $rc
