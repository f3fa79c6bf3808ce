// A fixed set of worker threads for multi-core kernel runs. The calling thread takes part, so a
// pool of one runs everything inline.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fp4jit::host {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // 0: std::thread::hardware_concurrency()
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // fn(task, worker) for every task in [0, count), worker in [0, size()); returns when all are
  // done and rethrows the first exception. Not reentrant.
  void run(std::int64_t count, const std::function<void(std::int64_t task, int worker)>& fn);

 private:
  void work(int worker);
  void drain(int worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::int64_t, int)>* job_ = nullptr;
  std::int64_t count_ = 0, next_ = 0, finished_ = 0;
  std::uint64_t generation_ = 0;
  int busy_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace fp4jit::host
