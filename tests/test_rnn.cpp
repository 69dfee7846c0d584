// The recurrent ops (LSTM, GRU, RNN) against a plain transcription of the ONNX spec's
// equations (double sums, std::exp and std::tanh), in the cases ONNX's node tests leave
// out: both directions, sequence_lens that differ per batch entry (and 0), initial
// states, peepholes, clip, GRU's linear_before_reset either way, a non-default
// activation, the batch-first layout, and batches that the kernel splits into groups.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backend/backend.h"
#include "engine/ops/op_registry.h"
#include "engine/zoo/onnx_builder.h"

namespace fb {
namespace {

Tensor random_tensor(Shape shape, uint64_t seed, float spread) {
  Tensor t(DType::Float32, shape);
  zoo::SplitMix64 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = rng.uniform(-spread, spread);
  return t;
}

struct Case {
  std::string op;  // LSTM, GRU, RNN
  std::string direction = "forward";
  int64_t T = 5, B = 3, I = 6, H = 7;
  std::vector<int64_t> lens{};  // empty: no sequence_lens
  bool initial = false, peepholes = false, batch_first = false, lbr = false;
  float clip = 0.f;
  std::string activation{};  // RNN's, when not Tanh
};

double act(const std::string& name, double x) {
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "Relu") return std::max(x, 0.0);
  return std::tanh(x);
}

// The spec's equations, one batch entry and one step at a time.
std::vector<float> expected_y(const Case& k, const Tensor& X, const Tensor& W, const Tensor& R, const Tensor& Bias,
                              const Tensor* h0, const Tensor* c0, const Tensor* P) {
  const int64_t g = k.op == "LSTM" ? 4 : k.op == "GRU" ? 3 : 1, dirs = k.direction == "bidirectional" ? 2 : 1;
  const int64_t T = k.T, B = k.B, I = k.I, H = k.H;
  std::vector<float> y(size_t(T * dirs * B * H), 0.f);
  auto clip = [&](double v) { return k.clip > 0 ? std::clamp(v, -double(k.clip), double(k.clip)) : v; };
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = k.lens.empty() ? T : k.lens[size_t(b)];
      std::vector<double> h(size_t(H), 0.0), c(size_t(H), 0.0);
      const int64_t st = k.batch_first ? (b * dirs + d) * H : (d * B + b) * H;
      for (int64_t j = 0; j < H; ++j) {
        if (h0) h[size_t(j)] = h0->data<float>()[st + j];
        if (c0) c[size_t(j)] = c0->data<float>()[st + j];
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = (k.direction == "reverse" || d == 1) ? len - 1 - step : step;
        const float* x = X.data<float>() + (k.batch_first ? b * T + t : t * B + b) * I;
        // xw[gate row], hr[gate row] with their biases.
        std::vector<double> xw(size_t(g * H), 0.0), hr(size_t(g * H), 0.0);
        for (int64_t r = 0; r < g * H; ++r) {
          double a = Bias.data<float>()[d * 2 * g * H + r], q = Bias.data<float>()[d * 2 * g * H + g * H + r];
          for (int64_t i = 0; i < I; ++i) a += double(W.data<float>()[(d * g * H + r) * I + i]) * x[i];
          for (int64_t j = 0; j < H; ++j) q += double(R.data<float>()[(d * g * H + r) * H + j]) * h[size_t(j)];
          xw[size_t(r)] = a, hr[size_t(r)] = q;
        }
        std::vector<double> hn(size_t(H), 0.0);
        for (int64_t j = 0; j < H; ++j) {
          if (k.op == "RNN") {
            hn[size_t(j)] = act(k.activation.empty() ? "Tanh" : k.activation, clip(xw[size_t(j)] + hr[size_t(j)]));
          } else if (k.op == "GRU") {
            const double z = act("Sigmoid", clip(xw[size_t(j)] + hr[size_t(j)]));
            double pre;
            if (k.lbr) {
              const double r = act("Sigmoid", clip(xw[size_t(H + j)] + hr[size_t(H + j)]));
              pre = xw[size_t(2 * H + j)] + r * hr[size_t(2 * H + j)];
            } else {
              double q = Bias.data<float>()[d * 2 * g * H + g * H + 2 * H + j];
              for (int64_t m = 0; m < H; ++m) {
                const double rm = act("Sigmoid", clip(xw[size_t(H + m)] + hr[size_t(H + m)]));
                q += double(R.data<float>()[(d * g * H + 2 * H + j) * H + m]) * rm * h[size_t(m)];
              }
              pre = xw[size_t(2 * H + j)] + q;
            }
            hn[size_t(j)] = (1 - z) * std::tanh(clip(pre)) + z * h[size_t(j)];
          } else {
            const float* p = P ? P->data<float>() + d * 3 * H : nullptr;
            const double i = act("Sigmoid", clip(xw[size_t(j)] + hr[size_t(j)] + (p ? p[j] * c[size_t(j)] : 0)));
            const double f = act("Sigmoid", clip(xw[size_t(2 * H + j)] + hr[size_t(2 * H + j)] + (p ? p[2 * H + j] * c[size_t(j)] : 0)));
            const double cc = std::tanh(clip(xw[size_t(3 * H + j)] + hr[size_t(3 * H + j)]));
            c[size_t(j)] = f * c[size_t(j)] + i * cc;
            const double o = act("Sigmoid", clip(xw[size_t(H + j)] + hr[size_t(H + j)] + (p ? p[H + j] * c[size_t(j)] : 0)));
            hn[size_t(j)] = o * std::tanh(c[size_t(j)]);
          }
        }
        h = hn;
        const int64_t yat = (k.batch_first ? (b * T + t) * dirs + d : (t * dirs + d) * B + b) * H;
        for (int64_t j = 0; j < H; ++j) y[size_t(yat + j)] = float(h[size_t(j)]);
      }
    }
  return y;
}

