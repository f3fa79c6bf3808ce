#include "runtime/host/kernels.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "codegen/host/generator_hash.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace fp4jit::host {

namespace {
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}
}  // namespace

const std::string& generator_hash() {
  static const std::string hash = kGeneratorHash;
  return hash;
}

KernelRegistry::KernelRegistry(const std::string& cache_path)
    : jit_(std::make_unique<HostJit>()),
      no_compile_(env_on("FP4JIT_NO_COMPILE")),
      print_(env_on("FP4JIT_PRINT_KERNELS")) {
  if (!cache_path.empty()) cache_ = std::make_unique<KernelCache>(cache_path);
  object_cache_ = std::make_unique<KernelObjectCache>(cache_.get());
}

KernelRegistry::~KernelRegistry() = default;

KernelStats KernelRegistry::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string KernelRegistry::key_hash(const KernelRequest& request) const {
  const HostTarget& t = jit_->target();
  return make_key_hash(request.key_text, t.name, t.compiler, jit_->options(), generator_hash());
}

std::vector<void*> KernelRegistry::get(const KernelRequest& request) {
  const std::string hash = key_hash(request);
  std::lock_guard lock(mutex_);
  if (auto it = loaded_.find(hash); it != loaded_.end()) {
    ++stats_.memory_hits;
    return it->second;
  }
  const std::string prefix = "fp4jit_" + request.op + "_" + hash.substr(0, 16);
  const auto start = std::chrono::steady_clock::now();
  const char* source = "cache";
  if (std::optional<CacheEntry> hit = object_cache_->find(hash); hit && !hit->binary.empty()) {
    jit_->load(hit->binary, hash);
    ++stats_.cache_hits;
  } else {
    if (no_compile_)
      fail(ErrorKind::compile,
           "FP4JIT_NO_COMPILE is set and host kernel {} is not in the cache{} (key: {}; target {})",
           hash, cache_ ? " " + cache_->path() : std::string(" (no cache)"), request.key_text,
           target().name);
    CacheEntry entry;
    entry.key_hash = hash;
    entry.key_text = request.key_text;
    entry.target = target().name;
    entry.compiler = target().compiler;
    entry.options = jit_->options();
    entry.templates_hash = generator_hash();
    entry.symbol = prefix;
    object_cache_->expect(entry);
    CompiledKernel k;
    try {
      k = jit_->compile(
          hash, [&](llvm::Module& m) { request.emit(m, prefix); }, object_cache_.get());
    } catch (Error& e) {
      throw Error(e.kind(), fmt::format("{} (kernel {}: {})", e.what(), hash, request.key_text))
          .with_log(e.log());
    }
    jit_->load(k.object, hash);
    ++stats_.compiled;
    source = "compiled";
    // the object is already stored (ObjectCache); record the IR and the compile time with it
    if (cache_ && cache_->enabled()) {
      entry.source = std::move(k.ir);
      entry.compile_ms = k.compile_ms;
      entry.binary = std::move(k.object);
      cache_->put(entry);
    }
  }
  std::vector<void*> entries;
  for (const std::string& e : request.entries) entries.push_back(jit_->lookup(prefix + "_" + e));
  if (print_)
    log_message(LogLevel::info,
                fmt::format("host kernel {} ({}, {:.1f} ms): {}", hash.substr(0, 16), source,
                            std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - start)
                                .count(),
                            request.key_text));
  loaded_[hash] = entries;
  return entries;
}

}  // namespace fp4jit::host
