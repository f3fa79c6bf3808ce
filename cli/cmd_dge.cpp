// fp4jit dge --recipe SPEC --in W.npy --out F.npy
#include <memory>

#include "cli/backend_run.hpp"
#include "cli/commands.hpp"
#include "cli/npy.hpp"
#include "reference/reference.hpp"

namespace fp4jit::cli {

namespace {

struct DgeOptions {
  std::string recipe, in, out, backend = "auto", cache;
};

void run_dge(const DgeOptions& o) {
  const Recipe recipe = parse_recipe(o.recipe);
  const npy::FloatTensor w = npy::read_float_tensor(o.in);
  BackendRunner backend(o.backend, o.cache);
  Stopwatch clock;
  const Matrix<float> f = backend.dge(recipe, w.matrix);
  const double ms = clock.ms();
  npy::write_f32(o.out, w.shape, f.data);
  float lo = INFINITY, hi = -INFINITY;
  for (float v : f.data) lo = std::min(lo, v), hi = std::max(hi, v);
  fmt::print(
      "fp4jit dge: recipe {} (k {}, clip {}): {} {} -> {} float32, factor range [{:.6g}, "
      "{:.6g}], {:.1f} ms on {}\n",
      recipe.preset, recipe.dge_k, recipe.dge_clip, o.in, shape_text(w.shape), o.out, lo, hi, ms,
      backend.name());
}

}  // namespace

void add_dge_command(CLI::App& app) {
  auto o = std::make_shared<DgeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "dge",
      "Write the differentiable gradient estimator's factor f'(W * sf) for a weight tensor W "
      "[out, in] (recipes whose weight operand has dge=on, e.g. msfp4); wgrad is multiplied by it "
      "elementwise");
  cmd->add_option("--recipe,-r", o->recipe, "Recipe text, e.g. msfp4 or msfp4:dge.k=3")->required();
  cmd->add_option("--in,-i", o->in, "Weight tensor W (.npy, float32/float16/bfloat16)")->required();
  cmd->add_option("--out", o->out, "Output .npy (float32, same shape as W)")->required();
  cmd->add_option("--backend", o->backend, "cuda, host, reference or auto")
      ->check(one_of("backend", backend_option_names()))
      ->capture_default_str();
  add_cache_option(cmd, &o->cache);
  cmd->callback([o] { run_dge(*o); });
}

}  // namespace fp4jit::cli
