// fp4jit sm90 swapped small-M GEMM (mx: mxfp4, tetrajet; nv: nvfp4, ue5m3): D = A B^T computed
// as D^T = B A^T, for few rows of A (tokens) against a large B (weights).
//
// Why: with M <= a few hundred the weight B is most of the bytes and most of the expansion work.
// The fused kernel (kernel.cuh) expands B into shared memory in one transform warpgroup, which
// caps it at a fraction of the tensor cores' rate; the staged kernel writes B expanded to global
// memory first (twice B's bytes again). Here B takes the wgmma A slot instead, whose operand may
// come from registers: each consumer thread expands its own fragment of B's packed K tile straight
// into registers (no shared-memory write, no cross-warpgroup wait), and A, expanded once by
// staged_expand.cuh (small: M rows), is the shared-memory operand.
//
// 384 threads, one CTA per SM, persistent over units (a tile of 128 rows of B x BLOCK_T rows of A,
// and a K split of whole segments of kPeriod K tiles of 128 elements):
//   warp 0, one thread: TMA loads per K tile of B's packed codes (128 rows x 64 bytes, 64-byte
//           swizzle), A's expanded tile (BLOCK_T rows x 128 elements, 128-byte swizzle: one atom
//           for E4M3, two for 16-bit elements), and for mx on a segment's last K tile A's segment
//           factors (bulk copy)
//   warps 1, 2: B's block scales (64 rows each, two per lane), loaded a segment ahead, written
//           per (row, K tile) as 32 bytes that the consumers read with 16-byte loads; the stage's
//           full barrier waits for these warps as for the TMA bytes.
//           mx: per (row, segment) the largest code ref and the segment factor 2^(ref - 133)
//           (NaN when a code is NaN), per (row, K tile) the E4M3 tables (expand.cuh, two words
//           each) of the 4 blocks' shifts e - ref + 14.
//           nv: per (row, K tile) the 8 block scales decoded to FP16 (UE4M3) or BF16 (UE5M3),
//           each as a pair of equal halves, in the order b0 b2 b4 b6 b1 b3 b5 b7 (a thread's four
//           words of a row are one 16-byte load); B's 16 x 16 blocks read code row row / 16.
//   warpgroups 1, 2: 64 rows of B each; per K tile register-A wgmmas on A's stage: mx 4 QGMMA
//           (K = 32) into a segment accumulator, promoted into FP32 with a_factor[token] *
//           b_factor[row] after the segment's last K tile; nv 8 HGMMA (K = 16) straight into the
//           FP32 accumulator (E2M1 x scale is exact in the 16-bit type, as in the fused kernel).
//           Split-K and the epilogue write D[token, row]. Split-K hands the partial sums over
//           through global memory (a workspace, a counter per tile, the last CTA sums), or with
//           Cfg::kSplitCluster within a cluster of one CTA per split, through distributed shared
//           memory (swap_cluster_store): no workspace, no counters, no atomics.
// Exactness (mx): every shift lies in [0, 14] when the expansion pass's check of B's scales (per
// row and segment, all codes within 14 binades of the largest) passed; otherwise it sets the
// window flag before this kernel starts, this kernel returns at once and the fused kernel launched
// after it on the same stream runs instead (as for the staged path). nv needs no window.
// Element order: a thread takes packed word tig of each 16-byte unit st of its two rows (elements
// 32 st + 8 tig .. + 7), and A's expansion writes each 32-element chunk in the matching fragment
// order (staged_expand.cuh, kFragOrder): mx, expanded word q holds elements 8q..8q+3 for q < 4,
// 8(q-4)+4.. for q >= 4 (the order e2m1x8_to_e4m3_lut fills a0 / a2 from one packed word); nv,
// the unit's element pairs transposed 4 x 4, so that K steps 2 st and 2 st + 1 take pairs (0, 1)
// and (2, 3) of each word as a0 / a2. The product is unchanged.
// Host side: runtime/cuda/gemm_launch.cpp (tensor maps: A expanded, box {128 bytes, BLOCK_T},
// CU_TENSOR_MAP_SWIZZLE_128B; B packed, box {64, 128}, CU_TENSOR_MAP_SWIZZLE_64B), launched as a
// programmatic dependent of A's expansion: the set-up below overlaps that launch's end, and
// griddepcontrol.wait comes before anything it wrote is read.
#pragma once
#include "gemm/sm90/config.cuh"
#include "gemm/sm90/consumer.cuh"
#include "gemm/sm90/epilogue.cuh"
#include "gemm/sm90/expand.cuh"
#include "gemm/sm90/nv_decode.cuh"
#include "gemm/sm90/ptx.cuh"
#include "gemm/sm90/scheduler.cuh"
#include "gemm/sm90/staged.cuh"
#include "gemm/sm90/staged_expand.cuh"
#include "gemm/sm90/staged_geometry.cuh"
#include "gemm/sm90/wgmma.cuh"

