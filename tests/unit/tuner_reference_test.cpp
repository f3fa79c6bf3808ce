// The tuner's host-side inputs and references: random sources independent of the thread count,
// and the GEMM reference (sampled rows of A, B in slices on several threads) equal to the product
// of the whole dequantized operands, for every recipe path and GEMM, with partial blocks.
#include <gtest/gtest.h>

#include <cmath>

#include "core/recipe.hpp"
#include "tuner/gemm_check.hpp"
#include "tuner/operand_buffers.hpp"
#include "tuner/parallel.hpp"

namespace fp4jit::tuner {
namespace {

TEST(TunerInputs, RandomSourceIsTheSameOnAnyThreadCount) {
  for (DType d : {DType::bf16, DType::f32, DType::f16}) {
    const std::vector<std::uint8_t> one = random_source(200, 33, d, 7, 1);
    EXPECT_EQ(random_source(200, 33, d, 7, 3), one) << name(d);
    EXPECT_EQ(random_source(200, 33, d, 7), one) << name(d);
    EXPECT_NE(random_source(200, 33, d, 8, 1), one) << name(d);
  }
}

TEST(TunerInputs, RandomSourceIsStandardNormalTimesTheRowScale) {
  const std::int64_t rows = 7, cols = 20000;
  const std::vector<std::uint8_t> v = random_source(rows, cols, DType::f32, 3);
  const auto* f = reinterpret_cast<const float*>(v.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double scale = std::exp2(static_cast<double>(r % 7) - 3.0);
    double sum = 0.0, sq = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double x = f[r * cols + c] / scale;
      ASSERT_TRUE(std::isfinite(x));
      sum += x;
      sq += x * x;
    }
    EXPECT_NEAR(sum / cols, 0.0, 0.05) << "row " << r;
    EXPECT_NEAR(sq / cols, 1.0, 0.05) << "row " << r;
  }
}

TEST(TunerInputs, ParallelForCoversEveryIndexOnceAndRethrows) {
  for (int threads : {1, 2, 5}) {
    std::vector<int> seen(1001, 0);
    parallel_for(
        1001, 10,
        [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) ++seen[static_cast<std::size_t>(i)];
        },
        threads);
    for (int s : seen) ASSERT_EQ(s, 1) << threads << " threads";
  }
  EXPECT_THROW(parallel_for(
                   100, 1,
                   [](std::int64_t b, std::int64_t) {
                     if (b > 0) throw std::runtime_error("chunk failed");
                   },
                   4),
               std::runtime_error);
}

// The product of the whole dequantized operands on the reference rows, one thread.
std::vector<double> whole_product(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                                  const QuantizedView& a, const QuantizedView& b,
                                  const std::vector<std::int64_t>& rows) {
  EngineOptions o;
  o.backend = BackendKind::reference;
  Engine ref(o);
  const GemmRoles roles = gemm_roles(op);
  const GemmLayouts l = gemm_layouts(recipe, op, shape);
  Matrix<float> da(l.a.rows, l.a.cols), db(l.b.rows, l.b.cols);
  const OperandShape sa = gemm_source_shape(roles.a, shape.m, shape.k);
  const OperandShape sb = gemm_source_shape(roles.b, shape.n, shape.k);
  ref.dequantize(recipe, roles.a, a, sa.rows, sa.cols,
                 TensorView{da.data.data(), DType::f32, da.rows, da.cols, 0});
  ref.dequantize(recipe, roles.b, b, sb.rows, sb.cols,
                 TensorView{db.data.data(), DType::f32, db.rows, db.cols, 0});
  std::vector<double> out;
  for (std::int64_t r : rows)
    for (std::int64_t j = 0; j < shape.n; ++j) {
      double acc = 0.0;
      for (std::int64_t t = 0; t < shape.k; ++t)
        acc += static_cast<double>(da(r, t)) * static_cast<double>(db(j, t));
      out.push_back(acc);
    }
  return out;
}

