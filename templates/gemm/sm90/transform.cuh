// The transform warpgroup of the sm90 GEMM (threads 0..127): issues the TMA loads of packed tiles
// (thread 0), reads the block scales, expands B into the swizzled FP8 / 16-bit operand the
// consumers' wgmmas read, and writes the per-row A information the consumers expand A with.
//
// Scale handling per kind (config.cuh):
//   ms  nothing per tile (row scales are applied in the epilogue); B = E2M1 * 2^-6 in E4M3.
//   mx  per K tile: A reference r[m] = max exponent of row m's 4 blocks, B reference R = max over
//       the tile's rows and blocks. A block with exponent e is expanded as E2M1 * 2^(t - 8),
//       t = 14 - (r - e) (resp. R - e): exact while r - e <= 14. Blocks further down go to later
//       passes, band p covering r - e in [15p, 15p + 14]; pass (pA, pB) promotes with factor
//       2^(r - 133 - 15 pA) * 2^(R - 133 - 15 pB) (exponents biased by 127). One pass when every
//       block is within 14 binades of its reference: the common case.
//   nv  per K tile: each (row, 16-block) scale decoded once through a 256-entry table into the
//       16-bit type; the expansion multiplies E2M1 values by it, exactly.
//   ms_grad  per K tile: the power-of-two scales of the tile's 64 B columns, reference R = the
//       largest exponent; column k is expanded as E2M1 * 2^(13 - (R - e_k)) in FP16, exact while
//       R - e_k <= 36 (E2M1 * 2^s is an FP16 value for s in [-23, 13]); columns further down go
//       to later passes, band p covering R - e_k in [37p, 37p + 36], pass p promoting with
//       2^(R - 13 - 37p). A needs nothing per tile (one per-tensor scale, in the epilogue).
#pragma once
#include "gemm/sm90/expand.cuh"
#include "gemm/sm90/scheduler.cuh"
#include "gemm/sm90/smem.cuh"

