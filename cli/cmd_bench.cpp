// fp4jit bench gemm --recipe SPEC --gemm MxNxK [--gemm ...] [--op fprop|dgrad|wgrad|all]
//                   [--backend cuda|host] [--out-dtype D] [--bias] [--accumulate]
//                   [--iters N] [--json FILE]
// Times our GEMM kernels: --gemm is a linear layer's fprop shape (tokens x out x in) and each of
// its three GEMMs runs with its own shape (core/gemm.hpp). Operands are quantized by the same
// backend from random BF16 data; on CUDA, enough operand sets to exceed the L2 cache several times
// are rotated, every launch is timed with CUDA events (each call alone, then the same calls back
// to back: a second line), and the medians are reported; on the host, a steady clock times each
// call; a last line names the kernel config that ran and why (Engine::gemm_kernel: tuned,
// heuristic or FP4JIT_SM90_GEMM on CUDA, tuned or default on the host). TFLOP/s counts 2 M N K
// (the OCC compensation of msfp4 fprop included in the time, not in the count). --bias adds a
// BF16 bias of N elements in the epilogue (a linear layer's fprop), --accumulate adds into the
// output (beta = 1, C = D: gradient accumulation), so the epilogue's extra reads are timed too.
//
// fp4jit bench quantize --recipe SPEC --gemm MxNxK [--gemm ...] [--what pairs|operands|all]
//                       [--backend cuda|host] [--iters N] [--json FILE]
// Times the quantize calls of a linear layer's training step, the problems `fp4jit tune` tunes
// for that layer: the pairs (x + xt from X [M, K], w + wt from W [N, K], dy + dyt from dY [M, N],
// each from one read of its BF16 source) and each of the six operands alone. Tuned configs are
// used where the cache has them (FP4JIT_NO_TUNED=1: the heuristic's), so that the two can be
// compared. Sources rotate over more than the L2 cache; effective GB/s counts the source's bytes
// and the outputs' (codes, scales, tensor scale).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>

#include "cli/commands.hpp"
#include "fp4jit/engine.hpp"
#include "numerics/common.cuh"
#include "tuner/parallel.hpp"

#if defined(FP4JIT_HAVE_CUDA)
#include "runtime/cuda/device_memory.hpp"
#endif

namespace fp4jit::cli {

namespace {

// What both benchmarks take: a recipe, layer shapes, the backend, the timed runs, a JSON file.
struct BenchCommon {
  std::string recipe, backend = "cuda", json;
  std::vector<std::string> gemms;
  int iters = 0;  // 0: 50 on CUDA, 5 on the host
};

struct BenchOptions : BenchCommon {
  std::string out_dtype = "bfloat16", op = "all";
  bool bias = false, accumulate = false;
};

// Memory of the benchmarked backend: device buffers (CUDA) or host vectors.
class Memory {
 public:
  explicit Memory(bool device) : device_(device) {}
  void* make(std::size_t bytes, const void* init = nullptr) {
    bytes = std::max<std::size_t>(bytes, 16);
#if defined(FP4JIT_HAVE_CUDA)
    if (device_) {
      auto& b = dev_.emplace_back(std::make_unique<cuda::DeviceBuffer>(bytes));
      if (init != nullptr)
        b->upload(init, bytes);
      else
        b->fill(0);
      return b->get();
    }
#endif
    auto& h = host_.emplace_back(std::make_unique<std::uint8_t[]>(bytes));
    if (init != nullptr)
      std::memcpy(h.get(), init, bytes);
    else
      std::memset(h.get(), 0, bytes);
    return h.get();
  }

 private:
  bool device_;
  std::vector<std::unique_ptr<std::uint8_t[]>> host_;
#if defined(FP4JIT_HAVE_CUDA)
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> dev_;
#endif
};

// Random N(0, 1) values with a per-row scale, as BF16, in the backend's memory. Each row draws
// from its own generator (seeded by the seed and the row), so rows are made on every host thread
// and the values do not depend on the thread count (one generator for the whole tensor: about
// 1 s of one core per 8192^2 input, half a minute of set-up for one layer's calls).
TensorView random_bf16(Memory& mem, std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::vector<std::uint16_t> h(static_cast<std::size_t>(rows * cols));
  tuner::parallel_for(rows, 64, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      std::seed_seq seq{seed, static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(r >> 32)};
      std::mt19937 gen(seq);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      const float s = std::exp2(static_cast<float>(r % 7) - 3.0f);
      for (std::int64_t c = 0; c < cols; ++c)
        h[static_cast<std::size_t>(r * cols + c)] = nx::float_to_bf16(normal(gen) * s);
    }
  });
  return TensorView{mem.make(h.size() * 2, h.data()), DType::bf16, rows, cols, 0};
}

