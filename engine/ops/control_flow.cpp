// If and Loop. Their subgraphs run eagerly, node by node, on the op table's kernels, the
// way the reference executor runs the main graph. Outer-scope values a subgraph reads
// arrive as the node's extra inputs, named in its "fusebench.captures" attribute (the
// importer adds them), so nested subgraphs see every enclosing scope.
#include <algorithm>
#include <cstring>

#include "engine/ops/subgraph.h"
#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

void set_output(OpContext& c, size_t i, const Tensor& v) {
  if (i >= c.outputs.size() || !c.outputs[i]) return;
  Tensor& out = c.out(i);
  if (!out.defined()) {
    out = v;
    return;
  }
  if (out.dtype() != v.dtype() || out.shape() != v.shape())
    throw Error("output " + std::to_string(i) + " is " + dtype_name(v.dtype()) + shape_str(v.shape()) + ", planned as " +
                dtype_name(out.dtype()) + shape_str(out.shape()));
  if (v.nbytes()) std::memcpy(out.raw(), v.raw(), v.nbytes());
}

// ---- If -------------------------------------------------------------------------------------
// Output shapes are static only when both branches declare the same full shape.
std::vector<ValueInfo> infer_if(const ShapeContext& c) {
  const Graph &then_g = subgraph_attr(c.node, "then_branch"), &else_g = subgraph_attr(c.node, "else_branch");
  if (then_g.outputs.size() != else_g.outputs.size()) throw Error("the branches have different output counts");
  std::vector<ValueInfo> r;
  for (size_t i = 0; i < then_g.outputs.size(); ++i) {
    ValueInfo a = then_g.value(then_g.outputs[i]);
    const ValueInfo& b = else_g.value(else_g.outputs[i]);
    if (!(a.shape_known && b.shape_known && a.shape == b.shape)) a = ValueInfo{a.dtype != DType::Undefined ? a.dtype : b.dtype, {}, false};
    r.push_back(a);
  }
  return r;
}

void compute_if(OpContext& c) {
  const bool cond = c.in(0).scalar_as_double() != 0.0;
  const Graph& g = subgraph_attr(c.node, cond ? "then_branch" : "else_branch");
  std::vector<Tensor> outs = run_subgraph(c, g, captured_values(c));
  for (size_t i = 0; i < outs.size(); ++i) set_output(c, i, outs[i]);
}

// ---- Loop: inputs (M, cond, v_initial...), body (iter, cond, v...) -> (cond, v..., scans...) ----
std::vector<ValueInfo> infer_loop(const ShapeContext& c) {
  const Graph& body = subgraph_attr(c.node, "body");
  const size_t n_in = explicit_input_count(c.node);
  if (n_in < 2) throw Error("Loop needs the inputs M and cond (either may be empty)");
  const size_t carried = n_in - 2;
  if (body.inputs.size() != carried + 2 || body.outputs.size() < carried + 1)
    throw Error("the body's inputs and outputs do not match the loop-carried values");
  std::vector<ValueInfo> r;
  for (size_t i = 0; i < carried; ++i) r.push_back(ValueInfo{c.in(2 + i).dtype, {}, false});
  for (size_t i = carried + 1; i < body.outputs.size(); ++i) r.push_back(ValueInfo{body.value(body.outputs[i]).dtype, {}, false});
  return r;
}

// A tensor of `dtype` and `shape` holding the pieces' bytes one after another: pieces
// stacked or concatenated along the leading axis.
Tensor back_to_back(DType dtype, const Shape& shape, const std::vector<Tensor>& pieces) {
  Tensor out = Tensor::empty(dtype, shape);
  size_t off = 0;
  for (const Tensor& p : pieces) {
    if (p.nbytes()) std::memcpy(static_cast<std::byte*>(out.raw()) + off, p.raw(), p.nbytes());
    off += p.nbytes();
  }
  return out;
}

// A loop-carried value the body only appends to: v_out = Concat(v_in, x..., axis=0), with
// v_in read by nothing else and v_out by nothing but the body's outputs. A torch.cat in a
// scripted loop exports as this (torchvision's Mask R-CNN pastes its masks so); run as
// written it copies the whole value every iteration, a cost quadratic in the trip count.
// Such a value keeps its pieces instead and is concatenated once, after the last trip.
// Returns, per carried value, the index of its appending Concat in the body, or -1.
std::vector<int> appending_concats(const Graph& body, size_t carried, const std::vector<Tensor>& initial) {
  std::map<std::string, int> reads;  // value name -> how many node inputs and body outputs read it
  for (const Node& n : body.nodes)
    for (const std::string& in : n.inputs) ++reads[in];
  for (const std::string& o : body.outputs) ++reads[o];
  std::vector<int> r(carried, -1);
  for (size_t i = 0; i < carried; ++i) {
    const std::string& v_in = body.inputs[2 + i].name;
    const std::string& v_out = body.outputs[1 + i];
    if (initial[i].rank() == 0 || reads[v_in] != 1 || reads[v_out] != 1) continue;
    for (size_t k = 0; k < body.nodes.size(); ++k) {
      const Node& n = body.nodes[k];
      if (n.outputs.size() != 1 || n.outputs[0] != v_out) continue;
      if (n.domain.empty() && n.op_type == "Concat" && n.attr_int("axis", 1) == 0 && n.inputs.size() >= 2 && n.inputs[0] == v_in)
        r[i] = int(k);
      break;
    }
  }
  return r;
}

