#include "engine/reference/device_reference.h"

namespace fb {

std::unique_ptr<Engine> build_device_reference(const Graph& graph, const BuildConfig& case_config,
                                               std::shared_ptr<const OpRegistry> ops) {
  FB_CHECK(!case_config.is_dynamic(), "a device reference for a dynamic case");  // the runner refuses those first
  BuildConfig c;
  c.device = case_config.device;
  c.batch = case_config.batch;
  c.threads = case_config.threads;
  c.input_shapes = case_config.input_shapes;
  c.constant_inputs = case_config.constant_inputs;
  c.fusion = FusionLevel::None;
  c.in_place = false;
  c.time_algorithms = false;  // cuDNN's heuristic, as PyTorch with cudnn.benchmark off
  return build_engine(graph, c, EngineKernels{std::move(ops)});
}

double device_ms(const Engine& engine, bool with_copies) {
  const std::optional<DeviceTimes> t = engine.last_device_times();
  FB_CHECK(t.has_value(), "device_ms of an engine on the host");
  return t->compute_ms + (with_copies ? t->h2d_ms + t->d2h_ms : 0.0);
}

}  // namespace fb
