// The spread of GEMM kernels the compile tests build (tests/nvrtc/gemm_compile_test.cpp) and the
// SASS family test reads (sass_test.cpp): per preset and target, each of its three GEMMs over
// tile widths, ring depths, raster orders, output types and the small-M kernels. Sources only:
// nothing is compiled here.
#pragma once
#include <string>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "core/gemm.hpp"
#include "core/recipe.hpp"

namespace fp4jit::test_util {

// A spread of configs for one GEMM: the heuristic's for a large and a small M, other tile widths
// and ring depths, every output type. With `full` false, the heuristic's choices alone (BF16
// output): for a GEMM whose kernels differ from an earlier one's of the preset only in N and K.
std::vector<codegen::KernelSource> spread(const Recipe& r, GemmOp op, const GemmShape& s,
                                          const std::string& arch, bool full);

struct PresetKernels {
  std::vector<codegen::KernelSource> kernels;  // distinct keys, in generation order
  int unsupported = 0;                         // GEMMs of the preset with no kernel on the target
};

// Every GEMM kernel the spread gives one preset on one target. A GEMM the target cannot multiply
// is counted in `unsupported` (only on sm_100a; anything else fails the calling test).
PresetKernels preset_kernels(const std::string& preset, const std::string& arch);

}  // namespace fp4jit::test_util
