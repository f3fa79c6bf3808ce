// The kernel cache: compiled binaries (CUDA cubins, host object code) in one SQLite database,
// keyed by the SHA-256 of everything that decides the binary. Safe with many processes at once
// (WAL, busy timeout). A cache problem never fails a caller: a corrupt or foreign database is
// moved aside with a warning and rebuilt; a database that cannot be opened at all disables the
// cache (every lookup misses, every store is dropped) with a warning.
//
// It also keeps tuning results (cache/tuning.hpp). Read-only bundles (cache/bundle.hpp) named by
// FP4JIT_BUNDLES (colon-separated) are layered under the user database once the device is known
// (use_bundles): lookups that miss the user database consult them in order.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/tuning.hpp"

namespace fp4jit {

struct CacheEntry {
  std::string key_hash;        // lower-case hex SHA-256 of key_text + compiler + target + options
                               // + templates_hash (see make_key_hash)
  std::string key_text;        // the kernel key: op, problem, recipe fields, config, target
  std::string target;          // "sm_90a", "sm_100a", "host:<cpu>:<features hash>"
  std::string compiler;        // "nvrtc 13.0", "llvm 14.0.6"
  std::string options;         // compile options, one string
  std::string templates_hash;  // hash of the embedded template sources (or IR generator version)
  std::string source;          // the generated stub (CUDA) or IR (host), kept for inspection
  std::string symbol;          // the kernel's lowered name / entry symbol
  std::vector<std::uint8_t> binary;
  std::int64_t binary_size = 0;  // filled by get() and list() (list() leaves binary empty)
  double compile_ms = 0.0;
  std::int64_t created_unix = 0;  // set by put()
};

// The one function that builds a cache key; every backend uses it.
std::string make_key_hash(const std::string& key_text, const std::string& target,
                          const std::string& compiler, const std::string& options,
                          const std::string& templates_hash);

class KernelCache {
 public:
  // $FP4JIT_CACHE, else $XDG_CACHE_HOME/fp4jit/cache.db, else $HOME/.cache/fp4jit/cache.db.
  static std::string default_path();

  // Opens (creating folders and schema as needed). Never throws for cache problems.
  explicit KernelCache(std::string path = default_path());
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  bool enabled() const;
  const std::string& path() const;

  std::optional<CacheEntry> get(const std::string& key_hash);
  bool put(const CacheEntry& entry);  // false (with a warning) if it could not be stored
  std::vector<CacheEntry> list();     // every entry without its binary, newest first
  std::int64_t clear();               // removes every entry and tuning; returns how many entries

  // Tuning results. put_tuning replaces the row of the same key (with all its candidates) in one
  // transaction; false (with a warning) if it could not be stored.
  bool put_tuning(const TuningRecord& record);
  std::optional<TuningRecord> get_tuning(const TuningKey& key);  // user database, then bundles
  // The user database's tunings (of one device model, or all when empty), oldest first.
  std::vector<TuningRecord> list_tunings(const std::string& gpu_model = {});

  // Layers the bundles at `paths` (default: $FP4JIT_BUNDLES) read-only under the user database.
  // Each is verified (every binary's SHA-256 and the content digest) and must be for `device`'s
  // model, arch and compiler; one that is not is refused with a warning naming the mismatch and
  // never consulted. Returns how many were layered.
  int use_bundles(const DeviceIdentity& device);
  int use_bundles(const DeviceIdentity& device, const std::vector<std::string>& paths);
  std::vector<std::string> bundle_paths() const;       // the layered bundles, in lookup order
  static std::vector<std::string> bundles_from_env();  // $FP4JIT_BUNDLES split at ':'

 private:
  friend struct CacheAccess;  // bundle export / import (cache/bundle.cpp)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fp4jit
