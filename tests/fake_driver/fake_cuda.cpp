// A stand-in libcuda.so.1 for machines without a GPU: every entry point fp4jit resolves through
// cuGetProcAddress_v2 succeeds without doing device work. Device memory is a counter of fake
// addresses (never dereferenced) whose live ranges the pointer queries know (fake_memory.cpp),
// modules and functions are tokens, launches only count (the last cuLaunchKernelEx's shape too).
//
// What it is for: running the CUDA backend's host side (planning, argument checks, module and
// tuning lookups, the driver calls of each Engine call) where no GPU is, so its host cost can be
// profiled (bench/host_overhead.cpp) and its driver-call sequence tested. Results are
// meaningless: nothing is computed. Load it with LD_LIBRARY_PATH=<dir of this libcuda.so.1>.
//
// fake_cuda_calls(name) returns how often `name` was called (nullptr: all entry points together);
// fake_cuda_name(i) names entry point i (nullptr past the last); fake_cuda_reset() zeroes the
// counts; fake_cuda_last_launch_ex(grid, cluster, dependent) tells the last cuLaunchKernelEx's
// grid, cluster size and programmatic dependency; fake_cuda_output_maps(v) the tensor maps of
// element types other than uint8 (a GEMM's D) since the last reset, and the last one's shape.
// fake_cuda_set_capturing(on) models a stream capture in the global mode (torch.cuda.graph's
// default) going on in the process: then the "potentially unsafe" calls of a thread not in relaxed
// mode (cuThreadExchangeStreamCaptureMode) fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, as the
// real driver's do (and would invalidate the capture), and a pool allocation gets an address the
// pointer queries do not know (a graph memory node's); fake_cuda_refused() counts them since the
// last reset, fake_cuda_capture_mode() is the calling thread's mode. The unsafe set modelled here
// is every call that is neither a stream-ordered operation nor a pure lookup: module loads and
// function attributes, occupancy, pool set-up, synchronous copies and synchronizations, and
// allocation outside stream order (pointer queries are lookups: an H200 with driver 580 answered
// them during a global-mode capture). fake_cuda_set_ptx_jit(0) models CUDA_DISABLE_PTX_JIT=1:
// cuModuleLoadData of an image that is not a cubin (ELF) fails.
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fake_entries.hpp"
#include "fake_memory.hpp"

