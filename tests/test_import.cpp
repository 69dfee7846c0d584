// ONNX import: unsupported ops, damaged files and external data are errors that name the
// file and node; external data resolves relative to the model and may not escape it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/builder/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/reference/reference_executor.h"
#include "engine/zoo/zoo.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

class ImportTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fb_import_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "models");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& rel, const std::string& bytes) {
    fs::path p = dir_ / rel;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  fs::path dir_;
};

std::string expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected fb::Error";
  return "";
}

// A one-node model: y = OP(x) over float[2,3].
onnx::ModelProto one_node(const std::string& op) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto add_vi = [](onnx::ValueInfoProto* vi, const std::string& name) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
    tt->mutable_shape()->add_dim()->set_dim_value(3);
  };
  add_vi(g->add_input(), "x");
  add_vi(g->add_output(), "y");
  auto* n = g->add_node();
  n->set_name("the_node");
  n->set_op_type(op);
  n->add_input("x");
  n->add_output("y");
  return m;
}

TEST_F(ImportTest, UnsupportedOpNamesNodeAndOpType) {
  Graph g = import_onnx(one_node("Det"), "m.onnx", "");
  std::string msg = expect_error([&] { build_engine(g, BuildConfig{}); });
  EXPECT_NE(msg.find("node 'the_node' (Det)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unsupported op type 'Det'"), std::string::npos) << msg;
  msg = expect_error([&] { ReferenceExecutor(g, 1); });
  EXPECT_NE(msg.find("node 'the_node' (Det)"), std::string::npos) << msg;
}

TEST_F(ImportTest, DamagedFilesAreErrorsNamingTheFile) {
  std::string empty = write("models/empty.onnx", "");
  EXPECT_NE(expect_error([&] { load_onnx_file(empty); }).find("empty.onnx: the model file is empty"), std::string::npos);
  std::string junk = write("models/junk.onnx", std::string("\xff\xff\xff\xff garbage \x01\x02", 16));
  EXPECT_NE(expect_error([&] { load_onnx_file(junk); }).find("junk.onnx"), std::string::npos);
  EXPECT_NE(expect_error([&] { load_onnx_file((dir_ / "missing.onnx").string()); }).find("cannot open"), std::string::npos);
  // A truncated real model.
  std::string bytes = build_zoo_model("zoo:mlp").SerializeAsString();
  std::string cut = write("models/cut.onnx", bytes.substr(0, bytes.size() / 2));
  std::string msg = expect_error([&] {
    onnx::ModelProto p = load_onnx_file(cut);
    import_onnx(p, cut, dir_.string());
  });
  EXPECT_NE(msg.find("cut.onnx"), std::string::npos) << msg;
}

TEST_F(ImportTest, InitializerWithWrongByteCountIsRefused) {
  onnx::ModelProto m = one_node("Relu");
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(1000000);
  init->set_raw_data(std::string(8, '\0'));
  std::string msg = expect_error([&] { import_onnx(m, "m.onnx", ""); });
  EXPECT_NE(msg.find("m.onnx"), std::string::npos) << msg;
}

onnx::ModelProto with_external_weight(const std::string& location) {
  onnx::ModelProto m = one_node("Add");
  auto* g = m.mutable_graph();
  g->mutable_node(0)->add_input("w");
  auto* init = g->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(2);
  init->add_dims(3);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = init->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  return m;
}

TEST_F(ImportTest, ExternalDataResolvesRelativeToTheModel) {
  std::vector<float> w{1, 2, 3, 4, 5, 6};
  write("models/weights.bin", std::string(reinterpret_cast<const char*>(w.data()), 24));
  Graph g = import_onnx(with_external_weight("weights.bin"), "m.onnx", (dir_ / "models").string());
  const Tensor& t = g.initializers.at("w");
  ASSERT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.data<float>()[5], 6.f);
}

TEST_F(ImportTest, ExternalDataOutsideTheModelFolderIsRefused) {
  write("secret.bin", std::string(24, 'x'));
  for (const std::string& loc : std::vector<std::string>{"../secret.bin", (dir_ / "secret.bin").string(), "sub/../../secret.bin"}) {
    std::string msg = expect_error([&] { import_onnx(with_external_weight(loc), "m.onnx", (dir_ / "models").string()); });
    EXPECT_TRUE(msg.find("escapes the model's folder") != std::string::npos ||
                msg.find("must be relative") != std::string::npos)
        << loc << ": " << msg;
  }
}

TEST_F(ImportTest, ExternalDataShorterThanTheTensorIsRefused) {
  write("models/short.bin", std::string(8, '\0'));
  std::string msg = expect_error([&] { import_onnx(with_external_weight("short.bin"), "m.onnx", (dir_ / "models").string()); });
  EXPECT_NE(msg.find("tensor 'w'"), std::string::npos) << msg;
}

TEST_F(ImportTest, ZooModelsImportWithSourcesAndSymbolicBatch) {
  for (const ZooModelInfo& info : zoo_models()) {
    Graph g = import_onnx(build_zoo_model(info.name), info.name, "");
    ASSERT_FALSE(g.nodes.empty()) << info.name;
    EXPECT_EQ(g.opset, 17);
    ASSERT_EQ(g.inputs.size(), 1u);
    EXPECT_EQ(g.inputs[0].dims[0], -1) << info.name;  // the batch stays symbolic until build
    for (const Node& n : g.nodes) EXPECT_EQ(n.sources, std::vector<std::string>{n.name});
  }
}

}  // namespace
}  // namespace fb
