// IR for philox.cuh, hadamard.cuh, mathfn.cuh, dge.cuh and scale.cuh.
#include <cmath>

#include "codegen/host/ir_numerics.hpp"
#include "numerics/dge.cuh"
#include "numerics/scale.cuh"

namespace fp4jit::host::ir {

std::array<Value*, 4> philox4x32_10(Emitter& e, std::array<Value*, 4> ctr, Value* key0,
                                    Value* key1) {
  auto& b = e.b;
  const int n = Emitter::lanes(ctr[0]);
  Value* k0 = e.splat(key0, n);
  Value* k1 = e.splat(key1, n);
  const auto mul_hi_lo = [&](std::uint32_t m, Value* c, Value** hi, Value** lo) {
    Value* p = b.CreateMul(b.CreateZExt(c, e.i64(n)), e.c64(c, m));
    *hi = b.CreateTrunc(b.CreateLShr(p, e.c64(c, 32)), e.i32(n));
    *lo = b.CreateTrunc(p, e.i32(n));
  };
  for (int round = 0; round < 10; ++round) {
    Value *hi0, *lo0, *hi1, *lo1;
    mul_hi_lo(0xD2511F53u, ctr[0], &hi0, &lo0);
    mul_hi_lo(0xCD9E8D57u, ctr[2], &hi1, &lo1);
    ctr = {b.CreateXor(b.CreateXor(hi1, ctr[1]), k0), lo1,
           b.CreateXor(b.CreateXor(hi0, ctr[3]), k1), lo0};
    k0 = b.CreateAdd(k0, e.c32(k0, 0x9E3779B9u));
    k1 = b.CreateAdd(k1, e.c32(k1, 0xBB67AE85u));
  }
  return ctr;
}

Value* sr_bits(Emitter& e, Value* seed_lo, Value* seed_hi, Value* index, int nbits) {
  auto& b = e.b;
  const int n = Emitter::lanes(index);
  const std::uint64_t per_call = 128u / static_cast<unsigned>(nbits);
  const std::uint64_t shift = per_call == 16 ? 4 : 3;
  Value* block = b.CreateLShr(index, e.c64(index, shift));
  Value* j = b.CreateTrunc(b.CreateAnd(index, e.c64(index, per_call - 1)), e.i32(n));
  Value* zero = e.c32(j, 0);
  const std::array<Value*, 4> r =
      philox4x32_10(e,
                    {b.CreateTrunc(block, e.i32(n)),
                     b.CreateTrunc(b.CreateLShr(block, e.c64(index, 32)), e.i32(n)), zero, zero},
                    seed_lo, seed_hi);
  Value* bit = b.CreateMul(j, e.c32(j, static_cast<std::uint32_t>(nbits)));
  Value* word = b.CreateLShr(bit, e.c32(j, 5));
  Value* w = b.CreateSelect(b.CreateICmpEQ(word, e.c32(j, 2)), r[2], r[3]);
  w = b.CreateSelect(b.CreateICmpEQ(word, e.c32(j, 1)), r[1], w);
  w = b.CreateSelect(b.CreateICmpEQ(word, zero), r[0], w);
  Value* out = b.CreateLShr(w, b.CreateAnd(bit, e.c32(j, 31)));
  return b.CreateAnd(out, e.c32(j, (1u << nbits) - 1u));
}

Value* sr_bits_chunk(Emitter& e, Value* seed_lo, Value* seed_hi, Value* base, int lanes,
                     int nbits) {
  auto& b = e.b;
  const int per_call = 128 / nbits;
  const int log_per_call = per_call == 16 ? 4 : 3;
  const int calls =
      lanes / per_call + (lanes % per_call == 0 ? 1 : 2);  // blocks the chunk can touch
  // Philox for blocks base / per_call + 0 .. calls - 1, one per lane of a short vector
  Value* blocks = e.iota(b.CreateLShr(base, e.ci64(log_per_call)), calls);
  Value* zero = llvm::ConstantInt::get(e.i32(calls), 0);
  const std::array<Value*, 4> r = philox4x32_10(
      e,
      {b.CreateTrunc(blocks, e.i32(calls)),
       b.CreateTrunc(b.CreateLShr(blocks, e.c64(blocks, 32)), e.i32(calls)), zero, zero},
      seed_lo, seed_hi);
  // lane j is element t = base % per_call + j of that run: block t / per_call, bits (t % per_call)
  // * nbits
  Value* first = b.CreateTrunc(b.CreateAnd(base, e.ci64(per_call - 1)), e.i32());
  std::vector<std::uint32_t> steps;
  for (int j = 0; j < lanes; ++j) steps.push_back(static_cast<std::uint32_t>(j));
  Value* t = b.CreateAdd(e.splat(first, lanes), llvm::ConstantDataVector::get(e.ctx, steps));
  Value* bit = b.CreateMul(b.CreateAnd(t, e.c32(t, static_cast<std::uint32_t>(per_call - 1))),
                           e.c32(t, static_cast<std::uint32_t>(nbits)));
  Value* q = b.CreateOr(
      b.CreateShl(b.CreateLShr(t, e.c32(t, static_cast<std::uint32_t>(log_per_call))), e.c32(t, 2)),
      b.CreateLShr(bit, e.c32(t, 5)));
  Value* w = e.c32(t, 0);
  for (int k = 0; k < calls; ++k)
    for (int word = 0; word < 4; ++word) {
      Value* cand = e.splat(
          b.CreateExtractElement(r[static_cast<std::size_t>(word)], static_cast<std::uint64_t>(k)),
          lanes);
      w = b.CreateSelect(b.CreateICmpEQ(q, e.c32(t, static_cast<std::uint32_t>(4 * k + word))),
                         cand, w);
    }
  return b.CreateAnd(b.CreateLShr(w, b.CreateAnd(bit, e.c32(t, 31))), e.c32(t, (1u << nbits) - 1u));
}

void hadamard(Emitter& e, std::vector<Value*>& parts, int n, const nx::SignMask& signs) {
  auto& b = e.b;
  const int w = n / static_cast<int>(parts.size());
  // signs: an exact flip of the sign bit
  for (std::size_t p = 0; p < parts.size(); ++p) {
    std::vector<std::uint32_t> mask(static_cast<std::size_t>(w));
    bool any = false;
    for (int i = 0; i < w; ++i) {
      const bool negative = nx::sign_negative(signs, static_cast<int>(p) * w + i);
      mask[static_cast<std::size_t>(i)] = negative ? 0x80000000u : 0u;
      any = any || negative;
    }
    if (!any) continue;
    Value* m = llvm::ConstantDataVector::get(e.ctx, mask);
    if (w == 1) m = e.c32(parts[p], mask[0]);
    parts[p] = from_bits(e, b.CreateXor(bits(e, parts[p]), m));
  }
  for (int h = 1; h < n; h <<= 1) {
    if (h >= w) {  // between parts: v[j] = a + b, v[j + h] = a + (-b)
      const std::size_t step = static_cast<std::size_t>(h / w);
      for (std::size_t p = 0; p < parts.size(); ++p) {
        if ((p / step) % 2 != 0) continue;
        Value *lo = parts[p], *hi = parts[p + step];
        parts[p] = b.CreateFAdd(lo, hi);
        parts[p + step] = b.CreateFAdd(lo, neg_f(e, hi));
      }
      continue;
    }
    // within a part: u = v[i ^ h]; lanes with bit h clear take v + u, the others u + (-v)
    std::vector<int> partner(static_cast<std::size_t>(w)), blend(static_cast<std::size_t>(w));
    for (int i = 0; i < w; ++i) {
      partner[static_cast<std::size_t>(i)] = i ^ h;
      blend[static_cast<std::size_t>(i)] = (i & h) ? i + w : i;
    }
    for (Value*& v : parts) {
      Value* u = b.CreateShuffleVector(v, v, partner);
      Value* sum = b.CreateFAdd(v, u);
      Value* diff = b.CreateFAdd(u, neg_f(e, v));
      v = b.CreateShuffleVector(sum, diff, blend);
    }
  }
  const float norm = nx::hadamard_norm(n);
  for (Value*& v : parts) v = b.CreateFMul(v, e.cf(v, norm));
}

Value* log2_portable(Emitter& e, Value* x) {
  auto& b = e.b;
  Value* ex = floor_log2(e, x);
  Value* m = significand(e, x);
  Value* big = b.CreateFCmpOGT(m, e.cf(x, 1.41421356f));
  m = b.CreateSelect(big, b.CreateFMul(m, e.cf(x, 0.5f)), m);
  ex = b.CreateSelect(big, b.CreateAdd(ex, e.c32(ex, 1)), ex);
  Value* s = b.CreateFDiv(b.CreateFAdd(m, e.cf(x, -1.0f)), b.CreateFAdd(m, e.cf(x, 1.0f)));
  Value* s2 = b.CreateFMul(s, s);
  Value* p = e.cf(x, 1.0f / 13.0f);
  for (float c : {1.0f / 11.0f, 1.0f / 9.0f, 1.0f / 7.0f, 1.0f / 5.0f, 1.0f / 3.0f, 1.0f})
    p = b.CreateFAdd(b.CreateFMul(p, s2), e.cf(x, c));
  const float two_over_ln2 = 2.8853900817779268f;
  return b.CreateFAdd(to_float(e, ex), b.CreateFMul(b.CreateFMul(s, p), e.cf(x, two_over_ln2)));
}

Value* exp2_portable(Emitter& e, Value* y) {
  auto& b = e.b;
  Value* low = b.CreateFCmpOLT(y, e.cf(y, -126.0f));
  Value* high = b.CreateFCmpOGT(y, e.cf(y, 127.0f));
  Value* out_of_range = b.CreateOr(b.CreateOr(low, high), b.CreateFCmpUNO(y, y));  // sanitized to 0
  Value* ys = b.CreateSelect(out_of_range, e.cf(y, 0.0f), y);
  Value* shifted = b.CreateFAdd(ys, e.cf(y, 12582912.0f));
  Value* nf = b.CreateFAdd(shifted, e.cf(y, -12582912.0f));
  Value* n = b.CreateFPToSI(nf, e.i32(Emitter::lanes(y)));
  Value* f = b.CreateFAdd(ys, neg_f(e, nf));
  Value* t = b.CreateFMul(f, e.cf(y, 0.69314718055994531f));
  Value* p = e.cf(y, 1.0f / 362880.0f);
  for (float c : {1.0f / 40320.0f, 1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                  1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = b.CreateFAdd(b.CreateFMul(p, t), e.cf(y, c));
  Value* r = b.CreateFMul(p, pow2f(e, n));
  return b.CreateSelect(low, e.cf(y, 0.0f), b.CreateSelect(high, e.cf(y, INFINITY), r));
}

Value* dge_factor(Emitter& e, Value* v, float k, float clip) {
  auto& b = e.b;
  Value* a = min_f(e, abs_f(e, v), e.cf(v, 6.0f));
  Value* below2 = b.CreateFCmpOLT(a, e.cf(v, 2.0f));
  Value* below4 = b.CreateFCmpOLT(a, e.cf(v, 4.0f));
  Value* safe = b.CreateSelect(is_nan(e, v), e.cf(v, 0.0f), a);
  Value* n =
      b.CreateSelect(below2, b.CreateFMul(safe, e.cf(v, 2.0f)), b.CreateFSub(safe, e.cf(v, 2.0f)));
  n = b.CreateSelect(below4, n, e.cf(v, 0.0f));
  Value* whole =
      b.CreateSIToFP(b.CreateFPToSI(n, e.i32(Emitter::lanes(v))), e.f32(Emitter::lanes(v)));
  Value* t12 =
      b.CreateFAdd(b.CreateFMul(b.CreateFAdd(n, neg_f(e, whole)), e.cf(v, 2.0f)), e.cf(v, -1.0f));
  Value* t3 = b.CreateFAdd(b.CreateFSub(a, e.cf(v, 4.0f)), e.cf(v, -1.0f));
  Value* t = abs_f(e, b.CreateSelect(below4, t12, t3));
  const float inv_k = nx::div_rn(1.0f, k);
  const float power = nx::add_rn(inv_k, -1.0f);
  float at_zero = 0.0f;  // 0^power: +inf (clipped) for k > 1, 1 for k = 1, 0 for k < 1
  if (power < 0.0f)
    at_zero = clip;
  else if (power == 0.0f)
    at_zero = nx::min_f(inv_k, clip);
  Value* is_zero = b.CreateFCmpOEQ(t, e.cf(v, 0.0f));
  Value* ts = b.CreateSelect(is_zero, e.cf(v, 1.0f), t);
  Value* f = b.CreateFMul(e.cf(v, inv_k),
                          exp2_portable(e, b.CreateFMul(e.cf(v, power), log2_portable(e, ts))));
  Value* out = b.CreateSelect(is_zero, e.cf(v, at_zero), min_f(e, f, e.cf(v, clip)));
  return b.CreateSelect(is_nan(e, v), v, out);
}

Value* stat_nonfinite(Emitter& e, Value* stat) {
  return e.b.CreateICmpUGE(stat, e.c32(stat, 0x7f800000u));
}

Value* stat_amax(Emitter& e, Value* stat) {
  return e.b.CreateSelect(stat_nonfinite(e, stat), e.cf(stat, 1.0f), from_bits(e, stat));
}

Value* scale_ocp_floor(Emitter& e, Value* stat, int emax_elem) {
  auto& b = e.b;
  Value* amax = stat_amax(e, stat);
  Value* zero = b.CreateFCmpOEQ(amax, e.cf(stat, 0.0f));
  Value* fl = floor_log2(e, b.CreateSelect(zero, e.cf(stat, 1.0f), amax));
  Value* ex = b.CreateSub(b.CreateSelect(zero, e.c32s(stat, -126), fl),
                          e.c32(stat, static_cast<std::uint32_t>(emax_elem)));
  return b.CreateSelect(stat_nonfinite(e, stat), e.c32(stat, nx::kE8M0Nan),
                        e8m0_from_exponent(e, ex));
}

Value* scale_ceil_pow2(Emitter& e, Value* stat, float elem_max) {
  auto& b = e.b;
  Value* amax = stat_amax(e, stat);
  Value* a = b.CreateSelect(b.CreateFCmpOEQ(amax, e.cf(stat, 0.0f)), e.cf(stat, 1e-8f), amax);
  const int eb = nx::floor_log2(elem_max);
  Value* diff = b.CreateSub(floor_log2(e, a), e.c32s(stat, eb));
  Value* le = b.CreateFCmpOLE(significand(e, a), e.cf(stat, nx::significand(elem_max)));
  Value* ex = b.CreateSelect(le, diff, b.CreateAdd(diff, e.c32(stat, 1)));
  ex = b.CreateSelect(b.CreateICmpSGT(ex, e.c32(stat, 127)), e.c32(stat, 127), ex);
  return b.CreateSelect(stat_nonfinite(e, stat), e.c32(stat, nx::kE8M0Nan),
                        e8m0_from_exponent(e, ex));
}

Value* scale_ms_pow2_exponent(Emitter& e, Value* stat, float elem_max) {
  auto& b = e.b;
  Value* amax = stat_amax(e, stat);
  Value* zero = b.CreateFCmpOEQ(amax, e.cf(stat, 0.0f));
  Value* a = b.CreateSelect(zero, e.cf(stat, 1.0f), amax);
  const int eb = nx::floor_log2(elem_max);
  Value* diff = b.CreateSub(e.c32s(stat, eb), floor_log2(e, a));
  Value* le = b.CreateFCmpOLE(significand(e, a), e.cf(stat, nx::significand(elem_max)));
  Value* ex = b.CreateSelect(le, diff, b.CreateSub(diff, e.c32(stat, 1)));
  ex = b.CreateSelect(b.CreateICmpSGT(ex, e.c32s(stat, 126)), e.c32s(stat, 126), ex);
  ex = b.CreateSelect(b.CreateICmpSLT(ex, e.c32s(stat, -126)), e.c32s(stat, -126), ex);
  return b.CreateSelect(b.CreateOr(zero, stat_nonfinite(e, stat)), e.c32(stat, 0), ex);
}

}  // namespace fp4jit::host::ir