namespace {

using namespace fake_cuda::entries;
using fake_cuda::allocation_of;
using fake_cuda::fake_address;
using fake_cuda::release;

// The device this driver reports: an H100-class sm_90 part.
constexpr int kSmCount = 132;

std::atomic<long> g_counts[k_count];
int g_token;                       // modules, functions, contexts, pools, streams and events
thread_local CUcontext g_current;  // the context stack's top (one level is all fp4jit uses)

CUresult count(Counter c) {
  g_counts[c].fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

std::atomic<int> g_capturing{0};  // a global-mode capture is going on (fake_cuda_set_capturing)
std::atomic<long> g_refused{0};
thread_local CUstreamCaptureMode g_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

// Counts c; refuses it as the driver refuses an unsafe call during a capture.
CUresult unsafe(Counter c) {
  count(c);
  if (g_capturing.load() != 0 && g_mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    g_refused.fetch_add(1);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

template <class T>
T token() {
  return reinterpret_cast<T>(&g_token);
}

CUresult f_init(unsigned) {
  return count(k_init);
}
CUresult f_driver_get_version(int* v) {
  *v = 13000;
  return count(k_driver_get_version);
}
CUresult f_get_error_name(CUresult r, const char** s) {
  *s = r == CUDA_ERROR_JIT_COMPILATION_DISABLED ? "CUDA_ERROR_JIT_COMPILATION_DISABLED"
                                                : "CUDA_ERROR_FAKE";
  return count(k_get_error_name);
}
CUresult f_get_error_string(CUresult, const char** s) {
  *s = "error of the stand-in driver";
  return count(k_get_error_string);
}
CUresult f_device_get_count(int* n) {
  *n = 1;
  return count(k_device_get_count);
}
CUresult f_device_get(CUdevice* d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return count(k_device_get);
}
CUresult f_device_get_name(char* name, int len, CUdevice) {
  std::strncpy(name, "fp4jit stand-in driver (no GPU)", static_cast<std::size_t>(len));
  if (len > 0) name[len - 1] = '\0';
  return count(k_device_get_name);
}
CUresult f_device_get_attribute(int* v, CUdevice_attribute a, CUdevice) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = kSmCount;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *v = 1980000;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *v = 3201000;
      break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *v = 6144;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *v = 50 << 20;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = 232448;
      break;
    default:
      *v = 1;
      break;
  }
  return count(k_device_get_attribute);
}
CUresult f_primary_ctx_retain(CUcontext* c, CUdevice) {
  *c = token<CUcontext>();
  return count(k_primary_ctx_retain);
}
CUresult f_primary_ctx_release(CUdevice) {
  return count(k_primary_ctx_release);
}
CUresult f_ctx_push_current(CUcontext c) {
  g_current = c;
  return count(k_ctx_push_current);
}
CUresult f_ctx_pop_current(CUcontext* c) {
  if (c != nullptr) *c = g_current;
  g_current = nullptr;
  return count(k_ctx_pop_current);
}
CUresult f_ctx_get_current(CUcontext* c) {
  *c = g_current;
  return count(k_ctx_get_current);
}
CUresult f_ctx_synchronize() {
  return unsafe(k_ctx_synchronize);
}
std::atomic<int> g_ptx_jit_off{0};  // fake_cuda_set_ptx_jit(0): as with CUDA_DISABLE_PTX_JIT=1

CUresult f_module_load_data(CUmodule* m, const void* image) {
  const CUresult r = unsafe(k_module_load_data);
  if (r != CUDA_SUCCESS) return r;
  // A cubin is an ELF image; anything else is PTX text, which the driver would JIT-compile.
  constexpr unsigned char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (g_ptx_jit_off.load() != 0 && std::memcmp(image, kElfMagic, sizeof kElfMagic) != 0)
    return CUDA_ERROR_JIT_COMPILATION_DISABLED;
  *m = token<CUmodule>();
  return CUDA_SUCCESS;
}
CUresult f_module_unload(CUmodule) {
  return unsafe(k_module_unload);
}
CUresult f_module_get_function(CUfunction* f, CUmodule, const char*) {
  *f = token<CUfunction>();
  return count(k_module_get_function);
}
CUresult f_func_get_attribute(int* v, CUfunction_attribute, CUfunction) {
  *v = 0;
  return unsafe(k_func_get_attribute);
}
CUresult f_func_set_attribute(CUfunction, CUfunction_attribute, int) {
  return unsafe(k_func_set_attribute);
}
// Tensor maps of other element types than uint8 (the operands' codes are uint8): how many since
// the last reset, and the last one's element bytes, dims, row pitch, box and swizzle.
std::atomic<long> g_out_maps{0};
long g_out_map[7] = {};
CUresult f_tensor_map_encode_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank,
                                   void*, const cuuint64_t* dims, const cuuint64_t* strides,
                                   const cuuint32_t* box, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                                   CUtensorMapFloatOOBfill) {
  std::memset(map, 0, sizeof *map);
  if (type != CU_TENSOR_MAP_DATA_TYPE_UINT8 && rank == 2) {
    g_out_maps.fetch_add(1);
    g_out_map[0] = type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ? 4 : 2;
    g_out_map[1] = static_cast<long>(dims[0]);
    g_out_map[2] = static_cast<long>(dims[1]);
    g_out_map[3] = static_cast<long>(strides[0]);
    g_out_map[4] = static_cast<long>(box[0]);
    g_out_map[5] = static_cast<long>(box[1]);
    g_out_map[6] = swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 128 : 0;
  }
  return count(k_tensor_map_encode_tiled);
}
CUresult f_launch_kernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, CUstream, void**, void**) {
  return count(k_launch_kernel);
}
// CTAs per cluster of a launch config (1: no cluster attribute), and whether it asks for
// programmatic dependent launch.
int cluster_size(const CUlaunchConfig* config) {
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      return static_cast<int>(a.value.clusterDim.x * a.value.clusterDim.y * a.value.clusterDim.z);
  }
  return 1;
}
bool dependent(const CUlaunchConfig* config) {
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      return a.value.programmaticStreamSerializationAllowed != 0;
  }
  return false;
}
// The last cuLaunchKernelEx's grid, cluster size and programmatic dependency (0 / 1).
std::atomic<int> g_ex_grid{0}, g_ex_cluster{0}, g_ex_dependent{0};
CUresult f_launch_kernel_ex(const CUlaunchConfig* config, CUfunction, void**, void**) {
  g_ex_grid = static_cast<int>(config->gridDimX);
  g_ex_cluster = cluster_size(config);
  g_ex_dependent = dependent(config) ? 1 : 0;
  return count(k_launch_kernel_ex);
}
CUresult f_occupancy_clusters(int* n, CUfunction, const CUlaunchConfig* config) {
  *n = kSmCount / cluster_size(config);
  return unsafe(k_occupancy_clusters);
}
CUresult f_occupancy(int* n, CUfunction, int, std::size_t) {
  *n = 1;
  return unsafe(k_occupancy);
}
CUresult f_mem_alloc(CUdeviceptr* p, std::size_t bytes) {
  *p = fake_address(bytes);
  return unsafe(k_mem_alloc);
}
CUresult f_mem_free(CUdeviceptr p) {
  release(p);
  return unsafe(k_mem_free);
}
CUresult f_mem_alloc_async(CUdeviceptr* p, std::size_t bytes, CUstream) {
  *p = fake_address(bytes);
  return count(k_mem_alloc_async);
}
CUresult f_mem_free_async(CUdeviceptr p, CUstream) {
  release(p);
  return count(k_mem_free_async);
}
CUresult f_mem_pool_create(CUmemoryPool* pool, const CUmemPoolProps*) {
  *pool = token<CUmemoryPool>();
  return unsafe(k_mem_pool_create);
}
CUresult f_mem_pool_destroy(CUmemoryPool) {
  return count(k_mem_pool_destroy);
}
CUresult f_mem_pool_set_attribute(CUmemoryPool, CUmemPool_attribute, void*) {
  return unsafe(k_mem_pool_set_attribute);
}
CUresult f_mem_alloc_from_pool_async(CUdeviceptr* p, std::size_t bytes, CUmemoryPool, CUstream) {
  *p = g_capturing.load() != 0 ? fake_cuda::graph_address(bytes) : fake_address(bytes);
  return count(k_mem_alloc_from_pool_async);
}
CUresult f_memcpy_htod(CUdeviceptr, const void*, std::size_t) {
  return unsafe(k_memcpy_htod);
}
CUresult f_memcpy_dtoh(void* dst, CUdeviceptr, std::size_t bytes) {
  std::memset(dst, 0, bytes);
  return unsafe(k_memcpy_dtoh);
}
CUresult f_memcpy_dtod_async(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) {
  return count(k_memcpy_dtod_async);
}
CUresult f_memset_d8_async(CUdeviceptr, unsigned char, std::size_t, CUstream) {
  return count(k_memset_d8_async);
}
CUresult f_memset_d32_async(CUdeviceptr, unsigned, std::size_t, CUstream) {
  return count(k_memset_d32_async);
}
// Addresses inside a live allocation are device memory; others are not CUDA memory (the real
// driver: cuPointerGetAttribute fails, cuPointerGetAttributes succeeds with null answers).
CUresult f_pointer_get_attribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
  count(k_pointer_get_attribute);
  std::uint64_t start = 0, size = 0;
  if (!allocation_of(p, &start, &size)) return CUDA_ERROR_INVALID_VALUE;
  if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *static_cast<unsigned*>(data) = CU_MEMORYTYPE_DEVICE;
  return CUDA_SUCCESS;
}
CUresult f_pointer_get_attributes(unsigned n, CUpointer_attribute* attributes, void** data,
                                  CUdeviceptr p) {
  count(k_pointer_get_attributes);
  std::uint64_t start = 0, size = 0;
  const bool device = allocation_of(p, &start, &size);
  for (unsigned i = 0; i < n; ++i) {
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(data[i]) = device ? CU_MEMORYTYPE_DEVICE : 0;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *static_cast<CUdeviceptr*>(data[i]) = device ? static_cast<CUdeviceptr>(start) : 0;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *static_cast<std::size_t*>(data[i]) = device ? static_cast<std::size_t>(size) : 0;
        break;
      default:
        break;
    }
  }
  return CUDA_SUCCESS;
}
CUresult f_stream_create(CUstream* s, unsigned) {
  *s = token<CUstream>();
  return count(k_stream_create);
}
CUresult f_stream_destroy(CUstream) {
  return count(k_stream_destroy);
}
CUresult f_stream_synchronize(CUstream) {
  return unsafe(k_stream_synchronize);
}
// Every stream is being captured while a capture goes on (fp4jit's calls use the caller's).
CUresult f_stream_is_capturing(CUstream, CUstreamCaptureStatus* status) {
  *status =
      g_capturing.load() != 0 ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return count(k_stream_is_capturing);
}
CUresult f_thread_exchange_capture_mode(CUstreamCaptureMode* mode) {
  const CUstreamCaptureMode previous = g_mode;
  g_mode = *mode;
  *mode = previous;
  return count(k_thread_exchange_capture_mode);
}
CUresult f_event_create(CUevent* e, unsigned) {
  *e = token<CUevent>();
  return count(k_event_create);
}
CUresult f_event_destroy(CUevent) {
  return count(k_event_destroy);
}
CUresult f_event_record(CUevent, CUstream) {
  return count(k_event_record);
}
CUresult f_event_synchronize(CUevent) {
  return unsafe(k_event_synchronize);
}
CUresult f_event_elapsed_time(float* ms, CUevent, CUevent) {
  *ms = 0.0f;
  return count(k_event_elapsed_time);
}

