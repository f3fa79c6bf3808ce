#include "codegen/host/values_ir.hpp"

#include "codegen/host/ir_numerics.hpp"
#include "core/error.hpp"

namespace fp4jit::host {

using llvm::Value;

int OperandValues::chunk_width(int vector_width) const {
  const int w = blocks_.chunk_width(vector_width);
  if (op_.elem == ElemFormat::e2m1 && w < 2)
    fail(ErrorKind::unsupported, "host kernels: E2M1 blocks of odd width ({}) are not supported",
         block_text(op_.block));
  return w;
}

Value* OperandValues::element(Value* r, Value* c, int lanes) const {
  auto& b = e_.b;
  Value* row = e_.gep(e_.i8(), codes_, b.CreateMul(r, row_bytes_));
  if (op_.elem != ElemFormat::e2m1) {
    Value* code = b.CreateZExt(e_.load(e_.i8(), e_.gep(e_.i8(), row, c), lanes), e_.i32(lanes));
    return ir::mf_decode(e_, minifloat(op_.elem), code);
  }
  const int half = lanes / 2;
  Value* bytes = b.CreateZExt(
      e_.load(e_.i8(), e_.gep(e_.i8(), row, b.CreateLShr(c, e_.ci64(1))), half), e_.i32(half));
  Value* lo = b.CreateAnd(bytes, e_.c32(bytes, 15));
  Value* hi = b.CreateLShr(bytes, e_.c32(bytes, 4));
  std::vector<int> interleave;
  for (int i = 0; i < half; ++i) {
    interleave.push_back(i);
    interleave.push_back(i + half);
  }
  return ir::e2m1_decode(e_, b.CreateShuffleVector(lo, hi, interleave));
}

Value* OperandValues::scale(Value* r, Value* c, int lanes) const {
  auto& b = e_.b;
  if (op_.scale == ScaleFormat::fp32) return blocks_.load(e_.f32(), scales_, r, c, lanes);
  Value* code = b.CreateZExt(blocks_.load(e_.i8(), scales_, r, c, lanes), e_.i32(lanes));
  if (op_.scale == ScaleFormat::e8m0) return ir::e8m0_decode(e_, code);
  return ir::mf_decode(e_, minifloat(op_.scale, ue5m3_), code);
}

Value* OperandValues::value(Value* r, Value* c, int lanes) const {
  return e_.b.CreateFMul(element(r, c, lanes), scale(r, c, lanes));
}

}  // namespace fp4jit::host
