#include "engine/onnx/onnx_import.h"

#include <onnx/checker.h>

#include "engine/onnx/model_limits.h"
#include "engine/onnx/opset_upgrade.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fb {

namespace fs = std::filesystem;

onnx::ModelProto load_onnx_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the model file");
  std::stringstream ss;
  ss << in.rdbuf();
  onnx::ModelProto model;
  const std::string bytes = ss.str();
  if (bytes.empty()) throw Error(path + ": the model file is empty");
  if (!model.ParseFromString(bytes)) throw Error(path + ": not a valid ONNX model (protobuf parse failed)");
  if (!model.has_graph()) throw Error(path + ": the ONNX model has no graph");
  return model;
}

namespace {

// Reads the bytes of an external-data tensor, refusing locations outside base_dir.
std::string read_external(const onnx::TensorProto& t, const std::string& base_dir) {
  const std::string what = "tensor '" + t.name() + "'";
  // offset and length: decimal byte counts, nothing else (std::stoll would take "12abc").
  auto byte_count = [&](const std::string& key, const std::string& value) {
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < 0)
      throw Error(what + ": external data " + key + " '" + value.substr(0, 40) + "' is not a byte count");
    return n;
  };
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = byte_count("offset", kv.value());
    else if (kv.key() == "length") length = byte_count("length", kv.value());
  }
  if (base_dir.empty()) throw Error(what + " uses external data, which an in-memory model cannot resolve");
  if (location.empty()) throw Error(what + " has external data without a location");
  fs::path loc(location);
  if (loc.is_absolute()) throw Error(what + ": external data location '" + location + "' must be relative to the model");
  const fs::path base = fs::weakly_canonical(fs::absolute(base_dir));
  const fs::path full = fs::weakly_canonical(base / loc);
  auto [b_end, f_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b_end != base.end())
    throw Error(what + ": external data location '" + location + "' escapes the model's folder " + base.string());
  // A folder (location "." or "sub/") opens as a stream too, with a nonsense size.
  std::error_code ec;
  if (!fs::is_regular_file(full, ec))
    throw Error(what + ": external data location '" + location + "' is not a file (" + full.string() + ")");
  std::ifstream in(full, std::ios::binary);
  if (!in) throw Error(what + ": cannot open external data file " + full.string());
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  if (offset > size) throw Error(what + ": external data offset is beyond the end of " + full.string());
  if (length < 0) length = size - offset;
  if (length > size - offset) throw Error(what + ": external data runs past the end of " + full.string());
  std::string bytes(size_t(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
}

template <typename T, typename Field>
void copy_field(const Field& f, Tensor& out) {
  T* d = out.data<T>();
  for (int i = 0; i < f.size(); ++i) d[i] = static_cast<T>(f.Get(i));
}

// How many values a TensorProto holds in the typed field ONNX keeps `dt` in.
int typed_value_count(const onnx::TensorProto& t, DType dt) {
  switch (dt) {
    case DType::Float32: return t.float_data_size();
    case DType::Float64: return t.double_data_size();
    case DType::Int64: return t.int64_data_size();
    case DType::UInt32: case DType::UInt64: return t.uint64_data_size();
    default: return t.int32_data_size();  // the narrower integers, bool, float16 and bfloat16
  }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& base_dir) {
  const std::string what = "tensor '" + t.name() + "'";
  const DType dt = static_cast<DType>(t.data_type());
  if (dtype_size(dt) == 0) throw Error(what + " has unsupported element type " + dtype_name(dt));
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(what + " has a negative dimension");
  // Guard against hostile sizes before allocating.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > (int64_t(1) << 40) / d) throw Error(what + " is too large " + shape_str(shape));
    n *= d;
  }
  // The data's size is checked before the tensor is allocated: a file of a few bytes may
  // declare billions of elements it does not hold.
  const size_t bytes = size_t(n) * dtype_size(dt);
  std::string raw;
  bool have_raw = false;
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    raw = read_external(t, base_dir);
    have_raw = true;
  } else if (t.has_raw_data()) {
    raw = t.raw_data();
    have_raw = true;
  }
  if (have_raw) {
    if (raw.size() != bytes)
      throw Error(what + " holds " + std::to_string(raw.size()) + " bytes of data, expected " + std::to_string(bytes) +
                  " for " + dtype_name(dt) + shape_str(shape));
    Tensor out(dt, shape);
    if (bytes) std::memcpy(out.raw(), raw.data(), bytes);
    return out;
  }
  if (const int count = typed_value_count(t, dt); count != n)
    throw Error(what + " holds " + std::to_string(count) + " values, expected " + std::to_string(n));
  Tensor out(dt, shape);
  switch (dt) {
    case DType::Float32: copy_field<float>(t.float_data(), out); break;
    case DType::Float64: copy_field<double>(t.double_data(), out); break;
    case DType::Int64: copy_field<int64_t>(t.int64_data(), out); break;
    case DType::UInt32: copy_field<uint32_t>(t.uint64_data(), out); break;
    case DType::UInt64: copy_field<uint64_t>(t.uint64_data(), out); break;
    case DType::Int32: copy_field<int32_t>(t.int32_data(), out); break;
    case DType::Int16: copy_field<int16_t>(t.int32_data(), out); break;
    case DType::Int8: copy_field<int8_t>(t.int32_data(), out); break;
    case DType::UInt16: copy_field<uint16_t>(t.int32_data(), out); break;
    case DType::UInt8: copy_field<uint8_t>(t.int32_data(), out); break;
    case DType::Bool: copy_field<bool>(t.int32_data(), out); break;
    case DType::Float16: case DType::BFloat16: {
      auto* d = static_cast<uint16_t*>(out.raw());
      for (int i = 0; i < t.int32_data_size(); ++i) d[i] = static_cast<uint16_t>(t.int32_data(i));
      break;
    }
    default: throw Error(what + " has unsupported element type " + dtype_name(dt));
  }
  return out;
}

onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  return p;
}

namespace {

Graph import_subgraph(const onnx::GraphProto& gp, int64_t opset, const std::string& source, const std::string& base_dir);

Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& base_dir, const std::string& where,
                            int64_t opset) {
  Attribute r;
  switch (a.type()) {
    case onnx::AttributeProto::GRAPH:
      r.value = std::make_shared<const Graph>(import_subgraph(a.g(), opset, where + " attribute '" + a.name() + "'", base_dir));
      break;
    case onnx::AttributeProto::FLOAT: r.value = a.f(); break;
    case onnx::AttributeProto::INT: r.value = int64_t(a.i()); break;
    case onnx::AttributeProto::STRING: r.value = a.s(); break;
    case onnx::AttributeProto::TENSOR: r.value = tensor_from_proto(a.t(), base_dir); break;
    case onnx::AttributeProto::FLOATS: r.value = std::vector<float>(a.floats().begin(), a.floats().end()); break;
    case onnx::AttributeProto::INTS: r.value = std::vector<int64_t>(a.ints().begin(), a.ints().end()); break;
    case onnx::AttributeProto::STRINGS: r.value = std::vector<std::string>(a.strings().begin(), a.strings().end()); break;
    default:
      throw Error(where + ": attribute '" + a.name() + "' has an unsupported type (" + std::to_string(int(a.type())) +
                  "): sparse tensors and type protos are not supported");
  }
  return r;
}

ValueInfo info_from_type(const onnx::TypeProto& tp) {
  ValueInfo v;
  if (!tp.has_tensor_type()) return v;
  v.dtype = static_cast<DType>(tp.tensor_type().elem_type());
  if (!tp.tensor_type().has_shape()) return v;
  v.shape_known = true;
  for (const auto& d : tp.tensor_type().shape().dim()) {
    if (d.has_dim_value()) v.shape.push_back(d.dim_value());
    else {
      v.shape.push_back(-1);
      v.shape_known = false;
    }
  }
  return v;
}

