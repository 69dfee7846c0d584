// Recurrent layers: RNN, GRU (linear_before_reset either way) and LSTM (peepholes,
// input_forget), forward, reverse or bidirectional, with sequence_lens, initial states,
// clip, custom activations and the batch-first layout of opset 14.
//
// The input projection X·Wᵀ + Wb of every time step is one matrix product (oneDNN), made
// before the recurrence; then each (direction, batch entry) sequence runs on its own
// thread: per step a matrix-vector product with R over contiguous rows, and the gates.
#include <tbb/parallel_for.h>

#include <cmath>

#include "engine/ops/bound_kernels.h"
#include "engine/ops/fast_math.h"
#include "engine/ops/nn_common.h"

namespace fb {

namespace {

enum class Cell { Rnn, Gru, Lstm };

Cell cell_of(const std::string& op) { return op == "LSTM" ? Cell::Lstm : op == "GRU" ? Cell::Gru : Cell::Rnn; }
int gates_of(Cell c) { return c == Cell::Lstm ? 4 : c == Cell::Gru ? 3 : 1; }

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
                                                 "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  return names;
}

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
  int kind = 0;  // index in activation_names(), resolved once
  float operator()(float x) const {
    switch (kind) {
      case 0: return fast_sigmoid(x);
      case 1: return fast_tanh(x);
      case 2: return std::max(x, 0.f);
      case 3: return alpha * x + beta;
      case 4: return x >= 0 ? x : alpha * x;
      case 5: return x > alpha ? x : 0.f;
      case 6: return alpha * fast_tanh(beta * x);
      case 7: return std::clamp(alpha * x + beta, 0.f, 1.f);
      case 8: return x >= 0 ? x : alpha * (std::exp(x) - 1.f);
      case 9: return x / (1.f + std::fabs(x));
      default: return std::log1p(std::exp(x));  // Softplus
    }
  }
  // x[i] = act(x[i]): the default Sigmoid and Tanh in vector lanes.
  void apply(float* x, int64_t n) const {
    if (kind == 0) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) x[i] = fast_sigmoid(x[i]);
    } else if (kind == 1) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) x[i] = fast_tanh(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) x[i] = (*this)(x[i]);
    }
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
  const std::vector<std::string>& known = activation_names();
  for (size_t i = 0; i < names.size(); ++i) {
    const auto it = std::find(known.begin(), known.end(), names[i]);
    if (it == known.end()) throw Error(n.describe() + ": unsupported activation '" + names[i] + "'");
    Activation a = default_alpha_beta(Activation{names[i]});
    a.kind = int(it - known.begin());
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

// ys[e][k] = bias[k] + Σ_j m[k·n + j] · vs[e][j] for k < rows and each vector: products
// over the contiguous rows of m, four rows at a time so that each load of a vector serves
// four sums; each row is read once for all the vectors.
void matvecs(const float* m, const std::vector<const float*>& vs, const float* bias, int64_t rows, int64_t n,
             const std::vector<float*>& ys) {
  int64_t k = 0;
  for (; k + 4 <= rows; k += 4) {
    const float *r0 = m + k * n, *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
    for (size_t e = 0; e < vs.size(); ++e) {
      const float* v = vs[e];
      float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
      for (int64_t j = 0; j < n; ++j) {
        a0 += r0[j] * v[j];
        a1 += r1[j] * v[j];
        a2 += r2[j] * v[j];
        a3 += r3[j] * v[j];
      }
      float* y = ys[e] + k;
      y[0] = a0 + (bias ? bias[k] : 0.f);
      y[1] = a1 + (bias ? bias[k + 1] : 0.f);
      y[2] = a2 + (bias ? bias[k + 2] : 0.f);
      y[3] = a3 + (bias ? bias[k + 3] : 0.f);
    }
  }
  for (; k < rows; ++k)
    for (size_t e = 0; e < vs.size(); ++e) {
      const float* row = m + k * n;
      const float* v = vs[e];
      float acc = 0.f;
#pragma omp simd reduction(+ : acc)
      for (int64_t j = 0; j < n; ++j) acc += row[j] * v[j];
      ys[e][k] = acc + (bias ? bias[k] : 0.f);
    }
}

void compute_rnn(OpContext& c) {
  ValueInfo xi{c.in(0).dtype(), c.in(0).shape(), true}, wi{c.in(1).dtype(), c.in(1).shape(), true},
      ri{c.in(2).dtype(), c.in(2).shape(), true};
  RnnSpec s = rnn_spec(c.node, xi, wi, ri);
  const int64_t g = gates_of(s.cell), H = s.hidden, B = s.batch, I = s.input, T = s.seq;
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
  // Row of X (and of the projection) for time t, batch entry b; offsets of Y and the states.
  auto x_row = [&](int64_t t, int64_t b) { return s.batch_first ? b * T + t : t * B + b; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return (s.batch_first ? ((b * T + t) * s.dirs + d) : ((t * s.dirs + d) * B + b)) * H;
  };
  auto st_at = [&](int64_t d, int64_t b) { return (s.batch_first ? b * s.dirs + d : d * B + b) * H; };
  auto clipped = [&](float v) { return clip > 0 ? std::clamp(v, -clip, clip) : v; };
  // xw[d] = X·W[d]ᵀ + Wb[d]: [T·B, g·H] per direction, before any step.
  std::vector<Tensor> xw;
  for (int64_t d = 0; d < s.dirs; ++d) {
    MatMulSpec spec;
    spec.a = {T * B, I};
    spec.b = {g * H, I};
    spec.trans_b = true;
    spec.has_bias = Bias != nullptr;
    xw.push_back(Tensor::empty(DType::Float32, {T * B, g * H}));
    if (T * B > 0) float_matmul(c.node, spec, c.in(0).data<float>(), W + d * g * H * I, Bias ? Bias + d * 2 * g * H : nullptr, xw.back().data<float>());
  }
  const size_t per_dir = s.cell == Cell::Lstm ? 3 : s.cell == Cell::Gru ? 2 : 1;
  // Tasks: each direction's batch in groups, at least as many tasks as threads where the
  // batch allows. A group's entries step together, so R is read once per step for all.
  const int64_t threads = tbb::this_task_arena::max_concurrency();
  const int64_t groups = std::clamp<int64_t>((threads + s.dirs - 1) / s.dirs, 1, std::max<int64_t>(B, 1));
  const int64_t per_group = (B + groups - 1) / groups;
  tbb::parallel_for(int64_t(0), s.dirs * groups, [&](int64_t task) {
    const int64_t d = task / groups, b0 = task % groups * per_group, b1 = std::min(B, b0 + per_group);
    if (b0 >= b1) return;
    const int64_t nb = b1 - b0;
    const bool reverse = s.direction == "reverse" || d == 1;
    const float* Rd = R + d * g * H * H;
    const float* Rb = Bias ? Bias + d * 2 * g * H + g * H : nullptr;
    const float* Pd = P ? P + d * 3 * H : nullptr;
    const Activation& f = s.acts[d * per_dir];
    const Activation& gact = s.acts[d * per_dir + (per_dir > 1 ? 1 : 0)];
    const Activation& h_act = s.acts[d * per_dir + (per_dir > 2 ? 2 : 0)];
    // Per entry of the group: h, c, R·h (g·H) and, for a GRU, r ⊙ h.
    std::vector<float> h(size_t(nb * H), 0.f), cst(size_t(nb * H), 0.f), hr(size_t(nb * g * H), 0.f), rh(size_t(nb * H), 0.f);
    int64_t longest = 0;
    for (int64_t e = 0; e < nb; ++e) {
      if (c.has_input(5)) std::copy_n(c.in(5).data<float>() + st_at(d, b0 + e), H, h.data() + e * H);
      if (s.cell == Cell::Lstm && c.has_input(6)) std::copy_n(c.in(6).data<float>() + st_at(d, b0 + e), H, cst.data() + e * H);
      longest = std::max(longest, lens[size_t(b0 + e)]);
    }
    // A GRU without linear_before_reset multiplies h by the reset gate before R_h.
    const bool gru_reset_first = s.cell == Cell::Gru && !lbr;
    std::vector<const float*> hs, rhs;
    std::vector<float*> outs, hh_outs;
    std::vector<int64_t> active;
    for (int64_t step = 0; step < longest; ++step) {
      active.clear(), hs.clear(), outs.clear();
      for (int64_t e = 0; e < nb; ++e)
        if (step < lens[size_t(b0 + e)]) {
          active.push_back(e);
          hs.push_back(h.data() + e * H);
          outs.push_back(hr.data() + e * g * H);
        }
      matvecs(Rd, hs, Rb, gru_reset_first ? 2 * H : g * H, H, outs);
      if (gru_reset_first) {  // z and r first, then (r ⊙ h)·R_hᵀ + Rb_h
        rhs.clear(), hh_outs.clear();
        for (int64_t e : active) {
          const int64_t b = b0 + e, t = reverse ? lens[size_t(b)] - 1 - step : step;
          const float* xw_t = xw[size_t(d)].data<float>() + x_row(t, b) * g * H;
          float* z = hr.data() + e * g * H;
          float* rg = z + H;
          const float* hb = h.data() + e * H;
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(clipped(xw_t[j] + z[j]));
            rg[j] = f(clipped(xw_t[H + j] + rg[j]));
            rh[size_t(e * H + j)] = rg[j] * hb[j];
          }
          rhs.push_back(rh.data() + e * H);
          hh_outs.push_back(z + 2 * H);
        }
        matvecs(Rd + 2 * H * H, rhs, Rb ? Rb + 2 * H : nullptr, H, H, hh_outs);
      }
      for (int64_t e : active) {
        const int64_t b = b0 + e, t = reverse ? lens[size_t(b)] - 1 - step : step;
        const float* xw_t = xw[size_t(d)].data<float>() + x_row(t, b) * g * H;
        float* hb = h.data() + e * H;
        float* cb = cst.data() + e * H;
        float* r_h = hr.data() + e * g * H;
        if (s.cell == Cell::Rnn) {
          for (int64_t j = 0; j < H; ++j) hb[j] = f(clipped(xw_t[j] + r_h[j]));
        } else if (s.cell == Cell::Gru) {  // gates z, r, h
          float* z = r_h;
          float* rg = r_h + H;
          const float* hh = r_h + 2 * H;
          if (gru_reset_first) {
            for (int64_t j = 0; j < H; ++j) hb[j] = (1.f - z[j]) * gact(clipped(xw_t[2 * H + j] + hh[j])) + z[j] * hb[j];
          } else {
            for (int64_t j = 0; j < H; ++j) {
              const float zj = f(clipped(xw_t[j] + z[j])), rj = f(clipped(xw_t[H + j] + rg[j]));
              hb[j] = (1.f - zj) * gact(clipped(xw_t[2 * H + j] + rj * hh[j])) + zj * hb[j];
            }
          }
        } else {  // LSTM gates i, o, f, c: pre-activations in place of R·h, then each activation over its gate
          float* ig = r_h;
          float* og = r_h + H;
          float* fg = r_h + 2 * H;
          float* cc = r_h + 3 * H;
          for (int64_t j = 0; j < H; ++j) {
            ig[j] = clipped(xw_t[j] + ig[j] + (Pd ? Pd[j] * cb[j] : 0.f));
            fg[j] = clipped(xw_t[2 * H + j] + fg[j] + (Pd ? Pd[2 * H + j] * cb[j] : 0.f));
            cc[j] = clipped(xw_t[3 * H + j] + cc[j]);
          }
          f.apply(ig, H);
          f.apply(fg, H);
          gact.apply(cc, H);
          for (int64_t j = 0; j < H; ++j) {
            cb[j] = fg[j] * cb[j] + ig[j] * cc[j];
            og[j] = clipped(xw_t[H + j] + og[j] + (Pd ? Pd[H + j] * cb[j] : 0.f));
          }
          f.apply(og, H);
          float* hc = rh.data() + e * H;
          std::copy_n(cb, H, hc);
          h_act.apply(hc, H);
          for (int64_t j = 0; j < H; ++j) hb[j] = og[j] * hc[j];
        }
        if (Y) std::copy(hb, hb + H, Y + y_at(t, d, b));
      }
    }
    for (int64_t e = 0; e < nb; ++e) {
      if (Yh) std::copy_n(h.data() + e * H, H, Yh + st_at(d, b0 + e));
      if (Yc) std::copy_n(cst.data() + e * H, H, Yc + st_at(d, b0 + e));
    }
  });
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) r.add(OpDef{"", op, infer_rnn, compute_rnn});
}

}  // namespace fb
