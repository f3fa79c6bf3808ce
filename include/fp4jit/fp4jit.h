/* fp4jit C API: quantize, dequantize and multiply tensors with FP4 training recipes on the CUDA,
 * host (CPU JIT) or reference backend. A stable C interface over fp4jit::Engine, exported by
 * libfp4jit.so; usable from C, C++ and any language with a C FFI (the Python package uses it).
 *
 * Conventions
 *   - Every function that can fail returns fp4jit_status; FP4JIT_OK is 0. On failure
 *     fp4jit_last_error() holds a message naming what is wrong (thread-local, valid until the
 *     next failing call on the same thread). No C++ exception crosses this interface.
 *   - Handles (fp4jit_engine, fp4jit_recipe) are opaque; destroy functions accept NULL.
 *   - Tensors are pointer + dtype + shape + strides in elements (fp4jit_tensor). A DLPack
 *     DLTensor converts without copying through fp4jit_tensor_from_dlpack().
 *   - Memory belongs to the caller and lives where the engine's backend computes: device
 *     pointers for the cuda backend, host pointers for host and reference. Sizes of quantized
 *     buffers come from fp4jit_layout_query().
 *   - stream is a CUstream (NULL: the legacy default stream) for the cuda backend; the host and
 *     reference backends ignore it and return when the result is written. CUDA calls return once
 *     the work is enqueued on the stream.
 *   - CUDA calls may be captured into a CUDA graph (stream capture, any capture mode): what a
 *     call enqueues (launches, memsets, scratch from the library's stream-ordered pool) is
 *     recorded, and a kernel's first use loads its module outside the capture's rules. Arguments
 *     passed by value, seeds and offsets among them, are the capture's: every replay of a call
 *     that rounds stochastically draws the same random bits unless it takes a step counter
 *     (fp4jit_quantize_stepped) that the graph advances in device memory. While a stream is
 *     captured, a pointer the driver cannot describe yet (memory the graph itself allocates) is
 *     not checked.
 *   - An engine may be used from several threads; each call is independent.
 *
 * Operands (roles) of a linear layer Y = X W^T, X [tokens, in], W [out, in], each K-major:
 *   x   fprop A   X    [tokens, in]        w   fprop B   W    [out, in]
 *   dy  dgrad A   dY   [tokens, out]       wt  dgrad B   W^T  [in, out]
 *   dyt wgrad A   dY^T [out, tokens]       xt  wgrad B   X^T  [in, tokens]
 * A role is always quantized from the tensor as given (X, W or dY), transposed roles included.
 */
#ifndef FP4JIT_FP4JIT_H_
#define FP4JIT_FP4JIT_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define FP4JIT_API __declspec(dllexport)
#else
#define FP4JIT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; fp4jit_version() is the library's. The C API's ABI version
 * changes only when a struct layout or a signature changes. */
#define FP4JIT_VERSION_MAJOR 0
#define FP4JIT_VERSION_MINOR 1
#define FP4JIT_VERSION_PATCH 0
#define FP4JIT_C_ABI_VERSION 1

typedef enum fp4jit_status {
  FP4JIT_OK = 0,
  FP4JIT_ERROR_INVALID_ARGUMENT = 1, /* a bad value: shape, stride, dtype, alignment, NULL */
  FP4JIT_ERROR_RECIPE = 2,           /* an unknown or inconsistent recipe field */
  FP4JIT_ERROR_IO = 3,               /* a file could not be read or written */
  FP4JIT_ERROR_CORRUPT = 4,          /* a file is not what it claims (cache database) */
  FP4JIT_ERROR_UNSUPPORTED = 5,      /* valid, but this build or backend has no kernel for it */
  FP4JIT_ERROR_NO_GPU = 6,           /* the cuda backend where no GPU or driver is present */
  FP4JIT_ERROR_DRIVER = 7,           /* a CUDA driver call failed */
  FP4JIT_ERROR_COMPILE = 8,          /* NVRTC or LLVM rejected generated code */
  FP4JIT_ERROR_CACHE = 9,            /* the kernel cache could not be used */
  FP4JIT_ERROR_INTERNAL = 10,        /* a broken invariant inside fp4jit */
  FP4JIT_ERROR_OUT_OF_MEMORY = 11    /* host memory ran out */
} fp4jit_status;

typedef enum fp4jit_backend {
  FP4JIT_BACKEND_AUTO = 0, /* cuda where a GPU and driver are present, else host */
  FP4JIT_BACKEND_CUDA = 1,
  FP4JIT_BACKEND_HOST = 2,
  FP4JIT_BACKEND_REFERENCE = 3
} fp4jit_backend;

