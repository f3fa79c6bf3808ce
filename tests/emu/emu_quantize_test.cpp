// The CUDA kernels and their launch plans, run on the CPU emulator, against the reference: every
// recipe of emu_recipes.hpp, every operand (alone and as pairs from one read), random and
// adversarial inputs in every input type, aligned and ragged shapes, poisoned outputs, byte for
// byte (codes, scales, tensor scale, amax, OCC residual lists), and dequantize and DGE.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reference/reference.hpp"
#include "runtime/cuda/plan.hpp"
#include "runtime/host_tensor.hpp"
#include "tests/emu/emu_recipes.hpp"
#include "tests/emu/emu_run.hpp"
#include "tests/emu/emulator.hpp"
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

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return test_name(info.param.recipe + "_" + std::string(name(info.param.role)) +
                   (info.param.pair ? "_pair" : ""));
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const auto& r : emu::emu_recipes()) {
    for (Role role : kAllRoles) out.push_back({r, role, false});
    for (Role role : {Role::x, Role::w, Role::dy}) out.push_back({r, role, true});
  }
  return out;
}

// The first `cols` columns of `in` (built one column wider) as a view whose rows are one element
// longer than they hold, so no row but the first starts 16-byte aligned; `values` becomes theirs.
TensorView narrowed(HostInput& in, std::int64_t cols) {
  Matrix<float> v(in.rows, cols);
  for (std::int64_t r = 0; r < in.rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) v(r, c) = in.values(r, c);
  const TensorView view{in.bytes.data(), in.dtype, in.rows, cols, in.cols};
  in.values = std::move(v);
  return view;
}

class EmuQuantize : public testing::TestWithParam<Case> {};

