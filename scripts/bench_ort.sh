#!/usr/bin/env bash
# ONNX Runtime (npm onnxruntime-node, CPU) against fusebench's engine, side by side, on
# zoo:bert, zoo:llama, zoo:gpt, zoo:efficientnet, zoo:yolo, zoo:shufflenet, zoo:wav2vec2 and, where scripts/export_models.py has written them, the four PyTorch-exported
# models (BERT encoder, resnet18, mobilenet_v2, ViT-tiny). A benchmark script only:
# fusebench never needs ONNX Runtime to build, run or test. Usage: scripts/bench_ort.sh [extra options of bench_ort.mjs, e.g. --rounds 5]
set -euo pipefail
cd "$(dirname "$0")/.."
ORT_DIR=build/ort-node
if [ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
  mkdir -p "$ORT_DIR"
  # ONNXRUNTIME_NODE_INSTALL=skip: the package's install step would otherwise fetch GPU
  # binaries; its CPU library ships inside the package.
  (cd "$ORT_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund onnxruntime-node@1.30.0 >/dev/null)
fi
[ -x build/fusebench ] || scripts/build.sh
mkdir -p build/ort-models
BERT_SPEC='zoo:bert?layers=4&hidden=256&heads=4&seq=128'
build/fusebench zoo export "$BERT_SPEC" -o build/ort-models/zoo_bert.onnx >/dev/null
models=(--model "zoo:bert=build/ort-models/zoo_bert.onnx")
# Models the engine was not tuned on first: a LLaMA-style and a GPT-2-style decoder, an
# EfficientNet-B0 at 224x224, a YOLOv8n-style detector at 320x320, a ShuffleNetV2 at 224x224
# and a wav2vec2-base feature encoder with two of its layers over one second of audio.
for spec in 'zoo:llama?layers=4&hidden=256&heads=4&seq=128' 'zoo:gpt?layers=4&hidden=256&heads=4&seq=128' \
            'zoo:efficientnet?image=224&classes=1000' 'zoo:yolo?image=320&classes=80' 'zoo:shufflenet?image=224&classes=1000' \
            'zoo:wav2vec2?samples=16000&channels=512&hidden=768&heads=12&layers=2'; do
  name=${spec%%\?*}
  build/fusebench zoo export "$spec" -o "build/ort-models/${name#zoo:}.onnx" >/dev/null
  models+=(--model "$name=build/ort-models/${name#zoo:}.onnx")
done
TORCH_MODELS=${FUSEBENCH_TORCH_MODELS:-build/torch-models}
for m in bert resnet18 mobilenet_v2 vit_tiny; do
  f=$(ls "$TORCH_MODELS"/${m}*opset17*.onnx 2>/dev/null | head -1 || true)
  if [ -n "$f" ]; then models+=(--model "torch-$m=$f"); else echo "bench_ort: no exported $m under $TORCH_MODELS (run scripts/export_models.py); skipped"; fi
done
echo "bench_ort: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
node scripts/bench_ort.mjs --fusebench build/fusebench --ort-dir "$ORT_DIR" "${models[@]}" "$@"
