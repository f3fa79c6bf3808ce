// Engine::gemm: every argument checked against the recipe's layouts before a backend sees it.
#include <cmath>

#include "runtime/backend.hpp"

namespace fp4jit {

namespace {

std::int64_t stride_of(const TensorView& t) {
  return t.row_stride == 0 ? t.cols : t.row_stride;
}

void check_matrix(const TensorView& t, std::string_view what, std::int64_t rows,
                  std::int64_t cols) {
  if (t.data == nullptr) fail(ErrorKind::invalid_argument, "gemm: {}: null data pointer", what);
  if (t.rows != rows || t.cols != cols)
    fail(ErrorKind::invalid_argument, "gemm: {} must be [{}, {}], got [{}, {}]", what, rows, cols,
         t.rows, t.cols);
  if (t.row_stride != 0 && t.row_stride < t.cols)
    fail(ErrorKind::invalid_argument, "gemm: {}: row stride {} is smaller than its {} columns",
         what, t.row_stride, t.cols);
}

void check_operand(const Recipe& recipe, Role role, const QuantLayout& l, const QuantizedView& q,
                   char which) {
  if (q.codes == nullptr || q.scales == nullptr)
    fail(ErrorKind::invalid_argument,
         "gemm: operand {} ({}, [{}, {}]): codes and scales are required", which, name(role),
         l.rows, l.cols);
  if (l.two_level && q.tensor_scale == nullptr)
    fail(ErrorKind::invalid_argument,
         "gemm: operand {} ({}): recipe '{}' scales it in two levels: tensor_scale is required",
         which, name(role), recipe.preset);
}

void check_occ(const Recipe& recipe, GemmOp op, Role a_role, const QuantizedView& a,
               const GemmShape& s, const TensorView& w) {
  if (!recipe[a_role].occ)
    fail(ErrorKind::invalid_argument,
         "gemm {}: occ_weight given, but operand A ({}) of recipe '{}' has occ=off: there is no "
         "residual to "
         "compensate",
         name(op), name(a_role), recipe.preset);
  if (a.residual_count == nullptr ||
      (a.residual_capacity > 0 && (a.residual_index == nullptr || a.residual_value == nullptr)))
    fail(ErrorKind::invalid_argument,
         "gemm {}: OCC compensation reads A's residual: residual_count (and index/value buffers) "
         "are required",
         name(op));
  check_matrix(w, "occ_weight (the weight in high precision, [N, K])", s.n, s.k);
}

}  // namespace

void Engine::gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a, const QuantizedView& b,
                  const GemmShape& shape, const TensorView& out, const GemmEpilogue& epilogue,
                  void* stream) {
  const GemmLayouts l = gemm_layouts(recipe, op, shape);
  const GemmRoles roles = gemm_roles(op);
  if (l.a.cols != l.b.cols)
    fail(ErrorKind::internal, "gemm {}: K of A ({}) and B ({}) differ", name(op), l.a.cols,
         l.b.cols);
  check_operand(recipe, roles.a, l.a, a, 'A');
  check_operand(recipe, roles.b, l.b, b, 'B');
  check_matrix(out, "output", shape.m, shape.n);
  if (!std::isfinite(epilogue.alpha) || !std::isfinite(epilogue.beta))
    fail(ErrorKind::invalid_argument, "gemm: alpha ({}) and beta ({}) must be finite",
         epilogue.alpha, epilogue.beta);
  if (epilogue.beta != 0.0f) {
    check_matrix(epilogue.c, "epilogue.c (beta != 0)", shape.m, shape.n);
    if (epilogue.c.dtype != out.dtype)
      fail(ErrorKind::invalid_argument,
           "gemm: epilogue.c is {} but the output is {}: they must match", name(epilogue.c.dtype),
           name(out.dtype));
    if (epilogue.c.data == out.data && stride_of(epilogue.c) != stride_of(out))
      fail(ErrorKind::invalid_argument,
           "gemm: epilogue.c aliases the output with a different row stride");
  }
  if (epilogue.occ_weight.data != nullptr)
    check_occ(recipe, op, roles.a, a, shape, epilogue.occ_weight);
  backend_->gemm(recipe, op, a, b, shape, out, epilogue, stream);
}

std::string Engine::gemm_kernel(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                                DType out) {
  gemm_layouts(recipe, op, shape);  // the shape's errors, as gemm() gives them
  if (out != DType::f32 && out != DType::bf16 && out != DType::f16)
    fail(ErrorKind::invalid_argument, "gemm_kernel: output dtype {} (float32, bfloat16 or float16)",
         name(out));
  return backend_->gemm_kernel(recipe, op, shape, out);
}

}  // namespace fp4jit