namespace fp4jit::sm90 {

constexpr unsigned kAbsent = 0x100u;  // a scale outside the tensor (row >= rows or block >= K / block)
constexpr unsigned kE8M0Nan = 0xFFu;

// ms_grad column codes: floor(log2(scale)) + kColBias for a finite non-zero scale, else:
constexpr unsigned kColAbsent = 0u;      // outside the tensor, or a zero scale: the column adds 0
constexpr unsigned kColNan = 0xFFFFu;    // NaN or Inf scale: the column makes the product NaN
constexpr int kColBias = 160;            // floor_log2 of a float lies in [-149, 127]
constexpr int kColWindow = 37;           // binades of one pass (FP16-exact shifts -23..13)
constexpr int kColTop = 13;              // shift of the reference column

__device__ __forceinline__ unsigned col_code(float v) {
  if (!nx::is_finite(v)) return kColNan;
  if (v == 0.0f) return kColAbsent;
  return static_cast<unsigned>(nx::floor_log2(fabsf(v)) + kColBias);
}

// FP16 bits of 2^s, s in [-24, 15].
__device__ __forceinline__ unsigned f16_pow2_bits(int s) {
  return s >= -14 ? static_cast<unsigned>(s + 15) << 10 : 1u << (s + 24);
}

// Walks a CTA's (work unit, K tile) sequence.
template <class Sched>
struct TileIter {
  const Sched* sched;
  int u;
  WorkUnit w;
  int kt;
  bool valid;
  __device__ __forceinline__ explicit TileIter(const Sched& s) : sched(&s), u(blockIdx.x), kt(0) {
    valid = u < s.units;
    if (valid) {
      w = s.unit(u);
      kt = w.kt_begin;
    }
  }
  __device__ __forceinline__ bool last_of_unit() const { return kt + 1 == w.kt_end; }
  __device__ __forceinline__ void advance() {
    if (++kt < w.kt_end) return;
    u += gridDim.x;
    valid = u < sched->units;
    if (valid) {
      w = sched->unit(u);
      kt = w.kt_begin;
    }
  }
};

__device__ __forceinline__ unsigned load_code(const unsigned char* base, int ld, int row, int rows_valid,
                                              int block_rows, int kb, int kb_valid) {
  if (row >= rows_valid || kb >= kb_valid) return kAbsent;
  return __ldg(base + static_cast<long long>(row / block_rows) * ld + kb);
}

// 2^e as a float for any integer e (0 below the subnormal range, inf above).
__device__ __forceinline__ float pow2i(int e) {
  if (e < -149) return 0.0f;
  if (e > 127) return __int_as_float(0x7f800000);
  return nx::pow2f(e);
}

// E4M3 table index of a block for reference `ref` in band `band`.
__device__ __forceinline__ unsigned lut_index(unsigned code, unsigned ref, int band) {
  if (code == kAbsent) return kLutZero;
  if (code == kE8M0Nan) return kLutNan;
  const int d = static_cast<int>(ref) - static_cast<int>(code);
  return d / 15 == band ? static_cast<unsigned>(14 - d + 15 * band) : static_cast<unsigned>(kLutZero);
}

// Scale codes one transform thread needs for one K tile.
template <class T>
struct TileScales {
  static constexpr int kTT = T::kTransformThreads;
  static constexpr int kBCodes = T::kKind == ScaleKind::mx ? T::BLOCK_N * 4 / kTT
                                 : T::kKind == ScaleKind::nv ? 4 * ((T::BLOCK_N + kTT - 1) / kTT)
                                                             : 1;  // ms_grad: the column code of column tid
  unsigned a[4];
  unsigned b[kBCodes];
};

// Thread tid of the transform warpgroup(s) holds A row tid (tid < BLOCK_M) and the B units
//   mx: (row tid / 4 + (kTT / 4) k, block tid % 4), k < kBCodes;  nv: rows tid + kTT k.
template <class Cfg, class T>
__device__ __forceinline__ void load_tile_scales(TileScales<T>& s, const GemmParams& p, const WorkUnit& w, int kt) {
  const int tid = threadIdx.x;
  constexpr int kTT = T::kTransformThreads;
  const int arow = tid < T::BLOCK_M ? w.m0 + tid : p.M;  // rows >= M read nothing
  if constexpr (T::kKind == ScaleKind::mx) {
    const int nkb = p.K / 32;
#pragma unroll
    for (int b = 0; b < 4; ++b) s.a[b] = load_code(p.a_scale, p.a_scale_ld, arow, p.M, 1, kt * 4 + b, nkb);
#pragma unroll
    for (int k = 0; k < TileScales<T>::kBCodes; ++k)
      s.b[k] = load_code(p.b_scale, p.b_scale_ld, w.n0 + tid / 4 + (kTT / 4) * k, p.N, 1, kt * 4 + (tid & 3), nkb);
  } else if constexpr (T::kKind == ScaleKind::nv) {
    const int nkb = p.K / 16;
#pragma unroll
    for (int b = 0; b < 4; ++b)
      s.a[b] = load_code(p.a_scale, p.a_scale_ld, arow, p.M, Cfg::kABlockRows, kt * 4 + b, nkb);
#pragma unroll
    for (int k = 0; k < TileScales<T>::kBCodes / 4; ++k)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int n = tid + kTT * k;
        s.b[4 * k + b] = load_code(p.b_scale, p.b_scale_ld, n < T::BLOCK_N ? w.n0 + n : p.N, p.N,
                                   Cfg::kBBlockRows, kt * 4 + b, nkb);
      }
  } else if constexpr (T::kKind == ScaleKind::ms_grad) {
    const int k = kt * T::BLOCK_K + tid;
    s.b[0] = (tid < T::BLOCK_K && k < p.K) ? col_code(__ldg(p.b_col_scale + k)) : kColAbsent;
  }
}

