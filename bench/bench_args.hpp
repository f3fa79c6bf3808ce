// Small helpers shared by the benchmark programs of bench/: the median of timings and
// "--name value" command-line options.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace fp4jit::bench {

// The median (the mean of the two middle values for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The value after `name` in args, else `fallback`.
inline std::string arg(const std::vector<std::string>& args, const std::string& name,
                       const std::string& fallback) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return args[i + 1];
  return fallback;
}

// s cut at every `sep` (empty pieces kept: "" gives one empty piece).
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace fp4jit::bench
