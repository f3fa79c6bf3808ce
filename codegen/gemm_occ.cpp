// Stubs of templates/gemm/occ_compensate.cuh: the OCC compensation after an msfp4 fprop GEMM.
#include <fmt/format.h>

#include "codegen/gemm.hpp"

namespace fp4jit::codegen {

namespace {

// The fields every kernel of occ_compensate.cuh shares; `args` names its argument struct.
KernelSource occ_kernel(const char* op, const char* args, const std::string& target) {
  KernelSource k;
  k.op = op;
  k.name_space = "fp4jit::gemm";
  k.header = "gemm/occ_compensate.cuh";
  k.args_type = fmt::format("const fp4jit::gemm::{}", args);
  k.target = target;
  return k;
}

}  // namespace

KernelSource occ_transpose_kernel(DType weight, const std::string& target) {
  KernelSource k = occ_kernel("occ_transpose", "OccTransposeArgs", target);
  k.declarations =
      fmt::format("struct Config {{\n  static constexpr fp4jit::gemm::OutType kIn = {};\n}};\n",
                  gemm_out_name(weight));
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("in", name(weight))
                   .add("config", "tile=32x32")
                   .add("target", target)
                   .text();
  return k;
}

KernelSource occ_rows_kernel(const std::string& target) {
  KernelSource k = occ_kernel("occ_rows", "OccRowsArgs", target);
  k.declarations = "struct Config {};\n";
  k.key_text = KeyText().add("op", k.op).add("config", "threads=256").add("target", target).text();
  return k;
}

KernelSource occ_compensate_kernel(DType out, DType weight, const std::string& target) {
  KernelSource k = occ_kernel("occ_compensate", "OccCompensateArgs", target);
  k.declarations = fmt::format(
      "struct Config {{\n  static constexpr fp4jit::gemm::OutType kOut = {};\n  static constexpr "
      "fp4jit::gemm::OutType kIn = {};\n  static constexpr int kThreads = {};\n  static "
      "constexpr int kCols = {};\n  static constexpr int kBatch = {};\n}};\n",
      gemm_out_name(out), gemm_out_name(weight), kOccCompensateThreads, kOccCompensateCols,
      kOccCompensateBatch);
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("out", name(out))
                   .add("in", name(weight))
                   .add("config", fmt::format("threads={},cols={},batch={}", kOccCompensateThreads,
                                              kOccCompensateCols, kOccCompensateBatch))
                   .add("target", target)
                   .text();
  return k;
}

}  // namespace fp4jit::codegen
