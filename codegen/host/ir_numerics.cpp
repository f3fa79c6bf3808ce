// IR for common.cuh, rounding.cuh, e2m1.cuh and minifloat.cuh. Each function mirrors the C++ of
// the same name line by line; comments note where a branch became a select.
#include "codegen/host/ir_numerics.hpp"

#include <llvm/IR/Intrinsics.h>

#include <cmath>

namespace fp4jit::host::ir {

Value* bits(Emitter& e, Value* x) {
  return e.b.CreateBitCast(x, e.i32(Emitter::lanes(x)));
}
Value* from_bits(Emitter& e, Value* u) {
  return e.b.CreateBitCast(u, e.f32(Emitter::lanes(u)));
}

Value* is_nan(Emitter& e, Value* x) {
  Value* u = bits(e, x);
  return e.b.CreateICmpUGT(e.b.CreateAnd(u, e.c32(u, 0x7fffffffu)), e.c32(u, 0x7f800000u));
}
Value* is_finite(Emitter& e, Value* x) {
  Value* u = bits(e, x);
  return e.b.CreateICmpNE(e.b.CreateAnd(u, e.c32(u, 0x7f800000u)), e.c32(u, 0x7f800000u));
}
Value* sign_bit(Emitter& e, Value* x) {
  Value* u = bits(e, x);
  return e.b.CreateICmpSLT(u, e.c32(u, 0));
}
Value* abs_f(Emitter& e, Value* x) {
  Value* u = bits(e, x);
  return from_bits(e, e.b.CreateAnd(u, e.c32(u, 0x7fffffffu)));
}
Value* neg_f(Emitter& e, Value* x) {
  Value* u = bits(e, x);
  return from_bits(e, e.b.CreateXor(u, e.c32(u, 0x80000000u)));
}
Value* min_f(Emitter& e, Value* a, Value* b) {
  return e.b.CreateSelect(e.b.CreateFCmpOLT(b, a), b, a);
}
Value* max_f(Emitter& e, Value* a, Value* b) {
  return e.b.CreateSelect(e.b.CreateFCmpOGT(b, a), b, a);
}

Value* floor_log2(Emitter& e, Value* a) {
  Value* u = e.b.CreateAnd(bits(e, a), e.c32(a, 0x7fffffffu));
  Value* biased = e.b.CreateLShr(u, e.c32(u, 23));
  Value* normal = e.b.CreateSub(biased, e.c32(u, 127));
  Value* clz = e.b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, u, e.b.getFalse());
  Value* subnormal = e.b.CreateSub(e.b.CreateSub(e.c32(u, 31), clz), e.c32(u, 149));
  return e.b.CreateSelect(e.b.CreateICmpNE(biased, e.c32(u, 0)), normal, subnormal);
}

Value* significand(Emitter& e, Value* a) {
  Value* u = e.b.CreateAnd(bits(e, a), e.c32(a, 0x7fffffffu));
  Value* is_normal = e.b.CreateICmpNE(e.b.CreateLShr(u, e.c32(u, 23)), e.c32(u, 0));
  Value* normal =
      from_bits(e, e.b.CreateOr(e.b.CreateAnd(u, e.c32(u, 0x007fffffu)), e.c32(u, 0x3f800000u)));
  // subnormal: shift the leading one into place (the amount is sanitized to 0 on normal lanes)
  Value* shift = e.b.CreateSub(e.c32s(u, -126), floor_log2(e, a));
  shift = e.b.CreateSelect(is_normal, e.c32(u, 0), shift);
  Value* m = e.b.CreateShl(u, shift);
  Value* sub =
      from_bits(e, e.b.CreateOr(e.b.CreateAnd(m, e.c32(u, 0x007fffffu)), e.c32(u, 0x3f800000u)));
  return e.b.CreateSelect(is_normal, normal, sub);
}

Value* pow2f(Emitter& e, Value* x) {
  Value* normal = from_bits(e, e.b.CreateShl(e.b.CreateAdd(x, e.c32(x, 127)), e.c32(x, 23)));
  Value* is_normal = e.b.CreateICmpSGE(x, e.c32s(x, -126));
  Value* shift = e.b.CreateSelect(is_normal, e.c32(x, 0), e.b.CreateAdd(x, e.c32(x, 149)));
  Value* sub = from_bits(e, e.b.CreateShl(e.c32(x, 1), shift));
  return e.b.CreateSelect(is_normal, normal, sub);
}

Value* to_float(Emitter& e, Value* i) {
  return e.b.CreateSIToFP(i, e.f32(Emitter::lanes(i)));
}

