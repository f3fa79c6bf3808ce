// host_overhead: the host time of the CUDA backend's Engine calls, i.e. how long the caller's
// thread spends enqueueing a layer's work (planning, checks, module and tuning lookups, driver
// calls), not the GPU time.
//
//   fp4jit_host_overhead [--recipes mxfp4,nvfp4] [--shapes 8192x4096x4096] [--steps N]
//                        [--rounds R] [--json FILE] [--calls] [--driver]
//
// Per recipe and shape (tokens x out x in), after a warm-up that loads every kernel: R rounds of
// N calls each, the host's steady-clock time of the N enqueues divided by N, then one
// synchronization per round (outside the timing); the median over rounds is reported for:
//   step      linear_forward (with the saved copies) + linear_backward (dX and dW)
//   forward   linear_forward alone
//   gemm      one fprop Engine::gemm of quantized operands
//   quantize  one quantize_pair of X
// N defaults to 20 so that the GPU's launch queue (about a thousand entries) never fills: a full
// queue would make the host wait for the GPU.
//
// With the stand-in driver of tests/fake_driver (LD_LIBRARY_PATH=<its dir>) no GPU is needed:
// the figures are then the library's own host cost with free driver calls, and the driver calls
// each Engine call makes are counted ("driver calls" column; --calls lists them per entry point).
// --driver first times single driver calls of the kinds the Engine makes (median of rounds of
// 200 calls each, a synchronization between rounds): what each one costs on this host.
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/recipe.hpp"
#include "fp4jit/engine.hpp"
#include "runtime/cuda/device_memory.hpp"

namespace fp4jit::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A symbol of the stand-in driver (tests/fake_driver) when that is the libcuda.so.1 loaded, else
// null: fake_cuda_calls (calls per entry point) and fake_cuda_name (entry point i).
using CountFn = long (*)(const char*);
using NameFn = const char* (*)(int);
void* fake_symbol(const char* name) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib == nullptr ? nullptr : dlsym(lib, name);
}

struct Row {
  std::string recipe, shape, what;
  double us = 0;
  double driver_calls = -1;  // per Engine call (stand-in driver only)
  double launches = -1;
};

template <class Fn>
double per_call_us(cuda::DeviceScope& scope, int rounds, Fn fn) {
  constexpr int kCalls = 200;  // under the launch queue's depth for the asynchronous calls
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kCalls; ++i) fn();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kCalls);
    scope.synchronize();
  }
  return median(us);
}

void driver_calls(cuda::DeviceScope& scope, int rounds) {
  const cuda::Driver& d = scope.driver();
  cuda::DeviceBuffer buf(1 << 20);
  const auto p = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(buf.get()));
  CUcontext ctx = nullptr;
  cuda::check(d.ctx_get_current(&ctx), "cuCtxGetCurrent");
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  cuda::check(d.mem_pool_create(&pool, &props), "cuMemPoolCreate");
  cuuint64_t keep = ~cuuint64_t{0};
  cuda::check(d.mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
              "cuMemPoolSetAttribute");
  const auto ok = [](CUresult r, const char* what) { cuda::check(r, what); };
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"cuCtxGetCurrent",
       [&] {
         CUcontext c = nullptr;
         ok(d.ctx_get_current(&c), "cuCtxGetCurrent");
       }},
      {"cuCtxPushCurrent + cuCtxPopCurrent",
       [&] {
         ok(d.ctx_push_current(ctx), "cuCtxPushCurrent");
         CUcontext c = nullptr;
         ok(d.ctx_pop_current(&c), "cuCtxPopCurrent");
       }},
      {"cuPointerGetAttribute (memory type)",
       [&] {
         unsigned type = 0;
         ok(d.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 4096),
            "cuPointerGetAttribute");
       }},
      {"cuPointerGetAttributes (type, range)",
       [&] {
         unsigned type = 0;
         CUdeviceptr start = 0;
         std::size_t size = 0;
         CUpointer_attribute a[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                     CU_POINTER_ATTRIBUTE_RANGE_SIZE};
         void* data[3] = {&type, &start, &size};
         ok(d.pointer_get_attributes(3, a, data, p + 4096), "cuPointerGetAttributes");
       }},
      {"cuMemAllocFromPoolAsync + cuMemFreeAsync (64 MiB)",
       [&] {
         CUdeviceptr q = 0;
         ok(d.mem_alloc_from_pool_async(&q, 64 << 20, pool, nullptr), "cuMemAllocFromPoolAsync");
         ok(d.mem_free_async(q, nullptr), "cuMemFreeAsync");
       }},
      {"cuMemsetD32Async (1 word)",
       [&] { ok(d.memset_d32_async(p, 0, 1, nullptr), "cuMemsetD32Async"); }},
      {"cuTensorMapEncodeTiled",
       [&] {
         CUtensorMap map;
         const cuuint64_t dims[2] = {1024, 1024};
         const cuuint64_t strides[1] = {1024};
         const cuuint32_t box[2] = {128, 128};
         const cuuint32_t es[2] = {1, 1};
         ok(d.tensor_map_encode_tiled(
                &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, buf.get(), dims, strides, box, es,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            "cuTensorMapEncodeTiled");
       }},
  };
  for (const auto& [name, fn] : calls)
    fmt::print("  {:<52} {:7.2f} us\n", name, per_call_us(scope, rounds, fn));
  scope.synchronize();
  d.mem_pool_destroy(pool);
}