TEST(TunerReference, SampledRowsEqualTheWholeProductOnEveryPath) {
  EngineOptions o;
  o.backend = BackendKind::reference;
  Engine ref(o);
  // M over 32 (sampled rows), N and M not multiples of 16 (partial 16x16 blocks), N over two
  // 256-row slices of B (two threads or more).
  const GemmShape shapes[] = {{70, 600, 64}, {20, 40, 128}};
  for (const char* preset : {"nvfp4", "mxfp4", "msfp4"})
    for (GemmOp op : {GemmOp::fprop, GemmOp::dgrad, GemmOp::wgrad})
      for (const GemmShape& shape : shapes) {
        const Recipe recipe = parse_recipe(preset);
        const GemmRoles roles = gemm_roles(op);
        const GemmLayouts l = gemm_layouts(recipe, op, shape);
        const OperandShape sa = gemm_source_shape(roles.a, shape.m, shape.k);
        const OperandShape sb = gemm_source_shape(roles.b, shape.n, shape.k);
        std::vector<std::uint8_t> xa = random_source(sa.rows, sa.cols, DType::bf16, 11);
        std::vector<std::uint8_t> xb = random_source(sb.rows, sb.cols, DType::bf16, 12);
        OperandBuffers a(l.a, recipe[roles.a].occ), b(l.b, recipe[roles.b].occ);
        ref.quantize(recipe, roles.a, TensorView{xa.data(), DType::bf16, sa.rows, sa.cols, 0},
                     a.view(), {.seed = 1});
        ref.quantize(recipe, roles.b, TensorView{xb.data(), DType::bf16, sb.rows, sb.cols, 0},
                     b.view(), {.seed = 2});
        const GemmReference g(recipe, op, shape, a.view(), b.view());
        const std::string what =
            fmt::format("{} {} {}x{}x{}", preset, name(op), shape.m, shape.n, shape.k);
        ASSERT_EQ(g.rows().size(), static_cast<std::size_t>(std::min<std::int64_t>(shape.m, 32)))
            << what;
        // Bit for bit: the same sums in the same order.
        EXPECT_EQ(g.values(), whole_product(recipe, op, shape, a.view(), b.view(), g.rows()))
            << what;
      }
}

TEST(TunerReference, CheckSampledReadsPackedRows) {
  EngineOptions o;
  o.backend = BackendKind::reference;
  Engine ref(o);
  const Recipe recipe = parse_recipe("nvfp4");
  const GemmShape shape{64, 32, 64};
  const GemmLayouts l = gemm_layouts(recipe, GemmOp::fprop, shape);
  std::vector<std::uint8_t> xa = random_source(64, 64, DType::bf16, 1);
  std::vector<std::uint8_t> xb = random_source(32, 64, DType::bf16, 2);
  OperandBuffers a(l.a, false), b(l.b, false);
  ref.quantize(recipe, Role::x, TensorView{xa.data(), DType::bf16, 64, 64, 0}, a.view(), {});
  ref.quantize(recipe, Role::w, TensorView{xb.data(), DType::bf16, 32, 64, 0}, b.view(), {});
  const GemmReference g(recipe, GemmOp::fprop, shape, a.view(), b.view());
  std::vector<float> packed(g.values().begin(), g.values().end());
  EXPECT_EQ(g.check_sampled(packed.data(), 1e-5), std::nullopt);
  std::vector<float> full(static_cast<std::size_t>(shape.m * shape.n), 0.0f);
  for (std::size_t s = 0; s < g.rows().size(); ++s)
    std::copy_n(packed.begin() + static_cast<std::ptrdiff_t>(s) * shape.n, shape.n,
                full.begin() + g.rows()[s] * shape.n);
  EXPECT_EQ(g.check(full.data(), shape.n, 1e-5), std::nullopt);
  packed[5] += 100.0f;
  ASSERT_NE(g.check_sampled(packed.data(), 1e-5), std::nullopt);
  EXPECT_NE(g.check_sampled(packed.data(), 1e-5)->find("relative error"), std::string::npos);
}

}  // namespace
}  // namespace fp4jit::tuner
