// The fusebench subcommands. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 a verdict that fails (gate), 2 an error, 3 an inconclusive
// verdict (harness/gate.h: the same codes in every command that gives a verdict), 4 (debug
// precision only) a precision that cannot meet the tolerance.
#pragma once

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

}  // namespace fb::cli
