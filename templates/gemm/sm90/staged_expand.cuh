// Expansion pass of the staged sm90 GEMM (staged.cuh): one quantized operand [rows, K] is
// rewritten as the tensor-core operand the staged kernel loads with TMA and multiplies with
// shared-memory wgmma, exactly (every value below is representable, no rounding happens):
//   ms       E4M3 bytes of E2M1 * 2^-6 (the per-row scales stay for the epilogue)
//   mx       E4M3 bytes of E2M1 * 2^(t - 8), t = e - ref + 14 in [0, 14] for a block of scale
//            code e and the largest code ref of its row's segment (kPeriod K tiles of 128
//            elements); the segment's factor 2^(ref - 133) goes to factor[seg * factor_ld + row].
//            With Cfg::kSplitFactors (the staged kernel, which applies A's and B's factors apart:
//            staged_geometry.cuh, kSplitFactorExp) B's ref is the largest code of its whole row
//            and its one factor goes to factor[row] (one warp per row: expand_mx_row), and a
//            factor of either operand outside 2^+-kSplitFactorExp writes the mark as well
//   nv       FP16 (UE4M3) or BF16 (UE5M3) of E2M1 * block scale (the tensor scales stay for the
//            epilogue)
//   ms_grad  A: FP16 of the E5M2 codes (the per-tensor scale stays for the epilogue);
//            B: FP16 of E2M1 * 2^(c_k - ref), c_k the exponent of column k's power-of-two scale
//            and ref the largest over the segment (kPeriod K tiles of 64 elements); factor 2^ref
//            for every row
// Blocks whose codes are all zero take no part in ref (they expand to zero whatever their scale).
// A shift below the window (mx: t < 0; ms_grad: c_k - ref < -23) writes the call's mark into
// *flag (GemmParams::fallback_mark): the staged kernel then leaves D to the fused kernel, which
// handles any spread. NaN scales give NaN factors (the whole row, or for ms_grad the whole
// segment, of the product is NaN, as in the reference).
//
// Element order: ms keeps expand.cuh's even/odd order inside every 8 elements; the staged kernel
// applies it to both operands, which leaves the product unchanged.
//
// One thread per 32-element chunk (16 packed bytes): threads of one segment sit in consecutive
// lanes (4 per K tile on the FP8 path, 2 on the 16-bit path) and share the segment's reference
// through shuffles (ms_grad B: one chunk of 8 rows per thread, expand_rows_per_thread; mx: two
// chunks per thread, expand_units_per_thread). 256 threads per CTA; grid = expand_grid_ctas:
// ceil(row_groups * chunks_pad / (256 * units)), chunks_pad = K / 32 rounded up to a whole
// segment (expand_chunks_pad). mx B with kSplitFactors: one warp per row, grid =
// expand_whole_row_ctas(rows).
#pragma once
#include "gemm/params.cuh"
#include "gemm/sm90/config.cuh"
#include "gemm/sm90/expand.cuh"
#include "gemm/sm90/nv_decode.cuh"
#include "gemm/sm90/staged_geometry.cuh"

namespace fp4jit::sm90 {

struct ExpandConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::mx;
  static constexpr bool kOperandB = false;  // ms_grad: A holds E5M2 codes, B E2M1
  static constexpr ScaleCode kScaleCode = ScaleCode::ue4m3;
  static constexpr int kBlockRows = 1;  // nv: 1 or 16
  static constexpr int kPeriod = 1;     // mx, ms_grad B: K tiles per segment (staged_geometry.cuh)
  // Write each 32-element chunk in the register-fragment order of swap.cuh, for the swapped
  // kernel whose other operand's fragments take that order: mx, expanded word q holds elements
  // 8q..8q+3 for q < 4 and 8(q-4)+4..8(q-4)+7 for q >= 4; nv, word 4j + i holds elements
  // 8i + 2j, 8i + 2j + 1 (i, j < 4: the 4 x 4 transpose of the chunk's element pairs).
  static constexpr bool kFragOrder = false;
  // mx: the GEMM applies A's and B's factors apart (the staged kernel): B's reference over its
  // whole row, both factors' range checked (header comment).
  static constexpr bool kSplitFactors = false;
};

