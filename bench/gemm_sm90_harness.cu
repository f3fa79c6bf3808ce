// Standalone harness of the sm90 FP4 GEMM templates (templates/gemm/sm90/): correctness against a
// double-precision reference of the dequantized operands, and timing.
//
//   nvcc -std=c++20 -O2 -gencode=arch=compute_90a,code=sm_90a -I. -Itemplates \
//        bench/gemm_sm90_harness.cu -o gemm_sm90_harness
//   gemm_sm90_harness selftest                     device expansion == host expansion
//   gemm_sm90_harness check [--quick]              every recipe x shape x kernel, FP32 output
//   gemm_sm90_harness bench --shapes MxNxK,...     TFLOP/s (BF16 output), heuristic config
//   options: --json FILE  --recipes msfp4,mxfp4,...  --iters N
//
// Correctness: outputs are poisoned (NaN) first; every element must be written (no NaN left)
// and the padding past the output untouched; the relative Frobenius error is taken over sampled
// rows (all columns, first and last rows included) against reference_samples (double).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gemm/sm90/heuristic.cuh"
#include "gemm/sm90/kernel.cuh"
#include "gemm_sm90_data.cuh"

using namespace fp4jit;
using namespace fp4jit::sm90;
using bench::Operand;
using bench::Recipe;

// ---- kernel configurations compiled into the harness --------------------------------------------
struct CfgMsN256 : GemmConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::ms;
  static constexpr int BLOCK_N = 256;
  static constexpr int kPackedStages = 4, kExpandedStages = 3;
};
struct CfgMsN256F32 : CfgMsN256 {
  static constexpr OutType kOut = OutType::f32;
};
struct CfgMsN256E3 : CfgMsN256 {};
struct CfgMsN256E2 : CfgMsN256 {
  static constexpr int kPackedStages = 5, kExpandedStages = 2;
};
template <int kA>
struct CfgMsN256E3Ab : CfgMsN256E3 {
  static constexpr int kAblate = kA;
};
struct CfgMsN128 : GemmConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::ms;
  static constexpr int BLOCK_N = 128;
  static constexpr int kPackedStages = 7, kExpandedStages = 4;
};
struct CfgMsN128P4F32 : CfgMsN128 {  // promotes every 4 K tiles (accuracy comparison)
  static constexpr int kPromoteTiles = 4;
  static constexpr OutType kOut = OutType::f32;
};
struct CfgMxN128 : GemmConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::mx;
  static constexpr int BLOCK_N = 128;
  static constexpr int kPackedStages = 7, kExpandedStages = 4;
};
struct CfgMxN128F32 : CfgMxN128 {
  static constexpr OutType kOut = OutType::f32;
};
template <int kA>
struct CfgMxN128Ab : CfgMxN128 {
  static constexpr int kAblate = kA;
};
struct CfgNv4N256 : GemmConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::nv;
  static constexpr ScaleCode kScaleCode = ScaleCode::ue4m3;
  static constexpr int kBBlockRows = 16;
  static constexpr int BLOCK_N = 256;
  static constexpr int kPackedStages = 8, kExpandedStages = 3;
  static constexpr bool kNvInterleave = true;
};
struct CfgNv4N256F32 : CfgNv4N256 {
  static constexpr OutType kOut = OutType::f32;
};
template <int kA>
struct CfgNv4N256Ab : CfgNv4N256 {
  static constexpr int kAblate = kA;
};
struct CfgNv4N128 : CfgNv4N256 {
  static constexpr int BLOCK_N = 128;
  static constexpr int kPackedStages = 10, kExpandedStages = 5;
};
struct CfgNv5N256 : CfgNv4N256 {
  static constexpr ScaleCode kScaleCode = ScaleCode::ue5m3_nan;
  static constexpr int kBBlockRows = 1;
};
struct CfgNv5N256F32 : CfgNv5N256 {
  static constexpr OutType kOut = OutType::f32;
};
template <class Base>
struct Sequential : Base {
  static constexpr bool kNvInterleave = false;
};
struct CfgNv5N128 : CfgNv5N256 {
  static constexpr int BLOCK_N = 128;
  static constexpr int kPackedStages = 10, kExpandedStages = 5;
};

// Two transform warpgroups: 512 threads, so ptxas compiles every role with at most 128 registers
// (launch allocation): only tiles whose accumulators fit, BLOCK_N = 128 without promotion.
template <class Base>
struct TwoTransform : Base {
  static constexpr int kTransformWGs = 2;
  static constexpr int BLOCK_N = 128;
  static constexpr int kTransformRegs = 64, kConsumerRegs = 192;
};
struct CfgMsT2 : TwoTransform<CfgMsN128> {};
struct CfgNv4T2 : TwoTransform<CfgNv4N128> {};
struct CfgNv5T2 : TwoTransform<CfgNv5N128> {};
struct CfgMsT2F32 : CfgMsT2 {
  static constexpr OutType kOut = OutType::f32;
};
struct CfgNv4T2F32 : CfgNv4T2 {
  static constexpr OutType kOut = OutType::f32;
};

