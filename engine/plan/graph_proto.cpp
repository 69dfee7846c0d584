#include "engine/plan/graph_proto.h"

#include <set>

#include "engine/config/build_config.h"
#include "engine/onnx/onnx_import.h"

namespace fb {

namespace {

const std::string kSourcesAttr = "fusebench.plan.sources";
const std::string kOpsetAttr = "fusebench.plan.opset";
const std::string kPrecisionAttr = "fusebench.plan.precision";  // "bf16: constraint 'Softmax'"
const std::string kOnHostAttr = "fusebench.plan.on_host";        // 1: a device build's CPU fallback (absent: 0)
const std::string kOpsetDoc = "fusebench.opset=";
const std::string kShapeKnownDoc = "shape_known";

// ---- writing ----

void write_type(onnx::TypeProto* tp, DType dtype, const Shape& dims, bool with_shape) {
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(dtype));
  if (!with_shape) return;
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

onnx::AttributeProto attribute_to_proto(const std::string& name, const Attribute& a) {
  onnx::AttributeProto p;
  p.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          p.set_type(onnx::AttributeProto::INT);
          p.set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          p.set_type(onnx::AttributeProto::FLOAT);
          p.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          p.set_type(onnx::AttributeProto::STRING);
          p.set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          p.set_type(onnx::AttributeProto::INTS);
          for (int64_t x : v) p.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          p.set_type(onnx::AttributeProto::FLOATS);
          for (float x : v) p.add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          p.set_type(onnx::AttributeProto::STRINGS);
          for (const std::string& x : v) p.add_strings(x);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          p.set_type(onnx::AttributeProto::TENSOR);
          if (v.defined()) *p.mutable_t() = tensor_to_proto(v, "");
        } else {
          p.set_type(onnx::AttributeProto::GRAPH);
          *p.mutable_g() = graph_to_proto(*v);
        }
      },
      a.value);
  return p;
}

// ---- reading ----

DType read_dtype(int32_t code, const std::string& where) {
  const DType t = static_cast<DType>(code);
  if (t == DType::Undefined || t == DType::String || dtype_size(t) != 0) return t;
  throw Error(where + ": unknown element type " + std::to_string(code));
}

// Only what graph_to_proto writes: raw_data of exactly the declared size, checked before
// anything is allocated, so a hostile size never turns into a huge allocation.
Tensor read_tensor(const onnx::TensorProto& t, const std::string& where) {
  if (t.data_type() == 0 && t.dims_size() == 0 && !t.has_raw_data()) return Tensor{};
  const DType dt = read_dtype(t.data_type(), where);
  if (dtype_size(dt) == 0) throw Error(where + ": tensor of element type " + dtype_name(dt) + " cannot be held");
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL || !t.has_raw_data())
    throw Error(where + ": tensor data is not stored inline");
  uint64_t bytes = dtype_size(dt);
  for (int64_t d : t.dims()) {
    if (d < 0) throw Error(where + ": negative tensor dimension");
    if (d != 0 && bytes > t.raw_data().size() / uint64_t(d)) throw Error(where + ": tensor larger than its data");
    bytes *= uint64_t(d);
  }
  if (bytes != t.raw_data().size())
    throw Error(where + ": tensor holds " + std::to_string(t.raw_data().size()) + " bytes, its shape needs " +
                std::to_string(bytes));
  return tensor_from_proto(t, "");
}

