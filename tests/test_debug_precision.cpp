// `fusebench debug precision`: the bisection on its own (a known answer), and the command
// as a user meets it: its override block, pasted into a scenario, makes a case that failed
// its tolerance pass, with the listed nodes stored as run in fp32; and --sensitivity's
// ranking on a model where the layers that lose the signal are known.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/measure/precision_debug.h"
#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace {

using Items = std::vector<size_t>;

bool contains(const Items& s, size_t i) { return std::find(s.begin(), s.end(), i) != s.end(); }

TEST(BisectNeededItems, FindsTheItemsThePredicateNeeds) {
  int checks = 0;
  const Items found = *fb::bisect_needed_items(
      40, [](const Items& s) { return contains(s, 3) && contains(s, 17) && contains(s, 38); }, &checks);
  EXPECT_EQ(found, (Items{3, 17, 38}));
  EXPECT_LE(checks, 30);  // about log2(40) per item, not one build per node
}

TEST(BisectNeededItems, NothingWhenItAlreadyPassesAndNoSetWhenNothingCan) {
  EXPECT_EQ(fb::bisect_needed_items(10, [](const Items&) { return true; }), Items{});
  int checks = 0;
  EXPECT_EQ(fb::bisect_needed_items(10, [](const Items&) { return false; }, &checks), std::nullopt);
  EXPECT_EQ(checks, 2);  // the empty set, then every item
}

TEST(BisectNeededItems, OneOfTwoAlternativesNotBoth) {
  // Passes with 9 and either 2 or 5: the shortest passing prefix (0..9) gives 9, then the
  // shortest prefix of the rest that passes beside it (0..2) gives 2; 5 is never added.
  const Items found =
      *fb::bisect_needed_items(12, [](const Items& s) { return contains(s, 9) && (contains(s, 2) || contains(s, 5)); });
  EXPECT_EQ(found, (Items{2, 9}));
}

class DebugPrecisionTest : public ::testing::Test {
 public:
  std::string path(const std::string& name) const { return dir_.path(name); }
  fb::ScratchDir dir_{"fusebench_debugprec"};
};

// `precision` everywhere misses `min_cosine` on `model`; the block found makes it pass.
void check_override_block(const DebugPrecisionTest& t, const std::string& model, const std::string& precision,
                          double min_cosine) {
  auto path = [&](const std::string& name) { return t.path(name); };
  const std::string bin = FUSEBENCH_BINARY;
  const std::string cos = std::to_string(min_cosine);
  const fb::Outcome o =
      fb::sh(bin + " debug precision '" + model + "' --precision " + precision + " --fusion aggressive --min-cosine " + cos);
  ASSERT_EQ(o.code, 0) << o.output;
  // Per tensor: the first one over the tolerance is named, with its node and precision.
  EXPECT_NE(o.output.find("first tensor over the tolerance: /"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("(over the tolerance)"), std::string::npos) << o.output;  // everywhere it misses
  const size_t block = o.output.find("paste into the scenario:\n");
  ASSERT_NE(block, std::string::npos) << o.output;
  const nlohmann::json constraints = nlohmann::json::parse(o.output.substr(block + 25))["precision_constraints"];
  ASSERT_FALSE(constraints["layers"].empty()) << o.output;

  // The same case with and without the block: only with it does it meet the tolerance.
  auto scenario = [&](const std::string& name, const nlohmann::json& extra) {
    nlohmann::json s = {{"name", name},
                        {"model", model},
                        {"matrix", {{"precision", {precision}}, {"fusion", {"aggressive"}}}},
                        {"threads", 1},
                        {"accuracy", {{precision, {{"min_cosine", min_cosine}}}}},
                        {"timing", {{"warmup_ms", 1}, {"min_iterations", 3}, {"max_iterations", 3}, {"processes", 1}}}};
    s.update(extra);
    std::ofstream(path(name + ".json")) << s.dump(2);
    return path(name + ".json");
  };
  const std::string with = scenario("with", {{"precision_constraints", constraints}});
  const std::string without = scenario("without", nlohmann::json::object());
  const fb::Outcome run = fb::sh(bin + " run " + without + " " + with + " --db " + path("r.db") + " --report " + path("r.html"));
  EXPECT_EQ(run.code, 1) << run.output;  // the case without the block fails its accuracy
  const auto cases = fb::ResultStore(path("r.db")).load_cases(1);
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    if (c.result.spec.scenario == "without") {
      EXPECT_EQ(c.result.status, fb::CaseStatus::kFailed) << c.result.accuracy.detail;
      continue;
    }
    EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.accuracy.detail;
    // Every node the block names ran in fp32, and said why.
    std::set<std::string> fp32_sources;
    for (const auto& l : c.result.layers)
      if (l.precision == "fp32")
        for (const std::string& s : l.sources) fp32_sources.insert(s);
    for (const auto& [node, p] : constraints["layers"].items()) EXPECT_TRUE(fp32_sources.count(node)) << node;
  }
}

