// Dumps, for scenario files and a few inline scenarios that set every field, each expanded
// case's case key, its stored config JSON (CaseSpec::to_json), that config read back and
// written again, and the BuildConfig JSON the runner builds it with; then the BuildConfig
// JSON and help text of the build flags for a few command lines. Run before and after a
// change to the configuration code and compare the outputs: they must be byte-identical
// (the case key and config_json identify a case in stored databases).
//   dump_case_config scenarios/*.json > before.txt
#include <cstdio>
#include <iostream>

#include "engine/plan/build_config_json.h"
#include "harness/cases/case_fields.h"
#include "harness/cases/scenario.h"
#include "harness/cli/options.h"

namespace {

void dump_cases(const std::string& title, const fb::Scenario& s) {
  for (fb::CaseSpec c : fb::expand_cases(s)) {
    c.model_hash = "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff";
    std::cout << title << " | " << c.label() << "\n";
    std::cout << "  key " << c.case_key() << "\n";
    std::cout << "  config " << c.to_json().dump() << "\n";
    std::cout << "  again " << fb::CaseSpec::from_json(c.to_json()).to_json().dump() << "\n";
    std::cout << "  build " << fb::build_config_to_json(fb::build_config_of(c)).dump() << "\n";
  }
}

const char* kInline[] = {
    R"({"name": "all", "model": "zoo:mlp",
        "matrix": {"precision": ["fp32", "bf16", "fp16"], "batch": [1, 3], "fusion": ["none", "aggressive"], "threads": [1, 2]},
        "timing": {"warmup_ms": 5.5, "warmup_iterations": 2, "min_iterations": 7, "max_iterations": 900, "max_seconds": 0.25,
                   "target_rel_ci": 0.125, "stop_rule": "speedup-ci", "pin_cpus": [0, 1], "inject_delay_us": 12.5,
                   "processes": 3, "alternation": "block", "block_iterations": 4},
        "accuracy": {"atol": 0.001, "rtol": 0.02, "min_cosine": 0.99, "bf16": {"atol": 0.5}, "fp16": {"min_cosine": 0.9}},
        "gate": {"min_speedup": 1.1, "max_regression": 0.05, "max_abs_err": 0.001},
        "fusion_limits": {"exclude_nodes": ["/a/*"], "exclude_ops": ["Softmax", "Gelu"], "partition_points": ["t1"]},
        "precision_constraints": {"mode": "obey", "layers": {"Softmax": "fp32", "/x/*": "bf16"}},
        "seed": 18446744073709551615, "plugin_cost": false})",
    R"({"model": "zoo:mlp", "threads": 4, "fusion_limits": {"exclude_ops": ["Add"]}, "seed": 0,
        "accuracy": {"rtol": 0}, "gate": {"max_abs_err": 0}})",
    R"({"model": "zoo:mlp", "precision_constraints": {"layers": {"MatMul": "fp16"}}, "matrix": {"fusion": ["mark-all", "standard"]}})",
};

void dump_flags(const std::vector<std::string>& argv_in) {
  cxxopts::Options opts("dump", "build flags");
  fb::cli::add_build_options(opts, "aggressive");
  std::vector<std::string> argv_s{"dump"};
  argv_s.insert(argv_s.end(), argv_in.begin(), argv_in.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  std::cout << "flags";
  for (const std::string& a : argv_in) std::cout << " " << a;
  std::cout << "\n";
  try {
    auto args = opts.parse(int(argv.size()), argv.data());
    std::cout << "  build " << fb::build_config_to_json(fb::cli::build_config_from(args)).dump() << "\n";
  } catch (const std::exception& e) {
    std::cout << "  error " << e.what() << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    try {
      dump_cases(argv[i], fb::load_scenario(argv[i]));
    } catch (const std::exception& e) {
      std::cout << argv[i] << " | error " << e.what() << "\n";
    }
  }
  int n = 0;
  for (const char* text : kInline) dump_cases("inline" + std::to_string(n++), fb::parse_scenario(text, "inline.json"));
  dump_flags({"m.onnx"});
  dump_flags({"m.onnx", "--fusion", "none", "--batch", "4", "--exclude-node", "/a/*", "--exclude-node", "/b/*",
              "--exclude-op", "Softmax", "--partition", "t", "--precision", "bf16", "--layer-precision", "Softmax=fp32",
              "--layer-precision", "/x/*=fp16", "--precision-mode", "obey"});
  dump_flags({"m.onnx", "--precision", "int4"});
  dump_flags({"m.onnx", "--precision-mode", "maybe"});
  dump_flags({"m.onnx", "--layer-precision", "nope"});
  cxxopts::Options opts("dump", "build flags");
  fb::cli::add_build_options(opts, "standard");
  std::cout << opts.help();
  return 0;
}
