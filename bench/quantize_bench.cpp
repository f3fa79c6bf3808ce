// quantize_bench: the CUDA quantize kernels on the device, and their compile and cache times.
//
//   quantize_bench bench [--sizes 8192,16384] [--presets a,b] [--modes rows,pair] [--reps N]
//                        [--amax-out needed|all] [--json FILE]
//       BF16 -> FP4 for every preset: row-wise (x) and both copies from one read (x/xt, dy/dyt),
//       median of CUDA-event timings over >= 2 rotating input buffers (> 120 MB, beyond L2),
//       after warm-up; effective GB/s = (input bytes + output bytes) / time, beside the measured
//       device-to-device copy bandwidth (bytes read + written), and the bytes the kernels
//       actually move (stats and OCC passes re-read the input). Two-level presets also with the
//       amax given (QuantizeArgs::amax, delayed scaling: one pass), rows named "... amax".
//       Three timings per row: each call alone (events around it after a spinning lead kernel,
//       cuda::GpuTimer, so the GPU time is measured without the host's planning and enqueueing;
//       the host's time is printed beside it); the same calls back to back with an event between
//       each two (the median interval); and in a row: runs of calls enqueued back to back with
//       nothing between them, one event pair around each run after the lead (the run's time
//       over its calls, median of 5 runs), as a training step enqueues its work. An event
//       recorded between two kernels costs the stream about 1.5 us on an H100
//       (bench/event_cost.cu), 3 % of a 50 us call: the in-a-row figure leaves it out.
//       --amax-out: which calls also write the input's amax (QuantizedView::amax): `needed` (the
//       default) those of two-level operands, whose amax a delayed-scaling step records for the
//       next one (and which the "amax" rows take from the first rows' output), none for the
//       others, as fp4jit's linear step asks; `all` every call (an extra reduction per element
//       and, where no stats pass computes it, a zeroing launch per call).
//   quantize_bench compile-times [--json FILE]
//       cold NVRTC compile of every kernel of every preset (BF16), no cache.
//   quantize_bench cache-load --cache DB [--json FILE]
//       in this (fresh) process: each kernel from the SQLite cache to a CUfunction.
//   quantize_bench precompile --cache DB [--recipes a;b]  (no GPU needed)
//       every kernel of the recipes, all input types, into DB.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_args.hpp"
#include "runtime/compile.hpp"
#include "runtime/cuda/cuda_backend.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/cuda/kernel_binary.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit::bench {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Random BF16 values of wide magnitude (exponents 2^-8..2^8), no NaN/Inf: threads fill chunks.
std::vector<std::uint16_t> random_bf16(std::size_t n) {
  std::vector<std::uint16_t> out(n);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::uint64_t s = 0x9e3779b97f4a7c15ull * (t + 1);
      for (std::size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const std::uint32_t exp = 119 + static_cast<std::uint32_t>((s >> 8) % 17);
        out[i] = static_cast<std::uint16_t>(((s & 1) << 15) | (exp << 7) | ((s >> 32) & 0x7f));
      }
    });
  for (auto& p : pool) p.join();
  return out;
}

struct Outputs {
  cuda::DeviceBuffer codes, scales, tensor_scale, amax, index, value, count;
  std::int64_t capacity;
  Outputs(const QuantLayout& l, bool occ)
      : codes(l.code_bytes()),
        scales(l.scale_count() * (l.scale_is_code ? 1 : 4)),
        tensor_scale(4),
        amax(4),
        index(occ ? l.rows * l.cols / 8 * 8 : 8),
        value(occ ? l.rows * l.cols / 8 * 4 : 4),
        count(8),
        capacity(occ ? l.rows * l.cols / 8 : 0) {}
  QuantizedView view(bool with_amax) {
    QuantizedView v;
    v.codes = codes.get<std::uint8_t>();
    v.scales = scales.get();
    v.tensor_scale = tensor_scale.get<float>();
    v.amax = with_amax ? amax.get<float>() : nullptr;
    v.residual_index = index.get<std::int64_t>();
    v.residual_value = value.get<float>();
    v.residual_count = count.get<std::int64_t>();
    v.residual_capacity = capacity;
    return v;
  }
  std::int64_t bytes(const QuantLayout& l) const {
    return l.code_bytes() + l.scale_count() * (l.scale_is_code ? 1 : 4);
  }
};

