// fp4jit export --gpu MODEL -o FILE [--cache PATH]
// fp4jit import FILE [--cache PATH] [--backend auto|host|cuda]
// fp4jit verify FILE [--backend auto|host|cuda|none]
// Bundles (cache/bundle.hpp): the kernels and tunings of one device model in one file.
#include <ctime>
#include <memory>

#include "cache/bundle.hpp"
#include "cli/commands.hpp"
#include "runtime/backend.hpp"

#if defined(FP4JIT_HAVE_LLVM)
#include "runtime/host/host_backend.hpp"
#endif
#if defined(FP4JIT_HAVE_CUDA)
#include "runtime/cuda/cuda_backend.hpp"
#endif

#ifndef FP4JIT_VERSION
#define FP4JIT_VERSION "unknown"
#endif

namespace fp4jit::cli {

namespace {

struct BundleOptions {
  std::string gpu, out, file, cache, backend = "auto";
};

std::string cache_of(const BundleOptions& o) {
  return o.cache.empty() ? KernelCache::default_path() : o.cache;
}

// The identity this machine's backend stores tunings under (cache/tuning.hpp).
DeviceIdentity local_identity(const std::string& backend) {
  const bool cuda = backend == "cuda" || (backend == "auto" && cuda_available());
  if (cuda) {
#if defined(FP4JIT_HAVE_CUDA)
    EngineOptions eo;
    eo.backend = BackendKind::cuda;
    eo.use_cache = false;
    return cuda::CudaBackend(eo).identity();
#else
    fail(ErrorKind::unsupported, "fp4jit was built without the CUDA backend");
#endif
  }
#if defined(FP4JIT_HAVE_LLVM)
  return host::HostBackend(host::HostBackendOptions{}).identity();
#else
  fail(ErrorKind::unsupported, "fp4jit was built without the host backend");
#endif
}

void print_info(const BundleInfo& i) {
  fmt::print("  device    {}\n  arch      {}\n  SMs       {}\n  driver    {}\n  compiler  {}\n",
             i.device.gpu_model, i.device.arch, i.device.sm_count,
             i.device.driver.empty() ? "-" : i.device.driver, i.device.compiler);
  fmt::print("  contents  {} binaries, {} tunings\n  made by   fp4jit {}\n  digest    {}\n",
             i.binaries, i.tunings, i.fp4jit_version, i.content_sha256);
}

void run_export(const BundleOptions& o) {
  auto cache = std::make_unique<KernelCache>(cache_of(o));
  if (!cache->enabled())
    fail(ErrorKind::cache, "export: the kernel cache {} cannot be used (see the warning above)",
         cache->path());
  const BundleInfo info = export_bundle(*cache, o.gpu, o.out, FP4JIT_VERSION);
  fmt::print("exported {} binaries and {} tunings for '{}' to {}\n", info.binaries, info.tunings,
             o.gpu, o.out);
  print_info(info);
}

void run_import(const BundleOptions& o) {
  const DeviceIdentity here = local_identity(o.backend);
  KernelCache cache(cache_of(o));
  const ImportCounts n = import_bundle(cache, o.file, &here);
  fmt::print("imported {} binaries and {} tunings from {} into {}\n", n.binaries, n.tunings, o.file,
             cache.path());
}

void run_verify(const BundleOptions& o) {
  const BundleCheck c = verify_bundle(o.file);
  if (!c.ok) {
    std::string all;
    for (const std::string& p : c.problems) all += "\n  " + p;
    fail(ErrorKind::corrupt,
         "bundle {} failed verification ({} problem(s)); it would be refused:{}", o.file,
         c.problems.size(), all);
  }
  fmt::print("bundle {}: OK (every binary matches its SHA-256, content digest matches)\n", o.file);
  print_info(c.info);
  if (o.backend == "none") return;
  const std::string why = bundle_mismatch(c.info, local_identity(o.backend));
  fmt::print("  this machine: {}\n",
             why.empty() ? "matches (it would be used)" : "does not match (" + why + ")");
}

}  // namespace

void add_bundle_commands(CLI::App& app) {
  auto o = std::make_shared<BundleOptions>();
  CLI::App* ex = app.add_subcommand(
      "export", "Write the kernels and tunings of one device model into a bundle file");
  ex->add_option("--gpu", o->gpu,
                 "Device model as tuned, e.g. 'NVIDIA H100 80GB HBM3' (host: the CPU name)")
      ->required();
  ex->add_option("-o,--out", o->out, "Bundle file to write")->required();
  add_cache_option(ex, &o->cache);
  ex->callback([o] { run_export(*o); });

  CLI::App* im = app.add_subcommand("import", "Verify a bundle and copy it into the kernel cache");
  im->add_option("file", o->file, "Bundle file")->required();
  add_cache_option(im, &o->cache);
  im->add_option("--backend", o->backend, "Whose device the bundle must match: auto, host or cuda")
      ->check(one_of("backend", {"auto", "host", "cuda"}))
      ->capture_default_str();
  im->callback([o] { run_import(*o); });

  CLI::App* ve = app.add_subcommand(
      "verify", "Check a bundle: every binary's SHA-256, its digest, its metadata");
  ve->add_option("file", o->file, "Bundle file")->required();
  ve->add_option("--backend", o->backend,
                 "Also say whether it matches this machine's device: auto, host, cuda or none")
      ->check(one_of("backend", {"auto", "host", "cuda", "none"}))
      ->capture_default_str();
  ve->callback([o] { run_verify(*o); });
}

}  // namespace fp4jit::cli
