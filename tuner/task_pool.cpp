#include "tuner/task_pool.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace fp4jit::tuner {

bool Task::try_run() {
  if (taken_.exchange(true)) return false;
  try {
    fn_();
  } catch (...) {  // fn keeps its errors; this only keeps the waiters from waiting forever
  }
  promise_.set_value();
  return true;
}

bool Task::cancel() {
  if (taken_.exchange(true)) return false;
  promise_.set_value();
  return true;
}

void Task::wait() {
  try_run();
  done_.wait();
}

bool Task::done() const {
  return done_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

TaskPool::TaskPool(int threads) {
  for (int t = 0; t < std::max(1, threads); ++t) threads_.emplace_back([this] { work(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    for (const std::shared_ptr<Task>& t : queue_) t->cancel();
    queue_.clear();
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void TaskPool::push(std::shared_ptr<Task> task) {
  {
    std::lock_guard lock(mutex_);
    if (stop_) {
      task->cancel();
      return;
    }
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void TaskPool::work() {
#if defined(__linux__)
  // Ten nice levels below the measuring thread, which launches and times kernels: a run is timed
  // from an event recorded before its launch, so a launch delayed by a busy core would count as
  // kernel time. (Threads this one starts inherit the priority.) Lowering it needs no privilege;
  // should it fail, the pool runs as before.
  const auto self = static_cast<id_t>(syscall(SYS_gettid));
  setpriority(PRIO_PROCESS, self, std::min(getpriority(PRIO_PROCESS, self) + 10, 19));
#endif
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task->try_run();  // false: run (or cancelled) by a thread that needed it first
  }
}

}  // namespace fp4jit::tuner
