// fp4jit dequantize --in DIR --out Y.npy [--dtype D] [--operand-layout] [--no-residual] [--backend
// B]
//                   [--compare X.npy]
#include <memory>

#include "cli/backend_run.hpp"
#include "cli/commands.hpp"
#include "cli/npy.hpp"
#include "cli/stored.hpp"
#include "cli/summary.hpp"
#include "reference/reference.hpp"

namespace fp4jit::cli {

namespace {

struct DequantizeOptions {
  std::string in, out, dtype = "float32", compare, backend = "auto", cache;
  bool operand_layout = false, no_residual = false, quiet = false;
};

void compare_with(const std::string& path, const Matrix<double>& y) {
  const npy::FloatTensor x = npy::read_float_tensor(path);
  if (x.matrix.rows != y.rows || x.matrix.cols != y.cols)
    fail(ErrorKind::invalid_argument,
         "--compare {}: shape {} ([{}, {}]) differs from the output [{}, {}]", path,
         shape_text(x.shape), x.matrix.rows, x.matrix.cols, y.rows, y.cols);
  const ErrorStats err = relative_error(y, x.matrix);
  fmt::print("  compare    relative Frobenius error {:.6g} vs {}{}\n", err.relative, path,
             err.skipped ? fmt::format(" ({} non-finite positions skipped)", err.skipped) : "");
}

void run_dequantize(const DequantizeOptions& o) {
  const DType dtype = parse_dtype(o.dtype);
  Stopwatch clock;
  const StoredOperand st = load_quantized(o.in);
  const OperandSpec& s = st.recipe[st.q.role];
  BackendRunner backend(o.backend, o.cache);
  Matrix<double> y = backend.kind() == BackendKind::reference
                         ? reference::dequantize_operand(st.recipe, st.q)
                         : backend.dequantize_operand(st.recipe, st.q);
  std::vector<std::int64_t> shape;
  if (o.operand_layout) {
    shape = {y.rows, y.cols};
  } else {
    y = reference::operand_to_source(st.recipe, st.q, std::move(y), !o.no_residual);
    shape = st.source.shape;
    if (y.rows * y.cols != static_cast<std::int64_t>(y.data.size()))
      fail(ErrorKind::internal, "dequantize: inconsistent output size");
  }
  npy::write_values(o.out, shape, y.data, dtype);
  if (o.quiet) return;
  const char* domain = o.operand_layout
                           ? "operand layout (K-major, transformed domain, no residual)"
                           : "source layout";
  fmt::print("fp4jit dequantize: {} ({} operand {} of recipe {})\n", o.in,
             role_info(st.q.role).gemm, name(st.q.role), st.recipe.preset);
  fmt::print("  output     {}: {} {}, {}\n", o.out, name(dtype), shape_text(shape), domain);
  fmt::print("  backend    {}\n", backend.description());
  if (!o.operand_layout)
    fmt::print(
        "  undone     {}{}{}\n", role_info(st.q.role).transposed ? "transpose, " : "",
        s.had.size ? "Hadamard transform, " : "",
        s.occ ? (o.no_residual ? "OCC residual NOT added" : "OCC residual added") : "no residual");
  if (!o.compare.empty()) compare_with(o.compare, y);
  fmt::print("  time       {:.1f} ms\n", clock.ms());
}

}  // namespace

void add_dequantize_command(CLI::App& app) {
  auto o = std::make_shared<DequantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "dequantize",
      "Read a directory written by 'fp4jit quantize' and write the dequantized tensor: by default "
      "in the source tensor's layout and shape (transposed back, Hadamard undone, OCC residual "
      "added)");
  cmd->add_option("--in,-i", o->in, "Directory written by fp4jit quantize")->required();
  cmd->add_option("--out", o->out, "Output .npy file")->required();
  cmd->add_option("--dtype", o->dtype,
                  "Output dtype; each value is rounded once to nearest even (bfloat16 is written "
                  "as '<V2', as np.save writes ml_dtypes.bfloat16)")
      ->check(one_of("dtype", dtype_option_names()))
      ->capture_default_str();
  cmd->add_flag(
      "--operand-layout", o->operand_layout,
      "Write the operand as the GEMM consumes it: [rows, K] K-major, in the transformed "
      "(Hadamard) domain, without the OCC residual: decode(code) * decode(scale) [/ s_enc]");
  cmd->add_flag("--no-residual", o->no_residual, "Do not add the OCC residual back");
  cmd->add_option("--backend", o->backend,
                  "Backend that decodes the operand: cuda, host, reference or auto (undoing the "
                  "transpose, Hadamard and residual is done on the host)")
      ->check(one_of("backend", backend_option_names()))
      ->capture_default_str();
  add_cache_option(cmd, &o->cache);
  cmd->add_option("--compare", o->compare,
                  "Also print the relative Frobenius error of the output against this .npy tensor");
  cmd->add_flag("--quiet,-q", o->quiet, "Print nothing on success");
  cmd->callback([o] { run_dequantize(*o); });
}

}  // namespace fp4jit::cli
