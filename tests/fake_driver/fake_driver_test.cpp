// The CUDA backend's host side without a GPU, on the stand-in driver (fake_cuda.cpp, loaded
// through LD_LIBRARY_PATH by ctest): the driver calls an Engine call makes, and its pointer
// checks. Kernels are compiled by NVRTC as on a GPU machine; nothing runs.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/recipe.hpp"
#include "fp4jit/engine.hpp"
#include "runtime/backend.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/cuda/driver.hpp"

namespace fp4jit {
namespace {

using CountFn = long (*)(const char*);
using ResetFn = void (*)();
using LastLaunchFn = void (*)(int*, int*, int*);

class FakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available())
      GTEST_SKIP() << "no driver loaded (LD_LIBRARY_PATH must name the stand-in)";
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(lib, nullptr);
    calls_ = reinterpret_cast<CountFn>(dlsym(lib, "fake_cuda_calls"));
    reset_ = reinterpret_cast<ResetFn>(dlsym(lib, "fake_cuda_reset"));
    last_launch_ = reinterpret_cast<LastLaunchFn>(dlsym(lib, "fake_cuda_last_launch_ex"));
    if (calls_ == nullptr || reset_ == nullptr || last_launch_ == nullptr)
      GTEST_SKIP() << "the loaded libcuda.so.1 is a real driver, not the stand-in";
    EngineOptions o;
    o.backend = BackendKind::cuda;
    // One cache for every test of this binary (tests/fake_driver/CMakeLists.txt): what is counted
    // here are driver calls, the same whether a kernel came from NVRTC or from the cache.
    o.cache_path = FP4JIT_TEST_KERNELS;
    engine_ = std::make_unique<Engine>(o);
  }
  long calls(const char* name) const { return calls_(name); }
  // An fprop GEMM once (compiling and loading its kernels), then `times` more with the driver
  // calls counted from zero.
  void counted_gemms(const Recipe& r, const GemmShape& s, const QuantizedView& a,
                     const QuantizedView& b, const TensorView& y, int times) {
    engine_->gemm(r, GemmOp::fprop, a, b, s, y, {}, nullptr);
    reset_();
    for (int i = 0; i < times; ++i) engine_->gemm(r, GemmOp::fprop, a, b, s, y, {}, nullptr);
  }
  long pointer_queries() const {
    return calls("cuPointerGetAttribute") + calls("cuPointerGetAttributes");
  }

  // The last cuLaunchKernelEx's grid, cluster size and programmatic dependency.
  struct LaunchEx {
    int grid = 0, cluster = 0, dependent = 0;
  };
  LaunchEx last_launch_ex() const {
    LaunchEx l;
    last_launch_(&l.grid, &l.cluster, &l.dependent);
    return l;
  }

  CountFn calls_ = nullptr;
  ResetFn reset_ = nullptr;
  LastLaunchFn last_launch_ = nullptr;
  std::unique_ptr<Engine> engine_;
};

// Operand x's codes and scales for a rows x cols source, in (fake) device memory, as a view.
struct XOutput {
  XOutput(const Engine& e, const Recipe& r, std::int64_t rows, std::int64_t cols)
      : layout(e.layout(r, Role::x, rows, cols)),
        codes(static_cast<std::size_t>(layout.code_bytes())),
        scales(static_cast<std::size_t>(layout.scale_count())) {
    q.codes = codes.get<std::uint8_t>();
    q.scales = scales.get();
  }
  QuantLayout layout;
  cuda::DeviceBuffer codes, scales;
  QuantizedView q;
};