Value* bf16_to_float(Emitter& e, Value* h) {
  Value* u = e.b.CreateZExt(h, e.i32(Emitter::lanes(h)));
  return from_bits(e, e.b.CreateShl(u, e.c32(u, 16)));
}

Value* f16_to_float(Emitter& e, Value* h) {
  auto& b = e.b;
  Value* u = b.CreateZExt(h, e.i32(Emitter::lanes(h)));
  Value* sign = b.CreateShl(b.CreateAnd(u, e.c32(u, 0x8000u)), e.c32(u, 16));
  Value* exp = b.CreateAnd(b.CreateLShr(u, e.c32(u, 10)), e.c32(u, 0x1fu));
  Value* man = b.CreateAnd(u, e.c32(u, 0x3ffu));
  Value* man13 = b.CreateShl(man, e.c32(u, 13));
  Value* special = from_bits(e, b.CreateOr(b.CreateOr(sign, e.c32(u, 0x7f800000u)), man13));
  Value* normal = from_bits(
      e, b.CreateOr(b.CreateOr(sign, b.CreateShl(b.CreateAdd(exp, e.c32(u, 112)), e.c32(u, 23))),
                    man13));
  Value* v = b.CreateFMul(to_float(e, man), e.cf(u, nx::pow2f(-24)));
  Value* small = b.CreateSelect(b.CreateICmpNE(sign, e.c32(u, 0)), neg_f(e, v), v);
  return b.CreateSelect(b.CreateICmpEQ(exp, e.c32(u, 0x1f)), special,
                        b.CreateSelect(b.CreateICmpNE(exp, e.c32(u, 0)), normal, small));
}

Value* float_to_bf16(Emitter& e, Value* x) {
  auto& b = e.b;
  Value* u = bits(e, x);
  Value* hi = b.CreateLShr(u, e.c32(u, 16));
  Value* nan = b.CreateOr(hi, e.c32(u, 0x0040u));
  Value* rounding = b.CreateAdd(e.c32(u, 0x7fffu), b.CreateAnd(hi, e.c32(u, 1)));
  Value* rounded = b.CreateLShr(b.CreateAdd(u, rounding), e.c32(u, 16));
  return b.CreateTrunc(b.CreateSelect(is_nan(e, x), nan, rounded), e.i16(Emitter::lanes(x)));
}

Value* float_to_f16(Emitter& e, Value* x) {
  const nx::MiniFloat half{5, 10, 15, true, nx::Special::ieee};
  Value* code = mf_encode(e, half, x, nx::Round::even, false, nullptr, 8);
  return e.b.CreateTrunc(code, e.i16(Emitter::lanes(x)));
}

Value* round_up(Emitter& e, Value* frac, Value* lo_odd, Value* negative, nx::Round mode,
                Value* rbits, int sr_bits) {
  auto& b = e.b;
  Value* half = e.cf(frac, 0.5f);
  switch (mode) {
    case nx::Round::even:
      return b.CreateOr(b.CreateFCmpOGT(frac, half),
                        b.CreateAnd(b.CreateFCmpOEQ(frac, half), lo_odd));
    case nx::Round::away:
      return b.CreateFCmpOGE(frac, half);
    case nx::Round::up:
      return b.CreateOr(b.CreateFCmpOGT(frac, half),
                        b.CreateAnd(b.CreateFCmpOEQ(frac, half), b.CreateNot(negative)));
    case nx::Round::zero:
      return b.CreateFCmpOGT(frac, half);
    case nx::Round::stochastic: {
      Value* r = b.CreateAnd(rbits, e.c32(rbits, (1u << sr_bits) - 1u));
      Value* lhs = b.CreateFAdd(to_float(e, r), half);
      return b.CreateFCmpOLT(lhs, b.CreateFMul(frac, e.cf(frac, nx::pow2f(sr_bits))));
    }
  }
  return b.CreateFCmpOGT(frac, half);
}