// Copies the packed A tile (BLOCK_M x kPackedRow bytes, swizzle kept) into the expanded stage.
template <class T>
__device__ __forceinline__ void copy_a(unsigned packed_a, unsigned dst) {
  constexpr int kVecs = T::BLOCK_M * T::kPackedRowA / 16;
#pragma unroll
  for (int i = 0; i < (kVecs + T::kTransformThreads - 1) / T::kTransformThreads; ++i) {
    const int v = threadIdx.x + i * T::kTransformThreads;
    if (v < kVecs) {
      unsigned a, b, c, d;
      lds128(packed_a + 16 * v, a, b, c, d);
      sts128(dst + 16 * v, a, b, c, d);
    }
  }
}

// ---- B expansion, one K tile -------------------------------------------------------------------

// ms: 16 packed bytes (one 32-element step of one row) -> two 16-byte chunks of the swizzled row.
// Every unit's loads are issued before any is used (latency overlap within one warp).
template <class T>
__device__ __forceinline__ void expand_b_ms(unsigned packed_b, unsigned exp) {
  constexpr int kU = T::BLOCK_N * 4 / T::kTransformThreads;
  static_assert(kU * T::kTransformThreads == T::BLOCK_N * 4, "B units per thread");
  unsigned w[kU][4];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int q = threadIdx.x + T::kTransformThreads * u, n = q >> 2, st = q & 3;
    lds128(packed_b + n * 64 + 16 * (st ^ ((n >> 1) & 3)), w[u][0], w[u][1], w[u][2], w[u][3]);
  }
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int q = threadIdx.x + T::kTransformThreads * u, n = q >> 2, st = q & 3;
    unsigned ev[4], od[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) e2m1x8_to_e4m3_eo(w[u][i], ev[i], od[i]);
    const unsigned row = exp + n * 128;
    sts128(row + 16 * ((2 * st) ^ (n & 7)), ev[0], ev[1], ev[2], ev[3]);
    sts128(row + 16 * ((2 * st + 1) ^ (n & 7)), od[0], od[1], od[2], od[3]);
  }
}

// mx: as ms, through the E4M3 table of the (row, block)'s shift (one unit at a time: the
// transform's registers also hold the tile's scale codes and references).
template <class T>
__device__ __forceinline__ void expand_b_mx(unsigned packed_b, unsigned exp, unsigned table, const TileScales<T>& s,
                                            unsigned ref, int band) {
#pragma unroll
  for (int k = 0; k < TileScales<T>::kBCodes; ++k) {
    const int n = threadIdx.x / 4 + (T::kTransformThreads / 4) * k, st = threadIdx.x & 3;
    unsigned w[4], lo[4], hi[4], lut_lo, lut_hi;
    lds128(packed_b + n * 64 + 16 * (st ^ ((n >> 1) & 3)), w[0], w[1], w[2], w[3]);
    lds64(table + 8 * lut_index(s.b[k], ref, band), lut_lo, lut_hi);
#pragma unroll
    for (int i = 0; i < 4; ++i) e2m1x8_to_e4m3_lut(w[i], lut_lo, lut_hi, lo[i], hi[i]);
    const unsigned row = exp + n * 128;
    sts128(row + 16 * ((2 * st) ^ (n & 7)), lo[0], lo[1], lo[2], lo[3]);
    sts128(row + 16 * ((2 * st + 1) ^ (n & 7)), hi[0], hi[1], hi[2], hi[3]);
  }
}

template <class T>
__device__ __forceinline__ unsigned nv_scale2(unsigned table, unsigned code) {
  if (code == kAbsent) return 0u;
  const unsigned h = lds32(table + 2 * (code & ~1u));  // two 16-bit entries
  const unsigned v = (code & 1u) ? (h >> 16) : (h & 0xFFFFu);
  return v | (v << 16);
}