// A linear layer's buffers in (fake) device memory.
struct Layer {
  Layer(const Recipe& r, const LinearShape& s) : Layer(s, Engine::linear_buffers(r, s)) {}
  Layer(const LinearShape& s, const LinearBuffers& b)
      : shape(s),
        x(bytes(s.tokens, s.in)),
        w(bytes(s.out, s.in)),
        y(bytes(s.tokens, s.out)),
        dx(bytes(s.tokens, s.in)),
        dw(bytes(s.out, s.in)),
        saved(static_cast<std::size_t>(b.saved_bytes)),
        fwd(static_cast<std::size_t>(b.forward_scratch_bytes)),
        bwd(static_cast<std::size_t>(b.backward_scratch_bytes)) {}
  static std::size_t bytes(std::int64_t r, std::int64_t c) {
    return static_cast<std::size_t>(r * c * 2);
  }
  // scratch false: no scratch buffers given (the library takes its own).
  void step(Engine& e, const Recipe& r, bool scratch = true) {
    const TensorView xv{x.get(), DType::bf16, shape.tokens, shape.in};
    const TensorView wv{w.get(), DType::bf16, shape.out, shape.in};
    const TensorView yv{y.get(), DType::bf16, shape.tokens, shape.out};
    e.linear_forward(r, xv, wv, nullptr, DType::f32, yv, 1, 2, saved.get(),
                     scratch ? fwd.get() : nullptr, nullptr);
    e.linear_backward(r, shape.in, yv, saved.get(), scratch ? bwd.get() : nullptr,
                      TensorView{dx.get(), DType::bf16, shape.tokens, shape.in},
                      TensorView{dw.get(), DType::bf16, shape.out, shape.in}, nullptr, DType::f32,
                      3, nullptr);
  }
  LinearShape shape;
  cuda::DeviceBuffer x, w, y, dx, dw, saved, fwd, bwd;
};

TEST_F(FakeDriverTest, LinearStepAsksTheDriverOnlyForItsLaunches) {
  cuda::DeviceScope scope;  // the primary context current, as in a framework's thread
  const Recipe r = parse_recipe("mxfp4");
  Layer layer(r, LinearShape{1024, 512, 512});
  reset_();
  layer.step(*engine_, r);  // compiles and loads the kernels
  EXPECT_GT(calls("cuModuleLoadData"), 0);
  EXPECT_GT(pointer_queries(), 0);  // the buffers' allocations, each asked about once
  const long launches = calls("cuLaunchKernel");
  EXPECT_GE(launches, 6);  // at least: three quantize passes and three GEMMs

  reset_();
  layer.step(*engine_, r);
  EXPECT_EQ(calls("cuLaunchKernel"), launches);
  EXPECT_EQ(calls("cuModuleLoadData"), 0);
  EXPECT_EQ(pointer_queries(), 0) << "every pointer lies in an allocation already checked";
  EXPECT_EQ(calls("cuCtxPushCurrent"), 0) << "the context was current already";
  EXPECT_EQ(calls("cuCtxPopCurrent"), 0);
}

// A framework capturing the step into a CUDA graph (torch.cuda.graph: the global capture mode)
// while the library sees the layer for the first time: its kernels are compiled and loaded and its
// new buffers' pointers checked during the capture. Module loads are refused to a thread in the
// global mode (and would invalidate the capture): the library makes them in relaxed mode and gives
// the thread its mode back. Its scratch, taken from its pool during the capture, is a graph
// allocation the driver's pointer queries do not know (an H200 answered "not device memory" for
// it): the backend knows it as its own.
TEST_F(FakeDriverTest, FirstStepDuringAGraphCaptureMakesNoRefusedCall) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  const auto set_capturing = reinterpret_cast<void (*)(int)>(dlsym(lib, "fake_cuda_set_capturing"));
  const auto refused = reinterpret_cast<long (*)()>(dlsym(lib, "fake_cuda_refused"));
  const auto mode = reinterpret_cast<int (*)()>(dlsym(lib, "fake_cuda_capture_mode"));
  ASSERT_TRUE(set_capturing != nullptr && refused != nullptr && mode != nullptr);
  cuda::DeviceScope scope;
  const Recipe r = parse_recipe("mxfp4");
  Layer layer(r, LinearShape{1024, 512, 512});  // allocated before the capture, as a graph's
                                                // static inputs are
  ASSERT_EQ(mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
  reset_();
  set_capturing(1);
  // The model refuses what the driver refuses: a module load in the global mode.
  CUmodule module = nullptr;
  EXPECT_EQ(cuda::require_driver().module_load_data(&module, "image"),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(refused(), 1);
  reset_();
  try {
    layer.step(*engine_, r, false);  // compiles and loads; scratch from the pool
  } catch (const Error& e) {
    set_capturing(0);
    FAIL() << e.what();
  }
  set_capturing(0);
  EXPECT_EQ(refused(), 0);
  EXPECT_GT(calls("cuModuleLoadData"), 0);
  EXPECT_GT(pointer_queries(), 0);
  EXPECT_GT(calls("cuMemAllocFromPoolAsync"), 0);
  EXPECT_EQ(mode(), CU_STREAM_CAPTURE_MODE_GLOBAL) << "the thread's capture mode restored";
}

// A framework's stream-ordered allocator (PyTorch's cudaMallocAsync backend) allocates a captured
// step's tensors as graph memory, which the driver cannot describe until the graph runs: while the
// caller's stream is captured such a pointer is taken; outside a capture it is refused by name.
TEST_F(FakeDriverTest, DuringACaptureMemoryTheDriverCannotDescribeIsTaken) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  const auto set_capturing = reinterpret_cast<void (*)(int)>(dlsym(lib, "fake_cuda_set_capturing"));
  ASSERT_NE(set_capturing, nullptr);
  cuda::DeviceScope scope;
  const Recipe r = parse_recipe("mxfp4");
  const XOutput out(*engine_, r, 64, 64);
  const QuantizedView& q = out.q;
  // An address in no allocation the driver knows (nothing is dereferenced by the stand-in).
  const TensorView graph_memory{reinterpret_cast<void*>(std::uintptr_t{0x7e0000000000}),
                                DType::bf16, 64, 64};
  cuda::DeviceBuffer input(64 * 64 * 2);
  engine_->quantize(r, Role::x, TensorView{input.get(), DType::bf16, 64, 64}, q, QuantizeArgs{},
                    nullptr);  // compiles and loads before the capture
  reset_();
  set_capturing(1);
  try {
    engine_->quantize(r, Role::x, graph_memory, q, QuantizeArgs{}, nullptr);
  } catch (const Error& e) {
    set_capturing(0);
    FAIL() << e.what();
  }
  set_capturing(0);
  EXPECT_EQ(calls("cuLaunchKernel"), 1);
  EXPECT_GT(calls("cuStreamIsCapturing"), 0);
  try {
    engine_->quantize(r, Role::x, graph_memory, q, QuantizeArgs{}, nullptr);
    FAIL() << "an address the driver does not know was taken outside a capture";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("not memory the GPU can address"), std::string::npos)
        << e.what();
  }
}

