#include "cli/tune_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "core/error.hpp"

namespace fp4jit::cli {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Bar {
  std::string label;
  double value = 0.0;
  std::string color;
  std::string note;
};

// Horizontal bars, one per row, scaled to the largest value.
std::string bar_chart(const std::vector<Bar>& bars, const std::string& unit) {
  const int row = 18, label_w = 300, plot_w = 420, h = static_cast<int>(bars.size()) * row + 24;
  double top = 0.0;
  for (const Bar& b : bars) top = std::max(top, b.value);
  if (top <= 0.0) top = 1.0;
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="monospace" font-size="11">)",
      label_w + plot_w + 160, h);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = static_cast<int>(i) * row + 4;
    const double w = b.value / top * plot_w;
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", label_w - 6, y + 12,
                       escape(b.label));
    svg += fmt::format(R"(<rect x="{}" y="{}" width="{:.1f}" height="{}" fill="{}"/>)", label_w, y,
                       w, row - 4, b.color);
    svg += fmt::format(R"(<text x="{:.1f}" y="{}">{:.2f} {}{}</text>)", label_w + w + 4, y + 12,
                       b.value, escape(unit), b.note.empty() ? "" : "  " + escape(b.note));
  }
  svg += fmt::format(R"(<line x1="{}" y1="0" x2="{}" y2="{}" stroke="#444"/>)", label_w, label_w,
                     h - 20);
  return svg + "</svg>";
}

// The peers' numbers for one GEMM shape "MxNxK": name -> TFLOP/s.
std::map<std::string, double> peer_values(const std::vector<nlohmann::json>& peers,
                                          const std::string& shape, const std::string& problem) {
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const nlohmann::json& p = peers[i];
    if (p.contains("gemm") && p["gemm"].is_object() && p["gemm"].contains(shape)) {
      const std::string who = p.value("gpu", fmt::format("peers {}", i + 1));
      for (const auto& [name, v] : p["gemm"][shape].items())
        if (v.is_number()) out[name + " (" + who + ")"] = v.get<double>();
    }
    if (p.contains("results") && p["results"].is_array())
      for (const auto& r : p["results"])
        if (r.value("problem", "") == problem && r.value("rate_tuned", 0.0) > 0)
          out[fmt::format("fp4jit {} ({})", p.value("recipe", "?"),
                          p.value("device", "?").substr(0, 40))] = r["rate_tuned"].get<double>();
  }
  return out;
}

}  // namespace

std::string tune_report_html(const nlohmann::json& doc, const std::vector<nlohmann::json>& peers) {
  std::string html =
      R"(<!DOCTYPE html><html><head><meta charset="utf-8"><title>fp4jit tuning report</title><style>
body{font-family:sans-serif;margin:2em;max-width:1000px} h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px} td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}
.fail{color:#a00} .legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px}
</style></head><body>)";
  html += fmt::format(
      "<h1>fp4jit tuning report</h1><p>Recipe <b>{}</b> on {}<br>Backend {}; wall time {:.1f} "
      "s</p>",
      escape(doc.value("recipe", "")), escape(doc.value("device", "")),
      escape(doc.value("backend", "")), doc.value("wall_s", 0.0));
  html +=
      R"(<p class="legend"><span style="background:#2a7"></span>winner<span style="background:#e94"></span>heuristic<span style="background:#9ab"></span>other candidates<span style="background:#77c"></span>peers</p>)";
  html += "<h2>Per shape</h2>";
  for (const auto& r : doc["results"]) {
    if (!r.value("error", "").empty() || r.value("kind", "") != "gemm") continue;
    const std::string problem = r.value("problem", "");
    const std::string label = r.value("label", "");
    const std::string shape = label.substr(label.find(' ') + 1);
    std::vector<Bar> bars{{"heuristic", r.value("rate_heuristic", 0.0), "#e94", ""},
                          {"tuned", r.value("rate_tuned", 0.0), "#2a7", ""}};
    for (const auto& [name, v] : peer_values(peers, shape, problem))
      bars.push_back({name, v, "#77c", ""});
    html += fmt::format("<h3>{}</h3>", escape(label)) + bar_chart(bars, r.value("unit", ""));
  }
  html += "<h2>Per problem: every candidate</h2>";
  for (const auto& r : doc["results"]) {
    html += fmt::format("<h3>{} <small>({})</small></h3>", escape(r.value("label", "")),
                        escape(r.value("problem", "")));
    if (!r.value("error", "").empty()) {
      html += fmt::format("<p class=\"fail\">not tuned: {}</p>", escape(r.value("error", "")));
      continue;
    }
    std::vector<Bar> bars;
    std::string failed;
    const std::string winner = r.value("winner", "");
    for (const auto& c : r["candidates"]) {
      const std::string config = c.value("config", "");
      if (c.value("status", "") != "ok") {
        failed += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", escape(config),
                              escape(c.value("status", "")), escape(c.value("reason", "")));
        continue;
      }
      const bool h = c.value("heuristic", false);
      std::string note =
          config == winner ? (h ? "winner, heuristic" : "winner") : (h ? "heuristic" : "");
      if (!c.value("reason", "").empty())
        note += note.empty() ? "stopped early" : ", stopped early";
      bars.push_back(
          {config, c.value("rate", 0.0), config == winner ? "#2a7" : (h ? "#e94" : "#9ab"), note});
    }
    std::stable_sort(bars.begin(), bars.end(),
                     [](const Bar& a, const Bar& b) { return a.value > b.value; });
    html += bar_chart(bars, r.value("unit", ""));
    if (!failed.empty())
      html +=
          "<details><summary>candidates not "
          "measured</summary><table><tr><th>config</th><th>status</th><th>reason</th></tr>" +
          failed + "</table></details>";
  }
  return html + "</body></html>\n";
}

void write_tune_report(const std::string& path, const nlohmann::json& doc,
                       const std::vector<nlohmann::json>& peers) {
  std::ofstream f(path);
  f << tune_report_html(doc, peers);
  if (!f) fail(ErrorKind::io, "tune --report: could not write {}", path);
}

}  // namespace fp4jit::cli
