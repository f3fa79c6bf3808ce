#include "tuner/parallel.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace fp4jit::tuner {

int host_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& fn, int threads) {
  if (n <= 0) return;
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t most = threads > 0 ? threads : host_threads();
  const std::int64_t chunks = std::clamp<std::int64_t>(n / grain, 1, most);
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  std::mutex mutex;
  std::exception_ptr error;
  const auto run = [&](std::int64_t c) {
    try {
      fn(n * c / chunks, n * (c + 1) / chunks);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  std::int64_t started = 1;
  try {
    for (; started < chunks; ++started) workers.emplace_back(run, started);
  } catch (const std::system_error&) {  // no more threads: the rest runs here
  }
  for (std::int64_t c = started; c < chunks; ++c) run(c);
  run(0);
  for (std::thread& w : workers) w.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace fp4jit::tuner
