// ONNX import: unsupported ops, damaged files and external data are errors that name the
// file and node; external data resolves relative to the model and may not escape it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <csignal>
#include <random>
#include <thread>

#include "engine/builder/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/reference/reference_executor.h"
#include "engine/util/isolated_call.h"
#include "engine/zoo/zoo.h"
#include "shell_command.h"

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

// Two nodes that read each other's outputs.
TEST_F(ImportTest, GraphWithACycleIsRefused) {
  onnx::ModelProto m = one_node("Add");
  auto* g = m.mutable_graph();
  g->mutable_node(0)->add_input("loop");  // the_node: y = x + loop
  auto* back = g->add_node();
  back->set_name("back");
  back->set_op_type("Relu");
  back->add_input("y");
  back->add_output("loop");  // back: loop = relu(y)
  std::string msg = expect_error([&] { import_onnx(m, "cycle.onnx", ""); });
  EXPECT_NE(msg.find("cycle.onnx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("loop"), std::string::npos) << msg;
}

TEST_F(ImportTest, InputThatNothingProducesIsRefused) {
  onnx::ModelProto m = one_node("Add");
  m.mutable_graph()->mutable_node(0)->add_input("nowhere");
  std::string msg = expect_error([&] { import_onnx(m, "dangling.onnx", ""); });
  EXPECT_NE(msg.find("dangling.onnx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nowhere"), std::string::npos) << msg;
}

TEST_F(ImportTest, RandomBytesAreErrorsNamingTheFile) {
  std::mt19937_64 rng(7);
  const std::string model = build_zoo_model("zoo:mlp").SerializeAsString();
  for (int i = 0; i < 200; ++i) {
    // Half pure noise, half a real model with a stretch of it overwritten.
    std::string bytes = model;
    if (i % 2 == 0) bytes.resize(1 + rng() % 4096);
    const size_t from = i % 2 == 0 ? 0 : rng() % bytes.size(), len = i % 2 == 0 ? bytes.size() : 1 + rng() % 64;
    for (size_t k = from; k < std::min(bytes.size(), from + len); ++k) bytes[k] = char(rng());
    std::string path = write("models/noise.onnx", bytes);
    try {
      Graph g = import_onnx(load_onnx_file(path), path, (dir_ / "models").string());
      // A mutation that still imports must build, or fail with an error: never crash.
      try {
        build_engine(g, BuildConfig{});
      } catch (const Error&) {
      }
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("noise.onnx"), std::string::npos) << i << ": " << e.what();
    }
  }
}

TEST_F(ImportTest, AbsurdInitializerDimensionsAreRefusedWithoutAllocating) {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1 << 20, 1 << 20}, {int64_t(1) << 40}, {int64_t(1) << 40, int64_t(1) << 40}}) {
    onnx::ModelProto m = one_node("Relu");
    auto* init = m.mutable_graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) init->add_dims(d);
    init->set_raw_data(std::string(16, '\0'));
    std::string msg = expect_error([&] { import_onnx(m, "huge.onnx", ""); });
    EXPECT_NE(msg.find("huge.onnx"), std::string::npos) << msg;
  }
}

// Relu over a static float[2^20, 2^21] input: 2^41 elements, 8 TiB.
onnx::ModelProto relu_of_2_to_the_41_floats() {
  onnx::ModelProto m = one_node("Relu");
  for (auto* vi : {m.mutable_graph()->mutable_input(0), m.mutable_graph()->mutable_output(0)}) {
    auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->mutable_dim(0)->set_dim_value(int64_t(1) << 20);
    shape->mutable_dim(1)->set_dim_value(int64_t(1) << 21);
  }
  return m;
}

// 2^41 elements in a static graph input: the engine's plan and the input tensor are both
// refused up front, not attempted (overcommit would let the malloc succeed and the first
// write kill the process).
TEST_F(ImportTest, AbsurdInputDimensionsAreRefusedWithoutAllocating) {
  const onnx::ModelProto m = relu_of_2_to_the_41_floats();
  Graph g = import_onnx(m, "huge.onnx", "");
  std::string msg = expect_error([&] { build_engine(g, BuildConfig{}); });
  EXPECT_NE(msg.find("more than this machine's memory"), std::string::npos) << msg;
  msg = expect_error([&] { Tensor(DType::Float32, Shape{int64_t(1) << 20, int64_t(1) << 21}); });
  EXPECT_NE(msg.find("[1048576,2097152]"), std::string::npos) << msg;
  msg = expect_error([&] { Tensor(DType::Float32, Shape{int64_t(1) << 40, int64_t(1) << 40}); });
  EXPECT_NE(msg.find("too many elements"), std::string::npos) << msg;
}