struct KernelEntry {
  const char* name;
  ScaleKind kind;
  ScaleCode code;
  int b_block_rows;
  OutType out;
  int block_n;
  int promote_tiles;
  int smem;
  void (*prepare)();
  void (*launch)(const TmaDesc&, const TmaDesc&, const GemmParams&, int, cudaStream_t);
};

template <class Cfg>
KernelEntry entry(const char* name) {
  using T = GemmTraits<Cfg>;
  KernelEntry e{name,         Cfg::kKind,       Cfg::kScaleCode, Cfg::kBBlockRows, Cfg::kOut,
                Cfg::BLOCK_N, T::kPromoteTiles, T::kSmemBytes,   nullptr,          nullptr};
  e.prepare = [] {
    CUDA_CHECK(cudaFuncSetAttribute(gemm_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    T::kSmemBytes));
  };
  e.launch = [](const TmaDesc& ta, const TmaDesc& tb, const GemmParams& p, int grid,
                cudaStream_t s) {
    gemm_kernel<Cfg><<<grid, T::kThreads, T::kSmemBytes, s>>>(ta, tb, p);
  };
  return e;
}

std::vector<KernelEntry> all_kernels() {
  return {entry<CfgMsN256>("ms_n256"), entry<CfgMsN256F32>("ms_n256_f32"),
          entry<CfgMsN128>("ms_n128"), entry<CfgMsN128P4F32>("ms_n128_promote4_f32"),
          entry<CfgMxN128>("mx_n128"), entry<CfgMxN128F32>("mx_n128_f32"),
          entry<CfgNv4N256>("nv4_n256"), entry<CfgNv4N256F32>("nv4_n256_f32"),
          entry<CfgNv4N128>("nv4_n128"), entry<CfgNv5N256>("nv5_n256"),
          entry<CfgNv5N256F32>("nv5_n256_f32"), entry<CfgNv5N128>("nv5_n128"),
          // measurement variants (pipeline depth, ablations: results are wrong on purpose)
          entry<CfgMsN256E2>("ms_n256_e2"), entry<CfgMsN256E3Ab<1>>("ms_e3_noB"),
          entry<CfgMsN256E3Ab<2>>("ms_e3_noA"), entry<CfgMsN256E3Ab<3>>("ms_e3_noAB"),
          entry<CfgMsN256E3Ab<7>>("ms_e3_nomma"), entry<CfgMxN128Ab<1>>("mx_noB"),
          entry<CfgMxN128Ab<3>>("mx_noAB"), entry<CfgNv4N256Ab<1>>("nv4_noB"),
          entry<CfgNv4N256Ab<3>>("nv4_noAB"), entry<CfgNv4N256Ab<7>>("nv4_nomma"),
          // two transform warpgroups
          entry<CfgMsT2>("ms_t2"), entry<CfgNv4T2>("nv4_t2"), entry<CfgNv5T2>("nv5_t2"),
          entry<CfgMsT2F32>("ms_t2_f32"), entry<CfgNv4T2F32>("nv4_t2_f32"),
          // row-by-row nv B expansion (the previous default)
          entry<Sequential<CfgNv4N256>>("nv4_n256_seq"),
          entry<Sequential<CfgNv5N256>>("nv5_n256_seq")};
}

// ---- TMA descriptors --------------------------------------------------------------------------
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encoder() {
  static EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                cudaEnableDefault, &q));
    if (p == nullptr || q != cudaDriverEntryPointSuccess) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
      std::exit(2);
    }
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

// Packed codes [rows, K/2] bytes; box {packed_row bytes, box_rows}.
TmaDesc make_tma(const Operand& op, int box_rows, bool fp8_path) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(op.K / 2), static_cast<cuuint64_t>(op.rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(op.K / 2)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(fp8_path ? 64 : 32),
                             static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t estr[2] = {1, 1};
  const CUresult r =
      encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, op.codes, dims, strides, box, estr,
                CU_TENSOR_MAP_INTERLEAVE_NONE,
                fp8_path ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed (%d) rows=%d K=%d\n", static_cast<int>(r),
                 op.rows, op.K);
    std::exit(2);
  }
  TmaDesc d;
  static_assert(sizeof(TmaDesc) == sizeof(CUtensorMap));
  std::memcpy(&d, &map, sizeof d);
  return d;
}

// ---- helpers ------------------------------------------------------------------------------------
// Mapped host memory the kernels publish their progress into (GemmParams::progress), readable
// while a kernel hangs.
unsigned* g_progress_host = nullptr;
unsigned* g_progress_dev = nullptr;
bool g_use_progress = true;
void init_progress() {
  if (g_progress_host) return;
  CUDA_CHECK(cudaHostAlloc(&g_progress_host, sizeof(unsigned) * 4 * 1024, cudaHostAllocMapped));
  CUDA_CHECK(cudaHostGetDevicePointer(&g_progress_dev, g_progress_host, 0));
}
// Waits for the device; after `seconds` prints the published progress and exits (a hung kernel
// would otherwise block until the outer time limit and lose the log).
void sync_or_die(const char* what, double seconds = 15.0) {
  cudaEvent_t ev;
  CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(ev));
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    const cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) CUDA_CHECK(e);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) {
      std::printf(
          "HANG in %s after %.0f s; progress per CTA (expanded, issued, consumer0, consumer1):\n",
          what, seconds);
      if (g_progress_host)
        for (int b = 0; b < 8; ++b)
          std::printf("  cta %d: %u %u %u %u\n", b, g_progress_host[4 * b],
                      g_progress_host[4 * b + 1], g_progress_host[4 * b + 2],
                      g_progress_host[4 * b + 3]);
      std::fflush(stdout);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  cudaEventDestroy(ev);
}
int out_bytes(OutType t) {
  return t == OutType::f32 ? 4 : 2;
}