TEST_F(DebugPrecisionTest, ItsBf16OverrideBlockPastedIntoAScenarioMeetsTheTolerance) {
  check_override_block(*this, "zoo:bert?layers=1&hidden=64&heads=2&seq=16", "bf16", 0.999995);
}

// int8: the run calibrates as debug precision did (same settings, same seeded batches), so
// the thresholds, and the outputs, are the ones the bisection judged.
TEST_F(DebugPrecisionTest, ItsInt8OverrideBlockPastedIntoAScenarioMeetsTheTolerance) {
  check_override_block(*this, "zoo:bert", "int8", 0.99993);
}

// x ─▶ /a MatMul ─▶ /big Add 4096 ─▶ /big Sub 4096 ─▶ /b MatMul ─▶ y, unfused, in bf16: a
// value near 4096 keeps 8 bits, steps of 32, so the Add's bf16 output and the Sub's bf16
// input (its boundary Convert) lose x; the two MatMuls only round. Alone, each of the two
// must rank below both MatMuls, far below.
TEST_F(DebugPrecisionTest, SensitivityRanksTheLayersThatLoseTheSignalFirst) {
  fb::zoo::OnnxBuilder b("cancel", "cancel");
  const std::string x = b.input("x", {fb::zoo::kBatch, 16, 32});
  const std::string a = b.node("/a", "MatMul", {x, b.weight("w1", {32, 32}, 0.3f)});
  const std::string big = b.node("/big", "Add", {a, b.scalar("offset", 4096.f)});
  const std::string back = b.node("/big", "Sub", {big, b.scalar("offset_again", 4096.f)});
  b.output(b.node("/b", "MatMul", {back, b.weight("w2", {32, 8}, 0.3f)}), "y", {fb::zoo::kBatch, 16, 8});
  {
    std::ofstream f(path("cancel.onnx"), std::ios::binary);
    ASSERT_TRUE(b.finish().SerializeToOstream(&f));
  }
  const fb::Outcome o = fb::sh(std::string(FUSEBENCH_BINARY) + " debug precision " + path("cancel.onnx") +
                               " --precision bf16 --fusion none --min-cosine 0.999 --sensitivity");
  ASSERT_EQ(o.code, 0) << o.output;
  const size_t head = o.output.find("each reduced-precision layer alone in it (every other node fp32), worst first:\n");
  ASSERT_NE(head, std::string::npos) << o.output;
  // Its lines, in the order printed: 1 - cosine and layer name.
  const std::regex line(R"(  1 - cosine ([0-9.e+-]+), max abs err \S+  bf16  (\S+)  \()");
  std::vector<std::pair<double, std::string>> ranked;
  std::istringstream lines(o.output.substr(head));
  std::string l;
  std::getline(lines, l);
  for (std::smatch match; std::getline(lines, l) && std::regex_search(l, match, line);)
    ranked.push_back({std::stod(match[1]), match[2]});
  ASSERT_EQ(ranked.size(), 4u) << o.output;  // the four nodes, each a bf16 layer
  EXPECT_EQ((std::set<std::string>{ranked[0].second, ranked[1].second}), (std::set<std::string>{"/big/Add", "/big/Sub"}));
  EXPECT_GT(ranked[1].first, 0.1) << o.output;  // cosine below 0.9
  for (size_t i : {2, 3}) {
    EXPECT_LT(ranked[i].first, 1e-3) << ranked[i].second;  // cosine above 0.999, but not exactly 1: bf16 rounds
    EXPECT_GT(ranked[i].first, 0) << ranked[i].second;
  }
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_GE(ranked[i - 1].first, ranked[i].first);
  EXPECT_NE(o.output.find("1 - cosine: the 4 layers alone add up to "), std::string::npos) << o.output;
}

