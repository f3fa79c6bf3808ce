#include "core/gemm.hpp"

#include "core/text.hpp"

#include <array>

namespace fp4jit {

namespace {

constexpr std::array<Named<GemmOp>, 3> kGemmOpNames{
    {{GemmOp::fprop, "fprop"}, {GemmOp::dgrad, "dgrad"}, {GemmOp::wgrad, "wgrad"}}};

bool parse_dim(std::string_view text, std::int64_t& out) {
  return parse_number(text, &out) && out > 0;
}

}  // namespace

std::span<const Named<GemmOp>> gemm_op_names() {
  return kGemmOpNames;
}

GemmRoles gemm_roles(GemmOp op) {
  switch (op) {
    case GemmOp::fprop:
      return {Role::x, Role::w};
    case GemmOp::dgrad:
      return {Role::dy, Role::wt};
    case GemmOp::wgrad:
      return {Role::dyt, Role::xt};
  }
  return {Role::x, Role::w};
}

std::string gemm_shape_text(const GemmShape& s) {
  return fmt::format("{}x{}x{}", s.m, s.n, s.k);
}

GemmShape parse_gemm_shape(std::string_view text) {
  GemmShape s;
  const auto x1 = text.find('x');
  const auto x2 = x1 == std::string_view::npos ? x1 : text.find('x', x1 + 1);
  if (x2 == std::string_view::npos || !parse_dim(text.substr(0, x1), s.m) ||
      !parse_dim(text.substr(x1 + 1, x2 - x1 - 1), s.n) || !parse_dim(text.substr(x2 + 1), s.k))
    fail(ErrorKind::invalid_argument,
         "GEMM shape '{}': expected MxNxK with positive integers, e.g. 8192x4096x4096", text);
  return s;
}

OperandShape gemm_source_shape(Role role, std::int64_t rows, std::int64_t k) {
  if (role_info(role).transposed) return {k, rows};
  return {rows, k};
}

GemmLayouts gemm_layouts(const Recipe& recipe, GemmOp op, const GemmShape& shape) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0)
    fail(ErrorKind::invalid_argument, "gemm {}: shape {} must be positive", name(op),
         gemm_shape_text(shape));
  const GemmRoles roles = gemm_roles(op);
  const auto layout = [&](Role role, std::int64_t rows, char which) {
    const OperandShape src = gemm_source_shape(role, rows, shape.k);
    try {
      return quant_layout(recipe, role, src.rows, src.cols);
    } catch (const Error& e) {
      fail(ErrorKind::invalid_argument, "gemm {} {}: operand {} ({} x K = {} x {}): {}", name(op),
           gemm_shape_text(shape), which, name(role), rows, shape.k, e.what());
    }
  };
  return {layout(roles.a, shape.m, 'A'), layout(roles.b, shape.n, 'B')};
}

GemmShape gemm_shape_of(GemmOp op, const GemmShape& fprop) {
  const std::int64_t tokens = fprop.m, out = fprop.n, in = fprop.k;
  switch (op) {
    case GemmOp::fprop:
      return fprop;
    case GemmOp::dgrad:
      return {tokens, in, out};
    case GemmOp::wgrad:
      return {out, in, tokens};
  }
  return fprop;
}

GemmRequest parse_gemm_request(std::string_view text) {
  GemmRequest r;
  const auto colon = text.find(':');
  if (colon != std::string_view::npos) {
    r.layer = false;
    r.op = parse_named(gemm_op_names(), text.substr(0, colon), "GEMM (before ':')");
    text = text.substr(colon + 1);
  }
  r.shape = parse_gemm_shape(text);
  return r;
}

std::vector<std::pair<GemmOp, GemmShape>> gemm_list(const GemmRequest& r) {
  if (!r.layer) return {{r.op, r.shape}};
  std::vector<std::pair<GemmOp, GemmShape>> out;
  for (const auto& op : gemm_op_names())
    out.emplace_back(op.value, gemm_shape_of(op.value, r.shape));
  return out;
}

}  // namespace fp4jit
