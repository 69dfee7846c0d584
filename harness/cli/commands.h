// The fusebench subcommands. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 a verdict that fails (gate), 2 an error, 3 an inconclusive
// verdict (harness/judge/gate.h: the same codes in every command that gives a verdict), 4 (debug
// precision only) a precision that cannot meet the tolerance.
#pragma once
#include <string>
#include <vector>

namespace fb::cli {

constexpr int kExitOk = 0;
constexpr int kExitVerdictFailed = 1;
constexpr int kExitError = 2;
constexpr int kExitInconclusive = 3;
// debug precision: the precision cannot meet the tolerance on this model, or no layer of it
// runs in that precision (a conclusion, not an error in the input).
constexpr int kExitPrecisionCannotMeet = 4;

int cmd_run(int argc, char** argv);
int cmd_report(int argc, char** argv);
int cmd_gate(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_zoo(int argc, char** argv);
int cmd_profile(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_history(int argc, char** argv);
int cmd_explain(int argc, char** argv);
int cmd_bisect(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_exec(int argc, char** argv);
int cmd_build(int argc, char** argv);
int cmd_merge(int argc, char** argv);
int cmd_selfcheck(int argc, char** argv);
int cmd_debug(int argc, char** argv);   // debug precision
int cmd_worker(int argc, char** argv);  // internal: one timing worker process
int cmd_completion(int argc, char** argv);

// One row per command: main dispatches through it, the usage text, `help COMMAND`, "did you
// mean" and shell completion read it (harness/cli/command_table.cpp).
struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* synopsis;  // "run SCENARIO... --db FILE"
  const char* summary;   // one line
  const char* subcommand = nullptr;  // the one word its flags follow ("debug precision")
  bool hidden = false;               // internal: not in the usage text nor in completion
};
const std::vector<Command>& commands();
const Command* find_command(const std::string& name);
std::vector<std::string> command_names();  // the visible ones
std::string usage_text();

}  // namespace fb::cli
