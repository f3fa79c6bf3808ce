// Engine::gemm argument checks (every bad argument is an Error(invalid_argument) that names it),
// the GEMM shapes of a layer, and the reference backend's epilogue against reference::gemm.
#include <gtest/gtest.h>

#include <cmath>

#include "fp4jit/engine.hpp"
#include "reference/reference.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit {
namespace {

Engine& ref_engine() {
  static Engine e([] {
    EngineOptions o;
    o.backend = BackendKind::reference;
    return o;
  }());
  return e;
}

Matrix<float> ramp(std::int64_t rows, std::int64_t cols, float scale) {
  Matrix<float> m(rows, cols);
  for (std::int64_t i = 0; i < m.size(); ++i)
    m.data[static_cast<std::size_t>(i)] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f);
  return m;
}

// A quantized operand held in host vectors, with a view.
struct Held {
  QuantizedTensor q;
  std::vector<float> scale_values;
  std::int64_t count = 0;
  QuantizedView view() {
    QuantizedView v;
    v.codes = q.codes.data();
    v.scales = q.layout.scale_is_code ? static_cast<void*>(q.scale_codes.data())
                                      : static_cast<void*>(q.scale_values.data());
    v.tensor_scale = &q.tensor_scale;
    count = static_cast<std::int64_t>(q.residual_index.size());
    v.residual_index = q.residual_index.data();
    v.residual_value = q.residual_value.data();
    v.residual_count = &count;
    v.residual_capacity = count;
    return v;
  }
};

Held quantized(const Recipe& r, Role role, std::int64_t rows, std::int64_t k, float scale) {
  const OperandShape src = gemm_source_shape(role, rows, k);
  return Held{reference::quantize(r, role, ramp(src.rows, src.cols, scale), {.seed = 7}), {}, 0};
}

