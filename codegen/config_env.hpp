// Kernel configs overridden from the environment (FP4JIT_QUANTIZE_TILE, FP4JIT_QUANTIZE_ROWS):
// comma-separated fields `name=N`, or `name=AxB` for a pair, each replacing one config member.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>

namespace fp4jit::codegen {

struct ConfigField {
  std::string_view name;
  int* value;
  int* second = nullptr;  // set: the field is written AxB
};

// Applies `text` to the fields; an unknown field or a malformed number throws
// Error(invalid_argument) naming `variable`.
void apply_config_fields(const char* variable, const std::string& text,
                         std::initializer_list<ConfigField> fields);

}  // namespace fp4jit::codegen
