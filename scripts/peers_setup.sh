#!/usr/bin/env bash
# Installs the runtimes fusebench is compared against (scripts/bench_peers.py) into a virtual
# environment of their own, build/peers: ONNX Runtime, OpenVINO, PyTorch 2 (eager and
# torch.compile) with torchvision, plus numpy and onnx, at pinned versions from PyPI.
# A benchmark dependency only: fusebench's build and tests never use this environment.
#
#   scripts/peers_setup.sh            # creates build/peers (again, if its pins changed)
#   PYTHON=/usr/bin/python3 scripts/peers_setup.sh
#
# PyPI's Linux torch wheel depends on NVIDIA's CUDA wheels (several GB): pip fetches them
# with it even though only the CPU is used here.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=build/peers
PINS=(
  onnxruntime==1.32.0
  openvino==2026.4.1
  torch==2.15.0
  torchvision==0.29.2
  numpy==2.4.6
  onnx==1.23.2
)

command -v "$PYTHON" >/dev/null || { echo "peers_setup: $PYTHON not found; install python3 (apt-get install python3 python3-venv)" >&2; exit 1; }
stamp="$VENV/.pins"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "${PINS[*]}" ]; then
  echo "peers_setup: $VENV is up to date (${PINS[*]})"
  exit 0
fi
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "peers_setup: $PYTHON has no working venv/ensurepip module." >&2
  echo "  On Debian/Ubuntu: sudo apt-get install python3-venv   (then run this script again)" >&2
  exit 1
fi
rm -rf "$VENV"
mkdir -p build
if ! "$PYTHON" -m venv "$VENV"; then
  rm -rf "$VENV"
  echo "peers_setup: '$PYTHON -m venv $VENV' failed; on Debian/Ubuntu install python3-venv" >&2
  exit 1
fi
"$VENV/bin/python" -m pip install --upgrade --quiet pip
"$VENV/bin/python" -m pip install --progress-bar off "${PINS[@]}"
echo "${PINS[*]}" >"$stamp"
"$VENV/bin/python" - <<'EOF'
import onnx, onnxruntime, openvino, torch, torchvision, numpy
print("peers_setup: build/peers ready:", ", ".join(
    f"{m.__name__} {m.__version__}" for m in (onnxruntime, openvino, torch, torchvision, numpy, onnx)))
EOF