void check(const Case& k) {
  const int64_t g = k.op == "LSTM" ? 4 : k.op == "GRU" ? 3 : 1, dirs = k.direction == "bidirectional" ? 2 : 1;
  Tensor X = random_tensor(k.batch_first ? Shape{k.B, k.T, k.I} : Shape{k.T, k.B, k.I}, 1, 1.f);
  Tensor W = random_tensor({dirs, g * k.H, k.I}, 2, 0.5f), R = random_tensor({dirs, g * k.H, k.H}, 3, 0.5f);
  Tensor Bias = random_tensor({dirs, 2 * g * k.H}, 4, 0.3f);
  const Shape state = k.batch_first ? Shape{k.B, dirs, k.H} : Shape{dirs, k.B, k.H};
  Tensor h0 = random_tensor(state, 5, 0.5f), c0 = random_tensor(state, 6, 0.5f), P = random_tensor({dirs, 3 * k.H}, 7, 0.5f);
  Tensor lens(DType::Int32, {k.B});
  for (int64_t b = 0; b < k.B; ++b) lens.data<int32_t>()[b] = int32_t(k.lens.empty() ? k.T : k.lens[size_t(b)]);
  Node n;
  n.name = "rnn";
  n.op_type = k.op;
  n.opset = 14;
  n.outputs = {"y"};
  n.attrs["hidden_size"] = Attribute{k.H};
  n.attrs["direction"] = Attribute{k.direction};
  if (k.batch_first) n.attrs["layout"] = Attribute{int64_t(1)};
  if (k.lbr) n.attrs["linear_before_reset"] = Attribute{int64_t(1)};
  if (k.clip > 0) n.attrs["clip"] = Attribute{k.clip};
  if (!k.activation.empty()) n.attrs["activations"] = Attribute{std::vector<std::string>(size_t(dirs), k.activation)};
  std::vector<const Tensor*> ins = {&X, &W, &R, &Bias, k.lens.empty() ? nullptr : &lens, k.initial ? &h0 : nullptr};
  if (k.op == "LSTM") ins.insert(ins.end(), {k.initial ? &c0 : nullptr, k.peepholes ? &P : nullptr});
  bind_host_kernels();  // the input projection runs on the CPU backend's product
  const Tensor y = evaluate_node(n, ins)[0];
  const std::vector<float> want = expected_y(k, X, W, R, Bias, k.initial ? &h0 : nullptr, k.initial ? &c0 : nullptr,
                                             k.peepholes ? &P : nullptr);
  ASSERT_EQ(y.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y.data<float>()[i], want[i], 2e-5) << "element " << i;
}

TEST(Recurrent, LstmBothDirectionsUnevenLengthsStatesPeepholesAndClip) {
  Case k{"LSTM", "bidirectional"};
  k.B = 5;
  k.lens = {5, 1, 3, 0, 4};
  k.initial = k.peepholes = true;
  k.clip = 1.5f;
  check(k);
  k.batch_first = true;
  check(k);
}

TEST(Recurrent, GruEitherResetOrderInEachDirection) {
  for (bool lbr : {false, true})
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      SCOPED_TRACE(std::string(dir) + (lbr ? " linear_before_reset" : ""));
      Case k{"GRU", dir};
      k.lbr = lbr;
      k.B = 4;
      k.lens = {2, 5, 5, 3};
      k.initial = true;
      check(k);
    }
}

TEST(Recurrent, RnnWithReluAndBatchesSplitIntoGroups) {
  Case k{"RNN", "reverse"};
  k.activation = "Relu";
  k.B = 9;  // more entries than threads: the kernel steps them in groups
  k.T = 7;
  check(k);
  Case lstm{"LSTM", "forward"};
  lstm.B = 9;
  lstm.H = 33;  // not a multiple of the four rows the kernel sums at once
  check(lstm);
}

}  // namespace
}  // namespace fb
