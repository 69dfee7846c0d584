// Recurrent layers: RNN, GRU (linear_before_reset either way) and LSTM (peepholes,
// input_forget), forward, reverse or bidirectional, with sequence_lens, initial states,
// clip, custom activations and the batch-first layout of opset 14.
#include <cmath>

#include "engine/ops/nn_common.h"

namespace fb {

namespace {

enum class Cell { Rnn, Gru, Lstm };

Cell cell_of(const std::string& op) { return op == "LSTM" ? Cell::Lstm : op == "GRU" ? Cell::Gru : Cell::Rnn; }
int gates_of(Cell c) { return c == Cell::Lstm ? 4 : c == Cell::Gru ? 3 : 1; }

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
  float operator()(float x) const {
    if (name == "Sigmoid") return 1.f / (1.f + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(x, 0.f);
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0.f;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.f, 1.f);
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.f);
    if (name == "Softsign") return x / (1.f + std::fabs(x));
    return std::log1p(std::exp(x));  // Softplus
  }
};

struct RnnSpec {
  Cell cell;
  int64_t seq, batch, input, hidden, dirs;
  bool batch_first;
  std::string direction;
  std::vector<Activation> acts;  // per direction: 1 (RNN), 2 (GRU) or 3 (LSTM)
};

Activation default_alpha_beta(Activation a) {
  if (a.name == "LeakyRelu") a.alpha = 0.01f;
  else if (a.name == "ThresholdedRelu" || a.name == "Elu") a.alpha = 1.f;
  else if (a.name == "HardSigmoid") a.alpha = 0.2f, a.beta = 0.5f;
  else if (a.name == "Affine" || a.name == "ScaledTanh") a.alpha = 1.f, a.beta = a.name == "Affine" ? 0.f : 1.f;
  return a;
}

RnnSpec rnn_spec(const Node& n, const ValueInfo& x, const ValueInfo& w, const ValueInfo& r) {
  RnnSpec s;
  s.cell = cell_of(n.op_type);
  require_float(n, x.dtype, "input X");
  if (x.shape.size() != 3 || w.shape.size() != 3 || r.shape.size() != 3)
    throw Error(n.describe() + ": X, W and R must be 3-D");
  s.batch_first = n.attr_int("layout", 0) != 0;
  s.seq = s.batch_first ? x.shape[1] : x.shape[0];
  s.batch = s.batch_first ? x.shape[0] : x.shape[1];
  s.input = x.shape[2];
  s.direction = n.attr_string("direction", "forward");
  if (s.direction != "forward" && s.direction != "reverse" && s.direction != "bidirectional")
    throw Error(n.describe() + ": unsupported direction '" + s.direction + "'");
  s.dirs = s.direction == "bidirectional" ? 2 : 1;
  const int g = gates_of(s.cell);
  s.hidden = n.attr_int("hidden_size", r.shape[2]);
  if (w.shape != Shape{s.dirs, g * s.hidden, s.input} || r.shape != Shape{s.dirs, g * s.hidden, s.hidden})
    throw Error(n.describe() + ": W " + shape_str(w.shape) + " or R " + shape_str(r.shape) + " does not fit hidden_size " +
                std::to_string(s.hidden) + " and input size " + std::to_string(s.input));
  if (s.cell == Cell::Lstm && n.attr_int("input_forget", 0) != 0)
    throw Error(n.describe() + ": input_forget=1 is unsupported");
  std::vector<std::string> names;
  if (auto it = n.attrs.find("activations"); it != n.attrs.end()) {
    const auto* v = std::get_if<std::vector<std::string>>(&it->second.value);
    if (!v) throw Error(n.describe() + ": attribute 'activations' must be a list of strings");
    names = *v;
  }
  const size_t per_dir = s.cell == Cell::Lstm ? 3 : s.cell == Cell::Gru ? 2 : 1;
  if (names.empty()) {
    for (int64_t d = 0; d < s.dirs; ++d) {
      if (s.cell == Cell::Rnn) names.push_back("Tanh");
      else if (s.cell == Cell::Gru) names.insert(names.end(), {"Sigmoid", "Tanh"});
      else names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
    }
  }
  if (names.size() != per_dir * size_t(s.dirs))
    throw Error(n.describe() + ": expected " + std::to_string(per_dir * s.dirs) + " activations, got " + std::to_string(names.size()));
  std::vector<float> alpha = n.attr_floats("activation_alpha"), beta = n.attr_floats("activation_beta");
  static const std::vector<std::string> known = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
                                                 "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(known.begin(), known.end(), names[i]) == known.end())
      throw Error(n.describe() + ": unsupported activation '" + names[i] + "'");
    Activation a = default_alpha_beta(Activation{names[i]});
    if (i < alpha.size()) a.alpha = alpha[i];
    if (i < beta.size()) a.beta = beta[i];
    s.acts.push_back(a);
  }
  return s;
}

