#include "tests/gpu/quant_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "numerics/common.cuh"
#include "numerics/minifloat.cuh"
#include "reference/reference.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit::test {

namespace {

std::uint16_t to_f16(float v) {
  const nx::MiniFloat half{5, 10, 15, true, nx::Special::ieee};
  return static_cast<std::uint16_t>(nx::mf_encode(half, v, nx::Round::even, false));
}

float adversarial_value(std::int64_t r, std::int64_t c, std::mt19937& gen, bool signed_zeros) {
  std::uniform_int_distribution<int> pick(0, 9);
  const std::int64_t block = c / 16;
  switch ((r * 7 + block) % 8) {
    case 0:
      return static_cast<float>((c % 13) - 6) * 0.25f;  // grid points and midpoints
    case 1:
      return signed_zeros && (c % 3 == 0) ? -0.0f : 0.0f;  // a zero block
    case 2:
      return (c % 2 ? -1.0f : 1.0f) *
             std::ldexp(1.0f + static_cast<float>(c % 5), -140);  // subnormal
    case 3:
      return (c % 2 ? -3.0e38f : 1.0e38f) / static_cast<float>(1 + c % 7);  // huge
    case 4: {
      const int p = pick(gen);
      if (p == 0) return std::nanf("");
      if (p == 1) return c % 2 ? -INFINITY : INFINITY;
      return std::ldexp(static_cast<float>(pick(gen)) - 4.5f, -3);
    }
    case 5:
      return (c % 16 == 5 ? 1000.0f : 1.0f) *
             std::ldexp(static_cast<float>(pick(gen)) - 4.0f, -2);  // outlier
    case 6:
      return std::ldexp(1.0f, static_cast<int>(c % 20) - 10) *
             (c % 3 == 0 ? -1.0f : 1.0f);  // powers of two
    default:
      return std::normal_distribution<float>(0.0f, 1.0f)(gen);
  }
}

}  // namespace

const char* input_kind_name(InputKind k) {
  return k == InputKind::random ? "random" : "adversarial";
}

TensorView HostInput::view() {
  return TensorView{bytes.data(), dtype, rows, cols, 0};
}

void set_value(HostInput& in, std::int64_t r, std::int64_t c, float v) {
  const std::int64_t i = r * in.cols + c;
  switch (in.dtype) {
    case DType::f32:
      std::memcpy(&in.bytes[i * 4], &v, 4);
      break;
    case DType::bf16: {
      const std::uint16_t h = nx::float_to_bf16(v);
      std::memcpy(&in.bytes[i * 2], &h, 2);
      v = nx::bf16_to_float(h);
      break;
    }
    case DType::f16: {
      const std::uint16_t h = to_f16(v);
      std::memcpy(&in.bytes[i * 2], &h, 2);
      v = nx::f16_to_float(h);
      break;
    }
  }
  in.values(r, c) = v;  // as the kernels read it (a NaN's payload as the type keeps it)
}

HostInput make_input(InputKind kind, DType dtype, std::int64_t rows, std::int64_t cols,
                     std::uint32_t seed, bool signed_zeros) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> spread(-4.0f, 4.0f);
  HostInput in;
  in.dtype = dtype;
  in.rows = rows;
  in.cols = cols;
  in.bytes.resize(static_cast<std::size_t>(rows * cols * dtype_size(dtype)));
  in.values = Matrix<float>(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float scale = std::exp2(spread(gen));
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = kind == InputKind::random ? normal(gen) * scale
                                                : adversarial_value(r, c, gen, signed_zeros);
      set_value(in, r, c, v);
      // -0 from rounding a tiny negative
      if (!signed_zeros && in.values(r, c) == 0.0f && std::signbit(in.values(r, c)))
        set_value(in, r, c, 0.0f);
    }
  }
  return in;
}

HostOperand::HostOperand(const QuantLayout& l, std::int64_t capacity) : layout(l) {
  codes.assign(static_cast<std::size_t>(l.code_bytes()), kPoison);
  scales.assign(static_cast<std::size_t>(l.scale_count() * (l.scale_is_code ? 1 : 4)), kPoison);
  std::memset(tensor_scale.data(), kPoison, 4);
  std::memset(amax.data(), kPoison, 4);
  residual_index.assign(static_cast<std::size_t>(capacity), -1);
  residual_value.assign(static_cast<std::size_t>(capacity), NAN);
  residual_count[0] = -1;
}

QuantizedView HostOperand::view() {
  QuantizedView v;
  v.codes = codes.data();
  v.scales = scales.data();
  v.tensor_scale = tensor_scale.data();
  v.amax = amax.data();
  v.residual_index = residual_index.data();
  v.residual_value = residual_value.data();
  v.residual_count = residual_count.data();
  v.residual_capacity = static_cast<std::int64_t>(residual_index.size());
  return v;
}

