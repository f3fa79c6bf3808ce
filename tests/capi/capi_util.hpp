// What the C API tests share: RAII recipes and engines (the reference and host backends), a
// float32 matrix as an fp4jit_tensor, host buffers sized by fp4jit_layout_query, and checks of
// equal results and of an error's status and message.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fp4jit/fp4jit.h"

namespace capi_test {

struct Recipe {
  fp4jit_recipe* r = nullptr;
  explicit Recipe(const char* text) {
    const fp4jit_status s = fp4jit_recipe_parse(text, &r);
    EXPECT_EQ(s, FP4JIT_OK) << fp4jit_last_error();
  }
  ~Recipe() { fp4jit_recipe_destroy(r); }
};

struct Engine {
  fp4jit_engine* e = nullptr;
  explicit Engine(fp4jit_backend b) {
    fp4jit_engine_options o;
    fp4jit_engine_options_init(&o);
    o.backend = b;
    o.use_cache = 0;
    const fp4jit_status s = fp4jit_engine_create(&o, &e);
    EXPECT_EQ(s, FP4JIT_OK) << fp4jit_last_error();
  }
  ~Engine() { fp4jit_engine_destroy(e); }
};

inline Engine& reference() {
  static Engine e(FP4JIT_BACKEND_REFERENCE);
  return e;
}
inline Engine& host() {
  static Engine e(FP4JIT_BACKEND_HOST);
  return e;
}

// A float32 matrix with its shape, as an fp4jit_tensor.
struct Matrix {
  std::vector<float> data;
  int64_t shape[2];
  fp4jit_tensor t{};
  Matrix(int64_t rows, int64_t cols, float scale = 1.0f, float phase = 0.1f)
      : data(static_cast<size_t>(rows * cols)), shape{rows, cols} {
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = scale * std::sin(0.37f * static_cast<float>(i) + phase) *
                (i % 29 == 0 ? 9.0f : 1.0f);  // a few outliers for OCC
    t = fp4jit_tensor{data.data(), FP4JIT_FLOAT32, 2, shape, nullptr, FP4JIT_DEVICE_CPU, 0};
  }
};

// Host buffers sized from fp4jit_layout_query.
struct Quantized {
  fp4jit_layout l{};
  std::vector<uint8_t> codes;
  std::vector<float> scales;  // float storage: aligned for both code and float32 scales
  float tensor_scale = 0, amax = 0;
  std::vector<int64_t> index;
  std::vector<float> value;
  int64_t count = -1;
  fp4jit_quantized q{};

  Quantized(const fp4jit_recipe* r, fp4jit_role role, int64_t rows, int64_t cols) {
    EXPECT_EQ(fp4jit_layout_query(r, role, rows, cols, &l), FP4JIT_OK) << fp4jit_last_error();
    codes.assign(static_cast<size_t>(l.code_bytes), 0xA5);
    scales.assign(static_cast<size_t>((l.scale_bytes + 3) / 4), -1.0f);
    index.resize(static_cast<size_t>(l.residual_capacity));
    value.resize(static_cast<size_t>(l.residual_capacity));
    q = fp4jit_quantized{
        codes.data(), l.code_bytes, scales.data(), l.scale_bytes, &tensor_scale,
        &amax,        index.data(), value.data(),  &count,        l.residual_capacity};
  }
  std::vector<uint8_t> scale_bytes() const {
    std::vector<uint8_t> out(static_cast<size_t>(l.scale_bytes));
    std::memcpy(out.data(), scales.data(), out.size());
    return out;
  }
};

inline void expect_same(const Quantized& a, const Quantized& b, const std::string& what) {
  EXPECT_EQ(a.codes, b.codes) << what << ": codes";
  EXPECT_EQ(a.scale_bytes(), b.scale_bytes()) << what << ": scales";
  if (a.l.two_level) {
    EXPECT_EQ(a.tensor_scale, b.tensor_scale) << what << ": tensor scale";
  }
  if (a.l.occ) {
    ASSERT_EQ(a.count, b.count) << what << ": residual count";
    EXPECT_GT(a.count, 0) << what;
    for (int64_t i = 0; i < a.count; ++i) {
      EXPECT_EQ(a.index[i], b.index[i]) << what << ": residual " << i;
      EXPECT_EQ(a.value[i], b.value[i]) << what << ": residual " << i;
    }
  }
}

// Expects `status` to be `expected` with a message containing `needle`.
inline void expect_error(fp4jit_status status, fp4jit_status expected, const std::string& needle) {
  EXPECT_EQ(status, expected) << fp4jit_status_name(status) << ": " << fp4jit_last_error();
  const std::string message = fp4jit_last_error();
  EXPECT_NE(message.find(needle), std::string::npos)
      << "message '" << message << "' does not mention '" << needle << "'";
}

}  // namespace capi_test
