// Every input that once crashed, hung or escaped as an unclear error (found by the fuzz
// targets in tests/fuzz, or by reading the code beside them) goes through the ordinary
// fusebench binary, as a user would give it: tests/data/fuzz_regressions/TARGET/FILE, with
// FILE.expect holding the words its one error must contain. Each must end in exit 2 with
// exactly one error line naming the file, never a signal, an internal error or a sanitizer
// report.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "scratch_dir.h"
#include "shell_command.h"

namespace fs = std::filesystem;

namespace fb {
namespace {

const fs::path kRegressions = fs::path(FUSEBENCH_SOURCE_DIR) / "tests" / "data" / "fuzz_regressions";

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The commands a target's inputs go through, "{}" standing for the input file.
const std::map<std::string, std::vector<std::string>>& commands() {
  static const std::map<std::string, std::vector<std::string>> c = {
      {"fuzz_onnx_import", {"build {} --fusion none -o {out}.plan", "build {} --fusion aggressive -o {out}.plan"}},
      {"fuzz_scenario", {"run {} --db {out}.db"}},
      {"fuzz_tensor_file", {"exec zoo:mlp?in=4\\&hidden=4\\&layers=1 --input input={} --save-outputs {out}"}},
      {"fuzz_plan", {"inspect {}", "exec {} --save-outputs {out}"}},
      {"fuzz_merge", {"merge {} -o {out}.db"}},
  };
  return c;
}

std::string substitute(std::string command, const std::string& input, const std::string& out) {
  for (size_t at; (at = command.find("{}")) != std::string::npos;) command.replace(at, 2, input);
  for (size_t at; (at = command.find("{out}")) != std::string::npos;) command.replace(at, 5, out);
  return command;
}

TEST(FuzzRegressions, EveryFoundInputIsOneClearErrorThroughTheBinary) {
  const ScratchDir dir("fb_fuzz_regressions");
  int inputs = 0, runs = 0;
  for (const auto& [target, target_commands] : commands()) {
    if (!fs::is_directory(kRegressions / target)) continue;
    for (const auto& entry : fs::directory_iterator(kRegressions / target)) {
      const fs::path input = entry.path();
      if (input.extension() == ".expect") continue;
      const std::string expect = read_text(input.string() + ".expect");
      ASSERT_FALSE(expect.empty()) << input << " needs a " << input.filename() << ".expect naming its error";
      ++inputs;
      for (const std::string& command : target_commands) {
        ++runs;
        const Outcome o = sh("timeout 60 " + std::string(FUSEBENCH_BINARY) + " " +
                             substitute(command, input.string(), dir.path("out")));
        const std::string what = target + " " + input.filename().string() + ": " + command + "\n" + o.output;
        EXPECT_EQ(o.code, 2) << what;
        EXPECT_NE(o.output.find(expect), std::string::npos) << what;
        EXPECT_NE(o.output.find(input.filename().string()), std::string::npos) << what;
        EXPECT_EQ(o.output.find("internal error"), std::string::npos) << what;
        EXPECT_EQ(o.output.find("Sanitizer"), std::string::npos) << what;
        size_t errors = 0;
        for (size_t at = o.output.find("error:"); at != std::string::npos; at = o.output.find("error:", at + 1)) ++errors;
        EXPECT_EQ(errors, 1u) << what;
      }
    }
  }
  EXPECT_GT(inputs, 0);
  std::cout << "reliability: inputs found by fuzzing or review (tests/data/fuzz_regressions) | " << inputs << " inputs, "
            << runs << " commands | each one clear error naming the file, exit 2\n";
}

}  // namespace
}  // namespace fb
