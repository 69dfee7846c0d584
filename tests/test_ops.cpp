// Op kernels against small results computed by hand: the spine ops (broadcasting
// arithmetic, matrix products, Softmax, reductions, data movement) and the full-ONNX
// families (logic, activations, casts, tensor, gather/scatter, data-dependent ops, If and
// Loop), plus the errors bad inputs must raise: an fb::Error that names the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/ir/graph.h"
#include "engine/ops/bound_kernels.h"
#include "engine/ops/half_float.h"
#include "engine/ops/op_registry.h"
#include "tensor_test_support.h"

namespace fb {
namespace {

using test::make;
using test::values;

Tensor make_bool(Shape shape, std::vector<int> values) {
  Tensor t(DType::Bool, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i] != 0;
  return t;
}

Node node(const std::string& op, size_t n_inputs, std::map<std::string, Attribute> attrs = {}, size_t n_outputs = 1) {
  Node n;
  n.name = "test_" + op;
  n.op_type = op;
  n.opset = 17;
  for (size_t i = 0; i < n_inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  for (size_t i = 0; i < n_outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  n.attrs = std::move(attrs);
  return n;
}

// MatMul and Gemm compute on the CPU backend's kernels, bound as the reference executor binds them.
std::vector<Tensor> run(const Node& n, const std::vector<const Tensor*>& ins) {
  bind_host_kernels();
  return evaluate_node(n, ins);
}


void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(t.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], tol) << "element " << i;
}

// Runs and expects an fb::Error whose message names the node.
void expect_node_error(const Node& n, const std::vector<const Tensor*>& ins) {
  try {
    run(n, ins);
    FAIL() << "expected an error from " << n.describe();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(n.name), std::string::npos) << e.what();
  }
}

// ---- spine ops -------------------------------------------------------------------------------

TEST(SpineOps, AddBroadcastsRowAndColumn) {
  Tensor a = make<float>({2, 1}, {1, 2});
  Tensor b = make<float>({3}, {10, 20, 30});
  auto out = run(node("Add", 2), {&a, &b});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_near(out[0], {11, 21, 31, 12, 22, 32});
}

TEST(SpineOps, MatMul) {
  Tensor a = make<float>({2, 2}, {1, 2, 3, 4});
  Tensor b = make<float>({2, 2}, {5, 6, 7, 8});
  expect_near(run(node("MatMul", 2), {&a, &b})[0], {19, 22, 43, 50});
}

TEST(SpineOps, GemmTransB) {
  Tensor a = make<float>({1, 2}, {1, 2});
  Tensor b = make<float>({3, 2}, {1, 0, 0, 1, 1, 1});  // B^T is [2,3]
  Tensor c = make<float>({3}, {100, 200, 300});
  auto out = run(node("Gemm", 3, {{"transB", Attribute{int64_t(1)}}}), {&a, &b, &c});
  EXPECT_EQ(out[0].shape(), (Shape{1, 3}));
  expect_near(out[0], {101, 202, 303});
}

// Which ops are matrix products, convolutions or attention (the forms with weights at input 1
// and int8 kernels) is a fact of each op's row, read by precision lowering and the CPU backend.
TEST(OpTable, WeightedFormsAreRowsOfTheTable) {
  auto def = [](const char* domain, const char* op) {
    Node n;
    n.domain = domain;
    n.op_type = op;
    return op_for(n);
  };
  for (const char* op : {"MatMul", "Gemm"}) EXPECT_EQ(def("", op).weighted, WeightedForm::kMatMul) << op;
  EXPECT_EQ(def("fusebench", "FusedMatMul").weighted, WeightedForm::kMatMul);
  EXPECT_EQ(def("", "Conv").weighted, WeightedForm::kConv);
  EXPECT_EQ(def("fusebench", "FusedConv").weighted, WeightedForm::kConv);
  EXPECT_EQ(def("fusebench", "Attention").weighted, WeightedForm::kAttention);
  for (const char* op : {"ConvTranspose", "Relu", "Softmax", "LayerNormalization"})
    EXPECT_EQ(def("", op).weighted, WeightedForm::kNone) << op;
  EXPECT_TRUE(is_weight_input(def("", "MatMul"), 1));
  EXPECT_TRUE(is_weight_input(def("fusebench", "FusedConv"), 1));
  EXPECT_FALSE(is_weight_input(def("", "MatMul"), 0));
  EXPECT_FALSE(is_weight_input(def("fusebench", "Attention"), 1));  // k: an activation, not weights
  // The CPU backend's int8 kernels are exactly the weighted forms.
  const auto cpu = backend_named("cpu");
  for (const auto& [domain, op] : std::vector<std::pair<const char*, const char*>>{
           {"", "MatMul"}, {"", "Conv"}, {"fusebench", "Attention"}, {"", "ConvTranspose"}, {"", "Relu"}}) {
    Node n;
    n.domain = domain;
    n.op_type = op;
    EXPECT_EQ(cpu->supports(n, op_for(n), Precision::INT8), op_for(n).weighted != WeightedForm::kNone) << op;
  }
}

// A row whose kernel a backend binds, run with none bound: the error names the node and the op.
TEST(BoundKernels, AnUnboundKernelIsAnErrorNamingTheNodeAndTheOp) {
  OpDef def;
  def.domain = "example";
  def.op_type = "NeverBound";
  def.infer = [](const ShapeContext& c) { return std::vector<ValueInfo>{c.in(0)}; };
  def.compute = compute_with_bound_kernel;
  OpRegistry ops;
  ops.add(def);
  Node n = node("NeverBound", 1);
  n.domain = "example";
  Tensor x = make<float>({2}, {1, 2});
  try {
    evaluate_node(n, {&x}, ops);
    FAIL() << "expected an fb::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(n.describe()), std::string::npos) << msg;
    EXPECT_NE(msg.find("no kernel is bound for op 'example.NeverBound'"), std::string::npos) << msg;
  }
}

TEST(SpineOps, SoftmaxLastAxis) {
  Tensor x = make<float>({1, 2}, {0, std::log(3.f)});
  expect_near(run(node("Softmax", 1), {&x})[0], {0.25f, 0.75f});
}

TEST(SpineOps, SoftmaxOverAnInnerAxisZeroesAMaskedTermExactly) {
  // axis 0 of [3, 2]: each column is a strided run. A -1e4 (masked) term is exactly 0, not
  // a denormal (e^-10000 underflows; e^-100 would be one).
  Tensor x = make<float>({3, 2}, {0, -100.f, std::log(3.f), 0, -1e4f, 0});
  auto out = run(node("Softmax", 13, {{"axis", Attribute{int64_t(0)}}}), {&x});
  expect_near(out[0], {0.25f, 0.f, 0.75f, 0.5f, 0.f, 0.5f});
  EXPECT_EQ(out[0].data<float>()[1], 0.f);  // e^-100 relative to e^0: below e^-69, flushed
  EXPECT_EQ(out[0].data<float>()[4], 0.f);
}

TEST(SpineOps, ReduceMeanKeepdims) {
  Tensor x = make<float>({2, 2}, {1, 2, 3, 4});
  auto out = run(node("ReduceMean", 1, {{"axes", Attribute{std::vector<int64_t>{1}}}}), {&x});
  EXPECT_EQ(out[0].shape(), (Shape{2, 1}));
  expect_near(out[0], {1.5f, 3.5f});
}

TEST(SpineOps, TransposeDefaultReversesAxes) {
  Tensor x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = run(node("Transpose", 1), {&x});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  expect_near(out[0], {1, 4, 2, 5, 3, 6});
}

TEST(SpineOps, ReshapeZeroCopiesAndMinusOneInfers) {
  Tensor x(DType::Float32, {2, 3, 4});
  Tensor shape = make<int64_t>({2}, {0, -1});
  EXPECT_EQ(run(node("Reshape", 2), {&x, &shape})[0].shape(), (Shape{2, 12}));
}

TEST(SpineOps, ErfSqrtPowDiv) {
  Tensor x = make<float>({2}, {0.f, 1.f});
  expect_near(run(node("Erf", 1), {&x})[0], {0.f, 0.8427008f});
  Tensor s = make<float>({2}, {4.f, 9.f});
  expect_near(run(node("Sqrt", 1), {&s})[0], {2.f, 3.f});
  Tensor e = make<float>({1}, {3.f});
  expect_near(run(node("Pow", 2), {&s, &e})[0], {64.f, 729.f});
  Tensor d = make<float>({1}, {2.f});
  expect_near(run(node("Div", 2), {&s, &d})[0], {2.f, 4.5f});
}

TEST(SpineOps, PowWithIntegerExponent) {
  Tensor x = make<float>({2}, {2.f, 3.f});
  Tensor e = make<int64_t>({2}, {3, 2});
  expect_near(run(node("Pow", 2), {&x, &e})[0], {8.f, 9.f});
}

TEST(SpineOps, IntegerDivisionByZeroIsAnError) {
  Tensor a = make<int32_t>({2}, {4, 5});
  Tensor b = make<int32_t>({2}, {2, 0});
  expect_node_error(node("Div", 2), {&a, &b});
}

TEST(SpineOps, BadBroadcastNamesTheNode) {
  Tensor a(DType::Float32, {2, 3});
  Tensor b(DType::Float32, {4});
  expect_node_error(node("Add", 2), {&a, &b});
}

// ---- elementwise, logic, activations -------------------------------------------------------------

TEST(LogicOps, WhereBroadcastsCondition) {
  Tensor c = make_bool({2, 1}, {1, 0});
  Tensor x = make<int64_t>({2}, {1, 2});
  Tensor y = make<int64_t>({2}, {-1, -2});
  EXPECT_EQ(values<int64_t>(run(node("Where", 3), {&c, &x, &y})[0]), (std::vector<int64_t>{1, 2, -1, -2}));
}

TEST(LogicOps, ComparisonsAndBooleans) {
  Tensor a = make<int32_t>({3}, {1, 2, 3});
  Tensor b = make<int32_t>({1}, {2});
  EXPECT_EQ(values<bool>(run(node("Less", 2), {&a, &b})[0]), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(values<bool>(run(node("GreaterOrEqual", 2), {&a, &b})[0]), (std::vector<bool>{false, true, true}));
  Tensor p = make_bool({2}, {1, 0}), q = make_bool({2}, {1, 1});
  EXPECT_EQ(values<bool>(run(node("Xor", 2), {&p, &q})[0]), (std::vector<bool>{false, true}));
  EXPECT_EQ(values<bool>(run(node("Not", 1), {&p})[0]), (std::vector<bool>{false, true}));
}

TEST(LogicOps, BitShiftPastWidthIsZero) {
  Tensor x = make<uint8_t>({2}, {1, 255});
  Tensor s = make<uint8_t>({2}, {3, 8});
  auto out = run(node("BitShift", 2, {{"direction", Attribute{std::string("LEFT")}}}), {&x, &s});
  EXPECT_EQ(values<uint8_t>(out[0]), (std::vector<uint8_t>{8, 0}));
}

TEST(ElementwiseOps, RoundHalfToEvenAndSign) {
  Tensor x = make<float>({4}, {0.5f, 1.5f, 2.5f, -0.5f});
  expect_near(run(node("Round", 1), {&x})[0], {0.f, 2.f, 2.f, -0.f});
  expect_near(run(node("Sign", 1), {&x})[0], {1.f, 1.f, 1.f, -1.f});
}

TEST(ElementwiseOps, DoubleAndIntegerPaths) {
  Tensor d = make<double>({2}, {0.0, 1.0});
  auto out = run(node("Exp", 1), {&d});
  EXPECT_NEAR(out[0].data<double>()[1], M_E, 1e-12);
  Tensor i = make<int64_t>({2}, {-3, 4});
  EXPECT_EQ(values<int64_t>(run(node("Abs", 1), {&i})[0]), (std::vector<int64_t>{3, 4}));
}

TEST(ElementwiseOps, VariadicSumMeanMax) {
  Tensor a = make<float>({2}, {1, 2}), b = make<float>({1}, {3}), c = make<float>({2}, {5, -4});
  expect_near(run(node("Sum", 3), {&a, &b, &c})[0], {9, 1});
  expect_near(run(node("Mean", 3), {&a, &b, &c})[0], {3, 1.f / 3});
  expect_near(run(node("Max", 3), {&a, &b, &c})[0], {5, 3});
  expect_near(run(node("Min", 1), {&a})[0], {1, 2});
}

TEST(ElementwiseOps, ModFollowsTheDivisorSignUnlessFmod) {
  Tensor a = make<int32_t>({2}, {-7, 7});
  Tensor b = make<int32_t>({1}, {3});
  EXPECT_EQ(values<int32_t>(run(node("Mod", 2), {&a, &b})[0]), (std::vector<int32_t>{2, 1}));
  Tensor fa = make<float>({1}, {-7.f}), fb_ = make<float>({1}, {3.f});
  expect_near(run(node("Mod", 2, {{"fmod", Attribute{int64_t(1)}}}), {&fa, &fb_})[0], {-1.f});
}

TEST(ActivationOps, ClipLeakyReluPRelu) {
  Tensor x = make<float>({3}, {-2.f, 0.5f, 3.f});
  Tensor lo = make<float>({}, {-1.f}), hi = make<float>({}, {1.f});
  expect_near(run(node("Clip", 3), {&x, &lo, &hi})[0], {-1.f, 0.5f, 1.f});
  expect_near(run(node("Clip", 3), {&x, nullptr, &hi})[0], {-2.f, 0.5f, 1.f});
  expect_near(run(node("LeakyRelu", 1, {{"alpha", Attribute{0.1f}}}), {&x})[0], {-0.2f, 0.5f, 3.f});
  Tensor slope = make<float>({1}, {0.25f});
  expect_near(run(node("PRelu", 2), {&x, &slope})[0], {-0.5f, 0.5f, 3.f});
}

TEST(CastOps, Float16RoundTripAndBool) {
  Tensor x = make<float>({3}, {1.f, 0.1f, 65504.f});
  Node to_half = node("Cast", 1, {{"to", Attribute{int64_t(DType::Float16)}}});
  Tensor h = run(to_half, {&x})[0];
  EXPECT_EQ(h.dtype(), DType::Float16);
  const auto* bits = static_cast<const uint16_t*>(h.raw());
  EXPECT_EQ(bits[0], 0x3c00);
  EXPECT_EQ(bits[2], 0x7bff);
  EXPECT_NEAR(half_to_float(bits[1]), 0.1f, 1e-4f);
  Tensor b = run(node("Cast", 1, {{"to", Attribute{int64_t(DType::Bool)}}}), {&x})[0];
  EXPECT_EQ(values<bool>(b), (std::vector<bool>{true, true, true}));
}

// ---- reductions --------------------------------------------------------------------------------

TEST(ReduceOps, LogSumExpAndArgMaxLastIndex) {
  Tensor x = make<float>({2, 2}, {0.f, 0.f, 1.f, 1.f});
  auto lse = run(node("ReduceLogSumExp", 1, {{"axes", Attribute{std::vector<int64_t>{-1}}}, {"keepdims", Attribute{int64_t(0)}}}), {&x});
  expect_near(lse[0], {std::log(2.f), 1.f + std::log(2.f)});
  auto am = run(node("ArgMax", 1, {{"axis", Attribute{int64_t(1)}}, {"select_last_index", Attribute{int64_t(1)}}}), {&x});
  EXPECT_EQ(values<int64_t>(am[0]), (std::vector<int64_t>{1, 1}));
}

TEST(ReduceOps, SumWithEmptyAxesAndNoop) {
  Tensor x = make<float>({2}, {1.f, 2.f});
  Tensor empty(DType::Int64, {0});
  expect_near(run(node("ReduceSum", 2), {&x, &empty})[0], {3.f});
  expect_near(run(node("ReduceSum", 2, {{"noop_with_empty_axes", Attribute{int64_t(1)}}}), {&x, &empty})[0], {1.f, 2.f});
}

// ---- tensor ops --------------------------------------------------------------------------------

TEST(TensorOps, SplitBySizesInput) {
  Tensor x = make<int32_t>({5}, {1, 2, 3, 4, 5});
  Tensor sizes = make<int64_t>({2}, {2, 3});
  auto out = run(node("Split", 2, {}, 2), {&x, &sizes});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(values<int32_t>(out[1]), (std::vector<int32_t>{3, 4, 5}));
}

TEST(TensorOps, ExpandTileTrilu) {
  Tensor x = make<float>({2, 1}, {1, 2});
  Tensor shape = make<int64_t>({2}, {1, 3});
  expect_near(run(node("Expand", 2), {&x, &shape})[0], {1, 1, 1, 2, 2, 2});
  Tensor reps = make<int64_t>({2}, {1, 2});
  expect_near(run(node("Tile", 2), {&x, &reps})[0], {1, 1, 2, 2});
  Tensor m = make<float>({2, 2}, {1, 2, 3, 4});
  expect_near(run(node("Trilu", 1, {{"upper", Attribute{int64_t(0)}}}), {&m})[0], {1, 0, 3, 4});
}

TEST(TensorOps, RangeOneHotConstantOfShape) {
  Tensor s = make<int32_t>({}, {10}), l = make<int32_t>({}, {4}), d = make<int32_t>({}, {-3});
  EXPECT_EQ(values<int32_t>(run(node("Range", 3), {&s, &l, &d})[0]), (std::vector<int32_t>{10, 7}));
  Tensor idx = make<int64_t>({2}, {0, -1});
  Tensor depth = make<int64_t>({}, {3});
  Tensor onoff = make<float>({2}, {0.f, 5.f});
  auto oh = run(node("OneHot", 3), {&idx, &depth, &onoff});
  EXPECT_EQ(oh[0].shape(), (Shape{2, 3}));
  expect_near(oh[0], {5, 0, 0, 0, 0, 5});
  Tensor shape = make<int64_t>({2}, {1, 2});
  auto cs = run(node("ConstantOfShape", 1), {&shape});
  EXPECT_EQ(cs[0].shape(), (Shape{1, 2}));
  expect_near(cs[0], {0, 0});
}

TEST(GatherScatterOps, GatherElementsAndND) {
  Tensor x = make<float>({2, 2}, {1, 2, 3, 4});
  Tensor idx = make<int64_t>({2, 2}, {0, 0, 1, 0});
  expect_near(run(node("GatherElements", 2, {{"axis", Attribute{int64_t(1)}}}), {&x, &idx})[0], {1, 1, 4, 3});
  Tensor nd = make<int64_t>({2, 2}, {0, 1, 1, 0});
  expect_near(run(node("GatherND", 2), {&x, &nd})[0], {2, 3});
}

// Indices smaller than the data in every dimension, along each axis, with negative and
// repeated indices: GatherElements and ScatterElements (none and add) against loops that
// index the data by coordinates.
TEST(GatherScatterOps, ElementsAlongEveryAxisOfA3DTensor) {
  const Shape xs{2, 3, 4}, is{2, 2, 3};
  std::vector<float> xv(24);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(i) * 1.5f - 7.f;
  Tensor x = make<float>(xs, xv);
  for (int64_t axis = 0; axis < 3; ++axis) {
    std::vector<int64_t> iv(12);
    for (size_t i = 0; i < iv.size(); ++i) iv[i] = int64_t((i * 7 + 3) % size_t(xs[axis])) - (i % 5 == 0 ? xs[axis] : 0);
    Tensor idx = make<int64_t>(is, iv);
    std::vector<float> uv(12);
    for (size_t i = 0; i < uv.size(); ++i) uv[i] = 100.f + float(i);
    Tensor upd = make<float>(is, uv);
    std::vector<float> gathered(12), scattered = xv, added = xv;
    for (int64_t a = 0; a < is[0]; ++a)
      for (int64_t b = 0; b < is[1]; ++b)
        for (int64_t c = 0; c < is[2]; ++c) {
          const size_t i = size_t((a * is[1] + b) * is[2] + c);
          int64_t at[3] = {a, b, c};
          at[axis] = iv[i] < 0 ? iv[i] + xs[axis] : iv[i];
          const size_t o = size_t((at[0] * xs[1] + at[1]) * xs[2] + at[2]);
          gathered[i] = xv[o];
          scattered[o] = uv[i];  // a repeated index: the last update wins, as ONNX's reference
          added[o] += uv[i];
        }
    const std::map<std::string, Attribute> along{{"axis", Attribute{axis}}};
    expect_near(run(node("GatherElements", 2, along), {&x, &idx})[0], gathered);
    expect_near(run(node("ScatterElements", 3, along), {&x, &idx, &upd})[0], scattered);
    std::map<std::string, Attribute> add = along;
    add["reduction"] = Attribute{std::string("add")};
    expect_near(run(node("ScatterElements", 3, add), {&x, &idx, &upd})[0], added, 1e-4f);
  }
}

// Reshape-like ops share an owning input's bytes (as PyTorch's views) and copy a view's,
// whose memory (the engine's arena) may be reused after the node ran.
TEST(ShapeOps, ReshapeSharesOwnedBytesAndCopiesViews) {
  Tensor x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Node flatten = node("Flatten", 1, {{"axis", Attribute{int64_t(0)}}});
  const Tensor shared = run(flatten, {&x})[0];
  EXPECT_EQ(shared.shape(), (Shape{1, 6}));
  EXPECT_EQ(shared.raw(), x.raw());
  Tensor view = Tensor::view(DType::Float32, {2, 3}, x.raw());
  const Tensor copied = run(flatten, {&view})[0];
  EXPECT_NE(copied.raw(), x.raw());
  expect_near(copied, {1, 2, 3, 4, 5, 6});
  Tensor axes = make<int64_t>({1}, {0});
  const Tensor unsqueezed = run(node("Unsqueeze", 2), {&x, &axes})[0];
  EXPECT_EQ(unsqueezed.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(unsqueezed.raw(), x.raw());
}

TEST(GatherScatterOps, ScatterNDAdd) {
  Tensor x = make<float>({4}, {1, 2, 3, 4});
  Tensor idx = make<int64_t>({2, 1}, {1, 1});
  Tensor upd = make<float>({2}, {10, 20});
  expect_near(run(node("ScatterND", 3, {{"reduction", Attribute{std::string("add")}}}), {&x, &idx, &upd})[0], {1, 32, 3, 4});
}

TEST(GatherScatterOps, OutOfRangeIndexNamesTheNode) {
  Tensor x = make<float>({3}, {1, 2, 3});
  Tensor bad = make<int64_t>({1}, {3});
  expect_node_error(node("Gather", 2), {&x, &bad});
  expect_node_error(node("GatherElements", 2), {&x, &bad});
  Tensor bad_nd = make<int64_t>({1, 1}, {-4});
  expect_node_error(node("GatherND", 2), {&x, &bad_nd});
  // Indices longer than the data outside the axis would reach past its rows.
  Tensor x2 = make<float>({2, 2}, {1, 2, 3, 4});
  Tensor wide = make<int64_t>({1, 3}, {0, 0, 0});
  Tensor upd = make<float>({1, 3}, {7, 8, 9});
  expect_node_error(node("GatherElements", 2), {&x2, &wide});
  expect_node_error(node("ScatterElements", 3), {&x2, &wide, &upd});
}

TEST(SelectionOps, NonZeroAndUnique) {
  Tensor x = make<int32_t>({2, 2}, {0, 5, 7, 0});
  auto nz = run(node("NonZero", 1), {&x});
  EXPECT_EQ(nz[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int64_t>(nz[0]), (std::vector<int64_t>{0, 1, 1, 0}));
  Tensor u = make<float>({5}, {2, 1, 2, 3, 1});
  auto out = run(node("Unique", 1, {}, 4), {&u});
  expect_near(out[0], {1, 2, 3});
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{1, 0, 3}));
  EXPECT_EQ(values<int64_t>(out[2]), (std::vector<int64_t>{1, 0, 1, 2, 0}));
  EXPECT_EQ(values<int64_t>(out[3]), (std::vector<int64_t>{2, 2, 1}));
}

// ---- control flow ------------------------------------------------------------------------------

// A one-node subgraph: out = op(a, b), with `a` and `b` read from wherever they are defined.
std::shared_ptr<const Graph> one_node_graph(const std::string& op, const std::string& a, const std::string& b,
                                            std::vector<GraphInput> inputs, std::vector<std::string> outputs) {
  auto g = std::make_shared<Graph>();
  g->opset = 17;
  g->inputs = std::move(inputs);
  Node n;
  n.name = "body_" + op;
  n.op_type = op;
  n.opset = 17;
  n.inputs = {a, b};
  n.outputs = {"r"};
  g->nodes.push_back(n);
  g->outputs = std::move(outputs);
  for (const std::string& o : g->outputs) g->values[o] = ValueInfo{DType::Float32, {}, false};
  return g;
}

TEST(ControlFlowOps, IfRunsTheChosenBranchWithOuterValues) {
  Node n = node("If", 1);
  n.attrs["then_branch"] = Attribute{one_node_graph("Add", "x", "y", {}, {"r"})};
  n.attrs["else_branch"] = Attribute{one_node_graph("Sub", "x", "y", {}, {"r"})};
  n.inputs = {"cond", "x", "y"};  // the importer appends the captured outer values
  n.attrs["fusebench.captures"] = Attribute{std::vector<std::string>{"x", "y"}};
  Tensor x = make<float>({1}, {5}), y = make<float>({1}, {2});
  Tensor yes = make_bool({}, {1}), no = make_bool({}, {0});
  expect_near(run(n, {&yes, &x, &y})[0], {7});
  expect_near(run(n, {&no, &x, &y})[0], {3});
}

TEST(ControlFlowOps, LoopCarriesStateAndStacksScans) {
  // body(i, cond, acc) -> (cond, acc + step, acc + step): acc grows by `step` each trip.
  auto body = std::make_shared<Graph>();
  body->opset = 17;
  body->inputs = {GraphInput{"i", DType::Int64, {}, {}}, GraphInput{"c", DType::Bool, {}, {}},
                  GraphInput{"acc", DType::Float32, {}, {}}};
  Node add;
  add.name = "body_add";
  add.op_type = "Add";
  add.opset = 17;
  add.inputs = {"acc", "step"};
  add.outputs = {"next"};
  Node id;
  id.name = "body_cond";
  id.op_type = "Identity";
  id.opset = 17;
  id.inputs = {"c"};
  id.outputs = {"c_out"};
  body->nodes = {add, id};
  body->outputs = {"c_out", "next", "next"};
  body->values["c_out"] = ValueInfo{DType::Bool, {}, false};
  body->values["next"] = ValueInfo{DType::Float32, {}, false};
  Node n = node("Loop", 3, {}, 2);
  n.attrs["body"] = Attribute{std::shared_ptr<const Graph>(body)};
  n.inputs.push_back("step");
  n.attrs["fusebench.captures"] = Attribute{std::vector<std::string>{"step"}};
  Tensor trips = make<int64_t>({}, {3});
  Tensor init = make<float>({1}, {0});
  Tensor step = make<float>({1}, {2});
  auto out = run(n, {&trips, nullptr, &init, &step});
  expect_near(out[0], {6});
  EXPECT_EQ(out[1].shape(), (Shape{3, 1}));
  expect_near(out[1], {2, 4, 6});
}

// body(i, cond, acc) -> (cond, Concat(acc, base + i, axis 0)[, Shape(acc)]): torch.cat in a
// scripted loop. Without the Shape scan the loop appends rows instead of copying acc per trip.
Node appending_loop(bool also_read_acc) {
  auto body = std::make_shared<Graph>();
  body->opset = 17;
  body->inputs = {GraphInput{"i", DType::Int64, {}, {}}, GraphInput{"c", DType::Bool, {}, {}},
                  GraphInput{"acc", DType::Float32, {}, {}}};
  auto add_node = [&](const std::string& name, const std::string& op, std::vector<std::string> ins, std::string out) {
    Node n;
    n.name = name;
    n.op_type = op;
    n.opset = 17;
    n.inputs = std::move(ins);
    n.outputs = {std::move(out)};
    body->nodes.push_back(n);
    return &body->nodes.back();
  };
  add_node("body_cast", "Cast", {"i"}, "fi")->attrs["to"] = Attribute{int64_t(1)};
  add_node("body_add", "Add", {"base", "fi"}, "row");
  add_node("body_concat", "Concat", {"acc", "row"}, "acc_next")->attrs["axis"] = Attribute{int64_t(0)};
  add_node("body_cond", "Identity", {"c"}, "c_out");
  body->outputs = {"c_out", "acc_next"};
  if (also_read_acc) {
    add_node("body_shape", "Shape", {"acc"}, "acc_shape");
    body->outputs.push_back("acc_shape");
  }
  for (const char* v : {"c_out", "acc_next", "acc_shape"}) body->values[v] = ValueInfo{DType::Float32, {}, false};
  body->values["c_out"].dtype = DType::Bool;
  body->values["acc_shape"].dtype = DType::Int64;
  Node n = node("Loop", 3, {}, also_read_acc ? 2 : 1);
  n.attrs["body"] = Attribute{std::shared_ptr<const Graph>(body)};
  n.inputs.push_back("base");
  n.attrs["fusebench.captures"] = Attribute{std::vector<std::string>{"base"}};
  return n;
}

TEST(ControlFlowOps, LoopAppendingWithConcatGivesTheConcatenation) {
  Tensor trips = make<int64_t>({}, {3});
  Tensor init = make<float>({1, 2}, {-1, -2});
  Tensor base = make<float>({1, 2}, {10, 20});
  const std::vector<float> want{-1, -2, 10, 20, 11, 21, 12, 22};
  // Appended in place of the Concat (acc is read by nothing else)...
  auto appended = run(appending_loop(false), {&trips, nullptr, &init, &base});
  EXPECT_EQ(appended[0].shape(), (Shape{4, 2}));
  expect_near(appended[0], want);
  // ...and concatenated every trip (the Shape scan reads acc): the same value.
  auto copied = run(appending_loop(true), {&trips, nullptr, &init, &base});
  EXPECT_EQ(copied[0].shape(), (Shape{4, 2}));
  expect_near(copied[0], want);
  EXPECT_EQ(values<int64_t>(copied[1]), (std::vector<int64_t>{1, 2, 2, 2, 3, 2}));
  // An empty start ([0, 2], as torch.zeros(0, h, w)) and zero trips.
  Tensor empty(DType::Float32, {0, 2});
  auto from_empty = run(appending_loop(false), {&trips, nullptr, &empty, &base});
  EXPECT_EQ(from_empty[0].shape(), (Shape{3, 2}));
  expect_near(from_empty[0], {10, 20, 11, 21, 12, 22});
  Tensor none = make<int64_t>({}, {0});
  auto untouched = run(appending_loop(false), {&none, nullptr, &init, &base});
  EXPECT_EQ(untouched[0].shape(), (Shape{1, 2}));
  expect_near(untouched[0], {-1, -2});
}

TEST(ControlFlowOps, LoopAppendingRowsOfAnotherWidthNamesTheConcat) {
  Tensor trips = make<int64_t>({}, {2});
  Tensor init = make<float>({1, 2}, {0, 0});
  Tensor wide = make<float>({1, 3}, {1, 2, 3});
  for (bool also_read_acc : {false, true}) {
    try {
      run(appending_loop(also_read_acc), {&trips, nullptr, &init, &wide});
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("body_concat"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fb
