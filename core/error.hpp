// The one error type of fp4jit. Library code throws it and never prints or exits; callers (the
// CLI, the tuner, the C API) decide what to do. Compile errors carry the compiler's log, the
// options and a hash of the source that failed.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace fp4jit {

enum class ErrorKind {
  invalid_argument,  // a bad value from the caller (shape, alignment, dtype, option)
  recipe,            // an unknown or inconsistent recipe field
  io,                // a file could not be read or written
  corrupt,           // a file's contents are not what they claim (npy header, cache database)
  unsupported,       // valid, but not implemented for this target or combination
  no_gpu,            // the CUDA backend was asked for where no GPU or driver is present
  driver,            // a CUDA driver call failed
  compile,           // NVRTC or LLVM rejected generated code
  cache,             // the kernel cache could not be used (callers fall back to compiling)
  internal,          // a broken invariant inside fp4jit
};

std::string_view error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

  ErrorKind kind() const noexcept { return kind_; }
  const std::string& log() const noexcept { return log_; }
  const std::string& options() const noexcept { return options_; }
  const std::string& source_hash() const noexcept { return source_hash_; }

  Error& with_log(std::string log) { log_ = std::move(log); return *this; }
  Error& with_options(std::string options) { options_ = std::move(options); return *this; }
  Error& with_source_hash(std::string hash) { source_hash_ = std::move(hash); return *this; }

 private:
  ErrorKind kind_;
  std::string log_, options_, source_hash_;
};

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(kind, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace fp4jit
