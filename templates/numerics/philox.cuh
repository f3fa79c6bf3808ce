// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so any element's random bits follow from (seed, index) alone and the
// CPU and the GPU draw identical bits in any order.
#pragma once
#include "numerics/common.cuh"

namespace fp4jit::nx {

struct U32x4 {
  u32 v[4];
};

FP4JIT_HD void mul_hi_lo(u32 a, u32 b, u32* hi, u32* lo) {
#if defined(__CUDA_ARCH__)
  // One IMAD.WIDE.U32 whose halves are the round's words: written as PTX so that the compiler
  // keeps the rounds in 32-bit arithmetic (from the 64-bit C++ product it built the whole round in
  // 64-bit XORs and adds, one more instruction per product).
  asm("{\n\t.reg .b64 p;\n\tmul.wide.u32 p, %2, %3;\n\tmov.b64 {%1, %0}, p;\n\t}"
      : "=r"(*hi), "=r"(*lo)
      : "r"(a), "r"(b));
#else
  const u64 p = static_cast<u64>(a) * static_cast<u64>(b);
  *hi = static_cast<u32>(p >> 32);
  *lo = static_cast<u32>(p);
#endif
}

// a ^ b ^ c in one LOP3 (the compiler otherwise XORs the key and the carried word first, while
// the product is in flight: two instructions on the integer pipe, which bounds the kernels that
// round stochastically).
FP4JIT_HD u32 xor3(u32 a, u32 b, u32 c) {
  return lop3<0x96u>(a, b, c);
}

FP4JIT_HD U32x4 philox4x32_10(U32x4 ctr, u32 key0, u32 key1) {
  constexpr u32 kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr u32 kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    u32 hi0, lo0, hi1, lo1;
    mul_hi_lo(kM0, ctr.v[0], &hi0, &lo0);
    mul_hi_lo(kM1, ctr.v[2], &hi1, &lo1);
    U32x4 next;
    next.v[0] = xor3(hi1, ctr.v[1], key0);
    next.v[1] = lo1;
    next.v[2] = xor3(hi0, ctr.v[3], key1);
    next.v[3] = lo0;
    ctr = next;
    key0 += kW0;
    key1 += kW1;
  }
  return ctr;
}

// One splitmix64 round: the state after mixing v into h. Seeds of a step: mix_seed(base, step),
// what QuantizeArgs::seed_step makes of a seed (its step read when the work runs) and what
// fp4jit.torch computes for a layer's step on the host.
FP4JIT_HD u64 mix_seed(u64 h, u64 v) {
  h = (h ^ v) + 0x9E3779B97F4A7C15ull;
  u64 z = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Stochastic-rounding bits of element `index` (its row-major position in the quantized operand,
// plus the caller's offset), `bits` (8 or 16) per element. One Philox call yields 128 bits, i.e.
// the bits of 128/bits consecutive elements:
//   counter = {lo32(index / per_call), hi32(index / per_call), 0, 0}
//   key = {lo32(seed), hi32(seed)}
//   element j = index % per_call takes bits [j*bits, (j+1)*bits) of the 128-bit output, output
//   word 0 first, least significant bits first.
FP4JIT_HD u32 sr_bits_from_block(const U32x4& r, u32 j, int bits) {
  const u32 bit = j * static_cast<u32>(bits);
  return (r.v[bit >> 5] >> (bit & 31u)) & ((1u << bits) - 1u);
}
FP4JIT_HD U32x4 sr_block(u64 seed, u64 block) {
  U32x4 ctr{{static_cast<u32>(block), static_cast<u32>(block >> 32), 0u, 0u}};
  return philox4x32_10(ctr, static_cast<u32>(seed), static_cast<u32>(seed >> 32));
}
FP4JIT_HD u32 sr_bits(u64 seed, u64 index, int bits) {
  const u64 per_call = 128u / static_cast<u32>(bits);
  return sr_bits_from_block(sr_block(seed, index / per_call), static_cast<u32>(index % per_call),
                            bits);
}

}  // namespace fp4jit::nx
