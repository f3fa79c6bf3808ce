// occ_rows: a row-wise OCC operand scaled per source row (msfp4's x: block=row, no Hadamard) in
// one kernel and one read of the input, instead of occ_select -> occ_scan -> occ_write ->
// quantize_rows (four launches, three reads). One CTA per row at a time, rows taken in ticket
// order; the row stays in registers (kVec-element chunks i * threads + tid, so loads coalesce).
//
// Per row:
//   1. lo and hi (sorted positions lo_index and hi_index, the order of occ.cuh's sort_key).
//      Fast path: each warp ranks its lanes' largest keys; the smallest over the warps (those
//      whose every lane holds elements) of their ceil(kh / warps)-th largest is a bound B_hi with
//      at least kh = cols - hi_index keys at or above it, so every key >= B_hi (few: ~2-3 % of a
//      row at alpha = 0.99) goes into a shared-memory list (a part per warp, placed by ballots),
//      and hi is the list's (size - kh)-th smallest, by occ.cuh's radix select over the list
//      alone; lo likewise from the lanes' smallest keys. Slow path, for a row holding NaN or Inf,
//      a warp's list over kOccRowsWarpCap, or kh / kl above 32 per such warp: the same radix
//      select over every element of the row.
//   2. The row's stat word (largest |clamp(x)|: max(|lo|, |hi|) on the fast path, where the row
//      is finite and lo <= hi), its clamped count (the lists' keys beyond lo / hi), published at
//      once for the rows after it (decoupled look-back over per-row status words).
//   3. Codes and the row's scale (quantize_segment, the scale given; BF16 rows of msfp4's x by the
//      packed encoder), the clamped elements' flags.
//   4. The row's list offset (look-back), then its residual entries, in index order.
//
// Config: Op, in, threads, chunks (most kVec-element chunks a thread holds: cols <= threads *
// chunks * kVec; the planner takes the old path beyond).
#pragma once
#include "numerics/fast_encode.cuh"
#include "quantize/occ.cuh"
#include "quantize/segment.cuh"