double copy_bandwidth(const cuda::Driver& d) {
  const std::size_t bytes = std::size_t{1} << 30;
  cuda::DeviceBuffer a(bytes), b(bytes);
  a.fill(1);
  cuda::EventTimer t(d);
  std::vector<double> ms;
  for (int i = 0; i < 25; ++i) {
    t.start();
    cuda::check(d.memcpy_dtod_async(reinterpret_cast<CUdeviceptr>(b.get()),
                                    reinterpret_cast<CUdeviceptr>(a.get()), bytes, nullptr),
                "cuMemcpyDtoDAsync");
    const double m = t.stop_ms();
    if (i >= 5) ms.push_back(m);
  }
  return 2.0 * static_cast<double>(bytes) / (median(ms) * 1e-3) / 1e9;
}

struct Row {
  std::string preset, mode;
  std::int64_t n;
  double ms, effective_gbps, actual_gbps, copy_ratio;
  std::int64_t bytes, actual_bytes;
  double host_us;  // median host time per call (planning and enqueueing)
  // The same calls enqueued back to back (no synchronization between them): the median interval
  // between consecutive events, i.e. the device's time per call when the host keeps ahead.
  double stream_ms, stream_gbps, stream_ratio;
  // Runs of calls with nothing between them (one event pair around each run, after the lead):
  // the median over runs of the run's time per call.
  double row_ms, row_gbps, row_ratio;
};

