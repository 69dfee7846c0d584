// The README and every page under docs/ tell the truth about the binary. Every example block
// that starts with "$ fusebench inspect|build|zoo|exec ..." is run (in a scratch folder, or in
// the folder its fence names as "in:PATH", relative to the source tree), and the lines it quotes
// must be the binary's, with decimals (timings, sizes in MB) and oneDNN's implementation names
// ("[brg:avx512_core_bf16]": the instruction set differs between CPUs) masked; "..." lines
// stand for output left out. A block whose fence says "cpu:bf16" or "cpu:no-bf16" shows what
// a CPU with (or without) bf16 dot products prints: it is checked as the machine runs, and
// the other kind's block through FUSEBENCH_ONEDNN_BF16, which switches the bf16 kernels on
// (emulated on plain AVX-512) or off, so both forms are checked wherever AVX-512 is. The
// blocks show what an AVX512_BF16 CPU prints; on a CPU beyond it (AMX) every block runs with
// oneDNN capped there (ONEDNN_MAX_CPU_ISA), as below. The quickstart `run` example (too slow
// to run here) must list as many cases as the scenario expands to, with their real labels.
// Every relative link, every scripts/, scenarios/, docs/ or tests/ path a page names, and
// every .json file an example command names, must exist.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "engine/backend/cpu/dnnl_context.h"
#include "harness/cases/scenario.h"
#include "shell_command.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

struct Example {
  std::string file;                 // the page, relative to the source tree
  int line = 0;                     // its line of the command
  std::string command;              // after "$ "
  std::vector<std::string> output;  // the lines quoted under it
  std::string cpu;                  // "bf16", "no-bf16", or "" (any CPU): from the fence's "cpu:..."
  std::string in;                   // the folder it runs in, relative to the source tree: the fence's "in:..."
};

// README.md and docs/*.md, relative to the source tree.
std::vector<std::string> doc_files() {
  std::vector<std::string> files{"README.md"};
  std::vector<std::string> docs;
  for (const auto& entry : fs::directory_iterator(fs::path(FUSEBENCH_SOURCE_DIR) / "docs"))
    if (entry.path().extension() == ".md") docs.push_back("docs/" + entry.path().filename().string());
  std::sort(docs.begin(), docs.end());
  files.insert(files.end(), docs.begin(), docs.end());
  return files;
}

std::string text_of(const std::string& file) {
  std::ifstream in(std::string(FUSEBENCH_SOURCE_DIR) + "/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Code blocks whose first line is "$ fusebench ...", in every page.
std::vector<Example> examples() {
  std::vector<Example> found;
  for (const std::string& file : doc_files()) {
    const std::vector<std::string> lines = lines_of(text_of(file));
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].rfind("```", 0) != 0) continue;
      size_t end = i + 1;
      while (end < lines.size() && lines[end].rfind("```", 0) != 0) ++end;
      if (i + 1 < end && lines[i + 1].rfind("$ fusebench ", 0) == 0) {
        Example e;
        e.file = file;
        e.line = int(i + 2);
        e.command = lines[i + 1].substr(2);
        e.output.assign(lines.begin() + i + 2, lines.begin() + end);
        std::smatch m;
        if (std::regex_search(lines[i], m, std::regex(R"(cpu:([a-z0-9-]+))"))) e.cpu = m[1];
        if (std::regex_search(lines[i], m, std::regex(R"(in:(\S+))"))) e.in = m[1];
        found.push_back(e);
      }
      i = end;
    }
  }
  return found;
}

// Decimals vary from run to run, and oneDNN's implementation names ("[brg:avx512_core_bf16]",
// "[jit:avx2]") from CPU to CPU; integers (node, layer and case counts) must not.
std::string mask(const std::string& s) {
  const std::string isa = std::regex_replace(s, std::regex(R"(\[[a-z0-9_]+:[a-z0-9_:]+\])"), "[isa]");
  return std::regex_replace(isa, std::regex(R"(\d+\.\d+)"), "#");
}

