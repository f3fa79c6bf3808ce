// Host quantize kernels for one operand of one recipe, as LLVM IR. Three entry points share the
// argument struct QuantizeKernelArgs (host_config.hpp):
//   <prefix>_stats(args, r0, r1)   operand rows r0..r1 (a multiple of the band height apart):
//                                  per-block largest |x| bits and the largest finite |x|
//   <prefix>_scales(args, b0, b1)  blocks b0..b1: the stored scale and the encode factor
//   <prefix>_encode(args, r0, r1)  operand rows r0..r1: element codes, packed
//   <prefix>_fused(args, r0, r1)   the three in one pass, band by band, for tile and row blocks
//                                  without a tensor scale (uses_fused())
// Stats and encode both rebuild the operand rows from the source (orient, convert, Hadamard) in
// args.scratch, so the two passes see identical values. The two-level tensor scale is computed
// between the passes by the runtime (nx::two_level_tensor_scale on the merged amax).
#pragma once
#include <string>

#include "codegen/host/host_config.hpp"
#include "core/recipe.hpp"

namespace llvm {
class Module;
}

namespace fp4jit::host {

struct QuantizeKernelSpec {
  OperandSpec op;
  Role role = Role::x;
  DType input = DType::f32;
  Ue5m3Variant ue5m3 = Ue5m3Variant::nan_ff;
  HostConfig config;
  // DGE only: the output dtype and the recipe's k and clip
  DType output = DType::f32;
  float dge_k = 5.0f, dge_clip = 3.0f;

  // Rows per band: config.band_rows rounded up to a multiple of the block height.
  int band_rows() const;
  // Blocks lie within bands and no tensor-wide statistic is needed: the fused entry applies.
  bool uses_fused() const;
};

void emit_quantize(llvm::Module& module, const QuantizeKernelSpec& spec, const std::string& prefix);

// The DGE factor of a weight (role w, no transform): <prefix>_stats as above, then
// <prefix>_dge(args, r0, r1) writes f'(w * sf) into args.codes, which holds the output tensor of
// spec.output with args.row_bytes its row stride in elements.
void emit_dge(llvm::Module& module, const QuantizeKernelSpec& spec, const std::string& prefix);

}  // namespace fp4jit::host
