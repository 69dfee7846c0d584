// Fusion limits that name nothing in the model: a partition point or an exact node name is
// an error naming the field and the name; a glob or an op type that matches nothing is
// legal but warned about in the build log. Through the API and the binary.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/builder/builder.h"
#include "harness/cases/model_source.h"
#include "shell_command.h"

namespace fb {
namespace {

constexpr const char* kBert = "zoo:bert?layers=1&hidden=64&heads=2&seq=16";

std::string build_error(const BuildConfig& c) {
  const LoadedModel m = load_model(kBert);
  try {
    build_engine(m.graph, c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool log_has(const std::vector<std::string>& log, const std::string& text) {
  return std::any_of(log.begin(), log.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

TEST(FusionLimits, PartitionPointThatIsNoTensorIsAnError) {
  BuildConfig c;
  c.partition_points = {"no/such/tensor"};
  const std::string msg = build_error(c);
  EXPECT_NE(msg.find("partition_points"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'no/such/tensor'"), std::string::npos) << msg;
}

TEST(FusionLimits, ExactNodeNameThatIsNoNodeIsAnError) {
  BuildConfig c;
  c.exclude_nodes = {"/encoder/layer.0/NoSuchNode"};
  const std::string msg = build_error(c);
  EXPECT_NE(msg.find("exclude_nodes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'/encoder/layer.0/NoSuchNode'"), std::string::npos) << msg;
}

TEST(FusionLimits, UnmatchedGlobAndOpTypeAreWarnedInTheBuildLog) {
  const LoadedModel m = load_model(kBert);
  BuildConfig c;
  c.exclude_nodes = {"/decoder/*"};
  c.exclude_op_types = {"Conv"};
  const auto engine = build_engine(m.graph, c);
  EXPECT_TRUE(log_has(engine->build_log(), "warning: fusion_limits.exclude_nodes (--exclude-node): glob '/decoder/*' matches no node"));
  EXPECT_TRUE(log_has(engine->build_log(), "warning: fusion_limits.exclude_ops (--exclude-op): no node has op type 'Conv'"));
}

TEST(FusionLimits, LimitsThatMatchBuildWithoutWarnings) {
  const LoadedModel m = load_model(kBert);
  BuildConfig c;
  c.exclude_nodes = {"/encoder/layer.0/attention/*"};
  c.exclude_op_types = {"Softmax"};
  c.partition_points = {"/embeddings/LayerNorm/Sub_output_0"};
  const auto engine = build_engine(m.graph, c);
  EXPECT_FALSE(log_has(engine->build_log(), "warning: fusion_limits"));
}

TEST(FusionLimits, TheBinaryExitsWith2NamingTheName) {
  const std::string bin = FUSEBENCH_BINARY;
  Outcome o = sh(bin + " inspect '" + kBert + "' --partition no/such/tensor");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("'no/such/tensor'"), std::string::npos) << o.output;
  o = sh(bin + " inspect '" + kBert + "' --exclude-node /no/such/node");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("'/no/such/node'"), std::string::npos) << o.output;
}

}  // namespace
}  // namespace fb