__global__ void fill_bytes(unsigned char* p, size_t n, unsigned char v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<size_t>(blockDim.x))
    p[i] = v;
}
// Output element (m, n) as double.
__device__ double out_at(const void* d, OutType t, long long idx) {
  if (t == OutType::f32) return static_cast<const float*>(d)[idx];
  const unsigned short h = static_cast<const unsigned short*>(d)[idx];
  if (t == OutType::bf16) return nx::bf16_to_float(h);
  return nx::f16_to_float(h);
}
// Counts non-finite outputs (poison left behind) and changed padding bytes.
__global__ void scan_output(const void* d, OutType t, long long count, const unsigned char* pad,
                            long long pad_n, unsigned long long* bad) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += gridDim.x * static_cast<long long>(blockDim.x))
    if (!isfinite(out_at(d, t, i))) atomicAdd(bad, 1ull);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < pad_n;
       i += gridDim.x * static_cast<long long>(blockDim.x))
    if (pad[i] != 0xFF) atomicAdd(bad + 1, 1ull);
}
__global__ void gather_out(const void* d, OutType t, long long ldd, const int* sm, const int* sn,
                           int count, double* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = out_at(d, t, static_cast<long long>(sm[i]) * ldd + sn[i]);
}

struct Shape {
  int M, N, K;
};
std::vector<Shape> parse_shapes(const std::string& s) {
  std::vector<Shape> v;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    Shape sh{};
    if (std::sscanf(s.substr(pos, end - pos).c_str(), "%dx%dx%d", &sh.M, &sh.N, &sh.K) == 3)
      v.push_back(sh);
    pos = end + 1;
  }
  return v;
}

struct Problem {
  Recipe recipe;
  Shape shape;
  Operand a, b;
  void release() {
    a.release();
    b.release();
  }
};

Problem make_problem(Recipe r, Shape s, std::uint64_t seed) {
  Problem p{r, s, {}, {}};
  p.a = bench::make_operand(r, true, s.M, s.K, seed);
  p.b = bench::make_operand(r, false, s.N, s.K, seed + 1000);
  return p;
}

struct Outputs {
  void* d = nullptr;
  size_t bytes = 0, pad = 4096;
  void* c = nullptr;
  float* bias = nullptr;
  float* ws = nullptr;
  int* counters = nullptr;
  size_t ws_bytes = 0;
};

GemmParams make_params(const Problem& pr, const KernelEntry& k, Outputs& o, int splits, float alpha,
                       float beta, bool bias) {
  GemmParams p{};
  p.M = pr.shape.M;
  p.N = pr.shape.N;
  p.K = pr.shape.K;
  p.a_scale = pr.a.scales;
  p.b_scale = pr.b.scales;
  p.a_scale_ld = pr.a.scale_ld;
  p.b_scale_ld = pr.b.scale_ld;
  p.a_row_scale = pr.a.row_scale;
  p.b_row_scale = pr.b.row_scale;
  p.alpha = alpha;
  p.beta = beta;
  p.tensor_factor = 1.0f / (pr.a.s_enc * pr.b.s_enc);
  p.bias = bias ? o.bias : nullptr;
  p.c = beta != 0.0f ? o.c : nullptr;
  p.d = o.d;
  p.ldc = p.ldd = pr.shape.N;
  p.splits = splits;
  p.workspace = o.ws;
  p.counters = o.counters;
  p.progress = g_use_progress ? g_progress_dev : nullptr;
  return p;
}

int num_sms() {
  static int n = [] {
    int v = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
    return v;
  }();
  return n;
}

const KernelEntry* find_kernel(const std::vector<KernelEntry>& ks, ScaleKind kind, ScaleCode code,
                               int bbr, OutType out, int block_n, int promote) {
  for (const auto& k : ks)
    if (k.kind == kind && (kind != ScaleKind::nv || (k.code == code && k.b_block_rows == bbr)) &&
        k.out == out && k.block_n == block_n && k.promote_tiles == promote)
      return &k;
  return nullptr;
}

// ---- outputs, samples, one run ------------------------------------------------------------------
void ensure_outputs(Outputs& o, const Shape& s, OutType t, int splits, int block_n) {
  const size_t bytes = static_cast<size_t>(s.M) * s.N * out_bytes(t);
  if (bytes + o.pad > o.bytes) {
    cudaFree(o.d);
    cudaFree(o.c);
    cudaFree(o.bias);
    o.bytes = bytes + o.pad;
    CUDA_CHECK(cudaMalloc(&o.d, o.bytes));
    CUDA_CHECK(cudaMalloc(&o.c, o.bytes));
    CUDA_CHECK(cudaMalloc(&o.bias, sizeof(float) * (s.N + 256) * 2));
  }
  const int tiles = ((s.M + 127) / 128) * ((s.N + block_n - 1) / block_n);
  const size_t ws = static_cast<size_t>(tiles) * splits * 128 * block_n * sizeof(float);
  if (splits > 1 && ws > o.ws_bytes) {
    cudaFree(o.ws);
    cudaFree(o.counters);
    o.ws_bytes = ws;
    CUDA_CHECK(cudaMalloc(&o.ws, ws));
    CUDA_CHECK(cudaMalloc(&o.counters, sizeof(int) * (tiles + 1024) * 4));
    CUDA_CHECK(cudaMemset(o.counters, 0, sizeof(int) * (tiles + 1024) * 4));
  }
}

