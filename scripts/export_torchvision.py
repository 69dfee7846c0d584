#!/usr/bin/python3
"""Exports torchvision architectures to ONNX for trying the engine on models it was not
tuned on (scripts/bench_ort.mjs --model NAME=FILE). Weights are seeded random per model (no
download); BatchNorm running statistics come from three batches of seeded data in train
mode. Opset 17, a dynamic batch axis, input "input" at 224x224 (299 for inception_v3).

    /usr/bin/python3 scripts/export_torchvision.py OUT_DIR densenet121,googlenet,maxvit_t,...
"""
import sys

import torch
import torchvision


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, names = sys.argv[1], sys.argv[2].split(",")
    for name in names:
        torch.manual_seed(0)  # per model: its weights do not depend on the list
        ctor = getattr(torchvision.models, name, None)
        if ctor is None:
            sys.exit(f"export_torchvision: torchvision {torchvision.__version__} has no model '{name}'")
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
        print("exported", name, flush=True)


if __name__ == "__main__":
    main()
