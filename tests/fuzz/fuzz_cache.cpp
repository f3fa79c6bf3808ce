// Damaged kernel caches and bundles. A cache database with any bytes changed opens without an
// exception and serves every call: a binary it returns is the one stored for that key (a damaged
// row is a miss, never wrong bytes), a new entry can be stored and read back while the cache is
// enabled, and listing or clearing does not throw. A damaged bundle is verified without an
// exception; one that passes serves, as a layer, exactly its stored binaries or misses, and a
// failing one is refused by import with Error(corrupt) or Error(invalid_argument).
//
// Input: byte 0 picks the file (even: the cache, odd: the bundle), byte 1 the number of patches,
// each a 32-bit offset, a length 0..15 (0: truncate the file there) and that many bytes.
#include <cstring>
#include <optional>

#include "cache/bundle.hpp"
#include "cache/cache.hpp"
#include "core/log.hpp"
#include "tests/fuzz/fuzz.hpp"

namespace fs = std::filesystem;
using fp4jit::ErrorKind;

namespace {

fp4jit::DeviceIdentity device() {
  return {"Fuzz GPU", "sm_90a", 132, "13.0", "nvrtc 13.0"};
}

fp4jit::CacheEntry entry(int i) {
  fp4jit::CacheEntry e;
  e.key_text = "quantize kernel " + std::to_string(i);
  e.target = "sm_90a";
  e.compiler = "nvrtc 13.0";
  e.options = "-O3";
  e.templates_hash = "t";
  e.key_hash = fp4jit::make_key_hash(e.key_text, e.target, e.compiler, e.options, e.templates_hash);
  e.source = "extern \"C\" __global__ void k" + std::to_string(i) + "() {}";
  e.symbol = "k" + std::to_string(i);
  for (int j = 0; j < 300 + 100 * i; ++j) e.binary.push_back(static_cast<std::uint8_t>(j * i + 1));
  return e;
}

struct Files {
  std::vector<std::uint8_t> cache, bundle;
  std::vector<fp4jit::CacheEntry> entries;
};

const Files& files() {
  static const Files f = [] {
    fp4jit::set_log_sink([](fp4jit::LogLevel, std::string_view) {});  // damaged files warn
    Files out;
    const fs::path db = fp4jit::fuzz::scratch_dir() / "seed-cache.db";
    const fs::path bundle = fp4jit::fuzz::scratch_dir() / "seed.bundle";
    {
      fp4jit::KernelCache cache(db.string());
      for (int i = 0; i < 3; ++i) {
        out.entries.push_back(entry(i));
        cache.put(out.entries.back());
      }
      fp4jit::TuningRecord t;
      t.key = {device(), "quantize", "quantize x rows=8192 cols=4096 bf16", "mxfp4"};
      t.winner = "rows:threads=256";
      t.winner_ms = 0.05;
      t.heuristic = t.winner;
      t.heuristic_ms = 0.05;
      t.unit = "GB/s";
      t.candidates.push_back(
          {t.winner, true, fp4jit::CandidateStatus::ok, "", 0.05, 0.01, 20, 3.0});
      cache.put_tuning(t);
      fp4jit::export_bundle(cache, device().gpu_model, bundle.string(), "0.1.0");
    }
    out.cache = fp4jit::fuzz::read_file(db);  // checkpointed and closed: one file, no WAL
    out.bundle = fp4jit::fuzz::read_file(bundle);
    return out;
  }();
  return f;
}

// A binary the cache returns must be the one stored under its key.
void check_served(std::optional<fp4jit::CacheEntry> got, const fp4jit::CacheEntry& want,
                  const char* where) {
  if (got)
    FUZZ_CHECK(got->binary == want.binary && got->key_text == want.key_text,
               std::string(where) + " served other bytes for " + want.key_text);
}

void remove_db(const fs::path& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix);
}

}  // namespace

std::vector<std::vector<std::uint8_t>> fp4jit_fuzz_seeds() {
  files();
  // unchanged files, one byte of each changed in the middle, and each cut short
  return {{0, 0},
          {1, 0},
          {0, 1, 0, 16, 0, 0, 1, 0x55},
          {1, 1, 0, 16, 0, 0, 1, 0x55},
          {0, 1, 0, 32, 0, 0, 0},
          {1, 1, 0, 32, 0, 0, 0}};
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Files& f = files();
  fp4jit::fuzz::Input in(data, size);
  const bool bundle = (in.byte() & 1) != 0;
  std::vector<std::uint8_t> bytes = bundle ? f.bundle : f.cache;
  for (int n = in.byte() % 8; n > 0 && !bytes.empty(); --n) {
    const std::size_t at = in.u32() % bytes.size();
    const int len = in.byte() % 16;
    if (len == 0) {
      bytes.resize(at);
      continue;
    }
    for (int i = 0; i < len && at + i < bytes.size(); ++i) bytes[at + i] = in.byte();
  }
  const fs::path db = fp4jit::fuzz::scratch_dir() / "cache.db";
  const fs::path bundle_path = fp4jit::fuzz::scratch_dir() / "input.bundle";
  remove_db(db);
  if (bundle) {
    fp4jit::fuzz::write_file(bundle_path, bytes.data(), bytes.size());
  } else {
    fp4jit::fuzz::write_file(db, bytes.data(), bytes.size());
  }

  fp4jit::fuzz::accepts(
      [&] {
        fp4jit::KernelCache cache(db.string());
        if (bundle) {
          fp4jit::BundleCheck check = fp4jit::verify_bundle(bundle_path.string());
          FUZZ_CHECK(check.ok == check.problems.empty(),
                     "a bundle check's verdict and problems disagree");
          const int layered = cache.use_bundles(device(), {bundle_path.string()});
          FUZZ_CHECK(layered <= 1 && (layered == 0 || check.ok), "a failing bundle was layered");
          for (const fp4jit::CacheEntry& e : f.entries)
            check_served(cache.get(e.key_hash), e, "a bundle");
          if (!check.ok) {
            fp4jit::KernelCache fresh((fp4jit::fuzz::scratch_dir() / "import.db").string());
            const bool imported = fp4jit::fuzz::accepts(
                [&] {
                  const fp4jit::DeviceIdentity d = device();
                  fp4jit::import_bundle(fresh, bundle_path.string(), &d);
                },
                {ErrorKind::corrupt, ErrorKind::invalid_argument}, "import_bundle");
            FUZZ_CHECK(!imported, "a bundle that failed verification was imported");
            remove_db(fp4jit::fuzz::scratch_dir() / "import.db");
          }
          return;
        }
        for (const fp4jit::CacheEntry& e : f.entries)
          check_served(cache.get(e.key_hash), e, "the cache");
        cache.list();
        cache.list_tunings();
        const fp4jit::CacheEntry extra = entry(7);
        const bool stored = cache.put(extra);
        if (stored) {
          const std::optional<fp4jit::CacheEntry> back = cache.get(extra.key_hash);
          FUZZ_CHECK(back.has_value(), "an entry stored in the cache could not be read back");
          check_served(back, extra, "the cache");
        }
        cache.clear();
      },
      {}, "the kernel cache");
  return 0;
}
