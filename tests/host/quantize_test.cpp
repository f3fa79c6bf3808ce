// Host quantize vs the reference, byte for byte: every preset x operand x input dtype, random and
// adversarial inputs, aligned and ragged shapes, outputs poisoned first.
#include "tests/host/host_test_util.hpp"

namespace fp4jit::host::test {
namespace {

struct Case {
  std::string recipe;
  Role role;
  DType dtype;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string n = info.param.recipe + "_" + std::string(name(info.param.role)) + "_" +
                  std::string(name(info.param.dtype));
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    for (const auto& p : presets())
      for (Role role : kAllRoles) cases.push_back({std::string(p.name), role, d});
  }
  for (Role role : kAllRoles) cases.push_back({"mxfp4:round=even", role, DType::bf16});
  for (Role role : kAllRoles) cases.push_back({"nvfp4:round=zero", role, DType::f32});
  cases.push_back(
      {"nvfp4:x.had=32,w.had=32,x.had.signs=random,w.had.signs=random", Role::x, DType::bf16});
  cases.push_back(
      {"nvfp4:x.had=128,w.had=128,x.had.signs=random,w.had.signs=random", Role::w, DType::f32});
  cases.push_back({"nvfp4:dyt.had=64,xt.had=64,dyt.had.signs=random,xt.had.signs=random", Role::dyt,
                   DType::f16});
  cases.push_back({"ue5m3:ue5m3=61440", Role::dy, DType::bf16});
  cases.push_back({"ue5m3:ue5m3=122880", Role::x, DType::f32});
  cases.push_back({"mxfp4:elem=e4m3", Role::x, DType::bf16});
  cases.push_back({"mxfp4:elem=e5m2,round=stochastic", Role::wt, DType::f32});
  cases.push_back({"mxfp4:elem=e4m3,round=stochastic,sr.bits=16", Role::dyt, DType::f32});
  cases.push_back({"mxfp4:x.block=32x32", Role::x, DType::f32});
  cases.push_back({"mxfp4:x.block=4x64", Role::x, DType::f32});
  cases.push_back({"msfp4:x.occ=off,x.block=tensor", Role::x, DType::bf16});
  cases.push_back({"msfp4:occ=0.9", Role::xt, DType::f32});
  cases.push_back({"msfp4:occ=0.6", Role::x, DType::bf16});
  return cases;
}

class HostQuantize : public testing::TestWithParam<Case> {};

void check_one(const Recipe& recipe, Role role, DType dtype, const Matrix<float>& values,
               const char* what) {
  HostTensor t = make_tensor(values, dtype);
  const Matrix<float> seen = values_of(t);
  const reference::QuantizeOptions opt{.seed = 0x1234567890ull, .offset = 17};
  const QuantizedTensor ref = reference::quantize(recipe, role, seen, opt);
  Buffers out(ref.layout);
  backend().quantize(recipe, role, t.view(), out.view(), {.seed = opt.seed, .offset = opt.offset},
                     nullptr);
  const std::string diff = compare(ref, out);
  ASSERT_TRUE(diff.empty()) << what << " [" << values.rows << ", " << values.cols << "]: " << diff;
}

TEST_P(HostQuantize, BitIdenticalToReference) {
  const Recipe recipe = parse_recipe(GetParam().recipe);
  const Role role = GetParam().role;
  const bool requant = recipe[role].src == Source::requant;
  // (operand rows, K): aligned, and ragged rows against 16- and 32-row blocks. A re-quantized
  // operand also needs its forward copy's K (the other dimension) to be a whole number of blocks.
  const Block& block = recipe[role].block;
  const std::int64_t kmul =
      std::max({recipe[role].had.size, 32, block.kind == Block::Kind::tile ? block.cols : 0});
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{64, 4 * kmul},
                                                                     {requant ? 96 : 67, 3 * kmul}};
  for (const auto& [rows, k] : shapes) {
    const auto [sr, sc] = source_shape(role, rows, k);
    check_one(recipe, role, GetParam().dtype, random_matrix(sr, sc, 11), "random");
    check_one(recipe, role, GetParam().dtype, adversarial_matrix(sr, sc, 5), "adversarial");
    check_one(recipe, role, GetParam().dtype, adversarial_matrix(sr, sc, 6), "adversarial");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPresetOperandDtype, HostQuantize, testing::ValuesIn(all_cases()),
                         case_name);

}  // namespace
}  // namespace fp4jit::host::test

namespace fp4jit::host::test {
namespace {

// OCC rows whose quantile is a zero while the row holds both +0 and -0: the clamped values take
// the sign of whichever zero the reference's sort leaves at the quantile position.
TEST(HostOcc, ZeroQuantilesWithSignedZerosMatchTheReference) {
  for (const char* text : {"msfp4", "msfp4:occ=0.97"}) {
    const Recipe recipe = parse_recipe(text);
    std::mt19937 gen(3);
    Matrix<float> x(40, 256);
    for (std::int64_t r = 0; r < x.rows; ++r)
      for (std::int64_t c = 0; c < x.cols; ++c) {
        const std::uint32_t u = gen() % 100;
        x(r, c) = u < 1 ? -1.5f : (u < 2 ? 2.0f : ((gen() & 1u) ? -0.0f : 0.0f));
      }
    for (Role role : {Role::x, Role::xt}) {
      const QuantizedTensor ref = reference::quantize(recipe, role, x);
      HostTensor t = make_tensor(x, DType::f32);
      Buffers out(ref.layout);
      backend().quantize(recipe, role, t.view(), out.view(), {}, nullptr);
      EXPECT_EQ(compare(ref, out), "") << text << " " << name(role);
    }
  }
}

}  // namespace
}  // namespace fp4jit::host::test