namespace fp4jit::kern {

constexpr int kOccRowsWarpCap = 128;  // list entries per warp and side
constexpr int kOccRowsMaxWarps = 32;

// Status words of the look-back: the flag in the top two bits, the count below.
constexpr u64 kOccAggregate = u64{1} << 62, kOccInclusive = u64{2} << 62;
constexpr u64 kOccCountMask = (u64{1} << 62) - 1u;

FP4JIT_DEV void occ_status_store(u64* p, u64 v) {
  *static_cast<volatile u64*>(p) = v;
}
FP4JIT_DEV u64 occ_status_load(const u64* p) {
  return *static_cast<const volatile u64*>(p);
}

// u32 words holding kVec elements of the input type.
template <InType T>
constexpr int kRawWords = T == InType::f32 ? kVec : kVec / 2;

template <InType T>
FP4JIT_DEV float raw_value(const u32 (&w)[kRawWords<T>], int e) {
  if constexpr (T == InType::f32) {
    return nx::bits_float(w[e]);
  } else {
    const u16 h = static_cast<u16>(e % 2 == 0 ? (w[e / 2] & 0xffffu) : (w[e / 2] >> 16));
    return T == InType::bf16 ? nx::bf16_to_float(h) : nx::f16_to_float(h);
  }
}

// The same for an index known only at run time, by selects (an indexed register array would
// go to local memory).
template <InType T>
FP4JIT_DEV float raw_value_at(const u32 (&w)[kRawWords<T>], int e) {
  constexpr int kPerWord = T == InType::f32 ? 1 : 2;
  const int q = e / kPerWord;
  u32 word = w[0];
#pragma unroll
  for (int k = 1; k < kRawWords<T>; ++k) word = q == k ? w[k] : word;
  if constexpr (T == InType::f32) {
    return nx::bits_float(word);
  } else {
    const u16 h = static_cast<u16>((e & 1) != 0 ? (word >> 16) : (word & 0xffffu));
    return T == InType::bf16 ? nx::bf16_to_float(h) : nx::f16_to_float(h);
  }
}

// kVec elements from flat index i, n of them in range (the rest 0 bits), by 16-byte loads
// where `vector`.
template <InType T>
FP4JIT_DEV void load_raw(const void* base, i64 i, int n, bool vector, u32 (&w)[kRawWords<T>]) {
  const char* p = static_cast<const char*>(base) + i * in_size(T);
  if (vector && n == kVec) {
#pragma unroll
    for (int q = 0; q < kRawWords<T> / 4; ++q) {
      const uint4 u = load16(p + 16 * q, true);
      w[4 * q] = u.x;
      w[4 * q + 1] = u.y;
      w[4 * q + 2] = u.z;
      w[4 * q + 3] = u.w;
    }
    return;
  }
#pragma unroll
  for (int q = 0; q < kRawWords<T>; ++q) w[q] = 0u;
  if constexpr (T == InType::f32) {
    for (int e = 0; e < n; ++e) w[e] = static_cast<const u32*>(static_cast<const void*>(p))[e];
  } else {
    const u16* h = static_cast<const u16*>(static_cast<const void*>(p));
    for (int e = 0; e < n; ++e) w[e / 2] |= static_cast<u32>(h[e]) << (16 * (e % 2));
  }
}

// sort_key without the NaN case (the fast path's rows hold no NaN).
FP4JIT_DEV u32 finite_sort_key(float x) {
  const u32 u = nx::float_bits(x);
  return u ^ (static_cast<u32>(static_cast<int>(u) >> 31) | 0x80000000u);
}

// The k-th largest (k in 1..32) of the warp's values: k maxima, each one's first lane knocked out.
FP4JIT_DEV u32 warp_kth_largest(u32 v, int k) {
  u32 m = 0u;
  for (int j = 0; j < k; ++j) {
    m = redux_umax(v);
    const u32 at = __ballot_sync(0xffffffffu, v == m);
    if (lane_id() == __ffs(static_cast<int>(at)) - 1) v = 0u;
  }
  return m;
}

// Rows of BF16 scaled by a power of two into E2M1 with ties toward +inf (msfp4's x) also take the
// packed encoder of the lane-group kernels (nx::e2m1_pack8_pow2), two elements per instruction.
template <class Op, InType T>
FP4JIT_CONSTEXPR bool occ_packed() {
  return T == InType::bf16 && Op::elem == Elem::e2m1 && Op::rule == Rule::ms_pow2 &&
         Op::round == nx::Round::up;
}

// Both halves of w (BF16) clamped to [lo2, hi2] (lo and hi in both halves): max then min, which
// is occ_clamp for values that are not NaN where neither bound is a zero.
FP4JIT_DEV u32 clamp_bf16x2(u32 w, u32 lo2, u32 hi2) {
#if defined(__CUDA_ARCH__)
  u32 r;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(w), "r"(lo2));
  asm("min.bf16x2 %0, %0, %1;" : "+r"(r) : "r"(hi2));
  return r;
#else
  u32 r = 0u;
  for (int h = 0; h < 2; ++h) {
    const float x = nx::bf16_to_float(static_cast<u16>(w >> (16 * h)));
    const float l = nx::bf16_to_float(static_cast<u16>(lo2 >> (16 * h)));
    const float u = nx::bf16_to_float(static_cast<u16>(hi2 >> (16 * h)));
    r |= static_cast<u32>(nx::float_bits(occ_clamp(x, l, u)) >> 16) << (16 * h);
  }
  return r;
#endif
}

