// CudaBackend::gemm: plan (gemm_plan.hpp), the two uint8 TMA tensor maps of the packed operand
// codes (cuTensorMapEncodeTiled), the kernel's dynamic shared-memory limit (cuFuncSetAttribute),
// split-K scratch and counters (stream-ordered), the launch on the caller's stream, then the OCC
// compensation kernels when asked for. At most one memset per call clears split-K's tile
// counters; the window flag of the staged and swapped paths is never cleared (a mark per call).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "core/log.hpp"
#include "gemm/params.cuh"
#include "gemm/sm90/staged_geometry.cuh"
#include "runtime/cuda/cuda_backend.hpp"
#include "runtime/cuda/gemm_plan.hpp"

namespace fp4jit::cuda {

namespace {

// A new nonzero mark for each GEMM launch with a window flag (GemmParams::fallback_mark): a Weyl
// sequence from a start that differs between processes, so consecutive calls differ and the
// values stale scratch usually holds (zero, small integers, common float bits, an earlier
// process's marks) come up only by chance.
unsigned next_fallback_mark() {
  static std::atomic<unsigned> state{static_cast<unsigned>(
      static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count()) *
      0x2545F491ull)};
  unsigned m = 0u;
  while (m == 0u) m = state.fetch_add(0x9E3779B9u, std::memory_order_relaxed) + 0x9E3779B9u;
  return m;
}

CUdeviceptr dptr(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

void check_alignment(const void* p, std::size_t alignment, std::string_view what) {
  if (p != nullptr && reinterpret_cast<std::uintptr_t>(p) % alignment != 0)
    fail(ErrorKind::invalid_argument, "gemm: {} must be {}-byte aligned (got {})", what, alignment,
         p);
}

// Packed codes [rows, row_bytes] as a 2D uint8 tensor; box {box_bytes, box_rows}.
CUtensorMap tensor_map(const Driver& d, const void* codes, std::int64_t row_bytes,
                       std::int64_t rows, int box_bytes, int box_rows, int swizzle) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(row_bytes), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_bytes), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUtensorMapSwizzle sw = swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                : CU_TENSOR_MAP_SWIZZLE_NONE;
  check(d.tensor_map_encode_tiled(
            &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(codes), dims, strides, box,
            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled (GEMM operand codes)");
  return map;
}

// D [M, ldd] of the output type as the staged kernel's TMA-store target: box {128 bytes of a row,
// 64 rows}, 128-byte swizzle (templates/gemm/sm90/epilogue.cuh, epilogue_store_tma). Returns false
// (nothing encoded) where TMA cannot address D: a base not 16-byte aligned or a row pitch not a
// multiple of 16 bytes.
bool output_tensor_map(const Driver& d, const gemm::GemmParams& p, DType out, CUtensorMap* map) {
  const std::int64_t bytes = static_cast<std::int64_t>(dtype_size(out));
  const std::int64_t pitch = p.ldd * bytes;
  if (p.d == nullptr || reinterpret_cast<std::uintptr_t>(p.d) % 16 != 0 || pitch % 16 != 0 ||
      pitch >= (std::int64_t{1} << 40) || p.M < 1 || p.N < 1)
    return false;
  const CUtensorMapDataType type = out == DType::f32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : out == DType::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                       : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(p.N), static_cast<cuuint64_t>(p.M)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(pitch)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(128 / bytes), 64};
  const cuuint32_t element_strides[2] = {1, 1};
  check(
      d.tensor_map_encode_tiled(map, type, 2, p.d, dims, strides, box, element_strides,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
      "cuTensorMapEncodeTiled (GEMM output)");
  return true;
}

std::int64_t stride_of(const TensorView& t) {
  return t.row_stride == 0 ? t.cols : t.row_stride;
}

gemm::GemmParams gemm_params(const GemmPlan& plan, const GemmLayouts& l, const QuantizedView& a,
                             const QuantizedView& b, const GemmShape& shape, const TensorView& out,
                             const GemmEpilogue& e) {
  gemm::GemmParams p{};
  p.M = static_cast<int>(shape.m);
  p.N = static_cast<int>(shape.n);
  p.K = static_cast<int>(shape.k);
  switch (plan.spec.path) {
    case codegen::GemmPath::ms:
      p.a_row_scale = static_cast<const float*>(a.scales);
      p.b_row_scale = static_cast<const float*>(b.scales);
      break;
    case codegen::GemmPath::ms_grad:
      p.a_row_scale = static_cast<const float*>(a.scales);  // one per-tensor scale
      p.b_col_scale = static_cast<const float*>(b.scales);  // [K]
      break;
    case codegen::GemmPath::mx:
    case codegen::GemmPath::nv:
      p.a_scale = static_cast<const unsigned char*>(a.scales);
      p.b_scale = static_cast<const unsigned char*>(b.scales);
      p.a_scale_ld = static_cast<int>(l.a.scale_cols);
      p.b_scale_ld = static_cast<int>(l.b.scale_cols);
      if (l.a.two_level) p.a_tensor_scale = a.tensor_scale;
      if (l.b.two_level) p.b_tensor_scale = b.tensor_scale;
      break;
  }
  p.alpha = e.alpha;
  p.beta = e.beta;
  p.tensor_factor = 1.0f;
  p.bias = e.bias;
  p.bias_type = static_cast<int>(e.bias_dtype == DType::bf16  ? gemm::BiasType::bf16
                                 : e.bias_dtype == DType::f16 ? gemm::BiasType::f16
                                                              : gemm::BiasType::f32);
  if (e.beta != 0.0f) {
    p.c = e.c.data;
    p.ldc = stride_of(e.c);
  }
  p.d = out.data;
  p.ldd = stride_of(out);
  p.splits = plan.choice.splits;
  if (plan.direct) {
    p.a_codes = static_cast<const unsigned char*>(a.codes);
    p.b_codes = static_cast<const unsigned char*>(b.codes);
    p.a_code_ld = plan.a_row_bytes;
    p.b_code_ld = plan.b_row_bytes;
    const char* strict = std::getenv("FP4JIT_DIRECT_STRICT");
    p.direct_strict = strict != nullptr && std::string_view(strict) == "1" ? 1 : 0;
  }
  return p;
}

}  // namespace

void CudaBackend::gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a,
                       const QuantizedView& b, const GemmShape& shape, const TensorView& out,
                       const GemmEpilogue& epilogue, void* stream) {
  const GemmLayouts l = gemm_layouts(recipe, op, shape);
  if (shape.m > 0x7fffffff)
    fail(ErrorKind::unsupported, "CUDA GEMM: M = {} exceeds 2^31 - 1", shape.m);
  for (const auto& [p, what] : {std::pair<const void*, const char*>{a.codes, "operand A codes"},
                                {b.codes, "operand B codes"},
                                {a.scales, "operand A scales"},
                                {b.scales, "operand B scales"},
                                {out.data, "output"}})
    check_device_pointer(p, what, stream);
  check_alignment(a.codes, 16, "operand A codes (TMA)");
  check_alignment(b.codes, 16, "operand B codes (TMA)");
  check_alignment(a.scales, l.a.scale_is_code ? 1 : 4, "operand A scales");
  check_alignment(b.scales, l.b.scale_is_code ? 1 : 4, "operand B scales");
  check_alignment(out.data, dtype_size(out.dtype), "output");
  check_alignment(epilogue.bias, dtype_size(epilogue.bias_dtype), "bias");

  const std::optional<codegen::GemmChoice> choice = gemm_choice(recipe, op, shape, out.dtype);
  launch_gemm(recipe, op, a, b, shape, out, epilogue, stream, choice ? &*choice : nullptr);
}

