// Bytes → ModelProto → IR (limits, checker, opset upgrade, shape inference, conversion) →
// static shapes and the pass pipeline, built at fusion levels none and aggressive.
// External data resolves against an empty scratch folder, so its checks are reached too.
#include <onnx/onnx_pb.h>

#include "engine/builder/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/runtime/thread_scope.h"
#include "fuzz_guard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph()) return 0;
  fb::fuzz::refusals_only([&] {
    const fb::Graph g = fb::import_onnx(std::move(model), "fuzz.onnx", fb::fuzz::scratch_dir().string());
    fb::ThreadScope scope(1);
    for (fb::FusionLevel level : {fb::FusionLevel::None, fb::FusionLevel::Aggressive}) {
      fb::BuildConfig config;
      config.fusion = level;
      scope.run([&] { fb::build_engine(g, config); });
    }
  });
  return 0;
}
