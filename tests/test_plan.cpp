// Engine plans (engine/plan/plan_format.h): a plan loads into the same engine the build
// made (same layers, bit-identical outputs), is refused when another fusebench wrote it
// or this CPU lacks a feature it needs, and damage of any kind is an Error, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>

#include "engine/builder/builder.h"
#include "engine/ops/isa_kernels.h"
#include "engine/plan/build_config_json.h"
#include "engine/plan/plan_format.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "engine/util/build_info.h"
#include "engine/util/cpu_features.h"
#include "engine/util/sha256.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "shell_command.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

// A plan of a small model, built in memory.
std::string small_plan_bytes(Plan* plan_out = nullptr) {
  LoadedModel m = load_model("zoo:mlp?hidden=16&in=8&layers=2&out=4");
  BuildConfig cfg;
  auto engine = build_engine(m.graph, cfg);
  Plan p = make_plan(*engine, m.reference, m.source_model(), m.base_dir);
  if (plan_out) *plan_out = p;
  return serialize_plan(p);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

struct RoundTripParam {
  std::string model;
  std::string fusion;
  int64_t batch;
};

class PlanRoundTrip : public testing::TestWithParam<RoundTripParam> {};

TEST_P(PlanRoundTrip, SameLayersAndBitIdenticalOutputs) {
  const RoundTripParam& p = GetParam();
  LoadedModel m = load_model(p.model);
  BuildConfig cfg;
  cfg.fusion = parse_fusion_level(p.fusion);
  cfg.batch = p.batch;
  cfg.threads = 2;
  ThreadScope threads(2);
  const fs::path file = fs::temp_directory_path() / ("fb_plan_" + std::to_string(::getpid()) + ".plan");
  threads.run([&] {
    auto built = build_engine(m.graph, cfg);
    write_plan_file(make_plan(*built, m.reference, m.source_model(), m.base_dir), file.string());
    const Plan plan = read_plan_file(file.string());
    auto loaded = engine_from_plan(plan, file.string());
    fs::remove(file);

    ASSERT_EQ(loaded->layers().size(), built->layers().size());
    for (size_t i = 0; i < built->layers().size(); ++i) {
      const LayerInfo& a = built->layers()[i];
      const LayerInfo& b = loaded->layers()[i];
      EXPECT_EQ(b.name, a.name) << i;
      EXPECT_EQ(b.kind, a.kind) << a.name;
      EXPECT_EQ(b.kernel, a.kernel) << a.name;
      EXPECT_EQ(b.precision, a.precision) << a.name;
      EXPECT_EQ(b.sources, a.sources) << a.name;
      EXPECT_EQ(b.input_shapes, a.input_shapes) << a.name;
      EXPECT_EQ(b.output_shapes, a.output_shapes) << a.name;
      EXPECT_EQ(b.flops, a.flops) << a.name;
    }
    EXPECT_EQ(loaded->arena_bytes(), built->arena_bytes());
    EXPECT_EQ(plan.config.fusion, cfg.fusion);
    EXPECT_EQ(plan.config.batch, cfg.batch);
    // The build log is the build's, then where the engine came from.
    ASSERT_EQ(loaded->build_log().size(), built->build_log().size() + 1);
    EXPECT_NE(loaded->build_log().back().find("engine loaded from " + file.string() + " built at "), std::string::npos)
        << loaded->build_log().back();
    EXPECT_NE(loaded->build_log().back().find(std::string("(commit ") + fusebench_git_commit() + ")"), std::string::npos);

    // The carried source model is the one the plan came from.
    EXPECT_EQ(sha256_hex(plan_source_model(plan, "x").SerializeAsString()), m.hash);

    ReferenceExecutor ref(m.graph, p.batch);
    const auto inputs = make_inputs(m.graph, ref.input_shapes(), 11);
    built->run(inputs);
    loaded->run(inputs);
    const auto a = built->outputs(), b = loaded->outputs();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].shape(), b[i].shape());
      ASSERT_GT(a[i].nbytes(), 0u);
      EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i << " differs";
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Zoo, PlanRoundTrip,
                         testing::Values(RoundTripParam{"zoo:bert", "aggressive", 2},
                                         RoundTripParam{"zoo:resnet", "standard", 1}),
                         [](const testing::TestParamInfo<RoundTripParam>& i) {
                           return i.param.model.substr(4) + "_" + i.param.fusion;
                         });

TEST(Plan, ReadingAndWritingAgainGivesTheSameBytes) {
  // Every IR field survives: the graph written from a read plan is the graph read.
  const std::string bytes = small_plan_bytes();
  EXPECT_EQ(serialize_plan(parse_plan(bytes, "p.plan")), bytes);
}

TEST(Plan, RefusesAnotherCommitNamingBoth) {
  Plan p;
  small_plan_bytes(&p);
  p.stamp.git_commit = "0123456789ab";
  const std::string msg = error_of([&] { parse_plan(serialize_plan(p), "old.plan"); });
  EXPECT_EQ(msg.rfind("old.plan: the plan cannot be used here", 0), 0u) << msg;
  EXPECT_NE(msg.find("built by fusebench " + p.stamp.fusebench_version + " (commit 0123456789ab)"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::string("this is fusebench ") + fusebench_version() + " (commit " + fusebench_git_commit() + ")"),
            std::string::npos) << msg;
}

TEST(Plan, RefusesAnotherVersionAndFormat) {
  Plan p;
  small_plan_bytes(&p);
  p.stamp.fusebench_version = "9.9.9";
  EXPECT_NE(error_of([&] { parse_plan(serialize_plan(p), "v.plan"); }).find("built by fusebench 9.9.9"), std::string::npos);
  small_plan_bytes(&p);
  p.stamp.format_version = kPlanFormatVersion + 1;
  const std::string msg = error_of([&] { parse_plan(serialize_plan(p), "f.plan"); });
  EXPECT_NE(msg.find("f.plan: the plan has format version " + std::to_string(kPlanFormatVersion + 1)), std::string::npos) << msg;
}

// A plan records what its binary was compiled for and what its own kernels' form needs, so
// one built where the AVX-512 kernels ran is refused, by name, where they cannot.
TEST(Plan, RecordsTheCpuFeaturesOfItsBinaryAndItsKernels) {
  const std::vector<std::string> stamped = this_binary_stamp().cpu_features;
  for (const std::vector<std::string>& needed : {compiled_cpu_features(), kernel_isa_cpu_features(isa_kernels().isa)})
    for (const std::string& f : needed) EXPECT_NE(std::find(stamped.begin(), stamped.end(), f), stamped.end()) << f;
  EXPECT_EQ(std::set<std::string>(stamped.begin(), stamped.end()).size(), stamped.size());  // each once
}

TEST(Plan, RefusesACpuFeatureThisMachineLacks) {
  Plan p;
  small_plan_bytes(&p);
  p.stamp.cpu_features.push_back("avx9000");
  const std::string msg = error_of([&] { parse_plan(serialize_plan(p), "cpu.plan"); });
  EXPECT_NE(msg.find("cpu.plan: the plan cannot be used here: it needs CPU features this machine lacks: avx9000."),
            std::string::npos) << msg;
  EXPECT_EQ(msg.find("built by"), std::string::npos) << msg;  // only what differs is named
}

// A plan records the GPU it was built for; a CPU plan records none. A GPU plan is refused
// where that GPU is not (here: another GPU, or none at all), naming both.
TEST(Plan, ACpuPlanNamesNoGpuAndAGpuPlanNeedsItsGpu) {
  Plan p;
  small_plan_bytes(&p);
  EXPECT_EQ(p.stamp.gpu, "");
  EXPECT_EQ(parse_plan(serialize_plan(p), "cpu.plan").stamp.gpu, "");
  p.stamp.gpu = "NVIDIA H9000 (sm_99)";
  p.config.device = "cuda";
  const std::string msg = error_of([&] { parse_plan(serialize_plan(p), "gpu.plan"); });
  EXPECT_NE(msg.find("gpu.plan: the plan cannot be used here: it was built for NVIDIA H9000 (sm_99)"), std::string::npos)
      << msg;
}

TEST(Plan, TruncatedPlansAreErrors) {
  const std::string bytes = small_plan_bytes();
  for (size_t len : {size_t(0), size_t(7), size_t(8), size_t(12), size_t(40), bytes.size() / 2, bytes.size() - 64,
                     bytes.size() - 1}) {
    const std::string msg = error_of([&] { parse_plan(std::string_view(bytes).substr(0, len), "t.plan"); });
    EXPECT_EQ(msg.rfind("t.plan: ", 0), 0u) << len << ": " << msg;
  }
}

TEST(Plan, FlippedBytesAreErrors) {
  const std::string bytes = small_plan_bytes();
  // Every byte of the fixed prefix and the checksum, and a spread through the sections.
  std::vector<size_t> at;
  for (size_t i = 0; i < 24; ++i) at.push_back(i);
  for (size_t i = 24; i < bytes.size(); i += 97) at.push_back(i);
  for (size_t i = bytes.size() - 64; i < bytes.size(); ++i) at.push_back(i);
  for (size_t i : at) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
    const std::string msg = error_of([&] { parse_plan(damaged, "f.plan"); });
    EXPECT_EQ(msg.rfind("f.plan: ", 0), 0u) << "byte " << i << ": " << msg;
  }
}

