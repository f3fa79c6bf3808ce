#include "runtime/cuda/nvrtc.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "runtime/cuda/embedded.hpp"

namespace fp4jit::cuda {

struct Nvrtc::Api {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcAddNameExpression) add_name = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcGetLoweredName) lowered_name = nullptr;
};

namespace {

struct LoadResult {
  Nvrtc::Api api;
  std::string tried;
  bool ok = false;
};

template <class Fn>
bool sym(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr;
}

LoadResult load_nvrtc() {
  LoadResult out;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("FP4JIT_NVRTC"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  for (const char* c :
       {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
        "/usr/local/cuda/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"})
    candidates.emplace_back(c);
  void* lib = nullptr;
  for (const auto& c : candidates) {
    out.tried += (out.tried.empty() ? "" : ", ") + c;
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
  }
  if (lib == nullptr) return out;
  Nvrtc::Api& a = out.api;
  out.ok = sym(lib, "nvrtcVersion", a.version) && sym(lib, "nvrtcGetErrorString", a.error_string) &&
           sym(lib, "nvrtcCreateProgram", a.create) && sym(lib, "nvrtcDestroyProgram", a.destroy) &&
           sym(lib, "nvrtcAddNameExpression", a.add_name) &&
           sym(lib, "nvrtcCompileProgram", a.compile) &&
           sym(lib, "nvrtcGetProgramLogSize", a.log_size) &&
           sym(lib, "nvrtcGetProgramLog", a.log) && sym(lib, "nvrtcGetCUBINSize", a.cubin_size) &&
           sym(lib, "nvrtcGetCUBIN", a.cubin) && sym(lib, "nvrtcGetPTXSize", a.ptx_size) &&
           sym(lib, "nvrtcGetPTX", a.ptx) && sym(lib, "nvrtcGetLoweredName", a.lowered_name);
  return out;
}

// Destroys the program on every path out of compile_source.
class Program {
 public:
  Program(const Nvrtc::Api& api, nvrtcProgram p) : api_(api), p_(p) {}
  ~Program() {
    if (p_ != nullptr) api_.destroy(&p_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }

 private:
  const Nvrtc::Api& api_;
  nvrtcProgram p_;
};

}  // namespace

const Nvrtc& Nvrtc::get() {
  static const LoadResult loaded = load_nvrtc();
  static const Nvrtc instance = [] {
    Nvrtc n;
    if (loaded.ok) {
      n.api_ = &loaded.api;
      loaded.api.version(&n.major_, &n.minor_);
    }
    return n;
  }();
  if (instance.api_ == nullptr)
    fail(ErrorKind::unsupported,
         "NVRTC could not be loaded (tried {}): install the CUDA toolkit or set FP4JIT_NVRTC to "
         "libnvrtc.so",
         loaded.tried);
  return instance;
}

std::string Nvrtc::compiler() const {
  return "nvrtc " + std::to_string(major_) + "." + std::to_string(minor_);
}

CompiledKernel Nvrtc::compile(const codegen::KernelSource& kernel, bool want_ptx) const {
  return compile_source(kernel.source(), kernel.name_expression(),
                        codegen::compile_options(kernel.target), want_ptx);
}

CompiledKernel Nvrtc::compile_source(const std::string& source, const std::string& name_expression,
                                     const std::vector<std::string>& options, bool want_ptx) const {
  const auto start = std::chrono::steady_clock::now();
  const Api& a = *api_;
  const auto headers = embedded_templates();
  std::vector<const char*> texts, names;
  for (const auto& h : headers) {
    texts.push_back(h.text.data());
    names.push_back(h.name.data());
  }
  const auto error = [&](const std::string& what, nvrtcResult r, const std::string& log) {
    return Error(ErrorKind::compile,
                 what + ": " + a.error_string(r) + (log.empty() ? "" : "\n" + log))
        .with_log(log)
        .with_options(codegen::join_options(options))
        .with_source_hash(sha256_hex(source));
  };
  nvrtcProgram raw = nullptr;
  nvrtcResult r = a.create(&raw, source.c_str(), "fp4jit_kernel.cu",
                           static_cast<int>(headers.size()), texts.data(), names.data());
  if (r != NVRTC_SUCCESS) throw error("nvrtcCreateProgram", r, "");
  Program program(a, raw);
  r = a.add_name(raw, name_expression.c_str());
  if (r != NVRTC_SUCCESS) throw error("nvrtcAddNameExpression(" + name_expression + ")", r, "");
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  r = a.compile(raw, static_cast<int>(opts.size()), opts.data());
  CompiledKernel out;
  std::size_t log_size = 0;
  if (a.log_size(raw, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    a.log(raw, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (r != NVRTC_SUCCESS) throw error("NVRTC failed to compile " + name_expression, r, out.log);
  std::size_t size = 0;
  if ((r = a.cubin_size(raw, &size)) != NVRTC_SUCCESS) throw error("nvrtcGetCUBINSize", r, out.log);
  out.cubin.resize(size);
  if ((r = a.cubin(raw, reinterpret_cast<char*>(out.cubin.data()))) != NVRTC_SUCCESS)
    throw error("nvrtcGetCUBIN", r, out.log);
  if (want_ptx && a.ptx_size(raw, &size) == NVRTC_SUCCESS && size > 0) {
    out.ptx.resize(size);
    a.ptx(raw, out.ptx.data());
    out.ptx.resize(size - 1);
  }
  const char* lowered = nullptr;
  if ((r = a.lowered_name(raw, name_expression.c_str(), &lowered)) != NVRTC_SUCCESS ||
      lowered == nullptr)
    throw error("nvrtcGetLoweredName(" + name_expression + ")", r, out.log);
  out.lowered_name = lowered;
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace fp4jit::cuda
