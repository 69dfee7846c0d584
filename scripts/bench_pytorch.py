#!/usr/bin/python3
"""Times fusebench's reference executor against PyTorch eager on the exported models
(scripts/export_models.py), side by side in one run, and prints reference/torch per model
and batch. Goal: 0.75-1.33x, so that "speedup over the reference" means "over PyTorch".

    /usr/bin/python3 scripts/bench_pytorch.py [--models DIR] [--fusebench build/fusebench]
                                              [--rounds 3] [--seconds 3]

Rounds alternate, per model: a torch block (batch 1 and 8), then a `fusebench run` block on
a generated one-model scenario (same batches, same thread count) whose reference median is
read back with `fusebench export --format json`. Each figure is the median over rounds.

Torch is measured as a user has it: with OpenBLAS (not netlib's single-threaded reference
BLAS) behind libblas.so.3, 2 threads, OMP_WAIT_POLICY=PASSIVE and GOMP_SPINCOUNT=10000 as
fusebench runs, and on OpenBLAS's own choice of kernels: a user's OPENBLAS_CORETYPE /
OPENBLAS_L2_SIZE are unset (they pinned OpenBLAS to other kernels on one machine here).
One exception: where OpenBLAS does not recognize the CPU and falls back to Prescott's
SSE3 kernels (a virtual machine's generic Xeon), the script sets OPENBLAS_CORETYPE to the
core the CPU's flags support (SkylakeX, Haswell), re-executes, and prints both. If
libblas.so.3 does not resolve to OpenBLAS through update-alternatives, the script
re-executes itself with LD_PRELOAD of OpenBLAS's libblas.so.3 (this process only). It
prints the BLAS torch loaded.
"""
import os
import sys

THREADS = 2
OPENBLAS_BLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"

# Before torch (and with it OpenBLAS and libgomp) is loaded: they read these at load time.
# A core type this script chose itself (ensure_openblas_core, then a re-exec) is kept.
if "BENCH_PYTORCH_DETECTED_CORE" not in os.environ:
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(var, None)
os.environ["OMP_NUM_THREADS"] = str(THREADS)
# As the fusebench binary does for itself (harness/cli/main.cpp): idle OpenMP workers spin
# briefly, then sleep. On a shared machine workers that spin long and lose their core made
# torch 2-60x slower here (a 128x256x256 matmul: 43 ms instead of 0.7 ms at load 8 on 2
# cores); workers that never spin wait for a wake-up at every parallel region.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["GOMP_SPINCOUNT"] = "10000"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402


def loaded_blas():
    """The BLAS libraries mapped into this process, after a matrix product has run."""
    a = torch.randn(64, 64)
    torch.mm(a, a)
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "blas" in os.path.basename(path):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def ensure_openblas():
    libs = loaded_blas()
    # torch calls sgemm_ through libblas.so.3; OpenBLAS's own library may be mapped anyway
    # (liblapack.so.3 pulls it in), so what counts is which file libblas.so.3 is.
    blas = [lib for lib in libs if os.path.basename(lib).startswith("libblas.so")]
    if blas and all("openblas" in lib for lib in blas):
        how = "LD_PRELOAD" if "LD_PRELOAD" in os.environ else "update-alternatives (libblas.so.3)"
        return libs, how
    if os.environ.get("LD_PRELOAD") == OPENBLAS_BLAS or not os.path.exists(OPENBLAS_BLAS):
        sys.exit(f"bench_pytorch: torch loaded {libs or 'no BLAS'}, not OpenBLAS; "
                 "install libopenblas0-openmp (scripts/setup.sh)")
    os.environ["LD_PRELOAD"] = OPENBLAS_BLAS
    os.execv(sys.executable, [sys.executable] + sys.argv)


def ensure_openblas_core(libs):
    """OpenBLAS picks its kernels from cpuid. On a CPU it does not know (a virtual machine's
    generic "Intel(R) Xeon(R) Processor") it falls back to Prescott's SSE3 kernels: a
    128x256x256 sgemm ran at 1-2 GFLOP/s here, torch's BERT twice as slow as our reference.
    Then name the core the CPU's flags support, re-execute, and say so."""
    import ctypes
    corename = ctypes.CDLL(next(lib for lib in libs if "openblas" in lib)).openblas_get_corename
    corename.restype = ctypes.c_char_p
    core = corename().decode()
    detected = os.environ.get("BENCH_PYTORCH_DETECTED_CORE")
    if detected:
        return f"{core} (OPENBLAS_CORETYPE set by this script: OpenBLAS detected {detected})"
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    want = "SkylakeX" if "avx512f" in flags else ("Haswell" if "avx2" in flags else "")
    if core.lower() != "prescott" or not want:
        return f"{core} (detected by OpenBLAS)"
    os.environ["OPENBLAS_CORETYPE"] = want
    os.environ["BENCH_PYTORCH_DETECTED_CORE"] = core
    os.execv(sys.executable, [sys.executable] + sys.argv)


