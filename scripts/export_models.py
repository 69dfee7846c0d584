#!/usr/bin/python3
"""Exports real PyTorch models to ONNX with PyTorch's own outputs, for the agreement test
(tests/test_pytorch_agreement.cpp) and the PyTorch-speed baseline (scripts/bench_pytorch.py).

Run with Debian's interpreter and its python3-torch 1.13 / python3-torchvision:
    /usr/bin/python3 scripts/export_models.py [--out build/torch-models] [--models resnet18,...]

Writes into the output folder, for every model:
    MODEL_opset13.onnx, MODEL_opset17.onnx   dynamic batch axis, module-scoped node names
    MODEL_b1_in_NAME.npy, MODEL_b1_out_NAME.npy, MODEL_b8_...   seeded inputs, torch outputs
and manifest.json listing models, opsets, batches, input and output names.
Weights are seeded random (no download); BatchNorm running statistics are calibrated on
seeded random data so activations keep a realistic scale and BN folding is exercised.
"""
import argparse
import hashlib
import inspect
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision

OPSETS = (13, 17)
BATCHES = (1, 8)
SEED = 1234


# ---------------------------------------------------------------------------------------
# BERT-style encoder, written like Hugging Face's BertModel so the export has the same
# node names and pattern (/encoder/layer.0/attention/self/query/MatMul, ...): word and
# position embeddings, post-LayerNorm layers, additive attention mask, erf GELU.


class BertEmbeddings(nn.Module):
    def __init__(self, vocab, max_pos, hidden):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)))

    def forward(self, input_ids):
        seq = input_ids.size(1)
        x = self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids[:, :seq])
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split_heads(self, x):
        x = x.view(x.size()[:-1] + (self.heads, self.head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, x, mask=None):
        q, k, v = self.split_heads(self.query(x)), self.split_heads(self.key(x)), self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        if mask is not None:
            scores = scores + mask
        ctx = torch.matmul(nn.functional.softmax(scores, dim=-1), v)
        ctx = ctx.permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.heads * self.head_size,))


class BertOutput(nn.Module):
    """HF's BertSelfOutput and BertOutput: dense, residual Add, post-LayerNorm."""

    def __init__(self, inner, hidden):
        super().__init__()
        self.dense = nn.Linear(inner, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, h, residual):
        return self.LayerNorm(self.dense(h) + residual)


class BertAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.self = BertSelfAttention(hidden, heads)
        self.output = BertOutput(hidden, hidden)

    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)


class BertIntermediate(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.dense = nn.Linear(hidden, ffn)
        self.intermediate_act_fn = nn.GELU()  # erf form

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attention = BertAttention(hidden, heads)
        self.intermediate = BertIntermediate(hidden, ffn)
        self.output = BertOutput(ffn, hidden)

    def forward(self, x, mask):
        x = self.attention(x, mask)
        return self.output(self.intermediate(x), x)


class BertEncoder(nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


class Bert(nn.Module):
    def __init__(self, vocab=1000, seq=128, layers=4, hidden=256, heads=4):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, seq, hidden)
        self.encoder = BertEncoder(layers, hidden, heads, 4 * hidden)

    def forward(self, input_ids, attention_mask):
        # HF's extended mask: 0 where attended, -10000 where masked, broadcast over heads
        # and query positions. (-10000, not finfo.min, keeps any integer mask finite.)
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        return self.encoder(self.embeddings(input_ids), mask)


# ---------------------------------------------------------------------------------------
# ViT-tiny-style: patch 16 on 224x224, dim 192, 3 heads, MLP 768, pre-LayerNorm, class
# token, named like Hugging Face's ViTModel (/encoder/layer.0/layernorm_before, ...).


class ViTEmbeddings(nn.Module):
    def __init__(self, image, patch, hidden):
        super().__init__()
        tokens = (image // patch) ** 2 + 1
        self.cls_token = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
        self.position_embeddings = nn.Parameter(torch.randn(1, tokens, hidden) * 0.02)
        self.projection = nn.Conv2d(3, hidden, kernel_size=patch, stride=patch)

    def forward(self, pixels):
        x = self.projection(pixels).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.size(0), -1, -1)
        return torch.cat((cls, x), dim=1) + self.position_embeddings


class DenseOutput(nn.Module):
    """A Linear under the name `dense`, as HF nests its output projections."""

    def __init__(self, inner, hidden):
        super().__init__()
        self.dense = nn.Linear(inner, hidden)

    def forward(self, x):
        return self.dense(x)


class ViTAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.output = DenseOutput(hidden, hidden)

    def forward(self, x):
        return self.output(self.attention(x))


class ViTLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(hidden, eps=1e-12)
        self.attention = ViTAttention(hidden, heads)
        self.layernorm_after = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = BertIntermediate(hidden, ffn)
        self.output = DenseOutput(ffn, hidden)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))
        return x + self.output(self.intermediate(self.layernorm_after(x)))


class ViTEncoder(nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class ViT(nn.Module):
    def __init__(self, image=224, patch=16, layers=12, hidden=192, heads=3, classes=1000):
        super().__init__()
        self.embeddings = ViTEmbeddings(image, patch, hidden)
        self.encoder = ViTEncoder(layers, hidden, heads, 4 * hidden)
        self.layernorm = nn.LayerNorm(hidden, eps=1e-12)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, pixels):
        x = self.layernorm(self.encoder(self.embeddings(pixels)))
        return self.classifier(x[:, 0])


# ---------------------------------------------------------------------------------------