namespace fp4jit::sm90 {

template <class Cfg>
struct SwapTraits {
  static constexpr ScaleKind kKind = Cfg::kKind;
  static constexpr int BLOCK_T = Cfg::BLOCK_N;  // rows of A (tokens) per tile: wgmma's N
  static constexpr int BLOCK_W = 128;           // rows of B per tile: two warpgroups of 64
  static constexpr int BLOCK_K = 128;
  static constexpr SwapGeometry G = swap_geometry(kKind, BLOCK_T, Cfg::kPackedStages);
  static constexpr int kAccum = BLOCK_T / 2;
  static constexpr int kStages = Cfg::kPackedStages;
  static constexpr int kPeriod = Cfg::kPeriod;
  static constexpr int kThreads = G.threads;
  static constexpr int kTransformThreads = 128;  // the producer warpgroup (epilogue.cuh's name)
  static constexpr int kConsumers = 256;
  static constexpr int kProducerRegs = BLOCK_T == 64 ? 104 : 80;
  static constexpr int kConsumerRegs = BLOCK_T == 64 ? 200 : 208;  // no spills (ptxas -v)
  static constexpr int kEpiLd = 128 + 4;  // floats per row of the epilogue tile
  static constexpr int kScaleWarps = 2;   // warps 1 .. kScaleWarps
  static constexpr int kRowsPerLane = BLOCK_W / (32 * kScaleWarps);
  static_assert(kKind == ScaleKind::mx || kKind == ScaleKind::nv,
                "the swapped kernel multiplies mx and nv operands only");
  static_assert(BLOCK_T == 64 || BLOCK_T == 128, "BLOCK_N (tokens per tile): 64 or 128");
  static_assert(kPeriod == 1 || kPeriod == 2 || kPeriod == 4, "kPeriod: 1, 2 or 4");
  static_assert(kStages >= 2 && kStages <= 16, "stages out of range");
  static_assert(Cfg::kClusterM == 1 && Cfg::kClusterN == 1, "no clusters");
  static_assert(Cfg::kBBlockRows == 1 || (kKind == ScaleKind::nv && Cfg::kBBlockRows == 16),
                "B block rows: 1, or 16 for nv");
  static_assert(G.smem_bytes <= 227 * 1024,
                "shared memory exceeds 227 KB: fewer stages or a smaller tile");
  static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kThreads * (65536 / kThreads / 8 * 8),
                "register split exceeds the registers the CTA is launched with");
  // What issue_mma (consumer.cuh) reads: register-A wgmmas of BLOCK_T columns, E4M3 (mx) or
  // FP16 / BF16 (nv).
  static constexpr bool kFp8 = kKind == ScaleKind::mx;
  static constexpr bool kBF16 = kKind == ScaleKind::nv && Cfg::kScaleCode != ScaleCode::ue4m3;
  static constexpr int kAblate = 0;
  using MmaFp8 = WgmmaRS_e4m3<BLOCK_T>;
  using MmaF16 = WgmmaRS_f16<BLOCK_T>;
  using MmaBF16 = WgmmaRS_bf16<BLOCK_T>;
  // B's fragment of one K tile: 4 QGMMA or 8 HGMMA K steps of 4 registers.
  static constexpr int kFragRegs = kFp8 ? 16 : 32;
  static constexpr unsigned kAtomStride = BLOCK_T * 128;  // A's second 64-element atom (nv)
};

template <class T>
struct SwapSmem : AlignedSmem {
  __device__ __forceinline__ explicit SwapSmem(unsigned char* raw) : AlignedSmem(raw) {}
  __device__ __forceinline__ unsigned char* w_ptr(int s) const {
    return base + s * T::G.stage_bytes;
  }
  __device__ __forceinline__ unsigned char* x_ptr(int s) const { return w_ptr(s) + T::G.w_bytes; }
  __device__ __forceinline__ unsigned w(int s) const { return addr + s * T::G.stage_bytes; }
  __device__ __forceinline__ unsigned x(int s) const { return w(s) + T::G.w_bytes; }
  __device__ __forceinline__ unsigned luts(int s) const {
    return addr + T::G.aux_offset + s * T::G.aux_stage_bytes;
  }
  __device__ __forceinline__ unsigned w_factor(int s) const { return luts(s) + T::G.lut_bytes; }
  __device__ __forceinline__ unsigned x_factor(int s) const {
    return w_factor(s) + T::G.w_factor_bytes;
  }
  __device__ __forceinline__ unsigned char* x_factor_ptr(int s) const {
    return base + T::G.aux_offset + s * T::G.aux_stage_bytes + T::G.lut_bytes + T::G.w_factor_bytes;
  }
  __device__ __forceinline__ unsigned epi() const { return addr + T::G.epi_offset; }
  __device__ __forceinline__ unsigned table() const { return addr + T::G.table_offset; }
  __device__ __forceinline__ unsigned* table_ptr() const {
    return reinterpret_cast<unsigned*>(base + T::G.table_offset);
  }
  __device__ __forceinline__ unsigned long long* full(int s) const {
    return reinterpret_cast<unsigned long long*>(base + T::G.barrier_offset) + s;
  }
  __device__ __forceinline__ unsigned long long* empty(int s) const { return full(T::kStages + s); }
  __device__ __forceinline__ unsigned* split_flag() const {
    return reinterpret_cast<unsigned*>(base + T::G.scratch_offset);
  }
  // The cluster reduction's barriers: every CTA's partial rows of a pass are in its epilogue tile
  // (ready), every CTA has read this CTA's tile of the pass (free).
  __device__ __forceinline__ unsigned long long* red_ready() const {
    return reinterpret_cast<unsigned long long*>(base + T::G.scratch_offset + 8);
  }
  __device__ __forceinline__ unsigned long long* red_free() const {
    return reinterpret_cast<unsigned long long*>(base + T::G.scratch_offset + 16);
  }
};

