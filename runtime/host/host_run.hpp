// Running the host kernels over a thread pool: row ranges in whole bands, per-worker scratch, and
// the per-block statistics of the stats pass (shared where workers own disjoint blocks, per
// worker and merged where blocks span every row).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "codegen/host/host_config.hpp"
#include "core/quantized.hpp"
#include "runtime/host/thread_pool.hpp"

namespace fp4jit::host {

// fn(r0, r1, worker) over [0, rows) in ranges that are multiples of `band` rows, a few per worker.
void run_rows(ThreadPool& pool, std::int64_t rows, std::int64_t band,
              const std::function<void(std::int64_t r0, std::int64_t r1, int worker)>& fn);

class ScratchBuffers {
 public:
  ScratchBuffers(ThreadPool& pool, std::int64_t band, std::int64_t cols)
      : size_(band * cols), buffers_(static_cast<std::size_t>(pool.size())) {}
  float* get(int worker);

 private:
  std::int64_t size_;
  std::vector<std::vector<float>> buffers_;
};

class StatsBuffers {
 public:
  StatsBuffers(ThreadPool& pool, const Block& block, const QuantLayout& layout);
  std::uint32_t* get(int worker);
  std::uint32_t* merged();  // worker 0's array, holding the max over every worker's

 private:
  bool shared_;
  std::vector<std::vector<std::uint32_t>> buffers_;
};

// The stats pass over every row: fills `stats` and the largest finite |x| bits.
void run_stats(ThreadPool& pool, int band, std::int64_t rows, std::int64_t cols,
               const QuantizeKernelArgs& args, RangeKernel stats_fn, StatsBuffers& stats,
               std::uint32_t& amax_bits);

}  // namespace fp4jit::host
