// Stub of templates/quantize/dge.cuh.
#include <fmt/format.h>

#include "codegen/kernels.hpp"

namespace fp4jit::codegen {

namespace {

KernelSource dge_source(const KernelOperand& w, DType in, DType out, float k_value, float clip,
                        const std::string& target) {
  check_cuda_supported(w);
  KernelSource k;
  k.op = "dge_apply";
  k.header = "quantize/dge.cuh";
  k.args_type = "fp4jit::kern::DgeArgs";
  k.target = target;
  k.declarations = "namespace k = fp4jit::kern;\n\n" + operand_struct("Weight", w) +
                   fmt::format(
                       "\nstruct Config {{\n"
                       "  using Op = Weight;\n"
                       "  static constexpr k::InType in = {};\n"
                       "  static constexpr k::InType out = {};\n"
                       "  static constexpr float dge_k = {};\n"
                       "  static constexpr float dge_clip = {};\n"
                       "  static constexpr int threads = 256;\n"
                       "}};\n",
                       in_type_name(in_type(in)), in_type_name(in_type(out)),
                       float_literal(k_value), float_literal(clip));
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("operand", w.canonical)
                   .add("in", name(in))
                   .add("out", name(out))
                   .add("config", "threads=256")
                   .add("target", target)
                   .text();
  return k;
}

}  // namespace

KernelSource dge_kernel(const KernelOperand& w, DType in, DType out, float k_value, float clip,
                        const std::string& target) {
  std::string key = "dge_apply|";
  key.append(name(w.role)).append(1, '|').append(w.canonical).append(1, '|').append(name(in));
  key.append(1, '|').append(name(out)).append(1, '|').append(float_literal(k_value));
  key.append(1, '|').append(float_literal(clip)).append(1, '|').append(target);
  return memoized(key, [&] { return dge_source(w, in, out, k_value, clip, target); });
}

}  // namespace fp4jit::codegen