// nv, interleaved: the thread's rows (BLOCK_N a multiple of the transform threads) are expanded
// together, half a row (steps 2h, 2h + 1 of every block) at a time: 8 independent expansions per
// phase instead of 4, and 4 stores per row and phase.
template <class T>
__device__ __forceinline__ void expand_b_nv_interleaved(unsigned packed_b, unsigned exp, unsigned table,
                                                        const TileScales<T>& s) {
  constexpr int kRows = T::BLOCK_N / T::kTransformThreads;
  static_assert(kRows * T::kTransformThreads == T::BLOCK_N, "rows per thread");
  unsigned w[kRows][8], sc[kRows][4];
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const int n = threadIdx.x + T::kTransformThreads * k;
    lds128(packed_b + n * 32, w[k][0], w[k][1], w[k][2], w[k][3]);
    lds128(packed_b + n * 32 + 16, w[k][4], w[k][5], w[k][6], w[k][7]);
  }
#pragma unroll
  for (int k = 0; k < kRows; ++k)
#pragma unroll
    for (int b = 0; b < 4; ++b) sc[k][b] = nv_scale2<T>(table, s.b[4 * k + b]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    unsigned c[kRows][4][4];  // [row][chunk 4h + j][block]
#pragma unroll
    for (int k = 0; k < kRows; ++k)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        unsigned l0, l1, h0, h1;
        e2m1x8_to_16bit<T::kBF16>(w[k][2 * b + h], l0, l1, h0, h1);
        c[k][0][b] = mul16x2<T::kBF16>(l0, sc[k][b]);
        c[k][1][b] = mul16x2<T::kBF16>(l1, sc[k][b]);
        c[k][2][b] = mul16x2<T::kBF16>(h0, sc[k][b]);
        c[k][3][b] = mul16x2<T::kBF16>(h1, sc[k][b]);
      }
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int n = threadIdx.x + T::kTransformThreads * k;
      const unsigned row = exp + n * 128;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        sts128(row + 16 * ((4 * h + j) ^ (n & 7)), c[k][j][0], c[k][j][1], c[k][j][2], c[k][j][3]);
    }
  }
}

// nv: one row per thread: 32 packed bytes (4 blocks of 16) -> 8 chunks of 8 16-bit values.
// Chunk 2*st holds, for block b, elements (4st, 4st+1) of the block; chunk 2*st+1 elements
// (4st+2, 4st+3): the order the consumers' A fragments use. Word 2b + h of the row holds steps
// 2h (low half) and 2h + 1 (high half) of block b.
template <class T>
__device__ __forceinline__ void expand_b_nv(unsigned packed_b, unsigned exp, unsigned table, const TileScales<T>& s) {
  constexpr int kRows = (T::BLOCK_N + T::kTransformThreads - 1) / T::kTransformThreads;
  unsigned w[kRows][8];
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const int n = threadIdx.x + T::kTransformThreads * k;
    if (n < T::BLOCK_N) {
      lds128(packed_b + n * 32, w[k][0], w[k][1], w[k][2], w[k][3]);
      lds128(packed_b + n * 32 + 16, w[k][4], w[k][5], w[k][6], w[k][7]);
    }
  }
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const int n = threadIdx.x + T::kTransformThreads * k;
    if (n >= T::BLOCK_N) break;
    unsigned sc[4], c[8][4];
#pragma unroll
    for (int b = 0; b < 4; ++b) sc[b] = nv_scale2<T>(table, s.b[4 * k + b]);
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        unsigned l0, l1, h0, h1;
        e2m1x8_to_16bit<T::kBF16>(w[k][2 * b + h], l0, l1, h0, h1);
        c[4 * h + 0][b] = mul16x2<T::kBF16>(l0, sc[b]);  // step 2h, chunk 4h
        c[4 * h + 1][b] = mul16x2<T::kBF16>(l1, sc[b]);
        c[4 * h + 2][b] = mul16x2<T::kBF16>(h0, sc[b]);  // step 2h + 1, chunk 4h + 2
        c[4 * h + 3][b] = mul16x2<T::kBF16>(h1, sc[b]);
      }
    const unsigned row = exp + n * 128;
#pragma unroll
    for (int ch = 0; ch < 8; ++ch) sts128(row + 16 * (ch ^ (n & 7)), c[ch][0], c[ch][1], c[ch][2], c[ch][3]);
  }
}

