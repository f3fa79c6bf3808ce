// quantize_rows: the row-wise (non-transposed) operand straight from global memory, one pass.
//
// Two paths, chosen by the operand at compile time:
//   groups    (quantize/groups.cuh: E2M1, 1 x 16 or 1 x 32 blocks, Hadamard chunks up to 32) each
//             lane owns 32 consecutive elements of a row per item (whole blocks: stats, scale and
//             Hadamard in registers), encodes them by one FMA each, and has the next item's
//             16-byte loads in flight meanwhile; items are walked without 64-bit divisions.
//   segments  (quantize/segment.cuh: every other operand) each warp walks one operand row at a
//             time, 32 x kUnroll segments of kVec elements; block stats of 1 x block_cols tiles
//             (and Hadamard chunks) are reduced over neighbouring lanes; blocks spanning more
//             rows, whole rows or columns, or the tensor come from the stats pass.
//
// Phases (Cfg::phase):
//   stats     accumulates the global finite amax (two-level s_enc, the amax output) and the stat
//             words of blocks that are not local; walks the rows in reverse so that the rows the
//             quantize pass reads first are still in L2. Skipped for two-level operands whose
//             amax the caller gives (OperandOut::amax_in, delayed scaling).
//   quantize  writes codes and scales (and s_enc and amax).
//
// Config (a named struct in the generated stub):
//   using Op = ...;                      the operand (quantize/config.cuh)
//   static constexpr InType in;          input element type
//   static constexpr Phase phase;
//   static constexpr int threads;        per CTA, a multiple of 32
//   static constexpr int unroll;         segments per lane per iteration (segments path)
#pragma once
#include "quantize/args.cuh"
#include "quantize/groups.cuh"
#include "quantize/segment.cuh"

namespace fp4jit::kern {

// Publishes the operand's global results: the stats pass accumulates the amax; the quantize pass
// copies it (and s_enc) when the stats pass knew it, else accumulates the amax output.
template <class Op, bool kStats>
FP4JIT_DEV void finish_rows(const OperandOut& o, u32 global_max, float s_enc) {
  global_max = warp_max(global_max);
  const int lane = lane_id();
  if constexpr (kStats) {
    if (lane == 0 && o.amax_bits != nullptr) atomicMax(o.amax_bits, global_max);
  } else if (o.amax_bits != nullptr) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      if (o.amax_out != nullptr) *o.amax_out = *o.amax_bits;
      if constexpr (Op::rule == Rule::two_level)
        if (o.tensor_scale != nullptr) *o.tensor_scale = s_enc;
    }
  } else {
    if (lane == 0 && o.amax_out != nullptr) atomicMax(o.amax_out, global_max);
    if constexpr (Op::rule == Rule::two_level)
      if (o.amax_in != nullptr && o.tensor_scale != nullptr && blockIdx.x == 0 && threadIdx.x == 0)
        *o.tensor_scale = s_enc;
  }
}

// Where 16-byte chunk g of an item sits in its ring slot: chunks of one lane (kLoads in a row)
// spread over all banks, so both the copies (chunk g by lane g % 32) and the reads (chunks
// kLoads * lane + j) hit 8 distinct 16-byte bank groups per quarter warp.
template <int kLoads>
FP4JIT_DEV int ring_slot(int g) {
  return g ^ ((g / kLoads) & 7);
}