def time_torch(model, inputs, seconds, min_iterations=10):
    """Median ms of model(*inputs) after warm-up, over at least `min_iterations` and
    about `seconds` of runs."""
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        samples = []
        start = time.perf_counter()
        while len(samples) < min_iterations or time.perf_counter() - start < seconds:
            t0 = time.perf_counter()
            model(*inputs)
            samples.append((time.perf_counter() - t0) * 1e3)
            if len(samples) >= 100000:
                break
    return statistics.median(samples)


def time_reference(fusebench, onnx_path, batches, seconds, work):
    """{batch: (reference median ms, engine median ms)} from one `fusebench run`."""
    name = os.path.basename(onnx_path).rsplit(".", 1)[0]
    scenario = {
        "name": f"torch-baseline-{name}",
        "description": "reference executor vs PyTorch eager (scripts/bench_pytorch.py)",
        "model": os.path.abspath(onnx_path),
        "matrix": {"batch": list(batches), "fusion": ["standard"]},
        "threads": THREADS,
        "timing": {"warmup_ms": 300, "warmup_iterations": 3, "min_iterations": 10,
                   "max_seconds": seconds, "target_rel_ci": 0.01},
    }
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(scenario, f, indent=2)
    db = os.path.join(work, "bench.db")
    run = subprocess.run([fusebench, "run", path, "--db", db, "--report", os.path.join(work, "report.html")],
                         capture_output=True, text=True)
    if run.returncode not in (0, 1):  # 1: an accuracy verdict failed; timings still stand
        sys.exit(f"bench_pytorch: fusebench run {path} failed ({run.returncode}):\n{run.stdout}{run.stderr}")
    rows = json.loads(subprocess.run([fusebench, "export", "--db", db, "--format", "json"],
                                     capture_output=True, text=True, check=True).stdout)
    last_run = max(r["run"] for r in rows)
    out = {}
    for r in rows:
        if r["run"] == last_run:
            out.setdefault(int(r["batch"]), {})[r["executor"]] = r["median_ms"]
    return {b: (v["reference"], v["engine"]) for b, v in out.items()}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(root, "build", "torch-models"), help="export folder")
    ap.add_argument("--fusebench", default=os.path.join(root, "build", "fusebench"))
    ap.add_argument("--only", default="", help="comma-separated model names (default: all exported)")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="time per executor, model and batch in a round")
    args = ap.parse_args()

    libs, how = ensure_openblas()
    core = ensure_openblas_core(libs)
    torch.set_num_threads(THREADS)
    print(f"bench_pytorch: torch {torch.__version__}, {torch.get_num_threads()} threads; BLAS loaded: "
          f"{', '.join(libs)} (via {how}); OpenBLAS core {core}; OPENBLAS_L2_SIZE unset, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '')} GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', '')}")
    with open("/proc/loadavg") as f:
        print(f"bench_pytorch: load average before: {' '.join(f.read().split()[:3])}")

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_models  # the same modules and seeds as the exported ONNX files

    with open(os.path.join(args.models, "manifest.json")) as f:
        manifest = json.load(f)
    entries = [e for e in manifest["models"] if not args.only or e["name"] in args.only.split(",")]
    models = {name: model for name, model, _ in export_models.make_models([e["name"] for e in entries])}

    torch_ms, ref_ms, engine_ms = {}, {}, {}  # (model, batch) -> one median per round
    with tempfile.TemporaryDirectory(prefix="bench_pytorch_") as work:
        for rnd in range(args.rounds):
            for e in entries:
                name = e["name"]
                for batch in e["batches"]:
                    inputs = [torch.from_numpy(np.load(os.path.join(args.models, f"{name}_b{batch}_in_{n}.npy")))
                              for n in e["inputs"]]
                    torch_ms.setdefault((name, batch), []).append(time_torch(models[name], inputs, args.seconds))
                onnx_path = os.path.join(args.models, f"{name}_opset{args.opset}.onnx")
                for batch, (ref, eng) in time_reference(args.fusebench, onnx_path, e["batches"], args.seconds,
                                                        work).items():
                    ref_ms.setdefault((name, batch), []).append(ref)
                    engine_ms.setdefault((name, batch), []).append(eng)
                print(f"bench_pytorch: round {rnd + 1}/{args.rounds} {name} done", flush=True)

    with open("/proc/loadavg") as f:
        print(f"bench_pytorch: load average after: {' '.join(f.read().split()[:3])}")
    print(f"\n{'model':<14}{'batch':>6}{'torch ms':>11}{'reference ms':>14}{'ref/torch':>11}"
          f"{'  (per round)':<26}{'engine ms':>11}{'engine/torch':>14}")
    for key in torch_ms:
        t, r, g = (statistics.median(d[key]) for d in (torch_ms, ref_ms, engine_ms))
        per_round = " ".join(f"{a / b:.2f}" for a, b in zip(ref_ms[key], torch_ms[key]))
        verdict = "" if 0.75 <= r / t <= 1.33 else "  outside 0.75-1.33"
        print(f"{key[0]:<14}{key[1]:>6}{t:>11.3f}{r:>14.3f}{r / t:>10.2f}x  ({per_round}){'':<{max(0, 22 - len(per_round))}}"
              f"{g:>11.3f}{g / t:>13.2f}x{verdict}")


if __name__ == "__main__":
    main()
