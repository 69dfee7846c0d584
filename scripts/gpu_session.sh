#!/usr/bin/env bash
# One round trip on a GPU node, as the device tool runs it (a bare machine each call):
# the offline build from the carried Debian packages (scripts/offline_deps.sh), the CUDA
# backend's tests, every zoo model on both GPU executors through `fusebench run`, and
# PyTorch eager against the GPU reference on the exported models. Everything it prints
# and the databases go to OUT (default ./gpu-out).
#
#   scripts/gpu_session.sh [DEBS_DIR] [STAGES]     STAGES: build,test,zoo,torch (default), suite, checks, graphs, sweep, layers, streams, mpi
#
# suite: the whole tree and its full ctest run (offline_deps.sh test) instead of the CUDA
# tests alone; checks: tf32 against fp32, the seed's plugin in a GPU build (CPU fallback),
# the GPU's environment as NVML reads it, an A/A compare; graphs: the engine eager against
# the engine replayed as one CUDA graph, case by case, and the depthwise convolutions'
# layers in a profile; sweep: `profile --batch-sweep` of BERT and ResNet (the batch
# question: what limits each layer as the batch grows); layers: where the fp16 engine's time
# goes at batch 32 on the exported BERT-base, ResNet-50 and ViT (LAYER_MODELS, LAYER_BATCH, LAYER_PRECISION (fp16);
# LAYER_LAYOUTS=nhwc,nchw times each model channels-last and then plain NCHW, FUSEBENCH_CUDA_CHANNELS_LAST=0); streams: load cases
# served by 1-8 execution contexts on streams of their own (scenarios/load-gpu-streams.json, then the same on
# STREAM_MODELS); mpi: one rank per GPU under
# mpirun (OpenMPI unpacked from MPI_DEBS, a machine of several GPUs); CXX and BUILD_DIR pick the compiler (CXX=g++-13 BUILD_DIR=build-g13).
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
nproc; grep -m1 "model name" /proc/cpuinfo; grep -m1 -o "avx512[a-z_0-9]*\|amx[a-z_0-9]*" /proc/cpuinfo | sort -u | tr "\n" " "; echo; g++-12 --version | head -1; cmake --version | head -1

export CXX=${CXX:-g++-12} BUILD_DIR=${BUILD_DIR:-build-gpu}
if has build || has suite; then
  stamp "offline build ($CXX)"
  targets=(fusebench test_cuda_backend ${TESTS:-})  # TESTS: more test programs to build and run
  has suite && targets=()  # every target
  scripts/offline_deps.sh build "$debs" "${targets[@]}" || { stamp "build failed"; exit 1; }
fi
# The prefix's environment comes from this call's build stage: a bare machine each call
# keeps no unpacked prefix, and without it every later stage fails library by library.
[ -f "$debs/env.sh" ] || { stamp "$debs/env.sh not found: run the build stage in the same call (STAGES build,...)"; exit 1; }
# shellcheck disable=SC1090
. "$debs/env.sh"
fb=$BUILD_DIR/fusebench

if has test; then
  stamp "CUDA backend tests"
  for t in test_cuda_backend ${TESTS:-}; do "$BUILD_DIR/tests/$t" --gtest_color=no 2>&1 | grep -vE "^\[ +(RUN|OK) +\]" | tail -40; done
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

if has graphs; then
  stamp "CUDA graphs against eager launches, case by case"
  for m in "bert?layers=4&hidden=512&heads=8&seq=128" mobilenet; do
    cat > "$out/graphs.json" <<JSON
{"name": "gpu-graphs", "model": "zoo:$m",
 "matrix": {"batch": [1, 8], "precision": ["fp32", "fp16"], "fusion": ["none", "aggressive"], "cuda_graph": [false, true],
            "device": ["cuda"]},
 "timing": {"warmup_ms": 200, "min_iterations": 20, "max_seconds": 0.5, "processes": 3}}
JSON
    "$fb" run "$out/graphs.json" --db "$out/graphs.db" 2>&1 | tail -22
  done
  "$fb" export --db "$out/graphs.db" --format csv > "$out/graphs.csv" 2>&1 || true
  "$fb" profile zoo:mobilenet --device cuda --fusion none --batch 1 2>&1 | head -45
