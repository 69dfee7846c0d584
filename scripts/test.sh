#!/usr/bin/env bash
# Fresh machine to a tested build: set up, build, run every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# Real PyTorch models for tests/test_pytorch_agreement.cpp (skipped there when absent).
if /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
  /usr/bin/python3 scripts/export_models.py --out build/torch-models
else
  echo "test: skipping the PyTorch model export: /usr/bin/python3 cannot import torch and torchvision" \
       "(python3-torch, python3-torchvision; scripts/setup.sh installs them)"
fi
cd build
ctest --output-on-failure -j "$(nproc)"
