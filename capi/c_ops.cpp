// The C API's operations: quantize, quantize_pair, dequantize, gemm, dge and the linear step. Each
// converts and checks its arguments (c_tensor.hpp), then calls the Engine with the handle's lock
// held.
#include <cstring>
#include <string>

#include "capi/c_api.hpp"
#include "capi/c_tensor.hpp"
#include "numerics/philox.cuh"

namespace fp4jit::capi {
namespace {

QuantizeArgs to_args(const fp4jit_quantize_args* a, const std::uint64_t* seed_step = nullptr) {
  QuantizeArgs args;
  if (a != nullptr) args = QuantizeArgs{a->seed, a->offset, a->amax, a->amax_transposed};
  args.seed_step = seed_step;
  return args;
}

Role partner_of(Role role) {
  if (role == Role::x) return Role::xt;
  if (role == Role::w) return Role::wt;
  if (role == Role::dy) return Role::dyt;
  fail(ErrorKind::invalid_argument, "quantize_pair: role must be x, w or dy (got {})", name(role));
}

// The shape of a GEMM call `what` ("gemm", "gemm_kernel"), M, N and K checked positive.
GemmShape positive_shape(const char* what, GemmOp op, int64_t m, int64_t n, int64_t k) {
  const GemmShape shape{m, n, k};
  if (m <= 0 || n <= 0 || k <= 0)
    fail(ErrorKind::invalid_argument, "{} {}: M, N and K must be positive, got {}", what, name(op),
         gemm_shape_text(shape));
  return shape;
}

}  // namespace
}  // namespace fp4jit::capi

using namespace fp4jit;
using namespace fp4jit::capi;

extern "C" {

fp4jit_status fp4jit_quantize_stepped(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                      fp4jit_role role, const fp4jit_tensor* in,
                                      const fp4jit_quantized* out, const fp4jit_quantize_args* args,
                                      const uint64_t* seed_step, void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const Role r = to_role(role);
    const BackendKind b = engine->engine.backend();
    const TensorView v = to_view(in, what("quantize input", r), b, engine->device);
    const QuantLayout l = quant_layout(recipe->recipe, r, v.rows, v.cols);
    const QuantizedView q = to_quantized(out, l, recipe->recipe[r].occ, what("quantize output", r));
    std::lock_guard lock(engine->mutex);
    engine->engine.quantize(recipe->recipe, r, v, q, to_args(args, seed_step), stream);
  });
}

fp4jit_status fp4jit_quantize(fp4jit_engine* engine, const fp4jit_recipe* recipe, fp4jit_role role,
                              const fp4jit_tensor* in, const fp4jit_quantized* out,
                              const fp4jit_quantize_args* args, void* stream) {
  return fp4jit_quantize_stepped(engine, recipe, role, in, out, args, nullptr, stream);
}

fp4jit_status fp4jit_quantize_pair_stepped(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                           fp4jit_role role, const fp4jit_tensor* in,
                                           const fp4jit_quantized* out,
                                           const fp4jit_quantized* out_transposed,
                                           const fp4jit_quantize_args* args,
                                           const uint64_t* seed_step, void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const Role r = to_role(role), t = partner_of(r);
    const BackendKind b = engine->engine.backend();
    const TensorView v = to_view(in, what("quantize_pair input", r), b, engine->device);
    const Recipe& rc = recipe->recipe;
    const QuantizedView q = to_quantized(out, quant_layout(rc, r, v.rows, v.cols), rc[r].occ,
                                         what("quantize_pair output", r));
    const QuantizedView qt = to_quantized(out_transposed, quant_layout(rc, t, v.rows, v.cols),
                                          rc[t].occ, what("quantize_pair transposed output", t));
    std::lock_guard lock(engine->mutex);
    engine->engine.quantize_pair(rc, r, v, q, qt, to_args(args, seed_step), stream);
  });
}

fp4jit_status fp4jit_quantize_pair(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                   fp4jit_role role, const fp4jit_tensor* in,
                                   const fp4jit_quantized* out,
                                   const fp4jit_quantized* out_transposed,
                                   const fp4jit_quantize_args* args, void* stream) {
  return fp4jit_quantize_pair_stepped(engine, recipe, role, in, out, out_transposed, args, nullptr,
                                      stream);
}

uint64_t fp4jit_mix_seed(uint64_t h, uint64_t v) {
  return fp4jit::nx::mix_seed(h, v);
}

fp4jit_status fp4jit_dequantize(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                fp4jit_role role, const fp4jit_quantized* in, int64_t source_rows,
                                int64_t source_cols, const fp4jit_tensor* out, void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const Role r = to_role(role);
    const QuantLayout l = quant_layout(recipe->recipe, r, source_rows, source_cols);
    // The residual is not read: OCC buffers are optional here.
    QuantizedView q = to_quantized(in, l, false, what("dequantize input", r));
    std::int64_t zero = 0;
    if (recipe->recipe[r].occ) q.residual_count = &zero;
    const TensorView v =
        to_view(out, what("dequantize output", r), engine->engine.backend(), engine->device);
    std::lock_guard lock(engine->mutex);
    engine->engine.dequantize(recipe->recipe, r, q, source_rows, source_cols, v, stream);
  });
}