int run_bench(const std::vector<std::string>& args) {
  cuda::DeviceScope scope(0);
  const cuda::Driver& d = scope.driver();
  EngineOptions options;
  options.backend = BackendKind::cuda;
  Engine engine(options);
  fmt::print("{}\n", engine.description());
  const double copy_gbps = copy_bandwidth(d);
  fmt::print("device-to-device copy: {:.1f} GB/s (bytes read + written, 1 GiB, median of 20)\n",
             copy_gbps);
  std::vector<std::int64_t> sizes;
  for (const auto& s : split(arg(args, "--sizes", "8192,16384"), ','))
    sizes.push_back(std::stoll(s));
  const int reps_arg = std::stoi(arg(args, "--reps", "0"));
  const std::string amax_out = arg(args, "--amax-out", "needed");
  if (amax_out != "needed" && amax_out != "all")
    throw std::runtime_error("--amax-out: '" + amax_out + "' (valid: needed, all)");
  // Comma-separated filters (empty: everything).
  const std::vector<std::string> presets_arg = split(arg(args, "--presets", ""), ',');
  const std::vector<std::string> modes_arg = split(arg(args, "--modes", ""), ',');
  const auto wanted = [](const std::vector<std::string>& list, std::string_view name) {
    if (list.empty() || (list.size() == 1 && list[0].empty())) return true;
    for (const auto& s : list)
      if (s == name) return true;
    return false;
  };
  for (const auto& m : modes_arg)
    if (!m.empty() && m != "rows" && m != "pair")
      throw std::runtime_error("--modes: unknown mode '" + m + "' (valid: rows, pair)");
  for (const auto& name : presets_arg) {
    bool known = name.empty();
    for (const auto& p : presets()) known = known || p.name == name;
    if (!known) parse_recipe(name);  // names the valid presets
  }
  std::vector<Row> rows;
  const std::int64_t max_n = *std::max_element(sizes.begin(), sizes.end());
  const std::vector<std::uint16_t> host = random_bf16(static_cast<std::size_t>(max_n * max_n));
  cuda::GpuTimer timer(d);      // one call's GPU time, the host's enqueueing hidden
  cuda::GpuTimer run_timer(d);  // a run of calls in a row (its own lead: a run's enqueue is longer)
  for (const std::int64_t n : sizes) {
    const std::size_t in_bytes = static_cast<std::size_t>(n * n * 2);
    const int buffers =
        std::max<int>(2, static_cast<int>((240ll << 20) / static_cast<std::int64_t>(in_bytes)) + 1);
    std::vector<cuda::DeviceBuffer> inputs;
    for (int b = 0; b < buffers; ++b) {
      inputs.emplace_back(in_bytes);
      inputs.back().upload(host.data(), in_bytes);
    }
    const int reps = reps_arg > 0 ? reps_arg : (n >= 16384 ? 20 : 50);
    for (const auto& p : presets()) {
      if (!wanted(presets_arg, p.name)) continue;
      const Recipe recipe = parse_recipe(p.name);
      struct Mode {
        std::string name;
        Role role;
        bool pair;
      };
      for (const Mode& m :
           {Mode{"rows x", Role::x, false}, Mode{"pair x+xt", Role::x, true},
            Mode{"rows dy", Role::dy, false}, Mode{"pair dy+dyt", Role::dy, true}}) {
        if (!wanted(modes_arg, m.pair ? "pair" : "rows")) continue;
        const Role partner = m.role == Role::x ? Role::xt : Role::dyt;
        const QuantLayout lr = quant_layout(recipe, m.role, n, n);
        const QuantLayout lc = quant_layout(recipe, partner, n, n);
        std::vector<Outputs> out, out_t;
        for (int b = 0; b < buffers; ++b) {
          out.emplace_back(lr, recipe[m.role].occ);
          out_t.emplace_back(lc, recipe[partner].occ);
        }
        // Two-level operands a second time with the amax given (delayed scaling: one pass),
        // the amax of the first runs' outputs.
        const bool two_level = recipe[m.role].rule == ScaleRule::two_level;
        const bool amax_row = amax_out == "all" || two_level;
        const bool amax_col = amax_out == "all" || recipe[partner].rule == ScaleRule::two_level;
        cuda::DeviceBuffer amax_in(8);
        for (const bool given : {false, true}) {
          if (given && !two_level) break;
          if (given) {
            const auto dst = reinterpret_cast<CUdeviceptr>(amax_in.get());
            cuda::check(d.memcpy_dtod_async(dst, reinterpret_cast<CUdeviceptr>(out[0].amax.get()),
                                            4, nullptr),
                        "cuMemcpyDtoDAsync");
            cuda::check(
                d.memcpy_dtod_async(dst + 4, reinterpret_cast<CUdeviceptr>(out_t[0].amax.get()), 4,
                                    nullptr),
                "cuMemcpyDtoDAsync");
          }
          // Call i: input buffer i % buffers, its own random-bit offset.
          const auto call = [&](int i) {
            const int b = i % buffers;
            const TensorView in{inputs[b].get(), DType::bf16, n, n, 0};
            QuantizeArgs qa{1234, static_cast<std::uint64_t>(i) * n * n};
            if (given) {
              qa.amax = amax_in.get<float>();
              qa.amax_transposed = amax_in.get<float>() + 1;
            }
            if (m.pair)
              engine.quantize_pair(recipe, m.role, in, out[b].view(amax_row),
                                   out_t[b].view(amax_col), qa);
            else
              engine.quantize(recipe, m.role, in, out[b].view(amax_row), qa);
          };
          std::vector<double> ms, host_us;
          for (int i = 0; i < reps + 3; ++i) {
            const double t = timer.ms([&] { call(i); });
            if (i >= 3) {
              ms.push_back(t);
              host_us.push_back(1e3 * timer.last_host_ms());
            }
          }
          // Back to back: events between calls, one synchronization at the end.
          cuda::EventSeries series(d, reps + 1);
          for (int i = 0; i < reps + 3; ++i) {
            if (i == 3) series.mark(0);
            call(i);
            if (i >= 3) series.mark(i - 2);
          }
          const double stream_med = median(series.intervals_ms());
          // In a row: kRuns runs of `reps` calls, nothing recorded between the calls of a run.
          constexpr int kRuns = 5;
          std::vector<double> run_ms;
          for (int r = 0; r < kRuns; ++r) {
            const int first = 3 + r * reps;
            run_ms.push_back(run_timer.ms([&] {
              for (int i = 0; i < reps; ++i) call(first + i);
            }) / reps);
          }
          const double row_med = median(run_ms);
          const double med = median(ms);
          const std::int64_t bytes = static_cast<std::int64_t>(in_bytes) + out[0].bytes(lr) +
                                     (m.pair ? out_t[0].bytes(lc) : 0);
          cuda::Arena counting;
          QuantizedView qv = out[0].view(amax_row), qt = out_t[0].view(amax_col);
          const TensorView in0{inputs[0].get(), DType::bf16, n, n, 0};
          QuantizeArgs pa{};
          if (given) {
            pa.amax = amax_in.get<float>();
            pa.amax_transposed = amax_in.get<float>() + 1;
          }
          const cuda::Plan plan =
              cuda::plan_quantize(recipe, m.role, in0, qv, m.pair ? &qt : nullptr, pa,
                                  cuda::DeviceInfo{"sm_90a", 132}, counting);
          const std::int64_t moved = cuda::plan_bytes(plan);
          Row r{p.name.data(),
                given ? m.name + " amax" : m.name,
                n,
                med,
                bytes / (med * 1e-3) / 1e9,
                moved / (med * 1e-3) / 1e9,
                0.0,
                bytes,
                moved,
                median(host_us),
                stream_med,
                bytes / (stream_med * 1e-3) / 1e9,
                0.0,
                row_med,
                bytes / (row_med * 1e-3) / 1e9,
                0.0};
          r.copy_ratio = r.effective_gbps / copy_gbps;
          r.stream_ratio = r.stream_gbps / copy_gbps;
          r.row_ratio = r.row_gbps / copy_gbps;
          rows.push_back(r);
          fmt::print(
              "{:<9} {:<12} {:>6}  {:8.3f} ms  {:7.1f} GB/s  {:5.1f}% of copy  (kernels move "
              "{:7.1f} "
              "GB/s, {} passes' bytes {:.2f}x; host {:.1f} us per call); back to back "
              "{:.3f} ms = {:5.1f}% of copy; in a row {:.3f} ms = {:5.1f}% of copy\n",
              r.preset, r.mode, n, med, r.effective_gbps, 100 * r.copy_ratio, r.actual_gbps,
              std::count_if(
                  plan.begin(), plan.end(),
                  [](const cuda::Step& s) { return std::holds_alternative<cuda::Launch>(s); }),
              static_cast<double>(moved) / static_cast<double>(bytes), r.host_us, r.stream_ms,
              100 * r.stream_ratio, r.row_ms, 100 * r.row_ratio);
        }
      }
    }
  }
  const std::string json = arg(args, "--json", "");
  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\n \"device\": \"" << engine.description() << "\",\n \"copy_GBps\": " << copy_gbps
      << ",\n \"rows\": [\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      f << fmt::format(
          "  {{\"preset\": \"{}\", \"mode\": \"{}\", \"n\": {}, \"ms\": {:.5f}, "
          "\"effective_GBps\": {:.1f}, "
          "\"copy_ratio\": {:.4f}, \"bytes\": {}, \"kernel_bytes\": {}, \"kernel_GBps\": "
          "{:.1f}, \"host_us\": {:.1f}, \"stream_ms\": {:.5f}, \"stream_GBps\": {:.1f}, "
          "\"stream_copy_ratio\": {:.4f}, \"in_a_row_ms\": {:.5f}, \"in_a_row_GBps\": {:.1f}, "
          "\"in_a_row_copy_ratio\": {:.4f}}}{}\n",
          r.preset, r.mode, r.n, r.ms, r.effective_gbps, r.copy_ratio, r.bytes, r.actual_bytes,
          r.actual_gbps, r.host_us, r.stream_ms, r.stream_gbps, r.stream_ratio, r.row_ms,
          r.row_gbps, r.row_ratio, i + 1 < rows.size() ? "," : "");
    }
    f << " ]\n}\n";
  }
  return 0;
}