// The output buffers of one operand (with room for an OCC residual where the recipe clamps: an
// eighth of the elements).
QuantizedView operand_buffers(Memory& mem, const QuantLayout& l, bool occ) {
  QuantizedView v;
  v.codes = static_cast<std::uint8_t*>(mem.make(static_cast<std::size_t>(l.code_bytes())));
  v.scales = mem.make(static_cast<std::size_t>(l.scale_count() * (l.scale_is_code ? 1 : 4)));
  v.tensor_scale = static_cast<float*>(mem.make(4));
  v.amax = static_cast<float*>(mem.make(4));
  if (occ) {
    v.residual_capacity = l.rows * l.cols / 8 + 1024;
    v.residual_index =
        static_cast<std::int64_t*>(mem.make(static_cast<std::size_t>(v.residual_capacity) * 8));
    v.residual_value =
        static_cast<float*>(mem.make(static_cast<std::size_t>(v.residual_capacity) * 4));
    v.residual_count = static_cast<std::int64_t*>(mem.make(8));
  }
  return v;
}

QuantizedView quantized(Engine& engine, Memory& mem, const Recipe& recipe, Role role,
                        const TensorView& src) {
  const QuantizedView v =
      operand_buffers(mem, engine.layout(recipe, role, src.rows, src.cols), recipe[role].occ);
  engine.quantize(recipe, role, src, v, {.seed = 1, .offset = 0});
  return v;
}

struct Set {
  QuantizedView a, b;
  TensorView out, weight;
};

// The CUDA benchmarks' single-call timer (one per run: its lead kernel is loaded once); nothing on
// a build without CUDA.
#if defined(FP4JIT_HAVE_CUDA)
using GpuTimer = cuda::GpuTimer;
#else
struct GpuTimer {};
#endif

class Timer {
 public:
  // gpu: the run's timer on the CUDA backend, null on the host backend.
  explicit Timer(GpuTimer* gpu) : gpu_(gpu) {}
  // Median milliseconds of `iters` runs of fn(i) after 3 warm-ups; on CUDA each call's GPU time
  // alone, the host's enqueueing hidden behind a lead kernel (cuda::GpuTimer).
  template <class Fn>
  double median_ms(int iters, Fn fn);
  // What the median is, for the printed line: "GPU time alone; " on CUDA, nothing on the host
  // (its time is the host's).
  const char* kind() const { return gpu_ != nullptr ? "GPU time alone; " : ""; }
  // The median host time of the same calls, up to their return (on CUDA: enqueueing).
  double host_ms() const { return host_ms_; }
  // On CUDA: the median time per call of the same calls enqueued back to back (events between
  // them, one synchronization at the end), as a training step enqueues its work and as the
  // peers' timing loops do: the host's per-call cost hides behind the GPU's unless it is
  // longer. 0 on the host backend.
  double back_to_back_ms() const { return back_to_back_ms_; }

 private:
  GpuTimer* gpu_;
  double host_ms_ = 0.0;
  double back_to_back_ms_ = 0.0;
};

template <class Fn>
double Timer::median_ms(int iters, Fn fn) {
  for (int i = 0; i < 3; ++i) fn(i);
  std::vector<double> ms, host;
#if defined(FP4JIT_HAVE_CUDA)
  if (gpu_ != nullptr) {
    for (int i = 0; i < iters; ++i) {
      ms.push_back(gpu_->ms([&] { fn(i); }));
      host.push_back(gpu_->last_host_ms());  // of the run timed (a retried one counts once)
    }
    cuda::EventSeries series(cuda::require_driver(), iters + 1);
    series.mark(0);
    for (int i = 0; i < iters; ++i) {
      fn(i);
      series.mark(i + 1);
    }
    std::vector<double> row = series.intervals_ms();
    std::sort(row.begin(), row.end());
    back_to_back_ms_ = row[row.size() / 2];
  }
#endif
  if (gpu_ == nullptr) {
    for (int i = 0; i < iters; ++i) {
      Stopwatch w;
      fn(i);
      ms.push_back(w.ms());
    }
    host = ms;
  }
  std::sort(ms.begin(), ms.end());
  std::sort(host.begin(), host.end());
  host_ms_ = host[host.size() / 2];
  return ms[ms.size() / 2];
}

