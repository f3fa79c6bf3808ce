#include "core/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace fp4jit {

namespace {
std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink& sink() {
  static LogSink s;
  return s;
}
// FP4JIT_LOG=debug shows debug messages on stderr; info and warnings are always shown.
bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("FP4JIT_LOG");
    return v != nullptr && std::string_view(v) == "debug";
  }();
  return on;
}
}  // namespace

LogSink set_log_sink(LogSink s) {
  std::lock_guard lock(sink_mutex());
  LogSink previous = std::move(sink());
  sink() = std::move(s);
  return previous;
}

void log_message(LogLevel level, std::string_view message) {
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(level, message);
    return;
  }
  if (level == LogLevel::debug && !debug_enabled()) return;
  const char* tag = level == LogLevel::warning ? "warning" : (level == LogLevel::info ? "info" : "debug");
  std::fprintf(stderr, "fp4jit: %s: %.*s\n", tag, static_cast<int>(message.size()), message.data());
}

}  // namespace fp4jit
