// fp4jit quantize --recipe SPEC [--operand R] [--backend auto|cuda|host|reference] --in X.npy --out
// DIR
#include <memory>

#include "cli/backend_run.hpp"
#include "cli/commands.hpp"
#include "cli/npy.hpp"
#include "cli/stored.hpp"
#include "cli/summary.hpp"
#include "reference/reference.hpp"

namespace fp4jit::cli {

namespace {

struct QuantizeOptions {
  std::string recipe, operand = "x", backend = "auto", cache, in, out;
  std::uint64_t seed = 0, offset = 0;
  bool quiet = false;
};

std::string percent(std::int64_t part, std::int64_t whole) {
  return fmt::format("{:.2f}%", whole > 0 ? 100.0 * part / whole : 0.0);
}

std::string hadamard_line(const HadamardSpec& h) {
  if (h.size == 0) return "none";
  return fmt::format(
      "{}-point along K, signs {}{}", h.size, hadamard_signs_text(h),
      h.signs == HadamardSpec::Signs::random ? fmt::format(" (seed {})", h.seed) : "");
}

struct Timings {
  double read_ms = 0, quantize_ms = 0, write_ms = 0, check_ms = 0;
};

void print_report(const QuantizeOptions& o, const std::string& backend, const StoredOperand& st,
                  const npy::FloatTensor& in, const ErrorStats& err, const Timings& t,
                  const std::vector<std::filesystem::path>& written) {
  const Recipe& r = st.recipe;
  const QuantizedTensor& q = st.q;
  const OperandSpec& s = r[q.role];
  const QuantLayout& l = q.layout;
  const RoleInfo& info = role_info(q.role);
  const CodeStats codes = code_stats(r, q);
  const ScaleRange range = scale_range(r, q);
  const std::int64_t bytes_in = in.matrix.size() * dtype_size(in.dtype);
  const std::int64_t bytes_out = stored_bytes(q);
  fmt::print("fp4jit quantize: recipe {} (sha256 {})\n", r.preset, recipe_hash(r).substr(0, 16));
  fmt::print("  backend    {}\n", backend);
  fmt::print("  input      {}: {} {} -> matrix [{}, {}]\n", o.in, name(in.dtype),
             shape_text(in.shape), in.matrix.rows, in.matrix.cols);
  fmt::print("  operand    {} ({} GEMM): {}; [{}, {}] K-major{}\n", name(q.role), info.gemm,
             info.description, l.rows, l.cols, info.transposed ? ", transposed" : "");
  fmt::print("  values     {}{}\n", name_of(source_names(), s.src),
             s.src == Source::requant ? " (re-quantized from the dequantized fprop copy)" : "");
  fmt::print(
      "  elements   {}, {} -> codes [{}, {}] uint8\n", name(s.elem),
      s.elem == ElemFormat::e2m1 ? "two per byte (element 2i in the low nibble)" : "one per byte",
      l.rows, l.row_bytes);
  fmt::print("  scales     {} ({}), block {}: {} blocks -> [{}, {}] {}, range [{:.6g}, {:.6g}]{}\n",
             name(s.scale), name(s.rule), block_text(s.block), l.scale_count(), l.scale_rows,
             l.scale_cols, l.scale_is_code ? "uint8" : "float32", range.min, range.max,
             range.nonfinite ? fmt::format(", {} NaN (non-finite blocks)", range.nonfinite) : "");
  if (l.two_level)
    fmt::print("  tensor     s_enc {:.9g} from amax {:.9g}\n", q.tensor_scale, q.amax);
  fmt::print("  rounding   {}{}\n", name(s.round),
             s.round == Round::stochastic
                 ? fmt::format(" ({} bits, seed {}, offset {})", s.sr_bits, q.seed, q.offset)
                 : "");
  fmt::print("  hadamard   {}\n", hadamard_line(s.had));
  if (s.occ)
    fmt::print("  occ        alpha {}: {} residual values ({} of the elements)\n", r.occ_alpha,
               q.residual_index.size(), percent(q.residual_index.size(), codes.elements));
  fmt::print("  codes      {} zero ({}), {} saturated ({}) of {}\n", codes.zero,
             percent(codes.zero, codes.elements), codes.saturated,
             percent(codes.saturated, codes.elements), codes.elements);
  fmt::print("  bytes      {} in ({}) -> {} out ({}), ratio {:.2f}x\n", bytes_in,
             bytes_text(bytes_in), bytes_out, bytes_text(bytes_out),
             double(bytes_in) / double(bytes_out));
  fmt::print("  error      relative Frobenius error {:.6g} (dequantized vs input{}{})\n",
             err.relative, s.occ ? ", residual added" : "",
             err.skipped ? fmt::format("; {} non-finite positions skipped", err.skipped) : "");
  fmt::print("  time       read {:.1f} ms, quantize {:.1f} ms, write {:.1f} ms, check {:.1f} ms\n",
             t.read_ms, t.quantize_ms, t.write_ms, t.check_ms);
  std::string files;
  for (const auto& f : written) files += (files.empty() ? "" : ", ") + f.filename().string();
  fmt::print("  wrote      {}/: {}\n", o.out, files);
}

void run_quantize(const QuantizeOptions& o) {
  const Recipe recipe = parse_recipe(o.recipe);
  const Role role = parse_named(role_names(), o.operand, "operand");
  Timings t;
  Stopwatch clock;
  const npy::FloatTensor in = npy::read_float_tensor(o.in);
  t.read_ms = clock.ms();
  BackendRunner backend(o.backend, o.cache);
  StoredOperand st;
  st.recipe = recipe;
  st.source = {o.in, in.shape, in.dtype, in.matrix.rows, in.matrix.cols};
  Stopwatch quantize_clock;  // includes kernel generation and compilation on a cold cache
  st.q = backend.quantize(recipe, role, in.matrix, in.dtype, o.seed, o.offset);
  t.quantize_ms = quantize_clock.ms();
  Stopwatch write_clock;
  const auto written = save_quantized(o.out, st);
  t.write_ms = write_clock.ms();
  Stopwatch check_clock;
  const ErrorStats err =
      relative_error(reference::dequantize_source(recipe, st.q, /*add_residual=*/true), in.matrix);
  t.check_ms = check_clock.ms();
  if (!o.quiet) print_report(o, backend.description(), st, in, err, t, written);
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Quantize one operand of a recipe from an .npy tensor into a directory of .npy files "
      "(codes, scales, tensor scale, OCC residual) described by layout.json, and report what was "
      "done");
  cmd->add_option("--recipe,-r", o->recipe,
                  "Recipe text: preset[:key=value,...], e.g. nvfp4, mxfp4:round=even "
                  "(see 'fp4jit recipe list')")
      ->required();
  std::vector<std::string> roles;
  for (const auto& entry : role_names()) roles.emplace_back(entry.name);
  cmd->add_option("--operand", o->operand,
                  "Which operand: x, w, dy quantize the input as given (X, W, dY); wt, dyt, xt "
                  "are the transposed copies W^T, dY^T, X^T (the input is still W, dY or X)")
      ->check(one_of("operand", roles))
      ->capture_default_str();
  cmd->add_option("--backend", o->backend,
                  "Backend that quantizes: cuda (GPU kernels, NVRTC), host (CPU kernels, LLVM), "
                  "reference (the plain C++ golden model), auto (cuda where a GPU is present, "
                  "else host); every backend writes the same files")
      ->check(one_of("backend", backend_option_names()))
      ->capture_default_str();
  add_cache_option(cmd, &o->cache);
  cmd->add_option("--in,-i", o->in, "Input tensor (.npy: float32, float16 or bfloat16)")
      ->required();
  cmd->add_option("--out", o->out,
                  "Output directory (created if missing; only fp4jit's own file names in it are "
                  "replaced)")
      ->required();
  cmd->add_option("--seed", o->seed, "Seed of the stochastic-rounding random bits")
      ->capture_default_str();
  cmd->add_option("--offset", o->offset,
                  "Counter offset: element i draws the random bits of index offset + i")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", o->quiet, "Print nothing on success");
  cmd->callback([o] { run_quantize(*o); });
}

}  // namespace fp4jit::cli
