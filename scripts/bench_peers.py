#!/usr/bin/env python3
"""Times fusebench's engine and reference side by side with the runtimes a user would pick
instead, on the same ONNX files, inputs and thread count, in one process and one run:

    ONNX Runtime   CPU execution provider, graph optimization 'all' (and 'disabled')
    OpenVINO       CPU, PERFORMANCE_HINT=LATENCY, f32 inference precision, static shapes
    torch eager    the PyTorch original of an exported model (scripts/export_models.py)
    torch.compile  the same module through inductor (freezing on, as for CPU inference)

Run with the peers' environment (scripts/peers_setup.sh):

    build/peers/bin/python scripts/bench_peers.py --fusebench build/fusebench \\
        --model torch-resnet18=build/torch-models/resnet18_opset17.onnx [--model ...] \\
        [--batch 1,8] [--threads 2] [--rounds 3] [--seconds 2] [--peers ort,openvino,eager,compile]
        [--append docs/performance.md]

scripts/bench_ort.sh gathers the models (the zoo's and the exported ones) and runs this.
A model named torch-NAME has its PyTorch original taken from export_models.make_models(NAME);
the others have no torch columns.

Per model and batch, in rounds (so drifts in machine load hit every runtime alike): one
`fusebench run` of a one-case scenario (engine and reference, block alternation: each runs
in a loop of its own, 20 runs at a time, as the peers do), then each peer in turn, each
timed in-process with perf_counter after a warm-up; a figure is the median over rounds of
each round's median. The inputs are the ones fusebench itself uses (`fusebench exec
--save-inputs`); every peer's outputs are checked against fusebench's before any timing.
Prints the CPU, cores, load, the ISA oneDNN dispatched to, and a table: medians in ms with
peer / engine (above 1: the engine is faster) and reference / torch eager.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(SCRIPTS)
PEERS = ("ort", "openvino", "eager", "compile")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", default=[], metavar="NAME=PATH", help="repeatable")
    ap.add_argument("--fusebench", default=os.path.join(ROOT, "build", "fusebench"))
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="time per runtime, model and batch in a round")
    ap.add_argument("--fusion", default="aggressive", help="the engine's fusion level")
    ap.add_argument("--alternation", default="block", choices=("block", "iteration"))
    ap.add_argument("--winograd", default="on", choices=("on", "off"),
                    help="off: every convolution direct (a detector whose boxes sit on a threshold can flip)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--only", default="", help="comma-separated model names to keep")
    ap.add_argument("--append", default="", metavar="FILE.md",
                    help="append the table to FILE under a heading naming this CPU (docs/performance.md)")
    a = ap.parse_args()
    a.models = []
    for spec in a.model:
        name, eq, path = spec.partition("=")
        if not eq:
            ap.error(f"--model {spec}: expected NAME=PATH")
        if not a.only or name in a.only.split(","):
            a.models.append((name, path))
    if not a.models:
        ap.error("give at least one --model NAME=PATH")
    a.batches = [int(b) for b in a.batch.split(",")]
    a.peers = [p for p in a.peers.split(",") if p]
    for p in a.peers:
        if p not in PEERS:
            ap.error(f"--peers: unknown peer {p}")
    return a


ARGS = parse_args()
# Before torch (and its libgomp) loads, as scripts/bench_pytorch.py and the fusebench binary
# run: idle OpenMP workers spin briefly, then sleep (long spinning on a shared machine made
# torch 2-60x slower here).
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["GOMP_SPINCOUNT"] = "10000"

import numpy as np  # noqa: E402

try:
    import onnxruntime as ort  # noqa: E402
    import openvino as ov  # noqa: E402
except ImportError as e:
    sys.exit(f"bench_peers: {e}; run scripts/peers_setup.sh and use build/peers/bin/python")
torch = None
if "eager" in ARGS.peers or "compile" in ARGS.peers:
    try:
        import torch  # noqa: E402
    except ImportError as e:
        print(f"bench_peers: no torch ({e}): torch eager and torch.compile left out", flush=True)
        ARGS.peers = [p for p in ARGS.peers if p not in ("eager", "compile")]


def sh(*cmd, ok=(0,)):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in ok:
        sys.exit(f"bench_peers: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    """'AMD EPYC (family 25, model 17; avx2 avx512f avx512_bf16 avx512_vnni)': a virtual machine's
    model name can be as bare as 'AMD EPYC', so the family, model and vector flags go with it."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    flags = [f for f in ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile") if f in info.get("flags", "").split()]
    return (f"{info.get('model name', 'unknown CPU')} (family {info.get('cpu family', '?')}, "
            f"model {info.get('model', '?')}; {' '.join(flags) or 'no AVX2'})")


