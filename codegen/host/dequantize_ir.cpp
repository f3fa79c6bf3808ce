#include "codegen/host/dequantize_ir.hpp"

#include "codegen/host/ir_numerics.hpp"
#include "codegen/host/operand_ir.hpp"
#include "codegen/host/values_ir.hpp"

namespace fp4jit::host {

using llvm::Value;

namespace {
enum Field { kCodes, kRowBytes, kScales, kScaleCols, kRows, kCols, kOut, kOutStride, kSEnc };
}  // namespace

void emit_dequantize(llvm::Module& module, const DequantizeKernelSpec& spec,
                     const std::string& prefix) {
  llvm::IRBuilder<> builder(module.getContext());
  Emitter e(module, builder);
  auto& b = e.b;
  llvm::Function* fn = e.function(prefix + "_dequantize", llvm::Type::getVoidTy(e.ctx),
                                  {e.i8()->getPointerTo(), e.i64(), e.i64()});
  auto it = fn->arg_begin();
  Value* args = &*it;
  Value* begin = &*(it + 1);
  Value* end = &*(it + 2);
  const OperandValues values(
      e, spec.op, spec.ue5m3, load_arg(e, args, kCodes, e.i8()->getPointerTo()),
      load_arg(e, args, kRowBytes, e.i64()), load_arg(e, args, kScales, e.i8()->getPointerTo()),
      load_arg(e, args, kScaleCols, e.i64()));
  Value* cols = load_arg(e, args, kCols, e.i64());
  Value* out = load_arg(e, args, kOut, e.i8()->getPointerTo());
  Value* stride = load_arg(e, args, kOutStride, e.i64());
  Value* s_enc = load_arg(e, args, kSEnc, e.f32());
  llvm::Type* out_elem = spec.output == DType::f32 ? e.f32() : e.i16();
  const int tail = spec.op.elem == ElemFormat::e2m1 ? 2 : 0;
  e.loop(
      begin, end, 1,
      [&](Value* r) {
        Value* dst = e.gep(out_elem, out, b.CreateMul(r, stride));
        for_each_chunk(e, cols, values.chunk_width(spec.config.vector_width), tail,
                       spec.config.unroll, [&](Value* c, int lanes) {
                         Value* v = values.value(r, c, lanes);
                         if (spec.op.rule == ScaleRule::two_level)
                           v = b.CreateFDiv(v, e.splat(s_enc, lanes));
                         store_from_float(e, spec.output, v, e.gep(out_elem, dst, c));
                       });
      },
      0, "r");
  b.CreateRetVoid();
}

}  // namespace fp4jit::host
