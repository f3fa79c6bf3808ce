// Engine::gemm on the host backend against Engine::gemm on the reference backend, for every preset
// and its three GEMMs: FP32 output within a relative Frobenius error of 1e-5 with the whole
// epilogue (alpha, bias, beta * C with C aliasing the output, OCC compensation for msfp4 fprop);
// BF16 output within its rounding. Operands quantized by the reference, ragged M and N.
#include <cmath>

#include "runtime/host_tensor.hpp"
#include "tests/host/host_test_util.hpp"

namespace fp4jit::host::test {
namespace {

Engine& engine(BackendKind kind) {
  static Engine host([] {
    EngineOptions o;
    o.backend = BackendKind::host;
    o.use_cache = false;
    return o;
  }());
  static Engine ref([] {
    EngineOptions o;
    o.backend = BackendKind::reference;
    return o;
  }());
  return kind == BackendKind::host ? host : ref;
}

struct Case {
  std::string recipe;
  GemmOp op;
};

class EngineGemm : public testing::TestWithParam<Case> {};

double rel_frobenius(const std::vector<float>& got, const std::vector<float>& ref) {
  double err = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    err += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(err / norm);
}

TEST_P(EngineGemm, HostMatchesReferenceWithTheWholeEpilogue) {
  const Recipe recipe = parse_recipe(GetParam().recipe);
  const GemmOp op = GetParam().op;
  const GemmShape s{67, 96, 128};  // N: whole blocks of the re-quantized copies (tetrajet)
  const GemmRoles roles = gemm_roles(op);
  const auto [ar, ac] = source_shape(roles.a, s.m, s.k);
  const auto [br, bc] = source_shape(roles.b, s.n, s.k);
  const Matrix<float> xa = random_matrix(ar, ac, 31), xb = random_matrix(br, bc, 32);
  const QuantizedTensor qa = reference::quantize(recipe, roles.a, xa, {.seed = 3});
  const QuantizedTensor qb = reference::quantize(recipe, roles.b, xb, {.seed = 4});
  Buffers ba(qa.layout), bb(qb.layout);
  store_quantized(qa, ba.view());
  store_quantized(qb, bb.view());
  const bool occ = recipe[roles.a].occ && op == GemmOp::fprop;
  HostTensor weight = make_tensor(xb, DType::bf16);  // the high-precision weight, W [N, K]
  std::vector<float> bias(static_cast<std::size_t>(s.n));
  for (std::size_t j = 0; j < bias.size(); ++j) bias[j] = 0.25f * static_cast<float>(j % 7) - 0.5f;
  const Matrix<float> c0 = random_matrix(s.m, s.n, 33);

  std::vector<float> out[2];
  for (int b = 0; b < 2; ++b) {
    out[b] = c0.data;  // C aliases the output: out = alpha * AB^T + bias + beta * out
    GemmEpilogue e;
    e.alpha = 0.75f;
    e.beta = -1.5f;
    e.c = TensorView{out[b].data(), DType::f32, s.m, s.n, 0};
    e.bias = bias.data();
    if (occ) e.occ_weight = weight.view();
    engine(b == 0 ? BackendKind::reference : BackendKind::host)
        .gemm(recipe, op, ba.view(), bb.view(), s, e.c, e, nullptr);
  }
  EXPECT_LT(rel_frobenius(out[1], out[0]), 1e-5) << GetParam().recipe << " " << name(op);

  // A BF16 or FP16 bias of the same values (exact in both): the same result, bit for bit.
  for (const DType bt : {DType::bf16, DType::f16}) {
    std::vector<std::uint16_t> bias16;
    const nx::MiniFloat half{5, 10, 15, true, nx::Special::ieee};
    for (float v : bias)
      bias16.push_back(bt == DType::bf16 ? nx::float_to_bf16(v)
                                         : static_cast<std::uint16_t>(
                                               nx::mf_encode(half, v, nx::Round::even, false)));
    std::vector<float> again = c0.data;
    GemmEpilogue e;
    e.alpha = 0.75f;
    e.beta = -1.5f;
    e.c = TensorView{again.data(), DType::f32, s.m, s.n, 0};
    e.bias = bias16.data();
    e.bias_dtype = bt;
    if (occ) e.occ_weight = weight.view();
    engine(BackendKind::host).gemm(recipe, op, ba.view(), bb.view(), s, e.c, e, nullptr);
    EXPECT_EQ(again, out[1]) << GetParam().recipe << " " << name(op) << " bias " << name(bt);
  }

  // BF16 output, plain epilogue: one rounding of values that agree to ~1e-6.
  std::vector<std::uint16_t> h16[2];
  for (int b = 0; b < 2; ++b) {
    h16[b].assign(static_cast<std::size_t>(s.m * s.n), 0xFFFF);
    engine(b == 0 ? BackendKind::reference : BackendKind::host)
        .gemm(recipe, op, ba.view(), bb.view(), s,
              TensorView{h16[b].data(), DType::bf16, s.m, s.n, 0});
  }
  std::vector<float> f16[2];
  for (int b = 0; b < 2; ++b)
    for (std::uint16_t h : h16[b]) f16[b].push_back(nx::bf16_to_float(h));
  EXPECT_LT(rel_frobenius(f16[1], f16[0]), 4e-3) << GetParam().recipe << " " << name(op) << " bf16";
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& p : presets())
    for (const auto& op : gemm_op_names()) out.push_back({std::string(p.name), op.value});
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryPresetAndGemm, EngineGemm, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& p) {
                           return p.param.recipe + "_" + std::string(name(p.param.op));
                         });

}  // namespace
}  // namespace fp4jit::host::test