int run(const std::vector<std::string>& args) {
  const auto recipes = split(arg(args, "--recipes", "mxfp4,nvfp4,tetrajet,ue5m3"), ',');
  const auto shapes = split(arg(args, "--shapes", "8192x4096x4096"), ',');
  const int steps = std::stoi(arg(args, "--steps", "20"));
  const int rounds = std::stoi(arg(args, "--rounds", "15"));
  const std::string json = arg(args, "--json", "");
  const bool verbose = std::find(args.begin(), args.end(), "--calls") != args.end();
  if (steps < 1 || rounds < 1)
    throw Error(ErrorKind::invalid_argument, "--steps and --rounds must be >= 1");

  cuda::DeviceScope scope;
  EngineOptions options;
  options.backend = BackendKind::cuda;
  Engine engine(options);
  const auto calls = reinterpret_cast<CountFn>(fake_symbol("fake_cuda_calls"));
  const auto entry_name = reinterpret_cast<NameFn>(fake_symbol("fake_cuda_name"));
  fmt::print("{}\n{}\n", engine.description(),
             calls ? "stand-in driver: driver calls are free; the figures are the library's own"
                   : "real driver");
  if (std::find(args.begin(), args.end(), "--driver") != args.end()) {
    fmt::print("driver calls, host time each:\n");
    driver_calls(scope, rounds);
  }
  std::vector<Row> rows;
  for (const std::string& shape_text : shapes) {
    const auto dims = split(shape_text, 'x');
    if (dims.size() != 3)
      throw Error(ErrorKind::invalid_argument,
                  fmt::format("--shapes: '{}' is not TxOxI", shape_text));
    const LinearShape s{std::stoll(dims[0]), std::stoll(dims[2]), std::stoll(dims[1])};
    const auto bf16 = [&](std::int64_t r, std::int64_t c) {
      return cuda::DeviceBuffer(static_cast<std::size_t>(r * c * 2));
    };
    cuda::DeviceBuffer x = bf16(s.tokens, s.in), w = bf16(s.out, s.in), y = bf16(s.tokens, s.out),
                       dx = bf16(s.tokens, s.in), dw = bf16(s.out, s.in), bias = bf16(1, s.out),
                       db = bf16(1, s.out);
    for (const std::string& name : recipes) {
      const Recipe recipe = parse_recipe(name);
      const LinearBuffers lb = Engine::linear_buffers(recipe, s);
      cuda::DeviceBuffer saved(static_cast<std::size_t>(lb.saved_bytes));
      cuda::DeviceBuffer fwd(static_cast<std::size_t>(lb.forward_scratch_bytes));
      cuda::DeviceBuffer bwd(static_cast<std::size_t>(lb.backward_scratch_bytes));
      const TensorView xv{x.get(), DType::bf16, s.tokens, s.in};
      const TensorView wv{w.get(), DType::bf16, s.out, s.in};
      const TensorView yv{y.get(), DType::bf16, s.tokens, s.out};
      const TensorView dxv{dx.get(), DType::bf16, s.tokens, s.in};
      const TensorView dwv{dw.get(), DType::bf16, s.out, s.in};
      // Quantized operands for the gemm / quantize rows: the forward scratch holds X and W.
      const QuantLayout lx = engine.layout(recipe, Role::x, s.tokens, s.in);
      const QuantLayout lw = engine.layout(recipe, Role::w, s.out, s.in);
      const QuantLayout lxt = engine.layout(recipe, Role::xt, s.tokens, s.in);
      cuda::DeviceBuffer qa(static_cast<std::size_t>(lx.code_bytes() + 4 * lx.scale_count() + 256));
      cuda::DeviceBuffer qb(static_cast<std::size_t>(lw.code_bytes() + 4 * lw.scale_count() + 256));
      cuda::DeviceBuffer qt(
          static_cast<std::size_t>(lxt.code_bytes() + 4 * lxt.scale_count() + 256));
      const auto view = [](cuda::DeviceBuffer& b, const QuantLayout& l) {
        QuantizedView q;
        q.codes = b.get<std::uint8_t>();
        q.scales = b.get<std::uint8_t>() + (l.code_bytes() + 255) / 256 * 256;
        q.tensor_scale = reinterpret_cast<float*>(b.get<std::uint8_t>() + b.bytes() - 256);
        return q;
      };
      const QuantizedView qx = view(qa, lx), qw = view(qb, lw), qxt = view(qt, lxt);
      std::uint64_t seed = 1;
      const std::vector<std::pair<std::string, std::function<void()>>> cases = {
          {"step",
           [&] {
             engine.linear_forward(recipe, xv, wv, bias.get(), DType::bf16, yv, seed, seed + 1,
                                   saved.get(), fwd.get(), nullptr);
             engine.linear_backward(recipe, s.in, yv, saved.get(), bwd.get(), dxv, dwv, db.get(),
                                    DType::bf16, seed + 2, nullptr);
             seed += 3;
           }},
          {"forward",
           [&] {
             engine.linear_forward(recipe, xv, wv, bias.get(), DType::bf16, yv, seed, seed + 1,
                                   saved.get(), fwd.get(), nullptr);
             seed += 2;
           }},
          {"gemm",
           [&] {
             engine.gemm(recipe, GemmOp::fprop, qx, qw, GemmShape{s.tokens, s.out, s.in}, yv, {},
                         nullptr);
           }},
          {"quantize",
           [&] {
             engine.quantize_pair(recipe, Role::x, xv, qx, qxt, QuantizeArgs{seed++, 0}, nullptr);
           }},
      };
      for (const auto& [what, fn] : cases) {
        fn();  // loads (or compiles) the kernels
        scope.synchronize();
        std::vector<double> us;
        std::vector<long> before;
        if (calls && entry_name)
          for (int i = 0; entry_name(i) != nullptr; ++i) before.push_back(calls(entry_name(i)));
        const long calls_before = calls ? calls(nullptr) : 0;
        const long launches_before = calls ? calls("cuLaunchKernel") : 0;
        for (int r = 0; r < rounds; ++r) {
          const auto t0 = Clock::now();
          for (int i = 0; i < steps; ++i) fn();
          us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                       steps);
          scope.synchronize();
        }
        Row row{name, shape_text, what, median(us)};
        if (calls) {
          const double n = static_cast<double>(rounds) * steps;
          row.driver_calls = static_cast<double>(calls(nullptr) - calls_before) / n;
          row.launches = static_cast<double>(calls("cuLaunchKernel") - launches_before) / n;
        }
        fmt::print("{:<10} {:<16} {:<9} {:8.1f} us/call", name, shape_text, what, row.us);
        if (calls)
          fmt::print("   {:5.1f} driver calls ({:.1f} launches)", row.driver_calls, row.launches);
        fmt::print("\n");
        if (calls && entry_name && verbose) {
          const double n = static_cast<double>(rounds) * steps;
          for (int i = 0; entry_name(i) != nullptr; ++i)
            if (const long d = calls(entry_name(i)) - before[static_cast<std::size_t>(i)]; d > 0)
              fmt::print("      {:<44} {:6.1f}\n", entry_name(i), static_cast<double>(d) / n);
        }
        rows.push_back(row);
      }
    }
  }
  if (!json.empty()) {
    std::ofstream out(json);
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << fmt::format(
          R"(  {{"recipe": "{}", "shape": "{}", "call": "{}", "host_us": {:.2f}, "driver_calls": {}, "launches": {}, "stand_in_driver": {}}}{})",
          r.recipe, r.shape, r.what, r.us, r.driver_calls, r.launches, calls ? "true" : "false",
          i + 1 < rows.size() ? ",\n" : "\n");
    }
    out << "]\n";
  }
  return 0;
}

}  // namespace
}  // namespace fp4jit::bench

int main(int argc, char** argv) {
  try {
    return fp4jit::bench::run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    fmt::print(stderr, "fp4jit_host_overhead: {}\n", e.what());
    return 1;
  }
}
