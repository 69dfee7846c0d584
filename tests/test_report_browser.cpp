// The HTML report in a real browser: headless Chromium opens a report of a synthetic
// nightly history (make_history_db --hostile: names with <script>, quotes, </script>,
// </textarea>, newlines and non-ASCII text) through the DevTools protocol
// (tests/browser/check_report.mjs) and this test asserts what it saw: no console error,
// exception, dialog or network request; every chart drawn; the layer table expands; a
// hover shows the run. Screenshots land in BUILD/report_browser/. Skipped, saying so, where
// chromium or node is not installed (scripts/setup.sh installs both).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "shell_command.h"

namespace fs = std::filesystem;

namespace {

// The program named by the environment variable, else the Debian path; "" when absent.
std::string find_program(const char* env, const char* path) {
  const char* set = std::getenv(env);
  const std::string p = set && *set ? set : path;
  return fs::exists(p) ? p : "";
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

TEST(ReportBrowser, OpensCleanlyDrawsEveryChartAndExpandsLayers) {
  const std::string chromium = find_program("FUSEBENCH_CHROMIUM", "/usr/bin/chromium");
  const std::string node = find_program("FUSEBENCH_NODE", "/usr/bin/node");
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it): browser test skipped";
  if (node.empty()) GTEST_SKIP() << "node is not installed: browser test skipped";

  const fs::path dir = fs::path(FUSEBENCH_BUILD_DIR) / "report_browser";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "history.db").string(), html = (dir / "report.html").string();
  // 40 nights of 24 cases; every 10th case 6% slower from night 30.
  auto made = fb::sh(quote(MAKE_HISTORY_DB) + " --db " + quote(db) + " --runs 40 --cases 24 --step-at 30 --hostile");
  ASSERT_EQ(made.code, 0) << made.output;
  auto report = fb::sh(quote(FUSEBENCH_BINARY) + " report --db " + quote(db) + " -o " + quote(html));
  ASSERT_EQ(report.code, 0) << report.output;

  auto seen = fb::sh(quote(node) + " " + quote(std::string(FUSEBENCH_SOURCE_DIR) + "/tests/browser/check_report.mjs") + " " +
                     quote(chromium) + " " + quote(html) + " " + quote(dir.string()));
  const size_t brace = seen.output.rfind("\n{");
  const std::string text = brace == std::string::npos ? seen.output : seen.output.substr(brace + 1);
  const nlohmann::json r = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << seen.output;
  ASSERT_EQ(seen.code, 0) << r.dump(2);
  ASSERT_FALSE(r.contains("fatal")) << r.dump(2);

  EXPECT_EQ(r["console_errors"].size(), 0u) << r["console_errors"].dump(2);
  EXPECT_EQ(r["exceptions"].size(), 0u) << r["exceptions"].dump(2);
  EXPECT_EQ(r["log_errors"].size(), 0u) << r["log_errors"].dump(2);  // CSP violations land here
  EXPECT_EQ(r["requests"].size(), 0u) << r["requests"].dump(2);
  EXPECT_EQ(r["dialogs"].size(), 0u) << "a hostile name ran as script: " << r["dialogs"].dump(2);
  EXPECT_EQ(r["script_elements"], 2) << "only the data block and the page's script";
  EXPECT_EQ(r["textarea_elements"], 0);
  EXPECT_LE(r["page_overflow_px"].get<int>(), 0) << "the page scrolls sideways at 1400 px";
  EXPECT_EQ(r["cases"], 24);

  // Every case but the one that errored every night: three history charts, a batch curve,
  // a box plot; icicles where profiled.
  EXPECT_EQ(r["history_charts"], 23 * 3);
  EXPECT_GE(r["charts"].get<int>(), 23 * 5);
  EXPECT_EQ(r["empty_charts"].size(), 0u) << r["empty_charts"].dump(2);

  EXPECT_EQ(r["layer_rows_before"], 10);
  EXPECT_GT(r["layer_rows_after"].get<int>(), r["layer_rows_before"].get<int>());
  EXPECT_EQ(r["button_text"], "Show the first 10 only");
  EXPECT_GT(r["sources_open"].get<int>(), 1);

  // The banner says what is wrong: the synthetic step shows as regressions.
  EXPECT_NE(r["banner"].get<std::string>().find("Attention"), std::string::npos) << r["banner"];
  const std::string tip = r["tooltip"].get<std::string>();
  EXPECT_NE(tip.find("run "), std::string::npos) << tip;
  EXPECT_NE(tip.find("commit "), std::string::npos) << tip;
  EXPECT_NE(tip.find("host "), std::string::npos) << tip;
  for (const char* shot : {"report_top.png", "report_case.png", "report_hover.png"})
    EXPECT_GT(fs::file_size(dir / shot), 10000u) << shot;
}

}  // namespace