template <class Cfg>
struct ExpandTraits {
  static constexpr ScaleKind kKind = Cfg::kKind;
  static constexpr bool kFp8 = kKind == ScaleKind::ms || kKind == ScaleKind::mx;
  static constexpr bool kBF16 = kKind == ScaleKind::nv && Cfg::kScaleCode != ScaleCode::ue4m3;
  static constexpr int kTileChunks =
      kFp8 ? 4 : 2;  // 32-element chunks per K tile (128 bytes expanded)
  static constexpr int kOutChunkBytes = kFp8 ? 32 : 64;
  static constexpr int kPeriod = Cfg::kPeriod;
  static constexpr int kSegChunks = kTileChunks * kPeriod;  // lanes sharing one reference
  static constexpr int kRowsPerThread = expand_rows_per_thread(kKind, Cfg::kOperandB);
  static constexpr int kThreads = 256;
  static_assert(staged_period_ok(kKind == ScaleKind::mx || kKind == ScaleKind::ms_grad, kPeriod),
                "kPeriod: 1, 2, 4 or 8 where the path promotes, else 1");
};

// Max over the kLanes lanes of a segment.
template <int kLanes>
__device__ __forceinline__ int tile_max(int v) {
#pragma unroll
  for (int o = 1; o < kLanes; o <<= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float pow2f(int e) {  // exact 2^e for e in [-149, 127]
  if (e >= -126) return __uint_as_float(static_cast<unsigned>(e + 127) << 23);
  return __uint_as_float(1u << (e + 149));
}

// Stores the warp's expanded chunks. The warp's chunks are consecutive (row, chunk) pairs, so its
// outputs are runs of contiguous bytes; each lane storing its own 32 or 64 bytes made every store
// instruction touch 32 half-filled sectors (the nvfp4 expansion ran at 1.8 TB/s). Instead the
// warp stages its chunks in shared memory (16-byte units XOR-swizzled by lane, so neither the
// staging writes nor the reads conflict) and stores consecutive units, 512 contiguous bytes per
// instruction inside a row. Every lane of the warp calls it (it shuffles); inactive lanes store
// nothing.
template <int kChunkBytes>
__device__ __forceinline__ void warp_store_chunks(unsigned char* warp_stage,
                                                  const unsigned (&o)[kChunkBytes / 4], int row,
                                                  int c, bool active, const gemm::ExpandParams& p) {
  constexpr int kUnits = kChunkBytes / 16;  // per chunk: 2 or 4
  const int lane = threadIdx.x & 31;
  uint4* stage = reinterpret_cast<uint4*>(warp_stage) + (threadIdx.x >> 5) * 32 * kUnits;
  const auto swz = [](int chunk_lane, int u) {
    return chunk_lane * kUnits + (u ^ ((chunk_lane >> (kUnits == 4 ? 1 : 2)) & (kUnits - 1)));
  };
  __syncwarp();  // the previous call's reads of the stage are done
#pragma unroll
  for (int u = 0; u < kUnits; ++u)
    stage[swz(lane, u)] = make_uint4(o[4 * u], o[4 * u + 1], o[4 * u + 2], o[4 * u + 3]);
  __syncwarp();
#pragma unroll
  for (int j = 0; j < kUnits; ++j) {
    const int unit = 32 * j + lane, src = unit / kUnits, u = unit % kUnits;
    const int srow = __shfl_sync(0xffffffffu, row, src);
    const int sc = __shfl_sync(0xffffffffu, c, src);
    if (__shfl_sync(0xffffffffu, active ? 1 : 0, src) != 0)
      *reinterpret_cast<uint4*>(
          static_cast<unsigned char*>(p.out) + static_cast<long long>(srow) * p.out_ld +
          static_cast<long long>(sc) * kChunkBytes + 16 * u) = stage[swz(src, u)];
  }
}

// Whether a chunk of 32 packed E2M1 codes holds a nonzero value.
__device__ __forceinline__ bool codes_nonzero(const uint4& v) {
  return ((v.x | v.y | v.z | v.w) & 0x77777777u) != 0u;
}

// Chunk c of a row's packed codes and its block's scale code (mx), where `in`; else zero codes and
// scale (no nonzero codes: no part in a reference, nothing stored).
__device__ __forceinline__ void load_mx_chunk(const unsigned char* codes,
                                              const unsigned char* scale, int c, bool in, uint4& v,
                                              int& e) {
  v = make_uint4(0u, 0u, 0u, 0u);
  e = 0;
  if (in) {
    v = *reinterpret_cast<const uint4*>(codes + 16ll * c);
    e = scale[c];
  }
}

// The mx factor of reference ref (the largest scale code of the blocks it covers): 2^(ref - 133);
// NaN where a block's scale is NaN, 1 where no block has nonzero codes (ref < 0).
__device__ __forceinline__ int mx_factor_exp(int ref) {
  return ref - 127 - kLutMaxShift + kLutBias;
}
__device__ __forceinline__ float mx_factor(int ref, bool any_nan) {
  return any_nan ? __uint_as_float(0x7FC00000u) : ref < 0 ? 1.0f : pow2f(mx_factor_exp(ref));
}
// Whether an mx factor applied apart from the other operand's stays inside 2^+-kSplitFactorExp.
__device__ __forceinline__ bool split_factor_ok(int ref) {
  const int x = mx_factor_exp(ref);
  return ref < 0 || (x >= -kSplitFactorExp && x <= kSplitFactorExp);
}

// The E4M3 bytes of one mx chunk (codes v, block scale code e; nan: e is NaN's code, nonzero:
// codes_nonzero(v)) against reference ref: NaN for a NaN scale, zero for all-zero codes, and below
// the window zero with the launch's mark written. kFragOrder: the swapped kernel's order
// (ExpandConfigBase).
template <bool kFragOrder>
__device__ __forceinline__ void mx_expand_chunk(const uint4& v, int e, bool nan, bool nonzero,
                                                int ref, const gemm::ExpandParams& p,
                                                unsigned (&o)[8]) {
  int shift = kLutZero;
  if (nan) {
    shift = kLutNan;
  } else if (nonzero) {
    shift = e - ref + kLutMaxShift;
    if (shift < 0) {
      *p.flag = p.flag_mark;
      shift = kLutZero;
    }
  }
  unsigned lut_lo, lut_hi;
  e4m3_lut(shift, lut_lo, lut_hi);
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (kFragOrder)
      e2m1x8_to_e4m3_lut(w[i], lut_lo, lut_hi, o[i], o[4 + i]);
    else
      e2m1x8_to_e4m3_lut(w[i], lut_lo, lut_hi, o[2 * i], o[2 * i + 1]);
  }
}

// ms_grad B: E2M1 times a power-of-two scale per K column. The columns' shifts depend on the
// column alone, so a thread takes one chunk of kRowsPerThread rows: it derives its 32 columns'
// FP16 multipliers (relative to the segment's largest scale) once and applies them to every row.
template <class T>
__device__ __forceinline__ void expand_ms_grad_b(const gemm::ExpandParams& p,
                                                 unsigned char* warp_stage, int row0, int c,
                                                 int chunks) {
  const bool col_active = row0 < p.rows && c < chunks;
  int ce[32];
  int top = -1000;
  bool bad = false;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    ce[j] = -1000;  // zero scale: the column contributes nothing
    if (col_active) {
      const float s = p.col_scale[32 * c + j];
      const unsigned u = __float_as_uint(s) & 0x7FFFFFFFu;
      if (u >= 0x7F800000u) {
        bad = true;
      } else if (u != 0u) {
        ce[j] = u >= 0x00800000u ? static_cast<int>(u >> 23) - 127
                                 : -150 + (32 - __clz(static_cast<int>(u)));
        top = max(top, ce[j]);
      }
    }
  }
  const int ref = tile_max<T::kSegChunks>(top);
  const int any_bad = tile_max<T::kSegChunks>(bad ? 1 : 0);
  // FP16 multipliers of the column pairs; a column below the window multiplies by zero and
  // makes the chunk's nonzero rows fall back.
  unsigned m2[16];
  bool outside = false;
#pragma unroll
  for (int q = 0; q < 16; ++q) {
    m2[q] = 0u;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int e = ce[2 * q + half];
      const int d = e == -1000 ? -1000 : e - ref;
      unsigned bits = 0u;
      if (d >= -14) {
        bits = static_cast<unsigned>(d + 15) << 10;
      } else if (d >= -24 + 1) {
        bits = 1u << (d + 24);
      } else if (d != -1000) {
        outside = true;
      }
      m2[q] |= bits << (16 * half);
    }
  }
  const float f = any_bad ? __uint_as_float(0x7FC00000u) : ref == -1000 ? 1.0f : pow2f(ref);
  const int seg = c / T::kSegChunks;
