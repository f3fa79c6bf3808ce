// .npy I/O (cli/npy.hpp): round trips for every dtype and format version, Fortran order, the
// shape rule, exact conversions, and one error per malformed input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/npy.hpp"
#include "core/error.hpp"
#include "numerics/common.cuh"

namespace fp4jit::npy {
namespace {

namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fp4jit_npy_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& name) const { return dir_ / name; }

  // A file with the given preamble version, header text (padded like NumPy) and data bytes.
  fs::path raw(const std::string& name, int major, std::string header, const std::string& data,
               int minor = 0) const {
    const std::size_t pre = major == 1 ? 10 : 12;
    header.append((64 - (pre + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += static_cast<char>(minor);
    for (std::size_t i = 0; i < pre - 8; ++i)
      out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    out += header + data;
    const fs::path p = path(name);
    std::ofstream(p, std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
    return p;
  }

  fs::path dir_;
};

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Expects `f` to throw Error of `kind` with every one of `parts` in its message.
template <typename F>
void expect_error(F&& f, ErrorKind kind, std::vector<std::string> parts) {
  try {
    f();
    FAIL() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(NpyTest, RoundTripEveryTypeAndVersion) {
  const std::vector<std::int64_t> shape{3, 5};
  for (Type type : {Type::f32, Type::f16, Type::bf16, Type::u8, Type::i64}) {
    std::vector<std::uint8_t> bytes(15 * type_size(type));
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<std::uint8_t>(i * 37 + 11);
    for (int version : {1, 2, 3}) {
      const fs::path p = path(fmt::format("{}_v{}.npy", type_name(type), version));
      write(p, type, shape, bytes.data(), version);
      std::ifstream in(p, std::ios::binary);
      char pre[8];
      in.read(pre, 8);
      EXPECT_EQ(pre[6], version);
      EXPECT_EQ(fs::file_size(p) % 64, bytes.size() % 64) << "data starts 64-aligned";
      const Array a = read(p);
      EXPECT_EQ(a.type, type);
      EXPECT_EQ(a.shape, shape);
      EXPECT_EQ(a.bytes, bytes) << type_name(type) << " v" << version;
    }
  }
}

TEST_F(NpyTest, HeaderTextMatchesNumpy) {
  EXPECT_EQ(header_text(Type::f32, {2, 3}),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(header_text(Type::u8, {5}),
            "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }");
  EXPECT_EQ(header_text(Type::bf16, {}), "{'descr': '<V2', 'fortran_order': False, 'shape': (), }");
}

TEST_F(NpyTest, ParsesHeaderVariants) {
  const std::string f = "h";
  Header h = parse_header("{\"shape\": (4,), \"fortran_order\": True, \"descr\": \"<f2\"}", f);
  EXPECT_EQ(h.descr, "<f2");
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{4}));
  h = parse_header("  {'descr':'<f4','fortran_order':False,'shape':(2L, 3L)}  \n", f);
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{2, 3}));
  h = parse_header("{'descr': 'bfloat16', 'fortran_order': False, 'shape': (), }", f);
  EXPECT_TRUE(h.shape.empty());
  EXPECT_EQ(parse_descr(h.descr, f), Type::bf16);
  EXPECT_EQ(parse_descr("<V2", f), Type::bf16);
  EXPECT_EQ(parse_descr("|V2", f), Type::bf16);
  EXPECT_EQ(parse_descr("<f4", f), Type::f32);
  EXPECT_EQ(parse_descr("=f2", f), Type::f16);
  EXPECT_EQ(parse_descr("|u1", f), Type::u8);
  EXPECT_EQ(parse_descr("<i8", f), Type::i64);
}

TEST_F(NpyTest, FloatTensorConvertsExactly) {
  // float16: normal, subnormal, signed zero, Inf, NaN.
  const std::vector<std::uint16_t> h{0x3C00, 0xC500, 0x0001, 0x8000,
                                     0x7C00, 0x7E00, 0x3555, 0x03FF};
  write(path("h.npy"), Type::f16, {2, 4}, h.data());
  const FloatTensor t = read_float_tensor(path("h.npy"));
  EXPECT_EQ(t.dtype, DType::f16);
  ASSERT_EQ(t.matrix.rows, 2);
  ASSERT_EQ(t.matrix.cols, 4);
  EXPECT_EQ(t.matrix.data[0], 1.0f);
  EXPECT_EQ(t.matrix.data[1], -5.0f);
  EXPECT_EQ(t.matrix.data[2], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(t.matrix.data[3]) && t.matrix.data[3] == 0.0f);
  EXPECT_EQ(t.matrix.data[4], INFINITY);
  EXPECT_TRUE(std::isnan(t.matrix.data[5]));
  EXPECT_EQ(t.matrix.data[6], 0x1.554p-2f);
  EXPECT_EQ(t.matrix.data[7], 1023 * std::ldexp(1.0f, -24));
  // bfloat16: the upper half of a float.
  const std::vector<std::uint16_t> b{0x3F80, 0xC0A0, 0x0001, 0x7F7F};
  write(path("b.npy"), Type::bf16, {4}, b.data());
  const FloatTensor tb = read_float_tensor(path("b.npy"));
  EXPECT_EQ(tb.dtype, DType::bf16);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(nx::float_bits(tb.matrix.data[i]), std::uint32_t{b[i]} << 16);
}

TEST_F(NpyTest, ShapeRule) {
  const std::vector<float> v(24, 1.0f);
  write(path("1d.npy"), Type::f32, {24}, v.data());
  write(path("3d.npy"), Type::f32, {2, 3, 4}, v.data());
  write(path("0d.npy"), Type::f32, {}, v.data());
  FloatTensor t = read_float_tensor(path("1d.npy"));
  EXPECT_EQ(t.matrix.rows, 1);
  EXPECT_EQ(t.matrix.cols, 24);
  t = read_float_tensor(path("3d.npy"));
  EXPECT_EQ(t.matrix.rows, 6);
  EXPECT_EQ(t.matrix.cols, 4);
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3, 4}));
  t = read_float_tensor(path("0d.npy"));
  EXPECT_EQ(t.matrix.rows, 1);
  EXPECT_EQ(t.matrix.cols, 1);
}

