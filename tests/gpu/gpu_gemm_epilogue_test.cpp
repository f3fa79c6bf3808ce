// The GEMM epilogues on a GPU: split-K in clusters and TMA stores of D against the paths they
// replace, bit for bit; alpha, bias, beta * C aliasing a strided output, OCC compensation and BF16
// output on one small case per kernel path (the subset compute-sanitizer runs). Skipped without a
// GPU.
#include "tests/gpu/gpu_gemm_common.hpp"

namespace fp4jit::test {
namespace {

// Split-K in clusters sums the same partials in the same order as split-K through global memory:
// the same output, bit for bit, on the mx and both nv paths, with ragged edges (200 x 1000 x 1440).
TEST(GpuGemmSwap, ClusterSplitKMatchesGlobalSplitKBitForBit) {
  REQUIRE_GPU();
  for (const char* recipe : {"mxfp4", "nvfp4", "ue5m3"})
    for (const GemmShape& sh : {GemmShape{200, 1000, 1440}, GemmShape{128, 4096, 4096}}) {
      const GemmCase c{recipe, GemmOp::fprop, sh, "", false};
      CaseData s;
      ASSERT_EQ(prepare(engine, c, s), "");
      std::vector<std::vector<float>> outs;
      for (const char* choice :
           {"sw=1,bn=128,ps=4,rg=8m,pp=1,sk=4", "sw=1,bn=128,ps=4,rg=8m,pp=1,cs=1,sk=4"}) {
        cuda::DeviceBuffer out(static_cast<std::size_t>(sh.m * sh.n * 4));
        out.fill(0xFF);
        {
          const KernelOverride kernel(choice);
          engine.gemm(s.recipe, c.op, s.a->view, s.b->view, sh,
                      TensorView{out.get(), DType::f32, sh.m, sh.n, 0});
        }
        Gpu::get()->scope.synchronize();
        outs.emplace_back(static_cast<std::size_t>(sh.m * sh.n));
        out.download(outs.back().data(), outs.back().size() * 4);
      }
      std::int64_t differ = 0, nan = 0;
      for (std::size_t i = 0; i < outs[0].size(); ++i) {
        differ += std::memcmp(&outs[0][i], &outs[1][i], 4) != 0 ? 1 : 0;
        nan += std::isnan(outs[1][i]) ? 1 : 0;
      }
      EXPECT_EQ(nan, 0) << recipe << " " << gemm_shape_text(sh) << ": unwritten outputs";
      EXPECT_EQ(differ, 0) << recipe << " " << gemm_shape_text(sh)
                           << ": outputs differing from the global split-K's";
    }
}

// The staged kernel's epilogue through shared memory and TMA stores writes the same bits as its
// register stores, for every output type, with alpha and each of its bodies (a bias and beta * C
// aliasing D, a bias alone, neither), at ragged edges (1000 x 3000: the last row and column tiles
// clipped; 8191 x 136).
TEST(GpuGemmStaged, TmaStoresMatchRegisterStoresBitForBit) {
  REQUIRE_GPU();
  const struct {
    const char* recipe;
    GemmOp op;
    const char* choice;  // without ",ts=..."
  } cases[] = {{"mxfp4", GemmOp::fprop, "sg=1,bn=192,ps=3,rg=8m,pp=4"},
               {"nvfp4", GemmOp::dgrad, "sg=1,bn=128,ps=3,rg=8m"},
               {"msfp4", GemmOp::fprop, "sg=1,bn=128,ps=3,rg=8m"},
               {"msfp4", GemmOp::wgrad, "sg=1,bn=128,ps=3,rg=8m,pp=4"}};
  for (const auto& k : cases)
    for (const GemmShape& sh : {GemmShape{1000, 3000, 4096}, GemmShape{8191, 136, 2048}}) {
      const GemmCase c{k.recipe, k.op, sh, "", false};
      CaseData s;
      ASSERT_EQ(prepare(engine, c, s), "");
      std::vector<float> bias(static_cast<std::size_t>(sh.n));
      for (std::size_t j = 0; j < bias.size(); ++j)
        bias[j] = 0.125f * static_cast<float>(j % 7) - 0.5f;
      cuda::DeviceBuffer dbias = upload(bias);
      // The TMA epilogue's three bodies: with beta * C (and a bias), with a bias alone, with
      // neither (the last two without per-element tests).
      enum Terms { bias_and_c, bias_only, plain };
      for (const Terms terms : {bias_and_c, bias_only, plain})
        for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
          const std::size_t bytes = static_cast<std::size_t>(sh.m * sh.n) * dtype_size(dt);
          std::vector<unsigned char> init(bytes);
          for (std::size_t i = 0; i < bytes; ++i)  // small finite values of every type
            init[i] = static_cast<unsigned char>(dt == DType::f32 ? (i % 4 == 3 ? 0x3c : i * 7)
                                                                  : (i % 2 == 1 ? 0x3c : i * 7));
          std::vector<std::vector<unsigned char>> outs;
          for (const char* ts : {",ts=0,sk=1", ",ts=1,sk=1"}) {
            cuda::DeviceBuffer out = upload(init);
            GemmEpilogue e;
            e.alpha = 0.5f;
            const TensorView ov{out.get(), dt, sh.m, sh.n, 0};
            if (terms != plain) e.bias = dbias.get<float>();
            if (terms == bias_and_c) {
              e.beta = -2.0f;
              e.c = ov;
            }
            if (s.occ) e.occ_weight = TensorView{s.b->source.get(), DType::f32, sh.n, sh.k, 0};
            {
              const KernelOverride kernel(std::string(k.choice) + ts);
              engine.gemm(s.recipe, c.op, s.a->view, s.b->view, sh, ov, e);
            }
            Gpu::get()->scope.synchronize();
            outs.emplace_back(bytes);
            out.download(outs.back().data(), bytes);
          }
          std::int64_t differ = 0;
          const std::size_t es = dtype_size(dt);
          for (std::size_t i = 0; i < bytes; i += es)
            differ += std::memcmp(&outs[0][i], &outs[1][i], es) != 0 ? 1 : 0;
          EXPECT_EQ(differ, 0) << k.recipe << " " << name(k.op) << " " << gemm_shape_text(sh) << " "
                               << name(dt)
                               << (terms == bias_and_c  ? " with bias and C"
                                   : terms == bias_only ? " with bias"
                                                        : " plain")
                               << ": elements differing from the register stores'";
          std::int64_t changed = 0;
          for (std::size_t i = 0; i < bytes; i += es)
            changed += std::memcmp(&outs[1][i], &init[i], es) != 0 ? 1 : 0;
          EXPECT_GT(changed, sh.m * sh.n * 9 / 10) << "D mostly unwritten";
        }
    }
}

// The fused fallback of the staged and swapped mx paths leaves at once when the window held,
// without waiting for the kernel it depends on: the stream's next kernel must still find all of D.
// Here the next kernel quantizes D (as the next layer would) right after the GEMM, with no
// synchronization between; D starts as NaN, so any block read before the GEMM wrote it quantizes
// differently from the same D quantized after a synchronization. Three rounds on the staged
// (4096 x 4096 x 4096, about 0.14 ms) and the swapped (128 rows) kernel.
TEST(GpuGemmStaged, TheNextKernelOnTheStreamReadsAllOfD) {
  REQUIRE_GPU();
  for (const GemmShape& sh : {GemmShape{4096, 4096, 4096}, GemmShape{128, 4096, 4096}}) {
    const GemmCase c{"mxfp4", GemmOp::fprop, sh, "", false};
    CaseData s;
    ASSERT_EQ(prepare(engine, c, s), "");
    const std::string kernel = engine.gemm_kernel(s.recipe, c.op, sh);
    EXPECT_EQ(kernel.rfind(sh.m == 128 ? "sw=1," : "sg=1,", 0), 0u) << kernel;
    const QuantLayout l = quant_layout(s.recipe, Role::x, sh.m, sh.n);
    const std::size_t code_bytes = static_cast<std::size_t>(l.code_bytes()),
                      scale_bytes = static_cast<std::size_t>(l.scale_count());
    cuda::DeviceBuffer out(static_cast<std::size_t>(sh.m * sh.n) * 2);
    const TensorView d{out.get(), DType::bf16, sh.m, sh.n, 0};
    cuda::DeviceBuffer codes[2] = {cuda::DeviceBuffer(code_bytes), cuda::DeviceBuffer(code_bytes)};
    cuda::DeviceBuffer scales[2] = {cuda::DeviceBuffer(scale_bytes),
                                    cuda::DeviceBuffer(scale_bytes)};
    const auto view = [&](int i) {
      QuantizedView v;
      v.codes = codes[i].get<std::uint8_t>();
      v.scales = scales[i].get();
      return v;
    };
    for (int round = 0; round < 3; ++round) {
      out.fill(0xFF);  // BF16 NaN
      engine.gemm(s.recipe, c.op, s.a->view, s.b->view, sh, d);
      engine.quantize(s.recipe, Role::x, d, view(0));  // the same stream, no synchronization
      Gpu::get()->scope.synchronize();
      engine.quantize(s.recipe, Role::x, d, view(1));
      Gpu::get()->scope.synchronize();
      std::vector<std::uint8_t> got[2], sc[2];
      for (int i = 0; i < 2; ++i) {
        got[i].resize(code_bytes);
        codes[i].download(got[i].data(), code_bytes);
        sc[i].resize(scale_bytes);
        scales[i].download(sc[i].data(), scale_bytes);
      }
      std::vector<std::uint16_t> y(static_cast<std::size_t>(sh.m * sh.n));
      out.download(y.data(), y.size() * 2);
      std::int64_t nan = 0;
      for (std::uint16_t v : y) nan += (v & 0x7FFF) > 0x7F80 ? 1 : 0;
      EXPECT_EQ(nan, 0) << gemm_shape_text(sh) << " round " << round << ": D not fully written";
      std::int64_t differ = 0;
      for (std::size_t i = 0; i < code_bytes; ++i) differ += got[0][i] != got[1][i] ? 1 : 0;
      for (std::size_t i = 0; i < scale_bytes; ++i) differ += sc[0][i] != sc[1][i] ? 1 : 0;
      EXPECT_EQ(differ, 0) << gemm_shape_text(sh) << " round " << round
                           << ": the next kernel read D before the GEMM finished it";
    }
  }
}

// The FP16 bits of a value FP16 holds exactly as a normal number, or zero (the biases below).
std::uint16_t exact_f16(float v) {
  if (v == 0.0f) return std::signbit(v) ? 0x8000 : 0;
  int e = 0;
  const float m = std::frexp(std::fabs(v), &e);  // |v| = m 2^e, m in [0.5, 1)
  const auto mant = static_cast<std::uint32_t>((2.0f * m - 1.0f) * 1024.0f);
  return static_cast<std::uint16_t>((v < 0.0f ? 0x8000u : 0u) |
                                    (static_cast<std::uint32_t>(e + 14) << 10) | mant);
}

// The epilogue on one small case per kernel path (ms with OCC, mx with split-K, nv, ms_grad):
// out (row stride N + 5) = alpha * AB^T + bias + beta * out, FP32 and BF16.
class GpuGemmEpilogue : public testing::TestWithParam<GemmCase> {};

TEST_P(GpuGemmEpilogue, AlphaBiasBetaCAndOcc) {
  REQUIRE_GPU();
  const GemmCase& c = GetParam();
  CaseData s;
  if (const std::string why = prepare(engine, c, s); !why.empty()) GTEST_SKIP() << why;
  const GemmShape& sh = c.shape;
  const std::int64_t ld = sh.n + 5;
  const Matrix<float> c0 = random_matrix(sh.m, ld, 19);
  std::vector<float> bias(static_cast<std::size_t>(sh.n));
  for (std::size_t j = 0; j < bias.size(); ++j) bias[j] = 0.25f * static_cast<float>(j % 9) - 1.0f;
  cuda::DeviceBuffer out = upload(c0.data), dbias = upload(bias);
  GemmEpilogue e;
  e.alpha = 0.5f;
  e.beta = -2.0f;
  e.bias = dbias.get<float>();
  const TensorView ov{out.get(), DType::f32, sh.m, sh.n, ld};
  e.c = ov;
  if (s.occ) e.occ_weight = TensorView{s.b->source.get(), DType::f32, sh.n, sh.k, 0};
  const KernelOverride kernel(c.kernel);
  engine.gemm(s.recipe, c.op, s.a->view, s.b->view, sh, ov, e);
  std::vector<std::uint16_t> h16(static_cast<std::size_t>(sh.m * sh.n), 0xFFFF);
  cuda::DeviceBuffer out16 = upload(h16);
  GemmEpilogue plain;
  if (s.occ) plain.occ_weight = e.occ_weight;
  engine.gemm(s.recipe, c.op, s.a->view, s.b->view, sh,
              TensorView{out16.get(), DType::bf16, sh.m, sh.n, 0}, plain);
  Gpu::get()->scope.synchronize();
  std::vector<float> got(c0.data.size());
  out.download(got.data(), got.size() * 4);
  out16.download(h16.data(), h16.size() * 2);

  Reference ref{reference::dequantize_operand(s.recipe, s.a->host),
                reference::dequantize_operand(s.recipe, s.b->host)};
  if (s.occ) ref.residual = &s.a->host, ref.weight = &s.weight;
  double err = 0.0, norm = 0.0, err16 = 0.0, norm16 = 0.0;
  for (std::int64_t i = 0; i < sh.m; ++i) {
    const std::vector<double> prod = ref.row(i);
    for (std::int64_t j = 0; j < sh.n; ++j) {
      const double p = prod[static_cast<std::size_t>(j)];
      const double want = 0.5 * p + bias[static_cast<std::size_t>(j)] - 2.0 * c0(i, j);
      const double d = got[static_cast<std::size_t>(i * ld + j)] - want;
      err += d * d, norm += want * want;
      const std::uint32_t bits =
          static_cast<std::uint32_t>(h16[static_cast<std::size_t>(i * sh.n + j)]) << 16;
      float v16;
      std::memcpy(&v16, &bits, 4);
      err16 += (v16 - p) * (v16 - p), norm16 += p * p;
    }
    for (std::int64_t j = sh.n; j < ld; ++j)  // the gap between rows is never written
      EXPECT_EQ(got[static_cast<std::size_t>(i * ld + j)], c0(i, j))
          << "row " << i << " padding " << j;
  }
  std::cout << "GEMM_EPILOGUE " << c.recipe << " " << name(c.op) << " " << gemm_shape_text(sh)
            << " rel_frobenius=" << std::sqrt(err / norm)
            << " bf16_rel=" << std::sqrt(err16 / norm16) << "\n";
  EXPECT_LE(std::sqrt(err / norm), 1e-4);
  EXPECT_LE(std::sqrt(err16 / norm16), 4e-3);

  // The same bias in BF16 and in FP16 (its values are exact in both): the same output, bit for
  // bit (each bias type is read by its own load in the epilogues).
  for (DType bt : {DType::bf16, DType::f16}) {
    std::vector<std::uint16_t> bias16;
    for (float v : bias) bias16.push_back(bt == DType::bf16 ? nx::float_to_bf16(v) : exact_f16(v));
    cuda::DeviceBuffer out_b = upload(c0.data), dbias16 = upload(bias16);
    GemmEpilogue eb = e;
    eb.bias = dbias16.get();
    eb.bias_dtype = bt;
    const TensorView obv{out_b.get(), DType::f32, sh.m, sh.n, ld};
    eb.c = obv;
    engine.gemm(s.recipe, c.op, s.a->view, s.b->view, sh, obv, eb);
    Gpu::get()->scope.synchronize();
    std::vector<float> got_b(c0.data.size());
    out_b.download(got_b.data(), got_b.size() * 4);
    EXPECT_EQ(got_b, got) << name(bt) << " bias";
  }
}

std::vector<GemmCase> epilogue_cases() {
  const GemmCase base[] = {{"msfp4", GemmOp::fprop, {256, 384, 512}, ""},
                           {"msfp4", GemmOp::wgrad, {256, 384, 512}, ""},
                           {"msfp4", GemmOp::dgrad, {200, 320, 512}, ""},
                           {"mxfp4", GemmOp::fprop, {256, 384, 512}, ""},
                           {"tetrajet", GemmOp::wgrad, {128, 256, 8192}, ""},
                           {"nvfp4", GemmOp::dgrad, {200, 320, 512}, ""},
                           {"ue5m3", GemmOp::wgrad, {256, 384, 512}, ""}};
  std::vector<GemmCase> out;
  for (const char* kernel : {"fused", "staged", "swap"})
    for (GemmCase c : base) {
      if (std::string(kernel) == "swap" && (c.recipe == "msfp4")) continue;
      c.kernel = kernel;
      out.push_back(c);
    }
  // The swapped kernel's split-K in clusters: its own store path (each CTA of the cluster writes
  // a slice of the rows; beta * C reads the output it overwrites).
  out.push_back({"mxfp4", GemmOp::fprop, {256, 384, 512}, "sw=1,bn=128,ps=4,rg=8m,pp=1,cs=1,sk=4"});
  out.push_back({"nvfp4", GemmOp::dgrad, {200, 320, 512}, "sw=1,bn=64,ps=6,rg=8m,pp=1,cs=1,sk=2"});
  return out;
}

INSTANTIATE_TEST_SUITE_P(OnePerPath, GpuGemmEpilogue, testing::ValuesIn(epilogue_cases()),
                         case_name);

}  // namespace
}  // namespace fp4jit::test
