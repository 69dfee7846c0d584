// The neural-network kernels against small results computed by hand: Conv, ConvTranspose,
// the pools, the normalizations, Resize, Pad, Einsum, TopK, CumSum and NonMaxSuppression; and
// the errors that
// bad shapes or attributes get (an fb::Error naming the node, never a crash).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/ops/op_registry.h"

namespace fb {
namespace {

Tensor floats(Shape shape, std::vector<float> v) {
  Tensor t(DType::Float32, shape);
  EXPECT_EQ(int64_t(v.size()), t.numel());
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor ints(Shape shape, std::vector<int64_t> v) {
  Tensor t(DType::Int64, shape);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

Node make_node(const std::string& op, std::map<std::string, Attribute> attrs = {}, size_t outputs = 1) {
  Node n;
  n.name = "n_" + op;
  n.op_type = op;
  n.opset = 17;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back("y" + std::to_string(i));
  return n;
}

Attribute ints_attr(std::vector<int64_t> v) { return Attribute{v}; }
Attribute int_attr(int64_t v) { return Attribute{v}; }
Attribute float_attr(float v) { return Attribute{v}; }
Attribute str_attr(std::string v) { return Attribute{v}; }

// Conv, ConvTranspose and Einsum's products compute on the CPU backend's kernels, bound as the
// reference executor binds them.
std::vector<Tensor> run(const Node& n, const std::vector<const Tensor*>& inputs) {
  bind_host_kernels();
  return evaluate_node(n, inputs);
}

void expect_floats(const Tensor& t, Shape shape, std::vector<float> want, float tol = 1e-5f) {
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(t.dtype(), DType::Float32);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], tol) << "element " << i;
}

Tensor iota(Shape shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i + 1);
  return t;
}

TEST(Conv, ThreeByThreeKernelWithPadsAndStrides) {
  Tensor x = iota({1, 1, 3, 3});
  Tensor w = floats({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  Node n = make_node("Conv", {{"pads", ints_attr({1, 1, 1, 1})}, {"strides", ints_attr({2, 2})}});
  // Windows centred on (0,0), (0,2), (2,0), (2,2), clipped by the zero padding.
  expect_floats(run(n, {&x, &w})[0], {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(Conv, SameUpperKeepsTheSize) {
  Tensor x = iota({1, 1, 3, 3});
  Tensor w = floats({1, 1, 2, 2}, {1, 0, 0, 0});
  Node n = make_node("Conv", {{"auto_pad", str_attr("SAME_UPPER")}});
  // Total padding 1 goes at the end, so the top-left tap reads the input unshifted.
  expect_floats(run(n, {&x, &w})[0], {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST(Conv, DepthwiseGroupsWithBias) {
  Tensor x = floats({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor w = floats({2, 1, 1, 1}, {2, 3});
  Tensor b = floats({2}, {1, -1});
  Node n = make_node("Conv", {{"group", int_attr(2)}});
  expect_floats(run(n, {&x, &w, &b})[0], {1, 2, 1, 2}, {3, 5, 8, 11});
}

TEST(ConvTranspose, StrideTwoRepeatsEachInputInABlock) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = floats({1, 1, 2, 2}, {1, 1, 1, 1});
  Node n = make_node("ConvTranspose", {{"strides", ints_attr({2, 2})}});
  expect_floats(run(n, {&x, &w})[0], {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST(ConvTranspose, OutputShapeLargerThanNaturalIsFilledWithBias) {
  Tensor x = floats({1, 1, 1, 1}, {2});
  Tensor w = floats({1, 1, 1, 1}, {3});
  Tensor b = floats({1}, {0.5f});
  Node n = make_node("ConvTranspose", {{"output_shape", ints_attr({2, 2})}});
  expect_floats(run(n, {&x, &w, &b})[0], {1, 1, 2, 2}, {6.5f, 0.5f, 0.5f, 0.5f});
}

TEST(MaxPool, CeilModeAddsAPartialWindowAndIndices) {
  Tensor x = iota({1, 1, 4, 4});
  Node floor_node = make_node("MaxPool", {{"kernel_shape", ints_attr({3, 3})}, {"strides", ints_attr({2, 2})}});
  expect_floats(run(floor_node, {&x})[0], {1, 1, 1, 1}, {11});
  Node ceil_node = make_node("MaxPool", {{"kernel_shape", ints_attr({3, 3})}, {"strides", ints_attr({2, 2})}, {"ceil_mode", int_attr(1)}}, 2);
  std::vector<Tensor> r = run(ceil_node, {&x});
  expect_floats(r[0], {1, 1, 2, 2}, {11, 12, 15, 16});
  ASSERT_EQ(r[1].dtype(), DType::Int64);
  EXPECT_EQ(r[1].as_int64_vector(), (std::vector<int64_t>{10, 11, 14, 15}));
}

TEST(AveragePool, CountIncludePadChangesTheDivisor) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  std::map<std::string, Attribute> a{{"kernel_shape", ints_attr({2, 2})}, {"pads", ints_attr({1, 1, 1, 1})}, {"strides", ints_attr({2, 2})}};
  expect_floats(run(make_node("AveragePool", a), {&x})[0], {1, 1, 2, 2}, {1, 2, 3, 4});
  a["count_include_pad"] = int_attr(1);
  expect_floats(run(make_node("AveragePool", a), {&x})[0], {1, 1, 2, 2}, {0.25f, 0.5f, 0.75f, 1});
}

TEST(GlobalPools, ReduceEverySpatialPosition) {
  Tensor x = floats({1, 2, 2, 1}, {1, 3, -2, 6});
  expect_floats(run(make_node("GlobalAveragePool"), {&x})[0], {1, 2, 1, 1}, {2, 2});
  expect_floats(run(make_node("GlobalMaxPool"), {&x})[0], {1, 2, 1, 1}, {3, 6});
}

TEST(BatchNormalization, InferenceForm) {
  Tensor x = floats({1, 2, 1, 1}, {5, 3});
  Tensor scale = floats({2}, {2, 1}), bias = floats({2}, {0, 1}), mean = floats({2}, {1, 0}), var = floats({2}, {4, 1});
  Node n = make_node("BatchNormalization", {{"epsilon", float_attr(0.f)}});
  expect_floats(run(n, {&x, &scale, &bias, &mean, &var})[0], {1, 2, 1, 1}, {4, 4});
}

TEST(BatchNormalization, TrainingModeIsUnsupportedByName) {
  Tensor x = floats({1, 1, 1, 1}, {1});
  Tensor one = floats({1}, {1});
  Node n = make_node("BatchNormalization", {{"training_mode", int_attr(1)}});
  try {
    run(n, {&x, &one, &one, &one, &one});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training_mode"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("unsupported"), std::string::npos);
  }
}

TEST(InstanceNormalization, NormalizesEachPlane) {
  Tensor x = floats({1, 1, 1, 4}, {1, 2, 3, 4});
  Tensor scale = floats({1}, {1}), bias = floats({1}, {0});
  Node n = make_node("InstanceNormalization", {{"epsilon", float_attr(0.f)}});
  const float s = std::sqrt(1.25f);
  expect_floats(run(n, {&x, &scale, &bias})[0], {1, 1, 1, 4}, {-1.5f / s, -0.5f / s, 0.5f / s, 1.5f / s});
}

TEST(LayerNormalization, LastAxisWithMeanAndInvStdDev) {
  Tensor x = floats({2, 2}, {1, 3, 0, 4});
  Tensor scale = floats({2}, {1, 2}), bias = floats({2}, {0, 1});
  Node n = make_node("LayerNormalization", {{"epsilon", float_attr(0.f)}}, 3);
  std::vector<Tensor> r = run(n, {&x, &scale, &bias});
  expect_floats(r[0], {2, 2}, {-1, 3, -1, 3});
  expect_floats(r[1], {2, 1}, {2, 2});
  expect_floats(r[2], {2, 1}, {1, 0.5f});
}

TEST(Resize, NearestAndLinearOnATwoByTwo) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor roi = floats({0}, {});
  Tensor scales = floats({4}, {1, 1, 2, 2});
  expect_floats(run(make_node("Resize"), {&x, &roi, &scales})[0], {1, 1, 4, 4},
                {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  Node lin = make_node("Resize", {{"mode", str_attr("linear")}});
  expect_floats(run(lin, {&x, &roi, &scales})[0], {1, 1, 4, 4},
                {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
}

TEST(Resize, SizesWithAlignCorners) {
  Tensor x = floats({1, 3}, {0, 10, 20});
  Tensor roi = floats({0}, {});
  Tensor no_scales = floats({0}, {});
  Tensor sizes = ints({2}, {1, 5});
  Node n = make_node("Resize", {{"mode", str_attr("linear")}, {"coordinate_transformation_mode", str_attr("align_corners")}});
  expect_floats(run(n, {&x, &roi, &no_scales, &sizes})[0], {1, 5}, {0, 5, 10, 15, 20});
}

// Half-pixel sampling of one dimension, written out as the ONNX spec states it: the taps
// (index, weight) output index o reads.
std::vector<std::pair<int64_t, float>> half_pixel_taps(int64_t in, float scale, int64_t o, bool linear) {
  const float x = (float(o) + 0.5f) / scale - 0.5f;
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (!linear) {  // round_prefer_floor
    const float fl = std::floor(x);
    return {{clamp(int64_t(x - fl == 0.5f ? fl : std::round(x))), 1.f}};
  }
  const float fl = std::floor(x);
  return {{clamp(int64_t(fl)), 1.f - (x - fl)}, {clamp(int64_t(fl) + 1), x - fl}};
}

// The fast paths (a gather for nearest, rows then columns for linear over H and W) and the
// general walk (linear over C too) against the spec's formula on a [2, 3, 5, 7] input, up
// and down in each dimension, and nearest on int8 (a one-byte gather).
TEST(Resize, EveryPathMatchesTheSpecOnAnUnevenTensor) {
  const Shape in = {2, 3, 5, 7};
  Tensor x(DType::Float32, in);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 37) % 23) - 11.f;
  Tensor roi = floats({0}, {});
  for (bool linear : {false, true})
    for (std::vector<float> s : {std::vector<float>{1, 1, 2.f, 2.f}, {1, 1, 2.4f, 0.6f}, {1, 2.f, 0.5f, 3.f}, {2.f, 1.f, 1.f, 1.f}}) {
      Tensor scales = floats({4}, s);
      Node n = make_node("Resize", {{"mode", str_attr(linear ? "linear" : "nearest")}});
      const Tensor y = run(n, {&x, &roi, &scales})[0];
      Shape out;
      for (size_t d = 0; d < 4; ++d) out.push_back(int64_t(std::floor(float(in[d]) * s[d])));
      ASSERT_EQ(y.shape(), out);
      int64_t at = 0;
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t c = 0; c < out[2]; ++c)
            for (int64_t d = 0; d < out[3]; ++d, ++at) {
              double want = 0;
              for (auto [ia, wa] : half_pixel_taps(in[0], s[0], a, linear))
                for (auto [ib, wb] : half_pixel_taps(in[1], s[1], b, linear))
                  for (auto [ic, wc] : half_pixel_taps(in[2], s[2], c, linear))
                    for (auto [id, wd] : half_pixel_taps(in[3], s[3], d, linear))
                      want += double(wa) * wb * wc * wd * x.data<float>()[((ia * in[1] + ib) * in[2] + ic) * in[3] + id];
              ASSERT_NEAR(y.data<float>()[at], want, 1e-4) << (linear ? "linear" : "nearest") << " scales " << s[1] << "," << s[2]
                                                           << "," << s[3] << " element " << at;
            }
    }
  Tensor q(DType::Int8, {1, 2, 2, 3});
  for (int64_t i = 0; i < q.numel(); ++i) q.data<int8_t>()[i] = int8_t(i * 9 - 50);
  Tensor scales = floats({4}, {1, 1, 2, 1});
  const Tensor y = run(make_node("Resize"), {&q, &roi, &scales})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 3}));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 3; ++w)
        EXPECT_EQ(y.data<int8_t>()[(c * 4 + h) * 3 + w], q.data<int8_t>()[(c * 2 + h / 2) * 3 + w]);
}

TEST(Pad, ReflectEdgeAndConstant) {
  Tensor x = floats({3}, {1, 2, 3});
  Tensor pads = ints({2}, {2, 2});
  expect_floats(run(make_node("Pad", {{"mode", str_attr("reflect")}}), {&x, &pads})[0], {7}, {3, 2, 1, 2, 3, 2, 1});
  expect_floats(run(make_node("Pad", {{"mode", str_attr("edge")}}), {&x, &pads})[0], {7}, {1, 1, 1, 2, 3, 3, 3});
  Tensor value = floats({}, {9});
  expect_floats(run(make_node("Pad"), {&x, &pads, &value})[0], {7}, {9, 9, 1, 2, 3, 9, 9});
  Tensor crop = ints({2}, {-1, 0});
  expect_floats(run(make_node("Pad"), {&x, &crop})[0], {2}, {2, 3});
}

TEST(Einsum, MatrixProductAndInnerProduct) {
  Tensor a = floats({2, 2}, {1, 2, 3, 4}), b = floats({2, 2}, {5, 6, 7, 8});
  expect_floats(run(make_node("Einsum", {{"equation", str_attr("ij,jk->ik")}}), {&a, &b})[0], {2, 2}, {19, 22, 43, 50});
  Tensor u = floats({3}, {1, 2, 3}), v = floats({3}, {4, 5, 6});
  expect_floats(run(make_node("Einsum", {{"equation", str_attr("i,i")}}), {&u, &v})[0], {}, {32});
  expect_floats(run(make_node("Einsum", {{"equation", str_attr("...ij->...ji")}}), {&a})[0], {2, 2}, {1, 3, 2, 4});
}

// Float32 contractions that are batched products run on oneDNN's product, with operands and
// result permuted; the rest (diagonals, one-sided sums, broadcasts) on the general loop.
// Both against the general loop in float64 on the same values.
TEST(Einsum, BatchedProductsMatchTheGeneralLoop) {
  struct Case {
    const char* equation;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"bghid,bghjd->bghij", {{1, 3, 2, 5, 4}, {1, 3, 2, 6, 4}}},  // MaxViT's q·kᵀ
      {"bghij,bghjd->bghid", {{1, 3, 2, 5, 6}, {1, 3, 2, 6, 4}}},  // and attention · v
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ik,jk->ij", {{3, 4}, {5, 4}}},
      {"ij,jk", {{3, 4}, {4, 5}}},                                  // implicit output
      {"bij,bjk->kib", {{2, 3, 4}, {2, 4, 5}}},                     // permuted output
      {"bn,anm->bam", {{2, 3}, {4, 3, 5}}},                         // M, N and K in odd places
      {"i,j->ij", {{3}, {4}}},                                      // outer product: no K
      {"i,i", {{7}, {7}}},                                          // inner product: only K
      {"ij,ij->ij", {{3, 4}, {3, 4}}},                              // all batch
      {"...ij,...jk->...ik", {{2, 3, 4, 5}, {2, 3, 5, 2}}},
      {"ii,ij->j", {{3, 3}, {3, 4}}},                               // diagonal: general loop
      {"ij,jk->k", {{3, 4}, {4, 5}}},                               // i summed in one operand
      {"bij,bjk->bik", {{2, 3, 4}, {1, 4, 5}}},                     // broadcast batch
  };
  for (const Case& c : cases) {
    std::vector<Tensor> f32, f64;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      f32.emplace_back(DType::Float32, c.shapes[k]);
      f64.emplace_back(DType::Float64, c.shapes[k]);
      for (int64_t i = 0; i < f32.back().numel(); ++i) {
        const float v = float((i * 7 + k * 3) % 11) / 4.f - 1.2f;
        f32.back().data<float>()[i] = v;
        f64.back().data<double>()[i] = v;
      }
    }
    const Node n = make_node("Einsum", {{"equation", str_attr(c.equation)}});
    std::vector<const Tensor*> in32, in64;
    for (size_t k = 0; k < f32.size(); ++k) in32.push_back(&f32[k]), in64.push_back(&f64[k]);
    const Tensor got = run(n, in32)[0], want = run(n, in64)[0];
    ASSERT_EQ(got.shape(), want.shape()) << c.equation;
    ASSERT_GT(got.numel(), 0) << c.equation;
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<double>()[i], 1e-4 * std::max(1.0, std::abs(want.data<double>()[i])))
          << c.equation << " element " << i;
  }
}

TEST(TopK, LargestAndSmallestKeepLowerIndexOnTies) {
  Tensor x = floats({4}, {1, 3, 2, 3});
  Tensor k = ints({1}, {2});
  std::vector<Tensor> r = run(make_node("TopK", {}, 2), {&x, &k});
  expect_floats(r[0], {2}, {3, 3});
  EXPECT_EQ(r[1].as_int64_vector(), (std::vector<int64_t>{1, 3}));
  r = run(make_node("TopK", {{"largest", int_attr(0)}}, 2), {&x, &k});
  expect_floats(r[0], {2}, {1, 2});
  EXPECT_EQ(r[1].as_int64_vector(), (std::vector<int64_t>{0, 2}));
}

TEST(CumSum, InclusiveExclusiveReverse) {
  Tensor x = floats({3}, {1, 2, 3});
  Tensor axis = ints({}, {0});
  expect_floats(run(make_node("CumSum"), {&x, &axis})[0], {3}, {1, 3, 6});
  expect_floats(run(make_node("CumSum", {{"exclusive", int_attr(1)}}), {&x, &axis})[0], {3}, {0, 1, 3});
  expect_floats(run(make_node("CumSum", {{"reverse", int_attr(1)}}), {&x, &axis})[0], {3}, {6, 5, 3});
}

// Bad shapes and attributes are errors naming the node.
void expect_node_error(const Node& n, const std::vector<const Tensor*>& inputs, const std::string& fragment) {
  try {
    run(n, inputs);
    FAIL() << "expected an fb::Error for " << n.describe();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(n.describe()), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

TEST(NnErrors, BadGroupCount) {
  Tensor x = iota({1, 4, 3, 3});
  Tensor w = floats({3, 1, 1, 1}, {1, 1, 1});
  expect_node_error(make_node("Conv", {{"group", int_attr(3)}}), {&x, &w}, "group 3");
}

TEST(NnErrors, MismatchedChannels) {
  Tensor x = iota({1, 3, 3, 3});
  Tensor w = floats({1, 2, 1, 1}, {1, 1});
  expect_node_error(make_node("Conv"), {&x, &w}, "input channels");
}

TEST(NnErrors, KernelLargerThanInput) {
  Tensor x = iota({1, 1, 2, 2});
  expect_node_error(make_node("MaxPool", {{"kernel_shape", ints_attr({3, 3})}}), {&x}, "larger than the padded input");
}

TEST(NnErrors, WrongPadsLength) {
  Tensor x = iota({1, 1, 3, 3});
  Tensor w = floats({1, 1, 1, 1}, {1});
  expect_node_error(make_node("Conv", {{"pads", ints_attr({1, 1})}}), {&x, &w}, "pads");
}

TEST(NnErrors, ResizeWithoutScalesOrSizes) {
  Tensor x = iota({1, 1, 2, 2});
  expect_node_error(make_node("Resize"), {&x}, "scales");
}

TEST(NnErrors, TopKLargerThanAxis) {
  Tensor x = floats({2}, {1, 2});
  Tensor k = ints({1}, {3});
  expect_node_error(make_node("TopK", {}, 2), {&x, &k}, "exceeds");
}

}  // namespace
}  // namespace fb

namespace fb {
namespace {

// A [..., M, K] input with 2-D weights runs as one [rows, K] x [K, N] product; batched
// weights keep the batched product. Both against a naive sum with a bias, in float32
// (exact to rounding: 1e-5 relative).
TEST(MatMulKernel, CollapsedAndBatchedProductsMatchANaiveSum) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{2, 3, 5, 7}, {7, 4}}, Case{{1, 7, 7, 6}, {6, 9}}, Case{{2, 5, 7}, {2, 7, 4}}, Case{{3, 7}, {7, 4}}}) {
    SCOPED_TRACE(shape_str(c.a) + " x " + shape_str(c.b));
    const int64_t k = c.a.back(), n = c.b.back(), rows = shape_numel(c.a) / k;
    const bool batched = c.b.size() > 2;
    std::vector<float> a(static_cast<size_t>(shape_numel(c.a))), b(static_cast<size_t>(shape_numel(c.b))), bias(static_cast<size_t>(n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 11) - 5) * 0.25f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 7) - 3) * 0.5f;
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(i) * 0.125f;
    MatMulSpec spec{c.a, c.b};
    spec.has_bias = true;
    spec.constant_b = !batched;
    MatMulKernel kernel(spec);
    std::vector<float> out(size_t(rows * n));
    kernel.run(a.data(), b.data(), bias.data(), out.data());
    const int64_t m = c.a[c.a.size() - 2];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        const float* bb = b.data() + (batched ? (r / m) * k * n : 0);
        double want = 0;
        for (int64_t i = 0; i < k; ++i) want += double(a[size_t(r * k + i)]) * double(bb[i * n + j]);
        want += bias[size_t(j)];
        EXPECT_NEAR(out[size_t(r * n + j)], want, 1e-5 * std::max(1.0, std::fabs(want))) << r << "," << j;
      }
  }
}

