#include "runtime/cuda/workspace.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "core/error.hpp"

namespace fp4jit::cuda {

std::uint64_t workspace_keep_bytes(const char* env_value) {
  constexpr std::uint64_t kAll = std::numeric_limits<std::uint64_t>::max();
  if (env_value == nullptr || *env_value == '\0') return kAll;
  const std::string_view v(env_value);
  std::uint64_t mb = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), mb);
  if (ec != std::errc() || end != v.data() + v.size())
    fail(ErrorKind::invalid_argument,
         "FP4JIT_WORKSPACE_KEEP_MB='{}': expected a whole number of MiB (0 returns scratch to the "
         "driver at every synchronization)",
         v);
  if (mb > (kAll >> 20)) return kAll;
  return mb << 20;
}

WorkspacePool::WorkspacePool(const Driver& d, CUdevice device) : d_(d) {
  const RelaxedCapture relaxed(d_);  // an engine made while its stream is captured
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  check(d_.mem_pool_create(&pool_, &props), "cuMemPoolCreate (workspace pool)");
  cuuint64_t keep = workspace_keep_bytes(std::getenv("FP4JIT_WORKSPACE_KEEP_MB"));
  const CUresult r = d_.mem_pool_set_attribute(pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
  if (r != CUDA_SUCCESS) {
    d_.mem_pool_destroy(pool_);
    pool_ = nullptr;
    check(r, "cuMemPoolSetAttribute (workspace release threshold)");
  }
}

WorkspacePool::~WorkspacePool() {
  // Allocations still being freed on a stream are released by the driver once they complete.
  if (pool_ != nullptr) d_.mem_pool_destroy(pool_);
}

CUdeviceptr WorkspacePool::allocate(std::size_t bytes, CUstream s) const {
  CUdeviceptr p = 0;
  check(d_.mem_alloc_from_pool_async(&p, bytes, pool_, s), "cuMemAllocFromPoolAsync (workspace)");
  std::lock_guard lock(mutex_);
  live_[static_cast<std::uintptr_t>(p)] = bytes;
  return p;
}

void WorkspacePool::free(CUdeviceptr p, CUstream s) const {
  if (p == 0) return;
  {
    std::lock_guard lock(mutex_);
    live_.erase(static_cast<std::uintptr_t>(p));
  }
  d_.mem_free_async(p, s);
}

bool WorkspacePool::holds(std::uintptr_t p) const {
  std::lock_guard lock(mutex_);
  auto it = live_.upper_bound(p);
  if (it == live_.begin()) return false;
  --it;
  return p - it->first < it->second;
}

Workspace::Workspace(const WorkspacePool& pool, CUstream s, std::int64_t bytes)
    : pool_(pool), stream_(s) {
  if (bytes > 0) ptr_ = pool_.allocate(static_cast<std::size_t>(bytes), s);
}

Workspace::~Workspace() {
  pool_.free(ptr_, stream_);
}

}  // namespace fp4jit::cuda