// One whole chunk of kVec BF16 elements (raw words, element e in half e % 2 of word e / 2) of a
// packed row: clamped, encoded (scale 2^s) and stored as one code word at `dst`; returns the
// clamped elements' flags (bit e). Ties toward +inf are ties away from zero for positive values
// and, for negative ones, ties away for the BF16 value just below in magnitude (the midpoints are
// BF16 values, so only a tie changes side): one encoder with ties away for both.
FP4JIT_DEV u32 occ_pack8(const u32 (&w)[4], float lo, float hi, int s, u8* dst) {
  const u32 lb = nx::float_bits(lo) >> 16, hb = nx::float_bits(hi) >> 16;
  const u32 lo2 = lb | (lb << 16), hi2 = hb | (hb << 16);
  u32 p[4];
  p[0] = nx::prmt(w[0], w[2], 0x5410u);  // pair j: (element j, element j + 4)
  p[1] = nx::prmt(w[0], w[2], 0x7632u);
  p[2] = nx::prmt(w[1], w[3], 0x5410u);
  p[3] = nx::prmt(w[1], w[3], 0x7632u);
  u32 flags = 0u;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const u32 c = clamp_bf16x2(p[j], lo2, hi2);
    const u32 d = c ^ p[j];
    flags |= ((d & 0xffffu) != 0u ? 1u : 0u) << j;
    flags |= ((d >> 16) != 0u ? 1u : 0u) << (j + 4);
    // Negative halves with a nonzero magnitude: one BF16 step smaller (no borrow into the sign).
    const u32 nonzero = ((c & 0x7fff7fffu) + 0x7fff7fffu) & 0x80008000u;
    p[j] = c - ((c & nonzero) >> 15);
  }
  *reinterpret_cast<u32*>(dst) = nx::e2m1_pack8_pow2<false>(p, nx::e2m1_pow2_pack_consts(s, true));
  return flags;
}

template <int kWarps>
struct OccRowsShared {
  OccSelectState sel;
  // Keys at or below B_lo (side 0), at or above B_hi (side 1): kOccRowsWarpCap per warp, in
  // count[side][warp] (which may pass the capacity: then the slow path).
  u32 list[2][kWarps * kOccRowsWarpCap];
  u32 count[2][kWarps];
  u32 warp_bound[2][kWarps];
  u32 clamped, row_max, finite_max, special, overflow;
  u32 totals[8 * kWarps];  // per (chunk, warp): clamped elements, then their exclusive scan
  i64 row, offset;
};

