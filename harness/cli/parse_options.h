// How every command parses its flags (cxxopts with fusebench's conventions): --help on
// every command; a parse error is one line naming the flag and the value, with "did you
// mean" for a misspelled flag, exit code 2; every numeric flag checked against its range
// (harness/cli/option_ranges.h). Flags in kHiddenGroup are parsed but not shown.
#pragma once
#include <cxxopts.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fb::cli {

// Flags a command accepts only to refuse them with a reason (`build --min-shapes`):
// left out of --help and of shell completion.
inline const std::string kHiddenGroup = "hidden";

// Parses or prints help. Returns an exit code to return early with, or nullopt to go on.
std::optional<int> parse_or_help(cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult* out);

// The help text without kHiddenGroup's flags.
std::string visible_help(const cxxopts::Options& opts);

// What a flag's value is, as completion and the range test see it.
enum class FlagKind { kSwitch, kInteger, kNumber, kText, kTexts };
const char* flag_kind_name(FlagKind k);  // "switch", "integer", "number", "text", "text..."

struct FlagInfo {
  std::string name;  // long name
  FlagKind kind;
};

// Every flag of a command's options, hidden ones left out, in the order --help lists them.
std::vector<FlagInfo> visible_flags(cxxopts::Options& opts);

// Runs `command` (a cmd_* function) with `argv` so that it only declares its options: its
// parse_or_help hands them to `seen` and returns 0 before the command does anything. This
// is how completion reads every command's own flag table.
void collect_options(const std::function<int(int, char**)>& command, std::vector<std::string> argv,
                     const std::function<void(cxxopts::Options&)>& seen);

}  // namespace fb::cli
