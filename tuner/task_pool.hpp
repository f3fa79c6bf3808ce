// The tuner's background threads: tasks (a candidate's compile, a job's host preparation) run in
// the order they were queued, at a lower scheduling priority than the thread that measures. A
// thread that needs a task's result before a pool thread took it runs the task itself instead of
// waiting idle, and a task not started yet can be cancelled (its job is done, or tuning stopped).
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fp4jit::tuner {

class Task {
 public:
  // fn must not throw (it keeps its own result and error).
  explicit Task(std::function<void()> fn) : fn_(std::move(fn)) {}
  bool try_run();  // runs it on this thread unless it was taken: true when this call ran it
  bool cancel();   // takes it without running it: true when it had not started (it never will)
  void wait();     // until it ran or was cancelled; runs it here when no thread has taken it
  bool done() const;

 private:
  std::function<void()> fn_;
  std::atomic<bool> taken_{false};
  std::promise<void> promise_;
  std::shared_future<void> done_ = promise_.get_future().share();
};

class TaskPool {
 public:
  explicit TaskPool(int threads);  // at least one thread
  ~TaskPool();                     // cancels the tasks not started, waits for the rest
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;
  void push(std::shared_ptr<Task> task);

 private:
  void work();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace fp4jit::tuner
