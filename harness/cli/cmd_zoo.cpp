// fusebench zoo: list the built-in models, or export one as an ONNX file any tool opens.
#include <fstream>

#include "engine/zoo/zoo.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"

namespace fb::cli {

int cmd_zoo(int argc, char** argv) {
  cxxopts::Options opts("fusebench zoo", "The built-in models: 'zoo list', 'zoo export NAME[?k=v...] -o FILE.onnx'.");
  opts.positional_help("list | export NAME");
  opts.add_options()("action", "list or export", cxxopts::value<std::string>())(
      "name", "model spec for export", cxxopts::value<std::string>())(
      "o,output", "ONNX file to write", cxxopts::value<std::string>());
  opts.parse_positional({"action", "name"});
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  const std::string action = args.count("action") ? args["action"].as<std::string>() : "";
  if (action == "list") {
    for (const ZooModelInfo& m : zoo_models()) {
      std::cout << m.name << "  " << m.description << "\n";
      for (const ZooParam& p : m.params) std::cout << "    " << p.name << "=" << p.default_value << "  " << p.help << "\n";
    }
    return kExitOk;
  }
  if (action == "export") {
    if (!args.count("name") || !args.count("output")) throw Error("usage: fusebench zoo export NAME[?k=v...] -o FILE.onnx");
    const std::string spec = args["name"].as<std::string>();
    onnx::ModelProto model = build_zoo_model(spec);
    const std::string out = args["output"].as<std::string>();
    std::ofstream f(out, std::ios::binary);
    if (!f || !model.SerializeToOstream(&f)) throw Error(out + ": cannot write the model");
    std::cout << "wrote " << out << " (" << normalize_zoo_spec(spec) << ", " << model.graph().node_size() << " nodes)\n";
    return kExitOk;
  }
  std::cerr << "fusebench zoo: expected 'list' or 'export NAME -o FILE'\n\n" << opts.help();
  return kExitError;
}

}  // namespace fb::cli