// What both benchmarks set up: the recipe, the backend (CUDA or host, with CUDA's device scope
// held for the run), the engine on it and the number of timed runs.
struct BenchRun {
  Recipe recipe;
  bool device = false;
#if defined(FP4JIT_HAVE_CUDA)
  std::unique_ptr<cuda::DeviceScope> scope;
#endif
  std::unique_ptr<GpuTimer> gpu_timer;  // CUDA: every single-call timing of the run
  std::unique_ptr<Engine> engine;
  int iters = 0;

  BenchRun(std::string_view command, const BenchCommon& o) : recipe(parse_recipe(o.recipe)) {
    EngineOptions eo;
    eo.backend = parse_named(backend_names(), o.backend, "backend");
    if (eo.backend != BackendKind::cuda && eo.backend != BackendKind::host)
      fail(ErrorKind::invalid_argument, "bench {}: --backend must be cuda or host", command);
    device = eo.backend == BackendKind::cuda;
#if defined(FP4JIT_HAVE_CUDA)
    if (device) {
      scope = std::make_unique<cuda::DeviceScope>(0);
      gpu_timer = std::make_unique<GpuTimer>(scope->driver());
    }
#endif
    engine = std::make_unique<Engine>(eo);
    iters = o.iters > 0 ? o.iters : (device ? 50 : 5);
  }

  void write_json(std::string_view command, const std::string& path,
                  const nlohmann::json& results) const {
    if (path.empty()) return;
    std::ofstream f(path);
    f << nlohmann::json{{"device", engine->description()}, {"results", results}}.dump(2) << "\n";
    if (!f) fail(ErrorKind::io, "bench {}: could not write {}", command, path);
  }
};

// The layers of --gemm, parsed before the backend starts, so that a malformed shape is reported
// as such on any machine (not as a missing GPU).
std::vector<GemmShape> parse_layers(const std::vector<std::string>& texts) {
  std::vector<GemmShape> layers;
  for (const auto& text : texts) layers.push_back(parse_gemm_shape(text));  // tokens x out x in
  return layers;
}

void run_bench(const BenchOptions& o) {
  const std::vector<GemmShape> layers = parse_layers(o.gemms);
  const DType out_dtype = parse_dtype(o.out_dtype);
  const BenchRun run("gemm", o);
  const Recipe& recipe = run.recipe;
  const bool device = run.device;
  Engine& engine = *run.engine;
  const int iters = run.iters;
  fmt::print("fp4jit bench gemm: recipe {} on {}; output {}; median of {} runs\n", recipe.preset,
             engine.description(), name(out_dtype), iters);
  nlohmann::json results = nlohmann::json::array();
  for (const GemmShape& layer : layers) {
    for (const auto& op_name : gemm_op_names()) {
      if (o.op != "all" && o.op != op_name.name) continue;
      const GemmOp op = op_name.value;
      const GemmShape s = gemm_shape_of(op, layer);
      const GemmRoles roles = gemm_roles(op);
      const GemmLayouts l = gemm_layouts(recipe, op, s);
      const bool occ = op == GemmOp::fprop && recipe[roles.a].occ;
      const std::int64_t set_bytes =
          l.a.code_bytes() + l.b.code_bytes() + s.m * s.n * dtype_size(out_dtype);
      const int sets =
          device ? static_cast<int>(std::clamp<std::int64_t>(200'000'000 / set_bytes + 1, 1, 8))
                 : 1;
      Memory mem(device);
      // One bias for every set (a layer's bias is small and stays in L2, as in training).
      const void* bias = o.bias ? random_bf16(mem, 1, s.n, 5).data : nullptr;
      std::vector<Set> rotation;
      for (int i = 0; i < sets; ++i) {
        const OperandShape sa = gemm_source_shape(roles.a, s.m, s.k),
                           sb = gemm_source_shape(roles.b, s.n, s.k);
        const TensorView xa = random_bf16(mem, sa.rows, sa.cols, 11 + 2 * i);
        const TensorView xb = random_bf16(mem, sb.rows, sb.cols, 12 + 2 * i);
        Set set{quantized(engine, mem, recipe, roles.a, xa),
                quantized(engine, mem, recipe, roles.b, xb),
                TensorView{mem.make(static_cast<std::size_t>(s.m * s.n * dtype_size(out_dtype))),
                           out_dtype, s.m, s.n, 0},
                occ ? xb : TensorView{}};
        rotation.push_back(set);
      }
      Timer timer(run.gpu_timer.get());
      const double ms = timer.median_ms(iters, [&](int i) {
        const Set& set = rotation[static_cast<std::size_t>(i) % rotation.size()];
        GemmEpilogue e;
        e.occ_weight = set.weight;
        e.bias = bias;
        e.bias_dtype = DType::bf16;
        if (o.accumulate) {
          e.beta = 1.0f;
          e.c = set.out;
        }
        engine.gemm(recipe, op, set.a, set.b, s, set.out, e);
      });
      const double tflops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                            static_cast<double>(s.k) / (ms * 1e-3) / 1e12;
      const double b2b = timer.back_to_back_ms();
      const double b2b_tflops = b2b > 0.0 ? tflops * ms / b2b : 0.0;
      fmt::print(
          "  {:5}  {:>22}  {:9.3f} ms  {:8.1f} TFLOP/s  ({}host {:.1f} us per call; {} operand "
          "sets{}{}{})\n",
          op_name.name, gemm_shape_text(s), ms, tflops, timer.kind(), timer.host_ms() * 1e3, sets,
          occ ? ", OCC compensation included" : "", o.bias ? ", bias" : "",
          o.accumulate ? ", D += A B^T" : "");
      if (b2b > 0.0)
        fmt::print("  {:5}  {:>22}  {:9.3f} ms  {:8.1f} TFLOP/s  back to back\n", "", "", b2b,
                   b2b_tflops);
      const std::string kernel = engine.gemm_kernel(recipe, op, s, out_dtype);
      if (!kernel.empty()) fmt::print("  {:5}  {:>22}  kernel {}\n", "", "", kernel);
      std::fflush(stdout);  // each result as it is measured, also into a pipe
      results.push_back({{"recipe", recipe.preset},
                         {"op", op_name.name},
                         {"m", s.m},
                         {"n", s.n},
                         {"k", s.k},
                         {"out", name(out_dtype)},
                         {"backend", o.backend},
                         {"median_ms", ms},
                         {"host_ms", timer.host_ms()},
                         {"back_to_back_ms", b2b},
                         {"back_to_back_tflops", b2b_tflops},
                         {"tflops", tflops},
                         {"iters", iters},
                         {"sets", sets},
                         {"occ", occ},
                         {"bias", o.bias},
                         {"accumulate", o.accumulate},
                         {"kernel", kernel}});
    }
  }
  run.write_json("gemm", o.json, results);
}

