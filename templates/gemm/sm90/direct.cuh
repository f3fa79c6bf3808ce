// fp4jit sm90 direct small-M GEMM (mx: mxfp4, tetrajet): D = A B^T computed as D^T = B A^T in one
// kernel, from both operands' packed E2M1 codes and E8M0 block scales, for few rows of A (tokens)
// against a large B (weights).
//
// Why: the swapped kernel (swap.cuh) needs A expanded by a launch of its own and a fused fallback
// launched after it, and feeds B through a TMA ring whose scale tables two warps write; at 128
// rows those fixed parts alone took about as long as cuBLASLt's whole FP8 GEMM
// (bench/gemm_sm90_notes.md, "The small-M call's kernels, one by one"). Here one launch does all:
//
// 384 threads, one CTA per SM, persistent over units (a tile of 128 rows of B x BLOCK_T rows of
// A, and a K split of whole segments of kPeriod K tiles of 128 elements):
//   warpgroup 0 (producer): thread m owns row m of the A tile (BLOCK_T = Cfg::BLOCK_N: 64 or 128
//           rows; with 64 its last two warps idle). Its row's codes arrive by cp.async in a
//           staging ring kAPre K tiles ahead, its scale codes a segment ahead. Per segment it
//           takes the reference ref = the largest scale code of its blocks with nonzero codes (NaN
//           codes aside) and writes each K tile as E4M3 bytes of E2M1 * 2^(e - ref + 6)
//           (e2m1x8_to_e4m3_lut, shift t = e - ref + 14) into a ring of kAStages stages (BLOCK_T
//           rows x 128 bytes, 128-byte swizzle) with the row's factor 2^(ref - 133) (NaN when a
//           code is NaN), then arrives on the stage's full barrier.
//   warpgroups 1, 2 (consumers): 64 rows of B each. Each thread copies its own 16 bytes per row
//           and K tile (rows r0, r1 of the fragment; block tig of the tile: one block, one scale)
//           from global memory into its slots of a ring of kBStages stages with cp.async, kBStages
//           K tiles ahead, expands them into the register fragment with the block's shift table
//           (the segment's reference of its row, across the quad's lanes), and issues 4
//           register-A QGMMA (m64nBLOCK_Tk32) per K tile on A's stage into a segment accumulator,
//           promoted into FP32 with b_factor[row] * a_factor[token] after the segment's last K
//           tile. Split-K as in the swapped kernel: through a global workspace, or within a
//           cluster of one CTA per split through distributed shared memory.
// Element order: thread tig's word s of its 16 bytes (elements 32 tig + 8 s .. + 7 of the K tile)
// feeds K step s: its elements 0..3 at fragment positions 4 tig .. 4 tig + 3 (a0 / a1), 4..7 at
// 16 + 4 tig .. (a2 / a3). The producer writes A's K tile in the same order: position 32 s + 4 b +
// i holds element 32 b + 8 s + i, position 32 s + 16 + 4 b + i element 32 b + 8 s + 4 + i. Both
// operands take the same permutation of K, so the product is unchanged.
// Exactness: every shift lies in [0, 14] (E2M1 * 2^(t - 8) exact in E4M3) when each row's blocks
// in a segment lie within 14 binades of its largest (A: blocks with nonzero codes; B: every block,
// from its scale codes alone). A unit where some block of A or B does not recomputes its partial
// product on the CUDA cores, block by block in FP32 (direct_exact_unit), before its epilogue: no
// window flag, no second kernel, never an approximation.
// Measured on an H200 at 64-256 rows: 0.47-0.86x the swapped path's whole call, and on
// outlier-heavy operands less accurate (a K step mixes the 4 blocks of a K tile), so it is a
// tuner candidate, not the heuristic's (bench/gemm_sm90_notes.md, "The direct small-M kernel").
// Host side: runtime/cuda/gemm_launch.cpp (no tensor maps: GemmParams::a_codes / b_codes).
#pragma once
#include "gemm/sm90/swap.cuh"