TEST_F(NpyTest, FortranOrderIsTransposedIntoRowMajor) {
  // [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
  const std::vector<float> col_major{0, 3, 1, 4, 2, 5};
  for (int version : {1, 2, 3}) {
    const fs::path p =
        raw(fmt::format("f{}.npy", version), version,
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", bytes_of(col_major));
    const FloatTensor t = read_float_tensor(p);
    ASSERT_EQ(t.matrix.rows, 2);
    ASSERT_EQ(t.matrix.cols, 3);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.matrix.data[i], float(i));
  }
  // 3-D [2, 2, 2]: element (i, j, k) = 4i + 2j + k at Fortran offset i + 2j + 4k.
  std::vector<float> f3(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) f3[i + 2 * j + 4 * k] = float(4 * i + 2 * j + k);
  const FloatTensor t3 = read_float_tensor(raw(
      "f3.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }", bytes_of(f3)));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(t3.matrix.data[i], float(i));
}

TEST_F(NpyTest, UnsupportedDtypesAreInvalidArguments) {
  const std::string data(64, '\0');
  const auto header = [](const std::string& descr) {
    return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2, 2), }";
  };
  expect_error([&] { read_float_tensor(raw("i4.npy", 1, header("<i4"), data)); },
               ErrorKind::invalid_argument, {"i4.npy", "'<i4'", "int32"});
  expect_error([&] { read_float_tensor(raw("f8.npy", 1, header("<f8"), data)); },
               ErrorKind::invalid_argument, {"f8.npy", "float64"});
  expect_error([&] { read_float_tensor(raw("be.npy", 1, header(">f4"), data)); },
               ErrorKind::invalid_argument, {"be.npy", "big-endian"});
  expect_error([&] { read_float_tensor(raw("u1.npy", 1, header("|u1"), data)); },
               ErrorKind::invalid_argument, {"u1.npy", "uint8"});
  expect_error(
      [&] {
        read(raw("rec.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                 data));
      },
      ErrorKind::invalid_argument, {"rec.npy", "structured"});
}

TEST_F(NpyTest, MalformedFilesAreCorrupt) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string data(16, '\0');
  struct Case {
    std::string header, what;
  };
  const std::vector<Case> cases{
      {"{'descr': '<f4', 'shape': (2, 2), }", "'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'extra': 1}", "'extra'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 2)}", "fortran_order"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2)}", "non-negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': 4}", "tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)", "expected"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 2)}", "malformed"},
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)} trailing", "after the header"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate"},
      {"", "expected '{'"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string name = fmt::format("bad{}.npy", i);
    expect_error([&] { read(raw(name, 1, cases[i].header, data)); }, ErrorKind::corrupt,
                 {name, cases[i].what});
  }
  // Bad magic, unknown version, truncated preamble / header / data.
  std::ofstream(path("magic.npy")) << "PK\x03\x04 this is a zip file";
  expect_error([&] { read(path("magic.npy")); }, ErrorKind::corrupt, {"magic.npy", "magic"});
  expect_error([&] { read(raw("v4.npy", 4, ok, data)); }, ErrorKind::corrupt, {"v4.npy", "4.0"});
  expect_error([&] { read(raw("v11.npy", 1, ok, data, 1)); }, ErrorKind::corrupt,
               {"v11.npy", "1.1"});
  expect_error([&] { read(raw("short.npy", 1, ok, std::string(15, '\0'))); }, ErrorKind::corrupt,
               {"short.npy", "truncated", "16 bytes"});
  const fs::path whole = raw("cut.npy", 2, ok, data);
  fs::resize_file(whole, 40);
  expect_error([&] { read(whole); }, ErrorKind::corrupt, {"cut.npy", "truncated .npy header"});
  fs::resize_file(whole, 9);
  expect_error([&] { read(whole); }, ErrorKind::corrupt, {"cut.npy", "truncated .npy preamble"});
  expect_error([&] { read(path("missing.npy")); }, ErrorKind::io, {"missing.npy", "cannot open"});
}

