// The C API (include/fp4jit/fp4jit.h) over Engine. Every entry point runs its body inside
// guard(): an fp4jit::Error becomes its status and the thread-local message, any other exception
// FP4JIT_ERROR_INTERNAL (or OUT_OF_MEMORY); nothing propagates across the C boundary.
#include <mutex>
#include <new>
#include <string>

#include "capi/c_tensor.hpp"
#include "core/error.hpp"
#include "fp4jit/engine.hpp"
#include "fp4jit/fp4jit.h"

struct fp4jit_recipe {
  fp4jit::Recipe recipe;
  std::string canonical, hash;
};

struct fp4jit_engine {
  fp4jit::Engine engine;
  int device = 0;
  std::string description;
  std::mutex mutex;  // one call at a time: a handle may be shared between threads
};

namespace fp4jit::capi {
namespace {

thread_local std::string t_last_error;

fp4jit_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument:
      return FP4JIT_ERROR_INVALID_ARGUMENT;
    case ErrorKind::recipe:
      return FP4JIT_ERROR_RECIPE;
    case ErrorKind::io:
      return FP4JIT_ERROR_IO;
    case ErrorKind::corrupt:
      return FP4JIT_ERROR_CORRUPT;
    case ErrorKind::unsupported:
      return FP4JIT_ERROR_UNSUPPORTED;
    case ErrorKind::no_gpu:
      return FP4JIT_ERROR_NO_GPU;
    case ErrorKind::driver:
      return FP4JIT_ERROR_DRIVER;
    case ErrorKind::compile:
      return FP4JIT_ERROR_COMPILE;
    case ErrorKind::cache:
      return FP4JIT_ERROR_CACHE;
    case ErrorKind::internal:
      return FP4JIT_ERROR_INTERNAL;
  }
  return FP4JIT_ERROR_INTERNAL;
}

template <class F>
fp4jit_status guard(F&& body) noexcept {
  try {
    body();
    return FP4JIT_OK;
  } catch (const Error& e) {
    try {
      t_last_error = e.what();
      if (!e.log().empty()) t_last_error += "\n" + e.log();
    } catch (...) {
    }
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    t_last_error = "out of host memory";
    return FP4JIT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      t_last_error = std::string("internal error: ") + e.what();
    } catch (...) {
    }
    return FP4JIT_ERROR_INTERNAL;
  } catch (...) {
    t_last_error = "internal error: unknown exception";
    return FP4JIT_ERROR_INTERNAL;
  }
}

template <class T>
void require(const T* p, std::string_view what) {
  if (p == nullptr) fail(ErrorKind::invalid_argument, "{} is NULL", what);
}

Role to_role(fp4jit_role r) {
  if (r < FP4JIT_ROLE_X || r > FP4JIT_ROLE_XT)
    fail(ErrorKind::invalid_argument,
         "unknown role {} (valid: X = 0, W = 1, DY = 2, WT = 3, DYT = 4, XT = 5)",
         static_cast<int>(r));
  return static_cast<Role>(r);
}

GemmOp to_op(fp4jit_gemm_op op) {
  if (op < FP4JIT_FPROP || op > FP4JIT_WGRAD)
    fail(ErrorKind::invalid_argument, "unknown GEMM {} (valid: FPROP = 0, DGRAD = 1, WGRAD = 2)",
         static_cast<int>(op));
  return static_cast<GemmOp>(op);
}

BackendKind to_backend(fp4jit_backend b) {
  switch (b) {
    case FP4JIT_BACKEND_AUTO:
      return BackendKind::automatic;
    case FP4JIT_BACKEND_CUDA:
      return BackendKind::cuda;
    case FP4JIT_BACKEND_HOST:
      return BackendKind::host;
    case FP4JIT_BACKEND_REFERENCE:
      return BackendKind::reference;
  }
  fail(ErrorKind::invalid_argument,
       "unknown backend {} (valid: AUTO = 0, CUDA = 1, HOST = 2, REFERENCE = 3)",
       static_cast<int>(b));
}

