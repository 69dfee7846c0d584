// ResultStore's reads of engine profiles (`fusebench profile --db`): the list, to match a
// profile to a case without loading it, and one profile in full, for the report.
#include <nlohmann/json.hpp>

#include "harness/store/result_store.h"
#include "harness/store/sqlite_statement.h"

namespace fb {

using store::Statement;

namespace {

const char* const kProfileColumns =
    "id, created_at, git_commit, model, model_hash, config_json, iterations, total_ms, peak_gflops, peak_gbps";

StoredProfile read_profile_row(const Statement& s) {
  StoredProfile p;
  p.id = s.integer("id");
  p.created_at = s.text("created_at");
  p.git_commit = s.text("git_commit");
  p.model = s.text("model");
  p.model_hash = s.text("model_hash");
  p.config_json = s.text("config_json");
  p.profile.iterations = static_cast<int>(s.integer("iterations"));
  p.profile.total_ms = s.real("total_ms");
  p.peaks = {s.real("peak_gflops"), s.real("peak_gbps")};
  return p;
}

}  // namespace

std::vector<StoredProfile> ResultStore::list_profiles() const {
  Statement s(db(), path_, std::string("SELECT ") + kProfileColumns + " FROM profiles ORDER BY created_at, id");
  std::vector<StoredProfile> out;
  while (s.step("list the profiles")) out.push_back(read_profile_row(s));
  return out;
}

StoredProfile ResultStore::load_profile(int64_t profile_id) const {
  store::ReadSnapshot snapshot(db(), path_);
  const std::string doing = "load profile " + std::to_string(profile_id);
  Statement s(db_, path_, std::string("SELECT ") + kProfileColumns + " FROM profiles WHERE id = :id");
  s.bind(":id", profile_id);
  if (!s.step(doing)) throw Error("profile " + std::to_string(profile_id) + " is not in " + path_);
  StoredProfile p = read_profile_row(s);
  Statement l(db_, path_,
              "SELECT layer_index, name, kind, kernel, median_ms, flops, bytes, sources_json FROM profile_layers "
              "WHERE profile_id = :id ORDER BY layer_index");
  l.bind(":id", profile_id);
  while (l.step(doing)) {
    LayerProfile lp;
    lp.index = static_cast<int>(l.integer("layer_index"));
    lp.name = l.text("name");
    lp.kind = l.text("kind");
    lp.kernel = l.text("kernel");
    lp.median_ms = l.real("median_ms");
    lp.flops = l.real("flops");
    lp.bytes = l.real("bytes");
    try {
      nlohmann::json::parse(l.text("sources_json")).get_to(lp.sources);
    } catch (const nlohmann::json::exception& e) {
      throw Error(path_ + ": sources_json of layer " + std::to_string(lp.index) + " of profile " + std::to_string(p.id) +
                  " is not a JSON list of names: " + e.what());
    }
    p.profile.layers.push_back(std::move(lp));
  }
  Statement n(db_, path_,
              "SELECT node, module, layer_index, ms, estimated FROM profile_nodes WHERE profile_id = :id ORDER BY rowid");
  n.bind(":id", profile_id);
  while (n.step(doing))
    p.profile.nodes.push_back({n.text("node"), n.text("module"), static_cast<int>(n.integer("layer_index")), n.real("ms"),
                               n.integer("estimated") != 0});
  p.profile.modules = roll_up_modules(p.profile.nodes, p.profile.total_ms);
  return p;
}

}  // namespace fb
