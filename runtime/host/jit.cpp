#include "runtime/host/jit.hpp"

#include <llvm/ADT/StringMap.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"
#include "core/sha256.hpp"

namespace fp4jit::host {

namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::string error_text(llvm::Error err) {
  std::string text;
  llvm::handleAllErrors(std::move(err),
                        [&](const llvm::ErrorInfoBase& info) { text += info.message(); });
  return text;
}

template <typename T>
T take(llvm::Expected<T> value, std::string_view what) {
  if (!value) fail(ErrorKind::compile, "LLVM: {}: {}", what, error_text(value.takeError()));
  return std::move(*value);
}

void dump(const char* env, const std::string& file,
          const std::function<void(llvm::raw_ostream&)>& write) {
  const char* dir = std::getenv(env);
  if (dir == nullptr || *dir == '\0') return;
  llvm::sys::fs::create_directories(dir);
  std::error_code ec;
  llvm::raw_fd_ostream out(std::string(dir) + "/" + file, ec);
  if (!ec) write(out);
}

}  // namespace

HostTarget detect_host_target() {
  init_llvm();
  HostTarget t;
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> map;
  llvm::sys::getHostCPUFeatures(map);
  std::vector<std::string> features;
  for (const auto& f : map) features.push_back((f.second ? "+" : "-") + f.first().str());
  std::sort(features.begin(), features.end());
  for (const auto& f : features) t.features += (t.features.empty() ? "" : ",") + f;
  t.name = "host:" + t.cpu + ":" + sha256_hex(t.features).substr(0, 16);
  t.compiler = "llvm " LLVM_VERSION_STRING;
  if (map.lookup("avx512f"))
    t.vector_bits = 512;
  else if (map.lookup("avx2"))
    t.vector_bits = 256;
  return t;
}

struct HostJit::Impl {
  HostTarget target;
  std::string options = "O3,fp-fusion=standard,reloc=pic";
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::mutex mutex;  // compile() and load() are serialized (one target machine)
};

HostJit::HostJit() : impl_(std::make_unique<Impl>()) {
  impl_->target = detect_host_target();
  auto jtmb = take(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  jtmb.setCPU(impl_->target.cpu);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  jtmb.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Standard;  // only explicit fmuladd fuses
  impl_->tm = take(jtmb.createTargetMachine(), "creating the target machine");
  impl_->jit = take(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(),
                    "creating LLJIT");
  const char prefix = impl_->jit->getDataLayout().getGlobalPrefix();
  impl_->jit->getMainJITDylib().addGenerator(take(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix), "process symbols"));
}

HostJit::~HostJit() = default;

const HostTarget& HostJit::target() const {
  return impl_->target;
}
const std::string& HostJit::options() const {
  return impl_->options;
}

CompiledKernel HostJit::compile(const std::string& name,
                                const std::function<void(llvm::Module&)>& emit,
                                llvm::ObjectCache* cache) {
  std::lock_guard lock(impl_->mutex);
  const auto start = std::chrono::steady_clock::now();
  llvm::LLVMContext ctx;
  llvm::Module module(name, ctx);
  module.setDataLayout(impl_->tm->createDataLayout());
  module.setTargetTriple(impl_->tm->getTargetTriple().str());
  emit(module);
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration()) continue;
    fn.addFnAttr("target-cpu", impl_->target.cpu);
    fn.addFnAttr("target-features", impl_->target.features);
  }
  CompiledKernel out;
  llvm::raw_string_ostream ir(out.ir);
  module.print(ir, nullptr);
  ir.flush();
  dump("FP4JIT_DUMP_IR", name + ".ll", [&](llvm::raw_ostream& os) { os << out.ir; });
  std::string problems;
  llvm::raw_string_ostream verify(problems);
  if (llvm::verifyModule(module, &verify))
    throw Error(ErrorKind::compile, fmt::format("generated IR of {} is invalid", name))
        .with_log(verify.str());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(impl_->tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
  dump("FP4JIT_DUMP_IR", name + ".opt.ll",
       [&](llvm::raw_ostream& os) { module.print(os, nullptr); });
  if (std::getenv("FP4JIT_DUMP_ASM") != nullptr) {
    llvm::SmallString<0> text;
    llvm::raw_svector_ostream os(text);
    llvm::legacy::PassManager pm;
    auto clone = llvm::CloneModule(module);
    if (!impl_->tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile)) pm.run(*clone);
    dump("FP4JIT_DUMP_ASM", name + ".s", [&](llvm::raw_ostream& o) { o << text; });
  }
  llvm::orc::SimpleCompiler compiler(*impl_->tm, cache);
  std::unique_ptr<llvm::MemoryBuffer> object = take(compiler(module), "compiling " + name);
  out.object.assign(object->getBufferStart(), object->getBufferEnd());
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void HostJit::load(const std::vector<std::uint8_t>& object, const std::string& name) {
  std::lock_guard lock(impl_->mutex);
  const llvm::StringRef bytes(reinterpret_cast<const char*>(object.data()), object.size());
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(bytes, name);
  if (llvm::Error err = impl_->jit->addObjectFile(std::move(buffer)))
    fail(ErrorKind::compile, "LLVM: linking object {}: {}", name, error_text(std::move(err)));
}

void* HostJit::lookup(const std::string& symbol) {
  std::lock_guard lock(impl_->mutex);
  auto sym = impl_->jit->lookup(symbol);
  if (!sym)
    fail(ErrorKind::internal, "LLVM: symbol {} not found: {}", symbol, error_text(sym.takeError()));
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(sym->getAddress()));
}

}  // namespace fp4jit::host