// ms_grad: as nv, one row per thread, each 16-bit pair multiplied by its two columns' factors
// (FP16 bits of 2^shift, exact products), read from the stage header: word w holds the factors of
// columns 2w (low half) and 2w + 1 of the tile, in natural order.
template <class T>
__device__ __forceinline__ void expand_b_msg(unsigned packed_b, unsigned exp, unsigned factors) {
  constexpr int kRows = (T::BLOCK_N + T::kTransformThreads - 1) / T::kTransformThreads;
  unsigned f[32];
#pragma unroll
  for (int i = 0; i < 8; ++i) lds128(factors + 16 * i, f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3]);
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const int n = threadIdx.x + T::kTransformThreads * k;
    if (n >= T::BLOCK_N) break;
    unsigned w[8], c[8][4];
    lds128(packed_b + n * 32, w[0], w[1], w[2], w[3]);
    lds128(packed_b + n * 32 + 16, w[4], w[5], w[6], w[7]);
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        unsigned l0, l1, h0, h1;
        e2m1x8_to_16bit<false>(w[2 * b + h], l0, l1, h0, h1);  // elements (8h + 2j, 8h + 2j + 1), j = 0..3
        c[4 * h + 0][b] = mul_f16x2(l0, f[8 * b + 4 * h + 0]);
        c[4 * h + 1][b] = mul_f16x2(l1, f[8 * b + 4 * h + 1]);
        c[4 * h + 2][b] = mul_f16x2(h0, f[8 * b + 4 * h + 2]);
        c[4 * h + 3][b] = mul_f16x2(h1, f[8 * b + 4 * h + 3]);
      }
    const unsigned row = exp + n * 128;
#pragma unroll
    for (int ch = 0; ch < 8; ++ch) sts128(row + 16 * (ch ^ (n & 7)), c[ch][0], c[ch][1], c[ch][2], c[ch][3]);
  }
}

// ms_grad, one K tile (packed slot s already full): the column references, then one expanded
// stage per band pass.
template <class T>
__device__ __forceinline__ void transform_tile_msg(const SmemView<T>& sm, RingPos<T::kExpStages>& ex, int s,
                                                   unsigned code, unsigned* scr, bool unit_last) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
  const bool present = code != kColAbsent && code != kColNan;
  const unsigned wmax = redux_max(present ? code : 0u), wmin = redux_min(present ? code : 0xFFFFu);
  if (lane == 0) {
    scr[warp * 4 + 0] = wmax;
    scr[warp * 4 + 1] = wmin;
  }
  named_barrier_sync(1, T::kTransformThreads);
  unsigned cmax = 0, cmin = 0xFFFFu;
#pragma unroll
  for (int q = 0; q < T::kTransformThreads / 32; ++q) {
    cmax = max(cmax, scr[q * 4 + 0]);
    cmin = min(cmin, scr[q * 4 + 1]);
  }
  const bool any = cmax >= cmin;
  const int passes = any ? static_cast<int>(cmax - cmin) / kColWindow + 1 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const int e = ex.slot();
    mbar_wait(sm.exp_empty(e), ex.empty_parity());
    if (tid < T::BLOCK_K) {
      unsigned f = 0;
      if (code == kColNan) {
        f = pass == 0 ? 0x7E00u : 0u;
      } else if (present) {
        const int d = static_cast<int>(cmax - code);
        if (d / kColWindow == pass) f = f16_pow2_bits(kColTop - (d - kColWindow * pass));
      }
      asm volatile("st.shared.b16 [%0], %1;" ::"r"(sm.header(e) + 2 * tid), "h"(static_cast<unsigned short>(f))
                   : "memory");
    }
    named_barrier_sync(1, T::kTransformThreads);
    if constexpr ((T::kAblate & 1) == 0) expand_b_msg<T>(sm.packed_b(s), sm.exp(e), sm.header(e));
    copy_a<T>(sm.packed_a(s), sm.exp_a(e));
    if (tid == 0) {
      const bool last = pass + 1 == passes;
      const float fb = any ? pow2i(static_cast<int>(cmax) - kColBias - kColTop - kColWindow * pass) : 0.0f;
      sts32(sm.tile_info(e), (last ? kLastPass : 0u) | (last && unit_last ? kUnitLast : 0u));
      sts32(sm.tile_info(e) + 4, __float_as_uint(fb));
    }
    fence_proxy_async();
    warp_arrive(sm.exp_full(e));
    ++ex.count;
  }
}