// The scale warps: B's scale codes for this lane's rows of one segment (mx: one word, 4 blocks,
// per (row, K tile); nv: two words, 8 blocks). Codes past K or past N are loaded as 0; mx flags
// them in `invalid` (0xFF per byte: E8M0 code 0 is a scale), nv needs no flag (code 0 is scale 0).
template <class T>
__device__ __forceinline__ int swap_scale_row(int i) {  // tile row of the lane's i-th row
  return static_cast<int>(threadIdx.x) - 32 + 32 * T::kScaleWarps * i;
}

template <class T>
struct SwapSegmentCodes {
  static constexpr int kWords = T::kFp8 ? 1 : 2;
  static constexpr int kBlocks = 4 * kWords;  // per K tile
  unsigned code[T::kRowsPerLane][T::kPeriod][kWords];
  unsigned invalid[T::kRowsPerLane][T::kPeriod];
};

// Codes of K tiles [kt0, kt_end) (at most kPeriod) of the lane's rows of the tile at n0; `words`:
// the codes may be read as aligned words.
template <class Cfg, class T = SwapTraits<Cfg>>
__device__ __forceinline__ void swap_load_codes(const GemmParams& p, int n0, int kt0, int kt_end,
                                                bool words, SwapSegmentCodes<T>& c) {
  using C = SwapSegmentCodes<T>;
  const int blocks = p.K / (T::kFp8 ? 32 : 16);
#pragma unroll
  for (int i = 0; i < T::kRowsPerLane; ++i) {
    const int row = n0 + swap_scale_row<T>(i);
    const unsigned char* src =
        p.b_scale + static_cast<long long>(row / Cfg::kBBlockRows) * p.b_scale_ld;
#pragma unroll
    for (int t = 0; t < T::kPeriod; ++t) {
      const int b0 = C::kBlocks * (kt0 + t);
      // Valid blocks: all, fewer in the K tile that ends K, none past N or the segment.
      const int nvalid = row < p.N && kt0 + t < kt_end ? min(blocks - b0, C::kBlocks) : 0;
      unsigned v[C::kWords];
      if (nvalid == C::kBlocks && words) {
#pragma unroll
        for (int j = 0; j < C::kWords; ++j)
          v[j] = __ldg(reinterpret_cast<const unsigned*>(src + b0) + j);
      } else {
        // One 64-bit value, not v[j / 4]: a run-time index would put v in local memory.
        unsigned long long all = 0ull;
#pragma unroll 1
        for (int j = 0; j < nvalid; ++j)
          all |= static_cast<unsigned long long>(__ldg(src + b0 + j)) << (8 * j);
#pragma unroll
        for (int j = 0; j < C::kWords; ++j) v[j] = static_cast<unsigned>(all >> (32 * j));
      }
#pragma unroll
      for (int j = 0; j < C::kWords; ++j) c.code[i][t][j] = v[j];
      c.invalid[i][t] = nvalid >= 4 ? 0u : 0xFFFFFFFFu << (8 * max(nvalid, 0));
    }
  }
}

// The scale warps' walk over a segment's K tiles: for each, wait until its stage is free, write
// the lane's rows (write(stage, tile, i, tile row of the lane's i-th row)), arrive on the stage's
// full barrier.
template <class T, class Smem, class Ring, class Write>
__device__ __forceinline__ void swap_write_tiles(const Smem& sm, Ring& pos, int seg_tiles,
                                                 const Write& write) {
#pragma unroll
  for (int t = 0; t < T::kPeriod; ++t) {
    if (t >= seg_tiles) break;
    const int s = pos.slot();
    mbar_wait(sm.empty(s), pos.empty_parity());
#pragma unroll
    for (int i = 0; i < T::kRowsPerLane; ++i) write(s, t, i, swap_scale_row<T>(i));
    warp_arrive(sm.full(s));
    pos.advance();
  }
}

