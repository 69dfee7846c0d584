#!/usr/bin/env bash
# Where a 16-bit GPU engine's outputs turn non-finite: builds fusebench offline, exports the
# named PyTorch models, runs each once at mark-all (every tensor kept) and prints the
# tensors with NaN or Inf, then times the models' fp16 cases through `fusebench run`.
#   scripts/gpu_nan_probe.sh DEBS_DIR MODELS PRECISION      (e.g. .debs vit_tiny,bert fp16)
set -uo pipefail
cd "$(dirname "$0")/.."
debs=$1 models=$2 precision=$3
export BUILD_DIR=${BUILD_DIR:-build-gpu}
scripts/offline_deps.sh build "$debs" fusebench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
. "$debs/env.sh"
python3 scripts/export_models.py --out /tmp/tm --models "$models" 2>&1 | tail -1
for m in ${models//,/ }; do
  inputs=()
  for f in /tmp/tm/${m}_b1_in_*.npy; do n=${f#*_b1_in_}; inputs+=(--input "${n%.npy}=$f"); done
  rm -rf /tmp/keep && "$BUILD_DIR/fusebench" exec /tmp/tm/${m}_opset17.onnx --device cuda --precision "$precision" \
    --fusion mark-all "${inputs[@]}" --save-outputs /tmp/keep > /tmp/exec.log 2>&1 || tail -5 /tmp/exec.log
  python3 - "$m" <<'PY'
import glob, os, sys
import numpy as np
bad = [os.path.basename(f) for f in sorted(glob.glob("/tmp/keep/*.npy")) if not np.isfinite(np.load(f).astype(np.float32)).all()]
print(f"{sys.argv[1]}: {len(bad)} of {len(glob.glob('/tmp/keep/*.npy'))} kept tensors non-finite:", bad[:40])
PY
done
