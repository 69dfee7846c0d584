// The environment fingerprint stored with every run: what machine, what software, what
// code. Every stored figure can be traced back to it.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cases/case.h"

namespace fb {

struct RunInfo {
  std::string started_at;   // ISO 8601 UTC
  std::string git_commit;   // the commit fusebench was built from
  bool git_dirty = false;   // whether tracked files had uncommitted changes when the binary was built
  std::string host;
  std::string cpu_model;
  std::string cpu_flags;    // the flags that matter for kernels (avx2, avx512*, amx*, ...)
  int cores = 0;            // logical CPUs online
  int64_t memory_bytes = 0;
  std::string kernel;       // uname -sr
  std::string compiler;     // e.g. "g++ 12.2.0"
  std::string compiler_flags;  // build type and C++ flags, e.g. "Release: -O2 -march=native -DNDEBUG"
  nlohmann::json library_versions;  // {"onednn": "2.6.3", "onnx": "1.12.0", "tbb": ..., "sqlite": ...}
  std::string fusebench_version;
  std::string command;      // the command line of the run
  // The scenarios the run was started with, [{"name": ..., "file": ...}], so `run --resume`
  // can tell which interrupted run to continue.
  nlohmann::json scenarios = nlohmann::json::array();
  std::string shard;  // "K/N" for `run --shard K/N`, "" when the run holds all its cases
  // For a run made by `fusebench merge`: the shard runs it joined, [{"shard", "host", "started_at", "file"}].
  nlohmann::json merged_from = nlohmann::json::array();
  // A paired A/B run (`run --against`) stores two runs, one per binary, whose worker
  // processes alternated: paired_with is, on the run of the binary that ran the command,
  // the id of the other binary's run (0 otherwise); timed_by names the fusebench that timed
  // a run's cases (path and version), "" when it is the one that stored it.
  int64_t paired_with = 0;
  std::string timed_by;
};

// Reads the current machine's fingerprint; fields that cannot be read stay empty.
RunInfo capture_environment();
// The part of it that says which machine timed a case.
HostFingerprint host_fingerprint(const RunInfo& info);
std::string utc_now_iso8601();  // "2024-05-01T12:34:56Z"

// The 1, 5 and 15 minute load averages (getloadavg); all -1 when they cannot be read. A busy
// machine makes timings noisy, so the runner can record or refuse to start on one.
std::array<double, 3> load_average();

}  // namespace fb
