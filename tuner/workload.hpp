// What `fp4jit tune` tunes: GEMM problems (op, M x N x K) and quantize problems (operand, source
// rows x cols), from explicit shapes, a shapes file or a model preset, without duplicates.
//
// A model preset lists its linear layers (in and out features of each distinct projection); with
// a token count, each layer gives its fprop, dgrad and wgrad GEMMs (core/gemm.hpp) and the six
// quantizations feeding them (x, xt from X [tokens, in]; w, wt from W [out, in]; dy, dyt from
// dY [tokens, out]). The output head and the embeddings stay out (FP4 recipes keep them in
// higher precision).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/gemm.hpp"

namespace fp4jit::tuner {

struct LinearLayer {
  std::string name;  // "q_proj, k_proj, v_proj, o_proj"
  std::int64_t in = 0, out = 0;
};

std::vector<std::string> model_names();  // "llama-7b", "llama-13b", "llama-70b", "tiny-llama"
// Throws Error(invalid_argument) naming the model and listing the known ones.
std::vector<LinearLayer> model_layers(const std::string& model);

struct GemmProblem {
  GemmOp op = GemmOp::fprop;
  GemmShape shape;
};
struct QuantizeProblem {
  Role role = Role::x;
  std::int64_t rows = 0, cols = 0;  // the source tensor
  bool pair = false;                // role (x, w or dy) and its transposed copy from one read
};
struct Workload {
  std::vector<GemmProblem> gemms;
  std::vector<QuantizeProblem> quantizes;
  void add(const GemmRequest& request);  // its GEMMs (and, for a layer, quantizations)
  void add_layer(std::int64_t tokens, std::int64_t in, std::int64_t out);
};

// One GEMM request per line as --gemm takes it ("MxNxK": a layer of that fprop shape, or
// "fprop:MxNxK"); blank lines and text after '#' are ignored. Throws Error(io) for an unreadable
// file and Error(invalid_argument) naming the file, line and text for a bad line.
std::vector<GemmRequest> read_shapes_file(const std::string& path);

}  // namespace fp4jit::tuner