#pragma unroll 1
  for (int i = 0; i < T::kRowsPerThread; ++i) {
    const int row = row0 + i;
    const bool active = row < p.rows && c < chunks;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (active)
      v = *reinterpret_cast<const uint4*>(p.codes + static_cast<long long>(row) * p.code_ld +
                                          16ll * c);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
    if (outside && codes_nonzero(v)) *p.flag = p.flag_mark;
    unsigned o[16];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      unsigned l0, l1, h0, h1;
      e2m1x8_to_16bit<false>(w[k], l0, l1, h0, h1);
      o[4 * k + 0] = mul_f16x2(l0, m2[4 * k + 0]);
      o[4 * k + 1] = mul_f16x2(l1, m2[4 * k + 1]);
      o[4 * k + 2] = mul_f16x2(h0, m2[4 * k + 2]);
      o[4 * k + 3] = mul_f16x2(h1, m2[4 * k + 3]);
    }
    if (active && c % T::kSegChunks == 0)
      p.factor[static_cast<long long>(seg) * p.factor_ld + row] = f;
    warp_store_chunks<T::kOutChunkBytes>(warp_stage, o, row, c, active, p);
  }
}

// mx B of the staged kernel (Cfg::kSplitFactors): one warp per row (8 rows per CTA), the row's
// reference the largest scale code over all of K among blocks with nonzero codes. The row's
// codes are read twice: for the reference (kRowBatch chunks a lane in flight, only whether they
// are nonzero kept), then one chunk a lane at a time (from L1 / L2) to expand them, so that the
// path needs no more registers than A's (the pair launch takes the larger count of its two
// operands, and A's memory-bound expansion is paced by how many of its CTAs an SM holds).
constexpr int kRowBatch = 4;
template <class T>
__device__ __forceinline__ void expand_mx_row(const gemm::ExpandParams& p,
                                              unsigned char* warp_stage, int cta) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int row = cta * (T::kThreads / 32) + static_cast<int>(threadIdx.x >> 5);
  if (row >= p.rows) return;  // the whole warp
  const int chunks = p.K / 32;
  const unsigned char* codes = p.codes + static_cast<long long>(row) * p.code_ld;
  const unsigned char* scale = p.scale + static_cast<long long>(row) * p.scale_ld;
  int top = -1, nan = 0;
  for (int c0 = 0; c0 < chunks; c0 += 32 * kRowBatch) {
    bool any[kRowBatch];
    int e[kRowBatch];
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {  // past the row: zero codes, no part in ref
      const int c = c0 + 32 * j + lane;
      any[j] = false;  // only whether the codes are nonzero is kept (registers)
      e[j] = 0;
      if (c < chunks) {
        any[j] = codes_nonzero(*reinterpret_cast<const uint4*>(codes + 16ll * c));
        e[j] = scale[c];
      }
    }
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      if (e[j] == 0xFF)
        nan = 1;
      else if (any[j])
        top = max(top, e[j]);
    }
  }
  const int ref = tile_max<32>(top);
  const bool any_nan = tile_max<32>(nan) != 0;
  if (lane == 0) {
    if (!any_nan && !split_factor_ok(ref)) *p.flag = p.flag_mark;
    p.factor[row] = mx_factor(ref, any_nan);
  }