TEST_F(NpyTest, ReadExpectChecksTypeAndShape) {
  const std::vector<std::uint8_t> v(6, 1);
  write_u8(path("c.npy"), {2, 3}, v);
  EXPECT_NO_THROW(read_expect(path("c.npy"), Type::u8, {2, 3}));
  expect_error(
      [&] {
        read_expect(path("c.npy"), Type::u8, {3, 2});
      },
      ErrorKind::corrupt, {"c.npy", "(3, 2)", "(2, 3)"});
  expect_error(
      [&] {
        read_expect(path("c.npy"), Type::f32, {2, 3});
      },
      ErrorKind::corrupt, {"c.npy", "float32", "uint8"});
  // A dtype fp4jit never reads is a corrupt file here too, not an unsupported input tensor.
  const std::string header = "{'descr': '|u4', 'fortran_order': False, 'shape': (2, 3), }";
  expect_error(
      [&] {
        read_expect(raw("u4.npy", 1, header, std::string(24, '\0')), Type::u8, {2, 3});
      },
      ErrorKind::corrupt, {"u4.npy", "expected a uint8 array of shape (2, 3)", "|u4"});
}

// Found by the npy fuzz target: a type code's size times 8 overflowed an int in the message.
TEST_F(NpyTest, HugeTypeSizesAreNamedExactly) {
  const std::string header = "{'descr': '<f2147483647', 'fortran_order': False, 'shape': (1,), }";
  expect_error([&] { read(raw("huge.npy", 1, header, std::string(8, '\0'))); },
               ErrorKind::invalid_argument, {"huge.npy", "float17179869176"});
}

// In memory: parse() reads what encode() writes, and to_float_tensor() what read_float_tensor()
// would.
TEST_F(NpyTest, EncodeAndParseInMemory) {
  const float v[3] = {1.5f, -0.0f, 3e38f};
  const std::vector<std::uint8_t> bytes = encode(Type::f32, {3}, v);
  write(path("v.npy"), Type::f32, {3}, v);
  std::ifstream in(path("v.npy"), std::ios::binary);
  EXPECT_EQ(std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {}), bytes);
  const Array a = parse(bytes, "mem");
  EXPECT_EQ(a.shape, std::vector<std::int64_t>{3});
  const FloatTensor t = to_float_tensor(a, "mem");
  ASSERT_EQ(t.matrix.size(), 3);
  EXPECT_EQ(std::memcmp(t.matrix.data.data(), v, sizeof v), 0);
  expect_error([&] { parse(std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 1), "cut"); },
               ErrorKind::corrupt, {"cut", "truncated data"});
}

