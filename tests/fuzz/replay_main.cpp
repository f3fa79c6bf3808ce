// main() of a fuzz target built without libFuzzer: runs the target's seeds, the files named on the
// command line (a folder: every file in it), then --runs deterministic mutations of them
// (--seed picks the sequence). A failing input is written to crash-<target>.bin (in
// $FP4JIT_FUZZ_ARTIFACTS, else the working folder) before the process dies, so that
// `fp4jit_fuzz_<target> crash-<target>.bin` replays it.
//
//   fp4jit_fuzz_npy [--runs N] [--seed S] [--max-len L] [--write-seeds DIR] [FILE|DIR ...]
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;

// The input being run, for the signal handler.
const std::uint8_t* g_data = nullptr;
std::size_t g_size = 0;
char g_artifact[4096] = "crash.bin";

void on_fatal(int sig) {
  const int fd = open(g_artifact, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    std::size_t done = 0;
    while (g_data != nullptr && done < g_size) {
      const ssize_t n = write(fd, g_data + done, g_size - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    close(fd);
    const char msg[] = "fuzz: the failing input is in ";
    [[maybe_unused]] ssize_t w = write(2, msg, sizeof(msg) - 1);
    w = write(2, g_artifact, strlen(g_artifact));
    w = write(2, "\n", 1);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void run(const Bytes& input) {
  g_data = input.data();
  g_size = input.size();
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_data = nullptr;
}

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

// Numbers that break size arithmetic, written where a run of digits stood.
const char* const kNumbers[] = {"0",
                                "1",
                                "-1",
                                "2",
                                "16",
                                "32",
                                "65535",
                                "65536",
                                "2147483647",
                                "2147483648",
                                "4294967296",
                                "9223372036854775807",
                                "9223372036854775808",
                                "-9223372036854775808",
                                "1e308",
                                "nan"};

void mutate(Bytes& b, const std::vector<Bytes>& pool, Rng& rng, std::size_t max_len) {
  const std::uint8_t kBytes[] = {0,   1,   0x7F, 0x80, 0xFF, '0', '9',  ',', ':', '=', '.', '{',
                                 '}', '[', ']',  '(',  ')',  '"', '\'', ' ', '-', 'x', '\n'};
  switch (rng.below(8)) {
    case 0:  // flip a bit
      if (!b.empty()) b[rng.below(b.size())] ^= static_cast<std::uint8_t>(1u << rng.below(8));
      break;
    case 1:  // an interesting or random byte
      if (!b.empty())
        b[rng.below(b.size())] = rng.below(2) ? kBytes[rng.below(sizeof(kBytes))]
                                              : static_cast<std::uint8_t>(rng.next());
      break;
    case 2: {  // insert bytes
      const std::size_t at = rng.below(b.size() + 1), n = 1 + rng.below(8);
      Bytes ins(n);
      for (auto& c : ins)
        c = rng.below(2) ? kBytes[rng.below(sizeof(kBytes))]
                         : static_cast<std::uint8_t>(rng.next());
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
      break;
    }
    case 3: {  // erase a range
      if (b.empty()) break;
      const std::size_t at = rng.below(b.size());
      const std::size_t n = std::min(b.size() - at, 1 + rng.below(16));
      b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
              b.begin() + static_cast<std::ptrdiff_t>(at + n));
      break;
    }
    case 4: {  // copy a range elsewhere
      if (b.empty()) break;
      const std::size_t from = rng.below(b.size());
      const std::size_t n = std::min(b.size() - from, 1 + rng.below(32));
      const Bytes chunk(b.begin() + static_cast<std::ptrdiff_t>(from),
                        b.begin() + static_cast<std::ptrdiff_t>(from + n));
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng.below(b.size() + 1)), chunk.begin(),
               chunk.end());
      break;
    }
    case 5: {  // splice with another input
      const Bytes& other = pool[rng.below(pool.size())];
      const std::size_t keep = rng.below(b.size() + 1), from = rng.below(other.size() + 1);
      b.resize(keep);
      b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
      break;
    }
    case 6:  // overwrite a 32-bit little-endian word (binary sizes, offsets)
    default: {
      if (b.size() < 4) break;
      const std::size_t at = rng.below(b.size() - 3);
      const std::uint32_t words[] = {0u,
                                     1u,
                                     0x7FFFFFFFu,
                                     0x80000000u,
                                     0xFFFFFFFFu,
                                     0x10000u,
                                     static_cast<std::uint32_t>(rng.next())};
      const std::uint32_t w = words[rng.below(7)];
      for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(w >> (8 * i));
      break;
    }
    case 7: {  // replace a run of digits by a number that breaks arithmetic
      std::vector<std::size_t> starts;
      for (std::size_t i = 0; i < b.size(); ++i)
        if (b[i] >= '0' && b[i] <= '9' && (i == 0 || b[i - 1] < '0' || b[i - 1] > '9'))
          starts.push_back(i);
      if (starts.empty()) break;
      const std::size_t at = starts[rng.below(starts.size())];
      std::size_t end = at;
      while (end < b.size() && b[end] >= '0' && b[end] <= '9') ++end;
      const char* num = kNumbers[rng.below(sizeof(kNumbers) / sizeof(kNumbers[0]))];
      b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
              b.begin() + static_cast<std::ptrdiff_t>(end));
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), num, num + strlen(num));
      break;
    }
  }
  if (b.size() > max_len) b.resize(max_len);
}