namespace fp4jit::sm90 {

template <class Cfg>
struct DirectTraits {
  static constexpr ScaleKind kKind = Cfg::kKind;
  static constexpr int BLOCK_T = Cfg::BLOCK_N;  // rows of A (tokens) per tile: wgmma's N
  static constexpr int BLOCK_W = 128;           // rows of B per tile: two warpgroups of 64
  static constexpr int BLOCK_K = 128;
  static constexpr int kAStages = Cfg::kPackedStages;
  static constexpr int kBStages = Cfg::kExpandedStages;
  static constexpr int kPeriod = Cfg::kPeriod;
  static constexpr int kAPre = kDirectAPre;  // A's codes staged this many K tiles ahead
  static constexpr DirectGeometry G = direct_geometry(BLOCK_T, kAStages, kBStages);
  static constexpr int kThreads = 384;
  static constexpr int kTransformThreads = 128;  // the producer warpgroup (epilogue.cuh's name)
  static constexpr int kConsumers = 256;
  static constexpr int kAccum = BLOCK_T / 2;
  static constexpr int kProducerRegs = 80;
  static constexpr int kConsumerRegs = 208;
  static constexpr int kEpiLd = 128 + 4;
  static constexpr bool kFp8 = true;
  static constexpr bool kBF16 = false;
  static constexpr int kAblate = 0;
  using MmaFp8 = WgmmaRS_e4m3<BLOCK_T>;
  using MmaF16 = WgmmaRS_f16<BLOCK_T>;
  using MmaBF16 = WgmmaRS_bf16<BLOCK_T>;
  static_assert(kKind == ScaleKind::mx, "the direct kernel multiplies mx operands only");
  static_assert(BLOCK_T == 64 || BLOCK_T == 128, "BLOCK_N (tokens per tile): 64 or 128");
  static_assert(kPeriod == 1 || kPeriod == 2 || kPeriod == 4, "kPeriod: 1, 2 or 4");
  static_assert(kAPre >= kPeriod, "A's staging holds a whole segment");
  static_assert(kAStages >= 2 && kAStages <= 8, "A stages: 2..8");
  static_assert(kBStages >= 2 && kBStages <= 16, "B stages: 2..16");
  static_assert(G.smem_bytes <= 227 * 1024, "shared memory exceeds 227 KB: fewer stages");
  static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kThreads * (65536 / kThreads / 8 * 8),
                "register split exceeds the registers the CTA is launched with");
};

template <class T>
struct DirectSmem : AlignedSmem {
  __device__ __forceinline__ explicit DirectSmem(unsigned char* raw) : AlignedSmem(raw) {}
  __device__ __forceinline__ unsigned a(int s) const { return addr + s * T::G.a_stage_bytes; }
  __device__ __forceinline__ unsigned b(int s) const {
    return addr + T::G.b_offset + s * T::G.b_stage_bytes;
  }
  // A's staging slot s, block b: 16 bytes per row of the tile, row after row.
  __device__ __forceinline__ unsigned a_stage(int s, int b) const {
    return addr + T::G.stage_offset + (s * 4 + b) * T::BLOCK_T * 16;
  }
  __device__ __forceinline__ unsigned a_factor(int s) const {
    return addr + T::G.factor_offset + s * T::G.a_factor_bytes;
  }
  __device__ __forceinline__ unsigned epi() const { return addr + T::G.epi_offset; }
  __device__ __forceinline__ unsigned long long* full(int s) const {
    return reinterpret_cast<unsigned long long*>(base + T::G.barrier_offset) + s;
  }
  __device__ __forceinline__ unsigned long long* empty(int s) const {
    return full(T::kAStages + s);
  }
  __device__ __forceinline__ unsigned long long* red_ready() const { return full(2 * T::kAStages); }
  __device__ __forceinline__ unsigned long long* red_free() const {
    return full(2 * T::kAStages + 1);
  }
  __device__ __forceinline__ unsigned table() const { return addr + T::G.table_offset; }
  __device__ __forceinline__ unsigned* table_ptr() const {
    return reinterpret_cast<unsigned*>(base + T::G.table_offset);
  }
  __device__ __forceinline__ unsigned* split_flag() const {
    return reinterpret_cast<unsigned*>(base + T::G.scratch_offset);
  }
  // The window-failure word of the CTA's i-th unit: i + 1 once a block of the unit left the window.
  __device__ __forceinline__ volatile unsigned* fail(int i) const {
    return reinterpret_cast<volatile unsigned*>(base + T::G.scratch_offset + 8) +
           i % kDirectFailSlots;
  }
};

// A packed 16-byte chunk of codes (zero where invalid).
__device__ __forceinline__ uint4 direct_ldg16(const unsigned char* p, bool valid) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  if (valid) v = __ldg(reinterpret_cast<const uint4*>(p));
  return v;
}