// NonMaxSuppression as the ONNX definition states it: per batch and class, candidates above
// the score threshold by descending score (ties: lower index first), each kept unless its
// IoU with a box kept before it exceeds the threshold.
std::vector<int64_t> greedy_nms(const Tensor& boxes, const Tensor& scores, int64_t max_out, float iou_threshold,
                                float score_threshold, bool center) {
  const int64_t batches = boxes.shape()[0], nb = boxes.shape()[1], classes = scores.shape()[1];
  auto corners = [&](int64_t b, int64_t i) {
    const float* p = boxes.data<float>() + (b * nb + i) * 4;
    if (center) return std::array<float, 4>{p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    return std::array<float, 4>{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
  };
  auto iou = [](const std::array<float, 4>& a, const std::array<float, 4>& b) {
    const float ih = std::min(a[2], b[2]) - std::max(a[0], b[0]), iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    if (ih <= 0 || iw <= 0) return 0.f;
    const float inter = ih * iw, uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return uni > 0 ? inter / uni : 0.f;
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t k = 0; k < classes; ++k) {
      const float* sc = scores.data<float>() + (b * classes + k) * nb;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < nb; ++i)
        if (sc[i] > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= max_out) break;
        bool keep = true;
        for (int64_t j : kept) keep = keep && !(iou(corners(b, i), corners(b, j)) > iou_threshold);
        if (keep) kept.push_back(i), out.insert(out.end(), {b, k, i});
      }
    }
  return out;
}

