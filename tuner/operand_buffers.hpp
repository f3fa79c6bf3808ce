// Host memory for one quantized operand of a layout, with the view the Engine takes.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "fp4jit/engine.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit::tuner {

class OperandBuffers {
 public:
  OperandBuffers(const QuantLayout& l, bool occ)
      : codes_(static_cast<std::size_t>(l.code_bytes())),
        scales_(static_cast<std::size_t>(l.scale_count() * (l.scale_is_code ? 1 : 4)) + 4),
        residual_capacity_(occ ? l.rows * l.cols / 8 + 1024 : 0),
        index_(static_cast<std::size_t>(residual_capacity_)),
        value_(static_cast<std::size_t>(residual_capacity_)) {}
  OperandBuffers(const OperandBuffers& o) = default;

  QuantizedView view() {
    QuantizedView v;
    v.codes = codes_.data();
    v.scales = scales_.data();
    v.tensor_scale = &tensor_scale_;
    v.amax = &amax_;
    if (residual_capacity_ > 0) {
      v.residual_index = index_.data();
      v.residual_value = value_.data();
      v.residual_count = &count_;
      v.residual_capacity = residual_capacity_;
    }
    return v;
  }
  std::int64_t bytes() const { return static_cast<std::int64_t>(codes_.size() + scales_.size()); }
  // Codes, scales and tensor scale equal (the parts every backend writes identically).
  // Codes, scales and tensor scale only (the residual count left out).
  // Codes and scales equal, and the tensor scale where the layout has one (two-level operands;
  // no kernel writes it otherwise).
  bool same_values_as(const OperandBuffers& o, bool has_tensor_scale) const {
    return codes_ == o.codes_ && scales_ == o.scales_ &&
           (!has_tensor_scale || std::memcmp(&tensor_scale_, &o.tensor_scale_, sizeof(float)) == 0);
  }
  bool same_as(const OperandBuffers& o) const {
    return codes_ == o.codes_ && scales_ == o.scales_ &&
           std::memcmp(&tensor_scale_, &o.tensor_scale_, sizeof(float)) == 0 && count_ == o.count_;
  }

 private:
  std::vector<std::uint8_t> codes_, scales_;
  float tensor_scale_ = 1.0f, amax_ = 0.0f;
  std::int64_t residual_capacity_ = 0, count_ = 0;
  std::vector<std::int64_t> index_;
  std::vector<float> value_;
};

// Deterministic N(0, 1) values with a per-row scale (rows differ by up to 2^6), as `dtype`.
// Element (r, c) follows from (seed, r, c) alone (Philox4x32-10, Box-Muller), so the rows are
// made on `threads` host threads (0: all) and the values do not depend on their count.
std::vector<std::uint8_t> random_source(std::int64_t rows, std::int64_t cols, DType dtype,
                                        std::uint32_t seed, int threads = 0);

}  // namespace fp4jit::tuner
