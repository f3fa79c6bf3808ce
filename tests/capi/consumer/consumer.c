/* Quantizes a tensor with nvfp4 through the installed C API, multiplies it (fprop), and checks an
 * error path. Exits 0 on success. */
#include <fp4jit/fp4jit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                               \
  do {                                                                                            \
    fp4jit_status s_ = (call);                                                                    \
    if (s_ != FP4JIT_OK) {                                                                        \
      fprintf(stderr, "%s failed: %s: %s\n", #call, fp4jit_status_name(s_), fp4jit_last_error()); \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

enum { M = 32, N = 16, K = 64 };

static int quantize(fp4jit_engine* e, fp4jit_recipe* r, fp4jit_role role, float* data,
                    int64_t* shape, fp4jit_quantized* q) {
  fp4jit_layout l;
  CHECK(fp4jit_layout_query(r, role, shape[0], shape[1], &l));
  q->codes = malloc((size_t)l.code_bytes);
  q->codes_bytes = l.code_bytes;
  q->scales = malloc((size_t)l.scale_bytes);
  q->scales_bytes = l.scale_bytes;
  q->tensor_scale = malloc(sizeof(float));
  q->amax = NULL;
  q->residual_index = NULL;
  q->residual_value = NULL;
  q->residual_count = NULL;
  q->residual_capacity = 0;
  fp4jit_tensor t = {data, FP4JIT_FLOAT32, 2, shape, NULL, FP4JIT_DEVICE_CPU, 0};
  CHECK(fp4jit_quantize(e, r, role, &t, q, NULL, NULL));
  return 0;
}

int main(void) {
  printf("fp4jit %s (C ABI %d)\n", fp4jit_version(), fp4jit_abi_version());
  fp4jit_recipe* r = NULL;
  CHECK(fp4jit_recipe_parse("nvfp4", &r));
  printf("recipe %s\n", fp4jit_recipe_hash(r));
  fp4jit_engine_options o;
  fp4jit_engine_options_init(&o);
  o.backend = FP4JIT_BACKEND_REFERENCE;
  fp4jit_engine* e = NULL;
  CHECK(fp4jit_engine_create(&o, &e));

  static float x[M * K], w[N * K], y[M * N];
  for (int i = 0; i < M * K; ++i) x[i] = sinf(0.1f * (float)i);
  for (int i = 0; i < N * K; ++i) w[i] = cosf(0.07f * (float)i);
  int64_t xs[2] = {M, K}, ws[2] = {N, K}, ys[2] = {M, N};
  fp4jit_quantized qx, qw;
  if (quantize(e, r, FP4JIT_ROLE_X, x, xs, &qx) || quantize(e, r, FP4JIT_ROLE_W, w, ws, &qw))
    return 1;
  fp4jit_tensor yt = {y, FP4JIT_FLOAT32, 2, ys, NULL, FP4JIT_DEVICE_CPU, 0};
  CHECK(fp4jit_gemm(e, r, FP4JIT_FPROP, &qx, &qw, M, N, K, &yt, NULL, NULL));
  double err = 0, norm = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double exact = 0;
      for (int k = 0; k < K; ++k) exact += (double)x[i * K + k] * w[j * K + k];
      err += (y[i * N + j] - exact) * (y[i * N + j] - exact);
      norm += exact * exact;
    }
  printf("fprop relative error %.4f\n", sqrt(err / norm));
  if (!(sqrt(err / norm) < 0.25)) return 1;

  fp4jit_recipe* bad = NULL;
  if (fp4jit_recipe_parse("nvfp4:colour=blue", &bad) != FP4JIT_ERROR_RECIPE) return 1;
  printf("expected error: %s\n", fp4jit_last_error());

  free(qx.codes), free(qx.scales), free(qx.tensor_scale);
  free(qw.codes), free(qw.scales), free(qw.tensor_scale);
  fp4jit_engine_destroy(e);
  fp4jit_recipe_destroy(r);
  printf("ok\n");
  return 0;
}
