// Limits on what a model declares (engine/onnx/model_limits.h): each excess is refused on
// the parsed file before anything is allocated, naming the file, where, the value and the
// limit; real models pass the defaults; FUSEBENCH_MODEL_LIMITS sets them, and a bad entry
// in it is named.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/ir/error.h"
#include "engine/onnx/model_limits.h"
#include "engine/onnx/onnx_import.h"
#include "engine/zoo/zoo.h"

namespace fb {
namespace {

std::string refusal(const onnx::ModelProto& m, const ModelLimits& limits) {
  try {
    check_model_limits(m, "m.onnx", limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelLimits, EveryZooModelPassesTheDefaults) {
  for (const ZooModelInfo& z : zoo_models()) EXPECT_EQ(refusal(build_zoo_model(z.name), ModelLimits{}), "") << z.name;
}

TEST(ModelLimits, AHugeDeclaredInitializerIsRefusedBeforeItsDataIsRead) {
  onnx::ModelProto m = build_zoo_model("mlp");
  onnx::TensorProto* t = m.mutable_graph()->mutable_initializer(0);
  t->clear_dims();
  for (int i = 0; i < 4; ++i) t->add_dims(int64_t(1) << 20);  // 2^80 elements: the product overflows
  const std::string msg = refusal(m, ModelLimits{});
  EXPECT_NE(msg.find("m.onnx: initializer '" + t->name() + "': its dimensions declare more than 17179869184 elements, "
                     "over the limit tensor_elements = 17179869184"),
            std::string::npos)
      << msg;
  // The importer refuses it the same way, before tensor_from_proto allocates.
  try {
    import_onnx(m, "m.onnx", "");
    ADD_FAILURE() << "imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor_elements"), std::string::npos) << e.what();
  }
}

TEST(ModelLimits, EachLimitNamesWhatExceededIt) {
  const onnx::ModelProto m = build_zoo_model("mlp?layers=3");
  ModelLimits nodes;
  nodes.nodes = 5;
  EXPECT_NE(refusal(m, nodes).find("m.onnx: the graph: the model has at least 10 nodes, over the limit nodes = 5"),
            std::string::npos)
      << refusal(m, nodes);
  ModelLimits depth;
  depth.graph_depth = 4;  // MatMul, Add, Relu per layer: a chain of 10
  EXPECT_NE(refusal(m, depth).find("the graph: a chain of 5 nodes ends at node '"), std::string::npos) << refusal(m, depth);
  ModelLimits bytes;
  bytes.initializer_bytes = 1000;
  EXPECT_NE(refusal(m, bytes).find("over the limit initializer_bytes = 1000"), std::string::npos) << refusal(m, bytes);

  onnx::ModelProto named = m;
  named.mutable_graph()->mutable_node(1)->set_name(std::string(5000, 'x'));
  ModelLimits strings;
  strings.string_bytes = 4096;
  const std::string s = refusal(named, strings);
  EXPECT_NE(s.find("'s name: a string of 5000 bytes, over the limit string_bytes = 4096"), std::string::npos) << s;
  EXPECT_LT(s.size(), 400u) << "the hostile name is cut short in the message";

  onnx::ModelProto attr = m;
  onnx::AttributeProto* a = attr.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("junk");
  a->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 100; ++i) a->add_ints(i);
  ModelLimits ints;
  ints.attribute_elements = 64;
  EXPECT_NE(refusal(attr, ints).find(": attribute 'junk': it holds 100 values, over the limit attribute_elements = 64"),
            std::string::npos)
      << refusal(attr, ints);
}

// Bodies within bodies: refused at the limit, before the walk goes deeper.
TEST(ModelLimits, SubgraphNestingIsBounded) {
  onnx::ModelProto m = build_zoo_model("mlp?layers=1");
  onnx::GraphProto* g = m.mutable_graph();
  for (int level = 0; level < 20; ++level) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("If");
    n->set_name("if" + std::to_string(level));
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    g = a->mutable_g();
  }
  const std::string msg = refusal(m, ModelLimits{});
  EXPECT_NE(msg.find("a body nested 17 deep, over the limit subgraph_nesting = 16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'if16' (If): attribute 'then_branch''s body"), std::string::npos) << msg;
}

TEST(ModelLimits, TheEnvironmentSetsThemAndABadEntryIsNamed) {
  setenv("FUSEBENCH_MODEL_LIMITS", "nodes=7,string_bytes=99", 1);
  const ModelLimits l = ModelLimits::from_environment();
  EXPECT_EQ(l.nodes, 7);
  EXPECT_EQ(l.string_bytes, 99);
  EXPECT_EQ(l.graph_depth, ModelLimits{}.graph_depth);
  for (const char* bad : {"node=7", "nodes=-1", "nodes=x", "nodes"}) {
    setenv("FUSEBENCH_MODEL_LIMITS", bad, 1);
    try {
      ModelLimits::from_environment();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("FUSEBENCH_MODEL_LIMITS: ", 0), 0u) << e.what();
    }
  }
  unsetenv("FUSEBENCH_MODEL_LIMITS");
}

}  // namespace
}  // namespace fb
