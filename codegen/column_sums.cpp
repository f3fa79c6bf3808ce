// Stubs of templates/quantize/column_sums.cuh: the standalone first pass (per input type) and
// the reduce (per output type). Neither depends on a recipe.
#include <fmt/format.h>

#include "codegen/kernels.hpp"

namespace fp4jit::codegen {

namespace {

KernelSource sums_kernel(const std::string& op, const std::string& field, DType type,
                         const std::string& target) {
  KernelSource k;
  k.op = op;
  k.header = "quantize/column_sums.cuh";
  k.args_type = "fp4jit::kern::ColumnSumsArgs";
  k.target = target;
  k.declarations = fmt::format(
      "namespace k = fp4jit::kern;\n\nstruct Config {{\n  static constexpr k::InType {} = "
      "{};\n}};\n",
      field, in_type_name(in_type(type)));
  k.key_text = KeyText()
                   .add("op", op)
                   .add(field, name(type))
                   .add("config", "threads=256")
                   .add("target", target)
                   .text();
  return k;
}

}  // namespace

KernelSource column_sums_partial_kernel(DType in, const std::string& target) {
  return memoized("column_sums_partial|" + std::string(name(in)) + "|" + target,
                  [&] { return sums_kernel("column_sums_partial", "in", in, target); });
}

KernelSource column_sums_reduce_kernel(DType out, const std::string& target) {
  return memoized("column_sums_reduce|" + std::string(name(out)) + "|" + target,
                  [&] { return sums_kernel("column_sums_reduce", "out", out, target); });
}

}  // namespace fp4jit::codegen
