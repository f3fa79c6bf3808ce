// fp4jit's public C++ entry point. An Engine quantizes, dequantizes and multiplies tensors with a
// recipe on one backend:
//   cuda       kernels generated per (op, problem, recipe, config, target), compiled with NVRTC,
//              cached in SQLite, launched through the CUDA Driver API on the caller's stream;
//              tensors are device pointers.
//   host       the same ops generated as LLVM IR and compiled with ORC for this CPU; host pointers.
//   reference  the plain C++ golden model (slow; for checking); host pointers.
//   auto       cuda where a GPU and driver are present, else host.
// Every backend writes the same bytes for the same inputs (see core/quantized.hpp for the layout);
// GEMMs agree with the reference's double-precision product to FP32 accuracy.
// CUDA GEMM targets: sm_90a (Hopper, FP4 expanded on chip onto FP8 / FP16 tensor cores: tested on
// H100/H200) and sm_100a (Blackwell, native block-scaled FP4 through tcgen05: compiled and
// inspected, but NOT YET RUN on hardware; it launches on sm_100 devices untested).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/gemm.hpp"
#include "core/quantized.hpp"
#include "core/recipe.hpp"

namespace fp4jit {

enum class BackendKind : std::uint8_t { automatic, cuda, host, reference };
std::span<const Named<BackendKind>> backend_names();  // "auto", "cuda", "host", "reference"

// An unquantized 2-D tensor, row-major with a row stride (in elements), in the backend's memory.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_stride = 0;  // 0: cols (contiguous)
};

// Where a quantized operand lives, in the backend's memory; sizes from Engine::layout().
struct QuantizedView {
  std::uint8_t* codes = nullptr;  // layout.rows x layout.row_bytes, contiguous
  void* scales = nullptr;         // layout.scale_count(): uint8 codes or float32
  float* tensor_scale = nullptr;  // 1 float: s_enc (two-level operands), written by quantize
  float* amax = nullptr;          // 1 float: the operand's largest finite |value| (optional)
  std::int64_t* residual_index = nullptr;  // OCC operands: up to residual_capacity entries
  float* residual_value = nullptr;
  std::int64_t* residual_count = nullptr;  // 1 value, written by quantize
  std::int64_t residual_capacity = 0;
};

struct QuantizeArgs {
  std::uint64_t seed = 0;    // stochastic rounding
  std::uint64_t offset = 0;  // element i draws the random bits of index offset + i
  // Delayed scaling of two-level operands (nvfp4, ue5m3): the global amax to derive s_enc from
  // (1 float, finite, >= 0, in the backend's memory), e.g. the previous step's amax output;
  // amax_transposed for the transposed copy of quantize_pair. Null: the input's own amax (the
  // CUDA backend then reads the input twice). Given, the CUDA backend quantizes in one pass, and
  // `amax` outputs still receive the input's own amax; the other backends ignore it (equal
  // results when it equals the input's amax).
  const float* amax = nullptr;
  const float* amax_transposed = nullptr;
  // The source's column sums over its rows, e.g. a bias gradient from dY: [cols] of
  // column_sums_dtype (float32, bfloat16 or float16) in the backend's memory, or null. FP32
  // additions in one fixed order (templates/quantize/column_sums.cuh), rounded once to the dtype:
  // every backend and kernel config gives the same bits. The CUDA backend takes them from the
  // quantize kernel's own read of the source where it can (quantize_pair without OCC), else in a
  // pass of their own.
  void* column_sums = nullptr;
  DType column_sums_dtype = DType::f32;
  // A step counter for stochastic rounding (1 uint64 in the backend's memory), or null: when
  // given, the seed used is mix_seed(seed, *seed_step) (templates/numerics/philox.cuh, one
  // splitmix64 round), with the step read when the work runs. The CUDA kernels read it on the
  // device, so the calls of a CUDA graph whose replays advance the step draw new bits each replay
  // (a seed by value is the capture's); the host and reference backends read it at the call.
  const std::uint64_t* seed_step = nullptr;
};

