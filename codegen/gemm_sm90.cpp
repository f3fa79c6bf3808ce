// Stub of templates/gemm/sm90/kernel.cuh, and its config.
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "codegen/gemm.hpp"
#include "gemm/sm90/geometry.cuh"
#include "gemm/sm90/staged_geometry.cuh"

namespace fp4jit::codegen {

namespace {

sm90::ScaleKind kind_of(GemmPath p) {
  return static_cast<sm90::ScaleKind>(static_cast<int>(p));
}

// The stub's Config for the sm90 kernels: what every kernel reads (path, scale code, tile width,
// ring depth, raster, output, N and K), then `members`, the kernel's own.
std::string sm90_declarations(const GemmSpec& spec, const GemmSm90Config& config,
                              const std::string& members) {
  return fmt::format(
      "namespace g = fp4jit::sm90;\n\n"
      "struct Config : g::GemmConfigBase {{\n"
      "  static constexpr g::ScaleKind kKind = g::ScaleKind::{};\n"
      "  static constexpr g::ScaleCode kScaleCode = static_cast<g::ScaleCode>({});\n"
      "  static constexpr int BLOCK_N = {};\n"
      "  static constexpr int kPackedStages = {};\n"
      "  static constexpr int kRasterGroup = {};\n"
      "  static constexpr bool kRasterAlongM = {};\n"
      "  static constexpr g::OutType kOut = {};\n"
      "  static constexpr int kN = {}, kK = {};\n"
      "{}"
      "}};\n",
      gemm_path_name(spec.path), spec.scale_code, config.block_n, config.packed_stages,
      config.raster_group, config.raster_along_m, gemm_out_name(spec.out), spec.n, spec.k, members);
}

}  // namespace

std::string GemmSm90Config::text() const {
  if (direct)
    return fmt::format("dk=1,bn={},ps={},es={},rg={}{},pp={}{}", block_n, packed_stages, exp_stages,
                       raster_group, raster_along_m ? "m" : "n", period,
                       cluster_split ? ",cs=1" : "");
  if (swap)
    return fmt::format("sw=1,bn={},ps={},rg={}{},pp={}{}{}", block_n, packed_stages, raster_group,
                       raster_along_m ? "m" : "n", period, cluster_split ? ",cs=1" : "",
                       stream_k ? ",ks=1" : "");
  if (staged)
    return fmt::format("sg=1,bn={},ps={},rg={}{}{}{}{}", block_n, packed_stages, raster_group,
                       raster_along_m ? "m" : "n",
                       period != 1 ? fmt::format(",pp={}", period) : std::string(),
                       cluster_m != 1 ? fmt::format(",cm={}", cluster_m) : std::string(),
                       tma_store ? ",ts=1" : "");
  return fmt::format("bn={},ps={},es={},rg={}{},il={}", block_n, packed_stages, exp_stages,
                     raster_group, raster_along_m ? "m" : "n", nv_interleave ? 1 : 0);
}

void GemmSm90Config::validate(const GemmSpec& spec) const {
  const bool promote = spec.path == GemmPath::mx || spec.path == GemmPath::ms_grad;
  if (tma_store && !staged)
    fail(ErrorKind::invalid_argument,
         "gemm_sm90 config {}: ts (TMA stores of D) applies to the staged kernel (sg=1) only",
         text());
  if (cluster_split && !swap && !direct)
    fail(ErrorKind::invalid_argument,
         "gemm_sm90 config {}: cs (split-K in clusters) applies to the swapped (sw=1) and direct "
         "(dk=1) kernels only",
         text());
  if (stream_k && (!swap || cluster_split))
    fail(ErrorKind::invalid_argument,
         "gemm_sm90 config {}: ks (stream-K) applies to the swapped kernel (sw=1) without split-K "
         "in clusters (cs=1)",
         text());
  if (direct) {
    if (spec.path != GemmPath::mx)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: the direct kernel (dk=1) multiplies mx operands only, not {}",
           text(), gemm_path_name(spec.path));
    if (staged || swap || cluster_m != 1)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: the direct kernel takes no sg, sw or cm", text());
    if (block_n != 64 && block_n != 128)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: bn (rows of A per tile) must be 64 or 128 for the direct kernel",
           text());
    if (packed_stages < 2 || packed_stages > 8)
      fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: ps (stages of A) in 2..8", text());
    if (exp_stages < 2 || exp_stages > 16)
      fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: es (stages of B) in 2..16", text());
    if (raster_group < 1) fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: rg >= 1", text());
    if (period != 1 && period != 2 && period != 4)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: pp (K tiles per promotion) must be 1, 2 or 4 for the direct "
           "kernel",
           text());
    const sm90::DirectGeometry g = sm90::direct_geometry(block_n, packed_stages, exp_stages);
    if (g.smem_bytes > 227 * 1024)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: {} bytes of shared memory exceed 227 KB", text(), g.smem_bytes);
    return;
  }
  if (swap) {
    if (spec.path != GemmPath::mx && spec.path != GemmPath::nv)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: the swapped kernel (sw=1) multiplies mx and nv operands only, not "
           "{}",
           text(), gemm_path_name(spec.path));
    if (spec.b_block_rows != 1 && spec.b_block_rows != 16)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: the swapped kernel reads B's scales in blocks of 1 or 16 rows, "
           "not {}",
           text(), spec.b_block_rows);
    if (staged || cluster_m != 1)
      fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: the swapped kernel takes no sg or cm",
           text());
    if (block_n != 64 && block_n != 128)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: bn (rows of A per tile) must be 64 or 128 for the swapped kernel",
           text());
    if (packed_stages < 2 || packed_stages > 16)
      fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: ps in 2..16", text());
    if (raster_group < 1) fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: rg >= 1", text());
    if (period != 1 && period != 2 && period != 4)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: pp (K tiles per promotion or scale load) must be 1, 2 or 4 for "
           "the swapped kernel",
           text());
    const sm90::SwapGeometry g = sm90::swap_geometry(kind_of(spec.path), block_n, packed_stages);
    if (g.smem_bytes > 227 * 1024)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: {} bytes of shared memory exceed 227 KB", text(), g.smem_bytes);
    return;
  }
  if (staged) {
    // Promoting paths keep two accumulator sets: 192 columns at most.
    if (block_n % 64 != 0 || block_n < 64 || block_n > (promote ? 192 : 256))
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: bn must be 64..{} in steps of 64 for the staged path {}", text(),
           promote ? 192 : 256, gemm_path_name(spec.path));
    if (packed_stages < 2 || packed_stages > 16)
      fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: ps in 2..16", text());
    if (raster_group < 1) fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: rg >= 1", text());
    if (!sm90::staged_period_ok(promote, period))
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: pp (K tiles per promotion) must be {} for path {}", text(),
           promote ? "1, 2, 4 or 8" : "1", gemm_path_name(spec.path));
    if (cluster_m != 1 && cluster_m != 2)
      fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: cm (CTAs per cluster) must be 1 or 2",
           text());
    const sm90::StagedGeometry g = sm90::staged_geometry(kind_of(spec.path), block_n, packed_stages,
                                                         sm90_staged_epi_out_bytes(spec, *this));
    if (g.smem_bytes > 227 * 1024)
      fail(ErrorKind::invalid_argument,
           "gemm_sm90 config {}: {} bytes of shared memory exceed 227 KB{}", text(), g.smem_bytes,
           tma_store ? fmt::format(" ({} of them the epilogue's tile of D)", g.epi_bytes) : "");
    return;
  }
  if (block_n % 64 != 0 || block_n < 64 || block_n > (promote ? 128 : 256))
    fail(ErrorKind::invalid_argument,
         "gemm_sm90 config {}: bn must be 64..{} in steps of 64 for path {}", text(),
         promote ? 128 : 256, gemm_path_name(spec.path));
  if (packed_stages < 2 || packed_stages > 16 || exp_stages < 2)
    fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: ps in 2..16, es >= 2", text());
  if (raster_group < 1) fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: rg >= 1", text());
  if (period != 1)
    fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: pp applies to the staged kernel only",
         text());
  if (cluster_m != 1)
    fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: cm applies to the staged kernel only",
         text());
  const sm90::GemmGeometry g =
      sm90::gemm_geometry(kind_of(spec.path), 128, block_n, packed_stages, exp_stages, 1);
  if (g.smem_bytes > 227 * 1024)
    fail(ErrorKind::invalid_argument,
         "gemm_sm90 config {}: {} bytes of shared memory exceed 227 KB", text(), g.smem_bytes);
}