// E2M1 code (sign in bit 3) as a float: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
__device__ __forceinline__ float direct_e2m1(unsigned c) {
  const unsigned m = c & 7u;
  const float mag = m < 2u ? 0.5f * static_cast<float>(m)
                           : __uint_as_float((((m >> 1) + 126u) << 23) | ((m & 1u) << 22));
  return (c & 8u) != 0u ? -mag : mag;
}

// The exact partial product of one unit on the CUDA cores, for a unit with a block outside the
// shift window: acc (the consumer fragment: element 4 v2 + 2 v1 + v0 is B row r(v1), A row
// 8 v2 + 2 tig + v0) = sum over the unit's blocks of (sum of 32 E2M1 products, exact in FP32)
// * 2^(ea - 127) * 2^(eb - 127); NaN where a scale code is NaN.
template <class T>
__device__ __forceinline__ void direct_exact_unit(const GemmParams& p, const WorkUnit& w,
                                                  const ConsumerRows& rw, float (&acc)[T::kAccum]) {
  float out[T::kAccum];  // indexed at run time (local memory): this path only
#pragma unroll
  for (int i = 0; i < T::kAccum; ++i) out[i] = 0.0f;
  const int blocks = p.K / 32;
  const int b_end = min(4 * w.kt_end, blocks);
#pragma unroll 1
  for (int v1 = 0; v1 < 2; ++v1) {
    const int n = w.n0 + (v1 ? rw.r1 : rw.r0);
    if (n >= p.N) continue;
#pragma unroll 1
    for (int blk = 4 * w.kt_begin; blk < b_end; ++blk) {
      const uint4 bw =
          __ldg(reinterpret_cast<const uint4*>(p.b_codes + n * p.b_code_ld + 16 * blk));
      const unsigned eb = p.b_scale[static_cast<long long>(n) * p.b_scale_ld + blk];
      const unsigned bwords[4] = {bw.x, bw.y, bw.z, bw.w};
      float bv[32];
#pragma unroll
      for (int j = 0; j < 32; ++j) bv[j] = direct_e2m1(bwords[j / 8] >> (4 * (j % 8)));
#pragma unroll 1
      for (int v2 = 0; v2 < T::BLOCK_T / 8; ++v2)
#pragma unroll
        for (int v0 = 0; v0 < 2; ++v0) {
          const int m = w.m0 + 8 * v2 + 2 * rw.tig + v0;
          if (m >= p.M) continue;
          const uint4 aw =
              __ldg(reinterpret_cast<const uint4*>(p.a_codes + m * p.a_code_ld + 16 * blk));
          const unsigned ea = p.a_scale[static_cast<long long>(m) * p.a_scale_ld + blk];
          const unsigned awords[4] = {aw.x, aw.y, aw.z, aw.w};
          float s = 0.0f;
#pragma unroll
          for (int j = 0; j < 32; ++j)
            s = fmaf(direct_e2m1(awords[j / 8] >> (4 * (j % 8))), bv[j], s);
          const float scaled = ea == 0xFFu || eb == 0xFFu ? __uint_as_float(0x7FC00000u)
                                                          : s * pow2f(static_cast<int>(ea) - 127) *
                                                                pow2f(static_cast<int>(eb) - 127);
          out[4 * v2 + 2 * v1 + v0] += scaled;
        }
    }
  }
#pragma unroll
  for (int i = 0; i < T::kAccum; ++i) acc[i] = out[i];
}

// B's scale codes of one segment for the thread's two rows (byte t: K tile t of the segment; 0
// where invalid), with `invalid` marking blocks past N, K or the period (0xFF per byte).
struct DirectSegCodes {
  unsigned e[2], invalid[2];
};

// The segment's reference per row (across the quad's 4 lanes: the 4 blocks of each K tile), the
// rows' factors and whether a block lies outside the window.
struct DirectSegInfo {
  unsigned e[2], skip[2], ref4[2];
  float f[2];
  bool fail;
};

