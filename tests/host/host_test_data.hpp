// Inputs and comparisons shared by the backend tests (host_test_util.hpp) and the quantize fuzz
// targets: random and adversarial tensors in every input dtype, owned quantized buffers (poisoned
// before use), and byte-exact comparison with the reference's QuantizedTensor.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/matrix.hpp"
#include "core/quantized.hpp"
#include "core/sha256.hpp"
#include "fp4jit/engine.hpp"
#include "numerics/common.cuh"
#include "numerics/minifloat.cuh"
#include "reference/reference.hpp"

namespace fp4jit::host::test {

// Gaussian rows of very different magnitude (2^u, |u| <= 4).
inline Matrix<float> random_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-4.0f, 4.0f);
  Matrix<float> m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float s = std::exp2(log_scale(gen));
    for (std::int64_t c = 0; c < cols; ++c) m(r, c) = normal(gen) * s;
  }
  return m;
}

// Adversarial values, in runs of 16 along each row (a block of most recipes): exact E2M1 ties
// under power-of-two scales, all-zero runs with signed zeros, subnormals, huge values near
// FLT_MAX, NaN / Inf, one outlier per run, and ties of the FP8 grids.
inline Matrix<float> adversarial_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 15);
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f,   3.5f, 5.0f,  6.0f,
                        0.5f,  1.0f,  4.0f,  3.0f,  0.125f, 5.5f, 2.25f, 0.0f};
  Matrix<float> m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const int run = static_cast<int>(((r * 7 + c / 16) + seed) % 9);
      const int j = pick(gen);
      const float sign = (gen() & 1u) ? -1.0f : 1.0f;
      float v = 0.0f;
      switch (run) {
        case 0:
          v = sign * ties[j] * std::exp2(static_cast<float>(static_cast<int>(r % 11) - 5));
          break;
        case 1:
          v = (gen() & 1u) ? -0.0f : 0.0f;
          break;
        case 2:
          v = sign * nx::bits_float(1u + static_cast<std::uint32_t>(gen() % 0x007fffffu));
          break;
        case 3:
          v = sign * 3.0e38f * (0.5f + 0.5f * static_cast<float>(j) / 15.0f);
          break;
        case 4:
          v = j == 3 ? NAN : (j == 7 ? sign * INFINITY : sign * ties[j]);
          break;
        case 5:
          v = (c % 16 == static_cast<std::int64_t>(r % 16)) ? sign * 1000.0f
                                                            : sign * ties[j] * 0.01f;
          break;
        case 6:
          v = sign * (1.0f + static_cast<float>(j) / 16.0f) * std::exp2(static_cast<float>(j - 8));
          break;  // FP8 ties
        case 7:
          v = sign * nx::bits_float(0x00800000u + static_cast<std::uint32_t>(gen() % 0x00800000u));
          break;  // tiny normals
        default:
          v = sign * ties[j];
          break;
      }
      m(r, c) = v;
    }
  }
  return m;
}

// A host tensor of dtype d holding m rounded to d (the values the reference then sees exactly).
struct HostTensor {
  DType dtype;
  std::int64_t rows, cols;
  std::vector<std::uint8_t> bytes;
  TensorView view() { return TensorView{bytes.data(), dtype, rows, cols, 0}; }
};

inline HostTensor make_tensor(const Matrix<float>& m, DType d) {
  HostTensor t{d, m.rows, m.cols,
               std::vector<std::uint8_t>(static_cast<std::size_t>(m.size() * dtype_size(d)))};
  const nx::MiniFloat half{5, 10, 15, true, nx::Special::ieee};
  for (std::int64_t i = 0; i < m.size(); ++i) {
    const float v = m.data[static_cast<std::size_t>(i)];
    if (d == DType::f32) {
      std::memcpy(t.bytes.data() + 4 * i, &v, 4);
    } else {
      const auto h = static_cast<std::uint16_t>(
          d == DType::bf16 ? nx::float_to_bf16(v) : nx::mf_encode(half, v, nx::Round::even, false));
      std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    }
  }
  return t;
}