// The kernel checks each candidate against the kept boxes in vectorized blocks, or only
// against those an x1-sorted window says can overlap it (torchvision's batched NMS, which
// offsets each class's boxes apart); either way it must select exactly what the definition
// does, ties, degenerate and NaN boxes included.
TEST(NonMaxSuppression, SelectsWhatTheGreedyDefinitionSelects) {
  struct Case {
    const char* what;
    int64_t batches, classes, boxes;
    float iou, score;
    int64_t max_out;
    bool center;
    float class_offset;  // > 0: box i is moved by (i % 25) * offset, torchvision's batched NMS
    float spread;        // box centres lie in [0, spread)
  };
  const std::vector<Case> cases = {
      {"batched offsets, one class", 1, 1, 3000, 0.5f, -1.f, 1 << 30, false, 400.f, 300.f},
      {"one crowded class", 1, 1, 1500, 0.45f, -1.f, 1 << 30, false, 0.f, 60.f},
      {"classes, score threshold, max_out", 2, 4, 700, 0.6f, 0.3f, 40, false, 0.f, 200.f},
      {"centre boxes", 1, 2, 900, 0.5f, -1.f, 1 << 30, true, 0.f, 150.f},
      {"threshold 0: any overlap suppresses", 1, 1, 800, 0.f, -1.f, 1 << 30, false, 0.f, 500.f},
      {"negative threshold: every later box suppressed", 1, 1, 300, -0.1f, -1.f, 1 << 30, false, 0.f, 100.f},
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (const Case& c : cases) {
    Tensor boxes(DType::Float32, {c.batches, c.boxes, 4}), scores(DType::Float32, {c.batches, c.classes, c.boxes});
    for (int64_t b = 0; b < c.batches; ++b)
      for (int64_t i = 0; i < c.boxes; ++i) {
        float* p = boxes.data<float>() + (b * c.boxes + i) * 4;
        const float cy = unit(rng) * c.spread, cx = unit(rng) * c.spread, h = 4 + unit(rng) * 40, w = 4 + unit(rng) * 40;
        const float shift = float(i % 25) * c.class_offset;
        if (c.center) p[0] = cx, p[1] = cy, p[2] = w, p[3] = h;
        else p[0] = cy - h / 2 + shift, p[1] = cx - w / 2 + shift, p[2] = cy + h / 2 + shift, p[3] = cx + w / 2 + shift;
        if (i % 97 == 5) p[2] = p[0];  // zero-area boxes
        if (i % 89 == 3) std::swap(p[0], p[2]);  // corners given in either order
      }
    for (int64_t i = 0; i < scores.numel(); ++i) scores.data<float>()[i] = std::round(unit(rng) * 50) / 50;  // ties
    const Tensor max_out = ints({1}, {c.max_out}), iou = floats({1}, {c.iou}), score = floats({1}, {c.score});
    const Node n = make_node("NonMaxSuppression", {{"center_point_box", int_attr(c.center ? 1 : 0)}});
    const std::vector<int64_t> got = run(n, {&boxes, &scores, &max_out, &iou, &score})[0].as_int64_vector();
    const std::vector<int64_t> want = greedy_nms(boxes, scores, c.max_out, c.iou, c.score, c.center);
    EXPECT_EQ(want.size() == 3, c.iou < 0) << c.what;  // a negative threshold keeps one box, the others many
    EXPECT_EQ(got, want) << c.what;
    // A NaN coordinate: no box overlaps it, and the windowed search must not be misled.
    boxes.data<float>()[4 * 17 + 1] = NAN;
    EXPECT_EQ(run(n, {&boxes, &scores, &max_out, &iou, &score})[0].as_int64_vector(),
              greedy_nms(boxes, scores, c.max_out, c.iou, c.score, c.center))
        << c.what << ", with a NaN";
  }
}

// RoiAlign as the ONNX reference defines it, one output element at a time: the bin's
// sampling grid, each sample bilinear over its four neighbours (clamped at the far edge,
// 0 outside [-1, size]), averaged, or for max the largest weighted neighbour.
float roi_align_element(const Tensor& x, const float* roi, int64_t b, int64_t k, int64_t ph, int64_t pw, int64_t oh, int64_t ow,
                        int64_t ratio, bool half_pixel, bool is_max) {
  const int64_t C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const float* plane = x.data<float>() + (b * C + k) * H * W;
  const float off = half_pixel ? 0.5f : 0.f, scale = 0.5f;
  const float x1 = roi[0] * scale - off, y1 = roi[1] * scale - off;
  float rw = roi[2] * scale - off - x1, rh = roi[3] * scale - off - y1;
  if (!half_pixel) rw = std::max(rw, 1.f), rh = std::max(rh, 1.f);
  const float bh = rh / float(oh), bw = rw / float(ow);
  const int64_t gh = ratio ? ratio : int64_t(std::ceil(rh / float(oh))), gw = ratio ? ratio : int64_t(std::ceil(rw / float(ow)));
  std::vector<float> values;
  for (int64_t iy = 0; iy < gh; ++iy)
    for (int64_t ix = 0; ix < gw; ++ix) {
      float y = y1 + float(ph) * bh + (float(iy) + 0.5f) * bh / float(gh);
      float xx = x1 + float(pw) * bw + (float(ix) + 0.5f) * bw / float(gw);
      if (y < -1.f || y > float(H) || xx < -1.f || xx > float(W)) {
        values.push_back(0.f);
        continue;
      }
      y = std::max(y, 0.f), xx = std::max(xx, 0.f);
      int64_t y0 = std::min(int64_t(y), H - 1), x0 = std::min(int64_t(xx), W - 1);
      if (y0 == H - 1) y = float(y0);
      if (x0 == W - 1) xx = float(x0);
      const int64_t yb = std::min(y0 + 1, H - 1), xb = std::min(x0 + 1, W - 1);
      const float ly = y - float(y0), lx = xx - float(x0);
      const float corner[4] = {(1 - ly) * (1 - lx) * plane[y0 * W + x0], (1 - ly) * lx * plane[y0 * W + xb],
                               ly * (1 - lx) * plane[yb * W + x0], ly * lx * plane[yb * W + xb]};
      values.push_back(is_max ? *std::max_element(corner, corner + 4) : corner[0] + corner[1] + corner[2] + corner[3]);
    }
  if (values.empty()) return 0.f;
  if (is_max) return *std::max_element(values.begin(), values.end());
  float sum = 0;
  for (float v : values) sum += v;
  return sum / float(values.size());
}

// The kernel computes each bin's samples once per row of bins and runs the channels from
// that table (in parallel); every element must still be the definition's.
// Every element of RoiAlign's output in both modes, both transforms and two sampling
// ratios, against the definition.
void expect_roi_align_is_the_definition(const Tensor& x, const Tensor& rois, const Tensor& batch, int64_t oh, int64_t ow) {
  const int64_t n_rois = rois.shape()[0], ch = x.shape()[1];
  for (const char* mode : {"avg", "max"})
    for (const char* transform : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 2}) {
        const Node n = make_node("RoiAlign", {{"mode", str_attr(mode)}, {"coordinate_transformation_mode", str_attr(transform)},
                                              {"output_height", int_attr(oh)}, {"output_width", int_attr(ow)},
                                              {"sampling_ratio", int_attr(ratio)}, {"spatial_scale", float_attr(0.5f)}});
        const Tensor got = run(n, {&x, &rois, &batch})[0];
        ASSERT_EQ(got.shape(), (Shape{n_rois, ch, oh, ow}));
        for (int64_t r = 0; r < n_rois; ++r)
          for (int64_t k = 0; k < ch; ++k)
            for (int64_t ph = 0; ph < oh; ++ph)
              for (int64_t pw = 0; pw < ow; ++pw) {
                const float want = roi_align_element(x, rois.data<float>() + r * 4, batch.data<int64_t>()[r], k, ph, pw, oh, ow, ratio,
                                                     std::string(transform) == "half_pixel", std::string(mode) == "max");
                ASSERT_NEAR(got.data<float>()[((r * ch + k) * oh + ph) * ow + pw], want, 1e-6f)
                    << mode << " " << transform << " ratio " << ratio << " roi " << r << " channel " << k << " bin " << ph << "," << pw;
              }
      }
}

