// The C API (include/fp4jit/fp4jit.h): the library, DLPack tensors, recipes and engines. The
// operations are in c_ops.cpp.
#include "capi/c_api.hpp"

#include "capi/c_tensor.hpp"

namespace fp4jit::capi {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

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

std::string what(std::string_view arg, Role role) {
  return fmt::format("{} (operand {})", arg, name(role));
}

namespace {

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
  return last_error().c_str();
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

}  // extern "C"
