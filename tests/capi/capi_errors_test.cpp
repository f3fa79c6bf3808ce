// The C API's bad arguments: every kind of bad tensor, quantized buffer, GEMM argument and engine
// option reported with a status and a message naming it.
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

// ---- bad arguments --------------------------------------------------------------------------

TEST(CApi, BadTensorsAreNamed) {
  Recipe r("nvfp4");
  Matrix in(32, 64);
  Quantized q(r.r, FP4JIT_ROLE_X, 32, 64);
  fp4jit_engine* e = host().e;
  const auto quantize = [&](const fp4jit_tensor* t) {
    return fp4jit_quantize(e, r.r, FP4JIT_ROLE_X, t, &q.q, nullptr, nullptr);
  };
  expect_error(quantize(nullptr), FP4JIT_ERROR_INVALID_ARGUMENT, "quantize input (operand x)");
  fp4jit_tensor t = in.t;
  t.data = nullptr;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "null data pointer");
  t = in.t;
  t.dtype = static_cast<fp4jit_dtype>(7);
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "unknown dtype 7");
  t = in.t;
  t.ndim = 0;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "0 dimensions");
  t = in.t;
  int64_t column_major[2] = {1, 32};
  t.strides = column_major;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "must be contiguous (stride 1)");
  t = in.t;
  int64_t short_rows[2] = {16, 1};
  t.strides = short_rows;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "row stride 16");
  t = in.t;
  t.data = reinterpret_cast<char*>(in.data.data()) + 2;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "not aligned");
  t = in.t;
  t.device = FP4JIT_DEVICE_CUDA;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "host memory");
  t = in.t;
  int64_t bad_shape[2] = {32, 60};  // not a multiple of the 1x16 block
  t.shape = bad_shape;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "60");
  int64_t shape3[3] = {2, 16, 64};
  int64_t strides3[3] = {4096, 128, 1};  // dimension 0 should step 16 * 128 = 2048
  fp4jit_tensor t3{in.data.data(), FP4JIT_FLOAT32, 3, shape3, strides3, FP4JIT_DEVICE_CPU, 0};
  expect_error(quantize(&t3), FP4JIT_ERROR_INVALID_ARGUMENT, "cannot be read as one row index");
  // Sizes whose products overflow 64 bits (found by the capi fuzz target: they were read as the
  // wrapped, small products, past the caller's buffer), and spans past fp4jit's 2^56 elements.
  int64_t huge[3] = {int64_t{1} << 32, int64_t{1} << 32, 64};  // 2^64 rows wrap to 0
  t = in.t;
  t.ndim = 3;
  t.shape = huge;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "more elements than fp4jit addresses");
  int64_t tall[2] = {int64_t{1} << 62, 64};
  t = in.t;
  t.shape = tall;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "[4611686018427387904, 64]");
  int64_t wide_stride[2] = {int64_t{1} << 60, 1};  // 32 rows 2^60 elements apart
  t = in.t;
  t.strides = wide_stride;
  expect_error(quantize(&t), FP4JIT_ERROR_INVALID_ARGUMENT, "more elements than fp4jit addresses");
}