// mx: the segment's references and factors, then per K tile the rows' E4M3 table words.
template <class T, class Smem, class Ring>
__device__ __forceinline__ void swap_write_mx(const Smem& sm, Ring& pos,
                                              const SwapSegmentCodes<T>& cur, int seg_tiles) {
  // ref: the largest valid code per row (NaN codes aside); shift t = e - ref + 14 per block,
  // kLutZero for blocks past K or N and for NaN codes (whose row's factor is NaN).
  unsigned ref4[T::kRowsPerLane], factor[T::kRowsPerLane];
#pragma unroll
  for (int i = 0; i < T::kRowsPerLane; ++i) {
    unsigned m = 0u, nan = 0u;
#pragma unroll
    for (int t = 0; t < T::kPeriod; ++t) {
      const unsigned ff = __vcmpeq4(cur.code[i][t][0], 0xFFFFFFFFu);
      nan |= ff;
      m = __vmaxu4(m, cur.code[i][t][0] & ~ff);
    }
    m = __vmaxu4(m, m >> 16);
    m = __vmaxu4(m, m >> 8) & 0xFFu;
    ref4[i] = m * 0x01010101u;
    factor[i] = nan != 0u
                    ? 0x7FC00000u
                    : __float_as_uint(pow2f(static_cast<int>(m) - 127 - kLutMaxShift + kLutBias));
  }
  swap_write_tiles<T>(sm, pos, seg_tiles, [&](int s, int t, int i, int row) {
    const unsigned e = cur.code[i][t][0];
    const unsigned skip = cur.invalid[i][t] | __vcmpeq4(e, 0xFFFFFFFFu);
    const unsigned below = __vsub4(ref4[i], e);  // ref - e per block, >= 0
    // Cannot exceed 14 after the expansion pass's check of the same codes (check_scale_window:
    // the same segments, NaN codes and blocks past K aside). The fused fallback has already read
    // the flag and left, so a shift outside the window here is a broken invariant: stop the
    // kernel (a launch error on the stream) rather than write an approximation.
    if ((__vcmpgtu4(below, 0x0E0E0E0Eu) & ~skip) != 0u) __trap();
    const unsigned shifts =
        (__vsub4(0x0E0E0E0Eu, below) & ~skip) | (0x0F0F0F0Fu & skip);  // kLutZero = 15
    unsigned lut[8];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      lds64(sm.table() + 8 * ((shifts >> (8 * j)) & 0xFFu), lut[2 * j], lut[2 * j + 1]);
    sts128(sm.luts(s) + 32 * row, lut[0], lut[1], lut[2], lut[3]);
    sts128(sm.luts(s) + 32 * row + 16, lut[4], lut[5], lut[6], lut[7]);
    if (t == seg_tiles - 1) sts32(sm.w_factor(s) + 4 * row, factor[i]);
  });
}

// nv: per K tile the rows' 8 block scales, decoded by the constant table (pairs of equal halves),
// in the order b0 b2 b4 b6 b1 b3 b5 b7.
template <class T, class Smem, class Ring>
__device__ __forceinline__ void swap_write_nv(const Smem& sm, Ring& pos,
                                              const SwapSegmentCodes<T>& cur, int seg_tiles) {
  swap_write_tiles<T>(sm, pos, seg_tiles, [&](int s, int t, int i, int row) {
    unsigned v[8];
#pragma unroll
    for (int b = 0; b < 8; ++b)
      v[4 * (b & 1) + b / 2] =
          lds32(sm.table() + 4 * ((cur.code[i][t][b / 4] >> (8 * (b % 4))) & 0xFFu));
    sts128(sm.luts(s) + 32 * row, v[0], v[1], v[2], v[3]);
    sts128(sm.luts(s) + 32 * row + 16, v[4], v[5], v[6], v[7]);
  });
}

// Epilogue helpers. The fragment (element j = v0 + 2 v1 + 4 v2 is B row g + 8 v1, D's column n,
// and A row 8 v2 + 2 tig + v0, D's row m) goes to a [64][128 + 4] FP32 tile at epi (conflict-free)
// one pass of 64 rows of A (D's rows) at a time; then the tile's rows are written out whole.
template <class T>
__device__ __forceinline__ void swap_stage_pass(unsigned epi, const ConsumerRows& rw,
                                                const float (&acc)[T::kAccum], int h) {
#pragma unroll
  for (int v2 = 8 * h; v2 < 8 * h + 8; ++v2)
#pragma unroll
    for (int v1 = 0; v1 < 2; ++v1)
#pragma unroll
      for (int v0 = 0; v0 < 2; ++v0) {
        const int ml = 8 * (v2 - 8 * h) + 2 * rw.tig + v0;
        sts32(epi + 4 * (ml * T::kEpiLd + (v1 ? rw.r1 : rw.r0)),
              __float_as_uint(acc[4 * v2 + 2 * v1 + v0]));
      }
}

// D[m, n .. n + 3] from the sums x (columns from N on dropped): times base, plus the bias and
// beta * C; vec4: D's rows allow whole 4-element stores.
template <class Cfg>
__device__ __forceinline__ void swap_store4(const GemmParams& p, int m, int n, float (&x)[4],
                                            float base, bool vec4) {
  const int cols = min(p.N - n, 4);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[i] *= base;
    if (i < cols) {
      if (p.bias != nullptr) x[i] += gemm::load_bias(p.bias, p.bias_type, n + i);
      if (p.c != nullptr && p.beta != 0.0f)
        x[i] =
            fmaf(p.beta, load_out<Cfg::kOut>(p.c, static_cast<long long>(m) * p.ldc + n + i), x[i]);
    }
  }
  const long long at = static_cast<long long>(m) * p.ldd + n;
  if (cols == 4 && vec4) {
    gemm::store_pair<Cfg::kOut>(p.d, at, x[0], x[1], true, true);
    gemm::store_pair<Cfg::kOut>(p.d, at + 2, x[2], x[3], true, true);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (i < cols) gemm::store_one<Cfg::kOut>(p.d, at + i, x[i]);
  }
}

