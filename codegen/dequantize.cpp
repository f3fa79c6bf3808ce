// Stub of templates/quantize/dequantize.cuh.
#include <fmt/format.h>

#include "codegen/kernels.hpp"

namespace fp4jit::codegen {

namespace {

KernelSource dequantize_source(const KernelOperand& op, DType out, bool to_source,
                               const std::string& target) {
  check_cuda_supported(op);
  if (to_source) out = DType::f32;
  KernelSource k;
  k.op = "dequantize";
  k.header = "quantize/dequantize.cuh";
  k.args_type = "fp4jit::kern::DequantizeArgs";
  k.target = target;
  k.declarations = "namespace k = fp4jit::kern;\n\n" + operand_struct("Operand", op) +
                   fmt::format(
                       "\nstruct Config {{\n"
                       "  using Op = Operand;\n"
                       "  static constexpr k::InType out = {};\n"
                       "  static constexpr bool to_source = {};\n"
                       "  static constexpr bool transposed = {};\n"
                       "  static constexpr int threads = 256;\n"
                       "}};\n",
                       in_type_name(in_type(out)), to_source ? "true" : "false",
                       role_info(op.role).transposed ? "true" : "false");
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("role", name(op.role))
                   .add("operand", op.canonical)
                   .add("out", to_source ? "source:float32" : std::string(name(out)))
                   .add("config", "threads=256")
                   .add("target", target)
                   .text();
  return k;
}

}  // namespace

KernelSource dequantize_kernel(const KernelOperand& op, DType out, bool to_source,
                               const std::string& target) {
  std::string key = "dequantize|";
  key.append(name(op.role)).append(1, '|').append(op.canonical).append(1, '|').append(name(out));
  key.append(to_source ? "|src|" : "|-|").append(target);
  return memoized(key, [&] { return dequantize_source(op, out, to_source, target); });
}

}  // namespace fp4jit::codegen
