// int8: the calibrators' thresholds on distributions whose answer is known, the calibration
// cache, the int8 matmul and convolution kernels against float32, and int8 builds of a
// transformer, a ResNet and a MobileNet (with ReLU6 and depthwise convolutions) that meet
// the int8 bar (cosine >= 0.99 to the fp32 reference, issue 12) with every matrix product
// and convolution in int8 and the other layers in fp32, each saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <random>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/channels_last_layers.h"
#include "engine/backend/cpu/conv.h"
#include "engine/backend/cpu/int8_matmul.h"
#include "engine/ops/int8_quantize.h"
#include "engine/onnx/onnx_import.h"
#include "engine/passes/pass.h"
#include "engine/quant/calibrator.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/calibration.h"
#include "harness/cases/model_source.h"
#include "harness/cases/tensor_file.h"
#include "tests/pass_test_support.h"
#include "tests/scratch_dir.h"

namespace fb {
namespace {

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::map<std::string, TensorRange> calibrate(CalibrationMethod m, const std::vector<float>& x) {
  Calibrator c(m);
  c.observe_range("x", x.data(), x.size());
  if (c.wants_second_pass()) c.observe_histogram("x", x.data(), x.size());
  return c.ranges();
}

TEST(Calibrator, MinMaxIsTheLargestMagnitudeAndSignDecidesUnsigned) {
  const std::vector<float> x{-0.5f, 2.f, 1.f, NAN, -3.f};
  const TensorRange r = calibrate(CalibrationMethod::MinMax, x).at("x");
  EXPECT_EQ(r.min, -3.f);
  EXPECT_EQ(r.max, 2.f);
  EXPECT_EQ(r.amax, 3.f);
  EXPECT_FALSE(r.is_unsigned());
  const TensorRange u = calibrate(CalibrationMethod::MinMax, {0.f, 4.f, 1.f}).at("x");
  EXPECT_TRUE(u.is_unsigned());
  EXPECT_EQ(u.amax, 4.f);
}

TEST(Calibrator, PercentileOfAUniformHistogramIsLinear) {
  const std::vector<double> flat(1000, 1.0);
  EXPECT_NEAR(percentile_threshold(flat, 0.01, 50), 5.0, 1e-6);
  EXPECT_NEAR(percentile_threshold(flat, 0.01, 99.99), 9.999, 1e-6);
  EXPECT_EQ(percentile_threshold(std::vector<double>(10, 0.0), 1, 50), 0.f);
}

TEST(Calibrator, PercentileAndEntropyClipRareOutliersOfAGaussian) {
  // 1M N(0,1) values and ten at ±50: minmax spends the grid on the outliers.
  std::vector<float> x = gaussian(1 << 20, 3);
  for (int i = 0; i < 10; ++i) x[i * 1000] = i % 2 ? 50.f : -50.f;
  EXPECT_EQ(calibrate(CalibrationMethod::MinMax, x).at("x").amax, 50.f);
  const float pct = calibrate(CalibrationMethod::Percentile, x).at("x").amax;
  EXPECT_NEAR(pct, 3.9f, 0.15f);  // the 99.99th percentile of |N(0,1)| is 3.89
  const float ent = calibrate(CalibrationMethod::Entropy, x).at("x").amax;
  EXPECT_GT(ent, 2.5f);
  EXPECT_LT(ent, 8.f);
}

TEST(Calibrator, EntropyIgnoresTheZerosOfAReluOutput) {
  // ReLU of N(0,1): half exact zeros. With the zeros in the histogram the KL search cut
  // resnet18's thresholds to a quarter of the range; without them the threshold keeps the
  // bulk of the positive values.
  std::vector<float> x = gaussian(1 << 20, 5);
  for (float& v : x) v = std::max(v, 0.f);
  const TensorRange r = calibrate(CalibrationMethod::Entropy, x).at("x");
  EXPECT_TRUE(r.is_unsigned());
  EXPECT_GT(r.amax, 3.f);
}

TEST(Calibrator, EntropyOfAPointMassDoesNotClipIt) {
  std::vector<double> h(Calibrator::kBins, 0.0);
  h[Calibrator::kBins - 1] = 100;  // every value at the top of the range
  EXPECT_NEAR(entropy_threshold(h, 1.0 / Calibrator::kBins, 128), 1.0, 1e-6);
}

TEST(Int8Quantize, InputsRoundAndSaturate) {
  const float x[] = {0.f, 0.49f, 0.51f, -1.5f, 300.f, -300.f};
  int8_t s[6];
  quantize_input(x, 6, 1.f, false, s);
  EXPECT_EQ(std::vector<int>(s, s + 6), (std::vector<int>{0, 0, 1, -2, 127, -127}));
  uint8_t u[6];
  quantize_input(x, 6, 1.f, true, u);
  EXPECT_EQ(std::vector<int>(u, u + 6), (std::vector<int>{0, 0, 1, 0, 255, 0}));
  quantize_input(x, 6, 1.f, false, u, 128);  // s8 kept as u8: shifted by 128, saturating at u8's ends
  EXPECT_EQ(std::vector<int>(u, u + 6), (std::vector<int>{128, 128, 129, 126, 255, 0}));
  quantize_input(x, 6, 1.f, false, u, 3);  // u8 with zero point 3 (asymmetric): [-3, 252] around it
  EXPECT_EQ(std::vector<int>(u, u + 6), (std::vector<int>{3, 3, 4, 1, 255, 0}));
}

// The vectorized loop (16 at a time) and the scalar tail give the scalar formula's bytes:
// round half to even, saturation, the zero point's shift, over long inputs (the parallel
// path too) with ties, out-of-range values and every sign.
TEST(Int8Quantize, LongInputsGiveTheScalarFormulasBytes) {
  for (int64_t n : {1000, 70001}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(i % 701 - 350) * 0.5f + (i % 3 == 0 ? 0.f : 0.25f);  // ±175, ties at .5
    const float scale = 0.5f;
    struct Form {
      bool is_unsigned;
      int zero_point;
      float lo, hi;
    };
    for (Form f : {Form{false, 0, -127, 127}, Form{true, 0, 0, 255}, Form{false, 128, -128, 127}, Form{false, 3, -3, 252}}) {
      SCOPED_TRACE("n " + std::to_string(n) + " unsigned " + std::to_string(f.is_unsigned) + " zero point " +
                   std::to_string(f.zero_point));
      std::vector<uint8_t> got(static_cast<size_t>(n));
      quantize_input(x.data(), n, scale, f.is_unsigned, got.data(), f.zero_point);
      int wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float q = std::min(std::max(std::nearbyint(x[size_t(i)] / scale), f.lo), f.hi) + float(f.zero_point);
        const uint8_t want = f.is_unsigned || f.zero_point ? uint8_t(q) : uint8_t(int8_t(q));
        wrong += got[size_t(i)] != want;
      }
      EXPECT_EQ(wrong, 0);
    }
  }
}

TEST(Int8Quantize, WeightsPerChannel) {
  // [K=2, N=3], channels inner: scales from each column's |max|.
  const float w[] = {1.f, -4.f, 0.f, 0.5f, 2.f, 0.f};
  int8_t q[6];
  std::vector<float> scales;
  quantize_weights_per_channel(w, 2, 3, 1, q, scales);
  EXPECT_FLOAT_EQ(scales[0], 1.f / 127);
  EXPECT_FLOAT_EQ(scales[1], 4.f / 127);
  EXPECT_EQ(scales[2], 1.f);  // an all-zero column
  EXPECT_EQ(std::vector<int>(q, q + 6), (std::vector<int>{127, -127, 0, 64, 64, 0}));
}

// The int8 kernel against a float32 product of the same operands: bias, activation,
// transposed weights, unsigned inputs, signed ones as s8 and as u8 + 128.
TEST(Int8MatMul, AgreesWithFloat32) {
  const int64_t m = 64, k = 96, n = 48;
  struct Form {
    bool is_unsigned;
    int zero_point;
    const char* name;
  };
  for (bool trans_b : {false, true})
    for (Form f : {Form{false, 0, "s8×s8→f32"}, Form{true, 0, "u8×s8→f32"}, Form{false, 128, "s8(as u8+128)×s8→f32"}}) {
      const bool is_unsigned = f.is_unsigned;
      SCOPED_TRACE(std::string(trans_b ? "B transposed, " : "B plain, ") + f.name);
      std::vector<float> a = gaussian(m * k, 1), b = gaussian(k * n, 2, 0.1f), bias = gaussian(n, 4);
      if (is_unsigned)
        for (float& v : a) v = std::fabs(v);
      float amax = 0;
      for (float v : a) amax = std::max(amax, std::fabs(v));
      // Expected: act(A·B + bias) in double, B read as [K, N] or [N, K].
      std::vector<float> want(m * n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = bias[j];
          for (int64_t p = 0; p < k; ++p) acc += double(a[i * k + p]) * (trans_b ? b[j * k + p] : b[p * n + j]);
          want[i * n + j] = float(std::max(acc, 0.0));
        }
      Int8MatMulSpec s;
      s.a = {m, k};
      s.b = trans_b ? Shape{n, k} : Shape{k, n};
      s.trans_b = trans_b;
      s.has_bias = true;
      s.activation = ActivationKind::Relu;
      s.input_amax = amax;
      s.input_unsigned = is_unsigned;
      s.input_zero_point = f.zero_point;
      Int8MatMulKernel kernel(s, b.data());
      std::vector<uint8_t> a_q(m * k);  // as a fusebench.Quantize writes it
      quantize_input(a.data(), m * k, int8_input_scale(amax, is_unsigned), is_unsigned, a_q.data(), f.zero_point);
      std::vector<float> got(m * n);
      kernel.run(a_q.data(), bias.data(), got.data());
      EXPECT_GT(cosine(got, want), 0.999);
      double max_err = 0;
      for (size_t i = 0; i < got.size(); ++i) max_err = std::max(max_err, double(std::fabs(got[i] - want[i])));
      EXPECT_LT(max_err, 0.1) << "the bias must be added once, in output units";
      EXPECT_NE(kernel.describe().find(f.name), std::string::npos) << kernel.describe();

      // The same product written as u8 for an int8 reader (ReLU output: unsigned).
      float out_amax = 0;
      for (float v : want) out_amax = std::max(out_amax, v);
      s.output_amax = out_amax;
      s.output_unsigned = true;
      Int8MatMulKernel requantizing(s, b.data());
      std::vector<uint8_t> q(m * n);
      requantizing.run(a_q.data(), bias.data(), q.data());
      const float step = int8_input_scale(out_amax, true);
      std::vector<float> back(m * n);
      for (size_t i = 0; i < q.size(); ++i) back[i] = step * q[i];
      EXPECT_GT(cosine(back, want), 0.999);
      double max_q_err = 0;
      for (size_t i = 0; i < back.size(); ++i) max_q_err = std::max(max_q_err, double(std::fabs(back[i] - want[i])));
      EXPECT_LT(max_q_err, 0.1 + step);
      EXPECT_NE(requantizing.describe().find("×s8→u8"), std::string::npos) << requantizing.describe();
    }
}

// Gaussian values and their s8 quantization at their own |max| (returned in *amax).
std::vector<int8_t> quantized_gaussian(size_t count, uint64_t seed, float* amax) {
  const std::vector<float> x = gaussian(count, seed);
  *amax = 0;
  for (float v : x) *amax = std::max(*amax, std::fabs(v));
  std::vector<int8_t> q(x.size());
  quantize_input(x.data(), int64_t(x.size()), int8_input_scale(*amax, false), false, q.data());
  return q;
}

// The tabled activations in double, written out independently of the engine's tables.
double activation_in_double(const std::string& a, double v) {
  if (a == "gelu") return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  if (a == "gelu_tanh") return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  const double sig = 1 / (1 + std::exp(-v));
  return a == "silu" ? v * sig : sig;
}

// A 3x3 (or depthwise, `group` channels) FusedConv with padding 1 reading an s8 input of
// threshold x_amax, in channels-last or plain layout.
Node int8_conv_node(int64_t group, bool channels_last, float x_amax) {
  Node node = fusebench_node("/conv", "FusedConv", {"x", "w", "b"}, {"y"});
  node.attrs["pads"] = Attribute{std::vector<int64_t>{1, 1, 1, 1}};
  if (group > 1) node.attrs["group"] = Attribute{group};
  if (channels_last)
    for (const char* key : {"x_layout", "y_layout"}) node.attrs[key] = Attribute{std::string(kChannelsLast)};
  node.attrs["int8_input_amax"] = Attribute{x_amax};
  node.attrs["int8_input_unsigned"] = Attribute{int64_t(0)};
  return node;
}

// An int8 convolution whose reader is an int8 layer writes that reader's u8/s8 input in its
// epilogue: for every activation, channels-last and plain, the bytes are the float32
// output of the same convolution quantized at the threshold, within one step (a 3x3
// convolution, and a depthwise one as MobileNet's).
TEST(Int8Conv, AQuantizedOutputIsTheFloatOutputQuantized) {
  const int64_t n = 2, c = 8, hw = 10;
  float x_amax = 0;
  const std::vector<int8_t> x_q = quantized_gaussian(size_t(n * c * hw * hw), 11, &x_amax);
  const std::vector<float> bias = gaussian(16, 12, 0.2f);
  struct Act {
    const char* name;
    bool is_unsigned;  // ReLU, ReLU6 and sigmoid outputs are never negative
  };
  for (bool depthwise : {false, true})
    for (bool channels_last : {false, true})
      for (Act a : {Act{"", false}, Act{"relu", true}, Act{"clip", true}, Act{"sigmoid", true}, Act{"hardswish", false},
                    Act{"silu", false}, Act{"gelu", false}}) {
        SCOPED_TRACE(std::string(depthwise ? "depthwise " : "3x3 ") + (channels_last ? "nhwc " : "nchw ") + a.name);
        const int64_t m = depthwise ? c : 16;
        const Shape w_shape{m, depthwise ? 1 : c, 3, 3};
        const std::vector<float> w = gaussian(size_t(shape_numel(w_shape)), 13, 0.3f);
        Node node = int8_conv_node(depthwise ? c : 1, channels_last, x_amax);
        if (*a.name) node.attrs["activation"] = Attribute{std::string(a.name)};
        if (std::string(a.name) == "clip") {
          node.attrs["activation_min"] = Attribute{0.f};
          node.attrs["activation_max"] = Attribute{1.5f};  // below the outputs' largest: it clips
        }
        ConvKernel to_float(node, {n, c, hw, hw}, w_shape, true, true, w.data());
        std::vector<float> y(size_t(n * m * hw * hw));
        to_float.run(x_q.data(), w.data(), bias.data(), nullptr, y.data());
        float y_amax = 0;
        for (float v : y) y_amax = std::max(y_amax, std::fabs(v));
        y_amax *= 0.8f;  // the largest values saturate
        node.attrs["int8_output_amax"] = Attribute{y_amax};
        node.attrs["int8_output_unsigned"] = Attribute{int64_t(a.is_unsigned)};
        ConvKernel to_int8(node, {n, c, hw, hw}, w_shape, true, true, w.data());
        EXPECT_NE(to_int8.describe().find(a.is_unsigned ? "s8s8→u8" : "s8s8→s8"), std::string::npos) << to_int8.describe();
        std::vector<int8_t> y_q(y.size()), want(y.size());
        to_int8.run(x_q.data(), w.data(), bias.data(), nullptr, y_q.data());
        quantize_input(y.data(), int64_t(y.size()), int8_input_scale(y_amax, a.is_unsigned), a.is_unsigned, want.data());
        int worst = 0, saturated = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          const int got_v = a.is_unsigned ? int(uint8_t(y_q[i])) : int(y_q[i]);
          const int want_v = a.is_unsigned ? int(uint8_t(want[i])) : int(want[i]);
          worst = std::max(worst, std::abs(got_v - want_v));
          saturated += want_v == (a.is_unsigned ? 255 : 127);
        }
        EXPECT_LE(worst, 1);
        EXPECT_GT(saturated, 0) << "the test must reach the saturation";
        // A capture reads it back as float32, in plain layout: the float output within a step.
        const Tensor back = to_int8.plain_output(y_q.data());
        const Tensor plain = to_float.plain_output(y.data());
        ASSERT_EQ(back.dtype(), DType::Float32);
        const float step = int8_input_scale(y_amax, a.is_unsigned);
        double worst_back = 0;
        for (int64_t i = 0; i < back.numel(); ++i)
          if (std::fabs(plain.data<float>()[i]) < y_amax)
            worst_back = std::max(worst_back, double(std::fabs(back.data<float>()[i] - plain.data<float>()[i])));
        EXPECT_LE(worst_back, 1.01 * step);
      }
}

