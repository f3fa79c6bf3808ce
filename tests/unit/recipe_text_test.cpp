// Recipe text (core/recipe.hpp): the canonical form's round trip and its pinned hash, equal
// recipes under one key, random override strings, and every error path with the fields its
// message must name. Presets and overrides: recipe_test.cpp.
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