Tensor random_input(Shape shape, unsigned seed) {
  Tensor x(DType::Float32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = unit(rng);
  return x;
}

TEST(RoiAlign, EveryElementIsTheDefinitions) {
  // Many samples against the input (a detector's case, read channels-last): x1, y1, x2, y2
  // at twice the input's scale (spatial_scale 0.5): inside, over the edges, smaller than a
  // bin, wider than the input, and reversed.
  expect_roi_align_is_the_definition(
      random_input({2, 3, 10, 12}, 3), floats({6, 4}, {2, 2, 14, 10, -6, -4, 8, 30, 5, 5, 5.5f, 6, 0, 0, 24, 20, -10, 8, 40, 12, 16, 12, 4, 2}),
      ints({6}, {0, 1, 1, 0, 1, 0}), 3, 4);
  // Few samples against the input (read plane by plane): two small rois on a larger map,
  // one over its edge.
  expect_roi_align_is_the_definition(random_input({2, 3, 40, 48}, 4), floats({2, 4}, {10, 20, 14, 23, 90, -3, 97, 4}), ints({2}, {1, 0}),
                                     2, 2);
}

TEST(RoiAlign, EmptyPlanesAreAnErrorNamingTheNode) {
  const Node n = make_node("RoiAlign", {{"output_height", int_attr(2)}, {"output_width", int_attr(2)}});
  const Tensor x(DType::Float32, {1, 3, 0, 5}), rois = floats({1, 4}, {0, 0, 2, 2}), batch = ints({1}, {0});
  try {
    run(n, {&x, &rois, &batch});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(n.name), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("empty planes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fb