struct QuantBenchOptions : BenchCommon {
  std::string what = "all";
};

// Bytes a quantized operand's outputs take (what effective GB/s counts besides the source).
std::int64_t output_bytes(const QuantLayout& l) {
  return l.code_bytes() + l.scale_count() * (l.scale_is_code ? 1 : 4) + (l.two_level ? 4 : 0);
}

void run_quant_bench(const QuantBenchOptions& o) {
  const std::vector<GemmShape> layers = parse_layers(o.gemms);
  const BenchRun run("quantize", o);
  const Recipe& recipe = run.recipe;
  const bool device = run.device;
  Engine& engine = *run.engine;
  const int iters = run.iters;
  fmt::print("fp4jit bench quantize: recipe {} on {}; BF16 sources; median of {} runs\n",
             recipe.preset, engine.description(), iters);
  struct Problem {
    Role role;
    bool pair;
  };
  std::vector<Problem> problems;
  if (o.what != "operands")
    for (Role r : {Role::x, Role::w, Role::dy}) problems.push_back({r, true});
  if (o.what != "pairs")
    for (Role r : {Role::x, Role::xt, Role::w, Role::wt, Role::dy, Role::dyt})
      problems.push_back({r, false});
  nlohmann::json results = nlohmann::json::array();
  for (const GemmShape& layer : layers) {
    for (const Problem& p : problems) {
      // The role's source: X [tokens, in], W [out, in], dY [tokens, out].
      const bool weight = p.role == Role::w || p.role == Role::wt;
      const bool grad = p.role == Role::dy || p.role == Role::dyt;
      const std::int64_t rows = weight ? layer.n : layer.m;
      const std::int64_t cols = grad ? layer.n : layer.k;
      const Role partner = transposed_copy(p.role);
      const QuantLayout l = engine.layout(recipe, p.role, rows, cols);
      const QuantLayout lt = engine.layout(recipe, partner, rows, cols);
      const std::int64_t bytes =
          rows * cols * 2 + output_bytes(l) + (p.pair ? output_bytes(lt) : 0);
      const int sets =
          device ? static_cast<int>(std::clamp<std::int64_t>(200'000'000 / bytes + 1, 1, 8)) : 1;
      Memory mem(device);
      struct QSet {
        TensorView in;
        QuantizedView out, out_t;
      };
      std::vector<QSet> rotation;
      for (int i = 0; i < sets; ++i)
        rotation.push_back(
            {random_bf16(mem, rows, cols, 21 + static_cast<std::uint32_t>(i)),
             operand_buffers(mem, l, recipe[p.role].occ),
             p.pair ? operand_buffers(mem, lt, recipe[partner].occ) : QuantizedView{}});
      Timer timer(run.gpu_timer.get());
      const double ms = timer.median_ms(iters, [&](int i) {
        const QSet& set = rotation[static_cast<std::size_t>(i) % rotation.size()];
        const QuantizeArgs args{.seed = 5, .offset = static_cast<std::uint64_t>(i) * 4096};
        if (p.pair)
          engine.quantize_pair(recipe, p.role, set.in, set.out, set.out_t, args);
        else
          engine.quantize(recipe, p.role, set.in, set.out, args);
      });
      const double b2b = timer.back_to_back_ms();
      const std::string what =
          p.pair ? fmt::format("{}+{}", name(p.role), name(partner)) : std::string(name(p.role));
      const double gbps = static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
      fmt::print("  {:7}  {:>12}  {:9.4f} ms  {:8.1f} GB/s  ({}host {:.1f} us per call; {} sets)\n",
                 what, fmt::format("{}x{}", rows, cols), ms, gbps, timer.kind(),
                 timer.host_ms() * 1e3, sets);
      if (b2b > 0.0)
        fmt::print("  {:7}  {:>12}  {:9.4f} ms  {:8.1f} GB/s  back to back\n", "", "", b2b,
                   static_cast<double>(bytes) / (b2b * 1e-3) / 1e9);
      std::fflush(stdout);
      results.push_back({{"recipe", recipe.preset},
                         {"problem", what},
                         {"role", name(p.role)},
                         {"pair", p.pair},
                         {"rows", rows},
                         {"cols", cols},
                         {"backend", o.backend},
                         {"bytes", bytes},
                         {"median_ms", ms},
                         {"host_ms", timer.host_ms()},
                         {"back_to_back_ms", b2b},
                         {"gbps", gbps},
                         {"iters", iters},
                         {"sets", sets}});
    }
  }
  run.write_json("quantize", o.json, results);
}

}  // namespace

