// The two consumer warpgroups of the sm90 GEMM (the last 256 threads): each owns 64 rows of the
// tile. Per expanded stage a thread expands its A fragment straight into registers (rows g and g +
// 8 of its warp's 16, 4 wgmma K steps) and issues 4 register-A wgmmas on the stage's B.
//
// Fragment (per K step, 4 registers): a0 = row g, physical k 4t..4t+3 (FP8; 2t, 2t+1 for 16-bit),
// a1 = row g + 8, a2 / a3 = the same rows at k + 16 (k + 8). Thread t of a row group takes packed
// word t of the step (FP8) or block t of the tile (16-bit), the same element order the transform
// warpgroup writes into B.
//
// Accumulation: ms and nv accumulate in the tensor cores across the whole K range (products of
// E2M1 values are exact, and the partial sums stay on the fine grid that the tensor-core
// accumulator keeps); mx and ms_grad, whose per-tile shifts change the scale, promote every stage
// into FP32 registers with the stage's factor (and ms can promote every kPromoteTiles tiles).
#pragma once
#include "gemm/sm90/expand.cuh"
#include "gemm/sm90/smem.cuh"

namespace fp4jit::sm90 {

struct ConsumerRows {
  int r0, r1;  // tile rows of the fragment (r1 = r0 + 8)
  int tig;     // thread in group (lane % 4)
};

// The fragment rows of consumer thread ctid (0..255: warpgroup ctid / 128 owns 64 rows, each of its
// warps 16).
__device__ __forceinline__ ConsumerRows consumer_rows(int ctid) {
  const int lane = ctid & 31;
  ConsumerRows rw;
  rw.r0 = (ctid / 128) * 64 + ((ctid & 127) / 32) * 16 + lane / 4;
  rw.r1 = rw.r0 + 8;
  rw.tig = lane & 3;
  return rw;
}

// acc += tmp * f[row] * g[col] over a fragment of kCols columns: f0 / f1 the factors of rows r0 /
// r1, g one float per column in shared memory at col_factors (kColFactors false: g = 1).
// Fragment element 4 v2 + 2 v1 + v0 is row r(v1), column 8 v2 + 2 tig + v0.
template <int kCols, bool kColFactors, int kAccum>
__device__ __forceinline__ void promote_fragment(const float (&tmp)[kAccum], float f0, float f1,
                                                 unsigned col_factors, int tig,
                                                 float (&acc)[kAccum]) {
#pragma unroll
  for (int v2 = 0; v2 < kCols / 8; ++v2) {
    float g0 = 1.0f, g1 = 1.0f;
    if constexpr (kColFactors) {
      unsigned u0, u1;
      lds64(col_factors + 4 * (8 * v2 + 2 * tig), u0, u1);
      g0 = __uint_as_float(u0);
      g1 = __uint_as_float(u1);
    }
    acc[4 * v2 + 0] = fmaf(tmp[4 * v2 + 0], f0 * g0, acc[4 * v2 + 0]);
    acc[4 * v2 + 1] = fmaf(tmp[4 * v2 + 1], f0 * g1, acc[4 * v2 + 1]);
    acc[4 * v2 + 2] = fmaf(tmp[4 * v2 + 2], f1 * g0, acc[4 * v2 + 2]);
    acc[4 * v2 + 3] = fmaf(tmp[4 * v2 + 3], f1 * g1, acc[4 * v2 + 3]);
  }
}

// Expands one stage's A fragment (16 registers: 4 K steps x a0..a3).
template <class T>
__device__ __forceinline__ void expand_a(const SmemView<T>& sm, int e, const ConsumerRows& rw,
                                         unsigned (&fr)[16]) {
  const unsigned pa = sm.exp_a(e);
  if constexpr ((T::kAblate & 2) != 0) {
#pragma unroll
    for (int i = 0; i < 16; ++i) fr[i] = 0x38383838u;
  } else if constexpr (T::kKind == ScaleKind::ms) {
#pragma unroll
    for (int st = 0; st < 4; ++st) {
      const unsigned w0 = lds32(pa + rw.r0 * 64 + 16 * (st ^ ((rw.r0 >> 1) & 3)) + 4 * rw.tig);
      const unsigned w1 = lds32(pa + rw.r1 * 64 + 16 * (st ^ ((rw.r1 >> 1) & 3)) + 4 * rw.tig);
      e2m1x8_to_e4m3_eo(w0, fr[4 * st + 0], fr[4 * st + 2]);
      e2m1x8_to_e4m3_eo(w1, fr[4 * st + 1], fr[4 * st + 3]);
    }
  } else if constexpr (T::kKind == ScaleKind::mx) {
    const unsigned idx0 = lds32(sm.header(e) + rw.r0 * T::kRowInfoBytes);
    const unsigned idx1 = lds32(sm.header(e) + rw.r1 * T::kRowInfoBytes);
    const unsigned table = sm.table();
#pragma unroll
    for (int st = 0; st < 4; ++st) {
      const unsigned w0 = lds32(pa + rw.r0 * 64 + 16 * (st ^ ((rw.r0 >> 1) & 3)) + 4 * rw.tig);
      const unsigned w1 = lds32(pa + rw.r1 * 64 + 16 * (st ^ ((rw.r1 >> 1) & 3)) + 4 * rw.tig);
      unsigned l0, h0, l1, h1;
      lds64(table + 8 * ((idx0 >> (8 * st)) & 0xFFu), l0, h0);
      lds64(table + 8 * ((idx1 >> (8 * st)) & 0xFFu), l1, h1);
      e2m1x8_to_e4m3_lut(w0, l0, h0, fr[4 * st + 0], fr[4 * st + 2]);
      e2m1x8_to_e4m3_lut(w1, l1, h1, fr[4 * st + 1], fr[4 * st + 3]);
    }
  } else if constexpr (T::kKind == ScaleKind::ms_grad) {
    // E5M2 codes, one byte per element: thread tig takes block tig (bytes 16 tig .. 16 tig + 15)
    // of its rows, word s = elements 4s .. 4s + 3; an E5M2 byte is the high byte of the same FP16.
    unsigned u0[4], u1[4];
    lds128(pa + rw.r0 * 64 + 16 * rw.tig, u0[0], u0[1], u0[2], u0[3]);
    lds128(pa + rw.r1 * 64 + 16 * rw.tig, u1[0], u1[1], u1[2], u1[3]);
#pragma unroll
    for (int st = 0; st < 4; ++st) {
      fr[4 * st + 0] = prmt(u0[st], 0u, 0x1404u);  // (e0, e1) -> two FP16
      fr[4 * st + 2] = prmt(u0[st], 0u, 0x3424u);  // (e2, e3)
      fr[4 * st + 1] = prmt(u1[st], 0u, 0x1404u);
      fr[4 * st + 3] = prmt(u1[st], 0u, 0x3424u);
    }
  } else {
    const unsigned s0 = lds32(sm.header(e) + rw.r0 * T::kRowInfoBytes + 4 * rw.tig);
    const unsigned s1 = lds32(sm.header(e) + rw.r1 * T::kRowInfoBytes + 4 * rw.tig);
    unsigned u0[2], u1[2];
    lds64(pa + rw.r0 * 32 + 8 * rw.tig, u0[0], u0[1]);
    lds64(pa + rw.r1 * 32 + 8 * rw.tig, u1[0], u1[1]);
    // Word h of the block holds steps 2h (low half) and 2h + 1 (high half).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      unsigned l0, l1, h0, h1, m0, m1, g0, g1;
      e2m1x8_to_16bit<T::kBF16>(u0[h], l0, l1, h0, h1);
      e2m1x8_to_16bit<T::kBF16>(u1[h], m0, m1, g0, g1);
      fr[4 * (2 * h) + 0] = mul16x2<T::kBF16>(l0, s0);
      fr[4 * (2 * h) + 2] = mul16x2<T::kBF16>(l1, s0);
      fr[4 * (2 * h) + 1] = mul16x2<T::kBF16>(m0, s1);
      fr[4 * (2 * h) + 3] = mul16x2<T::kBF16>(m1, s1);
      fr[4 * (2 * h + 1) + 0] = mul16x2<T::kBF16>(h0, s0);
      fr[4 * (2 * h + 1) + 2] = mul16x2<T::kBF16>(h1, s0);
      fr[4 * (2 * h + 1) + 1] = mul16x2<T::kBF16>(g0, s1);
      fr[4 * (2 * h + 1) + 3] = mul16x2<T::kBF16>(g1, s1);
    }
  }
}

