// Tile geometry and shared-memory layout of the sm90 GEMM as plain constexpr C++ (no device
// code): GemmTraits (traits.cuh) derives from it, and the host library computes the same numbers
// for the launch (dynamic shared memory, TMA boxes) from the kernel's config.
//
// Per K tile every row holds 64 bytes of packed E2M1 codes (FP8 path, BLOCK_K = 128) or 32 bytes
// (16-bit path, BLOCK_K = 64), and expands to 128 bytes: one 128-byte swizzle atom row, consumed
// by 4 wgmma K steps of 32 bytes each. ms_grad's A holds E5M2 codes, one byte per element (64
// bytes per row and K tile).
#pragma once
#include "gemm/sm90/config.cuh"

namespace fp4jit::sm90 {

FP4JIT_GEMM_CONSTEXPR int round_up(int x, int a) { return (x + a - 1) / a * a; }

struct GemmGeometry {
  bool fp8;                       // QGMMA (E4M3) path, else HGMMA (FP16 / BF16)
  int block_k;                    // elements per K tile
  int packed_row_a, packed_row_b; // bytes of one operand row per K tile (the TMA box width)
  bool swizzle64;                 // TMA boxes use CU_TENSOR_MAP_SWIZZLE_64B (FP8 path), else none
  int packed_a_bytes, packed_b_bytes, exp_b_bytes, exp_stage_bytes, packed_stage_bytes;
  int row_info_bytes, header_bytes, table_bytes;
  int exp_offset, packed_offset, header_offset, table_offset, barrier_offset, num_barriers;
  int scratch_offset, scratch_bytes, split_flag_word;
  int smem_bytes;                 // dynamic shared memory to launch with
  int threads;                    // CTA size
  unsigned tma_bytes;             // bytes one packed stage receives
};

FP4JIT_GEMM_CONSTEXPR GemmGeometry gemm_geometry(ScaleKind kind, int block_m, int block_n, int packed_stages, int exp_stages,
                                     int transform_wgs) {
  GemmGeometry g{};
  g.fp8 = kind == ScaleKind::ms || kind == ScaleKind::mx;
  g.block_k = g.fp8 ? 128 : 64;
  g.packed_row_b = g.block_k / 2;
  g.packed_row_a = kind == ScaleKind::ms_grad ? g.block_k : g.block_k / 2;
  g.swizzle64 = g.fp8;
  // An expanded stage holds B expanded (block_n rows of 128 bytes) followed by a copy of the
  // packed A tile (same swizzle), so that a packed slot is free as soon as the transform warpgroup
  // has processed it.
  g.packed_a_bytes = round_up(block_m * g.packed_row_a, 1024);
  g.packed_b_bytes = round_up(block_n * g.packed_row_b, 1024);
  g.exp_b_bytes = block_n * 128;
  g.exp_stage_bytes = g.exp_b_bytes + g.packed_a_bytes;
  g.packed_stage_bytes = g.packed_a_bytes + g.packed_b_bytes;
  g.row_info_bytes = 16;  // per A row and expanded stage (ms_grad: B's column factors instead)
  g.header_bytes = block_m * g.row_info_bytes + 16;
  g.table_bytes = 512;  // mx: E4M3 tables (17 x 8 B); nv: scale decode (256 x 2 B)
  g.exp_offset = 0;
  g.packed_offset = g.exp_offset + exp_stages * g.exp_stage_bytes;
  g.header_offset = g.packed_offset + packed_stages * g.packed_stage_bytes;
  g.table_offset = g.header_offset + round_up(exp_stages * g.header_bytes, 16);
  g.barrier_offset = g.table_offset + g.table_bytes;
  g.num_barriers = 2 * packed_stages + 2 * exp_stages;
  g.scratch_offset = g.barrier_offset + g.num_barriers * 8;
  g.scratch_bytes = 2 * 8 * 4 * 4 + 16;  // transform reductions (2 parities x 8 warps) + split-K flag
  g.split_flag_word = 2 * 8 * 4;
  g.smem_bytes = g.scratch_offset + g.scratch_bytes + 1024;  // + alignment slack
  g.threads = 128 * transform_wgs + 256;
  g.tma_bytes = static_cast<unsigned>(block_m * g.packed_row_a + block_n * g.packed_row_b);
  return g;
}

}  // namespace fp4jit::sm90
