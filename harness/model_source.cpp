#include "harness/model_source.h"

#include <filesystem>

#include "engine/builder/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/util/sha256.h"
#include "engine/zoo/zoo.h"

namespace fb {

namespace {

// A plan's engine is fixed at build time: what a case or command asks for must be what
// the plan was built with.
void check_plan_matches(const LoadedModel& m, const BuildConfig& wanted) {
  const BuildConfig& built = m.plan->config;
  auto differs = [&](const std::string& field, const std::string& want, const std::string& have) {
    throw Error(m.reference + ": field '" + field + "': asked for " + want + " but the plan was built with " + have +
                " (build another plan, or use the model " + m.plan->source_name + ")");
  };
  auto list = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s + "]";
  };
  if (wanted.precision != built.precision) differs("precision", wanted.precision, built.precision);
  auto constraints = [](const std::vector<LayerPrecision>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].pattern + "=" + v[i].precision;
    return s + "]";
  };
  if (wanted.layer_precisions != built.layer_precisions)
    differs("layer_precisions", constraints(wanted.layer_precisions), constraints(built.layer_precisions));
  if (wanted.precision_mode != built.precision_mode)
    differs("precision_mode", precision_mode_name(wanted.precision_mode), precision_mode_name(built.precision_mode));
  if (wanted.fusion != built.fusion) differs("fusion", fusion_level_name(wanted.fusion), fusion_level_name(built.fusion));
  if (wanted.batch != built.batch) differs("batch", std::to_string(wanted.batch), std::to_string(built.batch));
  if (wanted.exclude_nodes != built.exclude_nodes)
    differs("exclude_nodes", list(wanted.exclude_nodes), list(built.exclude_nodes));
  if (wanted.exclude_op_types != built.exclude_op_types)
    differs("exclude_ops", list(wanted.exclude_op_types), list(built.exclude_op_types));
  if (wanted.partition_points != built.partition_points)
    differs("partition_points", list(wanted.partition_points), list(built.partition_points));
  if (wanted.input_shapes != built.input_shapes) differs("input_shapes", "other input shapes", "its own");
  if (wanted.constant_inputs.size() != built.constant_inputs.size())
    differs("constant_inputs", "other constant inputs", "its own");
}

}  // namespace

bool is_plan_path(const std::string& reference) {
  return reference.size() > 5 && reference.compare(reference.size() - 5, 5, ".plan") == 0;
}

LoadedModel load_model(const std::string& reference) {
  LoadedModel m;
  onnx::ModelProto proto;
  if (is_zoo_spec(reference)) {
    m.reference = normalize_zoo_spec(reference);
    proto = build_zoo_model(m.reference);
  } else if (is_plan_path(reference)) {
    m.reference = reference;
    m.plan = std::make_shared<const Plan>(read_plan_file(reference));
    proto = plan_source_model(*m.plan, reference);
  } else {
    m.reference = reference;
    proto = load_onnx_file(reference);
    m.base_dir = std::filesystem::absolute(reference).parent_path().string();
  }
  m.serialized = proto.SerializeAsString();
  m.hash = sha256_hex(m.serialized);
  m.graph = import_onnx(std::move(proto),
                        m.plan ? reference + " (its source model " + m.plan->source_name + ")" : m.reference, m.base_dir);
  m.onnx_nodes = m.graph.nodes.size();
  return m;
}

onnx::ModelProto LoadedModel::source_model() const {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(serialized)) throw Error(reference + ": the loaded model no longer parses");
  return proto;
}

std::unique_ptr<Engine> make_engine(const LoadedModel& m, const BuildConfig& wanted) {
  return naming_model(m, [&] {
    if (!m.plan) return build_engine(m.graph, wanted);
    check_plan_matches(m, wanted);
    return engine_from_plan(*m.plan, m.reference);
  });
}

}  // namespace fb
