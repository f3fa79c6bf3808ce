// Recipes (core/recipe.hpp): every preset field by field against RECIPES.md, overrides at every
// scope, the canonical form's round trip and its pinned hash, and every error path with the
// fields its message must name.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/recipe.hpp"
#include "core/sha256.hpp"

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

// ---------------------------------------------------------------------------------------------
// Canonical form and hash.

TEST(RecipeCanonical, RoundTripsEveryPreset) {
  for (const Preset& p : presets()) {
    const Recipe r = parse_recipe(p.name);
    const std::string c = canonical(r);
    EXPECT_EQ(c.rfind(std::string(p.name) + ":", 0), 0u) << c;
    const Recipe back = parse_recipe(c);
    EXPECT_TRUE(back == r) << c;
    EXPECT_EQ(back.preset, r.preset);
    EXPECT_EQ(canonical(back), c);
    EXPECT_EQ(recipe_hash(r), sha256_hex(c));
  }
}

TEST(RecipeCanonical, PinnedText) {
  EXPECT_EQ(canonical(parse_recipe("mxfp4")),
            "mxfp4:occ=0.99,dge.k=5,dge.clip=3,ue5m3=114688,qema.decay=0.999,qema.start=10,"
            "x.elem=e2m1,x.scale=e8m0,x.rule=ocp_floor,x.block=1x32,x.round=away,x.sr.bits=8,"
            "x.had=none,x.had.signs=none,x.had.seed=0,x.occ=off,x.dge=off,x.src=direct,x.qema=off,"
            "w.elem=e2m1,w.scale=e8m0,w.rule=ocp_floor,w.block=1x32,w.round=away,w.sr.bits=8,"
            "w.had=none,w.had.signs=none,w.had.seed=0,w.occ=off,w.dge=off,w.src=direct,w.qema=off,"
            "dy.elem=e2m1,dy.scale=e8m0,dy.rule=ocp_floor,dy.block=1x32,dy.round=away,dy.sr.bits=8,"
            "dy.had=none,dy.had.signs=none,dy.had.seed=0,dy.occ=off,dy.dge=off,dy.src=direct,"
            "dy.qema=off,wt.elem=e2m1,wt.scale=e8m0,wt.rule=ocp_floor,wt.block=1x32,wt.round=away,"
            "wt.sr.bits=8,wt.had=none,wt.had.signs=none,wt.had.seed=0,wt.occ=off,wt.dge=off,"
            "wt.src=direct,wt.qema=off,dyt.elem=e2m1,dyt.scale=e8m0,dyt.rule=ocp_floor,"
            "dyt.block=1x32,dyt.round=away,dyt.sr.bits=8,dyt.had=none,dyt.had.signs=none,"
            "dyt.had.seed=0,dyt.occ=off,dyt.dge=off,dyt.src=direct,dyt.qema=off,xt.elem=e2m1,"
            "xt.scale=e8m0,xt.rule=ocp_floor,xt.block=1x32,xt.round=away,xt.sr.bits=8,xt.had=none,"
            "xt.had.signs=none,xt.had.seed=0,xt.occ=off,xt.dge=off,xt.src=direct,xt.qema=off");
}

// The hashes name cache entries: a change here invalidates every cached kernel and must be
// deliberate. Update these only together with a change of the canonical form or of a preset.
TEST(RecipeCanonical, PinnedHashes) {
  EXPECT_EQ(recipe_hash(parse_recipe("mxfp4")),
            "5ea77ef4b50f96f78470aae7280ca9a3b43159d4c70f6160549785f242ff3bb8");
  EXPECT_EQ(recipe_hash(parse_recipe("nvfp4")),
            "4cd341cfc4dcf8e4d2b29b767b9333b5dce6b87e56ffb11ef00f75bc75929901");
  EXPECT_EQ(recipe_hash(parse_recipe("msfp4")),
            "7f9a8be95504ab580ec99966115855f1e8fad3bbc8790c4636a2166dedca6149");
  EXPECT_EQ(recipe_hash(parse_recipe("tetrajet")),
            "542912a68249f77d225e029f1a409649b6cbabc7e6de0b0960774f2fcce0cde6");
  EXPECT_EQ(recipe_hash(parse_recipe("ue5m3")),
            "d7f56de4ed1a96ad9e5b975ebdc198b4540203376357afce74d2a3ff4eccaaeb");
  // Any field changes the hash.
  EXPECT_NE(recipe_hash(parse_recipe("nvfp4:x.round=away")), recipe_hash(parse_recipe("nvfp4")));
  EXPECT_NE(recipe_hash(parse_recipe("nvfp4:dge.clip=4")), recipe_hash(parse_recipe("nvfp4")));
}

