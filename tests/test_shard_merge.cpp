// `run --shard K/N` and `fusebench merge`: shards are a deterministic slice that does not
// depend on the order of the scenario files; merging every shard gives the same set of
// cases as one unsharded run, merging again adds nothing, and shards that do not belong
// together are refused with a message naming the shard.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "harness/cases/scenario.h"
#include "harness/run/run_loop.h"
#include "harness/store/result_store.h"
#include "shell_command.h"

namespace fs = std::filesystem;

namespace {

class ShardMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fusebench_shard_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const char* timing =
        R"("timing": {"processes": 1, "warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 3, "max_iterations": 3, "max_seconds": 0.05})";
    std::ofstream(path("a.json")) << R"({"name": "a", "model": "zoo:mlp?in=16&hidden=16&layers=1",
      "matrix": {"batch": [1, 2], "fusion": ["none", "standard"]}, )" << timing << "}";
    std::ofstream(path("b.json")) << R"({"name": "b", "model": "zoo:mlp?in=8&hidden=8&layers=1",
      "matrix": {"batch": [1, 3]}, )" << timing << "}";
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fb::Outcome fusebench(const std::string& args) const {
    return fb::sh(std::string(FUSEBENCH_BINARY) + " " + args + " --report " + path("r.html"));
  }
  fb::Outcome merge(const std::string& args) const { return fb::sh(std::string(FUSEBENCH_BINARY) + " merge " + args); }

  // The matrix identities of a database's latest run, each with how often it is there.
  std::multiset<std::string> cases_of(const std::string& db) const {
    fb::ResultStore store(db);
    std::multiset<std::string> out;
    for (const auto& c : store.load_cases(*store.latest_run())) out.insert(fb::matrix_identity(c.result.spec) + "|" + c.result.spec.case_key());
    return out;
  }

  fs::path dir_;
};

TEST(Shard, ParsesKOfNAndRefusesTheRest) {
  EXPECT_EQ(fb::parse_shard("2/4").index, 2);
  EXPECT_EQ(fb::parse_shard("2/4").count, 4);
  for (const char* bad : {"0/4", "5/4", "2", "2/4x", "a/b", "-1/3", "1/0"}) {
    try {
      fb::parse_shard(bad);
      ADD_FAILURE() << bad;
    } catch (const fb::Error& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos);
    }
  }
}

TEST_F(ShardMergeTest, ShardsPartitionTheCasesWhateverTheOrderOfTheScenarioFiles) {
  std::vector<fb::CaseSpec> ab, ba;
  for (const char* f : {"a.json", "b.json"})
    for (auto& c : fb::expand_cases(fb::load_scenario(path(f)))) ab.push_back(c);
  for (const char* f : {"b.json", "a.json"})
    for (auto& c : fb::expand_cases(fb::load_scenario(path(f)))) ba.push_back(c);
  ASSERT_EQ(ab.size(), 6u);
  std::multiset<std::string> all;
  for (int k = 1; k <= 4; ++k) {
    std::vector<std::string> x, y;
    for (const auto& c : fb::shard_cases(ab, {k, 4})) x.push_back(fb::matrix_identity(c));
    for (const auto& c : fb::shard_cases(ba, {k, 4})) y.push_back(fb::matrix_identity(c));
    EXPECT_EQ(std::multiset<std::string>(x.begin(), x.end()), std::multiset<std::string>(y.begin(), y.end())) << k;
    EXPECT_GE(x.size(), 1u);  // round robin over 6 cases: 2, 2, 1, 1
    EXPECT_LE(x.size(), 2u);
    all.insert(x.begin(), x.end());
  }
  std::multiset<std::string> expected;
  for (const auto& c : ab) expected.insert(fb::matrix_identity(c));
  EXPECT_EQ(all, expected);  // every case in exactly one shard
}

