// Engine: picks a backend and checks every call's arguments against the recipe's layout before
// the backend sees them.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <new>

#include "core/log.hpp"
#include "numerics/philox.cuh"
#include "reference/reference.hpp"
#include "runtime/backend.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit {

namespace {

constexpr std::array<Named<BackendKind>, 4> kBackendNames{{{BackendKind::automatic, "auto"},
                                                           {BackendKind::cuda, "cuda"},
                                                           {BackendKind::host, "host"},
                                                           {BackendKind::reference, "reference"}}};

std::unique_ptr<Backend> make_backend(const EngineOptions& options) {
  switch (options.backend) {
    case BackendKind::reference:
      return make_reference_backend();
    case BackendKind::host:
      return make_host_backend(options);
    case BackendKind::cuda:
      return make_cuda_backend(options);
    case BackendKind::automatic:
      break;
  }
  if (cuda_available()) {
    try {
      return make_cuda_backend(options);
    } catch (const Error& e) {
      warn("CUDA backend unavailable ({}); using the host backend", e.what());
    }
  }
  try {
    return make_host_backend(options);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unsupported) throw;
    warn("{}; using the reference backend", e.what());
    return make_reference_backend();
  }
}

void check_tensor(const TensorView& t, std::string_view what, std::int64_t rows,
                  std::int64_t cols) {
  if (t.data == nullptr) fail(ErrorKind::invalid_argument, "{}: null data pointer", what);
  if (t.rows != rows || t.cols != cols)
    fail(ErrorKind::invalid_argument, "{}: expected a [{}, {}] tensor, got [{}, {}]", what, rows,
         cols, t.rows, t.cols);
  if (t.row_stride != 0 && t.row_stride < t.cols)
    fail(ErrorKind::invalid_argument, "{}: row stride {} is smaller than its {} columns", what,
         t.row_stride, t.cols);
}

void check_column_sums(const QuantizeArgs& args, std::string_view what) {
  if (args.column_sums == nullptr) return;
  const DType d = args.column_sums_dtype;
  if (d != DType::f32 && d != DType::bf16 && d != DType::f16)
    fail(ErrorKind::invalid_argument,
         "{}: column sums must be float32, bfloat16 or float16 (got {})", what, name(d));
}

// The column sums computed here, for backends that leave them to Engine (their memory is the
// host's); the arguments the backend then gets.
QuantizeArgs host_column_sums(const Backend& backend, const TensorView& in,
                              const QuantizeArgs& args) {
  if (args.column_sums == nullptr || backend.computes_column_sums()) return args;
  const std::vector<float> sums = reference::column_sums(to_matrix(in));
  Matrix<float> row(1, in.cols);
  row.data = sums;
  from_matrix(row, TensorView{args.column_sums, args.column_sums_dtype, 1, in.cols, 0});
  QuantizeArgs rest = args;
  rest.column_sums = nullptr;
  return rest;
}

// The seed of a stepped call resolved here, for backends that leave it to Engine (their memory
// is the host's: the step is read now, when their work runs).
QuantizeArgs host_seed_step(const Backend& backend, QuantizeArgs args) {
  if (args.seed_step == nullptr || backend.reads_seed_step()) return args;
  args.seed = nx::mix_seed(args.seed, *args.seed_step);
  args.seed_step = nullptr;
  return args;
}

void check_quantized(const Recipe& recipe, Role role, const QuantLayout& l, const QuantizedView& q,
                     std::string_view what) {
  if (q.codes == nullptr || q.scales == nullptr)
    fail(ErrorKind::invalid_argument, "{} (operand {}): codes and scales are required", what,
         name(role));
  if (l.two_level && q.tensor_scale == nullptr)
    fail(ErrorKind::invalid_argument, "{} (operand {}): two-level recipe: tensor_scale is required",
         what, name(role));
  if (recipe[role].occ &&
      (q.residual_count == nullptr ||
       (q.residual_capacity > 0 && (q.residual_index == nullptr || q.residual_value == nullptr))))
    fail(ErrorKind::invalid_argument,
         "{} (operand {}): OCC operand: residual_count (and index/value buffers for its capacity) "
         "are required",
         what, name(role));
}

}  // namespace