fp4jit_backend from_backend(BackendKind b) {
  switch (b) {
    case BackendKind::automatic:
      return FP4JIT_BACKEND_AUTO;
    case BackendKind::cuda:
      return FP4JIT_BACKEND_CUDA;
    case BackendKind::host:
      return FP4JIT_BACKEND_HOST;
    case BackendKind::reference:
      return FP4JIT_BACKEND_REFERENCE;
  }
  return FP4JIT_BACKEND_AUTO;
}

QuantizeArgs to_args(const fp4jit_quantize_args* a) {
  if (a == nullptr) return {};
  return QuantizeArgs{a->seed, a->offset, a->amax, a->amax_transposed};
}

Role partner_of(Role role) {
  if (role == Role::x) return Role::xt;
  if (role == Role::w) return Role::wt;
  if (role == Role::dy) return Role::dyt;
  fail(ErrorKind::invalid_argument, "quantize_pair: role must be x, w or dy (got {})", name(role));
}

// The operand's name in messages: "quantize output (operand x)".
std::string what(std::string_view arg, Role role) {
  return fmt::format("{} (operand {})", arg, name(role));
}

}  // namespace
}  // namespace fp4jit::capi

using namespace fp4jit;
using namespace fp4jit::capi;

extern "C" {

const char* fp4jit_version(void) {
  return FP4JIT_VERSION;
}
int fp4jit_abi_version(void) {
  return FP4JIT_C_ABI_VERSION;
}
const char* fp4jit_last_error(void) {
  return t_last_error.c_str();
}

const char* fp4jit_status_name(fp4jit_status status) {
  switch (status) {
    case FP4JIT_OK:
      return "FP4JIT_OK";
    case FP4JIT_ERROR_INVALID_ARGUMENT:
      return "FP4JIT_ERROR_INVALID_ARGUMENT";
    case FP4JIT_ERROR_RECIPE:
      return "FP4JIT_ERROR_RECIPE";
    case FP4JIT_ERROR_IO:
      return "FP4JIT_ERROR_IO";
    case FP4JIT_ERROR_CORRUPT:
      return "FP4JIT_ERROR_CORRUPT";
    case FP4JIT_ERROR_UNSUPPORTED:
      return "FP4JIT_ERROR_UNSUPPORTED";
    case FP4JIT_ERROR_NO_GPU:
      return "FP4JIT_ERROR_NO_GPU";
    case FP4JIT_ERROR_DRIVER:
      return "FP4JIT_ERROR_DRIVER";
    case FP4JIT_ERROR_COMPILE:
      return "FP4JIT_ERROR_COMPILE";
    case FP4JIT_ERROR_CACHE:
      return "FP4JIT_ERROR_CACHE";
    case FP4JIT_ERROR_INTERNAL:
      return "FP4JIT_ERROR_INTERNAL";
    case FP4JIT_ERROR_OUT_OF_MEMORY:
      return "FP4JIT_ERROR_OUT_OF_MEMORY";
  }
  return "FP4JIT_ERROR_UNKNOWN";
}

fp4jit_status fp4jit_tensor_from_dlpack(const fp4jit_dlpack_tensor* dl, fp4jit_tensor* out) {
  return guard([&] {
    require(dl, "DLPack tensor");
    require(out, "output tensor");
    if (dl->dtype.lanes != 1)
      fail(ErrorKind::invalid_argument, "DLPack tensor: {} lanes (only 1 is accepted)",
           dl->dtype.lanes);
    fp4jit_dtype dtype;
    if (dl->dtype.code == 2 && dl->dtype.bits == 32)
      dtype = FP4JIT_FLOAT32;
    else if (dl->dtype.code == 2 && dl->dtype.bits == 16)
      dtype = FP4JIT_FLOAT16;
    else if (dl->dtype.code == 4 && dl->dtype.bits == 16)
      dtype = FP4JIT_BFLOAT16;
    else
      fail(ErrorKind::invalid_argument,
           "DLPack tensor: dtype (code {}, {} bits) is not float32, float16 or bfloat16",
           dl->dtype.code, dl->dtype.bits);
    const int type = dl->device.device_type;
    if (type != FP4JIT_DEVICE_CPU && type != FP4JIT_DEVICE_CUDA &&
        type != FP4JIT_DEVICE_CUDA_HOST && type != FP4JIT_DEVICE_CUDA_MANAGED)
      fail(ErrorKind::invalid_argument,
           "DLPack tensor: device type {} is not CPU (1), CUDA (2), CUDA host (3) or CUDA "
           "managed (13)",
           type);
    if (dl->data == nullptr && dl->byte_offset == 0)
      fail(ErrorKind::invalid_argument, "DLPack tensor: null data pointer");
    out->data = static_cast<char*>(dl->data) + dl->byte_offset;
    out->dtype = dtype;
    out->ndim = dl->ndim;
    out->shape = dl->shape;
    out->strides = dl->strides;
    out->device = static_cast<fp4jit_device>(type);
    out->device_id = dl->device.device_id;
  });
}

fp4jit_status fp4jit_recipe_parse(const char* text, fp4jit_recipe** out) {
  return guard([&] {
    require(out, "recipe output pointer");
    *out = nullptr;
    require(text, "recipe text");
    auto r = std::make_unique<fp4jit_recipe>();
    r->recipe = parse_recipe(text);
    r->canonical = canonical(r->recipe);
    r->hash = recipe_hash(r->recipe);
    *out = r.release();
  });
}

void fp4jit_recipe_destroy(fp4jit_recipe* recipe) {
  delete recipe;
}
const char* fp4jit_recipe_canonical(const fp4jit_recipe* r) {
  return r ? r->canonical.c_str() : nullptr;
}
const char* fp4jit_recipe_hash(const fp4jit_recipe* r) {
  return r ? r->hash.c_str() : nullptr;
}
const char* fp4jit_recipe_preset(const fp4jit_recipe* r) {
  return r ? r->recipe.preset.c_str() : nullptr;
}

size_t fp4jit_preset_count(void) {
  return presets().size();
}
const char* fp4jit_preset_name(size_t index) {
  // Preset names are string literals: NUL-terminated.
  return index < presets().size() ? presets()[index].name.data() : nullptr;
}

fp4jit_status fp4jit_recipe_operand(const fp4jit_recipe* recipe, fp4jit_role role,
                                    fp4jit_operand_info* out) {
  return guard([&] {
    require(recipe, "recipe");
    require(out, "operand info output");
    const OperandSpec& s = recipe->recipe[to_role(role)];
    fp4jit_operand_info info{};
    info.elem_bits = bits(s.elem);
    switch (s.block.kind) {
      case Block::Kind::tile:
        info.block_rows = s.block.rows, info.block_cols = s.block.cols;
        break;
      case Block::Kind::row:
        info.block_rows = 1, info.block_cols = -1;
        break;
      case Block::Kind::col:
        info.block_rows = -1, info.block_cols = 1;
        break;
      case Block::Kind::tensor:
        info.block_rows = 0, info.block_cols = 0;
        break;
    }
    info.two_level = s.rule == ScaleRule::two_level;
    info.stochastic_rounding = s.round == Round::stochastic;
    info.hadamard_size = s.had.size;
    info.occ = s.occ;
    info.dge = s.dge;
    info.requant = s.src == Source::requant;
    info.qema = s.qema;
    *out = info;
  });
}

fp4jit_status fp4jit_layout_query(const fp4jit_recipe* recipe, fp4jit_role role,
                                  int64_t source_rows, int64_t source_cols, fp4jit_layout* out) {
  return guard([&] {
    require(recipe, "recipe");
    require(out, "layout output");
    const Role r = to_role(role);
    const QuantLayout l = quant_layout(recipe->recipe, r, source_rows, source_cols);
    fp4jit_layout o{};
    o.rows = l.rows, o.cols = l.cols, o.row_bytes = l.row_bytes, o.code_bytes = l.code_bytes();
    o.scale_rows = l.scale_rows, o.scale_cols = l.scale_cols, o.scale_count = l.scale_count();
    o.scale_is_code = l.scale_is_code;
    o.two_level = l.two_level;
    o.scale_bytes = l.scale_count() * (l.scale_is_code ? 1 : 4);
    o.occ = recipe->recipe[r].occ;
    o.transposed = role_info(r).transposed;
    o.residual_capacity = o.occ ? occ_capacity(recipe->recipe, source_rows, source_cols) : 0;
    *out = o;
  });
}

void fp4jit_engine_options_init(fp4jit_engine_options* options) {
  if (options == nullptr) return;
  *options = fp4jit_engine_options{FP4JIT_BACKEND_AUTO, 0, nullptr, 1};
}

fp4jit_status fp4jit_engine_create(const fp4jit_engine_options* options, fp4jit_engine** out) {
  return guard([&] {
    require(out, "engine output pointer");
    *out = nullptr;
    fp4jit_engine_options o;
    fp4jit_engine_options_init(&o);
    if (options != nullptr) o = *options;
    EngineOptions eo;
    eo.backend = to_backend(o.backend);
    if (o.device < 0)
      fail(ErrorKind::invalid_argument, "engine options: device {} is negative", o.device);
    eo.device = o.device;
    eo.cache_path = o.cache_path != nullptr ? o.cache_path : "";
    eo.use_cache = o.use_cache != 0;
    auto e = std::unique_ptr<fp4jit_engine>(new fp4jit_engine{Engine(eo), o.device, {}, {}});
    e->description = e->engine.description();
    *out = e.release();
  });
}

void fp4jit_engine_destroy(fp4jit_engine* engine) {
  delete engine;
}

fp4jit_status fp4jit_engine_backend(const fp4jit_engine* engine, fp4jit_backend* out) {
  return guard([&] {
    require(engine, "engine");
    require(out, "backend output");
    *out = from_backend(engine->engine.backend());
  });
}

const char* fp4jit_engine_description(const fp4jit_engine* engine) {
  return engine ? engine->description.c_str() : nullptr;
}

fp4jit_status fp4jit_quantize(fp4jit_engine* engine, const fp4jit_recipe* recipe, fp4jit_role role,
                              const fp4jit_tensor* in, const fp4jit_quantized* out,
                              const fp4jit_quantize_args* args, void* stream) {
  return guard([&] {
    require(engine, "engine");
    require(recipe, "recipe");
    const Role r = to_role(role);
    const BackendKind b = engine->engine.backend();
    const TensorView v = to_view(in, what("quantize input", r), b, engine->device);
    const QuantLayout l = quant_layout(recipe->recipe, r, v.rows, v.cols);
    const QuantizedView q = to_quantized(out, l, recipe->recipe[r].occ, what("quantize output", r));
    std::lock_guard lock(engine->mutex);
    engine->engine.quantize(recipe->recipe, r, v, q, to_args(args), stream);
  });
}

fp4jit_status fp4jit_quantize_pair(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                   fp4jit_role role, const fp4jit_tensor* in,
                                   const fp4jit_quantized* out,
                                   const fp4jit_quantized* out_transposed,
                                   const fp4jit_quantize_args* args, void* stream) {
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
    engine->engine.quantize_pair(rc, r, v, q, qt, to_args(args), stream);
  });
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
    const GemmShape shape{m, n, k};
    if (m <= 0 || n <= 0 || k <= 0)
      fail(ErrorKind::invalid_argument, "gemm {}: M, N and K must be positive, got {}", name(o),
           gemm_shape_text(shape));
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
      if (epilogue->bias != nullptr)
        e.bias = to_vector_f32(epilogue->bias, "gemm epilogue bias", n, bk, dev);
      if (occ) e.occ_weight = to_view(epilogue->occ_weight, "gemm epilogue occ_weight", bk, dev);
    }
    std::lock_guard lock(engine->mutex);
    engine->engine.gemm(rc, o, qa, qb, shape, vo, e, stream);
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

}  // extern "C"
