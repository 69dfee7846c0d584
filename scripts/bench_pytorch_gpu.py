#!/usr/bin/env python3
"""Times fusebench's GPU executors against PyTorch on the GPU, side by side in one command,
on the exported models (scripts/export_models.py: the same ONNX files, weights and
inputs): per model and batch, PyTorch in each of --torch-modes, then one `fusebench run`
(device cuda: the GPU reference, eager fp32, and the engine at fp32 and fp16, each eager
and replayed as a CUDA graph). Prints reference/torch-eager-fp32 (goal 0.75-1.33x:
"speedup over the reference" then means "over PyTorch eager"), the engine's speedups, and
the fp16 engine in a CUDA graph against torch.compile's fp16 in a CUDA graph.

    python3 scripts/bench_pytorch_gpu.py [--models DIR] [--fusebench PATH] [--rounds 2]
        [--torch-modes eager32,eager16,compile16,graph16]

PyTorch modes: eager32 (fp32, TF32 off), eager16 (autocast fp16), compile16
(torch.compile of the autocast model), graph16 (torch.compile mode="reduce-overhead": the
compiled model inside a CUDA graph). PyTorch is timed with CUDA events around each call
(its GPU time, as fusebench's samples are), after warm-up (compilation included there),
median of the samples; rounds alternate torch and fusebench blocks. Each torch block runs
in a process of its own that exits before fusebench starts, so no CUDA context of
PyTorch's is on the GPU while fusebench times (NVML would report it as another process and
fusebench flag the case disturbed).
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
    """{(precision, batch, cuda_graph): (reference ms, engine ms)} from one `fusebench run` on the GPU."""
    name = os.path.basename(onnx_path).rsplit(".", 1)[0]
    scenario = {
        "name": f"gpu-torch-{name}",
        "description": "GPU reference and engine vs PyTorch eager (scripts/bench_pytorch_gpu.py)",
        "model": os.path.abspath(onnx_path),
        "matrix": {"batch": list(batches), "precision": ["fp32", "fp16"], "fusion": ["aggressive"], "device": ["cuda"],
                   "cuda_graph": [False, True]},
        "timing": {"warmup_ms": 300, "min_iterations": 20, "max_seconds": seconds, "target_rel_ci": 0.01,
                   "processes": 1},
    }
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(scenario, f, indent=2)
    db = os.path.join(work, "bench.db")
    run = subprocess.run([fusebench, "run", path, "--db", db], capture_output=True, text=True)
    print(run.stdout[-3000:], run.stderr[-3000:], flush=True)
    if not os.path.exists(db):  # a case that errors is stored without times; a run that stored nothing is not
        return {}
    rows = json.loads(subprocess.run([fusebench, "export", "--db", db, "--format", "json"],
                                     capture_output=True, text=True, check=True).stdout)
    last_run = max(r["run"] for r in rows)
    out = {}
    for r in rows:
        if r["run"] == last_run:
            graph = bool(r["cuda_graph"])
            out.setdefault((r["precision"], int(r["batch"]), graph), {})[r["executor"]] = r["median_ms"]
    return {k: (v.get("reference"), v.get("engine")) for k, v in out.items()}


TORCH_MODES = ("eager32", "eager16", "compile16", "graph16")


def torch_block(models_dir, name, batches, seconds, modes):
    """This script's child: {mode: {batch: median ms}} of one model, as JSON on stdout."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_models  # the same modules and seeds as the exported ONNX files

    with open(os.path.join(models_dir, "manifest.json")) as f:
        entry = next(e for e in json.load(f)["models"] if e["name"] == name)
    model = next(m for n, m, _ in export_models.make_models([name])).cuda()

    def autocast16(fn):
        def run(*inputs):
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                return fn(*inputs)
        return run

    out = {}
    for mode in modes:
        fn = {"eager32": lambda: model,
              "eager16": lambda: autocast16(model),
              "compile16": lambda: torch.compile(autocast16(model), dynamic=False),
              "graph16": lambda: torch.compile(autocast16(model), mode="reduce-overhead", dynamic=False)}[mode]()
        for batch in batches:
            inputs = [torch.from_numpy(np.load(os.path.join(models_dir, f"{name}_b{batch}_in_{n}.npy"))).cuda()
                      for n in entry["inputs"]]
            out.setdefault(mode, {})[str(batch)] = time_torch(fn, inputs, seconds)
    print(json.dumps(out))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-block":  # MODELS NAME BATCHES SECONDS MODES
        torch_block(sys.argv[2], sys.argv[3], [int(b) for b in sys.argv[4].split(",")], float(sys.argv[5]),
                    sys.argv[6].split(","))
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(root, "build", "torch-models"))
    ap.add_argument("--fusebench", default=os.path.join(root, "build", "fusebench"))
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--torch-modes", default="eager32", help=f"comma-separated, of {','.join(TORCH_MODES)}")
    args = ap.parse_args()
    modes = args.torch_modes.split(",")
    if "eager32" not in modes or any(m not in TORCH_MODES for m in modes):
        sys.exit(f"bench_pytorch_gpu: --torch-modes takes eager32 and any of {', '.join(TORCH_MODES)}")
    print(f"bench_pytorch_gpu: torch {torch.__version__}; TF32 off; cudnn.benchmark {torch.backends.cudnn.benchmark}; "
          f"modes {','.join(modes)}", flush=True)
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    torch_ms, fb_ms = {}, {}  # (mode, name, batch) -> [ms]; (name, precision, batch, graph) -> [(ref, engine)]
    with tempfile.TemporaryDirectory(prefix="bench_pytorch_gpu_") as work:
        for rnd in range(args.rounds):
            for e in entries:
                name = e["name"]
                block = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-block", args.models, name,
                                        ",".join(str(b) for b in e["batches"]), str(args.seconds), ",".join(modes)],
                                       capture_output=True, text=True)
                if block.returncode != 0:
                    print(block.stderr[-3000:], flush=True)
                    continue
                for mode, per_batch in json.loads(block.stdout.strip().splitlines()[-1]).items():
                    for batch, ms in per_batch.items():
                        torch_ms.setdefault((mode, name, int(batch)), []).append(ms)
                onnx_path = os.path.join(args.models, f"{name}_opset{args.opset}.onnx")
                for key, v in time_fusebench(args.fusebench, onnx_path, e["batches"], args.seconds, work).items():
                    fb_ms.setdefault((name,) + key, []).append(v)
                print(f"bench_pytorch_gpu: round {rnd + 1}/{args.rounds} {name} done", flush=True)

    def med(values):
        values = [v for v in values if v]
        return statistics.median(values) if values else float("nan")

    def fusebench_ms(name, precision, batch, graph, executor):
        return med([pair[executor] for pair in fb_ms.get((name, precision, batch, graph), [])])

    cols = ["torch32", "ref", "ref/torch", "eng32", "eng32 graph"] + [m for m in modes if m != "eager32"] + \
           ["eng16", "eng16 graph", "graph16/eng16 graph"]
    print("\nmedians in ms; ref/torch: the GPU reference over PyTorch eager fp32; graph16/eng16 graph: torch.compile "
          "fp16 in a CUDA graph over the fp16 engine in one (above 1: the engine is faster)")
    widths = [max(12, len(c) + 2) for c in cols]  # a long name keeps a space before it
    print(f"{'model':<14}{'batch':>6}" + "".join(f"{c:>{w}}" for c, w in zip(cols, widths)))
    for e in entries:
        for batch in e["batches"]:
            name = e["name"]
            t32 = med(torch_ms.get(("eager32", name, batch), []))
            ref = fusebench_ms(name, "fp32", batch, False, 0)
            row = [t32, ref, ref / t32, fusebench_ms(name, "fp32", batch, False, 1), fusebench_ms(name, "fp32", batch, True, 1)]
            row += [med(torch_ms.get((m, name, batch), [])) for m in modes if m != "eager32"]
            e16g = fusebench_ms(name, "fp16", batch, True, 1)
            row += [fusebench_ms(name, "fp16", batch, False, 1), e16g,
                    med(torch_ms.get(("graph16", name, batch), [])) / e16g]
            print(f"{name:<14}{batch:>6}" + "".join(f"{v:>{w}.3f}" for v, w in zip(row, widths)))


if __name__ == "__main__":
    main()
