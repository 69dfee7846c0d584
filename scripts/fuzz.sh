#!/usr/bin/env bash
# Fuzzes fusebench's readers of hostile input: `scripts/fuzz.sh [SECONDS] [TARGET...]` runs
# each libFuzzer target (tests/fuzz: fuzz_onnx_import, fuzz_scenario, fuzz_tensor_file,
# fuzz_plan, fuzz_merge) for SECONDS (default 60) under AddressSanitizer and
# UndefinedBehaviorSanitizer, from seed corpora made here: the zoo's models, the shipped
# scenarios, tests/data/npy, ../shared/onnx-node-tests (models and their .pb tensors, where
# present), plans and a shard database written by this build. What counts as a finding:
# tests/fuzz/fuzz_guard.h. Findings are kept in build-asan/fuzz/findings/TARGET/; each one,
# once fixed, goes into tests/data/fuzz_regressions/TARGET/, which test_fuzz_regressions
# runs through the ordinary binary. Prints, and writes to build-asan/fuzz/summary.tsv, the
# executions, coverage (libFuzzer's cov and ft), corpus size and findings of each target;
# exits 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."
budget="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(fuzz_onnx_import fuzz_scenario fuzz_tensor_file fuzz_plan fuzz_merge); fi

scripts/setup.sh sanitize
scripts/sanitized_build.sh asan fusebench "${targets[@]}"
bin=build-asan
fuzz=$bin/fuzz
node_tests=../shared/onnx-node-tests
mkdir -p "$fuzz"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer; fi

# Seeds, made once per build folder (plans per commit).
# A plan names the commit that wrote it and is refused by another: its seeds and corpus are
# kept per commit, or every mutated plan would stop at that check.
commit=$(git rev-parse --short=12 HEAD)
folder_of() { if [ "$1" = fuzz_plan ]; then echo "$1-$commit"; else echo "$1"; fi; }

seed() {  # seed TARGET: the folder of TARGET's seeds, filled when empty
  local d="$fuzz/seeds/$(folder_of "$1")"
  if [ -d "$d" ] && [ -n "$(ls -A "$d")" ]; then echo "$d"; return; fi
  mkdir -p "$d"
  local zoo=("mlp?in=8&hidden=8&layers=1" "bert?layers=1&hidden=16&heads=2&seq=4" "resnet?blocks=1&width=4&stages=2&image=8"
             "mobilenet?width=4&blocks=2&image=8" "vit?layers=1&hidden=16&heads=2&patch=4&image=8")
  case "$1" in
    fuzz_onnx_import)
      local i=0
      for z in "${zoo[@]}"; do $bin/fusebench zoo export "$z" -o "$d/zoo_$((i++)).onnx" > /dev/null; done
      if [ -d "$node_tests" ]; then
        for m in "$node_tests"/*/model.onnx; do cp "$m" "$d/$(basename "$(dirname "$m")").onnx"; done
      fi ;;
    fuzz_scenario) cp scenarios/*.json "$d/" ;;
    fuzz_tensor_file)
      cp tests/data/npy/* "$d/" 2>/dev/null || true
      if [ -d "$node_tests" ]; then
        for t in "$node_tests"/*/test_data_set_0/input_0.pb; do cp "$t" "$d/$(basename "$(dirname "$(dirname "$t")")").pb"; done
      fi ;;
    fuzz_plan)
      local i=0
      for z in "${zoo[@]}"; do
        $bin/fusebench build "zoo:$z" --fusion aggressive -o "$fuzz/p.plan" > /dev/null
        head -c -64 "$fuzz/p.plan" > "$d/plan_$((i++))"  # without its SHA-256: the target appends it
      done ;;
    fuzz_merge)
      cat > "$fuzz/shard.json" <<'JSON'
{"name": "shard", "model": "zoo:mlp?in=4&hidden=4&layers=1", "matrix": {"batch": [1, 2]},
 "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 3, "max_iterations": 3, "processes": 1}}
JSON
      rm -f "$fuzz/shard.db"
      $bin/fusebench run "$fuzz/shard.json" --db "$fuzz/shard.db" --shard 1/2 --report "$fuzz/shard.html" > /dev/null
      sqlite3 "$fuzz/shard.db" "PRAGMA journal_mode=DELETE; VACUUM;" > /dev/null
      cp "$fuzz/shard.db" "$d/shard_1_of_2.db" ;;
  esac
  echo "$d"
}

printf 'target\tseconds\texecutions\tcov\tft\tcorpus\tfindings\tcommit\n' > "$fuzz/summary.tsv.new"
status=0
for t in "${targets[@]}"; do
  seeds=$(seed "$t")
  corpus="$fuzz/corpus/$(folder_of "$t")"; findings="$fuzz/findings/$t"
  mkdir -p "$corpus" "$findings"
  before=$(ls "$findings" | wc -l)
  started=$SECONDS
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb/-malloc_limit_mb: a runaway allocation.
  "$bin/tests/fuzz/$t" "$corpus" "$seeds" -max_total_time="$budget" -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=2048 \
    -max_len=1048576 -print_final_stats=1 -artifact_prefix="$findings/" > "$fuzz/$t.log" 2>&1 || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$fuzz/$t.log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$fuzz/$t.log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last"); ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
  took=$((SECONDS - started))
  found=$(( $(ls "$findings" | wc -l) - before ))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$took" "${execs:-0}" "${cov:-0}" "${ft:-0}" "${corp:-0}" "$found" \
    "$commit" >> "$fuzz/summary.tsv.new"
  echo "fuzz: $t: ${execs:-0} executions in ${took} s, cov ${cov:-0}, ft ${ft:-0}, corpus ${corp:-0}, new findings $found"
  if [ "$found" -gt 0 ]; then
    status=1
    ls "$findings" | tail -n "$found" | sed "s|^|  $findings/|"
    grep -m1 -E 'ERROR: |finding: |SUMMARY: ' "$fuzz/$t.log" | sed 's/^/  /' || true
  fi
done
# The targets not run this time keep their last row.
if [ -f "$fuzz/summary.tsv" ]; then
  tail -n +2 "$fuzz/summary.tsv" | while IFS= read -r row; do
    case " ${targets[*]} " in *" ${row%%$'\t'*} "*) ;; *) echo "$row" >> "$fuzz/summary.tsv.new" ;; esac
  done
fi
mv "$fuzz/summary.tsv.new" "$fuzz/summary.tsv"
exit $status