/* Element types of unquantized tensors. */
typedef enum fp4jit_dtype {
  FP4JIT_FLOAT32 = 0,
  FP4JIT_FLOAT16 = 1,
  FP4JIT_BFLOAT16 = 2
} fp4jit_dtype;

/* Where a tensor's memory is; the values are DLPack's DLDeviceType codes. UNKNOWN skips the
 * check against the engine's backend. */
typedef enum fp4jit_device {
  FP4JIT_DEVICE_UNKNOWN = 0,
  FP4JIT_DEVICE_CPU = 1,
  FP4JIT_DEVICE_CUDA = 2,
  FP4JIT_DEVICE_CUDA_HOST = 3,    /* pinned host memory: usable by every backend */
  FP4JIT_DEVICE_CUDA_MANAGED = 13 /* managed memory: usable by every backend */
} fp4jit_device;

typedef enum fp4jit_role {
  FP4JIT_ROLE_X = 0,
  FP4JIT_ROLE_W = 1,
  FP4JIT_ROLE_DY = 2,
  FP4JIT_ROLE_WT = 3,
  FP4JIT_ROLE_DYT = 4,
  FP4JIT_ROLE_XT = 5
} fp4jit_role;

typedef enum fp4jit_gemm_op {
  FP4JIT_FPROP = 0, /* Y  [tokens, out] = x . w^T     M = tokens  N = out  K = in     */
  FP4JIT_DGRAD = 1, /* dX [tokens, in]  = dy . wt^T   M = tokens  N = in   K = out    */
  FP4JIT_WGRAD = 2  /* dW [out, in]     = dyt . xt^T  M = out     N = in   K = tokens */
} fp4jit_gemm_op;

/* An unquantized tensor of 1 to 8 dimensions. It is used as a matrix [rows, cols]: cols is the
 * last dimension, which must be contiguous (stride 1); rows is the product of the others, which
 * must be collapsible into one row stride (a 1-D tensor is one row). data must be aligned to
 * its element size. */
typedef struct fp4jit_tensor {
  void* data;
  fp4jit_dtype dtype;
  int32_t ndim;
  const int64_t* shape;   /* ndim sizes */
  const int64_t* strides; /* ndim strides in elements; NULL: contiguous, row-major */
  fp4jit_device device;   /* checked against the engine's backend unless UNKNOWN */
  int32_t device_id;      /* the CUDA ordinal, for FP4JIT_DEVICE_CUDA */
} fp4jit_tensor;

/* The layout of DLPack's DLTensor (dlpack.h, every version): a DLTensor* (or the dl_tensor
 * member of a DLManagedTensor / DLManagedTensorVersioned) may be passed where this type is
 * asked for. */
typedef struct fp4jit_dlpack_tensor {
  void* data;
  struct {
    int32_t device_type;
    int32_t device_id;
  } device;
  int32_t ndim;
  struct {
    uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat */
    uint8_t bits;
    uint16_t lanes;
  } dtype;
  int64_t* shape;
  int64_t* strides; /* NULL: contiguous */
  uint64_t byte_offset;
} fp4jit_dlpack_tensor;

/* Fills *out to view the same memory (data + byte_offset; shape and strides point into *dl,
 * which must outlive *out). Float32, float16 and bfloat16 with one lane only. */
FP4JIT_API fp4jit_status fp4jit_tensor_from_dlpack(const fp4jit_dlpack_tensor* dl,
                                                   fp4jit_tensor* out);

/* ---- library ---------------------------------------------------------------------------- */

FP4JIT_API const char* fp4jit_version(void); /* "0.1.0" */
FP4JIT_API int fp4jit_abi_version(void);     /* FP4JIT_C_ABI_VERSION of the library */
/* The message of the last failure on this thread ("" if none). */
FP4JIT_API const char* fp4jit_last_error(void);
FP4JIT_API const char* fp4jit_status_name(fp4jit_status status); /* "FP4JIT_ERROR_RECIPE" */

/* ---- recipes ---------------------------------------------------------------------------- */

typedef struct fp4jit_recipe fp4jit_recipe;

/* Parses "preset[:key=value,...]" (e.g. "nvfp4", "msfp4:occ=0.97,dge.k=3"). An unknown preset,
 * key or value is FP4JIT_ERROR_RECIPE naming it and the valid ones. */
