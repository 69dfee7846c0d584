// What the pass tests share: counting layers of a kind in a built engine, and checking a
// plan against the reference executor (1e-4 absolute, 1e-3 relative, on O(1) outputs).
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "engine/builder/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/reference/reference_executor.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/inputs.h"

namespace fb::test {

inline int count_kind(const Engine& e, const std::string& kind) {
  int n = 0;
  for (const LayerInfo& l : e.layers()) n += l.kind == kind;
  return n;
}

// Layers whose kernel name contains `text` ("nhwc→nhwc", "+sum+relu").
inline int count_kernel(const Engine& e, const std::string& text) {
  int n = 0;
  for (const LayerInfo& l : e.layers()) n += l.kernel.find(text) != std::string::npos;
  return n;
}

// The first layer of this kind, or nullptr.
inline const LayerInfo* find_kind(const Engine& e, const std::string& kind) {
  for (const LayerInfo& l : e.layers())
    if (l.kind == kind) return &l;
  return nullptr;
}

inline bool log_mentions(const Engine& e, const std::string& text) {
  for (const std::string& line : e.build_log())
    if (line.find(text) != std::string::npos) return true;
  return false;
}

inline void expect_agrees(const Graph& g, const BuildConfig& cfg, uint64_t seed = 11) {
  auto engine = build_engine(g, cfg);
  ReferenceExecutor ref(g, cfg.batch);
  auto inputs = make_inputs(g, ref.input_shapes(), seed);
  auto expected = ref.run(inputs);
  engine->run(inputs);
  AccuracyResult acc = compare_outputs(engine->outputs(), expected, g.outputs, {1e-4, 1e-3});
  EXPECT_TRUE(acc.passed) << acc.detail;
}

// Runs a built engine and checks its outputs against the reference within the default
// tolerance of `precision` (cosine for bf16, fp16 and int8).
inline void expect_engine_agrees(const Graph& g, Engine& e, int64_t batch, const std::string& precision, uint64_t seed) {
  ReferenceExecutor ref(g, batch);
  auto inputs = make_inputs(g, ref.input_shapes(), seed);
  e.run(inputs);
  AccuracyResult acc = compare_outputs(e.outputs(), ref.run(inputs), g.outputs, default_accuracy(fb::parse_precision(precision)));
  EXPECT_TRUE(acc.passed) << precision << ": " << acc.detail;
}

// Runs the engine with every tensor captured and checks each against the reference's
// tensor of the same name (1e-4 absolute, 1e-3 relative); returns the names compared.
inline std::vector<std::string> expect_captures_agree(const Graph& g, const BuildConfig& cfg, uint64_t seed) {
  auto engine = build_engine(g, cfg);
  ReferenceExecutor ref(g, cfg.batch);
  auto inputs = make_inputs(g, ref.input_shapes(), seed);
  auto all_ref = ref.run_all(inputs);
  std::vector<std::string> compared;
  for (const auto& [name, t] : engine->run_capture(inputs)) {
    if (!all_ref.count(name)) continue;
    AccuracyResult acc = compare_outputs({t}, {all_ref.at(name)}, {name}, {1e-4, 1e-3});
    EXPECT_TRUE(acc.passed) << name << ": " << acc.detail;
    compared.push_back(name);
  }
  return compared;
}

}  // namespace fb::test
