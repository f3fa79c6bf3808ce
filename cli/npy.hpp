// NumPy .npy files (format versions 1.0, 2.0 and 3.0): the CLI's tensor I/O.
//
// Reading accepts little-endian float32 '<f4', float16 '<f2', bfloat16 (as np.save writes an
// ml_dtypes array: raw '<V2', or the name 'bfloat16'), and, for fp4jit's own files, uint8 '|u1'
// and int64 '<i8'. Fortran-ordered arrays are transposed into row-major order on reading. Every
// failure throws fp4jit::Error naming the file: io (cannot open or read), corrupt (bad magic,
// malformed header, truncated data), invalid_argument (a valid file of an unsupported dtype).
//
// As a matrix: a 0-d array is [1, 1], a 1-D array [n] is [1, n], and [..., C] is [prod(...), C].
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/format.hpp"
#include "core/matrix.hpp"

namespace fp4jit::npy {

// The element types fp4jit reads and writes.
enum class Type : std::uint8_t { f32, f16, bf16, u8, i64 };

std::string_view type_name(Type t);  // "float32", "float16", "bfloat16", "uint8", "int64"
int type_size(Type t);
std::string_view type_descr(Type t);  // the descr written: '<f4', '<f2', '<V2', '|u1', '<i8'

// The header dictionary of an .npy file.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// Parses the header dictionary text (a Python literal such as
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"); `file` names the source in
// errors. Throws Error(corrupt) on malformed text or missing/unknown keys.
Header parse_header(std::string_view text, const std::string& file);
// The element type of a descr fp4jit reads, or nullopt.
std::optional<Type> descr_type(std::string_view descr);
// The descr's element type; throws Error(invalid_argument) naming the dtype otherwise.
Type parse_descr(std::string_view descr, const std::string& file);
// The header dictionary text written for `type` and `shape` (no padding).
std::string header_text(Type type, const std::vector<std::int64_t>& shape);

// An array as read: its element type, shape and row-major (C-order) bytes.
struct Array {
  Type type = Type::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;

  std::int64_t count() const;      // number of elements
  std::string shape_text() const;  // "(2, 3)"
};

// Parses the bytes of a whole .npy file; `name` names it in errors (the same errors as read()).
Array parse(std::span<const std::uint8_t> file, const std::string& name);
Array read(const std::filesystem::path& path);
// Reads an array and checks its type and shape: one of another dtype (fp4jit's or not) or shape
// throws Error(corrupt) naming the file, what was expected and what it holds.
Array read_expect(const std::filesystem::path& path, Type type,
                  const std::vector<std::int64_t>& shape);

// A floating-point array as a row-major matrix (see the shape rule above), converted exactly.
struct FloatTensor {
  Matrix<float> matrix;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;  // the file's shape
};
// `a` as a FloatTensor; `name` names it in errors (a dtype that is not floating-point).
FloatTensor to_float_tensor(const Array& a, const std::string& name);
FloatTensor read_float_tensor(const std::filesystem::path& path);

// The bytes of an .npy file holding `bytes` (row-major, count(shape) * type_size(type) bytes).
// version 0 picks 1.0, or 2.0 when the header needs it; 1, 2 and 3 force that format version.
std::vector<std::uint8_t> encode(Type type, const std::vector<std::int64_t>& shape,
                                 const void* bytes, int version = 0);
// Writes encode(type, shape, bytes, version) to `path`.
void write(const std::filesystem::path& path, Type type, const std::vector<std::int64_t>& shape,
           const void* bytes, int version = 0);
void write_u8(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
              const std::vector<std::uint8_t>& values);
void write_i64(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
               const std::vector<std::int64_t>& values);
void write_f32(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
               const std::vector<float>& values);
// Writes doubles as `dtype`, each rounded once to nearest even (bfloat16 as '<V2').
void write_values(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
                  const std::vector<double>& values, DType dtype);

// Correctly rounded (nearest even) conversions from double; NaN stays NaN, overflow gives Inf.
std::uint16_t double_to_f16(double x);
std::uint16_t double_to_bf16(double x);

}  // namespace fp4jit::npy