// Found by fuzzing (tests/fuzz/fuzz_plan.cpp): a plan whose checksum is right (anyone can
// compute one) but whose graph reads a value nothing makes reached the engine, which failed
// with an unnamed std::out_of_range ("map::at").
TEST(Plan, AGraphReadingOrOutputtingAValueNothingMakesIsRefusedNamingIt) {
  Plan p;
  small_plan_bytes(&p);
  Plan reads = p;
  reads.optimized.nodes[1].inputs[0] = "nowhere";
  std::string msg = error_of([&] { parse_plan(serialize_plan(reads), "g.plan"); });
  EXPECT_NE(msg.find("g.plan: damaged plan: "), std::string::npos) << msg;
  EXPECT_NE(msg.find(" reads 'nowhere', which no layer before it makes"), std::string::npos) << msg;
  Plan outputs = p;
  outputs.optimized.outputs[0] = "nowhere";
  msg = error_of([&] { parse_plan(serialize_plan(outputs), "g.plan"); });
  EXPECT_NE(msg.find("g.plan: damaged plan: graph output 'nowhere' is made by no layer"), std::string::npos) << msg;
}

TEST(Plan, RandomBytesAreErrors) {
  std::mt19937_64 rng(3);
  std::string junk(1 << 16, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  EXPECT_NE(error_of([&] { parse_plan(junk, "r.plan"); }).find("r.plan: not a fusebench plan"), std::string::npos);
  // Behind a valid signature and version too.
  const std::string prefix = small_plan_bytes().substr(0, 12);
  EXPECT_NE(error_of([&] { parse_plan(prefix + junk, "r.plan"); }).find("r.plan: damaged plan"), std::string::npos);
}

// Damage behind a matching checksum (a hand-made file) still meets the parser's checks.
std::string with_checksum(std::string body) { return body + sha256_hex(body); }

TEST(Plan, HostileSectionsBehindAValidChecksumAreErrors) {
  const std::string bytes = small_plan_bytes();
  const std::string prefix = bytes.substr(0, 12);
  // A header length near 2^62: refused by bounds, not allocated.
  std::string huge = prefix;
  for (int i = 0; i < 8; ++i) huge += static_cast<char>(i == 7 ? 0x40 : 0);
  EXPECT_NE(error_of([&] { parse_plan(with_checksum(huge + std::string(64, 'x')), "h.plan"); }).find("runs past the end"),
            std::string::npos);
  // Three sections of junk: the header JSON does not parse.
  auto section = [](const std::string& s) {
    std::string out;
    for (int i = 0; i < 8; ++i) out += static_cast<char>((uint64_t(s.size()) >> (8 * i)) & 0xff);
    return out + s;
  };
  EXPECT_NE(error_of([&] { parse_plan(with_checksum(prefix + section("{nope") + section("") + section("")), "j.plan"); })
                .find("j.plan: bad plan header"),
            std::string::npos);
  // A good header and a graph section that is not protobuf.
  Plan p;
  small_plan_bytes(&p);
  const std::string good = serialize_plan(p);
  const uint64_t header_len = [&] {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(good[12 + size_t(i)])) << (8 * i);
    return v;
  }();
  const std::string header = good.substr(20, header_len);
  EXPECT_NE(error_of([&] {
              parse_plan(with_checksum(prefix + section(header) + section(std::string(100, '\xff')) + section("")), "g.plan");
            }).find("g.plan: damaged plan: the optimized graph does not parse"),
            std::string::npos);
}