Value* e2m1_encode(Emitter& e, Value* v, nx::Round mode, Value* rbits, int sr_bits) {
  auto& b = e.b;
  Value* nan = is_nan(e, v);
  Value* neg = sign_bit(e, v);
  Value* a = abs_f(e, v);
  Value* big = b.CreateFCmpOGE(a, e.cf(v, 6.0f));
  // e2m1_locate on lanes below 6 (others computed on 0 and discarded)
  Value* as = b.CreateSelect(b.CreateOr(big, nan), e.cf(v, 0.0f), a);
  Value* below2 = b.CreateFCmpOLT(as, e.cf(v, 2.0f));
  Value* below4 = b.CreateFCmpOLT(as, e.cf(v, 4.0f));
  Value* n =
      b.CreateSelect(below2, b.CreateFMul(as, e.cf(v, 2.0f)), b.CreateFSub(as, e.cf(v, 2.0f)));
  Value* i = b.CreateFPToSI(n, e.i32(Emitter::lanes(v)));
  Value* frac12 = b.CreateFSub(n, to_float(e, i));
  Value* lo12 = b.CreateSelect(below2, i, b.CreateAdd(i, e.c32(i, 4)));
  Value* frac3 = b.CreateFMul(b.CreateFSub(as, e.cf(v, 4.0f)), e.cf(v, 0.5f));
  Value* lo = b.CreateSelect(below4, lo12, e.c32(i, 6));
  Value* frac = b.CreateSelect(below4, frac12, frac3);
  Value* odd = b.CreateICmpNE(b.CreateAnd(lo, e.c32(lo, 1)), e.c32(lo, 0));
  Value* up =
      b.CreateZExt(round_up(e, frac, odd, neg, mode, rbits, sr_bits), e.i32(Emitter::lanes(v)));
  Value* mag = b.CreateSelect(big, e.c32(lo, 7), b.CreateAdd(lo, up));
  Value* code = b.CreateOr(mag, b.CreateSelect(neg, e.c32(lo, 8), e.c32(lo, 0)));
  return b.CreateSelect(nan, e.c32(lo, 0), code);
}

Value* e2m1_decode(Emitter& e, Value* code) {
  auto& b = e.b;
  Value* m = b.CreateAnd(code, e.c32(code, 7));
  Value* low = b.CreateFMul(e.cf(code, 0.5f), to_float(e, m));
  Value* high = b.CreateSelect(b.CreateICmpEQ(m, e.c32(code, 7)), e.cf(code, 6.0f),
                               to_float(e, b.CreateSub(m, e.c32(code, 2))));
  Value* mag = b.CreateSelect(b.CreateICmpULT(m, e.c32(code, 4)), low, high);
  Value* neg = b.CreateICmpNE(b.CreateAnd(code, e.c32(code, 8)), e.c32(code, 0));
  return b.CreateSelect(neg, neg_f(e, mag), mag);
}

Value* mf_encode(Emitter& e, const nx::MiniFloat& f, Value* x, nx::Round mode, bool saturate,
                 Value* rbits, int sr_bits) {
  auto& b = e.b;
  const int M = f.man_bits;
  const nx::u32 max_code = nx::mf_max_code(f);
  const nx::u32 overflow =
      saturate ? max_code
               : (f.special == nx::Special::ieee ? nx::mf_inf_code(f) : nx::mf_nan_code(f));
  const nx::u32 top = f.special == nx::Special::all_finite ? max_code : overflow;
  const int emin = 1 - f.bias;
  const int emax = (1 << f.exp_bits) - 1 - f.bias;

  Value* nan = is_nan(e, x);
  Value* neg = sign_bit(e, x);
  Value* k0 = e.c32(bits(e, x), 0);
  Value* sign = b.CreateSelect(neg, e.c32(k0, nx::mf_sign_mask(f)), k0);
  Value* a = abs_f(e, x);
  Value* zero = b.CreateFCmpOEQ(a, e.cf(x, 0.0f));
  Value* inf = b.CreateNot(is_finite(e, a));
  Value* ok = b.CreateNot(b.CreateOr(b.CreateOr(nan, zero), inf));
  Value* as = b.CreateSelect(ok, a, e.cf(x, 1.0f));
  Value* e0 = floor_log2(e, as);
  Value* e_big = b.CreateICmpSGT(e0, e.c32s(k0, emax));
  Value* e1 = b.CreateSelect(b.CreateICmpSLT(e0, e.c32s(k0, emin)), e.c32s(k0, emin), e0);
  Value* n = b.CreateFMul(as, pow2f(e, b.CreateSub(e.c32s(k0, M), e1)));
  n = b.CreateSelect(e_big, e.cf(x, 0.0f), n);
  Value* i = b.CreateFPToSI(n, e.i32(Emitter::lanes(x)));
  Value* frac = b.CreateFSub(n, to_float(e, i));
  Value* odd = b.CreateICmpNE(b.CreateAnd(i, e.c32(k0, 1)), k0);
  Value* m = b.CreateAdd(
      i, b.CreateZExt(round_up(e, frac, odd, neg, mode, rbits, sr_bits), e.i32(Emitter::lanes(x))));
  Value* sub = b.CreateICmpULT(m, e.c32(k0, 1u << M));
  Value* carry = b.CreateICmpEQ(m, e.c32(k0, 2u << M));
  Value* m2 = b.CreateSelect(carry, b.CreateLShr(m, e.c32(k0, 1)), m);
  Value* e2 = b.CreateSelect(carry, b.CreateAdd(e1, e.c32(k0, 1)), e1);
  Value* e2_big = b.CreateICmpSGT(e2, e.c32s(k0, emax));
  Value* normal = b.CreateOr(b.CreateShl(b.CreateAdd(e2, e.c32s(k0, f.bias)), e.c32(k0, M)),
                             b.CreateSub(m2, e.c32(k0, 1u << M)));
  Value* code = b.CreateSelect(sub, m, normal);
  code = b.CreateSelect(b.CreateICmpUGT(code, e.c32(k0, max_code)), e.c32(k0, top), code);
  code = b.CreateSelect(b.CreateAnd(b.CreateNot(sub), e2_big), e.c32(k0, top), code);
  Value* top_signed = b.CreateOr(e.c32(k0, top), sign);
  Value* res = b.CreateOr(code, sign);
  res = b.CreateSelect(e_big, top_signed, res);
  res = b.CreateSelect(inf, top_signed, res);
  res = b.CreateSelect(zero, sign, res);
  if (!f.has_sign) res = b.CreateSelect(neg, k0, res);
  return b.CreateSelect(nan, e.c32(k0, nx::mf_has_nan(f) ? nx::mf_nan_code(f) : 0u), res);
}