// kRegs / 4 wgmma K steps (fragment registers fr[4 st .. 4 st + 3]) on the shared-memory operand
// at exp, whose 128-byte swizzle atoms hold 4 K steps each and lie atom_stride bytes apart; the
// first step overwrites d unless `accumulate`.
template <class T, int kRegs>
__device__ __forceinline__ void issue_mma(float (&d)[T::kAccum], const unsigned (&fr)[kRegs],
                                          unsigned exp, bool accumulate,
                                          unsigned atom_stride = 0u) {
  fence_operands(d);
  __syncwarp();
  wgmma_fence();
#pragma unroll
  for (int st = 0; st < ((T::kAblate & 4) ? 0 : kRegs / 4); ++st) {
    const unsigned long long desc = smem_desc_sw128(exp + (st / 4) * atom_stride + 32 * (st % 4));
    const int scale_d = (st > 0 || accumulate) ? 1 : 0;
    if constexpr (T::kFp8) {
      T::MmaFp8::mma(d, fr[4 * st], fr[4 * st + 1], fr[4 * st + 2], fr[4 * st + 3], desc, scale_d);
    } else if constexpr (T::kBF16) {
      T::MmaBF16::mma(d, fr[4 * st], fr[4 * st + 1], fr[4 * st + 2], fr[4 * st + 3], desc, scale_d);
    } else {
      T::MmaF16::mma(d, fr[4 * st], fr[4 * st + 1], fr[4 * st + 2], fr[4 * st + 3], desc, scale_d);
    }
  }
  wgmma_commit();
  fence_operands(d);
}