// Group g of a lane's item of the lane-group path (rows_groups): its first n elements in range,
// from the lane's 16-byte chunks `cur`, starting at operand element (r, c0 + g * group size):
// values, OCC clamp, codes and scale codes. kDefer (quantize pass, code scales): the codes go to
// *gc and the caller stores the lane's whole item; else they are stored per group.
template <class Cfg, bool kDefer, int kLoads>
FP4JIT_DEV void rows_group(const uint4 (&cur)[kLoads], int g, int n, i64 r, i64 c0, float lo,
                           float hi, const OperandOut& o, const QuantizeArgs& a, float s_enc,
                           const TwoLevel& tl, bool want_max, u32& global_max,
                           GroupCodes<typename Cfg::Op>* gc) {
  using Op = typename Cfg::Op;
  constexpr bool kStats = Cfg::phase == Phase::stats;
  constexpr int kG = group_size<Op>();
  // Codes' signs from the BF16 input itself where the encoded values are that input scaled by a
  // positive factor (no Hadamard, no OCC clamp: quantize_group's kRawSigns), on the stored-at-once
  // path.
  constexpr bool kRawSigns = kDefer && Cfg::in == InType::bf16 && Op::had == 0 && !Op::occ;
  const i64 cg = c0 + g * kG;
  float v[kG];
  u32 m[kG / Op::block_cols];
  const bool stats_given = group_from_chunks<Op, Cfg::in>(cur, g, v, m);
  if constexpr (Op::occ) {
#pragma unroll
    for (int e = 0; e < kG; ++e)
      if (e < n) v[e] = v[e] < lo ? lo : (v[e] > hi ? hi : v[e]);
  }
  if constexpr (packed_pow2<Op, Cfg::in>()) {
    u32 p[kG / 2];
    pairs_from_chunks<Op>(cur, g, p);
    quantize_group<Op, kStats, false, true, kDefer>(v, stats_given, m, r, cg, n, o, s_enc, tl,
                                                    a.seed, a.offset, want_max, global_max, p,
                                                    kDefer, gc);
  } else if constexpr (kRawSigns) {
    u32 raw[kG / 2];  // the group's BF16 input, element order
    words_from_chunks<kG>(cur, g, raw);
    quantize_group<Op, kStats, false, false, true, true>(v, stats_given, m, r, cg, n, o, s_enc, tl,
                                                         a.seed, a.offset, want_max, global_max,
                                                         raw, true, gc);
  } else {
    quantize_group<Op, kStats, false, false, kDefer>(v, stats_given, m, r, cg, n, o, s_enc, tl,
                                                     a.seed, a.offset, want_max, global_max,
                                                     nullptr, kDefer, gc);
  }
}