TEST_F(ShardMergeTest, MergedShardsEqualTheUnshardedRunAndMergingAgainAddsNothing) {
  const std::string scen = path("a.json") + " " + path("b.json");
  ASSERT_EQ(fusebench("run " + scen + " --db " + path("all.db")).code, 0);
  for (int k = 1; k <= 3; ++k) {
    // The files in another order for each shard: the slice does not depend on it.
    const std::string order = k == 2 ? path("b.json") + " " + path("a.json") : scen;
    auto o = fusebench("run " + order + " --shard " + std::to_string(k) + "/3 --db " + path("s" + std::to_string(k) + ".db"));
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_NE(o.output.find("(shard " + std::to_string(k) + "/3 of 6 cases)"), std::string::npos) << o.output;
  }
  auto o = merge(path("s1.db") + " " + path("s2.db") + " -o " + path("m.db"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("still missing shard(s) 3/3"), std::string::npos) << o.output;
  o = merge(path("s3.db") + " " + path("s1.db") + " -o " + path("m.db"));  // s1 again: harmless
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("0 cases added, 2 already there"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("all shards merged"), std::string::npos) << o.output;

  EXPECT_EQ(cases_of(path("m.db")), cases_of(path("all.db")));
  fb::ResultStore merged(path("m.db"));
  const auto runs = merged.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].finished_at.empty());
  EXPECT_EQ(runs[0].info.merged_from.size(), 3u);
  EXPECT_EQ(runs[0].case_count, 6);
  // A merged case keeps everything: samples and layers.
  for (const auto& c : merged.load_cases(runs[0].id)) {
    EXPECT_EQ(c.result.engine.samples_ms.size(), 3u);
    EXPECT_FALSE(c.result.layers.empty());
  }
  o = merge(path("s1.db") + " " + path("s2.db") + " " + path("s3.db") + " -o " + path("m.db"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("0 cases added, 6 already there"), std::string::npos) << o.output;
  EXPECT_EQ(fb::ResultStore(path("m.db")).load_cases(runs[0].id).size(), 6u);
}

void sql(const std::string& db, const std::string& text) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(h, text.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << text;
  sqlite3_close(h);
}

TEST_F(ShardMergeTest, RefusesShardsThatDoNotBelongTogetherNamingTheShard) {
  ASSERT_EQ(fusebench("run " + path("a.json") + " --shard 1/2 --db " + path("a1.db")).code, 0);
  ASSERT_EQ(fusebench("run " + path("a.json") + " " + path("b.json") + " --shard 2/2 --db " + path("ab2.db")).code, 0);
  ASSERT_EQ(fusebench("run " + path("a.json") + " --shard 2/2 --db " + path("a2.db")).code, 0);
  ASSERT_EQ(fusebench("run " + path("a.json") + " --shard 2/3 --db " + path("a23.db")).code, 0);
  ASSERT_EQ(fusebench("run " + path("a.json") + " --db " + path("plain.db")).code, 0);

  auto refused = [&](const std::string& args, const std::string& says) {
    const auto o = merge(args + " -o " + path("out.db"));
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << o.output;
  };
  refused(path("a1.db") + " " + path("ab2.db"), path("ab2.db") + ": ran the scenarios {a, b}, but " + path("a1.db") + " ran {a}");
  refused(path("a1.db") + " " + path("a23.db"), path("a23.db") + ": is shard 2/3, but " + path("a1.db") + " is shard 1/2");
  refused(path("a1.db") + " " + path("plain.db"), path("plain.db") + ": run 1 was not run with --shard K/N");

  fs::copy_file(path("a2.db"), path("a2-other-commit.db"));
  sql(path("a2-other-commit.db"), "UPDATE runs SET git_commit = 'feedfacecafe'");
  refused(path("a1.db") + " " + path("a2-other-commit.db"), path("a2-other-commit.db") + ": was made by fusebench feedfacecafe");

  fs::copy_file(path("a2.db"), path("a2-old-schema.db"));
  sql(path("a2-old-schema.db"), "UPDATE meta SET value = 3 WHERE key = 'schema_version'");
  refused(path("a1.db") + " " + path("a2-old-schema.db"), path("a2-old-schema.db") + " has schema version 3");

  fs::copy_file(path("a2.db"), path("a2-unfinished.db"));
  sql(path("a2-unfinished.db"), "UPDATE runs SET finished_at = NULL");
  refused(path("a1.db") + " " + path("a2-unfinished.db"), "never finished; complete it with `fusebench run --resume --shard 2/2");

  EXPECT_FALSE(fs::exists(path("out.db")));  // nothing was written for a refused merge
  // The refused shard was only read: its schema version is still the one it had.
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path("a2-old-schema.db").c_str(), &h), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 3);
  sqlite3_finalize(st);
  sqlite3_close(h);
}

}  // namespace
