// The fusebench subcommands. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 a verdict that fails (gate), 2 an error.
#pragma once

namespace fb::cli {

constexpr int kExitOk = 0;
constexpr int kExitVerdictFailed = 1;
constexpr int kExitError = 2;

int cmd_run(int argc, char** argv);
int cmd_report(int argc, char** argv);
int cmd_gate(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_zoo(int argc, char** argv);

}  // namespace fb::cli