// A costly activation by table in an int8 convolution (silu, sigmoid, gelu, gelu_tanh):
// the convolution writes the activation's input as s8 at its threshold, and each byte maps
// to the activation's value quantized for the reader. Against the activation in double of
// the float32 convolution, every element is within the two quantizations' steps (the
// input's times the activation's largest slope, 1.13 for GELU and 1.1 for SiLU, plus
// half an output step), for both layouts, 3x3 and depthwise.
TEST(Int8Conv, CostlyActivationsRunByTable) {
  const int64_t n = 2, c = 8, hw = 10;
  float x_amax = 0;
  const std::vector<int8_t> x_q = quantized_gaussian(size_t(n * c * hw * hw), 21, &x_amax);
  const std::vector<float> bias = gaussian(16, 22, 0.2f);
  for (bool depthwise : {false, true})
    for (bool channels_last : {false, true})
      for (const std::string a : {"silu", "sigmoid", "gelu", "gelu_tanh"}) {
        SCOPED_TRACE(std::string(depthwise ? "depthwise " : "3x3 ") + (channels_last ? "nhwc " : "nchw ") + a);
        const int64_t m = depthwise ? c : 16;
        const Shape w_shape{m, depthwise ? 1 : c, 3, 3};
        const std::vector<float> w = gaussian(size_t(shape_numel(w_shape)), 23, 0.3f);
        Node node = int8_conv_node(depthwise ? c : 1, channels_last, x_amax);
        // The activation's input, in float32 (in the kernel's layout: the order of the
        // elements does not matter below, only that both outputs share it).
        ConvKernel pre_kernel(node, {n, c, hw, hw}, w_shape, true, true, w.data());
        std::vector<float> pre(size_t(n * m * hw * hw));
        pre_kernel.run(x_q.data(), w.data(), bias.data(), nullptr, pre.data());
        float pre_amax = 0, out_amax = 0;
        for (float v : pre) {
          pre_amax = std::max(pre_amax, std::fabs(v));
          out_amax = std::max(out_amax, float(std::fabs(activation_in_double(a, v))));
        }
        const bool is_unsigned = a == "sigmoid";
        node.attrs["activation"] = Attribute{a};
        node.attrs["int8_activation_input_amax"] = Attribute{pre_amax};
        node.attrs["int8_output_amax"] = Attribute{out_amax};
        node.attrs["int8_output_unsigned"] = Attribute{int64_t(is_unsigned)};
        ConvKernel tabled(node, {n, c, hw, hw}, w_shape, true, true, w.data());
        EXPECT_NE(tabled.describe().find("s8s8→s8 →" + a + " table→" + (is_unsigned ? "u8" : "s8")), std::string::npos)
            << tabled.describe();
        std::vector<uint8_t> q(pre.size());
        tabled.run(x_q.data(), w.data(), bias.data(), nullptr, q.data());
        const double in_step = int8_input_scale(pre_amax, false), out_step = int8_input_scale(out_amax, is_unsigned);
        double worst = 0;
        for (size_t i = 0; i < q.size(); ++i) {
          const double got = out_step * (is_unsigned ? double(q[i]) : double(int8_t(q[i])));
          worst = std::max(worst, std::fabs(got - activation_in_double(a, pre[i])) / (1.13 * in_step + 0.5 * out_step + 1e-4));
        }
        EXPECT_LE(worst, 1.0) << "an element is further from the activation than its quantization steps allow";
      }
}

