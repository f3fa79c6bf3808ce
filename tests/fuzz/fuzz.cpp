#include "tests/fuzz/fuzz.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <system_error>

namespace fp4jit::fuzz {

void failure(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "fuzz check failed at %s:%d: %s\n", file, line, what.c_str());
  std::fflush(stderr);
  std::abort();
}

GuardedBytes::GuardedBytes(std::size_t size, std::uint8_t fill) : size_(size) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t pages = (size + page - 1) / page;
  map_size_ = (pages + 1) * page;
  map_ = mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<std::uint8_t*>(map_);
  if (mprotect(base + pages * page, page, PROT_NONE) != 0) {
    munmap(map_, map_size_);
    throw std::bad_alloc();
  }
  data_ = base + pages * page - size;
  for (std::size_t i = 0; i < size; ++i) data_[i] = fill;
}

GuardedBytes::~GuardedBytes() {
  munmap(map_, map_size_);
}

namespace {
struct Scratch {
  std::filesystem::path path;
  Scratch() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fp4jit-fuzz-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) failure(__FILE__, __LINE__, "mkdtemp failed");
    path = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
}  // namespace

const std::filesystem::path& scratch_dir() {
  static const Scratch scratch;
  return scratch.path;
}

std::vector<std::uint8_t> to_bytes(std::string_view text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) failure(__FILE__, __LINE__, "cannot read " + path.string());
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) failure(__FILE__, __LINE__, "cannot write " + path.string());
}

}  // namespace fp4jit::fuzz
