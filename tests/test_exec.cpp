// fusebench exec end to end through the binary: an exported zoo model run by both
// executors with outputs that agree, input files that are really used (.npy and .pb),
// seeded inputs identical to run's, output file names, and bad inputs as exit code 2.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "engine/onnx/onnx_import.h"
#include "engine/reference/reference_executor.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "harness/cases/tensor_file.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMlp = "zoo:mlp?in=32&hidden=64&out=8&layers=2";

// A command's exit code, stdout and stderr (kept apart: errors must go to stderr).
struct Ran {
  int code = -1;
  std::string out, err;
};

Ran run_command(const std::string& cmd, const fs::path& err_file) {
  Ran r;
  FILE* p = popen((cmd + " 2>" + err_file.string()).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  return r;
}

class Exec : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fb_exec_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    model_ = p("mlp.onnx");
    const Ran ex = sh(bin() + " zoo export '" + std::string(kMlp) + "' -o " + model_);
    ASSERT_EQ(ex.code, 0) << ex.err;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  static std::string bin() { return FUSEBENCH_BINARY; }
  Ran sh(const std::string& cmd) const { return run_command(cmd, dir_ / "stderr.txt"); }
  Ran exec(const std::string& args) const { return sh(bin() + " exec " + model_ + " " + args); }
  fs::path dir_;
  std::string model_;
};

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

Tensor ramp(Shape shape) {
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i % 13) * 0.125f - 0.75f;
  return t;
}

TEST_F(Exec, ReferenceAndEngineOutputsAgree) {
  const Ran ref = exec("--executor reference --batch 2 --save-outputs " + p("ref"));
  ASSERT_EQ(ref.code, 0) << ref.err;
  const Ran eng = exec("--executor engine --fusion aggressive --batch 2 --save-outputs " + p("eng"));
  ASSERT_EQ(eng.code, 0) << eng.err;
  EXPECT_NE(eng.out.find("engine, fusion aggressive, batch 2"), std::string::npos) << eng.out;
  EXPECT_NE(eng.out.find("output output  float32[2,8]  min "), std::string::npos) << eng.out;
  EXPECT_NE(eng.out.find("-> " + p("eng") + "/output.npy"), std::string::npos) << eng.out;

  const Tensor r = read_tensor_file(p("ref/output.npy"));
  const Tensor e = read_tensor_file(p("eng/output.npy"));
  ASSERT_EQ(r.shape(), (Shape{2, 8}));
  ASSERT_EQ(e.shape(), r.shape());
  double spread = 0;
  for (int64_t i = 0; i < r.numel(); ++i) {
    const float a = r.data<float>()[i], b = e.data<float>()[i];
    EXPECT_LE(std::fabs(a - b), 1e-4 + 1e-3 * std::fabs(a)) << "element " << i;
    spread = std::max(spread, double(std::fabs(a - r.data<float>()[0])));
  }
  EXPECT_GT(spread, 0) << "outputs are all equal: the model did not see varied inputs";
}

TEST_F(Exec, ADynamicEngineRunsEveryShapeOfItsProfileAsTheStaticEngineDoes) {
  const std::string profile = "--min-shapes input:1x32 --opt-shapes input:4x32 --max-shapes input:6x32";
  const Ran dyn = exec("--fusion aggressive --batch 3 " + profile + " --save-outputs " + p("dyn"));
  ASSERT_EQ(dyn.code, 0) << dyn.err;
  EXPECT_NE(dyn.out.find("optimization profile: input min [1,32], opt [4,32], max [6,32]"), std::string::npos) << dyn.out;
  EXPECT_NE(dyn.out.find("specialized for input [4,32] in "), std::string::npos) << dyn.out;
  EXPECT_NE(dyn.out.find("specialized for input [3,32] in "), std::string::npos) << dyn.out;
  const Ran fixed = exec("--fusion aggressive --batch 3 --save-outputs " + p("static"));
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_TRUE(same_bytes(read_tensor_file(p("dyn/output.npy")), read_tensor_file(p("static/output.npy"))));

  const Ran outside = exec("--batch 7 " + profile);
  EXPECT_EQ(outside.code, 2);
  EXPECT_NE(outside.err.find("input 'input' dimension 0 is 7, outside the engine's optimization profile [1, 6]"),
            std::string::npos)
      << outside.err;
  const Ran partial = exec("--min-shapes input:1x32 --max-shapes input:6x32");
  EXPECT_EQ(partial.code, 2);
  EXPECT_NE(partial.err.find("'input' needs a shape in each of --min-shapes, --opt-shapes and --max-shapes"), std::string::npos)
      << partial.err;
  const Ran garbled = exec("--min-shapes input:1xx32 --opt-shapes input:4x32 --max-shapes input:6x32");
  EXPECT_EQ(garbled.code, 2);
  EXPECT_NE(garbled.err.find("--min-shapes 'input:1xx32': dimension '' is not a positive integer"), std::string::npos)
      << garbled.err;
  const Ran reference = exec("--executor reference " + profile);
  EXPECT_EQ(reference.code, 2);
  EXPECT_NE(reference.err.find("need --executor engine"), std::string::npos) << reference.err;
}

