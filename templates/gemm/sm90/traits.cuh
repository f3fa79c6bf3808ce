// Everything the sm90 GEMM derives from its config: tile geometry, tensor-core path, shared-memory
// layout, and the compile-time checks that reject a config that cannot work.
//
// Per K tile (both paths): every row holds 64 bytes of packed codes (FP8 path, BLOCK_K = 128) or
// 32 bytes (16-bit path, BLOCK_K = 64), 4 scale blocks, and expands to 128 bytes: one 128-byte
// swizzle atom row, consumed by 4 wgmma K steps of 32 bytes each.
#pragma once
#include "gemm/sm90/config.cuh"
#include "gemm/sm90/wgmma.cuh"

namespace fp4jit::sm90 {

constexpr int round_up(int x, int a) { return (x + a - 1) / a * a; }

template <class Cfg>
struct GemmTraits {
  static constexpr ScaleKind kKind = Cfg::kKind;
  static constexpr bool kFp8 = kKind != ScaleKind::nv;
  static constexpr bool kBF16 = kKind == ScaleKind::nv && Cfg::kScaleCode != ScaleCode::ue4m3;
  static constexpr bool kPromote = kKind == ScaleKind::mx || (kKind == ScaleKind::ms && Cfg::kPromoteTiles > 0);
  static constexpr int kPromoteTiles = kKind == ScaleKind::mx ? 1 : Cfg::kPromoteTiles;
  static constexpr int kAblate = Cfg::kAblate;

  static constexpr int BLOCK_M = Cfg::BLOCK_M, BLOCK_N = Cfg::BLOCK_N;
  static constexpr int BLOCK_K = kFp8 ? 128 : 64;  // elements per K tile
  static constexpr int kScaleBlock = kFp8 ? 32 : 16;
  static constexpr int kBlocksPerTile = BLOCK_K / kScaleBlock;  // 4
  static constexpr int kPackedRow = BLOCK_K / 2;                // bytes
  static constexpr int kSteps = 4;                              // wgmma K steps per tile
  static constexpr int kAccum = BLOCK_N / 2;                    // FP32 accumulators per thread

  static constexpr int kPackedStages = Cfg::kPackedStages, kExpStages = Cfg::kExpandedStages;
  static constexpr int kTransformWGs = Cfg::kTransformWGs;
  static constexpr int kTransformThreads = 128 * kTransformWGs;
  static constexpr int kThreads = kTransformThreads + 256;  // transform warpgroup(s) + 2 consumer warpgroups
  static constexpr int kConsumers = 256;

  // Shared memory, from a 1024-aligned base. An expanded stage holds B expanded (BLOCK_N rows of
  // 128 bytes) followed by a copy of the packed A tile (same swizzle), so that a packed slot is
  // free as soon as the transform warpgroup has processed it.
  static constexpr int kPackedABytes = round_up(BLOCK_M * kPackedRow, 1024);
  static constexpr int kExpBBytes = BLOCK_N * 128;
  static constexpr int kExpStageBytes = kExpBBytes + kPackedABytes;
  static constexpr int kPackedBBytes = round_up(BLOCK_N * kPackedRow, 1024);
  static constexpr int kPackedStageBytes = kPackedABytes + kPackedBBytes;
  static constexpr int kRowInfoBytes = 16;  // per A row and expanded stage
  static constexpr int kHeaderBytes = BLOCK_M * kRowInfoBytes + 16;
  static constexpr int kTableBytes = 512;  // mx: E4M3 tables (17 x 8 B); nv: scale decode (256 x 2 B)

  static constexpr int kExpOffset = 0;
  static constexpr int kPackedOffset = kExpOffset + kExpStages * kExpStageBytes;
  static constexpr int kHeaderOffset = kPackedOffset + kPackedStages * kPackedStageBytes;
  static constexpr int kTableOffset = kHeaderOffset + round_up(kExpStages * kHeaderBytes, 16);
  static constexpr int kBarrierOffset = kTableOffset + kTableBytes;
  static constexpr int kNumBarriers = 2 * kPackedStages + 2 * kExpStages;
  static constexpr int kScratchOffset = kBarrierOffset + kNumBarriers * 8;
  static constexpr int kScratchBytes = 2 * 8 * 4 * 4 + 16;  // transform reductions (2 parities x 8 warps) + split-K flag
  static constexpr int kSplitFlagWord = 2 * 8 * 4;
  static constexpr int kSmemBytes = kScratchOffset + kScratchBytes + 1024;  // + alignment slack
  static constexpr unsigned kTmaBytes = static_cast<unsigned>((BLOCK_M + BLOCK_N) * kPackedRow);

  // Barrier arrival counts: one arrive per warp.
  static constexpr unsigned kPackedEmptyArrivals = 4 * kTransformWGs;
  static constexpr unsigned kExpFullArrivals = 4 * kTransformWGs;
  static constexpr unsigned kExpEmptyArrivals = 8;

  static_assert(BLOCK_M == 128, "BLOCK_M is two consumer warpgroups of 64 rows");
  static_assert(BLOCK_N % 64 == 0 && BLOCK_N >= 64 && BLOCK_N <= 256, "BLOCK_N: 64, 128, 192 or 256");
  static_assert(!kPromote || BLOCK_N <= 128, "promotion keeps two accumulator sets: BLOCK_N <= 128");
  static_assert(kKind != ScaleKind::mx || Cfg::kPromoteTiles == 0 || Cfg::kPromoteTiles == 1,
                "mx promotes every K tile");
  static_assert(kKind == ScaleKind::nv || (Cfg::kABlockRows == 1 && Cfg::kBBlockRows == 1),
                "block rows apply to nv scales only");
  static_assert(Cfg::kABlockRows == 1 || Cfg::kABlockRows == 16, "A block rows: 1 or 16");
  static_assert(Cfg::kBBlockRows == 1 || Cfg::kBBlockRows == 16, "B block rows: 1 or 16");
  static_assert(kExpStages >= 2 && kPackedStages >= 2 && kPackedStages <= 16, "stages out of range");
  static_assert(Cfg::kClusterM == 1 && Cfg::kClusterN == 1, "TMA multicast clusters: not implemented");
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
                     kTransformThreads * Cfg::kTransformRegs + 256 * Cfg::kConsumerRegs <= kThreads * kLaunchRegs),
                "register split exceeds the registers the CTA is launched with");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory exceeds 227 KB: fewer stages or a smaller tile");

  using MmaFp8 = WgmmaRS_e4m3<BLOCK_N>;
  using MmaF16 = WgmmaRS_f16<BLOCK_N>;
  using MmaBF16 = WgmmaRS_bf16<BLOCK_N>;
};

}  // namespace fp4jit::sm90