fi

if has sweep; then
  stamp "the batch question: profile --batch-sweep on the GPU"
  for m in "bert?layers=4&hidden=512&heads=8&seq=128" resnet; do
    for p in fp32 fp16; do
      "$fb" profile "zoo:$m" --device cuda --precision $p --batch-sweep 1,8,32 --top 12 --iterations 30 2>&1 | head -30
    done
  done
fi

if has layers; then
  stamp "where the fp16 engine's time goes: profile of the exported models"
  lm=$BUILD_DIR/torch-models-layers
  python3 scripts/export_models.py --out "$lm" --models "${LAYER_MODELS:-bert_base,resnet50,vit_tiny}" \
    --batches "${LAYER_BATCH:-32}" 2>&1 | tail -3
  for f in "$lm"/*_opset17.onnx; do
    # LAYER_LAYOUTS=nhwc,nchw: each model channels-last (the CUDA backend's default) and then
    # plain NCHW (FUSEBENCH_CUDA_CHANNELS_LAST=0), an A/B in one call.
    for layout in $(echo "${LAYER_LAYOUTS:-nhwc}" | tr , " "); do
      cl=1; [ "$layout" = nchw ] && cl=0
      echo "--- $f ($layout)"
      # The engine's answer (fp16 unless LAYER_PRECISION) against the fp32 GPU reference, timed.
      cat > "$out/layers.json" <<JSON
{"name": "gpu-layers-$layout", "model": "$PWD/$f",
 "matrix": {"batch": [${LAYER_BATCH:-32}], "precision": ["${LAYER_PRECISION:-fp16}"], "fusion": ["aggressive"], "cuda_graph": [true], "device": ["cuda"]},
 "timing": {"warmup_ms": 200, "min_iterations": 20, "max_seconds": 1, "processes": 1}}
JSON
      FUSEBENCH_CUDA_CHANNELS_LAST=$cl "$fb" run "$out/layers.json" --db "$out/layers.db" 2>&1 | grep -E "^\[|ERROR|FAIL" | head -4
      FUSEBENCH_CUDA_CHANNELS_LAST=$cl "$fb" profile "$f" --device cuda --precision "${LAYER_PRECISION:-fp16}" --fusion aggressive \
        --batch "${LAYER_BATCH:-32}" --top 25 --iterations 30 2>&1 | head -60
    done
  done
fi

if has streams; then
  stamp "load on 1, 2, 4 and 8 streams: throughput (offline) and the peak rate within the p99 bound (server)"
  [ "${STREAM_SKIP_BERT:-0}" = 1 ] ||
    "$fb" run scenarios/load-gpu-streams.json --db "$out/streams.db" 2>&1 | grep -vE "^  (measuring|peak search)" | tail -40
  for m in ${STREAM_MODELS:-resnet}; do
    # STREAM_BOUND_MS: the server's bound for these models; STREAM_CUDA_GRAPH=1: replayed as CUDA graphs.
    sed -e "s/\"zoo:bert\"/\"zoo:$m\"/" -e "s/\"load-gpu-streams\"/\"load-gpu-streams-$m\"/" \
      -e "s/\"latency_bound_ms\": 2,/\"latency_bound_ms\": ${STREAM_BOUND_MS:-2},/" \
      -e "s/\"threads\": 1,/\"threads\": 1, \"cuda_graph\": $([ "${STREAM_CUDA_GRAPH:-0}" = 1 ] && echo true || echo false),/" \
      scenarios/load-gpu-streams.json > "$out/streams-$m.json"
    "$fb" run "$out/streams-$m.json" --db "$out/streams.db" 2>&1 | grep -vE "^  (measuring|peak search)" | tail -40
  done
  "$fb" export --db "$out/streams.db" --format csv > "$out/streams.csv" 2>&1 || true
fi

if has mpi; then
  # One rank per GPU. OpenMPI from Debian 12's packages, unpacked into a prefix the way the
  # rest is (fetched on a connected machine with `apt-get download openmpi-bin
  # openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 libevent-core-2.1-7
  # libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200
  # libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libnuma1 libmunge2 libltdl7 libgfortran5
  # libquadmath0` into MPI_DEBS, default .mpidebs); OPAL_PREFIX relocates it.
  stamp "one rank per GPU under mpirun"
  mp=$PWD/.mpi-prefix
  rm -rf "$mp" && mkdir -p "$mp"
  for d in "${MPI_DEBS:-.mpidebs}"/*.deb; do dpkg -x "$d" "$mp"; done
  export OPAL_PREFIX=$mp/usr PMIX_INSTALL_PREFIX=$mp/usr PATH=$mp/usr/bin:$PATH \
    LD_LIBRARY_PATH=$mp/usr/lib/x86_64-linux-gnu:$mp/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-} \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
  nvidia-smi -L
  CMAKE_ARGS="-DMPI_CXX_COMPILER=$mp/usr/bin/mpicxx.openmpi" BUILD_DIR=build-mpi \
    scripts/offline_deps.sh build "$debs" fusebench > "$out/mpi-build.log" 2>&1 || { tail -30 "$out/mpi-build.log"; }
  grep -iE "mpi" build-mpi.configure.log | head -5
  cat > "$out/mpi.json" <<JSON
{"name": "gpu-ranks", "model": "zoo:bert?layers=4&hidden=512&heads=8&seq=128",
 "matrix": {"batch": [1, 2, 4, 8], "precision": ["fp32", "fp16"], "fusion": ["aggressive"], "device": ["cuda"]},
 "timing": {"warmup_ms": 200, "min_iterations": 20, "max_seconds": 1, "processes": 3}}
JSON
  t=$SECONDS
  build-mpi/fusebench run "$out/mpi.json" --db "$out/one.db" 2>&1 | tail -3
  echo "one process: $((SECONDS - t)) s"
  t=$SECONDS
  mpirun.openmpi -np 3 --oversubscribe build-mpi/fusebench run "$out/mpi.json" --db "$out/ranks.db" --cores-per-worker 4 2>&1 | tail -14
  echo "mpirun -np 3: $((SECONDS - t)) s"
  python3 - "$out/ranks.db" "$out/one.db" <<'PY'
import json, sqlite3, sys
for db in sys.argv[1:]:
    rows = sqlite3.connect(db).execute("select case_key, host, isolation, gpu_json from cases").fetchall()
    print(db)
    for key, host, isolation, g in rows:
        setup = json.loads(g).get("setup", {}) if g else {}
        print(f"  {key}  {isolation}  {setup.get('uuid', '?')}  {setup.get('name', '?')}")
PY
  build-mpi/fusebench compare --db "$out/ranks.db" --baseline-db "$out/one.db" 2>&1 | tail -12
fi

if has torch; then
  stamp "PyTorch eager against the GPU reference"
  # TORCH_MODELS, TORCH_BATCHES, TORCH_MODES, TORCH_ROUNDS: the issue's rows (bert_base,resnet50 at
  # 1,8,32 with eager32,eager16,compile16,graph16) instead of the suite's export.
  models=$BUILD_DIR/torch-models  # the suite's export, when it ran (export_models.py skips an up-to-date folder)
  [ -n "${TORCH_MODELS:-}" ] && models=$BUILD_DIR/torch-models-bench
  python3 scripts/export_models.py --out "$models" ${TORCH_MODELS:+--models "$TORCH_MODELS"} \
    ${TORCH_BATCHES:+--batches "$TORCH_BATCHES"} 2>&1 | tail -3
  python3 scripts/bench_pytorch_gpu.py --models "$models" --fusebench "$fb" --rounds "${TORCH_ROUNDS:-2}" --seconds 1.5 \
    --torch-modes "${TORCH_MODES:-eager32}" > "$out/torch.log" 2>&1
  grep -E "^accuracy|ERROR|FAIL" "$out/torch.log" | sort | uniq -c
  tail -24 "$out/torch.log"
fi
stamp "done"
