#!/usr/bin/env bash
# Installs every Debian package fusebench needs to build, test and run. Idempotent: a
# package already installed is skipped, and `apt-get update` runs only when one is missing.
set -euo pipefail

PACKAGES=(
  g++ make cmake pkg-config git
  libsqlite3-dev            # the result store
  libonnx-dev               # ModelProto, checker, shape inference
  libprotobuf-dev protobuf-compiler
  libtbb-dev                # our kernels' intra-op threads
  libdnnl-dev               # oneDNN: matrix and convolution kernels
  ocl-icd-opencl-dev        # only "recommended" by libdnnl-dev, but its CMake config requires OpenCL
  nlohmann-json3-dev        # scenario files, JSON output
  libcxxopts-dev            # the command line
  libgtest-dev              # tests
  libbenchmark-dev          # build-time benchmark (tests/bench_*.cpp)
  ccache                    # rebuilds (scripts/build.sh uses it when present)
  openmpi-bin libopenmpi-dev  # `mpirun -np N fusebench run` (harness/mpi_run.cpp) and its tests
  sqlite3                   # the sqlite3 command: scripts/nightly.sh and store tests read databases with it
  chromium                  # test_report_browser opens HTML reports headless (about 290 MB; ~1 min to install)
  nodejs                    # ... driven by tests/browser/check_report.mjs over the DevTools pipe (Debian's node 18)
  # PyTorch agreement test and baseline (scripts/export_models.py, bench_pytorch.py): run
  # with /usr/bin/python3. OpenBLAS so that torch's libblas.so.3 is not netlib's.
  python3 python3-numpy python3-torch python3-torchvision libopenblas0-openmp
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