// The options of BenchCommon on `cmd`; `per`: what one timed run is ("GEMM", "call").
void add_common_options(CLI::App* cmd, BenchCommon& o, std::string_view per) {
  cmd->add_option("--recipe,-r", o.recipe, "Recipe text, e.g. nvfp4")->required();
  cmd->add_option("--gemm", o.gemms,
                  "Layer shape tokens x out x in, e.g. 8192x4096x4096 (repeatable)")
      ->required();
  cmd->add_option("--backend", o.backend, "cuda or host")
      ->check(one_of("backend", {"cuda", "host"}))
      ->capture_default_str();
  cmd->add_option("--iters", o.iters,
                  fmt::format("Timed runs per {} (0: 50 on CUDA, 5 on the host)", per));
  cmd->add_option("--json", o.json, "Write the results as JSON to this file");
}

void add_bench_commands(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks of fp4jit's kernels");
  bench->require_subcommand(1);
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = bench->add_subcommand("gemm",
                                        "Time the GEMMs of linear layers (fprop, dgrad, wgrad) on "
                                        "quantized operands; prints TFLOP/s");
  add_common_options(cmd, *o, "GEMM");
  cmd->add_option("--op", o->op, "Which GEMMs")
      ->check(one_of("op", {"all", "fprop", "dgrad", "wgrad"}))
      ->capture_default_str();
  cmd->add_option("--out-dtype", o->out_dtype, "Output type")
      ->check(one_of("dtype", dtype_option_names()))
      ->capture_default_str();
  cmd->add_flag("--bias", o->bias, "Add a BF16 bias of N elements in the epilogue");
  cmd->add_flag("--accumulate", o->accumulate,
                "Add into the output (beta = 1, C = D), as gradient accumulation does");
  cmd->callback([o] { run_bench(*o); });

  auto q = std::make_shared<QuantBenchOptions>();
  CLI::App* qcmd = bench->add_subcommand(
      "quantize",
      "Time the quantize calls of linear layers' training steps (the pairs x + xt, w + wt, "
      "dy + dyt, and each operand alone); prints GB/s");
  add_common_options(qcmd, *q, "call");
  qcmd->add_option("--what", q->what, "Which calls")
      ->check(one_of("what", {"all", "pairs", "operands"}))
      ->capture_default_str();
  qcmd->callback([q] { run_quant_bench(*q); });
}

}  // namespace fp4jit::cli
