#!/usr/bin/python3
"""Exports torchvision architectures to ONNX for trying the engine on models it was not
tuned on (build/peers/bin/python scripts/bench_peers.py --model NAME=FILE). Weights are seeded random per model (no
download). Opset 17.

Classifiers: BatchNorm running statistics come from three batches of seeded data in train
mode; a dynamic batch axis, input "input" at 224x224 (299 for inception_v3).
Detection models (torchvision.models.detection: ssdlite320_mobilenet_v3_large,
fasterrcnn_mobilenet_v3_large_320_fpn, retinanet_resnet50_fpn, maskrcnn_resnet50_fpn...):
input "images" [3, 320, 320] (the R-CNNs and RetinaNet resize to 320 too), with their
post-processing (NonMaxSuppression, RoiAlign, data-dependent shapes) in the graph.
Segmentation models (torchvision.models.segmentation): input "images" [1, 3, 320, 320].

    /usr/bin/python3 scripts/export_torchvision.py OUT_DIR densenet121,googlenet,maxvit_t,...
"""
import sys

import torch
import torchvision
from torchvision.models import detection, segmentation


def export_classifier(name, ctor, out):
    # Inception's auxiliary heads only exist in training; without weights, init them.
    kw = {"aux_logits": False, "init_weights": True} if name in ("inception_v3", "googlenet") else {}
    model = ctor(weights=None, **kw)
    size = 299 if name == "inception_v3" else 224
    x = torch.randn(4, 3, size, size)
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(x)
    model.eval()
    torch.onnx.export(model, x[:1], f"{out}/{name}.onnx", opset_version=17, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})


def export_detector(name, out):
    kw = {"weights": None, "weights_backbone": None}
    if not name.startswith("ssd"):
        kw.update(min_size=320, max_size=320)
    model = getattr(detection, name)(**kw).eval()
    torch.onnx.export(model, ([torch.rand(3, 320, 320)],), f"{out}/{name}.onnx", opset_version=17,
                      input_names=["images"])


def export_segmenter(name, out):
    kw = {"weights": None, "weights_backbone": None}
    if "lraspp" not in name:
        kw["aux_loss"] = False
    model = getattr(segmentation, name)(**kw).eval()
    torch.onnx.export(model, torch.rand(1, 3, 320, 320), f"{out}/{name}.onnx", opset_version=17,
                      input_names=["images"])


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, names = sys.argv[1], sys.argv[2].split(",")
    for name in names:
        torch.manual_seed(0)  # per model: its weights do not depend on the list
        if hasattr(detection, name):
            export_detector(name, out)
        elif hasattr(segmentation, name):
            export_segmenter(name, out)
        elif hasattr(torchvision.models, name):
            export_classifier(name, getattr(torchvision.models, name), out)
        else:
            sys.exit(f"export_torchvision: torchvision {torchvision.__version__} has no model '{name}'")
        print("exported", name, flush=True)


if __name__ == "__main__":
    main()