FP4JIT_API fp4jit_status fp4jit_recipe_parse(const char* text, fp4jit_recipe** out);
FP4JIT_API void fp4jit_recipe_destroy(fp4jit_recipe* recipe);
/* Owned by the recipe. The canonical form spells out every field and round-trips through parse;
 * the hash is the lower-case hex SHA-256 of the canonical form. NULL for a NULL recipe. */
FP4JIT_API const char* fp4jit_recipe_canonical(const fp4jit_recipe* recipe);
FP4JIT_API const char* fp4jit_recipe_hash(const fp4jit_recipe* recipe);
FP4JIT_API const char* fp4jit_recipe_preset(const fp4jit_recipe* recipe);

/* The preset names ("mxfp4", ...): index 0 .. count-1; NULL past the end. */
FP4JIT_API size_t fp4jit_preset_count(void);
FP4JIT_API const char* fp4jit_preset_name(size_t index);

/* How a recipe quantizes one operand (what a framework layer needs to decide its calls). */
typedef struct fp4jit_operand_info {
  int32_t elem_bits; /* 4 (E2M1) or 8 (E4M3, E5M2) */
  /* The scale block in the operand's K-major layout; -1 is a whole dimension (a scale per row:
   * 1 x -1, per column: -1 x 1) and 0 x 0 one scale for the tensor. */
  int32_t block_rows;
  int32_t block_cols;
  int32_t two_level;           /* a per-tensor FP32 scale on top of the block scales */
  int32_t stochastic_rounding; /* the codes depend on the seed and offset */
  int32_t hadamard_size;       /* 0: no transform, else 16, 32, 64 or 128 along K */
  int32_t occ;                 /* outlier clamping: the residual is filled and compensated */
  int32_t dge;                 /* the differentiable gradient estimator (weights) */
  int32_t requant;             /* quantized from the dequantized fprop copy (double quantization) */
  int32_t qema;                /* Q-EMA rounding of the weight (needs an EMA: not in this API) */
} fp4jit_operand_info;

FP4JIT_API fp4jit_status fp4jit_recipe_operand(const fp4jit_recipe* recipe, fp4jit_role role,
                                               fp4jit_operand_info* out);

/* ---- the quantized layout ---------------------------------------------------------------- */

/* The buffers an operand needs, made from a [source_rows, source_cols] tensor. */
typedef struct fp4jit_layout {
  int64_t rows, cols; /* the operand, K-major (transposed roles: source_cols x rows) */
  int64_t row_bytes;  /* codes per row: cols / 2 for 4-bit elements, cols for 8-bit */
  int64_t code_bytes; /* rows * row_bytes: the codes buffer (uint8) */
  int64_t scale_rows, scale_cols;
  int64_t scale_count;       /* scale_rows * scale_cols */
  int32_t scale_is_code;     /* 1: uint8 scale codes (e8m0, ue4m3, ue5m3); 0: float32 values */
  int32_t two_level;         /* 1: one float32 tensor scale is written and read */
  int64_t scale_bytes;       /* scale_count * (1 or 4): the scales buffer */
  int32_t occ;               /* 1: the residual buffers are needed */
  int32_t transposed;        /* the operand is the transpose of its source tensor */
  int64_t residual_capacity; /* OCC: entries the residual buffers must hold (else 0) */
} fp4jit_layout;

/* FP4JIT_ERROR_INVALID_ARGUMENT naming the shape and the block rule it breaks. */
FP4JIT_API fp4jit_status fp4jit_layout_query(const fp4jit_recipe* recipe, fp4jit_role role,
                                             int64_t source_rows, int64_t source_cols,
                                             fp4jit_layout* out);

/* A quantized operand's buffers (sizes from fp4jit_layout_query), in the backend's memory.
 * value = decode(code) * decode(scale) [/ tensor_scale]; codes are row-major [rows, row_bytes],
 * 4-bit elements two per byte with element 2i in the low nibble. */
typedef struct fp4jit_quantized {
  uint8_t* codes;
  int64_t codes_bytes;  /* the buffer's size: at least layout.code_bytes */
  void* scales;         /* uint8 codes, or float32 (4-byte aligned) */
  int64_t scales_bytes; /* at least layout.scale_bytes */
  float* tensor_scale;  /* 1 float, two-level operands (else may be NULL) */
  float* amax;          /* 1 float, optional: the operand's largest finite |value| */
  /* OCC operands: positions (row * cols + col in the operand layout, sorted) and values
   * x - clamp(x); residual_count receives how many were written. */
  int64_t* residual_index;
  float* residual_value;
  int64_t* residual_count;
  int64_t residual_capacity;
} fp4jit_quantized;

