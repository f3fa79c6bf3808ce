// Device memory for callers that hold host data (the CLI, tests, benchmarks): a scope with the
// device's primary context current, and RAII buffers with host copies. Engine itself never
// allocates caller memory; it takes device pointers from any framework.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/cuda/driver.hpp"

namespace fp4jit::cuda {

// Retains device `ordinal`'s primary context and makes it current for the scope.
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal = 0);  // throws Error(no_gpu) / Error(driver)
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  const Driver& driver() const { return d_; }
  void synchronize() const;  // the whole context

 private:
  const Driver& d_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
};

// cuMemAlloc'ed bytes (a context must be current).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = 0, o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T = void>
  T* get() const {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(ptr_));
  }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* src, std::size_t bytes);                        // synchronous
  void download(void* dst, std::size_t bytes) const;                      // synchronous
  void download(void* dst, std::size_t bytes, std::size_t offset) const;  // from byte `offset`
  void fill(std::uint8_t value);                                          // synchronous

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

// Milliseconds of GPU work on the null stream between start() and stop_ms() (a pair of CUDA
// events, reused), or of what fn() enqueues: ms(fn).
class EventTimer {
 public:
  explicit EventTimer(const Driver& d);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start();
  double stop_ms();  // waits for the stop event
  template <class Fn>
  double ms(Fn fn) {
    start();
    fn();
    return stop_ms();
  }

 private:
  const Driver& d_;
  CUevent start_ = nullptr, stop_ = nullptr;
};

// Events recorded back to back on the default stream, with no synchronization between them:
// the intervals between consecutive marks time work enqueued in a stream (the host's per-call
// cost hidden behind the device's work, as in a training step), not calls made one at a time.
class EventSeries {
 public:
  EventSeries(const Driver& d, int marks);
  ~EventSeries();
  EventSeries(const EventSeries&) = delete;
  EventSeries& operator=(const EventSeries&) = delete;
  void mark(int i);                    // records event i (0 <= i < marks)
  std::vector<double> intervals_ms();  // waits for the last mark; marks - 1 intervals

 private:
  const Driver& d_;
  std::vector<CUevent> events_;
};

}  // namespace fp4jit::cuda
