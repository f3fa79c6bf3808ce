#include "runtime/cuda/driver.hpp"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <type_traits>

#include <cstdlib>
#include <mutex>

#include "core/error.hpp"
#include "runtime/backend.hpp"

namespace fp4jit::cuda {

namespace {

// The prototypes of driver.hpp are those of the versions asked for below.
static_assert(std::is_same_v<decltype(Driver::driver_get_version), PFN_cuDriverGetVersion_v2020>);
static_assert(std::is_same_v<decltype(Driver::init), PFN_cuInit_v2000>);
static_assert(std::is_same_v<decltype(Driver::get_error_name), PFN_cuGetErrorName_v6000>);
static_assert(std::is_same_v<decltype(Driver::get_error_string), PFN_cuGetErrorString_v6000>);
static_assert(std::is_same_v<decltype(Driver::device_get_count), PFN_cuDeviceGetCount_v2000>);
static_assert(std::is_same_v<decltype(Driver::device_get), PFN_cuDeviceGet_v2000>);
static_assert(std::is_same_v<decltype(Driver::device_get_name), PFN_cuDeviceGetName_v2000>);
static_assert(
    std::is_same_v<decltype(Driver::device_get_attribute), PFN_cuDeviceGetAttribute_v2000>);
static_assert(
    std::is_same_v<decltype(Driver::primary_ctx_retain), PFN_cuDevicePrimaryCtxRetain_v7000>);
static_assert(
    std::is_same_v<decltype(Driver::primary_ctx_release), PFN_cuDevicePrimaryCtxRelease_v11000>);
static_assert(std::is_same_v<decltype(Driver::ctx_push_current), PFN_cuCtxPushCurrent_v4000>);
static_assert(std::is_same_v<decltype(Driver::ctx_pop_current), PFN_cuCtxPopCurrent_v4000>);
static_assert(std::is_same_v<decltype(Driver::ctx_synchronize), PFN_cuCtxSynchronize_v2000>);
static_assert(std::is_same_v<decltype(Driver::module_load_data), PFN_cuModuleLoadData_v2000>);
static_assert(std::is_same_v<decltype(Driver::module_unload), PFN_cuModuleUnload_v2000>);
static_assert(std::is_same_v<decltype(Driver::module_get_function), PFN_cuModuleGetFunction_v2000>);
static_assert(std::is_same_v<decltype(Driver::func_get_attribute), PFN_cuFuncGetAttribute_v2020>);
static_assert(std::is_same_v<decltype(Driver::func_set_attribute), PFN_cuFuncSetAttribute_v9000>);
static_assert(
    std::is_same_v<decltype(Driver::tensor_map_encode_tiled), PFN_cuTensorMapEncodeTiled_v12000>);
static_assert(std::is_same_v<decltype(Driver::launch_kernel), PFN_cuLaunchKernel_v4000>);
static_assert(std::is_same_v<decltype(Driver::occupancy_max_active_blocks),
                             PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050>);
static_assert(std::is_same_v<decltype(Driver::mem_alloc), PFN_cuMemAlloc_v3020>);
static_assert(std::is_same_v<decltype(Driver::mem_free), PFN_cuMemFree_v3020>);
static_assert(std::is_same_v<decltype(Driver::mem_alloc_async), PFN_cuMemAllocAsync_v11020>);
static_assert(std::is_same_v<decltype(Driver::mem_free_async), PFN_cuMemFreeAsync_v11020>);
static_assert(std::is_same_v<decltype(Driver::mem_pool_create), PFN_cuMemPoolCreate_v11020>);
static_assert(std::is_same_v<decltype(Driver::mem_pool_destroy), PFN_cuMemPoolDestroy_v11020>);
static_assert(
    std::is_same_v<decltype(Driver::mem_pool_set_attribute), PFN_cuMemPoolSetAttribute_v11020>);
static_assert(std::is_same_v<decltype(Driver::mem_alloc_from_pool_async),
                             PFN_cuMemAllocFromPoolAsync_v11020>);
static_assert(std::is_same_v<decltype(Driver::memcpy_htod), PFN_cuMemcpyHtoD_v3020>);
static_assert(std::is_same_v<decltype(Driver::memcpy_dtoh), PFN_cuMemcpyDtoH_v3020>);
static_assert(std::is_same_v<decltype(Driver::memcpy_dtod_async), PFN_cuMemcpyDtoDAsync_v3020>);
static_assert(std::is_same_v<decltype(Driver::memset_d8_async), PFN_cuMemsetD8Async_v3020>);
static_assert(std::is_same_v<decltype(Driver::memset_d32_async), PFN_cuMemsetD32Async_v3020>);
static_assert(
    std::is_same_v<decltype(Driver::pointer_get_attribute), PFN_cuPointerGetAttribute_v4000>);
static_assert(std::is_same_v<decltype(Driver::stream_create), PFN_cuStreamCreate_v2000>);
static_assert(std::is_same_v<decltype(Driver::stream_destroy), PFN_cuStreamDestroy_v4000>);
static_assert(std::is_same_v<decltype(Driver::stream_synchronize), PFN_cuStreamSynchronize_v2000>);
static_assert(std::is_same_v<decltype(Driver::event_create), PFN_cuEventCreate_v2000>);
static_assert(std::is_same_v<decltype(Driver::event_destroy), PFN_cuEventDestroy_v4000>);
static_assert(std::is_same_v<decltype(Driver::event_record), PFN_cuEventRecord_v2000>);
static_assert(std::is_same_v<decltype(Driver::event_synchronize), PFN_cuEventSynchronize_v2000>);
static_assert(
    std::is_same_v<decltype(Driver::stream_is_capturing), PFN_cuStreamIsCapturing_v10000>);
static_assert(std::is_same_v<decltype(Driver::thread_exchange_capture_mode),
                             PFN_cuThreadExchangeStreamCaptureMode_v10010>);
static_assert(std::is_same_v<decltype(Driver::event_elapsed_time), PFN_cuEventElapsedTime_v12080>);

struct Loaded {
  Driver table;
  std::string why;  // empty when loaded
  bool ok = false;
};

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// Each entry point is asked for at the CUDA version whose ABI matches the prototype cuda.h
// gives it here (cudaTypedefs.h's PFN_<name>_v<version>): asking with the newest version can
// return a later ABI (cuCtxSynchronize at 13000 is cuCtxSynchronize_v2(CUcontext)).
template <class Fn>
bool resolve(GetProc get_proc, int version, const char* symbol, Fn& fn, std::string& why) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (get_proc(symbol, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      status != CU_GET_PROC_ADDRESS_SUCCESS)
    p = nullptr;
  if (p == nullptr) {
    why = std::string("the CUDA driver has no ") + symbol + " of CUDA " +
          std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) +
          " (driver too old?)";
    return false;
  }
  fn = reinterpret_cast<Fn>(p);
  return true;
}

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    out.why =
        std::string("no CUDA driver: libcuda.so.1 could not be loaded (") + (err ? err : "?") + ")";
    return out;
  }
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    out.why =
        "the CUDA driver is too old (no cuGetProcAddress_v2: fp4jit needs a CUDA 12 or newer "
        "driver)";
    return out;
  }
  Driver& d = out.table;
  std::string& why = out.why;
  if (!resolve(get_proc, 2020, "cuDriverGetVersion", d.driver_get_version, why)) return out;
  if (d.driver_get_version(&d.version) != CUDA_SUCCESS) d.version = 0;
  const bool ok =
      resolve(get_proc, 2000, "cuInit", d.init, why) &&
      resolve(get_proc, 6000, "cuGetErrorName", d.get_error_name, why) &&
      resolve(get_proc, 6000, "cuGetErrorString", d.get_error_string, why) &&
      resolve(get_proc, 2000, "cuDeviceGetCount", d.device_get_count, why) &&
      resolve(get_proc, 2000, "cuDeviceGet", d.device_get, why) &&
      resolve(get_proc, 2000, "cuDeviceGetName", d.device_get_name, why) &&
      resolve(get_proc, 2000, "cuDeviceGetAttribute", d.device_get_attribute, why) &&
      resolve(get_proc, 7000, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain, why) &&
      resolve(get_proc, 11000, "cuDevicePrimaryCtxRelease", d.primary_ctx_release, why) &&
      resolve(get_proc, 4000, "cuCtxPushCurrent", d.ctx_push_current, why) &&
      resolve(get_proc, 4000, "cuCtxPopCurrent", d.ctx_pop_current, why) &&
      resolve(get_proc, 4000, "cuCtxGetCurrent", d.ctx_get_current, why) &&
      resolve(get_proc, 2000, "cuCtxSynchronize", d.ctx_synchronize, why) &&
      resolve(get_proc, 2000, "cuModuleLoadData", d.module_load_data, why) &&
      resolve(get_proc, 2000, "cuModuleUnload", d.module_unload, why) &&
      resolve(get_proc, 2000, "cuModuleGetFunction", d.module_get_function, why) &&
      resolve(get_proc, 2020, "cuFuncGetAttribute", d.func_get_attribute, why) &&
      resolve(get_proc, 9000, "cuFuncSetAttribute", d.func_set_attribute, why) &&
      resolve(get_proc, 12000, "cuTensorMapEncodeTiled", d.tensor_map_encode_tiled, why) &&
      resolve(get_proc, 4000, "cuLaunchKernel", d.launch_kernel, why) &&
      resolve(get_proc, 11060, "cuLaunchKernelEx", d.launch_kernel_ex, why) &&
      resolve(get_proc, 11070, "cuOccupancyMaxActiveClusters", d.occupancy_max_active_clusters,
              why) &&
      resolve(get_proc, 6050, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
              d.occupancy_max_active_blocks, why) &&
      resolve(get_proc, 3020, "cuMemAlloc", d.mem_alloc, why) &&
      resolve(get_proc, 3020, "cuMemFree", d.mem_free, why) &&
      resolve(get_proc, 11020, "cuMemAllocAsync", d.mem_alloc_async, why) &&
      resolve(get_proc, 11020, "cuMemFreeAsync", d.mem_free_async, why) &&
      resolve(get_proc, 11020, "cuMemPoolCreate", d.mem_pool_create, why) &&
      resolve(get_proc, 11020, "cuMemPoolDestroy", d.mem_pool_destroy, why) &&
      resolve(get_proc, 11020, "cuMemPoolSetAttribute", d.mem_pool_set_attribute, why) &&
      resolve(get_proc, 11020, "cuMemAllocFromPoolAsync", d.mem_alloc_from_pool_async, why) &&
      resolve(get_proc, 3020, "cuMemcpyHtoD", d.memcpy_htod, why) &&
      resolve(get_proc, 3020, "cuMemcpyDtoH", d.memcpy_dtoh, why) &&
      resolve(get_proc, 3020, "cuMemcpyDtoDAsync", d.memcpy_dtod_async, why) &&
      resolve(get_proc, 3020, "cuMemsetD8Async", d.memset_d8_async, why) &&
      resolve(get_proc, 3020, "cuMemsetD32Async", d.memset_d32_async, why) &&
      resolve(get_proc, 4000, "cuPointerGetAttribute", d.pointer_get_attribute, why) &&
      resolve(get_proc, 7000, "cuPointerGetAttributes", d.pointer_get_attributes, why) &&
      resolve(get_proc, 2000, "cuStreamCreate", d.stream_create, why) &&
      resolve(get_proc, 4000, "cuStreamDestroy", d.stream_destroy, why) &&
      resolve(get_proc, 2000, "cuStreamSynchronize", d.stream_synchronize, why) &&
      resolve(get_proc, 10000, "cuStreamIsCapturing", d.stream_is_capturing, why) &&
      resolve(get_proc, 10010, "cuThreadExchangeStreamCaptureMode", d.thread_exchange_capture_mode,
              why) &&
      resolve(get_proc, 2000, "cuEventCreate", d.event_create, why) &&
      resolve(get_proc, 4000, "cuEventDestroy", d.event_destroy, why) &&
      resolve(get_proc, 2000, "cuEventRecord", d.event_record, why) &&
      resolve(get_proc, 2000, "cuEventSynchronize", d.event_synchronize, why) &&
      (resolve(get_proc, 12080, "cuEventElapsedTime", d.event_elapsed_time, why) ||
       resolve(get_proc, 2000, "cuEventElapsedTime", d.event_elapsed_time, why));
  if (!ok) return out;
  const CUresult init = d.init(0);
  if (init != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.get_error_name(init, &name);
    out.why = std::string("the CUDA driver did not initialize (cuInit: ") + (name ? name : "?") +
              "): no usable GPU";
    return out;
  }
  int count = 0;
  if (d.device_get_count(&count) != CUDA_SUCCESS || count == 0) {
    out.why = "the CUDA driver reports no GPU";
    return out;
  }
  out.ok = true;
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();  // once per process; the library stays loaded
  return instance;
}

}  // namespace

const Driver* driver(std::string* why) {
  const Loaded& l = loaded();
  if (why != nullptr) *why = l.why;
  return l.ok ? &l.table : nullptr;
}

const Driver& require_driver() {
  std::string why;
  const Driver* d = driver(&why);
  if (d == nullptr) fail(ErrorKind::no_gpu, "CUDA backend unavailable: {}", why);
  return *d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const Driver* d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d != nullptr) {
    d->get_error_name(r, &name);
    d->get_error_string(r, &text);
  }
  fail(ErrorKind::driver, "{}: {} ({})", what, name ? name : "CUDA error",
       text ? text : std::to_string(r));
}

}  // namespace fp4jit::cuda

namespace fp4jit {

bool cuda_available() {
  return cuda::driver() != nullptr;
}

}  // namespace fp4jit
