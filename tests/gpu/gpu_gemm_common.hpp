// Shared pieces of the GEMM GPU tests (gpu_gemm_test.cpp, gpu_gemm_epilogue_test.cpp): the GPU
// and its Engine, operands quantized on the GPU and read back, the double-precision reference of
// their product, the case description and its test name.
#pragma once
#include <gtest/gtest.h>

#include <cctype>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <tuple>

#include "reference/reference.hpp"
#include "runtime/backend.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "tests/gpu/gpu_engine.hpp"

namespace fp4jit::test {

// Activations-like values: N(0, 1) times 2^u per row, u uniform in [-3, 3]. stress: times 2^v
// more per 16 x 16 block and per column, v uniform in [-20, 20] (block scales of one K tile far
// outside each other's window, in both the row and the column layout). outliers: every 41st
// element (row-major) 15 times larger, so that most blocks hold one and the others' scales lie a
// few binades lower (their products lose low bits in the FP8 tensor cores' accumulation).
// wide: columns 512 j .. 512 j + 511 times 2^10 for even j, 2^-10 for odd j: every promotion
// segment of a row-wise operand (512 elements of K) inside one window, a whole row 20 binades
// wide (the staged mx kernel's window for B: staged_geometry.cuh, kSplitFactorExp).
inline Matrix<float> random_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed,
                                   bool stress = false, bool outliers = false, bool wide = false) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f), v(-20.0f, 20.0f);
  Matrix<float> m(rows, cols);
  std::vector<float> col(static_cast<std::size_t>(cols), 1.0f), block;
  if (stress) {
    for (float& c : col) c = std::exp2(std::round(v(gen)));
    block.resize(static_cast<std::size_t>(((rows + 15) / 16) * ((cols + 15) / 16)));
    for (float& b : block) b = std::exp2(std::round(v(gen)));
  }
  const std::int64_t bc = (cols + 15) / 16;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float s = std::exp2(u(gen));
    for (std::int64_t c = 0; c < cols; ++c) {
      float x = normal(gen) * s;
      if (stress)
        x *= col[static_cast<std::size_t>(c)] *
             block[static_cast<std::size_t>((r / 16) * bc + c / 16)];
      if (outliers && (r * cols + c) % 41 == 0) x *= 15.0f;
      if (wide) x *= (c / 512) % 2 == 0 ? 0x1p10f : 0x1p-10f;
      m(r, c) = x;
    }
  }
  return m;
}

// Sets FP4JIT_SM90_GEMM for the scope of a test ("": the heuristic).
class KernelOverride {
 public:
  explicit KernelOverride(const std::string& kernel) {
    if (!kernel.empty()) setenv("FP4JIT_SM90_GEMM", kernel.c_str(), 1);
  }
  ~KernelOverride() { unsetenv("FP4JIT_SM90_GEMM"); }
  KernelOverride(const KernelOverride&) = delete;
  KernelOverride& operator=(const KernelOverride&) = delete;
};

// Sets FP4JIT_DIRECT_STRICT=1 for the scope of a test when `on`: the direct kernel then stops
// (a launch error) rather than recompute a unit outside its window, so a case whose operands lie
// inside it proves the tensor-core path ran.
class DirectStrict {
 public:
  explicit DirectStrict(bool on) : on_(on) {
    if (on_) setenv("FP4JIT_DIRECT_STRICT", "1", 1);
  }
  ~DirectStrict() {
    if (on_) unsetenv("FP4JIT_DIRECT_STRICT");
  }
  DirectStrict(const DirectStrict&) = delete;
  DirectStrict& operator=(const DirectStrict&) = delete;

 private:
  bool on_;
};

