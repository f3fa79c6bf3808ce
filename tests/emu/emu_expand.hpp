// Helpers of the emulator's cases for the staged sm90 GEMM's expansion pass
// (templates/gemm/sm90/staged_expand.cuh): expansion configs, an operand with poisoned outputs,
// single and pair launches on the emulator, random operands, and the exact check of mx values.
#pragma once
#include "tests/emu/cuda_shim.hpp"
// clang-format off: the shim goes first
#include "gemm/sm90/staged_expand.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"
#include "tests/emu/emulator.hpp"

namespace fp4jit::test::expand {

namespace g = fp4jit::sm90;
using g::ScaleCode;
using g::ScaleKind;

template <ScaleKind kK, bool kB, int kP, ScaleCode kS = ScaleCode::ue4m3, int kRows = 1,
          bool kFrag = false, bool kSplit = false>
struct Cfg : g::ExpandConfigBase {
  static constexpr ScaleKind kKind = kK;
  static constexpr bool kOperandB = kB;
  static constexpr ScaleCode kScaleCode = kS;
  static constexpr int kBlockRows = kRows;
  static constexpr int kPeriod = kP;
  static constexpr bool kFragOrder = kFrag;
  static constexpr bool kSplitFactors = kSplit;
};
// The staged kernel's mx expansions (codegen: A's and B's factors applied apart).
using MxSplitA = Cfg<ScaleKind::mx, false, 4, ScaleCode::ue4m3, 1, false, true>;
using MxSplitB = Cfg<ScaleKind::mx, true, 4, ScaleCode::ue4m3, 1, false, true>;

constexpr std::uint8_t kPoison = 0x7F;  // E4M3 NaN; FP16 / BF16 words 0x7F7F are NaN too
constexpr int kGuard = 4096;
// The launch's window mark (GemmParams::fallback_mark) the expansion writes into its flag.
constexpr unsigned kMark = 0x5EED1234u;

// One operand [rows, K] and the expansion's outputs.
struct Operand {
  int rows = 0, k = 0;
  std::vector<std::uint8_t> codes;  // packed E2M1 (ms_grad A: E5M2 bytes)
  std::vector<std::uint8_t> scale;  // mx: E8M0 per 32; nv: UE4M3 / UE5M3 per 16
  std::vector<float> col_scale;     // ms_grad B: per K column
  std::vector<std::uint8_t> out;
  std::vector<float> factor;
  int factor_ld = 0;
  unsigned flag = 0;

