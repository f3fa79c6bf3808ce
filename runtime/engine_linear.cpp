// Engine::linear_forward / linear_backward: a linear layer's quantize passes and GEMMs in one
// call each way, their operands carved from caller-provided buffers (the scratch ones, when not
// given, from the backend).
#include <cmath>
#include <cstdint>
#include <memory>

#include "runtime/backend.hpp"

namespace fp4jit {

namespace {

constexpr std::int64_t kAlign = 256;

std::int64_t align_up(std::int64_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}

// Hands out an operand's buffers from `base` (null: only counts the bytes).
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<std::uint8_t*>(base)) {}
  QuantizedView take(const QuantLayout& l) {
    QuantizedView q;
    q.codes = at<std::uint8_t>(l.code_bytes());
    q.scales = at<void>(l.scale_count() * (l.scale_is_code ? 1 : 4));
    q.tensor_scale = at<float>(4);
    // No amax output: nothing reads it here, and without it the kernels skip its reduction (and
    // the CUDA backend its zeroing). Codes, scales and tensor scales do not depend on it.
    return q;
  }
  std::int64_t bytes() const { return used_; }

 private:
  template <class T>
  T* at(std::int64_t bytes) {
    T* p = base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + used_);
    used_ += align_up(bytes > 0 ? bytes : 1);
    return p;
  }
  std::uint8_t* base_;
  std::int64_t used_ = 0;
};

void check_supported(const Recipe& recipe) {
  if (recipe[Role::x].occ)
    fail(ErrorKind::unsupported,
         "linear step: recipe '{}' compensates OCC on x; use quantize_pair and gemm (with the "
         "epilogue's occ_weight)",
         recipe.preset);
  if (recipe[Role::w].dge || recipe[Role::w].qema)
    fail(ErrorKind::unsupported,
         "linear step: recipe '{}' has DGE or Q-EMA on w; use quantize_pair, gemm and dge",
         recipe.preset);
}

void check_buffer(const void* p, std::string_view what) {
  if (p == nullptr) fail(ErrorKind::invalid_argument, "linear step: {} buffer is null", what);
  if (reinterpret_cast<std::uintptr_t>(p) % kAlign != 0)
    fail(ErrorKind::invalid_argument, "linear step: {} buffer ({}) must be {}-byte aligned", what,
         p, kAlign);
}

struct Operands {
  QuantizedView x, w, xt, wt, dy, dyt;
};
struct Layouts {
  QuantLayout xt, wt, x, w, dy, dyt;
};

// The recipe and shape checked, and the six operands' layouts.
Layouts layouts(const Recipe& r, const LinearShape& s) {
  check_supported(r);
  if (s.tokens <= 0 || s.in <= 0 || s.out <= 0)
    fail(ErrorKind::invalid_argument,
         "linear step: tokens, in and out must be positive, got {} x {} x {}", s.tokens, s.in,
         s.out);
  return {quant_layout(r, Role::xt, s.tokens, s.in),  quant_layout(r, Role::wt, s.out, s.in),
          quant_layout(r, Role::x, s.tokens, s.in),   quant_layout(r, Role::w, s.out, s.in),
          quant_layout(r, Role::dy, s.tokens, s.out), quant_layout(r, Role::dyt, s.tokens, s.out)};
}

// The same carving for sizes (null bases) and for use: saved = xt, wt; forward = x, w;
// backward = dy, dyt; a LinearWeights buffer = w, wt (which then replace those of saved and
// forward: weights null leaves them there).
LinearBuffers carve(const Layouts& l, void* saved, void* fwd, void* bwd, Operands& q,
                    const void* weights = nullptr) {
  Carver cs(saved), cf(fwd), cb(bwd), cw(const_cast<void*>(weights));
  q.xt = cs.take(l.xt);
  const std::int64_t saved_x = cs.bytes();
  q.wt = cs.take(l.wt);
  q.x = cf.take(l.x);
  q.w = cf.take(l.w);
  q.dy = cb.take(l.dy);
  q.dyt = cb.take(l.dyt);
  const QuantizedView w = cw.take(l.w), wt = cw.take(l.wt);
  if (weights != nullptr) {
    q.w = w;
    q.wt = wt;
  }
  return {cs.bytes(), cf.bytes(), cb.bytes(), cw.bytes(), saved_x};
}

// The caller's scratch, or where it gave none the backend's, of the size the carving gives that
// buffer (`which`), held by `own` for the call (released in stream order after the call's work).
void* scratch_or_own(Backend& backend, void* given, const Layouts& l,
                     std::int64_t LinearBuffers::*which, void* stream, std::shared_ptr<void>& own) {
  if (given != nullptr) return given;
  Operands sizes_only;
  own = backend.scratch(carve(l, nullptr, nullptr, nullptr, sizes_only).*which, stream);
  return own.get();
}

}  // namespace

