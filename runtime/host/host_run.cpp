#include "runtime/host/host_run.hpp"

#include <algorithm>

namespace fp4jit::host {

void run_rows(ThreadPool& pool, std::int64_t rows, std::int64_t band,
              const std::function<void(std::int64_t, std::int64_t, int)>& fn) {
  const std::int64_t bands = (rows + band - 1) / band;
  const std::int64_t per_task = std::max<std::int64_t>(1, bands / (4 * pool.size()));
  const std::int64_t tasks = (bands + per_task - 1) / per_task;
  pool.run(tasks, [&](std::int64_t t, int worker) {
    const std::int64_t r0 = t * per_task * band;
    fn(r0, std::min(rows, r0 + per_task * band), worker);
  });
}

float* ScratchBuffers::get(int worker) {
  auto& b = buffers_[static_cast<std::size_t>(worker)];
  if (b.empty()) b.resize(static_cast<std::size_t>(size_));
  return b.data();
}

StatsBuffers::StatsBuffers(ThreadPool& pool, const Block& block, const QuantLayout& layout)
    : shared_(block.kind == Block::Kind::tile || block.kind == Block::Kind::row),
      buffers_(shared_ ? 1 : static_cast<std::size_t>(pool.size())) {
  for (auto& b : buffers_) b.assign(static_cast<std::size_t>(layout.scale_count()), 0u);
}

std::uint32_t* StatsBuffers::get(int worker) {
  return buffers_[shared_ ? 0 : static_cast<std::size_t>(worker)].data();
}

std::uint32_t* StatsBuffers::merged() {
  for (std::size_t w = 1; w < buffers_.size(); ++w)
    for (std::size_t i = 0; i < buffers_[0].size(); ++i)
      buffers_[0][i] = std::max(buffers_[0][i], buffers_[w][i]);
  return buffers_[0].data();
}

void run_stats(ThreadPool& pool, int band, std::int64_t rows, std::int64_t cols,
               const QuantizeKernelArgs& args, RangeKernel stats_fn, StatsBuffers& stats,
               std::uint32_t& amax_bits) {
  ScratchBuffers scratch(pool, band, cols);
  std::vector<std::uint32_t> amax(static_cast<std::size_t>(pool.size()), 0u);
  run_rows(pool, rows, band, [&](std::int64_t r0, std::int64_t r1, int worker) {
    QuantizeKernelArgs mine = args;
    mine.scratch = scratch.get(worker);
    mine.stats = stats.get(worker);
    mine.amax_bits = &amax[static_cast<std::size_t>(worker)];
    stats_fn(&mine, r0, r1);
  });
  amax_bits = *std::max_element(amax.begin(), amax.end());
}

}  // namespace fp4jit::host