// GELU by table: the product written as s8 at the activation input's threshold, then each
// byte mapped to GELU's value quantized for the reader. Against GELU in double, every
// element is within one step of each quantization (the input's times GELU's slope, at most
// 1.13, plus half the output's) of the exact value, for erf and tanh GELU, s8 and u8+128
// outputs, and over elements that the tail loop handles (m·n not a multiple of 64).
TEST(Int8MatMul, GeluByTableAgreesWithFloat32) {
  const int64_t m = 37, k = 64, n = 40;
  std::vector<float> a = gaussian(m * k, 5), b = gaussian(k * n, 6, 0.15f), bias = gaussian(n, 7, 0.5f);
  float amax = 0;
  for (float v : a) amax = std::max(amax, std::fabs(v));
  std::vector<double> pre(m * n);
  double pre_amax = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias[j];
      for (int64_t p = 0; p < k; ++p) acc += double(a[i * k + p]) * b[p * n + j];
      pre[i * n + j] = acc;
      pre_amax = std::max(pre_amax, std::fabs(acc));
    }
  std::vector<uint8_t> a_q(m * k);
  quantize_input(a.data(), m * k, int8_input_scale(amax, false), false, a_q.data(), 0);
  for (ActivationKind act : {ActivationKind::Gelu, ActivationKind::GeluTanh})
    for (int zero_point : {0, 128}) {
      SCOPED_TRACE(std::string(act == ActivationKind::Gelu ? "erf" : "tanh") + ", zero point " + std::to_string(zero_point));
      std::vector<double> want(m * n);
      double out_amax = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        const double x = pre[i];
        want[i] = activation_in_double(act == ActivationKind::Gelu ? "gelu" : "gelu_tanh", x);
        out_amax = std::max(out_amax, std::fabs(want[i]));
      }
      Int8MatMulSpec s;
      s.a = {m, k};
      s.b = {k, n};
      s.has_bias = true;
      s.activation = act;
      s.input_amax = amax;
      s.output_amax = float(out_amax);
      s.output_zero_point = zero_point;
      s.activation_input_amax = float(pre_amax);
      Int8MatMulKernel kernel(s, b.data());
      const std::string table = act == ActivationKind::Gelu ? "×s8→s8 →gelu table→s8" : "×s8→s8 →gelu_tanh table→s8";
      EXPECT_NE(kernel.describe().find(zero_point ? table + "(as u8+128)" : table), std::string::npos)
          << kernel.describe();
      std::vector<uint8_t> q(m * n);
      kernel.run(a_q.data(), bias.data(), q.data());
      const double in_step = int8_input_scale(float(pre_amax), false), out_step = int8_input_scale(float(out_amax), false);
      double worst = 0;
      for (size_t i = 0; i < q.size(); ++i) {
        const double got = out_step * (zero_point ? double(q[i]) - zero_point : double(int8_t(q[i])));
        worst = std::max(worst, std::fabs(got - want[i]) / (1.13 * in_step + 0.5 * out_step + 0.02));
      }
      EXPECT_LE(worst, 1.0) << "an element is further from GELU than its quantization steps allow";
    }
}

