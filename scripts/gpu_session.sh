#!/usr/bin/env bash
# One round trip on a GPU node, as the device tool runs it (a bare machine each call):
# the offline build from the carried Debian packages (scripts/offline_deps.sh), the CUDA
# backend's tests, every zoo model on both GPU executors through `fusebench run`, and
# PyTorch eager against the GPU reference on the exported models. Everything it prints
# and the databases go to OUT (default ./gpu-out).
#
#   scripts/gpu_session.sh [DEBS_DIR] [STAGES]     STAGES: build,test,zoo,torch (default), suite, checks
#
# suite: the whole tree and its full ctest run (offline_deps.sh test) instead of the CUDA
# tests alone; checks: tf32 against fp32, the seed's plugin in a GPU build (CPU fallback),
# the GPU's environment as NVML reads it, an A/A compare; CXX and BUILD_DIR pick the compiler (CXX=g++-13 BUILD_DIR=build-g13).
set -uo pipefail
cd "$(dirname "$0")/.."
debs=${1:-.debs}
stages=${2:-build,test,zoo,torch}
out=${OUT:-gpu-out}
mkdir -p "$out"
exec > >(tee -a "$out/session.log") 2>&1
t0=$(date +%s)
stamp() { echo "== $(( $(date +%s) - t0 )) s: $*"; }
has() { case ",$stages," in *",$1,"*) return 0 ;; esac; return 1; }

stamp "machine"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv || true
nproc; g++-12 --version | head -1; cmake --version | head -1

export CXX=${CXX:-g++-12} BUILD_DIR=${BUILD_DIR:-build-gpu}
if has build || has suite; then
  stamp "offline build ($CXX)"
  targets=(fusebench test_cuda_backend)
  has suite && targets=()  # every target
  scripts/offline_deps.sh build "$debs" "${targets[@]}" || { stamp "build failed"; exit 1; }
fi
# shellcheck disable=SC1090
. "$debs/env.sh"
fb=$BUILD_DIR/fusebench

if has test; then
  stamp "CUDA backend tests"
  "$BUILD_DIR/tests/test_cuda_backend" --gtest_color=no 2>&1 | tail -150
fi

if has suite; then
  stamp "the whole suite ($CXX)"
  scripts/offline_deps.sh test "$debs" 2>&1 | tail -120
fi

if has zoo; then
  stamp "zoo models on the GPU through fusebench run"
  for m in ${ZOO_MODELS:-mlp bert resnet mobilenet vit llama gpt efficientnet shufflenet yolo wav2vec2}; do
    cat > "$out/zoo-$m.json" <<JSON
{"name": "gpu-zoo-$m", "model": "zoo:$m",
 "matrix": {"batch": [1, 8], "precision": ["fp32", "fp16"], "fusion": ["none", "aggressive"], "device": ["cuda"]},
 "timing": {"warmup_ms": 200, "min_iterations": 20, "max_seconds": 0.5, "processes": 1}}
JSON
    "$fb" run "$out/zoo-$m.json" --db "$out/gpu-zoo.db" 2>&1 | tail -12
  done
  "$fb" export --db "$out/gpu-zoo.db" --format csv > "$out/gpu-zoo.csv" 2>&1 || true
fi

if has checks; then
  stamp "tf32, a plugin on the CPU of a GPU build, the GPU's environment, an A/A compare"
  "$BUILD_DIR/tests/test_gpu_environment" --gtest_color=no --gtest_filter='GpuMonitor.*' 2>&1 | tail -8
  cat > "$out/tf32.json" <<JSON
{"name": "gpu-tf32", "model": "zoo:bert?layers=4&hidden=512&heads=8&seq=128",
 "matrix": {"batch": [1, 8], "precision": ["fp32", "tf32"], "fusion": ["aggressive"], "device": ["cuda"]},
 "timing": {"warmup_ms": 200, "min_iterations": 20, "max_seconds": 1, "processes": 3}}
JSON
  cat > "$out/tf32-cnn.json" <<JSON
{"name": "gpu-tf32-cnn", "model": "zoo:resnet",
 "matrix": {"batch": [1, 8], "precision": ["fp32", "tf32"], "fusion": ["aggressive"], "device": ["cuda"]},
 "timing": {"warmup_ms": 200, "min_iterations": 20, "max_seconds": 1, "processes": 3}}
JSON
  # The seed's plugin (a Copy after the softmax) in a GPU build: it runs on the CPU between copies.
  sed -e 's/"name": "plugin-seed-attention"/"name": "gpu-plugin-seed"/' \
      -e 's/"matrix": {/"matrix": { "device": ["cuda"],/' scenarios/plugin-seed-attention.json > "$out/plugin.json"
  for s in tf32 tf32-cnn; do "$fb" run "$out/$s.json" --db "$out/checks.db" 2>&1 | tail -14; done
  "$fb" run "$out/tf32.json" --db "$out/checks.db" 2>&1 | tail -3  # the A/A partner of the first run
  "$fb" compare --db "$out/checks.db" --run 3 --baseline 1 2>&1 | tail -12
  "$fb" run "$out/plugin.json" --db "$out/checks.db" 2>&1 | tail -25
  "$fb" profile 'zoo:bert?layers=4&hidden=512&heads=8&seq=128' --device cuda --precision tf32 --batch 8 2>&1 | head -40
  sqlite3 "$out/checks.db" "select case_key, disturbed, substr(gpu_json, 1, 600) from cases limit 2" 2>&1 | head -8 ||
    echo "(no sqlite3 command here)"
fi

if has torch; then
  stamp "PyTorch eager against the GPU reference"
  models=$BUILD_DIR/torch-models  # the suite's export, when it ran (export_models.py skips an up-to-date folder)
  python3 scripts/export_models.py --out "$models" 2>&1 | tail -3
  python3 scripts/bench_pytorch_gpu.py --models "$models" --fusebench "$fb" --rounds 2 --seconds 1.5 2>&1 | tail -60
fi
stamp "done"
