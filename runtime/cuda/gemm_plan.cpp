#include "runtime/cuda/gemm_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/memo.hpp"
#include "core/text.hpp"
#include "gemm/sm100/config.cuh"
#include "gemm/sm90/geometry.cuh"
#include "gemm/sm90/heuristic.cuh"
#include "gemm/sm90/staged_geometry.cuh"

namespace fp4jit::cuda {

int default_sm_count(const std::string& target) {
  return target == "sm_100a" ? 148 : 132;
}

int sm90_k_tiles(const codegen::GemmSpec& spec) {
  const int block_k = sm90::sm90_block_k(static_cast<sm90::ScaleKind>(static_cast<int>(spec.path)));
  return static_cast<int>((spec.k + block_k - 1) / block_k);
}

int sm90_split_units(const codegen::GemmSpec& spec, const codegen::GemmSm90Config& config) {
  if (config.swap || config.direct)  // K tiles of 128 elements (swap.cuh, direct.cuh)
    return sm90::staged_k_units(static_cast<int>((spec.k + 127) / 128), config.period);
  const int k_tiles = sm90_k_tiles(spec);
  return config.staged ? sm90::staged_k_units(k_tiles, config.period) : k_tiles;
}

int gemm_grid(const codegen::GemmSpec& spec, std::int64_t m, int block_n, int splits, int sm_count,
              int cluster_m) {
  // Whole clusters, each on cluster_m row tiles of one column tile (one CTA: a tile).
  const std::int64_t units = sm90::sm90_tiles((m + cluster_m - 1) / cluster_m, spec.n, block_n);
  return static_cast<int>(std::min<std::int64_t>(units * splits, sm_count / cluster_m)) * cluster_m;
}

std::string gemm_choice_text(const codegen::GemmChoice& choice, const std::string& target) {
  if (target == "sm_100a") return choice.sm100.text();
  return fmt::format("{},sk={}", choice.sm90.text(), choice.splits);
}

codegen::GemmChoice parse_gemm_choice(const std::string& text, const codegen::GemmSpec& spec,
                                      std::int64_t m, int sm_count, const std::string& target) {
  codegen::GemmChoice c;
  const bool sm100 = target == "sm_100a";
  for (const std::string_view item : split(text)) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      fail(ErrorKind::invalid_argument, "GEMM choice '{}': '{}' is not key=value", text, item);
    const std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    bool along_m = true;
    if (key == "rg" && !value.empty() && (value.back() == 'm' || value.back() == 'n')) {
      along_m = value.back() == 'm';
      value.remove_suffix(1);
    }
    int v = 0;
    if (!parse_number(value, &v))
      fail(ErrorKind::invalid_argument, "GEMM choice '{}': '{}' is not an integer", text, value);
    if (key == "sg" && !sm100) {
      c.sm90.staged = v != 0;
    } else if (key == "sw" && !sm100) {
      c.sm90.swap = v != 0;
    } else if (key == "dk" && !sm100) {
      c.sm90.direct = v != 0;
    } else if (key == "bn") {
      c.sm90.block_n = v;
      c.sm100.block_n = v;
    } else if (key == "ps" && !sm100) {
      c.sm90.packed_stages = v;
    } else if (key == "es" && !sm100) {
      c.sm90.exp_stages = v;
    } else if (key == "rg" && !sm100) {
      c.sm90.raster_group = v;
      c.sm90.raster_along_m = along_m;
    } else if (key == "pp" && !sm100) {
      c.sm90.period = v;
    } else if (key == "cm" && !sm100) {
      c.sm90.cluster_m = v;
    } else if (key == "ts" && !sm100) {
      c.sm90.tma_store = v != 0;
    } else if (key == "cs" && !sm100) {
      c.sm90.cluster_split = v != 0;
    } else if (key == "ks" && !sm100) {
      c.sm90.stream_k = v != 0;
    } else if (key == "il" && !sm100) {
      c.sm90.nv_interleave = v != 0;
    } else if (key == "sk" && !sm100) {
      c.splits = v;
    } else if (key == "st" && sm100) {
      c.sm100.stages = v;
    } else {
      fail(ErrorKind::invalid_argument, "GEMM choice '{}': unknown key '{}' for {}", text, key,
           target);
    }
  }
  if (sm100) {
    c.sm100.validate(spec);
    c.grid = gemm_grid(spec, m, c.sm100.block_n, 1, 0x7fffffff);
    return c;
  }
  c.sm90.validate(spec);
  const int units = sm90_split_units(spec, c.sm90);
  if (c.sm90.stream_k) {
    // The splits follow from the grid's runs (any sk given is replaced).
    const codegen::StreamK sk = codegen::sm90_stream_k(
        codegen::sm90_swap_tiles(m, spec.n, c.sm90.block_n), units, sm_count);
    c.splits = sk.splits;
    c.grid = sk.grid;
    return c;
  }
  if (c.splits < 1 || c.splits > units)
    fail(ErrorKind::invalid_argument, "GEMM choice '{}': split-K {} must lie in 1..{} (K tiles{})",
         text, c.splits, units, units != sm90_k_tiles(spec) ? ", in segments" : "");
  if (c.sm90.cluster_m > 1 && c.splits > 1)
    fail(ErrorKind::invalid_argument, "GEMM choice '{}': clusters (cm={}) take no split-K (sk=1)",
         text, c.sm90.cluster_m);
  if (c.sm90.cluster_split && (c.splits < 2 || c.splits > codegen::kMaxClusterSplits))
    fail(ErrorKind::invalid_argument,
         "GEMM choice '{}': split-K in clusters (cs=1) takes 2..{} splits (one CTA each), not {}",
         text, codegen::kMaxClusterSplits, c.splits);
  if (c.sm90.swap || c.sm90.direct)
    c.grid = codegen::sm90_swap_grid(codegen::sm90_swap_tiles(m, spec.n, c.sm90.block_n), c.splits,
                                     c.sm90.cluster_split, sm_count);
  else
    c.grid = gemm_grid(spec, m, c.sm90.block_n, c.splits, sm_count, c.sm90.cluster_m);
  return c;
}

