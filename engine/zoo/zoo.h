// The built-in model zoo: small, parameterized models built in code as real ONNX models,
// so benchmarks and tests need no model files and every size can be swept from a scenario.
// A model is named by a spec, "zoo:NAME" or "zoo:NAME?param=value&...".
#pragma once
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace fb {

struct ZooParam {
  std::string name;
  std::string default_value;
  std::string help;
};

struct ZooModelInfo {
  std::string name;
  std::string description;
  std::vector<ZooParam> params;
};

// Every zoo model with its parameters, in a fixed order (the order `zoo list` shows).
std::vector<ZooModelInfo> zoo_models();

// True when `model` names a zoo model ("zoo:..."), false for a file path.
bool is_zoo_spec(const std::string& model);

// spec is "NAME" or "NAME?k=v&k=v", with or without the "zoo:" prefix. Weights are seeded
// from the normalized spec, so equal specs give byte-identical models. An unknown model or
// parameter, or a bad value, throws fb::Error naming the model and the parameter.
onnx::ModelProto build_zoo_model(const std::string& spec);

// The spec with every parameter given (defaults filled in) in sorted order, e.g.
// "zoo:bert?ffn=0&heads=4&hidden=128&layers=2&seq=64", so equal models have equal specs.
// Checks every parameter as build_zoo_model does, without building; only a model too large
// to build (over 1.5 GiB of weights) is found by building alone.
std::string normalize_zoo_spec(const std::string& spec);

}  // namespace fb
