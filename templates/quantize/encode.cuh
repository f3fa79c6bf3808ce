// From a block's stat word to its stored scale and encode factor, and from a scaled element to
// its code: the same calls, in the same order, as reference/quantize.cpp (block_scale,
// encode_element), which is what makes the kernels bit-identical to it.
#pragma once
#include "numerics/e2m1.cuh"
#include "numerics/fast_encode.cuh"
#include "numerics/minifloat.cuh"
#include "numerics/philox.cuh"
#include "numerics/scale.cuh"
#include "quantize/args.cuh"
#include "quantize/device.cuh"

namespace fp4jit::kern {

struct BlockScale {
  u32 code;      // stored scale code (code formats)
  float value;   // stored decode factor (fp32 scales)
  float factor;  // what elements are multiplied (or divided) by
  bool nan;      // non-finite block: NaN scale, every code 0
  bool divide;   // absmax: elements are x / factor
};

// s_enc of a two-level operand from its global finite amax.
template <class Op>
FP4JIT_DEV float tensor_scale(float global_amax) {
  return nx::two_level_tensor_scale(global_amax, Op::scale_max, elem_max(Op::elem));
}

// s_enc of a two-level operand in the quantize phase: from the caller's amax (delayed scaling)
// or the stats pass's.
template <class Op>
FP4JIT_DEV float operand_s_enc(const OperandOut& o) {
  return tensor_scale<Op>(o.amax_in != nullptr ? *o.amax_in : nx::bits_float(*o.amax_bits));
}

template <class Op>
FP4JIT_DEV BlockScale block_scale(u32 stat, float s_enc) {
  BlockScale out{0u, 0.0f, 1.0f, false, false};
  const bool nonfinite = stat == kNonFinite;
  const float amax = nonfinite ? 0.0f : nx::bits_float(stat);
  constexpr float emax_value = elem_max(Op::elem);
  if constexpr (Op::rule == Rule::ocp_floor || Op::rule == Rule::ceil_pow2) {
    // From the stat word's bits (kNonFinite is >= 0x7f800000): the float rules' codes.
    out.code = Op::rule == Rule::ocp_floor ? nx::scale_ocp_floor_bits(stat, elem_emax(Op::elem))
                                           : nx::scale_ceil_pow2_bits(stat, emax_value);
    out.nan = out.code == nx::kE8M0Nan;
    if (!out.nan) out.factor = nx::pow2f(127 - static_cast<int>(out.code));
  } else if constexpr (Op::rule == Rule::ms_pow2) {
    const float a = nonfinite ? nx::bits_float(0x7f800000u) : amax;
    const int e = nx::scale_ms_pow2_exponent(a, emax_value);
    out.factor = nx::pow2f(e);
    out.value = nx::pow2f(-e);
    out.code = nx::e8m0_from_exponent(-e);
  } else if constexpr (Op::rule == Rule::two_level) {
    const nx::MiniFloat fmt = scale_minifloat(Op::scale);
    if (nonfinite) {
      out.nan = true;
      out.code = nx::mf_has_nan(fmt) ? nx::mf_nan_code(fmt) : nx::mf_max_code(fmt);
    } else {
      out.code = nx::two_level_block_scale(fmt, amax, s_enc, emax_value);
      out.factor = nx::two_level_encode_factor(fmt, out.code, s_enc);
    }
  } else {  // absmax
    if (nonfinite) {
      out.nan = true;
      out.value = nx::bits_float(0x7fc00000u);
    } else {
      out.value = nx::scale_absmax(amax, emax_value);
      out.factor = out.value;
      out.divide = true;
    }
  }
  return out;
}

template <class Op>
FP4JIT_DEV void store_scale(void* scales, i64 i, const BlockScale& b) {
  if constexpr (scale_is_code(Op::scale)) {
    static_cast<u8*>(scales)[i] = static_cast<u8>(b.code);
  } else {
    static_cast<float*>(scales)[i] = b.value;
  }
}

// Which BlockScale flags a rule can set: only absmax divides, and msfp4's power-of-two rule never
// gives a NaN scale (a non-finite block takes sf = 1). Kernels test the flags only where they can
// be set, so a scale read from shared memory is its factor alone.
template <class Op>
FP4JIT_CONSTEXPR bool scale_divides() {
  return Op::rule == Rule::absmax;
}
template <class Op>
FP4JIT_CONSTEXPR bool scale_can_nan() {
  return Op::rule != Rule::ms_pow2;
}
template <class Op>
FP4JIT_DEV bool scale_nan(const BlockScale& b) {
  return scale_can_nan<Op>() && b.nan;
}

template <class Op>
FP4JIT_DEV float apply_scale(float x, const BlockScale& b) {
  if constexpr (scale_divides<Op>())
    return b.divide ? nx::div_rn(x, b.factor) : nx::mul_rn(x, b.factor);
  return nx::mul_rn(x, b.factor);
}

// One scaled element to its code. Finite values saturate; Inf stays Inf in formats that have it
// (E5M2); NaN encodes as the format's NaN (E2M1: 0).
template <class Op>
FP4JIT_DEV u32 encode_element(float v, u32 rbits) {
  if constexpr (Op::elem == Elem::e2m1 && Op::round != nx::Round::stochastic) {
    return nx::e2m1_encode_fma(v, Op::round);  // == nx::e2m1_encode, in three FMAs
  } else if constexpr (Op::elem == Elem::e2m1) {
    return nx::e2m1_encode_fast(v, Op::round, rbits, Op::sr_bits);  // == nx::e2m1_encode
  } else {
    const nx::MiniFloat fmt = elem_minifloat(Op::elem);
    const bool keep_inf = !nx::is_finite(v) && !nx::is_nan(v) && fmt.special == nx::Special::ieee;
    return nx::mf_encode(fmt, v, Op::round, !keep_inf, rbits, Op::sr_bits);
  }
}

// Element value of a code (what dequantize and double quantization read back).
template <class Op>
FP4JIT_DEV float decode_element(u32 code) {
  if constexpr (Op::elem == Elem::e2m1) {
    return nx::e2m1_decode(code);
  } else {
    const nx::MiniFloat fmt = elem_minifloat(Op::elem);
    return nx::mf_decode(fmt, code);
  }
}

// Decode factor of a stored scale.
template <class Op>
FP4JIT_DEV double decode_scale(const void* scales, i64 i) {
  if constexpr (Op::scale == ScaleFmt::e8m0) {
    return nx::e8m0_decode(static_cast<const u8*>(scales)[i]);
  } else if constexpr (Op::scale == ScaleFmt::fp32) {
    return static_cast<const float*>(scales)[i];
  } else {
    const nx::MiniFloat fmt = scale_minifloat(Op::scale);
    return nx::mf_decode(fmt, static_cast<const u8*>(scales)[i]);
  }
}

// Word w (0..3) of a Philox output without indexing an array by a run-time value.
FP4JIT_DEV u32 philox_word(const nx::U32x4& r, u32 w) {
  return w == 0 ? r.v[0] : (w == 1 ? r.v[1] : (w == 2 ? r.v[2] : r.v[3]));
}

// Stochastic-rounding bits of kVec consecutive elements starting at index i0: the same bits as
// nx::sr_bits(seed, i0 + e, bits), from at most two Philox calls.
template <class Op>
FP4JIT_DEV void sr_bits_vec(u64 seed, u64 i0, u32 (&rbits)[kVec]) {
  constexpr u32 bits = Op::sr_bits;
  constexpr u32 per = 128u / bits;
  static_assert(kVec <= per, "a thread's elements span at most two Philox calls");
  const u64 blk = i0 / per;
  const u32 j0 = static_cast<u32>(i0 % per);
  const nx::U32x4 r0 = nx::sr_block(seed, blk);
  nx::U32x4 r1 = r0;
  if (j0 + kVec > per) r1 = nx::sr_block(seed, blk + 1);
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    const u32 j = j0 + e;
    const bool second = j >= per;
    const u32 bit = (second ? j - per : j) * bits;
    // Select a word, never a reference to either output (which would put both on the stack).
    const u32 word = second ? philox_word(r1, bit >> 5) : philox_word(r0, bit >> 5);
    rbits[e] = (word >> (bit & 31u)) & ((1u << bits) - 1u);
  }
}

}  // namespace fp4jit::kern
