// Stub of templates/gemm/sm100/kernel.cuh (compiled for sm_100a, not yet run on hardware), and its
// config.
#include <fmt/format.h>

#include "codegen/gemm.hpp"
#include "gemm/sm100/config.cuh"

namespace fp4jit::codegen {

std::string GemmSm100Config::text() const {
  return fmt::format("bn={},st={}", block_n, stages);
}

void GemmSm100Config::validate(const GemmSpec& spec) const {
  if (spec.path != GemmPath::mx && spec.path != GemmPath::nv)
    fail(ErrorKind::unsupported, "gemm_sm100: path {} has no sm_100a kernel (mx and nv only)",
         gemm_path_name(spec.path));
  if (block_n != 128)
    fail(ErrorKind::invalid_argument, "gemm_sm100 config {}: bn must be 128", text());
  if (stages < 2 || stages > 8)
    fail(ErrorKind::invalid_argument, "gemm_sm100 config {}: st in 2..8", text());
  const auto kind = spec.path == GemmPath::mx ? sm100::ScaleKind::mx : sm100::ScaleKind::nv;
  if (sm100::gemm_geometry(kind, block_n, stages).smem_bytes > 227 * 1024)
    fail(ErrorKind::invalid_argument, "gemm_sm100 config {}: shared memory exceeds 227 KB", text());
}

KernelSource gemm_sm100_kernel(const GemmSpec& spec, const GemmSm100Config& config,
                               const std::string& target) {
  config.validate(spec);
  const std::string declarations = fmt::format(
      "// sm_100a: compiled, NOT YET RUN on hardware.\n"
      "namespace g = fp4jit::sm100;\n\n"
      "struct Config : g::GemmConfigBase {{\n"
      "  static constexpr g::ScaleKind kKind = g::ScaleKind::{};\n"
      "  static constexpr int kABlockRows = {}, kBBlockRows = {};\n"
      "  static constexpr int BLOCK_N = {};\n"
      "  static constexpr int kStages = {};\n"
      "  static constexpr g::OutType kOut = {};\n"
      "  static constexpr int kN = {}, kK = {};\n"
      "}};\n",
      gemm_path_name(spec.path), spec.a_block_rows, spec.b_block_rows, config.block_n,
      config.stages, gemm_out_name(spec.out), spec.n, spec.k);
  return gemm_kernel_source(spec, "sm100", config.text(), target, declarations);
}

}  // namespace fp4jit::codegen
