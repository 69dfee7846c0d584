// What each zoo model file gives the zoo's table (zoo.cpp): its parameters with their
// ranges, its cross-parameter checks and its builder. Internal to engine/zoo/.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace fb::zoo {

struct ParamDef {
  std::string name;
  int64_t default_value;
  int64_t min;
  int64_t max;  // keeps arithmetic on sizes far from overflow
  std::string help;
};

// A parsed, range-checked spec.
struct ZooArgs {
  std::string model;
  std::string spec;  // normalized; seeds the weights
  std::map<std::string, int64_t> values;

  int64_t operator[](const std::string& param) const;
  // Throws fb::Error "zoo model 'MODEL': parameter 'PARAM' ...".
  [[noreturn]] void fail(const std::string& param, const std::string& message) const;
};

struct ModelDef {
  std::string name;
  std::string description;
  std::vector<ParamDef> params;
  void (*validate)(const ZooArgs&);  // constraints between parameters; throws fb::Error
  onnx::ModelProto (*build)(const ZooArgs&);
};

const ModelDef& mlp_model();
const ModelDef& bert_model();
const ModelDef& resnet_model();
const ModelDef& mobilenet_model();
const ModelDef& vit_model();
const ModelDef& llama_model();
const ModelDef& efficientnet_model();
const ModelDef& gpt_model();
const ModelDef& yolo_model();
const ModelDef& shufflenet_model();
const ModelDef& wav2vec2_model();

}  // namespace fb::zoo
