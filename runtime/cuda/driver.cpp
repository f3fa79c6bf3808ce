#include "runtime/cuda/driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/error.hpp"
#include "runtime/backend.hpp"

namespace fp4jit::cuda {

namespace {

struct Loaded {
  Driver table;
  std::string why;  // empty when loaded
  bool ok = false;
};

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

template <class Fn>
bool resolve(void* lib, GetProc get_proc, int version, const char* symbol, Fn& fn,
             std::string& why) {
  void* p = nullptr;
  if (get_proc != nullptr) {
    CUdriverProcAddressQueryResult status{};
    if (get_proc(symbol, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS)
      p = nullptr;
  }
  if (p == nullptr) p = dlsym(lib, symbol);
  if (p == nullptr) {
    why = std::string("libcuda.so.1 has no entry point ") + symbol + " (driver too old?)";
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
  Driver& d = out.table;
  std::string& why = out.why;
  if (!resolve(lib, nullptr, 0, "cuDriverGetVersion", d.driver_get_version, why)) return out;
  int version = 0;
  if (d.driver_get_version(&version) != CUDA_SUCCESS) version = 0;
  d.version = version;
  const int ask = version < CUDA_VERSION ? version : CUDA_VERSION;
  const bool ok =
      resolve(lib, get_proc, ask, "cuInit", d.init, why) &&
      resolve(lib, get_proc, ask, "cuGetErrorName", d.get_error_name, why) &&
      resolve(lib, get_proc, ask, "cuGetErrorString", d.get_error_string, why) &&
      resolve(lib, get_proc, ask, "cuDeviceGetCount", d.device_get_count, why) &&
      resolve(lib, get_proc, ask, "cuDeviceGet", d.device_get, why) &&
      resolve(lib, get_proc, ask, "cuDeviceGetName", d.device_get_name, why) &&
      resolve(lib, get_proc, ask, "cuDeviceGetAttribute", d.device_get_attribute, why) &&
      resolve(lib, get_proc, ask, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain, why) &&
      resolve(lib, get_proc, ask, "cuDevicePrimaryCtxRelease", d.primary_ctx_release, why) &&
      resolve(lib, get_proc, ask, "cuCtxPushCurrent", d.ctx_push_current, why) &&
      resolve(lib, get_proc, ask, "cuCtxPopCurrent", d.ctx_pop_current, why) &&
      resolve(lib, get_proc, ask, "cuCtxSynchronize", d.ctx_synchronize, why) &&
      resolve(lib, get_proc, ask, "cuModuleLoadData", d.module_load_data, why) &&
      resolve(lib, get_proc, ask, "cuModuleUnload", d.module_unload, why) &&
      resolve(lib, get_proc, ask, "cuModuleGetFunction", d.module_get_function, why) &&
      resolve(lib, get_proc, ask, "cuFuncGetAttribute", d.func_get_attribute, why) &&
      resolve(lib, get_proc, ask, "cuLaunchKernel", d.launch_kernel, why) &&
      resolve(lib, get_proc, ask, "cuMemAlloc", d.mem_alloc, why) &&
      resolve(lib, get_proc, ask, "cuMemFree", d.mem_free, why) &&
      resolve(lib, get_proc, ask, "cuMemAllocAsync", d.mem_alloc_async, why) &&
      resolve(lib, get_proc, ask, "cuMemFreeAsync", d.mem_free_async, why) &&
      resolve(lib, get_proc, ask, "cuMemcpyHtoD", d.memcpy_htod, why) &&
      resolve(lib, get_proc, ask, "cuMemcpyDtoH", d.memcpy_dtoh, why) &&
      resolve(lib, get_proc, ask, "cuMemcpyDtoDAsync", d.memcpy_dtod_async, why) &&
      resolve(lib, get_proc, ask, "cuMemsetD8Async", d.memset_d8_async, why) &&
      resolve(lib, get_proc, ask, "cuMemsetD32Async", d.memset_d32_async, why) &&
      resolve(lib, get_proc, ask, "cuPointerGetAttribute", d.pointer_get_attribute, why) &&
      resolve(lib, get_proc, ask, "cuStreamCreate", d.stream_create, why) &&
      resolve(lib, get_proc, ask, "cuStreamDestroy", d.stream_destroy, why) &&
      resolve(lib, get_proc, ask, "cuStreamSynchronize", d.stream_synchronize, why) &&
      resolve(lib, get_proc, ask, "cuEventCreate", d.event_create, why) &&
      resolve(lib, get_proc, ask, "cuEventDestroy", d.event_destroy, why) &&
      resolve(lib, get_proc, ask, "cuEventRecord", d.event_record, why) &&
      resolve(lib, get_proc, ask, "cuEventSynchronize", d.event_synchronize, why) &&
      resolve(lib, get_proc, ask, "cuEventElapsedTime", d.event_elapsed_time, why);
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
