#include "codegen/operand.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/format.hpp"

namespace fp4jit::codegen {

namespace {

std::string_view elem_name(ElemFormat e) {
  switch (e) {
    case ElemFormat::e2m1:
      return "k::Elem::e2m1";
    case ElemFormat::e4m3:
      return "k::Elem::e4m3";
    case ElemFormat::e5m2:
      return "k::Elem::e5m2";
  }
  return "?";
}

std::string_view scale_fmt_name(kern::ScaleFmt f) {
  switch (f) {
    case kern::ScaleFmt::e8m0:
      return "k::ScaleFmt::e8m0";
    case kern::ScaleFmt::ue4m3:
      return "k::ScaleFmt::ue4m3";
    case kern::ScaleFmt::ue5m3_nan:
      return "k::ScaleFmt::ue5m3_nan";
    case kern::ScaleFmt::ue5m3_finite:
      return "k::ScaleFmt::ue5m3_finite";
    case kern::ScaleFmt::ue5m3_ieee:
      return "k::ScaleFmt::ue5m3_ieee";
    case kern::ScaleFmt::fp32:
      return "k::ScaleFmt::fp32";
  }
  return "?";
}

std::string_view rule_name(ScaleRule r) {
  switch (r) {
    case ScaleRule::ocp_floor:
      return "k::Rule::ocp_floor";
    case ScaleRule::ceil_pow2:
      return "k::Rule::ceil_pow2";
    case ScaleRule::ms_pow2:
      return "k::Rule::ms_pow2";
    case ScaleRule::two_level:
      return "k::Rule::two_level";
    case ScaleRule::absmax:
      return "k::Rule::absmax";
  }
  return "?";
}

std::string_view block_name(Block::Kind k) {
  switch (k) {
    case Block::Kind::tile:
      return "k::BlockKind::tile";
    case Block::Kind::row:
      return "k::BlockKind::row";
    case Block::Kind::col:
      return "k::BlockKind::col";
    case Block::Kind::tensor:
      return "k::BlockKind::tensor";
  }
  return "?";
}

std::string_view round_name(Round r) {
  switch (r) {
    case Round::even:
      return "fp4jit::nx::Round::even";
    case Round::away:
      return "fp4jit::nx::Round::away";
    case Round::up:
      return "fp4jit::nx::Round::up";
    case Round::zero:
      return "fp4jit::nx::Round::zero";
    case Round::stochastic:
      return "fp4jit::nx::Round::stochastic";
  }
  return "?";
}

}  // namespace

KernelOperand kernel_operand(const Recipe& recipe, Role role) {
  return KernelOperand{role, recipe[role], recipe.ue5m3, canonical(recipe, role)};
}

KernelOperand with_spec(const Recipe& recipe, Role role, const OperandSpec& spec) {
  Recipe changed = recipe;
  changed[role] = spec;
  return kernel_operand(changed, role);
}

kern::InType in_type(DType d) {
  switch (d) {
    case DType::f32:
      return kern::InType::f32;
    case DType::f16:
      return kern::InType::f16;
    case DType::bf16:
      return kern::InType::bf16;
  }
  return kern::InType::f32;
}

std::string_view in_type_name(kern::InType t) {
  switch (t) {
    case kern::InType::f32:
      return "k::InType::f32";
    case kern::InType::f16:
      return "k::InType::f16";
    case kern::InType::bf16:
      return "k::InType::bf16";
  }
  return "?";
}

kern::ScaleFmt scale_fmt(ScaleFormat f, Ue5m3Variant v) {
  switch (f) {
    case ScaleFormat::e8m0:
      return kern::ScaleFmt::e8m0;
    case ScaleFormat::ue4m3:
      return kern::ScaleFmt::ue4m3;
    case ScaleFormat::fp32:
      return kern::ScaleFmt::fp32;
    case ScaleFormat::ue5m3:
      switch (v) {
        case Ue5m3Variant::nan_ff:
          return kern::ScaleFmt::ue5m3_nan;
        case Ue5m3Variant::all_finite:
          return kern::ScaleFmt::ue5m3_finite;
        case Ue5m3Variant::ieee:
          return kern::ScaleFmt::ue5m3_ieee;
      }
  }
  return kern::ScaleFmt::fp32;
}

std::string float_literal(float v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  return fmt::format("{:a}f", v);
}

std::string operand_struct(std::string_view name, const KernelOperand& op) {
  const OperandSpec& s = op.spec;
  const nx::SignMask signs = s.had.effective_mask();
  const bool tile = s.block.kind == Block::Kind::tile;
  const float smax = s.rule == ScaleRule::two_level ? scale_format_max(s.scale, op.ue5m3) : 0.0f;
  return fmt::format(
      "struct {name} {{  // {role}: {canon}\n"
      "  static constexpr k::Elem elem = {elem};\n"
      "  static constexpr k::ScaleFmt scale = {scale};\n"
      "  static constexpr k::Rule rule = {rule};\n"
      "  static constexpr k::BlockKind block = {block};\n"
      "  static constexpr int block_rows = {br}, block_cols = {bc};\n"
      "  static constexpr fp4jit::nx::Round round = {round};\n"
      "  static constexpr int sr_bits = {sr};\n"
      "  static constexpr int had = {had};\n"
      "  static constexpr fp4jit::nx::u32 sign0 = {s0:#x}u, sign1 = {s1:#x}u, sign2 = {s2:#x}u, "
      "sign3 = {s3:#x}u;\n"
      "  static constexpr bool occ = {occ};\n"
      "  static constexpr float scale_max = {smax};\n"
      "}};\n",
      fmt::arg("name", name), fmt::arg("role", fp4jit::name(op.role)),
      fmt::arg("canon", op.canonical), fmt::arg("elem", elem_name(s.elem)),
      fmt::arg("scale", scale_fmt_name(scale_fmt(s.scale, op.ue5m3))),
      fmt::arg("rule", rule_name(s.rule)), fmt::arg("block", block_name(s.block.kind)),
      fmt::arg("br", tile ? s.block.rows : 1), fmt::arg("bc", tile ? s.block.cols : 1),
      fmt::arg("round", round_name(s.round)), fmt::arg("sr", s.sr_bits),
      fmt::arg("had", s.had.size), fmt::arg("s0", signs.w[0]), fmt::arg("s1", signs.w[1]),
      fmt::arg("s2", signs.w[2]), fmt::arg("s3", signs.w[3]),
      fmt::arg("occ", s.occ ? "true" : "false"), fmt::arg("smax", float_literal(smax)));
}

bool needs_stats(const OperandSpec& s) {
  return s.rule == ScaleRule::two_level || s.block.kind != Block::Kind::tile;
}

bool lane_groups(const OperandSpec& s) {
  return s.elem == ElemFormat::e2m1 && s.block.kind == Block::Kind::tile && s.block.rows == 1 &&
         (s.block.cols == 16 || s.block.cols == 32) && s.had.size <= 32;
}

bool local_in_tile(const OperandSpec& s) {
  if (s.block.kind != Block::Kind::tile) return true;
  const int span = std::max({8, s.had.size, s.block.cols});
  const int lines = 32 / std::max(1, span / 8);
  return lines > 0 && lines % s.block.rows == 0;
}

void check_cuda_supported(const KernelOperand& op) {
  const OperandSpec& s = op.spec;
  const auto is_pow2 = [](int v) { return v > 0 && std::has_single_bit(static_cast<unsigned>(v)); };
  if (s.block.kind == Block::Kind::tile &&
      (!is_pow2(s.block.cols) || !is_pow2(s.block.rows) || s.block.cols > 256 || s.block.rows > 32))
    fail(ErrorKind::unsupported,
         "operand {}: block={} is not supported by the CUDA backend (tile blocks need power-of-two "
         "sides, at most 32 rows and 256 columns); the reference backend handles it",
         fp4jit::name(op.role), block_text(s.block));
}

}  // namespace fp4jit::codegen