__global__ void fill_random(float* p, long long n, std::uint64_t seed, float scale) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = bench::gauss(seed, static_cast<std::uint64_t>(i)) * scale;
}
__global__ void fill_random_out(void* p, OutType t, long long n, std::uint64_t seed, float scale) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float v = bench::gauss(seed, static_cast<std::uint64_t>(i)) * scale;
  if (t == OutType::f32)
    static_cast<float*>(p)[i] = v;
  else if (t == OutType::bf16)
    static_cast<unsigned short*>(p)[i] = nx::float_to_bf16(v);
  else
    static_cast<unsigned short*>(p)[i] =
        static_cast<unsigned short>(__half_as_ushort(__float2half_rn(v)));
}

struct Samples {
  int count = 0;
  int* m = nullptr;
  int* n = nullptr;
  double* ref = nullptr;  // reference GEMM (no epilogue)
  double* out = nullptr;
  std::vector<int> hm, hn;
  std::vector<double> href;
  void release() {
    cudaFree(m);
    cudaFree(n);
    cudaFree(ref);
    cudaFree(out);
    *this = Samples{};
  }
};

Samples make_samples(const Problem& pr, int rand_rows, std::uint64_t seed) {
  std::vector<int> rows;
  const int M = pr.shape.M;
  for (int r = 0; r < std::min(M, 8); ++r) rows.push_back(r);
  for (int r = std::max(0, M - 8); r < M; ++r) rows.push_back(r);
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (int i = 0; i < rand_rows; ++i) rows.push_back(static_cast<int>(rng() % M));
  if (rand_rows < 0)
    for (int r = 0; r < M; ++r) rows.push_back(r);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  Samples s;
  for (int r : rows)
    for (int c = 0; c < pr.shape.N; ++c) {
      s.hm.push_back(r);
      s.hn.push_back(c);
    }
  s.count = static_cast<int>(s.hm.size());
  CUDA_CHECK(cudaMalloc(&s.m, sizeof(int) * s.count));
  CUDA_CHECK(cudaMalloc(&s.n, sizeof(int) * s.count));
  CUDA_CHECK(cudaMalloc(&s.ref, sizeof(double) * s.count));
  CUDA_CHECK(cudaMalloc(&s.out, sizeof(double) * s.count));
  CUDA_CHECK(cudaMemcpy(s.m, s.hm.data(), sizeof(int) * s.count, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(s.n, s.hn.data(), sizeof(int) * s.count, cudaMemcpyHostToDevice));
  const bench::RecipeInfo info = bench::recipe_info(pr.recipe);
  bench::reference_samples<<<(s.count + 127) / 128, 128>>>(pr.a, pr.b, info.kind, info.code, s.m,
                                                           s.n, s.count, s.ref);
  CUDA_CHECK(cudaGetLastError());
  s.href.resize(s.count);
  CUDA_CHECK(cudaMemcpy(s.href.data(), s.ref, sizeof(double) * s.count, cudaMemcpyDeviceToHost));
  return s;
}

struct CheckResult {
  double rel_err = 0, max_abs_rel = 0;
  unsigned long long unwritten = 0, pad_changed = 0;
};

void launch(const Problem& pr, const KernelEntry& k, const GemmParams& p, int grid,
            cudaStream_t st = nullptr) {
  const bool fp8 = k.kind != ScaleKind::nv;
  k.launch(make_tma(pr.a, 128, fp8), make_tma(pr.b, k.block_n, fp8), p, grid, st);
}

CheckResult run_check(const Problem& pr, const KernelEntry& k, int splits, float alpha, float beta,
                      bool bias, Outputs& o, const Samples& smp) {
  k.prepare();
  ensure_outputs(o, pr.shape, k.out, splits, k.block_n);
  const long long count = static_cast<long long>(pr.shape.M) * pr.shape.N;
  fill_bytes<<<1024, 256>>>(static_cast<unsigned char*>(o.d), o.bytes, 0xFF);
  if (beta != 0.0f)
    fill_random_out<<<static_cast<unsigned>((count + 255) / 256), 256>>>(o.c, k.out, count, 4242,
                                                                         1.0f);
  if (bias) fill_random<<<(pr.shape.N + 255) / 256, 256>>>(o.bias, pr.shape.N, 777, 1.0f);
  const GemmParams p = make_params(pr, k, o, splits, alpha, beta, bias);
  const int tiles = ((pr.shape.M + 127) / 128) * ((pr.shape.N + k.block_n - 1) / k.block_n);
  const int grid = std::min(tiles * splits, num_sms());
  if (g_progress_host) std::memset(g_progress_host, 0, sizeof(unsigned) * 4 * 1024);
  launch(pr, k, p, grid);
  CUDA_CHECK(cudaGetLastError());
  sync_or_die(k.name);
  CUDA_CHECK(cudaDeviceSynchronize());
  CheckResult r;
  unsigned long long* bad;
  CUDA_CHECK(cudaMalloc(&bad, 2 * sizeof(unsigned long long)));
  CUDA_CHECK(cudaMemset(bad, 0, 2 * sizeof(unsigned long long)));
  const size_t used = static_cast<size_t>(count) * out_bytes(k.out);
  scan_output<<<1024, 256>>>(o.d, k.out, count, static_cast<unsigned char*>(o.d) + used,
                             static_cast<long long>(o.bytes - used), bad);
  unsigned long long hb[2];
  CUDA_CHECK(cudaMemcpy(hb, bad, sizeof hb, cudaMemcpyDeviceToHost));
  cudaFree(bad);
  r.unwritten = hb[0];
  r.pad_changed = hb[1];
  gather_out<<<(smp.count + 255) / 256, 256>>>(o.d, k.out, pr.shape.N, smp.m, smp.n, smp.count,
                                               smp.out);
  std::vector<double> out(smp.count), cvals(smp.count, 0.0);
  CUDA_CHECK(cudaMemcpy(out.data(), smp.out, sizeof(double) * smp.count, cudaMemcpyDeviceToHost));
  if (beta != 0.0f) {
    gather_out<<<(smp.count + 255) / 256, 256>>>(o.c, k.out, pr.shape.N, smp.m, smp.n, smp.count,
                                                 smp.out);
    CUDA_CHECK(
        cudaMemcpy(cvals.data(), smp.out, sizeof(double) * smp.count, cudaMemcpyDeviceToHost));
  }
  std::vector<float> hbias(pr.shape.N, 0.0f);
  if (bias)
    CUDA_CHECK(
        cudaMemcpy(hbias.data(), o.bias, sizeof(float) * pr.shape.N, cudaMemcpyDeviceToHost));
  double num = 0, den = 0, maxrel = 0, refmax = 0;
  for (int i = 0; i < smp.count; ++i) refmax = std::max(refmax, std::fabs(smp.href[i]));
  for (int i = 0; i < smp.count; ++i) {
    const double want = alpha * smp.href[i] + hbias[smp.hn[i]] + beta * cvals[i];
    const double d = out[i] - want;
    num += d * d;
    den += want * want;
    if (!std::isfinite(out[i])) num = INFINITY;
    maxrel = std::max(maxrel, std::fabs(d) / (refmax > 0 ? refmax : 1.0));
  }
  r.rel_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  r.max_abs_rel = maxrel;
  return r;
}

// Median time in ms over `iters` launches, rotating through the problem sets.
double time_kernel(const std::vector<Problem>& sets, const KernelEntry& k, int splits, Outputs& o,
                   int iters) {
  k.prepare();
  ensure_outputs(o, sets[0].shape, k.out, splits, k.block_n);
  const Shape& s = sets[0].shape;
  const int tiles = ((s.M + 127) / 128) * ((s.N + k.block_n - 1) / k.block_n);
  const int grid = std::min(tiles * splits, num_sms());
  const bool fp8 = k.kind != ScaleKind::nv;
  std::vector<TmaDesc> ta, tb;
  std::vector<GemmParams> ps;
  for (const Problem& pr : sets) {
    ta.push_back(make_tma(pr.a, 128, fp8));
    tb.push_back(make_tma(pr.b, k.block_n, fp8));
    ps.push_back(make_params(pr, k, o, splits, 1.0f, 0.0f, false));
    ps.back().progress = nullptr;
  }
  for (int i = 0; i < 3; ++i)
    k.launch(ta[i % sets.size()], tb[i % sets.size()], ps[i % sets.size()], grid, nullptr);
  CUDA_CHECK(cudaGetLastError());
  sync_or_die(k.name);
  std::vector<cudaEvent_t> ev(iters + 1);
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  CUDA_CHECK(cudaEventRecord(ev[0]));
  for (int i = 0; i < iters; ++i) {
    const size_t j = i % sets.size();
    k.launch(ta[j], tb[j], ps[j], grid, nullptr);
    CUDA_CHECK(cudaEventRecord(ev[i + 1]));
  }
  sync_or_die(k.name, 30.0);
  CUDA_CHECK(cudaEventSynchronize(ev[iters]));
  CUDA_CHECK(cudaGetLastError());
  std::vector<float> t(iters);
  for (int i = 0; i < iters; ++i) CUDA_CHECK(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]));
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[iters / 2];
}