TEST_F(FakeDriverTest, LinearStepWithoutScratchTakesItFromThePool) {
  cuda::DeviceScope scope;
  for (const char* preset : {"mxfp4", "nvfp4"}) {
    SCOPED_TRACE(preset);
    const Recipe r = parse_recipe(preset);
    Layer layer(r, LinearShape{1024, 512, 512});
    layer.step(*engine_, r);  // compiles and loads the kernels
    reset_();
    layer.step(*engine_, r);
    const long launches = calls("cuLaunchKernel"), memsets = calls("cuMemsetD32Async");
    const long allocs = calls("cuMemAllocFromPoolAsync"), frees = calls("cuMemFreeAsync");
    EXPECT_EQ(allocs, frees);
    reset_();
    layer.step(*engine_, r, /*scratch=*/false);
    EXPECT_EQ(calls("cuLaunchKernel"), launches);
    EXPECT_EQ(calls("cuMemsetD32Async"), memsets);
    EXPECT_EQ(calls("cuMemAllocFromPoolAsync"), allocs + 2) << "one scratch each way";
    EXPECT_EQ(calls("cuMemFreeAsync"), frees + 2) << "each freed in stream order";
    EXPECT_EQ(calls("cuCtxPushCurrent"), 0) << "the context was current already";
  }
}

TEST_F(FakeDriverTest, ContextIsPushedAndPoppedWhenNotCurrent) {
  const Recipe r = parse_recipe("mxfp4");
  std::unique_ptr<Layer> layer;
  {
    cuda::DeviceScope scope;
    layer = std::make_unique<Layer>(r, LinearShape{256, 256, 256});
    layer->step(*engine_, r);
  }  // the scope pops the context: none is current now
  reset_();
  layer->step(*engine_, r);
  EXPECT_GT(calls("cuCtxPushCurrent"), 0);
  EXPECT_EQ(calls("cuCtxPushCurrent"), calls("cuCtxPopCurrent"));
  {
    cuda::DeviceScope scope;
    layer.reset();
  }
}