// Pipeline position of a consumer warpgroup (both warpgroups walk the same stages).
template <class T>
struct ConsumerPipe {
  RingPos<T::kExpStages> ex;
  unsigned* progress =
      nullptr;  // debugging (GemmParams::progress), published by thread 0 of the warpgroup
  int progress_slot = 2;
  bool leader = false;
};

// Waits for the next stage; returns its tile info word.
template <class T>
__device__ __forceinline__ unsigned acquire_stage(const SmemView<T>& sm,
                                                  const ConsumerPipe<T>& pp) {
  mbar_wait(sm.exp_full(pp.ex.slot()), pp.ex.full_parity());
  return lds32(sm.tile_info(pp.ex.slot()));
}

// ms / nv without promotion: one accumulator, wgmma groups of consecutive stages in flight.
template <class T>
__device__ __forceinline__ void mainloop_accumulate(const SmemView<T>& sm, ConsumerPipe<T>& pp,
                                                    const ConsumerRows& rw,
                                                    float (&acc)[T::kAccum]) {
  unsigned fa[16], fb[16];
  bool first = true;
  int prev_e = -1;
  auto stage = [&](unsigned(&fr)[16]) -> bool {
    const unsigned info = acquire_stage(sm, pp);
    const int e = pp.ex.slot();
    expand_a<T>(sm, e, rw, fr);
    issue_mma<T>(acc, fr, sm.exp(e), !first);
    first = false;
    wgmma_wait<1>();
    if (prev_e >= 0) warp_arrive(sm.exp_empty(prev_e));
    prev_e = e;
    ++pp.ex.count;
    if (pp.leader)
      publish_progress(pp.progress, pp.progress_slot, static_cast<unsigned>(pp.ex.count));
    return (info & kUnitLast) != 0;
  };
  while (true) {
    if (stage(fa)) break;
    if (stage(fb)) break;
  }
  wgmma_wait<0>();
  warp_arrive(sm.exp_empty(prev_e));
}

// mx (and ms with promotion): each stage's wgmmas write `tmp`; the next stage's A fragment is
// expanded while they run; then tmp is promoted into `fin` with the stage's factor.
template <class T>
__device__ __forceinline__ void mainloop_promote(const SmemView<T>& sm, ConsumerPipe<T>& pp,
                                                 const ConsumerRows& rw, float (&tmp)[T::kAccum],
                                                 float (&fin)[T::kAccum]) {
  unsigned fa[16], fb[16];
#pragma unroll
  for (int i = 0; i < T::kAccum; ++i) fin[i] = 0.0f;
  unsigned info = acquire_stage(sm, pp);
  expand_a<T>(sm, pp.ex.slot(), rw, fa);
  int in_chain = 0;  // ms: stages accumulated in tmp since the last promotion
  auto stage = [&](unsigned(&cur)[16], unsigned(&nxt)[16]) -> bool {
    const int e = pp.ex.slot();
    issue_mma<T>(tmp, cur, sm.exp(e), in_chain > 0);
    float f0 = 1.0f, f1 = 1.0f;
    if constexpr (T::kKind == ScaleKind::mx) {
      const float fbv = __uint_as_float(lds32(sm.tile_info(e) + 4));
      f0 = __uint_as_float(lds32(sm.header(e) + rw.r0 * T::kRowInfoBytes + 4)) * fbv;
      f1 = __uint_as_float(lds32(sm.header(e) + rw.r1 * T::kRowInfoBytes + 4)) * fbv;
    } else if constexpr (T::kKind == ScaleKind::ms_grad) {
      f0 = f1 = __uint_as_float(lds32(sm.tile_info(e) + 4));
    }
    const bool done = (info & kUnitLast) != 0;
    // Next stage's A while the tensor cores work.
    ConsumerPipe<T> nx = pp;
    ++nx.ex.count;
    if (!done) {
      info = acquire_stage(sm, nx);
      expand_a<T>(sm, nx.ex.slot(), rw, nxt);
    }
    wgmma_wait<0>();
    ++in_chain;
    const bool promote = T::kKind == ScaleKind::mx || done || in_chain == T::kPromoteTiles;
    if (promote) {
#pragma unroll
      for (int i = 0; i < T::kAccum; ++i) fin[i] = fmaf(tmp[i], (i & 2) ? f1 : f0, fin[i]);
      in_chain = 0;
    }
    warp_arrive(sm.exp_empty(e));
    pp = nx;
    if (pp.leader)
      publish_progress(pp.progress, pp.progress_slot, static_cast<unsigned>(pp.ex.count));
    return done;
  };
  while (true) {
    if (stage(fa, fb)) break;
    if (stage(fb, fa)) break;
  }
}

}  // namespace fp4jit::sm90
