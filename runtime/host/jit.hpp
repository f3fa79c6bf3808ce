// The ORC JIT of the host backend: one LLJIT per HostBackend, its target machine for this CPU,
// IR optimization (the O3 pipeline with the host's vector widths) and object emission. Generated
// kernels reach it either as IR (compiled here, through an llvm::ObjectCache) or as object code
// from the kernel cache (linked without compiling).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
class ObjectCache;
}  // namespace llvm

namespace fp4jit::host {

// What object code for this machine depends on.
struct HostTarget {
  std::string cpu;        // LLVM's name of the host CPU, e.g. "sapphirerapids"
  std::string features;   // the sorted feature string, "+avx2,+avx512f,...,-xop"
  std::string name;       // "host:<cpu>:<first 16 hex of sha256(features)>"
  std::string compiler;   // "llvm 14.0.6"
  int vector_bits = 128;  // widest vector register the features enable (128, 256 or 512)
};
HostTarget detect_host_target();

struct CompiledKernel {
  std::vector<std::uint8_t> object;
  std::string ir;  // the module as generated (before optimization)
  double compile_ms = 0.0;
};

class HostJit {
 public:
  HostJit();
  ~HostJit();
  HostJit(const HostJit&) = delete;
  HostJit& operator=(const HostJit&) = delete;

  const HostTarget& target() const;
  // The options that decide the object code (part of every key).
  const std::string& options() const;

  // Builds module `name` with emit(), verifies, optimizes and compiles it through `cache` (may be
  // null). Dump switches: FP4JIT_DUMP_IR=<dir> writes <name>.ll and <name>.opt.ll,
  // FP4JIT_DUMP_ASM=<dir> writes <name>.s. Throws Error(compile) on invalid IR.
  CompiledKernel compile(const std::string& name, const std::function<void(llvm::Module&)>& emit,
                         llvm::ObjectCache* cache);
  // Links object code into the JIT; throws Error(compile) if LLVM rejects it.
  void load(const std::vector<std::uint8_t>& object, const std::string& name);
  // Address of a symbol of a loaded object; throws Error(internal) when missing.
  void* lookup(const std::string& symbol);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fp4jit::host
