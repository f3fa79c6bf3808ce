// Properties of the reference quantizer over every preset and operand: the dequantized value lies
// within the format's half step of the input (one step for stochastic rounding), transposed and
// re-quantized copies are consistent, non-finite inputs follow the documented policy.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"
#include "reference/reference.hpp"

namespace fp4jit::reference {
namespace {

// Gaussian rows, each scaled by 2^u, u uniform in [-spread, spread] (rows of different magnitude),
// optionally with one 300x outlier per row.
Matrix<float> random_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed, bool outliers,
                            float spread = 4.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-spread, spread);
  Matrix<float> m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float row_scale = std::exp2(log_scale(gen));  // rows of very different magnitude
    for (std::int64_t c = 0; c < cols; ++c) m(r, c) = normal(gen) * row_scale;
    if (outliers) m(r, gen() % cols) *= 300.0f;
  }
  return m;
}

// Distance between neighbouring grid points of the element format around |v| (v scaled).
double grid_step(ElemFormat elem, double a) {
  switch (elem) {
    case ElemFormat::e2m1: return a < 2.0 ? 0.5 : (a < 4.0 ? 1.0 : 2.0);
    case ElemFormat::e4m3: return std::ldexp(1.0, std::max(a > 0 ? std::ilogb(a) : -6, -6) - 3);
    case ElemFormat::e5m2: return std::ldexp(1.0, std::max(a > 0 ? std::ilogb(a) : -14, -14) - 2);
  }
  return 0.0;
}

// Decode scale of element (r, c): value = decode(code) * scale.
double decode_scale(const Recipe& recipe, const QuantizedTensor& q, std::int64_t r, std::int64_t c) {
  const OperandSpec& s = recipe[q.role];
  const BlockIndex bi = block_of(s.block, r, c);
  const std::int64_t i = bi.row * q.layout.scale_cols + bi.col;
  double scale = 0.0;
  switch (s.scale) {
    case ScaleFormat::e8m0: scale = nx::e8m0_decode(q.scale_codes[i]); break;
    case ScaleFormat::ue4m3:
    case ScaleFormat::ue5m3: scale = nx::mf_decode(minifloat(s.scale, recipe.ue5m3), q.scale_codes[i]); break;
    case ScaleFormat::fp32: scale = q.scale_values[i]; break;
  }
  return q.layout.two_level ? scale / q.tensor_scale : scale;
}

// The operand as the quantizer saw it: (requant) -> OCC -> orient -> Hadamard, in float.
Matrix<float> operand_input(const Recipe& recipe, Role role, const Matrix<float>& x, const QuantizeOptions& opt) {
  const OperandSpec& s = recipe[role];
  Matrix<float> src = x;
  if (s.src == Source::requant) {
    const Matrix<double> d = dequantize_source(recipe, quantize(recipe, role_info(role).forward, x, opt), false);
    for (std::int64_t i = 0; i < d.size(); ++i) src.data[i] = static_cast<float>(d.data[i]);
  }
  if (s.occ) occ_clamp(src, recipe.occ_alpha);
  Matrix<float> op = role_info(role).transposed ? transpose(src) : src;
  apply_hadamard(s.had, op);
  return op;
}

struct Case {
  std::string recipe;
  Role role;
};
std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string n = info.param.recipe + "_" + std::string(name(info.param.role));
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& p : presets())
    for (Role role : kAllRoles) cases.push_back({std::string(p.name), role});
  for (Role role : kAllRoles) cases.push_back({"mxfp4:round=even", role});
  cases.push_back({"nvfp4:x.had=32,w.had=32,x.had.signs=random,w.had.signs=random", Role::x});
  cases.push_back({"ue5m3:ue5m3=61440", Role::dy});
  cases.push_back({"mxfp4:elem=e4m3", Role::x});  // MXFP8 E4M3
  return cases;
}

class QuantizeBound : public testing::TestWithParam<Case> {};