// The lane-owned-group path (quantize/groups.cuh): item = one row's chunk of 32 x kPerLane
// elements, each lane kPerLane consecutive ones (whole groups). Items stream through a ring of
// kStages slots per warp in shared memory (cp.async, coalesced, zero-filled past the row's end),
// up to kStages - 1 of them in flight while one is encoded, so the bytes in flight do not cost
// registers. The rings are the launch's dynamic shared memory (rows_ring_bytes: more than the 48 KB
// of static shared memory, e.g. two slots for each of 16 warps). CTAs are persistent (the host
// launches as many as fit at once).
template <class Cfg>
FP4JIT_DEV void rows_groups(const QuantizeArgs& a) {
  using Op = typename Cfg::Op;
  constexpr bool kStats = Cfg::phase == Phase::stats;
  constexpr int kG = group_size<Op>();
  constexpr int kPerLane = 32;
  constexpr int kGroups = kPerLane / kG;
  constexpr int kEsz = in_size(Cfg::in);
  constexpr int kLoads = kPerLane * kEsz / 16;
  constexpr int kPerLoad = 16 / kEsz;
  constexpr int kWarps = Cfg::threads / 32;
  constexpr int kStages = rows_ring_stages(Cfg::threads, Cfg::unroll, Cfg::in);
  constexpr int kSlot = 32 * kLoads;  // 16-byte chunks per ring slot
  static_assert(kStages >= 1, "the warps' rings do not fit the shared-memory budget");
  static_assert(
      kWarps * kStages * kSlot * 16 == rows_ring_bytes(Cfg::threads, Cfg::unroll, Cfg::in),
      "the rings are the bytes the launch passes");
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  extern __shared__ __align__(16) uint4 ring[];  // rows_ring_bytes of dynamic shared memory
#else
  __shared__ __align__(16) uint4 ring[kWarps * kStages * kSlot];  // host builds (the emulator)
#endif

  const OperandOut o = a.row;
  const int lane = lane_id();
  const i64 cols = o.cols;
  const i64 chunks = (cols + 32 * kPerLane - 1) / (32 * kPerLane);
  const i64 items = o.rows * chunks;
  const bool vector_ok = a.vector_ok != 0u;
  const char* in = static_cast<const char*>(a.in);
  uint4* const my_ring = ring + warp_id() * (kStages * kSlot);

  float s_enc = 1.0f;
  TwoLevel tl{1.0f, 1.0f};
  if constexpr (!kStats && Op::rule == Rule::two_level) {
    s_enc = operand_s_enc<Op>(o);
    tl = two_level_consts<Op>(s_enc);
  }
  if constexpr (!kStats && two_level_codes<Op>()) {
    // Every scale code's factor, once per CTA (before any warp may leave).
    __shared__ float factors[256];
    fill_factor_table<Op, Cfg::threads>(factors, tl);
    __syncthreads();
  }
  // A lane whose kPerLane elements are all in range stores their codes with one 16-byte store and
  // its blocks' scale codes together (quantize_group's deferred codes), where the layout allows:
  // the row's checks, addresses and stores once per item instead of once per group.
  constexpr bool kDeferred = !kStats && scale_is_code(Op::scale);
  constexpr int kLaneScales = kPerLane / Op::block_cols;
  const bool codes16 =
      (reinterpret_cast<unsigned long long>(o.codes) & 15u) == 0u && o.row_bytes % 16 == 0;
  const bool scales16 = kLaneScales == 2 &&
                        (reinterpret_cast<unsigned long long>(o.scales) & 1u) == 0u &&
                        o.scale_cols % 2 == 0;
  const bool want_max =
      kStats ? o.amax_bits != nullptr : (o.amax_out != nullptr && o.amax_bits == nullptr);
  u32 global_max = 0u;

  // Items walked without 64-bit divisions: (row, chunk) of this warp's item, advanced by the
  // grid's warps each round.
  const i64 step = static_cast<i64>(gridDim.x) * kWarps;
  const i64 first = static_cast<i64>(blockIdx.x) * kWarps + warp_id();
  if (first >= items) {
    finish_rows<Op, kStats>(o, global_max, s_enc);
    return;
  }
  GridWalk<kStats> at(first, step, chunks, items);
  // The warp's copies of item (rr, cc) into ring slot `stage`: chunk g by lane g % 32.
  const auto issue = [&](i64 rr, i64 cc, int stage) {
    uint4* slot = my_ring + stage * kSlot;
    const char* row = in + rr * a.stride * kEsz;
    const i64 c_item = cc * (32 * kPerLane);
    if (vector_ok && c_item + 32 * kPerLane <= cols) {  // the whole item: no bounds per chunk
      const char* src = row + (c_item + lane * kPerLoad) * kEsz;
#pragma unroll
      for (int j = 0; j < kLoads; ++j)
        cp_async16<true>(slot + ring_slot<kLoads>(j * 32 + lane), src + 512 * j, 16);
      return;
    }
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int g = j * 32 + lane;
      fetch16<kEsz>(slot + ring_slot<kLoads>(g), row, c_item + static_cast<i64>(g) * kPerLoad, cols,
                    vector_ok);
    }
  };

  // Prologue: the first kStages - 1 items in flight (empty groups past the warp's last item keep
  // the group count uniform).
  GridWalk<kStats> ahead = at;
  i64 it_issue = first;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (it_issue < items) {
      issue(ahead.r, ahead.c, s);
      ahead.next();
    }
    it_issue += step;
    cp_async_commit();
  }
  int stage = 0;
  for (i64 it = first; it < items; it += step) {
    // The slot read last round takes the item kStages - 1 ahead.
    if (it_issue < items) {
      issue(ahead.r, ahead.c, stage == 0 ? kStages - 1 : stage - 1);
      ahead.next();
    }
    it_issue += step;
    cp_async_commit();
    cp_async_wait<kStages - 1>();
    __syncwarp();
    uint4 cur[kLoads];
#pragma unroll
    for (int l = 0; l < kLoads; ++l)
      cur[l] = my_ring[stage * kSlot + ring_slot<kLoads>(lane * kLoads + l)];
    __syncwarp();  // every lane has read the slot before it is refilled
    stage = stage + 1 == kStages ? 0 : stage + 1;

    const i64 r = at.r;
    const i64 c0 = at.c * (32 * kPerLane) + static_cast<i64>(lane) * kPerLane;
    float lo = 0.0f, hi = 0.0f;
    if constexpr (Op::occ) {
      lo = o.lohi[2 * r];
      hi = o.lohi[2 * r + 1];
    }
    if constexpr (kDeferred) {
      if (codes16 && vector_ok && c0 + kPerLane <= cols) {
        u32 words[kPerLane / 8];
        u32 scales[kLaneScales];
#pragma unroll
        for (int g = 0; g < kGroups; ++g) {
          GroupCodes<Op> gc;
          rows_group<Cfg, true>(cur, g, kG, r, c0, lo, hi, o, a, s_enc, tl, want_max, global_max,
                                &gc);
#pragma unroll
          for (int w = 0; w < kG / 8; ++w) words[g * (kG / 8) + w] = gc.words[w];
#pragma unroll
          for (int b = 0; b < kG / Op::block_cols; ++b)
            scales[g * (kG / Op::block_cols) + b] = gc.scales[b];
        }
        static_assert(kPerLane / 8 == 4, "a lane's codes: one 16-byte store");
        *reinterpret_cast<uint4*>(o.codes + r * o.row_bytes + (c0 >> 1)) =
            uint4{words[0], words[1], words[2], words[3]};
        u8* sc = static_cast<u8*>(o.scales) + block_index<Op>(r, c0, o.scale_cols);
        if (scales16) {
          *reinterpret_cast<u16*>(sc) =
              static_cast<u16>(scales[0] | (scales[1 % kLaneScales] << 8));
        } else {
#pragma unroll
          for (int b = 0; b < kLaneScales; ++b) sc[b] = static_cast<u8>(scales[b]);
        }
        at.next();
        continue;
      }
    }
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      const i64 left = cols - (c0 + g * kG);
      const int n = left <= 0 ? 0 : (left >= kG ? kG : static_cast<int>(left));
      if (n == 0) break;
      rows_group<Cfg, false>(cur, g, n, r, c0, lo, hi, o, a, s_enc, tl, want_max, global_max,
                             nullptr);
    }
    at.next();
  }
  cp_async_wait<0>();
  finish_rows<Op, kStats>(o, global_max, s_enc);
}