template <class T>
__device__ __forceinline__ void direct_load_seg(const GemmParams& p, int n0, const ConsumerRows& rw,
                                                int kt0, int kt_end, DirectSegCodes& c) {
  const int blocks = p.K / 32;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int n = n0 + (i ? rw.r1 : rw.r0);
    // Bytes past the period hold no block.
    unsigned e = 0u, inv = T::kPeriod == 4 ? 0u : 0xFFFFFFFFu << (8 * T::kPeriod);
#pragma unroll
    for (int t = 0; t < T::kPeriod; ++t) {
      const int blk = 4 * (kt0 + t) + rw.tig;
      const bool valid = n < p.N && kt0 + t < kt_end && blk < blocks;
      if (valid)
        e |= static_cast<unsigned>(p.b_scale[static_cast<long long>(n) * p.b_scale_ld + blk])
             << (8 * t);
      else
        inv |= 0xFFu << (8 * t);
    }
    c.e[i] = e;
    c.invalid[i] = inv;
  }
}

template <class T>
__device__ __forceinline__ DirectSegInfo direct_seg_info(const DirectSegCodes& c) {
  DirectSegInfo s;
  s.fail = false;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const unsigned nan = __vcmpeq4(c.e[i], 0xFFFFFFFFu) & ~c.invalid[i];
    const unsigned skip = nan | c.invalid[i];
    unsigned m = __vmaxu4(c.e[i] & ~skip, 0u);
    m = __vmaxu4(m, m >> 16);
    m = __vmaxu4(m, m >> 8) & 0xFFu;
    m = max(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = max(m, __shfl_xor_sync(0xffffffffu, m, 2));
    unsigned any_nan = nan != 0u ? 1u : 0u;
    any_nan |= __shfl_xor_sync(0xffffffffu, any_nan, 1);
    any_nan |= __shfl_xor_sync(0xffffffffu, any_nan, 2);
    s.e[i] = c.e[i];
    s.skip[i] = skip;
    s.ref4[i] = m * 0x01010101u;
    const unsigned below = __vsub4(s.ref4[i], c.e[i]);  // ref - e per block, >= 0 where valid
    if ((__vcmpgtu4(below, 0x0E0E0E0Eu) & ~skip) != 0u) s.fail = true;
    s.f[i] = any_nan != 0u ? __uint_as_float(0x7FC00000u)
                           : pow2f(static_cast<int>(m) - 127 - kLutMaxShift + kLutBias);
  }
  return s;
}

template <class Cfg>
__global__ void __launch_bounds__(DirectTraits<Cfg>::kThreads, 1)
    gemm_direct_kernel(const GemmParams p_in) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  using T = DirectTraits<Cfg>;
  const GemmParams p = with_fixed_sizes<Cfg>(p_in);
  extern __shared__ unsigned char smem_raw[];
  const DirectSmem<T> sm(smem_raw);
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < T::kAStages; ++s) {
      mbar_init(sm.full(s), T::BLOCK_T / 32);  // one arrival per producer warp with rows
      mbar_init(sm.empty(s), 8);               // one arrival per consumer warp
    }
    if constexpr (Cfg::kSplitCluster) {            // one arrival per CTA of the cluster
      if (p.splits < 2 || p.splits > 8) __trap();  // the host launches clusters of 2..8 splits
      mbar_init(sm.red_ready(), static_cast<unsigned>(p.splits));
      mbar_init(sm.red_free(), static_cast<unsigned>(p.splits));
    }
    fence_barrier_init();
  }
  if (tid < kLutEntries) {
    unsigned lo, hi;
    e4m3_lut(tid, lo, hi);
    sm.table_ptr()[2 * tid] = lo;
    sm.table_ptr()[2 * tid + 1] = hi;
  }
  if (tid < kDirectFailSlots) *sm.fail(tid) = 0u;
  __syncthreads();
  if constexpr (Cfg::kSplitCluster) cluster_sync();

  using Sched = TileScheduler<T::BLOCK_T, T::BLOCK_W, Cfg::kRasterGroup, Cfg::kRasterAlongM>;
  const int k_tiles = (p.K + T::BLOCK_K - 1) / T::BLOCK_K;
  const Sched sched(p.M, p.N, staged_k_units(k_tiles, T::kPeriod), p.splits);
  const auto k_range = [&](WorkUnit& w) { segments_to_k_tiles(w, T::kPeriod, k_tiles); };
  const int first = static_cast<int>(blockIdx.x), stride = static_cast<int>(gridDim.x);
  const int blocks = p.K / 32;
  RingSlot<T::kAStages> pos;

  if (tid < 128) {
    // Producer: row m of each unit's A tile. Its codes arrive by cp.async into the thread's
    // slots of a staging ring kAPre K tiles ahead; its scale codes a segment ahead in registers.
    setmaxnreg_dec<T::kProducerRegs>();
    const int m = tid;
    if (m >= T::BLOCK_T) return;  // 64-row tiles: two producer warps
    const unsigned sw = static_cast<unsigned>(m & 7);
    int i = 0;  // the CTA's unit count
    for (int u = first; u < sched.units; u += stride, ++i) {
      WorkUnit w = sched.unit(u);
      k_range(w);
      const int row = w.m0 + m;
      const bool row_ok = row < p.M;
      const unsigned char* codes =
          p.a_codes + static_cast<long long>(row_ok ? row : 0) * p.a_code_ld;
      const unsigned char* scales =
          p.a_scale + static_cast<long long>(row_ok ? row : 0) * p.a_scale_ld;
      // K tile kt's 4 blocks into staging slot `slot` (zero past M and K), one commit group per
      // K tile (empty past the unit's end).
      const auto stage_codes = [&](int kt, int slot) {
        if (kt < w.kt_end)
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            const int blk = 4 * kt + b;
            cp_async16(sm.a_stage(slot, b) + 16u * static_cast<unsigned>(m),
                       codes + 16 * (blk < blocks ? blk : 0), row_ok && blk < blocks);
          }
        cp_async_commit();
      };
      // Segment kt0's scale codes: word t holds its K tile t's 4 blocks (0xFF..: past M or K, as
      // invalid); loaded a segment ahead.
      const auto load_scales = [&](int kt0, unsigned(&e)[T::kPeriod], unsigned(&inv)[T::kPeriod]) {
#pragma unroll
        for (int t = 0; t < T::kPeriod; ++t) {
          e[t] = 0u;
          inv[t] = 0u;
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            const int blk = 4 * (kt0 + t) + b;
            if (row_ok && kt0 + t < w.kt_end && blk < blocks)
              e[t] |= static_cast<unsigned>(scales[blk]) << (8 * b);
            else
              inv[t] |= 0xFFu << (8 * b);
          }
        }
      };
