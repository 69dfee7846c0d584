// Runs a piece of third-party code on untrusted input in a child process, so that whatever
// it does there (a crash, an allocation without bound, a hang) ends in an error message
// rather than taking fusebench with it. Used where a library's code we cannot fix reads a
// user's file: the onnx library's version converter (engine/onnx/opset_upgrade.cpp).
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace fb {

struct IsolatedLimits {
  int seconds = 60;                       // wall time before the child is killed
  // Address space the child may add to what it inherits (RLIMIT_AS; not set under
  // sanitizers, whose shadow memory is reserved as address space).
  size_t extra_address_space_bytes = 8ull << 30;
};

struct IsolatedResult {
  bool ok = false;     // the work returned normally; `output` is what it returned
  std::string output;  // the work's result
  std::string why;     // when !ok: the exception's message, "killed by signal 11 (SIGSEGV)", "timed out after 60 s", ...
};

// Calls `work` in a forked child and returns the string it returned. The child writes
// nothing else and leaves with _exit, so the parent's state (open databases, buffers) is
// untouched. An exception thrown by `work` comes back as !ok, its message as `why`.
IsolatedResult call_isolated(const std::function<std::string()>& work, const IsolatedLimits& limits = {});

}  // namespace fb
