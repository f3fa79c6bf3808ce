// Every config (vector width, band height, unroll, threads) gives the same bytes; GEMM configs
// all stay within the error bound; bad configs are refused with the rule they break.
#include "runtime/host_tensor.hpp"
#include "tests/host/host_test_util.hpp"

namespace fp4jit::host::test {
namespace {

class HostConfigSweep : public testing::TestWithParam<std::string> {};

TEST_P(HostConfigSweep, QuantizeBitIdentical) {
  HostBackend& b = backend(GetParam());
  const std::vector<std::pair<std::string, Role>> cases = {
      {"nvfp4", Role::x},   {"nvfp4", Role::w},  {"nvfp4", Role::dyt}, {"nvfp4", Role::dy},
      {"msfp4", Role::x},   {"msfp4", Role::xt}, {"msfp4", Role::dy},  {"tetrajet", Role::wt},
      {"mxfp4", Role::dyt}, {"ue5m3", Role::dy}};
  for (const auto& [text, role] : cases) {
    const Recipe recipe = parse_recipe(text);
    const auto [sr, sc] = source_shape(role, recipe[role].src == Source::requant ? 96 : 69, 96);
    for (const Matrix<float>& x : {random_matrix(sr, sc, 1), adversarial_matrix(sr, sc, 2)}) {
      const QuantizedTensor ref = reference::quantize(recipe, role, x, {.seed = 77, .offset = 5});
      HostTensor t = make_tensor(x, DType::f32);
      Buffers out(ref.layout);
      b.quantize(recipe, role, t.view(), out.view(), {.seed = 77, .offset = 5}, nullptr);
      const std::string diff = compare(ref, out);
      ASSERT_TRUE(diff.empty()) << GetParam() << " " << text << " " << name(role) << ": " << diff;
    }
  }
}

TEST_P(HostConfigSweep, GemmWithinBound) {
  HostBackend& b = backend(GetParam());
  const Recipe recipe = parse_recipe("nvfp4");
  const Matrix<float> x = random_matrix(53, 160, 3), w = random_matrix(41, 160, 4);
  const QuantizedTensor qa = reference::quantize(recipe, Role::x, x),
                        qb = reference::quantize(recipe, Role::w, w);
  Buffers ba(qa.layout), bb(qb.layout);
  store_quantized(qa, ba.view());
  store_quantized(qb, bb.view());
  const Matrix<double> ref = reference::gemm(recipe, qa, qb);
  std::vector<float> c(53 * 41);
  b.gemm(recipe, {Role::x, qa.layout, ba.view()}, {Role::w, qb.layout, bb.view()}, c.data(), 41);
  double err = 0, norm = 0;
  for (std::int64_t i = 0; i < ref.size(); ++i) {
    err += (c[static_cast<std::size_t>(i)] - ref.data[static_cast<std::size_t>(i)]) *
           (c[static_cast<std::size_t>(i)] - ref.data[static_cast<std::size_t>(i)]);
    norm += ref.data[static_cast<std::size_t>(i)] * ref.data[static_cast<std::size_t>(i)];
  }
  EXPECT_LT(std::sqrt(err / norm), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Configs, HostConfigSweep,
                         testing::Values("vw=4,band=1,threads=1,mr=1,nr=4,kc=7,mc=1",
                                         "vw=8,band=32,unroll=2,threads=3,mr=4,nr=16,kc=64,mc=16",
                                         "vw=16,band=16,threads=1",
                                         "vw=32,band=8,unroll=4,threads=2,mr=3,nr=64,kc=32,mc=9"),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return "config" + std::to_string(p.index);
                         });

TEST(HostConfigText, RejectsBadValues) {
  EXPECT_THROW(parse_host_config("vw=12"), Error);
  EXPECT_THROW(parse_host_config("nr=24,vw=16"), Error);
  EXPECT_THROW(parse_host_config("bogus=1"), Error);
  EXPECT_THROW(parse_host_config("vw=eight"), Error);
  EXPECT_EQ(parse_host_config("vw=8,threads=3").threads, 3);
}

}  // namespace
}  // namespace fp4jit::host::test
