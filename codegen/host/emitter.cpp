#include "codegen/host/emitter.hpp"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

namespace fp4jit::host {

llvm::Type* Emitter::shape(llvm::Type* elem, int lanes) {
  return lanes == 0 ? elem : llvm::FixedVectorType::get(elem, static_cast<unsigned>(lanes));
}

int Emitter::lanes(const llvm::Value* v) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType()))
    return static_cast<int>(vt->getNumElements());
  return 0;
}

llvm::Value* Emitter::splat(llvm::Value* scalar, int n) {
  if (n == 0) return scalar;
  return b.CreateVectorSplat(static_cast<unsigned>(n), scalar);
}

llvm::Value* Emitter::iota(llvm::Value* base, int n) {
  if (n == 0) return base;
  std::vector<llvm::Constant*> steps;
  for (int i = 0; i < n; ++i)
    steps.push_back(llvm::ConstantInt::get(i64(), static_cast<std::uint64_t>(i)));
  return b.CreateAdd(splat(base, n), llvm::ConstantVector::get(steps));
}

llvm::Value* Emitter::cast_ptr(llvm::Value* ptr, llvm::Type* elem) {
  return b.CreatePointerCast(ptr, elem->getPointerTo());
}

llvm::Value* Emitter::gep(llvm::Type* elem, llvm::Value* ptr, llvm::Value* index) {
  return b.CreateGEP(elem, cast_ptr(ptr, elem), index);
}

llvm::Value* Emitter::load(llvm::Type* elem, llvm::Value* ptr, int n) {
  llvm::Type* t = shape(elem, n);
  const auto align = llvm::Align(elem->getPrimitiveSizeInBits() / 8);
  return b.CreateAlignedLoad(t, cast_ptr(ptr, t), align);
}

void Emitter::store(llvm::Value* value, llvm::Value* ptr) {
  llvm::Type* t = value->getType();
  const auto align = llvm::Align(t->getScalarType()->getPrimitiveSizeInBits() / 8);
  b.CreateAlignedStore(value, cast_ptr(ptr, t), align);
}

llvm::Value* Emitter::reduce_umax(llvm::Value* v) {
  if (lanes(v) == 0) return v;
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_umax, v);
}

llvm::Value* Emitter::loop(llvm::Value* begin, llvm::Value* end, std::int64_t step,
                           const std::function<void(llvm::Value*)>& body, int unroll,
                           const std::string& name) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx, name + ".head", fn);
  auto* block = llvm::BasicBlock::Create(ctx, name + ".body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx, name + ".exit", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(i64(), 2, name);
  i->addIncoming(begin, pre);
  b.CreateCondBr(b.CreateICmpSLE(b.CreateAdd(i, ci64(step)), end), block, exit);
  b.SetInsertPoint(block);
  body(i);
  llvm::Value* next = b.CreateAdd(i, ci64(step));
  llvm::BranchInst* back = b.CreateBr(header);
  i->addIncoming(next, b.GetInsertBlock());
  if (unroll > 1) {
    llvm::MDNode* count =
        llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.count"),
                                llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                    i32(), static_cast<std::uint64_t>(unroll)))});
    llvm::MDNode* self = llvm::MDNode::getDistinct(ctx, {nullptr, count});
    self->replaceOperandWith(0, self);
    back->setMetadata(llvm::LLVMContext::MD_loop, self);
  }
  b.SetInsertPoint(exit);
  return i;
}

void Emitter::if_then(llvm::Value* cond, const std::function<void()>& body) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* then = llvm::BasicBlock::Create(ctx, "then", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "endif", fn);
  b.CreateCondBr(cond, then, done);
  b.SetInsertPoint(then);
  body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

llvm::Function* Emitter::function(const std::string& name, llvm::Type* ret,
                                  llvm::ArrayRef<llvm::Type*> params) {
  auto* type = llvm::FunctionType::get(ret, params, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  return fn;
}

}  // namespace fp4jit::host