// Names a subgraph reads from enclosing scopes: used by its nodes (or returned as its
// outputs) but neither its inputs, its initializers nor produced inside it.
std::vector<std::string> outer_names(const Graph& sub) {
  std::set<std::string> defined;
  for (const GraphInput& in : sub.inputs) defined.insert(in.name);
  for (const auto& [k, _] : sub.initializers) defined.insert(k);
  std::vector<std::string> outer;
  auto use = [&](const std::string& v) {
    if (v.empty() || defined.count(v) || std::find(outer.begin(), outer.end(), v) != outer.end()) return;
    outer.push_back(v);
  };
  for (const Node& n : sub.nodes) {
    for (const std::string& in : n.inputs) use(in);
    for (const std::string& o : n.outputs) defined.insert(o);
  }
  for (const std::string& o : sub.outputs) use(o);
  return outer;
}

// A node with subgraphs (If, Loop) takes the outer values its subgraphs read as extra
// inputs after its own, named in the attribute "fusebench.captures": ordering, liveness
// and dead-node removal then see those uses like any other.
void capture_outer_values(Node& n) {
  std::vector<std::string> captures;
  for (const auto& [_, a] : n.attrs)
    if (const auto* g = std::get_if<std::shared_ptr<const Graph>>(&a.value))
      for (const std::string& v : outer_names(**g))
        if (std::find(captures.begin(), captures.end(), v) == captures.end()) captures.push_back(v);
  if (captures.empty()) return;
  n.inputs.insert(n.inputs.end(), captures.begin(), captures.end());
  n.attrs["fusebench.captures"] = Attribute{captures};
}

// A subgraph converted like the main graph, without the checker (which checked it as part
// of the model) and without sorting: ONNX requires subgraph nodes in order already, and
// their outer-scope inputs would look like dangling names to the sort.
Graph import_subgraph(const onnx::GraphProto& gp, int64_t opset, const std::string& source, const std::string& base_dir) {
  Graph g;
  g.name = gp.name();
  g.opset = opset;
  for (const auto& init : gp.initializer()) {
    g.initializers[init.name()] = tensor_from_proto(init, base_dir);
    g.values[init.name()] = ValueInfo{g.initializers[init.name()].dtype(), g.initializers[init.name()].shape(), true};
  }
  for (const auto& in : gp.input()) {
    if (g.initializers.count(in.name())) continue;
    GraphInput gi{in.name(), static_cast<DType>(in.type().tensor_type().elem_type()), {}, {}};
    g.inputs.push_back(gi);
    g.values[in.name()] = info_from_type(in.type());
  }
  for (const auto& out : gp.output()) {
    if (out.type().has_sequence_type() || out.type().has_optional_type() || out.type().has_map_type())
      throw Error(source + ": graph output '" + out.name() + "' is not a tensor (sequences, maps and optionals are not supported)");
    g.outputs.push_back(out.name());
    g.values.emplace(out.name(), info_from_type(out.type()));
  }
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& np = gp.node(i);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? g.name + "/" + n.op_type + "_" + std::to_string(i) : np.name();
    n.opset = opset;
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    n.sources = {n.name};
    const std::string where = source + ": " + n.describe();
    for (const auto& a : np.attribute()) n.attrs[a.name()] = convert_attribute(a, base_dir, where, opset);
    capture_outer_values(n);
    g.nodes.push_back(std::move(n));
  }
  return g;
}

}  // namespace