std::vector<ValueInfo> infer_rnn(const ShapeContext& c) {
  RnnSpec s = rnn_spec(c.node, c.in(0), c.in(1), c.in(2));
  const int g = gates_of(s.cell);
  if (c.has_input(3) && c.in(3).shape != Shape{s.dirs, 2 * g * s.hidden})
    throw Error(c.node.describe() + ": B " + shape_str(c.in(3).shape) + " must be [" + std::to_string(s.dirs) + "," +
                std::to_string(2 * g * s.hidden) + "]");
  const Shape state = s.batch_first ? Shape{s.batch, s.dirs, s.hidden} : Shape{s.dirs, s.batch, s.hidden};
  if (c.has_input(4) && shape_numel(c.in(4).shape) != s.batch) throw Error(c.node.describe() + ": sequence_lens must be [batch]");
  if (c.has_input(5) && c.in(5).shape != state) throw Error(c.node.describe() + ": initial_h must be " + shape_str(state));
  if (s.cell == Cell::Lstm && c.has_input(6) && c.in(6).shape != state)
    throw Error(c.node.describe() + ": initial_c must be " + shape_str(state));
  if (s.cell == Cell::Lstm && c.has_input(7) && c.in(7).shape != Shape{s.dirs, 3 * s.hidden})
    throw Error(c.node.describe() + ": P must be [" + std::to_string(s.dirs) + "," + std::to_string(3 * s.hidden) + "]");
  const Shape y = s.batch_first ? Shape{s.batch, s.seq, s.dirs, s.hidden} : Shape{s.seq, s.dirs, s.batch, s.hidden};
  std::vector<ValueInfo> r{ValueInfo{DType::Float32, y, true}, ValueInfo{DType::Float32, state, true}};
  if (s.cell == Cell::Lstm) r.push_back(ValueInfo{DType::Float32, state, true});
  return r;
}

