// The HTML report of fp4jit tune: one self-contained page (inline CSS and SVG, no scripts or
// external files) with, per shape, the heuristic's and the tuned kernel's rate beside the peers'
// (bench/peers.py JSON, or another fp4jit tune --json), and per problem every candidate's rate
// with the winner and the heuristic marked and the failed ones listed with their reasons.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace fp4jit::cli {

// `doc`: the document fp4jit tune --json prints. Throws Error(io) when the file cannot be written.
void write_tune_report(const std::string& path, const nlohmann::json& doc,
                       const std::vector<nlohmann::json>& peers);
// The page as text (for tests).
std::string tune_report_html(const nlohmann::json& doc, const std::vector<nlohmann::json>& peers);

}  // namespace fp4jit::cli
