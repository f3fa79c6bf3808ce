// .npy reading and writing; the header dictionary is in npy_header.cpp.
#include "cli/npy.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <span>

#include "core/error.hpp"
#include "numerics/common.cuh"

namespace fp4jit::npy {

static_assert(std::endian::native == std::endian::little,
              "fp4jit's .npy code assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
constexpr std::size_t kAlign = 64;  // NumPy pads the header so the data starts 64-aligned

std::int64_t element_count(const std::vector<std::int64_t>& shape, const std::string& file) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0 || (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 8 / d))
      fail(ErrorKind::corrupt, "{}: shape too large or negative", file);
    n *= d;
  }
  return n;
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::io, "{}: cannot open for reading", path.string());
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) fail(ErrorKind::io, "{}: cannot determine the file size", path.string());
  in.seekg(0, std::ios::beg);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    fail(ErrorKind::io, "{}: read failed", path.string());
  return bytes;
}

// Reorders the bytes of a Fortran-ordered (column-major) array into C order.
constexpr std::size_t kMaxDims = 64;  // NumPy 2's limit
std::vector<std::uint8_t> fortran_to_c(const std::uint8_t* src,
                                       const std::vector<std::int64_t>& shape, int size) {
  const std::size_t nd = shape.size();
  std::int64_t count = 1;
  for (std::int64_t d : shape) count *= d;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(count) * size);
  std::array<std::int64_t, kMaxDims> stride{}, index{};  // Fortran strides in elements
  for (std::size_t k = 0; k < nd; ++k) stride[k] = k == 0 ? 1 : stride[k - 1] * shape[k - 1];
  std::int64_t offset = 0;  // Fortran offset of the current C-order index
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(out.data() + i * size, src + offset * size, size);
    for (std::size_t k = nd; k-- > 0;) {  // increment the C-order index, last axis fastest
      if (++index[k] < shape[k]) {
        offset += stride[k];
        break;
      }
      offset -= stride[k] * (shape[k] - 1);
      index[k] = 0;
    }
  }
  return out;
}

struct Preamble {
  int major = 0;
  std::size_t header_begin = 0, header_size = 0;
};

Preamble read_preamble(std::span<const std::uint8_t> file, const std::string& name) {
  if (file.size() < kMagicSize + 2 || std::memcmp(file.data(), kMagic, kMagicSize) != 0)
    fail(ErrorKind::corrupt, "{}: not an .npy file (bad magic; expected \\x93NUMPY)", name);
  Preamble p;
  p.major = file[6];
  if ((p.major != 1 && p.major != 2 && p.major != 3) || file[7] != 0)
    fail(ErrorKind::corrupt,
         "{}: unsupported .npy format version {}.{} (fp4jit reads 1.0, 2.0, 3.0)", name, file[6],
         file[7]);
  const std::size_t len_bytes = p.major == 1 ? 2 : 4;
  p.header_begin = kMagicSize + 2 + len_bytes;
  if (file.size() < p.header_begin)
    fail(ErrorKind::corrupt, "{}: truncated .npy preamble ({} bytes)", name, file.size());
  for (std::size_t i = 0; i < len_bytes; ++i)
    p.header_size |= static_cast<std::size_t>(file[kMagicSize + 2 + i]) << (8 * i);
  if (file.size() - p.header_begin < p.header_size)
    fail(ErrorKind::corrupt,
         "{}: truncated .npy header (needs {} bytes, file has {} after the preamble)", name,
         p.header_size, file.size() - p.header_begin);
  return p;
}

// |x| rounded to nearest even onto a binary format with `man` stored mantissa bits, smallest
// normal exponent `emin` and largest exponent `emax`; Inf when it overflows.
double round_to_binary(double a, int man, int emin, int emax) {
  if (a == 0.0 || !std::isfinite(a)) return a;
  int e = std::ilogb(a);
  if (e < emin) e = emin;
  const double q = std::ldexp(a, man - e);  // exact; the integer part fits in man + 1 bits
  double r = std::floor(q);
  const double frac = q - r;  // exact
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  const double out = std::ldexp(r, e - man);
  return out >= std::ldexp(1.0, emax + 1) ? INFINITY : out;
}