std::optional<codegen::GemmChoice> CudaBackend::gemm_choice(const Recipe& recipe, GemmOp op,
                                                            const GemmShape& shape, DType dtype,
                                                            const char** source) {
  const char* from = "heuristic";
  std::optional<codegen::GemmChoice> tuned = tuned_gemm_choice(recipe, op, shape, dtype);
  if (tuned) from = "tuned";
  if (!tuned && info_.target == "sm_90a") {
    // FP4JIT_SM90_GEMM=fused|staged|swap overrides the heuristic's kernel, or a whole choice in the
    // tuner's text ("sg=1,bn=192,ps=5,rg=8m,pp=4,sk=1") its config (diagnostics and tests).
    if (const char* v = std::getenv("FP4JIT_SM90_GEMM"); v != nullptr && *v != '\0') {
      const std::string_view kind(v);
      from = "FP4JIT_SM90_GEMM";
      const codegen::GemmSpec spec =
          codegen::gemm_spec(recipe, op, shape.n, shape.k, dtype, info_.target);
      if (kind.find('=') != std::string_view::npos) {
        try {
          tuned = parse_gemm_choice(std::string(kind), spec, shape.m, info_.sm_count, info_.target);
        } catch (const Error& e) {
          fail(ErrorKind::invalid_argument, "FP4JIT_SM90_GEMM: {}", e.what());
        }
      } else if (kind == "fused" || kind == "staged") {
        tuned = codegen::choose_sm90_gemm(spec, shape.m, info_.sm_count, kind == "staged");
      } else if (kind == "swap" &&
                 (spec.path == codegen::GemmPath::mx || spec.path == codegen::GemmPath::nv)) {
        tuned = codegen::choose_sm90_swap(spec, shape.m, info_.sm_count);
      } else if (kind == "direct" && spec.path == codegen::GemmPath::mx) {
        tuned = codegen::choose_sm90_direct(spec, shape.m, info_.sm_count);
      } else {
        fail(ErrorKind::invalid_argument,
             "FP4JIT_SM90_GEMM='{}': expected fused, staged, swap (mx and nv recipes), direct (mx "
             "recipes) or a GEMM choice such as 'sg=1,bn=128,ps=6,rg=8m,pp=4,sk=1'",
             kind);
      }
    }
  }
  if (source != nullptr) *source = from;
  return tuned;
}