def onednn_isa(fusebench):
    """The ISA oneDNN dispatches to, as fusebench's build log says it for a bf16 build."""
    out = sh(fusebench, "inspect", "zoo:mlp?in=16&hidden=16&out=4&layers=1", "--precision", "bf16")
    m = re.search(r"oneDNN dispatches to (\w+)", out)
    return m.group(1) if m else "unknown (no 'oneDNN dispatches to' in `fusebench inspect --precision bf16`)"


def engine_kernels(fusebench, path, batch):
    """The kernels the engine's layers run on (oneDNN's implementations, with their ISA where
    oneDNN names one, and fusebench's own), with their counts, from `fusebench inspect`."""
    out = sh(fusebench, "inspect", path, "--batch", str(batch), "--fusion", ARGS.fusion,
             *(["--no-winograd"] if ARGS.winograd == "off" else []))
    kinds = {}
    for k in re.findall(r"^#\d+\s+\S+\s+\[(.*?), (?:fp32|tf32|bf16|fp16|int8)\b", out, re.M):
        kinds[k] = kinds.get(k, 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])) or "none"


def time_call(fn, seconds, min_iterations=10, warmup=3):
    """Median ms of fn() after `warmup` calls, over at least `min_iterations` and about `seconds` of calls."""
    for _ in range(warmup):
        fn()
    samples = []
    start = time.perf_counter()
    while len(samples) < min_iterations or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def time_fusebench(path, batch, work):
    """(engine median ms, reference median ms) from one `fusebench run` of a one-case scenario."""
    scenario = {
        "name": "peers-comparison", "model": os.path.abspath(path),
        "matrix": {"batch": [batch], "fusion": [ARGS.fusion]}, "threads": ARGS.threads,
        # Block alternation: the engine runs 20 times in a row, then the reference, each with
        # its weights in cache as a peer timed in its own loop has them.
        "timing": {"warmup_ms": 200, "min_iterations": 10, "max_seconds": ARGS.seconds, "target_rel_ci": 0.005,
                   "alternation": ARGS.alternation, "block_iterations": 20},
    }
    if ARGS.winograd == "off":
        scenario["winograd"] = False
    spec = os.path.join(work, "case.json")
    with open(spec, "w") as f:
        json.dump(scenario, f)
    db = os.path.join(work, f"fb-{time.monotonic_ns()}.db")
    sh(ARGS.fusebench, "run", spec, "--db", db, "--report", os.path.join(work, "r.html"), ok=(0, 1))  # 1: accuracy verdict
    rows = {r["executor"]: r["median_ms"] for r in json.loads(sh(ARGS.fusebench, "export", "--db", db, "--format", "json"))}
    os.remove(db)
    return rows["engine"], rows["reference"]


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def max_abs_err(got, want):
    """max |got - want| over outputs of equal shape; outputs whose shapes differ are named."""
    err, diffs = 0.0, []
    for name, g in got.items():
        g, w = np.asarray(g), want[name]
        if g.shape != w.shape:
            diffs.append(f"{name} {list(g.shape)} vs {list(w.shape)}")
        elif g.size:
            err = max(err, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
    return f"{err:.1e}" + (f" (shapes differ: {'; '.join(diffs)})" if diffs else "")


class Peers:
    """The peers' runners for one model: {peer: (setup(batch, feeds) -> run() -> {output: array})}."""

    def __init__(self, name, path, output_names):
        self.name, self.path, self.outputs = name, path, output_names
        self.torch_module = self.compiled = None
        if torch is not None and name.startswith("torch-"):
            sys.path.insert(0, SCRIPTS)
            sys.dont_write_bytecode = True  # no scripts/__pycache__ in the tree
            import export_models  # the same modules and seeds as the exported ONNX files
            torch.set_num_threads(ARGS.threads)
            (_, self.torch_module, _), = export_models.make_models([name[len("torch-"):]])

    def available(self):
        return [p for p in ARGS.peers if p in ("ort", "openvino") or self.torch_module is not None]

    def make(self, peer, feeds):
        """A dict of label -> zero-argument callable returning {output name: array}."""
        if peer == "ort":
            made = {}
            for label, level in (("ORT all", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                                 ("ORT disabled", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
                so = ort.SessionOptions()
                so.intra_op_num_threads, so.inter_op_num_threads = ARGS.threads, 1
                so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                so.graph_optimization_level = level
                s = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])
                made[label] = (lambda s=s: dict(zip(self.outputs, s.run(self.outputs, feeds))))
            return made
        if peer == "openvino":
            core = ov.Core()
            model = core.read_model(self.path)
            model.reshape({name: list(a.shape) for name, a in feeds.items()})  # static shapes, as the engine binds
            compiled = core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY",
                                                         "INFERENCE_NUM_THREADS": ARGS.threads,
                                                         "INFERENCE_PRECISION_HINT": "f32"})
            request = compiled.create_infer_request()

            def run():
                request.infer(feeds, share_inputs=True, share_outputs=True)
                return {o: request.get_tensor(o).data for o in self.outputs}
            return {"OpenVINO": run}
        inputs = [torch.from_numpy(feeds[n]) for n in feeds]
        if peer == "eager":
            module = self.torch_module
        else:
            if self.compiled is None:
                import torch._inductor.config as inductor_config
                inductor_config.freezing = True  # PyTorch's advice for CPU inference
                self.compiled = torch.compile(self.torch_module, dynamic=False)
            module = self.compiled

        def run():
            with torch.no_grad():
                out = module(*inputs)
            out = out if isinstance(out, (tuple, list)) else (out,)
            return {n: t.numpy() for n, t in zip(self.outputs, out)}
        return {"torch eager" if peer == "eager" else "torch.compile": run}