// Every finite float16 / bfloat16 value converts back to itself, and every midpoint between two
// neighbours rounds to the one with the even code.
TEST(NpyConvert, HalfPrecisionRoundingIsCorrect) {
  for (int which = 0; which < 2; ++which) {
    const auto decode = [&](std::uint32_t c) {
      return which == 0 ? double(nx::f16_to_float(static_cast<std::uint16_t>(c)))
                        : double(nx::bf16_to_float(static_cast<std::uint16_t>(c)));
    };
    const auto encode = [&](double x) { return which == 0 ? double_to_f16(x) : double_to_bf16(x); };
    const std::uint32_t inf = which == 0 ? 0x7C00u : 0x7F80u;
    for (std::uint32_t c = 0; c < 0x10000u; ++c) {
      if ((c & 0x7FFFu) > inf) continue;  // NaN
      ASSERT_EQ(encode(decode(c)), c) << which << " " << c;
    }
    for (std::uint32_t c = 0; c + 1 < inf; ++c) {  // positive finite codes, finite neighbour
      const double mid = (decode(c) + decode(c + 1)) / 2.0;  // exact in double
      const std::uint32_t even = (c & 1u) ? c + 1 : c;
      ASSERT_EQ(encode(mid), even) << which << " " << c;
      ASSERT_EQ(encode(-mid), even | 0x8000u) << which << " " << c;
      ASSERT_EQ(encode(std::nextafter(mid, 0.0)), c) << which << " " << c;
      ASSERT_EQ(encode(std::nextafter(mid, INFINITY)), c + 1) << which << " " << c;
    }
  }
  // Overflow: from the midpoint between the largest finite value and the next power of two on.
  EXPECT_EQ(double_to_f16(65520.0), 0x7C00);
  EXPECT_EQ(double_to_f16(std::nextafter(65520.0, 0.0)), 0x7BFF);
  EXPECT_EQ(double_to_bf16(0x1.FFp127), 0x7F80);
  EXPECT_EQ(double_to_bf16(std::nextafter(0x1.FFp127, 0.0)), 0x7F7F);
  EXPECT_EQ(double_to_f16(1e6), 0x7C00);
  EXPECT_EQ(double_to_f16(-1e6), 0xFC00);
  EXPECT_EQ(double_to_f16(NAN) & 0x7FFF, 0x7E00);
  EXPECT_EQ(double_to_bf16(1e39), 0x7F80);
  EXPECT_EQ(double_to_bf16(-NAN) & 0x7FFF, 0x7FC0);
  EXPECT_EQ(double_to_f16(1e-9), 0x0000);  // below half the smallest subnormal
}

TEST_F(NpyTest, WriteValuesRoundsOnceAndOverflowsToInf) {
  write_values(path("y.npy"), {3}, {1.0 + 0x1p-30, 1e39, -1e39}, DType::f32);
  const FloatTensor t = read_float_tensor(path("y.npy"));
  EXPECT_EQ(t.matrix.data[0], 1.0f);
  EXPECT_EQ(t.matrix.data[1], INFINITY);
  EXPECT_EQ(t.matrix.data[2], -INFINITY);
  write_values(path("b.npy"), {1, 2}, {1.0 + 0x1p-8, 1.0 + 0x1p-8 + 0x1p-40}, DType::bf16);
  const Array a = read(path("b.npy"));
  EXPECT_EQ(a.type, Type::bf16);
  std::uint16_t b[2];
  std::memcpy(b, a.bytes.data(), 4);
  EXPECT_EQ(b[0], 0x3F80);  // tie to even
  EXPECT_EQ(b[1], 0x3F81);  // just above the tie: no double rounding through float
}

}  // namespace
}  // namespace fp4jit::npy
