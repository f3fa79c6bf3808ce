// Diagnostics the library reports without failing (a corrupt cache moved aside, a fallback taken).
// They go to stderr as "fp4jit: warning: ..." unless the embedding application installs a sink.
#pragma once
#include <fmt/format.h>

#include <functional>
#include <string_view>

namespace fp4jit {

enum class LogLevel { debug, info, warning };
using LogSink = std::function<void(LogLevel, std::string_view)>;

// Replaces the sink (nullptr restores stderr); returns the previous one. Thread-safe.
LogSink set_log_sink(LogSink sink);
void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::warning, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::debug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace fp4jit