Graph import_onnx(onnx::ModelProto model, const std::string& source, const std::string& base_dir) {
  // What the file declares is bounded before any of it is allocated (engine/onnx/model_limits.h).
  check_model_limits(model, source, ModelLimits::from_environment());
  // External data is read (and its location checked) by us, before the checker: the
  // checker would resolve it against the working directory, not the model's folder.
  std::map<std::string, Tensor> initializers;
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    try {
      initializers[init.name()] = tensor_from_proto(init, base_dir);
    } catch (const Error& e) {
      throw Error(source + ": initializer " + e.what());
    }
    if (init.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
      init = tensor_to_proto(initializers[init.name()], init.name());
    }
  }
  // The checker catches structural damage (dangling names, bad attributes) up front.
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(source + ": the ONNX checker rejected the model: " + std::string(e.what()).substr(0, 600));
  }
  // The checker does not look at graph outputs. One that nothing makes crashes the onnx
  // library's version converter (a null producer) and, past it, the engine's memory plan.
  std::set<std::string> produced;
  for (const auto& in : model.graph().input()) produced.insert(in.name());
  for (const auto& init : model.graph().initializer()) produced.insert(init.name());
  for (const auto& n : model.graph().node()) produced.insert(n.output().begin(), n.output().end());
  for (const auto& out : model.graph().output())
    if (!produced.count(out.name()))
      throw Error(source + ": graph output '" + out.name() + "' is produced by no node, graph input or initializer");
  const OpsetUpgrade upgrade = upgrade_opset(model, source);
  if (upgrade.converted) {
    initializers.clear();  // adapters may add or rewrite initializers
    for (const auto& init : model.graph().initializer()) initializers[init.name()] = tensor_from_proto(init, base_dir);
  }
  const onnx::GraphProto& gp = model.graph();
  Graph g;
  g.name = gp.name();
  std::map<std::string, int64_t> opsets;  // by domain, "" for ONNX
  for (const auto& op : model.opset_import()) opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = op.version();
  // A model of other domains only (the training ops) imports no ONNX opset; its ops are then
  // reported as unsupported by name when the executors look them up.
  g.opset = opsets.count("") ? opsets[""] : 0;
  if (!upgrade.log_line.empty()) g.import_log.push_back(upgrade.log_line);

  for (auto& [name, t] : initializers) {
    g.values[name] = ValueInfo{t.dtype(), t.shape(), true};
    g.initializers[name] = std::move(t);
  }
  for (const auto& in : gp.input()) {
    if (g.initializers.count(in.name())) continue;  // old exporters list initializers as inputs too
    if (!in.type().has_tensor_type())
      throw Error(source + ": graph input '" + in.name() + "' is not a tensor (sequences and maps are not supported)");
    GraphInput gi{in.name(), static_cast<DType>(in.type().tensor_type().elem_type()), {}, {}};
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      gi.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      gi.dim_params.push_back(d.has_dim_value() ? "" : (d.dim_param().empty() ? "?" : d.dim_param()));
    }
    g.inputs.push_back(gi);
    g.values[in.name()] = info_from_type(in.type());
  }
  for (const auto& vi : gp.value_info()) g.values.emplace(vi.name(), info_from_type(vi.type()));
  for (const auto& out : gp.output()) {
    if (out.type().has_sequence_type() || out.type().has_optional_type() || out.type().has_map_type())
      throw Error(source + ": graph output '" + out.name() + "' is not a tensor (sequences, maps and optionals are not supported)");
    g.outputs.push_back(out.name());
    g.values.emplace(out.name(), info_from_type(out.type()));
  }

  std::set<std::string> names;
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& np = gp.node(i);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? n.op_type + "_" + std::to_string(i) : np.name();
    while (names.count(n.name)) n.name += "_" + std::to_string(i);
    names.insert(n.name);
    n.opset = opsets.count(n.domain) ? opsets[n.domain] : g.opset;
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    n.sources = {n.name};
    const std::string where = source + ": " + n.describe();
    for (const auto& a : np.attribute()) n.attrs[a.name()] = convert_attribute(a, base_dir, where, g.opset);
    capture_outer_values(n);
    for (const std::string& o : n.outputs)
      if (!o.empty()) g.values.emplace(o, ValueInfo{});
    g.nodes.push_back(std::move(n));
  }
  try {
    g.topological_sort();
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return g;
}

}  // namespace fb
