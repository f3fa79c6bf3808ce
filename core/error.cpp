#include "core/error.hpp"

namespace fp4jit {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument: return "invalid argument";
    case ErrorKind::recipe: return "recipe";
    case ErrorKind::io: return "i/o";
    case ErrorKind::corrupt: return "corrupt input";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::no_gpu: return "no GPU";
    case ErrorKind::driver: return "CUDA driver";
    case ErrorKind::compile: return "compile";
    case ErrorKind::cache: return "cache";
    case ErrorKind::internal: return "internal";
  }
  return "unknown";
}

}  // namespace fp4jit