void fp4jit_gemm_epilogue_init(fp4jit_gemm_epilogue* epilogue) {
  if (epilogue != nullptr) *epilogue = fp4jit_gemm_epilogue{1.0f, 0.0f, nullptr, nullptr, nullptr};
}

fp4jit_status fp4jit_gemm(fp4jit_engine* engine, const fp4jit_recipe* recipe, fp4jit_gemm_op op,
                          const fp4jit_quantized* a, const fp4jit_quantized* b, int64_t m,
                          int64_t n, int64_t k, const fp4jit_tensor* out,
                          const fp4jit_gemm_epilogue* epilogue, void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const GemmOp o = to_op(op);
    const GemmShape shape = positive_shape("gemm", o, m, n, k);
    const Recipe& rc = recipe->recipe;
    const GemmLayouts l = gemm_layouts(rc, o, shape);
    const GemmRoles roles = gemm_roles(o);
    const BackendKind bk = engine->engine.backend();
    const int dev = engine->device;
    const bool occ = epilogue != nullptr && epilogue->occ_weight != nullptr;
    const std::string op_name(name(o));
    const QuantizedView qa =
        to_quantized(a, l.a, occ && rc[roles.a].occ, what("gemm " + op_name + " A", roles.a));
    const QuantizedView qb = to_quantized(b, l.b, false, what("gemm " + op_name + " B", roles.b));
    const TensorView vo = to_view(out, "gemm output", bk, dev);
    GemmEpilogue e;
    if (epilogue != nullptr) {
      e.alpha = epilogue->alpha;
      e.beta = epilogue->beta;
      if (epilogue->c != nullptr)
        e.c = to_view(epilogue->c, "gemm epilogue c", bk, dev);
      else if (epilogue->beta != 0.0f)
        fail(ErrorKind::invalid_argument, "gemm: beta is {} but the epilogue's c is NULL",
             epilogue->beta);
      if (epilogue->bias != nullptr) {
        const TensorView vb = to_vector(epilogue->bias, "gemm epilogue bias", n, bk, dev);
        e.bias = vb.data;
        e.bias_dtype = vb.dtype;
      }
      if (occ) e.occ_weight = to_view(epilogue->occ_weight, "gemm epilogue occ_weight", bk, dev);
    }
    std::lock_guard lock(engine->mutex);
    engine->engine.gemm(rc, o, qa, qb, shape, vo, e, stream);
  });
}

fp4jit_status fp4jit_gemm_kernel(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                 fp4jit_gemm_op op, int64_t m, int64_t n, int64_t k,
                                 fp4jit_dtype out, char* buf, size_t size, size_t* needed) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const GemmOp o = to_op(op);
    const GemmShape shape = positive_shape("gemm_kernel", o, m, n, k);
    const DType dt = to_dtype(out, "gemm_kernel output dtype");
    std::string text;
    {
      std::lock_guard lock(engine->mutex);
      text = engine->engine.gemm_kernel(recipe->recipe, o, shape, dt);
    }
    if (needed != nullptr) *needed = text.size() + 1;
    if (buf == nullptr || size < text.size() + 1)
      fail(ErrorKind::invalid_argument, "gemm_kernel: the text takes {} bytes, buf holds {}",
           text.size() + 1, buf == nullptr ? 0 : size);
    std::memcpy(buf, text.c_str(), text.size() + 1);
  });
}

fp4jit_status fp4jit_dge(fp4jit_engine* engine, const fp4jit_recipe* recipe, const fp4jit_tensor* w,
                         const fp4jit_tensor* out, void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const BackendKind b = engine->engine.backend();
    const TensorView vw = to_view(w, "dge input (the weight W)", b, engine->device);
    const TensorView vo = to_view(out, "dge output", b, engine->device);
    std::lock_guard lock(engine->mutex);
    engine->engine.dge(recipe->recipe, vw, vo, stream);
  });
}

fp4jit_status fp4jit_linear_buffers_query(const fp4jit_recipe* recipe, int64_t tokens, int64_t in,
                                          int64_t out, fp4jit_linear_buffers* buffers) {
  return guard([&] {
    require(recipe, "recipe");
    require(buffers, "linear buffers output");
    const LinearBuffers b = Engine::linear_buffers(recipe->recipe, LinearShape{tokens, in, out});
    *buffers =
        fp4jit_linear_buffers{b.saved_bytes, b.forward_scratch_bytes, b.backward_scratch_bytes};
  });
}