// int8 attention against float32 attention on the same q, k, v and mask: the inputs as s8
// with their |max|, the probabilities as u8.
TEST(Int8Attention, AgreesWithFloat32) {
  const int64_t b = 2, s = 16, hidden = 32, heads = 4;
  std::vector<float> q = gaussian(b * s * hidden, 11), k = gaussian(b * s * hidden, 12), v = gaussian(b * s * hidden, 13);
  std::vector<float> mask(b * s, 0.f);
  mask[3] = mask[b * s - 1] = -1e4f;  // a masked key in each batch
  const Shape qs{b, s, hidden}, ms{b, 1, 1, s};
  const float scale = 1.f / std::sqrt(float(hidden / heads));
  std::vector<float> want(q.size()), got(q.size());
  AttentionKernel(qs, qs, heads, scale, &ms).run(q.data(), k.data(), v.data(), want.data(), mask.data());
  auto quantized = [](const std::vector<float>& x, float* step) {
    float amax = 0;
    for (float e : x) amax = std::max(amax, std::fabs(e));
    *step = int8_input_scale(amax, false);
    std::vector<int8_t> out(x.size());
    quantize_input(x.data(), int64_t(x.size()), *step, false, out.data());
    return out;
  };
  AttentionInt8 steps;
  const std::vector<int8_t> q8 = quantized(q, &steps.q_step), k8 = quantized(k, &steps.k_step), v8 = quantized(v, &steps.v_step);
  AttentionKernel int8(qs, qs, heads, scale, &ms, &steps);
  int8.run(q8.data(), k8.data(), v8.data(), got.data(), mask.data());
  EXPECT_GT(cosine(got, want), 0.999);
  EXPECT_NE(int8.describe().find("u8×s8 P·V"), std::string::npos) << int8.describe();
}

