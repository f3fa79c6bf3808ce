#include "capi/c_tensor.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/quantized.hpp"

namespace fp4jit::capi {

namespace {

constexpr int kMaxDims = 8;

std::string_view device_name(fp4jit_device d) {
  switch (d) {
    case FP4JIT_DEVICE_UNKNOWN:
      return "unknown";
    case FP4JIT_DEVICE_CPU:
      return "CPU";
    case FP4JIT_DEVICE_CUDA:
      return "CUDA";
    case FP4JIT_DEVICE_CUDA_HOST:
      return "CUDA pinned host";
    case FP4JIT_DEVICE_CUDA_MANAGED:
      return "CUDA managed";
  }
  return "?";
}

void check_device(const fp4jit_tensor& t, std::string_view what, BackendKind backend, int device) {
  const fp4jit_device d = t.device;
  if (d == FP4JIT_DEVICE_UNKNOWN || d == FP4JIT_DEVICE_CUDA_HOST || d == FP4JIT_DEVICE_CUDA_MANAGED)
    return;
  if (d != FP4JIT_DEVICE_CPU && d != FP4JIT_DEVICE_CUDA)
    fail(ErrorKind::invalid_argument, "{}: unknown device type {}", what, static_cast<int>(d));
  const bool cuda = backend == BackendKind::cuda;
  if (cuda && d == FP4JIT_DEVICE_CPU)
    fail(ErrorKind::invalid_argument,
         "{}: a {} tensor given to the cuda backend, which needs device memory", what,
         device_name(d));
  if (!cuda && d == FP4JIT_DEVICE_CUDA)
    fail(ErrorKind::invalid_argument,
         "{}: a {} device tensor given to the {} backend, which needs host memory", what,
         device_name(d), name_of(backend_names(), backend));
  if (cuda && t.device_id != device)
    fail(ErrorKind::invalid_argument, "{}: on CUDA device {}, but the engine runs on device {}",
         what, t.device_id, device);
}

}  // namespace

DType to_dtype(fp4jit_dtype d, std::string_view what) {
  switch (d) {
    case FP4JIT_FLOAT32:
      return DType::f32;
    case FP4JIT_FLOAT16:
      return DType::f16;
    case FP4JIT_BFLOAT16:
      return DType::bf16;
  }
  fail(ErrorKind::invalid_argument,
       "{}: unknown dtype {} (valid: FP4JIT_FLOAT32 = 0, "
       "FP4JIT_FLOAT16 = 1, FP4JIT_BFLOAT16 = 2)",
       what, static_cast<int>(d));
}

TensorView to_view(const fp4jit_tensor* t, std::string_view what, BackendKind backend, int device) {
  if (t == nullptr) fail(ErrorKind::invalid_argument, "{}: the tensor is NULL", what);
  if (t->data == nullptr) fail(ErrorKind::invalid_argument, "{}: null data pointer", what);
  const DType dtype = to_dtype(t->dtype, what);
  if (t->ndim < 1 || t->ndim > kMaxDims)
    fail(ErrorKind::invalid_argument, "{}: {} dimensions (1 to {} are accepted)", what, t->ndim,
         kMaxDims);
  if (t->shape == nullptr) fail(ErrorKind::invalid_argument, "{}: shape is NULL", what);
  const int nd = t->ndim;
  for (int i = 0; i < nd; ++i)
    if (t->shape[i] < 0)
      fail(ErrorKind::invalid_argument, "{}: dimension {} has negative size {}", what, i,
           t->shape[i]);
  const auto too_large = [&] {
    std::string dims;
    for (int i = 0; i < nd; ++i) dims += fmt::format("{}{}", i ? ", " : "", t->shape[i]);
    fail(ErrorKind::invalid_argument,
         "{}: shape [{}] spans more elements than fp4jit addresses (2^56)", what, dims);
  };
  const std::int64_t cols = t->shape[nd - 1];
  std::int64_t rows = 1;
  for (int i = 0; i + 1 < nd; ++i)
    if (__builtin_mul_overflow(rows, t->shape[i], &rows)) too_large();
  if (cols > 0 && rows > kMaxTensorElements / cols) too_large();
  std::int64_t row_stride = cols;
  if (t->strides != nullptr) {
    const std::int64_t* st = t->strides;
    if (st[nd - 1] != 1 && cols > 1)
      fail(ErrorKind::invalid_argument,
           "{}: the last dimension must be contiguous (stride 1), got stride {}; pass a "
           "contiguous copy",
           what, st[nd - 1]);
    // The leading dimensions must walk memory as one row index: stride[i] = stride[i+1] * size.
    int last = -1;  // the innermost leading dimension of size > 1
    for (int i = nd - 2; i >= 0; --i)
      if (t->shape[i] > 1) {
        last = i;
        break;
      }
    if (last >= 0 && rows > 0) {  // an empty tensor reads nothing (and is refused later)
      row_stride = st[last];
      if (rows > 1 && row_stride < cols)
        fail(ErrorKind::invalid_argument, "{}: row stride {} is smaller than its {} columns", what,
             row_stride, cols);
      // The elements the rows span, (rows - 1) * row_stride + cols, within the same bound.
      std::int64_t span = 0;
      if (__builtin_mul_overflow(rows - 1, row_stride, &span) ||
          __builtin_add_overflow(span, cols, &span) || span > kMaxTensorElements)
        too_large();
      std::int64_t expect = st[last] * t->shape[last];  // <= span + row_stride: no overflow
      for (int i = last - 1; i >= 0; --i) {
        if (t->shape[i] == 1) continue;
        if (st[i] != expect)
          fail(ErrorKind::invalid_argument,
               "{}: dimensions 0..{} cannot be read as one row index (stride {} of dimension "
               "{} should be {}); pass a contiguous copy",
               what, nd - 2, st[i], i, expect);
        expect = st[i] * t->shape[i];
      }
    }
  }
  const auto address = reinterpret_cast<std::uintptr_t>(t->data);
  if (address % dtype_size(dtype) != 0)
    fail(ErrorKind::invalid_argument, "{}: data pointer {:#x} is not aligned to its {}-byte {}",
         what, address, dtype_size(dtype), name(dtype));
  check_device(*t, what, backend, device);
  return TensorView{t->data, dtype, rows, cols, row_stride == cols ? 0 : row_stride};
}

TensorView to_vector(const fp4jit_tensor* t, std::string_view what, std::int64_t n,
                     BackendKind backend, int device) {
  const TensorView v = to_view(t, what, backend, device);
  if (v.rows * v.cols != n || (v.rows != 1 && v.cols != 1) || v.row_stride != 0)
    fail(ErrorKind::invalid_argument,
         "{}: must be a contiguous vector of {} elements, got [{}, {}]", what, n, v.rows, v.cols);
  return v;
}

QuantizedView to_quantized(const fp4jit_quantized* q, const QuantLayout& l, bool occ,
                           std::string_view what) {
  if (q == nullptr) fail(ErrorKind::invalid_argument, "{}: the quantized buffers are NULL", what);
  if (q->codes == nullptr) fail(ErrorKind::invalid_argument, "{}: codes is NULL", what);
  if (q->scales == nullptr) fail(ErrorKind::invalid_argument, "{}: scales is NULL", what);
  if (q->codes_bytes < l.code_bytes())
    fail(ErrorKind::invalid_argument,
         "{}: codes_bytes {} is smaller than the {} bytes the operand [{}, {}] needs", what,
         q->codes_bytes, l.code_bytes(), l.rows, l.cols);
  const std::int64_t scale_bytes = l.scale_count() * (l.scale_is_code ? 1 : 4);
  if (q->scales_bytes < scale_bytes)
    fail(ErrorKind::invalid_argument,
         "{}: scales_bytes {} is smaller than the {} bytes of its [{}, {}] {} scales", what,
         q->scales_bytes, scale_bytes, l.scale_rows, l.scale_cols,
         l.scale_is_code ? "uint8" : "float32");
  const auto aligned = [&](const void* p, std::size_t n, std::string_view field) {
    if (reinterpret_cast<std::uintptr_t>(p) % n != 0)
      fail(ErrorKind::invalid_argument, "{}: {} {} is not aligned to {} bytes", what, field, p, n);
  };
  if (!l.scale_is_code) aligned(q->scales, 4, "scales (float32)");
  if (l.two_level && q->tensor_scale == nullptr)
    fail(ErrorKind::invalid_argument,
         "{}: the recipe scales this operand in two levels: tensor_scale (1 float) is required",
         what);
  if (q->tensor_scale != nullptr) aligned(q->tensor_scale, 4, "tensor_scale");
  if (q->amax != nullptr) aligned(q->amax, 4, "amax");
  QuantizedView v;
  v.codes = q->codes;
  v.scales = q->scales;
  v.tensor_scale = q->tensor_scale;
  v.amax = q->amax;
  if (occ) {
    if (q->residual_count == nullptr)
      fail(ErrorKind::invalid_argument,
           "{}: the recipe applies OCC to this operand: residual_count (1 int64) is required",
           what);
    if (q->residual_capacity < 0)
      fail(ErrorKind::invalid_argument, "{}: residual_capacity {} is negative", what,
           q->residual_capacity);
    if (q->residual_capacity > 0 && (q->residual_index == nullptr || q->residual_value == nullptr))
      fail(ErrorKind::invalid_argument,
           "{}: residual_capacity is {} but residual_index or residual_value is NULL", what,
           q->residual_capacity);
    aligned(q->residual_count, 8, "residual_count");
    if (q->residual_index != nullptr) aligned(q->residual_index, 8, "residual_index");
    if (q->residual_value != nullptr) aligned(q->residual_value, 4, "residual_value");
    v.residual_index = q->residual_index;
    v.residual_value = q->residual_value;
    v.residual_count = q->residual_count;
    v.residual_capacity = q->residual_capacity;
  }
  return v;
}

std::int64_t occ_capacity(const Recipe& recipe, std::int64_t source_rows,
                          std::int64_t source_cols) {
  const std::int64_t n = source_cols;
  if (n <= 0 || source_rows <= 0) return 0;
  const double alpha = recipe.occ_alpha;
  const auto lo = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>((1.0 - alpha) * n));
  const auto hi = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>(alpha * n));
  // Values before sorted[lo] (at most lo) and after sorted[hi] (at most n - 1 - hi) change.
  return source_rows * std::max<std::int64_t>(1, lo + (n - 1 - hi));
}

}  // namespace fp4jit::capi