// ---- the role -------------------------------------------------------------------------------

template <class Cfg>
__device__ __forceinline__ void transform_role(const SmemView<GemmTraits<Cfg>>& sm, const TmaDesc* tma_a,
                                               const TmaDesc* tma_b, const GemmParams& p) {
  using T = GemmTraits<Cfg>;
  using Sched = TileScheduler<T::BLOCK_M, T::BLOCK_N, Cfg::kRasterGroup, Cfg::kRasterAlongM>;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
  const int k_tiles = (p.K + T::BLOCK_K - 1) / T::BLOCK_K;
  const Sched sched(p.M, p.N, k_tiles, p.splits);

  TileIter<Sched> it(sched);
  TileIter<Sched> issue(sched);  // thread 0: the next tile to load
  int issued = 0;
  RingPos<T::kPackedStages> pk;
  RingPos<T::kExpStages> ex;
  TileScales<T> cur, nxt;
  if (it.valid) load_tile_scales<Cfg, T>(cur, p, it.w, it.kt);

  while (it.valid) {
    const bool unit_last = it.last_of_unit();
    TileIter<Sched> next = it;
    next.advance();
    if (next.valid) load_tile_scales<Cfg, T>(nxt, p, next.w, next.kt);

    // Keep the TMA ring full: block only for the tile needed now.
    if (tid == 0) {
      while (issue.valid && issued < pk.count + T::kPackedStages) {
        const int slot = issued % T::kPackedStages;
        const unsigned parity = ((static_cast<unsigned>(issued / T::kPackedStages)) & 1u) ^ 1u;
        if (issued > pk.count && !mbar_test(sm.packed_empty(slot), parity)) break;
        mbar_wait(sm.packed_empty(slot), parity);
        mbar_arrive_expect_tx(sm.packed_full(slot), T::kTmaBytes);
        tma_load_2d(sm.packed_a_ptr(slot), tma_a, sm.packed_full(slot), issue.kt * T::kPackedRowA, issue.w.m0);
        tma_load_2d(sm.packed_b_ptr(slot), tma_b, sm.packed_full(slot), issue.kt * T::kPackedRow, issue.w.n0);
        ++issued;
        issue.advance();
      }
      publish_progress(p.progress, 1, static_cast<unsigned>(issued));
    }
    __syncwarp();

    const int s = pk.slot();
    const unsigned pb = sm.packed_b(s);

    if constexpr (T::kKind == ScaleKind::mx) {
      // References and band counts (one named-barrier round per tile).
      unsigned rmax = 0, rmin = 255, tmax = 0, tmin = 255;
      bool row_has = false;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        if (cur.a[b] < kE8M0Nan) {
          rmax = max(rmax, cur.a[b]);
          rmin = min(rmin, cur.a[b]);
          row_has = true;
        }
#pragma unroll
      for (int k = 0; k < TileScales<T>::kBCodes; ++k)
        if (cur.b[k] < kE8M0Nan) {
          tmax = max(tmax, cur.b[k]);
          tmin = min(tmin, cur.b[k]);
        }
      const unsigned bands_a = row_has ? (rmax - rmin) / 15 + 1 : 1;
      unsigned* scr = sm.scratch() + (pk.count & 1) * 32;
      const unsigned wa = redux_max(bands_a), wmax = redux_max(tmax), wmin = redux_min(tmin);
      if (lane == 0) {
        scr[warp * 4 + 0] = wa;
        scr[warp * 4 + 1] = wmax;
        scr[warp * 4 + 2] = wmin;
      }
      named_barrier_sync(1, T::kTransformThreads);
      unsigned n_a = 1, bmax = 0, bmin = 255;
#pragma unroll
      for (int q = 0; q < T::kTransformThreads / 32; ++q) {
        n_a = max(n_a, scr[q * 4 + 0]);
        bmax = max(bmax, scr[q * 4 + 1]);
        bmin = min(bmin, scr[q * 4 + 2]);
      }
      const bool b_has = bmax >= bmin;
      const unsigned n_b = b_has ? (bmax - bmin) / 15 + 1 : 1;
      const int passes = static_cast<int>(n_a * n_b);

      mbar_wait(sm.packed_full(s), pk.full_parity());
      for (int pass = 0; pass < passes; ++pass) {
        const int band_a = pass / static_cast<int>(n_b), band_b = pass % static_cast<int>(n_b);
        const int e = ex.slot();
        mbar_wait(sm.exp_empty(e), ex.empty_parity());
        // A row info for row tid: 4 table indices and the row factor.
        if (tid < T::BLOCK_M) {
          unsigned idx = 0;
#pragma unroll
          for (int b = 0; b < 4; ++b) idx |= lut_index(cur.a[b], rmax, band_a) << (8 * b);
          const float fa = row_has ? pow2i(static_cast<int>(rmax) - 133 - 15 * band_a) : 0.0f;
          const unsigned hdr = sm.header(e) + tid * T::kRowInfoBytes;
          sts32(hdr, idx);
          sts32(hdr + 4, __float_as_uint(fa));
        }
        if constexpr ((Cfg::kAblate & 1) == 0) expand_b_mx<T>(pb, sm.exp(e), sm.table(), cur, bmax, band_b);
        copy_a<T>(sm.packed_a(s), sm.exp_a(e));
        if (tid == 0) {
          const bool last = pass + 1 == passes;
          const float fb = b_has ? pow2i(static_cast<int>(bmax) - 133 - 15 * band_b) : 0.0f;
          sts32(sm.tile_info(e), (last ? kLastPass : 0u) | (last && unit_last ? kUnitLast : 0u));
          sts32(sm.tile_info(e) + 4, __float_as_uint(fb));
        }
        fence_proxy_async();
        warp_arrive(sm.exp_full(e));
        ++ex.count;
      }
    } else if constexpr (T::kKind == ScaleKind::ms_grad) {
      mbar_wait(sm.packed_full(s), pk.full_parity());
      transform_tile_msg<T>(sm, ex, s, cur.b[0], sm.scratch() + (pk.count & 1) * 32, unit_last);
    } else {
      mbar_wait(sm.packed_full(s), pk.full_parity());
      const int e = ex.slot();
      mbar_wait(sm.exp_empty(e), ex.empty_parity());
      copy_a<T>(sm.packed_a(s), sm.exp_a(e));
      if constexpr ((Cfg::kAblate & 1) != 0) {
      } else if constexpr (T::kKind == ScaleKind::ms) {
        expand_b_ms<T>(pb, sm.exp(e));
      } else {
        const unsigned table = sm.table();
        if (tid < T::BLOCK_M) {
          const unsigned hdr = sm.header(e) + tid * T::kRowInfoBytes;
          sts128(hdr, nv_scale2<T>(table, cur.a[0]), nv_scale2<T>(table, cur.a[1]),
                 nv_scale2<T>(table, cur.a[2]), nv_scale2<T>(table, cur.a[3]));
        }
        if constexpr (Cfg::kNvInterleave && T::BLOCK_N % T::kTransformThreads == 0) {
          expand_b_nv_interleaved<T>(pb, sm.exp(e), table, cur);
        } else {
          expand_b_nv<T>(pb, sm.exp(e), table, cur);
        }
      }
      if (tid == 0) sts32(sm.tile_info(e), kLastPass | (unit_last ? kUnitLast : 0u));
      fence_proxy_async();
      warp_arrive(sm.exp_full(e));
      ++ex.count;
    }
    warp_arrive(sm.packed_empty(s));
    ++pk.count;
    if (tid == 0) publish_progress(p.progress, 0, static_cast<unsigned>(pk.count));
    it = next;
    cur = nxt;
  }
}

}  // namespace fp4jit::sm90
