// Device memory for callers that hold host data (the CLI, tests, benchmarks): a scope with the
// device's primary context current, and RAII buffers with host copies. Engine itself never
// allocates caller memory; it takes device pointers from any framework.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
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

// Milliseconds of the GPU work that one call enqueues on the null stream, with the host's
// enqueueing kept out: before the start event a one-thread kernel spins on the stream (a lead)
// for longer than the host then takes to record that event and enqueue the call, so the GPU
// reaches the call with all of it already queued, as when a training step's host runs ahead of
// its GPU or a CUDA graph replays the call. EventTimer's single call, on an idle GPU, includes the
// host's enqueueing instead (at a few hundred tokens a GEMM's launches take as long as its
// kernels). The lead lasts twice the last enqueue, and at least half the lead before it (kMinLeadMs
// to kMaxLeadMs), so it follows the host's enqueue time back down within a few runs after a slow
// one; a run whose enqueue outlasted its lead is run again with the longer lead, at most kAttempts
// times in all. The lead is PTX (lead_ptx()), JIT-compiled by the driver when the timer is made: no
// NVRTC and no kernel cache, so timing works under FP4JIT_NO_COMPILE. Where the driver cannot load
// it (PTX JIT disabled), the timer times as EventTimer does (lead_loaded() false), with one warning
// per process.
class GpuTimer {
 public:
  static constexpr double kMinLeadMs = 0.02;
  static constexpr double kMaxLeadMs = 20.0;
  static constexpr int kAttempts = 3;

  explicit GpuTimer(const Driver& d);  // a context must be current; the timer lives in it
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  template <class Fn>
  double ms(Fn fn) {
    for (int attempt = 1;; ++attempt) {
      lead();
      const auto t0 = std::chrono::steady_clock::now();
      events_.start();
      fn();
      host_ms_ =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double gpu = events_.stop_ms();
      if (covered(host_ms_) || attempt == kAttempts) return gpu;
    }
  }
  // The host's time of the run the last ms() returned: its enqueueing, start event included.
  double last_host_ms() const { return host_ms_; }
  bool lead_loaded() const { return spin_ != nullptr; }
  const std::string& why_no_lead() const { return no_lead_; }  // empty when the lead loaded
  double lead_ms() const { return lead_ms_; }
  int uncovered() const { return uncovered_; }  // runs whose enqueue outlasted the lead

 private:
  void lead();
  bool covered(double host_ms);  // and sets the lead of the next run

  const Driver& d_;
  EventTimer events_;
  CUmodule module_ = nullptr;
  CUfunction spin_ = nullptr;
  double lead_ms_ = 0.1;
  double host_ms_ = 0.0;
  int uncovered_ = 0;
  std::string no_lead_;
};

// The lead's PTX: `fp4jit_lead(u64 ns)` spins until %globaltimer has advanced by ns.
std::string_view lead_ptx();

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
