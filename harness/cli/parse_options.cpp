#include "harness/cli/parse_options.h"

#include <iostream>
#include <typeinfo>

#include "engine/ir/error.h"
#include "engine/util/closest_name.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_ranges.h"

namespace fb::cli {

namespace {

// Set while collect_options runs a command: its parse_or_help hands the options here.
thread_local const std::function<void(cxxopts::Options&)>* g_collector = nullptr;

std::vector<cxxopts::HelpOptionDetails> all_flags(const cxxopts::Options& opts, bool with_hidden) {
  std::vector<cxxopts::HelpOptionDetails> flags;
  for (const std::string& g : opts.groups())
    if (with_hidden || g != kHiddenGroup)
      for (const cxxopts::HelpOptionDetails& o : opts.group_help(g).options) flags.push_back(o);
  return flags;
}

std::string long_name(const cxxopts::HelpOptionDetails& o) { return o.l.empty() ? o.s : o.l.front(); }

// The value type of a flag: parse "--NAME 1" alone and see which type its value holds.
FlagKind kind_of(cxxopts::Options& opts, const cxxopts::HelpOptionDetails& o) {
  if (o.is_boolean) return FlagKind::kSwitch;
  if (o.is_container) return FlagKind::kTexts;
  const std::string name = long_name(o), flag = "--" + name;
  const char* argv[] = {"fusebench", flag.c_str(), "1"};
  cxxopts::ParseResult r;
  try {
    r = opts.parse(3, argv);
  } catch (const cxxopts::exceptions::exception&) {
    return FlagKind::kText;  // "1" is no value of it: not a number
  }
  auto holds = [&]<typename T>(T*) {
    try {
      r[name].as<T>();
      return true;
    } catch (const std::bad_cast&) {
      return false;
    }
  };
  if (holds((int*)nullptr) || holds((int64_t*)nullptr) || holds((uint64_t*)nullptr)) return FlagKind::kInteger;
  if (holds((double*)nullptr) || holds((float*)nullptr)) return FlagKind::kNumber;
  return FlagKind::kText;
}

// The flag a command line gives `value` to: "--NAME VALUE", "--NAME=VALUE" or "-N VALUE".
std::string flag_given(const cxxopts::Options& opts, int argc, char** argv, const std::string& value) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos && a.substr(eq + 1) == value) return a.substr(2, eq - 2);
      if (eq == std::string::npos && i + 1 < argc && argv[i + 1] == value) return a.substr(2);
    } else if (a.size() == 2 && a[0] == '-' && i + 1 < argc && argv[i + 1] == value) {
      for (const cxxopts::HelpOptionDetails& o : all_flags(opts, true))
        if (o.s == a.substr(1)) return long_name(o);
    }
  }
  return "";
}

// The first flag on the command line the options do not know (without its dashes).
std::string unknown_flag(const cxxopts::Options& opts, int argc, char** argv, std::vector<std::string>* known) {
  for (const cxxopts::HelpOptionDetails& o : all_flags(opts, false))
    if (!o.l.empty()) known->push_back(o.l.front());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    a = a.substr(a.rfind("--", 0) == 0 ? 2 : 1);
    a = a.substr(0, a.find('='));
    bool found = false;
    for (const cxxopts::HelpOptionDetails& o : all_flags(opts, true))
      for (const std::string& l : o.l) found = found || l == a || o.s == a;
    if (!found) return a;
  }
  return "";
}

// One line saying what is wrong with the command line, naming the flag.
std::string parse_error_text(cxxopts::Options& opts, int argc, char** argv, const cxxopts::exceptions::exception& e) {
  if (dynamic_cast<const cxxopts::exceptions::no_such_option*>(&e)) {
    std::vector<std::string> known;
    const std::string flag = unknown_flag(opts, argc, argv, &known);
    if (!flag.empty()) return "unknown option '" + std::string(flag.size() == 1 ? "-" : "--") + flag + "'" + did_you_mean(flag, known, "--");
  }
  if (dynamic_cast<const cxxopts::exceptions::incorrect_argument_type*>(&e)) {
    // cxxopts names the value only: "Argument 'abc' failed to parse".
    const std::string what = e.what(), before = "Argument ";
    const size_t close = what.rfind(" failed to parse");
    if (what.rfind(before, 0) == 0 && close != std::string::npos && close > before.size()) {
      // The value sits between cxxopts' quote characters (one or three bytes each).
      std::string quoted = what.substr(before.size(), close - before.size());
      for (const std::string q : {"\u2018", "\u2019", "'"}) {
        if (quoted.rfind(q, 0) == 0) quoted = quoted.substr(q.size());
        if (quoted.size() >= q.size() && quoted.compare(quoted.size() - q.size(), q.size(), q) == 0)
          quoted = quoted.substr(0, quoted.size() - q.size());
      }
      const std::string flag = flag_given(opts, argc, argv, quoted);
      if (!flag.empty()) {
        const char* want = "a valid value";
        for (const cxxopts::HelpOptionDetails& o : all_flags(opts, true))
          if (long_name(o) == flag) {
            const FlagKind k = kind_of(opts, o);
            want = k == FlagKind::kInteger ? "an integer" : k == FlagKind::kNumber ? "a number" : want;
          }
        return "--" + flag + " '" + quoted + "': expected " + want;
      }
    }
  }
  return e.what();
}

}  // namespace

std::string visible_help(const cxxopts::Options& opts) {
  std::vector<std::string> groups;
  for (const std::string& g : opts.groups())
    if (g != kHiddenGroup) groups.push_back(g);
  return opts.help(groups);
}

std::optional<int> parse_or_help(cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult* out) {
  opts.add_options()("h,help", "show this help");
  if (g_collector) {
    (*g_collector)(opts);
    return kExitOk;
  }
  try {
    *out = opts.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << opts.program() << ": error: " << parse_error_text(opts, argc, argv, e) << "\n(`" << opts.program()
              << " --help` lists its options)\n";
    return kExitError;
  }
  if (out->count("help")) {
    std::cout << visible_help(opts);
    return kExitOk;
  }
  for (const cxxopts::KeyValue& kv : out->arguments()) {
    try {
      check_option_range(kv.key(), kv.value());
    } catch (const Error& e) {
      std::cerr << opts.program() << ": error: " << e.what() << "\n";
      return kExitError;
    }
  }
  return std::nullopt;
}

const char* flag_kind_name(FlagKind k) {
  switch (k) {
    case FlagKind::kSwitch: return "switch";
    case FlagKind::kInteger: return "integer";
    case FlagKind::kNumber: return "number";
    case FlagKind::kText: return "text";
    case FlagKind::kTexts: return "text...";
  }
  return "?";
}

std::vector<FlagInfo> visible_flags(cxxopts::Options& opts) {
  // Positional arguments are options too in cxxopts (--model, --scenarios); --help shows
  // them with the rest, and they are accepted as flags.
  std::vector<FlagInfo> flags;
  for (const cxxopts::HelpOptionDetails& o : all_flags(opts, false))
    flags.push_back(FlagInfo{long_name(o), kind_of(opts, o)});
  return flags;
}

void collect_options(const std::function<int(int, char**)>& command, std::vector<std::string> argv,
                     const std::function<void(cxxopts::Options&)>& seen) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  g_collector = &seen;
  try {
    command(int(argv.size()), args.data());
  } catch (...) {
    g_collector = nullptr;
    throw;
  }
  g_collector = nullptr;
}

}  // namespace fb::cli