AccuracyResult int8_against_reference(const std::string& model, int64_t batch, FusionLevel fusion,
                                      const std::string& method, std::unique_ptr<Engine>* out = nullptr) {
  LoadedModel m = load_model(model);
  BuildConfig cfg;
  cfg.precision = fb::Precision::INT8;
  cfg.batch = batch;
  cfg.fusion = fusion;
  cfg.calibration.method = method;
  cfg.calibration.batches = 2;
  calibrate_for_int8(m, m.graph, cfg);
  EXPECT_FALSE(cfg.int8_ranges.empty());
  auto e = build_engine(m.graph, cfg);
  ReferenceExecutor ref(m.graph, batch);
  auto inputs = make_inputs(m.graph, ref.input_shapes(), 1234);  // not the calibration data (seed 7)
  auto expected = ref.run(inputs);
  e->run(inputs);
  AccuracyResult r = compare_outputs(e->outputs(), expected, m.graph.outputs, default_accuracy(fb::Precision::INT8));
  if (out) *out = std::move(e);
  return r;
}

int count_precision(const Engine& e, const std::string& kind, const std::string& precision) {
  int n = 0;
  for (const LayerInfo& l : e.layers()) n += l.kind == kind && fb::precision_name(l.precision) == precision;
  return n;
}

TEST(Int8Build, TransformerRunsItsMatrixProductsInInt8AndMeetsCosine) {
  for (FusionLevel level : {FusionLevel::None, FusionLevel::Aggressive}) {
    SCOPED_TRACE(fusion_level_name(level));
    std::unique_ptr<Engine> e;
    const AccuracyResult r = int8_against_reference("zoo:bert?heads=2&hidden=64&layers=2&seq=16", 2, level, "entropy", &e);
    EXPECT_TRUE(r.passed) << r.detail;
    EXPECT_GE(r.cosine, 0.99);
    const std::string matmul = level == FusionLevel::None ? "MatMul" : "fusebench.FusedMatMul";
    EXPECT_EQ(count_precision(*e, matmul, "int8"), 2 * 6) << "Q, K, V, output, FFN in, FFN out per layer";
    int quantizers = 0, written_as_int8 = 0, written_as_s8 = 0;
    for (const LayerInfo& l : e->layers()) {
      if (l.kind == "fusebench.Quantize") {
        ++quantizers;
        EXPECT_EQ(l.precision_reason, "precision boundary");
      } else if (l.kind == "fusebench.Attention") {
        EXPECT_EQ(l.precision, fb::Precision::INT8);
        EXPECT_NE(l.kernel.find("s8×s8 Q·Kᵀ +softmax→u8 + u8×s8 P·V"), std::string::npos) << l.kernel;
      } else if (l.precision == fb::Precision::INT8) {
        // LayerNorm and GELU outputs are signed: read as u8 + 128 (only matrix products read them).
        EXPECT_NE(l.kernel.find("s8(as u8+128)×s8"), std::string::npos) << l.kernel;
        EXPECT_EQ(l.precision_reason, "default");
        // The FFN's GELU runs as a table over the s8 product, written for the next product.
        written_as_int8 += l.kernel.find("×s8→s8 →gelu table→s8(as u8+128)") != std::string::npos;
        written_as_s8 += l.kernel.find("×s8→s8") != std::string::npos && l.kernel.find("→s8(") == std::string::npos;
      } else if (l.kind.find("LayerNorm") != std::string::npos) {
        EXPECT_EQ(l.precision_reason, "fallback from int8: no int8 kernel for " + l.kind.substr(l.kind.find('.') + 1));
      }
    }
    EXPECT_TRUE(test::log_mentions(*e, "int8 layer(s), input thresholds from entropy calibration over 2 seeded batches"));
    // One Quantize per tensor int8 layers read (Q, K and V share theirs): the embedding
    // LayerNorm, attention output, FFN input per layer, and, unfused, the FFN intermediate
    // too; fused, the FFN's first product writes its output as s8 for the second, and the
    // Q, K and V projections theirs as s8 for int8 attention.
    EXPECT_EQ(quantizers, level == FusionLevel::None ? 2 * 4 : 2 * 3);
    EXPECT_EQ(written_as_int8, level == FusionLevel::None ? 0 : 2);
    EXPECT_EQ(written_as_s8, level == FusionLevel::None ? 0 : 2 * 3);
  }
}

TEST(Int8Build, CnnsRunEveryConvolutionInInt8AndMeetCosine) {
  // A convolution that only int8 convolutions read, summing no residual, writes their u8
  // input itself: each ResNet block's first 3x3 (3 here), and each MobileNet block's
  // expansion and depthwise convolutions after their ReLU6 (2 x 4).
  const std::map<std::string, int> writes_u8 = {{"zoo:resnet?blocks=1&width=8&image=16", 3},
                                                {"zoo:mobilenet?width=8&blocks=4&image=32", 8}};
  for (const auto& [model, written] : writes_u8)
    for (const char* method : {"minmax", "percentile", "entropy"}) {
      SCOPED_TRACE(model + " " + method);
      std::unique_ptr<Engine> e;
      const AccuracyResult r = int8_against_reference(model, 2, FusionLevel::Aggressive, method, &e);
      EXPECT_TRUE(r.passed) << r.detail;
      EXPECT_EQ(count_precision(*e, "fusebench.FusedConv", "fp32"), 0);
      EXPECT_GT(count_precision(*e, "fusebench.FusedConv", "int8"), 3);
      int u8_out = 0;
      for (const LayerInfo& l : e->layers()) u8_out += l.kernel.find("s8→u8") != std::string::npos;
      EXPECT_EQ(u8_out, written);
    }
}

