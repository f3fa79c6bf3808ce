// Shared by the GPU tests and the CPU emulator tests: inputs (random and adversarial) in any
// input type, poisoned output buffers, and the byte-for-byte comparison against the reference.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/matrix.hpp"
#include "core/quantized.hpp"
#include "fp4jit/engine.hpp"

namespace fp4jit::test {

enum class InputKind { random, adversarial };
const char* input_kind_name(InputKind k);

// A host tensor of `dtype` and the float values it holds (what every backend reads).
struct HostInput {
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
  std::vector<std::uint8_t> bytes;  // rows * cols elements of dtype
  Matrix<float> values;
  TensorView view();  // over `bytes`
};
// Adversarial inputs: ties on the element grid, zero blocks, subnormals, huge values, NaN and
// Inf, one outlier per block. `signed_zeros`: also -0 (not for OCC operands: the reference's
// std::sort leaves the order of -0 and +0 open).
HostInput make_input(InputKind kind, DType dtype, std::int64_t rows, std::int64_t cols,
                     std::uint32_t seed, bool signed_zeros);

// Element (r, c) of `in` set to v in its type (v exact in it: Inf, values of few bits; a NaN
// keeps what the type holds of its payload), and in.values to what the bytes hold.
void set_value(HostInput& in, std::int64_t r, std::int64_t c, float v);

constexpr std::uint8_t kPoison = 0xA5;

// Output buffers of one operand in host memory, poisoned.
struct HostOperand {
  QuantLayout layout;
  std::vector<std::uint8_t> codes, scales;
  std::vector<float> tensor_scale{0.0f}, amax{0.0f};
  std::vector<std::int64_t> residual_index, residual_count{0};
  std::vector<float> residual_value;
  explicit HostOperand(const QuantLayout& l, std::int64_t residual_capacity);
  QuantizedView view();
};

// Empty when `got` holds exactly the reference's bytes (codes, scales, tensor scale, amax,
// residual list, which must have been written when `occ`); else the first difference, located.
std::string compare(const QuantizedTensor& ref, const HostOperand& got, bool occ);
// Empty if two runs wrote the same codes, scales and tensor scale, else what differs first.
std::string compare_runs(const HostOperand& want, const HostOperand& got);

// A source shape [rows, cols] valid for `role` of `recipe` (K a multiple of what the blocks and
// transform need, at least `min_k`), with `free_dim` operand rows.
struct Shape {
  std::int64_t rows = 0, cols = 0;
};
std::int64_t k_multiple(const Recipe& recipe, Role role);
Shape shape_for(const Recipe& recipe, Role role, std::int64_t free_dim, std::int64_t min_k);

// Column sums of `values` from a kernel (`got`: cols elements of dtype) against
// reference::column_sums rounded to dtype: "" when every one has the same bits (NaN: any NaN).
std::string compare_column_sums(const Matrix<float>& values, const std::vector<std::uint8_t>& got,
                                DType dtype);

// `text` as a test name: every character but letters and digits becomes '_'.
std::string test_name(std::string text);

}  // namespace fp4jit::test