template <class Cfg>
__device__ __forceinline__ bool swap_vec4(const GemmParams& p) {
  return p.ldd % 4 == 0 &&
         reinterpret_cast<unsigned long long>(p.d) % (Cfg::kOut == OutType::f32 ? 16 : 8) == 0;
}

// Split-K in a cluster (Cfg::kSplitCluster): the p.splits CTAs of a cluster (2..8) share a tile,
// CTA rank r its K split r. Per pass of 64 rows of A each CTA stages its partial sums in its own
// epilogue tile, and CTA r sums rows [64 r / S, 64 (r + 1) / S) of the pass over the cluster's
// tiles through distributed shared memory (in rank order from 0.0f, as splitk_reduce adds the
// global partials: the same bits). No global workspace, counters or atomics. The cluster-scope
// releases of the barrier arrivals wait for the thread's outstanding memory operations, so every
// pass is summed into registers first and D is written after the last one. `passes` counts the
// reduction passes so far (the barriers' phases); a pass waits until every CTA has read this
// CTA's tile of the pass before.
template <class Cfg, class T, class Smem>
__device__ __forceinline__ void swap_cluster_store(const GemmParams& p, const WorkUnit& w,
                                                   const ConsumerRows& rw,
                                                   const float (&acc)[T::kAccum], const Smem& sm,
                                                   unsigned& passes) {
  constexpr int kPasses = T::BLOCK_T / 64;
  constexpr int kItems = 4;  // (rows, 4 columns) per thread and pass: 32 x 32 / 256 for S >= 2
  const int ctid = static_cast<int>(threadIdx.x) - 128;
  const int splits = p.splits;
  const int rank = static_cast<int>(cluster_ctarank());
  const int lo = 64 * rank / splits, items = (64 * (rank + 1) / splits - lo) * 32;
  const unsigned epi = sm.epi();
  float x[kPasses][kItems][4];
#pragma unroll
  for (int h = 0; h < kPasses; ++h) {
    if (passes > 0) mbar_wait_cluster(sm.red_free(), (passes - 1) & 1u);
    swap_stage_pass<T>(epi, rw, acc, h);
    named_barrier_sync(3, T::kConsumers);  // the CTA's partial rows are written
    if (ctid < splits) mbar_arrive_release_cluster(sm.red_ready(), static_cast<unsigned>(ctid));
    mbar_wait_cluster(sm.red_ready(), passes & 1u);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int e = ctid + T::kConsumers * i;
      x[h][i][0] = x[h][i][1] = x[h][i][2] = x[h][i][3] = 0.0f;
      if (e >= items) continue;
      const unsigned at = epi + 4 * ((lo + (e >> 5)) * T::kEpiLd + (e & 31) * 4);
#pragma unroll 1
      for (int s = 0; s < splits; ++s) {
        const float4 v = ld_cluster_f4(cluster_map(at, static_cast<unsigned>(s)));
        x[h][i][0] += v.x;
        x[h][i][1] += v.y;
        x[h][i][2] += v.z;
        x[h][i][3] += v.w;
      }
    }
    named_barrier_sync(3, T::kConsumers);  // the CTA's reads of the pass are done
    if (ctid < splits) mbar_arrive_release_cluster(sm.red_free(), static_cast<unsigned>(ctid));
    ++passes;
  }
  const float base = epilogue_base<T::kKind>(p);
  const bool vec4 = swap_vec4<Cfg>(p);
#pragma unroll
  for (int h = 0; h < kPasses; ++h)
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int e = ctid + T::kConsumers * i;
      const int m = w.m0 + 64 * h + lo + (e >> 5), n = w.n0 + (e & 31) * 4;
      if (e < items && m < p.M && n < p.N) swap_store4<Cfg>(p, m, n, x[h][i], base, vec4);
    }
}

