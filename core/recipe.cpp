// Roles, name tables, presets and validation of recipes. Text parsing and the canonical form are
// in recipe_text.cpp.
#include "core/recipe.hpp"

#include <array>

namespace fp4jit {

namespace {

constexpr std::array<RoleInfo, kNumRoles> kRoles{{
    {Role::x, "fprop", false, "X", Role::x, Role::w, "X [tokens, in], K = in"},
    {Role::w, "fprop", false, "W", Role::w, Role::x, "W [out, in], K = in"},
    {Role::dy, "dgrad", false, "dY", Role::dy, Role::wt, "dY [tokens, out], K = out"},
    {Role::wt, "dgrad", true, "W", Role::w, Role::dy, "W^T [in, out], K = out"},
    {Role::dyt, "wgrad", true, "dY", Role::dy, Role::xt, "dY^T [out, tokens], K = tokens"},
    {Role::xt, "wgrad", true, "X", Role::x, Role::dyt, "X^T [in, tokens], K = tokens"},
}};
constexpr std::array<Named<Role>, kNumRoles> kRoleNames{{{Role::x, "x"},
                                                         {Role::w, "w"},
                                                         {Role::dy, "dy"},
                                                         {Role::wt, "wt"},
                                                         {Role::dyt, "dyt"},
                                                         {Role::xt, "xt"}}};
constexpr std::array<Named<ScaleRule>, 5> kRuleNames{{{ScaleRule::ocp_floor, "ocp_floor"},
                                                      {ScaleRule::ceil_pow2, "ceil_pow2"},
                                                      {ScaleRule::ms_pow2, "ms_pow2"},
                                                      {ScaleRule::two_level, "two_level"},
                                                      {ScaleRule::absmax, "absmax"}}};
constexpr std::array<Named<Round>, 5> kRoundNames{{{Round::even, "even"},
                                                   {Round::away, "away"},
                                                   {Round::up, "up"},
                                                   {Round::zero, "zero"},
                                                   {Round::stochastic, "stochastic"}}};
constexpr std::array<Named<Source>, 2> kSourceNames{
    {{Source::direct, "direct"}, {Source::requant, "requant"}}};

// NVFP4's fixed wgrad sign vector [1,1,1,-1,1,-1,-1,-1,-1,-1,-1,1,-1,1,-1,-1]: bit i set = -1.
constexpr std::uint32_t kNvfp4Signs = (1u << 3) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 8) |
                                      (1u << 9) | (1u << 10) | (1u << 12) | (1u << 14) | (1u << 15);

Block tile(int rows, int cols) {
  return Block{Block::Kind::tile, rows, cols};
}
Block per(Block::Kind kind) {
  return Block{kind, 0, 0};
}

OperandSpec mx_operand(ScaleRule rule, Round round) {
  OperandSpec s;
  s.elem = ElemFormat::e2m1;
  s.scale = ScaleFormat::e8m0;
  s.rule = rule;
  s.block = tile(1, 32);
  s.round = round;
  return s;
}

Recipe make_mxfp4() {
  Recipe r;
  r.preset = "mxfp4";
  for (auto& op : r.ops) op = mx_operand(ScaleRule::ocp_floor, Round::away);
  return r;
}

OperandSpec two_level_operand(ScaleFormat scale, Block block, Round round, HadamardSpec had) {
  OperandSpec s;
  s.elem = ElemFormat::e2m1;
  s.scale = scale;
  s.rule = ScaleRule::two_level;
  s.block = block;
  s.round = round;
  s.had = had;
  return s;
}

Recipe make_nvfp4() {
  Recipe r;
  r.preset = "nvfp4";
  HadamardSpec rht;
  rht.size = 16;
  rht.signs = HadamardSpec::Signs::given;
  rht.mask.w[0] = kNvfp4Signs;
  const auto ue4m3 = ScaleFormat::ue4m3;
  r[Role::x] = two_level_operand(ue4m3, tile(1, 16), Round::even, {});
  r[Role::w] = two_level_operand(ue4m3, tile(16, 16), Round::even, {});
  r[Role::dy] = two_level_operand(ue4m3, tile(1, 16), Round::stochastic, {});
  r[Role::wt] = two_level_operand(ue4m3, tile(16, 16), Round::even, {});
  r[Role::dyt] = two_level_operand(ue4m3, tile(1, 16), Round::stochastic, rht);
  r[Role::xt] = two_level_operand(ue4m3, tile(1, 16), Round::even, rht);
  return r;
}

Recipe make_msfp4() {
  Recipe r;
  r.preset = "msfp4";
  OperandSpec fp4;
  fp4.elem = ElemFormat::e2m1;
  fp4.scale = ScaleFormat::fp32;
  fp4.rule = ScaleRule::ms_pow2;
  fp4.round = Round::up;
  OperandSpec grad = fp4;  // gradients stay FP8 E5M2 with a per-tensor power-of-two scale
  grad.elem = ElemFormat::e5m2;
  grad.round = Round::even;
  grad.block = per(Block::Kind::tensor);
  // Activations per token, weights per output channel; the transposed copies keep the same
  // scales (per column of the K-major transpose), so the backward GEMMs reuse the forward values.
  r[Role::x] = fp4;
  r[Role::x].block = per(Block::Kind::row);
  r[Role::x].occ = true;
  r[Role::xt] = r[Role::x];
  r[Role::xt].block = per(Block::Kind::col);
  r[Role::w] = fp4;
  r[Role::w].block = per(Block::Kind::row);
  r[Role::w].dge = true;
  r[Role::wt] = fp4;
  r[Role::wt].block = per(Block::Kind::col);
  r[Role::dy] = grad;
  r[Role::dyt] = grad;
  return r;
}

Recipe make_tetrajet() {
  Recipe r;
  r.preset = "tetrajet";
  r[Role::x] = mx_operand(ScaleRule::ceil_pow2, Round::away);
  r[Role::w] = mx_operand(ScaleRule::ceil_pow2, Round::away);
  for (Role role : {Role::dy, Role::wt, Role::dyt, Role::xt}) {
    r[role] = mx_operand(ScaleRule::ceil_pow2, Round::stochastic);
    r[role].sr_bits = 16;
  }
  r[Role::wt].src = Source::requant;  // Q(deq(Q(W)), 32x1, SR)
  r[Role::xt].src = Source::requant;  // Q(deq(Q(X)), 32x1, SR)
  return r;
}

Recipe make_ue5m3() {
  Recipe r;
  r.preset = "ue5m3";
  HadamardSpec rht;
  rht.size = 16;
  rht.signs = HadamardSpec::Signs::random;
  rht.seed = 1;
  const auto ue5m3 = ScaleFormat::ue5m3;
  r[Role::x] = two_level_operand(ue5m3, tile(1, 16), Round::even, {});
  r[Role::w] = two_level_operand(ue5m3, tile(1, 16), Round::even, {});
  r[Role::dy] = two_level_operand(ue5m3, tile(1, 16), Round::stochastic, rht);
  r[Role::wt] = two_level_operand(ue5m3, tile(1, 16), Round::even, rht);
  r[Role::dyt] = two_level_operand(ue5m3, tile(1, 16), Round::stochastic, rht);
  r[Role::xt] = two_level_operand(ue5m3, tile(1, 16), Round::even, rht);
  return r;
}

constexpr std::array<Preset, 5> kPresets{{
    {"mxfp4", "OCP MX v1.0: 1x32 blocks, E8M0 floor scale, ties away from zero, all operands",
     make_mxfp4},
    {"nvfp4",
     "NVIDIA NVFP4: 1x16 UE4M3 + FP32 tensor scale, 16x16 weights, SR on dY, RHT16 on wgrad",
     make_nvfp4},
    {"msfp4",
     "Microsoft FP4: per-token/channel power-of-two scales, LUT rounding, OCC, DGE, E5M2 grads",
     make_msfp4},
    {"tetrajet", "TetraJet MXFP4: 1x32 E8M0 ceil scale, SR backward, double quantization",
     make_tetrajet},
    {"ue5m3", "UE5M3 microscaling: 1x16 UE5M3 + FP32 tensor scale, RHT16 backward, SR on grads",
     make_ue5m3},
}};

[[noreturn]] void bad(Role role, std::string_view what) {
  fail(ErrorKind::recipe, "recipe operand {}: {}", name(role), what);
}

void validate_operand(const Recipe& recipe, Role role) {
  const OperandSpec& s = recipe[role];
  switch (s.rule) {
    case ScaleRule::ocp_floor:
    case ScaleRule::ceil_pow2:
      if (s.scale != ScaleFormat::e8m0)
        bad(role,
            fmt::format("rule={} needs scale=e8m0 (got scale={})", name(s.rule), name(s.scale)));
      break;
    case ScaleRule::two_level:
      if (s.scale != ScaleFormat::ue4m3 && s.scale != ScaleFormat::ue5m3)
        bad(role,
            fmt::format("rule=two_level needs scale=ue4m3 or ue5m3 (got scale={})", name(s.scale)));
      break;
    case ScaleRule::ms_pow2:
      if (s.scale != ScaleFormat::fp32 && s.scale != ScaleFormat::e8m0)
        bad(role,
            fmt::format("rule=ms_pow2 needs scale=fp32 or e8m0 (got scale={})", name(s.scale)));
      break;
    case ScaleRule::absmax:
      if (s.scale != ScaleFormat::fp32)
        bad(role, fmt::format("rule=absmax needs scale=fp32 (got scale={})", name(s.scale)));
      break;
  }
  if (s.block.kind == Block::Kind::tile &&
      (s.block.rows < 1 || s.block.cols < 1 || s.block.rows > 65536 || s.block.cols > 65536))
    bad(role, fmt::format("block={} out of range (each side 1..65536)", block_text(s.block)));
  if (s.sr_bits != 8 && s.sr_bits != 16)
    bad(role, fmt::format("sr.bits={} (valid: 8, 16)", s.sr_bits));
  const int h = s.had.size;
  if (h != 0 && h != 16 && h != 32 && h != 64 && h != 128)
    bad(role, fmt::format("had={} (valid: none, 16, 32, 64, 128)", h));
  if (h == 0 && s.had.signs != HadamardSpec::Signs::none)
    bad(role, "had.signs is set but had=none");
  if (s.had.signs == HadamardSpec::Signs::given) {
    for (int i = h; i < 128; ++i)
      if (nx::sign_negative(s.had.mask, i))
        bad(role, fmt::format("had.signs has more than had={} entries", h));
  }
  if (s.src == Source::requant && !role_info(role).transposed)
    bad(role, "src=requant applies to the transposed copies (wt, dyt, xt) only");
  if (s.qema && role != Role::w) bad(role, "qema applies to the weight operand w only");
  if (s.qema && s.elem != ElemFormat::e2m1) bad(role, "qema needs elem=e2m1");
  if (s.dge && (s.rule != ScaleRule::ms_pow2 || s.elem != ElemFormat::e2m1))
    bad(role, "dge needs elem=e2m1 and rule=ms_pow2 (it is defined on the scaled E2M1 grid)");
  if (s.dge && role != Role::w) bad(role, "dge applies to the weight operand w only");
  if (s.occ && role != Role::x && role != Role::xt)
    bad(role, "occ applies to the activation operands x and xt only");
}

}  // namespace

