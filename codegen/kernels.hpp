// Stub generators of the quantize-family kernels (templates/quantize/<op>.cuh), one per template,
// each in codegen/<op>.cpp, and their tunable launch configs with heuristic defaults.
//
// The problem (operand, input type, phase, mode) and the choice (config) are separate: a config
// is validated against the problem, printed into the kernel key, and never changes results,
// only speed.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/kernel_source.hpp"
#include "codegen/operand.hpp"

namespace fp4jit::codegen {

// quantize_rows: CTA size, and per lane either segments per iteration (segment path) or items in
// flight (lane-owned groups, whose rings of unroll + 1 items per warp share 48 KiB of shared
// memory: as many as fit, at least one).
struct RowsConfig {
  int threads = 256;
  int unroll = 4;
  int min_blocks = 0;        // CTAs per SM asked of the register allocator (0: none)
  std::string text() const;  // "threads=N,unroll=N", then ",minb=N" where min_blocks is set
  void validate() const;     // throws Error(invalid_argument)
  // The same, and that the config fits the operand's path for input `in`.
  void validate(const OperandSpec& s, DType in) const;
};
// The heuristic's config; FP4JIT_QUANTIZE_ROWS="threads=N,unroll=N,minb=N" (any of the fields)
// replaces those fields, as FP4JIT_QUANTIZE_TILE below.
RowsConfig default_rows_config(const OperandSpec& s, DType in);

// quantize_tile: CTA size, the source tile, and the CTAs per SM asked of the register allocator
// (__launch_bounds__' second argument; 0: the kernel's own rule, tile_min_blocks in
// templates/quantize/quantize_tile.cuh).
struct TileConfig {
  int threads = 256;
  int tile_rows = 64;
  int tile_cols = 64;
  int min_blocks = 0;
  std::string text() const;  // "threads=N,tile=RxC", then ",minb=N" where min_blocks is set
  // Throws Error(invalid_argument) unless the tile holds whole groups of the operands.
  void validate(const OperandSpec* row, const OperandSpec* col, DType in) const;
};
// The heuristic's config for a source of `elements` (0: large); FP4JIT_QUANTIZE_TILE=
// "threads=N,tile=RxC,minb=N" (any of the fields) replaces those fields (measurements and
// diagnostics; a config the kernel cannot take is an error naming the variable).
TileConfig default_tile_config(const OperandSpec* row, const OperandSpec* col, DType in,
                               std::int64_t elements = 0);

KernelSource quantize_rows_kernel(const KernelOperand& op, DType in, kern::Phase phase,
                                  const RowsConfig& config, const std::string& target);
// row / col: the row-wise and transposed operands (null when the mode leaves one out).
// col_sums: the kernel also writes the source's column sums per 64-row chunk
// (templates/quantize/column_sums.cuh; quantize phase, no OCC, tile rows a multiple of 64).
KernelSource quantize_tile_kernel(const KernelOperand* row, const KernelOperand* col, DType in,
                                  kern::Phase phase, bool requant, const TileConfig& config,
                                  const std::string& target, bool col_sums = false);

// Column sums of a source (templates/quantize/column_sums.cuh): the standalone first pass, and
// the reduce of the per-chunk sums into `out`'s type.
KernelSource column_sums_partial_kernel(DType in, const std::string& target);
KernelSource column_sums_reduce_kernel(DType out, const std::string& target);

KernelSource occ_select_kernel(DType in, const std::string& target);
KernelSource occ_scan_kernel(const std::string& target);
KernelSource occ_chunk_scan_kernel(const std::string& target);
KernelSource occ_write_kernel(DType in, bool cols, const std::string& target);
// occ_rows: a row-wise OCC operand with one scale per source row (block=row, no Hadamard) in one
// pass, for rows of at most kOccRowsMaxCols elements (longer rows take occ_select and the rest).
// occ_rows_shape: the CTA size and the kVec-element chunks each thread holds for a row length.
struct OccRowsShape {
  int threads, chunks;
};
constexpr std::int64_t kOccRowsMaxCols = 16384;
OccRowsShape occ_rows_shape(std::int64_t cols);
KernelSource occ_rows_kernel(const KernelOperand& op, DType in, std::int64_t cols,
                             const std::string& target);

// to_source: float values in the source layout (double quantization), else `out` values in the
// operand layout.
KernelSource dequantize_kernel(const KernelOperand& op, DType out, bool to_source,
                               const std::string& target);
KernelSource dge_kernel(const KernelOperand& w, DType in, DType out, float k, float clip,
                        const std::string& target);

// Helpers shared by the generators.
std::string phase_name(kern::Phase p);  // "stats", "quantize"
std::string mode_name(kern::Mode m);    // "rows", "cols", "both"

}  // namespace fp4jit::codegen
