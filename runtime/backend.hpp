// The interface every backend implements behind Engine (include/fp4jit/engine.hpp). Arguments
// are validated by Engine before they reach a backend (shapes against the recipe's layout,
// non-null buffers); backends check what only they can (alignment, device pointers).
#pragma once
#include <memory>
#include <string>

#include "fp4jit/engine.hpp"

namespace fp4jit {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual std::string description() const = 0;

  virtual void quantize(const Recipe& recipe, Role role, const TensorView& in,
                        const QuantizedView& out, const QuantizeArgs& args, void* stream) = 0;
  // Whether quantize and quantize_pair compute QuantizeArgs::column_sums themselves; where not,
  // Engine computes them on the host (host-memory backends) and passes null.
  virtual bool computes_column_sums() const { return false; }
  // Whether the backend reads QuantizeArgs::seed_step itself (when its work runs); if not,
  // Engine resolves the seed at the call.
  virtual bool reads_seed_step() const { return false; }
  // Default: two quantize() calls; backends override with a one-read kernel.
  virtual void quantize_pair(const Recipe& recipe, Role role, const TensorView& in,
                             const QuantizedView& out, const QuantizedView& out_transposed,
                             const QuantizeArgs& args, void* stream);
  virtual void dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                          std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                          void* stream) = 0;
  virtual void dge(const Recipe& recipe, const TensorView& w, const TensorView& out,
                   void* stream) = 0;
  // Engine::gemm, arguments checked (layouts, shapes, dtypes, epilogue buffers).
  virtual void gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a, const QuantizedView& b,
                    const GemmShape& shape, const TensorView& out, const GemmEpilogue& epilogue,
                    void* stream) = 0;
  // The kernel config a gemm() call of these arguments runs and where it comes from, as text,
  // e.g. "sg=1,bn=192,ps=4,rg=8m,pp=4,ts=1,sk=1 (heuristic)"; empty where the backend has no
  // choice to make. Throws what gemm() would for a combination the backend has no kernel for.
  virtual std::string gemm_kernel(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                                  DType out);
  // `bytes` of the backend's memory, 256-byte aligned, for work enqueued on `stream` while the
  // handle lives; released when it goes (after that work, in stream order). Default: host memory
  // (backends whose calls finish their work before they return).
  virtual std::shared_ptr<void> scratch(std::int64_t bytes, void* stream);
};

std::unique_ptr<Backend> make_reference_backend();
// Throw Error(unsupported) when fp4jit was built without that backend; the CUDA one throws
// Error(no_gpu) where no driver or device is present.
std::unique_ptr<Backend> make_host_backend(const EngineOptions& options);
std::unique_ptr<Backend> make_cuda_backend(const EngineOptions& options);
// True when libcuda.so.1 loads and reports at least one device (never throws).
bool cuda_available();

}  // namespace fp4jit
