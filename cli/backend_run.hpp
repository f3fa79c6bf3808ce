// The CLI's bridge to Engine: runs quantize, dequantize and DGE on any backend with host data in
// and out (uploading to and downloading from the GPU for the CUDA backend), so every command
// writes the same files whichever backend computed them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/matrix.hpp"
#include "core/quantized.hpp"
#include "fp4jit/engine.hpp"

namespace fp4jit::cli {

// "auto", "cuda", "host", "reference".
std::vector<std::string> backend_option_names();

class BackendRunner {
 public:
  // Throws Error(no_gpu) for cuda where there is none, Error(unsupported) for a backend this
  // build lacks; "auto" takes CUDA, else host, else the reference.
  explicit BackendRunner(const std::string& backend, const std::string& cache_path = {});
  ~BackendRunner();

  BackendKind kind() const;
  std::string name() const;         // "cuda", "host", "reference"
  std::string description() const;  // Engine::description()

  // `in` holds values of type `dtype` (widened exactly to float); the backend receives them in
  // that dtype, so it runs the kernel a caller with such data would run.
  QuantizedTensor quantize(const Recipe& recipe, Role role, const Matrix<float>& in, DType dtype,
                           std::uint64_t seed, std::uint64_t offset);
  // The operand's values in its own layout and domain ([layout.rows, layout.cols]).
  Matrix<double> dequantize_operand(const Recipe& recipe, const QuantizedTensor& q);
  Matrix<float> dge(const Recipe& recipe, const Matrix<float>& w);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fp4jit::cli
