#include "tuner/cuda_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "runtime/cuda/gemm_plan.hpp"

namespace fp4jit::tuner {

namespace {

// Fields of a choice's text that differ from the heuristic's.
int distance(const std::string& a, const std::string& b) {
  const auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= s.size()) {
      std::size_t end = s.find(',', pos);
      if (end == std::string::npos) end = s.size();
      out.push_back(s.substr(pos, end - pos));
      pos = end + 1;
    }
    return out;
  };
  const auto fa = split(a), fb = split(b);
  int d = static_cast<int>(std::max(fa.size(), fb.size()) - std::min(fa.size(), fb.size()));
  for (std::size_t i = 0; i < std::min(fa.size(), fb.size()); ++i) d += fa[i] != fb[i] ? 1 : 0;
  return d;
}

template <class T>
void order_by_distance(std::vector<T>& v) {
  if (v.empty()) return;
  const std::string h = v.front().candidate.config;
  std::stable_sort(v.begin() + 1, v.end(), [&](const T& x, const T& y) {
    const int dx = distance(x.candidate.config, h), dy = distance(y.candidate.config, h);
    return dx != dy ? dx < dy : x.candidate.config < y.candidate.config;
  });
}

}  // namespace

std::vector<CudaGemmCandidate> cuda_gemm_space(const codegen::GemmSpec& spec, std::int64_t m,
                                               int sm_count, const std::string& target,
                                               std::vector<CandidateResult>* pruned) {
  const codegen::GemmChoice h = codegen::choose_gemm(spec, m, sm_count, target);
  std::vector<CudaGemmCandidate> out;
  std::set<std::string> seen;
  const std::string h_text = cuda::gemm_choice_text(h, target);
  out.push_back({h, Candidate{h_text, true}});
  seen.insert(h_text);
  const auto consider = [&](const codegen::GemmChoice& c) {
    const std::string text = cuda::gemm_choice_text(c, target);
    if (!seen.insert(text).second) return;
    try {
      out.push_back(
          {cuda::parse_gemm_choice(text, spec, m, sm_count, target), Candidate{text, false}});
    } catch (const Error& e) {
      if (pruned != nullptr) pruned->push_back(pruned_candidate(text, false, e.what()));
    }
  };
  if (target == "sm_100a") {
    for (int st = 2; st <= 8; ++st) {
      codegen::GemmChoice c = h;
      c.sm100.stages = st;
      consider(c);
    }
    order_by_distance(out);
    return out;
  }
  const int k_tiles = cuda::sm90_k_tiles(spec);
  std::set<int> split_set{1, 2, 4, 8, h.splits};
  for (int bn : {64, 128, 256}) {
    const codegen::GemmSm90Config base = codegen::default_sm90_config(spec, bn);
    const std::int64_t tiles = ((m + 127) / 128) * ((spec.n + bn - 1) / bn);
    for (int depth : {0, 2, -2})
      for (const auto& [rg, along_m] :
           {std::pair{8, true}, std::pair{8, false}, std::pair{16, true}})
        for (int splits : split_set)
          for (int il : {0, 1}) {
            codegen::GemmChoice c = h;
            c.sm90 = base;
            c.sm90.packed_stages = base.packed_stages + depth;
            c.sm90.raster_group = rg;
            c.sm90.raster_along_m = along_m;
            c.sm90.nv_interleave = spec.path == codegen::GemmPath::nv ? il == 1 : false;
            if (spec.path != codegen::GemmPath::nv && il == 1) continue;
            if (spec.path == codegen::GemmPath::nv && il == 1 && bn % 128 != 0) continue;
            c.splits = splits;
            const std::string text = cuda::gemm_choice_text(c, target);
            if (splits > 1 && k_tiles / splits < 2) {
              if (pruned != nullptr && seen.insert(text).second)
                pruned->push_back(pruned_candidate(
                    text, false,
                    fmt::format("split-K {} leaves under 2 of the {} K tiles per split", splits,
                                k_tiles)));
              continue;
            }
            if (splits > 1 && tiles >= sm_count) {
              if (pruned != nullptr && seen.insert(text).second)
                pruned->push_back(pruned_candidate(
                    text, false,
                    fmt::format("split-K with {} tiles already filling {} SMs", tiles, sm_count)));
              continue;
            }
            consider(c);
          }
  }
  order_by_distance(out);
  return out;
}

std::vector<CudaRowsCandidate> cuda_rows_space(const OperandSpec& op, DType in,
                                               std::vector<CandidateResult>* pruned) {
  const codegen::RowsConfig h = codegen::default_rows_config(op, in);
  std::vector<CudaRowsCandidate> out{{h, Candidate{h.text(), true}}};
  std::set<std::string> seen{h.text()};
  for (int threads : {64, 128, 256, 512, 1024})
    for (int unroll : {1, 2, 4, 8}) {
      codegen::RowsConfig c{threads, unroll};
      if (!seen.insert(c.text()).second) continue;
      try {
        c.validate();
        out.push_back({c, Candidate{c.text(), false}});
      } catch (const Error& e) {
        if (pruned != nullptr) pruned->push_back(pruned_candidate(c.text(), false, e.what()));
      }
    }
  order_by_distance(out);
  return out;
}

std::vector<CudaTileCandidate> cuda_tile_space(const OperandSpec* row, const OperandSpec* col,
                                               DType in, std::vector<CandidateResult>* pruned) {
  const codegen::TileConfig h = codegen::default_tile_config(row, col, in);
  std::vector<CudaTileCandidate> out{{h, Candidate{h.text(), true}}};
  std::set<std::string> seen{h.text()};
  for (int threads : {128, 256, 512})
    for (int tr : {32, 64, 128})
      for (int tc : {32, 64, 128}) {
        codegen::TileConfig c{threads, tr, tc};
        if (!seen.insert(c.text()).second) continue;
        try {
          c.validate(row, col, in);
          out.push_back({c, Candidate{c.text(), false}});
        } catch (const Error& e) {
          if (pruned != nullptr) pruned->push_back(pruned_candidate(c.text(), false, e.what()));
        }
      }
  order_by_distance(out);
  return out;
}

}  // namespace fp4jit::tuner
