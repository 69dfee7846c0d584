// The command line through the binary: every flag's value checked with the flag named,
// "did you mean" for commands and flags, help for every command, the version the binary was
// built from, scenarios refused before a database exists, build warnings on the terminal,
// the tensors a partition point takes, and bash completion from the commands' own flags.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "scratch_dir.h"
#include "shell_command.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

const std::string kBin = FUSEBENCH_BINARY;

Outcome fusebench(const std::string& args) { return sh(kBin + " " + args); }

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(Cli, NumericFlagsAreRangeCheckedNamingTheFlag) {
  for (const char* cmd : {"exec zoo:mlp --threads 0", "profile zoo:mlp --threads 0", "build zoo:mlp -o x.plan --threads 0"}) {
    const Outcome o = fusebench(cmd);
    EXPECT_EQ(o.code, 2) << cmd << "\n" << o.output;
    EXPECT_EQ(o.output, std::string("fusebench ") + std::string(cmd).substr(0, std::string(cmd).find(' ')) +
                            ": error: --threads 0: must be in [1, 1024]\n")
        << cmd;
  }
  Outcome o = fusebench("compare --db x.db --alpha 1");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output, "fusebench compare: error: --alpha 1: must be in (0, 1)\n");
  o = fusebench("gate --db x.db --max-regression 5");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output,
            "fusebench gate: error: --max-regression 5: must be in [0, 1); a change is a fraction (0.05 for 5%), not a "
            "percentage\n");
  o = fusebench("profile zoo:mlp --iterations=-3");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output, "fusebench profile: error: --iterations -3: must be >= 1\n");
}

TEST(Cli, AValueThatDoesNotParseNamesTheFlagWithoutTheWholeHelp) {
  Outcome o = fusebench("exec zoo:mlp --batch abc");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output, "fusebench exec: error: --batch 'abc': expected an integer\n(`fusebench exec --help` lists its options)\n");
  o = fusebench("compare --db x.db --alpha=low");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--alpha 'low': expected a number"), std::string::npos) << o.output;
}

TEST(Cli, DidYouMeanForCommandsAndFlags) {
  Outcome o = fusebench("rn");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output, "fusebench: unknown command 'rn'; did you mean 'run'? ('fusebench --help' lists them)\n");
  o = fusebench("run --dbb x s.json");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output, "fusebench run: error: unknown option '--dbb'; did you mean '--db'?\n(`fusebench run --help` lists its options)\n");
  o = fusebench("inspect zoo:mlp --fusoin none");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("unknown option '--fusoin'; did you mean '--fusion'?"), std::string::npos) << o.output;
  o = fusebench("help rnu");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output, "fusebench help: unknown command 'rnu'; did you mean 'run'?\n");
}

TEST(Cli, EveryCommandAnswersHelp) {
  const Outcome list = fusebench("completion list");
  ASSERT_EQ(list.code, 0) << list.output;
  std::set<std::string> commands;
  for (const std::string& l : lines_of(list.output)) commands.insert(l.substr(0, l.find(" --")));
  EXPECT_EQ(commands.size(), 17u) << list.output;
  for (const std::string& c : commands) {
    const Outcome help = fusebench(c + " --help");
    EXPECT_EQ(help.code, 0) << c << "\n" << help.output;
    EXPECT_NE(help.output.find("Usage:\n  fusebench " + c), std::string::npos) << c << "\n" << help.output;
    const Outcome via_help = fusebench("help " + c.substr(0, c.find(' ')));
    EXPECT_EQ(via_help.code, 0) << c;
    EXPECT_EQ(via_help.output, help.output) << c;
  }
  const Outcome debug = fusebench("debug --help");
  EXPECT_EQ(debug.code, 0) << debug.output;
  EXPECT_EQ(debug.output, fusebench("debug precision --help").output);
  const Outcome top = fusebench("--help");
  EXPECT_EQ(top.code, 0);
  EXPECT_NE(top.output.find("fusebench help [COMMAND] | --version"), std::string::npos) << top.output;
  EXPECT_NE(top.output.find("'fusebench --version' prints"), std::string::npos) << top.output;
  EXPECT_EQ(fusebench("help").output, top.output);
}

