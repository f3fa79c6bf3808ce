// The problem half of the tuning jobs, shared by every backend: what is tuned (one GEMM of one
// shape, or one quantized operand of one source shape), its cache key, label and work measure.
// A backend's job adds the candidates, the inputs, verification and timing.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/names.hpp"
#include "runtime/tuning_keys.hpp"
#include "tuner/operand_buffers.hpp"
#include "tuner/tuner.hpp"

namespace fp4jit::tuner {

// The candidates of a backend's space (entries with a `candidate` member), in the space's order.
template <class Space>
std::vector<Candidate> candidates_of(const Space& space) {
  std::vector<Candidate> out;
  out.reserve(space.size());
  for (const auto& entry : space) out.push_back(entry.candidate);
  return out;
}

// The entry of `space` that candidate `c` came from.
template <class Space>
const typename Space::value_type& entry_of(const Space& space, const Candidate& c) {
  for (const auto& entry : space)
    if (entry.candidate.config == c.config) return entry;
  fail(ErrorKind::internal, "candidate {} is not in its space", c.config);
}

class GemmProblemJob : public TuneJob {
 public:
  TuningKey key() const override {
    return gemm_tuning_key(identity(), recipe_, op_, shape_, out_text());
  }
  std::string label() const override {
    return fmt::format("{} {}", name(op_), gemm_shape_text(shape_));
  }
  double work() const override {  // FLOPs
    return 2.0 * static_cast<double>(shape_.m) * static_cast<double>(shape_.n) *
           static_cast<double>(shape_.k);
  }
  std::string unit() const override { return "TFLOP/s"; }

 protected:
  // The BF16 tensors A and B are quantized from, random with fixed seeds, and their shapes.
  struct Sources {
    OperandShape a, b;
    std::vector<std::uint8_t> xa, xb;
  };
  Sources make_sources() const {
    Sources s{gemm_source_shape(roles_.a, shape_.m, shape_.k),
              gemm_source_shape(roles_.b, shape_.n, shape_.k),
              {},
              {}};
    s.xa = random_source(s.a.rows, s.a.cols, DType::bf16, 11);
    s.xb = random_source(s.b.rows, s.b.cols, DType::bf16, 12);
    return s;
  }

  GemmProblemJob(const Recipe& recipe, GemmOp op, const GemmShape& shape)
      : recipe_(recipe),
        op_(op),
        shape_(shape),
        roles_(gemm_roles(op)),
        layouts_(gemm_layouts(recipe, op, shape)) {}
  // The device the tunings are kept for, and the output type in the key ("" when the backend's
  // kernels do not depend on it).
  virtual const DeviceIdentity& identity() const = 0;
  virtual std::string out_text() const { return ""; }

  Recipe recipe_;
  GemmOp op_;
  GemmShape shape_;
  GemmRoles roles_;
  GemmLayouts layouts_;
};

// One operand, or with `pair` the operand (x, w or dy) and its transposed copy from one read of
// the source (quantize_pair).
class QuantizeProblemJob : public TuneJob {
 public:
  TuningKey key() const override {
    return quantize_tuning_key(identity(), recipe_, role_, rows_, cols_, in_, pair_);
  }
  std::string label() const override {
    if (pair_)
      return fmt::format("quantize {}+{} {}x{}", name(role_), name(transposed_copy(role_)), rows_,
                         cols_);
    return fmt::format("quantize {} {}x{}", name(role_), rows_, cols_);
  }
  double work() const override {  // bytes read and written
    const auto written = [](const QuantLayout& l) {
      return l.code_bytes() + l.scale_count() * (l.scale_is_code ? 1 : 4);
    };
    return static_cast<double>(rows_ * cols_ * dtype_size(in_) + written(layout_) +
                               (pair_ ? written(layout_t_) : 0));
  }
  std::string unit() const override { return "GB/s"; }

 protected:
  // The source tensor, random with a fixed seed.
  std::vector<std::uint8_t> make_source() const { return random_source(rows_, cols_, in_, 21); }
  // What the reference backend makes of `source` for `role` (the job's or, for a pair, its
  // transposed copy): the result every candidate must match.
  std::unique_ptr<OperandBuffers> reference_result(const std::vector<std::uint8_t>& source,
                                                   Role role) const {
    const QuantLayout& l = role == role_ ? layout_ : layout_t_;
    auto expected = std::make_unique<OperandBuffers>(l, recipe_[role].occ);
    EngineOptions o;
    o.backend = BackendKind::reference;
    Engine ref(o);
    ref.quantize(recipe_, role,
                 TensorView{const_cast<std::uint8_t*>(source.data()), in_, rows_, cols_, 0},
                 expected->view(), {.seed = 5});
    return expected;
  }

  // `rows` x `cols`: the operand's source tensor (core/gemm.hpp gemm_source_shape).
  QuantizeProblemJob(const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols,
                     DType in, bool pair)
      : recipe_(recipe),
        role_(role),
        rows_(rows),
        cols_(cols),
        in_(in),
        pair_(pair),
        layout_(quant_layout(recipe, role, rows, cols)),
        layout_t_(pair ? quant_layout(recipe, transposed_copy(role), rows, cols) : layout_) {
    if (pair && role != Role::x && role != Role::w && role != Role::dy)
      fail(ErrorKind::invalid_argument, "quantize pair: role must be x, w or dy (got {})",
           name(role));
  }
  virtual const DeviceIdentity& identity() const = 0;

  Recipe recipe_;
  Role role_;
  std::int64_t rows_, cols_;
  DType in_;
  bool pair_;
  QuantLayout layout_;
  QuantLayout layout_t_;  // a pair's transposed copy's (a single operand: layout_)
};

}  // namespace fp4jit::tuner