// The same model as a file, through the binary as a user meets it: exit code 2 and one
// message that names the model file and the input, from exec and from inspect.
TEST_F(ImportTest, AbsurdInputDimensionsNameTheModelFileThroughTheBinary) {
  const onnx::ModelProto m = relu_of_2_to_the_41_floats();
  const std::string path = write("models/huge.onnx", m.SerializeAsString());
  for (const std::string cmd : {"exec", "inspect"}) {
    const Outcome o = sh(std::string(FUSEBENCH_BINARY) + " " + cmd + " " + path);
    EXPECT_EQ(o.code, 2) << cmd << ": " << o.output;
    EXPECT_NE(o.output.find(path), std::string::npos) << cmd << ": " << o.output;
    EXPECT_NE(o.output.find("[1048576,2097152]"), std::string::npos) << cmd << ": " << o.output;
  }
  const Outcome o = sh(std::string(FUSEBENCH_BINARY) + " exec " + path);
  EXPECT_NE(o.output.find("input 'x'"), std::string::npos) << o.output;
}

// y = relu(x + 1) repeated 5,000 times: 10,000 nodes import, build and run at every level.
TEST_F(ImportTest, TenThousandNodeModelRuns) {
  onnx::ModelProto m = one_node("Identity");
  auto* g = m.mutable_graph();
  g->clear_node();
  auto* one = g->add_initializer();
  one->set_name("one");
  one->set_data_type(onnx::TensorProto::FLOAT);
  one->add_float_data(1.f);
  std::string prev = "x";
  for (int i = 0; i < 5000; ++i) {
    const std::string sum = "s" + std::to_string(i), out = i == 4999 ? "y" : "r" + std::to_string(i);
    auto* add = g->add_node();
    add->set_name("/block." + std::to_string(i) + "/Add");
    add->set_op_type("Add");
    add->add_input(prev);
    add->add_input("one");
    add->add_output(sum);
    auto* relu = g->add_node();
    relu->set_name("/block." + std::to_string(i) + "/Relu");
    relu->set_op_type("Relu");
    relu->add_input(sum);
    relu->add_output(out);
    prev = out;
  }
  Graph imported = import_onnx(m, "deep.onnx", "");
  ASSERT_EQ(imported.nodes.size(), 10000u);
  Tensor x(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = -1.f + 0.4f * float(i);
  auto expect_y = [&](const Tensor& y) {
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(y.data<float>()[i], std::max(x.data<float>()[i] + 1.f, 0.f) + 4999.f, 1e-2) << i;
  };
  expect_y(ReferenceExecutor(imported, 2).run({x})[0]);
  for (FusionLevel level : {FusionLevel::None, FusionLevel::Standard, FusionLevel::Aggressive}) {
    BuildConfig cfg;
    cfg.fusion = level;
    cfg.batch = 2;
    auto engine = build_engine(imported, cfg);
    engine->run({x});
    expect_y(engine->outputs()[0]);
  }
}

// An old model is brought to opset 11 by the onnx library's converter, in a child process.
TEST_F(ImportTest, OldOpsetIsConvertedAndRuns) {
  onnx::ModelProto m = one_node("Relu");
  m.set_ir_version(4);
  m.mutable_opset_import(0)->set_version(9);
  const Graph g = import_onnx(m, "old.onnx", "");
  ASSERT_EQ(g.import_log.size(), 1u);
  EXPECT_EQ(g.import_log[0], "version converter: converted opset 9 to opset 11 with the onnx library's version converter");
  EXPECT_EQ(g.opset, 11);
  Tensor x(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = float(i) - 2.5f;
  const Tensor y = ReferenceExecutor(g, 1).run({x})[0];
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], std::max(float(i) - 2.5f, 0.f)) << i;
}

TEST(IsolatedCall, ReturnsWhatTheWorkReturned) {
  const IsolatedResult r = call_isolated([] { return std::string("bytes\0and more", 14); });
  EXPECT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.output, std::string("bytes\0and more", 14));
}

TEST(IsolatedCall, AnExceptionComesBackAsItsMessage) {
  const IsolatedResult r = call_isolated([]() -> std::string { throw std::runtime_error("no adapter for Foo"); });
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.why, "no adapter for Foo");
}

TEST(IsolatedCall, ACrashEndsTheChildNotTheCaller) {
  const IsolatedResult r = call_isolated([]() -> std::string {
    std::raise(SIGSEGV);
    return "unreachable";
  });
  EXPECT_FALSE(r.ok);
  // Under AddressSanitizer its SEGV handler reports the signal and the child leaves through
  // the death callback call_isolated sets (scripts/sanitize.sh asan saw it).
  EXPECT_TRUE(r.why == "killed by signal 11 (SIGSEGV)" || r.why == "stopped by a sanitizer's report") << r.why;
}

TEST(IsolatedCall, AHangIsKilledAtTheDeadline) {
  IsolatedLimits limits;
  limits.seconds = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const IsolatedResult r = call_isolated(
      []() -> std::string {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return "late";
      },
      limits);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.why, "timed out after 1 s");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

}  // namespace
}  // namespace fb
