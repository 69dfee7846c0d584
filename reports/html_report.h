// The self-contained HTML report of one stored run: one file, inline CSS and SVG, no
// scripts and no external resources, so it can be mailed, archived or attached to CI.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/result_store.h"

namespace fb {

// Renders the self-contained HTML report for one run (default: the latest run).
// fb::Error when the store has no runs or the run is absent.
std::string render_html_report(const ResultStore& store, std::optional<int64_t> run_id = std::nullopt);
// Renders and writes it to out_path (through a temporary file, so a failure never leaves a
// half-written report); fb::Error naming out_path if it cannot write.
void write_html_report(const ResultStore& store, const std::string& out_path,
                       std::optional<int64_t> run_id = std::nullopt);
// Escapes & < > " ' for use in HTML (and SVG) text and attribute values.
std::string html_escape(std::string_view s);

}  // namespace fb