float double_to_f32(double x) {
  if (std::isnan(x)) return std::copysign(NAN, static_cast<float>(x));
  const double r = round_to_binary(std::fabs(x), 23, -126, 127);
  const float f = std::isinf(r) ? INFINITY : static_cast<float>(r);  // exact
  return std::signbit(x) ? -f : f;
}

}  // namespace

std::int64_t Array::count() const {
  return element_count(shape, "array");
}

std::string Array::shape_text() const {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

namespace {

// parse(), or with `want` an array of its element type (another dtype: Error(corrupt) naming the
// type and shape wanted; read_expect checks the shape).
Array parse_as(std::span<const std::uint8_t> file, const std::string& name, const Array* want) {
  const Preamble p = read_preamble(file, name);
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + p.header_begin,
                              p.header_size);
  const Header h = parse_header(text, name);
  Array a;
  if (want != nullptr) {
    const std::optional<Type> found = descr_type(h.descr);
    if (found != want->type)
      fail(ErrorKind::corrupt, "{}: expected a {} array of shape {}, found dtype {:?}{}", name,
           type_name(want->type), want->shape_text(), h.descr,
           found ? fmt::format(" ({})", type_name(*found)) : std::string());
  }
  a.type = parse_descr(h.descr, name);
  a.shape = h.shape;
  if (h.shape.size() > kMaxDims)
    fail(ErrorKind::corrupt, "{}: {} dimensions (at most {})", name, h.shape.size(), kMaxDims);
  const std::int64_t count = element_count(h.shape, name);
  const std::size_t need = static_cast<std::size_t>(count) * type_size(a.type);
  const std::size_t data_begin = p.header_begin + p.header_size;
  const std::size_t have = file.size() - data_begin;
  if (have < need)
    fail(ErrorKind::corrupt, "{}: truncated data: shape {} of {} needs {} bytes, the file holds {}",
         name, a.shape_text(), type_name(a.type), need, have);
  const std::uint8_t* data = file.data() + data_begin;
  if (h.fortran_order && h.shape.size() > 1)
    a.bytes = fortran_to_c(data, h.shape, type_size(a.type));
  else
    a.bytes.assign(data, data + need);
  return a;
}

}  // namespace

Array parse(std::span<const std::uint8_t> file, const std::string& name) {
  return parse_as(file, name, nullptr);
}

Array read(const std::filesystem::path& path) {
  return parse(read_file(path), path.string());
}

Array read_expect(const std::filesystem::path& path, Type type,
                  const std::vector<std::int64_t>& shape) {
  Array want;
  want.type = type;
  want.shape = shape;
  Array a = parse_as(read_file(path), path.string(), &want);  // of `type`, or it threw
  if (a.shape != shape)
    fail(ErrorKind::corrupt, "{}: expected a {} array of shape {}, found {} {}", path.string(),
         type_name(type), want.shape_text(), type_name(a.type), a.shape_text());
  return a;
}

FloatTensor to_float_tensor(const Array& a, const std::string& name) {
  FloatTensor t;
  t.shape = a.shape;
  switch (a.type) {
    case Type::f32:
      t.dtype = DType::f32;
      break;
    case Type::f16:
      t.dtype = DType::f16;
      break;
    case Type::bf16:
      t.dtype = DType::bf16;
      break;
    default:
      fail(ErrorKind::invalid_argument,
           "{}: dtype {} is not a floating-point tensor (fp4jit reads float32, float16, bfloat16)",
           name, type_name(a.type));
  }
  // 0-d: [1, 1]; [n]: [1, n]; [..., C]: [prod(...), C].
  const std::int64_t cols = a.shape.empty() ? 1 : a.shape.back();
  const std::int64_t rows =
      a.shape.size() <= 1
          ? 1
          : element_count(std::vector<std::int64_t>(a.shape.begin(), a.shape.end() - 1), name);
  t.matrix = Matrix<float>(rows, cols);
  const std::int64_t count = rows * cols;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint8_t* p = a.bytes.data() + i * type_size(a.type);
    std::uint32_t u32 = 0;
    std::uint16_t u16 = 0;
    if (a.type == Type::f32) {
      std::memcpy(&u32, p, 4);
      t.matrix.data[i] = nx::bits_float(u32);
    } else {
      std::memcpy(&u16, p, 2);
      t.matrix.data[i] = a.type == Type::f16 ? nx::f16_to_float(u16) : nx::bf16_to_float(u16);
    }
  }
  return t;
}