fp4jit_status fp4jit_linear_weights_query(const fp4jit_recipe* recipe, int64_t tokens, int64_t in,
                                          int64_t out, int64_t* saved_bytes,
                                          int64_t* weight_bytes) {
  return guard([&] {
    require(recipe, "recipe");
    require(saved_bytes, "saved bytes output");
    require(weight_bytes, "weight bytes output");
    const LinearBuffers b = Engine::linear_buffers(recipe->recipe, LinearShape{tokens, in, out});
    *saved_bytes = b.saved_x_bytes;
    *weight_bytes = b.weight_bytes;
  });
}

fp4jit_status fp4jit_linear_forward(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                    const fp4jit_tensor* x, const fp4jit_tensor* w,
                                    const fp4jit_tensor* bias, const fp4jit_tensor* y,
                                    uint64_t seed_x, uint64_t seed_w, void* saved, void* scratch,
                                    void* stream) {
  return fp4jit_linear_forward_weights(engine, recipe, x, w, bias, y, seed_x, seed_w, saved,
                                       scratch, nullptr, 1, stream);
}

fp4jit_status fp4jit_linear_forward_weights(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                            const fp4jit_tensor* x, const fp4jit_tensor* w,
                                            const fp4jit_tensor* bias, const fp4jit_tensor* y,
                                            uint64_t seed_x, uint64_t seed_w, void* saved,
                                            void* scratch, void* weights, int quantize_weights,
                                            void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const BackendKind b = engine->engine.backend();
    const int dev = engine->device;
    const TensorView vx = to_view(x, "linear forward input X", b, dev);
    const TensorView vw = to_view(w, "linear forward weight W", b, dev);
    const TensorView vy = to_view(y, "linear forward output Y", b, dev);
    const TensorView vb =
        bias != nullptr ? to_vector(bias, "linear forward bias", vw.rows, b, dev) : TensorView{};
    std::lock_guard lock(engine->mutex);
    engine->engine.linear_forward(recipe->recipe, vx, vw, vb.data, vb.dtype, vy, seed_x, seed_w,
                                  saved, scratch, stream,
                                  LinearWeights{weights, quantize_weights != 0});
  });
}

fp4jit_status fp4jit_linear_backward_accumulate(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                                int64_t in, const fp4jit_tensor* dy,
                                                const void* saved, void* scratch,
                                                const fp4jit_tensor* dx, const fp4jit_tensor* dw,
                                                const fp4jit_tensor* db, float dw_beta,
                                                uint64_t seed_dy, void* stream) {
  return fp4jit_linear_backward_weights(engine, recipe, in, dy, saved, nullptr, scratch, dx, dw, db,
                                        dw_beta, seed_dy, stream);
}

fp4jit_status fp4jit_linear_backward_weights(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                             int64_t in, const fp4jit_tensor* dy, const void* saved,
                                             const void* weights, void* scratch,
                                             const fp4jit_tensor* dx, const fp4jit_tensor* dw,
                                             const fp4jit_tensor* db, float dw_beta,
                                             uint64_t seed_dy, void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const BackendKind b = engine->engine.backend();
    const int dev = engine->device;
    const TensorView vdy = to_view(dy, "linear backward gradient dY", b, dev);
    const TensorView vdx =
        dx != nullptr ? to_view(dx, "linear backward output dX", b, dev) : TensorView{};
    const TensorView vdw =
        dw != nullptr ? to_view(dw, "linear backward output dW", b, dev) : TensorView{};
    const TensorView vdb = db != nullptr
                               ? to_vector(db, "linear backward bias gradient dB", vdy.cols, b, dev)
                               : TensorView{};
    std::lock_guard lock(engine->mutex);
    engine->engine.linear_backward(recipe->recipe, in, vdy, saved, scratch, vdx, vdw, vdb.data,
                                   vdb.dtype, seed_dy, stream, dw_beta, weights);
  });
}

fp4jit_status fp4jit_linear_backward_bias(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                          int64_t in, const fp4jit_tensor* dy, const void* saved,
                                          void* scratch, const fp4jit_tensor* dx,
                                          const fp4jit_tensor* dw, const fp4jit_tensor* db,
                                          uint64_t seed_dy, void* stream) {
  return fp4jit_linear_backward_weights(engine, recipe, in, dy, saved, nullptr, scratch, dx, dw, db,
                                        0.0f, seed_dy, stream);
}

fp4jit_status fp4jit_linear_backward(fp4jit_engine* engine, const fp4jit_recipe* recipe, int64_t in,
                                     const fp4jit_tensor* dy, const void* saved, void* scratch,
                                     const fp4jit_tensor* dx, const fp4jit_tensor* dw,
                                     uint64_t seed_dy, void* stream) {
  return fp4jit_linear_backward_bias(engine, recipe, in, dy, saved, scratch, dx, dw, nullptr,
                                     seed_dy, stream);
}

}  // extern "C"
