#include "engine/plan/plan_format.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/onnx/onnx_import.h"
#include "engine/ops/isa_kernels.h"
#include "engine/plan/build_config_json.h"
#include "engine/backend/backend.h"
#include "engine/util/cpu_features.h"
#include "engine/plan/graph_proto.h"
#include "engine/util/build_info.h"
#include "engine/util/sha256.h"

namespace fb {

namespace {

constexpr std::string_view kMagic{"FBPLAN\r\n", 8};
constexpr size_t kChecksumBytes = 64;  // SHA-256 as hex
constexpr size_t kSections = 3;        // header, optimized graph, source model
constexpr size_t kMinSize = kMagic.size() + 4 + kSections * 8 + kChecksumBytes;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(in[at + size_t(i)])) << (8 * i);
  return v;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string describe_binary(const std::string& version, const std::string& commit) {
  return "fusebench " + version + " (commit " + commit + ")";
}

// Reads the length-prefixed sections in order; a length past the checksum is damage.
std::vector<std::string_view> split_sections(std::string_view body, const std::string& name) {
  std::vector<std::string_view> sections;
  size_t at = kMagic.size() + 4;
  for (size_t i = 0; i < kSections; ++i) {
    if (body.size() - at < 8) throw Error(name + ": damaged plan: section " + std::to_string(i) + " is cut off");
    const uint64_t len = get_le(body, at, 8);
    at += 8;
    if (len > body.size() - at) throw Error(name + ": damaged plan: section " + std::to_string(i) + " runs past the end");
    sections.push_back(body.substr(at, size_t(len)));
    at += size_t(len);
  }
  if (at != body.size()) throw Error(name + ": damaged plan: " + std::to_string(body.size() - at) + " stray bytes");
  return sections;
}

// Everything that keeps this binary from using the plan, in one message.
void check_usable_here(const PlanStamp& s, const std::string& name) {
  std::vector<std::string> reasons;
  if (s.fusebench_version != fusebench_version() || s.git_commit != fusebench_git_commit())
    reasons.push_back("it was built by " + describe_binary(s.fusebench_version, s.git_commit) + " and this is " +
                      describe_binary(fusebench_version(), fusebench_git_commit()));
  std::string lacking;
  for (const std::string& f : s.cpu_features)
    if (!cpu_has_feature(f)) lacking += (lacking.empty() ? "" : ", ") + f;
  if (!lacking.empty()) reasons.push_back("it needs CPU features this machine lacks: " + lacking);
  if (reasons.empty()) return;
  std::string msg = name + ": the plan cannot be used here: ";
  for (size_t i = 0; i < reasons.size(); ++i) msg += (i ? "; " : "") + reasons[i];
  throw Error(msg + ". Rebuild it with `fusebench build` on this machine.");
}

}  // namespace

PlanStamp this_binary_stamp() {
  PlanStamp s;
  s.fusebench_version = fusebench_version();
  s.git_commit = fusebench_git_commit();
  s.cpu_features = compiled_cpu_features();
  for (const std::string& f : kernel_isa_cpu_features(isa_kernels().isa))
    if (std::find(s.cpu_features.begin(), s.cpu_features.end(), f) == s.cpu_features.end()) s.cpu_features.push_back(f);
  s.built_at = now_utc();
  return s;
}

Plan make_plan(const Engine& engine, const std::string& source_name, const onnx::ModelProto& source,
               const std::string& source_base_dir) {
  Plan p;
  p.stamp = this_binary_stamp();
  p.stamp.gpu = engine.kernels().backend->device_identity();
  p.config = engine.config();
  p.build_log = engine.build_log();
  p.optimized = engine.graph();
  p.source_name = source_name;
  onnx::ModelProto inlined = source;
  for (auto& init : *inlined.mutable_graph()->mutable_initializer())
    if (init.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
      init = tensor_to_proto(tensor_from_proto(init, source_base_dir), init.name());
  p.source_model = inlined.SerializeAsString();
  return p;
}

std::string serialize_plan(const Plan& plan) {
  const nlohmann::json header{{"fusebench_version", plan.stamp.fusebench_version},
                              {"git_commit", plan.stamp.git_commit},
                              {"cpu_features", plan.stamp.cpu_features},
                              {"built_at", plan.stamp.built_at},
                              {"gpu", plan.stamp.gpu},
                              {"source", plan.source_name},
                              {"build_config", build_config_to_json(plan.config)},
                              {"build_log", plan.build_log}};
  onnx::ModelProto graph;
  graph.set_ir_version(onnx::IR_VERSION);
  graph.set_producer_name("fusebench");
  graph.set_producer_version(plan.stamp.fusebench_version);
  auto* onnx_opset = graph.add_opset_import();
  onnx_opset->set_domain("");
  onnx_opset->set_version(plan.optimized.opset);
  auto* fused_opset = graph.add_opset_import();
  fused_opset->set_domain("fusebench");
  fused_opset->set_version(1);
  *graph.mutable_graph() = graph_to_proto(plan.optimized);

  std::string out(kMagic);
  put_le(out, plan.stamp.format_version, 4);
  for (const std::string& section : {header.dump(), graph.SerializeAsString(), plan.source_model}) {
    put_le(out, section.size(), 8);
    out += section;
  }
  out += sha256_hex(out);
  return out;
}

namespace {

// The engine trusts the graph it is given to be the builder's: every value a layer reads is
// made before it, every graph output is made. A plan is a file like any other (its checksum
// catches damage, not intent), so its graph is checked before an engine is made of it.
void check_plan_graph(const Graph& g, const std::string& name) {
  std::set<std::string> made;
  for (const GraphInput& in : g.inputs) made.insert(in.name);
  for (const auto& [init, _] : g.initializers) made.insert(init);
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty() && !made.count(in))
        throw Error(name + ": damaged plan: " + n.describe() + " reads '" + in + "', which no layer before it makes");
    made.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const std::string& o : g.outputs)
    if (!made.count(o)) throw Error(name + ": damaged plan: graph output '" + o + "' is made by no layer");
}

}  // namespace

