// fp4jit compile --arch sm_90a|sm_100a|host --recipe SPEC [--dtype D ...] [--gemm MxNxK ...]
// [--jobs N]
//                [--cache PATH]
// Compiles every kernel a recipe needs ahead of time into the kernel cache; CUDA targets need no
// GPU (NVRTC only). --gemm adds the three GEMMs of a linear layer of that fprop shape (tokens x
// out x in), or with an op prefix (dgrad:MxNxK) one GEMM, with output types --dtype (sm_100a
// GEMMs: compiled, not yet run on hardware).
#include <memory>

#include "cache/cache.hpp"
#include "cli/commands.hpp"
#include "core/recipe.hpp"

#if defined(FP4JIT_HAVE_CUDA)
#include "runtime/compile.hpp"
#endif
#if defined(FP4JIT_HAVE_LLVM)
#include "runtime/host/host_backend.hpp"
#endif

namespace fp4jit::cli {

namespace {

struct CompileOptions {
  std::string arch, recipe, cache;
  std::vector<std::string> dtypes{"bfloat16"};
  std::vector<std::string> gemms;
  int jobs = 0;
  bool quiet = false;
};

std::vector<DType> parse_dtypes(const std::vector<std::string>& names) {
  std::vector<DType> out;
  for (const auto& n : names) out.push_back(parse_dtype(n));
  return out;
}

void compile_cuda(const CompileOptions& o, const Recipe& recipe, KernelCache& cache) {
#if defined(FP4JIT_HAVE_CUDA)
  Stopwatch clock;
  const std::vector<DType> dtypes = parse_dtypes(o.dtypes);
  auto kernels = compile_recipe(recipe, o.arch, &cache, dtypes, o.jobs);
  std::vector<GemmRequest> layers;
  for (const auto& g : o.gemms) layers.push_back(parse_gemm_request(g));
  std::vector<std::string> skipped;
  if (!layers.empty()) {
    auto gemm_kernels = compile_gemms(recipe, o.arch, &cache, layers, dtypes, o.jobs, &skipped);
    kernels.insert(kernels.end(), gemm_kernels.begin(), gemm_kernels.end());
  }
  int compiled = 0;
  double compile_ms = 0.0;
  for (const auto& k : kernels) {
    compiled += k.from_cache ? 0 : 1;
    compile_ms += k.compile_ms;
    if (!o.quiet)
      fmt::print("  {:8}  {:16}  {}  {}\n",
                 k.from_cache ? "cached" : fmt::format("{:.0f} ms", k.compile_ms), k.op,
                 k.key_hash.substr(0, 16),
                 k.key_text.size() > 90 ? k.key_text.substr(0, 90) + "..." : k.key_text);
  }
  fmt::print(
      "fp4jit compile: {} kernels of recipe {} for {}: {} compiled ({:.1f} s of NVRTC), {} already "
      "cached; "
      "{:.1f} s wall; cache {}\n",
      kernels.size(), recipe.preset, o.arch, compiled, compile_ms / 1000.0,
      kernels.size() - compiled, clock.ms() / 1000.0, cache.path());
  for (const auto& why : skipped) fmt::print("  skipped: {}\n", why);
#else
  fail(ErrorKind::unsupported,
       "this fp4jit was built without CUDA (FP4JIT_WITH_CUDA=OFF): cannot compile for {}", o.arch);
#endif
}

void compile_host(const CompileOptions& o, const Recipe& recipe, const std::string& cache_path) {
#if defined(FP4JIT_HAVE_LLVM)
  Stopwatch clock;
  host::HostBackendOptions options;
  options.cache_path = cache_path;
  host::HostBackend backend(options);
  const std::vector<DType> dtypes = parse_dtypes(o.dtypes);
  const int compiled = backend.precompile(recipe, dtypes);  // host GEMM kernels serve every shape
  fmt::print(
      "fp4jit compile: recipe {} for the host ({}): {} kernels compiled, the rest already cached; "
      "{:.1f} s; cache {}\n",
      recipe.preset, backend.description(), compiled, clock.ms() / 1000.0, cache_path);
#else
  fail(ErrorKind::unsupported,
       "this fp4jit was built without the host backend (FP4JIT_WITH_LLVM=OFF)");
#endif
}

void run_compile(const CompileOptions& o) {
  const Recipe recipe = parse_recipe(o.recipe);
  const std::string path = o.cache.empty() ? KernelCache::default_path() : o.cache;
  if (o.arch == "host") return compile_host(o, recipe, path);
  KernelCache cache(path);
  if (!cache.enabled())
    fail(ErrorKind::cache, "kernel cache {} cannot be used (see the warning above)", path);
  compile_cuda(o, recipe, cache);
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compile",
      "Compile every kernel of a recipe ahead of time into the kernel cache (quantize, dequantize, "
      "OCC, DGE of every operand; with --gemm, the three GEMMs of a layer). CUDA targets need no "
      "GPU: NVRTC "
      "compiles them");
  cmd->add_option("--arch", o->arch,
                  "Target: sm_90a (Hopper), sm_100a (Blackwell) or host (this CPU)")
      ->required()
      ->check(one_of("arch", {"sm_90a", "sm_100a", "host"}));
  cmd->add_option("--recipe,-r", o->recipe, "Recipe text, e.g. nvfp4")->required();
  cmd->add_option("--dtype", o->dtypes, "Input dtypes to compile for (repeatable)")
      ->check(one_of("dtype", dtype_option_names()))
      ->capture_default_str();
  cmd->add_option(
      "--gemm", o->gemms,
      "Also compile the fprop, dgrad and wgrad GEMMs of a linear layer of this shape, tokens x out "
      "x in, "
      "or with an op: prefix (fprop:MxNxK) that one GEMM (repeatable; output types from --dtype)");
  cmd->add_option("--jobs,-j", o->jobs, "Parallel NVRTC compiles (0: one per core)")
      ->capture_default_str();
  add_cache_option(cmd, &o->cache);
  cmd->add_flag("--quiet,-q", o->quiet, "Print only the summary");
  cmd->callback([o] { run_compile(*o); });
}

}  // namespace fp4jit::cli