template <class T>
cuda::DeviceBuffer upload(const std::vector<T>& v) {
  cuda::DeviceBuffer b(std::max<std::size_t>(v.size() * sizeof(T), 16));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

// One operand quantized on the GPU, its view, and the bytes read back.
struct GpuOperand {
  cuda::DeviceBuffer source, codes, scales, tensor_scale, amax, index, value, count;
  QuantizedView view;
  QuantizedTensor host;
};

inline std::unique_ptr<GpuOperand> quantize_on_gpu(Engine& engine, const Recipe& recipe, Role role,
                                                   const Matrix<float>& x, std::uint64_t seed) {
  auto o = std::make_unique<GpuOperand>();
  const QuantLayout l = quant_layout(recipe, role, x.rows, x.cols);
  const std::int64_t capacity = recipe[role].occ ? l.rows * l.cols / 4 + 1024 : 0;
  o->source = upload(x.data);
  o->codes = cuda::DeviceBuffer(static_cast<std::size_t>(l.code_bytes()) + 16);
  o->scales = cuda::DeviceBuffer(
      static_cast<std::size_t>(l.scale_count() * (l.scale_is_code ? 1 : 4)) + 16);
  o->tensor_scale = cuda::DeviceBuffer(16);
  o->amax = cuda::DeviceBuffer(16);
  o->index = cuda::DeviceBuffer(static_cast<std::size_t>(capacity) * 8 + 16);
  o->value = cuda::DeviceBuffer(static_cast<std::size_t>(capacity) * 4 + 16);
  o->count = cuda::DeviceBuffer(16);
  o->count.fill(0);
  QuantizedView& v = o->view;
  v.codes = o->codes.get<std::uint8_t>();
  v.scales = o->scales.get();
  v.tensor_scale = o->tensor_scale.get<float>();
  v.amax = o->amax.get<float>();
  v.residual_index = o->index.get<std::int64_t>();
  v.residual_value = o->value.get<float>();
  v.residual_count = o->count.get<std::int64_t>();
  v.residual_capacity = capacity;
  engine.quantize(recipe, role, TensorView{o->source.get(), DType::f32, x.rows, x.cols, 0}, v,
                  {.seed = seed});
  Gpu::get()->scope.synchronize();
  QuantizedTensor& q = o->host;
  q.recipe = canonical(recipe);
  q.role = role;
  q.layout = l;
  q.codes.resize(static_cast<std::size_t>(l.code_bytes()));
  o->codes.download(q.codes.data(), q.codes.size());
  if (l.scale_is_code) {
    q.scale_codes.resize(static_cast<std::size_t>(l.scale_count()));
    o->scales.download(q.scale_codes.data(), q.scale_codes.size());
  } else {
    q.scale_values.resize(static_cast<std::size_t>(l.scale_count()));
    o->scales.download(q.scale_values.data(), q.scale_values.size() * 4);
  }
  o->tensor_scale.download(&q.tensor_scale, 4);
  std::int64_t count = 0;
  o->count.download(&count, 8);
  q.residual_index.resize(static_cast<std::size_t>(count));
  q.residual_value.resize(static_cast<std::size_t>(count));
  if (count > 0) {
    o->index.download(q.residual_index.data(), static_cast<std::size_t>(count) * 8);
    o->value.download(q.residual_value.data(), static_cast<std::size_t>(count) * 4);
  }
  return o;
}

// Rows (0, last and an even spread) of the exact product deq(A) deq(B)^T [+ R W^T].
struct Reference {
  Matrix<double> a, b;
  const QuantizedTensor* residual = nullptr;
  const Matrix<float>* weight = nullptr;
  std::vector<double> row(std::int64_t i) const {
    std::vector<double> c(static_cast<std::size_t>(b.rows), 0.0);
    for (std::int64_t j = 0; j < b.rows; ++j) {
      double s = 0.0;
      for (std::int64_t p = 0; p < a.cols; ++p) s += a(i, p) * b(j, p);
      c[static_cast<std::size_t>(j)] = s;
    }
    if (residual != nullptr)
      for (std::size_t t = 0; t < residual->residual_index.size(); ++t) {
        if (residual->residual_index[t] / a.cols != i) continue;
        const std::int64_t p = residual->residual_index[t] % a.cols;
        for (std::int64_t j = 0; j < b.rows; ++j)
          c[static_cast<std::size_t>(j)] += double(residual->residual_value[t]) * (*weight)(j, p);
      }
    return c;
  }
};

inline std::vector<std::int64_t> sampled_rows(std::int64_t m, int count) {
  std::vector<std::int64_t> rows{0, m - 1};
  for (int i = 1; i < count - 1; ++i) rows.push_back(m * i / (count - 1));
  return rows;
}

struct GemmCase {
  std::string recipe;
  GemmOp op;
  GemmShape shape;
  std::string kernel;  // FP4JIT_SM90_GEMM: "fused", "staged", a choice's text, or "" (heuristic)
  bool stress = false;
  bool outliers = false;
  double bound = 1e-4;  // on the relative Frobenius error
  bool wide = false;    // random_matrix's wide rows (row-wise operands: fprop's)
  int shift = 0;        // A's source times 2^-shift, B's times 2^shift (the product unchanged)
};
inline void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << c.recipe << " " << name(c.op) << " " << gemm_shape_text(c.shape) << " " << c.kernel
      << (c.stress ? " stress" : "") << (c.outliers ? " outliers" : "") << (c.wide ? " wide" : "")
      << (c.shift != 0 ? " shift " + std::to_string(c.shift) : "");
}

struct CaseData {
  Recipe recipe;
  std::unique_ptr<GpuOperand> a, b;
  Matrix<float> weight;  // W [N, K] (fprop B's source) for the OCC compensation
  bool occ = false;
};

// Operands for the case, or an empty optional reason when the recipe cannot quantize the shape.
inline std::string prepare(Engine& engine, const GemmCase& c, CaseData& s) {
  s.recipe = parse_recipe(c.recipe);
  try {
    gemm_layouts(s.recipe, c.op, c.shape);
  } catch (const Error& e) {
    return e.what();
  }
  const GemmRoles roles = gemm_roles(c.op);
  const OperandShape sa = gemm_source_shape(roles.a, c.shape.m, c.shape.k);
  const OperandShape sb = gemm_source_shape(roles.b, c.shape.n, c.shape.k);
  Matrix<float> xa = random_matrix(sa.rows, sa.cols, 17, c.stress, c.outliers, c.wide),
                xb = random_matrix(sb.rows, sb.cols, 18, c.stress, c.outliers, c.wide);
  if (c.shift != 0) {
    for (float& v : xa.data) v = std::ldexp(v, -c.shift);
    for (float& v : xb.data) v = std::ldexp(v, c.shift);
  }
  s.a = quantize_on_gpu(engine, s.recipe, roles.a, xa, 5);
  s.b = quantize_on_gpu(engine, s.recipe, roles.b, xb, 6);
  s.occ = c.op == GemmOp::fprop && s.recipe[roles.a].occ;
  if (s.occ) s.weight = xb;
  return {};
}

inline std::string case_name(const testing::TestParamInfo<GemmCase>& p) {
  std::string n =
      p.param.recipe + "_" + std::string(name(p.param.op)) + "_" + gemm_shape_text(p.param.shape) +
      (p.param.kernel.empty() ? "" : "_" + p.param.kernel) + (p.param.stress ? "_stress" : "") +
      (p.param.outliers ? "_outliers" : "") + (p.param.wide ? "_wide" : "") +
      (p.param.shift != 0 ? "_shift" + std::to_string(p.param.shift) : "");
  for (char& ch : n)  // a choice's text ("sg=1,bn=192,...") as a test name
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

}  // namespace fp4jit::test
