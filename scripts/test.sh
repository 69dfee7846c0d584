#!/usr/bin/env bash
# Fresh machine to a tested build: set up, build, run every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
