// One CUDA kernel to compile: a tiny instantiation stub (an #include of its template and one
// explicit instantiation over a named config type), the name expression NVRTC lowers, the
// compile options, and the kernel key: the canonical text of everything that decides the binary
// apart from compiler, options and template sources (which the cache key adds).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fp4jit::codegen {

struct KernelSource {
  std::string op;            // template name, e.g. "quantize_rows" (templates/quantize/<op>.cuh)
  std::string header;        // e.g. "quantize/quantize_rows.cuh"
  std::string declarations;  // the config type `Config` and the operand structs it names
  std::string args_type;  // e.g. "fp4jit::kern::QuantizeArgs" (the parameter list, comma-separated)
  std::string name_space = "fp4jit::kern";  // of the kernel template
  std::string function;                     // the kernel template's name when it differs from `op`
  std::string key_text;                     // op=...;...;target=...
  std::string target;                       // "sm_90a", "sm_100a", ...

  // "fp4jit::kern::quantize_rows<Config>" (name_space::function-or-op<Config>)
  std::string name_expression() const;
  // The whole stub: a comment with the key, the #include, the declarations, the instantiation.
  std::string source() const;
};

// The kernel source `make` builds, remembered under `key`, a text naming everything `make` reads:
// planners ask for the same few kernels on every call, and writing a stub costs microseconds.
// `make` throwing remembers nothing. Thread-safe.
KernelSource memoized(const std::string& key, const std::function<KernelSource()>& make);

// Builds key text as "name=value;" pairs in the order they are added.
class KeyText {
 public:
  KeyText& add(std::string_view name, std::string_view value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// NVRTC options for a target: C++20, no FMA contraction, IEEE division and square root, no
// flush-to-zero (the numerics rely on all of these), line info for the sanitizers.
std::vector<std::string> compile_options(const std::string& target);
std::string join_options(const std::vector<std::string>& options);

// The target a device of compute capability major.minor compiles for: the arch-specific
// "sm_90a" / "sm_100a" on Hopper and Blackwell datacenter parts, else "sm_XY".
std::string target_for(int major, int minor);
// Throws Error(invalid_argument) for a target NVRTC is not asked to build here.
void check_target(const std::string& target);

}  // namespace fp4jit::codegen