std::string CudaBackend::gemm_kernel(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                                     DType out) {
  const char* source = nullptr;
  std::optional<codegen::GemmChoice> choice = gemm_choice(recipe, op, shape, out, &source);
  if (!choice) {
    const codegen::GemmSpec spec =
        codegen::gemm_spec(recipe, op, shape.n, shape.k, out, info_.target);
    choice = codegen::choose_gemm(spec, shape.m, info_.sm_count, info_.target);
  }
  return fmt::format("{} ({})", gemm_choice_text(*choice, info_.target), source);
}

std::optional<codegen::GemmChoice> CudaBackend::tuned_gemm_choice(const Recipe& recipe, GemmOp op,
                                                                  const GemmShape& shape,
                                                                  DType out) {
  const TuningKey key = gemm_tuning_key(identity(), recipe, op, shape, std::string(name(out)));
  const std::optional<std::string> winner = tuned_->winner(key);
  if (!winner) return std::nullopt;
  try {
    const codegen::GemmSpec spec =
        codegen::gemm_spec(recipe, op, shape.n, shape.k, out, info_.target);
    return parse_gemm_choice(*winner, spec, shape.m, info_.sm_count, info_.target);
  } catch (const Error& e) {
    warn("tuned GEMM choice '{}' for {} is not usable ({}); using the heuristic", *winner,
         key.problem, e.what());
    return std::nullopt;
  }
}

void CudaBackend::launch_gemm_kernel(const GemmPlan& plan, const void* a_codes, const void* b_codes,
                                     const GemmShape& shape, gemm::GemmParams& p, CUstream s,
                                     bool dependent) {
  CUfunction fn = modules_->function_with_smem(plan.kernel, plan.smem_bytes);
  // The direct kernel takes p alone (it reads the codes through it); the others the operands'
  // tensor maps first, the staged kernel a third, D's (unread unless p.tma_store).
  CUtensorMap ta{}, tb{}, td{};
  if (!plan.direct) {
    ta = tensor_map(d_, a_codes, plan.a_row_bytes, shape.m, plan.a_box_bytes, plan.a_box_rows,
                    plan.a_swizzle);
    tb = tensor_map(d_, b_codes, plan.b_row_bytes, shape.n, plan.b_box_bytes, plan.b_box_rows,
                    plan.b_swizzle);
  }
  const bool staged = plan.staged && !plan.swap;
  p.tma_store = staged && plan.tma_store && output_tensor_map(d_, p, plan.spec.out, &td) ? 1 : 0;
  void* params1[] = {&p};
  void* params3[] = {&ta, &tb, &p};
  void* params4[] = {&ta, &tb, &td, &p};
  void** params = plan.direct ? params1 : staged ? params4 : params3;
  // Clusters along x (GemmPlan::launch_cluster): the persistent grid is as many whole clusters as
  // can be resident at once (a GPC may hold fewer of them than its SMs / cluster).
  const int cluster = plan.launch_cluster();
  int grid = plan.choice.grid;
  if (cluster > 1)
    grid = std::min(
        grid, modules_->max_active_clusters(plan.kernel, plan.threads, plan.smem_bytes, cluster) *
                  cluster);
  if (!plan.swap && !dependent && cluster == 1) {
    check(
        d_.launch_kernel(fn, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(plan.threads),
                         1, 1, static_cast<unsigned>(plan.smem_bytes), s, params, nullptr),
        "cuLaunchKernel (GEMM)");
    return;
  }
  // The swapped kernel starts while A's expansion finishes and waits for it before reading its
  // output.
  CUlaunchAttribute attrs[2];
  unsigned n = 0;
  if (plan.swap || dependent) attrs[n++] = dependent_attribute();
  if (cluster > 1) attrs[n++] = cluster_attribute(cluster);
  const CUlaunchConfig config = launch_config(grid, plan.threads, plan.smem_bytes, s, attrs, n);
  check(d_.launch_kernel_ex(&config, fn, params, nullptr),
        "cuLaunchKernelEx (GEMM: clusters or programmatic dependent launch)");
}

