// The zoo's table of models and the parsing of "zoo:NAME?k=v&..." specs: every spec is
// validated and normalized here, before any model code runs.
#include "engine/zoo/zoo.h"

#include <algorithm>
#include <charconv>

#include "engine/ir/error.h"
#include "engine/util/closest_name.h"
#include "engine/zoo/models.h"

namespace fb {

namespace {

constexpr std::string_view kPrefix = "zoo:";

const std::vector<const zoo::ModelDef*>& table() {
  static const std::vector<const zoo::ModelDef*> models = {
      &zoo::mlp_model(), &zoo::bert_model(), &zoo::resnet_model(), &zoo::mobilenet_model(),
      &zoo::vit_model(), &zoo::llama_model(), &zoo::efficientnet_model(), &zoo::gpt_model(),
      &zoo::yolo_model(), &zoo::shufflenet_model(), &zoo::wav2vec2_model()};
  return models;
}

std::vector<std::string> known_names() {
  std::vector<std::string> names;
  for (const auto* m : table()) names.push_back(m->name);
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

struct Parsed {
  const zoo::ModelDef* def;
  zoo::ZooArgs args;
};

Parsed parse(const std::string& spec) {
  std::string body = spec;
  if (is_zoo_spec(body)) body = body.substr(kPrefix.size());
  const size_t q = body.find('?');
  const std::string name = body.substr(0, q);
  const zoo::ModelDef* def = nullptr;
  for (const auto* m : table())
    if (m->name == name) def = m;
  if (!def)
    throw Error("unknown zoo model '" + name + "' in '" + spec + "'" + did_you_mean(name, known_names()) +
                " (known models: " + joined(known_names()) + ")");

  Parsed p{def, {}};
  p.args.model = name;
  std::map<std::string, std::string> given;
  if (q != std::string::npos) {
    for (const auto& item : split(body.substr(q + 1), '&')) {
      if (item.empty()) continue;  // "a=1&&b=2" or a trailing '&' is harmless
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq);
      std::vector<std::string> params;
      for (const auto& pd : def->params) params.push_back(pd.name);
      if (std::find(params.begin(), params.end(), key) == params.end())
        throw Error("zoo model '" + name + "': unknown parameter '" + key + "'" + did_you_mean(key, params) +
                    " (it takes: " + joined(params) + ")");
      if (eq == std::string::npos)
        throw Error("zoo model '" + name + "': parameter '" + key + "' has no value (write " +
                    key + "=VALUE)");
      if (!given.emplace(key, item.substr(eq + 1)).second)
        throw Error("zoo model '" + name + "': parameter '" + key + "' is given twice");
    }
  }

  for (const auto& pd : def->params) {
    int64_t value = pd.default_value;
    if (auto it = given.find(pd.name); it != given.end()) {
      const std::string& text = it->second;
      const char* first = text.data();
      const char* last = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(first, last, value);
      if (text.empty() || ec == std::errc::invalid_argument || ptr != last)
        throw Error("zoo model '" + name + "': parameter '" + pd.name + "' must be an integer, got '" +
                    text + "'");
      if (ec == std::errc::result_out_of_range || value < pd.min || value > pd.max)
        throw Error("zoo model '" + name + "': parameter '" + pd.name + "' must be between " +
                    std::to_string(pd.min) + " and " + std::to_string(pd.max) + ", got " + text);
    }
    p.args.values[pd.name] = value;
  }

  std::string normalized = std::string(kPrefix) + name;
  char sep = '?';
  for (const auto& [k, v] : p.args.values) {  // std::map: sorted by name
    normalized += sep + k + "=" + std::to_string(v);
    sep = '&';
  }
  p.args.spec = normalized;
  def->validate(p.args);
  return p;
}

}  // namespace

namespace zoo {

int64_t ZooArgs::operator[](const std::string& param) const {
  auto it = values.find(param);
  FB_CHECK(it != values.end(), "zoo model " + model + " has no parameter " + param);
  return it->second;
}

void ZooArgs::fail(const std::string& param, const std::string& message) const {
  throw Error("zoo model '" + model + "': parameter '" + param + "' " + message);
}

}  // namespace zoo

std::vector<ZooModelInfo> zoo_models() {
  std::vector<ZooModelInfo> out;
  for (const auto* m : table()) {
    ZooModelInfo info{m->name, m->description, {}};
    for (const auto& pd : m->params)
      info.params.push_back({pd.name, std::to_string(pd.default_value), pd.help});
    out.push_back(std::move(info));
  }
  return out;
}

bool is_zoo_spec(const std::string& model) { return model.starts_with(kPrefix); }

onnx::ModelProto build_zoo_model(const std::string& spec) {
  Parsed p = parse(spec);
  return p.def->build(p.args);
}

std::string normalize_zoo_spec(const std::string& spec) { return parse(spec).args.spec; }

}  // namespace fb