TEST_F(Exec, InspectAndProfileShowADynamicEnginesOptSpecializationAndBuildRefusesIt) {
  const std::string profile = " --min-shapes input:1x32 --opt-shapes input:4x32 --max-shapes input:6x32";
  const Ran inspected = sh(bin() + " inspect " + model_ + profile);
  ASSERT_EQ(inspected.code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("engine layers (standard, dynamic: the specialization for the profile's opt shapes)"),
            std::string::npos)
      << inspected.out;
  EXPECT_NE(inspected.out.find("optimization profile: input min [1,32], opt [4,32], max [6,32]"), std::string::npos)
      << inspected.out;
  EXPECT_NE(inspected.out.find("→ [4,"), std::string::npos) << inspected.out;
  const Ran profiled = sh(bin() + " profile " + model_ + profile + " --iterations 3");
  ASSERT_EQ(profiled.code, 0) << profiled.err;
  EXPECT_NE(profiled.out.find("aggressive, batch 4, 1 thread(s)"), std::string::npos) << profiled.out;
  EXPECT_NE(profiled.out.find("optimization profile: input min [1,32], opt [4,32], max [6,32] (profiled at opt)"),
            std::string::npos)
      << profiled.out;
  const Ran built = sh(bin() + " build " + model_ + profile + " -o " + p("d.plan"));
  EXPECT_EQ(built.code, 2);
  EXPECT_NE(built.err.find("a plan holds a static engine (plan files for dynamic engines are not done)"), std::string::npos)
      << built.err;
  EXPECT_FALSE(fs::exists(p("d.plan")));
}

TEST_F(Exec, InputFilesAreUsedAndRoundTrip) {
  const Tensor x = ramp({1, 32});
  write_npy(p("x.npy"), x);
  write_tensor_pb(p("x.pb"), x, "input");
  const Ran npy = exec("--executor reference --input input=" + p("x.npy") + " --save-inputs " + p("in") +
                           " --save-outputs " + p("out_npy"));
  ASSERT_EQ(npy.code, 0) << npy.err;
  EXPECT_NE(npy.out.find("(" + p("x.npy") + ")"), std::string::npos) << npy.out;
  EXPECT_TRUE(same_bytes(read_tensor_file(p("in/input.npy")), x));
  const Ran pb = exec("--executor reference --input input=" + p("x.pb") + " --save-outputs " + p("out_pb"));
  ASSERT_EQ(pb.code, 0) << pb.err;

  // The saved output is what the reference executor computes on exactly that input.
  const LoadedModel m = load_model(model_);
  const Tensor expected = ReferenceExecutor(m.graph, 1).run({x}).at(0);
  EXPECT_TRUE(same_bytes(read_tensor_file(p("out_npy/output.npy")), expected));
  EXPECT_TRUE(same_bytes(read_tensor_file(p("out_pb/output.npy")), expected));
}

