#include "runtime/cuda/kernel_binary.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.hpp"
#include "core/log.hpp"
#include "runtime/cuda/embedded.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "runtime/single_flight.hpp"

namespace fp4jit::cuda {

namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

void write_file(const std::filesystem::path& p, const void* data, std::size_t size) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) warn("FP4JIT_DUMP: could not write {}", p.string());
}

void dump(const codegen::KernelSource& k, const KernelBinary& b, const std::string& ptx,
          const std::string& log) {
  const char* dir = std::getenv("FP4JIT_DUMP");
  if (dir == nullptr || *dir == '\0') return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path stem =
      std::filesystem::path(dir) / (k.op + "-" + b.key_hash.substr(0, 16));
  const std::string src = k.source();
  write_file(stem.string() + ".cu", src.data(), src.size());
  write_file(stem.string() + ".cubin", b.cubin.data(), b.cubin.size());
  if (!ptx.empty()) write_file(stem.string() + ".ptx", ptx.data(), ptx.size());
  const std::string info =
      "key: " + k.key_text + "\nkey_hash: " + b.key_hash + "\nsymbol: " + b.symbol +
      "\noptions: " + codegen::join_options(codegen::compile_options(k.target)) +
      "\nfrom_cache: " + (b.from_cache ? "yes" : "no") + "\nlog:\n" + log + "\n";
  write_file(stem.string() + ".txt", info.data(), info.size());
}

std::optional<KernelBinary> cached_binary(const codegen::KernelSource& kernel,
                                          const std::string& hash, KernelCache* cache) {
  if (cache == nullptr || !cache->enabled()) return std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  std::optional<CacheEntry> hit = cache->get(hash);
  if (!hit || hit->binary.empty() || hit->symbol.empty()) return std::nullopt;
  KernelBinary b;
  b.key_hash = hash;
  b.cubin = std::move(hit->binary);
  b.symbol = std::move(hit->symbol);
  b.from_cache = true;
  b.lookup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  dump(kernel, b, "", "");
  return b;
}

}  // namespace

std::string kernel_key_hash(const codegen::KernelSource& kernel) {
  return make_key_hash(kernel.key_text, kernel.target, Nvrtc::get().compiler(),
                       codegen::join_options(codegen::compile_options(kernel.target)),
                       templates_hash());
}

KernelBinary compile_kernel(const codegen::KernelSource& kernel) {
  const bool dumping = std::getenv("FP4JIT_DUMP") != nullptr;
  CompiledKernel c = Nvrtc::get().compile(kernel, dumping);
  KernelBinary b;
  b.key_hash = kernel_key_hash(kernel);
  b.cubin = std::move(c.cubin);
  b.symbol = std::move(c.lowered_name);
  b.compile_ms = c.compile_ms;
  dump(kernel, b, c.ptx, c.log);
  return b;
}

bool store_kernel(KernelCache& cache, const codegen::KernelSource& kernel,
                  const KernelBinary& binary) {
  CacheEntry e;
  e.key_hash = binary.key_hash;
  e.key_text = kernel.key_text;
  e.target = kernel.target;
  e.compiler = Nvrtc::get().compiler();
  e.options = codegen::join_options(codegen::compile_options(kernel.target));
  e.templates_hash = templates_hash();
  e.source = kernel.source();
  e.symbol = binary.symbol;
  e.binary = binary.cubin;
  e.compile_ms = binary.compile_ms;
  return cache.put(e);
}

KernelBinary kernel_binary(const codegen::KernelSource& kernel, KernelCache* cache) {
  const std::string hash = kernel_key_hash(kernel);
  if (std::optional<KernelBinary> hit = cached_binary(kernel, hash, cache)) return std::move(*hit);
  if (env_on("FP4JIT_NO_COMPILE"))
    fail(ErrorKind::cache, "FP4JIT_NO_COMPILE is set and kernel {} ({}) is not in the cache{}: {}",
         kernel.op, hash.substr(0, 16),
         cache != nullptr ? " " + cache->path() : std::string(" (no cache)"), kernel.key_text);
  // Keyed by the cache too: a caller of another cache gets the kernel stored there as well.
  static SingleFlight<std::string, KernelBinary> in_flight;
  const std::string flight_key =
      hash + "@" + (cache != nullptr && cache->enabled() ? cache->path() : std::string());
  SingleFlight<std::string, KernelBinary>::Result r = in_flight.run(flight_key, [&] {
    // Stored by a compile that finished between the lookup above and this flight?
    if (std::optional<KernelBinary> hit = cached_binary(kernel, hash, cache))
      return std::move(*hit);
    KernelBinary b = compile_kernel(kernel);
    debug("compiled {} in {:.1f} ms: {}", kernel.op, b.compile_ms, kernel.key_text);
    if (cache != nullptr && cache->enabled()) store_kernel(*cache, kernel, b);
    return b;
  });
  r.value.shared = r.shared;
  return std::move(r.value);
}

}  // namespace fp4jit::cuda
