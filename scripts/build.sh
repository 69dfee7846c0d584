#!/usr/bin/env bash
# Configures and builds fusebench (Release) into ./build: every target, or only the ones
# named (`scripts/build.sh fusebench`: the binary without the ~30 test programs, which is
# what the quickstart needs). Uses ccache when installed (scripts/setup.sh installs it): a
# rebuild after a small change recompiles only that change.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" > build.log 2>&1 || { cat build.log; exit 1; }
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "$(nproc)" "${targets[@]}" >> build.log 2>&1 || { tail -50 build.log; exit 1; }
echo "build: ok (./build/fusebench)"
