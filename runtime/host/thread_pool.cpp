#include "runtime/host/thread_pool.hpp"

namespace fp4jit::host {

ThreadPool::ThreadPool(int threads) {
  int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (n < 1) n = 1;
  for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(int worker) {
  std::unique_lock lock(mutex_);
  while (next_ < count_) {
    const std::int64_t task = next_++;
    lock.unlock();
    try {
      (*job_)(task, worker);
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      next_ = count_;  // skip what is left
      ++finished_;
      continue;
    }
    lock.lock();
    ++finished_;
  }
}

void ThreadPool::work(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++busy_;
    }
    drain(worker);
    {
      std::lock_guard lock(mutex_);
      --busy_;
    }
    done_.notify_all();
  }
}

void ThreadPool::run(std::int64_t count, const std::function<void(std::int64_t, int)>& fn) {
  if (count <= 0) return;
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    count_ = count;
    next_ = finished_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  if (!workers_.empty() && count > 1) wake_.notify_all();
  drain(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return next_ >= count_ && busy_ == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace fp4jit::host
