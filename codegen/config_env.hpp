// Kernel configs overridden from the environment (FP4JIT_QUANTIZE_TILE, FP4JIT_QUANTIZE_ROWS):
// comma-separated fields `name=N`, or `name=AxB` for a pair, each replacing one config member.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace fp4jit::codegen {

struct ConfigField {
  std::string_view name;
  int* value;
  int* second = nullptr;  // set: the field is written AxB
};

// Applies environment variable `variable` (when set and not empty) to the fields, then runs
// `validate` on the result; an unknown field, a malformed number or a config `validate` rejects
// throws Error(invalid_argument) naming the variable and its text.
void override_from_env(const char* variable, std::initializer_list<ConfigField> fields,
                       const std::function<void()>& validate);

}  // namespace fp4jit::codegen
