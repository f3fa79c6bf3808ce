// What the fuzz targets share. Each target defines libFuzzer's entry point,
//   extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// and fp4jit_fuzz_seeds(), the valid inputs it starts from. A target checks a property of
// fp4jit's code on every input (no crash, only fp4jit::Error for bad input, a round trip, two
// backends writing the same bytes) and aborts with a message when it does not hold.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with clang and -fsanitize=fuzzer for
// coverage-guided runs (scripts/fuzz.sh), or with replay_main.cpp, which runs the seeds and a
// fixed number of deterministic mutations of them (the CI tests).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
std::vector<std::vector<std::uint8_t>> fp4jit_fuzz_seeds();

namespace fp4jit::fuzz {

// Prints "fuzz check failed: <what>" with the place and aborts (a crash to libFuzzer).
[[noreturn]] void failure(const char* file, int line, const std::string& what);

#define FUZZ_CHECK(cond, what)                                        \
  do {                                                                \
    if (!(cond)) ::fp4jit::fuzz::failure(__FILE__, __LINE__, (what)); \
  } while (0)

// Runs f(); an fp4jit::Error of one of the `allowed` kinds is bad input reported as it should be
// (returns false); any other exception is a failure. Returns true when f() returned.
template <class F>
bool accepts(F&& f, std::initializer_list<ErrorKind> allowed, const char* what) {
  try {
    f();
    return true;
  } catch (const Error& e) {
    for (ErrorKind k : allowed)
      if (e.kind() == k) return false;
    failure(__FILE__, __LINE__,
            std::string(what) + ": unexpected error kind " +
                std::string(error_kind_name(e.kind())) + ": " + e.what());
  } catch (const std::exception& e) {
    failure(__FILE__, __LINE__,
            std::string(what) + ": exception other than fp4jit::Error: " + e.what());
  }
}

// Takes typed values off the front of a fuzz input; past its end every value is 0.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(byte()) << (8 * i);
    return v;
  }
  // A value in [0, n) for n > 0.
  std::size_t below(std::size_t n) { return (n <= 256 ? byte() : u32()) % n; }
  bool flag() { return (byte() & 1u) != 0; }
  template <class T, std::size_t N>
  const T& pick(const T (&options)[N]) {
    return options[below(N)];
  }
  // The rest of the input.
  std::string_view rest_text() {
    const std::string_view s(reinterpret_cast<const char*>(data_) + pos_, size_ - pos_);
    pos_ = size_;
    return s;
  }
  std::size_t left() const { return size_ - pos_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// Bytes that end where an inaccessible page begins, so a read or write one byte past them faults
// with or without a sanitizer. Filled with `fill`.
class GuardedBytes {
 public:
  explicit GuardedBytes(std::size_t size, std::uint8_t fill = 0xA5);
  ~GuardedBytes();
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  std::uint8_t* data() { return data_; }
  std::size_t size() const { return size_; }

 private:
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// A folder of this process's own, removed at exit.
const std::filesystem::path& scratch_dir();

std::vector<std::uint8_t> to_bytes(std::string_view text);
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size);

}  // namespace fp4jit::fuzz