const RoleInfo& role_info(Role r) {
  return kRoles[static_cast<int>(r)];
}
std::span<const Named<Role>> role_names() {
  return kRoleNames;
}
std::span<const Named<ScaleRule>> scale_rule_names() {
  return kRuleNames;
}
std::span<const Named<Round>> round_names() {
  return kRoundNames;
}
std::span<const Named<Source>> source_names() {
  return kSourceNames;
}
std::span<const Preset> presets() {
  return kPresets;
}

nx::SignMask HadamardSpec::effective_mask() const {
  switch (signs) {
    case Signs::none:
      return nx::SignMask{};
    case Signs::given:
      return mask;
    case Signs::random: {
      nx::SignMask m = nx::random_signs(seed);
      for (int i = size; i < 128; ++i) m.w[i >> 5] &= ~(1u << (i & 31));  // keep `size` entries
      return m;
    }
  }
  return nx::SignMask{};
}

bool HadamardSpec::operator==(const HadamardSpec& o) const {
  if (size != o.size || signs != o.signs) return false;
  if (signs == Signs::random && seed != o.seed) return false;
  const nx::SignMask a = effective_mask(), b = o.effective_mask();
  for (int i = 0; i < 4; ++i)
    if (a.w[i] != b.w[i]) return false;
  return true;
}

