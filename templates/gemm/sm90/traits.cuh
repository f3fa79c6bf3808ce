// Everything the sm90 GEMM derives from its config: tile geometry, tensor-core path, shared-memory
// layout (geometry.cuh) and the compile-time checks that reject a config that cannot work.
#pragma once
#include "gemm/sm90/config.cuh"
#include "gemm/sm90/geometry.cuh"
#include "gemm/sm90/wgmma.cuh"

namespace fp4jit::sm90 {

template <class Cfg>
struct GemmTraits {
  static constexpr ScaleKind kKind = Cfg::kKind;
  static constexpr GemmGeometry G =
      gemm_geometry(kKind, Cfg::BLOCK_M, Cfg::BLOCK_N, Cfg::kPackedStages, Cfg::kExpandedStages,
                    Cfg::kTransformWGs);
  static constexpr bool kFp8 = G.fp8;
  static constexpr bool kBF16 = kKind == ScaleKind::nv && Cfg::kScaleCode != ScaleCode::ue4m3;
  static constexpr bool kPromote = kKind == ScaleKind::mx || kKind == ScaleKind::ms_grad ||
                                   (kKind == ScaleKind::ms && Cfg::kPromoteTiles > 0);
  static constexpr int kPromoteTiles =
      (kKind == ScaleKind::mx || kKind == ScaleKind::ms_grad) ? 1 : Cfg::kPromoteTiles;
  static constexpr int kAblate = Cfg::kAblate;
  static constexpr bool kBColFactor = false;  // B's factors are applied at promotion

  static constexpr int BLOCK_M = Cfg::BLOCK_M, BLOCK_N = Cfg::BLOCK_N;
  static constexpr int BLOCK_K = G.block_k;  // elements per K tile
  static constexpr int kScaleBlock = kFp8 ? 32 : 16;
  static constexpr int kBlocksPerTile = BLOCK_K / kScaleBlock;  // 4
  static constexpr int kPackedRow =
      G.packed_row_b;  // bytes of a packed E2M1 row (B; A too but ms_grad)
  static constexpr int kPackedRowA = G.packed_row_a;  // bytes of an A row per K tile
  static constexpr int kSteps = 4;                    // wgmma K steps per tile
  static constexpr int kAccum = BLOCK_N / 2;          // FP32 accumulators per thread

  static constexpr int kPackedStages = Cfg::kPackedStages, kExpStages = Cfg::kExpandedStages;
  static constexpr int kTransformWGs = Cfg::kTransformWGs;
  static constexpr int kTransformThreads = 128 * kTransformWGs;
  static constexpr int kThreads = G.threads;  // transform warpgroup(s) + 2 consumer warpgroups
  static constexpr int kConsumers = 256;

  static constexpr int kPackedABytes = G.packed_a_bytes;
  static constexpr int kExpBBytes = G.exp_b_bytes;
  static constexpr int kExpStageBytes = G.exp_stage_bytes;
  static constexpr int kPackedBBytes = G.packed_b_bytes;
  static constexpr int kPackedStageBytes = G.packed_stage_bytes;
  static constexpr int kRowInfoBytes = G.row_info_bytes;
  static constexpr int kHeaderBytes = G.header_bytes;
  static constexpr int kTableBytes = G.table_bytes;
  static constexpr int kExpOffset = G.exp_offset;
  static constexpr int kPackedOffset = G.packed_offset;
  static constexpr int kHeaderOffset = G.header_offset;
  static constexpr int kTableOffset = G.table_offset;
  static constexpr int kBarrierOffset = G.barrier_offset;
  static constexpr int kNumBarriers = G.num_barriers;
  static constexpr int kScratchOffset = G.scratch_offset;
  static constexpr int kScratchBytes = G.scratch_bytes;
  static constexpr int kSplitFlagWord = G.split_flag_word;
  static constexpr int kSmemBytes = G.smem_bytes;
  static constexpr unsigned kTmaBytes = G.tma_bytes;

  // Barrier arrival counts: one arrive per warp.
  static constexpr unsigned kPackedEmptyArrivals = 4 * kTransformWGs;
  static constexpr unsigned kExpFullArrivals = 4 * kTransformWGs;
  static constexpr unsigned kExpEmptyArrivals = 8;

  static_assert(BLOCK_M == 128, "BLOCK_M is two consumer warpgroups of 64 rows");
  static_assert(BLOCK_N % 64 == 0 && BLOCK_N >= 64 && BLOCK_N <= 256,
                "BLOCK_N: 64, 128, 192 or 256");
  static_assert(!kPromote || BLOCK_N <= 128,
                "promotion keeps two accumulator sets: BLOCK_N <= 128");
  static_assert(kKind == ScaleKind::ms || Cfg::kPromoteTiles == 0 || Cfg::kPromoteTiles == 1,
                "mx and ms_grad promote every K tile");
  static_assert(kKind == ScaleKind::nv || (Cfg::kABlockRows == 1 && Cfg::kBBlockRows == 1),
                "block rows apply to nv scales only");
  static_assert(Cfg::kABlockRows == 1 || Cfg::kABlockRows == 16, "A block rows: 1 or 16");
  static_assert(Cfg::kBBlockRows == 1 || Cfg::kBBlockRows == 16, "B block rows: 1 or 16");
  static_assert(kExpStages >= 2 && kPackedStages >= 2 && kPackedStages <= 16,
                "stages out of range");
  static_assert(Cfg::kClusterM == 1 && Cfg::kClusterN == 1,
                "TMA multicast clusters: not implemented");
  static_assert(Cfg::kRasterGroup >= 1, "raster group");
  static_assert(kTransformWGs == 1 || kTransformWGs == 2, "one or two transform warpgroups");
  // The CTA starts with kLaunchRegs per thread (65536 / 384, rounded down to 8); setmaxnreg.inc
  // waits until the registers released by setmaxnreg.dec cover it, so the split must fit in what
  // the CTA holds at launch, not in the whole register file (otherwise the consumers never start).
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;  // 168
  static constexpr bool kSetMaxNReg = Cfg::kTransformRegs != 0;
  static_assert(!kSetMaxNReg ||
                    (Cfg::kTransformRegs % 8 == 0 && Cfg::kConsumerRegs % 8 == 0 &&
                     Cfg::kTransformRegs <= kLaunchRegs && Cfg::kConsumerRegs >= kLaunchRegs &&
                     kTransformThreads * Cfg::kTransformRegs + 256 * Cfg::kConsumerRegs <=
                         kThreads * kLaunchRegs),
                "register split exceeds the registers the CTA is launched with");
  static_assert(kSmemBytes <= 227 * 1024,
                "shared memory exceeds 227 KB: fewer stages or a smaller tile");

  using MmaFp8 = WgmmaRS_e4m3<BLOCK_N>;
  using MmaF16 = WgmmaRS_f16<BLOCK_N>;
  using MmaBF16 = WgmmaRS_bf16<BLOCK_N>;
};

}  // namespace fp4jit::sm90
