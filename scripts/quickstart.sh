#!/usr/bin/env bash
# Fresh machine to results: set up, build, run the quickstart scenario into
# results/quickstart.db and write results/quickstart.html.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh fusebench
mkdir -p results
./build/fusebench run scenarios/quickstart.json --db results/quickstart.db --report results/quickstart.html