FloatTensor read_float_tensor(const std::filesystem::path& path) {
  return to_float_tensor(read(path), path.string());
}

std::vector<std::uint8_t> encode(Type type, const std::vector<std::int64_t>& shape,
                                 const void* bytes, int version) {
  std::string header = header_text(type, shape);
  if (version == 0) version = header.size() + kMagicSize + 4 + 1 > 65535 ? 2 : 1;
  if (version < 1 || version > 3) fail(ErrorKind::internal, "npy::encode: bad version {}", version);
  const std::size_t preamble = kMagicSize + 2 + (version == 1 ? 2 : 4);
  const std::size_t total = (preamble + header.size() + 1 + kAlign - 1) / kAlign * kAlign;
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';
  if (version == 1 && header.size() > 65535)
    fail(ErrorKind::internal, "npy::encode: header too long for format 1.0");
  const std::size_t data_size =
      static_cast<std::size_t>(element_count(shape, "npy::encode")) * type_size(type);
  std::vector<std::uint8_t> out(kMagic, kMagic + kMagicSize);
  out.push_back(static_cast<std::uint8_t>(version));
  out.push_back(0);
  for (std::size_t i = 0; i < preamble - kMagicSize - 2; ++i)
    out.push_back(static_cast<std::uint8_t>((header.size() >> (8 * i)) & 0xFF));
  out.insert(out.end(), header.begin(), header.end());
  const auto* data = static_cast<const std::uint8_t*>(bytes);
  if (data_size > 0) out.insert(out.end(), data, data + data_size);
  return out;
}

void write(const std::filesystem::path& path, Type type, const std::vector<std::int64_t>& shape,
           const void* bytes, int version) {
  const std::string name = path.string();
  const std::vector<std::uint8_t> out = encode(type, shape, bytes, version);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(ErrorKind::io, "{}: cannot open for writing", name);
  f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) fail(ErrorKind::io, "{}: write failed", name);
}

namespace {
template <typename T>
void write_vector(const std::filesystem::path& path, Type type,
                  const std::vector<std::int64_t>& shape, const std::vector<T>& values) {
  if (element_count(shape, path.string()) != static_cast<std::int64_t>(values.size()))
    fail(ErrorKind::internal, "{}: {} values do not fill the shape", path.string(), values.size());
  write(path, type, shape, values.data());
}
}  // namespace

void write_u8(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
              const std::vector<std::uint8_t>& values) {
  write_vector(path, Type::u8, shape, values);
}
void write_i64(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
               const std::vector<std::int64_t>& values) {
  write_vector(path, Type::i64, shape, values);
}
void write_f32(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
               const std::vector<float>& values) {
  write_vector(path, Type::f32, shape, values);
}

void write_values(const std::filesystem::path& path, const std::vector<std::int64_t>& shape,
                  const std::vector<double>& values, DType dtype) {
  if (dtype == DType::f32) {
    std::vector<float> out(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = double_to_f32(values[i]);
    write_vector(path, Type::f32, shape, out);
    return;
  }
  std::vector<std::uint16_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    out[i] = dtype == DType::f16 ? double_to_f16(values[i]) : double_to_bf16(values[i]);
  write_vector(path, dtype == DType::f16 ? Type::f16 : Type::bf16, shape, out);
}

std::uint16_t double_to_f16(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isnan(x)) return sign | 0x7E00u;
  const double r = round_to_binary(std::fabs(x), 10, -14, 15);
  if (std::isinf(r)) return sign | 0x7C00u;
  if (r == 0.0) return sign;
  const int e = std::ilogb(r);
  if (e < -14) return sign | static_cast<std::uint16_t>(std::ldexp(r, 24));  // subnormal
  const auto mantissa = static_cast<std::uint16_t>(std::ldexp(r, 10 - e) - 1024.0);
  return sign | static_cast<std::uint16_t>((e + 15) << 10) | mantissa;
}

std::uint16_t double_to_bf16(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isnan(x)) return sign | 0x7FC0u;
  const double r = round_to_binary(std::fabs(x), 7, -126, 127);
  if (std::isinf(r)) return sign | 0x7F80u;
  return sign | static_cast<std::uint16_t>(nx::float_bits(static_cast<float>(r)) >> 16);  // exact
}

}  // namespace fp4jit::npy