/* ---- engines ---------------------------------------------------------------------------- */

typedef struct fp4jit_engine fp4jit_engine;

typedef struct fp4jit_engine_options {
  fp4jit_backend backend;
  int32_t device;         /* CUDA device ordinal */
  const char* cache_path; /* NULL or "": $FP4JIT_CACHE, else $XDG_CACHE_HOME/fp4jit/cache.db */
  int32_t use_cache;      /* 0: compile every kernel, store nothing */
} fp4jit_engine_options;

/* Defaults: auto backend, device 0, the default cache. */
FP4JIT_API void fp4jit_engine_options_init(fp4jit_engine_options* options);
/* options may be NULL (defaults). FP4JIT_ERROR_NO_GPU for cuda without a GPU, ..._UNSUPPORTED
 * for a backend this build lacks. */
FP4JIT_API fp4jit_status fp4jit_engine_create(const fp4jit_engine_options* options,
                                              fp4jit_engine** out);
FP4JIT_API void fp4jit_engine_destroy(fp4jit_engine* engine);
/* The backend chosen (never AUTO) and a one-line description, owned by the engine. */
FP4JIT_API fp4jit_status fp4jit_engine_backend(const fp4jit_engine* engine, fp4jit_backend* out);
FP4JIT_API const char* fp4jit_engine_description(const fp4jit_engine* engine);

/* ---- operations ------------------------------------------------------------------------- */

typedef struct fp4jit_quantize_args {
  uint64_t seed;   /* stochastic rounding */
  uint64_t offset; /* element i of the operand draws the random bits of index offset + i */
  /* Delayed scaling of two-level operands: a global amax (1 float, backend memory) to derive
   * the tensor scale from, and the one of the transposed copy; NULL: the input's own. */
  const float* amax;
  const float* amax_transposed;
} fp4jit_quantize_args;

/* Quantizes operand `role` from `in` (the source tensor: X, W or dY). args may be NULL. */
FP4JIT_API fp4jit_status fp4jit_quantize(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                         fp4jit_role role, const fp4jit_tensor* in,
                                         const fp4jit_quantized* out,
                                         const fp4jit_quantize_args* args, void* stream);

/* Both copies of a tensor from one read: the row-wise operand `role` (x, w or dy) into `out` and
 * its transposed partner (xt, wt or dyt) into `out_transposed`. */
FP4JIT_API fp4jit_status fp4jit_quantize_pair(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                              fp4jit_role role, const fp4jit_tensor* in,
                                              const fp4jit_quantized* out,
                                              const fp4jit_quantized* out_transposed,
                                              const fp4jit_quantize_args* args, void* stream);

/* fp4jit_quantize and fp4jit_quantize_pair with a step counter for stochastic rounding:
 * seed_step (1 uint64_t in the backend's memory, or NULL: as the calls above) makes the seed one
 * splitmix64 round of (args->seed, *seed_step) (fp4jit_mix_seed), the step read when the work
 * runs. The CUDA kernels read it on the device, so the calls of a CUDA graph whose replays
 * advance the counter draw new bits every replay; the host and reference backends read it at the
 * call. */
FP4JIT_API fp4jit_status fp4jit_quantize_stepped(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                                 fp4jit_role role, const fp4jit_tensor* in,
                                                 const fp4jit_quantized* out,
                                                 const fp4jit_quantize_args* args,
                                                 const uint64_t* seed_step, void* stream);
FP4JIT_API fp4jit_status fp4jit_quantize_pair_stepped(
    fp4jit_engine* engine, const fp4jit_recipe* recipe, fp4jit_role role, const fp4jit_tensor* in,
    const fp4jit_quantized* out, const fp4jit_quantized* out_transposed,
    const fp4jit_quantize_args* args, const uint64_t* seed_step, void* stream);
/* One splitmix64 round: the state after mixing v into h (what a seed and its step make). */
FP4JIT_API uint64_t fp4jit_mix_seed(uint64_t h, uint64_t v);

/* The operand's values in its own K-major layout and transformed domain (what a GEMM
 * multiplies; the OCC residual not added) into out [layout.rows, layout.cols]. */
FP4JIT_API fp4jit_status fp4jit_dequantize(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                           fp4jit_role role, const fp4jit_quantized* in,
                                           int64_t source_rows, int64_t source_cols,
                                           const fp4jit_tensor* out, void* stream);

