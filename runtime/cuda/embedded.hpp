// The kernel templates (templates/**/*.cuh) embedded into the library at build time by
// embed_templates.cmake: NVRTC reads them from memory, so nothing is looked up on disk at run
// time, and their combined hash goes into every kernel's cache key.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace fp4jit::cuda {

struct EmbeddedFile {
  std::string_view name;  // the include name, e.g. "quantize/quantize_rows.cuh"
  std::string_view text;  // NUL-terminated
};

// Every embedded header, sorted by name.
std::span<const EmbeddedFile> embedded_templates();
// Lower-case hex SHA-256 over every (name, NUL, text, NUL), in name order.
const std::string& templates_hash();

}  // namespace fp4jit::cuda
