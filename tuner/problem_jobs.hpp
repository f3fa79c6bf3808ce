// The problem half of the tuning jobs, shared by every backend: what is tuned (one GEMM of one
// shape, or one quantized operand of one source shape), its cache key, label and work measure.
// A backend's job adds the candidates, the inputs, verification and timing.
#pragma once
#include <fmt/format.h>

#include <string>

#include "core/gemm.hpp"
#include "core/names.hpp"
#include "runtime/tuning_keys.hpp"
#include "tuner/tuner.hpp"

namespace fp4jit::tuner {

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

class QuantizeProblemJob : public TuneJob {
 public:
  TuningKey key() const override {
    return quantize_tuning_key(identity(), recipe_, role_, rows_, cols_, in_);
  }
  std::string label() const override {
    return fmt::format("quantize {} {}x{}", name(role_), rows_, cols_);
  }
  double work() const override {  // bytes read and written
    return static_cast<double>(rows_ * cols_ * dtype_size(in_) + layout_.code_bytes() +
                               layout_.scale_count() * (layout_.scale_is_code ? 1 : 4));
  }
  std::string unit() const override { return "GB/s"; }

 protected:
  // `rows` x `cols`: the operand's source tensor (core/gemm.hpp gemm_source_shape).
  QuantizeProblemJob(const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols,
                     DType in)
      : recipe_(recipe),
        role_(role),
        rows_(rows),
        cols_(cols),
        in_(in),
        layout_(quant_layout(recipe, role, rows, cols)) {}
  virtual const DeviceIdentity& identity() const = 0;

  Recipe recipe_;
  Role role_;
  std::int64_t rows_, cols_;
  DType in_;
  QuantLayout layout_;
};

}  // namespace fp4jit::tuner
