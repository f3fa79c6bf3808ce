// Configuration and shared-memory geometry of the sm100 (Blackwell) FP4 GEMM
// (templates/gemm/sm100/kernel.cuh): native block-scaled FP4 on tcgen05 tensor cores.
//
// STATUS: compiled through NVRTC for sm_100a and inspected with cuobjdump; NOT YET RUN on
// hardware (no Blackwell GPU was available). The CUDA backend launches it on sm_100 devices.
//
// A generated stub instantiates the kernel with one named config type:
//   struct Config : fp4jit::sm100::GemmConfigBase {
//     static constexpr fp4jit::sm100::ScaleKind kKind = fp4jit::sm100::ScaleKind::nv;
//   };
//   template __global__ void fp4jit::sm100::gemm_kernel<Config>(...);
// The geometry is plain constexpr C++ so that the host computes the same launch numbers.
#pragma once
#include "gemm/params.cuh"

namespace fp4jit::sm100 {

using gemm::GemmParams;
using gemm::OutType;

enum class ScaleKind : int {
  mx = 0,  // 1x32 blocks, E8M0 scales (mxfp4, tetrajet): kind::mxf4nvf4.block_scale.block32
  nv = 1,  // 1x16 (or 16x16 weight) blocks, UE4M3 scales + FP32 tensor scales (nvfp4):
           //   kind::mxf4nvf4.block_scale.block16
};

struct GemmConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::mx;
  static constexpr int kABlockRows = 1, kBBlockRows = 1;  // nv: 16 for 16x16 blocks
  static constexpr int BLOCK_M = 128;                     // one tcgen05.mma M = 128, cta_group::1
  static constexpr int BLOCK_N = 128;
  static constexpr int kStages = 4;  // TMA ring depth
  static constexpr OutType kOut = OutType::bf16;
  static constexpr int kN = 0, kK = 0;  // compile-time problem sizes (0: from GemmParams)
};

// Per stage: A and B tiles of 128 rows x 128 bytes (256 E2M1 codes along K, 128-byte swizzle),
// then the block scales of both in the tcgen05 scale-factor atom layout: 512 bytes per 128 rows
// and 4 scales, byte (i * 16 + c * 4 + j) = scale j of row 32 c + i.
struct GemmGeometry {
  int block_k;          // elements per K tile (256)
  int row_bytes;        // bytes of one operand row per K tile (128; TMA box width, SWIZZLE_128B)
  int sf_vec;           // elements per block scale (32 or 16)
  int sf_atoms;         // scale atoms per operand and stage (4 scales each)
  int a_bytes, b_bytes, sf_bytes, stage_bytes;
  int barrier_offset;   // full[stages], empty[stages], accum_full, then the TMEM address word
  int smem_bytes;       // dynamic shared memory to launch with (1024-byte alignment slack included)
  int threads;          // 6 warps: TMA + scales, MMA issue, 4 epilogue warps
  int tmem_cols;        // accumulator + scale factors of every stage (a power of two)
  unsigned tma_bytes;   // bytes the two TMA boxes of one stage deliver
};

FP4JIT_GEMM_CONSTEXPR GemmGeometry gemm_geometry(ScaleKind kind, int block_n, int stages) {
  GemmGeometry g{};
  g.block_k = 256;
  g.row_bytes = 128;
  g.sf_vec = kind == ScaleKind::mx ? 32 : 16;
  g.sf_atoms = g.block_k / (4 * g.sf_vec);
  g.a_bytes = 128 * g.row_bytes;
  g.b_bytes = block_n * g.row_bytes;
  g.sf_bytes = 2 * g.sf_atoms * 512;
  g.stage_bytes = (g.a_bytes + g.b_bytes + g.sf_bytes + 1023) / 1024 * 1024;
  g.barrier_offset = stages * g.stage_bytes;
  g.smem_bytes = g.barrier_offset + (2 * stages + 1) * 8 + 16 + 1024;
  g.threads = 192;
  const int cols = block_n + stages * 2 * g.sf_atoms * 4;
  g.tmem_cols = cols <= 32 ? 32 : cols <= 64 ? 64 : cols <= 128 ? 128 : cols <= 256 ? 256 : 512;
  g.tma_bytes = static_cast<unsigned>(g.a_bytes + g.b_bytes);
  return g;
}

// The geometry of a config, as a compile-time constant usable in device code.
template <class Cfg>
struct GemmShapeOf {
  static constexpr GemmGeometry G = gemm_geometry(Cfg::kKind, Cfg::BLOCK_N, Cfg::kStages);
};

}  // namespace fp4jit::sm100
