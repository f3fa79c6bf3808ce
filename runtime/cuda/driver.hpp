// The CUDA driver, loaded at run time: dlopen("libcuda.so.1") and cuGetProcAddress fill a table
// of entry points, so fp4jit (and every binary linking it) starts on a machine without a GPU or
// driver and reports that cleanly. Types and signatures come from the toolkit's cuda.h (a build
// dependency only); nothing links against libcuda.
#pragma once
#include <cuda.h>

#include <string>

namespace fp4jit::cuda {

struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
  decltype(&::cuCtxPushCurrent) ctx_push_current = nullptr;
  decltype(&::cuCtxPopCurrent) ctx_pop_current = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuFuncGetAttribute) func_get_attribute = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;  // GEMM: dynamic smem limit
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;  // GEMM: TMA descriptors
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuLaunchKernelEx) launch_kernel_ex = nullptr;  // GEMM clusters
  decltype(&::cuOccupancyMaxActiveClusters) occupancy_max_active_clusters = nullptr;
  // Persistent launches: CTAs per SM.
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy_max_active_blocks = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemAllocAsync) mem_alloc_async = nullptr;
  decltype(&::cuMemFreeAsync) mem_free_async = nullptr;
  decltype(&::cuMemPoolCreate) mem_pool_create = nullptr;  // the workspace pool (workspace.hpp)
  decltype(&::cuMemPoolDestroy) mem_pool_destroy = nullptr;
  decltype(&::cuMemPoolSetAttribute) mem_pool_set_attribute = nullptr;
  decltype(&::cuMemAllocFromPoolAsync) mem_alloc_from_pool_async = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemcpyDtoDAsync) memcpy_dtod_async = nullptr;
  decltype(&::cuMemsetD8Async) memset_d8_async = nullptr;
  decltype(&::cuMemsetD32Async) memset_d32_async = nullptr;
  decltype(&::cuPointerGetAttribute) pointer_get_attribute = nullptr;
  decltype(&::cuPointerGetAttributes) pointer_get_attributes = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamIsCapturing) stream_is_capturing = nullptr;
  // The calling thread's stream-capture mode (RelaxedCapture in modules.hpp).
  decltype(&::cuThreadExchangeStreamCaptureMode) thread_exchange_capture_mode = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

// The process's driver table, loaded and cuInit'ed once; null when there is no usable driver
// (then *why says so). Never throws.
const Driver* driver(std::string* why = nullptr);
// The table or Error(no_gpu) with the reason.
const Driver& require_driver();

// Throws Error(driver) "<what>: CUDA_ERROR_... (description)" unless r is CUDA_SUCCESS.
void check(CUresult r, const char* what);

// Puts the calling thread in relaxed stream-capture mode for a scope and restores its mode after.
// While a framework captures a CUDA graph (torch.cuda.graph's default is the global mode), the
// driver refuses a capturing thread's "potentially unsafe" calls (those that may synchronize or
// allocate outside stream order), and the refusal invalidates the capture. A kernel's first use
// loads its module and asks for its attributes, which may be such calls: ModuleRegistry makes them
// (and only them) in this scope, as the workspace pool's set-up does. They never wait on the
// caller's stream, so they are safe while that stream is captured; launches, memsets and pool
// allocations on it are recorded as usual.
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const Driver& d) : d_(d) {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    exchanged_ = d_.thread_exchange_capture_mode(&mode) == CUDA_SUCCESS;
    previous_ = mode;
  }
  ~RelaxedCapture() {
    if (exchanged_) d_.thread_exchange_capture_mode(&previous_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  const Driver& d_;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged_ = false;
};

}  // namespace fp4jit::cuda