COLUMNS = ("ORT all", "ORT disabled", "OpenVINO", "torch eager", "torch.compile")


def main():
    a = ARGS
    started = datetime.datetime.now(datetime.timezone.utc)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    isa = onednn_isa(a.fusebench)
    cores = os.cpu_count()
    header = [
        f"CPU: {cpu_model()}, {cores} cores ({len(os.sched_getaffinity(0))} usable), oneDNN dispatches to {isa}",
        f"threads {a.threads} everywhere; rounds {a.rounds} x {a.seconds} s; engine fusion {a.fusion}, "
        f"{a.alternation} alternation, Winograd {a.winograd}",
        f"onnxruntime {ort.__version__}, openvino {ov.get_version()}, numpy {np.__version__}"
        + (f", torch {torch.__version__}" if torch is not None else ""),
        f"load before: {load()}",
    ]
    for line in header:
        print(f"bench_peers: {line}", flush=True)
    rows, notes = [], []
    with tempfile.TemporaryDirectory(prefix="bench_peers_") as work:
        for name, path in a.models:
            output_names = [o.name for o in ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_outputs()]
            peers = Peers(name, path, output_names)
            for batch in a.batches:
                io = os.path.join(work, f"{sanitize(name)}-b{batch}")
                sh(a.fusebench, "exec", path, "--executor", "engine", "--fusion", a.fusion, "--batch", str(batch),
                   "--threads", str(a.threads), "--save-inputs", os.path.join(io, "in"),
                   "--save-outputs", os.path.join(io, "out"), *(["--no-winograd"] if a.winograd == "off" else []))
                input_names = [i.name for i in ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_inputs()]
                feeds = {n: np.load(os.path.join(io, "in", sanitize(n) + ".npy")) for n in input_names}
                want = {n: np.load(os.path.join(io, "out", sanitize(n) + ".npy")) for n in output_names}
                runners, agreement = {}, []
                for peer in peers.available():
                    t0 = time.perf_counter()
                    try:
                        made = peers.make(peer, feeds)
                        for label, run in made.items():
                            agreement.append(f"{label} {max_abs_err(run(), want)}")
                    except Exception as e:  # a peer that cannot take the model is said, not fatal
                        print(f"bench_peers: {name} b={batch}: {peer} failed: {type(e).__name__}: {e}"[:2000], flush=True)
                        continue
                    runners.update(made)
                    if peer in ("openvino", "compile"):
                        agreement[-1] += f" (ready in {time.perf_counter() - t0:.1f} s)"
                kernels = engine_kernels(a.fusebench, path, batch)
                print(f"bench_peers: {name} b={batch}: engine's kernels: {kernels}", flush=True)
                print(f"bench_peers: {name} b={batch}: max |peer - engine|: {', '.join(agreement)}", flush=True)
                t = {k: [] for k in ("engine", "reference", *runners)}
                for _ in range(a.rounds):
                    eng, ref = time_fusebench(path, batch, work)
                    t["engine"].append(eng)
                    t["reference"].append(ref)
                    for label, run in runners.items():
                        t[label].append(time_call(run, a.seconds))
                row = {"model": name, "batch": batch, "load": load().split()[0],
                       **{k: statistics.median(v) for k, v in t.items()}}
                rows.append(row)
                rounds = "; ".join(f"{k} {' '.join(f'{x:.2f}' for x in v)}" for k, v in t.items())
                print(f"bench_peers: {name} b={batch}: rounds (ms): {rounds}", flush=True)
                notes.append(f"{name} b={batch}: rounds (ms): {rounds}; engine kernels {kernels}; "
                             f"max |peer - engine| {', '.join(agreement)}")
    header.append(f"load after: {load()}")
    print(f"bench_peers: {header[-1]}")
    table = make_table(rows)
    print("\n" + table)
    if a.append:
        append(a.append, header, table, notes, started, commit)