void compute_rnn(OpContext& c) {
  ValueInfo xi{c.in(0).dtype(), c.in(0).shape(), true}, wi{c.in(1).dtype(), c.in(1).shape(), true},
      ri{c.in(2).dtype(), c.in(2).shape(), true};
  RnnSpec s = rnn_spec(c.node, xi, wi, ri);
  const int64_t g = gates_of(s.cell), H = s.hidden, B = s.batch, I = s.input, T = s.seq;
  const float* X = c.in(0).data<float>();
  const float* W = c.in(1).data<float>();
  const float* R = c.in(2).data<float>();
  const float* Bias = c.has_input(3) ? c.in(3).data<float>() : nullptr;
  std::vector<int64_t> lens = c.has_input(4) ? c.in(4).as_int64_vector() : std::vector<int64_t>(size_t(B), T);
  for (int64_t l : lens)
    if (l < 0 || l > T) throw Error("sequence_lens entry " + std::to_string(l) + " is out of range [0, " + std::to_string(T) + "]");
  const float* P = s.cell == Cell::Lstm && c.has_input(7) ? c.in(7).data<float>() : nullptr;
  const float clip = c.node.attr_float("clip", 0.f);
  const bool lbr = c.node.attr_int("linear_before_reset", 0) != 0;
  auto out_or_null = [&](size_t i) -> float* { return c.outputs.size() > i && c.outputs[i] ? c.out(i).data<float>() : nullptr; };
  float* Y = out_or_null(0);
  float* Yh = out_or_null(1);
  float* Yc = s.cell == Cell::Lstm ? out_or_null(2) : nullptr;
  if (Y) std::fill(Y, Y + c.out(0).numel(), 0.f);
  // Element offsets in the layouts of X, Y and the states.
  auto x_at = [&](int64_t t, int64_t b) { return (s.batch_first ? b * T + t : t * B + b) * I; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return (s.batch_first ? ((b * T + t) * s.dirs + d) : ((t * s.dirs + d) * B + b)) * H;
  };
  auto st_at = [&](int64_t d, int64_t b) { return (s.batch_first ? b * s.dirs + d : d * B + b) * H; };
  auto clipped = [&](float v) { return clip > 0 ? std::clamp(v, -clip, clip) : v; };
  for (int64_t d = 0; d < s.dirs; ++d) {
    const bool reverse = s.direction == "reverse" || d == 1;
    const float* Wd = W + d * g * H * I;
    const float* Rd = R + d * g * H * H;
    const float* Wb = Bias ? Bias + d * 2 * g * H : nullptr;
    const float* Rb = Bias ? Wb + g * H : nullptr;
    const float* Pd = P ? P + d * 3 * H : nullptr;
    const size_t per_dir = s.cell == Cell::Lstm ? 3 : s.cell == Cell::Gru ? 2 : 1;
    const Activation& f = s.acts[d * per_dir];
    const Activation& gact = s.acts[d * per_dir + (per_dir > 1 ? 1 : 0)];
    const Activation& h_act = s.acts[d * per_dir + (per_dir > 2 ? 2 : 0)];
    std::vector<float> h(size_t(B * H), 0.f), cst(size_t(B * H), 0.f), xw(size_t(g * H)), hr(size_t(g * H));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) {
        if (c.has_input(5)) h[b * H + j] = c.in(5).data<float>()[st_at(d, b) + j];
        if (s.cell == Cell::Lstm && c.has_input(6)) cst[b * H + j] = c.in(6).data<float>()[st_at(d, b) + j];
      }
    for (int64_t b = 0; b < B; ++b) {
      float* hb = h.data() + b * H;
      float* cb = cst.data() + b * H;
      for (int64_t step = 0; step < lens[b]; ++step) {
        const int64_t t = reverse ? lens[b] - 1 - step : step;
        const float* xt = X + x_at(t, b);
        for (int64_t k = 0; k < g * H; ++k) {
          double a = Wb ? Wb[k] : 0.f, r = Rb ? Rb[k] : 0.f;
          for (int64_t i = 0; i < I; ++i) a += double(Wd[k * I + i]) * xt[i];
          for (int64_t j = 0; j < H; ++j) r += double(Rd[k * H + j]) * hb[j];
          xw[k] = float(a);
          hr[k] = float(r);
        }
        if (s.cell == Cell::Rnn) {
          for (int64_t j = 0; j < H; ++j) hb[j] = f(clipped(xw[j] + hr[j]));
        } else if (s.cell == Cell::Gru) {  // gates z, r, h
          std::vector<float> z(static_cast<size_t>(H)), rg(static_cast<size_t>(H)), hn(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(clipped(xw[j] + hr[j]));
            rg[j] = f(clipped(xw[H + j] + hr[H + j]));
          }
          for (int64_t j = 0; j < H; ++j) {
            float pre;
            if (lbr) pre = xw[2 * H + j] + rg[j] * hr[2 * H + j];
            else {  // (r * h) R_h + Rb_h
              double acc = Rb ? Rb[2 * H + j] : 0.f;
              for (int64_t m = 0; m < H; ++m) acc += double(Rd[(2 * H + j) * H + m]) * rg[m] * hb[m];
              pre = xw[2 * H + j] + float(acc);
            }
            hn[j] = (1.f - z[j]) * gact(clipped(pre)) + z[j] * hb[j];
          }
          std::copy(hn.begin(), hn.end(), hb);
        } else {  // LSTM gates i, o, f, c
          for (int64_t j = 0; j < H; ++j) {
            const float ig = f(clipped(xw[j] + hr[j] + (Pd ? Pd[j] * cb[j] : 0.f)));
            const float fg = f(clipped(xw[2 * H + j] + hr[2 * H + j] + (Pd ? Pd[2 * H + j] * cb[j] : 0.f)));
            const float cc = gact(clipped(xw[3 * H + j] + hr[3 * H + j]));
            cb[j] = fg * cb[j] + ig * cc;
            const float og = f(clipped(xw[H + j] + hr[H + j] + (Pd ? Pd[H + j] * cb[j] : 0.f)));
            hb[j] = og * h_act(cb[j]);
          }
        }
        if (Y) std::copy(hb, hb + H, Y + y_at(t, d, b));
      }
      if (Yh) std::copy(hb, hb + H, Yh + st_at(d, b));
      if (Yc) std::copy(cb, cb + H, Yc + st_at(d, b));
    }
  }
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) r.add(OpDef{"", op, infer_rnn, compute_rnn});
}

}  // namespace fb