GemmSm90Config default_sm90_config(const GemmSpec& spec, int block_n) {
  GemmSm90Config c;
  c.block_n = block_n;
  switch (spec.path) {
    case GemmPath::ms:
      c.packed_stages = block_n > 128 ? 4 : 7;
      c.exp_stages = block_n > 128 ? 3 : 4;
      break;
    case GemmPath::mx:
      c.packed_stages = 7, c.exp_stages = 4;
      break;
    case GemmPath::nv:
      c.packed_stages = block_n > 128 ? 8 : 10;
      c.exp_stages = block_n > 128 ? 3 : 5;
      c.nv_interleave = block_n % 128 == 0;
      break;
    case GemmPath::ms_grad:
      c.packed_stages = 8, c.exp_stages = 4;
      break;
  }
  return c;
}

bool sm90_staged_tma_store_default(DType out) {
  return out == DType::bf16 || out == DType::f16;
}

int sm90_staged_epi_out_bytes(const GemmSpec& spec, const GemmSm90Config& config) {
  return sm90::staged_epi_out_bytes(config.staged && config.tma_store, spec.out == DType::f32);
}

GemmSm90Config default_sm90_staged_config(const GemmSpec& spec, int block_n) {
  return default_sm90_staged_config(spec, block_n, sm90_staged_tma_store_default(spec.out));
}

