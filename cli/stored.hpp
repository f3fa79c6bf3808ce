// A quantized operand on disk: a directory of .npy files described by layout.json.
//   codes.npy           uint8 [rows, row_bytes]   (E2M1: two per byte, element 2i low nibble)
//   scales.npy          uint8 [scale_rows, scale_cols] scale codes, or float32 for fp32 scales
//   tensor_scale.npy    float32 [1]: s_enc             (two-level recipes only)
//   residual_index.npy  int64 [n], residual_value.npy float32 [n]  (operands with OCC only)
//   layout.json         everything needed to read them back (see save_quantized)
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "core/quantized.hpp"
#include "core/recipe.hpp"

namespace fp4jit::cli {

constexpr int kLayoutVersion = 1;
constexpr const char* kLayoutFormat = "fp4jit-quantized";

namespace file {
constexpr const char* layout = "layout.json";
constexpr const char* codes = "codes.npy";
constexpr const char* scales = "scales.npy";
constexpr const char* tensor_scale = "tensor_scale.npy";
constexpr const char* residual_index = "residual_index.npy";
constexpr const char* residual_value = "residual_value.npy";
}  // namespace file

// The tensor an operand was made from.
struct SourceInfo {
  std::string file;                 // as given on the command line
  std::vector<std::int64_t> shape;  // the file's shape
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;  // as a matrix ([..., C] -> [prod, C])
};

struct StoredOperand {
  Recipe recipe;
  QuantizedTensor q;
  SourceInfo source;
};

// Creates `dir` if needed and writes the operand's files and layout.json, replacing only
// fp4jit's own file names (stale ones from an earlier run are removed). Returns the files written.
std::vector<std::filesystem::path> save_quantized(const std::filesystem::path& dir,
                                                  const StoredOperand& stored);

// Reads a directory written by save_quantized, checking layout.json against the recipe and every
// file's dtype and shape; throws Error(io/corrupt) naming the file and the mismatch.
StoredOperand load_quantized(const std::filesystem::path& dir);

}  // namespace fp4jit::cli
