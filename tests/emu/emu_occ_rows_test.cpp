// occ_rows (templates/quantize/occ_rows.cuh), the one-pass OCC kernel of row-wise operands scaled
// per row, on the CPU emulator against the reference: rows built to take each of its paths (the
// bounded lists; NaN and Inf rows, lists over their capacity and quantiles too far out for the
// bound, which select over the whole row), every input type, aligned, ragged and padded rows,
// each chunk count, BF16 rows by the packed encoder (ties of both signs) and by floats, and the
// planner's choice between it and occ_select.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "reference/reference.hpp"
#include "runtime/cuda/plan.hpp"
#include "tests/emu/emu_run.hpp"
#include "tests/gpu/quant_check.hpp"

namespace fp4jit::test {
namespace {

// Row r of `in` (random already) rewritten as row kind r % 8:
//   0 random (the bounded lists)    1 a few NaN          2 +Inf and -Inf     3 constant
//   4 E2M1 midpoints (ties)         5 outlier columns    6 zeros, 1 in 97 not 7 subnormals
// Values are exact in every input type.
void shape_rows(HostInput& in, std::uint32_t seed) {
  std::mt19937 gen(seed);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t r = 0; r < in.rows; ++r) {
    std::uniform_int_distribution<std::int64_t> col(0, in.cols - 1);
    switch (r % 8) {
      case 1:
        for (int i = 0; i < 3; ++i) set_value(in, r, col(gen), i == 1 ? -nan : nan);
        break;
      case 2:
        set_value(in, r, col(gen), inf);
        set_value(in, r, col(gen), -inf);
        break;
      case 3:
        for (std::int64_t c = 0; c < in.cols; ++c) set_value(in, r, c, 1.5f);
        break;
      case 4: {  // E2M1 midpoints of both signs under a scale of 1 (|lo|, |hi| = 6): all ties
        const float mid[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
        for (std::int64_t c = 0; c < in.cols; ++c) {
          const float m = c % 33 == 0 ? 6.0f : mid[gen() % 7];
          set_value(in, r, c, gen() % 2 ? -m : m);
        }
        break;
      }
      case 5:
        for (std::int64_t c = 0; c < in.cols; c += 64)
          set_value(in, r, c, c % 128 ? 96.0f : -80.0f);
        break;
      case 6:  // lo or hi at zero: the clamp by floats, not by BF16 max / min
        for (std::int64_t c = 0; c < in.cols; ++c)
          if (c % 97 != 0) set_value(in, r, c, 0.0f);
        break;
      case 7:
        for (std::int64_t c = 0; c < in.cols; ++c)
          set_value(in, r, c, std::ldexp(static_cast<float>(gen() % 7) - 3.0f, -20));
        break;
      default:
        break;
    }
  }
}

// The emulator's device with occ_rows wherever it can take the rows.
const cuda::DeviceInfo kAlways = [] {
  cuda::DeviceInfo d = kDevice;
  d.occ_rows = cuda::DeviceInfo::OccRows::always;
  return d;
}();

int count_op(const cuda::Plan& plan, const std::string& op) {
  int n = 0;
  for (const cuda::Step& s : plan)
    if (const auto* l = std::get_if<cuda::Launch>(&s)) n += l->kernel.op == op;
  return n;
}

struct RowsCase {
  const char* recipe;
  DType dtype;
  std::int64_t cols;
  bool padded;  // a row stride one element longer: no 16-byte loads
};

TEST(EmuOccRows, EveryPathMatchesReference) {
  const RowsCase cases[] = {
      {"msfp4", DType::bf16, 2048, false},
      {"msfp4", DType::f16, 4100, false},
      {"msfp4", DType::f32, 3000, true},
      {"msfp4", DType::bf16, 16384, false},
      {"msfp4:occ=0.97", DType::bf16, 8192, true},
      {"msfp4:occ=0.9", DType::f32, 2048, false},
      {"msfp4:occ=0.9", DType::bf16, 16384, false},  // kh = 1639: over the bound's 1024
      {"msfp4:occ=0.6", DType::f16, 1024, false},    // kh = 410 of 1024
      {"msfp4", DType::bf16, 16392, false},          // past occ_rows: occ_select and the rest
  };
  std::uint32_t seed = 900;
  for (const RowsCase& c : cases) {
    SCOPED_TRACE(
        fmt::format("{} {} cols={}{}", c.recipe, name(c.dtype), c.cols, c.padded ? " padded" : ""));
    const Recipe recipe = parse_recipe(c.recipe);
    constexpr std::int64_t kRows = 16;
    HostInput in =
        make_input(InputKind::random, c.dtype, kRows, c.cols + (c.padded ? 1 : 0), ++seed, false);
    shape_rows(in, seed);
    TensorView view = in.view();
    if (c.padded) {  // the first c.cols columns of rows c.cols + 1 long
      Matrix<float> v(kRows, c.cols);
      for (std::int64_t r = 0; r < kRows; ++r)
        for (std::int64_t k = 0; k < c.cols; ++k) v(r, k) = in.values(r, k);
      in.values = std::move(v);
      view = TensorView{in.bytes.data(), c.dtype, kRows, c.cols, c.cols + 1};
    }
    const reference::QuantizeOptions ropt{.seed = 7, .offset = 0};
    const QuantizedTensor ref = reference::quantize(recipe, Role::x, in.values, ropt);
    HostOperand o(ref.layout, kRows * c.cols);
    const auto make = [&](cuda::Arena& a) {
      QuantizedView q = o.view();
      return cuda::plan_quantize(recipe, Role::x, view, q, nullptr, QuantizeArgs{7, 0}, kAlways, a);
    };
    cuda::Arena counting;
    const cuda::Plan plan = make(counting);
    const bool one_pass = c.cols <= codegen::kOccRowsMaxCols;
    EXPECT_EQ(count_op(plan, "occ_rows"), one_pass ? 1 : 0);
    EXPECT_EQ(count_op(plan, "occ_select"), one_pass ? 0 : 1);
    run(make);
    ASSERT_EQ(compare(ref, o, true), "");
    EXPECT_GT(o.residual_count[0], 0);
  }
}

// A residual list longer than the caller's buffer: the count is the whole list's, the entries
// that fit are its first ones, and nothing past the buffer is written.
TEST(EmuOccRows, ShortResidualBufferKeepsTheCountAndTheFirstEntries) {
  const Recipe recipe = parse_recipe("msfp4");
  constexpr std::int64_t kRows = 12, kCols = 2048;
  HostInput in = make_input(InputKind::random, DType::bf16, kRows, kCols, 77, false);
  const reference::QuantizeOptions ropt{.seed = 1, .offset = 0};
  const QuantizedTensor ref = reference::quantize(recipe, Role::x, in.values, ropt);
  const auto full = static_cast<std::int64_t>(ref.residual_index.size());
  ASSERT_GT(full, 100);
  const std::int64_t capacity = full / 3;
  HostOperand o(ref.layout, capacity + 8);
  std::fill(o.residual_index.begin(), o.residual_index.end(), -7);
  QuantizedView q = o.view();
  q.residual_capacity = capacity;
  run([&](cuda::Arena& a) {
    return cuda::plan_quantize(recipe, Role::x, in.view(), q, nullptr, QuantizeArgs{1, 0}, kAlways,
                               a);
  });
  EXPECT_EQ(o.residual_count[0], full);
  for (std::int64_t i = 0; i < capacity; ++i) {
    ASSERT_EQ(o.residual_index[i], ref.residual_index[i]) << i;
    ASSERT_EQ(std::memcmp(&o.residual_value[i], &ref.residual_value[i], 4), 0) << i;
  }
  for (std::int64_t i = capacity; i < capacity + 8; ++i) EXPECT_EQ(o.residual_index[i], -7) << i;
}

// The heuristic's choice: occ_rows on the rows it was measured faster on (4096 < K <= 16384),
// the four-kernel pipeline elsewhere; `never` keeps the pipeline.
TEST(EmuOccRows, HeuristicTakesTheMeasuredRowLengths) {
  const Recipe recipe = parse_recipe("msfp4");
  cuda::DeviceInfo never = kDevice;
  never.occ_rows = cuda::DeviceInfo::OccRows::never;
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 40);
  for (const std::int64_t cols : {2048, 4096, 4104, 8192, 16384, 16392}) {
    SCOPED_TRACE(cols);
    QuantizedView q;
    q.codes = fake;
    q.scales = fake;
    q.residual_index = reinterpret_cast<std::int64_t*>(fake);
    q.residual_value = reinterpret_cast<float*>(fake);
    q.residual_count = reinterpret_cast<std::int64_t*>(fake);
    q.residual_capacity = 64 * cols;
    const TensorView in{fake, DType::bf16, 64, cols, 0};
    const bool one_pass = cols > 4096 && cols <= 16384;
    for (const cuda::DeviceInfo* d :
         {&kDevice, &kAlways, static_cast<const cuda::DeviceInfo*>(&never)}) {
      cuda::Arena arena;
      const cuda::Plan plan =
          cuda::plan_quantize(recipe, Role::x, in, q, nullptr, QuantizeArgs{}, *d, arena);
      const bool want =
          (d == &kAlways && cols <= codegen::kOccRowsMaxCols) || (d == &kDevice && one_pass);
      EXPECT_EQ(count_op(plan, "occ_rows"), want ? 1 : 0) << (d == &kDevice ? "measured" : "");
    }
  }
}

}  // namespace
}  // namespace fp4jit::test
