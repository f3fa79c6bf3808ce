// fp4jit cache list|show|clear [--cache PATH]
#include <ctime>
#include <memory>

#include "cache/cache.hpp"
#include "cli/commands.hpp"

namespace fp4jit::cli {

namespace {

struct CacheOptions {
  std::string cache, hash, gpu;
};

std::string path_of(const CacheOptions& o) {
  return o.cache.empty() ? KernelCache::default_path() : o.cache;
}

// The op name from a kernel key ("op=quantize;...").
std::string op_of(const std::string& key_text) {
  const auto start = key_text.rfind("op=", 0) == 0 ? 3 : std::string::npos;
  if (start == std::string::npos) return "?";
  return key_text.substr(start, key_text.find(';') - start);
}

std::string date_of(std::int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

std::unique_ptr<KernelCache> open_or_fail(const std::string& path) {
  auto cache = std::make_unique<KernelCache>(path);
  if (!cache->enabled())
    fail(ErrorKind::cache, "kernel cache {} cannot be used (see the warning above)", path);
  return cache;
}

void run_list(const CacheOptions& o) {
  const auto cache = open_or_fail(path_of(o));
  const auto entries = cache->list();
  std::int64_t bytes = 0;
  for (const auto& e : entries) {
    bytes += e.binary_size;
    fmt::print("{}  {:16} {:28} {:12} {:>9}  {:>8.1f} ms  {}\n", e.key_hash.substr(0, 16),
               op_of(e.key_text), e.target.size() > 28 ? e.target.substr(0, 28) : e.target,
               e.compiler, bytes_text(e.binary_size), e.compile_ms, date_of(e.created_unix));
  }
  fmt::print("{} entries, {} of binaries, in {}\n", entries.size(), bytes_text(bytes),
             cache->path());
}

void run_show(const CacheOptions& o) {
  const auto cache = open_or_fail(path_of(o));
  const CacheEntry* match = nullptr;
  const auto entries = cache->list();
  for (const auto& e : entries) {
    if (e.key_hash.rfind(o.hash, 0) != 0) continue;
    if (match != nullptr)
      fail(ErrorKind::invalid_argument, "cache show: '{}' matches several entries", o.hash);
    match = &e;
  }
  if (match == nullptr)
    fail(ErrorKind::invalid_argument, "cache show: no entry whose hash starts with '{}'", o.hash);
  const auto full = cache->get(match->key_hash);
  if (!full) fail(ErrorKind::cache, "cache show: entry {} could not be read", match->key_hash);
  fmt::print(
      "hash       {}\nkey        {}\ntarget     {}\ncompiler   {}\noptions    {}\ntemplates  {}\n"
      "symbol     {}\nbinary     {}\ncompiled   {:.1f} ms, {}\n--- source ---\n{}\n",
      full->key_hash, full->key_text, full->target, full->compiler, full->options,
      full->templates_hash, full->symbol, bytes_text(full->binary_size), full->compile_ms,
      date_of(full->created_unix), full->source);
}

// One line per tuning: device model | problem | winner, its time and the heuristic's, candidates.
void run_tunings(const CacheOptions& o) {
  const auto cache = open_or_fail(path_of(o));
  const auto tunings = cache->list_tunings(o.gpu);
  for (const TuningRecord& t : tunings) {
    int ok = 0, pruned = 0;
    for (const CandidateResult& c : t.candidates) {
      ok += c.status == CandidateStatus::ok ? 1 : 0;
      pruned += c.status == CandidateStatus::pruned ? 1 : 0;
    }
    fmt::print(
        "{} | {} | {} | {} | {:.4f} ms | heuristic {} {:.4f} ms | {} of {} measured candidates "
        "correct, {} pruned | {}\n",
        t.key.device.gpu_model, t.key.problem, t.key.recipe.substr(0, t.key.recipe.find(':')),
        t.winner, t.winner_ms, t.heuristic, t.heuristic_ms, ok,
        static_cast<int>(t.candidates.size()) - pruned, pruned, date_of(t.created_unix));
  }
  fmt::print("{} tunings in {}\n", tunings.size(), cache->path());
}

void run_clear(const CacheOptions& o) {
  const auto cache = open_or_fail(path_of(o));
  fmt::print("removed {} entries from {}\n", cache->clear(), cache->path());
}

}  // namespace

void add_cache_commands(CLI::App& app) {
  auto o = std::make_shared<CacheOptions>();
  CLI::App* cache = app.add_subcommand("cache", "Inspect or clear the kernel cache");
  cache->require_subcommand(1);
  cache->fallthrough();  // --cache may follow the subcommand
  add_cache_option(cache, &o->cache);
  cache
      ->add_subcommand(
          "list",
          "One line per cached kernel: hash, op, target, compiler, size, compile time, date")
      ->callback([o] { run_list(*o); });
  CLI::App* show =
      cache->add_subcommand("show", "Everything about one entry, its generated source included");
  show->add_option("hash", o->hash, "The entry's hash or a unique prefix of it")->required();
  show->callback([o] { run_show(*o); });
  CLI::App* tunings = cache->add_subcommand(
      "tunings", "One line per tuning result: device model, problem, recipe, winner, times");
  tunings->add_option("--gpu", o->gpu, "Only this device model");
  tunings->callback([o] { run_tunings(*o); });
  cache->add_subcommand("clear", "Remove every entry and tuning")->callback([o] { run_clear(*o); });
}

}  // namespace fp4jit::cli
