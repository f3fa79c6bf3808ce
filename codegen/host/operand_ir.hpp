// IR shared by the operand kernels (quantize, dequantize, dge): reading the source tensor into a
// band of operand rows (orientation, dtype conversion, Hadamard), walking a row in chunks of
// lanes, and addressing the block (scale) of a chunk.
#pragma once
#include "codegen/host/emitter.hpp"
#include "core/format.hpp"
#include "core/recipe.hpp"

namespace fp4jit::host {

// Field `index` (8-byte slots) of an argument struct, loaded as `type`.
llvm::Value* load_arg(Emitter& e, llvm::Value* args, int index, llvm::Type* type);

// Loads `lanes` elements of `dtype` at ptr (an element pointer of any type) as float.
llvm::Value* load_as_float(Emitter& e, DType dtype, llvm::Value* ptr, int lanes);
// Rounds float lanes to `dtype` and stores them at ptr.
void store_from_float(Emitter& e, DType dtype, llvm::Value* value, llvm::Value* ptr);

// How the operand is read from its source tensor.
struct SourceSpec {
  DType dtype = DType::f32;
  bool transposed = false;  // operand (r, c) = source (c, r)
  HadamardSpec had{};       // applied along each operand row, in chunks of had.size
  int band_rows = 16;       // rows per band
  int vector_width = 16;
};

// Fills scratch[0 .. nb) x [0 .. cols) (row-major, cols floats per row) with operand rows
// r0 .. r0 + nb, Hadamard included. nb <= band_rows.
void emit_produce_band(Emitter& e, const SourceSpec& s, llvm::Value* src, llvm::Value* src_stride,
                       llvm::Value* scratch, llvm::Value* cols, llvm::Value* r0, llvm::Value* nb);

// For c = 0 .. cols: body(c, lanes) over chunks of `width` lanes, then chunks of `tail` lanes
// (0 = scalar) for what is left.
void for_each_chunk(Emitter& e, llvm::Value* cols, int width, int tail, int unroll,
                    const std::function<void(llvm::Value* c, int lanes)>& body);

// The blocks of an operand as seen from a chunk of a row.
class BlockAccess {
 public:
  BlockAccess(Emitter& e, const Block& block, llvm::Value* scale_cols)
      : e_(e), block_(block), scale_cols_(scale_cols) {}
  // Lanes of a main-loop chunk that never straddles two blocks.
  int chunk_width(int vector_width) const;
  bool per_lane() const { return block_.kind == Block::Kind::col; }
  // The chunk's block index (i64); per-lane blocks: the index of lane 0 (lanes follow).
  llvm::Value* index(llvm::Value* r, llvm::Value* c) const;
  // A per-block array's values for the chunk's lanes (the block's value splat, or lanes).
  llvm::Value* load(llvm::Type* elem, llvm::Value* array, llvm::Value* r, llvm::Value* c,
                    int lanes) const;
  // stats[block] = max(stats[block], u) for i32 lanes u (unsigned).
  void update_max(llvm::Value* stats, llvm::Value* r, llvm::Value* c, llvm::Value* u) const;

 private:
  Emitter& e_;
  Block block_;
  llvm::Value* scale_cols_;
};

}  // namespace fp4jit::host