#pragma unroll 1
  for (int c0 = 0; c0 < chunks; c0 += 32) {  // the same trips in every lane (shuffles)
    const int c = c0 + lane;
    uint4 v;
    int e;
    load_mx_chunk(codes, scale, c, c < chunks, v, e);
    unsigned o[8];
    mx_expand_chunk<false>(v, e, e == 0xFF, codes_nonzero(v), ref, p, o);
    warp_store_chunks<T::kOutChunkBytes>(warp_stage, o, row, c, c < chunks, p);
  }
}

// The swapped path's check of B's scale codes (ExpandParams::check_scale): one (row, segment)
// per thread.
template <class T>
__device__ __forceinline__ void check_scale_window(const gemm::ExpandParams& p, int cta) {
  constexpr int kSegBlocks = 4 * T::kPeriod;  // 32-element blocks per segment (FP8 path)
  const int blocks = p.K / 32;
  const int segs = (blocks + kSegBlocks - 1) / kSegBlocks;
  const long long t = static_cast<long long>(cta - p.expand_ctas) * T::kThreads + threadIdx.x;
  const long long row = t / segs;
  const int seg = static_cast<int>(t - row * segs);
  if (row >= p.check_rows) return;
  const unsigned char* src = p.check_scale + row * p.check_scale_ld + seg * kSegBlocks;
  int hi = -1, lo = 256;
#pragma unroll
  for (int j = 0; j < kSegBlocks; ++j) {
    if (seg * kSegBlocks + j >= blocks) break;
    const int e = src[j];
    if (e == 0xFF) continue;  // NaN: the whole row segment's product is NaN, whatever the rest
    hi = max(hi, e);
    lo = min(lo, e);
  }
  if (hi >= 0 && hi - lo > kLutMaxShift) *p.flag = p.flag_mark;
}