TEST_P(EmuQuantize, MatchesReference) {
  const Case& c = GetParam();
  const Recipe recipe = parse_recipe(c.recipe);
  const Role partner = transposed_copy(c.role);
  const bool occ = recipe[c.role].occ || (c.pair && recipe[partner].occ);
  // wide: rows of several 1024-element chunks, the last one partial; padded: a row stride one
  // element longer than the rows (no 16-byte vectors).
  enum class Form { plain, ragged, wide, padded };
  struct Variant {
    InputKind kind;
    DType dtype;
    Form form;
    std::uint64_t offset;
  };
  const Variant variants[] = {{InputKind::random, DType::bf16, Form::plain, 0},
                              {InputKind::random, DType::f32, Form::ragged, 5},
                              {InputKind::random, DType::f16, Form::ragged, 3},
                              {InputKind::adversarial, DType::bf16, Form::ragged, 0},
                              {InputKind::adversarial, DType::f32, Form::plain, 17},
                              {InputKind::random, DType::bf16, Form::wide, 9},
                              {InputKind::adversarial, DType::f32, Form::wide, 0},
                              {InputKind::random, DType::bf16, Form::padded, 1},
                              {InputKind::adversarial, DType::f16, Form::padded, 0}};
  std::uint32_t seed = 1;
  for (const Variant& v : variants) {
    const bool small = v.form == Form::ragged || v.form == Form::padded;
    Shape shape;
    const std::int64_t free_dim = v.form == Form::wide ? (c.pair ? 32 : 5) : (small ? 96 : 128);
    const std::int64_t k = v.form == Form::wide ? 2 * 1024 + 96 : (small ? 160 : 256);
    if (c.pair) {
      shape.rows = round_up(free_dim, k_multiple(recipe, partner));
      shape.cols = round_up(k, k_multiple(recipe, c.role));
    } else {
      shape = shape_for(recipe, c.role, v.form == Form::wide ? 5 : (small ? 37 : 64),
                        v.form == Form::wide ? k : (small ? 96 : 256));
    }
    SCOPED_TRACE(fmt::format("{} {} [{}, {}] offset {}{}", input_kind_name(v.kind), name(v.dtype),
                             shape.rows, shape.cols, v.offset,
                             v.form == Form::padded ? " padded rows" : ""));
    const bool padded = v.form == Form::padded;
    HostInput in =
        make_input(v.kind, v.dtype, shape.rows, shape.cols + (padded ? 1 : 0), ++seed, !occ);
    const TensorView view = padded ? narrowed(in, shape.cols) : in.view();
    const QuantizeArgs args{seed * 7919u, v.offset};
    const reference::QuantizeOptions ropt{.seed = args.seed, .offset = args.offset};
    const QuantizedTensor ref = reference::quantize(recipe, c.role, in.values, ropt);
    // Two-level operands again with the reference's amax given (delayed scaling, one pass): the
    // same bytes.
    const bool two_level = recipe[c.role].rule == ScaleRule::two_level ||
                           (c.pair && recipe[partner].rule == ScaleRule::two_level);
    if (!c.pair) {
      for (const bool given : {false, true}) {
        if (given && !two_level) break;
        HostOperand o(ref.layout, shape.rows * shape.cols);
        QuantizeArgs ga = args;
        if (given) ga.amax = &ref.amax;
        run([&](cuda::Arena& a) {
          QuantizedView q = o.view();
          return cuda::plan_quantize(recipe, c.role, view, q, nullptr, ga, kDevice, a);
        });
        ASSERT_EQ(compare(ref, o, recipe[c.role].occ), "") << (given ? "amax given" : "");
      }
      continue;
    }
    const QuantizedTensor ref_t = reference::quantize(recipe, partner, in.values, ropt);
    // A pair whose CTA size depends on the source's size (codegen::default_tile_config) also runs
    // a large source's config here.
    const codegen::TileConfig small_cfg = codegen::default_tile_config(
        &recipe[c.role], &recipe[partner], v.dtype, shape.rows * shape.cols);
    const codegen::TileConfig large_cfg = codegen::default_tile_config(
        &recipe[c.role], &recipe[partner], v.dtype, std::int64_t{1} << 28);
    std::vector<const codegen::TileConfig*> configs{nullptr};
    if (large_cfg.text() != small_cfg.text()) configs.push_back(&large_cfg);
    for (const codegen::TileConfig* config : configs)
      for (const bool given : {false, true}) {
        if (given && !two_level) break;
        HostOperand o(ref.layout, shape.rows * shape.cols),
            o_t(ref_t.layout, shape.rows * shape.cols);
        QuantizeArgs ga = args;
        if (given) {
          ga.amax = &ref.amax;
          ga.amax_transposed = &ref_t.amax;
        }
        cuda::DeviceInfo device = kDevice;
        device.tile_config = config;
        run([&](cuda::Arena& a) {
          QuantizedView q = o.view(), qt = o_t.view();
          return cuda::plan_quantize(recipe, c.role, view, q, &qt, ga, device, a);
        });
        const std::string how =
            std::string(given ? ", amax given" : "") + (config ? ", config " + config->text() : "");
        ASSERT_EQ(compare(ref, o, recipe[c.role].occ), "")
            << "row-wise operand " << name(c.role) << how;
        ASSERT_EQ(compare(ref_t, o_t, recipe[partner].occ), "")
            << "transposed operand " << name(partner) << how;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, EmuQuantize, testing::ValuesIn(all_cases()), case_name);

// dequantize of every operand: the reference's codes and scales in, values out in each type.
class EmuDequantize : public testing::TestWithParam<std::string> {};

TEST_P(EmuDequantize, MatchesReference) {
  const Recipe recipe = parse_recipe(GetParam());
  for (Role role : kAllRoles) {
    const Shape shape = shape_for(recipe, role, 37, 96);
    HostInput in =
        make_input(InputKind::adversarial, DType::f32, shape.rows, shape.cols, 11, false);
    QuantizedTensor q = reference::quantize(recipe, role, in.values, {.seed = 3, .offset = 0});
    q.residual_index.clear();  // dequantize reads codes and scales only
    q.residual_value.clear();
    HostOperand stored(q.layout, 0);
    QuantizedView view = stored.view();
    view.residual_capacity = 0;
    store_quantized(q, view);
    const Matrix<double> expect = reference::dequantize_operand(recipe, q);
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(fmt::format("operand {} out {}", name(role), name(dt)));
      std::vector<std::uint8_t> got(
          static_cast<std::size_t>(q.layout.rows * q.layout.cols * dtype_size(dt)), kPoison);
      std::vector<std::uint8_t> want(got.size());
      const TensorView out{got.data(), dt, q.layout.rows, q.layout.cols, 0};
      from_matrix(expect, TensorView{want.data(), dt, q.layout.rows, q.layout.cols, 0});
      run([&](cuda::Arena& a) {
        return cuda::plan_dequantize(recipe, role, view, shape.rows, shape.cols, out, kDevice, a);
      });
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0);
    }
  }
}

