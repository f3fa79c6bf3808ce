// The C API of libfp4jit.so, through its header only: recipes, layouts, quantize / dequantize /
// GEMM / DGE on the host backend checked byte for byte against the reference backend, and DLPack
// conversion (bad arguments: capi_errors_test.cpp; the linear step: capi_linear_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fp4jit/fp4jit.h"
#include "tests/capi/capi_util.hpp"

namespace {

using namespace capi_test;

// ---- library, recipes, layouts ------------------------------------------------------------

TEST(CApi, VersionAndStatusNames) {
  EXPECT_STREQ(fp4jit_version(), "0.1.0");
  EXPECT_EQ(fp4jit_abi_version(), FP4JIT_C_ABI_VERSION);
  EXPECT_STREQ(fp4jit_status_name(FP4JIT_ERROR_RECIPE), "FP4JIT_ERROR_RECIPE");
  ASSERT_GE(fp4jit_preset_count(), 5u);
  std::vector<std::string> names;
  for (size_t i = 0; i < fp4jit_preset_count(); ++i) names.emplace_back(fp4jit_preset_name(i));
  EXPECT_NE(std::find(names.begin(), names.end(), "nvfp4"), names.end());
  EXPECT_EQ(fp4jit_preset_name(fp4jit_preset_count()), nullptr);
}

TEST(CApi, RecipeCanonicalHashRoundTrip) {
  Recipe r("msfp4:occ=0.97,dge.k=3");
  ASSERT_NE(r.r, nullptr);
  EXPECT_STREQ(fp4jit_recipe_preset(r.r), "msfp4");
  const std::string canonical = fp4jit_recipe_canonical(r.r);
  EXPECT_NE(canonical.find("occ=0.97"), std::string::npos) << canonical;
  EXPECT_EQ(std::strlen(fp4jit_recipe_hash(r.r)), 64u);
  Recipe again(canonical.c_str());
  EXPECT_STREQ(fp4jit_recipe_hash(again.r), fp4jit_recipe_hash(r.r));
  fp4jit_operand_info x{}, w{};
  ASSERT_EQ(fp4jit_recipe_operand(r.r, FP4JIT_ROLE_X, &x), FP4JIT_OK);
  ASSERT_EQ(fp4jit_recipe_operand(r.r, FP4JIT_ROLE_W, &w), FP4JIT_OK);
  EXPECT_TRUE(x.occ);
  EXPECT_TRUE(w.dge);
  EXPECT_EQ(x.elem_bits, 4);
  EXPECT_EQ(x.block_rows, 1);  // a scale per token
  EXPECT_EQ(x.block_cols, -1);
  Recipe nv("nvfp4");
  fp4jit_operand_info nw{};
  ASSERT_EQ(fp4jit_recipe_operand(nv.r, FP4JIT_ROLE_W, &nw), FP4JIT_OK);
  EXPECT_EQ(nw.block_rows, 16);
  EXPECT_EQ(nw.block_cols, 16);
  EXPECT_TRUE(nw.two_level);
  Recipe t("tetrajet");
  fp4jit_operand_info wt{};
  ASSERT_EQ(fp4jit_recipe_operand(t.r, FP4JIT_ROLE_WT, &wt), FP4JIT_OK);
  EXPECT_TRUE(wt.requant);
  EXPECT_TRUE(wt.stochastic_rounding);
  EXPECT_EQ(fp4jit_recipe_canonical(nullptr), nullptr);
}

TEST(CApi, RecipeErrors) {
  fp4jit_recipe* r = reinterpret_cast<fp4jit_recipe*>(0x1);
  expect_error(fp4jit_recipe_parse("nvfp4:colour=blue", &r), FP4JIT_ERROR_RECIPE, "colour");
  EXPECT_EQ(r, nullptr);
  expect_error(fp4jit_recipe_parse("nvfp5", &r), FP4JIT_ERROR_RECIPE, "nvfp5");
  expect_error(fp4jit_recipe_parse(nullptr, &r), FP4JIT_ERROR_INVALID_ARGUMENT, "recipe text");
  Recipe ok("nvfp4");
  fp4jit_operand_info info{};
  expect_error(fp4jit_recipe_operand(ok.r, static_cast<fp4jit_role>(9), &info),
               FP4JIT_ERROR_INVALID_ARGUMENT, "unknown role 9");
}

TEST(CApi, LastErrorIsPerThread) {
  fp4jit_recipe* r = nullptr;
  ASSERT_NE(fp4jit_recipe_parse("nvfp4:colour=blue", &r), FP4JIT_OK);
  const std::string mine = fp4jit_last_error();
  std::string theirs;
  std::thread([&] {
    theirs = fp4jit_last_error();
    fp4jit_recipe* q = nullptr;
    fp4jit_recipe_parse("bogus", &q);
  }).join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(fp4jit_last_error(), mine);
}

// One engine shared by threads: every call's result equals the same call made alone.
TEST(CApi, EngineSharedBetweenThreads) {
  Recipe r("nvfp4");
  Matrix in(32, 64, 2.0f);
  Quantized alone(r.r, FP4JIT_ROLE_DY, 32, 64);
  fp4jit_quantize_args args{5, 0, nullptr, nullptr};
  ASSERT_EQ(fp4jit_quantize(host().e, r.r, FP4JIT_ROLE_DY, &in.t, &alone.q, &args, nullptr),
            FP4JIT_OK);
  std::vector<std::unique_ptr<Quantized>> outs;
  for (int i = 0; i < 8; ++i)
    outs.push_back(std::make_unique<Quantized>(r.r, FP4JIT_ROLE_DY, 32, 64));
  std::vector<std::thread> threads;
  std::vector<fp4jit_status> status(outs.size(), FP4JIT_ERROR_INTERNAL);
  for (size_t i = 0; i < outs.size(); ++i)
    threads.emplace_back([&, i] {
      status[i] =
          fp4jit_quantize(host().e, r.r, FP4JIT_ROLE_DY, &in.t, &outs[i]->q, &args, nullptr);
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < outs.size(); ++i) {
    EXPECT_EQ(status[i], FP4JIT_OK);
    expect_same(alone, *outs[i], "thread " + std::to_string(i));
  }
}

// fp4jit_quantize_stepped / _pair_stepped: a step counter (host memory for the host backend) makes
// the seed fp4jit_mix_seed(seed, step); NULL is the plain call.
TEST(CApi, SteppedQuantizeMixesTheStepIntoTheSeed) {
  EXPECT_EQ(fp4jit_mix_seed(0, 0), 0xE220A8397B1DCDAFull);  // splitmix64's first output from 0
  Recipe r("nvfp4");
  Matrix in(32, 64, 2.0f);
  const uint64_t step = 41;
  fp4jit_quantize_args args{5, 0, nullptr, nullptr};
  fp4jit_quantize_args mixed{fp4jit_mix_seed(5, 41), 0, nullptr, nullptr};
  Quantized stepped(r.r, FP4JIT_ROLE_DY, 32, 64), want(r.r, FP4JIT_ROLE_DY, 32, 64),
      plain(r.r, FP4JIT_ROLE_DY, 32, 64), unstepped(r.r, FP4JIT_ROLE_DY, 32, 64);
  Quantized stepped_t(r.r, FP4JIT_ROLE_DYT, 32, 64), want_t(r.r, FP4JIT_ROLE_DYT, 32, 64);
  ASSERT_EQ(fp4jit_quantize_pair_stepped(host().e, r.r, FP4JIT_ROLE_DY, &in.t, &stepped.q,
                                         &stepped_t.q, &args, &step, nullptr),
            FP4JIT_OK)
      << fp4jit_last_error();
  ASSERT_EQ(fp4jit_quantize_pair(host().e, r.r, FP4JIT_ROLE_DY, &in.t, &want.q, &want_t.q, &mixed,
                                 nullptr),
            FP4JIT_OK);
  expect_same(want, stepped, "pair, row-wise");
  expect_same(want_t, stepped_t, "pair, transposed");
  ASSERT_EQ(fp4jit_quantize_stepped(host().e, r.r, FP4JIT_ROLE_DY, &in.t, &stepped.q, &args, &step,
                                    nullptr),
            FP4JIT_OK);
  expect_same(want, stepped, "alone");
  ASSERT_EQ(fp4jit_quantize(host().e, r.r, FP4JIT_ROLE_DY, &in.t, &plain.q, &args, nullptr),
            FP4JIT_OK);
  ASSERT_EQ(fp4jit_quantize_stepped(host().e, r.r, FP4JIT_ROLE_DY, &in.t, &unstepped.q, &args,
                                    nullptr, nullptr),
            FP4JIT_OK);
  expect_same(plain, unstepped, "no step");
  EXPECT_NE(plain.codes, stepped.codes);
}

TEST(CApi, LayoutQuery) {
  Recipe r("nvfp4");
  fp4jit_layout l{};
  ASSERT_EQ(fp4jit_layout_query(r.r, FP4JIT_ROLE_XT, 64, 128, &l), FP4JIT_OK);
  EXPECT_EQ(l.rows, 128);  // X^T: [in, tokens]
  EXPECT_EQ(l.cols, 64);
  EXPECT_EQ(l.row_bytes, 32);  // E2M1, two per byte
  EXPECT_EQ(l.code_bytes, 128 * 32);
  EXPECT_EQ(l.scale_rows, 128);
  EXPECT_EQ(l.scale_cols, 4);  // 1x16 blocks along tokens
  EXPECT_EQ(l.scale_is_code, 1);
  EXPECT_EQ(l.scale_bytes, 128 * 4);
  EXPECT_EQ(l.two_level, 1);
  EXPECT_EQ(l.transposed, 1);
  EXPECT_EQ(l.occ, 0);
  expect_error(fp4jit_layout_query(r.r, FP4JIT_ROLE_X, 64, 100, &l), FP4JIT_ERROR_INVALID_ARGUMENT,
               "100");
  Recipe ms("msfp4");
  ASSERT_EQ(fp4jit_layout_query(ms.r, FP4JIT_ROLE_X, 4, 200, &l), FP4JIT_OK);
  EXPECT_EQ(l.occ, 1);
  EXPECT_EQ(l.scale_is_code, 0);
  EXPECT_EQ(l.residual_capacity,
            4 * (2 + 1));  // int(0.01 * 200) below, 199 - int(0.99 * 200) above
}

// ---- operations: host backend against the reference, byte for byte -------------------------

struct PairCase {
  const char* recipe;
  fp4jit_role role;
};

std::string role_name(fp4jit_role role) {
  static const char* const names[] = {"x", "w", "dy", "wt", "dyt", "xt"};
  return names[role];
}
void PrintTo(const PairCase& c, std::ostream* os) {
  *os << c.recipe << " " << role_name(c.role);
}
std::string pair_case_name(const ::testing::TestParamInfo<PairCase>& param) {
  return std::string(param.param.recipe) + "_" + role_name(param.param.role);
}

class QuantizePair : public ::testing::TestWithParam<PairCase> {};

TEST_P(QuantizePair, HostEqualsReference) {
  const auto [text, role] = GetParam();
  const fp4jit_role partner = role == FP4JIT_ROLE_X   ? FP4JIT_ROLE_XT
                              : role == FP4JIT_ROLE_W ? FP4JIT_ROLE_WT
                                                      : FP4JIT_ROLE_DYT;
  Recipe r(text);
  Matrix in(64, 128, 3.0f);  // 128 columns: OCC clamps one value at each end of a row
  fp4jit_quantize_args args{1234, 77, nullptr, nullptr};
  Quantized ref(r.r, role, 64, 128), ref_t(r.r, partner, 64, 128);
  Quantized hq(r.r, role, 64, 128), hq_t(r.r, partner, 64, 128);
  ASSERT_EQ(fp4jit_quantize_pair(reference().e, r.r, role, &in.t, &ref.q, &ref_t.q, &args, nullptr),
            FP4JIT_OK)
      << fp4jit_last_error();
  ASSERT_EQ(fp4jit_quantize_pair(host().e, r.r, role, &in.t, &hq.q, &hq_t.q, &args, nullptr),
            FP4JIT_OK)
      << fp4jit_last_error();
  expect_same(ref, hq, std::string(text) + " row-wise");
  expect_same(ref_t, hq_t, std::string(text) + " transposed");
  // One operand alone equals the same copy of the pair.
  Quantized single(r.r, partner, 64, 128);
  ASSERT_EQ(fp4jit_quantize(host().e, r.r, partner, &in.t, &single.q, &args, nullptr), FP4JIT_OK)
      << fp4jit_last_error();
  expect_same(ref_t, single, std::string(text) + " single");
}

INSTANTIATE_TEST_SUITE_P(Recipes, QuantizePair,
                         ::testing::Values(PairCase{"nvfp4", FP4JIT_ROLE_X},
                                           PairCase{"nvfp4", FP4JIT_ROLE_DY},
                                           PairCase{"tetrajet", FP4JIT_ROLE_W},
                                           PairCase{"msfp4", FP4JIT_ROLE_X},
                                           PairCase{"mxfp4", FP4JIT_ROLE_DY}),
                         pair_case_name);

TEST(CApi, DequantizeMatchesAcrossBackendsAndDtypes) {
  Recipe r("nvfp4");
  Matrix in(32, 64, 2.0f);
  Quantized q(r.r, FP4JIT_ROLE_X, 32, 64);
  ASSERT_EQ(fp4jit_quantize(reference().e, r.r, FP4JIT_ROLE_X, &in.t, &q.q, nullptr, nullptr),
            FP4JIT_OK);
  Matrix ref(32, 64), out(32, 64);
  ASSERT_EQ(fp4jit_dequantize(reference().e, r.r, FP4JIT_ROLE_X, &q.q, 32, 64, &ref.t, nullptr),
            FP4JIT_OK)
      << fp4jit_last_error();
  ASSERT_EQ(fp4jit_dequantize(host().e, r.r, FP4JIT_ROLE_X, &q.q, 32, 64, &out.t, nullptr),
            FP4JIT_OK)
      << fp4jit_last_error();
  EXPECT_EQ(ref.data, out.data);
  double err = 0, norm = 0;
  for (size_t i = 0; i < in.data.size(); ++i) {
    err += std::pow(ref.data[i] - in.data[i], 2.0);
    norm += std::pow(in.data[i], 2.0);
  }
  EXPECT_LT(std::sqrt(err / norm), 0.2);
  // bfloat16 output: the float32 values rounded (E2M1 x UE4M3 / s_enc fits 8 bits often, not
  // always, so compare after widening with bf16 tolerance).
  std::vector<uint16_t> bf(32 * 64);
  int64_t shape[2] = {32, 64};
  fp4jit_tensor bt{bf.data(), FP4JIT_BFLOAT16, 2, shape, nullptr, FP4JIT_DEVICE_CPU, 0};
  ASSERT_EQ(fp4jit_dequantize(host().e, r.r, FP4JIT_ROLE_X, &q.q, 32, 64, &bt, nullptr), FP4JIT_OK)
      << fp4jit_last_error();
  for (size_t i = 0; i < bf.size(); ++i) {
    uint32_t bits = static_cast<uint32_t>(bf[i]) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    EXPECT_NEAR(v, ref.data[i], std::fabs(ref.data[i]) / 128 + 1e-30) << i;
  }
}

// fprop with bias and beta * C on both backends; with OCC compensation for msfp4.
TEST(CApi, GemmEpilogueHostMatchesReference) {
  for (const char* text : {"nvfp4", "msfp4"}) {
    SCOPED_TRACE(text);
    Recipe r(text);
    const int64_t m = 32, n = 64, k = 128;
    Matrix x(m, k, 2.0f, 0.3f), w(n, k, 0.5f, 1.1f), c(m, n, 1.0f, 2.0f);
    std::vector<float> bias(n);
    for (int64_t j = 0; j < n; ++j) bias[j] = 0.01f * static_cast<float>(j);
    int64_t bias_shape[1] = {n};
    fp4jit_tensor bias_t{bias.data(), FP4JIT_FLOAT32, 1, bias_shape, nullptr, FP4JIT_DEVICE_CPU, 0};
    Quantized qx(r.r, FP4JIT_ROLE_X, m, k), qw(r.r, FP4JIT_ROLE_W, n, k);
    ASSERT_EQ(fp4jit_quantize(reference().e, r.r, FP4JIT_ROLE_X, &x.t, &qx.q, nullptr, nullptr),
              FP4JIT_OK);
    ASSERT_EQ(fp4jit_quantize(reference().e, r.r, FP4JIT_ROLE_W, &w.t, &qw.q, nullptr, nullptr),
              FP4JIT_OK);
    fp4jit_gemm_epilogue ep;
    fp4jit_gemm_epilogue_init(&ep);
    EXPECT_EQ(ep.alpha, 1.0f);
    ep.alpha = 0.5f;
    ep.beta = 2.0f;
    ep.c = &c.t;
    ep.bias = &bias_t;
    if (qx.l.occ) ep.occ_weight = &w.t;
    Matrix ref(m, n), out(m, n), plain(m, n);
    ASSERT_EQ(
        fp4jit_gemm(reference().e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, m, n, k, &ref.t, &ep, nullptr),
        FP4JIT_OK)
        << fp4jit_last_error();
    ASSERT_EQ(fp4jit_gemm(host().e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, m, n, k, &out.t, &ep, nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();
    ASSERT_EQ(fp4jit_gemm(reference().e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, m, n, k, &plain.t,
                          nullptr, nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();
    for (int64_t i = 0; i < m * n; ++i) {
      EXPECT_NEAR(out.data[i], ref.data[i], 1e-4f * (1.0f + std::fabs(ref.data[i]))) << i;
      if (!qx.l.occ) {  // the epilogue, applied to the plain product
        const float expect = 0.5f * plain.data[i] + bias[i % n] + 2.0f * c.data[i];
        EXPECT_NEAR(ref.data[i], expect, 1e-4f * (1.0f + std::fabs(expect))) << i;
      }
    }
    if (qx.l.occ) {
      // Compensation moves the product toward the unquantized one.
      double with = 0, without = 0;
      Matrix comp(m, n);
      fp4jit_gemm_epilogue only;
      fp4jit_gemm_epilogue_init(&only);
      only.occ_weight = &w.t;
      ASSERT_EQ(
          fp4jit_gemm(host().e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, m, n, k, &comp.t, &only, nullptr),
          FP4JIT_OK)
          << fp4jit_last_error();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double exact = 0;
          for (int64_t p = 0; p < k; ++p)
            exact += static_cast<double>(x.data[i * k + p]) * w.data[j * k + p];
          with += std::pow(comp.data[i * n + j] - exact, 2.0);
          without += std::pow(plain.data[i * n + j] - exact, 2.0);
        }
      EXPECT_LT(with, without);
    }
  }
}

// fp4jit_gemm_kernel: the host's config with where it comes from, the reference's empty text, the
// length asked with a NULL buffer and refused when it does not fit, bad arguments named.
TEST(CApi, GemmKernelNamesTheConfig) {
  Recipe r("mxfp4");
  char buf[256];
  size_t needed = 0;
  ASSERT_EQ(fp4jit_gemm_kernel(host().e, r.r, FP4JIT_FPROP, 64, 64, 128, FP4JIT_FLOAT32, buf,
                               sizeof buf, &needed),
            FP4JIT_OK)
      << fp4jit_last_error();
  const std::string text(buf);
  EXPECT_NE(text.find("mr="), std::string::npos) << text;
  EXPECT_TRUE(text.size() > 10 && (text.substr(text.size() - 10) == " (default)" ||
                                   text.substr(text.size() - 8) == " (tuned)"))
      << text;
  EXPECT_EQ(needed, text.size() + 1);
  size_t asked = 0;
  EXPECT_EQ(fp4jit_gemm_kernel(host().e, r.r, FP4JIT_FPROP, 64, 64, 128, FP4JIT_FLOAT32, nullptr, 0,
                               &asked),
            FP4JIT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(asked, needed);
  EXPECT_EQ(
      fp4jit_gemm_kernel(host().e, r.r, FP4JIT_FPROP, 64, 64, 128, FP4JIT_FLOAT32, buf, 4, nullptr),
      FP4JIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp4jit_last_error()).find("takes"), std::string::npos)
      << fp4jit_last_error();
  ASSERT_EQ(fp4jit_gemm_kernel(reference().e, r.r, FP4JIT_WGRAD, 64, 64, 128, FP4JIT_BFLOAT16, buf,
                               sizeof buf, &needed),
            FP4JIT_OK);
  EXPECT_STREQ(buf, "");
  EXPECT_EQ(needed, 1u);
  EXPECT_EQ(fp4jit_gemm_kernel(host().e, r.r, FP4JIT_FPROP, 64, 64, 0, FP4JIT_FLOAT32, buf,
                               sizeof buf, nullptr),
            FP4JIT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp4jit_last_error()).find("M, N and K must be positive"), std::string::npos)
      << fp4jit_last_error();
  // K = 100: not a whole number of mxfp4's 32-element blocks.
  EXPECT_NE(fp4jit_gemm_kernel(host().e, r.r, FP4JIT_FPROP, 64, 64, 100, FP4JIT_FLOAT32, buf,
                               sizeof buf, nullptr),
            FP4JIT_OK);
  EXPECT_EQ(fp4jit_gemm_kernel(nullptr, r.r, FP4JIT_FPROP, 64, 64, 128, FP4JIT_FLOAT32, buf,
                               sizeof buf, nullptr),
            FP4JIT_ERROR_INVALID_ARGUMENT);
}

TEST(CApi, DgeFactor) {
  Recipe r("msfp4");
  Matrix w(16, 64, 0.3f), ref(16, 64), out(16, 64);
  ASSERT_EQ(fp4jit_dge(reference().e, r.r, &w.t, &ref.t, nullptr), FP4JIT_OK)
      << fp4jit_last_error();
  ASSERT_EQ(fp4jit_dge(host().e, r.r, &w.t, &out.t, nullptr), FP4JIT_OK) << fp4jit_last_error();
  EXPECT_EQ(ref.data, out.data);
  for (float f : out.data) {
    EXPECT_GT(f, 0.0f);
    EXPECT_LE(f, 3.0f);  // dge.clip
  }
  Recipe nv("nvfp4");
  expect_error(fp4jit_dge(host().e, nv.r, &w.t, &out.t, nullptr), FP4JIT_ERROR_INVALID_ARGUMENT,
               "dge");
}

// ---- tensors: N-D, strides, DLPack ------------------------------------------------------------

TEST(CApi, TensorsOfMoreDimensionsAndRowStrides) {
  Recipe r("mxfp4");
  Matrix flat(6, 64, 1.0f);
  int64_t shape3[3] = {2, 3, 64};
  fp4jit_tensor t3{flat.data.data(), FP4JIT_FLOAT32, 3, shape3, nullptr, FP4JIT_DEVICE_CPU, 0};
  Quantized a(r.r, FP4JIT_ROLE_X, 6, 64), b(r.r, FP4JIT_ROLE_X, 6, 64);
  ASSERT_EQ(fp4jit_quantize(host().e, r.r, FP4JIT_ROLE_X, &flat.t, &a.q, nullptr, nullptr),
            FP4JIT_OK);
  ASSERT_EQ(fp4jit_quantize(host().e, r.r, FP4JIT_ROLE_X, &t3, &b.q, nullptr, nullptr), FP4JIT_OK)
      << fp4jit_last_error();
  expect_same(a, b, "3-D");
  // The same 6 x 64 rows inside a 6 x 128 buffer (row stride 128).
  std::vector<float> wide(6 * 128, 0.0f);
  for (int64_t i = 0; i < 6; ++i)
    std::memcpy(&wide[i * 128], &flat.data[i * 64], 64 * sizeof(float));
  int64_t strides[2] = {128, 1};
  fp4jit_tensor ts{wide.data(), FP4JIT_FLOAT32, 2, flat.shape, strides, FP4JIT_DEVICE_CPU, 0};
  Quantized c(r.r, FP4JIT_ROLE_X, 6, 64);
  ASSERT_EQ(fp4jit_quantize(host().e, r.r, FP4JIT_ROLE_X, &ts, &c.q, nullptr, nullptr), FP4JIT_OK)
      << fp4jit_last_error();
  expect_same(a, c, "row stride");
}

TEST(CApi, DlpackConversion) {
  std::vector<float> buf(4 + 32 * 64, 0.0f);
  int64_t shape[2] = {32, 64};
  fp4jit_dlpack_tensor dl{};
  dl.data = buf.data();
  dl.device.device_type = 1;
  dl.ndim = 2;
  dl.dtype.code = 2;
  dl.dtype.bits = 32;
  dl.dtype.lanes = 1;
  dl.shape = shape;
  dl.byte_offset = 16;
  fp4jit_tensor t{};
  ASSERT_EQ(fp4jit_tensor_from_dlpack(&dl, &t), FP4JIT_OK) << fp4jit_last_error();
  EXPECT_EQ(t.data, buf.data() + 4);
  EXPECT_EQ(t.dtype, FP4JIT_FLOAT32);
  EXPECT_EQ(t.device, FP4JIT_DEVICE_CPU);
  EXPECT_EQ(t.shape, shape);
  dl.dtype.code = 4, dl.dtype.bits = 16;
  ASSERT_EQ(fp4jit_tensor_from_dlpack(&dl, &t), FP4JIT_OK);
  EXPECT_EQ(t.dtype, FP4JIT_BFLOAT16);
  dl.dtype.code = 0, dl.dtype.bits = 32;
  expect_error(fp4jit_tensor_from_dlpack(&dl, &t), FP4JIT_ERROR_INVALID_ARGUMENT, "code 0");
  dl.dtype.code = 2, dl.dtype.lanes = 4;
  expect_error(fp4jit_tensor_from_dlpack(&dl, &t), FP4JIT_ERROR_INVALID_ARGUMENT, "lanes");
  dl.dtype.lanes = 1, dl.device.device_type = 8;  // Metal
  expect_error(fp4jit_tensor_from_dlpack(&dl, &t), FP4JIT_ERROR_INVALID_ARGUMENT, "device type 8");
}

}  // namespace