TEST_F(FakeDriverTest, HostPointersAreRefusedByName) {
  cuda::DeviceScope scope;
  const Recipe r = parse_recipe("mxfp4");
  const XOutput out(*engine_, r, 64, 64);
  const QuantizedView& q = out.q;
  std::vector<std::uint16_t> host(64 * 64);
  const TensorView in{host.data(), DType::bf16, 64, 64};
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second after device ranges were cached
    try {
      engine_->quantize(r, Role::x, in, q, QuantizeArgs{}, nullptr);
      FAIL() << "a host pointer was taken by the CUDA backend";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("quantize input"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("not memory the GPU can address"), std::string::npos);
    }
  }
  // A device input in an allocation already seen, at an offset: no new query.
  cuda::DeviceBuffer dev(64 * 64 * 2 * 2);
  const TensorView first{dev.get(), DType::bf16, 64, 64};
  engine_->quantize(r, Role::x, first, q, QuantizeArgs{}, nullptr);
  reset_();
  const TensorView second{dev.get<std::uint8_t>() + 64 * 64 * 2, DType::bf16, 64, 64};
  engine_->quantize(r, Role::x, second, q, QuantizeArgs{}, nullptr);
  EXPECT_EQ(pointer_queries(), 0);
  EXPECT_EQ(calls("cuLaunchKernel"), 1);
}

// Device buffers (contents unset: nothing runs) for an fprop GEMM of shape s: A and B quantized
// by r, a BF16 output.
struct FpropOperands {
  cuda::DeviceBuffer ac, as, at, bc, bs, bt, out;
  QuantizedView a, b;
  TensorView y;
  FpropOperands(Engine& e, const Recipe& r, const GemmShape& s)
      : out(static_cast<std::size_t>(s.m * s.n * 2)),
        a(make(e, r, Role::x, s.m, s.k, ac, as, at)),
        b(make(e, r, Role::w, s.n, s.k, bc, bs, bt)),
        y{out.get(), DType::bf16, s.m, s.n} {}
  static QuantizedView make(Engine& e, const Recipe& r, Role role, std::int64_t rows,
                            std::int64_t k, cuda::DeviceBuffer& codes, cuda::DeviceBuffer& scales,
                            cuda::DeviceBuffer& tensor_scale) {
    const QuantLayout l = e.layout(r, role, rows, k);
    codes = cuda::DeviceBuffer(static_cast<std::size_t>(l.code_bytes()));
    scales = cuda::DeviceBuffer(static_cast<std::size_t>(l.scale_count()));
    QuantizedView q;
    q.codes = codes.get<std::uint8_t>();
    q.scales = scales.get();
    if (l.two_level) {  // nvfp4, ue5m3: the FP32 tensor scale
      tensor_scale = cuda::DeviceBuffer(4);
      q.tensor_scale = tensor_scale.get<float>();
    }
    return q;
  }
};

// A staged GEMM in clusters of two goes through cuLaunchKernelEx with the cluster dimension, its
// resident-cluster count asked once per kernel; a plain choice through cuLaunchKernel. Each call's
// fused fallback (mxfp4) follows as a programmatic dependent, also through cuLaunchKernelEx.
TEST_F(FakeDriverTest, ClusterGemmLaunchesWithTheClusterDimension) {
  cuda::DeviceScope scope;
  const Recipe r = parse_recipe("mxfp4");
  const GemmShape s{1024, 512, 512};
  const FpropOperands ops(*engine_, r, s);
  const QuantizedView &a = ops.a, &b = ops.b;
  const TensorView& y = ops.y;
  struct Choice {
    explicit Choice(const char* text) { setenv("FP4JIT_SM90_GEMM", text, 1); }
    ~Choice() { unsetenv("FP4JIT_SM90_GEMM"); }
  };
  {
    Choice c("sg=1,bn=192,ps=5,rg=8m,pp=4,cm=2,sk=1");
    counted_gemms(r, s, a, b, y, 3);
    EXPECT_EQ(calls("cuLaunchKernelEx"), 6);
    EXPECT_EQ(last_launch_ex().dependent, 1);
    EXPECT_EQ(last_launch_ex().cluster, 1);
    EXPECT_EQ(calls("cuOccupancyMaxActiveClusters"), 0) << "asked once per kernel, before";
  }
  {
    Choice c("sg=1,bn=192,ps=5,rg=8m,pp=4,sk=1");
    counted_gemms(r, s, a, b, y, 1);
    EXPECT_EQ(calls("cuLaunchKernelEx"), 1);  // the fallback
    EXPECT_EQ(last_launch_ex().cluster, 1);
    EXPECT_GE(calls("cuLaunchKernel"), 2);  // the expansions, the staged kernel
  }
}