// A unit's partial sums in acc to D (the swapped and direct kernels): split-K within a cluster
// (Cfg::kSplitCluster, swap_cluster_store) or through the global workspace (splitk_reduce: only
// the last split stores), then the epilogue through shared memory, 64 rows of A (D's rows) per
// pass, each warp writing whole 512-byte rows of D's tile. A compact loop: it runs once per unit,
// cold in the instruction cache (the fragment-order version, 64 scattered stores, was 2x the code).
template <class Cfg, class T, class Smem>
__device__ __forceinline__ void swap_store_unit(const GemmParams& p, const WorkUnit& w,
                                                const ConsumerRows& rw, float (&acc)[T::kAccum],
                                                const Smem& sm, unsigned& passes) {
  if constexpr (Cfg::kSplitCluster) {
    swap_cluster_store<Cfg, T>(p, w, rw, acc, sm, passes);
    return;
  }
  if (!splitk_reduce<T>(p, w, sm.split_flag(), acc)) return;
  const int ctid = static_cast<int>(threadIdx.x) - 128;
  const float base = epilogue_base<T::kKind>(p);
  const unsigned epi = sm.epi();
  const bool vec4 = swap_vec4<Cfg>(p);
#pragma unroll
  for (int h = 0; h < T::BLOCK_T / 64; ++h) {
    named_barrier_sync(3, T::kConsumers);  // the previous pass's reads are done
    swap_stage_pass<T>(epi, rw, acc, h);
    named_barrier_sync(3, T::kConsumers);
#pragma unroll 1
    for (int e = ctid; e < 64 * 32; e += T::kConsumers) {
      const int ml = e >> 5, nl = (e & 31) * 4;
      const int m = w.m0 + 64 * h + ml, n = w.n0 + nl;
      if (m >= p.M || n >= p.N) continue;
      float x[4];
      lds128(epi + 4 * (ml * T::kEpiLd + nl), reinterpret_cast<unsigned&>(x[0]),
             reinterpret_cast<unsigned&>(x[1]), reinterpret_cast<unsigned&>(x[2]),
             reinterpret_cast<unsigned&>(x[3]));
      swap_store4<Cfg>(p, m, n, x, base, vec4);
    }
  }
}

// At a split-in-cluster kernel's end: peers read this CTA's epilogue tile until they arrive on its
// free barrier for the last pass, so its shared memory must outlive that.
template <class Cfg, class Smem>
__device__ __forceinline__ void swap_cluster_drain(const Smem& sm, unsigned passes) {
  if constexpr (Cfg::kSplitCluster)
    if (passes > 0) mbar_wait_cluster(sm.red_free(), (passes - 1) & 1u);
}