std::string compare(const QuantizedTensor& ref, const HostOperand& got, bool occ) {
  const QuantLayout& l = ref.layout;
  for (std::int64_t i = 0; i < l.code_bytes(); ++i)
    if (ref.codes[i] != got.codes[i])
      return fmt::format(
          "codes differ at byte {} (row {}, elements {}..): expected {:#04x}, got {:#04x}", i,
          i / l.row_bytes, (i % l.row_bytes) * (l.row_bytes == l.cols ? 1 : 2), ref.codes[i],
          got.codes[i]);
  if (l.scale_is_code) {
    for (std::int64_t i = 0; i < l.scale_count(); ++i)
      if (ref.scale_codes[i] != got.scales[i])
        return fmt::format(
            "scale code {} (block row {}, col {}) differs: expected {:#04x}, got {:#04x}", i,
            i / l.scale_cols, i % l.scale_cols, ref.scale_codes[i], got.scales[i]);
  } else {
    for (std::int64_t i = 0; i < l.scale_count(); ++i) {
      std::uint32_t a, b;
      std::memcpy(&a, &ref.scale_values[i], 4);
      std::memcpy(&b, &got.scales[i * 4], 4);
      if (a != b)
        return fmt::format("fp32 scale {} differs: expected {:#010x}, got {:#010x}", i, a, b);
    }
  }
  std::uint32_t a, b;
  if (l.two_level) {
    std::memcpy(&a, &ref.tensor_scale, 4);
    std::memcpy(&b, got.tensor_scale.data(), 4);
    if (a != b) return fmt::format("tensor scale differs: expected {:#010x}, got {:#010x}", a, b);
  }
  std::memcpy(&a, &ref.amax, 4);
  std::memcpy(&b, got.amax.data(), 4);
  if (a != b)
    return fmt::format("amax differs: expected {:#010x} ({}), got {:#010x}", a, ref.amax, b);
  const auto n = static_cast<std::int64_t>(ref.residual_index.size());
  if (occ || got.residual_count[0] != -1) {
    if (got.residual_count[0] != n)
      return fmt::format("residual count: expected {}, got {}", n, got.residual_count[0]);
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint32_t va, vb;
      std::memcpy(&va, &ref.residual_value[i], 4);
      std::memcpy(&vb, &got.residual_value[i], 4);
      if (ref.residual_index[i] != got.residual_index[i] || va != vb)
        return fmt::format("residual entry {}: expected ({}, {:#010x}), got ({}, {:#010x})", i,
                           ref.residual_index[i], va, got.residual_index[i], vb);
    }
  }
  return {};
}

std::int64_t k_multiple(const Recipe& recipe, Role role) {
  const OperandSpec& s = recipe[role];
  std::int64_t m = s.elem == ElemFormat::e2m1 ? 2 : 1;
  if (s.block.kind == Block::Kind::tile) m = std::lcm(m, static_cast<std::int64_t>(s.block.cols));
  if (s.had.size != 0) m = std::lcm(m, static_cast<std::int64_t>(s.had.size));
  return m;
}

Shape shape_for(const Recipe& recipe, Role role, std::int64_t free_dim, std::int64_t min_k) {
  std::int64_t k = k_multiple(recipe, role);
  // The forward copy of a double-quantized operand needs its own K (the source's columns).
  if (recipe[role].src == Source::requant) {
    const std::int64_t f = k_multiple(recipe, role_info(role).forward);
    free_dim = (free_dim + f - 1) / f * f;
  }
  const std::int64_t kk = (min_k + k - 1) / k * k;
  if (role_info(role).transposed) return {kk, free_dim};
  return {free_dim, kk};
}

std::string compare_runs(const HostOperand& want, const HostOperand& got) {
  const auto first = [](const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
    const auto d = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    return static_cast<std::size_t>(d.first - a.begin());
  };
  if (want.codes != got.codes)
    return fmt::format("codes differ at byte {}", first(want.codes, got.codes));
  if (want.scales != got.scales)
    return fmt::format("scales differ at byte {}", first(want.scales, got.scales));
  if (std::memcmp(want.tensor_scale.data(), got.tensor_scale.data(), 4) != 0)
    return fmt::format("tensor scales differ: {} and {}", want.tensor_scale[0],
                       got.tensor_scale[0]);
  return "";
}

std::string compare_column_sums(const Matrix<float>& values, const std::vector<std::uint8_t>& got,
                                DType dtype) {
  const std::vector<float> ref = reference::column_sums(values);
  Matrix<float> want(1, values.cols);
  want.data = ref;
  std::vector<std::uint8_t> want_bytes(got.size());
  from_matrix(want, TensorView{want_bytes.data(), dtype, 1, values.cols, 0});
  const Matrix<float> g =
      to_matrix(TensorView{const_cast<std::uint8_t*>(got.data()), dtype, 1, values.cols, 0});
  const Matrix<float> w = to_matrix(TensorView{want_bytes.data(), dtype, 1, values.cols, 0});
  for (std::int64_t c = 0; c < values.cols; ++c) {
    const bool both_nan = std::isnan(g(0, c)) && std::isnan(w(0, c));
    std::uint32_t gb, wb;
    std::memcpy(&gb, &g.data[c], 4);
    std::memcpy(&wb, &w.data[c], 4);
    if (!both_nan && gb != wb)
      return fmt::format("column {}: got {} ({:08x}), reference {} ({:08x})", c, g(0, c), gb,
                         w(0, c), wb);
  }
  return "";
}

std::string test_name(std::string text) {
  for (char& ch : text)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return text;
}

}  // namespace fp4jit::test
