#include "codegen/host/occ_ir.hpp"

#include <llvm/IR/Intrinsics.h>

#include "codegen/host/ir_numerics.hpp"
#include "codegen/host/operand_ir.hpp"

namespace fp4jit::host {

using llvm::Value;

namespace {

enum Field { kSrc, kSrcStride, kCols, kLo, kHi, kOffset, kOut, kResIndex, kResValue };

struct Fn {
  Value* args;
  Value* begin;
  Value* end;
};

Fn open(Emitter& e, const std::string& name) {
  llvm::Function* fn =
      e.function(name, llvm::Type::getVoidTy(e.ctx), {e.i8()->getPointerTo(), e.i64(), e.i64()});
  auto it = fn->arg_begin();
  return {&*it, &*(it + 1), &*(it + 2)};
}

// x, clamp(x) and the i1 lanes where they differ, for `lanes` elements of a source row.
struct Clamped {
  Value *x, *clamped, *changed;
};

Clamped clamp(Emitter& e, DType dtype, Value* row, Value* c, Value* lo, Value* hi, int lanes) {
  auto& b = e.b;
  llvm::Type* elem = dtype == DType::f32 ? e.f32() : e.i16();
  Value* x = load_as_float(e, dtype, e.gep(elem, row, c), lanes);
  Value* l = e.splat(lo, lanes);
  Value* h = e.splat(hi, lanes);
  Value* clamped =
      b.CreateSelect(b.CreateFCmpOLT(x, l), l, b.CreateSelect(b.CreateFCmpOGT(x, h), h, x));
  return {x, clamped, b.CreateFCmpUNE(clamped, x)};
}

Value* any(Emitter& e, Value* mask) {
  if (Emitter::lanes(mask) == 0) return mask;
  return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_or, mask);
}

}  // namespace

void emit_occ(llvm::Module& module, const OccKernelSpec& spec, const std::string& prefix) {
  llvm::IRBuilder<> builder(module.getContext());
  Emitter e(module, builder);
  auto& b = e.b;
  const int vw = spec.config.vector_width;
  llvm::Type* elem = spec.input == DType::f32 ? e.f32() : e.i16();
  for (const bool apply : {false, true}) {
    const Fn f = open(e, prefix + (apply ? "_apply" : "_count"));
    Value* src = load_arg(e, f.args, kSrc, e.i8()->getPointerTo());
    Value* stride = load_arg(e, f.args, kSrcStride, e.i64());
    Value* cols = load_arg(e, f.args, kCols, e.i64());
    Value* los = load_arg(e, f.args, kLo, e.f32()->getPointerTo());
    Value* his = load_arg(e, f.args, kHi, e.f32()->getPointerTo());
    Value* offsets = load_arg(e, f.args, kOffset, e.i64()->getPointerTo());
    Value* out = load_arg(e, f.args, kOut, e.f32()->getPointerTo());
    Value* res_index = load_arg(e, f.args, kResIndex, e.i64()->getPointerTo());
    Value* res_value = load_arg(e, f.args, kResValue, e.f32()->getPointerTo());
    llvm::AllocaInst* slot = b.CreateAlloca(e.i64());
    e.loop(
        f.begin, f.end, 1,
        [&](Value* r) {
          Value* row = e.gep(elem, src, b.CreateMul(r, stride));
          Value* lo = e.load(e.f32(), e.gep(e.f32(), los, r), 0);
          Value* hi = e.load(e.f32(), e.gep(e.f32(), his, r), 0);
          Value* at = e.gep(e.i64(), offsets, r);
          b.CreateStore(apply ? e.load(e.i64(), at, 0) : e.ci64(0), slot);
          Value* dst = e.gep(e.f32(), out, b.CreateMul(r, cols));
          for_each_chunk(e, cols, vw, 0, spec.config.unroll, [&](Value* c, int lanes) {
            const Clamped k = clamp(e, spec.input, row, c, lo, hi, lanes);
            if (!apply) {
              Value* n =
                  lanes == 0
                      ? b.CreateZExt(k.changed, e.i64())
                      : b.CreateZExt(b.CreateUnaryIntrinsic(
                                         llvm::Intrinsic::ctpop,
                                         b.CreateBitCast(
                                             k.changed, b.getIntNTy(static_cast<unsigned>(lanes)))),
                                     e.i64());
              b.CreateStore(b.CreateAdd(b.CreateLoad(e.i64(), slot), n), slot);
              return;
            }
            e.store(k.clamped, e.gep(e.f32(), dst, c));
            e.if_then(any(e, k.changed), [&] {  // rare: append the changed lanes in order
              for (int l = 0; l < std::max(lanes, 1); ++l) {
                const auto pick = [&](Value* v) {
                  return lanes == 0 ? v : b.CreateExtractElement(v, static_cast<std::uint64_t>(l));
                };
                e.if_then(pick(k.changed), [&] {
                  Value* s = b.CreateLoad(e.i64(), slot);
                  Value* index = b.CreateAdd(b.CreateMul(r, cols), b.CreateAdd(c, e.ci64(l)));
                  e.store(index, e.gep(e.i64(), res_index, s));
                  e.store(b.CreateFSub(pick(k.x), pick(k.clamped)), e.gep(e.f32(), res_value, s));
                  b.CreateStore(b.CreateAdd(s, e.ci64(1)), slot);
                });
              }
            });
          });
          if (!apply) e.store(b.CreateLoad(e.i64(), slot), at);
        },
        0, "r");
    b.CreateRetVoid();
  }
}

}  // namespace fp4jit::host
