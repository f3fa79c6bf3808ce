// The C API's linear step (fp4jit_linear_forward[_weights] /
// fp4jit_linear_backward[_bias|_accumulate|_weights]) on the reference backend: equal to
// quantize_pair + gemm byte for byte, with caller-given or library-owned scratch, the bias
// gradient in its documented order, the weight gradient accumulated into dw, W's copies kept in a
// weights buffer across calls, bad buffers named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fp4jit/fp4jit.h"
#include "tests/capi/capi_util.hpp"

namespace {

using namespace capi_test;

// 256-byte aligned host bytes (the linear step's buffers).
struct AlignedBytes {
  explicit AlignedBytes(int64_t n) : raw(static_cast<size_t>(n) + 256, 0) {
    const auto a = reinterpret_cast<uintptr_t>(raw.data());
    p = raw.data() + ((256 - a % 256) % 256);
  }
  std::vector<uint8_t> raw;
  uint8_t* p;
};

// Column sums in the order fp4jit documents (templates/quantize/column_sums.cuh): 64-row chunks
// of eight interleaved slices, a fixed tree over the slices, a fixed reduce over the chunks.
std::vector<float> fixed_order_column_sums(const std::vector<float>& m, int64_t rows,
                                           int64_t cols) {
  const int64_t chunks = (rows + 63) / 64;
  std::vector<float> out(cols);
  for (int64_t c = 0; c < cols; ++c) {
    std::vector<float> part(chunks);
    for (int64_t k = 0; k < chunks; ++k) {
      float sl[8];
      for (int64_t s = 0; s < 8; ++s) {
        sl[s] = 0.0f;
        for (int64_t j = 0; j < 8; ++j) {
          const int64_t r = 64 * k + 8 * j + s;
          sl[s] += r < rows ? m[r * cols + c] : 0.0f;
        }
      }
      part[k] = ((sl[0] + sl[4]) + (sl[2] + sl[6])) + ((sl[1] + sl[5]) + (sl[3] + sl[7]));
    }
    float sum = 0.0f;
    for (int64_t g = 0; g < 8; ++g) {
      float acc = 0.0f;
      for (int64_t k = g; k < chunks; k += 8) acc += part[k];
      sum += acc;
    }
    out[c] = sum;
  }
  return out;
}

TEST(CApi, LinearStepEqualsPerOperationCalls) {
  for (const char* text : {"nvfp4", "tetrajet"}) {  // SR on dY; double quantization
    SCOPED_TRACE(text);
    Recipe r(text);
    const int64_t t = 64, in = 128, out = 32;
    Matrix x(t, in, 2.0f, 0.3f), w(out, in, 0.5f, 1.1f), dy(t, out, 1.5f, 0.7f);
    std::vector<float> bias(out);
    for (int64_t j = 0; j < out; ++j) bias[j] = 0.25f * static_cast<float>(j) - 3.0f;
    int64_t bias_shape[1] = {out};
    fp4jit_tensor bias_t{bias.data(), FP4JIT_FLOAT32, 1, bias_shape, nullptr, FP4JIT_DEVICE_CPU, 0};
    fp4jit_engine* eng = reference().e;

    // Per operation.
    Quantized qx(r.r, FP4JIT_ROLE_X, t, in), qxt(r.r, FP4JIT_ROLE_XT, t, in);
    Quantized qw(r.r, FP4JIT_ROLE_W, out, in), qwt(r.r, FP4JIT_ROLE_WT, out, in);
    Quantized qdy(r.r, FP4JIT_ROLE_DY, t, out), qdyt(r.r, FP4JIT_ROLE_DYT, t, out);
    fp4jit_quantize_args ax{7, 0, nullptr, nullptr}, aw{8, 0, nullptr, nullptr},
        ady{9, 0, nullptr, nullptr};
    ASSERT_EQ(fp4jit_quantize_pair(eng, r.r, FP4JIT_ROLE_X, &x.t, &qx.q, &qxt.q, &ax, nullptr),
              FP4JIT_OK);
    ASSERT_EQ(fp4jit_quantize_pair(eng, r.r, FP4JIT_ROLE_W, &w.t, &qw.q, &qwt.q, &aw, nullptr),
              FP4JIT_OK);
    ASSERT_EQ(fp4jit_quantize_pair(eng, r.r, FP4JIT_ROLE_DY, &dy.t, &qdy.q, &qdyt.q, &ady, nullptr),
              FP4JIT_OK);
    fp4jit_gemm_epilogue ep;
    fp4jit_gemm_epilogue_init(&ep);
    ep.bias = &bias_t;
    Matrix y_ref(t, out), dx_ref(t, in), dw_ref(out, in);
    ASSERT_EQ(fp4jit_gemm(eng, r.r, FP4JIT_FPROP, &qx.q, &qw.q, t, out, in, &y_ref.t, &ep, nullptr),
              FP4JIT_OK);
    ASSERT_EQ(fp4jit_gemm(eng, r.r, FP4JIT_DGRAD, &qdy.q, &qwt.q, t, in, out, &dx_ref.t, nullptr,
                          nullptr),
              FP4JIT_OK);
    ASSERT_EQ(fp4jit_gemm(eng, r.r, FP4JIT_WGRAD, &qdyt.q, &qxt.q, out, in, t, &dw_ref.t, nullptr,
                          nullptr),
              FP4JIT_OK);

    // One call each way.
    fp4jit_linear_buffers b{};
    ASSERT_EQ(fp4jit_linear_buffers_query(r.r, t, in, out, &b), FP4JIT_OK) << fp4jit_last_error();
    EXPECT_GE(b.saved_bytes, qxt.l.code_bytes + qwt.l.code_bytes);
    AlignedBytes saved(b.saved_bytes), fwd(b.forward_scratch_bytes), bwd(b.backward_scratch_bytes);
    Matrix y(t, out), dx(t, in), dw(out, in);
    ASSERT_EQ(
        fp4jit_linear_forward(eng, r.r, &x.t, &w.t, &bias_t, &y.t, 7, 8, saved.p, fwd.p, nullptr),
        FP4JIT_OK)
        << fp4jit_last_error();
    ASSERT_EQ(fp4jit_linear_backward(eng, r.r, in, &dy.t, saved.p, bwd.p, &dx.t, &dw.t, 9, nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();
    EXPECT_EQ(y.data, y_ref.data);
    EXPECT_EQ(dx.data, dx_ref.data);
    EXPECT_EQ(dw.data, dw_ref.data);
    // With the bias gradient: dY's column sums in the fixed order, the gradients unchanged.
    std::vector<float> db(out, -1.0f);
    fp4jit_tensor db_t{db.data(), FP4JIT_FLOAT32, 1, bias_shape, nullptr, FP4JIT_DEVICE_CPU, 0};
    Matrix dx2(t, in), dw2(out, in);
    ASSERT_EQ(fp4jit_linear_backward_bias(eng, r.r, in, &dy.t, saved.p, bwd.p, &dx2.t, &dw2.t,
                                          &db_t, 9, nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();
    EXPECT_EQ(dx2.data, dx_ref.data);
    EXPECT_EQ(dw2.data, dw_ref.data);
    EXPECT_EQ(db, fixed_order_column_sums(dy.data, t, out));
    // Accumulated into dw by the wgrad GEMM's epilogue: the wgrad of fp4jit_gemm with beta * C
    // (C the output itself) bit for bit, dx and db as without it.
    for (const float beta : {1.0f, -2.0f}) {
      Matrix dw4(out, in, 3.0f, 0.7f), dx4(t, in), want(out, in, 3.0f, 0.7f);
      std::vector<float> db4(out, -1.0f);
      fp4jit_tensor db4_t{db4.data(), FP4JIT_FLOAT32, 1, bias_shape, nullptr, FP4JIT_DEVICE_CPU, 0};
      ASSERT_EQ(fp4jit_linear_backward_accumulate(eng, r.r, in, &dy.t, saved.p, bwd.p, &dx4.t,
                                                  &dw4.t, &db4_t, beta, 9, nullptr),
                FP4JIT_OK)
          << fp4jit_last_error();
      fp4jit_gemm_epilogue acc;
      fp4jit_gemm_epilogue_init(&acc);
      acc.beta = beta;
      acc.c = &want.t;
      ASSERT_EQ(
          fp4jit_gemm(eng, r.r, FP4JIT_WGRAD, &qdyt.q, &qxt.q, out, in, t, &want.t, &acc, nullptr),
          FP4JIT_OK)
          << fp4jit_last_error();
      EXPECT_NE(want.data, dw_ref.data);  // C took part
      EXPECT_EQ(dw4.data, want.data) << "dw_beta " << beta;
      EXPECT_EQ(dx4.data, dx_ref.data);
      EXPECT_EQ(db4, db);
    }
    expect_error(fp4jit_linear_backward_accumulate(eng, r.r, in, &dy.t, saved.p, bwd.p, &dx2.t,
                                                   nullptr, nullptr, 1.0f, 9, nullptr),
                 FP4JIT_ERROR_INVALID_ARGUMENT, "no dw is given");
    expect_error(fp4jit_linear_backward_accumulate(eng, r.r, in, &dy.t, saved.p, bwd.p, &dx2.t,
                                                   &dw2.t, nullptr, NAN, 9, nullptr),
                 FP4JIT_ERROR_INVALID_ARGUMENT, "dw_beta must be finite");
    // No scratch given: the library's own for the call, the same results.
    Matrix y3(t, out), dx3(t, in), dw3(out, in);
    std::vector<float> db3(out, -1.0f);
    fp4jit_tensor db3_t{db3.data(), FP4JIT_FLOAT32, 1, bias_shape, nullptr, FP4JIT_DEVICE_CPU, 0};
    AlignedBytes saved3(b.saved_bytes);
    ASSERT_EQ(fp4jit_linear_forward(eng, r.r, &x.t, &w.t, &bias_t, &y3.t, 7, 8, saved3.p, nullptr,
                                    nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();
    ASSERT_EQ(fp4jit_linear_backward_bias(eng, r.r, in, &dy.t, saved3.p, nullptr, &dx3.t, &dw3.t,
                                          &db3_t, 9, nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();
    EXPECT_EQ(y3.data, y_ref.data);
    EXPECT_EQ(dx3.data, dx_ref.data);
    EXPECT_EQ(dw3.data, dw_ref.data);
    EXPECT_EQ(db3, db);
    int64_t short_shape[1] = {out - 1};
    fp4jit_tensor db_short{db.data(), FP4JIT_FLOAT32,    1, short_shape,
                           nullptr,   FP4JIT_DEVICE_CPU, 0};
    expect_error(fp4jit_linear_backward_bias(eng, r.r, in, &dy.t, saved.p, bwd.p, &dx2.t, nullptr,
                                             &db_short, 9, nullptr),
                 FP4JIT_ERROR_INVALID_ARGUMENT, "bias gradient dB: must be a contiguous vector");

    // Bad buffers and shapes, named.
    expect_error(fp4jit_linear_forward(eng, r.r, &x.t, &w.t, nullptr, &y.t, 7, 8, saved.p,
                                       fwd.p + 16, nullptr),
                 FP4JIT_ERROR_INVALID_ARGUMENT, "256-byte aligned");
    expect_error(
        fp4jit_linear_backward(eng, r.r, in, &dy.t, saved.p, bwd.p, nullptr, nullptr, 9, nullptr),
        FP4JIT_ERROR_INVALID_ARGUMENT, "neither dx nor dw");
    expect_error(
        fp4jit_linear_forward(eng, r.r, &x.t, &w.t, nullptr, &dx.t, 7, 8, saved.p, fwd.p, nullptr),
        FP4JIT_ERROR_INVALID_ARGUMENT, "output");
  }
  fp4jit_linear_buffers b{};
  Recipe ms("msfp4");
  expect_error(fp4jit_linear_buffers_query(ms.r, 64, 128, 32, &b), FP4JIT_ERROR_UNSUPPORTED, "OCC");
}

// W quantized once into a caller's `weights` buffer and read from there by later forwards and
// every backward: the same bytes as the step without it; a later forward does not read W; the
// saved buffer's part past X^T is left alone.
TEST(CApi, LinearStepWithWeightsKept) {
  for (const char* text : {"nvfp4", "tetrajet", "mxfp4"}) {
    SCOPED_TRACE(text);
    Recipe r(text);
    const int64_t t = 64, in = 128, out = 32;
    Matrix x(t, in, 2.0f, 0.3f), w(out, in, 0.5f, 1.1f), dy(t, out, 1.5f, 0.7f);
    Matrix other_w(out, in, 3.0f, 0.2f);  // what a later forward is given and must not read
    fp4jit_engine* eng = reference().e;
    fp4jit_linear_buffers b{};
    ASSERT_EQ(fp4jit_linear_buffers_query(r.r, t, in, out, &b), FP4JIT_OK) << fp4jit_last_error();
    int64_t saved_x = 0, weight_bytes = 0;
    ASSERT_EQ(fp4jit_linear_weights_query(r.r, t, in, out, &saved_x, &weight_bytes), FP4JIT_OK)
        << fp4jit_last_error();
    Quantized qxt(r.r, FP4JIT_ROLE_XT, t, in), qw(r.r, FP4JIT_ROLE_W, out, in),
        qwt(r.r, FP4JIT_ROLE_WT, out, in);
    EXPECT_GE(saved_x, qxt.l.code_bytes);
    EXPECT_LE(saved_x + qwt.l.code_bytes, b.saved_bytes);
    EXPECT_GE(weight_bytes, qw.l.code_bytes + qwt.l.code_bytes);

    // The step without the weights buffer: what every call below must give.
    AlignedBytes saved(b.saved_bytes);
    Matrix y_ref(t, out), dx_ref(t, in), dw_ref(out, in);
    ASSERT_EQ(fp4jit_linear_forward(eng, r.r, &x.t, &w.t, nullptr, &y_ref.t, 7, 8, saved.p, nullptr,
                                    nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();
    ASSERT_EQ(fp4jit_linear_backward(eng, r.r, in, &dy.t, saved.p, nullptr, &dx_ref.t, &dw_ref.t, 9,
                                     nullptr),
              FP4JIT_OK)
        << fp4jit_last_error();

    AlignedBytes weights(weight_bytes), saved_w(b.saved_bytes);
    std::fill(saved_w.p + saved_x, saved_w.p + b.saved_bytes, uint8_t{0xA5});
    for (int call = 0; call < 3; ++call) {
      SCOPED_TRACE(call);
      // 0: W quantized into `weights` (no backward follows: both copies all the same);
      // 1, 2: read from there, W's data not read (other_w's would change every result).
      const bool first = call == 0;
      Matrix y(t, out), dx(t, in), dw(out, in, 1.0f, 0.5f);
      ASSERT_EQ(fp4jit_linear_forward_weights(eng, r.r, &x.t, first ? &w.t : &other_w.t, nullptr,
                                              &y.t, 7, first ? 8 : 99, first ? nullptr : saved_w.p,
                                              nullptr, weights.p, first ? 1 : 0, nullptr),
                FP4JIT_OK)
          << fp4jit_last_error();
      EXPECT_EQ(y.data, y_ref.data);
      if (first) continue;
      ASSERT_EQ(fp4jit_linear_backward_weights(eng, r.r, in, &dy.t, saved_w.p, weights.p, nullptr,
                                               &dx.t, &dw.t, nullptr, 0.0f, 9, nullptr),
                FP4JIT_OK)
          << fp4jit_last_error();
      EXPECT_EQ(dx.data, dx_ref.data);
      EXPECT_EQ(dw.data, dw_ref.data);
      for (int64_t i = saved_x; i < b.saved_bytes; ++i)
        ASSERT_EQ(saved_w.p[i], 0xA5) << "saved byte " << i << " of " << b.saved_bytes;
    }
    Matrix y(t, out);
    expect_error(fp4jit_linear_forward_weights(eng, r.r, &x.t, &w.t, nullptr, &y.t, 7, 8, saved_w.p,
                                               nullptr, weights.p + 16, 1, nullptr),
                 FP4JIT_ERROR_INVALID_ARGUMENT, "weights buffer");
    expect_error(fp4jit_linear_weights_query(r.r, t, in, out, nullptr, &weight_bytes),
                 FP4JIT_ERROR_INVALID_ARGUMENT, "saved bytes");
  }
}

}  // namespace
