#include "engine/plan/build_config_json.h"

namespace fb {

namespace {

// Constant inputs are small shape tensors; hex keeps the header plain JSON.
std::string to_hex(const Tensor& t) {
  static const char* digits = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(t.raw());
  std::string s;
  for (size_t i = 0; i < t.nbytes(); ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

Tensor tensor_from_hex(const nlohmann::json& j) {
  const DType dt = static_cast<DType>(j.at("dtype").get<int32_t>());
  const Shape shape = j.at("shape").get<Shape>();
  const std::string hex = j.at("hex").get<std::string>();
  if (dtype_size(dt) == 0) throw Error("constant input of element type " + dtype_name(dt));
  uint64_t bytes = dtype_size(dt);
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && bytes > hex.size() / uint64_t(d))) throw Error("constant input shape does not fit its data");
    bytes *= uint64_t(d);
  }
  if (hex.size() != 2 * bytes) throw Error("constant input holds " + std::to_string(hex.size() / 2) + " bytes, expected " +
                                           std::to_string(bytes));
  Tensor t(dt, shape);
  auto* p = static_cast<unsigned char*>(t.raw());
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error("constant input data is not hex");
  };
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return t;
}

}  // namespace

nlohmann::json build_config_to_json(const BuildConfig& c) {
  nlohmann::json constants = nlohmann::json::object();
  for (const auto& [name, t] : c.constant_inputs)
    constants[name] = {{"dtype", static_cast<int32_t>(t.dtype())}, {"shape", t.shape()}, {"hex", to_hex(t)}};
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerPrecision& l : c.layer_precisions) layers.push_back({l.pattern, l.precision});
  return {{"precision", c.precision},
          {"layer_precisions", layers},
          {"precision_mode", precision_mode_name(c.precision_mode)},
          {"fusion", fusion_level_name(c.fusion)},
          {"batch", c.batch},
          {"threads", c.threads},
          {"exclude_nodes", c.exclude_nodes},
          {"exclude_op_types", c.exclude_op_types},
          {"partition_points", c.partition_points},
          {"input_shapes", c.input_shapes},
          {"constant_inputs", constants}};
}

BuildConfig build_config_from_json(const nlohmann::json& j) {
  BuildConfig c;
  c.precision = j.at("precision").get<std::string>();
  for (const auto& l : j.at("layer_precisions"))
    c.layer_precisions.push_back(LayerPrecision{l.at(0).get<std::string>(), l.at(1).get<std::string>()});
  c.precision_mode = parse_precision_mode(j.at("precision_mode").get<std::string>());
  c.fusion = parse_fusion_level(j.at("fusion").get<std::string>());
  c.batch = j.at("batch").get<int64_t>();
  c.threads = j.at("threads").get<int>();
  c.exclude_nodes = j.at("exclude_nodes").get<std::vector<std::string>>();
  c.exclude_op_types = j.at("exclude_op_types").get<std::vector<std::string>>();
  c.partition_points = j.at("partition_points").get<std::vector<std::string>>();
  c.input_shapes = j.at("input_shapes").get<std::map<std::string, Shape>>();
  for (const auto& [name, t] : j.at("constant_inputs").items()) c.constant_inputs[name] = tensor_from_hex(t);
  return c;
}

}  // namespace fb