#pragma unroll 1
      for (int j = 0; j < T::kAPre; ++j) stage_codes(w.kt_begin + j, j);
      int slot = 0;
      bool fail = false;
      unsigned e_cur[T::kPeriod], inv_cur[T::kPeriod], e_nxt[T::kPeriod], inv_nxt[T::kPeriod];
      load_scales(w.kt_begin, e_cur, inv_cur);
      for (int kt0 = w.kt_begin; kt0 < w.kt_end; kt0 += T::kPeriod) {
        const int seg_end = min(kt0 + T::kPeriod, w.kt_end);
        if (kt0 + T::kPeriod < w.kt_end) load_scales(kt0 + T::kPeriod, e_nxt, inv_nxt);
        // The segment's K tiles have landed (the oldest kPeriod groups of kAPre).
        cp_async_wait<T::kAPre - T::kPeriod>();
        // Blocks that take no part in the reference: invalid, all-zero codes, NaN scales.
        unsigned skip[T::kPeriod];
        unsigned ref = 0u;
        bool nan = false;
#pragma unroll
        for (int t = 0; t < T::kPeriod; ++t) {
          skip[t] = inv_cur[t];
          if (kt0 + t >= seg_end) continue;
          const int sl = (slot + t) % T::kAPre;
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            unsigned c0, c1, c2, c3;
            lds128(sm.a_stage(sl, b) + 16u * static_cast<unsigned>(m), c0, c1, c2, c3);
            const unsigned code = (e_cur[t] >> (8 * b)) & 0xFFu;
            const bool valid = ((inv_cur[t] >> (8 * b)) & 0xFFu) == 0u;
            if (valid && code == 0xFFu) nan = true;
            if (!valid || ((c0 | c1 | c2 | c3) & 0x77777777u) == 0u || code == 0xFFu)
              skip[t] |= 0xFFu << (8 * b);
            else
              ref = max(ref, code);
          }
        }
        const float factor = nan ? __uint_as_float(0x7FC00000u)
                                 : pow2f(static_cast<int>(ref) - 127 - kLutMaxShift + kLutBias);
