// fusebench build: builds the engine for a model once and saves it as a plan file, which
// `run` (a scenario whose model is the plan), `inspect` and `profile` load without running
// the passes again. The plan is read back before the command succeeds.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "engine/builder/builder.h"
#include "engine/runtime/thread_scope.h"
#include "harness/cases/calibration.h"
#include "harness/cases/model_source.h"
#include "harness/cli/batch_label.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/shape_profile_options.h"

namespace fb::cli {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int cmd_build(int argc, char** argv) {
  cxxopts::Options opts("fusebench build", "Build the engine for a model and save it as a plan file.");
  add_build_options(opts, "standard");
  add_shape_profile_options(opts, kHiddenGroup);  // refused below, with the reason; not in --help
  opts.add_options()("threads", "threads to build with (the plan records them)", cxxopts::value<int>()->default_value("1"))(
      "o,output", "the plan file to write (FILE.plan)", cxxopts::value<std::string>());
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("model")) throw Error("a MODEL argument is required");
  if (!args.count("output")) throw Error("-o FILE.plan is required");
  const std::string model = args["model"].as<std::string>();
  const std::string out = args["output"].as<std::string>();
  if (!is_plan_path(out)) throw Error("-o " + out + ": a plan file's name must end in .plan (that is how MODEL arguments tell plans apart)");
  if (is_plan_path(model)) throw Error(model + ": already a plan");
  BuildConfig cfg = build_config_from(args);
  if (!shape_profile_from(args).empty())
    throw Error("--min-shapes, --opt-shapes and --max-shapes: a plan holds a static engine (plan files for dynamic engines are "
                "not done); `exec`, `inspect`, `profile` and `run` build a dynamic one");
  cfg.threads = args["threads"].as<int>();

  const LoadedModel m = load_model(model);
  ThreadScope threads(cfg.threads);
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Engine> engine = threads.run([&] {
    return naming_model(m, [&] {
      calibrate_for_int8(m, m.graph, cfg);
      return build_engine(m.graph, cfg);
    });
  });
  const double build_ms = ms_since(t0);
  write_plan_file(make_plan(*engine, m.reference, m.source_model(), m.base_dir), out);
  std::printf("built %s (%s, %s, %d thread(s)): %zu ONNX nodes -> %zu engine layers in %.1f ms\n",
              m.reference.c_str(), fusion_level_name(cfg.fusion), batch_label(m.graph, cfg.batch).c_str(), cfg.threads, m.onnx_nodes,
              engine->layers().size(), build_ms);

  // Read it back: a plan that cannot be loaded is caught here, not at benchmark time.
  t0 = std::chrono::steady_clock::now();
  const Plan plan = read_plan_file(out);
  const double read_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Engine> loaded = threads.run([&] { return engine_from_plan(plan, out); });
  const double load_ms = ms_since(t0);
  if (loaded->layers().size() != engine->layers().size())
    throw Error(out + ": the plan read back has " + std::to_string(loaded->layers().size()) + " layers, the build " +
                std::to_string(engine->layers().size()));
  std::string features;
  for (const std::string& f : plan.stamp.cpu_features) features += (features.empty() ? "" : " ") + f;
  std::printf("wrote %s (%ju bytes; fusebench %s, commit %s; CPU features: %s)\n", out.c_str(),
              std::uintmax_t(std::filesystem::file_size(out)), plan.stamp.fusebench_version.c_str(),
              plan.stamp.git_commit.c_str(), features.empty() ? "none beyond x86-64" : features.c_str());
  std::printf("read back: file parsed in %.1f ms, engine loaded in %.1f ms (build: %.1f ms)\n", read_ms, load_ms, build_ms);
  return kExitOk;
}

}  // namespace fb::cli