template <class Cfg>
__global__ void __launch_bounds__(SwapTraits<Cfg>::kThreads, 1)
    gemm_swap_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                     const GemmParams p_in) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  using T = SwapTraits<Cfg>;
  const GemmParams p = with_fixed_sizes<Cfg>(p_in);
  extern __shared__ unsigned char smem_raw[];
  const SwapSmem<T> sm(smem_raw);
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < T::kStages; ++s) {
      mbar_init(sm.full(s), 1 + T::kScaleWarps);  // the TMA issuer's expect_tx, the scale warps
      mbar_init(sm.empty(s), 8);                  // one arrival per consumer warp
    }
    if constexpr (Cfg::kSplitCluster) {            // one arrival per CTA of the cluster
      if (p.splits < 2 || p.splits > 8) __trap();  // the host launches clusters of 2..8 splits
      mbar_init(sm.red_ready(), static_cast<unsigned>(p.splits));
      mbar_init(sm.red_free(), static_cast<unsigned>(p.splits));
    }
    fence_barrier_init();
    tma_prefetch_desc(&tma_a);
    tma_prefetch_desc(&tma_b);
  }
  if constexpr (T::kFp8) {
    if (tid < kLutEntries) {
      unsigned lo, hi;
      e4m3_lut(tid, lo, hi);
      sm.table_ptr()[2 * tid] = lo;
      sm.table_ptr()[2 * tid + 1] = hi;
    }
  } else if (tid < 256) {
    const unsigned h = nv_decode_bits<T::kBF16>(Cfg::kScaleCode, static_cast<unsigned>(tid));
    sm.table_ptr()[tid] = h | (h << 16);
  }
  __syncthreads();
  // The peers' reduction barriers are initialized before any CTA of the cluster arrives on them.
  if constexpr (Cfg::kSplitCluster) cluster_sync();

  // Tiles: BLOCK_T rows of A (M) x 128 rows of B (N); split-K over whole segments.
  static_assert(!(Cfg::kStreamK && Cfg::kSplitCluster), "stream-K sums through the workspace");
  using Sched = typename nx::Pick<
      Cfg::kStreamK, StreamScheduler<T::BLOCK_T, T::BLOCK_W, Cfg::kRasterGroup, Cfg::kRasterAlongM>,
      TileScheduler<T::BLOCK_T, T::BLOCK_W, Cfg::kRasterGroup, Cfg::kRasterAlongM>>::type;
  const int k_tiles = (p.K + T::BLOCK_K - 1) / T::BLOCK_K;
  const Sched sched = [&] {
    if constexpr (Cfg::kStreamK)
      return Sched(p.M, p.N, staged_k_units(k_tiles, T::kPeriod), static_cast<int>(gridDim.x),
                   static_cast<int>(blockIdx.x));
    else
      return Sched(p.M, p.N, staged_k_units(k_tiles, T::kPeriod), p.splits);
  }();
  const auto k_range = [&](WorkUnit& w) { segments_to_k_tiles(w, T::kPeriod, k_tiles); };
  const int first = static_cast<int>(blockIdx.x), stride = static_cast<int>(gridDim.x);
  RingSlot<T::kStages> pos;

  // Launched as a dependent of A's expansion (gemm_launch.cpp): everything above overlapped its
  // end; its output (A's operand and factors, the window flag) is read only after this. (Starting
  // the nv scale warps and prefetching B's first K tiles to L2 before this wait was measured 3-7 %
  // slower on an H100: bench/gemm_sm90_notes.md.)
  wait_prerequisite_grid();
  // The expansion pass found a code outside the exact window: the fused kernel launched next does
  // the work.
  if (gemm::window_failed(p)) return;
  // The fused fallback (mx), launched next as a programmatic dependent, may start now: the flag
  // is final (the expansion grid has completed), so it leaves at once when the window held.
  launch_dependents();

  if (tid < 128) {
    setmaxnreg_dec<T::kProducerRegs>();
    if (tid == 0) {
      issue_stages<T::kPeriod>(
          sched, first, stride, k_range, pos, sm,
          [&](int s, const WorkUnit& w, int kt, bool seg_last, long long seg) {
            // mx: A's segment factors travel with a segment's last K tile (tma_bytes).
            const bool factors = T::kFp8 && seg_last;
            mbar_arrive_expect_tx(sm.full(s), factors ? T::G.tma_bytes : T::G.tile_bytes);
            tma_load_2d(sm.w_ptr(s), &tma_b, sm.full(s), 64 * kt, w.n0);
            // A's K tile: one 128-byte atom per row (E4M3), two for 16-bit elements.
            constexpr int kAtoms = T::kFp8 ? 1 : 2;
#pragma unroll
            for (int a = 0; a < kAtoms; ++a)
              tma_load_2d(sm.x_ptr(s) + a * T::kAtomStride, &tma_a, sm.full(s),
                          128 * (kAtoms * kt + a), w.m0);
            if (factors)
              bulk_load(sm.x_factor_ptr(s), p.a_factor + seg * p.a_factor_ld + w.m0,
                        T::G.x_factor_bytes, sm.full(s));
          });
    } else if (tid >= 32 && tid < 32 * (1 + T::kScaleWarps)) {
      // B's scales, a segment ahead: each iteration loads the next segment's codes, then writes
      // the segment loaded before (one call site each: this code runs cold at the start of every
      // launch, and its size showed as instruction-fetch stalls).
      const bool words =
          ((reinterpret_cast<unsigned long long>(p.b_scale) | static_cast<unsigned>(p.b_scale_ld)) &
           3u) == 0u;
      SwapSegmentCodes<T> cur{}, nxt{};
      int seg_tiles = 0;                           // K tiles of the segment in cur (0: none yet)
      int lu = first, lkt = 0, lend = 0, ln0 = 0;  // the segment to load next
      if (lu < sched.units) {
        WorkUnit w = sched.unit(lu);
        k_range(w);
        lkt = w.kt_begin, lend = w.kt_end, ln0 = w.n0;
      }
      while (true) {
        int load_tiles = 0;
        if (lu < sched.units) {
          const int seg_end = min((lkt / T::kPeriod + 1) * T::kPeriod, lend);
          swap_load_codes<Cfg>(p, ln0, lkt, seg_end, words, nxt);
          load_tiles = seg_end - lkt;
          lkt = seg_end;
          if (lkt >= lend) {
            lu += stride;
            if (lu < sched.units) {
              WorkUnit w = sched.unit(lu);
              k_range(w);
              lkt = w.kt_begin, lend = w.kt_end, ln0 = w.n0;
            }
          }
        }
        if (seg_tiles > 0) {
          if constexpr (T::kFp8)
            swap_write_mx<T>(sm, pos, cur, seg_tiles);
          else
            swap_write_nv<T>(sm, pos, cur, seg_tiles);
        }
        if (load_tiles == 0) break;
        cur = nxt;
        seg_tiles = load_tiles;
      }
    }
    return;
  }

  setmaxnreg_inc<T::kConsumerRegs>();
  const int ctid = tid - 128;  // 0..255
  const ConsumerRows rw = consumer_rows(ctid);
  const E2m1Tables16<T::kBF16> tab = E2m1Tables16<T::kBF16>::in_registers();  // nv expansion
  // Offsets of the thread's packed words in B's stage (64-byte rows, 64-byte swizzle: 16-byte
  // unit st of row r at st ^ ((r >> 1) & 3)), per K step.
  unsigned w_off0[4], w_off1[4];
