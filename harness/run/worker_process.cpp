#include "harness/run/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "engine/ir/error.h"
#include "harness/cases/case_json.h"
#include "harness/run/runner.h"
#include "harness/util/atomic_file.h"

extern char** environ;

namespace fb {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The last few lines of the worker's stderr, for the error message.
std::string tail_lines(const std::string& text, size_t lines) {
  size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n' || text[pos - 1] == ' ')) --pos;
  const size_t end = pos;
  for (size_t n = 0; pos > 0; --pos)
    if (text[pos - 1] == '\n' && ++n == lines) break;
  return text.substr(pos, end - pos);
}

// A scratch folder for one worker's files, removed on the way out.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "fusebench-worker-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error("cannot create a scratch folder for a worker process: " + std::string(std::strerror(errno)));
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

CaseResult worker_error(const CaseSpec& spec, int index, const std::string& why) {
  CaseResult r;
  r.spec = spec;
  r.status = CaseStatus::kError;
  r.error = "case '" + spec.label() + "': worker process " + std::to_string(index + 1) + " " + why;
  return r;
}

}  // namespace

TimingConfig per_process_timing(const TimingConfig& t) {
  TimingConfig p = t;
  const int k = std::max(t.processes, 1);
  p.processes = 1;
  p.max_seconds = t.max_seconds / k;
  // The user's max_iterations is a cap on the case, never raised by the per-process floor
  // of 10 iterations (a scenario asking for 3 iterations must not get 50).
  p.max_iterations = std::max(1, t.max_iterations / k);
  p.min_iterations = std::min(p.max_iterations, std::max(10, (t.min_iterations + k - 1) / k));
  p.target_rel_ci = std::min(0.5, t.target_rel_ci * std::sqrt(static_cast<double>(k)));
  return p;
}

// Set in every worker's environment. A worker never starts workers, so a process that
// finds it set was started as a worker by mistake: an executable that is not fusebench
// (a program embedding CaseRunner with the default /proc/self/exe) would otherwise start
// copies of itself without end.
constexpr const char* kWorkerEnv = "FUSEBENCH_WORKER_PROCESS";

CaseResult run_in_worker_process(const CaseSpec& spec, int index, const std::string& executable) {
  if (std::getenv(kWorkerEnv))
    return worker_error(spec, index, "could not start: this process is itself a worker process (" + std::string(kWorkerEnv) +
                                         " is set); is '" + executable + "' the fusebench binary?");
  std::optional<ScratchDir> dir;
  try {
    dir.emplace();
  } catch (const Error& e) {
    return worker_error(spec, index, std::string("could not start: ") + e.what());
  }
  const fs::path spec_path = dir->path / "spec.json", out_path = dir->path / "result.json",
                 err_path = dir->path / "stderr.txt";
  {
    std::ofstream out(spec_path);
    out << spec.to_json().dump();
    if (!out) return worker_error(spec, index, "could not start: cannot write " + spec_path.string());
  }
  const std::string process = std::to_string(index);
  std::vector<std::string> args{executable, "worker", "--spec", spec_path.string(), "--out", out_path.string(),
                                "--process", process};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  std::vector<std::string> env_strings{std::string(kWorkerEnv) + "=1"};
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int rc = posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return worker_error(spec, index, "could not start (" + executable + "): " + std::strerror(rc));

  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return worker_error(spec, index, std::string("could not be waited for: ") + std::strerror(errno));
  }
  const std::string err_tail = tail_lines(read_file(err_path), 3);
  const std::string said = err_tail.empty() ? "" : ": " + err_tail;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    // Nothing a case does sends SIGKILL to itself: someone killed the worker (the OOM
    // killer, an operator). A lost attempt, as a lost MPI rank's: the run stays unfinished
    // and `run --resume` runs the case again, its result replacing this record.
    CaseResult r = worker_error(spec, index, "was killed by signal 9 (SIGKILL, from outside)" + said +
                                                 "; `fusebench run --resume` runs it again");
    r.worker_lost = true;
    return r;
  }
  if (WIFSIGNALED(status))
    return worker_error(spec, index, "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                         strsignal(WTERMSIG(status)) + ")" + said);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return worker_error(spec, index, "exited with status " + std::to_string(WEXITSTATUS(status)) + said);
  try {
    CaseResult r = case_result_from_json(nlohmann::json::parse(read_file(out_path)));
    return r;
  } catch (const std::exception& e) {
    return worker_error(spec, index, std::string("returned no readable result: ") + e.what());
  }
}

int worker_main(const std::string& spec_path, const std::string& out_path, int process_index) {
  // A worker never outlives its runner: killed with it, not left timing into a removed folder.
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 1;  // the runner died before the line above
  const CaseSpec spec = CaseSpec::from_json(nlohmann::json::parse(read_file(spec_path)));
  // Test hook: lets the tests see what a crashing worker does to a run.
  if (const char* crash = std::getenv("FUSEBENCH_TEST_WORKER_ABORT"); crash && std::atoi(crash) == process_index) {
    std::cerr << "worker: aborting as FUSEBENCH_TEST_WORKER_ABORT asks\n";
    std::abort();
  }
  CaseRunner runner;
  const CaseResult r = runner.run(spec);
  write_file_atomically(out_path, case_result_to_json(r).dump(), "the case result");  // complete or absent
  return 0;
}

}  // namespace fb