GemmSm90Config default_sm90_staged_config(const GemmSpec& spec, int block_n, bool tma_store) {
  GemmSm90Config c;
  c.staged = true;
  c.block_n = block_n;
  c.period = spec.path == GemmPath::mx || spec.path == GemmPath::ms_grad ? sm90::kStagedPeriod : 1;
  c.tma_store = tma_store;
  c.packed_stages = 6;
  while (c.packed_stages > 2 && sm90::staged_geometry(kind_of(spec.path), block_n, c.packed_stages,
                                                      sm90_staged_epi_out_bytes(spec, c))
                                        .smem_bytes > 227 * 1024)
    --c.packed_stages;
  return c;
}

GemmSm90Config default_sm90_direct_config(const GemmSpec& spec, int block_t) {
  GemmSm90Config c;
  c.direct = true;
  c.block_n = block_t;
  c.period = spec.path == GemmPath::mx ? sm90::kSwapPeriodMx : 1;
  c.packed_stages = kDirectAStages;
  c.exp_stages = kDirectBStages;
  return c;
}

GemmSm90Config default_sm90_swap_config(const GemmSpec& spec, int block_t) {
  GemmSm90Config c;
  c.swap = true;
  c.block_n = block_t;
  c.period = spec.path == GemmPath::mx ? sm90::kSwapPeriodMx : sm90::kStagedPeriod;
  c.packed_stages = 8;
  while (c.packed_stages > 2 &&
         sm90::swap_geometry(kind_of(spec.path), block_t, c.packed_stages).smem_bytes > 227 * 1024)
    --c.packed_stages;
  return c;
}

int sm90_expand_period(const GemmSpec& spec, int period) {
  return spec.path == GemmPath::mx || spec.path == GemmPath::ms_grad ? period : 1;
}

namespace {

// Whether the expansion is for a GEMM that applies A's and B's factors apart (the staged kernel
// on the mx path: B's reference over its whole row, staged_expand.cuh); the swapped kernel's
// (frag_order) keeps both per segment.
bool expand_split_factors(const GemmSpec& spec, bool frag_order) {
  return spec.path == GemmPath::mx && !frag_order;
}

// The expansion config of operand A (b = false) or B, as a struct named `name`.
std::string expand_config(const GemmSpec& spec, bool b, int period, bool frag_order,
                          std::string_view name) {
  return fmt::format(
      "struct {} : g::ExpandConfigBase {{\n"
      "  static constexpr g::ScaleKind kKind = g::ScaleKind::{};\n"
      "  static constexpr bool kOperandB = {};\n"
      "  static constexpr g::ScaleCode kScaleCode = static_cast<g::ScaleCode>({});\n"
      "  static constexpr int kBlockRows = {};\n"
      "  static constexpr int kPeriod = {};\n"
      "  static constexpr bool kFragOrder = {};\n"
      "  static constexpr bool kSplitFactors = {};\n"
      "}};\n",
      name, gemm_path_name(spec.path), b, spec.scale_code,
      b ? spec.b_block_rows : spec.a_block_rows, period, frag_order,
      expand_split_factors(spec, frag_order));
}

std::string expand_config_text(const GemmSpec& spec, bool b, int period, bool frag_order) {
  return fmt::format("block_rows={},threads=256{}{}{}", b ? spec.b_block_rows : spec.a_block_rows,
                     period != 1 ? fmt::format(",period={}", period) : std::string(),
                     frag_order ? ",frag_order" : "",
                     expand_split_factors(spec, frag_order) ? ",split_factors" : "");
}

KernelSource expand_source(std::string op, std::string function, std::string args,
                           const std::string& target) {
  KernelSource k;
  k.op = std::move(op);
  k.function = std::move(function);
  k.name_space = "fp4jit::sm90";
  k.header = "gemm/sm90/staged_expand.cuh";
  k.args_type = std::move(args);
  k.target = target;
  return k;
}

}  // namespace

