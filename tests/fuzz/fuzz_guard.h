// What a fuzz target counts as a finding. fb::Error is fusebench's one clear refusal of bad
// input (it names the file and what is wrong): expected, the input is simply rejected.
// Any other exception escaping a reader (a library's parse error, std::stoll's
// invalid_argument, an FB_CHECK's internal error, bad_alloc) is a message that names no
// file, or an invariant the input broke: the target aborts so that libFuzzer keeps the
// input, as it does for a crash, a sanitizer report, a hang or a runaway allocation.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "engine/ir/error.h"

namespace fb::fuzz {

template <typename F>
void refusals_only(F&& f) {
  try {
    f();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: an exception other than fb::Error escaped: %s\n", e.what());
    std::abort();
  }
}

// A scratch folder of this process (a file-based reader gets its input as a file there).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path d = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                              ("fusebench_fuzz_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  return path;
}

}  // namespace fb::fuzz
