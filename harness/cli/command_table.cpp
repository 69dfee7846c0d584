#include "harness/cli/commands.h"

#include <algorithm>

namespace fb::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table{
      {"run", cmd_run, "run SCENARIO... --db FILE", "expand scenarios into cases; build, check, time, store"},
      {"report", cmd_report, "report --db FILE -o FILE", "write the self-contained HTML report of a run"},
      {"gate", cmd_gate, "gate --db FILE [rules]", "the CI verdict: exit 0 pass, 1 fail, 2 error, 3 inconclusive"},
      {"compare", cmd_compare, "compare --db FILE", "a run against a baseline: faster, slower, unchanged, noisy"},
      {"history", cmd_history, "history --db FILE", "change points over the runs (nightly series)"},
      {"explain", cmd_explain, "explain --db FILE", "why a case got slower or faster: the layers, fusion decisions, kernels"},
      {"bisect", cmd_bisect, "bisect SCENARIO --case KEY", "the first commit (--good/--bad) that made a case slower, explained"},
      {"selfcheck", cmd_selfcheck, "selfcheck SCENARIO --db FILE", "A/A runs: false-alarm rate and smallest detectable change"},
      {"export", cmd_export, "export --db FILE", "results as CSV or JSON, one row per case and executor"},
      {"merge", cmd_merge, "merge SHARD.db... -o ALL.db", "join the databases of `run --shard K/N` into one run"},
      {"build", cmd_build, "build MODEL -o FILE.plan", "build the engine once and save it as a plan (a MODEL too)"},
      {"inspect", cmd_inspect, "inspect MODEL", "engine layers, kernels, source nodes and the build log"},
      {"profile", cmd_profile, "profile MODEL", "per-layer and per-module time, seen through fusion"},
      {"exec", cmd_exec, "exec MODEL [--input N=FILE]", "run once; save every output as .npy (check against other runtimes)"},
      {"debug", cmd_debug, "debug precision MODEL", "the first tensor a bf16/fp16 build gets wrong; what to keep in fp32",
       "precision"},
      {"zoo", cmd_zoo, "zoo list | zoo export NAME", "the built-in models, as real ONNX files"},
      {"completion", cmd_completion, "completion bash | list", "a bash completion script; every command's flags"},
      {"worker", cmd_worker, "worker", "internal: one timing worker process", nullptr, /*hidden=*/true},
  };
  return table;
}

const Command* find_command(const std::string& name) {
  for (const Command& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const Command& c : commands())
    if (!c.hidden) names.push_back(c.name);
  return names;
}

std::string usage_text() {
  std::string text =
      "usage: fusebench COMMAND [options]\n"
      "       fusebench help [COMMAND] | --version\n\n"
      "Benchmark an optimizing inference engine against an eager PyTorch-style reference.\n\n"
      "commands:\n";
  for (const Command& c : commands()) {
    if (c.hidden) continue;
    std::string line = std::string("  ") + c.synopsis;
    line.resize(std::max<size_t>(line.size() + 1, 31), ' ');
    text += line + c.summary + "\n";
  }
  text +=
      "\nA MODEL is an ONNX path, zoo:NAME[?param=value&...] or a FILE.plan from 'build'.\n"
      "'fusebench COMMAND --help' (or 'fusebench help COMMAND') lists a command's options;\n"
      "'fusebench --version' prints the version and the git commit the binary was built from.\n";
  return text;
}

}  // namespace fb::cli
