// fp4jit: the command-line tool. Exit status: 0 success, 1 an fp4jit error (bad recipe, file,
// shape, ...), 2 a usage error (unknown option, missing argument, invalid option value).
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

#ifndef FP4JIT_VERSION
#define FP4JIT_VERSION "unknown"
#endif

namespace fp4jit::cli {

CLI::Validator one_of(const std::string& what, const std::vector<std::string>& names) {
  std::string valid;
  for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
  return CLI::Validator(
      [what, names, valid](std::string& value) -> std::string {
        for (const auto& n : names)
          if (value == n) return {};
        return fmt::format("unknown {} '{}' (valid: {})", what, value, valid);
      },
      "{" + valid + "}");
}

CLI::Option* add_cache_option(CLI::App* cmd, std::string* path) {
  return cmd->add_option(
      "--cache", *path,
      "Kernel cache database (default: $FP4JIT_CACHE, else $XDG_CACHE_HOME/fp4jit/cache.db)");
}

std::vector<std::string> dtype_option_names() {
  std::vector<std::string> out;
  for (const auto& entry : dtype_names()) out.emplace_back(entry.name);
  return out;
}

DType parse_dtype(const std::string& text) {
  return parse_named(dtype_names(), text, "dtype");
}

std::string bytes_text(std::int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
}

}  // namespace fp4jit::cli

namespace {

void report(const fp4jit::Error& e) {
  std::fprintf(stderr, "fp4jit: error: %s\n", e.what());
  if (!e.log().empty()) std::fprintf(stderr, "%s\n", e.log().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "fp4jit: quantize tensors to FP4 (E2M1) and related formats with the recipes of FP4 "
      "training (mxfp4, nvfp4, msfp4, tetrajet, ue5m3), with kernels generated for the GPU "
      "(CUDA, NVRTC) or the CPU (LLVM), or with the plain C++ reference.\n"
      "Tensors are NumPy .npy files (float32, float16, bfloat16).",
      "fp4jit");
  app.set_version_flag("--version", "fp4jit " FP4JIT_VERSION);
  app.require_subcommand(1);
  fp4jit::cli::add_recipe_commands(app);
  fp4jit::cli::add_quantize_command(app);
  fp4jit::cli::add_dequantize_command(app);
  fp4jit::cli::add_sample_command(app);
  fp4jit::cli::add_dge_command(app);
  fp4jit::cli::add_compile_command(app);
  fp4jit::cli::add_cache_commands(app);
  fp4jit::cli::add_bench_commands(app);
  fp4jit::cli::add_tune_command(app);
  fp4jit::cli::add_bundle_commands(app);
  app.footer(  // after the subcommands, which would otherwise inherit it

      "Examples:\n"
      "  fp4jit recipe list\n"
      "  fp4jit sample --shape 1024x4096 --dtype bfloat16 --out x.npy\n"
      "  fp4jit quantize --recipe nvfp4 --in x.npy --out x.q\n"
      "  fp4jit dequantize --in x.q --out y.npy\n"
      "  fp4jit compile --arch sm_90a --recipe nvfp4 --gemm 8192x4096x4096\n"
      "  fp4jit bench gemm --recipe nvfp4 --gemm 8192x4096x4096\n"
      "  fp4jit tune --recipe nvfp4 --model llama-7b --tokens 8192\n"
      "  fp4jit export --gpu 'NVIDIA H100 80GB HBM3' -o h100.fp4b\n"
      "  fp4jit cache list\n"
      "Run 'fp4jit COMMAND --help' for a command's options.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const fp4jit::Error& e) {
    report(e);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp4jit: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
