// Text helpers shared by the commands and the quantized-operand files (declared in commands.hpp).
#include <fmt/format.h>

#include "cli/commands.hpp"

namespace fp4jit::cli {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return out + "]";
}

}  // namespace fp4jit::cli
