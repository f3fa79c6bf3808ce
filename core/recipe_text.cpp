// Recipe text: "preset[:key=value,...]" parsing and the canonical form.
#include <charconv>
#include <mutex>
#include <string>
#include <vector>

#include "core/recipe.hpp"
#include "core/sha256.hpp"
#include "core/text.hpp"

namespace fp4jit {

namespace {

// Operand groups a key prefix may name, besides a single role.
struct Group {
  std::string_view name;
  std::vector<Role> roles;
};
const std::vector<Group>& groups() {
  static const std::vector<Group> kGroups{
      {"fprop", {Role::x, Role::w}},    {"dgrad", {Role::dy, Role::wt}},
      {"wgrad", {Role::dyt, Role::xt}}, {"act", {Role::x, Role::xt}},
      {"weight", {Role::w, Role::wt}},  {"grad", {Role::dy, Role::dyt}}};
  return kGroups;
}

constexpr std::string_view kOperandKeys =
    "elem, scale, rule, block, round, sr.bits, had, had.signs, had.seed, occ, dge, src, qema";
constexpr std::string_view kRecipeKeys =
    "occ (alpha), dge.k, dge.clip, ue5m3, qema.decay, qema.start";

[[noreturn]] void bad_value(std::string_view key, std::string_view value, std::string_view valid) {
  fail(ErrorKind::recipe, "recipe key '{}': invalid value '{}' (valid: {})", key, value, valid);
}

bool parse_switch(std::string_view key, std::string_view value) {
  if (value == "on") return true;
  if (value == "off") return false;
  bad_value(key, value, "on, off");
}

Block parse_block(std::string_view key, std::string_view value) {
  if (value == "row") return Block{Block::Kind::row, 0, 0};
  if (value == "col") return Block{Block::Kind::col, 0, 0};
  if (value == "tensor") return Block{Block::Kind::tensor, 0, 0};
  const auto x = value.find('x');
  int rows = 0, cols = 0;
  if (x == std::string_view::npos || !parse_number(value.substr(0, x), &rows) ||
      !parse_number(value.substr(x + 1), &cols) || rows < 1 || cols < 1)
    bad_value(key, value, "RxC (e.g. 1x32, 16x16, 32x1), row, col, tensor");
  return Block{Block::Kind::tile, rows, cols};
}

void set_hadamard_size(OperandSpec& s, std::string_view key, std::string_view value) {
  int size = 0;
  if (value != "none" &&
      (!parse_number(value, &size) || (size != 16 && size != 32 && size != 64 && size != 128)))
    bad_value(key, value, "none, 16, 32, 64, 128");
  // A sign vector written for another size no longer applies: it is dropped (had.signs may
  // follow to give a new one).
  if (size == 0 || (s.had.signs == HadamardSpec::Signs::given && size != s.had.size))
    s.had = HadamardSpec{};
  s.had.size = size;
}

void set_hadamard_signs(OperandSpec& s, std::string_view key, std::string_view value) {
  if (value == "none") {
    s.had.signs = HadamardSpec::Signs::none;
    s.had.mask = {};
    return;
  }
  if (value == "random") {
    s.had.signs = HadamardSpec::Signs::random;
    s.had.mask = {};
    return;
  }
  if (value.find_first_not_of("+-") != std::string_view::npos)
    bad_value(key, value, "none, random, or one '+'/'-' per entry");
  if (static_cast<int>(value.size()) != s.had.size)
    fail(ErrorKind::recipe, "recipe key '{}': {} signs given, had={} needs {} (set had first)", key,
         value.size(), s.had.size == 0 ? std::string("none") : std::to_string(s.had.size),
         s.had.size);
  s.had.signs = HadamardSpec::Signs::given;
  s.had.mask = {};
  for (std::size_t i = 0; i < value.size(); ++i)
    if (value[i] == '-') s.had.mask.w[i >> 5] |= 1u << (i & 31);
}

// Applies one per-operand key; returns false if the key is not a per-operand key.
bool set_operand_field(OperandSpec& s, std::string_view key, std::string_view field,
                       std::string_view value) {
  if (field == "elem") {
    s.elem = parse_named(elem_format_names(), value, fmt::format("value for '{}'", key),
                         ErrorKind::recipe);
  } else if (field == "scale") {
    s.scale = parse_named(scale_format_names(), value, fmt::format("value for '{}'", key),
                          ErrorKind::recipe);
  } else if (field == "rule") {
    s.rule = parse_named(scale_rule_names(), value, fmt::format("value for '{}'", key),
                         ErrorKind::recipe);
  } else if (field == "block") {
    s.block = parse_block(key, value);
  } else if (field == "round" || field == "rounding") {
    s.round =
        parse_named(round_names(), value, fmt::format("value for '{}'", key), ErrorKind::recipe);
  } else if (field == "sr.bits") {
    if (!parse_number(value, &s.sr_bits) || (s.sr_bits != 8 && s.sr_bits != 16))
      bad_value(key, value, "8, 16");
  } else if (field == "had") {
    set_hadamard_size(s, key, value);
  } else if (field == "had.signs") {
    set_hadamard_signs(s, key, value);
  } else if (field == "had.seed") {
    if (!parse_number(value, &s.had.seed)) bad_value(key, value, "an unsigned 64-bit integer");
  } else if (field == "occ") {
    s.occ = parse_switch(key, value);
  } else if (field == "dge") {
    s.dge = parse_switch(key, value);
  } else if (field == "src") {
    s.src =
        parse_named(source_names(), value, fmt::format("value for '{}'", key), ErrorKind::recipe);
  } else if (field == "qema") {
    s.qema = parse_switch(key, value);
  } else {
    return false;
  }
  return true;
}

// Applies a recipe-wide key; returns false if the key is not one.
bool set_recipe_field(Recipe& r, std::string_view key, std::string_view value) {
  if (key == "occ") {
    if (value == "on" || value == "off") return false;  // the per-operand switch, on every operand
    if (!parse_number(value, &r.occ_alpha) || !(r.occ_alpha > 0.5 && r.occ_alpha <= 1.0))
      bad_value(key, value, "a quantile in (0.5, 1], or on/off");
  } else if (key == "dge.k") {
    if (!parse_number(value, &r.dge_k) || !(r.dge_k > 0.0f))
      bad_value(key, value, "a positive number");
  } else if (key == "dge.clip") {
    if (!parse_number(value, &r.dge_clip) || !(r.dge_clip > 0.0f))
      bad_value(key, value, "a positive number");
  } else if (key == "ue5m3") {
    r.ue5m3 =
        parse_named(ue5m3_variant_names(), value, "value for 'ue5m3' (its max)", ErrorKind::recipe);
  } else if (key == "qema.decay") {
    if (!parse_number(value, &r.qema_decay) || !(r.qema_decay > 0.0f && r.qema_decay < 1.0f))
      bad_value(key, value, "a number in (0, 1)");
  } else if (key == "qema.start") {
    if (!parse_number(value, &r.qema_start) || r.qema_start < 0)
      bad_value(key, value, "a step >= 0");
  } else {
    return false;
  }
  return true;
}

// The roles a key prefix names ("x", "grad", ...), or none when the key has no role prefix.
std::vector<Role> prefix_roles(std::string_view prefix) {
  for (const auto& entry : role_names())
    if (entry.name == prefix) return {entry.value};
  for (const auto& g : groups())
    if (g.name == prefix) return g.roles;
  return {};
}

void apply(Recipe& r, std::string_view key, std::string_view value) {
  if (set_recipe_field(r, key, value)) return;
  const auto dot = key.find('.');
  std::vector<Role> roles;
  std::string_view field = key;
  if (dot != std::string_view::npos) {
    roles = prefix_roles(key.substr(0, dot));
    if (!roles.empty()) field = key.substr(dot + 1);
  }
  const bool scoped = !roles.empty();
  if (!scoped) roles.assign(kAllRoles.begin(), kAllRoles.end());
  for (Role role : roles) {
    if (!set_operand_field(r[role], key, field, value))
      fail(ErrorKind::recipe,
           "unknown recipe key '{}' (recipe-wide keys: {}; per-operand keys: {}, optionally "
           "prefixed by an operand x, w, dy, wt, dyt, xt or a group fprop, dgrad, wgrad, act, "
           "weight, grad, as in 'x.round=even')",
           key, kRecipeKeys, kOperandKeys);
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string preset_names() {
  std::string out;
  for (const auto& p : presets()) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

std::string switch_text(bool on) {
  return on ? "on" : "off";
}

void append_operand(std::string& out, const OperandSpec& s, std::string_view prefix) {
  out += fmt::format(
      "{0}elem={1},{0}scale={2},{0}rule={3},{0}block={4},{0}round={5},{0}sr.bits={6},"
      "{0}had={7},{0}had.signs={8},{0}had.seed={9},{0}occ={10},{0}dge={11},{0}src={12},"
      "{0}qema={13}",
      prefix, name(s.elem), name(s.scale), name(s.rule), block_text(s.block), name(s.round),
      s.sr_bits, hadamard_size_text(s.had), hadamard_signs_text(s.had),
      s.had.signs == HadamardSpec::Signs::random ? s.had.seed : 0, switch_text(s.occ),
      switch_text(s.dge), name_of(source_names(), s.src), switch_text(s.qema));
}

}  // namespace

std::string block_text(const Block& b) {
  switch (b.kind) {
    case Block::Kind::row:
      return "row";
    case Block::Kind::col:
      return "col";
    case Block::Kind::tensor:
      return "tensor";
    case Block::Kind::tile:
      return fmt::format("{}x{}", b.rows, b.cols);
  }
  return "?";
}

std::string hadamard_size_text(const HadamardSpec& h) {
  return h.size == 0 ? std::string("none") : std::to_string(h.size);
}

std::string hadamard_signs_text(const HadamardSpec& h) {
  switch (h.signs) {
    case HadamardSpec::Signs::none:
      return "none";
    case HadamardSpec::Signs::random:
      return "random";
    case HadamardSpec::Signs::given: {
      std::string out;
      for (int i = 0; i < h.size; ++i) out += nx::sign_negative(h.mask, i) ? '-' : '+';
      return out;
    }
  }
  return "?";
}

Recipe parse_recipe(std::string_view text) {
  text = trim(text);
  const auto colon = text.find(':');
  const std::string_view preset_name = trim(text.substr(0, colon));
  const Preset* preset = nullptr;
  for (const auto& p : presets())
    if (p.name == preset_name) preset = &p;
  if (preset == nullptr)
    fail(ErrorKind::recipe, "unknown recipe preset '{}' (valid: {})", preset_name, preset_names());
  Recipe recipe = preset->make();
  if (colon != std::string_view::npos) {
    for (const std::string_view raw : split(text.substr(colon + 1))) {
      const std::string_view item = trim(raw);
      if (item.empty()) continue;
      const auto eq = item.find('=');
      if (eq == std::string_view::npos)
        fail(ErrorKind::recipe, "recipe override '{}' is not of the form key=value", item);
      apply(recipe, trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
    }
  }
  validate(recipe);
  return recipe;
}

namespace {

// The canonical texts asked for lately: engines ask for the same few recipes on every call, and
// formatting them costs microseconds. Keyed by the whole recipe and its preset label (which
// operator== leaves out); role -1 is the whole recipe's text.
class CanonicalMemo {
 public:
  template <class Make>
  std::string get(const Recipe& r, int role, Make make) {
    {
      std::lock_guard lock(mutex_);
      for (const Entry& e : entries_)
        if (e.role == role && e.recipe == r && e.recipe.preset == r.preset) return e.text;
    }
    std::string text = make();
    std::lock_guard lock(mutex_);
    if (entries_.size() >= kMax) entries_.erase(entries_.begin());
    entries_.push_back(Entry{r, role, text});
    return text;
  }

 private:
  static constexpr std::size_t kMax = 64;
  struct Entry {
    Recipe recipe;
    int role;
    std::string text;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

CanonicalMemo& canonical_memo() {
  static CanonicalMemo m;
  return m;
}

std::string canonical_text(const Recipe& r) {
  std::string out = fmt::format(
      "{}:occ={},dge.k={},dge.clip={},ue5m3={},qema.decay={},qema.start={}", r.preset, r.occ_alpha,
      r.dge_k, r.dge_clip, name_of(ue5m3_variant_names(), r.ue5m3), r.qema_decay, r.qema_start);
  for (Role role : kAllRoles) {
    out += ',';
    append_operand(out, r[role], fmt::format("{}.", name(role)));
  }
  return out;
}

std::string canonical_text(const Recipe& r, Role role) {
  const OperandSpec& s = r[role];
  std::string out;
  append_operand(out, s, "");
  if (s.occ) out += fmt::format(",occ.alpha={}", r.occ_alpha);
  if (s.dge) out += fmt::format(",dge.k={},dge.clip={}", r.dge_k, r.dge_clip);
  if (s.scale == ScaleFormat::ue5m3)
    out += fmt::format(",ue5m3={}", name_of(ue5m3_variant_names(), r.ue5m3));
  if (s.qema) out += fmt::format(",qema.decay={},qema.start={}", r.qema_decay, r.qema_start);
  if (s.src == Source::requant) {
    out += ",from=(";
    append_operand(out, r[role_info(role).forward], "");
    out += ')';
  }
  return out;
}

}  // namespace

std::string canonical(const Recipe& r) {
  return canonical_memo().get(r, -1, [&] { return canonical_text(r); });
}

std::string canonical(const Recipe& r, Role role) {
  return canonical_memo().get(r, static_cast<int>(role), [&] { return canonical_text(r, role); });
}

std::string recipe_hash(const Recipe& recipe) {
  return sha256_hex(canonical(recipe));
}

}  // namespace fp4jit
