#include "runtime/tuning_keys.hpp"

#include <cstdlib>
#include <cstring>

namespace fp4jit {

std::int64_t m_bucket(std::int64_t m) {
  std::int64_t b = 64;
  while (b < m && b < (std::int64_t{1} << 40)) b *= 2;
  return b;
}

std::string gemm_problem(GemmOp op, const GemmShape& shape, const std::string& out_dtype) {
  std::string out =
      fmt::format("gemm {} m<={} n={} k={}", name(op), m_bucket(shape.m), shape.n, shape.k);
  if (!out_dtype.empty()) out += " out=" + out_dtype;
  return out;
}

std::string quantize_problem(Role role, std::int64_t rows, std::int64_t cols, DType in, bool pair) {
  const std::string operand = pair ? fmt::format("{}+{}", name(role), name(transposed_copy(role)))
                                   : std::string(name(role));
  return fmt::format("quantize {} rows<={} cols={} in={}", operand, m_bucket(rows), cols, name(in));
}

TuningKey gemm_tuning_key(const DeviceIdentity& device, const Recipe& recipe, GemmOp op,
                          const GemmShape& shape, const std::string& out_dtype) {
  return TuningKey{device, "gemm", gemm_problem(op, shape, out_dtype), canonical(recipe)};
}

TuningKey quantize_tuning_key(const DeviceIdentity& device, const Recipe& recipe, Role role,
                              std::int64_t rows, std::int64_t cols, DType in, bool pair) {
  return TuningKey{device, "quantize", quantize_problem(role, rows, cols, in, pair),
                   canonical(recipe)};
}

TunedConfigs::TunedConfigs(KernelCache* cache, DeviceIdentity device)
    : cache_(cache), device_(std::move(device)) {
  const char* off = std::getenv("FP4JIT_NO_TUNED");
  enabled_ = cache_ != nullptr && !(off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0);
}

std::optional<std::string> TunedConfigs::winner(const TuningKey& key) {
  if (!enabled_) return std::nullopt;
  // Remembered by the key's own fields (hashing it costs more than the lookup); this object's
  // device is the key's.
  std::string text = key.kind;
  text.append(1, '\n').append(key.problem).append(1, '\n').append(key.recipe);
  std::lock_guard lock(mutex_);
  if (auto it = known_.find(text); it != known_.end()) return it->second;
  std::optional<std::string> w;
  if (std::optional<TuningRecord> r = cache_->get_tuning(key); r && !r->winner.empty())
    w = r->winner;
  known_.emplace(std::move(text), w);
  return w;
}

void TunedConfigs::reset() {
  std::lock_guard lock(mutex_);
  known_.clear();
}

}  // namespace fp4jit
