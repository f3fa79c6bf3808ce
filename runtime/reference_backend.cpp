// The golden model behind the Engine interface (host memory).
#include "reference/reference.hpp"
#include "runtime/backend.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit {

namespace {

class ReferenceBackend final : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::reference; }
  std::string description() const override { return "reference: plain C++ golden model (host memory)"; }

  void quantize(const Recipe& recipe, Role role, const TensorView& in, const QuantizedView& out,
                const QuantizeArgs& args, void*) override {
    const reference::QuantizeOptions options{.seed = args.seed, .offset = args.offset};
    store_quantized(reference::quantize(recipe, role, to_matrix(in), options), out);
  }

  void dequantize(const Recipe& recipe, Role role, const QuantizedView& in, std::int64_t source_rows,
                  std::int64_t source_cols, const TensorView& out, void*) override {
    const QuantLayout layout = quant_layout(recipe, role, source_rows, source_cols);
    from_matrix(reference::dequantize_operand(recipe, load_quantized(recipe, role, layout, in)), out);
  }

  void dge(const Recipe& recipe, const TensorView& w, const TensorView& out, void*) override {
    from_matrix(reference::dge_factor(recipe, to_matrix(w)), out);
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace fp4jit
