#!/usr/bin/env python3
"""Times fusebench's GPU executors against PyTorch eager on the GPU, side by side in one
command, on the exported models (scripts/export_models.py: the same ONNX files, weights
and inputs): per model and batch, PyTorch eager fp32 with TF32 off, then one `fusebench
run` (device cuda: the GPU reference, eager fp32, and the engine at fp32 and fp16).
Prints reference/torch (goal 0.75-1.33x: "speedup over the reference" then means "over
PyTorch eager") and the engine's speedups over the reference, with the GPU's name.

    python3 scripts/bench_pytorch_gpu.py [--models DIR] [--fusebench PATH] [--rounds 2]

PyTorch is timed with CUDA events around each call (its GPU time, as fusebench's samples
are), after warm-up, median of the samples; rounds alternate torch and fusebench blocks.
Each torch block runs in a process of its own that exits before fusebench starts, so no
CUDA context of PyTorch's is on the GPU while fusebench times (NVML would report it as
another process and fusebench flag the case disturbed).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch


def time_torch(model, inputs, seconds, min_iterations=20):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    with torch.no_grad():
        for _ in range(10):
            model(*inputs)
        torch.cuda.synchronize()
        wall = torch.cuda.Event(enable_timing=True)
        wall.record()
        while True:
            start.record()
            model(*inputs)
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop))
            if len(samples) >= min_iterations and wall.elapsed_time(stop) > seconds * 1e3:
                break
    return statistics.median(samples)


def time_fusebench(fusebench, onnx_path, batches, seconds, work):
    """{(precision, batch): (reference ms, engine ms)} from one `fusebench run` on the GPU."""
    name = os.path.basename(onnx_path).rsplit(".", 1)[0]
    scenario = {
        "name": f"gpu-torch-{name}",
        "description": "GPU reference and engine vs PyTorch eager (scripts/bench_pytorch_gpu.py)",
        "model": os.path.abspath(onnx_path),
        "matrix": {"batch": list(batches), "precision": ["fp32", "fp16"], "fusion": ["aggressive"], "device": ["cuda"]},
        "timing": {"warmup_ms": 300, "min_iterations": 20, "max_seconds": seconds, "target_rel_ci": 0.01,
                   "processes": 1},
    }
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(scenario, f, indent=2)
    db = os.path.join(work, "bench.db")
    run = subprocess.run([fusebench, "run", path, "--db", db], capture_output=True, text=True)
    print(run.stdout[-3000:], run.stderr[-3000:], flush=True)
    if run.returncode not in (0, 1):
        return {}
    rows = json.loads(subprocess.run([fusebench, "export", "--db", db, "--format", "json"],
                                     capture_output=True, text=True, check=True).stdout)
    last_run = max(r["run"] for r in rows)
    out = {}
    for r in rows:
        if r["run"] == last_run:
            out.setdefault((r["precision"], int(r["batch"])), {})[r["executor"]] = r["median_ms"]
    return {k: (v.get("reference"), v.get("engine")) for k, v in out.items()}


def torch_block(models_dir, name, batches, seconds):
    """This script's child: PyTorch eager medians of one model at each batch, as JSON on stdout."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_models  # the same modules and seeds as the exported ONNX files

    with open(os.path.join(models_dir, "manifest.json")) as f:
        entry = next(e for e in json.load(f)["models"] if e["name"] == name)
    model = next(m for n, m, _ in export_models.make_models([name])).cuda()
    out = {}
    for batch in batches:
        inputs = [torch.from_numpy(np.load(os.path.join(models_dir, f"{name}_b{batch}_in_{n}.npy"))).cuda()
                  for n in entry["inputs"]]
        out[str(batch)] = time_torch(model, inputs, seconds)
    print(json.dumps(out))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-block":  # MODELS NAME BATCHES SECONDS
        torch_block(sys.argv[2], sys.argv[3], [int(b) for b in sys.argv[4].split(",")], float(sys.argv[5]))
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(root, "build", "torch-models"))
    ap.add_argument("--fusebench", default=os.path.join(root, "build", "fusebench"))
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    print(f"bench_pytorch_gpu: torch {torch.__version__}; TF32 off; cudnn.benchmark {torch.backends.cudnn.benchmark}",
          flush=True)
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    torch_ms, fb_ms = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench_pytorch_gpu_") as work:
        for rnd in range(args.rounds):
            for e in entries:
                name = e["name"]
                block = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-block", args.models, name,
                                        ",".join(str(b) for b in e["batches"]), str(args.seconds)],
                                       capture_output=True, text=True)
                if block.returncode != 0:
                    print(block.stderr[-3000:], flush=True)
                    continue
                for batch, ms in json.loads(block.stdout.strip().splitlines()[-1]).items():
                    torch_ms.setdefault((name, int(batch)), []).append(ms)
                onnx_path = os.path.join(args.models, f"{name}_opset{args.opset}.onnx")
                for key, v in time_fusebench(args.fusebench, onnx_path, e["batches"], args.seconds, work).items():
                    fb_ms.setdefault((name,) + key, []).append(v)
                print(f"bench_pytorch_gpu: round {rnd + 1}/{args.rounds} {name} done", flush=True)
    print(f"\n{'model':<14}{'batch':>6}{'torch ms':>10}{'ref ms':>9}{'ref/torch':>10}"
          f"{'eng fp32 ms':>12}{'ref/eng':>9}{'eng fp16 ms':>12}{'ref/eng':>9}")
    for (name, batch), t in torch_ms.items():
        tm = statistics.median(t)
        f32 = fb_ms.get((name, "fp32", batch), [])
        f16 = fb_ms.get((name, "fp16", batch), [])
        ref = statistics.median([r for r, _ in f32 if r]) if f32 else float("nan")
        e32 = statistics.median([e for _, e in f32 if e]) if f32 else float("nan")
        ref16 = statistics.median([r for r, _ in f16 if r]) if f16 else float("nan")
        e16 = statistics.median([e for _, e in f16 if e]) if f16 else float("nan")
        print(f"{name:<14}{batch:>6}{tm:>10.3f}{ref:>9.3f}{ref / tm:>9.2f}x{e32:>12.3f}{ref / e32:>8.2f}x"
              f"{e16:>12.3f}{ref16 / e16:>8.2f}x")


if __name__ == "__main__":
    main()