TEST(Cli, BuildHelpLeavesOutTheProfileFlagsItRefuses) {
  const Outcome help = fusebench("build --help");
  EXPECT_EQ(help.output.find("shapes"), std::string::npos) << help.output;
  const Outcome refused =
      fusebench("build zoo:mlp -o x.plan --min-shapes input:1x256 --opt-shapes input:2x256 --max-shapes input:4x256");
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.output.find("a plan holds a static engine"), std::string::npos) << refused.output;
}

// The commit the binary reports is the one its source tree is at (bisect and paired runs
// record it); where the tree is no git checkout, "unknown".
TEST(Cli, VersionNamesTheCommitTheBinaryWasBuiltFrom) {
  const Outcome head = sh("git -C " + std::string(FUSEBENCH_SOURCE_DIR) + " rev-parse --short=12 HEAD");
  const Outcome v = fusebench("--version");
  EXPECT_EQ(v.code, 0);
  const std::string commit = head.code == 0 ? head.output.substr(0, 12) : "unknown";
  EXPECT_EQ(v.output.rfind("fusebench ", 0), 0u) << v.output;
  EXPECT_NE(v.output.find(" (" + commit), std::string::npos)
      << v.output << " HEAD " << commit << ": if HEAD moved (a commit, amend or rebase) after this binary was "
      << "built, the binary is right to name the older commit: rebuild, then run this again";
}

// Every numeric flag of every command has a range the shared parser checks.
TEST(Cli, EveryNumericFlagHasARange) {
  const Outcome list = fusebench("completion list");
  ASSERT_EQ(list.code, 0);
  int numeric = 0;
  for (const std::string& l : lines_of(list.output)) {
    std::istringstream in(l);
    std::string command, flag, kind, range;
    in >> command;
    if (command == "debug") in >> command;
    in >> flag >> kind >> range;
    if (kind != "integer" && kind != "number") continue;
    ++numeric;
    EXPECT_FALSE(range.empty()) << "no range for " << l;
  }
  EXPECT_GT(numeric, 25);
}

// The script lists each command's own flags, and bash completes with it.
TEST(Cli, BashCompletionHasEveryCommandsFlags) {
  ScratchDir dir("fb_cli_completion");
  const std::string script = dir.path("fusebench.bash");
  ASSERT_EQ(fusebench("completion bash > " + script).code, 0);
  std::ifstream in(script);
  std::map<std::string, std::string> words;  // command -> " its words "
  for (std::string l; std::getline(in, l);) {
    const size_t paren = l.find(") words=\""), start = paren + 9;
    if (paren != std::string::npos)
      words[l.substr(l.find_first_not_of(' '), paren - l.find_first_not_of(' '))] =
          " " + l.substr(start, l.find('"', start) - start) + " ";
  }
  int flags = 0;
  for (const std::string& l : lines_of(fusebench("completion list").output)) {
    const std::string command = l.substr(0, l.find(' '));
    const std::string flag = l.substr(l.find(" --") + 1, l.find(' ', l.find(" --") + 1) - l.find(" --") - 1);
    ASSERT_TRUE(words.count(command)) << command;
    EXPECT_NE(words[command].find(" " + flag + " "), std::string::npos) << command << " " << flag << ":" << words[command];
    ++flags;
  }
  EXPECT_GT(flags, 100);
  const Outcome completed = sh("bash -c 'source " + script +
                               " && COMP_WORDS=(fusebench run --d) COMP_CWORD=2 && _fusebench && echo ${COMPREPLY[@]}'");
  EXPECT_EQ(completed.output, "--db\n");
  const Outcome command = sh("bash -c 'source " + script + " && COMP_WORDS=(fusebench insp) COMP_CWORD=1 && _fusebench && echo ${COMPREPLY[@]}'");
  EXPECT_EQ(command.output, "inspect\n");
}

std::string write_scenario(const ScratchDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir.path(name);
  std::ofstream(path) << body;
  return path;
}

