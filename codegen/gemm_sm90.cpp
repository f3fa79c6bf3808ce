// Stub of templates/gemm/sm90/kernel.cuh, and its config.
#include <fmt/format.h>

#include "codegen/gemm.hpp"
#include "gemm/sm90/geometry.cuh"

namespace fp4jit::codegen {

namespace {

sm90::ScaleKind kind_of(GemmPath p) {
  return static_cast<sm90::ScaleKind>(static_cast<int>(p));
}

}  // namespace

std::string GemmSm90Config::text() const {
  return fmt::format("bn={},ps={},es={},rg={}{},il={}", block_n, packed_stages, exp_stages,
                     raster_group, raster_along_m ? "m" : "n", nv_interleave ? 1 : 0);
}

void GemmSm90Config::validate(const GemmSpec& spec) const {
  const bool promote = spec.path == GemmPath::mx || spec.path == GemmPath::ms_grad;
  if (block_n % 64 != 0 || block_n < 64 || block_n > (promote ? 128 : 256))
    fail(ErrorKind::invalid_argument,
         "gemm_sm90 config {}: bn must be 64..{} in steps of 64 for path {}", text(),
         promote ? 128 : 256, gemm_path_name(spec.path));
  if (packed_stages < 2 || packed_stages > 16 || exp_stages < 2)
    fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: ps in 2..16, es >= 2", text());
  if (raster_group < 1) fail(ErrorKind::invalid_argument, "gemm_sm90 config {}: rg >= 1", text());
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

KernelSource gemm_sm90_kernel(const GemmSpec& spec, const GemmSm90Config& config,
                              const std::string& target) {
  config.validate(spec);
  const std::string declarations = fmt::format(
      "namespace g = fp4jit::sm90;\n\n"
      "struct Config : g::GemmConfigBase {{\n"
      "  static constexpr g::ScaleKind kKind = g::ScaleKind::{};\n"
      "  static constexpr g::ScaleCode kScaleCode = static_cast<g::ScaleCode>({});\n"
      "  static constexpr int kABlockRows = {}, kBBlockRows = {};\n"
      "  static constexpr int BLOCK_N = {};\n"
      "  static constexpr int kPackedStages = {}, kExpandedStages = {};\n"
      "  static constexpr int kRasterGroup = {};\n"
      "  static constexpr bool kRasterAlongM = {};\n"
      "  static constexpr bool kNvInterleave = {};\n"
      "  static constexpr g::OutType kOut = {};\n"
      "  static constexpr int kN = {}, kK = {};\n"
      "}};\n",
      gemm_path_name(spec.path), spec.scale_code, spec.a_block_rows, spec.b_block_rows,
      config.block_n, config.packed_stages, config.exp_stages, config.raster_group,
      config.raster_along_m, config.nv_interleave, gemm_out_name(spec.out), spec.n, spec.k);
  return gemm_kernel_source(spec, "sm90", config.text(), target, declarations);
}

}  // namespace fp4jit::codegen