// mx (but B's whole-row expansion): each thread takes expand_units_per_thread chunks, units t
// and t + 256 of the CTA's 512 (t its thread index), both loads issued first; each unit as one
// chunk per thread would be (the segment's lanes share its reference through shuffles).
template <class Cfg>
__device__ __forceinline__ void expand_mx_units(const gemm::ExpandParams& p, int cta,
                                                unsigned char* warp_stage) {
  using T = ExpandTraits<Cfg>;
  constexpr int kUnits = expand_units_per_thread(ScaleKind::mx);
  const int chunks = p.K / 32;
  const int chunks_pad = expand_chunks_pad(true, p.K, T::kPeriod);
  int row[kUnits], c[kUnits], e[kUnits];
  bool active[kUnits];
  uint4 v[kUnits];
#pragma unroll
  for (int u = 0; u < kUnits; ++u) {
    const long long t = (static_cast<long long>(cta) * kUnits + u) * T::kThreads + threadIdx.x;
    row[u] = static_cast<int>(t / chunks_pad);
    c[u] = static_cast<int>(t - static_cast<long long>(row[u]) * chunks_pad);
    active[u] = row[u] < p.rows && c[u] < chunks;
    load_mx_chunk(p.codes + static_cast<long long>(row[u]) * p.code_ld,
                  p.scale + static_cast<long long>(row[u]) * p.scale_ld, c[u], active[u], v[u],
                  e[u]);
  }
#pragma unroll
  for (int u = 0; u < kUnits; ++u) {
    const bool nonzero = codes_nonzero(v[u]);  // only active lanes hold nonzero codes
    const bool nan = active[u] && e[u] == 0xFF;
    const int ref = tile_max<T::kSegChunks>(active[u] && nonzero && !nan ? e[u] : -1);
    const int any_nan = tile_max<T::kSegChunks>(nan ? 1 : 0);
    unsigned o[8];
    mx_expand_chunk<Cfg::kFragOrder>(v[u], e[u], nan, nonzero, ref, p, o);
    if (active[u] && c[u] % T::kSegChunks == 0) {
      p.factor[static_cast<long long>(c[u] / T::kSegChunks) * p.factor_ld + row[u]] =
          mx_factor(ref, any_nan != 0);
      if constexpr (Cfg::kSplitFactors)
        if (!any_nan && !split_factor_ok(ref)) *p.flag = p.flag_mark;
    }
    warp_store_chunks<T::kOutChunkBytes>(warp_stage, o, row[u], c[u], active[u], p);
  }
}

