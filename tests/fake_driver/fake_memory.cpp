#include "fake_memory.hpp"

#include <atomic>
#include <map>
#include <mutex>

namespace fake_cuda {
namespace {

std::atomic<std::uint64_t> g_next_address{0x7f0000000000ull};
// Live allocations, start -> bytes.
std::mutex g_mutex;
std::map<std::uint64_t, std::uint64_t> g_allocations;

}  // namespace

CUdeviceptr fake_address(std::size_t bytes) {
  const std::uint64_t size = (static_cast<std::uint64_t>(bytes) + 255) / 256 * 256 + 256;
  const std::uint64_t start = g_next_address.fetch_add(size);
  std::lock_guard lock(g_mutex);
  g_allocations[start] = bytes > 0 ? bytes : 1;
  return static_cast<CUdeviceptr>(start);
}

CUdeviceptr graph_address(std::size_t bytes) {
  const std::uint64_t size = (static_cast<std::uint64_t>(bytes) + 255) / 256 * 256 + 256;
  return static_cast<CUdeviceptr>(g_next_address.fetch_add(size));
}

void release(CUdeviceptr p) {
  std::lock_guard lock(g_mutex);
  g_allocations.erase(static_cast<std::uint64_t>(p));
}

bool allocation_of(CUdeviceptr p, std::uint64_t* start, std::uint64_t* size) {
  std::lock_guard lock(g_mutex);
  auto it = g_allocations.upper_bound(static_cast<std::uint64_t>(p));
  if (it == g_allocations.begin()) return false;
  --it;
  if (static_cast<std::uint64_t>(p) - it->first >= it->second) return false;
  *start = it->first, *size = it->second;
  return true;
}

}  // namespace fake_cuda