// The environment under which a block is checked: "" for the machine as it is, the
// FUSEBENCH_ONEDNN_BF16 setting that makes it print the other kind of CPU's form, or nullopt
// (with the reason in *why) where that form cannot be had here.
std::optional<std::string> environment_for(const std::string& cpu, std::string* why) {
  if (cpu.empty()) return "";
  if (cpu != "bf16" && cpu != "no-bf16") {
    *why = "unknown fence tag cpu:" + cpu + " (cpu:bf16 or cpu:no-bf16)";
    return std::nullopt;
  }
  if ((cpu == "bf16") == dnnl_has_bf16_kernels()) return "";
  if (cpu == "no-bf16") return "FUSEBENCH_ONEDNN_BF16=0 ";
  if (std::string(dnnl_isa_name()).rfind("avx512_core", 0) == 0) return "FUSEBENCH_ONEDNN_BF16=1 ";
  *why = std::string("oneDNN has no bf16 kernels on ") + dnnl_isa_name();
  return std::nullopt;
}

// The README's blocks show an AVX512_BF16 CPU's kernels. On an AMX CPU oneDNN 2.6 picks
// other implementations: named avx512_core_amx, which the mask accepts, but for a shape it
// may also pick another kind of kernel, or a reference one that the engine then widens
// around (runs_reference_kernel), which changes the layer's line. So there each block runs
// with oneDNN's dispatch capped at AVX512_CORE_BF16, the CPU the block documents, through
// oneDNN's own setting, which can only lower the ISA. An ISA this oneDNN cannot name
// ("unknown", a newer one) is capped too; on every other CPU nothing changes.
std::string onednn_isa_cap() {
  const std::string isa = dnnl_isa_name();
  return isa == "avx512_core_amx" || isa == "unknown" ? "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 " : "";
}

bool quick(const std::string& command) {
  for (const char* sub : {"fusebench inspect ", "fusebench build ", "fusebench zoo ", "fusebench exec "})
    if (command.rfind(sub, 0) == 0) return true;
  return false;
}

TEST(Readme, QuickExamplesAreTheBinarysOutput) {
  const fs::path dir = fs::temp_directory_path() / ("fb_readme_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  int checked = 0;
  for (const Example& e : examples()) {
    if (!quick(e.command)) continue;
    std::string why;
    const std::optional<std::string> env = environment_for(e.cpu, &why);
    EXPECT_TRUE(e.cpu.empty() || e.cpu == "bf16" || e.cpu == "no-bf16") << e.file << " line " << e.line << ": " << why;
    if (!env) {
      std::printf("%s line %d: the cpu:%s block is not checked here: %s\n", e.file.c_str(), e.line, e.cpu.c_str(), why.c_str());
      continue;
    }
    // A block that reads files of a folder outside the repository (the ONNX node tests) runs
    // there, and is skipped, saying so, where that folder is absent.
    const fs::path cwd = e.in.empty() ? dir : fs::path(FUSEBENCH_SOURCE_DIR) / e.in;
    if (!fs::is_directory(cwd)) {
      std::printf("%s line %d: not checked here: %s is absent\n", e.file.c_str(), e.line, cwd.c_str());
      continue;
    }
    const std::string cmd = "cd " + cwd.string() + " && " + onednn_isa_cap() + *env + FUSEBENCH_BINARY +
                            e.command.substr(std::string("fusebench").size());
    const Outcome o = sh(cmd);
    ASSERT_EQ(o.code, 0) << e.file << " line " << e.line << ": " << e.command << "\n" << o.output;
    const std::vector<std::string> actual = lines_of(o.output);
    // Each quoted line appears in the output, in order; "..." skips output lines.
    size_t at = 0;
    for (const std::string& quoted : e.output) {
      if (quoted.find("...") != std::string::npos) continue;
      while (at < actual.size() && mask(actual[at]) != mask(quoted)) ++at;
      EXPECT_LT(at, actual.size()) << e.file << " line " << e.line << " (" << onednn_isa_cap() << *env << e.command
                                   << ") quotes a line the binary does not print:\n  "
                                   << quoted << "\nthe binary printed:\n" << o.output;
      if (at == actual.size()) break;
      ++at;
    }
    ++checked;
  }
  fs::remove_all(dir);
  EXPECT_GE(checked, 2) << "the pages should show at least inspect and build examples as commands";
}

TEST(Readme, QuickstartRunExampleListsTheScenariosCases) {
  const std::vector<CaseSpec> cases = expand_cases(load_scenario(std::string(FUSEBENCH_SOURCE_DIR) + "/scenarios/quickstart.json"));
  int checked = 0;
  for (const Example& e : examples()) {
    if (e.command.rfind("fusebench run scenarios/quickstart.json", 0) != 0) continue;
    std::smatch m;
    ASSERT_FALSE(e.output.empty());
    ASSERT_TRUE(std::regex_search(e.output[0], m, std::regex(R"(: (\d+) cases from)"))) << e.output[0];
    EXPECT_EQ(std::stoul(m[1]), cases.size()) << e.file << " line " << e.line;
    for (const std::string& l : e.output) {
      if (!std::regex_search(l, m, std::regex(R"(^\[(\d+)/(\d+)\] (.*?)  engine )"))) continue;
      EXPECT_EQ(std::stoul(m[2]), cases.size()) << l;
      const size_t k = std::stoul(m[1]);
      ASSERT_GE(k, 1u);
      ASSERT_LE(k, cases.size());
      EXPECT_EQ(m[3].str(), cases[k - 1].label()) << l;
    }
    ++checked;
  }
  EXPECT_GE(checked, 1) << "the README shows the quickstart run";
}

TEST(Readme, LinksAndPathsExist) {
  const fs::path root = fs::weakly_canonical(FUSEBENCH_SOURCE_DIR);
  const std::regex link(R"(\]\(([^)#\s]+)[^)]*\))");
  // A path of the repository, not one under build/ ("build/tests/x" is a built program).
  const std::regex path(R"((?:^|[^/\w.])((?:scripts|scenarios|docs|tests)/[A-Za-z0-9_.\-/]*[A-Za-z0-9_]))");
  for (const std::string& file : doc_files()) {
    const std::string text = text_of(file);
    const fs::path dir = (root / file).parent_path();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      if (target.find("://") != std::string::npos) continue;
      // Relative to the page, as a browser and GitHub resolve it, and inside the repository.
      const fs::path resolved = fs::weakly_canonical(dir / target);
      EXPECT_TRUE(fs::exists(resolved)) << file << " links to " << target << ", which is not in the repository";
      const std::string rel = fs::relative(resolved, root).string();
      EXPECT_NE(rel.rfind("..", 0), 0u) << file << " links outside the repository: " << target;
    }
    for (auto it = std::sregex_iterator(text.begin(), text.end(), path); it != std::sregex_iterator(); ++it) {
      const std::string p = (*it)[1];
      // "scenarios/x.json: field ..." quotes an error message about a user's file.
      if (text.compare(it->position(1) + p.size(), 1, ":") == 0) continue;
      EXPECT_TRUE(fs::exists(root / p) || fs::exists(root / (p + ".cpp"))) << file << " names " << p << ", which does not exist";
    }
  }
}