// The segment path (quantize/segment.cuh) for every other operand.
template <class Cfg>
FP4JIT_DEV void rows_segments(const QuantizeArgs& a) {
  using Op = typename Cfg::Op;
  static_assert(Cfg::threads % 32 == 0 && Cfg::unroll >= 1, "bad launch shape");
  constexpr int kU = Cfg::unroll;
  constexpr int kWarps = Cfg::threads / 32;
  constexpr int kG = group_k_lanes<Op>();
  constexpr int kSub = sub_blocks<Op>();
  constexpr bool kStats = Cfg::phase == Phase::stats;

  const OperandOut o = a.row;
  const int lane = lane_id();
  const i64 cols = o.cols;
  const i64 segs_per_row = (cols + kVec - 1) / kVec;
  const i64 chunks = (segs_per_row + 32 * kU - 1) / (32 * kU);
  const i64 items = o.rows * chunks;
  const bool vector_ok = a.vector_ok != 0u;

  float s_enc = 1.0f;
  if constexpr (!kStats && Op::rule == Rule::two_level) s_enc = operand_s_enc<Op>(o);
  // The global amax: accumulated by the stats pass, else here when the caller wants it.
  const bool want_max =
      kStats ? o.amax_bits != nullptr : (o.amax_out != nullptr && o.amax_bits == nullptr);
  u32 global_max = 0u;  // finite amax of what this lane saw
  u32 tensor_stat = 0u;

  for (i64 it = static_cast<i64>(blockIdx.x) * kWarps + warp_id(); it < items;
       it += static_cast<i64>(gridDim.x) * kWarps) {
    const i64 item = kStats ? items - 1 - it : it;
    const i64 r = item / chunks;
    const i64 seg0 = (item - r * chunks) * (32 * kU);
    float v[kU][kVec];
    int n[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const i64 c0 = (seg0 + u * 32 + lane) * kVec;
      const i64 left = cols - c0;
      n[u] = left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
      load_vec<Cfg::in>(a.in, r * a.stride + c0, n[u], vector_ok && n[u] == kVec, !kStats, v[u]);
    }
    if constexpr (Op::occ) {
      const float lo = o.lohi[2 * r], hi = o.lohi[2 * r + 1];
#pragma unroll
      for (int u = 0; u < kU; ++u)
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if (e < n[u]) v[u][e] = v[u][e] < lo ? lo : (v[u][e] > hi ? hi : v[u][e]);
    }
    u32 row_stat = 0u;
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const i64 c0 = (seg0 + u * 32 + lane) * kVec;
      hadamard<Op, 1>(v[u], lane % kG);
      if (want_max) global_max = umax(global_max, finite_max(v[u]));
      u32 stat[kSub];
      if constexpr (kStats) {
        if (o.stats_out == nullptr) continue;  // the global amax only (two-level tile blocks)
        if constexpr (Op::block == BlockKind::tile) {
          constexpr int kPer = kVec / kSub;
          tile_stats<Op, 1, 0>(v[u], stat);
          if (n[u] > 0)
#pragma unroll
            for (int s = 0; s < kSub; ++s) {
              const i64 c = c0 + s * kPer;
              if (c % Op::block_cols == 0)
                atomicMax(o.stats_out + block_index<Op>(r, c, o.scale_cols), stat[s]);
            }
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            if (e >= n[u]) continue;
            const u32 key = stat_key(v[u][e]);
            if constexpr (Op::block == BlockKind::row)
              row_stat = umax(row_stat, key);
            else if constexpr (Op::block == BlockKind::tensor)
              tensor_stat = umax(tensor_stat, key);
            else
              atomicMax(o.stats_out + c0 + e, key);
          }
        }
      } else {
        if constexpr (Op::block == BlockKind::tile) tile_stats<Op, 1, 0>(v[u], stat);
        quantize_segment<Op, 0>(v[u], stat, r, c0, n[u], o, s_enc, a.seed, a.offset, nullptr);
      }
    }
    if constexpr (kStats && Op::block == BlockKind::row) {
      row_stat = warp_max(row_stat);
      if (lane == 0 && o.stats_out != nullptr && row_stat != 0u)
        atomicMax(o.stats_out + r, row_stat);
    }
  }

  if constexpr (kStats && Op::block == BlockKind::tensor) {
    tensor_stat = warp_max(tensor_stat);
    if (lane == 0 && o.stats_out != nullptr) atomicMax(o.stats_out, tensor_stat);
  }
  finish_rows<Op, kStats>(o, global_max, s_enc);
}

// The second bound is the config's minb= (CTAs per SM asked of the register allocator); 0 emits
// no .minnctapersm, as __launch_bounds__(threads) alone.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks) quantize_rows(QuantizeArgs a) {
  using Op = typename Cfg::Op;
  static_assert(operand_ok<Op>(), "operand not supported by the CUDA kernels");
  resolve_seed<Cfg, Op>(a);
  if constexpr (lane_groups<Op>()) {
    rows_groups<Cfg>(a);
  } else {
    rows_segments<Cfg>(a);
  }
}

}  // namespace fp4jit::kern
