// The stand-in driver's device memory (fake_cuda.cpp): fake addresses, never dereferenced, whose
// live ranges the pointer queries answer for.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace fake_cuda {

// A fresh range of at least `bytes` (256-byte aligned, a gap after it), recorded as live.
CUdeviceptr fake_address(std::size_t bytes);
// A fresh range not recorded as live: what an allocation made during a stream capture returns (a
// graph memory node's address, mapped only when the graph runs; pointer queries do not know it).
CUdeviceptr graph_address(std::size_t bytes);
// Forgets the live range starting at p.
void release(CUdeviceptr p);
// The live range holding p: true and its start and size, or false.
bool allocation_of(CUdeviceptr p, std::uint64_t* start, std::uint64_t* size);

}  // namespace fake_cuda
