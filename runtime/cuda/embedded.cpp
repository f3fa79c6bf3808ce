#include "runtime/cuda/embedded.hpp"

#include "core/sha256.hpp"

namespace fp4jit::cuda {

const std::string& templates_hash() {
  static const std::string hash = [] {
    Sha256 h;
    const std::string_view nul("\0", 1);
    for (const EmbeddedFile& f : embedded_templates())
      h.update(f.name).update(nul).update(f.text).update(nul);
    return h.hex_digest();
  }();
  return hash;
}

}  // namespace fp4jit::cuda
