// The built-in model zoo: every model is a valid ONNX model whose shapes infer completely,
// names follow the PyTorch exporter's scheme, parameters do what they say, builds are
// deterministic, and bad specs fail with a message naming what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "engine/ir/error.h"
#include "engine/zoo/zoo.h"

namespace {

std::map<std::string, int> op_histogram(const onnx::ModelProto& m) {
  std::map<std::string, int> h;
  for (const auto& n : m.graph().node()) ++h[n.op_type()];
  return h;
}

const onnx::TensorProto* find_initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

std::vector<int64_t> dims_of(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

std::vector<float> floats_of(const onnx::TensorProto& t) {
  std::vector<float> v(t.raw_data().size() / 4);
  std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
  return v;
}

// Runs strict shape inference and returns the model with value_info filled in.
onnx::ModelProto infer(const onnx::ModelProto& m) {
  onnx::ModelProto copy = m;
  onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                     onnx::ShapeInferenceOptions(/*check_type=*/true,
                                                                 /*error_mode=*/1));
  return copy;
}

std::string expect_error(const std::string& spec) {
  try {
    fb::build_zoo_model(spec);
  } catch (const fb::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << spec << " threw something other than fb::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << spec << " did not throw";
  return "";
}

TEST(Zoo, ListsModelsInOrderWithIntegerDefaults) {
  auto models = fb::zoo_models();
  std::vector<std::string> names;
  for (const auto& m : models) {
    names.push_back(m.name);
    EXPECT_FALSE(m.description.empty()) << m.name;
    EXPECT_FALSE(m.params.empty()) << m.name;
    for (const auto& p : m.params) {
      EXPECT_FALSE(p.help.empty()) << m.name << "." << p.name;
      EXPECT_NO_THROW((void)std::stoll(p.default_value)) << m.name << "." << p.name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"mlp", "bert", "resnet", "mobilenet", "vit", "llama", "efficientnet", "gpt", "yolo", "shufflenet", "wav2vec2"}));
}

TEST(Zoo, EveryModelPassesCheckerAndFullShapeInference) {
  for (const auto& info : fb::zoo_models()) {
    SCOPED_TRACE(info.name);
    onnx::ModelProto m = fb::build_zoo_model("zoo:" + info.name);
    EXPECT_EQ(m.ir_version(), 8);
    ASSERT_EQ(m.opset_import_size(), 1);
    EXPECT_EQ(m.opset_import(0).version(), 17);
    EXPECT_NO_THROW(onnx::checker::check_model(m));
    onnx::ModelProto inferred;
    ASSERT_NO_THROW(inferred = infer(m));

    ASSERT_EQ(m.graph().input_size(), 1);
    ASSERT_EQ(m.graph().output_size(), 1);
    EXPECT_EQ(m.graph().input(0).name(), "input");
    EXPECT_EQ(m.graph().output(0).name(), "output");
    EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");

    // Every intermediate value gets a complete shape: only dim 0 is symbolic, and it is
    // "batch" (ReduceMean/Gemm outputs included), so the engine never meets an unknown dim.
    // Values computed from constants alone (gpt's causal mask) are fully known. ONNX's
    // Resize inference multiplies dims by the scales and leaves a symbolic batch unnamed
    // ("unk__0"), as it does for an exported YOLO: yolo's values after its first upsampling
    // have that batch (the engine infers its own shapes with the batch bound).
    std::set<std::string> shaped;
    for (const auto& vi : inferred.graph().value_info()) {
      const auto& shape = vi.type().tensor_type().shape();
      ASSERT_GT(shape.dim_size(), 0) << vi.name();
      const bool resized_batch = info.name == "yolo" && shape.dim(0).dim_param().rfind("unk__", 0) == 0;
      if (!shape.dim(0).has_dim_value() && !resized_batch) EXPECT_EQ(shape.dim(0).dim_param(), "batch") << vi.name();
      for (int i = 1; i < shape.dim_size(); ++i)
        EXPECT_TRUE(shape.dim(i).has_dim_value()) << vi.name() << " dim " << i;
      shaped.insert(vi.name());
    }
    for (const auto& n : m.graph().node()) {
      for (const auto& out : n.output()) {
        if (out != "output") {
          EXPECT_TRUE(shaped.count(out)) << out << " has no inferred shape";
        }
      }
    }
  }
}

TEST(Zoo, NamesAreUniqueAndExporterStyle) {
  for (const auto& info : fb::zoo_models()) {
    SCOPED_TRACE(info.name);
    onnx::ModelProto m = fb::build_zoo_model(info.name);
    std::set<std::string> nodes, values, inits;
    for (const auto& n : m.graph().node()) {
      EXPECT_TRUE(nodes.insert(n.name()).second) << "duplicate node name " << n.name();
      EXPECT_EQ(n.name().front(), '/') << n.name();
      EXPECT_NE(n.op_type(), "Constant") << "constants must be initializers: " << n.name();
      for (const auto& out : n.output()) EXPECT_TRUE(values.insert(out).second) << out;
    }
    for (const auto& t : m.graph().initializer()) {
      EXPECT_TRUE(inits.insert(t.name()).second) << "duplicate initializer " << t.name();
      EXPECT_FALSE(values.count(t.name())) << t.name();
    }
    // Every initializer is used: no dead weights inflating the model.
    std::set<std::string> used;
    for (const auto& n : m.graph().node())
      for (const auto& in : n.input()) used.insert(in);
    for (const auto& name : inits) EXPECT_TRUE(used.count(name)) << "unused " << name;
  }
}

TEST(Zoo, BertHasTheExportedPattern) {
  onnx::ModelProto m = fb::build_zoo_model("zoo:bert");
  auto h = op_histogram(m);
  for (const char* op : {"MatMul", "Add", "Erf", "Softmax", "ReduceMean", "Sub", "Pow", "Sqrt",
                         "Div", "Mul", "Transpose", "Reshape"})
    EXPECT_GT(h[op], 0) << op;
  // Per layer: 4 projections + 2 in attention + 2 in the FFN.
  EXPECT_EQ(h["MatMul"], 16);
  EXPECT_EQ(h["Softmax"], 2);
  EXPECT_EQ(h["Erf"], 2);
  EXPECT_EQ(h["ReduceMean"], 2 * (1 + 2 * 2));  // two per LayerNorm: embedding + 2 per layer
  EXPECT_EQ(m.graph().node_size(), 9 + 2 * 49);

  std::set<std::string> names;
  for (const auto& n : m.graph().node()) names.insert(n.name());
  for (const char* name : {"/embeddings/LayerNorm/ReduceMean",
                           "/encoder/layer.0/attention/self/query/MatMul",
                           "/encoder/layer.0/attention/self/query/Add",
                           "/encoder/layer.0/attention/self/Softmax",
                           "/encoder/layer.0/attention/self/MatMul_1",
                           "/encoder/layer.0/attention/output/dense/MatMul",
                           "/encoder/layer.0/attention/output/LayerNorm/ReduceMean_1",
                           "/encoder/layer.0/intermediate/intermediate_act_fn/Erf",
                           "/encoder/layer.1/output/LayerNorm/Add_1"})
    EXPECT_TRUE(names.count(name)) << name;
  const auto* w = find_initializer(m, "encoder.layer.0.attention.self.query.weight");
  ASSERT_TRUE(w);
  EXPECT_EQ(dims_of(*w), (std::vector<int64_t>{128, 128}));
  // The decomposed LayerNorm's eps and the attention scale are rank-0 initializers.
  for (const auto& n : m.graph().node())
    if (n.name() == "/encoder/layer.0/attention/self/Div") {
      const auto* scale = find_initializer(m, n.input(1));
      ASSERT_TRUE(scale);
      EXPECT_EQ(scale->dims_size(), 0);
      EXPECT_FLOAT_EQ(floats_of(*scale).at(0), std::sqrt(32.0f));
    }
}

TEST(Zoo, MlpHasMatMulAddReluLayersAndAGemmHead) {
  onnx::ModelProto m = fb::build_zoo_model("zoo:mlp");
  auto h = op_histogram(m);
  EXPECT_EQ(h, (std::map<std::string, int>{{"MatMul", 3}, {"Add", 3}, {"Relu", 3}, {"Gemm", 1}}));
  EXPECT_EQ(m.graph().node(0).name(), "/layers.0/fc/MatMul");
  EXPECT_EQ(m.graph().node(m.graph().node_size() - 1).name(), "/head/Gemm");
  EXPECT_EQ(dims_of(*find_initializer(m, "layers.0.fc.weight")), (std::vector<int64_t>{256, 512}));
  EXPECT_EQ(dims_of(*find_initializer(m, "head.weight")), (std::vector<int64_t>{16, 512}));
}

TEST(Zoo, ParametersChangeTheModel) {
  onnx::ModelProto bert = fb::build_zoo_model("zoo:bert?hidden=64&layers=3");
  EXPECT_EQ(op_histogram(bert)["MatMul"], 24);
  EXPECT_EQ(dims_of(*find_initializer(bert, "encoder.layer.2.attention.self.query.weight")),
            (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(dims_of(*find_initializer(bert, "encoder.layer.0.intermediate.dense.weight")),
            (std::vector<int64_t>{64, 256}));
  onnx::ModelProto ffn = fb::build_zoo_model("zoo:bert?ffn=100");
  EXPECT_EQ(dims_of(*find_initializer(ffn, "encoder.layer.0.output.dense.weight")),
            (std::vector<int64_t>{100, 128}));

  onnx::ModelProto mlp = fb::build_zoo_model("zoo:mlp?in=7&out=3&layers=1");
  EXPECT_EQ(op_histogram(mlp)["MatMul"], 1);
  EXPECT_EQ(mlp.graph().input(0).type().tensor_type().shape().dim(1).dim_value(), 7);
  EXPECT_EQ(mlp.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 3);

  onnx::ModelProto resnet = fb::build_zoo_model("zoo:resnet?stages=4&width=8&classes=5");
  EXPECT_EQ(dims_of(*find_initializer(resnet, "fc.weight")), (std::vector<int64_t>{5, 64}));
  EXPECT_TRUE(find_initializer(resnet, "layer4.0.downsample.0.weight"));
  EXPECT_FALSE(find_initializer(resnet, "layer1.0.downsample.0.weight"));

  onnx::ModelProto vit = fb::build_zoo_model("zoo:vit?patch=8&image=32");
  EXPECT_EQ(dims_of(*find_initializer(vit, "embeddings.position_embeddings")),
            (std::vector<int64_t>{1, 16, 64}));

  // Changed sizes still check and infer.
  for (const char* spec : {"zoo:bert?hidden=64&heads=2&seq=7&ffn=33", "zoo:resnet?image=15&stages=4",
                           "zoo:mobilenet?blocks=7&image=17&width=8", "zoo:vit?image=12&patch=3",
                           "zoo:mlp?layers=1"}) {
    SCOPED_TRACE(spec);
    onnx::ModelProto m = fb::build_zoo_model(spec);
    EXPECT_NO_THROW(onnx::checker::check_model(m));
    EXPECT_NO_THROW(infer(m));
  }
}

TEST(Zoo, BuildsAreDeterministic) {
  for (const auto& info : fb::zoo_models()) {
    SCOPED_TRACE(info.name);
    std::string a = fb::build_zoo_model("zoo:" + info.name).SerializeAsString();
    std::string b = fb::build_zoo_model("zoo:" + info.name).SerializeAsString();
    EXPECT_EQ(a, b);
  }
  // The same model spelled differently is the same model, weights included.
  EXPECT_EQ(fb::build_zoo_model("bert").SerializeAsString(),
            fb::build_zoo_model("zoo:bert?seq=64&layers=2").SerializeAsString());
  // Different parameters seed different weights, even where a tensor's shape is unchanged.
  auto w = [](const std::string& spec) {
    onnx::ModelProto m = fb::build_zoo_model(spec);
    return find_initializer(m, "encoder.layer.0.attention.self.query.weight")->raw_data();
  };
  EXPECT_NE(w("zoo:bert"), w("zoo:bert?layers=3"));
}

TEST(Zoo, WeightsAreScaledAndBatchNormVarianceIsPositive) {
  onnx::ModelProto m = fb::build_zoo_model("zoo:resnet");
  int batch_norms = 0;
  for (const auto& t : m.graph().initializer()) {
    const std::string& n = t.name();
    if (n.size() > 12 && n.ends_with("running_var")) {
      ++batch_norms;
      for (float v : floats_of(t)) {
        EXPECT_GE(v, 0.5f) << n;
        EXPECT_LT(v, 1.5f) << n;
      }
    }
  }
  EXPECT_EQ(batch_norms, 1 + 3 * 2 * 2 + 2);  // stem, two per block, two projections
  onnx::ModelProto bert = fb::build_zoo_model("zoo:bert");
  auto w = floats_of(*find_initializer(bert, "encoder.layer.0.intermediate.dense.weight"));
  float lo = 0, hi = 0;
  for (float v : w) lo = std::min(lo, v), hi = std::max(hi, v);
  const float bound = std::sqrt(3.0f / 128.0f);
  EXPECT_LE(hi, bound);
  EXPECT_GE(lo, -bound);
  EXPECT_GT(hi, 0.9f * bound);  // spread over the whole range, not degenerate
  auto gamma = floats_of(*find_initializer(bert, "encoder.layer.1.output.LayerNorm.weight"));
  for (float v : gamma) EXPECT_NEAR(v, 1.0f, 0.1f);
}

TEST(Zoo, BadSpecsNameTheProblem) {
  struct Case {
    const char* spec;
    std::vector<std::string> mentions;
  };
  for (const Case& c : std::vector<Case>{
           {"zoo:bert?hidden=100&heads=3", {"bert", "hidden", "heads"}},
           {"zoo:nosuch", {"nosuch", "mlp"}},
           {"zoo:", {"unknown zoo model"}},
           {"zoo:mlp?layers=x", {"mlp", "layers", "'x'"}},
           {"zoo:mlp?layers=", {"mlp", "layers"}},
           {"zoo:mlp?layers=3.5", {"layers", "3.5"}},
           {"zoo:mlp?layers=0", {"layers", "0"}},
           {"zoo:mlp?layers=-2", {"layers", "-2"}},
           {"zoo:mlp?layers=99999999999999999999", {"layers"}},
           {"zoo:mlp?depth=3", {"mlp", "depth"}},
           {"zoo:mlp?layers", {"layers"}},
           {"zoo:mlp?layers=2&layers=3", {"layers", "twice"}},
           {"zoo:bert?ffn=-1", {"ffn"}},
           {"zoo:vit?image=30", {"vit", "image", "patch"}},
           {"zoo:vit?hidden=10", {"vit", "hidden", "heads"}},
           {"zoo:mlp?in=100000&hidden=100000", {"zoo:mlp?", "weights"}},
       }) {
    SCOPED_TRACE(c.spec);
    std::string msg = expect_error(c.spec);
    for (const auto& word : c.mentions) EXPECT_NE(msg.find(word), std::string::npos) << msg;
  }
}

TEST(Zoo, NormalizeFillsDefaultsAndSorts) {
  EXPECT_EQ(fb::normalize_zoo_spec("bert"), "zoo:bert?ffn=0&heads=4&hidden=128&layers=2&seq=64");
  EXPECT_EQ(fb::normalize_zoo_spec("zoo:bert?seq=32&layers=4"),
            "zoo:bert?ffn=0&heads=4&hidden=128&layers=4&seq=32");
  EXPECT_EQ(fb::normalize_zoo_spec("zoo:mlp?"), "zoo:mlp?hidden=512&in=256&layers=3&out=16");
  EXPECT_EQ(fb::normalize_zoo_spec("zoo:mlp?layers=007"), "zoo:mlp?hidden=512&in=256&layers=7&out=16");
  EXPECT_EQ(fb::normalize_zoo_spec("zoo:bert?layers=2"), fb::normalize_zoo_spec("zoo:bert"));
  EXPECT_THROW(fb::normalize_zoo_spec("zoo:bert?hidden=100&heads=3"), fb::Error);
  EXPECT_TRUE(fb::is_zoo_spec("zoo:bert"));
  EXPECT_FALSE(fb::is_zoo_spec("models/bert.onnx"));
  EXPECT_FALSE(fb::is_zoo_spec("bert"));
  // The stored doc string is the normalized spec, so an exported file says what it is.
  EXPECT_EQ(fb::build_zoo_model("mlp?layers=2").doc_string(),
            "zoo:mlp?hidden=512&in=256&layers=2&out=16");
}

}  // namespace
