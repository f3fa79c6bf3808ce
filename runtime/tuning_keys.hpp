// The problem half of a tuning key (cache/tuning.hpp), shared by the tuner that writes results
// and the backends that read them, and the memoized lookup the backends use per call.
//
// Token counts vary during training, so M (GEMM) and the token rows of a quantized tensor are
// tuned in buckets: m_bucket(m) is the smallest power of two >= max(m, 64); a result tuned at any
// M of a bucket serves every M of that bucket. Every other dimension is exact.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "cache/cache.hpp"
#include "core/gemm.hpp"

namespace fp4jit {

std::int64_t m_bucket(std::int64_t m);

// "gemm fprop m<=8192 n=4096 k=4096 out=bf16"; out_dtype empty where the kernel does not depend
// on the output type (host: the epilogue is separate).
std::string gemm_problem(GemmOp op, const GemmShape& shape, const std::string& out_dtype);
// "quantize x rows<=8192 cols=4096 in=bf16": the source tensor [rows, cols] of operand `role`;
// with `pair`, "quantize x+xt ...": the operand and its transposed copy from one read.
std::string quantize_problem(Role role, std::int64_t rows, std::int64_t cols, DType in,
                             bool pair = false);

TuningKey gemm_tuning_key(const DeviceIdentity& device, const Recipe& recipe, GemmOp op,
                          const GemmShape& shape, const std::string& out_dtype);
TuningKey quantize_tuning_key(const DeviceIdentity& device, const Recipe& recipe, Role role,
                              std::int64_t rows, std::int64_t cols, DType in, bool pair = false);

// Winners by key, read once per key from the cache (and its bundles) and remembered, misses too.
// Disabled by FP4JIT_NO_TUNED=1 (every call takes the heuristic's config). Thread-safe.
class TunedConfigs {
 public:
  TunedConfigs(KernelCache* cache, DeviceIdentity device);
  const DeviceIdentity& device() const { return device_; }
  std::optional<std::string> winner(const TuningKey& key);
  // Forgets remembered lookups (after new results were stored).
  void reset();

 private:
  KernelCache* cache_;
  DeviceIdentity device_;
  bool enabled_ = true;
  std::mutex mutex_;
  std::map<std::string, std::optional<std::string>> known_;
};

}  // namespace fp4jit
