// Stream-ordered scratch for kernel intermediates (split-K partial sums and counters, the staged
// GEMM's expanded operands and factors, amax words, OCC lists), from a memory pool the backend
// owns.
//
// Why a pool of our own: the device's default pool returns freed memory to the driver at every
// synchronization (its release threshold is 0), so a call after a cuStreamSynchronize maps its
// scratch again; for the staged GEMM (M x K and N x K expanded bytes, 48-150 MB at LLaMA shapes)
// that cost more than the expansion kernels themselves. This pool keeps what it has mapped up to
// FP4JIT_WORKSPACE_KEEP_MB (default: all of it), and never touches the caller's allocators.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>

#include "runtime/cuda/driver.hpp"

namespace fp4jit::cuda {

class WorkspacePool {
 public:
  // A pinned device pool on `device`; its release threshold from FP4JIT_WORKSPACE_KEEP_MB.
  WorkspacePool(const Driver& d, CUdevice device);
  ~WorkspacePool();
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  CUdeviceptr allocate(std::size_t bytes, CUstream s) const;
  void free(CUdeviceptr p, CUstream s) const;
  // Whether p lies in an allocation of this pool not yet freed. The backend's own scratch is
  // device memory without asking the driver, which cannot answer for it while a CUDA graph is
  // being captured: an allocation made during a capture is a graph memory node, its address
  // reserved but not mapped until the graph runs.
  bool holds(std::uintptr_t p) const;

 private:
  const Driver& d_;
  CUmemoryPool pool_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::map<std::uintptr_t, std::size_t> live_;  // start -> bytes
};

// FP4JIT_WORKSPACE_KEEP_MB parsed: UINT64_MAX when unset; Error(invalid_argument) naming the
// variable when it is not a non-negative integer.
std::uint64_t workspace_keep_bytes(const char* env_value);

// One call's scratch, freed (stream-ordered) on every way out.
class Workspace {
 public:
  Workspace(const WorkspacePool& pool, CUstream s, std::int64_t bytes);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  std::uintptr_t base() const { return static_cast<std::uintptr_t>(ptr_); }
  template <class T>
  T* at(std::int64_t byte_offset) const {
    return reinterpret_cast<T*>(base() + static_cast<std::uintptr_t>(byte_offset));
  }

 private:
  const WorkspacePool& pool_;
  CUstream stream_;
  CUdeviceptr ptr_ = 0;
};

}  // namespace fp4jit::cuda