def ratio(row, label):
    return row[label] / row["engine"] if label in row else None


def make_table(rows):
    cols = [c for c in COLUMNS if any(c in r for r in rows)]
    lines = ["| model | batch | load | engine ms | reference ms | " + " | ".join(f"{c} ms (/ engine)" for c in cols)
             + " | best ORT / engine | reference / torch eager |",
             "|---|---|---|---|---|" + "---|" * len(cols) + "---|---|"]
    for r in rows:
        cells = [f"{r[c]:.2f} ({ratio(r, c):.2f}x)" if c in r else "—" for c in cols]
        best = min((ratio(r, c) for c in ("ORT all", "ORT disabled") if c in r), default=None)
        ref_eager = f"{r['reference'] / r['torch eager']:.2f}x" if "torch eager" in r else "—"
        lines.append(f"| {r['model']} | {r['batch']} | {r['load']} | {r['engine']:.2f} | {r['reference']:.2f} | "
                     + " | ".join(cells) + f" | {'—' if best is None else f'{best:.2f}x'} | {ref_eager} |")
    return "\n".join(lines)


def append(doc, header, table, notes, started, commit):
    """Adds this run under '## CPU model' in doc (the heading made if missing), after that
    section's earlier runs."""
    heading = f"## {cpu_model()}"
    command = "build/peers/bin/python scripts/bench_peers.py " + " ".join(sys.argv[1:])
    block = "\n".join([
        f"### {started:%Y-%m-%d %H:%M} UTC, started at {commit or 'unknown commit'}", "",
        f"`{command}`", "",
        *[f"- {line}" for line in header], "",
        table, "",
        "Peer / engine above 1: the engine is faster. Medians of each round's median; load is the "
        "1-minute average when the row finished.", "",
        *[f"- {n}" for n in notes], "", ""])
    text = open(doc).read() if os.path.exists(doc) else (
        "# Performance against other runtimes, by CPU\n\n"
        "Written by `scripts/bench_peers.py --append docs/performance.md` (through "
        "`scripts/bench_ort.sh`), one section per CPU model, newest run last.\n\n")
    if not text.endswith("\n\n"):
        text = text.rstrip("\n") + "\n\n"
    lines = text.split("\n")
    if heading not in lines:
        text += heading + "\n\n" + block
    else:
        at = lines.index(heading) + 1
        nxt = next((i for i in range(at, len(lines)) if lines[i].startswith("## ")), len(lines))
        text = "\n".join(lines[:nxt]).rstrip("\n") + "\n\n" + block + "\n".join(lines[nxt:])
    with open(doc, "w") as f:
        f.write(text.rstrip("\n") + "\n")
    print(f"bench_peers: appended to {doc} under '{heading}'")


if __name__ == "__main__":
    main()