LinearBuffers Engine::linear_buffers(const Recipe& recipe, const LinearShape& shape) {
  Operands sizes_only;
  return carve(layouts(recipe, shape), nullptr, nullptr, nullptr, sizes_only);
}

void Engine::linear_forward(const Recipe& recipe, const TensorView& x, const TensorView& w,
                            const void* bias, DType bias_dtype, const TensorView& y,
                            std::uint64_t seed_x, std::uint64_t seed_w, void* saved, void* scratch,
                            void* stream, const LinearWeights& weights) {
  const LinearShape s{x.rows, x.cols, w.rows};
  const Layouts l = layouts(recipe, s);
  if (w.cols != x.cols)
    fail(ErrorKind::invalid_argument,
         "linear forward: X is [{}, {}] but W is [{}, {}] (W must be [out, in])", x.rows, x.cols,
         w.rows, w.cols);
  std::shared_ptr<void> own;
  scratch =
      scratch_or_own(*backend_, scratch, l, &LinearBuffers::forward_scratch_bytes, stream, own);
  check_buffer(scratch, "forward scratch");
  if (weights.data != nullptr) check_buffer(weights.data, "weights");
  Operands q;
  carve(l, saved, scratch, nullptr, q, weights.data);
  if (saved != nullptr) {
    check_buffer(saved, "saved");
    quantize_pair(recipe, Role::x, x, q.x, q.xt, QuantizeArgs{seed_x, 0}, stream);
  } else {
    quantize(recipe, Role::x, x, q.x, QuantizeArgs{seed_x, 0}, stream);
  }
  // W: both copies where a backward follows or where they are kept (later forwards of the same W
  // may have a backward); none where the kept ones are current.
  if (weights.data == nullptr || weights.quantize) {
    if (saved != nullptr || weights.data != nullptr)
      quantize_pair(recipe, Role::w, w, q.w, q.wt, QuantizeArgs{seed_w, 0}, stream);
    else
      quantize(recipe, Role::w, w, q.w, QuantizeArgs{seed_w, 0}, stream);
  }
  GemmEpilogue e;
  e.bias = bias;
  e.bias_dtype = bias_dtype;
  gemm(recipe, GemmOp::fprop, q.x, q.w, GemmShape{s.tokens, s.out, s.in}, y, e, stream);
}

void Engine::linear_backward(const Recipe& recipe, std::int64_t in, const TensorView& dy,
                             const void* saved, void* scratch, const TensorView& dx,
                             const TensorView& dw, void* db, DType db_dtype, std::uint64_t seed_dy,
                             void* stream, float dw_beta, const void* weights) {
  const LinearShape s{dy.rows, in, dy.cols};
  const Layouts l = layouts(recipe, s);
  if (dx.data == nullptr && dw.data == nullptr)
    fail(ErrorKind::invalid_argument, "linear backward: neither dx nor dw is asked for");
  if (!std::isfinite(dw_beta))
    fail(ErrorKind::invalid_argument, "linear backward: dw_beta must be finite, got {}", dw_beta);
  if (dw_beta != 0.0f && dw.data == nullptr)
    fail(ErrorKind::invalid_argument,
         "linear backward: dw_beta = {} accumulates into dw, but no dw is given", dw_beta);
  check_buffer(saved, "saved");
  std::shared_ptr<void> own;
  scratch =
      scratch_or_own(*backend_, scratch, l, &LinearBuffers::backward_scratch_bytes, stream, own);
  check_buffer(scratch, "backward scratch");
  if (weights != nullptr) check_buffer(weights, "weights");
  Operands q;
  carve(l, const_cast<void*>(saved), nullptr, scratch, q, weights);
  QuantizeArgs args{seed_dy, 0};
  args.column_sums = db;  // the bias gradient from the same read of dY
  args.column_sums_dtype = db_dtype;
  // dY^T only from the pair: a recipe may derive it from the row-wise copy (requant).
  if (dw.data != nullptr)
    quantize_pair(recipe, Role::dy, dy, q.dy, q.dyt, args, stream);
  else
    quantize(recipe, Role::dy, dy, q.dy, args, stream);
  if (dx.data != nullptr)
    gemm(recipe, GemmOp::dgrad, q.dy, q.wt, GemmShape{s.tokens, s.in, s.out}, dx, {}, stream);
  if (dw.data != nullptr) {
    GemmEpilogue e;
    if (dw_beta != 0.0f) {  // dW + beta * dw, read and written by the same epilogue
      e.beta = dw_beta;
      e.c = dw;
    }
    gemm(recipe, GemmOp::wgrad, q.dyt, q.xt, GemmShape{s.out, s.in, s.tokens}, dw, e, stream);
  }
}

}  // namespace fp4jit