// EfficientNet's SiLU (Sigmoid, Mul) before an int8 reader runs by table: the stem and
// each expansion convolution (their readers are the int8 depthwise convolutions), each
// squeeze-excite reduction, each depthwise convolution and the head, whose readers (the
// block's pool and gate, the classifier's pool) read their s8 output as the values it
// stands for, write the SiLU's input as s8 and map it. Calibration measured the tables'
// inputs (the convolutions' outputs); the outputs still meet int8's cosine.
TEST(Int8Build, EfficientNetsSiluBeforeAnInt8ReaderRunsByTable) {
  for (const char* method : {"minmax", "entropy"}) {
    SCOPED_TRACE(method);
    std::unique_ptr<Engine> e;
    const AccuracyResult r = int8_against_reference("zoo:efficientnet?width=50&stages=3&image=32", 2,
                                                    FusionLevel::Aggressive, method, &e);
    EXPECT_TRUE(r.passed) << r.detail;
    int tabled = 0, in_epilogue = 0;
    for (const LayerInfo& l : e->layers()) {
      tabled += l.kernel.find("→silu table→s8") != std::string::npos;
      in_epilogue += l.kernel.find("+silu") != std::string::npos;
    }
    // The stem, the expansions of stages 2 and 3 (two blocks each), each of the five
    // blocks' squeeze-excite reduction (its reader is the int8 expansion back), the five
    // depthwise convolutions, read only by their block's pool and gate, which dequantize
    // as they read, and the head, read only by the classifier's pool.
    EXPECT_EQ(tabled, 1 + 4 + 5 + 5 + 1);
    EXPECT_EQ(in_epilogue, 0);
    EXPECT_EQ(test::count_kernel(*e, "global_avg_pool nhwc s8"), 5 + 1);
    EXPECT_EQ(test::count_kernel(*e, "channel_gate nhwc→nhwc s8 →s8"), 5);

    // Each block's squeeze-excite gate writes the projection's s8 input itself: the bytes
    // a fusebench.Quantize of its float32 product would write (captures read it back as
    // the values it stands for, in plain layout, as they read the gate's inputs).
    ReferenceExecutor ref(e->graph(), 2);
    const auto captures = e->run_capture(make_inputs(e->graph(), ref.input_shapes(), 5));
    int gates = 0;
    for (const Node& n : e->graph().nodes) {
      if (n.op_type != "Mul" || !n.has_attr("int8_output_amax")) continue;
      ++gates;
      const Tensor &a = captures.at(n.inputs[0]), &b = captures.at(n.inputs[1]), &y = captures.at(n.outputs[0]);
      const int xi = channel_gate_operand(a.shape(), b.shape(), y.shape());
      ASSERT_GE(xi, 0);
      const Tensor& x = xi == 0 ? a : b;
      const Tensor& gate = xi == 0 ? b : a;
      const int64_t c = x.shape()[1], plane = x.shape()[2] * x.shape()[3];
      std::vector<float> product(static_cast<size_t>(x.numel()));
      for (int64_t i = 0; i < x.numel(); ++i) product[size_t(i)] = x.data<float>()[i] * gate.data<float>()[i / plane % c + i / (c * plane) * c];
      const bool is_unsigned = n.attr_int("int8_output_unsigned", 0) != 0;
      const float step = int8_input_scale(n.attr_float("int8_output_amax", 0.f), is_unsigned);
      std::vector<uint8_t> q(product.size());
      quantize_input(product.data(), int64_t(product.size()), step, is_unsigned, q.data());
      int differ = 0;
      for (size_t i = 0; i < q.size(); ++i) differ += y.data<float>()[i] != step * (is_unsigned ? float(q[i]) : float(int8_t(q[i])));
      EXPECT_EQ(differ, 0) << n.name;
    }
    EXPECT_EQ(gates, 5);
    // The pools over the depthwise convolutions' s8 output: the mean of the values it
    // stands for (the capture dequantizes it), summed exactly.
    int pools = 0;
    for (const Node& n : e->graph().nodes) {
      if (n.op_type != "GlobalAveragePool" || !n.has_attr("quantized_input_amax")) continue;
      ++pools;
      const Tensor &x = captures.at(n.inputs[0]), &y = captures.at(n.outputs[0]);
      const int64_t plane = x.shape()[2] * x.shape()[3];
      double worst = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        double sum = 0;
        for (int64_t p = 0; p < plane; ++p) sum += x.data<float>()[i * plane + p];
        worst = std::max(worst, std::fabs(y.data<float>()[i] - sum / double(plane)));
      }
      EXPECT_LT(worst, 1e-6) << n.name;
    }
    EXPECT_EQ(pools, 5 + 1);
  }
}

TEST(Int8Build, AConstraintKeepsALayerInFp32) {
  LoadedModel m = load_model("zoo:mlp?in=32&hidden=64&layers=2&out=8");
  BuildConfig cfg;
  cfg.precision = fb::Precision::INT8;
  cfg.layer_precisions = {{"Gemm", fb::Precision::FP32}};
  cfg.calibration.batches = 1;
  calibrate_for_int8(m, m.graph, cfg);
  auto e = build_engine(m.graph, cfg);
  // The input quantized, the two hidden layers (MatMul+Add+Relu) in int8, the first
  // writing its ReLU output as u8 for the second; the output Gemm (fused too) in fp32.
  ASSERT_EQ(e->layers().size(), 4u);
  const LayerInfo &quantize = e->layers()[0], &first = e->layers()[1], &second = e->layers()[2], &out = e->layers()[3];
  EXPECT_EQ(quantize.kind, "fusebench.Quantize");
  EXPECT_EQ(first.precision, fb::Precision::INT8);
  EXPECT_NE(first.kernel.find("s8(as u8+128)×s8→u8"), std::string::npos) << "the model's input is signed: " << first.kernel;
  EXPECT_EQ(second.precision, fb::Precision::INT8);
  EXPECT_NE(second.kernel.find("u8×s8→f32"), std::string::npos) << "after a ReLU the input is unsigned: " << second.kernel;
  EXPECT_EQ(out.precision, fb::Precision::FP32);
  EXPECT_EQ(out.precision_reason, "constraint 'Gemm'");
}