// Equal recipes have one key: a field that does not apply (the seed of a fixed or absent sign
// vector) does not enter the canonical form.
TEST(RecipeCanonical, FieldsThatDoNotApplyLeaveTheKeyAlone) {
  for (const char* text : {"nvfp4:had.seed=5", "nvfp4:xt.had.seed=5", "mxfp4:x.had.seed=9"}) {
    const Recipe r = parse_recipe(text);
    const Recipe base = parse_recipe(std::string(text).substr(0, 5));
    EXPECT_TRUE(r == base) << text;
    EXPECT_EQ(canonical(r), canonical(base)) << text;
    for (Role role : kAllRoles) EXPECT_EQ(canonical(r, role), canonical(base, role)) << text;
  }
  // With random signs the seed is the sign vector.
  EXPECT_NE(canonical(parse_recipe("ue5m3:had.seed=5")), canonical(parse_recipe("ue5m3")));
}

TEST(RecipeCanonical, PerOperandFormHoldsWhatTheOperandUses) {
  const Recipe mx = parse_recipe("mxfp4");
  for (Role role : kAllRoles) EXPECT_EQ(canonical(mx, role), canonical(mx, Role::x));
  const Recipe nv = parse_recipe("nvfp4");
  EXPECT_NE(canonical(nv, Role::x), canonical(nv, Role::dy));
  // Recipe-wide parameters enter only the operands that use them.
  EXPECT_EQ(canonical(parse_recipe("nvfp4:dge.k=3"), Role::x), canonical(nv, Role::x));
  const Recipe ms = parse_recipe("msfp4");
  EXPECT_NE(canonical(parse_recipe("msfp4:dge.k=3"), Role::w), canonical(ms, Role::w));
  EXPECT_EQ(canonical(parse_recipe("msfp4:dge.k=3"), Role::x), canonical(ms, Role::x));
  EXPECT_NE(canonical(parse_recipe("msfp4:occ=0.97"), Role::x), canonical(ms, Role::x));
  const Recipe ue = parse_recipe("ue5m3");
  EXPECT_NE(canonical(parse_recipe("ue5m3:ue5m3=61440"), Role::x), canonical(ue, Role::x));
  // A re-quantized operand depends on its forward operand's spec.
  const Recipe tj = parse_recipe("tetrajet");
  EXPECT_NE(canonical(parse_recipe("tetrajet:w.round=even"), Role::wt), canonical(tj, Role::wt));
  EXPECT_EQ(canonical(parse_recipe("tetrajet:w.round=even"), Role::dy), canonical(tj, Role::dy));
  // The preset label is not part of an operand's key.
  EXPECT_EQ(canonical(nv, Role::x).find("nvfp4"), std::string::npos);
}

