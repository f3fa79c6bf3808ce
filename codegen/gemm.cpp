// GEMM problems (which kernel path multiplies a recipe's operand pair) and the heuristic.
#include "codegen/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "gemm/sm100/config.cuh"
#include "gemm/sm90/heuristic.cuh"

namespace fp4jit::codegen {

static_assert(static_cast<int>(GemmPath::ms) == static_cast<int>(sm90::ScaleKind::ms) &&
                  static_cast<int>(GemmPath::mx) == static_cast<int>(sm90::ScaleKind::mx) &&
                  static_cast<int>(GemmPath::nv) == static_cast<int>(sm90::ScaleKind::nv) &&
                  static_cast<int>(GemmPath::ms_grad) == static_cast<int>(sm90::ScaleKind::ms_grad),
              "GemmPath mirrors sm90::ScaleKind");

namespace {

constexpr std::array<Named<GemmPath>, 4> kPathNames{{{GemmPath::ms, "ms"},
                                                     {GemmPath::mx, "mx"},
                                                     {GemmPath::nv, "nv"},
                                                     {GemmPath::ms_grad, "ms_grad"}}};

std::string operand_text(const Recipe& r, Role role) {
  const OperandSpec& s = r[role];
  std::string out =
      fmt::format("elem={},scale={},block={}", name(s.elem), name(s.scale), block_text(s.block));
  if (s.scale == ScaleFormat::ue5m3)
    out += fmt::format(",ue5m3={}", name_of(ue5m3_variant_names(), r.ue5m3));
  return out;
}

bool is_tile(const Block& b, int rows, int cols) {
  return b.kind == Block::Kind::tile && b.rows == rows && b.cols == cols;
}

// The path for the pair, or false. nv_ok: scale formats the target's nv path decodes.
bool pick_path(const Recipe& r, Role a_role, Role b_role, bool sm100, GemmSpec& spec) {
  const OperandSpec &a = r[a_role], &b = r[b_role];
  const bool fp4 = a.elem == ElemFormat::e2m1 && b.elem == ElemFormat::e2m1;
  if (fp4 && a.scale == ScaleFormat::e8m0 && b.scale == ScaleFormat::e8m0 &&
      is_tile(a.block, 1, 32) && is_tile(b.block, 1, 32)) {
    spec.path = GemmPath::mx;
    return true;
  }
  const auto nv_block = [](const Block& blk) {
    return is_tile(blk, 1, 16) || is_tile(blk, 16, 16);
  };
  if (fp4 && a.rule == ScaleRule::two_level && b.rule == ScaleRule::two_level &&
      a.scale == b.scale && nv_block(a.block) && nv_block(b.block)) {
    if (a.scale == ScaleFormat::ue5m3 && sm100) return false;  // tcgen05 decodes UE4M3 / UE8M0 only
    spec.path = GemmPath::nv;
    spec.scale_code = a.scale == ScaleFormat::ue4m3 ? 0 : 1 + static_cast<int>(r.ue5m3);
    spec.a_block_rows = a.block.rows;
    spec.b_block_rows = b.block.rows;
    return true;
  }
  if (sm100) return false;
  if (fp4 && a.scale == ScaleFormat::fp32 && b.scale == ScaleFormat::fp32 &&
      a.block.kind == Block::Kind::row && b.block.kind == Block::Kind::row) {
    spec.path = GemmPath::ms;
    return true;
  }
  // msfp4 backward: E5M2 A with one tensor scale, E2M1 B with power-of-two scales per K column.
  if (a.elem == ElemFormat::e5m2 && a.scale == ScaleFormat::fp32 &&
      a.block.kind == Block::Kind::tensor && b.elem == ElemFormat::e2m1 &&
      b.scale == ScaleFormat::fp32 && b.rule == ScaleRule::ms_pow2 &&
      b.block.kind == Block::Kind::col) {
    spec.path = GemmPath::ms_grad;
    return true;
  }
  return false;
}

}  // namespace

std::string_view gemm_path_name(GemmPath p) {
  return name_of(std::span<const Named<GemmPath>>(kPathNames), p);
}

std::string gemm_out_name(DType d) {
  switch (d) {
    case DType::f32:
      return "fp4jit::gemm::OutType::f32";
    case DType::f16:
      return "fp4jit::gemm::OutType::f16";
    case DType::bf16:
      return "fp4jit::gemm::OutType::bf16";
  }
  return "?";
}

GemmSpec gemm_spec(const Recipe& recipe, GemmOp op, std::int64_t n, std::int64_t k, DType out,
                   const std::string& target) {
  check_target(target);
  const bool sm90 = target == "sm_90a", sm100 = target == "sm_100a";
  if (!sm90 && !sm100)
    fail(ErrorKind::unsupported,
         "CUDA GEMM: no kernels for {} (sm_90a: Hopper; sm_100a: Blackwell, untested)", target);
  GemmSpec spec;
  spec.op = op;
  const GemmRoles roles = gemm_roles(op);
  spec.a_role = roles.a;
  spec.b_role = roles.b;
  spec.a_text = operand_text(recipe, roles.a);
  spec.b_text = operand_text(recipe, roles.b);
  spec.n = n;
  spec.k = k;
  spec.out = out;
  if (!pick_path(recipe, roles.a, roles.b, sm100, spec))
    fail(ErrorKind::unsupported,
         "CUDA GEMM ({}): no kernel multiplies {} operands A = {} ({}) and B = {} ({}) of recipe "
         "'{}'; the host and "
         "reference backends do",
         target, name(op), name(roles.a), spec.a_text, name(roles.b), spec.b_text, recipe.preset);
  if (k % 32 != 0)
    fail(ErrorKind::unsupported,
         "CUDA GEMM {}: K = {} is not a multiple of 32 (the TMA row pitch K/2 must be a multiple "
         "of 16 bytes); the "
         "host and reference backends take it",
         name(op), k);
  if (n > 0x7fffffff || k > 0x7fffffff)
    fail(ErrorKind::unsupported, "CUDA GEMM {}: N = {} or K = {} exceeds 2^31 - 1", name(op), n, k);
  return spec;
}

GemmChoice choose_gemm(const GemmSpec& spec, std::int64_t m, int sm_count,
                       const std::string& target) {
  GemmChoice c;
  if (target == "sm_100a") {
    const std::int64_t tiles = ((m + 127) / 128) * ((spec.n + 127) / 128);
    c.grid = static_cast<int>(std::min<std::int64_t>(tiles, 0x7fffffff));
    return c;
  }
  if (m <= swap_max_rows(spec.path)) return choose_sm90_swap(spec, m, sm_count);
  return choose_sm90_gemm(spec, m, sm_count, m >= kStagedMinRows);
}

std::int64_t swap_max_rows(GemmPath path) {
  return path == GemmPath::mx ? kSwapMaxRows : path == GemmPath::nv ? kSwapMaxRowsNv : 0;
}

std::int64_t sm90_swap_tiles(std::int64_t m, std::int64_t n, int block_t) {
  return ((m + block_t - 1) / block_t) * ((n + 127) / 128);
}

int sm90_swap_grid(std::int64_t tiles, int splits, bool cluster_split, int sm_count) {
  const std::int64_t sms = std::max(sm_count, 1);
  if (!cluster_split) return static_cast<int>(std::min<std::int64_t>(tiles * splits, sms));
  // Whole clusters of `splits` CTAs, each on one tile at a time.
  return static_cast<int>(std::max<std::int64_t>(std::min(tiles, sms / splits), 1)) * splits;
}

StreamK sm90_stream_k(std::int64_t tiles, std::int64_t k_units, int sm_count) {
  const std::int64_t total = std::max<std::int64_t>(tiles * k_units, 1);
  const std::int64_t ctas = std::min<std::int64_t>(std::max(sm_count, 1), total);
  // The kernel's cuts (templates/gemm/sm90/heuristic.cuh): tile t's pieces are the runs from
  // its first unit's to its last unit's.
  const auto cta_of = [&](std::int64_t s) { return sm90::stream_k_run_of(s, total, ctas); };
  std::int64_t most = 1;
  for (std::int64_t t = 0; t < tiles; ++t)
    most = std::max<std::int64_t>(most, cta_of((t + 1) * k_units - 1) - cta_of(t * k_units) + 1);
  return StreamK{static_cast<int>(ctas), static_cast<int>(most)};
}

GemmChoice choose_sm90_swap(const GemmSpec& spec, std::int64_t m, int sm_count) {
  // Measured (bench/gemm_sm90_notes.md, H100): split-K costs more than an idle quarter of the SMs
  // (its partial sums and hand-off), so tiles that fill half of the SMs run unsplit; with fewer,
  // tiles of 64 rows of A up to 128 rows (twice the tiles, B expanded twice) before K is split,
  // and the splits fill the SMs once. Two splits sum in clusters of two (nvfp4 128x4096x4096:
  // 1.15x the 128-row tiles split in 4 through global memory); more stay on the global hand-off,
  // as clusters of 3 or more CTAs may not all be resident at once (a GPC of 16 or 18 SMs holds 4
  // clusters of 4; 32 tiles x 4 splits ran in two waves, 0.78x).
  GemmChoice c;
  const std::int64_t sms = std::max(sm_count, 1);
  int block_t = m <= 64 ? 64 : 128;
  if (block_t == 128 && m <= 128 && 2 * sm90_swap_tiles(m, spec.n, 128) <= sms) block_t = 64;
  c.sm90 = default_sm90_swap_config(spec, block_t);
  const std::int64_t tiles = sm90_swap_tiles(m, spec.n, block_t);
  const std::int64_t segments = ((spec.k + 127) / 128 + c.sm90.period - 1) / c.sm90.period;
  c.splits = 2 * tiles > sms ? 1
                             : static_cast<int>(std::clamp<std::int64_t>(
                                   std::min<std::int64_t>(sms / tiles, segments), 1, 16));
  c.sm90.cluster_split = c.splits == 2;
  c.grid = sm90_swap_grid(tiles, c.splits, c.sm90.cluster_split, sm_count);
  return c;
}

GemmChoice choose_sm90_direct(const GemmSpec& spec, std::int64_t m, int sm_count) {
  // The swapped kernel's tiles and split-K (the same units: 128 rows of B, whole segments of the
  // same period) with the direct kernel's config.
  GemmChoice c = choose_sm90_swap(spec, m, sm_count);
  const bool cluster_split = c.sm90.cluster_split;
  c.sm90 = default_sm90_direct_config(spec, c.sm90.block_n);
  c.sm90.cluster_split = cluster_split;
  return c;
}

GemmChoice choose_sm90_gemm(const GemmSpec& spec, std::int64_t m, int sm_count, bool staged,
                            bool split) {
  const auto kind = static_cast<sm90::ScaleKind>(static_cast<int>(spec.path));
  const int mi = static_cast<int>(std::min<std::int64_t>(m, 0x7fffffff));
  const sm90::GemmChoice h = sm90::choose_gemm(kind, mi, static_cast<int>(spec.n),
                                               static_cast<int>(spec.k), sm_count, staged, split);
  GemmChoice c;
  c.sm90 =
      staged ? default_sm90_staged_config(spec, h.block_n) : default_sm90_config(spec, h.block_n);
  c.splits = h.splits;
  c.grid = h.grid;
  return c;
}

std::optional<GemmChoice> sm90_fallback_choice(const GemmSpec& spec, const GemmChoice& choice,
                                               std::int64_t m, int sm_count) {
  if ((!choice.sm90.staged && !choice.sm90.swap) || spec.path == GemmPath::ms ||
      spec.path == GemmPath::nv)
    return std::nullopt;
  // Unsplit: the fallback runs only on a window failure, and without split-K it needs no tile
  // counters, so the call clears nothing for it (no memset on the staged and swapped paths).
  return choose_sm90_gemm(spec, m, sm_count, false, /*split=*/false);
}

std::vector<KernelSource> gemm_kernels(const GemmSpec& spec, const GemmChoice& choice,
                                       std::int64_t m, int sm_count, const std::string& target) {
  std::vector<KernelSource> out{gemm_kernel(spec, choice, target)};
  if (target == "sm_100a" || (!choice.sm90.staged && !choice.sm90.swap)) return out;
  for (KernelSource& k : gemm_sm90_expand_kernels(spec, choice.sm90, target))
    out.push_back(std::move(k));
  if (const auto fb = sm90_fallback_choice(spec, choice, m, sm_count))
    out.push_back(gemm_sm90_kernel(spec, fb->sm90, target));
  return out;
}

std::string gemm_args_type(int tensor_maps) {
  std::string args;
  for (int i = 0; i < tensor_maps; ++i) args += "const __grid_constant__ fp4jit::sm90::TmaDesc, ";
  return args + "const fp4jit::gemm::GemmParams";
}

KernelSource gemm_kernel_source(const GemmSpec& spec, const std::string& arch,
                                const std::string& config_text, const std::string& target,
                                std::string declarations) {
  KernelSource k;
  k.op = "gemm_" + arch;
  k.function = "gemm_kernel";
  k.name_space = "fp4jit::" + arch;
  k.header = "gemm/" + arch + "/kernel.cuh";
  k.args_type = gemm_args_type(2);
  k.target = target;
  k.declarations = std::move(declarations);
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("path", gemm_path_name(spec.path))
                   .add("a", spec.a_text)
                   .add("b", spec.b_text)
                   .add("n", std::to_string(spec.n))
                   .add("k", std::to_string(spec.k))
                   .add("out", name(spec.out))
                   .add("config", config_text)
                   .add("target", target)
                   .text();
  return k;
}

KernelSource gemm_kernel(const GemmSpec& spec, const GemmChoice& choice,
                         const std::string& target) {
  if (target == "sm_100a") return gemm_sm100_kernel(spec, choice.sm100, target);
  return gemm_sm90_kernel(spec, choice.sm90, target);
}

}  // namespace fp4jit::codegen
