// Outlier clamping and compensation (OCC), per source row, in three deterministic steps:
//   occ_select  lo and hi of each row (the values at sorted positions lo_index and hi_index,
//               NaN last) by a radix select, and how many elements each operand row will list in
//               the residual (per source row, per source column, or both: a row + column pair
//               selects once); for operands scaled per source row, also their stats pass (each
//               row's largest |clamp(x)| and the finite amax), from the same read as the counts;
//   occ_scan    exclusive prefix sum of those counts (offsets), and the total; for the transposed
//               operand occ_chunk_scan also turns its per-chunk column counts into positions;
//   occ_write   the residual x - clamp(x) at its operand index, each list position computed, so
//               the list comes out sorted by index with no atomics on the order.
// The quantize kernels apply the same clamp to the values they quantize.
//
// Sorting order: the total order of the float bits (-0 before +0), NaN last. The reference's
// std::sort treats -0 and +0 as equal, so the two agree except where a quantile falls on a run
// of zeros of both signs.
//
// Configs:
//   occ_select:  in (InType), threads
//   occ_scan, occ_chunk_scan:  threads
//   occ_write:   in, threads, cols (the transposed operand: operand row = source column)
#pragma once
#include "quantize/args.cuh"
#include "quantize/device.cuh"

namespace fp4jit::kern {

FP4JIT_DEV u32 sort_key(float x) {
  const u32 u = nx::float_bits(x);
  if (nx::is_nan(x)) return 0xffffffffu;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
FP4JIT_DEV float key_value(u32 k) {
  if (k == 0xffffffffu) return nx::bits_float(0x7fc00000u);
  return nx::bits_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
FP4JIT_DEV float occ_clamp(float x, float lo, float hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
// x - clamp(x): NaN is never clamped but still listed (clamp(NaN) != NaN), with the reference's
// NaN - NaN = that NaN.
FP4JIT_DEV float residual(float x, float lo, float hi) {
  return nx::is_nan(x) ? host_nan(x) : nx::add_rn(x, -occ_clamp(x, lo, hi));
}

// The digit d (0..255) of the k-th smallest key among those counted in hist, and k made relative
// to the keys with that digit. Run by one full warp.
FP4JIT_DEV u32 select_digit(const u32* hist, i64& k) {
  const int lane = lane_id();
  u32 mine = 0u;
  for (int b = 0; b < 8; ++b) mine += hist[lane * 8 + b];
  u32 incl = mine;
  for (int d = 1; d < 32; d <<= 1) {
    const u32 other = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += other;
  }
  const i64 before = static_cast<i64>(incl - mine);
  const bool here = k >= before && k < before + static_cast<i64>(mine);
  u32 digit = 0u;
  i64 rest = 0;
  if (here) {
    i64 kk = k - before;
    for (int b = 0; b < 8; ++b) {
      const i64 c = hist[lane * 8 + b];
      if (kk < c) {
        digit = static_cast<u32>(lane * 8 + b);
        break;
      }
      kk -= c;
    }
    rest = kk;
  }
  const u32 who = __ballot_sync(0xffffffffu, here);
  const int src = who == 0u ? 0 : __ffs(static_cast<int>(who)) - 1;
  digit = __shfl_sync(0xffffffffu, digit, src);
  const u32 rest_lo = __shfl_sync(0xffffffffu, static_cast<u32>(rest), src);
  k = static_cast<i64>(rest_lo);
  return digit;
}

// Passes of 8 key bits the input type needs: a widened BF16 (FP16) value leaves the low 16 (13)
// bits of its key constant for its sign, so 2 (3) passes find the key; complete_key fills in the
// rest: zeros for a positive key (top bit set), ones for a negative one and for NaN (all ones).
template <InType T>
constexpr int kSelectPasses = T == InType::bf16 ? 2 : (T == InType::f16 ? 3 : 4);
template <InType T>
FP4JIT_DEV u32 complete_key(u32 prefix) {
  constexpr int kBits = 8 * kSelectPasses<T>;
  if constexpr (kBits == 32) {
    return prefix;
  } else {
    constexpr u32 kLow = (1u << (32 - kBits)) - 1u;
    const bool nan = (prefix | kLow) == 0xffffffffu;
    return (prefix & 0x80000000u) && !nan ? prefix : prefix | kLow;
  }
}

// Calls f(c, x) for this thread's elements of one row (row_base: the flat index of its first
// element), kVec consecutive ones per 16-byte load where `vector`, else one at a time; in no
// particular order (the callers count).
template <InType T, int kThreads, class F>
FP4JIT_DEV void for_row(const void* in, i64 row_base, i64 cols, bool vector, F&& f) {
  i64 c = threadIdx.x;
  if (vector) {
    const i64 whole = cols / kVec;
    for (i64 v = threadIdx.x; v < whole; v += kThreads) {
      float x[kVec];
      load_vec<T>(in, row_base + v * kVec, kVec, true, false, x);
#pragma unroll
      for (int e = 0; e < kVec; ++e) f(v * kVec + e, x[e]);
    }
    c = whole * kVec + threadIdx.x;
  }
  for (; c < cols; c += kThreads) f(c, load_one<T>(in, row_base + c));
}

// The radix select of two sorted positions, by one CTA of kThreads: st.kth[side] is the wanted
// position (set before the call, read after its first barrier); on return st.prefix[side] holds the
// key's high bits (complete_key fills in the rest) and every thread has passed a barrier after it.
// visit(side, f) calls f(key) for each key of that side. kSameKeys: both sides are one set of
// keys (visited once per pass, through side 0), which share one histogram while their prefixes
// agree. spread (kSameKeys; or null): kSpread * 256 words of shared memory for the first pass,
// where every key counts and a warp's keys share few top digits (a row of activations spans a
// few binades): lane l adds into copy l % kSpread of its digit's counter, kSpread consecutive
// words, so that lanes of one digit hit kSpread banks instead of serializing on one word.
struct OccSelectState {
  u32 hist[2][256];
  u32 prefix[2];
  i64 kth[2];
};
constexpr int kSpread = 4;
template <InType T, bool kSameKeys, int kThreads, class Visit>
FP4JIT_DEV void occ_radix_select(OccSelectState& st, const Visit& visit, u32* spread = nullptr) {
  static_assert(kThreads >= 256, "one thread per digit folds the spread counters");
  if (threadIdx.x == 0) st.prefix[0] = st.prefix[1] = 0u;
  u32 mask = 0u;
  for (int pass = 0; pass < kSelectPasses<T>; ++pass) {
    const int shift = 24 - 8 * pass;
    const bool spread_pass = kSameKeys && pass == 0 && spread != nullptr;
    if (spread_pass) {
      for (int i = static_cast<int>(threadIdx.x); i < 256 * kSpread; i += kThreads) spread[i] = 0u;
    } else {
      for (int i = static_cast<int>(threadIdx.x); i < 512; i += kThreads)
        st.hist[i / 256][i % 256] = 0u;
    }
    __syncthreads();
    const u32 p0 = st.prefix[0], p1 = st.prefix[1];
    const bool same = kSameKeys && p0 == p1;  // the targets share their keys: one histogram
    if constexpr (kSameKeys) {
      if (spread_pass) {  // mask 0: every key counts, into its lane's copy
        const u32 copy = static_cast<u32>(lane_id()) % kSpread;
        visit(0, [&](u32 key) { atomicAdd(&spread[(key >> shift) * kSpread + copy], 1u); });
        __syncthreads();
        if (threadIdx.x < 256) {
          u32 c = 0u;
#pragma unroll
          for (int q = 0; q < kSpread; ++q) c += spread[threadIdx.x * kSpread + q];
          st.hist[0][threadIdx.x] = c;
        }
      } else {
        visit(0, [&](u32 key) {
          const u32 d = (key >> shift) & 255u;
          if ((key & mask) == p0) atomicAdd(&st.hist[0][d], 1u);
          if (!same && (key & mask) == p1) atomicAdd(&st.hist[1][d], 1u);
        });
      }
    } else {
#pragma unroll
      for (int side = 0; side < 2; ++side) {
        const u32 p = side == 0 ? p0 : p1;
        visit(side, [&](u32 key) {
          if ((key & mask) == p) atomicAdd(&st.hist[side][(key >> shift) & 255u], 1u);
        });
      }
    }
    __syncthreads();
    if (warp_id() < 2) {
      const int w = warp_id();
      i64 k = st.kth[w];
      const u32 d = select_digit(st.hist[same ? 0 : w], k);
      if (lane_id() == 0) {
        st.prefix[w] |= d << shift;
        st.kth[w] = k;
      }
    }
    mask |= 255u << shift;
    __syncthreads();
  }
}

// The keys of one source row in global memory, for occ_radix_select (both sides: the same keys).
template <InType T, int kThreads>
struct GlobalRowKeys {
  const void* in;
  i64 base, cols;
  bool vector;
  template <class F>
  FP4JIT_DEV void operator()(int, F&& f) const {
    for_row<T, kThreads>(in, base, cols, vector, [&](i64, float x) { f(sort_key(x)); });
  }
};

// A source row held in registers: this thread's 16-byte pieces v = threadIdx.x + q * kThreads
// (q < kChunks) as sort keys, for rows of whole pieces that fit; the select's passes and the
// counting pass then read no memory. visit: the keys (occ_radix_select); each: (column, value).
template <InType T, int kThreads, int kChunks>
struct RegisterRowKeys {
  u32 keys[kChunks][kVec];
  i64 pieces;  // whole kVec-element pieces in the row
  FP4JIT_DEV RegisterRowKeys(const void* in, i64 base, i64 cols) : pieces(cols / kVec) {
#pragma unroll
    for (int q = 0; q < kChunks; ++q) {
      const i64 v = static_cast<i64>(threadIdx.x) + static_cast<i64>(q) * kThreads;
      float x[kVec];
      if (v < pieces) load_vec<T>(in, base + v * kVec, kVec, true, false, x);
#pragma unroll
      for (int e = 0; e < kVec; ++e) keys[q][e] = v < pieces ? sort_key(x[e]) : 0u;
    }
  }
  template <class F>
  FP4JIT_DEV void operator()(int, F&& f) const {
#pragma unroll
    for (int q = 0; q < kChunks; ++q)
      if (static_cast<i64>(threadIdx.x) + static_cast<i64>(q) * kThreads < pieces)
#pragma unroll
        for (int e = 0; e < kVec; ++e) f(keys[q][e]);
  }
  template <class F>
  FP4JIT_DEV void each(F&& f) const {
#pragma unroll
    for (int q = 0; q < kChunks; ++q) {
      const i64 v = static_cast<i64>(threadIdx.x) + static_cast<i64>(q) * kThreads;
      if (v < pieces)
#pragma unroll
        for (int e = 0; e < kVec; ++e) f(v * kVec + e, key_value(keys[q][e]));
    }
  }
};
// The same row read from global memory at every pass.
template <InType T, int kThreads>
struct GlobalRowValues : GlobalRowKeys<T, kThreads> {
  template <class F>
  FP4JIT_DEV void each(F&& f) const {
    for_row<T, kThreads>(this->in, this->base, this->cols, this->vector, f);
  }
};

// One source row of occ_select: lo and hi by the radix select over `row` (a RegisterRowKeys or
// GlobalRowValues), then the counts and stats from its values clamped.
struct OccSelectShared {
  OccSelectState st;
  u32 spread[256 * kSpread];
  u32 block_count, block_stat;
};
template <class Cfg, class Row>
FP4JIT_DEV void occ_select_row(const OccSelectArgs& a, OccSelectShared& sh, i64 row,
                               const Row& keys, u32& finite_amax) {
  const bool want_stats = a.stats != nullptr;
  if (threadIdx.x == 0) {
    sh.st.kth[0] = a.lo_index;
    sh.st.kth[1] = a.hi_index;
    sh.block_count = 0u;
    sh.block_stat = 0u;
  }
  occ_radix_select<Cfg::in, true, Cfg::threads>(sh.st, keys, sh.spread);
  const float lo = key_value(complete_key<Cfg::in>(sh.st.prefix[0])),
              hi = key_value(complete_key<Cfg::in>(sh.st.prefix[1]));
  if (threadIdx.x == 0) {
    a.lohi[2 * row] = lo;
    a.lohi[2 * row + 1] = hi;
  }
  u32 count = 0u, row_max = 0u;
  keys.each([&](i64 c, float x) {
    const float v = occ_clamp(x, lo, hi);
    // |v|'s bits, as the stats pass takes them (NaN and Inf at or above 0x7f800000).
    const u32 m = abs_bits(v);
    row_max = umax(row_max, m);
    if (m < 0x7f800000u) finite_amax = umax(finite_amax, m);
    if (v != x) {
      ++count;
      if (a.chunk_counts != nullptr)
        atomicAdd(a.chunk_counts + (row / kOccChunkRows) * a.cols + c, 1u);
    }
  });
  if (a.row_counts != nullptr || want_stats) {
    count = warp_sum(count);
    row_max = warp_max(row_max);
    if (lane_id() == 0) {
      if (count != 0u) atomicAdd(&sh.block_count, count);
      if (row_max != 0u) atomicMax(&sh.block_stat, row_max);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      if (a.row_counts != nullptr) a.row_counts[row] = sh.block_count;
      if (want_stats) a.stats[row] = stat_of(sh.block_stat);
    }
  }
  __syncthreads();
}

// Four CTAs per SM (64 registers: the register-held rows took 76, three CTAs).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads, 4) occ_select(OccSelectArgs a) {
  __shared__ OccSelectShared sh;
  const bool vector = a.vector_ok != 0u;
  // Rows of whole 16-byte pieces, at most two a thread (4096 elements at 256 threads): held in
  // registers (four a thread took 79 registers, for every row length).
  const bool in_regs = vector && a.cols % kVec == 0 && a.cols / kVec <= 2 * Cfg::threads;
  u32 finite_amax = 0u;  // of the clamped values this thread saw
  for (i64 row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const i64 base = row * a.stride;
    if (in_regs) {
      occ_select_row<Cfg>(a, sh, row, RegisterRowKeys<Cfg::in, Cfg::threads, 2>(a.in, base, a.cols),
                          finite_amax);
    } else {
      occ_select_row<Cfg>(a, sh, row,
                          GlobalRowValues<Cfg::in, Cfg::threads>{{a.in, base, a.cols, vector}},
                          finite_amax);
    }
  }
  if (a.stats != nullptr) {
    finite_amax = warp_max(finite_amax);
    if (lane_id() == 0) atomicMax(a.amax_bits, finite_amax);
  }
}

// Each column's chunk counts become the column's clamped elements in the chunks before (an
// exclusive scan down the column, in place), so occ_write finds a chunk's list position in one
// read; the column's total goes to col_counts. One thread per column, kBatch loads in flight.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads) occ_chunk_scan(OccChunkScanArgs a) {
  constexpr int kBatch = 16;
  const i64 j = static_cast<i64>(blockIdx.x) * Cfg::threads + threadIdx.x;
  if (j >= a.cols) return;
  u32 before = 0u;
  for (i64 q0 = 0; q0 < a.chunks; q0 += kBatch) {
    u32 c[kBatch];
#pragma unroll
    for (int t = 0; t < kBatch; ++t)
      c[t] = q0 + t < a.chunks ? a.chunk_counts[(q0 + t) * a.cols + j] : 0u;
#pragma unroll
    for (int t = 0; t < kBatch; ++t) {
      if (q0 + t < a.chunks) a.chunk_counts[(q0 + t) * a.cols + j] = before;
      before += c[t];
    }
  }
  a.col_counts[j] = before;
}

// Exclusive scan of n counts by one CTA, kPer per thread per round.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads) occ_scan(OccScanArgs a) {
  constexpr int kPer = 4;
  constexpr int kWarps = Cfg::threads / 32;
  __shared__ i64 warp_total[kWarps];
  __shared__ i64 carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (i64 base = 0; base < a.n; base += static_cast<i64>(Cfg::threads) * kPer) {
    const i64 first = base + static_cast<i64>(threadIdx.x) * kPer;
    i64 local[kPer];
    i64 sum = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      local[i] = first + i < a.n ? static_cast<i64>(a.counts[first + i]) : 0;
      sum += local[i];
    }
    i64 incl = sum;
    for (int d = 1; d < 32; d <<= 1) {
      const i64 other = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane_id() >= d) incl += other;
    }
    if (lane_id() == 31) warp_total[warp_id()] = incl;
    __syncthreads();
    i64 before = carry;
    for (int w = 0; w < warp_id(); ++w) before += warp_total[w];
    i64 run = before + incl - sum;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      if (first + i < a.n) a.offsets[first + i] = run;
      run += local[i];
    }
    __syncthreads();
    if (threadIdx.x == Cfg::threads - 1) carry = run;
    __syncthreads();
  }
  if (threadIdx.x == 0) *a.total = carry;
}