// Random override strings: whatever parses round-trips through its canonical form.
TEST(RecipeCanonical, RoundTripsRandomOverrides) {
  const std::vector<std::string> prefixes = {"",     "x.",      "w.",     "dy.",    "wt.",
                                             "dyt.", "xt.",     "fprop.", "dgrad.", "wgrad.",
                                             "act.", "weight.", "grad."};
  const std::vector<std::pair<std::string, std::vector<std::string>>> fields = {
      {"elem", {"e2m1", "e4m3", "e5m2"}},
      {"scale", {"e8m0", "ue4m3", "ue5m3", "fp32"}},
      {"rule", {"ocp_floor", "ceil_pow2", "ms_pow2", "two_level", "absmax"}},
      {"block", {"1x16", "1x32", "16x16", "32x1", "2x8", "row", "col", "tensor"}},
      {"round", {"even", "away", "up", "zero", "stochastic"}},
      {"sr.bits", {"8", "16"}},
      {"had", {"none", "16", "32", "64", "128"}},
      {"had.signs",
       {"none", "random", "+-+-+-+-+-+-+-+-", "---+++---+++----",
        "+--+-++--++-+--+-++-+--+--+-++-+"}},
      {"had.seed", {"0", "1", "18446744073709551615"}},
      {"occ", {"on", "off"}},
      {"dge", {"on", "off"}},
      {"src", {"direct", "requant"}},
      {"qema", {"on", "off"}},
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> wide = {
      {"occ", {"0.97", "0.999", "1", "0.75"}},
      {"dge.k", {"3", "5", "2.5", "0.1"}},
      {"dge.clip", {"3", "10", "0.3"}},
      {"ue5m3", {"114688", "122880", "61440"}},
      {"qema.decay", {"0.9", "0.999", "0.12345"}},
      {"qema.start", {"0", "10", "1000"}},
  };
  std::mt19937 gen(61);
  const auto pick = [&](const auto& v) -> const auto& {
    return v[gen() % v.size()];
  };
  int parsed = 0;
  for (int n = 0; n < 20000; ++n) {
    std::string text = std::string(presets()[gen() % presets().size()].name) + ":";
    const int count = 1 + static_cast<int>(gen() % 5);
    for (int i = 0; i < count; ++i) {
      if (i > 0) text += ",";
      if (gen() % 4 == 0) {
        const auto& [key, values] = pick(wide);
        text += key + "=" + pick(values);
      } else {
        const auto& [key, values] = pick(fields);
        text += pick(prefixes) + key + "=" + pick(values);
      }
    }
    Recipe r;
    try {
      r = parse_recipe(text);
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), ErrorKind::recipe) << text << ": " << e.what();
      continue;
    }
    ++parsed;
    const std::string c = canonical(r);
    const Recipe back = parse_recipe(c);
    ASSERT_TRUE(back == r) << text << "\n" << c;
    ASSERT_EQ(canonical(back), c) << text;
    ASSERT_EQ(recipe_hash(back), recipe_hash(r)) << text;
    for (Role role : kAllRoles) ASSERT_EQ(canonical(back, role), canonical(r, role)) << text;
  }
  EXPECT_GT(parsed, 5000) << parsed;  // the sweep exercises many valid recipes, not only errors
}

// ---------------------------------------------------------------------------------------------
// Errors: Error(recipe) whose message names what is wrong and, where there is a list, the valid
// values.

void expect_recipe_error(const std::string& text, std::initializer_list<const char*> parts) {
  try {
    parse_recipe(text);
    ADD_FAILURE() << "'" << text << "' parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::recipe) << text;
    const std::string message = e.what();
    for (const char* part : parts)
      EXPECT_NE(message.find(part), std::string::npos)
          << "'" << text << "': '" << message << "' lacks '" << part << "'";
  }
}

TEST(RecipeErrors, UnknownPresetListsThePresets) {
  expect_recipe_error("nvfp5",
                      {"unknown recipe preset 'nvfp5'", "mxfp4, nvfp4, msfp4, tetrajet, ue5m3"});
  expect_recipe_error("", {"unknown recipe preset", "mxfp4"});
  expect_recipe_error("NVFP4:x.round=even", {"'NVFP4'"});
}

TEST(RecipeErrors, UnknownKey) {
  expect_recipe_error("nvfp4:colour=red", {"unknown recipe key 'colour'", "round", "x.round=even"});
  expect_recipe_error("nvfp4:x.colour=red", {"unknown recipe key 'x.colour'"});
  expect_recipe_error("nvfp4:q.round=even", {"unknown recipe key 'q.round'"});
  expect_recipe_error("nvfp4:x", {"'x' is not of the form key=value"});
}