// The pieces of an appended value, concatenated along axis 0; an Error naming the Concat
// where a piece's dtype or trailing dimensions differ from the first's, as Concat would.
Tensor concatenate_rows(const Node& concat, const std::vector<Tensor>& pieces) {
  const Tensor& first = pieces[0];
  Shape s = first.shape();
  for (size_t k = 1; k < pieces.size(); ++k) {
    const Tensor& p = pieces[k];
    if (p.dtype() != first.dtype() || p.rank() != first.rank() || !std::equal(s.begin() + 1, s.end(), p.shape().begin() + 1))
      throw Error(concat.describe() + ": cannot append " + dtype_name(p.dtype()) + shape_str(p.shape()) + " to the loop-carried " +
                  dtype_name(first.dtype()) + shape_str(first.shape()) + " along axis 0");
    s[0] += p.shape()[0];
  }
  return back_to_back(first.dtype(), s, pieces);
}

void compute_loop(OpContext& c) {
  const Graph& body = subgraph_attr(c.node, "body");
  const size_t carried = explicit_input_count(c.node) - 2;
  const int64_t max_trips = c.has_input(0) ? int64_t(c.in(0).scalar_as_double()) : INT64_MAX;
  bool cond = c.has_input(1) ? c.in(1).scalar_as_double() != 0.0 : true;
  std::vector<Tensor> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(c.in(2 + i));
  const std::vector<int> appended_by = appending_concats(body, carried, state);
  std::vector<bool> skip(body.nodes.size(), false);
  std::vector<std::vector<Tensor>> pieces(carried);
  for (size_t i = 0; i < carried; ++i)
    if (appended_by[i] >= 0) skip[size_t(appended_by[i])] = true, pieces[i].push_back(state[i]);
  const size_t n_scans = body.outputs.size() - 1 - carried;
  std::vector<std::vector<Tensor>> scans(n_scans);
  const std::map<std::string, Tensor> outer = captured_values(c);
  int64_t iter = 0;
  for (; iter < max_trips && cond; ++iter) {
    std::map<std::string, Tensor> env = outer;
    Tensor it_t(DType::Int64, {});
    it_t.data<int64_t>()[0] = iter;
    Tensor cond_t(DType::Bool, {});
    cond_t.data<bool>()[0] = cond;
    env[body.inputs[0].name] = it_t;
    env[body.inputs[1].name] = cond_t;
    for (size_t i = 0; i < carried; ++i)
      if (appended_by[i] < 0) env[body.inputs[2 + i].name] = state[i];
    run_nodes(c, body, env, skip);
    cond = subgraph_value(env, body.outputs[0]).scalar_as_double() != 0.0;
    for (size_t i = 0; i < carried; ++i) {
      if (appended_by[i] < 0) {
        state[i] = subgraph_value(env, body.outputs[1 + i]);
        continue;
      }
      const Node& concat = body.nodes[size_t(appended_by[i])];
      for (size_t k = 1; k < concat.inputs.size(); ++k) pieces[i].push_back(subgraph_value(env, concat.inputs[k]));
    }
    for (size_t k = 0; k < n_scans; ++k) {
      const Tensor& s = subgraph_value(env, body.outputs[1 + carried + k]);
      if (!scans[k].empty() && (s.shape() != scans[k][0].shape() || s.dtype() != scans[k][0].dtype()))
        throw Error("scan output " + std::to_string(k) + " changes shape between iterations");
      scans[k].push_back(s);
    }
    if (iter > (int64_t(1) << 32)) throw Error("Loop ran more than 2^32 iterations");
  }
  for (size_t i = 0; i < carried; ++i)
    set_output(c, i, appended_by[i] < 0 ? state[i] : concatenate_rows(body.nodes[size_t(appended_by[i])], pieces[i]));
  for (size_t k = 0; k < n_scans; ++k) {
    // Per-iteration values stacked along a new leading axis.
    Shape s{int64_t(scans[k].size())};
    DType dt = body.value(body.outputs[1 + carried + k]).dtype;
    if (!scans[k].empty()) {
      s.insert(s.end(), scans[k][0].shape().begin(), scans[k][0].shape().end());
      dt = scans[k][0].dtype();
    }
    set_output(c, carried + k, back_to_back(dt, s, scans[k]));
  }
}

}  // namespace

void register_control_flow_ops(OpRegistry& r) {
  r.add(OpDef{"", "If", infer_if, compute_if});
  r.add(OpDef{"", "Loop", infer_loop, compute_loop});
}

}  // namespace fb