// DGE factor of recipes whose weight has it.
TEST_P(EmuDequantize, DgeMatchesReference) {
  const Recipe recipe = parse_recipe(GetParam());
  if (!recipe[Role::w].dge) GTEST_SKIP() << "no DGE in this recipe";
  for (InputKind kind : {InputKind::random, InputKind::adversarial}) {
    HostInput w = make_input(kind, DType::bf16, 37, 202, 5, true);
    const Matrix<float> expect = reference::dge_factor(recipe, w.values);
    for (DType dt : {DType::f32, DType::bf16}) {
      std::vector<std::uint8_t> got(static_cast<std::size_t>(37 * 202 * dtype_size(dt)), kPoison),
          want(got.size());
      const TensorView out{got.data(), dt, 37, 202, 0};
      from_matrix(expect, TensorView{want.data(), dt, 37, 202, 0});
      const TensorView wv = w.view();
      run([&](cuda::Arena& a) { return cuda::plan_dge(recipe, wv, out, kDevice, a); });
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0)
          << input_kind_name(kind) << " " << name(dt);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, EmuDequantize, testing::ValuesIn(emu::emu_recipes()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return test_name(p.param);
                         });

// Column sums (QuantizeArgs::column_sums, a bias gradient): from the pair kernel's own tiles (the
// raw path, the float path, tiles of two 64-row chunks), from a pass of their own (tiles of 32
// rows, one operand alone), equal bit for bit to reference::column_sums rounded to the output
// type; the quantized operands unchanged by them.
class EmuColumnSums : public testing::TestWithParam<std::string> {};

TEST_P(EmuColumnSums, PairAndAloneMatchReference) {
  const Recipe recipe = parse_recipe(GetParam());
  struct Variant {
    InputKind kind;
    DType in, out;
    std::int64_t rows, cols;
    int threads, tile_rows, tile_cols;  // quantize_tile config; 0: the heuristic's
  };
  const Variant variants[] = {
      {InputKind::random, DType::bf16, DType::bf16, 200, 160, 0, 0, 0},
      {InputKind::random, DType::f32, DType::f32, 130, 96, 0, 0, 0},
      {InputKind::adversarial, DType::f16, DType::f32, 64, 128, 0, 0, 0},
      {InputKind::random, DType::bf16, DType::f16, 320, 64, 256, 128, 64},
      {InputKind::random, DType::bf16, DType::f32, 96, 128, 128, 32, 128},
      // threads -1: the heuristic's config for a large source (512 threads for most pairs, where
      // the warps the units leave idle sum the columns).
      {InputKind::random, DType::bf16, DType::bf16, 192, 256, -1, 0, 0},
  };
  // dY (a bias gradient's source); x where it clamps (OCC: the sums by a pass of their own).
  std::vector<Role> roles{Role::dy};
  if (recipe[Role::x].occ) roles.push_back(Role::x);
  std::uint32_t seed = 40;
  for (Role role : roles) {
    const Role partner = transposed_copy(role);
    const bool occ = recipe[role].occ || recipe[partner].occ;
    for (const Variant& v : variants) {
      const std::int64_t rows = round_up(v.rows, k_multiple(recipe, partner));
      const std::int64_t cols = round_up(v.cols, k_multiple(recipe, role));
      SCOPED_TRACE(fmt::format("{} {} {} [{}, {}] -> {}, tile {}x{}", name(role),
                               input_kind_name(v.kind), name(v.in), rows, cols, name(v.out),
                               v.tile_rows, v.tile_cols));
      std::optional<codegen::TileConfig> config;
      if (v.threads < 0) {
        config = codegen::default_tile_config(&recipe[role], &recipe[partner], v.in,
                                              std::int64_t{1} << 28);
      } else if (v.threads != 0) {
        if (role != Role::dy) continue;  // the emulator holds these configs' dY pairs only
        config = codegen::TileConfig{v.threads, v.tile_rows, v.tile_cols, 0};
        try {
          config->validate(&recipe[role], &recipe[partner], v.in);
        } catch (const Error&) {
          continue;  // a tile this recipe's operands cannot take
        }
      }
      HostInput in = make_input(v.kind, v.in, rows, cols, ++seed, !occ);
      QuantizeArgs args{seed * 31u, 0};
      const reference::QuantizeOptions ropt{.seed = args.seed, .offset = args.offset};
      const QuantizedTensor ref = reference::quantize(recipe, role, in.values, ropt);
      const QuantizedTensor ref_t = reference::quantize(recipe, partner, in.values, ropt);
      std::vector<std::uint8_t> sums(static_cast<std::size_t>(cols * dtype_size(v.out)), kPoison);
      args.column_sums = sums.data();
      args.column_sums_dtype = v.out;
      cuda::DeviceInfo device = kDevice;
      device.tile_config = config ? &*config : nullptr;
      HostOperand o(ref.layout, rows * cols), o_t(ref_t.layout, rows * cols);
      run([&](cuda::Arena& a) {
        QuantizedView q = o.view(), qt = o_t.view();
        return cuda::plan_quantize(recipe, role, in.view(), q, &qt, args, device, a);
      });
      ASSERT_EQ(compare_column_sums(in.values, sums, v.out), "") << "pair";
      ASSERT_EQ(compare(ref, o, recipe[role].occ), "") << "row-wise operand beside the sums";
      ASSERT_EQ(compare(ref_t, o_t, recipe[partner].occ), "")
          << "transposed operand beside the sums";
      // One operand alone: the sums by a pass of their own.
      std::fill(sums.begin(), sums.end(), kPoison);
      HostOperand alone(ref.layout, rows * cols);
      run([&](cuda::Arena& a) {
        QuantizedView q = alone.view();
        return cuda::plan_quantize(recipe, role, in.view(), q, nullptr, args, device, a);
      });
      ASSERT_EQ(compare_column_sums(in.values, sums, v.out), "") << "one operand";
      ASSERT_EQ(compare(ref, alone, recipe[role].occ), "") << "one operand beside the sums";
    }
  }
}

// Which kernel sums the columns: the pair's tile kernel where it can, a pass of its own where
// its tiles are not whole 64-row chunks or an operand clamps (OCC).
TEST(EmuColumnSumsPlan, FusedWhereTheTilesAllow) {
  QuantizeArgs args;
  std::vector<std::uint8_t> sink(4);
  args.column_sums = sink.data();
  args.column_sums_dtype = DType::bf16;
  const auto kernels = [&](const std::string& text, Role role, const codegen::TileConfig* cfg) {
    const Recipe recipe = parse_recipe(text);
    auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 40);
    QuantizedView q;
    q.codes = fake;
    q.scales = fake;
    q.tensor_scale = reinterpret_cast<float*>(fake);
    q.residual_index = reinterpret_cast<std::int64_t*>(fake);
    q.residual_value = reinterpret_cast<float*>(fake);
    q.residual_count = reinterpret_cast<std::int64_t*>(fake);
    q.residual_capacity = 1 << 20;
    cuda::DeviceInfo device = kDevice;
    device.tile_config = cfg;
    cuda::Arena arena;
    const TensorView in{fake, DType::bf16, 256, 256, 0};
    std::vector<std::string> out;
    for (const cuda::Step& s : cuda::plan_quantize(recipe, role, in, q, &q, args, device, arena))
      if (const auto* l = std::get_if<cuda::Launch>(&s)) out.push_back(l->kernel.key_text);
    return out;
  };
  const auto count = [](const std::vector<std::string>& keys, const std::string& what) {
    return std::count_if(keys.begin(), keys.end(),
                         [&](const std::string& k) { return k.find(what) != std::string::npos; });
  };
  for (const char* preset : {"mxfp4", "nvfp4", "tetrajet", "ue5m3"}) {
    SCOPED_TRACE(preset);
    const auto fused = kernels(preset, Role::dy, nullptr);
    EXPECT_EQ(count(fused, "col_sums=on"), 1);
    EXPECT_EQ(count(fused, "column_sums_partial"), 0);
    EXPECT_EQ(count(fused, "column_sums_reduce"), 1);
    codegen::TileConfig narrow;
    narrow.threads = 128;
    narrow.tile_rows = 32;
    narrow.tile_cols = 128;
    const auto apart = kernels(preset, Role::dy, &narrow);
    EXPECT_EQ(count(apart, "col_sums=on"), 0);
    EXPECT_EQ(count(apart, "column_sums_partial"), 1);
    EXPECT_EQ(count(apart, "column_sums_reduce"), 1);
  }
  // msfp4's x pair clamps (OCC): the sums are of the source, by their own pass.
  const auto occ = kernels("msfp4", Role::x, nullptr);
  EXPECT_EQ(count(occ, "col_sums=on"), 0);
  EXPECT_EQ(count(occ, "column_sums_partial"), 1);
}

INSTANTIATE_TEST_SUITE_P(Recipes, EmuColumnSums, testing::ValuesIn(emu::emu_recipes()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return test_name(p.param);
                         });

}  // namespace
}  // namespace fp4jit::test