#pragma unroll
        for (int t = 0; t < T::kPeriod; ++t) {
          if (kt0 + t >= seg_end) break;
          unsigned l[4], h[4], c[4][4];
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            lds128(sm.a_stage(slot, b) + 16u * static_cast<unsigned>(m), c[b][0], c[b][1], c[b][2],
                   c[b][3]);
            int shift = kLutZero;
            if (((skip[t] >> (8 * b)) & 0xFFu) == 0u) {
              shift = static_cast<int>((e_cur[t] >> (8 * b)) & 0xFFu) - static_cast<int>(ref) +
                      kLutMaxShift;
              if (shift < 0) {
                fail = true;
                shift = kLutZero;
              }
            }
            lds64(sm.table() + 8 * shift, l[b], h[b]);
          }
          // The staging slot is read: refill it kAPre K tiles ahead.
          stage_codes(kt0 + t + T::kAPre, slot);
          if (++slot == T::kAPre) slot = 0;
          // A failure is published before the stage that carries it.
          if (fail) *sm.fail(i) = static_cast<unsigned>(i + 1);
          const int s = pos.slot();
          mbar_wait(sm.empty(s), pos.empty_parity());
          const unsigned rowp = sm.a(s) + 128u * static_cast<unsigned>(m);
#pragma unroll
          for (int st = 0; st < 4; ++st) {
            unsigned lo[4], hi[4];
#pragma unroll
            for (int b = 0; b < 4; ++b) e2m1x8_to_e4m3_lut(c[b][st], l[b], h[b], lo[b], hi[b]);
            sts128(rowp + 16u * ((2u * st) ^ sw), lo[0], lo[1], lo[2], lo[3]);
            sts128(rowp + 16u * ((2u * st + 1u) ^ sw), hi[0], hi[1], hi[2], hi[3]);
          }
          sts32(sm.a_factor(s) + 4u * static_cast<unsigned>(m), __float_as_uint(factor));
          fence_proxy_async();  // the stores are visible to the wgmmas (async proxy)
          warp_arrive(sm.full(s));
          pos.advance();
        }
