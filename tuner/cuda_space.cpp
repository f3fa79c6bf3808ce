#include "tuner/cuda_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "runtime/cuda/gemm_plan.hpp"

namespace fp4jit::tuner {

namespace {

// Fields of a choice's text that differ from the heuristic's.
int distance(const std::string& a, const std::string& b) {
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
  // A candidate is what its text parses to, under the parsed choice's own text (the parser
  // derives what follows from the rest, e.g. stream-K's splits and grid).
  const auto consider = [&](const codegen::GemmChoice& c) {
    const std::string text = cuda::gemm_choice_text(c, target);
    if (!seen.insert(text).second) return;
    try {
      const codegen::GemmChoice parsed = cuda::parse_gemm_choice(text, spec, m, sm_count, target);
      const std::string own = cuda::gemm_choice_text(parsed, target);
      if (own != text && !seen.insert(own).second) return;
      out.push_back({parsed, Candidate{own, false}});
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
  // The staged kernel (expansion pass + shared-memory wgmma): tile widths, ring depths, rasters.
  const bool promote =
      spec.path == codegen::GemmPath::mx || spec.path == codegen::GemmPath::ms_grad;
  const std::vector<int> staged_widths =
      promote ? std::vector<int>{64, 128, 192} : std::vector<int>{128, 256};
  for (int bn : staged_widths) {
    const codegen::GemmSm90Config base = codegen::default_sm90_staged_config(spec, bn);
    const std::int64_t tiles = ((m + 127) / 128) * ((spec.n + bn - 1) / bn);
    for (int depth : {0, -1, -2})
      for (const auto& [rg, along_m] :
           {std::pair{8, true}, std::pair{8, false}, std::pair{16, true}})
        for (int splits : split_set) {
          const int units = cuda::sm90_split_units(spec, base);
          if (splits > 1 && (units / splits < 2 || tiles >= sm_count)) continue;
          codegen::GemmChoice c = h;
          c.sm90 = base;
          c.sm90.packed_stages = base.packed_stages + depth;
          c.sm90.raster_group = rg;
          c.sm90.raster_along_m = along_m;
          c.splits = splits;
          consider(c);
        }
    // D stored the other way (TMA stores through shared memory, or from registers), as many
    // stages as fit with it, one split.
    {
      codegen::GemmChoice c = h;
      c.sm90 = codegen::default_sm90_staged_config(spec, bn, !base.tma_store);
      c.splits = 1;
      consider(c);
    }
    // Clusters of two CTAs sharing B by TMA multicast (one split): where B's L2 traffic limits.
    if (m > 128) {
      codegen::GemmChoice c = h;
      c.sm90 = base;
      c.sm90.cluster_m = 2;
      c.splits = 1;
      consider(c);
    }
  }
  // The small-M kernels' split-K: over segments through global memory or (2..8 splits) within
  // clusters, where the tiles leave SMs idle; each choice of `base` passed to consider.
  const auto small_m_splits = [&](const codegen::GemmSm90Config& base, std::int64_t tiles, int hs) {
    const int units = cuda::sm90_split_units(spec, base);
    for (int splits : std::set<int>{1, 2, 3, 4, 6, 8, hs}) {
      if (splits > units || (splits > 1 && tiles >= sm_count)) continue;
      for (bool cluster : {false, true}) {
        if (cluster && (splits < 2 || splits > codegen::kMaxClusterSplits)) continue;
        codegen::GemmChoice c = h;
        c.sm90 = base;
        c.sm90.cluster_split = cluster;
        c.splits = splits;
        consider(c);
      }
    }
  };
  // The swapped small-M kernel (mx, nv): B expanded in registers, A once; tile of 64 or 128
  // rows of A, ring depths.
  if (m <= 2 * codegen::swap_max_rows(spec.path)) {
    const int hs = codegen::choose_sm90_swap(spec, m, sm_count).splits;
    for (int bt : {64, 128}) {
      if (bt == 64 && m > 128) continue;
      codegen::GemmSm90Config base = codegen::default_sm90_swap_config(spec, bt);
      const std::int64_t tiles = codegen::sm90_swap_tiles(m, spec.n, bt);
      const int stages = base.packed_stages;
      for (int depth : {0, -2}) {
        base.packed_stages = stages + depth;
        small_m_splits(base, tiles, hs);
      }
      // Stream-K: the grid's equal runs of segments (its splits follow from them).
      if (tiles < sm_count) {
        codegen::GemmChoice c = h;
        c.sm90 = codegen::default_sm90_swap_config(spec, bt);
        c.sm90.stream_k = true;
        consider(c);
      }
    }
  }
  // The direct small-M kernel (mx): tiles of 64 or 128 rows of A, ring depths of A and B,
  // promotion every K tile or at the heuristic's period (never longer: its accuracy or better).
  if (spec.path == codegen::GemmPath::mx && m <= 2 * codegen::swap_max_rows(spec.path)) {
    const int hs = codegen::choose_sm90_direct(spec, m, sm_count).splits;
    for (int bt : {64, 128}) {
      if (bt == 64 && m > 128) continue;
      const codegen::GemmSm90Config d = codegen::default_sm90_direct_config(spec, bt);
      const std::int64_t tiles = codegen::sm90_swap_tiles(m, spec.n, bt);
      for (const auto& [as, bs] : {std::pair{0, 0}, std::pair{2, -4}, std::pair{-2, 4}})
        for (int period : {1, d.period}) {
          codegen::GemmSm90Config base = d;
          base.packed_stages = d.packed_stages + as;
          base.exp_stages = d.exp_stages + bs;
          base.period = period;
          small_m_splits(base, tiles, hs);
        }
    }
  }
  order_by_distance(out);
  return out;
}

namespace {

// The heuristic's config of a quantize kernel (rows or tile) under each register cap (minb: CTAs
// per SM asked of the register allocator; the kernel's own rule otherwise), where the heuristic
// sets none: the trade between registers per thread and warps per SM moves with the GPU (an
// H100's pairs ran 1.10x faster at 256 threads with two CTAs' worth of registers than with the
// rule's three). The config's validate(), through `consider`, prunes caps the SM cannot hold
// (threads x minb > 2048).
template <class Config, class Consider>
void consider_register_caps(const Config& h, const Consider& consider) {
  if (h.min_blocks != 0) return;
  for (int minb = 1; minb <= 4; ++minb) {
    Config c = h;
    c.min_blocks = minb;
    consider(c);
  }
}

}  // namespace

std::vector<CudaRowsCandidate> cuda_rows_space(const OperandSpec& op, DType in,
                                               std::vector<CandidateResult>* pruned) {
  const codegen::RowsConfig h = codegen::default_rows_config(op, in);
  std::vector<CudaRowsCandidate> out{{h, Candidate{h.text(), true}}};
  std::set<std::string> seen{h.text()};
  const auto consider = [&](const codegen::RowsConfig& c) {
    if (!seen.insert(c.text()).second) return;
    try {
      c.validate(op, in);
      out.push_back({c, Candidate{c.text(), false}});
    } catch (const Error& e) {
      if (pruned != nullptr) pruned->push_back(pruned_candidate(c.text(), false, e.what()));
    }
  };
  // Ring slots per warp are unroll + 1 as far as kern::kRowsRingBytes (96 KB of dynamic shared
  // memory a CTA) allows: 384 threads fill 48 KB with two BF16 slots a warp, 512 threads 64 KB
  // (bench/quantize_notes.md, "Rows rings in dynamic shared memory").
  for (int threads : {64, 128, 256, 384, 512, 1024})
    for (int unroll : {1, 2, 4, 8}) consider(codegen::RowsConfig{threads, unroll});
  consider_register_caps(h, consider);
  order_by_distance(out);
  return out;
}

std::vector<CudaTileCandidate> cuda_tile_space(const OperandSpec* row, const OperandSpec* col,
                                               DType in, std::vector<CandidateResult>* pruned) {
  const codegen::TileConfig h = codegen::default_tile_config(row, col, in);
  std::vector<CudaTileCandidate> out{{h, Candidate{h.text(), true}}};
  std::set<std::string> seen{h.text()};
  const auto consider = [&](const codegen::TileConfig& c) {
    if (!seen.insert(c.text()).second) return;
    try {
      c.validate(row, col, in);
      out.push_back({c, Candidate{c.text(), false}});
    } catch (const Error& e) {
      if (pruned != nullptr) pruned->push_back(pruned_candidate(c.text(), false, e.what()));
    }
  };
  for (int threads : {128, 256, 512})
    for (int tr : {32, 64, 128})
      for (int tc : {32, 64, 128}) consider(codegen::TileConfig{threads, tr, tc});
  consider_register_caps(h, consider);
  order_by_distance(out);
  return out;
}

namespace {

// Fake, aligned, never dereferenced addresses for planning without a device.
void* fake(int i) {
  return reinterpret_cast<void*>(cuda::Arena::kCountingBase * 2 +
                                 static_cast<std::uintptr_t>(i) * 4096);
}

// Output views of `role` at fake addresses from fake(first) on.
QuantizedView fake_output(const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols,
                          int first) {
  QuantizedView out;
  out.codes = static_cast<std::uint8_t*>(fake(first));
  out.scales = fake(first + 1);
  out.tensor_scale = static_cast<float*>(fake(first + 2));
  out.amax = static_cast<float*>(fake(first + 3));
  if (recipe[role].occ) {
    out.residual_index = static_cast<std::int64_t*>(fake(first + 4));
    out.residual_value = static_cast<float*>(fake(first + 5));
    out.residual_count = static_cast<std::int64_t*>(fake(first + 6));
    out.residual_capacity = rows * cols / 8 + 1024;
  }
  return out;
}

cuda::Plan plan_for(const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols, DType in,
                    const cuda::DeviceInfo& device, bool pair) {
  const TensorView src{fake(0), in, rows, cols, 0};
  const QuantizedView out = fake_output(recipe, role, rows, cols, 1);
  const QuantizedView out_t = fake_output(recipe, transposed_copy(role), rows, cols, 8);
  cuda::Arena arena;
  return cuda::plan_quantize(recipe, role, src, out, pair ? &out_t : nullptr, QuantizeArgs{},
                             device, arena);
}

std::string config_of(const std::string& key_text) {
  const auto at = key_text.find(";config=");
  if (at == std::string::npos) return {};
  const auto start = at + 8;
  return key_text.substr(start, key_text.find(';', start) - start);
}

}  // namespace

std::vector<codegen::KernelSource> cuda_quantize_plan(const Recipe& recipe, Role role,
                                                      std::int64_t rows, std::int64_t cols,
                                                      DType in, const cuda::DeviceInfo& device,
                                                      bool pair) {
  std::vector<codegen::KernelSource> out;
  for (const cuda::Step& step : plan_for(recipe, role, rows, cols, in, device, pair))
    if (const cuda::Launch* l = std::get_if<cuda::Launch>(&step)) out.push_back(l->kernel);
  return out;
}

std::vector<std::pair<std::string, std::string>> cuda_quantize_kernels(
    const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols, DType in,
    const cuda::DeviceInfo& device, bool pair) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const cuda::Step& step : plan_for(recipe, role, rows, cols, in, device, pair))
    if (const cuda::Launch* l = std::get_if<cuda::Launch>(&step))
      out.emplace_back(l->kernel.op, config_of(l->kernel.key_text));
  return out;
}

std::vector<CudaQuantizeCandidate> cuda_quantize_space(const Recipe& recipe, Role role,
                                                       std::int64_t rows, std::int64_t cols,
                                                       DType in, const cuda::DeviceInfo& device,
                                                       std::vector<CandidateResult>* pruned,
                                                       bool pair) {
  cuda::DeviceInfo plain = device;
  plain.rows_config = nullptr;
  plain.tile_config = nullptr;
  std::string heuristic;
  bool rows_kernel = false, tile_kernel = false;
  for (const auto& [op, config] :
       cuda_quantize_kernels(recipe, role, rows, cols, in, plain, pair)) {
    const bool r = op == "quantize_rows", t = op == "quantize_tile";
    rows_kernel = rows_kernel || r;
    tile_kernel = tile_kernel || t;
    if (heuristic.empty() && (r || t)) heuristic = (r ? "rows:" : "tile:") + config;
  }
  if (heuristic.empty())
    fail(ErrorKind::unsupported,
         "quantize {} {}x{}: its plan launches no quantize_rows or quantize_tile kernel",
         name(role), rows, cols);
  std::vector<CudaQuantizeCandidate> out{
      {cuda::parse_quantize_tuning(heuristic), Candidate{heuristic, true}}};
  std::vector<cuda::QuantizeTuning> options;
  // A pair tunes its quantize_tile kernels (both operands from one read); a single operand its
  // quantize_rows or quantize_tile kernel.
  if (rows_kernel && !pair)
    for (const CudaRowsCandidate& c : cuda_rows_space(recipe[role], in, nullptr))
      options.push_back({c.config, {}});
  const bool transposed = role_info(role).transposed;
  const OperandSpec* row = pair || !transposed ? &recipe[role] : nullptr;
  const OperandSpec* col =
      pair ? &recipe[transposed_copy(role)] : (transposed ? &recipe[role] : nullptr);
  if (tile_kernel)
    for (const CudaTileCandidate& c : cuda_tile_space(row, col, in, pruned))
      options.push_back({{}, c.config});
  std::set<std::string> seen{heuristic};
  for (const cuda::QuantizeTuning& q : options) {
    const std::string text = q.text();
    if (!seen.insert(text).second) continue;
    cuda::DeviceInfo d = plain;
    d.rows_config = q.rows ? &*q.rows : nullptr;
    d.tile_config = q.tile ? &*q.tile : nullptr;
    bool applied = false;
    for (const auto& [op, config] : cuda_quantize_kernels(recipe, role, rows, cols, in, d, pair))
      applied = applied || config == text.substr(5);
    if (!applied) {
      if (pruned != nullptr)
        pruned->push_back(pruned_candidate(
            text, false, "not valid for this operand's kernel (the plan keeps its own)"));
      continue;
    }
    out.push_back({q, Candidate{text, false}});
  }
  order_by_distance(out);
  return out;
}

}  // namespace fp4jit::tuner
