// The golden model behind the Engine interface (host memory).
#include "reference/reference.hpp"
#include "runtime/backend.hpp"
#include "runtime/gemm_epilogue.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit {

namespace {

class ReferenceBackend final : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::reference; }
  std::string description() const override {
    return "reference: plain C++ golden model (host memory)";
  }

  void quantize(const Recipe& recipe, Role role, const TensorView& in, const QuantizedView& out,
                const QuantizeArgs& args, void*) override {
    const reference::QuantizeOptions options{.seed = args.seed, .offset = args.offset};
    store_quantized(reference::quantize(recipe, role, to_matrix(in), options), out);
  }

  void dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                  std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                  void*) override {
    const QuantLayout layout = quant_layout(recipe, role, source_rows, source_cols);
    from_matrix(reference::dequantize_operand(recipe, load_quantized(recipe, role, layout, in)),
                out);
  }

  void dge(const Recipe& recipe, const TensorView& w, const TensorView& out, void*) override {
    from_matrix(reference::dge_factor(recipe, to_matrix(w)), out);
  }

  // reference::gemm in double (exact products), the epilogue in double, one rounding to out.
  void gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a, const QuantizedView& b,
            const GemmShape& shape, const TensorView& out, const GemmEpilogue& epilogue,
            void*) override {
    const GemmLayouts l = gemm_layouts(recipe, op, shape);
    const GemmRoles roles = gemm_roles(op);
    QuantizedView av = a;
    const bool occ = epilogue.occ_weight.data != nullptr;
    if (!occ) av.residual_count = nullptr;  // the residual is only read for the compensation
    const QuantizedTensor qa = load_quantized(recipe, roles.a, l.a, av);
    const QuantizedTensor qb = load_quantized(recipe, roles.b, l.b, b);
    Matrix<float> weight;
    reference::GemmOptions options;
    if (occ) {
      weight = to_matrix(epilogue.occ_weight);
      options.residual_of = &qa;
      options.residual_weight = &weight;
    }
    const Matrix<double> c = reference::gemm(recipe, qa, qb, options);
    for (std::int64_t r = 0; r < c.rows; ++r) write_gemm_row(r, c.row(r), epilogue, out);
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() {
  return std::make_unique<ReferenceBackend>();
}

}  // namespace fp4jit