TEST(RecipeErrors, BadValueListsTheValidValues) {
  expect_recipe_error("nvfp4:x.round=nearest",
                      {"x.round", "'nearest'", "even, away, up, zero, stochastic"});
  expect_recipe_error("nvfp4:elem=fp4", {"elem", "'fp4'", "e2m1, e4m3, e5m2"});
  expect_recipe_error("nvfp4:w.scale=e4m3", {"w.scale", "e8m0, ue4m3, ue5m3, fp32"});
  expect_recipe_error("nvfp4:rule=floor",
                      {"rule", "ocp_floor, ceil_pow2, ms_pow2, two_level, absmax"});
  expect_recipe_error("nvfp4:x.block=1y32", {"x.block", "'1y32'", "RxC"});
  expect_recipe_error("nvfp4:x.block=0x32", {"x.block", "'0x32'"});
  expect_recipe_error("nvfp4:had=24", {"had", "'24'", "none, 16, 32, 64, 128"});
  expect_recipe_error("nvfp4:x.occ=yes", {"x.occ", "'yes'", "on, off"});
  expect_recipe_error("nvfp4:src=copy", {"src", "direct, requant"});
  expect_recipe_error("nvfp4:had.seed=-1", {"had.seed", "'-1'"});
  expect_recipe_error("ue5m3:ue5m3=1", {"ue5m3", "'1'", "114688, 122880, 61440"});
  expect_recipe_error("msfp4:occ=0.3", {"occ", "'0.3'", "(0.5, 1]"});
  expect_recipe_error("msfp4:dge.k=-1", {"dge.k", "'-1'", "positive"});
  expect_recipe_error("msfp4:dge.clip=0", {"dge.clip", "positive"});
  expect_recipe_error("tetrajet:qema.decay=1", {"qema.decay", "(0, 1)"});
  expect_recipe_error("tetrajet:qema.start=-2", {"qema.start", "'-2'"});
  expect_recipe_error("nvfp4:sr.bits=12", {"sr.bits", "'12'", "8, 16"});
}

TEST(RecipeErrors, InconsistentCombinationsNameTheFields) {
  expect_recipe_error("msfp4:rule=ocp_floor",
                      {"rule=ocp_floor", "scale=e8m0", "scale=fp32", "operand x"});
  expect_recipe_error("mxfp4:rule=two_level", {"rule=two_level", "ue4m3 or ue5m3", "scale=e8m0"});
  expect_recipe_error("mxfp4:rule=absmax", {"rule=absmax", "scale=fp32"});
  expect_recipe_error("nvfp4:rule=ms_pow2", {"rule=ms_pow2", "scale=ue4m3"});
  expect_recipe_error("nvfp4:x.had=16", {"x and w", "fprop", "Hadamard", "had=16"});
  expect_recipe_error("nvfp4:xt.had.signs=++++++++++++++++", {"dyt and xt", "wgrad", "Hadamard"});
  expect_recipe_error("ue5m3:dy.had=none", {"dy and wt", "dgrad", "Hadamard"});
  expect_recipe_error("msfp4:w.occ=on", {"operand w", "occ"});
  expect_recipe_error("msfp4:x.dge=on", {"operand x", "dge"});
  expect_recipe_error("nvfp4:w.dge=on", {"operand w", "dge", "rule=ms_pow2"});
  expect_recipe_error("tetrajet:x.qema=on", {"operand x", "qema"});
  expect_recipe_error("nvfp4:w.elem=e4m3,w.qema=on", {"operand w", "qema", "elem=e2m1"});
  expect_recipe_error("tetrajet:x.src=requant", {"operand x", "src=requant"});
  expect_recipe_error("nvfp4:x.had.signs=++", {"x.had.signs", "had=none"});
  expect_recipe_error("nvfp4:dyt.had.signs=+++", {"dyt.had.signs", "had=16"});
  expect_recipe_error("nvfp4:fprop.had.signs=random", {"had.signs", "had=none"});
  expect_recipe_error("nvfp4:x.block=70000x1", {"operand x", "block=70000x1", "out of range"});
}

TEST(RecipeErrors, ValidateChecksRecipesBuiltInCode) {
  const auto expect_invalid = [](const Recipe& r, const char* part) {
    try {
      validate(r);
      ADD_FAILURE() << "valid: " << canonical(r);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::recipe);
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  Recipe r = parse_recipe("nvfp4");
  r[Role::dy].sr_bits = 12;
  expect_invalid(r, "sr.bits=12");
  r = parse_recipe("nvfp4");
  r[Role::x].had.size = 24;
  r[Role::w].had.size = 24;
  expect_invalid(r, "had=24");
  r = parse_recipe("nvfp4");
  r.occ_alpha = 0.2;
  expect_invalid(r, "occ=0.2");
  r = parse_recipe("nvfp4");
  r.dge_k = 0.0f;
  expect_invalid(r, "dge.k=0");
  r = parse_recipe("nvfp4");
  r[Role::xt].had.mask.w[1] = 1u;  // a sign past the transform's 16 entries
  r[Role::dyt].had.mask.w[1] = 1u;
  expect_invalid(r, "had.signs has more than had=16 entries");
}

}  // namespace
}  // namespace fp4jit