std::vector<codegen::KernelSource> preset_kernels(const std::string& target) {
  std::vector<codegen::KernelSource> out;
  const std::array<DType, 1> bf16{DType::bf16};
  for (const auto& p : presets())
    for (auto& k : cuda::recipe_kernels(parse_recipe(p.name), target, bf16))
      out.push_back(std::move(k));
  return out;
}

void write_times(const std::string& path, const std::string& what,
                 const std::vector<std::pair<std::string, double>>& t) {
  if (path.empty()) return;
  std::ofstream f(path);
  f << "{\n \"" << what << "\": [\n";
  for (std::size_t i = 0; i < t.size(); ++i)
    f << fmt::format("  {{\"op\": \"{}\", \"ms\": {:.3f}}}{}\n", t[i].first, t[i].second,
                     i + 1 < t.size() ? "," : "");
  f << " ]\n}\n";
}

int run_compile_times(const std::vector<std::string>& args) {
  const auto kernels = preset_kernels("sm_90a");
  cuda::compile_kernel(kernels.front());  // loads NVRTC and its builtins once, untimed
  std::vector<std::pair<std::string, double>> times;
  std::map<std::string, std::vector<double>> by_op;
  std::vector<double> all;
  for (const auto& k : kernels) {
    const auto t0 = Clock::now();
    cuda::compile_kernel(k);
    const double ms = ms_since(t0);
    times.emplace_back(k.op, ms);
    by_op[k.op].push_back(ms);
    all.push_back(ms);
  }
  fmt::print(
      "cold NVRTC compile ({}), {} kernels of the 5 presets (BF16, sm_90a): median {:.1f} ms, max "
      "{:.1f} ms\n",
      cuda::Nvrtc::get().compiler(), all.size(), median(all),
      *std::max_element(all.begin(), all.end()));
  for (const auto& [op, v] : by_op)
    fmt::print("  {:<14} {:3} kernels, median {:7.1f} ms\n", op, v.size(), median(v));
  write_times(arg(args, "--json", ""), "compile_ms", times);
  return 0;
}

