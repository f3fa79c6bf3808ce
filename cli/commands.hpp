// The fp4jit command groups. Each add_*_command registers its subcommand(s) on the top-level app;
// the callbacks throw fp4jit::Error on failure and main() reports it.
#pragma once
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/format.hpp"

namespace fp4jit::cli {

void add_recipe_commands(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_dequantize_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_dge_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_cache_commands(CLI::App& app);
void add_bench_commands(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_bundle_commands(CLI::App& app);

// --cache PATH: the kernel cache database a command uses (empty: $FP4JIT_CACHE or the user cache).
CLI::Option* add_cache_option(CLI::App* cmd, std::string* path);
// An option validator that accepts exactly `names` and says so otherwise.
CLI::Validator one_of(const std::string& what, const std::vector<std::string>& names);
// "float32|float16|bfloat16" names of the host dtypes, and the parse of one.
std::vector<std::string> dtype_option_names();
DType parse_dtype(const std::string& text);

// "1.5 MiB", "512 B".
std::string bytes_text(std::int64_t bytes);
// "[2, 3]".
std::string shape_text(const std::vector<std::int64_t>& shape);

// Wall-clock milliseconds since construction.
class Stopwatch {
 public:
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace fp4jit::cli