/* out = alpha * (deq(A) deq(B)^T [+ R W^T]) [+ bias] [+ beta * c]. */
typedef struct fp4jit_gemm_epilogue {
  float alpha;               /* 1 */
  float beta;                /* 0; non-zero needs c */
  const fp4jit_tensor* c;    /* [M, N] in the output's dtype; may alias the output */
  const fp4jit_tensor* bias; /* [N] float32, bfloat16 or float16, or NULL */
  /* OCC compensation, for recipes whose A operand has occ (msfp4 fprop): R is A's residual and
   * W this tensor, the weight in high precision [N, K] (float32, bfloat16 or float16). */
  const fp4jit_tensor* occ_weight;
} fp4jit_gemm_epilogue;

FP4JIT_API void fp4jit_gemm_epilogue_init(fp4jit_gemm_epilogue* epilogue);

/* One GEMM of a linear layer: out [M, N] (float32, bfloat16 or float16) from A [M, K] and B
 * [N, K], the operands of `op` quantized with `recipe`. epilogue may be NULL (alpha 1). */
FP4JIT_API fp4jit_status fp4jit_gemm(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                     fp4jit_gemm_op op, const fp4jit_quantized* a,
                                     const fp4jit_quantized* b, int64_t m, int64_t n, int64_t k,
                                     const fp4jit_tensor* out, const fp4jit_gemm_epilogue* epilogue,
                                     void* stream);

/* Which kernel config fp4jit_gemm runs on this engine for (recipe, op, M x N x K, output dtype)
 * and why, e.g. "sg=1,bn=192,ps=4,rg=8m,pp=4,ts=1,sk=1 (heuristic)" (CUDA: tuned, heuristic or
 * FP4JIT_SM90_GEMM; host: tuned or default); "" on the reference backend. Written NUL-terminated
 * into buf; *needed (may be NULL) receives the bytes the text takes with its NUL. A buf of fewer
 * bytes (or NULL with size 0, to ask the length) gets FP4JIT_ERROR_INVALID_ARGUMENT, with *needed
 * set. */
FP4JIT_API fp4jit_status fp4jit_gemm_kernel(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                            fp4jit_gemm_op op, int64_t m, int64_t n, int64_t k,
                                            fp4jit_dtype out, char* buf, size_t size,
                                            size_t* needed);

/* The differentiable gradient estimator's factor f'(W * sf), elementwise over W [out, in], into
 * out (same shape); the recipe's w operand must have dge (msfp4). wgrad is multiplied by it. */
FP4JIT_API fp4jit_status fp4jit_dge(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                    const fp4jit_tensor* w, const fp4jit_tensor* out, void* stream);

/* ---- a linear layer's step, one call each way ------------------------------------------ */

/* Y = X W^T [+ bias], X [tokens, in], W [out, in]. The forward quantizes X and W (both copies
 * where a backward follows) and runs fprop; the backward quantizes dY and runs dgrad and wgrad,
 * reading X^T and W^T from the forward's `saved` buffer. Results equal those of quantize_pair
 * and gemm with the same seeds (offset 0) bit for bit. Recipes with OCC on x or DGE / Q-EMA on w
 * are refused with FP4JIT_ERROR_UNSUPPORTED: they take the per-operation calls. Buffers are the
 * caller's, in the backend's memory, 256-byte aligned, of the sizes below: `saved` lives from a
 * forward to its backward; each scratch buffer only until the call's work is done (on its stream).
 * A NULL scratch is taken from the library for the call (the CUDA backend: its own stream-ordered
 * workspace pool, kept mapped across calls; FP4JIT_WORKSPACE_KEEP_MB bounds what it keeps).
 */
typedef struct fp4jit_linear_buffers {
  int64_t saved_bytes;
  int64_t forward_scratch_bytes;
  int64_t backward_scratch_bytes;
} fp4jit_linear_buffers;

FP4JIT_API fp4jit_status fp4jit_linear_buffers_query(const fp4jit_recipe* recipe, int64_t tokens,
                                                     int64_t in, int64_t out,
                                                     fp4jit_linear_buffers* buffers);

/* y [tokens, out] (float32, bfloat16 or float16); bias [out] (float32, bfloat16 or float16) or
 * NULL; saved NULL: no backward follows. */
FP4JIT_API fp4jit_status fp4jit_linear_forward(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                               const fp4jit_tensor* x, const fp4jit_tensor* w,
                                               const fp4jit_tensor* bias, const fp4jit_tensor* y,
                                               uint64_t seed_x, uint64_t seed_w, void* saved,
                                               void* scratch, void* stream);