#pragma unroll
        for (int t = 0; t < T::kPeriod; ++t) {
          e_cur[t] = e_nxt[t];
          inv_cur[t] = inv_nxt[t];
        }
      }
      cp_async_wait<0>();  // the unit's trailing groups
    }
    return;
  }

  setmaxnreg_inc<T::kConsumerRegs>();
  const int ctid = tid - 128;  // 0..255
  const ConsumerRows rw = consumer_rows(ctid);
  // The thread's slots of B's stage: row r0's 16 bytes, then row r1's (consecutive threads,
  // consecutive 16 bytes: conflict-free).
  const unsigned b_slot = 16u * static_cast<unsigned>(ctid);
  const auto promote = [&](const float(&tmp)[T::kAccum], int s, const float(&f)[2],
                           float(&acc)[T::kAccum]) {
    promote_fragment<T::BLOCK_T, true>(tmp, f[0], f[1], sm.a_factor(s), rw.tig, acc);
  };

  unsigned passes = 0;  // cluster reduction passes (Cfg::kSplitCluster)
  int i = 0;            // the CTA's unit count
  for (int u = first; u < sched.units; u += stride, ++i) {
    WorkUnit w = sched.unit(u);
    k_range(w);
    const int n_0 = w.n0 + rw.r0, n_1 = w.n0 + rw.r1;
    const bool ok0 = n_0 < p.N, ok1 = n_1 < p.N;
    const unsigned char* src0 =
        p.b_codes + static_cast<long long>(ok0 ? n_0 : 0) * p.b_code_ld + 16 * rw.tig;
    const unsigned char* src1 =
        p.b_codes + static_cast<long long>(ok1 ? n_1 : 0) * p.b_code_ld + 16 * rw.tig;
    // B's K tile kt into ring slot bs (zero-filled past N and K), one commit group per K tile
    // (empty past the unit's end, so that the group count stays fixed).
    const auto fetch = [&](int kt, int bs) {
      if (kt < w.kt_end) {
        const bool in_k = 4 * kt + rw.tig < blocks;
        cp_async16(sm.b(bs) + b_slot, src0 + 64 * kt, ok0 && in_k);
        cp_async16(sm.b(bs) + 4096u + b_slot, src1 + 64 * kt, ok1 && in_k);
      }
      cp_async_commit();
    };
#pragma unroll 1
    for (int j = 0; j < T::kBStages; ++j) fetch(w.kt_begin + j, j);

    DirectSegCodes raw;
    direct_load_seg<T>(p, w.n0, rw, w.kt_begin, w.kt_end, raw);
    DirectSegInfo seg{};
    bool fail = false;
    int bs = 0;  // B ring slot of the next K tile to expand
    // B's fragment of K tile kt (the expansion of tile kt; the segment info is recomputed at each
    // segment's first tile, the next segment's codes loaded then), then the slot refilled.
    const auto expand = [&](int kt, unsigned(&fr)[16], float(&f)[2]) {
      if (kt == w.kt_begin || kt % T::kPeriod == 0) {
        seg = direct_seg_info<T>(raw);
        fail |= seg.fail;
        const int nk = (kt / T::kPeriod + 1) * T::kPeriod;
        if (nk < w.kt_end) direct_load_seg<T>(p, w.n0, rw, nk, w.kt_end, raw);
      }
      f[0] = seg.f[0];
      f[1] = seg.f[1];
      const int t = kt % T::kPeriod;
      unsigned sh[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const unsigned below = (__vsub4(seg.ref4[r], seg.e[r]) >> (8 * t)) & 0xFFu;
        const bool skip = ((seg.skip[r] >> (8 * t)) & 0xFFu) != 0u || below > 14u;
        sh[r] = skip ? static_cast<unsigned>(kLutZero) : 14u - below;
      }
      cp_async_wait<T::kBStages - 1>();
      unsigned c0[4], c1[4], l0, h0, l1, h1;
      lds128(sm.b(bs) + b_slot, c0[0], c0[1], c0[2], c0[3]);
      lds128(sm.b(bs) + 4096u + b_slot, c1[0], c1[1], c1[2], c1[3]);
      lds64(sm.table() + 8u * sh[0], l0, h0);
      lds64(sm.table() + 8u * sh[1], l1, h1);
#pragma unroll
      for (int st = 0; st < 4; ++st) {
        e2m1x8_to_e4m3_lut(c0[st], l0, h0, fr[4 * st + 0], fr[4 * st + 2]);
        e2m1x8_to_e4m3_lut(c1[st], l1, h1, fr[4 * st + 1], fr[4 * st + 3]);
      }
      fetch(kt + T::kBStages, bs);
      if (++bs == T::kBStages) bs = 0;
    };

    float acc[T::kAccum], tmp[T::kAccum];
#pragma unroll
    for (int q = 0; q < T::kAccum; ++q) acc[q] = 0.0f;
    unsigned fa[16], fb[16];
    float fac_a[2], fac_b[2];
    int kt = w.kt_begin;
    // One K tile: wait for A's stage, issue its wgmmas, expand the next tile's fragment while they
    // run, wait, promote after a segment's last tile, release the stage (as swap.cuh, each group
    // waited for before the next is issued).
    const auto step = [&](const unsigned(&cur)[16], const float(&fcur)[2], unsigned(&nxt)[16],
                          float(&fnxt)[2]) -> bool {
      const bool seg_first = kt == w.kt_begin || kt % T::kPeriod == 0;
      const bool seg_last = (kt + 1) % T::kPeriod == 0 || kt + 1 == w.kt_end;
      const int s = pos.slot();
      mbar_wait(sm.full(s), pos.full_parity());
      issue_mma<T>(tmp, cur, sm.a(s), !seg_first);
      const bool more = kt + 1 < w.kt_end;
      if (more) expand(kt + 1, nxt, fnxt);
      wgmma_wait<0>();
      fence_operands(tmp);
      if (seg_last) promote(tmp, s, fcur, acc);
      warp_arrive(sm.empty(s));
      pos.advance();
      ++kt;
      return !more;
    };
    expand(kt, fa, fac_a);
    while (true) {
      if (step(fa, fac_a, fb, fac_b)) break;
      if (step(fb, fac_b, fa, fac_a)) break;
    }
    cp_async_wait<0>();  // the unit's trailing (empty or past-the-end) groups

    // A block of A (the producer's flag, published before the stages it carried, which this
    // thread has waited for) or of B (any consumer's) outside the window: the exact recompute.
    if (fail) *sm.fail(i) = static_cast<unsigned>(i + 1);
    named_barrier_sync(3, T::kConsumers);
    if (*sm.fail(i) == static_cast<unsigned>(i + 1)) {
      if (p.direct_strict != 0) __trap();
      direct_exact_unit<T>(p, w, rw, acc);
    }

    swap_store_unit<Cfg, T>(p, w, rw, acc, sm, passes);
  }
  swap_cluster_drain<Cfg>(sm, passes);
#endif
}

}  // namespace fp4jit::sm90