TEST(Plan, NotAPlanFileIsRefusedByName) {
  const fs::path f = fs::temp_directory_path() / ("fb_notplan_" + std::to_string(::getpid()) + ".plan");
  std::ofstream(f) << "ir_version: 8";
  EXPECT_EQ(error_of([&] { read_plan_file(f.string()); }), f.string() + ": not a fusebench plan (no FBPLAN signature)");
  fs::remove(f);
  EXPECT_EQ(error_of([&] { read_plan_file(f.string()); }), f.string() + ": cannot open the plan file");
}

TEST(Plan, ModelSourceLoadsThePlanAndChecksTheCase) {
  const fs::path f = fs::temp_directory_path() / ("fb_src_" + std::to_string(::getpid()) + ".plan");
  Plan p;
  small_plan_bytes(&p);
  write_plan_file(p, f.string());
  LoadedModel m = load_model(f.string());
  ASSERT_TRUE(m.plan);
  LoadedModel source = load_model("zoo:mlp?hidden=16&in=8&layers=2&out=4");
  EXPECT_EQ(m.hash, source.hash);  // case keys follow the model the plan came from
  EXPECT_EQ(m.onnx_nodes, source.onnx_nodes);
  BuildConfig wanted = p.config;
  EXPECT_EQ(make_engine(m, wanted)->layers().size(), p.optimized.nodes.size());
  wanted.batch = 4;
  EXPECT_NE(error_of([&] { make_engine(m, wanted); }).find(f.string() + ": field 'batch': asked for 4 but the plan was built with 1"),
            std::string::npos);
  wanted = p.config;
  wanted.fusion = FusionLevel::None;
  EXPECT_NE(error_of([&] { make_engine(m, wanted); }).find("field 'fusion': asked for none but the plan was built with standard"),
            std::string::npos);
  wanted = p.config;
  wanted.winograd = false;  // the plan's layers were made with Winograd allowed
  EXPECT_NE(error_of([&] { make_engine(m, wanted); }).find("field 'winograd': asked for false but the plan was built with true"),
            std::string::npos);
  // A setting a CPU plan leaves out (its default) is compared too: once only the asked-for
  // side's keys were, so a CPU case took a GPU plan and a CUDA-graph case a plain one.
  wanted = p.config;
  wanted.cuda_graph = true;
  EXPECT_NE(error_of([&] { make_engine(m, wanted); }).find("field 'cuda_graph': asked for true but the plan was built with the default"),
            std::string::npos);
  Plan on_gpu = p;
  on_gpu.config.device = "cuda";
  EXPECT_EQ(plan_mismatch(p.config, on_gpu.config)->field, "device");
  EXPECT_EQ(plan_mismatch(p.config, on_gpu.config)->built, "cuda");
  EXPECT_TRUE(plan_mismatch(p.config, on_gpu.config)->wanted.is_null());
  EXPECT_FALSE(plan_mismatch(p.config, p.config).has_value());
  wanted = p.config;
  wanted.threads = p.config.threads + 1;  // a plan runs with any thread count
  EXPECT_EQ(make_engine(m, wanted)->layers().size(), p.optimized.nodes.size());
  fs::remove(f);
}

