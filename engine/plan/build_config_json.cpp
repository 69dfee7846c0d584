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

// One row per BuildConfig member: its key in a plan's JSON, how it is written and read
// back, and whether a plan fixes it. The keys are the plan format's: plans already written
// must still read.
struct Field {
  const char* key;
  nlohmann::json (*write)(const BuildConfig& c);
  void (*read)(const nlohmann::json& j, BuildConfig& c);
  // A plan's engine was built with this value and runs with no other (false: a run may
  // ask for any, as for threads).
  bool fixed_by_plan = true;
};

// A member that nlohmann reads and writes as it is.
#define MEMBER(key, member)                                                    \
  Field {                                                                      \
    key, [](const BuildConfig& c) { return nlohmann::json(c.member); },        \
        [](const nlohmann::json& j, BuildConfig& c) { j.get_to(c.member); }    \
  }

const Field kFields[] = {
    {"precision", [](const BuildConfig& c) { return nlohmann::json(precision_name(c.precision)); },
     [](const nlohmann::json& j, BuildConfig& c) { c.precision = parse_precision(j.get<std::string>()); }},
    {"layer_precisions",
     [](const BuildConfig& c) {
       nlohmann::json layers = nlohmann::json::array();
       for (const LayerPrecision& l : c.layer_precisions) layers.push_back({l.pattern, precision_name(l.precision)});
       return layers;
     },
     [](const nlohmann::json& j, BuildConfig& c) {
       for (const auto& l : j)
         c.layer_precisions.push_back(LayerPrecision{l.at(0).get<std::string>(), parse_precision(l.at(1).get<std::string>())});
     }},
    {"precision_mode", [](const BuildConfig& c) { return nlohmann::json(precision_mode_name(c.precision_mode)); },
     [](const nlohmann::json& j, BuildConfig& c) { c.precision_mode = parse_precision_mode(j.get<std::string>()); }},
    {"fusion", [](const BuildConfig& c) { return nlohmann::json(fusion_level_name(c.fusion)); },
     [](const nlohmann::json& j, BuildConfig& c) { c.fusion = parse_fusion_level(j.get<std::string>()); }},
    MEMBER("batch", batch),
    {"threads", [](const BuildConfig& c) { return nlohmann::json(c.threads); },
     [](const nlohmann::json& j, BuildConfig& c) { j.get_to(c.threads); }, /*fixed_by_plan=*/false},
    // Left out for the CPU, so CPU plans read as before this setting (which ran on the CPU).
    {"device", [](const BuildConfig& c) { return c.device == "cpu" ? nlohmann::json() : nlohmann::json(c.device); },
     [](const nlohmann::json& j, BuildConfig& c) { c.device = j.is_null() ? "cpu" : j.get<std::string>(); }},
    MEMBER("exclude_nodes", exclude_nodes),
    MEMBER("exclude_op_types", exclude_op_types),
    MEMBER("partition_points", partition_points),
    MEMBER("input_shapes", input_shapes),
    // Plans written before this setting ran with Winograd allowed.
    {"winograd", [](const BuildConfig& c) { return nlohmann::json(c.winograd); },
     [](const nlohmann::json& j, BuildConfig& c) { c.winograd = j.is_null() || j.get<bool>(); }},
    // Left out when off, so plans without CUDA graphs read and compare as before this setting.
    {"cuda_graph", [](const BuildConfig& c) { return c.cuda_graph ? nlohmann::json(true) : nlohmann::json(); },
     [](const nlohmann::json& j, BuildConfig& c) { c.cuda_graph = !j.is_null() && j.get<bool>(); }},
    {"constant_inputs",
     [](const BuildConfig& c) {
       nlohmann::json constants = nlohmann::json::object();
       for (const auto& [name, t] : c.constant_inputs)
         constants[name] = {{"dtype", static_cast<int32_t>(t.dtype())}, {"shape", t.shape()}, {"hex", to_hex(t)}};
       return constants;
     },
     [](const nlohmann::json& j, BuildConfig& c) {
       for (const auto& [name, t] : j.items()) c.constant_inputs[name] = tensor_from_hex(t);
     }},
    // How the int8 thresholds were found (the thresholds themselves are the int8 layers'
    // attributes); the cache path is where they were kept, not how they were found.
    {"calibration",
     [](const BuildConfig& c) {
       if (!c.asks_for_int8()) return nlohmann::json();
       const Int8Calibration& k = c.calibration;
       return nlohmann::json{{"method", k.method}, {"percentile", k.percentile}, {"batches", k.batches},
                             {"seed", k.seed}, {"data", k.data}};
     },
     [](const nlohmann::json& j, BuildConfig& c) {
       if (j.is_null()) return;
       Int8Calibration& k = c.calibration;
       j.at("method").get_to(k.method);
       j.at("percentile").get_to(k.percentile);
       j.at("batches").get_to(k.batches);
       j.at("seed").get_to(k.seed);
       j.at("data").get_to(k.data);
     }},
};

#undef MEMBER

}  // namespace

nlohmann::json build_config_to_json(const BuildConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : kFields)  // null: a setting this build does not have (calibration without int8)
    if (nlohmann::json v = f.write(c); !v.is_null()) j[f.key] = std::move(v);
  return j;
}

std::optional<PlanMismatch> plan_mismatch(const BuildConfig& wanted, const BuildConfig& built) {
  for (const Field& f : kFields) {
    if (!f.fixed_by_plan) continue;
    nlohmann::json want = f.write(wanted), has = f.write(built);
    if (want != has) return PlanMismatch{f.key, std::move(want), std::move(has)};
  }
  return std::nullopt;
}

BuildConfig build_config_from_json(const nlohmann::json& j) {
  BuildConfig c;
  // A key missing from an older plan reads as null (calibration came later).
  for (const Field& f : kFields) f.read(j.contains(f.key) ? j.at(f.key) : nlohmann::json(), c);
  return c;
}

}  // namespace fb
