// .npy files as the CLI reads them: any bytes are parsed or refused with Error(corrupt) or
// Error(invalid_argument); a parsed array re-encodes and parses back to itself, and a
// floating-point one converts to a matrix of exactly its element count.
#include <cstring>

#include "cli/npy.hpp"
#include "tests/fuzz/fuzz.hpp"

namespace npy = fp4jit::npy;
using fp4jit::ErrorKind;

namespace {

std::vector<std::uint8_t> with_header(std::string_view dict, std::size_t data_bytes, int major) {
  std::vector<std::uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major),
                                   0};
  const std::size_t len = dict.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    out.push_back(static_cast<std::uint8_t>((len >> (8 * i)) & 0xFF));
  out.insert(out.end(), dict.begin(), dict.end());
  for (std::size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<std::uint8_t>(i * 37));
  return out;
}

}  // namespace

std::vector<std::vector<std::uint8_t>> fp4jit_fuzz_seeds() {
  std::vector<std::vector<std::uint8_t>> seeds;
  const float f[6] = {1.0f, -2.5f, 0.0f, 3.0e38f, 1e-40f, -0.0f};
  seeds.push_back(npy::encode(npy::Type::f32, {2, 3}, f));
  seeds.push_back(npy::encode(npy::Type::f32, {6}, f, 2));
  seeds.push_back(npy::encode(npy::Type::f16, {3}, f, 3));
  seeds.push_back(npy::encode(npy::Type::bf16, {}, f));
  seeds.push_back(npy::encode(npy::Type::u8, {4, 1}, f));
  seeds.push_back(npy::encode(npy::Type::i64, {0, 3}, f));
  seeds.push_back(
      with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", 24, 1));
  seeds.push_back(
      with_header("{'descr': 'bfloat16', 'fortran_order': False, 'shape': (1, 2, 2)}", 8, 2));
  seeds.push_back(
      with_header("{\"descr\": \"<f2\", \"shape\": (2,), \"fortran_order\": False}", 4, 1));
  seeds.push_back(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4, 1));
  return seeds;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  npy::Array a;
  const std::span<const std::uint8_t> file(data, size);
  if (!fp4jit::fuzz::accepts([&] { a = npy::parse(file, "input.npy"); },
                             {ErrorKind::corrupt, ErrorKind::invalid_argument}, "npy::parse"))
    return 0;
  const std::int64_t count = a.count();
  FUZZ_CHECK(a.bytes.size() == static_cast<std::size_t>(count) * npy::type_size(a.type),
             "the array's bytes do not match its shape " + a.shape_text());

  const std::vector<std::uint8_t> again = npy::encode(a.type, a.shape, a.bytes.data());
  npy::Array b;
  if (!fp4jit::fuzz::accepts([&] { b = npy::parse(again, "re-encoded.npy"); }, {},
                             "parsing a re-encoded array"))
    return 0;
  FUZZ_CHECK(b.type == a.type && b.shape == a.shape && b.bytes == a.bytes,
             "re-encoding changed the array " + a.shape_text());

  const bool floating =
      a.type == npy::Type::f32 || a.type == npy::Type::f16 || a.type == npy::Type::bf16;
  npy::FloatTensor t;
  const bool converted = fp4jit::fuzz::accepts([&] { t = npy::to_float_tensor(a, "input.npy"); },
                                               {ErrorKind::invalid_argument}, "to_float_tensor");
  FUZZ_CHECK(converted == floating,
             "to_float_tensor accepted a non-float array or refused a float one");
  if (converted) FUZZ_CHECK(t.matrix.size() == count, "the matrix does not hold every element");
  return 0;
}
