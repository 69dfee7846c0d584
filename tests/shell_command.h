// Runs a shell command for tests that go through the fusebench binary: its exit code and
// everything it printed (stdout and stderr together).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace fb {

struct Outcome {
  int code;
  std::string output;
};

inline Outcome sh(const std::string& cmd) {
  Outcome o{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return o;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) o.output.append(buf, n);
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

}  // namespace fb
