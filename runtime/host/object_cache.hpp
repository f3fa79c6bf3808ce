// llvm::ObjectCache over the SQLite kernel cache: ORC's compiler asks it for a module's object
// before compiling (module identifier = the kernel's key hash) and hands it every object it
// compiles, which is stored with the kernel's key text, target, compiler, options and IR.
#pragma once
#include <llvm/ExecutionEngine/ObjectCache.h>

#include <map>
#include <mutex>
#include <string>

#include "cache/cache.hpp"

namespace fp4jit::host {

class KernelObjectCache final : public llvm::ObjectCache {
 public:
  explicit KernelObjectCache(KernelCache* cache) : cache_(cache) {}

  // The entry (everything but the binary) to store when the module `entry.key_hash` compiles.
  void expect(const CacheEntry& entry);
  // The stored object of a key hash, if any.
  std::optional<CacheEntry> find(const std::string& key_hash);

  void notifyObjectCompiled(const llvm::Module* module, llvm::MemoryBufferRef object) override;
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module* module) override;

 private:
  KernelCache* cache_;  // null: no persistent cache
  std::mutex mutex_;
  std::map<std::string, CacheEntry> pending_;
};

}  // namespace fp4jit::host
