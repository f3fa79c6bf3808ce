// Quantization recipes: for each of the six operands of a linear layer's three training GEMMs,
// exactly how it is quantized. Presets follow RECIPES.md; any field can be overridden in text:
//   nvfp4                      a preset
//   mxfp4:round=even           every operand rounds to nearest even
//   msfp4:occ=0.97,dge.k=3     recipe-wide parameters
//   nvfp4:grad.round=even      a group of operands (fprop, dgrad, wgrad, act, weight, grad)
//   tetrajet:wt.block=1x16     one operand
// The canonical text spells out every field in a fixed order; it round-trips through parse() and
// its SHA-256 identifies the recipe.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/format.hpp"
#include "numerics/hadamard.cuh"
#include "numerics/rounding.cuh"

namespace fp4jit {

using nx::Round;

// The six operands, each in the K-major layout its GEMM consumes ([rows, K], K contiguous).
// For a linear layer Y = X W^T with X [tokens, in], W [out, in]:
//   x   fprop A   X    [tokens, in]     K = in
//   w   fprop B   W    [out, in]        K = in
//   dy  dgrad A   dY   [tokens, out]    K = out
//   wt  dgrad B   W^T  [in, out]        K = out     (transposed copy of W)
//   dyt wgrad A   dY^T [out, tokens]    K = tokens  (transposed copy of dY)
//   xt  wgrad B   X^T  [in, tokens]     K = tokens  (transposed copy of X)
enum class Role : std::uint8_t { x, w, dy, wt, dyt, xt };
constexpr int kNumRoles = 6;
constexpr std::array<Role, kNumRoles> kAllRoles{Role::x,  Role::w,   Role::dy,
                                                Role::wt, Role::dyt, Role::xt};

struct RoleInfo {
  Role role;
  std::string_view gemm;    // "fprop", "dgrad", "wgrad"
  bool transposed;          // the operand is the transpose of the tensor it is made from
  std::string_view tensor;  // "X", "W", "dY"
  Role forward;             // the fprop operand quantizing the same tensor (for src=requant)
  Role partner;             // the other operand of the same GEMM
  std::string_view description;
};
const RoleInfo& role_info(Role r);
std::span<const Named<Role>> role_names();
inline std::string_view name(Role r) {
  return name_of(role_names(), r);
}
// The transposed copy quantized from the same tensor as x, w or dy (xt, wt, dyt): the other half
// of a quantize_pair.
inline Role transposed_copy(Role r) {
  return r == Role::x ? Role::xt : (r == Role::w ? Role::wt : Role::dyt);
}

enum class ScaleRule : std::uint8_t {
  ocp_floor,  // E8M0, 2^(floor(log2 amax) - emax)                      (OCP MX, mxfp4)
  ceil_pow2,  // E8M0, 2^ceil(log2(amax / max))                          (TetraJet)
  ms_pow2,    // power of two sf = 2^floor(log2(max / amax)) multiplies  (Microsoft FP4)
  two_level,  // FP32 tensor scale + UE4M3/UE5M3 block scale             (NVFP4)
  absmax,     // real-valued FP32 scale amax / max
};
std::span<const Named<ScaleRule>> scale_rule_names();
std::span<const Named<Round>> round_names();
inline std::string_view name(ScaleRule r) {
  return name_of(scale_rule_names(), r);
}
inline std::string_view name(Round r) {
  return name_of(round_names(), r);
}

// A quantization block in the operand's K-major layout: tile rows x cols (cols along K), one
// scale per row (vector-wise along K), per column, or one for the whole tensor.
struct Block {
  enum class Kind : std::uint8_t { tile, row, col, tensor };
  Kind kind = Kind::tile;
  int rows = 1, cols = 32;
  bool operator==(const Block&) const = default;
};

// Where an operand's values come from.
enum class Source : std::uint8_t {
  direct,   // the tensor itself
  requant,  // the dequantized fprop copy of the same tensor (TetraJet's double quantization)
};
std::span<const Named<Source>> source_names();

struct HadamardSpec {
  enum class Signs : std::uint8_t { none, given, random };
  int size = 0;  // 0: no transform; else 16, 32, 64 or 128 along K
  Signs signs = Signs::none;
  nx::SignMask mask{};                  // Signs::given: bit i set means -1
  std::uint64_t seed = 0;               // Signs::random
  nx::SignMask effective_mask() const;  // the signs actually applied
  bool operator==(const HadamardSpec& o) const;
};

struct OperandSpec {
  ElemFormat elem = ElemFormat::e2m1;
  ScaleFormat scale = ScaleFormat::e8m0;
  ScaleRule rule = ScaleRule::ocp_floor;
  Block block{};
  Round round = Round::even;
  int sr_bits = 8;  // random bits per element when round = stochastic (8 or 16)
  HadamardSpec had{};
  bool occ = false;  // outlier clamping and compensation (activations)
  bool dge = false;  // differentiable gradient estimator (weights)
  Source src = Source::direct;
  bool qema = false;  // TetraJet Q-EMA rounding (weights)
  bool operator==(const OperandSpec&) const = default;
};

struct Recipe {
  std::string preset;  // the preset the recipe was built from (a label, not a field)
  std::array<OperandSpec, kNumRoles> ops{};
  double occ_alpha = 0.99;  // OCC keeps the values between quantiles 1-alpha and alpha
  float dge_k = 5.0f;
  float dge_clip = 3.0f;
  Ue5m3Variant ue5m3 = Ue5m3Variant::nan_ff;
  float qema_decay = 0.999f;
  int qema_start = 10;

  const OperandSpec& operator[](Role r) const { return ops[static_cast<int>(r)]; }
  OperandSpec& operator[](Role r) { return ops[static_cast<int>(r)]; }
  bool operator==(const Recipe& o) const;  // every field but the preset label
};

struct Preset {
  std::string_view name;
  std::string_view summary;
  Recipe (*make)();
};
std::span<const Preset> presets();

// Parses "preset[:key=value,...]"; throws Error(recipe) naming an unknown preset, key or value
// with the valid ones, or an inconsistent combination with the fields involved.
Recipe parse_recipe(std::string_view text);
// Throws Error(recipe) if the recipe is inconsistent (called by parse_recipe).
void validate(const Recipe& recipe);
// Every field, fixed order: "preset:occ=...,dge.k=...,...,x.elem=...,...". Round-trips.
std::string canonical(const Recipe& recipe);
// The fields that decide how one operand is quantized, recipe-wide parameters it uses included;
// what a quantize kernel's key holds (no preset label).
std::string canonical(const Recipe& recipe, Role role);
// Lower-case hex SHA-256 of canonical(recipe).
std::string recipe_hash(const Recipe& recipe);

// Field spellings shared by the parser, the canonical form and the CLI's tables.
std::string block_text(const Block& b);
std::string hadamard_size_text(const HadamardSpec& h);  // "none" or the size
std::string hadamard_signs_text(const HadamardSpec& h);

}  // namespace fp4jit