// ---- device self-test of the expansion helpers
// ----------------------------------------------------
__global__ void selftest_kernel(const unsigned* in, unsigned* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned w = in[i];
  unsigned a, b, c, d, lo, hi;
  e2m1x8_to_e4m3_eo(w, a, b);
  e4m3_lut(i % kLutEntries, lo, hi);
  e2m1x8_to_e4m3_lut(w, lo, hi, c, d);
  unsigned f0, f1, g0, g1;
  e2m1x4_to_16bit<false>(w & 0xFFFFu, f0, f1);
  e2m1x4_to_16bit<true>(w >> 16, g0, g1);
  unsigned* o = out + 8 * static_cast<size_t>(i);
  o[0] = a;
  o[1] = b;
  o[2] = c;
  o[3] = d;
  o[4] = f0;
  o[5] = f1;
  o[6] = g0;
  o[7] = g1;
}

int selftest() {
  const int n = 1 << 16;
  std::vector<unsigned> in(n), out(8 * static_cast<size_t>(n));
  std::mt19937 rng(1);
  for (auto& v : in) v = rng();
  unsigned *din, *dout;
  CUDA_CHECK(cudaMalloc(&din, sizeof(unsigned) * n));
  CUDA_CHECK(cudaMalloc(&dout, sizeof(unsigned) * 8 * n));
  CUDA_CHECK(cudaMemcpy(din, in.data(), sizeof(unsigned) * n, cudaMemcpyHostToDevice));
  selftest_kernel<<<n / 256, 256>>>(din, dout, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(out.data(), dout, sizeof(unsigned) * 8 * n, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned w = in[i];
    unsigned h[8], lo, hi;
    e2m1x8_to_e4m3_eo(w, h[0], h[1]);
    e4m3_lut(i % kLutEntries, lo, hi);
    e2m1x8_to_e4m3_lut(w, lo, hi, h[2], h[3]);
    e2m1x4_to_16bit<false>(w & 0xFFFFu, h[4], h[5]);
    e2m1x4_to_16bit<true>(w >> 16, h[6], h[7]);
    for (int j = 0; j < 8; ++j) bad += h[j] != out[8 * static_cast<size_t>(i) + j];
  }
  std::printf("selftest: %d mismatches over %d words (device prmt/expansion vs host)\n", bad, n);
  cudaFree(din);
  cudaFree(dout);
  return bad == 0 ? 0 : 1;
}

// ---- modes
// -----------------------------------------------------------------------------------------
struct JsonOut {
  std::string s = "[\n";
  bool first = true;
  void add(const std::string& obj) {
    s += (first ? "" : ",\n") + obj;
    first = false;
  }
  void write(const std::string& path) {
    if (path.empty()) return;
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return;
    std::fprintf(f, "%s\n]\n", s.c_str());
    std::fclose(f);
  }
};

std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

Recipe parse_recipe(const std::string& s) {
  for (Recipe r : {Recipe::msfp4, Recipe::mxfp4, Recipe::tetrajet, Recipe::nvfp4, Recipe::ue5m3,
                   Recipe::mx_stress})
    if (s == bench::recipe_info(r).name) return r;
  std::fprintf(stderr, "unknown recipe %s\n", s.c_str());
  std::exit(2);
}
std::vector<Recipe> parse_recipes(const std::string& s) {
  std::vector<Recipe> v;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    v.push_back(parse_recipe(s.substr(pos, end - pos)));
    pos = end + 1;
  }
  return v;
}