// The keys occ_radix_select (occ.cuh) visits: the fast path's lists, and the whole row held by
// each thread (chunks of kVec elements, n[i] of chunk i in range).
template <int kWarps>
struct ListKeys {  // each warp visits its own part
  const OccRowsShared<kWarps>& sh;
  template <class F>
  FP4JIT_DEV void operator()(int side, F&& f) const {
    const int w = warp_id();
    const u32 n = sh.count[side][w];
    for (u32 i = static_cast<u32>(lane_id()); i < n; i += 32u)
      f(sh.list[side][w * kOccRowsWarpCap + i]);
  }
};
template <InType T, int kC>
struct RowKeys {  // copies (registers once inlined: references would put the row in memory)
  u32 raw[kC][kRawWords<T>];
  int n[kC];
  template <class F>
  FP4JIT_DEV void operator()(int, F&& f) const {
#pragma unroll
    for (int i = 0; i < kC; ++i)
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        if (e < n[i]) f(sort_key(raw_value<T>(raw[i], e)));
  }
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads, Cfg::threads <= 512 && Cfg::chunks <= 2 ? 2 : 1)
    occ_rows(OccRowsArgs args) {
  using Op = typename Cfg::Op;
  constexpr InType T = Cfg::in;
  constexpr int kT = Cfg::threads;
  constexpr int kWarps = kT / 32;
  constexpr int kC = Cfg::chunks;
  constexpr int kW = kRawWords<T>;
  static_assert(Op::block == BlockKind::row && Op::had == 0 && Op::occ, "occ_rows: OCC rows");
  static_assert(kWarps <= kOccRowsMaxWarps && kC <= 8, "occ_rows: threads, chunks");
  __shared__ OccRowsShared<kWarps> sh;
  QuantizeArgs a = args.q;
  resolve_seed<Cfg, Op>(a);
  const OperandOut& o = a.row;
  const i64 cols = a.cols;
  const bool vector = a.vector_ok != 0u;
  const int tid = static_cast<int>(threadIdx.x), lane = lane_id(), warp = warp_id();
  const i64 kh = cols - args.hi_index, kl = args.lo_index + 1;
  const i64 row_chunks = (cols + kVec - 1) / kVec;
  const int full_warps = static_cast<int>((row_chunks < kT ? row_chunks : kT) / 32);

  for (;;) {
    if (tid == 0) {
      sh.row = atomicAdd(args.ticket, 1u);
      sh.clamped = sh.row_max = sh.finite_max = sh.special = sh.overflow = 0u;
    }
    __syncthreads();
    const i64 r = sh.row;
    if (r >= a.rows) break;
    const i64 base = r * a.stride;

    // The row, and each lane's smallest and largest key.
    u32 raw[kC][kW];
    int n[kC];
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      const i64 c0 = static_cast<i64>(i * kT + tid) * kVec;
      const i64 left = cols - c0;
      n[i] = left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
      if (n[i] > 0) load_raw<T>(a.in, base + c0, n[i], vector, raw[i]);
    }
    u32 tmin = 0xffffffffu, tmax = 0u;
#pragma unroll
    for (int i = 0; i < kC; ++i)
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        if (e < n[i]) {
          const u32 key = finite_sort_key(raw_value<T>(raw[i], e));
          tmin = key < tmin ? key : tmin;
          tmax = key > tmax ? key : tmax;
        }
    // +Inf / +NaN keys sort at 0xff800000 and above, -Inf / -NaN at 0x007fffff and below.
    if (tmax >= 0xff800000u || tmin <= 0x007fffffu) sh.special = 1u;
    // Only warps whose every lane holds elements give a bound (an empty lane's key is none).
    const bool bounded = kh <= 32 * full_warps && kl <= 32 * full_warps;
    if (bounded && warp < full_warps) {
      const int per_hi = static_cast<int>((kh + full_warps - 1) / full_warps),
                per_lo = static_cast<int>((kl + full_warps - 1) / full_warps);
      const u32 bh = warp_kth_largest(tmax, per_hi);
      const u32 bl = ~warp_kth_largest(~tmin, per_lo);
      if (lane == 0) {
        sh.warp_bound[1][warp] = bh;
        sh.warp_bound[0][warp] = bl;
      }
    }
    __syncthreads();
    bool fast = bounded && sh.special == 0u;
    if (fast) {
      u32 b_lo = 0u, b_hi = 0xffffffffu;
      for (int w = 0; w < full_warps; ++w) {
        b_lo = sh.warp_bound[0][w] > b_lo ? sh.warp_bound[0][w] : b_lo;
        b_hi = sh.warp_bound[1][w] < b_hi ? sh.warp_bound[1][w] : b_hi;
      }
      // The lists: each warp's keys beyond the bounds at ballot positions in its own part.
      const u32 below = (1u << lane) - 1u;
      u32 n_lo = 0u, n_hi = 0u;  // the warp's counts so far (uniform)
      u32* const list_lo = sh.list[0] + warp * kOccRowsWarpCap;
      u32* const list_hi = sh.list[1] + warp * kOccRowsWarpCap;
#pragma unroll
      for (int i = 0; i < kC; ++i)
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const u32 key = finite_sort_key(raw_value<T>(raw[i], e));
          const bool in_lo = e < n[i] && key <= b_lo, in_hi = e < n[i] && key >= b_hi;
          const u32 m_lo = __ballot_sync(0xffffffffu, in_lo);
          const u32 m_hi = __ballot_sync(0xffffffffu, in_hi);
          if (m_lo != 0u) {
            const u32 p = n_lo + static_cast<u32>(__popc(m_lo & below));
            if (in_lo && p < kOccRowsWarpCap) list_lo[p] = key;
            n_lo += static_cast<u32>(__popc(m_lo));
          }
          if (m_hi != 0u) {
            const u32 p = n_hi + static_cast<u32>(__popc(m_hi & below));
            if (in_hi && p < kOccRowsWarpCap) list_hi[p] = key;
            n_hi += static_cast<u32>(__popc(m_hi));
          }
        }
      if (lane == 0) {
        sh.count[0][warp] = n_lo;
        sh.count[1][warp] = n_hi;
        if (n_lo > kOccRowsWarpCap || n_hi > kOccRowsWarpCap) sh.overflow = 1u;
      }
      __syncthreads();
      fast = sh.overflow == 0u;
    }

    float lo, hi;
    if (fast) {
      if (tid == 0) {
        i64 size_hi = 0;
        for (int w = 0; w < kWarps; ++w) size_hi += sh.count[1][w];
        sh.sel.kth[0] = args.lo_index;
        sh.sel.kth[1] = size_hi - kh;
      }
      const ListKeys<kWarps> lists{sh};
      occ_radix_select<T, false, kT>(sh.sel, lists);
      lo = key_value(complete_key<T>(sh.sel.prefix[0]));
      hi = key_value(complete_key<T>(sh.sel.prefix[1]));
      // The clamped elements are the lists' keys beyond lo and hi (lo <= hi: the planner's
      // lo_index <= hi_index); the row is finite, so its largest |clamp(x)| is |lo| or |hi|.
      u32 clamped = 0u;
      lists(0, [&](u32 key) { clamped += key_value(key) < lo ? 1u : 0u; });
      lists(1, [&](u32 key) { clamped += key_value(key) > hi ? 1u : 0u; });
      clamped = warp_sum(clamped);
      if (lane == 0 && clamped != 0u) atomicAdd(&sh.clamped, clamped);
      if (tid == 0) {
        const u32 m = umax(abs_bits(lo), abs_bits(hi));
        sh.row_max = m;
        sh.finite_max = m;
      }
    } else {
      if (tid == 0) {
        sh.sel.kth[0] = args.lo_index;
        sh.sel.kth[1] = args.hi_index;
      }
      RowKeys<T, kC> keys;
#pragma unroll
      for (int i = 0; i < kC; ++i) {
        keys.n[i] = n[i];
#pragma unroll
        for (int q = 0; q < kW; ++q) keys.raw[i][q] = raw[i][q];
      }
      occ_radix_select<T, true, kT>(sh.sel, keys);
      lo = key_value(complete_key<T>(sh.sel.prefix[0]));
      hi = key_value(complete_key<T>(sh.sel.prefix[1]));
      u32 clamped = 0u, row_max = 0u, finite_max = 0u;
#pragma unroll
      for (int i = 0; i < kC; ++i)
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if (e < n[i]) {
            const float x = raw_value<T>(raw[i], e);
            const float v = occ_clamp(x, lo, hi);
            const u32 m = abs_bits(v);
            row_max = umax(row_max, m);
            if (m < 0x7f800000u) finite_max = umax(finite_max, m);
            if (v != x) ++clamped;
          }
      clamped = warp_sum(clamped);
      row_max = warp_max(row_max);
      finite_max = warp_max(finite_max);
      if (lane == 0) {
        if (clamped != 0u) atomicAdd(&sh.clamped, clamped);
        atomicMax(&sh.row_max, row_max);
        atomicMax(&sh.finite_max, finite_max);
      }
    }
    __syncthreads();
    const u32 row_clamped = sh.clamped;
    // Published before the codes, so that the rows after this one rarely wait for it.
    if (tid == 0) {
      if (r == 0)
        occ_status_store(args.status, kOccInclusive | row_clamped);
      else
        occ_status_store(args.status + r, kOccAggregate | row_clamped);
      if (o.amax_out != nullptr && sh.finite_max != 0u) atomicMax(o.amax_out, sh.finite_max);
    }

    // Codes and the row's scale; flags of the clamped elements.
    const BlockScale scale = block_scale<Op>(stat_of(sh.row_max), 1.0f);
    u64 flags = 0u;
    const u32 no_stat[sub_blocks<Op>()] = {};
    // The packed path: lo and hi nonzero (a BF16 max / min clamps as occ_clamp then, -0 and +0
    // never meeting a bound), a scale exponent the packed encoder takes, whole 4-byte code words.
    int s_exp = 0;
    bool packed = false;
    if constexpr (occ_packed<Op, T>()) {
      s_exp = static_cast<int>((nx::float_bits(scale.factor) >> 23) & 0xffu) - 127;
      packed = fast && lo != 0.0f && hi != 0.0f && !scale.nan && s_exp >= -126 && s_exp <= 112 &&
               o.row_bytes % 4 == 0;
    }
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      if (n[i] == 0) continue;
      const i64 c0 = static_cast<i64>(i * kT + tid) * kVec;
      if constexpr (occ_packed<Op, T>()) {
        if (packed && n[i] == kVec) {
          flags |=
              static_cast<u64>(occ_pack8(raw[i], lo, hi, s_exp, o.codes + r * o.row_bytes + c0 / 2))
              << (i * kVec);
          if (c0 == 0) store_scale<Op>(o.scales, r, scale);
          continue;
        }
      }
      float v[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float x = raw_value<T>(raw[i], e);
        v[e] = occ_clamp(x, lo, hi);
        if (e < n[i] && v[e] != x) flags |= u64{1} << (i * kVec + e);
      }
      quantize_segment<Op, 0>(v, no_stat, r, c0, n[i], o, 1.0f, a.seed, a.offset, nullptr, nullptr,
                              0, &scale);
    }

    // The row's list offset: the nearest row before it with an inclusive count, and the
    // aggregates in between, 32 rows per step.
    if (warp == 0 && r > 0) {
      i64 before = 0;
      for (i64 j = r - 1;; j -= 32) {
        const i64 q = j - lane;
        u64 s = q >= 0 ? occ_status_load(args.status + q) : kOccInclusive;
        while (__ballot_sync(0xffffffffu, (s >> 62) == 0u) != 0u) {
          if ((s >> 62) == 0u) s = occ_status_load(args.status + q);
        }
        const u32 inclusive = __ballot_sync(0xffffffffu, (s >> 62) == 2u);
        const int stop = inclusive != 0u ? __ffs(static_cast<int>(inclusive)) - 1 : 31;
        i64 part = lane <= stop ? static_cast<i64>(s & kOccCountMask) : 0;
        for (int d = 16; d > 0; d >>= 1) part += __shfl_xor_sync(0xffffffffu, part, d);
        before += part;
        if (inclusive != 0u) break;
      }
      if (lane == 0) {
        occ_status_store(args.status + r, kOccInclusive | static_cast<u64>(before + row_clamped));
        sh.offset = before;
      }
    } else if (tid == 0) {
      sh.offset = 0;
    }
    __syncthreads();
    const i64 offset = sh.offset;
    if (tid == 0 && r == a.rows - 1) *args.total = offset + row_clamped;

    // The residual entries in index order: chunk i of every lane before chunk i + 1.
    if (row_clamped != 0u) {
      u32 mine[kC];
#pragma unroll
      for (int i = 0; i < kC; ++i) {
        u32 c = static_cast<u32>(__popc(static_cast<u32>((flags >> (i * kVec)) & 0xffu)));
        mine[i] = c;
        for (int d = 1; d < 32; d <<= 1) {
          const u32 other = __shfl_up_sync(0xffffffffu, c, d);
          if (lane >= d) c += other;
        }
        if (lane == 31) sh.totals[i * kWarps + warp] = c;
        mine[i] = c - mine[i];  // exclusive within the warp
      }
      __syncthreads();
      if (warp == 0) {  // exclusive scan of the kC * kWarps totals, in (chunk, warp) order
        constexpr int kPer = (kC * kWarps + 31) / 32;
        u32 v[kPer], sum = 0u;
#pragma unroll
        for (int q = 0; q < kPer; ++q) {
          const int idx = lane * kPer + q;
          v[q] = idx < kC * kWarps ? sh.totals[idx] : 0u;
          sum += v[q];
        }
        u32 incl = sum;
        for (int d = 1; d < 32; d <<= 1) {
          const u32 other = __shfl_up_sync(0xffffffffu, incl, d);
          if (lane >= d) incl += other;
        }
        u32 run = incl - sum;
#pragma unroll
        for (int q = 0; q < kPer; ++q) {
          const int idx = lane * kPer + q;
          if (idx < kC * kWarps) sh.totals[idx] = run;
          run += v[q];
        }
      }
      __syncthreads();
      if (flags != 0u) {
#pragma unroll
        for (int i = 0; i < kC; ++i) {
          u32 f = static_cast<u32>((flags >> (i * kVec)) & 0xffu);
          if (f == 0u) continue;
          i64 pos = offset + sh.totals[i * kWarps + warp] + mine[i];
          const i64 c0 = static_cast<i64>(i * kT + tid) * kVec;
          for (; f != 0u; f &= f - 1u, ++pos) {  // the set bits, lowest first
            const int e = __ffs(static_cast<int>(f)) - 1;
            if (pos < args.capacity) {
              args.index[pos] = r * cols + c0 + e;
              args.value[pos] = residual(raw_value_at<T>(raw[i], e), lo, hi);
            }
          }
        }
      }
    }
    __syncthreads();
  }
}

}  // namespace fp4jit::kern
