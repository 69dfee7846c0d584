// Engine plans: a built engine saved to a file and loaded without running the passes
// again (TensorRT's serialized engines). The file, all integers little-endian:
//
//   "FBPLAN\r\n"        magic (8 bytes; \r\n catches text-mode mangling)
//   u32                 format version (kPlanFormatVersion)
//   u64 + bytes         header: JSON (stamp, build config, build log, source name)
//   u64 + bytes         the optimized graph: an ONNX ModelProto (engine/plan/graph_proto.h)
//   u64 + bytes         the source model: the ONNX ModelProto it was built from
//   64 bytes            SHA-256 (hex) of everything before it
//
// A plan is tied to the binary that wrote it: a reader refuses another format version,
// another fusebench version or git commit (the passes' output is only meaningful to the
// kernels of the same code), and a plan needing CPU features this machine lacks.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "engine/config/build_config.h"
#include "engine/runtime/engine.h"

namespace fb {

constexpr uint32_t kPlanFormatVersion = 1;

// Who wrote a plan, when, and for which CPU.
struct PlanStamp {
  uint32_t format_version = kPlanFormatVersion;
  std::string fusebench_version;          // fusebench_version()
  std::string git_commit;                 // fusebench_git_commit(): the commit the binary was built from
  std::vector<std::string> cpu_features;  // what the binary was compiled for and its kernels' form needs
  std::string built_at;                   // ISO 8601 UTC
  // The GPU a device plan was built for (Backend::device_identity: name and compute
  // capability); "" for a CPU plan. Another GPU refuses it, as TensorRT's engines do.
  std::string gpu;
};

// This binary's stamp, built now.
PlanStamp this_binary_stamp();

struct Plan {
  PlanStamp stamp;
  BuildConfig config;
  std::vector<std::string> build_log;
  Graph optimized;
  std::string source_name;   // the model reference the plan was built from
  std::string source_model;  // that model, serialized, external data inlined
};

// The plan of a built engine and the model it was built from (external data read from
// source_base_dir and stored inline, so the plan stands alone).
Plan make_plan(const Engine& engine, const std::string& source_name, const onnx::ModelProto& source,
               const std::string& source_base_dir);

std::string serialize_plan(const Plan& plan);
// Parses and checks plan bytes; every Error names `name` (the file) and what is wrong.
Plan parse_plan(std::string_view bytes, const std::string& name);

void write_plan_file(const Plan& plan, const std::string& path);
Plan read_plan_file(const std::string& path);

// The engine a plan describes, without running any pass; its build log ends with where
// it came from. Construct it inside the ThreadScope it will run in, as build_engine.
std::unique_ptr<Engine> engine_from_plan(const Plan& plan, const std::string& name);

// The source model a plan carries, parsed.
onnx::ModelProto plan_source_model(const Plan& plan, const std::string& name);

}  // namespace fb