// Kernels that compute recipe r (FP32 output variants first).
std::vector<const KernelEntry*> kernels_for(const std::vector<KernelEntry>& ks, Recipe r,
                                            bool f32) {
  const bench::RecipeInfo info = bench::recipe_info(r);
  std::vector<const KernelEntry*> v;
  for (const auto& k : ks) {
    if (k.kind != info.kind || (k.out == OutType::f32) != f32) continue;
    if (k.kind == ScaleKind::nv && (k.code != info.code || k.b_block_rows != info.b_block_rows))
      continue;
    v.push_back(&k);
  }
  return v;
}

int run_checks(const std::vector<Recipe>& recipes, const std::vector<Shape>& shapes, JsonOut& js,
               int rand_rows) {
  const auto ks = all_kernels();
  Outputs o;
  int failures = 0;
  std::printf("%-10s %-22s %-16s %6s %10s %10s %8s %6s\n", "recipe", "kernel", "shape", "splits",
              "rel_err", "max_rel", "unwrit", "pad");
  for (Recipe r : recipes) {
    for (const Shape& s : shapes) {
      Problem pr = make_problem(r, s, 12345 + s.M * 7 + s.N * 13 + s.K);
      Samples smp = make_samples(pr, rand_rows, 99);
      for (const KernelEntry* k : kernels_for(ks, r, true)) {
        const GemmChoice ch = choose_gemm(k->kind, s.M, s.N, s.K, num_sms());
        std::vector<int> split_list{1};
        if (ch.splits > 1) split_list.push_back(ch.splits);
        const int kt =
            (s.K + (k->kind == ScaleKind::nv ? 63 : 127)) / (k->kind == ScaleKind::nv ? 64 : 128);
        if (kt >= 3 && ch.splits == 1) split_list.push_back(3);
        for (int splits : split_list) {
          const CheckResult c = run_check(pr, *k, splits, 1.0f, 0.0f, false, o, smp);
          const bool ok = c.rel_err <= 1e-4 && c.unwritten == 0 && c.pad_changed == 0;
          failures += !ok;
          const std::string sh = fmt("%dx%dx%d", s.M, s.N, s.K);
          std::printf("%-10s %-22s %-16s %6d %10.3e %10.3e %8llu %6llu %s\n",
                      bench::recipe_info(r).name, k->name, sh.c_str(), splits, c.rel_err,
                      c.max_abs_rel, c.unwritten, c.pad_changed, ok ? "ok" : "FAIL");
          js.add(
              fmt("{\"mode\":\"check\",\"recipe\":\"%s\",\"kernel\":\"%s\",\"shape\":\"%s\","
                  "\"splits\":%d,\"rel_err\":%.4e,"
                  "\"max_rel\":%.4e,\"unwritten\":%llu,\"pad_changed\":%llu,\"ok\":%s}",
                  bench::recipe_info(r).name, k->name, sh.c_str(), splits, c.rel_err, c.max_abs_rel,
                  c.unwritten, c.pad_changed, ok ? "true" : "false"));
        }
      }
      // Epilogue: alpha, bias, beta * C, FP32 and the 16-bit outputs of the same recipe.
      for (bool f32 : {true, false}) {
        for (const KernelEntry* k : kernels_for(ks, r, f32)) {
          const CheckResult c = run_check(pr, *k, 1, 0.75f, 0.5f, true, o, smp);
          const double tol = f32 ? 1e-4 : 8e-3;
          const bool ok = c.rel_err <= tol && c.unwritten == 0 && c.pad_changed == 0;
          failures += !ok;
          const std::string sh = fmt("%dx%dx%d", s.M, s.N, s.K);
          std::printf(
              "%-10s %-22s %-16s %6s %10.3e %10.3e %8llu %6llu %s (epilogue: alpha, bias, "
              "beta*C)\n",
              bench::recipe_info(r).name, k->name, sh.c_str(), "1", c.rel_err, c.max_abs_rel,
              c.unwritten, c.pad_changed, ok ? "ok" : "FAIL");
          js.add(fmt(
              "{\"mode\":\"epilogue\",\"recipe\":\"%s\",\"kernel\":\"%s\",\"shape\":\"%s\",\"rel_"
              "err\":%.4e,\"ok\":%s}",
              bench::recipe_info(r).name, k->name, sh.c_str(), c.rel_err, ok ? "true" : "false"));
          break;  // one kernel per output type
        }
      }
      smp.release();
      pr.release();
    }
  }
  std::printf("checks: %d failure(s)\n", failures);
  return failures;
}

