#include "tuner/host_space.hpp"

#include <fmt/format.h>

#include <set>

#include "core/error.hpp"

namespace fp4jit::tuner {

namespace {

std::vector<int> widths(const host::HostConfig& base, int vector_bits) {
  const int native = vector_bits >= 512 ? 16 : (vector_bits >= 256 ? 8 : 4);
  std::set<int> w{base.vector_width, native};
  if (native / 2 >= 4) w.insert(native / 2);
  return {w.rbegin(), w.rend()};
}

// Adds `c` unless a config of the same text is there; the base config is marked heuristic.
void add(std::vector<HostCandidate>& out, std::set<std::string>& seen, const host::HostConfig& c,
         const std::string& text, const std::string& base_text) {
  if (!seen.insert(text).second) return;
  out.push_back({c, Candidate{text, text == base_text}});
}

}  // namespace

std::vector<HostCandidate> host_gemm_space(const host::HostConfig& base, int vector_bits,
                                           std::int64_t m, std::int64_t n, std::int64_t k,
                                           std::vector<CandidateResult>* pruned) {
  const int registers = vector_bits >= 512 ? 32 : 16;
  const std::string base_text = base.gemm_tuned_text();
  std::vector<HostCandidate> out;
  std::set<std::string> seen;
  out.push_back({base, Candidate{base_text, true}});
  seen.insert(base_text);
  const auto prune = [&](const host::HostConfig& c, std::string why) {
    if (pruned != nullptr && seen.insert(c.gemm_tuned_text()).second)
      pruned->push_back(pruned_candidate(c.gemm_tuned_text(), false, std::move(why)));
  };
  for (int vw : widths(base, vector_bits))
    for (int mr : {4, 6, 8})
      for (int nr_vectors : {1, 2, 3})
        for (int kc : {128, 256, 512})
          for (int mc_tiles : {8, 16, 32}) {
            host::HostConfig c = base;
            c.vector_width = vw;
            c.gemm_mr = mr;
            c.gemm_nr = nr_vectors * vw;
            c.gemm_kc = kc;
            c.gemm_mc = mc_tiles * mr;
            try {
              c.validate();
            } catch (const Error& e) {
              prune(c, e.what());
              continue;
            }
            const int live = mr * nr_vectors + nr_vectors + 1;
            if (live > registers) {
              prune(c, fmt::format(
                           "{} live vectors (mr x nr/vw accumulators + B + A) exceed {} registers",
                           live, registers));
              continue;
            }
            if (static_cast<std::int64_t>(kc) * (mr + c.gemm_nr) * 4 > 48 * 1024) {
              prune(c, "a K panel of A and B exceeds 48 KiB of L1");
              continue;
            }
            if (kc > 128 && kc / 2 >= k) {
              prune(c, fmt::format("kc {} covers K = {} as a smaller kc does", kc, k));
              continue;
            }
            if (c.gemm_mc > 8 * mr && c.gemm_mc / 2 >= m) {
              prune(c, fmt::format("mc {} covers M = {} as a smaller mc does", c.gemm_mc, m));
              continue;
            }
            add(out, seen, c, c.gemm_tuned_text(), base_text);
          }
  // Task granularity of the heuristic's blocking: panels of nr columns per task (the same binary).
  const std::int64_t panels = (n + base.gemm_nr - 1) / base.gemm_nr;
  for (int np : {1, 2, 4, 8, 16}) {
    host::HostConfig c = base;
    c.gemm_np = np;
    if (np > 1 && np / 2 >= panels) {
      prune(c, fmt::format("np {} covers the {} column panels as a smaller np does", np, panels));
      continue;
    }
    add(out, seen, c, c.gemm_tuned_text(), base_text);
  }
  return out;
}

std::vector<HostCandidate> host_quantize_space(const host::HostConfig& base, int vector_bits,
                                               std::int64_t rows,
                                               std::vector<CandidateResult>* pruned) {
  const std::string base_text = base.text();
  std::vector<HostCandidate> out;
  std::set<std::string> seen;
  out.push_back({base, Candidate{base_text, true}});
  seen.insert(base_text);
  for (int vw : widths(base, vector_bits))
    for (int band : {8, 16, 32, 64})
      for (int unroll : {1, 2, 4}) {
        host::HostConfig c = base;
        c.vector_width = vw;
        c.band_rows = band;
        c.unroll = unroll;
        if (band > 8 && band / 2 >= rows) {
          if (pruned != nullptr && seen.insert(c.text()).second)
            pruned->push_back(pruned_candidate(
                c.text(), false,
                fmt::format("band {} covers the {} rows as a smaller band does", band, rows)));
          continue;
        }
        add(out, seen, c, c.text(), base_text);
      }
  return out;
}

}  // namespace fp4jit::tuner