bool Recipe::operator==(const Recipe& o) const {
  return ops == o.ops && occ_alpha == o.occ_alpha && dge_k == o.dge_k && dge_clip == o.dge_clip &&
         ue5m3 == o.ue5m3 && qema_decay == o.qema_decay && qema_start == o.qema_start;
}

void validate(const Recipe& recipe) {
  for (Role role : kAllRoles) validate_operand(recipe, role);
  if (!(recipe.occ_alpha > 0.5 && recipe.occ_alpha <= 1.0))
    fail(ErrorKind::recipe, "recipe: occ={} out of range (0.5, 1]", recipe.occ_alpha);
  if (!(recipe.dge_k > 0.0f) || !(recipe.dge_clip > 0.0f))
    fail(ErrorKind::recipe, "recipe: dge.k={} and dge.clip={} must be positive", recipe.dge_k,
         recipe.dge_clip);
  if (!(recipe.qema_decay > 0.0f && recipe.qema_decay < 1.0f) || recipe.qema_start < 0)
    fail(ErrorKind::recipe, "recipe: qema.decay={} must lie in (0, 1) and qema.start={} be >= 0",
         recipe.qema_decay, recipe.qema_start);
  // The two operands of a GEMM meet along K: a Hadamard transform must be the same on both sides
  // or the product changes.
  for (Role role : {Role::x, Role::dy, Role::dyt}) {
    const Role partner = role_info(role).partner;
    if (!(recipe[role].had == recipe[partner].had))
      fail(ErrorKind::recipe,
           "recipe: operands {} and {} meet in the {} GEMM and must share the Hadamard transform "
           "(had={} signs={} vs had={} signs={})",
           name(role), name(partner), role_info(role).gemm, hadamard_size_text(recipe[role].had),
           hadamard_signs_text(recipe[role].had), hadamard_size_text(recipe[partner].had),
           hadamard_signs_text(recipe[partner].had));
  }
}

}  // namespace fp4jit