// CTA `cta` of an operand's expansion (its index among that operand's CTAs), with the CTA's
// shared memory: nv_table (256 entries) and warp_stage (kThreads * kOutChunkBytes bytes, 16-byte
// aligned).
template <class Cfg>
__device__ __forceinline__ void expand_cta(const gemm::ExpandParams& p, int cta,
                                           unsigned short* nv_table, unsigned char* warp_stage) {
  using T = ExpandTraits<Cfg>;
  if constexpr (T::kKind == ScaleKind::mx) {
    if (p.check_scale != nullptr && cta >= p.expand_ctas) {
      check_scale_window<T>(p, cta);
      return;
    }
    if constexpr (Cfg::kSplitFactors && Cfg::kOperandB) {
      static_assert(!Cfg::kFragOrder, "whole-row B: the staged kernel's layout");
      expand_mx_row<T>(p, warp_stage, cta);
      return;
    }
    expand_mx_units<Cfg>(p, cta, warp_stage);
    return;
  }
  if constexpr (T::kKind == ScaleKind::nv) {
    nv_table[threadIdx.x] = nv_decode_bits<T::kBF16>(Cfg::kScaleCode, threadIdx.x);
    __syncthreads();
  }
  const int chunks = p.K / 32;
  const int chunks_pad = expand_chunks_pad(T::kFp8, p.K, T::kPeriod);
  const long long t = static_cast<long long>(cta) * T::kThreads + threadIdx.x;
  const int group = static_cast<int>(t / chunks_pad);  // of kRowsPerThread rows
  const int c = static_cast<int>(t - static_cast<long long>(group) * chunks_pad);
  if constexpr (T::kKind == ScaleKind::ms_grad && Cfg::kOperandB) {
    expand_ms_grad_b<T>(p, warp_stage, group * T::kRowsPerThread, c, chunks);
    return;
  }
  const int row = group;
  // Every lane takes part in the shuffles; inactive lanes (past the last row or chunk) contribute
  // nothing and store nothing.
  const bool active = row < p.rows && c < chunks;
  constexpr int kWords = T::kOutChunkBytes / 4;
  unsigned o[kWords];  // this chunk's expanded bytes (inactive lanes: ignored)

  if constexpr (T::kKind == ScaleKind::ms_grad && !Cfg::kOperandB) {
    // E5M2 byte -> FP16 with the same bits in the high byte.
    uint4 v0 = make_uint4(0u, 0u, 0u, 0u), v1 = v0;
    if (active) {
      const uint4* src = reinterpret_cast<const uint4*>(
          p.codes + static_cast<long long>(row) * p.code_ld + 32ll * c);
      v0 = src[0];
      v1 = src[1];
    }
    const unsigned in[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      o[2 * i] = prmt(in[i], 0u, 0x1404u);
      o[2 * i + 1] = prmt(in[i], 0u, 0x3424u);
    }
  } else {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (active)
      v = *reinterpret_cast<const uint4*>(p.codes + static_cast<long long>(row) * p.code_ld +
                                          16ll * c);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
    if constexpr (T::kKind == ScaleKind::ms) {
#pragma unroll
      for (int i = 0; i < 4; ++i) e2m1x8_to_e4m3_eo(w[i], o[2 * i], o[2 * i + 1]);
    } else if constexpr (T::kKind == ScaleKind::nv) {
      const long long srow = static_cast<long long>(row / Cfg::kBlockRows) * p.scale_ld;
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const unsigned s = active ? nv_table[p.scale[srow + 2 * c + b]] : 0u;
        const unsigned s2 = s | (s << 16);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          unsigned l0, l1, h0, h1;
          e2m1x8_to_16bit<T::kBF16>(w[2 * b + h], l0, l1, h0, h1);
          o[8 * b + 4 * h + 0] = mul16x2<T::kBF16>(l0, s2);
          o[8 * b + 4 * h + 1] = mul16x2<T::kBF16>(l1, s2);
          o[8 * b + 4 * h + 2] = mul16x2<T::kBF16>(h0, s2);
          o[8 * b + 4 * h + 3] = mul16x2<T::kBF16>(h1, s2);
        }
      }
      if constexpr (Cfg::kFragOrder) {
        unsigned f[16];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) f[4 * j + i] = o[4 * i + j];
#pragma unroll
        for (int i = 0; i < 16; ++i) o[i] = f[i];
      }
    }
  }

  warp_store_chunks<T::kOutChunkBytes>(warp_stage, o, row, c, active, p);
}