  std::uint32_t code(int r, int j) const {  // E2M1 code of element (r, j)
    const std::uint8_t b = codes[static_cast<std::size_t>(r) * (k / 2) + j / 2];
    return (j % 2 == 0 ? b : b >> 4) & 15u;
  }
};

// Poisons op's outputs and returns the parameters of its expansion with config C, and the CTAs.
template <class C>
std::pair<gemm::ExpandParams, unsigned> prepare(Operand& op) {
  using T = g::ExpandTraits<C>;
  const int elem = T::kFp8 ? 1 : 2;
  const long long out_ld = static_cast<long long>(op.k) * elem;
  op.out.assign(static_cast<std::size_t>(op.rows * out_ld + kGuard), kPoison);
  op.factor_ld = g::staged_factor_ld(op.rows);
  const int block_k = 32 * T::kTileChunks;
  const int segments = g::staged_k_units((op.k + block_k - 1) / block_k, C::kPeriod);
  op.factor.assign(static_cast<std::size_t>(segments) * op.factor_ld, -1.0f);
  op.flag = 0;
  gemm::ExpandParams p{};
  p.codes = op.codes.data();
  p.code_ld = C::kKind == ScaleKind::ms_grad && !C::kOperandB ? op.k : op.k / 2;
  p.rows = op.rows;
  p.K = op.k;
  p.scale = op.scale.empty() ? nullptr : op.scale.data();
  p.scale_ld = C::kKind == ScaleKind::mx ? op.k / 32 : op.k / 16;
  p.col_scale = op.col_scale.empty() ? nullptr : op.col_scale.data();
  p.out = op.out.data();
  p.out_ld = out_ld;
  p.factor = op.factor.data();
  p.factor_ld = op.factor_ld;
  p.flag = &op.flag;
  p.flag_mark = kMark;
  return {p, static_cast<unsigned>(g::expand_grid_ctas(C::kKind, C::kOperandB, C::kSplitFactors,
                                                       op.rows, op.k, C::kPeriod))};
}

inline void check_guard(const Operand& op) {
  for (int i = 0; i < kGuard; ++i)
    ASSERT_EQ(op.out[op.out.size() - kGuard + i], kPoison)
        << "written past the operand, byte " << i;
}

template <class C>
void expand(Operand& op) {
  auto [p, ctas] = prepare<C>(op);
  emu::launch(
      +[](const void* a) { g::expand_kernel<C>(*static_cast<const gemm::ExpandParams*>(a)); }, ctas,
      256, &p);
  check_guard(op);
}

// Both operands in one launch (expand_pair_kernel), one flag for both as the GEMM launch gives:
// a's flag field holds it.
template <class CA, class CB>
struct Pair {  // expand_pair_kernel's config
  using A = CA;
  using B = CB;
};

template <class CA, class CB>
void expand_pair(Operand& a, Operand& b) {
  struct Args {
    gemm::ExpandParams a, b;
    int a_ctas;
  } args{};
  auto [pa, a_ctas] = prepare<CA>(a);
  auto [pb, b_ctas] = prepare<CB>(b);
  pb.flag = pa.flag;
  args = {pa, pb, static_cast<int>(a_ctas)};
  emu::launch(
      +[](const void* v) {
        const auto& x = *static_cast<const Args*>(v);
        g::expand_pair_kernel<Pair<CA, CB>>(x.a, x.b, x.a_ctas);
      },
      a_ctas + b_ctas, 256, &args);
  check_guard(a);
  check_guard(b);
}

inline float e4m3(std::uint8_t b) {
  return nx::mf_decode(nx::kE4M3, b);
}
inline float f16(const std::vector<std::uint8_t>& out, std::size_t i) {
  return g::f16_bits_to_float(out[2 * i] | (out[2 * i + 1] << 8));
}
inline float bf16(const std::vector<std::uint8_t>& out, std::size_t i) {
  return nx::bits_float(static_cast<std::uint32_t>(out[2 * i] | (out[2 * i + 1] << 8)) << 16);
}

inline Operand random_codes(int rows, int k, std::mt19937& rng) {
  Operand op;
  op.rows = rows;
  op.k = k;
  op.codes.resize(static_cast<std::size_t>(rows) * k / 2);
  for (auto& b : op.codes) b = static_cast<std::uint8_t>(rng());
  return op;
}

// mx: E8M0 block scales spread over at most `spread` binades below each row's top (the window is
// 15 per segment), some all-zero blocks with wild scales.
inline Operand mx_operand(int rows, int k, int spread, std::mt19937& rng) {
  Operand op = random_codes(rows, k, rng);
  op.scale.resize(static_cast<std::size_t>(rows) * (k / 32));
  for (int r = 0; r < rows; ++r) {
    const int top = 110 + static_cast<int>(rng() % 30);
    for (int b = 0; b < k / 32; ++b) {
      auto& s = op.scale[static_cast<std::size_t>(r) * (k / 32) + b];
      s = static_cast<std::uint8_t>(top - static_cast<int>(rng() % (spread + 1)));
      if (rng() % 9 == 0) {  // all-zero codes: any scale, no part in the window
        for (int j = 0; j < 16; ++j)
          op.codes[static_cast<std::size_t>(r) * (k / 2) + 16 * b + j] = 0;
        s = static_cast<std::uint8_t>(rng() % 250);
      }
    }
  }
  return op;
}

// kP: the period (factor per segment of kP K tiles); 0: one factor per row (whole-row B).
// kFrag: the swapped kernel's order inside each 32-element chunk (ExpandConfigBase::kFragOrder:
// word q holds elements 8q..8q+3 for q < 4, 8(q-4)+4..8(q-4)+7 for q >= 4).
template <int kP, bool kFrag = false>
void check_mx(const Operand& op) {
  const int seg_k = kP > 0 ? 128 * kP : op.k;
  for (int r = 0; r < op.rows; ++r)
    for (int j = 0; j < op.k; ++j) {
      const int e = op.scale[static_cast<std::size_t>(r) * (op.k / 32) + j / 32];
      const float f = op.factor[static_cast<std::size_t>(j / seg_k) * op.factor_ld + r];
      const double want = nx::e2m1_decode(op.code(r, j)) * std::ldexp(1.0, e - 127);
      const int l = j % 32;
      const int pos =
          kFrag ? j - l + (l % 8 < 4 ? 4 * (l / 8) + l % 8 : 16 + 4 * (l / 8) + l % 8 - 4) : j;
      const double got =
          static_cast<double>(e4m3(op.out[static_cast<std::size_t>(r) * op.k + pos])) * f;
      ASSERT_EQ(got, want) << "row " << r << " col " << j << " scale " << e;
    }
}

}  // namespace fp4jit::test::expand