namespace {

GemmPlan make_plan(const Recipe& recipe, GemmOp op, const GemmShape& shape, DType out,
                   const DeviceInfo& device, const codegen::GemmChoice* choice) {
  GemmPlan p;
  p.spec = codegen::gemm_spec(recipe, op, shape.n, shape.k, out, device.target);
  p.choice = choice != nullptr
                 ? *choice
                 : codegen::choose_gemm(p.spec, shape.m, device.sm_count, device.target);
  p.kernel = codegen::gemm_kernel(p.spec, p.choice, device.target);
  const bool a_fp8 = p.spec.path == codegen::GemmPath::ms_grad;
  p.a_row_bytes = a_fp8 ? shape.k : shape.k / 2;
  p.b_row_bytes = shape.k / 2;
  if (device.target == "sm_100a") {
    const auto kind =
        p.spec.path == codegen::GemmPath::mx ? sm100::ScaleKind::mx : sm100::ScaleKind::nv;
    const sm100::GemmGeometry g =
        sm100::gemm_geometry(kind, p.choice.sm100.block_n, p.choice.sm100.stages);
    p.block_n = p.choice.sm100.block_n;
    p.threads = g.threads;
    p.smem_bytes = g.smem_bytes;
    p.a_box_bytes = p.b_box_bytes = g.row_bytes;
    p.a_swizzle = p.b_swizzle = 128;
  } else if (p.choice.sm90.direct) {
    // Both operands packed, read by the kernel itself (no tensor maps, no expansion launch, no
    // fallback): tiles of block_n rows of A x 128 rows of B.
    const codegen::GemmSm90Config& c = p.choice.sm90;
    const sm90::DirectGeometry g = sm90::direct_geometry(c.block_n, c.packed_stages, c.exp_stages);
    p.direct = true;
    p.block_m = c.block_n;
    p.block_n = 128;
    p.threads = g.threads;
    p.smem_bytes = g.smem_bytes;
    p.period = c.period;
  } else if (p.choice.sm90.swap) {
    // A (M rows) expanded in fragment order (mx: E4M3; nv: FP16 / BF16), B packed: tiles of
    // block_n rows of A x 128 rows of B.
    const codegen::GemmSm90Config& c = p.choice.sm90;
    const auto kind = static_cast<sm90::ScaleKind>(static_cast<int>(p.spec.path));
    const sm90::SwapGeometry g = sm90::swap_geometry(kind, c.block_n, c.packed_stages);
    p.staged = p.swap = true;
    p.block_m = c.block_n;
    p.block_n = 128;
    p.threads = g.threads;
    p.smem_bytes = g.smem_bytes;
    p.a_box_bytes = 128;
    p.a_swizzle = 128;
    p.b_box_bytes = 64;
    p.b_swizzle = 64;
    p.a_code_row_bytes = p.a_row_bytes;
    p.a_row_bytes = shape.k * g.elem_bytes;
    p.period = c.period;
    if (g.fp8) {  // mx: A's segment factors
      p.factor_rows = sm90_split_units(p.spec, c);
      p.a_factor_ld = sm90::staged_factor_ld(static_cast<int>(shape.m));
    }
    p.expand = codegen::gemm_sm90_expand_kernels(p.spec, c, device.target);
    if (const auto fb = codegen::sm90_fallback_choice(p.spec, p.choice, shape.m, device.sm_count))
      p.fallback.push_back(plan_gemm(recipe, op, shape, out, device, &*fb));
  } else if (p.choice.sm90.staged) {
    const auto kind = static_cast<sm90::ScaleKind>(static_cast<int>(p.spec.path));
    const codegen::GemmSm90Config& c = p.choice.sm90;
    const sm90::StagedGeometry g = sm90::staged_geometry(
        kind, c.block_n, c.packed_stages, codegen::sm90_staged_epi_out_bytes(p.spec, c));
    p.staged = true;
    p.tma_store = c.tma_store;
    p.block_n = c.block_n;
    p.threads = g.threads;
    p.smem_bytes = g.smem_bytes;
    p.a_box_bytes = p.b_box_bytes = 128;
    p.a_swizzle = p.b_swizzle = 128;
    p.cluster_m = c.cluster_m;
    p.a_code_row_bytes = p.a_row_bytes;
    p.b_code_row_bytes = p.b_row_bytes;
    p.a_row_bytes = shape.k * g.elem_bytes;
    p.b_row_bytes = shape.k * g.elem_bytes;
    p.period = c.period;
    p.factor_rows = sm90_split_units(p.spec, c);
    if (g.a_factor) p.a_factor_ld = sm90::staged_factor_ld(static_cast<int>(shape.m));
    if (g.b_factor || g.b_col_factor)
      p.b_factor_ld = sm90::staged_factor_ld(static_cast<int>(shape.n));
    p.b_whole_row = g.b_col_factor;
    p.expand = codegen::gemm_sm90_expand_kernels(p.spec, c, device.target);
    if (const auto fb = codegen::sm90_fallback_choice(p.spec, p.choice, shape.m, device.sm_count))
      p.fallback.push_back(plan_gemm(recipe, op, shape, out, device, &*fb));
  } else {
    const auto kind = static_cast<sm90::ScaleKind>(static_cast<int>(p.spec.path));
    const codegen::GemmSm90Config& c = p.choice.sm90;
    const sm90::GemmGeometry g =
        sm90::gemm_geometry(kind, 128, c.block_n, c.packed_stages, c.exp_stages, 1);
    p.block_n = c.block_n;
    p.threads = g.threads;
    p.smem_bytes = g.smem_bytes;
    p.a_box_bytes = g.packed_row_a;
    p.b_box_bytes = g.packed_row_b;
    p.a_swizzle = p.b_swizzle = g.swizzle64 ? 64 : 0;
  }
  // One CTA loads a whole tile of A and its cluster's part of B (staged.cuh).
  p.a_box_rows = p.block_m;
  p.b_box_rows = p.block_n / p.cluster_m;
  p.tiles = ((shape.m + p.block_m - 1) / p.block_m) * ((shape.n + p.block_n - 1) / p.block_n);
  if (p.choice.splits > 1 && !p.choice.sm90.cluster_split)
    p.workspace_floats = p.tiles * p.choice.splits * p.block_m * p.block_n;
  return p;
}

}  // namespace

