#include "engine/util/isolated_call.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <exception>

#include "engine/ir/error.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define FUSEBENCH_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FUSEBENCH_SANITIZED 1
#endif
#ifdef FUSEBENCH_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

namespace fb {

namespace {

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// The address space this process maps now (VmSize), which a fork inherits: a CUDA context
// or a thread pool alone reserves gigabytes that a plain limit would count against the work.
[[maybe_unused]] size_t mapped_bytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

// The child: one status byte ('O' returned, 'E' threw) and the bytes, then _exit.
[[noreturn]] void run_child(int fd, const std::function<std::string()>& work, const IsolatedLimits& limits) {
#ifdef FUSEBENCH_SANITIZED
  // A sanitizer's report in the child is the child's end, not the caller's: without this a
  // fuzzer's death callback, inherited through fork, would file the input as its own crash.
  __sanitizer_set_death_callback([] { ::_exit(70); });
#else
  const size_t limit = mapped_bytes() + limits.extra_address_space_bytes;
  const rlimit as{limit, limit};
  ::setrlimit(RLIMIT_AS, &as);
#endif
  (void)limits;
  char status = 'O';
  std::string out;
  try {
    out = work();
  } catch (const std::exception& e) {
    status = 'E';
    out = e.what();
  } catch (...) {
    status = 'E';
    out = "an exception that is not a std::exception";
  }
  const bool sent = write_all(fd, &status, 1) && write_all(fd, out.data(), out.size());
  ::_exit(sent ? 0 : 71);
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : std::string());
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 70) return "stopped by a sanitizer's report";
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace

IsolatedResult call_isolated(const std::function<std::string()>& work, const IsolatedLimits& limits) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(std::string("cannot make a pipe for an isolated call: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(std::string("cannot fork for an isolated call: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], work, limits);
  }
  ::close(fds[1]);
  std::string bytes;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.seconds);
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its end: it has ended
    bytes.append(buf, size_t(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  IsolatedResult result;
  if (timed_out) {
    result.why = "timed out after " + std::to_string(limits.seconds) + " s";
  } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || bytes.empty()) {
    result.why = describe_status(status);
  } else if (bytes[0] == 'E') {
    result.why = bytes.substr(1);
  } else {
    result.ok = true;
    result.output = bytes.substr(1);
  }
  return result;
}

}  // namespace fb
