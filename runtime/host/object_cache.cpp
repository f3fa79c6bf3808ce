#include "runtime/host/object_cache.hpp"

#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>

namespace fp4jit::host {

void KernelObjectCache::expect(const CacheEntry& entry) {
  std::lock_guard lock(mutex_);
  pending_[entry.key_hash] = entry;
}

std::optional<CacheEntry> KernelObjectCache::find(const std::string& key_hash) {
  if (cache_ == nullptr || !cache_->enabled()) return std::nullopt;
  return cache_->get(key_hash);
}

void KernelObjectCache::notifyObjectCompiled(const llvm::Module* module,
                                             llvm::MemoryBufferRef object) {
  CacheEntry entry;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(module->getModuleIdentifier());
    if (it == pending_.end()) return;
    entry = std::move(it->second);
    pending_.erase(it);
  }
  if (cache_ == nullptr) return;
  const auto* begin = reinterpret_cast<const std::uint8_t*>(object.getBufferStart());
  entry.binary.assign(begin, begin + object.getBufferSize());
  cache_->put(entry);  // a failed store warns and is dropped: the kernel still runs
}

std::unique_ptr<llvm::MemoryBuffer> KernelObjectCache::getObject(const llvm::Module* module) {
  const std::optional<CacheEntry> hit = find(module->getModuleIdentifier());
  if (!hit || hit->binary.empty()) return nullptr;
  const llvm::StringRef bytes(reinterpret_cast<const char*>(hit->binary.data()),
                              hit->binary.size());
  return llvm::MemoryBuffer::getMemBufferCopy(bytes, module->getModuleIdentifier());
}

}  // namespace fp4jit::host
