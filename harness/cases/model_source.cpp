#include "harness/cases/model_source.h"

#include <filesystem>

#include "engine/builder/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/plan/build_config_json.h"
#include "engine/util/sha256.h"
#include "engine/zoo/zoo.h"
#include "harness/cases/calibration.h"

namespace fb {

namespace {

// A plan's engine is fixed at build time: what a case or command asks for must be what
// the plan was built with. Compared field by field through the plan format's own table
// (engine/plan/build_config_json.cpp: plan_mismatch), so a new build setting is checked
// without a line here; the table says which a run may change (threads).
void check_plan_matches(const LoadedModel& m, const BuildConfig& wanted) {
  const std::optional<PlanMismatch> differs = plan_mismatch(wanted, m.plan->config);
  if (!differs) return;
  auto shown = [](const nlohmann::json& v) {
    if (v.is_null()) return std::string("the default");
    const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    return s.size() > 120 ? s.substr(0, 117) + "..." : s;
  };
  throw Error(m.reference + ": field '" + differs->field + "': asked for " + shown(differs->wanted) +
              " but the plan was built with " + shown(differs->built) + " (build another plan, or use the model " +
              m.plan->source_name + ")");
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
    if (!m.plan) {
      BuildConfig cfg = wanted;
      calibrate_for_int8(m, m.graph, cfg);
      return build_engine(m.graph, cfg);
    }
    check_plan_matches(m, wanted);
    return engine_from_plan(*m.plan, m.reference);
  });
}

}  // namespace fb