void* const kEntries[k_count] = {
    reinterpret_cast<void*>(&f_init),
    reinterpret_cast<void*>(&f_driver_get_version),
    reinterpret_cast<void*>(&f_get_error_name),
    reinterpret_cast<void*>(&f_get_error_string),
    reinterpret_cast<void*>(&f_device_get_count),
    reinterpret_cast<void*>(&f_device_get),
    reinterpret_cast<void*>(&f_device_get_name),
    reinterpret_cast<void*>(&f_device_get_attribute),
    reinterpret_cast<void*>(&f_primary_ctx_retain),
    reinterpret_cast<void*>(&f_primary_ctx_release),
    reinterpret_cast<void*>(&f_ctx_push_current),
    reinterpret_cast<void*>(&f_ctx_pop_current),
    reinterpret_cast<void*>(&f_ctx_get_current),
    reinterpret_cast<void*>(&f_ctx_synchronize),
    reinterpret_cast<void*>(&f_module_load_data),
    reinterpret_cast<void*>(&f_module_unload),
    reinterpret_cast<void*>(&f_module_get_function),
    reinterpret_cast<void*>(&f_func_get_attribute),
    reinterpret_cast<void*>(&f_func_set_attribute),
    reinterpret_cast<void*>(&f_tensor_map_encode_tiled),
    reinterpret_cast<void*>(&f_launch_kernel),
    reinterpret_cast<void*>(&f_launch_kernel_ex),
    reinterpret_cast<void*>(&f_occupancy_clusters),
    reinterpret_cast<void*>(&f_occupancy),
    reinterpret_cast<void*>(&f_mem_alloc),
    reinterpret_cast<void*>(&f_mem_free),
    reinterpret_cast<void*>(&f_mem_alloc_async),
    reinterpret_cast<void*>(&f_mem_free_async),
    reinterpret_cast<void*>(&f_mem_pool_create),
    reinterpret_cast<void*>(&f_mem_pool_destroy),
    reinterpret_cast<void*>(&f_mem_pool_set_attribute),
    reinterpret_cast<void*>(&f_mem_alloc_from_pool_async),
    reinterpret_cast<void*>(&f_memcpy_htod),
    reinterpret_cast<void*>(&f_memcpy_dtoh),
    reinterpret_cast<void*>(&f_memcpy_dtod_async),
    reinterpret_cast<void*>(&f_memset_d8_async),
    reinterpret_cast<void*>(&f_memset_d32_async),
    reinterpret_cast<void*>(&f_pointer_get_attribute),
    reinterpret_cast<void*>(&f_pointer_get_attributes),
    reinterpret_cast<void*>(&f_stream_create),
    reinterpret_cast<void*>(&f_stream_destroy),
    reinterpret_cast<void*>(&f_stream_synchronize),
    reinterpret_cast<void*>(&f_stream_is_capturing),
    reinterpret_cast<void*>(&f_thread_exchange_capture_mode),
    reinterpret_cast<void*>(&f_event_create),
    reinterpret_cast<void*>(&f_event_destroy),
    reinterpret_cast<void*>(&f_event_record),
    reinterpret_cast<void*>(&f_event_synchronize),
    reinterpret_cast<void*>(&f_event_elapsed_time),
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int, cuuint64_t, CUdriverProcAddressQueryResult* status) {
  const std::string_view s(symbol);
  for (int i = 0; i < k_count; ++i) {
    if (s == kNames[i]) {
      *pfn = kEntries[i];
      if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *pfn = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) long fake_cuda_calls(const char* name) {
  long total = 0;
  for (int i = 0; i < k_count; ++i)
    if (name == nullptr || std::string_view(name) == kNames[i])
      total += g_counts[i].load(std::memory_order_relaxed);
  return total;
}

// The name of entry point i (0 <= i < its count), else nullptr: for listing the counts.
__attribute__((visibility("default"))) const char* fake_cuda_name(int i) {
  return i >= 0 && i < k_count ? kNames[i] : nullptr;
}

// The last cuLaunchKernelEx: its grid (x), cluster size and programmatic dependency.
__attribute__((visibility("default"))) void fake_cuda_last_launch_ex(int* grid, int* cluster,
                                                                     int* dependent) {
  *grid = g_ex_grid.load();
  *cluster = g_ex_cluster.load();
  *dependent = g_ex_dependent.load();
}

// Output tensor maps since the last reset; v[0..6]: the last one's element bytes, dims (columns,
// rows), row pitch in bytes, box (columns, rows) and swizzle (128 or 0).
__attribute__((visibility("default"))) long fake_cuda_output_maps(long* v) {
  for (int i = 0; i < 7; ++i) v[i] = g_out_map[i];
  return g_out_maps.load();
}

// PTX JIT compilation allowed (on, the default) or disabled as CUDA_DISABLE_PTX_JIT=1 disables
// it: then cuModuleLoadData of anything but a cubin fails with CUDA_ERROR_JIT_COMPILATION_DISABLED.
__attribute__((visibility("default"))) void fake_cuda_set_ptx_jit(int on) {
  g_ptx_jit_off.store(on ? 0 : 1);
}

// A global-mode stream capture going on in the process (on) or not (off).
__attribute__((visibility("default"))) void fake_cuda_set_capturing(int on) {
  g_capturing.store(on);
}
// Unsafe calls refused during a capture since the last reset.
__attribute__((visibility("default"))) long fake_cuda_refused() {
  return g_refused.load();
}
// The calling thread's capture mode (CUstreamCaptureMode).
__attribute__((visibility("default"))) int fake_cuda_capture_mode() {
  return static_cast<int>(g_mode);
}

__attribute__((visibility("default"))) void fake_cuda_reset() {
  g_refused.store(0);
  g_out_maps.store(0);
  for (auto& c : g_counts) c.store(0, std::memory_order_relaxed);
}
}