KernelSource gemm_sm90_expand_kernel(const GemmSpec& spec, bool b, int period_in,
                                     const std::string& target, bool frag_order) {
  const int period = sm90_expand_period(spec, period_in);
  KernelSource k = expand_source("gemm_sm90_expand", "expand_kernel",
                                 "const fp4jit::gemm::ExpandParams", target);
  k.declarations =
      "namespace g = fp4jit::sm90;\n\n" + expand_config(spec, b, period, frag_order, "Config");
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("path", gemm_path_name(spec.path))
                   .add("operand", b ? "b" : "a")
                   .add("codes", b ? spec.b_text : spec.a_text)
                   .add("config", expand_config_text(spec, b, period, frag_order))
                   .add("target", target)
                   .text();
  return k;
}

KernelSource gemm_sm90_expand_pair_kernel(const GemmSpec& spec, int period_in,
                                          const std::string& target) {
  const int period = sm90_expand_period(spec, period_in);
  KernelSource k = expand_source(
      "gemm_sm90_expand_pair", "expand_pair_kernel",
      "const fp4jit::gemm::ExpandParams, const fp4jit::gemm::ExpandParams, int", target);
  k.declarations = "namespace g = fp4jit::sm90;\n\n" +
                   expand_config(spec, false, period, false, "ConfigA") +
                   expand_config(spec, true, period, false, "ConfigB") +
                   "struct Config {\n  using A = ConfigA;\n  using B = ConfigB;\n};\n";
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("path", gemm_path_name(spec.path))
                   .add("codes_a", spec.a_text)
                   .add("codes_b", spec.b_text)
                   .add("config_a", expand_config_text(spec, false, period, false))
                   .add("config_b", expand_config_text(spec, true, period, false))
                   .add("target", target)
                   .text();
  return k;
}

bool sm90_expand_apart(const GemmSpec& spec) {
  return spec.path == GemmPath::ms_grad;
}

std::vector<KernelSource> gemm_sm90_expand_kernels(const GemmSpec& spec, const GemmSm90Config& c,
                                                   const std::string& target) {
  if (c.swap) return {gemm_sm90_expand_kernel(spec, false, c.period, target, true)};
  if (sm90_expand_apart(spec))
    return {gemm_sm90_expand_kernel(spec, false, c.period, target),
            gemm_sm90_expand_kernel(spec, true, c.period, target)};
  return {gemm_sm90_expand_pair_kernel(spec, c.period, target)};
}

KernelSource gemm_sm90_kernel(const GemmSpec& spec, const GemmSm90Config& config,
                              const std::string& target) {
  config.validate(spec);
  // Each kernel's own Config members, and its template where it is not gemm_kernel_source's
  // kernel.cuh.
  std::string members;
  const char* header = nullptr;
  const char* function = nullptr;
  if (config.direct) {
    members = fmt::format(
        "  static constexpr int kExpandedStages = {};\n"
        "  static constexpr int kPeriod = {};\n"
        "  static constexpr bool kSplitCluster = {};\n",
        config.exp_stages, config.period, config.cluster_split);
    header = "gemm/sm90/direct.cuh", function = "gemm_direct_kernel";
  } else if (config.swap) {
    members = fmt::format(
        "  static constexpr int kBBlockRows = {};\n"
        "  static constexpr int kPeriod = {};\n"
        "  static constexpr bool kSplitCluster = {};\n"
        "  static constexpr bool kStreamK = {};\n",
        spec.b_block_rows, config.period, config.cluster_split, config.stream_k);
    header = "gemm/sm90/swap.cuh", function = "gemm_swap_kernel";
  } else if (config.staged) {
    members = fmt::format(
        "  static constexpr int kPeriod = {};\n"
        "  static constexpr int kClusterM = {};\n"
        "  static constexpr bool kTmaStore = {};\n",
        config.period, config.cluster_m, config.tma_store);
    header = "gemm/sm90/staged.cuh", function = "gemm_staged_kernel";
  } else {
    members = fmt::format(
        "  static constexpr int kABlockRows = {}, kBBlockRows = {};\n"
        "  static constexpr int kExpandedStages = {};\n"
        "  static constexpr bool kNvInterleave = {};\n",
        spec.a_block_rows, spec.b_block_rows, config.exp_stages, config.nv_interleave);
  }
  KernelSource k = gemm_kernel_source(spec, "sm90", config.text(), target,
                                      sm90_declarations(spec, config, members));
  if (header != nullptr) k.header = header, k.function = function;
  if (config.staged) k.args_type = gemm_args_type(3);  // D's tensor map after the operands'
  if (config.direct) k.args_type = gemm_args_type(0);  // no tensor maps: the codes' pointers
  return k;
}

}  // namespace fp4jit::codegen