void add_path(const std::filesystem::path& p, std::vector<Bytes>& pool) {
  if (std::filesystem::is_directory(p)) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(p))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());  // a fixed order: runs are repeatable
    for (const auto& f : files) pool.push_back(fp4jit::fuzz::read_file(f));
  } else {
    pool.push_back(fp4jit::fuzz::read_file(p));
  }
}

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--runs N] [--seed S] [--max-len L] [--write-seeds DIR] [FILE|DIR ...]\n",
               argv0);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  long long runs = 0;
  std::uint64_t seed = 1;
  std::size_t max_len = 1 << 16;
  std::string write_seeds;
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (a == "--runs")
      runs = std::stoll(value());
    else if (a == "--seed")
      seed = std::stoull(value());
    else if (a == "--max-len")
      max_len = std::stoull(value());
    else if (a == "--write-seeds")
      write_seeds = value();
    else if (!a.empty() && a[0] == '-')
      usage(argv[0]);
    else
      paths.emplace_back(a);
  }
  std::string target = std::filesystem::path(argv[0]).filename().string();
  if (target.rfind("fp4jit_fuzz_", 0) == 0) target = target.substr(12);
  const char* dir = std::getenv("FP4JIT_FUZZ_ARTIFACTS");
  const std::string artifact =
      (std::filesystem::path(dir != nullptr ? dir : ".") / ("crash-" + target + ".bin")).string();
  std::snprintf(g_artifact, sizeof(g_artifact), "%s", artifact.c_str());
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) signal(sig, on_fatal);

  const std::vector<Bytes> seeds = fp4jit_fuzz_seeds();
  if (!write_seeds.empty()) {
    std::filesystem::create_directories(write_seeds);
    for (std::size_t i = 0; i < seeds.size(); ++i)
      fp4jit::fuzz::write_file(std::filesystem::path(write_seeds) / ("seed-" + std::to_string(i)),
                               seeds[i].data(), seeds[i].size());
    std::printf("fuzz %s: %zu seeds written to %s\n", target.c_str(), seeds.size(),
                write_seeds.c_str());
    return 0;
  }
  std::vector<Bytes> pool = seeds;
  for (const auto& p : paths) add_path(p, pool);
  const auto start = std::chrono::steady_clock::now();
  for (const Bytes& b : pool) run(b);
  Rng rng{seed};
  if (!pool.empty()) {
    for (long long r = 0; r < runs; ++r) {
      Bytes b = pool[rng.below(pool.size())];
      const std::size_t n = 1 + rng.below(4);
      for (std::size_t k = 0; k < n; ++k) mutate(b, pool, rng, max_len);
      run(b);
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz %s: %zu inputs and %lld mutations (seed %llu) in %.1f s, every check held\n",
              target.c_str(), pool.size(), runs, static_cast<unsigned long long>(seed), s);
  return 0;
}