// The answers that are not a set of nodes: a tolerance the full build already meets, one the
// precision cannot meet (tighter than any one layer alone in it reaches, looser than the fp32
// engine's own rounding), and a model with no layer that can run in the precision. Each is a
// conclusion with its own exit status (0, 4, 4), never the error status 2.
const std::string kSmallBert = "zoo:bert?layers=1&hidden=64&heads=2&seq=16";

TEST_F(DebugPrecisionTest, AToleranceTheBuildAlreadyMeetsNeedsNoNodeInFp32) {
  const fb::Outcome o = fb::sh(std::string(FUSEBENCH_BINARY) + " debug precision '" + kSmallBert +
                               "' --precision bf16 --fusion aggressive --min-cosine 0.99");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("conclusion: the bf16 build meets the tolerance as it is: no node needs to stay in fp32"),
            std::string::npos)
      << o.output;
  EXPECT_EQ(o.output.find("paste into the scenario"), std::string::npos) << o.output;
}

TEST_F(DebugPrecisionTest, AToleranceNoLayerAloneMeetsIsAConclusionNotAnError) {
  for (const char* precision : {"int8", "bf16"}) {
    const fb::Outcome o = fb::sh(std::string(FUSEBENCH_BINARY) + " debug precision '" + kSmallBert + "' --precision " +
                                 precision + " --fusion aggressive --min-cosine 0.99999999");
    EXPECT_EQ(o.code, 4) << o.output;
    const std::string said = std::string("conclusion: ") + precision + " cannot meet this tolerance on this model: ";
    EXPECT_NE(o.output.find(said + "the best build with any layer in " + precision + " keeps one, "), std::string::npos)
        << o.output;
    // The best it reached, and that fp32 itself is within the tolerance (so the precision is the cause).
    std::smatch m;
    ASSERT_TRUE(std::regex_search(o.output, m, std::regex(R"(, and reaches 1 - cosine ([0-9.e+-]+) )"))) << o.output;
    EXPECT_GT(std::stod(m[1]), 1e-8);  // misses the tolerance...
    EXPECT_LT(std::stod(m[1]), 1e-3);  // ...by a real layer's rounding, not a broken build
    EXPECT_NE(o.output.find("  the fp32 engine itself: cosine 1.000000"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("(within the tolerance)"), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("error"), std::string::npos) << o.output;
  }
}

// x ─▶ Relu ─▶ Add ─▶ y: nothing here has an int8 kernel.
TEST_F(DebugPrecisionTest, AModelWithNoInt8LayerIsAConclusionNotAnError) {
  fb::zoo::OnnxBuilder b("no_int8", "no_int8");
  const std::string x = b.input("x", {fb::zoo::kBatch, 8});
  const std::string r = b.node("/relu", "Relu", {x});
  b.output(b.node("/add", "Add", {r, b.scalar("one", 1.f)}), "y", {fb::zoo::kBatch, 8});
  {
    std::ofstream f(path("no_int8.onnx"), std::ios::binary);
    ASSERT_TRUE(b.finish().SerializeToOstream(&f));
  }
  const fb::Outcome o = fb::sh(std::string(FUSEBENCH_BINARY) + " debug precision " + path("no_int8.onnx") +
                               " --precision int8 --fusion none --min-cosine 0.999");
  EXPECT_EQ(o.code, 4) << o.output;
  EXPECT_NE(o.output.find("conclusion: int8 cannot be used on this model: " + path("no_int8.onnx") + ": precision 'int8': no layer can run in int8"),
            std::string::npos)
      << o.output;
}

}  // namespace