inline Matrix<float> values_of(const HostTensor& t) {
  Matrix<float> m(t.rows, t.cols);
  for (std::int64_t i = 0; i < m.size(); ++i) {
    std::uint16_t h = 0;
    if (t.dtype == DType::f32)
      std::memcpy(&m.data[static_cast<std::size_t>(i)], t.bytes.data() + 4 * i, 4);
    else {
      std::memcpy(&h, t.bytes.data() + 2 * i, 2);
      m.data[static_cast<std::size_t>(i)] =
          t.dtype == DType::bf16 ? nx::bf16_to_float(h) : nx::f16_to_float(h);
    }
  }
  return m;
}

// Quantized output buffers, poisoned so that any byte a kernel fails to write shows.
struct Buffers {
  QuantLayout layout;
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
  float tensor_scale = -7.0f, amax = -7.0f;
  std::vector<std::int64_t> residual_index;
  std::vector<float> residual_value;
  std::int64_t residual_count = -1;

  explicit Buffers(const QuantLayout& l)
      : layout(l),
        codes(static_cast<std::size_t>(l.code_bytes()), 0xA5),
        scales(static_cast<std::size_t>(l.scale_count()), nx::bits_float(0xA5A5A5A5u)),
        residual_index(static_cast<std::size_t>(l.rows * l.cols), -3),
        residual_value(static_cast<std::size_t>(l.rows * l.cols), -3.0f) {}
  QuantizedView view() {
    QuantizedView v;
    v.codes = codes.data();
    v.scales = scales.data();
    v.tensor_scale = &tensor_scale;
    v.amax = &amax;
    v.residual_index = residual_index.data();
    v.residual_value = residual_value.data();
    v.residual_count = &residual_count;
    v.residual_capacity = static_cast<std::int64_t>(residual_index.size());
    return v;
  }
};

inline std::uint32_t fbits(float x) {
  return nx::float_bits(x);
}

// Byte-exact comparison; returns an empty string when equal.
inline std::string compare(const QuantizedTensor& ref, const Buffers& got) {
  for (std::size_t i = 0; i < ref.codes.size(); ++i)
    if (ref.codes[i] != got.codes[i])
      return "code byte " + std::to_string(i) + " (row " +
             std::to_string(static_cast<std::int64_t>(i) / ref.layout.row_bytes) + "): ref " +
             std::to_string(ref.codes[i]) + " host " + std::to_string(got.codes[i]);
  const auto* scale_bytes = reinterpret_cast<const std::uint8_t*>(got.scales.data());
  if (ref.layout.scale_is_code) {
    for (std::size_t i = 0; i < ref.scale_codes.size(); ++i)
      if (ref.scale_codes[i] != scale_bytes[i])
        return "scale code " + std::to_string(i) + ": ref " + std::to_string(ref.scale_codes[i]) +
               " host " + std::to_string(scale_bytes[i]);
  } else {
    for (std::size_t i = 0; i < ref.scale_values.size(); ++i)
      if (fbits(ref.scale_values[i]) != fbits(got.scales[i]))
        return "scale value " + std::to_string(i) + ": ref " + std::to_string(ref.scale_values[i]) +
               " host " + std::to_string(got.scales[i]);
  }
  if (fbits(ref.tensor_scale) != fbits(got.tensor_scale))
    return "tensor scale: ref " + std::to_string(ref.tensor_scale) + " host " +
           std::to_string(got.tensor_scale);
  if (fbits(ref.amax) != fbits(got.amax))
    return "amax: ref " + std::to_string(ref.amax) + " host " + std::to_string(got.amax);
  if (static_cast<std::int64_t>(ref.residual_index.size()) != got.residual_count)
    return "residual count: ref " + std::to_string(ref.residual_index.size()) + " host " +
           std::to_string(got.residual_count);
  for (std::size_t i = 0; i < ref.residual_index.size(); ++i)
    if (ref.residual_index[i] != got.residual_index[i] ||
        fbits(ref.residual_value[i]) != fbits(got.residual_value[i]))
      return "residual " + std::to_string(i) + ": ref (" + std::to_string(ref.residual_index[i]) +
             ", " + std::to_string(ref.residual_value[i]) + ") host (" +
             std::to_string(got.residual_index[i]) + ", " + std::to_string(got.residual_value[i]) +
             ")";
  return {};
}

// The source shape of an operand with `rows` operand rows and K = k.
inline std::pair<std::int64_t, std::int64_t> source_shape(Role role, std::int64_t rows,
                                                          std::int64_t k) {
  return role_info(role).transposed ? std::pair{k, rows} : std::pair{rows, k};
}

}  // namespace fp4jit::host::test