// Plans are remembered by a text naming everything they read: an Engine plans the same few GEMMs
// on every call of a training step, and a plan writes kernel stubs (microseconds).
GemmPlan plan_gemm(const Recipe& recipe, GemmOp op, const GemmShape& shape, DType out,
                   const DeviceInfo& device, const codegen::GemmChoice* choice) {
  std::string key = canonical(recipe);
  key += fmt::format("|{}|{}x{}x{}|{}|{}|{}", static_cast<int>(op), shape.m, shape.n, shape.k,
                     name(out), device.target, device.sm_count);
  if (choice != nullptr)
    key += fmt::format("|{}|{}|{}|{}", choice->sm90.text(), choice->sm100.text(), choice->splits,
                       choice->grid);
  static TextMemo<GemmPlan> memo(1024);
  return memo.get(key, [&] { return make_plan(recipe, op, shape, out, device, choice); });
}

std::vector<codegen::KernelSource> GemmPlan::kernels() const {
  std::vector<codegen::KernelSource> out{kernel};
  out.insert(out.end(), expand.begin(), expand.end());
  for (const GemmPlan& f : fallback) out.push_back(f.kernel);
  return out;
}

std::vector<codegen::KernelSource> request_gemm_kernels(const Recipe& recipe,
                                                        const GemmRequest& request,
                                                        const std::string& target, int sm_count,
                                                        std::span<const DType> outs,
                                                        std::vector<std::string>* skipped) {
  std::vector<codegen::KernelSource> kernels;
  std::set<std::string> seen;
  const auto add = [&](codegen::KernelSource k) {
    if (seen.insert(k.key_text).second) kernels.push_back(std::move(k));
  };
  const DeviceInfo device{target, sm_count};
  for (const auto& [op, shape] : gemm_list(request)) {
    for (DType out : outs) {
      try {
        for (codegen::KernelSource& k : plan_gemm(recipe, op, shape, out, device).kernels())
          add(std::move(k));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::unsupported) throw;
        if (skipped != nullptr && out == outs.front()) skipped->push_back(e.what());
        continue;
      }
      if (op == GemmOp::fprop && recipe[gemm_roles(GemmOp::fprop).a].occ) {
        add(codegen::occ_transpose_kernel(out, target));
        add(codegen::occ_rows_kernel(target));
        add(codegen::occ_compensate_kernel(out, out, target));
      }
    }
  }
  return kernels;
}

}  // namespace fp4jit::cuda