TEST(Cli, UnknownZooModelOrParameterIsRefusedBeforeADatabaseExists) {
  ScratchDir dir("fb_cli_zoo");
  const std::string db = dir.path("r.db");
  const std::string model = write_scenario(dir, "m.json", R"({"name": "m", "model": "zoo:mpl"})");
  Outcome o = fusebench("run " + model + " --db " + db);
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.output, "fusebench run: error: " + model +
                          ": field 'model': unknown zoo model 'mpl' in 'zoo:mpl'; did you mean 'mlp'? (known models: mlp, "
                          "bert, resnet, mobilenet, vit, llama, efficientnet, gpt, yolo, shufflenet, wav2vec2)\n");
  EXPECT_FALSE(fs::exists(db));
  const std::string param = write_scenario(dir, "p.json", R"({"name": "p", "model": "zoo:mlp?layer=2"})");
  o = fusebench("run " + param + " --db " + db);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find(param + ": field 'model': zoo model 'mlp': unknown parameter 'layer'; did you mean 'layers'?"),
            std::string::npos)
      << o.output;
  EXPECT_FALSE(fs::exists(db));
}

TEST(Cli, ARefusedScenarioOrReportWritesNoDatabase) {
  ScratchDir dir("fb_cli_nowrite");
  const std::string db = dir.path("r.db");
  const std::string bad = write_scenario(dir, "bad.json", R"({"name": "b", "model": "zoo:mlp", "timign": {}})");
  Outcome o = fusebench("run " + bad + " --db " + db);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("unknown field 'timign'"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(db));

  o = fusebench("report --db " + db + " -o " + dir.path("r.html"));
  EXPECT_EQ(o.code, 2);
  EXPECT_FALSE(fs::exists(db));
  std::ofstream(db).close();  // an empty file
  o = fusebench("report --db " + db + " -o " + dir.path("r.html"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find(db + " is an empty database, not a fusebench result store"), std::string::npos) << o.output;
  EXPECT_EQ(fs::file_size(db), 0u);
  o = fusebench("export --db " + db);
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(fs::file_size(db), 0u);
}

// An exclusion that matches nothing is said on the terminal, once per run, not only in
// the build log.
TEST(Cli, AnExclusionThatMatchesNothingIsWarnedOnTheTerminal) {
  ScratchDir dir("fb_cli_warn");
  const std::string scenario = write_scenario(dir, "w.json", R"({"name": "w", "model": "zoo:mlp?in=32&hidden=32&layers=1",
    "matrix": {"fusion": ["none", "standard"]}, "fusion_limits": {"exclude_ops": ["Gemmm"]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 5, "max_iterations": 10, "max_seconds": 0.1,
               "processes": 1, "disturbance_cpus": 64}})");
  const Outcome o = fusebench("run " + scenario + " --db " + dir.path("w.db"));
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(count_of(o.output, "warning: fusion_limits.exclude_ops (--exclude-op): no node has op type 'Gemmm'"), 1u)
      << o.output;
  EXPECT_NE(o.output.find("'Gemmm' (w b=1 fp32 none t=1; once per run)"), std::string::npos) << o.output;
}

// The partition-point error points at a command that lists the tensor names, and a name it
// lists is one --partition takes.
TEST(Cli, InspectTensorsListsWhatAPartitionPointNames) {
  const Outcome bad = fusebench("inspect 'zoo:mlp?layers=1' --partition no/such");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("`fusebench inspect MODEL --tensors` lists them"), std::string::npos) << bad.output;
  const Outcome tensors = fusebench("inspect 'zoo:mlp?layers=1' --tensors");
  ASSERT_EQ(tensors.code, 0) << tensors.output;
  const std::vector<std::string> lines = lines_of(tensors.output);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines.front(), "input  (model input)");
  const std::string& second = lines[1];
  const std::string name = second.substr(0, second.find("  ("));
  const Outcome split = fusebench("inspect 'zoo:mlp?layers=1' --partition " + name);
  EXPECT_EQ(split.code, 0) << split.output;
  // The count the error gives is the tensors listed plus the weights.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(bad.output, m, std::regex(R"(\((\d+) tensors;)")));
  std::smatch c;
  ASSERT_TRUE(std::regex_search(lines.back(), c, std::regex(R"((\d+) tensors listed, and (\d+) weights)"))) << lines.back();
  EXPECT_EQ(std::stoi(m[1]), std::stoi(c[1]) + std::stoi(c[2]));
}

}  // namespace
}  // namespace fb