// The swapped GEMM after A's expansion may start its set-up at once (it waits for the launch's
// completion before reading anything written there; ptx.cuh). Guarded: this file also compiles on
// the host for the CPU emulator (tests/emu).
__device__ __forceinline__ void expand_launch_dependents() {
#if defined(__CUDA_ARCH__)
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// One operand, on the grid of the header comment (plus the window check's CTAs, swapped mx).
template <class Cfg>
__global__ void __launch_bounds__(256) expand_kernel(const gemm::ExpandParams p) {
  using T = ExpandTraits<Cfg>;
  expand_launch_dependents();
  __shared__ unsigned short nv_table[256];
  __shared__ __align__(16) unsigned char warp_stage[T::kThreads * T::kOutChunkBytes];
  expand_cta<Cfg>(p, static_cast<int>(blockIdx.x), nv_table, warp_stage);
}

// Both operands of a GEMM in one launch (Cfg::A and Cfg::B: the two operands' expansion
// configs): a_ctas CTAs expand A as expand_kernel<Cfg::A>(a) would, the rest B as
// expand_kernel<Cfg::B>(b); A's come first, except before a whole-row B (mx with
// kSplitFactors), whose longer CTAs go first. A CTA is all of one operand, so its barriers and
// shuffles are those of the single-operand kernel. One launch instead of two, and the second
// operand's CTAs fill the SMs while the first one's last ones finish. Six CTAs per SM: 40
// registers and 4 bytes of spill, once per thread (the launch takes the larger count of its two
// operands'); capped for eight, ptxas holds the mx path's two chunks in 32 registers with 32 bytes
// of spill, and the expansion ran 1.03-1.11x slower (bench/gemm_sm90_notes.md).
template <class Cfg>
__global__ void __launch_bounds__(256, 6)
    expand_pair_kernel(const gemm::ExpandParams a, const gemm::ExpandParams b, int a_ctas) {
  using CfgA = typename Cfg::A;
  using CfgB = typename Cfg::B;
  using TA = ExpandTraits<CfgA>;
  using TB = ExpandTraits<CfgB>;
  static_assert(TA::kThreads == 256 && TB::kThreads == 256, "one block size for both operands");
  constexpr int kStage =
      TA::kOutChunkBytes > TB::kOutChunkBytes ? TA::kOutChunkBytes : TB::kOutChunkBytes;
  __shared__ unsigned short nv_table[256];
  __shared__ __align__(16) unsigned char warp_stage[256 * kStage];
  const int cta = static_cast<int>(blockIdx.x);
  if constexpr (CfgB::kKind == ScaleKind::mx && CfgB::kSplitFactors) {
    // B's whole-row CTAs (a warp walks a row) take longer than A's: they go first, and A's fill
    // the SMs behind them rather than leave them a tail of their own.
    const int b_ctas = static_cast<int>(gridDim.x) - a_ctas;
    if (cta < b_ctas)
      expand_cta<CfgB>(b, cta, nv_table, warp_stage);
    else
      expand_cta<CfgA>(a, cta - b_ctas, nv_table, warp_stage);
  } else {
    if (cta < a_ctas)
      expand_cta<CfgA>(a, cta, nv_table, warp_stage);
    else
      expand_cta<CfgB>(b, cta - a_ctas, nv_table, warp_stage);
  }
}

}  // namespace fp4jit::sm90