Value* mf_decode(Emitter& e, const nx::MiniFloat& f, Value* code) {
  auto& b = e.b;
  const int M = f.man_bits;
  Value* k0 = e.c32(code, 0);
  Value* neg = b.CreateICmpNE(b.CreateAnd(code, e.c32(code, nx::mf_sign_mask(f))), k0);
  Value* mag = b.CreateAnd(code, e.c32(code, nx::mf_mag_mask(f)));
  Value* nan = b.getFalse();
  if (f.special == nx::Special::all_ones_nan)
    nan = b.CreateICmpEQ(mag, e.c32(code, nx::mf_mag_mask(f)));
  if (f.special == nx::Special::ieee) nan = b.CreateICmpUGT(mag, e.c32(code, nx::mf_inf_code(f)));
  Value* ex = b.CreateLShr(mag, e.c32(code, M));
  Value* m = b.CreateAnd(mag, e.c32(code, (1u << M) - 1u));
  Value* v_sub = b.CreateFMul(to_float(e, m), e.cf(code, nx::pow2f(1 - f.bias - M)));
  Value* v_norm = b.CreateFMul(to_float(e, b.CreateAdd(m, e.c32(code, 1u << M))),
                               pow2f(e, b.CreateSub(ex, e.c32s(code, f.bias + M))));
  Value* v = b.CreateSelect(b.CreateICmpEQ(ex, k0), v_sub, v_norm);
  v = b.CreateSelect(neg, neg_f(e, v), v);
  if (f.special == nx::Special::ieee) {
    Value* inf = b.CreateSelect(neg, e.cf(code, -INFINITY), e.cf(code, INFINITY));
    v = b.CreateSelect(b.CreateICmpEQ(mag, e.c32(code, nx::mf_inf_code(f))), inf, v);
  }
  if (f.special == nx::Special::all_finite) return v;
  return b.CreateSelect(nan, from_bits(e, e.c32(code, 0x7fc00000u)), v);
}

Value* e8m0_decode(Emitter& e, Value* code) {
  Value* v = pow2f(e, e.b.CreateSub(code, e.c32(code, 127)));
  return e.b.CreateSelect(e.b.CreateICmpEQ(code, e.c32(code, nx::kE8M0Nan)),
                          from_bits(e, e.c32(code, 0x7fc00000u)), v);
}

Value* e8m0_from_exponent(Emitter& e, Value* x) {
  auto& b = e.b;
  Value* clamped = b.CreateSelect(b.CreateICmpSLT(x, e.c32s(x, -127)), e.c32s(x, -127), x);
  return b.CreateSelect(b.CreateICmpSGT(clamped, e.c32s(x, 127)), e.c32(x, nx::kE8M0Nan),
                        b.CreateAdd(clamped, e.c32(x, 127)));
}

}  // namespace fp4jit::host::ir
