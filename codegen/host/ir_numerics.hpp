// The numerics of templates/numerics/*.cuh as LLVM IR, operation for operation: the same IEEE
// operations in the same order (separate fmul/fadd, never fused: no fast-math or contract flags),
// the same bit manipulation for floor_log2 / significand / pow2f, the same Philox4x32-10 and the
// same Hadamard butterfly. Branches of the C++ become selects over lanes; inputs of shifts and
// float-to-int conversions are sanitized first so that no lane is ever poison.
// Each function takes scalars or vectors (see Emitter); recipe constants are folded at codegen time
// by calling the C++ numerics themselves.
#pragma once
#include <array>
#include <vector>

#include "codegen/host/emitter.hpp"
#include "numerics/hadamard.cuh"
#include "numerics/minifloat.cuh"
#include "numerics/rounding.cuh"

namespace fp4jit::host::ir {

using llvm::Value;

// Bits and basic predicates (common.cuh).
Value* bits(Emitter& e, Value* x);
Value* from_bits(Emitter& e, Value* u);
Value* is_nan(Emitter& e, Value* x);
Value* is_finite(Emitter& e, Value* x);
Value* sign_bit(Emitter& e, Value* x);
Value* abs_f(Emitter& e, Value* x);
Value* neg_f(Emitter& e, Value* x);  // exact sign flip
Value* min_f(Emitter& e, Value* a, Value* b);
Value* max_f(Emitter& e, Value* a, Value* b);
Value* floor_log2(Emitter& e, Value* a);    // i32; a finite, > 0
Value* significand(Emitter& e, Value* a);   // [1, 2)
Value* pow2f(Emitter& e, Value* exponent);  // i32 in [-149, 127]
Value* to_float(Emitter& e, Value* i);      // small signed i32 -> float (exact)

// Input conversions (exact) and output roundings (common.cuh, host_tensor.cpp).
Value* bf16_to_float(Emitter& e, Value* h);  // i16 lanes
Value* f16_to_float(Emitter& e, Value* h);
Value* float_to_bf16(Emitter& e, Value* x);  // -> i16, nearest even
Value* float_to_f16(Emitter& e, Value* x);   // -> i16, nearest even, overflow to Inf

// Rounding (rounding.cuh): i1 lanes, true = step up. rbits may be null unless mode is stochastic.
Value* round_up(Emitter& e, Value* frac, Value* lo_odd, Value* negative, nx::Round mode,
                Value* rbits, int sr_bits);

// E2M1 (e2m1.cuh): codes as i32 lanes.
Value* e2m1_encode(Emitter& e, Value* v, nx::Round mode, Value* rbits, int sr_bits);
Value* e2m1_decode(Emitter& e, Value* code);

// Generic minifloats and E8M0 (minifloat.cuh).
Value* mf_encode(Emitter& e, const nx::MiniFloat& f, Value* x, nx::Round mode, bool saturate,
                 Value* rbits, int sr_bits);
Value* mf_decode(Emitter& e, const nx::MiniFloat& f, Value* code);
Value* e8m0_decode(Emitter& e, Value* code);
Value* e8m0_from_exponent(Emitter& e, Value* exponent);

// Philox4x32-10 and the stochastic-rounding bits of element `index` (i64 lanes); seed words are
// i32 scalars (philox.cuh).
std::array<Value*, 4> philox4x32_10(Emitter& e, std::array<Value*, 4> ctr, Value* key0,
                                    Value* key1);
Value* sr_bits(Emitter& e, Value* seed_lo, Value* seed_hi, Value* index, int bits);
// The same bits for `lanes` consecutive elements base .. base + lanes - 1 (i64 scalar base): one
// Philox call per 128 bits the run touches instead of one per lane.
Value* sr_bits_chunk(Emitter& e, Value* seed_lo, Value* seed_hi, Value* base, int lanes, int bits);

// Hadamard transform (hadamard.cuh) of one chunk of n values held as parts of equal width
// (n / parts.size() lanes each, in order), in place.
void hadamard(Emitter& e, std::vector<Value*>& parts, int n, const nx::SignMask& signs);

// log2 / exp2 (mathfn.cuh) and the DGE factor (dge.cuh) with k and clip folded.
Value* log2_portable(Emitter& e, Value* x);
Value* exp2_portable(Emitter& e, Value* y);
Value* dge_factor(Emitter& e, Value* v, float k, float clip);

// Scale rules (scale.cuh) from a block statistic: the largest |x| bits of the block, where a value
// >= 0x7f800000 means the block holds a NaN or an Inf.
Value* stat_nonfinite(Emitter& e, Value* stat);
Value* stat_amax(Emitter& e, Value* stat);  // the amax as float (1.0 where non-finite)
Value* scale_ocp_floor(Emitter& e, Value* stat, int emax_elem);          // E8M0 code
Value* scale_ceil_pow2(Emitter& e, Value* stat, float elem_max);         // E8M0 code
Value* scale_ms_pow2_exponent(Emitter& e, Value* stat, float elem_max);  // i32 exponent of sf

}  // namespace fp4jit::host::ir