// clamp(x) != x: x below lo, above hi, or NaN (a NaN bound clamps nothing).
FP4JIT_DEV bool occ_listed(float x, float lo, float hi) {
  return x < lo || x > hi || nx::is_nan(x);
}
// One operand entry: listed at pos (and pos advanced) if clamp(x) != x.
FP4JIT_DEV void occ_list(const OccWriteArgs& a, float x, float lo, float hi, i64 index, i64& pos) {
  if (!occ_listed(x, lo, hi)) return;
  if (pos < a.capacity) {
    a.index[pos] = index;
    a.value[pos] = residual(x, lo, hi);
  }
  ++pos;
}

// The transposed list's kernel asks for two CTAs per SM (its grid is about two CTAs per SM: at
// one, with its eight rows of eight columns in flight a thread, it ran in two rounds).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads, Cfg::cols ? 2 : 1) occ_write(OccWriteArgs a) {
  constexpr int kWarps = Cfg::threads / 32;
  const int lane = lane_id();
  const bool vector_ok = a.vector_ok != 0u;
  if constexpr (!Cfg::cols) {
    // One warp per source row = operand row, kVec elements a lane and kUnroll rounds of the
    // warp's 32 * kVec in flight; a lane's list position from a scan of the lanes' counts.
    constexpr int kUnroll = 2;
    const i64 warps = static_cast<i64>(gridDim.x) * kWarps;
    for (i64 row = static_cast<i64>(blockIdx.x) * kWarps + warp_id(); row < a.rows; row += warps) {
      const float lo = a.lohi[2 * row], hi = a.lohi[2 * row + 1];
      i64 running = a.offsets[row];
      for (i64 base = 0; base < a.cols; base += 32 * kVec * kUnroll) {
        float x[kUnroll][kVec];
        int n[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const i64 c0 = base + static_cast<i64>(u * 32 + lane) * kVec;
          const i64 left = a.cols - c0;
          n[u] = left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
          load_vec<Cfg::in>(a.in, row * a.stride + c0, n[u], vector_ok && n[u] == kVec, true, x[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          u32 count = 0u;
#pragma unroll
          for (int e = 0; e < kVec; ++e) count += (e < n[u] && occ_listed(x[u][e], lo, hi));
          u32 incl = count;
#pragma unroll
          for (int d = 1; d < 32; d <<= 1) {
            const u32 other = __shfl_up_sync(0xffffffffu, incl, d);
            if (lane >= d) incl += other;
          }
          const u32 total = __shfl_sync(0xffffffffu, incl, 31);
          if (count != 0u) {
            i64 pos = running + (incl - count);
            const i64 c0 = base + static_cast<i64>(u * 32 + lane) * kVec;
#pragma unroll
            for (int e = 0; e < kVec; ++e)
              if (e < n[u]) occ_list(a, x[u][e], lo, hi, row * a.cols + c0 + e, pos);
          }
          running += total;
        }
      }
    }
  } else {
    // The transposed operand: one thread per (kVec source columns = operand rows, chunk of
    // kOccChunkRows source rows), from each column's list position at the chunk (the column's
    // offset plus its counts in the chunks before), the chunk's rows in order, kUnroll of them in
    // flight.
    constexpr int kUnroll = 8;
    constexpr i64 kCols = static_cast<i64>(Cfg::threads) * kVec;
    const i64 col_groups = (a.cols + kCols - 1) / kCols;
    const i64 chunks = (a.rows + kOccChunkRows - 1) / kOccChunkRows;
    for (i64 b = blockIdx.x; b < col_groups * chunks; b += gridDim.x) {
      const i64 chunk = b / col_groups;
      const i64 j0 = (b - chunk * col_groups) * kCols + static_cast<i64>(threadIdx.x) * kVec;
      const i64 left = a.cols - j0;
      if (left <= 0) continue;
      const int n = left >= kVec ? kVec : static_cast<int>(left);
      const bool vector = vector_ok && n == kVec;
      i64 pos[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        pos[e] = e < n ? a.offsets[j0 + e] + a.chunk_counts[chunk * a.cols + j0 + e] : 0;
      const i64 r0 = chunk * kOccChunkRows;
      const i64 r1 = r0 + kOccChunkRows < a.rows ? r0 + kOccChunkRows : a.rows;
      if (vector) {  // kUnroll rows' raw 16-byte pieces in flight, widened as they are used
        constexpr int kRaw = in_size(Cfg::in) * kVec / 16;
        const char* in = static_cast<const char*>(a.in);
        for (i64 i0 = r0; i0 < r1; i0 += kUnroll) {
          uint4 raw[kUnroll][kRaw];
          float lo[kUnroll], hi[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const i64 i = i0 + u < r1 ? i0 + u : r1 - 1;  // past the chunk: its last row, unused
            const char* p = in + (i * a.stride + j0) * in_size(Cfg::in);
#pragma unroll
            for (int q = 0; q < kRaw; ++q) raw[u][q] = load16(p + 16 * q, true);
            lo[u] = a.lohi[2 * i];
            hi[u] = a.lohi[2 * i + 1];
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            if (i0 + u >= r1) break;
            float x[kVec];
#pragma unroll
            for (int q = 0; q < kRaw; ++q)
              widen<Cfg::in>(raw[u][q], x + q * (16 / in_size(Cfg::in)));
#pragma unroll
            for (int e = 0; e < kVec; ++e)
              occ_list(a, x[e], lo[u], hi[u], (j0 + e) * a.rows + i0 + u, pos[e]);
          }
        }
      } else {
        for (i64 i = r0; i < r1; ++i) {
          float x[kVec];
          load_vec<Cfg::in>(a.in, i * a.stride + j0, n, false, true, x);
          const float lo = a.lohi[2 * i], hi = a.lohi[2 * i + 1];
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            if (e < n) occ_list(a, x[e], lo, hi, (j0 + e) * a.rows + i, pos[e]);
        }
      }
    }
  }
}

}  // namespace fp4jit::kern
