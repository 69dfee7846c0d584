// fusebench: one binary, git-style subcommands.
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "engine/ops/isa_kernels.h"
#include "engine/util/build_info.h"
#include "engine/util/closest_name.h"
#include "harness/measure/openmp_waits.h"
#include "harness/cli/commands.h"

namespace {

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
  setenv(fb::kOpenmpWaitsEnv, "fusebench", 1);  // ours: `run` may stop the spin on a busy machine
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

// "help COMMAND" is "COMMAND --help" ("help debug" that of "debug precision").
int help(int argc, char** argv) {
  if (argc < 3) {
    std::cout << fb::cli::usage_text();
    return fb::cli::kExitOk;
  }
  const fb::cli::Command* c = fb::cli::find_command(argv[2]);
  if (!c || c->hidden) {
    std::cerr << "fusebench help: unknown command '" << argv[2] << "'"
              << fb::did_you_mean(argv[2], fb::cli::command_names()) << "\n";
    return fb::cli::kExitError;
  }
  std::vector<std::string> words{c->name};
  if (c->subcommand) words.push_back(c->subcommand);
  words.push_back("--help");
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  return c->run(int(words.size()), args.data());
}

}  // namespace

int main(int argc, char** argv) {
  ensure_openmp_wait_policy(argv);
  pin_malloc_thresholds();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << fb::cli::usage_text();
    return argc < 2 ? fb::cli::kExitError : fb::cli::kExitOk;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::cout << "fusebench " << fb::fusebench_version() << " (" << fb::fusebench_git_commit()
              << (fb::fusebench_git_dirty() ? ", with uncommitted changes" : "") << ")\n";
    return fb::cli::kExitOk;
  }
  const std::string cmd = argv[1];
  if (cmd == "help") return help(argc, argv);
  const fb::cli::Command* command = fb::cli::find_command(cmd);
  if (!command) {
    std::cerr << "fusebench: unknown command '" << cmd << "'" << fb::did_you_mean(cmd, fb::cli::command_names())
              << " ('fusebench --help' lists them)\n";
    return fb::cli::kExitError;
  }
  try {
    fb::isa_kernels();  // a FUSEBENCH_ISA it cannot honour is refused here, before any work
    return command->run(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    std::cerr << "fusebench " << cmd << ": error: " << e.what() << "\n";
    return fb::cli::kExitError;
  }
}
