// cuda::GpuTimer on the stand-in driver (fake_cuda.cpp, loaded through LD_LIBRARY_PATH by ctest):
// the lead kernel's launches, its adaptation to the host's enqueue time, and timing without it
// where the driver cannot JIT-compile PTX. Nothing runs: the events' times are the stand-in's.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "runtime/backend.hpp"
#include "runtime/cuda/device_memory.hpp"

namespace fp4jit {
namespace {

class FakeTimerTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available())
      GTEST_SKIP() << "no driver loaded (LD_LIBRARY_PATH must name the stand-in)";
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(lib, nullptr);
    calls_ = reinterpret_cast<long (*)(const char*)>(dlsym(lib, "fake_cuda_calls"));
    reset_ = reinterpret_cast<void (*)()>(dlsym(lib, "fake_cuda_reset"));
    set_jit_ = reinterpret_cast<void (*)(int)>(dlsym(lib, "fake_cuda_set_ptx_jit"));
    if (calls_ == nullptr || reset_ == nullptr || set_jit_ == nullptr)
      GTEST_SKIP() << "the loaded libcuda.so.1 is a real driver, not the stand-in";
  }
  long calls(const char* name) const { return calls_(name); }

  long (*calls_)(const char*) = nullptr;
  void (*reset_)() = nullptr;
  void (*set_jit_)(int) = nullptr;
};

// GpuTimer: one lead launch per run while the lead outlasts the host's enqueueing; a run whose
// enqueue outlasted it is run again with a lead twice that long (the call runs each time), and
// the lead comes back down when the enqueues are quick again.
TEST_F(FakeTimerTest, GpuTimerRepeatsARunWhoseEnqueueOutlastedTheLead) {
  cuda::DeviceScope scope;
  cuda::GpuTimer timer(scope.driver());
  EXPECT_EQ(calls("cuModuleLoadData"), 1);
  reset_();
  int runs = 0;
  timer.ms([&] { ++runs; });  // a quick enqueue: covered by the first lead
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(calls("cuLaunchKernel"), 1);
  EXPECT_EQ(calls("cuEventRecord"), 2);
  EXPECT_EQ(timer.uncovered(), 0);

  reset_();
  runs = 0;
  const double before = timer.lead_ms();
  const auto slow = [&] {
    ++runs;
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int>(2000 * before)));
  };
  timer.ms(slow);  // outlasts the lead: run again with a lead of twice the enqueue
  EXPECT_EQ(runs, 2);
  EXPECT_GE(timer.last_host_ms(), before);  // the enqueue of the run timed
  EXPECT_EQ(calls("cuLaunchKernel"), 2);
  EXPECT_EQ(timer.uncovered(), 1);
  EXPECT_GE(timer.lead_ms(), 4.0 * before);
  reset_();
  timer.ms(slow);  // now covered
  EXPECT_EQ(calls("cuLaunchKernel"), 1);
  EXPECT_EQ(timer.uncovered(), 1);

  // Quick enqueues again: the lead halves per run down to the floor, so a slow call once does
  // not make every later run wait for it.
  // (The shortest lead over the runs: a run this machine's scheduler delays sets it higher.)
  double shortest = timer.lead_ms();
  for (int i = 0; i < 20; ++i) {
    timer.ms([] {});
    shortest = std::min(shortest, timer.lead_ms());
  }
  EXPECT_EQ(shortest, cuda::GpuTimer::kMinLeadMs);

  // An enqueue longer than the longest lead is run kAttempts times, then its time is taken.
  reset_();
  runs = 0;
  timer.ms([&] {
    ++runs;
    std::this_thread::sleep_for(
        std::chrono::microseconds(static_cast<int>(1000 * cuda::GpuTimer::kMaxLeadMs) + 1000));
  });
  EXPECT_EQ(runs, cuda::GpuTimer::kAttempts);
  EXPECT_EQ(timer.lead_ms(), cuda::GpuTimer::kMaxLeadMs);
}

// Where the driver cannot JIT-compile the lead's PTX, the timer says so (once per process: ctest
// runs each test in a process of its own) and times each call with events alone (its enqueueing
// inside), instead of failing the tuner or the benchmark.
TEST_F(FakeTimerTest, GpuTimerWithoutPtxJitWarnsAndTimesWithoutALead) {
  std::vector<std::string> warnings;
  const LogSink before = set_log_sink([&](LogLevel level, std::string_view m) {
    if (level == LogLevel::warning) warnings.emplace_back(m);
  });
  cuda::DeviceScope scope;
  set_jit_(0);
  std::unique_ptr<cuda::GpuTimer> timer;
  EXPECT_NO_THROW(timer = std::make_unique<cuda::GpuTimer>(scope.driver()));
  set_jit_(1);
  set_log_sink(before);
  ASSERT_NE(timer, nullptr);
  EXPECT_FALSE(timer->lead_loaded());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("CUDA_ERROR_JIT_COMPILATION_DISABLED"), std::string::npos)
      << warnings[0];
  EXPECT_EQ(timer->why_no_lead(), warnings[0]);
  reset_();
  int runs = 0;
  timer->ms([&] {
    ++runs;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // longer than any lead
  });
  EXPECT_EQ(runs, 1);  // no lead to lengthen: taken once, as it is
  EXPECT_EQ(calls("cuLaunchKernel"), 0);
  EXPECT_EQ(calls("cuEventRecord"), 2);
  // With PTX JIT allowed again, a new timer has its lead.
  cuda::GpuTimer loaded(scope.driver());
  EXPECT_TRUE(loaded.lead_loaded());
  EXPECT_TRUE(loaded.why_no_lead().empty());
}

}  // namespace
}  // namespace fp4jit
