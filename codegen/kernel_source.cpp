#include "codegen/kernel_source.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memo.hpp"

namespace fp4jit::codegen {

KernelSource memoized(const std::string& key, const std::function<KernelSource()>& make) {
  static TextMemo<KernelSource> memo(4096);
  return memo.get(key, make);
}

std::string KernelSource::name_expression() const {
  return fmt::format("{}::{}<Config>", name_space, function.empty() ? op : function);
}

std::string KernelSource::source() const {
  return fmt::format(
      "// fp4jit generated kernel stub: {op}\n"
      "// key: {key}\n"
      "#include \"{header}\"\n\n"
      "{decl}\n"
      "template __global__ void {name}({args});\n",
      fmt::arg("op", op), fmt::arg("key", key_text), fmt::arg("header", header),
      fmt::arg("decl", declarations), fmt::arg("name", name_expression()),
      fmt::arg("args", args_type));
}

KeyText& KeyText::add(std::string_view name, std::string_view value) {
  text_ += fmt::format("{}={};", name, value);
  return *this;
}

std::vector<std::string> compile_options(const std::string& target) {
  return {"--gpu-architecture=" + target,
          "-std=c++20",
          "--fmad=false",
          "--ftz=false",
          "--prec-div=true",
          "--prec-sqrt=true",
          "-lineinfo"};
}

std::string join_options(const std::vector<std::string>& options) {
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "" : " ") + o;
  return out;
}

std::string target_for(int major, int minor) {
  const bool arch_specific = (major == 9 && minor == 0) || (major == 10 && minor == 0);
  return fmt::format("sm_{}{}{}", major, minor, arch_specific ? "a" : "");
}

void check_target(const std::string& target) {
  static constexpr std::string_view kKnown[] = {"sm_75",   "sm_80",  "sm_86",  "sm_87",
                                                "sm_89",   "sm_90",  "sm_90a", "sm_100",
                                                "sm_100a", "sm_103", "sm_120"};
  for (std::string_view k : kKnown)
    if (k == target) return;
  fail(ErrorKind::invalid_argument, "unknown CUDA target '{}' (e.g. sm_90a, sm_100a)", target);
}

}  // namespace fp4jit::codegen
