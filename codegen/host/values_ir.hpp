// Decoded values of a quantized operand in IR: element codes and block scales back to float, for
// the dequantize kernel and the GEMM's packing.
#pragma once
#include "codegen/host/operand_ir.hpp"

namespace fp4jit::host {

class OperandValues {
 public:
  OperandValues(Emitter& e, const OperandSpec& op, Ue5m3Variant ue5m3, llvm::Value* codes,
                llvm::Value* row_bytes, llvm::Value* scales, llvm::Value* scale_cols)
      : e_(e),
        op_(op),
        ue5m3_(ue5m3),
        codes_(codes),
        row_bytes_(row_bytes),
        scales_(scales),
        blocks_(e, op.block, scale_cols) {}

  // Lanes of a main-loop chunk (E2M1 chunks are an even number of lanes and never straddle a
  // block).
  int chunk_width(int vector_width) const;
  // decode(code) of operand elements (r, c .. c + lanes).
  llvm::Value* element(llvm::Value* r, llvm::Value* c, int lanes) const;
  // decode(scale) of their blocks (NaN for a NaN scale); fp32 scales as stored.
  llvm::Value* scale(llvm::Value* r, llvm::Value* c, int lanes) const;
  // element * scale: exact in float for every supported format pair.
  llvm::Value* value(llvm::Value* r, llvm::Value* c, int lanes) const;

 private:
  Emitter& e_;
  OperandSpec op_;
  Ue5m3Variant ue5m3_;
  llvm::Value* codes_;
  llvm::Value* row_bytes_;
  llvm::Value* scales_;
  BlockAccess blocks_;
};

}  // namespace fp4jit::host