Plan parse_plan(std::string_view bytes, const std::string& name) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
    throw Error(name + ": not a fusebench plan (no FBPLAN signature)");
  if (bytes.size() < kMagic.size() + 4) throw Error(name + ": damaged plan: cut off after the signature");
  const uint64_t version = get_le(bytes, kMagic.size(), 4);
  if (version != kPlanFormatVersion)
    throw Error(name + ": the plan has format version " + std::to_string(version) + " and this fusebench (" +
                describe_binary(fusebench_version(), fusebench_git_commit()) + ") reads version " +
                std::to_string(kPlanFormatVersion) + ". Rebuild it with `fusebench build`.");
  if (bytes.size() < kMinSize) throw Error(name + ": damaged plan: only " + std::to_string(bytes.size()) + " bytes");
  const std::string_view body = bytes.substr(0, bytes.size() - kChecksumBytes);
  if (sha256_hex(body) != bytes.substr(body.size()))
    throw Error(name + ": damaged plan: the checksum does not match its contents (truncated or modified?)");
  const std::vector<std::string_view> sections = split_sections(body, name);

  Plan p;
  p.stamp.format_version = uint32_t(version);
  try {
    const nlohmann::json header = nlohmann::json::parse(sections[0]);
    p.stamp.fusebench_version = header.at("fusebench_version").get<std::string>();
    p.stamp.git_commit = header.at("git_commit").get<std::string>();
    p.stamp.cpu_features = header.at("cpu_features").get<std::vector<std::string>>();
    p.stamp.built_at = header.at("built_at").get<std::string>();
    p.stamp.gpu = header.value("gpu", "");  // plans from before device plans have none
    p.source_name = header.at("source").get<std::string>();
    p.build_log = header.at("build_log").get<std::vector<std::string>>();
    check_usable_here(p.stamp, name);
    p.config = build_config_from_json(header.at("build_config"));
    if (!p.stamp.gpu.empty()) {
      std::string here;
      try {
        here = backend_named(p.config.device)->device_identity();
      } catch (const Error& e) {
        throw Error(name + ": the plan cannot be used here: it was built for " + p.stamp.gpu + " (" + p.config.device +
                    ") and " + e.what());
      }
      if (here != p.stamp.gpu)
        throw Error(name + ": the plan cannot be used here: it was built for " + p.stamp.gpu + " and " + p.config.device +
                    " is " + here + ". Rebuild it with `fusebench build` on this machine.");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(name + ": bad plan header: " + e.what());
  } catch (const Error& e) {
    if (std::string_view(e.what()).substr(0, name.size()) == name) throw;
    throw Error(name + ": bad plan header: " + e.what());
  }
  onnx::ModelProto graph;
  if (sections[1].size() > size_t(std::numeric_limits<int>::max()) ||
      !graph.ParseFromArray(sections[1].data(), int(sections[1].size())) || !graph.has_graph())
    throw Error(name + ": damaged plan: the optimized graph does not parse");
  p.optimized = graph_from_proto(graph.graph(), name);
  check_plan_graph(p.optimized, name);
  p.source_model = std::string(sections[2]);
  return p;
}

void write_plan_file(const Plan& plan, const std::string& path) {
  const std::string bytes = serialize_plan(plan);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(bytes.data(), std::streamsize(bytes.size())) || !out.flush())
    throw Error(path + ": cannot write the plan");
}

Plan read_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the plan file");
  // The signature first: a large file that is no plan is refused before it is read.
  char magic[kMagic.size()] = {};
  in.read(magic, std::streamsize(sizeof magic));
  if (std::string_view(magic, size_t(in.gcount())) != kMagic) throw Error(path + ": not a fusebench plan (no FBPLAN signature)");
  in.seekg(0);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_plan(ss.str(), path);
}

std::unique_ptr<Engine> engine_from_plan(const Plan& plan, const std::string& name) {
  auto engine = std::make_unique<Engine>(plan.optimized, plan.config, std::vector<std::string>{});
  engine->replace_build_log(plan.build_log);
  engine->append_log("engine loaded from " + name + " built at " + plan.stamp.built_at + " by " +
                     describe_binary(plan.stamp.fusebench_version, plan.stamp.git_commit) + "; passes not run");
  return engine;
}

onnx::ModelProto plan_source_model(const Plan& plan, const std::string& name) {
  onnx::ModelProto m;
  if (!m.ParseFromString(plan.source_model) || !m.has_graph())
    throw Error(name + ": damaged plan: the source model does not parse");
  return m;
}

}  // namespace fb