std::vector<std::string>
    g_kernel_names;  // bench --kernels: time these kernels (splits 1) instead of the heuristic's

int run_bench(const std::vector<Recipe>& recipes, const std::vector<Shape>& shapes, JsonOut& js,
              int iters, bool variants) {
  const auto ks = all_kernels();
  Outputs o;
  std::printf("%-10s %-12s %-18s %6s %9s %9s %10s\n", "recipe", "kernel", "shape", "splits", "ms",
              "TFLOP/s", "rel_err");
  for (Recipe r : recipes) {
    const bench::RecipeInfo info = bench::recipe_info(r);
    for (const Shape& s : shapes) {
      // Rotate enough operand sets to defeat the 50 MB L2.
      const double set_bytes = (static_cast<double>(s.M) + s.N) * s.K / 2;
      const int nsets = std::max(1, std::min(8, static_cast<int>(std::ceil(150e6 / set_bytes))));
      std::vector<Problem> sets;
      for (int i = 0; i < nsets; ++i) sets.push_back(make_problem(r, s, 1000 + 17 * i + s.K));
      Samples smp = make_samples(sets[0], 4, 5);
      const GemmChoice ch = choose_gemm(info.kind, s.M, s.N, s.K, num_sms());
      std::vector<std::pair<int, int>> cands{{ch.block_n, ch.splits}};
      if (variants) {
        for (int bn : {128, 256})
          if (bn != ch.block_n) cands.push_back({bn, 1});
        if (ch.splits == 1 && s.M * static_cast<long long>(s.N) <= 1024LL * 4096)
          cands.push_back({ch.block_n, 2});
      }
      std::vector<std::pair<const KernelEntry*, int>> runs;
      if (!g_kernel_names.empty()) {
        for (const auto& name : g_kernel_names)
          for (const auto& k : ks)
            if (name == k.name && k.kind == info.kind &&
                (k.kind != ScaleKind::nv ||
                 (k.code == info.code && k.b_block_rows == info.b_block_rows)))
              runs.push_back({&k, 1});
      } else {
        for (auto [bn, splits] : cands) {
          const KernelEntry* k = find_kernel(ks, info.kind, info.code, info.b_block_rows,
                                             OutType::bf16, bn, info.kind == ScaleKind::mx ? 1 : 0);
          if (k) runs.push_back({k, splits});
        }
      }
      for (auto [k, splits] : runs) {
        const int bn = k->block_n;
        const CheckResult c = run_check(sets[0], *k, splits, 1.0f, 0.0f, false, o, smp);
        const double ms = time_kernel(sets, *k, splits, o, iters);
        const double tf = 2.0 * s.M * static_cast<double>(s.N) * s.K / (ms * 1e-3) / 1e12;
        const std::string sh = fmt("%dx%dx%d", s.M, s.N, s.K);
        const bool chosen = bn == ch.block_n && splits == ch.splits;
        std::printf("%-10s %-12s %-18s %6d %9.4f %9.1f %10.2e%s%s\n", info.name, k->name,
                    sh.c_str(), splits, ms, tf, c.rel_err, chosen ? " *" : "",
                    c.unwritten ? " UNWRITTEN" : "");
        js.add(
            fmt("{\"mode\":\"bench\",\"recipe\":\"%s\",\"kernel\":\"%s\",\"shape\":\"%s\","
                "\"splits\":%d,\"ms\":%.5f,"
                "\"tflops\":%.2f,\"rel_err_bf16\":%.3e,\"heuristic\":%s,\"sets\":%d}",
                info.name, k->name, sh.c_str(), splits, ms, tf, c.rel_err,
                chosen ? "true" : "false", nsets));
      }
      smp.release();
      for (auto& p : sets) p.release();
    }
  }
  return 0;
}

