// One computation per key at a time in a process: the first caller of a key runs it, and callers
// of the same key meanwhile wait for it and share its value or its exception. A caller arriving
// after it finished starts a new one (callers look their result up in a cache first).
// cuda::kernel_binary uses it so that threads asking at once for one kernel compile it once: the
// tuner compiles the candidates of several problems together, and problems often share their
// kernels (fprop and dgrad of one N x K in most recipes; the kernels do not depend on M).
#pragma once
#include <future>
#include <map>
#include <memory>
#include <mutex>

namespace fp4jit {

template <class Key, class Value>
class SingleFlight {
 public:
  struct Result {
    Value value;
    bool shared = false;  // computed by another caller of the same key
  };

  template <class Fn>
  Result run(const Key& key, Fn&& fn) {
    std::shared_ptr<Flight> flight;
    bool leader = false;
    {
      std::lock_guard lock(mutex_);
      std::shared_ptr<Flight>& slot = flights_[key];
      if (!slot) {
        slot = std::make_shared<Flight>();
        leader = true;
      }
      flight = slot;
      ++flight->callers;
    }
    if (!leader) return {flight->result.get(), true};  // rethrows the leader's exception
    try {
      flight->promise.set_value(fn());
    } catch (...) {
      flight->promise.set_exception(std::current_exception());
    }
    {
      std::lock_guard lock(mutex_);
      flights_.erase(key);
    }
    return {flight->result.get(), false};
  }

  // Callers attached to the computation of `key` in flight, its leader included (0: none).
  int callers(const Key& key) const {
    std::lock_guard lock(mutex_);
    const auto it = flights_.find(key);
    return it == flights_.end() ? 0 : it->second->callers;
  }

 private:
  struct Flight {
    std::promise<Value> promise;
    std::shared_future<Value> result = promise.get_future().share();
    int callers = 0;
  };
  mutable std::mutex mutex_;
  std::map<Key, std::shared_ptr<Flight>> flights_;
};

}  // namespace fp4jit
