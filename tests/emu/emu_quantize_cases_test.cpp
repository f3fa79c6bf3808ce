// The emulator's quantize cases beyond the recipe sweep of emu_quantize_test.cpp: which passes a
// plan shares, the step counter of stochastic rounding (QuantizeArgs::seed_step), nvfp4's
// derived w + wt pair given two amaxes, a Hadamard output made subnormal by its norm, and
// quantize_rows at configs beside the heuristic's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "numerics/philox.cuh"
#include "reference/reference.hpp"
#include "runtime/cuda/plan.hpp"
#include "runtime/host_tensor.hpp"
#include "tests/emu/emu_recipes.hpp"
#include "tests/emu/emu_run.hpp"
#include "tests/emu/emulator.hpp"
#include "tests/gpu/quant_check.hpp"

namespace fp4jit::test {
namespace {

// Where one pass does another's work. msfp4's x and xt are scaled per source row, so
// occ_select, which reads each row anyway, writes their stat words and amax: x alone, xt alone
// and the pair run no stats pass. w and wt (per source row, no OCC) and dy and dyt (per tensor)
// share one stats pass, by quantize_rows over the row-wise operand. With a Hadamard on x and w the
// select cannot give their stats (those are of the rotated values) and w's stats are not wt's: the
// stats passes stay (planned only: their kernels are not compiled into the emulator). nvfp4's w
// and wt (16 x 16 blocks, no Hadamard) need only the per-tensor amax, the same for both: the stats
// pass carries w alone. The executed plans match the reference.
TEST(EmuQuantizePlan, StatsPassesAreSharedOrTakenBySelect) {
  struct PlanCase {
    const char* recipe;
    Role role;
    bool pair;
    int selects, rows_stats, tile_stats;
    int stats_pairs = 0;  // stats passes that carry both operands
  };
  const char* had = "msfp4:x.had=16,w.had=16";
  for (const PlanCase& c :
       {PlanCase{"msfp4", Role::x, false, 1, 0, 0}, PlanCase{"msfp4", Role::xt, false, 1, 0, 0},
        PlanCase{"msfp4", Role::x, true, 1, 0, 0}, PlanCase{"msfp4", Role::w, true, 0, 1, 0},
        PlanCase{"msfp4", Role::dy, true, 0, 1, 0}, PlanCase{had, Role::x, false, 1, 1, 0},
        PlanCase{had, Role::x, true, 1, 0, 1, 0}, PlanCase{had, Role::w, true, 0, 0, 1, 1},
        PlanCase{"nvfp4", Role::w, true, 0, 0, 1, 0}}) {
    SCOPED_TRACE(fmt::format("{} {}{}", c.recipe, name(c.role), c.pair ? " pair" : ""));
    const Recipe recipe = parse_recipe(c.recipe);
    const Role partner = c.role == Role::w ? Role::wt : (c.role == Role::dy ? Role::dyt : Role::xt);
    HostInput in = make_input(InputKind::adversarial, DType::bf16, 64, 256, 77, false);
    const reference::QuantizeOptions ropt{.seed = 5, .offset = 0};
    const QuantizedTensor ref = reference::quantize(recipe, c.role, in.values, ropt);
    const QuantizedTensor ref_t = reference::quantize(recipe, partner, in.values, ropt);
    HostOperand o(ref.layout, 64 * 256), o_t(ref_t.layout, 64 * 256);
    const auto make = [&](cuda::Arena& a) {
      QuantizedView q = o.view(), qt = o_t.view();
      return cuda::plan_quantize(recipe, c.role, in.view(), q, c.pair ? &qt : nullptr,
                                 QuantizeArgs{5, 0}, kDevice, a);
    };
    cuda::Arena counting;
    int quantize_passes = 0, rows_stats = 0, tile_stats = 0, selects = 0, stats_pairs = 0;
    for (const cuda::Step& s : make(counting)) {
      const auto* l = std::get_if<cuda::Launch>(&s);
      if (l == nullptr) continue;
      selects += l->kernel.op == "occ_select";
      if (l->kernel.op != "quantize_rows" && l->kernel.op != "quantize_tile") continue;
      if (l->kernel.key_text.find("phase=stats") == std::string::npos)
        ++quantize_passes;
      else {
        ++(l->kernel.op == "quantize_rows" ? rows_stats : tile_stats);
        stats_pairs += l->kernel.key_text.find("col_role=") != std::string::npos &&
                       l->kernel.key_text.find(";role=") != std::string::npos;
      }
    }
    EXPECT_EQ(selects, c.selects);
    EXPECT_EQ(quantize_passes, 1);
    EXPECT_EQ(rows_stats, c.rows_stats);
    EXPECT_EQ(tile_stats, c.tile_stats);
    EXPECT_EQ(stats_pairs, c.stats_pairs);
    if (c.recipe == had) continue;
    run(make);
    ASSERT_EQ(compare(ref, o, recipe[c.role].occ), "");
    if (c.pair) {
      ASSERT_EQ(compare(ref_t, o_t, recipe[partner].occ), "");
    }
  }
}

// nvfp4's w + wt (16 x 16 blocks, the same codes per block in both copies) take the transposed
// copy from the row-wise one (quantize_tile's tile_group_both) only where both copies have the same
// s_enc. Given two different amaxes (delayed scaling) the pair must still equal each operand
// quantized alone with its own; with the same amax given twice, the reference.
// QuantizeArgs::seed_step: the kernels (quantize_rows for dY alone, quantize_tile for the pairs,
// tetrajet's W^T re-quantized from W's dequantized codes among them) read the step when they run
// and round with mix_seed(seed, step): the bytes of that seed given by value, and other bytes at
// the next step. What a CUDA graph's replays rely on.
TEST(EmuQuantizeSeedStep, KernelsRoundWithTheStepTheyRead) {
  struct StepCase {
    const char* preset;
    Role role;
    bool pair;
  };
  for (const StepCase& c :
       {StepCase{"nvfp4", Role::dy, false}, StepCase{"nvfp4", Role::dy, true},
        StepCase{"tetrajet", Role::dy, false}, StepCase{"tetrajet", Role::dy, true},
        StepCase{"tetrajet", Role::w, true}}) {
    const Recipe recipe = parse_recipe(c.preset);
    const Role partner = transposed_copy(c.role);
    SCOPED_TRACE(fmt::format("{} {}{}", c.preset, name(c.role), c.pair ? " pair" : ""));
    Shape shape = shape_for(recipe, c.role, 64, 256);
    if (c.pair) {
      shape.rows = round_up(128, k_multiple(recipe, partner));
      shape.cols = round_up(256, k_multiple(recipe, c.role));
    }
    HostInput in = make_input(InputKind::random, DType::bf16, shape.rows, shape.cols, 91, true);
    constexpr std::uint64_t kSeed = 0x1234abcd5678ull;
    std::uint64_t step = 41;
    QuantizeArgs args{kSeed, 0};
    args.seed_step = &step;
    const reference::QuantizeOptions ropt{.seed = nx::mix_seed(kSeed, 41), .offset = 0};
    const QuantizedTensor ref = reference::quantize(recipe, c.role, in.values, ropt);
    const QuantizedTensor ref_t = reference::quantize(recipe, partner, in.values, ropt);
    // The operand whose codes depend on the seed: the row-wise one unless it rounds to nearest.
    const bool row_random = recipe[c.role].round == nx::Round::stochastic;
    for (const std::uint64_t at : {std::uint64_t{41}, std::uint64_t{42}}) {
      step = at;
      HostOperand o(ref.layout, shape.rows * shape.cols),
          o_t(ref_t.layout, shape.rows * shape.cols);
      run([&](cuda::Arena& a) {
        QuantizedView q = o.view(), qt = o_t.view();
        return cuda::plan_quantize(recipe, c.role, in.view(), q, c.pair ? &qt : nullptr, args,
                                   kDevice, a);
      });
      if (at == 41) {
        ASSERT_EQ(compare(ref, o, false), "");
        if (c.pair) {
          ASSERT_EQ(compare(ref_t, o_t, false), "") << name(partner);
        }
      } else if (row_random) {
        EXPECT_NE(compare(ref, o, false), "") << "step 42 rounded as step 41";
      } else {
        EXPECT_NE(compare(ref_t, o_t, false), "") << name(partner) << ": step 42 rounded as 41";
      }
    }
  }
}

TEST(EmuQuantizePair, SameBlockPairWithDifferentAmaxesMatchesEachAlone) {
  const Recipe recipe = parse_recipe("nvfp4");
  for (const DType dtype : {DType::bf16, DType::f32}) {
    SCOPED_TRACE(name(dtype));
    HostInput in = make_input(InputKind::random, dtype, 96, 160, 41, false);
    const reference::QuantizeOptions ropt{.seed = 3, .offset = 0};
    const QuantizedTensor ref = reference::quantize(recipe, Role::w, in.values, ropt);
    const QuantizedTensor ref_t = reference::quantize(recipe, Role::wt, in.values, ropt);
    const float amax_w = ref.amax, amax_wt = 2.5f * ref.amax;
    HostOperand o(ref.layout, 0), o_t(ref_t.layout, 0), alone(ref.layout, 0),
        alone_t(ref_t.layout, 0);
    QuantizeArgs pair_args{3, 0};
    pair_args.amax = &amax_w;
    pair_args.amax_transposed = &amax_wt;
    run([&](cuda::Arena& a) {
      QuantizedView q = o.view(), qt = o_t.view();
      return cuda::plan_quantize(recipe, Role::w, in.view(), q, &qt, pair_args, kDevice, a);
    });
    QuantizeArgs w_args{3, 0}, wt_args{3, 0};
    w_args.amax = &amax_w;
    wt_args.amax = &amax_wt;
    run([&](cuda::Arena& a) {
      QuantizedView q = alone.view();
      return cuda::plan_quantize(recipe, Role::w, in.view(), q, nullptr, w_args, kDevice, a);
    });
    run([&](cuda::Arena& a) {
      QuantizedView q = alone_t.view();
      return cuda::plan_quantize(recipe, Role::wt, in.view(), q, nullptr, wt_args, kDevice, a);
    });
    ASSERT_EQ(compare(ref, alone, false), "");  // w alone, its own amax given: the reference
    EXPECT_EQ(compare_runs(alone, o), "") << "row-wise operand w";
    EXPECT_EQ(compare_runs(alone_t, o_t), "") << "transposed operand wt";
    // The same amax for both: the transposed copy from the row-wise codes, as the reference.
    pair_args.amax_transposed = &amax_w;
    HostOperand s(ref.layout, 0), s_t(ref_t.layout, 0);
    run([&](cuda::Arena& a) {
      QuantizedView q = s.view(), qt = s_t.view();
      return cuda::plan_quantize(recipe, Role::w, in.view(), q, &qt, pair_args, kDevice, a);
    });
    ASSERT_EQ(compare(ref, s, false), "");
    ASSERT_EQ(compare(ref_t, s_t, false), "");
    // wt with its own amax is not wt with w's (the case above tells the two apart).
    EXPECT_NE(compare_runs(alone_t, s_t), "");
  }
}

// A Hadamard output that the norm makes subnormal, under a block factor of FLT_MAX: the kernels
// must round u * norm before the factor, as the reference does; folding the norm into the factor
// (one multiply instead of two) changes this element's code. FP32 input, nvfp4's x + xt (xt:
// 16-point Hadamard, nearest even): a 1 at (0, 0) sets xt's amax; source column 5 holds
// a = 2^-128 + 2^-149 at token 16 and zeros elsewhere, so xt's block (5, tokens 16..31) is +-a
// after the butterflies. The reference takes rn(a / 4) = 2^-130 (a's last bit is lost), the
// block's scale code is 0 and its factor FLT_MAX, so the elements scale to 1/4 - 2^-26: magnitude
// 0. a * (FLT_MAX / 4) lies just above 1/4 and rounds to 1/2.
TEST(EmuQuantizePair, SubnormalHadamardOutputsRoundBeforeTheirFactor) {
  const Recipe recipe = parse_recipe("nvfp4");
  HostInput in = make_input(InputKind::random, DType::f32, 64, 32, 7, false);
  for (std::int64_t r = 0; r < in.rows; ++r)
    for (std::int64_t c = 0; c < in.cols; ++c) set_value(in, r, c, 0.0f);
  set_value(in, 0, 0, 1.0f);
  set_value(in, 16, 5, std::ldexp(1.0f, -128) + std::ldexp(1.0f, -149));
  const reference::QuantizeOptions ropt{.seed = 3, .offset = 0};
  const QuantizedTensor ref = reference::quantize(recipe, Role::x, in.values, ropt);
  const QuantizedTensor ref_t = reference::quantize(recipe, Role::xt, in.values, ropt);
  // The case is the one described: xt's element (5, 16) has magnitude code 0 in the reference.
  ASSERT_EQ(ref_t.codes[static_cast<std::size_t>(5 * ref_t.layout.row_bytes + 8)] & 7u, 0u);
  HostOperand o(ref.layout, 0), o_t(ref_t.layout, 0);
  const QuantizeArgs args{3, 0};
  run([&](cuda::Arena& a) {
    QuantizedView q = o.view(), qt = o_t.view();
    return cuda::plan_quantize(recipe, Role::x, in.view(), q, &qt, args, kDevice, a);
  });
  EXPECT_EQ(compare(ref, o, false), "");
  EXPECT_EQ(compare(ref_t, o_t, false), "");
}

// quantize_rows at 384 threads (12 warps; their BF16 rings hold two items, where 16 warps' hold
// one), with one item in flight and with two: x and dY alone of every emulated recipe whose
// operand takes the rows kernel, random and adversarial, on a ragged source (a last item of 64
// columns), against the reference. The plans must run these configs, not fall back to the
// heuristic's.
TEST(EmuQuantizeRows, TwelveWarpRingsMatchReference) {
  int ran = 0;
  for (const std::string& text : emu::emu_recipes()) {
    const Recipe recipe = parse_recipe(text);
    for (const codegen::RowsConfig& cfg : emu::emu_rows_configs())
      for (const Role role : {Role::x, Role::dy})
        for (const InputKind kind : {InputKind::random, InputKind::adversarial}) {
          SCOPED_TRACE(
              fmt::format("{} {} {} {}", text, name(role), cfg.text(), input_kind_name(kind)));
          const std::int64_t rows = round_up(37, k_multiple(recipe, transposed_copy(role)));
          const std::int64_t cols = round_up(1088, k_multiple(recipe, role));
          HostInput in = make_input(kind, DType::bf16, rows, cols, 91 + ran, false);
          const QuantizeArgs args{17, 0};
          const reference::QuantizeOptions ropt{.seed = args.seed, .offset = args.offset};
          const QuantizedTensor ref = reference::quantize(recipe, role, in.values, ropt);
          HostOperand o(ref.layout, rows * cols);
          cuda::DeviceInfo device = kDevice;
          device.rows_config = &cfg;
          const auto make = [&](cuda::Arena& a) {
            QuantizedView q = o.view();
            return cuda::plan_quantize(recipe, role, in.view(), q, nullptr, args, device, a);
          };
          cuda::Arena counting;
          bool rows_kernel = false, configured = true;
          for (const cuda::Step& step : make(counting))
            if (const auto* l = std::get_if<cuda::Launch>(&step))
              if (l->kernel.op == "quantize_rows") {
                rows_kernel = true;
                configured = configured &&
                             l->kernel.key_text.find("threads=" + std::to_string(cfg.threads) +
                                                     ",unroll=" + std::to_string(cfg.unroll)) !=
                                 std::string::npos;
              }
          if (!rows_kernel) continue;  // this operand takes the tile kernel (2D blocks, OCC)
          ASSERT_TRUE(configured) << "the plan did not run the asked rows config";
          run(make);
          ASSERT_EQ(compare(ref, o, recipe[role].occ), "");
          ++ran;
        }
  }
  EXPECT_GE(ran, 20);  // the presets' x and dY, both configs, both inputs
}

}  // namespace
}  // namespace fp4jit::test
