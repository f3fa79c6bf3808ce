#include "runtime/cuda/device_memory.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/error.hpp"
#include "core/log.hpp"

namespace fp4jit::cuda {

DeviceScope::DeviceScope(int ordinal) : d_(require_driver()) {
  check(d_.device_get(&device_, ordinal), "cuDeviceGet");
  check(d_.primary_ctx_retain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  const CUresult r = d_.ctx_push_current(ctx_);
  if (r != CUDA_SUCCESS) {
    d_.primary_ctx_release(device_);
    check(r, "cuCtxPushCurrent");
  }
}

DeviceScope::~DeviceScope() {
  CUcontext popped = nullptr;
  d_.ctx_pop_current(&popped);
  d_.primary_ctx_release(device_);
}

void DeviceScope::synchronize() const {
  check(d_.ctx_synchronize(), "cuCtxSynchronize");
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) check(require_driver().mem_alloc(&ptr_, bytes), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0) require_driver().mem_free(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != 0) require_driver().mem_free(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* src, std::size_t bytes) {
  if (bytes > bytes_)
    fail(ErrorKind::invalid_argument, "upload of {} bytes into a {}-byte buffer", bytes, bytes_);
  if (bytes > 0) check(require_driver().memcpy_htod(ptr_, src, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* dst, std::size_t bytes) const {
  if (bytes > bytes_)
    fail(ErrorKind::invalid_argument, "download of {} bytes from a {}-byte buffer", bytes, bytes_);
  if (bytes > 0) check(require_driver().memcpy_dtoh(dst, ptr_, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::download(void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    fail(ErrorKind::invalid_argument, "download of {} bytes at offset {} from a {}-byte buffer",
         bytes, offset, bytes_);
  if (bytes > 0) check(require_driver().memcpy_dtoh(dst, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill(std::uint8_t value) {
  if (bytes_ == 0) return;
  const Driver& d = require_driver();
  check(d.memset_d8_async(ptr_, value, bytes_, nullptr), "cuMemsetD8Async");
  check(d.ctx_synchronize(), "cuCtxSynchronize");
}

EventTimer::EventTimer(const Driver& d) : d_(d) {
  check(d_.event_create(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
  check(d_.event_create(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
}

EventTimer::~EventTimer() {
  d_.event_destroy(start_);
  d_.event_destroy(stop_);
}

void EventTimer::start() {
  check(d_.event_record(start_, nullptr), "cuEventRecord");
}

double EventTimer::stop_ms() {
  check(d_.event_record(stop_, nullptr), "cuEventRecord");
  check(d_.event_synchronize(stop_), "cuEventSynchronize");
  float ms = 0.0f;
  check(d_.event_elapsed_time(&ms, start_, stop_), "cuEventElapsedTime");
  return ms;
}

std::string_view lead_ptx() {
  // PTX ISA 7.0 for sm_70 and later: the driver JIT-compiles it for the GPU it runs on.
  return R"(.version 7.0
.target sm_70
.address_size 64

.visible .entry fp4jit_lead(.param .u64 fp4jit_lead_ns)
{
  .reg .pred %p;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [fp4jit_lead_ns];
  mov.u64 %rd1, %globaltimer;
  add.u64 %rd2, %rd1, %rd0;
WAIT:
  mov.u64 %rd3, %globaltimer;
  setp.lt.u64 %p, %rd3, %rd2;
  @%p bra WAIT;
  ret;
}
)";
}

GpuTimer::GpuTimer(const Driver& d) : d_(d), events_(d) {
  const std::string ptx(lead_ptx());  // cuModuleLoadData reads PTX up to its terminating zero
  CUresult r = d_.module_load_data(&module_, ptx.c_str());
  if (r == CUDA_SUCCESS) {
    r = d_.module_get_function(&spin_, module_, "fp4jit_lead");
    if (r != CUDA_SUCCESS) {
      d_.module_unload(module_);
      module_ = nullptr;
      spin_ = nullptr;
    }
  } else {
    module_ = nullptr;
  }
  if (spin_ == nullptr) {
    // Timing still works, as EventTimer's: each call's time then includes its enqueueing.
    const char* name = nullptr;
    d_.get_error_name(r, &name);
    no_lead_ = fmt::format(
        "the timing lead kernel did not load ({}; the driver may have PTX JIT compilation "
        "disabled, CUDA_DISABLE_PTX_JIT): single-call GPU times include the host's enqueueing",
        name != nullptr ? name : "unknown error");
    static std::atomic<bool> warned{false};  // once per process: the tuner makes one per job
    if (!warned.exchange(true)) warn("{}", no_lead_);
  }
}

GpuTimer::~GpuTimer() {
  if (module_ != nullptr) d_.module_unload(module_);
}

void GpuTimer::lead() {
  if (spin_ == nullptr) return;
  auto ns = static_cast<unsigned long long>(std::llround(lead_ms_ * 1e6));
  void* params[] = {&ns};
  check(d_.launch_kernel(spin_, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
        "cuLaunchKernel (the timing lead)");
}

bool GpuTimer::covered(double host_ms) {
  if (spin_ == nullptr) return true;  // no lead to lengthen: the time is taken as it is
  const bool ok = host_ms < lead_ms_;
  if (!ok) ++uncovered_;
  // Twice this enqueue; after a covered run at least half the lead before, so one slow enqueue
  // (a kernel's first use loads its module) does not keep every later run spinning for it.
  lead_ms_ =
      std::clamp(std::max(2.0 * host_ms, ok ? 0.5 * lead_ms_ : lead_ms_), kMinLeadMs, kMaxLeadMs);
  return ok;
}

EventSeries::EventSeries(const Driver& d, int marks) : d_(d) {
  events_.reserve(static_cast<std::size_t>(marks));
  for (int i = 0; i < marks; ++i) {
    CUevent e = nullptr;
    const CUresult rc = d_.event_create(&e, CU_EVENT_DEFAULT);
    if (rc != CUDA_SUCCESS) {
      for (CUevent made : events_) d_.event_destroy(made);
      check(rc, "cuEventCreate");
    }
    events_.push_back(e);
  }
}

EventSeries::~EventSeries() {
  for (CUevent e : events_) d_.event_destroy(e);
}

void EventSeries::mark(int i) {
  check(d_.event_record(events_.at(static_cast<std::size_t>(i)), nullptr), "cuEventRecord");
}

std::vector<double> EventSeries::intervals_ms() {
  std::vector<double> out;
  if (events_.empty()) return out;
  check(d_.event_synchronize(events_.back()), "cuEventSynchronize");
  for (std::size_t i = 1; i < events_.size(); ++i) {
    float ms = 0.0f;
    check(d_.event_elapsed_time(&ms, events_[i - 1], events_[i]), "cuEventElapsedTime");
    out.push_back(ms);
  }
  return out;
}

}  // namespace fp4jit::cuda