// x (ReLU'd for u8) ─▶ QuantizeLinear ─▶ DequantizeLinear ─▶ MatMul(W) + Add(bias) (or a
// 3x3 Conv over x as [N, 4, 8, 8]): the form quantization tools export, with zero points
// of the quantized type given (the DequantizeLinear's defaults to the QuantizeLinear's).
struct QdqForm {
  bool is_unsigned = false, relu = false, conv = false;
  int zero_point = 0;
  std::optional<int> dq_zero_point{};
};
Graph qdq_model(const QdqForm& f) {
  zoo::OnnxBuilder b("qdq", "qdq");
  std::string x = f.conv ? b.input("x", {zoo::kBatch, 4, 8, 8}) : b.input("x", {zoo::kBatch, 16, 32});
  if (f.relu) x = b.node("/relu", "Relu", {x});
  const std::string s = b.scalar("act_scale", 0.02f), zp = b.scalar("act_zp", 0.f), dq_zp = b.scalar("dq_zp", 0.f);
  const std::string q = b.node("/q", "QuantizeLinear", {x, s, zp});
  const std::string dq = b.node("/dq", "DequantizeLinear", {q, s, f.dq_zero_point ? dq_zp : zp});
  if (f.conv) {
    const std::string y = b.node("/conv", "Conv", {dq, b.weight("w", {8, 4, 3, 3}, 0.3f), b.weight("bias", {8}, 0.1f)},
                                 {zoo::attr_ints("pads", {1, 1, 1, 1})});
    b.output(y, "y", {zoo::kBatch, 8, 8, 8});
  } else {
    const std::string mm = b.node("/mm", "MatMul", {dq, b.weight("w", {32, 24}, 0.3f)});
    b.output(b.node("/mm", "Add", {mm, b.weight("bias", {24}, 0.1f)}), "y", {zoo::kBatch, 16, 24});
  }
  onnx::ModelProto m = b.finish();
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == zp || t.name() == dq_zp) {  // the builder makes float constants: the zero point is u8/s8
      const std::string name = t.name();
      t.Clear();
      t.set_name(name);
      t.set_data_type(f.is_unsigned ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8);
      t.add_int32_data(name == zp ? f.zero_point : f.dq_zero_point.value_or(f.zero_point));
    }
  return import_onnx(std::move(m), "qdq", "");
}

// The engine against the reference running Q, DQ and the float product as written: the
// same quantized input; the weights differ by their own per-channel quantization.
void expect_int8_agrees(const Graph& g, Engine& e) {
  ReferenceExecutor ref(g, 2);
  auto inputs = make_inputs(g, ref.input_shapes(), 5);
  auto expected = ref.run(inputs);
  e.run(inputs);
  const AccuracyResult r = compare_outputs(e.outputs(), expected, g.outputs, default_accuracy(fb::Precision::INT8));
  EXPECT_GE(r.cosine, 0.9995) << r.detail;
}

TEST(ExplicitQuantization, AQdqPairBecomesTheInt8LayerItFeedsWithTheModelsScale) {
  for (bool is_unsigned : {false, true})
    for (FusionLevel level : {FusionLevel::Standard, FusionLevel::None}) {
      SCOPED_TRACE(std::string(is_unsigned ? "u8" : "s8") + " " + fusion_level_name(level));
      const Graph g = qdq_model({is_unsigned, /*relu=*/is_unsigned});
      BuildConfig cfg;  // an fp32 build: the model asks for int8 itself
      cfg.batch = 2;
      cfg.fusion = level;
      auto e = build_engine(g, cfg);
      EXPECT_EQ(test::count_kind(*e, "QuantizeLinear") + test::count_kind(*e, "DequantizeLinear"), 0);
      EXPECT_EQ(test::count_kind(*e, "fusebench.Quantize"), 1);
      const std::string kind = level == FusionLevel::None ? "MatMul" : "fusebench.FusedMatMul";
      const LayerInfo* mm = test::find_kind(*e, kind);
      ASSERT_NE(mm, nullptr);
      EXPECT_EQ(mm->precision, fb::Precision::INT8);
      EXPECT_EQ(mm->precision_reason, "explicit quantization ('/q/QuantizeLinear')");
      EXPECT_NE(mm->kernel.find(is_unsigned ? "u8×s8" : "s8(as u8+128)×s8"), std::string::npos) << mm->kernel;
      EXPECT_TRUE(test::log_mentions(*e, "1 QuantizeLinear/DequantizeLinear pair(s) folded"));
      expect_int8_agrees(g, *e);
    }
}

// Quantization tools quantize activations asymmetrically by default (u8 with the zero
// point where 0.0 falls): the matrix product reads the u8 tensor with that zero point.
TEST(ExplicitQuantization, AnAsymmetricPairRunsOnTheProductsSourceZeroPoint) {
  struct Case {
    bool is_unsigned;
    int zero_point;
    std::string reads;  // as the layer's kernel names its input
  };
  for (const Case& c : {Case{true, 3, "u8(zero point 3)×s8"}, Case{true, 200, "u8(zero point 200)×s8"},
                        Case{false, -5, "u8(zero point 123)×s8"}, Case{false, -128, "u8×s8"}}) {
    SCOPED_TRACE(std::to_string(c.zero_point));
    const Graph g = qdq_model({c.is_unsigned, /*relu=*/false, /*conv=*/false, c.zero_point});
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::count_kind(*e, "QuantizeLinear"), 0);
    EXPECT_EQ(test::count_kind(*e, "fusebench.Quantize"), 1);
    const LayerInfo* mm = test::find_kind(*e, "fusebench.FusedMatMul");
    ASSERT_NE(mm, nullptr);
    EXPECT_EQ(mm->precision, fb::Precision::INT8);
    EXPECT_NE(mm->kernel.find(c.reads), std::string::npos) << mm->kernel;
    expect_int8_agrees(g, *e);
  }
}

