// An operand as the quantize kernels see it, and its spelling in a stub: a struct of static
// constexpr members (templates/quantize/config.cuh documents them).
#pragma once
#include <string>
#include <string_view>

#include "core/recipe.hpp"
#include "quantize/config.cuh"

namespace fp4jit::codegen {

struct KernelOperand {
  Role role = Role::x;
  OperandSpec spec;
  Ue5m3Variant ue5m3 = Ue5m3Variant::nan_ff;
  std::string canonical;  // canonical(recipe, role) of the spec as given (the key's text)
};

// The recipe's operand.
KernelOperand kernel_operand(const Recipe& recipe, Role role);
// The same operand with its spec replaced (derived kernels: DGE stats read the raw weight, the
// second step of an unfused double quantization reads a dequantized tensor directly).
KernelOperand with_spec(const Recipe& recipe, Role role, const OperandSpec& spec);

// `struct <name> { static constexpr ... };`
std::string operand_struct(std::string_view name, const KernelOperand& op);

// The kernel enums of the host enums.
kern::InType in_type(DType d);
kern::ScaleFmt scale_fmt(ScaleFormat f, Ue5m3Variant v);
std::string_view in_type_name(kern::InType t);  // "k::InType::bf16"
// "0x1.cp+8f": exact float literals.
std::string float_literal(float v);

// Properties of the operand that decide which kernels and passes it needs.
bool needs_stats(const OperandSpec& s);    // a pre-pass: two-level s_enc, or non-tile blocks
bool local_in_tile(const OperandSpec& s);  // tile blocks whose rows fit one warp of quantize_tile
// Operands the kernels take by lane-owned groups (templates/quantize/groups.cuh lane_groups):
// E2M1, 1 x 16 or 1 x 32 blocks, Hadamard chunks of at most 32.
bool lane_groups(const OperandSpec& s);
// Throws Error(unsupported) naming the field when the CUDA kernels cannot quantize the operand.
void check_cuda_supported(const KernelOperand& op);

}  // namespace fp4jit::codegen