// The README is a front door (issue 42): what fusebench is, the two commands, a tour and
// links; reference material goes to a page under docs/. 200 lines is two screens with the
// tour's output; the tour shows each of its five commands as the binary's output.
TEST(Readme, FitsOnTwoScreensAndToursTheFiveCommands) {
  EXPECT_LE(lines_of(text_of("README.md")).size(), 200u) << "README.md has grown: move reference material into docs/";
  for (const char* command : {"run", "compare", "report", "profile", "gate"}) {
    bool shown = false;
    for (const Example& e : examples())
      if (e.file == "README.md" && e.command.rfind(std::string("fusebench ") + command + " ", 0) == 0) shown = true;
    EXPECT_TRUE(shown) << "the README's tour shows no `fusebench " << command << "` example";
  }
}

// An example is something to type: every scenario or other .json file its command names
// is shipped (the repository's path, as the command is run from the root).
TEST(Readme, FilesExampleCommandsNameAreShipped) {
  const fs::path root = FUSEBENCH_SOURCE_DIR;
  int named = 0;
  for (const std::string& file : doc_files()) {
    const std::vector<std::string> lines = lines_of(text_of(file));
    bool in_fence = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].rfind("```", 0) == 0) {
        in_fence = !in_fence;
        continue;
      }
      if (!in_fence || lines[i].rfind("$ ", 0) != 0 || lines[i].find("fusebench") == std::string::npos) continue;
      std::istringstream words(lines[i].substr(2));
      for (std::string w; words >> w;) {
        if (w.size() < 6 || w.compare(w.size() - 5, 5, ".json") != 0) continue;
        ++named;
        EXPECT_TRUE(fs::exists(root / w)) << file << " line " << i + 1 << ": the example names " << w << ", which is not shipped";
      }
    }
  }
  EXPECT_GE(named, 3) << "the examples run shipped scenarios";
}

}  // namespace
}  // namespace fb