TEST(CApi, BadQuantizedBuffersAreNamed) {
  Recipe r("nvfp4");
  Matrix in(32, 64);
  fp4jit_engine* e = host().e;
  Quantized q(r.r, FP4JIT_ROLE_X, 32, 64);
  fp4jit_quantized b = q.q;
  const auto run = [&] {
    return fp4jit_quantize(e, r.r, FP4JIT_ROLE_X, &in.t, &b, nullptr, nullptr);
  };
  b.codes = nullptr;
  expect_error(run(), FP4JIT_ERROR_INVALID_ARGUMENT, "codes is NULL");
  b = q.q;
  b.codes_bytes -= 1;
  expect_error(run(), FP4JIT_ERROR_INVALID_ARGUMENT, "codes_bytes");
  b = q.q;
  b.scales_bytes = 0;
  expect_error(run(), FP4JIT_ERROR_INVALID_ARGUMENT, "scales_bytes 0");
  b = q.q;
  b.tensor_scale = nullptr;
  expect_error(run(), FP4JIT_ERROR_INVALID_ARGUMENT, "tensor_scale");
  expect_error(fp4jit_quantize(e, r.r, FP4JIT_ROLE_X, &in.t, nullptr, nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "quantize output (operand x)");
  expect_error(fp4jit_quantize(nullptr, r.r, FP4JIT_ROLE_X, &in.t, &q.q, nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "engine is NULL");
  expect_error(fp4jit_quantize(e, nullptr, FP4JIT_ROLE_X, &in.t, &q.q, nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "recipe is NULL");
  Quantized qt(r.r, FP4JIT_ROLE_WT, 32, 64);
  expect_error(fp4jit_quantize_pair(e, r.r, FP4JIT_ROLE_WT, &in.t, &qt.q, &qt.q, nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "x, w or dy");

  Recipe ms("msfp4");
  Quantized m(ms.r, FP4JIT_ROLE_X, 32, 64);
  fp4jit_quantized mb = m.q;
  mb.residual_count = nullptr;
  expect_error(fp4jit_quantize(e, ms.r, FP4JIT_ROLE_X, &in.t, &mb, nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "residual_count");
  mb = m.q;
  mb.scales = reinterpret_cast<char*>(m.scales.data()) + 1;
  expect_error(fp4jit_quantize(e, ms.r, FP4JIT_ROLE_X, &in.t, &mb, nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "scales (float32)");
}

TEST(CApi, BadGemmArgumentsAreNamed) {
  Recipe r("mxfp4");
  Matrix x(32, 64), w(32, 64);
  fp4jit_engine* e = reference().e;
  Quantized qx(r.r, FP4JIT_ROLE_X, 32, 64), qw(r.r, FP4JIT_ROLE_W, 32, 64);
  ASSERT_EQ(fp4jit_quantize(e, r.r, FP4JIT_ROLE_X, &x.t, &qx.q, nullptr, nullptr), FP4JIT_OK);
  ASSERT_EQ(fp4jit_quantize(e, r.r, FP4JIT_ROLE_W, &w.t, &qw.q, nullptr, nullptr), FP4JIT_OK);
  Matrix out(32, 32), wrong(32, 16);
  expect_error(fp4jit_gemm(e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, 32, 32, 0, &out.t, nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "positive");
  expect_error(
      fp4jit_gemm(e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, 32, 32, 64, &wrong.t, nullptr, nullptr),
      FP4JIT_ERROR_INVALID_ARGUMENT, "output");
  expect_error(fp4jit_gemm(e, r.r, static_cast<fp4jit_gemm_op>(3), &qx.q, &qw.q, 32, 32, 64, &out.t,
                           nullptr, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "unknown GEMM 3");
  fp4jit_gemm_epilogue ep;
  fp4jit_gemm_epilogue_init(&ep);
  ep.beta = 1.0f;
  expect_error(fp4jit_gemm(e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, 32, 32, 64, &out.t, &ep, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "c is NULL");
  fp4jit_gemm_epilogue_init(&ep);
  std::vector<uint16_t> bias(32);  // BF16 biases are taken; one of 31 elements is not
  int64_t bias_shape[1] = {31};
  fp4jit_tensor bias_t{bias.data(), FP4JIT_BFLOAT16, 1, bias_shape, nullptr, FP4JIT_DEVICE_CPU, 0};
  ep.bias = &bias_t;
  expect_error(fp4jit_gemm(e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, 32, 32, 64, &out.t, &ep, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "bias: must be a contiguous vector of 32 elements");
  bias_shape[0] = 32;
  EXPECT_EQ(fp4jit_gemm(e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, 32, 32, 64, &out.t, &ep, nullptr),
            FP4JIT_OK)
      << fp4jit_last_error();
  fp4jit_gemm_epilogue_init(&ep);
  ep.occ_weight = &w.t;
  expect_error(fp4jit_gemm(e, r.r, FP4JIT_FPROP, &qx.q, &qw.q, 32, 32, 64, &out.t, &ep, nullptr),
               FP4JIT_ERROR_INVALID_ARGUMENT, "occ=off");
}

TEST(CApi, EngineCreation) {
  fp4jit_backend b{};
  ASSERT_EQ(fp4jit_engine_backend(host().e, &b), FP4JIT_OK);
  EXPECT_EQ(b, FP4JIT_BACKEND_HOST);
  EXPECT_NE(std::string(fp4jit_engine_description(host().e)).find("host"), std::string::npos);
  fp4jit_engine_options o;
  fp4jit_engine_options_init(&o);
  o.backend = static_cast<fp4jit_backend>(5);
  fp4jit_engine* e = nullptr;
  expect_error(fp4jit_engine_create(&o, &e), FP4JIT_ERROR_INVALID_ARGUMENT, "unknown backend 5");
  EXPECT_EQ(e, nullptr);
  // Without a GPU, the cuda backend is an error with a message (no_gpu, or unsupported in a
  // build without CUDA); with one, an engine.
  o.backend = FP4JIT_BACKEND_CUDA;
  const fp4jit_status s = fp4jit_engine_create(&o, &e);
  if (s == FP4JIT_OK) {
    fp4jit_engine_destroy(e);
  } else {
    EXPECT_TRUE(s == FP4JIT_ERROR_NO_GPU || s == FP4JIT_ERROR_UNSUPPORTED ||
                s == FP4JIT_ERROR_DRIVER)
        << fp4jit_status_name(s);
    EXPECT_STRNE(fp4jit_last_error(), "");
  }
  fp4jit_engine_destroy(nullptr);
  fp4jit_recipe_destroy(nullptr);
}
}  // namespace
