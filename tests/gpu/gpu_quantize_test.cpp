// The CUDA backend on a GPU against the reference, byte for byte: every preset (and the
// emulator's override recipes) and operand, alone and as pairs from one read; random and
// adversarial inputs in every input type; aligned, ragged and strided shapes; outputs poisoned
// (0xA5) before every run; dequantize and DGE. Skipped where there is no GPU. Cases beyond this
// sweep: gpu_quantize_cases_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "reference/reference.hpp"
#include "runtime/backend.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/host_tensor.hpp"
#include "tests/emu/emu_recipes.hpp"
#include "tests/gpu/gpu_device.hpp"
#include "tests/gpu/quant_check.hpp"

namespace fp4jit::test {
namespace {

struct Case {
  std::string recipe;
  Role role;
  bool pair;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.recipe << " " << name(c.role) << (c.pair ? " pair" : "");
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const auto& r : emu::emu_recipes()) {
    for (Role role : kAllRoles) out.push_back({r, role, false});
    for (Role role : {Role::x, Role::w, Role::dy}) out.push_back({r, role, true});
  }
  return out;
}
std::string case_name(const testing::TestParamInfo<Case>& info) {
  return test_name(info.param.recipe + "_" + std::string(name(info.param.role)) +
                   (info.param.pair ? "_pair" : ""));
}
class GpuQuantize : public testing::TestWithParam<Case> {};

TEST_P(GpuQuantize, MatchesReference) {
  REQUIRE_GPU();
  const Case& c = GetParam();
  const Recipe recipe = parse_recipe(c.recipe);
  const Role partner = transposed_copy(c.role);
  const bool occ = recipe[c.role].occ || (c.pair && recipe[partner].occ);
  struct Variant {
    InputKind kind;
    DType dtype;
    std::int64_t free_dim, min_k;
    std::int64_t pad;
    std::uint64_t offset;
  };
  const Variant variants[] = {
      {InputKind::random, DType::bf16, 256, 1024, 0, 0},
      {InputKind::random, DType::f32, 37, 320, 0, 5},
      {InputKind::random, DType::f16, 100, 160, 0, 3},
      {InputKind::adversarial, DType::bf16, 37, 256, 0, 0},
      {InputKind::adversarial, DType::f32, 128, 512, 0, 17},
      {InputKind::random, DType::bf16, 64, 384, 8, 1},
      {InputKind::adversarial, DType::f16, 200, 192, 24, 9},
      // Rows of several 1024-element chunks, the last one partial; then a row stride one element
      // longer than the row (no row but the first 16-byte aligned).
      {InputKind::adversarial, DType::f32, 20, 3000, 0, 0},
      {InputKind::random, DType::bf16, 24, 2144, 1, 7},
  };
  std::uint32_t seed = 100;
  for (const Variant& v : variants) {
    Shape shape;
    if (c.pair) {
      shape.rows = round_up(v.free_dim + 32, k_multiple(recipe, partner));
      shape.cols = round_up(v.min_k, k_multiple(recipe, c.role));
    } else {
      shape = shape_for(recipe, c.role, v.free_dim, v.min_k);
    }
    SCOPED_TRACE(fmt::format("{} {} [{}, {}] pad {} offset {}", input_kind_name(v.kind),
                             name(v.dtype), shape.rows, shape.cols, v.pad, v.offset));
    HostInput in = make_input(v.kind, v.dtype, shape.rows, shape.cols, ++seed, !occ);
    DeviceInput din(in, v.pad);
    const QuantizeArgs args{seed * 7919u, v.offset};
    const reference::QuantizeOptions ropt{.seed = args.seed, .offset = args.offset};
    const QuantizedTensor ref = reference::quantize(recipe, c.role, in.values, ropt);
    // Two-level operands again with the reference's amax given (delayed scaling, one pass).
    const bool two_level = recipe[c.role].rule == ScaleRule::two_level ||
                           (c.pair && recipe[partner].rule == ScaleRule::two_level);
    cuda::DeviceBuffer amax_in(8);
    if (!c.pair) {
      for (const bool given : {false, true}) {
        if (given && !two_level) break;
        HostOperand out(ref.layout, shape.rows * shape.cols);
        DeviceOperand dout(out);
        QuantizeArgs ga = args;
        if (given) {
          amax_in.upload(&ref.amax, 4);
          ga.amax = amax_in.get<float>();
        }
        engine.quantize(recipe, c.role, din.view, dout.view(), ga);
        Gpu::get()->scope.synchronize();
        dout.download(out);
        ASSERT_EQ(compare(ref, out, recipe[c.role].occ), "") << (given ? "amax given" : "");
      }
      continue;
    }
    const QuantizedTensor ref_t = reference::quantize(recipe, partner, in.values, ropt);
    for (const bool given : {false, true}) {
      if (given && !two_level) break;
      HostOperand out(ref.layout, shape.rows * shape.cols);
      HostOperand out_t(ref_t.layout, shape.rows * shape.cols);
      DeviceOperand dout(out), dout_t(out_t);
      QuantizeArgs ga = args;
      if (given) {
        const float both[2] = {ref.amax, ref_t.amax};
        amax_in.upload(both, 8);
        ga.amax = amax_in.get<float>();
        ga.amax_transposed = amax_in.get<float>() + 1;
      }
      engine.quantize_pair(recipe, c.role, din.view, dout.view(), dout_t.view(), ga);
      Gpu::get()->scope.synchronize();
      dout.download(out);
      dout_t.download(out_t);
      ASSERT_EQ(compare(ref, out, recipe[c.role].occ), "")
          << "row-wise operand " << name(c.role) << (given ? ", amax given" : "");
      ASSERT_EQ(compare(ref_t, out_t, recipe[partner].occ), "")
          << "transposed operand " << name(partner) << (given ? ", amax given" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, GpuQuantize, testing::ValuesIn(all_cases()), case_name);

// Column sums (a bias gradient) beside dY's pair and beside one operand alone, on the device:
// reference::column_sums' bits in every output type, the operands unchanged by them.
class GpuColumnSums : public testing::TestWithParam<std::string> {};
TEST_P(GpuColumnSums, PairAndAloneMatchReference) {
  REQUIRE_GPU();
  const Recipe recipe = parse_recipe(GetParam());
  struct Variant {
    InputKind kind;
    DType in, out;
    std::int64_t rows, cols, pad;
  };
  const Variant variants[] = {{InputKind::random, DType::bf16, DType::bf16, 1000, 768, 0},
                              {InputKind::random, DType::f32, DType::f32, 130, 320, 0},
                              {InputKind::adversarial, DType::f16, DType::f32, 200, 192, 8},
                              {InputKind::random, DType::bf16, DType::f16, 4096, 1024, 1}};
  std::uint32_t seed = 500;
  for (const Variant& v : variants) {
    const std::int64_t rows = round_up(v.rows, k_multiple(recipe, Role::dyt));
    const std::int64_t cols = round_up(v.cols, k_multiple(recipe, Role::dy));
    SCOPED_TRACE(fmt::format("{} {} [{}, {}] pad {} -> {}", input_kind_name(v.kind), name(v.in),
                             rows, cols, v.pad, name(v.out)));
    HostInput in = make_input(v.kind, v.in, rows, cols, ++seed, true);
    DeviceInput din(in, v.pad);
    QuantizeArgs args{seed * 131u, 0};
    const reference::QuantizeOptions ropt{.seed = args.seed, .offset = args.offset};
    const QuantizedTensor ref = reference::quantize(recipe, Role::dy, in.values, ropt);
    const QuantizedTensor ref_t = reference::quantize(recipe, Role::dyt, in.values, ropt);
    const std::size_t bytes = static_cast<std::size_t>(cols * dtype_size(v.out));
    std::vector<std::uint8_t> sums(bytes, kPoison);
    cuda::DeviceBuffer dsums(bytes);
    for (const bool pair : {true, false}) {
      dsums.upload(sums.data(), bytes);
      args.column_sums = dsums.get();
      args.column_sums_dtype = v.out;
      HostOperand out(ref.layout, rows * cols), out_t(ref_t.layout, rows * cols);
      DeviceOperand dout(out), dout_t(out_t);
      if (pair)
        engine.quantize_pair(recipe, Role::dy, din.view, dout.view(), dout_t.view(), args);
      else
        engine.quantize(recipe, Role::dy, din.view, dout.view(), args);
      Gpu::get()->scope.synchronize();
      std::vector<std::uint8_t> got(bytes);
      dsums.download(got.data(), bytes);
      dout.download(out);
      const char* what = pair ? "pair" : "one operand";
      ASSERT_EQ(compare_column_sums(in.values, got, v.out), "") << what;
      ASSERT_EQ(compare(ref, out, false), "") << what;
      if (pair) {
        dout_t.download(out_t);
        ASSERT_EQ(compare(ref_t, out_t, false), "") << what;
      }
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Recipes, GpuColumnSums,
                         testing::Values("mxfp4", "nvfp4", "tetrajet", "ue5m3", "msfp4"),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

class GpuDequantize : public testing::TestWithParam<std::string> {};

TEST_P(GpuDequantize, MatchesReference) {
  REQUIRE_GPU();
  const Recipe recipe = parse_recipe(GetParam());
  for (Role role : kAllRoles) {
    const Shape shape = shape_for(recipe, role, 45, 256);
    HostInput in =
        make_input(InputKind::adversarial, DType::f32, shape.rows, shape.cols, 11, false);
    QuantizedTensor q = reference::quantize(recipe, role, in.values, {.seed = 3, .offset = 0});
    q.residual_index.clear();
    q.residual_value.clear();
    HostOperand stored(q.layout, 0);
    QuantizedView hv = stored.view();
    hv.residual_capacity = 0;
    store_quantized(q, hv);
    DeviceOperand dq(stored);
    const Matrix<double> expect = reference::dequantize_operand(recipe, q);
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(fmt::format("operand {} out {}", name(role), name(dt)));
      const std::size_t bytes =
          static_cast<std::size_t>(q.layout.rows * q.layout.cols * dtype_size(dt));
      std::vector<std::uint8_t> got(bytes, kPoison), want(bytes);
      cuda::DeviceBuffer dout(bytes);
      dout.upload(got.data(), bytes);
      from_matrix(expect, TensorView{want.data(), dt, q.layout.rows, q.layout.cols, 0});
      engine.dequantize(recipe, role, dq.view(), shape.rows, shape.cols,
                        TensorView{dout.get(), dt, q.layout.rows, q.layout.cols, 0});
      Gpu::get()->scope.synchronize();
      dout.download(got.data(), bytes);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), bytes), 0);
    }
  }
}

TEST_P(GpuDequantize, DgeMatchesReference) {
  REQUIRE_GPU();
  const Recipe recipe = parse_recipe(GetParam());
  if (!recipe[Role::w].dge) GTEST_SKIP() << "no DGE in this recipe";
  for (InputKind kind : {InputKind::random, InputKind::adversarial}) {
    HostInput w = make_input(kind, DType::bf16, 300, 1002, 5, true);
    DeviceInput dw(w, 0);
    const Matrix<float> expect = reference::dge_factor(recipe, w.values);
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::size_t bytes = static_cast<std::size_t>(300 * 1002 * dtype_size(dt));
      std::vector<std::uint8_t> got(bytes, kPoison), want(bytes);
      cuda::DeviceBuffer dout(bytes);
      dout.upload(got.data(), bytes);
      from_matrix(expect, TensorView{want.data(), dt, 300, 1002, 0});
      engine.dge(recipe, dw.view, TensorView{dout.get(), dt, 300, 1002, 0});
      Gpu::get()->scope.synchronize();
      dout.download(got.data(), bytes);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
          << input_kind_name(kind) << " " << name(dt);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, GpuDequantize, testing::ValuesIn(emu::emu_recipes()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return test_name(p.param);
                         });

TEST(GpuEngine, DescribesTheDeviceAndRejectsHostPointers) {
  REQUIRE_GPU();
  EXPECT_NE(engine.description().find("cuda:"), std::string::npos) << engine.description();
  std::printf("%s\n", engine.description().c_str());
  const Recipe recipe = parse_recipe("mxfp4");
  std::vector<float> host(64 * 64, 1.0f);
  HostOperand out(engine.layout(recipe, Role::x, 64, 64), 0);
  DeviceOperand dout(out);
  try {
    engine.quantize(recipe, Role::x, TensorView{host.data(), DType::f32, 64, 64, 0}, dout.view());
    FAIL() << "a host pointer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
}

}  // namespace
}  // namespace fp4jit::test