def calibrate_batchnorm(model, gen, shape):
    """Replaces the default running statistics (mean 0, var 1) by those of seeded random
    data, so that eval-mode activations stay of order 1 through the network."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the calibration batches
        with torch.no_grad():  # affine parameters away from (1, 0) so folding is tested
            bn.weight.uniform_(0.5, 1.5, generator=gen)
            bn.bias.uniform_(-0.2, 0.2, generator=gen)
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(*shape, generator=gen))
    model.eval()


def image_inputs(gen, batch):
    return {"input": torch.randn(batch, 3, 224, 224, generator=gen)}


def bert_inputs(gen, batch, seq=128, vocab=1000):
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    # Each sequence attends to a seeded-length prefix: the mask matters, padding is real.
    mask = torch.zeros(batch, seq, dtype=torch.int64)
    for b in range(batch):
        mask[b, : int(torch.randint(seq // 2, seq + 1, (1,), generator=gen))] = 1
    return {"input_ids": ids, "attention_mask": mask}


def make_models(only):
    """name -> (model in eval mode, input maker, output names)."""
    builders = {
        "resnet18": lambda: torchvision.models.resnet18(weights=None),
        "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(weights=None),
        "bert": lambda: Bert(),
        "vit_tiny": lambda: ViT(),
        # The GPU issue's sizes (scripts/bench_pytorch_gpu.py): BERT-base and ResNet-50.
        "bert_base": lambda: Bert(layers=12, hidden=768, heads=12),
        "resnet50": lambda: torchvision.models.resnet50(weights=None),
    }
    inputs = {"resnet18": image_inputs, "mobilenet_v2": image_inputs, "bert": bert_inputs, "vit_tiny": image_inputs,
              "bert_base": bert_inputs, "resnet50": image_inputs}
    for name in only:
        if name not in builders:
            sys.exit(f"export_models.py: unknown model '{name}' (known: {', '.join(builders)})")
        gen = torch.Generator().manual_seed(SEED)
        torch.manual_seed(SEED)  # module constructors draw their initial weights from here
        model = builders[name]()
        if name in ("resnet18", "mobilenet_v2", "resnet50"):
            calibrate_batchnorm(model, gen, (16, 3, 224, 224))
        model.eval()
        yield name, model, inputs[name]


# PyTorch 2.x exports through dynamo by default, with other node names and an IR version
# newer than Debian's libonnx 1.12 reads; its TorchScript exporter writes what 1.13 wrote.
LEGACY_EXPORTER = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
MAX_IR_VERSION = 8  # what libonnx 1.12's checker accepts (opset 17 needs no newer)


def cap_ir_version(path):
    """Writes the file again with IR version 8 where a newer exporter stamped a later one."""
    try:
        import onnx
    except ImportError:
        return
    m = onnx.load(path)
    if m.ir_version > MAX_IR_VERSION:
        m.ir_version = MAX_IR_VERSION
        onnx.save(m, path)


def save_npy(path, tensor):
    np.save(path, np.ascontiguousarray(tensor.detach().cpu().numpy()))


def export(name, model, make_inputs, out_dir, batches=BATCHES):
    entry = {"name": name, "opsets": [], "batches": []}
    gen = torch.Generator().manual_seed(SEED + 1)
    example = make_inputs(gen, BATCHES[0])
    input_names = list(example)
    entry["inputs"] = input_names
    entry["outputs"] = ["output"]
    dynamic = {n: {0: "batch"} for n in input_names + entry["outputs"]}
    for opset in OPSETS:
        path = os.path.join(out_dir, f"{name}_opset{opset}.onnx")
        with torch.no_grad():
            torch.onnx.export(model, tuple(example.values()), path, opset_version=opset,
                              input_names=input_names, output_names=entry["outputs"],
                              dynamic_axes=dynamic, do_constant_folding=True, **LEGACY_EXPORTER)
        cap_ir_version(path)
        entry["opsets"].append(opset)
    for batch in batches:
        gen = torch.Generator().manual_seed(SEED + batch)
        inputs = make_inputs(gen, batch)
        with torch.no_grad():
            out = model(*inputs.values())
        for n, t in inputs.items():
            save_npy(os.path.join(out_dir, f"{name}_b{batch}_in_{n}.npy"), t)
        save_npy(os.path.join(out_dir, f"{name}_b{batch}_out_output.npy"), out)
        entry["batches"].append(batch)
    return entry


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(root, "build", "torch-models"), help="output folder")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,bert,vit_tiny", help="comma-separated")
    ap.add_argument("--force", action="store_true", help="export even when the folder is up to date")
    ap.add_argument("--batches", default=",".join(str(b) for b in BATCHES), help="batches of the saved inputs and outputs")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    with open(os.path.abspath(__file__), "rb") as f:
        source_hash = hashlib.sha256(f.read()).hexdigest()
    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__}
    # Exporting takes a minute; skip it when this script, torch and the model list are unchanged.
    if not args.force and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = json.load(f)
        if (old.get("script_sha256") == source_hash and all(old.get(k) == v for k, v in versions.items())
                and [m["name"] for m in old["models"]] == args.models.split(",")
                and all(m["batches"] == batches for m in old["models"])):
            print(f"export_models: {args.out} is up to date (--force to export again)")
            return
    if os.path.exists(manifest_path):
        os.remove(manifest_path)  # a half-finished export must not look complete
    torch.set_num_threads(2)
    manifest = {**versions, "script_sha256": source_hash, "seed": SEED, "models": []}
    for name, model, make_inputs in make_models(args.models.split(",")):
        t0 = time.time()
        manifest["models"].append(export(name, model, make_inputs, args.out, batches))
        print(f"export_models: {name}: opsets {list(OPSETS)}, batches {batches} in {time.time() - t0:.1f}s")
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"export_models: wrote {args.out}/manifest.json")


if __name__ == "__main__":
    main()