// The staged kernel with TMA stores of D (ts=1, the default for 16-bit outputs) encodes D's tensor
// map on every call: element type, dims {N, M}, the row pitch, box {128 bytes, 64 rows}, 128-byte
// swizzle. A D that TMA cannot address (row pitch not a multiple of 16 bytes) and the register-
// store config (ts=0) encode none.
TEST_F(FakeDriverTest, StagedGemmEncodesTheOutputMapForTmaStores) {
  cuda::DeviceScope scope;
  const Recipe r = parse_recipe("mxfp4");
  const GemmShape s{1024, 520, 512};
  const FpropOperands ops(*engine_, r, s);
  using MapsFn = long (*)(long*);
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  const auto maps = reinterpret_cast<MapsFn>(dlsym(lib, "fake_cuda_output_maps"));
  ASSERT_NE(maps, nullptr);
  struct Choice {
    explicit Choice(const char* text) { setenv("FP4JIT_SM90_GEMM", text, 1); }
    ~Choice() { unsetenv("FP4JIT_SM90_GEMM"); }
  };
  long v[7];
  {
    Choice c("staged");
    counted_gemms(r, s, ops.a, ops.b, ops.y, 2);
    EXPECT_EQ(maps(v), 2);
    EXPECT_EQ(std::vector<long>(v, v + 7), (std::vector<long>{2, 520, 1024, 1040, 64, 64, 128}));
  }
  cuda::DeviceBuffer f32(static_cast<std::size_t>(s.m * s.n * 4));
  {
    Choice c("sg=1,bn=128,ps=3,rg=8m,pp=4,ts=1,sk=1");
    counted_gemms(r, s, ops.a, ops.b, TensorView{f32.get(), DType::f32, s.m, s.n}, 1);
    EXPECT_EQ(maps(v), 1);
    EXPECT_EQ(std::vector<long>(v, v + 7), (std::vector<long>{4, 520, 1024, 2080, 32, 64, 128}));
    // 518 floats per row: 2072 bytes, not a multiple of 16.
    counted_gemms(r, GemmShape{1024, 518, 512}, ops.a, ops.b,
                  TensorView{f32.get(), DType::f32, s.m, 518}, 1);
    EXPECT_EQ(maps(v), 0);
  }
  {
    Choice c("sg=1,bn=128,ps=5,rg=8m,pp=4,ts=0,sk=1");
    counted_gemms(r, s, ops.a, ops.b, ops.y, 1);
    EXPECT_EQ(maps(v), 0);
  }
}

// Engine::gemm_kernel names what gemm() launches and why: the heuristic's config (the staged
// kernel with 192-column mx tiles at 8192 x 4096 x 4096, the swapped one at 128 rows), or
// FP4JIT_SM90_GEMM's; a shape the recipe cannot block is refused as gemm() refuses it.
TEST_F(FakeDriverTest, GemmKernelNamesTheConfigAndItsSource) {
  const Recipe r = parse_recipe("mxfp4");
  EXPECT_EQ(engine_->gemm_kernel(r, GemmOp::fprop, GemmShape{8192, 4096, 4096}),
            "sg=1,bn=192,ps=4,rg=8m,pp=4,ts=1,sk=1 (heuristic)");
  EXPECT_EQ(engine_->gemm_kernel(r, GemmOp::fprop, GemmShape{8192, 4096, 4096}, DType::f32),
            "sg=1,bn=192,ps=5,rg=8m,pp=4,sk=1 (heuristic)");
  EXPECT_EQ(engine_->gemm_kernel(r, GemmOp::fprop, GemmShape{128, 4096, 4096}).rfind("sw=1,", 0),
            0u);
  setenv("FP4JIT_SM90_GEMM", "sg=1,bn=128,ps=5,rg=8n,pp=4,sk=2", 1);
  const std::string forced = engine_->gemm_kernel(r, GemmOp::dgrad, GemmShape{8192, 4096, 4096});
  unsetenv("FP4JIT_SM90_GEMM");
  EXPECT_EQ(forced, "sg=1,bn=128,ps=5,rg=8n,pp=4,sk=2 (FP4JIT_SM90_GEMM)");
  try {
    engine_->gemm_kernel(r, GemmOp::fprop, GemmShape{8192, 4096, 4100});
    ADD_FAILURE() << "K = 4100 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
  }
}