// Writes a small problem's operands, sampled reference and output for offline diagnosis:
// <dir>/dump_<recipe>_<kernel>.bin = header {M, N, K, kind} + A codes + B codes + A scales +
// B scales (uint8 codes or float row scales) + reference (double, M x N) + output (float, M x N).
int run_dump(const std::vector<Recipe>& recipes, const std::string& dir) {
  const auto ks = all_kernels();
  Outputs o;
  for (Recipe r : recipes) {
    const Shape s{128, 256, 256};
    Problem pr = make_problem(r, s, 4321);
    Samples smp = make_samples(pr, -1, 1);  // every row
    for (const KernelEntry* k : kernels_for(ks, r, true)) {
      const CheckResult c = run_check(pr, *k, 1, 1.0f, 0.0f, false, o, smp);
      std::printf("dump %s %s rel_err %.3e\n", bench::recipe_info(r).name, k->name, c.rel_err);
      const std::string path = dir + "/dump_" + bench::recipe_info(r).name + "_" + k->name + ".bin";
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) continue;
      const int hdr[4] = {s.M, s.N, s.K, static_cast<int>(k->kind)};
      std::fwrite(hdr, sizeof hdr, 1, f);
      auto put = [&](const void* dptr, size_t bytes) {
        std::vector<unsigned char> h(bytes);
        if (dptr) CUDA_CHECK(cudaMemcpy(h.data(), dptr, bytes, cudaMemcpyDeviceToHost));
        std::fwrite(h.data(), 1, bytes, f);
      };
      put(pr.a.codes, static_cast<size_t>(s.M) * s.K / 2);
      put(pr.b.codes, static_cast<size_t>(s.N) * s.K / 2);
      if (k->kind == ScaleKind::ms) {
        put(pr.a.row_scale, sizeof(float) * s.M);
        put(pr.b.row_scale, sizeof(float) * s.N);
      } else {
        const int blk = k->kind == ScaleKind::mx ? 32 : 16;
        put(pr.a.scales,
            static_cast<size_t>((s.M + pr.a.block_rows - 1) / pr.a.block_rows) * (s.K / blk));
        put(pr.b.scales,
            static_cast<size_t>((s.N + pr.b.block_rows - 1) / pr.b.block_rows) * (s.K / blk));
      }
      std::fwrite(smp.href.data(), sizeof(double), smp.href.size(), f);
      std::vector<float> out(static_cast<size_t>(s.M) * s.N);
      CUDA_CHECK(cudaMemcpy(out.data(), o.d, sizeof(float) * out.size(), cudaMemcpyDeviceToHost));
      std::fwrite(out.data(), sizeof(float), out.size(), f);
      std::fclose(f);
    }
    smp.release();
    pr.release();
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: %s selftest|check|bench [--shapes ...] [--recipes ...] [--json f] [--iters n]\n",
        argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argv[1];
  std::string shapes_s, recipes_s = "msfp4,mxfp4,tetrajet,nvfp4,ue5m3", json;
  int iters = 30, rand_rows = 24;
  bool variants = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shapes" && i + 1 < argc)
      shapes_s = argv[++i];
    else if (a == "--recipes" && i + 1 < argc)
      recipes_s = argv[++i];
    else if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--iters" && i + 1 < argc)
      iters = std::atoi(argv[++i]);
    else if (a == "--rows" && i + 1 < argc)
      rand_rows = std::atoi(argv[++i]);
    else if (a == "--variants")
      variants = true;
    else if (a == "--kernels" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t pos = 0;
      while (pos < v.size()) {
        size_t end = v.find(',', pos);
        if (end == std::string::npos) end = v.size();
        g_kernel_names.push_back(v.substr(pos, end - pos));
        pos = end + 1;
      }
    }
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  init_progress();
  JsonOut js;
  int rc = 0;
  if (mode == "selftest") {
    rc = selftest();
  } else if (mode == "check") {
    if (shapes_s.empty()) shapes_s = "1000x3000x4096,8191x129x2048,256x512x256,384x4096x8192";
    rc = run_checks(parse_recipes(recipes_s), parse_shapes(shapes_s), js, rand_rows);
  } else if (mode == "dump") {
    rc = run_dump(parse_recipes(recipes_s), json.empty() ? "." : json);
  } else if (mode == "bench") {
    g_use_progress =
        false;  // host-mapped progress stores would perturb the timed (and profiled) runs
    if (shapes_s.empty()) shapes_s = "8192x4096x4096";
    rc = run_bench(parse_recipes(recipes_s), parse_shapes(shapes_s), js, iters, variants);
  }
  js.write(json);
  return rc;
}