int run_cache_load(const std::vector<std::string>& args) {
  const auto t_open = Clock::now();
  cuda::DeviceScope scope(0);
  const cuda::Driver& d = scope.driver();
  KernelCache cache(arg(args, "--cache", KernelCache::default_path()));
  const double open_ms = ms_since(t_open);
  const auto kernels = preset_kernels("sm_90a");
  std::vector<std::pair<std::string, double>> times;
  std::vector<double> all;
  int misses = 0;
  for (const auto& k : kernels) {
    const auto t0 = Clock::now();
    const cuda::KernelBinary b = cuda::kernel_binary(k, &cache);
    CUmodule module = nullptr;
    CUfunction fn = nullptr;
    cuda::check(d.module_load_data(&module, b.cubin.data()), "cuModuleLoadData");
    cuda::check(d.module_get_function(&fn, module, b.symbol.c_str()), "cuModuleGetFunction");
    const double ms = ms_since(t0);
    if (!b.from_cache) ++misses;
    times.emplace_back(k.op, ms);
    all.push_back(ms);
    d.module_unload(module);
  }
  fmt::print(
      "kernel from the SQLite cache to a CUfunction, fresh process: first {:.3f} ms, median {:.3f} "
      "ms, max {:.3f} ms "
      "over {} kernels ({} misses); context + cache open {:.1f} ms\n",
      all.front(), median(all), *std::max_element(all.begin(), all.end()), all.size(), misses,
      open_ms);
  write_times(arg(args, "--json", ""), "cache_load_ms", times);
  return misses == 0 ? 0 : 1;
}

int run_precompile(const std::vector<std::string>& args) {
  KernelCache cache(arg(args, "--cache", KernelCache::default_path()));
  std::vector<std::string> recipes;
  const std::string list = arg(args, "--recipes", "");
  if (list.empty())
    for (const auto& p : presets()) recipes.emplace_back(p.name);
  else
    recipes = split(list, ';');
  const std::array<DType, 3> dtypes{DType::f32, DType::f16, DType::bf16};
  std::size_t total = 0;
  const auto t0 = Clock::now();
  for (const auto& r : recipes)
    total += compile_recipe(parse_recipe(r), arg(args, "--arch", "sm_90a"), &cache, dtypes).size();
  fmt::print("{} kernels of {} recipes in {} ({:.1f} s)\n", total, recipes.size(), cache.path(),
             ms_since(t0) / 1000);
  return 0;
}

}  // namespace
}  // namespace fp4jit::bench

int main(int argc, char** argv) {
  using namespace fp4jit::bench;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string cmd = args.empty() ? "bench" : args[0];
  try {
    if (cmd == "bench") return run_bench(args);
    if (cmd == "compile-times") return run_compile_times(args);
    if (cmd == "cache-load") return run_cache_load(args);
    if (cmd == "precompile") return run_precompile(args);
    fmt::print(stderr, "unknown command '{}' (bench, compile-times, cache-load, precompile)\n",
               cmd);
    return 2;
  } catch (const fp4jit::Error& e) {
    fmt::print(stderr, "quantize_bench: {}\n", e.what());
    return 1;
  }
}
