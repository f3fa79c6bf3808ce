// Thin helpers over llvm::IRBuilder for the host kernels. Every numeric helper works on scalars
// and on vectors alike: the type of its operand (float or <W x float>, i32 or <W x i32>) decides
// the shape of its result, so one definition serves the per-element (vector) and the per-block
// (scalar) code. Integer arithmetic never carries nsw/nuw flags and every shift amount or
// float-to-int operand is kept in range by the caller (sanitized with selects), so no lane ever
// produces poison.
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <string>

namespace fp4jit::host {

class Emitter {
 public:
  Emitter(llvm::Module& module, llvm::IRBuilder<>& builder)
      : b(builder), ctx(module.getContext()), mod(module) {}

  llvm::IRBuilder<>& b;
  llvm::LLVMContext& ctx;
  llvm::Module& mod;

  // Element types and their `lanes`-wide vectors (lanes == 0: the scalar).
  llvm::Type* f32(int lanes = 0) const { return shape(llvm::Type::getFloatTy(ctx), lanes); }
  llvm::Type* i32(int lanes = 0) const { return shape(llvm::Type::getInt32Ty(ctx), lanes); }
  llvm::Type* i64(int lanes = 0) const { return shape(llvm::Type::getInt64Ty(ctx), lanes); }
  llvm::Type* i16(int lanes = 0) const { return shape(llvm::Type::getInt16Ty(ctx), lanes); }
  llvm::Type* i8(int lanes = 0) const { return shape(llvm::Type::getInt8Ty(ctx), lanes); }
  llvm::Type* i1(int lanes = 0) const { return shape(llvm::Type::getInt1Ty(ctx), lanes); }
  static llvm::Type* shape(llvm::Type* elem, int lanes);
  static int lanes(const llvm::Value* v);  // 0 for scalars

  // Constants shaped like `like` (same lane count): float, i32, i64.
  llvm::Constant* cf(const llvm::Value* like, float v) const {
    return llvm::ConstantFP::get(f32(lanes(like)), v);
  }
  llvm::Constant* c32(const llvm::Value* like, std::uint32_t v) const {
    return llvm::ConstantInt::get(i32(lanes(like)), v);
  }
  llvm::Constant* c32s(const llvm::Value* like, std::int32_t v) const {
    return llvm::ConstantInt::get(i32(lanes(like)),
                                  static_cast<std::uint64_t>(static_cast<std::int64_t>(v)), true);
  }
  llvm::Constant* c64(const llvm::Value* like, std::uint64_t v) const {
    return llvm::ConstantInt::get(i64(lanes(like)), v);
  }
  llvm::Constant* ci64(std::int64_t v) const {
    return llvm::ConstantInt::get(i64(), static_cast<std::uint64_t>(v), true);
  }

  // A scalar broadcast to `lanes` lanes (lanes == 0: unchanged).
  llvm::Value* splat(llvm::Value* scalar, int lanes);
  // base + <0, 1, ..., lanes-1> for an i64 scalar base (lanes == 0: base).
  llvm::Value* iota(llvm::Value* base, int lanes);

  // Pointer arithmetic and `lanes` consecutive elements at ptr (typed pointers, LLVM 14).
  llvm::Value* gep(llvm::Type* elem, llvm::Value* ptr, llvm::Value* index);
  llvm::Value* load(llvm::Type* elem, llvm::Value* ptr, int lanes);
  void store(llvm::Value* value, llvm::Value* ptr);
  llvm::Value* cast_ptr(llvm::Value* ptr, llvm::Type* elem);

  // Horizontal reductions of a vector (a scalar is returned unchanged).
  llvm::Value* reduce_umax(llvm::Value* v);

  // for (i = begin; i + step <= end; i += step) body(i); returns i after the loop. `unroll` > 1
  // asks the unroller for that factor.
  llvm::Value* loop(llvm::Value* begin, llvm::Value* end, std::int64_t step,
                    const std::function<void(llvm::Value*)>& body, int unroll = 0,
                    const std::string& name = "i");
  // if (cond) body();
  void if_then(llvm::Value* cond, const std::function<void()>& body);

  llvm::Function* function(const std::string& name, llvm::Type* ret,
                           llvm::ArrayRef<llvm::Type*> params);
};

}  // namespace fp4jit::host
