#!/usr/bin/env bash
# fusebench's engine and reference against ONNX Runtime, OpenVINO, PyTorch eager and
# torch.compile (scripts/bench_peers.py, in the virtual environment scripts/peers_setup.sh
# makes), side by side, on zoo:bert, zoo:llama, zoo:gpt, zoo:efficientnet, zoo:yolo,
# zoo:shufflenet, zoo:wav2vec2 and, where scripts/export_models.py has written them, the
# four PyTorch-exported models (BERT encoder, resnet18, mobilenet_v2, ViT-tiny; the only
# ones with torch columns). A benchmark script only: fusebench never needs these runtimes to
# build, run or test.
#   scripts/bench_ort.sh [options of bench_peers.py, e.g. --rounds 5 --only torch-bert --append docs/performance.md]
#   FUSEBENCH=build-me/fusebench scripts/bench_ort.sh ...   (another build of fusebench)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers_setup.sh
FUSEBENCH=${FUSEBENCH:-build/fusebench}
[ -x "$FUSEBENCH" ] || scripts/build.sh
mkdir -p build/ort-models
BERT_SPEC='zoo:bert?layers=4&hidden=256&heads=4&seq=128'
"$FUSEBENCH" zoo export "$BERT_SPEC" -o build/ort-models/zoo_bert.onnx >/dev/null
models=(--model "zoo:bert=build/ort-models/zoo_bert.onnx")
# Models the engine was not tuned on first: a LLaMA-style and a GPT-2-style decoder, an
# EfficientNet-B0 at 224x224, a YOLOv8n-style detector at 320x320, a ShuffleNetV2 at 224x224
# and a wav2vec2-base feature encoder with two of its layers over one second of audio.
for spec in 'zoo:llama?layers=4&hidden=256&heads=4&seq=128' 'zoo:gpt?layers=4&hidden=256&heads=4&seq=128' \
            'zoo:efficientnet?image=224&classes=1000' 'zoo:yolo?image=320&classes=80' 'zoo:shufflenet?image=224&classes=1000' \
            'zoo:wav2vec2?samples=16000&channels=512&hidden=768&heads=12&layers=2'; do
  name=${spec%%\?*}
  "$FUSEBENCH" zoo export "$spec" -o "build/ort-models/${name#zoo:}.onnx" >/dev/null
  models+=(--model "$name=build/ort-models/${name#zoo:}.onnx")
done
TORCH_MODELS=${FUSEBENCH_TORCH_MODELS:-build/torch-models}
for m in bert resnet18 mobilenet_v2 vit_tiny; do
  f=$(ls "$TORCH_MODELS"/${m}*opset17*.onnx 2>/dev/null | head -1 || true)
  if [ -n "$f" ]; then models+=(--model "torch-$m=$f"); else echo "bench_ort: no exported $m under $TORCH_MODELS (run /usr/bin/python3 scripts/export_models.py); skipped"; fi
done
exec build/peers/bin/python scripts/bench_peers.py --fusebench "$FUSEBENCH" "${models[@]}" "$@"
