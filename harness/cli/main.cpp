// fusebench: one binary, git-style subcommands.
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "engine/util/build_info.h"
#include "harness/cli/commands.h"

namespace {

const char* kUsage = R"(usage: fusebench COMMAND [options]

Benchmark an optimizing inference engine against an eager PyTorch-style reference.

commands:
  run SCENARIO... --db FILE    expand scenarios into cases; build, check, time, store
  report --db FILE -o FILE     write the self-contained HTML report of a run
  gate --db FILE [rules]       the CI verdict: exit 0 pass, 1 fail, 2 error, 3 inconclusive
  compare --db FILE            a run against a baseline: faster, slower, unchanged, noisy
  history --db FILE            change points over the runs (nightly series)
  explain --db FILE            why a case got slower or faster: the layers, fusion decisions, kernels
  bisect SCENARIO --case KEY   the first commit (--good/--bad) that made a case slower, explained
  selfcheck SCENARIO --db FILE A/A runs: false-alarm rate and smallest detectable change
  export --db FILE             results as CSV or JSON, one row per case and executor
  merge SHARD.db... -o ALL.db  join the databases of `run --shard K/N` into one run
  build MODEL -o FILE.plan     build the engine once and save it as a plan (a MODEL too)
  inspect MODEL                engine layers, kernels, source nodes and the build log
  profile MODEL                per-layer and per-module time, seen through fusion
  exec MODEL [--input N=FILE]  run once; save every output as .npy (check against other runtimes)
  debug precision MODEL        the first tensor a bf16/fp16 build gets wrong; what to keep in fp32
  zoo list | zoo export NAME   the built-in models, as real ONNX files

A MODEL is an ONNX path, zoo:NAME[?param=value&...] or a FILE.plan from 'build'.
Run 'fusebench COMMAND --help' for a command's options.
)";

// Debian's oneDNN runs on OpenMP; by default libgomp's idle workers spin for up to
// 300,000 rounds after each parallel region, taking the cores our oneTBB kernels run on
// next. Fully passive workers are no better: they sleep after every oneDNN call, and waking
// them cost each call tens of microseconds (mobilenet_v2 at batch 1, 2 threads: 7.4 ms
// passive, 3.9 ms with a short spin, ONNX Runtime 3.5 ms). So: passive, with a spin of
// 10,000 rounds that bridges back-to-back primitives and then lets the cores go. Both must
// be set before libgomp initializes, so set them and re-exec once. A user's own
// OMP_WAIT_POLICY or GOMP_SPINCOUNT is left as it is.
void ensure_openmp_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  setenv("GOMP_SPINCOUNT", "10000", 1);
  execv("/proc/self/exe", argv);
  // If re-exec fails we run on with the default policy: slower, never wrong.
}

// The reference executor allocates a fresh buffer per op, as eager PyTorch does. glibc's
// default moves its mmap threshold as blocks are freed, so the same case ran 3x slower
// or faster depending on what ran before it (page faults on fresh mmaps). Fixed
// thresholds give every case the allocator's steady state: heap reuse, no trimming.
void pin_malloc_thresholds() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  ensure_openmp_wait_policy(argv);
  pin_malloc_thresholds();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::cout << kUsage;
    return argc < 2 ? fb::cli::kExitError : fb::cli::kExitOk;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::cout << "fusebench " << fb::fusebench_version() << " (" << fb::fusebench_git_commit() << ")\n";
    return 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "run") return fb::cli::cmd_run(argc - 1, argv + 1);
    if (cmd == "report") return fb::cli::cmd_report(argc - 1, argv + 1);
    if (cmd == "gate") return fb::cli::cmd_gate(argc - 1, argv + 1);
    if (cmd == "build") return fb::cli::cmd_build(argc - 1, argv + 1);
    if (cmd == "inspect") return fb::cli::cmd_inspect(argc - 1, argv + 1);
    if (cmd == "zoo") return fb::cli::cmd_zoo(argc - 1, argv + 1);
    if (cmd == "profile") return fb::cli::cmd_profile(argc - 1, argv + 1);
    if (cmd == "exec") return fb::cli::cmd_exec(argc - 1, argv + 1);
    if (cmd == "compare") return fb::cli::cmd_compare(argc - 1, argv + 1);
    if (cmd == "history") return fb::cli::cmd_history(argc - 1, argv + 1);
    if (cmd == "explain") return fb::cli::cmd_explain(argc - 1, argv + 1);
    if (cmd == "bisect") return fb::cli::cmd_bisect(argc - 1, argv + 1);
    if (cmd == "export") return fb::cli::cmd_export(argc - 1, argv + 1);
    if (cmd == "merge") return fb::cli::cmd_merge(argc - 1, argv + 1);
    if (cmd == "selfcheck") return fb::cli::cmd_selfcheck(argc - 1, argv + 1);
    if (cmd == "debug") return fb::cli::cmd_debug(argc - 1, argv + 1);
    if (cmd == "worker") return fb::cli::cmd_worker(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    std::cerr << "fusebench " << cmd << ": error: " << e.what() << "\n";
    return fb::cli::kExitError;
  }
  std::cerr << "fusebench: unknown command '" << cmd << "'\n\n" << kUsage;
  return fb::cli::kExitError;
}