TEST(Plan, AConstantInputIsComparedByValue) {
  // Another value bound into the same plan would be a silently wrong answer: the count of
  // constant inputs (all that was compared before) is the same.
  const fs::path f = fs::temp_directory_path() / ("fb_const_" + std::to_string(::getpid()) + ".plan");
  Plan p;
  small_plan_bytes(&p);
  Tensor one(DType::Float32, {1});
  one.data<float>()[0] = 1.f;
  p.config.constant_inputs["k"] = one;
  write_plan_file(p, f.string());
  const LoadedModel m = load_model(f.string());
  BuildConfig wanted = p.config;
  EXPECT_EQ(make_engine(m, wanted)->layers().size(), p.optimized.nodes.size());
  Tensor two(DType::Float32, {1});
  two.data<float>()[0] = 2.f;
  wanted.constant_inputs["k"] = two;
  EXPECT_NE(error_of([&] { make_engine(m, wanted); }).find(f.string() + ": field 'constant_inputs': asked for {\"k\":"),
            std::string::npos);
  fs::remove(f);
}

// ---- through the binary ----

TEST(PlanCli, BuildThenRunInspectAndProfileFromThePlan) {
  const fs::path dir = fs::temp_directory_path() / ("fb_plan_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string bin = FUSEBENCH_BINARY;
  const std::string plan = (dir / "mlp.plan").string();
  Outcome b = sh(bin + " build 'zoo:mlp?hidden=32&in=16&layers=2&out=4' --fusion standard --batch 2 -o " + plan);
  ASSERT_EQ(b.code, 0) << b.output;
  EXPECT_NE(b.output.find("wrote " + plan), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("engine loaded in"), std::string::npos) << b.output;

  Outcome i = sh(bin + " inspect " + plan);
  ASSERT_EQ(i.code, 0) << i.output;
  EXPECT_NE(i.output.find("(standard, batch 2)"), std::string::npos) << i.output;
  EXPECT_NE(i.output.find("engine loaded from " + plan + " built at "), std::string::npos) << i.output;
  EXPECT_EQ(i.output.find("after fusion"), i.output.rfind("after fusion")) << "the passes ran again:\n" << i.output;
  Outcome wrong = sh(bin + " inspect " + plan + " --fusion none");
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("field 'fusion'"), std::string::npos) << wrong.output;

  Outcome ex = sh(bin + " exec " + plan);
  EXPECT_EQ(ex.code, 0) << ex.output;
  EXPECT_NE(ex.output.find(plan + "  engine, fusion standard, batch 2"), std::string::npos) << ex.output;

  Outcome prof = sh(bin + " profile " + plan + " --iterations 3");
  ASSERT_EQ(prof.code, 0) << prof.output;
  EXPECT_NE(prof.output.find("standard, batch 2"), std::string::npos) << prof.output;

  auto run_scenario = [&](const std::string& batch) {
    std::ofstream(dir / "s.json") << R"({"model": "mlp.plan", "matrix": {"batch": [)" + batch + R"(], "fusion": ["standard"]},
      "threads": 1, "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 3, "max_seconds": 0.1}})";
    return sh(bin + " run " + (dir / "s.json").string() + " --db " + (dir / "r.db").string());
  };
  Outcome r = run_scenario("2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 passed, 0 failed, 0 errors"), std::string::npos) << r.output;

  Outcome bad = run_scenario("1");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("field 'batch': asked for 1 but the plan was built with 2"), std::string::npos) << bad.output;

  // A damaged plan file: one clear error, exit 2.
  {
    std::fstream f(plan, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char c = static_cast<char>(f.get());
    f.seekp(100);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  Outcome damaged = sh(bin + " inspect " + plan);
  EXPECT_EQ(damaged.code, 2) << damaged.output;
  EXPECT_NE(damaged.output.find(plan + ": damaged plan"), std::string::npos) << damaged.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fb