TEST(ExplicitQuantization, PairsTheKernelsCannotTakeOrAnFp32ConstraintStayAsWritten) {
  BuildConfig cfg;
  cfg.batch = 2;
  {
    const Graph g = qdq_model({true, false, false, 3, /*dq_zero_point=*/4});
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::count_kind(*e, "QuantizeLinear"), 1);
    EXPECT_EQ(test::count_kind(*e, "fusebench.Quantize"), 0);
    EXPECT_TRUE(test::log_mentions(*e, "kept as written: QuantizeLinear's zero point 3 is not DequantizeLinear's 4"));
    test::expect_agrees(g, cfg);  // exactly the model's arithmetic: fp32 throughout
  }
  {
    const Graph g = qdq_model({true, false, /*conv=*/true, 3});
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::count_kind(*e, "QuantizeLinear"), 1);
    EXPECT_TRUE(test::log_mentions(*e, "kept as written: zero point 3 before a convolution"));
    test::expect_agrees(g, cfg);
  }
  {  // the symmetric form before a convolution becomes an int8 one
    const Graph g = qdq_model({false, false, /*conv=*/true, 0});
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::count_kind(*e, "QuantizeLinear"), 0);
    const LayerInfo* conv = test::find_kind(*e, "Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->precision, fb::Precision::INT8);
    expect_int8_agrees(g, *e);
  }
  const Graph g0 = qdq_model({false});
  cfg.layer_precisions = {{"MatMul", fb::Precision::FP32}};
  auto kept = build_engine(g0, cfg);
  EXPECT_EQ(test::count_kind(*kept, "QuantizeLinear"), 1);
  for (const LayerInfo& l : kept->layers()) EXPECT_NE(l.precision, fb::Precision::INT8) << l.name;
}

// Calibration data from files: the ranges are the files' (minmax: exactly their extremes),
// and a file of the wrong shape, or a batch missing an input, is an error naming it.
TEST(CalibrationData, FilesGiveTheRangesAndABadOneIsNamed) {
  ScratchDir dir("fb_int8_data");
  LoadedModel m = load_model("zoo:mlp?in=8&hidden=16&layers=1&out=4");
  BuildConfig cfg;
  cfg.precision = fb::Precision::INT8;
  cfg.batch = 3;
  cfg.calibration.method = "minmax";
  for (int b = 0; b < 2; ++b) {
    Tensor t(DType::Float32, {3, 8});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i % 5) - 2.f + float(b);  // -2..3 over both
    const std::string f = dir.path("batch" + std::to_string(b) + ".npy");
    write_npy(f, t);
    cfg.calibration.data.push_back({{"input", f}});
  }
  BuildConfig ok = cfg;
  calibrate_for_int8(m, m.graph, ok);
  EXPECT_EQ(ok.int8_ranges.at("input"), (TensorRange{-2.f, 3.f, 3.f}));
  EXPECT_NE(ok.int8_ranges_from.find("2 batches of data files"), std::string::npos) << ok.int8_ranges_from;

  const std::string wrong = dir.path("wrong.npy");
  write_npy(wrong, Tensor(DType::Float32, {2, 8}));
  BuildConfig bad = cfg;
  bad.calibration.data[1]["input"] = wrong;
  try {
    calibrate_for_int8(m, m.graph, bad);
    FAIL() << "a file of the wrong shape must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(wrong + ": calibration input 'input' is float32 [2,8]"), std::string::npos) << e.what();
  }
  BuildConfig missing = cfg;
  missing.calibration.data[0] = {{"other", wrong}};
  try {
    calibrate_for_int8(m, m.graph, missing);
    FAIL() << "a batch without the graph's input must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("calibration.data[0]: no file for the graph input 'input'"), std::string::npos)
        << e.what();
  }
}

TEST(CalibrationCache, KeepsOneEntryPerKeyAndADamagedOneIsNamed) {
  ScratchDir dir("fb_int8_cache");
  const std::string path = dir.path("sub/cal.json");  // the folder is made
  const nlohmann::json b1{{"model_hash", "abc"}, {"batch", 1}}, b8{{"model_hash", "abc"}, {"batch", 8}};
  const std::map<std::string, TensorRange> r1{{"x", TensorRange{-1.f, 2.f, 1.5f}}}, r8{{"x", TensorRange{0.f, 3.f, 3.f}}};
  EXPECT_FALSE(read_calibration_cache(path, b1).has_value()) << "no file yet";
  add_to_calibration_cache(path, b1, r1);
  add_to_calibration_cache(path, b8, {{"x", TensorRange{0.f, 1.f, 1.f}}});
  add_to_calibration_cache(path, b8, r8);  // replaces batch 8's entry
  EXPECT_EQ(read_calibration_cache(path, b1), r1);
  EXPECT_EQ(read_calibration_cache(path, b8), r8);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(path)).at("entries").size(), 2u);
  EXPECT_FALSE(read_calibration_cache(path, nlohmann::json{{"model_hash", "other"}}).has_value());
  std::ofstream(path) << "{\"format\": \"fusebench-calibration\", \"version\": 2, \"entries\": ";
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (attempt == 0) read_calibration_cache(path, b1);
      else add_to_calibration_cache(path, b1, r1);  // never written over: the user decides
      FAIL() << "a damaged cache must be an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(CalibrationCache, ABuildWritesItsEntryAndTheEntryReadsBackAsTheBuildsRanges) {
  ScratchDir dir("fb_int8_cache_build");
  LoadedModel m = load_model("zoo:mlp?in=16&hidden=32&layers=1&out=4");
  BuildConfig cfg;
  cfg.precision = fb::Precision::INT8;
  cfg.calibration.batches = 1;
  cfg.calibration.seed = 99;  // a key no other test has computed in this process
  cfg.calibration.cache = dir.path("mlp.calibration.json");
  BuildConfig first = cfg;
  calibrate_for_int8(m, m.graph, first);
  ASSERT_TRUE(std::filesystem::exists(cfg.calibration.cache));
  EXPECT_NE(first.int8_ranges_from.find("written to the cache"), std::string::npos) << first.int8_ranges_from;
  // Another process would read the file; here the in-memory copy answers, so check the file.
  nlohmann::json j = nlohmann::json::parse(std::ifstream(cfg.calibration.cache));
  ASSERT_EQ(j.at("entries").size(), 1u);
  EXPECT_EQ(j.at("entries")[0].at("key").at("model_hash"), m.hash);
  EXPECT_EQ(j.at("entries")[0].at("tensors").size(), first.int8_ranges.size());
  EXPECT_EQ(read_calibration_cache(cfg.calibration.cache, j.at("entries")[0].at("key")), first.int8_ranges);
}

}  // namespace
}  // namespace fb