// Runs f and expects Error(kind) whose message contains `needle`.
template <class F>
void expect_error(F f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

struct Fixture {
  Recipe r;
  GemmShape s{8, 16, 64};
  Held a, b;
  std::vector<float> out;
  TensorView out_view;
  explicit Fixture(const char* recipe)
      : r(parse_recipe(recipe)),
        a(quantized(r, Role::x, 8, 64, 2.0f)),
        b(quantized(r, Role::w, 16, 64, 0.5f)),
        out(8 * 16, NAN),
        out_view{out.data(), DType::f32, 8, 16, 0} {}
  void run(const GemmEpilogue& e = {}) {
    ref_engine().gemm(r, GemmOp::fprop, a.view(), b.view(), s, out_view, e);
  }
};

TEST(EngineGemmErrors, EveryBadArgumentIsNamed) {
  Fixture f("nvfp4");
  f.run();  // the fixture itself is valid
  const auto bad = [&](const GemmShape& s, const QuantizedView& a, const QuantizedView& b,
                       const TensorView& out, const GemmEpilogue& e) {
    ref_engine().gemm(f.r, GemmOp::fprop, a, b, s, out, e);
  };
  QuantizedView no_codes = f.a.view();
  no_codes.codes = nullptr;
  expect_error([&] { bad(f.s, no_codes, f.b.view(), f.out_view, {}); }, ErrorKind::invalid_argument,
               "operand A (x");
  QuantizedView no_ts = f.b.view();
  no_ts.tensor_scale = nullptr;
  expect_error([&] { bad(f.s, f.a.view(), no_ts, f.out_view, {}); }, ErrorKind::invalid_argument,
               "tensor_scale");
  expect_error(
      [&] {
        bad({8, 16, 40}, f.a.view(), f.b.view(), f.out_view, {});
      },
      ErrorKind::invalid_argument, "block width 16");
  expect_error(
      [&] {
        bad({0, 16, 64}, f.a.view(), f.b.view(), f.out_view, {});
      },
      ErrorKind::invalid_argument, "must be positive");
  TensorView small = f.out_view;
  small.cols = 15;
  expect_error([&] { bad(f.s, f.a.view(), f.b.view(), small, {}); }, ErrorKind::invalid_argument,
               "output must be [8, 16]");
  TensorView null_out = f.out_view;
  null_out.data = nullptr;
  expect_error([&] { bad(f.s, f.a.view(), f.b.view(), null_out, {}); }, ErrorKind::invalid_argument,
               "null data");
  GemmEpilogue beta_no_c;
  beta_no_c.beta = 1.0f;
  expect_error([&] { bad(f.s, f.a.view(), f.b.view(), f.out_view, beta_no_c); },
               ErrorKind::invalid_argument, "epilogue.c");
  std::vector<std::uint16_t> c16(8 * 16);
  GemmEpilogue wrong_dtype;
  wrong_dtype.beta = 1.0f;
  wrong_dtype.c = TensorView{c16.data(), DType::bf16, 8, 16, 0};
  expect_error([&] { bad(f.s, f.a.view(), f.b.view(), f.out_view, wrong_dtype); },
               ErrorKind::invalid_argument, "must match");
  GemmEpilogue inf_alpha;
  inf_alpha.alpha = INFINITY;
  expect_error([&] { bad(f.s, f.a.view(), f.b.view(), f.out_view, inf_alpha); },
               ErrorKind::invalid_argument, "finite");
  std::vector<float> w(16 * 64, 1.0f);
  GemmEpilogue occ_on_nvfp4;
  occ_on_nvfp4.occ_weight = TensorView{w.data(), DType::f32, 16, 64, 0};
  expect_error([&] { bad(f.s, f.a.view(), f.b.view(), f.out_view, occ_on_nvfp4); },
               ErrorKind::invalid_argument, "occ=off");
}

TEST(EngineGemmErrors, OccCompensationNeedsTheResidualAndAnNxKWeight) {
  Fixture f("msfp4");
  std::vector<float> w(16 * 64, 1.0f);
  GemmEpilogue e;
  e.occ_weight = TensorView{w.data(), DType::f32, 16, 32, 0};
  expect_error([&] { f.run(e); }, ErrorKind::invalid_argument, "occ_weight");
  e.occ_weight.cols = 64;
  QuantizedView no_count = f.a.view();
  no_count.residual_count = nullptr;
  expect_error(
      [&] { ref_engine().gemm(f.r, GemmOp::fprop, no_count, f.b.view(), f.s, f.out_view, e); },
      ErrorKind::invalid_argument, "residual_count");
  f.run(e);  // valid
}

TEST(EngineGemmShapes, ALayersThreeGemms) {
  const GemmShape layer{8192, 4096, 1024};
  EXPECT_EQ(gemm_shape_of(GemmOp::fprop, layer), (GemmShape{8192, 4096, 1024}));
  EXPECT_EQ(gemm_shape_of(GemmOp::dgrad, layer), (GemmShape{8192, 1024, 4096}));
  EXPECT_EQ(gemm_shape_of(GemmOp::wgrad, layer), (GemmShape{4096, 1024, 8192}));
  EXPECT_EQ(parse_gemm_shape("1000x3000x4096"), (GemmShape{1000, 3000, 4096}));
  EXPECT_THROW(parse_gemm_shape("1000x3000"), Error);
  EXPECT_THROW(parse_gemm_shape("1000x-3x4"), Error);
  EXPECT_EQ(gemm_roles(GemmOp::wgrad).a, Role::dyt);
  EXPECT_EQ(gemm_roles(GemmOp::wgrad).b, Role::xt);
}

// The reference backend's epilogue is reference::gemm, then alpha, bias, beta * C in double.
TEST(EngineGemmReference, EpilogueOverReferenceGemm) {
  for (const char* recipe : {"mxfp4", "msfp4"}) {
    Fixture f(recipe);
    std::vector<float> bias(16), c(8 * 16);
    for (int j = 0; j < 16; ++j) bias[static_cast<std::size_t>(j)] = 0.125f * static_cast<float>(j);
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i % 5) - 2.0f;
    GemmEpilogue e;
    e.alpha = 2.0f;
    e.beta = 0.5f;
    e.bias = bias.data();
    e.c = TensorView{c.data(), DType::f32, 8, 16, 0};
    f.run(e);
    const Matrix<double> ref = reference::gemm(f.r, f.a.q, f.b.q);
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 16; ++j) {
        const double want = 2.0 * ref(i, j) + bias[static_cast<std::size_t>(j)] +
                            0.5 * c[static_cast<std::size_t>(i * 16 + j)];
        EXPECT_EQ(f.out[static_cast<std::size_t>(i * 16 + j)], static_cast<float>(want))
            << recipe << " " << i << "," << j;
      }
  }
}

}  // namespace
}  // namespace fp4jit
