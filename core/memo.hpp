// Values remembered under a text key naming everything that made them: the planners build the same
// few kernel stubs and GEMM plans on every call, and building one costs microseconds. Thread-safe;
// a `make` that throws remembers nothing; past `capacity` entries the memo starts over (a bound
// for processes that sweep shapes or configs).
#pragma once
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace fp4jit {

template <class V>
class TextMemo {
 public:
  explicit TextMemo(std::size_t capacity) : capacity_(capacity) {}

  template <class Make>
  V get(const std::string& key, Make make) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = values_.find(key); it != values_.end()) return it->second;
    }
    V v = make();
    std::lock_guard lock(mutex_);
    if (values_.size() >= capacity_) values_.clear();
    values_.emplace(key, v);
    return v;
  }

 private:
  std::size_t capacity_;
  std::mutex mutex_;
  std::unordered_map<std::string, V> values_;
};

}  // namespace fp4jit