// Epilogue of Engine::gemm: out = alpha * (deq(A) deq(B)^T [+ R W^T]) [+ bias] [+ beta * c].
struct GemmEpilogue {
  float alpha = 1.0f;
  float beta = 0.0f;  // beta != 0 needs c
  TensorView c{};     // [M, N] in the output's dtype; may be the output itself (accumulation)
  const void* bias = nullptr;     // [N] of bias_dtype (float32, bfloat16 or float16), or null
  DType bias_dtype = DType::f32;  // added in FP32
  // OCC compensation, for recipes whose A operand has occ=on (msfp4 fprop): R is A's sparse
  // residual (the residual_* buffers of the A view) and W the weight in high precision, [N, K]
  // (float32, bfloat16 or float16). data == nullptr: no compensation.
  TensorView occ_weight{};
};

// A linear layer Y = X W^T [+ bias], X [tokens, in], W [out, in], whose training step runs as
// one call forward and one backward (Engine::linear_forward / linear_backward): what a framework
// layer does with quantize_pair and gemm, without a call per operand.
struct LinearShape {
  std::int64_t tokens = 0, in = 0, out = 0;
};
// Bytes of the caller-provided buffers (backend memory, 256-byte aligned) of a linear step:
//   saved      X^T and W^T quantized by the forward, read by the backward (kept between them);
//   forward    X and W quantized for fprop (free once the forward's work is done);
//   backward   dY and dY^T quantized (free once the backward's work is done).
// A null scratch buffer is taken from the backend for the call (the CUDA backend: its workspace
// pool, stream-ordered, kept mapped across calls as the GEMMs' scratch is).
struct LinearBuffers {
  std::int64_t saved_bytes = 0, forward_scratch_bytes = 0, backward_scratch_bytes = 0;
  // With W's copies in a LinearWeights buffer instead: that buffer's bytes (W and W^T quantized),
  // and the bytes of `saved` then (X^T only, the first saved_x_bytes of the layout above).
  std::int64_t weight_bytes = 0, saved_x_bytes = 0;
};

// W's two quantized copies (fprop's W, dgrad's W^T) kept by the caller across linear steps: the
// micro-batches of one optimizer step, whose W does not change, quantize it once. `data`: a buffer
// of LinearBuffers::weight_bytes in the backend's memory, 256-byte aligned, that the backward of
// every forward that used it reads as well (linear_backward's `weights`).
struct LinearWeights {
  void* data = nullptr;  // null: each forward quantizes W into its scratch and saved buffers
  // true: this forward quantizes W into `data` (both copies, whether or not a backward follows),
  // with seed_w; false: `data` holds them from an earlier forward of the same W (not read now;
  // its view gives the shape), which the caller vouches has not changed since.
  bool quantize = true;
};

struct EngineOptions {
  BackendKind backend = BackendKind::automatic;
  int device = 0;          // CUDA device ordinal
  std::string cache_path;  // empty: $FP4JIT_CACHE, else $XDG_CACHE_HOME/fp4jit/cache.db
  bool use_cache = true;
};

class Backend;