TEST_P(QuantizeBound, DequantizedWithinHalfStepOfItsBlock) {
  const Recipe recipe = parse_recipe(GetParam().recipe);
  const Role role = GetParam().role;
  const OperandSpec& s = recipe[role];
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    // 67 rows: ragged against 16- and 32-row blocks; 256 along K. A re-quantized operand also
    // needs its forward copy's K (the other dimension) to be a whole number of blocks.
    const bool transposed = role_info(role).transposed;
    const std::int64_t ragged = s.src == Source::requant ? 96 : 67;
    const Matrix<float> x =
        transposed ? random_matrix(256, ragged, seed, seed == 3) : random_matrix(ragged, 256, seed, seed == 3);
    const QuantizeOptions opt{.seed = 1000u + seed, .offset = 17};
    const QuantizedTensor q = quantize(recipe, role, x, opt);
    const Matrix<float> in = operand_input(recipe, role, x, opt);
    const Matrix<double> out = dequantize_operand(recipe, q);
    ASSERT_EQ(out.rows, in.rows);
    ASSERT_EQ(out.cols, in.cols);
    const double max_elem = elem_max(s.elem);
    for (std::int64_t r = 0; r < in.rows; ++r) {
      for (std::int64_t c = 0; c < in.cols; ++c) {
        const double scale = decode_scale(recipe, q, r, c);
        ASSERT_TRUE(std::isfinite(scale) && scale > 0.0) << "block scale at " << r << "," << c;
        // (A block scale can round to 0 when a block is ~2^17 below the tensor's amax: see
        // TwoLevelBlockScaleCanUnderflow. The data here stays within the scale format's range.)
        const double xv = in(r, c), v = std::fabs(xv) / scale, err = std::fabs(out(r, c) - xv);
        // Two-level and absmax scale elements by a rounded factor: allow 2^-20 relative on top.
        const double slack = 1e-6 * std::fabs(xv) + 1e-30;
        double bound;
        if (v > max_elem) {
          bound = std::fabs(xv) - max_elem * scale;  // saturated
        } else {
          const double step = grid_step(s.elem, v) * scale;
          bound = s.round == Round::stochastic ? step : 0.5 * step;
        }
        ASSERT_LE(err, bound + slack) << GetParam().recipe << " " << name(role) << " at (" << r << "," << c
                                      << ") x=" << xv << " deq=" << out(r, c) << " scale=" << scale;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPresetAndOperand, QuantizeBound, testing::ValuesIn(all_cases()), case_name);

TEST(ReferenceQuantize, StochasticRoundingIsUnbiasedAcrossSeeds) {
  const Recipe recipe = parse_recipe("nvfp4");
  const Matrix<float> x = random_matrix(4, 64, 7, false);
  Matrix<double> mean(x.rows, x.cols, 0.0);
  constexpr int kSeeds = 2000;
  double max_scale = 0.0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const QuantizedTensor q = quantize(recipe, Role::dy, x, {.seed = static_cast<std::uint64_t>(seed)});
    const Matrix<double> d = dequantize_operand(recipe, q);
    for (std::int64_t i = 0; i < d.size(); ++i) mean.data[i] += d.data[i] / kSeeds;
    for (std::int64_t r = 0; r < x.rows; ++r) max_scale = std::max(max_scale, decode_scale(recipe, q, r, 0));
  }
  // Each draw is within one grid step (<= 2 * scale) of x: sigma of the mean <= step / sqrt(n).
  int far = 0;
  for (std::int64_t r = 0; r < x.rows; ++r) {
    for (std::int64_t c = 0; c < x.cols; ++c) {
      const QuantizedTensor q0 = quantize(recipe, Role::dy, x, {.seed = 0});
      const double scale = decode_scale(recipe, q0, r, c);
      // The E4M3 block scale rounds to nearest, so a block's largest element can land above 6
      // and saturate (a bias of the recipe, not of the rounding): only unsaturated ones count.
      if (std::fabs(x(r, c)) > 6.0 * scale) continue;
      const double step = 2.0 * scale;
      const double sigma = 0.5 * step / std::sqrt(double(kSeeds));
      const double dev = std::fabs(mean(r, c) - x(r, c));
      EXPECT_LE(dev, 6 * sigma + 1e-7 * std::fabs(x(r, c))) << "element " << r << "," << c;
      if (dev > 3 * sigma) ++far;
    }
  }
  EXPECT_LE(far, 3);  // 3-sigma excursions are rare for an unbiased estimate
  // Round to nearest would be biased: the same element always lands on one grid point.
  const QuantizedTensor a = quantize(recipe, Role::dy, x, {.seed = 1});
  const QuantizedTensor b = quantize(recipe, Role::dy, x, {.seed = 2});
  EXPECT_NE(a.codes, b.codes);
  EXPECT_EQ(a.codes, quantize(recipe, Role::dy, x, {.seed = 1}).codes);  // reproducible
  EXPECT_NE(a.codes, quantize(recipe, Role::dy, x, {.seed = 1, .offset = 1}).codes);
}

std::uint32_t code_at(const QuantizedTensor& q, std::int64_t r, std::int64_t c) {
  const std::uint8_t byte = q.codes[r * q.layout.row_bytes + c / 2];
  return c % 2 == 0 ? byte & 15u : byte >> 4;
}

TEST(ReferenceQuantize, TwoDimensionalWeightBlocksGiveIdenticalTransposedCopies) {
  const Recipe recipe = parse_recipe("nvfp4");
  const Matrix<float> w = random_matrix(48, 64, 11, true);
  const QuantizedTensor q = quantize(recipe, Role::w, w), qt = quantize(recipe, Role::wt, w);
  ASSERT_EQ(qt.layout.rows, 64);
  EXPECT_EQ(q.tensor_scale, qt.tensor_scale);
  for (std::int64_t r = 0; r < 48; ++r)
    for (std::int64_t c = 0; c < 64; ++c) ASSERT_EQ(code_at(q, r, c), code_at(qt, c, r)) << r << "," << c;
  for (std::int64_t br = 0; br < 3; ++br)
    for (std::int64_t bc = 0; bc < 4; ++bc) EXPECT_EQ(q.scale_codes[br * 4 + bc], qt.scale_codes[bc * 3 + br]);
}

TEST(ReferenceQuantize, MsWeightCopiesShareValues) {
  // msfp4 quantizes W per output channel; W^T keeps the same scale per column, so dgrad
  // multiplies exactly the forward values.
  const Recipe recipe = parse_recipe("msfp4");
  const Matrix<float> w = random_matrix(40, 96, 5, true);
  const Matrix<double> a = dequantize_source(recipe, quantize(recipe, Role::w, w), false);
  const Matrix<double> b = dequantize_source(recipe, quantize(recipe, Role::wt, w), false);
  EXPECT_EQ(a.data, b.data);
}

TEST(ReferenceQuantize, TetraJetDoubleQuantizationStartsFromTheForwardCopy) {
  const Recipe recipe = parse_recipe("tetrajet");
  Recipe direct = parse_recipe("tetrajet:wt.src=direct");
  const Matrix<float> w = random_matrix(64, 96, 9, false);
  const Matrix<double> fwd = dequantize_source(recipe, quantize(recipe, Role::w, w), false);
  Matrix<float> fwd_f(w.rows, w.cols);
  for (std::int64_t i = 0; i < fwd.size(); ++i) fwd_f.data[i] = static_cast<float>(fwd.data[i]);
  const QuantizedTensor requant = quantize(recipe, Role::wt, w, {.seed = 4});
  EXPECT_EQ(requant.codes, quantize(direct, Role::wt, fwd_f, {.seed = 4}).codes);
  EXPECT_EQ(requant.scale_codes, quantize(direct, Role::wt, fwd_f, {.seed = 4}).scale_codes);
  EXPECT_NE(requant.codes, quantize(direct, Role::wt, w, {.seed = 4}).codes);
}

TEST(ReferenceQuantize, OccClampsAboutTwoPercentAndKeepsTheResidual) {
  const Recipe recipe = parse_recipe("msfp4");
  const Matrix<float> x = random_matrix(32, 4096, 3, false);
  const QuantizedTensor q = quantize(recipe, Role::x, x);
  const double fraction = double(q.residual_index.size()) / double(x.size());
  EXPECT_GT(fraction, 0.015);
  EXPECT_LT(fraction, 0.025);
  EXPECT_TRUE(std::is_sorted(q.residual_index.begin(), q.residual_index.end()));
  // Clamped value + residual reproduces the input to one rounding.
  Matrix<float> clamped = x;
  const Residual res = occ_clamp(clamped, recipe.occ_alpha);
  ASSERT_EQ(res.index, q.residual_index);
  for (std::size_t i = 0; i < res.index.size(); ++i) {
    const float orig = x.data[res.index[i]];
    EXPECT_NEAR(clamped.data[res.index[i]] + res.value[i], orig, std::fabs(orig) * 1e-6);
  }
  // The transposed copy carries the same residual at transposed positions.
  const QuantizedTensor qt = quantize(recipe, Role::xt, x);
  ASSERT_EQ(qt.residual_index.size(), q.residual_index.size());
  std::vector<std::pair<std::int64_t, float>> expect;
  for (std::size_t i = 0; i < res.index.size(); ++i)
    expect.emplace_back((res.index[i] % x.cols) * x.rows + res.index[i] / x.cols, res.value[i]);
  std::sort(expect.begin(), expect.end());
  for (std::size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ(qt.residual_index[i], expect[i].first);
    EXPECT_EQ(qt.residual_value[i], expect[i].second);
  }
  // A smaller alpha clamps more.
  const QuantizedTensor q97 = quantize(parse_recipe("msfp4:occ=0.97"), Role::x, x);
  EXPECT_GT(q97.residual_index.size(), q.residual_index.size() * 2);
}

TEST(ReferenceQuantize, NonFiniteBlocksFollowThePolicy) {
  Matrix<float> x(2, 64, 1.0f);
  x(0, 3) = NAN;
  x(1, 40) = INFINITY;
  {  // mxfp4: the block holding NaN or Inf gets a NaN scale and zero codes; others are untouched
    const Recipe r = parse_recipe("mxfp4");
    const QuantizedTensor q = quantize(r, Role::x, x);
    EXPECT_EQ(q.scale_codes[0], 0xFF);
    EXPECT_EQ(q.scale_codes[1], 127 - 2);  // amax 1: e = 0 - 2
    EXPECT_EQ(q.scale_codes[3], 0xFF);
    for (int c = 0; c < 32; ++c) EXPECT_EQ(code_at(q, 0, c), 0u);
    EXPECT_EQ(code_at(q, 0, 40), 2u + 4u);  // 1.0 / 2^-2 = 4 -> code 6
  }
  {  // nvfp4: NaN scale code 0x7F for those blocks; the tensor scale ignores them
    const Recipe r = parse_recipe("nvfp4");
    const QuantizedTensor q = quantize(r, Role::x, x);
    EXPECT_EQ(q.amax, 1.0f);
    EXPECT_EQ(q.tensor_scale, 2688.0f);
    EXPECT_EQ(q.scale_codes[0], 0x7F);
    EXPECT_EQ(q.scale_codes[4 + 2], 0x7F);
    EXPECT_EQ(q.scale_codes[1], 0x7E);  // 1 * 2688 / 6 = 448
  }
  {  // msfp4: a non-finite row amax gives sf = 1; Inf saturates to 6, NaN encodes as +0
    const Recipe r = parse_recipe("msfp4:occ=off");
    const QuantizedTensor q = quantize(r, Role::x, x);
    EXPECT_EQ(q.scale_values[0], 1.0f);
    EXPECT_EQ(code_at(q, 0, 3), 0u);
    EXPECT_EQ(code_at(q, 1, 40), 7u);
    EXPECT_EQ(code_at(q, 0, 4), 2u);  // 1.0 * 1 = 1.0
  }
}

TEST(ReferenceQuantize, TwoLevelScalesFollowTransformerEngine) {
  const Recipe r = parse_recipe("nvfp4");
  Matrix<float> x(1, 32, 0.0f);
  for (int c = 0; c < 16; ++c) x(0, c) = 0.25f * float(c);  // block amax 3.75
  x(0, 16) = 10.0f;                                          // global amax 10
  const QuantizedTensor q = quantize(r, Role::x, x);
  const float s_enc = 2688.0f / 10.0f;
  EXPECT_EQ(q.tensor_scale, s_enc);
  const float s_dec = 3.75f * (s_enc * (1.0f / 6.0f));
  EXPECT_EQ(q.scale_codes[0], nx::mf_encode(nx::kE4M3, s_dec, Round::even, true));
  EXPECT_EQ(q.scale_codes[1], 0x7E);  // the block holding the global amax reaches 448
}

TEST(ReferenceQuantize, TwoLevelBlockScaleCanUnderflow) {
  // A block 2^20 below the tensor's amax: its UE4M3 scale rounds to 0, its codes saturate (the
  // encode factor is capped at FLT_MAX) and it dequantizes to 0, as in Transformer Engine.
  const Recipe r = parse_recipe("nvfp4");
  Matrix<float> x(1, 32, 1.0f);
  for (int c = 16; c < 32; ++c) x(0, c) = 1.0f / 1048576.0f;
  const QuantizedTensor q = quantize(r, Role::x, x);
  EXPECT_EQ(q.scale_codes[1], 0);
  EXPECT_EQ(code_at(q, 0, 20), 7u);
  EXPECT_EQ(dequantize_operand(r, q)(0, 20), 0.0);
}

TEST(ReferenceGemm, HadamardOnBothOperandsKeepsTheProduct) {
  const Recipe r = parse_recipe("nvfp4");
  const Matrix<float> dy = random_matrix(128, 24, 21, false, 0.0f);  // [tokens, out]
  const Matrix<float> x = random_matrix(128, 40, 22, false, 0.0f);   // [tokens, in]
  const Matrix<double> dw = gemm(r, quantize(r, Role::dyt, dy, {.seed = 5}), quantize(r, Role::xt, x));
  ASSERT_EQ(dw.rows, 24);
  ASSERT_EQ(dw.cols, 40);
  // Compare with the exact dY^T X: FP4 error only (a few percent), not a wrong transform.
  double num = 0.0, den = 0.0;
  for (std::int64_t o = 0; o < 24; ++o) {
    for (std::int64_t i = 0; i < 40; ++i) {
      double exact = 0.0;
      for (std::int64_t t = 0; t < 128; ++t) exact += double(dy(t, o)) * double(x(t, i));
      num += (dw(o, i) - exact) * (dw(o, i) - exact);
      den += exact * exact;
    }
  }
  EXPECT_LT(std::sqrt(num / den), 0.25);
  // Operands quantized under another recipe (here: without the transform) are refused.
  const Recipe plain = parse_recipe("nvfp4:had=none");
  EXPECT_THROW(gemm(r, quantize(r, Role::dyt, dy), quantize(plain, Role::xt, x)), Error);
  // Without the transform on both sides the product is a different (wrong) one.
  double wrong = 0.0;
  const Matrix<double> mixed = gemm(plain, quantize(plain, Role::dyt, dy), quantize(plain, Role::xt, x));
  for (std::int64_t i = 0; i < mixed.size(); ++i) wrong += std::fabs(mixed.data[i] - dw.data[i]);
  EXPECT_GT(wrong, 0.0);
}

TEST(ReferenceGemm, OccCompensationRestoresTheClampedPart) {
  const Recipe r = parse_recipe("msfp4");
  const Matrix<float> x = random_matrix(16, 256, 31, true);
  const Matrix<float> w = random_matrix(8, 256, 32, false);
  const QuantizedTensor qx = quantize(r, Role::x, x), qw = quantize(r, Role::w, w);
  const Matrix<double> plain = gemm(r, qx, qw);
  const Matrix<double> comp = gemm(r, qx, qw, {.residual_of = &qx, .residual_weight = &w});
  double diff = 0.0;
  for (std::int64_t i = 0; i < plain.size(); ++i) diff += std::fabs(comp.data[i] - plain.data[i]);
  EXPECT_GT(diff, 0.0);
  // Row 0 by hand: the compensation equals sum over its residual entries of r * w.
  double expect = comp(0, 0) - plain(0, 0), got = 0.0;
  for (std::size_t t = 0; t < qx.residual_index.size() && qx.residual_index[t] < 256; ++t)
    got += double(qx.residual_value[t]) * w(0, qx.residual_index[t]);
  EXPECT_NEAR(got, expect, 1e-9 * (1 + std::fabs(expect)));
}

TEST(ReferenceDge, FactorUsesTheWeightScale) {
  const Recipe r = parse_recipe("msfp4");
  Matrix<float> w(1, 4);
  w(0, 0) = 0.75f;  // amax 0.75 -> sf = 2^floor(log2(8)) = 8 -> scaled 6: end of interval: 1/k
  w(0, 1) = 0.15625f;  // 1.25 scaled: midpoint of [1, 1.5): clipped at 3
  w(0, 2) = 0.0625f;   // 0.5 scaled: interval start: 1/k
  w(0, 3) = -0.15625f;
  const Matrix<float> f = dge_factor(r, w);
  EXPECT_FLOAT_EQ(f(0, 0), 0.2f);
  EXPECT_FLOAT_EQ(f(0, 1), 3.0f);
  EXPECT_FLOAT_EQ(f(0, 2), 0.2f);
  EXPECT_FLOAT_EQ(f(0, 3), 3.0f);
  EXPECT_THROW(dge_factor(parse_recipe("msfp4:dge=off"), w), Error);
}

}  // namespace
}  // namespace fp4jit::reference
