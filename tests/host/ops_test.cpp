// Host dequantize and DGE vs the reference (bit for bit), and the host GEMM vs the reference's
// double-precision GEMM (relative Frobenius error below 1e-5), for every preset.
#include <cmath>

#include "runtime/host_tensor.hpp"
#include "tests/host/host_test_util.hpp"

namespace fp4jit::host::test {
namespace {

// Equal bits, or both NaN.
bool same(float a, float b) {
  return fbits(a) == fbits(b) || (std::isnan(a) && std::isnan(b));
}

struct View16 {
  std::vector<std::uint8_t> bytes;
  TensorView view;
};
View16 output(DType d, std::int64_t rows, std::int64_t cols) {
  View16 v{std::vector<std::uint8_t>(static_cast<std::size_t>(rows * cols * dtype_size(d)), 0xA5),
           {}};
  v.view = TensorView{v.bytes.data(), d, rows, cols, 0};
  return v;
}

void expect_same(View16& ref, View16& got, const std::string& what) {
  HostTensor a{ref.view.dtype, ref.view.rows, ref.view.cols, ref.bytes};
  HostTensor b{got.view.dtype, got.view.rows, got.view.cols, got.bytes};
  const Matrix<float> x = values_of(a), y = values_of(b);
  for (std::int64_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(same(x.data[static_cast<std::size_t>(i)], y.data[static_cast<std::size_t>(i)]))
        << what << " element " << i << ": ref " << x.data[static_cast<std::size_t>(i)] << " host "
        << y.data[static_cast<std::size_t>(i)];
}

class HostOps : public testing::TestWithParam<std::string> {};

TEST_P(HostOps, DequantizeBitIdentical) {
  const Recipe recipe = parse_recipe(GetParam());
  for (Role role : kAllRoles) {
    const auto [sr, sc] = source_shape(role, recipe[role].src == Source::requant ? 96 : 67, 128);
    for (const Matrix<float>& x : {random_matrix(sr, sc, 3), adversarial_matrix(sr, sc, 4)}) {
      QuantizedTensor q = reference::quantize(recipe, role, x, {.seed = 9});
      Buffers in(q.layout);
      store_quantized(q, in.view());
      for (DType d : {DType::f32, DType::bf16, DType::f16}) {
        View16 ref = output(d, q.layout.rows, q.layout.cols),
               got = output(d, q.layout.rows, q.layout.cols);
        from_matrix(reference::dequantize_operand(recipe, q), ref.view);
        backend().dequantize(recipe, role, in.view(), sr, sc, got.view, nullptr);
        expect_same(ref, got,
                    GetParam() + " " + std::string(name(role)) + " " + std::string(name(d)));
      }
    }
  }
}

TEST_P(HostOps, GemmWithin1e5OfReference) {
  const Recipe recipe = parse_recipe(GetParam());
  struct G {
    Role a, b;
    std::int64_t m, n, k;
  };
  // ragged m and n where the recipes allow it (K and re-quantized copies need whole blocks)
  for (const G& g : {G{Role::x, Role::w, 67, 72, 96}, G{Role::dy, Role::wt, 67, 96, 128},
                     G{Role::dyt, Role::xt, 72, 96, 96}}) {
    const auto [ar, ac] = source_shape(g.a, g.m, g.k);
    const auto [br, bc] = source_shape(g.b, g.n, g.k);
    const Matrix<float> xa = random_matrix(ar, ac, 21), xb = random_matrix(br, bc, 22);
    const QuantizedTensor qa = reference::quantize(recipe, g.a, xa, {.seed = 5});
    const QuantizedTensor qb = reference::quantize(recipe, g.b, xb, {.seed = 6});
    Buffers ba(qa.layout), bb(qb.layout);
    store_quantized(qa, ba.view());
    store_quantized(qb, bb.view());
    const bool occ = recipe[g.a].occ && g.a == Role::x;
    reference::GemmOptions ro;
    ro.residual_of = occ ? &qa : nullptr;
    ro.residual_weight = occ ? &xb : nullptr;
    const Matrix<double> ref = reference::gemm(recipe, qa, qb, ro);
    std::vector<float> c(static_cast<std::size_t>(g.m * (g.n + 3)), NAN);
    const QuantizedView va = ba.view();
    HostTensor wt = make_tensor(xb, DType::f32);
    const GemmResidual residual{&va, wt.view()};
    backend().gemm(recipe, {g.a, qa.layout, va}, {g.b, qb.layout, bb.view()}, c.data(), g.n + 3,
                   occ ? &residual : nullptr);
    double err = 0.0, norm = 0.0;
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t j = 0; j < g.n; ++j) {
        const double d = c[static_cast<std::size_t>(i * (g.n + 3) + j)] - ref(i, j);
        err += d * d;
        norm += ref(i, j) * ref(i, j);
      }
    EXPECT_LT(std::sqrt(err / norm), 1e-5) << GetParam() << " " << name(g.a) << " x " << name(g.b);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPreset, HostOps,
                         testing::Values("mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3",
                                         "mxfp4:elem=e4m3"),
                         [](const testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(HostDge, BitIdenticalToReference) {
  for (const char* text :
       {"msfp4", "msfp4:dge.k=3,dge.clip=2", "msfp4:w.block=tensor", "msfp4:dge.k=1"}) {
    const Recipe recipe = parse_recipe(text);
    for (DType in : {DType::f32, DType::bf16}) {
      for (const Matrix<float>& x : {random_matrix(67, 96, 8), adversarial_matrix(67, 96, 9)}) {
        HostTensor t = make_tensor(x, in);
        const Matrix<float> ref_values = reference::dge_factor(recipe, values_of(t));
        for (DType out : {DType::f32, DType::bf16}) {
          View16 ref = output(out, x.rows, x.cols), got = output(out, x.rows, x.cols);
          from_matrix(ref_values, ref.view);
          backend().dge(recipe, t.view(), got.view, nullptr);
          expect_same(ref, got,
                      std::string(text) + " dge " + std::string(name(in)) + " -> " +
                          std::string(name(out)));
        }
      }
    }
  }
}

TEST(HostDge, PublishedTestVector) {
  // linspace(-6, 6, 20) in BF16 -> [0.2002, 0.4375, 0.6055, 0.2168, 1.8359, ...] (RECIPES.md)
  const Recipe recipe = parse_recipe("msfp4");
  Matrix<float> w(1, 20);
  for (int i = 0; i < 20; ++i)
    w(0, i) = nx::bf16_to_float(nx::float_to_bf16(-6.0f + 12.0f * static_cast<float>(i) / 19.0f));
  HostTensor t = make_tensor(w, DType::f32);
  View16 got = output(DType::bf16, 1, 20);
  backend().dge(recipe, t.view(), got.view, nullptr);
  HostTensor g{DType::bf16, 1, 20, got.bytes};
  const Matrix<float> f = values_of(g);
  const float expected[] = {0.2002f, 0.4375f, 0.6055f, 0.2168f, 1.8359f};
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(f(0, i), expected[i], 2e-3) << i;
    EXPECT_EQ(fbits(f(0, i)), fbits(f(0, 19 - i))) << i;
  }
}

}  // namespace
}  // namespace fp4jit::host::test