Shape read_dims(const onnx::TypeProto& tp) {
  Shape s;
  for (const auto& d : tp.tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return s;
}

Attribute attribute_from_proto(const onnx::AttributeProto& p, const std::string& where) {
  Attribute a;
  switch (p.type()) {
    case onnx::AttributeProto::INT: a.value = int64_t(p.i()); break;
    case onnx::AttributeProto::FLOAT: a.value = p.f(); break;
    case onnx::AttributeProto::STRING: a.value = p.s(); break;
    case onnx::AttributeProto::INTS: a.value = std::vector<int64_t>(p.ints().begin(), p.ints().end()); break;
    case onnx::AttributeProto::FLOATS: a.value = std::vector<float>(p.floats().begin(), p.floats().end()); break;
    case onnx::AttributeProto::STRINGS: a.value = std::vector<std::string>(p.strings().begin(), p.strings().end()); break;
    case onnx::AttributeProto::TENSOR: a.value = p.has_t() ? read_tensor(p.t(), where) : Tensor{}; break;
    case onnx::AttributeProto::GRAPH: a.value = std::make_shared<const Graph>(graph_from_proto(p.g(), where)); break;
    default: throw Error(where + ": attribute type " + std::to_string(int(p.type())) + " is not one a plan holds");
  }
  return a;
}

Node node_from_proto(const onnx::NodeProto& np, const std::string& where_graph) {
  Node n;
  n.name = np.name();
  n.op_type = np.op_type();
  n.domain = np.domain();
  n.inputs.assign(np.input().begin(), np.input().end());
  n.outputs.assign(np.output().begin(), np.output().end());
  const std::string where = where_graph + ": " + n.describe();
  bool have_sources = false, have_opset = false;
  for (const auto& ap : np.attribute()) {
    const std::string what = where + " attribute '" + ap.name() + "'";
    if (ap.name() == kSourcesAttr && ap.type() == onnx::AttributeProto::STRINGS) {
      n.sources.assign(ap.strings().begin(), ap.strings().end());
      have_sources = true;
    } else if (ap.name() == kOpsetAttr && ap.type() == onnx::AttributeProto::INT) {
      n.opset = ap.i();
      have_opset = true;
    } else if (ap.name() == kPrecisionAttr && ap.type() == onnx::AttributeProto::STRING) {
      const std::string& s = ap.s();
      const size_t colon = s.find(": ");
      try {
        n.precision = parse_precision(s.substr(0, colon));
      } catch (const Error& e) {
        throw Error(what + ": " + e.what());
      }
      n.precision_reason = colon == std::string::npos ? "" : s.substr(colon + 2);
    } else if (ap.name() == kOnHostAttr && ap.type() == onnx::AttributeProto::INT) {
      n.on_host = ap.i() != 0;
    } else if (!n.attrs.emplace(ap.name(), attribute_from_proto(ap, what)).second) {
      throw Error(what + " appears twice");
    }
  }
  if (!have_sources || !have_opset) throw Error(where + ": lacks its sources or opset");
  return n;
}

}  // namespace

