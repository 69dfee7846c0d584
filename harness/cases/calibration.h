// int8 calibration as a build needs it: the fp32 reference executor runs the model over
// the calibration set (the scenario's data files, or seeded random batches drawn apart
// from the timed inputs), every float32 tensor it computes is observed, and the chosen
// thresholds go into BuildConfig::int8_ranges for precision lowering.
//
// The cache file (calibration.cache) holds the ranges with what they were computed
// from: the model's hash and every calibration setting, batch and input shapes. A build
// whose model and settings match reads it instead of calibrating; any difference
// recalibrates and rewrites it. Within one process the ranges are also kept in memory,
// so `debug precision`'s many builds calibrate once.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config/build_config.h"
#include "engine/ops/op_registry.h"
#include "harness/cases/model_source.h"

namespace fb {

// Fills cfg.int8_ranges (and int8_ranges_from) when cfg asks for int8 anywhere and they
// are empty; does nothing otherwise. `graph` is what the engine will be built from (the
// model, or the model with its plugins placed), `ops` the registry that runs it.
void calibrate_for_int8(const LoadedModel& m, const Graph& graph, BuildConfig& cfg,
                        std::shared_ptr<const OpRegistry> ops = OpRegistry::builtin());

// The cache file: one entry per key (everything the ranges depend on), so that one file
// serves a scenario's batch sweep. Reading gives nullopt when the file or the key is
// absent and an Error naming the file when it is damaged; adding replaces the key's entry
// and writes the file whole (a temporary renamed over it), making its folder if needed.
std::optional<std::map<std::string, TensorRange>> read_calibration_cache(const std::string& path, const nlohmann::json& key);
void add_to_calibration_cache(const std::string& path, const nlohmann::json& key, const std::map<std::string, TensorRange>& ranges);

}  // namespace fb