class Engine {
 public:
  explicit Engine(const EngineOptions& options = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  BackendKind backend() const;
  std::string description() const;  // e.g. "cuda: NVIDIA H100 80GB HBM3 (sm_90a), NVRTC 13.0"

  // Layout of `role`'s operand quantized from a [rows, cols] tensor; throws on a bad shape.
  QuantLayout layout(const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols) const;

  // Quantizes the operand `role` from `in` (given in the role's source layout, see Role).
  void quantize(const Recipe& recipe, Role role, const TensorView& in, const QuantizedView& out,
                const QuantizeArgs& args = {}, void* stream = nullptr);
  // Both copies of a tensor from one read: the row-wise operand `role` (x, w or dy) and its
  // transposed partner (xt, wt or dyt), e.g. X for fprop and X^T for wgrad.
  void quantize_pair(const Recipe& recipe, Role role, const TensorView& in,
                     const QuantizedView& out, const QuantizedView& out_transposed,
                     const QuantizeArgs& args = {}, void* stream = nullptr);
  // The operand's values, in its own K-major layout and transformed domain (what a GEMM
  // multiplies), as float32/bf16/fp16 into `out` [layout.rows, layout.cols].
  void dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                  std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                  void* stream = nullptr);
  // DGE factor f'(W * sf) of the recipe's weight operand, elementwise, into out (same shape as w).
  void dge(const Recipe& recipe, const TensorView& w, const TensorView& out,
           void* stream = nullptr);
  // One of a linear layer's three GEMMs (core/gemm.hpp): out [M, N] = epilogue(deq(A) deq(B)^T),
  // A [M, K] and B [N, K] the operands of `op` quantized with `recipe` (x and w for fprop, dy and
  // wt for dgrad, dyt and xt for wgrad), out float32, bfloat16 or float16. Every argument is
  // checked against the recipe's layouts first; Error(invalid_argument) names the one that is off,
  // Error(unsupported) a combination the backend has no kernel for.
  void gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a, const QuantizedView& b,
            const GemmShape& shape, const TensorView& out, const GemmEpilogue& epilogue = {},
            void* stream = nullptr);
  // Which kernel config gemm() runs for these arguments on this engine's device, and why:
  // "<config text> (tuned)", "(heuristic)" or "(FP4JIT_SM90_GEMM)" on CUDA, "(tuned)" or
  // "(default)" on the host; empty for the reference backend. Error(unsupported) as gemm() for a
  // combination without a kernel. What `fp4jit bench gemm` prints beside each figure.
  std::string gemm_kernel(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                          DType out = DType::bf16);

  // A linear layer's step in two calls. The recipe's operands as quantize_pair and gemm make
  // them, with seeds seed_x / seed_w / seed_dy at offset 0 (results equal those calls' bit for
  // bit). Recipes with OCC on x or DGE / Q-EMA on w are refused (Error(unsupported)): their
  // extra steps take the per-operation calls. Buffers: linear_buffers(), 256-byte aligned.
  static LinearBuffers linear_buffers(const Recipe& recipe, const LinearShape& shape);
  // y [tokens, out] = X W^T [+ bias ([out] of bias_dtype, or null)]; saved null: no backward
  // follows (X and W quantized row-wise only). weights: W's copies kept across calls (above).
  void linear_forward(const Recipe& recipe, const TensorView& x, const TensorView& w,
                      const void* bias, DType bias_dtype, const TensorView& y, std::uint64_t seed_x,
                      std::uint64_t seed_w, void* saved, void* scratch, void* stream = nullptr,
                      const LinearWeights& weights = {});
  // dx [tokens, in] and dw [out, in] from dy [tokens, out] and the forward's saved buffer; a
  // view with null data is not computed (at least one must be given). db ([out] of db_dtype, or
  // null): the bias gradient, dY's column sums (QuantizeArgs::column_sums), taken from dY's
  // quantize pass. dw_beta: dw = dW + dw_beta * dw, by the wgrad GEMM's epilogue (beta * C with
  // C = dw): 1 accumulates the weight gradient into dw, e.g. an FP32 main gradient summed over
  // micro-batches, without a pass of its own; 0 (the default) overwrites dw. weights: the
  // LinearWeights buffer its forward used (W^T read from there), or null (from saved).
  void linear_backward(const Recipe& recipe, std::int64_t in, const TensorView& dy,
                       const void* saved, void* scratch, const TensorView& dx, const TensorView& dw,
                       void* db, DType db_dtype, std::uint64_t seed_dy, void* stream = nullptr,
                       float dw_beta = 0.0f, const void* weights = nullptr);

 private:
  std::unique_ptr<Backend> backend_;
};

}  // namespace fp4jit
