// fp4jit recipe list | show SPEC [--table]
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "core/recipe.hpp"

namespace fp4jit::cli {

namespace {

void run_list() {
  std::size_t width = 0;
  for (const Preset& p : presets()) width = std::max(width, p.name.size());
  for (const Preset& p : presets()) fmt::print("{:<{}}  {}\n", p.name, width, p.summary);
}

std::string switches(const OperandSpec& s) {
  std::string out;
  const auto add = [&](bool on, std::string_view what) {
    if (on) out += (out.empty() ? "" : ",") + std::string(what);
  };
  add(s.occ, "occ");
  add(s.dge, "dge");
  add(s.src == Source::requant, "src=requant");
  add(s.qema, "qema");
  return out.empty() ? "-" : out;
}

std::string hadamard_text(const HadamardSpec& h) {
  if (h.size == 0) return "-";
  if (h.signs == HadamardSpec::Signs::random)
    return fmt::format("{} random(seed={})", h.size, h.seed);
  if (h.signs == HadamardSpec::Signs::none) return fmt::format("{}", h.size);
  const std::string signs = hadamard_signs_text(h);  // one per entry: abbreviated past 16
  return fmt::format("{} {}", h.size, signs.size() > 16 ? signs.substr(0, 16) + "..." : signs);
}

std::string round_text(const OperandSpec& s) {
  if (s.round != Round::stochastic) return std::string(name(s.round));
  return fmt::format("stochastic/{}b", s.sr_bits);
}

void print_table(const Recipe& r) {
  fmt::print("recipe {} (sha256 {})\n", r.preset, recipe_hash(r));
  fmt::print("{:<4} {:<6} {:<5} {:<6} {:<10} {:<7} {:<14} {:<25} {}\n", "role", "gemm", "elem",
             "scale", "rule", "block", "round", "had", "occ/dge/src/qema");
  for (Role role : kAllRoles) {
    const OperandSpec& s = r[role];
    fmt::print("{:<4} {:<6} {:<5} {:<6} {:<10} {:<7} {:<14} {:<25} {}\n", name(role),
               role_info(role).gemm, name(s.elem), name(s.scale), name(s.rule), block_text(s.block),
               round_text(s), hadamard_text(s.had), switches(s));
  }
  fmt::print("recipe-wide: occ alpha {}, dge k {} clip {}, ue5m3 max {}, qema decay {} start {}\n",
             r.occ_alpha, r.dge_k, r.dge_clip, name_of(ue5m3_variant_names(), r.ue5m3),
             r.qema_decay, r.qema_start);
  for (Role role : kAllRoles) fmt::print("{:<4} = {}\n", name(role), role_info(role).description);
}

}  // namespace

void add_recipe_commands(CLI::App& app) {
  CLI::App* recipe = app.add_subcommand("recipe", "List the preset recipes or show one in full");
  recipe->require_subcommand(1);
  CLI::App* list = recipe->add_subcommand("list", "List the preset recipe names with a summary");
  list->callback(run_list);

  struct ShowOptions {
    std::string spec;
    bool table = false;
  };
  auto opts = std::make_shared<ShowOptions>();
  CLI::App* show = recipe->add_subcommand(
      "show",
      "Print a recipe's canonical form (every field, fixed order; what identifies the recipe) on "
      "one line, or a per-operand table");
  show->add_option("spec", opts->spec,
                   "Recipe text: a preset name, optionally with overrides, e.g. nvfp4, "
                   "mxfp4:round=even, msfp4:occ=0.97,dge.k=3, tetrajet:wt.block=1x16")
      ->required();
  show->add_flag("--table", opts->table,
                 "Print a readable table (role, gemm, elem, scale, rule, block, round, had, "
                 "occ/dge/src/qema) instead of the canonical line");
  show->callback([opts] {
    const Recipe r = parse_recipe(opts->spec);
    if (opts->table)
      print_table(r);
    else
      fmt::print("{}\n", canonical(r));
  });
}

}  // namespace fp4jit::cli
