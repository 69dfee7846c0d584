#!/usr/bin/env bash
# Configures and builds a sanitized tree with clang: `scripts/sanitized_build.sh KIND TARGET...`
#   asan  build-asan: AddressSanitizer + UndefinedBehaviorSanitizer (every UB report fatal),
#         the tree also instrumented for libFuzzer (-fsanitize=fuzzer-no-link) and the fuzz
#         targets (tests/fuzz) configured, so scripts/fuzz.sh and scripts/sanitize.sh share it
#   tsan  build-tsan: ThreadSanitizer
# Optimized (-O1) with line tables, for readable stack traces at a bearable speed; without
# the CUDA backend (nvcc's device code is not instrumented); with MPI
# where OpenMPI is installed, so that mpirun's ranks run sanitized fusebench binaries. Called by
# scripts/fuzz.sh and scripts/sanitize.sh, which install clang first (scripts/setup.sh sanitize).
# The tree builds with Debian's clang 14 as well as g++ 12: clang 14 cannot capture a
# structured binding in a lambda, so such a capture is written [&name = name].
set -euo pipefail
cd "$(dirname "$0")/.."
kind="$1"; shift
case "$kind" in
  asan) flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined"
        link="-fsanitize=address,undefined"; extra=(-DFUSEBENCH_FUZZ=ON) ;;
  tsan) flags="-fsanitize=thread"; link="-fsanitize=thread"; extra=() ;;
  *) echo "sanitized_build: KIND is asan or tsan, not '$kind'" >&2; exit 2 ;;
esac
dir="build-$kind"
mkdir -p "$dir"
log="$dir/sanitized_build.log"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DFUSEBENCH_CUDA=OFF -DFUSEBENCH_MPI=ON "${extra[@]}" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -march=native -fno-omit-frame-pointer -Wno-pass-failed -Wno-missing-field-initializers" \
  "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$link" > "$log" 2>&1 || { cat "$log"; exit 1; }
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}" >> "$log" 2>&1 || { tail -50 "$log"; exit 1; }
echo "sanitized_build: $dir ok"
