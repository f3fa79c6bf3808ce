// The one-pass OCC plan of a row-wise operand with one scale per row (occ_rows,
// templates/quantize/occ_rows.cuh), and the quantile positions every OCC plan uses.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "codegen/kernels.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit::cuda {

std::int64_t occ_lo_index(double alpha, std::int64_t n) {
  return std::min<std::int64_t>(n - 1, static_cast<std::int64_t>((1.0 - alpha) * n));
}
std::int64_t occ_hi_index(double alpha, std::int64_t n) {
  return std::min<std::int64_t>(n - 1, static_cast<std::int64_t>(alpha * n));
}

bool plan_occ_rows(const Recipe& recipe, const DeviceInfo& device, const codegen::KernelOperand& op,
                   const TensorView& in, const QuantLayout& l, const QuantizedView& out,
                   const kern::QuantizeArgs& qa, Arena& arena, Plan& plan) {
  using kern::i64;
  const OperandSpec& s = op.spec;
  const i64 n = in.cols;
  DeviceInfo::OccRows policy = device.occ_rows;
  if (const char* v = std::getenv("FP4JIT_OCC_ROWS"); v != nullptr && *v != '\0')
    policy = std::strcmp(v, "0") == 0 ? DeviceInfo::OccRows::never : DeviceInfo::OccRows::always;
  const bool off = policy == DeviceInfo::OccRows::never ||
                   (policy == DeviceInfo::OccRows::measured && n <= 4096);
  if (off || !s.occ || role_info(op.role).transposed || s.block.kind != Block::Kind::row ||
      s.had.size != 0 || s.rule == ScaleRule::two_level || in.rows <= 0 || n <= 0 ||
      n > codegen::kOccRowsMaxCols || in.rows >= (i64{1} << 32) ||
      occ_lo_index(recipe.occ_alpha, n) > occ_hi_index(recipe.occ_alpha, n))
    return false;
  // The status words and the ticket, zeroed by one memset.
  auto* status = static_cast<kern::u64*>(arena.take_bytes(in.rows * 8 + 4));
  plan.push_back(Memset{status, 0, 2 * in.rows + 1});
  if (out.amax != nullptr) plan.push_back(Memset{out.amax, 0, 1});
  kern::OccRowsArgs a{};
  a.q = qa;
  a.q.row = operand_out(l, out);
  a.lo_index = occ_lo_index(recipe.occ_alpha, n);
  a.hi_index = occ_hi_index(recipe.occ_alpha, n);
  a.index = out.residual_index;
  a.value = out.residual_value;
  a.capacity = std::max<i64>(out.residual_capacity, 0);
  a.total = out.residual_count;
  a.status = status;
  a.ticket = reinterpret_cast<kern::u32*>(status + in.rows);
  const i64 in_bytes = in.rows * in.cols * dtype_size(in.dtype);
  // The kernel takes alpha as sorted positions: one binary serves every alpha.
  Recipe any_alpha = recipe;
  any_alpha.occ_alpha = Recipe{}.occ_alpha;
  plan.push_back(
      make_launch(codegen::occ_rows_kernel(codegen::with_spec(any_alpha, op.role, s), in.dtype, n,
                                           device.target),
                  std::min<i64>(in.rows, static_cast<i64>(device.sm_count) * 4),
                  codegen::occ_rows_shape(n).threads, a,
                  in_bytes + l.code_bytes() + l.scale_count() * (l.scale_is_code ? 1 : 4)));
  return true;
}

}  // namespace fp4jit::cuda