void CudaBackend::launch_gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a,
                              const QuantizedView& b, const GemmShape& shape, const TensorView& out,
                              const GemmEpilogue& epilogue, void* stream,
                              const codegen::GemmChoice* choice) {
  const GemmLayouts l = gemm_layouts(recipe, op, shape);
  ContextGuard guard(d_, ctx_);
  const auto s = static_cast<CUstream>(stream);
  const GemmPlan plan = plan_gemm(recipe, op, shape, out.dtype, info_, choice);
  const bool occ = epilogue.occ_weight.data != nullptr;
  if (occ) check_device_pointer(epilogue.occ_weight.data, "occ_weight", stream);

  // Scratch: split-K partial sums and tile counters (of the fallback too); the staged path's
  // expanded operands, factors and window flag; W^T (W's type) and the residual's row ranges for
  // the OCC compensation.
  const auto align256 = [](std::int64_t x) { return (x + 255) / 256 * 256; };
  std::int64_t top = 0;
  const auto reserve = [&](std::int64_t bytes) {
    const std::int64_t at = top;
    top = align256(top + bytes);
    return at;
  };
  const std::int64_t ws_offset = reserve(plan.workspace_floats * 4);
  const GemmPlan* fb = plan.fallback.empty() ? nullptr : &plan.fallback.front();
  const std::int64_t fb_ws_offset = reserve(fb != nullptr ? fb->workspace_floats * 4 : 0);
  // The window flag (with a fallback): never cleared; the launch's mark, new for every call, is
  // what the expansion writes into it and what the kernels compare it with (GemmParams).
  const std::int64_t flag_offset = reserve(fb != nullptr ? 4 : 0);
  const unsigned mark = fb != nullptr ? next_fallback_mark() : 0u;
  // The words the launch needs zeroed, side by side so that one memset clears them: the split-K
  // tile counters and the fallback's. Split-K through global memory (a workspace of partial sums)
  // counts its tiles' splits.
  const auto counters = [](const GemmPlan* pl) {
    return pl != nullptr && pl->workspace_floats > 0 ? pl->tiles : std::int64_t{0};
  };
  const std::int64_t counter_words = counters(&plan);
  const std::int64_t fb_counter_words = counters(fb);
  const std::int64_t zero_words = counter_words + fb_counter_words;
  const std::int64_t zero_offset = reserve(zero_words * 4);
  const std::int64_t exp_a_offset = reserve(plan.staged ? shape.m * plan.a_row_bytes : 0);
  const std::int64_t exp_b_offset =
      reserve(plan.staged && !plan.swap ? shape.n * plan.b_row_bytes : 0);
  const std::int64_t fac_a_offset = reserve(std::int64_t{plan.factor_rows} * plan.a_factor_ld * 4);
  const std::int64_t fac_b_offset =
      reserve(std::int64_t{plan.b_factor_rows()} * plan.b_factor_ld * 4);
  const std::int64_t wt_offset =
      reserve(occ ? shape.k * shape.n * dtype_size(epilogue.occ_weight.dtype) : 0);
  const std::int64_t rows_offset = reserve(occ ? (shape.m + 1) * 8 : 0);
  const Workspace scratch(*workspace_, s, top);

  if (zero_words > 0)
    check(d_.memset_d32_async(dptr(scratch.at<int>(zero_offset)), 0,
                              static_cast<std::size_t>(zero_words), s),
          "cuMemsetD32Async (split-K counters)");
  const auto split_scratch = [&](const GemmPlan& pl, gemm::GemmParams& p, std::int64_t ws,
                                 std::int64_t first_word) {
    if (pl.workspace_floats == 0) return;  // unsplit, or split-K in clusters
    p.workspace = scratch.at<float>(ws);
    p.counters = scratch.at<int>(zero_offset + 4 * first_word);
  };
  gemm::GemmParams p = gemm_params(plan, l, a, b, shape, out, epilogue);
  split_scratch(plan, p, ws_offset, 0);
  const void* a_codes = a.codes;
  const void* b_codes = b.codes;
  unsigned* flag = fb != nullptr ? scratch.at<unsigned>(flag_offset) : nullptr;
  if (plan.staged) {
    // One operand's expansion parameters and CTAs.
    const auto expansion = [&](bool operand_b, const QuantizedView& q, const QuantLayout& ol,
                               std::int64_t rows, std::int64_t code_ld, std::int64_t out_offset,
                               std::int64_t out_ld, std::int64_t fac_offset, int fac_ld) {
      gemm::ExpandParams e{};
      e.codes = static_cast<const unsigned char*>(q.codes);
      e.code_ld = code_ld;
      e.rows = static_cast<int>(rows);
      e.K = static_cast<int>(shape.k);
      if (ol.scale_is_code) {
        e.scale = static_cast<const unsigned char*>(q.scales);
        e.scale_ld = static_cast<int>(ol.scale_cols);
      } else {
        e.col_scale = static_cast<const float*>(q.scales);
      }
      e.out = scratch.at<void>(out_offset);
      e.out_ld = out_ld;
      if (fac_ld > 0) {
        e.factor = scratch.at<float>(fac_offset);
        e.factor_ld = fac_ld;
      }
      e.flag = flag;
      e.flag_mark = mark;
      std::int64_t ctas =
          sm90::expand_grid_ctas(static_cast<sm90::ScaleKind>(static_cast<int>(plan.spec.path)),
                                 operand_b, plan.b_whole_row, rows, static_cast<int>(shape.k),
                                 codegen::sm90_expand_period(plan.spec, plan.period));
      if (plan.swap && plan.spec.path == codegen::GemmPath::mx) {
        // The same launch checks B's scale codes per (row, segment) (staged_expand.cuh).
        const std::int64_t segment_blocks = 4 * plan.period;
        const std::int64_t segments = (shape.k / 32 + segment_blocks - 1) / segment_blocks;
        e.check_scale = static_cast<const unsigned char*>(b.scales);
        e.check_rows = static_cast<int>(shape.n);
        e.check_scale_ld = static_cast<int>(l.b.scale_cols);
        e.expand_ctas = static_cast<int>(ctas);
        ctas += (shape.n * segments + 255) / 256;
      }
      return std::pair{e, ctas};
    };
    const auto too_large = [&](std::int64_t ctas) {
      if (ctas > 0x7fffffff)
        fail(ErrorKind::unsupported,
             "CUDA GEMM: operands of {} x {} and {} x {} too large to expand", shape.m, shape.k,
             shape.n, shape.k);
      return static_cast<unsigned>(ctas);
    };
    const auto launch_one = [&](const codegen::KernelSource& kernel, gemm::ExpandParams& e,
                                std::int64_t ctas) {
      void* params[] = {&e};
      check(d_.launch_kernel(modules_->function(kernel), too_large(ctas), 1, 1, 256, 1, 1, 0, s,
                             params, nullptr),
            "cuLaunchKernel (GEMM operand expansion)");
    };
    auto [ea, a_ctas] = expansion(false, a, l.a, shape.m, plan.a_code_row_bytes, exp_a_offset,
                                  plan.a_row_bytes, fac_a_offset, plan.a_factor_ld);
    a_codes = scratch.at<void>(exp_a_offset);
    if (plan.swap) {
      launch_one(plan.expand.at(0), ea, a_ctas);
    } else {
      auto [eb, b_ctas] = expansion(true, b, l.b, shape.n, plan.b_code_row_bytes, exp_b_offset,
                                    plan.b_row_bytes, fac_b_offset, plan.b_factor_ld);
      if (plan.expand.size() == 2) {  // apart (codegen::sm90_expand_apart)
        launch_one(plan.expand[0], ea, a_ctas);
        launch_one(plan.expand[1], eb, b_ctas);
      } else {
        int a_part = static_cast<int>(too_large(a_ctas));
        void* params[] = {&ea, &eb, &a_part};
        check(d_.launch_kernel(modules_->function(plan.expand.at(0)), too_large(a_ctas + b_ctas), 1,
                               1, 256, 1, 1, 0, s, params, nullptr),
              "cuLaunchKernel (GEMM operand expansions)");
      }
      b_codes = scratch.at<void>(exp_b_offset);
    }
    if (plan.a_factor_ld > 0) p.a_factor = scratch.at<float>(fac_a_offset);
    if (plan.b_factor_ld > 0) p.b_factor = scratch.at<float>(fac_b_offset);
    p.a_factor_ld = plan.a_factor_ld;
    p.b_factor_ld = plan.b_factor_ld;
    p.fallback = flag;
    p.fallback_mark = mark;
  }
  launch_gemm_kernel(plan, a_codes, b_codes, shape, p, s);
  if (fb != nullptr) {
    gemm::GemmParams pf = gemm_params(*fb, l, a, b, shape, out, epilogue);
    split_scratch(*fb, pf, fb_ws_offset, counter_words);
    pf.fallback = flag;
    pf.fallback_runs = 1;
    pf.fallback_mark = mark;
    // A programmatic dependent of the staged or swapped kernel: its CTAs take the SMs that grid
    // leaves, read the flag (final by then) and leave at once when the window held, so they are
    // done by that grid's end; unsplit (sm90_fallback_choice), so it has no counters to clear.
    launch_gemm_kernel(*fb, a.codes, b.codes, shape, pf, s, true);
  }
  last_bytes_ = l.a.code_bytes() + l.b.code_bytes() + shape.m * shape.n * dtype_size(out.dtype);
  if (!occ) return;

  // OCC compensation: out += alpha * R W^T.
  const TensorView& w = epilogue.occ_weight;
  void* wt = scratch.at<char>(wt_offset);
  gemm::OccTransposeArgs ta_args{w.data, wt, shape.n, shape.k, stride_of(w)};
  CUfunction transpose = modules_->function(codegen::occ_transpose_kernel(w.dtype, info_.target));
  void* t_params[] = {&ta_args};
  check(d_.launch_kernel(transpose, static_cast<unsigned>((shape.k + 31) / 32),
                         static_cast<unsigned>((shape.n + 31) / 32), 1, 256, 1, 1, 0, s, t_params,
                         nullptr),
        "cuLaunchKernel (occ_transpose)");
  static_assert(sizeof(long long) == sizeof(std::int64_t));
  const auto* index = reinterpret_cast<const long long*>(a.residual_index);
  auto* row_ptr = scratch.at<long long>(rows_offset);
  gemm::OccRowsArgs r_args{index, reinterpret_cast<const long long*>(a.residual_count), row_ptr,
                           shape.m, shape.k};
  CUfunction rows = modules_->function(codegen::occ_rows_kernel(info_.target));
  void* r_params[] = {&r_args};
  check(d_.launch_kernel(rows, static_cast<unsigned>((shape.m + 1 + 255) / 256), 1, 1, 256, 1, 1, 0,
                         s, r_params, nullptr),
        "cuLaunchKernel (occ_rows)");
  gemm::OccCompensateArgs c_args{row_ptr,
                                 index,
                                 a.residual_value,
                                 wt,
                                 out.data,
                                 shape.m,
                                 shape.n,
                                 shape.k,
                                 stride_of(out),
                                 epilogue.alpha,
                                 shape.n % 8 == 0 ? 1u : 0u};
  CUfunction compensate =
      modules_->function(codegen::occ_compensate_kernel(out.dtype, w.dtype, info_.target));
  void* c_params[] = {&c_args};
  constexpr std::int64_t kColsPerCta = codegen::kOccCompensateCols * codegen::kOccCompensateThreads;
  check(d_.launch_kernel(compensate, static_cast<unsigned>(shape.m),
                         static_cast<unsigned>((shape.n + kColsPerCta - 1) / kColsPerCta), 1,
                         codegen::kOccCompensateThreads, 1, 1, 0, s, c_params, nullptr),
        "cuLaunchKernel (occ_compensate)");
  // W read and W^T written, D read and written (the residual's W^T rows: unknown on the host).
  last_bytes_ +=
      2 * shape.k * shape.n * dtype_size(w.dtype) + 2 * shape.m * shape.n * dtype_size(out.dtype);
}

}  // namespace fp4jit::cuda