std::span<const Named<BackendKind>> backend_names() {
  return kBackendNames;
}

void Backend::quantize_pair(const Recipe& recipe, Role role, const TensorView& in,
                            const QuantizedView& out, const QuantizedView& out_transposed,
                            const QuantizeArgs& args, void* stream) {
  quantize(recipe, role, in, out, args, stream);
  QuantizeArgs second = args;
  second.column_sums = nullptr;  // once is enough
  quantize(recipe, transposed_copy(role), in, out_transposed, second, stream);
}

std::string Backend::gemm_kernel(const Recipe& /*recipe*/, GemmOp /*op*/,
                                 const GemmShape& /*shape*/, DType /*out*/) {
  return {};
}

std::shared_ptr<void> Backend::scratch(std::int64_t bytes, void* /*stream*/) {
  constexpr std::size_t kAlign = 256;
  const std::size_t n =
      (static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, n);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(p, std::free);
}

Engine::Engine(const EngineOptions& options) : backend_(make_backend(options)) {}
Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

BackendKind Engine::backend() const {
  return backend_->kind();
}
std::string Engine::description() const {
  return backend_->description();
}

QuantLayout Engine::layout(const Recipe& recipe, Role role, std::int64_t rows,
                           std::int64_t cols) const {
  return quant_layout(recipe, role, rows, cols);
}

void Engine::quantize(const Recipe& recipe, Role role, const TensorView& in,
                      const QuantizedView& out, const QuantizeArgs& args, void* stream) {
  const QuantLayout l = quant_layout(recipe, role, in.rows, in.cols);
  check_tensor(in, "quantize input", in.rows, in.cols);
  check_quantized(recipe, role, l, out, "quantize output");
  check_column_sums(args, "quantize");
  backend_->quantize(recipe, role, in, out,
                     host_seed_step(*backend_, host_column_sums(*backend_, in, args)), stream);
}

void Engine::quantize_pair(const Recipe& recipe, Role role, const TensorView& in,
                           const QuantizedView& out, const QuantizedView& out_transposed,
                           const QuantizeArgs& args, void* stream) {
  if (role != Role::x && role != Role::w && role != Role::dy)
    fail(ErrorKind::invalid_argument, "quantize_pair: role must be x, w or dy (got {})",
         name(role));
  const Role partner = transposed_copy(role);
  check_tensor(in, "quantize input", in.rows, in.cols);
  check_quantized(recipe, role, quant_layout(recipe, role, in.rows, in.cols), out,
                  "quantize output");
  check_quantized(recipe, partner, quant_layout(recipe, partner, in.rows, in.cols), out_transposed,
                  "quantize transposed output");
  check_column_sums(args, "quantize_pair");
  backend_->quantize_pair(recipe, role, in, out, out_transposed,
                          host_seed_step(*backend_, host_column_sums(*backend_, in, args)), stream);
}

void Engine::dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                        std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                        void* stream) {
  const QuantLayout l = quant_layout(recipe, role, source_rows, source_cols);
  check_quantized(recipe, role, l, in, "dequantize input");
  check_tensor(out, "dequantize output", l.rows, l.cols);
  backend_->dequantize(recipe, role, in, source_rows, source_cols, out, stream);
}

void Engine::dge(const Recipe& recipe, const TensorView& w, const TensorView& out, void* stream) {
  if (!recipe[Role::w].dge)
    fail(ErrorKind::invalid_argument, "dge: recipe '{}' has dge=off for the weight operand w",
         recipe.preset);
  quant_layout(recipe, Role::w, w.rows, w.cols);
  check_tensor(w, "dge input", w.rows, w.cols);
  check_tensor(out, "dge output", w.rows, w.cols);
  backend_->dge(recipe, w, out, stream);
}

}  // namespace fp4jit
