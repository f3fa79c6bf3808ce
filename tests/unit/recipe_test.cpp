// Recipes (core/recipe.hpp): every preset field by field against RECIPES.md and overrides at every
// scope. Canonical form, hash and errors: recipe_text_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/recipe.hpp"

namespace fp4jit {
namespace {

using Kind = Block::Kind;
using Signs = HadamardSpec::Signs;

struct Expect {
  ElemFormat elem;
  ScaleFormat scale;
  ScaleRule rule;
  Block block;
  Round round;
  int sr_bits = 8;
  int had = 0;
  Signs signs = Signs::none;
  bool occ = false, dge = false;
  Source src = Source::direct;
};

Block tile(int rows, int cols) {
  return Block{Kind::tile, rows, cols};
}
Block per(Kind kind) {
  return Block{kind, 0, 0};
}

void expect_operand(const Recipe& r, Role role, const Expect& e) {
  const OperandSpec& s = r[role];
  SCOPED_TRACE(std::string(r.preset) + " operand " + std::string(name(role)));
  EXPECT_EQ(s.elem, e.elem);
  EXPECT_EQ(s.scale, e.scale);
  EXPECT_EQ(s.rule, e.rule);
  EXPECT_EQ(s.block.kind, e.block.kind);
  if (e.block.kind == Kind::tile) {
    EXPECT_EQ(s.block.rows, e.block.rows);
    EXPECT_EQ(s.block.cols, e.block.cols);
  }
  EXPECT_EQ(s.round, e.round);
  if (e.round == Round::stochastic) {
    EXPECT_EQ(s.sr_bits, e.sr_bits);
  }
  EXPECT_EQ(s.had.size, e.had);
  EXPECT_EQ(s.had.signs, e.signs);
  EXPECT_EQ(s.occ, e.occ);
  EXPECT_EQ(s.dge, e.dge);
  EXPECT_EQ(s.src, e.src);
  EXPECT_FALSE(s.qema);
}

// The recipe-wide defaults of RECIPES.md: OCC alpha 0.99, DGE k 5 clipped at 3, UE5M3 max
// 114688, Q-EMA decay 0.999 from step 10.
void expect_recipe_defaults(const Recipe& r) {
  EXPECT_EQ(r.occ_alpha, 0.99);
  EXPECT_EQ(r.dge_k, 5.0f);
  EXPECT_EQ(r.dge_clip, 3.0f);
  EXPECT_EQ(r.ue5m3, Ue5m3Variant::nan_ff);
  EXPECT_EQ(r.qema_decay, 0.999f);
  EXPECT_EQ(r.qema_start, 10);
}

TEST(RecipePresets, Mxfp4) {
  const Recipe r = parse_recipe("mxfp4");
  EXPECT_EQ(r.preset, "mxfp4");
  expect_recipe_defaults(r);
  for (Role role : kAllRoles)
    expect_operand(
        r, role,
        {ElemFormat::e2m1, ScaleFormat::e8m0, ScaleRule::ocp_floor, tile(1, 32), Round::away});
}

TEST(RecipePresets, Nvfp4) {
  const Recipe r = parse_recipe("nvfp4");
  expect_recipe_defaults(r);
  const auto e2m1 = ElemFormat::e2m1;
  const auto ue4m3 = ScaleFormat::ue4m3;
  const auto two = ScaleRule::two_level;
  expect_operand(r, Role::x, {e2m1, ue4m3, two, tile(1, 16), Round::even});
  expect_operand(r, Role::w, {e2m1, ue4m3, two, tile(16, 16), Round::even});
  expect_operand(r, Role::dy, {e2m1, ue4m3, two, tile(1, 16), Round::stochastic, 8});
  expect_operand(r, Role::wt, {e2m1, ue4m3, two, tile(16, 16), Round::even});
  expect_operand(r, Role::dyt,
                 {e2m1, ue4m3, two, tile(1, 16), Round::stochastic, 8, 16, Signs::given});
  expect_operand(r, Role::xt, {e2m1, ue4m3, two, tile(1, 16), Round::even, 8, 16, Signs::given});
  for (Role role : {Role::dyt, Role::xt})
    EXPECT_EQ(hadamard_signs_text(r[role].had), "+++-+------+-+--");
}

TEST(RecipePresets, Msfp4) {
  const Recipe r = parse_recipe("msfp4");
  expect_recipe_defaults(r);
  const auto e2m1 = ElemFormat::e2m1;
  const auto fp32 = ScaleFormat::fp32;
  const auto ms = ScaleRule::ms_pow2;
  // Activations per token (a row of X, a column of X^T), weights per output channel (a row of W,
  // a column of W^T); gradients FP8 E5M2 with one scale per tensor.
  expect_operand(r, Role::x, {e2m1, fp32, ms, per(Kind::row), Round::up, 8, 0, Signs::none, true});
  expect_operand(r, Role::xt, {e2m1, fp32, ms, per(Kind::col), Round::up, 8, 0, Signs::none, true});
  expect_operand(r, Role::w,
                 {e2m1, fp32, ms, per(Kind::row), Round::up, 8, 0, Signs::none, false, true});
  expect_operand(r, Role::wt, {e2m1, fp32, ms, per(Kind::col), Round::up});
  expect_operand(r, Role::dy, {ElemFormat::e5m2, fp32, ms, per(Kind::tensor), Round::even});
  expect_operand(r, Role::dyt, {ElemFormat::e5m2, fp32, ms, per(Kind::tensor), Round::even});
}

TEST(RecipePresets, Tetrajet) {
  const Recipe r = parse_recipe("tetrajet");
  expect_recipe_defaults(r);
  const auto e2m1 = ElemFormat::e2m1;
  const auto e8m0 = ScaleFormat::e8m0;
  const auto ceil = ScaleRule::ceil_pow2;
  expect_operand(r, Role::x, {e2m1, e8m0, ceil, tile(1, 32), Round::away});
  expect_operand(r, Role::w, {e2m1, e8m0, ceil, tile(1, 32), Round::away});
  expect_operand(r, Role::dy, {e2m1, e8m0, ceil, tile(1, 32), Round::stochastic, 16});
  expect_operand(r, Role::dyt, {e2m1, e8m0, ceil, tile(1, 32), Round::stochastic, 16});
  // Double quantization: the transposed W and X are re-quantized from the dequantized fprop copy.
  const Expect requant{e2m1, e8m0,        ceil,  tile(1, 32), Round::stochastic, 16,
                       0,    Signs::none, false, false,       Source::requant};
  expect_operand(r, Role::wt, requant);
  expect_operand(r, Role::xt, requant);
}

TEST(RecipePresets, Ue5m3) {
  const Recipe r = parse_recipe("ue5m3");
  expect_recipe_defaults(r);
  const auto e2m1 = ElemFormat::e2m1;
  const auto ue5m3 = ScaleFormat::ue5m3;
  const auto two = ScaleRule::two_level;
  expect_operand(r, Role::x, {e2m1, ue5m3, two, tile(1, 16), Round::even});
  expect_operand(r, Role::w, {e2m1, ue5m3, two, tile(1, 16), Round::even});
  expect_operand(r, Role::dy,
                 {e2m1, ue5m3, two, tile(1, 16), Round::stochastic, 8, 16, Signs::random});
  expect_operand(r, Role::wt, {e2m1, ue5m3, two, tile(1, 16), Round::even, 8, 16, Signs::random});
  expect_operand(r, Role::dyt,
                 {e2m1, ue5m3, two, tile(1, 16), Round::stochastic, 8, 16, Signs::random});
  expect_operand(r, Role::xt, {e2m1, ue5m3, two, tile(1, 16), Round::even, 8, 16, Signs::random});
}

TEST(RecipePresets, EveryPresetIsListedAndParses) {
  std::vector<std::string> names;
  for (const Preset& p : presets()) {
    names.emplace_back(p.name);
    EXPECT_FALSE(p.summary.empty());
    const Recipe r = parse_recipe(p.name);
    EXPECT_EQ(r.preset, p.name);
    EXPECT_TRUE(r == p.make());
    EXPECT_NO_THROW(validate(r));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3"}));
}

TEST(RecipeRoles, TableMatchesTheLinearLayer) {
  EXPECT_FALSE(role_info(Role::x).transposed);
  EXPECT_FALSE(role_info(Role::w).transposed);
  EXPECT_FALSE(role_info(Role::dy).transposed);
  EXPECT_TRUE(role_info(Role::wt).transposed);
  EXPECT_TRUE(role_info(Role::dyt).transposed);
  EXPECT_TRUE(role_info(Role::xt).transposed);
  EXPECT_EQ(role_info(Role::x).partner, Role::w);
  EXPECT_EQ(role_info(Role::dy).partner, Role::wt);
  EXPECT_EQ(role_info(Role::dyt).partner, Role::xt);
  EXPECT_EQ(role_info(Role::wt).forward, Role::w);
  EXPECT_EQ(role_info(Role::xt).forward, Role::x);
  EXPECT_EQ(role_info(Role::dyt).forward, Role::dy);
  for (Role role : kAllRoles) {
    EXPECT_EQ(role_info(role).role, role);
    EXPECT_EQ(role_info(role_info(role).partner).partner, role);
  }
  EXPECT_EQ(role_info(Role::x).gemm, "fprop");
  EXPECT_EQ(role_info(Role::wt).gemm, "dgrad");
  EXPECT_EQ(role_info(Role::xt).gemm, "wgrad");
}

// ---------------------------------------------------------------------------------------------
// Overrides.

TEST(RecipeOverrides, GlobalKeyAppliesToEveryOperand) {
  for (const char* text : {"mxfp4:round=even", "mxfp4:rounding=even"}) {
    const Recipe r = parse_recipe(text);
    for (Role role : kAllRoles) EXPECT_EQ(r[role].round, Round::even) << text << " " << name(role);
  }
}

TEST(RecipeOverrides, GroupsNameTheirOperands) {
  const std::pair<const char*, std::vector<Role>> groups[] = {
      {"fprop", {Role::x, Role::w}},    {"dgrad", {Role::dy, Role::wt}},
      {"wgrad", {Role::dyt, Role::xt}}, {"act", {Role::x, Role::xt}},
      {"weight", {Role::w, Role::wt}},  {"grad", {Role::dy, Role::dyt}},
  };
  for (const auto& [group, roles] : groups) {
    const Recipe r = parse_recipe(std::string("mxfp4:") + group + ".round=zero");
    for (Role role : kAllRoles) {
      const bool named = std::find(roles.begin(), roles.end(), role) != roles.end();
      EXPECT_EQ(r[role].round, named ? Round::zero : Round::away) << group << " " << name(role);
    }
  }
  const Recipe r = parse_recipe("nvfp4:grad.round=even");
  EXPECT_EQ(r[Role::dy].round, Round::even);
  EXPECT_EQ(r[Role::dyt].round, Round::even);
  EXPECT_EQ(r[Role::dyt].had.size, 16);  // the rest of the operand is untouched
}

TEST(RecipeOverrides, RoleKeyChangesOneOperand) {
  const Recipe r = parse_recipe("nvfp4:x.block=1x32");
  EXPECT_EQ(r[Role::x].block, tile(1, 32));
  const Recipe base = parse_recipe("nvfp4");
  for (Role role : kAllRoles) {
    if (role != Role::x) {
      EXPECT_TRUE(r[role] == base[role]) << name(role);
    }
  }
  EXPECT_EQ(parse_recipe("tetrajet:wt.block=1x16")[Role::wt].block, tile(1, 16));
  EXPECT_EQ(parse_recipe("mxfp4:x.block=row")[Role::x].block.kind, Kind::row);
  EXPECT_EQ(parse_recipe("mxfp4:dy.block=tensor")[Role::dy].block.kind, Kind::tensor);
}

TEST(RecipeOverrides, RecipeWideParameters) {
  const Recipe r = parse_recipe("msfp4:occ=0.97,dge.k=3");
  EXPECT_EQ(r.occ_alpha, 0.97);
  EXPECT_EQ(r.dge_k, 3.0f);
  EXPECT_EQ(parse_recipe("ue5m3:ue5m3=122880").ue5m3, Ue5m3Variant::all_finite);
  EXPECT_EQ(parse_recipe("ue5m3:ue5m3=61440").ue5m3, Ue5m3Variant::ieee);
  EXPECT_EQ(parse_recipe("ue5m3:ue5m3=114688").ue5m3, Ue5m3Variant::nan_ff);
  EXPECT_EQ(parse_recipe("msfp4:dge.clip=10").dge_clip, 10.0f);
  EXPECT_EQ(parse_recipe("tetrajet:qema.decay=0.99").qema_decay, 0.99f);
  EXPECT_EQ(parse_recipe("tetrajet:qema.start=0").qema_start, 0);
  EXPECT_TRUE(parse_recipe("tetrajet:w.qema=on")[Role::w].qema);
  // occ=on/off is the per-operand switch, not the quantile.
  const Recipe act = parse_recipe("mxfp4:act.occ=on");
  EXPECT_TRUE(act[Role::x].occ);
  EXPECT_TRUE(act[Role::xt].occ);
  EXPECT_FALSE(act[Role::w].occ);
  EXPECT_EQ(act.occ_alpha, 0.99);
}

TEST(RecipeOverrides, LaterOverridesWinAndSpacesAreIgnored) {
  const Recipe a = parse_recipe("mxfp4:round=even,x.round=up");
  EXPECT_EQ(a[Role::x].round, Round::up);
  EXPECT_EQ(a[Role::w].round, Round::even);
  const Recipe b = parse_recipe("mxfp4:x.round=up,round=even");
  EXPECT_EQ(b[Role::x].round, Round::even);
  const Recipe c = parse_recipe("  nvfp4 : x.round = away ,, ");
  EXPECT_EQ(c[Role::x].round, Round::away);
  EXPECT_TRUE(parse_recipe("nvfp4:") == parse_recipe("nvfp4"));
}

TEST(RecipeOverrides, HadamardSizeAndSigns) {
  const Recipe a = parse_recipe("nvfp4:wgrad.had.signs=----------------");
  EXPECT_EQ(a[Role::dyt].had.effective_mask().w[0], 0xffffu);
  // A new size drops a sign vector written for the old one.
  const Recipe b = parse_recipe("nvfp4:wgrad.had=32");
  EXPECT_EQ(b[Role::xt].had.size, 32);
  EXPECT_EQ(b[Role::xt].had.signs, Signs::none);
  const Recipe c = parse_recipe("ue5m3:had.seed=7");
  EXPECT_EQ(c[Role::dy].had.seed, 7u);
  EXPECT_FALSE(c[Role::dy].had == parse_recipe("ue5m3")[Role::dy].had);
  const Recipe d = parse_recipe("nvfp4:had=none");
  for (Role role : kAllRoles) EXPECT_EQ(d[role].had.size, 0);
}

}  // namespace
}  // namespace fp4jit