onnx::GraphProto graph_to_proto(const Graph& g) {
  onnx::GraphProto gp;
  gp.set_name(g.name);
  gp.set_doc_string(kOpsetDoc + std::to_string(g.opset));
  for (const GraphInput& in : g.inputs) {
    if (in.dim_params.size() != in.dims.size() && !in.dim_params.empty())
      throw Error("graph input '" + in.name + "' has " + std::to_string(in.dims.size()) + " dims but " +
                  std::to_string(in.dim_params.size()) + " dim names");
    auto* vi = gp.add_input();
    vi->set_name(in.name);
    write_type(vi->mutable_type(), in.dtype, in.dims, true);
    auto* dims = vi->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    for (size_t i = 0; i < in.dim_params.size(); ++i) {
      if (in.dims[i] < 0) dims->Mutable(int(i))->set_dim_param(in.dim_params[i]);
      else dims->Mutable(int(i))->set_denotation(in.dim_params[i]);
    }
  }
  for (const std::string& o : g.outputs) gp.add_output()->set_name(o);
  for (const auto& [name, t] : g.initializers) *gp.add_initializer() = tensor_to_proto(t, name);
  for (const auto& [name, v] : g.values) {
    auto* vi = gp.add_value_info();
    vi->set_name(name);
    write_type(vi->mutable_type(), v.dtype, v.shape, v.shape_known || !v.shape.empty());
    if (v.shape_known) vi->set_doc_string(kShapeKnownDoc);
  }
  for (const Node& n : g.nodes) {
    auto* np = gp.add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    np->set_domain(n.domain);
    for (const std::string& i : n.inputs) np->add_input(i);
    for (const std::string& o : n.outputs) np->add_output(o);
    for (const auto& [key, a] : n.attrs) {
      if (key == kSourcesAttr || key == kOpsetAttr || key == kPrecisionAttr || key == kOnHostAttr) throw Error(n.describe() + " uses the reserved attribute name '" + key + "'");
      *np->add_attribute() = attribute_to_proto(key, a);
    }
    auto* sources = np->add_attribute();
    sources->set_name(kSourcesAttr);
    sources->set_type(onnx::AttributeProto::STRINGS);
    for (const std::string& s : n.sources) sources->add_strings(s);
    auto* opset = np->add_attribute();
    opset->set_name(kOpsetAttr);
    opset->set_type(onnx::AttributeProto::INT);
    opset->set_i(n.opset);
    auto* precision = np->add_attribute();
    precision->set_name(kPrecisionAttr);
    precision->set_type(onnx::AttributeProto::STRING);
    precision->set_s(std::string(precision_name(n.precision)) + (n.precision_reason.empty() ? "" : ": " + n.precision_reason));
    if (n.on_host) {
      auto* on_host = np->add_attribute();
      on_host->set_name(kOnHostAttr);
      on_host->set_type(onnx::AttributeProto::INT);
      on_host->set_i(1);
    }
  }
  return gp;
}

Graph graph_from_proto(const onnx::GraphProto& gp, const std::string& where_in) {
  const std::string where = where_in + ": graph '" + gp.name() + "'";
  Graph g;
  g.name = gp.name();
  const std::string& doc = gp.doc_string();
  if (doc.rfind(kOpsetDoc, 0) != 0) throw Error(where + ": no opset recorded");
  try {
    size_t used = 0;
    g.opset = std::stoll(doc.substr(kOpsetDoc.size()), &used);
    if (used + kOpsetDoc.size() != doc.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw Error(where + ": bad opset record '" + doc.substr(0, 40) + "'");
  }
  for (const auto& vi : gp.input()) {
    GraphInput in;
    in.name = vi.name();
    in.dtype = read_dtype(vi.type().tensor_type().elem_type(), where + " input '" + in.name + "'");
    in.dims = read_dims(vi.type());
    for (const auto& d : vi.type().tensor_type().shape().dim())
      in.dim_params.push_back(d.has_dim_param() ? d.dim_param() : d.denotation());
    // graph_to_proto writes no names for inputs that had none (subgraph inputs).
    bool any_name = false;
    for (const auto& d : vi.type().tensor_type().shape().dim()) any_name |= d.has_dim_param() || d.has_denotation();
    if (!any_name) in.dim_params.clear();
    g.inputs.push_back(std::move(in));
  }
  for (const auto& vi : gp.output()) g.outputs.push_back(vi.name());
  for (const auto& t : gp.initializer()) {
    if (g.initializers.count(t.name())) throw Error(where + ": initializer '" + t.name() + "' appears twice");
    g.initializers[t.name()] = read_tensor(t, where + " initializer '" + t.name() + "'");
  }
  for (const auto& vi : gp.value_info()) {
    ValueInfo v;
    v.dtype = read_dtype(vi.type().tensor_type().elem_type(), where + " value '" + vi.name() + "'");
    v.shape = read_dims(vi.type());
    v.shape_known = vi.doc_string() == kShapeKnownDoc;
    if (!g.values.emplace(vi.name(), v).second) throw Error(where + ": value '" + vi.name() + "' appears twice");
  }
  for (const auto& np : gp.node()) g.nodes.push_back(node_from_proto(np, where));
  return g;
}

}  // namespace fb