#pragma unroll
  for (int st = 0; st < 4; ++st) {
    w_off0[st] = rw.r0 * 64 + 16 * (st ^ ((rw.r0 >> 1) & 3)) + 4 * rw.tig;
    w_off1[st] = rw.r1 * 64 + 16 * (st ^ ((rw.r1 >> 1) & 3)) + 4 * rw.tig;
  }

  // B's fragment of stage s, T::kFragRegs registers: per K step (row r0, row r1) x (a0, a2).
  const auto expand = [&](int s, unsigned(&fr)[T::kFragRegs]) {
    const unsigned pw = sm.w(s);
    if constexpr (T::kFp8) {
      // 4 QGMMA steps; step st: word st of each row's units, with its block's E4M3 table.
      unsigned l0[8], l1[8];  // the E4M3 tables of the rows' 4 blocks (lo, hi words)
      lds128(sm.luts(s) + 32 * rw.r0, l0[0], l0[1], l0[2], l0[3]);
      lds128(sm.luts(s) + 32 * rw.r0 + 16, l0[4], l0[5], l0[6], l0[7]);
      lds128(sm.luts(s) + 32 * rw.r1, l1[0], l1[1], l1[2], l1[3]);
      lds128(sm.luts(s) + 32 * rw.r1 + 16, l1[4], l1[5], l1[6], l1[7]);
#pragma unroll
      for (int st = 0; st < 4; ++st) {
        const unsigned w0 = lds32(pw + w_off0[st]), w1 = lds32(pw + w_off1[st]);
        e2m1x8_to_e4m3_lut(w0, l0[2 * st], l0[2 * st + 1], fr[4 * st + 0], fr[4 * st + 2]);
        e2m1x8_to_e4m3_lut(w1, l1[2 * st], l1[2 * st + 1], fr[4 * st + 1], fr[4 * st + 3]);
      }
    } else {
      // 8 HGMMA steps; unit st's word (block 2 st + tig / 2, scale word st of the thread's half)
      // feeds steps 2 st (element pairs 0, 1) and 2 st + 1 (pairs 2, 3).
      unsigned s0[4], s1[4];
      lds128(sm.luts(s) + 32 * rw.r0 + 16 * (rw.tig >> 1), s0[0], s0[1], s0[2], s0[3]);
      lds128(sm.luts(s) + 32 * rw.r1 + 16 * (rw.tig >> 1), s1[0], s1[1], s1[2], s1[3]);
#pragma unroll
      for (int st = 0; st < 4; ++st) {
        const unsigned w0 = lds32(pw + w_off0[st]), w1 = lds32(pw + w_off1[st]);
        unsigned a[4], b[4];
        e2m1x8_to_16bit<T::kBF16>(w0, a[0], a[1], a[2], a[3], tab);
        e2m1x8_to_16bit<T::kBF16>(w1, b[0], b[1], b[2], b[3], tab);
#pragma unroll
        for (int j = 0; j < 4; ++j) {  // step 2 st + j / 2, register a0 (j even) or a2
          fr[8 * st + 4 * (j / 2) + 2 * (j % 2)] = mul16x2<T::kBF16>(a[j], s0[st]);
          fr[8 * st + 4 * (j / 2) + 2 * (j % 2) + 1] = mul16x2<T::kBF16>(b[j], s1[st]);
        }
      }
    }
  };
  // acc += tmp * b_factor[row] * a_factor[token] with stage s's factors (mx).
  const auto promote = [&](const float(&tmp)[T::kAccum], int s, float(&acc)[T::kAccum]) {
    promote_fragment<T::BLOCK_T, true>(tmp, __uint_as_float(lds32(sm.w_factor(s) + 4 * rw.r0)),
                                       __uint_as_float(lds32(sm.w_factor(s) + 4 * rw.r1)),
                                       sm.x_factor(s), rw.tig, acc);
  };

  unsigned passes = 0;  // cluster reduction passes (Cfg::kSplitCluster)
  for (int u = first; u < sched.units; u += stride) {
    WorkUnit w = sched.unit(u);
    k_range(w);
    float acc[T::kAccum], tmp[T::kFp8 ? T::kAccum : 1];
#pragma unroll
    for (int i = 0; i < T::kAccum; ++i) acc[i] = 0.0f;
    unsigned fa[T::kFragRegs], fb[T::kFragRegs];
    int kt = w.kt_begin;
    // One K tile: issue its wgmmas, expand the next tile's fragment while they run, wait, (mx)
    // promote after a segment's last tile, release the stage. Each group is waited for before
    // the next is issued: a fragment written while an earlier group is in flight and read by a
    // later one makes ptxas serialize every wgmma (its C7513), which cost 5x here; the other
    // warpgroup keeps the tensor cores busy meanwhile.
    const auto step = [&](const unsigned(&cur)[T::kFragRegs],
                          unsigned(&nxt)[T::kFragRegs]) -> bool {
      const bool seg_first = kt == w.kt_begin || kt % T::kPeriod == 0;
      const bool seg_last = (kt + 1) % T::kPeriod == 0 || kt + 1 == w.kt_end;
      const int s = pos.slot();
      if constexpr (T::kFp8)
        issue_mma<T>(tmp, cur, sm.x(s), !seg_first);
      else
        issue_mma<T>(acc, cur, sm.x(s), kt != w.kt_begin, T::kAtomStride);
      pos.advance();
      const bool more = kt + 1 < w.kt_end;
      if (more) {
        mbar_wait(sm.full(pos.slot()), pos.full_parity());
        expand(pos.slot(), nxt);
      }
      wgmma_wait<0>();
      if constexpr (T::kFp8) {
        fence_operands(tmp);
        if (seg_last) promote(tmp, s, acc);
      } else {
        fence_operands(acc);
      }
      warp_arrive(sm.empty(s));
      ++kt;
      return !more;
    };
    mbar_wait(sm.full(pos.slot()), pos.full_parity());
    expand(pos.slot(), fa);
    while (true) {
      if (step(fa, fb)) break;
      if (step(fb, fa)) break;
    }
    swap_store_unit<Cfg, T>(p, w, rw, acc, sm, passes);
  }
  swap_cluster_drain<Cfg>(sm, passes);
#endif
}

}  // namespace fp4jit::sm90