TEST_F(Exec, GeneratedInputsAreRunsSeededInputs) {
  const Ran o = exec("--executor reference --batch 3 --seed 77 --save-inputs " + p("in"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("input  input  float32[3,32]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(seed 77)"), std::string::npos) << o.out;
  const LoadedModel m = load_model(model_);
  const std::vector<Tensor> expected = make_inputs(m.graph, ReferenceExecutor(m.graph, 3).input_shapes(), 77);
  EXPECT_TRUE(same_bytes(read_tensor_file(p("in/input.npy")), expected.at(0)));
}

TEST_F(Exec, OutputFileNamesAreSafeAndDistinct) {
  // The model's output renamed "out/logits:0", and its first hidden activation renamed
  // "out:logits/0" and made an output too: both sanitize to out_logits_0.
  onnx::ModelProto proto = load_onnx_file(model_);
  onnx::GraphProto& g = *proto.mutable_graph();
  const std::string hidden = g.node(0).output(0), final_out = g.output(0).name();
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (std::string& v : *n.mutable_output()) v = v == hidden ? "out:logits/0" : v == final_out ? "out/logits:0" : v;
    for (std::string& v : *n.mutable_input()) v = v == hidden ? "out:logits/0" : v;
  }
  g.mutable_output(0)->set_name("out/logits:0");
  onnx::ValueInfoProto* extra = g.add_output();
  extra->set_name("out:logits/0");
  *extra->mutable_type() = g.output(0).type();  // [batch, out] ...
  extra->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(64);  // ... as [batch, hidden]
  {
    std::ofstream f(p("renamed.onnx"), std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&f));
  }
  const Ran o = sh(bin() + " exec " + p("renamed.onnx") + " --executor reference --save-outputs " + p("out"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("output out/logits:0  float32[1,8]  "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("-> " + p("out") + "/out_logits_0.npy"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("-> " + p("out") + "/out_logits_0_2.npy"), std::string::npos) << o.out;
  EXPECT_EQ(read_tensor_file(p("out/out_logits_0.npy")).shape(), (Shape{1, 8}));
  EXPECT_EQ(read_tensor_file(p("out/out_logits_0_2.npy")).shape(), (Shape{1, 64}));
}

TEST_F(Exec, AWrongShapeOrTypeIsExitCode2NamingInputAndFile) {
  write_npy(p("wide.npy"), ramp({1, 33}));
  Ran o = exec("--input input=" + p("wide.npy"));
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("'input'"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(p("wide.npy") + " holds float32[1,33]"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("is float32[1,32] at batch 1"), std::string::npos) << o.err;

  // Batch 1 data for a batch-2 run.
  write_npy(p("one.npy"), ramp({1, 32}));
  o = exec("--batch 2 --input input=" + p("one.npy"));
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("holds float32[1,32]"), std::string::npos) << o.err;

  Tensor ints(DType::Int64, {1, 32});
  write_npy(p("ints.npy"), ints);
  o = exec("--input input=" + p("ints.npy"));
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("holds int64[1,32], but the model's input 'input' is float32"), std::string::npos) << o.err;
}

TEST_F(Exec, BadInputArgumentsAreExitCode2) {
  write_npy(p("x.npy"), ramp({1, 32}));
  Ran o = exec("--input nope=" + p("x.npy"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("the model has no input 'nope' (its inputs: input)"), std::string::npos) << o.err;

  o = exec("--input " + p("x.npy"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("expected NAME=FILE"), std::string::npos) << o.err;

  std::string bytes;
  {
    std::ifstream in(p("x.npy"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(p("cut.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 4);
  o = exec("--input input=" + p("cut.npy"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find(p("cut.npy") + ": holds 124 bytes of data, expected 128"), std::string::npos) << o.err;

  o = exec("--executor tensorrt");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("expected engine or reference"), std::string::npos) << o.err;
}

// mark-all's purpose: every tensor of the model saved, by both executors, in the order it
// was computed, so that two runtimes can be compared layer by layer. One file per value
// the model computes (node outputs), and each engine file agrees with the reference's.
TEST_F(Exec, MarkAllSavesEveryTensorFromBothExecutors) {
  const LoadedModel m = load_model(model_);
  std::vector<std::string> values;
  for (const Node& n : m.graph.nodes)
    for (const std::string& o : n.outputs)
      if (!o.empty()) values.push_back(o);
  ASSERT_GT(values.size(), m.graph.outputs.size()) << "the model needs intermediates for this test";

  const Ran eng = exec("--executor engine --fusion mark-all --save-outputs " + p("eng"));
  ASSERT_EQ(eng.code, 0) << eng.err;
  const Ran ref = exec("--executor reference --fusion mark-all --save-outputs " + p("ref"));
  ASSERT_EQ(ref.code, 0) << ref.err;
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(p("eng"))) files += e.path().extension() == ".npy";
  EXPECT_EQ(files, values.size());
  // Printed in the order computed: the first intermediate before the graph output.
  EXPECT_LT(eng.out.find("output " + values.front() + " "), eng.out.find("output " + m.graph.outputs[0] + " ")) << eng.out;
  std::set<std::string> taken;
  for (const std::string& v : values) {
    const std::string file = npy_file_name(v, taken);
    ASSERT_TRUE(fs::exists(p("eng/" + file))) << v;
    ASSERT_TRUE(fs::exists(p("ref/" + file))) << v;
    const Tensor e = read_tensor_file(p("eng/" + file)), r = read_tensor_file(p("ref/" + file));
    ASSERT_EQ(e.shape(), r.shape()) << v;
    for (int64_t i = 0; i < r.numel(); ++i)
      ASSERT_LE(std::fabs(e.data<float>()[i] - r.data<float>()[i]), 1e-4 + 1e-3 * std::fabs(r.data<float>()[i])) << v << " [" << i << "]";
  }

  // Without mark-all only the graph outputs are written.
  const Ran std_run = exec("--executor engine --fusion standard --save-outputs " + p("std"));
  ASSERT_EQ(std_run.code, 0) << std_run.err;
  files = 0;
  for (const auto& e : fs::directory_iterator(p("std"))) files += e.path().extension() == ".npy";
  EXPECT_EQ(files, m.graph.outputs.size());
}

// An ONNX node test folder (model.onnx, test_data_set_0/input_N.pb), or "" when the node
// tests are not there.
std::string node_test(const std::string& name) {
  const fs::path d = fs::path(FUSEBENCH_SOURCE_DIR) / ".." / "shared" / "onnx-node-tests" / name;
  return fs::is_directory(d) ? d.string() : "";
}

TEST_F(Exec, AShapeInputIsBoundFromTheGivenFileAndMustBeGiven) {
  const std::string d = node_test("test_reshape_reordered_all_dims");
  if (d.empty()) GTEST_SKIP() << "../shared/onnx-node-tests is absent";
  const std::string model = d + "/model.onnx", data = d + "/test_data_set_0/input_0.pb", shape = d + "/test_data_set_0/input_1.pb";
  const Ran ok = sh(bin() + " exec " + model + " --input data=" + data + " --input shape=" + shape);
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\nbound shape input 'shape' = int64[3] [4, 2, 3] (feeds Reshape 'Reshape_0' (input 1))\n"), std::string::npos)
      << ok.out;
  EXPECT_NE(ok.out.find("\noutput reshaped  float32[4,2,3]  "), std::string::npos) << ok.out;
  // Left to the seed, its value would decide the shapes at random.
  const Ran missing = sh(bin() + " exec " + model + " --input data=" + data);
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "fusebench exec: error: " + model + ": input 'shape' feeds Reshape 'Reshape_0' (input 1): the engine binds its "
                         "value at build time; give it with --input shape=FILE or --shape-input shape=V[,V...]\n");
  // build without it says so, naming the model and the input.
  const Ran build = sh(bin() + " build " + model + " -o " + p("r.plan"));
  EXPECT_EQ(build.code, 2);
  EXPECT_NE(build.err.find(model + ": graph input 'shape' feeds Reshape 'Reshape_0' (input 1): a static-shape engine needs its value"),
            std::string::npos)
      << build.err;
}

TEST_F(Exec, ADataDependentShapeRunsInTheEagerRegion) {
  const std::string d = node_test("test_nonzero_example");
  if (d.empty()) GTEST_SKIP() << "../shared/onnx-node-tests is absent";
  const Ran r = sh(bin() + " exec " + d + "/model.onnx --input condition=" + d + "/test_data_set_0/input_0.pb --save-outputs " + p("nz"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\neager region: node 'NonZero_0' (NonZero): output 'result' has a data-dependent shape (1 node run eagerly)\n"),
            std::string::npos)
      << r.out;
  // condition [[1, 0], [1, 1]]: three non-zero elements at (0,0), (1,0), (1,1).
  const Tensor out = read_tensor_file(p("nz/result.npy"));
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(std::vector<int64_t>(out.data<int64_t>(), out.data<int64_t>() + 6), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
  // The region survives a plan: built, read back and run, it gives the same answer.
  ASSERT_EQ(sh(bin() + " build " + d + "/model.onnx -o " + p("nz.plan")).code, 0);
  const Ran from_plan = sh(bin() + " exec " + p("nz.plan") + " --input condition=" + d + "/test_data_set_0/input_0.pb --save-outputs " + p("nzp"));
  ASSERT_EQ(from_plan.code, 0) << from_plan.err;
  const Tensor again = read_tensor_file(p("nzp/result.npy"));
  ASSERT_EQ(again.shape(), (Shape{2, 3}));
  EXPECT_EQ(std::vector<int64_t>(again.data<int64_t>(), again.data<int64_t>() + 6), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
}

}  // namespace
}  // namespace fb