/* dx [tokens, in] and dw [out, in] (either may be NULL, not both) from dy [tokens, out]. */
FP4JIT_API fp4jit_status fp4jit_linear_backward(fp4jit_engine* engine, const fp4jit_recipe* recipe,
                                                int64_t in, const fp4jit_tensor* dy,
                                                const void* saved, void* scratch,
                                                const fp4jit_tensor* dx, const fp4jit_tensor* dw,
                                                uint64_t seed_dy, void* stream);
/* The same, and db [out] (float32, bfloat16 or float16; NULL: not computed): the bias gradient,
 * dY's column sums, taken from dY's quantize pass (no pass of its own where the kernel allows):
 * FP32 additions in a fixed order (64-row chunks of eight interleaved slices, see
 * templates/quantize/column_sums.cuh), rounded once to db's dtype; the same bits on every
 * backend. */
FP4JIT_API fp4jit_status fp4jit_linear_backward_bias(
    fp4jit_engine* engine, const fp4jit_recipe* recipe, int64_t in, const fp4jit_tensor* dy,
    const void* saved, void* scratch, const fp4jit_tensor* dx, const fp4jit_tensor* dw,
    const fp4jit_tensor* db, uint64_t seed_dy, void* stream);
/* The same, with dw = dW + dw_beta * dw (finite; dw required where dw_beta != 0): the wgrad
 * GEMM's epilogue reads dw as its C, so dw_beta = 1 accumulates the weight gradient into dw (a
 * main gradient summed over micro-batches, say) with no pass of its own; 0 is
 * fp4jit_linear_backward_bias. On sm90 the wgrad GEMM with C takes 1.12-1.24x its time without
 * C for a 16-bit dw (the staged kernel's TMA epilogue) and 1.09-1.28x for an FP32 one (the
 * register-store epilogue), at 8192x4096x4096 on an H200. */
FP4JIT_API fp4jit_status fp4jit_linear_backward_accumulate(
    fp4jit_engine* engine, const fp4jit_recipe* recipe, int64_t in, const fp4jit_tensor* dy,
    const void* saved, void* scratch, const fp4jit_tensor* dx, const fp4jit_tensor* dw,
    const fp4jit_tensor* db, float dw_beta, uint64_t seed_dy, void* stream);

/* ---- W quantized once for several steps ------------------------------------------------ */

/* The micro-batches of one optimizer step share W: a forward may quantize W's two copies (fprop's
 * W, dgrad's W^T) into a `weights` buffer that the caller keeps (in the backend's memory, 256-byte
 * aligned, of *weight_bytes), and the forwards after it read them from there instead of quantizing
 * W again. *saved_bytes: the `saved` buffer's size when W^T lives in `weights` (X^T only). */
FP4JIT_API fp4jit_status fp4jit_linear_weights_query(const fp4jit_recipe* recipe, int64_t tokens,
                                                     int64_t in, int64_t out, int64_t* saved_bytes,
                                                     int64_t* weight_bytes);

/* fp4jit_linear_forward with W's copies in `weights` (NULL: as fp4jit_linear_forward):
 * quantize_weights != 0 quantizes W into it (both copies, whether or not a backward follows, with
 * seed_w); 0 uses the copies an earlier call put there (W's data is not read, its shape is; the
 * caller vouches that W has not changed since). Every backward of a forward that used `weights`
 * reads W^T from it: fp4jit_linear_backward_weights. */
FP4JIT_API fp4jit_status fp4jit_linear_forward_weights(
    fp4jit_engine* engine, const fp4jit_recipe* recipe, const fp4jit_tensor* x,
    const fp4jit_tensor* w, const fp4jit_tensor* bias, const fp4jit_tensor* y, uint64_t seed_x,
    uint64_t seed_w, void* saved, void* scratch, void* weights, int quantize_weights, void* stream);

/* fp4jit_linear_backward_accumulate with W^T read from `weights` (its forward's; NULL: from
 * saved). */
FP4JIT_API fp4jit_status fp4jit_linear_backward_weights(
    fp4jit_engine* engine, const fp4jit_recipe* recipe, int64_t in, const fp4jit_tensor* dy,
    const void* saved, const void* weights, void* scratch, const fp4jit_tensor* dx,
    const fp4jit_tensor* dw, const fp4jit_tensor* db, float dw_beta, uint64_t seed_dy,
    void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FP4JIT_FP4JIT_H_ */