// A swapped GEMM with split-K (in clusters of two: no tile counters of its own) and its fused
// fallback (unsplit: one CTA per 128 x 128 tile, no counters either): the call clears nothing (the
// window flag takes a new mark per call instead); A's expansion (with B's check), the swapped
// kernel and the fused fallback are the three launches, the last two as programmatic dependents of
// the one before (cuLaunchKernelEx).
TEST_F(FakeDriverTest, SwappedGemmClearsNothingAndChainsItsFallback) {
  cuda::DeviceScope scope;
  const Recipe r = parse_recipe("mxfp4");
  const GemmShape s{128, 4096, 4096};
  const FpropOperands ops(*engine_, r, s);
  counted_gemms(r, s, ops.a, ops.b, ops.y, 1);
  EXPECT_EQ(calls("cuMemsetD32Async"), 0);
  EXPECT_EQ(calls("cuMemsetD8Async"), 0);
  EXPECT_EQ(calls("cuLaunchKernelEx"), 2);
  EXPECT_EQ(calls("cuLaunchKernel"), 1);
  const LaunchEx fallback = last_launch_ex();
  EXPECT_EQ(fallback.dependent, 1);
  EXPECT_EQ(fallback.cluster, 1);
  EXPECT_EQ(fallback.grid, 4096 / 128);
}

// The unswapped staged GEMM expands both operands in one launch: mxfp4 (a window flag and a
// fused fallback) makes three launches (the expansions, the staged kernel, the fallback as the
// staged kernel's programmatic dependent); nvfp4 (exact in 16 bits: no flag, no fallback) two.
// Neither clears anything: the flag takes a new mark per call, unsplit GEMMs count no tiles.
TEST_F(FakeDriverTest, StagedGemmExpandsBothOperandsInOneLaunch) {
  cuda::DeviceScope scope;
  struct Case {
    const char* recipe;
    int launches, dependents;
  };
  for (const Case& c : {Case{"mxfp4", 3, 1}, Case{"nvfp4", 2, 0}}) {
    const Recipe r = parse_recipe(c.recipe);
    const GemmShape s{8192, 4096, 4096};
    const FpropOperands ops(*engine_, r, s);
    counted_gemms(r, s, ops.a, ops.b, ops.y, 1);
    EXPECT_EQ(calls("cuLaunchKernel") + calls("cuLaunchKernelEx"), c.launches) << c.recipe;
    EXPECT_EQ(calls("cuLaunchKernelEx"), c.dependents) << c.recipe;
    if (c.dependents > 0) {
      EXPECT_EQ(last_launch_ex().dependent, 1) << c.recipe;
    }
    EXPECT_EQ(calls("cuMemsetD32Async"), 0) << c.recipe;
  }
}

// The nv path's swapped GEMM needs no window flag and no fallback: it launches A's expansion and
// the swapped kernel (as its programmatic dependent). Unsplit (11008 columns: 86 tiles of
// 128 x 128) or split in two in clusters (4096 columns: 64 tiles of 64 x 128, clusters of 2) it
// clears nothing; split in four through global memory (64 rows: 32 tiles) one memset clears the
// tile counters.
TEST_F(FakeDriverTest, SwappedNvGemmLaunchesExpansionAndKernelOnly) {
  cuda::DeviceScope scope;
  const Recipe r = parse_recipe("nvfp4");
  struct Case {
    GemmShape s;
    int memsets, grid, cluster;
  };
  for (const Case& c : {Case{{128, 11008, 4096}, 0, 86, 1}, Case{{128, 4096, 4096}, 0, 128, 2},
                        Case{{64, 4096, 4096}, 1, 128, 1}}) {
    const FpropOperands ops(*engine_, r, c.s);
    counted_gemms(r, c.s, ops.a, ops.b, ops.y, 1);
    EXPECT_EQ(calls("cuMemsetD32Async"), c.memsets) << gemm_shape_text(c.s);
    EXPECT_EQ(calls("cuLaunchKernelEx"), 1) << gemm_shape_text(c.s);
    EXPECT_EQ(calls("cuLaunchKernel"), 1) << gemm_shape_text(c.s);
    const LaunchEx l = last_launch_ex();
    EXPECT_EQ(l.grid, c.grid) << gemm_shape_text(c.s);
    EXPECT_EQ(l.cluster, c.cluster) << gemm_shape_text(c.s);
    EXPECT_EQ(l.dependent, 1) << gemm_shape_text(c.s);
  }
}

}  // namespace
}  // namespace fp4jit
